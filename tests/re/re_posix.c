/* re_posix: core/re.c as it was before its own matcher (commit b5c1378),
 * kept only as the reference of the differential test (tests/re/diff.sh):
 * RE2 syntax translated to POSIX extended regular expressions for regcomp.
 * Only the entry point is renamed (re_posix_compile).
 * Bracket expressions and the shorthand classes go through a 127-bit set and
 * are written back in the one order ERE reads unambiguously (']' first, '['
 * '^' '-' last), so escapes such as [\]\-] need no case analysis. */
#include "../../core/buf.h"
#include "../../core/err.h"

#include <regex.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ASCII 1..127 (a C string cannot hold NUL) */
struct cset {
	unsigned char b[16];
};

struct rx {
	const char *p;
	struct buf o;
	char *err;
	size_t errsize;
	int failed;
};

/* Records why the pattern is refused (the first reason wins); returns -1. */
static int fail_at(struct rx *x, const char *fmt, const char *what)
{
	if (!x->failed && x->err)
		snprintf(x->err, x->errsize, fmt, what);
	x->failed = 1;
	return -1;
}

static int fail(struct rx *x, const char *msg)
{
	return fail_at(x, "%s", msg);
}

static void cs_add(struct cset *cs, int lo, int hi)
{
	for (int c = lo < 1 ? 1 : lo; c <= hi && c < 128; c++)
		cs->b[c >> 3] |= (unsigned char)(1u << (c & 7));
}

static int cs_has(const struct cset *cs, int c)
{
	return cs->b[c >> 3] >> (c & 7) & 1;
}

static void cs_del(struct cset *cs, int c)
{
	cs->b[c >> 3] &= (unsigned char)~(1u << (c & 7));
}

/* \d \w \s (and upper case: negated) as RE2 defines them: ASCII only. */
static int shorthand(char c, struct cset *cs, int *neg)
{
	switch (tolower((unsigned char)c)) {
	case 'd':
		cs_add(cs, '0', '9');
		break;
	case 'w':
		cs_add(cs, '0', '9');
		cs_add(cs, 'A', 'Z');
		cs_add(cs, 'a', 'z');
		cs_add(cs, '_', '_');
		break;
	case 's':
		cs_add(cs, '\t', '\n');
		cs_add(cs, '\f', '\r');
		cs_add(cs, ' ', ' ');
		break;
	default:
		return 0;
	}
	*neg = isupper((unsigned char)c) != 0;
	return 1;
}

/* Writes the set as one ERE bracket expression (or a lone escaped char). */
static void emit_set(struct rx *x, const struct cset *in, int neg)
{
	struct cset cs = *in;
	int rb = cs_has(&cs, ']'), lb = cs_has(&cs, '['), caret = cs_has(&cs, '^'), dash = cs_has(&cs, '-');
	int rest = 0;

	cs_del(&cs, ']');
	cs_del(&cs, '[');
	cs_del(&cs, '^');
	cs_del(&cs, '-');
	for (int c = 1; c < 128; c++)
		rest |= cs_has(&cs, c);
	if (!neg && !rest && !rb && !lb) {
		/* what is left cannot open a bracket: ^ would negate it */
		if (caret && !dash)
			buf_put(&x->o, "\\^", 2);
		else if (dash && !caret)
			buf_putc(&x->o, '-');
		else if (dash)
			buf_put(&x->o, "[-^]", 4);
		else
			fail(x, "empty character class");
		return;
	}
	buf_put(&x->o, neg ? "[^" : "[", neg ? 2 : 1);
	if (rb)
		buf_putc(&x->o, ']');
	for (int c = 1; c < 128; c++) {
		int e = c;

		if (!cs_has(&cs, c))
			continue;
		while (e + 1 < 128 && cs_has(&cs, e + 1))
			e++;
		buf_putc(&x->o, (char)c);
		if (e > c + 1)
			buf_putc(&x->o, '-');
		if (e > c)
			buf_putc(&x->o, (char)e);
		c = e;
	}
	if (lb)
		buf_putc(&x->o, '[');
	if (caret)
		buf_putc(&x->o, '^');
	if (dash)
		buf_putc(&x->o, '-');
	buf_putc(&x->o, ']');
}

static int hexval(char c)
{
	unsigned char u = (unsigned char)c;

	return isdigit(u) ? u - '0' : isxdigit(u) ? tolower(u) - 'a' + 10 : -1;
}

/* One escaped character after the backslash at x->p[-1]: its byte value,
 * or -2 for a shorthand class (put into cs, *neg set), or -1 (error set). */
static int escape(struct rx *x, struct cset *cs, int *neg)
{
	static const char simple[] = "a\af\fn\nr\rt\tv\v";
	char c = *x->p, what[8];
	const char *s;

	if (!c)
		return fail(x, "trailing backslash");
	x->p++;
	if (shorthand(c, cs, neg))
		return -2;
	if ((s = strchr(simple, c)) && ((s - simple) & 1) == 0)
		return s[1];
	if (c == 'x') {
		int v = 0, n = 0, braced = *x->p == '{';

		x->p += braced;
		while (hexval(*x->p) >= 0 && (braced || n < 2) && v < 0x110000) {
			v = v * 16 + hexval(*x->p++);
			n++;
		}
		if (!n || (braced && *x->p++ != '}') || (!braced && n != 2))
			return fail(x, "invalid escape \\x");
		if (v == 0 || v >= 0x80)
			return fail(x, "\\x escape outside ASCII 1-127 is not supported");
		return v;
	}
	if ((unsigned char)c < 0x80 && ispunct((unsigned char)c))
		return (unsigned char)c;
	snprintf(what, sizeof(what), "\\%c", c);
	return fail_at(x, c == 'b' || c == 'B' ? "%s (word boundary) is not supported"
		    : c == 'p' || c == 'P' ? "%s (Unicode class) is not supported"
					   : "escape %s is not supported", what);
}

static int posix_class(struct rx *x, struct cset *cs)
{
	static const char *const names[] = { "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower",
					     "print", "punct", "space", "upper", "xdigit", "word", "ascii" };
	const char *end = strstr(x->p + 2, ":]");
	size_t n = end ? (size_t)(end - x->p - 2) : 0;
	size_t k;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strlen(names[k]) == n && strncmp(names[k], x->p + 2, n) == 0)
			break;
	if (!end || k == sizeof(names) / sizeof(names[0]))
		return fail(x, "invalid or negated character class [:...:]");
	for (int c = 1; c < 128; c++) {
		static int (*const is[])(int) = { isalnum, isalpha, isblank, iscntrl, isdigit, isgraph,
						  islower, isprint, ispunct, isspace, isupper, isxdigit };
		if (k < 12 ? is[k](c) != 0 : k == 13 || isalnum(c) || c == '_')
			cs_add(cs, c, c);
	}
	x->p = end + 2;
	return 0;
}

/* x->p is just past '['. */
static int bracket(struct rx *x)
{
	static const char nonascii[] = "non-ASCII character in a bracket expression is not supported";
	struct cset cs = { { 0 } };
	int neg = *x->p == '^', first = 1;

	x->p += neg;
	while (first || *x->p != ']') {
		int lo, hi, sneg = 0;

		first = 0;
		if (!*x->p)
			return fail(x, "missing closing ]");
		if (x->p[0] == '[' && x->p[1] == ':') {
			if (posix_class(x, &cs) < 0)
				return -1;
			continue;
		}
		if ((unsigned char)*x->p >= 0x80)
			return fail(x, nonascii);
		lo = *x->p++ == '\\' ? escape(x, &cs, &sneg) : (unsigned char)x->p[-1];
		if (lo == -1)
			return -1;
		if (lo == -2) {
			if (sneg)
				return fail(x, "negated class (\\D \\W \\S) inside a bracket expression is "
					    "not supported");
			continue;
		}
		hi = lo;
		if (x->p[0] == '-' && x->p[1] && x->p[1] != ']') {
			x->p++;
			if ((unsigned char)*x->p >= 0x80)
				return fail(x, nonascii);
			hi = *x->p++ == '\\' ? escape(x, &cs, &sneg) : (unsigned char)x->p[-1];
			if (hi == -1)
				return -1;
			if (hi == -2 || hi < lo)
				return fail(x, "invalid character class range");
		}
		cs_add(&cs, lo, hi);
	}
	x->p++;
	emit_set(x, &cs, neg);
	return 0;
}

/* Length of an RE2 repeat "{n}", "{n,}", "{n,m}" at p, else 0 (then '{' is
 * a literal); *count gets the copies it makes (n, or m when given), or -1
 * when the counts are out of RE2's range (over 1000, or m < n). */
static size_t repeat_len(const char *p, long *count)
{
	const char *q = p + 1;
	long n = 0, m = -1;

	if (!isdigit((unsigned char)*q))
		return 0;
	for (; isdigit((unsigned char)*q); q++)
		n = n > 1000 ? n : n * 10 + (*q - '0');
	if (*q == ',' && isdigit((unsigned char)q[1]))
		for (m = 0, q++; isdigit((unsigned char)*q); q++)
			m = m > 1000 ? m : m * 10 + (*q - '0');
	else if (*q == ',')
		q++;
	else
		m = n;
	if (*q != '}')
		return 0;
	*count = n > 1000 || m > 1000 || (m >= 0 && m < n) ? -1 : m > n ? m : n;
	return (size_t)(q + 1 - p);
}

static void literal(struct rx *x, int c)
{
	if (strchr(".[()*+?{}|^$\\", c))
		buf_putc(&x->o, '\\');
	buf_putc(&x->o, (char)c);
}

#define RE_NEST 100

/* What one open group holds: the most copies a repeat inside it makes
 * (RE2 caps nested products at 1000; regcomp unrolls them), and what its
 * alternatives are made of. musl's regexec misses matches when an anchor
 * that fails could have been skipped, so a pattern where that can happen
 * is refused: an anchored alternative next to one that can match empty
 * ((^|a?), $^|b) or an optional group holding an anchor ((a?^)?, (^a)*).
 * cur describes the alternative being read, alts the ones before it. */
enum { A_ANCH = 1, A_SOLID = 2 };                          /* cur */
enum { G_ANCH = 1, G_EMPTY = 2, G_BAD = 4 };               /* alts */

struct grp {
	long inner;
	unsigned char cur, alts;
};

static void end_alt(struct grp *g)
{
	int anch = g->cur & A_ANCH, empty = !(g->cur & A_SOLID);

	if ((anch && (g->alts & G_EMPTY)) || (empty && (g->alts & G_ANCH)))
		g->alts |= G_BAD;
	g->alts |= (anch ? G_ANCH : 0) | (empty ? G_EMPTY : 0);
	g->cur = 0;
}

static int translate(struct rx *x)
{
	static const char anchor_msg[] = "an anchor (^ $) that may be skipped (in an optional group or next "
					 "to an alternative that can match empty) is not supported";
	struct grp g[RE_NEST + 1] = { { 1, 0, 0 } };
	long last = 1, count = 1;     /* copies of the atom a repeat applies to */
	size_t anchor_at = (size_t)-1; /* where an anchor just written starts */
	unsigned char before = 0;     /* cur before the last atom */
	int can_repeat = 0, after_rep = 0, closed_anchor = 0, depth = 0;

	while (*x->p) {
		char c = *x->p;
		size_t n = 1;

		if (c == '*' || c == '+' || c == '?' || (c == '{' && (n = repeat_len(x->p, &count)))) {
			long min = c == '{' ? strtol(x->p + 1, NULL, 10) : c == '+';

			if (!can_repeat)
				return fail(x, "missing argument to repetition operator");
			if (after_rep)
				return fail(x, "invalid nested repetition operator");
			if (c == '{' && count < 0)
				return fail(x, "invalid repeat count");
			if ((last *= c == '{' ? count : 1) > 1000)
				return fail(x, "invalid repeat count (nested repeats over 1000)");
			if (closed_anchor && min == 0)
				return fail(x, anchor_msg);
			g[depth].inner = last > g[depth].inner ? last : g[depth].inner;
			if (min == 0) /* the atom may be absent now */
				g[depth].cur = (unsigned char)(g[depth].cur & ~A_SOLID) | (before & A_SOLID);
			if (anchor_at == (size_t)-1) {
				buf_put(&x->o, x->p, n);
			} else if (min == 0) { /* a repeated anchor is itself (^+) or nothing (^*) */
				buf_truncate(&x->o, anchor_at);
				g[depth].cur = before;
			}
			x->p += n;
			x->p += *x->p == '?'; /* lazy: same yes/no answer */
			after_rep = 1;
			continue;
		}
		after_rep = closed_anchor = 0;
		can_repeat = 1;
		last = 1;
		anchor_at = (size_t)-1;
		before = g[depth].cur;
		x->p++;
		if (c == '^' || c == '$' || (c == '\\' && (*x->p == 'A' || *x->p == 'z'))) {
			if (c == '\\')
				c = *x->p++ == 'A' ? '^' : '$';
			g[depth].cur |= A_ANCH;
			anchor_at = x->o.len;
			buf_putc(&x->o, c);
			continue;
		}
		if (c != '(' && c != ')' && c != '|')
			g[depth].cur |= A_SOLID;
		switch (c) {
		case '\\': {
			struct cset cs = { { 0 } };
			int neg = 0, v;

			if ((v = escape(x, &cs, &neg)) == -1)
				return -1;
			if (v == -2)
				emit_set(x, &cs, neg);
			else
				literal(x, v);
			break;
		}
		case '[':
			if (bracket(x) < 0)
				return -1;
			break;
		case '(':
			can_repeat = 0;
			if (depth == RE_NEST)
				return fail(x, "expression nests too deeply");
			g[++depth] = (struct grp){ 1, 0, 0 };
			if (*x->p != '?') {
				buf_putc(&x->o, '(');
			} else if (x->p[1] == ':') {
				buf_putc(&x->o, '(');
				x->p += 2;
			} else if (x->p[1] == 'P' || x->p[1] == '<') {
				return fail(x, "named groups (?P<name>...) are not supported");
			} else {
				char what[16];
				size_t len = strcspn(x->p, ")");

				snprintf(what, sizeof(what), "(%.*s)", (int)(len < 10 ? len : 10), x->p);
				if (strcmp(what, "(?i)") == 0)
					return fail(x, "(?i) is only supported at the start");
				return fail_at(x, "%s: flags and groups other than a leading (?i) and "
						  "(?:...) are not supported", what);
			}
			break;
		case '|':
			can_repeat = 0;
			end_alt(&g[depth]);
			buf_putc(&x->o, c);
			break;
		case ')':
			if (depth == 0)
				return fail(x, "unexpected )");
			end_alt(&g[depth]);
			if (g[depth].alts & G_BAD)
				return fail(x, anchor_msg);
			closed_anchor = (g[depth].alts & G_ANCH) != 0;
			last = g[depth].inner;
			g[depth - 1].cur |= closed_anchor ? A_ANCH : 0;
			g[depth - 1].cur |= g[depth].alts & G_EMPTY ? 0 : A_SOLID;
			depth--;
			g[depth].inner = last > g[depth].inner ? last : g[depth].inner;
			buf_putc(&x->o, c);
			break;
		case ']':
			buf_putc(&x->o, c);
			break;
		case '.':
			buf_put(&x->o, "[^\n]", 4);
			break;
		default:
			literal(x, (unsigned char)c);
		}
		if (x->failed)
			return -1;
	}
	if (depth)
		return fail(x, "missing closing )");
	end_alt(&g[0]);
	return g[0].alts & G_BAD ? fail(x, anchor_msg) : 0;
}

int re_posix_compile(regex_t *re, const char *pattern, int cflags, char *err, size_t errsize);

int re_posix_compile(regex_t *re, const char *pattern, int cflags, char *err, size_t errsize)
{
	struct rx x = { .p = pattern, .err = err, .errsize = errsize };
	int rc;

	if (err && errsize)
		err[0] = '\0';
	if (strncmp(x.p, "(?i)", 4) == 0) {
		cflags |= REG_ICASE;
		x.p += 4;
	}
	buf_init(&x.o, 0);
	buf_put(&x.o, "", 0);
	if (translate(&x) < 0 || x.o.err) {
		rc = x.o.err ? -FB_ENOMEM : -FB_EINVAL;
		buf_free(&x.o);
		return rc;
	}
	rc = regcomp(re, x.o.p, cflags | REG_EXTENDED);
	buf_free(&x.o);
	if (rc == REG_ESPACE)
		return -FB_ENOMEM;
	if (rc != 0) {
		if (err && errsize)
			regerror(rc, re, err, errsize);
		return -FB_EINVAL;
	}
	return 0;
}
