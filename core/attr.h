/* attr: the one bounded reader for sysfs and procfs attributes (and other
 * small files read whole): open, one read, close. */
#ifndef FB_ATTR_H
#define FB_ATTR_H

#include <stddef.h>
#include <sys/types.h>

#define ATTR_RAW 1      /* keep the bytes as they are: no trailing '\n' removed */
#define ATTR_NOFOLLOW 2 /* the last component may not be a symlink (-FB_EIO, ELOOP) */
#define ATTR_REGULAR 4  /* only a regular file (sysfs and procfs attributes are): else -FB_EINVAL */
#define ATTR_ALL 8      /* read until EOF: a sysfs bin attribute (a devicetree property)
			 * gives at most a page per read */

/* Reads path (relative to dirfd, or absolute) into buf with one read(2):
 * sysfs hands a whole attribute to the first read, seq_file (procfs) fills
 * the buffer it is given, and a regular file gives all it has, so a short
 * read is all of it. O_NONBLOCK keeps a planted FIFO from blocking (it reads
 * as empty), a directory fails (-FB_EIO, EISDIR), a device like /dev/zero
 * fills buf (-FB_E2BIG). Writes the value, with one trailing '\n' removed
 * unless ATTR_RAW, and a NUL. Returns its length, -FB_ENOENT (ENOENT or
 * ENOTDIR), -FB_EIO (errno set), -FB_EINVAL (ATTR_REGULAR: not a regular
 * file), or -FB_E2BIG when the value fills buf: an error, never a
 * truncation (size 0 is -FB_E2BIG too). With ATTR_ALL the read is repeated
 * until EOF or a full buf. */
ssize_t attr_read(int dirfd, const char *path, char *buf, size_t size, unsigned flags);

#endif
