/* kube_request: the client (kube_new, kube_request with its token bucket
 * and backoff, paged lists) and the query helpers (label selectors, JSON
 * pointers). See kube.h for the contract. */
#include "kube.h"
#include "kube_int.h"

#include "http.h"
#include "labels.h"
#include "sysfs.h"
#include "tls.h"
#include "version.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void kube_backoff_init(struct kube_backoff *b, long long base_ms, long long max_ms, unsigned seed)
{
	b->base_ms = base_ms;
	b->max_ms = max_ms;
	b->cur_ms = base_ms;
	b->rng = seed ? seed : 0x9e3779b9u;
}

long long kube_backoff_next(struct kube_backoff *b)
{
	long long d = b->cur_ms;

	b->rng ^= b->rng << 13;
	b->rng ^= b->rng >> 17;
	b->rng ^= b->rng << 5;
	d += d * (long long)(b->rng % 256) / 1024; /* +0..25% */
	b->cur_ms = b->cur_ms * 2 > b->max_ms ? b->max_ms : b->cur_ms * 2;
	return d;
}

void kube_backoff_reset(struct kube_backoff *b)
{
	b->cur_ms = b->base_ms;
}

void kube_bucket_init(struct kube_bucket *t, double qps, int burst, long long now_ms)
{
	t->qps = qps > 0 ? qps : 5;
	t->burst = burst > 0 ? burst : 1;
	t->tokens = t->burst;
	t->last_ms = now_ms;
}

long long kube_bucket_take(struct kube_bucket *t, long long now_ms)
{
	if (now_ms > t->last_ms) {
		t->tokens += (double)(now_ms - t->last_ms) * t->qps / 1000.0;
		if (t->tokens > t->burst)
			t->tokens = t->burst;
		t->last_ms = now_ms;
	}
	if (t->tokens >= 1) {
		t->tokens -= 1;
		return 0;
	}
	return (long long)((1 - t->tokens) * 1000.0 / t->qps) + 1;
}

/* ---- the client -------------------------------------------------------- */

#define TOKEN_REREAD_MS 60000

void kube_result_free(struct kube_result *r)
{
	json_free(r->body);
	memset(r, 0, sizeof(*r));
}

static char *dup_or_null(const char *s, size_t len)
{
	char *d;

	if (!s)
		return NULL;
	d = malloc(len + 1);
	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

static void wipe_free(char *s)
{
	if (!s)
		return;
	for (volatile char *p = s; *p; p++)
		*p = 0;
	free(s);
}

/* Re-reads the token file (opened by path each time: kubelet swaps a
 * symlink when it rotates projected tokens). Keeps the old token when the
 * file cannot be read, so a transient error does not drop auth. */
int kube_token_refresh_(struct kube *k, int force, struct fb_errinfo *ei)
{
	char *buf = NULL;
	ssize_t n;
	size_t len;

	if (!k->cfg.token_file[0])
		return 0;
	if (!force && k->token && loop_now_ms() - k->token_read_ms < TOKEN_REREAD_MS)
		return 0;
	n = sysfs_read_alloc(AT_FDCWD, k->cfg.token_file, TOKEN_MAX, &buf);
	if (n < 0) {
		if (k->token)
			return 0;
		return fb_errinfo_set(ei, (int)n, n == -FB_EIO || n == -FB_ENOENT ? errno : 0,
				      k->cfg.token_file, "reading the bearer token file");
	}
	len = (size_t)n;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
		buf[--len] = '\0';
	if (len == 0 && k->token) { /* caught mid-rotation: keep what we had */
		free(buf);
		return 0;
	}
	wipe_free(k->token);
	k->token = buf;
	k->token_read_ms = loop_now_ms();
	return 0;
}

int kube_new(struct kube **out, const struct kube_config *cfg, const struct kube_opts *o,
	     const struct fb_log *log, int cancel_fd, struct fb_errinfo *ei)
{
	struct kube *k = calloc(1, sizeof(*k));
	struct tls_opts to = { 0 };
	struct http_endpoint ep = { 0 };
	int rc;

	*out = NULL;
	if (!k)
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, "kube", NULL);
	k->cfg = *cfg;
	k->cfg.ca_pem = dup_or_null(cfg->ca_pem, cfg->ca_len);
	k->cfg.cert_pem = dup_or_null(cfg->cert_pem, cfg->cert_len);
	k->cfg.key_pem = dup_or_null(cfg->key_pem, cfg->key_len);
	k->cfg.token = cfg->token ? strdup(cfg->token) : NULL;
	k->opts = *o;
	k->log = log;
	k->cancel_fd = cancel_fd;
	snprintf(k->endpoint, sizeof(k->endpoint), "%s://%s%s%s:%d", cfg->scheme,
		 strchr(cfg->host, ':') ? "[" : "", cfg->host, strchr(cfg->host, ':') ? "]" : "", cfg->port);
	if ((cfg->ca_pem && !k->cfg.ca_pem) || (cfg->cert_pem && !k->cfg.cert_pem) ||
	    (cfg->key_pem && !k->cfg.key_pem) || (cfg->token && !k->cfg.token)) {
		rc = fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, "kube", NULL);
		goto fail;
	}
	if (k->cfg.token && !(k->token = strdup(k->cfg.token))) {
		rc = fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, "kube", NULL);
		goto fail;
	}
	if (strcmp(cfg->scheme, "https") == 0) {
		to.ca_pem = k->cfg.ca_pem;
		to.ca_len = k->cfg.ca_len;
		to.cert_pem = k->cfg.cert_pem;
		to.cert_len = k->cfg.cert_len;
		to.key_pem = k->cfg.key_pem;
		to.key_len = k->cfg.key_len;
		to.insecure = cfg->insecure;
		rc = tls_config_new(&k->tls, &to, ei);
		if (rc < 0)
			goto fail;
		if (cfg->insecure)
			LOG_W(log, "TLS certificate verification of %s is OFF (insecure-skip-tls-verify in %s)",
			      k->endpoint, cfg->source);
	}
	ep.host = k->cfg.host;
	ep.port = k->cfg.port;
	ep.tls = k->tls;
	ep.server_name = k->cfg.server_name[0] ? k->cfg.server_name : NULL;
	ep.cancel_fd = cancel_fd;
	/* a watch on a link that died silently is noticed in about a minute */
	ep.tcp_keepalive_s = 30;
	rc = http_conn_new(&k->conn, &ep, ei);
	if (rc < 0)
		goto fail;
	kube_bucket_init(&k->bucket, o->qps, o->burst, loop_now_ms());
	kube_backoff_init(&k->backoff, o->backoff_base_ms, o->backoff_max_ms,
			  (unsigned)loop_now_ms() ^ (unsigned)getpid());
	rc = kube_token_refresh_(k, 1, ei);
	if (rc < 0)
		goto fail;
	*out = k;
	return 0;
fail:
	kube_free(k);
	return rc;
}

void kube_free(struct kube *k)
{
	if (!k)
		return;
	http_conn_free(k->conn);
	tls_config_free(k->tls);
	wipe_free(k->token);
	kube_config_free(&k->cfg);
	free(k);
}

const struct kube_config *kube_config_of(const struct kube *k)
{
	return &k->cfg;
}

/* Sleeps ms, or returns -FB_ECANCELED as soon as the cancel fd is readable. */
int kube_wait_ms_(struct kube *k, long long ms)
{
	long long until = loop_now_ms() + ms;

	for (;;) {
		long long left = until - loop_now_ms();
		struct pollfd p = { .fd = k->cancel_fd, .events = POLLIN };
		int n;

		if (left <= 0)
			return 0;
		n = poll(&p, k->cancel_fd >= 0 ? 1 : 0, (int)(left > 60000 ? 60000 : left));
		if (n > 0)
			return -FB_ECANCELED;
	}
}

/* Fills reason/message from a Status body. */
void kube_decode_status_(struct kube_result *res)
{
	const char *reason = json_get_str(res->body, "reason", NULL);
	const char *msg = json_get_str(res->body, "message", NULL);

	if (json_get_str(res->body, "kind", NULL) && strcmp(json_get_str(res->body, "kind", ""), "Status"))
		return;
	if (reason)
		snprintf(res->reason, sizeof(res->reason), "%s", reason);
	if (msg)
		snprintf(res->message, sizeof(res->message), "%s", msg);
}

static int retryable_status(int st)
{
	return st == 429 || st == 500 || st == 502 || st == 503 || st == 504;
}

/* Header lines for one request; the Authorization line is built in auth[]. */
void kube_make_headers_(struct kube *k, const char *content_type, char *auth, size_t auth_size,
			       char *ctype, size_t ctype_size, const char *hdr[6])
{
	int n = 0;

	hdr[n++] = "Accept: application/json";
	hdr[n++] = "User-Agent: featurebox/" FB_VERSION;
	if (k->token && *k->token) {
		snprintf(auth, auth_size, "Authorization: Bearer %s", k->token);
		hdr[n++] = auth;
	}
	if (content_type) {
		snprintf(ctype, ctype_size, "Content-Type: %s", content_type);
		hdr[n++] = ctype;
	}
	hdr[n] = NULL;
}

int kube_request(struct kube *k, const char *method, const char *path, const char *content_type,
		 const char *body, size_t body_len, struct kube_result *res, struct fb_errinfo *ei)
{
	char auth[TOKEN_MAX + 32], ctype[128], what[600];
	const char *hdr[6];
	struct http_resp resp;
	int attempt, rc = 0, reauthed = 0;
	/* not idempotent: never resent once the server may have applied it */
	int unsafe = strcmp(method, "POST") == 0 || strcmp(method, "PATCH") == 0;

	memset(res, 0, sizeof(*res));
	http_resp_init(&resp, strcmp(method, "HEAD") == 0, 0);
	kube_backoff_reset(&k->backoff);
	snprintf(what, sizeof(what), "%s %s", method, path);
	for (attempt = 1; attempt <= k->opts.max_attempts; attempt++) {
		struct http_req req = { .method = method, .target = path, .headers = hdr,
					.body = body, .body_len = body_len,
					.timeout_ms = k->opts.timeout_ms };
		long long wait, bucket;

		while ((bucket = kube_bucket_take(&k->bucket, loop_now_ms())) > 0)
			if (kube_wait_ms_(k, bucket) < 0)
				goto canceled;
		kube_token_refresh_(k, 0, NULL);
		kube_make_headers_(k, content_type, auth, sizeof(auth), ctype, sizeof(ctype), hdr);
		rc = http_request(k->conn, &req, &resp, ei);
		memset(auth, 0, sizeof(auth));
		if (rc == -FB_ECANCELED)
			goto canceled;
		if (rc < 0) {
			/* a TLS verification failure or a malformed request will not heal */
			/* a TLS verification failure, a malformed request or an
			 * oversized answer will not heal; a POST or PATCH that reached
			 * the server may have been applied */
			if (rc == -FB_ETLS || rc == -FB_EINVAL || rc == -FB_ENOMEM || rc == -FB_E2BIG ||
			    (unsafe && resp.req_sent) || attempt == k->opts.max_attempts)
				goto out;
			wait = kube_backoff_next(&k->backoff);
			LOG_W(k->log, "%s %s: %s; retrying in %lld ms (attempt %d of %d)", method, path,
			      fb_strerror(rc), wait, attempt, k->opts.max_attempts);
		} else if (resp.status == 401 && !reauthed && k->cfg.token_file[0]) {
			/* a rotated projected token: read the file now and try again */
			reauthed = 1;
			kube_token_refresh_(k, 1, NULL);
			LOG_W(k->log, "%s %s: 401 Unauthorized; re-read the token file and retrying", method, path);
			attempt--;
			continue;
		} else if (attempt < k->opts.max_attempts &&
			   (unsafe ? resp.status == 429 || resp.status == 503 : retryable_status(resp.status))) {
			/* a 500/502/504 may come after a POST/PATCH was applied; 429
			 * and 503 say it was not */
			long ra = http_resp_retry_after(&resp);

			wait = kube_backoff_next(&k->backoff);
			if (ra >= 0 && ra * 1000 > wait)
				wait = ra * 1000;
			LOG_W(k->log, "%s %s: HTTP %d; retrying in %lld ms (attempt %d of %d)", method, path,
			      resp.status, wait, attempt, k->opts.max_attempts);
		} else {
			break;
		}

		if (kube_wait_ms_(k, wait) < 0)
			goto canceled;
	}
	if (rc < 0)
		goto out;
	res->status = resp.status;
	if (resp.body_len) {
		struct fb_errinfo jei;

		res->body = json_parse(resp.body, resp.body_len, "response body", &jei);
	}
	kube_decode_status_(res);
	LOG_V(k->log, 4, "%s %s: HTTP %d", method, path, res->status);
	rc = 0;
	goto out;
canceled:
	rc = fb_errinfo_set(ei, FB_ECANCELED, 0, what, "stopped by a signal");
out:
	if (rc < 0 && rc != -FB_ECANCELED && ei && !ei->what[0])
		fb_errinfo_set(ei, -rc, 0, what, NULL);
	http_resp_free(&resp);
	return rc;
}

/* Turns a non-2xx answer into an error that names the request and the
 * server's own words. */
int kube_status_error_(const char *method, const char *path, const struct kube_result *res,
		       struct fb_errinfo *ei)
{
	char what[600], detail[256];

	snprintf(what, sizeof(what), "%s %s", method, path);
	snprintf(detail, sizeof(detail), "HTTP %d %s%s%.100s", res->status, res->reason,
		 res->message[0] ? ": " : "", res->message);
	return fb_errinfo_set(ei, FB_EIO, 0, what, detail);
}

int kube_list_pages(struct kube *k, const char *path, kube_page_fn fn, void *ctx, char *rv,
		    size_t rv_size, struct fb_errinfo *ei)
{
	char target[2048], cont[1024] = "";
	int restarted = 0, first = 1, rc, limit = k->opts.page_size;

	for (;;) {
		struct kube_result res;
		const char *sep = strchr(path, '?') ? "&" : "?";

		if (cont[0])
			snprintf(target, sizeof(target), "%s%slimit=%d&continue=%s", path, sep, limit, cont);
		else
			snprintf(target, sizeof(target), "%s%slimit=%d", path, sep, limit);
		rc = kube_request(k, "GET", target, NULL, NULL, 0, &res, ei);
		if (rc == -FB_E2BIG && limit > 1) {
			/* a page over the body cap: objects near the API's 1.5 MiB
			 * (22 make 32 MiB), which a node can write. The same page
			 * again, half as long, and so on for the rest of the list */
			limit /= 2;
			LOG_W(k->log, "GET %s: the page is over the size cap; asking for %d items a page", path, limit);
			if (ei)
				fb_errinfo_init(ei);
			continue;
		}
		if (rc < 0)
			return rc;
		if (res.status == 410 && cont[0] && !restarted) {
			/* the continue token expired mid-list: start over once */
			restarted = 1;
			first = 1;
			cont[0] = '\0';
			kube_result_free(&res);
			continue;
		}
		if (res.status / 100 != 2 || json_type(json_get(res.body, "items")) != JSON_ARRAY) {
			rc = res.status / 100 != 2 ? kube_status_error_("GET", target, &res, ei)
				: fb_errinfo_set(ei, FB_EPROTO, 0, target, "list without items");
			kube_result_free(&res);
			return rc;
		}
		snprintf(rv, rv_size, "%s", json_get_str(json_get(res.body, "metadata"), "resourceVersion", ""));
		snprintf(cont, sizeof(cont), "%s", json_get_str(json_get(res.body, "metadata"), "continue", ""));
		rc = fn(ctx, json_get(res.body, "items"), first);
		first = 0;
		kube_result_free(&res);
		if (rc < 0)
			return fb_errinfo_set(ei, -rc, 0, path, NULL);
		if (!cont[0])
			return 0;
	}
}

static int list_collect(void *ctx, const struct json *items, int first)
{
	struct json **all = ctx;

	if (first) { /* from scratch (again, after an expired continue token) */
		json_free(*all);
		if (!(*all = json_new_array()))
			return -FB_ENOMEM;
	}
	for (const struct json *it = json_child(items); it; it = json_next(it))
		if (json_append_take(*all, json_dup(it)) < 0)
			return -FB_ENOMEM;
	return 0;
}

int kube_list(struct kube *k, const char *path, struct json **items, char *rv, size_t rv_size,
	      struct fb_errinfo *ei)
{
	struct json *all = NULL;
	int rc = kube_list_pages(k, path, list_collect, &all, rv, rv_size, ei);

	if (rc < 0) {
		json_free(all);
		all = NULL;
	}
	*items = all;
	return rc;
}

void kube_own_namespace(const struct kube_config *cfg, char *out, size_t size)
{
	char *ns = NULL;
	const char *env = getenv("KUBERNETES_NAMESPACE");

	if (sysfs_read_alloc(AT_FDCWD, KUBE_SA_DIR "/namespace", 256, &ns) > 0)
		snprintf(out, size, "%.*s", (int)strcspn(ns, "\n"), ns);
	else if (env && *env)
		snprintf(out, size, "%s", env);
	else
		snprintf(out, size, "%s", cfg && cfg->namespace_[0] ? cfg->namespace_ : "default");
	free(ns);
}

/* ---- label selectors ---------------------------------------------------- */

/* Appends s percent-encoded (all but RFC 3986's unreserved characters).
 * Returns 0 or b's sticky error. */
static int sel_put(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '-' || c == '.' || c == '_' || c == '~';
		char enc[3] = { '%', hex[c >> 4], hex[c & 15] };

		if (plain)
			buf_putc(b, (char)c);
		else
			buf_put(b, enc, 3);
	}
	return b->err;
}

/* The member of o named name, ignoring case; 0 when o has members that are
 * none of names (the NULL-terminated list): *bad names it. */
static int sel_members_known(const struct json *o, const char *const *names, const char **bad)
{
	for (const struct json *c = json_child(o); c; c = json_next(c)) {
		const char *const *n;

		for (n = names; *n && strcasecmp(*n, json_key(c)) != 0; n++)
			;
		if (!*n) {
			*bad = json_key(c);
			return 0;
		}
	}
	return 1;
}

static const struct json *sel_get(const struct json *o, const char *name)
{
	const struct json *c = json_get(o, name);

	for (const struct json *e = json_child(o); !c && e; e = json_next(e))
		if (strcasecmp(json_key(e), name) == 0)
			c = e;
	return c && json_type(c) != JSON_NULL ? c : NULL;
}

static int sel_err(struct fb_errinfo *ei, const char *what, const char *fmt, const char *arg)
{
	char d[200];

	snprintf(d, sizeof(d), fmt, arg ? arg : "");
	return fb_errinfo_set(ei, FB_EINVAL, 0, what, d);
}

/* The query of sel into b; returns 0 or a negative code (ei set for
 * -FB_EINVAL). */
static int sel_build(const struct json *sel, struct buf *b, struct fb_errinfo *ei)
{
	static const char *const top[] = { "matchLabels", "matchExpressions", NULL };
	static const char *const expr[] = { "key", "operator", "values", NULL };
	static const char *const ops[] = { "In", "NotIn", "Exists", "DoesNotExist" };
	const struct json *ml, *me;
	const char *bad = NULL;
	char what[64];
	int rc;

	if (json_type(sel) != JSON_OBJECT)
		return sel_err(ei, "selector", "not a mapping (matchLabels, matchExpressions)", NULL);
	if (!sel_members_known(sel, top, &bad))
		return sel_err(ei, "selector", "unknown member %.60s (matchLabels, matchExpressions)", bad);
	if ((ml = sel_get(sel, "matchLabels")) && json_type(ml) != JSON_OBJECT)
		return sel_err(ei, "matchLabels", "not a mapping of label keys to values", NULL);
	for (const struct json *c = json_child(ml); c; c = json_next(c)) {
		if (!labels_valid_key(json_key(c)))
			return sel_err(ei, "matchLabels", "%.100s: not a label key", json_key(c));
		if (!json_str(c) || !labels_valid_value(json_str(c), strlen(json_str(c))))
			return sel_err(ei, "matchLabels", "%.100s: the value is no label value (a string: quote it)",
				       json_key(c));
		if ((b->len && (rc = sel_put(b, ",")) < 0) || (rc = sel_put(b, json_key(c))) < 0 ||
		    (rc = sel_put(b, "=")) < 0 || (rc = sel_put(b, json_str(c))) < 0)
			return rc;
	}
	if ((me = sel_get(sel, "matchExpressions")) && json_type(me) != JSON_ARRAY)
		return sel_err(ei, "matchExpressions", "not a list", NULL);
	for (size_t i = 0; i < json_count(me); i++) {
		const struct json *e = json_at(me, i), *vals;
		const char *key, *op;
		size_t k, nv;

		snprintf(what, sizeof(what), "matchExpressions[%zu]", i);
		if (json_type(e) != JSON_OBJECT)
			return sel_err(ei, what, "not a mapping (key, operator, values)", NULL);
		if (!sel_members_known(e, expr, &bad))
			return sel_err(ei, what, "unknown member %.60s (key, operator, values)", bad);
		key = json_str(sel_get(e, "key"));
		op = json_str(sel_get(e, "operator"));
		vals = sel_get(e, "values");
		if (!key || !labels_valid_key(key))
			return sel_err(ei, what, "key %.100s: not a label key", key ? key : "(missing)");
		for (k = 0; op && k < sizeof(ops) / sizeof(ops[0]) && strcmp(op, ops[k]) != 0; k++)
			;
		if (!op || k == sizeof(ops) / sizeof(ops[0]))
			return sel_err(ei, what, "operator %.60s: not In, NotIn, Exists or DoesNotExist",
				       op ? op : "(missing)");
		if (vals && json_type(vals) != JSON_ARRAY)
			return sel_err(ei, what, "values: not a list", NULL);
		nv = json_count(vals);
		if (k < 2 && !nv)
			return sel_err(ei, what, "%s needs values", op);
		if (k >= 2 && nv)
			return sel_err(ei, what, "%s takes no values", op);
		if ((b->len && (rc = sel_put(b, ",")) < 0) || (k == 3 && (rc = sel_put(b, "!")) < 0) ||
		    (rc = sel_put(b, key)) < 0 || (k < 2 && (rc = sel_put(b, k ? " notin (" : " in (")) < 0))
			return rc;
		for (size_t j = 0; j < nv; j++) {
			const char *v = json_str(json_at(vals, j));

			if (!v || !labels_valid_value(v, strlen(v)))
				return sel_err(ei, what, "values: %.100s: no label value (a string: quote it)",
					       v ? v : "(not a string)");
			if ((j && (rc = sel_put(b, ",")) < 0) || (rc = sel_put(b, v)) < 0)
				return rc;
		}
		if (k < 2 && (rc = sel_put(b, ")")) < 0)
			return rc;
	}
	return 0;
}

int kube_label_selector(const struct json *sel, char *out, size_t size, struct fb_errinfo *ei)
{
	struct buf b;
	int rc;

	if (!size)
		return -FB_E2BIG;
	out[0] = '\0';
	if (!sel || json_type(sel) == JSON_NULL)
		return 0;
	buf_init(&b, size - 1);
	if ((rc = sel_build(sel, &b, ei)) == 0) {
		memcpy(out, b.p ? b.p : "", b.len + 1);
		rc = (int)b.len;
	}
	buf_free(&b);
	return rc;
}

void kube_json_pointer_escape(const char *in, char *out, size_t size)
{
	size_t n = 0;

	for (; *in && n + 3 < size; in++) {
		if (*in == '~' || *in == '/') {
			out[n++] = '~';
			out[n++] = *in == '~' ? '0' : '1';
		} else {
			out[n++] = *in;
		}
	}
	out[n] = '\0';
}
