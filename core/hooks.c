#include "hooks.h"

#include "err.h"
#include "featfile.h"
#include "hostfs.h"
#include "json.h"
#include "log.h"
#include "loop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copies src's members into dst (later wins). */
static int merge(struct json *dst, const struct json *src)
{
	for (const struct json *e = json_child(src); e; e = json_next(e))
		if (json_set_str(dst, json_key(e), json_str(e)) < 0)
			return -FB_ENOMEM;
	return 0;
}

/* Runs one hook; returns 0 with its stdout in *out (owned) or -1 after
 * logging why it is skipped. */
static int run_one(const char *path, const char *name, int timeout_ms, int cancel_fd,
		   const struct fb_log *lg, char **out, size_t *outlen)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, st = 0, killed = 0, big = 0, exited = 0;
	char *buf = malloc(FEATFILE_MAX_SIZE + 1), err[512];
	size_t len = 0, elen = 0;
	long long deadline = loop_now_ms() + timeout_ms;
	pid_t pid;

	*out = NULL;
	if (!buf || pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		LOG_E(lg, "hook %s: cannot start: %s", name, strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		LOG_E(lg, "hook %s: fork: %s", name, strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		sigset_t none;
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		char *const argv[] = { (char *)path, NULL };

		/* its own process group, so whatever it starts goes with it */
		setsid();
		/* our loop blocks SIGTERM; a hook must not inherit that */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(126);
		execve(path, argv, environ);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	for (;;) {
		struct pollfd p[3] = { { .fd = po[0], .events = POLLIN }, { .fd = pe[0], .events = POLLIN },
				       { .fd = cancel_fd, .events = POLLIN } };
		long long left = deadline - loop_now_ms();
		int n;

		if (po[0] < 0 && pe[0] < 0) {
			/* both pipes closed: wait for the exit, still within the deadline */
			pid_t r = waitpid(pid, &st, WNOHANG);

			if (r == pid) {
				exited = 1;
				break;
			}
			if (r < 0 && errno != EINTR)
				break;
		}
		if (left <= 0 || big) {
			killed = !big;
			break;
		}
		n = poll(p, 3, po[0] < 0 && pe[0] < 0 ? (int)(left < 20 ? left : 20) : (int)left);
		if (n > 0 && p[2].revents) { /* SIGTERM: stop now */
			killed = 1;
			break;
		}
		if (n < 0 && errno != EINTR)
			break;
		if (p[0].revents) {
			ssize_t r = read(po[0], buf + len, FEATFILE_MAX_SIZE + 1 - len);

			if (r <= 0) {
				close(po[0]);
				po[0] = -1;
			} else if ((len += (size_t)r) > FEATFILE_MAX_SIZE) {
				big = 1;
			}
		}
		if (p[1].revents) {
			ssize_t r = read(pe[0], err + elen, sizeof(err) - 1 - elen);

			if (r <= 0) {
				close(pe[0]);
				pe[0] = -1;
			} else {
				elen += (size_t)r;
				if (elen == sizeof(err) - 1) /* keep the first part, drop the rest */
					elen = sizeof(err) - 2;
			}
		}
	}
	/* the whole group: a hook's background children do not outlive it */
	kill(-pid, SIGKILL);
	while (!exited && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (elen) {
		char esc[1024];

		err[elen] = '\0';
		LOG_I(lg, "hook %s: stderr: %s", name, log_escape(err, elen, esc, sizeof(esc)));
	}
	if (killed) {
		LOG_E(lg, "hook %s: killed after %d ms", name, timeout_ms);
		goto fail;
	}
	if (big) {
		LOG_E(lg, "hook %s: output larger than %d bytes, skipped", name, FEATFILE_MAX_SIZE);
		goto fail;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		LOG_E(lg, "hook %s: %s %d, skipped", name, WIFEXITED(st) ? "exited with status" : "killed by signal",
		      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		goto fail;
	}
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	*out = buf;
	*outlen = len;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	free(buf);
	return -1;
}

int hooks_run_dir(const char *dir, int timeout_ms, int cancel_fd, const struct fb_log *lg,
		  struct json *labels, struct json *features)
{
	DIR *d = opendir(dir);
	char **names = NULL, path[PATH_MAX];
	size_t n = 0, cap = 0;
	struct dirent *de;
	int ran = 0, rc = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof(*nn));

			if (!nn) {
				rc = -FB_ENOMEM;
				goto out;
			}
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name))) {
			rc = -FB_ENOMEM;
			goto out;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		struct json *l = NULL, *f = NULL;
		char *out, rel[PATH_MAX], esc[300];
		size_t len;
		int fd;

		/* which file: one beneath dir, a symlink only if it stays inside */
		fd = hostfs_open_beneath(dirfd(d), names[i], O_PATH, rel, sizeof(rel));
		if (fd == -FB_EOUTSIDE)
			LOG_W(lg, "hook %s: skipped: %s", log_escape(names[i], strlen(names[i]), esc, sizeof(esc)),
			      fb_strerror(fd));
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111) ||
		    snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path)) {
			close(fd);
			continue;
		}
		close(fd);
		if (run_one(path, names[i], timeout_ms, cancel_fd, lg, &out, &len) < 0)
			continue;
		if (featfile_parse(out, len, names[i], NULL, lg, &l, &f) < 0 ||
		    merge(labels, l) < 0 || merge(features, f) < 0) {
			rc = -FB_ENOMEM;
		} else {
			ran++;
		}
		json_free(l);
		json_free(f);
		free(out);
		if (rc < 0)
			break;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	/* as PID 1 (a container's only process) we inherit every orphan */
	if (getpid() == 1)
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	return rc < 0 ? rc : ran;
}
