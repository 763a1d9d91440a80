/* nfstore's cross-file helpers (not part of the API: names end in _). */
#ifndef FB_NFSTORE_INT_H
#define FB_NFSTORE_INT_H

#include "nfstore.h"

#define FNV0 0xcbf29ce484222325ULL

/* nfstore_map.c */
uint64_t fnv_(const void *p, size_t n, uint64_t h);
void *smap_get_(const struct nfstore_map *m, const char *key);
/* key is borrowed: it must live as long as the entry. 0 or -FB_ENOMEM. */
int smap_put_(struct nfstore_map *m, const char *key, void *val);
void smap_del_(struct nfstore_map *m, const char *key);
void smap_free_(struct nfstore_map *m);
/* fnv over j and a separator. */
uint64_t hash_json_(const struct json *j, uint64_t h);

/* A set of strings being collected: the vector grows with ARRAY_GROW, the
 * strings go in the arena. nomem is sticky. */
struct refs_acc {
	struct arena *a;
	char **v;
	size_t n, size;
	int nomem;
};
/* nfstore_refs.c */
void refs_add_(void *ctx, const char *feature, const char *element);
/* "@domain.feature.element": element of "domain.feature" (whole: the feature). */
void refs_add_dynamic_(struct refs_acc *a, const char *value, int whole);
/* The "@" output values of a NodeFeatureRule's spec. */
void refs_rule_values_(struct refs_acc *a, const struct json *spec);
/* Recomputes the refs from every rule. 1 when the set gained a feature. */
int refs_update_(struct nfstore *s);
/* 0: neither the rules nor an "@" value of node nd look at feature; 1: at
 * all of it; 2: the rules at some elements */
int ref_mode_(const struct nfstore *s, const struct nfstore_node *nd, const char *feature);
int ref_elem_(const struct nfstore *s, const char *feature, const char *element);
/* One allocation holding v[0..n) and the strings; NULL when n is 0 or out
 * of memory (*nomem set then). */
char **strv_flat_(char *const *v, size_t n, int *nomem);
/* The node's "@" names: how many of v[0..k) are new to it (-FB_ENOMEM:
 * nothing added), and taking them back. */
long dyn_add_(struct nfstore_node *n, char *const *v, size_t k);
void dyn_del_(struct nfstore_node *n, char *const *v, size_t k);

/* nfstore_nf.c: frees o, its kept part's strings back to s->strs */
void nf_free_(struct nfstore *s, struct nfstore_nf *o);

/* nfstore_kept.c: o's kept part (o->data). kept_set_ replaces it with keep,
 * interning its strings: 0, or -FB_ENOMEM with o keeping none (the old part
 * gone too). kept_drop_ frees it (safe when there is none). */
int kept_set_(struct nfstore *s, struct nfstore_nf *o, const struct json *keep);
void kept_drop_(struct nfstore *s, struct nfstore_nf *o);

/* nfstore_merge.c: a rules_error_fn logging a few errors per rule object
 * (*logged counts them) and, with count, adding each to conf.m_rule_errors. */
struct rule_err_ctx {
	struct nfstore *s;
	int *logged;
	const char *node;
	int count;
};
void rule_error_(void *ctx, const char *what, const char *rule, const char *msg);
/* node n's selected objects merged into f (made by the
 * caller). 1 when it has any, 0 when none, -FB_ENOMEM. */
int node_features_(struct nfstore *s, struct nfstore_node *n, struct features *f);

/* nfstore_group.c: n is gone (its Node deleted or dropped): no group has it. */
void groups_forget_(struct nfstore *s, const char *node);
void groups_free_(struct nfstore *s);

/* nfstore.c */
struct nfstore_node *node_get_(struct nfstore *s, const char *name);
int listed_(const struct nfstore *s, int what);
int ns_selected_(const struct nfstore *s, const char *ns);

#endif
