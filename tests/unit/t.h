/* t.h: the unit-test harness. Each check prints one "PASS: suite: name" or
 * "FAIL: suite: name (file:line: detail)" line; tests/run counts them. A test
 * program is a main() that walks case tables and returns t_done(). */
#ifndef FB_T_H
#define FB_T_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *t_suite = "unit";
static int t_failed;

static void t_result(int ok, const char *file, int line, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void t_result(int ok, const char *file, int line, const char *name, const char *fmt, ...)
{
	va_list ap;

	const char *tag = getenv("FB_TEST_TAG"); /* "aarch64": the cross build under qemu-user */

	printf("%s: %s%s%s: %s", ok ? "PASS" : "FAIL", tag ? tag : "", tag ? "/" : "", t_suite, name);
	if (!ok) {
		t_failed++;
		printf(" (%s:%d: ", file, line);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar(')');
	}
	putchar('\n');
	fflush(stdout);
}

/* T_OK(name, cond, fmt, ...): one named check with a detail shown on failure. */
#define T_OK(name, cond, ...) t_result(!!(cond), __FILE__, __LINE__, (name), __VA_ARGS__)
#define T_INT(name, got, want) \
	do { \
		long long g_ = (long long)(got), w_ = (long long)(want); \
		T_OK(name, g_ == w_, "got %lld, want %lld", g_, w_); \
	} while (0)
#define T_STR(name, got, want) \
	do { \
		const char *g_ = (got), *w_ = (want); \
		T_OK(name, g_ && w_ && strcmp(g_, w_) == 0, "got \"%s\", want \"%s\"", \
		     g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
	} while (0)

/* Runs fn in a child process as uid/gid 65534 (nobody) when we are root, so
 * permission checks apply; directly otherwise. Returns fn's result, or -1
 * when the child could not drop privileges or died. */
static __attribute__((unused)) int t_unprivileged(int (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	if (geteuid() != 0)
		return fn(arg);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(255);
		_exit(fn(arg) & 0xff);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) == 255)
		return -1;
	return WEXITSTATUS(st);
}

/* Writes path (a directory when data is NULL), creating missing parent
 * directories, then gives it mode; a failure ends the test program (exit 2:
 * the fixture could not be made, which is not a test result). */
static __attribute__((unused)) void t_put(const char *path, const char *data, mode_t mode)
{
	char p[1024], *slash;
	int fd;

	snprintf(p, sizeof(p), "%s", path);
	for (slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(p, 0755);
		*slash = '/';
	}
	if (!data) {
		mkdir(p, 0755);
		return;
	}
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data)) {
		fprintf(stderr, "%s: cannot make the fixture: %s\n", p, strerror(errno));
		exit(2);
	}
	close(fd);
	chmod(p, mode);
}

/* A log file for a struct fb_log to write into: DIR/log, writable by the
 * unprivileged runs too. Ends the program (exit 2) when it cannot be made. */
static __attribute__((unused)) int t_log_open(const char *dir)
{
	char p[1024];
	int fd;

	snprintf(p, sizeof(p), "%s/log", dir);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0) {
		perror(p);
		exit(2);
	}
	chmod(p, 0666);
	return fd;
}

/* What was logged to fd since the last call (the file is emptied). */
static __attribute__((unused)) const char *t_logged(int fd)
{
	static char buf[8192];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	if (ftruncate(fd, 0) != 0)
		exit(2);
	return buf;
}

static int t_done(void)
{
	return t_failed ? 1 : 0;
}

#endif
