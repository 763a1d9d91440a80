/* nfdconf: nfd-worker.conf, the upstream worker's YAML config file, and the
 * --options string (same format, applied after the file).
 *
 * Mirrors pkg/nfd-worker/nfd-worker.go (configure, newDefaultConfig,
 * sourcesConfig.UnmarshalJSON) and the source configs of v0.19. Upstream
 * decodes with sigs.k8s.io/yaml into Go structs through encoding/json, and
 * that is what we match:
 * - Struct members match keys case-insensitively (ASCII), an exact match
 *   first: "core", "Core", "sleepInterval", "SleepInterval", and inside the
 *   source configs "deviceClassWhitelist", "DeviceClassWhitelist". Map keys
 *   are exact: source names under "sources" ("pci", not "PCI") and the klog
 *   option names. When two spellings of one member appear, the later wins.
 * - A YAML number or boolean where a string (or a list item) is wanted
 *   becomes its text (deviceClassWhitelist: [12] gives "12"; quote class
 *   codes anyway: 010 is the number 10 here and 8 to upstream's YAML 1.1);
 *   a string where a number or boolean is wanted is an error.
 * - A list that is given replaces the default list; members not given keep
 *   their defaults; null leaves a scalar as it was and empties a list.
 * - core.sleepInterval: a Go duration string ("1m30s", "1.5h", "-1s") or a
 *   number of nanoseconds; 0 < x < 1s becomes 1s (logged), x <= 0 means
 *   never re-discover (stored as 0).
 * - core.sources (deprecated) replaces core.labelSources; core.noOwnerRefs:
 *   true (deprecated) empties core.ownerRefs; both after the whole text.
 * Where we differ: an unknown key is a warning naming it and its line:column
 * (upstream ignores it silently); a value of the wrong type is an error
 * naming the key and its line:column (upstream: the Go error, no position);
 * core.ownerRefs is checked here (node, pod, ds, no duplicates);
 * labelWhiteList is kept as text (the user of it compiles it); klog options
 * other than v are accepted and ignored; sources.local.hooksEnabled exists
 * (upstream dropped hooks in v0.17); sources.fake is unknown; Unicode case
 * folding of keys (Go folds the Kelvin sign to 'k') is not done. */
#ifndef FB_NFDCONF_H
#define FB_NFDCONF_H

#include "err.h"

#include <stddef.h>

struct fb_log;
struct json;

/* A list of strings. The items are static defaults or owned by the list
 * (one block, own_); either way readers just use v[0..n). */
struct nfd_strlist {
	const char *const *v;
	size_t n;
	void *own_;
};

struct nfd_worker_config {
	struct {
		long long sleep_interval_ms;          /* 60000; 0: never re-discover */
		struct nfd_strlist feature_sources;  /* [all] */
		struct nfd_strlist label_sources;    /* [all] */
		const char *label_whitelist;         /* "" (matches everything), a Go regexp */
		int no_publish;                      /* 0 */
		struct nfd_strlist no_publish_features; /* [] */
		struct nfd_strlist owner_refs;       /* [pod, ds] */
		int klog_v;                          /* 0 */
		struct json *klog;                   /* core.klog as strings (app_klog_config), or NULL */
		char *label_whitelist_own_;
	} core;
	struct {
		struct nfd_strlist device_class_whitelist; /* pci [03, 0b40, 12]; usb [0e, ef, fe, ff] */
		struct nfd_strlist device_label_fields;    /* pci [class, vendor]; usb [class, vendor, device] */
	} pci, usb;
	struct {
		struct nfd_strlist attribute_blacklist; /* upstream's list (BMI1, ..., TDX_GUEST) */
		struct nfd_strlist attribute_whitelist; /* []: when not empty it wins */
	} cpuid;
	struct {
		const char *kconfig_file;        /* "": search the usual places */
		struct nfd_strlist config_opts;  /* [NO_HZ, NO_HZ_IDLE, NO_HZ_FULL, PREEMPT] */
		char *kconfig_file_own_;
	} kernel;
	int local_hooks_enabled;                 /* sources.local.hooksEnabled: 0 */
	struct json *custom;                     /* sources.custom: an owned array of rules,
						  * NULL when none (the default) */
	struct json *fake;                       /* sources.fake: an owned object (the defaults
						  * with every layer merged), NULL: the defaults */
};

/* Cannot fail: every field at its upstream default (nothing allocated). */
void nfdconf_init(struct nfd_worker_config *cfg);

/* Frees what the config owns; safe after nfdconf_init. */
void nfdconf_free(struct nfd_worker_config *cfg);

/* Applies YAML text[0..len) (a config file's contents or --options) over cfg.
 * what names it in messages (the path, or "--options"). Unknown keys are
 * logged on lg as warnings ("WHAT: line L column C: unknown key core.x,
 * ignored"). Returns 0, or -FB_EINVAL / -FB_EDEPTH with ei->what = what and
 * ei->detail = "line L column C: reason" (a YAML error, or "KEY.PATH: wrong
 * type..." for a value of the wrong type); cfg is then unchanged. -FB_ENOMEM
 * may leave cfg partly updated (still safe to free). */
int nfdconf_apply_yaml(struct nfd_worker_config *cfg, const char *text, size_t len, const char *what,
		       const struct fb_log *lg, struct fb_errinfo *ei);

/* Reads path (at most 1 MiB) and applies it. A missing file is not an error:
 * it is logged (info) and cfg keeps its defaults, as upstream. Returns 0,
 * nfdconf_apply_yaml's errors, -FB_EIO (errno in ei) or -FB_E2BIG. */
int nfdconf_load_file(struct nfd_worker_config *cfg, const char *path, const struct fb_log *lg,
		      struct fb_errinfo *ei);

/* Replaces a list with copies of items[0..n) (for flags, which override the
 * config). Returns 0 or -FB_ENOMEM (list unchanged). */
int nfdconf_list_set(struct nfd_strlist *l, const char *const *items, size_t n);

/* Resolves featureSources/labelSources as upstream's configureCore does,
 * walking the list in order: "all" adds every source of all_mask, "NAME"
 * adds a known source, "-NAME" removes one; anything else is logged (info,
 * "skipping unknown source specified in WHAT") and skipped. known[i] is the
 * name of bit i (at most 64). Returns the mask of enabled sources. */
unsigned long long nfdconf_sources_mask(const struct nfd_strlist *list, const char *const *known,
					size_t nknown, unsigned long long all_mask, const char *what,
					const struct fb_log *lg);

/* Owner reference kinds, in the order upstream emits them. */
enum { NFDCONF_OWNER_NODE = 1, NFDCONF_OWNER_POD = 2, NFDCONF_OWNER_DS = 4 };

/* Checks an ownerRefs list: each of node, pod, ds at most once. Returns the
 * mask (0 for an empty list: no owner references), or -FB_EINVAL with
 * ei->detail naming the bad entry. */
int nfdconf_owner_refs(const struct nfd_strlist *list, struct fb_errinfo *ei);

/* ---- nfd-master.conf and the master's --options ---------------------------
 * Mirrors pkg/nfd-master's NFDConfig (v0.17-v0.19). Members match keys
 * ignoring ASCII case, the exact spelling first, then the first other
 * spelling. An unknown top-level key is a warning; an unknown key under
 * restrictions is an error (a restriction skipped fails open). Durations are
 * Go duration strings or integer nanoseconds. autoDefaultNs (v0.15-v0.17)
 * is read: false means unprefixed names are refused (NL_DROP_UNPREFIXED).
 * Errors are "WHAT: key: problem" (ei->what = WHAT, the file or
 * "--options"). */

#define NFDCONF_NS_QUERY_MAX 900 /* an encoded labelSelector, with its NUL */

struct nfd_master_config {
	int no_publish, enable_taints;        /* 0 */
	int allow_overwrite, auto_default_ns; /* 1 */
	int disable_labels, disable_annotations, disable_ers, deny_nf_labels; /* 0 */
	char ns_query[NFDCONF_NS_QUERY_MAX];  /* restrictions.nodeFeatureNamespaceSelector,
					       * encoded; "": none */
	struct nfd_strlist extra_ns, deny_ns; /* [] */
	const char *whitelist;                /* labelWhiteList; NULL when not given */
	long long resync_ms, lease_ms, renew_ms, retry_ms; /* 1h, 15s, 10s, 2s */
	long page_size;                       /* informerPageSize: 50 */
	long klog_v;                          /* klog.v, when have_klog_v */
	struct json *klog;                    /* klog: every key as a string (app_klog_config), or NULL */
	int have_klog_v;
	char *whitelist_own_;
};

/* Cannot fail: every field at its default. */
void nfdconf_master_init(struct nfd_master_config *c);

/* Frees what the config owns; safe after nfdconf_master_init. */
void nfdconf_master_free(struct nfd_master_config *c);

/* Applies YAML text[0..len) over c; what names it ("--options" or the path).
 * Returns 0, -FB_EINVAL (a YAML error, or ei->detail "KEY: problem"),
 * -FB_EDEPTH or -FB_ENOMEM. */
int nfdconf_master_apply_yaml(struct nfd_master_config *c, const char *text, size_t len, const char *what,
			      const struct fb_log *lg, struct fb_errinfo *ei);

/* Reads path (at most 1 MiB) and applies it. A missing file is logged (info)
 * and not an error. Returns 0, nfdconf_master_apply_yaml's errors, or the
 * read's error with ei->what "reading PATH". */
int nfdconf_master_load_file(struct nfd_master_config *c, const char *path, const struct fb_log *lg,
			     struct fb_errinfo *ei);

#endif
