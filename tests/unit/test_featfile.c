/* featfile: atomic write, directory creation, and failures that leave the old
 * file intact and no temporary behind; the features.d reader (directives,
 * expiry, override order, size cap, hidden files), the RFC 3339 parser and
 * the inotify watch. */
#include "t.h"

#include "../../core/featfile.h"
#include "../../core/json.h"
#include "../../core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int contents_are(const char *path, const char *want)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return strcmp(buf, want) == 0;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static char ro_path[512];

/* 0 when writing into a read-only directory fails as it should. */
static int write_ro(void *arg)
{
	struct fb_errinfo ei;
	int rc = featfile_write(ro_path, "z\n", 2, &ei);

	(void)arg;
	return !(rc == -FB_EIO && ei.sys == EACCES && strstr(ei.what, "/ro/.f.tmp"));
}

static int test_write(void)
{
	char tmpl[] = "/tmp/fb-featfile-XXXXXX", p[512], q[512], t[512];
	char *dir = mkdtemp(tmpl);
	struct fb_errinfo ei;
	struct stat st1, st2;
	int rc;

	t_suite = "featfile";
	snprintf(p, sizeof(p), "%s/a/b/features.d/devicetree-features", dir);
	snprintf(t, sizeof(t), "%s/a/b/features.d/.devicetree-features.tmp", dir);
	rc = featfile_write(p, "x=1\n", 4, &ei);
	T_INT("write creates missing directories", rc, 0);
	T_OK("contents written", contents_are(p, "x=1\n"), "wrong contents");
	T_OK("no temporary left", !exists(t), "%s exists", t);
	stat(p, &st1);
	T_INT("mode 0644", st1.st_mode & 07777, 0644);
	rc = featfile_write(p, "y=2\n", 4, &ei);
	stat(p, &st2);
	T_OK("overwrite replaces the file (rename)", rc == 0 && contents_are(p, "y=2\n") &&
		 st1.st_ino != st2.st_ino, "rc=%d", rc);
	T_INT("empty contents", featfile_write(p, "", 0, &ei), 0);
	T_OK("empty file written", contents_are(p, ""), "not empty");

	/* target is a directory: rename fails, nothing left behind */
	snprintf(q, sizeof(q), "%s/isdir", dir);
	mkdir(q, 0755);
	rc = featfile_write(q, "z\n", 2, &ei);
	T_OK("target that is a directory", rc == -FB_EIO && ei.sys == EISDIR && !strcmp(ei.what, q),
	     "rc=%d sys=%d what=%s", rc, ei.sys, ei.what);
	snprintf(t, sizeof(t), "%s/.isdir.tmp", dir);
	T_OK("temporary removed after failure", !exists(t), "%s exists", t);

	/* a parent that is a regular file */
	snprintf(q, sizeof(q), "%s/a/b/features.d/devicetree-features/x", dir);
	rc = featfile_write(q, "z\n", 2, &ei);
	T_OK("parent is a file", rc == -FB_EIO && ei.sys == ENOTDIR && strstr(ei.what, "devicetree-features"),
	     "rc=%d sys=%d what=%s", rc, ei.sys, ei.what);
	T_OK("existing file untouched", contents_are(p, ""), "changed");

	/* a planted symlink at the temporary name is not followed */
	snprintf(q, sizeof(q), "%s/victim", dir);
	featfile_write(q, "keep\n", 5, &ei);
	snprintf(p, sizeof(p), "%s/out", dir);
	snprintf(t, sizeof(t), "%s/.out.tmp", dir);
	symlink(q, t);
	rc = featfile_write(p, "new\n", 4, &ei);
	T_OK("a symlink planted at the temporary name is replaced, not followed",
	     rc == 0 && contents_are(q, "keep\n") && contents_are(p, "new\n"), "rc=%d", rc);
	T_OK("and nothing is left at the temporary name", !exists(t), "%s exists", t);

	/* a stale temporary with odd permissions does not leak its mode */
	{
		int sfd = open(t, O_WRONLY | O_CREAT, 0600);

		if (sfd >= 0)
			close(sfd);
		chmod(t, 0600);
		umask(077);
		rc = featfile_write(p, "m\n", 2, &ei);
		umask(022);
		stat(p, &st1);
		T_OK("mode is 0644 whatever the umask and stale temporary", rc == 0 &&
			 (st1.st_mode & 07777) == 0644, "rc=%d mode=%o", rc, st1.st_mode & 07777);
	}

	/* concurrent writers: every reader sees one whole version */
	{
		static const char *const ver[2] = { "aaaa=1\nbbbb=2\ncccc=3\n", "x=9\n" };
		int bad = 0;

		for (int round = 0; round < 50 && !bad; round++) {
			pid_t kids[2];

			for (int k = 0; k < 2; k++)
				if ((kids[k] = fork()) == 0)
					_exit(featfile_write(p, ver[k], strlen(ver[k]), NULL) == 0 ? 0 : 1);
			for (int k = 0; k < 2; k++) {
				int wst;

				waitpid(kids[k], &wst, 0);
				bad |= !WIFEXITED(wst) || WEXITSTATUS(wst) != 0;
			}
			bad |= !contents_are(p, ver[0]) && !contents_are(p, ver[1]);
		}
		T_OK("two concurrent writers: both succeed, file is one whole version", !bad, "mixed or failed");
	}

	T_INT("name that is not a file", featfile_write("/tmp/", "", 0, &ei), -FB_EINVAL);
	T_INT("relative path in the current directory", (chdir(dir), featfile_write("rel", "r\n", 2, &ei)), 0);
	T_OK("relative file written", contents_are("rel", "r\n"), "missing");

	/* permissions only bind an unprivileged user: drop to nobody when root */
	chmod(dir, 0755);
	snprintf(q, sizeof(q), "%s/ro", dir);
	mkdir(q, 0555);
	snprintf(ro_path, sizeof(ro_path), "%s/ro/f", dir);
	rc = t_unprivileged(write_ro, NULL);
	T_INT("read-only directory is an error naming the temporary file (EACCES)", rc, 0);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (chdir("/") != 0 || system(p) != 0)
		return 2;
	return 0;
}

/* ---- the reader ----------------------------------------------------------- */

/* log lines go to a temporary file the checks read back */
static struct fb_log lg;
static char logbuf[1 << 16];

static void log_reset(void)
{
	if (ftruncate(lg.fd, 0) != 0 || lseek(lg.fd, 0, SEEK_SET) != 0)
		abort();
	logbuf[0] = '\0';
}

static const char *log_text(void)
{
	ssize_t n = pread(lg.fd, logbuf, sizeof(logbuf) - 1, 0);

	logbuf[n > 0 ? n : 0] = '\0';
	return logbuf;
}

/* 1 when obj equals the JSON text want */
static int json_is(const struct json *obj, const char *want)
{
	struct json *w = json_parse(want, strlen(want), "want", NULL);
	int eq = w && obj && json_equal(obj, w);

	json_free(w);
	return eq;
}

static char *printed(const struct json *j)
{
	static char buf[4][512];
	static int k;
	char *s = j ? json_print(j, NULL) : NULL;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s", s ? s : "(null)");
	free(s);
	return buf[k];
}

#define PAST "2020-01-01T00:00:00Z"
#define FUTURE "2030-01-01T00:00:00Z"

static const struct {
	const char *name, *in;
	size_t len; /* 0: strlen(in) */
	const char *labels, *features;
	const char *log; /* a substring the log must hold, or NULL: the log is empty */
} parse_cases[] = {
	{ "key=value lines", "a=1\nb=2\n", 0, "{\"a\":\"1\",\"b\":\"2\"}", "{\"a\":\"1\",\"b\":\"2\"}", NULL },
	{ "a key alone means true", "flag\n", 0, "{\"flag\":\"true\"}", "{\"flag\":\"true\"}", NULL },
	{ "split at the first =", "k=a=b==\n", 0, "{\"k\":\"a=b==\"}", "{\"k\":\"a=b==\"}", NULL },
	{ "empty value", "k=\n", 0, "{\"k\":\"\"}", "{\"k\":\"\"}", NULL },
	{ "no final newline", "a=1", 0, "{\"a\":\"1\"}", "{\"a\":\"1\"}", NULL },
	{ "CRLF line ends", "a=1\r\nb\r\n", 0, "{\"a\":\"1\",\"b\":\"true\"}", "{\"a\":\"1\",\"b\":\"true\"}", NULL },
	{ "empty and blank lines", "\n  \n\t\n\na=1\n\n\n", 0, "{\"a\":\"1\"}", "{\"a\":\"1\"}", NULL },
	{ "lines trimmed at both ends", "  \ta=1 \t \n", 0, "{\"a\":\"1\"}", "{\"a\":\"1\"}", NULL },
	{ "Unicode spaces trimmed as Go's TrimSpace", "\xC2\xA0\xE3\x80\x80" "a=1\xE2\x80\x89\xC2\x85\n", 0,
	  "{\"a\":\"1\"}", "{\"a\":\"1\"}", NULL },
	{ "key and value are not trimmed inside", "a = 1\n", 0, "{}", "{\"a \":\" 1\"}",
	  "ignoring label with invalid name \"a \"" },
	{ "comments", "# a comment\n#a=1\n  # indented comment\nb=2\n", 0, "{\"b\":\"2\"}", "{\"b\":\"2\"}", NULL },
	{ "an empty file", "", 0, "{}", "{}", NULL },
	{ "the last value in a file wins", "a=1\na=2\n", 0, "{\"a\":\"2\"}", "{\"a\":\"2\"}", NULL },
	{ "+no-label: next line to features only", "# +no-label\na=1\nb=2\n", 0,
	  "{\"b\":\"2\"}", "{\"a\":\"1\",\"b\":\"2\"}", NULL },
	{ "+no-feature: next line to labels only", "# +no-feature\na=1\nb=2\n", 0,
	  "{\"a\":\"1\",\"b\":\"2\"}", "{\"b\":\"2\"}", NULL },
	{ "+no-label and +no-feature: neither", "# +no-label\n# +no-feature\na=1\nb\n", 0,
	  "{\"b\":\"true\"}", "{\"b\":\"true\"}", NULL },
	{ "+no-feature removes the key from this file's features", "a=1\n# +no-feature\na=2\n", 0,
	  "{\"a\":\"2\"}", "{}", NULL },
	{ "+no-label removes the key from this file's labels", "a=1\n# +no-label\na=2\n", 0,
	  "{}", "{\"a\":\"2\"}", NULL },
	{ "a directive may carry =value", "# +no-label=yes\na=1\n", 0, "{}", "{\"a\":\"1\"}", NULL },
	{ "directives survive comments and blank lines", "# +no-label\n\n# note\na=1\n", 0,
	  "{}", "{\"a\":\"1\"}", NULL },
	{ "#+no-label (no space) is a comment", "#+no-label\na=1\n", 0, "{\"a\":\"1\"}", "{\"a\":\"1\"}", NULL },
	{ "# + no-label is an unknown directive", "# + no-label\na=1\n", 0, "{\"a\":\"1\"}", "{\"a\":\"1\"}",
	  "unknown feature file directive \" no-label\"" },
	{ "unknown directive logged and ignored", "# +foo=bar\na\n", 0, "{\"a\":\"true\"}",
	  "{\"a\":\"true\"}", "test line 1: unknown feature file directive \"foo\"" },
	{ "a bare # + is an unknown directive", "# +\na\n", 0, "{\"a\":\"true\"}", "{\"a\":\"true\"}",
	  "unknown feature file directive \"\"" },
	{ "expiry in the past drops the lines after it", "a=1\n# +expiry-time=" PAST "\nb=2\n", 0,
	  "{\"a\":\"1\"}", "{\"a\":\"1\"}", NULL },
	{ "expiry in the future keeps them", "# +expiry-time=" FUTURE "\nb=2\n", 0,
	  "{\"b\":\"2\"}", "{\"b\":\"2\"}", NULL },
	{ "a later expiry directive replaces the earlier",
	  "# +expiry-time=" PAST "\nb=2\n# +expiry-time=2030-01-01T00:00:00+02:00\nc=3\n", 0,
	  "{\"c\":\"3\"}", "{\"c\":\"3\"}", NULL },
	{ "an invalid expiry is logged and the previous one kept",
	  "# +expiry-time=" PAST "\n# +expiry-time=tomorrow\na=1\n", 0, "{}", "{}",
	  "test line 2: failed to parse expiry-time \"tomorrow\"" },
	{ "an invalid first expiry leaves lines unexpired", "# +expiry-time=2030-13-01T00:00:00Z\na=1\n", 0,
	  "{\"a\":\"1\"}", "{\"a\":\"1\"}", "failed to parse expiry-time" },
	{ "expiry-time without = is an error", "# +expiry-time\na=1\n", 0, "{\"a\":\"1\"}", "{\"a\":\"1\"}",
	  "should be '# +expiry-time=value'" },
	{ "white space around the expiry value", "# +expiry-time=  " PAST "  \na=1\n", 0, "{}", "{}", NULL },
	{ "expiry exactly now is not expired", "# +expiry-time=2025-06-01T00:00:00.5Z\na=1\n", 0,
	  "{\"a\":\"1\"}", "{\"a\":\"1\"}", NULL },
	{ "expiry one nanosecond before now is", "# +expiry-time=2025-06-01T00:00:00.499999999Z\na=1\n", 0,
	  "{}", "{}", NULL },
	{ "expiry with an offset", "# +expiry-time=2025-06-01T01:00:00+02:00\na=1\n", 0, "{}", "{}", NULL },
	{ "an expired line leaves +no-label armed (as upstream)",
	  "# +no-label\n# +expiry-time=" PAST "\nx=1\n# +expiry-time=" FUTURE "\ny=1\nz=1\n", 0,
	  "{\"z\":\"1\"}", "{\"y\":\"1\",\"z\":\"1\"}", NULL },
	{ "invalid label keys are dropped from labels only",
	  "bad key=1\n-lead=2\nexample.com/ok=3\nExample.com/x=4\nok.name_1=5\n", 0,
	  "{\"example.com/ok\":\"3\",\"ok.name_1\":\"5\"}",
	  "{\"bad key\":\"1\",\"-lead\":\"2\",\"example.com/ok\":\"3\",\"Example.com/x\":\"4\",\"ok.name_1\":\"5\"}",
	  "test line 4: ignoring label with invalid name \"Example.com/x\"" },
	{ "a key of 64 characters is no label",
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1\n", 0, "{}",
	  "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\":\"1\"}",
	  "ignoring label with invalid name" },
	{ "an empty key is no feature either: the line is dropped", "=v\n", 0, "{}", "{}",
	  "test line 1: ignoring line with invalid feature name \"\" (0 bytes)" },
	{ "a key with a control character is no feature: dropped, logged escaped",
	  "a\033[2Jb=1\nc=2\n", 0, "{\"c\":\"2\"}", "{\"c\":\"2\"}",
	  "ignoring line with invalid feature name \"a\\x1b[2Jb\" (6 bytes)" },
	{ "a key past 317 bytes is no feature; the log shows its start only",
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	  "xxxxxxxxxxxxxxxxxx=1\n", 0, "{}", "{}",
	  "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\" (318 bytes)" },
	{ "label values are left to the worker's check", "a=not a valid value!\n", 0,
	  "{\"a\":\"not a valid value!\"}", "{\"a\":\"not a valid value!\"}", NULL },
	{ "a line with a NUL byte is dropped", "a\0b=1\nc=2\n", 11, "{\"c\":\"2\"}", "{\"c\":\"2\"}",
	  "test line 1: NUL byte, line ignored" },
	{ "invalid UTF-8 becomes U+FFFD", "k=\xff\xc3(\n", 0, "{\"k\":\"\\ufffd\\ufffd(\"}",
	  "{\"k\":\"\\ufffd\\ufffd(\"}", NULL },
	{ "quotes, backslashes and control bytes survive", "k=\"q\"\\\x01\x1f\n", 0,
	  "{\"k\":\"\\\"q\\\"\\\\\\u0001\\u001f\"}", "{\"k\":\"\\\"q\\\"\\\\\\u0001\\u001f\"}", NULL },
};

static void test_parse(const struct featfile_time *now)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const char *in = parse_cases[i].in;
		size_t len = parse_cases[i].len ? parse_cases[i].len : strlen(in);
		struct json *l = NULL, *f = NULL;
		char name[160];
		int rc;

		log_reset();
		rc = featfile_parse(in, len, "test", now, &lg, &l, &f);
		snprintf(name, sizeof(name), "parse: %s", parse_cases[i].name);
		T_OK(name, rc == 0 && json_is(l, parse_cases[i].labels) && json_is(f, parse_cases[i].features),
		     "rc=%d labels=%s features=%s", rc, printed(l), printed(f));
		log_text();
		snprintf(name, sizeof(name), "parse log: %s", parse_cases[i].name);
		if (parse_cases[i].log)
			T_OK(name, strstr(logbuf, parse_cases[i].log), "log: %s", logbuf);
		else
			T_OK(name, logbuf[0] == '\0', "unexpected log: %s", logbuf);
		json_free(l);
		json_free(f);
	}
}

static const struct {
	const char *in;
	int ok;
	long long sec;
	long nsec;
} time_cases[] = {
	{ "1970-01-01T00:00:00Z", 1, 0, 0 },
	{ "2030-01-01T00:00:00Z", 1, 1893456000, 0 },
	{ "2024-02-29T12:00:00Z", 1, 1709208000, 0 },
	{ "2000-02-29T00:00:00Z", 1, 951782400, 0 },
	{ "2024-06-01T12:00:00+02:00", 1, 1717236000, 0 },
	{ "2024-06-01T12:00:00-07:30", 1, 1717270200, 0 },
	{ "2024-06-01T10:00:00.5Z", 1, 1717236000, 500000000 },
	{ "2024-06-01T10:00:00,25Z", 1, 1717236000, 250000000 },
	{ "2024-06-01T10:00:00.000000001+00:00", 1, 1717236000, 1 },
	{ "2024-06-01T10:00:00.1234567899999Z", 1, 1717236000, 123456789 },
	{ "0000-01-01T00:00:00Z", 1, -62167219200LL, 0 },
	{ "9999-12-31T23:59:59Z", 1, 253402300799LL, 0 },
	{ "2023-02-29T00:00:00Z", 0, 0, 0 },
	{ "1900-02-29T00:00:00Z", 0, 0, 0 },
	{ "2024-04-31T00:00:00Z", 0, 0, 0 },
	{ "2024-00-01T00:00:00Z", 0, 0, 0 },
	{ "2024-06-01T24:00:00Z", 0, 0, 0 },
	{ "2024-06-01T23:60:00Z", 0, 0, 0 },
	{ "2024-06-01T23:59:60Z", 0, 0, 0 },
	{ "2024-06-01T12:00:00", 0, 0, 0 },
	{ "2024-06-01 12:00:00Z", 0, 0, 0 },
	{ "2024-06-01t12:00:00Z", 0, 0, 0 },
	{ "2024-06-01T12:00:00z", 0, 0, 0 },
	{ "2024-06-01T12:00:00.Z", 0, 0, 0 },
	{ "2024-06-01T12:00:00+24:00", 0, 0, 0 },
	{ "2024-06-01T12:00:00+02:60", 0, 0, 0 },
	{ "2024-06-01T12:00:00+0200", 0, 0, 0 },
	{ "2024-06-01T12:00:00Z ", 0, 0, 0 },
	{ "2024-6-01T12:00:00Z", 0, 0, 0 },
	{ "+2024-06-01T12:00:00Z", 0, 0, 0 },
	{ "", 0, 0, 0 },
};

static void test_rfc3339(void)
{
	for (size_t i = 0; i < sizeof(time_cases) / sizeof(time_cases[0]); i++) {
		struct featfile_time t = { -1, -1 };
		int rc = featfile_parse_rfc3339(time_cases[i].in, strlen(time_cases[i].in), &t);
		char name[128];

		snprintf(name, sizeof(name), "rfc3339: \"%s\" %s", time_cases[i].in,
			 time_cases[i].ok ? "parses" : "is refused");
		if (time_cases[i].ok)
			T_OK(name, rc == 0 && t.sec == time_cases[i].sec && t.nsec == time_cases[i].nsec,
			     "rc=%d sec=%lld nsec=%ld", rc, t.sec, t.nsec);
		else
			T_INT(name, rc, -FB_EINVAL);
	}
}

static void put(const char *dir, const char *name, const char *text, size_t len)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || close(fd) != 0)
		abort();
}

static void test_dir(const struct featfile_time *now)
{
	char tmpl[] = "/tmp/fb-featfile-d-XXXXXX", p[256], q[512], r[512];
	char *top = mkdtemp(tmpl), *big = malloc(FEATFILE_MAX_SIZE + 2);
	struct json *l = NULL, *f = NULL;
	struct fb_errinfo ei;
	int rc;

	snprintf(p, sizeof(p), "%s/features.d", top);
	mkdir(p, 0755);
	put(p, "10-a", "x=1\ny=1\n", 8);
	put(p, "20-b", "x=2\n# +no-feature\ny=3\n", 22);
	put(p, "9-z", "x=9\n", 4);           /* sorts after 20-b: names compare bytewise */
	put(p, ".hidden", "h=1\n", 4);
	put(p, ".x.tmp", "t=1\n", 4);
	put(top, "outside", "s=1\n", 4);
	snprintf(q, sizeof(q), "%s/30-link", p);
	snprintf(r, sizeof(r), "%s/outside", top);
	symlink(r, q);
	snprintf(q, sizeof(q), "%s/40-broken", p);
	symlink("/nonexistent/nowhere", q);
	snprintf(q, sizeof(q), "%s/50-fifo", p);
	mkfifo(q, 0644);
	/* a ConfigMap volume's links: relative, inside */
	snprintf(q, sizeof(q), "%s/..2026_01_01", p);
	mkdir(q, 0755);
	put(q, "cm", "cm=1\n", 5);
	snprintf(q, sizeof(q), "%s/..data", p);
	symlink("..2026_01_01", q);
	snprintf(q, sizeof(q), "%s/55-cm", p);
	symlink("..data/cm", q);
	snprintf(q, sizeof(q), "%s/60-subdir", p);
	mkdir(q, 0755);
	put(q, "inner", "i=1\n", 4);
	/* exactly the cap: read; one byte more: skipped, naming the file */
	memset(big, '#', FEATFILE_MAX_SIZE + 1);
	memcpy(big, "e=1\n", 4);
	big[FEATFILE_MAX_SIZE - 1] = '\n';
	put(p, "70-exact", big, FEATFILE_MAX_SIZE);
	memcpy(big, "o=1\n", 4);
	big[FEATFILE_MAX_SIZE] = '\n';
	put(p, "80-over", big, FEATFILE_MAX_SIZE + 1);

	log_reset();
	rc = featfile_read_dir(p, now, &lg, &l, &f, &ei);
	log_text();
	T_OK("dir: sorted by name, later files override, hidden and non-regular entries skipped",
	     rc == 0 && json_is(l, "{\"x\":\"9\",\"y\":\"3\",\"e\":\"1\",\"cm\":\"1\"}") &&
	     json_is(f, "{\"x\":\"9\",\"y\":\"1\",\"e\":\"1\",\"cm\":\"1\"}"),
	     "rc=%d labels=%s features=%s", rc, printed(l), printed(f));
	T_OK("dir: a symlink out of the directory is skipped with a warning naming it",
	     strstr(logbuf, "30-link: symlink leads outside the directory"), "log: %s", logbuf);
	T_OK("dir: +no-feature in a later file does not remove an earlier file's feature",
	     json_is(json_get(f, "y"), "\"1\""), "features=%s", printed(f));
	T_OK("dir: an oversize file is skipped with an error naming it",
	     strstr(logbuf, "80-over: file size limit exceeded: 65537 bytes > 65536 bytes") &&
	     strstr(logbuf, "\nE") && strstr(strstr(logbuf, "\nE"), "80-over"), "log: %s", logbuf);
	T_OK("dir: a broken symlink is logged and skipped", strstr(logbuf, "40-broken"), "log: %s", logbuf);
	T_OK("dir: nothing else logged (FIFO, subdirectory and hidden files are silent)",
	     !strstr(logbuf, "fifo") && !strstr(logbuf, "subdir") && !strstr(logbuf, "hidden") &&
	     !strstr(logbuf, "70-exact"), "log: %s", logbuf);
	json_free(l);
	json_free(f);

	/* overrides are logged at -v 2 */
	lg.v = 2;
	log_reset();
	rc = featfile_read_dir(p, now, &lg, &l, &f, &ei);
	log_text();
	T_OK("dir: an override is logged at -v 2", rc == 0 &&
	     strstr(logbuf, "label \"x\" from 20-b overrides \"1\" from 10-a"), "log: %s", logbuf);
	lg.v = 0;
	json_free(l);
	json_free(f);

	l = f = (struct json *)1;
	snprintf(q, sizeof(q), "%s/missing", top);
	rc = featfile_read_dir(q, now, &lg, &l, &f, &ei);
	T_OK("dir: a missing directory is ENOENT with no objects", rc == -FB_ENOENT && !l && !f,
	     "rc=%d", rc);
	snprintf(q, sizeof(q), "%s/outside", top);
	rc = featfile_read_dir(q, now, &lg, &l, &f, &ei);
	T_INT("dir: a file instead of a directory is ENOENT", rc, -FB_ENOENT);

	/* the file-count cap: the first FEATFILE_MAX_FILES by name, one warning */
	snprintf(q, sizeof(q), "%s/many", top);
	mkdir(q, 0755);
	for (int i = 0; i < FEATFILE_MAX_FILES + 6; i++) {
		char n[16], t[32];

		snprintf(n, sizeof(n), "%05d", i);
		put(q, n, t, (size_t)snprintf(t, sizeof(t), "k%d=1\n", i));
	}
	log_reset();
	rc = featfile_read_dir(q, now, &lg, &l, &f, &ei);
	log_text();
	T_OK("dir: past the file-count cap, the first files by name are read",
	     rc == 0 && json_count(l) == FEATFILE_MAX_FILES && json_get(l, "k0") && json_get(l, "k1023") &&
	     !json_get(l, "k1024"), "rc=%d n=%zu", rc, json_count(l));
	T_OK("dir: and one warning gives the count", logbuf[0] == 'W' && strstr(logbuf, "1030 files in") &&
	     strstr(logbuf, "reading the first 1024 by name") &&
	     strchr(logbuf, '\n') == logbuf + strlen(logbuf) - 1,
	     "log: %s", logbuf);
	json_free(l);
	json_free(f);

	/* what the files keep together is capped: files of distinct keys fill it */
	snprintf(q, sizeof(q), "%s/full", top);
	mkdir(q, 0755);
	for (int i = 0; i < 6; i++) { /* about 425 KB kept each */
		char n[16];
		size_t len = 0;

		while (len + 16 < FEATFILE_MAX_SIZE)
			len += (size_t)snprintf(big + len, 17, "f%d.k%07zu=1\n", i, len);
		snprintf(n, sizeof(n), "%d", i);
		put(q, n, big, len);
	}
	log_reset();
	rc = featfile_read_dir(q, now, &lg, &l, &f, &ei);
	log_text();
	T_OK("dir: a file past FEATFILE_MAX_KEPT is skipped with an error naming it",
	     rc == 0 && json_count(l) > 0 && strstr(logbuf, "/full/4: the files before it already hold") &&
	     !strstr(logbuf, "/full/0:"), "rc=%d log: %.300s", rc, logbuf);
	json_free(l);
	json_free(f);

	/* an empty directory */
	snprintf(q, sizeof(q), "%s/empty", top);
	mkdir(q, 0755);
	rc = featfile_read_dir(q, NULL, &lg, &l, &f, &ei);
	T_OK("dir: an empty directory gives empty objects", rc == 0 && json_is(l, "{}") && json_is(f, "{}"),
	     "rc=%d", rc);
	json_free(l);
	json_free(f);

	free(big);
	snprintf(q, sizeof(q), "rm -rf '%s'", top);
	if (system(q) != 0)
		abort();
}

static void test_watch(void)
{
	char tmpl[] = "/tmp/fb-featfile-w-XXXXXX", p[256], q[512], r[512];
	char *top = mkdtemp(tmpl);
	struct fb_errinfo ei;
	int fd;

	snprintf(p, sizeof(p), "%s/features.d", top);
	T_INT("watch: a missing directory is ENOENT (the caller tries again later)",
	      featfile_watch_open(p, &ei), -FB_ENOENT);
	put(top, "file", "", 0);
	snprintf(q, sizeof(q), "%s/file", top);
	T_INT("watch: a file is EINVAL", featfile_watch_open(q, &ei), -FB_EINVAL);
	mkdir(p, 0755);
	fd = featfile_watch_open(p, &ei);
	T_OK("watch: open", fd >= 0, "rc=%d", fd);
	T_INT("watch: nothing pending at first", featfile_watch_drain(fd), 0);

	snprintf(q, sizeof(q), "%s/feat", p);
	featfile_write(q, "a=1\n", 4, NULL);
	T_INT("watch: an atomic write (temporary renamed over) is a change", featfile_watch_drain(fd),
	      FEATFILE_WATCH_CHANGED);
	T_INT("watch: drained", featfile_watch_drain(fd), 0);

	put(p, ".scratch.tmp", "x", 1);
	snprintf(q, sizeof(q), "%s/.scratch.tmp", p);
	chmod(q, 0600);
	unlink(q);
	T_INT("watch: a hidden file created, written, changed and deleted alone is no change",
	      featfile_watch_drain(fd), 0);

	put(p, ".y", "y=1\n", 4);
	featfile_watch_drain(fd);
	snprintf(q, sizeof(q), "%s/.y", p);
	snprintf(r, sizeof(r), "%s/y", p);
	rename(q, r);
	T_INT("watch: a hidden file renamed to a visible name is a change", featfile_watch_drain(fd),
	      FEATFILE_WATCH_CHANGED);
	rename(r, q);
	T_INT("watch: a visible file renamed to a hidden name is a change", featfile_watch_drain(fd),
	      FEATFILE_WATCH_CHANGED);

	snprintf(q, sizeof(q), "%s/..data_tmp", p);
	snprintf(r, sizeof(r), "%s/..data", p);
	symlink("..2026_01_01", q);
	T_INT("watch: a hidden symlink created is no change", featfile_watch_drain(fd), 0);
	rename(q, r);
	T_INT("watch: a hidden symlink swapped in by rename (ConfigMap ..data) is a change",
	      featfile_watch_drain(fd), FEATFILE_WATCH_CHANGED);

	put(p, "inplace", "a=2\n", 4);
	T_INT("watch: a file written in place is a change", featfile_watch_drain(fd), FEATFILE_WATCH_CHANGED);
	snprintf(q, sizeof(q), "%s/inplace", p);
	chmod(q, 0600);
	T_INT("watch: chmod of a file is a change", featfile_watch_drain(fd), FEATFILE_WATCH_CHANGED);
	unlink(q);
	T_INT("watch: deleting a file is a change", featfile_watch_drain(fd), FEATFILE_WATCH_CHANGED);
	chmod(p, 0700);
	T_INT("watch: chmod of the directory is a change", featfile_watch_drain(fd), FEATFILE_WATCH_CHANGED);

	snprintf(q, sizeof(q), "rm -rf '%s'", p);
	if (system(q) != 0)
		abort();
	T_INT("watch: removing the directory is a change and GONE", featfile_watch_drain(fd),
	      FEATFILE_WATCH_CHANGED | FEATFILE_WATCH_GONE);
	close(fd);

	mkdir(p, 0755);
	fd = featfile_watch_open(p, &ei);
	snprintf(q, sizeof(q), "%s/moved", top);
	rename(p, q);
	T_OK("watch: moving the directory away is GONE", featfile_watch_drain(fd) & FEATFILE_WATCH_GONE,
	     "not gone");
	close(fd);
	snprintf(q, sizeof(q), "rm -rf '%s'", top);
	if (system(q) != 0)
		abort();
}

int main(void)
{
	char logtmpl[] = "/tmp/fb-featfile-log-XXXXXX";
	struct featfile_time now;

	t_suite = "featfile";
	if (test_write() != 0)
		return 2;
	log_init(&lg);
	lg.fd = mkstemp(logtmpl);
	if (lg.fd < 0)
		return 2;
	unlink(logtmpl);
	featfile_parse_rfc3339("2025-06-01T00:00:00Z", 20, &now);
	now.nsec = 500000000;
	test_rfc3339();
	test_parse(&now);
	test_dir(&now);
	test_watch();
	close(lg.fd);
	return t_done();
}
