/* nfdsrc: the feature sources of NFD's nfd-worker as a registry, in the
 * manner of pciutils' access methods: nfdsrc_sources lists every source
 * (one file each, core/nfdsrc_<name>.c), and the worker's discovery is a
 * loop over it.
 *
 * The built-in sources (pci, usb, cpu, kernel, memory, network, storage,
 * system) are also callable one by one: each a function that adds its
 * features (keys "<source>.<feature>", element names as upstream) to a
 * struct features and, when labels is not NULL, its labels to a json object
 * of "feature.node.kubernetes.io/<source>-<name>": "<string>" members
 * (booleans are "true"). Host state is read only through the hostfs prefix.
 *
 * Errors: a source returns 0, -FB_ENOMEM, or (after logging it) the error
 * that made upstream's Discover fail for the whole source (an unreadable
 * <sys>/class/net or <sys>/block); a missing or malformed attribute is
 * logged and skipped, never fatal, as upstream does. lg may be NULL.
 * Labels are added unchecked: nfdsrc_labels_filter applies the validity and
 * core.labelWhiteList rules once, over every source's labels. */
#ifndef FB_NFDSRC_H
#define FB_NFDSRC_H

#include "err.h"
#include "features.h"
#include "hostfs.h"
#include "json.h"
#include "log.h"
#include "pci.h"
#include "usb.h"

struct re;
#include <stddef.h>

#define NFDSRC_LABEL_NS "feature.node.kubernetes.io"

struct nfdsrc_config;

/* What a source reads besides the host. Every pointer is borrowed. */
struct nfdsrc_ctx {
	const struct hostfs *h;
	const struct nfdsrc_config *cfg;
	const char *nodename;                      /* system: the node's name, may be "" */
	const char *features_dir;                  /* local: features.d (a plain path) */
	const struct json *hook_labels, *hook_features; /* local: the last hooks run, NULL: none */
	const struct json *custom_rules;           /* custom: sources.custom, NULL: none */
	const char *custom_dir;                    /* custom: custom.d (a plain path) */
	const struct json *fake;                   /* fake: sources.fake merged, NULL: the defaults */
	const struct fb_log *lg;                   /* may be NULL */
};

/* When a source runs in a pass: the host sources first (their result is
 * what a features.d change is applied over), then the files (features.d),
 * then the rules, which see every feature. */
enum nfdsrc_stage { NFDSRC_HOST, NFDSRC_FILES, NFDSRC_RULES };

/* One source. discover adds its features to f and, when labels is not
 * NULL, its labels (errors as above). A feature source runs when
 * featureSources enables it and labels when labelSources does too (as
 * upstream, a label source only labels what its feature source found); a
 * label_only source (custom) runs when labelSources enables it, and writes
 * unprefixed labels (the master prefixes them). Labels are applied by prio,
 * upstream's label source priority: a higher one's override a lower one's
 * (local 20 over custom 10 over the host sources' 0). */
struct nfdsrc_source {
	const char *name;
	enum nfdsrc_stage stage;
	int prio;
	int label_only;
	int (*discover)(const struct nfdsrc_ctx *c, struct features *f, struct json *labels);
};

/* Every source, in upstream's sorted order of names: bit i of the
 * featureSources/labelSources masks is nfdsrc_sources[i], named
 * nfdsrc_names[i]. */
enum {
	NFDSRC_CPU, NFDSRC_CUSTOM, NFDSRC_FAKE, NFDSRC_KERNEL, NFDSRC_LOCAL, NFDSRC_MEMORY, NFDSRC_NETWORK,
	NFDSRC_PCI, NFDSRC_STORAGE, NFDSRC_SYSTEM, NFDSRC_USB, NFDSRC_COUNT
};
extern const struct nfdsrc_source *const nfdsrc_sources[NFDSRC_COUNT];
extern const char *const nfdsrc_names[NFDSRC_COUNT];

/* The sources "all" names in featureSources and labelSources: every one but
 * those upstream disables by default (its SupplementalSource: fake). */
unsigned long long nfdsrc_all_mask(void);

/* Upstream's fake source's defaults (source/fake), the base nfdconf merges
 * sources.fake over: labels, flagFeatures, attributeFeatures,
 * instanceFeatures. */
#define NFDSRC_FAKE_DEFAULTS                                                                    \
	"labels: {fakefeature1: \"true\", fakefeature2: \"true\", fakefeature3: \"true\"}\n"          \
	"flagFeatures: [flag_1, flag_2, flag_3]\n"                                              \
	"attributeFeatures: {attr_1: \"true\", attr_2: \"false\", attr_3: \"10\"}\n"                 \
	"instanceFeatures:\n"                                                                   \
	"- {name: instance_1, attr_1: \"true\", attr_2: \"false\", attr_3: \"10\", attr_4: foobar}\n" \
	"- {name: instance_2, attr_1: \"true\", attr_2: \"true\", attr_3: \"100\"}\n"                \
	"- {name: instance_3}\n"

/* A list of strings. Borrowed: nfdsrc never frees or changes them. */
struct nfdsrc_list {
	const char *const *v;
	size_t n;
};

/* sources.* of nfd-worker.conf. Every pointer is borrowed: the defaults point
 * at static tables, and whoever fills the struct (the config parser) keeps
 * its strings alive for as long as the config is used. A list given in the
 * config replaces the default list wholesale, as upstream does. */
struct nfdsrc_config {
	struct nfdsrc_list cpu_blacklist;   /* sources.cpu.cpuid.attributeBlacklist */
	struct nfdsrc_list cpu_whitelist;   /* ...attributeWhitelist; non-empty: only these */
	const char *kernel_kconfig_file;    /* sources.kernel.kconfigFile: "" or NULL = search */
	struct nfdsrc_list kernel_config_opts; /* sources.kernel.configOpts */
	struct nfdsrc_list pci_class_whitelist; /* sources.pci.deviceClassWhitelist */
	struct nfdsrc_list pci_label_fields;    /* sources.pci.deviceLabelFields */
	struct nfdsrc_list usb_class_whitelist; /* sources.usb.deviceClassWhitelist */
	struct nfdsrc_list usb_label_fields;    /* sources.usb.deviceLabelFields */
};

/* Cannot fail: upstream's defaults (cpuid blacklist AVX10 ... TDX_GUEST,
 * configOpts NO_HZ NO_HZ_IDLE NO_HZ_FULL PREEMPT, pci 03 0b40 12 /
 * class vendor, usb 0e ef fe ff / class vendor device). */
void nfdsrc_config_init(struct nfdsrc_config *c);

/* pci.device from a pci_list scanned with at least PCI_SRIOV | PCI_IOMMU;
 * labels pci-<fields>.present and .sriov.capable. */
int nfdsrc_pci(const struct nfdsrc_config *c, const struct pci_list *pl, struct features *f,
	       struct json *labels, const struct fb_log *lg);

/* usb.device from a usb_list (class-00 devices become one instance per
 * interface, a device with iface_err is dropped); labels usb-<fields>.present. */
int nfdsrc_usb(const struct nfdsrc_config *c, const struct usb_list *ul, struct features *f,
	       struct json *labels, const struct fb_log *lg);

/* cpu.cpuid/model/topology/cstate/pstate/security/... from <proc>/cpuinfo
 * and <sys>/devices/system/cpu; labels cpu-cpuid.*, cpu-model.*,
 * cpu-hardware_multithreading, cpu-pstate.*, cpu-cstate.*, cpu-security.*. */
int nfdsrc_cpu(const struct hostfs *h, const struct nfdsrc_config *c, struct features *f,
	       struct json *labels, const struct fb_log *lg);

/* kernel.version/config/loadedmodule/enabledmodule/selinux/kvm; labels
 * kernel-version.*, kernel-config.<configOpts>, kernel-selinux.enabled. */
int nfdsrc_kernel(const struct hostfs *h, const struct nfdsrc_config *c, struct features *f,
		  struct json *labels, const struct fb_log *lg);

/* memory.numa/swap/nv/hugepages; labels memory-numa, memory-swap,
 * memory-nv.present, memory-nv.dax. */
int nfdsrc_memory(const struct hostfs *h, struct features *f, struct json *labels,
		  const struct fb_log *lg);

/* network.device/virtual; labels network-sriov.capable/.configured. */
int nfdsrc_network(const struct hostfs *h, struct features *f, struct json *labels,
		   const struct fb_log *lg);

/* storage.block; label storage-nonrotationaldisk. */
int nfdsrc_storage(const struct hostfs *h, struct features *f, struct json *labels,
		   const struct fb_log *lg);

/* system.osrelease/name/dmiid (nodename: the node's name, NODE_NAME upstream,
 * may be ""); labels system-os_release.{ID,VERSION_ID,VERSION_ID.major,.minor}. */
int nfdsrc_system(const struct hostfs *h, const char *nodename, struct features *f,
		  struct json *labels, const struct fb_log *lg);

/* local.label/local.feature from features.d (featfile_read_dir) with the
 * last hooks run's output over it (core/hooks runs them, the caller keeps
 * the output); labels key -> value, unprefixed. A missing features.d is no
 * local features. Both attributes are published, even empty. */
int nfdsrc_local(const char *features_dir, const struct json *hook_labels,
		 const struct json *hook_features, struct features *f, struct json *labels,
		 const struct fb_log *lg);

/* The custom source: the rules of sources.custom (rules may be NULL), then
 * those of custom.d's files, run over f (core/rules, RULES_CUSTOM) into
 * labels (unprefixed); broken rules and files are logged and skipped.
 * rule.matched stays theirs: it is removed from f. custom.d: every
 * non-hidden file, sorted, and those one directory down (a ConfigMap
 * mounted as a subdirectory), each a YAML list of rules of at most 1 MiB;
 * what is inside is opened beneath it (hostfs_open_beneath), at most
 * NFDSRC_CUSTOM_MAX_FILES entries per directory. */
#define NFDSRC_CUSTOM_MAX_FILES 1024 /* FEATFILE_MAX_FILES */
void nfdsrc_custom(const struct json *rules, const char *custom_dir, struct features *f,
		   struct json *labels, const struct fb_log *lg);

/* core.labelWhiteList: compiles the RE2 pattern into re through re_compile
 * (unanchored as upstream; what re.h cannot match exactly is refused, see
 * re.h). Returns 1 when re was compiled (re_free it), 0 for "" (no
 * whitelist: every label passes, as upstream's empty default), -FB_EINVAL
 * with ei filled, or -FB_ENOMEM. */
int nfdsrc_whitelist_setup(struct re *re, const char *pattern, struct fb_errinfo *ei);

/* Drops, with an info line naming each, every label whose key is not a
 * qualified name ([prefix/]name, name <= 63), whose value is not a valid
 * label value (<= 63), or whose name part (after the '/') the whitelist
 * (NULL: none) does not match, as upstream's worker does. Nothing is ever
 * truncated. Returns how many were dropped, or -FB_ENOMEM. */
int nfdsrc_labels_filter(struct json *labels, const struct re *whitelist, const struct fb_log *lg);

#endif
