/* nfdsrc network: network.device/virtual (upstream source/network). */
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

/* Reads dir/file into the instance as the file's base name; a missing file
 * or EINVAL (speed of a link that is down) is skipped silently. */
static int iface_attr(int dfd, const char *iface, const char *file, struct json *in,
		      char *out, size_t size, const struct fb_log *lg)
{
	char path[NAME_MAX + 40];
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	ssize_t n;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", iface, file);
	n = nfdsrc_attr_at_(dfd, path, out, size);
	if (n < 0) {
		if (n != -FB_ENOENT && !(n == -FB_EIO && errno == EINVAL))
			NLOG_E(lg, "network: failed to read %s: %s", path, fb_strerror((int)n));
		return 0;
	}
	return features_inst_attr(in, base, out);
}

static int sriov_positive(const char *v, const char *attr, const char *iface,
			  const struct fb_log *lg)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (!*v || *end || errno) {
		NLOG_E(lg, "network: failed to parse %s of %s: \"%s\"", attr, iface, v);
		return 0;
	}
	return n > 0;
}

int nfdsrc_network(const struct hostfs *h, struct features *f, struct json *labels,
		   const struct fb_log *lg)
{
	static const char *const dev_files[] = { "mtu", "operstate", "speed",
						 "device/sriov_numvfs", "device/sriov_totalvfs" };
	struct nfdsrc_names ifs = { 0 };
	int dfd = -1, rc, capable = 0, configured = 0;

	rc = nfdsrc_host_list_(h, "sys/class/net", &dfd, &ifs);
	if (rc < 0) {
		if (rc != -FB_ENOMEM)
			NLOG_E(lg, "network: failed to list network interfaces: %s", fb_strerror(rc));
		goto out;
	}
	if ((rc = features_ensure(f, FEATURES_INSTANCES, "network.device")) < 0 ||
	    (rc = features_ensure(f, FEATURES_INSTANCES, "network.virtual")) < 0)
		goto out;
	for (size_t i = 0; i < ifs.n; i++) {
		const char *name = ifs.v[i];
		char path[NAME_MAX + 16], v[5][ATTR_SIZE];
		struct stat st;
		struct json *in;
		int dev;

		if (strcmp(name, "bonding_masters") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/device", name);
		dev = fstatat(dfd, path, &st, 0) == 0;
		if (!(in = features_instance(f, dev ? "network.device" : "network.virtual"))) {
			rc = -FB_ENOMEM;
			goto out;
		}
		/* members in key order: mtu, name, operstate, speed, sriov_* */
		if ((rc = iface_attr(dfd, name, dev_files[0], in, v[0], ATTR_SIZE, lg)) < 0 ||
		    (rc = features_inst_attr(in, "name", name)) < 0)
			goto out;
		for (size_t k = 1; k < (dev ? 5u : 3u); k++)
			if ((rc = iface_attr(dfd, name, dev_files[k], in, v[k], ATTR_SIZE, lg)) < 0)
				goto out;
		if (!dev)
			continue;
		if (json_get(in, "sriov_totalvfs"))
			capable |= sriov_positive(v[4], "sriov_totalvfs", name, lg);
		if (json_get(in, "sriov_numvfs"))
			configured |= sriov_positive(v[3], "sriov_numvfs", name, lg);
	}
	if ((capable && (rc = nfdsrc_label_true_(labels, "network", "sriov.capable", lg)) < 0) ||
	    (configured && (rc = nfdsrc_label_true_(labels, "network", "sriov.configured", lg)) < 0))
		goto out;
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&ifs);
	return rc;
}

static int network_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_network(c->h, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_network_source_ = { "network", NFDSRC_HOST, 0, 0, network_discover };
