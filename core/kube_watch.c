/* kube_watch: watch streams on core/loop: the newline-delimited event
 * framer and the watch itself. See kube.h for the contract. */
#include "kube.h"
#include "kube_int.h"

#include "http.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WATCH_EVENT_MAX ((size_t)16 << 20)
#define WATCH_SLICE_MS 20 /* events handled in one go before the loop runs again */

struct kube_watch {
	struct kube *k;
	struct loop *loop;
	struct http_stream *s;
	struct kube_framer framer;
	kube_watch_event_fn event;
	kube_watch_end_fn end;
	void *ctx;
	char rv[64];
	int watching;            /* fd registered with the loop */
	int deadline_timer;      /* fails a stream the server forgot to end */
	int end_timer;           /* a failed open is reported from the loop */
	int resume_timer;        /* more to read after the loop has run (watch_readable) */
	long long last_ms;       /* when the stream last delivered an event or bookmark */
	enum kube_watch_end why; /* for end_timer */
	struct fb_errinfo ei;    /* for end_timer */
};

void kube_framer_init(struct kube_framer *f, size_t max_event)
{
	buf_init(&f->line, max_event);
}

void kube_framer_free(struct kube_framer *f)
{
	buf_free(&f->line);
}

/* Decodes one line; empty lines are keep-alive padding. */
static int frame_line(const char *line, size_t len, kube_event_fn fn, void *ctx,
		      struct fb_errinfo *ei)
{
	struct json *ev;
	const char *type;
	struct json *obj;
	int rc;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return 0;
	ev = json_parse(line, len, "watch event", ei);
	if (!ev)
		return -(ei ? ei->code : FB_EPROTO) == -FB_ENOMEM ? -FB_ENOMEM : -FB_EPROTO;
	type = json_get_str(ev, "type", NULL);
	obj = json_get(ev, "object");
	if (!type || json_type(obj) != JSON_OBJECT) {
		json_free(ev);
		return fb_errinfo_set(ei, FB_EPROTO, 0, "watch event", "no \"type\" string or \"object\" object");
	}
	rc = fn(ctx, type, obj);
	json_free(ev);
	return rc;
}

int kube_framer_feed(struct kube_framer *f, const char *data, size_t len, kube_event_fn fn,
		     void *ctx, struct fb_errinfo *ei)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		int rc;

		if (take > f->line.max - f->line.len) {
			buf_reset(&f->line);
			return fb_errinfo_set(ei, FB_E2BIG, 0, "watch event", "event larger than the cap");
		}
		if (nl && f->line.len == 0) {
			/* the whole line is in this slice: no copy */
			rc = frame_line(data, take, fn, ctx, ei);
		} else {
			buf_put(&f->line, data, take);
			if (f->line.err) {
				buf_reset(&f->line);
				return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, "watch event", NULL);
			}
			if (!nl)
				return 0;
			rc = frame_line(f->line.p, f->line.len, fn, ctx, ei);
			buf_reset(&f->line);
		}
		if (rc)
			return rc;
		data += take + 1;
		len -= take + 1;
	}
	return 0;
}

/* ---- watch ------------------------------------------------------------- */

static void watch_finish(struct kube_watch *w, enum kube_watch_end why, const struct fb_errinfo *ei)
{
	if (w->watching) {
		loop_unwatch(w->loop, http_stream_fd(w->s));
		w->watching = 0;
	}
	loop_timer_cancel(w->loop, w->deadline_timer);
	w->deadline_timer = 0;
	loop_timer_cancel(w->loop, w->resume_timer);
	w->resume_timer = 0;
	http_stream_free(w->s);
	w->s = NULL;
	w->end(w->ctx, why, ei); /* may free w */
}

static void watch_end_later(void *ctx)
{
	struct kube_watch *w = ctx;

	w->end_timer = 0;
	watch_finish(w, w->why, &w->ei);
}

/* The server promised to end the stream after timeoutSeconds; a stream still
 * open well after that sits on a dead link or a stuck proxy. */
static void watch_deadline(void *ctx)
{
	struct kube_watch *w = ctx;
	struct fb_errinfo ei;

	w->deadline_timer = 0;
	fb_errinfo_set(&ei, FB_ETIMEDOUT, 0, "watch", "the stream outlived its timeoutSeconds");
	watch_finish(w, KUBE_WATCH_FAILED, &ei);
}

static int watch_event(void *ctx, const char *type, struct json *object)
{
	struct kube_watch *w = ctx;
	const char *rv = json_get_str(json_get(object, "metadata"), "resourceVersion", NULL);

	if (strcmp(type, "ERROR") == 0) {
		long long code = 0;

		json_int(json_get(object, "code"), &code);
		return code == 410 ? 410 : 500;
	}
	if (rv)
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
	w->last_ms = loop_now_ms();
	if (strcmp(type, "BOOKMARK") == 0)
		return 0;
	w->event(w->ctx, type, object);
	return 0;
}

static void watch_resume(void *ctx);

/* Reads and handles events until nothing is left, or for WATCH_SLICE_MS: a
 * stream of big events (a node rewriting a 1 MB object) must not hold up the
 * loop (probes, lease renewal, the other watches). The rest is read from a
 * timer, not on the fd's next readiness: TLS may hold it already decrypted. */
static void watch_readable(void *ctx, int fd, short revents)
{
	struct kube_watch *w = ctx;
	struct fb_errinfo ei;
	char buf[16384];
	long long start = loop_now_ms();

	(void)fd;
	(void)revents;
	fb_errinfo_init(&ei);
	for (;;) {
		ssize_t n;
		int rc;

		if (loop_now_ms() - start >= WATCH_SLICE_MS) {
			if (!w->resume_timer && (w->resume_timer = loop_timer(w->loop, 0, watch_resume, w)) < 0)
				w->resume_timer = 0; /* no timer free: the fd's next readiness then */
			return;
		}
		n = http_stream_read(w->s, buf, sizeof(buf), &ei);

		if (n == -FB_EAGAIN) {
			/* TLS may want to write: follow what the stream asks for */
			loop_watch(w->loop, http_stream_fd(w->s), http_stream_events(w->s), watch_readable, w);
			return;
		}
		if (n == 0) {
			watch_finish(w, KUBE_WATCH_CLOSED, NULL);
			return;
		}
		if (n < 0) {
			watch_finish(w, KUBE_WATCH_FAILED, &ei);
			return;
		}
		rc = kube_framer_feed(&w->framer, buf, (size_t)n, watch_event, w, &ei);
		if (rc == 410) {
			fb_errinfo_set(&ei, FB_EIO, 0, "watch", "410 Expired: resourceVersion too old");
			watch_finish(w, KUBE_WATCH_EXPIRED, &ei);
			return;
		}
		if (rc != 0) {
			if (rc > 0)
				fb_errinfo_set(&ei, FB_EIO, 0, "watch", "ERROR event from the server");
			watch_finish(w, KUBE_WATCH_FAILED, &ei);
			return;
		}
	}
}

static void watch_resume(void *ctx)
{
	struct kube_watch *w = ctx;

	w->resume_timer = 0;
	if (w->s)
		watch_readable(w, http_stream_fd(w->s), POLLIN);
}

int kube_watch_start(struct kube_watch **out, struct kube *k, struct loop *l, const char *path,
		     const char *rv, kube_watch_event_fn event, kube_watch_end_fn end, void *ctx,
		     struct fb_errinfo *ei)
{
	struct kube_watch *w = calloc(1, sizeof(*w));
	char target[2048], auth[TOKEN_MAX + 32], ctype[8];
	const char *hdr[6];
	const struct http_resp *head;
	struct http_req req = { .method = "GET", .headers = hdr, .timeout_ms = k->opts.timeout_ms,
				.body_max = 1 << 20 };
	long long bucket;
	int rc, timeout_s;

	*out = NULL;
	if (!w)
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, path, NULL);
	w->k = k;
	w->loop = l;
	w->event = event;
	w->end = end;
	w->ctx = ctx;
	snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "");
	kube_framer_init(&w->framer, WATCH_EVENT_MAX);
	/* spread re-watches of a fleet over time, as client-go does */
	timeout_s = 300 + (int)((unsigned)loop_now_ms() % 301);
	snprintf(target, sizeof(target), "%s%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%d%s%s",
		 path, strchr(path, '?') ? "&" : "?", timeout_s, w->rv[0] ? "&resourceVersion=" : "", w->rv);
	req.target = target;
	while ((bucket = kube_bucket_take(&k->bucket, loop_now_ms())) > 0)
		if (kube_wait_ms_(k, bucket) < 0) {
			free(w);
			return fb_errinfo_set(ei, FB_ECANCELED, 0, path, "stopped by a signal");
		}
	kube_token_refresh_(k, 0, NULL);
	kube_make_headers_(k, NULL, auth, sizeof(auth), ctype, sizeof(ctype), hdr);
	rc = http_stream_open(&w->s, k->conn, &req, ei);
	memset(auth, 0, sizeof(auth));
	if (rc < 0) {
		kube_framer_free(&w->framer);
		free(w);
		return rc;
	}
	*out = w;
	head = http_stream_resp(w->s);
	if (head->status != 200) {
		struct kube_result res = { .status = head->status };
		struct fb_errinfo jei;

		if (head->body_len)
			res.body = json_parse(head->body, head->body_len, "watch response", &jei);
		kube_decode_status_(&res);
		if (head->status == 401)
			kube_token_refresh_(k, 1, NULL);
		kube_status_error_("GET", path, &res, &w->ei);
		kube_result_free(&res);
		/* reported from the loop, so the caller holds *out before end runs */
		w->why = head->status == 410 ? KUBE_WATCH_EXPIRED : KUBE_WATCH_FAILED;
		w->end_timer = loop_timer(l, 0, watch_end_later, w);
		return 0;
	}
	w->last_ms = loop_now_ms();
	w->deadline_timer = loop_timer(l, (timeout_s + 30) * 1000LL, watch_deadline, w);
	rc = loop_watch(l, http_stream_fd(w->s), http_stream_events(w->s), watch_readable, w);
	if (rc < 0) {
		*out = NULL;
		kube_watch_free(w);
		return fb_errinfo_set(ei, FB_E2BIG, 0, path, "too many watched fds");
	}
	w->watching = 1;
	/* bytes that came with the headers are already buffered */
	watch_readable(w, http_stream_fd(w->s), POLLIN);
	return 0;
}

const char *kube_watch_rv(const struct kube_watch *w)
{
	return w->rv;
}

long long kube_watch_last_ms(const struct kube_watch *w)
{
	return w->last_ms;
}

void kube_watch_free(struct kube_watch *w)
{
	if (!w)
		return;
	loop_timer_cancel(w->loop, w->deadline_timer);
	loop_timer_cancel(w->loop, w->end_timer);
	loop_timer_cancel(w->loop, w->resume_timer);
	if (w->watching)
		loop_unwatch(w->loop, http_stream_fd(w->s));
	http_stream_free(w->s);
	kube_framer_free(&w->framer);
	free(w);
}
