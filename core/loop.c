#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

struct loop_fd {
	int fd;
	short events;
	loop_fd_fn fn;
	void *ctx;
};

struct loop_timer {
	int id;              /* 0: free slot */
	unsigned round;      /* the run_timers round it was added in */
	long long due;
	loop_timer_fn fn;
	void *ctx;
};

struct loop {
	int sfd;             /* signalfd for SIGTERM/SIGINT */
	int signo;           /* the signal that stopped us */
	int stop, code;
	int next_id;
	unsigned round;      /* run_timers rounds so far */
	int nfds;
	struct loop_fd fds[LOOP_MAX_FDS];
	struct loop_timer timers[LOOP_MAX_TIMERS];
};

long long loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int loop_new(struct loop **out, struct fb_errinfo *ei)
{
	struct loop *l = calloc(1, sizeof(*l));
	sigset_t set;

	*out = NULL;
	if (!l)
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, "loop", NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* a peer closing a socket must be an error return, not a death */
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (l->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		free(l);
		return fb_errinfo_set(ei, FB_EIO, errno, "signalfd", NULL);
	}
	*out = l;
	return 0;
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	close(l->sfd);
	free(l);
}

int loop_watch(struct loop *l, int fd, short events, loop_fd_fn fn, void *ctx)
{
	int i;

	for (i = 0; i < l->nfds && l->fds[i].fd != fd; i++)
		;
	if (i == l->nfds) {
		if (l->nfds == LOOP_MAX_FDS)
			return -FB_E2BIG;
		l->nfds++;
	}
	l->fds[i] = (struct loop_fd){ .fd = fd, .events = events, .fn = fn, .ctx = ctx };
	return 0;
}

void loop_unwatch(struct loop *l, int fd)
{
	for (int i = 0; i < l->nfds; i++) {
		if (l->fds[i].fd == fd) {
			l->fds[i] = l->fds[--l->nfds];
			return;
		}
	}
}

int loop_timer(struct loop *l, long long delay_ms, loop_timer_fn fn, void *ctx)
{
	for (int i = 0; i < LOOP_MAX_TIMERS; i++) {
		if (l->timers[i].id)
			continue;
		if (++l->next_id <= 0)
			l->next_id = 1;
		l->timers[i] = (struct loop_timer){ .id = l->next_id, .round = l->round, .fn = fn, .ctx = ctx,
						    .due = loop_now_ms() + (delay_ms > 0 ? delay_ms : 0) };
		return l->next_id;
	}
	return -FB_E2BIG;
}

void loop_timer_cancel(struct loop *l, int id)
{
	for (int i = 0; id > 0 && i < LOOP_MAX_TIMERS; i++)
		if (l->timers[i].id == id)
			l->timers[i].id = 0;
}

void loop_stop(struct loop *l, int code)
{
	l->stop = 1;
	l->code = code;
}

int loop_cancel_fd(const struct loop *l)
{
	return l->sfd;
}

/* The signal is never read off the signalfd: it stays pending (blocked), so
 * the fd stays readable and every blocking call polling it is cancelled, not
 * only the first. sigpending says which one it is. */
int loop_signal(struct loop *l)
{
	sigset_t set;

	if (!l->signo && sigpending(&set) == 0)
		l->signo = sigismember(&set, SIGTERM) == 1 ? SIGTERM
			 : sigismember(&set, SIGINT) == 1 ? SIGINT : 0;
	return l->signo;
}

/* Runs every timer that is due, except those added by this round's own
 * callbacks; returns ms until the next one (-1: none). A timer a callback
 * adds, even at 0 ms, waits for the next round, after poll: work done in
 * slices that re-arm themselves (a watch's big events, node updates) lets the
 * fds (probes, the other watches) run between two slices. */
static int run_timers(struct loop *l)
{
	long long now = loop_now_ms(), next = -1;
	unsigned round = ++l->round;

	for (int i = 0; i < LOOP_MAX_TIMERS && !l->stop; i++) {
		struct loop_timer t = l->timers[i];

		if (!t.id)
			continue;
		if (t.due <= now && t.round != round) {
			if (loop_signal(l)) /* stopping: run nothing more */
				return 0;
			l->timers[i].id = 0; /* free first: fn may add timers */
			t.fn(t.ctx);
			now = loop_now_ms();
			i = -1;              /* the table may have changed: rescan */
			next = -1;
			continue;
		}
		if (next < 0 || t.due - now < next)
			next = t.due > now ? t.due - now : 0;
	}
	return next < 0 ? -1 : next > 60000 ? 60000 : (int)next;
}

int loop_run(struct loop *l)
{
	struct pollfd pfd[LOOP_MAX_FDS + 1];
	struct loop_fd snap[LOOP_MAX_FDS];

	l->stop = 0;
	/* a callback may have consumed the signal through loop_signal() */
	while (!l->stop && !l->signo) {
		int timeout = run_timers(l), n, nsnap;

		if (l->stop)
			break;
		/* callbacks may (un)watch fds: work on a snapshot */
		nsnap = l->nfds;
		memcpy(snap, l->fds, sizeof(snap[0]) * (size_t)nsnap);
		pfd[0] = (struct pollfd){ .fd = l->sfd, .events = POLLIN };
		for (int i = 0; i < nsnap; i++)
			pfd[i + 1] = (struct pollfd){ .fd = snap[i].fd, .events = snap[i].events };
		n = poll(pfd, (nfds_t)nsnap + 1, timeout);
		if (n < 0 && errno != EINTR)
			return -FB_EIO;
		if (n <= 0)
			continue;
		if (pfd[0].revents && loop_signal(l)) {
			l->code = 0;
			break;
		}
		for (int i = 0; i < nsnap && !l->stop; i++) {
			int still = 0;

			if (!pfd[i + 1].revents)
				continue;
			for (int j = 0; j < l->nfds; j++)
				still |= l->fds[j].fd == snap[i].fd && l->fds[j].fn == snap[i].fn &&
					  l->fds[j].ctx == snap[i].ctx;
			if (still)
				snap[i].fn(snap[i].ctx, snap[i].fd, pfd[i + 1].revents);
		}
	}
	return l->signo ? 0 : l->code;
}
