/* nfdsrc: what the sources share: host readers, directory listings, labels. */
#include "nfdsrc_internal.h"

#include "attr.h"
#include "buf.h"
#include "sysfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nfdsrc_is_space_(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

size_t nfdsrc_trim_(char *s)
{
	size_t len = strlen(s), start = 0;

	while (len && nfdsrc_is_space_(s[len - 1]))
		len--;
	while (start < len && nfdsrc_is_space_(s[start]))
		start++;
	memmove(s, s + start, len - start);
	s[len - start] = '\0';
	return len - start;
}

ssize_t nfdsrc_attr_at_(int dfd, const char *name, char *buf, size_t size)
{
	ssize_t n = attr_read(dfd, name, buf, size, 0);

	return n < 0 ? n : (ssize_t)nfdsrc_trim_(buf);
}

ssize_t nfdsrc_host_attr_(const struct hostfs *h, const char *rel, char *buf, size_t size)
{
	ssize_t n = sysfs_host_attr(h, rel, buf, size);

	return n < 0 ? n : (ssize_t)nfdsrc_trim_(buf);
}

ssize_t nfdsrc_host_file_(const struct hostfs *h, const char *rel, char **out)
{
	return sysfs_host_alloc(h, rel, FILE_CAP, out);
}

ssize_t nfdsrc_host_head_(const struct hostfs *h, const char *rel, size_t size, char **out)
{
	struct stat st;
	size_t len = 0;
	int fd = hostfs_open(h, rel, O_RDONLY | O_NONBLOCK); /* a FIFO must not hang us */
	char *buf;

	*out = NULL;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -FB_EINVAL;
	}
	if (!(buf = malloc(size))) {
		close(fd);
		return -FB_ENOMEM;
	}
	while (len + 1 < size) {
		ssize_t r = read(fd, buf + len, size - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			close(fd);
			return -FB_EIO;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

int nfdsrc_host_exists_(const struct hostfs *h, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	if (stat(path, &st) == 0)
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -FB_EIO;
}

int nfdsrc_host_opendir_(const struct hostfs *h, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
	return fd;
}

void nfdsrc_names_free_(struct nfdsrc_names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	nm->v = NULL;
	nm->n = nm->size = 0;
}

int nfdsrc_names_push_(struct nfdsrc_names *nm, const char *s)
{
	if (ARRAY_GROW(nm->v, nm->size, nm->n + 1) < 0 || !(nm->v[nm->n] = strdup(s)))
		return -FB_ENOMEM;
	nm->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int names_push_each(void *ctx, const char *name, unsigned char d_type)
{
	(void)d_type;
	return nfdsrc_names_push_(ctx, name);
}

int nfdsrc_host_list_(const struct hostfs *h, const char *rel, int *dfd, struct nfdsrc_names *nm)
{
	int fd = nfdsrc_host_opendir_(h, rel), rc;

	if (fd < 0)
		return fd;
	rc = sysfs_dir_each(fd, names_push_each, nm);
	if (rc == 0 && nm->n > 1)
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_str);
	if (rc < 0 || !dfd)
		close(fd);
	else
		*dfd = fd;
	return rc;
}

int nfdsrc_label_(struct json *labels, const char *src, const char *name, const char *value,
		 const struct fb_log *lg)
{
	char key[512];
	int n;

	if (!labels)
		return 0;
	n = snprintf(key, sizeof(key), NFDSRC_LABEL_NS "/%s-%s", src, name);
	if (n < 0 || (size_t)n >= sizeof(key)) {
		NLOG_I(lg, "label %s-%.64s... dropped: name too long", src, name);
		return 0;
	}
	return json_set_str(labels, key, value);
}

int nfdsrc_label_true_(struct json *labels, const char *src, const char *name,
		      const struct fb_log *lg)
{
	return nfdsrc_label_(labels, src, name, "true", lg);
}

void nfdsrc_squash_invalid_(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (isalnum((unsigned char)*r) || *r == '-' || *r == '_' || *r == '.') {
			*w++ = *r++;
			continue;
		}
		*w++ = '_';
		while (*r && !(isalnum((unsigned char)*r) || *r == '-' || *r == '_' || *r == '.'))
			r++;
	}
	*w = '\0';
}

long nfdsrc_num_(const char *s, int base, long def)
{
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, base);
	return errno || *end ? def : v;
}

int nfdsrc_list_has_(const struct nfdsrc_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] && strcmp(l->v[i], s) == 0)
			return 1;
	return 0;
}

size_t nfdsrc_label_fields_(const struct nfdsrc_list *cfg, const char *const *canon, size_t ncanon,
			   const size_t *fallback, size_t nfallback, size_t *out, const char *src,
			   const struct fb_log *lg)
{
	size_t n = 0;

	for (size_t i = 0; i < ncanon; i++)
		if (nfdsrc_list_has_(cfg, canon[i]))
			out[n++] = i;
	for (size_t i = 0; i < cfg->n; i++) {
		size_t k;

		for (k = 0; k < ncanon && (!cfg->v[i] || strcmp(cfg->v[i], canon[k]) != 0); k++)
			;
		if (k == ncanon)
			NLOG_I(lg, "%s: ignoring invalid field \"%s\" in deviceLabelFields", src,
			       cfg->v[i] ? cfg->v[i] : "");
	}
	if (n == 0) {
		NLOG_I(lg, "%s: no valid fields in deviceLabelFields defined, using the defaults",
		       src);
		memcpy(out, fallback, nfallback * sizeof(*out));
		n = nfallback;
	}
	return n;
}

int nfdsrc_class_listed_(const struct nfdsrc_list *wl, const char *cls)
{
	for (size_t i = 0; i < wl->n; i++) {
		const char *w = wl->v[i] ? wl->v[i] : "";
		size_t k;

		for (k = 0; w[k] && cls[k] && tolower((unsigned char)w[k]) == cls[k]; k++)
			;
		if (!w[k])
			return 1;
	}
	return 0;
}

int nfdsrc_device_label_(char *buf, size_t size, const char *const *vals, const size_t *idx,
			size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + len, size - len, "%s%s", i ? "_" : "", vals[idx[i]]);

		if (w < 0 || (size_t)w >= size - len)
			return -FB_E2BIG;
		len += (size_t)w;
	}
	return 0;
}

const char *nfdsrc_no0x_(const char *s)
{
	return s[0] == '0' && s[1] == 'x' ? s + 2 : s;
}
