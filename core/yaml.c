/* yaml: the strict subset of YAML 1.2 described in yaml.h, by recursive
 * descent straight into a json tree (built with json.h only).
 *
 * The shape: block collections are parsed line by line. next_content() finds
 * the next line that is neither blank nor a comment and returns its
 * indentation; a block mapping or sequence owns the lines at its own
 * indentation and returns when a line is less indented. Everything that fits
 * on one line (keys, plain and quoted scalars, flow collections) is scanned
 * by offset; quoted scalars, plain scalars and flow collections may continue
 * on more-indented lines, and block scalars (| >) take the lines indented
 * past their parent. Every node parser leaves P->pos at the start of the line
 * after the node.
 *
 * Deliberate choices within YAML 1.2:
 * - Keys are always strings, as written ("1: x" gives {"1": "x"}, "true:"
 *   gives {"true": ...}), since JSON keys are strings; "<<" is an ordinary key.
 * - Only decimal numbers are numbers: 0x1f, 0o17, .inf and .nan stay strings,
 *   and a decimal that overflows a double (1e999) is an error rather than an
 *   infinity, which JSON cannot hold.
 * - Plain scalars inside flow collections end at the line end (a flow
 *   collection itself may span lines).
 * - A tab is refused anywhere in the indentation of a block line, including
 *   between "- " and the item ("-\tfoo").
 * - Columns in messages count characters (UTF-8 lead bytes), from 1; line 1
 *   starts after a byte order mark.
 * - \0, \x00 and \u0000 escapes are refused like NUL bytes (JSON strings
 *   here are C strings). */
#include "yaml.h"

#include "buf.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct yp {
	const char *b;  /* the document, after any byte order mark */
	size_t len;
	size_t pos;     /* start of the line the next block node is looked for on */
	int depth;      /* collections open around the current node */
	const char *what;
	struct fb_errinfo *ei;
	struct buf text; /* scalar text being built (scratch, reused) */
	/* yaml_locate: the path looked for, how many of its names the open
	 * collections match, and where the target was found */
	const char *const *loc;
	int nloc, match, hit;
	size_t found, root; /* root: where the root node starts */
};

enum stop { S_EOL, S_COLON, S_COMMENT, S_FLOW };

/* ---- errors ------------------------------------------------------------ */

static int yfail(struct yp *P, size_t off, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int yfail(struct yp *P, size_t off, int code, const char *fmt, ...)
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

static int oom(struct yp *P)
{
	return fb_errinfo_set(P->ei, FB_ENOMEM, 0, P->what, NULL);
}

/* ---- the scratch text -------------------------------------------------- */

/* Room for n more bytes and the NUL in the scratch text. */
static int t_reserve(struct yp *P, size_t n)
{
	return buf_reserve(&P->text, n) < 0 ? oom(P) : 0;
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

static int t_set(struct yp *P, size_t from, size_t to)
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
static int eol(const struct yp *P, size_t i)
{
	return i >= P->len || P->b[i] == '\n' || P->b[i] == '\r';
}

static int ws(const struct yp *P, size_t i)
{
	return i < P->len && (P->b[i] == ' ' || P->b[i] == '\t');
}

/* white space or the line end after an indicator (":", "-", "?") */
static int sep(const struct yp *P, size_t i)
{
	return eol(P, i) || ws(P, i);
}

static int flow_ind(char c)
{
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}';
}

static size_t skip_ws(const struct yp *P, size_t i)
{
	while (ws(P, i))
		i++;
	return i;
}

static size_t skip_spaces(const struct yp *P, size_t i)
{
	while (i < P->len && P->b[i] == ' ')
		i++;
	return i;
}

static size_t line_end(const struct yp *P, size_t i)
{
	while (!eol(P, i))
		i++;
	return i;
}

static size_t next_line(const struct yp *P, size_t i)
{
	i = line_end(P, i);
	if (i < P->len && P->b[i] == '\r')
		i++;
	if (i < P->len && P->b[i] == '\n')
		i++;
	return i;
}

/* Indentation of the node at i: block nodes are preceded on their line only
 * by spaces and "- " indicators, so bytes are columns. */
static int col_of(const struct yp *P, size_t i)
{
	size_t s = i;

	while (s > 0 && P->b[s - 1] != '\n')
		s--;
	return (int)(i - s);
}

/* '#' starts a comment only at a line start or after white space. */
static int comment_at(const struct yp *P, size_t i)
{
	return i < P->len && P->b[i] == '#' &&
	       (i == 0 || P->b[i - 1] == ' ' || P->b[i - 1] == '\t' || P->b[i - 1] == '\n');
}

static int marker_at(const struct yp *P, size_t s, const char *m)
{
	return P->len - s >= 3 && memcmp(P->b + s, m, 3) == 0 && sep(P, s + 3);
}

/* Skips blank and comment lines from P->pos (a line start). *indent gets the
 * indentation of the next content line, which P->pos is then the start of,
 * or -1 at the end of the document. */
static int next_content(struct yp *P, int *indent)
{
	for (;;) {
		size_t s = P->pos, i = skip_spaces(P, s), j = skip_ws(P, i);

		if (s >= P->len) {
			*indent = -1;
			return 0;
		}
		if (eol(P, j) || comment_at(P, j)) {
			P->pos = next_line(P, j);
			continue;
		}
		if (j != i)
			return yfail(P, i, FB_EINVAL, "tabs are not allowed in indentation");
		if (i == s && marker_at(P, s, "---"))
			return yfail(P, s, FB_EINVAL, "a second document (---) is not supported");
		if (i == s && marker_at(P, s, "...")) {
			/* the end of the document: only comments may follow */
			P->pos = next_line(P, s + 3);
			if (skip_ws(P, s + 3) != line_end(P, s + 3) && !comment_at(P, skip_ws(P, s + 3)))
				return yfail(P, skip_ws(P, s + 3), FB_EINVAL,
					     "unexpected text after \"...\"");
			for (;;) {
				size_t k = skip_ws(P, P->pos);

				if (P->pos >= P->len) {
					*indent = -1;
					return 0;
				}
				if (!eol(P, k) && !comment_at(P, k))
					return yfail(P, P->pos, FB_EINVAL,
						     "a second document is not supported");
				P->pos = next_line(P, k);
			}
		}
		*indent = (int)(i - s);
		return 0;
	}
}

/* After a complete value at i: only white space or a comment may follow on
 * its line. Moves P->pos to the next line. */
static int finish_line(struct yp *P, size_t i)
{
	size_t j = skip_ws(P, i);

	if (!eol(P, j) && !comment_at(P, j))
		return yfail(P, j, FB_EINVAL, "unexpected text after the value");
	P->pos = next_line(P, j);
	return 0;
}

/* ---- yaml_locate's hooks ----------------------------------------------- */

/* Called with each member name or item index of the collection at P->depth
 * before its value is parsed; returns what to restore P->match to after. */
static int loc_enter(struct yp *P, const char *name, size_t off)
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

static int loc_item(struct yp *P, size_t idx, size_t off)
{
	char name[24];

	if (!P->loc)
		return P->match;
	snprintf(name, sizeof(name), "%zu", idx);
	return loc_enter(P, name, off);
}

/* ---- scalars ----------------------------------------------------------- */

static int enter(struct yp *P, size_t off)
{
	if (P->depth >= JSON_MAX_DEPTH)
		return yfail(P, off, FB_EDEPTH, "nested deeper than %d levels", JSON_MAX_DEPTH);
	P->depth++;
	return 0;
}

/* 0 when b[s] may start a plain scalar, else the error saying why not. */
static int plain_start(struct yp *P, size_t s, int flow)
{
	char c = P->b[s];
	int spaced = sep(P, s + 1) || (flow && s + 1 < P->len && flow_ind(P->b[s + 1]));

	switch (c) {
	case '&':
		return yfail(P, s, FB_EINVAL, "anchors (&) are not supported");
	case '*':
		return yfail(P, s, FB_EINVAL, "aliases (*) are not supported");
	case '!':
		return yfail(P, s, FB_EINVAL, "tags (!) are not supported");
	case '?':
		if (spaced)
			return yfail(P, s, FB_EINVAL, "complex keys (?) are not supported");
		return 0;
	case '-':
		if (spaced)
			return yfail(P, s, FB_EINVAL, "a sequence item (\"- \") is not allowed here");
		return 0;
	case ':':
		if (spaced)
			return yfail(P, s, FB_EINVAL, "unexpected ':' (a key is missing)");
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
		return yfail(P, s, FB_EINVAL, "'%c' cannot start a plain scalar (quote the value)", c);
	default:
		return 0;
	}
}

/* The first line of a plain scalar from s: *end is the end of its text
 * (trailing white space dropped), *stop where scanning stopped (the line end,
 * the ':' of a key, a comment's '#' or a flow indicator). */
static enum stop plain_line(const struct yp *P, size_t s, int flow, size_t *end, size_t *stop)
{
	size_t i = s, e = s;
	enum stop why;

	for (;;) {
		char c;

		if (eol(P, i)) {
			why = S_EOL;
			break;
		}
		c = P->b[i];
		if (c == ':' && (sep(P, i + 1) || (flow && i + 1 < P->len && flow_ind(P->b[i + 1])))) {
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
static int resolve(struct yp *P, size_t at, struct json **out)
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
			return yfail(P, at, FB_EINVAL, "number out of range");
		*out = json_new_number(v);
	} else {
		*out = json_new_string(s);
	}
	return *out ? 0 : oom(P);
}

/* A plain scalar value whose first line is b[s..end), scanning having
 * stopped at stop for reason why; continuation lines must be indented more
 * than n and are folded (one line break: a space; k empty lines: k "\n"). */
static int plain_value(struct yp *P, size_t s, size_t end, size_t stop, enum stop why, int n,
		       struct json **out)
{
	int rc = t_set(P, s, end);

	while (rc == 0 && why == S_EOL) {
		size_t ls = next_line(P, stop), k = 0, i, j, e;

		while (ls < P->len) {
			j = skip_ws(P, ls);
			if (j >= P->len || !eol(P, j))
				break;
			k++;
			ls = next_line(P, j);
		}
		i = skip_spaces(P, ls);
		j = skip_ws(P, i);
		if (eol(P, j) || (int)(i - ls) <= n || comment_at(P, j) ||
		    (i == ls && (marker_at(P, ls, "---") || marker_at(P, ls, "..."))))
			break; /* not a continuation: the line belongs to the parent */
		if (j != i)
			return yfail(P, i, FB_EINVAL, "tabs are not allowed in indentation");
		why = plain_line(P, j, 0, &e, &stop);
		if (why == S_COLON)
			return yfail(P, stop, FB_EINVAL,
				     "mapping values are not allowed here (check the indentation)");
		rc = k ? t_addn(P, '\n', k) : t_add(P, " ", 1);
		if (rc == 0)
			rc = t_add(P, P->b + j, e - j);
	}
	if (rc < 0)
		return rc;
	P->pos = next_line(P, stop);
	return resolve(P, s, out);
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
		return yfail(P, i, FB_EINVAL, "NUL characters are not supported");
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
		return yfail(P, i, FB_EINVAL, "invalid escape sequence");
	}
	if (nhex && hexdigits(P, i + 2, nhex, &cp) < 0)
		return yfail(P, i, FB_EINVAL, "invalid escape sequence");
	i += 2 + (size_t)nhex;
	if (cp == 0)
		return yfail(P, *ip, FB_EINVAL, "NUL characters are not supported");
	/* JSON writers escape beyond the BMP as a UTF-16 pair: join it */
	if (nhex == 4 && cp >= 0xD800 && cp <= 0xDBFF) {
		if (P->len - i < 6 || P->b[i] != '\\' || P->b[i + 1] != 'u' ||
		    hexdigits(P, i + 2, 4, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
			return yfail(P, *ip, FB_EINVAL, "unpaired UTF-16 surrogate in escape");
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		i += 6;
	}
	if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return yfail(P, *ip, FB_EINVAL, "escape is not a Unicode character");
	*ip = i;
	return t_utf8(P, cp);
}

/* A quoted scalar at its opening quote b[s], into P->text. *after is the offset
 * past the closing quote; *multi says whether it spans lines. Line breaks
 * fold as in plain scalars; white space around them is not content. */
static int quoted(struct yp *P, size_t s, size_t *after, int *multi)
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
			return yfail(P, s, FB_EINVAL, q == '"' ? "unterminated double-quoted scalar" :
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
		if (c == '\n' || c == '\r' || (q == '"' && c == '\\' && eol(P, i + 1) && i + 1 < P->len)) {
			size_t k = 0;
			int escaped = c == '\\';

			if (!escaped)
				while (P->text.len > keep &&
				       (P->text.p[P->text.len - 1] == ' ' || P->text.p[P->text.len - 1] == '\t'))
					buf_truncate(&P->text, P->text.len - 1);
			i = next_line(P, i + (size_t)escaped);
			while (i < P->len) {
				size_t j = skip_ws(P, i);

				if (j >= P->len || !eol(P, j))
					break;
				k++;
				i = next_line(P, j);
			}
			i = skip_ws(P, i);
			*multi = 1;
			rc = k ? t_addn(P, '\n', k) : escaped ? 0 : t_add(P, " ", 1);
			keep = P->text.len;
			continue;
		}
		if (q == '"' && c == '\\') {
			if (i + 1 >= P->len)
				return yfail(P, s, FB_EINVAL, "unterminated double-quoted scalar");
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
static int block_scalar(struct yp *P, size_t off, int n, struct json **out)
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
	j = skip_ws(P, i);
	if (!eol(P, j) && !(j > i && comment_at(P, j)))
		return yfail(P, j, FB_EINVAL, "unexpected text after the block scalar indicator");
	pos = next_line(P, j);
	if (explicit) {
		m = (n < 0 ? 0 : (size_t)n) + (size_t)explicit;
	} else {
		/* the first line with more than spaces sets the indentation, as
		 * do longer all-space lines before it (libyaml's rule: such a
		 * line cannot then be content) */
		m = min;
		for (size_t l = pos; l < P->len; l = next_line(P, l)) {
			size_t s = skip_spaces(P, l);

			if (s - l > m)
				m = s - l;
			if (!eol(P, s))
				break;
		}
	}
	P->text.len = 0;
	if (t_reserve(P, 0) < 0)
		return -FB_ENOMEM;
	P->text.p[0] = '\0';
	while (rc == 0 && pos < P->len) {
		size_t s = skip_spaces(P, pos), le = line_end(P, s), from;
		int more;

		if (eol(P, s) && s - pos <= m) {
			e += s < P->len; /* an empty line, if it ends in a break */
			pos = next_line(P, s);
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
		pos = next_line(P, le);
	}
	if (rc == 0 && chomp >= 0 && brk)
		rc = t_addn(P, '\n', 1);
	if (rc == 0 && chomp > 0)
		rc = t_addn(P, '\n', e);
	if (rc < 0)
		return rc;
	P->pos = pos;
	*out = json_new_string(P->text.p);
	return *out ? 0 : oom(P);
}

/* ---- collections ------------------------------------------------------- */

static int parse_node(struct yp *P, size_t off, int n, int blk, struct json **out);
static int flow_node(struct yp *P, size_t i, int n, struct json **out, size_t *end);

static char *t_dup(struct yp *P)
{
	char *s = malloc(P->text.len + 1);

	if (!s) {
		oom(P);
		return NULL;
	}
	memcpy(s, P->text.p ? P->text.p : "", P->text.len);
	s[P->text.len] = '\0';
	return s;
}

/* The key of a block mapping entry at off, owned by the caller, and the
 * offset after its ':'. */
static int block_key(struct yp *P, size_t off, char **key, size_t *after)
{
	char c = P->b[off];
	size_t end, stop, j;
	int rc, multi;

	if (c == '"' || c == '\'') {
		if ((rc = quoted(P, off, &end, &multi)) < 0)
			return rc;
		j = skip_ws(P, end);
		if (eol(P, j) || P->b[j] != ':' || !sep(P, j + 1))
			return yfail(P, off, FB_EINVAL, "expected \"key: value\"");
		if (multi)
			return yfail(P, off, FB_EINVAL, "a key must be on one line");
		*after = j + 1;
	} else {
		if (c == '-' && sep(P, off + 1))
			return yfail(P, off, FB_EINVAL,
				     "expected \"key: value\", found a sequence item");
		if (c == '[' || c == '{')
			return yfail(P, off, FB_EINVAL, "flow collections as keys are not supported");
		if ((rc = plain_start(P, off, 0)) < 0)
			return rc;
		if (plain_line(P, off, 0, &end, &stop) != S_COLON)
			return yfail(P, off, FB_EINVAL, "expected \"key: value\"");
		if ((rc = t_set(P, off, end)) < 0)
			return rc;
		*after = stop + 1;
	}
	*key = t_dup(P);
	return *key ? 0 : -FB_ENOMEM;
}

static int parse_bseq(struct yp *P, size_t off, int indentless, struct json **out);

/* A block mapping whose first key is at off; its indentation is off's
 * column. */
static int parse_bmap(struct yp *P, size_t off, struct json **out)
{
	int c = col_of(P, off), ind, rc, saved;
	struct json *map, *val = NULL;
	size_t after = 0, v;
	char *key = NULL;

	if ((rc = enter(P, off)) < 0)
		return rc;
	if (!(map = json_new_object()))
		return oom(P);
	for (;;) {
		if ((rc = block_key(P, off, &key, &after)) < 0)
			goto fail;
		if (json_get(map, key)) {
			rc = yfail(P, off, FB_EINVAL, "duplicate key \"%.80s\"", key);
			free(key);
			goto fail;
		}
		saved = loc_enter(P, key, off);
		v = skip_ws(P, after);
		if (eol(P, v) || comment_at(P, v)) {
			/* the value is on the next lines, or null */
			P->pos = next_line(P, v);
			rc = next_content(P, &ind);
			if (rc == 0 && ind > c)
				rc = parse_node(P, P->pos + (size_t)ind, c, 1, &val);
			else if (rc == 0 && ind == c && P->b[P->pos + (size_t)ind] == '-' &&
				 sep(P, P->pos + (size_t)ind + 1))
				rc = parse_bseq(P, P->pos + (size_t)ind, 1, &val); /* key:\n- item */
			else if (rc == 0 && !(val = json_new_null()))
				rc = oom(P);
		} else {
			rc = parse_node(P, v, c, 0, &val);
		}
		P->match = saved;
		if (rc == 0 && json_set_take(map, key, val) < 0)
			rc = oom(P);
		free(key);
		if (rc < 0 || (rc = next_content(P, &ind)) < 0)
			goto fail;
		if (ind < c)
			break;
		if (ind > c) {
			rc = yfail(P, P->pos + (size_t)ind, FB_EINVAL, "inconsistent indentation");
			goto fail;
		}
		off = P->pos + (size_t)ind;
	}
	P->depth--;
	*out = map;
	return 0;
fail:
	json_free(map);
	return rc;
}

/* A block sequence whose first "-" is at off. An indentless one is the value
 * of a mapping key at the same indentation and ends at the first line there
 * that is not an item. */
static int parse_bseq(struct yp *P, size_t off, int indentless, struct json **out)
{
	int c = col_of(P, off), ind, rc, saved;
	struct json *arr, *val = NULL;
	size_t idx = 0;

	if ((rc = enter(P, off)) < 0)
		return rc;
	if (!(arr = json_new_array()))
		return oom(P);
	for (;;) {
		size_t w = skip_spaces(P, off + 1), j = skip_ws(P, w);

		saved = loc_item(P, idx++, off);
		if (eol(P, j) || comment_at(P, j)) {
			P->pos = next_line(P, j);
			rc = next_content(P, &ind);
			if (rc == 0 && ind > c)
				rc = parse_node(P, P->pos + (size_t)ind, c, 1, &val);
			else if (rc == 0 && !(val = json_new_null()))
				rc = oom(P);
		} else if (j != w) {
			rc = yfail(P, w, FB_EINVAL, "tabs are not allowed in indentation");
		} else {
			rc = parse_node(P, j, c, 1, &val);
		}
		P->match = saved;
		if (rc == 0 && json_append_take(arr, val) < 0)
			rc = oom(P);
		if (rc < 0 || (rc = next_content(P, &ind)) < 0)
			goto fail;
		if (ind < c)
			break;
		if (ind > c) {
			rc = yfail(P, P->pos + (size_t)ind, FB_EINVAL, "inconsistent indentation");
			goto fail;
		}
		off = P->pos + (size_t)ind;
		if (P->b[off] != '-' || !sep(P, off + 1)) {
			if (indentless)
				break;
			rc = yfail(P, off, FB_EINVAL, "expected a sequence item (\"- \")");
			goto fail;
		}
	}
	P->depth--;
	*out = arr;
	return 0;
fail:
	json_free(arr);
	return rc;
}

/* White space, line breaks and comments inside the flow collection opened at
 * b[open], from i; *out is the next token. A continuation line must be
 * indented past n, the parent's indentation. */
static int flow_ws(struct yp *P, size_t i, int n, size_t open, size_t *out)
{
	for (;;) {
		i = skip_ws(P, i);
		if (comment_at(P, i))
			i = line_end(P, i);
		if (i >= P->len)
			break;
		if (!eol(P, i)) {
			*out = i;
			return 0;
		}
		i = next_line(P, i);
		if (i < P->len) {
			size_t s = skip_spaces(P, i), j = skip_ws(P, s);

			/* the common "key: [\n  a,\n]" puts the bracket at the key's
			 * indentation, which YAML parsers accept */
			if (!eol(P, j) && !comment_at(P, j) && (int)(s - i) <= n &&
			    P->b[j] != ']' && P->b[j] != '}')
				break;
		}
	}
	return yfail(P, open, FB_EINVAL, P->b[open] == '[' ? "unterminated flow sequence" :
							  "unterminated flow mapping");
}

/* The key of a flow mapping entry at i (owned by the caller); *end is past it. */
static int flow_key(struct yp *P, size_t i, char **key, size_t *end)
{
	char c = P->b[i];
	size_t e;
	int rc, multi;

	if (c == '"' || c == '\'') {
		if ((rc = quoted(P, i, end, &multi)) < 0)
			return rc;
		if (multi)
			return yfail(P, i, FB_EINVAL, "a key must be on one line");
	} else {
		if (c == '[' || c == '{')
			return yfail(P, i, FB_EINVAL, "flow collections as keys are not supported");
		if ((rc = plain_start(P, i, 1)) < 0)
			return rc;
		plain_line(P, i, 1, &e, end);
		if ((rc = t_set(P, i, e)) < 0)
			return rc;
	}
	*key = t_dup(P);
	return *key ? 0 : -FB_ENOMEM;
}

/* A flow collection at its bracket b[open]; *end is past the closing one. */
static int parse_flow(struct yp *P, size_t open, int n, struct json **out, size_t *end)
{
	int map = P->b[open] == '{', rc, saved;
	char close = map ? '}' : ']';
	struct json *coll, *val;
	size_t i = open + 1, idx = 0, at;
	char *key = NULL;

	if ((rc = enter(P, open)) < 0)
		return rc;
	if (!(coll = map ? json_new_object() : json_new_array()))
		return oom(P);
	for (;;) {
		if ((rc = flow_ws(P, i, n, open, &i)) < 0)
			goto fail;
		if (P->b[i] == close) {
			i++;
			break;
		}
		at = i;
		val = NULL;
		if (map) {
			if ((rc = flow_key(P, i, &key, &i)) < 0 || (rc = flow_ws(P, i, n, open, &i)) < 0)
				goto fail;
			if (json_get(coll, key)) {
				rc = yfail(P, at, FB_EINVAL, "duplicate key \"%.80s\"", key);
				goto fail;
			}
			saved = loc_enter(P, key, at);
			if (P->b[i] == ':') {
				rc = flow_ws(P, i + 1, n, open, &i);
				if (rc == 0 && P->b[i] != ',' && P->b[i] != '}')
					rc = flow_node(P, i, n, &val, &i);
			}
			if (rc == 0 && !val && !(val = json_new_null()))
				rc = oom(P);
			P->match = saved;
			if (rc == 0 && json_set_take(coll, key, val) < 0)
				rc = oom(P);
			free(key);
			key = NULL;
		} else {
			saved = loc_item(P, idx++, at);
			rc = flow_node(P, i, n, &val, &i);
			P->match = saved;
			if (rc == 0 && json_append_take(coll, val) < 0)
				rc = oom(P);
		}
		if (rc < 0 || (rc = flow_ws(P, i, n, open, &i)) < 0)
			goto fail;
		if (P->b[i] == ',') {
			i++;
			continue;
		}
		if (P->b[i] == close) {
			i++;
			break;
		}
		if (!map && P->b[i] == ':')
			rc = yfail(P, i, FB_EINVAL,
				   "mappings inside flow sequences are not supported");
		else
			rc = yfail(P, i, FB_EINVAL, map ? "expected ',' or '}'" : "expected ',' or ']'");
		goto fail;
	}
	P->depth--;
	*out = coll;
	*end = i;
	return 0;
fail:
	free(key);
	json_free(coll);
	return rc;
}

/* A value inside a flow collection at i; *end is past it. */
static int flow_node(struct yp *P, size_t i, int n, struct json **out, size_t *end)
{
	char c = P->b[i];
	size_t e;
	int rc, multi;

	if (c == '[' || c == '{')
		return parse_flow(P, i, n, out, end);
	if (c == '"' || c == '\'') {
		if ((rc = quoted(P, i, end, &multi)) < 0)
			return rc;
		*out = json_new_string(P->text.p);
		return *out ? 0 : oom(P);
	}
	if ((rc = plain_start(P, i, 1)) < 0)
		return rc;
	plain_line(P, i, 1, &e, end);
	if ((rc = t_set(P, i, e)) < 0)
		return rc;
	return resolve(P, i, out);
}

/* The node starting at b[off] (not white space), whose parent is indented n.
 * blk: block collections may start here (not right after "key: "). */
static int parse_node(struct yp *P, size_t off, int n, int blk, struct json **out)
{
	char c = P->b[off];
	size_t end, stop, j;
	enum stop why;
	int rc, multi;

	if (c == '-' && sep(P, off + 1)) {
		if (!blk)
			return yfail(P, off, FB_EINVAL,
				     "a sequence cannot start on the line of its key");
		return parse_bseq(P, off, 0, out);
	}
	if (c == '[' || c == '{') {
		if ((rc = parse_flow(P, off, n, out, &end)) < 0)
			return rc;
		j = skip_ws(P, end);
		if (!eol(P, j) && P->b[j] == ':' && sep(P, j + 1))
			rc = yfail(P, off, FB_EINVAL, "flow collections as keys are not supported");
		else
			rc = finish_line(P, end);
		if (rc < 0) {
			json_free(*out);
			*out = NULL;
		}
		return rc;
	}
	if (c == '|' || c == '>')
		return block_scalar(P, off, n, out);
	if (c == '"' || c == '\'') {
		if ((rc = quoted(P, off, &end, &multi)) < 0)
			return rc;
		j = skip_ws(P, end);
		if (!eol(P, j) && P->b[j] == ':' && sep(P, j + 1)) {
			if (!blk)
				return yfail(P, j, FB_EINVAL, "mapping values are not allowed here "
							      "(quote a value that contains \": \")");
			return parse_bmap(P, off, out);
		}
		if ((rc = finish_line(P, end)) < 0)
			return rc;
		*out = json_new_string(P->text.p);
		return *out ? 0 : oom(P);
	}
	if ((rc = plain_start(P, off, 0)) < 0)
		return rc;
	why = plain_line(P, off, 0, &end, &stop);
	if (why == S_COLON) {
		if (!blk)
			return yfail(P, stop, FB_EINVAL, "mapping values are not allowed here "
							 "(quote a value that contains \": \")");
		return parse_bmap(P, off, out);
	}
	return plain_value(P, off, end, stop, why, n, out);
}

/* ---- the document ------------------------------------------------------ */

static int parse_doc(struct yp *P, const char *buf, size_t len, struct json **out)
{
	const char *p;
	int ind, rc, seen = 0;

	*out = NULL;
	if (len == 0)
		buf = ""; /* an empty file may come as NULL; memchr must not see it */
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
		buf += 3;
		len -= 3;
	}
	P->b = buf;
	P->len = len;
	if (len > INT_MAX) /* columns and indentation are ints */
		return fb_errinfo_set(P->ei, FB_E2BIG, 0, P->what, "document larger than 2 GiB");
	if ((p = memchr(buf, '\0', len)))
		return yfail(P, (size_t)(p - buf), FB_EINVAL, "NUL bytes are not allowed");
	for (p = buf; (p = memchr(p, '\r', len - (size_t)(p - buf))); p++)
		if ((size_t)(p - buf) + 1 >= len || p[1] != '\n')
			return yfail(P, (size_t)(p - buf), FB_EINVAL,
				     "carriage return without a line feed");
	/* directives and the optional "---" before the content */
	while (P->pos < len) {
		size_t s = P->pos, j = skip_ws(P, s), k;

		if (eol(P, j) || comment_at(P, j)) {
			P->pos = next_line(P, j);
		} else if (j == s && buf[s] == '%') {
			return yfail(P, s, FB_EINVAL, "directives (%%) are not supported");
		} else if (j == s && !seen && marker_at(P, s, "---")) {
			seen = 1;
			k = skip_ws(P, s + 3);
			if (!eol(P, k) && !comment_at(P, k))
				return yfail(P, k, FB_EINVAL, "content after \"---\" is not supported");
			P->pos = next_line(P, k);
		} else {
			break;
		}
	}
	if ((rc = next_content(P, &ind)) < 0)
		return rc;
	if (ind < 0) {
		*out = json_new_null();
		return *out ? 0 : oom(P);
	}
	P->root = P->pos + (size_t)ind;
	if ((rc = parse_node(P, P->root, -1, 1, out)) < 0)
		return rc;
	if ((rc = next_content(P, &ind)) < 0)
		goto fail;
	if (ind >= 0) {
		rc = json_type(*out) == JSON_OBJECT || json_type(*out) == JSON_ARRAY ?
			     yfail(P, P->pos + (size_t)ind, FB_EINVAL, "inconsistent indentation") :
			     yfail(P, P->pos + (size_t)ind, FB_EINVAL,
				   "unexpected content after the document's value");
		goto fail;
	}
	return 0;
fail:
	json_free(*out);
	*out = NULL;
	return rc;
}

struct json *yaml_parse(const char *buf, size_t len, const char *what, struct fb_errinfo *ei)
{
	struct yp P = { .what = what, .ei = ei };
	struct json *root;

	parse_doc(&P, buf, len, &root);
	buf_free(&P.text);
	return root;
}

int yaml_locate(const char *buf, size_t len, int *line, int *col, ...)
{
	const char *names[JSON_MAX_DEPTH + 1];
	struct yp P = { .what = "", .loc = names };
	struct json *root;
	const char *s;
	va_list ap;
	int rc;

	va_start(ap, col);
	while ((s = va_arg(ap, const char *)) && P.nloc <= JSON_MAX_DEPTH)
		names[P.nloc++] = s;
	va_end(ap);
	if (P.nloc > JSON_MAX_DEPTH)
		return -FB_ENOENT; /* deeper than any document we accept */
	rc = parse_doc(&P, buf, len, &root);
	buf_free(&P.text);
	json_free(root);
	if (rc < 0)
		return rc;
	if (P.nloc == 0) {
		P.hit = 1;
		P.found = P.root;
	}
	if (!P.hit)
		return -FB_ENOENT;
	json_line_col_(P.b, P.found, line, col);
	return 0;
}
