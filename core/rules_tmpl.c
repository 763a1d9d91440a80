/* rules_tmpl: the template subset (upstream pkg/apis/nfd/template: Go's
 * text/template), parsed once when a rule compiles: a lexer for actions and
 * a recursive descent parser into the tnode tree rules_exec.c runs. The
 * subset, and what is refused, is listed in rules.c. */
#include "rules_int.h"

#include "err.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const rules_fn_names_[F_COUNT] = { "", "lower", "upper", "trim", "replace", "printf",
					       "eq", "ne", "not", "and", "or", "index" };

enum { K_CLOSE, K_PIPE, K_LP, K_RP, K_FIELD, K_DOT, K_IDENT, K_STR, K_NUM };
enum { T_EOF, T_END, T_ELSE, T_ELSEIF };

struct tok {
	int k;
	const char *s;
	size_t len;
};

struct tp {
	struct arena *ar;
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
	return rules_msgf_(t->msg, "%s: line %d: %s", t->what, line, detail);
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
	if (!(d = rules_zalloc_(t->ar, (size_t)(e - p) + 1)))
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
		if (!(a->f = rules_zalloc_(t->ar, a->nf * sizeof(*a->f))))
			return -FB_ENOMEM;
		for (size_t i = 0, n = 0; i < k->len; n++) {
			size_t e = ++i;

			while (e < k->len && k->s[e] != '.')
				e++;
			if (!(a->f[n] = arena_strndup(t->ar, k->s + i, e - i)))
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
		if (k->len >= sizeof(num) || rules_parse_int_(num, &a->i) < 0)
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
		struct tcmd *c = rules_zalloc_(t->ar, sizeof(*c));

		if (!c)
			return -FB_ENOMEM;
		memset(a, 0, sizeof(a));
		if (k.k == closer || k.k == K_PIPE)
			return tp_bad(t, "missing value for command");
		if (k.k == K_IDENT && !is(&k, "true") && !is(&k, "false")) {
			for (c->fn = F_COUNT - 1; c->fn > F_NONE && !is(&k, rules_fn_names_[c->fn]); c->fn--)
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
		if (!(c->a = rules_zalloc_(t->ar, c->na * sizeof(*a))))
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
			struct tnode *m = rules_zalloc_(t->ar, sizeof(*m));

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
	if (!(n = rules_zalloc_(t->ar, sizeof(*n))))
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
			if (!(n = rules_zalloc_(t->ar, sizeof(*n))))
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

int rules_tmpl_parse_(struct arena *ar, const char *src, const char *what, struct tnode **out, char *msg)
{
	struct tp t = { .ar = ar, .what = what, .msg = msg };
	struct tcmd *elif = NULL;
	size_t len = strlen(src);
	int rc;

	if (len > TMPL_SRC_MAX)
		return rules_msgf_(msg, "%s: longer than 64 KiB", what);
	if (!(t.src = t.p = arena_strndup(ar, src, len)))
		return -FB_ENOMEM;
	rc = parse_list(&t, out, &elif);
	if (rc > T_EOF)
		return tp_bad(&t, "unexpected {{%s}}", rc == T_END ? "end" : "else");
	return rc;
}
