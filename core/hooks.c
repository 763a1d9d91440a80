#include "hooks.h"

#include "attr.h"
#include "err.h"
#include "featfile.h"
#include "hostfs.h"
#include "json.h"
#include "log.h"
#include "loop.h"
#include "sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define TICK_MS 10           /* how often a running hook's exit and deadline are checked */
#define SWEEP_MS 5000        /* how long killed descendants may take to go */
#define STDERR_LINES 32      /* stderr lines logged per hook */

enum { FAIL_NONE, FAIL_TIMEOUT, FAIL_BIG, FAIL_START };

struct hooks {
	struct loop *l;
	const struct fb_log *lg;
	int timeout_ms;
	pid_t self;
	/* the run */
	int active;                   /* a run is in progress */
	int running;                  /* a hook of it is running or being swept */
	char *dir;
	char **names;
	size_t n, next;
	struct json *labels, *features;
	int ran;
	hooks_done_fn done;
	void *ctx;
	int timer;
	/* the hook running now: pid > 0 until it is reaped */
	char name[256];               /* its file name, escaped for logs */
	pid_t pid;
	int status, fail;
	int out, err;                 /* pipe read ends, -1 once closed */
	char *buf;                    /* stdout, FEATFILE_MAX_SIZE + 1 */
	size_t len;
	char ebuf[HOOKS_STDERR_MAX];
	size_t elen, edropped;
	long long deadline, sweep_deadline;
	/* start time (clock ticks since boot, /proc/PID/stat) of the oldest hook
	 * whose descendants may still live: children that started earlier are
	 * not a hook's (PID 1's other orphans) */
	unsigned long long since;
	/* as PID 1: the children we had before that hook started (start times
	 * are clock ticks, so an older orphan can share the hook's) */
	pid_t older[HOOKS_OLDER_MAX];
	size_t n_older;
	int stragglers;               /* the last sweep gave up on some */
};

/* Copies src's members into dst (later wins). */
static int merge(struct json *dst, const struct json *src)
{
	for (const struct json *e = json_child(src); e; e = json_next(e))
		if (json_set_str(dst, json_key(e), json_str(e)) < 0)
			return -FB_ENOMEM;
	return 0;
}

/* ---- our children in /proc ------------------------------------------------ */

/* Parent pid and start time of /proc/NAME; 0, or -1 when it is gone or not
 * a process. Field 2 (comm) may hold anything: the rest follows the last ')'. */
static int proc_stat(int procfd, const char *name, pid_t *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	int field;

	if (snprintf(path, sizeof(path), "%s/stat", name) >= (int)sizeof(path) ||
	    attr_read(procfd, path, buf, sizeof(buf), 0) < 0 || !(p = strrchr(buf, ')')))
		return -1;
	/* fields from 3 (state): ppid is 4, starttime 22 */
	for (field = 2; *p && field < 22; p++) {
		if (*p != ' ')
			continue;
		field++;
		if (field == 4)
			*ppid = (pid_t)strtol(p + 1, NULL, 10);
	}
	if (field != 22)
		return -1;
	*start = strtoull(p, NULL, 10);
	return 0;
}

struct sweep {
	struct hooks *h;
	int procfd;
	int found;
	int note_older;               /* note the children instead of killing them */
};

static int sweep_one(void *ctx, const char *name, unsigned char type)
{
	struct sweep *s = ctx;
	unsigned long long start;
	pid_t ppid = 0, pid;

	(void)type;
	if (name[0] < '1' || name[0] > '9' || proc_stat(s->procfd, name, &ppid, &start) < 0 ||
	    ppid != s->h->self || start < s->h->since)
		return 0;
	pid = (pid_t)strtol(name, NULL, 10);
	for (size_t i = 0; i < s->h->n_older; i++)
		if (s->h->older[i] == pid)
			return 0;
	if (s->note_older) {
		if (s->h->n_older < HOOKS_OLDER_MAX)
			s->h->older[s->h->n_older++] = pid;
		return 0;
	}
	/* our child, so its pid cannot be reused before we reap it */
	kill(pid, SIGKILL);
	s->found++;
	return 0;
}

/* As PID 1, notes the children we have now, before a hook starts: they are
 * not the hook's, whatever their start time says. */
static void note_older(struct hooks *h)
{
	struct sweep s = { h, hostfs_open_own_proc(), 0, 1 };

	h->n_older = 0;
	if (h->self != 1 || s.procfd < 0) {
		if (s.procfd >= 0)
			close(s.procfd);
		return;
	}
	h->since = 0;
	sysfs_dir_each(s.procfd, sweep_one, &s);
	close(s.procfd);
}

/* Reaps every child that has ended, then SIGKILLs those still there that
 * started since the oldest unswept hook. Returns how many were killed (0:
 * nothing of the hooks is left). */
static int sweep(struct hooks *h)
{
	struct sweep s = { h, -1, 0, 0 };

	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	s.procfd = hostfs_open_own_proc();
	if (s.procfd < 0) {
		LOG_E(h->lg, "hooks: cannot list /proc (%s): what a hook started may outlive it",
		      strerror(errno));
		return 0;
	}
	sysfs_dir_each(s.procfd, sweep_one, &s);
	close(s.procfd);
	return s.found;
}

/* ---- one hook ------------------------------------------------------------- */

static void close_fd(struct hooks *h, int *fd)
{
	if (*fd < 0)
		return;
	loop_unwatch(h->l, *fd);
	close(*fd);
	*fd = -1;
}

/* Reads what is there, or 32 reads' worth so a flood cannot hold the loop;
 * at EOF or an error the pipe is closed. */
static void drain(struct hooks *h, int *fd)
{
	for (int i = 0; i < 32; i++) {
		char scratch[4096], *dst;
		size_t room;
		ssize_t r;

		if (*fd < 0)
			return;
		if (fd == &h->out) {
			dst = h->buf + h->len;
			room = FEATFILE_MAX_SIZE + 1 - h->len;
		} else if (h->elen < sizeof(h->ebuf)) {
			dst = h->ebuf + h->elen;
			room = sizeof(h->ebuf) - h->elen;
		} else {
			dst = scratch; /* past the cap: read and count */
			room = sizeof(scratch);
		}
		r = read(*fd, dst, room);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			close_fd(h, fd);
			return;
		}
		if (fd == &h->out) {
			h->len += (size_t)r;
			if (h->len > FEATFILE_MAX_SIZE) {
				if (!h->fail)
					h->fail = FAIL_BIG;
				close_fd(h, fd); /* the hook is killed at the next tick */
				return;
			}
		} else if (dst == scratch) {
			h->edropped += (size_t)r;
		} else {
			h->elen += (size_t)r;
		}
	}
}

static void on_pipe(void *ctx, int fd, short revents)
{
	struct hooks *h = ctx;

	(void)revents;
	drain(h, fd == h->out ? &h->out : &h->err);
}

static void tick(void *ctx);

/* Forks the hook path with its stdout and stderr on pipes watched by the
 * loop. Returns 0, or -1 after logging (nothing left running). */
static int spawn(struct hooks *h, const char *path)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	char name[32];
	pid_t pid;

	if (pipe2(po, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(pe, O_CLOEXEC | O_NONBLOCK) < 0) {
		LOG_E(h->lg, "hook %s: cannot start: %s", h->name, strerror(errno));
		goto fail;
	}
	if (!h->stragglers)
		note_older(h);
	pid = fork();
	if (pid < 0) {
		LOG_E(h->lg, "hook %s: fork: %s", h->name, strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		sigset_t none;
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		char *const argv[] = { (char *)path, NULL };

		/* its own session and process group, killed as one at the end */
		setsid();
		/* and killed with us if we die first */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* our loop blocks SIGTERM and ignores SIGPIPE; a hook must not inherit that */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0 ||
		    fcntl(1, F_SETFL, 0) < 0 || fcntl(2, F_SETFL, 0) < 0)
			_exit(126);
		execve(path, argv, environ);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	h->pid = pid;
	h->out = po[0];
	h->err = pe[0];
	if (!h->stragglers) {
		/* a hook's descendants start no earlier than the hook */
		unsigned long long start = 0;
		pid_t ppid = 0;
		int procfd = hostfs_open_own_proc();

		snprintf(name, sizeof(name), "%d", (int)pid);
		if (procfd < 0 || proc_stat(procfd, name, &ppid, &start) < 0)
			start = 0; /* then every child of ours is swept */
		if (procfd >= 0)
			close(procfd);
		h->since = start;
	}
	if (loop_watch(h->l, h->out, POLLIN, on_pipe, h) < 0 || loop_watch(h->l, h->err, POLLIN, on_pipe, h) < 0) {
		/* no room in the loop: the ticks read them */
		loop_unwatch(h->l, h->out);
		loop_unwatch(h->l, h->err);
	}
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return -1;
}

/* Logs the hook's stderr line by line, escaped, the way upstream forwards it. */
static void log_stderr(struct hooks *h)
{
	size_t lines = 0, i = 0;

	while (i < h->elen && lines < STDERR_LINES) {
		const char *s = h->ebuf + i, *nl = memchr(s, '\n', h->elen - i);
		size_t n = nl ? (size_t)(nl - s) : h->elen - i;
		char esc[1024];

		LOG_I(h->lg, "hook %s: stderr: %s", h->name, log_escape(s, n, esc, sizeof(esc)));
		lines++;
		i += n + (nl != NULL);
	}
	if (i < h->elen || h->edropped)
		LOG_I(h->lg, "hook %s: stderr: %zu more bytes not logged", h->name, h->elen - i + h->edropped);
}

/* The hook and everything it started are gone: use its output, if any. */
static int finish_hook(struct hooks *h)
{
	struct json *l = NULL, *f = NULL;
	int st = h->status, rc = 0;

	log_stderr(h);
	if (h->fail == FAIL_TIMEOUT)
		LOG_E(h->lg, "hook %s: killed after %d ms", h->name, h->timeout_ms);
	else if (h->fail == FAIL_BIG)
		LOG_E(h->lg, "hook %s: output larger than %d bytes, skipped", h->name, FEATFILE_MAX_SIZE);
	else if (h->fail == FAIL_START)
		LOG_E(h->lg, "hook %s: its exit status is lost, skipped", h->name);
	else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		LOG_E(h->lg, "hook %s: %s %d, skipped", h->name,
		      WIFEXITED(st) ? "exited with status" : "killed by signal",
		      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	else if (featfile_parse(h->buf, h->len, h->name, NULL, h->lg, &l, &f) < 0 ||
		 merge(h->labels, l) < 0 || merge(h->features, f) < 0)
		rc = -FB_ENOMEM;
	else
		h->ran++;
	json_free(l);
	json_free(f);
	return rc;
}

/* Starts the next runnable hook; 0 when one runs, 1 when none is left. */
static int next_hook(struct hooks *h)
{
	char path[PATH_MAX];

	while (h->next < h->n) {
		const char *file = h->names[h->next++];
		struct stat st;

		char rel[PATH_MAX];
		int dfd, fd;

		/* a name is anyone's bytes: logged escaped */
		log_escape(file, strlen(file), h->name, sizeof(h->name));
		/* which file: one beneath dir, a symlink only if it stays inside */
		if ((dfd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			continue;
		fd = hostfs_open_beneath(dfd, file, O_PATH, rel, sizeof(rel));
		close(dfd);
		if (fd == -FB_EOUTSIDE)
			LOG_W(h->lg, "hook %s: skipped: %s", h->name, fb_strerror(fd));
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111) ||
		    snprintf(path, sizeof(path), "%s/%s", h->dir, rel) >= (int)sizeof(path)) {
			close(fd);
			continue;
		}
		close(fd);
		h->len = h->elen = h->edropped = 0;
		h->fail = FAIL_NONE;
		h->status = 0;
		h->deadline = loop_now_ms() + h->timeout_ms;
		h->sweep_deadline = 0;
		if (spawn(h, path) == 0) {
			h->running = 1;
			return 0;
		}
	}
	return 1;
}

static void end_run(struct hooks *h, int rc)
{
	struct json *l = h->labels, *f = h->features;
	int ran = h->ran;

	for (size_t i = 0; i < h->n; i++)
		free(h->names[i]);
	free(h->names);
	free(h->dir);
	h->names = NULL;
	h->dir = NULL;
	h->n = h->next = 0;
	h->labels = h->features = NULL;
	h->active = 0;
	if (rc < 0) {
		LOG_E(h->lg, "hooks: out of memory");
		json_free(l);
		json_free(f);
		l = json_new_object();
		f = json_new_object();
	}
	h->done(h->ctx, l, f, ran);
}

/* The run's heartbeat: a hook's exit and deadline, then the sweep of what
 * it left, then the next hook. */
static void tick(void *ctx)
{
	struct hooks *h = ctx;
	long long now = loop_now_ms();

	h->timer = 0;
	if (h->running) {
		int left;

		drain(h, &h->out);
		drain(h, &h->err);
		if (h->pid > 0) {
			siginfo_t si;
			pid_t r;

			si.si_pid = 0;
			if (waitid(P_PID, (id_t)h->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno != EINTR)
				si.si_pid = h->pid; /* ECHILD: cannot be, but then nothing to wait for */
			if (si.si_pid != h->pid && !h->fail && now >= h->deadline)
				h->fail = FAIL_TIMEOUT;
			if (si.si_pid != h->pid && !h->fail)
				goto again;
			/* the group while its leader is unreaped, so that id is
			 * still its; the leader too, in case it is still running */
			kill(-h->pid, SIGKILL);
			kill(h->pid, SIGKILL);
			r = waitpid(h->pid, &h->status, WNOHANG);
			if (r == 0)
				goto again; /* dying */
			if (r < 0 && !h->fail)
				h->fail = FAIL_START;
			h->pid = 0;
			h->sweep_deadline = now + SWEEP_MS;
		}
		left = sweep(h);
		if (left && now < h->sweep_deadline)
			goto again;
		h->stragglers = left;
		if (left)
			LOG_E(h->lg, "hook %s: %d processes it started did not go after SIGKILL; trying again later",
			      h->name, left);
		/* everything that held the pipes is gone: what is there is all of it */
		drain(h, &h->out);
		drain(h, &h->err);
		close_fd(h, &h->out);
		close_fd(h, &h->err);
		h->running = 0;
		if (finish_hook(h) < 0) {
			end_run(h, -FB_ENOMEM);
			return;
		}
	}
	if (next_hook(h) != 0) {
		end_run(h, 0);
		return;
	}
again:
	h->timer = loop_timer(h->l, TICK_MS, tick, h);
	if (h->timer < 0) /* a full timer table is a bug elsewhere; hooks_free still cleans up */
		h->timer = 0;
}

/* Ends a run without calling done: kills the hook and all it started, waits
 * up to about a second for them to go. */
static void stop_run(struct hooks *h)
{
	if (h->timer)
		loop_timer_cancel(h->l, h->timer);
	h->timer = 0;
	if (h->running) {
		if (h->pid > 0) {
			kill(-h->pid, SIGKILL);
			kill(h->pid, SIGKILL);
		}
		for (int i = 0; i < 100; i++) {
			if (h->pid > 0 && waitpid(h->pid, NULL, WNOHANG) != 0)
				h->pid = 0;
			if (h->pid <= 0 && !sweep(h))
				break;
			usleep(10000);
		}
		close_fd(h, &h->out);
		close_fd(h, &h->err);
		h->running = 0;
	}
	for (size_t i = 0; i < h->n; i++)
		free(h->names[i]);
	free(h->names);
	free(h->dir);
	json_free(h->labels);
	json_free(h->features);
	h->names = NULL;
	h->dir = NULL;
	h->labels = h->features = NULL;
	h->n = h->next = 0;
	h->active = 0;
}

/* ---- the run -------------------------------------------------------------- */

int hooks_new(struct hooks **out, struct loop *l, int timeout_ms, const struct fb_log *lg)
{
	struct hooks *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h || !(h->buf = malloc(FEATFILE_MAX_SIZE + 1))) {
		free(h);
		return -FB_ENOMEM;
	}
	h->l = l;
	h->lg = lg;
	h->timeout_ms = timeout_ms;
	h->self = getpid();
	h->out = h->err = -1;
	/* orphaned descendants of a hook come to us, not to init */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		LOG_W(lg, "hooks: cannot become a child subreaper (%s): a hook's daemons may outlive it",
		      strerror(errno));
	*out = h;
	return 0;
}

int hooks_busy(const struct hooks *h)
{
	return h->active;
}

int hooks_start(struct hooks *h, const char *dir, hooks_done_fn done, void *ctx)
{
	size_t total = 0;
	int fd;

	if (h->active)
		return -FB_EAGAIN;
	h->done = done;
	h->ctx = ctx;
	h->ran = 0;
	h->labels = json_new_object();
	h->features = json_new_object();
	if (!h->labels || !h->features || !(h->dir = strdup(dir)))
		goto nomem;
	/* others may write source.d: one bounded, sorted listing (hostfs_list) */
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		int rc = hostfs_list(fd, HOOKS_MAX_FILES, &h->names, &h->n, &total);

		close(fd);
		if (rc == -FB_ENOMEM)
			goto nomem;
		if (rc < 0)
			LOG_E(h->lg, "hooks: %s: %s", dir, strerror(errno));
		else if (total > h->n)
			LOG_W(h->lg, "hooks: %zu files in %s, running the first %d by name (the cap)", total, dir,
			      HOOKS_MAX_FILES);
	} else if (errno != ENOENT) {
		LOG_E(h->lg, "hooks: %s: %s", dir, strerror(errno));
	}
	h->active = 1;
	h->next = 0;
	/* the first hook starts from the loop, like every later one */
	h->timer = loop_timer(h->l, 0, tick, h);
	if (h->timer < 0) {
		h->timer = 0;
		stop_run(h);
		return -FB_E2BIG;
	}
	return 0;
nomem:
	stop_run(h);
	return -FB_ENOMEM;
}

void hooks_free(struct hooks *h)
{
	if (!h)
		return;
	stop_run(h);
	free(h->buf);
	free(h);
}

struct sync {
	struct loop *l;
	int done, ran;
	struct json *labels, *features;
};

static void sync_done(void *ctx, struct json *labels, struct json *features, int ran)
{
	struct sync *s = ctx;

	s->done = 1;
	s->ran = ran;
	s->labels = labels;
	s->features = features;
	loop_stop(s->l, 0);
}

int hooks_run(struct hooks *h, const char *dir, struct json **labels, struct json **features)
{
	struct sync s = { h->l, 0, 0, NULL, NULL };
	int rc = hooks_start(h, dir, sync_done, &s);

	*labels = *features = NULL;
	if (rc < 0)
		return rc;
	loop_run(h->l);
	if (!s.done) { /* SIGTERM/SIGINT */
		stop_run(h);
		return -FB_ECANCELED;
	}
	if (!s.labels || !s.features) {
		json_free(s.labels);
		json_free(s.features);
		return -FB_ENOMEM;
	}
	*labels = s.labels;
	*features = s.features;
	return s.ran;
}
