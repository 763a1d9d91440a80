#include "informer.h"

#include <stdio.h>
#include <string.h>

/* ---- the kube transport ------------------------------------------------- */

static int kt_list(void *tp, const char *path, kube_page_fn fn, void *ctx, char *rv, size_t rv_size,
		   struct fb_errinfo *ei)
{
	return kube_list_pages(((struct informer_kube *)tp)->k, path, fn, ctx, rv, rv_size, ei);
}

static int kt_watch_start(void *tp, void **w, const char *path, const char *rv, kube_watch_event_fn event,
			  kube_watch_end_fn end, void *ctx, struct fb_errinfo *ei)
{
	struct informer_kube *kt = tp;
	struct kube_watch *kw = NULL;
	int rc = kube_watch_start(&kw, kt->k, kt->l, path, rv, event, end, ctx, ei);

	*w = kw;
	return rc;
}

static const char *kt_watch_rv(const void *w)
{
	return kube_watch_rv(w);
}

static long long kt_watch_last_ms(const void *w)
{
	return kube_watch_last_ms(w);
}

static void kt_watch_free(void *w)
{
	kube_watch_free(w);
}

static long long kt_now_ms(void *tp)
{
	(void)tp;
	return loop_now_ms();
}

static int kt_timer(void *tp, long long delay_ms, loop_timer_fn fn, void *ctx)
{
	return loop_timer(((struct informer_kube *)tp)->l, delay_ms, fn, ctx);
}

static void kt_timer_cancel(void *tp, int id)
{
	loop_timer_cancel(((struct informer_kube *)tp)->l, id);
}

static int kt_stopping(void *tp)
{
	return loop_signal(((struct informer_kube *)tp)->l) != 0;
}

const struct informer_ops informer_kube_ops = {
	.list = kt_list,
	.watch_start = kt_watch_start,
	.watch_rv = kt_watch_rv,
	.watch_last_ms = kt_watch_last_ms,
	.watch_free = kt_watch_free,
	.now_ms = kt_now_ms,
	.timer = kt_timer,
	.timer_cancel = kt_timer_cancel,
	.stopping = kt_stopping,
};

/* ---- life cycle --------------------------------------------------------- */

void informer_init(struct informer *in)
{
	memset(in, 0, sizeof(*in));
}

int informer_setup(struct informer *in, const struct informer_ops *ops, void *tp, const struct informer_conf *c)
{
	int n = snprintf(in->path, sizeof(in->path), "%s", c->path);

	if (n < 0 || (size_t)n >= sizeof(in->path))
		return -FB_E2BIG;
	in->c = *c;
	in->c.path = in->path;
	in->ops = ops;
	in->tp = tp;
	kube_backoff_init(&in->bo, INFORMER_BACKOFF_BASE_MS, INFORMER_BACKOFF_MAX_MS, c->seed);
	return 0;
}

int informer_setup_kube(struct informer *in, struct kube *k, struct loop *l, const struct informer_conf *c)
{
	in->kt.k = k;
	in->kt.l = l;
	return informer_setup(in, &informer_kube_ops, &in->kt, c);
}

static void stop_watch(struct informer *in)
{
	if (in->w)
		in->ops->watch_free(in->w);
	in->w = NULL;
}

static void stop_timer(struct informer *in)
{
	if (in->timer > 0)
		in->ops->timer_cancel(in->tp, in->timer);
	in->timer = 0;
}

void informer_cancel(struct informer *in)
{
	if (!in || !in->ops)
		return;
	stop_timer(in);
	stop_watch(in);
	in->started = 0;
}

void informer_free(struct informer *in)
{
	informer_cancel(in);
}

/* ---- list, watch, retry ------------------------------------------------- */

static void list(struct informer *in);
static void watch(struct informer *in);

static void on_relist(void *ctx)
{
	struct informer *in = ctx;

	in->timer = 0;
	list(in);
}

static void on_rewatch(void *ctx)
{
	struct informer *in = ctx;

	in->timer = 0;
	in->fresh = 0;
	if (!in->w)
		watch(in);
}

/* One timer per informer, so retries never pile up. */
static void retry_later(struct informer *in, loop_timer_fn fn)
{
	long long d = kube_backoff_next(&in->bo);

	stop_timer(in);
	in->timer = in->ops->timer(in->tp, d, fn, in);
	if (in->timer < 0)
		in->timer = 0;
}

/* A resume that failed: again from the resourceVersion, unless there is
 * none or INFORMER_RESUME_FAILS failed in a row with no event between them
 * (the resourceVersion itself may be the trouble: a restored etcd, an event
 * that cannot be read). Returns 1 to watch again, 0 to list. */
static int resume_again(struct informer *in)
{
	int again = in->rv[0] && ++in->resume_fails < INFORMER_RESUME_FAILS;

	if (!again)
		in->resume_fails = 0;
	return again;
}

static void on_event(void *ctx, const char *type, const struct json *object)
{
	struct informer *in = ctx;
	int rc;

	in->resume_fails = 0;
	in->in_event = 1;
	if (strcmp(type, "DELETED") == 0)
		rc = in->c.delete ? in->c.delete(in->c.ctx, object) : 0;
	else
		rc = in->c.apply(in->c.ctx, object);
	in->in_event = 0;
	if (rc < 0)
		LOG_E(in->c.log, "%s event: %s", in->c.what, rc == -FB_ENOMEM ? "out of memory" : fb_strerror(rc));
}

static void ended(struct informer *in, enum kube_watch_end why, const char *msg)
{
	long long lived = in->ops->now_ms(in->tp) - in->watch_ms;

	snprintf(in->rv, sizeof(in->rv), "%s", in->ops->watch_rv(in->w));
	stop_watch(in);
	if (in->ops->stopping(in->tp))
		return;
	/* only a watch that lived a while resets the backoff; one cut at
	 * once (a proxy, a server in trouble) waits before the next try */
	if (lived >= INFORMER_LIVED_MS)
		kube_backoff_reset(&in->bo);
	if (why == KUBE_WATCH_CLOSED) {
		in->resume_fails = 0;
		in->fresh = 0;
		if (lived < INFORMER_QUICK_MS)
			retry_later(in, on_rewatch);
		else
			watch(in);
	} else if (why == KUBE_WATCH_EXPIRED) {
		LOG_I(in->c.log, "%s watch: resourceVersion %s expired; listing again", in->c.what, in->rv);
		in->resume_fails = 0;
		in->rv[0] = '\0';
		/* expired at once after a resume: the history moved on, list now;
		 * at once after a list: a watch cache behind the list, wait */
		if (in->fresh && lived < INFORMER_QUICK_MS)
			retry_later(in, on_relist);
		else
			list(in);
	} else {
		int again = resume_again(in);

		LOG_W(in->c.log, "%s watch failed: %s; %s after a pause", in->c.what, msg,
		      again ? "watching again" : "listing again");
		retry_later(in, again ? on_rewatch : on_relist);
	}
}

static void on_end(void *ctx, enum kube_watch_end why, const struct fb_errinfo *ei)
{
	struct informer *in = ctx;
	char msg[1300] = "";

	/* ei lives in the watch (or the caller's stack): read it now */
	if (why == KUBE_WATCH_FAILED && ei)
		fb_errinfo_str(ei, msg, sizeof(msg));
	if (!in->w) { /* inside watch_start: finished there, once *w is known */
		in->early_end = 1 + (int)why;
		snprintf(in->early_msg, sizeof(in->early_msg), "%s", msg);
		return;
	}
	ended(in, why, msg);
}

static void watch(struct informer *in)
{
	struct fb_errinfo ei;
	char msg[1300];
	int rc;

	fb_errinfo_init(&ei);
	in->watch_ms = in->ops->now_ms(in->tp);
	in->early_end = 0;
	rc = in->ops->watch_start(in->tp, &in->w, in->path, in->rv, on_event, on_end, in, &ei);
	if (rc == 0 && in->early_end) {
		snprintf(msg, sizeof(msg), "%s", in->early_msg);
		ended(in, (enum kube_watch_end)(in->early_end - 1), msg);
		return;
	}
	if (rc < 0) {
		in->w = NULL;
		if (rc == -FB_ECANCELED || in->ops->stopping(in->tp))
			return;
		LOG_W(in->c.log, "%s watch: %s; trying again after a pause", in->c.what,
		      fb_errinfo_str(&ei, msg, sizeof(msg)));
		retry_later(in, resume_again(in) ? on_rewatch : on_relist);
	}
}

static int on_page(void *ctx, const struct json *items, int first)
{
	struct informer *in = ctx;

	if (first && in->c.begin)
		in->c.begin(in->c.ctx);
	if (in->c.page)
		in->c.page(in->c.ctx);
	for (const struct json *it = json_child(items); it; it = json_next(it)) {
		int rc = in->c.apply(in->c.ctx, it);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static void list(struct informer *in)
{
	struct fb_errinfo ei;
	char rv[INFORMER_RV_MAX], msg[1300];
	int rc;

	stop_watch(in);
	fb_errinfo_init(&ei);
	rv[0] = '\0';
	rc = in->ops->list(in->tp, in->path, on_page, in, rv, sizeof(rv), &ei);
	if (rc < 0) {
		if (rc == -FB_ECANCELED || in->ops->stopping(in->tp))
			return;
		if (!in->failing++ || in->c.log->v >= 1)
			LOG_E(in->c.log, "listing %ss: %s; trying again after a pause", in->c.what,
			      fb_errinfo_str(&ei, msg, sizeof(msg)));
		/* nothing is removed on the strength of a partial list */
		retry_later(in, on_relist);
		return;
	}
	if (in->failing)
		LOG_I(in->c.log, "listing %ss works again", in->c.what);
	in->failing = 0;
	in->resume_fails = 0;
	/* a list asked for by the caller makes a pending retry of ours moot */
	stop_timer(in);
	in->synced = 1;
	in->fresh = 1;
	snprintf(in->rv, sizeof(in->rv), "%s", rv);
	if (in->c.end)
		in->c.end(in->c.ctx);
	watch(in);
	if (in->c.started)
		in->c.started(in->c.ctx);
}

void informer_start(struct informer *in)
{
	in->started = 1;
	if (in->in_event) { /* the watch calling us must not be freed under it */
		stop_timer(in);
		in->timer = in->ops->timer(in->tp, 0, on_relist, in);
		if (in->timer < 0)
			in->timer = 0;
		return;
	}
	stop_timer(in);
	list(in);
}

/* ---- state -------------------------------------------------------------- */

int informer_started(const struct informer *in)
{
	return in->started;
}

int informer_synced(const struct informer *in)
{
	return in->synced;
}

int informer_watching(const struct informer *in)
{
	return in->w != NULL;
}

int informer_failing(const struct informer *in)
{
	return in->failing;
}

const char *informer_rv(const struct informer *in)
{
	return in->rv;
}

long long informer_last_ms(const struct informer *in)
{
	return in->w ? in->ops->watch_last_ms(in->w) : -1;
}
