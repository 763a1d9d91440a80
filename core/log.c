#include "log.h"

#include <ctype.h>
#include <errno.h>
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

/* The ']' that closes the bracket expression at p (its '['), or NULL when
 * there is none: then '[' is a literal. As musl's fnmatch reads it: a ']'
 * right after the '[' (or "[!" "[^") is a member, and so is any inside
 * [:class:], [.x.] or [=x=]. */
static const char *bracket_end(const char *p)
{
	size_t k = 1;

	k += p[k] == '^' || p[k] == '!';
	k += p[k] == ']';
	for (; p[k] && p[k] != ']'; k++) {
		if (p[k] == '[' && (p[k + 1] == ':' || p[k + 1] == '.' || p[k + 1] == '=')) {
			char z = p[k + 1];

			k += 2;
			k += p[k] != '\0';
			while (p[k] && (p[k - 1] != z || p[k] != ']'))
				k++;
			if (!p[k])
				break;
		}
	}
	return p[k] ? p + k : NULL;
}

static int class_has(const char *name, size_t len, int c)
{
	static const char names[] = "alnum\0alpha\0blank\0cntrl\0digit\0graph\0lower\0print\0punct\0space\0upper\0xdigit";
	static int (*const is[])(int) = { isalnum, isalpha, isblank, iscntrl, isdigit, isgraph,
					  islower, isprint, ispunct, isspace, isupper, isxdigit };
	const char *n = names;

	for (size_t i = 0; i < sizeof(is) / sizeof(is[0]); i++, n += strlen(n) + 1)
		if (strlen(n) == len && memcmp(n, name, len) == 0)
			return c < 128 && is[i](c);
	return 0;
}

/* Whether byte c is in the bracket expression at p (closed: bracket_end),
 * as musl's fnmatch decides it: a range starts at the literal before its
 * '-' (the byte before the list when there is none) and its end is read
 * once more as a literal; [.x.] and [=x=] match nothing. */
static int in_bracket(const char *p, unsigned char c)
{
	int inv = 0;
	unsigned char lo;

	p++;
	if (*p == '^' || *p == '!') {
		inv = 1;
		p++;
	}
	if (*p == ']' || *p == '-') {
		if (c == (unsigned char)*p)
			return !inv;
		p++;
	}
	lo = (unsigned char)p[-1];
	for (; *p != ']'; p++) {
		if (p[0] == '-' && p[1] != ']') {
			if (lo <= (unsigned char)p[1] && c >= lo && c <= (unsigned char)p[1])
				return !inv;
			continue;
		}
		if (p[0] == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
			const char *name = p + 2;
			char z = p[1];

			for (p += 3; p[-1] != z || p[0] != ']'; p++)
				;
			if (z == ':' && class_has(name, (size_t)(p - 1 - name), c))
				return !inv;
			continue;
		}
		lo = (unsigned char)*p;
		if (c == lo)
			return !inv;
	}
	return inv;
}

int log_glob_(const char *p, const char *s)
{
	const char *star = NULL, *from = NULL;

	for (;;) {
		const char *end;
		size_t step = 1;
		int ok;

		if (*p == '*') {
			star = ++p;
			from = s;
			continue;
		}
		if (!*p && !*s)
			return 1;
		if (!*p || !*s)
			ok = 0;
		else if (*p == '?')
			ok = 1;
		else if (*p == '[' && (end = bracket_end(p)))
			ok = in_bracket(p, (unsigned char)*s), step = (size_t)(end + 1 - p);
		else if (*p == '\\' && p[1])
			ok = p[1] == *s, step = 2; /* an escaped byte; a trailing \\ is itself */
		else
			ok = *p == *s;
		if (ok) {
			p += step;
			s++;
		} else if (star && *from) {
			p = star;
			s = ++from;
		} else {
			return 0;
		}
	}
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
			if (log_glob_(pat, strchr(pat, '/') ? file : name))
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

char *log_rfc3339(time_t t, char *out, size_t size)
{
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm));
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec);
	return out;
}
