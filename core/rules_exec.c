/* rules_exec: templates run over what a rule's matcher matched (Go's
 * text/template with missingkey=error, and the Sprig functions of the
 * subset): the values, field lookups, Go's truth, the functions, printf,
 * and the walk of the tnode tree rules_tmpl.c built. See rules.c. */
#include "rules_int.h"

#include "err.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_STR, V_INT, V_BOOL, V_ROOT, V_DOM, V_LIST, V_ELEM };

static const char *const kind_names[] = { "string", "int", "bool", "map", "map", "list", "map" };

struct val {
	unsigned char k;
	const char *s;        /* V_STR; V_DOM, V_LIST: the domain */
	size_t len;
	const char *feat;     /* V_LIST */
	long long i;          /* V_INT, V_BOOL */
	const struct elem *e; /* V_ELEM */
	char *own;            /* the heap string s points to, freed with the value */
};

struct tx {
	const struct md *md;
	struct buf *out;
	const char *what;
	char *msg;
};

static int tx_bad(struct tx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tx_bad(struct tx *x, const char *fmt, ...)
{
	char detail[MSG_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return rules_msgf_(x->msg, "%s: %s", x->what, detail);
}

static void val_free(struct val *v)
{
	free(v->own);
	v->own = NULL;
}

static const char *elem_get(const struct elem *e, const char *key)
{
	if (e->inst)
		return json_str(json_get(e->inst, key));
	if (strcmp(key, "Name") == 0)
		return e->name;
	return strcmp(key, "Value") == 0 ? e->value : NULL;
}

static int same_list(const struct mlist *l, const char *dom, const char *feat)
{
	return strcmp(l->dom, dom) == 0 && (!feat || strcmp(l->feat, feat) == 0);
}

/* The i-th element of a list value, NULL past its end. */
static const struct elem *list_at(const struct md *m, const struct val *v, size_t i)
{
	for (size_t k = 0; k < m->nl; k++) {
		if (!same_list(&m->l[k], v->s, v->feat))
			continue;
		if (i < m->l[k].n)
			return &m->e[m->l[k].first + i];
		i -= m->l[k].n;
	}
	return NULL;
}

/* v[key] for the data's maps; NULL key only tests that v is a map */
static int lookup(struct tx *x, struct val *v, const char *key, const char *at, size_t atlen, int index)
{
	const struct md *m = x->md;

	if (v->k == V_ROOT || v->k == V_DOM) {
		for (size_t k = 0; k < m->nl; k++) {
			if (v->k == V_ROOT ? strcmp(m->l[k].dom, key) == 0 : same_list(&m->l[k], v->s, key)) {
				v->s = m->l[k].dom;
				v->feat = m->l[k].feat;
				v->k = v->k == V_ROOT ? V_DOM : V_LIST;
				return 0;
			}
		}
	} else if (v->k == V_ELEM) {
		const char *s = elem_get(v->e, key);

		if (s || index) {
			v->k = V_STR;
			v->s = s ? s : "";
			v->len = strlen(v->s);
			return 0;
		}
	} else {
		return tx_bad(x, "at <%.*s>: can't evaluate field %s in type %s", (int)atlen, at, key,
			      kind_names[v->k]);
	}
	return tx_bad(x, "at <%.*s>: map has no entry for key \"%s\"", (int)atlen, at, key);
}

/* Go's truth: non-empty strings, maps and lists, non-zero numbers, true.
 * A domain exists only because one of its lists does. */
static int truth(const struct md *m, const struct val *v)
{
	switch (v->k) {
	case V_STR:
		return v->len > 0;
	case V_INT:
	case V_BOOL:
		return v->i != 0;
	case V_ROOT:
		return m->nl > 0;
	case V_LIST:
		return list_at(m, v, 0) != NULL;
	case V_ELEM:
		return !v->e->inst || json_child(v->e->inst) != NULL;
	default:
		return 1;
	}
}

static int eval_pipe(struct tx *x, const struct tcmd *c, const struct val *dot, struct val *res);

static int eval_arg(struct tx *x, const struct targ *a, const struct val *dot, struct val *res)
{
	memset(res, 0, sizeof(*res));
	switch (a->kind) {
	case TA_DOT:
	case TA_FIELD:
		*res = *dot;
		res->own = NULL;
		for (size_t i = 0; i < a->nf; i++)
			if (lookup(x, res, a->f[i], a->s, a->len, 0) < 0)
				return -FB_EINVAL;
		return 0;
	case TA_STR:
		res->k = V_STR;
		res->s = a->s;
		res->len = a->len;
		return 0;
	case TA_INT:
	case TA_BOOL:
		res->k = a->kind == TA_INT ? V_INT : V_BOOL;
		res->i = a->i;
		return 0;
	default:
		return eval_pipe(x, a->pipe, dot, res);
	}
}

static int need_str(struct tx *x, const char *fn, const struct val *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].k != V_STR)
			return tx_bad(x, "%s: wrong type for value; expected string; got %s", fn,
				      kind_names[v[i].k]);
	return 0;
}

/* Go's fmt for %s %d %v %% with flags, width and precision; what it
 * prints for a wrong type, a missing or an extra argument. */
static int do_printf(struct tx *x, const struct val *v, size_t n, struct buf *o)
{
	const char *f = v[0].s, *end = f + v[0].len;
	size_t ai = 1;

	while (f < end) {
		char flags[8] = "", verb;
		int width = 0, prec = -1, nf = 0;
		const char *pct = memchr(f, '%', (size_t)(end - f));
		const struct val *a;

		if (!pct)
			pct = end;
		buf_put(o, f, (size_t)(pct - f));
		if ((f = pct) == end)
			break;
		for (f++; f < end && strchr("-+ 0#", *f) && nf < 5; f++)
			flags[nf++] = *f;
		for (; f < end && isdigit((unsigned char)*f) && width < 1000; f++)
			width = width * 10 + (*f - '0');
		if (f < end && *f == '.')
			for (prec = 0, f++; f < end && isdigit((unsigned char)*f) && prec < 1000; f++)
				prec = prec * 10 + (*f - '0');
		if (f == end) {
			buf_put(o, "%!(NOVERB)", 10);
			break;
		}
		verb = *f++;
		if (verb == '%') {
			buf_put(o, "%", 1);
			continue;
		}
		if (!strchr("sdv", verb))
			return tx_bad(x, "printf: verb %%%c is not supported", verb);
		if (ai >= n) {
			buf_printf(o, "%%!%c(MISSING)", verb);
			continue;
		}
		a = &v[ai++];
		if (a->k > V_BOOL)
			return tx_bad(x, "printf: printing a %s is not supported", kind_names[a->k]);
		if ((verb == 's' && a->k != V_STR) || (verb == 'd' && a->k != V_INT)) {
			if (a->k == V_STR)
				buf_printf(o, "%%!%c(string=%.*s)", verb, (int)a->len, a->s);
			else if (a->k == V_INT)
				buf_printf(o, "%%!%c(int=%lld)", verb, a->i);
			else
				buf_printf(o, "%%!%c(bool=%s)", verb, a->i ? "true" : "false");
		} else if (a->k == V_STR) {
			size_t len = prec >= 0 && (size_t)prec < a->len ? (size_t)prec : a->len;

			buf_printf(o, strchr(flags, '-') ? "%-*.*s" : "%*.*s", width, (int)len, a->s);
		} else if (a->k == V_INT) {
			char fmt[24];

			snprintf(fmt, sizeof(fmt), "%%%s%s%s%s*%slld", strchr(flags, '-') ? "-" : "",
				 strchr(flags, '+') ? "+" : "", strchr(flags, ' ') ? " " : "",
				 strchr(flags, '0') ? "0" : "", prec < 0 ? "" : ".*");
			if (prec < 0)
				buf_printf(o, fmt, width, a->i);
			else
				buf_printf(o, fmt, width, prec, a->i);
		} else {
			buf_printf(o, strchr(flags, '-') ? "%-*s" : "%*s", width, a->i ? "true" : "false");
		}
	}
	for (size_t i = ai; i < n; i++) {
		buf_put(o, i == ai ? "%!(EXTRA " : ", ", i == ai ? 9 : 2);
		if (v[i].k == V_STR)
			buf_printf(o, "string=%.*s", (int)v[i].len, v[i].s);
		else if (v[i].k == V_INT)
			buf_printf(o, "int=%lld", v[i].i);
		else if (v[i].k == V_BOOL)
			buf_printf(o, "bool=%s", v[i].i ? "true" : "false");
		else
			buf_printf(o, "%s", kind_names[v[i].k]);
		if (i + 1 == n)
			buf_put(o, ")", 1);
	}
	return 0;
}

static int equal(struct tx *x, const struct val *a, const struct val *b)
{
	if (a->k > V_BOOL || b->k > V_BOOL)
		return tx_bad(x, "eq: invalid type for comparison");
	if (a->k != b->k)
		return tx_bad(x, "eq: incompatible types for comparison");
	if (a->k == V_STR)
		return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
	return a->i == b->i;
}

/* Go's strings.Replace(s, old, new, -1); an empty old inserts new around
 * every UTF-8 character. */
static void replace(struct buf *o, const struct val *old, const struct val *new, const struct val *s)
{
	const char *p = s->s, *end = s->s + s->len;

	while (p < end) {
		const char *hit = old->len ? memmem(p, (size_t)(end - p), old->s, old->len) : p;
		size_t skip = old->len;

		if (!hit) {
			buf_put(o, p, (size_t)(end - p));
			return;
		}
		buf_put(o, p, (size_t)(hit - p));
		buf_put(o, new->s, new->len);
		if (!old->len) {
			unsigned char c = (unsigned char)*hit;

			skip = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
			skip = skip > (size_t)(end - hit) ? (size_t)(end - hit) : skip;
			buf_put(o, hit, skip);
		}
		p = hit + skip;
	}
	if (!old->len)
		buf_put(o, new->s, new->len);
}

/* fn applied to v[0..n); the result in *res. */
static int call(struct tx *x, int fn, struct val *v, size_t n, struct val *res)
{
	static const unsigned char arity[F_COUNT] = { 0, 1, 1, 1, 3, 0, 0, 2, 1, 0, 0, 0 };
	const char *name = rules_fn_names_[fn];
	struct buf o;
	int r;

	if ((arity[fn] && n != arity[fn]) || n < (fn == F_EQ ? 2u : 1u))
		return tx_bad(x, "wrong number of args for %s: got %zu", name, n);
	memset(res, 0, sizeof(*res));
	/* capped like the output: nested functions would otherwise grow as
	 * the product of their arguments' lengths before any check */
	buf_init(&o, TMPL_OUT_MAX);
	switch (fn) {
	case F_LOWER:
	case F_UPPER:
	case F_TRIM: {
		const char *s = v[0].s;
		size_t len = v[0].len;

		if (need_str(x, name, v, 1) < 0)
			return -FB_EINVAL;
		while (fn == F_TRIM && len && isspace((unsigned char)*s)) {
			s++;
			len--;
		}
		while (fn == F_TRIM && len && isspace((unsigned char)s[len - 1]))
			len--;
		buf_put(&o, s, len);
		for (size_t i = 0; fn != F_TRIM && !o.err && i < o.len; i++) {
			unsigned char ch = (unsigned char)o.p[i];

			o.p[i] = (char)(fn == F_LOWER ? tolower(ch) : toupper(ch));
		}
		break;
	}
	case F_REPLACE:
		if (need_str(x, name, v, 3) < 0)
			return -FB_EINVAL;
		buf_put(&o, "", 0);
		replace(&o, &v[0], &v[1], &v[2]);
		break;
	case F_PRINTF:
		if (need_str(x, name, v, 1) < 0)
			return -FB_EINVAL;
		buf_put(&o, "", 0);
		if (do_printf(x, v, n, &o) < 0) {
			buf_free(&o);
			return -FB_EINVAL;
		}
		break;
	case F_EQ:
	case F_NE:
		res->k = V_BOOL;
		for (size_t i = 1; i < n && !res->i; i++)
			if ((r = equal(x, &v[0], &v[i])) < 0)
				return r;
			else
				res->i = r;
		res->i ^= fn == F_NE;
		return 0;
	case F_NOT:
		res->k = V_BOOL;
		res->i = !truth(x->md, &v[0]);
		return 0;
	default: /* F_INDEX */
		*res = v[0];
		v[0].own = NULL;
		for (size_t i = 1; i < n; i++) {
			if (res->k == V_LIST && v[i].k == V_INT) {
				const struct elem *e = NULL;

				if (v[i].i >= 0)
					e = list_at(x->md, res, (size_t)v[i].i);
				if (!e)
					return tx_bad(x, "index: index out of range: %lld", v[i].i);
				res->k = V_ELEM;
				res->e = e;
			} else if (res->k == V_STR || res->k == V_LIST || v[i].k != V_STR) {
				val_free(res);
				return tx_bad(x, "index: cannot index a %s with a %s", kind_names[res->k],
					      kind_names[v[i].k]);
			} else if (lookup(x, res, v[i].s, "index", 5, 1) < 0) {
				return -FB_EINVAL;
			}
		}
		return 0;
	}
	if (o.err == -FB_E2BIG) {
		buf_free(&o);
		return tx_bad(x, "%s: result larger than %d bytes", name, TMPL_OUT_MAX);
	}
	if (!(res->own = buf_take(&o, &res->len)))
		return -FB_ENOMEM;
	res->k = V_STR;
	res->s = res->own;
	return 0;
}

/* One command; piped (owned, may be NULL) is the value from the left. */
static int eval_cmd(struct tx *x, const struct tcmd *c, const struct val *dot, struct val *piped,
		    struct val *res)
{
	struct val v[TMPL_ARGS + 1];
	size_t n = 0, total = c->na + (piped != NULL);
	int rc = 0;

	if ((c->fn == F_AND || c->fn == F_OR) && total == 0)
		return tx_bad(x, "wrong number of args for %s: got 0", rules_fn_names_[c->fn]);
	if (c->fn == F_NONE) {
		if (piped) {
			val_free(piped);
			return tx_bad(x, "can't give argument to non-function %.*s", (int)c->a[0].len,
				      c->a[0].s);
		}
		return eval_arg(x, &c->a[0], dot, res);
	}
	for (size_t i = 0; i < total; i++) {
		if (i < c->na) {
			rc = eval_arg(x, &c->a[i], dot, &v[n]);
		} else {
			v[n] = *piped;
			piped->own = NULL;
		}
		if (rc < 0)
			break;
		n++;
		/* and/or stop at the first false/true argument, as Go's do */
		if ((c->fn == F_AND || c->fn == F_OR) &&
		    (i + 1 == total || truth(x->md, &v[n - 1]) == (c->fn == F_OR))) {
			*res = v[--n];
			break;
		}
	}
	if (rc == 0 && c->fn != F_AND && c->fn != F_OR)
		rc = call(x, c->fn, v, n, res);
	while (n)
		val_free(&v[--n]);
	if (piped)
		val_free(piped);
	return rc;
}

static int eval_pipe(struct tx *x, const struct tcmd *c, const struct val *dot, struct val *res)
{
	struct val prev;
	int rc = 0, have = 0;

	for (; c; c = c->next) {
		if ((rc = eval_cmd(x, c, dot, have ? &prev : NULL, res)) < 0)
			return rc;
		prev = *res;
		have = 1;
	}
	return rc;
}

static int exec_list(struct tx *x, const struct tnode *n, const struct val *dot)
{
	for (; n; n = n->next) {
		const struct tnode *c = n;
		struct val v;
		int rc = 0;

		switch (n->kind) {
		case TN_TEXT:
			buf_put(x->out, n->s, n->len);
			break;
		case TN_PRINT:
			if ((rc = eval_pipe(x, n->pipe, dot, &v)) < 0)
				return rc;
			if (v.k == V_STR)
				buf_put(x->out, v.s, v.len);
			else if (v.k == V_INT)
				buf_printf(x->out, "%lld", v.i);
			else if (v.k == V_BOOL)
				buf_put(x->out, v.i ? "true" : "false", v.i ? 4 : 5);
			else
				rc = tx_bad(x, "printing a %s is not supported (range over it)",
					    kind_names[v.k]);
			val_free(&v);
			break;
		case TN_IF:
			/* an else-if chain is walked here, not recursed into */
			for (;;) {
				int t;

				if ((rc = eval_pipe(x, c->pipe, dot, &v)) < 0)
					return rc;
				t = truth(x->md, &v);
				val_free(&v);
				if (!t && c->alt && c->alt->elif) {
					c = c->alt;
					continue;
				}
				rc = exec_list(x, t ? c->body : c->alt, dot);
				break;
			}
			break;
		case TN_RANGE: {
			const struct elem *e;
			size_t i = 0;

			if ((rc = eval_pipe(x, n->pipe, dot, &v)) < 0)
				return rc;
			val_free(&v);
			if (v.k != V_LIST)
				return tx_bad(x, "range over a %s is not supported", kind_names[v.k]);
			for (; rc == 0 && (e = list_at(x->md, &v, i)); i++) {
				struct val ev = { .k = V_ELEM, .e = e };

				rc = exec_list(x, n->body, &ev);
			}
			if (rc == 0 && i == 0)
				rc = exec_list(x, n->alt, dot);
			break;
		}
		}
		if (rc < 0)
			return rc;
		if (x->out->err)
			return -FB_ENOMEM;
		if (x->out->len > TMPL_OUT_MAX)
			return tx_bad(x, "output longer than 1 MiB");
	}
	return 0;
}

int rules_tmpl_exec_(const struct md *m, const struct tnode *t, const char *what, struct buf *out, char *msg)
{
	struct tx x = { .md = m, .out = out, .what = what, .msg = msg };
	struct val root = { .k = V_ROOT };

	return exec_list(&x, t, &root);
}
