/* vfio_busy: who holds a function's device nodes open, so that vfio-switch
 * never unbinds a device in use (an unbind of a busy GPU can block inside
 * the kernel, where no timeout helps).
 *
 * Facts: a DRM device's nodes are the entries of <dev>/drm/ (cardN,
 * renderDN, controlDN on old kernels), each with a "dev" file "MAJ:MIN";
 * NVIDIA's /dev/nvidiaN is char 195:N with N the "Device Minor:" line of
 * /proc/driver/nvidia/gpus/<addr>/information (open-gpu-kernel-modules,
 * nv-procfs.c). A function on a VFIO driver is in use by whoever holds its
 * group's /dev/vfio/N (class vfio, "dev" in /sys/class/vfio/N: QEMU keeps it
 * open with the device's fd) or its cdev /dev/vfio/devices/vfioN
 * (<dev>/vfio-dev/vfioN/dev, iommufd); unbinding vfio-pci then waits in the
 * kernel for the user to let the device go. /proc/PID/fd/N is a link the kernel resolves to the open
 * file itself: stat(2) through it gives the node's st_rdev whatever mount
 * namespace (container) opened it, and readlink gives its path as that
 * process sees it. */
#include "vfio_int.h"

#include "pgpu.h"
#include "sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define NV_MAJOR 195 /* /dev/nvidiaN, /dev/nvidiactl (255) */

/* "226:0" -> 226, 0. Returns 0 or -1. */
static int parse_majmin(const char *s, unsigned *maj, unsigned *min)
{
	char *end;
	unsigned long a, b;

	errno = 0;
	a = strtoul(s, &end, 10);
	if (end == s || *end != ':' || errno)
		return -1;
	s = end + 1;
	b = strtoul(s, &end, 10);
	if (end == s || *end || errno || a > 0xfff || b > 0xfffff)
		return -1;
	*maj = (unsigned)a;
	*min = (unsigned)b;
	return 0;
}

/* Names node n (maj:min) as the host's dev/<dir> does: the entry hint when
 * it is that character device (or, in a test tree, a plain file: fake),
 * else any entry of dir that is (udev may name it otherwise), else hint as
 * the kernel names it. */
static void node_path(const struct hostfs *h, const char *dir, const char *hint, struct vfio_node *n)
{
	char rel[64];
	struct stat st;
	int fd;

	snprintf(n->path, sizeof(n->path), "/dev/%s%s%s", dir, *dir ? "/" : "", hint);
	snprintf(rel, sizeof(rel), "dev%s%s", *dir ? "/" : "", dir);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return;
	if (fstatat(fd, hint, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISCHR(st.st_mode) && major(st.st_rdev) == n->maj && minor(st.st_rdev) == n->min) {
			close(fd);
			return;
		}
		if (S_ISREG(st.st_mode)) {
			n->fake = 1;
			close(fd);
			return;
		}
	}
	if (*dir) { /* dev/dri is small; all of dev is not worth listing */
		char **names = NULL;
		size_t nn = 0, total = 0;

		if (hostfs_list(fd, 256, &names, &nn, &total) == 0) {
			for (size_t i = 0; i < nn; i++)
				if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) &&
				    major(st.st_rdev) == n->maj && minor(st.st_rdev) == n->min) {
					snprintf(n->path, sizeof(n->path), "/dev/%s/%.30s", dir, names[i]);
					break;
				}
			hostfs_names_free(names, nn);
		}
	}
	close(fd);
}

static struct vfio_node *node_add(struct vfio_fn *f, unsigned maj, unsigned min)
{
	struct vfio_node *n;

	if (f->nnodes == VFIO_NODE_MAX) {
		f->nodes_dropped++;
		return NULL;
	}
	n = &f->node[f->nnodes++];
	memset(n, 0, sizeof(*n));
	n->maj = maj;
	n->min = min;
	return n;
}

struct drm_ctx {
	const struct hostfs *h;
	struct vfio_fn *f;
	int dfd;
};

/* The node of the class device NAME in c->dfd (its dev file), named in
 * /dev/DIR. Returns 0 (for sysfs_dir_each). */
static int dev_node(struct drm_ctx *c, const char *name, const char *dir)
{
	char rel[80], buf[32];
	unsigned maj, min;
	struct vfio_node *n;

	snprintf(rel, sizeof(rel), "%s/dev", name);
	if (sysfs_read(c->dfd, rel, buf, sizeof(buf)) < 0 || parse_majmin(buf, &maj, &min) < 0)
		return 0;
	if ((n = node_add(c->f, maj, min)))
		node_path(c->h, dir, name, n);
	return 0;
}

static int drm_entry(void *ctx, const char *name, unsigned char type)
{
	struct drm_ctx *c = ctx;

	(void)type;
	if (strncmp(name, "card", 4) != 0 && strncmp(name, "renderD", 7) != 0 && strncmp(name, "controlD", 8) != 0)
		return 0;
	if (strchr(name, '-') || strlen(name) > 24) /* a connector (card0-DP-1), not a node */
		return 0;
	return dev_node(c, name, "dri");
}

/* The "Device Minor" of an NVIDIA information file, or -1. */
static long nv_minor(const char *text)
{
	char v[24], *end;
	long m;

	pgpu_nvidia_info(text, "Device Minor", v, sizeof(v));
	errno = 0;
	m = strtol(v, &end, 10);
	return end == v || *end || errno || m < 0 || m > 0xfffff ? -1 : m;
}

static int vfio_dev_entry(void *ctx, const char *name, unsigned char type)
{
	struct drm_ctx *c = ctx;

	(void)type;
	if (strncmp(name, "vfio", 4) != 0 || strlen(name) > 24)
		return 0;
	return dev_node(c, name, "vfio/devices");
}

/* The nodes through which a VFIO user holds f: its group's and its cdev. */
static void vfio_nodes(const struct hostfs *h, struct vfio_fn *f)
{
	struct drm_ctx c = { .h = h, .f = f };
	char rel[128], g[32], buf[32];
	unsigned maj, min;
	struct vfio_node *n;
	ssize_t len;
	int fd;

	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", f->addr);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return;
	len = sysfs_link_base(fd, "iommu_group", g, sizeof(g));
	close(fd);
	if (len > 0 && strspn(g, "0123456789") == (size_t)len) {
		snprintf(rel, sizeof(rel), "sys/class/vfio/%s", g);
		if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) >= 0) {
			if (sysfs_read(fd, "dev", buf, sizeof(buf)) >= 0 && parse_majmin(buf, &maj, &min) == 0 &&
			    (n = node_add(f, maj, min)))
				node_path(h, "vfio", g, n);
			close(fd);
		}
	}
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/vfio-dev", f->addr);
	if ((c.dfd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) >= 0) {
		sysfs_dir_each(c.dfd, vfio_dev_entry, &c);
		close(c.dfd);
	}
}

static void fn_nodes(const struct hostfs *h, struct vfio_fn *f)
{
	char rel[128], info[4096];
	struct drm_ctx c = { .h = h, .f = f };
	int fd;

	f->nnodes = 0;
	f->nv_lock = 0;
	if (vfio_is_vfio(f->driver))
		vfio_nodes(h, f);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/drm", f->addr);
	if ((c.dfd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) >= 0) {
		sysfs_dir_each(c.dfd, drm_entry, &c);
		close(c.dfd);
	}
	snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s", f->addr);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return;
	f->nv_lock = faccessat(fd, "unbindLock", F_OK, 0) == 0;
	if (sysfs_read(fd, "information", info, sizeof(info)) >= 0) {
		long m = nv_minor(info);
		struct vfio_node *n;

		if (m >= 0 && (n = node_add(f, NV_MAJOR, (unsigned)m))) {
			char name[24];

			snprintf(name, sizeof(name), "nvidia%ld", m);
			node_path(h, "", name, n);
		}
	}
	close(fd);
}

/* ---- the scan of /proc -------------------------------------------------- */

struct scan {
	const struct hostfs *h;
	struct vfio_snap *s;
	int procfd;
	size_t pids, pids_skipped, denied, fds, fds_skipped;
	int pid, fdfd, pid_denied;
};

static int all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static void holder_add(struct scan *sc, size_t fn, const struct vfio_node *n)
{
	struct vfio_snap *s = sc->s;
	struct vfio_holder *hd;
	char rel[32], comm[32];

	for (size_t i = 0; i < s->nholders; i++)
		if (s->holder[i].pid == sc->pid && s->holder[i].fn == (int)fn && !strcmp(s->holder[i].node, n->path))
			return; /* the same node through another fd */
	s->holders++;
	if (s->nholders == VFIO_HOLDER_MAX)
		return;
	hd = &s->holder[s->nholders++];
	memset(hd, 0, sizeof(*hd));
	hd->pid = sc->pid;
	hd->fn = (int)fn;
	snprintf(hd->node, sizeof(hd->node), "%s", n->path);
	snprintf(rel, sizeof(rel), "%d/comm", sc->pid);
	/* 15 characters and a newline fill 16 bytes: read into more */
	if (sysfs_read(sc->procfd, rel, comm, sizeof(comm)) < 0)
		snprintf(hd->comm, sizeof(hd->comm), "?");
	else
		snprintf(hd->comm, sizeof(hd->comm), "%.16s", comm);
	for (char *p = hd->comm; *p; p++) /* it is the process's to choose: keep the output readable */
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f || *p == '"' || *p == '\\')
			*p = '?';
}

/* statx(2) as the kernel lays it out (stable ABI; musl has no wrapper on
 * every target): what chr_rdev needs, and room for the rest. */
struct fb_statx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, pad1;
	uint64_t ino, size, blocks, attributes_mask;
	struct {
		int64_t sec;
		uint32_t nsec;
		int32_t pad;
	} atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t spare[20];
};
#define FB_AT_STATX_DONT_SYNC 0x4000
#define FB_STATX_TYPE 0x1U

/* 1 when the file an fd link names is a character device (its numbers in
 * *maj, *min), 0 when not or unknown. With AT_STATX_DONT_SYNC: a FUSE or
 * network file system answers from its cache instead of asking a server a
 * local user may have stalled (stat through the link could hang the scan);
 * plain fstatat only where the kernel has no statx. */
static int chr_rdev(int dirfd, const char *name, unsigned *maj, unsigned *min)
{
	struct fb_statx sx;
	struct stat st;

	memset(&sx, 0, sizeof(sx));
	if (syscall(SYS_statx, dirfd, name, FB_AT_STATX_DONT_SYNC, FB_STATX_TYPE, &sx) == 0) {
		*maj = sx.rdev_major;
		*min = sx.rdev_minor;
		return S_ISCHR(sx.mode);
	}
	if (errno != ENOSYS || fstatat(dirfd, name, &st, 0) < 0)
		return 0;
	*maj = major(st.st_rdev);
	*min = minor(st.st_rdev);
	return S_ISCHR(st.st_mode);
}

static int fd_entry(void *ctx, const char *name, unsigned char type)
{
	struct scan *sc = ctx;
	struct vfio_snap *s = sc->s;
	char link[256];
	ssize_t n;
	unsigned maj = 0, min = 0;
	int chr = -1; /* not stat'ed yet */

	(void)type;
	if (!all_digits(name))
		return 0;
	if (sc->fds >= VFIO_SCAN_FDS) {
		sc->fds_skipped++;
		return 0;
	}
	sc->fds++;
	n = readlinkat(sc->fdfd, name, link, sizeof(link) - 1);
	if (n < 0) {
		if (errno == EACCES || errno == EPERM)
			sc->pid_denied = 1;
		return 0; /* ENOENT: closed meanwhile */
	}
	link[n] = '\0';
	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < s->fn[i].nnodes; k++) {
			const struct vfio_node *nd = &s->fn[i].node[k];

			if (nd->fake && strcmp(link, nd->path) == 0) {
				holder_add(sc, i, nd);
				continue;
			}
			if (strncmp(link, "/dev/", 5) != 0)
				continue;
			if (chr < 0)
				chr = chr_rdev(sc->fdfd, name, &maj, &min);
			if (chr && maj == nd->maj && min == nd->min)
				holder_add(sc, i, nd);
		}
	return 0;
}

static int pid_entry(void *ctx, const char *name, unsigned char type)
{
	struct scan *sc = ctx;
	char rel[32];

	(void)type;
	if (!all_digits(name) || strlen(name) > 9) /* pid_max is at most 2^22 */
		return 0;
	if (sc->pids >= VFIO_SCAN_PIDS) {
		sc->pids_skipped++;
		return 0;
	}
	sc->pids++;
	sc->pid = atoi(name);
	snprintf(rel, sizeof(rel), "%s/fd", name);
	if ((sc->fdfd = openat(sc->procfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		if (errno == EACCES || errno == EPERM)
			sc->denied++;
		return 0; /* ENOENT: it exited */
	}
	sc->pid_denied = 0;
	if (sysfs_dir_each(sc->fdfd, fd_entry, sc) < 0 && (errno == EACCES || errno == EPERM))
		sc->pid_denied = 1;
	sc->denied += sc->pid_denied;
	close(sc->fdfd);
	return 0;
}

void vfio_busy_scan_(const struct hostfs *h, struct vfio_snap *s)
{
	struct scan sc = { .h = h, .s = s };
	size_t nodes = 0, dropped = 0;
	int rc;

	s->nholders = s->holders = 0;
	s->scan = VFIO_SCAN_DONE;
	s->scan_why[0] = '\0';
	for (size_t i = 0; i < s->n; i++) {
		s->fn[i].nodes_dropped = 0;
		fn_nodes(h, &s->fn[i]);
		nodes += s->fn[i].nnodes;
		dropped += s->fn[i].nodes_dropped;
	}
	if (!nodes)
		return; /* nothing a process could hold */
	if ((sc.procfd = hostfs_open(h, "proc", O_RDONLY | O_DIRECTORY)) < 0) {
		s->scan = VFIO_SCAN_NONE;
		snprintf(s->scan_why, sizeof(s->scan_why), "%.100sproc cannot be read (%s): who holds the device nodes is unknown",
			 h->prefix, strerror(errno));
		return;
	}
	rc = sysfs_dir_each(sc.procfd, pid_entry, &sc);
	close(sc.procfd);
	if (rc < 0) {
		s->scan = VFIO_SCAN_PARTIAL;
		snprintf(s->scan_why, sizeof(s->scan_why), "listing %.100sproc failed (%s) after %zu processes", h->prefix,
			 strerror(errno), sc.pids);
	} else if (sc.denied || sc.pids_skipped || sc.fds_skipped) {
		s->scan = VFIO_SCAN_PARTIAL;
		snprintf(s->scan_why, sizeof(s->scan_why),
			 "%zu processes looked at; %zu whose open files we may not read (EACCES), %zu past the cap of %d "
			 "processes, %zu files past the cap of %d",
			 sc.pids, sc.denied, sc.pids_skipped, VFIO_SCAN_PIDS, sc.fds_skipped, VFIO_SCAN_FDS);
	} else if (dropped) {
		s->scan = VFIO_SCAN_PARTIAL;
		snprintf(s->scan_why, sizeof(s->scan_why), "%zu device nodes past %d per function: not looked for",
			 dropped, VFIO_NODE_MAX);
	}
}
