/* vfio: moving PCI functions between drivers through sysfs, in three
 * separately testable steps:
 *
 *   vfio_snapshot  reads the device, its IOMMU group and device links from
 *                  <host>/sys (through hostfs) into a plain struct, with
 *                  who holds the functions' device nodes (vfio_busy.c:
 *                  <host>/proc/PID/fd) and, for --to vfio, each function's
 *                  VFIO variant driver (vfio_alias.c: modules.alias);
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
#define VFIO_AUTO "vfio"       /* --to vfio: per function, the best VFIO variant driver (vfio_alias) */
#define VFIO_NODE_MAX 4        /* device nodes per function we look for holders of */
#define VFIO_NODE_PATH 48
#define VFIO_HOLDER_MAX 16     /* holders recorded (all are counted) */
#define VFIO_SCAN_PIDS 65536   /* processes looked at, at most */
#define VFIO_SCAN_FDS (1 << 20) /* open files looked at, all processes together, at most */
#define VFIO_WHY_MAX 224

/* A character device node of a function: its DRM nodes (<dev>/drm/cardN,
 * renderDN: major:minor from their sysfs "dev"); on nvidia, /dev/nvidiaN
 * (195:N, N the "Device Minor:" of /proc/driver/nvidia/gpus/<addr>/information);
 * on a VFIO driver, /dev/vfio/<group> (/sys/class/vfio/<group>/dev) and its
 * cdev /dev/vfio/devices/vfioN (<dev>/vfio-dev/vfioN/dev). */
struct vfio_node {
	char path[VFIO_NODE_PATH]; /* as the host names it: "/dev/dri/card0" */
	unsigned maj, min;
	int fake;                  /* <host>/dev holds a plain file there (a test tree): an fd
				    * link naming exactly path is a holder too */
};

/* A process holding a node open (found in <host>/proc/PID/fd). */
struct vfio_holder {
	int pid;
	int fn;                    /* index into the snapshot's functions */
	char comm[17];             /* /proc/PID/comm, "?" when it went away */
	char node[VFIO_NODE_PATH];
};

enum vfio_scan {
	VFIO_SCAN_DONE,    /* every process was looked at (or there was nothing to look for) */
	VFIO_SCAN_PARTIAL, /* some could not be (scan_why says which and why) */
	VFIO_SCAN_NONE,    /* <host>/proc could not be read at all */
};

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
	struct vfio_node node[VFIO_NODE_MAX];
	size_t nnodes;
	size_t nodes_dropped;     /* device nodes past VFIO_NODE_MAX: not looked for */
	int nv_lock;              /* <host>/proc/driver/nvidia/gpus/<addr>/unbindLock exists */
	/* the VFIO driver this function takes when the target is VFIO_AUTO ("" otherwise) */
	char want[VFIO_DRV_MAX];
	int want_loaded;          /* <host>/sys/bus/pci/drivers/<want> exists */
	char want_why[VFIO_WHY_MAX]; /* the alias line that chose it, or why vfio-pci */
};

struct vfio_snap {
	char addr[VFIO_ADDR_MAX];    /* the device asked for */
	char group[16];              /* IOMMU group number, "" when the device has none */
	struct vfio_fn fn[VFIO_FN_MAX]; /* sorted by address; the device is one of them */
	size_t n;
	size_t dev;                  /* index of the device in fn */
	char target[VFIO_DRV_MAX];   /* the requested driver or VFIO_DEFAULT */
	int target_loaded;           /* <host>/sys/bus/pci/drivers/<target> exists (1 for default) */
	struct vfio_holder holder[VFIO_HOLDER_MAX]; /* who holds the functions' nodes */
	size_t nholders;             /* recorded in holder */
	size_t holders;              /* found (more than recorded when over VFIO_HOLDER_MAX) */
	enum vfio_scan scan;
	char scan_why[VFIO_WHY_MAX];  /* PARTIAL, NONE: what was not looked at */
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
 * group or is linked to it; each function's device nodes and who holds
 * them (vfio_busy_scan_); with target VFIO_AUTO each function's VFIO
 * variant (vfio_alias_best). Returns 0, -FB_ENOENT when the device does not
 * exist, -FB_E2BIG when the group has more than VFIO_FN_MAX functions, or
 * -FB_EIO / -FB_EINVAL (an unreadable or malformed driver link or
 * driver_override) with ei naming the file. */
int vfio_snapshot(const struct hostfs *h, const char *addr, const char *target, struct vfio_snap *s,
		  struct fb_errinfo *ei);

/* The best VFIO variant driver for the device whose sysfs modalias is
 * modalias ("pci:v000010DEd00002941sv...bc03sc02i00"), from the host's
 * <host>/lib/modules/<release>/modules.alias (release from
 * <host>/proc/sys/kernel/osrelease, else uname), read line by line: of
 * the "alias vfio_pci:PATTERN MODULE" lines whose seven fields (v, d, sv,
 * sd, bc, sc, i) each equal the device's or are "*", the one with the
 * fewest "*" fields, the first of equals (libvirt's
 * virPCIDeviceFindBestVFIOVariant rule). Writes the module name (or
 * "vfio-pci") into drv (VFIO_DRV_MAX) and the reason into why
 * (VFIO_WHY_MAX): the alias line, or why none. Lines longer than 511 bytes
 * are skipped, a file over 64 MiB is read no further (said in why). */
void vfio_alias_best(const struct hostfs *h, const char *modalias, char *drv, char *why);

/* The same over an open modules.alias (tests, fuzzing); where names the
 * file in why. */
void vfio_alias_best_fd(int fd, const char *where, const char *modalias, char *drv, char *why);

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
	VFIO_STEP_ULOCK, /* take NVIDIA's unbindLock of fn (path, in procfs): write "1", read back "1" */
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
	char why[1536];              /* the refusal, naming the devices */
	char warn[2048];             /* a warning to print with a GO plan, or "" */
	char fn_target[VFIO_FN_MAX][VFIO_DRV_MAX]; /* target per function, VFIO_DEFAULT, or VFIO_LEAVE */
	int fn_moves[VFIO_FN_MAX];   /* 1 when it has steps */
	int force;                   /* the request's force, for apply */
	struct vfio_step step[VFIO_STEP_MAX];
	size_t n;
};

/* Snapshot + request -> plan. Pure: reads nothing but its arguments. The
 * refusals (each lifted by req->force): a moving function whose device
 * nodes a process holds open (each named, pid and command); the device is a bridge; moving to a
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
	/* reads the file at path into buf (NUL-terminated, one '\n' removed) */
	int (*read)(void *ctx, const char *path, char *buf, size_t size);
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

/* Runs plan p (verdict GO) made from s. Before any sysfs write: LOAD steps
 * (modprobe), then ULOCK steps: NVIDIA's unbindLock is taken by writing
 * "1" (the driver acts on close: only when nothing has the GPU open) and
 * reading back "1"; one not taken refuses the switch (exit 4, the locks
 * already taken released with "0", nothing else written) unless p->force.
 * A function rolled back to its driver gets its lock released. Before a function's first step its
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
