/* tmpl_sprig: the Sprig functions (github.com/Masterminds/sprig/v3, as
 * upstream registers them) that NodeFeatureRules are found to use, with
 * Sprig's semantics: its cast.ToInt64 conversions (failures are 0), its
 * empty, its errors (a panic in Go is an error here):
 * upper lower title trim trimAll trimPrefix trimSuffix replace substr trunc
 * contains hasPrefix hasSuffix repeat quote squote cat nospace indent
 * nindent toString splitList split join list first last rest initial has
 * uniq sortAlpha default empty coalesce ternary add add1 sub mul div mod max
 * min atoi int int64 regexMatch dict get hasKey. upper, lower and title
 * change ASCII letters only. regexMatch takes RE2 as core/re.h compiles
 * it; a pattern it refuses is an error (Sprig: false for a pattern Go
 * refuses). Any other Sprig function is not defined: a parse error. */
#include "tmpl_int.h"

#include "err.h"
#include "re.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(name) static int name(struct tx *x, const struct tval **a, size_t n, const struct tval **res)
#define take tmpl_take_
#define set_int tmpl_set_int_
#define set_bool tmpl_set_bool_

/* ---- Sprig: strings ---------------------------------------------------- */

/* Sprig's strval: a string as is, nil as "<nil>", else fmt's %v. */
static void strval(struct buf *b, const struct tval *v)
{
	tmpl_print_(b, v, 0);
}

static int map_case(struct tx *x, const struct tval *s, const struct tval **res, int how)
{
	struct buf b;
	int word = 0;

	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, s->s, s->len);
	for (size_t i = 0; i < b.len && b.p; i++) {
		unsigned char c = (unsigned char)b.p[i];

		if (how == 'u')
			b.p[i] = (char)toupper(c);
		else if (how == 'l')
			b.p[i] = (char)tolower(c);
		else {
			if (!word && c < 0x80)
				b.p[i] = (char)toupper(c);
			word = c >= 0x80 || isalnum(c) || c == '_';
		}
	}
	return take(x, &b, res);
}

F(fn_upper)
{
	(void)n;
	return map_case(x, a[0], res, 'u');
}

F(fn_lower)
{
	(void)n;
	return map_case(x, a[0], res, 'l');
}

F(fn_title)
{
	(void)n;
	return map_case(x, a[0], res, 't');
}

static int in_set(const struct tval *set, char c)
{
	return set ? memchr(set->s, c, set->len) != NULL : (c == ' ' || (c >= '\t' && c <= '\r'));
}

/* strings.Trim / TrimSpace (set NULL) on s */
static int trim_set(struct tx *x, const struct tval *s, const struct tval *set, const struct tval **res)
{
	size_t b = 0, e = s->len;

	while (b < e && in_set(set, s->s[b]))
		b++;
	while (e > b && in_set(set, s->s[e - 1]))
		e--;
	return (*res = tmpl_strn_(x, s->s + b, e - b)) ? 0 : -FB_ENOMEM;
}

F(fn_trim)
{
	(void)n;
	return trim_set(x, a[0], NULL, res);
}

F(fn_trimall)
{
	(void)n;
	return trim_set(x, a[1], a[0], res);
}

F(fn_trimprefix)
{
	const struct tval *p = a[0], *s = a[1];
	size_t k = p->len <= s->len && memcmp(s->s, p->s, p->len) == 0 ? p->len : 0;

	(void)n;
	return (*res = tmpl_strn_(x, s->s + k, s->len - k)) ? 0 : -FB_ENOMEM;
}

F(fn_trimsuffix)
{
	const struct tval *p = a[0], *s = a[1];
	size_t k = p->len <= s->len && memcmp(s->s + s->len - p->len, p->s, p->len) == 0 ? p->len : 0;

	(void)n;
	return (*res = tmpl_strn_(x, s->s, s->len - k)) ? 0 : -FB_ENOMEM;
}

/* strings.Replace(s, old, new, -1); an empty old inserts new around every
 * UTF-8 character. */
F(fn_replace)
{
	const struct tval *old = a[0], *new = a[1], *s = a[2];
	const char *p = s->s, *end = s->s + s->len;
	struct buf b;

	(void)n;
	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	while (p < end) {
		const char *hit = old->len ? memmem(p, (size_t)(end - p), old->s, old->len) : p;
		size_t skip = old->len;

		if (!hit) {
			buf_put(&b, p, (size_t)(end - p));
			break;
		}
		buf_put(&b, p, (size_t)(hit - p));
		buf_put(&b, new->s, new->len);
		if (!old->len) {
			unsigned char c = (unsigned char)*hit;

			skip = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
			skip = skip > (size_t)(end - hit) ? (size_t)(end - hit) : skip;
			buf_put(&b, hit, skip);
		}
		p = hit + skip;
	}
	if (!old->len)
		buf_put(&b, new->s, new->len);
	return take(x, &b, res);
}

F(fn_substr)
{
	long long st = a[0]->i, en = a[1]->i, len = (long long)a[2]->len;

	(void)n;
	if (st < 0)
		st = 0;
	else if (en < 0 || en > len)
		en = len;
	if (st > en || en > len)
		return tmpl_bad_(x, "error calling substr: slice bounds out of range [%lld:%lld]", st, en);
	return (*res = tmpl_strn_(x, a[2]->s + st, (size_t)(en - st))) ? 0 : -FB_ENOMEM;
}

F(fn_trunc)
{
	long long c = a[0]->i, len = (long long)a[1]->len;

	(void)n;
	if (c < 0 && len + c > 0)
		return (*res = tmpl_strn_(x, a[1]->s + len + c, (size_t)-c)) ? 0 : -FB_ENOMEM;
	if (c >= 0 && len > c)
		return (*res = tmpl_strn_(x, a[1]->s, (size_t)c)) ? 0 : -FB_ENOMEM;
	*res = a[1];
	return 0;
}

static int contains(const struct tval *sub, const struct tval *s, int where)
{
	if (sub->len > s->len)
		return 0;
	if (where == 'p')
		return memcmp(s->s, sub->s, sub->len) == 0;
	if (where == 's')
		return memcmp(s->s + s->len - sub->len, sub->s, sub->len) == 0;
	return sub->len == 0 || memmem(s->s, s->len, sub->s, sub->len) != NULL;
}

F(fn_contains)
{
	(void)n;
	return set_bool(x, contains(a[0], a[1], 'c'), res);
}

F(fn_hasprefix)
{
	(void)n;
	return set_bool(x, contains(a[0], a[1], 'p'), res);
}

F(fn_hassuffix)
{
	(void)n;
	return set_bool(x, contains(a[0], a[1], 's'), res);
}

F(fn_repeat)
{
	struct buf b;

	(void)n;
	if (a[0]->i < 0)
		return tmpl_bad_(x, "error calling repeat: strings: negative Repeat count");
	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	for (long long i = 0; i < a[0]->i && !b.err; i++)
		buf_put(&b, a[1]->s, a[1]->len);
	return take(x, &b, res);
}

static int quote_all(struct tx *x, const struct tval **a, size_t n, const struct tval **res, int single)
{
	struct buf b, s;
	int first = 1;

	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	for (size_t i = 0; i < n; i++) {
		const struct tval *sv;
		const struct tval *one[1];

		if (a[i]->k == VK_NIL)
			continue;
		if (!first)
			buf_putc(&b, ' ');
		first = 0;
		if (single) {
			buf_putc(&b, '\'');
			strval(&b, a[i]);
			buf_putc(&b, '\'');
			continue;
		}
		buf_init(&s, TMPL_OUT_MAX);
		strval(&s, a[i]);
		if (s.err || !(sv = tmpl_strn_(x, s.p ? s.p : "", s.len))) {
			buf_free(&s);
			buf_free(&b);
			return -FB_ENOMEM;
		}
		buf_free(&s);
		one[0] = sv;
		{
			struct tval f = { .k = VK_STR, .type = "string", .s = "%q", .len = 2 };
			int rc = tmpl_sprintf_(x, &b, &f, one, 1);

			if (rc < 0) {
				buf_free(&b);
				return rc;
			}
		}
	}
	return take(x, &b, res);
}

F(fn_quote)
{
	return quote_all(x, a, n, res, 0);
}

F(fn_squote)
{
	return quote_all(x, a, n, res, 1);
}

F(fn_cat)
{
	struct buf b;
	int first = 1;

	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	for (size_t i = 0; i < n; i++) {
		if (a[i]->k == VK_NIL)
			continue;
		if (!first)
			buf_putc(&b, ' ');
		first = 0;
		strval(&b, a[i]);
	}
	return take(x, &b, res);
}

F(fn_nospace)
{
	struct buf b;

	(void)n;
	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	for (size_t i = 0; i < a[0]->len; i++)
		if (!in_set(NULL, a[0]->s[i]))
			buf_putc(&b, a[0]->s[i]);
	return take(x, &b, res);
}

static int indent(struct tx *x, const struct tval **a, const struct tval **res, int nl)
{
	struct buf b;

	if (a[0]->i < 0)
		return tmpl_bad_(x, "error calling %sindent: strings: negative Repeat count", nl ? "n" : "");
	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, nl ? "\n" : "", (size_t)nl);
	for (size_t i = 0; i <= a[1]->len && !b.err; i++) {
		if (i == 0 || a[1]->s[i - 1] == '\n')
			for (long long k = 0; k < a[0]->i && !b.err; k++)
				buf_putc(&b, ' ');
		if (i < a[1]->len)
			buf_putc(&b, a[1]->s[i]);
	}
	return take(x, &b, res);
}

F(fn_indent)
{
	(void)n;
	return indent(x, a, res, 0);
}

F(fn_nindent)
{
	(void)n;
	return indent(x, a, res, 1);
}

F(fn_tostring)
{
	struct buf b;

	(void)n;
	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	strval(&b, a[0]);
	return take(x, &b, res);
}

static int split(struct tx *x, const struct tval **a, const struct tval **res, int as_map)
{
	struct tval *l = as_map ? tmpl_new_(x, VK_MAP, "map[string]string") : tmpl_new_(x, VK_LIST, "[]string");
	const char *p = a[1]->s, *end = p + a[1]->len;
	size_t k = 0;

	if (!l)
		return -FB_ENOMEM;
	if (as_map && !(l->zero = tmpl_strn_(x, "", 0)))
		return -FB_ENOMEM;
	for (;;) {
		const char *hit = a[0]->len ? memmem(p, (size_t)(end - p), a[0]->s, a[0]->len) : NULL;
		size_t len;
		struct tval *s;
		char key[32];

		if (!a[0]->len) /* strings.Split with "": one UTF-8 character each */
			hit = p == end ? NULL : p + ((unsigned char)*p >= 0xf0 ? 4 : (unsigned char)*p >= 0xe0 ? 3
						     : (unsigned char)*p >= 0xc0 ? 2 : 1);
		if (hit > end)
			hit = end;
		len = hit ? (size_t)(hit - p) : (size_t)(end - p);
		if (!a[0]->len && !hit)
			break;
		if (!(s = (struct tval *)tmpl_strn_(x, p, len)))
			return -FB_ENOMEM;
		snprintf(key, sizeof(key), "_%zu", k++);
		if ((as_map ? tmpl_map_put(&x->ar, l, key, s) : tmpl_list_push(&x->ar, l, s)) < 0)
			return -FB_ENOMEM;
		if (!hit)
			break;
		p = hit + a[0]->len;
		if ((k & 1023) == 0 && (x->steps += 1024) > TMPL_STEPS)
			return tmpl_bad_(x, "more than %ld evaluation steps", TMPL_STEPS);
	}
	*res = l;
	return 0;
}

F(fn_splitlist)
{
	(void)n;
	return split(x, a, res, 0);
}

F(fn_split)
{
	(void)n;
	return split(x, a, res, 1);
}

F(fn_join)
{
	struct buf b;
	const struct tval *v = a[1];

	(void)n;
	buf_init(&b, TMPL_OUT_MAX);
	buf_put(&b, "", 0);
	if (v->k == VK_LIST) {
		for (size_t i = 0, first = 1; i < v->n; i++) {
			if (v->v[i]->k == VK_NIL)
				continue;
			if (!first)
				buf_put(&b, a[0]->s, a[0]->len);
			first = 0;
			strval(&b, v->v[i]);
		}
	} else if (v->k != VK_NIL) {
		strval(&b, v);
	}
	return take(x, &b, res);
}

/* ---- Sprig: lists ------------------------------------------------------ */

F(fn_list)
{
	struct tval *l = tmpl_new_(x, VK_LIST, "[]interface {}");

	if (!l)
		return -FB_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (tmpl_list_push(&x->ar, l, (struct tval *)a[i]) < 0)
			return -FB_ENOMEM;
	*res = l;
	return 0;
}

static int need_list(struct tx *x, const char *fn, const struct tval *v)
{
	if (v->k != VK_LIST)
		return tmpl_bad_(x, "error calling %s: Cannot find %s on type %s", fn, fn,
				 v->k == VK_NIL ? "<nil>" : v->k == VK_MAP ? "map" : v->type);
	return 0;
}

F(fn_first)
{
	(void)n;
	if (need_list(x, "first", a[0]) < 0)
		return -FB_EINVAL;
	*res = a[0]->n ? a[0]->v[0] : &tmpl_nil_;
	return 0;
}

F(fn_last)
{
	(void)n;
	if (need_list(x, "last", a[0]) < 0)
		return -FB_EINVAL;
	*res = a[0]->n ? a[0]->v[a[0]->n - 1] : &tmpl_nil_;
	return 0;
}

static int sub_list(struct tx *x, const struct tval *v, size_t from, size_t to, const struct tval **res)
{
	struct tval *l;

	if (!(l = tmpl_new_(x, VK_LIST, "[]interface {}")))
		return -FB_ENOMEM;
	l->v = v->n ? v->v + from : NULL; /* no arithmetic on an empty list's NULL */
	l->n = l->size = to - from;
	*res = l;
	return 0;
}

F(fn_rest)
{
	(void)n;
	if (need_list(x, "rest", a[0]) < 0)
		return -FB_EINVAL;
	return sub_list(x, a[0], a[0]->n ? 1 : 0, a[0]->n, res);
}

F(fn_initial)
{
	(void)n;
	if (need_list(x, "initial", a[0]) < 0)
		return -FB_EINVAL;
	return sub_list(x, a[0], 0, a[0]->n ? a[0]->n - 1 : 0, res);
}

/* reflect.DeepEqual of two values as far as templates see them */
static int deep_equal(const struct tval *p, const struct tval *q)
{
	if (p->k != q->k || strcmp(p->type, q->type) != 0)
		return 0;
	switch (p->k) {
	case VK_NIL:
		return 1;
	case VK_BOOL:
	case VK_INT:
		return p->i == q->i;
	case VK_FLOAT:
		return p->f == q->f;
	case VK_STR:
		return p->len == q->len && memcmp(p->s, q->s, p->len) == 0;
	default:
		if (p->n != q->n)
			return 0;
		for (size_t i = 0; i < p->n; i++)
			if ((p->k == VK_MAP && strcmp(p->key[i], q->key[i]) != 0) || !deep_equal(p->v[i], q->v[i]))
				return 0;
		return 1;
	}
}

F(fn_has)
{
	int found = 0;

	(void)n;
	if (a[1]->k == VK_NIL)
		return set_bool(x, 0, res);
	if (need_list(x, "has", a[1]) < 0)
		return -FB_EINVAL;
	for (size_t i = 0; i < a[1]->n && !found; i++)
		found = deep_equal(a[0], a[1]->v[i]);
	return set_bool(x, found, res);
}

F(fn_uniq)
{
	struct tval *l;

	(void)n;
	if (need_list(x, "uniq", a[0]) < 0)
		return -FB_EINVAL;
	if (!(l = tmpl_new_(x, VK_LIST, "[]interface {}")))
		return -FB_ENOMEM;
	for (size_t i = 0; i < a[0]->n; i++) {
		size_t k = 0;

		if ((x->steps += (long)l->n) > TMPL_STEPS)
			return tmpl_bad_(x, "more than %ld evaluation steps", TMPL_STEPS);
		while (k < l->n && !deep_equal(l->v[k], a[0]->v[i]))
			k++;
		if (k == l->n && tmpl_list_push(&x->ar, l, a[0]->v[i]) < 0)
			return -FB_ENOMEM;
	}
	*res = l;
	return 0;
}

static int cmp_str(const void *p, const void *q)
{
	const struct tval *a = *(struct tval *const *)p, *b = *(struct tval *const *)q;
	int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);

	return c ? c : (a->len > b->len) - (a->len < b->len);
}

F(fn_sortalpha)
{
	struct tval *l = tmpl_new_(x, VK_LIST, "[]string");
	const struct tval *v = a[0];

	(void)n;
	if (!l)
		return -FB_ENOMEM;
	if (v->k != VK_LIST) { /* Sprig: anything else is one string */
		struct buf b;
		const struct tval *s;

		buf_init(&b, TMPL_OUT_MAX);
		buf_put(&b, "", 0);
		strval(&b, v);
		if (take(x, &b, &s) < 0 || tmpl_list_push(&x->ar, l, (struct tval *)s) < 0)
			return -FB_ENOMEM;
		*res = l;
		return 0;
	}
	for (size_t i = 0; i < v->n; i++) {
		struct buf b;
		const struct tval *s;

		if (v->v[i]->k == VK_NIL)
			continue;
		buf_init(&b, TMPL_OUT_MAX);
		buf_put(&b, "", 0);
		strval(&b, v->v[i]);
		if (take(x, &b, &s) < 0 || tmpl_list_push(&x->ar, l, (struct tval *)s) < 0)
			return -FB_ENOMEM;
	}
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_str);
	*res = l;
	return 0;
}

/* ---- Sprig: defaults --------------------------------------------------- */

static int empty(const struct tval *v)
{
	return !tmpl_truth_(v);
}

F(fn_default)
{
	*res = n < 2 || empty(a[1]) ? a[0] : a[1];
	(void)x;
	return 0;
}

F(fn_empty)
{
	(void)n;
	return set_bool(x, empty(a[0]), res);
}

F(fn_coalesce)
{
	(void)x;
	*res = &tmpl_nil_;
	for (size_t i = 0; i < n; i++)
		if (!empty(a[i])) {
			*res = a[i];
			break;
		}
	return 0;
}

F(fn_ternary)
{
	(void)x;
	(void)n;
	*res = a[2]->i ? a[0] : a[1];
	return 0;
}

/* ---- Sprig: numbers (cast.ToInt64: failures are 0) --------------------- */

/* cast.ToInt64 (what Sprig's numbers go through): failures are 0. */
static long long to_int64(const struct tval *v)
{
	char s[64], *e;
	size_t len;
	long long r;

	switch (v->k) {
	case VK_BOOL:
	case VK_INT:
		return v->i;
	case VK_FLOAT:
		return isfinite(v->f) && fabs(v->f) < 9.2e18 ? (long long)v->f : 0;
	case VK_STR:
		len = v->len;
		if (len == 0 || len >= sizeof(s))
			return 0;
		memcpy(s, v->s, len);
		s[len] = 0;
		/* cast's trimZeroDecimal: "12.000" is "12" */
		if ((e = strchr(s, '.')) && e[1] && strspn(e + 1, "0") == strlen(e + 1))
			*e = 0;
		return tmpl_parse_int_(s, strlen(s), &r) == 0 ? r : 0;
	default:
		return 0;
	}
}

static int ret64(struct tx *x, long long v, const struct tval **res)
{
	return set_int(x, v, "int64", res);
}

F(fn_add)
{
	unsigned long long s = 0;

	for (size_t i = 0; i < n; i++)
		s += (unsigned long long)to_int64(a[i]);
	return ret64(x, (long long)s, res);
}

F(fn_add1)
{
	(void)n;
	return ret64(x, (long long)((unsigned long long)to_int64(a[0]) + 1), res);
}

F(fn_sub)
{
	(void)n;
	return ret64(x, (long long)((unsigned long long)to_int64(a[0]) - (unsigned long long)to_int64(a[1])), res);
}

F(fn_mul)
{
	unsigned long long p = (unsigned long long)to_int64(a[0]);

	for (size_t i = 1; i < n; i++)
		p *= (unsigned long long)to_int64(a[i]);
	return ret64(x, (long long)p, res);
}

static int divmod(struct tx *x, const struct tval **a, const struct tval **res, int mod)
{
	long long p = to_int64(a[0]), q = to_int64(a[1]);

	if (q == 0)
		return tmpl_bad_(x, "error calling %s: runtime error: integer divide by zero", mod ? "mod" : "div");
	if (q == -1)
		return ret64(x, mod ? 0 : (long long)(0 - (unsigned long long)p), res);
	return ret64(x, mod ? p % q : p / q, res);
}

F(fn_div)
{
	(void)n;
	return divmod(x, a, res, 0);
}

F(fn_mod)
{
	(void)n;
	return divmod(x, a, res, 1);
}

static int minmax(struct tx *x, const struct tval **a, size_t n, const struct tval **res, int max)
{
	long long r = to_int64(a[0]);

	for (size_t i = 1; i < n; i++) {
		long long v = to_int64(a[i]);

		if (max ? v > r : v < r)
			r = v;
	}
	return ret64(x, r, res);
}

F(fn_max)
{
	return minmax(x, a, n, res, 1);
}

F(fn_min)
{
	return minmax(x, a, n, res, 0);
}

F(fn_atoi)
{
	char s[32], *e;
	long long r;

	(void)n;
	if (a[0]->len == 0 || a[0]->len >= sizeof(s))
		return set_int(x, 0, "int", res);
	memcpy(s, a[0]->s, a[0]->len);
	s[a[0]->len] = 0;
	errno = 0;
	r = strtoll(s, &e, 10);
	/* strconv.Atoi: a range error still gives the clamped value */
	if (*e || (errno && errno != ERANGE) || isspace((unsigned char)s[0]) || e == s)
		r = 0;
	return set_int(x, r, "int", res);
}

F(fn_int)
{
	(void)n;
	return set_int(x, to_int64(a[0]), "int", res);
}

F(fn_int64)
{
	(void)n;
	return ret64(x, to_int64(a[0]), res);
}

/* ---- Sprig: regexp and dicts ------------------------------------------- */

F(fn_regexmatch)
{
	char err[128];
	struct re re;
	int rc, m;

	(void)n;
	if ((rc = re_compile(&re, a[0]->s, err, sizeof(err))) < 0)
		return rc == -FB_ENOMEM ? rc : tmpl_bad_(x, "error calling regexMatch: %s", err);
	m = re_matches(&re, a[1]->s) > 0;
	re_free(&re);
	return set_bool(x, m, res);
}

F(fn_dict)
{
	struct tval *d = tmpl_new_(x, VK_MAP, "map[string]interface {}");

	if (!d)
		return -FB_ENOMEM;
	for (size_t i = 0; i < n; i += 2) {
		struct buf k;
		const struct tval *v = i + 1 < n ? a[i + 1] : tmpl_strn_(x, "", 0);
		int rc;

		buf_init(&k, TMPL_OUT_MAX);
		buf_put(&k, "", 0);
		strval(&k, a[i]);
		if (k.err || !v) {
			buf_free(&k);
			return -FB_ENOMEM;
		}
		rc = tmpl_map_put(&x->ar, d, k.p, (struct tval *)v);
		buf_free(&k);
		if (rc < 0)
			return rc;
	}
	*res = d;
	return 0;
}

static const struct tval *dict_get(const struct tval *d, const struct tval *key)
{
	if (d->k != VK_MAP)
		return NULL;
	for (size_t i = 0; i < d->n; i++)
		if (strlen(d->key[i]) == key->len && memcmp(d->key[i], key->s, key->len) == 0)
			return d->v[i];
	return NULL;
}

F(fn_get)
{
	const struct tval *v = dict_get(a[0], a[1]);

	(void)n;
	if (!v)
		return (*res = tmpl_strn_(x, "", 0)) ? 0 : -FB_ENOMEM;
	*res = v;
	return 0;
}

F(fn_haskey)
{
	(void)n;
	return set_bool(x, dict_get(a[0], a[1]) != NULL, res);
}

const struct tfn tmpl_sprig_[] = {
	{ "upper", "s", fn_upper },
	{ "lower", "s", fn_lower },
	{ "title", "s", fn_title },
	{ "trim", "s", fn_trim },
	{ "trimAll", "ss", fn_trimall },
	{ "trimPrefix", "ss", fn_trimprefix },
	{ "trimSuffix", "ss", fn_trimsuffix },
	{ "replace", "sss", fn_replace },
	{ "substr", "iis", fn_substr },
	{ "trunc", "is", fn_trunc },
	{ "contains", "ss", fn_contains },
	{ "hasPrefix", "ss", fn_hasprefix },
	{ "hasSuffix", "ss", fn_hassuffix },
	{ "repeat", "is", fn_repeat },
	{ "quote", "a*", fn_quote },
	{ "squote", "a*", fn_squote },
	{ "cat", "a*", fn_cat },
	{ "nospace", "s", fn_nospace },
	{ "indent", "is", fn_indent },
	{ "nindent", "is", fn_nindent },
	{ "toString", "a", fn_tostring },
	{ "splitList", "ss", fn_splitlist },
	{ "split", "ss", fn_split },
	{ "join", "sa", fn_join },
	{ "list", "a*", fn_list },
	{ "first", "a", fn_first },
	{ "last", "a", fn_last },
	{ "rest", "a", fn_rest },
	{ "initial", "a", fn_initial },
	{ "has", "aa", fn_has },
	{ "uniq", "a", fn_uniq },
	{ "sortAlpha", "a", fn_sortalpha },
	{ "default", "aa*", fn_default },
	{ "empty", "a", fn_empty },
	{ "coalesce", "a*", fn_coalesce },
	{ "ternary", "aab", fn_ternary },
	{ "add", "a*", fn_add },
	{ "add1", "a", fn_add1 },
	{ "sub", "aa", fn_sub },
	{ "mul", "aa*", fn_mul },
	{ "div", "aa", fn_div },
	{ "mod", "aa", fn_mod },
	{ "max", "aa*", fn_max },
	{ "min", "aa*", fn_min },
	{ "atoi", "s", fn_atoi },
	{ "int", "a", fn_int },
	{ "int64", "a", fn_int64 },
	{ "regexMatch", "ss", fn_regexmatch },
	{ "dict", "a*", fn_dict },
	{ "get", "ms", fn_get },
	{ "hasKey", "ms", fn_haskey },
	{ NULL, NULL, NULL },
};
