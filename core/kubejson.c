/* kube's JSON request helpers: the "print a body, send it, check the
 * answer, say what failed" that applets wrote each time. */
#include "kube.h"

#include "json.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kube_request_json(struct kube *k, const char *method, const char *path, const char *content_type,
		      const struct json *body, struct kube_result *res, struct fb_errinfo *ei)
{
	size_t len = 0;
	char *b = NULL;
	int rc;

	memset(res, 0, sizeof(*res));
	if (body && !(b = json_print(body, &len)))
		return fb_errinfo_set(ei, FB_ENOMEM, 0, path, "printing the request body");
	rc = kube_request(k, method, path, content_type, b, b ? len : 0, res, ei);
	free(b);
	return rc;
}

int kube_call_json(struct kube *k, const struct fb_log *lg, const char *what, const char *method, const char *path,
		   const char *content_type, const struct json *body, struct kube_result *res)
{
	struct fb_errinfo ei;
	char msg[600], where[600];
	int rc;

	fb_errinfo_init(&ei);
	if (!what) {
		snprintf(where, sizeof(where), "%s %s", method, path);
		what = where;
	}
	rc = kube_request_json(k, method, path, content_type, body, res, &ei);
	if (rc < 0) {
		LOG_W(lg, "%s: %s", what, fb_errinfo_str(&ei, msg, sizeof(msg)));
		return -1;
	}
	if (res->status < 200 || res->status > 299) {
		LOG_W(lg, "%s: HTTP %d %s", what, res->status, res->message);
		return -1;
	}
	return 0;
}
