/* nfdsrc pci: pci.device from a pci_list (upstream source/pci). */
#include "nfdsrc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const pci_fields[] = { "class", "vendor", "device", "subsystem_vendor",
					  "subsystem_device" };

int nfdsrc_pci(const struct nfdsrc_config *c, const struct pci_list *pl, struct features *f,
	       struct json *labels, const struct fb_log *lg)
{
	static const size_t fallback[] = { 0, 1 };
	size_t idx[5], nidx = 0;
	int rc;

	if ((rc = features_ensure(f, FEATURES_INSTANCES, "pci.device")) < 0)
		return rc;
	if (labels)
		nidx = nfdsrc_label_fields_(&c->pci_label_fields, pci_fields, 5, fallback, 2, idx, "pci", lg);
	for (size_t i = 0; i < pl->n; i++) {
		const struct pci_dev *d = &pl->dev[i];
		size_t cl = strnlen(d->cls, 4); /* prog-if dropped: 030000 -> 0300 */
		char cls[5], name[256];
		const char *vals[5];
		struct json *in = features_instance(f, "pci.device");

		if (!in)
			return -FB_ENOMEM;
		memcpy(cls, d->cls, cl);
		cls[cl] = '\0';
		/* members in key order, as Go prints the map */
		if ((rc = features_inst_attr(in, "class", cls)) < 0 ||
		    (rc = features_inst_attr(in, "device", d->device)) < 0 ||
		    (d->iommu_version[0] &&
		     (rc = features_inst_attr(in, "iommu/intel-iommu/version", d->iommu_version)) < 0) ||
		    (d->iommu_group_type[0] &&
		     (rc = features_inst_attr(in, "iommu_group/type", d->iommu_group_type)) < 0) ||
		    (d->has_sriov &&
		     (rc = features_inst_attr(in, "sriov_totalvfs", nfdsrc_no0x_(d->sriov_totalvfs))) < 0) ||
		    (rc = features_inst_attr(in, "subsystem_device", d->subsystem_device)) < 0 ||
		    (rc = features_inst_attr(in, "subsystem_vendor", d->subsystem_vendor)) < 0 ||
		    (rc = features_inst_attr(in, "vendor", d->vendor)) < 0)
			return rc;
		if (!labels || !nfdsrc_class_listed_(&c->pci_class_whitelist, cls))
			continue;
		vals[0] = cls;
		vals[1] = d->vendor;
		vals[2] = d->device;
		vals[3] = d->subsystem_vendor;
		vals[4] = d->subsystem_device;
		if (nfdsrc_device_label_(name, sizeof(name) - 16, vals, idx, nidx) < 0)
			continue;
		strcat(name, ".present");
		if ((rc = nfdsrc_label_true_(labels, "pci", name, lg)) < 0)
			return rc;
		if (d->has_sriov) {
			strcpy(name + strlen(name) - strlen(".present"), ".sriov.capable");
			if ((rc = nfdsrc_label_true_(labels, "pci", name, lg)) < 0)
				return rc;
		}
	}
	return 0;
}

static int pci_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	struct pci_list pl;
	struct fb_errinfo ei;
	char msg[1200];
	int rc;

	pci_list_init(&pl);
	fb_errinfo_init(&ei);
	rc = pci_scan(c->h, PCI_SRIOV | PCI_IOMMU, &pl, c->lg, &ei);
	/* pci_scan lists an absent bus directory as no devices; upstream's
	 * source fails then, publishing no pci.device (its rootfs-empty test) */
	if (rc == 0 && pl.n == 0 && nfdsrc_host_exists_(c->h, "sys/bus/pci/devices") == 0) {
		NLOG_E(c->lg, "pci: failed to detect PCI devices: %ssys/bus/pci/devices: %s",
		       c->h->prefix, fb_strerror(-FB_ENOENT));
		rc = -FB_ENOENT;
	} else if (rc < 0) {
		NLOG_E(c->lg, "pci: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
	} else {
		rc = nfdsrc_pci(c->cfg, &pl, f, labels, c->lg);
	}
	pci_list_free(&pl);
	return rc;
}

const struct nfdsrc_source nfdsrc_pci_source_ = { "pci", NFDSRC_HOST, 0, 0, pci_discover };
