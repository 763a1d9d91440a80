/* rules_run: a compiled rule list run against a feature set (upstream
 * rule.go Execute and nfd-master's processNodeFeatureRule): the matchers,
 * the templates expanded, and a matched rule's labels, vars, annotations,
 * extended resources and taints collected, its labels and vars also
 * written back into "rule.matched" for the rules after it. See rules.c. */
#include "rules_int.h"

#include "err.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rules_msgf_(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_SIZE, fmt, ap);
	va_end(ap);
	return -FB_EINVAL;
}

struct run {
	struct md md;
	struct buf lt, vt;    /* the rule's expanded templates */
	char msg[MSG_SIZE];
};

static int expand(struct run *rn, const struct rule *ru)
{
	int rc = 0;

	if (ru->ltmpl) {
		rc = rules_tmpl_exec_(&rn->md, ru->ltmpl, "labelsTemplate", &rn->lt, rn->msg);
		buf_putc(&rn->lt, '\n');
	}
	if (rc == 0 && ru->vtmpl) {
		rc = rules_tmpl_exec_(&rn->md, ru->vtmpl, "varsTemplate", &rn->vt, rn->msg);
		buf_putc(&rn->vt, '\n');
	}
	return rc < 0 ? rc : rn->lt.err || rn->vt.err ? -FB_ENOMEM : 0;
}

/* upstream Execute: 1 matched, 0 not, < 0 failed (message in rn->msg). */
static int run_rule(struct run *rn, const struct rule *ru, const struct features *f)
{
	struct md *m = ru->has_tmpl ? &rn->md : NULL;
	int r, matched = 0;

	buf_truncate(&rn->lt, 0);
	buf_truncate(&rn->vt, 0);
	for (size_t i = 0; i < ru->nany; i++) {
		if ((r = rules_match_all_(&ru->any[i], f, m, rn->msg)) < 0)
			return r;
		if (!r)
			continue;
		matched = 1;
		/* without templates the first match is enough */
		if (!m)
			break;
		if ((r = expand(rn, ru)) < 0)
			return r;
	}
	if (ru->nany && !matched)
		return 0;
	if (ru->all.n) {
		if ((r = rules_match_all_(&ru->all, f, m, rn->msg)) <= 0)
			return r;
		if (m && (r = expand(rn, ru)) < 0)
			return r;
	}
	return 1;
}

/* Turns the "key=value" lines of b in place into n NUL-terminated key,
 * value pairs; returns n, or < 0 (message in msg) for a line without '='. */
static long split_lines(struct buf *b, const char *what, char *msg)
{
	char *w = b->p, *p = b->p, *end = b->p + b->len;
	long n = 0;

	while (p < end) {
		char *e = memchr(p, '\n', (size_t)(end - p)), *s = p, *eq;

		e = e ? e : end;
		p = e + 1;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (s == e)
			continue;
		if (!(eq = memchr(s, '=', (size_t)(e - s))))
			return rules_msgf_(msg, "%s: missing value in expanded template line \"%.*s\" "
					  "(format must be '<key>=<value>')", what, (int)(e - s > 60 ? 60 : e - s), s);
		memmove(w, s, (size_t)(e - s));
		w[eq - s] = '\0';
		w[e - s] = '\0';
		w += e - s + 1;
		n++;
	}
	return n;
}

/* The elements of rule.matched, created when missing. */
static struct json *backref(struct features *f)
{
	struct json *attrs = json_get(f->root, "attributes"), *set, *el;

	if (json_type(attrs) != JSON_OBJECT) {
		if (json_set_take(f->root, "attributes", json_new_object()) < 0)
			return NULL;
		attrs = json_get(f->root, "attributes");
	}
	if (!(set = json_get(attrs, BACKREF))) {
		if (json_set_take(attrs, BACKREF, json_new_object()) < 0)
			return NULL;
		set = json_get(attrs, BACKREF);
	}
	if (json_type(el = json_get(set, "elements")) != JSON_OBJECT) {
		if (json_set_take(set, "elements", json_new_object()) < 0)
			return NULL;
		el = json_get(set, "elements");
	}
	return el;
}

static int set_pairs(struct json *a, struct json *b, const char *s, long n)
{
	for (; n-- > 0; s += strlen(s) + 1) {
		const char *k = s;

		s += strlen(s) + 1;
		if (json_set_str(a, k, s) < 0 || (b && json_set_str(b, k, s) < 0))
			return -FB_ENOMEM;
	}
	return 0;
}

static int set_kvs(struct json *a, struct json *b, const struct kvs *kv)
{
	for (size_t i = 0; i < kv->n; i++)
		if (json_set_str(a, kv->k[i], kv->v[i]) < 0 || (b && json_set_str(b, kv->k[i], kv->v[i]) < 0))
			return -FB_ENOMEM;
	return 0;
}

/* A matched rule's outputs into out and rule.matched. */
static int apply(struct run *rn, const struct rule *ru, struct features *f, struct rules_out *out)
{
	long nl = split_lines(&rn->lt, "labelsTemplate", rn->msg), nv;
	struct json *br;

	if (nl < 0 || (nv = split_lines(&rn->vt, "varsTemplate", rn->msg)) < 0)
		return -FB_EINVAL;
	if (!(br = backref(f)))
		return -FB_ENOMEM;
	if (set_pairs(out->labels, br, rn->lt.p, nl) < 0 || set_kvs(out->labels, br, &ru->labels) < 0 ||
	    set_pairs(out->vars, br, rn->vt.p, nv) < 0 || set_kvs(out->vars, br, &ru->vars) < 0 ||
	    set_kvs(out->annotations, NULL, &ru->annotations) < 0 ||
	    set_kvs(out->extended_resources, NULL, &ru->ers) < 0)
		return -FB_ENOMEM;
	for (size_t i = 0; i < ru->taints.n; i++) {
		const char *effect = ru->taints.v[i], *value = effect + strlen(effect) + 1;
		struct json *t = json_new_object();

		if (!t)
			return -FB_ENOMEM;
		if (json_set_str(t, "key", ru->taints.k[i]) < 0 ||
		    (*value && json_set_str(t, "value", value) < 0) ||
		    json_set_str(t, "effect", effect) < 0) {
			json_free(t);
			return -FB_ENOMEM;
		}
		if (json_append_take(out->taints, t) < 0)
			return -FB_ENOMEM;
	}
	return 0;
}

int rules_run(const struct rules *r, struct features *f, struct rules_out *out, rules_error_fn err, void *ctx)
{
	struct run rn;
	int failed = 0, rc = 0;

	if (json_type(f->root) != JSON_OBJECT)
		return -FB_EINVAL;
	memset(&rn, 0, sizeof(rn));
	buf_init(&rn.lt, 0);
	buf_init(&rn.vt, 0);
	buf_put(&rn.lt, "", 0);
	buf_put(&rn.vt, "", 0);
	if (rn.lt.err || rn.vt.err)
		rc = -FB_ENOMEM;
	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		const struct rule *ru = &r->v[i];

		if (ru->error) {
			failed++;
			if (err)
				err(ctx, r->what, ru->name, ru->error);
			continue;
		}
		rn.msg[0] = '\0';
		rc = run_rule(&rn, ru, f);
		if (rc > 0 && (rc = apply(&rn, ru, f, out)) == 0)
			out->matched++;
		else if (rc == 0 && !backref(f)) /* upstream inserts an empty map */
			rc = -FB_ENOMEM;
		if (rc == -FB_EINVAL) {
			failed++;
			if (err)
				err(ctx, r->what, ru->name, rn.msg);
			rc = 0;
		}
		rc = rc > 0 ? 0 : rc;
	}
	free(rn.md.e);
	free(rn.md.l);
	buf_free(&rn.lt);
	buf_free(&rn.vt);
	return rc < 0 ? rc : failed;
}

int rules_out_init(struct rules_out *o)
{
	o->labels = json_new_object();
	o->annotations = json_new_object();
	o->extended_resources = json_new_object();
	o->taints = json_new_array();
	o->vars = json_new_object();
	o->matched = 0;
	if (o->labels && o->annotations && o->extended_resources && o->taints && o->vars)
		return 0;
	rules_out_free(o);
	return -FB_ENOMEM;
}

void rules_out_free(struct rules_out *o)
{
	json_free(o->labels);
	json_free(o->annotations);
	json_free(o->extended_resources);
	json_free(o->taints);
	json_free(o->vars);
	memset(o, 0, sizeof(*o));
}
