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
 * NF_MAX_BYTES of JSON (1.5 MiB, etcd's default limit; clusters can raise it)
 * or with more than NF_MAX_LABELS labels (10,000: twenty times the largest
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
 * - NodeFeatureGroups are not implemented (see the configuration below).
 * - Lists are paged by 50 unless --informer-page-size says otherwise
 *   (upstream: 200): a page of 10-20 KiB NodeFeatures is about 100 KiB each
 *   once parsed, and the page is the biggest thing the master holds.
 * - --gc-interval is ours (upstream's nfd-gc has -gc-interval).
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
 *   are accepted; DisableAutoPrefix=true (unprefixed names written as they
 *   are: which names are written, owned and removed) is not implemented:
 *   exit 1. NodeFeatureGroupAPI=true warns and runs: groups only get a
 *   status, and not writing it grants nothing. Unknown gates, bad values and
 *   NodeFeatureAPI=false are usage errors (exit 2), as upstream.
 * - autoDefaultNs (v0.17-v0.18): true is what we do; false (DisableAutoPrefix)
 *   exit 1.
 * - nfdApiParallelism / --nfd-api-parallelism: performance only, ignored.
 * - klog.* other than v: where logs go, ignored (stderr).
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
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/labels.h"
#include "../core/lease.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "../core/nfdconf.h"
#include "../core/nfdsrc.h"
#include "../core/nodelabels.h"
#include "../core/opt.h"
#include "../core/rules.h"
#include "../core/sysfs.h"
#include "../core/version.h"
#include "../core/yaml.h"

#include <fcntl.h>
#include <regex.h>
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
#define NODE_NAME_LABEL "nfd.node.kubernetes.io/node-name"
#define FLUSH_MS 1000        /* events are coalesced for this long (upstream: 1 s) */
#define SLICE_MS 100         /* node updates in one go before the loop runs again */
#define RETRY_BASE_MS 50     /* per-node retry: 50 ms .. 100 s, as upstream's queue */
#define RETRY_MAX_MS 100000
#define FAILS_COUNTED 15     /* upstream counts a failure after 15 requeues */
#define NF_MAX_BYTES (1536 * 1024) /* a NodeFeature's JSON: what etcd stores by default */
#define NF_MAX_LABELS FEATURES_MAX_LABELS /* spec.labels of one NodeFeature (see the header) */

/* ---- a string-keyed hash table ------------------------------------------ */

struct slot {
	const char *key; /* borrowed from the value */
	void *val;
};
struct smap {
	struct slot *s;
	size_t cap, n;
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}
#define FNV0 0xcbf29ce484222325ULL

static size_t smap_find(const struct smap *m, const char *key)
{
	size_t i = fnv(key, strlen(key), FNV0) & (m->cap - 1);

	while (m->s[i].key && strcmp(m->s[i].key, key) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void *smap_get(const struct smap *m, const char *key)
{
	const struct slot *sl = m->cap ? &m->s[smap_find(m, key)] : NULL;

	return sl && sl->key ? sl->val : NULL;
}

static int smap_put(struct smap *m, const char *key, void *val)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct smap g = { calloc(m->cap ? m->cap * 2 : 64, sizeof(struct slot)), m->cap ? m->cap * 2 : 64, 0 };

		if (!g.s)
			return -FB_ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->s[i].key)
				g.s[smap_find(&g, m->s[i].key)] = m->s[i];
		g.n = m->n;
		free(m->s);
		*m = g;
	}
	size_t i = smap_find(m, key);

	if (!m->s[i].key)
		m->n++;
	m->s[i].key = key;
	m->s[i].val = val;
	return 0;
}

/* Linear probing removal with backward shift: no tombstones. */
static void smap_del(struct smap *m, const char *key)
{
	size_t i, j;

	if (!m->cap || !m->s[i = smap_find(m, key)].key)
		return;
	m->s[i].key = NULL;
	m->s[i].val = NULL;
	m->n--;
	for (j = (i + 1) & (m->cap - 1); m->s[j].key; j = (j + 1) & (m->cap - 1)) {
		size_t want = fnv(m->s[j].key, strlen(m->s[j].key), FNV0) & (m->cap - 1);

		/* move j back to i unless its home lies cyclically in (i, j] */
		if ((j > i && (want <= i || want > j)) || (j < i && want <= i && want > j)) {
			m->s[i] = m->s[j];
			m->s[j].key = NULL;
			m->s[j].val = NULL;
			i = j;
		}
	}
}

/* ---- state -------------------------------------------------------------- */

struct node;

struct nf {                    /* one NodeFeature object */
	char *key;             /* "namespace/name", owned; ns and name point past it */
	const char *ns, *name;
	struct node *node;
	struct nf *next;       /* the node's other objects */
	uint64_t hash;         /* spec, owner references, node name, pod uid */
	char *data;            /* {"labels":{...},"features":{...}} kept part, owned */
	char **dyn;            /* features its "@" label values name (with repeats), owned */
	size_t n_dyn;
	unsigned dyn_gen;      /* the node's dyn_gen when data was kept */
	int seen;
};

struct dref {                  /* a feature some "@" label value of a node names */
	size_t refs;           /* how many such values, over the node's objects */
	char name[];
};

struct node {
	char *name;            /* owned */
	struct nf *nfs;
	struct smap dyn;       /* name -> struct dref: what its objects keep for "@" values */
	unsigned dyn_gen;      /* bumped when dyn gains a name: objects kept before lack it */
	unsigned exists : 1, dirty : 1, force : 1, processed : 1, pending_delete : 1, seen : 1;
	uint64_t applied;      /* hash of the desired state last written */
	int fails;
	long long retry_at;
};

struct nfr {                   /* one NodeFeatureRule object */
	char *name;
	uint64_t hash;
	struct rules *rules;
	char **dyn;                    /* features of "@..." output values, as kept-set entries */
	size_t n_dyn;
	int seen, errors_logged;
};

struct nsel {                  /* a namespace the selector selects */
	char *name;            /* owned */
	int seen;
};

struct master;

struct informer {
	const char *what;              /* "NodeFeature" */
	char path[1024];               /* collection (and a labelSelector: NS_QUERY_MAX) */
	int (*apply)(struct master *m, const struct json *obj, int deleted);
	void (*begin)(struct master *m);
	void (*end)(struct master *m);
	struct kube_watch *w;
	struct kube_backoff bo;        /* reset only by a watch that lived 30 s */
	long long watch_ms;            /* when the current watch started */
	char rv[64];                   /* re-watch from here after a failed watch */
	int rewatch_fails;             /* failed watches in a row with no event */
	int fresh;                     /* the watch started from a list just made */
	int synced, timer, failing;
	struct master *m;
};

/* INF_NS only with restrictions.nodeFeatureNamespaceSelector: else synced from the start */
enum { INF_NFR, INF_NF, INF_NODE, INF_NS, INF_COUNT };
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
	regex_t whitelist;
	int have_whitelist, no_publish, leader_election, leading;
	long long resync_ms, gc_ms;
	struct lease *lease;
	struct informer inf[INF_COUNT];
	struct smap nfs, nodes;
	struct nfr **nfrs;             /* sorted by name */
	size_t n_nfrs;
	char **refs;                   /* features the rules match on, sorted */
	size_t n_refs;
	int refresh_all;               /* relisting NodeFeatures for new refs: ignore hashes */
	int relist_nf;                 /* the refs grew: list NodeFeatures again */
	int flush_timer, dirty;
	long long flush_due;           /* loop_now_ms() when flush_timer fires */
	/* restrictions.*: the node-feature namespace selector is a server-side
	 * labelSelector on the Namespace list and watch; nss is what it selects */
	int ns_filter, deny_nf_labels, disable_labels, disable_annotations, disable_ers;
	struct smap nss;
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

static void mark(struct master *m, struct node *n, int force)
{
	n->dirty = 1;
	n->force |= force;
	m->dirty = 1;
	schedule(m, FLUSH_MS);
}

static void mark_all(struct master *m, int force)
{
	for (size_t i = 0; i < m->nodes.cap; i++)
		if (m->nodes.s[i].key)
			mark(m, m->nodes.s[i].val, force);
}

static struct node *node_get(struct master *m, const char *name)
{
	struct node *n = smap_get(&m->nodes, name);

	if (n)
		return n;
	if (!(n = calloc(1, sizeof(*n))) || !(n->name = strdup(name)) || smap_put(&m->nodes, n->name, n) < 0) {
		if (n)
			free(n->name);
		free(n);
		return NULL;
	}
	return n;
}

/* Drops a node entry nobody needs any more: no Node, no NodeFeature. */
static void node_gc_entry(struct master *m, struct node *n)
{
	if (n->exists || n->nfs)
		return;
	smap_del(&m->nodes, n->name);
	free(n->dyn.s); /* empty: every object took its names back */
	free(n->name);
	free(n);
}

/* ---- "@" lookups: what a node's objects keep ---------------------------- */

/* An "@" label value is looked up in the features merged from all of the
 * node's objects, so each of them keeps every feature any of them names. The
 * node counts the names its objects' labels use (each object adds its own
 * list and takes it back when it changes or goes): linear in an object's
 * labels, and a name no object uses any more is gone. */
static void dyn_del(struct node *n, char *const *v, size_t k)
{
	for (size_t i = 0; i < k; i++) {
		struct dref *d = smap_get(&n->dyn, v[i]);

		if (d && !--d->refs) {
			smap_del(&n->dyn, d->name);
			free(d);
		}
	}
}

/* How many of the names are new to the node, or -FB_ENOMEM (nothing added). */
static long dyn_add(struct node *n, char *const *v, size_t k)
{
	long added = 0;

	for (size_t i = 0; i < k; i++) {
		struct dref *d = smap_get(&n->dyn, v[i]);
		size_t len = strlen(v[i]);

		if (d) {
			d->refs++;
			continue;
		}
		if (!(d = malloc(sizeof(*d) + len + 1))) {
			dyn_del(n, v, i);
			return -FB_ENOMEM;
		}
		d->refs = 1;
		memcpy(d->name, v[i], len + 1);
		if (smap_put(&n->dyn, d->name, d) < 0) {
			free(d);
			dyn_del(n, v, i);
			return -FB_ENOMEM;
		}
		added++;
	}
	return added;
}

/* ---- features the rules need -------------------------------------------- */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The kept set is sorted strings: "feature" (every element) or
 * "feature\nelement" (that element; of instances, that attribute). */
static int ref_has(const struct master *m, const char *ref)
{
	return m->n_refs && bsearch(&ref, m->refs, m->n_refs, sizeof(char *), str_cmp) != NULL;
}

static int ref_elem(const struct master *m, const char *feature, const char *element)
{
	char buf[512];

	return snprintf(buf, sizeof(buf), "%s\n%s", feature, element) < (int)sizeof(buf) && ref_has(m, buf);
}

/* 0: neither the rules nor an "@" value of node nd look at feature; 1: at
 * all of it; 2: the rules at some elements */
static int ref_mode(const struct master *m, const struct node *nd, const char *feature)
{
	char buf[512];
	size_t lo = 0, hi = m->n_refs, n;

	if (ref_has(m, feature) || smap_get(&nd->dyn, feature))
		return 1;
	n = (size_t)snprintf(buf, sizeof(buf), "%s\n", feature);
	if (n >= sizeof(buf))
		return 1;
	while (lo < hi) { /* the first entry >= "feature\n" */
		size_t mid = (lo + hi) / 2;

		if (strcmp(m->refs[mid], buf) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n_refs && strncmp(m->refs[lo], buf, n) == 0 ? 2 : 0;
}

struct refs_acc {
	char **v;
	size_t n, cap;
	int nomem;
};

static void refs_add(void *ctx, const char *feature, const char *element)
{
	struct refs_acc *a = ctx;
	size_t fl = strlen(feature), el = element ? strlen(element) : 0;

	if (a->nomem)
		return;
	if (a->n == a->cap) {
		char **v = realloc(a->v, (a->cap = a->cap ? a->cap * 2 : 16) * sizeof(*v));

		if (!v) {
			a->nomem = 1;
			return;
		}
		a->v = v;
	}
	if (!(a->v[a->n] = malloc(fl + el + 2))) {
		a->nomem = 1;
		return;
	}
	memcpy(a->v[a->n], feature, fl + 1);
	if (element) {
		a->v[a->n][fl] = '\n';
		memcpy(a->v[a->n] + fl + 1, element, el + 1);
	}
	a->n++;
}

/* "@domain.feature.element" -> element of "domain.feature" */
static void refs_add_dynamic(struct refs_acc *a, const char *value, int whole)
{
	char buf[256];
	char *dot;

	if (!value || value[0] != '@' || snprintf(buf, sizeof(buf), "%s", value + 1) >= (int)sizeof(buf))
		return;
	if ((dot = strchr(buf, '.')) && (dot = strchr(dot + 1, '.'))) {
		*dot = '\0';
		refs_add(a, buf, whole ? NULL : dot + 1);
	}
}

static void refs_rule_values(struct refs_acc *a, const struct json *spec)
{
	/* rule outputs may be "@..." lookups too */
	for (const struct json *r = json_child(json_get(spec, "rules")); r; r = json_next(r)) {
		for (const struct json *c = json_child(json_get(r, "labels")); c; c = json_next(c))
			refs_add_dynamic(a, json_str(c), 0);
		for (const struct json *c = json_child(json_get(r, "extendedResources")); c; c = json_next(c))
			refs_add_dynamic(a, json_str(c), 0);
	}
}

/* Recomputes the feature set from all rules. Returns 1 when it has a feature
 * the old set lacked (the kept NodeFeature data is then incomplete). */
static int refs_update(struct master *m)
{
	struct refs_acc a = { 0 };
	int grew = 0;

	for (size_t i = 0; i < m->n_nfrs; i++) {
		rules_refs(m->nfrs[i]->rules, refs_add, &a);
		for (size_t j = 0; j < m->nfrs[i]->n_dyn; j++)
			refs_add(&a, m->nfrs[i]->dyn[j], NULL);
	}
	if (a.nomem) {
		for (size_t i = 0; i < a.n; i++)
			free(a.v[i]);
		free(a.v);
		LOG_E(&m->log, "out of memory collecting rule features; keeping the old set");
		return 0;
	}
	if (a.n)
		qsort(a.v, a.n, sizeof(char *), str_cmp);
	size_t u = 0;

	for (size_t i = 0; i < a.n; i++) {
		if (u && strcmp(a.v[u - 1], a.v[i]) == 0) {
			free(a.v[i]);
			continue;
		}
		a.v[u++] = a.v[i];
	}
	for (size_t i = 0; i < u && !grew; i++) {
		char *nl = strchr(a.v[i], '\n');

		if (strncmp(a.v[i], "rule.matched", 12) == 0 && (!a.v[i][12] || a.v[i][12] == '\n'))
			continue;
		if (nl) {
			*nl = '\0';
			grew = !ref_has(m, a.v[i]);
			*nl = '\n';
		} else {
			grew = 1;
		}
		grew = grew && !ref_has(m, a.v[i]);
	}
	for (size_t i = 0; i < m->n_refs; i++)
		free(m->refs[i]);
	free(m->refs);
	m->refs = a.v;
	m->n_refs = u;
	return grew;
}

/* ---- NodeFeatures ------------------------------------------------------- */

static const char *const kinds[] = { "flags", "attributes", "instances" };

/* Copies feature c (a {"elements": ...} set) keeping only the elements,
 * or of instances the attributes, the rules name. Owned, NULL on ENOMEM. */
static struct json *keep_some(const struct master *m, int kind, const char *feature, const struct json *c)
{
	struct json *out = json_new_object(), *el = kind == 2 ? json_new_array() : json_new_object();

	if (!out || !el || json_set_take(out, "elements", el) < 0) {
		json_free(el);
		json_free(out);
		return NULL;
	}
	for (const struct json *e = json_child(json_get(c, "elements")); e; e = json_next(e)) {
		if (kind != 2) {
			if (ref_elem(m, feature, json_key(e)) && json_set_take(el, json_key(e), json_dup(e)) < 0)
				goto nomem;
			continue;
		}
		/* every instance stays (their number matters), with the named attributes */
		struct json *inst = json_new_object(), *attrs = json_new_object();

		if (!inst || !attrs || json_set_take(inst, "attributes", attrs) < 0 || json_append_take(el, inst) < 0) {
			json_free(attrs);
			json_free(inst);
			goto nomem;
		}
		for (const struct json *a = json_child(json_get(e, "attributes")); a; a = json_next(a))
			if (ref_elem(m, feature, json_key(a)) && json_set_take(attrs, json_key(a), json_dup(a)) < 0)
				goto nomem;
	}
	return out;
nomem:
	json_free(out);
	return NULL;
}

static void nf_free_dyn(struct nf *o)
{
	for (size_t i = 0; i < o->n_dyn; i++)
		free(o->dyn[i]);
	free(o->dyn);
	o->dyn = NULL;
	o->n_dyn = 0;
}

/* Members of an object by name, the last of a name winning: win maps each
 * name to the member kept. Keeping only those, in one more walk, is linear
 * where json_set_take (which looks for the name among every member) is
 * quadratic. name is the member's key or a suffix of it. */
static int win_note(struct smap *win, const char *name, const struct json *c)
{
	return smap_put(win, name, (void *)c);
}

static int win_is(const struct smap *win, const char *name, const struct json *c)
{
	return smap_get(win, name) == c;
}

/* The part of NodeFeature o's spec the master needs, printed. Owned, NULL
 * on ENOMEM. Takes o's "@" lookups to its node first (o->node is set). */
static char *nf_keep(struct master *m, struct nf *o, const struct json *spec)
{
	struct node *nd = o->node;
	struct json *keep = json_new_object(), *feats = json_new_object(), *lab = json_get(spec, "labels");
	const struct json *have = json_get(spec, "features");
	struct refs_acc dyn = { 0 };
	struct smap win = { 0 };
	char *out = NULL;
	long grew;

	if (!keep || !feats)
		goto out;
	if (json_type(lab) == JSON_OBJECT) {
		struct json *kl = json_new_object();
		size_t pl = strlen(NL_DEFAULT_NS "/");

		if (!kl || json_set_take(keep, "labels", kl) < 0)
			goto out;
		/* kept with the default prefix taken off (merging puts it back):
		 * half the bytes; a prefixed key wins over the same key unprefixed.
		 * Not off "<default>/a/b": merging would read "a/b" as a label of
		 * namespace a (tests/fuzz/corpus/nodefeature/edge0) */
		for (int emit = 0; emit < 2; emit++)
			for (int pass = 0; pass < 2; pass++)
				for (const struct json *c = json_child(lab); c; c = json_next(c)) {
					const char *k = json_key(c);
					int prefixed = strncmp(k, NL_DEFAULT_NS "/", pl) == 0 && !strchr(k + pl, '/');

					if (!json_str(c) || prefixed != pass)
						continue;
					k = prefixed ? k + pl : k;
					if (!emit) {
						if (win_note(&win, k, c) < 0)
							goto out;
						continue;
					}
					if (!win_is(&win, k, c))
						continue;
					if (json_add_take(kl, k, json_new_string(json_str(c))) < 0)
						goto out;
					refs_add_dynamic(&dyn, json_str(c), 1);
				}
	}
	/* the node's lookups: this object's names in, its old ones out */
	if (dyn.nomem || (grew = dyn_add(nd, dyn.v, dyn.n)) < 0)
		goto out;
	dyn_del(nd, o->dyn, o->n_dyn);
	nf_free_dyn(o);
	o->dyn = dyn.v;
	o->n_dyn = dyn.n;
	dyn.v = NULL;
	dyn.n = 0;
	if (grew) {
		/* the node's other objects were kept without these: read again
		 * before the node is next updated (nf_refetch) */
		nd->dyn_gen++;
		LOG_V(&m->log, 1, "NodeFeature %s: its labels look up %ld more features of node %s", o->key, grew,
		      nd->name);
	}
	o->dyn_gen = nd->dyn_gen;
	for (int k = 0; k < 3; k++) {
		const struct json *src = json_get(have, kinds[k]);
		struct json *dst = json_new_object();

		if (!dst || json_set_take(feats, kinds[k], dst) < 0)
			goto out;
		if (json_type(src) != JSON_OBJECT)
			continue; /* not a map of features: nothing to keep */
		free(win.s);
		memset(&win, 0, sizeof(win));
		for (const struct json *c = json_child(src); c; c = json_next(c))
			if (win_note(&win, json_key(c), c) < 0)
				goto out;
		for (const struct json *c = json_child(src); c; c = json_next(c)) {
			int mode = ref_mode(m, nd, json_key(c));

			if (mode == 0 || !win_is(&win, json_key(c), c))
				continue;
			if (json_add_take(dst, json_key(c), mode == 1 ? json_dup(c) : keep_some(m, k, json_key(c), c)) < 0)
				goto out;
		}
	}
	if (json_set_take(keep, "features", feats) < 0) {
		feats = NULL;
		goto out;
	}
	feats = NULL;
	out = json_print(keep, NULL);
out:
	for (size_t i = 0; i < dyn.n; i++)
		free(dyn.v[i]);
	free(dyn.v);
	free(win.s);
	json_free(feats);
	json_free(keep);
	return out;
}

static void nf_unlink(struct nf *o)
{
	struct nf **pp;

	if (!o->node)
		return;
	dyn_del(o->node, o->dyn, o->n_dyn);
	nf_free_dyn(o);
	for (pp = &o->node->nfs; *pp && *pp != o; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = o->next;
	o->next = NULL;
	o->node = NULL;
}

static void nf_free(struct nf *o)
{
	nf_free_dyn(o);
	free(o->key);
	free(o->data);
	free(o);
}

static void nf_delete(struct master *m, struct nf *o)
{
	struct node *n = o->node;

	nf_unlink(o);
	smap_del(&m->nfs, o->key);
	nf_free(o);
	if (n) {
		n->pending_delete = 1;
		if (n->exists)
			mark(m, n, 0);
		else
			node_gc_entry(m, n);
	}
}

/* The bytes string s takes in compact JSON, quotes included. */
static size_t json_str_size(const char *s)
{
	size_t n = 2;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		n += c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t' ? 2
			: c < 0x20 ? 6 : 1;
	}
	return n;
}

/* Hashes j by walking it and adds to *size (may be NULL) the bytes of its
 * compact JSON: a 1 MB object is not printed to a 1 MB string for either. */
static uint64_t hash_walk(const struct json *j, uint64_t h, size_t *size)
{
	size_t n = 0;
	enum json_type t = json_type(j);

	if (t == JSON_OBJECT || t == JSON_ARRAY) {
		h = fnv(t == JSON_OBJECT ? "{" : "[", 1, h);
		n = 2;
		for (const struct json *c = json_child(j); c; c = json_next(c)) {
			if (t == JSON_OBJECT) {
				h = fnv(json_key(c), strlen(json_key(c)) + 1, h);
				n += json_str_size(json_key(c)) + 1;
			}
			n += c != json_child(j); /* the comma */
			h = hash_walk(c, h, size);
		}
		h = fnv(t == JSON_OBJECT ? "}" : "]", 1, h);
	} else if (t == JSON_STRING) {
		h = fnv("s", 1, h);
		h = fnv(json_str(j), strlen(json_str(j)) + 1, h);
		n = json_str_size(json_str(j));
	} else if (t != JSON_INVALID) {
		char *p = json_print(j, &n); /* null, true, 1.5 */

		if (p)
			h = fnv(p, n, h);
		free(p);
	}
	if (size)
		*size += n;
	return h;
}

static uint64_t hash_json(const struct json *j, uint64_t h)
{
	return fnv("|", 1, hash_walk(j, h, NULL));
}

static int nf_apply(struct master *m, const struct json *obj, int deleted)
{
	const struct json *md = json_get(obj, "metadata");
	const char *ns = json_get_str(md, "namespace", ""), *name = json_get_str(md, "name", "");
	const char *node = json_get_str(json_get(md, "labels"), NODE_NAME_LABEL, NULL);
	const char *uid = json_get_str(json_get(md, "annotations"), "nfd.node.kubernetes.io/worker.pod.uid", "");
	char key[600];
	struct nf *o;
	struct node *n;
	uint64_t h;

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	o = smap_get(&m->nfs, key);
	if (deleted) {
		if (o)
			nf_delete(m, o);
		return 0;
	}
	{
		/* beyond sane bounds: refused whole before anything else is done
		 * with it, and what it said before no longer counts */
		size_t size = 0, nl = json_count(json_get(json_get(obj, "spec"), "labels"));
		char why[96] = "";

		if (nl > NF_MAX_LABELS)
			snprintf(why, sizeof(why), "%zu labels, more than %d", nl, NF_MAX_LABELS);
		else if (hash_walk(obj, 0, &size), size > NF_MAX_BYTES)
			snprintf(why, sizeof(why), "%zu bytes of JSON, more than %d", size, NF_MAX_BYTES);
		if (why[0]) {
			LOG_W(&m->log, "NodeFeature %s (node %s): %s; refused, not processed", key,
			      node && *node ? node : "?", why);
			metrics_inc(&m->mx, m->m_rej_nfs, 1);
			if (o)
				nf_delete(m, o);
			return 0;
		}
	}
	if (!node || !*node) {
		LOG_E(&m->log, "NodeFeature %s has no %s label; ignoring it", key, NODE_NAME_LABEL);
		if (o)
			nf_delete(m, o);
		return 0;
	}
	h = hash_json(json_get(obj, "spec"), FNV0);
	h = hash_json(json_get(md, "ownerReferences"), h);
	h = fnv(uid, strlen(uid) + 1, h);
	h = fnv(node, strlen(node) + 1, h);
	if (o) {
		o->seen = 1;
		if (o->hash == h && !m->refresh_all)
			return 0;
	} else {
		size_t kl = strlen(key) + 1;

		/* "ns/name\0ns\0name\0": the map's key, then the two parts */
		if (!(o = calloc(1, sizeof(*o))) || !(o->key = malloc(2 * kl))) {
			free(o);
			return -FB_ENOMEM;
		}
		memcpy(o->key, key, kl);
		memcpy(o->key + kl, key, kl);
		o->key[kl + strlen(ns)] = '\0';
		o->ns = o->key + kl;
		o->name = o->key + kl + strlen(ns) + 1;
		if (smap_put(&m->nfs, o->key, o) < 0) {
			free(o->key);
			free(o);
			return -FB_ENOMEM;
		}
		o->seen = 1;
	}
	if (!o->node || strcmp(o->node->name, node) != 0) {
		struct node *old = o->node;

		nf_unlink(o);
		if (old) {
			old->pending_delete = 1;
			if (old->exists)
				mark(m, old, 0);
			else
				node_gc_entry(m, old);
		}
		if (!(n = node_get(m, node)))
			return -FB_ENOMEM; /* the hash is not updated: the next event tries again */
		o->node = n;
		o->next = n->nfs;
		n->nfs = o;
	}
	free(o->data);
	if (!(o->data = nf_keep(m, o, json_get(obj, "spec")))) {
		o->hash = 0;
		return -FB_ENOMEM;
	}
	o->hash = h;
	if (o->node->exists)
		mark(m, o->node, 0);
	return 0;
}

static void nf_begin(struct master *m)
{
	for (size_t i = 0; i < m->nfs.cap; i++)
		if (m->nfs.s[i].key)
			((struct nf *)m->nfs.s[i].val)->seen = 0;
}

static void nf_end(struct master *m)
{
	/* gone while we were not watching */
	for (size_t i = 0; i < m->nfs.cap;) {
		struct nf *o = m->nfs.s[i].val;

		if (m->nfs.s[i].key && !o->seen)
			nf_delete(m, o); /* may shift a later entry into slot i: look again */
		else
			i++;
	}
	m->refresh_all = 0;
}

/* ---- NodeFeatureRules --------------------------------------------------- */

static void nfr_free_dyn(struct nfr *r)
{
	for (size_t i = 0; i < r->n_dyn; i++)
		free(r->dyn[i]);
	free(r->dyn);
	r->dyn = NULL;
	r->n_dyn = 0;
}

static void nfr_free(struct nfr *r)
{
	if (!r)
		return;
	nfr_free_dyn(r);
	rules_free(r->rules);
	free(r->name);
	free(r);
}

static void nfr_changed(struct master *m)
{
	if (refs_update(m) && m->inf[INF_NF].synced) {
		LOG_I(&m->log, "the rules match on features not kept so far: listing NodeFeatures again");
		m->relist_nf = 1;
	}
	mark_all(m, 0);
}

static int nfr_apply(struct master *m, const struct json *obj, int deleted)
{
	const char *name = json_get_str(json_get(obj, "metadata"), "name", "");
	const struct json *spec = json_get(obj, "spec");
	struct nfr *r = NULL;
	size_t i;
	uint64_t h;
	char what[300];

	for (i = 0; i < m->n_nfrs && strcmp(m->nfrs[i]->name, name) < 0; i++)
		;
	if (i < m->n_nfrs && strcmp(m->nfrs[i]->name, name) == 0)
		r = m->nfrs[i];
	if (deleted) {
		if (r) {
			nfr_free(r);
			memmove(m->nfrs + i, m->nfrs + i + 1, (m->n_nfrs - i - 1) * sizeof(*m->nfrs));
			m->n_nfrs--;
			LOG_I(&m->log, "NodeFeatureRule %s deleted", name);
			nfr_changed(m);
		}
		return 0;
	}
	h = hash_json(spec, FNV0);
	if (r) {
		r->seen = 1;
		if (r->hash == h)
			return 0;
	} else {
		struct nfr **v = realloc(m->nfrs, (m->n_nfrs + 1) * sizeof(*v));

		if (!v)
			return -FB_ENOMEM;
		m->nfrs = v;
		if (!(r = calloc(1, sizeof(*r))) || !(r->name = strdup(name))) {
			free(r);
			return -FB_ENOMEM;
		}
		memmove(m->nfrs + i + 1, m->nfrs + i, (m->n_nfrs - i) * sizeof(*m->nfrs));
		m->nfrs[i] = r;
		m->n_nfrs++;
		r->seen = 1;
	}
	struct rules *rs;

	snprintf(what, sizeof(what), "NodeFeatureRule %s", name);
	if (rules_compile(&rs, json_get(spec, "rules"), RULES_NFR, what) < 0)
		return -FB_ENOMEM;
	rules_free(r->rules);
	r->rules = rs;
	r->hash = h;
	{
		struct refs_acc a = { 0 };

		refs_rule_values(&a, spec);
		nfr_free_dyn(r);
		r->dyn = a.v;
		r->n_dyn = a.nomem ? 0 : a.n;
		if (a.nomem)
			LOG_E(&m->log, "%s: out of memory noting its \"@\" values", what);
	}
	r->errors_logged = 0;
	for (size_t j = 0; j < rules_count(rs); j++)
		if (rules_error(rs, j)) {
			LOG_E(&m->log, "%s: rule \"%s\": %s (the rule is skipped)", what, rules_name(rs, j),
			      rules_error(rs, j));
			metrics_inc(&m->mx, m->m_rule_errors, 1);
		}
	LOG_I(&m->log, "%s: %zu rules", what, rules_count(rs));
	nfr_changed(m);
	return 0;
}

static void nfr_begin(struct master *m)
{
	for (size_t i = 0; i < m->n_nfrs; i++)
		m->nfrs[i]->seen = 0;
}

static void nfr_end(struct master *m)
{
	size_t u = 0;
	int gone = 0;

	for (size_t i = 0; i < m->n_nfrs; i++) {
		if (m->nfrs[i]->seen) {
			m->nfrs[u++] = m->nfrs[i];
		} else {
			nfr_free(m->nfrs[i]);
			gone = 1;
		}
	}
	m->n_nfrs = u;
	if (gone)
		nfr_changed(m);
	else if (!m->inf[INF_NF].synced)
		refs_update(m); /* the first list: the NodeFeatures come next */
}

/* ---- Nodes and garbage collection --------------------------------------- */

/* 1 when the API says the node does not exist (404), 0 when it does or
 * cannot say: what the watch told us may be stale. */
static int node_gone(struct master *m, const char *name)
{
	char path[400];
	struct kube_result res;
	struct fb_errinfo ei;
	int gone;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
	fb_errinfo_init(&ei);
	gone = kube_request(m->k, "GET", path, NULL, NULL, 0, &res, &ei) == 0 && res.status == 404;
	kube_result_free(&res);
	return gone;
}

/* Deletes the NodeFeatures of node n, which the Node list and watch say is
 * gone. Returns -FB_ECANCELED on SIGTERM, else 0. */
static int gc_node(struct master *m, struct node *n)
{
	char path[800];
	struct fb_errinfo ei;
	char msg[1300];

	if (n->nfs && !node_gone(m, n->name)) {
		LOG_W(&m->log, "node %s: the watch said deleted, the API does not: keeping its NodeFeatures", n->name);
		return 0;
	}
	while (n->nfs) {
		struct nf *o = n->nfs;
		struct kube_result res;
		int rc;

		if (!may_write_cb(m))
			return 0;
		snprintf(path, sizeof(path), NF_API "/namespaces/%s/nodefeatures/%s", o->ns, o->name);
		fb_errinfo_init(&ei);
		rc = kube_request(m->k, "DELETE", path, NULL, NULL, 0, &res, &ei);
		if (rc == -FB_ECANCELED)
			return rc;
		if (rc == 0 && (res.status / 100 == 2 || res.status == 404)) {
			LOG_I(&m->log, "deleted NodeFeature %s of deleted node %s", o->key, n->name);
			metrics_inc(&m->mx, m->m_gc_deleted, 1);
		} else {
			if (rc == 0)
				snprintf(msg, sizeof(msg), "%d %s", res.status, res.message);
			else
				fb_errinfo_str(&ei, msg, sizeof(msg));
			LOG_E(&m->log, "deleting NodeFeature %s: %s (next garbage collection tries again)", o->key, msg);
			metrics_inc(&m->mx, m->m_gc_failed, 1);
			kube_result_free(&res);
			return 0;
		}
		kube_result_free(&res);
		/* the watch's DELETED event will find nothing left to do */
		nf_unlink(o);
		smap_del(&m->nfs, o->key);
		nf_free(o);
	}
	return 0;
}

static void gc(struct master *m)
{
	const struct informer *in = &m->inf[INF_NODE];

	/* only on a fresh view of the Nodes: a failing list or watch leaves
	 * "exists" stale, and new nodes would look deleted */
	if (!synced(m) || !may_write(m) || in->failing || !in->w)
		return;
	for (size_t i = 0; i < m->nodes.cap;) {
		struct node *n = m->nodes.s[i].val;

		if (m->nodes.s[i].key && !n->exists && n->nfs) {
			if (gc_node(m, n) < 0 || loop_signal(m->l))
				return;
			if (!n->nfs) {
				node_gc_entry(m, n);
				continue; /* slot i may hold a shifted entry now */
			}
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

static int node_apply(struct master *m, const struct json *obj, int deleted)
{
	const char *name = json_get_str(json_get(obj, "metadata"), "name", "");
	struct node *n = smap_get(&m->nodes, name);

	if (deleted) {
		if (n && n->exists) {
			n->exists = 0;
			n->processed = 0;
			n->dirty = 0;
			LOG_I(&m->log, "node %s deleted", name);
			if (m->inf[INF_NODE].synced && n->nfs && may_write(m))
				gc_node(m, n);
			node_gc_entry(m, n);
		}
		return 0;
	}
	if (!n && !(n = node_get(m, name)))
		return -FB_ENOMEM;
	n->seen = 1;
	if (!n->exists) {
		n->exists = 1;
		mark(m, n, 1);
	}
	return 0;
}

static void node_begin(struct master *m)
{
	for (size_t i = 0; i < m->nodes.cap; i++)
		if (m->nodes.s[i].key)
			((struct node *)m->nodes.s[i].val)->seen = 0;
}

static void node_end(struct master *m)
{
	for (size_t i = 0; i < m->nodes.cap;) {
		struct node *n = m->nodes.s[i].val;

		if (m->nodes.s[i].key && n->exists && !n->seen) {
			n->exists = 0;
			n->dirty = 0;
			n->processed = 0;
			if (!n->nfs) {
				node_gc_entry(m, n);
				continue; /* slot i may hold a shifted entry now */
			}
		}
		i++;
	}
}

/* ---- Namespaces: restrictions.nodeFeatureNamespaceSelector -------------- */

/* The API server lists and watches only the namespaces the selector
 * matches (a namespace whose labels stop matching arrives as DELETED, one
 * that starts as ADDED), so the set is the selection as it is now. */
static int ns_selected(const struct master *m, const char *ns)
{
	return !m->ns_filter || smap_get(&m->nss, ns) != NULL;
}

/* Namespace ns came into or went out of the selection: the nodes with
 * NodeFeatures in it are brought up to date (the first list needs nothing:
 * every node is updated once everything is listed). */
static void ns_changed(struct master *m, const char *ns, int selected)
{
	if (!m->inf[INF_NS].synced) {
		LOG_V(&m->log, 1, "namespace %s selected", ns);
		return;
	}
	LOG_I(&m->log, "namespace %s %s by restrictions.nodeFeatureNamespaceSelector: its NodeFeatures %s", ns,
	      selected ? "selected" : "no longer selected", selected ? "count" : "are ignored");
	for (size_t i = 0; i < m->nfs.cap; i++) {
		struct nf *o = m->nfs.s[i].val;

		if (m->nfs.s[i].key && o->node && o->node->exists && strcmp(o->ns, ns) == 0)
			mark(m, o->node, 0);
	}
}

static void ns_drop(struct master *m, struct nsel *e)
{
	smap_del(&m->nss, e->name);
	ns_changed(m, e->name, 0);
	free(e->name);
	free(e);
}

static int ns_apply(struct master *m, const struct json *obj, int deleted)
{
	const char *name = json_get_str(json_get(obj, "metadata"), "name", "");
	struct nsel *e = smap_get(&m->nss, name);

	if (deleted) {
		if (e)
			ns_drop(m, e);
		return 0;
	}
	if (e || !*name) {
		if (e)
			e->seen = 1;
		return 0;
	}
	if (!(e = calloc(1, sizeof(*e))) || !(e->name = strdup(name)) || smap_put(&m->nss, e->name, e) < 0) {
		if (e)
			free(e->name);
		free(e);
		return -FB_ENOMEM;
	}
	e->seen = 1;
	ns_changed(m, name, 1);
	return 0;
}

static void ns_begin(struct master *m)
{
	for (size_t i = 0; i < m->nss.cap; i++)
		if (m->nss.s[i].key)
			((struct nsel *)m->nss.s[i].val)->seen = 0;
}

static void ns_end(struct master *m)
{
	for (size_t i = 0; i < m->nss.cap;) {
		struct nsel *e = m->nss.s[i].val;

		if (m->nss.s[i].key && !e->seen)
			ns_drop(m, e); /* may shift a later entry into slot i: look again */
		else
			i++;
	}
}

/* ---- per-node reconciliation -------------------------------------------- */

static int nf_order(const struct master *m, const struct nf *a, const struct nf *b)
{
	int aown = strcmp(a->ns, m->ns) == 0, bown = strcmp(b->ns, m->ns) == 0, c;

	if (aown != bown)
		return bown - aown;
	if ((c = strcmp(a->name, b->name)) != 0)
		return c;
	return strcmp(a->ns, b->ns);
}

/* A node's labels by name, in the order first set, the last value set
 * winning: the merge of its objects and the rule outputs in linear time
 * (json_set_take looks for the name among every member). Values borrowed. */
struct lmap {
	struct smap idx;       /* name -> index + 1 */
	char **keys;           /* owned */
	const char **vals;
	size_t n, cap;
};

static int lmap_set(struct lmap *b, const char *key, const char *value)
{
	uintptr_t i = (uintptr_t)smap_get(&b->idx, key);

	if (i) {
		b->vals[i - 1] = value;
		return 0;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char **k = realloc(b->keys, cap * sizeof(*k));
		const char **v;

		if (!k)
			return -FB_ENOMEM;
		b->keys = k;
		if (!(v = realloc(b->vals, cap * sizeof(*v))))
			return -FB_ENOMEM;
		b->vals = v;
		b->cap = cap;
	}
	if (!(b->keys[b->n] = strdup(key)))
		return -FB_ENOMEM;
	if (smap_put(&b->idx, b->keys[b->n], (void *)(uintptr_t)(b->n + 1)) < 0) {
		free(b->keys[b->n]);
		return -FB_ENOMEM;
	}
	b->vals[b->n++] = value;
	return 0;
}

/* "x" -> "feature.node.kubernetes.io/x"; others as they are. */
static int lmap_set_prefixed(struct lmap *b, const char *key, const char *value)
{
	char full[400];

	if (strchr(key, '/'))
		return lmap_set(b, key, value);
	snprintf(full, sizeof(full), NL_DEFAULT_NS "/%s", key);
	return lmap_set(b, full, value);
}

/* The labels as an object. Owned, NULL on ENOMEM. */
static struct json *lmap_json(const struct lmap *b)
{
	struct json *o = json_new_object();

	for (size_t i = 0; o && i < b->n; i++)
		if (json_add_take(o, b->keys[i], json_new_string(b->vals[i])) < 0) {
			json_free(o);
			return NULL;
		}
	return o;
}

static void lmap_free(struct lmap *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->keys[i]);
	free(b->keys);
	free(b->vals);
	free(b->idx.s);
}

/* Merges the elements of one object's feature into have, the feature
 * merged so far: instances appended, other elements by name, the later
 * object's winning. Linear: the merged set is built anew. */
static int merge_elements(struct json *have, int kind, const struct json *el)
{
	struct json *hel = json_get(have, "elements"), *nel;
	struct smap win = { 0 };
	int rc = -FB_ENOMEM;

	if (!hel)
		return json_set_take(have, "elements", json_dup(el));
	if (kind == 2 || json_type(hel) != JSON_OBJECT || json_type(el) != JSON_OBJECT) {
		for (const struct json *e = json_child(el); e; e = json_next(e))
			if ((kind == 2 ? json_append_take(hel, json_dup(e))
			     : json_key(e) ? json_set_take(hel, json_key(e), json_dup(e)) : 0) < 0)
				return -FB_ENOMEM;
		return 0;
	}
	if (!(nel = json_new_object()))
		return -FB_ENOMEM;
	for (const struct json *e = json_child(el); e; e = json_next(e))
		if (win_note(&win, json_key(e), e) < 0)
			goto out;
	for (const struct json *e = json_child(hel); e; e = json_next(e))
		if (!smap_get(&win, json_key(e)) && json_add_take(nel, json_key(e), json_dup(e)) < 0)
			goto out;
	for (const struct json *e = json_child(el); e; e = json_next(e))
		if (win_is(&win, json_key(e), e) && json_add_take(nel, json_key(e), json_dup(e)) < 0)
			goto out;
	rc = json_set_take(have, "elements", nel);
	nel = NULL;
out:
	json_free(nel);
	free(win.s);
	return rc;
}

/* Merges one kept NodeFeature into the node's features (fidx: name ->
 * feature merged so far, per kind) and labels. */
static int merge_one(struct features *f, struct smap fidx[3], struct lmap *labels, const struct json *kept)
{
	const struct json *feats = json_get(kept, "features"), *lab = json_get(kept, "labels");

	for (int k = 0; k < 3; k++) {
		struct json *dst = json_get(f->root, kinds[k]);

		for (const struct json *c = json_child(json_get(feats, kinds[k])); c; c = json_next(c)) {
			struct json *have = smap_get(&fidx[k], json_key(c)), *d;

			if (!have) {
				if (!(d = json_dup(c)) || json_add_take(dst, json_key(c), d) < 0 ||
				    smap_put(&fidx[k], json_key(d), d) < 0)
					return -FB_ENOMEM;
				continue;
			}
			if (merge_elements(have, k, json_get(c, "elements")) < 0)
				return -FB_ENOMEM;
		}
	}
	if (!labels)
		return 0;
	/* a prefixed key wins over the same key unprefixed in one object */
	for (int pass = 0; pass < 2; pass++)
		for (const struct json *c = json_child(lab); c; c = json_next(c))
			if ((strchr(json_key(c), '/') != NULL) == pass && json_str(c) &&
			    lmap_set_prefixed(labels, json_key(c), json_str(c)) < 0)
				return -FB_ENOMEM;
	return 0;
}

struct rule_err_ctx {
	struct master *m;
	struct nfr *r;
	const char *node;
};

static void on_rule_error(void *ctx, const char *what, const char *rule, const char *msg)
{
	struct rule_err_ctx *c = ctx;

	metrics_inc(&c->m->mx, c->m->m_rule_errors, 1);
	/* once per rule object version, not once per node */
	if (c->r->errors_logged++ < 5)
		LOG_E(&c->m->log, "%s: rule \"%s\" on node %s: %s (the rule is skipped)", what, rule, c->node, msg);
}

static uint64_t hash_set(const struct nl_set *s)
{
	uint64_t h = FNV0;

	h = hash_json(s->labels, h);
	h = hash_json(s->annotations, h);
	h = hash_json(s->extended_resources, h);
	return hash_json(s->taints, h);
}

/* The node's desired state. Returns 0 or -FB_ENOMEM. */
static int desired(struct master *m, struct node *n, struct nl_set *set)
{
	struct features f;
	struct rules_out out;
	struct nf *v[64];
	struct json *kept[64] = { NULL }; /* the labels' values stay theirs until the end */
	struct lmap labels = { 0 };
	struct smap fidx[3] = { { 0 } };
	size_t nv = 0;
	int rc = -FB_ENOMEM;

	memset(set, 0, sizeof(*set));
	memset(&out, 0, sizeof(out));
	if (features_init(&f) < 0 || rules_out_init(&out) < 0)
		goto out;
	for (struct nf *o = n->nfs; o; o = o->next) {
		if (!ns_selected(m, o->ns))
			continue;
		if (nv == 64) {
			LOG_E(&m->log, "node %s: more than 64 NodeFeatures; using the first 64 in merge order", n->name);
			break;
		}
		size_t j = nv++;

		for (; j > 0 && nf_order(m, v[j - 1], o) > 0; j--)
			v[j] = v[j - 1];
		v[j] = o;
	}
	for (size_t i = 0; i < nv; i++) {
		struct fb_errinfo ei;
		/* restrictions.denyNodeFeatureLabels: only the worker's object (ours, named after the node) */
		int third_party = strcmp(v[i]->ns, m->ns) != 0 || strcmp(v[i]->name, n->name) != 0;

		kept[i] = v[i]->data ? json_parse(v[i]->data, strlen(v[i]->data), v[i]->key, &ei) : NULL;
		if (!kept[i] || merge_one(&f, fidx, m->deny_nf_labels && third_party ? NULL : &labels, kept[i]) < 0)
			goto out;
	}
	for (size_t i = 0; i < m->n_nfrs; i++) {
		struct rule_err_ctx ec = { m, m->nfrs[i], n->name };
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		if (rules_run(m->nfrs[i]->rules, &f, &out, on_rule_error, &ec) < 0)
			goto out;
		clock_gettime(CLOCK_MONOTONIC, &b);
		metrics_observe(&m->mx, m->m_rule_time,
				(double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	}
	for (const struct json *c = json_child(out.labels); c; c = json_next(c))
		if (json_str(c) && lmap_set_prefixed(&labels, json_key(c), json_str(c)) < 0)
			goto out;
	if (!(set->labels = lmap_json(&labels)))
		goto out;
	set->annotations = out.annotations;
	set->extended_resources = out.extended_resources;
	set->taints = out.taints;
	out.annotations = out.extended_resources = out.taints = NULL;
	{
		struct nl_rejects rej = { 0 };

		if (nl_filter(&m->pol, set, &f, &m->log, &rej) < 0)
			goto out;
		metrics_inc(&m->mx, m->m_rej_labels, (double)rej.labels);
		metrics_inc(&m->mx, m->m_rej_ers, (double)rej.extended_resources);
		metrics_inc(&m->mx, m->m_rej_taints, (double)rej.taints);
	}
	/* restrictions.disable*: after the policy, as upstream (what it rejects is
	 * still counted); what NFD wrote before is then removed */
	if (m->disable_labels) {
		json_free(set->labels);
		if (!(set->labels = json_new_object()))
			goto out;
	}
	if (m->disable_annotations) {
		json_free(set->annotations);
		set->annotations = NULL;
	}
	if (m->disable_ers) {
		json_free(set->extended_resources);
		set->extended_resources = NULL;
	}
	rc = 0;
out:
	for (size_t i = 0; i < nv; i++)
		json_free(kept[i]);
	lmap_free(&labels);
	for (int k = 0; k < 3; k++)
		free(fidx[k].s);
	rules_out_free(&out);
	features_free(&f);
	if (rc < 0)
		nl_set_free(set);
	return rc;
}

/* Reads again (one GET each) the objects of node n kept before one of its
 * objects' labels named a feature they may have: an "@" value is looked up in
 * all of them. Only n's own objects, never a relist of everything. Returns 0,
 * or -FB_EAGAIN (try later), -FB_ECANCELED. */
static int nf_refetch(struct master *m, struct node *n)
{
	/* an object read again may name more features still: a few rounds */
	for (int round = 0; round < 8; round++) {
		struct nf *o;
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
			rc = nf_apply(m, res.body, 0);
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
static int reconcile(struct master *m, struct node *n)
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
	if (desired(m, n, &set) < 0) {
		LOG_E(&m->log, "node %s: out of memory; trying again later", n->name);
		n->retry_at = loop_now_ms() + RETRY_MAX_MS;
		return 0;
	}
	h = hash_set(&set);
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

static void relist(struct master *m, struct informer *in);

/* Updates dirty nodes for at most SLICE_MS, then lets the loop run. */
static void flush(void *ctx)
{
	struct master *m = ctx;
	long long start = loop_now_ms(), next = -1;

	m->flush_timer = 0;
	if (m->relist_nf) {
		m->relist_nf = 0;
		m->refresh_all = 1;
		relist(m, &m->inf[INF_NF]);
		if (!synced(m))
			return; /* the list failed: it reschedules */
	}
	/* a relist for new rule features has not completed: the kept data is partial */
	if (!synced(m) || m->refresh_all || (!m->no_publish && !may_write(m)))
		return;
	m->dirty = 0;
	for (size_t i = 0; i < m->nodes.cap; i++) {
		struct node *n = m->nodes.s[i].val;
		long long now;

		if (!m->nodes.s[i].key || !n->dirty || !n->exists)
			continue;
		now = loop_now_ms();
		if (n->retry_at > now) {
			if (next < 0 || n->retry_at - now < next)
				next = n->retry_at - now;
			continue;
		}
		if (now - start >= SLICE_MS || loop_signal(m->l) || (!may_write(m) && !m->no_publish)) {
			next = 0;
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

/* ---- informers: list, then watch ---------------------------------------- */

static void inf_event(void *ctx, const char *type, const struct json *object)
{
	struct informer *in = ctx;

	in->rewatch_fails = 0;
	if (in->apply(in->m, object, strcmp(type, "DELETED") == 0) < 0)
		LOG_E(&in->m->log, "%s event: out of memory", in->what);
}

static void on_relist(void *ctx);
static void on_rewatch(void *ctx);
static void watch(struct master *m, struct informer *in, const char *rv);

static void retry_later(struct master *m, struct informer *in, void (*fn)(void *))
{
	long long d = kube_backoff_next(&in->bo);

	loop_timer_cancel(m->l, in->timer);
	in->timer = loop_timer(m->l, d, fn, in);
}

static void inf_end(void *ctx, enum kube_watch_end why, const struct fb_errinfo *ei)
{
	struct informer *in = ctx;
	struct master *m = in->m;
	char rv[64], msg[1300] = "";
	long long lived = loop_now_ms() - in->watch_ms;

	/* ei lives in the watch: read it before the watch goes */
	if (why == KUBE_WATCH_FAILED)
		fb_errinfo_str(ei, msg, sizeof(msg));
	snprintf(rv, sizeof(rv), "%s", kube_watch_rv(in->w));
	kube_watch_free(in->w);
	in->w = NULL;
	if (loop_signal(m->l))
		return;
	/* A watch cut again and again (a proxy, a server in trouble) must not
	 * turn into a list-watch loop: only one that lived a while resets the
	 * backoff, and a short one waits before the next try. A failed watch
	 * resumes from its resourceVersion rather than listing everything again,
	 * but three failures in a row with no event between them list again, in
	 * case the resourceVersion itself is the trouble (a restored etcd, an
	 * event that cannot be read). */
	if (lived >= 30000)
		kube_backoff_reset(&in->bo);
	snprintf(in->rv, sizeof(in->rv), "%s", rv);
	if (why == KUBE_WATCH_CLOSED) {
		in->rewatch_fails = 0;
		in->fresh = 0;
		if (lived < 10000)
			retry_later(m, in, on_rewatch);
		else
			watch(m, in, rv);
	} else if (why == KUBE_WATCH_EXPIRED) {
		LOG_I(&m->log, "%s watch: resourceVersion %s expired; listing again", in->what, rv);
		in->rewatch_fails = 0;
		/* expired at once after a resume: the history moved on, list now;
		 * at once after a list: a server in trouble, wait */
		if (in->fresh && lived < 10000)
			retry_later(m, in, on_relist);
		else
			relist(m, in);
	} else {
		int again = rv[0] && ++in->rewatch_fails < 3;

		LOG_W(&m->log, "%s watch failed: %s; %s after a pause", in->what, msg,
		      again ? "watching again" : "listing again");
		if (!again)
			in->rewatch_fails = 0;
		retry_later(m, in, again ? on_rewatch : on_relist);
	}
}

static void on_rewatch(void *ctx)
{
	struct informer *in = ctx;

	in->timer = 0;
	in->fresh = 0;
	if (!in->w)
		watch(in->m, in, in->rv);
}

static void watch(struct master *m, struct informer *in, const char *rv)
{
	struct fb_errinfo ei;
	char msg[1300];

	fb_errinfo_init(&ei);
	in->watch_ms = loop_now_ms();
	if (rv != in->rv)
		snprintf(in->rv, sizeof(in->rv), "%s", rv);
	if (kube_watch_start(&in->w, m->k, m->l, in->path, rv, inf_event, inf_end, in, &ei) < 0) {
		if (loop_signal(m->l))
			return;
		LOG_W(&m->log, "%s watch: %s; trying again after a pause", in->what,
		      fb_errinfo_str(&ei, msg, sizeof(msg)));
		retry_later(m, in, in->rv[0] ? on_rewatch : on_relist);
	}
}

static int inf_page(void *ctx, const struct json *items, int first)
{
	struct informer *in = ctx;

	if (first)
		in->begin(in->m);
	lease_poll(in->m->lease); /* a long list must not cost the lease */
	for (const struct json *it = json_child(items); it; it = json_next(it)) {
		int rc = in->apply(in->m, it, 0);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static void relist(struct master *m, struct informer *in)
{
	struct fb_errinfo ei;
	char rv[64], msg[1300];
	int was = in->synced;

	kube_watch_free(in->w);
	in->w = NULL;
	fb_errinfo_init(&ei);
	if (kube_list_pages(m->k, in->path, inf_page, in, rv, sizeof(rv), &ei) < 0) {
		if (loop_signal(m->l))
			return;
		if (!in->failing++ || m->log.v >= 1)
			LOG_E(&m->log, "listing %ss: %s; trying again after a pause", in->what,
			      fb_errinfo_str(&ei, msg, sizeof(msg)));
		/* nothing is removed on the strength of a partial list */
		retry_later(m, in, on_relist);
		return;
	}
	if (in->failing)
		LOG_I(&m->log, "listing %ss works again", in->what);
	in->failing = 0;
	/* a relist asked for by someone else (a rule needing more features)
	 * makes a pending retry of ours moot */
	loop_timer_cancel(m->l, in->timer);
	in->timer = 0;
	in->end(m);
	in->synced = 1;
	if (!was)
		LOG_I(&m->log, "%ss listed (resourceVersion %s)", in->what, rv);
	in->fresh = 1;
	watch(m, in, rv);
	if (in == &m->inf[INF_NODE] && was)
		gc(m); /* nodes gone while we were not watching */
	if (!was && synced(m)) {
		size_t kept = 0;

		for (size_t i = 0; i < m->nfs.cap; i++)
			if (m->nfs.s[i].key)
				kept += ((struct nf *)m->nfs.s[i].val)->data ?
					strlen(((struct nf *)m->nfs.s[i].val)->data) : 0;
		LOG_I(&m->log, "everything listed: %zu nodes, %zu NodeFeatures (%zu KiB kept for %zu rule features), "
		      "%zu NodeFeatureRules; updating nodes", m->nodes.n, m->nfs.n, kept / 1024, m->n_refs, m->n_nfrs);
		gc(m);
	}
	if (synced(m) && m->dirty)
		schedule(m, 0);
}

static void on_relist(void *ctx)
{
	struct informer *in = ctx;
	struct master *m = in->m;

	in->timer = 0;
	relist(m, in);
	/* the first lists go in order: rules, then NodeFeatures, then Nodes */
	for (int i = 0; i < INF_COUNT && in->synced; i++) {
		if (m->inf[i].synced)
			continue;
		if (m->inf[i].timer)
			break;
		relist(m, &m->inf[i]);
		if (!m->inf[i].synced)
			break;
	}
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

/* --feature-gates "Name=bool,...", upstream's gates. Returns 0 to run, 1 for
 * a gate set to what is not implemented and has a meaning for what is
 * written (exit 1), 2 for a usage error (exit 2). */
static int check_feature_gates(const char *list, const struct fb_log *lg)
{
	char buf[512], *save = NULL;

	if (!list || !*list)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf)) {
		fprintf(stderr, "nfd-master: --feature-gates: too long\n");
		return 2;
	}
	for (char *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
		static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
		char *eq = strchr(it, '='), *k = it, *v, *e;
		int on = -1;

		if (!eq) {
			fprintf(stderr, "nfd-master: --feature-gates: missing bool value for %.100s\n", it);
			return 2;
		}
		*eq = '\0';
		v = eq + 1;
		while (*k == ' ' || *k == '\t')
			k++;
		for (e = k + strlen(k); e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
			if (strcmp(v, yes[i]) == 0)
				on = 1;
			if (strcmp(v, no[i]) == 0)
				on = 0;
		}
		if (on < 0) {
			fprintf(stderr, "nfd-master: --feature-gates: invalid value of %.100s=%.100s\n", k, v);
			return 2;
		}
		if (strcmp(k, "NodeFeatureAPI") == 0) {
			if (!on) {
				fprintf(stderr, "nfd-master: --feature-gates: cannot set NodeFeatureAPI to false, "
						"it is locked to true\n");
				return 2;
			}
		} else if (strcmp(k, "DisableAutoPrefix") == 0) {
			/* which names are written, and so owned and removed: no guessing */
			if (on) {
				LOG_E(lg, "--feature-gates DisableAutoPrefix=true: not implemented (names always get "
				      "feature.node.kubernetes.io/); refusing to start");
				return 1;
			}
		} else if (strcmp(k, "NodeFeatureGroupAPI") == 0) {
			/* only fills in the status of NodeFeatureGroups: leaving it out grants nothing */
			if (on)
				LOG_W(lg, "--feature-gates NodeFeatureGroupAPI=true: NodeFeatureGroups are not "
				      "implemented; their status is not updated");
		} else {
			fprintf(stderr, "nfd-master: --feature-gates: unrecognized feature gate: %.100s\n", k);
			return 2;
		}
	}
	return 0;
}

/* ---- options and configuration ------------------------------------------ */

struct master_opts {
	const char *config, *options, *kubeconfig, *bind_ip, *instance, *whitelist, *feature_gates;
	int prune, leader, taints, no_publish;
	int seen_v, seen_resync, seen_page;
	struct opt_list extra, deny;
	long verbosity, port, page_size, parallelism;
	long long resync, gc_interval;
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
	{ .lo = "gc-interval", .kind = OPT_DUR, .off = MO(gc_interval), .min = 1000, .arg = "DUR",
	  .help = "delete NodeFeatures of deleted nodes this often (default 1h)" },
	{ .lo = "informer-page-size", .kind = OPT_INT, .off = MO(page_size),
	  .seen = OPT_SEEN(struct master_opts, seen_page), .min = 0, .max = 100000, .arg = "N",
	  .help = "list page size (default 50; 0: no paging)" },
	{ .lo = "list-page-size", .kind = OPT_INT, .off = MO(page_size),
	  .seen = OPT_SEEN(struct master_opts, seen_page), .min = 0, .max = 100000, .arg = "N",
	  .help = "the same as --informer-page-size" },
	{ .lo = "nfd-api-parallelism", .kind = OPT_INT, .off = MO(parallelism), .min = 1, .max = 1000,
	  .arg = "N", .help = "accepted for compatibility (updates are sequential)" },
	{ .lo = "feature-gates", .kind = OPT_STR, .off = MO(feature_gates), .arg = "LIST",
	  .help = "upstream's gates at their defaults; NodeFeatureGroupAPI=true warns" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = MO(verbosity), .seen = OPT_SEEN(struct master_opts, seen_v),
	  .min = 0, .max = 10, .arg = "N", .help = "log verbosity" },
};

static const struct opt_spec master_spec = { "nfd-master", usage, master_optv,
					     sizeof(master_optv) / sizeof(master_optv[0]) };

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
	if (*o->instance && !labels_valid_name(o->instance, strlen(o->instance))) {
		fprintf(stderr, "nfd-master: --instance \"%s\": must be 1-63 of [A-Za-z0-9._-], alphanumeric at both ends\n",
			o->instance);
		return 2;
	}
	if ((rc = check_feature_gates(o->feature_gates, &m->log)) != 0)
		return rc;
	fb_errinfo_init(&ei);
	if (nfdconf_master_load_file(c, o->config, &m->log, &ei) < 0 ||
	    (o->options && nfdconf_master_apply_yaml(c, o->options, strlen(o->options), "--options", &m->log, &ei) < 0)) {
		LOG_E(&m->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	if (!o->seen_v && c->have_klog_v)
		m->log.v = (int)c->klog_v;
	m->no_publish = o->no_publish || c->no_publish;
	m->leader_election = o->leader;
	m->resync_ms = o->seen_resync ? o->resync : c->resync_ms;
	if (m->resync_ms < 1000)
		m->resync_ms = 1000;
	m->gc_ms = o->gc_interval;
	m->pol.instance = o->instance;
	m->pol.extra_ns = r->extra_v;
	list_join(&c->extra_ns, &o->extra, r->extra_v, &m->pol.n_extra);
	m->pol.deny_ns = r->deny_v;
	list_join(&c->deny_ns, &o->deny, r->deny_v, &m->pol.n_deny);
	m->pol.enable_taints = o->taints || c->enable_taints;
	m->pol.allow_overwrite = c->allow_overwrite;
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

static void setup_informers(struct master *m, const char *ns_query)
{
	static const char *const what[INF_COUNT] = { "NodeFeatureRule", "NodeFeature", "Node", "Namespace" };
	static const char *const path[INF_COUNT] = { NF_API "/nodefeaturerules", NF_API "/nodefeatures",
						     "/api/v1/nodes", "/api/v1/namespaces" };
	int (*const apply[INF_COUNT])(struct master *, const struct json *, int) = { nfr_apply, nf_apply,
										 node_apply, ns_apply };
	void (*const begin[INF_COUNT])(struct master *) = { nfr_begin, nf_begin, node_begin, ns_begin };
	void (*const end[INF_COUNT])(struct master *) = { nfr_end, nf_end, node_end, ns_end };
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();

	for (int i = 0; i < INF_COUNT; i++) {
		struct informer *in = &m->inf[i];

		in->what = what[i];
		snprintf(in->path, sizeof(in->path), "%s", path[i]);
		in->apply = apply[i];
		in->begin = begin[i];
		in->end = end[i];
		in->m = m;
		kube_backoff_init(&in->bo, 800, 30000, seed + (unsigned)i);
	}
	/* no selector: every namespace counts, none is listed */
	if (m->ns_filter)
		snprintf(m->inf[INF_NS].path, sizeof(m->inf[INF_NS].path), "%s?labelSelector=%s",
			 path[INF_NS], ns_query);
	else
		m->inf[INF_NS].synced = 1;
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
	for (int i = 0; i < INF_COUNT; i++)
		kube_watch_free(m->inf[i].w);
	http_server_free(m->srv);
	for (size_t i = 0; i < m->nfs.cap; i++)
		if (m->nfs.s[i].key) {
			nf_free(m->nfs.s[i].val);
		}
	free(m->nfs.s);
	for (size_t i = 0; i < m->nodes.cap; i++)
		if (m->nodes.s[i].key) {
			struct node *n = m->nodes.s[i].val;

			for (size_t j = 0; j < n->dyn.cap; j++)
				free(n->dyn.s[j].val);
			free(n->dyn.s);
			free(n->name);
			free(n);
		}
	free(m->nodes.s);
	for (size_t i = 0; i < m->nss.cap; i++)
		if (m->nss.s[i].key) {
			free(((struct nsel *)m->nss.s[i].val)->name);
			free(m->nss.s[i].val);
		}
	free(m->nss.s);
	for (size_t i = 0; i < m->n_nfrs; i++)
		nfr_free(m->nfrs[i]);
	free(m->nfrs);
	for (size_t i = 0; i < m->n_refs; i++)
		free(m->refs[i]);
	free(m->refs);
	kube_free(m->k);
	loop_free(m->l);
	if (m->have_whitelist)
		regfree(&m->whitelist);
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
	setup_informers(&m, r.c.ns_query);
	if (master_lead(&m, &r) < 0)
		goto out;
	m.inf[INF_NFR].timer = loop_timer(m.l, 0, on_relist, &m.inf[INF_NFR]);
	loop_timer(m.l, m.resync_ms, on_resync, &m);
	loop_timer(m.l, m.gc_ms, on_gc, &m);
	loop_run(m.l);
	LOG_I(&m.log, "stopping (signal %d)", loop_signal(m.l));
	ret = 0;
out:
	master_teardown(&m);
	nfdconf_master_free(&r.c);
	return ret;
}
