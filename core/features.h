/* features: the NFD feature model (flags, attributes, instances keyed
 * "<source>.<feature>") and label sets, kept as json trees in exactly the
 * NodeFeature spec shape, so publishing is a print and comparing is
 * json_equal:
 *   {"flags":      {"cpu.cpuid":      {"elements": {"AVX": {}}}},
 *    "attributes": {"kernel.version": {"elements": {"major": "6"}}},
 *    "instances":  {"pci.device":     {"elements": [{"attributes": {"class": "0300"}}]}}}
 * All values are strings. Functions return 0 or -FB_ENOMEM. */
#ifndef FB_FEATURES_H
#define FB_FEATURES_H

#include "json.h"
#include "log.h"

struct features {
	struct json *root;   /* owned: the "features" object above */
};

enum features_kind { FEATURES_FLAGS, FEATURES_ATTRIBUTES, FEATURES_INSTANCES };

/* Makes the three empty maps. Returns 0 or -FB_ENOMEM (root is then NULL,
 * and features_free is still safe). */
int features_init(struct features *f);
void features_free(struct features *f);

int features_flag(struct features *f, const char *feature, const char *name);
int features_attr(struct features *f, const char *feature, const char *name, const char *value);
/* Adds n attributes at once, names[i] = values[i] (a repeated name: the
 * last one wins), in O(n log n): features_attr costs a linear lookup per
 * call, which kernel.config's thousands of options cannot afford. */
int features_attr_many(struct features *f, const char *feature, const char *const *names,
		       const char *const *values, size_t n);
/* Appends an empty instance and returns its "attributes" object (borrowed)
 * to fill with features_inst_attr, or NULL on allocation failure. */
struct json *features_instance(struct features *f, const char *feature);
int features_inst_attr(struct json *inst, const char *name, const char *value);

/* Creates the feature's set with no elements when it has none. Upstream
 * publishes a discovered-but-empty set as such ("memory.nv": {"elements": []},
 * "cpu.rdt": {"elements": {}}), which is not the same as no set at all. */
int features_ensure(struct features *f, enum features_kind kind, const char *feature);

/* Borrowed lookups of the feature's "elements" (an object for flags and
 * attributes, an array for instances), NULL when absent. */
const struct json *features_flags(const struct features *f, const char *feature);
const struct json *features_attrs(const struct features *f, const char *feature);
const struct json *features_instances(const struct features *f, const char *feature);

/* Drops every feature (of all three kinds) whose key matches a
 * core.noPublishFeatures entry: "pci.device" exactly, or, when the pattern
 * ends with '*', every key starting with what precedes it ("usb.*", "cpu*";
 * "*" alone drops everything). No other glob or regexp syntax. */
void features_drop(struct features *f, const char *pattern);

/* Reorders every map member by key (byte order), the order Go's
 * encoding/json prints maps in, so json_print of the root reads like
 * upstream's (the three top-level maps stay in struct order flags,
 * attributes, instances). Instance arrays keep their order. Returns 0, or
 * -FB_ENOMEM with the tree left as it was. */
int features_sort(struct features *f);

/* The most labels one NodeFeature may carry: nfd-master refuses an object
 * with more (a Node's 256 KiB of annotations must list every name), so the
 * worker never publishes more. */
#define FEATURES_MAX_LABELS 10000

/* Cuts spec ({"features": ..., "labels": ...}, the NodeFeature spec) until
 * it prints in at most max bytes and its labels in at most labels_max bytes
 * and FEATURES_MAX_LABELS labels: the labels past those bounds go in key order; then the longest instance list
 * loses its tail (instances follow the devices, the one thing that grows
 * without bound on a real node), the next longest after it; then whole flag
 * and attribute sets go, the biggest first; then labels again. Every cut is
 * a warning on lg starting with what and naming the feature
 * ("pci.device: 5600 of 9000 instances published"). Returns the number of
 * cuts (0: nothing to do), -FB_E2BIG when even the empty shape is too big,
 * or -FB_ENOMEM. */
int features_cap(struct json *spec, size_t max, size_t labels_max, const struct fb_log *lg, const char *what);

#endif
