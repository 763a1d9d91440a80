/* usb: enumeration of <host>/sys/bus/usb/devices from scratch: devices are the
 * entries whose uevent says DEVTYPE=usb_device, sorted by name, each with
 * its serial and, for a class 00 device, the class of every interface. */
#ifndef FB_USB_H
#define FB_USB_H

#include "err.h"
#include "hostfs.h"
#include "log.h"

#include <stddef.h>

#define USB_MAX_IFACES 32

struct usb_dev {
	char name[32];            /* "1-1.2", "usb1" */
	char cls[3];              /* bDeviceClass, 2 lower-case hex (uevent's TYPE); usb_scan
				   * always sets it, nfdsrc_usb takes "" as unreadable */
	char vendor[5], product[5]; /* idVendor, idProduct, 4 lower-case hex (uevent's PRODUCT) */
	char serial[128];         /* "" when absent */
	int has_serial;
	int niface;               /* interfaces found (entries NAME:C.I), only for class 00:
				   * NFD looks at no other device's interfaces */
	char iface_cls[USB_MAX_IFACES][3];
	int iface_err;            /* an interface's class could not be read (NFD drops such a device) */
};

struct usb_list {
	struct usb_dev *dev;      /* owned; sorted by name */
	size_t n, cap;
};

void usb_list_init(struct usb_list *l);
void usb_list_free(struct usb_list *l);

/* Scans <host>/sys/bus/usb/devices. A device whose uevent cannot be read or
 * lacks a well-formed PRODUCT or TYPE is skipped with a warning naming it and
 * the key. Returns 0 (no bus: empty list) or -FB_EIO / -FB_ENOMEM. */
int usb_scan(const struct hostfs *h, struct usb_list *out, const struct fb_log *lg,
	     struct fb_errinfo *ei);

/* ---- internal, exported for the fuzz target ----------------------------- */

/* Writes the name of the device owning interface iface ("1-1.2:1.0" ->
 * "1-1.2"; a root hub's "1-0:1.0" -> "usb1") into buf. Returns its length,
 * -FB_EINVAL (not an interface name) or -FB_E2BIG. */
int usb_iface_owner_(const char *iface, char *buf, size_t size);

/* What usb_parse_uevent_ found, as bits. */
enum {
	USB_UEV_DEVICE = 1 << 0,    /* DEVTYPE=usb_device */
	USB_UEV_INTERFACE = 1 << 1, /* DEVTYPE=usb_interface */
	USB_UEV_PRODUCT = 1 << 2,   /* PRODUCT=46d/c31c/2201 (idVendor/idProduct/bcdDevice,
				     * hex, no leading zeros) -> vendor "046d", product "c31c" */
	USB_UEV_TYPE = 1 << 3,      /* TYPE=9/0/1 (bDeviceClass/SubClass/Protocol, decimal)
				     * -> cls "09" */
	USB_UEV_IFCLASS = 1 << 4,   /* INTERFACE=255/255/255 (bInterfaceClass/SubClass/Protocol,
				     * decimal) -> iface_cls "ff" */
};

struct usb_uevent {
	char vendor[5], product[5]; /* 4 lower-case hex digits */
	char cls[3], iface_cls[3];  /* 2 lower-case hex digits */
	unsigned seen;              /* USB_UEV_* of the keys present, well-formed or not
				     * (both DEVTYPE bits for any DEVTYPE line) */
};

/* Parses the text of a device's or interface's uevent file, s[0..len) (not
 * NUL-terminated, any bytes; the first line of a key counts). Only
 * well-formed values are stored in u; the others are left as they were.
 * Returns the USB_UEV_* bits of the values stored. */
unsigned usb_parse_uevent_(const char *s, size_t len, struct usb_uevent *u);

#endif
