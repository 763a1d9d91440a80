/* attr: the one bounded reader for sysfs and procfs attributes (and other
 * small files read whole): open, one read, close. */
#ifndef FB_ATTR_H
#define FB_ATTR_H

#include <stddef.h>
#include <sys/types.h>

#define ATTR_RAW 1      /* keep the bytes as they are: no trailing '\n' removed */
#define ATTR_NOFOLLOW 2 /* the last component may not be a symlink (-FB_EIO, ELOOP) */

/* Reads path (relative to dirfd, or absolute) into buf with one read(2):
 * sysfs hands a whole attribute to the first read, seq_file (procfs) fills
 * the buffer it is given, and a regular file gives all it has, so a short
 * read is all of it. O_NONBLOCK keeps a planted FIFO from blocking (it reads
 * as empty), a directory fails (-FB_EIO, EISDIR), a device like /dev/zero
 * fills buf (-FB_E2BIG). Writes the value, with one trailing '\n' removed
 * unless ATTR_RAW, and a NUL. Returns its length, -FB_ENOENT (ENOENT or
 * ENOTDIR), -FB_EIO (errno set), or -FB_E2BIG when the value fills buf: an
 * error, never a truncation. size must be at least 1. */
ssize_t attr_read(int dirfd, const char *path, char *buf, size_t size, unsigned flags);

#endif
