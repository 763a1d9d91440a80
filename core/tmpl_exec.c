/* tmpl_exec: running a parsed template (Go text/template exec.go with
 * missingkey=error): the variable stack, field lookups, function calls with
 * Go's argument checks (untyped constants, wrong types), Go's truth, and the
 * walk of the tnode tree with range/break/continue and template calls. */
#include "tmpl_int.h"

#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTACK 1024
#define BREAK 1
#define CONTINUE 2

const struct tval tmpl_nil_ = { .k = VK_NIL, .type = "<nil>" };

struct var {
	const char *name;
	const struct tval *v;
};

struct run {
	struct tx *x;
	struct var *vars;     /* this template call's stack */
	int nvars;
};

int tmpl_bad_(struct tx *x, const char *fmt, ...)
{
	va_list ap;

	if (x->msg[0])
		return -FB_EINVAL;
	va_start(ap, fmt);
	vsnprintf(x->msg, TMPL_MSG_SIZE, fmt, ap);
	va_end(ap);
	return -FB_EINVAL;
}

struct tval *tmpl_new_(struct tx *x, unsigned char k, const char *type)
{
	struct tval *v = arena_alloc(&x->ar, sizeof(*v));

	if (!v) {
		snprintf(x->msg, TMPL_MSG_SIZE, "out of memory");
		return NULL;
	}
	memset(v, 0, sizeof(*v));
	v->k = k;
	v->type = type;
	return v;
}

const struct tval *tmpl_strn_(struct tx *x, const char *s, size_t len)
{
	struct tval *v = tmpl_new_(x, VK_STR, "string");
	char *d;

	if (!v || !(d = arena_strndup(&x->ar, s, len)))
		return NULL;
	v->s = d;
	v->len = len;
	return v;
}

const struct tval *tmpl_int_(struct tx *x, long long i, const char *type)
{
	struct tval *v = tmpl_new_(x, VK_INT, type);

	if (v)
		v->i = i;
	return v;
}

const struct tval *tmpl_bool_(struct tx *x, int b)
{
	struct tval *v = tmpl_new_(x, VK_BOOL, "bool");

	if (v)
		v->i = b;
	return v;
}

int tmpl_truth_(const struct tval *v)
{
	switch (v->k) {
	case VK_BOOL:
	case VK_INT:
		return v->i != 0;
	case VK_FLOAT:
		return v->f != 0;
	case VK_STR:
		return v->len > 0;
	case VK_LIST:
	case VK_MAP:
		return v->n > 0;
	default:
		return 0;
	}
}

static int oom(struct tx *x)
{
	tmpl_bad_(x, "out of memory");
	return -FB_ENOMEM;
}

/* ---- the data's builders (tmpl.h) ------------------------------------- */

static struct tval *mk(struct arena *ar, unsigned char k, const char *type)
{
	struct tval *v = arena_alloc(ar, sizeof(*v));

	if (v) {
		memset(v, 0, sizeof(*v));
		v->k = k;
		v->type = type;
	}
	return v;
}

struct tval *tmpl_str(struct arena *ar, const char *s)
{
	struct tval *v = mk(ar, VK_STR, "string");

	if (v && !(v->s = arena_strdup(ar, s)))
		return NULL;
	if (v)
		v->len = strlen(s);
	return v;
}

struct tval *tmpl_map(struct arena *ar, const char *type, const struct tval *zero)
{
	struct tval *v = mk(ar, VK_MAP, type);

	if (v)
		v->zero = zero;
	return v;
}

struct tval *tmpl_list(struct arena *ar, const char *type)
{
	return mk(ar, VK_LIST, type);
}

static int grow(struct arena *ar, struct tval *c)
{
	size_t size = c->size ? c->size * 2 : 8;
	struct tval **v = arena_alloc(ar, size * sizeof(*v));
	const char **k = c->k == VK_MAP ? arena_alloc(ar, size * sizeof(*k)) : NULL;

	if (!v || (c->k == VK_MAP && !k))
		return -FB_ENOMEM;
	if (c->n)
		memcpy(v, c->v, c->n * sizeof(*v));
	if (k && c->n)
		memcpy(k, c->key, c->n * sizeof(*k));
	c->v = v;
	c->key = k;
	c->size = size;
	return 0;
}

/* The index of key in map m, or where it would go (*found 0). */
static size_t map_find(const struct tval *m, const char *key, int *found)
{
	size_t lo = 0, hi = m->n;

	*found = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(m->key[mid], key);

		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct tval *tmpl_map_get(const struct tval *m, const char *key)
{
	int found;
	size_t i = map_find(m, key, &found);

	return found ? m->v[i] : NULL;
}

int tmpl_map_put(struct arena *ar, struct tval *map, const char *key, struct tval *v)
{
	int found;
	size_t i = map_find(map, key, &found);

	if (found) {
		map->v[i] = v;
		return 0;
	}
	if (map->n == map->size && grow(ar, map) < 0)
		return -FB_ENOMEM;
	memmove(map->v + i + 1, map->v + i, (map->n - i) * sizeof(*map->v));
	memmove(map->key + i + 1, map->key + i, (map->n - i) * sizeof(*map->key));
	if (!(map->key[i] = arena_strdup(ar, key)))
		return -FB_ENOMEM;
	map->v[i] = v;
	map->n++;
	return 0;
}

int tmpl_list_push(struct arena *ar, struct tval *list, struct tval *v)
{
	if (list->n == list->size && grow(ar, list) < 0)
		return -FB_ENOMEM;
	list->v[list->n++] = v;
	return 0;
}

/* ---- evaluation -------------------------------------------------------- */

static int eval_pipe(struct run *r, const struct tpipe *p, const struct tval *dot, const struct tval **res);

static int step(struct tx *x)
{
	if (x->ar.bytes > TMPL_MEM_MAX)
		return tmpl_bad_(x, "more than %d MiB of values", TMPL_MEM_MAX >> 20);
	if (++x->steps > TMPL_STEPS)
		return tmpl_bad_(x, "more than %ld evaluation steps", TMPL_STEPS);
	return 0;
}

/* v.name for a map v (missingkey=error); at names the operand. */
static int field(struct tx *x, const struct targ *at, const struct tval *v, const char *name,
		 const struct tval **res)
{
	if (v->k == VK_MAP) {
		if (!(*res = tmpl_map_get(v, name)))
			return tmpl_bad_(x, "at <%.*s>: map has no entry for key \"%s\"", (int)at->srclen, at->src,
					 name);
		return 0;
	}
	if (v->k == VK_NIL)
		return tmpl_bad_(x, "at <%.*s>: nil pointer evaluating interface {}.%s", (int)at->srclen, at->src,
				 name);
	return tmpl_bad_(x, "at <%.*s>: can't evaluate field %s in type %s", (int)at->srclen, at->src, name, v->type);
}

static const struct tval *var_get(struct run *r, const char *name)
{
	for (int i = r->nvars; i-- > 0;)
		if (strcmp(r->vars[i].name, name) == 0)
			return r->vars[i].v;
	return NULL;
}

static int var_push(struct run *r, const char *name, const struct tval *v)
{
	if (r->nvars == NSTACK)
		return tmpl_bad_(r->x, "too many variables");
	r->vars[r->nvars].name = name;
	r->vars[r->nvars++].v = v;
	return 0;
}

static int var_set(struct run *r, const char *name, const struct tval *v)
{
	for (int i = r->nvars; i-- > 0;)
		if (strcmp(r->vars[i].name, name) == 0) {
			r->vars[i].v = v;
			return 0;
		}
	return tmpl_bad_(r->x, "undefined variable: %s", name);
}

static int call_fn(struct run *r, const struct targ *fa, const struct targ *args, size_t nargs,
		   const struct tval *dot, const struct tval *final, const struct tval **res);

/* An operand's value (a function named alone is called with no arguments). */
static int eval_arg(struct run *r, const struct targ *a, const struct tval *dot, const struct tval **res)
{
	struct tx *x = r->x;
	const struct tval *v = dot;
	size_t i = 0;
	int rc;

	if ((rc = step(x)) < 0)
		return rc;
	switch (a->kind) {
	case A_DOT:
		break;
	case A_FIELD:
		break;
	case A_VAR:
		if (!(v = var_get(r, a->s)))
			return tmpl_bad_(x, "undefined variable: %s", a->s);
		break;
	case A_STR:
	case A_INT:
	case A_FLOAT:
	case A_BOOL:
		v = a->lit;
		break;
	case A_NIL:
		v = &tmpl_nil_;
		break;
	case A_PIPE:
		if ((rc = eval_pipe(r, a->pipe, dot, &v)) < 0)
			return rc;
		break;
	default:
		if ((rc = call_fn(r, a, NULL, 0, dot, NULL, &v)) < 0)
			return rc;
	}
	for (; i < a->nchain; i++)
		if ((rc = field(x, a, v, a->chain[i], &v)) < 0)
			return rc;
	*res = v;
	return 0;
}

static int is_literal(const struct targ *a)
{
	return a->kind == A_STR || a->kind == A_INT || a->kind == A_FLOAT || a->kind == A_BOOL || a->kind == A_NIL;
}

static const char *literal_text(const struct targ *a, char *buf, size_t size)
{
	snprintf(buf, size, "%.*s", (int)a->srclen, a->src);
	return buf;
}

/* One argument for a parameter of kind p: a (NULL for the piped final). */
static int arg_for(struct run *r, char p, const struct targ *a, const struct tval *dot, const struct tval *final,
		   const struct tval **res)
{
	struct tx *x = r->x;
	const struct tval *v = final;
	char lit[64];
	int rc;

	if (a && is_literal(a)) {
		switch (p) {
		case 's':
			if (a->kind != A_STR)
				return tmpl_bad_(x, "expected string; found %s", literal_text(a, lit, sizeof(lit)));
			break;
		case 'i':
			if (a->kind != A_INT && !(a->kind == A_FLOAT && a->len))
				return tmpl_bad_(x, "expected integer; found %s", literal_text(a, lit, sizeof(lit)));
			return (*res = tmpl_int_(x, a->i, "int")) ? 0 : -FB_ENOMEM;
		case 'b':
			if (a->kind != A_BOOL)
				return tmpl_bad_(x, "expected bool; found %s", literal_text(a, lit, sizeof(lit)));
			break;
		case 'm':
			if (a->kind == A_NIL)
				return (*res = &tmpl_nil_), 0;
			return tmpl_bad_(x, "can't handle %s for arg of type map[string]interface {}",
					 literal_text(a, lit, sizeof(lit)));
		case 'v': /* Go's built-ins take nil */
			break;
		}
		return eval_arg(r, a, dot, res);
	}
	if (a && (rc = eval_arg(r, a, dot, &v)) < 0)
		return rc;
	*res = v;
	if (v->k == VK_NIL) {
		if (p == 's' || p == 'i' || p == 'b')
			return tmpl_bad_(x, "invalid value; expected %s", p == 's' ? "string" : p == 'i' ? "int" : "bool");
		return 0;
	}
	if ((p == 's' && strcmp(v->type, "string") != 0) || (p == 'i' && strcmp(v->type, "int") != 0) ||
	    (p == 'b' && v->k != VK_BOOL) || (p == 'm' && strcmp(v->type, "map[string]interface {}") != 0))
		return tmpl_bad_(x, "wrong type for value; expected %s; got %s",
				 p == 's' ? "string" : p == 'i' ? "int" : p == 'b' ? "bool" : "map[string]interface {}",
				 v->type);
	return 0;
}

static int call_fn(struct run *r, const struct targ *fa, const struct targ *args, size_t nargs,
		   const struct tval *dot, const struct tval *final, const struct tval **res)
{
	const struct tfn *fn = fa->fn;
	const struct tval *v[TMPL_ARGS + 1];
	size_t nsig = strlen(fn->sig), fixed = nsig, n = nargs + (final != NULL);
	int variadic = nsig && fn->sig[nsig - 1] == '*', rc;
	struct tx *x = r->x;

	if (variadic)
		fixed = nsig - 2;
	if (!fn->call) { /* and, or */
		/* Go's and/or stop at the first false/true argument */
		if (n == 0)
			return tmpl_bad_(x, "error calling %s: wrong number of args for %s: want at least 1 got 0",
					 fn->name, fn->name);
		for (size_t i = 0; i < n; i++) {
			if (i < nargs && (rc = arg_for(r, 'a', &args[i], dot, NULL, res)) < 0)
				return rc;
			if (i == nargs)
				*res = final;
			if (i + 1 < n && tmpl_truth_(*res) == (fn->name[0] == 'o'))
				break;
		}
		return 0;
	}
	if ((!variadic && n != fixed) || (variadic && n < fixed)) {
		if (variadic)
			return tmpl_bad_(x, "wrong number of args for %s: want at least %zu got %zu", fn->name, fixed, n);
		return tmpl_bad_(x, "wrong number of args for %s: want %zu got %zu", fn->name, fixed, n);
	}
	for (size_t i = 0; i < n; i++) {
		char p = i < fixed ? fn->sig[i] : fn->sig[nsig - 2];

		if ((rc = arg_for(r, p, i < nargs ? &args[i] : NULL, dot, final, &v[i])) < 0)
			return rc;
	}
	if ((rc = step(x)) < 0)
		return rc;
	if ((rc = fn->call(x, v, n, res)) < 0) {
		if (rc == -FB_ENOMEM)
			return oom(x);
		if (strncmp(x->msg, "error calling", 13) != 0) {
			char m[TMPL_MSG_SIZE];

			snprintf(m, sizeof(m), "%s", x->msg);
			snprintf(x->msg, TMPL_MSG_SIZE, "error calling %s: %.200s", fn->name, m);
		}
	}
	return rc;
}

static int eval_cmd(struct run *r, const struct tcmd *c, const struct tval *dot, const struct tval *final,
		    const struct tval **res)
{
	const struct targ *a = &c->a[0];

	if (a->kind == A_FN && a->nchain == 0)
		return call_fn(r, a, c->a + 1, c->na - 1, dot, final, res);
	if (c->na > 1 || final) {
		if (a->kind == A_FIELD || (a->kind == A_VAR && a->nchain))
			return tmpl_bad_(r->x, "at <%.*s>: %s is not a method but has arguments", (int)a->srclen, a->src,
					 a->chain[a->nchain - 1]);
		return tmpl_bad_(r->x, "at <%.*s>: can't give argument to non-function %.*s", (int)a->srclen, a->src,
				 (int)a->srclen, a->src);
	}
	if (a->kind == A_NIL)
		return tmpl_bad_(r->x, "nil is not a command");
	return eval_arg(r, a, dot, res);
}

static int eval_pipe(struct run *r, const struct tpipe *p, const struct tval *dot, const struct tval **res)
{
	const struct tval *v = NULL;
	int rc;

	for (const struct tcmd *c = p->cmd; c; c = c->next)
		if ((rc = eval_cmd(r, c, dot, v, &v)) < 0)
			return rc;
	for (int i = 0; i < p->ndecl; i++)
		if ((rc = p->assign ? var_set(r, p->decl[i], v) : var_push(r, p->decl[i], v)) < 0)
			return rc;
	*res = v;
	return 0;
}

static int walk(struct run *r, const struct tnode *n, const struct tval *dot);

static int walk_template(struct run *r, const struct tnode *n, const struct tval *dot)
{
	struct tx *x = r->x;
	const struct tdef *d;
	struct run sub = { .x = x };
	const struct tval *v = &tmpl_nil_;
	int rc;

	for (d = x->t->defs; d && strcmp(d->name, n->s) != 0; d = d->next)
		;
	if (!d)
		return tmpl_bad_(x, "line %d: no such template \"%s\"", n->line, n->s);
	if (n->pipe && (rc = eval_pipe(r, n->pipe, dot, &v)) < 0)
		return rc;
	if (x->depth >= TMPL_DEPTH)
		return tmpl_bad_(x, "line %d: exceeded maximum template depth (%d)", n->line, TMPL_DEPTH);
	if (!(sub.vars = calloc(NSTACK, sizeof(*sub.vars))))
		return oom(x);
	sub.vars[sub.nvars].name = "$";
	sub.vars[sub.nvars++].v = v;
	x->depth++;
	rc = walk(&sub, d->body, v);
	x->depth--;
	free(sub.vars);
	return rc < 0 ? rc : 0;
}

static int walk_range(struct run *r, const struct tnode *n, const struct tval *dot)
{
	struct tx *x = r->x;
	const struct tval *v;
	int mark = r->nvars, rc;

	if ((rc = eval_pipe(r, n->pipe, dot, &v)) < 0)
		return rc;
	if (v->k != VK_LIST && v->k != VK_MAP && v->k != VK_NIL) {
		struct buf b;

		buf_init(&b, 64);
		tmpl_print_(&b, v, 0);
		rc = tmpl_bad_(x, "line %d: range can't iterate over %s", n->line, b.p ? b.p : "");
		buf_free(&b);
		return rc;
	}
	for (size_t i = 0; i < v->n; i++) {
		const struct tval *key = NULL;
		int inner = r->nvars;

		if ((rc = step(x)) < 0)
			return rc;
		if (n->pipe->ndecl > 1 && !(key = v->k == VK_MAP ? tmpl_strn_(x, v->key[i], strlen(v->key[i]))
								  : tmpl_int_(x, (long long)i, "int")))
			return oom(x);
		if (n->pipe->ndecl) {
			const struct tval *first = n->pipe->ndecl > 1 ? key : v->v[i];

			if (n->pipe->assign) {
				if ((rc = var_set(r, n->pipe->decl[0], first)) < 0 ||
				    (n->pipe->ndecl > 1 && (rc = var_set(r, n->pipe->decl[1], v->v[i])) < 0))
					return rc;
			} else {
				r->vars[r->nvars - 1].v = v->v[i];
				if (n->pipe->ndecl > 1)
					r->vars[r->nvars - 2].v = key;
			}
		}
		rc = walk(r, n->body, v->v[i]);
		r->nvars = inner;
		if (rc < 0)
			return rc;
		if (rc == BREAK)
			break;
	}
	if (v->n == 0 && n->alt && (rc = walk(r, n->alt, dot)) != 0)
		return rc;
	r->nvars = mark;
	return 0;
}

/* 0, BREAK, CONTINUE, or < 0 */
static int walk(struct run *r, const struct tnode *n, const struct tval *dot)
{
	struct tx *x = r->x;

	for (; n; n = n->next) {
		const struct tval *v;
		int rc = 0, mark = r->nvars;

		if ((rc = step(x)) < 0)
			return rc;
		switch (n->kind) {
		case N_TEXT:
			buf_put(x->out, n->s, n->len);
			break;
		case N_ACTION:
			if ((rc = eval_pipe(r, n->pipe, dot, &v)) < 0)
				return rc;
			if (!n->pipe->ndecl)
				tmpl_print_(x->out, v, 1);
			break;
		case N_IF:
		case N_WITH:
			if ((rc = eval_pipe(r, n->pipe, dot, &v)) < 0)
				return rc;
			if (tmpl_truth_(v))
				rc = walk(r, n->body, n->kind == N_WITH ? v : dot);
			else if (n->alt)
				rc = walk(r, n->alt, dot);
			r->nvars = mark;
			break;
		case N_RANGE:
			rc = walk_range(r, n, dot);
			break;
		case N_TEMPLATE:
			rc = walk_template(r, n, dot);
			break;
		case N_BREAK:
			return BREAK;
		case N_CONTINUE:
			return CONTINUE;
		}
		if (rc != 0)
			return rc;
		if (x->out->err == -FB_E2BIG || x->out->len > TMPL_OUT_MAX)
			return tmpl_bad_(x, "output longer than 1 MiB");
		if (x->out->err)
			return oom(x);
	}
	return 0;
}

int tmpl_exec(const struct tmpl *t, const struct tval *data, struct buf *out, char *msg)
{
	struct tx x = { .t = t, .out = out, .msg = msg };
	struct run r = { .x = &x };
	int rc;

	msg[0] = 0;
	arena_init(&x.ar);
	if (!(r.vars = calloc(NSTACK, sizeof(*r.vars)))) {
		snprintf(msg, TMPL_MSG_SIZE, "out of memory");
		return -FB_ENOMEM;
	}
	r.vars[0].name = "$";
	r.vars[0].v = data;
	r.nvars = 1;
	rc = walk(&r, t->root, data);
	free(r.vars);
	arena_free(&x.ar);
	if (rc < 0 && !msg[0])
		snprintf(msg, TMPL_MSG_SIZE, "out of memory");
	return rc < 0 ? rc : 0;
}
