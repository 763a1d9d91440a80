/* rules: the NodeFeatureRule engine. Mirrors upstream
 * pkg/apis/nfd/nodefeaturerule (rule.go Execute with failFast, expression.go),
 * pkg/apis/nfd/template (Go text/template + Sprig, missingkey=error) and
 * source/custom/api (the custom source's shorthands).
 *
 * Deliberate deviations:
 * - Expressions are checked when compiled (value counts, integers, versions,
 *   regexps), not when first evaluated against an element that exists; a
 *   rule upstream would only fail on some nodes fails here on all of them.
 * - Expressions of a set are evaluated in document order (Go: map order,
 *   random), which only decides which of two run-time errors is reported.
 * - Regular expressions are RE2, the subset core/re.h matches exactly.
 * - Templates run on core/tmpl: Go's text/template language with
 *   missingkey=error and the Sprig functions upstream's rules use (the
 *   README lists them); anything else is a compile error naming it. The
 *   deviations from Go are in core/tmpl.h.
 * - matchOn (legacy custom rules) is refused.
 * - A rule with a string that held \u0000 (see json.h) is refused, its
 *   message naming the field; upstream keeps the NUL in the string.
 *
 * As upstream, a taint with an empty (or missing) key or effect does not
 * break its rule: rules_out carries it and nfd-master's policy
 * (nodelabels' filter, upstream's filterTaints) drops that taint alone with
 * a logged "ignoring taint". */
#include "rules_int.h"

#include "err.h"
#include "re.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The module's files: rules.c compiles (this file), rules_match.c matches,
 * rules_tmpl.c builds upstream's template data and runs core/tmpl on it,
 * rules_run.c runs a list and collects the outputs, rules_explain.c says why
 * (kubectl-nfd --explain); rules_int.h holds what they share. */

void *rules_zalloc_(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n);

	return p ? memset(p, 0, n) : NULL;
}

/* ---- compiling ----------------------------------------------------------- */

struct cc {
	struct rules *r;
	enum rules_dialect d;
	char msg[MSG_SIZE];
};

static int bad(struct cc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct cc *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return -FB_EINVAL;
}

/* A member of o: by exact name, and in the custom dialect also ignoring
 * case, as Go's encoding/json matches struct fields. */
static const struct json *member(const struct cc *c, const struct json *o, const char *key)
{
	const struct json *m = json_get(o, key);

	if (m || c->d != RULES_CUSTOM || json_type(o) != JSON_OBJECT)
		return m;
	for (m = json_child(o); m; m = json_next(m))
		if (strcasecmp(json_key(m), key) == 0)
			return m;
	return NULL;
}

static int given(const struct json *j)
{
	return j && json_type(j) != JSON_NULL;
}

static const char *copy(struct cc *c, const char *s)
{
	return arena_strdup(&c->r->ar, s);
}

/* A YAML scalar of the custom dialect as text: Go's FormatBool and
 * FormatFloat(v, 'f', -1, 64) (the shortest decimal that reads back). */
static const char *scalar(struct cc *c, const struct json *j)
{
	char buf[400], *p;
	long long i;
	double d;

	if (json_type(j) == JSON_STRING)
		return copy(c, json_str(j));
	if (json_type(j) == JSON_BOOL)
		return json_bool(j) ? "true" : "false";
	if (json_int(j, &i) == 0) {
		snprintf(buf, sizeof(buf), "%lld", i);
		return copy(c, buf);
	}
	if (!(p = json_print(j, NULL)))
		return NULL;
	d = strtod(p, NULL);
	free(p);
	for (int prec = 0; prec < 40; prec++) {
		snprintf(buf, sizeof(buf), "%.*f", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	return copy(c, buf);
}

/* An expression's values: a list of strings; the custom dialect also takes
 * one string, bool or number. */
static int values(struct cc *c, const struct json *j, struct expr *e, const char *where)
{
	size_t n = json_type(j) == JSON_ARRAY ? json_count(j) : (size_t)given(j);

	if (given(j) && json_type(j) != JSON_ARRAY && (c->d != RULES_CUSTOM || json_type(j) == JSON_OBJECT))
		return bad(c, "%s: value must be a list of strings", where);
	if (!(e->val = rules_zalloc_(&c->r->ar, n * sizeof(*e->val))))
		return -FB_ENOMEM;
	if (json_type(j) != JSON_ARRAY && n)
		return (e->val[e->n++] = scalar(c, j)) ? 0 : -FB_ENOMEM;
	for (const struct json *v = json_child(j); v; v = json_next(v)) {
		if (!json_str(v))
			return bad(c, "%s: value must be a list of strings", where);
		if (!(e->val[e->n++] = copy(c, json_str(v))))
			return -FB_ENOMEM;
	}
	return 0;
}

static int compile_expr(struct cc *c, struct expr *e, const char *key, const struct json *j,
			const char *where)
{
	static const signed char want[OP_COUNT] = { 0, -1, -1, -1, 0, 0, 1, 1, 1, 1, 2, 2, 0, 0 };
	const char *op = "", *type = "";
	const struct json *vals = j;
	int rc;

	memset(e, 0, sizeof(*e));
	e->key = key;
	if (json_type(j) == JSON_OBJECT) {
		const struct json *o = member(c, j, "op"), *t = member(c, j, "type");

		if (given(o) && !(op = json_str(o)))
			return bad(c, "%s: op must be a string", where);
		if (c->d != RULES_CUSTOM && given(t) && !(type = json_str(t)))
			return bad(c, "%s: type must be a string", where);
		vals = member(c, j, "value");
	} else if (c->d != RULES_CUSTOM || !given(j)) {
		return bad(c, "%s: expression must be an object with op and value", where);
	} else {
		op = "In";
	}
	for (e->op = 0; e->op < OP_COUNT && strcmp(rules_op_names_[e->op], op) != 0; e->op++)
		;
	if (e->op == OP_COUNT ||
	    (c->d == RULES_CUSTOM && (e->op == OP_GE || e->op == OP_LE || e->op == OP_GELE)))
		return bad(c, "%s: invalid op \"%s\"", where, op);
	if ((rc = values(c, vals, e, where)) < 0)
		return rc;
	if (want[e->op] >= 0 ? e->n != (size_t)want[e->op] : e->n == 0)
		return bad(c, "%s: op %s takes %s (have %zu)", where, op,
			   want[e->op] < 0 ? "one or more values" : want[e->op] == 0 ? "no values"
				   : want[e->op] == 1 ? "exactly one value" : "exactly two values", e->n);
	if (*type && strcmp(type, "version") != 0)
		return bad(c, "%s: unsupported type \"%s\" (only \"version\")", where, type);
	e->version = *type != '\0';
	for (size_t i = 0; i < e->n && e->op >= OP_GT && e->op <= OP_GELE; i++)
		if (e->version ? rules_parse_version_(e->val[i], &e->num[i]) < 0
			       : rules_parse_int_(e->val[i], &e->num[i].v[0]) < 0)
			return bad(c, "%s: op %s: \"%s\" is not %s", where, op, e->val[i],
				   e->version ? "a version" : "an integer");
	if (e->n == 2 && e->op >= OP_GTLT && e->op <= OP_GELE && rules_num_cmp_(&e->num[0], &e->num[1]) >= 0)
		return bad(c, "%s: op %s: value[0] must be less than value[1]", where, op);
	if (e->op == OP_INREGEXP) {
		if (!(e->re = rules_zalloc_(&c->r->ar, e->n * sizeof(*e->re))))
			return -FB_ENOMEM;
		for (size_t i = 0; i < e->n; i++) {
			struct rx *x = rules_zalloc_(&c->r->ar, sizeof(*x));
			char why[160];

			if (!x)
				return -FB_ENOMEM;
			if ((rc = re_compile(&x->re, e->val[i], why, sizeof(why))) < 0)
				return rc != -FB_EINVAL ? rc
					: bad(c, "%s: invalid regexp \"%s\": %s", where, e->val[i], why);
			x->next = c->r->rx;
			c->r->rx = x;
			e->re[i] = &x->re;
		}
	}
	return 0;
}

/* Adds (or, for a name seen before, replaces: Go decodes into a map) one
 * expression of a set. */
static int add_expr(struct cc *c, struct term *t, const char *key, const struct json *j, const char *where)
{
	char w[MSG_SIZE];
	size_t i;

	for (i = 0; i < t->nex && strcmp(t->ex[i].key, key) != 0; i++)
		;
	t->nex += i == t->nex;
	snprintf(w, sizeof(w), "%s: matchExpressions \"%s\"", where, key);
	if (!(key = copy(c, key)))
		return -FB_ENOMEM;
	if (!given(j)) { /* custom: a null value is Exists */
		memset(&t->ex[i], 0, sizeof(t->ex[i]));
		t->ex[i].key = key;
		t->ex[i].op = OP_EXISTS;
		return 0;
	}
	return compile_expr(c, &t->ex[i], key, j, w);
}

static int compile_set(struct cc *c, struct term *t, const struct json *j, const char *where)
{
	int rc = 0;

	t->has_ex = 1;
	if (!(t->ex = rules_zalloc_(&c->r->ar, json_count(j) * sizeof(*t->ex))))
		return -FB_ENOMEM;
	if (json_type(j) == JSON_ARRAY && c->d == RULES_CUSTOM) {
		/* "name" is Exists, "name=value" is In [value] */
		for (const struct json *v = json_child(j); v && rc == 0; v = json_next(v)) {
			const char *s = json_str(v), *eq = s ? strchr(s, '=') : NULL;
			char key[MSG_SIZE];
			struct json *in;

			if (!s)
				return bad(c, "%s: matchExpressions list must hold strings", where);
			if (!eq) {
				rc = add_expr(c, t, s, NULL, where);
				continue;
			}
			snprintf(key, sizeof(key), "%.*s", (int)(eq - s), s);
			if (!(in = json_new_string(eq + 1)))
				return -FB_ENOMEM;
			rc = add_expr(c, t, key, in, where);
			json_free(in);
		}
		return rc;
	}
	if (json_type(j) != JSON_OBJECT)
		return bad(c, "%s: matchExpressions must be a map", where);
	for (const struct json *v = json_child(j); v && rc == 0; v = json_next(v)) {
		if (c->d != RULES_CUSTOM && !given(v))
			return bad(c, "%s: matchExpressions \"%s\": expression must be an object", where,
				   json_key(v));
		rc = add_expr(c, t, json_key(v), v, where);
	}
	return rc;
}

static int compile_term(struct cc *c, struct term *t, const struct json *j, const char *where)
{
	const struct json *fj = member(c, j, "feature"), *me, *mn;
	const char *feat = json_str(fj), *dot;
	char w[MSG_SIZE];
	int rc;

	if (json_type(j) != JSON_OBJECT || !feat)
		return bad(c, "%s: must be an object with a feature name", where);
	snprintf(w, sizeof(w), "%.100s (%.100s)", where, feat);
	if (!(t->feature = copy(c, feat)) || !(t->dom = copy(c, feat)))
		return -FB_ENOMEM;
	for (char *p = (char *)t->feature; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	if ((dot = strchr(t->dom, '.'))) {
		*(char *)dot = '\0';
		t->name = dot + 1;
	} else {
		t->dom = t->feature;
		t->name = "";
	}
	me = member(c, j, "matchExpressions");
	mn = member(c, j, "matchName");
	if (given(me) && (rc = compile_set(c, t, me, w)) < 0)
		return rc;
	/* Go evaluates every element, so a bad value fails the rule even after
	 * a match; only comparisons can fail */
	for (size_t i = 0; i < t->nex; i++)
		t->fallible |= t->ex[i].op >= OP_GT && t->ex[i].op <= OP_GELE;
	if (given(mn)) {
		snprintf(w, sizeof(w), "%.100s (%.100s): matchName", where, feat);
		if (!(t->mname = rules_zalloc_(&c->r->ar, sizeof(*t->mname))))
			return -FB_ENOMEM;
		return compile_expr(c, t->mname, NULL, mn, w);
	}
	return 0;
}

static int compile_matcher(struct cc *c, struct matcher *m, const struct json *j, const char *where)
{
	char w[MSG_SIZE];
	int rc;

	if (!given(j))
		return 0;
	if (json_type(j) != JSON_ARRAY)
		return bad(c, "%s must be a list", where);
	if (!(m->t = rules_zalloc_(&c->r->ar, json_count(j) * sizeof(*m->t))))
		return -FB_ENOMEM;
	for (const struct json *t = json_child(j); t; t = json_next(t)) {
		snprintf(w, sizeof(w), "%s[%zu]", where, m->n);
		if ((rc = compile_term(c, &m->t[m->n++], t, w)) < 0)
			return rc;
	}
	return 0;
}

static int kvs_alloc(struct cc *c, struct kvs *kv, size_t n)
{
	kv->k = rules_zalloc_(&c->r->ar, n * sizeof(*kv->k));
	kv->v = rules_zalloc_(&c->r->ar, n * sizeof(*kv->v));
	return kv->k && kv->v ? 0 : -FB_ENOMEM;
}

/* A map of strings (null values are "", as Go decodes them). */
static int compile_kvs(struct cc *c, struct kvs *kv, const struct json *j, const char *where)
{
	size_t n = json_count(j);

	if (!given(j))
		return 0;
	if (json_type(j) != JSON_OBJECT)
		return bad(c, "%s must be a map", where);
	if (kvs_alloc(c, kv, n) < 0)
		return -FB_ENOMEM;
	for (const struct json *v = json_child(j); v; v = json_next(v), kv->n++) {
		if (given(v) && !json_str(v))
			return bad(c, "%s: value of \"%s\" must be a string", where, json_key(v));
		kv->k[kv->n] = copy(c, json_key(v));
		kv->v[kv->n] = copy(c, given(v) ? json_str(v) : "");
		if (!kv->k[kv->n] || !kv->v[kv->n])
			return -FB_ENOMEM;
	}
	return 0;
}

static int compile_taints(struct cc *c, struct kvs *kv, const struct json *j)
{
	size_t n = json_count(j);

	if (!given(j))
		return 0;
	if (json_type(j) != JSON_ARRAY)
		return bad(c, "taints must be a list");
	if (kvs_alloc(c, kv, n) < 0)
		return -FB_ENOMEM;
	for (const struct json *t = json_child(j); t; t = json_next(t), kv->n++) {
		const struct json *k = json_get(t, "key"), *e = json_get(t, "effect"), *v = json_get(t, "value");
		const char *key = given(k) ? json_str(k) : "", *effect = given(e) ? json_str(e) : "";
		const char *value = given(v) ? json_str(v) : "";
		char *ev;

		/* an empty or missing key or effect is kept, as upstream: the
		 * taint alone is dropped, logged, when nfd-master applies it */
		if (json_type(t) != JSON_OBJECT)
			return bad(c, "taints[%zu] must be a map", kv->n);
		if (!key || !effect || !value)
			return bad(c, "taints[%zu]: %s must be a string", kv->n, !key ? "key" : !effect ? "effect" : "value");
		if (!(kv->k[kv->n] = copy(c, key)) ||
		    !(ev = rules_zalloc_(&c->r->ar, strlen(effect) + strlen(value) + 2)))
			return -FB_ENOMEM;
		strcpy(ev, effect);
		strcpy(ev + strlen(effect) + 1, value);
		kv->v[kv->n] = ev;
	}
	return 0;
}

static int compile_tmpl(struct cc *c, struct rule *ru, struct tnode **out, const struct json *j,
			const char *what)
{
	if (!given(j))
		return 0;
	if (!json_str(j))
		return bad(c, "%s must be a string", what);
	ru->has_tmpl |= json_str(j)[0] != '\0';
	return rules_tmpl_parse_(&c->r->ar, json_str(j), what, out, c->msg);
}

static int compile_rule(struct cc *c, struct rule *ru, const struct json *j)
{
	const struct json *any = member(c, j, "matchAny");
	char path[96];
	int rc;

	if (json_type(j) != JSON_OBJECT)
		return bad(c, "a rule must be an object");
	if (json_nul_path(j, path, sizeof(path)))
		return bad(c, "%s holds a \\u0000 (NUL character), which featurebox does not keep: rule refused",
			   path);
	if (c->d == RULES_CUSTOM && member(c, j, "matchOn"))
		return bad(c, "legacy matchOn rules are not supported: use matchFeatures");
	/* a NodeFeatureGroup rule has no labels: the API server prunes them */
	if ((c->d != RULES_NFG &&
	     ((rc = compile_kvs(c, &ru->labels, member(c, j, "labels"), "labels")) < 0 ||
	      (rc = compile_tmpl(c, ru, &ru->ltmpl, member(c, j, "labelsTemplate"), "labelsTemplate")) < 0)) ||
	    (rc = compile_kvs(c, &ru->vars, member(c, j, "vars"), "vars")) < 0 ||
	    (rc = compile_tmpl(c, ru, &ru->vtmpl, member(c, j, "varsTemplate"), "varsTemplate")) < 0 ||
	    (rc = compile_matcher(c, &ru->all, member(c, j, "matchFeatures"), "matchFeatures")) < 0)
		return rc;
	if (c->d == RULES_NFR &&
	    ((rc = compile_kvs(c, &ru->annotations, member(c, j, "annotations"), "annotations")) < 0 ||
	     (rc = compile_kvs(c, &ru->ers, member(c, j, "extendedResources"), "extendedResources")) < 0 ||
	     (rc = compile_taints(c, &ru->taints, member(c, j, "taints"))) < 0))
		return rc;
	if (!given(any))
		return 0;
	if (json_type(any) != JSON_ARRAY)
		return bad(c, "matchAny must be a list");
	if (!(ru->any = rules_zalloc_(&c->r->ar, json_count(any) * sizeof(*ru->any))))
		return -FB_ENOMEM;
	for (const struct json *a = json_child(any); a; a = json_next(a)) {
		char w[64];

		snprintf(w, sizeof(w), "matchAny[%zu].matchFeatures", ru->nany);
		if ((rc = compile_matcher(c, &ru->any[ru->nany++], member(c, a, "matchFeatures"), w)) < 0)
			return rc;
	}
	return 0;
}

int rules_compile(struct rules **out, const struct json *rules, enum rules_dialect d, const char *what)
{
	struct rules *r = calloc(1, sizeof(*r));
	struct cc c = { .r = r, .d = d };
	size_t n = json_type(rules) == JSON_ARRAY ? json_count(rules) : 1;
	const struct json *j = json_child(rules);

	*out = NULL;
	if (!r)
		return -FB_ENOMEM;
	arena_init(&r->ar);
	if (!(r->what = arena_strdup(&r->ar, what ? what : "")) ||
	    !(r->v = rules_zalloc_(&r->ar, n * sizeof(*r->v))))
		goto nomem;
	if (json_type(rules) != JSON_ARRAY) {
		r->n = 1;
		r->v[0].name = "";
		r->v[0].error = "the rules are not a list";
	}
	for (; j && json_type(rules) == JSON_ARRAY; r->n++, j = json_next(j)) {
		struct rule *ru = &r->v[r->n];
		const char *name = json_str(member(&c, j, "name"));
		int rc;

		if (!(ru->name = copy(&c, name ? name : "")))
			goto nomem;
		rc = compile_rule(&c, ru, j);
		if (rc == -FB_ENOMEM)
			goto nomem;
		if (rc < 0) {
			/* a broken rule keeps only its name and message */
			name = ru->name;
			memset(ru, 0, sizeof(*ru));
			ru->name = name;
			if (!(ru->error = copy(&c, c.msg)))
				goto nomem;
		}
	}
	*out = r;
	return 0;
nomem:
	rules_free(r);
	return -FB_ENOMEM;
}

void rules_free(struct rules *r)
{
	if (!r)
		return;
	for (struct rx *x = r->rx; x; x = x->next)
		re_free(&x->re);
	arena_free(&r->ar);
	free(r);
}

size_t rules_count(const struct rules *r)
{
	return r ? r->n : 0;
}

const char *rules_name(const struct rules *r, size_t i)
{
	return i < rules_count(r) ? r->v[i].name : NULL;
}

const char *rules_error(const struct rules *r, size_t i)
{
	return i < rules_count(r) ? r->v[i].error : NULL;
}

void rules_refs(const struct rules *r, void (*fn)(void *ctx, const char *feature, const char *element),
		void *ctx)
{
	for (size_t i = 0; i < rules_count(r); i++) {
		const struct rule *ru = &r->v[i];

		for (size_t k = 0; k <= ru->nany; k++) {
			const struct matcher *m = k < ru->nany ? &ru->any[k] : &ru->all;

			for (size_t t = 0; t < m->n; t++) {
				const struct term *te = &m->t[t];

				/* matchName, templates and an empty expression set look
				 * at every element; otherwise only the named ones matter */
				if (te->mname || ru->has_tmpl || !te->has_ex || te->nex == 0) {
					fn(ctx, te->feature, NULL);
					continue;
				}
				for (size_t e = 0; e < te->nex; e++)
					fn(ctx, te->feature, te->ex[e].key);
			}
		}
	}
}
