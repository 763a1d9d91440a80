/* log: klog-like lines on stderr, "I1129 08:16:57.123456 file.c:42] msg".
 * The verbosity lives in a struct the applet owns (no global state in core);
 * callers must never pass secrets (tokens, keys) to these functions. */
#ifndef FB_LOG_H
#define FB_LOG_H

#include <stddef.h>
#include <time.h>

struct fb_log {
	int v;  /* -v N: LOG_V(lg, n, ...) prints when v >= n */
	int fd; /* destination, stderr by default */
	/* klog's flags (core/app sets them): */
	const char *vmodule; /* "PATTERN=N,...": verbosity per source file (NULL: v everywhere) */
	int also_fd;         /* -1 (or 0): none; else a second destination (stderr beside a -log_file) */
	char also_min;       /* ... for lines of this severity and above ('I', 'W', 'E') */
	unsigned char skip_headers, dir_header;
};

/* Cannot fail: verbosity 0, output to stderr. */
void log_init(struct fb_log *lg);

/* sev is 'I', 'W' or 'E'. One write(2) per line; over-long lines are cut with "...". */
void log_write_(const struct fb_log *lg, char sev, const char *file, int line,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Copies s[0..len) into out (NUL-terminated, cut with "..." to fit) with
 * bytes outside printable ASCII, '"' and '\\' escaped as \xNN, so data from
 * a file cannot forge log lines. Returns out. */
const char *log_escape(const char *s, size_t len, char *out, size_t size);

/* t in UTC as RFC 3339 to the second, "2006-01-02T15:04:05Z" (what
 * metav1.Time marshals; NFD's +expiry-time): 21 bytes with the NUL, cut to
 * fit a smaller size. Returns out. (snprintf, not strftime: strftime links
 * musl's locale and time-zone code.) */
char *log_rfc3339(time_t t, char *out, size_t size);

#define LOG_I(lg, ...) log_write_((lg), 'I', __FILE__, __LINE__, __VA_ARGS__)
#define LOG_W(lg, ...) log_write_((lg), 'W', __FILE__, __LINE__, __VA_ARGS__)
#define LOG_E(lg, ...) log_write_((lg), 'E', __FILE__, __LINE__, __VA_ARGS__)
/* -v, or with -vmodule the level of the first pattern matching file (a glob
 * on its base name without ".c", or on the path when the pattern has a '/'). */
int log_v_on_(const struct fb_log *lg, int n, const char *file);

/* Whether the glob p matches all of s, as fnmatch(p, s, 0) in musl (bytes:
 * * ? [...] with [!...] [^...] ranges and [:class:] (ASCII), backslash
 * escapes): musl's own pulls in the wide-character class and case tables. */
int log_glob_(const char *p, const char *s);

#define LOG_V(lg, n, ...) \
	do { \
		if (log_v_on_((lg), (n), __FILE__)) \
			log_write_((lg), 'I', __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#endif
