/* pgpu_int.h: what the pgpu_*.c files share and nothing else uses. */
#ifndef FB_PGPU_INT_H
#define FB_PGPU_INT_H

#include "pci.h"
#include "pgpu.h"

#include <sys/types.h>

/* A small host file (through hostfs, symlinks re-rooted) into a new buffer
 * of at most cap bytes: its length or a negative fb_err. */
ssize_t pgpu_host_file_(const struct hostfs *h, const char *rel, size_t cap, char **out);
/* A host attribute with core/attr's bounded reader: its length or a
 * negative fb_err. */
ssize_t pgpu_host_attr_(const struct hostfs *h, const char *rel, char *buf, size_t size);
/* Adds status.capabilities to st and the driver's state to cs (its
 * currentState) for device d: fd is its sysfs directory, devname its
 * pci.ids name (NULL: none), driver the bound driver ("": none). */
void pgpu_caps_(const struct pgpu_scan *s, const struct pci_dev *d, int fd, const char *devname,
		const char *driver, struct json *st, struct json *cs);

#endif
