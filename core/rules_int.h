/* rules_int: what the files of the rules module (listed in rules.c) share;
 * nothing outside them includes it. */
#ifndef FB_RULES_INT_H
#define FB_RULES_INT_H

#include "arena.h"
#include "buf.h"
#include "rules.h"

#include "re.h"
#include <stddef.h>

#define MSG_SIZE 256
#define BACKREF "rule.matched"

/* Formats into msg (MSG_SIZE bytes); returns -FB_EINVAL. */
int rules_msgf_(char *msg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n zeroed bytes in the arena; NULL when out of memory. */
void *rules_zalloc_(struct arena *a, size_t n);

/* ---- compiled form (rules.c builds it) -------------------------------- */

enum op { OP_ANY, OP_IN, OP_NOTIN, OP_INREGEXP, OP_EXISTS, OP_DNE, OP_GT, OP_GE, OP_LT, OP_LE,
	  OP_GTLT, OP_GELE, OP_ISTRUE, OP_ISFALSE, OP_COUNT };

extern const char *const rules_op_names_[OP_COUNT];

/* an integer in v[0], or a version major.minor.patch */
struct num {
	long long v[3];
};

struct expr {
	const char *key;      /* element name; NULL for matchName */
	unsigned char op, version;
	size_t n;             /* values */
	const char **val;     /* In, NotIn */
	struct re **re;       /* InRegexp */
	struct num num[2];    /* Gt ... GeLe */
};

struct term {
	const char *feature;  /* lower-cased: the lookup key */
	const char *dom, *name; /* as written, split at the first '.': the template names */
	struct expr *ex;      /* matchExpressions (has_ex: given, maybe empty) */
	size_t nex;
	int has_ex;
	struct expr *mname;   /* matchName or NULL */
	int fallible;         /* an expression can fail on a value: evaluate every element */
};

struct matcher {
	struct term *t;
	size_t n;
};

struct kvs {
	const char **k, **v;
	size_t n;
};

struct tnode;

struct rule {
	const char *name, *error;
	struct matcher all, *any;
	size_t nany;
	struct kvs labels, vars, annotations, ers, taints; /* taints: key, value "effect\0value" */
	struct tnode *ltmpl, *vtmpl;
	int has_tmpl;         /* a template source is non-empty (upstream's test) */
};

struct rx {
	struct rx *next;
	struct re re;
};

struct rules {
	struct arena ar;
	struct rx *rx;        /* every compiled regexp, for re_free */
	const char *what;
	struct rule *v;
	size_t n;
};

/* ---- numbers and versions (rules_match.c) ------------------------------ */

/* strconv.Atoi: 0, or -1 when s is not a 64-bit decimal integer. */
int rules_parse_int_(const char *s, long long *out);
/* Masterminds semver's loose form: 0, or -1 when s is not one. */
int rules_parse_version_(const char *s, struct num *n);
int rules_num_cmp_(const struct num *a, const struct num *b);

/* ---- templates (rules_tmpl.c, on core/tmpl.h) ------------------------ */

/* Parses the template src (copied into ar) into *out; what names it in
 * messages. Returns 0, -FB_ENOMEM, or -FB_EINVAL with msg (MSG_SIZE) set. */
int rules_tmpl_parse_(struct arena *ar, const char *src, const char *what, struct tnode **out, char *msg);

/* ---- what a matcher matched: the templates' data ----------------------- */

/* A matched element: a flag (name; value NULL: upstream's {Name} has no
 * Value), an attribute (name, value; "" for one matched absent, by
 * DoesNotExist or the any-op, as upstream's {Name, Value: values[n]}) or an
 * instance (its attributes object). */
struct elem {
	const char *name, *value;
	const struct json *inst;
};

/* The elements one term matched, e[first..first+n) */
struct mlist {
	const char *dom, *feat;
	size_t first, n;
};

/* What the terms of one matcher matched. The arrays are owned (free both). */
struct md {
	struct elem *e;
	size_t ne, esize;
	struct mlist *l;
	size_t nl, lsize;
	int oom;
};

/* upstream evaluateFeatureMatcher: 1 when every term of mt matches f, 0
 * when not, < 0 on failure (-FB_EINVAL with msg set, or -FB_ENOMEM). With
 * m (may be NULL) what matched is recorded there, for templates. */
int rules_match_all_(const struct matcher *mt, const struct features *f, struct md *m, char *msg);

/* Appends template t run over the data m (as upstream's matchedFeatures)
 * to out; more than 1 MiB in out is an error (core/tmpl.h). Returns 0, -FB_ENOMEM, or -FB_EINVAL with msg
 * (MSG_SIZE) set, prefixed with what. */
int rules_tmpl_exec_(const struct md *m, const struct tnode *t, const char *what, struct buf *out, char *msg);

#endif
