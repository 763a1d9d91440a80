/* nfdsrc local: local.label and local.feature from features.d (core/featfile)
 * and the hooks' output (core/hooks), upstream's source/local. */
#include "nfdsrc_internal.h"

#include "featfile.h"

int nfdsrc_local(const char *features_dir, const struct json *hook_labels,
		 const struct json *hook_features, struct features *f, struct json *labels,
		 const struct fb_log *lg)
{
	struct json *ll = NULL, *lf = NULL;
	struct fb_errinfo ei;
	char msg[1200];
	int rc;

	fb_errinfo_init(&ei);
	rc = featfile_read_dir(features_dir, NULL, lg, &ll, &lf, &ei);
	if (rc < 0 && rc != -FB_ENOENT)
		NLOG_E(lg, "local: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
	if (rc == -FB_ENOENT) { /* no features.d: hooks may still say something */
		ll = json_new_object();
		lf = json_new_object();
		rc = ll && lf ? 0 : -FB_ENOMEM;
	}
	if (rc == 0) {
		/* the last hooks run over the files, as upstream */
		for (const struct json *e = json_child(hook_labels); e; e = json_next(e))
			json_set_str(ll, json_key(e), json_str(e));
		for (const struct json *e = json_child(hook_features); e; e = json_next(e))
			json_set_str(lf, json_key(e), json_str(e));
		for (const struct json *e = json_child(ll); e; e = json_next(e)) {
			features_attr(f, "local.label", json_key(e), json_str(e));
			if (labels)
				json_set_str(labels, json_key(e), json_str(e));
		}
		for (const struct json *e = json_child(lf); e; e = json_next(e))
			features_attr(f, "local.feature", json_key(e), json_str(e));
	}
	json_free(ll);
	json_free(lf);
	/* upstream publishes both, even empty */
	features_ensure(f, FEATURES_ATTRIBUTES, "local.label");
	features_ensure(f, FEATURES_ATTRIBUTES, "local.feature");
	return rc;
}

static int local_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_local(c->features_dir, c->hook_labels, c->hook_features, f, labels, c->lg);
}

/* Upstream's priority 20: its labels override every other source's. */
const struct nfdsrc_source nfdsrc_local_source_ = { "local", NFDSRC_FILES, 20, 0, local_discover };
