/* nfstore: what is kept of a NodeFeature. The rules' features (the refs: a
 * sorted set of "feature", every element, or "feature\nelement", that
 * element; of instances, that attribute), and the features a node's "@"
 * label values look up. */
#include "nfstore_int.h"

#include "buf.h"
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ref_has(const struct nfstore *s, const char *ref)
{
	return s->n_refs && bsearch(&ref, s->refs, s->n_refs, sizeof(char *), str_cmp) != NULL;
}

int ref_elem_(const struct nfstore *s, const char *feature, const char *element)
{
	char buf[512];

	return snprintf(buf, sizeof(buf), "%s\n%s", feature, element) < (int)sizeof(buf) && ref_has(s, buf);
}

int ref_mode_(const struct nfstore *s, const struct nfstore_node *nd, const char *feature)
{
	char buf[512];
	size_t lo = 0, hi = s->n_refs, n;

	if (ref_has(s, feature) || smap_get_(&nd->dyn, feature))
		return 1;
	n = (size_t)snprintf(buf, sizeof(buf), "%s\n", feature);
	if (n >= sizeof(buf))
		return 1;
	while (lo < hi) { /* the first entry >= "feature\n" */
		size_t mid = (lo + hi) / 2;

		if (strcmp(s->refs[mid], buf) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n_refs && strncmp(s->refs[lo], buf, n) == 0 ? 2 : 0;
}

void refs_add_(void *ctx, const char *feature, const char *element)
{
	struct refs_acc *a = ctx;
	size_t fl = strlen(feature), el = element ? strlen(element) : 0;
	char *p;

	if (a->nomem)
		return;
	if (ARRAY_GROW(a->v, a->size, a->n + 1) < 0 || !(p = arena_alloc(a->a, fl + el + 2))) {
		a->nomem = 1;
		return;
	}
	memcpy(p, feature, fl + 1);
	if (element) {
		p[fl] = '\n';
		memcpy(p + fl + 1, element, el + 1);
	}
	a->v[a->n++] = p;
}

void refs_add_dynamic_(struct refs_acc *a, const char *value, int whole)
{
	char buf[256];
	char *dot;

	if (!value || value[0] != '@' || snprintf(buf, sizeof(buf), "%s", value + 1) >= (int)sizeof(buf))
		return;
	if ((dot = strchr(buf, '.')) && (dot = strchr(dot + 1, '.'))) {
		*dot = '\0';
		refs_add_(a, buf, whole ? NULL : dot + 1);
	}
}

void refs_rule_values_(struct refs_acc *a, const struct json *spec)
{
	/* rule outputs may be "@..." lookups too */
	for (const struct json *r = json_child(json_get(spec, "rules")); r; r = json_next(r)) {
		for (const struct json *c = json_child(json_get(r, "labels")); c; c = json_next(c))
			refs_add_dynamic_(a, json_str(c), 0);
		for (const struct json *c = json_child(json_get(r, "extendedResources")); c; c = json_next(c))
			refs_add_dynamic_(a, json_str(c), 0);
	}
}

/* The kept NodeFeature data is incomplete when this returns 1. */
int refs_update_(struct nfstore *s)
{
	struct arena strs;
	struct refs_acc a = { &strs, NULL, 0, 0, 0 };
	int grew = 0;

	arena_init(&strs);
	for (size_t i = 0; i < s->n_nfrs; i++) {
		rules_refs(s->nfrs[i]->rules, refs_add_, &a);
		for (size_t j = 0; j < s->nfrs[i]->n_dyn; j++)
			refs_add_(&a, s->nfrs[i]->dyn[j], NULL);
	}
	for (size_t i = 0; i < s->n_nfgs; i++)
		rules_refs(s->nfgs[i]->rules, refs_add_, &a);
	if (a.nomem) {
		free(a.v);
		arena_free(&strs);
		LOG_E(s->c.log, "out of memory collecting rule features; keeping the old set");
		return 0;
	}
	if (a.n)
		qsort(a.v, a.n, sizeof(char *), str_cmp);
	size_t u = 0;

	for (size_t i = 0; i < a.n; i++)
		if (!u || strcmp(a.v[u - 1], a.v[i]) != 0)
			a.v[u++] = a.v[i]; /* a repeat stays in the arena until the next update */
	for (size_t i = 0; i < u && !grew; i++) {
		char *nl = strchr(a.v[i], '\n');

		if (strncmp(a.v[i], "rule.matched", 12) == 0 && (!a.v[i][12] || a.v[i][12] == '\n'))
			continue;
		if (nl) {
			*nl = '\0';
			grew = !ref_has(s, a.v[i]);
			*nl = '\n';
		} else {
			grew = 1;
		}
		grew = grew && !ref_has(s, a.v[i]);
	}
	free(s->refs);
	arena_free(&s->refs_strs);
	s->refs_strs = strs;
	s->refs = a.v;
	s->n_refs = u;
	return grew;
}

char **strv_flat_(char *const *v, size_t n, int *nomem)
{
	size_t total = n * sizeof(char *);
	char **out, *p;

	if (!n)
		return NULL;
	for (size_t i = 0; i < n; i++)
		total += strlen(v[i]) + 1;
	if (!(out = malloc(total))) {
		*nomem = 1;
		return NULL;
	}
	p = (char *)(out + n);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]) + 1;

		out[i] = memcpy(p, v[i], l);
		p += l;
	}
	return out;
}

/* An "@" label value is looked up in the features merged from all of the
 * node's objects, so each of them keeps every feature any of them names. The
 * node counts the names its objects' labels use (each object adds its own
 * list and takes it back when it changes or goes): linear in an object's
 * labels, and a name no object uses any more is gone. */
struct dref {
	size_t refs;           /* how many such values, over the node's objects */
	char name[];
};

void dyn_del_(struct nfstore_node *n, char *const *v, size_t k)
{
	for (size_t i = 0; i < k; i++) {
		struct dref *d = smap_get_(&n->dyn, v[i]);

		if (d && !--d->refs) {
			smap_del_(&n->dyn, d->name);
			free(d);
		}
	}
}

long dyn_add_(struct nfstore_node *n, char *const *v, size_t k)
{
	long added = 0;

	for (size_t i = 0; i < k; i++) {
		struct dref *d = smap_get_(&n->dyn, v[i]);
		size_t len = strlen(v[i]);

		if (d) {
			d->refs++;
			continue;
		}
		if (!(d = malloc(sizeof(*d) + len + 1))) {
			dyn_del_(n, v, i);
			return -FB_ENOMEM;
		}
		d->refs = 1;
		memcpy(d->name, v[i], len + 1);
		if (smap_put_(&n->dyn, d->name, d) < 0) {
			free(d);
			dyn_del_(n, v, i);
			return -FB_ENOMEM;
		}
		added++;
	}
	return added;
}
