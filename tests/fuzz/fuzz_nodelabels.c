/* fuzz_nodelabels: untrusted bytes as the Node object the API server
 * answered with (its bookkeeping annotations, taint annotation, labels,
 * capacity and taints are all read by nl_diff), diffed against a fixed
 * desired set and pruned, with property checks:
 * - the only refusal is EINVAL (no metadata object), which returns nothing;
 * - every operation is add/remove/replace/test on /metadata, /spec or
 *   /status (status patch: /status only), with a value where one is needed;
 * - with no nfd.node.kubernetes.io annotation at all, nothing is removed from
 *   the labels or the capacity (NFD removes only what it listed);
 * - the same input diffs the same way twice (no hidden state).
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
	for (int round = 0; round < 4; round++) {
		p.instance = round & 1 ? "blue" : "";
		rc = round < 2 ? nl_diff(&p, node, &s, round, &a) : nl_prune_diff(&p, node, &a);
		if (rc < 0 && (rc != -FB_EINVAL || a.status || a.meta))
			abort();
		if (rc == 0) {
			check_ops(a.status, 1, 1);
			check_ops(a.meta, 0, has_nfd_annotation(node));
			if (round < 2 ? nl_diff(&p, node, &s, round, &b) : nl_prune_diff(&p, node, &b))
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
