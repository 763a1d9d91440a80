/* nodelabels_diff: the requests that bring a Node to a desired set
 * (upstream nfd-master's updateNodeObject, createPatches,
 * createExtendedResourcePatches and setTaints) as JSON Patches: one for
 * /status (extended resources), one for the rest (labels, annotations, the
 * bookkeeping and the record, taints behind a resourceVersion test). The
 * rules and the deviations are in nodelabels.c. */
#include "nodelabels_int.h"

#include "kube.h"

#include <stdlib.h>
#include <string.h>

/* The member names of obj in byte order: an owned array of borrowed names
 * (NULL when there are none). Returns 0 or -FB_ENOMEM. */
static int sorted_keys(const struct json *obj, const char ***out, size_t *n)
{
	size_t i = 0;

	*out = NULL;
	*n = json_type(obj) == JSON_OBJECT ? json_count(obj) : 0;
	if (*n == 0)
		return 0;
	if (!(*out = malloc(*n * sizeof(**out))))
		return -FB_ENOMEM;
	for (const struct json *c = json_child(obj); c && i < *n; c = json_next(c))
		(*out)[i++] = json_key(c);
	*n = i;
	qsort(*out, *n, sizeof(**out), strset_cmp);
	return 0;
}

/* Appends {"op","path": base["/" key escaped],"value"} to ops; value (may be
 * NULL) is taken. */
static int op_take(struct json *ops, const char *op, const char *base, const char *key, struct json *value)
{
	size_t blen = strlen(base), klen = key ? strlen(key) : 0;
	char *path = malloc(blen + 2 * klen + 3);
	struct json *o = json_new_object();

	if (!path || !o || json_set_str(o, "op", op) < 0)
		goto nomem;
	memcpy(path, base, blen + 1);
	if (key) {
		path[blen] = '/';
		kube_json_pointer_escape(key, path + blen + 1, 2 * klen + 2);
	}
	if (json_set_str(o, "path", path) < 0)
		goto nomem;
	free(path);
	path = NULL;
	if (value && json_set_take(o, "value", value) < 0) {
		value = NULL;
		goto nomem;
	}
	return json_append_take(ops, o);
nomem:
	free(path);
	json_free(o);
	json_free(value);
	return -FB_ENOMEM;
}

static int op_str(struct json *ops, const char *op, const char *base, const char *key, const char *value)
{
	struct json *v = json_new_string(value);

	return v ? op_take(ops, op, base, key, v) : -FB_ENOMEM;
}

/* The members of desired that NFD may write, owned: with allow_overwrite
 * off, a key on the node (in have) that NFD does not track is left to its
 * owner. Labels (labels set): an unprefixed one (DisableAutoPrefix) always
 * is. Unprefixed is where admins put their own labels, and any worker may
 * name any node in a NodeFeature: taking such a label over would let it be
 * removed later (upstream overwrites it, and never removes an unprefixed
 * name). Annotations and extended resources come from NodeFeatureRules, an
 * admin's. Returns 0 or -FB_ENOMEM. */
static int writable(const struct json *desired, const struct nidx *have, const struct strset *tracked,
		    int allow_overwrite, int labels, struct json **out)
{
	size_t n = json_count(desired), nkv = 0;
	struct kv *kv = n ? calloc(n, sizeof(*kv)) : NULL;

	*out = NULL;
	if (n && !kv)
		return -FB_ENOMEM;
	for (const struct json *c = json_child(desired); c; c = json_next(c)) {
		if (!json_str(c) || !json_key(c))
			continue;
		if ((!allow_overwrite || (labels && !strchr(json_key(c), '/'))) && nl_member_(have, json_key(c)) &&
		    !strset_has(tracked, json_key(c)))
			continue;
		kv[nkv].key = json_key(c);
		kv[nkv++].value = json_str(c);
	}
	*out = nl_object_of_(kv, nkv);
	free(kv);
	return *out ? 0 : -FB_ENOMEM;
}

/* What the new bookkeeping annotation lists: the keys written, and with
 * skip_removal also the tracked keys still on the node (not removed now, so
 * still NFD's to remove later). */
static int new_tracked(struct strset *out, const struct json *want, const struct strset *old,
		       const struct nidx *have, int skip_removal)
{
	for (const struct json *c = json_child(want); c; c = json_next(c))
		if (strset_add(out, json_key(c)) < 0)
			return -FB_ENOMEM;
	for (size_t i = 0; skip_removal && i < old->n; i++)
		if (nl_member_(have, old->v[i]) && strset_add(out, old->v[i]) < 0)
			return -FB_ENOMEM;
	strset_sort(out);
	return 0;
}

/* Ops that make the string map at base (have: the node's, NULL when it
 * has none; hx its index) hold want: remove keys in rm that are there and
 * not wanted, add the missing, replace the different, in key order. A
 * missing map is added whole: adding below a missing parent fails. */
static int map_ops(struct json *ops, const char *base, const struct json *have, const struct nidx *hx,
		   const struct json *want, const struct strset *rm, int skip_removal)
{
	const char **keys = NULL;
	struct nidx wx;
	size_t n;
	int rc = 0;

	if (!have) {
		struct json *all;

		if (json_count(want) == 0)
			return 0;
		if (!(all = json_dup(want)))
			return -FB_ENOMEM;
		json_sort_keys(all);
		return op_take(ops, "add", base, NULL, all);
	}
	if (nl_nidx_members_(&wx, want) < 0 || sorted_keys(want, &keys, &n) < 0) {
		nl_nidx_free_(&wx);
		return -FB_ENOMEM;
	}
	for (size_t i = 0; !skip_removal && i < rm->n && rc == 0; i++)
		if (nl_member_(hx, rm->v[i]) && !nl_member_(&wx, rm->v[i]))
			rc = op_take(ops, "remove", base, rm->v[i], NULL);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *w = json_str(nl_member_(&wx, keys[i]));
		const struct json *h = nl_member_(hx, keys[i]);

		if (!w)
			w = "";
		if (!h)
			rc = op_str(ops, "add", base, keys[i], w);
		else if (!json_str(h) || strcmp(json_str(h), w) != 0)
			rc = op_str(ops, "replace", base, keys[i], w);
	}
	free(keys);
	nl_nidx_free_(&wx);
	return rc;
}

/* The extended resource ops for the status subresource (cx, ax: the
 * indexes of cap and alloc). */
static int er_ops(struct json *ops, const struct json *status, const struct json *cap,
		  const struct nidx *cx, const struct nidx *ax, const struct json *want,
		  const struct strset *old, int skip_removal)
{
	struct json *adds = NULL;
	const char **keys = NULL;
	struct nidx wx;
	size_t n;
	int rc = 0;

	if (nl_nidx_members_(&wx, want) < 0 || sorted_keys(want, &keys, &n) < 0) {
		nl_nidx_free_(&wx);
		return -FB_ENOMEM;
	}
	for (size_t i = 0; !skip_removal && i < old->n && rc == 0; i++) {
		if (!nl_member_(cx, old->v[i]) || nl_member_(&wx, old->v[i]))
			continue;
		if ((rc = op_take(ops, "remove", "/status/capacity", old->v[i], NULL)) == 0 &&
		    nl_member_(ax, old->v[i]))
			rc = op_take(ops, "remove", "/status/allocatable", old->v[i], NULL);
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *w = json_str(nl_member_(&wx, keys[i]));
		const struct json *h = nl_member_(cx, keys[i]);

		if (!w)
			w = "";
		if (h) {
			if (json_str(h) && nl_qty_same_(json_str(h), w))
				continue;
			rc = op_str(ops, "replace", "/status/capacity", keys[i], w);
			/* the kubelet copies capacity to allocatable; where it has, keep them equal */
			if (rc == 0 && nl_member_(ax, keys[i]))
				rc = op_str(ops, "replace", "/status/allocatable", keys[i], w);
		} else if (cap) {
			rc = op_str(ops, "add", "/status/capacity", keys[i], w);
		} else if (!adds && !(adds = json_new_object())) {
			rc = -FB_ENOMEM;
		} else {
			/* want's names are distinct (writable made it) */
			rc = json_add_take(adds, keys[i], json_new_string(w));
		}
	}
	free(keys);
	nl_nidx_free_(&wx);
	if (rc == 0 && adds) {
		if (status) {
			rc = op_take(ops, "add", "/status/capacity", NULL, adds);
		} else {
			struct json *st = json_new_object();

			if (!st || json_set_take(st, "capacity", adds) < 0) {
				json_free(st);
				return -FB_ENOMEM;
			}
			rc = op_take(ops, "add", "/status", NULL, st);
		}
		adds = NULL;
	}
	json_free(adds);
	return rc;
}

/* Whether the node's taint t is exactly NFD's w (no timeAdded or other
 * field that would make upstream's DeepEqual differ). */
static int taint_equal(const struct json *t, const struct json *w)
{
	if (!nl_taint_same_slot_(t, w) || strcmp(json_get_str(t, "value", ""), json_get_str(w, "value", "")) != 0)
		return 0;
	for (const struct json *c = json_child(t); c; c = json_next(c)) {
		const char *k = json_key(c);

		if (strcmp(k, "key") && strcmp(k, "value") && strcmp(k, "effect") && json_type(c) != JSON_NULL)
			return 0;
	}
	return 1;
}

/* The node's new spec.taints (owned; *changed when it differs from cur):
 * cur minus the tracked taints no longer wanted, wanted ones updated in
 * place or appended, as upstream's DeleteTaint/AddOrUpdateTaint do. */
static int taints_result(const struct json *cur, const struct json *old, const struct json *want,
			 int skip_removal, struct json **out, int *changed)
{
	*changed = 0;
	if (!(*out = json_new_array()))
		return -FB_ENOMEM;
	for (const struct json *c = json_child(cur); c; c = json_next(c)) {
		const struct json *w = json_child(want);

		while (w && !nl_taint_same_slot_(c, w))
			w = json_next(w);
		if (!w && !skip_removal && nl_taint_listed_(old, c)) {
			*changed = 1;
			continue;
		}
		if (w && !taint_equal(c, w))
			*changed = 1;
		if (json_append_take(*out, json_dup(w && !taint_equal(c, w) ? w : c)) < 0)
			return -FB_ENOMEM;
	}
	for (const struct json *w = json_child(want); w; w = json_next(w)) {
		if (nl_taint_listed_(cur, w))
			continue;
		*changed = 1;
		if (json_append_take(*out, json_dup(w)) < 0)
			return -FB_ENOMEM;
	}
	return 0;
}

/* Ops that set the record label at base (the node's labels: have, NULL when
 * there are none, and none will be added) to value, or remove it (NULL). */
static int record_ops(struct json *ops, const struct json *have, int labels_added, const char *name,
		      const char *value)
{
	const char *cur = json_get_str(have, name, NULL);
	struct json *all;

	if (!value)
		return cur ? op_take(ops, "remove", "/metadata/labels", name, NULL) : 0;
	if (cur && strcmp(cur, value) == 0)
		return 0;
	if (have || labels_added)
		return op_str(ops, cur ? "replace" : "add", "/metadata/labels", name, value);
	if (!(all = json_new_object()) || json_set_str(all, name, value) < 0) {
		json_free(all);
		return -FB_ENOMEM;
	}
	return op_take(ops, "add", "/metadata/labels", NULL, all);
}

/* Sets annotation key to value in obj unless value is empty (then the
 * annotation is omitted, as upstream does). value is freed. */
static int set_nonempty(struct json *obj, const char *key, char *value)
{
	int rc = 0;

	if (!value)
		return -FB_ENOMEM;
	if (value[0])
		rc = json_set_str(obj, key, value);
	free(value);
	return rc;
}

static int diff(const struct nl_policy *p, const struct json *node, const struct nl_set *s,
		int skip_removal, int prune, struct nl_patches *out)
{
	const struct json *md = nl_object_or_null_(json_get(node, "metadata"));
	const struct json *labels = nl_object_or_null_(json_get(md, "labels"));
	const struct json *anns = nl_object_or_null_(json_get(md, "annotations"));
	const struct json *status = nl_object_or_null_(json_get(node, "status"));
	const struct json *cap = nl_object_or_null_(json_get(status, "capacity"));
	const struct json *alloc = nl_object_or_null_(json_get(status, "allocatable"));
	const struct json *spec = nl_object_or_null_(json_get(node, "spec"));
	const struct json *cur_taints = json_get(spec, "taints");
	const char *rv = json_get_str(md, "resourceVersion", NULL);
	struct strset old_labels = { 0 }, old_fanns = { 0 }, old_ers = { 0 }, rm_anns = { 0 };
	struct strset new_labels = { 0 }, new_fanns = { 0 }, new_ers = { 0 };
	struct json *want_labels = NULL, *want_fanns = NULL, *want_ers = NULL, *want_anns = NULL;
	struct json *old_taints = NULL, *taints = NULL, *meta = NULL, *st = NULL;
	const struct json *want_taints = s && p->enable_taints ? s->taints : NULL;
	struct nidx labels_ix = { 0 }, anns_ix = { 0 }, cap_ix = { 0 }, alloc_ix = { 0 };
	struct nl_names nm;
	const char *vals[4];
	char record[NL_RECORD_SIZE];
	int rc = -FB_ENOMEM, taints_changed = 0, trusted = 0, taints_trusted = 0, labels_added;

	out->status = out->meta = NULL;
	if (!md)
		return -FB_EINVAL;
	if (nl_nidx_members_(&labels_ix, labels) < 0 || nl_nidx_members_(&anns_ix, anns) < 0 ||
	    nl_nidx_members_(&cap_ix, cap) < 0 || nl_nidx_members_(&alloc_ix, alloc) < 0)
		goto out;
	if (json_type(cur_taints) != JSON_ARRAY)
		cur_taints = NULL;
	nl_names_init_(&nm, p->instance);
	if (p->record && (rc = nl_record_check_(&nm, md, labels, anns, &trusted, &taints_trusted)) < 0)
		goto out;
	rc = -FB_ENOMEM;

	/* what NFD owns now: what the annotations name and NFD may remove
	 * (nl_removable_(); taints only by the record, and only when enabled) */
	if (nl_tracked_add_(&old_labels, json_get_str(anns, nm.labels, NULL)) < 0 ||
	    nl_tracked_add_(&old_fanns, json_get_str(anns, nm.annotations, NULL)) < 0 ||
	    nl_tracked_add_(&old_ers, json_get_str(anns, nm.ers, NULL)) < 0 ||
	    nl_taints_parse_(p, p->enable_taints && taints_trusted ? json_get_str(anns, NL_TAINTS_ANNOTATION, NULL) : NULL,
			 &old_taints) < 0)
		goto out;
	nl_tracked_keep_(p, NL_LABEL, &old_labels, trusted);
	nl_tracked_keep_(p, NL_ANNOTATION, &old_fanns, trusted);
	nl_tracked_keep_(p, NL_ER, &old_ers, trusted);
	/* the annotations removed when not wanted: the bookkeeping itself, always
	 * (with skip_removal too: it must say what the record vouches for), and
	 * the tracked feature annotations */
	for (size_t i = 0; !skip_removal && i < old_fanns.n; i++)
		if (strset_add(&rm_anns, old_fanns.v[i]) < 0)
			goto out;
	if (strset_add(&rm_anns, nm.labels) < 0 || strset_add(&rm_anns, nm.annotations) < 0 ||
	    strset_add(&rm_anns, nm.ers) < 0 || strset_add(&rm_anns, nm.master) < 0 || strset_add(&rm_anns, nm.worker) < 0 ||
	    (p->enable_taints && strset_add(&rm_anns, NL_TAINTS_ANNOTATION) < 0))
		goto out;
	for (const struct json *a = json_child(anns); prune && a; a = json_next(a))
		if (strncmp(json_key(a), nm.prefix, strlen(nm.prefix)) == 0 &&
		    (p->enable_taints || strcmp(json_key(a), NL_TAINTS_ANNOTATION) != 0) &&
		    strset_add(&rm_anns, json_key(a)) < 0)
			goto out;
	strset_sort(&old_labels);
	strset_sort(&old_fanns);
	strset_sort(&old_ers);
	strset_sort(&rm_anns);

	/* what it will own */
	if (writable(s ? s->labels : NULL, &labels_ix, &old_labels, p->allow_overwrite, 1, &want_labels) < 0 ||
	    writable(s ? s->annotations : NULL, &anns_ix, &old_fanns, p->allow_overwrite, 0, &want_fanns) < 0 ||
	    writable(s ? s->extended_resources : NULL, &cap_ix, &old_ers, p->allow_overwrite, 0, &want_ers) < 0 ||
	    new_tracked(&new_labels, want_labels, &old_labels, &labels_ix, skip_removal) < 0 ||
	    new_tracked(&new_fanns, want_fanns, &old_fanns, &anns_ix, skip_removal) < 0 ||
	    new_tracked(&new_ers, want_ers, &old_ers, &cap_ix, skip_removal) < 0 ||
	    !(want_anns = json_dup(want_fanns)) ||
	    set_nonempty(want_anns, nm.labels, nl_tracked_value_(&new_labels)) < 0 ||
	    set_nonempty(want_anns, nm.ers, nl_tracked_value_(&new_ers)) < 0 ||
	    set_nonempty(want_anns, nm.annotations, nl_tracked_value_(&new_fanns)) < 0)
		goto out;
	if (p->enable_taints &&
	    (set_nonempty(want_anns, NL_TAINTS_ANNOTATION,
			  nl_taints_value_(want_taints, old_taints, cur_taints, skip_removal)) < 0 ||
	     taints_result(cur_taints, old_taints, want_taints, skip_removal, &taints, &taints_changed) < 0))
		goto out;
	/* the record of the bookkeeping annotations as they will be: each is
	 * in want_anns or removed (rm_anns); the taints one when enabled, and
	 * while disabled (left as it is) only if the record vouched for it */
	nl_record_vals_(&nm, want_anns, vals);
	if (!p->enable_taints)
		vals[3] = json_get_str(anns, NL_TAINTS_ANNOTATION, NULL);
	if (p->record && !prune &&
	    (rc = nl_record_make_(p->enable_taints || taints_trusted ? 't' : 'n', json_get_str(md, "uid", ""), vals,
			      record)) < 0)
		goto out;
	rc = -FB_ENOMEM;

	if (!(meta = json_new_array()) || !(st = json_new_array()))
		goto out;
	if (taints_changed && rv && op_str(meta, "test", "/metadata/resourceVersion", NULL, rv) < 0)
		goto out;
	labels_added = !labels && json_count(want_labels) > 0;
	if ((rc = map_ops(meta, "/metadata/labels", labels, &labels_ix, want_labels, &old_labels,
			  skip_removal)) < 0 ||
	    (p->record && (rc = record_ops(meta, labels, labels_added, nm.record, prune ? NULL : record)) < 0) ||
	    (rc = map_ops(meta, "/metadata/annotations", anns, &anns_ix, want_anns, &rm_anns, 0)) < 0 ||
	    (rc = er_ops(st, status, cap, &cap_ix, &alloc_ix, want_ers, &old_ers, skip_removal)) < 0)
		goto out;
	rc = -FB_ENOMEM;
	if (taints_changed) {
		struct json *t = taints;

		taints = NULL;
		if (!spec) {
			struct json *sp = json_new_object();

			if (!sp || json_set_take(sp, "taints", t) < 0) {
				json_free(sp);
				goto out;
			}
			if (op_take(meta, "add", "/spec", NULL, sp) < 0)
				goto out;
		} else if (!cur_taints) {
			if (op_take(meta, "add", "/spec/taints", NULL, t) < 0)
				goto out;
		} else if (json_count(t) == 0) {
			json_free(t);
			if (op_take(meta, "remove", "/spec/taints", NULL, NULL) < 0)
				goto out;
		} else if (op_take(meta, "replace", "/spec/taints", NULL, t) < 0) {
			goto out;
		}
	}
	if (json_count(meta)) {
		out->meta = meta;
		meta = NULL;
	}
	if (json_count(st)) {
		out->status = st;
		st = NULL;
	}
	rc = 0;
out:
	nl_nidx_free_(&labels_ix);
	nl_nidx_free_(&anns_ix);
	nl_nidx_free_(&cap_ix);
	nl_nidx_free_(&alloc_ix);
	strset_free(&old_labels);
	strset_free(&old_fanns);
	strset_free(&old_ers);
	strset_free(&rm_anns);
	strset_free(&new_labels);
	strset_free(&new_fanns);
	strset_free(&new_ers);
	json_free(want_labels);
	json_free(want_fanns);
	json_free(want_ers);
	json_free(want_anns);
	json_free(old_taints);
	json_free(taints);
	json_free(meta);
	json_free(st);
	return rc;
}

int nl_diff(const struct nl_policy *p, const struct json *node, const struct nl_set *s,
	    int skip_removal, struct nl_patches *out)
{
	return diff(p, node, s, skip_removal, 0, out);
}

int nl_prune_diff(const struct nl_policy *p, const struct json *node, struct nl_patches *out)
{
	return diff(p, node, NULL, 0, 1, out);
}
