/* http_server: the probe/metrics server (GET and HEAD only) on core/loop,
 * its replies and its request-line parser. See http.h for the contract. */
#include "http.h"
#include "http_int.h"

#include "buf.h"
#include "err.h"
#include "loop.h"

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

	if (http_ieqn_(t, n, "close"))
		h->close = 1;
	else if (http_ieqn_(t, n, "keep-alive"))
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
		if (!http_is_tchar_((unsigned char)*q))
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
			if (!http_is_tchar_((unsigned char)*q))
				return 400;
		for (v = colon + 1, ve = lf - 1; v < ve; v++)
			if (!http_is_vchar_((unsigned char)*v))
				return 400;
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (http_ieqn_(p, (size_t)(colon - p), "Connection")) {
			n = (size_t)(ve - v) < sizeof(val) ? (size_t)(ve - v) : sizeof(val) - 1;
			memcpy(val, v, n);
			val[n] = '\0';
			http_for_tokens_(val, req_conn_token, &h);
		} else if (http_ieqn_(p, (size_t)(colon - p), "Transfer-Encoding")) {
			h.body = 1;
		} else if (http_ieqn_(p, (size_t)(colon - p), "Content-Length")) {
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
