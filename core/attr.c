/* attr: three syscalls per attribute (pciutils' lib/sysfs.c way). */
#include "attr.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "err.h"

ssize_t attr_read(int dirfd, const char *path, char *buf, size_t size, unsigned flags)
{
	int of = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (flags & ATTR_NOFOLLOW ? O_NOFOLLOW : 0);
	int fd = openat(dirfd, path, of), saved;
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	saved = errno;
	close(fd);
	errno = saved;
	if (n < 0)
		return -FB_EIO;
	if ((size_t)n == size - 1)
		return -FB_E2BIG;
	if (!(flags & ATTR_RAW) && n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return n;
}
