/* nodelabels_apply: a desired set applied to a Node over the API (GET,
 * diff, PATCH /status then the node; on a conflict read again, at most
 * NL_ROUNDS rounds). The rules are in nodelabels.c. */
#include "nodelabels_int.h"

#include "kube.h"
#include "labels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NL_ROUNDS 3

static int api_error(const char *node, const char *method, const char *path, const struct kube_result *r,
		     struct fb_errinfo *ei)
{
	char what[700], detail[256];

	snprintf(what, sizeof(what), "node %s: %s %s", node, method, path);
	snprintf(detail, sizeof(detail), "HTTP %d %s%s%.120s", r->status, r->reason,
		 r->message[0] ? ": " : "", r->message);
	return fb_errinfo_set(ei, FB_EIO, 0, what, detail);
}

/* PATCHes one JSON Patch; r gets the answer. */
static int send_patch(struct kube *k, const char *path, const struct json *ops, const struct fb_log *lg,
		      const char *node, struct kube_result *r, struct fb_errinfo *ei)
{
	size_t len;
	char *body = json_print(ops, &len);
	int rc;

	if (!body)
		return fb_errinfo_set(ei, FB_ENOMEM, 0, node, NULL);
	if (lg)
		LOG_V(lg, 3, "node %s: PATCH %s %s", node, path, body);
	kube_result_free(r);
	rc = kube_request(k, "PATCH", path, "application/json-patch+json", body, len, r, ei);
	free(body);
	return rc;
}

int nl_apply(struct kube *k, const char *node, const struct nl_policy *p, const struct nl_set *s,
	     int skip_removal, const struct fb_log *lg, struct nl_result *res, struct fb_errinfo *ei)
{
	struct kube_result r = { 0 };
	struct nl_patches pp = { 0 };
	char path[300], spath[310], last[200] = "";
	int rc = 0;

	res->changed = res->requests = 0;
	if (!labels_valid_prefix(node, strlen(node)))
		return fb_errinfo_set(ei, FB_EINVAL, 0, node, "not a node name");
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	snprintf(spath, sizeof(spath), "%s/status", path);
	for (int round = 0; round < NL_ROUNDS; round++) {
		const char *target = NULL;
		const struct json *ops = NULL;

		kube_result_free(&r);
		res->requests++;
		if ((rc = kube_request(k, "GET", path, NULL, NULL, 0, &r, ei)) < 0)
			goto out;
		if (r.status == 404) {
			rc = fb_errinfo_set(ei, FB_ENOENT, 0, node, "no such node");
			goto out;
		}
		if (r.status / 100 != 2) {
			rc = api_error(node, "GET", path, &r, ei);
			goto out;
		}
		nl_patches_free(&pp);
		rc = s ? nl_diff(p, r.body, s, skip_removal, &pp) : nl_prune_diff(p, r.body, &pp);
		if (rc < 0) {
			rc = fb_errinfo_set(ei, -rc, 0, node, rc == -FB_EINVAL ? "not a Node object" : NULL);
			goto out;
		}
		for (int i = 0; i < 2; i++) {
			target = i == 0 ? spath : path;
			ops = i == 0 ? pp.status : pp.meta;
			if (!ops)
				continue;
			if (p->may_write && !p->may_write(p->may_write_ctx)) {
				rc = fb_errinfo_set(ei, FB_EAGAIN, 0, node, "not allowed to write now");
				goto out;
			}
			res->requests++;
			if ((rc = send_patch(k, target, ops, lg, node, &r, ei)) < 0)
				goto out;
			if (r.status == 409 || r.status == 422)
				break;
			if (r.status / 100 != 2) {
				rc = api_error(node, "PATCH", target, &r, ei);
				goto out;
			}
			res->changed = 1;
			ops = NULL;
			if (i == 0 && pp.meta && json_get(r.body, "metadata")) {
				/* the status PATCH gave the node a new resourceVersion,
				 * which the taints' test must carry: diff the node it
				 * answered with (ignoring status, done) rather than patch
				 * the old test value, which could hide a concurrent change */
				nl_patches_free(&pp);
				rc = s ? nl_diff(p, r.body, s, skip_removal, &pp) : nl_prune_diff(p, r.body, &pp);
				if (rc < 0) {
					rc = fb_errinfo_set(ei, -rc, 0, node, NULL);
					goto out;
				}
			}
		}
		if (!ops)
			goto out; /* everything sent, or nothing to send */
		/* changed under us (a conflict, or a failed resourceVersion test or
		 * a path that went away): read the node again */
		snprintf(last, sizeof(last), "HTTP %d %s%s%.120s", r.status, r.reason, r.message[0] ? ": " : "",
			 r.message);
		if (lg)
			LOG_V(lg, 1, "node %s: PATCH %s: %s; reading the node again", node, target, last);
	}
	{
		char what[400];

		snprintf(what, sizeof(what), "node %s: changed under us %d times", node, NL_ROUNDS);
		rc = fb_errinfo_set(ei, FB_EIO, 0, what, last);
	}
out:
	kube_result_free(&r);
	nl_patches_free(&pp);
	return rc;
}
