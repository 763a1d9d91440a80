/* pgpu: what gpu-node-agent and vfio-switch must agree on about PhysicalGPU
 * objects (gpu.deckhouse.io/v1alpha1): the object name of a device and the
 * driverType of a driver. */
#ifndef FB_PGPU_H
#define FB_PGPU_H

#include <stddef.h>

#define PGPU_GROUP "gpu.deckhouse.io"
#define PGPU_API PGPU_GROUP "/v1alpha1"
#define PGPU_PATH "/apis/" PGPU_API "/physicalgpus"
#define PGPU_NAME_MAX 253

/* Lower-cases s into out, every run of characters outside [a-z0-9] as one
 * '-', '-' trimmed at both ends, at most max characters (trimmed again after
 * the cut). out holds max + 1 bytes. */
void pgpu_normalise(const char *s, char *out, size_t max);

/* The object name of the device at PCI address addr on node:
 * "<node>-<addr>" normalised ("worker-1-0000-65-00-0"). out holds
 * PGPU_NAME_MAX + 1 bytes. */
void pgpu_name(const char *node, const char *addr, char *out);

/* status.currentState.driverType for a bound driver ("" = unbound):
 * Nvidia, VFIO (any VFIO driver), ROCm, None or Other. */
const char *pgpu_driver_type(const char *driver);

#endif
