/* loop: the one single-threaded poll(2) loop of a long-running applet: file
 * descriptors, one-shot timers, and SIGTERM/SIGINT delivered through a
 * signalfd so a signal is just another readable fd (no handler, no global
 * state). Blocking helpers elsewhere (an API request with a timeout) poll
 * loop_cancel_fd() too, so a SIGTERM ends them at once. */
#ifndef FB_LOOP_H
#define FB_LOOP_H

#include "err.h"

#define LOOP_MAX_FDS 64
#define LOOP_MAX_TIMERS 64

struct loop;

typedef void (*loop_fd_fn)(void *ctx, int fd, short revents);
typedef void (*loop_timer_fn)(void *ctx);

/* Blocks SIGTERM, SIGINT (and SIGPIPE, ignored) for the process and opens
 * the signalfd. Errors: -FB_ENOMEM, -FB_EIO with ei. */
int loop_new(struct loop **out, struct fb_errinfo *ei);
/* Safe with NULL; does not close the fds it watched. */
void loop_free(struct loop *l);

/* Watches fd for events (POLLIN/POLLOUT); fn runs with the revents seen.
 * Adding an fd again replaces its events and callback. -FB_E2BIG when full. */
int loop_watch(struct loop *l, int fd, short events, loop_fd_fn fn, void *ctx);
void loop_unwatch(struct loop *l, int fd);

/* Calls fn once after delay_ms, never before the loop has polled its fds
 * once more (a timer callback re-arming itself at 0 ms does not starve
 * them). Returns a timer id (> 0) or -FB_E2BIG. */
int loop_timer(struct loop *l, long long delay_ms, loop_timer_fn fn, void *ctx);
/* Cancels a pending timer (no-op for a fired or unknown id). */
void loop_timer_cancel(struct loop *l, int id);

/* Runs until loop_stop() or a SIGTERM/SIGINT. Returns the code given to
 * loop_stop, or 0 after a signal. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l, int code);
/* The signal that stopped (or is stopping) the loop, SIGTERM or SIGINT, 0
 * if none yet. Cheap enough to ask often; never consumes the signal. */
int loop_signal(struct loop *l);
/* Readable from the moment SIGTERM/SIGINT arrives until exit (the signal
 * stays pending): blocking calls poll it to give up. Never read it. */
int loop_cancel_fd(const struct loop *l);

/* Monotonic milliseconds. */
long long loop_now_ms(void);

#endif
