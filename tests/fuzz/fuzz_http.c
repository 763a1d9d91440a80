/* fuzz_http: the HTTP/1.1 response parser and the probe server's request
 * parser on untrusted bytes.
 *
 * The first input byte steers, the rest is the response: bit 0 says the
 * request was HEAD, bits 1-2 pick the body cap (default, 16, 300, none), and
 * the byte seeds the slice lengths. The response is parsed four ways: whole
 * (one http_resp_feed), whole-body in slices, streaming (http_resp_parse with
 * small spans) in slices, and streaming in one piece. All must agree on the
 * verdict, the status, the body bytes, keep-alive and the headers looked up.
 *
 * Built two ways like every target: with libFuzzer (make fuzz) and as a plain
 * program replaying tests/fuzz/corpus/http under ASan+UBSan (make test). */
#include "../../core/http.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INCOMPLETE 1 /* no error, but no end of response either */

struct outcome {
	int rc, status, ka;
	size_t used;       /* bytes consumed when done (the rest is "extra") */
	char *body;
	size_t body_len;
	long retry;
	char ctype[128];
};

static unsigned next_len(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 16) % 17 + 1;
}

static void finish(struct http_resp *r, int rc, struct outcome *o)
{
	const char *ct;

	if (rc == 0 && !http_resp_done(r))
		rc = http_resp_eof(r) < 0 ? r->err : 0;
	if (rc == 0 && !http_resp_done(r))
		rc = INCOMPLETE;
	if (rc < 0 && !http_resp_error(r)[0])
		abort(); /* every error says what it was */
	o->rc = rc;
	o->status = http_resp_headers_done(r) ? r->status : 0;
	o->ka = rc == 0 ? http_resp_keep_alive(r) : 0;
	o->retry = http_resp_retry_after(r);
	if (o->retry < -1 || o->retry > HTTP_RETRY_AFTER_MAX)
		abort();
	ct = http_resp_content_type(r);
	snprintf(o->ctype, sizeof(o->ctype), "%s", ct ? ct : "(none)");
	if (ct && strpbrk(ct, "\r\n"))
		abort();
	if (http_resp_headers_done(r) && (r->status < 200 || r->status > 599))
		abort(); /* interim responses never surface */
}

/* Whole-body mode, in slices (step 0: in one piece). The body is moved out
 * into o. Note: it is the wrapper that EOFs, so "eof" is implied at the end. */
static void run_feed(const uint8_t *d, size_t n, int head, size_t cap, unsigned seed, struct outcome *o)
{
	struct http_resp r;
	size_t pos = 0;
	int rc = 0;

	memset(o, 0, sizeof(*o));
	http_resp_init(&r, head, cap);
	while (pos < n && rc == 0 && !http_resp_done(&r)) {
		size_t len = seed ? next_len(&seed) : n;
		ssize_t k;

		if (len > n - pos)
			len = n - pos;
		k = http_resp_feed(&r, (const char *)d + pos, len);
		if (k < 0)
			rc = (int)k;
		else if ((size_t)k > len || ((size_t)k < len && !http_resp_done(&r)))
			abort(); /* stops short only when complete */
		else
			pos += (size_t)k;
	}
	o->used = pos;
	finish(&r, rc, o);
	if (rc != INCOMPLETE && r.body_len > n)
		abort();
	o->body = http_resp_body_take(&r, &o->body_len);
	if (o->body && o->body[o->body_len] != '\0')
		abort();
	http_resp_free(&r);
}

/* Streaming mode: spans of at most smax bytes copied out. */
static void run_parse(const uint8_t *d, size_t n, int head, size_t cap, unsigned seed, size_t smax,
		      struct outcome *o)
{
	struct http_resp r;
	size_t pos = 0;
	int rc = 0;

	memset(o, 0, sizeof(*o));
	o->body = malloc(n + 1);
	http_resp_init(&r, head, cap);
	while (pos < n && rc == 0 && !http_resp_done(&r)) {
		size_t len = seed ? next_len(&seed) : n - pos, j = 0;

		if (len > n - pos)
			len = n - pos;
		while (j < len && rc == 0 && !http_resp_done(&r)) {
			const char *span;
			size_t sl;
			ssize_t k = http_resp_parse(&r, (const char *)d + pos + j, len - j, smax, &span, &sl);

			if (k < 0) {
				rc = (int)k;
				break;
			}
			if (sl > smax || (size_t)k > len - j || (k == 0 && !http_resp_done(&r)))
				abort(); /* bounded spans, progress until done */
			if (sl) {
				if (span < (const char *)d + pos + j || span + sl > (const char *)d + pos + len)
					abort(); /* spans point into the input just given */
				memcpy(o->body + o->body_len, span, sl);
				o->body_len += sl;
			}
			j += (size_t)k;
		}
		pos += j;
	}
	o->used = pos;
	finish(&r, rc, o);
	http_resp_free(&r);
}

static void same(const struct outcome *a, const struct outcome *b)
{
	if (a->rc != b->rc)
		abort();
	if (a->rc < 0)
		return; /* how much body came before the error may differ */
	if (a->status != b->status || a->ka != b->ka || a->retry != b->retry ||
	    strcmp(a->ctype, b->ctype) != 0 || a->body_len != b->body_len ||
	    (a->body_len && memcmp(a->body, b->body, a->body_len) != 0))
		abort();
	if (a->rc == 0 && a->used != b->used)
		abort();
}

static void fuzz_request(const uint8_t *d, size_t n)
{
	struct http_reqline_ rl;
	int rc = http_reqline_parse_((const char *)d, n, &rl);

	if (rc != 0 && rc != 400 && rc != 405 && rc != 414 && rc != 505)
		abort();
	if (!memchr(rl.method, '\0', sizeof(rl.method)) || !memchr(rl.path, '\0', sizeof(rl.path)))
		abort();
	if (rc == 0 && (rl.path[0] != '/' || strchr(rl.path, '?')))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 0, 16, 300, HTTP_BODY_UNLIMITED };
	struct outcome whole, sliced, stream, stream1;
	unsigned seed;
	int head;
	size_t cap;

	if (size == 0)
		return 0;
	head = data[0] & 1;
	cap = caps[(data[0] >> 1) & 3];
	seed = data[0] | 0x100u; /* never 0: 0 means "one piece" */
	run_feed(data + 1, size - 1, head, cap, 0, &whole);
	run_feed(data + 1, size - 1, head, cap, seed, &sliced);
	run_parse(data + 1, size - 1, head, cap, seed, (size_t)(data[0] >> 5) + 1, &stream);
	run_parse(data + 1, size - 1, head, cap, 0, SIZE_MAX, &stream1);
	same(&whole, &sliced);
	same(&whole, &stream);
	same(&whole, &stream1);
	free(whole.body);
	free(sliced.body);
	free(stream.body);
	free(stream1.body);
	fuzz_request(data + 1, size - 1);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
