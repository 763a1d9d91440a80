/* json: the one door to cJSON. A parsed or built document is a tree of
 * struct json nodes; the root is owned by the caller (json_free), every node
 * reached through a getter is borrowed from its root. Parsing takes an
 * explicit length (bodies are not NUL-terminated) and reports where it failed;
 * no global error state. */
#ifndef FB_JSON_H
#define FB_JSON_H

#include "err.h"

#include <stddef.h>

struct json;

enum json_type { JSON_INVALID, JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

#define JSON_MAX_DEPTH 64 /* deeper documents are refused */

/* Parses buf[0..len). Returns a new tree, or NULL with ei filled: -FB_EINVAL
 * and "line L column C: what" in ei->detail (what = name, e.g. "response body"),
 * -FB_EDEPTH, -FB_ENOMEM. Trailing bytes other than whitespace are an error. */
struct json *json_parse(const char *buf, size_t len, const char *what, struct fb_errinfo *ei);

/* A string holding a \u0000 escape (a NUL character) is not refused by
 * json_parse, which would lose every other object of a list or watch
 * stream with it, and is never cut short silently either: such a string
 * value has json_type() JSON_INVALID and json_str() NULL, so it fails
 * wherever a string is required; a member name with one reads (json_key)
 * up to the NUL. json_nul_path() tells whether a tree holds either kind, for
 * a caller that refuses the whole object with a message naming the field (as
 * nfd-master refuses such a NodeFeatureRule rule). json_print writes such a
 * string back as its text up to the NUL followed by \u0000, so the mark
 * survives a print and parse; what followed the NUL is gone. (Go's decoder,
 * and so the API server and upstream, keep the bytes; keeping them here
 * would take length-aware strings in every consumer.) */

/* 1 when j or a node beneath it is a string value or member name that held
 * \u0000, with its path ("spec.rules[0].annotations.note", relative to j,
 * "" for j itself; cut to size) in path (may be NULL); 0 when none does. */
int json_nul_path(const struct json *j, char *path, size_t size);

/* Frees a root (safe with NULL). Never call on a borrowed node. */
void json_free(struct json *j);

enum json_type json_type(const struct json *j);

/* Member of an object (case-sensitive), or NULL (also when j is NULL or not an
 * object). Borrowed. */
struct json *json_get(const struct json *j, const char *key);
/* json_getv(j, "metadata", "labels", NULL): a path of member names. */
struct json *json_getv(const struct json *j, ...) __attribute__((sentinel));

/* String value or NULL when j is not a string. Borrowed. */
const char *json_str(const struct json *j);
/* json_str of a member, or def when missing or not a string. */
const char *json_get_str(const struct json *j, const char *key, const char *def);
/* Number as a long long when it is integral and in range: 0, else -FB_EINVAL. */
int json_int(const struct json *j, long long *out);
/* 1/0 for a boolean, -FB_EINVAL otherwise. */
int json_bool(const struct json *j);

/* Arrays and objects: number of elements, the i-th (NULL past the end), and
 * iteration in document order: for (c = json_child(o); c; c = json_next(c)).
 * json_key(c) is the member name of c inside an object (NULL in an array). */
size_t json_count(const struct json *j);
struct json *json_at(const struct json *j, size_t i);
struct json *json_child(const struct json *j);
struct json *json_next(const struct json *j);
const char *json_key(const struct json *j);

/* Builders: new nodes are owned by the caller until added to a parent, which
 * then owns them (_take). All return NULL / -FB_ENOMEM on allocation failure;
 * a _take function frees its argument when it fails. */
struct json *json_new_object(void);
struct json *json_new_array(void);
struct json *json_new_string(const char *s);
struct json *json_new_number(double v);
struct json *json_new_bool(int v);
struct json *json_new_null(void);
/* Sets (replacing any existing member of that name) or appends. */
int json_set_take(struct json *obj, const char *key, struct json *val);
int json_set_str(struct json *obj, const char *key, const char *s);
int json_append_take(struct json *arr, struct json *val);
/* Appends a member without first looking for one of that name, as
 * json_set_take does by walking every member: for building large objects
 * whose names the caller knows to be distinct (a name added twice is kept
 * twice). val is taken. */
int json_add_take(struct json *obj, const char *key, struct json *val);
/* Removes a member (no-op when absent). */
void json_remove(struct json *obj, const char *key);
/* Deep copy, owned by the caller. */
struct json *json_dup(const struct json *j);
/* 1 when equal (objects compared member-wise regardless of order). */
int json_equal(const struct json *a, const struct json *b);

/* Sorts the members of every object in the tree by name (byte order, as
 * Go's encoding/json orders map keys), in place; arrays keep their order. */
void json_sort_keys(struct json *j);

/* Compact serialisation; the string is owned by the caller (free()), *len
 * (may be NULL) gets its length. NULL on allocation failure. */
char *json_print(const struct json *j, size_t *len);
/* The length json_print would give, without building the string (0 for NULL). */
size_t json_print_len(const struct json *j);
/* The length json_print gives the name of member (an object's member),
 * quotes included; 0 for NULL or a node without a name. */
size_t json_key_print_len(const struct json *member);

/* Frees the members of an array or object from index n on (no-op for other
 * types or when there are at most n). */
void json_truncate(struct json *j, size_t n);

/* Internal, shared with core/yaml: the 1-based line and column of b[off]
 * (columns count UTF-8 characters, as editors do). */
void json_line_col_(const char *b, size_t off, int *line, int *col);

#endif
