/* dt: read-only devicetree access behind one node/property walker, whatever
 * the source: a flattened blob (--dtb FILE, <host>/sys/firmware/fdt) checked
 * once with libfdt's full structure check and then trusted, or a
 * /proc/device-tree style directory (directory = node, regular file =
 * property with its raw bytes). This is the only file that includes libfdt. */
#ifndef FB_DT_H
#define FB_DT_H

#include "err.h"

#include <stddef.h>
#include <sys/types.h>

#define DT_MAX_DEPTH 64              /* deeper trees are refused (-FB_EDEPTH) */
#define DT_BLOB_MAX (32u << 20)      /* largest blob we read (-FB_E2BIG) */
#define DT_PROP_MAX (64u << 10)      /* largest property dt_getprop returns (inclusive) */

struct dt;

struct dt_node {
	const char *name; /* "" for the root, else "cpu@0" */
	const char *path; /* "/" or "/cpus/cpu@0" */
	int depth;        /* 0 for the root */
	int handle_;      /* private: blob offset or directory fd */
};

/* Loads and validates a blob file. On success *out is owned by the caller
 * (dt_free). Errors: -FB_ENOENT, -FB_EIO, -FB_E2BIG, -FB_EBADDT (with
 * libfdt's reason in ei->detail), -FB_ENOMEM. */
int dt_open_blob(struct dt **out, const char *file, struct fb_errinfo *ei);

/* Same for a blob already in memory (copied); name is used in messages. */
int dt_open_blob_mem(struct dt **out, const void *buf, size_t len, const char *name,
		     struct fb_errinfo *ei);

/* Opens a directory tree (symlinks are followed only for dir itself).
 * Errors: -FB_ENOENT (not there, or not a directory), -FB_EIO, -FB_ENOMEM. */
int dt_open_dir(struct dt **out, const char *dir, struct fb_errinfo *ei);

/* Safe with NULL. */
void dt_free(struct dt *dt);

/* "blob FILE" or "directory DIR", for messages; owned by dt. */
const char *dt_source(const struct dt *dt);

/* Called for every node, parents before children; a non-zero return stops
 * the walk and is returned by dt_walk. The node is valid during the call. */
typedef int (*dt_visit_fn)(void *ctx, struct dt *dt, const struct dt_node *node);

/* Walks the whole tree. Returns 0, the visitor's non-zero value, or
 * -FB_EIO / -FB_EDEPTH / -FB_E2BIG (path too long) with ei filled. */
int dt_walk(struct dt *dt, dt_visit_fn fn, void *ctx, struct fb_errinfo *ei);

/* Looks up property prop of node. Returns its length and points *val at its
 * bytes (borrowed: valid until the next dt_getprop on dt), -FB_ENOENT when the
 * node has no such property, or -FB_EIO / -FB_E2BIG (longer than DT_PROP_MAX,
 * from a blob or a directory alike) / -FB_EINVAL (not a regular file) with ei
 * naming the property's path. */
ssize_t dt_getprop(struct dt *dt, const struct dt_node *node, const char *prop,
		   const void **val, struct fb_errinfo *ei);

#endif
