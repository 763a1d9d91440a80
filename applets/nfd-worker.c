/* nfd-worker: discover node features and publish them as a NodeFeature.
 *
 * Mirrors kubernetes-sigs/node-feature-discovery nfd-worker v0.17-v0.19
 * (https://github.com/kubernetes-sigs/node-feature-discovery): the same
 * flags (one or two dashes), nfd-worker.conf, feature keys, label names and
 * NodeFeature object, so an upstream nfd-master consumes what we publish.
 * Sources: cpu, kernel, local (features.d), memory, network, pci, storage,
 * system, usb, custom, and fake (only when featureSources names it).
 * Every flag upstream has had since v0.16 is accepted (klog's
 * through core/app, honoured as klog does; v0.16's gRPC and port flags with a
 * warning that they are ignored; -feature-gates checked as upstream checks
 * it). Deliberate deviations:
 * - API errors never end the process: publishing is retried with backoff
 *   (800 ms to 30 s) while the loop, /healthz and features.d watching go
 *   on; upstream exits and crash-loops. --oneshot still exits 1 when it
 *   could not publish.
 * - The published state is remembered: a pass that changes nothing makes no
 *   API request (upstream GETs every pass); the server is re-read after a
 *   409/404, and every ten minutes to catch drift (a deleted object).
 * - /healthz answers from the start, not only after the first publish.
 * - --no-publish (or core.noPublish) is upstream's dry run (a daemon unless
 *   --oneshot) without an API client (upstream needs a kubeconfig even
 *   then): each pass prints the labels (or with --print-features the
 *   NodeFeature) on standard output, and the node name is not checked
 *   (upstream never checks it; publishing here needs an object name).
 * - An owner reference that cannot be built (no POD_NAME/POD_UID, Pod or
 *   Node unreadable) is left out with a warning instead of being fatal.
 * - --host-prefix, --node-name, --print-features, --features-dir are ours;
 *   --port 0 picks a free port (logged). --bind-address IP is ours too
 *   (upstream listens on every interface with no way to choose; that stays
 *   the default); a value that is not an IP address exits 1.
 * - Executable hooks (source.d, removed upstream in v0.17) run only with
 *   sources.local.hooksEnabled: true, each without a shell, with a 10 s
 *   timeout and 64 KiB of output at most (upstream: neither). They run
 *   beside the loop (/healthz answers meanwhile), the pass ends when they
 *   do, and nothing a hook starts outlives it, setsid or not: the worker is
 *   a child subreaper and kills what is left (core/hooks.h).
 * - --standalone (ours): no NodeFeature and no master; the worker labels its
 *   own Node with nfd-master's bookkeeping (core/nodelabels). Only labels:
 *   no NodeFeatureRules, annotations, extended resources or taints. With the
 *   node's own credentials it writes no record label (NodeRestriction
 *   forbids it), so the feature-labels annotation is a hint: a stale label
 *   is removed only where the node could remove it itself (issue 16).
 * - What we publish stays within what the API takes (upstream sends it and
 *   fails): the NodeFeature within 1 MiB, its labels within 128 KiB; the
 *   longest instance lists lose their tails first, each cut a warning naming
 *   the feature (cap_spec, features_cap). --standalone bounds the labels.
 * - The custom source runs upstream's two built-in rules (rdma.capable,
 *   rdma.available), sources.custom and custom.d (--custom-dir) rules
 *   through the NodeFeatureRule engine (core/rules).
 * - nfd-worker.conf (core/nfdconf): every upstream key is implemented,
 *   core.klog.* as upstream merges it (a klog flag given on the command line
 *   wins); unknown keys are warned about.
 * - features.d, custom.d and source.d are written by others (other
 *   containers, tools, local users): a symlink in them is followed only while
 *   it stays inside the directory (hostfs_open_beneath; ConfigMap "..data"
 *   links work, a link to the service account token is skipped with a
 *   warning); a features.d key that could be no feature name is dropped.
 * - features.d: at most FEATFILE_MAX_FILES (1,024) files are read, the first
 *   by name, with a warning giving the count (a hundred times what
 *   deployments use, one file per tool or ConfigMap key; it bounds a pass at
 *   64 MiB read); memory is bounded by the largest file, not the sum (each
 *   file is parsed and dropped before the next; 2 MiB kept at most). custom.d:
 *   1,024 entries per directory.
 * - A features.d change re-runs the local source and the custom rules (which
 *   may match local features; upstream leaves them stale until the next
 *   full pass) over the built-in sources' last full result, at most once a
 *   second (upstream's notifier rate) and never dropping the last change
 *   (upstream drops events inside its one-second window). Hooks are not
 *   re-run for it (upstream's local source would): their last output is
 *   used, and the next full pass runs them.
 */
#include "applets.h"

#include "../core/app.h"
#include "../core/err.h"
#include "../core/featfile.h"
#include "../core/features.h"
#include "../core/hooks.h"
#include "../core/hostfs.h"
#include "../core/http.h"
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/labels.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "../core/nfdconf.h"
#include "../core/nfdsrc.h"
#include "../core/nodelabels.h"
#include "../core/opt.h"
#include "../core/re.h"
#include "../core/sysfs.h"
#include "../core/version.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"Usage: nfd-worker [OPTIONS]\n"
	"\n"
	"Discover the node's hardware and system features (pci, usb, cpu, kernel,\n"
	"memory, network, storage, system, and local features.d files) and publish\n"
	"them as the NodeFeature object named after the node, for nfd-master.\n";

#define DEFAULT_CONFIG "/etc/kubernetes/node-feature-discovery/nfd-worker.conf"
#define DEFAULT_FEATURES_DIR "/etc/kubernetes/node-feature-discovery/features.d"
#define DEFAULT_HOOKS_DIR "/etc/kubernetes/node-feature-discovery/source.d"
#define DEFAULT_CUSTOM_DIR "/etc/kubernetes/node-feature-discovery/custom.d"
#define DRIFT_MS (600 * 1000LL) /* re-check the server's copy: someone may have deleted it */
#define LOCAL_MIN_MS 1000LL /* features.d changes are read at most once a second */

/* The one-shot paths end the process right after: handing every page of a
 * large feature tree back to the kernel only costs munmap calls (busybox's
 * FEATURE_CLEAN_UP reasoning). The sanitizer build frees, so leak checking
 * still sees everything. */
#if defined(__SANITIZE_ADDRESS__)
#define FREE_AT_EXIT(x) x
#else
#define FREE_AT_EXIT(x) ((void)0)
#endif

/* The sources' names in upstream's sorted order: bit i of the masks is
 * nfdsrc_sources[i] (core/nfdsrc). */
static const char *const *const known_sources = nfdsrc_names;
enum { SRC_LOCAL = NFDSRC_LOCAL, SRC_COUNT = NFDSRC_COUNT };

struct worker {
	struct fb_log log;
	struct hostfs h;
	struct nfd_worker_config cfg;
	struct nfdsrc_config src;
	unsigned long long feat_mask, label_mask;
	struct re whitelist;
	int have_whitelist;
	const char *features_dir, *hooks_dir, *custom_dir;
	int standalone;
	struct json *applied;          /* --standalone: the labels last written, owned */
	char node[256], ns[254];
	const char *pod_uid;
	char node_label[300];          /* node="..." for metrics */
	struct loop *l;
	struct kube *k;
	struct http_server *srv;
	struct metrics m;
	int m_duration, m_errors, m_publishes, m_build;
	char path[700], collection[400];
	struct json *owner_refs;       /* owned array */
	int owners;                    /* NFDCONF_OWNER_* mask */
	int owners_pending;            /* a lookup failed transiently: build them again */
	struct json *published;        /* the object we last made the server hold, owned */
	struct json *server;           /* the server's copy as last seen, owned */
	char rv[64];
	struct json *spec;             /* the spec to publish, owned */
	struct hooks *hooks;           /* hooksEnabled: the source.d runner, else NULL */
	struct json *hook_labels, *hook_features; /* the last run's output, owned */
	int publish_pending;
	int watch_fd;                  /* inotify on features.d, -1 */
	int retry_timer, debounce_timer;
	long long local_at;            /* when a features.d change was last read */
	struct json *base_features;    /* the built-in sources' result of the last */
	struct json *base_labels;      /* full pass, owned (a daemon's only) */
	struct kube_backoff bo;
	int ok;                        /* first publish done */
	int print_features;            /* --no-publish: print the NodeFeature, not the labels */
};
/* ---- publishing --------------------------------------------------------- */

/* The NodeFeature object we want on the server. Owned by the caller. */
static struct json *nodefeature_object(struct worker *w, const struct json *spec)
{
	struct json *o = json_new_object(), *md = json_new_object(), *lab = json_new_object(),
		    *ann = json_new_object();

	if (!o || !md || !lab || !ann)
		goto nomem;
	if (json_set_str(o, "apiVersion", "nfd.k8s-sigs.io/v1alpha1") < 0 ||
	    json_set_str(o, "kind", "NodeFeature") < 0 || json_set_str(md, "name", w->node) < 0 ||
	    json_set_str(md, "namespace", w->ns) < 0 ||
	    json_set_str(lab, "nfd.node.kubernetes.io/node-name", w->node) < 0 ||
	    json_set_str(ann, "nfd.node.kubernetes.io/worker.version", FB_VERSION) < 0 ||
	    (w->pod_uid && *w->pod_uid &&
	     json_set_str(ann, "nfd.node.kubernetes.io/worker.pod.uid", w->pod_uid) < 0))
		goto nomem;
	if (json_set_take(md, "labels", lab) < 0) {
		lab = NULL;
		goto nomem;
	}
	lab = NULL;
	if (json_set_take(md, "annotations", ann) < 0) {
		ann = NULL;
		goto nomem;
	}
	ann = NULL;
	if (json_count(w->owner_refs) && json_set_take(md, "ownerReferences", json_dup(w->owner_refs)) < 0)
		goto nomem;
	if (json_set_take(o, "metadata", md) < 0) {
		md = NULL;
		goto nomem;
	}
	md = NULL;
	if (json_set_take(o, "spec", json_dup(spec)) < 0)
		goto nomem;
	return o;
nomem:
	json_free(lab);
	json_free(ann);
	json_free(md);
	json_free(o);
	return NULL;
}

/* What we compare: the parts of the object we own. */
static int same_object(const struct json *have, const struct json *want)
{
	static const char *const md_keys[] = { "labels", "annotations", "ownerReferences" };
	const struct json *hm = json_get(have, "metadata"), *wm = json_get(want, "metadata");

	for (size_t i = 0; i < 3; i++) {
		const struct json *a = json_get(hm, md_keys[i]), *b = json_get(wm, md_keys[i]);

		if (!a != !b || (a && !json_equal(a, b)))
			return 0;
	}
	return json_equal(json_get(have, "spec"), json_get(want, "spec"));
}

static void remember(struct worker *w, const struct json *server_obj, const struct json *want)
{
	json_free(w->published);
	w->published = json_dup(want);
	json_free(w->server);
	w->server = json_dup(server_obj);
	snprintf(w->rv, sizeof(w->rv), "%s",
		 json_get_str(json_get(server_obj, "metadata"), "resourceVersion", ""));
}

/* Makes the server hold want. Uses the cache: no request when nothing
 * changed since the last publish (unless confirm). Returns 0 or a negative
 * fb_err after logging. */
static int publish(struct worker *w, const struct json *spec, int confirm)
{
	struct json *want = nodefeature_object(w, spec);
	struct kube_result res = { 0 };
	struct fb_errinfo ei;
	char msg[1200];
	int rc = -FB_EIO, tries;

	if (!want) {
		LOG_E(&w->log, "out of memory building the NodeFeature");
		return -FB_ENOMEM;
	}
	if (!confirm && w->published && json_equal(w->published, want)) {
		json_free(want);
		return 0; /* steady state: nothing to say */
	}
	fb_errinfo_init(&ei);
	for (tries = 0; tries < 3; tries++) {
		int have_rv = w->published && w->rv[0] && !confirm;

		kube_result_free(&res);
		if (!have_rv) {
			rc = kube_request(w->k, "GET", w->path, NULL, NULL, 0, &res, &ei);
			if (rc < 0)
				goto fail;
			if (res.status == 404) {
				kube_result_free(&res);
				rc = kube_request_json(w->k, "POST", w->collection, "application/json", want, &res, &ei);
				if (rc < 0)
					goto fail;
				if (res.status == 409) /* created meanwhile: read it and replace */
					continue;
				if (res.status / 100 != 2)
					goto status;
				remember(w, res.body, want);
				LOG_I(&w->log, "created NodeFeature %s/%s", w->ns, w->node);
				goto done;
			}
			if (res.status != 200)
				goto status;
			snprintf(w->rv, sizeof(w->rv), "%s",
				 json_get_str(json_get(res.body, "metadata"), "resourceVersion", ""));
			json_free(w->server);
			w->server = json_dup(res.body);
			if (same_object(res.body, want)) {
				remember(w, res.body, want);
				goto done;
			}
		}
		/* replace, carrying the resourceVersion we know of, on top of the
		 * server's copy so metadata others own (finalizers...) survives */
		{
			struct json *put = json_dup(w->server ? w->server : want), *md, *wm;
			static const char *const ours[] = { "labels", "annotations", "ownerReferences" };

			if (!put)
				goto nomem;
			md = json_get(put, "metadata");
			wm = json_get(want, "metadata");
			for (size_t i = 0; md && i < 3; i++) {
				json_remove(md, ours[i]);
				if (json_get(wm, ours[i]) && json_set_take(md, ours[i], json_dup(json_get(wm, ours[i]))) < 0) {
					json_free(put);
					goto nomem;
				}
			}
			if (!md || json_set_str(md, "resourceVersion", w->rv) < 0 ||
			    json_set_take(put, "spec", json_dup(json_get(want, "spec"))) < 0) {
				json_free(put);
				goto nomem;
			}
			kube_result_free(&res);
			rc = kube_request_json(w->k, "PUT", w->path, "application/json", put, &res, &ei);
			json_free(put);
		}
		if (rc < 0)
			goto fail;
		if (res.status == 409 || res.status == 404) {
			/* someone else changed or deleted it: read it again */
			LOG_I(&w->log, "NodeFeature %s/%s: %d %s; reading it again", w->ns, w->node,
			      res.status, res.reason);
			json_free(w->published);
			w->published = NULL;
			json_free(w->server);
			w->server = NULL;
			w->rv[0] = '\0';
			continue;
		}
		if (res.status / 100 != 2)
			goto status;
		remember(w, res.body, want);
		LOG_I(&w->log, "updated NodeFeature %s/%s", w->ns, w->node);
		goto done;
	}
	LOG_E(&w->log, "NodeFeature %s/%s: kept changing under us; will try again", w->ns, w->node);
	rc = -FB_EIO;
	goto out;
status:
	LOG_E(&w->log, "NodeFeature %s/%s: HTTP %d %s: %s", w->ns, w->node, res.status, res.reason,
	      res.message);
	rc = -FB_EIO;
	goto out;
nomem:
	LOG_E(&w->log, "out of memory publishing the NodeFeature");
	rc = -FB_ENOMEM;
	goto out;
fail:
	if (rc != -FB_ECANCELED)
		LOG_E(&w->log, "publishing NodeFeature %s/%s: %s", w->ns, w->node,
		      fb_errinfo_str(&ei, msg, sizeof(msg)));
	goto out;
done:
	rc = 0;
out:
	kube_result_free(&res);
	json_free(want);
	return rc;
}

/* --standalone: the labels go straight onto our Node, with the bookkeeping
 * nfd-master keeps (core/nodelabels), so a later switch to a master (or
 * back) removes nothing it should not. */
static int apply_standalone(struct worker *w, const struct json *spec, int confirm)
{
	struct nl_policy p;
	struct nl_set s = { 0 };
	struct nl_result res = { 0 };
	struct features f = { json_get(spec, "features") };
	struct fb_errinfo ei;
	char msg[1300];
	int rc;

	nl_policy_init(&p);
	if (!(s.labels = json_dup(json_get(spec, "labels"))) || nl_filter(&p, &s, &f, &w->log, NULL) < 0) {
		nl_set_free(&s);
		LOG_E(&w->log, "out of memory labelling the node");
		return -FB_ENOMEM;
	}
	if (!confirm && w->applied && json_equal(w->applied, s.labels)) {
		nl_set_free(&s);
		return 0;
	}
	fb_errinfo_init(&ei);
	rc = nl_apply(w->k, w->node, &p, &s, 0, &w->log, &res, &ei);
	if (rc == 0) {
		if (res.changed)
			LOG_I(&w->log, "node %s labelled (%zu labels)", w->node, json_count(s.labels));
		json_free(w->applied);
		w->applied = s.labels;
		s.labels = NULL;
	} else if (rc != -FB_ECANCELED) {
		LOG_E(&w->log, "labelling node %s: %s", w->node, fb_errinfo_str(&ei, msg, sizeof(msg)));
	}
	nl_set_free(&s);
	return rc;
}

/* ownerReferences per --owner-refs, in upstream's fixed order node, pod, ds,
 * all with blockOwnerDeletion false. pod needs POD_NAME and POD_UID; ds reads
 * our Pod; node reads our Node. A reference that cannot be made is left out
 * with a warning (upstream exits; we keep publishing). */
static int add_owner(struct json *refs, const char *api, const char *kind, const char *name,
		     const char *uid)
{
	struct json *r = json_new_object();

	if (!r || json_set_str(r, "apiVersion", api) < 0 || json_set_str(r, "kind", kind) < 0 ||
	    json_set_str(r, "name", name) < 0 || json_set_str(r, "uid", uid) < 0 ||
	    json_set_take(r, "blockOwnerDeletion", json_new_bool(0)) < 0) {
		json_free(r);
		return -FB_ENOMEM;
	}
	return json_append_take(refs, r);
}

/* A lookup that failed for a reason that may pass (no answer, 429, 5xx):
 * the references are built again before the next publish. */
static int transient(int rc, const struct kube_result *res)
{
	return rc < 0 || res->status == 429 || res->status / 100 == 5;
}

static void make_owner_refs(struct worker *w)
{
	int node = w->owners & NFDCONF_OWNER_NODE, pod = w->owners & NFDCONF_OWNER_POD,
	    ds = w->owners & NFDCONF_OWNER_DS, rc;
	const char *pod_name = getenv("POD_NAME");
	struct kube_result res;
	struct fb_errinfo ei;
	char path[600];

	json_free(w->owner_refs);
	w->owner_refs = json_new_array();
	w->owners_pending = 0;
	if (!w->owner_refs)
		return;
	if (node) {
		snprintf(path, sizeof(path), "/api/v1/nodes/%s", w->node);
		rc = kube_request(w->k, "GET", path, NULL, NULL, 0, &res, &ei);
		if (rc == 0 && res.status == 200)
			add_owner(w->owner_refs, "v1", "Node", w->node,
				  json_get_str(json_get(res.body, "metadata"), "uid", ""));
		else if ((w->owners_pending |= transient(rc, &res)))
			LOG_W(&w->log, "owner reference to Node %s: cannot read it yet; trying again", w->node);
		else
			LOG_W(&w->log, "owner reference to Node %s left out: HTTP %d", w->node, res.status);
		kube_result_free(&res);
	}
	if ((pod || ds) && (!pod_name || !*pod_name || !w->pod_uid || !*w->pod_uid)) {
		LOG_W(&w->log, "owner references to the Pod/DaemonSet left out: POD_NAME or POD_UID not set");
		return;
	}
	if (pod)
		add_owner(w->owner_refs, "v1", "Pod", pod_name, w->pod_uid);
	if (ds) {
		const struct json *d = NULL;
		int n = 0;

		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", w->ns, pod_name);
		rc = kube_request(w->k, "GET", path, NULL, NULL, 0, &res, &ei);
		if (rc == 0 && res.status == 200) {
			for (const struct json *r = json_child(json_getv(res.body, "metadata", "ownerReferences", NULL));
			     r; r = json_next(r)) {
				if (!strcmp(json_get_str(r, "kind", ""), "DaemonSet") &&
				    !strcmp(json_get_str(r, "apiVersion", ""), "apps/v1")) {
					d = r;
					n++;
				}
			}
			if (n == 1) { /* upstream copies the Pod's reference as it is */
				struct json *r = json_dup(d);

				if (r && json_set_take(r, "blockOwnerDeletion", json_new_bool(0)) == 0)
					json_append_take(w->owner_refs, r);
				else
					json_free(r);
			}
			else
				LOG_W(&w->log, "owner reference to the DaemonSet left out: Pod %s has %d", pod_name, n);
		} else if ((w->owners_pending |= transient(rc, &res))) {
			LOG_W(&w->log, "owner reference to the DaemonSet: cannot read Pod %s yet; trying again", pod_name);
		} else {
			LOG_W(&w->log, "owner reference to the DaemonSet left out: Pod %s: HTTP %d", pod_name, res.status);
		}
		kube_result_free(&res);
	}
}

/* ---- discovery ---------------------------------------------------------- */

static int enabled(unsigned long long mask, int src)
{
	return (mask >> src) & 1;
}

/* What we publish must be something the API takes: etcd refuses an object
 * over 1.5 MiB and the apiserver a body over 3 MiB. The NodeFeature is kept
 * to 1 MiB of JSON: a third of the way to etcd's limit is left for what the
 * server adds (metadata, and managedFields, which names every map key again).
 * Our metadata (names, annotations, owner references) fits in 16 KiB. The
 * labels are kept to 128 KiB: the master (or --standalone) lists their names
 * in a Node annotation, and all of a Node's annotations together may take
 * only 256 KiB. */
#define NF_MAX (1u << 20)
#define NF_META_MAX (16u << 10)
#define NF_LABELS_MAX (128u << 10)

/* Cuts spec to those bounds, with a warning per cut (core/features). Without
 * a NodeFeature (--standalone) only the labels are published. */
static void cap_spec(struct worker *w, struct json *spec)
{
	char what[600];

	if (w->standalone)
		snprintf(what, sizeof(what), "labels for node %s", w->node);
	else
		snprintf(what, sizeof(what), "NodeFeature %s%s%s", w->ns, *w->ns ? "/" : "", w->node);
	if (features_cap(spec, w->standalone ? (size_t)-1 : NF_MAX - NF_META_MAX, NF_LABELS_MAX, &w->log, what) < 0)
		LOG_E(&w->log, "%s: cannot be cut to size", what);
}

/* A pass: every enabled source (core/nfdsrc's registry) into a new spec
 * {features, labels}. With full 0 (a features.d change) the host sources do
 * not run: the files and rules stages run over the host sources' result of
 * the last full pass (as upstream, which re-discovers only the local source
 * on a features.d event); the discovery histogram counts full passes only,
 * as upstream's. */
static struct json *discover(struct worker *w, int full)
{
	const struct nfdsrc_ctx ctx = {
		.h = &w->h, .cfg = &w->src, .nodename = w->node, .features_dir = w->features_dir,
		.hook_labels = w->hooks ? w->hook_labels : NULL,
		.hook_features = w->hooks ? w->hook_features : NULL,
		.custom_rules = w->cfg.custom, .custom_dir = w->custom_dir, .fake = w->cfg.fake, .lg = &w->log,
	};
	struct features f;
	struct json *labels = json_new_object(), *spec = NULL;
	struct json *held[NFDSRC_COUNT] = { NULL }; /* the labels of prio > 0, applied last */
	long long t0 = loop_now_ms();
	int stage = NFDSRC_HOST, oom = 0;

	if (!labels || features_init(&f) < 0) {
		json_free(labels);
		return NULL;
	}
	if (!full && w->base_features && w->base_labels) {
		struct json *bf = json_dup(w->base_features), *bl = json_dup(w->base_labels);

		if (!bf || !bl) {
			json_free(bf);
			json_free(bl);
			features_free(&f);
			json_free(labels);
			return NULL;
		}
		features_free(&f);
		f.root = bf;
		json_free(labels);
		labels = bl;
		stage = NFDSRC_FILES;
	}
	full = stage == NFDSRC_HOST;
	for (; stage <= NFDSRC_RULES; stage++) {
		if (stage == NFDSRC_FILES && full && w->l) {
			/* a daemon: keep them for the passes features.d changes cause */
			json_free(w->base_features);
			json_free(w->base_labels);
			w->base_features = json_dup(f.root);
			w->base_labels = json_dup(labels);
		}
		for (int i = 0; i < NFDSRC_COUNT; i++) {
			const struct nfdsrc_source *s = nfdsrc_sources[i];
			struct json *lab = NULL;

			if (s->stage != (enum nfdsrc_stage)stage ||
			    !enabled(s->label_only ? w->label_mask : w->feat_mask, i))
				continue;
			/* as upstream: a label source only labels what its feature source found */
			if (enabled(s->label_only ? w->label_mask : w->label_mask & w->feat_mask, i)) {
				lab = s->prio ? (held[i] = json_new_object()) : labels;
				oom |= !lab;
			}
			s->discover(&ctx, &f, lab);
		}
	}
	/* labels by priority, lowest first: host sources < custom < local */
#define KEY(i) (nfdsrc_sources[i]->prio * NFDSRC_COUNT + (i))
	for (int done = -1; !oom;) {
		int next = -1;

		for (int i = 0; i < NFDSRC_COUNT; i++)
			if (held[i] && KEY(i) > done && (next < 0 || KEY(i) < KEY(next)))
				next = i;
		if (next < 0)
			break;
		for (const struct json *e = json_child(held[next]); e; e = json_next(e))
			json_set_str(labels, json_key(e), json_str(e));
		done = KEY(next);
	}
#undef KEY
	for (int i = 0; i < NFDSRC_COUNT; i++)
		json_free(held[i]);
	if (oom) {
		features_free(&f);
		json_free(labels);
		return NULL;
	}
	nfdsrc_labels_filter(labels, w->have_whitelist ? &w->whitelist : NULL, &w->log);
	for (size_t i = 0; i < w->cfg.core.no_publish_features.n; i++)
		features_drop(&f, w->cfg.core.no_publish_features.v[i]);
	features_sort(&f); /* upstream's (Go's) key order, so prints compare byte for byte */
	spec = json_new_object();
	if (spec && (json_set_take(spec, "features", f.root) < 0 || json_set_take(spec, "labels", labels) < 0)) {
		f.root = labels = NULL;
		json_free(spec);
		spec = NULL;
	} else if (spec) {
		f.root = labels = NULL;
	}
	features_free(&f);
	json_free(labels);
	if (spec)
		cap_spec(w, spec);
	if (full)
		metrics_observe(&w->m, w->m_duration, (double)(loop_now_ms() - t0) / 1000.0);
	LOG_V(&w->log, 1, "%s took %lld ms", full ? "discovery" : "local source", loop_now_ms() - t0);
	return spec;
}

/* ---- the loop ----------------------------------------------------------- */

static void on_retry(void *ctx);
static int dry_print(struct worker *w, const struct json *spec);

static void try_publish(struct worker *w, int confirm)
{
	if (!w->spec)
		return;
	if (w->cfg.core.no_publish) { /* a dry-run daemon: each pass printed */
		if (dry_print(w, w->spec) != 0)
			LOG_E(&w->log, "cannot write the labels to standard output");
		return;
	}
	if (w->owners_pending && !w->standalone) /* without them the NodeFeature dies with the Pod */
		make_owner_refs(w);
	if ((w->standalone ? apply_standalone(w, w->spec, confirm) : publish(w, w->spec, confirm)) == 0) {
		w->ok = 1;
		kube_backoff_reset(&w->bo);
		metrics_inc(&w->m, w->m_publishes, 1);
		return;
	}
	if (loop_signal(w->l))
		return;
	metrics_inc(&w->m, w->m_errors, 1);
	loop_timer_cancel(w->l, w->retry_timer);
	w->retry_timer = loop_timer(w->l, kube_backoff_next(&w->bo), on_retry, w);
}

static void on_retry(void *ctx)
{
	struct worker *w = ctx;

	w->retry_timer = 0;
	try_publish(w, 1);
}

/* Discovery with the hooks' output at hand, then publishing. */
static void pass_finish(struct worker *w, int full)
{
	struct json *spec = discover(w, full);

	if (!spec) {
		LOG_E(&w->log, "out of memory during discovery");
		return;
	}
	json_free(w->spec);
	w->spec = spec;
	if (!w->retry_timer) /* a retry is pending: it will publish the newest spec */
		try_publish(w, 0);
}

static void keep_hooks(struct worker *w, struct json *labels, struct json *features)
{
	json_free(w->hook_labels);
	json_free(w->hook_features);
	w->hook_labels = labels;
	w->hook_features = features;
}

static void on_hooks_done(void *ctx, struct json *labels, struct json *features, int ran)
{
	struct worker *w = ctx;

	(void)ran;
	keep_hooks(w, labels, features);
	pass_finish(w, 1);
}

/* One discovery pass. With hooks a full one ends when they do, from the
 * loop; a full pass asked for meanwhile is that one (it reads features.d at
 * its end). A local-only pass (full 0: a features.d change) does not run
 * the hooks again: it uses the last run's output. */
static void pass(struct worker *w, int full)
{
	if (full && w->hooks && enabled(w->feat_mask, SRC_LOCAL)) {
		if (hooks_busy(w->hooks))
			return;
		if (hooks_start(w->hooks, w->hooks_dir, on_hooks_done, w) == 0)
			return;
		LOG_E(&w->log, "hooks: cannot start a run; this pass uses the last one's output");
	}
	pass_finish(w, full);
}

/* hooksEnabled: the runner, on the loop (made here for --no-publish). */
static int setup_hooks(struct worker *w, struct fb_errinfo *ei)
{
	if (!w->cfg.local_hooks_enabled || !enabled(w->feat_mask, SRC_LOCAL))
		return 0;
	if (!w->l && loop_new(&w->l, ei) < 0)
		return -1;
	if (hooks_new(&w->hooks, w->l, HOOKS_TIMEOUT_MS, &w->log) < 0)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, "hooks", NULL);
	/* upstream says so at every pass; once is enough */
	LOG_W(&w->log, "sources.local.hooksEnabled: hooks in %s are deprecated (since NFD v0.12, removed in v0.17); "
	      "use feature files instead", w->hooks_dir);
	return 0;
}

/* --oneshot, --no-publish: the hooks before discover(), the loop run until
 * they end. -FB_ECANCELED after SIGTERM. */
static int hooks_now(struct worker *w)
{
	struct json *l, *f;
	int rc;

	if (!w->hooks || !enabled(w->feat_mask, SRC_LOCAL))
		return 0;
	rc = hooks_run(w->hooks, w->hooks_dir, &l, &f);
	if (rc == -FB_ECANCELED)
		return rc;
	if (rc < 0)
		LOG_E(&w->log, "hooks: %s", fb_strerror(rc));
	else
		keep_hooks(w, l, f);
	return 0;
}

static void on_sleep(void *ctx)
{
	struct worker *w = ctx;

	pass(w, 1);
	if (w->cfg.core.sleep_interval_ms > 0)
		loop_timer(w->l, w->cfg.core.sleep_interval_ms, on_sleep, w);
}

static void on_drift(void *ctx)
{
	struct worker *w = ctx;

	if (!w->retry_timer)
		try_publish(w, 1);
	loop_timer(w->l, DRIFT_MS, on_drift, w);
}

static void watch_features(struct worker *w);

static void on_debounced(void *ctx)
{
	struct worker *w = ctx;

	w->debounce_timer = 0;
	w->local_at = loop_now_ms();
	pass(w, 0);
}

static void on_inotify(void *ctx, int fd, short revents)
{
	struct worker *w = ctx;
	int what = featfile_watch_drain(fd);

	(void)revents;
	if (what < 0 || (what & FEATFILE_WATCH_GONE)) {
		loop_unwatch(w->l, fd);
		close(fd);
		w->watch_fd = -1;
	}
	/* A burst of writes is one pass, 100 ms after the first; a file
	 * rewritten without pause is read (and published) once a second, the
	 * rate upstream's notifier allows, with the last change always read:
	 * events while a pass is pending join it. */
	if (what != 0 && !w->debounce_timer) {
		long long wait = w->local_at + LOCAL_MIN_MS - loop_now_ms();

		w->debounce_timer = loop_timer(w->l, wait > 100 ? wait : 100, on_debounced, w);
	}
}

/* (Re)opens the inotify watch; a missing directory is tried again later. */
static void watch_features(struct worker *w)
{
	struct fb_errinfo ei;

	if (w->watch_fd >= 0 || !enabled(w->feat_mask | w->label_mask, SRC_LOCAL))
		return;
	w->watch_fd = featfile_watch_open(w->features_dir, &ei);
	if (w->watch_fd >= 0)
		loop_watch(w->l, w->watch_fd, POLLIN, on_inotify, w);
}

static void on_rewatch(void *ctx)
{
	struct worker *w = ctx;

	if (w->watch_fd < 0) {
		watch_features(w);
		if (w->watch_fd >= 0)
			pass(w, 0); /* it appeared: read it now */
	}
	loop_timer(w->l, 5000, on_rewatch, w);
}

/* ---- main --------------------------------------------------------------- */

static int print_labels(const struct json *labels)
{
	size_t n = json_count(labels), i = 0;
	const struct json **v = calloc(n + 1, sizeof(*v));

	if (!v)
		return 1;
	for (const struct json *e = json_child(labels); e; e = json_next(e))
		v[i++] = e;
	/* sorted by key, byte order */
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(json_key(v[b - 1]), json_key(v[b])) > 0; b--) {
			const struct json *t = v[b];

			v[b] = v[b - 1];
			v[b - 1] = t;
		}
	for (i = 0; i < n; i++)
		printf("%s=%s\n", json_key(v[i]), json_str(v[i]));
	free(v);
	return fflush(stdout) != 0 || ferror(stdout);
}

/* ---- options, configuration, setup, teardown ---------------------------- */

struct worker_opts {
	const char *config, *options, *kubeconfig, *host, *node_name, *bind_ip;
	const char *owner_refs, *feat_src, *label_src, *no_pub_feat;
	const char *features_dir, *hooks_dir, *custom_dir;
	int oneshot, no_publish, print_features, standalone, no_owner_refs;
	int seen_owner, seen_nopubfeat, seen_v;
	struct opt_list feature_gates;
	unsigned ignored; /* OPT_IGNORE bits: upstream's v0.16 flags */
	long verbosity, port;
	struct app_klog klog;
};

#define WO(member) offsetof(struct worker_opts, member)

static const struct opt worker_optv[] = {
	{ .lo = "config", .kind = OPT_STR, .off = WO(config), .arg = "PATH",
	  .help = "config file (default " DEFAULT_CONFIG "; missing = defaults)" },
	{ .lo = "options", .kind = OPT_STR, .off = WO(options), .arg = "YAML",
	  .help = "config in the file's format, applied over the file" },
	{ .lo = "kubeconfig", .kind = OPT_STR, .off = WO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)" },
	{ .lo = "oneshot", .kind = OPT_FLAG, .off = WO(oneshot),
	  .help = "discover and publish once, then exit (1 if publishing failed)" },
	{ .lo = "no-publish", .kind = OPT_FLAG, .off = WO(no_publish),
	  .help = "no API access: print the labels as key=value lines" },
	{ .lo = "print-features", .kind = OPT_FLAG, .off = WO(print_features),
	  .help = "with --no-publish: print the NodeFeature object as JSON instead" },
	{ .lo = "feature-sources", .kind = OPT_STR, .off = WO(feat_src), .arg = "LIST",
	  .help = "comma list of feature sources, \"all\", \"-name\" disables" },
	{ .lo = "label-sources", .kind = OPT_STR, .off = WO(label_src), .arg = "LIST",
	  .help = "comma list of label sources, \"all\", \"-name\" disables" },
	{ .lo = "no-publish-features", .kind = OPT_STR, .off = WO(no_pub_feat),
	  .seen = OPT_SEEN(struct worker_opts, seen_nopubfeat),
	  .arg = "LIST", .help = "features not to publish: \"src.feature\" or \"src.*\"" },
	{ .lo = "owner-refs", .kind = OPT_STR, .off = WO(owner_refs), .seen = OPT_SEEN(struct worker_opts, seen_owner),
	  .arg = "LIST", .help = "owner references of the NodeFeature: node,pod,ds (default pod,ds; empty: none)" },
	{ .lo = "port", .kind = OPT_INT, .off = WO(port), .min = 0, .max = 65535, .arg = "N",
	  .help = "serve /metrics and /healthz on this port (default 8080; 0: any free port)" },
	{ .lo = "bind-address", .kind = OPT_STR, .off = WO(bind_ip), .arg = "IP",
	  .help = "serve them on this address only (ours; default every interface)" },
	{ .lo = "host-prefix", .kind = OPT_STR, .off = WO(host), .arg = "P",
	  .help = "read host sys/proc/etc at P+\"sys\"... (default /host- if /host-sys exists, else /)" },
	{ .lo = "node-name", .kind = OPT_STR, .off = WO(node_name), .arg = "NAME",
	  .help = "the node (default $NODE_NAME, else the host name)" },
	{ .lo = "features-dir", .kind = OPT_STR, .off = WO(features_dir), .arg = "DIR",
	  .help = "local feature files (default " DEFAULT_FEATURES_DIR ")" },
	{ .lo = "hooks-dir", .kind = OPT_STR, .off = WO(hooks_dir), .arg = "DIR",
	  .help = "executable hooks, run when sources.local.hooksEnabled (default " DEFAULT_HOOKS_DIR ")" },
	{ .lo = "custom-dir", .kind = OPT_STR, .off = WO(custom_dir), .arg = "DIR",
	  .help = "custom source rule files (default " DEFAULT_CUSTOM_DIR ")" },
	{ .lo = "standalone", .kind = OPT_FLAG, .off = WO(standalone),
	  .help = "no nfd-master: label the own Node directly, no NodeFeature" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = WO(verbosity), .seen = OPT_SEEN(struct worker_opts, seen_v),
	  .min = 0, .max = 10, .arg = "N", .help = "log verbosity" },
	{ .lo = "feature-gates", .kind = OPT_STRS, .off = WO(feature_gates), .arg = "K=V,...",
	  .help = "upstream's gates (repeatable; checked as upstream checks them, no effect on the worker)" },
	{ .lo = "no-owner-refs", .kind = OPT_FLAG, .off = WO(no_owner_refs),
	  .help = "v0.17-v0.18: no ownerReferences (deprecated: --owner-refs=)" },
	/* upstream v0.16's flags, gone since v0.17 (gRPC to the master) or v0.18 */
	{ .lo = "server", .kind = OPT_IGNORE, .off = WO(ignored), .min = 0, .arg = "HOST:PORT",
	  .help = "v0.16's gRPC master address: the worker writes NodeFeatures through the API" },
	{ .lo = "server-name-override", .kind = OPT_IGNORE, .off = WO(ignored), .min = 1, .arg = "NAME",
	  .help = "v0.16's gRPC TLS: the worker writes NodeFeatures through the API" },
};

static const struct opt_spec worker_spec = { .name = "nfd-worker", .usage = usage, .opts = worker_optv,
					.nopts = sizeof(worker_optv) / sizeof(worker_optv[0]),
					.more = app_klog_opts, .nmore = APP_KLOG_NOPTS,
					.more_off = offsetof(struct worker_opts, klog), .more_title = APP_KLOG_TITLE };

/* Comma lists from flags replace the config's. Returns 0 or -FB_ENOMEM. */
static int flag_lists(struct worker *w, const struct worker_opts *o)
{
	struct { const char *s; struct nfd_strlist *l; int given; } fl[] = {
		{ o->feat_src, &w->cfg.core.feature_sources, o->feat_src != NULL },
		{ o->label_src, &w->cfg.core.label_sources, o->label_src != NULL },
		{ o->no_pub_feat, &w->cfg.core.no_publish_features, o->seen_nopubfeat },
		/* upstream v0.19: -no-owner-refs wins over -owner-refs */
		{ o->no_owner_refs ? "" : o->owner_refs, &w->cfg.core.owner_refs, o->seen_owner || o->no_owner_refs },
	};

	for (size_t i = 0; i < sizeof(fl) / sizeof(fl[0]); i++) {
		const char *items[64];
		char *copy;
		size_t n = 0;
		int rc;

		if (!fl[i].given)
			continue;
		if (!(copy = strdup(fl[i].s)))
			return -FB_ENOMEM;
		for (char *p = copy, *next; p && *p && n < 64; p = next) {
			next = strchr(p, ',');
			if (next)
				*next++ = '\0';
			if (*p)
				items[n++] = p;
		}
		rc = nfdconf_list_set(fl[i].l, items, n);
		free(copy);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Checks the flags and layers defaults < file < --options < flags into w.
 * Returns -1 to go on, else the exit status (the message printed). */
static int worker_configure(struct worker *w, struct worker_opts *o, char *addr, size_t addr_size)
{
	struct fb_errinfo ei;
	char msg[1200], hostname[256];
	int rc;

	fb_errinfo_init(&ei);
	if (http_addr_join(addr, addr_size, o->bind_ip, o->port, &ei) < 0) {
		fprintf(stderr, "nfd-worker: --bind-address %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	w->features_dir = o->features_dir;
	w->hooks_dir = o->hooks_dir;
	w->custom_dir = o->custom_dir;
	w->standalone = o->standalone;
	w->log.v = (int)o->verbosity;
	/* klog's flags first: everything logged from here on follows them
	 * (a -v in the config file still applies, as upstream's core.klog) */
	if ((rc = app_klog_apply(&o->klog, &w->log, "nfd-worker")) < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	if (app_feature_gates("nfd-worker", &o->feature_gates, NULL, NULL) < 0)
		return 2;
	fb_errinfo_init(&ei);
	if (nfdconf_load_file(&w->cfg, o->config, &w->log, &ei) < 0 ||
	    (o->options && nfdconf_apply_yaml(&w->cfg, o->options, strlen(o->options), "--options", &w->log, &ei) < 0)) {
		LOG_E(&w->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	if (!o->seen_v)
		w->log.v = w->cfg.core.klog_v;
	/* core.klog.* where no flag said otherwise, as upstream */
	if ((rc = app_klog_config(&o->klog, w->cfg.core.klog, &w->log, "nfd-worker", "core.klog")) < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	if (o->no_publish)
		w->cfg.core.no_publish = 1;
	app_warn_ignored(&worker_spec, o, &w->log);
	if (o->no_owner_refs)
		LOG_W(&w->log, "-no-owner-refs is deprecated, use -owner-refs=");
	if (flag_lists(w, o) < 0)
		return 1;
	w->owners = nfdconf_owner_refs(&w->cfg.core.owner_refs, &ei);
	if (w->owners < 0) {
		fprintf(stderr, "nfd-worker: --owner-refs: %s\n", ei.detail);
		return 2;
	}
	w->feat_mask = nfdconf_sources_mask(&w->cfg.core.feature_sources, known_sources, SRC_COUNT,
					    nfdsrc_all_mask(), "featureSources", &w->log);
	w->label_mask = nfdconf_sources_mask(&w->cfg.core.label_sources, known_sources, SRC_COUNT,
					     nfdsrc_all_mask(), "labelSources", &w->log);
	nfdsrc_config_init(&w->src);
#define LIST(dst, from) (dst).v = (from).v, (dst).n = (from).n
	LIST(w->src.cpu_blacklist, w->cfg.cpuid.attribute_blacklist);
	LIST(w->src.cpu_whitelist, w->cfg.cpuid.attribute_whitelist);
	LIST(w->src.kernel_config_opts, w->cfg.kernel.config_opts);
	LIST(w->src.pci_class_whitelist, w->cfg.pci.device_class_whitelist);
	LIST(w->src.pci_label_fields, w->cfg.pci.device_label_fields);
	LIST(w->src.usb_class_whitelist, w->cfg.usb.device_class_whitelist);
	LIST(w->src.usb_label_fields, w->cfg.usb.device_label_fields);
#undef LIST
	w->src.kernel_kconfig_file = w->cfg.kernel.kconfig_file;
	rc = nfdsrc_whitelist_setup(&w->whitelist, w->cfg.core.label_whitelist, &ei);
	if (rc < 0) {
		LOG_E(&w->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	w->have_whitelist = rc == 1;
	hostfs_init(&w->h);
	if (hostfs_setup(&w->h, o->host) < 0) {
		fprintf(stderr, "nfd-worker: --host-prefix is too long\n");
		return 2;
	}
	snprintf(w->node, sizeof(w->node), "%s", app_node_name(o->node_name, hostname, sizeof(hostname)));
	/* upstream checks nothing; publishing needs an object name, a dry run none */
	if (!w->cfg.core.no_publish && !labels_valid_prefix(w->node, strlen(w->node))) {
		LOG_E(&w->log, "node name \"%s\" is not a valid Kubernetes object name", w->node);
		return 2;
	}
	w->pod_uid = getenv("POD_UID");
	metrics_label(w->node_label, sizeof(w->node_label), "node", w->node);
	return -1;
}

static const double discovery_buckets[] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1 };

static void worker_metrics(struct worker *w)
{
	static const struct metrics_def defs[] = {
		{ METRIC_GAUGE, "nfd_worker_build_info", "version=\"" FB_VERSION "\"",
		  "Build information; the value is the start time", NULL, 0, offsetof(struct worker, m_build) },
	};
	static const struct metrics_def counters[] = {
		{ METRIC_COUNTER, "nfd_worker_publish_total", "", "NodeFeature publishes that succeeded", NULL, 0,
		  offsetof(struct worker, m_publishes) },
		{ METRIC_COUNTER, "nfd_worker_publish_errors_total", "", "NodeFeature publishes that failed and were retried",
		  NULL, 0, offsetof(struct worker, m_errors) },
	};

	metrics_add_table(&w->m, defs, 1, w);
	metrics_set(&w->m, w->m_build, (double)time(NULL));
	/* labelled with the node, known only now */
	w->m_duration = metrics_add_histogram(&w->m, "nfd_worker_feature_discovery_duration_seconds",
					      w->node_label, "Time taken by one feature discovery pass",
					      discovery_buckets, sizeof(discovery_buckets) / sizeof(discovery_buckets[0]));
	metrics_add_table(&w->m, counters, 2, w);
}

/* --no-publish: a pass's labels (or with --print-features the NodeFeature)
 * on standard output. Returns 0, or 1 when they could not be written. */
static int dry_print(struct worker *w, const struct json *spec)
{
	struct json *obj;
	char *s;
	int ret;

	if (!w->print_features)
		return print_labels(json_get(spec, "labels"));
	obj = nodefeature_object(w, spec);
	s = obj ? json_print(obj, NULL) : NULL;
	ret = s ? (printf("%s\n", s), fflush(stdout) != 0 || ferror(stdout)) : 1;
	free(s);
	json_free(obj);
	return ret;
}

/* --oneshot --no-publish: discover once and print. Returns the exit status. */
static int worker_print(struct worker *w)
{
	struct json *spec;
	struct fb_errinfo ei;
	char msg[1200];
	int ret;

	fb_errinfo_init(&ei);
	if (setup_hooks(w, &ei) < 0) {
		LOG_E(&w->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	if (hooks_now(w) < 0 || !(spec = discover(w, 1)))
		return 1;
	kube_own_namespace(NULL, w->ns, sizeof(w->ns));
	ret = dry_print(w, spec);
	FREE_AT_EXIT(json_free(spec));
	return ret;
}

/* --no-publish without --oneshot: upstream's dry-run daemon (a pass every
 * sleepInterval and on features.d changes, the probes), without an API
 * client: nothing is read from or written to the cluster. */
static int worker_dry_setup(struct worker *w)
{
	struct fb_errinfo ei;
	char msg[1200];

	fb_errinfo_init(&ei);
	if (loop_new(&w->l, &ei) < 0 || setup_hooks(w, &ei) < 0) {
		LOG_E(&w->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return -1;
	}
	kube_own_namespace(NULL, w->ns, sizeof(w->ns));
	return 0;
}

/* The loop, the API client, the hooks. Returns 0 or -1 (logged). */
static int worker_connect(struct worker *w, const struct worker_opts *o)
{
	struct kube_opts ko;
	struct fb_errinfo ei;
	char msg[1200];
	unsigned seed;
	int rc;

	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = o->kubeconfig;
	if (!o->oneshot) {
		/* the daemon's loop does the retrying (backoff timer): a request
		 * must not hold /healthz and features.d events for minutes */
		ko.max_attempts = 1;
		ko.timeout_ms = 5000;
	}
	if ((rc = loop_new(&w->l, &ei)) == 0)
		rc = kube_connect(&w->k, &ko, &w->log, loop_cancel_fd(w->l), w->ns, sizeof(w->ns), &ei);
	if (rc == 0)
		rc = setup_hooks(w, &ei);
	if (rc < 0) {
		LOG_E(&w->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return -1;
	}
	/* every container is PID 1: mix in the node so a fleet does not retry in step */
	seed = (unsigned)time(NULL) ^ (unsigned)loop_now_ms();
	for (const char *p = w->node; *p; p++)
		seed = seed * 31 + (unsigned char)*p;
	kube_backoff_init(&w->bo, ko.backoff_base_ms, ko.backoff_max_ms, seed);
	snprintf(w->collection, sizeof(w->collection), "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/%s/nodefeatures",
		 w->ns);
	snprintf(w->path, sizeof(w->path), "%s/%s", w->collection, w->node);
	return 0;
}

static void worker_free(struct worker *w)
{
	if (w->watch_fd >= 0)
		close(w->watch_fd);
	http_server_free(w->srv);
	hooks_free(w->hooks); /* before the loop it uses */
	json_free(w->hook_labels);
	json_free(w->hook_features);
	json_free(w->spec);
	json_free(w->base_features);
	json_free(w->base_labels);
	json_free(w->published);
	json_free(w->applied);
	json_free(w->server);
	json_free(w->owner_refs);
	kube_free(w->k);
	loop_free(w->l);
	if (w->have_whitelist)
		re_free(&w->whitelist);
	nfdconf_free(&w->cfg);
}

int nfd_worker_main(int argc, char **argv)
{
	struct worker w;
	struct worker_opts o = { .config = DEFAULT_CONFIG, .bind_ip = "", .port = 8080,
				 .features_dir = DEFAULT_FEATURES_DIR, .hooks_dir = DEFAULT_HOOKS_DIR,
				 .custom_dir = DEFAULT_CUSTOM_DIR };
	struct app_probes probes;
	char addr[80], where[96];
	int rc, ret = 1;

	memset(&w, 0, sizeof(w));
	w.watch_fd = -1;
	log_init(&w.log);
	nfdconf_init(&w.cfg);
	metrics_init(&w.m);
	app_klog_init(&o.klog);
	if ((rc = opt_parse_only(&worker_spec, &o, argc, argv)) >= 0)
		return rc;
	if ((rc = worker_configure(&w, &o, addr, sizeof(addr))) >= 0) {
		ret = rc;
		goto out;
	}
	worker_metrics(&w);
	w.print_features = o.print_features;
	if (w.cfg.core.no_publish && o.oneshot) {
		ret = worker_print(&w);
		goto out;
	}
	/* publishing needs the API; a dry run only the loop */
	if (w.cfg.core.no_publish ? worker_dry_setup(&w) < 0 : worker_connect(&w, &o) < 0)
		goto out;
	if (!o.oneshot) { /* probes get answers before the first API request */
		probes = (struct app_probes){ .mx = &w.m };
		snprintf(where, sizeof(where), "%s%.80s", *o.bind_ip ? " of " : "", o.bind_ip);
		/* on failure the probes fail and say so; discovery and publishing go on */
		app_serve(&w.srv, w.l, addr, &probes, &w.log, "/healthz and /metrics", where);
	}
	if (o.oneshot) {
		if (!w.standalone)
			make_owner_refs(&w);
		if (hooks_now(&w) < 0)
			goto out;
		w.spec = discover(&w, 1);
		ret = w.spec && (w.standalone ? apply_standalone(&w, w.spec, 1) : publish(&w, w.spec, 0)) == 0 ? 0 : 1;
		goto out;
	}
	w.owners_pending = 1; /* built by the first publish, inside the loop */
	watch_features(&w);
	loop_timer(w.l, 0, on_sleep, &w);
	if (!w.cfg.core.no_publish)
		loop_timer(w.l, DRIFT_MS, on_drift, &w);
	loop_timer(w.l, 5000, on_rewatch, &w);
	loop_run(w.l);
	LOG_I(&w.log, "stopping (signal %d)", loop_signal(w.l));
	ret = 0;
out:
	worker_free(&w);
	return ret;
}
