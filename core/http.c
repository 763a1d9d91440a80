/* http: response parser, client, probe server. See http.h for the contract;
 * comments here say why the code is shaped the way it is. */
#include "http.h"

#include "err.h"
#include "loop.h"
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

static int ieqn(const char *a, size_t alen, const char *b)
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
static int is_tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Field value bytes: visible ASCII, SP, HT and obs-text; no other controls. */
static int is_vchar(int c)
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
static int for_tokens(const char *s, int (*fn)(void *ctx, const char *tok, size_t len), void *ctx)
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

	if (ieqn(t, n, "close"))
		ct->close = 1;
	else if (ieqn(t, n, "keep-alive"))
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
	if (!ieqn(t, n, "chunked") || *chunked)
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
				if (!is_vchar((unsigned char)p[i]))
					return rfail(r, FB_EPROTO, "bad status line");
			r->minor = p[7] - '0';
			r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
			continue;
		}
		if (n == 0)
			return 0; /* the blank line */
		if (p[0] == ' ' || p[0] == '\t')
			return rfail(r, FB_EPROTO, "obsolete header line folding");
		for (s = p; s < p + n && is_tchar((unsigned char)*s); s++)
			;
		if (s == p || s == p + n || *s != ':')
			return rfail(r, FB_EPROTO, "bad header name");
		if (r->nhdr == HTTP_HEADER_COUNT_MAX)
			return rfail(r, FB_E2BIG, "too many header fields");
		*s++ = '\0';
		r->idx[r->nhdr].name = (unsigned)(p - r->hdr);
		for (char *v = s; v < p + n; v++)
			if (!is_vchar((unsigned char)*v))
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
			for_tokens(v, conn_token, &ct);
		} else if (ieq(name, "Transfer-Encoding")) {
			have_te = 1;
			if (for_tokens(v, te_token, &chunked))
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
			else if (!is_vchar(c))
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

/* ---- client: one socket, plain or TLS ----------------------------------- */

#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_CONNECT_MS 10000
#define REQ_HEAD_MAX (64 * 1024)
#define HOST_MAX 255

struct sock {
	int fd;
	struct tls_conn *tls;
	short want;       /* after -FB_EAGAIN: what to poll for */
	const char *what; /* "https://host:port", for errors */
};

struct http_conn {
	struct sock s;
	unsigned long connects;
	struct tls_config *tls;
	int port, connect_ms, keepalive_s, cancel_fd;
	char host[HOST_MAX + 1];        /* no brackets */
	char server_name[HOST_MAX + 1];
	char hostport[HOST_MAX + 10];   /* the Host header value */
	char what[HOST_MAX + 20];
};

static void sock_init(struct sock *s, const char *what)
{
	s->fd = -1;
	s->tls = NULL;
	s->want = POLLIN;
	s->what = what;
}

static void sock_close(struct sock *s)
{
	tls_conn_free(s->tls);
	s->tls = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* Records an error for what, keeping a detail a lower layer (tls) set. */
static int sock_err(struct sock *s, struct fb_errinfo *ei, int rc, int sys, const char *detail)
{
	if (rc >= 0)
		return rc;
	if (!ei)
		return rc;
	if (detail)
		return fb_errinfo_set(ei, -rc, sys, s->what, detail);
	ei->code = -rc;
	snprintf(ei->what, sizeof(ei->what), "%s", s->what);
	return rc;
}

static int is_cancelled(int cancel_fd)
{
	struct pollfd p = { .fd = cancel_fd, .events = POLLIN };

	return cancel_fd >= 0 && poll(&p, 1, 0) > 0 && p.revents;
}

/* Waits until fd has events, the cancel fd turns readable, or the deadline.
 * Socket errors and hang-ups count as ready: the next call reports them. */
static int wait_fd(int fd, short events, int cancel_fd, long long deadline)
{
	struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = cancel_fd, .events = POLLIN } };

	for (;;) {
		long long left = deadline - loop_now_ms();
		int n;

		if (left <= 0)
			return -FB_ETIMEDOUT;
		n = poll(p, cancel_fd >= 0 ? 2 : 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno != EINTR)
			return -FB_EIO;
		if (n <= 0)
			continue;
		if (cancel_fd >= 0 && p[1].revents)
			return -FB_ECANCELED;
		if (p[0].revents)
			return 0;
	}
}

static int wait_err(struct sock *s, struct fb_errinfo *ei, int rc, const char *doing)
{
	char d[96];

	snprintf(d, sizeof(d), "%s: %s", doing,
		 rc == -FB_ETIMEDOUT ? "timed out" : rc == -FB_ECANCELED ? "canceled" : "poll failed");
	return sock_err(s, ei, rc, rc == -FB_EIO ? errno : 0, d);
}

static int sys_code(int e)
{
	return e == ECONNRESET || e == EPIPE || e == ENOTCONN ? FB_ECLOSED : FB_EIO;
}

static ssize_t sock_recv(struct sock *s, void *buf, size_t len, struct fb_errinfo *ei)
{
	ssize_t n;

	if (s->tls) {
		n = tls_read(s->tls, buf, len, ei);
		if (n == -FB_EAGAIN)
			s->want = tls_want(s->tls);
		return n < 0 && n != -FB_EAGAIN ? sock_err(s, ei, (int)n, 0, NULL) : n;
	}
	for (;;) {
		n = recv(s->fd, buf, len, 0);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			s->want = POLLIN;
			return -FB_EAGAIN;
		}
		return sock_err(s, ei, -sys_code(errno), errno, "read");
	}
}

static ssize_t sock_send(struct sock *s, const void *buf, size_t len, struct fb_errinfo *ei)
{
	ssize_t n;

	if (s->tls) {
		n = tls_write(s->tls, buf, len, ei);
		if (n == -FB_EAGAIN)
			s->want = tls_want(s->tls);
		return n < 0 && n != -FB_EAGAIN ? sock_err(s, ei, (int)n, 0, NULL) : n;
	}
	for (;;) {
		/* MSG_NOSIGNAL: a closed peer is an error return, never a SIGPIPE */
		n = send(s->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			s->want = POLLOUT;
			return -FB_EAGAIN;
		}
		return sock_err(s, ei, -sys_code(errno), errno, "write");
	}
}

static int sock_write_all(struct sock *s, const char *buf, size_t len, int cancel_fd,
			  long long deadline, struct fb_errinfo *ei)
{
	while (len) {
		ssize_t n;
		int rc;

		/* checked every round, not only when waiting: a fast peer never
		 * makes us wait, and a SIGTERM must not wait for a big body */
		if (is_cancelled(cancel_fd))
			return wait_err(s, ei, -FB_ECANCELED, "sending the request");
		if (loop_now_ms() >= deadline)
			return wait_err(s, ei, -FB_ETIMEDOUT, "sending the request");
		n = sock_send(s, buf, len, ei);

		if (n == -FB_EAGAIN) {
			if ((rc = wait_fd(s->fd, s->want, cancel_fd, deadline)) < 0)
				return wait_err(s, ei, rc, "sending the request");
			continue;
		}
		if (n < 0)
			return (int)n;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads what is there, waiting for it if nothing is. TLS may hold decrypted
 * bytes while the socket is quiet, so the read always comes before the wait. */
static ssize_t sock_read_wait(struct sock *s, char *buf, size_t len, int cancel_fd,
			      long long deadline, struct fb_errinfo *ei)
{
	for (;;) {
		ssize_t n = sock_recv(s, buf, len, ei);
		int rc;

		if (n != -FB_EAGAIN)
			return n;
		if ((rc = wait_fd(s->fd, s->want, cancel_fd, deadline)) < 0)
			return wait_err(s, ei, rc, "waiting for the response");
	}
}

/* Whether a kept-alive connection can carry the next request: nothing may be
 * readable on an idle connection except TLS records that produce no data
 * (a TLS 1.3 session ticket arriving late). EOF, stray bytes or an error all
 * mean "do not reuse", and nothing has been sent yet, so reconnecting is safe. */
static int sock_idle_ok(struct sock *s)
{
	for (int tries = 0; tries < 4; tries++) {
		struct pollfd p = { .fd = s->fd, .events = POLLIN };
		struct fb_errinfo ei;
		char b[256];

		if (poll(&p, 1, 0) == 0 && !(s->tls && tls_pending(s->tls)))
			return 1;
		if (!s->tls || (p.revents & (POLLERR | POLLHUP | POLLNVAL)))
			return 0;
		fb_errinfo_init(&ei);
		if (tls_read(s->tls, b, sizeof(b), &ei) != -FB_EAGAIN)
			return 0;
	}
	return 0;
}

static void set_sockopts(int fd, int keepalive_s)
{
	int one = 1;

	/* the request goes out in one write; no reason to wait for an ACK */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (keepalive_s > 0) {
		int idle = keepalive_s, intvl = keepalive_s / 3 > 0 ? keepalive_s / 3 : 1, cnt = 3;

		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	}
}

/* TCP connect to every address of the host in turn, then the TLS handshake,
 * all within min(deadline, now + connect timeout). getaddrinfo itself cannot
 * be bounded or canceled: DNS names are resolved blocking (in a cluster the
 * host is an IP literal). */
static int sock_open(struct sock *s, struct http_conn *c, long long deadline, struct fb_errinfo *ei)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res, *ai;
	long long cdl = loop_now_ms() + c->connect_ms;
	char port[8], d[96];
	int rc, last = 0, fd = -1;

	if (cdl > deadline)
		cdl = deadline;
	snprintf(port, sizeof(port), "%d", c->port);
	rc = getaddrinfo(c->host, port, &hints, &res);
	if (rc != 0) {
		snprintf(d, sizeof(d), "resolve: %s", gai_strerror(rc));
		return fb_errinfo_set(ei, FB_EIO, rc == EAI_SYSTEM ? errno : 0, s->what, d);
	}
	for (ai = res; ai; ai = ai->ai_next) {
		socklen_t sl = sizeof(last);

		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			last = errno;
			continue;
		}
		set_sockopts(fd, c->keepalive_s);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno != EINPROGRESS && errno != EINTR) {
			last = errno;
			close(fd);
			fd = -1;
			continue;
		}
		if ((rc = wait_fd(fd, POLLOUT, c->cancel_fd, cdl)) < 0) {
			close(fd);
			freeaddrinfo(res);
			return wait_err(s, ei, rc, "connect");
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &last, &sl) == 0 && last == 0)
			break;
		if (last == 0)
			last = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return fb_errinfo_set(ei, FB_EIO, last, s->what, "connect");
	s->fd = fd;
	c->connects++;
	if (!c->tls)
		return 0;
	if ((rc = tls_conn_new(&s->tls, c->tls, fd, c->server_name, ei)) < 0)
		goto fail;
	while ((rc = tls_handshake(s->tls, ei)) == -FB_EAGAIN) {
		if ((rc = wait_fd(fd, tls_want(s->tls), c->cancel_fd, cdl)) < 0) {
			rc = wait_err(s, ei, rc, "TLS handshake");
			goto fail;
		}
	}
	if (rc < 0) {
		sock_err(s, ei, rc, 0, NULL);
		goto fail;
	}
	return 0;
fail:
	sock_close(s);
	return rc;
}

/* ---- client: requests --------------------------------------------------- */

int http_conn_new(struct http_conn **out, const struct http_endpoint *ep, struct fb_errinfo *ei)
{
	struct http_conn *c;
	const char *h = ep->host ? ep->host : "";
	size_t hl = strlen(h);
	int v6;

	*out = NULL;
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']')
		h++, hl -= 2;
	if (hl == 0 || hl > HOST_MAX || memchr(h, '/', hl) || memchr(h, ' ', hl))
		return fb_errinfo_set(ei, FB_EINVAL, 0, ep->host ? ep->host : "", "bad host");
	if (ep->port < 1 || ep->port > 65535)
		return fb_errinfo_set(ei, FB_EINVAL, 0, ep->host, "bad port");
	if (ep->server_name && strlen(ep->server_name) > HOST_MAX)
		return fb_errinfo_set(ei, FB_EINVAL, 0, ep->host, "server name too long");
	if (!(c = calloc(1, sizeof(*c))))
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, ep->host, NULL);
	memcpy(c->host, h, hl);
	v6 = memchr(h, ':', hl) != NULL;
	snprintf(c->server_name, sizeof(c->server_name), "%s", ep->server_name ? ep->server_name : c->host);
	c->tls = ep->tls;
	c->port = ep->port;
	c->connect_ms = ep->connect_timeout_ms > 0 ? ep->connect_timeout_ms : DEFAULT_CONNECT_MS;
	c->keepalive_s = ep->tcp_keepalive_s;
	c->cancel_fd = ep->cancel_fd;
	snprintf(c->what, sizeof(c->what), "%s://%s%s%s:%d", c->tls ? "https" : "http", v6 ? "[" : "",
		 c->host, v6 ? "]" : "", c->port);
	if (c->port == (c->tls ? 443 : 80))
		snprintf(c->hostport, sizeof(c->hostport), "%s%s%s", v6 ? "[" : "", c->host, v6 ? "]" : "");
	else
		snprintf(c->hostport, sizeof(c->hostport), "%s%s%s:%d", v6 ? "[" : "", c->host,
			 v6 ? "]" : "", c->port);
	sock_init(&c->s, c->what);
	*out = c;
	return 0;
}

void http_conn_free(struct http_conn *c)
{
	if (!c)
		return;
	sock_close(&c->s);
	free(c);
}

void http_conn_close(struct http_conn *c)
{
	sock_close(&c->s);
}

unsigned long http_conn_connects(const struct http_conn *c)
{
	return c->connects;
}

static int method_is(const char *m, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(m, *list) == 0)
			return 1;
	return 0;
}

static const char *const idempotent[] = { "GET", "HEAD", "PUT", "DELETE", "OPTIONS", NULL };
static const char *const with_body[] = { "POST", "PUT", "PATCH", NULL };
static const char *const reserved[] = { "Host", "Content-Length", "Connection", "Transfer-Encoding",
					NULL };

/* Validates req and renders head and body into one buffer (one write, no
 * Nagle interplay). The detail never quotes a header, which may be a token. */
/* The request head carries the bearer token: clear it before the heap
 * gets it back. */
static void free_wiped(char *p, size_t len)
{
	if (!p)
		return;
	for (volatile char *v = p; len--; v++)
		*v = 0;
	free(p);
}

static int build_request(const struct http_conn *c, const struct http_req *req, char **out,
			 size_t *out_len, struct fb_errinfo *ei)
{
	const char *m = req->method ? req->method : "", *t = req->target ? req->target : "";
	size_t mlen = strlen(m), tlen = strlen(t), head = 0, off, hn = 0;
	int send_cl = req->body || req->body_len || method_is(m, with_body);
	char cl[48] = "", *buf;

	*out = NULL;
	if (mlen == 0 || mlen > 15)
		return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, "bad request method");
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar((unsigned char)m[i]))
			return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, "bad request method");
	if (t[0] != '/')
		return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, "request target must start with /");
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)t[i] <= 0x20 || t[i] == 0x7f)
			return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, "bad byte in request target");
	if (req->body_len && !req->body)
		return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, "request body length without a body");
	for (const char *const *h = req->headers; h && *h; h++, hn++) {
		const char *p = *h, *colon = strchr(p, ':');
		char d[64];

		snprintf(d, sizeof(d), "request header %zu is malformed", hn);
		if (!colon || colon == p)
			return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, d);
		for (const char *q = p; q < colon; q++)
			if (!is_tchar((unsigned char)*q))
				return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, d);
		for (const char *q = colon + 1; *q; q++)
			if (!is_vchar((unsigned char)*q))
				return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, d);
		for (const char *const *rs = reserved; *rs; rs++) {
			if (ieqn(p, (size_t)(colon - p), *rs)) {
				snprintf(d, sizeof(d), "request header %s is set by the http module", *rs);
				return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, d);
			}
		}
		head += strlen(p) + 2;
		if (head > REQ_HEAD_MAX)
			break;
	}
	if (send_cl)
		snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", req->body_len);
	head += mlen + 1 + tlen + sizeof(" HTTP/1.1\r\nHost: \r\n") - 1 + strlen(c->hostport) +
		strlen(cl) + sizeof("Connection: keep-alive\r\n\r\n") - 1;
	if (head > REQ_HEAD_MAX)
		return fb_errinfo_set(ei, FB_E2BIG, 0, c->what, "request head over 64 KiB");
	if (req->body_len > SIZE_MAX - head - 1 || !(buf = malloc(head + req->body_len + 1)))
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, c->what, NULL);
	off = (size_t)snprintf(buf, head + 1, "%s %s HTTP/1.1\r\nHost: %s\r\n", m, t, c->hostport);
	for (const char *const *h = req->headers; h && *h; h++)
		off += (size_t)snprintf(buf + off, head + 1 - off, "%s\r\n", *h);
	off += (size_t)snprintf(buf + off, head + 1 - off, "%sConnection: keep-alive\r\n\r\n", cl);
	if (req->body_len)
		memcpy(buf + off, req->body, req->body_len);
	*out = buf;
	*out_len = off + req->body_len;
	return 0;
}

/* Reads until resp is complete. *got counts response bytes (for the retry
 * rule), *extra is set when bytes follow the response (no reuse then). */
static int read_response(struct sock *s, struct http_resp *resp, int cancel_fd, long long deadline,
			 size_t *got, int *extra, struct fb_errinfo *ei)
{
	char buf[16384];

	for (;;) {
		ssize_t n, k;
		int rc;

		if (is_cancelled(cancel_fd)) /* as in sock_write_all */
			return wait_err(s, ei, -FB_ECANCELED, "reading the response");
		if (loop_now_ms() >= deadline)
			return wait_err(s, ei, -FB_ETIMEDOUT, "reading the response");
		n = sock_read_wait(s, buf, sizeof(buf), cancel_fd, deadline, ei);

		if (n == 0) {
			rc = http_resp_eof(resp);
			return rc < 0 ? sock_err(s, ei, rc, 0, http_resp_error(resp)) : 0;
		}
		if (n < 0)
			return (int)n;
		*got += (size_t)n;
		k = http_resp_feed(resp, buf, (size_t)n);
		if (k < 0)
			return sock_err(s, ei, (int)k, 0, http_resp_error(resp));
		if (http_resp_done(resp)) {
			/* TLS records still buffered are not counted: a late session
			 * ticket is harmless, and sock_idle_ok sorts it out before reuse */
			*extra = k < n;
			return 0;
		}
	}
}

/* A reset or close seen while writing, or instead of the first response byte. */
static int closed_code(int rc)
{
	return rc == -FB_ECLOSED || rc == -FB_EIO;
}

int http_request(struct http_conn *c, const struct http_req *req, struct http_resp *resp,
		 struct fb_errinfo *ei)
{
	long long deadline = loop_now_ms() + (req->timeout_ms > 0 ? req->timeout_ms : DEFAULT_TIMEOUT_MS);
	int head = req->method && strcmp(req->method, "HEAD") == 0;
	int idem = req->method && method_is(req->method, idempotent);
	size_t len, got;
	int rc, extra = 0;
	char *msg;

	http_resp_reset(resp, head, req->body_max);
	if ((rc = build_request(c, req, &msg, &len, ei)) < 0)
		return rc;
	if (is_cancelled(c->cancel_fd)) {
		free_wiped(msg, len);
		return fb_errinfo_set(ei, FB_ECANCELED, 0, c->what, NULL);
	}
	for (int attempt = 0;; attempt++) {
		int reused = c->s.fd >= 0;

		http_resp_reset(resp, head, req->body_max);
		got = 0;
		if (reused && !sock_idle_ok(&c->s)) {
			sock_close(&c->s); /* closed while idle: nothing sent, always safe */
			reused = 0;
		}
		if (!reused && (rc = sock_open(&c->s, c, deadline, ei)) < 0)
			break;
		rc = sock_write_all(&c->s, msg, len, c->cancel_fd, deadline, ei);
		if (rc < 0) {
			if (reused && attempt == 0 && closed_code(rc)) {
				sock_close(&c->s);
				continue;
			}
			break;
		}
		resp->req_sent = 1;
		rc = read_response(&c->s, resp, c->cancel_fd, deadline, &got, &extra, ei);
		if (rc < 0 && got == 0 && reused && attempt == 0 && idem && closed_code(rc)) {
			sock_close(&c->s);
			continue;
		}
		break;
	}
	if (rc < 0 || extra || !http_resp_keep_alive(resp))
		sock_close(&c->s);
	free_wiped(msg, len);
	return rc;
}

/* ---- client: streams ---------------------------------------------------- */

struct http_stream {
	struct sock s;
	struct http_resp resp;
	int end;               /* 1: body finished; < 0: sticky error */
	size_t off, len;       /* unparsed bytes in raw */
	char what[HOST_MAX + 20];
	char raw[16384];
};

int http_stream_open(struct http_stream **out, struct http_conn *c, const struct http_req *req,
		     struct fb_errinfo *ei)
{
	long long deadline = loop_now_ms() + (req->timeout_ms > 0 ? req->timeout_ms : DEFAULT_TIMEOUT_MS);
	int head = req->method && strcmp(req->method, "HEAD") == 0, rc, extra = 0;
	struct http_stream *s;
	size_t len, got = 0;
	char *msg;

	*out = NULL;
	if ((rc = build_request(c, req, &msg, &len, ei)) < 0)
		return rc;
	if (!(s = calloc(1, sizeof(*s)))) {
		free_wiped(msg, len);
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, c->what, NULL);
	}
	memcpy(s->what, c->what, sizeof(s->what));
	sock_init(&s->s, s->what);
	http_resp_init(&s->resp, head, HTTP_BODY_UNLIMITED);
	if (is_cancelled(c->cancel_fd)) {
		rc = fb_errinfo_set(ei, FB_ECANCELED, 0, c->what, NULL);
		goto fail;
	}
	if ((rc = sock_open(&s->s, c, deadline, ei)) < 0)
		goto fail;
	if ((rc = sock_write_all(&s->s, msg, len, c->cancel_fd, deadline, ei)) < 0)
		goto fail;
	s->resp.req_sent = 1;
	/* until the headers: leftover body bytes stay in raw for the first read */
	while (!http_resp_headers_done(&s->resp)) {
		const char *span;
		size_t n;
		ssize_t k;

		if (s->off == s->len) {
			k = sock_read_wait(&s->s, s->raw, sizeof(s->raw), c->cancel_fd, deadline, ei);
			if (k == 0)
				k = sock_err(&s->s, ei, http_resp_eof(&s->resp), 0,
					     http_resp_error(&s->resp));
			if (k < 0) {
				rc = (int)k;
				goto fail;
			}
			s->off = 0;
			s->len = (size_t)k;
		}
		k = http_resp_parse(&s->resp, s->raw + s->off, s->len - s->off, sizeof(s->raw), &span, &n);
		if (k < 0) {
			rc = sock_err(&s->s, ei, (int)k, 0, http_resp_error(&s->resp));
			goto fail;
		}
		s->off += (size_t)k;
	}
	if (s->resp.status != 200) {
		/* an error Status object: small, read it whole under the deadline */
		s->resp.body_max = req->body_max ? req->body_max : HTTP_BODY_MAX_DEFAULT;
		if ((rc = (int)http_resp_feed(&s->resp, s->raw + s->off, s->len - s->off)) < 0) {
			rc = sock_err(&s->s, ei, rc, 0, http_resp_error(&s->resp));
			goto fail;
		}
		s->off = s->len = 0;
		if (!http_resp_done(&s->resp) &&
		    (rc = read_response(&s->s, &s->resp, c->cancel_fd, deadline, &got, &extra, ei)) < 0)
			goto fail;
		sock_close(&s->s);
		s->end = 1;
	} else if (http_resp_done(&s->resp)) {
		s->end = 1;
	}
	free_wiped(msg, len);
	*out = s;
	return 0;
fail:
	free_wiped(msg, len);
	http_stream_free(s);
	return rc;
}

const struct http_resp *http_stream_resp(const struct http_stream *s)
{
	return &s->resp;
}

int http_stream_fd(const struct http_stream *s)
{
	return s->s.fd;
}

short http_stream_events(const struct http_stream *s)
{
	return s->s.want ? s->s.want : POLLIN;
}

ssize_t http_stream_read(struct http_stream *s, void *buf, size_t size, struct fb_errinfo *ei)
{
	char *out = buf;

	if (s->end)
		return s->end > 0 ? 0 : s->end;
	if (size == 0)
		return -FB_EINVAL;
	for (;;) {
		size_t produced = 0;
		ssize_t k;

		while (s->off < s->len && produced < size && !http_resp_done(&s->resp)) {
			const char *span;
			size_t n;

			k = http_resp_parse(&s->resp, s->raw + s->off, s->len - s->off, size - produced,
					    &span, &n);
			if (k < 0)
				return s->end = sock_err(&s->s, ei, (int)k, 0, http_resp_error(&s->resp));
			if (n)
				memcpy(out + produced, span, n);
			produced += n;
			s->off += (size_t)k;
		}
		if (produced)
			return (ssize_t)produced;
		if (http_resp_done(&s->resp)) {
			s->end = 1;
			return 0;
		}
		/* the parser takes every byte it is given until done: raw is empty */
		k = sock_recv(&s->s, s->raw, sizeof(s->raw), ei);
		if (k == -FB_EAGAIN)
			return k;
		if (k == 0) {
			int rc = http_resp_eof(&s->resp);

			if (rc < 0)
				return s->end = sock_err(&s->s, ei, rc, 0, http_resp_error(&s->resp));
			s->end = 1;
			return 0;
		}
		if (k < 0)
			return s->end = (int)k;
		s->off = 0;
		s->len = (size_t)k;
	}
}

void http_stream_free(struct http_stream *s)
{
	if (!s)
		return;
	sock_close(&s->s);
	http_resp_free(&s->resp);
	free(s);
}

/* ---- server ------------------------------------------------------------- */

#define SWEEP_MS 500
#define DRAIN_MS 2000 /* after an error reply: how long we swallow the client's rest */

enum { C_FREE, C_READ, C_WRITE, C_DRAIN };

struct srv_conn {
	struct http_server *srv;
	int fd, state, close_after;
	long long since;      /* last progress; the idle timeout counts from here */
	char *out;
	size_t out_len, out_off, in_len;
	char in[HTTP_SERVER_REQ_MAX];
};

struct http_server {
	struct loop *loop;
	int lfd, port, idle_ms, timer, listening;
	http_handler_fn handler;
	void *ctx;
	struct http_reply reply; /* reused for every request */
	struct srv_conn conns[HTTP_SERVER_CONNS];
};

int http_reply_append(struct http_reply *r, const void *data, size_t len)
{
	buf_put(&r->body, data, len);
	return r->body.err;
}

char *http_reply_room(struct http_reply *r, size_t n)
{
	if (buf_reserve(&r->body, n) < 0)
		return NULL;
	return r->body.p + r->body.len;
}

void http_reply_commit(struct http_reply *r, size_t n)
{
	if (!r->body.err && r->body.len + n < r->body.size) {
		r->body.len += n;
		r->body.p[r->body.len] = '\0';
	}
}

int http_reply_printf(struct http_reply *r, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -FB_EINVAL;
	if (!(p = http_reply_room(r, (size_t)n + 1)))
		return r->body.err;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	r->body.len += (size_t)n;
	return 0;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
}

struct req_hdrs {
	int close, keep_alive, body;
};

static int req_conn_token(void *ctx, const char *t, size_t n)
{
	struct req_hdrs *h = ctx;

	if (ieqn(t, n, "close"))
		h->close = 1;
	else if (ieqn(t, n, "keep-alive"))
		h->keep_alive = 1;
	return 0;
}

int http_reqline_parse_(const char *buf, size_t len, struct http_reqline_ *out)
{
	const char *p = buf, *end = buf + len, *lf, *sp1, *sp2, *q;
	struct req_hdrs h = { 0, 0, 0 };
	size_t n;

	memset(out, 0, sizeof(*out));
	lf = memchr(p, '\n', len);
	if (!lf || lf == p || lf[-1] != '\r')
		return 400;
	n = (size_t)(lf - 1 - p);
	sp1 = memchr(p, ' ', n);
	if (!sp1 || sp1 == p || (size_t)(sp1 - p) >= sizeof(out->method))
		return 400;
	for (q = p; q < sp1; q++)
		if (!is_tchar((unsigned char)*q))
			return 400;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(lf - 1 - (sp1 + 1)));
	if (!sp2 || sp2 == sp1 + 1)
		return 400;
	for (q = sp1 + 1; q < sp2; q++)
		if ((unsigned char)*q <= 0x20 || *q == 0x7f)
			return 400;
	if ((size_t)(lf - 1 - (sp2 + 1)) != 8 || memcmp(sp2 + 1, "HTTP/", 5) != 0)
		return 400;
	if (sp2[6] != '1' || sp2[7] != '.' || (sp2[8] != '0' && sp2[8] != '1'))
		return 505;
	memcpy(out->method, p, (size_t)(sp1 - p));
	out->minor = sp2[8] - '0';
	if (sp1[1] != '/')
		return 400;
	q = memchr(sp1 + 1, '?', (size_t)(sp2 - (sp1 + 1)));
	if (!q)
		q = sp2;
	if ((size_t)(sp2 - (sp1 + 1)) >= sizeof(out->path))
		return 414;
	memcpy(out->path, sp1 + 1, (size_t)(q - (sp1 + 1)));
	/* header fields: only the framing and Connection ones matter to us */
	for (p = lf + 1; p < end; p = lf + 1) {
		const char *colon, *v, *ve;
		char val[256];

		lf = memchr(p, '\n', (size_t)(end - p));
		if (!lf || lf == p || lf[-1] != '\r')
			return 400;
		n = (size_t)(lf - 1 - p);
		if (n == 0)
			break;
		if (*p == ' ' || *p == '\t')
			return 400;
		colon = memchr(p, ':', n);
		if (!colon || colon == p)
			return 400;
		for (q = p; q < colon; q++)
			if (!is_tchar((unsigned char)*q))
				return 400;
		for (v = colon + 1, ve = lf - 1; v < ve; v++)
			if (!is_vchar((unsigned char)*v))
				return 400;
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (ieqn(p, (size_t)(colon - p), "Connection")) {
			n = (size_t)(ve - v) < sizeof(val) ? (size_t)(ve - v) : sizeof(val) - 1;
			memcpy(val, v, n);
			val[n] = '\0';
			for_tokens(val, req_conn_token, &h);
		} else if (ieqn(p, (size_t)(colon - p), "Transfer-Encoding")) {
			h.body = 1;
		} else if (ieqn(p, (size_t)(colon - p), "Content-Length")) {
			for (q = v; q < ve; q++)
				if (*q != '0')
					h.body = 1;
		}
	}
	out->has_body = h.body;
	out->keep_alive = out->minor == 1 ? !h.close : h.keep_alive && !h.close;
	if (strcmp(out->method, "GET") != 0 && strcmp(out->method, "HEAD") != 0)
		return 405;
	return 0;
}

static void on_conn(void *ctx, int fd, short revents);
static void on_sweep(void *ctx);

static void conn_close(struct srv_conn *c)
{
	loop_unwatch(c->srv->loop, c->fd);
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
	c->state = C_FREE;
}

/* Renders the reply into c->out. */
static void conn_reply(struct srv_conn *c, int status, int head, int keep_alive)
{
	struct http_reply *r = &c->srv->reply;
	const char *ct = r->content_type;
	size_t hlen;
	int n;

	if (!ct || strpbrk(ct, "\r\n"))
		ct = "text/plain; charset=utf-8";
	if (r->body.err) {
		status = 500;
		buf_reset(&r->body);
	}
	if (status >= 400 && r->body.len == 0)
		http_reply_printf(r, "%s\n", reason(status));
	hlen = 200 + strlen(ct);
	c->out = malloc(hlen + (head ? 0 : r->body.len));
	if (!c->out) {
		c->close_after = 1;
		c->out_len = c->out_off = 0;
		return;
	}
	n = snprintf(c->out, hlen,
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: %s\r\n\r\n",
		     status, reason(status), ct, r->body.len, status == 405 ? "Allow: GET, HEAD\r\n" : "",
		     keep_alive ? "keep-alive" : "close");
	c->out_len = (size_t)n;
	if (!head && r->body.len)
		memcpy(c->out + c->out_len, r->body.p, r->body.len);
	c->out_len += head ? 0 : r->body.len;
	c->out_off = 0;
	c->close_after = !keep_alive;
	c->state = C_WRITE;
}

/* Sends what is pending. Returns 1 when the conn is ready for the next
 * request, 0 when waiting (POLLOUT, or draining), -1 when closed. */
static int conn_flush(struct srv_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			loop_watch(c->srv->loop, c->fd, POLLOUT, on_conn, c);
			return 0;
		}
		if (n <= 0) {
			conn_close(c);
			return -1;
		}
		c->out_off += (size_t)n;
		c->since = loop_now_ms();
	}
	free(c->out);
	c->out = NULL;
	c->since = loop_now_ms();
	if (c->close_after) {
		/* closing with unread input would RST the reply away: half-close and
		 * swallow the rest for a moment instead */
		shutdown(c->fd, SHUT_WR);
		c->state = C_DRAIN;
		loop_watch(c->srv->loop, c->fd, POLLIN, on_conn, c);
		return 0;
	}
	c->state = C_READ;
	loop_watch(c->srv->loop, c->fd, POLLIN, on_conn, c);
	return 1;
}

/* Answers every complete request in c->in. */
static void conn_process(struct srv_conn *c)
{
	struct http_server *s = c->srv;

	while (c->state == C_READ) {
		struct http_reqline_ rl;
		const char *end = NULL;
		size_t hlen;
		int status;

		for (size_t i = 3; i < c->in_len && !end; i++)
			if (c->in[i] == '\n' && c->in[i - 1] == '\r' && c->in[i - 2] == '\n' &&
			    c->in[i - 3] == '\r')
				end = c->in + i + 1;
		s->reply.status = 404;
		s->reply.content_type = "text/plain; charset=utf-8";
		buf_reset(&s->reply.body);
		if (!end) {
			if (c->in_len < sizeof(c->in))
				return;
			conn_reply(c, 431, 0, 0);
		} else {
			hlen = (size_t)(end - c->in);
			status = http_reqline_parse_(c->in, hlen, &rl);
			if (status) {
				conn_reply(c, status, 0, 0);
			} else {
				s->handler(s->ctx, rl.method, rl.path, &s->reply);
				status = s->reply.status;
				if (status < 200 || status > 599)
					status = 500;
				/* a GET with a body: we answer, then close rather than parse it */
				conn_reply(c, status, rl.method[0] == 'H', rl.keep_alive && !rl.has_body);
			}
			memmove(c->in, end, c->in_len - hlen);
			c->in_len -= hlen;
		}
		if (conn_flush(c) <= 0)
			return;
	}
}

static void on_conn(void *ctx, int fd, short revents)
{
	struct srv_conn *c = ctx;
	char junk[512];

	(void)fd;
	if (c->state == C_WRITE) {
		if (conn_flush(c) == 1)
			conn_process(c); /* pipelined requests already read */
		return;
	}
	for (;;) {
		char *p = c->state == C_DRAIN ? junk : c->in + c->in_len;
		size_t room = c->state == C_DRAIN ? sizeof(junk) : sizeof(c->in) - c->in_len;
		ssize_t n;

		if (room == 0)
			break;
		n = recv(c->fd, p, room, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		if (c->state != C_DRAIN) {
			c->in_len += (size_t)n;
			c->since = loop_now_ms();
		}
	}
	(void)revents;
	if (c->state == C_READ)
		conn_process(c);
}

static void on_accept(void *ctx, int fd, short revents);

/* One timer for all connections rather than one each: the loop's timer
 * table is shared by the whole applet. Runs while any connection is open or
 * the listener is paused. */
static void arm_sweep(struct http_server *s)
{
	int any = !s->listening;

	for (int i = 0; i < HTTP_SERVER_CONNS && !any; i++)
		any = s->conns[i].state != C_FREE;
	if (any && !s->timer) {
		int id = loop_timer(s->loop, SWEEP_MS, on_sweep, s);

		s->timer = id > 0 ? id : 0;
	}
}

static void on_sweep(void *ctx)
{
	struct http_server *s = ctx;
	long long now = loop_now_ms();

	s->timer = 0;
	for (int i = 0; i < HTTP_SERVER_CONNS; i++) {
		struct srv_conn *c = &s->conns[i];
		long long limit = c->state == C_DRAIN && DRAIN_MS < s->idle_ms ? DRAIN_MS : s->idle_ms;

		if (c->state != C_FREE && now - c->since >= limit)
			conn_close(c);
	}
	if (!s->listening && loop_watch(s->loop, s->lfd, POLLIN, on_accept, s) == 0)
		s->listening = 1;
	arm_sweep(s);
}

static void on_accept(void *ctx, int lfd, short revents)
{
	struct http_server *s = ctx;

	(void)revents;
	for (;;) {
		struct srv_conn *c = NULL;
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				/* out of fds: stop listening for a sweep period instead of
				 * spinning on a listener that stays readable */
				loop_unwatch(s->loop, s->lfd);
				s->listening = 0;
			}
			break;
		}
		/* a free slot, else drop the connection idle the longest: a stuck or
		 * hostile client must not lock kubelet's probes out */
		for (int i = 0; i < HTTP_SERVER_CONNS; i++) {
			struct srv_conn *x = &s->conns[i];

			if (x->state == C_FREE) {
				c = x;
				break;
			}
			if (!c || x->since < c->since)
				c = x;
		}
		if (c->state != C_FREE)
			conn_close(c);
		c->srv = s;
		c->fd = fd;
		c->state = C_READ;
		c->in_len = 0;
		c->out = NULL;
		c->since = loop_now_ms();
		if (loop_watch(s->loop, fd, POLLIN, on_conn, c) < 0) {
			close(fd);
			c->fd = -1;
			c->state = C_FREE;
		}
	}
	arm_sweep(s);
}

/* "HOST:PORT" -> host (brackets removed, "" for every interface) and port. */
static int split_addr(const char *addr, char *host, size_t hsize, int *port)
{
	const char *colon = strrchr(addr, ':'), *h = addr;
	size_t hl;
	long p = 0;

	if (!colon || !colon[1] || strlen(colon + 1) > 5)
		return -FB_EINVAL;
	for (const char *q = colon + 1; *q; q++) {
		if (*q < '0' || *q > '9')
			return -FB_EINVAL;
		p = p * 10 + (*q - '0');
	}
	if (p > 65535)
		return -FB_EINVAL;
	hl = (size_t)(colon - addr);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']')
		h++, hl -= 2;
	else if (memchr(h, ':', hl)) /* "::1:8080": an IPv6 host needs brackets, as in Go */
		return -FB_EINVAL;
	if (hl >= hsize || memchr(h, '[', hl) || memchr(h, ']', hl))
		return -FB_EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (int)p;
	return 0;
}

#define ADDR_SYNTAX "listen address must be HOST:PORT, e.g. \":8080\", \"127.0.0.1:8080\", \"[::1]:8080\""

int http_addr_check(const char *addr, struct fb_errinfo *ei)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res;
	char host[256];
	int port, rc;

	if (split_addr(addr, host, sizeof(host), &port) < 0)
		return fb_errinfo_set(ei, FB_EINVAL, 0, addr, ADDR_SYNTAX);
	if (!host[0])
		return 0;
	if ((rc = getaddrinfo(host, "0", &hints, &res)) != 0)
		return fb_errinfo_set(ei, FB_EINVAL, 0, addr, gai_strerror(rc));
	freeaddrinfo(res);
	return 0;
}

int http_addr_join(char *out, size_t size, const char *ip, long port, struct fb_errinfo *ei)
{
	unsigned char buf[sizeof(struct in6_addr)];
	char v6[INET6_ADDRSTRLEN + 2];
	size_t l = strlen(ip);
	int n;

	if (l >= 2 && ip[0] == '[' && ip[l - 1] == ']' && l - 2 < sizeof(v6)) { /* "[::1]" as well as "::1" */
		memcpy(v6, ip + 1, l - 2);
		v6[l - 2] = '\0';
		if (inet_pton(AF_INET6, v6, buf) != 1)
			return fb_errinfo_set(ei, FB_EINVAL, 0, ip, "not an IP address");
		n = snprintf(out, size, "%s:%ld", ip, port);
	} else if (!*ip || inet_pton(AF_INET, ip, buf) == 1) {
		n = snprintf(out, size, "%s:%ld", ip, port);
	} else if (inet_pton(AF_INET6, ip, buf) == 1) {
		n = snprintf(out, size, "[%s]:%ld", ip, port);
	} else {
		return fb_errinfo_set(ei, FB_EINVAL, 0, ip, "not an IP address");
	}
	if (n < 0 || (size_t)n >= size)
		return fb_errinfo_set(ei, FB_E2BIG, 0, ip, "address too long");
	return 0;
}

static int listen_on(const struct sockaddr *sa, socklen_t len, int dual)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, zero = 0;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (dual)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, sa, len) < 0 || listen(fd, 64) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int http_server_new(struct http_server **out, struct loop *loop, const char *addr,
		    http_handler_fn handler, void *ctx, struct fb_errinfo *ei)
{
	struct http_server *s;
	char host[256];
	int port, rc, fd = -1;
	union {
		struct sockaddr sa;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
		struct sockaddr_storage ss;
	} u;
	socklen_t sl = sizeof(u);

	*out = NULL;
	if (split_addr(addr, host, sizeof(host), &port) < 0)
		return fb_errinfo_set(ei, FB_EINVAL, 0, addr, ADDR_SYNTAX);
	if (!host[0]) {
		/* every interface: one dual-stack socket, or IPv4 alone when the
		 * host has no IPv6 */
		memset(&u, 0, sizeof(u));
		u.in6.sin6_family = AF_INET6;
		u.in6.sin6_port = htons((unsigned short)port);
		u.in6.sin6_addr = in6addr_any;
		fd = listen_on(&u.sa, sizeof(u.in6), 1);
		if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
			memset(&u, 0, sizeof(u));
			u.in4.sin_family = AF_INET;
			u.in4.sin_port = htons((unsigned short)port);
			u.in4.sin_addr.s_addr = htonl(INADDR_ANY);
			fd = listen_on(&u.sa, sizeof(u.in4), 0);
		}
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
		struct addrinfo *res, *ai;
		char ps[8];

		snprintf(ps, sizeof(ps), "%d", port);
		if ((rc = getaddrinfo(host, ps, &hints, &res)) != 0)
			return fb_errinfo_set(ei, FB_EINVAL, 0, addr, gai_strerror(rc));
		for (ai = res; ai && fd < 0; ai = ai->ai_next)
			fd = listen_on(ai->ai_addr, ai->ai_addrlen, 0);
		freeaddrinfo(res);
	}
	if (fd < 0)
		return fb_errinfo_set(ei, FB_EIO, errno, addr, "listen");
	if (getsockname(fd, &u.sa, &sl) == 0)
		port = ntohs(u.sa.sa_family == AF_INET6 ? u.in6.sin6_port : u.in4.sin_port);
	if (!(s = calloc(1, sizeof(*s)))) {
		close(fd);
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, addr, NULL);
	}
	s->loop = loop;
	s->lfd = fd;
	s->port = port;
	buf_init(&s->reply.body, HTTP_SERVER_REPLY_MAX);
	s->idle_ms = HTTP_SERVER_IDLE_MS;
	s->handler = handler;
	s->ctx = ctx;
	for (int i = 0; i < HTTP_SERVER_CONNS; i++) {
		s->conns[i].fd = -1;
		s->conns[i].srv = s;
	}
	if ((rc = loop_watch(loop, fd, POLLIN, on_accept, s)) < 0) {
		close(fd);
		free(s);
		return fb_errinfo_set(ei, -rc, 0, addr, "event loop full");
	}
	s->listening = 1;
	*out = s;
	return 0;
}

int http_server_port(const struct http_server *s)
{
	return s->port;
}

void http_server_set_idle_ms(struct http_server *s, int ms)
{
	s->idle_ms = ms > 0 ? ms : HTTP_SERVER_IDLE_MS;
}

void http_server_free(struct http_server *s)
{
	if (!s)
		return;
	for (int i = 0; i < HTTP_SERVER_CONNS; i++)
		if (s->conns[i].state != C_FREE)
			conn_close(&s->conns[i]);
	loop_unwatch(s->loop, s->lfd);
	close(s->lfd);
	loop_timer_cancel(s->loop, s->timer);
	buf_free(&s->reply.body);
	free(s);
}
