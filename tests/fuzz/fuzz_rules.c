/* fuzz_rules: untrusted bytes as a NodeFeatureRule (its spec.rules, or a
 * bare list of rules), compiled in both dialects and run against a
 * realistic feature set; bytes after a NUL, when they parse as a JSON
 * object, replace that feature set (NodeFeatures are untrusted too).
 * Property checks:
 * - compiling never fails (a bad rule is a broken rule, not an error);
 * - running reports exactly as many errors as it counts, every output is
 *   an object of strings (taints: an array of objects);
 * - a second run on a fresh copy of the features gives the same outputs.
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz), and as a plain
 * program replaying tests/fuzz/corpus/rules under ASan+UBSan (make test). */
#include "../../core/features.h"
#include "../../core/json.h"
#include "../../core/rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char features_json[] =
	"{\"flags\": {"
	" \"cpu.cpuid\": {\"elements\": {\"ADX\": {}, \"AESNI\": {}, \"AVX\": {}, \"AVX2\": {}, \"AVX512BW\": {},"
	"  \"AVX512F\": {}, \"FMA3\": {}, \"SSE4\": {}, \"VMX\": {}, \"X86_64_V3\": {}}},"
	" \"kernel.loadedmodule\": {\"elements\": {\"vfio_pci\": {}, \"nvidia\": {}, \"kvm_intel\": {}}},"
	" \"kernel.enabledmodule\": {\"elements\": {\"vfio_pci\": {}, \"ext4\": {}}}},"
	"\"attributes\": {"
	" \"cpu.cpuid\": {\"elements\": {\"AVX10_VERSION\": \"2\"}},"
	" \"cpu.model\": {\"elements\": {\"vendor_id\": \"Intel\", \"family\": \"6\", \"id\": \"85\", \"hypervisor\": \"none\"}},"
	" \"cpu.topology\": {\"elements\": {\"hardware_multithreading\": \"true\", \"socket_count\": \"2\"}},"
	" \"kernel.version\": {\"elements\": {\"full\": \"6.1.0-18-amd64\", \"major\": \"6\", \"minor\": \"1\", \"revision\": \"0\"}},"
	" \"kernel.config\": {\"elements\": {\"NO_HZ\": \"y\", \"NO_HZ_IDLE\": \"y\", \"PREEMPT\": \"n\", \"IOMMU_SUPPORT\": \"y\"}},"
	" \"kernel.selinux\": {\"elements\": {\"enabled\": \"false\"}},"
	" \"memory.numa\": {\"elements\": {\"is_numa\": \"true\", \"node_count\": \"2\"}},"
	" \"system.osrelease\": {\"elements\": {\"ID\": \"ubuntu\", \"VERSION_ID\": \"22.04\", \"VERSION_ID.major\": \"22\","
	"  \"VERSION_ID.minor\": \"04\"}},"
	" \"system.name\": {\"elements\": {\"nodename\": \"node-1\"}}},"
	"\"instances\": {"
	" \"pci.device\": {\"elements\": ["
	"  {\"attributes\": {\"class\": \"0300\", \"vendor\": \"10de\", \"device\": \"2330\", \"sriov_totalvfs\": \"0\","
	"   \"iommu_group/type\": \"DMA\"}},"
	"  {\"attributes\": {\"class\": \"0200\", \"vendor\": \"8086\", \"device\": \"1592\", \"sriov_totalvfs\": \"128\"}},"
	"  {\"attributes\": {\"class\": \"0b40\", \"vendor\": \"1002\", \"device\": \"740f\"}}]},"
	" \"network.device\": {\"elements\": [{\"attributes\": {\"name\": \"eth0\", \"operstate\": \"up\", \"speed\": \"25000\","
	"  \"mtu\": \"1500\"}}]},"
	" \"usb.device\": {\"elements\": []}}}";

static void on_err(void *ctx, const char *what, const char *rule, const char *msg)
{
	if (!what || !rule || !msg || !*msg)
		abort();
	++*(int *)ctx;
}

static void on_ref(void *ctx, const char *feature, const char *element)
{
	(void)element;
	if (!feature)
		abort();
	++*(int *)ctx;
}

static void strings_only(const struct json *o)
{
	if (json_type(o) != JSON_OBJECT)
		abort();
	for (const struct json *c = json_child(o); c; c = json_next(c))
		if (!json_str(c))
			abort();
}

/* The outputs of one run on a copy of feat, printed; owned by the caller. */
static char *run_once(const struct rules *r, const struct json *feat)
{
	struct features f = { .root = json_dup(feat) };
	struct rules_out o;
	char *parts[5], *all;
	int n = 0, rc;
	size_t len = 0;

	if (!f.root || rules_out_init(&o) < 0)
		abort();
	rc = rules_run(r, &f, &o, on_err, &n);
	if (rc < 0 || rc != n)
		abort();
	strings_only(o.labels);
	strings_only(o.vars);
	strings_only(o.annotations);
	strings_only(o.extended_resources);
	if (json_type(o.taints) != JSON_ARRAY)
		abort();
	for (const struct json *t = json_child(o.taints); t; t = json_next(t))
		strings_only(t);
	parts[0] = json_print(o.labels, NULL);
	parts[1] = json_print(o.vars, NULL);
	parts[2] = json_print(o.annotations, NULL);
	parts[3] = json_print(o.extended_resources, NULL);
	parts[4] = json_print(o.taints, NULL);
	for (int i = 0; i < 5; i++)
		len += parts[i] ? strlen(parts[i]) + 1 : 0;
	if (!(all = calloc(1, len + 1)))
		abort();
	for (int i = 0; i < 5; i++) {
		if (!parts[i])
			abort();
		strcat(all, parts[i]);
		strcat(all, "|");
		free(parts[i]);
	}
	rules_out_free(&o);
	features_free(&f);
	return all;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t rlen = nul ? (size_t)(nul - data) : size;
	struct fb_errinfo ei;
	struct json *doc = json_parse((const char *)data, rlen, "fuzz", &ei), *feat = NULL;
	const struct json *list = doc;

	if (!doc)
		return 0;
	if (nul && (feat = json_parse((const char *)nul + 1, size - rlen - 1, "features", &ei)) &&
	    json_type(feat) != JSON_OBJECT) {
		json_free(feat);
		feat = NULL;
	}
	if (!feat && !(feat = json_parse(features_json, sizeof(features_json) - 1, "features", &ei)))
		abort();
	if (json_type(doc) == JSON_OBJECT && json_get(doc, "spec"))
		list = json_getv(doc, "spec", "rules", NULL);
	for (int d = RULES_NFR; d <= RULES_CUSTOM; d++) {
		struct rules *r;
		char *a, *b;
		int refs = 0;

		if (rules_compile(&r, list, (enum rules_dialect)d, "fuzz") != 0)
			abort();
		for (size_t i = 0; i < rules_count(r); i++)
			if (!rules_name(r, i))
				abort();
		rules_refs(r, on_ref, &refs);
		a = run_once(r, feat);
		b = run_once(r, feat);
		if (strcmp(a, b) != 0)
			abort();
		free(a);
		free(b);
		rules_free(r);
	}
	json_free(doc);
	json_free(feat);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
