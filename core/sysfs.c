#include "sysfs.h"

#include "attr.h"
#include "buf.h"
#include "err.h"
#include "hostfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

ssize_t sysfs_read(int dirfd, const char *name, char *buf, size_t size)
{
	return attr_read(dirfd, name, buf, size, ATTR_REGULAR | ATTR_ALL);
}

ssize_t sysfs_read_alloc(int dirfd, const char *path, size_t cap, char **out)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), saved;
	ssize_t len;

	*out = NULL;
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
	len = sysfs_read_fd_alloc(fd, cap, out); /* (checks for a regular file) */
	saved = errno;
	close(fd);
	errno = saved;
	return len;
}

ssize_t sysfs_read_fd_alloc(int fd, size_t cap, char **out)
{
	struct stat st;
	struct buf b;
	size_t want;
	int saved;

	*out = NULL;
	if (fstat(fd, &st) < 0)
		return -FB_EIO;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return -FB_EINVAL;
	}
	/* sysfs bin attributes and regular files report their size; /proc
	 * reports 0, so grow from there. A value of cap bytes is too long. */
	buf_init(&b, cap);
	want = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
	for (;;) {
		ssize_t r;

		if (want > cap - b.len)
			want = cap - b.len;
		if (!want) {
			buf_free(&b);
			return -FB_E2BIG;
		}
		if (buf_reserve(&b, want) < 0) {
			buf_free(&b);
			return -FB_ENOMEM;
		}
		r = read(fd, b.p + b.len, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			saved = errno;
			buf_free(&b);
			errno = saved;
			return -FB_EIO;
		}
		if (r == 0)
			break;
		b.len += (size_t)r;
		b.p[b.len] = '\0';
		want = b.len; /* double */
	}
	*out = buf_take(&b, &want);
	return *out ? (ssize_t)want : -FB_ENOMEM;
}

static int parse_ul(const char *s, int base, unsigned long *out)
{
	char *end;
	unsigned long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isxdigit((unsigned char)*s))
		return -FB_EINVAL;
	errno = 0;
	v = strtoul(s, &end, base);
	if (end == s)
		return -FB_EINVAL;
	if (errno == ERANGE)
		return -FB_ERANGE;
	while (isspace((unsigned char)*end))
		end++;
	if (*end)
		return -FB_EINVAL;
	*out = v;
	return 0;
}

int sysfs_parse_hex(const char *s, unsigned long *out)
{
	while (isspace((unsigned char)*s))
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	/* strtoul would take a second "0x" as another prefix, and parse_ul
	 * blanks after the first ("0x a0", tests/fuzz/corpus/sysfs/hex-blank) */
	if (!isxdigit((unsigned char)s[0]) || (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
		return -FB_EINVAL;
	return parse_ul(s, 16, out);
}

int sysfs_parse_dec(const char *s, unsigned long *out)
{
	const char *p = s;

	while (isspace((unsigned char)*p))
		p++;
	if (*p < '0' || *p > '9')
		return -FB_EINVAL;
	return parse_ul(p, 10, out);
}

int sysfs_read_hex(int dirfd, const char *name, unsigned long *out)
{
	char buf[64];
	ssize_t len = sysfs_read(dirfd, name, buf, sizeof(buf));

	return len < 0 ? (int)len : sysfs_parse_hex(buf, out);
}

int sysfs_read_dec(int dirfd, const char *name, unsigned long *out)
{
	char buf[64];
	ssize_t len = sysfs_read(dirfd, name, buf, sizeof(buf));

	return len < 0 ? (int)len : sysfs_parse_dec(buf, out);
}

ssize_t sysfs_link_base(int dirfd, const char *name, char *buf, size_t size)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, target, sizeof(target));
	const char *base;
	size_t len;

	if (n < 0)
		return errno == ENOENT ? -FB_ENOENT : -FB_EIO;
	if ((size_t)n == sizeof(target))
		return -FB_E2BIG;
	target[n] = '\0';
	while (n > 1 && target[n - 1] == '/')
		target[--n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	len = strlen(base);
	if (len == 0 || len >= size)
		return len ? -FB_E2BIG : -FB_EINVAL;
	memcpy(buf, base, len + 1);
	return (ssize_t)len;
}

int sysfs_dir_each(int fd, int (*fn)(void *ctx, const char *name, unsigned char d_type), void *ctx)
{
	/* struct linux_dirent64, laid out by the kernel */
	struct ent {
		unsigned long long ino;
		long long off;
		unsigned short reclen;
		unsigned char type;
		char name[];
	};
	char buf[16384] __attribute__((aligned(8)));

	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -FB_EIO;
		if (n == 0)
			return 0;
		for (long off = 0; off < n;) {
			const struct ent *e = (const struct ent *)(buf + off);
			int rc;

			off += e->reclen;
			if (e->name[0] == '.' && (!e->name[1] || (e->name[1] == '.' && !e->name[2])))
				continue;
			rc = fn(ctx, e->name, e->type);
			if (rc)
				return rc;
		}
	}
}

ssize_t sysfs_host_attr(const struct hostfs *h, const char *rel, char *buf, size_t size)
{
	char path[PATH_MAX];

	buf[0] = '\0';
	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	return attr_read(AT_FDCWD, path, buf, size, 0);
}

ssize_t sysfs_host_alloc(const struct hostfs *h, const char *rel, size_t cap, char **out)
{
	char path[PATH_MAX];

	*out = NULL;
	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	return sysfs_read_alloc(AT_FDCWD, path, cap, out);
}
