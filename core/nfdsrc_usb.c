/* nfdsrc usb: usb.device from a usb_list (upstream source/usb). */
#include "nfdsrc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- usb -------------------------------------------------------------- */

static const char *const usb_fields[] = { "class", "vendor", "device", "serial" };

static int usb_instance(struct features *f, const struct usb_dev *d, const char *cls)
{
	struct json *in = features_instance(f, "usb.device");
	int rc;

	if (!in)
		return -FB_ENOMEM;
	if ((cls && (rc = features_inst_attr(in, "class", cls)) < 0) ||
	    (d->product[0] && (rc = features_inst_attr(in, "device", d->product)) < 0) ||
	    (d->has_serial && d->serial[0] &&
	     (rc = features_inst_attr(in, "serial", d->serial)) < 0) ||
	    (d->vendor[0] && (rc = features_inst_attr(in, "vendor", d->vendor)) < 0))
		return rc;
	return 0;
}

static int usb_label(const struct nfdsrc_config *c, const struct usb_dev *d, const char *cls,
		     const size_t *idx, size_t nidx, struct json *labels, const struct fb_log *lg)
{
	const char *vals[4] = { cls ? cls : "", d->vendor, d->product,
				d->has_serial ? d->serial : "" };
	char name[512];

	if (!labels || !nfdsrc_class_listed_(&c->usb_class_whitelist, vals[0]))
		return 0;
	if (nfdsrc_device_label_(name, sizeof(name) - 16, vals, idx, nidx) < 0)
		return 0;
	strcat(name, ".present");
	return nfdsrc_label_true_(labels, "usb", name, lg);
}

int nfdsrc_usb(const struct nfdsrc_config *c, const struct usb_list *ul, struct features *f,
	       struct json *labels, const struct fb_log *lg)
{
	static const size_t fallback[] = { 0, 1, 2 };
	size_t idx[4], nidx = 0;
	int rc;

	if ((rc = features_ensure(f, FEATURES_INSTANCES, "usb.device")) < 0)
		return rc;
	if (labels)
		nidx = nfdsrc_label_fields_(&c->usb_label_fields, usb_fields, 4, fallback, 3, idx, "usb", lg);
	for (size_t i = 0; i < ul->n; i++) {
		const struct usb_dev *d = &ul->dev[i];

		if (strcmp(d->cls, "00") != 0) {
			/* an unreadable class is no attribute, and not "00" */
			const char *cls = d->cls[0] ? d->cls : NULL;

			if ((rc = usb_instance(f, d, cls)) < 0 ||
			    (rc = usb_label(c, d, cls, idx, nidx, labels, lg)) < 0)
				return rc;
			continue;
		}
		/* class per interface: one instance each, or the whole device
		 * dropped when one interface class could not be read */
		if (d->iface_err) {
			NLOG_E(lg, "usb: failed to read the interface classes of device %s", d->name);
			continue;
		}
		for (int k = 0; k < d->niface; k++)
			if ((rc = usb_instance(f, d, d->iface_cls[k])) < 0 ||
			    (rc = usb_label(c, d, d->iface_cls[k], idx, nidx, labels, lg)) < 0)
				return rc;
	}
	return 0;
}

static int usb_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	struct usb_list ul;
	struct fb_errinfo ei;
	char msg[1200];
	int rc;

	usb_list_init(&ul);
	fb_errinfo_init(&ei);
	rc = usb_scan(c->h, &ul, c->lg, &ei);
	if (rc < 0)
		NLOG_E(c->lg, "usb: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
	else
		rc = nfdsrc_usb(c->cfg, &ul, f, labels, c->lg);
	usb_list_free(&ul);
	return rc;
}

const struct nfdsrc_source nfdsrc_usb_source_ = { "usb", NFDSRC_HOST, 0, 0, usb_discover };
