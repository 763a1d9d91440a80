/* nfdsrc memory: memory.numa/swap/nv/hugepages (upstream source/memory). */
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

/* resource.Quantity's canonical form of n KiB: the largest binary suffix
 * that keeps the number whole ("2048" -> "2Mi", "1536" -> "1536Ki"). */
static void quantity_kib(unsigned long long n, char *out, size_t size)
{
	static const char *const sfx[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	size_t k = 0;

	if (n == 0) {
		snprintf(out, size, "0");
		return;
	}
	while (k + 1 < sizeof(sfx) / sizeof(sfx[0]) && n % 1024 == 0) {
		n /= 1024;
		k++;
	}
	snprintf(out, size, "%llu%s", n, sfx[k]);
}

static int memory_hugepages(const struct hostfs *h, struct features *f, const struct fb_log *lg)
{
	struct nfdsrc_names dirs = { 0 };
	int dfd = -1, rc, enabled = 0;

	rc = nfdsrc_host_list_(h, "sys/kernel/mm/hugepages", &dfd, &dirs);
	if (rc == -FB_ENOENT)
		return features_attr(f, "memory.hugepages", "enabled", "false");
	if (rc < 0) {
		if (rc != -FB_ENOMEM) {
			NLOG_E(lg, "memory: failed to detect huge pages: %s", fb_strerror(rc));
			rc = 0;
		}
		goto out;
	}
	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "memory.hugepages")) < 0)
		goto out;
	for (size_t i = 0; i < dirs.n; i++) {
		char path[NAME_MAX + 32], total[ATTR_SIZE] = "", size[NAME_MAX + 1], q[32], key[48];
		const char *s = dirs.v[i];
		unsigned long long kib;
		struct stat st;
		char *end;
		size_t len;

		if (fstatat(dfd, s, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/nr_hugepages", s);
		if (nfdsrc_attr_at_(dfd, path, total, sizeof(total)) < 0) {
			NLOG_E(lg, "memory: unable to read hugepages total count of %s", s);
			total[0] = '\0';
		}
		/* TrimRight(TrimPrefix(name, "hugepages-"), "kB") */
		if (strncmp(s, "hugepages-", 10) == 0)
			s += 10;
		len = strlen(s);
		while (len && (s[len - 1] == 'k' || s[len - 1] == 'B'))
			len--;
		memcpy(size, s, len);
		size[len] = '\0';
		errno = 0;
		kib = strtoull(size, &end, 10);
		if (!len || !isdigit((unsigned char)size[0]) || *end || errno) {
			NLOG_E(lg, "memory: unable to parse quantity %sKi of %s", size, dirs.v[i]);
			continue;
		}
		quantity_kib(kib, q, sizeof(q));
		snprintf(key, sizeof(key), "hugepages-%s", q);
		if ((rc = features_attr(f, "memory.hugepages", key, total)) < 0)
			goto out;
		enabled |= nfdsrc_num_(total, 10, 0) > 0;
	}
	rc = features_attr(f, "memory.hugepages", "enabled", enabled ? "true" : "false");
out:
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&dirs);
	return rc;
}

int nfdsrc_memory(const struct hostfs *h, struct features *f, struct json *labels,
		  const struct fb_log *lg)
{
	struct nfdsrc_names nodes = { 0 }, nd = { 0 };
	char *swaps = NULL, buf[32];
	int rc, dfd = -1, dax = 0;
	ssize_t n;

	/* memory.hugepages */
	if ((rc = memory_hugepages(h, f, lg)) < 0)
		return rc;

	/* memory.numa */
	rc = nfdsrc_host_list_(h, "sys/bus/node/devices", NULL, &nodes);
	if (rc == -FB_ENOMEM)
		goto out;
	if (rc < 0) {
		NLOG_E(lg, "memory: failed to detect NUMA nodes: %s", fb_strerror(rc));
	} else {
		snprintf(buf, sizeof(buf), "%zu", nodes.n);
		if ((rc = features_attr(f, "memory.numa", "is_numa", nodes.n > 1 ? "true" : "false")) < 0 ||
		    (rc = features_attr(f, "memory.numa", "node_count", buf)) < 0 ||
		    (nodes.n > 1 && (rc = nfdsrc_label_true_(labels, "memory", "numa", lg)) < 0))
			goto out;
	}

	/* memory.nv: one instance per <sys>/bus/nd/devices entry */
	rc = nfdsrc_host_list_(h, "sys/bus/nd/devices", &dfd, &nd);
	if (rc == -FB_ENOMEM)
		goto out;
	if (rc < 0 && rc != -FB_ENOENT) {
		NLOG_E(lg, "memory: failed to detect nvdimm devices: %s", fb_strerror(rc));
	} else {
		if ((rc = features_ensure(f, FEATURES_INSTANCES, "memory.nv")) < 0)
			goto out;
		for (size_t i = 0; i < nd.n; i++) {
			char path[NAME_MAX + 16], dt[ATTR_SIZE], mode[ATTR_SIZE];
			struct json *in = features_instance(f, "memory.nv");
			int has_dt, has_mode;

			if (!in) {
				rc = -FB_ENOMEM;
				goto out;
			}
			snprintf(path, sizeof(path), "%s/devtype", nd.v[i]);
			has_dt = nfdsrc_attr_at_(dfd, path, dt, sizeof(dt)) >= 0;
			snprintf(path, sizeof(path), "%s/mode", nd.v[i]);
			has_mode = nfdsrc_attr_at_(dfd, path, mode, sizeof(mode)) >= 0;
			if ((has_dt && (rc = features_inst_attr(in, "devtype", dt)) < 0) ||
			    (has_mode && (rc = features_inst_attr(in, "mode", mode)) < 0) ||
			    (rc = features_inst_attr(in, "name", nd.v[i])) < 0)
				goto out;
			dax |= has_dt && strcmp(dt, "nd_dax") == 0;
		}
		if ((nd.n && (rc = nfdsrc_label_true_(labels, "memory", "nv.present", lg)) < 0) ||
		    (dax && (rc = nfdsrc_label_true_(labels, "memory", "nv.dax", lg)) < 0))
			goto out;
	}

	/* memory.swap: more than the header line in <proc>/swaps */
	n = nfdsrc_host_file_(h, "proc/swaps", &swaps);
	if (n == -FB_ENOMEM) {
		rc = -FB_ENOMEM;
		goto out;
	}
	if (n < 0) {
		NLOG_E(lg, "memory: failed to detect swap: %s", fb_strerror((int)n));
	} else {
		size_t lines = 0;
		char *line, *next;

		for (line = swaps; line; line = next) {
			if ((next = strchr(line, '\n')))
				*next++ = '\0';
			lines += nfdsrc_trim_(line) > 0;
		}
		if ((rc = features_attr(f, "memory.swap", "enabled", lines > 1 ? "true" : "false")) < 0 ||
		    (lines > 1 && (rc = nfdsrc_label_true_(labels, "memory", "swap", lg)) < 0))
			goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&nodes);
	nfdsrc_names_free_(&nd);
	free(swaps);
	return rc;
}

static int memory_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_memory(c->h, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_memory_source_ = { "memory", NFDSRC_HOST, 0, 0, memory_discover };
