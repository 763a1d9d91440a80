/* vfio: moving PCI functions between drivers through sysfs, in three
 * separately testable steps:
 *
 *   vfio_snapshot  reads the device, its IOMMU group and device links from
 *                  <host>/sys (through hostfs) into a plain struct;
 *   vfio_plan      a pure function: snapshot + request -> the list of sysfs
 *                  writes and waits (or a refusal, or "nothing to do");
 *   vfio_apply     runs a plan through a table of operations (the real one
 *                  writes sysfs; the unit tests pass a model of the kernel),
 *                  rolling every touched function back to its original
 *                  driver and driver_override when a step fails.
 *
 * Facts used: driver_override (one name, "\n" clears it, reads "(null)"
 * when unset), <drv>/unbind and bus drivers_probe take the device name, and
 * drivers_probe binds nothing (but succeeds) when no driver matches
 * (Documentation/ABI/testing/sysfs-bus-pci). IOMMU groups are the unit of
 * VFIO ownership; bridges need not be bound (driver-api/vfio.rst). */
#ifndef FB_VFIO_H
#define FB_VFIO_H

#include "err.h"
#include "hostfs.h"
#include "log.h"

#include <signal.h>
#include <stddef.h>

#define VFIO_FN_MAX 32      /* functions of one IOMMU group (plus linked ones) we handle */
#define VFIO_STEP_MAX (1 + 4 * VFIO_FN_MAX)
#define VFIO_ADDR_MAX 24    /* "ffffffff:ff:1f.7" and a NUL, with room */
#define VFIO_DRV_MAX 64
#define VFIO_DEFAULT "default" /* --to default: no override, the kernel's own choice */

/* One PCI function as the snapshot saw it. */
struct vfio_fn {
	char addr[VFIO_ADDR_MAX];
	char cls[7];              /* 6 lower-case hex digits; "" when unreadable */
	char vendor[5], device[5];
	char driver[VFIO_DRV_MAX];   /* bound driver, "" when none */
	char override[VFIO_DRV_MAX]; /* driver_override, "" when unset ("(null)") */
	int boot_vga;             /* 1, 0, -1 when the file is absent (unreadable counts as 1) */
	int sriov_vfs;            /* sriov_numvfs: VFs enabled on this function (0 when absent) */
	int no_group;             /* this function has no IOMMU group */
	int is_device;            /* the function asked for */
	int in_group;             /* a member of the device's IOMMU group */
	int linked;               /* a device link joins it to the device (consumer:/supplier:pci:) */
};

struct vfio_snap {
	char addr[VFIO_ADDR_MAX];    /* the device asked for */
	char group[16];              /* IOMMU group number, "" when the device has none */
	struct vfio_fn fn[VFIO_FN_MAX]; /* sorted by address; the device is one of them */
	size_t n;
	size_t dev;                  /* index of the device in fn */
	char target[VFIO_DRV_MAX];   /* the requested driver or VFIO_DEFAULT */
	int target_loaded;           /* <host>/sys/bus/pci/drivers/<target> exists (1 for default) */
};

/* Checks and normalises a PCI address: DDDD:BB:DD.F with a domain of 4 to
 * 8 hex digits, device <= 1f, function <= 7, any case; "BB:DD.F" means
 * domain 0000. Writes the lower-case full form into out (VFIO_ADDR_MAX).
 * Returns 0 or -FB_EINVAL. */
int vfio_parse_addr(const char *s, char *out);

/* 1 when name can be a driver name: 1 to 63 of [A-Za-z0-9_.+-] starting
 * with a letter or digit (so never "..", never an option to modprobe). */
int vfio_valid_driver(const char *name);

/* 1 for a VFIO driver: vfio-pci and its variants (nvgrace_gpu_vfio_pci,
 * vfio-cxl...): any name containing "vfio". */
int vfio_is_vfio(const char *driver);

/* Reads the device addr (already normalised) and what shares its IOMMU
 * group or is linked to it. Returns 0, -FB_ENOENT when the device does not
 * exist, -FB_E2BIG when the group has more than VFIO_FN_MAX functions, or
 * -FB_EIO / -FB_EINVAL (an unreadable or malformed driver link or
 * driver_override) with ei naming the file. */
int vfio_snapshot(const struct hostfs *h, const char *addr, const char *target, struct vfio_snap *s,
		  struct fb_errinfo *ei);

/* Serialises vfio-switch runs on one IOMMU group: an exclusive flock(2) on
 * the device's iommu_group directory (the device's own directory when it
 * has none), waited for up to timeout_ms. Returns an fd to close when done,
 * -FB_ETIMEDOUT (held by another run), or another error with ei filled. */
int vfio_lock(const struct hostfs *h, const char *addr, long long timeout_ms, struct fb_errinfo *ei);

enum vfio_group_mode {
	VFIO_GROUP_AUTO,   /* the device's endpoint functions in its group move with it */
	VFIO_GROUP_DEVICE, /* only the device */
};

struct vfio_req {
	enum vfio_group_mode group;
	int force;           /* override the safety refusals */
};

enum vfio_step_kind {
	VFIO_STEP_LOAD,  /* make sure the target driver is registered: modprobe value */
	VFIO_STEP_WRITE, /* write value to path */
	VFIO_STEP_WAIT,  /* poll until fn's driver is value: a name, "" (any driver) or VFIO_WAIT_HOST */
};
/* Wait for any driver that is not a VFIO one: --to default from vfio-pci
 * expects the host driver back (and, unbind being synchronous, the old
 * vfio-pci link cannot be taken for success). */
#define VFIO_WAIT_HOST "(host)"
/* How long a function that leaves VFIO alongside the device waits for a
 * host driver before it is left without one (snd_hda_intel is often not
 * there on headless servers; the function served no host driver before). */
#define VFIO_SOFT_WAIT_MS 3000

struct vfio_step {
	enum vfio_step_kind kind;
	int fn;                      /* index into the snapshot, -1 for LOAD */
	int soft;                    /* WAIT: after VFIO_SOFT_WAIT_MS without a driver, go on with a warning */
	char path[128];              /* relative to the host root: "sys/bus/pci/drivers_probe" */
	char value[VFIO_DRV_MAX];
};

/* What vfio_plan decided. */
enum vfio_verdict {
	VFIO_PLAN_GO,       /* steps to apply */
	VFIO_PLAN_NOTHING,  /* every function is on its target already */
	VFIO_PLAN_REFUSED,  /* a safety check said no; why says which and how to override */
};

/* What happens to each function (fn_target in the plan). */
#define VFIO_LEAVE ""   /* not ours to move: bridges, functions outside the scope */

struct vfio_plan {
	enum vfio_verdict verdict;
	char why[768];               /* the refusal, naming the devices */
	char warn[1024];             /* a warning to print with a GO plan, or "" */
	char fn_target[VFIO_FN_MAX][VFIO_DRV_MAX]; /* target per function, VFIO_DEFAULT, or VFIO_LEAVE */
	int fn_moves[VFIO_FN_MAX];   /* 1 when it has steps */
	int force;                   /* the request's force, for apply */
	struct vfio_step step[VFIO_STEP_MAX];
	size_t n;
};

/* Snapshot + request -> plan. Pure: reads nothing but its arguments. The
 * refusals (each lifted by req->force): the device is a bridge; moving to a
 * VFIO driver a function that is the boot VGA device or has no IOMMU group;
 * moving a function with SR-IOV VFs enabled (unbinding its driver destroys
 * them); with --group auto, a group that holds bound devices that are
 * neither functions of the same slot, nor linked, nor of the device's base
 * class. Other cards of the device's class moving with it are warned about. */
void vfio_plan(const struct vfio_snap *s, const struct vfio_req *req, struct vfio_plan *p);

/* Writes step as one line, "write /sys/bus/pci/...: vfio-pci", with the
 * hostfs prefix ("/", "/host-") in front of paths. */
void vfio_step_str(const struct vfio_snap *s, const struct vfio_step *st, const char *prefix, char *buf,
		   size_t size);

/* What apply does to the world. Every call returns 0 or a negative fb_err
 * with errno describing it where it came from a system call. */
struct vfio_ops {
	void *ctx;
	const char *prefix; /* put in front of paths in messages; NULL: none */
	int (*write)(void *ctx, const char *path, const char *value); /* one write(2) of the value */
	/* the bound driver ("" when none) and driver_override ("" when unset) of addr */
	int (*state)(void *ctx, const char *addr, char *driver, char *override);
	int (*loaded)(void *ctx, const char *driver);  /* 1 registered, 0 not */
	int (*modprobe)(void *ctx, const char *module); /* 0 when modprobe exited 0 */
	int (*cancelled)(void *ctx);  /* 1 once SIGTERM/SIGINT/SIGHUP is pending; may be NULL */
	long long (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int ms);
};

enum vfio_fn_result {
	VFIO_FN_UNCHANGED,   /* nothing to do for it */
	VFIO_FN_SWITCHED,
	VFIO_FN_UNTOUCHED,   /* the plan stopped before reaching it */
	VFIO_FN_ROLLED_BACK, /* touched, then restored */
	VFIO_FN_STUCK,       /* touched and could not be restored */
};

struct vfio_result {
	int exit;                  /* 0 done, 4 refused (driver could not be loaded), 5 rolled back, 6 stuck */
	char why[768];             /* the failure */
	enum vfio_fn_result fn[VFIO_FN_MAX];
	char final[VFIO_FN_MAX][VFIO_DRV_MAX]; /* driver bound at the end, "" none; "?" unreadable */
};

const char *vfio_fn_result_str(enum vfio_fn_result r);

/* Runs plan p (verdict GO) made from s. Before a function's first step its
 * live state must still be the snapshot's (else the step fails: someone
 * else moved it). Each wait polls ops->state every 10 ms for up to
 * timeout_ms. A pending termination signal (ops->cancelled) fails the next
 * step. On a failed step every function written to so far is restored,
 * last first: its original driver_override, then (when its driver differs)
 * unbind and, when it had a driver, drivers_probe and a wait for that
 * driver. Progress goes to lg. Fills res and returns res->exit. */
int vfio_apply(const struct vfio_snap *s, const struct vfio_plan *p, const struct vfio_ops *ops,
	       long long timeout_ms, const struct fb_log *lg, struct vfio_result *res);

/* The real operations on <host>/sys. modprobe runs "modprobe -q -- MODULE":
 * with root non-NULL inside chroot(root), the first of /sbin, /usr/sbin,
 * /bin, /usr/bin modprobe that executes there (looked up inside the chroot,
 * so Debian's absolute /sbin/modprobe -> /bin/kmod works); without root, or
 * when chroot is not permitted, the first modprobe on $PATH. */
struct vfio_real {
	const struct hostfs *h;
	const char *root;   /* chroot for modprobe, or NULL */
	const sigset_t *stop; /* the signals that cancel (blocked by the caller), or NULL */
	const struct fb_log *log;
};
void vfio_ops_real(struct vfio_ops *ops, struct vfio_real *ctx);

#endif
