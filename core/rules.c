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
 * - Regular expressions are RE2 translated to POSIX (core/re.h).
 * - Templates are a subset of text/template: text, {{ }} with {{- -}}
 *   trimming, comments, if / else / else if / end, range / else / end over
 *   the matched elements, fields (.Name .Value .<attribute> .<dom>.<feat>),
 *   string, integer and boolean literals, parentheses, pipelines, and the
 *   functions lower upper trim replace printf (%s %d %v %%) eq ne not and
 *   or index. Anything else is a compile error naming it. lower/upper/trim
 *   work on ASCII only.
 * - matchOn (legacy custom rules) is refused. */
#include "rules.h"

#include "err.h"
#include "re.h"

#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MSG_SIZE 256
#define TMPL_SRC_MAX (64 * 1024)
#define TMPL_OUT_MAX (1024 * 1024)
#define TMPL_DEPTH 32
#define TMPL_ARGS 16
#define BACKREF "rule.matched"

/* ---- memory: one arena per compiled list ------------------------------ */

struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

static void *ar_alloc(struct chunk **head, size_t n)
{
	struct chunk *c = *head;
	void *p;

	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!n)
		n = sizeof(max_align_t);
	if (!c || c->size - c->used < n) {
		size_t size = n > 4000 ? n : 4000;

		if (!(c = malloc(sizeof(*c) + size)))
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = *head;
		*head = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return memset(p, 0, n);
}

static char *ar_strndup(struct chunk **head, const char *s, size_t n)
{
	char *d = ar_alloc(head, n + 1);

	if (d)
		memcpy(d, s, n);
	return d;
}

/* a growable NUL-terminated text */
struct buf {
	char *s;
	size_t len, size;
	int oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->size) {
		size_t size = (b->len + n + 1) * 2;
		char *ns = realloc(b->s, size);

		if (!ns) {
			b->oom = 1;
			return;
		}
		b->s = ns;
		b->size = size;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[64], *s = tmp;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(tmp)) {
		if (!(s = malloc((size_t)n + 1))) {
			b->oom = 1;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(s, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	put(b, s, (size_t)n);
	if (s != tmp)
		free(s);
}

static int msgf(char *msg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int msgf(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_SIZE, fmt, ap);
	va_end(ap);
	return -FB_EINVAL;
}

/* ---- compiled form ------------------------------------------------------ */

enum op { OP_ANY, OP_IN, OP_NOTIN, OP_INREGEXP, OP_EXISTS, OP_DNE, OP_GT, OP_GE, OP_LT, OP_LE,
	  OP_GTLT, OP_GELE, OP_ISTRUE, OP_ISFALSE, OP_COUNT };

static const char *const op_names[OP_COUNT] = { "", "In", "NotIn", "InRegexp", "Exists", "DoesNotExist", "Gt",
						"Ge", "Lt", "Le", "GtLt", "GeLe", "IsTrue", "IsFalse" };

/* an integer in v[0], or a version major.minor.patch */
struct num {
	long long v[3];
};

struct expr {
	const char *key;      /* element name; NULL for matchName */
	unsigned char op, version;
	size_t n;             /* values */
	const char **val;     /* In, NotIn */
	regex_t **re;         /* InRegexp */
	struct num num[2];    /* Gt ... GeLe */
};

struct term {
	const char *feature;  /* lower-cased: the lookup key */
	const char *dom, *name; /* as written, split at the first '.': the template names */
	struct expr *ex;      /* matchExpressions (has_ex: given, maybe empty) */
	size_t nex;
	int has_ex;
	struct expr *mname;   /* matchName or NULL */
	int fallible;         /* an expression can fail on a value: evaluate every element */
};

struct matcher {
	struct term *t;
	size_t n;
};

struct kvs {
	const char **k, **v;
	size_t n;
};

struct tnode;

struct rule {
	const char *name, *error;
	struct matcher all, *any;
	size_t nany;
	struct kvs labels, vars, annotations, ers, taints; /* taints: key, value "effect\0value" */
	struct tnode *ltmpl, *vtmpl;
	int has_tmpl;         /* a template source is non-empty (upstream's test) */
};

struct rx {
	struct rx *next;
	regex_t re;
};

struct rules {
	struct chunk *ar;
	struct rx *rx;        /* every compiled regexp, for regfree */
	const char *what;
	struct rule *v;
	size_t n;
};

/* ---- numbers and versions ----------------------------------------------- */

/* strconv.Atoi: optional sign, decimal digits, 64-bit range. */
static int parse_int(const char *s, long long *out)
{
	unsigned long long v = 0, lim;
	int neg = *s == '-';

	s += *s == '-' || *s == '+';
	lim = neg ? (unsigned long long)1 << 63 : ((unsigned long long)1 << 63) - 1;
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > (lim - (unsigned)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (unsigned)(*s - '0');
	}
	*out = neg ? (long long)(0 - v) : (long long)v;
	return 0;
}

/* Masterminds semver's loose form: [v]N[.N[.N]][-pre][+build]; the
 * pre-release and build parts are ignored in comparisons, as upstream. */
static int parse_version(const char *s, struct num *n)
{
	memset(n, 0, sizeof(*n));
	s += *s == 'v';
	for (int i = 0; i < 3; i++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		for (; isdigit((unsigned char)*s); s++) {
			if (n->v[i] > (0x7fffffffffffffffLL - 9) / 10)
				return -1;
			n->v[i] = n->v[i] * 10 + (*s - '0');
		}
		if (*s != '.')
			break;
		if (i == 2)
			return -1;
		s++;
	}
	for (int part = 0; *s && part < 2; part++) {
		if (*s != (part ? '+' : '-'))
			continue;
		if (!isalnum((unsigned char)s[1]) && s[1] != '-' && s[1] != '.')
			return -1;
		for (s++; isalnum((unsigned char)*s) || *s == '-' || *s == '.'; s++)
			;
	}
	return *s ? -1 : 0;
}

static int num_cmp(const struct num *a, const struct num *b)
{
	for (int i = 0; i < 3; i++)
		if (a->v[i] != b->v[i])
			return a->v[i] < b->v[i] ? -1 : 1;
	return 0;
}

/* ---- templates: parsing -------------------------------------------------- */

enum { TN_TEXT, TN_PRINT, TN_IF, TN_RANGE };
enum { TA_FIELD, TA_DOT, TA_STR, TA_INT, TA_BOOL, TA_PIPE };
enum { F_NONE, F_LOWER, F_UPPER, F_TRIM, F_REPLACE, F_PRINTF, F_EQ, F_NE, F_NOT, F_AND, F_OR, F_INDEX,
       F_COUNT };

static const char *const fn_names[F_COUNT] = { "", "lower", "upper", "trim", "replace", "printf",
					       "eq", "ne", "not", "and", "or", "index" };

struct tcmd;

struct targ {
	unsigned char kind;
	const char *s;        /* TA_STR: the text; TA_FIELD: the source, for messages */
	size_t len;
	const char **f;       /* TA_FIELD: the names */
	size_t nf;
	long long i;          /* TA_INT, TA_BOOL */
	struct tcmd *pipe;    /* TA_PIPE */
};

/* one command of a pipeline: fn applied to the args (and the value piped
 * in), or (F_NONE) the one operand a[0] */
struct tcmd {
	struct tcmd *next;
	int fn;
	struct targ *a;
	size_t na;
};

struct tnode {
	struct tnode *next, *body, *alt;
	unsigned char kind, elif; /* elif: this if is the "else if" of the one before */
	const char *s;        /* TN_TEXT */
	size_t len;
	struct tcmd *pipe;    /* TN_PRINT, TN_IF, TN_RANGE */
};

enum { K_CLOSE, K_PIPE, K_LP, K_RP, K_FIELD, K_DOT, K_IDENT, K_STR, K_NUM };
enum { T_EOF, T_END, T_ELSE, T_ELSEIF };

struct tok {
	int k;
	const char *s;
	size_t len;
};

struct tp {
	struct chunk **ar;
	const char *src, *p, *what;
	int rtrim, depth;
	char *msg;
};

static int tp_bad(struct tp *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tp_bad(struct tp *t, const char *fmt, ...)
{
	char detail[MSG_SIZE];
	int line = 1;
	va_list ap;

	for (const char *s = t->src; s < t->p; s++)
		line += *s == '\n';
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return msgf(t->msg, "%s: line %d: %s", t->what, line, detail);
}

static int tspace(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* A quoted ("..." with Go escapes) or raw (`...`) string at p. */
static int lex_string(struct tp *t, struct tok *k, const char *p)
{
	char q = *p++, *d;
	const char *e = p;

	if (q == '`')
		e = strchr(p, '`');
	else /* a backslash hides the character after it */
		while (*e && *e != '"' && *e != '\n')
			e += *e == '\\' && e[1] ? 2 : 1;
	if (!e || *e != q)
		return tp_bad(t, "unterminated quoted string");
	if (!(d = ar_alloc(t->ar, (size_t)(e - p) + 1)))
		return -FB_ENOMEM;
	k->k = K_STR;
	k->s = d;
	for (; p < e; p++) {
		static const char esc[] = "a\ab\bf\fn\nr\rt\tv\v\\\\\"\"''";
		const char *m;

		if (q == '`' || *p != '\\') {
			*d++ = *p;
		} else if ((m = strchr(esc, *++p)) && ((m - esc) & 1) == 0) {
			*d++ = m[1];
		} else if (*p == 'x' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
			char hex[3] = { p[1], p[2], 0 };

			*d++ = (char)strtol(hex, NULL, 16);
			p += 2;
		} else {
			return tp_bad(t, "escape \\%c in a string is not supported", *p);
		}
	}
	k->len = (size_t)(d - k->s);
	t->p = e + 1;
	return K_STR;
}

/* The next token of an action: its kind, or < 0. */
static int lex(struct tp *t, struct tok *k)
{
	const char *p = t->p;

	while (tspace(*p))
		p++;
	k->s = p;
	k->len = 0;
	if ((p > t->p && strncmp(p, "-}}", 3) == 0) || strncmp(p, "}}", 2) == 0) {
		t->rtrim = *p == '-';
		k->len = 2 + (size_t)t->rtrim;
		t->p = p + k->len;
		return k->k = K_CLOSE;
	}
	t->p = p;
	switch (*p) {
	case '\0':
		return tp_bad(t, "unclosed action");
	case '|':
	case '(':
	case ')':
		k->k = *p == '|' ? K_PIPE : *p == '(' ? K_LP : K_RP;
		p++;
		break;
	case '"':
	case '`':
		return lex_string(t, k, p);
	case '$':
		return tp_bad(t, "variables ($) are not supported");
	case '.':
		k->k = K_DOT;
		while (*p == '.' && (isalpha((unsigned char)p[1]) || p[1] == '_')) {
			k->k = K_FIELD;
			for (p++; ident(*p); p++)
				;
		}
		if (k->k == K_DOT && isdigit((unsigned char)*++p))
			return tp_bad(t, "number literals other than integers are not supported");
		break;
	default:
		if (isdigit((unsigned char)*p) ||
		    ((*p == '-' || *p == '+') && isdigit((unsigned char)p[1]))) {
			k->k = K_NUM;
			for (p++; isdigit((unsigned char)*p); p++)
				;
			if (ident(*p) || *p == '.')
				return tp_bad(t, "number literals other than integers are not supported");
		} else if (isalpha((unsigned char)*p) || *p == '_') {
			k->k = K_IDENT;
			while (ident(*p))
				p++;
		} else {
			return tp_bad(t, "unexpected \"%c\" in action", *p);
		}
	}
	k->len = (size_t)(p - k->s);
	t->p = p;
	return k->k;
}

static int is(const struct tok *k, const char *word)
{
	return k->k == K_IDENT && strlen(word) == k->len && strncmp(k->s, word, k->len) == 0;
}

static int parse_pipe(struct tp *t, const struct tok *first, int closer, struct tcmd **out);

static int parse_operand(struct tp *t, const struct tok *k, struct targ *a)
{
	a->s = k->s;
	a->len = k->len;
	switch (k->k) {
	case K_FIELD:
		a->kind = TA_FIELD;
		for (size_t i = 0; i < k->len; i++)
			a->nf += k->s[i] == '.';
		if (!(a->f = ar_alloc(t->ar, a->nf * sizeof(*a->f))))
			return -FB_ENOMEM;
		for (size_t i = 0, n = 0; i < k->len; n++) {
			size_t e = ++i;

			while (e < k->len && k->s[e] != '.')
				e++;
			if (!(a->f[n] = ar_strndup(t->ar, k->s + i, e - i)))
				return -FB_ENOMEM;
			i = e;
		}
		return 0;
	case K_DOT:
		a->kind = TA_DOT;
		return 0;
	case K_STR:
		a->kind = TA_STR;
		return 0;
	case K_NUM: {
		char num[32];

		a->kind = TA_INT;
		snprintf(num, sizeof(num), "%.*s", (int)k->len, k->s);
		if (k->len >= sizeof(num) || parse_int(num, &a->i) < 0)
			return tp_bad(t, "number %.*s out of range", (int)k->len, k->s);
		return 0;
	}
	case K_LP:
		a->kind = TA_PIPE;
		return parse_pipe(t, NULL, K_RP, &a->pipe);
	default:
		if (is(k, "true") || is(k, "false")) {
			a->kind = TA_BOOL;
			a->i = is(k, "true");
			return 0;
		}
		if (k->k == K_IDENT)
			return tp_bad(t, "\"%.*s\" as an argument is not supported (call functions in "
				      "parentheses)", (int)k->len, k->s);
		return tp_bad(t, "unexpected \"%.*s\" in operand", (int)(k->len ? k->len : 2), k->s);
	}
}

/* A pipeline up to (and eating) closer: K_CLOSE, or K_RP in parentheses. */
static int parse_pipe(struct tp *t, const struct tok *first, int closer, struct tcmd **out)
{
	struct tok k;
	int rc;

	if (++t->depth > TMPL_DEPTH)
		return tp_bad(t, "nested too deeply");
	if (first)
		k = *first;
	else if ((rc = lex(t, &k)) < 0)
		return rc;
	for (;;) {
		struct targ a[TMPL_ARGS];
		struct tcmd *c = ar_alloc(t->ar, sizeof(*c));

		if (!c)
			return -FB_ENOMEM;
		memset(a, 0, sizeof(a));
		if (k.k == closer || k.k == K_PIPE)
			return tp_bad(t, "missing value for command");
		if (k.k == K_IDENT && !is(&k, "true") && !is(&k, "false")) {
			for (c->fn = F_COUNT - 1; c->fn > F_NONE && !is(&k, fn_names[c->fn]); c->fn--)
				;
			if (c->fn == F_NONE)
				return tp_bad(t, "\"%.*s\" is not supported", (int)k.len, k.s);
			while ((rc = lex(t, &k)) >= 0 && k.k != closer && k.k != K_PIPE) {
				if (c->na == TMPL_ARGS)
					return tp_bad(t, "too many arguments");
				if ((rc = parse_operand(t, &k, &a[c->na++])) < 0)
					return rc;
			}
		} else {
			if ((rc = parse_operand(t, &k, &a[0])) < 0)
				return rc;
			c->na = 1;
			if ((rc = lex(t, &k)) >= 0 && k.k != closer && k.k != K_PIPE)
				return tp_bad(t, "unexpected \"%.*s\" after an operand",
					      (int)(k.len ? k.len : 2), k.s);
		}
		if (rc < 0)
			return rc;
		if (!(c->a = ar_alloc(t->ar, c->na * sizeof(*a))))
			return -FB_ENOMEM;
		memcpy(c->a, a, c->na * sizeof(*a));
		*out = c;
		out = &c->next;
		if (k.k == closer)
			break;
		if ((rc = lex(t, &k)) < 0)
			return rc;
	}
	t->depth--;
	return 0;
}

static int parse_list(struct tp *t, struct tnode **head, struct tcmd **elif);

/* The body of an if or range after its action, through its {{ end }}. */
static int parse_body(struct tp *t, struct tnode *n)
{
	for (;;) {
		struct tcmd *elif = NULL;
		int rc = parse_list(t, &n->body, &elif);

		if (rc == T_ELSEIF && n->kind == TN_IF) {
			struct tnode *m = ar_alloc(t->ar, sizeof(*m));

			if (!m)
				return -FB_ENOMEM;
			m->kind = TN_IF;
			m->elif = 1;
			m->pipe = elif;
			n->alt = m;
			n = m;
			continue;
		}
		if (rc == T_ELSE && (rc = parse_list(t, &n->alt, &elif)) != T_END && rc >= 0)
			rc = T_ELSE; /* an else or else if after the else */
		if (rc == T_END || rc < 0)
			return rc < 0 ? rc : 0;
		if (rc == T_ELSEIF && n->kind == TN_RANGE)
			return tp_bad(t, "\"else if\" inside range is not supported");
		return tp_bad(t, "missing {{end}}");
	}
}

/* One action after "{{": 0 with *out set, or a T_ terminator. */
static int parse_action(struct tp *t, struct tnode **out, struct tcmd **elif)
{
	static const char *const unsupported[] = { "with", "define", "template", "block", "break", "continue",
						   "nil" };
	struct tnode *n;
	struct tok k;
	int rc;

	if ((rc = lex(t, &k)) < 0)
		return rc;
	if (is(&k, "end") || is(&k, "else")) {
		int end = is(&k, "end");

		if ((rc = lex(t, &k)) < 0)
			return rc;
		if (k.k == K_CLOSE)
			return end ? T_END : T_ELSE;
		if (end || !is(&k, "if"))
			return tp_bad(t, "unexpected \"%.*s\" after %s", (int)(k.len ? k.len : 2), k.s,
				      end ? "end" : "else");
		return (rc = parse_pipe(t, NULL, K_CLOSE, elif)) < 0 ? rc : T_ELSEIF;
	}
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
		if (is(&k, unsupported[i]))
			return tp_bad(t, "\"%s\" is not supported", unsupported[i]);
	if (!(n = ar_alloc(t->ar, sizeof(*n))))
		return -FB_ENOMEM;
	n->kind = is(&k, "if") ? TN_IF : is(&k, "range") ? TN_RANGE : TN_PRINT;
	if ((rc = parse_pipe(t, n->kind == TN_PRINT ? &k : NULL, K_CLOSE, &n->pipe)) < 0)
		return rc;
	if (n->kind != TN_PRINT && (rc = parse_body(t, n)) < 0)
		return rc;
	*out = n;
	return 0;
}

/* Text and actions up to the end of the source (T_EOF) or a {{ end }},
 * {{ else }} or {{ else if }} (returned; the last with *elif set). */
static int parse_list(struct tp *t, struct tnode **head, struct tcmd **elif)
{
	int rc = 0;

	if (++t->depth > TMPL_DEPTH)
		return tp_bad(t, "nested too deeply");
	for (;;) {
		const char *open = strstr(t->p, "{{"), *ts = t->p;
		const char *te = open ? open : ts + strlen(ts);
		int ltrim = open && open[2] == '-' && tspace(open[3]);
		struct tnode *n = NULL;

		while (t->rtrim && ts < te && tspace(*ts))
			ts++;
		while (ltrim && te > ts && tspace(te[-1]))
			te--;
		if (te > ts) {
			if (!(n = ar_alloc(t->ar, sizeof(*n))))
				return -FB_ENOMEM;
			n->kind = TN_TEXT;
			n->s = ts;
			n->len = (size_t)(te - ts);
			*head = n;
			head = &n->next;
		}
		if (!open)
			break;
		t->p = open + (ltrim ? 4 : 2);
		t->rtrim = 0;
		if (strncmp(t->p, "/*", 2) == 0) {
			const char *e = strstr(t->p + 2, "*/");

			if (!e)
				return tp_bad(t, "unclosed comment");
			t->p = e + 2;
			t->rtrim = tspace(*t->p) && strncmp(t->p + 1, "-}}", 3) == 0;
			t->p += t->rtrim ? 4 : 2;
			if (!t->rtrim && strncmp(e + 2, "}}", 2) != 0)
				return tp_bad(t, "comment ends before closing delimiter");
			continue;
		}
		n = NULL;
		if ((rc = parse_action(t, &n, elif)) != 0)
			break;
		*head = n;
		head = &n->next;
	}
	t->depth--;
	return rc;
}

static int tmpl_parse(struct chunk **ar, const char *src, const char *what, struct tnode **out, char *msg)
{
	struct tp t = { .ar = ar, .what = what, .msg = msg };
	struct tcmd *elif = NULL;
	size_t len = strlen(src);
	int rc;

	if (len > TMPL_SRC_MAX)
		return msgf(msg, "%s: longer than 64 KiB", what);
	if (!(t.src = t.p = ar_strndup(ar, src, len)))
		return -FB_ENOMEM;
	rc = parse_list(&t, out, &elif);
	if (rc > T_EOF)
		return tp_bad(&t, "unexpected {{%s}}", rc == T_END ? "end" : "else");
	return rc;
}

/* ---- templates: execution --------------------------------------------- */

/* A matched element: a flag (name), an attribute (name, value) or an
 * instance (its attributes object). */
struct elem {
	const char *name, *value;
	const struct json *inst;
};

/* The elements one term matched, e[first..first+n) */
struct mlist {
	const char *dom, *feat;
	size_t first, n;
};

/* What the terms of one matcher matched: the templates' data. */
struct md {
	struct elem *e;
	size_t ne, esize;
	struct mlist *l;
	size_t nl, lsize;
	int oom;
};

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
	return msgf(x->msg, "%s: %s", x->what, detail);
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
		put(o, f, (size_t)(pct - f));
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
			put(o, "%!(NOVERB)", 10);
			break;
		}
		verb = *f++;
		if (verb == '%') {
			put(o, "%", 1);
			continue;
		}
		if (!strchr("sdv", verb))
			return tx_bad(x, "printf: verb %%%c is not supported", verb);
		if (ai >= n) {
			putf(o, "%%!%c(MISSING)", verb);
			continue;
		}
		a = &v[ai++];
		if (a->k > V_BOOL)
			return tx_bad(x, "printf: printing a %s is not supported", kind_names[a->k]);
		if ((verb == 's' && a->k != V_STR) || (verb == 'd' && a->k != V_INT)) {
			if (a->k == V_STR)
				putf(o, "%%!%c(string=%.*s)", verb, (int)a->len, a->s);
			else if (a->k == V_INT)
				putf(o, "%%!%c(int=%lld)", verb, a->i);
			else
				putf(o, "%%!%c(bool=%s)", verb, a->i ? "true" : "false");
		} else if (a->k == V_STR) {
			size_t len = prec >= 0 && (size_t)prec < a->len ? (size_t)prec : a->len;

			putf(o, strchr(flags, '-') ? "%-*.*s" : "%*.*s", width, (int)len, a->s);
		} else if (a->k == V_INT) {
			char fmt[24];

			snprintf(fmt, sizeof(fmt), "%%%s%s%s%s*%slld", strchr(flags, '-') ? "-" : "",
				 strchr(flags, '+') ? "+" : "", strchr(flags, ' ') ? " " : "",
				 strchr(flags, '0') ? "0" : "", prec < 0 ? "" : ".*");
			if (prec < 0)
				putf(o, fmt, width, a->i);
			else
				putf(o, fmt, width, prec, a->i);
		} else {
			putf(o, strchr(flags, '-') ? "%-*s" : "%*s", width, a->i ? "true" : "false");
		}
	}
	for (size_t i = ai; i < n; i++) {
		put(o, i == ai ? "%!(EXTRA " : ", ", i == ai ? 9 : 2);
		if (v[i].k == V_STR)
			putf(o, "string=%.*s", (int)v[i].len, v[i].s);
		else if (v[i].k == V_INT)
			putf(o, "int=%lld", v[i].i);
		else if (v[i].k == V_BOOL)
			putf(o, "bool=%s", v[i].i ? "true" : "false");
		else
			putf(o, "%s", kind_names[v[i].k]);
		if (i + 1 == n)
			put(o, ")", 1);
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
			put(o, p, (size_t)(end - p));
			return;
		}
		put(o, p, (size_t)(hit - p));
		put(o, new->s, new->len);
		if (!old->len) {
			unsigned char c = (unsigned char)*hit;

			skip = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
			skip = skip > (size_t)(end - hit) ? (size_t)(end - hit) : skip;
			put(o, hit, skip);
		}
		p = hit + skip;
	}
	if (!old->len)
		put(o, new->s, new->len);
}

/* fn applied to v[0..n); the result in *res. */
static int call(struct tx *x, int fn, struct val *v, size_t n, struct val *res)
{
	static const unsigned char arity[F_COUNT] = { 0, 1, 1, 1, 3, 0, 0, 2, 1, 0, 0, 0 };
	const char *name = fn_names[fn];
	struct buf o = { 0 };
	int r;

	if ((arity[fn] && n != arity[fn]) || n < (fn == F_EQ ? 2u : 1u))
		return tx_bad(x, "wrong number of args for %s: got %zu", name, n);
	memset(res, 0, sizeof(*res));
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
		put(&o, s, len);
		for (size_t i = 0; fn != F_TRIM && !o.oom && i < o.len; i++) {
			unsigned char ch = (unsigned char)o.s[i];

			o.s[i] = (char)(fn == F_LOWER ? tolower(ch) : toupper(ch));
		}
		break;
	}
	case F_REPLACE:
		if (need_str(x, name, v, 3) < 0)
			return -FB_EINVAL;
		put(&o, "", 0);
		replace(&o, &v[0], &v[1], &v[2]);
		break;
	case F_PRINTF:
		if (need_str(x, name, v, 1) < 0)
			return -FB_EINVAL;
		put(&o, "", 0);
		if (do_printf(x, v, n, &o) < 0) {
			free(o.s);
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
	if (o.oom) {
		free(o.s);
		return -FB_ENOMEM;
	}
	res->k = V_STR;
	res->s = res->own = o.s;
	res->len = o.len;
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
		return tx_bad(x, "wrong number of args for %s: got 0", fn_names[c->fn]);
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
			put(x->out, n->s, n->len);
			break;
		case TN_PRINT:
			if ((rc = eval_pipe(x, n->pipe, dot, &v)) < 0)
				return rc;
			if (v.k == V_STR)
				put(x->out, v.s, v.len);
			else if (v.k == V_INT)
				putf(x->out, "%lld", v.i);
			else if (v.k == V_BOOL)
				put(x->out, v.i ? "true" : "false", v.i ? 4 : 5);
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
		if (x->out->oom)
			return -FB_ENOMEM;
		if (x->out->len > TMPL_OUT_MAX)
			return tx_bad(x, "output longer than 1 MiB");
	}
	return 0;
}

/* ---- matching ------------------------------------------------------------ */

struct run {
	struct md md;
	struct buf lt, vt;    /* the rule's expanded templates */
	char msg[MSG_SIZE];
};

static void md_add(struct md *m, const char *name, const char *value, const struct json *inst)
{
	if (m->ne == m->esize) {
		size_t size = m->esize ? m->esize * 2 : 32;
		struct elem *e = realloc(m->e, size * sizeof(*e));

		if (!e) {
			m->oom = 1;
			return;
		}
		m->e = e;
		m->esize = size;
	}
	m->e[m->ne++] = (struct elem){ name, value, inst };
}

static int elem_cmp(const void *a, const void *b)
{
	const struct elem *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->value != NULL) - (y->value != NULL);
}

/* 1 when e holds for an element that exists (valid) with value (NULL for a
 * flag), 0 when not, < 0 (message in msg) for a value Gt... cannot compare. */
static int eval(const struct expr *e, int valid, const char *value, char *msg)
{
	struct num n;
	int c0, c1;

	switch (e->op) {
	case OP_ANY:
		return 1;
	case OP_EXISTS:
		return valid;
	case OP_DNE:
		return !valid;
	}
	if (!valid || !value)
		return 0;
	switch (e->op) {
	case OP_IN:
	case OP_NOTIN:
		for (size_t i = 0; i < e->n; i++)
			if (strcmp(value, e->val[i]) == 0)
				return e->op == OP_IN;
		return e->op == OP_NOTIN;
	case OP_INREGEXP:
		for (size_t i = 0; i < e->n; i++)
			if (regexec(e->re[i], value, 0, NULL, 0) == 0)
				return 1;
		return 0;
	case OP_ISTRUE:
		return strcmp(value, "true") == 0;
	case OP_ISFALSE:
		return strcmp(value, "false") == 0;
	}
	memset(&n, 0, sizeof(n));
	if (e->version ? parse_version(value, &n) < 0 : parse_int(value, &n.v[0]) < 0)
		return msgf(msg, "%s %s: value \"%.40s\" of %s is not %s",
			    e->key ? "matchExpressions" : "matchName", op_names[e->op], value,
			    e->key ? e->key : "a name", e->version ? "a version" : "an integer");
	c0 = num_cmp(&n, &e->num[0]);
	c1 = num_cmp(&n, &e->num[1]);
	switch (e->op) {
	case OP_GT:
		return c0 > 0;
	case OP_GE:
		return c0 >= 0;
	case OP_LT:
		return c0 < 0;
	case OP_LE:
		return c0 <= 0;
	case OP_GTLT:
		return c0 > 0 && c1 < 0;
	default:
		return c0 >= 0 && c1 <= 0;
	}
}

/* The instance's attributes object (NULL when it has none). */
static const struct json *inst_attrs(const struct json *inst)
{
	const struct json *a = json_get(inst, "attributes");

	return json_type(a) == JSON_OBJECT ? a : NULL;
}

/* upstream MatchMulti: flags and attributes as a union (DoesNotExist must
 * hold in both), then instances, each against the whole set. */
static int match_multi(const struct term *t, const struct json *fl, const struct json *at,
		       const struct json *in, struct md *m, char *msg)
{
	size_t mark = m ? m->ne : 0;
	int kv = fl || at, im = 0;

	for (size_t i = 0; kv && i < t->nex; i++) {
		const struct expr *e = &t->ex[i];
		const struct json *v;
		int mk = 0, mv = 0;

		if (fl) {
			if ((mk = eval(e, json_get(fl, e->key) != NULL, NULL, msg)) < 0)
				return mk;
			if (mk && m)
				md_add(m, e->key, NULL, NULL);
			else if (!mk && e->op == OP_DNE)
				kv = 0;
		}
		if (at && kv) {
			v = json_get(at, e->key);
			if ((mv = eval(e, v != NULL, json_str(v), msg)) < 0)
				return mv;
			if (mv && m)
				md_add(m, e->key, json_str(v), NULL);
			else if (!mv && e->op == OP_DNE)
				kv = 0;
		}
		kv = kv && (mk || mv);
	}
	if (m && !kv)
		m->ne = mark;
	else if (m && m->ne > mark)
		qsort(m->e + mark, m->ne - mark, sizeof(*m->e), elem_cmp);
	if (kv && !m && !t->fallible)
		return 1;
	for (const struct json *ins = json_child(in); ins; ins = json_next(ins)) {
		const struct json *a = inst_attrs(ins);
		int all = 1;

		for (size_t i = 0; all && i < t->nex; i++) {
			const struct json *v = json_get(a, t->ex[i].key);

			if ((all = eval(&t->ex[i], v != NULL, json_str(v), msg)) < 0)
				return all;
		}
		if (all && !m && !t->fallible)
			return 1;
		if (all && m)
			md_add(m, NULL, NULL, a);
		im |= all;
	}
	return kv || im;
}

/* upstream MatchNamesMulti: the one expression against element names. */
static int match_names(const struct expr *e, const struct json *fl, const struct json *at,
		       const struct json *in, struct md *m, char *msg)
{
	size_t mark = m ? m->ne : 0;
	int any = 0, r, fallible = e->op >= OP_GT && e->op <= OP_GELE;

	for (int pass = 0; pass < 2; pass++) {
		for (const struct json *c = json_child(pass ? at : fl); c; c = json_next(c)) {
			if ((r = eval(e, 1, json_key(c), msg)) < 0)
				return r;
			if (r && !m && !fallible)
				return 1;
			if (r && m)
				md_add(m, json_key(c), pass ? json_str(c) : NULL, NULL);
			any |= r;
		}
	}
	if (m && m->ne > mark)
		qsort(m->e + mark, m->ne - mark, sizeof(*m->e), elem_cmp);
	for (const struct json *ins = json_child(in); ins; ins = json_next(ins)) {
		const struct json *a = inst_attrs(ins);
		int hit = 0;

		for (const struct json *c = json_child(a); c && (!hit || fallible); c = json_next(c)) {
			if ((r = eval(e, 1, json_key(c), msg)) < 0)
				return r;
			hit |= r;
		}
		if (hit && !m && !fallible)
			return 1;
		if (hit && m)
			md_add(m, NULL, NULL, a);
		any |= hit;
	}
	return any;
}

/* The elements of a feature of one kind, NULL when absent; *exists is set
 * when the feature is there at all. */
static const struct json *elements(const struct features *f, const char *kind, const char *feature,
				   enum json_type want, int *exists)
{
	const struct json *set = json_get(json_get(f->root, kind), feature), *el;

	if (!set)
		return NULL;
	*exists = 1;
	el = json_get(set, "elements");
	return json_type(el) == want ? el : NULL;
}

static int match_term(const struct term *t, const struct features *f, struct md *m, char *msg)
{
	int exists = 0, r = 1;
	const struct json *fl = elements(f, "flags", t->feature, JSON_OBJECT, &exists);
	const struct json *at = elements(f, "attributes", t->feature, JSON_OBJECT, &exists);
	const struct json *in = elements(f, "instances", t->feature, JSON_ARRAY, &exists);

	if (!exists)
		return 0;
	if (m) {
		if (m->nl == m->lsize) {
			size_t size = m->lsize ? m->lsize * 2 : 8;
			struct mlist *l = realloc(m->l, size * sizeof(*l));

			if (!l)
				return -FB_ENOMEM;
			m->l = l;
			m->lsize = size;
		}
		m->l[m->nl] = (struct mlist){ t->dom, t->name, m->ne, 0 };
	}
	if (t->has_ex)
		r = match_multi(t, fl, at, in, m, msg);
	if (r > 0 && t->mname)
		r = match_names(t->mname, fl, at, in, m, msg);
	if (m && m->oom)
		return -FB_ENOMEM;
	if (m && r > 0) {
		m->l[m->nl].n = m->ne - m->l[m->nl].first;
		m->nl++;
	}
	return r;
}

/* upstream evaluateFeatureMatcher: every term must match. */
static int match_all(const struct matcher *mt, const struct features *f, struct md *m, char *msg)
{
	int r = 1;

	if (m)
		m->ne = m->nl = 0;
	for (size_t i = 0; r > 0 && i < mt->n; i++)
		r = match_term(&mt->t[i], f, m, msg);
	return r;
}

static int expand(struct run *rn, const struct rule *ru)
{
	struct tx x = { .md = &rn->md, .msg = rn->msg };
	struct val root = { .k = V_ROOT };
	int rc = 0;

	if (ru->ltmpl) {
		x.out = &rn->lt;
		x.what = "labelsTemplate";
		rc = exec_list(&x, ru->ltmpl, &root);
		put(&rn->lt, "\n", 1);
	}
	if (rc == 0 && ru->vtmpl) {
		x.out = &rn->vt;
		x.what = "varsTemplate";
		rc = exec_list(&x, ru->vtmpl, &root);
		put(&rn->vt, "\n", 1);
	}
	return rc < 0 ? rc : rn->lt.oom || rn->vt.oom ? -FB_ENOMEM : 0;
}

/* upstream Execute: 1 matched, 0 not, < 0 failed (message in rn->msg). */
static int run_rule(struct run *rn, const struct rule *ru, const struct features *f)
{
	struct md *m = ru->has_tmpl ? &rn->md : NULL;
	int r, matched = 0;

	rn->lt.len = rn->vt.len = 0;
	for (size_t i = 0; i < ru->nany; i++) {
		if ((r = match_all(&ru->any[i], f, m, rn->msg)) < 0)
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
		if ((r = match_all(&ru->all, f, m, rn->msg)) <= 0)
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
	char *w = b->s, *p = b->s, *end = b->s + b->len;
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
			return msgf(msg, "%s: missing value in expanded template line \"%.*s\" (format "
				    "must be '<key>=<value>')", what, (int)(e - s > 60 ? 60 : e - s), s);
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
	if (set_pairs(out->labels, br, rn->lt.s, nl) < 0 || set_kvs(out->labels, br, &ru->labels) < 0 ||
	    set_pairs(out->vars, br, rn->vt.s, nv) < 0 || set_kvs(out->vars, br, &ru->vars) < 0 ||
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
	put(&rn.lt, "", 0);
	put(&rn.vt, "", 0);
	if (rn.lt.oom || rn.vt.oom)
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
		if (rc > 0)
			rc = apply(&rn, ru, f, out);
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
	free(rn.lt.s);
	free(rn.vt.s);
	return rc < 0 ? rc : failed;
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
	return ar_strndup(&c->r->ar, s, strlen(s));
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
	if (!(e->val = ar_alloc(&c->r->ar, n * sizeof(*e->val))))
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
		if (c->d == RULES_NFR && given(t) && !(type = json_str(t)))
			return bad(c, "%s: type must be a string", where);
		vals = member(c, j, "value");
	} else if (c->d != RULES_CUSTOM || !given(j)) {
		return bad(c, "%s: expression must be an object with op and value", where);
	} else {
		op = "In";
	}
	for (e->op = 0; e->op < OP_COUNT && strcmp(op_names[e->op], op) != 0; e->op++)
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
		if (e->version ? parse_version(e->val[i], &e->num[i]) < 0
			       : parse_int(e->val[i], &e->num[i].v[0]) < 0)
			return bad(c, "%s: op %s: \"%s\" is not %s", where, op, e->val[i],
				   e->version ? "a version" : "an integer");
	if (e->n == 2 && e->op >= OP_GTLT && e->op <= OP_GELE && num_cmp(&e->num[0], &e->num[1]) >= 0)
		return bad(c, "%s: op %s: value[0] must be less than value[1]", where, op);
	if (e->op == OP_INREGEXP) {
		if (!(e->re = ar_alloc(&c->r->ar, e->n * sizeof(*e->re))))
			return -FB_ENOMEM;
		for (size_t i = 0; i < e->n; i++) {
			struct rx *x = ar_alloc(&c->r->ar, sizeof(*x));
			char why[160];

			if (!x)
				return -FB_ENOMEM;
			if ((rc = re_compile(&x->re, e->val[i], REG_NOSUB, why, sizeof(why))) < 0)
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
	if (!(t->ex = ar_alloc(&c->r->ar, json_count(j) * sizeof(*t->ex))))
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
		if (c->d == RULES_NFR && !given(v))
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
		if (!(t->mname = ar_alloc(&c->r->ar, sizeof(*t->mname))))
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
	if (!(m->t = ar_alloc(&c->r->ar, json_count(j) * sizeof(*m->t))))
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
	kv->k = ar_alloc(&c->r->ar, n * sizeof(*kv->k));
	kv->v = ar_alloc(&c->r->ar, n * sizeof(*kv->v));
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
		const char *key = json_get_str(t, "key", NULL), *effect = json_get_str(t, "effect", NULL);
		const char *value = json_get_str(t, "value", "");
		char *ev;

		if (!key || !effect || !*key || !*effect)
			return bad(c, "taints[%zu]: key and effect are required", kv->n);
		if (!(kv->k[kv->n] = copy(c, key)) ||
		    !(ev = ar_alloc(&c->r->ar, strlen(effect) + strlen(value) + 2)))
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
	return tmpl_parse(&c->r->ar, json_str(j), what, out, c->msg);
}

static int compile_rule(struct cc *c, struct rule *ru, const struct json *j)
{
	const struct json *any = member(c, j, "matchAny");
	int rc;

	if (json_type(j) != JSON_OBJECT)
		return bad(c, "a rule must be an object");
	if (c->d == RULES_CUSTOM && member(c, j, "matchOn"))
		return bad(c, "legacy matchOn rules are not supported: use matchFeatures");
	if ((rc = compile_kvs(c, &ru->labels, member(c, j, "labels"), "labels")) < 0 ||
	    (rc = compile_kvs(c, &ru->vars, member(c, j, "vars"), "vars")) < 0 ||
	    (rc = compile_tmpl(c, ru, &ru->ltmpl, member(c, j, "labelsTemplate"), "labelsTemplate")) < 0 ||
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
	if (!(ru->any = ar_alloc(&c->r->ar, json_count(any) * sizeof(*ru->any))))
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
	if (!(r->what = ar_strndup(&r->ar, what ? what : "", what ? strlen(what) : 0)) ||
	    !(r->v = ar_alloc(&r->ar, n * sizeof(*r->v))))
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
		regfree(&x->re);
	while (r->ar) {
		struct chunk *c = r->ar;

		r->ar = c->next;
		free(c);
	}
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

int rules_out_init(struct rules_out *o)
{
	o->labels = json_new_object();
	o->annotations = json_new_object();
	o->extended_resources = json_new_object();
	o->taints = json_new_array();
	o->vars = json_new_object();
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
