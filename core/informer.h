/* informer: list then watch one collection, client-go's reflector in small.
 * A paged list (kube_list_pages), a watch from the list's resourceVersion
 * with bookmarks, resume from the last resourceVersion seen after a watch
 * ends, a new list after a 410 or after INFORMER_RESUME_FAILS failed
 * resumes in a row, and one backoff (client-go's 800 ms doubling to 30 s,
 * +0..25% jitter) that only a watch living INFORMER_LIVED_MS resets, so a
 * watch cut again and again never turns into a list-watch loop. Every
 * applet that follows objects uses this one retry policy.
 *
 * The caller sees the collection through four callbacks: begin and end
 * bracket each (re)list (begin again when a list restarted from scratch), so
 * end may drop whatever the new list did not name; apply and delete carry
 * listed items and watch events. Nothing is removed on the strength of a
 * partial list: end runs only after a complete one.
 *
 * The transport is a seam (struct informer_ops): informer_setup_kube uses
 * the real client and core/loop; the unit test drives pages, events, 410s,
 * errors and timers by hand. */
#ifndef FB_INFORMER_H
#define FB_INFORMER_H

#include "err.h"
#include "json.h"
#include "kube.h"
#include "log.h"
#include "loop.h"

#include <stddef.h>

#define INFORMER_RESUME_FAILS 3   /* failed resumes in a row with no event: list again */
#define INFORMER_LIVED_MS 30000   /* a watch this old resets the backoff */
#define INFORMER_QUICK_MS 10000   /* a watch that ended sooner waits a backoff first */
#define INFORMER_BACKOFF_BASE_MS 800
#define INFORMER_BACKOFF_MAX_MS 30000
#define INFORMER_PATH_MAX 1024
#define INFORMER_RV_MAX 64

/* The transport: tp is informer_setup's transport; w a watch it started. */
struct informer_ops {
	/* kube_list_pages: items a page at a time, rv the list's resourceVersion */
	int (*list)(void *tp, const char *path, kube_page_fn fn, void *ctx, char *rv, size_t rv_size,
		    struct fb_errinfo *ei);
	/* kube_watch_start: 0 and *w, or a negative fb_err (ei says what).
	 * Events and even end may come from inside watch_start (bytes that
	 * came with the headers), before *w is known: end must then leave
	 * the watch to the caller, who frees it */
	int (*watch_start)(void *tp, void **w, const char *path, const char *rv, kube_watch_event_fn event,
			   kube_watch_end_fn end, void *ctx, struct fb_errinfo *ei);
	const char *(*watch_rv)(const void *w);    /* events and bookmarks seen */
	long long (*watch_last_ms)(const void *w); /* last event or bookmark */
	void (*watch_free)(void *w);
	/* core/loop's clock and one-shot timers, and whether SIGTERM arrived */
	long long (*now_ms)(void *tp);
	int (*timer)(void *tp, long long delay_ms, loop_timer_fn fn, void *ctx);
	void (*timer_cancel)(void *tp, int id);
	int (*stopping)(void *tp);
};

struct informer_conf {
	const char *what;        /* singular kind for log lines: "NodeFeature" */
	const char *path;        /* the collection, a query allowed; copied */
	const struct fb_log *log; /* borrowed */
	void *ctx;               /* given to every callback */
	/* a list starts (again): forget what earlier pages gave; may be NULL */
	void (*begin)(void *ctx);
	/* each listed item, and ADDED/MODIFIED events (object borrowed). A
	 * negative fb_err fails a list (retried); for an event it is logged */
	int (*apply)(void *ctx, const struct json *obj);
	int (*delete)(void *ctx, const struct json *obj); /* DELETED events; may be NULL */
	/* a list completed, before the watch from its resourceVersion starts
	 * (no event comes between the list and end); may be NULL */
	void (*end)(void *ctx);
	/* then that watch was started (informer_watching says whether that
	 * worked, else a retry is pending); may be NULL */
	void (*started)(void *ctx);
	void (*page)(void *ctx); /* before each listed page (a lease to renew); may be NULL */
	unsigned seed;           /* for the backoff's jitter */
};

/* The kube transport's state, inside the informer. */
struct informer_kube {
	struct kube *k;
	struct loop *l;
};

struct informer {
	struct informer_conf c;
	char path[INFORMER_PATH_MAX];
	const struct informer_ops *ops;
	void *tp;
	struct informer_kube kt;
	void *w;                 /* the running watch, NULL when none */
	struct kube_backoff bo;
	long long watch_ms;      /* when the current watch started */
	char rv[INFORMER_RV_MAX]; /* resume from here; "" after a 410: list */
	int resume_fails;        /* failed resumes in a row with no event */
	int fresh;               /* the watch started from a list just made */
	int timer;               /* the pending retry, 0 when none */
	int in_event;            /* inside apply/delete of an event */
	int early_end;           /* 1 + why: the watch ended inside watch_start */
	char early_msg[1300];    /* and why it failed */
	int started, synced, failing;
};

/* The transport over core/kube and core/loop (tp is a struct informer_kube). */
extern const struct informer_ops informer_kube_ops;

/* Cannot fail; informer_free is safe after it (a zeroed struct too). */
void informer_init(struct informer *in);
/* Sets up over ops/tp; nothing runs before informer_start. -FB_E2BIG when
 * the path is over INFORMER_PATH_MAX - 1. */
int informer_setup(struct informer *in, const struct informer_ops *ops, void *tp, const struct informer_conf *c);
/* informer_setup over the real client k inside loop l. */
int informer_setup_kube(struct informer *in, struct kube *k, struct loop *l, const struct informer_conf *c);
/* Lists now (blocking, as kube_list_pages), then watches; a failure is
 * logged and retried after a backoff. Also the way to list again at once
 * (a resync, a caller that needs fields it did not keep): any watch and
 * pending retry are stopped first. From inside an event callback the list
 * runs from a 0 ms timer instead. */
void informer_start(struct informer *in);
/* Stops the watch and any retry; informer_start starts again. */
void informer_cancel(struct informer *in);
/* informer_cancel; safe with NULL and after informer_init. */
void informer_free(struct informer *in);

/* informer_start was called (and not cancelled since). */
int informer_started(const struct informer *in);
/* A list has completed (since informer_setup). */
int informer_synced(const struct informer *in);
/* A watch is open. */
int informer_watching(const struct informer *in);
/* Failed lists in a row (0 once one completes). */
int informer_failing(const struct informer *in);
/* The resourceVersion to resume from (the list's, then the watch's). Borrowed. */
const char *informer_rv(const struct informer *in);
/* now_ms of the watch's last event or bookmark; -1 when no watch is open. */
long long informer_last_ms(const struct informer *in);

#endif
