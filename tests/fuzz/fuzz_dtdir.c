/* fuzz_dtdir: a /proc/device-tree style directory built from untrusted
 * bytes, through what dt-labeller does with one (dt_open_dir, dt_walk, the
 * "compatible" lookup and the label-name sanitiser), with property checks:
 * - the walk ends in 0 or a documented error (EIO, EDEPTH, E2BIG);
 * - when it ends in 0 it visited exactly the tree's real directories (not
 *   through symlinks), each once, parents before children, with the right
 *   depth and name;
 * - a "compatible" that is a regular file reads back at its size (up to
 *   64 KiB inclusive) or as E2BIG past that; anything else is an error;
 * - a second walk visits the same nodes in the same order;
 * - no file descriptor is left open.
 *
 * The input is a list of records, each building one entry under a fresh
 * temporary directory ($TMPDIR, else /dev/shm, else /tmp; removed after
 * the input):
 *   op:1 pathlen:1 path[pathlen] then, for files and symlinks,
 *   datalen:2 (little-endian) data[datalen]
 * op & 3: 0 directory, 1 file holding data, 2 symlink to data, 3 a file of
 * 65536 + (op >> 2 & 1) bytes (the property size bound and one past it).
 * Path components are separated by '/'; empty, "." and ".." components are
 * dropped, NUL bytes become '_', missing parents are made. At most 64
 * records; an entry that cannot be made (its name is taken) is skipped.
 *
 * Built two ways, as the other targets: with libFuzzer (make fuzz), and as a
 * corpus replay under ASan+UBSan (tests/fuzz/corpus/dtdir, make test). */
#include "../../core/dt.h"
#include "../../core/labels.h"
#include "dtnames.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECORDS 64

static char root[128];
static size_t root_len;
static int root_fd = -1;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0 && remove(path) != 0)
		abort(); /* a stale tree would make the next input's checks lie */
	return 0;
}

static void empty_root(void)
{
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh root for every input, removed after it: libFuzzer may end the
 * process without running atexit handlers (a time limit, a merge child),
 * and a root kept between inputs would then be left behind. */
static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	/* tmpfs when there is one: the tree is rebuilt for every input */
	if (!tmp || !*tmp || strlen(tmp) > 64)
		tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(root, sizeof(root), "%s/fuzz_dtdir.XXXXXX", tmp);
	if (!mkdtemp(root))
		abort();
	root_len = strlen(root);
	root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		abort();
}

static void teardown(void)
{
	empty_root();
	close(root_fd);
	root_fd = -1;
	if (rmdir(root) != 0)
		abort();
}

/* Makes the parents of path (a '/'-separated list of clean components) and
 * returns an fd of the last one's parent directory, or -1. *leaf is set. */
static int open_parent(char *path, char **leaf)
{
	int fd = dup(root_fd);
	char *p = path, *slash;

	while (fd >= 0 && (slash = strchr(p, '/'))) {
		int nfd;

		*slash = '\0';
		mkdirat(fd, p, 0755);
		nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
		p = slash + 1;
	}
	*leaf = p;
	return fd;
}

/* Cleans raw[0..n) into out: components joined by '/', none empty, "." or
 * "..", NUL bytes as '_'. Returns the length (0: nothing left). */
static size_t clean_path(const uint8_t *raw, size_t n, char *out)
{
	size_t o = 0, i = 0;

	while (i < n) {
		size_t start = o, j = i;

		while (j < n && raw[j] != '/')
			j++;
		if (o)
			out[o++] = '/';
		for (size_t k = i; k < j; k++)
			out[o++] = raw[k] ? (char)raw[k] : '_';
		if (o - start - (start ? 1 : 0) == 0 ||
		    (o - start - (start ? 1 : 0) == 1 && out[o - 1] == '.') ||
		    (o - start - (start ? 1 : 0) == 2 && out[o - 1] == '.' && out[o - 2] == '.'))
			o = start; /* drop it */
		i = j + 1;
	}
	out[o] = '\0';
	return o;
}

static void build(const uint8_t *data, size_t size)
{
	static char big[65537];
	size_t i = 0;

	if (!big[0])
		memset(big, 'a', sizeof(big));
	for (int rec = 0; rec < MAX_RECORDS && i + 2 <= size; rec++) {
		unsigned op = data[i], plen = data[i + 1];
		const uint8_t *d = NULL;
		size_t dlen = 0;
		char path[512], target[4096], *leaf;
		int fd, ffd;

		i += 2;
		if (plen > size - i)
			plen = (unsigned)(size - i);
		if (!clean_path(data + i, plen, path)) {
			i += plen;
			continue;
		}
		i += plen;
		if ((op & 3) == 1 || (op & 3) == 2) {
			if (i + 2 <= size) {
				dlen = (size_t)data[i] | (size_t)data[i + 1] << 8;
				i += 2;
			}
			if (dlen > size - i)
				dlen = size - i;
			d = data + i;
			i += dlen;
		}
		if ((fd = open_parent(path, &leaf)) < 0)
			continue;
		switch (op & 3) {
		case 0:
			mkdirat(fd, leaf, 0755);
			break;
		case 1:
		case 3:
			ffd = openat(fd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (ffd >= 0) {
				const void *src = (op & 3) == 1 ? (const void *)d : big;
				size_t n = (op & 3) == 1 ? dlen : 65536 + (op >> 2 & 1);

				if (write(ffd, src, n) != (ssize_t)n)
					abort();
				close(ffd);
			}
			break;
		case 2:
			if (dlen >= sizeof(target))
				dlen = sizeof(target) - 1;
			for (size_t k = 0; k < dlen; k++)
				target[k] = d[k] ? (char)d[k] : '_';
			target[dlen] = '\0';
			if (dlen)
				symlinkat(target, fd, leaf);
			break;
		}
		close(fd);
	}
}

/* The tree's real directories, as the walk should see them. */
static struct {
	size_t n;
	uint64_t sum;
	int too_deep;
} ref;

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int ref_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	if (flag != FTW_D)
		return 0;
	ref.n++;
	ref.sum += fnv(path[root_len] ? path + root_len : "/", 0xcbf29ce484222325ull);
	if (ftw->level > DT_MAX_DEPTH)
		ref.too_deep = 1;
	return 0;
}

struct seen {
	size_t n;
	uint64_t sum, order; /* order: a hash of the paths in visiting order */
	int bad_prop;
};

static void check_compatible(struct dt *dt, const struct dt_node *node)
{
	struct fb_errinfo ei;
	const void *val;
	struct stat st;
	char rel[PATH_MAX];
	ssize_t len;
	int regular;

	fb_errinfo_init(&ei);
	len = dt_getprop(dt, node, "compatible", &val, &ei);
	snprintf(rel, sizeof(rel), "%s%scompatible", node->depth ? node->path + 1 : "", node->depth ? "/" : "");
	regular = fstatat(root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	if (regular ? (st.st_size <= DT_PROP_MAX ? len != st.st_size : len != -FB_E2BIG)
		    : len >= 0)
		abort();
	if (len < 0 && len != -FB_ENOENT && len != -FB_EIO && len != -FB_EINVAL && len != -FB_E2BIG)
		abort();
	if (len <= 0)
		return;
	check_compatible_names(val, (size_t)len);
}

static int visit(void *ctx, struct dt *dt, const struct dt_node *node)
{
	struct seen *s = ctx;
	const char *slash = strrchr(node->path, '/');
	int depth = 0;

	/* path, name and depth agree: "/" is the root, else "/a/b" at depth 2
	 * named "b" */
	for (const char *p = node->path; *p; p++)
		depth += *p == '/';
	if (node->depth == 0 ? strcmp(node->path, "/") || node->name[0]
			     : depth != node->depth || !slash || strcmp(slash + 1, node->name))
		abort();
	s->n++;
	s->sum += fnv(node->path, 0xcbf29ce484222325ull);
	s->order = fnv(node->path, s->order * 31 + 7);
	check_compatible(dt, node);
	return 0;
}

static int walk(struct seen *s)
{
	struct fb_errinfo ei;
	struct dt *dt;
	int rc;

	memset(s, 0, sizeof(*s));
	fb_errinfo_init(&ei);
	if (dt_open_dir(&dt, root, &ei) != 0)
		abort();
	rc = dt_walk(dt, visit, s, &ei);
	dt_free(dt);
	if (rc != 0 && rc != -FB_EIO && rc != -FB_EDEPTH && rc != -FB_E2BIG)
		abort();
	return rc;
}

/* Open descriptors below 1024: the lowest free one would miss a leak
 * above the root's, which dt_free closes. */
static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen a, b;
	int fd0, rc;

	setup();
	build(data, size);
	memset(&ref, 0, sizeof(ref));
	nftw(root, ref_entry, 16, FTW_PHYS);
	fd0 = open_fds();
	rc = walk(&a);
	if (rc == 0 && (ref.too_deep || a.n != ref.n || a.sum != ref.sum))
		abort(); /* every real directory once, none through a symlink */
	if (walk(&b) != rc || a.n != b.n || a.order != b.order)
		abort(); /* the same tree walks the same way */
	if (open_fds() != fd0)
		abort(); /* a descriptor leaked */
	teardown();
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
