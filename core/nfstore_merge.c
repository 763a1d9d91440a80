/* nfstore: a node's desired state. Its NodeFeatures' kept parts merged (our
 * namespace's first, then by name; instances appended, other elements and
 * labels by name, the later object's winning), the NodeFeatureRules run over
 * the merge, the result filtered through the policy and the restrictions.
 * Linear in the size of the objects: hash maps, sets built anew. */
#include "nfstore_int.h"

#include "buf.h"
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int nf_order(const struct nfstore *s, const struct nfstore_nf *a, const struct nfstore_nf *b)
{
	int aown = strcmp(a->ns, s->c.ns) == 0, bown = strcmp(b->ns, s->c.ns) == 0, c;

	if (aown != bown)
		return bown - aown;
	if ((c = strcmp(a->name, b->name)) != 0)
		return c;
	return strcmp(a->ns, b->ns);
}

/* A node's labels by name, in the order first set, the last value set
 * winning: the merge of its objects and the rule outputs in linear time
 * (json_set_take looks for the name among every member). Keys in the arena,
 * values borrowed. */
struct lmap {
	struct nfstore_map idx; /* name -> index + 1 */
	struct arena keys_strs;
	const char **keys;
	const char **vals;
	size_t n, keys_size, vals_size;
	int keep_unprefixed;    /* the policy's unprefixed is not NL_AUTO_PREFIX */
};

static int lmap_set(struct lmap *b, const char *key, const char *value)
{
	uintptr_t i = (uintptr_t)smap_get_(&b->idx, key);
	const char *k;

	if (i) {
		b->vals[i - 1] = value;
		return 0;
	}
	if (ARRAY_GROW(b->keys, b->keys_size, b->n + 1) < 0 || ARRAY_GROW(b->vals, b->vals_size, b->n + 1) < 0 ||
	    !(k = arena_strdup(&b->keys_strs, key)) || smap_put_(&b->idx, k, (void *)(uintptr_t)(b->n + 1)) < 0)
		return -FB_ENOMEM;
	b->keys[b->n] = k;
	b->vals[b->n++] = value;
	return 0;
}

/* "x" -> "feature.node.kubernetes.io/x" (with b->keep_unprefixed "x", as
 * upstream's DisableAutoPrefix and autoDefaultNs: false: the policy then
 * writes or refuses it); others as they are. */
static int lmap_set_prefixed(struct lmap *b, const char *key, const char *value)
{
	char full[400];

	if (strchr(key, '/') || b->keep_unprefixed)
		return lmap_set(b, key, value);
	snprintf(full, sizeof(full), NL_DEFAULT_NS "/%s", key);
	return lmap_set(b, full, value);
}

/* The labels as an object. Owned, NULL on ENOMEM. */
static struct json *lmap_json(const struct lmap *b)
{
	struct json *o = json_new_object();

	for (size_t i = 0; o && i < b->n; i++)
		if (json_add_take(o, b->keys[i], json_new_string(b->vals[i])) < 0) {
			json_free(o);
			return NULL;
		}
	return o;
}

static void lmap_free(struct lmap *b)
{
	arena_free(&b->keys_strs);
	free(b->keys);
	free(b->vals);
	smap_free_(&b->idx);
}

/* Merges the elements of one object's feature into have, the feature
 * merged so far: instances appended, other elements by name, the later
 * object's winning. Linear: the merged set is built anew. */
static int merge_elements(struct json *have, int kind, const struct json *el)
{
	struct json *hel = json_get(have, "elements"), *nel;
	struct nfstore_map win = { 0 }; /* name -> the member of el kept: the last */
	int rc = -FB_ENOMEM;

	if (!hel)
		return json_set_take(have, "elements", json_dup(el));
	if (kind == 2 || json_type(hel) != JSON_OBJECT || json_type(el) != JSON_OBJECT) {
		for (const struct json *e = json_child(el); e; e = json_next(e))
			if ((kind == 2 ? json_append_take(hel, json_dup(e))
			     : json_key(e) ? json_set_take(hel, json_key(e), json_dup(e)) : 0) < 0)
				return -FB_ENOMEM;
		return 0;
	}
	if (!(nel = json_new_object()))
		return -FB_ENOMEM;
	for (const struct json *e = json_child(el); e; e = json_next(e))
		if (smap_put_(&win, json_key(e), (void *)e) < 0)
			goto out;
	for (const struct json *e = json_child(hel); e; e = json_next(e))
		if (!smap_get_(&win, json_key(e)) && json_add_take(nel, json_key(e), json_dup(e)) < 0)
			goto out;
	for (const struct json *e = json_child(el); e; e = json_next(e))
		if (smap_get_(&win, json_key(e)) == e && json_add_take(nel, json_key(e), json_dup(e)) < 0)
			goto out;
	rc = json_set_take(have, "elements", nel);
	nel = NULL;
out:
	json_free(nel);
	smap_free_(&win);
	return rc;
}

/* Merges one kept NodeFeature into the node's features (fidx: name ->
 * feature merged so far, per kind) and labels. */
static int merge_one(struct features *f, struct nfstore_map fidx[3], struct lmap *labels, const struct json *kept)
{
	const struct json *feats = json_get(kept, "features"), *lab = json_get(kept, "labels");

	for (int k = 0; k < 3; k++) {
		struct json *dst = json_get(f->root, nfstore_kinds[k]);

		for (const struct json *c = json_child(json_get(feats, nfstore_kinds[k])); c; c = json_next(c)) {
			struct json *have = smap_get_(&fidx[k], json_key(c)), *d;

			if (!have) {
				if (!(d = json_dup(c)) || json_add_take(dst, json_key(c), d) < 0 ||
				    smap_put_(&fidx[k], json_key(d), d) < 0)
					return -FB_ENOMEM;
				continue;
			}
			if (merge_elements(have, k, json_get(c, "elements")) < 0)
				return -FB_ENOMEM;
		}
	}
	if (!labels)
		return 0;
	/* a prefixed key wins over the same key unprefixed in one object */
	for (int pass = 0; pass < 2; pass++)
		for (const struct json *c = json_child(lab); c; c = json_next(c))
			if ((strchr(json_key(c), '/') != NULL) == pass && json_str(c) &&
			    lmap_set_prefixed(labels, json_key(c), json_str(c)) < 0)
				return -FB_ENOMEM;
	return 0;
}

void rule_error_(void *ctx, const char *what, const char *rule, const char *msg)
{
	struct rule_err_ctx *c = ctx;

	if (c->count)
		metrics_inc(c->s->c.mx, c->s->c.m_rule_errors, 1);
	/* a few per rule object version, not once per node */
	if ((*c->logged)++ < 5)
		LOG_E(c->s->c.log, "%s: rule \"%s\" on node %s: %s (the rule is skipped)", what, rule, c->node, msg);
}

/* Node n's objects in merge order (at most NFSTORE_MAX_NFS): how many. */
static size_t merge_order(struct nfstore *s, struct nfstore_node *n, struct nfstore_nf **v)
{
	size_t nv = 0;

	for (struct nfstore_nf *o = n->nfs; o; o = o->next) {
		if (!ns_selected_(s, o->ns))
			continue;
		if (nv == NFSTORE_MAX_NFS) {
			LOG_E(s->c.log, "node %s: more than %d NodeFeatures; using the first %d in merge order", n->name,
			      NFSTORE_MAX_NFS, NFSTORE_MAX_NFS);
			break;
		}
		size_t j = nv++;

		for (; j > 0 && nf_order(s, v[j - 1], o) > 0; j--)
			v[j] = v[j - 1];
		v[j] = o;
	}
	return nv;
}

/* Node n's objects (selected, in merge order) merged into f, and their
 * labels into labels (NULL: not merged). kept[0..*nv) are the parsed kept
 * parts, which the labels' values borrow: the caller frees them. */
static int merge_node(struct nfstore *s, struct nfstore_node *n, struct features *f, struct lmap *labels,
		      struct json **kept, size_t *nv)
{
	struct nfstore_nf *v[NFSTORE_MAX_NFS];
	struct nfstore_map fidx[3] = { { 0 } };
	size_t k = merge_order(s, n, v);
	int rc = 0;

	*nv = 0;
	for (size_t i = 0; i < k && rc == 0; i++) {
		/* restrictions.denyNodeFeatureLabels: only the worker's object (ours, named after the node) */
		int third_party = strcmp(v[i]->ns, s->c.ns) != 0 || strcmp(v[i]->name, n->name) != 0;

		kept[i] = nfstore_nf_kept(s, v[i]);
		*nv = i + 1;
		if (!kept[i] || merge_one(f, fidx, s->c.deny_nf_labels && third_party ? NULL : labels, kept[i]) < 0)
			rc = -FB_ENOMEM;
	}
	for (int j = 0; j < 3; j++)
		smap_free_(&fidx[j]);
	return rc;
}

int node_features_(struct nfstore *s, struct nfstore_node *n, struct features *f)
{
	struct json *kept[NFSTORE_MAX_NFS] = { NULL };
	size_t nv = 0;
	int rc = merge_node(s, n, f, NULL, kept, &nv);

	for (size_t i = 0; i < nv; i++)
		json_free(kept[i]);
	return rc < 0 ? rc : nv > 0;
}

/* The policy, then restrictions.disable*: after the policy, as upstream
 * (what it rejects is still counted); what NFD wrote before is then removed. */
static int restrict_set(struct nfstore *s, struct nl_set *set, const struct features *f)
{
	struct nl_rejects rej = { 0 };

	if (nl_filter(s->c.pol, set, f, s->c.log, &rej) < 0)
		return -FB_ENOMEM;
	metrics_inc(s->c.mx, s->c.m_rej_labels, (double)rej.labels);
	metrics_inc(s->c.mx, s->c.m_rej_ers, (double)rej.extended_resources);
	metrics_inc(s->c.mx, s->c.m_rej_taints, (double)rej.taints);
	if (s->c.disable_labels) {
		json_free(set->labels);
		if (!(set->labels = json_new_object()))
			return -FB_ENOMEM;
	}
	if (s->c.disable_annotations) {
		json_free(set->annotations);
		set->annotations = NULL;
	}
	if (s->c.disable_ers) {
		json_free(set->extended_resources);
		set->extended_resources = NULL;
	}
	return 0;
}

int nfstore_desired(struct nfstore *s, struct nfstore_node *n, struct nl_set *set)
{
	struct features f;
	struct rules_out out;
	struct json *kept[NFSTORE_MAX_NFS] = { NULL }; /* the labels' values stay theirs until the end */
	struct lmap labels;
	size_t nv = 0;
	int rc = -FB_ENOMEM;

	memset(set, 0, sizeof(*set));
	memset(&out, 0, sizeof(out));
	memset(&labels, 0, sizeof(labels));
	arena_init(&labels.keys_strs);
	labels.keep_unprefixed = s->c.pol && s->c.pol->unprefixed != NL_AUTO_PREFIX;
	if (features_init(&f) < 0 || rules_out_init(&out) < 0)
		goto out;
	if (merge_node(s, n, &f, &labels, kept, &nv) < 0)
		goto out;
	for (size_t i = 0; i < s->n_nfrs; i++) {
		struct rule_err_ctx ec = { s, &s->nfrs[i]->errors_logged, n->name, 1 };
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		if (rules_run(s->nfrs[i]->rules, &f, &out, rule_error_, &ec) < 0)
			goto out;
		clock_gettime(CLOCK_MONOTONIC, &b);
		metrics_observe(s->c.mx, s->c.m_rule_time,
				(double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	}
	for (const struct json *c = json_child(out.labels); c; c = json_next(c))
		if (json_str(c) && lmap_set_prefixed(&labels, json_key(c), json_str(c)) < 0)
			goto out;
	if (!(set->labels = lmap_json(&labels)))
		goto out;
	set->annotations = out.annotations;
	set->extended_resources = out.extended_resources;
	set->taints = out.taints;
	out.annotations = out.extended_resources = out.taints = NULL;
	rc = restrict_set(s, set, &f);
out:
	for (size_t i = 0; i < nv; i++)
		json_free(kept[i]);
	lmap_free(&labels);
	rules_out_free(&out);
	features_free(&f);
	if (rc < 0)
		nl_set_free(set);
	return rc;
}
