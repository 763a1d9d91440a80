/* http_client: one socket (plain or TLS) per connection, requests with
 * retries on a closed kept-alive connection, and body streams for watches.
 * See http.h for the contract. */
#include "http.h"
#include "http_int.h"

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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
		if (!http_is_tchar_((unsigned char)m[i]))
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
			if (!http_is_tchar_((unsigned char)*q))
				return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, d);
		for (const char *q = colon + 1; *q; q++)
			if (!http_is_vchar_((unsigned char)*q))
				return fb_errinfo_set(ei, FB_EINVAL, 0, c->what, d);
		for (const char *const *rs = reserved; *rs; rs++) {
			if (http_ieqn_(p, (size_t)(colon - p), *rs)) {
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
