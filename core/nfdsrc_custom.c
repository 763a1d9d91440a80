/* nfdsrc custom: NodeFeatureRule-style rules (core/rules): upstream's two
 * built-in rules (rdma.capable: a Mellanox PCI device; rdma.available: the
 * ib_uverbs and rdma_ucm modules loaded), then sources.custom, then
 * custom.d, in that order, as upstream's source/custom runs them. */
#include "nfdsrc_internal.h"

#include "featfile.h"
#include "rules.h"
#include "sysfs.h"
#include "yaml.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(NFDSRC_CUSTOM_MAX_FILES == FEATFILE_MAX_FILES, "custom.d's cap is features.d's");

static void on_custom_error(void *ctx, const char *what, const char *rule, const char *msg)
{
	const struct fb_log *lg = ctx;

	NLOG_E(lg, "custom: %s: rule \"%s\": %s (the rule is skipped)", what, rule, msg);
}

static void custom_run(const struct json *list, const char *what, struct features *f,
		       struct rules_out *out, const struct fb_log *lg)
{
	struct rules *r;

	if (rules_compile(&r, list, RULES_CUSTOM, what) < 0) {
		NLOG_E(lg, "custom: out of memory");
		return;
	}
	/* broken rules are reported by the run, with the failing ones */
	if (rules_run(r, f, out, on_custom_error, (void *)lg) < 0)
		NLOG_E(lg, "custom: out of memory");
	rules_free(r);
}

/* One directory of custom.d: sub is "" or the subdirectory, relative to
 * root (custom.d, open); dir names custom.d in log lines. */
static void custom_scan(const char *dir, int root, const char *sub, struct features *f,
		       struct rules_out *out, const struct fb_log *lg)
{
	char **names = NULL, rel[1024], path[1300], msg[1300], esc[300];
	size_t n = 0, total = 0;
	int fd = hostfs_open_beneath(root, sub, O_RDONLY | O_DIRECTORY, NULL, 0);

	if (fd < 0 || hostfs_list(fd, NFDSRC_CUSTOM_MAX_FILES, &names, &n, &total) < 0) {
		NLOG_E(lg, "custom: %s/%s: %s", dir, log_escape(sub, strlen(sub), esc, sizeof(esc)),
		       fd < 0 ? fb_strerror(fd) : strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (total > n)
		NLOG_W(lg, "custom: %zu files in %s/%s, reading the first %d by name (the cap)", total,
		       dir, log_escape(sub, strlen(sub), esc, sizeof(esc)), NFDSRC_CUSTOM_MAX_FILES);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		char *text = NULL;
		ssize_t len;
		struct fb_errinfo ei;
		struct json *doc = NULL;

		if (snprintf(rel, sizeof(rel), "%s%s%s", sub, *sub ? "/" : "", names[i]) >= (int)sizeof(rel))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, log_escape(rel, strlen(rel), esc, sizeof(esc)));
		fd = hostfs_open_beneath(root, rel, O_RDONLY | O_NONBLOCK, NULL, 0);
		if (fd < 0) {
			if (fd != -FB_ENOENT) /* gone meanwhile, or a dangling link: nothing */
				NLOG_W(lg, "custom: skipping %s: %s", path, fb_strerror(fd));
			continue;
		}
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			close(fd);
			if (!*sub)
				custom_scan(dir, root, rel, f, out, lg);
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			close(fd);
			continue;
		}
		len = sysfs_read_fd_alloc(fd, 1 << 20, &text);
		close(fd);
		fb_errinfo_init(&ei);
		if (len < 0)
			NLOG_E(lg, "custom: %s: %s", path, fb_strerror((int)len));
		else if (!(doc = yaml_parse(text, (size_t)len, path, &ei)))
			NLOG_E(lg, "custom: %s (file skipped)", fb_errinfo_str(&ei, msg, sizeof(msg)));
		else if (json_type(doc) != JSON_ARRAY && json_type(doc) != JSON_NULL)
			NLOG_E(lg, "custom: %s: not a list of rules (file skipped)", path);
		else if (json_type(doc) == JSON_ARRAY)
			custom_run(doc, path, f, out, lg);
		json_free(doc);
		free(text);
	}
	hostfs_names_free(names, n);
}

/* Upstream's static rules (source/custom/static_features.go), as data. */
static const char builtin_rules[] =
	"- name: RDMA capable static rule\n"
	"  labels: {rdma.capable: \"true\"}\n"
	"  matchFeatures:\n"
	"  - feature: pci.device\n"
	"    matchExpressions: {vendor: {op: In, value: [\"15b3\"]}}\n"
	"- name: RDMA available static rule\n"
	"  labels: {rdma.available: \"true\"}\n"
	"  matchFeatures:\n"
	"  - feature: kernel.loadedmodule\n"
	"    matchExpressions: {ib_uverbs: {op: Exists}, rdma_ucm: {op: Exists}}\n";

void nfdsrc_custom(const struct json *rules, const char *custom_dir, struct features *f,
		   struct json *labels, const struct fb_log *lg)
{
	struct rules_out out;
	int root;

	if (rules_out_init(&out) < 0) {
		NLOG_E(lg, "custom: out of memory");
		return;
	}
	{
		struct fb_errinfo ei;
		struct json *builtin;

		fb_errinfo_init(&ei);
		builtin = yaml_parse(builtin_rules, sizeof(builtin_rules) - 1, "built-in rules", &ei);
		if (builtin)
			custom_run(builtin, "built-in rules", f, &out, lg);
		else
			NLOG_E(lg, "custom: built-in rules: %s", ei.detail);
		json_free(builtin);
	}
	if (rules)
		custom_run(rules, "sources.custom", f, &out, lg);
	root = open(custom_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the admin names it */
	if (root >= 0) {
		custom_scan(custom_dir, root, "", f, &out, lg);
		close(root);
	} else {
		NLOG_V(lg, 1, "custom: %s: %s", custom_dir, strerror(errno));
	}
	for (const struct json *e = json_child(out.labels); e; e = json_next(e))
		json_set_str(labels, json_key(e), json_str(e));
	json_remove(json_get(f->root, "attributes"), "rule.matched");
	rules_out_free(&out);
}

static int custom_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	nfdsrc_custom(c->custom_rules, c->custom_dir, f, labels, c->lg);
	return 0;
}

/* Upstream's priority 10: over the host sources' labels, under local's. */
const struct nfdsrc_source nfdsrc_custom_source_ = { "custom", NFDSRC_RULES, 10, 1, custom_discover };
