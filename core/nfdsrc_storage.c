/* nfdsrc storage: storage.block (upstream source/storage). */
#include "nfdsrc_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nfdsrc_storage(const struct hostfs *h, struct features *f, struct json *labels,
		   const struct fb_log *lg)
{
	static const char *const queue[] = { "dax", "name", "nr_zones", "rotational", "zoned" };
	struct nfdsrc_names devs = { 0 };
	int dfd = -1, rc, nonrot = 0;

	rc = nfdsrc_host_list_(h, "sys/block", &dfd, &devs);
	if (rc < 0) {
		if (rc != -FB_ENOMEM)
			NLOG_E(lg, "storage: failed to list block devices: %s", fb_strerror(rc));
		goto out;
	}
	if ((rc = features_ensure(f, FEATURES_INSTANCES, "storage.block")) < 0)
		goto out;
	for (size_t i = 0; i < devs.n; i++) {
		struct json *in = features_instance(f, "storage.block");

		if (!in) {
			rc = -FB_ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < sizeof(queue) / sizeof(queue[0]); k++) {
			char path[NAME_MAX + 24], v[ATTR_SIZE];

			if (strcmp(queue[k], "name") == 0) {
				if ((rc = features_inst_attr(in, "name", devs.v[i])) < 0)
					goto out;
				continue;
			}
			snprintf(path, sizeof(path), "%s/queue/%s", devs.v[i], queue[k]);
			if (nfdsrc_attr_at_(dfd, path, v, sizeof(v)) < 0) {
				NLOG_V(lg, 3, "storage: failed to read %s", path);
				continue;
			}
			if ((rc = features_inst_attr(in, queue[k], v)) < 0)
				goto out;
			nonrot |= strcmp(queue[k], "rotational") == 0 && strcmp(v, "0") == 0;
		}
	}
	if (nonrot && (rc = nfdsrc_label_true_(labels, "storage", "nonrotationaldisk", lg)) < 0)
		goto out;
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&devs);
	return rc;
}

static int storage_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_storage(c->h, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_storage_source_ = { "storage", NFDSRC_HOST, 0, 0, storage_discover };
