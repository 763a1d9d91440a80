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

struct features {
	struct json *root;   /* owned: the "features" object above */
};

int features_init(struct features *f);
void features_free(struct features *f);

int features_flag(struct features *f, const char *feature, const char *name);
int features_attr(struct features *f, const char *feature, const char *name, const char *value);
/* Appends an empty instance and returns its "attributes" object (borrowed)
 * to fill with features_inst_attr, or NULL on allocation failure. */
struct json *features_instance(struct features *f, const char *feature);
int features_inst_attr(struct json *inst, const char *name, const char *value);

/* Borrowed lookups (NULL when absent). */
const struct json *features_flags(const struct features *f, const char *feature);
const struct json *features_attrs(const struct features *f, const char *feature);
const struct json *features_instances(const struct features *f, const char *feature);

/* Drops every feature whose key matches the glob-free prefix rule of
 * core.noPublishFeatures: "pci.device" exact, "cpu.*" a whole source. */
void features_drop(struct features *f, const char *pattern);

#endif
