/* yaml: the strict YAML subset our config files and kubeconfigs use, parsed
 * into a json tree (see json.h for ownership).
 *
 * Accepted: one document (an optional leading "---" and closing "..."), block
 * mappings and sequences by indentation (spaces only), "- " items including
 * "- key: value" compact mappings, flow sequences [a, b] and flow mappings
 * {a: b} (nestable, over several lines), plain, 'single' and "double" quoted
 * scalars (with YAML's escapes: \" \\ \n \t \uXXXX and the rest; a \uXXXX
 * surrogate pair is joined), plain and quoted scalars continued on
 * more-indented lines (folded into one line), literal | and folded > block
 * scalars (with - and + chomping and an indentation digit), comments, CRLF
 * line ends, a leading byte order mark. Plain scalars resolve as YAML 1.2
 * core: true/false, null/~/empty, decimal integers and floats become JSON
 * booleans, null and numbers (0x1f, 0o17, .inf stay strings); anything else is
 * a string; quoted scalars are always strings; keys are always strings, as
 * written.
 * Refused with "line L column C: reason": tabs in indentation, anchors and
 * aliases (&, *), tags (!), "? " complex keys, a second document, directives
 * (%), duplicate keys, inconsistent indentation, unterminated quotes or flow
 * collections, nesting deeper than JSON_MAX_DEPTH, NUL bytes and \0 escapes,
 * a CR without LF, decimals beyond a double's range. */
#ifndef FB_YAML_H
#define FB_YAML_H

#include "err.h"
#include "json.h"

#include <stddef.h>

/* Parses buf[0..len) (need not be NUL-terminated; a NUL byte is an error).
 * Returns a new tree (an empty document gives JSON null), or NULL with ei
 * filled: what = the file name, detail = "line L column C: reason";
 * -FB_EINVAL, -FB_EDEPTH or -FB_ENOMEM. */
struct json *yaml_parse(const char *buf, size_t len, const char *what, struct fb_errinfo *ei);

/* Where a node is written, for messages about values that parsed but are
 * wrong (json nodes carry no positions): the path is member names and, for
 * sequence items, decimal indices, ending with NULL:
 * yaml_locate(buf, len, &line, &col, "users", "0", "user", "exec", NULL).
 * Returns 0 with the 1-based line and column of the member's key or the
 * item's "-" (of the root node for an empty path), -FB_ENOENT when the path is
 * not in the document, or yaml_parse's error code when it does not parse. */
int yaml_locate(const char *buf, size_t len, int *line, int *col, ...) __attribute__((sentinel));

#endif
