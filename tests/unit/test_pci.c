/* pci: the rpi4 and gpuserver fixtures (tests/fixtures/sysfs, written by its
 * mkfixtures) enumerate to the tables below, field by field; addresses sort
 * by number (long VMD domains last); a device missing or garbling a
 * mandatory attribute is skipped with a warning naming it, never a crash;
 * optional attributes that are absent, unreadable or garbage are left
 * empty; an absent bus is an empty list; and the parsers' edge cases.
 * Needs FB_TOP (tests/run exports it). */
#include "t.h"

#include "../../core/pci.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALL (PCI_SRIOV | PCI_IOMMU | PCI_DRIVER | PCI_NUMA | PCI_BOOT_VGA)

/* one line per device: every field, "-" for what is empty or unknown */
static const char *fmt(const struct pci_dev *d, char *buf, size_t size)
{
	snprintf(buf, size, "%s %s %s:%s %s:%s sriov=%s group=%s/%s mmu=%s drv=%s numa=%d vga=%d",
		 d->addr, d->cls, d->vendor, d->device, d->subsystem_vendor, d->subsystem_device,
		 d->has_sriov ? d->sriov_totalvfs : "-", d->iommu_group[0] ? d->iommu_group : "-",
		 d->iommu_group_type[0] ? d->iommu_group_type : "-",
		 d->iommu_version[0] ? d->iommu_version : "-", d->driver[0] ? d->driver : "-",
		 d->numa_node, d->boot_vga);
	return buf;
}

static const char *const gpuserver_all[] = {
	"0000:00:00.0 060000 8086:09a2 8086:0000 sriov=- group=0/DMA mmu=1:0 drv=- numa=0 vga=-1",
	"0000:00:14.0 0c0330 8086:a1af 15d9:1c48 sriov=- group=1/DMA mmu=1:0 drv=xhci_hcd numa=0 vga=-1",
	"0000:00:1c.0 060400 8086:a190 15d9:1c48 sriov=- group=2/DMA mmu=1:0 drv=pcieport numa=0 vga=-1",
	/* 0000:00:1f.2 has only its class file: skipped */
	"0000:02:00.0 060400 1a03:1150 1a03:1150 sriov=- group=2/DMA mmu=1:0 drv=- numa=0 vga=-1",
	"0000:03:00.0 030000 1a03:2000 15d9:1c48 sriov=- group=2/DMA mmu=1:0 drv=ast numa=0 vga=1",
	"0000:17:01.0 060400 8086:352a 8086:0000 sriov=- group=10/DMA mmu=1:0 drv=pcieport numa=0 vga=-1",
	"0000:18:00.0 030200 10de:20b0 10de:134f sriov=20 group=11/DMA mmu=1:0 drv=nvidia numa=0 vga=-1",
	"0000:18:00.1 040300 10de:1aef 10de:134f sriov=- group=11/DMA mmu=1:0 drv=snd_hda_intel numa=0 vga=-1",
	"0000:30:02.0 060400 8086:352a 8086:0000 sriov=- group=20/DMA mmu=1:0 drv=pcieport numa=0 vga=-1",
	"0000:31:00.0 020000 8086:1593 8086:0005 sriov=128 group=21/DMA-FQ mmu=1:0 drv=ice numa=0 vga=-1",
	"0000:31:00.1 020000 8086:1593 8086:0005 sriov=128 group=22/DMA-FQ mmu=1:0 drv=- numa=0 vga=-1",
	"0000:64:00.5 010400 8086:28c0 8086:0000 sriov=- group=30/DMA mmu=1:0 drv=vmd numa=0 vga=-1",
	"0000:6b:00.0 0b4000 8086:4940 8086:0000 sriov=16 group=40/DMA mmu=1:0 drv=4xxx numa=0 vga=-1",
	"0000:c9:01.0 060400 8086:352a 8086:0000 sriov=- group=50/DMA mmu=1:0 drv=pcieport numa=1 vga=-1",
	"0000:ca:00.0 030200 10de:20b0 10de:134f sriov=20 group=51/DMA mmu=1:0 drv=vfio-pci numa=1 vga=-1",
	"0000:ca:00.1 040300 10de:1aef 10de:134f sriov=- group=51/DMA mmu=1:0 drv=vfio-pci numa=1 vga=-1",
	"10000:00:02.0 060400 8086:352b 8086:0000 sriov=- group=-/- mmu=- drv=pcieport numa=0 vga=-1",
	"10000:01:00.0 010802 144d:a80a 144d:a801 sriov=- group=-/- mmu=- drv=nvme numa=0 vga=-1",
};

/* the NFD field set: SR-IOV and IOMMU only */
static const char *const gpuserver_nfd[] = {
	"0000:00:00.0 060000 8086:09a2 8086:0000 sriov=- group=0/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:00:14.0 0c0330 8086:a1af 15d9:1c48 sriov=- group=1/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:00:1c.0 060400 8086:a190 15d9:1c48 sriov=- group=2/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:02:00.0 060400 1a03:1150 1a03:1150 sriov=- group=2/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:03:00.0 030000 1a03:2000 15d9:1c48 sriov=- group=2/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:17:01.0 060400 8086:352a 8086:0000 sriov=- group=10/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:18:00.0 030200 10de:20b0 10de:134f sriov=20 group=11/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:18:00.1 040300 10de:1aef 10de:134f sriov=- group=11/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:30:02.0 060400 8086:352a 8086:0000 sriov=- group=20/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:31:00.0 020000 8086:1593 8086:0005 sriov=128 group=21/DMA-FQ mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:31:00.1 020000 8086:1593 8086:0005 sriov=128 group=22/DMA-FQ mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:64:00.5 010400 8086:28c0 8086:0000 sriov=- group=30/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:6b:00.0 0b4000 8086:4940 8086:0000 sriov=16 group=40/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:c9:01.0 060400 8086:352a 8086:0000 sriov=- group=50/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:ca:00.0 030200 10de:20b0 10de:134f sriov=20 group=51/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:ca:00.1 040300 10de:1aef 10de:134f sriov=- group=51/DMA mmu=1:0 drv=- numa=-1 vga=-1",
	"10000:00:02.0 060400 8086:352b 8086:0000 sriov=- group=-/- mmu=- drv=- numa=-1 vga=-1",
	"10000:01:00.0 010802 144d:a80a 144d:a801 sriov=- group=-/- mmu=- drv=- numa=-1 vga=-1",
};

/* an arm64 board: no IOMMU, no NUMA (no numa_node files), OF_* uevent lines */
static const char *const rpi4_all[] = {
	"0000:00:00.0 060400 14e4:2711 0000:0000 sriov=- group=-/- mmu=- drv=pcieport numa=-1 vga=-1",
	"0000:01:00.0 0c0330 1106:3483 1106:3483 sriov=- group=-/- mmu=- drv=xhci_hcd numa=-1 vga=-1",
};

/* a real kernel's tree: QEMU q35 with intel-iommu under Debian's 6.1 kernel,
 * copied out by tests/vm (FB_VM_CAPTURE=1 tests/vm/run q35) */
static const char *const qemu_q35_all[] = {
	"0000:00:00.0 060000 8086:29c0 1af4:1100 sriov=- group=0/DMA-FQ mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:00:01.0 0c0330 1b36:000d 1af4:1100 sriov=- group=1/DMA-FQ mmu=1:0 drv=xhci_hcd numa=-1 vga=-1",
	"0000:00:02.0 038000 1234:1111 1af4:1100 sriov=- group=2/DMA-FQ mmu=1:0 drv=bochs-drm numa=-1 vga=-1",
	"0000:00:1f.0 060100 8086:2918 1af4:1100 sriov=- group=3/DMA-FQ mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:00:1f.2 010601 8086:2922 1af4:1100 sriov=- group=3/DMA-FQ mmu=1:0 drv=- numa=-1 vga=-1",
	"0000:00:1f.3 0c0500 8086:2930 1af4:1100 sriov=- group=3/DMA-FQ mmu=1:0 drv=- numa=-1 vga=-1",
};

static char tmp[64];
static int logfd = -1;

/* a fixture that cannot be built is a failure, not a crash */
static void setup_failed(const char *path)
{
	printf("FAIL: %s: setting up %s (%s)\n", t_suite, path, strerror(errno));
	exit(1);
}

/* what the scans logged since the last call (the log file is truncated) */
static const char *logged(void)
{
	return t_logged(logfd);
}

/* s with control characters shown as \n, \t, \r, for test names */
static const char *esc(const char *s)
{
	static char buf[4][128];
	static int k;
	char *o = buf[k++ % 4], *p = o, *e = o + sizeof(buf[0]) - 3;

	for (; *s && p < e; s++) {
		if (*s == '\n' || *s == '\t' || *s == '\r') {
			*p++ = '\\';
			*p++ = *s == '\n' ? 'n' : *s == '\t' ? 't' : 'r';
		} else {
			*p++ = *s;
		}
	}
	*p = '\0';
	return o;
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void put(const char *rel, const char *data, mode_t mode)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	t_put(path, data, mode);
}

static void lnk(const char *rel, const char *target)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	if (symlink(target, path) != 0)
		setup_failed(path);
}

/* A device in the synthetic tree: sys/devices/pci0000:00/ADDR with the
 * mandatory files (no uevent) and the bus link to it. */
static void dev(const char *addr, const char *cls, const char *vendor)
{
	char rel[256], target[256];

	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/class", addr);
	put(rel, cls, 0644);
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/vendor", addr);
	put(rel, vendor, 0644);
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/device", addr);
	put(rel, "0x1234\n", 0644);
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/subsystem_vendor", addr);
	put(rel, "0x8086\n", 0644);
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/subsystem_device", addr);
	put(rel, "0x0000\n", 0644);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", addr);
	snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", addr);
	put("sys/bus/pci/devices", NULL, 0);
	lnk(rel, target);
}

static void devfile(const char *addr, const char *name, const char *data, mode_t mode)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/%s", addr, name);
	put(rel, data, mode);
}

static struct fb_errinfo ei;

static int scan(const char *prefix, unsigned fields, struct pci_list *l)
{
	struct hostfs h;
	struct fb_log lg;

	hostfs_init(&h);
	log_init(&lg);
	lg.fd = logfd;
	fb_errinfo_init(&ei);
	if (hostfs_setup(&h, prefix) < 0)
		return -100;
	return pci_scan(&h, fields, l, &lg, &ei);
}

static const struct pci_dev *find(const struct pci_list *l, const char *addr)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->dev[i].addr, addr) == 0)
			return &l->dev[i];
	return NULL;
}

static void check_fixture(const char *top, const char *name, unsigned fields, const char *const *want,
			  size_t nwant, const char *label)
{
	char prefix[512], got[256], what[128];
	struct pci_list l;
	int rc;

	pci_list_init(&l);
	snprintf(prefix, sizeof(prefix), "%s/tests/fixtures/sysfs/%s/", top, name);
	rc = scan(prefix, fields, &l);
	snprintf(what, sizeof(what), "%s %s: scan succeeds", name, label);
	T_INT(what, rc, 0);
	snprintf(what, sizeof(what), "%s %s: device count", name, label);
	T_INT(what, l.n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		snprintf(what, sizeof(what), "%s %s: %.*s", name, label, (int)strcspn(want[i], " "), want[i]);
		T_STR(what, i < l.n ? fmt(&l.dev[i], got, sizeof(got)) : "(missing)", want[i]);
	}
	pci_list_free(&l);
}

static const struct {
	const char *s;
	unsigned ndig;
	const char *want; /* NULL: -FB_EINVAL */
} hex_cases[] = {
	{ "0x10de", 4, "10de" }, { "0x10DE\n", 4, "10de" }, { "10DE", 4, "10de" }, { "0x8", 4, "0008" },
	{ "0x030200", 6, "030200" }, { "30200", 6, "030200" }, { "C0330", 6, "0c0330" },
	{ "0x0b4000\n", 6, "0b4000" }, { "0x0000", 4, "0000" }, { "0x10de \t\n", 4, "10de" },
	{ "0xZZZZ", 4, NULL }, { "0x10de0", 4, NULL }, { "0x0302000", 6, NULL }, { "", 4, NULL },
	{ "0x", 4, NULL }, { "\n", 4, NULL }, { " 0x10de", 4, NULL }, { "0x0x10", 4, NULL },
	{ "-0x1", 4, NULL }, { "0x10de junk", 4, NULL }, { "0x10\nde", 4, NULL }, { "x10de", 4, NULL },
	{ "0X10DE", 4, "10de" }, { "ffffffff", 8, "ffffffff" }, { "0x1", 9, NULL },
};

static const struct {
	const char *what, *text;
	unsigned want;
	const char *fields; /* "cls vendor:device sv:sd driver" of what was stored */
} uevent_cases[] = {
	{ "full uevent", "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=10DE:20B0\nPCI_SUBSYS_ID=10DE:134F\n"
	  "PCI_SLOT_NAME=0000:18:00.0\nMODALIAS=pci:v000010DEd000020B0sv000010DEsd0000134Fbc03sc02i00\n",
	  PCI_UEV_CLASS | PCI_UEV_ID | PCI_UEV_SUBSYS | PCI_UEV_DRIVER, "030200 10de:20b0 10de:134f nvidia" },
	{ "unbound, no trailing newline", "PCI_CLASS=20000\nPCI_ID=8086:1593\nPCI_SUBSYS_ID=8086:0005",
	  PCI_UEV_CLASS | PCI_UEV_ID | PCI_UEV_SUBSYS, "020000 8086:1593 8086:0005 -" },
	{ "devicetree lines are ignored", "DRIVER=xhci_hcd\nOF_NAME=usb\nOF_FULLNAME=/scb/pcie@7d500000/pci@0,0/usb@0,0\n"
	  "OF_COMPATIBLE_N=0\nPCI_CLASS=C0330\nPCI_ID=1106:3483\nPCI_SUBSYS_ID=1106:3483\n",
	  PCI_UEV_CLASS | PCI_UEV_ID | PCI_UEV_SUBSYS | PCI_UEV_DRIVER, "0c0330 1106:3483 1106:3483 xhci_hcd" },
	{ "class 0 prints as 0000", "PCI_CLASS=0000\n", PCI_UEV_CLASS, "000000 - - -" },
	{ "class too long", "PCI_CLASS=1030200\nPCI_ID=10DE:20B0\n", PCI_UEV_ID, "- 10de:20b0 - -" },
	{ "garbage id", "PCI_ID=ZZZZ:20B0\nPCI_SUBSYS_ID=10DE\n", 0, "- - - -" },
	{ "id with a third part", "PCI_ID=10DE:20B0:1\n", 0, "- - - -" },
	{ "key prefix is not the key", "PCI_CLASSX=30200\nXPCI_ID=10DE:20B0\nPCI_CLASS\n", 0, "- - - -" },
	{ "driver with a slash", "DRIVER=../x\n", 0, "- - - -" },
	{ "empty driver", "DRIVER=\n", 0, "- - - -" },
	{ "empty text", "", 0, "- - - -" },
	{ "blank lines and CR", "\n\nPCI_CLASS=30200\r\n\n", 0, "- - - -" },
	{ "last one wins", "PCI_CLASS=30200\nPCI_CLASS=10802\n", PCI_UEV_CLASS, "010802 - - -" },
};

static const struct {
	const char *a, *b;
	int sign;
} cmp_cases[] = {
	{ "0000:00:02.0", "0000:00:10.0", -1 }, { "0000:00:1f.7", "0000:01:00.0", -1 },
	{ "0000:ff:1f.7", "0001:00:00.0", -1 }, { "ffff:00:00.0", "10000:00:00.0", -1 },
	{ "10000:00:02.0", "0000:ca:00.1", 1 }, { "0000:00:00.0", "0000:00:00.0", 0 },
	{ "0000:00:00.1", "0000:00:00.0", 1 }, { "not-pci", "ffffffff:ff:1f.7", 1 },
	{ "abc", "abd", -1 }, { "0000:00:00.8", "0000:00:00.0", 1 }, /* fn 8: not an address */
	{ "100000000:00:00.0", "0000:00:00.0", 1 }, /* 9-digit domain: not an address */
	{ "0000:00:00.0x", "0000:00:00.0", 1 }, { "0:0:00.0", "0000:00:00.0", 1 },
};

/* in a child as nobody when we are root: the bus directory is mode 000 */
static int scan_denied(void *arg)
{
	struct pci_list l;
	char path[600];
	int rc;

	(void)arg;
	pci_list_init(&l);
	snprintf(path, sizeof(path), "%s/", tmp);
	rc = scan(path, ALL, &l);
	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices", tmp);
	return !(rc == -FB_EIO && l.n == 0 && ei.code == FB_EIO && ei.sys == EACCES &&
		 strcmp(ei.what, path) == 0);
}

/* in a child as nobody when we are root: a tree with unreadable files */
static int scan_locked(void *arg)
{
	struct pci_list l;
	int bits = 0;
	const struct pci_dev *d;
	const char *log;

	(void)arg;
	char prefix[80];

	pci_list_init(&l);
	snprintf(prefix, sizeof(prefix), "%s/", tmp);
	if (scan(prefix, ALL, &l) != 0)
		bits |= 1;
	log = logged();
	/* uevent unreadable, files fine: kept from the files */
	if (!(d = find(&l, "0000:00:01.0")) || strcmp(d->vendor, "10de") != 0 || strcmp(d->cls, "030200") != 0)
		bits |= 2;
	/* uevent and vendor unreadable: skipped, saying why */
	if (find(&l, "0000:00:02.0") ||
	    !strstr(log, "pci: skipping device 0000:00:02.0: vendor: I/O error: Permission denied"))
		bits |= 4;
	/* sriov_totalvfs unreadable: treated as absent */
	if (!(d = find(&l, "0000:00:03.0")) || d->has_sriov || d->sriov_totalvfs[0])
		bits |= 8;
	/* the group's type unreadable: a group without a type */
	if (!(d = find(&l, "0000:00:03.0")) || strcmp(d->iommu_group, "7") != 0 || d->iommu_group_type[0])
		bits |= 16;
	pci_list_free(&l);
	return bits;
}

int main(void)
{
	const char *top = getenv("FB_TOP");
	char tmpl[] = "/tmp/fb-pci-XXXXXX", name[200], path[600], got[256];
	struct pci_list l;
	const char *log;
	const struct pci_dev *d;
	int rc;

	t_suite = "pci";
	if (!top) {
		printf("SKIP: pci: all (FB_TOP not set: run through tests/run)\n");
		return 0;
	}
	if (!mkdtemp(tmpl))
		return perror("mkdtemp"), 2;
	snprintf(tmp, sizeof(tmp), "%s", tmpl);
	chmod(tmp, 0755);
	logfd = t_log_open(tmp);

	for (size_t i = 0; i < sizeof(hex_cases) / sizeof(hex_cases[0]); i++) {
		char out[10] = "untouched";

		rc = pci_hex_norm_(hex_cases[i].s, strlen(hex_cases[i].s), hex_cases[i].ndig, out);
		snprintf(name, sizeof(name), "hex \"%s\" (%u digits)", esc(hex_cases[i].s), hex_cases[i].ndig);
		if (hex_cases[i].want)
			T_OK(name, rc == 0 && strcmp(out, hex_cases[i].want) == 0, "rc=%d out=%s", rc, out);
		else
			T_OK(name, rc == -FB_EINVAL && strcmp(out, "untouched") == 0, "rc=%d out=%s", rc, out);
	}
	for (size_t i = 0; i < sizeof(uevent_cases) / sizeof(uevent_cases[0]); i++) {
		struct pci_dev dv;
		unsigned bits;
		char f[128];

		memset(&dv, 0, sizeof(dv));
		bits = pci_parse_uevent_(uevent_cases[i].text, strlen(uevent_cases[i].text), &dv);
		snprintf(f, sizeof(f), "%s %s:%s %s:%s %s", dv.cls[0] ? dv.cls : "-",
			 dv.vendor[0] ? dv.vendor : "-", dv.device[0] ? dv.device : "-",
			 dv.subsystem_vendor[0] ? dv.subsystem_vendor : "-",
			 dv.subsystem_device[0] ? dv.subsystem_device : "-", dv.driver[0] ? dv.driver : "-");
		/* "- -:-" reads better as "-" in the table */
		{
			char *p;

			while ((p = strstr(f, "-:-")))
				memmove(p + 1, p + 3, strlen(p + 3) + 1);
		}
		snprintf(name, sizeof(name), "uevent: %s: fields found", uevent_cases[i].what);
		T_INT(name, bits, uevent_cases[i].want);
		snprintf(name, sizeof(name), "uevent: %s: values", uevent_cases[i].what);
		T_STR(name, f, uevent_cases[i].fields);
	}
	for (size_t i = 0; i < sizeof(cmp_cases) / sizeof(cmp_cases[0]); i++) {
		int c = pci_addr_cmp_(cmp_cases[i].a, cmp_cases[i].b), r = pci_addr_cmp_(cmp_cases[i].b, cmp_cases[i].a);

		c = c < 0 ? -1 : c > 0;
		r = r < 0 ? -1 : r > 0;
		snprintf(name, sizeof(name), "order %s vs %s", cmp_cases[i].a, cmp_cases[i].b);
		T_OK(name, c == cmp_cases[i].sign && r == -c, "got %d/%d, want %d", c, r, cmp_cases[i].sign);
	}

	/* the fixtures, every field, then the NFD set */
	check_fixture(top, "gpuserver", ALL, gpuserver_all, sizeof(gpuserver_all) / sizeof(gpuserver_all[0]), "all fields");
	log = logged();
	T_STR("gpuserver: the class-only device is skipped with a warning naming it",
	      strstr(log, "] pci: skipping device 0000:00:1f.2: vendor: not found\n") ? "yes" : log, "yes");
	T_INT("gpuserver: and nothing else is logged", count_lines(log, "\n"), 1);
	check_fixture(top, "gpuserver", PCI_SRIOV | PCI_IOMMU, gpuserver_nfd,
		      sizeof(gpuserver_nfd) / sizeof(gpuserver_nfd[0]), "NFD fields");
	logged();
	pci_list_init(&l);
	snprintf(path, sizeof(path), "%s/tests/fixtures/sysfs/gpuserver/", top);
	scan(path, 0, &l);
	d = find(&l, "0000:18:00.0");
	T_STR("gpuserver: no optional field read when none asked",
	      d ? fmt(d, got, sizeof(got)) : "(missing)",
	      "0000:18:00.0 030200 10de:20b0 10de:134f sriov=- group=-/- mmu=- drv=- numa=-1 vga=-1");
	T_INT("gpuserver: mandatory fields still give 18 devices", l.n, 18);
	rc = scan(path, PCI_DRIVER, &l);
	T_INT("gpuserver: a second scan into the same list", rc, 0);
	T_INT("gpuserver: replaces its devices", l.n, 18);
	d = find(&l, "0000:ca:00.1");
	T_STR("gpuserver: driver alone", d ? d->driver : "(missing)", "vfio-pci");
	pci_list_free(&l);
	logged();
	check_fixture(top, "rpi4", ALL, rpi4_all, sizeof(rpi4_all) / sizeof(rpi4_all[0]), "all fields");
	check_fixture(top, "qemu-q35", ALL, qemu_q35_all, sizeof(qemu_q35_all) / sizeof(qemu_q35_all[0]),
		      "all fields");
	T_STR("rpi4: nothing logged", logged(), "");

	/* no bus: an empty list, not an error; a prefix that does not exist either */
	pci_list_init(&l);
	snprintf(path, sizeof(path), "%s/", tmp);
	T_INT("absent bus directory is not an error", scan(path, ALL, &l), 0);
	T_INT("absent bus directory is an empty list", l.n, 0);
	T_INT("absent host root is an empty list", scan("/nonexistent-fb-root/", ALL, &l), 0);
	put("sys/bus/pci/devices", NULL, 0);
	T_INT("empty bus directory", scan(path, ALL, &l), 0);
	T_INT("empty bus directory is an empty list", l.n, 0);
	pci_list_free(&l);
	put("sys/bus/pci", NULL, 0);
	rmdir(strcat(strcpy(got, tmp), "/sys/bus/pci/devices"));
	put("sys/bus/pci/devices", "a file where the directory should be\n", 0644);
	pci_list_init(&l);
	rc = scan(path, ALL, &l);
	T_OK("bus path that is a file is an empty list", rc == 0 && l.n == 0, "rc=%d n=%zu", rc, l.n);
	unlink(got);
	put("sys/bus/pci/devices", NULL, 0);
	chmod(got, 0);
	rc = t_unprivileged(scan_denied, NULL);
	T_INT("unreadable bus directory is an I/O error naming it", rc, 0);
	chmod(got, 0755);

	/* a synthetic tree: ordering, garbage, fallbacks */
	dev("10000:00:00.0", "0x010802\n", "0x8086\n");
	dev("ffff:00:00.0", "0x010802\n", "0x8086\n");
	dev("0000:00:10.0", "0x020000\n", "0x8086\n");
	dev("0000:00:02.0", "0x030000\n", "0x1a03\n");
	dev("0001:00:00.0", "0x010802\n", "0x8086\n");
	dev("pci-device-x", "0x0c0330\n", "0x8086\n");
	dev("0000:00:03.0", "0x030200\n", "0xZZZZ\n");
	dev("0000:00:04.0", "0x0302000\n", "0x10de\n");
	dev("0000:00:05.0", "0x030200\n", "");
	dev("0000:00:06.0", "0x030200\n", "0x10de0x10de0x10de0x10de0x10de0x10de0x10de0x10de0x10de0x10de0x10de\n");
	dev("0000:00:07.0", "0x030200\n", "0x10de\n");
	devfile("0000:00:07.0", "uevent", "DRIVER=nvidia\nPCI_CLASS=30200\nPCI_ID=ZZZZ:20B0\nPCI_SUBSYS_ID=10DE:134F\n", 0644);
	dev("0000:00:08.0", "0x030200\n", "0x10de\n");
	devfile("0000:00:08.0", "uevent", "PCI_CLASS=1030200\nPCI_ID=10DE:20B1\n", 0644);
	dev("0000:00:09.0", "0x030200\n", "0x10de\n");
	devfile("0000:00:09.0", "sriov_totalvfs", "lots\n", 0644);
	devfile("0000:00:09.0", "numa_node", "-1\n", 0644);
	devfile("0000:00:09.0", "boot_vga", "1\n", 0644); /* not a VGA class: never read */
	lnk("sys/devices/pci0000:00/0000:00:09.0/iommu_group", "../../../kernel/iommu_groups/not-a-number");
	dev("0000:00:0a.0", "0x030000\n", "0x1a03\n");
	devfile("0000:00:0a.0", "boot_vga", "2\n", 0644);
	devfile("0000:00:0a.0", "numa_node", "3\n", 0644);
	devfile("0000:00:0a.0", "sriov_totalvfs", "0\n", 0644);
	lnk("sys/devices/pci0000:00/0000:00:0a.0/driver", "../../../bus/pci/drivers/ast");
	lnk("sys/devices/pci0000:00/0000:00:0a.0/iommu_group", "../../../kernel/iommu_groups/4");
	/* a group without a type file (kernels before 5.x) */
	put("sys/kernel/iommu_groups/4/devices", NULL, 0);
	dev("0000:00:0b.0", "0x030200\n", "0x10de\n");
	snprintf(path, sizeof(path), "%s/sys/devices/pci0000:00/0000:00:0b.0/vendor", tmp);
	unlink(path);
	devfile("0000:00:0b.0", "vendor", NULL, 0);   /* vendor is a directory */
	devfile("0000:00:0b.0", "vendor/x", "0x10de\n", 0644);
	dev("0000:00:0c.0", "0x030200\n", "0x10de\n");
	snprintf(path, sizeof(path), "%s/sys/devices/pci0000:00/0000:00:0c.0/device", tmp);
	unlink(path);
	mkfifo(path, 0644); /* must not block */
	put("sys/bus/pci/devices/0000:00:1f.7", "a plain file in the bus directory\n", 0644);
	put("sys/bus/pci/devices/0000:00:1f.0000000000000000000000000000", "x\n", 0644);
	lnk("sys/bus/pci/devices/0000:00:1e.0", "../../../devices/pci0000:00/nowhere");

	pci_list_init(&l);
	snprintf(path, sizeof(path), "%s/", tmp);
	rc = scan(path, ALL, &l);
	log = logged();
	T_INT("synthetic tree: scan succeeds", rc, 0);
	{
		static const char *const order[] = {
			"0000:00:02.0", "0000:00:07.0", "0000:00:08.0", "0000:00:09.0", "0000:00:0a.0",
			"0000:00:10.0", "0001:00:00.0", "ffff:00:00.0", "10000:00:00.0", "pci-device-x",
		};
		char all[400] = "", want[400] = "";

		for (size_t i = 0; i < l.n; i++)
			strcat(strcat(all, l.dev[i].addr), " ");
		for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
			strcat(strcat(want, order[i]), " ");
		T_STR("synthetic tree: kept devices sorted by domain, bus, device, function; non-addresses last",
		      all, want);
	}
	{
		static const struct {
			const char *what, *line;
		} warn[] = {
			{ "garbage vendor", "pci: skipping device 0000:00:03.0: vendor: malformed value \"0xZZZZ\"\n" },
			{ "class too long", "pci: skipping device 0000:00:04.0: class: malformed value \"0x0302000\"\n" },
			{ "empty vendor", "pci: skipping device 0000:00:05.0: vendor: malformed value \"\"\n" },
			{ "vendor longer than any value", "pci: skipping device 0000:00:06.0: vendor: value too large\n" },
			{ "vendor that is a directory", "pci: skipping device 0000:00:0b.0: vendor: I/O error: Is a directory\n" },
			{ "device that is a FIFO", "pci: skipping device 0000:00:0c.0: device: malformed value \"\"\n" },
			{ "plain file in the bus directory", "pci: skipping device 0000:00:1f.7: class: not found\n" },
			{ "dangling link", "pci: skipping device 0000:00:1e.0: class: not found\n" },
			{ "name too long for an address", "pci: skipping \"0000:00:1f.0000000000000000000000000000\": not a PCI address\n" },
		};

		for (size_t i = 0; i < sizeof(warn) / sizeof(warn[0]); i++) {
			snprintf(name, sizeof(name), "synthetic tree: %s: skipped with a warning", warn[i].what);
			T_OK(name, strstr(log, warn[i].line), "no \"%s\" in:\n%s", warn[i].line, log);
		}
		T_INT("synthetic tree: one warning per skipped entry", count_lines(log, "\n"),
		      sizeof(warn) / sizeof(warn[0]));
	}
	d = find(&l, "0000:00:07.0");
	T_STR("uevent with a garbage PCI_ID: vendor and device from the files, the rest from uevent",
	      d ? fmt(d, got, sizeof(got)) : "(missing)",
	      "0000:00:07.0 030200 10de:1234 10de:134f sriov=- group=-/- mmu=- drv=nvidia numa=-1 vga=-1");
	d = find(&l, "0000:00:08.0");
	T_STR("uevent with a class too long: class from the file, ids from uevent",
	      d ? fmt(d, got, sizeof(got)) : "(missing)",
	      "0000:00:08.0 030200 10de:20b1 8086:0000 sriov=- group=-/- mmu=- drv=- numa=-1 vga=-1");
	d = find(&l, "0000:00:09.0");
	T_STR("garbage sriov_totalvfs and iommu_group are absent; numa -1; boot_vga of a 3D controller unread",
	      d ? fmt(d, got, sizeof(got)) : "(missing)",
	      "0000:00:09.0 030200 10de:1234 8086:0000 sriov=- group=-/- mmu=- drv=- numa=-1 vga=-1");
	d = find(&l, "0000:00:0a.0");
	T_STR("no uevent: driver from the link; sriov_totalvfs 0 counts; group without type; bad boot_vga",
	      d ? fmt(d, got, sizeof(got)) : "(missing)",
	      "0000:00:0a.0 030000 1a03:1234 8086:0000 sriov=0 group=4/- mmu=- drv=ast numa=3 vga=-1");
	d = find(&l, "0000:00:02.0");
	T_STR("VGA device without boot_vga", d ? fmt(d, got, sizeof(got)) : "(missing)",
	      "0000:00:02.0 030000 1a03:1234 8086:0000 sriov=- group=-/- mmu=- drv=- numa=-1 vga=-1");
	pci_list_free(&l);

	/* unreadable files: only bites when not root, so drop to nobody */
	{
		char rm[700];

		snprintf(rm, sizeof(rm), "rm -rf '%s/sys'", tmp);
		if (system(rm) != 0)
			return 2;
		dev("0000:00:01.0", "0x030200\n", "0x10de\n");
		devfile("0000:00:01.0", "uevent", "PCI_CLASS=30200\n", 0);
		dev("0000:00:02.0", "0x030200\n", "0x10de\n");
		devfile("0000:00:02.0", "uevent", "PCI_CLASS=30200\n", 0);
		devfile("0000:00:02.0", "vendor", "0x10de\n", 0);
		dev("0000:00:03.0", "0x020000\n", "0x8086\n");
		devfile("0000:00:03.0", "sriov_totalvfs", "64\n", 0);
		put("sys/kernel/iommu_groups/7/type", "DMA\n", 0);
		lnk("sys/devices/pci0000:00/0000:00:03.0/iommu_group", "../../../kernel/iommu_groups/7");
		logged();
		rc = t_unprivileged(scan_locked, NULL);
		T_OK("unreadable files: the scan runs", rc >= 0 && !(rc & 1), "rc=%d", rc);
		T_OK("unreadable uevent: fields from the attribute files", rc >= 0 && !(rc & 2), "rc=%d", rc);
		T_OK("unreadable vendor: device skipped with the reason", rc >= 0 && !(rc & 4), "rc=%d", rc);
		T_OK("unreadable sriov_totalvfs: as if absent", rc >= 0 && !(rc & 8), "rc=%d", rc);
		T_OK("unreadable group type: empty type", rc >= 0 && !(rc & 16), "rc=%d", rc);
	}

	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	close(logfd);
	if (system(path) != 0)
		return 2;
	return t_done();
}
