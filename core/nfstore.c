/* nfstore: setup and teardown, Nodes, NodeFeatureRules and the namespaces
 * restrictions.nodeFeatureNamespaceSelector selects. */
#include "nfstore_int.h"

#include "buf.h"
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nfstore_init(struct nfstore *s, const struct nfstore_conf *conf)
{
	memset(s, 0, sizeof(*s));
	arena_init(&s->refs_strs);
	intern_init(&s->strs);
	if (conf)
		s->c = *conf;
}

void nfstore_setup(struct nfstore *s, const struct nfstore_conf *conf)
{
	s->c = *conf;
}

static void nfr_free(struct nfstore_nfr *r)
{
	if (!r)
		return;
	free(r->dyn);
	rules_free(r->rules);
	arena_free(&r->strs);
	free(r);
}

void nfstore_free(struct nfstore *s)
{
	for (size_t i = 0; i < s->nfs.cap; i++)
		if (s->nfs.s[i].key)
			nf_free_(s, s->nfs.s[i].val);
	smap_free_(&s->nfs);
	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.s[i].key) {
			struct nfstore_node *n = s->nodes.s[i].val;

			for (size_t j = 0; j < n->dyn.cap; j++)
				free(n->dyn.s[j].val);
			smap_free_(&n->dyn);
			free(n);
		}
	smap_free_(&s->nodes);
	for (size_t i = 0; i < s->nss.cap; i++)
		free(s->nss.s[i].val);
	smap_free_(&s->nss);
	for (size_t i = 0; i < s->n_nfrs; i++)
		nfr_free(s->nfrs[i]);
	free(s->nfrs);
	groups_free_(s);
	free(s->refs);
	arena_free(&s->refs_strs);
	intern_free(&s->strs);
	nfstore_init(s, &s->c);
}

int listed_(const struct nfstore *s, int what)
{
	return s->c.listed && s->c.listed(s->c.ctx, what);
}

void nfstore_mark(struct nfstore *s, struct nfstore_node *n, int force)
{
	n->dirty = 1;
	n->gdirty = 1;
	n->force |= force;
	if (s->c.dirty)
		s->c.dirty(s->c.ctx);
}

void nfstore_mark_all(struct nfstore *s, int force)
{
	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.s[i].key)
			nfstore_mark(s, s->nodes.s[i].val, force);
}

/* ---- Nodes -------------------------------------------------------------- */

struct nfstore_node *nfstore_node_find(const struct nfstore *s, const char *name)
{
	return smap_get_(&s->nodes, name);
}

struct nfstore_node *node_get_(struct nfstore *s, const char *name)
{
	struct nfstore_node *n = smap_get_(&s->nodes, name);
	size_t len = strlen(name);

	if (n)
		return n;
	if (!(n = calloc(1, sizeof(*n) + len + 1)))
		return NULL;
	memcpy(n->name, name, len + 1);
	if (smap_put_(&s->nodes, n->name, n) < 0) {
		free(n);
		return NULL;
	}
	return n;
}

int nfstore_node_drop(struct nfstore *s, struct nfstore_node *n)
{
	if (n->exists || n->nfs)
		return 0;
	smap_del_(&s->nodes, n->name);
	smap_free_(&n->dyn); /* empty: every object took its names back */
	free(n);
	return 1;
}

int nfstore_node_apply(struct nfstore *s, const struct json *obj, int deleted)
{
	const char *name = json_get_str(json_get(obj, "metadata"), "name", "");
	struct nfstore_node *n = smap_get_(&s->nodes, name);

	if (deleted) {
		if (n && n->exists) {
			n->exists = 0;
			n->processed = 0;
			n->dirty = 0;
			LOG_I(s->c.log, "node %s deleted", name);
			groups_forget_(s, name);
			if (n->nfs && s->c.node_deleted)
				s->c.node_deleted(s->c.ctx, n);
			nfstore_node_drop(s, n);
		}
		return 0;
	}
	if (!n && !(n = node_get_(s, name)))
		return -FB_ENOMEM;
	n->seen = 1;
	if (!n->exists) {
		n->exists = 1;
		nfstore_mark(s, n, 1);
	}
	return 0;
}

void nfstore_node_begin(struct nfstore *s)
{
	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.s[i].key)
			((struct nfstore_node *)s->nodes.s[i].val)->seen = 0;
}

void nfstore_node_end(struct nfstore *s)
{
	for (size_t i = 0; i < s->nodes.cap;) {
		struct nfstore_node *n = s->nodes.s[i].val;

		if (s->nodes.s[i].key && n->exists && !n->seen) {
			n->exists = 0;
			n->dirty = 0;
			n->processed = 0;
			groups_forget_(s, n->name);
			if (nfstore_node_drop(s, n))
				continue; /* slot i may hold a shifted entry now */
		}
		i++;
	}
}

/* ---- NodeFeatureRules --------------------------------------------------- */

static void nfr_changed(struct nfstore *s)
{
	if (refs_update_(s) && listed_(s, NFSTORE_NF)) {
		LOG_I(s->c.log, "the rules match on features not kept so far: listing NodeFeatures again");
		s->relist_nf = 1;
	}
	nfstore_mark_all(s, 0);
}

/* Rule r's name and "@" values anew, in a fresh arena (the old one goes):
 * 0 or -FB_ENOMEM (r unchanged). */
static int nfr_strings(struct nfstore_nfr *r, const char *name, const struct json *spec, int *nomem_dyn)
{
	struct arena strs;
	struct refs_acc a = { &strs, NULL, 0, 0, 0 };
	const char *nm;

	arena_init(&strs);
	if (!(nm = arena_strdup(&strs, name))) {
		arena_free(&strs);
		return -FB_ENOMEM;
	}
	refs_rule_values_(&a, spec);
	free(r->dyn);
	arena_free(&r->strs);
	r->strs = strs;
	r->name = nm;
	if (a.nomem) {
		free(a.v);
		a.v = NULL;
		a.n = 0;
	}
	r->dyn = a.v;
	r->n_dyn = a.n;
	*nomem_dyn = a.nomem;
	return 0;
}

int nfstore_nfr_apply(struct nfstore *s, const struct json *obj, int deleted)
{
	const char *name = json_get_str(json_get(obj, "metadata"), "name", "");
	const struct json *spec = json_get(obj, "spec");
	struct nfstore_nfr *r = NULL;
	struct rules *rs;
	size_t i;
	uint64_t h;
	int nomem_dyn;
	char what[300];

	for (i = 0; i < s->n_nfrs && strcmp(s->nfrs[i]->name, name) < 0; i++)
		;
	if (i < s->n_nfrs && strcmp(s->nfrs[i]->name, name) == 0)
		r = s->nfrs[i];
	if (deleted) {
		if (r) {
			nfr_free(r);
			memmove(s->nfrs + i, s->nfrs + i + 1, (s->n_nfrs - i - 1) * sizeof(*s->nfrs));
			s->n_nfrs--;
			LOG_I(s->c.log, "NodeFeatureRule %s deleted", name);
			nfr_changed(s);
		}
		return 0;
	}
	h = hash_json_(spec, FNV0);
	if (r) {
		r->seen = 1;
		if (r->hash == h)
			return 0;
	} else {
		if (ARRAY_GROW(s->nfrs, s->nfrs_size, s->n_nfrs + 1) < 0)
			return -FB_ENOMEM;
		if (!(r = calloc(1, sizeof(*r))))
			return -FB_ENOMEM;
		arena_init(&r->strs);
		if (!(r->name = arena_strdup(&r->strs, name))) {
			free(r);
			return -FB_ENOMEM;
		}
		memmove(s->nfrs + i + 1, s->nfrs + i, (s->n_nfrs - i) * sizeof(*s->nfrs));
		s->nfrs[i] = r;
		s->n_nfrs++;
		r->seen = 1;
	}
	snprintf(what, sizeof(what), "NodeFeatureRule %s", name);
	if (rules_compile(&rs, json_get(spec, "rules"), RULES_NFR, what) < 0)
		return -FB_ENOMEM;
	if (nfr_strings(r, name, spec, &nomem_dyn) < 0) {
		rules_free(rs);
		return -FB_ENOMEM;
	}
	rules_free(r->rules);
	r->rules = rs;
	r->hash = h;
	if (nomem_dyn)
		LOG_E(s->c.log, "%s: out of memory noting its \"@\" values", what);
	r->errors_logged = 0;
	for (size_t j = 0; j < rules_count(rs); j++)
		if (rules_error(rs, j)) {
			LOG_E(s->c.log, "%s: rule \"%s\": %s (the rule is skipped)", what, rules_name(rs, j),
			      rules_error(rs, j));
			metrics_inc(s->c.mx, s->c.m_rule_errors, 1);
		}
	LOG_I(s->c.log, "%s: %zu rules", what, rules_count(rs));
	nfr_changed(s);
	return 0;
}

void nfstore_nfr_begin(struct nfstore *s)
{
	for (size_t i = 0; i < s->n_nfrs; i++)
		s->nfrs[i]->seen = 0;
}

void nfstore_nfr_end(struct nfstore *s)
{
	size_t u = 0;
	int gone = 0;

	for (size_t i = 0; i < s->n_nfrs; i++) {
		if (s->nfrs[i]->seen) {
			s->nfrs[u++] = s->nfrs[i];
		} else {
			nfr_free(s->nfrs[i]);
			gone = 1;
		}
	}
	s->n_nfrs = u;
	if (gone)
		nfr_changed(s);
	else if (!listed_(s, NFSTORE_NF))
		refs_update_(s); /* the first list: the NodeFeatures come next */
}

/* ---- Namespaces: restrictions.nodeFeatureNamespaceSelector -------------- */

/* The API server lists and watches only the namespaces the selector
 * matches (a namespace whose labels stop matching arrives as DELETED, one
 * that starts as ADDED), so the set is the selection as it is now. */
struct nsel {
	int seen;
	char name[];
};

int ns_selected_(const struct nfstore *s, const char *ns)
{
	return !s->c.ns_filter || smap_get_(&s->nss, ns) != NULL;
}

/* Namespace ns came into or went out of the selection: the nodes with
 * NodeFeatures in it are brought up to date (the first list needs nothing:
 * every node is updated once everything is listed). */
static void ns_changed(struct nfstore *s, const char *ns, int selected)
{
	if (!listed_(s, NFSTORE_NS)) {
		LOG_V(s->c.log, 1, "namespace %s selected", ns);
		return;
	}
	LOG_I(s->c.log, "namespace %s %s by restrictions.nodeFeatureNamespaceSelector: its NodeFeatures %s", ns,
	      selected ? "selected" : "no longer selected", selected ? "count" : "are ignored");
	for (size_t i = 0; i < s->nfs.cap; i++) {
		struct nfstore_nf *o = s->nfs.s[i].val;

		if (s->nfs.s[i].key && o->node && o->node->exists && strcmp(o->ns, ns) == 0)
			nfstore_mark(s, o->node, 0);
	}
}

static void ns_drop(struct nfstore *s, struct nsel *e)
{
	smap_del_(&s->nss, e->name);
	ns_changed(s, e->name, 0);
	free(e);
}

int nfstore_ns_apply(struct nfstore *s, const struct json *obj, int deleted)
{
	const char *name = json_get_str(json_get(obj, "metadata"), "name", "");
	struct nsel *e = smap_get_(&s->nss, name);
	size_t len = strlen(name);

	if (deleted) {
		if (e)
			ns_drop(s, e);
		return 0;
	}
	if (e || !*name) {
		if (e)
			e->seen = 1;
		return 0;
	}
	if (!(e = calloc(1, sizeof(*e) + len + 1)))
		return -FB_ENOMEM;
	memcpy(e->name, name, len + 1);
	if (smap_put_(&s->nss, e->name, e) < 0) {
		free(e);
		return -FB_ENOMEM;
	}
	e->seen = 1;
	ns_changed(s, name, 1);
	return 0;
}

void nfstore_ns_begin(struct nfstore *s)
{
	for (size_t i = 0; i < s->nss.cap; i++)
		if (s->nss.s[i].key)
			((struct nsel *)s->nss.s[i].val)->seen = 0;
}

void nfstore_ns_end(struct nfstore *s)
{
	for (size_t i = 0; i < s->nss.cap;) {
		struct nsel *e = s->nss.s[i].val;

		if (s->nss.s[i].key && !e->seen)
			ns_drop(s, e); /* may shift a later entry into slot i: look again */
		else
			i++;
	}
}
