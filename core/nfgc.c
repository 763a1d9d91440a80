#include "nfgc.h"

#include "err.h"
#include "kube.h"
#include "log.h"
#include "metrics.h"

#include <stdio.h>

int nfgc_node_gone(struct kube *k, const char *node)
{
	char path[400];
	struct kube_result res;
	struct fb_errinfo ei;
	int gone;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	fb_errinfo_init(&ei);
	gone = kube_request(k, "GET", path, NULL, NULL, 0, &res, &ei) == 0 && res.status == 404;
	kube_result_free(&res);
	return gone;
}

int nfgc_delete(const struct nfgc *g, const char *ns, const char *name, const char *node)
{
	char path[800], msg[1300];
	struct kube_result res;
	struct fb_errinfo ei;
	int rc;

	snprintf(path, sizeof(path), NFGC_NF_API "/namespaces/%s/nodefeatures/%s", ns, name);
	fb_errinfo_init(&ei);
	rc = kube_request(g->k, "DELETE", path, NULL, NULL, 0, &res, &ei);
	if (rc == -FB_ECANCELED) {
		kube_result_free(&res);
		return rc;
	}
	if (rc == 0 && (res.status / 100 == 2 || res.status == 404)) {
		LOG_I(g->lg, "deleted NodeFeature %s/%s of deleted node %s", ns, name, node);
		metrics_inc(g->mx, g->m_deleted, 1);
		kube_result_free(&res);
		return 0;
	}
	if (rc == 0)
		snprintf(msg, sizeof(msg), "%d %s", res.status, res.message);
	else
		fb_errinfo_str(&ei, msg, sizeof(msg));
	LOG_E(g->lg, "deleting NodeFeature %s/%s: %s (next garbage collection tries again)", ns, name, msg);
	metrics_inc(g->mx, g->m_failed, 1);
	kube_result_free(&res);
	return 1;
}
