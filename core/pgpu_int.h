/* pgpu_int.h: what the pgpu_*.c files share and nothing else uses. */
#ifndef FB_PGPU_INT_H
#define FB_PGPU_INT_H

#include "pci.h"
#include "pgpu.h"

/* The DRM card of an Intel GPU (i915, xe): its lowest cardN, its tiles
 * (cardN/gt/gt*, at least 1) and its local memory (lmem_total_bytes, per
 * tile, times the tiles; 0 when unknown), each step through hostfs.
 * Returns 0, or -1 when the device has no DRM card. */
struct pgpu_card {
	int card, tiles;
	unsigned long long lmem;
};
int pgpu_drm_card_(const struct hostfs *h, const char *addr, struct pgpu_card *c);
/* Adds status.capabilities to st and the driver's state to cs (its
 * currentState) for device d: fd is its sysfs directory, devname its
 * pci.ids name (NULL: none), driver the bound driver ("": none). */
void pgpu_caps_(const struct pgpu_scan *s, const struct pci_dev *d, int fd, const char *devname,
		const char *driver, struct json *st, struct json *cs);

#endif
