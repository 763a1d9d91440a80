/* fuzz_nodefeature: an untrusted NodeFeature object through exactly what
 * nfd-master does with one, in its store (core/nfstore): nfstore_nf_apply
 * (node-name label, the kept part of the spec that nf_keep cuts down to what
 * the rules look at) and nfstore_desired (the kept parts merged, the
 * NodeFeatureRules run, nl_filter). No hooks: nothing is scheduled.
 *
 * Input: the NodeFeature JSON, then optionally a NUL and a NodeFeatureRule
 * object (else a fixed one that looks at flags, attributes, instances and
 * "@" values). Property checks:
 * - the size nfstore_nf_apply checks against the API's limit
 *   (nfstore_hash_walk) is the printed size;
 * - nfstore_nf_apply and nfstore_nfr_apply succeed; a NodeFeature with a
 *   node-name label is filed under that node, its kept part is an object
 *   whose "features" holds the three kinds, each feature kept also being in
 *   the spec;
 * - cutting the spec down loses nothing the rules can see: for a spec whose
 *   features are well-formed, the desired labels, annotations, extended
 *   resources and taints from the kept part equal those from the whole spec;
 * - nfstore_desired gives the same state twice (no hidden state).
 *
 * Built two ways, as the other targets: with libFuzzer (make fuzz), and as a
 * corpus replay under ASan+UBSan (tests/fuzz/corpus/nodefeature, make test). */
#include "../../core/err.h"
#include "../../core/json.h"
#include "../../core/log.h"
#include "../../core/metrics.h"
#include "../../core/nfstore.h"
#include "../../core/nfstore_int.h" /* kept_set_: the whole spec kept instead */
#include "../../core/nodelabels.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char default_rule[] =
	"{\"apiVersion\":\"nfd.k8s-sigs.io/v1alpha1\",\"kind\":\"NodeFeatureRule\","
	"\"metadata\":{\"name\":\"fuzz\"},\"spec\":{\"rules\":["
	"{\"name\":\"cpu\",\"labels\":{\"cpu-avx2\":\"true\",\"kver\":\"@kernel.version.major\"},"
	" \"matchFeatures\":[{\"feature\":\"cpu.cpuid\",\"matchExpressions\":{\"AVX2\":{\"op\":\"Exists\"}}},"
	"  {\"feature\":\"kernel.version\",\"matchExpressions\":{\"major\":{\"op\":\"Gt\",\"value\":[\"4\"]}}}]},"
	"{\"name\":\"gpu\",\"labelsTemplate\":\"{{ range .pci.device }}gpu-{{ .device }}=true\\n{{ end }}\","
	" \"extendedResources\":{\"example.com/gpus\":\"@pci.device.vendor\"},"
	" \"taints\":[{\"key\":\"example.com/gpu\",\"value\":\"yes\",\"effect\":\"NoSchedule\"}],"
	" \"matchFeatures\":[{\"feature\":\"pci.device\",\"matchExpressions\":{\"vendor\":{\"op\":\"In\",\"value\":[\"10de\"]}}}]},"
	"{\"name\":\"any\",\"labels\":{\"usb-or-module\":\"yes\"},\"matchAny\":["
	" {\"matchFeatures\":[{\"feature\":\"usb.device\",\"matchExpressions\":{\"class\":{\"op\":\"Exists\"}}}]},"
	" {\"matchFeatures\":[{\"feature\":\"kernel.loadedmodule\",\"matchName\":{\"op\":\"InRegexp\",\"value\":[\"^nv\"]}}]}]},"
	"{\"name\":\"os\",\"labels\":{\"os\":\"@system.osrelease.ID\"},\"vars\":{\"v\":\"1\"},"
	" \"matchFeatures\":[{\"feature\":\"system.osrelease\",\"matchExpressions\":{\"ID\":{\"op\":\"IsTrue\"}}}]},"
	"{\"name\":\"matched\",\"labels\":{\"after\":\"x\"},"
	" \"matchFeatures\":[{\"feature\":\"rule.matched\",\"matchExpressions\":{\"v\":{\"op\":\"Exists\"}}}]}]}}";

static int no_dup_keys(const struct json *o)
{
	for (const struct json *a = json_child(o); a; a = json_next(a))
		for (const struct json *b = json_next(a); b; b = json_next(b))
			if (strcmp(json_key(a), json_key(b)) == 0)
				return 0;
	return 1;
}

static int strings_only(const struct json *o)
{
	if (json_type(o) != JSON_OBJECT || !no_dup_keys(o))
		return 0;
	for (const struct json *c = json_child(o); c; c = json_next(c))
		if (json_type(c) != JSON_STRING)
			return 0;
	return 1;
}

/* The shape the worker publishes: every set {"elements": ...} alone, flags
 * of objects, attributes of strings, instances of {"attributes": strings},
 * no key twice. Malformed sets may legitimately read differently once cut
 * down (keep_some rebuilds what it keeps), so only these are compared. */
static int wellformed(const struct json *spec)
{
	const struct json *feats = json_get(spec, "features");

	if (!feats)
		return 1;
	if (json_type(feats) != JSON_OBJECT || !no_dup_keys(feats))
		return 0;
	for (const struct json *k = json_child(feats); k; k = json_next(k)) {
		int kind = -1;

		for (int i = 0; i < 3; i++)
			if (strcmp(json_key(k), nfstore_kinds[i]) == 0)
				kind = i;
		if (kind < 0)
			continue; /* not read by the master */
		if (json_type(k) != JSON_OBJECT || !no_dup_keys(k))
			return 0;
		for (const struct json *set = json_child(k); set; set = json_next(set)) {
			const struct json *el = json_get(set, "elements");

			if (json_type(set) != JSON_OBJECT || json_count(set) != 1 || !el)
				return 0;
			if (kind == 2) {
				if (json_type(el) != JSON_ARRAY)
					return 0;
				for (const struct json *e = json_child(el); e; e = json_next(e))
					if (json_type(e) != JSON_OBJECT || json_count(e) != 1 ||
					    !strings_only(json_get(e, "attributes")))
						return 0;
			} else if (kind == 1) {
				if (!strings_only(el))
					return 0;
			} else {
				if (json_type(el) != JSON_OBJECT || !no_dup_keys(el))
					return 0;
				for (const struct json *e = json_child(el); e; e = json_next(e))
					if (json_type(e) != JSON_OBJECT || json_count(e) != 0)
						return 0;
			}
		}
	}
	return 1;
}

static int same(const struct json *a, const struct json *b)
{
	if (!a || !b)
		return json_count(a) == 0 && json_count(b) == 0;
	return json_equal(a, b);
}

static int same_set(const struct nl_set *a, const struct nl_set *b)
{
	return same(a->labels, b->labels) && same(a->annotations, b->annotations) &&
	       same(a->extended_resources, b->extended_resources) && same(a->taints, b->taints);
}

/* The whole spec in the kept shape, as if nf_keep kept everything. Owned. */
static char *whole(const struct json *spec)
{
	struct json *o = json_new_object(), *f = json_new_object();
	const struct json *lab = json_get(spec, "labels");
	char *s;

	if (!o || !f || json_set_take(o, "features", f) < 0)
		abort();
	for (int k = 0; k < 3; k++) {
		const struct json *src = json_get(json_get(spec, "features"), nfstore_kinds[k]);

		if (json_set_take(f, nfstore_kinds[k], src ? json_dup(src) : json_new_object()) < 0)
			abort();
	}
	if (json_type(lab) == JSON_OBJECT && json_set_take(o, "labels", json_dup(lab)) < 0)
		abort();
	if (!(s = json_print(o, NULL)))
		abort();
	json_free(o);
	return s;
}

static void check_kept(struct json *kept, const struct json *spec)
{
	const struct json *f = json_get(kept, "features");

	if (json_type(kept) != JSON_OBJECT || json_type(f) != JSON_OBJECT)
		abort();
	for (int k = 0; k < 3; k++) {
		const struct json *dst = json_get(f, nfstore_kinds[k]);

		if (json_type(dst) != JSON_OBJECT)
			abort();
		for (const struct json *c = json_child(dst); c; c = json_next(c))
			if (!json_get(json_get(json_get(spec, "features"), nfstore_kinds[k]), json_key(c)))
				abort(); /* kept a feature the object does not have */
	}
	json_free(kept);
}

/* The store as nfd-master sets it up, less the hooks. */
static void store_init(struct nfstore *s, struct fb_log *lg, struct metrics *mx, struct nl_policy *pol)
{
	static int devnull = -1;
	struct nfstore_conf c = {
		.log = lg, .mx = mx, .pol = pol, .ns = "node-feature-discovery", .m_rej_nfs = -1,
		.m_rule_errors = -1, .m_rule_time = -1, .m_rej_labels = -1, .m_rej_ers = -1, .m_rej_taints = -1,
	};

	log_init(lg);
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	lg->fd = devnull; /* errors about the input are expected; keep runs quiet */
	metrics_init(mx); /* no metrics are added: it holds nothing */
	nl_policy_init(pol);
	pol->enable_taints = 1;
	nfstore_init(s, &c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nul = memchr(data, '\0', size);
	size_t len = nul ? (size_t)(nul - text) : size;
	struct json *obj, *rule = NULL;
	struct fb_errinfo ei;
	struct nfstore m;
	struct fb_log lg;
	struct metrics mx;
	struct nl_policy pol;
	const char *name;
	struct nfstore_node *n;

	obj = json_parse(text, len, "NodeFeature", &ei);
	if (json_type(obj) != JSON_OBJECT) {
		json_free(obj);
		return 0;
	}
	if (nul)
		rule = json_parse(nul + 1, size - len - 1, "NodeFeatureRule", &ei);
	if (json_type(rule) != JSON_OBJECT) {
		json_free(rule);
		rule = json_parse(default_rule, sizeof(default_rule) - 1, "rule", &ei);
		if (!rule)
			abort();
	}
	store_init(&m, &lg, &mx, &pol);
	{
		/* the size nfstore_nf_apply checks against the API's limit, counted
		 * without printing: exactly the printed size */
		size_t sz = 0;
		char *p = json_print(obj, NULL);

		nfstore_hash_walk(obj, 0, &sz);
		if (!p || sz != strlen(p))
			abort();
		free(p);
	}
	if (nfstore_nfr_apply(&m, rule, 0) != 0 || nfstore_nf_apply(&m, obj, 0) != 0)
		abort();
	name = json_get_str(json_get(json_get(obj, "metadata"), "labels"), NFSTORE_NODE_NAME_LABEL, NULL);
	n = name && *name ? nfstore_node_find(&m, name) : NULL;
	if (name && *name && json_nul_path(json_get(obj, "spec"), NULL, 0)) {
		if (n)
			abort(); /* a NUL in its spec: refused, not filed */
	} else if (name && *name) {
		struct nl_set a, b, c;
		const struct json *spec = json_get(obj, "spec");
		unsigned char *kept;
		size_t kept_len;

		if (!n || !n->nfs || n->nfs->next || !n->nfs->data)
			abort(); /* filed under its node, once */
		check_kept(nfstore_nf_kept(&m, n->nfs), spec);
		if (nfstore_desired(&m, n, &a) != 0 || nfstore_desired(&m, n, &b) != 0)
			abort();
		if (!same_set(&a, &b))
			abort();
		nl_set_free(&b);
		if (wellformed(spec)) {
			char *w = whole(spec);
			struct json *wj = w ? json_parse(w, strlen(w), "whole", &ei) : NULL;

			kept = n->nfs->data;
			kept_len = n->nfs->data_len;
			n->nfs->data = NULL;
			n->nfs->data_len = 0;
			if (!wj || kept_set_(&m, n->nfs, wj) != 0 || nfstore_desired(&m, n, &c) != 0)
				abort();
			if (!same_set(&a, &c))
				abort(); /* the kept part hid something the rules look at */
			nl_set_free(&c);
			kept_drop_(&m, n->nfs);
			n->nfs->data = kept;
			n->nfs->data_len = kept_len;
			json_free(wj);
			free(w);
		}
		nl_set_free(&a);
	} else if (m.nodes.n != 0) {
		abort(); /* no node name: ignored */
	}
	nfstore_free(&m);
	json_free(rule);
	json_free(obj);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
