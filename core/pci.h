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
	PCI_IOMMU = 1 << 1,   /* iommu_group (link basename), iommu_group/type, iommu/intel-iommu/version */
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

#endif
