/* nfdsrc kernel: kernel.version/config/loadedmodule/enabledmodule/selinux/kvm
 * (upstream source/kernel). */
#include "nfdsrc_internal.h"

#include "buf.h"
#include "hostfs.h"
#include "inflate.h"
#include "sysfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_label_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* Upstream's parseVersion: every character outside [-A-Za-z0-9_.] becomes
 * '_', then "-_." are trimmed from both ends; major/minor/revision come from
 * ^(\d+)(\.(\d+))?(\.(\d+))?(-.*)?$ and are all set (maybe "") on a match. */
static int kernel_version(const char *raw, struct features *f, struct json *labels,
			  const struct fb_log *lg)
{
	char full[ATTR_SIZE], part[3][24] = { "", "", "" };
	const char *p;
	size_t len = 0, start = 0;
	int matched = 0, rc;

	for (size_t i = 0; raw[i] && len + 1 < sizeof(full); i++)
		full[len++] = is_label_char(raw[i]) ? raw[i] : '_';
	full[len] = '\0';
	while (len && strchr("-_.", full[len - 1]))
		full[--len] = '\0';
	while (start < len && strchr("-_.", full[start]))
		start++;
	memmove(full, full + start, len - start + 1);

	p = full;
	for (int k = 0; k < 3; k++) {
		size_t n = 0;
		const char *q = p + (k ? 1 : 0);

		if (k && *p != '.')
			break;
		while (isdigit((unsigned char)q[n]))
			n++;
		if (n == 0 || n >= sizeof(part[0]))
			break;
		memcpy(part[k], q, n);
		part[k][n] = '\0';
		p = q + n;
	}
	/* the rest must be empty or "-..." (a failed .x leaves no match at all:
	 * both optional groups have the same shape, so no other split works) */
	matched = part[0][0] && (*p == '\0' || *p == '-');
	if ((rc = features_attr(f, "kernel.version", "full", full)) < 0 ||
	    (rc = nfdsrc_label_(labels, "kernel", "version.full", full, lg)) < 0)
		return rc;
	if (matched) {
		static const char *const names[] = { "major", "minor", "revision" };

		for (int k = 0; k < 3; k++) {
			char name[32];

			/* an unmatched group is still a key, with "" */
			snprintf(name, sizeof(name), "version.%s", names[k]);
			if ((rc = features_attr(f, "kernel.version", names[k], part[k])) < 0 ||
			    (rc = nfdsrc_label_(labels, "kernel", name, part[k], lg)) < 0)
				return rc;
		}
	}
	return 0;
}

/* Whether Go's filepath.Ext(path) is ".gz": the last element's name, from
 * its last dot, is exactly that. */
static int is_gz(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	return dot && strcmp(dot, ".gz") == 0;
}

/* *buf (len bytes read from path, or the read's error) gunzipped in its
 * place, under the cap of a plain config. A bad file is logged, as upstream
 * would say nothing and go on to the next config of its list. */
static ssize_t kconfig_gunzip(char **buf, ssize_t len, const char *path, const struct fb_log *lg)
{
	struct fb_errinfo ei;
	char msg[1280], *out;
	ssize_t n;

	if (len < 0)
		return len;
	fb_errinfo_init(&ei);
	n = inflate_gzip(*buf, (size_t)len, FILE_CAP - 1, &out, path, &ei);
	free(*buf);
	*buf = out;
	if (n < 0 && n != -FB_ENOMEM)
		NLOG_W(lg, "kernel: %s; trying the next kernel config",
		       fb_errinfo_str(&ei, msg, sizeof(msg)));
	return n;
}

/* Reads the first kernel config of upstream's search list that can be read:
 * the kconfigFile option (a path of the worker's own filesystem, as
 * upstream), /proc/config.gz, then the plain files. A name ending in .gz is
 * gunzipped. */
static ssize_t kconfig_read(const struct hostfs *h, const struct nfdsrc_config *c,
			    const char *ver, char **out, const struct fb_log *lg)
{
	static const char *const with_ver[] = {
		"proc/config.gz",
		"usr/src/linux-%s/.config", "usr/src/linux-rt-%s/.config", "usr/src/linux/.config",
		"usr/lib/modules/%s/config", "usr/lib/ostree-boot/config-%s",
		"usr/lib/kernel/config-%s", "usr/src/linux-headers-%s/.config",
		"lib/modules/%s/build/.config", "usr/src/linux-rt-headers-%s/.config",
		"boot/config-%s",
	};
	static const char *const no_ver[] = { "proc/config.gz", "usr/src/linux/.config" };
	const char *const *list = ver ? with_ver : no_ver;
	size_t n = ver ? sizeof(with_ver) / sizeof(with_ver[0]) : 2;
	const char *cfg = c->kernel_kconfig_file;
	char rel[PATH_MAX], path[PATH_MAX];
	ssize_t len;

	*out = NULL;
	if (cfg && cfg[0]) {
		len = sysfs_read_alloc(AT_FDCWD, cfg, FILE_CAP, out);
		if (is_gz(cfg))
			len = kconfig_gunzip(out, len, cfg, lg);
		if (len >= 0 || len == -FB_ENOMEM)
			return len;
		free(*out);
		*out = NULL;
	}
	for (size_t i = 0; i < n; i++) {
		/* the format is one of the fixed strings above */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		if (snprintf(rel, sizeof(rel), list[i], ver) >= (int)sizeof(rel))
			continue;
#pragma GCC diagnostic pop
		if (is_gz(rel) && hostfs_kernel_proc(h, rel, path, sizeof(path)) == 1) {
			/* in a pod upstream reads its own /proc/config.gz: procfs is
			 * the running kernel's, and our manifests mount only a few
			 * files of the host's /proc at /host-proc */
			NLOG_V(lg, 3, "kernel: trying %s (the running kernel's, in a pod)", path);
			len = sysfs_read_alloc(AT_FDCWD, path, FILE_CAP, out);
			len = kconfig_gunzip(out, len, path, lg);
		} else {
			NLOG_V(lg, 3, "kernel: trying %s%s", h->prefix, rel);
			len = nfdsrc_host_file_(h, rel, out);
			if (is_gz(rel) && hostfs_resolve(h, rel, path, sizeof(path)) >= 0)
				len = kconfig_gunzip(out, len, path, lg);
		}
		if (len >= 0 || len == -FB_ENOMEM)
			return len;
		free(*out);
		*out = NULL;
	}
	return -FB_ENOENT;
}

/* A kernel config, parsed: option names without CONFIG_, their values
 * trimmed of quotes, and whether the raw value was exactly y or m. */
struct kconfig {
	const char **name, **value;
	unsigned char *yes;
	size_t n, name_size, value_size, yes_size; /* three arrays, n entries each */
};

static void kconfig_free(struct kconfig *k)
{
	free(k->name);
	free(k->value);
	free(k->yes);
}

static int kconfig_parse(char *buf, struct kconfig *k)
{
	char *line, *next;

	for (line = buf; line; line = next) {
		char *eq, *v, *e;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if (strncmp(line, "CONFIG_", 7) != 0 || !(eq = strchr(line, '=')))
			continue;
		if (ARRAY_GROW(k->name, k->name_size, k->n + 1) < 0 ||
		    ARRAY_GROW(k->value, k->value_size, k->n + 1) < 0 ||
		    ARRAY_GROW(k->yes, k->yes_size, k->n + 1) < 0)
			return -FB_ENOMEM;
		*eq = '\0';
		v = eq + 1;
		k->yes[k->n] = strcmp(v, "y") == 0 || strcmp(v, "m") == 0;
		while (*v == '"') /* strings.Trim(v, `"`) */
			v++;
		e = v + strlen(v);
		while (e > v && e[-1] == '"')
			*--e = '\0';
		k->name[k->n] = line + 7;
		k->value[k->n++] = v;
	}
	return 0;
}

static int kernel_config(const struct hostfs *h, const struct nfdsrc_config *c, const char *ver,
			 struct features *f, struct json *labels, const struct fb_log *lg)
{
	struct kconfig k = { 0 };
	char *buf;
	ssize_t len = kconfig_read(h, c, ver, &buf, lg);
	int rc;

	if (len == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (len < 0) {
		NLOG_E(lg, "kernel: failed to read kconfig: no kernel config in the search list");
		return 0;
	}
	if ((rc = kconfig_parse(buf, &k)) < 0 ||
	    (rc = features_ensure(f, FEATURES_ATTRIBUTES, "kernel.config")) < 0 ||
	    (rc = features_attr_many(f, "kernel.config", k.name, k.value, k.n)) < 0)
		goto out;
	for (size_t i = 0; labels && i < c->kernel_config_opts.n; i++) {
		const char *want = c->kernel_config_opts.v[i];
		char lname[160];
		size_t j;

		/* the last occurrence, as in the map upstream fills; the value
		 * "true" for y and m, else the value */
		for (j = k.n; want && j > 0 && strcmp(k.name[j - 1], want) != 0; j--)
			;
		if (!want || j == 0)
			continue;
		snprintf(lname, sizeof(lname), "config.%s", want);
		if ((rc = nfdsrc_label_(labels, "kernel", lname, k.yes[j - 1] ? "true" : k.value[j - 1],
				lg)) < 0)
			goto out;
	}
out:
	kconfig_free(&k);
	free(buf);
	return rc;
}

/* Adds the modules of a <proc>/modules (each line's first field) or of a
 * modules.builtin (each "*.ko" path's base name) as flags of feature. */
static int module_flags(const char *buf, int builtin, struct features *f, const char *feature)
{
	int rc;

	if ((rc = features_ensure(f, FEATURES_FLAGS, feature)) < 0)
		return rc;
	for (const char *line = buf; line && *line;) {
		const char *end = strchr(line, '\n'), *next = end ? end + 1 : NULL, *b, *e;
		char name[256];

		if (!end)
			end = line + strlen(line);
		b = line;
		while (b < end && nfdsrc_is_space_(*b))
			b++;
		if (builtin) {
			e = end;
			while (e > b && nfdsrc_is_space_(e[-1]))
				e--;
			if (e - b < 3 || memcmp(e - 3, ".ko", 3) != 0)
				goto next_line;
			e -= 3;
			for (const char *s = e; s > b; s--)
				if (s[-1] == '/') {
					b = s;
					break;
				}
		} else {
			for (e = b; e < end && !nfdsrc_is_space_(*e); e++)
				;
		}
		if (e > b && (size_t)(e - b) < sizeof(name)) {
			memcpy(name, b, (size_t)(e - b));
			name[e - b] = '\0';
			if ((rc = features_flag(f, feature, name)) < 0)
				return rc;
		}
next_line:
		line = next;
	}
	return 0;
}

int nfdsrc_kernel(const struct hostfs *h, const struct nfdsrc_config *c, struct features *f,
		  struct json *labels, const struct fb_log *lg)
{
	char raw[ATTR_SIZE], rel[PATH_MAX], buf[ATTR_SIZE];
	char *loaded = NULL, *builtin = NULL;
	const char *ver = NULL;
	ssize_t n;
	int rc, e;

	n = nfdsrc_host_attr_(h, "proc/sys/kernel/osrelease", raw, sizeof(raw));
	if (n < 0)
		NLOG_E(lg, "kernel: failed to get kernel version: %s", fb_strerror((int)n));
	else
		ver = raw;

	if ((rc = kernel_config(h, c, ver, f, labels, lg)) < 0)
		return rc;

	/* kernel.enabledmodule = loaded + builtin, only when builtin is read */
	n = nfdsrc_host_file_(h, "proc/modules", &loaded);
	if (n == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (n < 0)
		NLOG_E(lg, "kernel: failed to get loaded kernel modules: %s", fb_strerror((int)n));
	if (ver && snprintf(rel, sizeof(rel), "lib/modules/%s/modules.builtin", ver) <
			   (int)sizeof(rel))
		n = nfdsrc_host_file_(h, rel, &builtin);
	else
		n = -FB_ENOENT;
	if (n == -FB_ENOMEM) {
		rc = -FB_ENOMEM;
		goto out;
	}
	if (n < 0) {
		NLOG_E(lg, "kernel: failed to get builtin kernel modules: %s", fb_strerror((int)n));
	} else {
		if ((loaded && (rc = module_flags(loaded, 0, f, "kernel.enabledmodule")) < 0) ||
		    (rc = module_flags(builtin, 1, f, "kernel.enabledmodule")) < 0)
			goto out;
	}

	/* kernel.kvm: whether /dev/kvm's class device exists */
	e = nfdsrc_host_exists_(h, "sys/devices/virtual/misc/kvm");
	if (e < 0)
		NLOG_E(lg, "kernel: failed to detect kvm status");
	else if ((rc = features_attr(f, "kernel.kvm", "enabled", e ? "true" : "false")) < 0)
		goto out;

	if (loaded && (rc = module_flags(loaded, 0, f, "kernel.loadedmodule")) < 0)
		goto out;

	/* kernel.selinux: <sys>/fs must exist; no selinux dir means disabled */
	if (nfdsrc_host_exists_(h, "sys/fs") != 1) {
		NLOG_E(lg, "kernel: failed to detect selinux status");
	} else if (nfdsrc_host_exists_(h, "sys/fs/selinux") == 0) {
		if ((rc = features_attr(f, "kernel.selinux", "enabled", "false")) < 0)
			goto out;
	} else if (nfdsrc_host_attr_(h, "sys/fs/selinux/enforce", buf, sizeof(buf)) < 0) {
		NLOG_E(lg, "kernel: failed to detect selinux status");
	} else {
		int on = buf[0] == '1';

		if ((rc = features_attr(f, "kernel.selinux", "enabled", on ? "true" : "false")) < 0 ||
		    (on && (rc = nfdsrc_label_true_(labels, "kernel", "selinux.enabled", lg)) < 0))
			goto out;
	}

	if (ver && (rc = kernel_version(ver, f, labels, lg)) < 0)
		goto out;
	rc = 0;
out:
	free(loaded);
	free(builtin);
	return rc;
}

static int kernel_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_kernel(c->h, c->cfg, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_kernel_source_ = { "kernel", NFDSRC_HOST, 0, 0, kernel_discover };
