/* kube_config: client options, kubeconfig and in-cluster configuration
 * (kube_opts_*, kube_config_*, kube_connect). See kube.h for the contract. */
#include "kube.h"
#include "kube_int.h"

#include "labels.h"
#include "sysfs.h"
#include "yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
