/* re: RE2 syntax checked and compiled to a Thompson NFA (see re.h).
 * translate() reads the pattern once, refusing what re.h lists, and writes
 * a token string (struct rx's o): T_LIT, T_SET with its 256-bit set, T_BOL,
 * T_EOL, parentheses, T_ALT and T_REP after the atom it repeats. compile()
 * turns the tokens into instructions by recursive descent, repeating an
 * atom by reading its tokens again; re_matches() runs them with one state
 * set per subject position (Pike's simulation without captures). */
#include "re.h"

#include "buf.h"
#include "err.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_LIT = 1, T_SET, T_BOL, T_EOL, T_LP, T_RP, T_ALT, T_REP };
#define REP_INF 0xffff
#define SET_BYTES 32

/* ASCII 1..127 (a C string cannot hold NUL) */
struct cset {
	unsigned char b[16];
};

struct rx {
	const char *p;
	struct buf o;         /* the tokens */
	char *err;
	size_t errsize;
	int failed, icase;
	const char *late;     /* refused once the whole pattern reads well */
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

static int ascii_alpha(int c)
{
	return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

/* Writes the set as one T_SET: folded with (?i) first, then negated (over
 * every byte, newline included, as [^a] in RE2). */
static void emit_set(struct rx *x, const struct cset *cs, int neg)
{
	unsigned char set[SET_BYTES] = { 0 };
	int any = 0;

	for (int c = 1; c < 128; c++) {
		if (!cs_has(cs, c))
			continue;
		any = 1;
		set[c >> 3] |= (unsigned char)(1u << (c & 7));
		if (x->icase && ascii_alpha(c))
			set[(c ^ 0x20) >> 3] |= (unsigned char)(1u << ((c ^ 0x20) & 7));
	}
	if (!any && !neg) {
		fail(x, "empty character class");
		return;
	}
	for (int i = 0; neg && i < SET_BYTES; i++)
		set[i] = (unsigned char)~set[i];
	set[0] &= 0xfe; /* NUL ends the subject */
	buf_putc(&x->o, T_SET);
	buf_put(&x->o, set, sizeof(set));
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
	char t[3] = { T_LIT, (char)c, (char)(x->icase && ascii_alpha(c) ? c ^ 0x20 : c) };

	buf_put(&x->o, t, sizeof(t));
}

/* A T_REP for the quantifier at p (* + ? or a checked {...}). musl's
 * regcomp refused a count over 255 (its RE_DUP_MAX), after the checks
 * here: kept, with its message, so the same patterns are accepted. */
static void emit_rep(struct rx *x, const char *p)
{
	long min = *p == '+', max = *p == '?' ? 1 : REP_INF;
	char *e;

	if (*p == '{') {
		min = max = strtol(p + 1, &e, 10);
		if (*e == ',')
			max = isdigit((unsigned char)e[1]) ? strtol(e + 1, NULL, 10) : REP_INF;
		if ((min > 255 || (max > 255 && max != REP_INF)) && !x->late)
			x->late = "Invalid contents of {}";
	}
	buf_putc(&x->o, T_REP);
	buf_putc(&x->o, (char)(min & 0xff));
	buf_putc(&x->o, (char)(min >> 8));
	buf_putc(&x->o, (char)(max & 0xff));
	buf_putc(&x->o, (char)(max >> 8));
}

#define RE_NEST 100

/* What one open group holds: the most copies a repeat inside it makes
 * (RE2 caps nested products at 1000; compile() copies them), and what its
 * alternatives are made of. musl's regexec, which this replaced, missed
 * matches when an anchor that fails could have been skipped, so a pattern
 * where that can happen was refused, and still is (the same patterns are
 * accepted): an anchored alternative next to one that can match empty
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
				emit_rep(x, x->p);
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
			buf_putc(&x->o, c == '^' ? T_BOL : T_EOL);
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
				buf_putc(&x->o, T_LP);
			} else if (x->p[1] == ':') {
				buf_putc(&x->o, T_LP);
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
			buf_putc(&x->o, T_ALT);
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
			buf_putc(&x->o, T_RP);
			break;
		case '.': {
			struct cset nl = { { 0 } };

			cs_add(&nl, '\n', '\n');
			emit_set(x, &nl, 1);
			break;
		}
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

/* ---- the program ------------------------------------------------------ */

/* I_CHAR: byte c or c2 (its other case with (?i)), then x; I_SET: a byte
 * in the set at sets + y, then x; I_SPLIT: x and y; I_NOP: x; I_BOL, I_EOL:
 * x at the start or end of the subject. */
enum { I_MATCH, I_CHAR, I_SET, I_SPLIT, I_NOP, I_BOL, I_EOL };

struct re_inst {
	unsigned char op, c, c2;
	unsigned x, y;
};

/* A fragment: its first instruction and the list of its exits still to be
 * pointed somewhere, threaded through those exits' x or y fields (2i for
 * prog[i].x, 2i+1 for .y; NONE ends it). */
#define NONE 0xffffffffu

struct frag {
	unsigned start, out;
};

struct cc {
	const unsigned char *t;
	size_t pos, len;
	struct re_inst *prog;
	size_t n, size;
	int rc;
};

static unsigned *slot(struct cc *c, unsigned e)
{
	return e & 1 ? &c->prog[e >> 1].y : &c->prog[e >> 1].x;
}

static void patch(struct cc *c, unsigned out, unsigned to)
{
	while (out != NONE) {
		unsigned *s = slot(c, out);

		out = *s;
		*s = to;
	}
}

static unsigned append(struct cc *c, unsigned a, unsigned b)
{
	unsigned e = a, *s;

	if (a == NONE)
		return b;
	while (*(s = slot(c, e)) != NONE)
		e = *s;
	*s = b;
	return a;
}

/* A new instruction with x (and y) dangling; NONE when out of room. */
static unsigned inst(struct cc *c, int op)
{
	if (c->rc || c->n >= RE_MAX_INST || ARRAY_GROW(c->prog, c->size, c->n + 1) < 0) {
		c->rc = -FB_ENOMEM;
		return NONE;
	}
	c->prog[c->n] = (struct re_inst){ (unsigned char)op, 0, 0, NONE, NONE };
	return (unsigned)c->n++;
}

static struct frag one(struct cc *c, int op)
{
	unsigned i = inst(c, op);

	return (struct frag){ i, i == NONE ? NONE : 2 * i };
}

static struct frag cat(struct cc *c, struct frag a, struct frag b)
{
	if (a.start == NONE)
		return b;
	patch(c, a.out, b.start);
	return (struct frag){ a.start, b.out };
}

/* x* (star), x+ (!star) or x? (quest): a split in front of x or after it */
static struct frag loop(struct cc *c, struct frag f, int star, int quest)
{
	unsigned s = inst(c, I_SPLIT);

	if (s == NONE)
		return f;
	c->prog[s].x = f.start;
	if (quest)
		return (struct frag){ s, append(c, f.out, 2 * s + 1) };
	patch(c, f.out, s);
	return (struct frag){ star ? s : f.start, 2 * s + 1 };
}

static struct frag alt(struct cc *c);

static struct frag atom(struct cc *c)
{
	const unsigned char *t = c->t + c->pos;
	struct frag f;

	switch (*t) {
	case T_LIT:
		f = one(c, I_CHAR);
		if (f.start != NONE) {
			c->prog[f.start].c = t[1];
			c->prog[f.start].c2 = t[2];
		}
		c->pos += 3;
		return f;
	case T_SET:
		f = one(c, I_SET);
		if (f.start != NONE)
			c->prog[f.start].y = (unsigned)(c->pos + 1);
		c->pos += 1 + SET_BYTES;
		return f;
	case T_BOL:
	case T_EOL:
		c->pos++;
		return one(c, *t == T_BOL ? I_BOL : I_EOL);
	default: /* T_LP */
		c->pos++;
		f = alt(c);
		c->pos++; /* T_RP */
		return f;
	}
}

/* An atom and the repeat after it: min copies, then a loop or max - min
 * optional ones, each copy compiled again from the atom's tokens. */
static struct frag repeated(struct cc *c)
{
	size_t at = c->pos, n0 = c->n;
	struct frag f = atom(c), r = { NONE, NONE };
	const unsigned char *t = c->t + c->pos;
	unsigned min, max;

	if (c->pos >= c->len || *t != T_REP)
		return f;
	min = t[1] | (unsigned)t[2] << 8;
	max = t[3] | (unsigned)t[4] << 8;
	c->pos += 5;
	if (max == 0) {
		c->n = n0; /* x{0}: nothing */
		return one(c, I_NOP);
	}
	for (unsigned i = 0; i < (max == REP_INF ? (min ? min : 1) : max) && !c->rc; i++) {
		size_t end = c->pos;
		struct frag k = f;

		if (i > 0) {
			c->pos = at;
			k = atom(c);
			c->pos = end;
		}
		if (max == REP_INF && i + 1 >= min)
			k = loop(c, k, min == 0, 0);
		else if (i >= min)
			k = loop(c, k, 0, 1);
		r = cat(c, r, k);
	}
	return r;
}

static struct frag seq(struct cc *c)
{
	struct frag f = { NONE, NONE };

	while (c->pos < c->len && c->t[c->pos] != T_ALT && c->t[c->pos] != T_RP && !c->rc)
		f = cat(c, f, repeated(c));
	return f.start == NONE ? one(c, I_NOP) : f;
}

static struct frag alt(struct cc *c)
{
	struct frag f = seq(c);

	while (c->pos < c->len && c->t[c->pos] == T_ALT && !c->rc) {
		struct frag g;
		unsigned s;

		c->pos++;
		g = seq(c);
		if ((s = inst(c, I_SPLIT)) == NONE)
			break;
		c->prog[s].x = f.start;
		c->prog[s].y = g.start;
		/* g's exits are the short list: walking f's, which grows by one
		 * an alternative, made a long alternation quadratic */
		f = (struct frag){ s, append(c, g.out, f.out) };
	}
	return f;
}

int re_compile(struct re *re, const char *pattern, char *err, size_t errsize)
{
	struct rx x = { .p = pattern, .err = err, .errsize = errsize };
	struct cc c = { 0 };
	struct frag f;
	int rc;

	memset(re, 0, sizeof(*re));
	if (err && errsize)
		err[0] = '\0';
	if (strncmp(x.p, "(?i)", 4) == 0) {
		x.icase = 1;
		x.p += 4;
	}
	buf_init(&x.o, 0);
	buf_put(&x.o, "", 0);
	if (translate(&x) < 0 || x.o.err || (x.late && fail(&x, x.late) < 0)) {
		rc = x.o.err ? -FB_ENOMEM : -FB_EINVAL;
		buf_free(&x.o);
		return rc;
	}
	c.t = (const unsigned char *)x.o.p;
	c.len = x.o.len;
	inst(&c, I_NOP); /* 0: where matching starts */
	f = alt(&c);
	patch(&c, f.out, inst(&c, I_MATCH));
	if (c.rc) {
		free(c.prog);
		buf_free(&x.o);
		return c.rc;
	}
	re->prog = c.prog;
	re->n = c.n;
	re->sets = (unsigned char *)buf_take(&x.o, NULL);
	re->mark = calloc(re->n, sizeof(*re->mark) + 3 * sizeof(unsigned));
	if (!re->sets || !re->mark) {
		re_free(re);
		return -FB_ENOMEM;
	}
	re->prog[0].x = f.start;
	return 0;
}

void re_free(struct re *re)
{
	free(re->prog);
	free(re->sets);
	free(re->mark);
	memset(re, 0, sizeof(*re));
}

/* ---- matching ------------------------------------------------------------ */

struct sim {
	const struct re *re;
	const unsigned char *s;
	size_t *mark;         /* the generation an instruction was last added in */
	unsigned *stack;
};

/* Adds what pc leads to at s[pos] without reading a byte: the character
 * and set instructions to list (*n of them); 1 when that reaches the match. */
static int add(struct sim *m, unsigned *list, size_t *n, unsigned pc, size_t pos, size_t gen)
{
	size_t sp = 0;

	m->mark[pc] = gen;
	m->stack[sp++] = pc;
	while (sp) {
		const struct re_inst *i = &m->re->prog[m->stack[--sp]];
		unsigned next[2] = { NONE, NONE };

		switch (i->op) {
		case I_MATCH:
			return 1;
		case I_CHAR:
		case I_SET:
			list[(*n)++] = (unsigned)(i - m->re->prog);
			break;
		case I_SPLIT:
			next[1] = i->y;
			/* fall through */
		case I_NOP:
			next[0] = i->x;
			break;
		case I_BOL:
			next[0] = pos == 0 ? i->x : NONE;
			break;
		default: /* I_EOL */
			next[0] = m->s[pos] == '\0' ? i->x : NONE;
		}
		for (int k = 0; k < 2; k++)
			if (next[k] != NONE && m->mark[next[k]] != gen) {
				m->mark[next[k]] = gen;
				m->stack[sp++] = next[k];
			}
	}
	return 0;
}

int re_matches(const struct re *re, const char *s)
{
	struct sim m = { re, (const unsigned char *)s, NULL, NULL };
	unsigned *cur, *nxt;
	size_t ncur = 0, gen = 1, pos = 0;
	int found;

	if (!re->n)
		return 0;
	/* the state sets were allocated with the program: a match cannot fail */
	m.mark = re->mark;
	memset(m.mark, 0, re->n * sizeof(*m.mark));
	m.stack = (unsigned *)(m.mark + re->n);
	cur = m.stack + re->n;
	nxt = cur + re->n;
	found = add(&m, cur, &ncur, 0, 0, gen);
	while (!found && m.s[pos]) {
		unsigned char b = m.s[pos];
		size_t nnxt = 0;

		gen++;
		for (size_t k = 0; k < ncur && !found; k++) {
			const struct re_inst *i = &re->prog[cur[k]];

			if (i->op == I_CHAR ? b == i->c || b == i->c2 : re->sets[i->y + b / 8] >> (b % 8) & 1)
				found = add(&m, nxt, &nnxt, i->x, pos + 1, gen);
		}
		pos++;
		if (!found)
			found = add(&m, nxt, &nnxt, 0, pos, gen);
		cur = nxt;
		nxt = cur == m.stack + re->n ? cur + re->n : m.stack + re->n;
		ncur = nnxt;
	}
	return found;
}
