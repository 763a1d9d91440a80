/* yaml: the strict YAML subset our config files and kubeconfigs use, parsed
 * into a json tree (see json.h for ownership).
 *
 * Accepted: one document (an optional leading "---"), block mappings and
 * sequences by indentation (spaces only), "- " items including "- key: value"
 * compact mappings, flow sequences [a, b] and flow mappings {a: b} (nestable),
 * plain, 'single' and "double" quoted scalars (with \" \\ \n \t \uXXXX
 * escapes), literal | and folded > block scalars (with - and + chomping),
 * comments. Plain scalars resolve as YAML 1.2 core: true/false, null/~/empty,
 * decimal integers and floats become JSON booleans, null and numbers; anything
 * else is a string; quoted scalars are always strings.
 * Refused with "line L column C: reason": tabs in indentation, anchors and
 * aliases (&, *), tags (!), "? " complex keys, a second document, directives
 * (%), duplicate keys, inconsistent indentation, unterminated quotes or flow
 * collections, nesting deeper than JSON_MAX_DEPTH. */
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

#endif
