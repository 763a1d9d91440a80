/* dt: the blob and directory sources give the same nodes and properties;
 * bad blobs and hostile directory trees give clear errors, never a crash.
 * Needs FB_TEST_DT: a directory holding rpi4.dtb and rpi4/ (its
 * /proc/device-tree form), made by tests/run from tests/fixtures/dt. */
#include "t.h"

#include "../../core/dt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct seen {
	char lines[256][300]; /* "path depth compatible-hex" */
	int n;
	int stop_at;          /* stop the walk after this many nodes (0: never) */
	int prop_err;
};

static int record(void *ctx, struct dt *dt, const struct dt_node *node)
{
	struct seen *s = ctx;
	const void *val;
	struct fb_errinfo ei;
	ssize_t len = dt_getprop(dt, node, "compatible", &val, &ei);
	int n;

	if (s->n == 256)
		return -1;
	if (len < 0 && len != -FB_ENOENT)
		s->prop_err = (int)len;
	n = snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s %d %s:", node->path, node->depth,
		     node->name);
	for (ssize_t i = 0; i < len && n < 290; i++)
		n += snprintf(s->lines[s->n] + n, sizeof(s->lines[0]) - (size_t)n, "%02x",
			      ((const unsigned char *)val)[i]);
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 42 : 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);

	*len = f ? fread(buf, 1, 1 << 20, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

static void spit(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(buf, 1, len, f) != len)
		exit(2);
	fclose(f);
}

static void be32(char *p, unsigned v)
{
	p[0] = (char)(v >> 24), p[1] = (char)(v >> 16), p[2] = (char)(v >> 8), p[3] = (char)v;
}

static char locked_tree[600];

/* 0 when walking a tree with an unreadable node fails naming that node. */
static int walk_locked(void *arg)
{
	static struct seen s;
	struct fb_errinfo ei;
	struct dt *dt;
	int rc;

	(void)arg;
	if (dt_open_dir(&dt, locked_tree, &ei) < 0)
		return 3;
	rc = dt_walk(dt, record, &s, &ei);
	dt_free(dt);
	return !(rc == -FB_EIO && ei.sys == EACCES && strstr(ei.what, "/locked"));
}

int main(void)
{
	const char *fx = getenv("FB_TEST_DT");
	char path[512], tmpl[] = "/tmp/fb-dt-XXXXXX", name[200];
	static struct seen a, b;
	struct fb_errinfo ei;
	struct dt *dt;
	char *blob, *bad, *tmp;
	size_t len;
	int rc;

	t_suite = "dt";
	if (!fx) {
		printf("SKIP: dt: all (FB_TEST_DT not set: run through tests/run)\n");
		return 0;
	}
	tmp = mkdtemp(tmpl);
	snprintf(path, sizeof(path), "%s/rpi4.dtb", fx);
	rc = dt_open_blob(&dt, path, &ei);
	T_INT("open rpi4.dtb", rc, 0);
	if (rc < 0)
		return t_done();
	T_INT("walk blob", dt_walk(dt, record, &a, &ei), 0);
	T_STR("root first", a.lines[0][0] == '/' && a.lines[0][1] == ' ' ? "root" : a.lines[0], "root");
	dt_free(dt);

	snprintf(path, sizeof(path), "%s/rpi4", fx);
	T_INT("open rpi4 directory", dt_open_dir(&dt, path, &ei), 0);
	T_INT("walk directory", dt_walk(dt, record, &b, &ei), 0);
	dt_free(dt);
	qsort(a.lines, (size_t)a.n, sizeof(a.lines[0]), cmp);
	qsort(b.lines, (size_t)b.n, sizeof(b.lines[0]), cmp);
	T_OK("blob and directory have the same nodes", a.n == b.n && a.n > 10, "%d vs %d", a.n, b.n);
	for (int i = 0; i < a.n && i < b.n; i++)
		if (strcmp(a.lines[i], b.lines[i])) {
			T_STR("blob and directory agree", b.lines[i], a.lines[i]);
			break;
		}
	T_OK("cpu@0 at depth 2 with its compatible", bsearch("/cpus/cpu@0 2 cpu@0:61726d2c636f727465782d61373200",
		a.lines, (size_t)a.n, sizeof(a.lines[0]), cmp) != NULL, "not found");

	/* the visitor's return value stops the walk and comes back */
	memset(&a, 0, sizeof(a));
	a.stop_at = 3;
	snprintf(path, sizeof(path), "%s/rpi4.dtb", fx);
	dt_open_blob(&dt, path, &ei);
	T_INT("visitor stops the walk", dt_walk(dt, record, &a, &ei), 42);
	T_INT("visitor saw three nodes", a.n, 3);
	dt_free(dt);

	/* in-memory blob, then damaged copies of it */
	blob = slurp(path, &len);
	T_INT("open blob from memory", dt_open_blob_mem(&dt, blob, len, "mem", &ei), 0);
	dt_free(dt);
	bad = malloc(len);
	{
		static const struct {
			const char *what;
			size_t cut;       /* truncate to this length (0: keep) */
			int word;         /* header word to overwrite (-1: none) */
			unsigned val;
			const char *detail;
		} cases[] = {
			{ "truncated blob", 200, -1, 0, "FDT_ERR_TRUNCATED" },
			{ "shorter than a header", 20, -1, 0, "shorter than its header" },
			{ "empty file", 1, -1, 0, "shorter than its header" },
			{ "wrong magic", 0, 0, 0xdeadbeef, "FDT_ERR_BADMAGIC" },
			{ "struct offset past the end", 0, 2, 0x7fffff00, "FDT_ERR_" },
			{ "strings offset past the end", 0, 3, 0x7fffff00, "FDT_ERR_" },
			{ "totalsize larger than the file", 0, 1, 0x00ffffff, "FDT_ERR_TRUNCATED" },
			{ "unsupported version", 0, 5, 1, "FDT_ERR_BADVERSION" },
			{ "struct size too large", 0, 9, 0x7fffff00, "FDT_ERR_" },
			{ "misaligned reservation block", 0, 4, 44, "misaligned block offset" },
			{ "misaligned structure block", 0, 2, 57, "misaligned block offset" },
		};
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			size_t blen = cases[i].cut ? cases[i].cut - (cases[i].cut == 1) : len;
			char f[600];

			memcpy(bad, blob, len);
			if (cases[i].word >= 0)
				be32(bad + 4 * cases[i].word, cases[i].val);
			snprintf(f, sizeof(f), "%s/bad.dtb", tmp);
			spit(f, bad, blen);
			fb_errinfo_init(&ei);
			rc = dt_open_blob(&dt, f, &ei);
			snprintf(name, sizeof(name), "%s is refused", cases[i].what);
			T_OK(name, rc == -FB_EBADDT && dt == NULL && strstr(ei.detail, cases[i].detail) &&
				   strcmp(ei.what, f) == 0,
			     "rc=%d what=%s detail=%s", rc, ei.what, ei.detail);
		}
	}
	T_INT("missing blob file", dt_open_blob(&dt, "/nonexistent/x.dtb", &ei), -FB_ENOENT);
	T_INT("directory as blob", dt_open_blob(&dt, tmp, &ei), -FB_EINVAL);
	T_INT("missing directory", dt_open_dir(&dt, "/nonexistent/dt", &ei), -FB_ENOENT);
	snprintf(path, sizeof(path), "%s/rpi4.dtb", fx);
	T_INT("regular file as directory", dt_open_dir(&dt, path, &ei), -FB_ENOENT);

	/* hostile directory trees */
	{
		char d[600], p[700];
		int depth;

		snprintf(d, sizeof(d), "%s/tree", tmp);
		mkdir(d, 0755);
		snprintf(p, sizeof(p), "%s/compatible", d);
		mkfifo(p, 0644);
		memset(&a, 0, sizeof(a));
		dt_open_dir(&dt, d, &ei);
		T_INT("FIFO property walks", dt_walk(dt, record, &a, &ei), 0);
		T_INT("FIFO property is refused, not read", a.prop_err, -FB_EINVAL);
		dt_free(dt);
		unlink(p);
		mkdir(p, 0755); /* a child node named like the property */
		memset(&a, 0, sizeof(a));
		dt_open_dir(&dt, d, &ei);
		dt_walk(dt, record, &a, &ei);
		T_INT("directory where a property is expected", a.prop_err, -FB_EINVAL);
		T_INT("and it is walked as a node", a.n, 2);
		dt_free(dt);
		rmdir(p);
		snprintf(p, sizeof(p), "%s/link", d);
		symlink("/", p); /* must not be followed into / */
		memset(&a, 0, sizeof(a));
		dt_open_dir(&dt, d, &ei);
		dt_walk(dt, record, &a, &ei);
		T_INT("symlinked directory is not followed", a.n, 1);
		dt_free(dt);
		unlink(p);
		for (depth = 0, p[0] = '\0', strcpy(p, d); depth < DT_MAX_DEPTH + 2; depth++) {
			strcat(p, "/n");
			mkdir(p, 0755);
		}
		memset(&a, 0, sizeof(a));
		dt_open_dir(&dt, d, &ei);
		rc = dt_walk(dt, record, &a, &ei);
		T_OK("too deep a tree is refused", rc == -FB_EDEPTH && strstr(ei.what, "/n/n/n"),
		     "rc=%d what=%s", rc, ei.what);
		dt_free(dt);
		snprintf(p, sizeof(p), "rm -rf '%s/n'", d);
		if (system(p) != 0)
			return 2;
		chmod(tmp, 0755);
		snprintf(p, sizeof(p), "%s/locked", d);
		mkdir(p, 0);
		snprintf(locked_tree, sizeof(locked_tree), "%s", d);
		T_INT("unreadable node directory is an error naming it",
		      t_unprivileged(walk_locked, NULL), 0);
		rmdir(p);
	}
	free(bad);
	free(blob);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	if (system(path) != 0)
		return 2;
	return t_done();
}
