/* nfdsrc fake: upstream's fake source (source/fake), for trying rules
 * without the hardware: fake.flag, fake.attribute and fake.instance from
 * sources.fake (its defaults when the config has none), labels fake-<name>
 * from sources.fake.labels. Off unless featureSources names it ("all" does
 * not), as upstream's. */
#include "nfdsrc_internal.h"

#include "yaml.h"

#include <string.h>

static int fake_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	struct json *def = NULL;
	const struct json *cfg = c->fake, *e;
	struct fb_errinfo ei;
	int rc;

	if (!cfg) {
		fb_errinfo_init(&ei);
		if (!(cfg = def = yaml_parse(NFDSRC_FAKE_DEFAULTS, sizeof(NFDSRC_FAKE_DEFAULTS) - 1, "fake", &ei)))
			return -FB_ENOMEM;
	}
	if ((rc = features_ensure(f, FEATURES_FLAGS, "fake.flag")) < 0 ||
	    (rc = features_ensure(f, FEATURES_ATTRIBUTES, "fake.attribute")) < 0 ||
	    (rc = features_ensure(f, FEATURES_INSTANCES, "fake.instance")) < 0)
		goto out;
	for (e = json_child(json_get(cfg, "flagFeatures")); e && rc == 0; e = json_next(e))
		rc = features_flag(f, "fake.flag", json_str(e));
	for (e = json_child(json_get(cfg, "attributeFeatures")); e && rc == 0; e = json_next(e))
		rc = features_attr(f, "fake.attribute", json_key(e), json_str(e));
	for (e = json_child(json_get(cfg, "instanceFeatures")); e && rc == 0; e = json_next(e)) {
		struct json *inst = features_instance(f, "fake.instance");

		if (!inst)
			rc = -FB_ENOMEM;
		for (const struct json *a = json_child(e); a && rc == 0; a = json_next(a))
			rc = features_inst_attr(inst, json_key(a), json_str(a));
	}
	if (labels)
		for (e = json_child(json_get(cfg, "labels")); e && rc == 0; e = json_next(e))
			/* as upstream: a name with a namespace is taken as it is */
			rc = strchr(json_key(e), '/') ? json_set_str(labels, json_key(e), json_str(e))
						    : nfdsrc_label_(labels, "fake", json_key(e), json_str(e), c->lg);
out:
	json_free(def);
	if (rc < 0)
		NLOG_E(c->lg, "fake: %s", fb_strerror(rc));
	return rc;
}

const struct nfdsrc_source nfdsrc_fake_source_ = { "fake", NFDSRC_HOST, 0, 0, fake_discover };
