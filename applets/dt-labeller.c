/* dt-labeller: devicetree "compatible" strings as Kubernetes node labels.
 *
 * Mirrors adaptant-labs/k8s-dt-node-labeller
 * (https://github.com/adaptant-labs/k8s-dt-node-labeller): same flags (-d, -f,
 * -n NAME [NAME...]), same dry-run and NFD features-file output, same label
 * names and counts. Deliberate deviations, each fixing a defect of the original:
 * - The devicetree comes from --dtb FILE, else <host>/proc/device-tree, else
 *   <host>/sys/firmware/devicetree/base (both world-readable, so no privileged
 *   container), else the raw blob <host>/sys/firmware/fdt. No devicetree at
 *   all (x86) is a warning and zero labels, exit 0, not a panic.
 * - Every ',' becomes '-' (the original dropped all after a second comma);
 *   characters a label cannot hold become '_', leading/trailing
 *   non-alphanumerics are trimmed, names over 63 characters are skipped with a
 *   warning rather than truncated or sent to be rejected by the API server.
 * - Node names from -n/--nodes are matched literally, not as regular
 *   expressions; a node matching several names is counted once.
 * - Output is sorted by key and byte-stable; the features file is written
 *   atomically (dot-file, fsync, rename); errors are messages with exit codes
 *   (1 runtime, 2 usage), never a panic.
 * - Positional node names without -n are a usage error (exit 2, was 1), and
 *   so is an option after the node names (Go's flag package silently took it
 *   for a node name); -n may be repeated, each value adds a name.
 * - A compatible property without its final NUL (malformed) has its
 *   unterminated tail dropped with a warning, as the original dropped it.
 * - A compatible property over 64 KiB (no real board comes near) skips its
 *   node with a warning naming the node; the other nodes are still labelled
 *   (the original read any size), from a blob and a directory alike.
 * - Controller mode (the default without -d/-f) labels its own Node with a
 *   JSON merge patch (only the labels that differ), removes the labels under
 *   the exact "<prefix>/" that no longer apply (never "devicetree.orgx/..."),
 *   and keeps them asserted: a watch of its own Node (a label deleted by hand
 *   comes back at once) and a --resync timer that also re-reads the
 *   devicetree (the original computed labels once and never looked again).
 *   API errors are retried with backoff; it never exits because of them.
 *   --oneshot without -d/-f labels once and exits (1 if that failed).
 */
#include "applets.h"

#include "../core/dt.h"
#include "../core/err.h"
#include "../core/featfile.h"
#include "../core/hostfs.h"
#include "../core/json.h"
#include "../core/informer.h"
#include "../core/kube.h"
#include "../core/labels.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/opt.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"Usage: dt-labeller [OPTIONS] [-n NODE [NODE...]]\n"
	"\n"
	"Label a Kubernetes node with the devicetree compatible strings of its root\n"
	"node and of the nodes named cpu and gpu (and those given with -n/--nodes):\n"
	"beta.devicetree.org/<vendor>-<model>=<count>.\n"
	"\n"
	"  -d                   print the labels and exit\n"
	"  -f                   write them to the NFD features file and exit\n"
	"  (neither)            label the Node through the API server and keep the labels\n"
	"                       asserted (controller mode; --oneshot: label once and exit)\n";

#define DEFAULT_FEATURES_FILE "/etc/kubernetes/node-feature-discovery/features.d/devicetree-features"
#define MAX_NODE_NAMES (2 * OPT_LIST_MAX + 2)

/* One distinct label name and how often it occurred. */
struct name_count {
	char name[LABELS_NAME_MAX + 1];
	unsigned long count;
};

struct dtl {
	struct fb_log log;
	const char *nodes[MAX_NODE_NAMES]; /* borrowed from argv or literals */
	int nnodes;
	struct name_count *names;         /* sorted by name, distinct; owned */
	size_t nnames, cap;
	int err;                          /* visitor failure, negative fb_err */
	struct fb_errinfo ei;
};

/* "cpu" matches "cpu", "cpu@0" and "cpu12@3"; not "cpus" or "cpu-map". */
static int node_matches(const char *name, const char *want)
{
	size_t len = strlen(want);
	const char *p;

	if (strncmp(name, want, len) != 0)
		return 0;
	p = name + len;
	if (*p == '\0')
		return 1;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '@';
}

/* Counts one occurrence. The table stays sorted and holds each name once,
 * so memory follows the distinct names, not the size of the tree. */
static int add_name(struct dtl *s, const char *name)
{
	size_t lo = 0, hi = s->nnames;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(s->names[mid].name, name);

		if (c == 0) {
			s->names[mid].count++;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->nnames == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct name_count *n = realloc(s->names, cap * sizeof(*n));

		if (!n)
			return -FB_ENOMEM;
		s->names = n;
		s->cap = cap;
	}
	memmove(&s->names[lo + 1], &s->names[lo], (s->nnames - lo) * sizeof(s->names[0]));
	strcpy(s->names[lo].name, name);
	s->names[lo].count = 1;
	s->nnames++;
	return 0;
}

static int visit(void *ctx, struct dt *dt, const struct dt_node *node)
{
	struct dtl *s = ctx;
	char epath[256], ecompat[256];
	const void *val;
	const char *p, *end;
	ssize_t len;
	int i;

	if (node->depth > 0) {
		for (i = 0; i < s->nnodes; i++)
			if (node_matches(node->name, s->nodes[i]))
				break;
		if (i == s->nnodes)
			return 0;
	}
	len = dt_getprop(dt, node, "compatible", &val, &s->ei);
	if (len == -FB_ENOENT)
		return 0;
	/* names and strings come from the tree: escaped before they reach a log */
	log_escape(node->path, strlen(node->path), epath, sizeof(epath));
	if (len == -FB_E2BIG) { /* one absurd node must not cost the others their labels */
		LOG_W(&s->log, "node %s: compatible of more than %u KiB, node skipped", epath, DT_PROP_MAX >> 10);
		return 0;
	}
	if (len < 0)
		return s->err = (int)len;
	LOG_V(&s->log, 2, "node %s: compatible of %zd bytes", epath, len);
	/* a NUL-separated string list */
	for (p = val, end = p + len; p < end; p += strlen(p) + 1) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t slen = nul ? (size_t)(nul - p) : (size_t)(end - p);
		char name[LABELS_NAME_MAX + 1];
		ssize_t n;

		log_escape(p, slen, ecompat, sizeof(ecompat));
		if (!nul) {
			LOG_W(&s->log, "node %s: compatible ends without a NUL; \"%s\" dropped", epath, ecompat);
			break;
		}
		n = labels_dt_name(p, slen, name, sizeof(name));
		if (n == -FB_E2BIG)
			LOG_W(&s->log, "node %s: compatible \"%s\" gives a label name over %d characters, skipped",
			      epath, ecompat, LABELS_NAME_MAX);
		else if (n == 0 && slen > 0)
			LOG_V(&s->log, 1, "node %s: compatible \"%s\" gives an empty label name, skipped",
			      epath, ecompat);
		else if (n > 0 && add_name(s, name) < 0)
			return s->err = -FB_ENOMEM;
	}
	return 0;
}

/* Opens the devicetree: --dtb, else the first host source that exists.
 * Returns 0 with *out NULL when the host has none. */
static int open_tree(struct dtl *s, const struct hostfs *h, const char *dtb, struct dt **out)
{
	static const char *const dirs[] = { "proc/device-tree", "sys/firmware/devicetree/base" };
	char path[PATH_MAX], fdt[PATH_MAX];
	int rc;

	if (dtb)
		return dt_open_blob(out, dtb, &s->ei);
	for (size_t i = 0; i < 2; i++) {
		/* the kernel's /proc/device-tree is an absolute symlink into /sys:
		 * resolve it inside the host prefix, not in our own root */
		if (hostfs_resolve(h, dirs[i], path, sizeof(path)) < 0)
			return fb_errinfo_set(&s->ei, FB_E2BIG, 0, dirs[i], "host path too long or a symlink loop");
		rc = dt_open_dir(out, path, &s->ei);
		if (rc != -FB_ENOENT)
			return rc;
		LOG_V(&s->log, 1, "no devicetree directory at %s%s", h->prefix, dirs[i]);
	}
	if (hostfs_resolve(h, "sys/firmware/fdt", fdt, sizeof(fdt)) < 0)
		return fb_errinfo_set(&s->ei, FB_E2BIG, 0, "sys/firmware/fdt", "host path too long or a symlink loop");
	rc = dt_open_blob(out, fdt, &s->ei);
	if (rc == -FB_ENOENT) {
		LOG_W(&s->log, "no devicetree found (looked at %sproc/device-tree, %ssys/firmware/devicetree/base, %s): no labels",
		      h->prefix, h->prefix, fdt);
		return 0;
	}
	return rc;
}

/* Renders "PREFIX/NAME<sep>COUNT\n" lines, sorted by name, into a new buffer
 * (owned by the caller), or returns NULL when out of memory. */
static char *render(const struct dtl *s, const char *prefix, const char *sep, size_t *lenp)
{
	size_t cap = 1, len = 0;
	char *buf;

	for (size_t i = 0; i < s->nnames; i++)
		cap += strlen(prefix) + 1 + strlen(s->names[i].name) + strlen(sep) + 24;
	buf = malloc(cap);
	if (!buf)
		return NULL;
	buf[0] = '\0';
	for (size_t i = 0; i < s->nnames; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s/%s%s%lu\n", prefix,
					s->names[i].name, sep, s->names[i].count);
	*lenp = len;
	return buf;
}

/* Reads the devicetree and fills s->names. Returns 0 or a negative fb_err
 * with s->ei filled. No devicetree at all is 0 with no names. */
static int compute_labels(struct dtl *s, const struct hostfs *h, const char *dtb)
{
	struct dt *dt = NULL;
	int rc;

	s->nnames = 0;
	rc = open_tree(s, h, dtb, &dt);
	if (rc < 0 || !dt)
		return rc;
	LOG_V(&s->log, 1, "reading devicetree from %s", dt_source(dt));
	rc = dt_walk(dt, visit, s, &s->ei);
	if (rc > 0)
		rc = s->err;
	dt_free(dt);
	return rc;
}

/* ---- controller mode ---------------------------------------------------- */

struct ctl {
	struct dtl *s;
	const struct hostfs *h;
	const char *dtb, *prefix, *node;
	struct kube *k;
	struct loop *l;
	struct informer inf;    /* the Node, listed and watched (a field-selected collection) */
	int listing, found;     /* inside a list; it had the Node */
	struct json *desired;   /* {"prefix/name": "count"}, owned; NULL while unknown */
	struct json *labels;    /* the Node's labels as last seen, owned; NULL while unknown */
	char path[512];
	struct kube_backoff bo; /* retries of a failed patch */
	long long resync_ms;
	int retry_timer;
	int failed;             /* --oneshot: the result */
};

/* Recomputes the labels this node should carry; NULL on a devicetree error. */
static struct json *desired_labels(struct ctl *c)
{
	struct json *d;
	char key[LABELS_PREFIX_MAX + LABELS_NAME_MAX + 2], val[24], msg[1200], emsg[1200];

	if (compute_labels(c->s, c->h, c->dtb) < 0) {
		fb_errinfo_str(&c->s->ei, msg, sizeof(msg));
		LOG_E(&c->s->log, "reading the devicetree: %s; labels left as they are",
		      log_escape(msg, strlen(msg), emsg, sizeof(emsg)));
		return NULL;
	}
	if (!(d = json_new_object()))
		return NULL;
	for (size_t i = 0; i < c->s->nnames; i++) {
		snprintf(key, sizeof(key), "%s/%s", c->prefix, c->s->names[i].name);
		snprintf(val, sizeof(val), "%lu", c->s->names[i].count);
		if (json_set_str(d, key, val) < 0) {
			json_free(d);
			return NULL;
		}
	}
	return d;
}

/* Ours: exactly "<prefix>/..." (the original also took "devicetree.orgx/"). */
static int owned_key(const struct ctl *c, const char *key)
{
	size_t n = strlen(c->prefix);

	return strncmp(key, c->prefix, n) == 0 && key[n] == '/';
}

static void remember_node(struct ctl *c, const struct json *node)
{
	const struct json *md = json_get(node, "metadata");
	const struct json *labels = json_get(md, "labels");

	json_free(c->labels);
	c->labels = labels ? json_dup(labels) : json_new_object();
}

/* Patches the labels that differ from c->desired. Returns 0 (also when
 * nothing needed doing) or a negative fb_err after logging why. */
static int reconcile(struct ctl *c)
{
	struct json *patch = NULL, *md, *lab;
	struct kube_result res;
	struct fb_errinfo ei;
	int set = 0, removed = 0, rc;
	char msg[1200];

	if (!c->desired || !c->labels)
		return 0;
	if (!(patch = json_new_object()) || !(md = json_new_object()) ||
	    json_set_take(patch, "metadata", md) < 0 || !(lab = json_new_object()) ||
	    json_set_take(md, "labels", lab) < 0)
		goto nomem;
	for (const struct json *d = json_child(c->desired); d; d = json_next(d)) {
		const char *have = json_get_str(c->labels, json_key(d), NULL);

		if (have && strcmp(have, json_str(d)) == 0)
			continue;
		if (json_set_str(lab, json_key(d), json_str(d)) < 0)
			goto nomem;
		set++;
	}
	for (const struct json *l = json_child(c->labels); l; l = json_next(l)) {
		if (!owned_key(c, json_key(l)) || json_get(c->desired, json_key(l)))
			continue;
		if (json_set_take(lab, json_key(l), json_new_null()) < 0)
			goto nomem;
		removed++;
	}
	if (set + removed == 0) {
		json_free(patch);
		return 0;
	}
	fb_errinfo_init(&ei);
	rc = kube_request_json(c->k, "PATCH", c->path, "application/merge-patch+json", patch, &res, &ei);
	json_free(patch);
	if (rc < 0) {
		LOG_E(&c->s->log, "labelling node %s: %s", c->node, fb_errinfo_str(&ei, msg, sizeof(msg)));
		return rc;
	}
	if (res.status / 100 != 2) {
		LOG_E(&c->s->log, "labelling node %s: HTTP %d %s: %s", c->node, res.status, res.reason,
		      res.message);
		kube_result_free(&res);
		return -FB_EIO;
	}
	remember_node(c, res.body);
	kube_result_free(&res);
	LOG_I(&c->s->log, "node %s: %d devicetree label(s) set, %d stale removed", c->node, set, removed);
	return 0;
nomem:
	json_free(patch);
	LOG_E(&c->s->log, "out of memory building the label patch");
	return -FB_ENOMEM;
}

static void ctl_sync(void *ctx);

/* One timer for every retry, so waits never pile up. */
static void schedule(struct ctl *c, long long wait, loop_timer_fn fn)
{
	loop_timer_cancel(c->l, c->retry_timer);
	c->retry_timer = loop_timer(c->l, wait, fn, c);
}

static void schedule_retry(struct ctl *c, const char *why)
{
	long long wait = kube_backoff_next(&c->bo);

	LOG_W(&c->s->log, "%s; trying again in %lld ms", why, wait);
	schedule(c, wait, ctl_sync);
}

/* The Node through core/informer: each list is checked for the Node and
 * patched, and each watch event too unless a retry is pending. */
static void on_begin(void *ctx)
{
	struct ctl *c = ctx;

	c->listing = 1;
	c->found = 0;
}

static int on_apply(void *ctx, const struct json *object)
{
	struct ctl *c = ctx;

	remember_node(c, object);
	if (c->listing) {
		c->found = 1;
		return 0;
	}
	if (c->retry_timer) /* backing off: the pending retry reconciles */
		return 0;
	if (reconcile(c) < 0 && !loop_signal(c->l))
		schedule_retry(c, "patching the node failed");
	return 0;
}

static int on_delete(void *ctx, const struct json *object)
{
	struct ctl *c = ctx;

	(void)object;
	LOG_W(&c->s->log, "node %s was deleted; waiting for it to come back", c->node);
	json_free(c->labels);
	c->labels = NULL;
	return 0;
}

/* A list completed (the watch from it started): patch what differs. */
static void on_listed(void *ctx)
{
	struct ctl *c = ctx;
	char msg[600];

	c->listing = 0;
	if (!c->found) {
		snprintf(msg, sizeof(msg), "node %s not found", c->node);
		schedule_retry(c, msg);
		return;
	}
	if (reconcile(c) < 0 && !loop_signal(c->l))
		schedule_retry(c, "patching the node failed");
}

/* Lists the Node again (a field-selected list, so the watch starts from the
 * list's current resourceVersion, not from the node's possibly ancient
 * one), patches what differs, and watches from there. */
static void ctl_sync(void *ctx)
{
	struct ctl *c = ctx;

	loop_timer_cancel(c->l, c->retry_timer);
	c->retry_timer = 0;
	informer_start(&c->inf);
}

static int ctl_watch_setup(struct ctl *c)
{
	char path[600];
	struct informer_conf ic = { .what = "Node", .path = path, .log = &c->s->log, .ctx = c,
				    .begin = on_begin, .apply = on_apply, .delete = on_delete, .end = on_listed,
				    .seed = (unsigned)getpid() + 1 };

	snprintf(path, sizeof(path), "/api/v1/nodes?fieldSelector=metadata.name%%3D%s", c->node);
	return informer_setup_kube(&c->inf, c->k, c->l, &ic);
}

/* Re-reads the devicetree and re-asserts. Against the watched copy of the
 * node while the watch shows signs of life; a silent watch may sit on a dead
 * link, so then the node is read again. */
static void on_resync(void *ctx)
{
	struct ctl *c = ctx;
	struct json *d = desired_labels(c);

	loop_timer(c->l, c->resync_ms, on_resync, c);
	if (d) {
		json_free(c->desired);
		c->desired = d;
	}
	if (c->retry_timer) /* backing off: the pending retry does the work */
		return;
	if (!c->labels || !informer_watching(&c->inf) || loop_now_ms() - informer_last_ms(&c->inf) > c->resync_ms)
		ctl_sync(c);
	else if (reconcile(c) < 0 && !loop_signal(c->l))
		schedule_retry(c, "patching the node failed");
}

/* Controller mode and --oneshot labelling. Returns the exit status. */
static int run_controller(struct dtl *s, const struct hostfs *h, const char *dtb, const char *prefix,
			  const char *kubeconfig, const char *node, long long resync_ms, int oneshot,
			  long qps, long burst)
{
	struct kube_opts ko;
	struct fb_errinfo ei;
	struct ctl c = { .s = s, .h = h, .dtb = dtb, .prefix = prefix, .node = node,
			 .resync_ms = resync_ms };
	char msg[1200], hostname[256];
	int ret = 1, rc;

	if (!c.node || !*c.node)
		c.node = getenv("NODE_NAME");
	if (!c.node || !*c.node) {
		if (gethostname(hostname, sizeof(hostname)) < 0 || !hostname[0]) {
			LOG_E(&s->log, "no node name: give --node-name or set NODE_NAME");
			return 2;
		}
		hostname[sizeof(hostname) - 1] = '\0';
		/* kubelet registers the lower-cased host name */
		for (char *p = hostname; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		c.node = hostname;
	}
	if (!labels_valid_prefix(c.node, strlen(c.node))) {
		LOG_E(&s->log, "node name \"%s\" is not a valid Kubernetes object name", c.node);
		return 2;
	}
	snprintf(c.path, sizeof(c.path), "/api/v1/nodes/%s", c.node);
	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = kubeconfig;
	ko.qps = (double)qps;
	ko.burst = (int)burst;
	rc = loop_new(&c.l, &ei);
	if (rc < 0)
		goto fail;
	rc = kube_connect(&c.k, &ko, &s->log, loop_cancel_fd(c.l), NULL, 0, &ei);
	if (rc < 0)
		goto fail;
	kube_backoff_init(&c.bo, ko.backoff_base_ms, ko.backoff_max_ms, (unsigned)getpid());
	ctl_watch_setup(&c);
	c.desired = desired_labels(&c);
	if (oneshot) {
		struct kube_result res;

		if (!c.desired)
			goto done;
		rc = kube_request(c.k, "GET", c.path, NULL, NULL, 0, &res, &ei);
		if (rc < 0)
			goto fail;
		if (res.status != 200) {
			LOG_E(&s->log, "reading node %s: HTTP %d %s %s", c.node, res.status, res.reason, res.message);
			kube_result_free(&res);
			goto done;
		}
		remember_node(&c, res.body);
		kube_result_free(&res);
		ret = reconcile(&c) < 0 ? 1 : 0;
		goto done;
	}
	LOG_I(&s->log, "labelling node %s (resync every %lld s)", c.node, resync_ms / 1000);
	loop_timer(c.l, 0, ctl_sync, &c);
	loop_timer(c.l, resync_ms, on_resync, &c);
	loop_run(c.l);
	LOG_I(&s->log, "stopping (signal %d)", loop_signal(c.l));
	ret = 0;
	goto done;
fail:
	fb_errinfo_str(&ei, msg, sizeof(msg));
	LOG_E(&s->log, "%s", msg);
done:
	informer_free(&c.inf);
	json_free(c.desired);
	json_free(c.labels);
	kube_free(c.k);
	loop_free(c.l);
	return ret;
}

static int usage_error(const char *fmt, const char *arg)
{
	fputs("dt-labeller: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\nTry 'dt-labeller --help' for more information.\n", stderr);
	return 2;
}

struct dtl_opts {
	const char *dtb, *features, *prefix, *host, *kubeconfig, *node_name;
	struct opt_list nodes, nflags;
	int dry, fflag, oneshot;
	long qps, burst, verbosity;
	long long resync_ms;
};

#define DO(member) offsetof(struct dtl_opts, member)

static const struct opt dtl_optv[] = {
	{ .so = 'd', .kind = OPT_FLAG, .off = DO(dry),
	  .help = "display the detected devicetree labels and exit (wins over -f)" },
	{ .lo = "features-file", .so = 'f', .kind = OPT_OPTSTR, .off = DO(features),
	  .seen = OPT_SEEN(struct dtl_opts, fflag), .arg = "PATH",
	  .help = "write the labels to an NFD features file (default " DEFAULT_FEATURES_FILE ")" },
	{ .so = 'n', .kind = OPT_STRS, .off = DO(nflags), .arg = "NODE",
	  .help = "also scan nodes named NODE (repeatable); operands after it are node names too" },
	{ .lo = "nodes", .kind = OPT_LIST, .off = DO(nodes), .arg = "A,B",
	  .help = "also scan these node names (comma-separated, repeatable)" },
	{ .lo = "dtb", .kind = OPT_STR, .off = DO(dtb), .arg = "FILE",
	  .help = "read this flattened devicetree blob instead of the host's" },
	{ .lo = "oneshot", .kind = OPT_FLAG, .off = DO(oneshot),
	  .help = "with -f: write once and exit (initContainer)" },
	{ .lo = "prefix", .kind = OPT_STR, .off = DO(prefix), .arg = "DOMAIN",
	  .help = "label key prefix (default beta.devicetree.org)" },
	{ .lo = "host-prefix", .kind = OPT_STR, .off = DO(host), .arg = "P",
	  .help = "read host sys/proc at P+\"sys\"... (default /host- if /host-sys exists, else /)" },
	{ .lo = "kubeconfig", .kind = OPT_STR, .off = DO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)" },
	{ .lo = "node-name", .kind = OPT_STR, .off = DO(node_name), .arg = "NAME",
	  .help = "the Node to label (default $NODE_NAME, else the host name)" },
	{ .lo = "resync", .kind = OPT_DUR, .off = DO(resync_ms), .min = 1000, .arg = "DURATION",
	  .help = "re-read the devicetree and re-assert the labels this often (default 10m)" },
	{ .lo = "kube-api-qps", .kind = OPT_INT, .off = DO(qps), .min = 1, .max = 1000, .arg = "N",
	  .help = "API requests per second at most (default 5)" },
	{ .lo = "kube-api-burst", .kind = OPT_INT, .off = DO(burst), .min = 1, .max = 1000, .arg = "N",
	  .help = "API request burst (default 10)" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = DO(verbosity), .min = 0, .max = 10,
	  .arg = "N", .help = "log verbosity" },
};

static const struct opt_spec dtl_spec = { .name = "dt-labeller", .usage = usage, .opts = dtl_optv,
					.nopts = sizeof(dtl_optv) / sizeof(dtl_optv[0]) };

/* Checks the flags and operands argv[first..argc), fills s->nodes and pfx.
 * Returns -1 to go on, else the exit status (the message printed). */
static int dtl_configure(struct dtl *s, const struct dtl_opts *o, int first, int argc, char **argv, char *pfx)
{
	size_t plen;

	s->log.v = (int)o->verbosity;
	if (first < argc && o->nflags.n == 0)
		return usage_error("unexpected argument '%s' (node names go after -n)", argv[first]);
	for (int i = first; i < argc; i++)
		if (argv[i][0] == '-') /* devicetree node names start with a letter */
			return usage_error("option '%s' after the node names: put options before -n", argv[i]);
	plen = strlen(o->prefix);
	while (plen > 0 && o->prefix[plen - 1] == '/')
		plen--;
	if (!labels_valid_prefix(o->prefix, plen))
		return usage_error("--prefix '%s' is not a DNS subdomain (like beta.devicetree.org)", o->prefix);
	memcpy(pfx, o->prefix, plen);
	pfx[plen] = '\0';
	if (o->features && (!*o->features || o->features[strlen(o->features) - 1] == '/'))
		return usage_error("--features-file '%s' does not name a file", o->features);
	/* -d and -f are one-shot already; --oneshot matters for controller mode */

	/* node list: the root is always scanned; then cpu, gpu and the extra names */
	s->nodes[s->nnodes++] = "cpu";
	s->nodes[s->nnodes++] = "gpu";
	if (o->nflags.n + o->nodes.n + (argc - first) > MAX_NODE_NAMES - 2)
		return usage_error("more than %s node names", "64");
	for (int i = 0; i < o->nflags.n; i++)
		s->nodes[s->nnodes++] = o->nflags.v[i];
	for (int i = first; i < argc; i++)
		s->nodes[s->nnodes++] = argv[i];
	for (int i = 0; i < o->nodes.n; i++)
		s->nodes[s->nnodes++] = o->nodes.v[i];
	for (int i = 0; i < s->nnodes; i++)
		if (s->nodes[i][0] == '\0')
			return usage_error("empty node name%s", "");
	return -1;
}

/* -d (print) and -f (write a features file): one pass. Returns the exit status. */
static int dtl_once(struct dtl *s, const struct hostfs *h, const struct dtl_opts *o, const char *pfx)
{
	const char *features = o->features ? o->features : DEFAULT_FEATURES_FILE;
	char *out = NULL, msg[2048], emsg[2048];
	size_t outlen;
	int rc, ret = 1;

	rc = compute_labels(s, h, o->dtb);
	if (rc < 0)
		goto fail;
	out = render(s, pfx, o->dry ? ": " : "=", &outlen);
	if (!out) {
		rc = fb_errinfo_set(&s->ei, FB_ENOMEM, 0, "labels", NULL);
		goto fail;
	}
	if (o->dry) {
		printf("Discovered the following devicetree properties:\n\n%s", out);
		/* musl forgets a failed buffered write by the time of fflush */
		if (fflush(stdout) != 0 || ferror(stdout)) {
			LOG_E(&s->log, "writing to standard output failed");
			goto done;
		}
		ret = 0;
		goto done;
	}
	printf("Writing out discovered features to %s\n", features);
	fflush(stdout);
	rc = featfile_write(features, out, outlen, &s->ei);
	if (rc < 0) {
		fb_errinfo_str(&s->ei, msg, sizeof(msg));
		LOG_E(&s->log, "failed to write feature labels: %s", log_escape(msg, strlen(msg), emsg, sizeof(emsg)));
		goto done;
	}
	ret = 0;
	goto done;
fail:
	fb_errinfo_str(&s->ei, msg, sizeof(msg));
	LOG_E(&s->log, "%s", log_escape(msg, strlen(msg), emsg, sizeof(emsg)));
done:
	free(out);
	return ret;
}

int dt_labeller_main(int argc, char **argv)
{
	struct dtl s = { .nnodes = 0 };
	struct dtl_opts o = { .prefix = "beta.devicetree.org", .resync_ms = 600000, .qps = 5, .burst = 10 };
	struct hostfs h;
	char pfx[LABELS_PREFIX_MAX + 2];
	int first, rc, ret;

	log_init(&s.log);
	fb_errinfo_init(&s.ei);
	rc = opt_parse(&dtl_spec, &o, argc, argv, &first);
	if (rc == OPT_EXIT)
		return 0;
	if (rc < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	if ((rc = dtl_configure(&s, &o, first, argc, argv, pfx)) >= 0)
		return rc;
	hostfs_init(&h);
	if (hostfs_setup(&h, o.host) < 0)
		return usage_error("--host-prefix is too long%s", "");
	if (!o.dry && !o.fflag)
		ret = run_controller(&s, &h, o.dtb, pfx, o.kubeconfig, o.node_name, o.resync_ms, o.oneshot, o.qps,
				     o.burst);
	else
		ret = dtl_once(&s, &h, &o, pfx);
	free(s.names);
	return ret;
}
