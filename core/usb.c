/* usb: <host>/sys/bus/usb/devices as upstream NFD sees it (source/usb), from
 * one directory listing: the entries with an idProduct are devices; the
 * entries named "DEV:CFG.IF" (or "BUS-0:CFG.IF" for root hub usbBUS) with a
 * bInterfaceClass are their interfaces. Upstream globs DEVDIR/x/bInterfaceClass
 * per device instead; the interfaces are the same directories, listed as
 * siblings in the bus directory, so one listing serves both. Attributes are
 * read as "NAME/attr" relative to the bus directory. */
#include "usb.h"

#include "buf.h"
#include "sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define USB_WARN(lg, ...) \
	do { \
		if (lg) \
			LOG_W(lg, __VA_ARGS__); \
	} while (0)

/* the entry names of the bus directory, in one buffer */
struct names {
	struct buf text; /* NUL-terminated names back to back */
	size_t *off;     /* owned: where each name starts in text */
	size_t n, cap;
};

void usb_list_init(struct usb_list *l)
{
	l->dev = NULL;
	l->n = l->cap = 0;
}

void usb_list_free(struct usb_list *l)
{
	free(l->dev);
	usb_list_init(l);
}

int usb_hex_norm_(const char *s, size_t len, unsigned ndig, char *out)
{
	size_t i = 0, start;

	while (i < len && isspace((unsigned char)s[i]))
		i++;
	start = i;
	while (i < len && isxdigit((unsigned char)s[i]))
		i++;
	if (i - start != ndig)
		return -FB_EINVAL;
	while (i < len && isspace((unsigned char)s[i]))
		i++;
	if (i != len)
		return -FB_EINVAL;
	for (i = 0; i < ndig; i++)
		out[i] = (char)tolower((unsigned char)s[start + i]);
	out[ndig] = '\0';
	return 0;
}

int usb_iface_owner_(const char *iface, char *buf, size_t size)
{
	const char *colon = strchr(iface, ':');
	size_t n = colon ? (size_t)(colon - iface) : 0;
	int len;

	if (n == 0)
		return -FB_EINVAL;
	/* a root hub's interfaces are "BUS-0:C.I", the hub itself "usbBUS" */
	if (n >= 3 && iface[n - 2] == '-' && iface[n - 1] == '0' &&
	    strspn(iface, "0123456789") == n - 2)
		len = snprintf(buf, size, "usb%.*s", (int)(n - 2), iface);
	else
		len = snprintf(buf, size, "%.*s", (int)n, iface);
	return len < 0 || (size_t)len >= size ? -FB_E2BIG : len;
}

static int names_add(struct names *nm, const char *s)
{
	if (ARRAY_GROW(nm->off, nm->cap, nm->n + 1) < 0)
		return -FB_ENOMEM;
	nm->off[nm->n] = nm->text.len;
	buf_put(&nm->text, s, strlen(s) + 1);
	if (nm->text.err)
		return -FB_ENOMEM;
	nm->n++;
	return 0;
}

static int names_list(DIR *dir, struct names *nm)
{
	struct dirent *de;

	for (;;) {
		errno = 0;
		if (!(de = readdir(dir)))
			return errno ? -FB_EIO : 0;
		if (de->d_name[0] != '.' && names_add(nm, de->d_name) < 0)
			return -FB_ENOMEM;
	}
}

/* qsort context would need qsort_r: sort pointers instead */
static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int dev_name_cmp(const void *key, const void *d)
{
	return strcmp(key, ((const struct usb_dev *)d)->name);
}

/* Reads NAME/attr into buf. Returns sysfs_read's result. */
static ssize_t read_at(int fd, const char *name, const char *attr, char *buf, size_t size)
{
	char p[128];

	if (snprintf(p, sizeof(p), "%s/%s", name, attr) >= (int)sizeof(p))
		return -FB_E2BIG;
	return sysfs_read(fd, p, buf, size);
}

/* Logs a problem with NAME/attr: the read error (with errno's text for
 * -FB_EIO), or the malformed value, escaped: it came from a file. */
static void warn_attr(const struct fb_log *lg, const char *what, const char *name,
		      const char *attr, ssize_t rc, const char *val)
{
	char n[64], v[96];
	int sys = errno;

	if (!lg)
		return;
	log_escape(name, strlen(name), n, sizeof(n));
	if (rc >= 0)
		LOG_W(lg, "usb: %s %s: %s: malformed value \"%s\"", what, n, attr,
		      log_escape(val, strlen(val), v, sizeof(v)));
	else if (rc == -FB_EIO)
		LOG_W(lg, "usb: %s %s: %s: %s: %s", what, n, attr, fb_strerror((int)rc), strerror(sys));
	else
		LOG_W(lg, "usb: %s %s: %s: %s", what, n, attr, fb_strerror((int)rc));
}

/* Reads the device NAME into d. Returns 0, 1 when NAME is no device (no
 * idProduct), or -1 when it is to be skipped (logged). */
static int read_dev(int fd, const char *name, struct usb_dev *d, const struct fb_log *lg)
{
	char buf[160];
	ssize_t n = read_at(fd, name, "idProduct", buf, sizeof(buf));
	size_t b, e;

	memset(d, 0, sizeof(*d));
	if (n == -FB_ENOENT)
		return 1;
	if (strlen(name) >= sizeof(d->name)) {
		warn_attr(lg, "skipping device", name, "name", -FB_E2BIG, NULL);
		return -1;
	}
	if (n < 0 || usb_hex_norm_(buf, (size_t)n, 4, d->product) < 0) {
		warn_attr(lg, "skipping device", name, "idProduct", n, buf);
		return -1;
	}
	n = read_at(fd, name, "idVendor", buf, sizeof(buf));
	if (n < 0 || usb_hex_norm_(buf, (size_t)n, 4, d->vendor) < 0) {
		warn_attr(lg, "skipping device", name, "idVendor", n, buf);
		return -1;
	}
	/* NFD emits a device whose class it cannot read, without a class */
	n = read_at(fd, name, "bDeviceClass", buf, sizeof(buf));
	if (n >= 0 && usb_hex_norm_(buf, (size_t)n, 2, d->cls) < 0) {
		warn_attr(lg, "skipping device", name, "bDeviceClass", n, buf);
		return -1;
	}
	if (n < 0)
		d->cls[0] = '\0';
	strcpy(d->name, name);
	n = read_at(fd, name, "serial", d->serial, sizeof(d->serial));
	if (n < 0) {
		if (n != -FB_ENOENT)
			warn_attr(lg, "device", name, "serial", n, NULL);
		d->serial[0] = '\0';
		return 0;
	}
	/* trimmed like upstream's strings.TrimSpace; empty counts as absent */
	for (b = 0; isspace((unsigned char)d->serial[b]); b++)
		;
	for (e = (size_t)n; e > b && isspace((unsigned char)d->serial[e - 1]); e--)
		;
	memmove(d->serial, d->serial + b, e - b);
	d->serial[e - b] = '\0';
	d->has_serial = e > b;
	return 0;
}

static void read_iface(int fd, const char *name, struct usb_list *out, const struct fb_log *lg)
{
	char owner[sizeof(out->dev[0].name)], buf[32], cls[3];
	struct usb_dev *d;
	ssize_t n;

	if (usb_iface_owner_(name, owner, sizeof(owner)) < 0 ||
	    !(d = bsearch(owner, out->dev, out->n, sizeof(*out->dev), dev_name_cmp)))
		return;
	n = read_at(fd, name, "bInterfaceClass", buf, sizeof(buf));
	if (n == -FB_ENOENT) /* upstream's glob would not match it either */
		return;
	if (n < 0 || usb_hex_norm_(buf, (size_t)n, 2, cls) < 0) {
		warn_attr(lg, "interface", name, "bInterfaceClass", n, buf);
		d->iface_err = 1;
		return;
	}
	if (d->niface == USB_MAX_IFACES) {
		warn_attr(lg, "interface", name, "bInterfaceClass", -FB_E2BIG, NULL);
		d->iface_err = 1;
		return;
	}
	memcpy(d->iface_cls[d->niface++], cls, sizeof(cls));
}

int usb_scan(const struct hostfs *h, struct usb_list *out, const struct fb_log *lg,
	     struct fb_errinfo *ei)
{
	static const char rel[] = "sys/bus/usb/devices";
	struct names nm = { .off = NULL };
	const char **sorted = NULL;
	char path[PATH_MAX];
	DIR *dir;
	int fd, rc;

	out->n = 0;
	fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY);
	if (fd == -FB_ENOENT)
		return 0;
	if (fd < 0 || !(dir = fdopendir(fd))) {
		int sys = errno;

		if (fd >= 0)
			close(fd);
		hostfs_path(h, rel, path, sizeof(path));
		return fb_errinfo_set(ei, fd == -FB_E2BIG ? FB_E2BIG : FB_EIO, sys, path, NULL);
	}
	fd = dirfd(dir);
	rc = names_list(dir, &nm);
	if (rc == 0 && nm.n && !(sorted = malloc(nm.n * sizeof(*sorted))))
		rc = -FB_ENOMEM;
	if (rc < 0) {
		hostfs_path(h, rel, path, sizeof(path));
		fb_errinfo_set(ei, -rc, rc == -FB_EIO ? errno : 0, path, NULL);
		goto out;
	}
	for (size_t i = 0; i < nm.n; i++)
		sorted[i] = nm.text.p + nm.off[i];
	if (nm.n)
		qsort(sorted, nm.n, sizeof(*sorted), str_cmp);
	/* devices first, in name order, so interfaces can find theirs by bsearch */
	for (size_t i = 0; i < nm.n; i++) {
		if (strchr(sorted[i], ':'))
			continue;
		if (ARRAY_GROW(out->dev, out->cap, out->n + 1) < 0) {
			rc = fb_errinfo_set(ei, FB_ENOMEM, 0, rel, NULL);
			goto out;
		}
		if (read_dev(fd, sorted[i], &out->dev[out->n], lg) == 0)
			out->n++;
	}
	for (size_t i = 0; i < nm.n; i++)
		if (strchr(sorted[i], ':'))
			read_iface(fd, sorted[i], out, lg);
out:
	if (rc < 0)
		out->n = 0;
	free(sorted);
	free(nm.off);
	buf_free(&nm.text);
	closedir(dir);
	return rc;
}
