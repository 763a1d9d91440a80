/* nfstore: NodeFeature objects. Of each one the store keeps a hash, its
 * spec.labels (the default prefix taken off) and the features the rules and
 * the node's "@" values look at; an object beyond sane bounds is refused
 * whole (NFSTORE_MAX_BYTES, NFSTORE_MAX_LABELS). Keeping, filtering and
 * hashing are linear in the object's size: hash maps, no json_set_take over
 * big objects, nothing printed to be hashed. */
#include "nfstore_int.h"

#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const nfstore_kinds[3] = { "flags", "attributes", "instances" };

/* Copies feature c (a {"elements": ...} set) keeping only the elements,
 * or of instances the attributes, the rules name. Owned, NULL on ENOMEM. */
static struct json *keep_some(const struct nfstore *s, int kind, const char *feature, const struct json *c)
{
	struct json *out = json_new_object(), *el = kind == 2 ? json_new_array() : json_new_object();

	if (!out || !el || json_set_take(out, "elements", el) < 0) {
		json_free(el);
		json_free(out);
		return NULL;
	}
	for (const struct json *e = json_child(json_get(c, "elements")); e; e = json_next(e)) {
		if (kind != 2) {
			if (ref_elem_(s, feature, json_key(e)) && json_set_take(el, json_key(e), json_dup(e)) < 0)
				goto nomem;
			continue;
		}
		/* every instance stays (their number matters), with the named attributes */
		struct json *inst = json_new_object(), *attrs = json_new_object();

		if (!inst || !attrs || json_set_take(inst, "attributes", attrs) < 0 || json_append_take(el, inst) < 0) {
			json_free(attrs);
			json_free(inst);
			goto nomem;
		}
		for (const struct json *a = json_child(json_get(e, "attributes")); a; a = json_next(a))
			if (ref_elem_(s, feature, json_key(a)) && json_set_take(attrs, json_key(a), json_dup(a)) < 0)
				goto nomem;
	}
	return out;
nomem:
	json_free(out);
	return NULL;
}

static void nf_free_dyn(struct nfstore_nf *o)
{
	free(o->dyn); /* the vector and its strings: one allocation */
	o->dyn = NULL;
	o->n_dyn = 0;
}

/* Members of an object by name, the last of a name winning: win maps each
 * name to the member kept (smap_put_), and keeping only those (smap_get_ ==
 * the member), in one more walk, is linear where json_set_take (which looks
 * for the name among every member) is quadratic. */

/* Keeps the part of NodeFeature o's spec the store needs (o->data). 0, or
 * -FB_ENOMEM with none kept. Takes o's "@" lookups to its node first
 * (o->node is set). */
static int nf_keep(struct nfstore *s, struct nfstore_nf *o, const struct json *spec)
{
	struct nfstore_node *nd = o->node;
	struct json *keep = json_new_object(), *feats = json_new_object(), *lab = json_get(spec, "labels");
	const struct json *have = json_get(spec, "features");
	struct arena strs;
	struct refs_acc dyn = { &strs, NULL, 0, 0, 0 };
	struct nfstore_map win = { 0 };
	char **flat;
	int rc = -FB_ENOMEM;
	long grew;

	arena_init(&strs);
	if (!keep || !feats)
		goto out;
	if (json_type(lab) == JSON_OBJECT) {
		struct json *kl = json_new_object();
		size_t pl = strlen(NL_DEFAULT_NS "/");
		/* without the auto prefix "x" and "<default>/x" are two labels */
		int strip = !s->c.pol || s->c.pol->unprefixed == NL_AUTO_PREFIX;

		if (!kl || json_set_take(keep, "labels", kl) < 0)
			goto out;
		/* kept with the default prefix taken off (merging puts it back):
		 * half the bytes; a prefixed key wins over the same key unprefixed.
		 * Not off "<default>/a/b": merging would read "a/b" as a label of
		 * namespace a (tests/fuzz/corpus/nodefeature/edge0) */
		for (int emit = 0; emit < 2; emit++)
			for (int pass = 0; pass < 2; pass++)
				for (const struct json *c = json_child(lab); c; c = json_next(c)) {
					const char *k = json_key(c);
					int prefixed = strip && strncmp(k, NL_DEFAULT_NS "/", pl) == 0 &&
						       !strchr(k + pl, '/');

					if (!json_str(c) || prefixed != pass)
						continue;
					k = prefixed ? k + pl : k;
					if (!emit) {
						if (smap_put_(&win, k, (void *)c) < 0)
							goto out;
						continue;
					}
					if (smap_get_(&win, k) != c)
						continue;
					if (json_add_take(kl, k, json_new_string(json_str(c))) < 0)
						goto out;
					refs_add_dynamic_(&dyn, json_str(c), 1);
				}
	}
	/* the node's lookups: this object's names in, its old ones out */
	if (dyn.nomem || (flat = strv_flat_(dyn.v, dyn.n, &dyn.nomem), dyn.nomem))
		goto out;
	if ((grew = dyn_add_(nd, flat, dyn.n)) < 0) {
		free(flat);
		goto out;
	}
	dyn_del_(nd, o->dyn, o->n_dyn);
	nf_free_dyn(o);
	o->dyn = flat;
	o->n_dyn = dyn.n;
	if (grew) {
		/* the node's other objects were kept without these: read again
		 * before the node is next updated (the applet's nf_refetch) */
		nd->dyn_gen++;
		LOG_V(s->c.log, 1, "NodeFeature %s: its labels look up %ld more features of node %s", o->key, grew,
		      nd->name);
	}
	o->dyn_gen = nd->dyn_gen;
	for (int k = 0; k < 3; k++) {
		const struct json *src = json_get(have, nfstore_kinds[k]);
		struct json *dst = json_new_object();

		if (!dst || json_set_take(feats, nfstore_kinds[k], dst) < 0)
			goto out;
		if (json_type(src) != JSON_OBJECT)
			continue; /* not a map of features: nothing to keep */
		smap_free_(&win);
		for (const struct json *c = json_child(src); c; c = json_next(c))
			if (smap_put_(&win, json_key(c), (void *)c) < 0)
				goto out;
		for (const struct json *c = json_child(src); c; c = json_next(c)) {
			int mode = ref_mode_(s, nd, json_key(c));

			if (mode == 0 || smap_get_(&win, json_key(c)) != c)
				continue;
			if (json_add_take(dst, json_key(c), mode == 1 ? json_dup(c) : keep_some(s, k, json_key(c), c)) < 0)
				goto out;
		}
	}
	if (json_set_take(keep, "features", feats) < 0) {
		feats = NULL;
		goto out;
	}
	feats = NULL;
	rc = kept_set_(s, o, keep);
out:
	free(dyn.v);
	arena_free(&strs);
	smap_free_(&win);
	json_free(feats);
	json_free(keep);
	if (rc < 0)
		kept_drop_(s, o);
	return rc;
}

static void nf_unlink(struct nfstore_nf *o)
{
	struct nfstore_nf **pp;

	if (!o->node)
		return;
	dyn_del_(o->node, o->dyn, o->n_dyn);
	nf_free_dyn(o);
	for (pp = &o->node->nfs; *pp && *pp != o; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = o->next;
	o->next = NULL;
	o->node = NULL;
}

void nf_free_(struct nfstore *s, struct nfstore_nf *o)
{
	nf_free_dyn(o);
	kept_drop_(s, o);
	free(o->key);
	free(o);
}

void nfstore_nf_forget(struct nfstore *s, struct nfstore_nf *o)
{
	nf_unlink(o);
	smap_del_(&s->nfs, o->key);
	nf_free_(s, o);
}

/* Node n lost an object: its update removes what the object said. */
static void node_lost(struct nfstore *s, struct nfstore_node *n)
{
	n->pending_delete = 1;
	if (n->exists)
		nfstore_mark(s, n, 0);
	else
		nfstore_node_drop(s, n);
}

static void nf_delete(struct nfstore *s, struct nfstore_nf *o)
{
	struct nfstore_node *n = o->node;

	nfstore_nf_forget(s, o);
	if (n)
		node_lost(s, n);
}

/* Beyond sane bounds: refused whole before anything else is done with it,
 * and what it said before no longer counts. 1 when refused. */
static int nf_refused(struct nfstore *s, const struct json *obj, const char *key, const char *node)
{
	size_t size = 0, nl = json_count(json_get(json_get(obj, "spec"), "labels"));
	char why[200] = "", path[128];

	if (nl > NFSTORE_MAX_LABELS)
		snprintf(why, sizeof(why), "%zu labels, more than %d", nl, NFSTORE_MAX_LABELS);
	else if (nfstore_hash_walk(obj, 0, &size), size > NFSTORE_MAX_BYTES)
		snprintf(why, sizeof(why), "%zu bytes of JSON, more than %d", size, NFSTORE_MAX_BYTES);
	else if (json_nul_path(json_get(obj, "spec"), path, sizeof(path)))
		/* never a silently shortened label or feature value (json.h) */
		snprintf(why, sizeof(why), "spec.%s holds a \\u0000 (NUL character), which featurebox does not keep",
			 path);
	if (!why[0])
		return 0;
	LOG_W(s->c.log, "NodeFeature %s (node %s): %s; refused, not processed", key, node && *node ? node : "?",
	      why);
	metrics_inc(s->c.mx, s->c.m_rej_nfs, 1);
	return 1;
}

/* A new entry for "ns/name" key: "ns/name\0ns\0name\0", the map's key, then
 * the two parts. NULL on ENOMEM. */
static struct nfstore_nf *nf_new(struct nfstore *s, const char *key, size_t nsl)
{
	size_t kl = strlen(key) + 1;
	struct nfstore_nf *o = calloc(1, sizeof(*o));

	if (!o || !(o->key = malloc(2 * kl))) {
		free(o);
		return NULL;
	}
	memcpy(o->key, key, kl);
	memcpy(o->key + kl, key, kl);
	o->key[kl + nsl] = '\0';
	o->ns = o->key + kl;
	o->name = o->key + kl + nsl + 1;
	if (smap_put_(&s->nfs, o->key, o) < 0) {
		free(o->key);
		free(o);
		return NULL;
	}
	return o;
}

int nfstore_nf_apply(struct nfstore *s, const struct json *obj, int deleted)
{
	const struct json *md = json_get(obj, "metadata");
	const char *ns = json_get_str(md, "namespace", ""), *name = json_get_str(md, "name", "");
	const char *node = json_get_str(json_get(md, "labels"), NFSTORE_NODE_NAME_LABEL, NULL);
	const char *uid = json_get_str(json_get(md, "annotations"), "nfd.node.kubernetes.io/worker.pod.uid", "");
	char key[600];
	struct nfstore_nf *o;
	struct nfstore_node *n;
	uint64_t h;

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	o = smap_get_(&s->nfs, key);
	if (deleted || nf_refused(s, obj, key, node)) {
		if (o)
			nf_delete(s, o);
		return 0;
	}
	if (!node || !*node) {
		LOG_E(s->c.log, "NodeFeature %s has no %s label; ignoring it", key, NFSTORE_NODE_NAME_LABEL);
		if (o)
			nf_delete(s, o);
		return 0;
	}
	h = hash_json_(json_get(obj, "spec"), FNV0);
	h = hash_json_(json_get(md, "ownerReferences"), h);
	h = fnv_(uid, strlen(uid) + 1, h);
	h = fnv_(node, strlen(node) + 1, h);
	if (o) {
		o->seen = 1;
		if (o->hash == h && !s->refresh_all)
			return 0;
	} else {
		if (!(o = nf_new(s, key, strlen(ns))))
			return -FB_ENOMEM;
		o->seen = 1;
	}
	if (!o->node || strcmp(o->node->name, node) != 0) {
		struct nfstore_node *old = o->node;

		nf_unlink(o);
		if (old)
			node_lost(s, old);
		if (!(n = node_get_(s, node)))
			return -FB_ENOMEM; /* the hash is not updated: the next event tries again */
		o->node = n;
		o->next = n->nfs;
		n->nfs = o;
	}
	if (nf_keep(s, o, json_get(obj, "spec")) < 0) {
		o->hash = 0;
		return -FB_ENOMEM;
	}
	o->hash = h;
	if (o->node->exists)
		nfstore_mark(s, o->node, 0);
	return 0;
}

void nfstore_nf_begin(struct nfstore *s)
{
	for (size_t i = 0; i < s->nfs.cap; i++)
		if (s->nfs.s[i].key)
			((struct nfstore_nf *)s->nfs.s[i].val)->seen = 0;
}

void nfstore_nf_end(struct nfstore *s)
{
	/* gone while we were not watching */
	for (size_t i = 0; i < s->nfs.cap;) {
		struct nfstore_nf *o = s->nfs.s[i].val;

		if (s->nfs.s[i].key && !o->seen)
			nf_delete(s, o); /* may shift a later entry into slot i: look again */
		else
			i++;
	}
	s->refresh_all = 0;
}

size_t nfstore_kept_bytes(const struct nfstore *s)
{
	size_t kept = s->strs.bytes;

	for (size_t i = 0; i < s->nfs.cap; i++)
		if (s->nfs.s[i].key)
			kept += ((struct nfstore_nf *)s->nfs.s[i].val)->data_len;
	return kept;
}
