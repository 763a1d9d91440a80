/* pgpu: PhysicalGPU objects (gpu.deckhouse.io/v1alpha1). What gpu-node-agent
 * and vfio-switch must agree on (pgpu.c: the object name of a device, the
 * driverType of a driver), the vendor map that says which devices are GPUs
 * (pgpu_vmap.c), and the scan that builds each device's labels and status
 * (pgpu_scan.c). */
#ifndef FB_PGPU_H
#define FB_PGPU_H

#include "hostfs.h"
#include "ids.h"
#include "json.h"
#include "log.h"

#include <stddef.h>

#define PGPU_GROUP "gpu.deckhouse.io"
#define PGPU_API PGPU_GROUP "/v1alpha1"
#define PGPU_PATH "/apis/" PGPU_API "/physicalgpus"
#define PGPU_NAME_MAX 253

/* PCI vendor IDs the agent knows more about than the name. */
#define PGPU_VID_NVIDIA 0x10de
#define PGPU_VID_AMD 0x1002
#define PGPU_VID_INTEL 0x8086
#define PGPU_VID_METAX 0x9999

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

/* ---- the vendor map (pgpu_vmap.c) ---- */

#define PGPU_VMAP_MAX 32        /* vendors */
#define PGPU_VMAP_IDS 16        /* ids per vendor */
#define PGPU_VMAP_CLASSES 16
#define PGPU_VENDOR_NAME_MAX 56 /* "vendor.<vendor>" must be a label name */

/* Which devices are ours and under which vendor name. Plain data, no
 * pointers: two maps compare with memcmp after a memset-clean build. */
struct pgpu_vmap {
	size_t n, ncls;
	struct {
		char name[PGPU_VENDOR_NAME_MAX + 1];
		unsigned id[PGPU_VMAP_IDS];
		size_t nid;
	} v[PGPU_VMAP_MAX];
	char cls[PGPU_VMAP_CLASSES][7]; /* hex prefixes of the class code: "03", "0b40" */
};

/* The built-in map: amd=1002, intel=8086, metax=9999, nvidia=10de; classes
 * 03, 12, 0b40. */
void pgpu_vmap_default(struct pgpu_vmap *vm);
/* The map from a ConfigMap's data (vendor -> comma list of 4-hex IDs, an
 * optional "classes"): bad entries are warned about (naming what) and left
 * out; no usable vendor leaves the map empty, a bad "classes" keeps the
 * default classes. */
void pgpu_vmap_from_data(struct pgpu_vmap *vm, const struct json *data, const char *what,
			 const struct fb_log *lg);
/* --vendors-file: YAML or JSON, the data map itself or a whole ConfigMap, at
 * most 64 KiB. Returns 0 or -1 (logged). */
int pgpu_vmap_load(struct pgpu_vmap *vm, const char *path, const struct fb_log *lg);
/* The vendor name of PCI vendor id, NULL when it is not in the map. */
const char *pgpu_vmap_vendor(const struct pgpu_vmap *vm, unsigned id);
/* 1 when the class code (hex) starts with one of the map's prefixes. */
int pgpu_vmap_class(const struct pgpu_vmap *vm, const char *cls);

/* ---- the scan (pgpu_scan.c) ---- */

/* status.nodeInfo: node name, OS (etc/os-release), kernel, bare metal (the
 * prototype's rule: cpuinfo's hypervisor flag, then DMI names). Owned by the
 * caller; NULL when out of memory. */
struct json *pgpu_node_info(const struct hostfs *h, const char *node, const struct fb_log *lg);

/* What a scan reads, all borrowed. */
struct pgpu_scan {
	const struct hostfs *h;
	struct ids *ids;
	const struct pgpu_vmap *vm;
	const char *node;
	const struct json *node_info; /* copied into every status */
	const struct fb_log *log;
};
/* Scans the host's PCI bus: an object name -> {"labels": {...}, "status":
 * {...}} for every device of the map, in address order (conditions without
 * lastTransitionTime). Owned; NULL when out of memory or the bus could not
 * be read (logged). */
struct json *pgpu_discover(const struct pgpu_scan *s);
/* Gives every condition of status want its lastTransitionTime: the one in
 * have when the condition's status did not change, else now. */
void pgpu_condition_times(struct json *want, const struct json *have);
/* The Node labels for a pgpu_discover result: vendor (most devices, ties by
 * name; the module's label, one value), vendor.<vendor>=true for every
 * vendor present (so each vendor's adapter can select its nodes on a mixed
 * node) and, with several vendors, <vendor>.count. Owned; NULL: no memory. */
struct json *pgpu_node_labels(const struct json *want);


/* ---- capabilities (pgpu_caps.c) ---- */

/* The architecture and (NVIDIA only) compute capability of a device from
 * its pci.ids name, else (NVIDIA) its device-ID range. *arch and *cc are
 * static strings, "" when unknown. Returns 1 (from the name), 2 (from the
 * ID range: approximate) or 0 (unknown). */
int pgpu_arch(unsigned vendor, unsigned device, const char *name, const char **arch, const char **cc);
/* capabilities.computeAPI of a PCI vendor: CUDA, ROCm, oneAPI, MACA; NULL. */
const char *pgpu_compute_api(unsigned vendor);
/* The value of "Key: value" (a line of NVIDIA's
 * /proc/driver/nvidia/gpus/<address>/information: "Model", "GPU UUID",
 * "Device Minor") into out, white space trimmed; "" when the key is absent
 * or the value does not fit. */
void pgpu_nvidia_info(const char *text, const char *key, char *out, size_t size);
/* The driver version in /proc/driver/nvidia/version's NVRM line
 * ("535.104.05") into out. Returns 0, or -1 when there is none. */
int pgpu_nvidia_version(const char *text, char *out, size_t size);

/* ---- the vendors' node labels (pgpu_feat.c) ---- */

/* gpu-feature-discovery's sanitising of a product or machine name: every
 * character but [A-Za-z0-9-_.] and white space dropped, runs of white
 * space as one '-', none at the ends. */
void pgpu_gfd_sanitise(const char *s, char *out, size_t size);
/* The labels NVIDIA's gpu-feature-discovery, the ROCm node labeller and
 * Intel's GPU labeler put on a node with these devices (a pgpu_discover
 * result), from what the scan found and the host's sysfs: name -> value,
 * sorted. started: gfd.timestamp (0: none). Owned; NULL: no memory. */
struct json *pgpu_feature_labels(const struct pgpu_scan *s, const struct json *want, long long started);

#endif
