/* nodelabels: NFD's share of a Node, mirroring upstream nfd-master
 * (pkg/nfd-master/nfd-master.go: filterFeatureLabels,
 * filterExtendedResources, filterFeatureAnnotations, filterTaints,
 * updateNodeObject, createPatches, createExtendedResourcePatches, setTaints,
 * getDynamicValue; pkg/apis/nfd/validate/validate.go), v0.17-v0.19.
 *
 * What upstream does and we do too: unprefixed label, annotation and
 * extended resource keys get feature.node.kubernetes.io/ (a prefixed
 * duplicate wins), are kept as they are with DisableAutoPrefix
 * (NL_KEEP_UNPREFIXED; taint keys still need a prefix) or refused with
 * v0.15-v0.17's autoDefaultNs: false (NL_DROP_UNPREFIXED); "@d.f.e" values
 * of labels and extended resources come from attribute features;
 * kubernetes.io and *.kubernetes.io are denied except
 * feature.node.kubernetes.io and profile.node.kubernetes.io and their
 * subdomains for labels, feature.node.kubernetes.io and its subdomains for
 * annotations, extended resources and taints; --deny-label-ns, its "*"
 * suffix wildcards, --extra-label-ns and the whitelist apply to labels only
 * (upstream's code, whatever older docs say); the bookkeeping annotations
 * [<instance>.]nfd.node.kubernetes.io/feature-labels, -annotations and
 * extended-resources are sorted comma lists with the default namespace
 * stripped, and only what they list (plus those three and the legacy
 * master.version/worker.version) is ever removed; the taint tracking
 * annotation nfd.node.kubernetes.io/taints is not instance-prefixed.
 *
 * Deliberate deviations (same final state as upstream where it works):
 * - Hostile nodes (issue 16). Upstream decides what to remove from the
 *   bookkeeping annotations, which the node itself may edit: a node that
 *   wrote an admin's taint or kubernetes.io/hostname there had them removed.
 *   Here the annotations are written exactly as upstream's (interop), and
 *   with p->record (nfd-master) the label [<instance>.]NL_RECORD_NAME goes
 *   in the same patch: "t-"/"n-" and 60 hex digits of SHA-256 over the
 *   Node's metadata.uid and the exact values of the feature-labels,
 *   -annotations, extended-resources and (with "t-") taints annotations as
 *   the patch leaves them. NodeRestriction forbids a node to set, change or
 *   remove labels in node-restriction.kubernetes.io, so the node can neither
 *   forge nor drop it; an edited annotation no longer matches, an older one
 *   cannot match the current digest, a recreated Node has a new uid. No
 *   secret is needed: what makes a match is that only the master wrote the
 *   label. Where the record matches, the annotations are trusted: what they
 *   list is NFD's, except keys in a namespace the policy refuses to write
 *   now (never removed; dropped from the list). Where it does not (a node
 *   edited them, upstream's master wrote them, nfd-worker --standalone which
 *   writes no record), they are hints: a key is NFD's only if the node could
 *   have removed it itself (nothing in node-restriction.kubernetes.io,
 *   nothing else in kubernetes.io/k8s.io but NFD's own subdomains) and the
 *   policy would write it (namespaces, whitelist). Taints are NFD's only on
 *   the record. Only what passes goes into the new annotations and record,
 *   so a forged entry is never laundered (with skip_removal too: the
 *   bookkeeping annotations are rewritten even then).
 * - Unprefixed names (DisableAutoPrefix). Upstream lists an unprefixed
 *   "foo" as "foo", which it reads back as feature.node.kubernetes.io/foo:
 *   it never removes one. We list it as "/foo" (an empty namespace; upstream
 *   reads it as a name no node carries) and remove it, when no longer
 *   wanted, only where the record vouches for the list; an unvouched "/foo"
 *   is no hint at all (dropped: the node could have written it to name an
 *   admin's label), and a bare "foo" stays the default namespace's. An
 *   unprefixed label on the node that we do not track is never taken over,
 *   allowOverwrite or not (any worker may name any node in a NodeFeature;
 *   once ours it could be removed; upstream overwrites it). Values,
 *   lengths and quantities of unprefixed names are checked as any others'
 *   (upstream's validation stops at the missing prefix: a bad label value
 *   then fails the whole patch at the API server). A bare extended
 *   resource may be fractional: the API server counts it a native resource.
 * - Taints disabled: spec.taints and the taints annotation are not touched
 *   at all (upstream removes the taints NFD applied); the record keeps
 *   vouching for the annotation if it did. Prune the same.
 * - Taints: no strategic merge patch. When NFD's taints change, the metadata
 *   JSON Patch carries {"op":"test","path":"/metadata/resourceVersion"}
 *   followed by the whole new spec.taints list (foreign taints kept), next to
 *   the tracking annotation: one request instead of two, and a concurrent
 *   change fails the test (422), which nl_apply answers by reading the node
 *   again, as upstream's resourceVersion precondition (409) does.
 * - allowOverwrite false works as upstream documents it: a key on the node
 *   that NFD does not track is neither replaced nor taken over (not listed
 *   in the bookkeeping annotation); tracked keys are always updated.
 *   Upstream's createPatches has the test inverted (its docs note it).
 * - status.allocatable is replaced or removed only where it holds the
 *   resource: upstream removes it blindly, a 422 before the kubelet has
 *   copied capacity over, which blocks every later update of the node.
 * - Extended resource values are compared as quantities ("1k" == "1000");
 *   upstream compares AsInt64 with the string and repatches "1k" forever.
 *   Negative values, and fractional ones for real extended resources (no
 *   "kubernetes.io/" in the name), are rejected here because the API server
 *   rejects them, which upstream learns from a failing status PATCH that
 *   also holds back the node's labels.
 * - A label value is checked even when --extra-label-ns re-allowed its
 *   namespace (upstream skips the value check there; the API server then
 *   refuses the whole patch). Taint keys and values are checked as the API
 *   server does; of two taints with the same key and effect the last wins.
 * - With skip_removal the bookkeeping annotations keep listing the tracked
 *   keys that are still on the node, so nothing becomes unowned.
 * - Patch operations come in a fixed order (removes, then adds and replaces,
 *   each sorted by key) instead of Go's random map order.
 * - Prune removes the annotations with the prefix
 *   "[<instance>.]nfd.node.kubernetes.io/" (the taints one only with taints
 *   enabled) and the record label in the same JSON Patch as the rest, not
 *   through a second GET and a PUT of the whole node.
 * - Rejections are logged one by one up to NL_REJECTS_LOGGED per kind and
 *   call, then counted in one line: upstream logs every one, and one node's
 *   40,000 bad labels would be 40,000 lines on every update. */
#include "nodelabels.h"

#include "kube.h"
#include "nodelabels_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The module's files: nodelabels.c (this file) the sets, policy and the
 * name indexes; nodelabels_filter.c what may be written (nl_filter);
 * nodelabels_record.c the bookkeeping annotations and the record label;
 * nodelabels_diff.c the patches (nl_diff, nl_prune_diff); nodelabels_apply.c
 * the requests (nl_apply). nodelabels_int.h holds what they share. */

void nl_policy_init(struct nl_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->instance = "";
	p->allow_overwrite = 1;
}

void nl_set_free(struct nl_set *s)
{
	json_free(s->labels);
	json_free(s->annotations);
	json_free(s->extended_resources);
	json_free(s->taints);
	memset(s, 0, sizeof(*s));
}

void nl_patches_free(struct nl_patches *pp)
{
	json_free(pp->status);
	json_free(pp->meta);
	pp->status = pp->meta = NULL;
}

const struct json *nl_object_or_null_(const struct json *j)
{
	return json_type(j) == JSON_OBJECT ? j : NULL;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

int nl_nidx_setup_(struct nidx *x, size_t n)
{
	size_t size = 8;

	x->slot = NULL;
	x->mask = 0;
	if (n == 0)
		return 0;
	while (size < 2 * n) /* at most half full: probe runs stay short */
		size *= 2;
	if (!(x->slot = calloc(size, sizeof(*x->slot))))
		return -FB_ENOMEM;
	x->mask = size - 1;
	return 0;
}

void nl_nidx_free_(struct nidx *x)
{
	free(x->slot);
	x->slot = NULL;
	x->mask = 0;
}

/* The slot holding name, or the empty one where it would go. */
static struct nidx_slot *nidx_slot(const struct nidx *x, const char *name, uint32_t hash)
{
	size_t i = hash & x->mask;

	while (x->slot[i].name && (x->slot[i].hash != hash || strcmp(x->slot[i].name, name) != 0))
		i = (i + 1) & x->mask;
	return &x->slot[i];
}

const void *nl_nidx_add_(struct nidx *x, const char *name, const void *val)
{
	uint32_t hash = name_hash(name);
	struct nidx_slot *sl = nidx_slot(x, name, hash);

	if (sl->name)
		return sl->val;
	sl->name = name;
	sl->val = val;
	sl->hash = hash;
	return NULL;
}

static const void *nidx_get(const struct nidx *x, const char *name)
{
	const struct nidx_slot *sl;

	if (!x->slot)
		return NULL;
	sl = nidx_slot(x, name, name_hash(name));
	return sl->name ? sl->val : NULL;
}

int nl_nidx_members_(struct nidx *x, const struct json *obj)
{
	if (nl_nidx_setup_(x, json_type(obj) == JSON_OBJECT ? json_count(obj) : 0) < 0)
		return -FB_ENOMEM;
	for (const struct json *c = json_child(obj); x->slot && c; c = json_next(c))
		if (json_key(c))
			nl_nidx_add_(x, json_key(c), c);
	return 0;
}

const struct json *nl_member_(const struct nidx *x, const char *name)
{
	return nidx_get(x, name);
}

struct json *nl_object_of_(struct kv *kv, size_t n)
{
	struct json *out = json_new_object();
	struct nidx x;

	if (!out || nl_nidx_setup_(&x, n) < 0) {
		json_free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct kv *first = nl_nidx_add_(&x, kv[i].key, &kv[i]);

		if (first) {
			kv[first - kv].value = kv[i].value;
			kv[i].dropped = 1;
		}
	}
	nl_nidx_free_(&x);
	for (size_t i = 0; i < n; i++) {
		if (!kv[i].dropped && json_add_take(out, kv[i].key, json_new_string(kv[i].value)) < 0) {
			json_free(out);
			return NULL;
		}
	}
	return out;
}
