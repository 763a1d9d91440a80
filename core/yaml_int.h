/* yaml_int: what the files of core/yaml (yaml_scan.c: errors, scratch text,
 * lines and scalars; yaml_parse.c: collections and the document) share; no
 * other module includes it. */
#ifndef FB_YAML_INT_H
#define FB_YAML_INT_H

#include "yaml.h"

#include "buf.h"

#include <stddef.h>

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

int yaml_fail_(struct yp *P, size_t off, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int yaml_oom_(struct yp *P);
int yaml_t_set_(struct yp *P, size_t from, size_t to);
/* A lone CR is refused up front, so a CR always starts a CRLF. */
int yaml_eol_(const struct yp *P, size_t i);
/* white space or the line end after an indicator (":", "-", "?") */
int yaml_sep_(const struct yp *P, size_t i);
size_t yaml_skip_ws_(const struct yp *P, size_t i);
size_t yaml_skip_spaces_(const struct yp *P, size_t i);
size_t yaml_line_end_(const struct yp *P, size_t i);
size_t yaml_next_line_(const struct yp *P, size_t i);
/* Indentation of the node at i: block nodes are preceded on their line only
 * by spaces and "- " indicators, so bytes are columns. */
int yaml_col_of_(const struct yp *P, size_t i);
/* '#' starts a comment only at a line start or after white space. */
int yaml_comment_at_(const struct yp *P, size_t i);
int yaml_marker_at_(const struct yp *P, size_t s, const char *m);
/* Skips blank and comment lines from P->pos (a line start). *indent gets the
 * indentation of the next content line, which P->pos is then the start of,
 * or -1 at the end of the document. */
int yaml_next_content_(struct yp *P, int *indent);
/* After a complete value at i: only white space or a comment may follow on
 * its line. Moves P->pos to the next line. */
int yaml_finish_line_(struct yp *P, size_t i);
/* Called with each member name or item index of the collection at P->depth
 * before its value is parsed; returns what to restore P->match to after. */
int yaml_loc_enter_(struct yp *P, const char *name, size_t off);
int yaml_loc_item_(struct yp *P, size_t idx, size_t off);
int yaml_enter_(struct yp *P, size_t off);
/* 0 when b[s] may start a plain scalar, else the error saying why not. */
int yaml_plain_start_(struct yp *P, size_t s, int flow);
/* The first line of a plain scalar from s: *end is the end of its text
 * (trailing white space dropped), *stop where scanning stopped (the line end,
 * the ':' of a key, a comment's '#' or a flow indicator). */
enum stop yaml_plain_line_(const struct yp *P, size_t s, int flow, size_t *end, size_t *stop);
/* The plain scalar now in P->text.p, resolved by the core schema. */
int yaml_resolve_(struct yp *P, size_t at, struct json **out);
/* A plain scalar value whose first line is b[s..end), scanning having
 * stopped at stop for reason why; continuation lines must be indented more
 * than n and are folded (one line break: a space; k empty lines: k "\n"). */
int yaml_plain_value_(struct yp *P, size_t s, size_t end, size_t stop, enum stop why, int n,
		      struct json **out);
/* A quoted scalar at its opening quote b[s], into P->text. *after is the offset
 * past the closing quote; *multi says whether it spans lines. Line breaks
 * fold as in plain scalars; white space around them is not content. */
int yaml_quoted_(struct yp *P, size_t s, size_t *after, int *multi);
/* | or > at b[off], for a node whose parent is indented n. */
int yaml_block_scalar_(struct yp *P, size_t off, int n, struct json **out);

#endif
