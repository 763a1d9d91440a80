#include "hostfs.h"

#include "err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void hostfs_init(struct hostfs *h)
{
	strcpy(h->prefix, "/");
}

int hostfs_setup(struct hostfs *h, const char *prefix)
{
	if (!prefix) {
		struct stat st;

		prefix = stat("/host-sys", &st) == 0 && S_ISDIR(st.st_mode) ? "/host-" : "/";
	}
	if (strlen(prefix) >= sizeof(h->prefix))
		return -FB_E2BIG;
	strcpy(h->prefix, prefix);
	return 0;
}

int hostfs_path(const struct hostfs *h, const char *rel, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s%s", h->prefix, rel);

	if (n < 0 || (size_t)n >= size)
		return -FB_E2BIG;
	return n;
}

int hostfs_open(const struct hostfs *h, const char *rel, int flags)
{
	char path[PATH_MAX];
	int fd;

	if (hostfs_path(h, rel, path, sizeof(path)) < 0) {
		errno = ENAMETOOLONG;
		return -FB_E2BIG;
	}
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
	return fd;
}
