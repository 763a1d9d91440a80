/* nfstore: NodeFeatureGroups (upstream's NodeFeatureGroupAPI gate). Each
 * group of our namespace keeps its compiled featureGroupRules and its
 * members; a node flagged by nfstore_mark (gdirty) is evaluated against
 * every group, and a group whose spec changed flags every node. What the
 * object's status.nodes shows is kept as a hash (have), so the applet
 * writes only when the members differ from it.
 *
 * As upstream (nfdAPIUpdateNodeFeatureGroup): only Nodes that exist and
 * have NodeFeatures are candidates; every group starts from the node's
 * merged features, and the vars of its matched rules feed "rule.matched"
 * for its later rules. A node is listed by its Node's name; upstream takes
 * the name from the features' system.name/nodename, which its worker sets
 * to the same (a naming difference only: any worker may write a NodeFeature
 * for any node, here as upstream). */
#include "nfstore_int.h"

#include "buf.h"
#include "err.h"
#include "strset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void nfg_free(struct nfstore_nfg *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->members.cap; i++)
		free(g->members.s[i].val);
	smap_free_(&g->members);
	rules_free(g->rules);
	free(g->name);
	free(g);
}

void groups_free_(struct nfstore *s)
{
	for (size_t i = 0; i < s->n_nfgs; i++)
		nfg_free(s->nfgs[i]);
	free(s->nfgs);
	s->nfgs = NULL;
	s->n_nfgs = s->nfgs_size = 0;
}

/* A list of node names hashed in order: feed each, then end with the count. */
static uint64_t name_add(uint64_t h, const char *name)
{
	return fnv_(name, strlen(name) + 1, h);
}

static uint64_t names_end(uint64_t h, size_t n)
{
	return fnv_(&n, sizeof(n), h);
}

/* status.nodes of an object as the hash of its names (absent, null and
 * [] alike: upstream's DeepEqual takes nil and empty as equal). */
static uint64_t status_hash(const struct json *obj)
{
	uint64_t h = FNV0;
	size_t n = 0;

	for (const struct json *e = json_child(json_getv(obj, "status", "nodes", NULL)); e; e = json_next(e), n++)
		h = name_add(h, json_get_str(e, "name", "\x01")); /* not a name: never what we want */
	return names_end(h, n);
}

static const char **sorted_members(const struct nfstore_nfg *g, size_t *n)
{
	const char **v = malloc((g->members.n ? g->members.n : 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < g->members.cap; i++)
		if (g->members.s[i].key)
			v[(*n)++] = g->members.s[i].key;
	if (*n > 1)
		qsort(v, *n, sizeof(*v), strset_cmp);
	return v;
}

uint64_t nfstore_group_want(const struct nfstore_nfg *g)
{
	size_t n = 0;
	const char **v = sorted_members(g, &n);
	uint64_t h = FNV0;

	if (!v)
		return ~g->have; /* out of memory: "different", so a write is tried */
	for (size_t i = 0; i < n; i++)
		h = name_add(h, v[i]);
	free(v);
	return names_end(h, n);
}

struct json *nfstore_group_nodes(const struct nfstore_nfg *g)
{
	size_t n = 0;
	const char **v = sorted_members(g, &n);
	struct json *a = v ? json_new_array() : NULL;

	for (size_t i = 0; a && i < n; i++) {
		struct json *o = json_new_object();

		if (!o || json_set_str(o, "name", v[i]) < 0) {
			json_free(o);
			json_free(a);
			a = NULL;
		} else if (json_append_take(a, o) < 0) { /* o freed */
			json_free(a);
			a = NULL;
		}
	}
	free(v);
	return a;
}

/* Sets whether node is a member of g. */
static int member_set(struct nfstore_nfg *g, const char *node, int in)
{
	char *have = smap_get_(&g->members, node), *c;

	if (!in && have) {
		smap_del_(&g->members, node);
		free(have);
		g->check = 1;
	} else if (in && !have) {
		g->check = 1;
		if (!(c = strdup(node)))
			return -FB_ENOMEM;
		if (smap_put_(&g->members, c, c) < 0) {
			free(c);
			return -FB_ENOMEM;
		}
	}
	return 0;
}

void groups_forget_(struct nfstore *s, const char *node)
{
	int changed = 0;

	for (size_t i = 0; i < s->n_nfgs; i++) {
		changed |= smap_get_(&s->nfgs[i]->members, node) != NULL;
		member_set(s->nfgs[i], node, 0); /* removing never allocates */
	}
	if (changed && s->c.dirty) /* the statuses to write */
		s->c.dirty(s->c.ctx);
}

static void flag_all(struct nfstore *s)
{
	for (size_t i = 0; i < s->nodes.cap; i++)
		if (s->nodes.s[i].key)
			((struct nfstore_node *)s->nodes.s[i].val)->gdirty = 1;
	if (s->c.dirty)
		s->c.dirty(s->c.ctx);
}

/* Node n against every group. */
static int eval_node(struct nfstore *s, struct nfstore_node *n)
{
	struct features base, f;
	int has = 0, rc = 0;

	memset(&base, 0, sizeof(base));
	if (n->exists && n->nfs) {
		if (features_init(&base) < 0 || (has = node_features_(s, n, &base)) < 0) {
			features_free(&base);
			return -FB_ENOMEM;
		}
	}
	for (size_t i = 0; i < s->n_nfgs && rc == 0; i++) {
		struct nfstore_nfg *g = s->nfgs[i];
		/* logged only: upstream counts no metric for groups */
		struct rule_err_ctx ec = { s, &g->errors_logged, n->name, 0 };
		struct rules_out out;
		int in = 0;

		if (!g->rules)
			continue; /* its first compile ran out of memory: the next event tries again */
		if (has) {
			memset(&out, 0, sizeof(out));
			if (!(f.root = json_dup(base.root)) || rules_out_init(&out) < 0) {
				rc = -FB_ENOMEM;
			} else {
				/* a member when any rule matched (a failing one is logged
				 * and skipped, as upstream) */
				rc = rules_run(g->rules, &f, &out, rule_error_, &ec);
				in = out.matched > 0;
			}
			rules_out_free(&out);
			features_free(&f);
			if (rc < 0)
				break;
			rc = 0;
		}
		rc = member_set(g, n->name, in);
	}
	features_free(&base);
	return rc;
}

int nfstore_groups_update(struct nfstore *s, int (*more)(void *ctx), void *ctx, size_t *failed)
{
	size_t nf = 0;

	for (size_t i = 0; i < s->nodes.cap; i++) {
		struct nfstore_node *n = s->nodes.s[i].val;

		if (!s->nodes.s[i].key || !n->gdirty)
			continue;
		if (more && !more(ctx)) {
			if (failed)
				*failed = nf;
			return 1;
		}
		if (eval_node(s, n) < 0)
			nf++; /* flagged still: the next update tries again */
		else
			n->gdirty = 0;
	}
	if (failed)
		*failed = nf;
	return 0;
}

int nfstore_nfg_apply(struct nfstore *s, const struct json *obj, int deleted)
{
	const struct json *md = json_get(obj, "metadata"), *spec = json_get(obj, "spec");
	const char *name = json_get_str(md, "name", ""), *ns = json_get_str(md, "namespace", "");
	struct nfstore_nfg *g = NULL;
	struct rules *rs;
	size_t i;
	uint64_t h;
	char what[400];

	if (strcmp(ns, s->c.ns) != 0)
		return 0; /* upstream writes the status of its own namespace's groups only */
	for (i = 0; i < s->n_nfgs && strcmp(s->nfgs[i]->name, name) < 0; i++)
		;
	if (i < s->n_nfgs && strcmp(s->nfgs[i]->name, name) == 0)
		g = s->nfgs[i];
	if (deleted) {
		if (g) {
			nfg_free(g);
			memmove(s->nfgs + i, s->nfgs + i + 1, (s->n_nfgs - i - 1) * sizeof(*s->nfgs));
			s->n_nfgs--;
			LOG_I(s->c.log, "NodeFeatureGroup %s deleted", name);
			refs_update_(s);
		}
		return 0;
	}
	h = hash_json_(spec, FNV0);
	if (g) {
		g->seen = 1;
		g->have = status_hash(obj);
		g->check = 1;
		if (g->hash == h) {
			if (s->c.dirty) /* its status may need writing again */
				s->c.dirty(s->c.ctx);
			return 0;
		}
	} else {
		if (ARRAY_GROW(s->nfgs, s->nfgs_size, s->n_nfgs + 1) < 0 || !(g = calloc(1, sizeof(*g))))
			return -FB_ENOMEM;
		if (!(g->name = strdup(name))) {
			free(g);
			return -FB_ENOMEM;
		}
		memmove(s->nfgs + i + 1, s->nfgs + i, (s->n_nfgs - i) * sizeof(*s->nfgs));
		s->nfgs[i] = g;
		s->n_nfgs++;
		g->seen = 1;
		g->have = status_hash(obj);
		g->check = 1;
	}
	snprintf(what, sizeof(what), "NodeFeatureGroup %s", name);
	if (rules_compile(&rs, json_get(spec, "featureGroupRules"), RULES_NFG, what) < 0)
		return -FB_ENOMEM;
	rules_free(g->rules);
	g->rules = rs;
	g->hash = h;
	g->errors_logged = 0;
	for (size_t j = 0; j < rules_count(rs); j++)
		if (rules_error(rs, j))
			LOG_E(s->c.log, "%s: rule \"%s\": %s (the rule is skipped)", what, rules_name(rs, j),
			      rules_error(rs, j));
	LOG_I(s->c.log, "%s: %zu rules", what, rules_count(rs));
	if (refs_update_(s) && listed_(s, NFSTORE_NF)) {
		LOG_I(s->c.log, "the groups match on features not kept so far: listing NodeFeatures again");
		s->relist_nf = 1;
	}
	flag_all(s);
	return 0;
}

void nfstore_nfg_begin(struct nfstore *s)
{
	for (size_t i = 0; i < s->n_nfgs; i++)
		s->nfgs[i]->seen = 0;
}

void nfstore_nfg_end(struct nfstore *s)
{
	size_t u = 0;
	int gone = 0;

	for (size_t i = 0; i < s->n_nfgs; i++) {
		if (s->nfgs[i]->seen) {
			s->nfgs[u++] = s->nfgs[i];
		} else {
			nfg_free(s->nfgs[i]);
			gone = 1;
		}
	}
	s->n_nfgs = u;
	if (gone)
		refs_update_(s);
}
