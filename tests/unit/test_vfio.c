/* core/vfio: address parsing, snapshots of the fixture tree, the plan as a
 * table of snapshots -> write lists, and apply against a model of the
 * kernel's driver-binding files with a failure injected at every step. */
#include "t.h"

#include "../../core/sysfs.h"
#include "../../core/vfio.h"

/* ---- building snapshots ------------------------------------------------- */

/* Adds a function: flags is a string of letters: d = the device, g = in
 * the group, l = linked, v = boot_vga 1, n = no IOMMU group, s = SR-IOV VFs
 * enabled. */
static void fn_add(struct vfio_snap *s, const char *addr, const char *cls, const char *drv, const char *ov,
		   const char *flags)
{
	struct vfio_fn *f = &s->fn[s->n];

	memset(f, 0, sizeof(*f));
	snprintf(f->addr, sizeof(f->addr), "%s", addr);
	snprintf(f->cls, sizeof(f->cls), "%s", cls);
	snprintf(f->driver, sizeof(f->driver), "%s", drv);
	snprintf(f->override, sizeof(f->override), "%s", ov);
	f->boot_vga = strchr(flags, 'v') ? 1 : -1;
	f->in_group = strchr(flags, 'g') != NULL;
	f->linked = strchr(flags, 'l') != NULL;
	f->no_group = strchr(flags, 'n') != NULL;
	f->sriov_vfs = strchr(flags, 's') != NULL;
	if (strchr(flags, 'd')) {
		f->is_device = 1;
		s->dev = s->n;
		snprintf(s->addr, sizeof(s->addr), "%s", addr);
	}
	s->n++;
}

static void snap_init(struct vfio_snap *s, const char *group, const char *target, int loaded)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->group, sizeof(s->group), "%s", group);
	snprintf(s->target, sizeof(s->target), "%s", target);
	s->target_loaded = loaded;
}

/* The plan as text: "GO|NOTHING|REFUSED" then one line per step. */
static void plan_text(const struct vfio_snap *s, const struct vfio_plan *p, char *out, size_t size)
{
	static const char *const v[] = { "GO", "NOTHING", "REFUSED" };
	size_t n = (size_t)snprintf(out, size, "%s\n", v[p->verdict]);

	for (size_t k = 0; k < p->n && n < size; k++) {
		char line[256];

		vfio_step_str(s, &p->step[k], "/", line, sizeof(line));
		n += (size_t)snprintf(out + n, size - n, "%s\n", line);
	}
}

/* ---- the plan table ----------------------------------------------------- */

enum scen {
	S_GPU_HDA,      /* nvidia GPU + snd_hda_intel HDA in group 2, a root port too */
	S_GPU_HDA_VFIO, /* both on vfio-pci with overrides */
	S_GPU_NIC,      /* group shared with another card's NIC */
	S_BOOT_VGA,
	S_NO_GROUP,
	S_LONG_DOMAIN,  /* 10000:01:00.0, unbound */
	S_HALF,         /* GPU on vfio-pci, HDA still on snd_hda_intel */
	S_TWO_GPUS,     /* two GPUs of one class behind a switch in one group */
	S_LINKED,       /* HDA consumer outside the group */
	S_BRIDGE,       /* the device is a bridge */
	S_DRIVERLESS,   /* an unrelated driverless member */
	S_STALE,        /* on nvidia, but the override says vfio-pci */
	S_SRIOV,        /* a NIC PF with VFs enabled */
	S_STUB,         /* a member held by pci-stub */
};

static void scen(struct vfio_snap *s, enum scen sc, const char *target, int loaded)
{
	switch (sc) {
	case S_GPU_HDA:
		snap_init(s, "2", target, loaded);
		fn_add(s, "0000:00:1c.0", "060400", "pcieport", "", "g");
		fn_add(s, "0000:01:00.0", "030000", "nvidia", "", "dgl");
		fn_add(s, "0000:01:00.1", "040300", "snd_hda_intel", "", "gl");
		break;
	case S_GPU_HDA_VFIO:
		snap_init(s, "6", target, loaded);
		fn_add(s, "0000:06:00.0", "030000", "vfio-pci", "vfio-pci", "dg");
		fn_add(s, "0000:06:00.1", "040300", "vfio-pci", "vfio-pci", "g");
		break;
	case S_GPU_NIC:
		snap_init(s, "3", target, loaded);
		fn_add(s, "0000:02:00.0", "030200", "nvidia", "", "dg");
		fn_add(s, "0000:03:00.0", "020000", "ice", "", "g");
		break;
	case S_BOOT_VGA:
		snap_init(s, "4", target, loaded);
		fn_add(s, "0000:04:00.0", "030000", "ast", "", "dgv");
		break;
	case S_NO_GROUP:
		snap_init(s, "", target, loaded);
		fn_add(s, "0000:05:00.0", "030200", "nvidia", "", "dgn");
		break;
	case S_LONG_DOMAIN:
		snap_init(s, "7", target, loaded);
		fn_add(s, "10000:01:00.0", "030200", "", "", "dg");
		break;
	case S_HALF:
		snap_init(s, "2", target, loaded);
		fn_add(s, "0000:01:00.0", "030000", "vfio-pci", "vfio-pci", "dg");
		fn_add(s, "0000:01:00.1", "040300", "snd_hda_intel", "", "g");
		break;
	case S_TWO_GPUS:
		snap_init(s, "9", target, loaded);
		fn_add(s, "0000:40:00.0", "060400", "pcieport", "", "g");
		fn_add(s, "0000:41:00.0", "030200", "nvidia", "", "dg");
		fn_add(s, "0000:42:00.0", "030200", "nvidia", "", "g");
		break;
	case S_LINKED:
		snap_init(s, "2", target, loaded);
		fn_add(s, "0000:01:00.0", "030000", "nvidia", "", "dg");
		fn_add(s, "0000:08:00.0", "040300", "snd_hda_intel", "", "l");
		break;
	case S_BRIDGE:
		snap_init(s, "1", target, loaded);
		fn_add(s, "0000:00:1c.0", "060400", "pcieport", "", "dg");
		break;
	case S_DRIVERLESS:
		snap_init(s, "3", target, loaded);
		fn_add(s, "0000:02:00.0", "030200", "nvidia", "", "dg");
		fn_add(s, "0000:03:00.0", "020000", "", "", "g");
		break;
	case S_STALE:
		snap_init(s, "2", target, loaded);
		fn_add(s, "0000:01:00.0", "030000", "nvidia", "vfio-pci", "dg");
		break;
	case S_SRIOV:
		snap_init(s, "12", target, loaded);
		fn_add(s, "0000:3b:00.0", "020000", "mlx5_core", "", "dgs");
		break;
	case S_STUB:
		snap_init(s, "3", target, loaded);
		fn_add(s, "0000:02:00.0", "030200", "nvidia", "", "dg");
		fn_add(s, "0000:02:00.1", "040300", "pci-stub", "", "g");
		break;
	}
}

#define DEV(a) "/sys/bus/pci/devices/" a
#define MOVE(a, drv, from) \
	"write " DEV(a) "/driver_override: " drv "\n" \
	"write " DEV(a) "/driver/unbind: " a "\n" \
	"write /sys/bus/pci/drivers_probe: " a "\n" \
	"wait until " a " is bound to " drv "\n"
#define HOST(a) "a host (non-VFIO) driver"
#define BACK(a) \
	"write " DEV(a) "/driver_override: \\n\n" \
	"write " DEV(a) "/driver/unbind: " a "\n" \
	"write /sys/bus/pci/drivers_probe: " a "\n" \
	"wait until " a " is bound to a host (non-VFIO) driver\n"

struct plan_case {
	const char *name;
	enum scen sc;
	const char *target;
	int loaded, force;
	enum vfio_group_mode group;
	const char *want;       /* plan_text */
	const char *why, *warn; /* substrings of p.why / p.warn, or NULL */
};

static const struct plan_case plan_cases[] = {
	{ "GPU + HDA to vfio-pci: both move, the root port stays", S_GPU_HDA, "vfio-pci", 1, 0, VFIO_GROUP_AUTO,
	  "GO\n" MOVE("0000:01:00.0", "vfio-pci", "nvidia") MOVE("0000:01:00.1", "vfio-pci", "snd_hda_intel"),
	  NULL, NULL },
	{ "already bound: nothing to do", S_GPU_HDA_VFIO, "vfio-pci", 1, 0, VFIO_GROUP_AUTO, "NOTHING\n", NULL,
	  NULL },
	{ "already bound, target not even loaded: nothing to do", S_GPU_HDA, "nvidia", 0, 0, VFIO_GROUP_AUTO,
	  "NOTHING\n", NULL, NULL },
	{ "half moved: only the HDA function", S_HALF, "vfio-pci", 1, 0, VFIO_GROUP_AUTO,
	  "GO\n" MOVE("0000:01:00.1", "vfio-pci", "snd_hda_intel"), NULL, NULL },
	{ "group with another card's NIC: refused, naming it", S_GPU_NIC, "vfio-pci", 1, 0, VFIO_GROUP_AUTO,
	  "REFUSED\n", "IOMMU group 3 also holds unrelated devices that would move: 0000:03:00.0 (class 0200, ice)",
	  NULL },
	{ "group with another card's NIC, --force: the NIC moves too", S_GPU_NIC, "vfio-pci", 1, 1,
	  VFIO_GROUP_AUTO, "GO\n" MOVE("0000:02:00.0", "vfio-pci", "nvidia") MOVE("0000:03:00.0", "vfio-pci", "ice"),
	  NULL, "forced past: IOMMU group 3" },
	{ "group with another card's NIC, --group device: only the GPU, a warning", S_GPU_NIC, "vfio-pci", 1, 0,
	  VFIO_GROUP_DEVICE, "GO\n" MOVE("0000:02:00.0", "vfio-pci", "nvidia"), NULL,
	  "--group device: IOMMU group 3 is not viable for VFIO while 0000:03:00.0 (ice) keep their host driver" },
	{ "--group device on GPU + HDA: the HDA stays", S_GPU_HDA, "vfio-pci", 1, 0, VFIO_GROUP_DEVICE,
	  "GO\n" MOVE("0000:01:00.0", "vfio-pci", "nvidia"), NULL, "0000:01:00.1 (snd_hda_intel)" },
	{ "boot VGA to vfio-pci: refused", S_BOOT_VGA, "vfio-pci", 1, 0, VFIO_GROUP_AUTO, "REFUSED\n",
	  "0000:04:00.0 is the boot VGA device (boot_vga=1)", NULL },
	{ "boot VGA with --force", S_BOOT_VGA, "vfio-pci", 1, 1, VFIO_GROUP_AUTO,
	  "GO\n" MOVE("0000:04:00.0", "vfio-pci", "ast"), NULL, "boot VGA" },
	{ "boot VGA to another host driver is no VFIO move: allowed", S_BOOT_VGA, "simpledrm", 1, 0, VFIO_GROUP_AUTO,
	  "GO\n" MOVE("0000:04:00.0", "simpledrm", "ast"), NULL, NULL },
	{ "no IOMMU group: refused for vfio-pci", S_NO_GROUP, "vfio-pci", 1, 0, VFIO_GROUP_AUTO, "REFUSED\n",
	  "0000:05:00.0 has no IOMMU group", NULL },
	{ "--to default clears the overrides; both wait for a host driver", S_GPU_HDA_VFIO, "default", 1, 0,
	  VFIO_GROUP_AUTO, "GO\n" BACK("0000:06:00.0") BACK("0000:06:00.1"), NULL, NULL },
	{ "--to default with no override: nothing to do", S_GPU_HDA, "default", 1, 0, VFIO_GROUP_AUTO, "NOTHING\n",
	  NULL, NULL },
	{ "--to nvidia from vfio-pci: the GPU to nvidia, the HDA to its default driver", S_GPU_HDA_VFIO, "nvidia", 1,
	  0, VFIO_GROUP_AUTO,
	  "GO\n"
	  "write " DEV("0000:06:00.0") "/driver_override: nvidia\n"
	  "write " DEV("0000:06:00.0") "/driver/unbind: 0000:06:00.0\n"
	  "write /sys/bus/pci/drivers_probe: 0000:06:00.0\n"
	  "wait until 0000:06:00.0 is bound to nvidia\n" BACK("0000:06:00.1"),
	  NULL, NULL },
	{ "domain of 5 hex digits, unbound: no unbind, target loaded first", S_LONG_DOMAIN, "vfio-pci", 0, 0,
	  VFIO_GROUP_AUTO,
	  "GO\nmodprobe vfio-pci\n"
	  "write " DEV("10000:01:00.0") "/driver_override: vfio-pci\n"
	  "write /sys/bus/pci/drivers_probe: 10000:01:00.0\n"
	  "wait until 10000:01:00.0 is bound to vfio-pci\n",
	  NULL, NULL },
	{ "two GPUs of one class in a group move together", S_TWO_GPUS, "vfio-pci", 1, 0, VFIO_GROUP_AUTO,
	  "GO\n" MOVE("0000:41:00.0", "vfio-pci", "nvidia") MOVE("0000:42:00.0", "vfio-pci", "nvidia"), NULL,
	  "IOMMU group 9: other cards of the same class move too: 0000:42:00.0 (nvidia)" },
	{ "a device-link consumer outside the group moves with the GPU", S_LINKED, "vfio-pci", 1, 0,
	  VFIO_GROUP_AUTO, "GO\n" MOVE("0000:01:00.0", "vfio-pci", "nvidia") MOVE("0000:08:00.0", "vfio-pci", "snd_hda_intel"),
	  NULL, NULL },
	{ "a bridge as the device: refused", S_BRIDGE, "vfio-pci", 1, 0, VFIO_GROUP_AUTO, "REFUSED\n",
	  "0000:00:1c.0 is a bridge (class 0604)", NULL },
	{ "an unrelated driverless member is viable already: left alone", S_DRIVERLESS, "vfio-pci", 1, 0,
	  VFIO_GROUP_AUTO, "GO\n" MOVE("0000:02:00.0", "vfio-pci", "nvidia"), NULL, NULL },
	{ "bound to the target with a stale override: only the override is fixed", S_STALE, "nvidia", 1, 0,
	  VFIO_GROUP_AUTO, "GO\nwrite " DEV("0000:01:00.0") "/driver_override: nvidia\n", NULL, NULL },
	{ "a function with SR-IOV VFs enabled: refused", S_SRIOV, "vfio-pci", 1, 0, VFIO_GROUP_AUTO, "REFUSED\n",
	  "0000:3b:00.0 has SR-IOV virtual functions enabled", NULL },
	{ "a member on pci-stub keeps the group viable: left alone", S_STUB, "vfio-pci", 1, 0, VFIO_GROUP_AUTO,
	  "GO\n" MOVE("0000:02:00.0", "vfio-pci", "nvidia"), NULL, NULL },
};

static void test_plans(void)
{
	for (size_t i = 0; i < sizeof(plan_cases) / sizeof(plan_cases[0]); i++) {
		const struct plan_case *c = &plan_cases[i];
		struct vfio_snap s;
		struct vfio_plan p;
		struct vfio_req req = { .group = c->group, .force = c->force };
		char got[4096], name[256];

		scen(&s, c->sc, c->target, c->loaded);
		vfio_plan(&s, &req, &p);
		plan_text(&s, &p, got, sizeof(got));
		snprintf(name, sizeof(name), "plan: %s", c->name);
		T_STR(name, got, c->want);
		if (c->why) {
			snprintf(name, sizeof(name), "plan: %s: why", c->name);
			T_OK(name, strstr(p.why, c->why) != NULL, "why \"%s\" lacks \"%s\"", p.why, c->why);
		} else if (p.verdict != VFIO_PLAN_REFUSED) {
			snprintf(name, sizeof(name), "plan: %s: no refusal text", c->name);
			T_STR(name, p.why, "");
		}
		snprintf(name, sizeof(name), "plan: %s: warning", c->name);
		if (c->warn)
			T_OK(name, strstr(p.warn, c->warn) != NULL, "warn \"%s\" lacks \"%s\"", p.warn, c->warn);
		else
			T_STR(name, p.warn, "");
	}
}

/* ---- addresses ---------------------------------------------------------- */

static void test_addr(void)
{
	static const struct {
		const char *in, *out; /* out NULL: rejected */
	} c[] = {
		{ "0000:65:00.0", "0000:65:00.0" },
		{ "0000:65:1F.7", "0000:65:1f.7" },
		{ "65:00.0", "0000:65:00.0" },
		{ "10000:02:05.0", "10000:02:05.0" },
		{ "00000:01:00.0", "0000:01:00.0" },      /* as the kernel spells it */
		{ "00010000:02:05.0", "10000:02:05.0" },
		{ "ffffffff:ff:1f.7", "ffffffff:ff:1f.7" },
		{ "100000000:00:00.0", NULL }, /* domain over 32 bits */
		{ "000:65:00.0", NULL },
		{ "0000:65:20.0", NULL }, /* device > 1f */
		{ "0000:65:00.8", NULL }, /* function > 7 */
		{ "0000:65:00", NULL },
		{ "0000:6:00.0", NULL },
		{ "0000:65:00.0 ", NULL },
		{ "0000:65:00.0/..", NULL },
		{ "../65:00.0", NULL },
		{ "g000:65:00.0", NULL },
		{ "", NULL },
		{ "0000-65-00.0", NULL },
		{ "0000:65:00.00", NULL },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char out[VFIO_ADDR_MAX] = "", name[96];
		int rc = vfio_parse_addr(c[i].in, out);

		snprintf(name, sizeof(name), "address \"%s\"", c[i].in);
		if (c[i].out)
			T_OK(name, rc == 0 && strcmp(out, c[i].out) == 0, "rc %d, \"%s\"", rc, out);
		else
			T_INT(name, rc, -FB_EINVAL);
	}
	T_INT("driver name vfio-pci", vfio_valid_driver("vfio-pci"), 1);
	T_INT("driver name nvgrace_gpu_vfio_pci", vfio_valid_driver("nvgrace_gpu_vfio_pci"), 1);
	T_INT("driver name with '/'", vfio_valid_driver("../vfio"), 0);
	T_INT("driver name empty", vfio_valid_driver(""), 0);
	T_INT("driver name \"..\"", vfio_valid_driver(".."), 0);
	T_INT("driver name \"-r\" (an option to modprobe)", vfio_valid_driver("-r"), 0);
	T_INT("VFIO variants recognised", vfio_is_vfio("nvgrace_gpu_vfio_pci") && vfio_is_vfio("vfio-pci") &&
						  !vfio_is_vfio("nvidia"), 1);
}

/* ---- snapshots of the fixture tree ------------------------------------- */

static void test_snapshot(void)
{
	struct hostfs h;
	struct vfio_snap s;
	struct fb_errinfo ei;
	char prefix[600];
	const char *top = getenv("FB_TOP");
	int rc;

	snprintf(prefix, sizeof(prefix), "%s/tests/fixtures/sysfs/vfio/", top ? top : ".");
	hostfs_init(&h);
	hostfs_setup(&h, prefix);

	fb_errinfo_init(&ei);
	rc = vfio_snapshot(&h, "0000:01:00.0", "vfio-pci", &s, &ei);
	T_INT("snapshot GPU+HDA: ok", rc, 0);
	T_STR("snapshot GPU+HDA: group", s.group, "2");
	T_INT("snapshot GPU+HDA: two functions", s.n, 2);
	T_OK("snapshot GPU+HDA: the device, nvidia, not the boot VGA",
	     s.fn[s.dev].is_device && !strcmp(s.fn[s.dev].driver, "nvidia") && s.fn[s.dev].boot_vga == 0 &&
		     !strcmp(s.fn[s.dev].cls, "030000") && !strcmp(s.fn[s.dev].override, ""),
	     "%s %s %d", s.fn[s.dev].addr, s.fn[s.dev].driver, s.fn[s.dev].boot_vga);
	T_OK("snapshot GPU+HDA: the HDA, in the group and linked (consumer:pci:)",
	     s.n == 2 && !strcmp(s.fn[1].addr, "0000:01:00.1") && s.fn[1].in_group && s.fn[1].linked &&
		     !strcmp(s.fn[1].driver, "snd_hda_intel") && s.fn[1].boot_vga == -1,
	     "%s in_group %d linked %d", s.fn[1].addr, s.fn[1].in_group, s.fn[1].linked);
	T_INT("snapshot GPU+HDA: vfio-pci is registered", s.target_loaded, 1);

	rc = vfio_snapshot(&h, "0000:06:00.1", "nouveau", &s, &ei);
	T_OK("snapshot: overrides read, \"(null)\" is unset, nouveau not registered",
	     rc == 0 && s.n == 2 && !strcmp(s.fn[0].override, "vfio-pci") && !strcmp(s.fn[1].override, "vfio-pci") &&
		     s.dev == 1 && !s.target_loaded,
	     "rc %d n %zu", rc, s.n);
	rc = vfio_snapshot(&h, "0000:05:00.0", "vfio-pci", &s, &ei);
	T_OK("snapshot: no IOMMU group: just the device", rc == 0 && s.n == 1 && s.group[0] == '\0', "rc %d", rc);
	rc = vfio_snapshot(&h, "10000:01:00.0", "vfio-pci", &s, &ei);
	T_OK("snapshot: VMD domain, unbound", rc == 0 && s.n == 1 && !strcmp(s.group, "7") && !s.fn[0].driver[0],
	     "rc %d", rc);
	rc = vfio_snapshot(&h, "0000:02:00.0", "vfio-pci", &s, &ei);
	T_OK("snapshot: the NIC is in the A30's group",
	     rc == 0 && s.n == 2 && !strcmp(s.fn[1].addr, "0000:03:00.0") && !strcmp(s.fn[1].cls, "020000"), "rc %d",
	     rc);
	rc = vfio_snapshot(&h, "0000:99:00.0", "vfio-pci", &s, &ei);
	T_OK("snapshot: a missing device is -FB_ENOENT naming it",
	     rc == -FB_ENOENT && s.n == 0 && strstr(ei.what, "0000:99:00.0"), "rc %d what %s", rc, ei.what);
}


/* ---- --to vfio: the variant from modules.alias -------------------------- */

static void alias_case(const char *file, const char *name, const char *modalias, const char *want_drv,
		       const char *want_why)
{
	char drv[VFIO_DRV_MAX], why[VFIO_WHY_MAX], n[256];
	int fd = open(file, O_RDONLY);

	vfio_alias_best_fd(fd, "modules.alias", modalias, drv, why);
	close(fd);
	snprintf(n, sizeof(n), "variant: %s", name);
	T_OK(n, !strcmp(drv, want_drv) && strstr(why, want_why), "\"%s\": %s", drv, why);
}

static void test_alias(void)
{
	static const struct {
		const char *name, *modalias, *drv, *why;
	} c[] = {
		{ "GB200 of an OEM: the alias naming its subsystem (3 wildcards) beats nvgrace's (5), listed first",
		  "pci:v000010DEd00002941sv000010DEsd00002199bc03sc02i00", "fb_gb200_oem_vfio_pci",
		  "alias vfio_pci:v000010DEd00002941sv000010DEsd00002199bc*sc*i* fb_gb200_oem_vfio_pci (3 wildcard fields)" },
		{ "GB200, another subsystem: nvgrace_gpu_vfio_pci", "pci:v000010DEd00002941sv000010DEsd00001111bc03sc02i00",
		  "nvgrace_gpu_vfio_pci", "alias vfio_pci:v000010DEd00002941sv*sd*bc*sc*i* nvgrace_gpu_vfio_pci (5 wildcard" },
		{ "GH100: nvgrace_gpu_vfio_pci", "pci:v000010DEd00002342sv000010DEsd000016EBbc03sc02i00",
		  "nvgrace_gpu_vfio_pci", "d00002342" },
		{ "ConnectX VF: mlx5_vfio_pci (5 wildcards) beats the class-only alias (6) listed before it",
		  "pci:v000015B3d0000101Esv000015B3sd00000026bc02sc00i00", "mlx5_vfio_pci", "d0000101E" },
		{ "hex case differs between alias and modalias: still a match",
		  "pci:v000015B3d00001021sv000015B3sd00000001bc02sc00i00", "mlx5_vfio_pci", "d00001021" },
		{ "equally specific aliases: the first in the file",
		  "pci:v00001AF4d00001041sv00001AF4sd00001100bc02sc00i00", "virtio_vfio_pci", "virtio_vfio_pci (5" },
		{ "two 6-wildcard aliases: the first in the file",
		  "pci:v00008086d00001592sv00008086sd00000002bc02sc00i00", "fb_any_ethernet_vfio_pci", "(6 wildcard" },
		{ "no module name, a name that is no driver name, a partial wildcard: no match, vfio-pci",
		  "pci:v0000ABCDd00001234sv00000000sd00000000bc12sc00i00", "vfio-pci", "no variant matched" },
		{ "a line past 511 bytes is skipped, the next one read",
		  "pci:v0000ABCDd00005678sv00000000sd00000000bc12sc00i00", "fb_after_long_line", "fb_after_long_line" },
		{ "the GPU's HDA function: no variant (vfio_pci's own catch-all line is none), vfio-pci",
		  "pci:v000010DEd00001AEFsv000010DEsd0000147Dbc04sc03i00",
		  "vfio-pci", "no variant matched (15 vfio_pci aliases in modules.alias, some lines unreadable); vfio-pci" },
		{ "not a PCI modalias", "platform:tegra-host1x", "vfio-pci", "is not a PCI one" },
		{ "a malformed PCI modalias", "pci:v000010DEd2941", "vfio-pci", "is not a PCI one" },
	};
	char file[600], big[] = "/tmp/fb-vfio-alias-XXXXXX", drv[VFIO_DRV_MAX], why[VFIO_WHY_MAX];
	const char *top = getenv("FB_TOP");
	int fd, pfd[2];
	FILE *f;

	snprintf(file, sizeof(file), "%s/tests/fixtures/vfio-alias/modules.alias", top ? top : ".");
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		alias_case(file, c[i].name, c[i].modalias, c[i].drv, c[i].why);

	/* streamed: 3 MB of other aliases (read buffers end mid-line), the match
	 * last, with no newline after it */
	if ((fd = mkstemp(big)) < 0 || !(f = fdopen(fd, "w"))) {
		perror(big);
		exit(2);
	}
	for (int i = 0; i < 60000; i++)
		fprintf(f, "alias pci:v%08Xd*sv*sd*bc*sc*i* fb_mod_%d\n", i, i);
	fprintf(f, "alias vfio_pci:v0000BEEFd0000CAFEsv*sd*bc*sc*i* fb_last_line_vfio_pci");
	fclose(f);
	alias_case(big, "3 MB streamed, the match on the last line without a newline",
		   "pci:v0000BEEFd0000CAFEsv00000000sd00000000bc12sc00i00", "fb_last_line_vfio_pci", "(5 wildcard");
	unlink(big);

	if (pipe(pfd) < 0)
		exit(2);
	vfio_alias_best_fd(pfd[0], "a pipe", "pci:v0000BEEFd0000CAFEsv00000000sd00000000bc12sc00i00", drv, why);
	T_OK("variant: a pipe is not read", !strcmp(drv, "vfio-pci") && strstr(why, "not a regular file"), "%s: %s", drv,
	     why);
	close(pfd[0]);
	close(pfd[1]);
}

/* ---- who holds the device nodes ---------------------------------------- */

/* A host tree in dir: a bochs display (00:02.0: card0, renderD128, a
 * connector), an NVIDIA GPU (01:00.0, Device Minor 3, an unbindLock), a
 * card whose node is 1:3 (03:00.0: the host's /dev/null, not planted), and
 * processes holding them. */
static void busy_tree(const char *dir)
{
	static const struct {
		const char *addr, *drv, *cls, *ma;
	} devs[] = {
		{ "0000:00:02.0", "bochs-drm", "0x038000", "pci:v00001234d00001111sv00001AF4sd00001100bc03sc80i00" },
		{ "0000:01:00.0", "nvidia", "0x030200", "pci:v000010DEd00002941sv000010DEsd00001111bc03sc02i00" },
		{ "0000:01:00.1", "snd_hda_intel", "0x040300", "pci:v000010DEd00001AEFsv000010DEsd0000147Dbc04sc03i00" },
		{ "0000:03:00.0", "fbtest-drm", "0x030000", "pci:v0000ABCDd00005678sv00000000sd00000000bc03sc00i00" },
		{ "0000:05:00.0", "vfio-pci", "0x030200", "pci:v000010DEd000020B5sv000010DEsd00001533bc03sc02i00" },
	};
	static const struct {
		const char *pid, *comm, *fd, *target; /* fd NULL: no fd directory (it exited) */
	} procs[] = {
		{ "100", "Xorg", "3", "/dev/dri/card0" },
		{ "100", "Xorg", "4", "/dev/dri/card0" }, /* the same node twice: one holder */
		{ "101", "sleep", "0", "/dev/dri/renderD128" },
		{ "102", "bash", "0", "pipe:[55]" },
		{ "102", "bash", "1", "socket:[123]" },
		{ "102", "bash", "2", "/dev/dri/card1" }, /* another card's node */
		{ "103", "nvidia-smi", "4", "/dev/nvidia3" },
		{ "105", "gone", NULL, NULL },
		{ "106", "fb\x1b[31mred\"", "9", "/dev/null" }, /* the host's 1:3 */
		{ "108", "qemu-system-x86", "20", "/dev/vfio/8" },
		{ "108", "qemu-system-x86", "21", "/dev/vfio/devices/vfio0" },
	};
	char p[1024], t[256];

	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		const char *a = devs[i].addr;
		int g = i == 0 ? 5 : i == 3 ? 7 : i == 4 ? 8 : 6;

#define P(fmt, ...) snprintf(p, sizeof(p), "%s/" fmt, dir, __VA_ARGS__)
		P("sys/devices/pci0000:00/%s/class", a);
		t_put(p, devs[i].cls, 0644);
		P("sys/devices/pci0000:00/%s/vendor", a);
		t_put(p, "0x1234", 0644);
		P("sys/devices/pci0000:00/%s/device", a);
		t_put(p, "0x1111", 0644);
		P("sys/devices/pci0000:00/%s/driver_override", a);
		t_put(p, "(null)\n", 0644);
		P("sys/devices/pci0000:00/%s/modalias", a);
		t_put(p, devs[i].ma, 0644);
		P("sys/devices/pci0000:00/%s/iommu_group", a);
		snprintf(t, sizeof(t), "../../../kernel/iommu_groups/%d", g);
		symlink(t, p);
		P("sys/devices/pci0000:00/%s/driver", a);
		snprintf(t, sizeof(t), "../../../bus/pci/drivers/%s", devs[i].drv);
		symlink(t, p);
		P("sys/bus/pci/drivers/%s", devs[i].drv);
		t_put(p, NULL, 0755);
		P("sys/bus/pci/devices/%s", a);
		snprintf(t, sizeof(t), "../../../devices/pci0000:00/%s", a);
		t_put(p, NULL, 0755);
		rmdir(p);
		symlink(t, p);
		P("sys/kernel/iommu_groups/%d/devices/%s", g, a);
		snprintf(t, sizeof(t), "../../../../devices/pci0000:00/%s", a);
		t_put(p, NULL, 0755);
		rmdir(p);
		symlink(t, p);
	}
	P("sys/bus/pci/drivers/%s", "vfio-pci");
	t_put(p, NULL, 0755);
	P("sys/devices/pci0000:00/%s/drm/card0/dev", "0000:00:02.0");
	t_put(p, "226:0\n", 0644);
	P("sys/devices/pci0000:00/%s/drm/card0/card0-Virtual-1/status", "0000:00:02.0");
	t_put(p, "connected\n", 0644);
	P("sys/devices/pci0000:00/%s/drm/renderD128/dev", "0000:00:02.0");
	t_put(p, "226:128\n", 0644);
	P("sys/devices/pci0000:00/%s/drm/card9/dev", "0000:03:00.0");
	t_put(p, "1:3\n", 0644);
	P("sys/devices/virtual/vfio/%s/dev", "8");
	t_put(p, "511:0\n", 0644);
	P("sys/class/vfio/%s", "8");
	t_put(p, NULL, 0755);
	rmdir(p);
	symlink("../../devices/virtual/vfio/8", p);
	P("sys/devices/pci0000:00/%s/vfio-dev/vfio0/dev", "0000:05:00.0");
	t_put(p, "510:0\n", 0644);
	P("proc/driver/nvidia/gpus/%s/information", "0000:01:00.0");
	t_put(p, "Model: \t\t NVIDIA GB200\nIRQ:   \t\t 42\nGPU UUID: \t GPU-1\nDevice Minor: \t 3\nBus Type: \t PCIe\n", 0644);
	P("proc/driver/nvidia/gpus/%s/unbindLock", "0000:01:00.0");
	t_put(p, "0\n", 0644);
	for (const char *const *n = (const char *const[]){ "dev/dri/card0", "dev/dri/renderD128", "dev/dri/card1",
							    "dev/nvidia3", "dev/vfio/8", "dev/vfio/devices/vfio0", NULL };
	     *n; n++) {
		P("%s", *n);
		t_put(p, "", 0644); /* a plain file: a test tree cannot mknod */
	}
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		P("proc/%s/comm", procs[i].pid);
		t_put(p, procs[i].comm, 0644);
		if (!procs[i].fd)
			continue;
		P("proc/%s/fd/%s", procs[i].pid, procs[i].fd);
		t_put(p, NULL, 0755);
		rmdir(p);
		symlink(procs[i].target, p);
	}
#undef P
}

static const struct vfio_holder *holder_of(const struct vfio_snap *s, int pid)
{
	for (size_t i = 0; i < s->nholders; i++)
		if (s->holder[i].pid == pid)
			return &s->holder[i];
	return NULL;
}

struct busy_run {
	const char *prefix;
	int scan;
	size_t holders;
};

static int busy_unpriv(void *arg)
{
	struct busy_run *b = arg;
	struct hostfs h;
	struct vfio_snap s;
	struct fb_errinfo ei;

	hostfs_init(&h);
	hostfs_setup(&h, b->prefix);
	fb_errinfo_init(&ei);
	if (vfio_snapshot(&h, "0000:00:02.0", "vfio-pci", &s, &ei) < 0)
		return 9;
	return (int)s.scan * 10 + (int)s.holders;
}

static void test_busy(void)
{
	char dir[] = "/tmp/fb-vfio-busy-XXXXXX", prefix[64], p[128];
	struct hostfs h;
	struct vfio_snap s;
	struct vfio_plan pl;
	struct vfio_req req = { .group = VFIO_GROUP_AUTO };
	struct fb_errinfo ei;
	const struct vfio_holder *hd = NULL;
	int rc;

	if (!mkdtemp(dir))
		exit(2);
	chmod(dir, 0755);
	busy_tree(dir);
	snprintf(prefix, sizeof(prefix), "%s/", dir);
	hostfs_init(&h);
	hostfs_setup(&h, prefix);
	fb_errinfo_init(&ei);

	rc = vfio_snapshot(&h, "0000:00:02.0", "vfio-pci", &s, &ei);
	T_INT("busy: snapshot of the display", rc, 0);
	T_OK("busy: its nodes card0 and renderD128 from drm/, the connector is none",
	     s.fn[0].nnodes == 2 && !strcmp(s.fn[0].node[0].path, "/dev/dri/card0") && s.fn[0].node[0].maj == 226 &&
		     s.fn[0].node[0].min == 0 && s.fn[0].node[0].fake && !strcmp(s.fn[0].node[1].path, "/dev/dri/renderD128") &&
		     s.fn[0].node[1].min == 128,
	     "%zu nodes: %s %u:%u", s.fn[0].nnodes, s.fn[0].node[0].path, s.fn[0].node[0].maj, s.fn[0].node[0].min);
	T_OK("busy: Xorg (twice on card0: once) and sleep hold it; bash's other card, pipe, socket do not; a vanished pid is skipped",
	     s.scan == VFIO_SCAN_DONE && s.holders == 2 && s.nholders == 2 && (hd = holder_of(&s, 100)) &&
		     !strcmp(hd->comm, "Xorg") && !strcmp(hd->node, "/dev/dri/card0") && (hd = holder_of(&s, 101)) &&
		     !strcmp(hd->comm, "sleep") && !strcmp(hd->node, "/dev/dri/renderD128") && !holder_of(&s, 102),
	     "scan %d, %zu holders: %s", s.scan, s.holders, s.scan_why);
	vfio_plan(&s, &req, &pl);
	T_OK("busy: the plan refuses, naming both holders",
	     pl.verdict == VFIO_PLAN_REFUSED && pl.n == 0 &&
		     strstr(pl.why, "in use: pid 100 (Xorg) holds /dev/dri/card0 of 0000:00:02.0") &&
		     strstr(pl.why, "pid 101 (sleep) holds /dev/dri/renderD128 of 0000:00:02.0") &&
		     strstr(pl.why, "(--force overrides)"),
	     "verdict %d: %s", pl.verdict, pl.why);
	req.force = 1;
	vfio_plan(&s, &req, &pl);
	T_OK("busy: --force: the plan goes, with a warning naming them",
	     pl.verdict == VFIO_PLAN_GO && strstr(pl.warn, "forced past: in use: pid 100 (Xorg)"), "%d: %s",
	     pl.verdict, pl.warn);
	req.force = 0;

	rc = vfio_snapshot(&h, "0000:00:02.0", "bochs-drm", &s, &ei);
	vfio_plan(&s, &req, &pl);
	T_OK("busy: held, but staying on its driver: nothing to do, no refusal",
	     rc == 0 && s.holders == 2 && pl.verdict == VFIO_PLAN_NOTHING, "rc %d verdict %d", rc, pl.verdict);
	snprintf(p, sizeof(p), "%s/sys/devices/pci0000:00/0000:00:02.0/driver_override", dir);
	t_put(p, "vfio-pci\n", 0644);
	rc = vfio_snapshot(&h, "0000:00:02.0", "bochs-drm", &s, &ei);
	vfio_plan(&s, &req, &pl);
	T_OK("busy: held, only a stale override rewritten (no unbind): goes",
	     rc == 0 && pl.verdict == VFIO_PLAN_GO && pl.n == 1 && !pl.why[0], "rc %d verdict %d n %zu", rc, pl.verdict,
	     pl.n);
	t_put(p, "(null)\n", 0644);

	rc = vfio_snapshot(&h, "0000:03:00.0", "vfio-pci", &s, &ei);
	T_OK("busy: matched by st_rdev, not by name: a node 1:3 held as /dev/null (the host's char device)",
	     rc == 0 && s.holders == 1 && (hd = holder_of(&s, 106)) && !strcmp(hd->node, "/dev/dri/card9") &&
		     !s.fn[0].node[0].fake,
	     "rc %d, %zu holders", rc, s.holders);
	T_OK("busy: a command name with control characters and quotes is made printable",
	     hd && !strcmp(hd->comm, "fb?[31mred?"), "\"%s\"", hd ? hd->comm : "");

	rc = vfio_snapshot(&h, "0000:05:00.0", "nvidia", &s, &ei);
	vfio_plan(&s, &req, &pl);
	T_OK("busy: on vfio-pci, its group's /dev/vfio/8 and its cdev held by QEMU: back to the host refused",
	     rc == 0 && s.fn[0].nnodes == 2 && !strcmp(s.fn[0].node[0].path, "/dev/vfio/8") &&
		     !strcmp(s.fn[0].node[1].path, "/dev/vfio/devices/vfio0") && s.holders == 2 &&
		     pl.verdict == VFIO_PLAN_REFUSED &&
		     strstr(pl.why, "pid 108 (qemu-system-x86) holds /dev/vfio/8 of 0000:05:00.0") &&
		     strstr(pl.why, "pid 108 (qemu-system-x86) holds /dev/vfio/devices/vfio0 of 0000:05:00.0"),
	     "rc %d nodes %zu holders %zu: %s", rc, s.fn[0].nnodes, s.holders, pl.why);

	rc = vfio_snapshot(&h, "0000:01:00.0", "vfio-pci", &s, &ei);
	T_OK("busy: NVIDIA: /dev/nvidia3 (Device Minor: 3, 195:3) held by nvidia-smi; its unbindLock seen",
	     rc == 0 && s.n == 2 && s.fn[0].nnodes == 1 && s.fn[0].node[0].maj == 195 && s.fn[0].node[0].min == 3 &&
		     s.fn[0].nv_lock && s.holders == 1 && (hd = holder_of(&s, 103)) && !strcmp(hd->node, "/dev/nvidia3"),
	     "rc %d n %zu nodes %zu holders %zu", rc, s.n, s.fn[0].nnodes, s.holders);
	vfio_plan(&s, &req, &pl);
	T_OK("busy: NVIDIA held: refused naming nvidia-smi",
	     pl.verdict == VFIO_PLAN_REFUSED && strstr(pl.why, "pid 103 (nvidia-smi) holds /dev/nvidia3 of 0000:01:00.0"),
	     "%s", pl.why);
	snprintf(p, sizeof(p), "%s/proc/103/fd/4", dir);
	unlink(p);
	rc = vfio_snapshot(&h, "0000:01:00.0", "vfio-pci", &s, &ei);
	vfio_plan(&s, &req, &pl);
	{
		char line[512], want[512];

		vfio_step_str(&s, &pl.step[0], "/", line, sizeof(line));
		snprintf(want, sizeof(want),
			 "take the NVIDIA unbind lock of 0000:01:00.0: write 1 to /proc/driver/nvidia/gpus/0000:01:00.0/unbindLock, read back 1");
		T_OK("busy: NVIDIA free: the plan takes its unbindLock first, before any sysfs write (only for the GPU)",
		     rc == 0 && pl.verdict == VFIO_PLAN_GO && pl.step[0].kind == VFIO_STEP_ULOCK && !strcmp(line, want) &&
			     pl.step[1].kind == VFIO_STEP_WRITE,
		     "rc %d verdict %d: %s", rc, pl.verdict, line);
		for (size_t k = 1; k < pl.n; k++)
			if (pl.step[k].kind == VFIO_STEP_ULOCK)
				T_OK("busy: one unbindLock step", 0, "step %zu", k);
	}

	/* --to vfio: each function its own variant */
	snprintf(p, sizeof(p), "%s/proc/sys/kernel/osrelease", dir);
	t_put(p, "6.1.0-fbtest\n", 0644);
	{
		char src[600], dst[700], *text = NULL;
		const char *top = getenv("FB_TOP");

		snprintf(src, sizeof(src), "%s/tests/fixtures/vfio-alias/modules.alias", top ? top : ".");
		snprintf(dst, sizeof(dst), "%s/lib/modules/6.1.0-fbtest/modules.alias", dir);
		if (sysfs_read_alloc(AT_FDCWD, src, 1 << 20, &text) < 0)
			exit(2);
		t_put(dst, text, 0644);
		free(text);
	}
	rc = vfio_snapshot(&h, "0000:01:00.0", VFIO_AUTO, &s, &ei);
	vfio_plan(&s, &req, &pl);
	{
		char txt[4096];

		plan_text(&s, &pl, txt, sizeof(txt));
		T_OK("--to vfio: the GPU to nvgrace_gpu_vfio_pci (modprobe'd), its HDA to vfio-pci",
		     rc == 0 && !strcmp(s.fn[0].want, "nvgrace_gpu_vfio_pci") && !s.fn[0].want_loaded &&
			     strstr(s.fn[0].want_why, "alias vfio_pci:v000010DEd00002941sv*sd*bc*sc*i* nvgrace_gpu_vfio_pci") &&
			     !strcmp(s.fn[1].want, "vfio-pci") && s.fn[1].want_loaded &&
			     strstr(s.fn[1].want_why, "no variant matched") && pl.verdict == VFIO_PLAN_GO &&
			     strstr(txt, "modprobe nvgrace_gpu_vfio_pci\n") && !strstr(txt, "modprobe vfio-pci") &&
			     strstr(txt, "0000:01:00.0/driver_override: nvgrace_gpu_vfio_pci\n") &&
			     strstr(txt, "0000:01:00.1/driver_override: vfio-pci\n"),
		     "rc %d %s (%s) / %s (%s)\n%s", rc, s.fn[0].want, s.fn[0].want_why, s.fn[1].want, s.fn[1].want_why, txt);
	}
	snprintf(p, sizeof(p), "%s/sys/bus/pci/drivers/nvgrace-gpu-vfio-pci", dir);
	t_put(p, NULL, 0755);
	rc = vfio_snapshot(&h, "0000:01:00.0", VFIO_AUTO, &s, &ei);
	T_OK("--to vfio: a registered driver spelt with dashes is the module's", rc == 0 &&
	     !strcmp(s.fn[0].want, "nvgrace-gpu-vfio-pci") && s.fn[0].want_loaded, "%s %d", s.fn[0].want,
	     s.fn[0].want_loaded);
	snprintf(p, sizeof(p), "%s/proc/sys/kernel/osrelease", dir);
	t_put(p, "6.2.0-other\n", 0644);
	rc = vfio_snapshot(&h, "0000:01:00.0", VFIO_AUTO, &s, &ei);
	T_OK("--to vfio: no modules.alias for the running kernel: vfio-pci, saying where it looked",
	     rc == 0 && !strcmp(s.fn[0].want, "vfio-pci") &&
		     strstr(s.fn[0].want_why, "no modules.alias (") && strstr(s.fn[0].want_why, "lib/modules/6.2.0-other/modules.alias"),
	     "%s: %s", s.fn[0].want, s.fn[0].want_why);

	/* a process whose open files we may not read: a partial scan, a warning */
	snprintf(p, sizeof(p), "%s/proc/107/fd/1", dir);
	t_put(p, NULL, 0755);
	rmdir(p);
	symlink("/dev/dri/card0", p);
	snprintf(p, sizeof(p), "%s/proc/107/fd", dir);
	chmod(p, 0);
	{
		struct busy_run b = { .prefix = prefix };
		int r = t_unprivileged(busy_unpriv, &b);

		T_INT("busy: one process unreadable (EACCES): partial, the holders found still found", r,
		      (geteuid() == 0 || access(p, R_OK) != 0) ? VFIO_SCAN_PARTIAL * 10 + 2 : VFIO_SCAN_DONE * 10 + 3);
	}
	chmod(p, 0755);
	rc = vfio_snapshot(&h, "0000:00:02.0", "vfio-pci", &s, &ei);
	s.scan = VFIO_SCAN_PARTIAL;
	snprintf(s.scan_why, sizeof(s.scan_why), "1 process we may not read");
	s.nholders = s.holders = 0;
	vfio_plan(&s, &req, &pl);
	T_OK("busy: a partial scan is a warning, not a refusal",
	     pl.verdict == VFIO_PLAN_GO && strstr(pl.warn, "busy check partial: 1 process we may not read"), "%d %s",
	     pl.verdict, pl.warn);

	/* no proc under the prefix at all */
	snprintf(p, sizeof(p), "rm -rf %s/proc", dir);
	if (system(p) != 0)
		exit(2);
	rc = vfio_snapshot(&h, "0000:00:02.0", "vfio-pci", &s, &ei);
	vfio_plan(&s, &req, &pl);
	T_OK("busy: no <host>/proc: the check not done, said in the plan's warning",
	     rc == 0 && s.scan == VFIO_SCAN_NONE && pl.verdict == VFIO_PLAN_GO && strstr(pl.warn, "busy check not done: ") &&
		     strstr(pl.warn, "proc cannot be read"),
	     "rc %d scan %d: %s", rc, s.scan, pl.warn);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	if (system(p) != 0)
		exit(2);
}

/* ---- the fake kernel ---------------------------------------------------- */

struct fk_dev {
	char addr[VFIO_ADDR_MAX];
	char driver[VFIO_DRV_MAX], override[VFIO_DRV_MAX];
	char dflt[VFIO_DRV_MAX]; /* what binds without an override */
	int nvlock, nvbusy;      /* NVIDIA's unbindLock: held; the GPU open (not granted) */
};

struct fk {
	struct fk_dev d[8];
	size_t n;
	char loaded[8][VFIO_DRV_MAX];
	size_t nloaded;
	int modprobe_ok;
	int writes;         /* writes seen */
	int fail_at;        /* this write fails (-1: none) */
	int nobind_at;      /* this drivers_probe write binds nothing (-1: none) */
	int refuse_after;   /* once something failed, every later write fails */
	int mutate_at;      /* at this write another actor unbinds d[mutate_dev] (-1: never) */
	size_t mutate_dev;
	int cancel_after;   /* a signal is pending once this many writes were seen (-1: never) */
	int lock_writes;    /* writes to unbindLock (not counted in writes) */
	int failed;
	long long now;
};

static void fk_init(struct fk *k)
{
	memset(k, 0, sizeof(*k));
	k->fail_at = k->nobind_at = k->mutate_at = k->cancel_after = -1;
}

static void fk_dev(struct fk *k, const char *addr, const char *drv, const char *ov, const char *dflt)
{
	struct fk_dev *d = &k->d[k->n++];

	snprintf(d->addr, sizeof(d->addr), "%s", addr);
	snprintf(d->driver, sizeof(d->driver), "%s", drv);
	snprintf(d->override, sizeof(d->override), "%s", ov);
	snprintf(d->dflt, sizeof(d->dflt), "%s", dflt);
}

static void fk_load(struct fk *k, const char *drv)
{
	snprintf(k->loaded[k->nloaded++], VFIO_DRV_MAX, "%s", drv);
}

static struct fk_dev *fk_find(struct fk *k, const char *addr, size_t len)
{
	for (size_t i = 0; i < k->n; i++)
		if (strlen(k->d[i].addr) == len && strncmp(k->d[i].addr, addr, len) == 0)
			return &k->d[i];
	return NULL;
}

static int fk_loaded(void *ctx, const char *drv)
{
	struct fk *k = ctx;

	for (size_t i = 0; i < k->nloaded; i++)
		if (strcmp(k->loaded[i], drv) == 0)
			return 1;
	return 0;
}

static int fk_write(void *ctx, const char *path, const char *value)
{
	struct fk *k = ctx;
	int idx = k->writes++;
	const char *devs = "sys/bus/pci/devices/";
	struct fk_dev *d;

	if (strncmp(path, "proc/driver/nvidia/gpus/", 24) == 0) { /* unbindLock: not a sysfs write */
		const char *a = path + 24, *slash = strchr(a, '/');

		k->writes--;
		k->lock_writes++;
		if (!slash || strcmp(slash, "/unbindLock") != 0 || !(d = fk_find(k, a, (size_t)(slash - a)))) {
			errno = ENOENT;
			return -FB_ENOENT;
		}
		if (!strcmp(value, "1") && !d->nvbusy)
			d->nvlock = 1;
		else if (!strcmp(value, "0"))
			d->nvlock = 0;
		return 0;
	}
	if (idx == k->mutate_at)
		k->d[k->mutate_dev].driver[0] = '\0';
	if (idx == k->fail_at || (k->failed && k->refuse_after)) {
		k->failed = 1;
		errno = EIO;
		return -FB_EIO;
	}
	if (strncmp(path, devs, strlen(devs)) == 0) {
		const char *a = path + strlen(devs), *slash = strchr(a, '/');

		if (!slash || !(d = fk_find(k, a, (size_t)(slash - a)))) {
			errno = ENOENT;
			return -FB_ENOENT;
		}
		if (strcmp(slash, "/driver_override") == 0) {
			size_t n = strlen(value);

			if (n && value[n - 1] == '\n')
				n--;
			snprintf(d->override, sizeof(d->override), "%.*s", (int)n, value);
			return 0;
		}
		if (strcmp(slash, "/driver/unbind") == 0) {
			if (!d->driver[0]) { /* no driver link: the path does not exist */
				errno = ENOENT;
				return -FB_ENOENT;
			}
			if (strcmp(value, d->addr) != 0) {
				errno = ENODEV;
				return -FB_EIO;
			}
			d->driver[0] = '\0';
			return 0;
		}
		errno = ENOENT;
		return -FB_ENOENT;
	}
	if (strcmp(path, "sys/bus/pci/drivers_probe") == 0) {
		const char *want;

		if (!(d = fk_find(k, value, strlen(value)))) {
			errno = ENODEV;
			return -FB_EIO;
		}
		if (d->driver[0])
			return 0;
		if (idx == k->nobind_at) { /* the driver's probe failed */
			k->failed = 1;
			return 0;
		}
		want = d->override[0] ? d->override : d->dflt;
		if (want[0] && fk_loaded(k, want))
			snprintf(d->driver, sizeof(d->driver), "%s", want);
		return 0;
	}
	errno = ENOENT;
	return -FB_ENOENT;
}

static int fk_state(void *ctx, const char *addr, char *driver, char *override)
{
	struct fk *k = ctx;
	struct fk_dev *d = fk_find(k, addr, strlen(addr));

	if (!d)
		return -FB_ENOENT;
	strcpy(driver, d->driver);
	strcpy(override, d->override);
	return 0;
}

static int fk_read(void *ctx, const char *path, char *buf, size_t size)
{
	struct fk *k = ctx;
	const char *a = path + 24, *slash = strchr(a, '/');
	struct fk_dev *d;

	if (strncmp(path, "proc/driver/nvidia/gpus/", 24) != 0 || !slash || !(d = fk_find(k, a, (size_t)(slash - a))))
		return -FB_ENOENT;
	snprintf(buf, size, "%d", d->nvlock);
	return 1;
}

static int fk_cancelled(void *ctx)
{
	struct fk *k = ctx;

	return k->cancel_after >= 0 && k->writes >= k->cancel_after;
}

static int fk_modprobe(void *ctx, const char *module)
{
	struct fk *k = ctx;

	if (!k->modprobe_ok)
		return -FB_EIO;
	fk_load(k, module);
	return 0;
}

static long long fk_now(void *ctx)
{
	return ((struct fk *)ctx)->now;
}

static void fk_sleep(void *ctx, int ms)
{
	((struct fk *)ctx)->now += ms;
}

static void fk_ops(struct vfio_ops *o, struct fk *k)
{
	memset(o, 0, sizeof(*o));
	o->ctx = k;
	o->write = fk_write;
	o->read = fk_read;
	o->state = fk_state;
	o->loaded = fk_loaded;
	o->modprobe = fk_modprobe;
	o->cancelled = fk_cancelled;
	o->now_ms = fk_now;
	o->sleep_ms = fk_sleep;
}

/* The fake's world, made to match a snapshot: every function as the
 * snapshot saw it, default drivers given per scenario. */
struct world {
	const char *name;
	enum scen sc;
	const char *target;
	int loaded, force;
	enum vfio_group_mode group;
	const char *dflt[4];    /* default driver per snapshot function */
	const char *want[4];    /* driver per function after a clean run */
	const char *want_ov[4]; /* override per function after a clean run */
};

static const struct world worlds[] = {
	{ "GPU+HDA to vfio-pci", S_GPU_HDA, "vfio-pci", 1, 0, VFIO_GROUP_AUTO, { "pcieport", "nvidia", "snd_hda_intel" },
	  { "pcieport", "vfio-pci", "vfio-pci" }, { "", "vfio-pci", "vfio-pci" } },
	{ "GPU+HDA back to default", S_GPU_HDA_VFIO, "default", 1, 0, VFIO_GROUP_AUTO, { "nvidia", "snd_hda_intel" },
	  { "nvidia", "snd_hda_intel" }, { "", "" } },
	{ "GPU+HDA to nvidia", S_GPU_HDA_VFIO, "nvidia", 1, 0, VFIO_GROUP_AUTO, { "nvidia", "snd_hda_intel" },
	  { "nvidia", "snd_hda_intel" }, { "nvidia", "" } },
	{ "unbound GPU in a VMD domain, vfio-pci loaded by modprobe", S_LONG_DOMAIN, "vfio-pci", 0, 0,
	  VFIO_GROUP_AUTO, { "" }, { "vfio-pci" }, { "vfio-pci" } },
	{ "two GPUs of a group to vfio-pci", S_TWO_GPUS, "vfio-pci", 1, 0, VFIO_GROUP_AUTO,
	  { "pcieport", "nvidia", "nvidia" }, { "pcieport", "vfio-pci", "vfio-pci" }, { "", "vfio-pci", "vfio-pci" } },
	{ "GPU and its linked HDA outside the group", S_LINKED, "vfio-pci", 1, 0, VFIO_GROUP_AUTO,
	  { "nvidia", "snd_hda_intel" }, { "vfio-pci", "vfio-pci" }, { "vfio-pci", "vfio-pci" } },
	{ "a shared group with --force", S_GPU_NIC, "vfio-pci", 1, 1, VFIO_GROUP_AUTO, { "nvidia", "ice" },
	  { "vfio-pci", "vfio-pci" }, { "vfio-pci", "vfio-pci" } },
	{ "--group device", S_GPU_HDA, "vfio-pci", 1, 0, VFIO_GROUP_DEVICE, { "pcieport", "nvidia", "snd_hda_intel" },
	  { "pcieport", "vfio-pci", "snd_hda_intel" }, { "", "vfio-pci", "" } },
};

static void world_fk(const struct world *w, const struct vfio_snap *s, struct fk *k)
{
	static const char *const drivers[] = { "pcieport", "nvidia", "snd_hda_intel", "ice", "vfio-pci" };

	fk_init(k);
	for (size_t i = 0; i < s->n; i++)
		fk_dev(k, s->fn[i].addr, s->fn[i].driver, s->fn[i].override, w->dflt[i]);
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		fk_load(k, drivers[i]);
	if (w->loaded && !fk_loaded(k, w->target))
		fk_load(k, w->target);
	else if (!w->loaded) /* the world lacks the target: unregister it */
		for (size_t i = 0; i < k->nloaded; i++)
			if (strcmp(k->loaded[i], w->target) == 0)
				memmove(k->loaded[i], k->loaded[--k->nloaded], VFIO_DRV_MAX);
	k->modprobe_ok = 1;
}

/* Every function back on its original driver and override. */
static int restored(const struct vfio_snap *s, const struct fk *k, char *diff, size_t size)
{
	int ok = 1;

	diff[0] = '\0';
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(k->d[i].driver, s->fn[i].driver) || strcmp(k->d[i].override, s->fn[i].override)) {
			size_t n = strlen(diff);

			snprintf(diff + n, size - n, "%s on \"%s\" override \"%s\"; ", k->d[i].addr, k->d[i].driver,
				 k->d[i].override);
			ok = 0;
		}
	return ok;
}

static void test_apply(void)
{
	struct fb_log lg;

	log_init(&lg);
	lg.fd = open("/dev/null", O_WRONLY);
	for (size_t w = 0; w < sizeof(worlds) / sizeof(worlds[0]); w++) {
		const struct world *wd = &worlds[w];
		struct vfio_snap s;
		struct vfio_plan p;
		struct vfio_req req = { .group = wd->group, .force = wd->force };
		struct vfio_result r;
		struct vfio_ops o;
		struct fk k;
		char name[256], diff[512];
		int writes, probes[16], soft[16], pfn[16], np = 0, ok = 1;

		scen(&s, wd->sc, wd->target, wd->loaded);
		vfio_plan(&s, &req, &p);
		world_fk(wd, &s, &k);
		fk_ops(&o, &k);

		/* a clean run */
		snprintf(name, sizeof(name), "apply %s: exit 0, every function where it belongs", wd->name);
		vfio_apply(&s, &p, &o, 1000, &lg, &r);
		for (size_t i = 0; i < s.n; i++)
			ok &= !strcmp(k.d[i].driver, wd->want[i]) && !strcmp(k.d[i].override, wd->want_ov[i]) &&
			      !strcmp(r.final[i], wd->want[i]);
		T_OK(name, r.exit == 0 && ok, "exit %d: %s", r.exit, r.why);
		writes = k.writes;
		/* the index of every drivers_probe write */
		np = 0;
		for (size_t j = 0, idx = 0; j < p.n; j++)
			if (p.step[j].kind == VFIO_STEP_WRITE) {
				if (strcmp(p.step[j].path, "sys/bus/pci/drivers_probe") == 0) {
					soft[np] = j + 1 < p.n && p.step[j + 1].kind == VFIO_STEP_WAIT && p.step[j + 1].soft;
					pfn[np] = p.step[j].fn;
					probes[np++] = (int)idx;
				}
				idx++;
			}
		snprintf(name, sizeof(name), "apply %s: one write per plan step", wd->name);
		{
			int pw = 0;

			for (size_t j = 0; j < p.n; j++)
				pw += p.step[j].kind == VFIO_STEP_WRITE;
			T_INT(name, writes, pw);
		}
		snprintf(name, sizeof(name), "apply %s: a second run has nothing to do", wd->name);
		{
			struct vfio_snap s2 = s;
			struct vfio_plan p2;

			for (size_t i = 0; i < s2.n; i++) {
				strcpy(s2.fn[i].driver, k.d[i].driver);
				strcpy(s2.fn[i].override, k.d[i].override);
			}
			s2.target_loaded = 1;
			vfio_plan(&s2, &req, &p2);
			T_INT(name, p2.verdict, VFIO_PLAN_NOTHING);
		}

		/* a failed write at every step: rolled back, exit 5 */
		for (int refuse = 0; refuse < 2; refuse++) {
			int all = 1, n5 = 0, n6 = 0;

			for (int at = 0; at < writes; at++) {
				world_fk(wd, &s, &k);
				k.fail_at = at;
				k.refuse_after = refuse;
				vfio_apply(&s, &p, &o, 1000, &lg, &r);
				if (!refuse) {
					snprintf(name, sizeof(name), "apply %s: write %d of %d fails: exit 5, all restored",
						 wd->name, at + 1, writes);
					T_OK(name, r.exit == 5 && restored(&s, &k, diff, sizeof(diff)), "exit %d: %s", r.exit,
					     diff);
				} else {
					/* rollback refused too: exit 6 exactly when something was left changed,
					 * and the stuck list is exactly what differs */
					int same = restored(&s, &k, diff, sizeof(diff)), listed = 1;

					for (size_t i = 0; i < s.n; i++) {
						int differs = strcmp(k.d[i].driver, s.fn[i].driver) ||
							      strcmp(k.d[i].override, s.fn[i].override);

						listed &= differs == (r.fn[i] == VFIO_FN_STUCK);
						listed &= !differs || strstr(r.why, s.fn[i].addr) != NULL;
					}
					all &= (same ? r.exit == 5 : r.exit == 6) && listed;
					n5 += r.exit == 5;
					n6 += r.exit == 6;
					snprintf(name, sizeof(name),
						 "apply %s: write %d of %d fails, rollback refused: exit %d, stuck listed",
						 wd->name, at + 1, writes, r.exit);
					T_OK(name, (same ? r.exit == 5 : r.exit == 6) && listed, "exit %d: %s / %s", r.exit,
					     diff, r.why);
				}
			}
			if (refuse) {
				snprintf(name, sizeof(name), "apply %s: refused rollbacks end in 6 (%d) or, untouched, 5 (%d)",
					 wd->name, n6, n5);
				T_OK(name, all && n6 > 0, "n5 %d n6 %d", n5, n6);
			}
		}
		/* a probe that binds nothing: the wait times out, rolled back; a
		 * function that leaves VFIO beside the device is left driverless */
		for (int j = 0; j < np; j++) {
			if (soft[j]) {
				world_fk(wd, &s, &k);
				k.nobind_at = probes[j];
				vfio_apply(&s, &p, &o, 1000, &lg, &r);
				snprintf(name, sizeof(name),
					 "apply %s: probe %d binds nothing, a companion leaving VFIO: exit 0, left without a driver",
					 wd->name, j + 1);
				T_OK(name, r.exit == 0 && !k.d[pfn[j]].driver[0] && !k.d[pfn[j]].override[0] &&
						   !strcmp(k.d[s.dev].driver, wd->want[s.dev]),
				     "exit %d: %s", r.exit, r.why);
				continue;
			}
			for (int refuse = 0; refuse < 2; refuse++) {
				world_fk(wd, &s, &k);
				k.nobind_at = probes[j];
				k.refuse_after = refuse;
				vfio_apply(&s, &p, &o, 1000, &lg, &r);
				snprintf(name, sizeof(name), "apply %s: probe %d binds nothing%s: exit %d", wd->name, j + 1,
					 refuse ? ", rollback refused" : "", refuse ? 6 : 5);
				if (!refuse)
					T_OK(name, r.exit == 5 && restored(&s, &k, diff, sizeof(diff)) &&
							   strstr(r.why, "after 1000 ms"),
					     "exit %d: %s / %s", r.exit, diff, r.why);
				else
					T_OK(name, r.exit == 6 && !restored(&s, &k, diff, sizeof(diff)) &&
							   strstr(r.why, "rollback failed for"),
					     "exit %d: %s", r.exit, r.why);
			}
		}
	}

	/* a signal after each write: stopped, rolled back, exit 5 */
	{
		const struct world *wd = &worlds[0];
		struct vfio_snap s;
		struct vfio_plan p;
		struct vfio_req req = { .group = VFIO_GROUP_AUTO };
		struct vfio_result r;
		struct vfio_ops o;
		struct fk k;
		char name[128], diff[512];

		scen(&s, wd->sc, wd->target, wd->loaded);
		vfio_plan(&s, &req, &p);
		fk_ops(&o, &k);
		for (int n = 0; n < 6; n++) {
			world_fk(wd, &s, &k);
			k.cancel_after = n;
			vfio_apply(&s, &p, &o, 1000, &lg, &r);
			snprintf(name, sizeof(name), "apply: SIGTERM after write %d: rolled back, exit 5", n);
			T_OK(name, r.exit == 5 && restored(&s, &k, diff, sizeof(diff)) && strstr(r.why, "terminated by a signal"),
			     "exit %d: %s / %s", r.exit, diff, r.why);
		}
		/* another actor unbinds the HDA while we move the GPU: we stop
		 * before touching it, restore the GPU, leave the HDA as they did */
		world_fk(wd, &s, &k);
		k.mutate_at = 0;
		k.mutate_dev = 2;
		vfio_apply(&s, &p, &o, 1000, &lg, &r);
		T_OK("apply: a function changed since the snapshot: not touched, the rest rolled back, exit 5",
		     r.exit == 5 && strstr(r.why, "0000:01:00.1 changed since the snapshot") && !k.d[2].driver[0] &&
			     !k.d[2].override[0] && !strcmp(k.d[1].driver, "nvidia") && !k.d[1].override[0] &&
			     r.fn[2] == VFIO_FN_UNTOUCHED && r.fn[1] == VFIO_FN_ROLLED_BACK,
		     "exit %d: %s", r.exit, r.why);
	}

	/* the target cannot be loaded: refused before any write */
	{
		struct vfio_snap s;
		struct vfio_plan p;
		struct vfio_req req = { .group = VFIO_GROUP_AUTO };
		struct vfio_result r;
		struct vfio_ops o;
		struct fk k;

		scen(&s, S_LONG_DOMAIN, "vfio-pci", 0);
		vfio_plan(&s, &req, &p);
		world_fk(&worlds[3], &s, &k);
		k.modprobe_ok = 0;
		fk_ops(&o, &k);
		vfio_apply(&s, &p, &o, 1000, &lg, &r);
		T_OK("apply: target not loadable: exit 4, no write", r.exit == 4 && k.writes == 0 &&
								     strstr(r.why, "modprobe vfio-pci did not load it"),
		     "exit %d writes %d: %s", r.exit, k.writes, r.why);
		p.force = 1;
		world_fk(&worlds[3], &s, &k);
		k.modprobe_ok = 0;
		vfio_apply(&s, &p, &o, 1000, &lg, &r);
		T_OK("apply: target not loadable with --force: tried, rolled back, exit 5",
		     r.exit == 5 && k.writes > 0 && !k.d[0].driver[0] && !k.d[0].override[0], "exit %d: %s", r.exit,
		     r.why);
	}
	close(lg.fd);
}

/* NVIDIA's unbindLock in apply, against the fake kernel: the GPU of
 * S_GPU_HDA (function 1) has one. */
static void test_ulock(void)
{
	struct fb_log lg;
	struct vfio_snap s;
	struct vfio_plan p;
	struct vfio_req req = { .group = VFIO_GROUP_AUTO };
	struct vfio_result r;
	struct vfio_ops o;
	struct fk k;
	char diff[512];

	log_init(&lg);
	lg.fd = open("/dev/null", O_WRONLY);
	scen(&s, S_GPU_HDA, "vfio-pci", 1);
	s.fn[1].nv_lock = 1;
	vfio_plan(&s, &req, &p);
	T_OK("unbindLock: one step, first, for the GPU on nvidia only",
	     p.verdict == VFIO_PLAN_GO && p.step[0].kind == VFIO_STEP_ULOCK && p.step[0].fn == 1 &&
		     !strcmp(p.step[0].path, "proc/driver/nvidia/gpus/0000:01:00.0/unbindLock") && p.step[1].kind == VFIO_STEP_WRITE,
	     "%d %d", p.verdict, p.step[0].kind);
	fk_ops(&o, &k);

	world_fk(&worlds[0], &s, &k);
	vfio_apply(&s, &p, &o, 1000, &lg, &r);
	T_OK("unbindLock: granted: taken, then the switch", r.exit == 0 && k.d[1].nvlock == 1 && k.lock_writes == 1 &&
	     !strcmp(k.d[1].driver, "vfio-pci"), "exit %d: %s", r.exit, r.why);

	world_fk(&worlds[0], &s, &k);
	k.d[1].nvbusy = 1;
	vfio_apply(&s, &p, &o, 1000, &lg, &r);
	T_OK("unbindLock: not granted (the GPU is open): exit 4, no sysfs write, nothing moved",
	     r.exit == 4 && k.writes == 0 && restored(&s, &k, diff, sizeof(diff)) &&
		     strstr(r.why, "0000:01:00.0: the NVIDIA unbind lock was not taken (proc/driver/nvidia/gpus/0000:01:00.0/unbindLock read back 0)") &&
		     strstr(r.why, "--force overrides"),
	     "exit %d writes %d: %s", r.exit, k.writes, r.why);

	world_fk(&worlds[0], &s, &k);
	k.d[1].nvbusy = 1;
	p.force = 1;
	vfio_apply(&s, &p, &o, 1000, &lg, &r);
	T_OK("unbindLock: not granted, --force: switched anyway", r.exit == 0 && !strcmp(k.d[1].driver, "vfio-pci"),
	     "exit %d: %s", r.exit, r.why);
	p.force = 0;

	world_fk(&worlds[0], &s, &k);
	k.fail_at = 5; /* the HDA's unbind */
	vfio_apply(&s, &p, &o, 1000, &lg, &r);
	T_OK("unbindLock: taken, then a failure: rolled back, the lock released", r.exit == 5 &&
	     restored(&s, &k, diff, sizeof(diff)) && k.d[1].nvlock == 0 && k.lock_writes == 2, "exit %d lock %d: %s / %s",
	     r.exit, k.d[1].nvlock, diff, r.why);

	/* two NVIDIA GPUs in a group: the second lock refused, the first released */
	scen(&s, S_TWO_GPUS, "vfio-pci", 1);
	s.fn[1].nv_lock = s.fn[2].nv_lock = 1;
	vfio_plan(&s, &req, &p);
	world_fk(&worlds[4], &s, &k);
	k.d[2].nvbusy = 1;
	vfio_apply(&s, &p, &o, 1000, &lg, &r);
	T_OK("unbindLock: the second GPU's refused: exit 4, the first's released, no sysfs write",
	     r.exit == 4 && k.writes == 0 && k.d[1].nvlock == 0 && k.d[2].nvlock == 0 && k.lock_writes == 3 &&
		     strstr(r.why, "0000:42:00.0"),
	     "exit %d writes %d locks %d/%d: %s", r.exit, k.writes, k.d[1].nvlock, k.d[2].nvlock, r.why);
	close(lg.fd);
}

int main(void)
{
	t_suite = "unit/vfio";
	test_addr();
	test_plans();
	test_snapshot();
	test_alias();
	test_busy();
	test_apply();
	test_ulock();
	return t_done();
}
