/* nodelabels_int: what the files of the nodelabels module (listed in
 * nodelabels.c) share; nothing outside them includes it. */
#ifndef FB_NODELABELS_INT_H
#define FB_NODELABELS_INT_H

#include "nodelabels.h"
#include "strset.h"

#include <stddef.h>
#include <stdint.h>

#define NL_PREFIX NL_DEFAULT_NS "/"
#define NL_TAINTS_ANNOTATION NL_NFD_NS "/taints"

enum nl_kind { NL_LABEL, NL_ANNOTATION, NL_ER, NL_TAINT };

/* ---- names, indexes and objects (nodelabels.c) ------------------------- */

/* j when it is an object, else NULL. */
const struct json *nl_object_or_null_(const struct json *j);

/* Names hashed, for lookups in O(1): json_get walks an object's members
 * comparing every name, which with a few hundred labels sharing
 * "feature.node.kubernetes.io/" made the filter and the diff quadratic
 * (strcmp was most of nfd-master's own CPU time). A name maps to the first
 * thing added under it. Borrows the names and the things. */
struct nidx {
	struct nidx_slot {
		const char *name; /* NULL: empty */
		const void *val;
		uint32_t hash;
	} *slot;
	size_t mask; /* slots - 1 */
};

/* Room for n names. Returns 0 or -FB_ENOMEM; nl_nidx_free_ is safe either way. */
int nl_nidx_setup_(struct nidx *x, size_t n);
void nl_nidx_free_(struct nidx *x);
/* Adds name -> val, at most the n names of nl_nidx_setup_. Returns NULL, or
 * when name is there already what it maps to (left as it is). */
const void *nl_nidx_add_(struct nidx *x, const char *name, const void *val);
/* Indexes the members of obj (anything but an object has none). Of members
 * with one name (parsed documents may repeat one) the first is found, as
 * json_get finds it. obj must not change while x is in use. Returns 0 or
 * -FB_ENOMEM. */
int nl_nidx_members_(struct nidx *x, const struct json *obj);
/* The member of an nl_nidx_members_ index named name, or NULL. Borrowed. */
const struct json *nl_member_(const struct nidx *x, const char *name);

/* A member to be: name and string value, both borrowed. */
struct kv {
	const char *key, *value;
	int dropped;
};

/* The object json_set_str would build from kv[0..n) one after the other,
 * without its walk over the members for each: a name given again keeps its
 * first place and takes the later value (kv is rewritten to say so). Owned,
 * or NULL on allocation failure. */
struct json *nl_object_of_(struct kv *kv, size_t n);

/* ---- policy and validation (nodelabels_filter.c) ----------------------- */

/* Whether NFD may remove the k key named in a bookkeeping annotation, with
 * trusted when the record vouches for the annotation (the rules are at the
 * function). */
int nl_removable_(const struct nl_policy *p, enum nl_kind k, const char *key, int trusted);
/* Whether two quantity strings hold the same value. */
int nl_qty_same_(const char *a, const char *b);
/* Whether taints a and b have the same key and effect. */
int nl_taint_same_slot_(const struct json *a, const struct json *b);
/* {"key","value" (only when not empty),"effect"}, owned; NULL when out of memory. */
struct json *nl_taint_new_(const char *key, const char *value, const char *effect);

/* ---- the bookkeeping annotations and the record (nodelabels_record.c) -- */

/* The bookkeeping names of one instance. */
struct nl_names {
	char labels[512], annotations[512], ers[512], master[512], worker[512], prefix[512], record[512];
};
void nl_names_init_(struct nl_names *nm, const char *instance);

/* Adds the names a bookkeeping annotation lists (list: "a,b,example.com/c";
 * NULL: none), the default namespace put back where there is none. Returns
 * 0 or -FB_ENOMEM. */
int nl_tracked_add_(struct strset *s, const char *list);
/* The bookkeeping annotation value of a set of full keys. Owned; "" for an
 * empty set; NULL on allocation failure. */
char *nl_tracked_value_(const struct strset *s);
/* Drops from s the keys NFD may not remove (nl_removable_). */
void nl_tracked_keep_(const struct nl_policy *p, enum nl_kind k, struct strset *s, int trusted);
/* The taints the tracking annotation list names and NFD may remove, as an
 * owned array in *out (made even when list is NULL). Returns 0 or -FB_ENOMEM. */
int nl_taints_parse_(const struct nl_policy *pol, const char *list, struct json **out);
/* Whether list holds a taint with t's key and effect. */
int nl_taint_listed_(const struct json *list, const struct json *t);
/* The taint tracking annotation's new value. Owned, "" when none; NULL on
 * allocation failure. */
char *nl_taints_value_(const struct json *want, const struct json *old, const struct json *cur,
		       int skip_removal);

/* The record value for flag ('t' or 'n'), uid and the bookkeeping values
 * vals (labels, annotations, extended resources, taints; NULL: absent).
 * Returns 0 or -FB_ETLS. */
int nl_record_make_(char flag, const char *uid, const char *const vals[4], char out[NL_RECORD_SIZE]);
/* The bookkeeping annotations' values in anns (NULL: absent). */
void nl_record_vals_(const struct nl_names *nm, const struct json *anns, const char *vals[4]);
/* Whether the record label on the node vouches for its bookkeeping
 * annotations (*trusted), and for the taints annotation too (*taints).
 * Returns 0 or -FB_ETLS. */
int nl_record_check_(const struct nl_names *nm, const struct json *md, const struct json *labels,
		     const struct json *anns, int *trusted, int *taints);

#endif
