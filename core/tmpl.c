/* tmpl: the parser (Go text/template/parse: lex.go and parse.go): a lexer
 * for the text between {{ and }}, a recursive descent parser into the tnode
 * tree tmpl_exec.c runs, variables checked as Go checks them (declared
 * before use, scoped to their control structure), defines collected. See
 * tmpl.h for the language and the bounds. */
#include "tmpl_int.h"

#include "err.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_CLOSE, K_PIPE, K_LP, K_RP, K_FIELD, K_DOT, K_IDENT, K_STR, K_NUM, K_CHAR, K_VAR, K_DECL, K_ASSIGN,
       K_COMMA };

struct tok {
	int k, space;         /* space: blank before the token */
	const char *s;        /* the source; K_STR: the unquoted text */
	size_t len;
	const char *src;      /* K_STR: the quoted source */
	size_t srclen;
};

#define NVARS 256

struct tp {
	struct arena *ar;
	struct tmpl *t;
	const char *src, *p;
	int rtrim, depth, ranges;
	const char *vars[NVARS];
	int nvars;
	struct tok peeked;
	int have_peek;
	char *msg;
};

static int tp_bad(struct tp *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tp_bad(struct tp *t, const char *fmt, ...)
{
	char detail[TMPL_MSG_SIZE];
	int line = 1;
	va_list ap;

	for (const char *s = t->src; s < t->p; s++)
		line += *s == '\n';
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	snprintf(t->msg, TMPL_MSG_SIZE, "line %d: %.230s", line, detail);
	return -FB_EINVAL;
}

static void *zalloc(struct tp *t, size_t n)
{
	void *p = arena_alloc(t->ar, n);

	return p ? memset(p, 0, n) : NULL;
}

static int tspace(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int ident(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Appends the UTF-8 encoding of rune r at d; returns the bytes written. */
static size_t utf8_put(char *d, unsigned long r)
{
	if (r > 0x10ffff || (r >= 0xd800 && r < 0xe000))
		r = 0xfffd;
	if (r < 0x80) {
		d[0] = (char)r;
		return 1;
	}
	if (r < 0x800) {
		d[0] = (char)(0xc0 | r >> 6);
		d[1] = (char)(0x80 | (r & 0x3f));
		return 2;
	}
	if (r < 0x10000) {
		d[0] = (char)(0xe0 | r >> 12);
		d[1] = (char)(0x80 | ((r >> 6) & 0x3f));
		d[2] = (char)(0x80 | (r & 0x3f));
		return 3;
	}
	d[0] = (char)(0xf0 | r >> 18);
	d[1] = (char)(0x80 | ((r >> 12) & 0x3f));
	d[2] = (char)(0x80 | ((r >> 6) & 0x3f));
	d[3] = (char)(0x80 | (r & 0x3f));
	return 4;
}

/* strconv.Unquote of a Go quoted string or char body p[0..n) into d; the
 * bytes written, or -1 for a bad escape. */
static long unquote(const char *p, size_t n, char *d)
{
	static const char esc[] = "a\ab\bf\fn\nr\rt\tv\v\\\\\"\"''";
	char *d0 = d;

	for (const char *e = p + n; p < e; p++) {
		const char *m;
		unsigned long r = 0;
		int digits = 0, base = 16;

		if (*p != '\\') {
			*d++ = *p;
			continue;
		}
		if (++p == e)
			return -1;
		if ((m = strchr(esc, *p)) && *p && ((m - esc) & 1) == 0) {
			*d++ = m[1];
			continue;
		}
		switch (*p) {
		case 'x':
			digits = 2;
			break;
		case 'u':
			digits = 4;
			break;
		case 'U':
			digits = 8;
			break;
		default:
			if (*p < '0' || *p > '7')
				return -1;
			digits = 3;
			base = 8;
			p--;
		}
		if (e - p <= digits)
			return -1;
		for (int i = 0; i < digits; i++) {
			int c = (unsigned char)*++p, v = isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : 99;

			if (v >= base)
				return -1;
			r = r * (unsigned long)base + (unsigned long)v;
		}
		if (base == 8 && r > 255)
			return -1;
		if (digits <= 3)
			*d++ = (char)r;
		else if (r > 0x10ffff || (r >= 0xd800 && r < 0xe000))
			return -1;
		else
			d += utf8_put(d, r);
	}
	return d - d0;
}

/* The next token of an action (K_CLOSE at the closing delimiter), or < 0. */
static int lex(struct tp *t, struct tok *k)
{
	const char *p = t->p;

	if (t->have_peek) {
		*k = t->peeked;
		t->have_peek = 0;
		return k->k;
	}
	while (tspace(*p))
		p++;
	memset(k, 0, sizeof(*k));
	k->space = p > t->p;
	k->s = p;
	if ((k->space && strncmp(p, "-}}", 3) == 0) || strncmp(p, "}}", 2) == 0) {
		t->rtrim = *p == '-';
		t->p = p + 2 + t->rtrim;
		k->len = (size_t)(t->p - p);
		return k->k = K_CLOSE;
	}
	switch (*p) {
	case '\0':
		t->p = p;
		return tp_bad(t, "unclosed action");
	case '|': case '(': case ')': case ',': case '=':
		k->k = *p == '|' ? K_PIPE : *p == '(' ? K_LP : *p == ')' ? K_RP : *p == ',' ? K_COMMA : K_ASSIGN;
		p++;
		break;
	case ':':
		if (p[1] != '=') {
			t->p = p;
			return tp_bad(t, "expected :=");
		}
		k->k = K_DECL;
		p += 2;
		break;
	case '"': case '`': case '\'': {
		char q = *p, *d;
		const char *e = p + 1;
		long n;

		if (q == '`')
			e = strchr(e, '`');
		else
			while (*e && *e != q && *e != '\n')
				e += *e == '\\' && e[1] && e[1] != '\n' ? 2 : 1;
		t->p = p;
		if (!e || *e != q)
			return tp_bad(t, q == '\'' ? "unterminated character constant" : "unterminated quoted string");
		if (!(d = arena_alloc(t->ar, (size_t)(e - p))))
			return -FB_ENOMEM;
		if (q == '`') {
			memcpy(d, p + 1, (size_t)(e - p - 1));
			n = e - p - 1;
		} else if ((n = unquote(p + 1, (size_t)(e - p - 1), d)) < 0) {
			return tp_bad(t, "invalid syntax: %.*s", (int)(e - p + 1), p);
		}
		d[n] = 0;
		k->src = p;
		k->srclen = (size_t)(e + 1 - p);
		k->k = q == '\'' ? K_CHAR : K_STR;
		k->s = d;
		k->len = (size_t)n;
		t->p = e + 1;
		return k->k;
	}
	case '$':
		k->k = K_VAR;
		for (p++; ident(*p); p++)
			;
		break;
	case '.':
		if (!isdigit((unsigned char)p[1])) {
			k->k = K_DOT;
			if (ident(p[1])) {
				k->k = K_FIELD;
				for (p++; ident(*p); p++)
					;
			} else {
				p++;
			}
			break;
		}
		/* a number */
		__attribute__((fallthrough));
	default:
		if (isdigit((unsigned char)*p) || *p == '.' ||
		    ((*p == '-' || *p == '+') && (isdigit((unsigned char)p[1]) || p[1] == '.'))) {
			k->k = K_NUM;
			for (p++; ident(*p) || *p == '.' || ((*p == '+' || *p == '-') && strchr("eEpP", p[-1]));
			     p++)
				;
		} else if (isalpha((unsigned char)*p) || *p == '_') {
			k->k = K_IDENT;
			while (ident(*p))
				p++;
		} else {
			t->p = p;
			return tp_bad(t, "unexpected \"%c\" in command", *p);
		}
	}
	k->len = (size_t)(p - k->s);
	t->p = p;
	return k->k;
}

static int peek(struct tp *t, struct tok *k)
{
	int rc = lex(t, k);

	if (rc >= 0) {
		t->peeked = *k;
		t->have_peek = 1;
	}
	return rc;
}

/* where a token starts in the source (a string's text is a copy) */
static const char *tok_at(const struct tok *k)
{
	return k->src ? k->src : k->s;
}

static int is(const struct tok *k, const char *word)
{
	return k->k == K_IDENT && strlen(word) == k->len && strncmp(k->s, word, k->len) == 0;
}

static int keyword(const struct tok *k)
{
	static const char *const kw[] = { "block", "break", "continue", "define", "else", "end", "if",
					   "range", "nil", "template", "with" };

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (is(k, kw[i]))
			return 1;
	return 0;
}

static int var_known(struct tp *t, const char *s, size_t len)
{
	for (int i = t->nvars; i-- > 0;)
		if (strlen(t->vars[i]) == len && strncmp(t->vars[i], s, len) == 0)
			return 1;
	return 0;
}

/* strconv-style number literal: int (with 0x 0o 0b 0 prefixes and _),
 * float (a float that is an integer also keeps .i, flagged by len 1). */
static int parse_number(struct tp *t, const struct tok *k, struct targ *a)
{
	char num[80], *e, *d = num;
	int base = 10;
	const char *s = k->s, *end = k->s + k->len;

	if (k->len >= sizeof(num))
		return tp_bad(t, "illegal number syntax: %.*s", (int)k->len, k->s);
	for (const char *q = s; q < end; q++)
		if (*q != '_')
			*d++ = *q;
	*d = 0;
	d = num;
	if (*d == '+' || *d == '-')
		d++;
	if (d[0] == '0' && strchr("xXoObB", d[1]) && d[1])
		base = strchr("xX", d[1]) ? 16 : strchr("oO", d[1]) ? 8 : 2;
	else if (d[0] == '0' && isdigit((unsigned char)d[1]))
		base = 8;
	if (strchr("iI", k->s[k->len - 1]))
		return tp_bad(t, "complex number %.*s is not supported", (int)k->len, k->s);
	if (!strpbrk(d, ".pP") && !(base == 10 && strpbrk(d, "eE"))) {
		if (tmpl_parse_int_(k->s, k->len, &a->i) < 0)
			return tp_bad(t, "illegal number syntax: %.*s", (int)k->len, k->s);
		a->kind = A_INT;
		return 0;
	}
	errno = 0;
	a->f = strtod(num, &e);
	if (*e || base == 2 || (base == 8 && !isdigit((unsigned char)d[1])) || !isfinite(a->f))
		return tp_bad(t, "illegal number syntax: %.*s", (int)k->len, k->s);
	a->kind = A_FLOAT;
	if (a->f == floor(a->f) && fabs(a->f) < 9.2e18) {
		a->i = (long long)a->f;
		a->len = 1;
	}
	return 0;
}

static int parse_pipe(struct tp *t, const char *context, int closer, struct tpipe **out);

static int add_chain(struct tp *t, struct targ *a, const char *s, size_t len)
{
	const char **c = zalloc(t, (a->nchain + 1) * sizeof(*c));

	if (!c || !(c[a->nchain] = arena_strndup(t->ar, s, len)))
		return -FB_ENOMEM;
	if (a->nchain)
		memcpy(c, a->chain, a->nchain * sizeof(*c));
	a->chain = c;
	a->nchain++;
	return 0;
}

/* An operand starting at k: its term and the fields chained to it. */
static int parse_operand(struct tp *t, const struct tok *k, struct targ *a)
{
	const char *start = k->src ? k->src : k->s;
	struct tok f;
	int rc;

	switch (k->k) {
	case K_FIELD:
		a->kind = A_FIELD;
		if ((rc = add_chain(t, a, k->s + 1, k->len - 1)) < 0)
			return rc;
		break;
	case K_DOT:
		a->kind = A_DOT;
		break;
	case K_VAR:
		if (!var_known(t, k->s, k->len))
			return tp_bad(t, "undefined variable \"%.*s\"", (int)k->len, k->s);
		a->kind = A_VAR;
		if (!(a->s = arena_strndup(t->ar, k->s, k->len)))
			return -FB_ENOMEM;
		break;
	case K_STR:
		a->kind = A_STR;
		a->s = k->s;
		a->len = k->len;
		break;
	case K_CHAR: {
		unsigned long r = (unsigned char)k->s[0];
		size_t need = r < 0x80 ? 1 : r >= 0xf0 ? 4 : r >= 0xe0 ? 3 : 2;

		if (k->len == 0 || k->len != need)
			return tp_bad(t, "malformed character constant: %.*s", (int)k->srclen, k->src);
		if (need > 1)
			r &= 0xffu >> (need + 1);
		for (size_t i = 1; i < need; i++)
			r = r << 6 | ((unsigned char)k->s[i] & 0x3f);
		a->kind = A_INT;
		a->i = (long long)r;
		break;
	}
	case K_NUM:
		if ((rc = parse_number(t, k, a)) < 0)
			return rc;
		break;
	case K_LP:
		a->kind = A_PIPE;
		if ((rc = parse_pipe(t, "parenthesized pipeline", K_RP, &a->pipe)) < 0)
			return rc;
		break;
	case K_IDENT:
		if (is(k, "true") || is(k, "false")) {
			a->kind = A_BOOL;
			a->i = is(k, "true");
		} else if (is(k, "nil")) {
			a->kind = A_NIL;
		} else if (keyword(k)) {
			return tp_bad(t, "unexpected <%.*s> in operand", (int)k->len, k->s);
		} else {
			a->kind = A_FN;
			if (!(a->fn = tmpl_fn_find_(k->s, k->len)))
				return tp_bad(t, "function \"%.*s\" not defined", (int)k->len, k->s);
		}
		break;
	default:
		return tp_bad(t, "unexpected \"%.*s\" in operand", (int)(k->len ? k->len : 1), k->s);
	}
	while ((rc = peek(t, &f)) == K_FIELD && !f.space) {
		t->have_peek = 0;
		if (a->kind == A_STR || a->kind == A_INT || a->kind == A_FLOAT || a->kind == A_BOOL ||
		    a->kind == A_NIL || a->kind == A_DOT)
			return tp_bad(t, "unexpected . after term");
		if (a->kind == A_FN)
			return tp_bad(t, "unexpected . after term");
		if ((rc = add_chain(t, a, f.s + 1, f.len - 1)) < 0)
			return rc;
	}
	if (rc < 0)
		return rc;
	if (a->kind == A_STR || a->kind == A_INT || a->kind == A_FLOAT || a->kind == A_BOOL) {
		static const char *const types[] = { [A_STR] = "string", [A_INT] = "int", [A_FLOAT] = "float64",
						     [A_BOOL] = "bool" };
		static const unsigned char kinds[] = { [A_STR] = VK_STR, [A_INT] = VK_INT, [A_FLOAT] = VK_FLOAT,
						       [A_BOOL] = VK_BOOL };

		if (!(a->lit = zalloc(t, sizeof(*a->lit))))
			return -FB_ENOMEM;
		a->lit->k = kinds[a->kind];
		a->lit->type = types[a->kind];
		a->lit->s = a->s;
		a->lit->len = a->len;
		a->lit->i = a->i;
		a->lit->f = a->f;
	}
	a->src = start;
	a->srclen = (size_t)(tok_at(&f) - start);
	while (a->srclen && tspace(start[a->srclen - 1]))
		a->srclen--;
	return 0;
}

static int parse_cmd(struct tp *t, struct tok *k, int closer, struct tcmd **out)
{
	struct targ a[TMPL_ARGS];
	struct tcmd *c = zalloc(t, sizeof(*c));
	int rc;

	if (!c)
		return -FB_ENOMEM;
	memset(a, 0, sizeof(a));
	for (;;) {
		if (c->na == TMPL_ARGS)
			return tp_bad(t, "too many arguments");
		if ((rc = parse_operand(t, k, &a[c->na++])) < 0)
			return rc;
		if ((rc = lex(t, k)) < 0)
			return rc;
		if (k->k == closer || k->k == K_PIPE)
			break;
		if (!k->space)
			return tp_bad(t, "unexpected \"%.*s\" in operand", (int)(k->len ? k->len : 1), k->s);
	}
	if (!(c->a = zalloc(t, c->na * sizeof(*a))))
		return -FB_ENOMEM;
	memcpy(c->a, a, c->na * sizeof(*a));
	*out = c;
	return 0;
}

/* A pipeline up to (and eating) closer: K_CLOSE, or K_RP in parentheses. */
static int parse_pipe(struct tp *t, const char *context, int closer, struct tpipe **out)
{
	struct tpipe *p = zalloc(t, sizeof(*p));
	struct tcmd **tail;
	struct tok k, n;
	int rc, stage = 0;

	if (!p)
		return -FB_ENOMEM;
	if (++t->depth > TMPL_DEPTH)
		return tp_bad(t, "nested too deeply");
	if ((rc = lex(t, &k)) < 0)
		return rc;
	p->src = tok_at(&k);
	while (k.k == K_VAR) {
		if ((rc = lex(t, &n)) < 0)
			return rc;
		if (n.k == K_DECL || n.k == K_ASSIGN || n.k == K_COMMA) {
			if (p->ndecl == 2 || (p->ndecl == 1 && p->assign != (n.k == K_ASSIGN) && n.k != K_COMMA))
				return tp_bad(t, "too many declarations in %s", context);
			if (n.k == K_ASSIGN && !var_known(t, k.s, k.len))
				return tp_bad(t, "undefined variable \"%.*s\"", (int)k.len, k.s);
			if (t->nvars == NVARS)
				return tp_bad(t, "too many variables");
			if (!(p->decl[p->ndecl++] = t->vars[t->nvars++] = arena_strndup(t->ar, k.s, k.len)))
				return -FB_ENOMEM;
			p->assign = n.k == K_ASSIGN;
			if (n.k == K_COMMA) {
				if (strcmp(context, "range") != 0 || p->ndecl > 1)
					return tp_bad(t, "too many declarations in %s", context);
				if ((rc = lex(t, &k)) < 0)
					return rc;
				if (k.k != K_VAR)
					return tp_bad(t, "range can only initialize variables");
				continue;
			}
			if ((rc = lex(t, &k)) < 0)
				return rc;
			break;
		}
		t->have_peek = 1; /* $x is an operand */
		t->peeked = n;
		break;
	}
	for (tail = &p->cmd;; stage++) {
		if (k.k == K_PIPE && stage == 0)
			return tp_bad(t, "unexpected \"|\" in %s", context);
		if (k.k == closer || k.k == K_PIPE) {
			if (k.k == closer && stage == 0)
				return tp_bad(t, "missing value for %s", context);
			if (k.k == K_PIPE)
				return tp_bad(t, "empty command");
		}
		if (stage > 0 && (k.k == K_STR || k.k == K_NUM || k.k == K_CHAR || k.k == K_DOT ||
				  is(&k, "true") || is(&k, "false") || is(&k, "nil")))
			return tp_bad(t, "non executable command in pipeline stage %d", stage + 1);
		if ((rc = parse_cmd(t, &k, closer, tail)) < 0)
			return rc;
		tail = &(*tail)->next;
		if (k.k == closer)
			break;
		if ((rc = lex(t, &k)) < 0)
			return rc;
		if (k.k == closer) /* Go takes "{{ x | }}" */
			break;
	}
	p->srclen = (size_t)(tok_at(&k) - p->src);
	while (p->srclen && tspace(p->src[p->srclen - 1]))
		p->srclen--;
	t->depth--;
	*out = p;
	return 0;
}

enum { T_EOF = 1, T_END, T_ELSE, T_ELSEIF, T_ELSEWITH, T_DEFINE };

static int parse_list(struct tp *t, struct tnode **head, int top);

static struct tnode *node(struct tp *t, int kind)
{
	struct tnode *n = zalloc(t, sizeof(*n));

	if (n) {
		n->kind = (unsigned char)kind;
		n->line = 1;
		for (const char *s = t->src; s < t->p; s++)
			n->line += *s == '\n';
	}
	return n;
}

/* if / range / with after its keyword, through its {{end}}. */
static int parse_control(struct tp *t, struct tnode *n, const char *context)
{
	int mark = t->nvars, rc;

	if ((rc = parse_pipe(t, context, K_CLOSE, &n->pipe)) < 0)
		return rc;
	if (n->kind == N_RANGE)
		t->ranges++;
	rc = parse_list(t, &n->body, 0);
	if (n->kind == N_RANGE)
		t->ranges--;
	if (rc < 0)
		return rc;
	if ((rc == T_ELSEIF && n->kind == N_IF) || (rc == T_ELSEWITH && n->kind == N_WITH)) {
		struct tnode *m = node(t, n->kind);

		if (!m)
			return -FB_ENOMEM;
		n->alt = m;
		if ((rc = parse_control(t, m, context)) < 0)
			return rc;
		rc = T_END;
	} else if (rc == T_ELSE) {
		if ((rc = parse_list(t, &n->alt, 0)) < 0)
			return rc;
		if (rc != T_END)
			return tp_bad(t, "expected end; found %s", rc == T_EOF ? "EOF" : "{{else}}");
	} else if (rc == T_ELSEIF || rc == T_ELSEWITH) {
		return tp_bad(t, "unexpected <%s> in input", rc == T_ELSEIF ? "if" : "with");
	}
	if (rc != T_END)
		return tp_bad(t, "unexpected EOF");
	t->nvars = mark;
	return 0;
}

/* A template name (a string literal) after define / template / block. */
static int parse_name(struct tp *t, const char *context, const char **name)
{
	struct tok k;
	int rc;

	if ((rc = lex(t, &k)) < 0)
		return rc;
	if (k.k != K_STR)
		return tp_bad(t, "unexpected \"%.*s\" in %s clause", (int)(k.len ? k.len : 1), k.s, context);
	*name = k.s;
	return 0;
}

static int add_def(struct tp *t, const char *name, struct tnode *body)
{
	struct tdef *d;

	for (d = t->t->defs; d; d = d->next)
		if (strcmp(d->name, name) == 0)
			break;
	if (d && d->body && body)
		return tp_bad(t, "template: multiple definition of template \"%s\"", name);
	if (!d) {
		if (!(d = zalloc(t, sizeof(*d))))
			return -FB_ENOMEM;
		d->name = name;
		d->next = t->t->defs;
		t->t->defs = d;
	}
	if (body || !d->body)
		d->body = body;
	return 0;
}

/* A define's or block's body with a fresh variable scope ($ only). */
static int parse_def_body(struct tp *t, const char *name)
{
	const char *saved[NVARS];
	int n = t->nvars, ranges = t->ranges, rc;
	struct tnode *body = NULL;

	memcpy(saved, t->vars, sizeof(saved));
	t->nvars = 1;
	t->ranges = 0;
	rc = parse_list(t, &body, 0);
	memcpy(t->vars, saved, sizeof(saved));
	t->nvars = n;
	t->ranges = ranges;
	if (rc < 0)
		return rc;
	if (rc != T_END)
		return tp_bad(t, "unexpected %s in define clause", rc == T_EOF ? "EOF" : "{{else}}");
	return add_def(t, name, body);
}

/* One action after "{{": 0 with *out set (may be NULL), or a T_ terminator. */
static int parse_action(struct tp *t, struct tnode **out, int top)
{
	struct tnode *n;
	struct tok k, c;
	int rc;

	if ((rc = peek(t, &k)) < 0)
		return rc;
	if (is(&k, "end") || is(&k, "else") || is(&k, "break") || is(&k, "continue")) {
		t->have_peek = 0;
		if ((rc = lex(t, &c)) < 0)
			return rc;
		if (is(&k, "else") && (is(&c, "if") || is(&c, "with")))
			return is(&c, "if") ? T_ELSEIF : T_ELSEWITH;
		if (c.k != K_CLOSE)
			return tp_bad(t, "unexpected \"%.*s\" in %.*s", (int)(c.len ? c.len : 1), c.s, (int)k.len, k.s);
		if (is(&k, "end") || is(&k, "else"))
			return is(&k, "end") ? T_END : T_ELSE;
		if (!t->ranges)
			return tp_bad(t, "{{%.*s}} outside {{range}}", (int)k.len, k.s);
		return (*out = node(t, is(&k, "break") ? N_BREAK : N_CONTINUE)) ? 0 : -FB_ENOMEM;
	}
	if (is(&k, "define")) {
		const char *name;

		t->have_peek = 0;
		if (!top)
			return tp_bad(t, "unexpected <define> in command");
		if ((rc = parse_name(t, "define", &name)) < 0)
			return rc;
		if ((rc = lex(t, &c)) < 0)
			return rc;
		if (c.k != K_CLOSE)
			return tp_bad(t, "unexpected \"%.*s\" in define clause", (int)(c.len ? c.len : 1), c.s);
		return parse_def_body(t, name);
	}
	if (is(&k, "template") || is(&k, "block")) {
		int block = is(&k, "block");

		t->have_peek = 0;
		if (!(n = node(t, N_TEMPLATE)))
			return -FB_ENOMEM;
		if ((rc = parse_name(t, k.s[0] == 'b' ? "block" : "template", &n->s)) < 0)
			return rc;
		if ((rc = peek(t, &c)) < 0)
			return rc;
		if (c.k == K_CLOSE)
			t->have_peek = 0;
		else if ((rc = parse_pipe(t, block ? "block" : "template", K_CLOSE, &n->pipe)) < 0)
			return rc;
		if (block && (rc = parse_def_body(t, n->s)) < 0)
			return rc;
		*out = n;
		return 0;
	}
	n = node(t, is(&k, "if") ? N_IF : is(&k, "range") ? N_RANGE : is(&k, "with") ? N_WITH : N_ACTION);
	if (!n)
		return -FB_ENOMEM;
	if (n->kind != N_ACTION) {
		t->have_peek = 0;
		rc = parse_control(t, n, n->kind == N_IF ? "if" : n->kind == N_RANGE ? "range" : "with");
	} else {
		rc = parse_pipe(t, "command", K_CLOSE, &n->pipe);
	}
	if (rc < 0)
		return rc;
	*out = n;
	return 0;
}

/* Text and actions up to the end of the source (T_EOF) or a {{end}},
 * {{else}}, {{else if}} or {{else with}} (returned). */
static int parse_list(struct tp *t, struct tnode **head, int top)
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
			if (!(n = node(t, N_TEXT)))
				return -FB_ENOMEM;
			n->s = ts;
			n->len = (size_t)(te - ts);
			*head = n;
			head = &n->next;
		}
		t->rtrim = 0;
		if (!open) {
			t->p = te;
			rc = T_EOF;
			break;
		}
		t->p = open + (ltrim ? 3 : 2);
		{
			const char *q = t->p;

			while (ltrim && tspace(*q))
				q++;
			if (strncmp(q, "/*", 2) == 0) {
				const char *e = strstr(q + 2, "*/");

				if (!e)
					return tp_bad(t, "unclosed comment");
				t->p = e + 2;
				t->rtrim = tspace(*t->p) && t->p[1] == '-' && strncmp(t->p + 2, "}}", 2) == 0;
				if (!t->rtrim && strncmp(t->p, "}}", 2) != 0)
					return tp_bad(t, "comment ends before closing delimiter");
				t->p += t->rtrim ? 4 : 2;
				continue;
			}
		}
		n = NULL;
		if ((rc = parse_action(t, &n, top)) != 0)
			break;
		if (n) {
			*head = n;
			head = &n->next;
		}
	}
	t->depth--;
	return rc;
}

int tmpl_parse(struct arena *ar, const char *src, struct tmpl **out, char *msg)
{
	struct tp t = { .ar = ar, .msg = msg, .nvars = 1, .vars = { "$" } };
	size_t len = strlen(src);
	int rc;

	*out = NULL;
	if (len > TMPL_SRC_MAX) {
		snprintf(msg, TMPL_MSG_SIZE, "longer than 64 KiB");
		return -FB_EINVAL;
	}
	if (!(t.src = t.p = arena_strndup(ar, src, len)) || !(t.t = zalloc(&t, sizeof(*t.t))))
		return -FB_ENOMEM;
	rc = parse_list(&t, &t.t->root, 1);
	if (rc < 0)
		return rc;
	if (rc != T_EOF)
		return tp_bad(&t, "unexpected {{%s}}", rc == T_END ? "end" : "else");
	*out = t.t;
	return 0;
}
