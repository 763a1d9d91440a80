/* tmpl: Go's text/template (Option("missingkey=error")) with the Sprig
 * functions NodeFeatureRules use, for labelsTemplate and varsTemplate
 * (upstream pkg/apis/nfd/template). Parsed once, run many times.
 *
 * The language: text and {{ }} actions with {{- -}} trimming and comments,
 * pipelines, variables ($x := / $x = / $), if / else if / else, range (over
 * lists, maps in key order and integers; one or two variables; else; break
 * and continue), with / else with / else, define / template / block, and the
 * built-in functions and, or, not, len, index, slice, print, printf,
 * println, html, js, urlquery, eq, ne, lt, le, gt, ge. The Sprig functions
 * are listed in tmpl_fn.c (and the README). A name that is neither is a
 * parse error naming it.
 *
 * Bounds: source 64 KiB; output, and every string a function makes, 1 MiB;
 * nesting 100 levels when parsing, 100 template calls deep when running; a
 * run takes at most TMPL_STEPS evaluation steps (no range nest can hang). */
#ifndef FB_TMPL_H
#define FB_TMPL_H

#include "arena.h"
#include "buf.h"

#include <stddef.h>

#define TMPL_MSG_SIZE 256
#define TMPL_SRC_MAX (64 * 1024)
#define TMPL_OUT_MAX (1024 * 1024)
#define TMPL_STEPS 10000000L

struct tmpl;
struct tval;

/* Parses src (copied into ar, which owns the result). Returns 0 with *out
 * set, -FB_ENOMEM, or -FB_EINVAL with msg (TMPL_MSG_SIZE) set. */
int tmpl_parse(struct arena *ar, const char *src, struct tmpl **out, char *msg);

/* The data a template runs over, built in an arena that outlives the run:
 * strings (copied), maps of string keys (kept in key order, as Go prints and
 * ranges them) and lists. type is the Go type name (for %T and printf's
 * bad-verb text); a map's zero is the zero value of its element type, what
 * index returns for a missing key (NULL: nil, for interface{} elements).
 * NULL when out of memory. */
struct tval *tmpl_str(struct arena *ar, const char *s);
struct tval *tmpl_map(struct arena *ar, const char *type, const struct tval *zero);
struct tval *tmpl_list(struct arena *ar, const char *type);
/* Sets map[key] = v (replacing) / appends v. 0 or -FB_ENOMEM. */
int tmpl_map_put(struct arena *ar, struct tval *map, const char *key, struct tval *v);
int tmpl_list_push(struct arena *ar, struct tval *list, struct tval *v);
/* map[key], or NULL when it has none (borrowed). */
const struct tval *tmpl_map_get(const struct tval *map, const char *key);

/* Runs t over data, appending to out (more than TMPL_OUT_MAX bytes is an
 * error). Returns 0, -FB_ENOMEM, or -FB_EINVAL with msg set. */
int tmpl_exec(const struct tmpl *t, const struct tval *data, struct buf *out, char *msg);

#endif
