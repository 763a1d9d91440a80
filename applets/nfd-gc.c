/* nfd-gc: delete the NodeFeatures of nodes that are gone.
 *
 * Mirrors kubernetes-sigs/node-feature-discovery's nfd-gc (v0.16-v0.19), the
 * command upstream's default kustomize overlay and Helm chart run as their own
 * Deployment: the same flags (-gc-interval, -kubeconfig, -port, -list-size,
 * klog's, v0.16-v0.17's -metrics), one pass at start and one every
 * -gc-interval, lists paged by -list-size. It shares core/nfgc with
 * nfd-master's own garbage collection.
 *
 * Deliberate deviations:
 * - A node counts as gone only when the API answers 404 for it at deletion
 *   time (the Node list may be older than a NodeFeature made since).
 * - NodeFeatures without the nfd.node.kubernetes.io/node-name label are
 *   logged and left alone (upstream deletes them): nothing says whose they
 *   are, and an admin may have made them.
 * - A pass whose Node list fails deletes nothing and is tried again after
 *   the client's backoff, not a whole -gc-interval later.
 * - NodeResourceTopology objects (the topology updater's) are not collected:
 *   featurebox has no topology updater.
 * - -gc-interval of zero or less is refused (upstream crashes on it).
 * - --bind-address IP is ours, as in nfd-worker and nfd-master. */
#include "applets.h"

#include "../core/app.h"
#include "../core/err.h"
#include "../core/http.h"
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "../core/nfgc.h"
#include "../core/opt.h"
#include "../core/strset.h"
#include "../core/version.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODE_LABEL "nfd.node.kubernetes.io/node-name"

static const char usage[] =
	"Usage: nfd-gc [OPTIONS]\n"
	"Deletes the NodeFeature objects of nodes that no longer exist: once at\n"
	"start, then every --gc-interval. Serves /healthz and /metrics on --port.\n";

struct gc {
	struct fb_log log;
	struct loop *l;
	struct kube *k;
	struct http_server *srv;
	struct metrics mx;
	int m_deleted, m_failed, m_build;
	long long interval_ms;
	struct kube_backoff bo;
	struct strset nodes;   /* during a pass: the names the Node list gave */
	struct strset orphans; /* "namespace\0name\0node" of NodeFeatures whose node was not listed */
	int unlabelled;
};

/* ---- one pass ------------------------------------------------------------- */

static int node_page(void *ctx, const struct json *items, int first)
{
	struct gc *g = ctx;

	if (first)
		strset_free(&g->nodes);
	for (const struct json *o = json_child(items); o; o = json_next(o))
		if (strset_add(&g->nodes, json_get_str(json_get(o, "metadata"), "name", "")) < 0)
			return -FB_ENOMEM;
	return 0;
}

static int nf_page(void *ctx, const struct json *items, int first)
{
	struct gc *g = ctx;

	if (first) {
		strset_free(&g->orphans);
		g->unlabelled = 0;
	}
	for (const struct json *o = json_child(items); o; o = json_next(o)) {
		const struct json *md = json_get(o, "metadata");
		const char *ns = json_get_str(md, "namespace", ""), *name = json_get_str(md, "name", "");
		const char *node = json_get_str(json_get(md, "labels"), NODE_LABEL, "");
		char key[800];
		int n;

		if (!*node) {
			if (g->unlabelled++ < 20)
				LOG_W(&g->log, "NodeFeature %s/%s has no %s label: left alone", ns, name, NODE_LABEL);
			continue;
		}
		if (strset_has(&g->nodes, node))
			continue;
		n = snprintf(key, sizeof(key), "%s/%s/%s", ns, name, node);
		if (n < 0 || (size_t)n >= sizeof(key))
			continue; /* names the API would not hold */
		if (strset_add(&g->orphans, key) < 0)
			return -FB_ENOMEM;
	}
	return 0;
}

/* Lists the Nodes, then the NodeFeatures, and deletes those of nodes that
 * are gone. Returns 0, or -1 when a list failed (logged: nothing deleted). */
static int pass(struct gc *g)
{
	const struct nfgc del = { .k = g->k, .lg = &g->log, .mx = &g->mx, .m_deleted = g->m_deleted,
				  .m_failed = g->m_failed };
	struct fb_errinfo ei;
	char rv[64], msg[1200];
	int rc = 0, deleted = 0;

	fb_errinfo_init(&ei);
	if (kube_list_pages(g->k, "/api/v1/nodes", node_page, g, rv, sizeof(rv), &ei) < 0 ||
	    (strset_sort(&g->nodes), kube_list_pages(g->k, NFGC_NF_API "/nodefeatures", nf_page, g, rv, sizeof(rv), &ei)) < 0) {
		LOG_E(&g->log, "garbage collection: %s (nothing deleted)", fb_errinfo_str(&ei, msg, sizeof(msg)));
		rc = -1;
		goto out;
	}
	if (g->unlabelled > 20)
		LOG_W(&g->log, "%d more NodeFeatures without the %s label left alone", g->unlabelled - 20, NODE_LABEL);
	for (size_t i = 0; i < g->orphans.n && !loop_signal(g->l); i++) {
		char *ns = g->orphans.v[i], *name = strchr(ns, '/'), *node;

		*name++ = '\0';
		node = strchr(name, '/');
		*node++ = '\0';
		if (!nfgc_node_gone(g->k, node)) {
			LOG_W(&g->log, "node %s: not listed, but the API has it: keeping NodeFeature %s/%s", node, ns, name);
			continue;
		}
		if (nfgc_delete(&del, ns, name, node) == 0)
			deleted++;
	}
	LOG_I(&g->log, "garbage collection: %zu nodes, %d NodeFeatures deleted", g->nodes.n, deleted);
out:
	strset_free(&g->nodes);
	strset_free(&g->orphans);
	return rc;
}

static void on_pass(void *ctx)
{
	struct gc *g = ctx;

	if (pass(g) == 0) {
		kube_backoff_reset(&g->bo);
		loop_timer(g->l, g->interval_ms, on_pass, g);
	} else {
		loop_timer(g->l, kube_backoff_next(&g->bo), on_pass, g);
	}
}

/* ---- options, setup ---------------------------------------------------------- */

struct gc_opts {
	const char *kubeconfig, *bind_ip;
	long verbosity, port, list_size;
	long long interval;
	struct app_klog klog;
};

#define GO(member) offsetof(struct gc_opts, member)

static const struct opt gc_optv[] = {
	{ .lo = "gc-interval", .kind = OPT_DUR, .off = GO(interval), .min = 1, .arg = "DUR",
	  .help = "time between passes (default 1h)" },
	{ .lo = "kubeconfig", .kind = OPT_STR, .off = GO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)" },
	{ .lo = "port", .kind = OPT_INT, .off = GO(port), .min = 0, .max = 65535, .arg = "N",
	  .help = "serve /metrics and /healthz on this port (default 8080; 0: any)" },
	{ .lo = "bind-address", .kind = OPT_STR, .off = GO(bind_ip), .arg = "IP",
	  .help = "serve them on this address only (ours; default every interface)" },
	{ .lo = "list-size", .kind = OPT_INT, .off = GO(list_size), .min = 1, .max = 100000, .arg = "N",
	  .help = "objects per list page (default 200)" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = GO(verbosity), .min = 0, .max = 10, .arg = "N",
	  .help = "log verbosity" },
};

static const struct opt_spec gc_spec = { .name = "nfd-gc", .usage = usage, .opts = gc_optv,
					 .nopts = sizeof(gc_optv) / sizeof(gc_optv[0]),
					 .more = app_klog_opts, .nmore = APP_KLOG_NOPTS,
					 .more_off = offsetof(struct gc_opts, klog), .more_title = APP_KLOG_TITLE };

static const struct metrics_def gc_metrics[] = {
	{ METRIC_GAUGE, "nfd_gc_build_info", "version=\"" FB_VERSION "\"",
	  "Build information; the value is the start time", NULL, 0, offsetof(struct gc, m_build) },
	{ METRIC_COUNTER, "nfd_gc_objects_deleted_total", "kind=\"NodeFeature\"", "Objects of deleted nodes removed",
	  NULL, 0, offsetof(struct gc, m_deleted) },
	{ METRIC_COUNTER, "nfd_gc_object_delete_failures_total", "kind=\"NodeFeature\"", "Deletions that failed",
	  NULL, 0, offsetof(struct gc, m_failed) },
};

/* The loop and the client. Returns -1 to go on, else the exit status. */
static int gc_setup(struct gc *g, const struct gc_opts *o)
{
	struct kube_opts ko;
	struct fb_errinfo ei;
	char ns[254], msg[1200];
	int rc;

	g->log.v = (int)o->verbosity;
	if ((rc = app_klog_apply(&o->klog, &g->log, "nfd-gc")) < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	app_warn_ignored(&gc_spec, o, &g->log);
	g->interval_ms = o->interval;
	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = o->kubeconfig;
	ko.page_size = (int)o->list_size;
	if ((rc = loop_new(&g->l, &ei)) == 0)
		rc = kube_connect(&g->k, &ko, &g->log, loop_cancel_fd(g->l), ns, sizeof(ns), &ei);
	if (rc < 0) {
		LOG_E(&g->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	kube_backoff_init(&g->bo, ko.backoff_base_ms, ko.backoff_max_ms, (unsigned)time(NULL));
	return -1;
}

int nfd_gc_main(int argc, char **argv)
{
	struct gc g;
	struct gc_opts o = { .bind_ip = "", .port = 8080, .list_size = 200, .interval = 3600000 };
	struct app_probes probes;
	struct fb_errinfo ei;
	char addr[80], where[96], msg[300];
	int rc, ret = 1;

	memset(&g, 0, sizeof(g));
	log_init(&g.log);
	metrics_init(&g.mx);
	app_klog_init(&o.klog);
	if ((rc = opt_parse_only(&gc_spec, &o, argc, argv)) >= 0)
		return rc;
	fb_errinfo_init(&ei);
	if (http_addr_join(addr, sizeof(addr), o.bind_ip, o.port, &ei) < 0) {
		fprintf(stderr, "nfd-gc: --bind-address %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 2;
	}
	if ((rc = gc_setup(&g, &o)) >= 0) {
		ret = rc;
		goto out;
	}
	metrics_add_table(&g.mx, gc_metrics, sizeof(gc_metrics) / sizeof(gc_metrics[0]), &g);
	metrics_set(&g.mx, g.m_build, (double)time(NULL));
	probes = (struct app_probes){ .mx = &g.mx };
	snprintf(where, sizeof(where), "%s%.80s", *o.bind_ip ? " of " : "", o.bind_ip);
	app_serve(&g.srv, g.l, addr, &probes, &g.log, "/healthz and /metrics", where);
	loop_timer(g.l, 0, on_pass, &g);
	loop_run(g.l);
	LOG_I(&g.log, "stopping (signal %d)", loop_signal(g.l));
	ret = 0;
out:
	http_server_free(g.srv);
	strset_free(&g.nodes);
	strset_free(&g.orphans);
	kube_free(g.k);
	loop_free(g.l);
	return ret;
}
