/* json: the one door to cJSON (house rule 8). struct json is never defined:
 * a struct json * is a cJSON * under another name, so nothing outside this
 * file can reach cJSON's fields or its global hooks and error pointer.
 *
 * Parsing is two passes. json_check() below walks the bytes once, without
 * recursion, and refuses what is not RFC 8259 JSON with the position and the
 * reason, and what is nested deeper than JSON_MAX_DEPTH (cJSON's own limit is
 * 1000 levels of recursion). cJSON then only ever sees well-formed input, so a
 * failure there is an allocation failure; its position reporting (one offset,
 * clamped at the end, no reason) is never needed.
 *
 * Printing is done here too: cJSON prints a number with 15 significant
 * digits whenever those read back within DBL_EPSILON, which turns
 * 9007199254740991 into 9.00719925474099e+15. json_print writes the shortest
 * form that reads back exactly, so print + parse gives an equal tree.
 *
 * A \u0000 escape: cJSON strings are C strings, so cJSON cuts the string at
 * it. json_check notes which string tokens (keys and values, counted in
 * document order, the order cJSON builds its nodes in) held one, and after
 * the parse those nodes carry a private type bit (JNUL_VALUE, JNUL_NAME), so
 * the cut-short text is never taken for the value: json_type() says
 * JSON_INVALID and json_str() NULL for such a value, json_nul_path() finds
 * either kind, and json_print() writes the text up to the NUL followed by
 * \u0000, so a print and parse round trip keeps the mark (see json.h).
 *
 * Known cJSON traits kept: numbers are doubles (a number beyond their range,
 * 1e400, is refused rather than turned into an infinity; a built one prints
 * as null). */
#include "json.h"

#include <cJSON.h>

#include "buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cJSON reads at most 63 bytes of a number; a longer one would make it stop
 * mid-number, so the check refuses it first. */
#define JSON_NUMBER_MAX 63

/* Type bits of ours, above cJSON's (cJSON_IsReference 256, StringIsConst
 * 512): the string value / the member name held a \u0000 and is cut there. */
#define JNUL_VALUE (1 << 12)
#define JNUL_NAME (1 << 13)

static cJSON *cj(const struct json *j)
{
	return (cJSON *)j;
}

static struct json *js(cJSON *c)
{
	return (struct json *)c;
}

/* ---- the well-formedness check ---------------------------------------- */

struct jchk {
	const char *b;
	size_t len;
	size_t at;       /* where it failed */
	const char *why; /* static text */
	size_t nstr;     /* string tokens (names and values) seen */
	size_t *nul;     /* the ordinals of those that held \u0000 (owned) */
	size_t nnul, nul_size;
};

static int chk_fail(struct jchk *k, size_t at, int code, const char *why)
{
	k->at = at;
	k->why = why;
	return -code;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* A string starting at the quote k->b[*ip]; *ip is left after the closing
 * quote. Surrogates are checked the way cJSON converts them (a high one must
 * be followed by \u and a low one; a lone low one is refused). */
static int chk_string(struct jchk *k, size_t *ip)
{
	size_t start = *ip, i = start + 1;
	unsigned u, lo;
	int nul = 0;

	while (i < k->len) {
		char c = k->b[i];

		if (c == '"') {
			*ip = i + 1;
			if (nul && (ARRAY_GROW(k->nul, k->nul_size, k->nnul + 1) < 0))
				return chk_fail(k, start, FB_ENOMEM, "out of memory");
			if (nul)
				k->nul[k->nnul++] = k->nstr;
			k->nstr++;
			return 0;
		}
		if (c == '\0')
			return chk_fail(k, i, FB_EINVAL, "NUL byte in a string");
		if (c != '\\') {
			i++;
			continue;
		}
		if (i + 1 >= k->len)
			break;
		c = k->b[i + 1];
		if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
		    c == 'r' || c == 't') {
			i += 2;
			continue;
		}
		if (c != 'u')
			return chk_fail(k, i, FB_EINVAL, "invalid escape in a string");
		if (k->len - i < 6)
			break;
		if (hex4(k->b + i + 2, &u) < 0)
			return chk_fail(k, i, FB_EINVAL, "invalid \\u escape");
		if (u >= 0xDC00 && u <= 0xDFFF)
			return chk_fail(k, i, FB_EINVAL, "unpaired UTF-16 surrogate in \\u escape");
		if (u >= 0xD800 && u <= 0xDBFF) {
			size_t j = i + 6; /* the low half's backslash */

			if (j < k->len && k->b[j] != '\\')
				return chk_fail(k, i, FB_EINVAL, "unpaired UTF-16 surrogate in \\u escape");
			if (j + 1 < k->len && k->b[j + 1] != 'u')
				return chk_fail(k, i, FB_EINVAL, "unpaired UTF-16 surrogate in \\u escape");
			if (k->len - j < 6)
				break;
			if (hex4(k->b + j + 2, &lo) < 0)
				return chk_fail(k, j, FB_EINVAL, "invalid \\u escape");
			if (lo < 0xDC00 || lo > 0xDFFF)
				return chk_fail(k, i, FB_EINVAL, "unpaired UTF-16 surrogate in \\u escape");
			i += 6;
		}
		nul |= u == 0;
		i += 6;
	}
	return chk_fail(k, start, FB_EINVAL, "unterminated string");
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int chk_number(struct jchk *k, size_t *ip)
{
	size_t start = *ip, i = start;
	const char *b = k->b;
	char num[JSON_NUMBER_MAX + 1];

	if (i < k->len && b[i] == '-')
		i++;
	if (i >= k->len || !is_digit(b[i]))
		return chk_fail(k, start, FB_EINVAL, "invalid number");
	if (b[i] == '0')
		i++;
	else
		while (i < k->len && is_digit(b[i]))
			i++;
	if (i < k->len && b[i] == '.') {
		if (++i >= k->len || !is_digit(b[i]))
			return chk_fail(k, start, FB_EINVAL, "invalid number");
		while (i < k->len && is_digit(b[i]))
			i++;
	}
	if (i < k->len && (b[i] == 'e' || b[i] == 'E')) {
		i++;
		if (i < k->len && (b[i] == '+' || b[i] == '-'))
			i++;
		if (i >= k->len || !is_digit(b[i]))
			return chk_fail(k, start, FB_EINVAL, "invalid number");
		while (i < k->len && is_digit(b[i]))
			i++;
	}
	if (i - start > JSON_NUMBER_MAX)
		return chk_fail(k, start, FB_EINVAL, "number longer than 63 characters");
	/* 1e400 would become an infinity, which JSON cannot print back */
	memcpy(num, b + start, i - start);
	num[i - start] = '\0';
	if (!isfinite(strtod(num, NULL)))
		return chk_fail(k, start, FB_EINVAL, "number out of range");
	*ip = i;
	return 0;
}

static int chk_literal(struct jchk *k, size_t *ip)
{
	static const char *const lits[] = { "true", "false", "null" };

	for (size_t n = 0; n < sizeof(lits) / sizeof(lits[0]); n++) {
		size_t l = strlen(lits[n]);

		if (k->len - *ip >= l && memcmp(k->b + *ip, lits[n], l) == 0) {
			*ip += l;
			return 0;
		}
	}
	return chk_fail(k, *ip, FB_EINVAL, "invalid value");
}

/* The whole document, iteratively: stack[] holds the open brackets. */
static int json_check(struct jchk *k)
{
	enum { VALUE, VALUE_OR_END, KEY, KEY_OR_END, COLON, NEXT } want = VALUE;
	char stack[JSON_MAX_DEPTH];
	int depth = 0, rc;
	size_t i = 0;

	for (;;) {
		char c;

		while (i < k->len && (k->b[i] == ' ' || k->b[i] == '\t' || k->b[i] == '\n' ||
				      k->b[i] == '\r'))
			i++;
		if (i >= k->len) {
			if (want == NEXT && depth == 0)
				return 0;
			return chk_fail(k, i, FB_EINVAL, want == VALUE && depth == 0 ?
					"empty document" : "unexpected end of input");
		}
		c = k->b[i];
		if (c == '\0')
			return chk_fail(k, i, FB_EINVAL, "NUL byte");
		switch (want) {
		case NEXT:
			if (depth == 0)
				return chk_fail(k, i, FB_EINVAL, "unexpected text after the value");
			if (c == ',') {
				want = stack[depth - 1] == '{' ? KEY : VALUE;
				i++;
				continue;
			}
			if (c == (stack[depth - 1] == '{' ? '}' : ']')) {
				depth--;
				i++;
				continue;
			}
			return chk_fail(k, i, FB_EINVAL,
					stack[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
		case COLON:
			if (c != ':')
				return chk_fail(k, i, FB_EINVAL, "expected ':'");
			want = VALUE;
			i++;
			continue;
		case KEY_OR_END:
		case KEY:
			if (c == '}' && want == KEY_OR_END) {
				depth--;
				want = NEXT;
				i++;
				continue;
			}
			if (c != '"')
				return chk_fail(k, i, FB_EINVAL, "expected a member name in double quotes");
			if ((rc = chk_string(k, &i)) < 0)
				return rc;
			want = COLON;
			continue;
		case VALUE_OR_END:
		case VALUE:
			break;
		}
		if (c == ']' && want == VALUE_OR_END) {
			depth--;
			want = NEXT;
			i++;
			continue;
		}
		if (c == '[' || c == '{') {
			if (depth == JSON_MAX_DEPTH)
				return chk_fail(k, i, FB_EDEPTH, "nested deeper than 64 levels");
			stack[depth++] = c;
			want = c == '{' ? KEY_OR_END : VALUE_OR_END;
			i++;
			continue;
		}
		if (c == '"')
			rc = chk_string(k, &i);
		else if (c == '-' || is_digit(c))
			rc = chk_number(k, &i);
		else if (c == 't' || c == 'f' || c == 'n')
			rc = chk_literal(k, &i);
		else
			rc = chk_fail(k, i, FB_EINVAL, "expected a value");
		if (rc < 0)
			return rc;
		want = NEXT;
	}
}

void json_line_col_(const char *b, size_t off, int *line, int *col)
{
	int l = 1, c = 1;

	for (size_t i = 0; i < off; i++) {
		if (b[i] == '\n') {
			l++;
			c = 1;
		} else if (((unsigned char)b[i] & 0xC0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

struct nulmark {
	const size_t *nul;
	size_t n, i, ord;
};

/* Sets JNUL_* on the nodes whose string tokens json_check noted, walking in
 * document order: a member's name comes before its value. */
static void mark_nul(cJSON *c, struct nulmark *m)
{
	for (; c && m->i < m->n; c = c->next) {
		if (c->string && m->ord++ == m->nul[m->i]) {
			c->type |= JNUL_NAME;
			m->i++;
		}
		if ((c->type & 0xFF) == cJSON_String) {
			if (m->i < m->n && m->ord == m->nul[m->i]) {
				c->type |= JNUL_VALUE;
				m->i++;
			}
			m->ord++;
		} else if (c->child) {
			mark_nul(c->child, m);
		}
	}
}

struct json *json_parse(const char *buf, size_t len, const char *what, struct fb_errinfo *ei)
{
	struct jchk k = { 0 };
	char detail[160];
	const char *end = NULL;
	cJSON *c;
	int rc, line, col;

	/* RFC 8259 lets parsers ignore a byte order mark; cJSON only skips one
	 * when at least two more bytes follow, so it is done here. */
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
		buf += 3;
		len -= 3;
	}
	k.b = buf;
	k.len = len;
	rc = json_check(&k);
	if (rc < 0) {
		free(k.nul);
		json_line_col_(buf, k.at, &line, &col);
		snprintf(detail, sizeof(detail), "line %d column %d: %s", line, col, k.why);
		fb_errinfo_set(ei, -rc, 0, what, detail);
		return NULL;
	}
	c = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (c && k.nnul) {
		struct nulmark m = { k.nul, k.nnul, 0, 0 };

		mark_nul(c, &m);
	}
	free(k.nul);
	if (!c) {
		fb_errinfo_set(ei, FB_ENOMEM, 0, what, NULL);
		return NULL;
	}
	return js(c);
}

void json_free(struct json *j)
{
	cJSON_Delete(cj(j));
}

enum json_type json_type(const struct json *j)
{
	if (!j || (cj(j)->type & JNUL_VALUE))
		return JSON_INVALID;
	switch (cj(j)->type & 0xFF) {
	case cJSON_False:
	case cJSON_True:
		return JSON_BOOL;
	case cJSON_NULL:
		return JSON_NULL;
	case cJSON_Number:
		return JSON_NUMBER;
	case cJSON_String:
		return JSON_STRING;
	case cJSON_Array:
		return JSON_ARRAY;
	case cJSON_Object:
		return JSON_OBJECT;
	default:
		return JSON_INVALID;
	}
}

struct json *json_get(const struct json *j, const char *key)
{
	if (json_type(j) != JSON_OBJECT || !key)
		return NULL;
	return js(cJSON_GetObjectItemCaseSensitive(cj(j), key));
}

struct json *json_getv(const struct json *j, ...)
{
	struct json *cur = (struct json *)j;
	const char *key;
	va_list ap;

	va_start(ap, j);
	while (cur && (key = va_arg(ap, const char *)))
		cur = json_get(cur, key);
	va_end(ap);
	return cur;
}

const char *json_str(const struct json *j)
{
	return json_type(j) == JSON_STRING ? cj(j)->valuestring : NULL;
}

const char *json_get_str(const struct json *j, const char *key, const char *def)
{
	const char *s = json_str(json_get(j, key));

	return s ? s : def;
}

int json_int(const struct json *j, long long *out)
{
	/* 2^53 - 1: past it a double no longer holds every integer, so a
	 * document's 9007199254740993 would arrive here as ...992. */
	const double max = 9007199254740991.0;
	double v;

	if (json_type(j) != JSON_NUMBER)
		return -FB_EINVAL;
	v = cj(j)->valuedouble;
	if (!(v >= -max && v <= max) || v != floor(v))
		return -FB_EINVAL;
	*out = (long long)v;
	return 0;
}

int json_bool(const struct json *j)
{
	if (json_type(j) != JSON_BOOL)
		return -FB_EINVAL;
	return (cj(j)->type & 0xFF) == cJSON_True;
}

size_t json_count(const struct json *j)
{
	size_t n = 0;

	for (struct json *c = json_child(j); c; c = json_next(c))
		n++;
	return n;
}

struct json *json_at(const struct json *j, size_t i)
{
	struct json *c = json_child(j);

	while (c && i--)
		c = json_next(c);
	return c;
}

struct json *json_child(const struct json *j)
{
	enum json_type t = json_type(j);

	return t == JSON_ARRAY || t == JSON_OBJECT ? js(cj(j)->child) : NULL;
}

struct json *json_next(const struct json *j)
{
	return j ? js(cj(j)->next) : NULL;
}

const char *json_key(const struct json *j)
{
	return j ? cj(j)->string : NULL;
}

struct json *json_new_object(void)
{
	return js(cJSON_CreateObject());
}

struct json *json_new_array(void)
{
	return js(cJSON_CreateArray());
}

struct json *json_new_string(const char *s)
{
	return s ? js(cJSON_CreateString(s)) : NULL;
}

struct json *json_new_number(double v)
{
	return js(cJSON_CreateNumber(v));
}

struct json *json_new_bool(int v)
{
	return js(cJSON_CreateBool(v != 0));
}

struct json *json_new_null(void)
{
	return js(cJSON_CreateNull());
}

/* A node that was a member keeps its name in cJSON; one moved into an array
 * or made a root must lose it, or json_key() would report a stale name. */
static void drop_name(cJSON *c)
{
	if (!(c->type & cJSON_StringIsConst))
		cJSON_free(c->string);
	c->string = NULL;
	c->type &= ~(cJSON_StringIsConst | JNUL_NAME);
}

int json_set_take(struct json *obj, const char *key, struct json *val)
{
	cJSON *o = cj(obj), *v = cj(val);
	cJSON_bool ok;

	if (!v)
		return -FB_ENOMEM; /* lets callers pass json_new_*() straight in */
	if (json_type(obj) != JSON_OBJECT || !key || v == o) {
		cJSON_Delete(v);
		return -FB_EINVAL;
	}
	v->type &= ~JNUL_NAME; /* it gets the name key */
	if (cJSON_GetObjectItemCaseSensitive(o, key))
		ok = cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
	else
		ok = cJSON_AddItemToObject(o, key, v);
	if (!ok) {
		cJSON_Delete(v);
		return -FB_ENOMEM;
	}
	return 0;
}

int json_set_str(struct json *obj, const char *key, const char *s)
{
	if (!s)
		return -FB_EINVAL;
	return json_set_take(obj, key, json_new_string(s));
}

int json_add_take(struct json *obj, const char *key, struct json *val)
{
	cJSON *o = cj(obj), *v = cj(val);

	if (!v)
		return -FB_ENOMEM;
	if (json_type(obj) != JSON_OBJECT || !key || v == o) {
		cJSON_Delete(v);
		return -FB_EINVAL;
	}
	v->type &= ~JNUL_NAME;
	if (!cJSON_AddItemToObject(o, key, v)) {
		cJSON_Delete(v);
		return -FB_ENOMEM;
	}
	return 0;
}

int json_append_take(struct json *arr, struct json *val)
{
	cJSON *a = cj(arr), *v = cj(val);

	if (!v)
		return -FB_ENOMEM;
	if (json_type(arr) != JSON_ARRAY || v == a) {
		cJSON_Delete(v);
		return -FB_EINVAL;
	}
	drop_name(v);
	if (!cJSON_AddItemToArray(a, v)) {
		cJSON_Delete(v);
		return -FB_ENOMEM;
	}
	return 0;
}

void json_remove(struct json *obj, const char *key)
{
	/* every member of that name: parsed documents may repeat one */
	while (json_get(obj, key))
		cJSON_DeleteItemFromObjectCaseSensitive(cj(obj), key);
}

struct json *json_dup(const struct json *j)
{
	cJSON *c;

	if (!j)
		return NULL;
	c = cJSON_Duplicate(cj(j), 1);
	if (c)
		drop_name(c);
	return js(c);
}

/* How many members before c in o have c's name. */
static size_t occurrence(const struct json *o, const struct json *c)
{
	size_t n = 0;

	for (struct json *m = json_child(o); m && m != c; m = json_next(m))
		n += strcmp(json_key(m), json_key(c)) == 0;
	return n;
}

/* The n-th (from 0) member of o named key, or NULL. */
static struct json *nth_member(const struct json *o, const char *key, size_t n)
{
	for (struct json *m = json_child(o); m; m = json_next(m))
		if (strcmp(json_key(m), key) == 0 && n-- == 0)
			return m;
	return NULL;
}

int json_equal(const struct json *a, const struct json *b)
{
	enum json_type t = json_type(a);
	struct json *ca, *cb;

	if (a && b && (cj(a)->type & cj(b)->type & JNUL_VALUE)) /* both cut at a NUL */
		return strcmp(cj(a)->valuestring, cj(b)->valuestring) == 0;
	if (t != json_type(b) || t == JSON_INVALID)
		return 0;
	switch (t) {
	case JSON_BOOL:
		return json_bool(a) == json_bool(b);
	case JSON_NUMBER:
		return cj(a)->valuedouble == cj(b)->valuedouble; /* 0 == -0 */
	case JSON_STRING:
		return strcmp(cj(a)->valuestring, cj(b)->valuestring) == 0;
	case JSON_ARRAY:
		for (ca = json_child(a), cb = json_child(b); ca && cb;
		     ca = json_next(ca), cb = json_next(cb))
			if (!json_equal(ca, cb))
				return 0;
		return !ca && !cb;
	case JSON_OBJECT:
		/* same size, and each member equal to the member of b with that
		 * name and that occurrence of it (parsed documents may repeat a
		 * name, and json_get only finds the first): a one-to-one match */
		if (json_count(a) != json_count(b))
			return 0;
		for (ca = json_child(a); ca; ca = json_next(ca))
			if (!json_equal(ca, nth_member(b, json_key(ca), occurrence(a, ca))))
				return 0;
		return 1;
	default:
		return 1; /* null */
	}
}

/* ---- printing --------------------------------------------------------- */

/* json_print_len walks the same printer counting bytes, storing none. */
struct pbuf {
	struct buf b;
	size_t count;   /* count_only: the bytes that would have been put */
	int count_only; /* json_print_len: count the bytes, store none */
};

static void put(struct pbuf *pb, const char *s, size_t n)
{
	if (pb->count_only) {
		if (!pb->b.err)
			pb->count += n;
		return;
	}
	buf_put(&pb->b, s, n);
}

static void put_number(struct pbuf *pb, double v)
{
	char num[32];
	int n = 0;

	if (!isfinite(v)) {
		put(pb, "null", 4);
		return;
	}
	if (v == 0) {
		put(pb, "0", 1); /* also -0, as cJSON prints it */
		return;
	}
	if (v == floor(v) && fabs(v) < 1e17) {
		n = snprintf(num, sizeof(num), "%.0f", v); /* integers in full */
	} else {
		/* the fewest digits that read back as the same double */
		for (int prec = 1; prec <= 17; prec++) {
			n = snprintf(num, sizeof(num), "%.*g", prec, v);
			if (strtod(num, NULL) == v)
				break;
		}
	}
	put(pb, num, (size_t)n);
}

/* The escapes cJSON writes; other bytes (UTF-8 or not) pass through. nul:
 * the string was cut at a \u0000, which is written back after it. */
static void put_string(struct pbuf *pb, const char *s, int nul)
{
	static const char short_esc[] = "\"\"\\\\\bb\ff\nn\rr\tt"; /* byte, letter */
	const char *run = s, *m;

	put(pb, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(pb, run, (size_t)(s - run));
		run = s + 1;
		for (m = short_esc; *m && *m != (char)c; m += 2)
			;
		if (*m) {
			esc[0] = '\\';
			esc[1] = m[1];
			put(pb, esc, 2);
		} else {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(pb, esc, 6);
		}
	}
	put(pb, run, (size_t)(s - run));
	if (nul)
		put(pb, "\\u0000", 6);
	put(pb, "\"", 1);
}

static void put_value(struct pbuf *pb, const struct json *j)
{
	struct json *c;

	if (j && (cj(j)->type & JNUL_VALUE)) {
		put_string(pb, cj(j)->valuestring, 1);
		return;
	}
	switch (json_type(j)) {
	case JSON_NULL:
		put(pb, "null", 4);
		break;
	case JSON_BOOL:
		if (json_bool(j))
			put(pb, "true", 4);
		else
			put(pb, "false", 5);
		break;
	case JSON_NUMBER:
		put_number(pb, cj(j)->valuedouble);
		break;
	case JSON_STRING:
		put_string(pb, cj(j)->valuestring, 0);
		break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		put(pb, json_type(j) == JSON_ARRAY ? "[" : "{", 1);
		for (c = json_child(j); c && !pb->b.err; c = json_next(c)) {
			if (c != json_child(j))
				put(pb, ",", 1);
			if (json_type(j) == JSON_OBJECT) {
				put_string(pb, json_key(c) ? json_key(c) : "", (cj(c)->type & JNUL_NAME) != 0);
				put(pb, ":", 1);
			}
			put_value(pb, c);
		}
		put(pb, json_type(j) == JSON_ARRAY ? "]" : "}", 1);
		break;
	default:
		pb->b.err = -FB_ENOMEM; /* never built here; refuse rather than print nonsense */
		break;
	}
}

char *json_print(const struct json *j, size_t *len)
{
	struct pbuf pb = { .count_only = 0 };

	if (!j)
		return NULL;
	buf_init(&pb.b, 0);
	put_value(&pb, j);
	return buf_take(&pb.b, len);
}

size_t json_print_len(const struct json *j)
{
	struct pbuf pb = { .count_only = 1 };

	if (!j)
		return 0;
	buf_init(&pb.b, 0);
	put_value(&pb, j);
	return pb.count;
}

size_t json_key_print_len(const struct json *member)
{
	struct pbuf pb = { .count_only = 1 };

	if (!member || !json_key(member))
		return 0;
	buf_init(&pb.b, 0);
	put_string(&pb, json_key(member), (cj(member)->type & JNUL_NAME) != 0);
	return pb.count;
}

void json_truncate(struct json *j, size_t n)
{
	enum json_type t = json_type(j);
	cJSON *head, *cut;

	if (t != JSON_ARRAY && t != JSON_OBJECT)
		return;
	head = cj(j)->child;
	for (cut = head; cut && n; n--)
		cut = cut->next;
	if (!cut)
		return;
	if (cut == head) {
		cj(j)->child = NULL;
	} else {
		cut->prev->next = NULL;
		head->prev = cut->prev; /* cJSON keeps the last member in head->prev */
	}
	cut->prev = NULL;
	cJSON_Delete(cut); /* frees cut and every member after it */
}

/* Merge sort of a member list by name (byte order), stable; returns the new
 * head with next pointers set (prev fixed up by the caller). */
static cJSON *sort_members(cJSON *head, size_t n)
{
	cJSON *a, *b, **tail, *out = NULL;
	size_t half = n / 2;

	if (n < 2)
		return head;
	b = head;
	for (size_t i = 1; i < half; i++)
		b = b->next;
	a = head;
	head = b->next;
	b->next = NULL;
	a = sort_members(a, half);
	b = sort_members(head, n - half);
	tail = &out;
	while (a && b) {
		cJSON **take = strcmp(a->string ? a->string : "", b->string ? b->string : "") <= 0 ? &a : &b;

		*tail = *take;
		tail = &(*take)->next;
		*take = (*take)->next;
	}
	*tail = a ? a : b;
	return out;
}

void json_sort_keys(struct json *j)
{
	cJSON *c = cj(j), *prev = NULL;
	size_t n = 0;

	if (!c || !(cJSON_IsObject(c) || cJSON_IsArray(c)))
		return;
	for (cJSON *k = c->child; k; k = k->next) {
		json_sort_keys((struct json *)k);
		n++;
	}
	if (!cJSON_IsObject(c) || n < 2)
		return;
	c->child = sort_members(c->child, n);
	for (cJSON *k = c->child; k; k = k->next) {
		k->prev = prev;
		prev = k;
	}
	c->child->prev = prev; /* cJSON keeps the last item in the first's prev */
}

/* Appends ".name" or "[i]" to the path at *len (cut short when it is full). */
static void path_add(char *path, size_t size, size_t *len, const struct json *c, size_t i)
{
	int n;

	if (!path || *len >= size)
		return;
	n = json_key(c) ? snprintf(path + *len, size - *len, "%s%s", *len ? "." : "", json_key(c))
			: snprintf(path + *len, size - *len, "[%zu]", i);
	*len = n < 0 ? *len : *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

static int nul_walk(const struct json *j, char *path, size_t size, size_t len)
{
	size_t i = 0;

	for (const struct json *c = json_child(j); c; c = json_next(c), i++) {
		size_t l = len;

		path_add(path, size, &l, c, i);
		if ((cj(c)->type & (JNUL_NAME | JNUL_VALUE)) || nul_walk(c, path, size, l))
			return 1;
		if (path)
			path[len] = '\0';
	}
	return 0;
}

int json_nul_path(const struct json *j, char *path, size_t size)
{
	if (path && size)
		path[0] = '\0';
	if (!j)
		return 0;
	if (cj(j)->type & (JNUL_NAME | JNUL_VALUE))
		return 1;
	return nul_walk(j, path && size ? path : NULL, size, 0);
}
