/* nfgc: removing the NodeFeatures of deleted nodes, as nfd-master's garbage
 * collection and the nfd-gc applet both do it: a node is gone only when the
 * API answers 404 for it (a list or watch may be stale), and a NodeFeature
 * that cannot be deleted is logged, counted and left for the next pass. */
#ifndef FB_NFGC_H
#define FB_NFGC_H

struct fb_log;
struct kube;
struct metrics;

#define NFGC_NF_API "/apis/nfd.k8s-sigs.io/v1alpha1"

struct nfgc {
	struct kube *k;
	const struct fb_log *lg;
	struct metrics *mx;
	int m_deleted, m_failed; /* counters (-1: none) */
};

/* 1 when the API says node does not exist (404), 0 when it does or cannot
 * say. */
int nfgc_node_gone(struct kube *k, const char *node);

/* Deletes NodeFeature ns/name of the deleted node. Returns 0 when it is gone
 * (deleted now, or 404), 1 when the API refused or failed (logged as an
 * error, counted), -FB_ECANCELED on SIGTERM. */
int nfgc_delete(const struct nfgc *g, const char *ns, const char *name, const char *node);

#endif
