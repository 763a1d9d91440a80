#include "featfile.h"

#include "buf.h"
#include "hostfs.h"
#include "json.h"
#include "labels.h"
#include "log.h"
#include "sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* mkdir -p of dir (modified in place and restored). */
static int make_dirs(char *dir, struct fb_errinfo *ei)
{
	struct stat st;

	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : fb_errinfo_set(ei, FB_EIO, ENOTDIR, dir, "creating directory");
	for (char *p = dir + 1; ; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			int e = errno;

			fb_errinfo_set(ei, FB_EIO, e, dir, "creating directory");
			*p = c;
			return -FB_EIO;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int featfile_write(const char *path, const void *data, size_t len, struct fb_errinfo *ei)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	int fd = -1, lockfd = -1, rc;

	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return fb_errinfo_set(ei, FB_EINVAL, 0, path, "not a file name");
	if (dlen + 1 >= sizeof(dir))
		return fb_errinfo_set(ei, FB_E2BIG, 0, path, "path too long");
	if (slash) {
		memcpy(dir, path, dlen ? dlen : 1);
		dir[dlen ? dlen : 1] = '\0';
	} else {
		strcpy(dir, ".");
	}
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, base) >= (int)sizeof(tmp))
		return fb_errinfo_set(ei, FB_E2BIG, 0, path, "path too long");
	rc = make_dirs(dir, ei);
	if (rc < 0)
		return rc;
	/* Writers of the same file take turns: they share the temporary name,
	 * and two of them interleaving would publish a mix. A filesystem without
	 * flock just goes unserialised. */
	lockfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lockfd >= 0)
		while (flock(lockfd, LOCK_EX) < 0 && errno == EINTR)
			;
	/* A temporary left by a crash (or planted as a symlink) is removed, and
	 * ours is created fresh so no stale mode or owner carries over. */
	if (unlink(tmp) < 0 && errno != ENOENT) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "removing a stale temporary file");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "creating temporary file");
		goto out;
	}
	if (fchmod(fd, 0644) < 0) { /* the promised mode, whatever the umask */
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "chmod");
		goto fail;
	}
	if (write_all(fd, data, len) < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "writing");
		goto fail;
	}
	if (fsync(fd) < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "fsync");
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "closing");
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, path, "renaming the temporary file over it");
		goto fail;
	}
	/* make the rename itself durable; some filesystems refuse fsync on a directory */
	rc = 0;
	if (lockfd >= 0 && fsync(lockfd) < 0 && errno != EINVAL && errno != EROFS)
		rc = fb_errinfo_set(ei, FB_EIO, errno, dir, "fsync of directory");
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	if (lockfd >= 0)
		close(lockfd); /* releases the lock */
	return rc;
}

/* ---- reading: time ------------------------------------------------------ */

static int two_digits(const char *s, int min, int max, int *out)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return -1;
	*out = (s[0] - '0') * 10 + (s[1] - '0');
	return *out < min || *out > max ? -1 : 0;
}

static int days_in(int month, int year)
{
	static const unsigned char d[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0))
		return 29;
	return d[month - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static long long days_from_civil(long long y, int m, int d)
{
	long long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int featfile_parse_rfc3339(const char *s, size_t len, struct featfile_time *t)
{
	int yh, yl, mon, day, hour, min, sec, oh, om, off = 0;
	long nsec = 0;
	size_t i = 19;

	if (len < 20 || two_digits(s, 0, 99, &yh) || two_digits(s + 2, 0, 99, &yl) ||
	    two_digits(s + 5, 1, 12, &mon) || two_digits(s + 8, 1, 31, &day) ||
	    two_digits(s + 11, 0, 23, &hour) || two_digits(s + 14, 0, 59, &min) ||
	    two_digits(s + 17, 0, 59, &sec) || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':' || day > days_in(mon, yh * 100 + yl))
		return -FB_EINVAL;
	if ((s[i] == '.' || s[i] == ',') && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9') {
		long scale = 100000000;

		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, scale /= 10)
			nsec += (s[i] - '0') * scale; /* scale reaches 0 past the ninth digit */
	}
	if (len - i == 1 && s[i] == 'Z') {
		off = 0;
	} else if (len - i == 6 && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':' &&
		   !two_digits(s + i + 1, 0, 23, &oh) && !two_digits(s + i + 4, 0, 59, &om)) {
		off = (oh * 60 + om) * 60 * (s[i] == '-' ? -1 : 1);
	} else {
		return -FB_EINVAL;
	}
	t->sec = days_from_civil(yh * 100 + yl, mon, day) * 86400 + hour * 3600 + min * 60 + sec - off;
	t->nsec = nsec;
	return 0;
}

static int time_before(const struct featfile_time *a, const struct featfile_time *b)
{
	return a->sec < b->sec || (a->sec == b->sec && a->nsec < b->nsec);
}

/* ---- reading: text ------------------------------------------------------- */

/* Length of the UTF-8 sequence at s[0..n) when it is valid (Go's rules: no
 * overlong forms, no surrogates, nothing past U+10FFFF), else 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		unsigned char lo = s[0] == 0xE0 ? 0xA0 : 0x80, hi = s[0] == 0xED ? 0x9F : 0xBF;

		return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
	}
	if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		unsigned char lo = s[0] == 0xF0 ? 0x90 : 0x80, hi = s[0] == 0xF4 ? 0x8F : 0xBF;

		return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 &&
			       (s[3] & 0xC0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/* Returns buf when it is valid UTF-8, else a new copy (owned by the caller)
 * with each byte that starts no valid sequence replaced by U+FFFD, as Go's
 * encoding/json does; NULL on allocation failure. */
static char *utf8_fix(const char *buf, size_t len, size_t *outlen)
{
	const unsigned char *s = (const unsigned char *)buf;
	size_t bad = 0, i, k, n;
	char *out;

	for (i = 0; i < len; i += n ? n : 1)
		bad += (n = utf8_len(s + i, len - i)) == 0;
	*outlen = len;
	if (bad == 0)
		return (char *)buf;
	*outlen = len + 2 * bad;
	out = malloc(*outlen + 1);
	if (!out)
		return NULL;
	for (i = k = 0; i < len; i += n ? n : 1) {
		n = utf8_len(s + i, len - i);
		if (n) {
			memcpy(out + k, buf + i, n);
			k += n;
		} else {
			memcpy(out + k, "\xEF\xBF\xBD", 3);
			k += 3;
		}
	}
	out[k] = '\0';
	return out;
}

/* Bytes of Go's unicode.IsSpace rune at the start (lead) or end (!lead) of
 * valid UTF-8 s[0..n), or 0. */
static size_t space_len(const char *p, size_t n, int lead)
{
	static const char *const wide[] = {
		"\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\xA8", "\xE2\x80\xA9",
		"\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80",
	};
	const unsigned char *s = (const unsigned char *)p;
	unsigned char c = lead ? s[0] : s[n - 1];

	if (c == ' ' || (c >= '\t' && c <= '\r'))
		return 1;
	if (c < 0x80)
		return 0;
	for (size_t i = 0; i < sizeof(wide) / sizeof(wide[0]); i++) {
		size_t w = strlen(wide[i]);

		if (n >= w && memcmp(lead ? p : p + n - w, wide[i], w) == 0)
			return w;
	}
	/* U+2000..U+200A: E2 80 80..8A */
	if (n >= 3) {
		const unsigned char *q = lead ? s : s + n - 3;

		if (q[0] == 0xE2 && q[1] == 0x80 && q[2] >= 0x80 && q[2] <= 0x8A)
			return 3;
	}
	return 0;
}

static void trim(const char **p, size_t *n)
{
	size_t w;

	while (*n && (w = space_len(*p, *n, 1))) {
		*p += w;
		*n -= w;
	}
	while (*n && (w = space_len(*p, *n, 0)))
		*n -= w;
}

/* ---- reading: collecting and resolving ----------------------------------- */

/* Every key line becomes up to two operations, one per map (labels,
 * features): a set or a removal. Resolution sorts them by map, key and
 * sequence: per file the last operation on a key counts, and the last file
 * whose last operation is a set wins. Sorting instead of updating json
 * objects line by line keeps a 64 KiB file of short lines linear-ish. */
enum { MAP_LABELS, MAP_FEATURES };

struct ff_op {
	const char *key, *val;
	uint32_t klen, vlen, seq, file;
	uint8_t map, set;
};

struct ff_ctx {
	struct ff_op *ops;
	size_t nops, size;
	char **bufs; /* owned: file contents the ops point into */
	size_t nbufs, bsize;
	const char **names; /* borrowed, per file index, for log lines */
	uint32_t seq;
	size_t kept; /* bytes the compacted files hold (read_dir) */
	struct featfile_time now;
	const struct fb_log *lg;
};

static int ctx_keep(struct ff_ctx *c, char *buf)
{
	if (ARRAY_GROW(c->bufs, c->bsize, c->nbufs + 1) < 0)
		return -FB_ENOMEM;
	c->bufs[c->nbufs++] = buf;
	return 0;
}

static int ctx_op(struct ff_ctx *c, uint32_t file, int map, int set, const char *key, size_t klen,
		  const char *val, size_t vlen)
{
	struct ff_op *o;

	if (ARRAY_GROW(c->ops, c->size, c->nops + 1) < 0)
		return -FB_ENOMEM;
	o = &c->ops[c->nops++];
	*o = (struct ff_op){ .key = key, .val = val, .klen = (uint32_t)klen, .vlen = (uint32_t)vlen,
			     .seq = c->seq++, .file = file, .map = (uint8_t)map, .set = (uint8_t)set };
	return 0;
}

static void ctx_free(struct ff_ctx *c)
{
	for (size_t i = 0; i < c->nbufs; i++)
		free(c->bufs[i]);
	free(c->bufs);
	free(c->ops);
}

/* How much of a text from a file a log line shows: enough to find the
 * line, not a secret's worth of a file that should never have been read. */
#define SHOW 80

/* "name line N" prefix pieces, escaped */
static const char *esc(const char *s, size_t len, char *out, size_t size)
{
	return log_escape(s, len, out, size);
}

static void directive(struct ff_ctx *c, const char *line, size_t len, const char *name, int lineno,
		      struct featfile_time *expiry, int *skip_label, int *skip_feature)
{
	const char *d = line + 3, *eq = memchr(d, '=', len - 3);
	size_t klen = eq ? (size_t)(eq - d) : len - 3;
	char e1[SHOW], e2[SHOW];

	if (klen == 11 && memcmp(d, "expiry-time", 11) == 0) {
		const char *v = eq ? eq + 1 : NULL;
		size_t vlen = eq ? len - 3 - klen - 1 : 0;
		struct featfile_time t;

		if (!eq) {
			LOG_E(c->lg, "features.d file %s line %d: invalid directive format in \"%s\", "
			      "should be '# +expiry-time=value'", name, lineno, esc(line, len, e2, sizeof(e2)));
			return;
		}
		trim(&v, &vlen);
		if (featfile_parse_rfc3339(v, vlen, &t) < 0) {
			LOG_E(c->lg, "features.d file %s line %d: failed to parse expiry-time \"%s\" "
			      "(want RFC 3339, like 2030-01-02T15:04:05Z)", name, lineno,
			      esc(v, vlen, e1, sizeof(e1)));
			return;
		}
		*expiry = t;
	} else if (klen == 8 && memcmp(d, "no-label", 8) == 0) {
		*skip_label = 1;
	} else if (klen == 10 && memcmp(d, "no-feature", 10) == 0) {
		*skip_feature = 1;
	} else {
		LOG_E(c->lg, "features.d file %s line %d: unknown feature file directive \"%s\"", name,
		      lineno, esc(d, klen, e1, sizeof(e1)));
	}
}

/* A feature name is what could be a label key: 1 to FEATFILE_KEY_MAX bytes,
 * no control characters. Upstream takes any text; a line of a secret file
 * (a token is one long line) or of binary junk is no feature. */
static int feature_key_ok(const char *k, size_t len)
{
	if (len == 0 || len > FEATFILE_KEY_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)k[i] < 0x20 || k[i] == 0x7f)
			return 0;
	return 1;
}

/* Parses one file's text (valid UTF-8 from here on, kept alive by c) into
 * operations. */
static int parse_into(struct ff_ctx *c, uint32_t file, const char *buf, size_t len)
{
	struct featfile_time expiry = c->now;
	int skip_label = 0, skip_feature = 0, lineno = 0, rc;
	char name[256], e1[SHOW];

	if (len == 0)
		return 0;
	esc(c->names[file], strlen(c->names[file]), name, sizeof(name));
	for (size_t pos = 0; pos <= len;) {
		const char *line = buf + pos, *nl = memchr(line, '\n', len - pos), *eq, *val;
		size_t n = nl ? (size_t)(nl - line) : len - pos, klen, vlen;

		lineno++;
		pos += n + 1;
		trim(&line, &n);
		if (n == 0)
			continue;
		if (line[0] == '#') {
			if (n >= 3 && memcmp(line, "# +", 3) == 0)
				directive(c, line, n, name, lineno, &expiry, &skip_label, &skip_feature);
			continue;
		}
		if (time_before(&expiry, &c->now))
			continue;
		eq = memchr(line, '=', n);
		klen = eq ? (size_t)(eq - line) : n;
		val = eq ? eq + 1 : "true";
		vlen = eq ? n - klen - 1 : 4;
		if (memchr(line, '\0', n)) {
			LOG_E(c->lg, "features.d file %s line %d: NUL byte, line ignored", name, lineno);
		} else if (!feature_key_ok(line, klen)) {
			LOG_E(c->lg, "features.d file %s line %d: ignoring line with invalid feature name "
			      "\"%s\" (%zu bytes)", name, lineno, esc(line, klen, e1, sizeof(e1)), klen);
		} else {
			rc = ctx_op(c, file, MAP_FEATURES, !skip_feature, line, klen, val, vlen);
			if (rc < 0)
				return rc;
			if (skip_label) {
				rc = ctx_op(c, file, MAP_LABELS, 0, line, klen, val, vlen);
			} else {
				char k[LABELS_PREFIX_MAX + LABELS_NAME_MAX + 2];
				int ok = klen < sizeof(k);

				if (ok) {
					memcpy(k, line, klen);
					k[klen] = '\0';
					ok = labels_valid_key(k);
				}
				if (ok)
					rc = ctx_op(c, file, MAP_LABELS, 1, line, klen, val, vlen);
				else
					LOG_I(c->lg, "features.d file %s line %d: ignoring label with "
					      "invalid name \"%s\"", name, lineno, esc(line, klen, e1, sizeof(e1)));
			}
			if (rc < 0)
				return rc;
		}
		/* no-label and no-feature take effect for one line only */
		skip_label = skip_feature = 0;
	}
	return 0;
}

/* Parses one file: fixes its encoding, keeps the text alive in c. */
static int ctx_file(struct ff_ctx *c, uint32_t file, char *buf, size_t len, int owned)
{
	size_t flen;
	char *fixed = utf8_fix(buf, len, &flen);
	int rc;

	if (!fixed) {
		if (owned)
			free(buf);
		return -FB_ENOMEM;
	}
	if (fixed != buf && owned)
		free(buf);
	if (fixed != buf || owned) {
		rc = ctx_keep(c, fixed);
		if (rc < 0) {
			free(fixed);
			return rc;
		}
	}
	return parse_into(c, file, fixed, flen);
}

static int op_cmp(const void *a, const void *b)
{
	const struct ff_op *x = a, *y = b;
	int r;

	if (x->map != y->map)
		return x->map < y->map ? -1 : 1;
	r = memcmp(x->key, y->key, x->klen < y->klen ? x->klen : y->klen);
	if (r)
		return r;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int same_key(const struct ff_op *x, const struct ff_op *y)
{
	return x->map == y->map && x->klen == y->klen && memcmp(x->key, y->key, x->klen) == 0;
}

static void sb_string(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;

	buf_put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		char e[6] = { '\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15] };

		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		buf_put(b, s + run, i - run);
		if (ch == '"' || ch == '\\') {
			e[1] = (char)ch;
			buf_put(b, e, 2);
		} else {
			buf_put(b, e, 6);
		}
		run = i + 1;
	}
	buf_put(b, s + run, n - run);
	buf_put(b, "\"", 1);
}

/* Resolves the operations into the two objects. The objects are built as
 * JSON text with unique keys and parsed once: json_set per key would search
 * the object each time. */
static int ctx_finish(struct ff_ctx *c, struct json **labels, struct json **features)
{
	struct buf b[2];
	struct json **out[2] = { labels, features };
	char e1[SHOW], e2[SHOW], n1[128], n2[128];
	int rc = 0;

	*labels = *features = NULL;
	buf_init(&b[0], 0);
	buf_init(&b[1], 0);
	if (c->nops)
		qsort(c->ops, c->nops, sizeof(*c->ops), op_cmp);
	buf_put(&b[0], "{", 1);
	buf_put(&b[1], "{", 1);
	for (size_t i = 0, j; i < c->nops; i = j) {
		const struct ff_op *win = NULL;

		for (j = i; j < c->nops && same_key(&c->ops[i], &c->ops[j]); j++) {
			const struct ff_op *o = &c->ops[j];

			/* o is its file's last word on this key */
			if ((j + 1 == c->nops || !same_key(o, &c->ops[j + 1]) || c->ops[j + 1].file != o->file) &&
			    o->set) {
				if (win)
					LOG_V(c->lg, 2, "features.d: %s \"%s\" from %s overrides \"%s\" from %s",
					      o->map == MAP_LABELS ? "label" : "feature",
					      esc(o->key, o->klen, e1, sizeof(e1)),
					      esc(c->names[o->file], strlen(c->names[o->file]), n1, sizeof(n1)),
					      esc(win->val, win->vlen, e2, sizeof(e2)),
					      esc(c->names[win->file], strlen(c->names[win->file]), n2, sizeof(n2)));
				win = o;
			}
		}
		if (!win)
			continue;
		if (b[win->map].len > 1)
			buf_put(&b[win->map], ",", 1);
		sb_string(&b[win->map], win->key, win->klen);
		buf_put(&b[win->map], ":", 1);
		sb_string(&b[win->map], win->val, win->vlen);
	}
	for (int m = 0; m < 2; m++) {
		buf_put(&b[m], "}", 1);
		if (!b[m].err)
			*out[m] = json_parse(b[m].p, b[m].len, "features.d", NULL);
		if (!*out[m])
			rc = -FB_ENOMEM;
		buf_free(&b[m]);
	}
	if (rc < 0) {
		json_free(*labels);
		json_free(*features);
		*labels = *features = NULL;
	}
	return rc;
}

static void ctx_init(struct ff_ctx *c, const struct featfile_time *now, const struct fb_log *lg)
{
	struct timespec ts;

	memset(c, 0, sizeof(*c));
	c->lg = lg;
	if (now) {
		c->now = *now;
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		c->now.sec = ts.tv_sec;
		c->now.nsec = ts.tv_nsec;
	}
}

int featfile_parse(const char *buf, size_t len, const char *name, const struct featfile_time *now,
		   const struct fb_log *lg, struct json **labels, struct json **features)
{
	struct ff_ctx c;
	const char *names[1] = { name };
	int rc;

	ctx_init(&c, now, lg);
	c.names = names;
	rc = ctx_file(&c, 0, (char *)buf, len, 0);
	if (rc == 0)
		rc = ctx_finish(&c, labels, features);
	else
		*labels = *features = NULL;
	ctx_free(&c);
	return rc;
}

/* Drops file "file"'s repeated keys (its last operation on a key is all
 * that counts) and moves the text its operations point to out of the file's
 * buffers, ops[from..] and bufs[kb..], into one exact-size copy, so a pass
 * holds what the files say, not the files: comments and repeats cost
 * nothing after their file is parsed. Returns 0, -FB_E2BIG (over
 * FEATFILE_MAX_KEPT: the file's operations are dropped) or -FB_ENOMEM. */
static int ctx_compact(struct ff_ctx *c, size_t from, size_t kb)
{
	size_t k = from, bytes = 0;
	char *store = NULL, *q;
	int rc = 0;

	if (c->nops > from)
		qsort(c->ops + from, c->nops - from, sizeof(*c->ops), op_cmp);
	for (size_t i = from; i < c->nops; i++)
		if (i + 1 == c->nops || !same_key(&c->ops[i], &c->ops[i + 1])) {
			c->ops[k++] = c->ops[i];
			bytes += c->ops[i].klen + c->ops[i].vlen;
		}
	c->nops = k;
	if (c->kept + bytes + (k - from) * sizeof(*c->ops) > FEATFILE_MAX_KEPT) {
		c->nops = from;
		rc = -FB_E2BIG;
	} else if (k > from) {
		if (!(store = malloc(bytes + 1))) {
			rc = -FB_ENOMEM;
		} else {
			q = store;
			for (size_t i = from; i < k; i++) {
				struct ff_op *o = &c->ops[i];

				memcpy(q, o->key, o->klen);
				o->key = q;
				q += o->klen;
				memcpy(q, o->val, o->vlen);
				o->val = q;
				q += o->vlen;
			}
			c->kept += bytes + (k - from) * sizeof(*c->ops);
		}
	}
	for (size_t i = kb; i < c->nbufs; i++)
		free(c->bufs[i]);
	c->nbufs = kb;
	if (store && ctx_keep(c, store) < 0) { /* cannot fail: a slot was just freed */
		free(store);
		rc = -FB_ENOMEM;
	}
	return rc;
}

int featfile_read_dir(const char *dir, const struct featfile_time *now, const struct fb_log *lg,
		      struct json **labels, struct json **features, struct fb_errinfo *ei)
{
	struct ff_ctx c;
	char **names = NULL, e1[300];
	size_t n = 0, total = 0;
	int rc = 0, dfd;

	*labels = *features = NULL;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fb_errinfo_set(ei, errno == ENOENT || errno == ENOTDIR ? FB_ENOENT : FB_EIO, errno,
				      dir, "opening the features directory");
	ctx_init(&c, now, lg);
	rc = hostfs_list(dfd, FEATFILE_MAX_FILES, &names, &n, &total);
	if (rc == -FB_EIO) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, dir, "listing the features directory");
		goto out;
	}
	if (rc < 0)
		goto out;
	if (total > n)
		LOG_W(lg, "features.d: %zu files in %s, reading the first %d by name (the cap); %zu skipped",
		      total, esc(dir, strlen(dir), e1, sizeof(e1)), FEATFILE_MAX_FILES, total - n);
	c.names = (const char **)names;
	for (size_t i = 0; i < n; i++) {
		const char *en = esc(names[i], strlen(names[i]), e1, sizeof(e1));
		size_t from = c.nops, kb = c.nbufs;
		char *buf;
		ssize_t len;
		struct stat st;
		int fd = hostfs_open_beneath(dfd, names[i], O_RDONLY | O_NONBLOCK, NULL, 0);

		if (fd == -FB_EOUTSIDE) {
			LOG_W(lg, "features.d: skipping %s/%s: %s", dir, en, fb_strerror(fd));
			continue;
		}
		if (fd == -FB_ENOENT) /* gone meanwhile, or a dangling link: nothing */
			continue;
		if (fd < 0) {
			LOG_E(lg, "features.d: skipping %s/%s: %s%s%s", dir, en, fb_strerror(fd),
			      fd == -FB_EIO ? ": " : "", fd == -FB_EIO ? strerror(errno) : "");
			continue;
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			continue; /* upstream: no lines, no error */
		}
		len = st.st_size > FEATFILE_MAX_SIZE ? -FB_E2BIG : sysfs_read_fd_alloc(fd, FEATFILE_MAX_SIZE + 1, &buf);
		close(fd);
		if (len == -FB_ENOMEM) {
			rc = -FB_ENOMEM;
			goto out;
		}
		if (len == -FB_E2BIG) {
			LOG_E(lg, "features.d: skipping %s/%s: file size limit exceeded: %lld bytes > %d bytes",
			      dir, en, (long long)st.st_size, FEATFILE_MAX_SIZE);
			continue;
		}
		if (len < 0) {
			LOG_E(lg, "features.d: skipping %s/%s: %s%s%s", dir, en, fb_strerror((int)len),
			      len == -FB_EIO ? ": " : "", len == -FB_EIO ? strerror(errno) : "");
			continue;
		}
		rc = ctx_file(&c, (uint32_t)i, buf, (size_t)len, 1);
		if (rc == 0)
			rc = ctx_compact(&c, from, kb);
		if (rc == -FB_E2BIG) {
			LOG_E(lg, "features.d: skipping %s/%s: the files before it already hold %zu bytes of "
			      "features, the most features.d may add (%d)", dir, en, c.kept, FEATFILE_MAX_KEPT);
			rc = 0;
		}
		if (rc < 0)
			goto out;
	}
	rc = ctx_finish(&c, labels, features);
out:
	ctx_free(&c);
	hostfs_names_free(names, n);
	close(dfd);
	if (rc == -FB_ENOMEM)
		fb_errinfo_set(ei, FB_ENOMEM, 0, dir, NULL);
	return rc;
}

/* ---- watching ------------------------------------------------------------ */

#define WATCH_MASK (IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_CREATE | IN_MOVED_FROM | IN_ATTRIB | \
		    IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

int featfile_watch_open(const char *dir, struct fb_errinfo *ei)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), e;

	if (fd < 0)
		return fb_errinfo_set(ei, FB_EIO, errno, dir, "inotify_init1");
	if (inotify_add_watch(fd, dir, WATCH_MASK) < 0) {
		e = errno;
		close(fd);
		return fb_errinfo_set(ei, e == ENOENT ? FB_ENOENT : e == ENOTDIR ? FB_EINVAL : FB_EIO, e,
				      dir, "watching the features directory");
	}
	return fd;
}

int featfile_watch_drain(int fd)
{
	_Alignas(struct inotify_event) char buf[4096];
	int res = 0;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			return -FB_EIO;
		if (n == 0)
			break;
		for (size_t off = 0; off + sizeof(struct inotify_event) <= (size_t)n;) {
			const struct inotify_event *ev = (const struct inotify_event *)(buf + off);

			if (ev->mask & IN_Q_OVERFLOW)
				res |= FEATFILE_WATCH_CHANGED;
			else if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT))
				res |= FEATFILE_WATCH_CHANGED | FEATFILE_WATCH_GONE;
			else if (ev->len == 0 || ev->name[0] != '.' || (ev->mask & IN_MOVED_TO))
				res |= FEATFILE_WATCH_CHANGED; /* no name: the directory's own attributes */
			off += sizeof(struct inotify_event) + ev->len;
		}
	}
	return res;
}
