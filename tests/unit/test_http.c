/* http: the response parser fed whole, byte by byte and as a stream; the
 * client against a scripted server on loopback (keep-alive, reconnects,
 * deadlines, cancel, streams, IPv6, TLS against openssl s_server); the probe
 * server through real sockets. No external network. */
#include "t.h"
#include "t_net.h"

#include "../../core/err.h"
#include "../../core/http.h"
#include "../../core/loop.h"
#include "../../core/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

static void unblock_term(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- parser ------------------------------------------------------------- */

#define INCOMPLETE 1000 /* "no error, but not done either" */

struct pcase {
	const char *name;
	const char *in;
	int rc;           /* 0, INCOMPLETE or -FB_x */
	int status;
	const char *body;
	int eof;          /* feed EOF after the input */
	int head;
	size_t cap;
	int ka;           /* expected keep-alive: 1, 0, or -1 to skip */
};

#define CL5 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello"
#define CH_HDR "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

static const struct pcase pcases[] = {
	{ "content-length", CL5, 0, 200, "hello", 0, 0, 0, 1 },
	{ "content-length 0", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, 200, "", 0, 0, 0, 1 },
	{ "duplicate equal content-length",
	  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok", 0, 200, "ok", 0, 0, 0, 1 },
	{ "chunked with extensions and trailers",
	  CH_HDR "5;foo=bar\r\nhello\r\n7 ; x=\"y\"\r\n, world\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n",
	  0, 200, "hello, world", 0, 0, 0, 1 },
	{ "chunked upper and lower hex, leading zeros",
	  CH_HDR "A\r\n0123456789\r\n0000b\r\nabcdefghijk\r\n000\r\n\r\n", 0, 200,
	  "0123456789abcdefghijk", 0, 0, 0, 1 },
	{ "chunked incomplete without the last chunk", CH_HDR "5\r\nhello\r\n", INCOMPLETE, 200, "hello",
	  0, 0, 0, -1 },
	{ "close-delimited (HTTP/1.0)", "HTTP/1.0 200 ok\r\nContent-type: text/html\r\n\r\n<html>", 0, 200,
	  "<html>", 1, 0, 0, 0 },
	{ "close-delimited waits for EOF", "HTTP/1.1 200 OK\r\n\r\nabc", INCOMPLETE, 200, "abc", 0, 0, 0,
	  -1 },
	{ "1xx then 200",
	  "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
	  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 200, "ok", 0, 0, 0, 1 },
	{ "204 has no body", "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n", 0, 204, "", 0, 0, 0,
	  1 },
	{ "304 has no body", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", 0, 304,
	  "", 0, 0, 0, 1 },
	{ "HEAD has no body", "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n", 0, 200, "", 0, 1,
	  0, 1 },
	{ "Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", 0, 200,
	  "x", 0, 0, 0, 0 },
	{ "HTTP/1.0 keep-alive",
	  "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx", 0, 200, "x", 0, 0, 0,
	  1 },
	{ "HTTP/1.0 default close", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 0, 200, "x", 0, 0, 0,
	  0 },
	{ "status line without reason", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", 0, 404, "", 0, 0, 0,
	  1 },
	{ "bad status line: HTTP/2", "HTTP/2 200 OK\r\n\r\n", -FB_EPROTO },
	{ "bad status line: two digits", "HTTP/1.1 20 OK\r\n\r\n", -FB_EPROTO },
	{ "bad status line: 600", "HTTP/1.1 600 Odd\r\n\r\n", -FB_EPROTO },
	{ "bad status line: no space", "HTTP/1.1 200OK\r\n\r\n", -FB_EPROTO },
	{ "bad status line: not HTTP", "SSH-2.0-OpenSSH_9.2\r\n\r\n", -FB_EPROTO },
	{ "bad status line: empty", "\r\n\r\n", -FB_EPROTO },
	{ "bare LF line endings", "HTTP/1.1 200 OK\nContent-Length: 0\n\n", -FB_EPROTO },
	{ "obsolete folding refused", "HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\n\r\n", -FB_EPROTO },
	{ "space before colon refused", "HTTP/1.1 200 OK\r\nContent-Length : 1\r\n\r\nx", -FB_EPROTO },
	{ "control byte in a value refused", "HTTP/1.1 200 OK\r\nX-A: a\001b\r\n\r\n", -FB_EPROTO },
	{ "bad chunk size", CH_HDR "zz\r\nhello\r\n0\r\n\r\n", -FB_EPROTO },
	{ "empty chunk size", CH_HDR "\r\nhello\r\n0\r\n\r\n", -FB_EPROTO },
	{ "negative chunk size", CH_HDR "-5\r\nhello\r\n0\r\n\r\n", -FB_EPROTO },
	{ "chunk size overflow", CH_HDR "fffffffffffffffffff\r\n", -FB_EPROTO },
	{ "missing CRLF after chunk data", CH_HDR "5\r\nhelloX\r\n0\r\n\r\n", -FB_EPROTO },
	{ "missing LF after chunk size", CH_HDR "5\rhello\r\n0\r\n\r\n", -FB_EPROTO },
	{ "bare LF in trailer", CH_HDR "0\r\nX: 1\n\r\n", -FB_EPROTO },
	{ "unsupported transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	  -FB_EPROTO },
	{ "Transfer-Encoding with Content-Length",
	  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", -FB_EPROTO },
	{ "conflicting Content-Length",
	  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", -FB_EPROTO },
	{ "bad Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello", -FB_EPROTO },
	{ "101 refused", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", -FB_EPROTO },
	{ "content-length over the cap", "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
	  -FB_E2BIG, 200, NULL, 0, 0, 10 },
	{ "chunked over the cap", CH_HDR "6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n", -FB_E2BIG, 200, NULL, 0,
	  0, 10 },
	{ "close-delimited over the cap", "HTTP/1.1 200 OK\r\n\r\nhello world", -FB_E2BIG, 200, NULL, 1,
	  0, 10 },
	{ "body exactly at the cap", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", 0, 200,
	  "0123456789", 0, 0, 10, 1 },
	{ "EOF mid-body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", -FB_ECLOSED, 200, NULL, 1 },
	{ "EOF mid-chunk", CH_HDR "a\r\nabc", -FB_ECLOSED, 200, NULL, 1 },
	{ "EOF in the headers", "HTTP/1.1 200 OK\r\nContent-Le", -FB_ECLOSED, 0, NULL, 1 },
	{ "EOF before anything", "", -FB_ECLOSED, 0, NULL, 1 },
};

enum { M_WHOLE, M_BYTES, M_STREAM };
static const char *const mode_name[] = { "whole", "byte by byte", "stream" };

/* Runs one case in one mode; the body collected goes to out. */
static int run_pcase(const struct pcase *c, int mode, struct http_resp *r, char *out, size_t *olen)
{
	size_t len = strlen(c->in), i = 0;
	ssize_t k;

	*olen = 0;
	http_resp_init(r, c->head, c->cap);
	if (mode == M_WHOLE) {
		k = http_resp_feed(r, c->in, len);
		if (k < 0)
			return (int)k;
		i = (size_t)k;
	} else if (mode == M_BYTES) {
		for (; i < len && !http_resp_done(r); i++)
			if ((k = http_resp_feed(r, c->in + i, 1)) < 0)
				return (int)k;
	} else {
		/* slices of 3 bytes, at most 2 body bytes per span */
		while (i < len && !http_resp_done(r)) {
			size_t n = len - i < 3 ? len - i : 3, j = 0;

			while (j < n && !http_resp_done(r)) {
				const char *span;
				size_t sl;

				k = http_resp_parse(r, c->in + i + j, n - j, 2, &span, &sl);
				if (k < 0)
					return (int)k;
				if (sl)
					memcpy(out + *olen, span, sl);
				*olen += sl;
				j += (size_t)k;
			}
			i += n;
		}
	}
	if (mode != M_STREAM && r->body) {
		memcpy(out, r->body, r->body_len);
		*olen = r->body_len;
	}
	if (c->eof && !http_resp_done(r)) {
		int rc = http_resp_eof(r);

		if (rc < 0)
			return rc;
	}
	return http_resp_done(r) ? 0 : INCOMPLETE;
}

static void test_parser_tables(void)
{
	char name[200], out[256];

	for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
		const struct pcase *c = &pcases[i];

		for (int m = 0; m < 3; m++) {
			struct http_resp r;
			size_t olen;
			int rc = run_pcase(c, m, &r, out, &olen);
			int ok = rc == c->rc;
			char why[160] = "";

			if (ok && c->status && r.status != c->status)
				ok = 0, snprintf(why, sizeof(why), "status %d", r.status);
			if (ok && c->body && (olen != strlen(c->body) || memcmp(out, c->body, olen)))
				ok = 0, snprintf(why, sizeof(why), "body \"%.*s\"", (int)olen, out);
			if (ok && rc == 0 && c->ka >= 0 && http_resp_keep_alive(&r) != c->ka)
				ok = 0, snprintf(why, sizeof(why), "keep-alive %d", http_resp_keep_alive(&r));
			if (ok && rc < 0 && !http_resp_error(&r)[0])
				ok = 0, snprintf(why, sizeof(why), "no error text");
			snprintf(name, sizeof(name), "parse: %s (%s)", c->name, mode_name[m]);
			T_OK(name, ok, "rc %d (%s) want %d; %s", rc, http_resp_error(&r), c->rc, why);
			http_resp_free(&r);
		}
	}
}

static void test_parser_caps(void)
{
	struct http_resp r;
	size_t big = 70 * 1024, n;
	char *in = malloc(big + 64), *p;
	ssize_t k;

	/* a 70 KiB header section */
	n = (size_t)sprintf(in, "HTTP/1.1 200 OK\r\n");
	for (p = in + n; (size_t)(p - in) < big; p += 12)
		memcpy(p, "X-Pad: 123\r\n", 12);
	memcpy(p, "\r\n", 2);
	n = (size_t)(p + 2 - in);
	http_resp_init(&r, 0, 0);
	T_INT("parse: oversize header section (whole)", http_resp_feed(&r, in, n), -FB_E2BIG);
	http_resp_free(&r);
	http_resp_init(&r, 0, 0);
	k = 0;
	for (size_t i = 0; i < n && k >= 0; i++)
		k = http_resp_feed(&r, in + i, 1);
	T_INT("parse: oversize header section (byte by byte)", k, -FB_E2BIG);
	T_INT("parse: errors are sticky", http_resp_feed(&r, "x", 1), -FB_E2BIG);
	http_resp_free(&r);

	/* one header more than the count cap */
	n = (size_t)sprintf(in, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i <= HTTP_HEADER_COUNT_MAX; i++)
		n += (size_t)sprintf(in + n, "X-%d: v\r\n", i);
	n += (size_t)sprintf(in + n, "\r\n");
	http_resp_init(&r, 0, 0);
	T_INT("parse: header count over the cap", http_resp_feed(&r, in, n), -FB_E2BIG);
	http_resp_free(&r);

	/* a 70 KiB trailer section */
	n = (size_t)sprintf(in, CH_HDR "0\r\n");
	for (p = in + n; (size_t)(p - in) < big; p += 12)
		memcpy(p, "X-Pad: 123\r\n", 12);
	memcpy(p, "\r\n", 2);
	n = (size_t)(p + 2 - in);
	http_resp_init(&r, 0, 0);
	T_INT("parse: oversize trailer section", http_resp_feed(&r, in, n), -FB_E2BIG);
	http_resp_free(&r);
	free(in);
}

static void test_parser_lookup(void)
{
	static const char in[] =
		"HTTP/1.1 429 Too Many Requests\r\n"
		"Content-Type: application/json; charset=utf-8\r\n"
		"X-Spaces:    padded value \t \r\n"
		"X-Empty:\r\n"
		"Retry-After: 7\r\n"
		"Content-Length: 2\r\n\r\n{}";
	struct http_resp r;
	size_t len;
	char *body;

	http_resp_init(&r, 0, 0);
	T_INT("lookup: feed", http_resp_feed(&r, in, sizeof(in) - 1), sizeof(in) - 1);
	T_INT("lookup: status", r.status, 429);
	T_STR("lookup: case-insensitive name", http_resp_header(&r, "content-TYPE"),
	      "application/json; charset=utf-8");
	T_STR("lookup: content type", http_resp_content_type(&r), "application/json; charset=utf-8");
	T_STR("lookup: value trimmed", http_resp_header(&r, "x-spaces"), "padded value");
	T_STR("lookup: empty value", http_resp_header(&r, "X-Empty"), "");
	T_OK("lookup: absent", http_resp_header(&r, "X-Nope") == NULL, "found");
	T_OK("lookup: prefix is not a match", http_resp_header(&r, "Content") == NULL, "found");
	T_INT("lookup: Retry-After seconds", http_resp_retry_after(&r), 7);
	body = http_resp_body_take(&r, &len);
	T_OK("lookup: body taken", body && len == 2 && strcmp(body, "{}") == 0 && r.body == NULL, "%p", body);
	free(body);
	http_resp_free(&r);

	static const struct {
		const char *hdr;
		long want;
	} ra[] = {
		{ "Retry-After: 120\r\n", 120 },
		{ "Retry-After: 0\r\n", 0 },
		{ "Retry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n", -1 },
		{ "Retry-After: 99999999999999999999\r\n", HTTP_RETRY_AFTER_MAX },
		{ "Retry-After: -5\r\n", -1 },
		{ "", -1 },
	};
	for (size_t i = 0; i < sizeof(ra) / sizeof(ra[0]); i++) {
		char buf[200], name[120];
		int n = snprintf(buf, sizeof(buf), "HTTP/1.1 503 x\r\n%sContent-Length: 0\r\n\r\n", ra[i].hdr);

		http_resp_init(&r, 0, 0);
		http_resp_feed(&r, buf, (size_t)n);
		snprintf(name, sizeof(name), "lookup: Retry-After \"%.*s\"",
			 ra[i].hdr[0] ? (int)strlen(ra[i].hdr) - 15 : 0, ra[i].hdr + (ra[i].hdr[0] ? 13 : 0));
		T_INT(name, http_resp_retry_after(&r), ra[i].want);
		http_resp_free(&r);
	}

	/* the parser stops right after the headers, then hands out the body */
	{
		const char *span;
		size_t sl;
		ssize_t k;

		http_resp_init(&r, 0, HTTP_BODY_UNLIMITED);
		k = http_resp_parse(&r, CL5, sizeof(CL5) - 1, 100, &span, &sl);
		T_OK("parse: returns at the end of the headers",
		     k == (ssize_t)sizeof(CL5) - 6 && sl == 0 && http_resp_headers_done(&r) &&
			     !http_resp_done(&r), "k %zd", k);
		k = http_resp_parse(&r, CL5 + k, 5, 100, &span, &sl);
		T_OK("parse: then the body as a span", k == 5 && sl == 5 && memcmp(span, "hello", 5) == 0 &&
							      http_resp_done(&r), "k %zd", k);
		http_resp_free(&r);
	}
}

/* ---- a scripted server -------------------------------------------------- */

enum { A_END, A_READREQ, A_SEND, A_SLEEP, A_CLOSE };

struct act {
	int op;
	const char *data;
	size_t len;  /* 0: strlen(data) */
	int ms;
};

#define TS_CONNS 4
#define TS_REQS 4

struct tsrv {
	int lfd, port, stop[2];
	const struct act *script[TS_CONNS + 1];
	int accepts;
	char req[TS_CONNS][TS_REQS][4096];
	pthread_t th;
};

/* Reads one request (head and Content-Length body) into buf. */
static int read_req(int fd, char *buf, size_t size)
{
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char *end;
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0 || len + 1 >= size)
			return -1;
		n = recv(fd, buf + len, size - 1 - len, 0);
		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if ((end = strstr(buf, "\r\n\r\n"))) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			size_t need = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 17, NULL, 10) : 0);

			if (len >= need)
				return (int)len;
		}
	}
}

static void *tsrv_main(void *arg)
{
	struct tsrv *s = arg;

	for (int i = 0; i < TS_CONNS && s->script[i]; i++) {
		struct pollfd p[2] = { { .fd = s->lfd, .events = POLLIN }, { .fd = s->stop[0], .events = POLLIN } };
		const struct act *a;
		int fd, nreq = 0;

		if (poll(p, 2, 10000) <= 0 || p[1].revents)
			break;
		if ((fd = accept(s->lfd, NULL, NULL)) < 0)
			break;
		s->accepts++;
		for (a = s->script[i]; a->op != A_END; a++) {
			if (a->op == A_READREQ) {
				if (read_req(fd, s->req[i][nreq < TS_REQS - 1 ? nreq++ : nreq], sizeof(s->req[0][0])) < 0)
					break;
			} else if (a->op == A_SEND) {
				size_t len = a->len ? a->len : strlen(a->data), off = 0;

				while (off < len) {
					ssize_t n = send(fd, a->data + off, len - off, MSG_NOSIGNAL);

					if (n <= 0)
						break;
					off += (size_t)n;
				}
			} else if (a->op == A_SLEEP) {
				msleep(a->ms);
			} else {
				break;
			}
		}
		if (a->op == A_END) {
			/* script done: wait for the client to hang up */
			struct pollfd q[2] = { { .fd = fd, .events = POLLIN }, { .fd = s->stop[0], .events = POLLIN } };
			char junk[4096];

			while (poll(q, 2, 10000) > 0 && !q[1].revents && recv(fd, junk, sizeof(junk), 0) > 0)
				;
		}
		close(fd);
	}
	return NULL;
}

/* family AF_INET (127.0.0.1) or AF_INET6 (::1); -1 when that cannot bind. */
static int tsrv_start(struct tsrv *s, int family, const struct act *const *script)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
	} u;
	socklen_t sl = family == AF_INET ? sizeof(u.in4) : sizeof(u.in6);

	memset(s, 0, sizeof(*s));
	memset(&u, 0, sizeof(u));
	for (int i = 0; i < TS_CONNS && script[i]; i++)
		s->script[i] = script[i];
	if (family == AF_INET) {
		u.in4.sin_family = AF_INET;
		u.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else {
		u.in6.sin6_family = AF_INET6;
		u.in6.sin6_addr = in6addr_loopback;
	}
	s->lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, &u.sa, sl) < 0 || listen(s->lfd, 8) < 0 ||
	    getsockname(s->lfd, &u.sa, &sl) < 0) {
		if (s->lfd >= 0)
			close(s->lfd);
		return -1;
	}
	s->port = ntohs(family == AF_INET ? u.in4.sin_port : u.in6.sin6_port);
	if (pipe(s->stop) < 0 || pthread_create(&s->th, NULL, tsrv_main, s) != 0) {
		perror("tsrv");
		exit(2);
	}
	return 0;
}

static void tsrv_stop(struct tsrv *s)
{
	if (write(s->stop[1], "x", 1) != 1)
		perror("tsrv_stop");
	pthread_join(s->th, NULL);
	close(s->stop[0]);
	close(s->stop[1]);
	close(s->lfd);
}

/* ---- client tests ------------------------------------------------------- */

#define RESP_OK(body) "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " body

static const struct act ka_conn0[] = {
	{ A_READREQ }, { A_SEND, RESP_OK("3\r\n\r\none") }, { A_READREQ }, { A_SEND, RESP_OK("3\r\n\r\ntwo") },
	{ A_END },
};
static const struct act idle_close0[] = {
	{ A_READREQ }, { A_SEND, RESP_OK("3\r\n\r\none") }, { A_CLOSE },
};
static const struct act race0[] = {
	{ A_READREQ }, { A_SEND, RESP_OK("3\r\n\r\none") }, { A_READREQ }, { A_CLOSE },
};
static const struct act serve_two[] = {
	{ A_READREQ }, { A_SEND, RESP_OK("3\r\n\r\ntwo") }, { A_END },
};
static const struct act mid_body[] = {
	{ A_READREQ }, { A_SEND, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc" }, { A_CLOSE },
};
static const struct act mid_chunk[] = {
	{ A_READREQ }, { A_SEND, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc" }, { A_CLOSE },
};
static const struct act garbage[] = {
	{ A_READREQ }, { A_SEND, "HTTP/1.1 OK 200\r\n\r\n" }, { A_END },
};
static const struct act silent[] = {
	{ A_READREQ }, { A_END },
};
static const struct act head_then_get[] = {
	{ A_READREQ }, { A_SEND, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" },
	{ A_READREQ }, { A_SEND, "HTTP/1.1 100 Continue\r\n\r\n" RESP_OK("2\r\n\r\nok") }, { A_END },
};
static const struct act over_cap[] = {
	{ A_READREQ }, { A_SEND, RESP_OK("100\r\n\r\n") }, { A_END },
};

#define WATCH_HDR "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
#define EV1 "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"10\"}}}\n"
#define EV2 "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"11\"}}}\n"
#define EV3 "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"resourceVersion\":\"12\"}}}\n"

/* EV1 (90 bytes) split across two chunks, EV2+EV3 in one chunk; the TCP
 * writes cut the framing in odd places, with pauses. */
static const struct act watch_script[] = {
	{ A_READREQ },
	{ A_SEND, WATCH_HDR "1" },
	{ A_SLEEP, .ms = 30 },
	{ A_SEND, "e\r\n" "{\"type\":\"ADDED\",\"object\":{\"kin" },
	{ A_SLEEP, .ms = 30 },
	{ A_SEND, "\r\n3c;ext=1\r\n" "d\":\"Node\",\"metadata\":{\"name\":\"n1\",\"resourceVersion\":\"10\"}}}\n\r" },
	{ A_SLEEP, .ms = 30 },
	{ A_SEND, "\nae\r\n" EV2 EV3 "\r\n" },
	{ A_SLEEP, .ms = 30 },
	{ A_SEND, "0\r\n\r\n" },
	{ A_END },
};
static const struct act watch_410[] = {
	{ A_READREQ },
	{ A_SEND, "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\nContent-Length: 61\r\n\r\n"
		  "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,\"message\":\"x\"}" },
	{ A_END },
};
static const struct act watch_cut[] = {
	{ A_READREQ }, { A_SEND, WATCH_HDR "5a\r\n" EV1 "\r\n20\r\n{\"type\"" }, { A_CLOSE },
};

struct sctx {
	struct loop *l;
	struct http_stream *st;
	char got[65536];
	size_t len;
	int rc, reads, done;
};

/* How a watch integrates with core/loop: read until -FB_EAGAIN, then wait
 * for whatever events the stream asks for. */
static void on_stream(void *ctx, int fd, short revents)
{
	struct sctx *x = ctx;
	struct fb_errinfo ei;

	(void)revents;
	for (;;) {
		char b[7]; /* tiny on purpose: spans get cut */
		ssize_t n = http_stream_read(x->st, b, sizeof(b), &ei);

		if (n > 0) {
			if (x->len + (size_t)n <= sizeof(x->got))
				memcpy(x->got + x->len, b, (size_t)n);
			x->len += (size_t)n;
			x->reads++;
			continue;
		}
		if (n == -FB_EAGAIN) {
			loop_watch(x->l, fd, http_stream_events(x->st), on_stream, x);
			return;
		}
		x->rc = (int)n;
		x->done = 1;
		loop_unwatch(x->l, fd);
		loop_stop(x->l, 0);
		return;
	}
}

static void on_guard(void *ctx)
{
	struct sctx *x = ctx;

	x->rc = -FB_ETIMEDOUT;
	loop_stop(x->l, 0);
}

/* Opens a stream on c and reads it to the end through a loop. */
static int stream_all(struct http_conn *c, struct loop *l, struct sctx *x, const char *target)
{
	struct http_req rq = { .method = "GET", .target = target, .timeout_ms = 3000 };
	struct fb_errinfo ei;
	int rc, timer;

	memset(x, 0, sizeof(*x));
	x->l = l;
	fb_errinfo_init(&ei);
	if ((rc = http_stream_open(&x->st, c, &rq, &ei)) < 0)
		return rc;
	/* bytes may have come with the headers: read before the first wait */
	on_stream(x, http_stream_fd(x->st), 0);
	if (!x->done) {
		timer = loop_timer(l, 5000, on_guard, x);
		loop_run(l);
		loop_timer_cancel(l, timer);
		if (!x->done && http_stream_fd(x->st) >= 0)
			loop_unwatch(l, http_stream_fd(x->st));
	}
	return 0;
}

static struct http_conn *conn_to(const char *host, int port, int cancel_fd)
{
	struct http_endpoint ep = { .host = host, .port = port, .cancel_fd = cancel_fd,
				    .tcp_keepalive_s = 30 };
	struct http_conn *c;
	struct fb_errinfo ei;

	if (http_conn_new(&c, &ep, &ei) < 0) {
		printf("FAIL: http: http_conn_new %s\n", host);
		exit(1);
	}
	return c;
}

static int get(struct http_conn *c, const char *method, const char *target, struct http_resp *r,
	       int timeout_ms, struct fb_errinfo *ei)
{
	static const char *const hdrs[] = { "Authorization: Bearer s3cr3t-token", "Accept: application/json",
					    NULL };
	struct http_req rq = { .method = method, .target = target, .headers = hdrs, .timeout_ms = timeout_ms };

	if (strcmp(method, "POST") == 0) {
		rq.body = "{}\n";
		rq.body_len = 3;
	}
	fb_errinfo_init(ei);
	return http_request(c, &rq, r, ei);
}

static void test_client(struct loop *l)
{
	struct tsrv s;
	struct http_conn *c;
	struct http_resp r;
	struct fb_errinfo ei;
	long long t0, el;
	int rc;
	char hostport[64];

	http_resp_init(&r, 0, 0);

	/* keep-alive: two requests, one connection */
	const struct act *ka[] = { ka_conn0, NULL };
	tsrv_start(&s, AF_INET, ka);
	c = conn_to("127.0.0.1", s.port, -1);
	rc = get(c, "GET", "/api/v1/nodes?limit=1", &r, 2000, &ei);
	T_OK("client: first request", rc == 0 && r.status == 200 && r.body && strcmp(r.body, "one") == 0,
	     "rc %d status %d", rc, r.status);
	rc = get(c, "POST", "/api/v1/namespaces/x/events", &r, 2000, &ei);
	T_OK("client: second request", rc == 0 && r.status == 200 && r.body && strcmp(r.body, "two") == 0,
	     "rc %d status %d", rc, r.status);
	http_conn_free(c);
	tsrv_stop(&s);
	T_INT("client: keep-alive reuses the connection (accepts)", s.accepts, 1);
	snprintf(hostport, sizeof(hostport), "\r\nHost: 127.0.0.1:%d\r\n", s.port);
	T_OK("client: request line and Host header",
	     strncmp(s.req[0][0], "GET /api/v1/nodes?limit=1 HTTP/1.1\r\n", 36) == 0 &&
		     strstr(s.req[0][0], hostport), "%.80s", s.req[0][0]);
	T_OK("client: extra headers and Connection: keep-alive",
	     strstr(s.req[0][0], "\r\nAuthorization: Bearer s3cr3t-token\r\nAccept: application/json\r\n") &&
		     strstr(s.req[0][0], "\r\nConnection: keep-alive\r\n\r\n"), "%.200s", s.req[0][0]);
	T_OK("client: GET without a body has no Content-Length",
	     !strcasestr(s.req[0][0], "Content-Length"), "%.200s", s.req[0][0]);
	T_OK("client: POST body with Content-Length",
	     strncmp(s.req[0][1], "POST /api/v1/namespaces/x/events HTTP/1.1\r\n", 43) == 0 &&
		     strstr(s.req[0][1], "\r\nContent-Length: 3\r\n") && strstr(s.req[0][1], "\r\n\r\n{}\n"),
	     "%.200s", s.req[0][1]);

	/* the server closes the idle kept-alive connection: found before sending */
	const struct act *ic[] = { idle_close0, serve_two, NULL };
	tsrv_start(&s, AF_INET, ic);
	c = conn_to("127.0.0.1", s.port, -1);
	rc = get(c, "GET", "/a", &r, 2000, &ei);
	msleep(50);
	rc |= get(c, "GET", "/b", &r, 2000, &ei);
	T_OK("client: idle connection closed by the server -> reconnect",
	     rc == 0 && r.status == 200 && r.body && strcmp(r.body, "two") == 0, "rc %d", rc);
	T_INT("client: idle-close reconnect connects twice", http_conn_connects(c), 2);
	http_conn_free(c);
	tsrv_stop(&s);
	T_INT("client: idle-close reconnect (accepts)", s.accepts, 2);

	/* closed after reading the request, before any response byte: GET is retried */
	const struct act *rc0[] = { race0, serve_two, NULL };
	tsrv_start(&s, AF_INET, rc0);
	c = conn_to("127.0.0.1", s.port, -1);
	rc = get(c, "GET", "/a", &r, 2000, &ei);
	rc |= get(c, "GET", "/b", &r, 2000, &ei);
	T_OK("client: closed with zero response bytes -> GET retried",
	     rc == 0 && r.status == 200 && r.body && strcmp(r.body, "two") == 0, "rc %d", rc);
	http_conn_free(c);
	tsrv_stop(&s);
	T_INT("client: GET retried on a fresh connection (accepts)", s.accepts, 2);

	/* ... but a POST is not: the server may have acted on it */
	const struct act *rc1[] = { race0, serve_two, NULL };
	tsrv_start(&s, AF_INET, rc1);
	c = conn_to("127.0.0.1", s.port, -1);
	rc = get(c, "GET", "/a", &r, 2000, &ei);
	rc = get(c, "POST", "/b", &r, 2000, &ei);
	T_OK("client: closed with zero response bytes -> POST not retried",
	     rc == -FB_ECLOSED && r.req_sent == 1, "rc %d req_sent %d", rc, r.req_sent);
	http_conn_free(c);
	tsrv_stop(&s);
	T_INT("client: POST not retried (accepts)", s.accepts, 1);

	/* cut short */
	const struct act *mb[] = { mid_body, NULL };
	tsrv_start(&s, AF_INET, mb);
	c = conn_to("127.0.0.1", s.port, -1);
	rc = get(c, "GET", "/", &r, 2000, &ei);
	T_OK("client: closed mid-body -> ECLOSED", rc == -FB_ECLOSED && ei.code == FB_ECLOSED &&
							   strstr(ei.what, "http://127.0.0.1:"),
	     "rc %d what %s detail %s", rc, ei.what, ei.detail);
	http_conn_free(c);
	tsrv_stop(&s);

	const struct act *mc[] = { mid_chunk, NULL };
	tsrv_start(&s, AF_INET, mc);
	c = conn_to("127.0.0.1", s.port, -1);
	rc = get(c, "GET", "/", &r, 2000, &ei);
	T_OK("client: closed mid-chunk -> ECLOSED", rc == -FB_ECLOSED, "rc %d", rc);
	http_conn_free(c);
	tsrv_stop(&s);

	const struct act *gb[] = { garbage, NULL };
	tsrv_start(&s, AF_INET, gb);
	c = conn_to("127.0.0.1", s.port, -1);
	rc = get(c, "GET", "/", &r, 2000, &ei);
	T_OK("client: bad status line -> EPROTO", rc == -FB_EPROTO && strstr(ei.detail, "status line"),
	     "rc %d detail %s", rc, ei.detail);
	http_conn_free(c);
	tsrv_stop(&s);

	/* a server that never answers: the deadline */
	const struct act *sl[] = { silent, NULL };
	tsrv_start(&s, AF_INET, sl);
	c = conn_to("127.0.0.1", s.port, -1);
	t0 = loop_now_ms();
	rc = get(c, "GET", "/", &r, 400, &ei);
	el = loop_now_ms() - t0;
	T_OK("client: slow server -> ETIMEDOUT at the deadline", rc == -FB_ETIMEDOUT && el >= 390 && el <= 900,
	     "rc %d after %lld ms", rc, el);
	http_conn_free(c);
	tsrv_stop(&s);

	/* cancel fd already readable, and turning readable during the wait */
	{
		int pfd[2];

		if (pipe(pfd) < 0)
			exit(2);
		const struct act *sl2[] = { silent, NULL };
		tsrv_start(&s, AF_INET, sl2);
		c = conn_to("127.0.0.1", s.port, pfd[0]);
		if (write(pfd[1], "x", 1) != 1)
			exit(2);
		t0 = loop_now_ms();
		rc = get(c, "GET", "/", &r, 5000, &ei);
		el = loop_now_ms() - t0;
		T_OK("client: cancel fd readable -> ECANCELED at once", rc == -FB_ECANCELED && el < 100,
		     "rc %d after %lld ms", rc, el);
		http_conn_free(c);
		tsrv_stop(&s);
		close(pfd[0]);
		close(pfd[1]);
	}
	{
		struct loop *l2;
		int pid, st;

		/* the real thing: SIGTERM from another process while the request
		 * waits. loop_new blocks it in this thread; the server thread
		 * started next inherits that, so the signal can only be pending. */
		if (loop_new(&l2, &ei) < 0)
			exit(2);
		const struct act *sl3[] = { silent, NULL };
		tsrv_start(&s, AF_INET, sl3);
		c = conn_to("127.0.0.1", s.port, loop_cancel_fd(l2));
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			msleep(150);
			kill(getppid(), SIGTERM);
			_exit(0);
		}
		t0 = loop_now_ms();
		rc = get(c, "GET", "/", &r, 5000, &ei);
		el = loop_now_ms() - t0;
		waitpid(pid, &st, 0);
		T_OK("client: SIGTERM via the loop's signalfd -> ECANCELED quickly",
		     rc == -FB_ECANCELED && el >= 100 && el < 1000 && loop_signal(l2) == SIGTERM,
		     "rc %d after %lld ms", rc, el);
		http_conn_free(c);
		tsrv_stop(&s);
		loop_free(l2);
		{
			/* the loop leaves the signal pending (so every blocking call sees
			 * it); take it before unblocking, or it would kill us */
			sigset_t t;
			struct timespec zero = { 0, 0 };

			sigemptyset(&t);
			sigaddset(&t, SIGTERM);
			sigtimedwait(&t, NULL, &zero);
		}
		unblock_term();
	}

	/* connection refused: a port that was just free */
	{
		struct tsrv dead;
		const struct act *none[] = { NULL };
		int port;

		tsrv_start(&dead, AF_INET, none);
		port = dead.port;
		tsrv_stop(&dead);
		c = conn_to("127.0.0.1", port, -1);
		rc = get(c, "GET", "/", &r, 2000, &ei);
		T_OK("client: connection refused -> EIO with errno", rc == -FB_EIO && ei.sys == ECONNREFUSED,
		     "rc %d sys %d", rc, ei.sys);
		http_conn_free(c);
	}

	/* HEAD then GET on one connection (HEAD's Content-Length has no body),
	 * and a 100 Continue before the final response */
	const struct act *hg[] = { head_then_get, NULL };
	tsrv_start(&s, AF_INET, hg);
	c = conn_to("localhost", s.port, -1);
	rc = get(c, "HEAD", "/", &r, 2000, &ei);
	T_OK("client: HEAD with Content-Length and no body", rc == 0 && r.status == 200 && r.body_len == 0,
	     "rc %d", rc);
	rc = get(c, "GET", "/", &r, 2000, &ei);
	T_OK("client: 100 Continue skipped, same connection",
	     rc == 0 && r.status == 200 && r.body && strcmp(r.body, "ok") == 0, "rc %d", rc);
	http_conn_free(c);
	tsrv_stop(&s);
	T_INT("client: DNS name localhost, HEAD then GET on one connection", s.accepts, 1);

	const struct act *oc[] = { over_cap, NULL };
	tsrv_start(&s, AF_INET, oc);
	c = conn_to("127.0.0.1", s.port, -1);
	{
		struct http_req rq = { .method = "GET", .target = "/", .body_max = 10, .timeout_ms = 2000 };

		rc = http_request(c, &rq, &r, &ei);
	}
	T_INT("client: body over the caller's cap -> E2BIG", rc, -FB_E2BIG);
	http_conn_free(c);
	tsrv_stop(&s);

	/* requests refused before anything is sent */
	{
		static const char *const crlf[] = { "X-A: a\r\nX-Injected: 1", NULL };
		static const char *const host[] = { "host: evil", NULL };
		static const char *const noco[] = { "NoColon", NULL };
		struct http_req rq = { .method = "GET", .target = "/", .headers = crlf };

		c = conn_to("127.0.0.1", 1, -1);
		T_INT("client: CR/LF in a header line -> EINVAL", http_request(c, &rq, &r, &ei), -FB_EINVAL);
		T_OK("client: the error does not quote the header", !strstr(ei.detail, "Injected"), "%s",
		     ei.detail);
		rq.headers = host;
		T_INT("client: Host header from the caller -> EINVAL", http_request(c, &rq, &r, &ei), -FB_EINVAL);
		rq.headers = noco;
		T_INT("client: header without a colon -> EINVAL", http_request(c, &rq, &r, &ei), -FB_EINVAL);
		rq.headers = NULL;
		rq.target = "/a b";
		T_INT("client: space in the target -> EINVAL", http_request(c, &rq, &r, &ei), -FB_EINVAL);
		T_INT("client: nothing was connected", http_conn_connects(c), 0);
		http_conn_free(c);
	}

	/* a big chunked body, in many TCP segments */
	{
		size_t n = 1 << 20, hl;
		char *big = malloc(n + 200), *want = malloc(n);
		struct act script[] = { { A_READREQ }, { A_SEND, big }, { A_END } };
		const struct act *bs[] = { script, NULL };

		hl = (size_t)sprintf(big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n", n);
		for (size_t i = 0; i < n; i++)
			want[i] = big[hl + i] = (char)('a' + i % 26);
		memcpy(big + hl + n, "\r\n0\r\n\r\n", 7);
		script[1].len = hl + n + 7;
		tsrv_start(&s, AF_INET, bs);
		c = conn_to("127.0.0.1", s.port, -1);
		rc = get(c, "GET", "/", &r, 5000, &ei);
		T_OK("client: 1 MiB chunked body", rc == 0 && r.body_len == n && memcmp(r.body, want, n) == 0,
		     "rc %d len %zu", rc, r.body_len);
		http_conn_free(c);
		tsrv_stop(&s);
		free(big);
		free(want);
	}

	/* streams */
	{
		struct sctx x;
		const char *want = EV1 EV2 EV3;

		const struct act *ws[] = { watch_script, NULL };
		tsrv_start(&s, AF_INET, ws);
		c = conn_to("127.0.0.1", s.port, -1);
		rc = stream_all(c, l, &x, "/api/v1/nodes?watch=1&resourceVersion=9");
		T_OK("stream: chunked watch in odd splits with delays",
		     rc == 0 && x.rc == 0 && x.len == strlen(want) && memcmp(x.got, want, x.len) == 0,
		     "rc %d read rc %d len %zu: %.*s", rc, x.rc, x.len, (int)x.len, x.got);
		{
			const char *ct = x.st ? http_resp_content_type(http_stream_resp(x.st)) : NULL;

			T_OK("stream: status and content type",
			     x.st && http_stream_resp(x.st)->status == 200 && ct &&
				     strcmp(ct, "application/json") == 0, "%s", ct ? ct : "(none)");
		}
		http_stream_free(x.st);
		http_conn_free(c);
		tsrv_stop(&s);

		const struct act *w410[] = { watch_410, NULL };
		tsrv_start(&s, AF_INET, w410);
		c = conn_to("127.0.0.1", s.port, -1);
		rc = stream_all(c, l, &x, "/api/v1/nodes?watch=1&resourceVersion=1");
		T_OK("stream: non-200 returns the Status body",
		     rc == 0 && x.rc == 0 && x.len == 0 && http_stream_resp(x.st)->status == 410 &&
			     http_stream_resp(x.st)->body &&
			     strstr(http_stream_resp(x.st)->body, "\"reason\":\"Expired\""),
		     "rc %d read rc %d", rc, x.rc);
		http_stream_free(x.st);
		http_conn_free(c);
		tsrv_stop(&s);

		const struct act *wc[] = { watch_cut, NULL };
		tsrv_start(&s, AF_INET, wc);
		c = conn_to("127.0.0.1", s.port, -1);
		rc = stream_all(c, l, &x, "/w");
		T_OK("stream: server closes mid-chunk -> ECLOSED after the whole events",
		     rc == 0 && x.rc == -FB_ECLOSED && x.len == strlen(EV1) + 7 &&
			     memcmp(x.got, EV1 "{\"type\"", x.len) == 0,
		     "rc %d read rc %d len %zu", rc, x.rc, x.len);
		http_stream_free(x.st);
		http_conn_free(c);
		tsrv_stop(&s);
	}

	/* IPv6 loopback */
	{
		const struct act *v6[] = { serve_two, NULL };

		if (tsrv_start(&s, AF_INET6, v6) < 0) {
			printf("SKIP: http: ipv6 (no ::1)\n");
		} else {
			c = conn_to("::1", s.port, -1);
			rc = get(c, "GET", "/", &r, 2000, &ei);
			T_OK("client: IPv6 literal ::1", rc == 0 && r.status == 200, "rc %d", rc);
			http_conn_free(c);
			tsrv_stop(&s);
			snprintf(hostport, sizeof(hostport), "\r\nHost: [::1]:%d\r\n", s.port);
			T_OK("client: IPv6 Host header in brackets", strstr(s.req[0][0], hostport) != NULL, "%.100s",
			     s.req[0][0]);
		}
	}
	http_resp_free(&r);
}

/* ---- TLS against openssl s_server ---------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = malloc(1 << 16);

	*len = f ? fread(b, 1, (1 << 16) - 1, f) : 0;
	b[*len] = '\0';
	if (f)
		fclose(f);
	return b;
}

static int wait_port(int port)
{
	for (int i = 0; i < 100; i++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int fd = socket(AF_INET, SOCK_STREAM, 0), ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

		close(fd);
		if (ok)
			return 0;
		msleep(50);
	}
	return -1;
}

static void test_tls(struct loop *l)
{
	char dir[] = "/tmp/fb-http-tls-XXXXXX", cmd[600], path[300], port_s[16];
	const char *top = getenv("FB_TOP");
	struct tsrv tmp;
	const struct act *none[] = { NULL };
	struct tls_opts o = { 0 };
	struct tls_config *cfg = NULL, *bad = NULL;
	struct fb_errinfo ei;
	struct http_resp r;
	struct http_conn *c;
	size_t len;
	char *ca, *other;
	int port, rc, pid, st;

	if (!mkdtemp(dir)) {
		printf("FAIL: http: tls (mkdtemp)\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s/tests/tls/mkpki.sh %s", top ? top : ".", dir);
	if (system("command -v openssl >/dev/null") != 0) {
		printf("SKIP: http: tls against openssl s_server (no openssl CLI)\n");
		return;
	}
	if (system(cmd) != 0) {
		printf("FAIL: http: tls (tests/tls/mkpki.sh failed)\n");
		return;
	}
	/* a port that was free a moment ago */
	tsrv_start(&tmp, AF_INET, none);
	port = tmp.port;
	tsrv_stop(&tmp);
	snprintf(port_s, sizeof(port_s), "%d", port);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char cert[300], key[300];
		int dn = open("/dev/null", O_RDWR);
		sigset_t all_open;

		/* blocked signals survive exec: give s_server its SIGTERM back */
		sigemptyset(&all_open);
		sigprocmask(SIG_SETMASK, &all_open, NULL);

		snprintf(cert, sizeof(cert), "%s/srv-ec.pem", dir);
		snprintf(key, sizeof(key), "%s/srv-ec.key", dir);
		dup2(dn, 0);
		dup2(dn, 1);
		dup2(dn, 2);
		execlp("openssl", "openssl", "s_server", "-accept", port_s, "-cert", cert, "-key", key,
		       "-www", "-quiet", (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/ca.pem", dir);
	ca = slurp(path, &len);
	o.ca_pem = ca;
	o.ca_len = len;
	rc = tls_config_new(&cfg, &o, &ei);
	snprintf(path, sizeof(path), "%s/ca2.pem", dir);
	other = slurp(path, &len);
	o.ca_pem = other;
	o.ca_len = len;
	rc |= tls_config_new(&bad, &o, &ei);
	T_OK("tls: configs from the throwaway PKI", rc == 0, "rc %d %s", rc, ei.detail);
	if (rc != 0 || wait_port(port) < 0) {
		printf("FAIL: http: tls (s_server did not start)\n");
		goto out;
	}
	http_resp_init(&r, 0, 0);
	{
		struct http_endpoint ep = { .host = "127.0.0.1", .port = port, .tls = cfg, .cancel_fd = -1 };
		struct http_req rq = { .method = "GET", .target = "/", .timeout_ms = 5000 };

		http_conn_new(&c, &ep, &ei);
		rc = http_request(c, &rq, &r, &ei);
		T_OK("tls: GET over TLS to an IP literal (IP SAN)",
		     rc == 0 && r.status == 200 && r.body && strstr(r.body, "s_server"),
		     "rc %d status %d %s %s", rc, r.status, ei.what, ei.detail);
		http_conn_free(c);

		ep.host = "localhost";
		http_conn_new(&c, &ep, &ei);
		{
			struct sctx x;

			rc = stream_all(c, l, &x, "/");
			T_OK("tls: stream over TLS to a DNS name, close-delimited HTTP/1.0 body",
			     rc == 0 && x.rc == 0 && x.len > 100 && memmem(x.got, x.len, "s_server", 8),
			     "rc %d read rc %d len %zu", rc, x.rc, x.len);
			http_stream_free(x.st);
		}
		http_conn_free(c);

		ep.host = "127.0.0.1";
		ep.tls = bad;
		http_conn_new(&c, &ep, &ei);
		rc = http_request(c, &rq, &r, &ei);
		T_OK("tls: wrong CA -> ETLS naming the endpoint",
		     rc == -FB_ETLS && strncmp(ei.what, "https://127.0.0.1:", 18) == 0 && ei.detail[0],
		     "rc %d %s %s", rc, ei.what, ei.detail);
		http_conn_free(c);

		ep.tls = cfg;
		ep.server_name = "kubernetes.default.svc";
		http_conn_new(&c, &ep, &ei);
		rc = http_request(c, &rq, &r, &ei);
		T_OK("tls: server name not in the certificate -> ETLS", rc == -FB_ETLS, "rc %d %s", rc,
		     ei.detail);
		http_conn_free(c);
	}
	http_resp_free(&r);
out:
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	tls_config_free(cfg);
	tls_config_free(bad);
	free(ca);
	free(other);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		perror(cmd);
}

/* ---- server tests ------------------------------------------------------- */

struct srvctx {
	struct loop *l;
	int stop[2];
	int calls;
	pthread_t th;
};

static void handler(void *ctx, const char *method, const char *path, struct http_reply *r)
{
	struct srvctx *x = ctx;

	(void)method;
	x->calls++;
	if (strcmp(path, "/healthz") == 0) {
		r->status = 200;
		http_reply_printf(r, "ok\n");
	} else if (strcmp(path, "/readyz") == 0) {
		r->status = 503;
		http_reply_append(r, "not ready\n", 10);
	} else if (strcmp(path, "/metrics") == 0) {
		char *p = http_reply_room(r, 64);

		r->status = 200;
		r->content_type = "text/plain; version=0.0.4";
		if (p)
			http_reply_commit(r, (size_t)snprintf(p, 64, "# TYPE x_total counter\nx_total %d\n", 42));
	} else if (strcmp(path, "/huge") == 0) {
		r->status = 200;
		while (http_reply_printf(r, "%0100d\n", 0) == 0)
			;
	}
}

static void on_stop(void *ctx, int fd, short revents)
{
	struct srvctx *x = ctx;

	(void)fd;
	(void)revents;
	loop_stop(x->l, 0);
}

static void *loop_main(void *arg)
{
	struct srvctx *x = arg;

	loop_run(x->l);
	return NULL;
}

/* One raw exchange: sends req, reads until EOF into out. */
static size_t raw(int port, const char *req, size_t len, char *out, size_t size)
{
	return t_exchange(port, req, len, out, size);
}

static int raw_connect(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_server(void)
{
	struct srvctx x = { 0 };
	struct http_server *srv;
	struct fb_errinfo ei;
	struct http_conn *c;
	struct http_resp r;
	char out[16384], *big;
	int rc, port, ok;

	if (loop_new(&x.l, &ei) < 0 || pipe(x.stop) < 0)
		exit(2);
	unblock_term();
	T_INT("server: bad address refused", http_server_new(&srv, x.l, "nonsense", handler, &x, &ei),
	      -FB_EINVAL);
	rc = http_server_new(&srv, x.l, "127.0.0.1:0", handler, &x, &ei);
	port = rc == 0 ? http_server_port(srv) : 0;
	T_OK("server: listens on an ephemeral port", rc == 0 && port > 0, "rc %d port %d", rc, port);
	if (rc < 0)
		return;
	http_server_set_idle_ms(srv, 300);
	loop_watch(x.l, x.stop[0], POLLIN, on_stop, &x);
	pthread_create(&x.th, NULL, loop_main, &x);

	http_resp_init(&r, 0, 0);
	c = conn_to("127.0.0.1", port, -1);
	rc = get(c, "GET", "/healthz", &r, 2000, &ei);
	T_OK("server: GET /healthz -> 200 ok",
	     rc == 0 && r.status == 200 && r.body && strcmp(r.body, "ok\n") == 0 &&
		     strcmp(http_resp_content_type(&r), "text/plain; charset=utf-8") == 0,
	     "rc %d status %d", rc, r.status);
	rc = get(c, "GET", "/healthz?verbose=1", &r, 2000, &ei);
	T_OK("server: query string ignored", rc == 0 && r.status == 200, "rc %d status %d", rc, r.status);
	rc = get(c, "HEAD", "/healthz", &r, 2000, &ei);
	T_OK("server: HEAD -> 200, Content-Length, no body",
	     rc == 0 && r.status == 200 && r.body_len == 0 &&
		     strcmp(http_resp_header(&r, "Content-Length") ? http_resp_header(&r, "Content-Length") : "", "3") == 0,
	     "rc %d status %d", rc, r.status);
	rc = get(c, "GET", "/metrics", &r, 2000, &ei);
	T_OK("server: /metrics with its content type",
	     rc == 0 && r.status == 200 && r.body && strstr(r.body, "x_total 42\n") &&
		     strcmp(http_resp_content_type(&r), "text/plain; version=0.0.4") == 0,
	     "rc %d status %d", rc, r.status);
	rc = get(c, "GET", "/readyz", &r, 2000, &ei);
	T_OK("server: /readyz -> 503", rc == 0 && r.status == 503, "rc %d status %d", rc, r.status);
	rc = get(c, "GET", "/nope", &r, 2000, &ei);
	T_OK("server: unknown path -> 404", rc == 0 && r.status == 404, "rc %d status %d", rc, r.status);
	rc = get(c, "GET", "/huge", &r, 2000, &ei);
	T_OK("server: reply over the cap -> 500", rc == 0 && r.status == 500, "rc %d status %d", rc, r.status);
	T_INT("server: keep-alive, one connection for 7 requests", http_conn_connects(c), 1);
	rc = get(c, "POST", "/healthz", &r, 2000, &ei);
	T_OK("server: POST -> 405 with Allow",
	     rc == 0 && r.status == 405 && http_resp_header(&r, "Allow") &&
		     strcmp(http_resp_header(&r, "Allow"), "GET, HEAD") == 0 && !http_resp_keep_alive(&r),
	     "rc %d status %d", rc, r.status);
	http_conn_free(c);

	static const char pipelined[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
					"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	raw(port, pipelined, sizeof(pipelined) - 1, out, sizeof(out));
	T_OK("server: two pipelined requests, two replies",
	     strncmp(out, "HTTP/1.1 200 OK\r\n", 17) == 0 && strstr(out, "\r\n\r\nok\nHTTP/1.1 404 Not Found\r\n"),
	     "%.200s", out);
	raw(port, "GARBAGE\r\n\r\n", 11, out, sizeof(out));
	T_OK("server: malformed request -> 400", strncmp(out, "HTTP/1.1 400 ", 13) == 0, "%.60s", out);
	raw(port, "GET / HTTP/2.0\r\n\r\n", 18, out, sizeof(out));
	T_OK("server: HTTP/2.0 request line -> 505", strncmp(out, "HTTP/1.1 505 ", 13) == 0, "%.60s", out);
	raw(port, "GET /healthz HTTP/1.0\r\n\r\n", 25, out, sizeof(out));
	T_OK("server: HTTP/1.0 gets a reply and a close",
	     strncmp(out, "HTTP/1.1 200 OK\r\n", 17) == 0 && strstr(out, "Connection: close\r\n"), "%.60s", out);
	big = malloc(20000);
	memset(big, 'a', 20000);
	memcpy(big, "GET /healthz HTTP/1.1\r\nX-Big: ", 30);
	memcpy(big + 19996, "\r\n\r\n", 4);
	raw(port, big, 20000, out, sizeof(out));
	T_OK("server: oversize request -> 431", strncmp(out, "HTTP/1.1 431 ", 13) == 0, "%.60s", out);
	free(big);

	/* many connections: more idle ones than slots, and a probe still gets in */
	{
		int fds[HTTP_SERVER_CONNS + 8], n = 0;

		for (int i = 0; i < HTTP_SERVER_CONNS + 8; i++)
			if ((fds[n] = raw_connect(port)) >= 0)
				n++;
		msleep(50);
		c = conn_to("127.0.0.1", port, -1);
		rc = get(c, "GET", "/healthz", &r, 2000, &ei);
		T_OK("server: a probe gets in past 24 idle connections", rc == 0 && r.status == 200, "rc %d", rc);
		http_conn_free(c);
		for (int i = 0; i < n; i++)
			close(fds[i]);
	}
	ok = 0;
	for (int i = 0; i < 100; i++) {
		c = conn_to("127.0.0.1", port, -1);
		rc = get(c, "GET", "/healthz", &r, 2000, &ei);
		ok += rc == 0 && r.status == 200;
		http_conn_free(c);
	}
	T_INT("server: 100 connections one after the other", ok, 100);

	/* idle timeout: a connection that says nothing is closed */
	{
		int fd = raw_connect(port);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long t0 = loop_now_ms(), el;
		char b[16];

		rc = poll(&p, 1, 3000) == 1 ? (int)recv(fd, b, sizeof(b), 0) : -2;
		el = loop_now_ms() - t0;
		T_OK("server: idle connection closed after the idle timeout", rc == 0 && el >= 250 && el < 1500,
		     "rc %d after %lld ms", rc, el);
		close(fd);
	}
	http_resp_free(&r);
	if (write(x.stop[1], "x", 1) != 1)
		exit(2);
	pthread_join(x.th, NULL);
	T_OK("server: the handler ran", x.calls >= 100, "%d calls", x.calls);
	loop_unwatch(x.l, x.stop[0]);
	http_server_free(srv);
	loop_free(x.l);
	close(x.stop[0]);
	close(x.stop[1]);

	/* every interface, dual stack where there is IPv6 */
	if (loop_new(&x.l, &ei) < 0)
		exit(2);
	rc = http_server_new(&srv, x.l, ":0", handler, &x, &ei);
	T_OK("server: \":0\" listens on every interface", rc == 0 && http_server_port(srv) > 0, "rc %d %s", rc,
	     ei.detail);
	http_server_free(srv);
	loop_free(x.l);
}

/* Listen addresses: upstream's HOST:PORT syntax, and --bind-address IP. */
static void test_addrs(void)
{
	static const struct { const char *addr; int ok; } checks[] = {
		{ ":8080", 1 }, { "127.0.0.1:8080", 1 }, { "[::1]:8080", 1 }, { "0.0.0.0:0", 1 },
		{ ":0", 1 }, { "localhost:80", 1 },
		{ "8080", 0 }, { "127.0.0.1", 0 }, { "::1:8080", 0 }, { ":65536", 0 }, { ":80a", 0 },
		{ "", 0 }, { "300.1.1.1:80", 0 }, { "[::1:80", 0 }, { "127.0.0.1:", 0 },
	};
	static const struct { const char *ip; long port; const char *out; } joins[] = {
		{ "", 8080, ":8080" }, { "127.0.0.1", 0, "127.0.0.1:0" }, { "::1", 9, "[::1]:9" },
		{ "[::1]", 9, "[::1]:9" }, { "fe80::1", 80, "[fe80::1]:80" },
		{ "127.0.0.1:80", 1, NULL }, { "localhost", 1, NULL }, { "[127.0.0.1]", 1, NULL },
		{ "1.2.3.4.5", 1, NULL }, { "[]", 1, NULL }, { " 127.0.0.1", 1, NULL },
	};
	struct fb_errinfo ei;
	char name[160], out[80];

	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		snprintf(name, sizeof(name), "addr_check \"%s\"", checks[i].addr);
		fb_errinfo_init(&ei);
		T_INT(name, http_addr_check(checks[i].addr, &ei), checks[i].ok ? 0 : -FB_EINVAL);
	}
	for (size_t i = 0; i < sizeof(joins) / sizeof(joins[0]); i++) {
		int rc;

		snprintf(name, sizeof(name), "addr_join \"%s\" %ld", joins[i].ip, joins[i].port);
		fb_errinfo_init(&ei);
		rc = http_addr_join(out, sizeof(out), joins[i].ip, joins[i].port, &ei);
		if (joins[i].out)
			T_STR(name, rc == 0 ? out : "(error)", joins[i].out);
		else
			T_INT(name, rc, -FB_EINVAL);
	}
}

int main(void)
{
	struct loop *l;
	struct fb_errinfo ei;

	t_suite = "http";
	signal(SIGPIPE, SIG_IGN);
	alarm(60); /* a hang is a failure, not a stuck CI job */
	if (loop_new(&l, &ei) < 0)
		return perror("loop_new"), 2;
	/* the loop blocked SIGTERM; only the signalfd test needs that */
	unblock_term();
	test_addrs();
	test_parser_tables();
	test_parser_caps();
	test_parser_lookup();
	test_client(l);
	test_tls(l);
	test_server();
	loop_free(l);
	return t_done();
}
