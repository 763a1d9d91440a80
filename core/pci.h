/* pci: enumeration of <host>/sys/bus/pci/devices from scratch (no library):
 * one directory fd per device, openat-relative reads of only the fields asked
 * for. Devices come sorted by address (domain:bus:dev.fn). */
#ifndef FB_PCI_H
#define FB_PCI_H

#include "err.h"
#include "hostfs.h"
#include "log.h"

#include <stddef.h>

/* Optional fields; the NFD mandatory five (class, vendor, device,
 * subsystem_vendor, subsystem_device) are always read. */
enum pci_fields {
	PCI_SRIOV = 1 << 0,   /* sriov_totalvfs (present or not, and its value) */
	PCI_IOMMU = 1 << 1,   /* iommu_group, iommu_group/type, iommu/intel-iommu/version: the
			       * kernel's links (read beneath sys/kernel/iommu_groups and
			       * sys/devices/virtual/iommu) or plain directories (upstream's
			       * test tree) */
	PCI_DRIVER = 1 << 2,  /* driver (link basename) */
	PCI_NUMA = 1 << 3,    /* numa_node */
	PCI_BOOT_VGA = 1 << 4,/* boot_vga */
};

struct pci_dev {
	char addr[24];            /* "0000:65:00.0"; domains may have more than 4 hex digits */
	char cls[7];              /* 6 lower-case hex digits, "030200" (NFD uses the first 4) */
	char vendor[5], device[5], subsystem_vendor[5], subsystem_device[5]; /* 4 lower-case hex */
	int has_sriov;            /* sriov_totalvfs exists */
	char sriov_totalvfs[12];
	char iommu_group[12];     /* "" when there is no group */
	char iommu_group_type[24];
	char iommu_version[12];   /* iommu/intel-iommu/version, "" when absent */
	char driver[64];          /* "" when unbound */
	int numa_node;            /* -1 when unknown */
	int boot_vga;             /* 1, 0, or -1 when absent */
};

struct pci_list {
	struct pci_dev *dev;      /* owned; sorted by addr */
	size_t n, cap;
};

/* Cannot fail: an empty list. */
void pci_list_init(struct pci_list *l);
void pci_list_free(struct pci_list *l);

/* Scans <host>/sys/bus/pci/devices, reading the mandatory attributes and the
 * optional fields asked for. A device whose mandatory attribute is missing or
 * malformed is skipped with a warning naming it and the attribute (lg may be
 * NULL). Returns 0 (an absent bus directory is an empty list, not an error),
 * or -FB_EIO / -FB_ENOMEM with ei filled. */
int pci_scan(const struct hostfs *h, unsigned fields, struct pci_list *out, const struct fb_log *lg,
	     struct fb_errinfo *ei);

/* Classifies one kernel uevent datagram, buf[0..len) as recv() gave it:
 * "ACTION@DEVPATH\0KEY=VALUE\0..." (the last NUL may be missing; any bytes).
 * Returns 1 when one of the properties after the header is exactly
 * "SUBSYSTEM=pci", else 0. Reads nothing past buf + len. */
int pci_uevent_msg_is_pci(const char *buf, size_t len);

/* ---- internal, exported for the fuzz target ----------------------------- */

/* What pci_parse_uevent_ found, as bits. */
enum {
	PCI_UEV_CLASS = 1 << 0,   /* PCI_CLASS=30200 -> cls "030200" */
	PCI_UEV_ID = 1 << 1,      /* PCI_ID=10DE:20B0 -> vendor, device */
	PCI_UEV_SUBSYS = 1 << 2,  /* PCI_SUBSYS_ID=10DE:134F -> subsystem_vendor, subsystem_device */
	PCI_UEV_DRIVER = 1 << 3,  /* DRIVER=nvidia -> driver */
};

/* Parses the text of a device's uevent file, s[0..len) (not NUL-terminated,
 * any bytes), into d. Only well-formed values are stored; a field whose line
 * is missing or malformed is left as it was and its bit is not returned.
 * Returns the PCI_UEV_* bits of the fields stored. */
unsigned pci_parse_uevent_(const char *s, size_t len, struct pci_dev *d);

/* Normalises a hex attribute s[0..len): an optional "0x", 1 to ndig hex
 * digits (either case), then nothing but white space. Writes exactly ndig
 * lower-case digits, zero-padded, and a NUL into out (ndig + 1 bytes; out is
 * untouched on error). Returns 0 or -FB_EINVAL. ndig is at most 8. */
int pci_hex_norm_(const char *s, size_t len, unsigned ndig, char *out);

/* The value of one hex digit (either case), or -1. */
int pci_hexval_(int c);

/* Orders two device names by (domain, bus, device, function) as numbers, so
 * "ffff:00:00.0" comes before "10000:00:00.0"; names that are not PCI
 * addresses come after all addresses, by strcmp. Returns <0, 0 or >0. */
int pci_addr_cmp_(const char *a, const char *b);

#endif
