/* usb: enumeration of <host>/sys/bus/usb/devices from scratch: devices are the
 * entries with an idProduct file (interfaces have none), with the class of
 * every interface, sorted by name. */
#ifndef FB_USB_H
#define FB_USB_H

#include "err.h"
#include "hostfs.h"
#include "log.h"

#include <stddef.h>

#define USB_MAX_IFACES 32

struct usb_dev {
	char name[32];            /* "1-1.2", "usb1" */
	char cls[3];              /* bDeviceClass, 2 lower-case hex; "" when unreadable */
	char vendor[5], product[5]; /* idVendor, idProduct */
	char serial[128];         /* "" when absent */
	int has_serial;
	int niface;               /* interfaces found (directories NAME:C.I with bInterfaceClass) */
	char iface_cls[USB_MAX_IFACES][3];
	int iface_err;            /* an interface's class could not be read (NFD drops such a device) */
};

struct usb_list {
	struct usb_dev *dev;      /* owned; sorted by name */
	size_t n, cap;
};

void usb_list_init(struct usb_list *l);
void usb_list_free(struct usb_list *l);

/* Scans <host>/sys/bus/usb/devices. Devices missing idVendor are skipped with
 * a warning. Returns 0 (no bus: empty list) or -FB_EIO / -FB_ENOMEM. */
int usb_scan(const struct hostfs *h, struct usb_list *out, const struct fb_log *lg,
	     struct fb_errinfo *ei);

/* ---- internal, exported for the fuzz target ----------------------------- */

/* Writes the name of the device owning interface iface ("1-1.2:1.0" ->
 * "1-1.2"; a root hub's "1-0:1.0" -> "usb1") into buf. Returns its length,
 * -FB_EINVAL (not an interface name) or -FB_E2BIG. */
int usb_iface_owner_(const char *iface, char *buf, size_t size);

/* Checks a hex attribute s[0..len) of exactly ndig digits (white space
 * around it is allowed, as the kernel ends it with a newline) and writes them
 * lower-cased with a NUL into out (ndig + 1 bytes). Returns 0 or -FB_EINVAL. */
int usb_hex_norm_(const char *s, size_t len, unsigned ndig, char *out);

#endif
