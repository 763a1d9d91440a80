#include "kube.h"

#include "http.h"
#include "labels.h"
#include "sysfs.h"
#include "tls.h"
#include "version.h"
#include "yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define KUBECONFIG_MAX (4u << 20)
#define PEM_MAX (1u << 20)

void kube_opts_init(struct kube_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->env_kubeconfig = getenv("KUBECONFIG");
	o->env_host = getenv("KUBERNETES_SERVICE_HOST");
	o->env_port = getenv("KUBERNETES_SERVICE_PORT");
	o->home = getenv("HOME");
	o->sa_dir = KUBE_SA_DIR;
	o->qps = 5;
	o->burst = 10;
	o->timeout_ms = 30000;
	o->max_attempts = 5;
	o->backoff_base_ms = 800;
	o->backoff_max_ms = 30000;
	o->page_size = 500;
}

int kube_connect(struct kube **out, const struct kube_opts *o, const struct fb_log *log, int cancel_fd,
		 char *ns, size_t ns_size, struct fb_errinfo *ei)
{
	struct kube_config kc;
	int rc = kube_config_load(&kc, o, ei);

	if (rc == 0) {
		rc = kube_new(out, &kc, o, log, cancel_fd, ei);
		LOG_V(log, 1, "API server from %s", kc.source);
		if (ns)
			kube_own_namespace(&kc, ns, ns_size);
	}
	kube_config_free(&kc);
	return rc;
}

void kube_config_free(struct kube_config *cfg)
{
	free(cfg->ca_pem);
	free(cfg->cert_pem);
	free(cfg->key_pem);
	if (cfg->token) {
		/* do not leave the secret in freed heap memory */
		volatile char *p = cfg->token;

		while (*p)
			*p++ = 0;
		free(cfg->token);
	}
	memset(cfg, 0, sizeof(*cfg));
}

/* Standard base64 (with or without padding, whitespace ignored) into a new
 * NUL-terminated buffer. Returns the length or -FB_EINVAL / -FB_ENOMEM. */
static ssize_t b64_decode(const char *in, char **out)
{
	size_t n = strlen(in), len = 0;
	unsigned acc = 0;
	int bits = 0, pad = 0;
	char *buf = malloc(n / 4 * 3 + 4);

	*out = NULL;
	if (!buf)
		return -FB_ENOMEM;
	for (const char *p = in; *p; p++) {
		int v;
		char c = *p;

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad)
			goto bad; /* data after padding */
		v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26
		  : c >= '0' && c <= '9' ? c - '0' + 52 : c == '+' ? 62 : c == '/' ? 63 : -1;
		if (v < 0)
			goto bad;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[len++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (pad > 2 || bits >= 6)
		goto bad;
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
bad:
	free(buf);
	return -FB_EINVAL;
}

/* Joins a kubeconfig-relative path (client-go resolves them against the
 * kubeconfig's directory). */
static void resolve_path(const char *kcpath, const char *p, char *out, size_t size)
{
	const char *slash = strrchr(kcpath, '/');

	if (p[0] == '/' || !slash)
		snprintf(out, size, "%s", p);
	else
		snprintf(out, size, "%.*s/%s", (int)(slash - kcpath), kcpath, p);
}

static int read_pem(const char *path, char **out, size_t *len, const char *field,
		    struct fb_errinfo *ei)
{
	char what[PATH_MAX + 64];
	ssize_t n = sysfs_read_alloc(AT_FDCWD, path, PEM_MAX, out);

	if (n < 0) {
		snprintf(what, sizeof(what), "%s (%s)", path, field);
		return fb_errinfo_set(ei, n == -FB_ENOENT ? FB_EINVAL : (int)n,
				      n == -FB_EIO || n == -FB_ENOENT ? errno : 0, what, "reading");
	}
	*len = (size_t)n;
	return 0;
}

/* *-data fields: base64 of PEM. */
static int decode_pem(const char *b64, char **out, size_t *len, const char *where,
		      const char *field, struct fb_errinfo *ei)
{
	char what[PATH_MAX + 128];
	ssize_t n = b64_decode(b64, out);

	if (n < 0) {
		snprintf(what, sizeof(what), "%s: %s", where, field);
		return fb_errinfo_set(ei, (int)n, 0, what, n == -FB_EINVAL ? "not valid base64" : NULL);
	}
	*len = (size_t)n;
	return 0;
}

/* Parses "https://host:port/path" into cfg. */
static int parse_server(struct kube_config *cfg, const char *url, const char *where,
			struct fb_errinfo *ei)
{
	const char *p = url, *host, *hend, *port = NULL;
	char what[PATH_MAX + 64];
	size_t hlen;

	snprintf(what, sizeof(what), "%.2000s: server \"%.1000s\"", where, url);
	if (strncmp(p, "https://", 8) == 0) {
		strcpy(cfg->scheme, "https");
		p += 8;
	} else if (strncmp(p, "http://", 7) == 0) {
		strcpy(cfg->scheme, "http");
		p += 7;
	} else {
		return fb_errinfo_set(ei, FB_EINVAL, 0, what, "must start with https:// or http://");
	}
	if (*p == '[') {
		host = p + 1;
		hend = strchr(host, ']');
		if (!hend)
			return fb_errinfo_set(ei, FB_EINVAL, 0, what, "unterminated [IPv6] host");
		p = hend + 1;
	} else {
		host = p;
		hend = p + strcspn(p, ":/");
		p = hend;
	}
	if (*p == ':')
		port = ++p;
	hlen = (size_t)(hend - host);
	if (hlen == 0 || hlen >= sizeof(cfg->host))
		return fb_errinfo_set(ei, FB_EINVAL, 0, what, "bad host");
	memcpy(cfg->host, host, hlen);
	cfg->host[hlen] = '\0';
	cfg->port = strcmp(cfg->scheme, "https") == 0 ? 443 : 80;
	if (port) {
		char *end;
		long v = strtol(port, &end, 10);

		if (end == port || v < 1 || v > 65535 || (*end && *end != '/'))
			return fb_errinfo_set(ei, FB_EINVAL, 0, what, "bad port");
		cfg->port = (int)v;
		p = end;
	}
	if (*p && strcmp(p, "/") != 0)
		return fb_errinfo_set(ei, FB_EINVAL, 0, what, "a path after the host is not supported");
	return 0;
}

/* The entry of list (clusters/users/contexts) whose name is name, and its
 * index in *idx. */
static const struct json *find_named(const struct json *list, const char *name, int *idx)
{
	int i = 0;

	for (const struct json *e = json_child(list); e; e = json_next(e), i++) {
		if (json_get_str(e, "name", NULL) && strcmp(json_get_str(e, "name", ""), name) == 0) {
			*idx = i;
			return e;
		}
	}
	return NULL;
}

/* Refuses fields we cannot honour, so a user learns why instead of getting
 * anonymous requests; names the field and where it is written. */
static int check_unsupported(const struct json *obj, const char *const *fields, const char *where,
			     const char *text, size_t len, const char *list, int idx, const char *member,
			     struct fb_errinfo *ei)
{
	char what[PATH_MAX + 256], sidx[16];
	int line = 0, col = 0;

	snprintf(sidx, sizeof(sidx), "%d", idx);
	for (size_t i = 0; fields[i]; i += 2) {
		if (!json_get(obj, fields[i]))
			continue;
		if (yaml_locate(text, len, &line, &col, list, sidx, member, fields[i], NULL) == 0)
			snprintf(what, sizeof(what), "%.2000s: line %d column %d: %s[%d].%s.%s", where, line,
				 col, list, idx, member, fields[i]);
		else
			snprintf(what, sizeof(what), "%.2000s: %s[%d].%s.%s", where, list, idx, member, fields[i]);
		return fb_errinfo_set(ei, FB_EINVAL, 0, what, fields[i + 1]);
	}
	return 0;
}

static int load_kubeconfig(struct kube_config *cfg, const char *path, struct fb_errinfo *ei)
{
	char *text = NULL;
	ssize_t n = sysfs_read_alloc(AT_FDCWD, path, KUBECONFIG_MAX, &text);
	int rc;

	if (n < 0)
		return fb_errinfo_set(ei, (int)n, n == -FB_EIO || n == -FB_ENOENT ? errno : 0, path,
				      n == -FB_E2BIG ? "larger than 4 MiB" : "reading kubeconfig");
	rc = kube_config_parse_(cfg, text, (size_t)n, path, ei);
	free(text);
	return rc;
}

int kube_config_parse_(struct kube_config *cfg, const char *text, size_t n, const char *path,
		       struct fb_errinfo *ei)
{
	static const char *const bad_user[] = {
		"exec", "exec credential plugins are not supported; use a token, tokenFile or client certificate",
		"auth-provider", "auth providers are not supported; use a token, tokenFile or client certificate",
		"username", "basic authentication is not supported",
		"password", "basic authentication is not supported",
		"as", "impersonation is not supported",
		NULL,
	};
	static const char *const bad_cluster[] = {
		"proxy-url", "proxies are not supported",
		NULL,
	};
	char where[PATH_MAX + 64], tmp[PATH_MAX];
	const struct json *ctx, *cl, *us, *c, *u;
	const char *cur, *s, *clname, *usname;
	struct json *root = NULL;
	int rc, b, ictx = 0, icl = 0, ius = 0;

	root = yaml_parse(text, n, path, ei);
	if (!root) {
		rc = -(ei ? ei->code : FB_EINVAL);
		goto out;
	}
	rc = -FB_EINVAL;
	snprintf(where, sizeof(where), "kubeconfig %s", path);
	if (json_type(root) != JSON_OBJECT) {
		fb_errinfo_set(ei, FB_EINVAL, 0, where, "not a mapping");
		goto out;
	}
	cur = json_get_str(root, "current-context", NULL);
	if (!cur || !*cur) {
		fb_errinfo_set(ei, FB_EINVAL, 0, where, "current-context is not set");
		goto out;
	}
	if (!(ctx = find_named(json_get(root, "contexts"), cur, &ictx))) {
		fb_errinfo_set(ei, FB_EINVAL, 0, where, "current-context names no entry of contexts");
		goto out;
	}
	clname = json_get_str(json_get(ctx, "context"), "cluster", "");
	usname = json_get_str(json_get(ctx, "context"), "user", "");
	if (!(cl = find_named(json_get(root, "clusters"), clname, &icl)) || !(c = json_get(cl, "cluster"))) {
		snprintf(tmp, sizeof(tmp), "context \"%s\" names cluster \"%s\", which is not in clusters", cur, clname);
		fb_errinfo_set(ei, FB_EINVAL, 0, where, tmp);
		goto out;
	}
	us = find_named(json_get(root, "users"), usname, &ius);
	u = us ? json_get(us, "user") : NULL;
	if (*usname && !us) {
		snprintf(tmp, sizeof(tmp), "context \"%s\" names user \"%s\", which is not in users", cur, usname);
		fb_errinfo_set(ei, FB_EINVAL, 0, where, tmp);
		goto out;
	}
	snprintf(cfg->source, sizeof(cfg->source), "kubeconfig %s (context %s)", path, cur);
	if ((rc = check_unsupported(c, bad_cluster, where, text, n, "clusters", icl, "cluster", ei)) < 0 ||
	    (u && (rc = check_unsupported(u, bad_user, where, text, n, "users", ius, "user", ei)) < 0))
		goto out;
	rc = -FB_EINVAL;
	if (!(s = json_get_str(c, "server", NULL))) {
		fb_errinfo_set(ei, FB_EINVAL, 0, where, "cluster.server is not set");
		goto out;
	}
	if ((rc = parse_server(cfg, s, where, ei)) < 0)
		goto out;
	snprintf(cfg->server_name, sizeof(cfg->server_name), "%s",
		 json_get_str(c, "tls-server-name", cfg->host));
	b = json_bool(json_get(c, "insecure-skip-tls-verify"));
	cfg->insecure = b == 1;
	if ((s = json_get_str(c, "certificate-authority-data", NULL))) {
		rc = decode_pem(s, &cfg->ca_pem, &cfg->ca_len, where, "cluster.certificate-authority-data", ei);
	} else if ((s = json_get_str(c, "certificate-authority", NULL))) {
		resolve_path(path, s, tmp, sizeof(tmp));
		rc = read_pem(tmp, &cfg->ca_pem, &cfg->ca_len, "cluster.certificate-authority", ei);
	}
	if (rc < 0)
		goto out;
	if (u && (s = json_get_str(u, "client-certificate-data", NULL))) {
		rc = decode_pem(s, &cfg->cert_pem, &cfg->cert_len, where, "user.client-certificate-data", ei);
	} else if (u && (s = json_get_str(u, "client-certificate", NULL))) {
		resolve_path(path, s, tmp, sizeof(tmp));
		rc = read_pem(tmp, &cfg->cert_pem, &cfg->cert_len, "user.client-certificate", ei);
	}
	if (rc < 0)
		goto out;
	if (u && (s = json_get_str(u, "client-key-data", NULL))) {
		rc = decode_pem(s, &cfg->key_pem, &cfg->key_len, where, "user.client-key-data", ei);
	} else if (u && (s = json_get_str(u, "client-key", NULL))) {
		resolve_path(path, s, tmp, sizeof(tmp));
		rc = read_pem(tmp, &cfg->key_pem, &cfg->key_len, "user.client-key", ei);
	}
	if (rc < 0)
		goto out;
	if (!cfg->cert_pem != !cfg->key_pem) {
		rc = fb_errinfo_set(ei, FB_EINVAL, 0, where,
				    "user has a client certificate without a key or a key without a certificate");
		goto out;
	}
	if (u && (s = json_get_str(u, "token", NULL)) && *s) {
		if (!(cfg->token = strdup(s))) {
			rc = fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, where, NULL);
			goto out;
		}
	} else if (u && (s = json_get_str(u, "tokenFile", NULL))) {
		resolve_path(path, s, cfg->token_file, sizeof(cfg->token_file));
	}
	snprintf(cfg->namespace_, sizeof(cfg->namespace_), "%s",
		 json_get_str(json_get(ctx, "context"), "namespace", "default"));
	rc = 0;
out:
	json_free(root);
	return rc;
}

static int load_in_cluster(struct kube_config *cfg, const struct kube_opts *o, struct fb_errinfo *ei)
{
	char path[PATH_MAX], *ns = NULL, *end;
	long port;
	int rc;

	snprintf(cfg->source, sizeof(cfg->source), "in-cluster (service account %s)", o->sa_dir);
	strcpy(cfg->scheme, "https");
	if (strlen(o->env_host) >= sizeof(cfg->host))
		return fb_errinfo_set(ei, FB_EINVAL, 0, "KUBERNETES_SERVICE_HOST", "too long");
	strcpy(cfg->host, o->env_host);
	port = strtol(o->env_port, &end, 10);
	if (end == o->env_port || *end || port < 1 || port > 65535)
		return fb_errinfo_set(ei, FB_EINVAL, 0, "KUBERNETES_SERVICE_PORT", "not a port number");
	cfg->port = (int)port;
	/* client-go verifies the service IP against the certificate's IP SANs */
	strcpy(cfg->server_name, cfg->host);
	snprintf(path, sizeof(path), "%s/ca.crt", o->sa_dir);
	rc = read_pem(path, &cfg->ca_pem, &cfg->ca_len, "service account CA", ei);
	if (rc < 0)
		return rc;
	snprintf(cfg->token_file, sizeof(cfg->token_file), "%s/token", o->sa_dir);
	snprintf(path, sizeof(path), "%s/namespace", o->sa_dir);
	strcpy(cfg->namespace_, "default");
	if (sysfs_read_alloc(AT_FDCWD, path, sizeof(cfg->namespace_), &ns) > 0)
		snprintf(cfg->namespace_, sizeof(cfg->namespace_), "%.*s", (int)strcspn(ns, "\n"), ns);
	free(ns);
	return 0;
}

int kube_config_load(struct kube_config *cfg, const struct kube_opts *o, struct fb_errinfo *ei)
{
	char path[PATH_MAX];
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	if (o->kubeconfig && *o->kubeconfig) {
		rc = load_kubeconfig(cfg, o->kubeconfig, ei);
	} else if (o->env_kubeconfig && *o->env_kubeconfig) {
		/* KUBECONFIG may list several files; we read the first (no merging) */
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(o->env_kubeconfig, ":"), o->env_kubeconfig);
		rc = load_kubeconfig(cfg, path, ei);
	} else if (o->env_host && *o->env_host && o->env_port && *o->env_port) {
		rc = load_in_cluster(cfg, o, ei);
	} else if (o->home && *o->home) {
		snprintf(path, sizeof(path), "%s/.kube/config", o->home);
		rc = load_kubeconfig(cfg, path, ei);
		if (rc == -FB_ENOENT)
			rc = fb_errinfo_set(ei, FB_ENOENT, 0, "Kubernetes API",
					    "no configuration: give --kubeconfig, set KUBECONFIG, run in a pod, or create ~/.kube/config");
	} else {
		rc = fb_errinfo_set(ei, FB_ENOENT, 0, "Kubernetes API",
				    "no configuration: give --kubeconfig, set KUBECONFIG or run in a pod");
	}
	if (rc == 0 && !cfg->insecure && !cfg->ca_pem && strcmp(cfg->scheme, "https") == 0)
		rc = fb_errinfo_set(ei, FB_EINVAL, 0, cfg->source,
				    "no certificate-authority for the server (system roots are not used)");
	if (rc < 0)
		kube_config_free(cfg);
	return rc;
}

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

void kube_framer_init(struct kube_framer *f, size_t max_event)
{
	buf_init(&f->line, max_event);
}

void kube_framer_free(struct kube_framer *f)
{
	buf_free(&f->line);
}

/* Decodes one line; empty lines are keep-alive padding. */
static int frame_line(const char *line, size_t len, kube_event_fn fn, void *ctx,
		      struct fb_errinfo *ei)
{
	struct json *ev;
	const char *type;
	struct json *obj;
	int rc;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return 0;
	ev = json_parse(line, len, "watch event", ei);
	if (!ev)
		return -(ei ? ei->code : FB_EPROTO) == -FB_ENOMEM ? -FB_ENOMEM : -FB_EPROTO;
	type = json_get_str(ev, "type", NULL);
	obj = json_get(ev, "object");
	if (!type || json_type(obj) != JSON_OBJECT) {
		json_free(ev);
		return fb_errinfo_set(ei, FB_EPROTO, 0, "watch event", "no \"type\" string or \"object\" object");
	}
	rc = fn(ctx, type, obj);
	json_free(ev);
	return rc;
}

int kube_framer_feed(struct kube_framer *f, const char *data, size_t len, kube_event_fn fn,
		     void *ctx, struct fb_errinfo *ei)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		int rc;

		if (take > f->line.max - f->line.len) {
			buf_reset(&f->line);
			return fb_errinfo_set(ei, FB_E2BIG, 0, "watch event", "event larger than the cap");
		}
		if (nl && f->line.len == 0) {
			/* the whole line is in this slice: no copy */
			rc = frame_line(data, take, fn, ctx, ei);
		} else {
			buf_put(&f->line, data, take);
			if (f->line.err) {
				buf_reset(&f->line);
				return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, "watch event", NULL);
			}
			if (!nl)
				return 0;
			rc = frame_line(f->line.p, f->line.len, fn, ctx, ei);
			buf_reset(&f->line);
		}
		if (rc)
			return rc;
		data += take + 1;
		len -= take + 1;
	}
	return 0;
}

/* ---- the client -------------------------------------------------------- */

#define TOKEN_MAX (64u << 10)
#define TOKEN_REREAD_MS 60000
#define WATCH_EVENT_MAX ((size_t)16 << 20)
#define WATCH_SLICE_MS 20 /* events handled in one go before the loop runs again */

struct kube {
	struct kube_config cfg;  /* owned copy */
	struct kube_opts opts;
	const struct fb_log *log;
	int cancel_fd;
	struct tls_config *tls;
	struct http_conn *conn;
	struct kube_bucket bucket;
	struct kube_backoff backoff;
	char *token;             /* current bearer token, owned, never logged */
	long long token_read_ms;
	char endpoint[300];      /* "https://host:port", for messages */
};

struct kube_watch {
	struct kube *k;
	struct loop *loop;
	struct http_stream *s;
	struct kube_framer framer;
	kube_watch_event_fn event;
	kube_watch_end_fn end;
	void *ctx;
	char rv[64];
	int watching;            /* fd registered with the loop */
	int deadline_timer;      /* fails a stream the server forgot to end */
	int end_timer;           /* a failed open is reported from the loop */
	int resume_timer;        /* more to read after the loop has run (watch_readable) */
	long long last_ms;       /* when the stream last delivered an event or bookmark */
	enum kube_watch_end why; /* for end_timer */
	struct fb_errinfo ei;    /* for end_timer */
};

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
static int token_refresh(struct kube *k, int force, struct fb_errinfo *ei)
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
	rc = token_refresh(k, 1, ei);
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
static int wait_ms(struct kube *k, long long ms)
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
static void decode_status(struct kube_result *res)
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
static void make_headers(struct kube *k, const char *content_type, char *auth, size_t auth_size,
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
			if (wait_ms(k, bucket) < 0)
				goto canceled;
		token_refresh(k, 0, NULL);
		make_headers(k, content_type, auth, sizeof(auth), ctype, sizeof(ctype), hdr);
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
			token_refresh(k, 1, NULL);
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

		if (wait_ms(k, wait) < 0)
			goto canceled;
	}
	if (rc < 0)
		goto out;
	res->status = resp.status;
	if (resp.body_len) {
		struct fb_errinfo jei;

		res->body = json_parse(resp.body, resp.body_len, "response body", &jei);
	}
	decode_status(res);
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
static int status_error(const char *method, const char *path, const struct kube_result *res,
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
			rc = res.status / 100 != 2 ? status_error("GET", target, &res, ei)
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

/* ---- watch ------------------------------------------------------------- */

static void watch_finish(struct kube_watch *w, enum kube_watch_end why, const struct fb_errinfo *ei)
{
	if (w->watching) {
		loop_unwatch(w->loop, http_stream_fd(w->s));
		w->watching = 0;
	}
	loop_timer_cancel(w->loop, w->deadline_timer);
	w->deadline_timer = 0;
	loop_timer_cancel(w->loop, w->resume_timer);
	w->resume_timer = 0;
	http_stream_free(w->s);
	w->s = NULL;
	w->end(w->ctx, why, ei); /* may free w */
}

static void watch_end_later(void *ctx)
{
	struct kube_watch *w = ctx;

	w->end_timer = 0;
	watch_finish(w, w->why, &w->ei);
}

/* The server promised to end the stream after timeoutSeconds; a stream still
 * open well after that sits on a dead link or a stuck proxy. */
static void watch_deadline(void *ctx)
{
	struct kube_watch *w = ctx;
	struct fb_errinfo ei;

	w->deadline_timer = 0;
	fb_errinfo_set(&ei, FB_ETIMEDOUT, 0, "watch", "the stream outlived its timeoutSeconds");
	watch_finish(w, KUBE_WATCH_FAILED, &ei);
}

static int watch_event(void *ctx, const char *type, struct json *object)
{
	struct kube_watch *w = ctx;
	const char *rv = json_get_str(json_get(object, "metadata"), "resourceVersion", NULL);

	if (strcmp(type, "ERROR") == 0) {
		long long code = 0;

		json_int(json_get(object, "code"), &code);
		return code == 410 ? 410 : 500;
	}
	if (rv)
		snprintf(w->rv, sizeof(w->rv), "%s", rv);
	w->last_ms = loop_now_ms();
	if (strcmp(type, "BOOKMARK") == 0)
		return 0;
	w->event(w->ctx, type, object);
	return 0;
}

static void watch_resume(void *ctx);

/* Reads and handles events until nothing is left, or for WATCH_SLICE_MS: a
 * stream of big events (a node rewriting a 1 MB object) must not hold up the
 * loop (probes, lease renewal, the other watches). The rest is read from a
 * timer, not on the fd's next readiness: TLS may hold it already decrypted. */
static void watch_readable(void *ctx, int fd, short revents)
{
	struct kube_watch *w = ctx;
	struct fb_errinfo ei;
	char buf[16384];
	long long start = loop_now_ms();

	(void)fd;
	(void)revents;
	fb_errinfo_init(&ei);
	for (;;) {
		ssize_t n;
		int rc;

		if (loop_now_ms() - start >= WATCH_SLICE_MS) {
			if (!w->resume_timer && (w->resume_timer = loop_timer(w->loop, 0, watch_resume, w)) < 0)
				w->resume_timer = 0; /* no timer free: the fd's next readiness then */
			return;
		}
		n = http_stream_read(w->s, buf, sizeof(buf), &ei);

		if (n == -FB_EAGAIN) {
			/* TLS may want to write: follow what the stream asks for */
			loop_watch(w->loop, http_stream_fd(w->s), http_stream_events(w->s), watch_readable, w);
			return;
		}
		if (n == 0) {
			watch_finish(w, KUBE_WATCH_CLOSED, NULL);
			return;
		}
		if (n < 0) {
			watch_finish(w, KUBE_WATCH_FAILED, &ei);
			return;
		}
		rc = kube_framer_feed(&w->framer, buf, (size_t)n, watch_event, w, &ei);
		if (rc == 410) {
			fb_errinfo_set(&ei, FB_EIO, 0, "watch", "410 Expired: resourceVersion too old");
			watch_finish(w, KUBE_WATCH_EXPIRED, &ei);
			return;
		}
		if (rc != 0) {
			if (rc > 0)
				fb_errinfo_set(&ei, FB_EIO, 0, "watch", "ERROR event from the server");
			watch_finish(w, KUBE_WATCH_FAILED, &ei);
			return;
		}
	}
}

static void watch_resume(void *ctx)
{
	struct kube_watch *w = ctx;

	w->resume_timer = 0;
	if (w->s)
		watch_readable(w, http_stream_fd(w->s), POLLIN);
}

int kube_watch_start(struct kube_watch **out, struct kube *k, struct loop *l, const char *path,
		     const char *rv, kube_watch_event_fn event, kube_watch_end_fn end, void *ctx,
		     struct fb_errinfo *ei)
{
	struct kube_watch *w = calloc(1, sizeof(*w));
	char target[2048], auth[TOKEN_MAX + 32], ctype[8];
	const char *hdr[6];
	const struct http_resp *head;
	struct http_req req = { .method = "GET", .headers = hdr, .timeout_ms = k->opts.timeout_ms,
				.body_max = 1 << 20 };
	long long bucket;
	int rc, timeout_s;

	*out = NULL;
	if (!w)
		return fb_errinfo_set(ei, FB_ENOMEM, ENOMEM, path, NULL);
	w->k = k;
	w->loop = l;
	w->event = event;
	w->end = end;
	w->ctx = ctx;
	snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "");
	kube_framer_init(&w->framer, WATCH_EVENT_MAX);
	/* spread re-watches of a fleet over time, as client-go does */
	timeout_s = 300 + (int)((unsigned)loop_now_ms() % 301);
	snprintf(target, sizeof(target), "%s%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%d%s%s",
		 path, strchr(path, '?') ? "&" : "?", timeout_s, w->rv[0] ? "&resourceVersion=" : "", w->rv);
	req.target = target;
	while ((bucket = kube_bucket_take(&k->bucket, loop_now_ms())) > 0)
		if (wait_ms(k, bucket) < 0) {
			free(w);
			return fb_errinfo_set(ei, FB_ECANCELED, 0, path, "stopped by a signal");
		}
	token_refresh(k, 0, NULL);
	make_headers(k, NULL, auth, sizeof(auth), ctype, sizeof(ctype), hdr);
	rc = http_stream_open(&w->s, k->conn, &req, ei);
	memset(auth, 0, sizeof(auth));
	if (rc < 0) {
		kube_framer_free(&w->framer);
		free(w);
		return rc;
	}
	*out = w;
	head = http_stream_resp(w->s);
	if (head->status != 200) {
		struct kube_result res = { .status = head->status };
		struct fb_errinfo jei;

		if (head->body_len)
			res.body = json_parse(head->body, head->body_len, "watch response", &jei);
		decode_status(&res);
		if (head->status == 401)
			token_refresh(k, 1, NULL);
		status_error("GET", path, &res, &w->ei);
		kube_result_free(&res);
		/* reported from the loop, so the caller holds *out before end runs */
		w->why = head->status == 410 ? KUBE_WATCH_EXPIRED : KUBE_WATCH_FAILED;
		w->end_timer = loop_timer(l, 0, watch_end_later, w);
		return 0;
	}
	w->last_ms = loop_now_ms();
	w->deadline_timer = loop_timer(l, (timeout_s + 30) * 1000LL, watch_deadline, w);
	rc = loop_watch(l, http_stream_fd(w->s), http_stream_events(w->s), watch_readable, w);
	if (rc < 0) {
		*out = NULL;
		kube_watch_free(w);
		return fb_errinfo_set(ei, FB_E2BIG, 0, path, "too many watched fds");
	}
	w->watching = 1;
	/* bytes that came with the headers are already buffered */
	watch_readable(w, http_stream_fd(w->s), POLLIN);
	return 0;
}

const char *kube_watch_rv(const struct kube_watch *w)
{
	return w->rv;
}

long long kube_watch_last_ms(const struct kube_watch *w)
{
	return w->last_ms;
}

void kube_watch_free(struct kube_watch *w)
{
	if (!w)
		return;
	loop_timer_cancel(w->loop, w->deadline_timer);
	loop_timer_cancel(w->loop, w->end_timer);
	loop_timer_cancel(w->loop, w->resume_timer);
	if (w->watching)
		loop_unwatch(w->loop, http_stream_fd(w->s));
	http_stream_free(w->s);
	kube_framer_free(&w->framer);
	free(w);
}
