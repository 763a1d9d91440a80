/* tmpl_fn: text/template's built-in functions (funcs.go) with Go's type
 * rules and errors, strconv's integer syntax, and the lookup of a name in
 * the built-ins and then the Sprig functions (tmpl_sprig.c). */
#include "tmpl_int.h"

#include "err.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define take tmpl_take_
#define set_int tmpl_set_int_
#define set_bool tmpl_set_bool_
#define F(name) static int name(struct tx *x, const struct tval **a, size_t n, const struct tval **res)

int tmpl_take_(struct tx *x, struct buf *b, const struct tval **res)
{
	if (b->err == -FB_E2BIG) {
		buf_free(b);
		return tmpl_bad_(x, "result larger than %d bytes", TMPL_OUT_MAX);
	}
	if (b->err) {
		buf_free(b);
		return -FB_ENOMEM;
	}
	*res = tmpl_strn_(x, b->p ? b->p : "", b->len);
	buf_free(b);
	return *res ? 0 : -FB_ENOMEM;
}

int tmpl_set_int_(struct tx *x, long long i, const char *type, const struct tval **res)
{
	return (*res = tmpl_int_(x, i, type)) ? 0 : -FB_ENOMEM;
}

int tmpl_set_bool_(struct tx *x, int b, const struct tval **res)
{
	return (*res = tmpl_bool_(x, b)) ? 0 : -FB_ENOMEM;
}

/* ---- built-ins --------------------------------------------------------- */

F(fn_not)
{
	(void)n;
	return set_bool(x, !tmpl_truth_(a[0]), res);
}

F(fn_len)
{
	(void)n;
	if (a[0]->k == VK_STR)
		return set_int(x, (long long)a[0]->len, "int", res);
	if (a[0]->k == VK_LIST || a[0]->k == VK_MAP)
		return set_int(x, (long long)a[0]->n, "int", res);
	return tmpl_bad_(x, "error calling len: len of type %s", a[0]->type);
}

static int int_kind(const struct tval *v)
{
	return v->k == VK_INT && strcmp(v->type, "bool") != 0;
}

F(fn_index)
{
	const struct tval *v = a[0];

	for (size_t i = 1; i < n; i++) {
		if (v->k == VK_NIL)
			return tmpl_bad_(x, "error calling index: index of untyped nil");
		if (v->k == VK_LIST || v->k == VK_STR) {
			size_t len = v->k == VK_LIST ? v->n : v->len;

			if (!int_kind(a[i]))
				return tmpl_bad_(x, "error calling index: cannot index slice/array with type %s", a[i]->type);
			if (a[i]->i < 0 || (unsigned long long)a[i]->i >= len)
				return tmpl_bad_(x, "error calling index: index out of range: %lld", a[i]->i);
			if (v->k == VK_STR) {
				if (!(v = tmpl_int_(x, (unsigned char)v->s[a[i]->i], "uint8")))
					return -FB_ENOMEM;
			} else {
				v = v->v[a[i]->i];
			}
		} else if (v->k == VK_MAP) {
			const struct tval *e;
			int found = 0;

			if (a[i]->k != VK_STR)
				return tmpl_bad_(x, "error calling index: value has type %s; should be string", a[i]->type);
			for (size_t k = 0; k < v->n && !found; k++)
				if (strcmp(v->key[k], a[i]->s) == 0 && strlen(v->key[k]) == a[i]->len)
					found = 1, e = v->v[k];
			if (!found)
				e = v->zero ? v->zero : &tmpl_nil_;
			v = e;
		} else {
			return tmpl_bad_(x, "error calling index: can't index item of type %s", v->type);
		}
	}
	*res = v;
	return 0;
}

F(fn_slice)
{
	const struct tval *v = a[0];
	long long idx[3] = { 0, 0, 0 };
	size_t len = v->k == VK_STR ? v->len : v->n;
	struct tval *l;

	if (v->k != VK_STR && v->k != VK_LIST)
		return tmpl_bad_(x, "error calling slice: can't slice item of type %s", v->type);
	if (n > 4 || (v->k == VK_STR && n > 3))
		return tmpl_bad_(x, "error calling slice: too many slice indexes: %zu", n - 1);
	idx[1] = (long long)len;
	idx[2] = (long long)len;
	for (size_t i = 1; i < n; i++) {
		if (!int_kind(a[i]))
			return tmpl_bad_(x, "error calling slice: cannot index slice/array with type %s", a[i]->type);
		if (a[i]->i < 0 || a[i]->i > (long long)len)
			return tmpl_bad_(x, "error calling slice: index out of range: %lld", a[i]->i);
		idx[i - 1] = a[i]->i;
	}
	if (idx[0] > idx[1] || idx[1] > idx[2])
		return tmpl_bad_(x, "error calling slice: invalid slice index: %lld > %lld",
				 idx[0] > idx[1] ? idx[0] : idx[1], idx[0] > idx[1] ? idx[1] : idx[2]);
	if (v->k == VK_STR)
		return (*res = tmpl_strn_(x, v->s + idx[0], (size_t)(idx[1] - idx[0]))) ? 0 : -FB_ENOMEM;
	if (!(l = tmpl_new_(x, VK_LIST, v->type)))
		return -FB_ENOMEM;
	l->v = v->n ? v->v + idx[0] : NULL;
	l->n = l->size = (size_t)(idx[1] - idx[0]);
	*res = l;
	return 0;
}

F(fn_print)
{
	struct buf b;

	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	tmpl_sprint_(&b, a, n, 0);
	return take(x, &b, res);
}

F(fn_println)
{
	struct buf b;

	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	tmpl_sprint_(&b, a, n, 1);
	return take(x, &b, res);
}

F(fn_printf)
{
	struct buf b;
	int rc;

	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	if ((rc = tmpl_sprintf_(x, &b, a[0], a + 1, n - 1)) < 0) {
		buf_free(&b);
		return rc;
	}
	return take(x, &b, res);
}

/* text/template's evalArgs: one string argument as is, else fmt.Sprint. */
static void eval_args(struct buf *b, const struct tval **a, size_t n)
{
	if (n == 1 && a[0]->k == VK_STR)
		buf_put(b, a[0]->s, a[0]->len);
	else
		tmpl_sprint_(b, a, n, 0);
}

static int escape(struct tx *x, const struct tval **a, size_t n, const struct tval **res, int how)
{
	struct buf in, b;

	buf_init(&in, TMPL_OUT_MAX);
	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&in, "", 0);
	buf_put(&b, "", 0);
	eval_args(&in, a, n);
	for (size_t i = 0; i < in.len && in.p; i++) {
		unsigned char c = (unsigned char)in.p[i];

		if (how == 'h') {
			const char *r = c == '"' ? "&#34;" : c == '\'' ? "&#39;" : c == '&' ? "&amp;" : c == '<' ? "&lt;"
				      : c == '>' ? "&gt;" : c == 0 ? "\xef\xbf\xbd" : NULL;

			r ? buf_puts(&b, r) : buf_putc(&b, (char)c);
		} else if (how == 'j') {
			size_t rn;
			long r = c >= 0x80 ? tmpl_rune_(in.p + i, in.len - i, &rn) : 0;

			if (c >= 0x80 && r >= 0 && tmpl_printable_(r)) {
				buf_put(&b, in.p + i, rn);
				i += rn - 1;
			} else if (c >= 0x80) {
				buf_printf(&b, "\\u%04lX", r < 0 ? 0xfffdL : r);
				i += rn - 1;
			} else if (c == '\\' || c == '\'' || c == '"')
				buf_printf(&b, "\\%c", c);
			else if (c < ' ' || c == '<' || c == '>' || c == '&' || c == '=')
				buf_printf(&b, "\\u%04X", c);
			else
				buf_putc(&b, (char)c);
		} else {
			if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
				buf_putc(&b, (char)c);
			else if (c == ' ')
				buf_putc(&b, '+');
			else
				buf_printf(&b, "%%%02X", c);
		}
	}
	if (in.err)
		b.err = in.err;
	buf_free(&in);
	return take(x, &b, res);
}

F(fn_html)
{
	return escape(x, a, n, res, 'h');
}

F(fn_js)
{
	return escape(x, a, n, res, 'j');
}

F(fn_urlquery)
{
	return escape(x, a, n, res, 'u');
}

enum { K_BAD, K_BOOL, K_INT, K_UINT, K_FLOAT, K_STRING };

static int basic(const struct tval *v)
{
	switch (v->k) {
	case VK_BOOL:
		return K_BOOL;
	case VK_INT:
		return strncmp(v->type, "uint", 4) == 0 ? K_UINT : K_INT;
	case VK_FLOAT:
		return K_FLOAT;
	case VK_STR:
		return K_STRING;
	default:
		return K_BAD;
	}
}

/* eq of two values: 0/1, or < 0 */
static int eq2(struct tx *x, const struct tval *p, const struct tval *q)
{
	int k1 = basic(p), k2 = basic(q);

	if (k1 != k2) {
		if ((k1 == K_INT && k2 == K_UINT) || (k1 == K_UINT && k2 == K_INT))
			return p->i >= 0 && q->i >= 0 && p->i == q->i;
		if (p->k == VK_NIL || q->k == VK_NIL)
			return 0;
		return tmpl_bad_(x, "error calling eq: incompatible types for comparison");
	}
	switch (k1) {
	case K_BOOL:
	case K_INT:
	case K_UINT:
		return p->i == q->i;
	case K_FLOAT:
		return p->f == q->f;
	case K_STRING:
		return p->len == q->len && memcmp(p->s, q->s, p->len) == 0;
	default:
		if (p->k == VK_NIL || q->k == VK_NIL)
			return p->k == q->k;
		return tmpl_bad_(x, "error calling eq: non-comparable type %s: invalid type for comparison", p->type);
	}
}

F(fn_eq)
{
	int r;

	if (n < 2)
		return tmpl_bad_(x, "error calling eq: missing argument for comparison");
	for (size_t i = 1; i < n; i++)
		if ((r = eq2(x, a[0], a[i])) != 0)
			return r < 0 ? r : set_bool(x, 1, res);
	return set_bool(x, 0, res);
}

F(fn_ne)
{
	int r = eq2(x, a[0], a[1]);

	(void)n;
	return r < 0 ? r : set_bool(x, !r, res);
}

/* lt: 0/1, or < 0 */
static int lt2(struct tx *x, const char *name, const struct tval *p, const struct tval *q)
{
	int k1 = basic(p), k2 = basic(q);

	if (k1 == K_BAD || k1 == K_BOOL || k2 == K_BAD || k2 == K_BOOL)
		return tmpl_bad_(x, "error calling %s: invalid type for comparison", name);
	if (k1 != k2) {
		if (k1 == K_INT && k2 == K_UINT)
			return p->i < 0 || p->i < q->i;
		if (k1 == K_UINT && k2 == K_INT)
			return q->i >= 0 && p->i < q->i;
		return tmpl_bad_(x, "error calling %s: incompatible types for comparison", name);
	}
	if (k1 == K_FLOAT)
		return p->f < q->f;
	if (k1 == K_STRING) {
		int c = memcmp(p->s, q->s, p->len < q->len ? p->len : q->len);

		return c < 0 || (c == 0 && p->len < q->len);
	}
	return p->i < q->i;
}

static int cmp(struct tx *x, const struct tval **a, const struct tval **res, const char *name, int swap, int or_eq)
{
	int r = lt2(x, name, a[swap], a[!swap]), e;

	if (r < 0)
		return r;
	if (!r && or_eq) {
		if ((e = eq2(x, a[0], a[1])) < 0)
			return e;
		r = e;
	}
	return set_bool(x, r, res);
}

F(fn_lt)
{
	(void)n;
	return cmp(x, a, res, "lt", 0, 0);
}

F(fn_le)
{
	(void)n;
	return cmp(x, a, res, "le", 0, 1);
}

F(fn_gt)
{
	(void)n;
	return cmp(x, a, res, "gt", 1, 0);
}

F(fn_ge)
{
	(void)n;
	return cmp(x, a, res, "ge", 1, 1);
}

/* Go's underscoreOK: '_' only between digits (or after a base prefix). */
static int underscore_ok(const char *s, size_t len)
{
	char saw = '^';
	size_t i = 0;
	int hex = 0;

	if (len && (s[0] == '-' || s[0] == '+'))
		s++, len--;
	if (len >= 2 && s[0] == '0' && strchr("bBoOxX", s[1])) {
		i = 2;
		saw = '0';
		hex = s[1] == 'x' || s[1] == 'X';
	}
	for (; i < len; i++) {
		if (isdigit((unsigned char)s[i]) || (hex && isxdigit((unsigned char)s[i]))) {
			saw = '0';
		} else if (s[i] == '_') {
			if (saw != '0')
				return 0;
			saw = '_';
		} else {
			if (saw == '_')
				return 0;
			saw = '!';
		}
	}
	return saw != '_';
}

int tmpl_parse_int_(const char *s, size_t len, long long *out)
{
	unsigned long long u = 0, lim;
	int neg = 0, base = 10, under = 0;
	const char *all = s;
	size_t alllen = len;

	if (len && (s[0] == '-' || s[0] == '+'))
		neg = s[0] == '-', s++, len--;
	if (!len)
		return -1;
	if (s[0] == '0') {
		if (len >= 3 && strchr("bBoOxX", s[1])) {
			base = s[1] == 'b' || s[1] == 'B' ? 2 : s[1] == 'o' || s[1] == 'O' ? 8 : 16;
			s += 2, len -= 2;
		} else {
			base = 8;
			s++, len--;
		}
	}
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i], d = isdigit(c) ? c - '0' : isalpha(c) ? tolower(c) - 'a' + 10 : 99;

		if (c == '_') {
			under = 1;
			continue;
		}
		if (d >= base)
			return -1;
		if (u > (ULLONG_MAX - (unsigned)d) / (unsigned)base)
			u = ULLONG_MAX; /* out of range; the syntax is still checked */
		else
			u = u * (unsigned)base + (unsigned)d;
	}
	if (under && !underscore_ok(all, alllen))
		return -1;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	if (u > lim) {
		*out = neg ? LLONG_MIN : LLONG_MAX;
		return -2;
	}
	*out = neg ? (long long)(0 - u) : (long long)u;
	return 0;
}

const struct tfn tmpl_builtins_[] = {

	{ "and", "a*", NULL },
	{ "or", "a*", NULL },
	{ "not", "v", fn_not },
	{ "len", "v", fn_len },
	{ "index", "vv*", fn_index },
	{ "slice", "vv*", fn_slice },
	{ "print", "a*", fn_print },
	{ "printf", "sa*", fn_printf },
	{ "println", "a*", fn_println },
	{ "html", "a*", fn_html },
	{ "js", "a*", fn_js },
	{ "urlquery", "a*", fn_urlquery },
	{ "eq", "vv*", fn_eq },
	{ "ne", "vv", fn_ne },
	{ "lt", "vv", fn_lt },
	{ "le", "vv", fn_le },
	{ "gt", "vv", fn_gt },
	{ "ge", "vv", fn_ge },
	{ NULL, NULL, NULL },
};

const struct tfn *tmpl_fn_find_(const char *name, size_t len)
{
	const struct tfn *const tables[] = { tmpl_builtins_, tmpl_sprig_ };

	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const struct tfn *f = tables[t]; f->name; f++)
			if (strlen(f->name) == len && strncmp(f->name, name, len) == 0)
				return f;
	return NULL;
}
