/* nodelabels: how NFD owns part of a Node: the labels, annotations,
 * extended resources and taints it manages, tracked through the upstream
 * bookkeeping annotations so that upstream and featurebox masters can take
 * over from each other without removing anything
 * (upstream pkg/nfd-master/nfd-master.go: filterFeatureLabels,
 * updateNodeObject, and pkg/apis/nfd/validate). One module for nfd-master
 * and nfd-worker --standalone.
 *
 * A node may write its own Node's annotations, so the bookkeeping
 * annotations are trusted only where the record label (NL_RECORD_NAME, in
 * the namespace Kubernetes' NodeRestriction forbids nodes to touch) vouches
 * for them; otherwise they are hints, and a hint removes only what the node
 * could have removed itself and the policy would write. Taints are removed
 * only by the record, and not touched at all while taints are disabled. The
 * rules are in nodelabels.c's header comment. */
#ifndef FB_NODELABELS_H
#define FB_NODELABELS_H

#include "err.h"
#include "features.h"
#include "json.h"
#include "log.h"

struct re;
#include <stddef.h>

struct kube;

#define NL_DEFAULT_NS "feature.node.kubernetes.io"
#define NL_NFD_NS "nfd.node.kubernetes.io"

/* What may be written. Everything borrowed. */
struct nl_policy {
	const char *instance;              /* "" or --instance: bookkeeping annotations
					    * become "<instance>.nfd.node.kubernetes.io/..." */
	const char *const *extra_ns;       /* --extra-label-ns: re-allowed namespaces */
	size_t n_extra;
	const char *const *deny_ns;        /* --deny-label-ns: exact, or "*.suffix" */
	size_t n_deny;
	const struct re *label_whitelist; /* on the name part; NULL: everything */
	int enable_taints;                 /* --enable-taints */
	int allow_overwrite;               /* restrictions.allowOverwrite (default 1):
					    * replace a value NFD does not manage */
	int unprefixed;                    /* NL_AUTO_PREFIX (default), NL_KEEP_UNPREFIXED
					    * (--feature-gates DisableAutoPrefix=true) or
					    * NL_DROP_UNPREFIXED (v0.15-v0.17's
					    * autoDefaultNs: false) */
	int record;                        /* 1 (nfd-master): write the record label and
					    * trust the annotations it vouches for; 0
					    * (default; a writer that is the node itself,
					    * nfd-worker --standalone): hints only, no label */
	int (*may_write)(void *ctx);       /* NULL, or asked before every PATCH of
					    * nl_apply: 0 stops it (-FB_EAGAIN), e.g. a
					    * master that is no longer the leader */
	void *may_write_ctx;
};
/* What becomes of an unprefixed label, annotation or extended resource
 * name (taint keys are never prefixed: an unprefixed one is refused):
 * NL_AUTO_PREFIX: it gets "feature.node.kubernetes.io/" (a prefixed
 * duplicate wins); NL_KEEP_UNPREFIXED: written as it is (upstream v0.18+
 * with the DisableAutoPrefix gate); NL_DROP_UNPREFIXED: refused, "unprefixed
 * keys are not allowed" (upstream v0.15-v0.17 with autoDefaultNs: false). */
enum { NL_AUTO_PREFIX, NL_KEEP_UNPREFIXED, NL_DROP_UNPREFIXED };
/* Defaults: no instance, no lists, no whitelist, taints off, overwrite on,
 * auto prefix, no record. */
void nl_policy_init(struct nl_policy *p);

/* A desired (or current) state. Owned objects of string values, NULL
 * meaning empty; taints an array of {"key","value","effect"}. */
struct nl_set {
	struct json *labels, *annotations, *extended_resources, *taints;
};
void nl_set_free(struct nl_set *s);

/* Rejections by kind (the master's *_rejected_total metrics), and, when
 * why is set, each refusal's reason in full (the log shortens long values
 * and stops after 20 of a kind): kubectl-nfd --explain. */
struct nl_rejects {
	unsigned long labels, annotations, extended_resources, taints;
	void (*why)(void *ctx, const char *reason);
	void *ctx;
};

/* Makes s acceptable, in place: unprefixed label, annotation and extended
 * resource keys get "feature.node.kubernetes.io/" (or not: p->unprefixed);
 * a value "@d.f.e" is replaced by attribute e of attribute feature d.f of
 * feat (feat may be NULL: then such entries are dropped); then the
 * namespace policy, the whitelist and Kubernetes key/value validity drop
 * what fails, each drop logged (level W, naming key and reason; lg may be
 * NULL) and counted in rej (may be NULL). Taints are dropped whole unless
 * p->enable_taints. The rules per kind, and where they deviate from
 * upstream, are in the header comment of nodelabels.c. Returns 0 or
 * -FB_ENOMEM (s then partly filtered: free it). */
int nl_filter(const struct nl_policy *p, struct nl_set *s, const struct features *feat,
	      const struct fb_log *lg, struct nl_rejects *rej);

/* The requests that bring node (a Node object as the API returns it;
 * borrowed) to s (filtered): status, a JSON Patch for /status (extended
 * resources); meta, a JSON Patch for /metadata (labels, annotations, the
 * bookkeeping annotations) and, when taints change, /spec/taints guarded by
 * a "test" of metadata.resourceVersion. Each is an owned array, NULL when
 * there is nothing to do (the caller then sends no request). With
 * skip_removal nothing is removed (only added or replaced): for a node whose
 * features are not known yet. Returns 0, -FB_EINVAL (node has no metadata
 * object) or -FB_ENOMEM; out is NULL/NULL on error. */
struct nl_patches {
	struct json *status, *meta;
};
void nl_patches_free(struct nl_patches *pp);
int nl_diff(const struct nl_policy *p, const struct json *node, const struct nl_set *s,
	    int skip_removal, struct nl_patches *out);
/* The requests that remove everything NFD manages on node (by the
 * bookkeeping annotations, under the same trust rules), the record label and
 * every [<instance>.]nfd.node.kubernetes.io/ annotation (the taints one only
 * with p->enable_taints): --prune. */
int nl_prune_diff(const struct nl_policy *p, const struct json *node, struct nl_patches *out);

/* The record label: "[<instance>.]" NL_RECORD_NAME, its value "t-" or "n-"
 * (the taints annotation covered or not) and 60 hex digits of a SHA-256 over
 * the Node's metadata.uid and the bookkeeping annotations' exact values. */
#define NL_RECORD_NAME "node-restriction.kubernetes.io/nfd-record"
#define NL_RECORD_SIZE 64 /* with the NUL */
/* The record value that vouches for node's bookkeeping annotations as they
 * are (the taints annotation with p->enable_taints): what nfd-master would
 * write after writing them. For tests. Returns 0, -FB_EINVAL (no metadata)
 * or -FB_ETLS. */
int nl_record_value(const struct nl_policy *p, const struct json *node, char out[NL_RECORD_SIZE]);

/* What nl_apply did. */
struct nl_result {
	int changed;         /* 1 when a PATCH was sent and accepted */
	int requests;        /* API requests made (GET and PATCH) */
};

/* GETs node, diffs against s (or prunes when s is NULL), and PATCHes /status
 * then the node, in that order (the node's patch diffed again from the
 * status PATCH's answer, whose resourceVersion the taints' test needs); on
 * 409 or 422 (changed under us) GETs again and retries, at most 3 rounds.
 * Returns 0, -FB_ENOENT (no such node: the caller skips it), -FB_EINVAL (node
 * is not a node name), -FB_EIO (a non-2xx answer, or still conflicting after
 * 3 rounds; ei names the node, the request and the API's message), or the
 * transport error of kube_request. */
int nl_apply(struct kube *k, const char *node, const struct nl_policy *p, const struct nl_set *s,
	     int skip_removal, const struct fb_log *lg, struct nl_result *res, struct fb_errinfo *ei);

#endif
