/* loop: timers in order, fd callbacks, stop, and SIGTERM through the signalfd. */
#include "t.h"

#include "../../core/loop.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

struct st {
	struct loop *l;
	char order[16];
	int n, reads, pipe_r;
	int cancel_id;
};

static void tick(void *ctx)
{
	struct st *s = ctx;

	s->order[s->n] = (char)('b' + s->n);
	s->n++;
	if (s->n == 3)
		loop_stop(s->l, 7);
}

static void never(void *ctx)
{
	((struct st *)ctx)->order[15] = 'X';
}

static void on_read(void *ctx, int fd, short revents)
{
	struct st *s = ctx;
	char c;

	if ((revents & POLLIN) && read(fd, &c, 1) == 1)
		s->reads++;
	if (s->reads == 2) {
		loop_unwatch(s->l, fd);
		loop_stop(s->l, 9);
	}
}

/* A callback that re-arms itself at 0 ms (work done in slices) until the
 * fd it watches has had its turn. */
struct slices {
	struct loop *l;
	int rounds, fd_ran;
};

static void slice(void *ctx)
{
	struct slices *s = ctx;

	if (s->fd_ran || ++s->rounds == 1000)
		loop_stop(s->l, 3);
	else
		loop_timer(s->l, 0, slice, s);
}

static void slice_fd(void *ctx, int fd, short revents)
{
	struct slices *s = ctx;

	(void)revents;
	loop_unwatch(s->l, fd);
	s->fd_ran = 1;
}

static void self_term(void *ctx)
{
	(void)ctx;
	kill(getpid(), SIGTERM);
}

int main(void)
{
	struct fb_errinfo ei;
	struct st s = { 0 };
	int p[2], rc;
	long long t0;

	t_suite = "loop";
	T_INT("loop_new", loop_new(&s.l, &ei), 0);
	/* from before the timers are armed: they are due 30 ms after that */
	t0 = loop_now_ms();
	loop_timer(s.l, 30, tick, &s);
	loop_timer(s.l, 10, tick, &s);
	loop_timer(s.l, 20, tick, &s);
	s.cancel_id = loop_timer(s.l, 15, never, &s);
	loop_timer_cancel(s.l, s.cancel_id);
	rc = loop_run(s.l);
	T_INT("loop_stop code returned", rc, 7);
	T_STR("timers fire in due order", s.order, "bcd");
	T_OK("timers took about their delay", loop_now_ms() - t0 >= 30 && loop_now_ms() - t0 < 1000,
	     "%lld ms", loop_now_ms() - t0);
	T_INT("cancelled timer never fired", s.order[15], 0);

	if (pipe(p) != 0)
		return 2;
	if (write(p[1], "xy", 2) != 2)
		return 2;
	loop_watch(s.l, p[0], POLLIN, on_read, &s);
	T_INT("fd callbacks until stop", loop_run(s.l), 9);
	T_INT("two bytes read", s.reads, 2);
	{
		struct slices sl = { s.l, 0, 0 };
		int q[2];

		if (pipe(q) != 0 || write(q[1], "z", 1) != 1)
			return 2;
		loop_watch(s.l, q[0], POLLIN, slice_fd, &sl);
		loop_timer(s.l, 0, slice, &sl);
		T_INT("work in 0 ms timer slices", loop_run(s.l), 3);
		T_OK("... lets a ready fd run between two slices", sl.fd_ran && sl.rounds <= 2, "%d slices, fd %s",
		     sl.rounds, sl.fd_ran ? "ran" : "never ran");
		loop_unwatch(s.l, q[0]);
		close(q[0]);
		close(q[1]);
	}

	loop_timer(s.l, 20, self_term, &s);
	t0 = loop_now_ms();
	T_INT("SIGTERM ends the loop with 0", loop_run(s.l), 0);
	T_INT("the signal is reported", loop_signal(s.l), SIGTERM);
	{
		struct pollfd pfd = { .fd = loop_cancel_fd(s.l), .events = POLLIN };

		T_OK("cancel fd readable or signal recorded", loop_signal(s.l) == SIGTERM || poll(&pfd, 1, 0) == 1, "no");
	}
	T_OK("promptly", loop_now_ms() - t0 < 1000, "%lld ms", loop_now_ms() - t0);
	T_INT("a signal already taken by a callback keeps the loop stopped", loop_run(s.l), 0);
	for (int i = 0; i < LOOP_MAX_TIMERS; i++)
		loop_timer(s.l, 100000, never, &s);
	T_INT("timer table full", loop_timer(s.l, 1, never, &s), -FB_E2BIG);
	close(p[0]);
	close(p[1]);
	loop_free(s.l);
	return t_done();
}
