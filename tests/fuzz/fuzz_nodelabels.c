/* fuzz_nodelabels: untrusted bytes as the Node object the API server
 * answered with (its bookkeeping annotations, taint annotation, labels,
 * capacity and taints are all read by nl_diff), diffed against a fixed
 * desired set and pruned, with property checks:
 * - the only refusal is EINVAL (no metadata object), which returns nothing;
 * - every operation is add/remove/replace/test on /metadata, /spec or
 *   /status (status patch: /status only), with a value where one is needed;
 * - with no nfd.node.kubernetes.io annotation at all, nothing is removed from
 *   the labels or the capacity (NFD removes only what it listed);
 * - the same input diffs the same way twice (no hidden state);
 * - with nfd-master's record on (random bytes cannot carry a valid one, so
 *   the annotations are hints) or off: no taint on the node is ever dropped
 *   from spec.taints, and no label is removed in node-restriction.kubernetes.io
 *   (but a prune's of the record itself) or elsewhere in kubernetes.io/k8s.io
 *   but NFD's feature./profile.node.kubernetes.io (issue 16), and no
 *   unprefixed label at all (a "/name" entry, DisableAutoPrefix's, counts
 *   only on the record).
 *
 * Built two ways, as the other targets: with libFuzzer (make fuzz), and as a
 * corpus replay under ASan+UBSan (tests/fuzz/corpus/nodelabels). */
#include "../../core/json.h"
#include "../../core/nodelabels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char desired[] =
	"{\"labels\":{\"feature.node.kubernetes.io/cpu-avx\":\"true\",\"example.com/gpu\":\"yes\"},"
	"\"annotations\":{\"feature.node.kubernetes.io/note\":\"hi\"},"
	"\"extended_resources\":{\"feature.node.kubernetes.io/gpu\":\"2\"},"
	"\"taints\":[{\"key\":\"feature.node.kubernetes.io/special\",\"value\":\"yes\",\"effect\":\"NoSchedule\"}]}";

static void check_ops(const struct json *ops, int status_only, int may_remove)
{
	for (const struct json *o = json_child(ops); o; o = json_next(o)) {
		const char *op = json_get_str(o, "op", ""), *path = json_get_str(o, "path", "");

		if (strcmp(op, "add") && strcmp(op, "remove") && strcmp(op, "replace") && strcmp(op, "test"))
			abort();
		if (strcmp(op, "remove") != 0 && !json_get(o, "value"))
			abort();
		if (status_only ? strncmp(path, "/status", 7) != 0
				: strncmp(path, "/metadata/", 10) != 0 && strncmp(path, "/spec", 5) != 0)
			abort();
		if (!may_remove && strcmp(op, "remove") == 0 &&
		    (strncmp(path, "/metadata/labels/", 17) == 0 || strncmp(path, "/status/", 8) == 0))
			abort();
	}
}

static int within(const char *ns, size_t len, const char *base)
{
	size_t n = strlen(base);

	return (len == n && !memcmp(ns, base, n)) || (len > n && ns[len - n - 1] == '.' && !memcmp(ns + len - n, base, n));
}

/* JSON Pointer token (~1 ~0) back to a key, into out. */
static void unescape(const char *tok, char *out, size_t size)
{
	size_t o = 0;

	for (; *tok && o + 1 < size; tok++)
		out[o++] = tok[0] == '~' && tok[1] == '1' ? (tok++, '/') : tok[0] == '~' && tok[1] == '0' ? (tok++, '~') : *tok;
	out[o] = '\0';
}

/* The hint rules: what a node's forged annotations can make NFD remove. */
static void check_hostile(const struct json *node, const struct json *ops, int prune)
{
	const struct json *cur = json_getv(node, "spec", "taints", NULL);

	for (const struct json *o = json_child(ops); o; o = json_next(o)) {
		const char *op = json_get_str(o, "op", ""), *path = json_get_str(o, "path", "");
		char key[1024];
		const char *slash;
		size_t len;

		if (!strcmp(op, "remove") && !strncmp(path, "/metadata/labels/", 17)) {
			unescape(path + 17, key, sizeof(key));
			slash = strchr(key, '/');
			len = slash ? (size_t)(slash - key) : 0;
			if (prune && slash && !strcmp(slash, "/nfd-record") && within(key, len, "node-restriction.kubernetes.io"))
				continue;
			if (!slash || within(key, len, "node-restriction.kubernetes.io") ||
			    ((within(key, len, "kubernetes.io") || within(key, len, "k8s.io")) &&
			     !within(key, len, "feature.node.kubernetes.io") && !within(key, len, "profile.node.kubernetes.io")))
				abort();
		}
		if (!strcmp(path, "/spec/taints") || !strcmp(path, "/spec")) {
			const struct json *now = !strcmp(path, "/spec") ? json_get(json_get(o, "value"), "taints") : json_get(o, "value");

			for (const struct json *t = json_type(cur) == JSON_ARRAY ? json_child(cur) : NULL; t; t = json_next(t)) {
				const struct json *n = json_child(now);

				while (n && (strcmp(json_get_str(n, "key", ""), json_get_str(t, "key", "")) ||
					     strcmp(json_get_str(n, "effect", ""), json_get_str(t, "effect", ""))))
					n = json_next(n);
				if (!n || !strcmp(op, "remove"))
					abort();
			}
		}
	}
}

static int has_nfd_annotation(const struct json *node)
{
	const struct json *a = json_getv(node, "metadata", "annotations", NULL);

	for (const struct json *c = json_child(a); c; c = json_next(c))
		if (strstr(json_key(c), "nfd.node.kubernetes.io/"))
			return 1;
	return 0;
}

static int same(const struct json *a, const struct json *b)
{
	return (!a && !b) || (a && b && json_equal(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fb_errinfo ei;
	struct json *node = json_parse((const char *)data, size, "fuzz", &ei), *d;
	struct nl_policy p;
	struct nl_set s = { 0 };
	struct nl_patches a = { 0 }, b = { 0 };
	int rc;

	if (!node)
		return 0;
	if (!(d = json_parse(desired, strlen(desired), "desired", &ei)))
		abort();
	s.labels = json_dup(json_get(d, "labels"));
	s.annotations = json_dup(json_get(d, "annotations"));
	s.extended_resources = json_dup(json_get(d, "extended_resources"));
	s.taints = json_dup(json_get(d, "taints"));
	json_free(d);
	nl_policy_init(&p);
	p.enable_taints = 1;
	for (int round = 0; round < 8; round++) {
		p.instance = round & 1 ? "blue" : "";
		p.record = round >= 4;
		rc = round % 4 < 2 ? nl_diff(&p, node, &s, round & 1, &a) : nl_prune_diff(&p, node, &a);
		if (rc < 0 && (rc != -FB_EINVAL || a.status || a.meta))
			abort();
		if (rc == 0) {
			check_ops(a.status, 1, 1);
			check_ops(a.meta, 0, has_nfd_annotation(node) || (p.record && round % 4 >= 2));
			check_hostile(node, a.meta, round % 4 >= 2);
			if (round % 4 < 2 ? nl_diff(&p, node, &s, round & 1, &b) : nl_prune_diff(&p, node, &b))
				abort();
			if (!same(a.status, b.status) || !same(a.meta, b.meta))
				abort();
		}
		nl_patches_free(&a);
		nl_patches_free(&b);
	}
	nl_set_free(&s);
	json_free(node);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
