/* fuzz_uevent: untrusted bytes as a kernel uevent, both ways featurebox
 * reads one, with property checks past "does not crash":
 * - as a NETLINK_KOBJECT_UEVENT datagram ("ACTION@DEVPATH\0KEY=VALUE\0...",
 *   gpu-node-agent's on_uevent): pci_uevent_msg_is_pci agrees with a slow
 *   reference (the NUL-terminated strlen walk the applet used before), is
 *   unchanged by a trailing NUL, and stays 1 when "\0" and more properties
 *   are appended (a later property never hides an earlier one);
 * - as a device's uevent file (KEY=VALUE lines, core/pci.c's scan):
 *   pci_parse_uevent_ gives the same fields parsed whole, parsed again, from
 *   a NUL-terminated copy, and line by line (each line in its own exact-size
 *   buffer, applied in order: no line's value reaches into the next); every
 *   field reported has a "KEY=" line behind it.
 * fuzz_sysfs checks the stored fields' format; this target checks the framing.
 *
 * Built two ways, as the other targets: with libFuzzer (make fuzz), and as a
 * corpus replay under ASan+UBSan (tests/fuzz/corpus/uevent, make test). */
#include "../../core/pci.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The classification gpu-node-agent did inline before it moved to core/pci. */
static int ref_is_pci(const char *data, size_t n)
{
	char *buf = malloc(n + 1);
	int pci = 0;

	if (!buf)
		abort();
	memcpy(buf, data, n);
	buf[n] = '\0';
	for (const char *p = buf + strlen(buf) + 1; p < buf + n; p += strlen(p) + 1)
		if (strcmp(p, "SUBSYSTEM=pci") == 0)
			pci = 1;
	free(buf);
	return pci;
}

static void check_msg(const char *s, size_t len)
{
	static const char more[] = "\0ACTION=add\0SUBSYSTEM=usb";
	int is = pci_uevent_msg_is_pci(s, len);
	char *t;

	if (is != ref_is_pci(s, len) || (is != 0 && is != 1))
		abort();
	if (!(t = malloc(len + sizeof(more))))
		abort();
	memcpy(t, s, len);
	t[len] = '\0';
	if (pci_uevent_msg_is_pci(t, len + 1) != is)
		abort();
	memcpy(t + len, more, sizeof(more) - 1);
	if (is && pci_uevent_msg_is_pci(t, len + sizeof(more) - 1) != 1)
		abort();
	free(t);
}

static void fresh(struct pci_dev *d)
{
	memset(d, 'x', sizeof(*d));
	d->cls[sizeof(d->cls) - 1] = d->vendor[4] = d->device[4] = '\0';
	d->subsystem_vendor[4] = d->subsystem_device[4] = d->driver[sizeof(d->driver) - 1] = '\0';
}

static int has_key(const char *s, size_t len, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = s, *end = s + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n > k && memcmp(p, key, k) == 0 && p[k] == '=')
			return 1;
		p += n + 1;
	}
	return 0;
}

static void check_file(const char *s, size_t len)
{
	struct pci_dev d1, d2, d3, d4;
	unsigned b1, b2, b3, b4 = 0;
	char *z;

	fresh(&d1);
	fresh(&d2);
	fresh(&d3);
	fresh(&d4);
	b1 = pci_parse_uevent_(s, len, &d1);
	b2 = pci_parse_uevent_(s, len, &d2);
	if (!(z = malloc(len + 1)))
		abort();
	memcpy(z, s, len);
	z[len] = '\0';
	b3 = pci_parse_uevent_(z, len, &d3);
	free(z);
	/* line by line, each line alone in a buffer of exactly its size */
	for (const char *p = s, *end = s + len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char *line = malloc(n ? n : 1);

		if (!line)
			abort();
		memcpy(line, p, n);
		b4 |= pci_parse_uevent_(line, n, &d4);
		free(line);
		p += n + 1;
	}
	if (b1 != b2 || b1 != b3 || b1 != b4)
		abort();
	if (memcmp(&d1, &d2, sizeof(d1)) || memcmp(&d1, &d3, sizeof(d1)) || memcmp(&d1, &d4, sizeof(d1)))
		abort();
	if (((b1 & PCI_UEV_CLASS) && !has_key(s, len, "PCI_CLASS")) ||
	    ((b1 & PCI_UEV_ID) && !has_key(s, len, "PCI_ID")) ||
	    ((b1 & PCI_UEV_SUBSYS) && !has_key(s, len, "PCI_SUBSYS_ID")) ||
	    ((b1 & PCI_UEV_DRIVER) && !has_key(s, len, "DRIVER")))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_msg((const char *)data, size);
	check_file((const char *)data, size);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
