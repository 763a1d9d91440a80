/* features: the NodeFeature spec.features tree, its lookups, noPublishFeatures
 * matching, bulk attributes and the Go-ordered print. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/features.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *print(const struct json *j)
{
	static char buf[8192];
	char *s = json_print(j, NULL);

	snprintf(buf, sizeof(buf), "%s", s ? s : "(null)");
	free(s);
	return buf;
}

/* A small tree with one feature of each kind per source. */
static void build(struct features *f)
{
	struct json *in;

	features_init(f);
	features_flag(f, "kernel.loadedmodule", "kvm");
	features_flag(f, "cpu.cpuid", "AVX2");
	features_flag(f, "cpu.cpuid", "AVX");
	features_attr(f, "kernel.version", "major", "6");
	features_attr(f, "cpu.model", "vendor_id", "Intel");
	in = features_instance(f, "usb.device");
	features_inst_attr(in, "vendor", "1a6e");
	features_inst_attr(in, "class", "fe");
	in = features_instance(f, "pci.device");
	features_inst_attr(in, "vendor", "10de");
	features_inst_attr(in, "class", "0300");
	in = features_instance(f, "pci.device");
	features_inst_attr(in, "class", "0200");
}

static const struct {
	const char *pattern;
	const char *left; /* the print after features_drop */
} drops[] = {
	{ "pci.device", "{\"flags\":{\"kernel.loadedmodule\":{\"elements\":{\"kvm\":{}}},\"cpu.cpuid\":"
			"{\"elements\":{\"AVX2\":{},\"AVX\":{}}}},\"attributes\":{\"kernel.version\":"
			"{\"elements\":{\"major\":\"6\"}},\"cpu.model\":{\"elements\":{\"vendor_id\":"
			"\"Intel\"}}},\"instances\":{\"usb.device\":{\"elements\":[{\"attributes\":"
			"{\"vendor\":\"1a6e\",\"class\":\"fe\"}}]}}}" },
	{ "cpu.*", "{\"flags\":{\"kernel.loadedmodule\":{\"elements\":{\"kvm\":{}}}},\"attributes\":"
		   "{\"kernel.version\":{\"elements\":{\"major\":\"6\"}}},\"instances\":{\"usb.device\":"
		   "{\"elements\":[{\"attributes\":{\"vendor\":\"1a6e\",\"class\":\"fe\"}}]},"
		   "\"pci.device\":{\"elements\":[{\"attributes\":{\"vendor\":\"10de\",\"class\":"
		   "\"0300\"}},{\"attributes\":{\"class\":\"0200\"}}]}}}" },
	{ "k*", "{\"flags\":{\"cpu.cpuid\":{\"elements\":{\"AVX2\":{},\"AVX\":{}}}},\"attributes\":"
		"{\"cpu.model\":{\"elements\":{\"vendor_id\":\"Intel\"}}},\"instances\":{\"usb.device\":"
		"{\"elements\":[{\"attributes\":{\"vendor\":\"1a6e\",\"class\":\"fe\"}}]},\"pci.device\":"
		"{\"elements\":[{\"attributes\":{\"vendor\":\"10de\",\"class\":\"0300\"}},{\"attributes\":"
		"{\"class\":\"0200\"}}]}}}" },
	{ "*", "{\"flags\":{},\"attributes\":{},\"instances\":{}}" },
};

/* patterns that must not match anything: not exact, no trailing star */
static const char *const no_drops[] = { "pci", "pci.dev", "pci.device.", "*.device", "cpu.cpuid*x",
					"", "PCI.device" };

/* features_cap: labels in key order, then the longest instance list's tail,
 * then whole sets, each cut fitting the bound and nothing more. */
static void test_cap(void)
{
	static const char spec_json[] =
		"{\"features\":{\"flags\":{\"cpu.cpuid\":{\"elements\":{\"AVX\":{}}}},"
		"\"attributes\":{\"kernel.config\":{\"elements\":{\"A\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}},"
		"\"instances\":{\"pci.device\":{\"elements\":[{\"attributes\":{\"n\":\"1\"}},"
		"{\"attributes\":{\"n\":\"2\"}},{\"attributes\":{\"n\":\"3\"}},{\"attributes\":{\"n\":\"4\"}}]},"
		"\"usb.device\":{\"elements\":[{\"attributes\":{\"n\":\"1\"}}]}}},"
		"\"labels\":{\"b\":\"1\",\"a\":\"2\",\"c\":\"3\"}}";
	struct fb_log lg;
	struct json *spec;
	size_t full;

	log_init(&lg);
	lg.fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	spec = json_parse(spec_json, sizeof(spec_json) - 1, "spec", NULL);
	full = json_print_len(spec);
	T_INT("cap: fits, no cut", features_cap(spec, full, 1000, &lg, "t"), 0);
	T_INT("cap: fits, unchanged", json_print_len(spec), full);
	T_INT("cap: labels over their bound: one cut", features_cap(spec, full, 17, &lg, "t"), 1);
	T_STR("cap: ...the first labels in key order stay", print(json_get(spec, "labels")),
	      "{\"a\":\"2\",\"b\":\"1\"}");
	full = json_print_len(spec);
	T_INT("cap: 40 bytes over: the longest list is cut", features_cap(spec, full - 40, 1000, &lg, "t"), 1);
	T_INT("cap: ...to 2 of 4 instances", json_count(json_getv(spec, "features", "instances", "pci.device",
								   "elements", NULL)), 2);
	T_OK("cap: ...and fits", json_print_len(spec) <= full - 40, "%zu", json_print_len(spec));
	full = json_print_len(spec);
	T_OK("cap: then lists down to nothing, then the biggest set goes",
	     features_cap(spec, full - 95, 1000, &lg, "t") > 0 &&
	     !json_getv(spec, "features", "attributes", "kernel.config", NULL) &&
	     json_getv(spec, "features", "flags", "cpu.cpuid", NULL) && json_print_len(spec) <= full - 95,
	     "%s", print(spec));
	T_INT("cap: too small for the empty shape", features_cap(spec, 10, 1000, &lg, "t"), -FB_E2BIG);
	json_free(spec);

	/* short labels: more than nfd-master takes long before the byte bound */
	{
		static const char empty[] = "{\"features\":{},\"labels\":{}}";

		spec = json_parse(empty, sizeof(empty) - 1, "spec", NULL);
	}
	for (int i = FEATURES_MAX_LABELS + 5; i > 0; i--) {
		char k[16];

		snprintf(k, sizeof(k), "l%05d", i);
		json_add_take(json_get(spec, "labels"), k, json_new_string("1"));
	}
	T_INT("cap: more labels than the master takes: one cut", features_cap(spec, 1u << 20, 1u << 20, &lg, "t"), 1);
	T_INT("cap: ...to FEATURES_MAX_LABELS", (long)json_count(json_get(spec, "labels")), FEATURES_MAX_LABELS);
	T_OK("cap: ...the first in key order", json_get(json_get(spec, "labels"), "l00001") &&
	     !json_get(json_get(spec, "labels"), "l10001"), "%s", "l00001 kept, l10001 dropped");
	json_free(spec);
	close(lg.fd);
}

int main(void)
{
	struct features f, g;
	const char *names[] = { "B", "A", "C", "A", "q\"uote" };
	const char *values[] = { "b", "a1", "c", "a2", "back\\slash\nnewline\x01" };
	struct json *in, *before;
	char *full;

	t_suite = "features";

	/* an empty tree has the three maps in struct order */
	T_INT("init", features_init(&f), 0);
	T_STR("empty tree", print(f.root), "{\"flags\":{},\"attributes\":{},\"instances\":{}}");
	features_free(&f);
	features_free(&f);
	T_OK("free twice is safe", f.root == NULL, "root %p", (void *)f.root);

	/* building, lookups */
	build(&f);
	T_STR("flags lookup is the elements object", print(features_flags(&f, "cpu.cpuid")),
	      "{\"AVX2\":{},\"AVX\":{}}");
	T_INT("a repeated flag is one element", features_flag(&f, "cpu.cpuid", "AVX"), 0);
	T_INT("...still two", json_count(features_flags(&f, "cpu.cpuid")), 2);
	T_INT("attr", features_attr(&f, "cpu.model", "vendor_id", "AMD"), 0);
	T_STR("an attribute set again is replaced", print(features_attrs(&f, "cpu.model")),
	      "{\"vendor_id\":\"AMD\"}");
	T_STR("instances lookup is the elements array", print(features_instances(&f, "pci.device")),
	      "[{\"attributes\":{\"vendor\":\"10de\",\"class\":\"0300\"}},{\"attributes\":{\"class\":\"0200\"}}]");
	T_OK("missing feature: NULL", !features_attrs(&f, "cpu.nope") && !features_flags(&f, "kernel.version") &&
	     !features_instances(&f, "cpu.cpuid"), "lookup of a missing or other-kind feature");
	features_free(&f);

	/* features_ensure: empty sets as upstream publishes them */
	features_init(&f);
	T_INT("ensure flags", features_ensure(&f, FEATURES_FLAGS, "kernel.loadedmodule"), 0);
	T_INT("ensure attributes", features_ensure(&f, FEATURES_ATTRIBUTES, "cpu.rdt"), 0);
	T_INT("ensure instances", features_ensure(&f, FEATURES_INSTANCES, "memory.nv"), 0);
	features_attr(&f, "cpu.sst", "bf.enabled", "true");
	T_INT("ensure keeps what is there", features_ensure(&f, FEATURES_ATTRIBUTES, "cpu.sst"), 0);
	T_STR("empty sets print as {} and []", print(f.root),
	      "{\"flags\":{\"kernel.loadedmodule\":{\"elements\":{}}},\"attributes\":{\"cpu.rdt\":"
	      "{\"elements\":{}},\"cpu.sst\":{\"elements\":{\"bf.enabled\":\"true\"}}},\"instances\":"
	      "{\"memory.nv\":{\"elements\":[]}}}");
	features_free(&f);

	/* features_attr_many: sorted, last repeat wins, escaping survives */
	features_init(&f);
	T_INT("attr_many", features_attr_many(&f, "kernel.config", names, values, 5), 0);
	T_STR("attr_many: sorted, the last of a repeated name wins", print(features_attrs(&f, "kernel.config")),
	      "{\"A\":\"a2\",\"B\":\"b\",\"C\":\"c\",\"q\\\"uote\":\"back\\\\slash\\nnewline\\u0001\"}");
	T_INT("attr_many of nothing", features_attr_many(&f, "kernel.empty", names, values, 0), 0);
	T_STR("...is an empty set", print(features_attrs(&f, "kernel.empty")), "{}");
	T_INT("attr_many into a filled set", features_attr_many(&f, "kernel.config", names, values, 2), 0);
	T_STR("...merges", print(features_attrs(&f, "kernel.config")),
	      "{\"A\":\"a1\",\"B\":\"b\",\"C\":\"c\",\"q\\\"uote\":\"back\\\\slash\\nnewline\\u0001\"}");
	features_free(&f);

	/* core.noPublishFeatures: exact keys, or prefixes ending in '*', all kinds */
	for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
		char name[64];

		build(&f);
		features_drop(&f, drops[i].pattern);
		snprintf(name, sizeof(name), "drop \"%s\"", drops[i].pattern);
		T_STR(name, print(f.root), drops[i].left);
		features_free(&f);
	}
	for (size_t i = 0; i < sizeof(no_drops) / sizeof(no_drops[0]); i++) {
		char name[64];

		build(&f);
		build(&g);
		features_drop(&f, no_drops[i]);
		snprintf(name, sizeof(name), "drop \"%s\" matches nothing", no_drops[i]);
		T_OK(name, json_equal(f.root, g.root), "%s", print(f.root));
		features_free(&f);
		features_free(&g);
	}

	/* features_sort: the print of upstream's Go encoding/json, maps by key,
	 * struct fields (flags, attributes, instances; elements; attributes)
	 * in declaration order, instance order kept */
	build(&f);
	features_attr(&f, "cpu.model", "family", "6");
	in = features_instance(&f, "pci.device");
	features_inst_attr(in, "sriov_totalvfs", "8");
	features_inst_attr(in, "iommu_group/type", "DMA-FQ");
	features_inst_attr(in, "iommu/intel-iommu/version", "1:0");
	features_inst_attr(in, "class", "0b40");
	features_attr(&f, "system.osrelease", "PRETTY_NAME", "Debian \"12\"\t(bookworm)");
	before = json_dup(f.root);
	T_INT("sort", features_sort(&f), 0);
	T_OK("sort keeps the tree equal", json_equal(before, f.root), "%s", print(f.root));
	json_free(before);
	full = json_print(f.root, NULL);
	T_STR("sorted print is upstream's", full,
	      "{\"flags\":{\"cpu.cpuid\":{\"elements\":{\"AVX\":{},\"AVX2\":{}}},\"kernel.loadedmodule\":"
	      "{\"elements\":{\"kvm\":{}}}},\"attributes\":{\"cpu.model\":{\"elements\":{\"family\":\"6\","
	      "\"vendor_id\":\"Intel\"}},\"kernel.version\":{\"elements\":{\"major\":\"6\"}},"
	      "\"system.osrelease\":{\"elements\":{\"PRETTY_NAME\":\"Debian \\\"12\\\"\\t(bookworm)\"}}},"
	      "\"instances\":{\"pci.device\":{\"elements\":[{\"attributes\":{\"class\":\"0300\",\"vendor\":"
	      "\"10de\"}},{\"attributes\":{\"class\":\"0200\"}},{\"attributes\":{\"class\":\"0b40\","
	      "\"iommu/intel-iommu/version\":\"1:0\",\"iommu_group/type\":\"DMA-FQ\",\"sriov_totalvfs\":"
	      "\"8\"}}]},\"usb.device\":{\"elements\":[{\"attributes\":{\"class\":\"fe\",\"vendor\":"
	      "\"1a6e\"}}]}}}");
	free(full);
	T_INT("sort twice", features_sort(&f), 0);
	full = json_print(f.root, NULL);
	T_OK("sort is idempotent", full && strstr(full, "{\"flags\":{\"cpu.cpuid\"") == full, "%s",
	     full ? full : "(null)");
	free(full);
	features_free(&f);

	/* a freed (or failed) tree refuses politely */
	T_INT("sort without a tree", features_sort(&f), -FB_ENOMEM);
	test_cap();
	return t_done();
}
