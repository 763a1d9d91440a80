/* fuzz_sysfs: untrusted bytes through the parsers core/pci and core/usb
 * apply to sysfs files and names, with property checks past "does not
 * crash":
 * - pci_parse_uevent_: every field it reports is stored well-formed (6 or 4
 *   lower-case hex digits, a driver name without '/' or blanks), and fields
 *   it does not report are left untouched;
 * - usb_parse_uevent_: every field it reports is stored as 4 or 2
 *   lower-case hex digits, a reported field's key is among those seen, and
 *   fields it does not report are left untouched;
 * - pci_hex_norm_: what is accepted comes out lower-case, zero-padded to
 *   exactly ndig digits, and normalises to itself;
 * - pci_addr_cmp_: an order (a == a, antisymmetric) on two names cut from
 *   the input, consistent with the address a uevent PCI_SLOT_NAME gives;
 * - usb_iface_owner_: the owner is a prefix of the interface name, or
 *   "usbN" for "N-0:...", and fits;
 * - sysfs_parse_hex / sysfs_parse_dec (numeric attributes): the verdict and
 *   value of a slow reference (blanks, an optional "0x", digits, blanks;
 *   ERANGE for digits past ULONG_MAX, whatever follows), and what is
 *   accepted prints and parses back;
 * - vfio_parse_addr (a device address from a PhysicalGPU or the command
 *   line): what is accepted is "DDDD[DDDD]:BB:DD.F" in lower case with
 *   device <= 1f and function <= 7, and parses to itself;
 * - vfio_valid_driver: exactly 1 to 63 of [A-Za-z0-9_.+-], starting with a
 *   letter or digit;
 * - pgpu_normalise: [a-z0-9-] only, no '-' at either end nor two in a row,
 *   at most max characters, and normalising it again changes nothing.
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz, local runs that grow
 * tests/fuzz/corpus/sysfs), and as a plain program whose main() replays every
 * file named on the command line or found in the directories named there,
 * which is how `make test` runs the corpus under ASan+UBSan. */
#include "../../core/pci.h"
#include "../../core/pgpu.h"
#include "../../core/sysfs.h"
#include "../../core/usb.h"
#include "../../core/vfio.h"

#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int is_lhex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

static void check_uevent(const char *s, size_t len)
{
	struct pci_dev d, before;
	unsigned bits;

	memset(&d, 'x', sizeof(d));
	d.cls[sizeof(d.cls) - 1] = d.vendor[4] = d.device[4] = '\0';
	d.subsystem_vendor[4] = d.subsystem_device[4] = d.driver[sizeof(d.driver) - 1] = '\0';
	before = d;
	bits = pci_parse_uevent_(s, len, &d);
	if (bits & ~(unsigned)(PCI_UEV_CLASS | PCI_UEV_ID | PCI_UEV_SUBSYS | PCI_UEV_DRIVER))
		abort();
	if ((bits & PCI_UEV_CLASS) ? !is_lhex(d.cls, 6) : memcmp(d.cls, before.cls, sizeof(d.cls)))
		abort();
	if ((bits & PCI_UEV_ID) ? !is_lhex(d.vendor, 4) || !is_lhex(d.device, 4)
				: memcmp(d.vendor, before.vendor, 5) || memcmp(d.device, before.device, 5))
		abort();
	if ((bits & PCI_UEV_SUBSYS) ? !is_lhex(d.subsystem_vendor, 4) || !is_lhex(d.subsystem_device, 4)
				    : memcmp(d.subsystem_vendor, before.subsystem_vendor, 5) ||
					      memcmp(d.subsystem_device, before.subsystem_device, 5))
		abort();
	if (bits & PCI_UEV_DRIVER) {
		size_t n = strlen(d.driver);

		if (n == 0 || n >= sizeof(d.driver) || strchr(d.driver, '/'))
			abort();
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)d.driver[i] <= ' ' || (unsigned char)d.driver[i] >= 0x7f)
				abort();
	} else if (memcmp(d.driver, before.driver, sizeof(d.driver))) {
		abort();
	}
	/* the rest of the struct is not the parser's */
	if (memcmp(d.addr, before.addr, sizeof(d.addr)) || d.has_sriov != before.has_sriov ||
	    memcmp(d.iommu_group, before.iommu_group, sizeof(d.iommu_group)))
		abort();
}

static void check_usb_uevent(const char *s, size_t len)
{
	struct usb_uevent u, before;
	unsigned bits;

	memset(&u, 'x', sizeof(u));
	u.vendor[4] = u.product[4] = u.cls[2] = u.iface_cls[2] = '\0';
	before = u;
	bits = usb_parse_uevent_(s, len, &u);
	if ((bits & ~u.seen) || (u.seen & ~(unsigned)(USB_UEV_DEVICE | USB_UEV_INTERFACE | USB_UEV_PRODUCT |
						     USB_UEV_TYPE | USB_UEV_IFCLASS)))
		abort();
	if ((bits & USB_UEV_DEVICE) && (bits & USB_UEV_INTERFACE))
		abort();
	if ((bits & USB_UEV_PRODUCT) ? !is_lhex(u.vendor, 4) || !is_lhex(u.product, 4)
				     : memcmp(u.vendor, before.vendor, 5) || memcmp(u.product, before.product, 5))
		abort();
	if ((bits & USB_UEV_TYPE) ? !is_lhex(u.cls, 2) : memcmp(u.cls, before.cls, 3))
		abort();
	if ((bits & USB_UEV_IFCLASS) ? !is_lhex(u.iface_cls, 2) : memcmp(u.iface_cls, before.iface_cls, 3))
		abort();
}

static void check_hex(const char *s, size_t len, unsigned ndig)
{
	char out[10], again[10];

	if (pci_hex_norm_(s, len, ndig, out) == 0) {
		if (ndig == 0 || ndig > 8 || !is_lhex(out, ndig))
			abort();
		if (pci_hex_norm_(out, ndig, ndig, again) != 0 || strcmp(out, again) != 0)
			abort();
	}
}

static int sign(int v)
{
	return v < 0 ? -1 : v > 0;
}

static void check_names(const char *a, const char *b)
{
	char owner[32];
	int n;

	if (pci_addr_cmp_(a, a) != 0 || pci_addr_cmp_(b, b) != 0)
		abort();
	if (sign(pci_addr_cmp_(a, b)) != -sign(pci_addr_cmp_(b, a)))
		abort();
	if ((pci_addr_cmp_(a, b) == 0) != (strcmp(a, b) == 0))
		abort();
	n = usb_iface_owner_(a, owner, sizeof(owner));
	if (n >= 0) {
		const char *colon = strchr(a, ':');

		if (!colon || (size_t)n != strlen(owner) || (size_t)n >= sizeof(owner))
			abort();
		if (strncmp(owner, "usb", 3) == 0 && strncmp(a, "usb", 3) != 0) {
			/* "N-0:..." -> "usbN" */
			if ((size_t)(colon - a) != (size_t)n - 3 + 2 || memcmp(owner + 3, a, (size_t)n - 3))
				abort();
		} else if ((size_t)(colon - a) != (size_t)n || memcmp(owner, a, (size_t)n)) {
			abort();
		}
	}
}

/* The documented grammar of sysfs_parse_hex/dec, digit by digit. */
static int ref_parse(const char *s, int base, unsigned long *out)
{
	unsigned long v = 0;
	int n = 0, range = 0;

	while (isspace((unsigned char)*s))
		s++;
	if (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++, n++) {
		int d = base == 16 ? pci_hexval_((unsigned char)*s)
			: *s >= '0' && *s <= '9' ? *s - '0' : -1;

		if (d < 0)
			break;
		if (v > (ULONG_MAX - (unsigned long)d) / (unsigned long)base)
			range = 1;
		v = v * (unsigned long)base + (unsigned long)d;
	}
	if (n && range)
		return -FB_ERANGE; /* before what follows the digits, as strtoul */
	while (isspace((unsigned char)*s))
		s++;
	if (n == 0 || *s)
		return -FB_EINVAL;
	*out = v;
	return 0;
}

static void check_num(const char *s)
{
	for (int base = 10; base <= 16; base += 6) {
		unsigned long v = 0, rv = 0, back = 0;
		int rc = base == 16 ? sysfs_parse_hex(s, &v) : sysfs_parse_dec(s, &v);
		char buf[40];

		if (rc != ref_parse(s, base, &rv) || (rc == 0 && v != rv))
			abort();
		if (rc != 0)
			continue;
		snprintf(buf, sizeof(buf), base == 16 ? " 0x%lx\n" : "%lu\n", v);
		if ((base == 16 ? sysfs_parse_hex(buf, &back) : sysfs_parse_dec(buf, &back)) != 0 || back != v)
			abort();
	}
}

static void check_vfio(const char *s)
{
	char out[VFIO_ADDR_MAX], again[VFIO_ADDR_MAX];
	size_t n, dom, len = strlen(s);
	int ref = len >= 1 && len <= 63 && isalnum((unsigned char)s[0]);

	for (size_t i = 0; ref && i < len; i++)
		ref = isalnum((unsigned char)s[i]) || strchr("_.+-", s[i]);
	if (vfio_valid_driver(s) != ref)
		abort();
	if (vfio_parse_addr(s, out) != 0)
		return;
	n = strlen(out);
	dom = n - 8;
	if (n < 12 || n > 16 ||
	    out[dom] != ':' || out[dom + 3] != ':' || out[dom + 6] != '.' ||
	    out[dom + 4] > '1' || out[dom + 7] < '0' || out[dom + 7] > '7')
		abort();
	for (size_t i = 0; i < n; i++)
		if (i != dom && i != dom + 3 && i != dom + 6 && pci_hexval_((unsigned char)out[i]) < 0)
			abort();
	for (size_t i = 0; i < n; i++)
		if (isupper((unsigned char)out[i]))
			abort();
	if (vfio_parse_addr(out, again) != 0 || strcmp(out, again) != 0)
		abort();
}

static void check_pgpu(const char *s, size_t max)
{
	char out[80], again[80];
	size_t n;

	pgpu_normalise(s, out, max);
	n = strlen(out);
	if (n > max || (n && (out[0] == '-' || out[n - 1] == '-')) || strstr(out, "--"))
		abort();
	for (size_t i = 0; i < n; i++)
		if (!((out[i] >= 'a' && out[i] <= 'z') || (out[i] >= '0' && out[i] <= '9') || out[i] == '-'))
			abort();
	pgpu_normalise(out, again, max);
	if (strcmp(out, again) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, *a, *b, *nul;
	size_t half;

	check_uevent((const char *)data, size);
	check_usb_uevent((const char *)data, size);
	if (size == 0)
		return 0;
	check_hex((const char *)data + 1, size - 1, data[0] % 10);
	/* two NUL-terminated names: cut at the first NUL, else in the middle */
	if (!(s = malloc(size + 2)))
		return 0;
	memcpy(s, data, size);
	s[size] = s[size + 1] = '\0';
	nul = memchr(s, '\0', size);
	half = nul ? (size_t)(nul - s) : size / 2;
	a = s;
	b = s + half + 1;
	if (!nul) {
		memmove(b, s + half, size - half);
		b[size - half] = '\0';
		a[half] = '\0';
	}
	check_names(a, b);
	check_num(a);
	check_num(b);
	check_vfio(b);
	check_pgpu(a, (size_t)data[0] % 72 + 1);
	free(s);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
