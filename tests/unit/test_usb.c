/* usb: the rpi4 and gpuserver fixtures (tests/fixtures/sysfs, written by its
 * mkfixtures) enumerate to the tables below: devices are the entries with an
 * idProduct, sorted by name, each with the classes of its interfaces (a root
 * hub's "BUS-0:C.I" included); a device without idVendor or with garbage ids
 * is skipped with a warning; unreadable or garbage interface classes mark
 * the device (NFD drops it); serials are trimmed; an absent bus is an empty
 * list. Needs FB_TOP (tests/run exports it). */
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
	"usb1 09 1d6b:0002 serial=0000:00:01.0 ifaces=09",
	"usb2 09 1d6b:0003 serial=0000:00:01.0 ifaces=09",
};

static const char *const rpi4[] = {
	"1-1 09 2109:3431 serial=- ifaces=09",                  /* VL805's USB 2.0 hub */
	"1-1.2 ff 03e7:2485 serial=- ifaces=ff",                /* Intel NCS2 */
	"1-1.3 00 1908:2311 serial=- ifaces=0e,0e,01,01,03",    /* class per interface */
	"1-1.4 00 046d:c31c serial=- ifaces=03,03",             /* keyboard */
	"2-1 00 1a6e:089a serial=- ifaces=fe",                  /* Coral before firmware */
	"2-2 00 0781:5583 serial=4C530001090325117283 ifaces=08", /* flash drive */
	"usb1 09 1d6b:0002 serial=0000:01:00.0 ifaces=09",
	"usb2 09 1d6b:0003 serial=0000:01:00.0 ifaces=09",
};

static const char *const gpuserver[] = {
	"1-12 00 046b:ff10 serial=1234567890 ifaces=03,03",
	"usb1 09 1d6b:0002 serial=0000:00:14.0 ifaces=09",
	"usb2 09 1d6b:0003 serial=0000:00:14.0 ifaces=09",
};

static const struct {
	const char *iface, *owner; /* NULL: refused */
} owner_cases[] = {
	{ "1-1.2:1.0", "1-1.2" }, { "1-0:1.0", "usb1" }, { "12-0:1.3", "usb12" }, { "1-1:1.0", "1-1" },
	{ "2-1.4.3:2.1", "2-1.4.3" }, { "1-10:1.0", "1-10" }, { "x-0:1.0", "x-0" }, { "-0:1.0", "-0" },
	{ "usb1", NULL }, { ":1.0", NULL }, { "", NULL },
	{ "1-1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1:1.0", NULL }, /* too long for a name */
};

static const struct {
	const char *s;
	unsigned ndig;
	const char *want; /* NULL: refused */
} hex_cases[] = {
	{ "1d6b\n", 4, "1d6b" }, { "1D6B", 4, "1d6b" }, { " 09 \n", 2, "09" }, { "ff\n", 2, "ff" },
	{ "0x1d6b", 4, NULL }, { "1d6", 4, NULL }, { "1d6bb", 4, NULL }, { "", 2, NULL },
	{ "zz\n", 2, NULL }, { "0 9", 2, NULL }, { "09\n\n", 2, "09" },
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

static const char *esc(const char *s)
{
	static char buf[4][128];
	static int k;
	char *o = buf[k++ % 4], *p = o, *e = o + sizeof(buf[0]) - 3;

	for (; *s && p < e; s++) {
		if (*s == '\n') {
			*p++ = '\\';
			*p++ = 'n';
		} else {
			*p++ = *s;
		}
	}
	*p = '\0';
	return o;
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

static void device(const char *name, const char *vid, const char *pid, const char *cls)
{
	put(name, NULL, 0);
	if (vid)
		attr(name, "idVendor", vid, 0644);
	if (pid)
		attr(name, "idProduct", pid, 0644);
	if (cls)
		attr(name, "bDeviceClass", cls, 0644);
	entry(name);
}

static void iface(const char *name, const char *cls, mode_t mode)
{
	put(name, NULL, 0);
	if (cls)
		attr(name, "bInterfaceClass", cls, mode);
	entry(name);
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
	if (find(&l, "5-1") || !strstr(log, "usb: skipping device 5-1: idVendor: I/O error: Permission denied\n"))
		bits |= 2;
	if (!(d = find(&l, "5-2")) || !d->iface_err || d->niface != 1)
		bits |= 4;
	if (!(d = find(&l, "5-3")) || d->has_serial || d->serial[0] ||
	    !strstr(log, "usb: device 5-3: serial: I/O error: Permission denied\n"))
		bits |= 8;
	if (!(d = find(&l, "5-4")) || d->cls[0])
		bits |= 16;
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
	for (size_t i = 0; i < sizeof(hex_cases) / sizeof(hex_cases[0]); i++) {
		char out[8] = "untouch";

		rc = usb_hex_norm_(hex_cases[i].s, strlen(hex_cases[i].s), hex_cases[i].ndig, out);
		snprintf(name, sizeof(name), "hex \"%s\" (%u digits)", esc(hex_cases[i].s), hex_cases[i].ndig);
		if (hex_cases[i].want)
			T_OK(name, rc == 0 && strcmp(out, hex_cases[i].want) == 0, "rc=%d out=%s", rc, out);
		else
			T_OK(name, rc == -FB_EINVAL, "rc=%d out=%s", rc, out);
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
	device("3-1", "abcd\n", "0001\n", "00\n");
	iface("3-1:1.1", "0e\n", 0644);
	iface("3-1:1.0", "01\n", 0644);
	iface("3-1:1.2", NULL, 0644);                 /* no class: not an interface */
	device("3-2", NULL, "0002\n", "ff\n");         /* no idVendor */
	device("3-3", "0xabcd\n", "0003\n", "ff\n");   /* vendor with 0x: not what the kernel prints */
	device("3-4", "abcd\n", "zz04\n", "ff\n");
	device("3-5", "abcd\n", "0005\n", "000\n");    /* class too long */
	device("3-6", "abcd\n", "0006\n", NULL);       /* no class: kept without one */
	attr("3-6", "serial", "  SN 42 \n", 0644);
	device("3-7", "abcd\n", "0007\n", "00\n");
	attr("3-7", "serial", " \n", 0644);            /* blank serial: absent */
	iface("3-7:1.0", "zz\n", 0644);                /* garbage: marks the device */
	iface("3-7:1.1", "03\n", 0644);
	device("3-8", "abcd\n", "0008\n", "00\n");
	{
		char s[200];

		memset(s, 'S', 150);
		s[150] = '\n';
		s[151] = '\0';
		attr("3-8", "serial", s, 0644);             /* longer than the field */
	}
	for (int i = 0; i < USB_MAX_IFACES + 1; i++) {
		snprintf(name, sizeof(name), "3-8:1.%d", i);
		iface(name, "ff\n", 0644);
	}
	put("3-9", NULL, 0);                           /* a hub port entry with no idProduct */
	attr("3-9", "idVendor", "abcd\n", 0644);
	entry("3-9");
	iface("3-99:1.0", "ff\n", 0644);               /* an interface without its device */
	device("usb3", "1d6b\n", "0002\n", "09\n");
	iface("3-0:1.0", "09\n", 0644);
	put("3-10", NULL, 0);
	entry("3-10");                                  /* nothing inside */
	device("4-1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1", "abcd\n", "0010\n", "00\n"); /* name too long */

	rc = scan(path, &l);
	log = logged();
	T_INT("synthetic tree: scan succeeds", rc, 0);
	{
		static const char *const want[] = {
			"3-1 00 abcd:0001 serial=- ifaces=01,0e",
			"3-6 - abcd:0006 serial=SN 42 ifaces=-",
			"3-7 00 abcd:0007 serial=- ifaces=03 iface_err",
			"3-8 00 abcd:0008 serial=- ifaces=ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,"
			"ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff,ff iface_err",
			"usb3 09 1d6b:0002 serial=- ifaces=09",
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
			{ "no idVendor", "usb: skipping device 3-2: idVendor: not found\n" },
			{ "vendor with 0x", "usb: skipping device 3-3: idVendor: malformed value \"0xabcd\"\n" },
			{ "garbage idProduct", "usb: skipping device 3-4: idProduct: malformed value \"zz04\"\n" },
			{ "class too long", "usb: skipping device 3-5: bDeviceClass: malformed value \"000\"\n" },
			{ "garbage interface class", "usb: interface 3-7:1.0: bInterfaceClass: malformed value \"zz\"\n" },
			{ "serial too long", "usb: device 3-8: serial: value too large\n" },
			{ "33rd interface", "usb: interface 3-8:1.9: bInterfaceClass: value too large\n" },
			{ "name too long", "usb: skipping device 4-1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1: name: value too large\n" },
		};

		for (size_t i = 0; i < sizeof(warn) / sizeof(warn[0]); i++) {
			snprintf(name, sizeof(name), "synthetic tree: %s: warning", warn[i].what);
			T_OK(name, strstr(log, warn[i].line), "no \"%s\" in:\n%s", warn[i].line, log);
		}
		T_INT("synthetic tree: nothing else logged (entries without idProduct are silent)",
		      count_lines(log), sizeof(warn) / sizeof(warn[0]));
	}
	usb_list_free(&l);

	/* unreadable files: only bites when not root, so drop to nobody */
	snprintf(path, sizeof(path), "rm -rf '%s/sys'", tmp);
	if (system(path) != 0)
		return 2;
	device("5-1", "abcd\n", "0001\n", "00\n");
	attr("5-1", "idVendor", "abcd\n", 0);
	device("5-2", "abcd\n", "0002\n", "00\n");
	iface("5-2:1.0", "03\n", 0);
	iface("5-2:1.1", "03\n", 0644);
	device("5-3", "abcd\n", "0003\n", "ef\n");
	attr("5-3", "serial", "SN\n", 0);
	device("5-4", "abcd\n", "0004\n", "ef\n");
	attr("5-4", "bDeviceClass", "ef\n", 0);
	rc = t_unprivileged(scan_locked, NULL);
	T_OK("unreadable files: the scan runs", rc >= 0 && !(rc & 1), "rc=%d", rc);
	T_OK("unreadable idVendor: device skipped with the reason", rc >= 0 && !(rc & 2), "rc=%d", rc);
	T_OK("unreadable interface class: the device is marked", rc >= 0 && !(rc & 4), "rc=%d", rc);
	T_OK("unreadable serial: absent, with a warning", rc >= 0 && !(rc & 8), "rc=%d", rc);
	T_OK("unreadable device class: kept without a class", rc >= 0 && !(rc & 16), "rc=%d", rc);

	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	close(logfd);
	if (system(path) != 0)
		return 2;
	return t_done();
}
