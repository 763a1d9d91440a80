/* nfd-master: NodeFeatures and NodeFeatureRules in, node labels out.
 *
 * Mirrors kubernetes-sigs/node-feature-discovery nfd-master v0.17-v0.19
 * (https://github.com/kubernetes-sigs/node-feature-discovery) together with
 * nfd-gc and nfd-master -prune: the same flags (one or two dashes), the
 * nfd-master.conf keys, the merge order of NodeFeatures, the rule engine
 * (core/rules), and the bookkeeping annotations on the Node (core/nodelabels),
 * so upstream and featurebox masters can replace each other in place.
 *
 * How it holds 5,000 nodes in about 50 MiB (scripts/bench-master 5000 with
 * scripts/bench-rules.json: 53 MiB peak, 26 MiB of it the features those
 * rules match on; 15 MiB at 1,000 nodes): it never keeps whole NodeFeatures.
 * Lists are read a page at a time; of each object it keeps a hash (to see
 * whether an event changed anything), its spec.labels and only the features
 * the current NodeFeatureRules match on. When a rule change needs a feature
 * it did not keep, the NodeFeatures are listed again. Nodes are GET before
 * they are patched (as upstream); a node whose desired state is what was
 * last written is not touched at all, except by the resync.
 *
 * What one node may cost (a node may write any NodeFeature): an object over
 * NFSTORE_MAX_BYTES of JSON (1.5 MiB, etcd's default limit; clusters can raise it)
 * or with more than NFSTORE_MAX_LABELS labels (10,000: twenty times the largest
 * real node's few hundred, and about what a Node can carry, since every
 * label's name goes into the feature-labels annotation and a Node's
 * annotations share 256 KiB) is refused whole with a warning naming it,
 * counted (nfd_master_nodefeatures_rejected_total, ours), and what it said
 * before is dropped. Below that, keeping, merging, filtering and hashing an
 * object are linear in its size (hash maps, no json_set_take over big
 * objects, nothing printed to be hashed). "@" label values are looked up in
 * the node's own objects: each node counts the feature names its objects
 * name, and an object kept before a name appeared is read again with one
 * GET when the node is next updated (never a relist). Watch events and node
 * updates run in slices, and core/loop polls between two slices, so probes,
 * the lease and other nodes' events go on (tests/applets/nfd-master-hostile.sh).
 *
 * Every flag upstream has had since v0.16 is accepted: klog's (core/app,
 * honoured as klog does), v0.16's gRPC and controller switches (a warning that
 * they are ignored), -feature-gates (repeatable, checked as upstream does).
 *
 * Deliberate deviations:
 * - Losing the leader lease stops writing at once but does not exit the
 *   process (upstream exits); it stays a candidate, watching.
 * - API errors never end the process: lists and watches back off and retry,
 *   /readyz says whether the first complete list is in.
 * - NodeFeatures without the nfd.node.kubernetes.io/node-name label are
 *   logged and left alone; upstream's nfd-gc deletes them.
 * - nfd_master_nodefeaturerule_processing_duration_seconds has no name/node
 *   labels (5,000 nodes x rules would make a huge metric); it times one
 *   NodeFeatureRule on one node.
 * - Single-threaded: --nfd-api-parallelism is accepted and ignored; node
 *   updates are one at a time, in small slices between watch events.
 * - NodeFeatureGroups (NodeFeatureGroupAPI=true): only our namespace's groups
 *   are watched (upstream watches all and updates only ours); status.nodes
 *   is a merge patch of the status subresource (upstream PUTs it); a node
 *   is listed by its Node's name, not by its system.name/nodename feature
 *   as upstream does (the same name from a worker). Nodes are evaluated as
 *   their objects change, not every group on every event.
 *   core/nfstore_group.c.
 * - Lists are paged by 50 unless --informer-page-size says otherwise
 *   (upstream: 200): a page of 10-20 KiB NodeFeatures is about 100 KiB each
 *   once parsed, and the page is the biggest thing the master holds.
 * - --gc-interval is ours (upstream's nfd-gc has -gc-interval); 0 turns the
 *   master's collection off, for upstream's layout with an nfd-gc Deployment.
 * - restrictions.nodeFeatureNamespaceSelector is a labelSelector on the
 *   Namespace list and watch (the API server matches; upstream lists every
 *   namespace and matches itself): a namespace that starts or stops matching
 *   updates the nodes with NodeFeatures in it at once (upstream: at their next
 *   NodeFeature event or the resync). As upstream, our own namespace counts
 *   only when selected, and {} selects every namespace. No --namespaces flag.
 * - Hostile nodes: the bookkeeping annotations (which a node may edit) are
 *   trusted only where the record label
 *   [<instance>.]node-restriction.kubernetes.io/nfd-record (which it may not)
 *   vouches for them; otherwise they remove only what the node could remove
 *   itself and the policy writes. Taints are never removed on an annotation
 *   alone, and not touched at all while taints are disabled (upstream removes
 *   NFD's); nothing is removed in a namespace the policy refuses. Taking over
 *   from upstream adds the record (one PATCH per node). core/nodelabels.c.
 * - DisableAutoPrefix=true: a NodeFeature's spec.labels and a rule's labels,
 *   annotations and extended resources keep unprefixed names, taint keys
 *   still need a prefix (as upstream). Upstream lists an unprefixed "foo" in
 *   the bookkeeping annotations as "foo", which reads back (there and here)
 *   as feature.node.kubernetes.io/foo, so it never removes one; we list it
 *   as "/foo" (every prefixed name as upstream lists it) and remove it when
 *   no longer wanted only where the record vouches for the annotation. An
 *   unvouched "/foo" removes nothing and is not carried on; a bare "foo" is
 *   the default namespace's, as upstream reads it: nothing a node writes
 *   removes an admin's unprefixed label. Upstream reads "/foo" as a name no
 *   node carries (its own leak); what an upstream master wrote unprefixed
 *   stays until a rule or NodeFeature asks for it again. Values of
 *   unprefixed names are checked as any others' (upstream checks none).
 *
 * Configuration (nfd-master.conf, --options, flags) is implemented, except
 * what is listed here; what has a security meaning and is not implemented
 * stops the start with exit 1 naming it, never a warning and a run:
 * - restrictions.*: all six upstream keys with upstream's semantics:
 *   disableLabels drops every label (NodeFeatures' and rules'),
 *   disableAnnotations and disableExtendedResources the rules' annotations
 *   and extended resources, each after the namespace policy (rejections still
 *   count) and removing what NFD wrote before; denyNodeFeatureLabels ignores
 *   the spec.labels of every NodeFeature but the worker's (ours, named after
 *   the node), whose features rules still match. An unknown restrictions key
 *   is an error: exit 1.
 * - --feature-gates: upstream's gates. NodeFeatureAPI=true and the defaults
 *   are accepted; DisableAutoPrefix=true as upstream v0.18+ (its
 *   bookkeeping: the deviation above). NodeFeatureGroupAPI=true turns
 *   NodeFeatureGroups on (above). Unknown gates, bad values and
 *   NodeFeatureAPI=false are usage errors (exit 2), as upstream.
 * - autoDefaultNs (v0.15-v0.17; v0.18 dropped it): false as those versions,
 *   no prefix put in front of unprefixed names, which are then refused
 *   (each logged). The gate wins over it (v0.17 refused them with either).
 * - nfdApiParallelism / --nfd-api-parallelism: performance only, ignored.
 * - klog.*: as upstream merges it with klog's flags (a flag given wins).
 * - Unknown top-level keys: warned about and ignored (upstream ignores them).
 * - --bind-address IP is ours: upstream serves -port on every interface with
 *   no way to choose, which stays the default; not an IP address: exit 1.
 * - NodeFeatures over 1.5 MiB or 10,000 labels are refused (upstream
 *   processes anything the API stores); nfd_master_nodefeatures_rejected_total
 *   is ours.
 */
#include "applets.h"

#include "../core/app.h"
#include "../core/err.h"
#include "../core/features.h"
#include "../core/http.h"
#include "../core/informer.h"
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/labels.h"
#include "../core/lease.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "../core/nfdconf.h"
#include "../core/nfdsrc.h"
#include "../core/nfgc.h"
#include "../core/nfstore.h"
#include "../core/nodelabels.h"
#include "../core/opt.h"
#include "../core/re.h"
#include "../core/rules.h"
#include "../core/sysfs.h"
#include "../core/version.h"
#include "../core/yaml.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"Usage: nfd-master [OPTIONS]\n"
	"\n"
	"Turn NodeFeature objects and NodeFeatureRules into node labels, annotations,\n"
	"extended resources and taints; delete the NodeFeatures of deleted nodes.\n";

#define DEFAULT_CONFIG "/etc/kubernetes/node-feature-discovery/nfd-master.conf"
#define NF_API "/apis/nfd.k8s-sigs.io/v1alpha1"
#define FLUSH_MS 1000        /* events are coalesced for this long (upstream: 1 s) */
#define SLICE_MS 100         /* node updates in one go before the loop runs again */
#define RETRY_BASE_MS 50     /* per-node retry: 50 ms .. 100 s, as upstream's queue */
#define RETRY_MAX_MS 100000
#define FAILS_COUNTED 15     /* upstream counts a failure after 15 requeues */

struct master;

struct minf {                  /* one of the master's informers (core/informer) */
	struct informer i;
	const char *what;              /* "NodeFeature" */
	int (*apply)(struct master *m, const struct json *obj, int deleted);
	void (*begin)(struct master *m);
	void (*end)(struct master *m);
	int synced;                    /* listed once (INF_NS without a selector: from the start) */
	int was;                       /* synced before the list that just ended */
	struct master *m;
};

/* INF_NS only with restrictions.nodeFeatureNamespaceSelector, INF_NFG only with
 * --feature-gates NodeFeatureGroupAPI=true: else synced from the start. The first
 * lists go in this order (the groups' rules before the NodeFeatures: what they
 * match on is kept from the first list). */
enum { INF_NFR, INF_NFG, INF_NF, INF_NODE, INF_NS, INF_COUNT };
/* the encoded selector: path + "&limit=N&continue=" + a continue token fits kube's 2 KiB */
#define NS_QUERY_MAX 900

struct master {
	struct fb_log log;
	struct loop *l;
	struct kube *k;
	struct http_server *srv;
	struct metrics mx;
	int m_build, m_requests, m_updates, m_failures, m_rej_labels, m_rej_ers, m_rej_taints,
	    m_rule_time, m_rule_errors, m_gc_deleted, m_gc_failed, m_leader;
	char ns[254];
	struct nl_policy pol;
	struct re whitelist;
	int have_whitelist, no_publish, leader_election, leading, groups;
	long long resync_ms, gc_ms;
	struct lease *lease;
	struct minf inf[INF_COUNT];
	struct nfstore st;             /* the objects; refresh_all and relist_nf with them */
	int flush_timer, dirty;
	long long flush_due;           /* loop_now_ms() when flush_timer fires */
	/* restrictions.*: the node-feature namespace selector is a server-side
	 * labelSelector on the Namespace list and watch; st.nss is what it selects */
	int ns_filter, deny_nf_labels, disable_labels, disable_annotations, disable_ers;
	int m_rej_nfs;
};

static int synced(const struct master *m)
{
	for (int i = 0; i < INF_COUNT; i++)
		if (!m->inf[i].synced)
			return 0;
	return 1;
}

static int may_write(struct master *m)
{
	return !m->no_publish && (!m->leader_election || (m->leading && lease_leading(m->lease)));
}

/* nl_apply asks before every PATCH: leadership can end during a node */
static int may_write_cb(void *ctx)
{
	struct master *m = ctx;

	lease_poll(m->lease);
	return may_write(m);
}

static void flush(void *ctx);

/* Flushes within delay ms: a pending flush that is due later (a node's
 * retry) is brought forward, so one failing node never delays the others. */
static void schedule(struct master *m, long long delay)
{
	long long due = loop_now_ms() + delay;

	if (!synced(m) || (m->flush_timer && m->flush_due <= due))
		return;
	loop_timer_cancel(m->l, m->flush_timer);
	m->flush_timer = loop_timer(m->l, delay, flush, m);
	m->flush_due = due;
}

static void mark_all(struct master *m, int force)
{
	nfstore_mark_all(&m->st, force);
}

/* ---- the store's hooks and the informers' callbacks --------------------- */

static void on_dirty(void *ctx)
{
	struct master *m = ctx;

	m->dirty = 1;
	schedule(m, FLUSH_MS);
}

static int on_listed(void *ctx, int what)
{
	const struct master *m = ctx;

	return m->inf[what == NFSTORE_NF ? INF_NF : INF_NS].synced;
}

static int gc_node(struct master *m, struct nfstore_node *n);

/* A node the Node watch says is deleted: its NodeFeatures go, once the Nodes
 * are listed and we may write. */
static void on_node_deleted(void *ctx, struct nfstore_node *n)
{
	struct master *m = ctx;

	if (m->inf[INF_NODE].synced && may_write(m))
		gc_node(m, n);
}

/* The store as the configuration made it: called once, before the lists. */
static void store_setup(struct master *m)
{
	const struct nfstore_conf c = {
		.log = &m->log, .mx = &m->mx, .m_rej_nfs = m->m_rej_nfs, .m_rule_errors = m->m_rule_errors,
		.m_rule_time = m->m_rule_time, .m_rej_labels = m->m_rej_labels, .m_rej_ers = m->m_rej_ers,
		.m_rej_taints = m->m_rej_taints, .ns = m->ns, .pol = &m->pol, .ns_filter = m->ns_filter,
		.deny_nf_labels = m->deny_nf_labels, .disable_labels = m->disable_labels,
		.disable_annotations = m->disable_annotations, .disable_ers = m->disable_ers,
		.dirty = on_dirty, .listed = on_listed, .node_deleted = on_node_deleted, .ctx = m,
	};

	nfstore_init(&m->st, &c);
}

/* nf_apply, nf_begin, nf_end and the same of nfr, node and ns: the store's */
#define STORE_CALLBACKS(x) \
	static int x##_apply(struct master *m, const struct json *obj, int deleted) \
	{ \
		return nfstore_##x##_apply(&m->st, obj, deleted); \
	} \
	static void x##_begin(struct master *m) \
	{ \
		nfstore_##x##_begin(&m->st); \
	} \
	static void x##_end(struct master *m) \
	{ \
		nfstore_##x##_end(&m->st); \
	}
STORE_CALLBACKS(nf)
STORE_CALLBACKS(nfr)
STORE_CALLBACKS(nfg)
STORE_CALLBACKS(node)
STORE_CALLBACKS(ns)

/* ---- Nodes and garbage collection --------------------------------------- */

/* Deletes the NodeFeatures of node n, which the Node list and watch say is
 * gone (core/nfgc: the API must say 404 for the node too). Returns
 * -FB_ECANCELED on SIGTERM, else 0. */
static int gc_node(struct master *m, struct nfstore_node *n)
{
	const struct nfgc g = { .k = m->k, .lg = &m->log, .mx = &m->mx, .m_deleted = m->m_gc_deleted,
				.m_failed = m->m_gc_failed };

	if (n->nfs && !nfgc_node_gone(m->k, n->name)) {
		LOG_W(&m->log, "node %s: the watch said deleted, the API does not: keeping its NodeFeatures", n->name);
		return 0;
	}
	while (n->nfs) {
		struct nfstore_nf *o = n->nfs;
		int rc;

		if (!may_write_cb(m))
			return 0;
		if ((rc = nfgc_delete(&g, o->ns, o->name, n->name)) != 0)
			return rc < 0 ? rc : 0;
		/* the watch's DELETED event will find nothing left to do */
		nfstore_nf_forget(&m->st, o);
	}
	return 0;
}

static void gc(struct master *m)
{
	const struct informer *in = &m->inf[INF_NODE].i;

	/* only on a fresh view of the Nodes: a failing list or watch leaves
	 * "exists" stale, and new nodes would look deleted; --gc-interval=0:
	 * never (nfd-gc collects) */
	if (m->gc_ms <= 0 || !synced(m) || !may_write(m) || informer_failing(in) || !informer_watching(in))
		return;
	for (size_t i = 0; i < m->st.nodes.cap;) {
		struct nfstore_node *n = m->st.nodes.s[i].val;

		if (m->st.nodes.s[i].key && !n->exists && n->nfs) {
			if (gc_node(m, n) < 0 || loop_signal(m->l))
				return;
			if (nfstore_node_drop(&m->st, n))
				continue; /* slot i may hold a shifted entry now */
		}
		i++;
	}
}

static void on_gc(void *ctx)
{
	struct master *m = ctx;

	gc(m);
	loop_timer(m->l, m->gc_ms, on_gc, m);
}

/* Reads again (one GET each) the objects of node n kept before one of its
 * objects' labels named a feature they may have: an "@" value is looked up in
 * all of them. Only n's own objects, never a relist of everything. Returns 0,
 * or -FB_EAGAIN (try later), -FB_ECANCELED. */
static int nf_refetch(struct master *m, struct nfstore_node *n)
{
	/* an object read again may name more features still: a few rounds */
	for (int round = 0; round < 8; round++) {
		struct nfstore_nf *o;
		struct kube_result res;
		struct fb_errinfo ei;
		char path[800], msg[1300];
		int rc;

		for (o = n->nfs; o && o->dyn_gen == n->dyn_gen; o = o->next)
			;
		if (!o)
			return 0;
		snprintf(path, sizeof(path), NF_API "/namespaces/%s/nodefeatures/%s", o->ns, o->name);
		fb_errinfo_init(&ei);
		if ((rc = kube_request(m->k, "GET", path, NULL, NULL, 0, &res, &ei)) == -FB_ECANCELED)
			return rc;
		if (rc == 0 && res.status == 200 && json_type(res.body) == JSON_OBJECT) {
			o->hash = 0; /* the same object, kept anew (nf_keep brings dyn_gen up) */
			rc = nfstore_nf_apply(&m->st, res.body, 0);
		} else if (rc == 0 && res.status == 404) {
			o->dyn_gen = n->dyn_gen; /* gone: the watch says so soon */
		} else {
			if (rc == 0)
				snprintf(msg, sizeof(msg), "HTTP %d %s", res.status, res.message);
			else
				fb_errinfo_str(&ei, msg, sizeof(msg));
			LOG_W(&m->log, "node %s: reading NodeFeature %s again: %s; trying later", n->name, o->key, msg);
			rc = -FB_EAGAIN;
		}
		kube_result_free(&res);
		if (rc < 0)
			return -FB_EAGAIN;
	}
	return -FB_EAGAIN;
}

/* Brings one node up to date. Returns 0, or -FB_ECANCELED to stop. */
static int reconcile(struct master *m, struct nfstore_node *n)
{
	struct nl_set set;
	struct nl_result res = { 0 };
	struct fb_errinfo ei;
	char msg[1300];
	uint64_t h;
	int rc, skip_removal = !n->nfs && !n->pending_delete && !n->processed;

	if ((rc = nf_refetch(m, n)) < 0) {
		if (rc == -FB_ECANCELED)
			return rc;
		n->retry_at = loop_now_ms() + 1000;
		return 0;
	}
	if (nfstore_desired(&m->st, n, &set) < 0) {
		LOG_E(&m->log, "node %s: out of memory; trying again later", n->name);
		n->retry_at = loop_now_ms() + RETRY_MAX_MS;
		return 0;
	}
	h = nfstore_hash_set(&set);
	if (n->processed && !n->force && n->applied == h) {
		n->dirty = 0;
		nl_set_free(&set);
		return 0;
	}
	if (m->no_publish) {
		char *s = json_print(set.labels, NULL);

		LOG_I(&m->log, "node %s: labels %s (--no-publish: not written)", n->name, s ? s : "?");
		free(s);
		n->dirty = n->force = 0;
		n->processed = 1;
		n->applied = h;
		nl_set_free(&set);
		return 0;
	}
	metrics_inc(&m->mx, m->m_requests, 1);
	fb_errinfo_init(&ei);
	rc = nl_apply(m->k, n->name, &m->pol, &set, skip_removal, &m->log, &res, &ei);
	nl_set_free(&set);
	if (rc == -FB_ECANCELED)
		return rc;
	if (rc == -FB_EAGAIN) /* no longer the leader: the next leader does it */
		return 0;
	if (rc == 0 || rc == -FB_ENOENT) {
		if (rc == -FB_ENOENT)
			LOG_I(&m->log, "node %s not found; skipping it", n->name);
		else if (res.changed)
			metrics_inc(&m->mx, m->m_updates, 1);
		n->dirty = n->force = 0;
		n->processed = 1;
		n->pending_delete = 0;
		n->applied = h;
		n->fails = 0;
		return 0;
	}
	n->fails++;
	{
		long long d = RETRY_BASE_MS;

		for (int i = 1; i < n->fails && d < RETRY_MAX_MS; i++)
			d *= 2;
		n->retry_at = loop_now_ms() + (d < RETRY_MAX_MS ? d : RETRY_MAX_MS);
	}
	if (n->fails == FAILS_COUNTED)
		metrics_inc(&m->mx, m->m_failures, 1);
	LOG_E(&m->log, "updating node %s failed (attempt %d): %s", n->name, n->fails,
	      fb_errinfo_str(&ei, msg, sizeof(msg)));
	return 0;
}

/* ---- NodeFeatureGroups: status.nodes ------------------------------------- */

static int slice_left(void *ctx)
{
	const long long *start = ctx;

	return loop_now_ms() - *start < SLICE_MS;
}

/* Writes group g's status.nodes (a merge patch of the status subresource:
 * upstream PUTs it; both need the same verbs, patch and update, in its RBAC). */
static void group_write(struct master *m, struct nfstore_nfg *g, uint64_t want)
{
	struct json *nodes = nfstore_group_nodes(g), *patch = json_new_object(), *st = json_new_object();
	struct kube_result res;
	struct fb_errinfo ei;
	char path[600], msg[1300];
	int rc = nodes && patch && st ? 0 : -FB_ENOMEM;

	/* a _take frees its argument even when it fails */
	if (rc == 0) {
		rc = json_set_take(st, "nodes", nodes);
		nodes = NULL;
	}
	if (rc == 0) {
		rc = json_set_take(patch, "status", st);
		st = NULL;
	}
	if (rc < 0) {
		json_free(nodes);
		json_free(st);
		json_free(patch);
		LOG_E(&m->log, "NodeFeatureGroup %s: out of memory; trying again later", g->name);
		g->fails++; /* comes back at retry_at */
		g->retry_at = loop_now_ms() + RETRY_MAX_MS;
		return;
	}
	if (m->no_publish) {
		char *t = json_print(json_get(patch, "status"), NULL);

		LOG_I(&m->log, "NodeFeatureGroup %s: status %s (--no-publish: not written)", g->name, t ? t : "?");
		free(t);
		json_free(patch);
		g->have = want;
		return;
	}
	snprintf(path, sizeof(path), NF_API "/namespaces/%s/nodefeaturegroups/%s/status", m->ns, g->name);
	fb_errinfo_init(&ei);
	rc = kube_request_json(m->k, "PATCH", path, "application/merge-patch+json", patch, &res, &ei);
	json_free(patch);
	if (rc == 0 && (res.status / 100 == 2 || res.status == 404)) {
		if (res.status == 404)
			LOG_I(&m->log, "NodeFeatureGroup %s not found; skipping it", g->name);
		else
			LOG_I(&m->log, "NodeFeatureGroup %s: status.nodes updated (%zu nodes)", g->name, g->members.n);
		g->have = want;
		g->fails = 0;
	} else {
		long long d = RETRY_BASE_MS;

		for (int i = 0; i < g->fails && d < RETRY_MAX_MS; i++)
			d *= 2;
		g->fails++;
		g->retry_at = loop_now_ms() + (d < RETRY_MAX_MS ? d : RETRY_MAX_MS);
		if (rc == 0)
			snprintf(msg, sizeof(msg), "HTTP %d %s", res.status, res.message);
		else
			fb_errinfo_str(&ei, msg, sizeof(msg));
		LOG_E(&m->log, "updating NodeFeatureGroup %s failed (attempt %d): %s", g->name, g->fails, msg);
	}
	kube_result_free(&res);
}

/* Evaluates the nodes flagged for the groups within the slice that began
 * at start, then writes the groups whose members differ from their status.
 * *next: when to come back (>= 0), as flush's. -1 to stop (SIGTERM). */
static int groups_flush(struct master *m, long long start, long long *next)
{
	size_t failed = 0;
	int rc = nfstore_groups_update(&m->st, slice_left, &start, &failed);

	if (rc > 0) { /* every node first: no status from half of them */
		*next = 0;
		return 0;
	}
	/* a node that could not be evaluated keeps its memberships; it is
	 * tried again at the next flush, at the latest in RETRY_MAX_MS */
	if (failed) {
		LOG_E(&m->log, "NodeFeatureGroups: %zu nodes not evaluated (out of memory); trying again later",
		      failed);
		if (*next < 0 || *next > RETRY_MAX_MS)
			*next = RETRY_MAX_MS;
	}
	for (size_t i = 0; i < m->st.n_nfgs; i++) {
		struct nfstore_nfg *g = m->st.nfgs[i];
		long long now = loop_now_ms();
		uint64_t want;

		if ((!g->check && !g->fails) || !g->rules)
			continue;
		if (g->retry_at > now) {
			if (*next < 0 || g->retry_at - now < *next)
				*next = g->retry_at - now;
			continue;
		}
		if (loop_signal(m->l))
			return -1;
		if (now - start >= SLICE_MS || (!may_write(m) && !m->no_publish)) {
			*next = 0;
			return 0;
		}
		g->check = 0;
		if ((want = nfstore_group_want(g)) != g->have)
			group_write(m, g, want);
		else
			g->fails = 0;
		if (g->fails && (*next < 0 || g->retry_at - loop_now_ms() < *next))
			*next = g->retry_at > loop_now_ms() ? g->retry_at - loop_now_ms() : 0;
	}
	return 0;
}

/* Updates dirty nodes for at most SLICE_MS, then lets the loop run. */
static void flush(void *ctx)
{
	struct master *m = ctx;
	long long start = loop_now_ms(), next = -1;
	int sliced = 0;

	m->flush_timer = 0;
	if (m->st.relist_nf) {
		m->st.relist_nf = 0;
		m->st.refresh_all = 1;
		informer_start(&m->inf[INF_NF].i);
		if (!synced(m))
			return; /* the list failed: it reschedules */
	}
	/* a relist for new rule features has not completed: the kept data is partial */
	if (!synced(m) || m->st.refresh_all || (!m->no_publish && !may_write(m)))
		return;
	m->dirty = 0;
	for (size_t i = 0; i < m->st.nodes.cap; i++) {
		struct nfstore_node *n = m->st.nodes.s[i].val;
		long long now;

		if (!m->st.nodes.s[i].key || !n->dirty || !n->exists)
			continue;
		now = loop_now_ms();
		if (n->retry_at > now) {
			if (next < 0 || n->retry_at - now < next)
				next = n->retry_at - now;
			continue;
		}
		if (now - start >= SLICE_MS || loop_signal(m->l) || (!may_write(m) && !m->no_publish)) {
			next = 0;
			sliced = 1;
			break;
		}
		lease_poll(m->lease);
		if (reconcile(m, n) < 0)
			return;
		if (n->dirty) {
			long long d = n->retry_at - loop_now_ms();

			if (next < 0 || d < next)
				next = d > 0 ? d : 0;
		}
	}
	/* the groups once every node had its turn (one retrying does not hold them up) */
	if (m->groups && !sliced && groups_flush(m, start, &next) < 0)
		return;
	if (next >= 0 || m->dirty) {
		m->dirty = 1;
		schedule(m, next >= 0 ? next : 0);
	}
}

static void on_resync(void *ctx)
{
	struct master *m = ctx;

	LOG_V(&m->log, 1, "resync: updating every node");
	mark_all(m, 1);
	loop_timer(m->l, m->resync_ms, on_resync, m);
}

static void on_leading(void *ctx, int leading)
{
	struct master *m = ctx;

	m->leading = leading;
	metrics_set(&m->mx, m->m_leader, leading);
	if (leading) {
		mark_all(m, 1);
		gc(m);
	}
}

/* ---- informers: list, then watch (core/informer) ----------------------- */

static int inf_apply(void *ctx, const struct json *obj)
{
	struct minf *in = ctx;

	return in->apply(in->m, obj, 0);
}

static int inf_delete(void *ctx, const struct json *obj)
{
	struct minf *in = ctx;

	return in->apply(in->m, obj, 1);
}

static void inf_begin(void *ctx)
{
	struct minf *in = ctx;

	in->begin(in->m);
}

static void inf_page(void *ctx)
{
	struct minf *in = ctx;

	lease_poll(in->m->lease); /* a long list must not cost the lease */
}

/* A list completed; its watch has not started yet. */
static void inf_end(void *ctx)
{
	struct minf *in = ctx;

	in->was = in->synced;
	in->end(in->m);
	in->synced = 1;
	if (!in->was)
		LOG_I(&in->m->log, "%ss listed (resourceVersion %s)", in->what, informer_rv(&in->i));
}

/* ... and its watch started. */
static void inf_started(void *ctx)
{
	struct minf *in = ctx;
	struct master *m = in->m;
	int was = in->was;

	if (in == &m->inf[INF_NODE] && was)
		gc(m); /* nodes gone while we were not watching */
	if (!was && synced(m)) {
		size_t kept = nfstore_kept_bytes(&m->st);

		LOG_I(&m->log, "everything listed: %zu nodes, %zu NodeFeatures (%zu KiB kept for %zu rule features), "
		      "%zu NodeFeatureRules%s; updating nodes", m->st.nodes.n, m->st.nfs.n, kept / 1024, m->st.n_refs,
		      m->st.n_nfrs, m->groups ? ", NodeFeatureGroups" : "");
		gc(m);
	}
	if (synced(m) && m->dirty)
		schedule(m, 0);
	/* the first lists go in order: rules, then NodeFeatures, then Nodes
	 * (one still retrying its first list is left to its own timer) */
	for (int i = 0; i < INF_COUNT && in->synced; i++) {
		if (m->inf[i].synced)
			continue;
		if (!informer_started(&m->inf[i].i))
			informer_start(&m->inf[i].i);
		break;
	}
}

static void on_start(void *ctx)
{
	struct master *m = ctx;

	informer_start(&m->inf[INF_NFR].i);
}

/* The four informers over the client (NS only with a namespace selector:
 * ns_query, else every namespace counts and none is listed). */
static int informers_setup(struct master *m, const char *ns_query)
{
	static const char *const what[INF_COUNT] = { "NodeFeatureRule", "NodeFeatureGroup", "NodeFeature", "Node",
						     "Namespace" };
	static const char *const path[INF_COUNT] = { NF_API "/nodefeaturerules", NULL, NF_API "/nodefeatures",
						     "/api/v1/nodes", "/api/v1/namespaces" };
	int (*const apply[INF_COUNT])(struct master *, const struct json *, int) = { nfr_apply, nfg_apply, nf_apply,
										 node_apply, ns_apply };
	void (*const begin[INF_COUNT])(struct master *) = { nfr_begin, nfg_begin, nf_begin, node_begin, ns_begin };
	void (*const end[INF_COUNT])(struct master *) = { nfr_end, nfg_end, nf_end, node_end, ns_end };
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	char ns_path[INFORMER_PATH_MAX], nfg_path[INFORMER_PATH_MAX];

	snprintf(ns_path, sizeof(ns_path), "%s?labelSelector=%s", path[INF_NS], ns_query);
	/* upstream watches every namespace's groups but updates only its own's */
	snprintf(nfg_path, sizeof(nfg_path), NF_API "/namespaces/%s/nodefeaturegroups", m->ns);
	for (int i = 0; i < INF_COUNT; i++) {
		struct minf *in = &m->inf[i];
		struct informer_conf c = { .what = what[i],
					   .path = i == INF_NS ? ns_path : i == INF_NFG ? nfg_path : path[i],
					   .log = &m->log, .ctx = in, .begin = inf_begin, .apply = inf_apply,
					   .delete = inf_delete, .end = inf_end, .started = inf_started, .page = inf_page,
					   .seed = seed + (unsigned)i };

		in->what = what[i];
		in->apply = apply[i];
		in->begin = begin[i];
		in->end = end[i];
		in->m = m;
		informer_init(&in->i);
		if (informer_setup_kube(&in->i, m->k, m->l, &c) < 0)
			return -FB_E2BIG;
	}
	if (!m->ns_filter)
		m->inf[INF_NS].synced = 1;
	if (!m->groups)
		m->inf[INF_NFG].synced = 1;
	return 0;
}

static void informers_free(struct master *m)
{
	for (int i = 0; i < INF_COUNT; i++)
		informer_free(&m->inf[i].i);
}

/* ---- prune -------------------------------------------------------------- */

struct prune_ctx {
	struct master *m;
	int failed, done;
};

static int prune_page(void *ctx, const struct json *items, int first)
{
	struct prune_ctx *p = ctx;
	struct master *m = p->m;

	(void)first;
	for (const struct json *it = json_child(items); it; it = json_next(it)) {
		const char *name = json_get_str(json_get(it, "metadata"), "name", "");
		struct nl_result res = { 0 };
		struct fb_errinfo ei;
		char msg[1300];
		int rc;

		fb_errinfo_init(&ei);
		rc = nl_apply(m->k, name, &m->pol, NULL, 0, &m->log, &res, &ei);
		if (rc == -FB_ECANCELED)
			return rc;
		if (rc < 0 && rc != -FB_ENOENT) {
			LOG_E(&m->log, "pruning node %s: %s", name, fb_errinfo_str(&ei, msg, sizeof(msg)));
			p->failed++;
		} else {
			LOG_I(&m->log, "node %s: %s", name, res.changed ? "pruned" : "nothing to prune");
			p->done++;
		}
	}
	return 0;
}

static int prune(struct master *m)
{
	struct prune_ctx p = { m, 0, 0 };
	struct fb_errinfo ei;
	char rv[64], msg[1300];

	fb_errinfo_init(&ei);
	if (kube_list_pages(m->k, "/api/v1/nodes", prune_page, &p, rv, sizeof(rv), &ei) < 0) {
		LOG_E(&m->log, "prune: listing nodes: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	LOG_I(&m->log, "prune: %d nodes done, %d failed", p.done, p.failed);
	return p.failed ? 1 : 0;
}

/* ---- feature gates ------------------------------------------------------ */

/* ---- options and configuration ------------------------------------------ */

struct master_opts {
	const char *config, *options, *kubeconfig, *bind_ip, *instance, *whitelist;
	struct opt_list feature_gates;
	unsigned ignored; /* OPT_IGNORE bits: upstream's v0.16 flags */
	int prune, leader, taints, no_publish;
	int seen_v, seen_resync, seen_page;
	struct opt_list extra, deny;
	long verbosity, port, page_size, parallelism;
	long long resync, gc_interval;
	struct app_klog klog;
};

#define MO(member) offsetof(struct master_opts, member)

static const struct opt master_optv[] = {
	{ .lo = "config", .kind = OPT_STR, .off = MO(config), .arg = "PATH",
	  .help = "config file (default " DEFAULT_CONFIG "; missing = defaults)" },
	{ .lo = "options", .kind = OPT_STR, .off = MO(options), .arg = "YAML",
	  .help = "config in the file's format, applied over the file" },
	{ .lo = "kubeconfig", .kind = OPT_STR, .off = MO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)" },
	{ .lo = "port", .kind = OPT_INT, .off = MO(port), .min = 0, .max = 65535, .arg = "N",
	  .help = "serve /metrics, /healthz and /readyz on this port (default 8080; 0: any)" },
	{ .lo = "bind-address", .kind = OPT_STR, .off = MO(bind_ip), .arg = "IP",
	  .help = "serve them on this address only (ours; default every interface)" },
	{ .lo = "instance", .kind = OPT_STR, .off = MO(instance), .arg = "NAME",
	  .help = "prefix the bookkeeping annotations with NAME. (several masters)" },
	{ .lo = "prune", .kind = OPT_FLAG, .off = MO(prune),
	  .help = "remove everything NFD put on all nodes, then exit" },
	{ .lo = "enable-leader-election", .kind = OPT_FLAG, .off = MO(leader),
	  .help = "several replicas: only the Lease holder writes" },
	{ .lo = "extra-label-ns", .kind = OPT_LIST, .off = MO(extra), .arg = "LIST",
	  .help = "namespaces allowed although denied (comma list)" },
	{ .lo = "deny-label-ns", .kind = OPT_LIST, .off = MO(deny), .arg = "LIST",
	  .help = "namespaces denied (comma list; *.example.com: suffix)" },
	{ .lo = "label-whitelist", .kind = OPT_STR, .off = MO(whitelist), .arg = "REGEX",
	  .help = "only label names (after the /) matching REGEX" },
	{ .lo = "enable-taints", .kind = OPT_FLAG, .off = MO(taints),
	  .help = "apply the taints of NodeFeatureRules" },
	{ .lo = "no-publish", .kind = OPT_FLAG, .off = MO(no_publish),
	  .help = "compute and log, write nothing" },
	{ .lo = "resync-period", .kind = OPT_DUR, .off = MO(resync), .seen = OPT_SEEN(struct master_opts, seen_resync),
	  .min = 1000, .arg = "DUR", .help = "update every node this often (default 1h)" },
	{ .lo = "gc-interval", .kind = OPT_DUR, .off = MO(gc_interval), .min = 0, .arg = "DUR",
	  .help = "delete NodeFeatures of deleted nodes this often (default 1h; 0: not at all, nfd-gc does)" },
	{ .lo = "informer-page-size", .kind = OPT_INT, .off = MO(page_size),
	  .seen = OPT_SEEN(struct master_opts, seen_page), .min = 0, .max = 100000, .arg = "N",
	  .help = "list page size (default 50; 0: no paging)" },
	{ .lo = "list-page-size", .kind = OPT_INT, .off = MO(page_size),
	  .seen = OPT_SEEN(struct master_opts, seen_page), .min = 0, .max = 100000, .arg = "N",
	  .help = "the same as --informer-page-size" },
	{ .lo = "nfd-api-parallelism", .kind = OPT_INT, .off = MO(parallelism), .min = 1, .max = 1000,
	  .arg = "N", .help = "accepted for compatibility (updates are sequential)" },
	{ .lo = "feature-gates", .kind = OPT_STRS, .off = MO(feature_gates), .arg = "K=V,...",
	  .help = "upstream's gates (repeatable); DisableAutoPrefix, NodeFeatureGroupAPI" },
	/* upstream v0.16's flags, gone since v0.17 (gRPC and the controllers' switches) */
	{ .lo = "verify-node-name", .kind = OPT_IGNORE, .off = MO(ignored), .min = 0,
	  .help = "v0.16's gRPC TLS check: NodeFeatures come through the API" },
	{ .lo = "crd-controller", .kind = OPT_IGNORE, .off = MO(ignored), .min = 1,
	  .help = "v0.16's switch: the NodeFeatureRule controller always runs" },
	{ .lo = "featurerules-controller", .kind = OPT_IGNORE, .off = MO(ignored), .min = 2,
	  .help = "v0.16's switch: the NodeFeatureRule controller always runs" },
	{ .lo = "resource-labels", .kind = OPT_IGNORE, .off = MO(ignored), .min = 3, .arg = "LIST",
	  .help = "v0.16's extended resources from labels: NodeFeatureRules' extendedResources do it" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = MO(verbosity), .seen = OPT_SEEN(struct master_opts, seen_v),
	  .min = 0, .max = 10, .arg = "N", .help = "log verbosity" },
};

static const struct opt_spec master_spec = { .name = "nfd-master", .usage = usage, .opts = master_optv,
					.nopts = sizeof(master_optv) / sizeof(master_optv[0]),
					.more = app_klog_opts, .nmore = APP_KLOG_NOPTS,
					.more_off = offsetof(struct master_opts, klog), .more_title = APP_KLOG_TITLE };

#define MI(member) offsetof(struct master, member)

static const double rule_buckets[] = { 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01 };

static const struct metrics_def master_metrics[] = {
	{ METRIC_GAUGE, "nfd_master_build_info", "version=\"" FB_VERSION "\"",
	  "Build information; the value is the start time", NULL, 0, MI(m_build) },
	{ METRIC_COUNTER, "nfd_master_node_update_requests_total", "", "Node updates attempted", NULL, 0,
	  MI(m_requests) },
	{ METRIC_COUNTER, "nfd_master_node_updates_total", "", "Node updates that changed the node", NULL, 0,
	  MI(m_updates) },
	{ METRIC_COUNTER, "nfd_master_node_update_failures_total", "",
	  "Nodes that failed to update 15 times in a row", NULL, 0, MI(m_failures) },
	{ METRIC_COUNTER, "nfd_master_node_labels_rejected_total", "",
	  "Labels rejected by the namespace policy, whitelist or syntax", NULL, 0, MI(m_rej_labels) },
	{ METRIC_COUNTER, "nfd_master_node_extendedresources_rejected_total", "", "Extended resources rejected",
	  NULL, 0, MI(m_rej_ers) },
	{ METRIC_COUNTER, "nfd_master_node_taints_rejected_total", "", "Taints rejected", NULL, 0,
	  MI(m_rej_taints) },
	{ METRIC_HISTOGRAM, "nfd_master_nodefeaturerule_processing_duration_seconds", "",
	  "Time to run one NodeFeatureRule on one node", rule_buckets,
	  sizeof(rule_buckets) / sizeof(rule_buckets[0]), MI(m_rule_time) },
	{ METRIC_COUNTER, "nfd_master_nodefeaturerule_processing_errors_total", "",
	  "Rules that were broken or failed on a node", NULL, 0, MI(m_rule_errors) },
	{ METRIC_COUNTER, "nfd_gc_objects_deleted_total", "kind=\"NodeFeature\"", "Objects of deleted nodes removed",
	  NULL, 0, MI(m_gc_deleted) },
	{ METRIC_COUNTER, "nfd_gc_object_delete_failures_total", "kind=\"NodeFeature\"", "Deletions that failed",
	  NULL, 0, MI(m_gc_failed) },
	{ METRIC_GAUGE, "nfd_master_leader", "", "1 while this replica may write", NULL, 0, MI(m_leader) },
	{ METRIC_COUNTER, "nfd_master_nodefeatures_rejected_total", "",
	  "NodeFeatures refused whole: over 1.5 MiB of JSON or over 10,000 labels", NULL, 0, MI(m_rej_nfs) },
};

_Static_assert(NS_QUERY_MAX == NFDCONF_NS_QUERY_MAX, "one selector size");

/* What main owns besides struct master: the options, the config, and what
 * m->pol borrows from them. */
struct master_run {
	struct master_opts o;
	struct nfd_master_config c;
	const char *extra_v[2 * OPT_LIST_MAX], *deny_v[2 * OPT_LIST_MAX];
	char addr[80], ident[320], host[256], where[96];
	struct app_probes probes;
};

static int ready_cb(void *ctx)
{
	return synced(ctx);
}

static void list_join(const struct nfd_strlist *cfg, const struct opt_list *flag, const char **v, size_t *n)
{
	for (size_t i = 0; i < cfg->n && *n < OPT_LIST_MAX; i++)
		v[(*n)++] = cfg->v[i];
	for (int i = 0; i < flag->n; i++)
		v[(*n)++] = flag->v[i];
}

/* Checks the flags and layers defaults < file < --options < flags into m.
 * Returns -1 to go on, else the exit status (the message logged). */
static int master_configure(struct master *m, struct master_run *r)
{
	struct master_opts *o = &r->o;
	struct nfd_master_config *c = &r->c;
	struct fb_errinfo ei;
	char msg[1300];
	int rc;

	fb_errinfo_init(&ei);
	if (http_addr_join(r->addr, sizeof(r->addr), o->bind_ip, o->port, &ei) < 0) {
		fprintf(stderr, "nfd-master: --bind-address %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	m->log.v = (int)o->verbosity;
	/* klog's flags first: everything logged from here on follows them
	 * (a -v in the config file still applies, as upstream's core.klog) */
	if ((rc = app_klog_apply(&o->klog, &m->log, "nfd-master")) < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	if (*o->instance && !labels_valid_name(o->instance, strlen(o->instance))) {
		fprintf(stderr, "nfd-master: --instance \"%s\": must be 1-63 of [A-Za-z0-9._-], alphanumeric at both ends\n",
			o->instance);
		return 2;
	}
	{
		int dap = 0, group = 0;

		if (app_feature_gates("nfd-master", &o->feature_gates, &dap, &group) < 0)
			return 2;
		/* unprefixed names written as they are (the header comment) */
		m->pol.unprefixed = dap ? NL_KEEP_UNPREFIXED : NL_AUTO_PREFIX;
		m->groups = group;
	}
	app_warn_ignored(&master_spec, o, &m->log);
	fb_errinfo_init(&ei);
	if (nfdconf_master_load_file(c, o->config, &m->log, &ei) < 0 ||
	    (o->options && nfdconf_master_apply_yaml(c, o->options, strlen(o->options), "--options", &m->log, &ei) < 0)) {
		LOG_E(&m->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	if (!o->seen_v && c->have_klog_v)
		m->log.v = (int)c->klog_v;
	/* klog.* of the file where no flag said otherwise, as upstream */
	if ((rc = app_klog_config(&r->o.klog, c->klog, &m->log, "nfd-master", "klog")) < 0)
		return rc == -FB_EUSAGE ? 2 : 1;
	m->no_publish = o->no_publish || c->no_publish;
	m->leader_election = o->leader;
	m->resync_ms = o->seen_resync ? o->resync : c->resync_ms;
	if (m->resync_ms < 1000)
		m->resync_ms = 1000;
	m->gc_ms = o->gc_interval;
	if (m->gc_ms > 0 && m->gc_ms < 1000) {
		fprintf(stderr, "nfd-master: --gc-interval: at least 1s, or 0 (no garbage collection here)\n");
		return 2;
	}
	m->pol.instance = o->instance;
	m->pol.extra_ns = r->extra_v;
	list_join(&c->extra_ns, &o->extra, r->extra_v, &m->pol.n_extra);
	m->pol.deny_ns = r->deny_v;
	list_join(&c->deny_ns, &o->deny, r->deny_v, &m->pol.n_deny);
	m->pol.enable_taints = o->taints || c->enable_taints;
	m->pol.allow_overwrite = c->allow_overwrite;
	/* the gate wins: v0.18 dropped autoDefaultNs (v0.17 refused unprefixed names with either) */
	if (m->pol.unprefixed == NL_AUTO_PREFIX && !c->auto_default_ns)
		m->pol.unprefixed = NL_DROP_UNPREFIXED;
	if (m->pol.unprefixed != NL_AUTO_PREFIX)
		LOG_I(&m->log, "unprefixed names are %s",
		      m->pol.unprefixed == NL_KEEP_UNPREFIXED ? "written as they are (DisableAutoPrefix)"
							      : "refused (autoDefaultNs: false)");
	m->disable_labels = c->disable_labels;
	m->disable_annotations = c->disable_annotations;
	m->disable_ers = c->disable_ers;
	m->deny_nf_labels = c->deny_nf_labels;
	m->ns_filter = c->ns_query[0] != '\0';
	if (m->disable_labels || m->disable_annotations || m->disable_ers || m->deny_nf_labels || m->ns_filter ||
	    !c->allow_overwrite)
		LOG_I(&m->log, "restrictions:%s%s%s%s%s%s%s", m->disable_labels ? " disableLabels" : "",
		      m->disable_annotations ? " disableAnnotations" : "",
		      m->disable_ers ? " disableExtendedResources" : "",
		      m->deny_nf_labels ? " denyNodeFeatureLabels" : "", !c->allow_overwrite ? " allowOverwrite=false" : "",
		      m->ns_filter ? " NodeFeatures only from the namespaces labelSelector=" : "", c->ns_query);
	m->pol.record = 1; /* the record label: see the header comment */
	m->pol.may_write = may_write_cb;
	m->pol.may_write_ctx = m;
	rc = nfdsrc_whitelist_setup(&m->whitelist, o->whitelist ? o->whitelist : c->whitelist, &ei);
	if (rc < 0) {
		LOG_E(&m->log, "--label-whitelist: %s", ei.detail);
		return 2;
	}
	if ((m->have_whitelist = rc == 1))
		m->pol.label_whitelist = &m->whitelist;
	return -1;
}

/* ---- setup and teardown ------------------------------------------------- */

/* The loop and the API client. Returns 0 or -1 (logged). */
static int master_connect(struct master *m, struct master_run *r)
{
	struct kube_opts ko;
	struct fb_errinfo ei;
	char msg[1300];
	int rc;

	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = r->o.kubeconfig;
	ko.page_size = (int)(r->o.seen_page ? r->o.page_size : r->c.page_size);
	if (ko.page_size == 0)
		ko.page_size = 1000000; /* "no paging": one page as large as the server gives */
	/* a master updates many nodes, two requests each: the API server's
	 * priority and fairness is the real limit, this only caps a runaway */
	ko.qps = 500;
	ko.burst = 1000;
	if (!r->o.prune) {
		/* the loop retries; a request must not hold the watches for minutes */
		ko.max_attempts = 3;
		ko.timeout_ms = 30000;
	}
	if (r->o.leader && !r->o.prune) {
		/* a request must end well inside the renew deadline: a PATCH
		 * still in flight when another replica leads is a stale write */
		ko.max_attempts = 1;
		ko.timeout_ms = (int)(r->c.renew_ms / 2 > 1000 ? r->c.renew_ms / 2 : 1000);
	}
	if ((rc = loop_new(&m->l, &ei)) == 0)
		rc = kube_connect(&m->k, &ko, &m->log, loop_cancel_fd(m->l), m->ns, sizeof(m->ns), &ei);
	if (rc < 0) {
		LOG_E(&m->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return -1;
	}
	return 0;
}

/* Leader election, or leading from the start. Returns 0 or -1 (logged). */
static int master_lead(struct master *m, struct master_run *r)
{
	struct lease_opts lo = { .ns = m->ns, .name = "nfd-master.nfd.kubernetes.io", .identity = r->ident,
				 .duration_ms = r->c.lease_ms, .renew_deadline_ms = r->c.renew_ms,
				 .retry_ms = r->c.retry_ms };
	unsigned rnd = (unsigned)time(NULL) ^ (unsigned)getpid() ^ (unsigned)loop_now_ms();

	if (!m->leader_election) {
		m->leading = 1;
		metrics_set(&m->mx, m->m_leader, 1);
		return 0;
	}
	if (!*app_node_name(NULL, r->host, sizeof(r->host)))
		snprintf(r->host, sizeof(r->host), "nfd-master");
	snprintf(r->ident, sizeof(r->ident), "%s_%08x", r->host, rnd * 2654435761u);
	if (lease_start(&m->lease, m->k, m->l, &lo, &m->log, on_leading, m) < 0) {
		LOG_E(&m->log, "out of memory");
		return -1;
	}
	LOG_I(&m->log, "leader election on Lease %s/%s as %s", m->ns, lo.name, r->ident);
	return 0;
}

static void master_teardown(struct master *m)
{
	lease_free(m->lease);
	informers_free(m);
	http_server_free(m->srv);
	nfstore_free(&m->st);
	kube_free(m->k);
	loop_free(m->l);
	if (m->have_whitelist)
		re_free(&m->whitelist);
}

/* ---- main --------------------------------------------------------------- */

int nfd_master_main(int argc, char **argv)
{
	struct master m;
	struct master_run r = { .o = { .config = DEFAULT_CONFIG, .instance = "", .bind_ip = "", .port = 8080,
				       .page_size = 50, .parallelism = 10, .resync = 3600000,
				       .gc_interval = 3600000 } };
	int rc, ret = 1;

	memset(&m, 0, sizeof(m));
	log_init(&m.log);
	metrics_init(&m.mx);
	nl_policy_init(&m.pol);
	nfdconf_master_init(&r.c);
	app_klog_init(&r.o.klog);
	if ((rc = opt_parse_only(&master_spec, &r.o, argc, argv)) >= 0)
		return rc;
	if ((rc = master_configure(&m, &r)) >= 0) {
		ret = rc;
		goto out;
	}
	metrics_add_table(&m.mx, master_metrics, sizeof(master_metrics) / sizeof(master_metrics[0]), &m);
	metrics_set(&m.mx, m.m_build, (double)time(NULL));
	if (master_connect(&m, &r) < 0)
		goto out;
	if (r.o.prune) {
		if (m.no_publish) {
			LOG_E(&m.log, "--prune with --no-publish: nothing would be written");
			ret = 2;
			goto out;
		}
		ret = prune(&m);
		goto out;
	}
	r.probes = (struct app_probes){ .mx = &m.mx, .ready = ready_cb, .ctx = &m, .livez = 1,
					.waiting = "waiting for the first complete list\n" };
	snprintf(r.where, sizeof(r.where), "%s%.80s", *r.o.bind_ip ? " of " : "", r.o.bind_ip);
	app_serve(&m.srv, m.l, r.addr, &r.probes, &m.log, "/healthz, /readyz and /metrics", r.where);
	store_setup(&m);
	if (informers_setup(&m, r.c.ns_query) < 0) {
		LOG_E(&m.log, "the Namespace selector is too long");
		goto out;
	}
	if (master_lead(&m, &r) < 0)
		goto out;
	loop_timer(m.l, 0, on_start, &m);
	loop_timer(m.l, m.resync_ms, on_resync, &m);
	if (m.gc_ms > 0) /* 0: nfd-gc collects (upstream's layout) */
		loop_timer(m.l, m.gc_ms, on_gc, &m);
	loop_run(m.l);
	LOG_I(&m.log, "stopping (signal %d)", loop_signal(m.l));
	ret = 0;
out:
	master_teardown(&m);
	nfdconf_master_free(&r.c);
	return ret;
}
