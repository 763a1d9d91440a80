/* pcibench: a test driver for core/pci and core/usb (not an applet, never
 * installed); scripts/bench-pci counts its syscalls and times it.
 *
 *   pcibench [-p PASSES] [-f FIELDS] [-l] [-u] PREFIX
 *       scans PREFIX/sys/bus/pci/devices PASSES times (default 1) with
 *       FIELDS (a comma list of sriov,iommu,driver,numa,boot_vga, or
 *       "nfd" for sriov,iommu, the default, or "all", or "none") and prints
 *       "pci N devices"; -l prints one line per device first; -u scans
 *       PREFIX/sys/bus/usb/devices too and prints "usb N devices" (and the
 *       devices with -l). Warnings go to stderr. Exit 0, or 1 on a scan
 *       error, 2 on a usage error. */
#include "../../core/pci.h"
#include "../../core/usb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_fields(const char *s, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bits;
	} tab[] = {
		{ "none", 0 },
		{ "nfd", PCI_SRIOV | PCI_IOMMU },
		{ "all", PCI_SRIOV | PCI_IOMMU | PCI_DRIVER | PCI_NUMA | PCI_BOOT_VGA },
		{ "sriov", PCI_SRIOV },
		{ "iommu", PCI_IOMMU },
		{ "driver", PCI_DRIVER },
		{ "numa", PCI_NUMA },
		{ "boot_vga", PCI_BOOT_VGA },
	};
	char buf[256], *tok, *save;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	*out = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
			if (strcmp(tok, tab[i].name) == 0)
				break;
		if (i == sizeof(tab) / sizeof(tab[0]))
			return -1;
		*out |= tab[i].bits;
	}
	return 0;
}

static void print_pci(const struct pci_dev *d)
{
	printf("%s class=%s vendor=%s device=%s subsys=%s:%s", d->addr, d->cls, d->vendor, d->device,
	       d->subsystem_vendor, d->subsystem_device);
	if (d->has_sriov)
		printf(" sriov_totalvfs=%s", d->sriov_totalvfs);
	if (d->iommu_group[0])
		printf(" iommu_group=%s type=%s", d->iommu_group, d->iommu_group_type);
	if (d->iommu_version[0])
		printf(" iommu_version=%s", d->iommu_version);
	if (d->driver[0])
		printf(" driver=%s", d->driver);
	if (d->numa_node >= 0)
		printf(" numa=%d", d->numa_node);
	if (d->boot_vga >= 0)
		printf(" boot_vga=%d", d->boot_vga);
	putchar('\n');
}

static void print_usb(const struct usb_dev *d)
{
	printf("%s class=%s vendor=%s product=%s", d->name, d->cls, d->vendor, d->product);
	if (d->has_serial)
		printf(" serial=%s", d->serial);
	if (d->niface)
		printf(" ifaces=");
	for (int i = 0; i < d->niface; i++)
		printf("%s%s", i ? "," : "", d->iface_cls[i]);
	if (d->iface_err)
		printf(" iface_err");
	putchar('\n');
}

int main(int argc, char **argv)
{
	unsigned fields = PCI_SRIOV | PCI_IOMMU;
	int passes = 1, list = 0, usb = 0, c, rc = 0;
	struct hostfs h;
	struct fb_log lg;
	struct fb_errinfo ei;
	struct pci_list pl;
	struct usb_list ul;
	char msg[1400];

	while ((c = getopt(argc, argv, "p:f:lu")) != -1) {
		switch (c) {
		case 'p':
			passes = atoi(optarg);
			break;
		case 'f':
			if (parse_fields(optarg, &fields) < 0) {
				fprintf(stderr, "pcibench: bad -f %s\n", optarg);
				return 2;
			}
			break;
		case 'l':
			list = 1;
			break;
		case 'u':
			usb = 1;
			break;
		default:
			return 2;
		}
	}
	if (optind != argc - 1 || passes < 1) {
		fprintf(stderr, "usage: pcibench [-p PASSES] [-f FIELDS] [-l] [-u] PREFIX\n");
		return 2;
	}
	hostfs_init(&h);
	log_init(&lg);
	fb_errinfo_init(&ei);
	pci_list_init(&pl);
	usb_list_init(&ul);
	if (hostfs_setup(&h, argv[optind]) < 0) {
		fprintf(stderr, "pcibench: prefix too long\n");
		return 2;
	}
	for (int i = 0; i < passes && rc == 0; i++)
		rc = pci_scan(&h, fields, &pl, &lg, &ei);
	if (rc == 0 && usb)
		rc = usb_scan(&h, &ul, &lg, &ei);
	if (rc < 0) {
		fprintf(stderr, "pcibench: %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		rc = 1;
	} else {
		for (size_t i = 0; list && i < pl.n; i++)
			print_pci(&pl.dev[i]);
		printf("pci %zu devices\n", pl.n);
		if (usb) {
			for (size_t i = 0; list && i < ul.n; i++)
				print_usb(&ul.dev[i]);
			printf("usb %zu devices\n", ul.n);
		}
	}
	usb_list_free(&ul);
	pci_list_free(&pl);
	return rc;
}
