#include "featfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p of dir (modified in place and restored). */
static int make_dirs(char *dir, struct fb_errinfo *ei)
{
	struct stat st;

	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : fb_errinfo_set(ei, FB_EIO, ENOTDIR, dir, "creating directory");
	for (char *p = dir + 1; ; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			int e = errno;

			fb_errinfo_set(ei, FB_EIO, e, dir, "creating directory");
			*p = c;
			return -FB_EIO;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int featfile_write(const char *path, const void *data, size_t len, struct fb_errinfo *ei)
{
	char dir[PATH_MAX], tmp[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	int fd = -1, lockfd = -1, rc;

	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return fb_errinfo_set(ei, FB_EINVAL, 0, path, "not a file name");
	if (dlen + 1 >= sizeof(dir))
		return fb_errinfo_set(ei, FB_E2BIG, 0, path, "path too long");
	if (slash) {
		memcpy(dir, path, dlen ? dlen : 1);
		dir[dlen ? dlen : 1] = '\0';
	} else {
		strcpy(dir, ".");
	}
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, base) >= (int)sizeof(tmp))
		return fb_errinfo_set(ei, FB_E2BIG, 0, path, "path too long");
	rc = make_dirs(dir, ei);
	if (rc < 0)
		return rc;
	/* Writers of the same file take turns: they share the temporary name,
	 * and two of them interleaving would publish a mix. A filesystem without
	 * flock just goes unserialised. */
	lockfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lockfd >= 0)
		while (flock(lockfd, LOCK_EX) < 0 && errno == EINTR)
			;
	/* A temporary left by a crash (or planted as a symlink) is removed, and
	 * ours is created fresh so no stale mode or owner carries over. */
	if (unlink(tmp) < 0 && errno != ENOENT) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "removing a stale temporary file");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "creating temporary file");
		goto out;
	}
	if (fchmod(fd, 0644) < 0) { /* the promised mode, whatever the umask */
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "chmod");
		goto fail;
	}
	if (write_all(fd, data, len) < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "writing");
		goto fail;
	}
	if (fsync(fd) < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "fsync");
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = fb_errinfo_set(ei, FB_EIO, errno, tmp, "closing");
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = fb_errinfo_set(ei, FB_EIO, errno, path, "renaming the temporary file over it");
		goto fail;
	}
	/* make the rename itself durable; some filesystems refuse fsync on a directory */
	rc = 0;
	if (lockfd >= 0 && fsync(lockfd) < 0 && errno != EINVAL && errno != EROFS)
		rc = fb_errinfo_set(ei, FB_EIO, errno, dir, "fsync of directory");
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	if (lockfd >= 0)
		close(lockfd); /* releases the lock */
	return rc;
}
