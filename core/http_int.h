/* http_int: what the files of core/http (http_parse.c, http_client.c,
 * http_server.c) share; no other module includes it. */
#ifndef FB_HTTP_INT_H
#define FB_HTTP_INT_H

#include <stddef.h>

/* Header names and tokens compare ASCII-only, ignoring case, so the result
 * never depends on the locale: a (alen bytes) against the C string b. */
int http_ieqn_(const char *a, size_t alen, const char *b);
/* RFC 9110 tchar */
int http_is_tchar_(int c);
/* Field value bytes: visible ASCII, SP, HT and obs-text; no other controls. */
int http_is_vchar_(int c);
/* Calls fn(ctx, tok, len) for every comma-separated token of s (trimmed),
 * stopping at the first non-zero return, which it returns; else 0. */
int http_for_tokens_(const char *s, int (*fn)(void *ctx, const char *tok, size_t len), void *ctx);

#endif
