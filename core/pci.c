/* pci: <host>/sys/bus/pci/devices, read the way pciutils' lib/sysfs.c does
 * (the root is a parameter, only the fields asked for, bounded reads), on a
 * syscall budget: the NFD field set costs 5 syscalls per device (4 for a
 * bridge), plus 6 per IOMMU group, 2 per SR-IOV physical function and about
 * 14 per Intel IOMMU unit; with 500 devices in 366 groups and 22 units that
 * is 10.32 each (strace -c of tests/tools/pcibench -f nfd, less an empty
 * tree, on a scripts/gen-pci-fixture tree; 7.80 when groups and units were
 * read through their links: going beneath costs 3 per group, 6 per unit).
 *
 * Where the syscalls go, per device:
 *  - uevent, one open+read+close, gives class, vendor:device,
 *    subsystem_vendor:subsystem_device and the driver at once; the single
 *    files are read only when uevent lacks a field or has it malformed;
 *  - attributes are opened by the path "ADDR/attr" relative to the bus
 *    directory, the kernel following the ADDR symlink, instead of opening
 *    each device directory first: that would add an open and a close;
 *  - sriov_totalvfs is one probe, and none for PCI-to-PCI bridges (class
 *    0604xx), which the kernel never gives SR-IOV (sriov_init accepts only
 *    endpoints);
 *  - iommu_group is one readlink; the group's type is read once per group,
 *    from <host>/sys/kernel/iommu_groups/N, where the kernel's link points
 *    (the group directory opened with hostfs_open_beneath: a planted link
 *    cannot take the read out of the host's sys);
 *  - iommu/intel-iommu/version is not probed per device: the Intel IOMMU
 *    units in <host>/sys/devices/virtual/iommu list their devices (the
 *    kernel makes a unit's devices/ADDR link and the device's "iommu" link
 *    together, in iommu_device_link), so one listing per unit serves all of
 *    them (each unit opened beneath that directory, as the groups);
 *  - upstream NFD's own test tree (testdata/source/pci/rootfs-1) has
 *    iommu_group/ and iommu/intel-iommu/ as plain directories holding the
 *    files: when iommu_group is a directory, not a link, both attributes are
 *    read from the device's own directories (resolved beneath it), as
 *    upstream's reader, which just opens ADDR/iommu_group/type and
 *    ADDR/iommu/intel-iommu/version, gets them there;
 *  - boot_vga is only probed for VGA-class devices, the only ones the kernel
 *    gives it to (pci_dev_attrs_are_visible: 0300xx and 0001xx). */
#include "pci.h"

#include "attr.h"
#include "buf.h"
#include "hostfs.h"
#include "sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCI_WARN(lg, ...) \
	do { \
		if (lg) \
			LOG_W(lg, __VA_ARGS__); \
	} while (0)
#define PCI_VLOG(lg, ...) \
	do { \
		if (lg) \
			LOG_V(lg, 2, __VA_ARGS__); \
	} while (0)

/* A PCI uevent is about 200 bytes: DRIVER, PCI_CLASS, PCI_ID, PCI_SUBSYS_ID,
 * PCI_SLOT_NAME, MODALIAS. */
#define UEVENT_MAX 1024

/* an IOMMU group's type, read by the group's first device */
struct grp_type {
	char grp[12];
	char type[24];
};

/* per-scan state: the bus directory and the group types read so far */
struct scan {
	int fd;                  /* <host>/sys/bus/pci/devices */
	int gfd;                 /* <host>/sys/kernel/iommu_groups: -1 unopened, -2 absent */
	const struct hostfs *h;
	unsigned fields;
	const struct fb_log *lg;
	struct grp_type *grp;    /* owned */
	size_t ngrp, grpcap;
};

void pci_list_init(struct pci_list *l)
{
	l->dev = NULL;
	l->n = l->cap = 0;
}

void pci_list_free(struct pci_list *l)
{
	free(l->dev);
	pci_list_init(l);
}


int pci_hexval_(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int pci_hex_norm_(const char *s, size_t len, unsigned ndig, char *out)
{
	size_t i = 0, start, n, j;

	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	start = i;
	while (i < len && pci_hexval_((unsigned char)s[i]) >= 0)
		i++;
	n = i - start;
	if (n == 0 || n > ndig || ndig > 8)
		return -FB_EINVAL;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
		i++;
	if (i != len)
		return -FB_EINVAL;
	for (j = 0; j < ndig - n; j++)
		out[j] = '0';
	for (i = 0; i < n; i++)
		out[j + i] = (char)tolower((unsigned char)s[start + i]);
	out[ndig] = '\0';
	return 0;
}

/* "VVVV:DDDD" (uevent's PCI_ID and PCI_SUBSYS_ID) into two 4-digit fields. */
static int hex_pair(const char *s, size_t len, char *a, char *b)
{
	const char *colon = memchr(s, ':', len);
	char ta[5], tb[5];

	if (!colon || pci_hex_norm_(s, (size_t)(colon - s), 4, ta) < 0 ||
	    pci_hex_norm_(colon + 1, len - (size_t)(colon - s) - 1, 4, tb) < 0)
		return -FB_EINVAL;
	memcpy(a, ta, sizeof(ta));
	memcpy(b, tb, sizeof(tb));
	return 0;
}

/* A driver name is a link basename: no '/', printable, and it fits. */
static int driver_name(const char *s, size_t len, char *out, size_t size)
{
	if (len == 0 || len >= size)
		return -FB_EINVAL;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '/' || !isgraph((unsigned char)s[i]))
			return -FB_EINVAL;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

unsigned pci_parse_uevent_(const char *s, size_t len, struct pci_dev *d)
{
	const char *p = s, *end = s + len;
	unsigned found = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end, *eq = memchr(p, '=', (size_t)(eol - p));
		size_t klen, vlen;
		const char *v;

		if (eq) {
			klen = (size_t)(eq - p);
			v = eq + 1;
			vlen = (size_t)(eol - v);
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(p, k, klen) == 0)
			if (KEY("PCI_CLASS")) {
				if (pci_hex_norm_(v, vlen, 6, d->cls) == 0)
					found |= PCI_UEV_CLASS;
			} else if (KEY("PCI_ID")) {
				if (hex_pair(v, vlen, d->vendor, d->device) == 0)
					found |= PCI_UEV_ID;
			} else if (KEY("PCI_SUBSYS_ID")) {
				if (hex_pair(v, vlen, d->subsystem_vendor, d->subsystem_device) == 0)
					found |= PCI_UEV_SUBSYS;
			} else if (KEY("DRIVER")) {
				if (driver_name(v, vlen, d->driver, sizeof(d->driver)) == 0)
					found |= PCI_UEV_DRIVER;
			}
#undef KEY
		}
		p = eol + 1;
	}
	return found;
}

int pci_uevent_msg_is_pci(const char *buf, size_t len)
{
	static const char want[] = "SUBSYSTEM=pci";
	const char *end = buf + len, *p = memchr(buf, '\0', len);

	/* the header "ACTION@DEVPATH" is skipped: a DEVPATH can hold anything */
	if (!p)
		return 0;
	for (p++; p < end;) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t n = (size_t)((nul ? nul : end) - p);

		if (n == sizeof(want) - 1 && memcmp(p, want, n) == 0)
			return 1;
		if (!nul)
			break;
		p = nul + 1;
	}
	return 0;
}

/* "DOMAIN:BB:DD.F" (domain 1 to 8 hex digits) as one number. */
static int addr_key(const char *s, uint64_t *key)
{
	uint64_t dom = 0;
	int n = 0, b0, b1, d0, d1;

	while (n < 8 && pci_hexval_((unsigned char)s[n]) >= 0)
		dom = dom << 4 | (uint64_t)pci_hexval_((unsigned char)s[n++]);
	if (n == 0 || s[n] != ':')
		return -FB_EINVAL;
	s += n + 1;
	b0 = pci_hexval_((unsigned char)s[0]);
	b1 = b0 < 0 ? -1 : pci_hexval_((unsigned char)s[1]);
	d0 = b1 < 0 || s[2] != ':' ? -1 : pci_hexval_((unsigned char)s[3]);
	d1 = d0 < 0 ? -1 : pci_hexval_((unsigned char)s[4]);
	if (d1 < 0 || s[5] != '.' || s[6] < '0' || s[6] > '7' || s[7])
		return -FB_EINVAL;
	*key = dom << 20 | (uint64_t)(b0 << 4 | b1) << 12 | (uint64_t)(d0 << 4 | d1) << 4 |
	       (uint64_t)(s[6] - '0');
	return 0;
}

int pci_addr_cmp_(const char *a, const char *b)
{
	uint64_t ka = 0, kb = 0;
	int va = addr_key(a, &ka) == 0, vb = addr_key(b, &kb) == 0;

	if (va != vb)
		return va ? -1 : 1;
	if (va && ka != kb)
		return ka < kb ? -1 : 1;
	return strcmp(a, b);
}

static int dev_cmp(const void *a, const void *b)
{
	return pci_addr_cmp_(((const struct pci_dev *)a)->addr, ((const struct pci_dev *)b)->addr);
}

/* "ADDR/name" into buf; both parts are bounded well below its size. */
static const char *at(char *buf, size_t size, const struct pci_dev *d, const char *name)
{
	snprintf(buf, size, "%s/%s", d->addr, name);
	return buf;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* Logs why a device is skipped: the attribute and the read error, or the
 * malformed value (escaped: it came from a file). */
static void skip_warn(const struct fb_log *lg, const struct pci_dev *d, const char *attr,
		      ssize_t rc, int sys, const char *val)
{
	char addr[64], v[96];

	if (!lg)
		return;
	log_escape(d->addr, strlen(d->addr), addr, sizeof(addr));
	if (rc >= 0)
		LOG_W(lg, "pci: skipping device %s: %s: malformed value \"%s\"", addr, attr,
		      log_escape(val, strlen(val), v, sizeof(v)));
	else if (rc == -FB_EIO)
		LOG_W(lg, "pci: skipping device %s: %s: %s: %s", addr, attr, fb_strerror((int)rc),
		      strerror(sys));
	else
		LOG_W(lg, "pci: skipping device %s: %s: %s", addr, attr, fb_strerror((int)rc));
}

/* The mandatory five, from uevent where it had them. Returns 0, or -1 when
 * the device is to be skipped (logged). */
static int read_ids(struct scan *sc, struct pci_dev *d)
{
	static const struct {
		const char *name;
		size_t off;
		unsigned ndig, bit;
	} ids[] = {
		{ "class", offsetof(struct pci_dev, cls), 6, PCI_UEV_CLASS },
		{ "vendor", offsetof(struct pci_dev, vendor), 4, PCI_UEV_ID },
		{ "device", offsetof(struct pci_dev, device), 4, PCI_UEV_ID },
		{ "subsystem_vendor", offsetof(struct pci_dev, subsystem_vendor), 4, PCI_UEV_SUBSYS },
		{ "subsystem_device", offsetof(struct pci_dev, subsystem_device), 4, PCI_UEV_SUBSYS },
	};
	char p[64], buf[UEVENT_MAX];
	ssize_t n = attr_read(sc->fd, at(p, sizeof(p), d, "uevent"), buf, sizeof(buf), 0);
	unsigned have = 0;

	if (n >= 0)
		have = pci_parse_uevent_(buf, (size_t)n, d);
	else
		PCI_VLOG(sc->lg, "pci: %s: %s: %s", p, fb_strerror((int)n), "reading the attribute files");
	/* no uevent: the driver comes from the link, if asked for */
	if (n < 0 && (sc->fields & PCI_DRIVER) &&
	    sysfs_link_base(sc->fd, at(p, sizeof(p), d, "driver"), d->driver, sizeof(d->driver)) < 0)
		d->driver[0] = '\0';
	if (!(sc->fields & PCI_DRIVER))
		d->driver[0] = '\0';
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		if (have & ids[i].bit)
			continue;
		n = attr_read(sc->fd, at(p, sizeof(p), d, ids[i].name), buf, 64, 0);
		if (n < 0) {
			skip_warn(sc->lg, d, ids[i].name, n, errno, NULL);
			return -1;
		}
		if (pci_hex_norm_(buf, (size_t)n, ids[i].ndig, (char *)d + ids[i].off) < 0) {
			skip_warn(sc->lg, d, ids[i].name, 0, 0, buf);
			return -1;
		}
	}
	return 0;
}

/* An optional attribute into buf, "" when absent or unusable. */
static void read_opt(struct scan *sc, const struct pci_dev *d, const char *name, char *buf,
		     size_t size)
{
	char p[64];
	ssize_t n = attr_read(sc->fd, at(p, sizeof(p), d, name), buf, size, 0);

	if (n < 0) {
		if (n != -FB_ENOENT)
			PCI_VLOG(sc->lg, "pci: %s: %s", p, fb_strerror((int)n));
		buf[0] = '\0';
	}
}

/* name/file below the directory dfd into buf ("" when absent or unusable):
 * name is resolved with hostfs_open_beneath, so no link in it leads out of
 * dfd, and file may not be a link. */
static void read_beneath(const struct scan *sc, int dfd, const char *name, const char *file,
			 char *buf, size_t size)
{
	int fd = hostfs_open_beneath(dfd, name, O_RDONLY | O_DIRECTORY, NULL, 0);
	ssize_t n = fd;

	if (fd >= 0) {
		n = attr_read(fd, file, buf, size, ATTR_NOFOLLOW);
		close(fd);
	}
	if (n < 0) {
		if (n != -FB_ENOENT)
			PCI_VLOG(sc->lg, "pci: %s/%s: %s", name, file, fb_strerror((int)n));
		buf[0] = '\0';
	}
}

/* The type of group grp (digits), from sys/kernel/iommu_groups/<grp>/type. */
static void read_group_type(struct scan *sc, const char *grp, char *buf, size_t size)
{
	if (sc->gfd == -1) {
		sc->gfd = hostfs_open(sc->h, "sys/kernel/iommu_groups", O_RDONLY | O_DIRECTORY);
		if (sc->gfd < 0) {
			PCI_VLOG(sc->lg, "pci: sys/kernel/iommu_groups: %s", fb_strerror(sc->gfd));
			sc->gfd = -2;
		}
	}
	if (sc->gfd < 0) {
		buf[0] = '\0';
		return;
	}
	read_beneath(sc, sc->gfd, grp, "type", buf, size);
}

/* Upstream's test tree: iommu_group/type and iommu/intel-iommu/version in
 * plain directories of the device's own. */
static void read_iommu_dirs(struct scan *sc, struct pci_dev *d)
{
	int dfd = openat(sc->fd, d->addr, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	read_beneath(sc, dfd, "iommu_group", "type", d->iommu_group_type, sizeof(d->iommu_group_type));
	read_beneath(sc, dfd, "iommu/intel-iommu", "version", d->iommu_version, sizeof(d->iommu_version));
	close(dfd);
}

static void read_iommu(struct scan *sc, struct pci_dev *d)
{
	char p[64];
	ssize_t n = sysfs_link_base(sc->fd, at(p, sizeof(p), d, "iommu_group"), d->iommu_group,
				    sizeof(d->iommu_group));
	size_t i;

	if (n == -FB_EIO && errno == EINVAL) { /* there, and not a link */
		d->iommu_group[0] = '\0';
		read_iommu_dirs(sc, d);
		return;
	}
	if (n < 0 || !all_digits(d->iommu_group)) {
		if (n != -FB_ENOENT)
			PCI_VLOG(sc->lg, "pci: %s: not a group", p);
		d->iommu_group[0] = '\0';
		return;
	}
	/* the group's type: the first member reads it */
	for (i = sc->ngrp; i-- > 0;)
		if (strcmp(sc->grp[i].grp, d->iommu_group) == 0)
			break;
	if (i != SIZE_MAX) {
		memcpy(d->iommu_group_type, sc->grp[i].type, sizeof(d->iommu_group_type));
	} else {
		read_group_type(sc, d->iommu_group, d->iommu_group_type, sizeof(d->iommu_group_type));
		/* without room the next member just reads it again */
		if (ARRAY_GROW(sc->grp, sc->grpcap, sc->ngrp + 1) == 0) {
			memcpy(sc->grp[sc->ngrp].grp, d->iommu_group, sizeof(d->iommu_group));
			memcpy(sc->grp[sc->ngrp].type, d->iommu_group_type, sizeof(d->iommu_group_type));
			sc->ngrp++;
		}
	}
}

static int key_cmp(const void *key, const void *d)
{
	return pci_addr_cmp_(key, ((const struct pci_dev *)d)->addr);
}

/* Gives iommu/intel-iommu/version to the devices each Intel IOMMU unit
 * lists (out is sorted). The kernel puts every VT-d unit, parentless, in
 * <host>/sys/devices/virtual/iommu (alloc_iommu), where the class links and
 * the devices' "iommu" links point; other units (AMD, ARM SMMU) sit under
 * their own devices and have no intel-iommu directory. Each unit is opened
 * beneath that directory; a missing one is no Intel IOMMU. */
struct units_ctx {
	const struct scan *sc;
	int fd;                 /* sys/devices/virtual/iommu */
	struct pci_list *out;
	char ver[sizeof(((struct pci_dev *)0)->iommu_version)];
};

static int unit_dev(void *ctx, const char *name, unsigned char type)
{
	struct units_ctx *u = ctx;
	struct pci_dev *d = bsearch(name, u->out->dev, u->out->n, sizeof(*u->out->dev), key_cmp);

	(void)type;
	if (d)
		memcpy(d->iommu_version, u->ver, sizeof(u->ver));
	return 0;
}

static int unit(void *ctx, const char *name, unsigned char type)
{
	struct units_ctx *u = ctx;
	int ufd, dfd;

	(void)type;
	ufd = hostfs_open_beneath(u->fd, name, O_RDONLY | O_DIRECTORY, NULL, 0);
	if (ufd < 0) {
		PCI_VLOG(u->sc->lg, "pci: iommu unit %s: %s", name, fb_strerror(ufd));
		return 0;
	}
	read_beneath(u->sc, ufd, "intel-iommu", "version", u->ver, sizeof(u->ver));
	dfd = u->ver[0] ? hostfs_open_beneath(ufd, "devices", O_RDONLY | O_DIRECTORY, NULL, 0) : -1;
	if (dfd >= 0) {
		sysfs_dir_each(dfd, unit_dev, u);
		close(dfd);
	}
	close(ufd);
	return 0;
}

static void read_units(const struct hostfs *h, struct scan *sc, struct pci_list *out)
{
	struct units_ctx u = { .sc = sc, .out = out };

	u.fd = hostfs_open(h, "sys/devices/virtual/iommu", O_RDONLY | O_DIRECTORY);
	if (u.fd < 0) {
		if (u.fd != -FB_ENOENT)
			PCI_VLOG(sc->lg, "pci: sys/devices/virtual/iommu: %s", fb_strerror(u.fd));
		return;
	}
	sysfs_dir_each(u.fd, unit, &u);
	close(u.fd);
}

/* Reads one device. Returns 0, or -1 when it is to be skipped (logged). */
static int read_dev(struct scan *sc, struct pci_dev *d)
{
	char buf[32];

	d->numa_node = -1;
	d->boot_vga = -1;
	if (read_ids(sc, d) < 0)
		return -1;
	if ((sc->fields & PCI_SRIOV) && memcmp(d->cls, "0604", 4) != 0) {
		read_opt(sc, d, "sriov_totalvfs", d->sriov_totalvfs, sizeof(d->sriov_totalvfs));
		d->has_sriov = all_digits(d->sriov_totalvfs);
		if (!d->has_sriov)
			d->sriov_totalvfs[0] = '\0';
	}
	if (sc->fields & PCI_IOMMU)
		read_iommu(sc, d);
	if (sc->fields & PCI_NUMA) {
		read_opt(sc, d, "numa_node", buf, sizeof(buf));
		if (strcmp(buf, "-1") != 0 && all_digits(buf) && strlen(buf) < 6)
			d->numa_node = atoi(buf);
	}
	if ((sc->fields & PCI_BOOT_VGA) &&
	    (memcmp(d->cls, "0300", 4) == 0 || memcmp(d->cls, "0001", 4) == 0)) {
		read_opt(sc, d, "boot_vga", buf, sizeof(buf));
		if ((buf[0] == '0' || buf[0] == '1') && !buf[1])
			d->boot_vga = buf[0] - '0';
	}
	return 0;
}

struct list_ctx {
	struct scan *sc;
	struct pci_list *out;
};

static int list_one(void *ctx, const char *name, unsigned char type)
{
	struct list_ctx *lc = ctx;
	struct pci_list *out = lc->out;

	(void)type;
	if (strlen(name) >= sizeof(out->dev[0].addr)) {
		char v[64];

		PCI_WARN(lc->sc->lg, "pci: skipping \"%s\": not a PCI address",
			 log_escape(name, strlen(name), v, sizeof(v)));
		return 0;
	}
	if (ARRAY_GROW(out->dev, out->cap, out->n + 1) < 0)
		return -FB_ENOMEM;
	memset(&out->dev[out->n], 0, sizeof(out->dev[0]));
	strcpy(out->dev[out->n++].addr, name);
	return 0;
}

/* Lists the bus directory into out->dev (names only). */
static int list_dir(struct scan *sc, int fd, struct pci_list *out)
{
	struct list_ctx lc = { sc, out };

	return sysfs_dir_each(fd, list_one, &lc);
}

int pci_scan(const struct hostfs *h, unsigned fields, struct pci_list *out, const struct fb_log *lg,
	     struct fb_errinfo *ei)
{
	static const char rel[] = "sys/bus/pci/devices";
	struct scan sc = { 0 };
	char path[PATH_MAX];
	size_t keep = 0;
	int rc;

	out->n = 0;
	rc = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY);
	if (rc == -FB_ENOENT)
		return 0;
	if (rc < 0) {
		int sys = errno;

		hostfs_path(h, rel, path, sizeof(path));
		return fb_errinfo_set(ei, rc == -FB_E2BIG ? FB_E2BIG : FB_EIO, sys, path, NULL);
	}
	sc.fd = rc;
	sc.gfd = -1;
	sc.h = h;
	sc.fields = fields;
	sc.lg = lg;
	rc = list_dir(&sc, sc.fd, out);
	if (rc < 0) {
		hostfs_path(h, rel, path, sizeof(path));
		fb_errinfo_set(ei, -rc, rc == -FB_EIO ? errno : 0, path, NULL);
		out->n = 0;
		goto out;
	}
	if (out->n)
		qsort(out->dev, out->n, sizeof(out->dev[0]), dev_cmp);
	for (size_t i = 0; i < out->n; i++) {
		if (read_dev(&sc, &out->dev[i]) < 0)
			continue;
		if (keep != i)
			out->dev[keep] = out->dev[i];
		keep++;
	}
	out->n = keep;
	if (fields & PCI_IOMMU)
		read_units(h, &sc, out);
out:
	free(sc.grp);
	if (sc.gfd >= 0)
		close(sc.gfd);
	close(sc.fd);
	return rc;
}
