/* http_parse: the response parser (http_resp_*) and the token helpers the
 * client and the server share (http_int.h). See http.h for the contract;
 * comments here say why the code is shaped the way it is. */
#include "http.h"
#include "http_int.h"

#include "buf.h"
#include "err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* ASCII-only, so the result never depends on the locale. */
static int ieq(const char *a, const char *b)
{
	while (*a && lower((unsigned char)*a) == lower((unsigned char)*b))
		a++, b++;
	return lower((unsigned char)*a) == lower((unsigned char)*b);
}

int http_ieqn_(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);

	if (alen != blen)
		return 0;
	for (size_t i = 0; i < alen; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return 0;
	return 1;
}

/* RFC 9110 tchar */
int http_is_tchar_(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Field value bytes: visible ASCII, SP, HT and obs-text; no other controls. */
int http_is_vchar_(int c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Calls fn(ctx, tok, len) for every comma-separated token of s (trimmed),
 * stopping at the first non-zero return. */
int http_for_tokens_(const char *s, int (*fn)(void *ctx, const char *tok, size_t len), void *ctx)
{
	while (*s) {
		const char *e = strchr(s, ','), *t = s;
		size_t n;
		int rc;

		if (!e)
			e = s + strlen(s);
		while (t < e && (*t == ' ' || *t == '\t'))
			t++;
		n = (size_t)(e - t);
		while (n && (t[n - 1] == ' ' || t[n - 1] == '\t'))
			n--;
		if ((rc = fn(ctx, t, n)))
			return rc;
		s = *e ? e + 1 : e;
	}
	return 0;
}

/* ---- response parser ---------------------------------------------------- */

enum {
	S_HDR,          /* status line and headers, accumulated in r->hdr */
	S_BODY_LEN,     /* Content-Length body, r->remaining left */
	S_BODY_EOF,     /* body up to the close */
	S_CHUNK_SIZE,   /* hex digits */
	S_CHUNK_EXT,    /* after the size: extensions, ignored */
	S_CHUNK_SIZE_LF,
	S_CHUNK_DATA,
	S_CHUNK_CR,     /* CRLF after the chunk data */
	S_CHUNK_LF,
	S_TRAILER,      /* trailer lines, skipped */
	S_TRAILER_LF,
	S_DONE,
};

/* Bounds for the chunk-size line: any real chunk is far smaller, and the
 * line-length cap bounds leading zeros and extensions. */
#define CHUNK_SIZE_MAX ((unsigned long long)1 << 40)
#define CHUNK_LINE_MAX 4096

static int rfail(struct http_resp *r, int code, const char *why)
{
	r->err = -code;
	r->why = why;
	return -code;
}

void http_resp_init(struct http_resp *r, int head, size_t body_max)
{
	memset(r, 0, sizeof(*r));
	http_resp_reset(r, head, body_max);
}

void http_resp_reset(struct http_resp *r, int head, size_t body_max)
{
	char *hdr = r->hdr;
	size_t hdr_size = r->hdr_size;

	free(r->body);
	/* the header buffer is kept: a kept-alive connection reuses it */
	memset(r, 0, sizeof(*r));
	r->hdr = hdr;
	r->hdr_size = hdr_size;
	r->head = head;
	r->body_max = body_max ? body_max : HTTP_BODY_MAX_DEFAULT;
	r->why = "";
}

void http_resp_free(struct http_resp *r)
{
	free(r->body);
	free(r->hdr);
	r->body = r->hdr = NULL;
	r->body_len = r->body_size = r->hdr_size = r->hdr_len = 0;
}

int http_resp_headers_done(const struct http_resp *r)
{
	return r->have_headers;
}

int http_resp_done(const struct http_resp *r)
{
	return r->state == S_DONE && !r->err;
}

const char *http_resp_error(const struct http_resp *r)
{
	return r->err && r->why ? r->why : "";
}

const char *http_resp_header(const struct http_resp *r, const char *name)
{
	for (size_t i = 0; r->have_headers && i < r->nhdr; i++)
		if (ieq(r->hdr + r->idx[i].name, name))
			return r->hdr + r->idx[i].value;
	return NULL;
}

const char *http_resp_content_type(const struct http_resp *r)
{
	return http_resp_header(r, "Content-Type");
}

long http_resp_retry_after(const struct http_resp *r)
{
	const char *v = http_resp_header(r, "Retry-After");
	long n = 0;

	if (!v || !*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9')
			return -1; /* an HTTP-date, or junk: treated as absent */
		if (n < HTTP_RETRY_AFTER_MAX)
			n = n * 10 + (*v - '0');
	}
	return n > HTTP_RETRY_AFTER_MAX ? HTTP_RETRY_AFTER_MAX : n;
}

int http_resp_keep_alive(const struct http_resp *r)
{
	return r->have_headers && r->keep_alive && !r->err;
}

char *http_resp_body_take(struct http_resp *r, size_t *len)
{
	char *b = r->body;

	*len = r->body_len;
	r->body = NULL;
	r->body_len = r->body_size = 0;
	return b;
}

static int hdr_reserve(struct http_resp *r, size_t need)
{
	return ARRAY_GROW(r->hdr, r->hdr_size, need) < 0 ? rfail(r, FB_ENOMEM, "out of memory") : 0;
}

/* Connection header tokens. */
struct conn_tokens {
	int close, keep_alive;
};

static int conn_token(void *ctx, const char *t, size_t n)
{
	struct conn_tokens *ct = ctx;

	if (http_ieqn_(t, n, "close"))
		ct->close = 1;
	else if (http_ieqn_(t, n, "keep-alive"))
		ct->keep_alive = 1;
	return 0;
}

/* Transfer-Encoding: we never ask for a coding, so the only acceptable value
 * is a single "chunked". */
static int te_token(void *ctx, const char *t, size_t n)
{
	int *chunked = ctx;

	if (n == 0)
		return 0; /* empty list elements are allowed (RFC 9110 5.6.1) */
	if (!http_ieqn_(t, n, "chunked") || *chunked)
		return 1;
	*chunked = 1;
	return 0;
}

/* Splits the complete header section in r->hdr into the status line and the
 * index of fields, NUL-terminating names and values in place. */
static int parse_headers(struct http_resp *r)
{
	char *p = r->hdr, *end = r->hdr + r->hdr_len, *lf, *s;
	int first = 1;

	r->nhdr = 0;
	for (;; p = lf + 1) {
		size_t n;

		lf = memchr(p, '\n', (size_t)(end - p));
		if (!lf)
			return rfail(r, FB_EPROTO, "header section not terminated");
		if (lf == p || lf[-1] != '\r')
			return rfail(r, FB_EPROTO, "header line not terminated by CRLF");
		n = (size_t)(lf - 1 - p);
		lf[-1] = '\0';
		if (first) {
			/* HTTP/1.x SP 3DIGIT [SP reason] */
			first = 0;
			if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') ||
			    p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' ||
			    p[11] < '0' || p[11] > '9' || (n > 12 && p[12] != ' '))
				return rfail(r, FB_EPROTO, "bad status line");
			for (size_t i = 13; i < n; i++)
				if (!http_is_vchar_((unsigned char)p[i]))
					return rfail(r, FB_EPROTO, "bad status line");
			r->minor = p[7] - '0';
			r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
			continue;
		}
		if (n == 0)
			return 0; /* the blank line */
		if (p[0] == ' ' || p[0] == '\t')
			return rfail(r, FB_EPROTO, "obsolete header line folding");
		for (s = p; s < p + n && http_is_tchar_((unsigned char)*s); s++)
			;
		if (s == p || s == p + n || *s != ':')
			return rfail(r, FB_EPROTO, "bad header name");
		if (r->nhdr == HTTP_HEADER_COUNT_MAX)
			return rfail(r, FB_E2BIG, "too many header fields");
		*s++ = '\0';
		r->idx[r->nhdr].name = (unsigned)(p - r->hdr);
		for (char *v = s; v < p + n; v++)
			if (!http_is_vchar_((unsigned char)*v))
				return rfail(r, FB_EPROTO, "bad header value");
		while (*s == ' ' || *s == '\t')
			s++;
		r->idx[r->nhdr].value = (unsigned)(s - r->hdr);
		for (char *e = p + n; e > s && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = '\0';
		r->nhdr++;
	}
}

/* After the final response's headers: how is the body framed? */
static int decide_body(struct http_resp *r)
{
	struct conn_tokens ct = { 0, 0 };
	unsigned long long cl = 0;
	int have_cl = 0, chunked = 0, have_te = 0;

	for (size_t i = 0; i < r->nhdr; i++) {
		const char *name = r->hdr + r->idx[i].name, *v = r->hdr + r->idx[i].value;

		if (ieq(name, "Connection")) {
			http_for_tokens_(v, conn_token, &ct);
		} else if (ieq(name, "Transfer-Encoding")) {
			have_te = 1;
			if (http_for_tokens_(v, te_token, &chunked))
				return rfail(r, FB_EPROTO, "unsupported Transfer-Encoding");
		} else if (ieq(name, "Content-Length")) {
			unsigned long long n = 0;

			if (!*v)
				return rfail(r, FB_EPROTO, "bad Content-Length");
			for (; *v; v++) {
				if (*v < '0' || *v > '9')
					return rfail(r, FB_EPROTO, "bad Content-Length");
				if (n > CHUNK_SIZE_MAX)
					return rfail(r, FB_E2BIG, "Content-Length too large");
				n = n * 10 + (unsigned)(*v - '0');
			}
			if (have_cl && n != cl)
				return rfail(r, FB_EPROTO, "conflicting Content-Length");
			have_cl = 1;
			cl = n;
		}
	}
	r->keep_alive = r->minor == 1 ? !ct.close : ct.keep_alive && !ct.close;
	if (r->head || r->status == 204 || r->status == 304) {
		/* no body whatever the framing headers say (RFC 9112 6.3) */
		r->state = S_DONE;
		return 0;
	}
	if (have_te && !chunked)
		return rfail(r, FB_EPROTO, "unsupported Transfer-Encoding");
	/* both is how request smuggling starts; no honest server sends it */
	if (have_te && have_cl)
		return rfail(r, FB_EPROTO, "both Transfer-Encoding and Content-Length");
	if (chunked) {
		r->state = S_CHUNK_SIZE;
	} else if (have_cl) {
		if (cl > r->body_max)
			return rfail(r, FB_E2BIG, "body over the size cap");
		r->remaining = cl;
		r->state = cl ? S_BODY_LEN : S_DONE;
	} else {
		r->state = S_BODY_EOF;
		r->keep_alive = 0;
	}
	return 0;
}

/* One header-section byte run: copies up to the next LF, and on the blank
 * line parses the section. Returns bytes consumed, or an error. */
static ssize_t parse_hdr(struct http_resp *r, const char *in, size_t len)
{
	const char *lf = memchr(in, '\n', len);
	size_t n = lf ? (size_t)(lf - in) + 1 : len, llen;
	const char *line;
	int rc;

	if (r->hdr_len + n > HTTP_HEADERS_MAX)
		return rfail(r, FB_E2BIG, "header section over 64 KiB");
	if ((rc = hdr_reserve(r, r->hdr_len + n + 1)) < 0)
		return rc;
	memcpy(r->hdr + r->hdr_len, in, n);
	r->hdr_len += n;
	if (!lf)
		return (ssize_t)n;
	line = r->hdr + r->line_start;
	llen = r->hdr_len - r->line_start;
	r->line_start = r->hdr_len;
	if (llen > 2 || (llen == 2 && line[0] != '\r'))
		return (ssize_t)n;
	/* a blank line (CRLF, or a bare LF that parse_headers refuses) */
	if ((rc = parse_headers(r)) < 0)
		return rc;
	if (r->status >= 100 && r->status < 200) {
		if (r->status == 101)
			return rfail(r, FB_EPROTO, "unexpected 101 Switching Protocols");
		/* interim response (100 Continue, 103 Early Hints): wait for the final one */
		r->hdr_len = r->line_start = r->nhdr = 0;
		r->status = 0;
		return (ssize_t)n;
	}
	if ((rc = decide_body(r)) < 0)
		return rc;
	r->have_headers = 1;
	return (ssize_t)n;
}

/* The body bytes in[0..n) are about to be handed out: the cap check. */
static int body_count(struct http_resp *r, size_t n)
{
	if (r->body_max != HTTP_BODY_UNLIMITED && r->total + n > r->body_max)
		return rfail(r, FB_E2BIG, "body over the size cap");
	r->total += n;
	return 0;
}

ssize_t http_resp_parse(struct http_resp *r, const char *in, size_t len, size_t max,
			const char **span, size_t *span_len)
{
	size_t i = 0, n;
	int c, h;

	*span = NULL;
	*span_len = 0;
	if (r->err)
		return r->err;
	while (i < len) {
		switch (r->state) {
		case S_HDR: {
			ssize_t k = parse_hdr(r, in + i, len - i);

			if (k < 0)
				return k;
			i += (size_t)k;
			if (r->have_headers)
				return (ssize_t)i;
			continue;
		}
		case S_BODY_LEN:
		case S_BODY_EOF:
		case S_CHUNK_DATA:
			n = len - i;
			if (n > max)
				n = max;
			if (r->state != S_BODY_EOF && n > r->remaining)
				n = (size_t)r->remaining;
			if (n == 0)
				return (ssize_t)i; /* max == 0: caller error, but no spin */
			if ((c = body_count(r, n)) < 0)
				return c;
			*span = in + i;
			*span_len = n;
			i += n;
			if (r->state != S_BODY_EOF && (r->remaining -= n) == 0)
				r->state = r->state == S_BODY_LEN ? S_DONE : S_CHUNK_CR;
			return (ssize_t)i;
		case S_DONE:
			return (ssize_t)i;
		default:
			break;
		}
		/* the chunk framing, a byte at a time */
		c = (unsigned char)in[i++];
		switch (r->state) {
		case S_CHUNK_SIZE:
			if (++r->line_len > CHUNK_LINE_MAX)
				return rfail(r, FB_EPROTO, "chunk size line too long");
			if ((h = hexval(c)) >= 0) {
				if (r->remaining >= CHUNK_SIZE_MAX / 16)
					return rfail(r, FB_EPROTO, "chunk size too large");
				r->remaining = r->remaining * 16 + (unsigned)h;
				r->ndigits = 1;
			} else if (r->ndigits && (c == ';' || c == ' ' || c == '\t')) {
				r->state = S_CHUNK_EXT;
			} else if (r->ndigits && c == '\r') {
				r->state = S_CHUNK_SIZE_LF;
			} else {
				return rfail(r, FB_EPROTO, "bad chunk size");
			}
			break;
		case S_CHUNK_EXT:
			if (++r->line_len > CHUNK_LINE_MAX)
				return rfail(r, FB_EPROTO, "chunk size line too long");
			if (c == '\r')
				r->state = S_CHUNK_SIZE_LF;
			else if (!http_is_vchar_(c))
				return rfail(r, FB_EPROTO, "bad chunk extension");
			break;
		case S_CHUNK_SIZE_LF:
			if (c != '\n')
				return rfail(r, FB_EPROTO, "chunk size line not terminated by CRLF");
			r->line_len = 0;
			if (r->remaining == 0) {
				r->state = S_TRAILER;
			} else {
				/* refuse a chunk that would break the cap before taking any of it */
				if (r->body_max != HTTP_BODY_UNLIMITED &&
				    r->total + r->remaining > r->body_max)
					return rfail(r, FB_E2BIG, "body over the size cap");
				r->state = S_CHUNK_DATA;
			}
			break;
		case S_CHUNK_CR:
			if (c != '\r')
				return rfail(r, FB_EPROTO, "chunk data not followed by CRLF");
			r->state = S_CHUNK_LF;
			break;
		case S_CHUNK_LF:
			if (c != '\n')
				return rfail(r, FB_EPROTO, "chunk data not followed by CRLF");
			r->state = S_CHUNK_SIZE;
			r->ndigits = 0;
			r->line_len = 0;
			break;
		case S_TRAILER:
			if (++r->trailer_len > HTTP_HEADERS_MAX)
				return rfail(r, FB_E2BIG, "trailer section over 64 KiB");
			if (c == '\r')
				r->state = S_TRAILER_LF;
			else if (c == '\n' || (c != '\t' && c < 0x20))
				return rfail(r, FB_EPROTO, "bad trailer line");
			else
				r->line_len++;
			break;
		case S_TRAILER_LF:
			if (c != '\n')
				return rfail(r, FB_EPROTO, "trailer line not terminated by CRLF");
			if (r->line_len == 0) {
				r->state = S_DONE;
				return (ssize_t)i;
			}
			r->line_len = 0;
			r->state = S_TRAILER;
			break;
		}
	}
	return (ssize_t)i;
}

static int body_append(struct http_resp *r, const char *p, size_t n)
{
	if (ARRAY_GROW(r->body, r->body_size, r->body_len + n + 1) < 0)
		return rfail(r, FB_ENOMEM, "out of memory");
	memcpy(r->body + r->body_len, p, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return 0;
}

ssize_t http_resp_feed(struct http_resp *r, const char *in, size_t len)
{
	size_t used = 0;

	while (used < len && r->state != S_DONE) {
		const char *span;
		size_t n;
		ssize_t k = http_resp_parse(r, in + used, len - used, SIZE_MAX, &span, &n);
		int rc;

		if (k < 0)
			return k;
		if (n && (rc = body_append(r, span, n)) < 0)
			return rc;
		used += (size_t)k;
	}
	if (r->err)
		return r->err;
	return (ssize_t)used;
}

int http_resp_eof(struct http_resp *r)
{
	if (r->err)
		return r->err;
	if (r->state == S_BODY_EOF)
		r->state = S_DONE;
	if (r->state == S_DONE)
		return 0;
	if (!r->have_headers)
		return rfail(r, FB_ECLOSED, r->hdr_len ? "connection closed in the response headers"
						       : "connection closed before the response");
	if (r->state == S_BODY_LEN)
		return rfail(r, FB_ECLOSED, "connection closed before the end of the body");
	return rfail(r, FB_ECLOSED, "connection closed mid-chunk");
}
