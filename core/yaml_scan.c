/* yaml_scan: errors, the scratch text, lines and scalars (plain, quoted,
 * block) of the YAML subset; the shape of the whole is told in yaml_parse.c. */
#include "yaml.h"
#include "yaml_int.h"

#include "buf.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------ */

int yaml_fail_(struct yp *P, size_t off, int code, const char *fmt, ...)
{
	char detail[sizeof(P->ei->detail)];
	int line, col, n;
	va_list ap;

	json_line_col_(P->b, off, &line, &col);
	n = snprintf(detail, sizeof(detail), "line %d column %d: ", line, col);
	va_start(ap, fmt);
	vsnprintf(detail + n, sizeof(detail) - (size_t)n, fmt, ap);
	va_end(ap);
	return fb_errinfo_set(P->ei, code, 0, P->what, detail);
}

int yaml_oom_(struct yp *P)
{
	return fb_errinfo_set(P->ei, FB_ENOMEM, 0, P->what, NULL);
}

/* ---- the scratch text -------------------------------------------------- */

/* Room for n more bytes and the NUL in the scratch text. */
static int t_reserve(struct yp *P, size_t n)
{
	return buf_reserve(&P->text, n) < 0 ? yaml_oom_(P) : 0;
}

/* Appends s[0..n), or n copies of c when s is NULL. */
static int t_push(struct yp *P, const char *s, char c, size_t n)
{
	int rc = t_reserve(P, n);

	if (rc < 0)
		return rc;
	if (s)
		memcpy(P->text.p + P->text.len, s, n);
	else
		memset(P->text.p + P->text.len, c, n);
	P->text.len += n;
	P->text.p[P->text.len] = '\0';
	return 0;
}

static int t_add(struct yp *P, const char *s, size_t n)
{
	return t_push(P, s, 0, n);
}

static int t_addn(struct yp *P, char c, size_t n)
{
	return t_push(P, NULL, c, n);
}

int yaml_t_set_(struct yp *P, size_t from, size_t to)
{
	P->text.len = 0;
	return t_add(P, P->b + from, to - from);
}

static int t_utf8(struct yp *P, unsigned long cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xC0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xE0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return t_add(P, u, n);
}

/* ---- lines ------------------------------------------------------------- */

/* A lone CR is refused up front, so a CR always starts a CRLF. */
int yaml_eol_(const struct yp *P, size_t i)
{
	return i >= P->len || P->b[i] == '\n' || P->b[i] == '\r';
}

static int ws(const struct yp *P, size_t i)
{
	return i < P->len && (P->b[i] == ' ' || P->b[i] == '\t');
}

/* white space or the line end after an indicator (":", "-", "?") */
int yaml_sep_(const struct yp *P, size_t i)
{
	return yaml_eol_(P, i) || ws(P, i);
}

static int flow_ind(char c)
{
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
}

size_t yaml_skip_ws_(const struct yp *P, size_t i)
{
	while (ws(P, i))
		i++;
	return i;
}

size_t yaml_skip_spaces_(const struct yp *P, size_t i)
{
	while (i < P->len && P->b[i] == ' ')
		i++;
	return i;
}

size_t yaml_line_end_(const struct yp *P, size_t i)
{
	while (!yaml_eol_(P, i))
		i++;
	return i;
}

size_t yaml_next_line_(const struct yp *P, size_t i)
{
	i = yaml_line_end_(P, i);
	if (i < P->len && P->b[i] == '\r')
		i++;
	if (i < P->len && P->b[i] == '\n')
		i++;
	return i;
}

/* Indentation of the node at i: block nodes are preceded on their line only
 * by spaces and "- " indicators, so bytes are columns. */
int yaml_col_of_(const struct yp *P, size_t i)
{
	size_t s = i;

	while (s > 0 && P->b[s - 1] != '\n')
		s--;
	return (int)(i - s);
}

/* '#' starts a comment only at a line start or after white space. */
int yaml_comment_at_(const struct yp *P, size_t i)
{
	return i < P->len && P->b[i] == '#' &&
	       (i == 0 || P->b[i - 1] == ' ' || P->b[i - 1] == '\t' || P->b[i - 1] == '\n');
}

int yaml_marker_at_(const struct yp *P, size_t s, const char *m)
{
	return P->len - s >= 3 && memcmp(P->b + s, m, 3) == 0 && yaml_sep_(P, s + 3);
}

/* Skips blank and comment lines from P->pos (a line start). *indent gets the
 * indentation of the next content line, which P->pos is then the start of,
 * or -1 at the end of the document. */
int yaml_next_content_(struct yp *P, int *indent)
{
	for (;;) {
		size_t s = P->pos, i = yaml_skip_spaces_(P, s), j = yaml_skip_ws_(P, i);

		if (s >= P->len) {
			*indent = -1;
			return 0;
		}
		if (yaml_eol_(P, j) || yaml_comment_at_(P, j)) {
			P->pos = yaml_next_line_(P, j);
			continue;
		}
		if (j != i)
			return yaml_fail_(P, i, FB_EINVAL, "tabs are not allowed in indentation");
		if (i == s && yaml_marker_at_(P, s, "---"))
			return yaml_fail_(P, s, FB_EINVAL, "a second document (---) is not supported");
		if (i == s && yaml_marker_at_(P, s, "...")) {
			/* the end of the document: only comments may follow */
			P->pos = yaml_next_line_(P, s + 3);
			if (yaml_skip_ws_(P, s + 3) != yaml_line_end_(P, s + 3) && !yaml_comment_at_(P, yaml_skip_ws_(P, s + 3)))
				return yaml_fail_(P, yaml_skip_ws_(P, s + 3), FB_EINVAL,
					     "unexpected text after \"...\"");
			for (;;) {
				size_t k = yaml_skip_ws_(P, P->pos);

				if (P->pos >= P->len) {
					*indent = -1;
					return 0;
				}
				if (!yaml_eol_(P, k) && !yaml_comment_at_(P, k))
					return yaml_fail_(P, P->pos, FB_EINVAL,
						     "a second document is not supported");
				P->pos = yaml_next_line_(P, k);
			}
		}
		*indent = (int)(i - s);
		return 0;
	}
}

/* After a complete value at i: only white space or a comment may follow on
 * its line. Moves P->pos to the next line. */
int yaml_finish_line_(struct yp *P, size_t i)
{
	size_t j = yaml_skip_ws_(P, i);

	if (!yaml_eol_(P, j) && !yaml_comment_at_(P, j))
		return yaml_fail_(P, j, FB_EINVAL, "unexpected text after the value");
	P->pos = yaml_next_line_(P, j);
	return 0;
}

/* ---- yaml_locate's hooks ----------------------------------------------- */

/* Called with each member name or item index of the collection at P->depth
 * before its value is parsed; returns what to restore P->match to after. */
int yaml_loc_enter_(struct yp *P, const char *name, size_t off)
{
	int saved = P->match, d = P->depth;

	if (P->loc && !P->hit && P->match == d - 1 && d <= P->nloc &&
	    strcmp(name, P->loc[d - 1]) == 0) {
		if (d == P->nloc) {
			P->hit = 1;
			P->found = off;
		} else {
			P->match = d;
		}
	}
	return saved;
}

int yaml_loc_item_(struct yp *P, size_t idx, size_t off)
{
	char name[24];

	if (!P->loc)
		return P->match;
	snprintf(name, sizeof(name), "%zu", idx);
	return yaml_loc_enter_(P, name, off);
}

/* ---- scalars ----------------------------------------------------------- */

int yaml_enter_(struct yp *P, size_t off)
{
	if (P->depth >= JSON_MAX_DEPTH)
		return yaml_fail_(P, off, FB_EDEPTH, "nested deeper than %d levels", JSON_MAX_DEPTH);
	P->depth++;
	return 0;
}

/* 0 when b[s] may start a plain scalar, else the error saying why not. */
int yaml_plain_start_(struct yp *P, size_t s, int flow)
{
	char c = P->b[s];
	int spaced = yaml_sep_(P, s + 1) || (flow && s + 1 < P->len && flow_ind(P->b[s + 1]));

	switch (c) {
	case '&':
		return yaml_fail_(P, s, FB_EINVAL, "anchors (&) are not supported");
	case '*':
		return yaml_fail_(P, s, FB_EINVAL, "aliases (*) are not supported");
	case '!':
		return yaml_fail_(P, s, FB_EINVAL, "tags (!) are not supported");
	case '?':
		if (spaced)
			return yaml_fail_(P, s, FB_EINVAL, "complex keys (?) are not supported");
		return 0;
	case '-':
		if (spaced)
			return yaml_fail_(P, s, FB_EINVAL, "a sequence item (\"- \") is not allowed here");
		return 0;
	case ':':
		if (spaced)
			return yaml_fail_(P, s, FB_EINVAL, "unexpected ':' (a key is missing)");
		return 0;
	case '%':
	case '@':
	case '`':
	case '|':
	case '>':
	case ',':
	case '[':
	case ']':
	case '{':
	case '}':
	case '#':
	case '"':
	case '\'':
		return yaml_fail_(P, s, FB_EINVAL, "'%c' cannot start a plain scalar (quote the value)", c);
	default:
		return 0;
	}
}

/* The first line of a plain scalar from s: *end is the end of its text
 * (trailing white space dropped), *stop where scanning stopped (the line end,
 * the ':' of a key, a comment's '#' or a flow indicator). */
enum stop yaml_plain_line_(const struct yp *P, size_t s, int flow, size_t *end, size_t *stop)
{
	size_t i = s, e = s;
	enum stop why;

	for (;;) {
		char c;

		if (yaml_eol_(P, i)) {
			why = S_EOL;
			break;
		}
		c = P->b[i];
		if (c == ':' && (yaml_sep_(P, i + 1) || (flow && i + 1 < P->len && flow_ind(P->b[i + 1])))) {
			why = S_COLON;
			break;
		}
		if (c == '#' && i > s && (P->b[i - 1] == ' ' || P->b[i - 1] == '\t')) {
			why = S_COMMENT;
			break;
		}
		if (flow && flow_ind(c)) {
			why = S_FLOW;
			break;
		}
		i++;
		if (c != ' ' && c != '\t')
			e = i;
	}
	*end = e;
	*stop = i;
	return why;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* YAML 1.2 core schema, decimal only:
 * [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
static int is_number(const char *s, size_t n)
{
	size_t i = 0, d = 0, f = 0;

	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	while (i < n && is_digit(s[i]))
		i++, d++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && is_digit(s[i]))
			i++, f++;
	}
	if (d == 0 && f == 0)
		return 0;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		if (i >= n || !is_digit(s[i]))
			return 0;
		while (i < n && is_digit(s[i]))
			i++;
	}
	return i == n;
}

static int is_one_of(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(s, *set) == 0)
			return 1;
	return 0;
}

/* The plain scalar now in P->text.p, resolved by the core schema. */
int yaml_resolve_(struct yp *P, size_t at, struct json **out)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", NULL };
	const char *s = P->text.p ? P->text.p : "";

	if (is_one_of(s, nulls))
		*out = json_new_null();
	else if (is_one_of(s, trues))
		*out = json_new_bool(1);
	else if (is_one_of(s, falses))
		*out = json_new_bool(0);
	else if (is_number(s, P->text.len)) {
		double v = strtod(s, NULL);

		if (!isfinite(v))
			return yaml_fail_(P, at, FB_EINVAL, "number out of range");
		*out = json_new_number(v);
	} else {
		*out = json_new_string(s);
	}
	return *out ? 0 : yaml_oom_(P);
}

/* A plain scalar value whose first line is b[s..end), scanning having
 * stopped at stop for reason why; continuation lines must be indented more
 * than n and are folded (one line break: a space; k empty lines: k "\n"). */
int yaml_plain_value_(struct yp *P, size_t s, size_t end, size_t stop, enum stop why, int n,
		      struct json **out)
{
	int rc = yaml_t_set_(P, s, end);

	while (rc == 0 && why == S_EOL) {
		size_t ls = yaml_next_line_(P, stop), k = 0, i, j, e;

		while (ls < P->len) {
			j = yaml_skip_ws_(P, ls);
			if (j >= P->len || !yaml_eol_(P, j))
				break;
			k++;
			ls = yaml_next_line_(P, j);
		}
		i = yaml_skip_spaces_(P, ls);
		j = yaml_skip_ws_(P, i);
		if (yaml_eol_(P, j) || (int)(i - ls) <= n || yaml_comment_at_(P, j) ||
		    (i == ls && (yaml_marker_at_(P, ls, "---") || yaml_marker_at_(P, ls, "..."))))
			break; /* not a continuation: the line belongs to the parent */
		if (j != i)
			return yaml_fail_(P, i, FB_EINVAL, "tabs are not allowed in indentation");
		why = yaml_plain_line_(P, j, 0, &e, &stop);
		if (why == S_COLON)
			return yaml_fail_(P, stop, FB_EINVAL,
				     "mapping values are not allowed here (check the indentation)");
		rc = k ? t_addn(P, '\n', k) : t_add(P, " ", 1);
		if (rc == 0)
			rc = t_add(P, P->b + j, e - j);
	}
	if (rc < 0)
		return rc;
	P->pos = yaml_next_line_(P, stop);
	return yaml_resolve_(P, s, out);
}

static int hexdigits(const struct yp *P, size_t i, int n, unsigned long *out)
{
	unsigned long v = 0;

	if (P->len - i < (size_t)n)
		return -1;
	for (int k = 0; k < n; k++) {
		char c = P->b[i + (size_t)k];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned long)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned long)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned long)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* One escape (not a line break) at the backslash b[*ip], appended to P->text. */
static int escape(struct yp *P, size_t *ip)
{
	static const char simple[] = "a\ab\bt\tn\nv\vf\fr\re\x1b \040\"\"//\\\\\t\t";
	size_t i = *ip;
	unsigned long cp, lo;
	const char *m;
	int nhex;
	char e = P->b[i + 1];

	for (m = simple; *m; m += 2)
		if (*m == e) {
			*ip = i + 2;
			return t_add(P, m + 1, 1);
		}
	switch (e) {
	case 'N':
		cp = 0x85;
		nhex = 0;
		break;
	case '_':
		cp = 0xA0;
		nhex = 0;
		break;
	case 'L':
		cp = 0x2028;
		nhex = 0;
		break;
	case 'P':
		cp = 0x2029;
		nhex = 0;
		break;
	case '0':
		return yaml_fail_(P, i, FB_EINVAL, "NUL characters are not supported");
	case 'x':
		nhex = 2;
		break;
	case 'u':
		nhex = 4;
		break;
	case 'U':
		nhex = 8;
		break;
	default:
		return yaml_fail_(P, i, FB_EINVAL, "invalid escape sequence");
	}
	if (nhex && hexdigits(P, i + 2, nhex, &cp) < 0)
		return yaml_fail_(P, i, FB_EINVAL, "invalid escape sequence");
	i += 2 + (size_t)nhex;
	if (cp == 0)
		return yaml_fail_(P, *ip, FB_EINVAL, "NUL characters are not supported");
	/* JSON writers escape beyond the BMP as a UTF-16 pair: join it */
	if (nhex == 4 && cp >= 0xD800 && cp <= 0xDBFF) {
		if (P->len - i < 6 || P->b[i] != '\\' || P->b[i + 1] != 'u' ||
		    hexdigits(P, i + 2, 4, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
			return yaml_fail_(P, *ip, FB_EINVAL, "unpaired UTF-16 surrogate in escape");
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		i += 6;
	}
	if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return yaml_fail_(P, *ip, FB_EINVAL, "escape is not a Unicode character");
	*ip = i;
	return t_utf8(P, cp);
}

/* A quoted scalar at its opening quote b[s], into P->text. *after is the offset
 * past the closing quote; *multi says whether it spans lines. Line breaks
 * fold as in plain scalars; white space around them is not content. */
int yaml_quoted_(struct yp *P, size_t s, size_t *after, int *multi)
{
	char q = P->b[s];
	size_t i = s + 1, keep = 0; /* P->text.p up to keep is content that folding cannot trim */
	int rc = 0;

	P->text.len = 0;
	*multi = 0;
	if (t_reserve(P, 0) < 0)
		return -FB_ENOMEM;
	P->text.p[0] = '\0';
	while (rc == 0) {
		char c;

		if (i >= P->len)
			return yaml_fail_(P, s, FB_EINVAL, q == '"' ? "unterminated double-quoted scalar" :
								 "unterminated single-quoted scalar");
		c = P->b[i];
		if (c == q) {
			if (q == '\'' && i + 1 < P->len && P->b[i + 1] == '\'') {
				rc = t_add(P, "'", 1);
				i += 2;
				keep = P->text.len;
				continue;
			}
			*after = i + 1;
			return 0;
		}
		if (c == '\n' || c == '\r' || (q == '"' && c == '\\' && yaml_eol_(P, i + 1) && i + 1 < P->len)) {
			size_t k = 0;
			int escaped = c == '\\';

			if (!escaped)
				while (P->text.len > keep &&
				       (P->text.p[P->text.len - 1] == ' ' || P->text.p[P->text.len - 1] == '\t'))
					buf_truncate(&P->text, P->text.len - 1);
			i = yaml_next_line_(P, i + (size_t)escaped);
			while (i < P->len) {
				size_t j = yaml_skip_ws_(P, i);

				if (j >= P->len || !yaml_eol_(P, j))
					break;
				k++;
				i = yaml_next_line_(P, j);
			}
			i = yaml_skip_ws_(P, i);
			*multi = 1;
			rc = k ? t_addn(P, '\n', k) : escaped ? 0 : t_add(P, " ", 1);
			keep = P->text.len;
			continue;
		}
		if (q == '"' && c == '\\') {
			if (i + 1 >= P->len)
				return yaml_fail_(P, s, FB_EINVAL, "unterminated double-quoted scalar");
			rc = escape(P, &i);
			keep = P->text.len;
			continue;
		}
		rc = t_add(P, &c, 1);
		i++;
	}
	return rc;
}

/* | or > at b[off], for a node whose parent is indented n. */
int yaml_block_scalar_(struct yp *P, size_t off, int n, struct json **out)
{
	int folded = P->b[off] == '>', chomp = 0, explicit = 0, first = 1, prev_more = 0, brk = 0;
	size_t i = off + 1, j, pos, e = 0, m, min = n < 0 ? 1 : (size_t)n + 1;
	int rc = 0;

	for (int k = 0; k < 2 && i < P->len; k++) {
		char c = P->b[i];

		if ((c == '-' || c == '+') && !chomp)
			chomp = c == '-' ? -1 : 1;
		else if (c >= '1' && c <= '9' && !explicit)
			explicit = c - '0';
		else
			break;
		i++;
	}
	j = yaml_skip_ws_(P, i);
	if (!yaml_eol_(P, j) && !(j > i && yaml_comment_at_(P, j)))
		return yaml_fail_(P, j, FB_EINVAL, "unexpected text after the block scalar indicator");
	pos = yaml_next_line_(P, j);
	if (explicit) {
		m = (n < 0 ? 0 : (size_t)n) + (size_t)explicit;
	} else {
		/* the first line with more than spaces sets the indentation, as
		 * do longer all-space lines before it (libyaml's rule: such a
		 * line cannot then be content) */
		m = min;
		for (size_t l = pos; l < P->len; l = yaml_next_line_(P, l)) {
			size_t s = yaml_skip_spaces_(P, l);

			if (s - l > m)
				m = s - l;
			if (!yaml_eol_(P, s))
				break;
		}
	}
	P->text.len = 0;
	if (t_reserve(P, 0) < 0)
		return -FB_ENOMEM;
	P->text.p[0] = '\0';
	while (rc == 0 && pos < P->len) {
		size_t s = yaml_skip_spaces_(P, pos), le = yaml_line_end_(P, s), from;
		int more;

		if (yaml_eol_(P, s) && s - pos <= m) {
			e += s < P->len; /* an empty line, if it ends in a break */
			pos = yaml_next_line_(P, s);
			continue;
		}
		if (s - pos < m)
			break; /* less indented: the parent's */
		from = pos + m;
		more = P->b[from] == ' ' || P->b[from] == '\t';
		if (first)
			rc = t_addn(P, '\n', e);
		else if (folded && !prev_more && !more)
			rc = e ? t_addn(P, '\n', e) : t_add(P, " ", 1);
		else
			rc = t_addn(P, '\n', e + 1);
		if (rc == 0)
			rc = t_add(P, P->b + from, le - from);
		first = 0;
		prev_more = more;
		e = 0;
		brk = le < P->len; /* the last line's break is content too */
		pos = yaml_next_line_(P, le);
	}
	if (rc == 0 && chomp >= 0 && brk)
		rc = t_addn(P, '\n', 1);
	if (rc == 0 && chomp > 0)
		rc = t_addn(P, '\n', e);
	if (rc < 0)
		return rc;
	P->pos = pos;
	*out = json_new_string(P->text.p);
	return *out ? 0 : yaml_oom_(P);
}
