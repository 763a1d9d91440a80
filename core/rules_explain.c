/* rules_explain: why a compiled rule matches a feature set or not, for
 * kubectl-nfd --explain. Every verdict comes from the engine itself
 * (rules_match_all_): a whole matcher as rules_run evaluates it, each term
 * alone, and each expression of a term alone (a copy of the term holding
 * only that expression), so the explanation cannot disagree with what
 * nfd-master does. What the feature set holds under a failed expression's
 * key is looked up here only to be shown. See rules.h. */
#include "rules_int.h"

#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEEN_MAX 8 /* instances (or names) shown for a failed expression */

struct ex {
	const struct features *f;
	struct md md;
	char msg[MSG_SIZE];
	int oom;
};

static struct json *put(struct ex *x, struct json *o, const char *key, struct json *v)
{
	if (!v || json_set_take(o, key, v) < 0) {
		x->oom = 1;
		return NULL;
	}
	return v;
}

static void put_str(struct ex *x, struct json *o, const char *key, const char *s)
{
	put(x, o, key, json_new_string(s));
}

static void add(struct ex *x, struct json *arr, struct json *v)
{
	if (!v || json_append_take(arr, v) < 0)
		x->oom = 1;
}

/* The elements m recorded, as [{"name","value"?} | {"instance": N}]. The
 * engine records instances in their order, so one walk of the feature's
 * instances finds every index (a node may have thousands). */
static struct json *elements(struct ex *x, const char *feature)
{
	const struct json *all = features_instances(x->f, feature), *cur = json_child(all);
	struct json *arr = json_new_array();
	long idx = 0;

	if (!arr) {
		x->oom = 1;
		return NULL;
	}
	for (size_t i = 0; i < x->md.ne; i++) {
		const struct elem *e = &x->md.e[i];
		struct json *o = json_new_object();

		if (!o) {
			x->oom = 1;
			break;
		}
		if (e->inst) {
			while (cur && json_get(cur, "attributes") != e->inst)
				cur = json_next(cur), idx++;
			put(x, o, "instance", json_new_number(cur ? (double)idx : -1));
			if (!cur) /* not in order after all: start over for the next */
				cur = json_child(all), idx = 0;
		} else {
			put_str(x, o, "name", e->name ? e->name : "");
			if (e->value)
				put_str(x, o, "value", e->value);
		}
		add(x, arr, o);
	}
	return arr;
}

/* Runs the one-term matcher {t} with the engine: 1, 0, or < 0 (x->msg). */
static int run_term(struct ex *x, const struct term *t)
{
	struct matcher one = { (struct term *)t, 1 };

	x->msg[0] = '\0';
	return rules_match_all_(&one, x->f, &x->md, x->msg);
}

/* What the feature set holds under key: the flag, the attribute's value and
 * the first instances' values ("value" absent: no such element). */
static struct json *seen_key(struct ex *x, const char *feature, const char *key)
{
	const struct json *fl = features_flags(x->f, feature), *at = features_attrs(x->f, feature);
	const struct json *in = features_instances(x->f, feature);
	struct json *arr = json_new_array(), *o;
	long i = 0;

	if (!arr) {
		x->oom = 1;
		return NULL;
	}
	if (fl && (o = json_new_object())) {
		put_str(x, o, "kind", "flag");
		put(x, o, "present", json_new_bool(json_get(fl, key) != NULL));
		add(x, arr, o);
	}
	if (at && (o = json_new_object())) {
		put_str(x, o, "kind", "attribute");
		if (json_get_str(at, key, NULL))
			put_str(x, o, "value", json_get_str(at, key, NULL));
		add(x, arr, o);
	}
	for (const struct json *c = json_child(in); c; c = json_next(c), i++) {
		const char *v = json_get_str(json_get(c, "attributes"), key, NULL);

		if (i == SEEN_MAX) {
			if ((o = json_new_object())) {
				put_str(x, o, "kind", "more");
				put(x, o, "count", json_new_number((double)(json_count(in) - SEEN_MAX)));
				add(x, arr, o);
			}
			break;
		}
		if (!(o = json_new_object()))
			break;
		put_str(x, o, "kind", "instance");
		put(x, o, "index", json_new_number((double)i));
		if (v)
			put_str(x, o, "value", v);
		add(x, arr, o);
	}
	return arr;
}

/* Runs term t, and puts "matched" and then "error" (it failed) or
 * "elements" (it matched) into o. Returns run_term's result. */
static int verdict(struct ex *x, struct json *o, const struct term *t)
{
	int r = run_term(x, t);

	if (r == -FB_ENOMEM)
		x->oom = 1;
	put(x, o, "matched", json_new_bool(r > 0));
	if (r < 0)
		put_str(x, o, "error", x->msg);
	else if (r > 0)
		put(x, o, "elements", elements(x, t->feature));
	return r;
}

/* One expression: {"key"?, "op", "values", "type"?, "matched", "error"?,
 * "elements" | "seen"}. t1 is the term reduced to that expression. */
static struct json *expr_json(struct ex *x, const struct term *t1, const struct expr *e)
{
	struct json *o = json_new_object(), *v = json_new_array();
	int r;

	if (!o || !v) {
		json_free(o);
		json_free(v);
		x->oom = 1;
		return NULL;
	}
	if (e->key)
		put_str(x, o, "key", e->key);
	put_str(x, o, "op", rules_op_names_[e->op]);
	for (size_t i = 0; i < e->n; i++)
		add(x, v, json_new_string(e->val[i]));
	put(x, o, "values", v);
	if (e->version)
		put_str(x, o, "type", "version");
	if ((r = verdict(x, o, t1)) == 0 && e->key)
		put(x, o, "seen", seen_key(x, t1->feature, e->key));
	return o;
}

static int has_feature(const struct features *f, const char *feature)
{
	static const char *const kinds[] = { "flags", "attributes", "instances" };

	for (int i = 0; i < 3; i++)
		if (json_get(json_get(f->root, kinds[i]), feature))
			return 1;
	return 0;
}

/* One term: {"feature", "present", "matched", "error"?, "elements"?,
 * "expressions"?, "matchName"?}. */
static struct json *term_json(struct ex *x, const struct term *t)
{
	struct json *o = json_new_object(), *exs;
	struct term t1;

	if (!o) {
		x->oom = 1;
		return NULL;
	}
	put_str(x, o, "feature", t->feature);
	put(x, o, "present", json_new_bool(has_feature(x->f, t->feature)));
	verdict(x, o, t);
	if (t->has_ex && (exs = put(x, o, "expressions", json_new_array())))
		for (size_t i = 0; i < t->nex; i++) {
			t1 = *t;
			t1.ex = &t->ex[i];
			t1.nex = 1;
			t1.mname = NULL;
			t1.fallible = t->ex[i].op >= OP_GT && t->ex[i].op <= OP_GELE;
			add(x, exs, expr_json(x, &t1, &t->ex[i]));
		}
	if (t->mname) {
		t1 = *t;
		t1.has_ex = 0;
		t1.ex = NULL;
		t1.nex = 0;
		put(x, o, "matchName", expr_json(x, &t1, t->mname));
	}
	return o;
}

/* One matcher: {"matched", "error"?, "terms"}; *matched gets the verdict. */
static struct json *matcher_json(struct ex *x, const struct matcher *mt, int *matched)
{
	struct json *o = json_new_object(), *terms;
	int r;

	if (!o) {
		x->oom = 1;
		return NULL;
	}
	x->msg[0] = '\0';
	r = rules_match_all_(mt, x->f, &x->md, x->msg);
	if (r == -FB_ENOMEM)
		x->oom = 1;
	*matched = r > 0;
	put(x, o, "matched", json_new_bool(r > 0));
	if (r < 0)
		put_str(x, o, "error", x->msg);
	if ((terms = put(x, o, "terms", json_new_array())))
		for (size_t i = 0; i < mt->n; i++)
			add(x, terms, term_json(x, &mt->t[i]));
	return o;
}

int rules_explain(const struct rules *r, size_t i, const struct features *f, struct json **out)
{
	const struct rule *ru;
	struct json *o, *any;
	struct ex x;
	int m, any_matched = 0, all_matched = 1;

	*out = NULL;
	if (i >= r->n)
		return -FB_EINVAL;
	ru = &r->v[i];
	memset(&x, 0, sizeof(x));
	x.f = f;
	if (!(o = json_new_object()))
		return -FB_ENOMEM;
	put_str(&x, o, "name", ru->name ? ru->name : "");
	if (ru->error) {
		put_str(&x, o, "error", ru->error);
		put(&x, o, "matched", json_new_bool(0));
		goto out;
	}
	if (ru->nany && (any = put(&x, o, "matchAny", json_new_array())))
		for (size_t k = 0; k < ru->nany; k++) {
			add(&x, any, matcher_json(&x, &ru->any[k], &m));
			any_matched |= m;
		}
	if (ru->all.n)
		put(&x, o, "matchFeatures", matcher_json(&x, &ru->all, &all_matched));
	put(&x, o, "matched", json_new_bool((!ru->nany || any_matched) && all_matched));
out:
	free(x.md.e);
	free(x.md.l);
	if (x.oom) {
		json_free(o);
		return -FB_ENOMEM;
	}
	*out = o;
	return 0;
}
