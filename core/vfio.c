#include "vfio_int.h"

#include "pci.h"
#include "sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- names -------------------------------------------------------------- */

/* n hex digits from s (exactly), value into *v. */
static int hexfield(const char *s, size_t n, unsigned long *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		int h = pci_hexval_((unsigned char)s[i]);

		if (h < 0)
			return -1;
		*v = *v * 16 + (unsigned long)h;
	}
	return 0;
}

int vfio_parse_addr(const char *s, char *out)
{
	const char *dot = strchr(s, '.'), *c2, *c1;
	unsigned long dom = 0, bus, dev, fn;
	size_t dlen = 4;

	if (!dot || dot[1] == '\0' || dot[2] != '\0' || dot - s < 5)
		return -FB_EINVAL;
	c2 = dot - 3;
	if (*c2 != ':' || hexfield(c2 + 1, 2, &dev) < 0 || hexfield(dot + 1, 1, &fn) < 0 || dev > 0x1f || fn > 7)
		return -FB_EINVAL;
	if (c2 - s == 2) { /* "BB:DD.F" */
		c1 = NULL;
		if (hexfield(s, 2, &bus) < 0)
			return -FB_EINVAL;
	} else {
		c1 = c2 - 3;
		if (c1 < s + 4 || *c1 != ':' || hexfield(c1 + 1, 2, &bus) < 0)
			return -FB_EINVAL;
		dlen = (size_t)(c1 - s);
		if (dlen > 8 || hexfield(s, dlen, &dom) < 0)
			return -FB_EINVAL;
	}
	/* the kernel's own spelling: "%04x:%02x:%02x.%d" */
	snprintf(out, VFIO_ADDR_MAX, "%04lx:%02lx:%02lx.%lx", dom, bus, dev, fn);
	return 0;
}

int vfio_valid_driver(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 63 || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
				   (name[0] >= '0' && name[0] <= '9')))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.' || c == '+'))
			return 0;
	}
	return 1;
}

int vfio_is_vfio(const char *driver)
{
	return strstr(driver, "vfio") != NULL;
}

/* ---- snapshot ----------------------------------------------------------- */

/* PCI-to-PCI bridges (0604, 0609 semi-transparent) and host bridges (0600):
 * left alone, vfio-pci does not take them. */
static int is_bridge(const struct vfio_fn *f)
{
	return strncmp(f->cls, "0604", 4) == 0 || strncmp(f->cls, "0609", 4) == 0 ||
	       strncmp(f->cls, "0600", 4) == 0;
}


struct members {
	struct vfio_snap *s;
	int in_group, linked;
	int overflow;
};

static struct vfio_fn *fn_find(struct vfio_snap *s, const char *addr)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->fn[i].addr, addr) == 0)
			return &s->fn[i];
	return NULL;
}

/* Adds addr (when it is a PCI address) with the flags of m. */
static int add_member(struct members *m, const char *name)
{
	char addr[VFIO_ADDR_MAX];
	struct vfio_fn *f;

	if (vfio_parse_addr(name, addr) < 0 || strcmp(addr, name) != 0)
		return 0; /* not a PCI function */
	if (!(f = fn_find(m->s, addr))) {
		if (m->s->n == VFIO_FN_MAX) {
			m->overflow = 1;
			return 0;
		}
		f = &m->s->fn[m->s->n++];
		memset(f, 0, sizeof(*f));
		snprintf(f->addr, sizeof(f->addr), "%s", addr);
		f->boot_vga = -1;
	}
	f->in_group |= m->in_group;
	f->linked |= m->linked;
	return 0;
}

static int group_entry(void *ctx, const char *name, unsigned char type)
{
	(void)type;
	return add_member(ctx, name);
}

static int link_entry(void *ctx, const char *name, unsigned char type)
{
	(void)type;
	if (strncmp(name, "consumer:pci:", 13) == 0)
		return add_member(ctx, name + 13);
	if (strncmp(name, "supplier:pci:", 13) == 0)
		return add_member(ctx, name + 13);
	return 0;
}

/* Reads driver and driver_override of the function directory fd. */
static int read_state(int fd, char *driver, char *override, const char *addr, struct fb_errinfo *ei)
{
	char what[128], ov[2 * VFIO_DRV_MAX];
	ssize_t n;

	n = sysfs_link_base(fd, "driver", driver, VFIO_DRV_MAX);
	if (n == -FB_ENOENT)
		driver[0] = '\0';
	else if (n < 0) {
		snprintf(what, sizeof(what), "%s/driver", addr);
		return fb_errinfo_set(ei, (int)-n, errno, what, NULL);
	}
	n = sysfs_read(fd, "driver_override", ov, sizeof(ov));
	if (n == -FB_ENOENT || (n >= 0 && strcmp(ov, "(null)") == 0))
		n = 0;
	else if (n >= VFIO_DRV_MAX)
		n = -FB_E2BIG;
	if (n < 0) {
		snprintf(what, sizeof(what), "%s/driver_override", addr);
		return fb_errinfo_set(ei, (int)-n, errno, what, NULL);
	}
	memcpy(override, ov, (size_t)n);
	override[n] = '\0';
	return 0;
}

/* Fills the attributes of f from its directory. A function that vanished
 * (a dangling group entry) gets *gone. */
static int read_fn(const struct hostfs *h, struct vfio_fn *f, int *gone, struct fb_errinfo *ei)
{
	char rel[96], buf[32];
	ssize_t n;
	int fd, rc;

	*gone = 0;
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", f->addr);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0) {
		if (fd == -FB_ENOENT) {
			*gone = 1;
			return 0;
		}
		return fb_errinfo_set(ei, -fd, errno, rel, NULL);
	}
	if ((n = sysfs_read(fd, "class", buf, sizeof(buf))) < 0 || pci_hex_norm_(buf, (size_t)n, 6, f->cls) < 0)
		f->cls[0] = '\0'; /* unknown class: never a bridge, never related */
	if ((n = sysfs_read(fd, "vendor", buf, sizeof(buf))) < 0 || pci_hex_norm_(buf, (size_t)n, 4, f->vendor) < 0)
		f->vendor[0] = '\0';
	if ((n = sysfs_read(fd, "device", buf, sizeof(buf))) < 0 || pci_hex_norm_(buf, (size_t)n, 4, f->device) < 0)
		f->device[0] = '\0';
	/* fail closed: a boot_vga we cannot read counts as the boot device */
	n = sysfs_read(fd, "boot_vga", buf, sizeof(buf));
	f->boot_vga = n == -FB_ENOENT ? -1 : n >= 0 && strcmp(buf, "0") == 0 ? 0 : 1;
	f->sriov_vfs = 0;
	if (sysfs_read(fd, "sriov_numvfs", buf, sizeof(buf)) >= 0 && strcmp(buf, "0") != 0)
		f->sriov_vfs = 1;
	f->no_group = sysfs_link_base(fd, "iommu_group", buf, sizeof(buf)) <= 0;
	rc = read_state(fd, f->driver, f->override, f->addr, ei);
	close(fd);
	return rc;
}

/* 1 when <host>/sys/bus/pci/drivers/<drv> exists. */
static int registered(const struct hostfs *h, const char *drv)
{
	char rel[128];
	int fd;

	snprintf(rel, sizeof(rel), "sys/bus/pci/drivers/%s", drv);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return 0;
	close(fd);
	return 1;
}

/* --to vfio: f->want is the best variant for f. modules.alias names the
 * module (underscores); the PCI driver of every in-tree variant is named
 * after its module (KBUILD_MODNAME), but vfio_pci's is "vfio-pci": a
 * registered driver of the name with '_' as '-' is taken when the module's
 * own name is not registered. */
static void choose_variant(const struct hostfs *h, struct vfio_fn *f)
{
	char rel[96], ma[128], mod[VFIO_DRV_MAX], dashed[VFIO_DRV_MAX];
	int fd;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", f->addr);
	ma[0] = '\0';
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) >= 0) {
		if (sysfs_read(fd, "modalias", ma, sizeof(ma)) < 0)
			ma[0] = '\0';
		close(fd);
	}
	if (!ma[0]) {
		snprintf(mod, sizeof(mod), "vfio-pci");
		snprintf(f->want_why, sizeof(f->want_why), "no modalias in sysfs for %s; vfio-pci", f->addr);
	} else {
		vfio_alias_best(h, ma, mod, f->want_why);
	}
	snprintf(f->want, sizeof(f->want), "%s", mod);
	f->want_loaded = registered(h, mod);
	if (!f->want_loaded) {
		snprintf(dashed, sizeof(dashed), "%s", mod);
		for (char *c = dashed; *c; c++)
			if (*c == '_')
				*c = '-';
		if (strcmp(dashed, mod) != 0 && registered(h, dashed)) {
			snprintf(f->want, sizeof(f->want), "%s", dashed);
			f->want_loaded = 1;
		}
	}
}

static int fn_cmp(const void *a, const void *b)
{
	return pci_addr_cmp_(((const struct vfio_fn *)a)->addr, ((const struct vfio_fn *)b)->addr);
}

int vfio_snapshot(const struct hostfs *h, const char *addr, const char *target, struct vfio_snap *s,
		  struct fb_errinfo *ei)
{
	struct members m = { .s = s };
	char rel[160], grp[32];
	ssize_t n;
	int fd, rc;

	memset(s, 0, sizeof(*s));
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	snprintf(s->target, sizeof(s->target), "%s", target);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return fb_errinfo_set(ei, -fd, errno, rel, NULL);
	n = sysfs_link_base(fd, "iommu_group", grp, sizeof(grp));
	if (n > 0 && n < (ssize_t)sizeof(s->group) && strspn(grp, "0123456789") == (size_t)n)
		memcpy(s->group, grp, (size_t)n + 1);
	m.in_group = 1;
	add_member(&m, addr);
	if (s->group[0]) {
		int gfd;

		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/iommu_group/devices", addr);
		if ((gfd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0) {
			close(fd);
			return fb_errinfo_set(ei, -gfd, errno, rel, NULL);
		}
		rc = sysfs_dir_each(gfd, group_entry, &m);
		close(gfd);
		if (rc < 0) {
			close(fd);
			return fb_errinfo_set(ei, -rc, errno, rel, NULL);
		}
	}
	m.in_group = 0;
	m.linked = 1;
	rc = sysfs_dir_each(fd, link_entry, &m);
	close(fd);
	if (rc < 0) {
		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
		return fb_errinfo_set(ei, -rc, errno, rel, NULL);
	}
	if (m.overflow) {
		snprintf(rel, sizeof(rel), "IOMMU group %s of %s", s->group, addr);
		return fb_errinfo_set(ei, FB_E2BIG, 0, rel, "more functions than we handle (32)");
	}
	/* the device itself is in its group even when the group dir lacks it */
	fn_find(s, addr)->in_group = 1;
	for (size_t i = 0; i < s->n;) {
		int gone;

		if ((rc = read_fn(h, &s->fn[i], &gone, ei)) < 0)
			return rc;
		if (gone && strcmp(s->fn[i].addr, addr) != 0) {
			memmove(&s->fn[i], &s->fn[i + 1], (s->n - i - 1) * sizeof(s->fn[0]));
			s->n--;
			continue;
		}
		if (gone) { /* the device went away under us */
			snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
			return fb_errinfo_set(ei, FB_ENOENT, ENOENT, rel, NULL);
		}
		i++;
	}
	qsort(s->fn, s->n, sizeof(s->fn[0]), fn_cmp);
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->fn[i].addr, addr) == 0) {
			s->dev = i;
			s->fn[i].is_device = 1;
		}
	vfio_busy_scan_(h, s);
	if (strcmp(target, VFIO_AUTO) == 0) {
		for (size_t i = 0; i < s->n; i++)
			if (i == s->dev || !is_bridge(&s->fn[i])) /* bridges never move */
				choose_variant(h, &s->fn[i]);
		s->target_loaded = s->fn[s->dev].want_loaded;
	} else if (strcmp(target, VFIO_DEFAULT) == 0) {
		s->target_loaded = 1;
	} else {
		int dfd;

		snprintf(rel, sizeof(rel), "sys/bus/pci/drivers/%s", target);
		if ((dfd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) >= 0) {
			s->target_loaded = 1;
			close(dfd);
		}
	}
	return 0;
}

int vfio_lock(const struct hostfs *h, const char *addr, long long timeout_ms, struct fb_errinfo *ei)
{
	char rel[128];
	struct timespec ts = { 0, 50 * 1000000L };
	long long waited = 0;
	int fd;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/iommu_group", addr);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) == -FB_ENOENT) {
		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
		fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY);
	}
	if (fd < 0)
		return fb_errinfo_set(ei, -fd, errno, rel, NULL);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int e = errno;

			close(fd);
			return fb_errinfo_set(ei, FB_EIO, e, rel, "flock");
		}
		if (waited >= timeout_ms) {
			close(fd);
			return fb_errinfo_set(ei, FB_ETIMEDOUT, 0, rel, "locked by another vfio-switch");
		}
		nanosleep(&ts, NULL);
		waited += 50;
	}
	return fd;
}

/* ---- plan --------------------------------------------------------------- */

/* Same domain:bus:device ("0000:65:00"), i.e. another function of the same card. */
static int same_slot(const char *a, const char *b)
{
	const char *da = strrchr(a, '.'), *db = strrchr(b, '.');

	return da && db && da - a == db - b && strncmp(a, b, (size_t)(da - a)) == 0;
}

static int related(const struct vfio_snap *s, const struct vfio_fn *f)
{
	const struct vfio_fn *d = &s->fn[s->dev];

	return f == d || same_slot(f->addr, d->addr) || f->linked ||
	       (f->cls[0] && d->cls[0] && strncmp(f->cls, d->cls, 2) == 0);
}

/* On target: for default, no override; for a driver, bound to it with no
 * other driver named in the override (a stale override would move it at the
 * next probe). */
static int at_target(const struct vfio_fn *f, const char *t)
{
	if (strcmp(t, VFIO_DEFAULT) == 0)
		return f->override[0] == '\0';
	return strcmp(f->driver, t) == 0 && (!f->override[0] || strcmp(f->override, t) == 0);
}

/* Drivers that keep a group viable for VFIO: the VFIO ones and pci-stub. */
static int viable_driver(const char *drv)
{
	return vfio_is_vfio(drv) || strcmp(drv, "pci-stub") == 0;
}

static void add_step(struct vfio_plan *p, enum vfio_step_kind k, int fn, const char *path, const char *value)
{
	struct vfio_step *st = &p->step[p->n++];

	st->kind = k;
	st->fn = fn;
	snprintf(st->path, sizeof(st->path), "%s", path ? path : "");
	snprintf(st->value, sizeof(st->value), "%s", value);
}

/* Appends the formatted text to buf, as far as it fits. */
static void appendf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t size, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

static const char *want_str(const char *want)
{
	if (strcmp(want, VFIO_WAIT_HOST) == 0)
		return "a host (non-VFIO) driver";
	return want[0] ? want : "a driver";
}

static const char *or_none(const char *drv)
{
	return *drv ? drv : "no driver";
}

/* The driver function i takes when it moves with the target: its own VFIO
 * variant for --to vfio, else the target. */
static const char *fn_want(const struct vfio_snap *s, size_t i)
{
	return s->fn[i].want[0] ? s->fn[i].want : s->target;
}

static int fn_want_loaded(const struct vfio_snap *s, size_t i)
{
	return s->fn[i].want[0] ? s->fn[i].want_loaded : s->target_loaded;
}

/* 1 when the plan unbinds f from its driver to move it to ti. */
static int unbinds(const struct vfio_fn *f, const char *ti)
{
	return f->driver[0] && (strcmp(ti, VFIO_DEFAULT) == 0 || strcmp(f->driver, ti) != 0);
}

void vfio_plan(const struct vfio_snap *s, const struct vfio_req *req, struct vfio_plan *p)
{
	const struct vfio_fn *d = &s->fn[s->dev];
	const char *t = s->target;
	int tvfio = vfio_is_vfio(t), load[VFIO_FN_MAX] = { 0 }, moves = 0;
	char unrel[512] = "", others[384] = "", busy[1024] = "", path[128];

	memset(p, 0, sizeof(*p));
	p->force = req->force;
	for (size_t i = 0; i < s->n; i++) {
		const struct vfio_fn *f = &s->fn[i];
		const char *ti = VFIO_LEAVE;

		if (i == s->dev)
			ti = fn_want(s, i);
		else if (req->group == VFIO_GROUP_DEVICE || (!f->in_group && !f->linked) || is_bridge(f))
			ti = VFIO_LEAVE;
		else if (tvfio) {
			/* on another VFIO driver or pci-stub, or driverless and not ours: viable already */
			if (viable_driver(f->driver))
				ti = strcmp(f->driver, fn_want(s, i)) == 0 ? fn_want(s, i) : VFIO_LEAVE;
			else if (!f->driver[0] && !related(s, f))
				ti = VFIO_LEAVE;
			else
				ti = fn_want(s, i);
		} else if (vfio_is_vfio(f->driver) || vfio_is_vfio(f->override)) {
			ti = VFIO_DEFAULT; /* back to its host driver */
		}
		snprintf(p->fn_target[i], sizeof(p->fn_target[i]), "%s", ti);
		p->fn_moves[i] = ti[0] && !at_target(f, ti);
		moves += p->fn_moves[i];
		if (p->fn_moves[i] && strcmp(ti, fn_want(s, i)) == 0 && !fn_want_loaded(s, i) && strcmp(f->driver, ti) != 0)
			load[i] = 1;
	}
	if (!moves) {
		p->verdict = VFIO_PLAN_NOTHING;
		return;
	}

	/* the safety checks */
	for (size_t k = 0; k < s->nholders; k++) {
		const struct vfio_holder *hd = &s->holder[k];

		if (hd->fn >= 0 && (size_t)hd->fn < s->n && p->fn_moves[hd->fn] &&
		    unbinds(&s->fn[hd->fn], p->fn_target[hd->fn]))
			appendf(busy, sizeof(busy), "%spid %d (%s) holds %s of %s", busy[0] ? ", " : "", hd->pid, hd->comm,
				hd->node, s->fn[hd->fn].addr);
	}
	if (busy[0])
		appendf(p->why, sizeof(p->why), "in use: %s%s: unbinding a device in use can hang in the kernel", busy,
			s->holders > s->nholders ? " (and more holders, not all listed)" : "");
	if (is_bridge(d))
		appendf(p->why, sizeof(p->why), "%s%s is a bridge (class %.4s): bridges stay with the host",
			p->why[0] ? "; " : "", d->addr, d->cls);
	for (size_t i = 0; i < s->n; i++) {
		const struct vfio_fn *f = &s->fn[i];
		int to_vfio = vfio_is_vfio(p->fn_target[i]);

		if (!p->fn_moves[i])
			continue;
		if (to_vfio && f->boot_vga == 1)
			appendf(p->why, sizeof(p->why), "%s%s is the boot VGA device (boot_vga=1): the host console would lose it",
				p->why[0] ? "; " : "", f->addr);
		if (to_vfio && f->no_group)
			appendf(p->why, sizeof(p->why),
				"%s%s has no IOMMU group: VFIO needs the IOMMU on (intel_iommu=on or amd_iommu=on)",
				p->why[0] ? "; " : "", f->addr);
		if (f->sriov_vfs && strcmp(f->driver, p->fn_target[i]) != 0)
			appendf(p->why, sizeof(p->why),
				"%s%s has SR-IOV virtual functions enabled (sriov_numvfs): unbinding its driver destroys them",
				p->why[0] ? "; " : "", f->addr);
		if (!related(s, f)) {
			char one[128];

			snprintf(one, sizeof(one), "%s (class %.4s, %s)", f->addr, f->cls[0] ? f->cls : "unknown",
				 or_none(f->driver));
			appendf(unrel, sizeof(unrel), "%s%s", unrel[0] ? ", " : "", one);
		} else if (i != s->dev && !same_slot(f->addr, d->addr) && !f->linked) {
			appendf(others, sizeof(others), "%s%s (%s)", others[0] ? ", " : "", f->addr, or_none(f->driver));
		}
	}
	if (unrel[0])
		appendf(p->why, sizeof(p->why), "%sIOMMU group %s also holds unrelated devices that would move: %s",
			p->why[0] ? "; " : "", s->group, unrel);
	if (p->why[0] && !req->force) {
		p->verdict = VFIO_PLAN_REFUSED;
		appendf(p->why, sizeof(p->why), " (--force overrides)");
		return;
	}
	if (p->why[0]) {
		snprintf(p->warn, sizeof(p->warn), "forced past: %.*s", (int)sizeof(p->warn) - 20, p->why);
		p->why[0] = '\0';
	}
	if (s->scan != VFIO_SCAN_DONE)
		appendf(p->warn, sizeof(p->warn), "%sbusy check %s: %s", p->warn[0] ? "; " : "",
			s->scan == VFIO_SCAN_PARTIAL ? "partial" : "not done", s->scan_why);
	if (others[0])
		appendf(p->warn, sizeof(p->warn), "%sIOMMU group %s: other cards of the same class move too: %s",
			p->warn[0] ? "; " : "", s->group, others);
	if (req->group == VFIO_GROUP_DEVICE && tvfio) {
		char kept[384] = "";

		for (size_t i = 0; i < s->n; i++) {
			const struct vfio_fn *f = &s->fn[i];

			if (i != s->dev && f->in_group && !is_bridge(f) && f->driver[0] && !viable_driver(f->driver))
				appendf(kept, sizeof(kept), "%s%s (%s)", kept[0] ? ", " : "", f->addr, f->driver);
		}
		if (kept[0])
			appendf(p->warn, sizeof(p->warn),
				"%s--group device: IOMMU group %s is not viable for VFIO while %s keep their host driver",
				p->warn[0] ? "; " : "", s->group, kept);
	}

	p->verdict = VFIO_PLAN_GO;
	for (size_t i = 0; i < s->n; i++) {
		int seen = 0;

		for (size_t j = 0; j < i; j++)
			seen |= load[j] && strcmp(p->fn_target[j], p->fn_target[i]) == 0;
		if (load[i] && !seen)
			add_step(p, VFIO_STEP_LOAD, -1, NULL, p->fn_target[i]);
	}
	/* NVIDIA's own rule before an unbind: its unbindLock, which the driver
	 * grants only while nothing has the GPU open */
	for (size_t i = 0; i < s->n; i++)
		if (p->fn_moves[i] && s->fn[i].nv_lock && strcmp(s->fn[i].driver, "nvidia") == 0 &&
		    unbinds(&s->fn[i], p->fn_target[i])) {
			snprintf(path, sizeof(path), "proc/driver/nvidia/gpus/%s/unbindLock", s->fn[i].addr);
			add_step(p, VFIO_STEP_ULOCK, (int)i, path, "1");
		}
	for (size_t i = 0; i < s->n; i++) {
		const struct vfio_fn *f = &s->fn[i];
		const char *ti = p->fn_target[i];
		int def = strcmp(ti, VFIO_DEFAULT) == 0;

		if (!p->fn_moves[i])
			continue;
		if (def ? f->override[0] != '\0' : strcmp(f->override, ti) != 0) {
			snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/driver_override", f->addr);
			add_step(p, VFIO_STEP_WRITE, (int)i, path, def ? "\n" : ti);
		}
		if (!def && strcmp(f->driver, ti) == 0)
			continue; /* on the target already: only the stale override was wrong */
		if (f->driver[0]) {
			snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/driver/unbind", f->addr);
			add_step(p, VFIO_STEP_WRITE, (int)i, path, f->addr);
		}
		add_step(p, VFIO_STEP_WRITE, (int)i, "sys/bus/pci/drivers_probe", f->addr);
		if (!def) {
			add_step(p, VFIO_STEP_WAIT, (int)i, NULL, ti);
		} else if (f->driver[0]) {
			/* leaving VFIO for the host: a VFIO driver again is no success; a
			 * function of the group other than the device may find no host
			 * driver at all (no snd_hda_intel): soft */
			add_step(p, VFIO_STEP_WAIT, (int)i, NULL, vfio_is_vfio(f->driver) ? VFIO_WAIT_HOST : "");
			p->step[p->n - 1].soft = i != s->dev && vfio_is_vfio(f->driver);
		}
	}
}

void vfio_step_str(const struct vfio_snap *s, const struct vfio_step *st, const char *prefix, char *buf,
		   size_t size)
{
	switch (st->kind) {
	case VFIO_STEP_LOAD:
		snprintf(buf, size, "modprobe %s", st->value);
		break;
	case VFIO_STEP_WRITE:
		snprintf(buf, size, "write %s%s: %s", prefix, st->path, strcmp(st->value, "\n") == 0 ? "\\n" : st->value);
		break;
	case VFIO_STEP_WAIT:
		snprintf(buf, size, "wait until %s is bound to %s", s->fn[st->fn].addr, want_str(st->value));
		break;
	case VFIO_STEP_ULOCK:
		snprintf(buf, size, "take the NVIDIA unbind lock of %s: write 1 to %s%s, read back 1", s->fn[st->fn].addr,
			 prefix, st->path);
		break;
	}
}

/* ---- apply -------------------------------------------------------------- */

const char *vfio_fn_result_str(enum vfio_fn_result r)
{
	switch (r) {
	case VFIO_FN_UNCHANGED:
		return "unchanged";
	case VFIO_FN_SWITCHED:
		return "switched";
	case VFIO_FN_UNTOUCHED:
		return "untouched";
	case VFIO_FN_ROLLED_BACK:
		return "rolled-back";
	case VFIO_FN_STUCK:
		return "stuck";
	}
	return "?";
}

static int wanted(const char *drv, const char *want)
{
	if (strcmp(want, VFIO_WAIT_HOST) == 0)
		return drv[0] && !vfio_is_vfio(drv);
	return want[0] ? strcmp(drv, want) == 0 : drv[0] != '\0';
}

static int cancelled(const struct vfio_ops *o)
{
	return o->cancelled && o->cancelled(o->ctx);
}

/* Polls until addr's driver is want (see enum vfio_step_kind). With cancel,
 * a pending termination signal ends the wait. Returns 0, or -1 with why
 * filled and *drv_out (when not NULL) the driver last seen. */
static int wait_driver(const struct vfio_ops *o, const char *addr, const char *want, long long timeout_ms,
		       int cancel, char *why, size_t size, char *drv_out)
{
	long long start = o->now_ms(o->ctx), now;
	char drv[VFIO_DRV_MAX] = "", ov[VFIO_DRV_MAX];
	int rc;

	for (;;) {
		rc = o->state(o->ctx, addr, drv, ov);
		if (rc == 0 && wanted(drv, want))
			return 0;
		if (cancel && cancelled(o)) {
			snprintf(why, size, "terminated by a signal while %s waited for %s", addr, want_str(want));
			return -1;
		}
		now = o->now_ms(o->ctx);
		if (now - start >= timeout_ms)
			break;
		o->sleep_ms(o->ctx, 10);
	}
	if (drv_out)
		strcpy(drv_out, rc < 0 ? "?" : drv);
	if (rc < 0)
		snprintf(why, size, "%s: cannot read its driver: %s", addr, fb_strerror(rc));
	else
		snprintf(why, size, "%s: on %s after %lld ms, expected %s", addr, or_none(drv), timeout_ms,
			 want_str(want));
	return -1;
}

/* Polls until addr is no longer bound to drv (unbind is synchronous in the
 * kernel; this only makes sure the state we read next is after it). */
static void wait_unbound(const struct vfio_ops *o, const char *addr, const char *drv, long long timeout_ms)
{
	long long start = o->now_ms(o->ctx);
	char cur[VFIO_DRV_MAX], ov[VFIO_DRV_MAX];

	while (o->state(o->ctx, addr, cur, ov) == 0 && strcmp(cur, drv) == 0 &&
	       o->now_ms(o->ctx) - start < timeout_ms)
		o->sleep_ms(o->ctx, 10);
}

static int do_write(const struct vfio_ops *o, const struct fb_log *lg, const char *path, const char *value,
		    char *why, size_t size)
{
	int rc;

	LOG_V(lg, 1, "write %s%s: %s", o->prefix ? o->prefix : "", path, strcmp(value, "\n") == 0 ? "\\n" : value);
	if ((rc = o->write(o->ctx, path, value)) < 0) {
		int e = errno;

		snprintf(why, size, "write \"%s\" to %s%s: %s%s%s", strcmp(value, "\n") == 0 ? "\\n" : value,
			 o->prefix ? o->prefix : "", path, fb_strerror(rc), e ? ": " : "", e ? strerror(e) : "");
		return -1;
	}
	return 0;
}

/* Puts function f back on its original override and driver. Returns 0 when
 * its state equals the original afterwards. */
static int restore(const struct vfio_ops *o, const struct vfio_fn *f, long long timeout_ms,
		   const struct fb_log *lg)
{
	char drv[VFIO_DRV_MAX], ov[VFIO_DRV_MAX], path[128], why[512];

	if (o->state(o->ctx, f->addr, drv, ov) < 0)
		return -1;
	if (strcmp(ov, f->override) != 0) {
		snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/driver_override", f->addr);
		if (do_write(o, lg, path, f->override[0] ? f->override : "\n", why, sizeof(why)) < 0)
			LOG_E(lg, "rollback: %s", why);
	}
	if (strcmp(drv, f->driver) != 0) {
		if (drv[0]) {
			snprintf(path, sizeof(path), "sys/bus/pci/devices/%s/driver/unbind", f->addr);
			if (do_write(o, lg, path, f->addr, why, sizeof(why)) < 0)
				LOG_E(lg, "rollback: %s", why);
			else
				wait_unbound(o, f->addr, drv, timeout_ms);
		}
		if (f->driver[0]) {
			if (do_write(o, lg, "sys/bus/pci/drivers_probe", f->addr, why, sizeof(why)) < 0 ||
			    wait_driver(o, f->addr, f->driver, timeout_ms, 0, why, sizeof(why), NULL) < 0)
				LOG_E(lg, "rollback: %s", why);
		}
	}
	if (o->state(o->ctx, f->addr, drv, ov) < 0)
		return -1;
	return strcmp(drv, f->driver) == 0 && strcmp(ov, f->override) == 0 ? 0 : -1;
}

/* Takes NVIDIA's unbindLock at path: write "1" (the driver acts when the
 * file is closed), read "1" back. Returns 0 or -1 with got the value read
 * (or the error). */
static int take_ulock(const struct vfio_ops *o, const char *path, char *got, size_t size)
{
	int rc;

	snprintf(got, size, "nothing");
	if ((rc = o->write(o->ctx, path, "1")) < 0) {
		snprintf(got, size, "a failed write: %s%s%s", fb_strerror(rc), errno ? ": " : "", errno ? strerror(errno) : "");
		return -1;
	}
	if (!o->read || (rc = o->read(o->ctx, path, got, size)) < 0) {
		snprintf(got, size, "unreadable: %s", o->read ? fb_strerror(rc) : "no reader");
		return -1;
	}
	return strcmp(got, "1") == 0 ? 0 : -1;
}

/* Releases the unbindLocks taken (locked[i]) of the functions still on
 * nvidia: the switch did not happen for them. */
static void release_ulocks(const struct vfio_snap *s, const struct vfio_plan *p, const struct vfio_ops *o,
			   const int *locked, const struct fb_log *lg)
{
	for (size_t k = 0; k < p->n; k++) {
		const struct vfio_step *st = &p->step[k];
		char drv[VFIO_DRV_MAX], ov[VFIO_DRV_MAX];

		if (st->kind != VFIO_STEP_ULOCK || !locked[st->fn])
			continue;
		if (o->state(o->ctx, s->fn[st->fn].addr, drv, ov) == 0 && strcmp(drv, "nvidia") != 0)
			continue; /* unbound: the lock went with the driver's state */
		if (o->write(o->ctx, st->path, "0") < 0)
			LOG_W(lg, "%s: the NVIDIA unbind lock could not be released (write 0 to %s%s)", s->fn[st->fn].addr,
			      o->prefix ? o->prefix : "", st->path);
		else
			LOG_I(lg, "%s: the NVIDIA unbind lock released", s->fn[st->fn].addr);
	}
}

static void final_states(const struct vfio_snap *s, const struct vfio_ops *o, struct vfio_result *res)
{
	char ov[VFIO_DRV_MAX];

	for (size_t i = 0; i < s->n; i++)
		if (o->state(o->ctx, s->fn[i].addr, res->final[i], ov) < 0)
			snprintf(res->final[i], sizeof(res->final[i]), "?");
}

int vfio_apply(const struct vfio_snap *s, const struct vfio_plan *p, const struct vfio_ops *o,
	       long long timeout_ms, const struct fb_log *lg, struct vfio_result *res)
{
	int touched[VFIO_FN_MAX] = { 0 }, locked[VFIO_FN_MAX] = { 0 };
	size_t k;

	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < s->n; i++)
		res->fn[i] = p->fn_moves[i] ? VFIO_FN_UNTOUCHED : VFIO_FN_UNCHANGED;
	for (k = 0; k < p->n; k++) {
		const struct vfio_step *st = &p->step[k];

		if (st->kind == VFIO_STEP_LOAD) {
			if (o->loaded(o->ctx, st->value) == 1)
				continue;
			LOG_I(lg, "driver %s is not loaded: modprobe %s", st->value, st->value);
			if (o->modprobe(o->ctx, st->value) == 0 && o->loaded(o->ctx, st->value) == 1)
				continue;
			if (p->force) {
				LOG_W(lg, "driver %s could not be loaded; going on (--force)", st->value);
				continue;
			}
			snprintf(res->why, sizeof(res->why),
				 "driver %s is not loaded and modprobe %s did not load it (--force overrides)", st->value,
				 st->value);
			final_states(s, o, res);
			return res->exit = 4;
		}
		if (st->kind == VFIO_STEP_ULOCK) {
			char got[96];

			if (take_ulock(o, st->path, got, sizeof(got)) == 0) {
				locked[st->fn] = 1;
				LOG_I(lg, "%s: the NVIDIA unbind lock is taken", s->fn[st->fn].addr);
				continue;
			}
			if (p->force) {
				LOG_W(lg, "%s: the NVIDIA unbind lock was not taken (read back %s); going on (--force)",
				      s->fn[st->fn].addr, got);
				continue;
			}
			snprintf(res->why, sizeof(res->why),
				 "%s: the NVIDIA unbind lock was not taken (%s%s read back %s): the driver still has users of the GPU (--force overrides)",
				 s->fn[st->fn].addr, o->prefix ? o->prefix : "", st->path, got);
			release_ulocks(s, p, o, locked, lg);
			final_states(s, o, res);
			return res->exit = 4;
		}
		if (cancelled(o)) {
			snprintf(res->why, sizeof(res->why), "terminated by a signal before: %s",
				 st->kind == VFIO_STEP_WRITE ? st->path : "a wait");
			break;
		}
		if (!touched[st->fn]) {
			/* someone else may have moved it since the snapshot: never undo that */
			const struct vfio_fn *f = &s->fn[st->fn];
			char drv[VFIO_DRV_MAX], ov[VFIO_DRV_MAX];
			int rc = o->state(o->ctx, f->addr, drv, ov);

			if (rc < 0 || strcmp(drv, f->driver) != 0 || strcmp(ov, f->override) != 0) {
				if (rc < 0)
					snprintf(res->why, sizeof(res->why), "%s: cannot read its driver: %s", f->addr,
						 fb_strerror(rc));
				else
					snprintf(res->why, sizeof(res->why),
						 "%s changed since the snapshot (now on %s, override %s): another actor is moving it",
						 f->addr, or_none(drv), ov[0] ? ov : "unset");
				break;
			}
			touched[st->fn] = 1;
		}
		if (st->kind == VFIO_STEP_WRITE) {
			if (do_write(o, lg, st->path, st->value, res->why, sizeof(res->why)) < 0)
				break;
		} else {
			char last[VFIO_DRV_MAX];
			long long tmo = st->soft && timeout_ms > VFIO_SOFT_WAIT_MS ? VFIO_SOFT_WAIT_MS : timeout_ms;

			if (wait_driver(o, s->fn[st->fn].addr, st->value, tmo, 1, res->why, sizeof(res->why), last) < 0) {
				if (!st->soft || last[0] || cancelled(o))
					break;
				LOG_W(lg, "%s: no host driver took it after %lld ms; left without a driver (it was on %s)",
				      s->fn[st->fn].addr, tmo, s->fn[st->fn].driver);
				res->why[0] = '\0';
				continue;
			}
			LOG_I(lg, "%s: bound to %s", s->fn[st->fn].addr, want_str(st->value));
		}
	}
	if (k == p->n) {
		for (size_t i = 0; i < s->n; i++)
			if (p->fn_moves[i])
				res->fn[i] = VFIO_FN_SWITCHED;
		final_states(s, o, res);
		return res->exit = 0;
	}

	LOG_E(lg, "%s; rolling back", res->why);
	res->exit = 5;
	for (size_t i = s->n; i-- > 0;) {
		if (!touched[i])
			continue;
		if (restore(o, &s->fn[i], timeout_ms, lg) == 0) {
			res->fn[i] = VFIO_FN_ROLLED_BACK;
			LOG_I(lg, "%s: back on %s", s->fn[i].addr, or_none(s->fn[i].driver));
		} else {
			res->fn[i] = VFIO_FN_STUCK;
			res->exit = 6;
		}
	}
	release_ulocks(s, p, o, locked, lg);
	if (res->exit == 6) {
		size_t n = strlen(res->why);

		snprintf(res->why + n, sizeof(res->why) - n, "; rollback failed for");
		for (size_t i = 0; i < s->n; i++)
			if (res->fn[i] == VFIO_FN_STUCK) {
				n = strlen(res->why);
				snprintf(res->why + n, sizeof(res->why) - n, " %s (wanted %s, override %s)", s->fn[i].addr,
					 or_none(s->fn[i].driver), s->fn[i].override[0] ? s->fn[i].override : "unset");
			}
	}
	final_states(s, o, res);
	return res->exit;
}

/* ---- the real operations ------------------------------------------------ */

static int real_write(void *ctx, const char *path, const char *value)
{
	struct vfio_real *r = ctx;
	size_t len = strlen(value);
	ssize_t n;
	int fd = hostfs_open(r->h, path, O_WRONLY | O_TRUNC), e; /* as the shell's ">" */

	if (fd < 0)
		return fd;
	n = write(fd, value, len);
	e = errno;
	close(fd);
	errno = n < 0 ? e : 0;
	return n == (ssize_t)len ? 0 : -FB_EIO;
}

static int real_read(void *ctx, const char *path, char *buf, size_t size)
{
	struct vfio_real *r = ctx;
	int fd = hostfs_open(r->h, path, O_RDONLY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -FB_EIO;
	if ((size_t)n == size - 1)
		return -FB_E2BIG;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return (int)n;
}

static int real_state(void *ctx, const char *addr, char *driver, char *override)
{
	struct vfio_real *r = ctx;
	char rel[96];
	int fd, rc;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
	if ((fd = hostfs_open(r->h, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return fd;
	rc = read_state(fd, driver, override, addr, NULL);
	close(fd);
	return rc;
}

static int real_loaded(void *ctx, const char *driver)
{
	struct vfio_real *r = ctx;

	return registered(r->h, driver);
}

static int real_modprobe(void *ctx, const char *module)
{
	/* relative to the host root (the child runs them from "/" inside it) */
	static const char *const where[] = { "sbin/modprobe", "usr/sbin/modprobe", "bin/modprobe", "usr/bin/modprobe" };
	struct vfio_real *r = ctx;
	const char *root = NULL;
	char path[PATH_MAX];
	struct stat st;
	int status;
	pid_t pid;

	/* the host's modprobe when the root has one (lstat: Debian's is an
	 * absolute link, which only resolves inside the chroot) */
	for (size_t i = 0; r->root && !root && i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", r->root, where[i]);
		if (lstat(path, &st) == 0)
			root = r->root;
	}
	LOG_V(r->log, 1, "modprobe -q -- %s%s%s", module, root ? " in chroot " : "", root ? root : "");
	pid = fork();
	if (pid < 0)
		return -FB_EIO;
	if (pid == 0) {
		char a0[] = "modprobe", a1[] = "-q", a2[] = "--";
		char *argv[] = { a0, a1, a2, (char *)(uintptr_t)module, NULL };
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(2, 1); /* our stdout is the result */
		/* looked up inside the chroot: the host's links (Debian's
		 * /sbin/modprobe -> /bin/kmod) are absolute there */
		if (root && chroot(root) == 0 && chdir("/") == 0)
			for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
				execv(where[i], argv);
		execvp("modprobe", argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -FB_EIO;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	LOG_W(r->log, "modprobe %s: %s %d", module, WIFEXITED(status) ? "exit status" : "signal",
	      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return -FB_EIO;
}

static int real_cancelled(void *ctx)
{
	struct vfio_real *r = ctx;
	sigset_t pend;

	if (!r->stop || sigpending(&pend) < 0)
		return 0;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(r->stop, sig) == 1 && sigismember(&pend, sig) == 1)
			return 1;
	return 0;
}

static long long real_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void real_sleep(void *ctx, int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	(void)ctx;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void vfio_ops_real(struct vfio_ops *ops, struct vfio_real *ctx)
{
	ops->ctx = ctx;
	ops->prefix = ctx->h->prefix;
	ops->write = real_write;
	ops->read = real_read;
	ops->state = real_state;
	ops->loaded = real_loaded;
	ops->modprobe = real_modprobe;
	ops->cancelled = real_cancelled;
	ops->now_ms = real_now;
	ops->sleep_ms = real_sleep;
}
