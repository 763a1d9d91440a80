#include "log.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

void log_init(struct fb_log *lg)
{
	memset(lg, 0, sizeof(*lg));
	lg->fd = STDERR_FILENO;
	lg->also_fd = -1;
	lg->also_min = 'E';
}

static int sev_rank(char sev)
{
	return sev == 'E' ? 2 : sev == 'W' ? 1 : 0;
}

int log_v_on_(const struct fb_log *lg, int n, const char *file)
{
	const char *p = lg->vmodule, *base = strrchr(file, '/');
	char name[256], pat[256];

	if (!p)
		return lg->v >= n;
	base = base ? base + 1 : file;
	snprintf(name, sizeof(name), "%s", base);
	if (strlen(name) > 2 && strcmp(name + strlen(name) - 2, ".c") == 0)
		name[strlen(name) - 2] = '\0';
	while (*p) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);

		eq = memchr(p, '=', len);
		if (eq && (size_t)(eq - p) < sizeof(pat)) {
			memcpy(pat, p, (size_t)(eq - p));
			pat[eq - p] = '\0';
			if (fnmatch(pat, strchr(pat, '/') ? file : name, 0) == 0)
				return atoi(eq + 1) >= n;
		}
		p += len + (end != NULL);
	}
	return lg->v >= n;
}

void log_write_(const struct fb_log *lg, char sev, const char *file, int line,
		const char *fmt, ...)
{
	char buf[2048];
	struct timeval tv;
	struct tm tm;
	const char *base = strrchr(file, '/');
	int saved = errno;
	size_t n;
	int r;
	va_list ap;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	if (lg->skip_headers)
		r = 0;
	else
		r = snprintf(buf, sizeof(buf), "%c%02d%02d %02d:%02d:%02d.%06ld %s:%d] ", sev, tm.tm_mon + 1,
			     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec,
			     base && !lg->dir_header ? base + 1 : file, line);
	n = r < 0 ? 0 : (size_t)r;
	if (n < sizeof(buf)) {
		va_start(ap, fmt);
		r = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
		va_end(ap);
		if (r > 0)
			n += (size_t)r;
	}
	if (n >= sizeof(buf) - 1) {
		n = sizeof(buf) - 1;
		memcpy(buf + n - 3, "...", 3);
	}
	buf[n++] = '\n';
	while (write(lg->fd, buf, n) < 0 && errno == EINTR)
		;
	if (lg->also_fd > 0 && sev_rank(sev) >= sev_rank(lg->also_min))
		while (write(lg->also_fd, buf, n) < 0 && errno == EINTR)
			;
	errno = saved;
}

const char *log_escape(const char *s, size_t len, char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (size == 0)
		return out;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		int plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\';

		if (n + (plain ? 1 : 4) + 4 > size) {
			if (n + 4 <= size)
				memcpy(out + n, "...", 3), n += 3;
			break;
		}
		if (plain) {
			out[n++] = (char)c;
		} else {
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = '\0';
	return out;
}
