/* http: the HTTP/1.1 the API client and the probe server need, and no more.
 *
 * Three parts:
 *  - http_resp: an incremental response parser. It takes byte slices of any
 *    size (one byte at a time works) and either accumulates the body
 *    (http_resp_feed) or hands de-chunked body bytes out as they arrive
 *    (http_resp_parse), which is what a Kubernetes watch needs.
 *  - http_conn / http_stream: a client over plain TCP or core/tls, with
 *    keep-alive, a total deadline and a cancel fd on every blocking call, and
 *    a non-blocking body reader for watch streams driven by core/loop.
 *  - http_server: /healthz, /readyz, /metrics for kubelet and Prometheus, on
 *    core/loop, plain HTTP, GET and HEAD only.
 *
 * Deliberately absent: request pipelining, content codings (we never send
 * Accept-Encoding), Upgrade, proxies, redirects, HTTP-date parsing. The
 * module never logs: header values carry bearer tokens. Errors go to the
 * caller's fb_errinfo with what = "https://host:port" and a detail that never
 * quotes a header value. */
#ifndef FB_HTTP_H
#define FB_HTTP_H

#include "buf.h"
#include "err.h"

#include <stddef.h>
#include <sys/types.h>

struct loop;
struct tls_config;

#define HTTP_BODY_MAX_DEFAULT ((size_t)32 << 20) /* whole-body cap unless told otherwise */
#define HTTP_BODY_UNLIMITED ((size_t)-1)         /* for streams: the caller caps each event */
#define HTTP_HEADERS_MAX (64 * 1024)             /* status line + headers, and the trailers, each */
#define HTTP_HEADER_COUNT_MAX 100                /* header fields in one response */
#define HTTP_RETRY_AFTER_MAX 86400               /* Retry-After is clamped to a day */

/* ---- response parser ---------------------------------------------------- */

/* One response. Fields above "private" may be read once http_resp_headers_done();
 * the rest belongs to the parser. init cannot fail; free is safe after init. */
struct http_resp {
	int status;        /* final status code (1xx interim responses are skipped) */
	int minor;         /* HTTP/1.<minor>: 0 or 1 */
	char *body;        /* http_resp_feed's body so far, NUL-terminated (the NUL is not
			    * counted in body_len); owned by the parser: borrow it, or
			    * move it out with http_resp_body_take. NULL while empty. */
	size_t body_len;
	int req_sent;      /* set by http_request: 1 once the whole request was handed to
			    * the kernel, i.e. the server may have acted on it */

	/* private */
	int state, err, head, keep_alive, have_headers;
	const char *why;   /* static text saying what was wrong, for fb_errinfo detail */
	size_t body_max, body_size;
	unsigned long long remaining, total;
	size_t line_len, trailer_len;
	int ndigits;
	char *hdr;         /* the header section; after parsing, names and values are
			    * NUL-terminated inside it */
	size_t hdr_len, hdr_size, line_start;
	size_t nhdr;
	struct { unsigned name, value; } idx[HTTP_HEADER_COUNT_MAX];
};

/* head: the request was HEAD (the response has no body whatever it says).
 * body_max: cap on the body, 0 means HTTP_BODY_MAX_DEFAULT, HTTP_BODY_UNLIMITED
 * for streams. */
void http_resp_init(struct http_resp *r, int head, size_t body_max);
/* Forgets everything (frees the body) and expects a new response. */
void http_resp_reset(struct http_resp *r, int head, size_t body_max);
void http_resp_free(struct http_resp *r);

/* Streaming mode. Parses in[0..len) and returns how many bytes it consumed,
 * or a negative error (sticky: every later call returns it again):
 * -FB_EPROTO (malformed: see http_resp_error), -FB_E2BIG (header section or
 * count over the caps, body over body_max), -FB_ENOMEM.
 * It returns early, and the caller calls again with the rest of the input:
 *  - with *span and *span_len set to 1..max de-chunked body bytes, which point
 *    into in (so they stay valid as long as in does);
 *  - right after the final response's headers are complete
 *    (http_resp_headers_done() turns 1), so the caller can look at the status
 *    before choosing how to take the body;
 *  - when the response is complete (http_resp_done()); bytes after it are not
 *    consumed (a conforming server sends none).
 * Otherwise it consumes all of in, with *span_len = 0. max must be > 0. */
ssize_t http_resp_parse(struct http_resp *r, const char *in, size_t len, size_t max,
			const char **span, size_t *span_len);

/* Whole-body mode: like http_resp_parse but appends every body byte to
 * r->body and only stops early when the response is complete. Returns the
 * bytes consumed or the same errors. */
ssize_t http_resp_feed(struct http_resp *r, const char *in, size_t len);

/* The connection hit EOF. Returns 0 when that completes the response (a body
 * delimited by the close, or a response already complete), -FB_ECLOSED when
 * the response was cut short (in the headers, mid-chunk, fewer bytes than
 * Content-Length). */
int http_resp_eof(struct http_resp *r);

int http_resp_headers_done(const struct http_resp *r);
int http_resp_done(const struct http_resp *r);
/* What the last error was about ("bad status line", "bad chunk size", ...):
 * static text, never quotes the input. "" when no error. */
const char *http_resp_error(const struct http_resp *r);

/* The first header of that name (ASCII case-insensitive), value with the
 * surrounding whitespace trimmed; NULL when absent. Borrowed until reset/free. */
const char *http_resp_header(const struct http_resp *r, const char *name);
/* The Content-Type value as sent, parameters included; NULL when absent. */
const char *http_resp_content_type(const struct http_resp *r);
/* Retry-After in seconds (0..HTTP_RETRY_AFTER_MAX), or -1 when absent or in
 * the HTTP-date form, which we treat as absent: the API server only sends
 * delta-seconds, and a date would need a trustworthy clock. */
long http_resp_retry_after(const struct http_resp *r);
/* Whether the connection may carry another request: HTTP/1.1 without
 * "Connection: close", or HTTP/1.0 with "Connection: keep-alive", and a body
 * that was not delimited by the close. Meaningful once done. */
int http_resp_keep_alive(const struct http_resp *r);
/* Moves the body out: returns it (NUL-terminated, caller frees; NULL when
 * empty) and its length in *len; the parser no longer holds it. */
char *http_resp_body_take(struct http_resp *r, size_t *len);

/* ---- client ------------------------------------------------------------- */

/* Where to connect. Strings are copied by http_conn_new; tls is borrowed and
 * must outlive the conn and every stream opened from it. */
struct http_endpoint {
	const char *host;        /* DNS name, IPv4 or IPv6 literal (with or without []) */
	int port;                /* 1..65535 */
	struct tls_config *tls;  /* NULL: plain HTTP */
	const char *server_name; /* name the certificate must carry; NULL: host */
	int connect_timeout_ms;  /* TCP connect + TLS handshake, 0: 10 s; the request deadline still applies */
	int tcp_keepalive_s;     /* > 0: SO_KEEPALIVE, idle s, probes every s/3 (at least 1),
				  * 3 probes: a dead peer is noticed after about 2*s seconds */
	int cancel_fd;           /* -1 or an fd (loop_cancel_fd()) that turns readable to cancel
				  * any blocking call; polled, never read */
};

/* One request. */
struct http_req {
	const char *method;      /* "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", ... */
	const char *target;      /* origin form: "/api/v1/nodes?limit=500", no spaces or controls */
	const char *const *headers; /* NULL or a NULL-terminated list of "Name: value" strings
				  * without CR/LF (Authorization, Accept, Content-Type...).
				  * Host, Content-Length, Connection, Transfer-Encoding are
				  * ours and refused here. */
	const void *body;        /* request body, may be NULL */
	size_t body_len;
	int timeout_ms;          /* deadline for the whole exchange, 0: 30 s */
	size_t body_max;         /* response body cap, 0: HTTP_BODY_MAX_DEFAULT */
};

struct http_conn;

/* A client for one endpoint; connects lazily, keeps one connection alive
 * between requests. Errors: -FB_EINVAL (empty host, bad port), -FB_ENOMEM. */
int http_conn_new(struct http_conn **out, const struct http_endpoint *ep, struct fb_errinfo *ei);
/* Closes the connection and frees; safe with NULL. */
void http_conn_free(struct http_conn *c);
/* Drops the kept-alive connection (the next request connects afresh). */
void http_conn_close(struct http_conn *c);
/* How many connections this conn has opened (for tests and metrics). */
unsigned long http_conn_connects(const struct http_conn *c);

/* Sends req and reads the response into resp (which the caller init'ed; it is
 * reset here) within req->timeout_ms. Returns 0 when a complete response of
 * any status arrived. Errors: -FB_EINVAL (bad request fields), -FB_E2BIG
 * (request head over 64 KiB, response over the caps), -FB_ETIMEDOUT,
 * -FB_ECANCELED, -FB_ECLOSED (closed before or during the response),
 * -FB_EPROTO, -FB_ETLS, -FB_EIO (connect and socket errors: ei->sys has the
 * errno), -FB_ENOMEM. resp->req_sent tells whether the server may have seen
 * the whole request.
 *
 * Sent: "METHOD target HTTP/1.1", Host (host[:port], IPv6 in brackets), the
 * caller's lines in order, Content-Length when there is a body or the method
 * is POST/PUT/PATCH, "Connection: keep-alive". The deadline and the cancel fd
 * are checked between every read and write too, not only while waiting.
 *
 * What happens inside, and nothing else:
 *  - Before a kept-alive connection is reused, a non-blocking check: if it is
 *    readable (EOF, stray bytes, an error; TLS records that carry no data are
 *    consumed and ignored) it is closed and a fresh one is opened. Nothing was
 *    sent on it, so this is always safe and is not counted as a retry.
 *  - One retry at most, on a fresh connection, only when the failing
 *    connection was a reused one (a fresh connection failing is reported):
 *    (a) writing the request failed with a reset/closed error: the server
 *        had stopped reading, so it never acted on the request; any method;
 *    (b) the whole request was written, then EOF or a reset arrived with
 *        zero response bytes, and the method is idempotent (GET, HEAD, PUT,
 *        DELETE, OPTIONS): the server may have processed it before dying,
 *        which is harmless only for those. POST and PATCH get -FB_ECLOSED
 *        with req_sent = 1 and the caller's retry policy decides. */
int http_request(struct http_conn *c, const struct http_req *req, struct http_resp *resp,
		 struct fb_errinfo *ei);

/* A request on a dedicated connection whose body is read incrementally (a
 * watch). Blocks (deadline req->timeout_ms, the cancel fd) until the status
 * line and headers are in. Then:
 *  - status 200: the body is to be read with http_stream_read;
 *  - any other status: the body was read whole (capped by req->body_max) and
 *    is in http_stream_resp(s)->body, the connection is closed, and
 *    http_stream_read returns 0 at once. Decode the Status object from it.
 * Errors as http_request (no internal retry: a stream is never reused). */
struct http_stream;
int http_stream_open(struct http_stream **out, struct http_conn *c, const struct http_req *req,
		     struct fb_errinfo *ei);
/* Status and headers (and the body of a non-200). Borrowed. */
const struct http_resp *http_stream_resp(const struct http_stream *s);
/* The socket to watch (-1 once the connection is closed, e.g. after a
 * non-200), and the events to watch it for: POLLIN normally, POLLOUT when
 * TLS last asked to write. Re-read both after every -FB_EAGAIN. */
int http_stream_fd(const struct http_stream *s);
short http_stream_events(const struct http_stream *s);
/* Non-blocking: up to size de-chunked body bytes. Returns the count (> 0), 0 at
 * the clean end of the body, -FB_EAGAIN when nothing is available now, or an
 * error, sticky: -FB_ECLOSED (the server closed mid-body or mid-chunk),
 * -FB_EPROTO, -FB_ETLS, -FB_EIO. Bytes may already be buffered (decrypted TLS
 * records, bytes that came with the headers) while the socket is not
 * readable, so the rule is: call it until -FB_EAGAIN right after
 * http_stream_open and every time the fd reports events, and only then go
 * back to poll. */
ssize_t http_stream_read(struct http_stream *s, void *buf, size_t size, struct fb_errinfo *ei);
/* Closes and frees; safe with NULL. The caller unwatches the fd first. */
void http_stream_free(struct http_stream *s);

/* ---- server ------------------------------------------------------------- */

#define HTTP_SERVER_REQ_MAX 8192      /* request line + headers; more gets 431 */
#define HTTP_SERVER_CONNS 16          /* more: the longest-idle connection is dropped */
#define HTTP_SERVER_IDLE_MS 10000     /* default: a connection gets this long per request */
#define HTTP_SERVER_REPLY_MAX ((size_t)4 << 20)

/* What the handler fills. status starts at 404 and content_type at
 * "text/plain; charset=utf-8" (borrowed: it must stay valid until the handler
 * returns). The body buffer belongs to the server. */
struct http_reply {
	int status;
	const char *content_type;
	/* private */
	struct buf body; /* capped at HTTP_SERVER_REPLY_MAX */
};
/* Add to the body; on failure (-FB_ENOMEM, -FB_E2BIG over
 * HTTP_SERVER_REPLY_MAX) the server answers 500 instead. */
int http_reply_append(struct http_reply *r, const void *data, size_t len);
int http_reply_printf(struct http_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Room for n more body bytes (NULL on failure, as append); write into it and
 * then http_reply_commit(r, written) with written <= n. For renderers that
 * take a buffer (metrics_render). */
char *http_reply_room(struct http_reply *r, size_t n);
void http_reply_commit(struct http_reply *r, size_t n);

/* method is "GET" or "HEAD" (for HEAD the body is computed and dropped), path
 * the request target without its query string. Runs inside the loop. */
typedef void (*http_handler_fn)(void *ctx, const char *method, const char *path,
				struct http_reply *r);

struct http_server;

/* Listens on addr "HOST:PORT": ":8080" is every interface (IPv6 and IPv4 when
 * the host has IPv6), "127.0.0.1:0" an ephemeral port, "[::1]:9090" IPv6.
 * Errors: -FB_EINVAL (bad address), -FB_EIO (bind/listen, ei->sys set),
 * -FB_E2BIG (loop full), -FB_ENOMEM. */
int http_server_new(struct http_server **out, struct loop *loop, const char *addr,
		    http_handler_fn handler, void *ctx, struct fb_errinfo *ei);
/* Checks addr as http_server_new takes it, without binding: "HOST:PORT",
 * HOST empty (every interface), an IPv4 address, a bracketed IPv6 address or
 * a name that resolves. Returns 0 or -FB_EINVAL with ei saying what is wrong. */
int http_addr_check(const char *addr, struct fb_errinfo *ei);
/* Joins an IP address alone (a --bind-address as Kubernetes components take
 * it: "127.0.0.1", "::1" or "[::1]", "" for every interface) and a port into
 * "HOST:PORT" in out. Returns 0, -FB_EINVAL (not an IP address) or -FB_E2BIG. */
int http_addr_join(char *out, size_t size, const char *ip, long port, struct fb_errinfo *ei);
/* The bound port (useful after ":0"). */
int http_server_port(const struct http_server *s);
/* Per-request idle timeout (reading a request, writing its reply). */
void http_server_set_idle_ms(struct http_server *s, int ms);
/* Unwatches and closes everything; safe with NULL. */
void http_server_free(struct http_server *s);

/* ---- internal, exported for the fuzz target ----------------------------- */

struct http_reqline_ {
	char method[16];
	char path[1024];
	int minor, keep_alive, has_body;
};
/* Parses a complete request head buf[0..len) (ending with the blank line).
 * Returns 0, or the status to answer with: 400, 405 (method not GET/HEAD),
 * 414 (target too long), 505 (not HTTP/1.x). */
int http_reqline_parse_(const char *buf, size_t len, struct http_reqline_ *out);

#endif
