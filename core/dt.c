#include "dt.h"

#include "attr.h"
#include "sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libfdt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct dt {
	char *blob;      /* owned; NULL for a directory source */
	size_t blob_len;
	int root_fd;     /* directory source: the root, else -1 */
	char *propbuf;   /* directory source: DT_PROP_MAX bytes and a NUL for dt_getprop */
	char source[PATH_MAX + 16];
	char path[PATH_MAX]; /* the node path being visited */
};

static struct dt *dt_new(void)
{
	struct dt *dt = calloc(1, sizeof(*dt));

	if (dt)
		dt->root_fd = -1;
	return dt;
}

void dt_free(struct dt *dt)
{
	if (!dt)
		return;
	if (dt->root_fd >= 0)
		close(dt->root_fd);
	free(dt->propbuf);
	free(dt->blob);
	free(dt);
}

const char *dt_source(const struct dt *dt)
{
	return dt->source;
}

/* Checks the blob once; after this the walker trusts its structure. */
static int blob_check(struct dt *dt, const char *name, struct fb_errinfo *ei)
{
	int rc;

	if (dt->blob_len < sizeof(struct fdt_header))
		return fb_errinfo_set(ei, FB_EBADDT, 0, name, "invalid devicetree blob: shorter than its header");
	/* The devicetree spec aligns the reservation block to 8 and the
	 * structure block to 4, and libfdt loads them as such: refuse a blob that
	 * does not before libfdt makes a misaligned access. */
	if (fdt_magic(dt->blob) == FDT_MAGIC &&
	    (fdt_off_mem_rsvmap(dt->blob) % 8 || fdt_off_dt_struct(dt->blob) % 4))
		return fb_errinfo_set(ei, FB_EBADDT, 0, name,
				      "invalid devicetree blob: misaligned block offset");
	rc = fdt_check_full(dt->blob, dt->blob_len);
	if (rc < 0) {
		char why[96];

		snprintf(why, sizeof(why), "invalid devicetree blob: %s", fdt_strerror(rc));
		return fb_errinfo_set(ei, FB_EBADDT, 0, name, why);
	}
	return 0;
}

int dt_open_blob_mem(struct dt **out, const void *buf, size_t len, const char *name,
		     struct fb_errinfo *ei)
{
	struct dt *dt;
	int rc;

	*out = NULL;
	if (len > DT_BLOB_MAX)
		return fb_errinfo_set(ei, FB_E2BIG, 0, name, "blob larger than 32 MiB");
	dt = dt_new();
	if (!dt || !(dt->blob = malloc(len ? len : 1))) {
		dt_free(dt);
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, name, NULL);
	}
	memcpy(dt->blob, buf, len);
	dt->blob_len = len;
	snprintf(dt->source, sizeof(dt->source), "blob %s", name);
	rc = blob_check(dt, name, ei);
	if (rc < 0) {
		dt_free(dt);
		return rc;
	}
	*out = dt;
	return 0;
}

int dt_open_blob(struct dt **out, const char *file, struct fb_errinfo *ei)
{
	struct dt *dt;
	char *buf;
	ssize_t len = sysfs_read_alloc(AT_FDCWD, file, DT_BLOB_MAX, &buf);
	int rc;

	*out = NULL;
	if (len < 0)
		return fb_errinfo_set(ei, (int)len, len == -FB_EIO || len == -FB_ENOENT ? errno : 0, file,
				      len == -FB_EINVAL ? "not a regular file"
				      : len == -FB_E2BIG ? "blob larger than 32 MiB" : NULL);
	if (!(dt = dt_new())) {
		free(buf);
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, file, NULL);
	}
	dt->blob = buf;
	dt->blob_len = (size_t)len;
	snprintf(dt->source, sizeof(dt->source), "blob %s", file);
	rc = blob_check(dt, file, ei);
	if (rc < 0) {
		dt_free(dt);
		return rc;
	}
	*out = dt;
	return 0;
}

int dt_open_dir(struct dt **out, const char *dir, struct fb_errinfo *ei)
{
	struct dt *dt;
	int fd;

	*out = NULL;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fb_errinfo_set(ei, errno == ENOENT || errno == ENOTDIR ? FB_ENOENT : FB_EIO,
				      errno, dir, NULL);
	dt = dt_new();
	if (!dt || !(dt->propbuf = malloc(DT_PROP_MAX + 2))) {
		dt_free(dt);
		close(fd);
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, dir, NULL);
	}
	dt->root_fd = fd;
	snprintf(dt->source, sizeof(dt->source), "directory %s", dir);
	*out = dt;
	return 0;
}

/* Appends "/name" to dt->path at plen; returns the new length or -FB_E2BIG. */
static int path_push(struct dt *dt, size_t plen, const char *name, struct fb_errinfo *ei)
{
	int n = snprintf(dt->path + plen, sizeof(dt->path) - plen, "/%s", name);

	if (n < 0 || (size_t)n >= sizeof(dt->path) - plen)
		return fb_errinfo_set(ei, FB_E2BIG, 0, dt->path, "node path too long");
	return (int)plen + n;
}

static int walk_blob(struct dt *dt, dt_visit_fn fn, void *ctx, struct fb_errinfo *ei)
{
	size_t plen[DT_MAX_DEPTH + 1];
	int depth = 0, off;

	plen[0] = 0;
	for (off = 0; off >= 0 && depth >= 0; off = fdt_next_node(dt->blob, off, &depth)) {
		struct dt_node node = { .depth = depth, .handle_ = off };
		int rc;

		if (depth > DT_MAX_DEPTH)
			return fb_errinfo_set(ei, FB_EDEPTH, 0, dt->path, "devicetree nested too deep");
		node.name = fdt_get_name(dt->blob, off, NULL);
		if (!node.name)
			node.name = "";
		if (depth == 0) {
			node.name = "";
			strcpy(dt->path, "/");
		} else {
			rc = path_push(dt, plen[depth - 1], node.name, ei);
			if (rc < 0)
				return rc;
			plen[depth] = (size_t)rc;
		}
		node.path = dt->path;
		rc = fn(ctx, dt, &node);
		if (rc)
			return rc;
		if (depth == 0)
			dt->path[0] = '\0';
	}
	return 0;
}

static int entry_is_dir(int dirfd, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_DIR;
	return fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* Visits the node open as fd (owned: closed here) and its subdirectories. */
static int walk_dir(struct dt *dt, int fd, const char *name, int depth, size_t plen,
		    dt_visit_fn fn, void *ctx, struct fb_errinfo *ei)
{
	struct dt_node node = { .name = name, .depth = depth, .handle_ = fd };
	struct dirent *de;
	DIR *d = NULL;
	int rc, dfd;

	node.path = depth ? dt->path : "/";
	rc = fn(ctx, dt, &node);
	if (rc)
		goto out;
	dfd = dup(fd);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, node.path, "opening node directory");
		if (dfd >= 0)
			close(dfd);
		goto out;
	}
	for (;;) {
		int cfd, clen;

		errno = 0;
		if (!(de = readdir(d))) {
			if (errno)
				rc = fb_errinfo_set(ei, FB_EIO, errno, node.path, "reading node directory");
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    !entry_is_dir(fd, de))
			continue;
		clen = path_push(dt, plen, de->d_name, ei);
		if (clen < 0) {
			rc = clen;
			break;
		}
		if (depth + 1 > DT_MAX_DEPTH) {
			rc = fb_errinfo_set(ei, FB_EDEPTH, 0, dt->path, "devicetree nested too deep");
			break;
		}
		cfd = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			rc = fb_errinfo_set(ei, FB_EIO, errno, dt->path, "opening node directory");
			break;
		}
		rc = walk_dir(dt, cfd, de->d_name, depth + 1, (size_t)clen, fn, ctx, ei);
		dt->path[plen] = '\0';
		if (rc)
			break;
	}
out:
	if (d)
		closedir(d);
	if (depth > 0)
		close(fd);
	return rc;
}

int dt_walk(struct dt *dt, dt_visit_fn fn, void *ctx, struct fb_errinfo *ei)
{
	dt->path[0] = '\0';
	if (dt->blob)
		return walk_blob(dt, fn, ctx, ei);
	return walk_dir(dt, dt->root_fd, "", 0, 0, fn, ctx, ei);
}

ssize_t dt_getprop(struct dt *dt, const struct dt_node *node, const char *prop,
		   const void **val, struct fb_errinfo *ei)
{
	char where[PATH_MAX + 256];
	ssize_t len;

	if (dt->blob) {
		int l;
		const void *p = fdt_getprop(dt->blob, node->handle_, prop, &l);

		if (!p)
			return l == -FDT_ERR_NOTFOUND ? -FB_ENOENT
				: fb_errinfo_set(ei, FB_EBADDT, 0, node->path, fdt_strerror(l));
		/* the same bound as a directory source, so a tree gives the same
		 * result whichever way the host exposes it */
		if ((size_t)l > DT_PROP_MAX) {
			snprintf(where, sizeof(where), "%s%s%s (in %s)", strcmp(node->path, "/") ? node->path : "",
				 "/", prop, dt->source);
			return fb_errinfo_set(ei, FB_E2BIG, 0, where, "property larger than 64 KiB");
		}
		*val = p;
		return l;
	}
	/* + 2: exactly 64 KiB fits, and the NUL after it */
	len = attr_read(node->handle_, prop, dt->propbuf, DT_PROP_MAX + 2, ATTR_RAW | ATTR_NOFOLLOW | ATTR_REGULAR | ATTR_ALL);
	if (len == -FB_ENOENT)
		return len;
	if (len < 0) {
		snprintf(where, sizeof(where), "%s%s%s (in %s)", strcmp(node->path, "/") ? node->path : "",
			 "/", prop, dt->source);
		return fb_errinfo_set(ei, (int)len, len == -FB_EIO ? errno : 0, where,
				      len == -FB_EINVAL ? "not a regular file"
				      : len == -FB_E2BIG ? "property larger than 64 KiB" : "reading property");
	}
	*val = dt->propbuf;
	return len;
}
