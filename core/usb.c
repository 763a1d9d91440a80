/* usb: <host>/sys/bus/usb/devices as upstream NFD sees it (source/usb: the
 * class, vendor, device and serial of every device, the class taken per
 * interface for a device of class 00), on a syscall budget: about 8 per
 * device on a scripts/gen-usb-fixture tree, where the floor of reading each
 * entry's uevent once (tests/tools/uevfloor) is 8 too; tests/syscalls.sh
 * fails the build above 10.
 *
 * Where the syscalls go:
 *  - one listing of the bus directory (sysfs_dir_each: getdents64 alone):
 *    the entries without ':' are the devices, "DEV:CFG.IF" (or "BUS-0:CFG.IF"
 *    for root hub usbBUS) their interfaces. Upstream globs
 *    DEVDIR/x/bInterfaceClass per device instead; the interfaces are the same
 *    directories, listed as siblings in the bus directory;
 *  - a device's uevent, one open+read+close, gives idVendor and idProduct
 *    (PRODUCT, hex without leading zeros) and bDeviceClass (TYPE, decimal) at
 *    once. The kernel writes both keys into every usb_device's uevent
 *    (usb_uevent), or nothing at all when the device is going away, so there
 *    is no fallback to the single files: a uevent that cannot be read or
 *    lacks a key skips the device with a warning naming it and the key;
 *  - serial, the one field uevent lacks: one open when absent, three
 *    syscalls when present;
 *  - interfaces only of devices of class 00, the only ones whose interfaces
 *    NFD looks at: the interface's uevent (INTERFACE, decimal);
 *  - files are opened as "NAME/file" relative to the bus directory, the
 *    kernel following the NAME link, as core/pci does.
 * Reads are core/attr's without ATTR_REGULAR, as core/pci's: bounded (a
 * value that fills the buffer is an error) and O_NONBLOCK, so a FIFO or a
 * device node planted in a tree reads as empty, fails or fills the buffer,
 * and the device is skipped with a warning. The fstat that ATTR_REGULAR adds
 * comes after the open, so it would guard nothing more, at a cost of one
 * syscall a file (2.6 a device). */
#include "usb.h"

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
#include <unistd.h>

#define USB_WARN(lg, ...) \
	do { \
		if (lg) \
			LOG_W(lg, __VA_ARGS__); \
	} while (0)

/* A USB uevent is about 150 bytes (a device) or 200 (an interface, with
 * its MODALIAS). */
#define UEVENT_MAX 1024

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

/* The value of key in uevent text s[0..len): the first line "key=...".
 * Returns it (not NUL-terminated, *vlen bytes), or NULL. */
static const char *uev_val(const char *s, size_t len, const char *key, size_t *vlen)
{
	const char *p = s, *end = s + len;
	size_t klen = strlen(key);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - p) > klen && p[klen] == '=' && memcmp(p, key, klen) == 0) {
			*vlen = (size_t)(eol - p) - klen - 1;
			return p + klen + 1;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return NULL;
}

static int digit(int c, int hex)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (hex && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (hex && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "A/B/C", the kernel's "%x/%x/%x" (hex: each 1 to 4 digits) or
 * "%d/%d/%d" (each 0 to 255, 1 to 3 digits), into v. Returns 0 or -1. */
static int triple(const char *s, size_t len, int hex, unsigned v[3])
{
	const char *p = s, *end = s + len;
	unsigned maxdig = hex ? 4 : 3, max = hex ? 0xffff : 255;

	for (int i = 0; i < 3; i++) {
		unsigned n = 0;

		v[i] = 0;
		for (; p < end && *p != '/'; p++, n++) {
			int d = digit((unsigned char)*p, hex);

			if (d < 0 || n == maxdig)
				return -1;
			v[i] = v[i] * (hex ? 16 : 10) + (unsigned)d;
		}
		if (n == 0 || v[i] > max)
			return -1;
		if (i < 2) {
			if (p == end)
				return -1;
			p++;
		}
	}
	return p == end ? 0 : -1;
}

/* v as ndig lower-case hex digits and a NUL */
static void hex_out(unsigned v, unsigned ndig, char *out)
{
	for (unsigned i = 0; i < ndig; i++)
		out[i] = "0123456789abcdef"[(v >> (4 * (ndig - 1 - i))) & 15];
	out[ndig] = '\0';
}

unsigned usb_parse_uevent_(const char *s, size_t len, struct usb_uevent *u)
{
	unsigned found = 0, seen = 0, v[3];
	const char *val;
	size_t n;

	if ((val = uev_val(s, len, "DEVTYPE", &n))) {
		seen |= USB_UEV_DEVICE | USB_UEV_INTERFACE;
		if (n == 10 && memcmp(val, "usb_device", 10) == 0)
			found |= USB_UEV_DEVICE;
		else if (n == 13 && memcmp(val, "usb_interface", 13) == 0)
			found |= USB_UEV_INTERFACE;
	}
	if ((val = uev_val(s, len, "PRODUCT", &n))) {
		seen |= USB_UEV_PRODUCT;
		if (triple(val, n, 1, v) == 0) {
			hex_out(v[0], 4, u->vendor);
			hex_out(v[1], 4, u->product);
			found |= USB_UEV_PRODUCT;
		}
	}
	if ((val = uev_val(s, len, "TYPE", &n))) {
		seen |= USB_UEV_TYPE;
		if (triple(val, n, 0, v) == 0) {
			hex_out(v[0], 2, u->cls);
			found |= USB_UEV_TYPE;
		}
	}
	if ((val = uev_val(s, len, "INTERFACE", &n))) {
		seen |= USB_UEV_IFCLASS;
		if (triple(val, n, 0, v) == 0) {
			hex_out(v[0], 2, u->iface_cls);
			found |= USB_UEV_IFCLASS;
		}
	}
	u->seen = seen;
	return found;
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

static int names_one(void *ctx, const char *name, unsigned char type)
{
	(void)type;
	return names_add(ctx, name);
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

/* Reads NAME/attr into buf (one trailing '\n' removed). Returns
 * attr_read's result. */
static ssize_t read_at(int fd, const char *name, const char *attr, char *buf, size_t size)
{
	char p[128];

	if (snprintf(p, sizeof(p), "%s/%s", name, attr) >= (int)sizeof(p))
		return -FB_E2BIG;
	return attr_read(fd, p, buf, size, 0);
}

/* Logs a problem with NAME/attr: the read error (with errno's text for
 * -FB_EIO). */
static void warn_attr(const struct fb_log *lg, const char *what, const char *name,
		      const char *attr, ssize_t rc)
{
	char n[64];
	int sys = errno;

	if (!lg)
		return;
	log_escape(name, strlen(name), n, sizeof(n));
	if (rc == -FB_EIO)
		LOG_W(lg, "usb: %s %s: %s: %s: %s", what, n, attr, fb_strerror((int)rc), strerror(sys));
	else
		LOG_W(lg, "usb: %s %s: %s: %s", what, n, attr, fb_strerror((int)rc));
}

/* Logs what NAME's uevent, s[0..len), lacks: the first key of want
 * missing or malformed (its value escaped: it came from a file). got and
 * seen are what usb_parse_uevent_ gave. */
static void warn_uevent(const struct fb_log *lg, const char *what, const char *name,
			const char *s, size_t len, unsigned got, unsigned seen, unsigned want)
{
	static const struct {
		unsigned bit;
		const char *key;
	} keys[] = {
		{ USB_UEV_DEVICE, "DEVTYPE" },
		{ USB_UEV_PRODUCT, "PRODUCT" },
		{ USB_UEV_TYPE, "TYPE" },
		{ USB_UEV_IFCLASS, "INTERFACE" },
	};
	char n[64], v[96];

	if (!lg)
		return;
	log_escape(name, strlen(name), n, sizeof(n));
	if (len == 0) {
		LOG_W(lg, "usb: %s %s: uevent: empty", what, n);
		return;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *val;
		size_t vlen;

		if (!(want & keys[i].bit) || (got & keys[i].bit))
			continue;
		if (!(seen & keys[i].bit) || !(val = uev_val(s, len, keys[i].key, &vlen)))
			LOG_W(lg, "usb: %s %s: uevent: no %s", what, n, keys[i].key);
		else
			LOG_W(lg, "usb: %s %s: uevent: malformed %s \"%s\"", what, n, keys[i].key,
			      log_escape(val, vlen, v, sizeof(v)));
		return;
	}
}

/* Reads the device NAME into d. Returns 0, 1 when NAME is no device (its
 * uevent names another DEVTYPE), or -1 when it is to be skipped (logged). */
static int read_dev(int fd, const char *name, struct usb_dev *d, const struct fb_log *lg)
{
	static const unsigned want = USB_UEV_DEVICE | USB_UEV_PRODUCT | USB_UEV_TYPE;
	char buf[UEVENT_MAX];
	struct usb_uevent u;
	unsigned got;
	ssize_t n;
	size_t b, e;

	memset(d, 0, sizeof(*d));
	if (strlen(name) >= sizeof(d->name)) {
		warn_attr(lg, "skipping device", name, "name", -FB_E2BIG);
		return -1;
	}
	n = read_at(fd, name, "uevent", buf, sizeof(buf));
	if (n < 0) {
		warn_attr(lg, "skipping device", name, "uevent", n);
		return -1;
	}
	got = usb_parse_uevent_(buf, (size_t)n, &u);
	if (!(got & USB_UEV_DEVICE) && (u.seen & USB_UEV_DEVICE))
		return 1;
	if ((got & want) != want) {
		warn_uevent(lg, "skipping device", name, buf, (size_t)n, got, u.seen, want);
		return -1;
	}
	strcpy(d->name, name);
	memcpy(d->vendor, u.vendor, sizeof(d->vendor));
	memcpy(d->product, u.product, sizeof(d->product));
	memcpy(d->cls, u.cls, sizeof(d->cls));
	n = read_at(fd, name, "serial", d->serial, sizeof(d->serial));
	if (n < 0) {
		if (n != -FB_ENOENT)
			warn_attr(lg, "device", name, "serial", n);
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
	char owner[sizeof(out->dev[0].name)], buf[UEVENT_MAX];
	struct usb_uevent u;
	struct usb_dev *d;
	unsigned got;
	ssize_t n;

	if (usb_iface_owner_(name, owner, sizeof(owner)) < 0 ||
	    !(d = bsearch(owner, out->dev, out->n, sizeof(*out->dev), dev_name_cmp)))
		return;
	/* NFD looks at the interfaces of class 00 devices only */
	if (strcmp(d->cls, "00") != 0)
		return;
	n = read_at(fd, name, "uevent", buf, sizeof(buf));
	if (n < 0) {
		warn_attr(lg, "interface", name, "uevent", n);
		d->iface_err = 1;
		return;
	}
	got = usb_parse_uevent_(buf, (size_t)n, &u);
	if (!(got & USB_UEV_IFCLASS)) {
		warn_uevent(lg, "interface", name, buf, (size_t)n, got, u.seen, USB_UEV_IFCLASS);
		d->iface_err = 1;
		return;
	}
	if (d->niface == USB_MAX_IFACES) {
		char e[64];

		if (lg)
			LOG_W(lg, "usb: interface %s: more than %d interfaces", log_escape(name, strlen(name), e, sizeof(e)),
			      USB_MAX_IFACES);
		d->iface_err = 1;
		return;
	}
	memcpy(d->iface_cls[d->niface++], u.iface_cls, sizeof(u.iface_cls));
}

int usb_scan(const struct hostfs *h, struct usb_list *out, const struct fb_log *lg,
	     struct fb_errinfo *ei)
{
	static const char rel[] = "sys/bus/usb/devices";
	struct names nm = { .off = NULL };
	const char **sorted = NULL;
	char path[PATH_MAX];
	int fd, rc;

	out->n = 0;
	fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY);
	if (fd == -FB_ENOENT)
		return 0;
	if (fd < 0) {
		int sys = errno;

		hostfs_path(h, rel, path, sizeof(path));
		return fb_errinfo_set(ei, fd == -FB_E2BIG ? FB_E2BIG : FB_EIO, sys, path, NULL);
	}
	rc = sysfs_dir_each(fd, names_one, &nm);
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
	close(fd);
	return rc;
}
