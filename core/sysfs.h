/* sysfs: bounded reads of sysfs/procfs/devicetree attributes relative to a
 * directory fd. A value that fills the caller's buffer is an error
 * (-FB_E2BIG), never a silent truncation. Only regular files are read, so a
 * FIFO or device planted in a tree cannot block or surprise us. */
#ifndef FB_SYSFS_H
#define FB_SYSFS_H

#include <stddef.h>
#include <sys/types.h>

/* Reads a text attribute into buf (NUL-terminated, one trailing '\n' removed):
 * core/attr's reader, regular files only, read to the end.
 * Returns the length, or -FB_ENOENT, -FB_EIO (errno set), -FB_EINVAL (not a
 * regular file), -FB_E2BIG (value does not fit in size-1 bytes). */
ssize_t sysfs_read(int dirfd, const char *name, char *buf, size_t size);

/* Calls fn(ctx, name, d_type) for every entry of the open directory fd
 * except "." and "..", straight from getdents64 (opendir/fdopendir would
 * add an fstat and two fcntl calls per directory, which a scan of
 * hundreds of devices pays for). fd is not closed. Returns 0, the first
 * non-zero value fn returned, or -FB_EIO (errno set). */
int sysfs_dir_each(int fd, int (*fn)(void *ctx, const char *name, unsigned char d_type), void *ctx);

/* Reads a whole regular file (dirfd-relative, AT_FDCWD for plain paths) of
 * fewer than cap bytes into a new NUL-terminated buffer owned by the caller.
 * Returns its length, or -FB_ENOENT, -FB_EIO (errno set), -FB_EINVAL (not a
 * regular file), -FB_E2BIG (larger than cap), -FB_ENOMEM. */
ssize_t sysfs_read_alloc(int dirfd, const char *path, size_t cap, char **out);

/* The same from an open fd (read from its current offset; not closed). */
ssize_t sysfs_read_fd_alloc(int fd, size_t cap, char **out);

struct hostfs;
/* A host file by its path under the host prefix (hostfs_resolve: symlinks
 * re-rooted there), with core/attr's bounded reader (buf as sysfs_read, any
 * file type as attr_read's default). Returns its length or a negative
 * fb_err (-FB_E2BIG also for a path too long). */
ssize_t sysfs_host_attr(const struct hostfs *h, const char *rel, char *buf, size_t size);
/* sysfs_read_alloc of a host file by its path under the prefix. */
ssize_t sysfs_host_alloc(const struct hostfs *h, const char *rel, size_t cap, char **out);

/* Parses "0x10de"/"10de" (hex) or "42" (decimal) with nothing after it but
 * whitespace. Returns 0, -FB_EINVAL or -FB_ERANGE. */
int sysfs_parse_hex(const char *s, unsigned long *out);
int sysfs_parse_dec(const char *s, unsigned long *out);

/* Reads and parses an attribute. Errors as sysfs_read or the parser. */
int sysfs_read_hex(int dirfd, const char *name, unsigned long *out);
int sysfs_read_dec(int dirfd, const char *name, unsigned long *out);

/* Writes the last component of the symlink dirfd/name ("driver" ->
 * ".../drivers/nvidia" gives "nvidia"). Returns its length or an error. */
ssize_t sysfs_link_base(int dirfd, const char *name, char *buf, size_t size);

#endif
