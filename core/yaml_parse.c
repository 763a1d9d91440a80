/* yaml_parse: the strict subset of YAML 1.2 described in yaml.h, by recursive
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
#include "yaml_int.h"

#include "buf.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- collections ------------------------------------------------------- */

static int parse_node(struct yp *P, size_t off, int n, int blk, struct json **out);
static int flow_node(struct yp *P, size_t i, int n, struct json **out, size_t *end);

static char *t_dup(struct yp *P)
{
	char *s = malloc(P->text.len + 1);

	if (!s) {
		yaml_oom_(P);
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
		if ((rc = yaml_quoted_(P, off, &end, &multi)) < 0)
			return rc;
		j = yaml_skip_ws_(P, end);
		if (yaml_eol_(P, j) || P->b[j] != ':' || !yaml_sep_(P, j + 1))
			return yaml_fail_(P, off, FB_EINVAL, "expected \"key: value\"");
		if (multi)
			return yaml_fail_(P, off, FB_EINVAL, "a key must be on one line");
		*after = j + 1;
	} else {
		if (c == '-' && yaml_sep_(P, off + 1))
			return yaml_fail_(P, off, FB_EINVAL,
				     "expected \"key: value\", found a sequence item");
		if (c == '[' || c == '{')
			return yaml_fail_(P, off, FB_EINVAL, "flow collections as keys are not supported");
		if ((rc = yaml_plain_start_(P, off, 0)) < 0)
			return rc;
		if (yaml_plain_line_(P, off, 0, &end, &stop) != S_COLON)
			return yaml_fail_(P, off, FB_EINVAL, "expected \"key: value\"");
		if ((rc = yaml_t_set_(P, off, end)) < 0)
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
	int c = yaml_col_of_(P, off), ind, rc, saved;
	struct json *map, *val = NULL;
	size_t after = 0, v;
	char *key = NULL;

	if ((rc = yaml_enter_(P, off)) < 0)
		return rc;
	if (!(map = json_new_object()))
		return yaml_oom_(P);
	for (;;) {
		if ((rc = block_key(P, off, &key, &after)) < 0)
			goto fail;
		if (json_get(map, key)) {
			rc = yaml_fail_(P, off, FB_EINVAL, "duplicate key \"%.80s\"", key);
			free(key);
			goto fail;
		}
		saved = yaml_loc_enter_(P, key, off);
		v = yaml_skip_ws_(P, after);
		if (yaml_eol_(P, v) || yaml_comment_at_(P, v)) {
			/* the value is on the next lines, or null */
			P->pos = yaml_next_line_(P, v);
			rc = yaml_next_content_(P, &ind);
			if (rc == 0 && ind > c)
				rc = parse_node(P, P->pos + (size_t)ind, c, 1, &val);
			else if (rc == 0 && ind == c && P->b[P->pos + (size_t)ind] == '-' &&
				 yaml_sep_(P, P->pos + (size_t)ind + 1))
				rc = parse_bseq(P, P->pos + (size_t)ind, 1, &val); /* key:\n- item */
			else if (rc == 0 && !(val = json_new_null()))
				rc = yaml_oom_(P);
		} else {
			rc = parse_node(P, v, c, 0, &val);
		}
		P->match = saved;
		if (rc == 0 && json_set_take(map, key, val) < 0)
			rc = yaml_oom_(P);
		free(key);
		if (rc < 0 || (rc = yaml_next_content_(P, &ind)) < 0)
			goto fail;
		if (ind < c)
			break;
		if (ind > c) {
			rc = yaml_fail_(P, P->pos + (size_t)ind, FB_EINVAL, "inconsistent indentation");
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
	int c = yaml_col_of_(P, off), ind, rc, saved;
	struct json *arr, *val = NULL;
	size_t idx = 0;

	if ((rc = yaml_enter_(P, off)) < 0)
		return rc;
	if (!(arr = json_new_array()))
		return yaml_oom_(P);
	for (;;) {
		size_t w = yaml_skip_spaces_(P, off + 1), j = yaml_skip_ws_(P, w);

		saved = yaml_loc_item_(P, idx++, off);
		if (yaml_eol_(P, j) || yaml_comment_at_(P, j)) {
			P->pos = yaml_next_line_(P, j);
			rc = yaml_next_content_(P, &ind);
			if (rc == 0 && ind > c)
				rc = parse_node(P, P->pos + (size_t)ind, c, 1, &val);
			else if (rc == 0 && !(val = json_new_null()))
				rc = yaml_oom_(P);
		} else if (j != w) {
			rc = yaml_fail_(P, w, FB_EINVAL, "tabs are not allowed in indentation");
		} else {
			rc = parse_node(P, j, c, 1, &val);
		}
		P->match = saved;
		if (rc == 0 && json_append_take(arr, val) < 0)
			rc = yaml_oom_(P);
		if (rc < 0 || (rc = yaml_next_content_(P, &ind)) < 0)
			goto fail;
		if (ind < c)
			break;
		if (ind > c) {
			rc = yaml_fail_(P, P->pos + (size_t)ind, FB_EINVAL, "inconsistent indentation");
			goto fail;
		}
		off = P->pos + (size_t)ind;
		if (P->b[off] != '-' || !yaml_sep_(P, off + 1)) {
			if (indentless)
				break;
			rc = yaml_fail_(P, off, FB_EINVAL, "expected a sequence item (\"- \")");
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
		i = yaml_skip_ws_(P, i);
		if (yaml_comment_at_(P, i))
			i = yaml_line_end_(P, i);
		if (i >= P->len)
			break;
		if (!yaml_eol_(P, i)) {
			*out = i;
			return 0;
		}
		i = yaml_next_line_(P, i);
		if (i < P->len) {
			size_t s = yaml_skip_spaces_(P, i), j = yaml_skip_ws_(P, s);

			/* the common "key: [\n  a,\n]" puts the bracket at the key's
			 * indentation, which YAML parsers accept */
			if (!yaml_eol_(P, j) && !yaml_comment_at_(P, j) && (int)(s - i) <= n &&
			    P->b[j] != ']' && P->b[j] != '}')
				break;
		}
	}
	return yaml_fail_(P, open, FB_EINVAL, P->b[open] == '[' ? "unterminated flow sequence" :
							  "unterminated flow mapping");
}

/* The key of a flow mapping entry at i (owned by the caller); *end is past it. */
static int flow_key(struct yp *P, size_t i, char **key, size_t *end)
{
	char c = P->b[i];
	size_t e;
	int rc, multi;

	if (c == '"' || c == '\'') {
		if ((rc = yaml_quoted_(P, i, end, &multi)) < 0)
			return rc;
		if (multi)
			return yaml_fail_(P, i, FB_EINVAL, "a key must be on one line");
	} else {
		if (c == '[' || c == '{')
			return yaml_fail_(P, i, FB_EINVAL, "flow collections as keys are not supported");
		if ((rc = yaml_plain_start_(P, i, 1)) < 0)
			return rc;
		yaml_plain_line_(P, i, 1, &e, end);
		if ((rc = yaml_t_set_(P, i, e)) < 0)
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

	if ((rc = yaml_enter_(P, open)) < 0)
		return rc;
	if (!(coll = map ? json_new_object() : json_new_array()))
		return yaml_oom_(P);
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
				rc = yaml_fail_(P, at, FB_EINVAL, "duplicate key \"%.80s\"", key);
				goto fail;
			}
			saved = yaml_loc_enter_(P, key, at);
			if (P->b[i] == ':') {
				rc = flow_ws(P, i + 1, n, open, &i);
				if (rc == 0 && P->b[i] != ',' && P->b[i] != '}')
					rc = flow_node(P, i, n, &val, &i);
			}
			if (rc == 0 && !val && !(val = json_new_null()))
				rc = yaml_oom_(P);
			P->match = saved;
			if (rc == 0 && json_set_take(coll, key, val) < 0)
				rc = yaml_oom_(P);
			free(key);
			key = NULL;
		} else {
			saved = yaml_loc_item_(P, idx++, at);
			rc = flow_node(P, i, n, &val, &i);
			P->match = saved;
			if (rc == 0 && json_append_take(coll, val) < 0)
				rc = yaml_oom_(P);
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
			rc = yaml_fail_(P, i, FB_EINVAL,
				   "mappings inside flow sequences are not supported");
		else
			rc = yaml_fail_(P, i, FB_EINVAL, map ? "expected ',' or '}'" : "expected ',' or ']'");
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
		if ((rc = yaml_quoted_(P, i, end, &multi)) < 0)
			return rc;
		*out = json_new_string(P->text.p);
		return *out ? 0 : yaml_oom_(P);
	}
	if ((rc = yaml_plain_start_(P, i, 1)) < 0)
		return rc;
	yaml_plain_line_(P, i, 1, &e, end);
	if ((rc = yaml_t_set_(P, i, e)) < 0)
		return rc;
	return yaml_resolve_(P, i, out);
}

/* The node starting at b[off] (not white space), whose parent is indented n.
 * blk: block collections may start here (not right after "key: "). */
static int parse_node(struct yp *P, size_t off, int n, int blk, struct json **out)
{
	char c = P->b[off];
	size_t end, stop, j;
	enum stop why;
	int rc, multi;

	if (c == '-' && yaml_sep_(P, off + 1)) {
		if (!blk)
			return yaml_fail_(P, off, FB_EINVAL,
				     "a sequence cannot start on the line of its key");
		return parse_bseq(P, off, 0, out);
	}
	if (c == '[' || c == '{') {
		if ((rc = parse_flow(P, off, n, out, &end)) < 0)
			return rc;
		j = yaml_skip_ws_(P, end);
		if (!yaml_eol_(P, j) && P->b[j] == ':' && yaml_sep_(P, j + 1))
			rc = yaml_fail_(P, off, FB_EINVAL, "flow collections as keys are not supported");
		else
			rc = yaml_finish_line_(P, end);
		if (rc < 0) {
			json_free(*out);
			*out = NULL;
		}
		return rc;
	}
	if (c == '|' || c == '>')
		return yaml_block_scalar_(P, off, n, out);
	if (c == '"' || c == '\'') {
		if ((rc = yaml_quoted_(P, off, &end, &multi)) < 0)
			return rc;
		j = yaml_skip_ws_(P, end);
		if (!yaml_eol_(P, j) && P->b[j] == ':' && yaml_sep_(P, j + 1)) {
			if (!blk)
				return yaml_fail_(P, j, FB_EINVAL, "mapping values are not allowed here "
							      "(quote a value that contains \": \")");
			return parse_bmap(P, off, out);
		}
		if ((rc = yaml_finish_line_(P, end)) < 0)
			return rc;
		*out = json_new_string(P->text.p);
		return *out ? 0 : yaml_oom_(P);
	}
	if ((rc = yaml_plain_start_(P, off, 0)) < 0)
		return rc;
	why = yaml_plain_line_(P, off, 0, &end, &stop);
	if (why == S_COLON) {
		if (!blk)
			return yaml_fail_(P, stop, FB_EINVAL, "mapping values are not allowed here "
							 "(quote a value that contains \": \")");
		return parse_bmap(P, off, out);
	}
	return yaml_plain_value_(P, off, end, stop, why, n, out);
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
		return yaml_fail_(P, (size_t)(p - buf), FB_EINVAL, "NUL bytes are not allowed");
	for (p = buf; (p = memchr(p, '\r', len - (size_t)(p - buf))); p++)
		if ((size_t)(p - buf) + 1 >= len || p[1] != '\n')
			return yaml_fail_(P, (size_t)(p - buf), FB_EINVAL,
				     "carriage return without a line feed");
	/* directives and the optional "---" before the content */
	while (P->pos < len) {
		size_t s = P->pos, j = yaml_skip_ws_(P, s), k;

		if (yaml_eol_(P, j) || yaml_comment_at_(P, j)) {
			P->pos = yaml_next_line_(P, j);
		} else if (j == s && buf[s] == '%') {
			return yaml_fail_(P, s, FB_EINVAL, "directives (%%) are not supported");
		} else if (j == s && !seen && yaml_marker_at_(P, s, "---")) {
			seen = 1;
			k = yaml_skip_ws_(P, s + 3);
			if (!yaml_eol_(P, k) && !yaml_comment_at_(P, k))
				return yaml_fail_(P, k, FB_EINVAL, "content after \"---\" is not supported");
			P->pos = yaml_next_line_(P, k);
		} else {
			break;
		}
	}
	if ((rc = yaml_next_content_(P, &ind)) < 0)
		return rc;
	if (ind < 0) {
		*out = json_new_null();
		return *out ? 0 : yaml_oom_(P);
	}
	P->root = P->pos + (size_t)ind;
	if ((rc = parse_node(P, P->root, -1, 1, out)) < 0)
		return rc;
	if ((rc = yaml_next_content_(P, &ind)) < 0)
		goto fail;
	if (ind >= 0) {
		rc = json_type(*out) == JSON_OBJECT || json_type(*out) == JSON_ARRAY ?
			     yaml_fail_(P, P->pos + (size_t)ind, FB_EINVAL, "inconsistent indentation") :
			     yaml_fail_(P, P->pos + (size_t)ind, FB_EINVAL,
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
