/* nfdsrc system: system.osrelease/name/dmiid (upstream source/system). */
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

static int system_osrelease(const struct hostfs *h, struct features *f, struct json *labels,
			    const struct fb_log *lg)
{
	static const char *const label_keys[] = { "ID", "VERSION_ID", "VERSION_ID.major",
						  "VERSION_ID.minor" };
	char *buf, *line, *next, major[32] = "", minor[32] = "";
	const char *vid;
	ssize_t n = nfdsrc_host_file_(h, "etc/os-release", &buf);
	int rc = 0;

	if (n == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (n < 0) {
		NLOG_E(lg, "system: failed to get os-release: %s", fb_strerror((int)n));
		return 0;
	}
	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "system.osrelease")) < 0)
		goto out;
	/* ^(\w+)=(.+), the value trimmed of " and ' at both ends */
	for (line = buf; line; line = next) {
		char *eq, *v, *e;
		size_t len;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		len = strlen(line);
		if (len && line[len - 1] == '\r') /* bufio.ScanLines drops it */
			line[--len] = '\0';
		for (eq = line; isalnum((unsigned char)*eq) || *eq == '_'; eq++)
			;
		if (eq == line || *eq != '=' || !eq[1])
			continue;
		*eq = '\0';
		v = eq + 1;
		while (*v == '"' || *v == '\'')
			v++;
		e = v + strlen(v);
		while (e > v && (e[-1] == '"' || e[-1] == '\''))
			*--e = '\0';
		if ((rc = features_attr(f, "system.osrelease", line, v)) < 0)
			goto out;
	}
	/* VERSION_ID.major/.minor from ^(\d+)(\.(\d+))?(\..*)?$, set when
	 * not empty */
	vid = json_get_str(features_attrs(f, "system.osrelease"), "VERSION_ID", NULL);
	if (vid) {
		size_t a = strspn(vid, "0123456789"), b = 0;

		if (a && a < sizeof(major) && (vid[a] == '\0' || vid[a] == '.')) {
			memcpy(major, vid, a);
			major[a] = '\0';
			if (vid[a] == '.') {
				b = strspn(vid + a + 1, "0123456789");
				if (b && b < sizeof(minor) &&
				    (vid[a + 1 + b] == '\0' || vid[a + 1 + b] == '.')) {
					memcpy(minor, vid + a + 1, b);
					minor[b] = '\0';
				}
			}
		}
		if ((major[0] && (rc = features_attr(f, "system.osrelease", "VERSION_ID.major",
						     major)) < 0) ||
		    (minor[0] && (rc = features_attr(f, "system.osrelease", "VERSION_ID.minor",
						     minor)) < 0))
			goto out;
	}
	for (size_t i = 0; labels && i < sizeof(label_keys) / sizeof(label_keys[0]); i++) {
		const char *v = json_get_str(features_attrs(f, "system.osrelease"), label_keys[i],
					     NULL);
		char name[48];

		snprintf(name, sizeof(name), "os_release.%s", label_keys[i]);
		if (v && (rc = nfdsrc_label_(labels, "system", name, v, lg)) < 0)
			goto out;
	}
out:
	free(buf);
	return rc;
}

int nfdsrc_system(const struct hostfs *h, const char *nodename, struct features *f,
		  struct json *labels, const struct fb_log *lg)
{
	static const char *const dmi[] = {
		"bios_date", "bios_vendor", "bios_version", "board_asset_tag", "board_name",
		"board_vendor", "board_version", "chassis_asset_tag", "chassis_type",
		"chassis_vendor", "chassis_version", "product_family", "product_name",
		"product_sku", "product_version", "sys_vendor",
	};
	int rc;

	for (size_t i = 0; i < sizeof(dmi) / sizeof(dmi[0]); i++) {
		char rel[64], v[ATTR_SIZE];

		snprintf(rel, sizeof(rel), "sys/devices/virtual/dmi/id/%s", dmi[i]);
		if (nfdsrc_host_attr_(h, rel, v, sizeof(v)) < 0) {
			NLOG_V(lg, 2, "system: failed to get DMI entry %s", dmi[i]);
			continue;
		}
		if ((rc = features_attr(f, "system.dmiid", dmi[i], v)) < 0)
			return rc;
	}
	if ((rc = features_attr(f, "system.name", "nodename", nodename ? nodename : "")) < 0)
		return rc;
	return system_osrelease(h, f, labels, lg);
}

static int system_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_system(c->h, c->nodename, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_system_source_ = { "system", NFDSRC_HOST, 0, 0, system_discover };
