/* informer: list then watch over a fake transport. The test plays the API
 * server (pages, events, bookmarks, 410s, errors) and the clock: timers are
 * kept in a table and fired by hand, so no case waits for real time. */
#include "t.h"

#include "../../core/informer.h"

#include <fcntl.h>
#include <stdlib.h>

#define MAX_TIMERS 16

struct fwatch {                /* one watch the fake started */
	char rv[64];
	long long last_ms;
	kube_watch_event_fn event;
	kube_watch_end_fn end;
	void *ctx;
};

struct ftimer {
	int id, live;
	long long due;
	loop_timer_fn fn;
	void *ctx;
};

struct fake {
	/* the next list: pages (a JSON array of arrays), its rv, an error after
	 * fail_after pages (-1: none), restart: the first page is given twice */
	const char *pages, *list_rv;
	int list_rc, fail_after, restart;
	int lists;
	char list_path[256];
	/* watches */
	int watch_rc, watches;
	int end_in_start;              /* 1 + why: the watch ends inside watch_start */
	char watch_rv[64];             /* the rv the last watch started from */
	struct fwatch *w;              /* the open one */
	int frees;
	/* the clock and timers */
	long long now;
	struct ftimer t[MAX_TIMERS];
	int next_id, stopping;
	long long last_delay;
	/* what the callbacks saw */
	char rec[512];
	struct informer *in;
	int restart_in_event;          /* an apply calls informer_start */
	int apply_rc;
};

static void rec(struct fake *f, const char *s)
{
	size_t n = strlen(f->rec);

	snprintf(f->rec + n, sizeof(f->rec) - n, "%s%s", n ? " " : "", s);
}

static const char *name_of(const struct json *o)
{
	return json_get_str(json_get(o, "metadata"), "name", "?");
}

/* ---- the transport ---- */

static int f_list(void *tp, const char *path, kube_page_fn fn, void *ctx, char *rv, size_t rv_size,
		  struct fb_errinfo *ei)
{
	struct fake *f = tp;
	struct json *pages;
	int i = 0, rc = 0;

	f->lists++;
	snprintf(f->list_path, sizeof(f->list_path), "%s", path);
	if (f->list_rc)
		return fb_errinfo_set(ei, f->list_rc, 0, path, "fake list error");
	pages = json_parse(f->pages, strlen(f->pages), "pages", ei);
	if (!pages)
		return -FB_EINVAL;
	if (f->restart && json_child(pages))
		rc = fn(ctx, json_child(pages), 1);
	for (const struct json *p = json_child(pages); p && rc == 0; p = json_next(p), i++) {
		if (i == f->fail_after) {
			rc = fb_errinfo_set(ei, FB_EIO, 0, path, "fake error mid-list");
			break;
		}
		rc = fn(ctx, p, i == 0);
	}
	json_free(pages);
	if (rc == 0)
		snprintf(rv, rv_size, "%s", f->list_rv);
	return rc;
}

static int f_watch_start(void *tp, void **w, const char *path, const char *rv, kube_watch_event_fn event,
			 kube_watch_end_fn end, void *ctx, struct fb_errinfo *ei)
{
	struct fake *f = tp;
	struct fwatch *fw;

	f->watches++;
	snprintf(f->watch_rv, sizeof(f->watch_rv), "%s", rv);
	*w = NULL;
	if (f->watch_rc)
		return fb_errinfo_set(ei, f->watch_rc, 0, path, "fake watch error");
	if (!(fw = calloc(1, sizeof(*fw))))
		return -FB_ENOMEM;
	snprintf(fw->rv, sizeof(fw->rv), "%s", rv);
	fw->last_ms = f->now;
	fw->event = event;
	fw->end = end;
	fw->ctx = ctx;
	f->w = fw;
	if (f->end_in_start) { /* as kube_watch_start with bytes after the headers */
		int why = f->end_in_start - 1;
		struct fb_errinfo e2;

		f->end_in_start = 0;
		fb_errinfo_init(&e2);
		fb_errinfo_set(&e2, FB_ECLOSED, 0, "watch", "closed with the headers");
		end(ctx, (enum kube_watch_end)why, &e2);
	}
	*w = fw;
	return 0;
}

static const char *f_watch_rv(const void *w)
{
	return ((const struct fwatch *)w)->rv;
}

static long long f_watch_last_ms(const void *w)
{
	return ((const struct fwatch *)w)->last_ms;
}

static struct fake *the_fake;

static void f_watch_free(void *w)
{
	if (the_fake->w == w)
		the_fake->w = NULL;
	the_fake->frees++;
	free(w);
}

static long long f_now(void *tp)
{
	return ((struct fake *)tp)->now;
}

static int f_timer(void *tp, long long delay_ms, loop_timer_fn fn, void *ctx)
{
	struct fake *f = tp;

	for (int i = 0; i < MAX_TIMERS; i++)
		if (!f->t[i].live) {
			f->t[i] = (struct ftimer){ .id = ++f->next_id, .live = 1, .due = f->now + delay_ms, .fn = fn,
						   .ctx = ctx };
			f->last_delay = delay_ms;
			return f->t[i].id;
		}
	return -FB_E2BIG;
}

static void f_timer_cancel(void *tp, int id)
{
	struct fake *f = tp;

	for (int i = 0; i < MAX_TIMERS; i++)
		if (f->t[i].live && f->t[i].id == id)
			f->t[i].live = 0;
}

static int f_stopping(void *tp)
{
	return ((struct fake *)tp)->stopping;
}

static const struct informer_ops fake_ops = {
	.list = f_list,
	.watch_start = f_watch_start,
	.watch_rv = f_watch_rv,
	.watch_last_ms = f_watch_last_ms,
	.watch_free = f_watch_free,
	.now_ms = f_now,
	.timer = f_timer,
	.timer_cancel = f_timer_cancel,
	.stopping = f_stopping,
};

static int timers_live(const struct fake *f)
{
	int n = 0;

	for (int i = 0; i < MAX_TIMERS; i++)
		n += f->t[i].live;
	return n;
}

/* Fires the earliest timer, the clock moved to it; returns its delay from
 * before, -1 when none is pending. */
static long long fire(struct fake *f)
{
	int best = -1;
	long long was = f->now;

	for (int i = 0; i < MAX_TIMERS; i++)
		if (f->t[i].live && (best < 0 || f->t[i].due < f->t[best].due))
			best = i;
	if (best < 0)
		return -1;
	f->t[best].live = 0;
	if (f->t[best].due > f->now)
		f->now = f->t[best].due;
	f->t[best].fn(f->t[best].ctx);
	return f->now - was;
}

/* The server sends an event (text: the object); its rv becomes the watch's. */
static void event(struct fake *f, const char *type, const char *obj)
{
	struct fb_errinfo ei;
	struct json *o = json_parse(obj, strlen(obj), "event", &ei);
	const char *rv = json_get_str(json_get(o, "metadata"), "resourceVersion", NULL);

	if (rv)
		snprintf(f->w->rv, sizeof(f->w->rv), "%s", rv);
	f->w->last_ms = f->now;
	f->w->event(f->w->ctx, type, o);
	json_free(o);
}

static void bookmark(struct fake *f, const char *rv)
{
	snprintf(f->w->rv, sizeof(f->w->rv), "%s", rv);
	f->w->last_ms = f->now;
}

static void end(struct fake *f, enum kube_watch_end why)
{
	struct fb_errinfo ei;
	struct fwatch *w = f->w;

	fb_errinfo_init(&ei);
	fb_errinfo_set(&ei, FB_EIO, 0, "watch", "fake stream error");
	w->end(w->ctx, why, why == KUBE_WATCH_FAILED ? &ei : NULL);
}

/* ---- the callbacks ---- */

static void cb_begin(void *ctx)
{
	rec(ctx, "b");
}

static int cb_apply(void *ctx, const struct json *o)
{
	struct fake *f = ctx;
	char s[64];

	snprintf(s, sizeof(s), "a:%s", name_of(o));
	rec(f, s);
	if (f->restart_in_event) {
		f->restart_in_event = 0;
		informer_start(f->in);
	}
	return f->apply_rc;
}

static int cb_delete(void *ctx, const struct json *o)
{
	char s[64];

	snprintf(s, sizeof(s), "d:%s", name_of(o));
	rec(ctx, s);
	return 0;
}

static void cb_end(void *ctx)
{
	struct fake *f = ctx;

	rec(f, informer_watching(f->in) ? "e+w" : "e");
}

static void cb_started(void *ctx)
{
	struct fake *f = ctx;

	rec(f, informer_watching(f->in) ? "s+w" : "s");
}

static void cb_page(void *ctx)
{
	rec(ctx, "p");
}

#define PAGES "[[{\"metadata\":{\"name\":\"n1\"}},{\"metadata\":{\"name\":\"n2\"}}],[{\"metadata\":{\"name\":\"n3\"}}]]"

static int dev_null = -1;

static void setup(struct fake *f, struct informer *in, struct fb_log *lg)
{
	struct informer_conf c = { .what = "Thing", .path = "/api/v1/things?labelSelector=a%3Db",
				   .log = lg, .ctx = f, .begin = cb_begin, .apply = cb_apply,
				   .delete = cb_delete, .end = cb_end, .started = cb_started, .page = cb_page, .seed = 42 };

	memset(f, 0, sizeof(*f));
	f->pages = PAGES;
	f->list_rv = "10";
	f->fail_after = -1;
	f->now = 1000000;
	f->in = in;
	the_fake = f;
	log_init(lg);
	lg->fd = dev_null;
	informer_init(in);
	T_INT("setup", informer_setup(in, &fake_ops, f, &c), 0);
}

static int in_backoff(long long d, long long base)
{
	return d >= base && d <= base + base / 4;
}

int main(void)
{
	struct fake f;
	struct informer in;
	struct fb_log lg;
	char big[INFORMER_PATH_MAX + 8];

	t_suite = "informer";
	dev_null = open("/dev/null", O_WRONLY);

	/* list, then watch from the list's resourceVersion */
	setup(&f, &in, &lg);
	T_INT("nothing before start", f.lists + f.watches + timers_live(&f), 0);
	informer_start(&in);
	T_STR("list: begin, pages, end, then the watch", f.rec, "b p a:n1 a:n2 p a:n3 e s+w");
	T_STR("list: the path as given", f.list_path, "/api/v1/things?labelSelector=a%3Db");
	T_INT("one list", f.lists, 1);
	T_INT("one watch", f.watches, 1);
	T_STR("watch from the list's resourceVersion", f.watch_rv, "10");
	T_INT("synced", informer_synced(&in), 1);
	T_INT("watching", informer_watching(&in), 1);
	T_INT("started", informer_started(&in), 1);
	T_INT("no timer", timers_live(&f), 0);

	/* events and a bookmark, then the server closes the stream: resume */
	f.rec[0] = '\0';
	f.now += 1000;
	event(&f, "ADDED", "{\"metadata\":{\"name\":\"n4\",\"resourceVersion\":\"11\"}}");
	event(&f, "MODIFIED", "{\"metadata\":{\"name\":\"n2\",\"resourceVersion\":\"12\"}}");
	event(&f, "DELETED", "{\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"13\"}}");
	T_STR("events: apply and delete", f.rec, "a:n4 a:n2 d:n1");
	T_INT("last event time", informer_last_ms(&in), f.now);
	bookmark(&f, "20");
	f.now += INFORMER_QUICK_MS;
	end(&f, KUBE_WATCH_CLOSED);
	T_INT("closed after a while: watch again at once", f.watches, 2);
	T_STR("... from the bookmark's resourceVersion", f.watch_rv, "20");
	T_INT("... no list", f.lists, 1);
	T_INT("... the old watch freed", f.frees, 1);
	T_STR("rv", informer_rv(&in), "20");

	/* closed at once: the resume waits a backoff */
	end(&f, KUBE_WATCH_CLOSED);
	T_INT("closed at once: no watch yet", f.watches, 2);
	T_INT("... not watching", informer_watching(&in), 0);
	T_INT("... last_ms without a watch", informer_last_ms(&in), -1);
	T_INT("... a timer", timers_live(&f), 1);
	T_OK("... of the base backoff", in_backoff(fire(&f), 800), "delay %lld", f.last_delay);
	T_INT("... then watches from the same rv", f.watches, 3);
	T_STR("... rv 20", f.watch_rv, "20");
	T_INT("... still no list", f.lists, 1);

	/* 410 after a resume that lived: list again at once, begin/end around it */
	f.rec[0] = '\0';
	f.list_rv = "30";
	f.pages = "[[{\"metadata\":{\"name\":\"n2\"}}]]";
	f.now += INFORMER_QUICK_MS;
	end(&f, KUBE_WATCH_EXPIRED);
	T_INT("410: listed again at once", f.lists, 2);
	T_STR("... begin, the new list, end", f.rec, "b p a:n2 e s+w");
	T_STR("... watch from the new list's rv", f.watch_rv, "30");
	T_INT("... no timer", timers_live(&f), 0);

	/* 410 at once after a list (a watch cache behind it): wait, then list */
	end(&f, KUBE_WATCH_EXPIRED);
	T_INT("410 right after a list: no list yet", f.lists, 2);
	T_INT("... a timer", timers_live(&f), 1);
	T_OK("... a backoff", fire(&f) >= 800, "delay %lld", f.last_delay);
	T_INT("... then a list", f.lists, 3);
	informer_free(&in);

	/* failed resumes: again from the rv twice, then a list */
	setup(&f, &in, &lg);
	informer_start(&in);
	f.now += INFORMER_QUICK_MS; /* not fresh any more after a resume */
	end(&f, KUBE_WATCH_CLOSED);
	T_INT("resume", f.watches, 2);
	bookmark(&f, "15");
	end(&f, KUBE_WATCH_FAILED);
	T_INT("failed 1: waits", f.watches, 2);
	T_OK("failed 1: base backoff", in_backoff(fire(&f), 800), "delay %lld", f.last_delay);
	T_STR("failed 1: resumed from the rv", f.watch_rv, "15");
	end(&f, KUBE_WATCH_FAILED);
	T_OK("failed 2: the backoff doubled", in_backoff(fire(&f), 1600), "delay %lld", f.last_delay);
	T_INT("failed 2: resumed, no list", f.lists, 1);
	end(&f, KUBE_WATCH_FAILED);
	T_OK("failed 3: doubled again", in_backoff(fire(&f), 3200), "delay %lld", f.last_delay);
	T_INT("failed 3: listed again", f.lists, 2);
	T_INT("... and watches", informer_watching(&in), 1);
	/* an event between failures resets the count */
	f.now += INFORMER_QUICK_MS;
	end(&f, KUBE_WATCH_CLOSED);
	end(&f, KUBE_WATCH_FAILED);
	fire(&f);
	end(&f, KUBE_WATCH_FAILED);
	fire(&f);
	event(&f, "ADDED", "{\"metadata\":{\"name\":\"n9\",\"resourceVersion\":\"40\"}}");
	end(&f, KUBE_WATCH_FAILED);
	fire(&f);
	T_INT("an event resets the failed resumes", f.lists, 2);
	T_STR("... resumed from the event's rv", f.watch_rv, "40");
	/* the backoff kept growing; a watch that lives resets it */
	end(&f, KUBE_WATCH_FAILED);
	T_OK("the backoff grows to its cap", fire(&f) >= 12800, "delay %lld", f.last_delay);
	for (int i = 0; i < 4; i++) {
		end(&f, KUBE_WATCH_FAILED);
		fire(&f);
	}
	end(&f, KUBE_WATCH_FAILED);
	T_OK("... 30 s at most (+25%)", in_backoff(fire(&f), 30000), "delay %lld", f.last_delay);
	f.now += INFORMER_LIVED_MS;
	end(&f, KUBE_WATCH_FAILED);
	T_OK("a watch that lived 30 s resets the backoff", in_backoff(fire(&f), 800), "delay %lld", f.last_delay);
	informer_free(&in);

	/* the list fails: retried after a backoff, nothing ended on a partial list */
	setup(&f, &in, &lg);
	f.list_rc = FB_EIO;
	informer_start(&in);
	T_INT("list error: not synced", informer_synced(&in), 0);
	T_INT("... failing", informer_failing(&in), 1);
	T_INT("... no watch", f.watches, 0);
	T_STR("... no callback", f.rec, "");
	fire(&f);
	T_INT("... retried", f.lists, 2);
	T_INT("... failing twice", informer_failing(&in), 2);
	f.list_rc = 0;
	f.fail_after = 1;
	fire(&f);
	T_STR("error after a page: begun, never ended", f.rec, "b p a:n1 a:n2");
	T_INT("... not synced", informer_synced(&in), 0);
	f.rec[0] = '\0';
	f.fail_after = -1;
	f.restart = 1;
	fire(&f);
	T_STR("a list restarted from scratch: begin again", f.rec, "b p a:n1 a:n2 b p a:n1 a:n2 p a:n3 e s+w");
	T_INT("... synced", informer_synced(&in), 1);
	T_INT("... failing 0", informer_failing(&in), 0);
	T_INT("... no timer", timers_live(&f), 0);
	informer_free(&in);

	/* an apply error fails the list; on an event it is only logged */
	setup(&f, &in, &lg);
	f.apply_rc = -FB_ENOMEM;
	informer_start(&in);
	T_INT("apply error: the list failed", informer_synced(&in) * 10 + timers_live(&f), 1);
	f.apply_rc = 0;
	fire(&f);
	f.apply_rc = -FB_ENOMEM;
	event(&f, "ADDED", "{\"metadata\":{\"name\":\"n5\",\"resourceVersion\":\"11\"}}");
	T_INT("apply error on an event: still watching", informer_watching(&in) * 10 + timers_live(&f), 10);
	informer_free(&in);

	/* watch start fails: retried; a list now is the caller's way to resync */
	setup(&f, &in, &lg);
	f.watch_rc = FB_ECLOSED;
	informer_start(&in);
	T_INT("watch start error: synced, ended, not watching", informer_synced(&in) * 10 + informer_watching(&in), 10);
	T_STR("... end says so", f.rec, "b p a:n1 a:n2 p a:n3 e s");
	T_INT("... a retry", timers_live(&f), 1);
	f.watch_rc = 0;
	fire(&f);
	T_INT("... then watches", informer_watching(&in), 1);
	T_STR("... from the list's rv", f.watch_rv, "10");
	f.rec[0] = '\0';
	informer_start(&in);
	T_STR("start while watching: lists again", f.rec, "b p a:n1 a:n2 p a:n3 e s+w");
	T_INT("... the old watch freed", f.frees, 1);
	/* a start from inside an event callback runs from a timer */
	f.rec[0] = '\0';
	f.restart_in_event = 1;
	event(&f, "ADDED", "{\"metadata\":{\"name\":\"n6\",\"resourceVersion\":\"12\"}}");
	T_STR("start from an event: not at once", f.rec, "a:n6");
	T_INT("... the watch still there", informer_watching(&in), 1);
	T_INT("... from a 0 ms timer", (int)fire(&f), 0);
	T_STR("... listed", f.rec, "a:n6 b p a:n1 a:n2 p a:n3 e s+w");
	informer_free(&in);

	/* the stream ends inside watch_start (bytes after the headers) */
	setup(&f, &in, &lg);
	f.end_in_start = 1 + KUBE_WATCH_FAILED;
	informer_start(&in);
	T_INT("ended inside watch_start: freed", f.frees, 1);
	T_INT("... not watching", informer_watching(&in), 0);
	T_INT("... a retry", timers_live(&f), 1);
	fire(&f);
	T_INT("... then watches", informer_watching(&in), 1);
	T_STR("... from the list's rv", f.watch_rv, "10");
	f.now += INFORMER_QUICK_MS;
	f.end_in_start = 1 + KUBE_WATCH_EXPIRED;
	end(&f, KUBE_WATCH_CLOSED);
	T_INT("410 inside watch_start: listed again", f.lists, 2);
	informer_free(&in);

	/* cancel stops everything; SIGTERM stops retries */
	setup(&f, &in, &lg);
	informer_start(&in);
	end(&f, KUBE_WATCH_FAILED);
	T_INT("a retry pending", timers_live(&f), 1);
	informer_cancel(&in);
	T_INT("cancel: no timer", timers_live(&f), 0);
	T_INT("... not started", informer_started(&in), 0);
	informer_start(&in);
	T_INT("started again: watching", informer_watching(&in), 1);
	informer_cancel(&in);
	T_INT("cancel: the watch freed", f.frees, 2);
	T_INT("... not watching", informer_watching(&in), 0);
	informer_start(&in);
	f.stopping = 1;
	end(&f, KUBE_WATCH_FAILED);
	T_INT("stopping: no retry after a failed watch", timers_live(&f) + informer_watching(&in), 0);
	f.list_rc = FB_ECANCELED;
	informer_start(&in);
	T_INT("stopping: no retry after a cancelled list", timers_live(&f), 0);
	informer_free(&in);
	informer_free(&in);
	informer_init(&in);
	informer_free(&in);
	informer_free(NULL);

	/* a path that does not fit */
	{
		struct informer_conf c = { .what = "x", .path = big, .log = &lg, .apply = cb_apply };

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		informer_init(&in);
		T_INT("path too long", informer_setup(&in, &fake_ops, &f, &c), -FB_E2BIG);
	}
	close(dev_null);
	return t_done();
}
