#include "hostfs.h"

#include "err.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void hostfs_init(struct hostfs *h)
{
	strcpy(h->prefix, "/");
}

int hostfs_setup(struct hostfs *h, const char *prefix)
{
	if (!prefix) {
		struct stat st;

		prefix = stat("/host-sys", &st) == 0 && S_ISDIR(st.st_mode) ? HOSTFS_POD_PREFIX : "/";
	}
	if (strlen(prefix) >= sizeof(h->prefix))
		return -FB_E2BIG;
	strcpy(h->prefix, prefix);
	return 0;
}

int hostfs_kernel_proc(const struct hostfs *h, const char *rel, char *buf, size_t size)
{
	if (strcmp(h->prefix, HOSTFS_POD_PREFIX) != 0 || strncmp(rel, "proc/", 5) != 0)
		return 0;
	if ((size_t)snprintf(buf, size, "/%s", rel) >= size)
		return -FB_E2BIG;
	return 1;
}

int hostfs_path(const struct hostfs *h, const char *rel, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s%s", h->prefix, rel);

	if (n < 0 || (size_t)n >= size)
		return -FB_E2BIG;
	return n;
}

/* Drops the last component of the root-relative path p (p[len]). */
static size_t parent_len(const char *p, size_t len)
{
	while (len && p[len - 1] != '/')
		len--;
	while (len && p[len - 1] == '/')
		len--;
	return len;
}

int hostfs_resolve(const struct hostfs *h, const char *rel, char *buf, size_t size)
{
	char cur[PATH_MAX], rest[PATH_MAX], target[PATH_MAX], full[PATH_MAX];
	size_t clen = 0;
	int links = 0;

	if (snprintf(rest, sizeof(rest), "%s", rel) >= (int)sizeof(rest))
		return -FB_E2BIG;
	cur[0] = '\0';
	for (char *p = rest; *p;) {
		char *comp, *end;
		size_t n, base;
		ssize_t t;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		end = comp + strcspn(comp, "/");
		p = *end ? end + 1 : end;
		*end = '\0';
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			clen = parent_len(cur, clen);
			cur[clen] = '\0';
			continue;
		}
		n = strlen(comp);
		base = clen;
		if (clen + n + 2 > sizeof(cur))
			return -FB_E2BIG;
		if (clen)
			cur[clen++] = '/';
		memcpy(cur + clen, comp, n + 1);
		if (hostfs_path(h, cur, full, sizeof(full)) < 0)
			return -FB_E2BIG;
		t = readlink(full, target, sizeof(target) - 1);
		if (t < 0) { /* not a symlink, or missing: keep it */
			clen += n;
			continue;
		}
		if (++links > 40)
			return -FB_EINVAL;
		target[t] = '\0';
		/* the link's target, then what was left to resolve */
		{
			char tmp[PATH_MAX];

			if (snprintf(tmp, sizeof(tmp), "%s/%s", target, p) >= (int)sizeof(tmp))
				return -FB_E2BIG;
			strcpy(rest, tmp);
			p = rest;
		}
		clen = target[0] == '/' ? 0 : base;
		cur[clen] = '\0';
	}
	return hostfs_path(h, cur, buf, size);
}

int hostfs_open(const struct hostfs *h, const char *rel, int flags)
{
	char path[PATH_MAX];
	int fd;

	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0) {
		errno = ENAMETOOLONG;
		return -FB_E2BIG;
	}
	fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
	return fd;
}

#define BENEATH_DEPTH 32
#define BENEATH_LINKS 40

int hostfs_open_beneath(int dirfd, const char *rel, int flags, char *path, size_t size)
{
	char rest[PATH_MAX], target[PATH_MAX], tmp[PATH_MAX], res[PATH_MAX];
	int fds[BENEATH_DEPTH + 1], depth = 0, links = 0, fd, rc;
	size_t lens[BENEATH_DEPTH + 1], rlen = 0;
	char *p = rest;

	fds[0] = dirfd; /* borrowed; fds[1..depth] are ours */
	lens[0] = 0;
	res[0] = '\0';
	if (rel[0] == '/')
		return -FB_EOUTSIDE;
	if (snprintf(rest, sizeof(rest), "%s", rel) >= (int)sizeof(rest))
		return -FB_E2BIG;
	for (;;) {
		char *comp, *end;
		size_t n;
		ssize_t t;
		int last;

		while (*p == '/')
			p++;
		if (!*p) { /* rel named a directory: "", ".", "a/.." */
			fd = openat(fds[depth], ".", flags | O_CLOEXEC | O_NOCTTY);
			rc = fd >= 0 ? fd : -FB_EIO;
			break;
		}
		comp = p;
		end = comp + strcspn(comp, "/");
		p = *end ? end + 1 : end;
		*end = '\0';
		while (*p == '/')
			p++;
		last = *p == '\0';
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			if (depth == 0) {
				rc = -FB_EOUTSIDE;
				break;
			}
			close(fds[depth--]);
			rlen = lens[depth];
			res[rlen] = '\0';
			continue;
		}
		t = readlinkat(fds[depth], comp, target, sizeof(target) - 1);
		if (t >= 0) {
			target[t] = '\0';
			if (++links > BENEATH_LINKS) {
				rc = -FB_EINVAL;
				break;
			}
			if (target[0] == '/') {
				rc = -FB_EOUTSIDE;
				break;
			}
			/* the target, then what was left, resolved from this directory */
			if (snprintf(tmp, sizeof(tmp), "%s%s%s", target, *p ? "/" : "", p) >= (int)sizeof(tmp)) {
				rc = -FB_E2BIG;
				break;
			}
			strcpy(rest, tmp);
			p = rest;
			continue;
		}
		if (errno != EINVAL) { /* EINVAL: there, and not a symlink */
			rc = errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
			break;
		}
		n = strlen(comp);
		if (rlen + n + 2 > sizeof(res)) {
			rc = -FB_E2BIG;
			break;
		}
		if (rlen)
			res[rlen++] = '/';
		memcpy(res + rlen, comp, n + 1);
		rlen += n;
		if (last) {
			fd = openat(fds[depth], comp, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
			rc = fd >= 0 ? fd : errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
			break;
		}
		if (depth == BENEATH_DEPTH) {
			rc = -FB_EDEPTH;
			break;
		}
		fd = openat(fds[depth], comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			rc = errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
			break;
		}
		fds[++depth] = fd;
		lens[depth] = rlen;
	}
	{
		int e = errno;

		while (depth > 0)
			close(fds[depth--]);
		errno = e;
	}
	if (rc >= 0 && path && snprintf(path, size, "%s", res) >= (int)size) {
		close(rc);
		return -FB_E2BIG;
	}
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void hostfs_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int hostfs_list(int fd, size_t max, char ***names, size_t *n, size_t *total)
{
	struct dirent *de;
	char **v = NULL;
	size_t k = 0;
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0), e;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	*names = NULL;
	*n = *total = 0;
	if (!d) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		errno = e;
		return -FB_EIO;
	}
	rewinddir(d); /* the dup shares its offset with fd */
	if (max == 0 || !(v = malloc(2 * max * sizeof(*v)))) {
		closedir(d);
		return max == 0 ? 0 : -FB_ENOMEM;
	}
	errno = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue; /* hidden, "." and ".." */
		++*total;
		if (k == 2 * max) { /* keep the first ones by name */
			qsort(v, k, sizeof(*v), name_cmp);
			while (k > max)
				free(v[--k]);
		}
		if (!(v[k] = strdup(de->d_name))) {
			hostfs_names_free(v, k);
			closedir(d);
			return -FB_ENOMEM;
		}
		k++;
		errno = 0;
	}
	e = errno;
	closedir(d);
	if (e) {
		hostfs_names_free(v, k);
		errno = e;
		return -FB_EIO;
	}
	if (k)
		qsort(v, k, sizeof(*v), name_cmp);
	while (k > max)
		free(v[--k]);
	*names = v;
	*n = k;
	return 0;
}

int hostfs_open_own_proc(void)
{
	return open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}
