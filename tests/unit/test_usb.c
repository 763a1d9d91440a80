/* usb: the rpi4, gpuserver and qemu-q35 fixtures (tests/fixtures/sysfs,
 * written by its mkfixtures or taken from a VM) enumerate to the tables
 * below: devices are the entries whose uevent says DEVTYPE=usb_device,
 * sorted by name, with ids and class from uevent's PRODUCT (hex) and TYPE
 * (decimal) and, for class 00 only, the classes of their interfaces (a root
 * hub's "BUS-0:C.I" included) from the interfaces' INTERFACE; a uevent that
 * is missing, unreadable, empty, too long or lacks a well-formed key skips
 * the device with a warning naming the key; unreadable or garbage interface
 * classes mark the device (NFD drops it); serials are trimmed; an absent bus
 * is an empty list. The uevent parser on its own: the kernel's hex and
 * decimal forms, garbled values, missing keys. Needs FB_TOP (tests/run
 * exports it). */
#include "t.h"

#include "../../core/usb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *fmt(const struct usb_dev *d, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s %s %s:%s serial=%s ifaces=", d->name, d->cls[0] ? d->cls : "-",
			 d->vendor, d->product, d->has_serial ? d->serial : "-");

	for (int i = 0; i < d->niface && n > 0 && (size_t)n < size; i++)
		n += snprintf(buf + n, size - (size_t)n, "%s%s", i ? "," : "", d->iface_cls[i]);
	if (d->niface == 0 && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, "-");
	if (d->iface_err && n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, " iface_err");
	return buf;
}

/* QEMU q35's xHCI under Debian's 6.1 kernel (tests/vm): two HID devices, the
 * FTDI serial adapter (class per interface: ff) and the root hubs */
static const char *const qemu_q35[] = {
	"1-1 00 0627:0001 serial=68284-0000:00:01.0-1 ifaces=03",
	"1-2 00 0627:0001 serial=28754-0000:00:01.0-2 ifaces=03",
	"1-3 00 0403:6001 serial=1-0000:00:01.0-3 ifaces=ff",
	"usb1 09 1d6b:0002 serial=0000:00:01.0 ifaces=-", /* not class 00: interfaces unread */
	"usb2 09 1d6b:0003 serial=0000:00:01.0 ifaces=-",
};

static const char *const rpi4[] = {
	"1-1 09 2109:3431 serial=- ifaces=-",                   /* VL805's USB 2.0 hub */
	"1-1.2 ff 03e7:2485 serial=- ifaces=-",                 /* Intel NCS2 */
	"1-1.3 00 1908:2311 serial=- ifaces=0e,0e,01,01,03",    /* class per interface */
	"1-1.4 00 046d:c31c serial=- ifaces=03,03",             /* keyboard */
	"2-1 00 1a6e:089a serial=- ifaces=fe",                  /* Coral before firmware */
	"2-2 00 0781:5583 serial=4C530001090325117283 ifaces=08", /* flash drive */
	"usb1 09 1d6b:0002 serial=0000:01:00.0 ifaces=-",
	"usb2 09 1d6b:0003 serial=0000:01:00.0 ifaces=-",
};

static const char *const gpuserver[] = {
	"1-12 00 046b:ff10 serial=1234567890 ifaces=03,03",
	"usb1 09 1d6b:0002 serial=0000:00:14.0 ifaces=-",
	"usb2 09 1d6b:0003 serial=0000:00:14.0 ifaces=-",
};

static const struct {
	const char *iface, *owner; /* NULL: refused */
} owner_cases[] = {
	{ "1-1.2:1.0", "1-1.2" }, { "1-0:1.0", "usb1" }, { "12-0:1.3", "usb12" }, { "1-1:1.0", "1-1" },
	{ "2-1.4.3:2.1", "2-1.4.3" }, { "1-10:1.0", "1-10" }, { "x-0:1.0", "x-0" }, { "-0:1.0", "-0" },
	{ "usb1", NULL }, { ":1.0", NULL }, { "", NULL },
	{ "1-1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1:1.0", NULL }, /* too long for a name */
};

#define DEV USB_UEV_DEVICE
#define IF USB_UEV_INTERFACE
#define PR USB_UEV_PRODUCT
#define TY USB_UEV_TYPE
#define IC USB_UEV_IFCLASS
/* what the kernel writes (usb_uevent, usb_dev_uevent, usb_if_uevent) and
 * what it never does */
static const struct {
	const char *what, *s;
	size_t len;            /* 0: strlen(s) */
	unsigned bits, seen;
	const char *vendor, *product, *cls, *iface_cls; /* "-": untouched */
} uev_cases[] = {
	{ "a device (QEMU's FTDI)", "MAJOR=189\nMINOR=3\nDEVNAME=bus/usb/001/004\nDEVTYPE=usb_device\n"
	  "DRIVER=usb\nPRODUCT=403/6001/400\nTYPE=0/0/0\nBUSNUM=001\nDEVNUM=004\n", 0,
	  DEV | PR | TY, DEV | IF | PR | TY, "0403", "6001", "00", "-" },
	{ "an interface", "DEVTYPE=usb_interface\nDRIVER=ftdi_sio\nPRODUCT=403/6001/400\nTYPE=0/0/0\n"
	  "INTERFACE=255/255/255\nMODALIAS=usb:v0403p6001d0400dc00dsc00dp00icFFiscFFipFFin00\n", 0,
	  IF | PR | TY | IC, DEV | IF | PR | TY | IC, "0403", "6001", "00", "ff" },
	{ "a root hub: TYPE decimal 9", "DEVTYPE=usb_device\nPRODUCT=1d6b/3/601\nTYPE=9/0/3\n", 0,
	  DEV | PR | TY, DEV | IF | PR | TY, "1d6b", "0003", "09", "-" },
	{ "TYPE 14 is class 0e, 224 is e0", "TYPE=14/1/0\nINTERFACE=224/1/1\n", 0, TY | IC, TY | IC,
	  "-", "-", "0e", "e0" },
	{ "upper-case hex", "PRODUCT=1D6B/FFFF/0\n", 0, PR, PR, "1d6b", "ffff", "-", "-" },
	{ "no newline at the end", "DEVTYPE=usb_device\nTYPE=255/0/0", 0, DEV | TY, DEV | IF | TY, "-", "-",
	  "ff", "-" },
	{ "the first line of a key counts", "TYPE=3/0/0\nTYPE=9/0/0\n", 0, TY, TY, "-", "-", "03", "-" },
	{ "empty", "", 0, 0, 0, "-", "-", "-", "-" },
	{ "keys that only start or end alike", "TYPEX=1/2/3\nXTYPE=1/2/3\nPRODUCT\nINTERFACE 3/0/0\n", 0,
	  0, 0, "-", "-", "-", "-" },
	{ "another DEVTYPE", "DEVTYPE=usb_devices\n", 0, 0, DEV | IF, "-", "-", "-", "-" },
	{ "PRODUCT: 5 hex digits", "PRODUCT=10000/1/0\n", 0, 0, PR, "-", "-", "-", "-" },
	{ "PRODUCT: two fields", "PRODUCT=46d/c31c\n", 0, 0, PR, "-", "-", "-", "-" },
	{ "PRODUCT: four fields", "PRODUCT=46d/c31c/1/2\n", 0, 0, PR, "-", "-", "-", "-" },
	{ "PRODUCT: 0x", "PRODUCT=0x46d/c31c/1\n", 0, 0, PR, "-", "-", "-", "-" },
	{ "PRODUCT: an empty field", "PRODUCT=46d//1\n", 0, 0, PR, "-", "-", "-", "-" },
	{ "PRODUCT: empty", "PRODUCT=\n", 0, 0, PR, "-", "-", "-", "-" },
	{ "TYPE: hex where the kernel writes decimal", "TYPE=ff/0/0\n", 0, 0, TY, "-", "-", "-", "-" },
	{ "TYPE: 256", "TYPE=256/0/0\n", 0, 0, TY, "-", "-", "-", "-" },
	{ "TYPE: 4 digits", "TYPE=0009/0/0\n", 0, 0, TY, "-", "-", "-", "-" },
	{ "TYPE: a sign", "TYPE=-1/0/0\n", 0, 0, TY, "-", "-", "-", "-" },
	{ "TYPE: blanks", "TYPE= 9/0/0\nINTERFACE=9/0/0 \n", 0, 0, TY | IC, "-", "-", "-", "-" },
	{ "TYPE: CR LF", "TYPE=9/0/0\r\n", 0, 0, TY, "-", "-", "-", "-" },
	{ "TYPE: a NUL inside", "TYPE=9\0/0/0\n", 13, 0, TY, "-", "-", "-", "-" },
	{ "INTERFACE: 256", "INTERFACE=256/0/0\n", 0, 0, IC, "-", "-", "-", "-" },
};

static char tmp[64];
static int logfd = -1;

/* a fixture that cannot be built is a failure, not a crash */
static void setup_failed(const char *path)
{
	printf("FAIL: %s: setting up %s (%s)\n", t_suite, path, strerror(errno));
	exit(1);
}
static struct fb_errinfo ei;

static const char *logged(void)
{
	return t_logged(logfd);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* writes tmp/sys/devices/usb/REL (a directory when data is NULL) */
static void put(const char *rel, const char *data, mode_t mode)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/sys/devices/usb/%s", tmp, rel);
	t_put(path, data, mode);
}

/* the bus/usb/devices/NAME link to sys/devices/usb/NAME */
static void entry(const char *name)
{
	char path[512], target[256];

	static const char *const dirs[] = { "sys", "sys/bus", "sys/bus/usb", "sys/bus/usb/devices" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, dirs[i]);
		mkdir(path, 0755);
	}
	snprintf(path, sizeof(path), "%s/sys/bus/usb/devices/%s", tmp, name);
	snprintf(target, sizeof(target), "../../../devices/usb/%s", name);
	if (symlink(target, path) != 0)
		setup_failed(path);
}

static void attr(const char *name, const char *file, const char *data, mode_t mode)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "%s/%s", name, file);
	put(rel, data, mode);
}

/* a device as the kernel writes its uevent (vid, pid hex; cls decimal) */
static void device(const char *name, unsigned vid, unsigned pid, unsigned cls)
{
	char ev[256];

	snprintf(ev, sizeof(ev), "MAJOR=189\nMINOR=1\nDEVNAME=bus/usb/003/002\nDEVTYPE=usb_device\n"
		 "DRIVER=usb\nPRODUCT=%x/%x/100\nTYPE=%u/0/0\nBUSNUM=003\nDEVNUM=002\n", vid, pid, cls);
	put(name, NULL, 0);
	attr(name, "uevent", ev, 0644);
	entry(name);
}

/* an entry whose uevent is ev (no uevent when NULL) */
static void raw(const char *name, const char *ev, mode_t mode)
{
	put(name, NULL, 0);
	if (ev)
		attr(name, "uevent", ev, mode);
	entry(name);
}

/* an interface of class cls (decimal), its uevent mode mode */
static void iface(const char *name, unsigned cls, mode_t mode)
{
	char ev[256];

	snprintf(ev, sizeof(ev), "DEVTYPE=usb_interface\nDRIVER=usbhid\nPRODUCT=abcd/1/100\nTYPE=0/0/0\n"
		 "INTERFACE=%u/1/1\nMODALIAS=usb:vABCDp0001d0100dc00dsc00dp00ic%02Xisc01ip01in00\n", cls, cls);
	raw(name, ev, mode);
}

static int scan(const char *prefix, struct usb_list *l)
{
	struct hostfs h;
	struct fb_log lg;

	hostfs_init(&h);
	log_init(&lg);
	lg.fd = logfd;
	fb_errinfo_init(&ei);
	if (hostfs_setup(&h, prefix) < 0)
		return -100;
	return usb_scan(&h, l, &lg, &ei);
}

static const struct usb_dev *find(const struct usb_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->dev[i].name, name) == 0)
			return &l->dev[i];
	return NULL;
}

static void check_fixture(const char *top, const char *name, const char *const *want, size_t nwant)
{
	char prefix[512], got[300], what[128];
	struct usb_list l;
	int rc;

	usb_list_init(&l);
	snprintf(prefix, sizeof(prefix), "%s/tests/fixtures/sysfs/%s/", top, name);
	rc = scan(prefix, &l);
	snprintf(what, sizeof(what), "%s: scan succeeds", name);
	T_INT(what, rc, 0);
	snprintf(what, sizeof(what), "%s: device count", name);
	T_INT(what, l.n, nwant);
	for (size_t i = 0; i < nwant; i++) {
		snprintf(what, sizeof(what), "%s: %.*s", name, (int)strcspn(want[i], " "), want[i]);
		T_STR(what, i < l.n ? fmt(&l.dev[i], got, sizeof(got)) : "(missing)", want[i]);
	}
	snprintf(what, sizeof(what), "%s: nothing logged", name);
	T_STR(what, logged(), "");
	usb_list_free(&l);
}

/* in a child as nobody when we are root: unreadable attributes */
static int scan_locked(void *arg)
{
	struct usb_list l;
	const struct usb_dev *d;
	const char *log;
	int bits = 0;

	(void)arg;
	char prefix[80];

	usb_list_init(&l);
	snprintf(prefix, sizeof(prefix), "%s/", tmp);
	if (scan(prefix, &l) != 0)
		bits |= 1;
	log = logged();
	if (find(&l, "5-1") || !strstr(log, "usb: skipping device 5-1: uevent: I/O error: Permission denied\n"))
		bits |= 2;
	if (!(d = find(&l, "5-2")) || !d->iface_err || d->niface != 1)
		bits |= 4;
	if (!(d = find(&l, "5-3")) || d->has_serial || d->serial[0] ||
	    !strstr(log, "usb: device 5-3: serial: I/O error: Permission denied\n"))
		bits |= 8;
	usb_list_free(&l);
	return bits;
}

int main(void)
{
	const char *top = getenv("FB_TOP");
	char tmpl[] = "/tmp/fb-usb-XXXXXX", name[200], path[600], got[300];
	struct usb_list l;
	const char *log;
	int rc;

	t_suite = "usb";
	if (!top) {
		printf("SKIP: usb: all (FB_TOP not set: run through tests/run)\n");
		return 0;
	}
	if (!mkdtemp(tmpl))
		return perror("mkdtemp"), 2;
	snprintf(tmp, sizeof(tmp), "%s", tmpl);
	chmod(tmp, 0755);
	logfd = t_log_open(tmp);

	for (size_t i = 0; i < sizeof(owner_cases) / sizeof(owner_cases[0]); i++) {
		char out[32] = "untouched";

		rc = usb_iface_owner_(owner_cases[i].iface, out, sizeof(out));
		snprintf(name, sizeof(name), "owner of \"%s\"", owner_cases[i].iface);
		if (owner_cases[i].owner)
			T_OK(name, rc == (int)strlen(owner_cases[i].owner) && strcmp(out, owner_cases[i].owner) == 0,
			     "rc=%d out=%s", rc, out);
		else
			T_OK(name, rc < 0, "rc=%d out=%s", rc, out);
	}
	for (size_t i = 0; i < sizeof(uev_cases) / sizeof(uev_cases[0]); i++) {
		struct usb_uevent u;
		size_t len = uev_cases[i].len ? uev_cases[i].len : strlen(uev_cases[i].s);
		unsigned bits;

		memset(&u, 0, sizeof(u));
		strcpy(u.vendor, "-");
		strcpy(u.product, "-");
		strcpy(u.cls, "-");
		strcpy(u.iface_cls, "-");
		bits = usb_parse_uevent_(uev_cases[i].s, len, &u);
		snprintf(name, sizeof(name), "uevent: %s", uev_cases[i].what);
		T_OK(name,
		     bits == uev_cases[i].bits && u.seen == uev_cases[i].seen &&
			     !strcmp(u.vendor, uev_cases[i].vendor) && !strcmp(u.product, uev_cases[i].product) &&
			     !strcmp(u.cls, uev_cases[i].cls) && !strcmp(u.iface_cls, uev_cases[i].iface_cls),
		     "bits=%#x seen=%#x vendor=%s product=%s cls=%s iface_cls=%s", bits, u.seen, u.vendor,
		     u.product, u.cls, u.iface_cls);
	}

	check_fixture(top, "rpi4", rpi4, sizeof(rpi4) / sizeof(rpi4[0]));
	check_fixture(top, "gpuserver", gpuserver, sizeof(gpuserver) / sizeof(gpuserver[0]));
	check_fixture(top, "qemu-q35", qemu_q35, sizeof(qemu_q35) / sizeof(qemu_q35[0]));

	usb_list_init(&l);
	snprintf(path, sizeof(path), "%s/", tmp);
	T_INT("absent bus directory is not an error", scan(path, &l), 0);
	T_INT("absent bus directory is an empty list", l.n, 0);
	T_INT("absent host root is an empty list", scan("/nonexistent-fb-root/", &l), 0);

	/* a synthetic tree */
	device("3-1", 0xabcd, 1, 0);
	iface("3-1:1.1", 14, 0644);
	iface("3-1:1.0", 1, 0644);
	raw("3-2", "DEVTYPE=usb_device\nTYPE=255/0/0\n", 0644);          /* no PRODUCT */
	raw("3-3", "DEVTYPE=usb_device\nPRODUCT=0xabcd/3/0\nTYPE=255/0/0\n", 0644);
	raw("3-4", "DEVTYPE=usb_device\nPRODUCT=abcd/4/0\nTYPE=ff/0/0\n", 0644); /* hex TYPE */
	raw("3-5", NULL, 0);                                              /* no uevent */
	attr("3-5", "idVendor", "abcd\n", 0644);                          /* (the files do not count) */
	attr("3-5", "idProduct", "0005\n", 0644);
	device("3-6", 0xabcd, 6, 255);
	attr("3-6", "serial", "  SN 42 \n", 0644);
	raw("3-6:1.0", "garbage", 0644);                                  /* not class 00: unread */
	device("3-7", 0xabcd, 7, 0);
	attr("3-7", "serial", " \n", 0644);                               /* blank serial: absent */
	raw("3-7:1.0", "DEVTYPE=usb_interface\nINTERFACE=zz/0/0\n", 0644); /* garbage: marks the device */
	iface("3-7:1.1", 3, 0644);
	raw("3-7:1.2", NULL, 0);                                          /* no uevent: marks it too */
	device("3-8", 0xabcd, 8, 0);
	{
		char s[200];

		memset(s, 'S', 150);
		s[150] = '\n';
		s[151] = '\0';
		attr("3-8", "serial", s, 0644);             /* longer than the field */
	}
	for (int i = 0; i < USB_MAX_IFACES + 1; i++) {
		snprintf(name, sizeof(name), "3-8:1.%d", i);
		iface(name, 255, 0644);
	}
	raw("3-9", "DEVTYPE=usb_interface\nPRODUCT=abcd/9/0\nTYPE=0/0/0\n", 0644); /* no device: silent */
	raw("3-10", "", 0644);                                            /* empty: a device going away */
	raw("3-11", "PRODUCT=abcd/11/0\nTYPE=0/0/0\n", 0644);            /* no DEVTYPE */
	{
		char big[1100];

		memset(big, 'A', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		raw("3-12", big, 0644);                                   /* fills the buffer */
	}
	raw("3-13", NULL, 0);                                             /* a FIFO: reads as empty */
	snprintf(path, sizeof(path), "%s/sys/devices/usb/3-13/uevent", tmp);
	if (mkfifo(path, 0644) != 0)
		setup_failed(path);
	raw("3-14", NULL, 0);                                             /* a link to /dev/zero */
	snprintf(path, sizeof(path), "%s/sys/devices/usb/3-14/uevent", tmp);
	if (symlink("/dev/zero", path) != 0)
		setup_failed(path);
	raw("3-15", NULL, 0);
	put("3-15/uevent", NULL, 0);                                      /* a directory */
	iface("3-99:1.0", 255, 0644);                                     /* an interface without its device */
	raw("usb3", "DEVTYPE=usb_device\nPRODUCT=1d6b/2/601\nTYPE=9/0/1\n", 0644);
	iface("3-0:1.0", 9, 0644);
	device("4-1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1", 0xabcd, 0x10, 0); /* name too long */
	snprintf(path, sizeof(path), "%s/", tmp);

	rc = scan(path, &l);
	log = logged();
	T_INT("synthetic tree: scan succeeds", rc, 0);
	{
		static const char *const want[] = {
			"3-1 00 abcd:0001 serial=- ifaces=01,0e",
			"3-6 ff abcd:0006 serial=SN 42 ifaces=-",
			"3-7 00 abcd:0007 serial=- ifaces=03 iface_err",
			"3-8 00 abcd:0008 serial=- ifaces=ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,"
			"ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff iface_err",
			"usb3 09 1d6b:0002 serial=- ifaces=-",
		};

		T_INT("synthetic tree: device count", l.n, sizeof(want) / sizeof(want[0]));
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			snprintf(name, sizeof(name), "synthetic tree: %.*s", (int)strcspn(want[i], " "), want[i]);
			T_STR(name, i < l.n ? fmt(&l.dev[i], got, sizeof(got)) : "(missing)", want[i]);
		}
	}
	{
		static const struct {
			const char *what, *line;
		} warn[] = {
			{ "no PRODUCT", "usb: skipping device 3-2: uevent: no PRODUCT\n" },
			{ "PRODUCT with 0x", "usb: skipping device 3-3: uevent: malformed PRODUCT \"0xabcd/3/0\"\n" },
			{ "hex TYPE", "usb: skipping device 3-4: uevent: malformed TYPE \"ff/0/0\"\n" },
			{ "no uevent", "usb: skipping device 3-5: uevent: not found\n" },
			{ "garbage interface class", "usb: interface 3-7:1.0: uevent: malformed INTERFACE \"zz/0/0\"\n" },
			{ "interface without uevent", "usb: interface 3-7:1.2: uevent: not found\n" },
			{ "serial too long", "usb: device 3-8: serial: value too large\n" },
			{ "33rd interface", "usb: interface 3-8:1.9: more than 32 interfaces\n" },
			{ "empty uevent", "usb: skipping device 3-10: uevent: empty\n" },
			{ "no DEVTYPE", "usb: skipping device 3-11: uevent: no DEVTYPE\n" },
			{ "uevent too long", "usb: skipping device 3-12: uevent: value too large\n" },
			{ "uevent a FIFO", "usb: skipping device 3-13: uevent: empty\n" },
			{ "uevent a link to /dev/zero", "usb: skipping device 3-14: uevent: value too large\n" },
			{ "uevent a directory", "usb: skipping device 3-15: uevent: I/O error: Is a directory\n" },
			{ "name too long", "usb: skipping device 4-1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1: name: value too large\n" },
		};

		for (size_t i = 0; i < sizeof(warn) / sizeof(warn[0]); i++) {
			snprintf(name, sizeof(name), "synthetic tree: %s: warning", warn[i].what);
			T_OK(name, strstr(log, warn[i].line), "no \"%s\" in:\n%s", warn[i].line, log);
		}
		T_INT("synthetic tree: nothing else logged (other DEVTYPEs and unread interfaces are silent)",
		      count_lines(log), sizeof(warn) / sizeof(warn[0]));
	}
	usb_list_free(&l);

	/* unreadable files: only bites when not root, so drop to nobody */
	snprintf(path, sizeof(path), "rm -rf '%s/sys'", tmp);
	if (system(path) != 0)
		return 2;
	device("5-1", 0xabcd, 1, 0);
	attr("5-1", "uevent", "DEVTYPE=usb_device\nPRODUCT=abcd/1/0\nTYPE=0/0/0\n", 0);
	device("5-2", 0xabcd, 2, 0);
	iface("5-2:1.0", 3, 0);
	iface("5-2:1.1", 3, 0644);
	device("5-3", 0xabcd, 3, 239);
	attr("5-3", "serial", "SN\n", 0);
	rc = t_unprivileged(scan_locked, NULL);
	T_OK("unreadable files: the scan runs", rc >= 0 && !(rc & 1), "rc=%d", rc);
	T_OK("unreadable uevent: device skipped with the reason", rc >= 0 && !(rc & 2), "rc=%d", rc);
	T_OK("unreadable interface class: the device is marked", rc >= 0 && !(rc & 4), "rc=%d", rc);
	T_OK("unreadable serial: absent, with a warning", rc >= 0 && !(rc & 8), "rc=%d", rc);

	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	close(logfd);
	if (system(path) != 0)
		return 2;
	return t_done();
}
