/* ids: names from the hand-written tests/fixtures/ids/{pci,usb}.ids (the
 * tricky cases: comments between entries, blank and blank-looking lines,
 * trailing blanks, a tab separator, upper-case hex, Latin-1 bytes, the S
 * section, unknown sections, usb.ids' extra sections), malformed lines
 * skipped with a few numbered warnings, CRLF, no final newline, over-long
 * lines, lazy loading, path choice and a missing file; then the real
 * pci.ids when the system has one (CI installs it), with the time and peak
 * RSS of loading it for a 4-GPU node. Needs FB_TOP (tests/run exports it). */
#include "t.h"

#include "../../core/ids.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static char tmp[64];
static int logfd = -1;
static struct fb_log lg;

enum what { V, D, S, C2, C4, C6 };

struct lookup {
	enum what w;
	unsigned a, b, c, d;
	const char *want; /* NULL: no name */
};

static const char *look(struct ids *db, const struct lookup *l)
{
	switch (l->w) {
	case V:
		return ids_vendor(db, l->a);
	case D:
		return ids_device(db, l->a, l->b);
	case S:
		return ids_subsystem(db, l->a, l->b, l->c, l->d);
	case C2:
		return ids_class(db, l->a, 2);
	case C4:
		return ids_class(db, l->a, 4);
	default:
		return ids_class(db, l->a, 6);
	}
}

static void check_table(const char *what, struct ids *db, const struct lookup *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *got = look(db, &t[i]);
		char name[160];

		snprintf(name, sizeof(name), "%s: %d %04x %04x %04x %04x", what, (int)t[i].w, t[i].a,
			 t[i].b, t[i].c, t[i].d);
		if (t[i].want)
			T_STR(name, got, t[i].want);
		else
			T_OK(name, got == NULL, "got \"%s\", want no name", got);
	}
}

static const struct lookup pci_cases[] = {
	{ V, 0x10de, 0, 0, 0, "NVIDIA Corporation" },
	{ V, 0x0001, 0, 0, 0, "SafeNet (wrong ID)" },
	{ V, 0xffff, 0, 0, 0, "Illegal Vendor ID" },
	{ V, 0x1002, 0, 0, 0, "Advanced Micro Devices, Inc. [AMD/ATI]" },
	{ V, 0x1234, 0, 0, 0, NULL },             /* unknown section "X 1234" */
	{ V, 0x0000, 0, 0, 0, NULL },
	{ V, 0x10de0, 0, 0, 0, NULL },            /* out of range */
	{ V, 0xabcd, 0, 0, 0, "Caf\xe9 Vendor (Latin-1, not UTF-8)" },
	{ V, 0xabce, 0, 0, 0, "Caf\xc3\xa9 Vendor (UTF-8)" },
	{ D, 0x10de, 0x20b0, 0, 0, "GA100 [A100 SXM4 40GB]" },
	{ D, 0x10de, 0x20b5, 0, 0, "GA100 [A100 PCIe 80GB]" },
	{ D, 0x10de, 0x20b7, 0, 0, "GA100GL [A30 PCIe]" },
	{ D, 0x10de, 0x2330, 0, 0, "GH100[H100 SXM5 80GB]" }, /* trailing blanks cut */
	{ D, 0x10de, 0x1aef, 0, 0, "GA102 High Definition Audio Controller" }, /* tab */
	{ D, 0x10de, 0xabcd, 0, 0, "Upper-case hex device" },
	{ D, 0x1002, 0x73bf, 0, 0, "Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]" },
	{ D, 0x1002, 0x20b0, 0, 0, NULL },        /* a device of another vendor */
	{ D, 0x15b3, 0x101d, 0, 0, "MT2892 Family [ConnectX-6 Dx]" },
	{ D, 0x8086, 0x1572, 0, 0, "Ethernet Controller X710 for 10GbE SFP+" },
	{ D, 0x1234, 0x5678, 0, 0, NULL },        /* in the unknown section */
	{ D, 0x10de, 0x10000, 0, 0, NULL },
	{ S, 0x10de, 0x20b5, 0x10de, 0x1533, "A100 PCIe 80GB" },
	{ S, 0x10de, 0x20b0, 0x10de, 0x1533, NULL }, /* a subsystem of another device */
	{ S, 0x10de, 0xabcd, 0x10de, 0xabcd, "Upper-case hex subsystem" },
	{ S, 0x1002, 0x73bf, 0x1002, 0x0e3a, "Radeon RX 6900 XT" },
	{ S, 0x1002, 0x73bf, 0x1458, 0x2325, "Radeon RX 6800 XT Gaming OC" }, /* after a comment */
	{ S, 0x8086, 0x1572, 0x8086, 0x0001, "Ethernet Converged Network Adapter X710-4" },
	{ S, 0x8086, 0x1572, 0x1af4, 0x1100, "QEMU subsystem" },   /* specific first */
	{ S, 0x1af4, 0x1000, 0x1af4, 0x1100, "QEMU Virtual Machine" }, /* S section */
	{ S, 0x10de, 0x20b5, 0x1af4, 0x1100, "QEMU Virtual Machine" },
	{ S, 0x1af4, 0x1000, 0x1af4, 0x1101, NULL },
	{ S, 0x1234, 0x5678, 0x9abc, 0xdef0, NULL }, /* in the unknown section */
	{ C2, 0x03, 0, 0, 0, "Display controller" },
	{ C2, 0x00, 0, 0, 0, "Unclassified device" },
	{ C2, 0x12, 0, 0, 0, "Processing accelerators" },
	{ C2, 0xff, 0, 0, 0, "Unassigned class" },
	{ C2, 0x05, 0, 0, 0, NULL },
	{ C2, 0x0300, 0, 0, 0, NULL },            /* 4 digits asked as 2 */
	{ C4, 0x0302, 0, 0, 0, "3D controller" },
	{ C4, 0x0300, 0, 0, 0, "VGA compatible controller" },
	{ C4, 0x0380, 0, 0, 0, "Display controller" },
	{ C4, 0x0403, 0, 0, 0, "Audio device" },
	{ C4, 0x0000, 0, 0, 0, "Non-VGA unclassified device" },
	{ C4, 0x0003, 0, 0, 0, NULL },            /* class 03 is not subclass 00.03 */
	{ C4, 0x1200, 0, 0, 0, NULL },
	{ C6, 0x030000, 0, 0, 0, "VGA controller" },
	{ C6, 0x030001, 0, 0, 0, "8514 controller" },
	{ C6, 0x0c0330, 0, 0, 0, "XHCI" },
	{ C6, 0x0c03fe, 0, 0, 0, "USB Device" },
	{ C6, 0x030200, 0, 0, 0, NULL },
	{ C6, 0x1000000, 0, 0, 0, NULL },
};

static const struct lookup usb_cases[] = {
	{ V, 0x1d6b, 0, 0, 0, "Linux Foundation" },
	{ V, 0x0001, 0, 0, 0, "Fry's Electronics" },
	{ V, 0x0ace, 0, 0, 0, "ZyDAS \xc4\xe4" },
	{ D, 0x1d6b, 0x0002, 0, 0, "2.0 root hub" },
	{ D, 0x1d6b, 0x0003, 0, 0, "3.0 root hub" },
	{ D, 0x03e7, 0x2485, 0, 0, "Movidius MyriadX" },
	{ D, 0x046d, 0xc31c, 0, 0, "Keyboard K120" },
	{ D, 0x2109, 0x3431, 0, 0, "Hub" },
	{ D, 0x1d6b, 0x0001, 0, 0, NULL },
	{ S, 0x046d, 0xc31c, 0x0000, 0x0000, NULL }, /* interfaces are not subsystems */
	{ C2, 0x09, 0, 0, 0, "Hub" },
	{ C2, 0x00, 0, 0, 0, "(Defined at Interface level)" },
	{ C2, 0xff, 0, 0, 0, "Vendor Specific Class" },
	{ C4, 0x0301, 0, 0, 0, "Boot Interface Subclass" },
	{ C6, 0x030101, 0, 0, 0, "Keyboard" },
	{ C6, 0x030102, 0, 0, 0, "Mouse" },
	{ C6, 0x090003, 0, 0, 0, "TT per port" },
	/* the sections after C: none of their lines is a vendor or a class */
	{ V, 0x0100, 0, 0, 0, NULL }, /* AT 0100 */
	{ V, 0x0101, 0, 0, 0, NULL },
	{ V, 0x0001 + 0x20, 0, 0, 0, NULL },
	{ V, 0x0009, 0, 0, 0, NULL }, /* L 0009 */
	{ C2, 0x21, 0, 0, 0, NULL },  /* HID 21 */
	{ C2, 0x04, 0, 0, 0, NULL },  /* R 04 */
	{ C2, 0x01, 0, 0, 0, NULL },  /* PHY 01, HUT 01, HCC 01 */
	{ C4, 0x0101, 0, 0, 0, NULL },
	{ D, 0x0009, 0x0001, 0, 0, NULL },
};

static const char *logged(void)
{
	return t_logged(logfd);
}

static int count(const char *s, const char *sub)
{
	int n = 0;

	for (s = strstr(s, sub); s; s = strstr(s + 1, sub))
		n++;
	return n;
}

static void fixtures(const char *top)
{
	char pci[1024], usb[1024];
	const char *pp[] = { pci }, *up[] = { usb };
	struct ids *db;

	snprintf(pci, sizeof(pci), "%s/tests/fixtures/ids/pci.ids", top);
	snprintf(usb, sizeof(usb), "%s/tests/fixtures/ids/usb.ids", top);

	T_INT("open pci", ids_open(&db, IDS_PCI, pp, 1, &lg), 0);
	T_INT("lazy: no line parsed before a lookup", ids_lines_parsed(db), 0);
	T_OK("lazy: no path before a lookup", ids_path(db) == NULL, "%s", ids_path(db));
	T_STR("lazy: nothing logged by open", logged(), "");
	check_table("pci", db, pci_cases, sizeof(pci_cases) / sizeof(pci_cases[0]));
	T_INT("lazy: every line parsed after a lookup", ids_lines_parsed(db), 69);
	T_STR("path in use", ids_path(db), pci);
	T_STR("the pci fixture parses without a warning", logged(), "");
	ids_free(db);

	T_INT("open usb", ids_open(&db, IDS_USB, up, 1, &lg), 0);
	T_INT("usb: lazy", ids_lines_parsed(db), 0);
	check_table("usb", db, usb_cases, sizeof(usb_cases) / sizeof(usb_cases[0]));
	T_OK("usb: lines parsed", ids_lines_parsed(db) > 60, "%lu", ids_lines_parsed(db));
	T_STR("the usb fixture parses without a warning", logged(), "");
	ids_free(db);

	/* the same text as a usb.ids: interface-like lines are PCI subsystems */
	T_INT("pci fixture read as usb", ids_open(&db, IDS_USB, pp, 1, &lg), 0);
	T_OK("usb kind: no subsystem names", !ids_subsystem(db, 0x10de, 0x20b5, 0x10de, 0x1533),
	     "found one");
	T_OK("usb kind: no S section", !ids_subsystem(db, 0x1af4, 0x1000, 0x1af4, 0x1100),
	     "found one");
	T_STR("usb kind: devices", ids_device(db, 0x10de, 0x20b0), "GA100 [A100 SXM4 40GB]");
	ids_free(db);
}

/* Texts given to ids_load_buffer, with lookups and the warnings expected. */
#define TXT(s) s, sizeof(s) - 1

static const struct {
	const char *name, *text;
	size_t len;       /* the literal's: some hold NUL bytes */
	struct lookup l[4];
	int warnings;     /* lines named in warnings */
	const char *warn; /* a substring of the log, or NULL */
} buf_cases[] = {
	{ "crlf",
	  TXT("10de  NVIDIA Corporation\r\n\t20b0  GA100\r\n\t\t10de 1533  Sub\r\nC 03  Display\r\n\t02  3D\r\n"),
	  { { V, 0x10de, 0, 0, 0, "NVIDIA Corporation" }, { D, 0x10de, 0x20b0, 0, 0, "GA100" },
	    { S, 0x10de, 0x20b0, 0x10de, 0x1533, "Sub" }, { C4, 0x0302, 0, 0, 0, "3D" } },
	  0, NULL },
	{ "no final newline", TXT("10de  NVIDIA\n\t20b0  GA100"),
	  { { V, 0x10de, 0, 0, 0, "NVIDIA" }, { D, 0x10de, 0x20b0, 0, 0, "GA100" } }, 0, NULL },
	{ "no final newline, CR and blanks", TXT("C 03  Display \t\r"),
	  { { C2, 0x03, 0, 0, 0, "Display" } }, 0, NULL },
	{ "a lone CR is not a line end", TXT("10de  NV\rIDIA\n"),
	  { { V, 0x10de, 0, 0, 0, "NV\rIDIA" } }, 0, NULL },
	{ "device before any vendor", TXT("\t20b0  GA100\n10de  NVIDIA\n"),
	  { { D, 0, 0x20b0, 0, 0, NULL }, { V, 0x10de, 0, 0, 0, "NVIDIA" } }, 1,
	  "line 1: indented line before any vendor or class" },
	{ "subsystem before any device", TXT("10de  NVIDIA\n\t\t10de 1533  Sub\n\t20b0  GA100\n"),
	  { { S, 0x10de, 0, 0x10de, 0x1533, NULL }, { D, 0x10de, 0x20b0, 0, 0, "GA100" } }, 1,
	  "line 2: two tabs without a device" },
	{ "bad hex vendor: its devices go with it",
	  TXT("10de  NVIDIA\n10dg  Bad\n\t20b0  Orphan\n\t\t10de 1533  Orphan sub\n1002  AMD\n\t20b0  Kept\n"),
	  { { V, 0x10de, 0, 0, 0, "NVIDIA" }, { D, 0x10de, 0x20b0, 0, 0, NULL },
	    { D, 0x1002, 0x20b0, 0, 0, "Kept" }, { S, 0x10de, 0x20b0, 0x10de, 0x1533, NULL } },
	  1, "line 2: not a vendor" },
	{ "bad hex device: its subsystems go with it",
	  TXT("10de  NVIDIA\n\t20b0  GA100\n\t20x1  Bad\n\t\t10de 1533  Orphan\n\t20b2  Next\n"),
	  { { S, 0x10de, 0x20b0, 0x10de, 0x1533, NULL }, { D, 0x10de, 0x20b2, 0, 0, "Next" },
	    { D, 0x10de, 0x20b0, 0, 0, "GA100" } },
	  1, "line 3: bad device id" },
	{ "three tabs, spaces for a tab, short ids",
	  TXT("10de  NVIDIA\n\t20b0  GA100\n\t\t\t10de 1533  Deep\n\t20b  Short\n"
	      "\t\t10de 1533  Under the short one\n\t20b2  Fine\n\t\t10de 153  Short sub\n"
	      "    20b1  Spaces\n"),
	  { { D, 0x10de, 0x20b2, 0, 0, "Fine" }, { D, 0x10de, 0x20b1, 0, 0, NULL },
	    { D, 0x10de, 0x020b, 0, 0, NULL } },
	  4, "line 3: indented more than two tabs" },
	{ "no name, no separator",
	  TXT("10de\n10de  \n10deNVIDIA\n1002  AMD\n\t7300\n\t7301  Fiji\nC 03\nC 0\nC 033  X\n"),
	  { { V, 0x10de, 0, 0, 0, NULL }, { V, 0x1002, 0, 0, 0, "AMD" },
	    { D, 0x1002, 0x7301, 0, 0, "Fiji" }, { C2, 0x03, 0, 0, 0, NULL } },
	  7, "7 malformed lines skipped in all" },
	{ "duplicates: the first name stays",
	  TXT("10de  NVIDIA\n\t20b0  First\n\t20b0  Second\n10de  Again\n"),
	  { { D, 0x10de, 0x20b0, 0, 0, "First" }, { V, 0x10de, 0, 0, 0, "NVIDIA" } }, 2,
	  "line 3: duplicate entry" },
	{ "class lines out of place",
	  TXT("C 03  Display\n\t\t00  Progif without subclass\n\t02  3D\n\t\t00  Kept\n\t0  Short\n"),
	  { { C2, 0x03, 0, 0, 0, "Display" }, { C6, 0x030000, 0, 0, 0, NULL },
	    { C6, 0x030200, 0, 0, 0, "Kept" }, { C4, 0x0302, 0, 0, 0, "3D" } },
	  2, "line 2: two tabs without a device or subclass above" },
	{ "S section",
	  TXT("1af4  Red Hat\nS 1af4\n\t1100  QEMU\nS 1af\n\t1101  Orphan\nS 1af4 x\nS zzzz\n"),
	  { { S, 1, 2, 0x1af4, 0x1100, "QEMU" }, { S, 1, 2, 0x1af4, 0x1101, NULL },
	    { V, 0x1af4, 0, 0, 0, "Red Hat" } },
	  3, "line 4: bad generic subsystem vendor" },
	{ "unknown sections and lower-case letters",
	  TXT("XYZ 10de  Section\n\t20b0  In it\nX\nx 10de  Lower\n10de  NVIDIA\n"),
	  { { D, 0x10de, 0x20b0, 0, 0, NULL }, { V, 0x10de, 0, 0, 0, "NVIDIA" } }, 2,
	  "line 3: not a vendor, class or section line" },
	{ "comments and blanks anywhere",
	  TXT("# c\n10de  NVIDIA\n  # indented comment\n\t# tab comment\n \t \n\t20b0  GA100\n#\n"),
	  { { D, 0x10de, 0x20b0, 0, 0, "GA100" } }, 0, NULL },
	{ "a NUL byte in a name cuts it",
	  TXT("10de  NV\0IDIA\n1002  \0AMD\n\t7300  Fiji\n"),
	  { { V, 0x10de, 0, 0, 0, "NV" }, { V, 0x1002, 0, 0, 0, NULL },
	    { D, 0x1002, 0x7300, 0, 0, NULL } },
	  1, "line 2: vendor without a name" },
	{ "empty", TXT(""), { { V, 0, 0, 0, 0, NULL } }, 0, NULL },
};

static void buffers(void)
{
	for (size_t i = 0; i < sizeof(buf_cases) / sizeof(buf_cases[0]); i++) {
		struct ids *db;
		const char *log;
		char name[200];

		if (ids_open(&db, IDS_PCI, NULL, 0, &lg) < 0) {
			T_OK(buf_cases[i].name, 0, "out of memory");
			continue;
		}
		snprintf(name, sizeof(name), "buffer: %s: loads", buf_cases[i].name);
		T_INT(name, ids_load_buffer(db, buf_cases[i].text, buf_cases[i].len), 0);
		log = logged();
		for (int k = 0; k < 4 && (k == 0 || buf_cases[i].l[k].w || buf_cases[i].l[k].a); k++) {
			snprintf(name, sizeof(name), "buffer: %s", buf_cases[i].name);
			check_table(name, db, &buf_cases[i].l[k], 1);
		}
		snprintf(name, sizeof(name), "buffer: %s: lines warned about", buf_cases[i].name);
		T_INT(name, count(log, ": line "), buf_cases[i].warnings < 5 ? buf_cases[i].warnings : 5);
		if (buf_cases[i].warn) {
			snprintf(name, sizeof(name), "buffer: %s: warning", buf_cases[i].name);
			T_OK(name, strstr(log, buf_cases[i].warn), "log: %s", log);
		}
		T_STR("buffer: no lookup logs", logged(), "");
		ids_free(db);
	}
}

/* Line length: 1024 bytes before the line end are fine, 1025 are skipped
 * with a warning naming the line, along with what is indented under it. */
static void long_lines(void)
{
	static char text[8192];
	size_t n = 0;
	struct ids *db;
	const char *log, *name;

	n += (size_t)snprintf(text + n, sizeof(text) - n, "10de  ");
	memset(text + n, 'a', 1024 - 6);
	n += 1024 - 6;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\r\n1002  ");
	memset(text + n, 'b', 1025 - 6);
	n += 1025 - 6;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\n\t7300  Orphan\n1af4  Red Hat\n\t");
	memset(text + n, 'c', 2000);
	n += 2000;
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\n\t\t1af4 1100  Orphan\n\t1000  Virtio\n");

	if (ids_open(&db, IDS_PCI, NULL, 0, &lg) < 0)
		exit(2);
	T_INT("long lines: load", ids_load_buffer(db, text, n), 0);
	log = logged();
	name = ids_vendor(db, 0x10de);
	T_INT("long lines: 1024 bytes (and a CR) are a line", name ? (long long)strlen(name) : -1,
	      1024 - 6);
	T_OK("long lines: 1025 are not", !ids_vendor(db, 0x1002), "found");
	T_OK("long lines: nor what is under them", !ids_device(db, 0x1002, 0x7300), "found");
	T_OK("long lines: a long device line", !ids_subsystem(db, 0x1af4, 0, 0x1af4, 0x1100),
	     "found");
	T_STR("long lines: then the next device", ids_device(db, 0x1af4, 0x1000), "Virtio");
	T_OK("long lines: warnings name the lines",
	     strstr(log, ": line 2: longer than 1024 bytes") &&
		     strstr(log, ": line 5: longer than 1024 bytes") && count(log, ": line ") == 2,
	     "log: %s", log);
	T_INT("long lines: lines parsed", ids_lines_parsed(db), 7);
	ids_free(db);
}

/* Many broken lines: five are named, then one count; nothing else. */
static void warning_cap(void)
{
	static char text[4096];
	size_t n = 0;
	struct ids *db;
	const char *log;

	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "zz%02d  bad\n", i);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "10de  NVIDIA\n");
	if (ids_open(&db, IDS_PCI, NULL, 0, &lg) < 0)
		exit(2);
	T_INT("warning cap: load", ids_load_buffer(db, text, n), 0);
	log = logged();
	T_INT("warning cap: five lines named", count(log, ": line "), 5);
	T_OK("warning cap: then a count", strstr(log, "100 malformed lines skipped in all"), "log: %s",
	     log);
	T_INT("warning cap: six log lines", count(log, "\n"), 6);
	T_STR("warning cap: good lines kept", ids_vendor(db, 0x10de), "NVIDIA");
	/* a second buffer replaces the first */
	T_INT("reload: load", ids_load_buffer(db, "1002  AMD\n", 10), 0);
	T_OK("reload: old names gone", !ids_vendor(db, 0x10de), "found");
	T_STR("reload: new names", ids_vendor(db, 0x1002), "AMD");
	T_INT("reload: lines counted afresh", ids_lines_parsed(db), 1);
	T_STR("reload: no path", ids_path(db) ? ids_path(db) : "(null)", "(null)");
	ids_free(db);
}

static void missing_and_paths(const char *top)
{
	char dir[128], missing[128], big[128], fix[1024], empty[128];
	const char *none[] = { missing, dir };
	const char *some[] = { missing, dir, big, empty, fix };
	struct ids *db;
	const char *log;
	int fd;

	snprintf(dir, sizeof(dir), "%s/adir", tmp);
	snprintf(missing, sizeof(missing), "%s/missing/pci.ids", tmp);
	snprintf(big, sizeof(big), "%s/big.ids", tmp);
	snprintf(empty, sizeof(empty), "%s/empty.ids", tmp);
	snprintf(fix, sizeof(fix), "%s/tests/fixtures/ids/pci.ids", top);
	t_put(dir, NULL, 0755);
	t_put(empty, "", 0644);
	fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 16 << 20) != 0)
		exit(2);
	close(fd);

	T_INT("missing: open", ids_open(&db, IDS_PCI, none, 2, &lg), 0);
	T_STR("missing: open logs nothing", logged(), "");
	T_OK("missing: vendor", !ids_vendor(db, 0x10de), "found");
	log = logged();
	T_OK("missing: one warning at the first lookup",
	     count(log, "\n") == 1 && strstr(log, "no usable pci.ids among 2 paths"), "log: %s",
	     log);
	T_OK("missing: device", !ids_device(db, 0x10de, 0x20b0), "found");
	T_OK("missing: subsystem", !ids_subsystem(db, 0x10de, 0x20b0, 0x10de, 0x1533), "found");
	T_OK("missing: class", !ids_class(db, 0x03, 2), "found");
	T_STR("missing: no more warnings", logged(), "");
	T_OK("missing: no path", !ids_path(db), "%s", ids_path(db));
	T_INT("missing: no lines", ids_lines_parsed(db), 0);
	ids_free(db);

	T_INT("no paths: open", ids_open(&db, IDS_USB, NULL, 0, NULL), 0);
	T_OK("no paths, no log: vendor", !ids_vendor(db, 0x1d6b), "found");
	ids_free(db);

	/* the first usable one wins: a directory and a file over 16 MiB are
	 * passed over; an empty file is usable (and has no names) */
	T_INT("paths: open", ids_open(&db, IDS_PCI, some, 5, &lg), 0);
	T_OK("paths: the empty file is used", !ids_vendor(db, 0x10de), "found");
	T_STR("paths: path", ids_path(db), empty);
	T_STR("paths: nothing to warn about", logged(), "");
	ids_free(db);
	some[3] = fix;
	lg.v = 1;
	T_INT("paths: open 2", ids_open(&db, IDS_PCI, some, 4, &lg), 0);
	T_STR("paths: the fixture", ids_vendor(db, 0x10de), "NVIDIA Corporation");
	T_STR("paths: path 2", ids_path(db), fix);
	log = logged();
	T_OK("paths: -v 1 says why the others were passed over",
	     strstr(log, "adir: not used as pci.ids") && strstr(log, "big.ids: not used as pci.ids") &&
		     !strstr(log, "missing"),
	     "log: %s", log);
	lg.v = 0;
	ids_free(db);
	ids_free(NULL);
	T_OK("NULL db: no name", !ids_vendor(NULL, 1) && !ids_class(NULL, 3, 2) && !ids_path(NULL) &&
					 !ids_lines_parsed(NULL),
	     "a name");

	T_INT("class digits: open", ids_open(&db, IDS_PCI, (const char *const[]){ fix }, 1, &lg), 0);
	T_OK("class digits: 0, 3, 8 give nothing",
	     !ids_class(db, 3, 0) && !ids_class(db, 0x30, 3) && !ids_class(db, 0x03000000, 8),
	     "a name");
	T_STR("class digits: 2", ids_class(db, 3, 2), "Display controller");
	ids_free(db);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long maxrss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* The real list, where Debian's pci.ids package (or hwdata) puts it. Names
 * change between releases: the checks are those that have held for years. */
static void real_pci_ids(void)
{
	const char *paths[] = { "/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids" };
	struct ids *db;
	const char *name, *log;
	unsigned long want_lines = 0;
	double t0, t1;
	long rss0, rss1;
	int found = 0, c;
	FILE *f;

	for (size_t i = 0; i < 2 && !found; i++)
		found = access(paths[i], R_OK) == 0;
	if (!found) {
		printf("SKIP: %s: real pci.ids: no pci.ids installed (apt-get install pci.ids)\n",
		       t_suite);
		return;
	}
	rss0 = maxrss_kib();
	t0 = now();
	if (ids_open(&db, IDS_PCI, paths, 2, &lg) < 0)
		exit(2);
	/* a 4-GPU node: vendor, device, subsystem and class of each GPU */
	for (int i = 0; i < 4; i++) {
		found = ids_vendor(db, 0x10de) && ids_device(db, 0x10de, 0x20b5) &&
			(ids_subsystem(db, 0x10de, 0x20b5, 0x10de, 0x1533), 1) && ids_class(db, 0x0302, 4);
	}
	t1 = now();
	rss1 = maxrss_kib();
	T_OK("real pci.ids: the 4-GPU node's names", found, "missing");
	printf("PASS: %s: real pci.ids: %s: load + 4-GPU lookups %.1f ms, peak RSS %ld KiB "
	       "(+%ld KiB over %ld KiB before, sanitizer build), %lu lines\n",
	       t_suite, ids_path(db), (t1 - t0) * 1e3, rss1, rss1 - rss0, rss0, ids_lines_parsed(db));
	fprintf(stderr, "ids: real pci.ids: load + 4-GPU lookups %.1f ms, peak RSS %ld KiB (+%ld)\n",
		(t1 - t0) * 1e3, rss1, rss1 - rss0);
	log = logged();
	T_STR("real pci.ids: parses without a warning", log, "");
	f = fopen(ids_path(db), "rb");
	while (f && (c = getc(f)) != EOF)
		want_lines += c == '\n';
	if (f)
		fclose(f);
	T_INT("real pci.ids: every line parsed", ids_lines_parsed(db), want_lines);
	T_STR("real pci.ids: 10de", ids_vendor(db, 0x10de), "NVIDIA Corporation");
	name = ids_vendor(db, 0x1002);
	T_OK("real pci.ids: 1002 is AMD", name && strstr(name, "AMD"), "got %s", name);
	T_STR("real pci.ids: 8086", ids_vendor(db, 0x8086), "Intel Corporation");
	name = ids_device(db, 0x10de, 0x20b0);
	T_OK("real pci.ids: 10de:20b0 is an A100", name && strstr(name, "A100"), "got %s", name);
	name = ids_device(db, 0x10de, 0x20b7);
	T_OK("real pci.ids: 10de:20b7 is an A30", name && strstr(name, "A30"), "got %s", name);
	name = ids_device(db, 0x10de, 0x20b5);
	T_OK("real pci.ids: 10de:20b5 is an A100", name && strstr(name, "A100"), "got %s", name);
	name = ids_subsystem(db, 0x10de, 0x1db8, 0x10de, 0x131d);
	T_OK("real pci.ids: a V100 subsystem", name && strstr(name, "V100"), "got %s", name);
	T_STR("real pci.ids: class 03", ids_class(db, 0x03, 2), "Display controller");
	T_STR("real pci.ids: class 0302", ids_class(db, 0x0302, 4), "3D controller");
	T_STR("real pci.ids: class 030000", ids_class(db, 0x030000, 6), "VGA controller");
	T_STR("real pci.ids: class 0403", ids_class(db, 0x0403, 4), "Audio device");
	T_STR("real pci.ids: last vendor", ids_vendor(db, 0xffff), "Illegal Vendor ID");
	ids_free(db);
}

int main(void)
{
	const char *top = getenv("FB_TOP");

	t_suite = "ids";
	if (!top) {
		printf("SKIP: ids: all (FB_TOP not set: run through tests/run)\n");
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "/tmp/test_ids.XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	logfd = t_log_open(tmp);
	lg.v = 0;
	lg.fd = logfd;
	fixtures(top);
	buffers();
	long_lines();
	warning_cap();
	missing_and_paths(top);
	real_pci_ids();
	close(logfd);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			return 2;
	}
	return t_done();
}
