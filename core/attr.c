/* attr: three syscalls per attribute (pciutils' lib/sysfs.c way), a fourth
 * only where a caller asks for it (ATTR_REGULAR's fstat, ATTR_ALL's reads
 * to the end). */
#include "attr.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"

/* Fills buf[0..max) from fd: one read, or with all, reads until EOF.
 * Returns the bytes read, or -FB_EIO (errno set). */
static ssize_t fill(int fd, char *buf, size_t max, int all)
{
	size_t len = 0;

	while (len < max) {
		ssize_t r = read(fd, buf + len, max - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -FB_EIO;
		len += (size_t)r;
		if (r == 0 || !all)
			break;
	}
	return (ssize_t)len;
}

ssize_t attr_read(int dirfd, const char *path, char *buf, size_t size, unsigned flags)
{
	int of = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (flags & ATTR_NOFOLLOW ? O_NOFOLLOW : 0);
	int fd, saved;
	struct stat st;
	ssize_t n;

	if (size < 1)
		return -FB_E2BIG;
	if ((fd = openat(dirfd, path, of)) < 0)
		return errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
	if ((flags & ATTR_REGULAR) && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		errno = EINVAL;
		return -FB_EINVAL;
	}
	n = fill(fd, buf, size - 1, flags & ATTR_ALL);
	saved = errno;
	close(fd);
	errno = saved;
	if (n < 0)
		return n;
	if ((size_t)n == size - 1)
		return -FB_E2BIG;
	if (!(flags & ATTR_RAW) && n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return n;
}
