/* gpu-node-agent: one PhysicalGPU object per accelerator, and a vendor label on the Node.
 *
 * Mirrors the Deckhouse `gpu` module's gpu-node-agent
 * (https://deckhouse.io/modules/gpu/; public prototype
 * aleksandr-podmoskovniy/gpu-control-plane, images/gpu-artifact): scan the
 * host's PCI devices and the PCI ID database, keep one cluster-scoped
 * PhysicalGPU (gpu.deckhouse.io/v1alpha1) per device whose class and vendor
 * are configured, and label the Node gpu.deckhouse.io/vendor=<vendor>.
 * Deliberate deviations (the module's own source is not public; the formats
 * are ours and documented in README.md):
 * - Vendors come from the gpu-supported-vendors ConfigMap (data: vendor name
 *   -> comma list of 4-hex PCI vendor IDs, optional "classes") or
 *   --vendors-file, not only NVIDIA as in the prototype.
 * - Objects are named <node>-<pci address> (stable across rescans), not
 *   <node>-<index>-<vendor>-<device>.
 * - status has nodeInfo, pciInfo (plus subsystem, revision, numaNode,
 *   iommuGroup, bootVGA, link), currentState{driver, driverType} with None
 *   and Other added to the driverType enum, and the conditions Present and
 *   DriverBound. capabilities come from tables (pci.ids chip codes and
 *   families, NVIDIA device-ID ranges: approximate where a table is) and the
 *   kernel (amdgpu/i915 memory, NVIDIA's procfs), not NVML/ROCm.
 * - Beyond the module: the Node also gets gpu.deckhouse.io/vendor.<v>=true
 *   for every vendor present, so each vendor's adapter can select a mixed
 *   node; --features-file writes the vendors' own labellers' labels
 *   (GFD's nvidia.com/..., ROCm's amd.com/..., Intel's gpu.intel.com/...) as an NFD
 *   features file with an expiry (pgpu_feat.c; differences in README.md).
 * - No watch of PhysicalGPU objects: the agent remembers what it wrote and
 *   re-lists every --resync (default 5m), so a deleted or edited object is
 *   repaired then. No Events are emitted.
 * - API errors never end the daemon: it backs off (800 ms to 30 s) and
 *   converges later. --oneshot syncs once and exits 1 when it could not.
 * - Flags: --host-prefix (as nfd-worker) replaces --sysfs-path and
 *   --os-release-path; --pci-ids is repeatable instead of a comma list.
 *   --health-probe-bind-address HOST:PORT and $HEALTH_PROBE_BIND_ADDRESS are
 *   the prototype's (default :8081); /metrics is served on the same address,
 *   and --port N (ours) means ":N". A bad address exits 1 naming it.
 */
#include "applets.h"

#include "../core/app.h"
#include "../core/buf.h"
#include "../core/err.h"
#include "../core/featfile.h"
#include "../core/hostfs.h"
#include "../core/http.h"
#include "../core/informer.h"
#include "../core/ids.h"
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/labels.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "../core/opt.h"
#include "../core/pci.h"
#include "../core/pgpu.h"
#include "../core/version.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"Usage: gpu-node-agent [OPTIONS]\n"
	"\n"
	"Find the node's GPUs and accelerators (PCI class 03, 12, 0b40 from the vendors\n"
	"in the gpu-supported-vendors ConfigMap), keep one PhysicalGPU object per device\n"
	"and label the Node gpu.deckhouse.io/vendor=VENDOR. --oneshot --no-publish prints\n"
	"the devices as JSON instead.\n";

#define DEFAULT_CM "gpu-supported-vendors"
#define DEBOUNCE_MS 1000

#if defined(__SANITIZE_ADDRESS__)
#define FREE_AT_EXIT(x) x
#else
#define FREE_AT_EXIT(x) ((void)0)
#endif

struct agent {
	struct fb_log log;
	struct hostfs h;
	struct ids *ids;
	struct pgpu_vmap vm;
	int vm_ready;             /* the ConfigMap (or its absence) has been read */
	const char *vendors_file;
	char node[254], cm_ns[254], cm_name[254];
	struct json *node_info;   /* status.nodeInfo, owned; made once */
	struct loop *l;
	struct kube *k;
	struct http_server *srv;
	struct metrics m;
	int m_devices, m_syncs, m_errors, m_build;
	struct json *server;      /* our PhysicalGPUs as the server has them, name -> object; owned; NULL: list first */
	struct json *node_labels; /* our labels on the Node as last seen, owned; NULL: GET first */
	struct informer cm;       /* the vendors ConfigMap, listed and watched */
	int cm_listing, cm_seen, cm_changed; /* during a list: the map was in it; it changed */
	int in_pass;              /* a pass is running: it uses a changed map itself */
	long long resync_ms;
	int retry_timer, debounce_timer;
	struct kube_backoff bo;
	int nl_fd;
	int ready;
	const char *feat_path;    /* --features-file, NULL: none */
	const char *feat_verify;  /* --features-verify, NULL: none */
	long long feat_expiry_ms; /* --features-expiry */
	long long started;        /* unix seconds: gfd.timestamp */
	char *feat_last;          /* the labels last written, owned */
	long long feat_at;        /* loop_now_ms() of that write */
};

/* ---- publishing --------------------------------------------------------- */

/* Our keys among a Node's labels: gpu.deckhouse.io/vendor, /vendor.<x> and
 * /<x>.count. */
static int our_node_key(const char *k)
{
	size_t n;

	if (strncmp(k, PGPU_GROUP "/", sizeof(PGPU_GROUP)) != 0)
		return 0;
	k += sizeof(PGPU_GROUP);
	n = strlen(k);
	return strcmp(k, "vendor") == 0 || (strncmp(k, "vendor.", 7) == 0 && k[7]) ||
	       (n > 6 && strcmp(k + n - 6, ".count") == 0);
}

static void remember_node(struct agent *a, const struct json *node)
{
	struct json *ours = json_new_object();

	for (const struct json *l = json_child(json_getv(node, "metadata", "labels", NULL)); ours && l; l = json_next(l))
		if (our_node_key(json_key(l)) && json_str(l))
			json_set_str(ours, json_key(l), json_str(l));
	json_free(a->node_labels);
	a->node_labels = ours;
}

/* Logs a failed request. Returns -1. */
static int req_fail(struct agent *a, const char *what, int rc, const struct kube_result *res,
		    const struct fb_errinfo *ei)
{
	char msg[600];

	if (rc < 0)
		LOG_E(&a->log, "%s: %s", what, fb_errinfo_str(ei, msg, sizeof(msg)));
	else
		LOG_E(&a->log, "%s: HTTP %d %s", what, res->status, res->message);
	return -1;
}

/* One request whose 2xx body replaces *keep (when keep is given). Returns
 * the HTTP status (0 after a transport error, logged unless ok404). */
static int call(struct agent *a, const char *method, const char *path, const char *ctype, const struct json *body,
		struct json **keep, const char *what)
{
	struct kube_result res;
	struct fb_errinfo ei;
	int rc, status;

	fb_errinfo_init(&ei);
	rc = kube_request_json(a->k, method, path, ctype, body, &res, &ei);
	status = rc < 0 ? 0 : res.status;
	if (status >= 200 && status < 300) {
		if (keep) {
			json_free(*keep);
			*keep = res.body;
			res.body = NULL;
		}
	} else if (status != 404 || strcmp(method, "DELETE") != 0) {
		req_fail(a, what, rc, &res, &ei);
	}
	kube_result_free(&res);
	return status;
}

/* Lists our objects into a->server. Returns 0 or -1. */
static int list_ours(struct agent *a)
{
	char path[600], rv[64];
	struct json *items = NULL, *map = json_new_object();
	struct fb_errinfo ei;
	char msg[600];

	fb_errinfo_init(&ei);
	snprintf(path, sizeof(path), PGPU_PATH "?labelSelector=" PGPU_GROUP "%%2Fnode%%3D%s", a->node);
	if (!map || kube_list(a->k, path, &items, rv, sizeof(rv), &ei) < 0) {
		if (map)
			LOG_E(&a->log, "listing PhysicalGPUs: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		json_free(map);
		return -1;
	}
	for (const struct json *o = json_child(items); o; o = json_next(o)) {
		const char *n = json_get_str(json_get(o, "metadata"), "name", NULL);

		/* the selector is the server's business; this guards against a
		 * server that ignores it: never touch another node's objects */
		if (n && !strcmp(json_get_str(json_getv(o, "metadata", "labels", NULL), PGPU_GROUP "/node", ""), a->node))
			json_set_take(map, n, json_dup(o));
	}
	json_free(items);
	json_free(a->server);
	a->server = map;
	return 0;
}

static int sync_object(struct agent *a, const char *name, const struct json *want)
{
	struct json *have = json_dup(json_get(a->server, name)), *st, *patch = NULL;
	const struct json *wl = json_get(want, "labels");
	char path[600], what[400];
	int s, rc = -1;

	snprintf(path, sizeof(path), PGPU_PATH "/%s", name);
	if (!have) {
		struct json *o = json_new_object(), *md = json_new_object();

		snprintf(what, sizeof(what), "creating PhysicalGPU %s", name);
		if (o && md && json_set_str(o, "apiVersion", PGPU_API) == 0 &&
		    json_set_str(o, "kind", "PhysicalGPU") == 0 && json_set_str(md, "name", name) == 0 &&
		    json_set_take(md, "labels", json_dup(wl)) == 0 && json_set_take(o, "metadata", md) == 0 &&
		    (md = NULL, json_set_take(o, "spec", json_new_object()) == 0)) {
			s = call(a, "POST", PGPU_PATH, "application/json", o, &have, what);
			if (s == 201 || s == 200)
				LOG_I(&a->log, "created PhysicalGPU %s", name);
		} else {
			s = 0;
		}
		json_free(md);
		json_free(o);
		if (!have && s == 409) {
			/* an object of that name without our node label (edited, or a
			 * node name that normalises the same): not ours to take over;
			 * the other devices still sync, and /readyz still comes */
			LOG_W(&a->log, "PhysicalGPU %s exists but is not labelled for node %s: skipping that device",
			      name, a->node);
			rc = 0;
			goto out;
		}
		if (!have)
			goto out;
	} else {
		int same = 1;

		for (const struct json *l = json_child(wl); l; l = json_next(l))
			same &= !strcmp(json_get_str(json_getv(have, "metadata", "labels", NULL), json_key(l), "\x01"),
					json_str(l));
		if (!same) {
			struct json *p = json_new_object(), *md = json_new_object();

			snprintf(what, sizeof(what), "labelling PhysicalGPU %s", name);
			if (!p || !md || json_set_take(md, "labels", json_dup(wl)) < 0 ||
			    json_set_take(p, "metadata", md) < 0) {
				json_free(md);
				json_free(p);
				goto out;
			}
			s = call(a, "PATCH", path, "application/merge-patch+json", p, &have, what);
			json_free(p);
			if (s != 200)
				goto out;
		}
	}
	st = json_dup(json_get(want, "status"));
	if (!st)
		goto out;
	pgpu_condition_times(st, json_get(have, "status"));
	if (!json_equal(json_get(have, "status"), st)) {
		struct json *op = json_new_object();

		patch = json_new_array();
		if (!op || !patch || json_set_str(op, "op", "add") < 0 || json_set_str(op, "path", "/status") < 0 ||
		    json_set_take(op, "value", st) < 0 || (st = NULL, json_append_take(patch, op) < 0)) {
			json_free(op);
			json_free(st);
			goto out;
		}
		snprintf(what, sizeof(what), "updating the status of PhysicalGPU %s", name);
		strncat(path, "/status", sizeof(path) - strlen(path) - 1);
		s = call(a, "PATCH", path, "application/json-patch+json", patch, &have, what);
		if (s != 200)
			goto out;
		LOG_I(&a->log, "updated the status of PhysicalGPU %s", name);
	}
	json_free(st);
	rc = 0;
out:
	json_free(patch);
	if (have && rc == 0)
		json_set_take(a->server, name, have);
	else
		json_free(have);
	return rc;
}

static int sync_node(struct agent *a, const struct json *want)
{
	struct json *patch = NULL, *labels = NULL, *md, *node = NULL;
	char path[400];
	int rc = -1;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", a->node);
	if (!a->node_labels) {
		if (call(a, "GET", path, NULL, NULL, &node, "reading the Node") != 200)
			goto out;
		remember_node(a, node);
		json_free(node);
		node = NULL;
	}
	if (!(labels = json_new_object()))
		goto out;
	for (const struct json *l = json_child(want); l; l = json_next(l))
		if (strcmp(json_get_str(a->node_labels, json_key(l), "\x01"), json_str(l)) != 0)
			json_set_str(labels, json_key(l), json_str(l));
	for (const struct json *l = json_child(a->node_labels); l; l = json_next(l))
		if (!json_get(want, json_key(l)))
			json_set_take(labels, json_key(l), json_new_null());
	if (!json_count(labels)) {
		rc = 0;
		goto out;
	}
	patch = json_new_object();
	md = json_new_object();
	if (!patch || !md) {
		json_free(md);
		goto out;
	}
	{
		int taken = json_set_take(md, "labels", labels); /* frees labels when it fails */

		labels = NULL;
		if (taken < 0) {
			json_free(md);
			goto out;
		}
	}
	if (json_set_take(patch, "metadata", md) < 0) /* frees md when it fails */
		goto out;
	if (call(a, "PATCH", path, "application/merge-patch+json", patch, &node, "labelling the Node") != 200)
		goto out;
	LOG_I(&a->log, "labelled Node %s (gpu.deckhouse.io/vendor=%s)", a->node,
	      json_get_str(want, PGPU_GROUP "/vendor", "<none>"));
	remember_node(a, node);
	rc = 0;
out:
	json_free(node);
	json_free(labels);
	json_free(patch);
	return rc;
}

/* Makes the server match want. Returns 0, or -1 (logged) with the caches
 * dropped so the next try starts from the server's state. */
static int sync_all(struct agent *a, const struct json *want)
{
	struct json *nl = pgpu_node_labels(want);
	int rc = 0;

	if (!nl || (!a->server && list_ours(a) < 0)) {
		rc = -1;
		goto out;
	}
	for (const struct json *e = json_child(want); e; e = json_next(e))
		if (sync_object(a, json_key(e), e) < 0)
			rc = -1;
	for (const struct json *o = json_child(a->server), *next; o; o = next) {
		char path[600], what[400];
		int s;

		next = json_next(o);
		if (json_get(want, json_key(o)))
			continue;
		snprintf(path, sizeof(path), PGPU_PATH "/%s", json_key(o));
		snprintf(what, sizeof(what), "deleting PhysicalGPU %s", json_key(o));
		s = call(a, "DELETE", path, NULL, NULL, NULL, what);
		if (s == 200 || s == 202 || s == 404) {
			char name[254];

			/* json_remove looks the name up again after freeing the member */
			snprintf(name, sizeof(name), "%s", json_key(o));
			LOG_I(&a->log, "deleted PhysicalGPU %s (device gone)", name);
			json_remove(a->server, name);
		} else {
			rc = -1;
		}
	}
	if (sync_node(a, nl) < 0)
		rc = -1;
out:
	json_free(nl);
	metrics_inc(&a->m, rc == 0 ? a->m_syncs : a->m_errors, 1);
	if (rc < 0) {
		json_free(a->server);
		a->server = NULL;
		json_free(a->node_labels);
		a->node_labels = NULL;
	}
	return rc;
}

/* ---- the ConfigMap ------------------------------------------------------ */

/* Takes the ConfigMap (NULL: it does not exist). Returns 1 when the map changed. */
static int cm_apply(struct agent *a, const struct json *cm)
{
	struct pgpu_vmap vm;
	char what[600];

	snprintf(what, sizeof(what), "ConfigMap %s/%s", a->cm_ns, a->cm_name);
	if (cm) {
		pgpu_vmap_from_data(&vm, json_get(cm, "data"), what, &a->log);
	} else {
		LOG_W(&a->log, "%s not found: using the built-in vendors amd=1002, intel=8086, metax=9999, nvidia=10de", what);
		pgpu_vmap_default(&vm);
	}
	if (a->vm_ready && memcmp(&vm, &a->vm, sizeof(vm)) == 0)
		return 0;
	if (a->vm_ready)
		LOG_I(&a->log, "%s changed: re-evaluating the devices", what);
	a->vm = vm;
	a->vm_ready = 1;
	return 1;
}

static void schedule(struct agent *a, long long ms);

/* The ConfigMap through core/informer: a field-selected list and watch of
 * the one name; a changed map read outside a pass schedules one. */
static int cm_is_ours(const struct agent *a, const struct json *obj)
{
	return strcmp(json_get_str(json_get(obj, "metadata"), "name", ""), a->cm_name) == 0;
}

static void cm_begin(void *ctx)
{
	struct agent *a = ctx;

	a->cm_listing = 1;
	a->cm_seen = 0;
	a->cm_changed = 0;
}

static void cm_changed(struct agent *a, int changed)
{
	if (changed && !a->in_pass)
		schedule(a, 0);
}

static int cm_event(void *ctx, const struct json *obj)
{
	struct agent *a = ctx;

	if (!cm_is_ours(a, obj))
		return 0;
	if (!a->cm_listing) { /* a watch event */
		cm_changed(a, cm_apply(a, obj));
		return 0;
	}
	a->cm_seen = 1;
	a->cm_changed |= cm_apply(a, obj);
	return 0;
}

static int cm_delete(void *ctx, const struct json *obj)
{
	struct agent *a = ctx;

	if (cm_is_ours(a, obj))
		cm_changed(a, cm_apply(a, NULL));
	return 0;
}

static void cm_end(void *ctx)
{
	struct agent *a = ctx;
	int changed = a->cm_changed;

	a->cm_listing = 0;
	if (!a->cm_seen)
		changed |= cm_apply(a, NULL);
	cm_changed(a, changed);
}

/* Starts the ConfigMap's informer (the first pass). Returns 0 when the
 * map was read, -1 when the list failed (the informer retries it). */
static int cm_start(struct agent *a)
{
	char path[700];
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)loop_now_ms();
	struct informer_conf c = { .what = "ConfigMap", .path = path, .log = &a->log, .ctx = a,
				   .begin = cm_begin, .apply = cm_event, .delete = cm_delete, .end = cm_end };

	for (const char *p = a->node; *p; p++)
		seed = seed * 31 + (unsigned char)*p;
	c.seed = seed + 1;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3D%s", a->cm_ns,
		 a->cm_name);
	informer_init(&a->cm);
	if (informer_setup_kube(&a->cm, a->k, a->l, &c) < 0)
		return -1;
	informer_start(&a->cm);
	return informer_synced(&a->cm) ? 0 : -1;
}

/* Reads the ConfigMap once (the --oneshot way). Returns 0 or -1. */
static int cm_get(struct agent *a)
{
	struct json *cm = NULL;
	char path[700];
	int s;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", a->cm_ns, a->cm_name);
	s = call(a, "GET", path, NULL, NULL, &cm, "reading the vendors ConfigMap");
	if (s == 200 || s == 404)
		cm_apply(a, s == 200 ? cm : NULL);
	json_free(cm);
	return s == 200 || s == 404 ? 0 : -1;
}

static struct json *discover(struct agent *a)
{
	struct pgpu_scan s = { .h = &a->h, .ids = a->ids, .vm = &a->vm, .node = a->node,
			       .node_info = a->node_info, .log = &a->log };
	struct json *out = pgpu_discover(&s);

	if (out)
		metrics_set(&a->m, a->m_devices, (double)json_count(out));
	return out;
}

/* ---- the vendors' labels as an NFD features file ------------------------- */

/* --features-verify: the directory the file goes to must be the one the
 * host's features.d holds under that name (compared through a read-only
 * view of it), not one a symlink planted there before this container was
 * made pointed the mount at. Returns 0, or -1 (logged). */
static int features_verify(struct agent *a)
{
	char dir[PATH_MAX], *slash;
	struct stat mine, host;

	snprintf(dir, sizeof(dir), "%s", a->feat_path);
	if ((slash = strrchr(dir, '/')))
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (stat(dir, &mine) < 0 || lstat(a->feat_verify, &host) < 0) {
		LOG_E(&a->log, "--features-verify %s: %s", a->feat_verify, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(host.st_mode) || host.st_dev != mine.st_dev || host.st_ino != mine.st_ino) {
		LOG_E(&a->log, "%s is not the directory %s names on the host (a link or another directory): "
		      "not writing the labels there", dir, a->feat_verify);
		return -1;
	}
	return 0;
}

/* Writes the labels of the devices in want to --features-file when they
 * changed or half the expiry has passed since the last write. Returns 0,
 * or -1 (logged). */
static int write_features(struct agent *a, const struct json *want)
{
	struct pgpu_scan sc = { .h = &a->h, .ids = a->ids, .vm = &a->vm, .node = a->node,
				.node_info = a->node_info, .log = &a->log };
	struct json *labels;
	struct buf b, f;
	struct fb_errinfo ei;
	char ts[40], msg[600];
	long long now = loop_now_ms();
	size_t n;
	time_t exp;
	int rc = -1;

	if (!a->feat_path)
		return 0;
	if (a->feat_verify && features_verify(a) < 0)
		return -1;
	if (!(labels = pgpu_feature_labels(&sc, want, a->started))) {
		LOG_E(&a->log, "%s: out of memory", a->feat_path);
		return -1;
	}
	n = json_count(labels);
	buf_init(&b, FEATFILE_MAX_SIZE);
	buf_init(&f, FEATFILE_MAX_SIZE);
	for (const struct json *l = json_child(labels); l; l = json_next(l))
		buf_printf(&b, "%s=%s\n", json_key(l), json_str(l));
	json_free(labels);
	buf_putc(&b, '\0');
	if (b.err) {
		LOG_E(&a->log, "%s: the labels do not fit in %d bytes", a->feat_path, FEATFILE_MAX_SIZE);
		goto out;
	}
	if (a->feat_last && strcmp(a->feat_last, b.p) == 0 && now - a->feat_at < a->feat_expiry_ms / 2) {
		rc = 0;
		goto out;
	}
	exp = time(NULL) + (time_t)(a->feat_expiry_ms / 1000);
	log_rfc3339(exp, ts, sizeof(ts));
	buf_printf(&f, "# gpu-node-agent: these labels expire unless it rewrites them\n# +expiry-time=%s\n%s", ts, b.p);
	fb_errinfo_init(&ei);
	if (f.err) {
		LOG_E(&a->log, "%s: the labels do not fit in %d bytes", a->feat_path, FEATFILE_MAX_SIZE);
		goto out;
	}
	if (featfile_write(a->feat_path, f.p, f.len, &ei) < 0) {
		LOG_E(&a->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		goto out;
	}
	if (!a->feat_last || strcmp(a->feat_last, b.p) != 0)
		LOG_I(&a->log, "wrote %zu label(s) to %s (expiring %s unless rewritten)", n, a->feat_path, ts);
	free(a->feat_last);
	a->feat_last = strdup(b.p);
	a->feat_at = now;
	rc = 0;
out:
	buf_free(&b);
	buf_free(&f);
	return rc;
}

/* ---- the loop ----------------------------------------------------------- */

static void on_pass(void *ctx);

static void schedule(struct agent *a, long long ms)
{
	loop_timer_cancel(a->l, a->retry_timer);
	a->retry_timer = loop_timer(a->l, ms, on_pass, a);
}

static void on_pass(void *ctx)
{
	struct agent *a = ctx;
	struct json *want;
	int cm_failed = 0;

	a->retry_timer = 0;
	a->in_pass = 1;
	if (!a->vendors_file && (informer_started(&a->cm) ? !informer_synced(&a->cm) : cm_start(a) < 0)) {
		/* keep scanning and publishing with what we have (the built-in
		 * map when nothing was ever read); the backoff retries the watch */
		cm_failed = 1;
		if (!a->vm_ready) {
			LOG_W(&a->log, "vendors ConfigMap unreadable: using the built-in vendors amd=1002, "
			      "intel=8086, metax=9999, nvidia=10de until it can be read");
			pgpu_vmap_default(&a->vm);
			a->vm_ready = 1;
		}
	}
	a->in_pass = 0;
	if (!(want = discover(a)))
		goto retry;
	/* the file neither waits for the API nor holds it up, nor readiness: a
	 * failed write is logged and tried again at the next pass */
	write_features(a, want);
	if (sync_all(a, want) < 0) {
		json_free(want);
		goto retry;
	}
	json_free(want);
	if (cm_failed)
		goto retry;
	if (!a->ready)
		LOG_I(&a->log, "in sync: %zu PhysicalGPU object(s)", json_count(a->server));
	a->ready = 1;
	kube_backoff_reset(&a->bo);
	return;
retry:
	if (!loop_signal(a->l))
		schedule(a, kube_backoff_next(&a->bo));
}

static void on_debounced(void *ctx)
{
	struct agent *a = ctx;

	a->debounce_timer = 0;
	if (!a->retry_timer) /* a pending retry will scan anyway */
		on_pass(a);
}

static void on_resync(void *ctx)
{
	struct agent *a = ctx;

	/* forget what we think the server holds: someone may have edited or
	 * deleted our objects or labels */
	json_free(a->server);
	a->server = NULL;
	json_free(a->node_labels);
	a->node_labels = NULL;
	if (!a->retry_timer)
		on_pass(a);
	loop_timer(a->l, a->resync_ms, on_resync, a);
}

/* A datagram per event: "ACTION@DEVPATH\0KEY=VALUE\0...". */
static void on_uevent(void *ctx, int fd, short revents)
{
	struct agent *a = ctx;
	char buf[8192];
	ssize_t n;
	int pci = 0;

	(void)revents;
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		if (pci_uevent_msg_is_pci(buf, (size_t)n)) /* tests/fuzz/fuzz_uevent.c */
			pci = 1;
	if (n < 0 && errno == ENOBUFS) /* the kernel dropped events: one may have been ours */
		pci = 1;
	if (pci) {
		LOG_V(&a->log, 1, "PCI uevent: rescanning in %d ms", DEBOUNCE_MS);
		loop_timer_cancel(a->l, a->debounce_timer);
		a->debounce_timer = loop_timer(a->l, DEBOUNCE_MS, on_debounced, a);
	}
}

/* The kernel's struct sockaddr_nl and NETLINK_KOBJECT_UEVENT
 * (linux/netlink.h, a fixed ABI): the musl cross toolchains have no kernel
 * headers. Group 1 is the kernel's own broadcast (udev listens to it). */
struct uevent_addr {
	sa_family_t nl_family;
	unsigned short nl_pad;
	uint32_t nl_pid, nl_groups;
};
#define UEVENT_PROTO 15

static int uevent_open(void)
{
	struct uevent_addr sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, UEVENT_PROTO);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- main --------------------------------------------------------------- */

static int print_devices(const struct json *want)
{
	struct json *arr = json_new_array();
	char *s;
	int rc;

	for (const struct json *e = json_child(want); arr && e; e = json_next(e)) {
		struct json *st = json_dup(json_get(e, "status"));

		pgpu_condition_times(st, NULL);
		json_append_take(arr, st);
	}
	json_sort_keys(arr);
	s = arr ? json_print(arr, NULL) : NULL;
	json_free(arr);
	if (!s)
		return 1;
	rc = printf("%s\n", s) < 0 || fflush(stdout) != 0;
	free(s);
	return rc;
}

/* ---- options, setup, teardown -------------------------------------------- */

struct agent_opts {
	const char *kubeconfig, *host, *node_name, *cm, *vendors_file, *features, *verify;
	const char *probe_addr; /* --health-probe-bind-address */
	struct opt_list pci_ids;
	int oneshot, no_publish, seen_port;
	long verbosity, port;
	long long resync, expiry;
	const char *setup_owner; /* --features-setup UID:GID */
};

#define AO(member) offsetof(struct agent_opts, member)

static const struct opt agent_optv[] = {
	{ .lo = "kubeconfig", .kind = OPT_STR, .off = AO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)" },
	{ .lo = "node-name", .kind = OPT_STR, .off = AO(node_name), .arg = "NAME",
	  .help = "the node (default $NODE_NAME, else the host name)" },
	{ .lo = "host-prefix", .kind = OPT_STR, .off = AO(host), .arg = "P",
	  .help = "read host sys/proc/etc/usr at P+\"sys\"... (default /host- if /host-sys exists, else /)" },
	{ .lo = "pci-ids", .kind = OPT_STRS, .off = AO(pci_ids), .arg = "PATH",
	  .help = "pci.ids to use, first found wins (repeatable; default usr/share/{hwdata,misc,}/pci.ids on the host)" },
	{ .lo = "vendors-configmap", .kind = OPT_STR, .off = AO(cm), .arg = "[NS/]NAME",
	  .help = "vendor map ConfigMap, watched (default " DEFAULT_CM " in the agent's namespace)" },
	{ .lo = "vendors-file", .kind = OPT_STR, .off = AO(vendors_file), .arg = "PATH",
	  .help = "vendor map from a YAML/JSON file instead of the ConfigMap" },
	{ .lo = "features-file", .kind = OPT_STR, .off = AO(features), .arg = "PATH",
	  .help = "also write the vendors' node labels (nvidia.com/gpu.*, amd.com/gpu.*, gpu.intel.com/*) "
		  "there as an NFD features file (default: none)" },
	{ .lo = "features-setup", .kind = OPT_STR, .off = AO(setup_owner), .arg = "UID:GID",
	  .help = "as root (an initContainer): make --features-file's directory (a hidden one in features.d) "
		  "owned by UID:GID, link features.d/NAME to the file, and exit" },
	{ .lo = "features-verify", .kind = OPT_STR, .off = AO(verify), .arg = "PATH",
	  .help = "write --features-file only while its directory is PATH (a read-only view of it), "
		  "not something a link there pointed the mount at" },
	{ .lo = "features-expiry", .kind = OPT_DUR, .off = AO(expiry), .min = 1000, .arg = "DUR",
	  .help = "the file's labels expire this long after its last rewrite (default 1h)" },
	{ .lo = "resync", .kind = OPT_DUR, .off = AO(resync), .min = 100, .arg = "DUR",
	  .help = "re-read the server's objects and rescan this often (default 5m)" },
	{ .lo = "port", .kind = OPT_INT, .off = AO(port), .seen = OPT_SEEN(struct agent_opts, seen_port), .min = 0,
	  .max = 65535, .arg = "N",
	  .help = "serve /healthz, /readyz and /metrics on this port (default 8081; 0: any free port)" },
	{ .lo = "health-probe-bind-address", .kind = OPT_STR, .off = AO(probe_addr), .arg = "ADDR",
	  .help = "serve them on HOST:PORT instead (\"127.0.0.1:8081\", \"[::1]:0\"; default "
		  "$HEALTH_PROBE_BIND_ADDRESS, else \":\" and --port)" },
	{ .lo = "oneshot", .kind = OPT_FLAG, .off = AO(oneshot),
	  .help = "sync once and exit (1 if that failed)" },
	{ .lo = "no-publish", .kind = OPT_FLAG, .off = AO(no_publish),
	  .help = "with --oneshot: no API access; print the devices as a JSON array of status objects" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = AO(verbosity), .min = 0, .max = 10, .arg = "N",
	  .help = "log verbosity" },
};

static const struct opt_spec agent_spec = { .name = "gpu-node-agent", .usage = usage, .opts = agent_optv,
					.nopts = sizeof(agent_optv) / sizeof(agent_optv[0]) };

static const struct metrics_def agent_metrics[] = {
	{ METRIC_GAUGE, "gpu_node_agent_build_info", "version=\"" FB_VERSION "\"",
	  "Build information; the value is the start time", NULL, 0, offsetof(struct agent, m_build) },
	{ METRIC_GAUGE, "gpu_node_agent_devices", "", "Devices found by the last scan", NULL, 0,
	  offsetof(struct agent, m_devices) },
	{ METRIC_COUNTER, "gpu_node_agent_syncs_total", "", "Passes that left the server in sync", NULL, 0,
	  offsetof(struct agent, m_syncs) },
	{ METRIC_COUNTER, "gpu_node_agent_sync_errors_total", "", "Passes that failed and were retried", NULL, 0,
	  offsetof(struct agent, m_errors) },
};

/* Checks the flags and sets a up to the ID database. Returns -1 to go on,
 * else the exit status (the message printed). addr: room for ":PORT". */
static int agent_configure(struct agent *a, struct agent_opts *o, char *addr, size_t addr_size)
{
	static const char *const ids_rel[] = { "usr/share/hwdata/pci.ids", "usr/share/misc/pci.ids",
					       "usr/share/pci.ids" };
	struct fb_errinfo ei;
	char msg[1200], hostname[256], idpaths[OPT_LIST_MAX][PATH_MAX];
	const char *idp[OPT_LIST_MAX];
	size_t nid = 0;

	if (o->no_publish && !o->oneshot) {
		fprintf(stderr, "gpu-node-agent: --no-publish needs --oneshot\n");
		return 2;
	}
	if (o->probe_addr && o->seen_port) {
		fprintf(stderr, "gpu-node-agent: give --port or --health-probe-bind-address, not both\n");
		return 2;
	}
	if (!o->probe_addr && !o->seen_port && (o->probe_addr = getenv("HEALTH_PROBE_BIND_ADDRESS")) &&
	    !*o->probe_addr)
		o->probe_addr = NULL;
	if (!o->probe_addr) {
		snprintf(addr, addr_size, ":%ld", o->port);
		o->probe_addr = addr;
	}
	fb_errinfo_init(&ei);
	if (http_addr_check(o->probe_addr, &ei) < 0) {
		fprintf(stderr, "gpu-node-agent: health probe bind address %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	a->log.v = (int)o->verbosity;
	a->resync_ms = o->resync;
	a->vendors_file = o->vendors_file;
	if (o->features && (!*o->features || o->features[strlen(o->features) - 1] == '/')) {
		fprintf(stderr, "gpu-node-agent: --features-file '%s' does not name a file\n", o->features);
		return 2;
	}
	a->feat_path = o->features;
	a->feat_verify = o->verify;
	a->feat_expiry_ms = o->expiry;
	if (o->features && !o->oneshot && o->expiry < 2 * o->resync)
		LOG_W(&a->log, "--features-expiry %llds is under twice --resync %llds: labels may expire between rewrites",
		      o->expiry / 1000, o->resync / 1000);
	hostfs_init(&a->h);
	if (hostfs_setup(&a->h, o->host) < 0) {
		fprintf(stderr, "gpu-node-agent: --host-prefix is too long\n");
		return 2;
	}
	snprintf(a->node, sizeof(a->node), "%s", app_node_name(o->node_name, hostname, sizeof(hostname)));
	if (!labels_valid_prefix(a->node, strlen(a->node)) || strlen(a->node) > LABELS_NAME_MAX) {
		LOG_E(&a->log, "node name \"%s\" is not a valid node name and label value", a->node);
		return 2;
	}
	/* the ID database: --pci-ids as given, else the host's usual places */
	if (o->pci_ids.n) {
		for (int i = 0; i < o->pci_ids.n; i++)
			idp[nid++] = o->pci_ids.v[i];
	} else {
		for (size_t i = 0; i < sizeof(ids_rel) / sizeof(ids_rel[0]); i++)
			if (hostfs_resolve(&a->h, ids_rel[i], idpaths[nid], sizeof(idpaths[nid])) >= 0) {
				idp[nid] = idpaths[nid];
				nid++;
			}
	}
	if (ids_open(&a->ids, IDS_PCI, idp, nid, &a->log) < 0)
		return 1;
	return -1;
}

/* --features-setup: the one root step that lets an unprivileged agent keep
 * a file in the host's root-owned features.d. For a --features-file
 * D/.sub/NAME: D/.sub is made (0755) and given to uid:gid, and D/NAME is
 * made a symlink to .sub/NAME (NFD follows it; a hidden directory is
 * ignored). Returns the exit status. */
static int features_setup(const char *file, const char *owner)
{
	char dir[PATH_MAX], link[PATH_MAX], target[PATH_MAX], have[PATH_MAX];
	const char *base, *sub;
	char *slash, *end;
	unsigned long uid, gid;
	struct stat st;
	ssize_t n;
	int fd;

	uid = strtoul(owner, &end, 10);
	if (end == owner || *end != ':' || (gid = strtoul(end + 1, &end, 10), *end) || uid > 65535 * 65536UL ||
	    gid > 65535 * 65536UL) {
		fprintf(stderr, "gpu-node-agent: --features-setup '%s': want UID:GID\n", owner);
		return 2;
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s", file) >= sizeof(dir) || !(slash = strrchr(dir, '/')) ||
	    slash == dir) {
		fprintf(stderr, "gpu-node-agent: --features-setup: --features-file must be DIR/.SUB/NAME\n");
		return 2;
	}
	*slash = '\0';
	base = slash + 1;
	sub = strrchr(dir, '/');
	if (!sub || sub == dir || sub[1] != '.' || !strcmp(sub + 1, ".") || !strcmp(sub + 1, "..") || !*base) {
		fprintf(stderr, "gpu-node-agent: --features-setup: --features-file must be DIR/.SUB/NAME (a hidden SUB)\n");
		return 2;
	}
	if ((size_t)snprintf(link, sizeof(link), "%.*s/%s", (int)(sub - dir), dir, base) >= sizeof(link) ||
	    (size_t)snprintf(target, sizeof(target), "%s/%s", sub + 1, base) >= sizeof(target)) {
		fprintf(stderr, "gpu-node-agent: --features-setup: --features-file is too long\n");
		return 2;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "gpu-node-agent: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	/* the mode first: with CAP_CHOWN only, root may change it only while it
	 * still owns the directory */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || ((st.st_mode & 07777) != 0755 && fchmod(fd, 0755) < 0) ||
	    ((st.st_uid != (uid_t)uid || st.st_gid != (gid_t)gid) && fchown(fd, (uid_t)uid, (gid_t)gid) < 0)) {
		fprintf(stderr, "gpu-node-agent: %s: %s\n", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	if (lstat(link, &st) == 0) {
		n = S_ISLNK(st.st_mode) ? readlink(link, have, sizeof(have) - 1) : -1;
		if (n < 0 || (have[n] = '\0', strcmp(have, target) != 0)) {
			fprintf(stderr, "gpu-node-agent: %s exists and is not a link to %s: left alone\n", link, target);
			return 1;
		}
	} else if (symlink(target, link) < 0) {
		fprintf(stderr, "gpu-node-agent: %s: %s\n", link, strerror(errno));
		return 1;
	}
	printf("%s -> %s (owner %lu:%lu)\n", link, target, uid, gid);
	return 0;
}

/* --no-publish: scan once and print. Returns the exit status. */
static int agent_print(struct agent *a)
{
	struct json *want;
	int ret;

	if (!a->vm_ready) {
		LOG_W(&a->log, "no --vendors-file: using the built-in vendors amd=1002, intel=8086, metax=9999, nvidia=10de");
		pgpu_vmap_default(&a->vm);
	}
	want = discover(a);
	/* names are read only when a device needs one: 0 lines on a node without GPUs */
	LOG_V(&a->log, 1, "pci.ids: %lu lines parsed", ids_lines_parsed(a->ids));
	ret = want ? print_devices(want) : 1;
	if (want && write_features(a, want) < 0)
		ret = 1;
	FREE_AT_EXIT(json_free(want));
	return ret;
}

/* The loop, the API client, the ConfigMap's name. Returns -1 to go on, else
 * the exit status (logged). */
static int agent_connect(struct agent *a, const struct agent_opts *o)
{
	struct kube_opts ko;
	struct fb_errinfo ei;
	const char *slash = strchr(o->cm, '/');
	char msg[1200];
	unsigned seed;
	int rc;

	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = o->kubeconfig;
	if (!o->oneshot) { /* the loop retries: a request must not hold the probes for minutes */
		ko.max_attempts = 1;
		ko.timeout_ms = 5000;
	}
	if ((rc = loop_new(&a->l, &ei)) == 0)
		rc = kube_connect(&a->k, &ko, &a->log, loop_cancel_fd(a->l), a->cm_ns, sizeof(a->cm_ns), &ei);
	if (rc < 0) {
		LOG_E(&a->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	if (slash)
		snprintf(a->cm_ns, sizeof(a->cm_ns), "%.*s", (int)(slash - o->cm), o->cm);
	snprintf(a->cm_name, sizeof(a->cm_name), "%s", slash ? slash + 1 : o->cm);
	if (!labels_valid_prefix(a->cm_name, strlen(a->cm_name)) || !labels_valid_prefix(a->cm_ns, strlen(a->cm_ns))) {
		fprintf(stderr, "gpu-node-agent: --vendors-configmap: \"%s\" is not [NAMESPACE/]NAME\n", o->cm);
		return 2;
	}
	seed = (unsigned)time(NULL) ^ (unsigned)loop_now_ms();
	for (const char *p = a->node; *p; p++)
		seed = seed * 31 + (unsigned char)*p;
	kube_backoff_init(&a->bo, ko.backoff_base_ms, ko.backoff_max_ms, seed);
	return -1;
}

static int ready_cb(void *ctx)
{
	return ((struct agent *)ctx)->ready;
}

static void agent_free(struct agent *a)
{
	if (a->nl_fd >= 0)
		close(a->nl_fd);
	informer_free(&a->cm);
	http_server_free(a->srv);
	json_free(a->server);
	json_free(a->node_labels);
	json_free(a->node_info);
	free(a->feat_last);
	kube_free(a->k);
	loop_free(a->l);
	ids_free(a->ids);
}

int gpu_node_agent_main(int argc, char **argv)
{
	struct agent a;
	struct agent_opts o = { .cm = DEFAULT_CM, .port = 8081, .resync = 5 * 60 * 1000, .expiry = 60 * 60 * 1000 };
	struct app_probes probes;
	char addr[32], where[96];
	int rc, ret = 1;

	memset(&a, 0, sizeof(a));
	a.nl_fd = -1;
	log_init(&a.log);
	metrics_init(&a.m);
	if ((rc = opt_parse_only(&agent_spec, &o, argc, argv)) >= 0)
		return rc;
	if (o.setup_owner) {
		if (!o.features) {
			fprintf(stderr, "gpu-node-agent: --features-setup needs --features-file\n");
			return 2;
		}
		return features_setup(o.features, o.setup_owner);
	}
	if ((rc = agent_configure(&a, &o, addr, sizeof(addr))) >= 0) {
		ret = rc;
		goto out;
	}
	metrics_add_table(&a.m, agent_metrics, sizeof(agent_metrics) / sizeof(agent_metrics[0]), &a);
	a.started = (long long)time(NULL);
	metrics_set(&a.m, a.m_build, (double)a.started);
	if (!(a.node_info = pgpu_node_info(&a.h, a.node, &a.log)))
		goto out;
	if (a.vendors_file) {
		if (pgpu_vmap_load(&a.vm, a.vendors_file, &a.log) < 0) {
			ret = 2;
			goto out;
		}
		a.vm_ready = 1;
	}
	if (o.no_publish) {
		ret = agent_print(&a);
		goto out;
	}
	if ((rc = agent_connect(&a, &o)) >= 0) {
		ret = rc;
		goto out;
	}
	if (o.oneshot) {
		struct json *want = NULL;

		if ((a.vm_ready || cm_get(&a) == 0) && (want = discover(&a))) {
			int feat = write_features(&a, want);

			ret = sync_all(&a, want) == 0 && feat == 0 ? 0 : 1;
		}
		json_free(want);
		goto out;
	}
	probes = (struct app_probes){ .mx = &a.m, .ready = ready_cb, .ctx = &a, .waiting = "not yet in sync\n" };
	snprintf(where, sizeof(where), " (%.80s)", o.probe_addr);
	app_serve(&a.srv, a.l, o.probe_addr, &probes, &a.log, "/healthz, /readyz and /metrics", where);
	a.nl_fd = uevent_open();
	if (a.nl_fd < 0 || loop_watch(a.l, a.nl_fd, POLLIN, on_uevent, &a) < 0)
		LOG_W(&a.log, "no kernel uevents (%s): PCI changes are seen every --resync only", strerror(errno));
	schedule(&a, 0);
	loop_timer(a.l, a.resync_ms, on_resync, &a);
	loop_run(a.l);
	LOG_I(&a.log, "stopping (signal %d)", loop_signal(a.l));
	ret = 0;
out:
	agent_free(&a);
	return ret;
}
