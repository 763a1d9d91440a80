/* nfstore: nfd-master's view of the cluster, with no network. NodeFeatures,
 * Nodes, NodeFeatureRules and the selected Namespaces go in as API objects
 * (the informers' apply/begin/end); each node's desired labels, annotations,
 * extended resources and taints come out (nfstore_desired). What nfd-master
 * does with the API (lists, watches, GETs, PATCHes, garbage collection) stays
 * in the applet, which walks the maps here.
 *
 * Memory: whole NodeFeatures are never kept. Of each object the store keeps a
 * hash (to see whether an event changed anything), its spec.labels and only
 * the features the current NodeFeatureRules match on (the "refs"), plus those
 * the node's "@" label values look up. When a rule change needs a feature not
 * kept, relist_nf is set: the caller lists NodeFeatures again with
 * refresh_all set (hashes ignored) and nfstore_nf_end clears it.
 *
 * The files: nfstore.c (setup, nodes, rules, namespaces), nfstore_map.c (the
 * string map and hashing), nfstore_kept.c (the kept parts, their strings
 * interned: kept once however many nodes repeat them), nfstore_refs.c (what
 * is kept: the rules' features and the "@" lookups), nfstore_nf.c
 * (NodeFeatures), nfstore_merge.c (the merge and the desired state). */
#ifndef FB_NFSTORE_H
#define FB_NFSTORE_H

#include "arena.h"
#include "features.h"
#include "intern.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "nodelabels.h"
#include "rules.h"

#include <stddef.h>
#include <stdint.h>

#define NFSTORE_NODE_NAME_LABEL "nfd.node.kubernetes.io/node-name"
#define NFSTORE_MAX_BYTES (1536 * 1024) /* a NodeFeature's JSON: what etcd stores by default */
#define NFSTORE_MAX_LABELS FEATURES_MAX_LABELS /* spec.labels of one NodeFeature */
#define NFSTORE_MAX_NFS 64              /* NodeFeatures merged per node */

/* A string-keyed hash table (linear probing, no tombstones). Keys are
 * borrowed from the values. Walk it as for (i < cap) if (s[i].key) ... */
struct nfstore_slot {
	const char *key;
	void *val;
};
struct nfstore_map {
	struct nfstore_slot *s;
	size_t cap, n;
};

struct nfstore_node;

struct nfstore_nf {                    /* one NodeFeature object */
	char *key;             /* "namespace/name", owned; ns and name point past it */
	const char *ns, *name;
	struct nfstore_node *node;
	struct nfstore_nf *next;       /* the node's other objects */
	uint64_t hash;         /* spec, owner references, node name, pod uid */
	unsigned char *data;   /* {"labels":{...},"features":{...}} kept part, owned, */
	size_t data_len;       /* as ids into strs (nfstore_kept.c) */
	char **dyn;            /* features its "@" label values name (with repeats): one
				* allocation, the vector then the strings */
	size_t n_dyn;
	unsigned dyn_gen;      /* the node's dyn_gen when data was kept */
	int seen;
};

struct nfstore_node {
	struct nfstore_nf *nfs;
	struct nfstore_map dyn;       /* name -> count: what its objects keep for "@" values */
	unsigned dyn_gen;      /* bumped when dyn gains a name: objects kept before lack it */
	unsigned exists : 1, dirty : 1, force : 1, processed : 1, pending_delete : 1, seen : 1;
	unsigned gdirty : 1;   /* NodeFeatureGroups: evaluate this node again */
	uint64_t applied;      /* hash of the desired state last written */
	int fails;
	long long retry_at;
	char name[];
};

struct nfstore_nfr {                   /* one NodeFeatureRule object */
	struct arena strs;     /* name and dyn's strings */
	const char *name;
	uint64_t hash;
	struct rules *rules;
	char **dyn;            /* features of "@..." output values, as refs entries */
	size_t n_dyn;
	int seen, errors_logged;
};

struct nfstore_nfg {                   /* one NodeFeatureGroup of our namespace */
	char *name;            /* owned */
	uint64_t hash;         /* spec */
	struct rules *rules;   /* spec.featureGroupRules (RULES_NFG) */
	struct nfstore_map members;    /* node name -> its owned copy (the key) */
	uint64_t have;         /* status.nodes as the object shows it (hashed as nfstore_group_want) */
	int seen, errors_logged, fails;
	int check;             /* members or have changed since the applet last compared */
	long long retry_at;    /* the applet's: a failed status write waits */
};

/* What the store is told once, before the first object (nfstore_setup). */
struct nfstore_conf {
	struct fb_log *log;
	struct metrics *mx;            /* metric indexes below; -1 for none */
	int m_rej_nfs, m_rule_errors, m_rule_time, m_rej_labels, m_rej_ers, m_rej_taints;
	const char *ns;                /* our namespace: its objects merge first */
	const struct nl_policy *pol;   /* what nfstore_desired filters through */
	/* restrictions.*; ns_filter: only NodeFeatures of the namespaces applied */
	int ns_filter, deny_nf_labels, disable_labels, disable_annotations, disable_ers;
	/* A node was marked dirty: schedule an update. May be NULL. */
	void (*dirty)(void *ctx);
	/* 1 when the first list of NodeFeatures (NFSTORE_NF) or selected
	 * Namespaces (NFSTORE_NS) is complete. NULL: never. */
	int (*listed)(void *ctx, int what);
	/* Node n, which has NodeFeatures, was deleted (n->exists is 0 now):
	 * the caller may delete them (nfstore_nf_forget each). May be NULL. */
	void (*node_deleted)(void *ctx, struct nfstore_node *n);
	void *ctx;
};
enum { NFSTORE_NF, NFSTORE_NS };

struct nfstore {
	struct nfstore_conf c;
	struct nfstore_map nfs;               /* "ns/name" -> struct nfstore_nf */
	struct nfstore_map nodes;             /* name -> struct nfstore_node */
	struct nfstore_map nss;               /* selected namespace -> itself */
	struct nfstore_nfr **nfrs;     /* sorted by name */
	size_t n_nfrs, nfrs_size;
	char **refs;                   /* features the rules match on, sorted: "feature" */
	size_t n_refs;                 /* or "feature\nelement"; strings in refs_strs */
	struct arena refs_strs;
	struct intern strs;            /* the kept parts' names and values */
	struct nfstore_nfg **nfgs;     /* sorted by name */
	size_t n_nfgs, nfgs_size;
	int refresh_all;               /* relisting NodeFeatures for new refs: ignore hashes */
	int relist_nf;                 /* the refs grew: list NodeFeatures again */
};

/* Cannot fail; nfstore_free is safe after it. conf may be NULL (set it with
 * nfstore_setup before the first object). */
void nfstore_init(struct nfstore *s, const struct nfstore_conf *conf);
void nfstore_setup(struct nfstore *s, const struct nfstore_conf *conf);
void nfstore_free(struct nfstore *s);

/* The informers' callbacks: apply an object (deleted: a DELETED event),
 * begin and end a complete list (what the list lacked is gone). apply
 * returns 0 or -FB_ENOMEM (the next event for the object tries again). */
int nfstore_nf_apply(struct nfstore *s, const struct json *obj, int deleted);
void nfstore_nf_begin(struct nfstore *s);
void nfstore_nf_end(struct nfstore *s);
int nfstore_nfr_apply(struct nfstore *s, const struct json *obj, int deleted);
void nfstore_nfr_begin(struct nfstore *s);
void nfstore_nfr_end(struct nfstore *s);
int nfstore_node_apply(struct nfstore *s, const struct json *obj, int deleted);
void nfstore_node_begin(struct nfstore *s);
void nfstore_node_end(struct nfstore *s);
int nfstore_ns_apply(struct nfstore *s, const struct json *obj, int deleted);
void nfstore_ns_begin(struct nfstore *s);
void nfstore_ns_end(struct nfstore *s);

/* NodeFeatureGroups (nfstore_group.c), upstream's NodeFeatureGroupAPI:
 * groups of our namespace (conf.ns) only, as upstream updates only those.
 * The rules of every group are evaluated against the merged features of
 * every Node that exists and has NodeFeatures (each group on a fresh copy,
 * its vars feeding "rule.matched" for its later rules); a node any rule of
 * a group matches is a member. nfstore_mark flags a node for evaluation; a
 * group whose spec changes flags every node. */
int nfstore_nfg_apply(struct nfstore *s, const struct json *obj, int deleted);
void nfstore_nfg_begin(struct nfstore *s);
void nfstore_nfg_end(struct nfstore *s);
/* Evaluates flagged nodes until more(ctx) says stop (NULL: all). A node that
 * cannot be evaluated (out of memory) keeps its memberships and its flag, and
 * is counted in *failed (may be NULL). Returns 0 when every flagged node had
 * its turn, 1 when more(ctx) stopped it first. */
int nfstore_groups_update(struct nfstore *s, int (*more)(void *ctx), void *ctx, size_t *failed);
/* Group g's members, sorted (the order the API lists Nodes in), as
 * status.nodes: [{"name": ...}, ...]. Owned; NULL on ENOMEM. */
struct json *nfstore_group_nodes(const struct nfstore_nfg *g);
/* The hash of g's members as status.nodes would list them: compare g->have. */
uint64_t nfstore_group_want(const struct nfstore_nfg *g);

/* The node of that name (borrowed), or NULL. */
struct nfstore_node *nfstore_node_find(const struct nfstore *s, const char *name);
/* Marks n dirty (force: update even when nothing changed) and calls conf.dirty. */
void nfstore_mark(struct nfstore *s, struct nfstore_node *n, int force);
void nfstore_mark_all(struct nfstore *s, int force);
/* Drops node n's entry if nobody needs it any more (no Node, no
 * NodeFeature): n is freed then, and a later map slot may have moved into
 * its slot. Returns 1 when dropped. */
int nfstore_node_drop(struct nfstore *s, struct nfstore_node *n);
/* Forgets NodeFeature o (deleted by the caller), marking nothing. */
void nfstore_nf_forget(struct nfstore *s, struct nfstore_nf *o);
/* NodeFeature o's kept part as a tree ({"labels":{...},"features":{...}}):
 * owned, NULL when none is kept or out of memory. */
struct json *nfstore_nf_kept(const struct nfstore *s, const struct nfstore_nf *o);
/* The bytes of every kept part and of their shared strings, for the log. */
size_t nfstore_kept_bytes(const struct nfstore *s);

/* Node n's desired state from its objects and the rules, filtered through
 * the policy and the restrictions. Returns 0 (set owned by the caller) or
 * -FB_ENOMEM. Counts rule errors, rule times and rejections in conf.mx. */
int nfstore_desired(struct nfstore *s, struct nfstore_node *n, struct nl_set *set);
/* A hash of a desired state: equal states hash equal. */
uint64_t nfstore_hash_set(const struct nl_set *set);
/* Hashes j (seeded with h) by walking it, adding to *size (may be NULL) the
 * bytes of its compact JSON, which is never printed. */
uint64_t nfstore_hash_walk(const struct json *j, uint64_t h, size_t *size);

/* "flags", "attributes", "instances": the kinds of feature sets. */
extern const char *const nfstore_kinds[3];

#endif
