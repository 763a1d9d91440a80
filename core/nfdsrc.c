/* nfdsrc: NFD's feature sources, read through the hostfs prefix: the
 * registry, the config defaults and the label checks; each source is in
 * nfdsrc_<name>.c, what they share in nfdsrc_util.c.
 *
 * Mirrors kubernetes-sigs/node-feature-discovery source/{cpu,kernel,memory,
 * network,pci,storage,system,usb} (v0.17-v0.19, checked against master at
 * v0.20.0-devel): feature keys, element names, value formats and label
 * names as upstream; see ../../shared/reference/nfd-upstream-facts.md §1-2.
 *
 * Deliberate deviations:
 *  - cpu.*: the CPU is asked directly (core/cpuid: CPUID on x86, HWCAP/
 *    HWCAP2 and MIDR on arm), as klauspost/cpuid v2.4.0 does for upstream;
 *    see nfdsrc_cpuid.c. cpu.sst and cpu.coprocessor are published empty;
 *    RDTL3CA_NUM_CLOSID reads <sys>/fs/resctrl (upstream: its own mount
 *    table); the SGX EPC size comes from
 *    <sys>/devices/system/node/node<N>/x86/sgx_total_bytes instead of CPUID
 *    leaf 0x12.
 *  - kernel.config: read in upstream's order, /proc/config.gz and .gz
 *    kconfigFiles inflated by core/inflate; upstream reads
 *    /lib/modules/<ver>/build/.config from the container's own root, we
 *    read it under the host prefix like the rest (and /proc/config.gz from
 *    the container's own /proc only under the pod prefix /host-).
 * Where upstream's versions differ, the reference's commit decides:
 * network instances carry "mtu", system.dmiid has the 16 DMI attributes. */
#include "nfdsrc_internal.h"

#include "labels.h"
#include "re.h"

#include <stdlib.h>
#include <string.h>

/* ---- the registry ----------------------------------------------------- */

const struct nfdsrc_source *const nfdsrc_sources[NFDSRC_COUNT] = {
	[NFDSRC_CPU] = &nfdsrc_cpu_source_,         [NFDSRC_CUSTOM] = &nfdsrc_custom_source_,
	[NFDSRC_FAKE] = &nfdsrc_fake_source_,
	[NFDSRC_KERNEL] = &nfdsrc_kernel_source_,   [NFDSRC_LOCAL] = &nfdsrc_local_source_,
	[NFDSRC_MEMORY] = &nfdsrc_memory_source_,   [NFDSRC_NETWORK] = &nfdsrc_network_source_,
	[NFDSRC_PCI] = &nfdsrc_pci_source_,         [NFDSRC_STORAGE] = &nfdsrc_storage_source_,
	[NFDSRC_SYSTEM] = &nfdsrc_system_source_,   [NFDSRC_USB] = &nfdsrc_usb_source_,
};
/* The same names, for nfdconf_sources_mask (test_nfdsrc checks they agree). */
const char *const nfdsrc_names[NFDSRC_COUNT] = {
	[NFDSRC_CPU] = "cpu",         [NFDSRC_CUSTOM] = "custom",   [NFDSRC_FAKE] = "fake",
	[NFDSRC_KERNEL] = "kernel",
	[NFDSRC_LOCAL] = "local",     [NFDSRC_MEMORY] = "memory",   [NFDSRC_NETWORK] = "network",
	[NFDSRC_PCI] = "pci",         [NFDSRC_STORAGE] = "storage", [NFDSRC_SYSTEM] = "system",
	[NFDSRC_USB] = "usb",
};

unsigned long long nfdsrc_all_mask(void)
{
	return ((1ULL << NFDSRC_COUNT) - 1) & ~(1ULL << NFDSRC_FAKE);
}

/* ---- defaults --------------------------------------------------------- */

static const char *const def_cpu_blacklist[] = {
	"AVX10", "BMI1", "BMI2", "CLMUL", "CMOV", "CX16", "ERMS", "F16C", "HTT", "LZCNT",
	"MMX", "MMXEXT", "NX", "POPCNT", "RDRAND", "RDSEED", "RDTSCP", "SGX", "SGXLC",
	"SSE", "SSE2", "SSE3", "SSE4", "SSE42", "SSSE3", "TDX_GUEST",
};
static const char *const def_kernel_opts[] = { "NO_HZ", "NO_HZ_IDLE", "NO_HZ_FULL", "PREEMPT" };
static const char *const def_pci_classes[] = { "03", "0b40", "12" };
static const char *const def_pci_fields[] = { "class", "vendor" };
static const char *const def_usb_classes[] = { "0e", "ef", "fe", "ff" };
static const char *const def_usb_fields[] = { "class", "vendor", "device" };

#define LIST(a) ((struct nfdsrc_list){ (a), sizeof(a) / sizeof((a)[0]) })

void nfdsrc_config_init(struct nfdsrc_config *c)
{
	c->cpu_blacklist = LIST(def_cpu_blacklist);
	c->cpu_whitelist = (struct nfdsrc_list){ NULL, 0 };
	c->kernel_kconfig_file = "";
	c->kernel_config_opts = LIST(def_kernel_opts);
	c->pci_class_whitelist = LIST(def_pci_classes);
	c->pci_label_fields = LIST(def_pci_fields);
	c->usb_class_whitelist = LIST(def_usb_classes);
	c->usb_label_fields = LIST(def_usb_fields);
}

/* ---- label checks ----------------------------------------------------- */

int nfdsrc_whitelist_setup(struct re *re, const char *pattern, struct fb_errinfo *ei)
{
	char msg[128];
	int rc;

	if (!pattern || !pattern[0])
		return 0;
	rc = re_compile(re, pattern, msg, sizeof(msg));
	if (rc == -FB_EINVAL)
		return fb_errinfo_set(ei, FB_EINVAL, 0, "core.labelWhiteList", msg);
	return rc < 0 ? rc : 1;
}

int nfdsrc_labels_filter(struct json *labels, const struct re *whitelist, const struct fb_log *lg)
{
	int dropped = 0;

	/* one pass: the next member is taken before this one may go */
	for (struct json *c = json_child(labels), *next; c; c = next) {
		const char *name = json_key(c), *val = json_str(c), *slash, *why = NULL;
		char *key, k[160], v[160];

		next = json_next(c);
		if (!labels_valid_key(name))
			why = "invalid label name";
		else if (!val || !labels_valid_value(val, strlen(val)))
			why = "invalid label value";
		else if (whitelist &&
			 re_matches(whitelist, (slash = strchr(name, '/')) ? slash + 1 : name) <= 0)
			why = "does not match the label whitelist";
		if (!why)
			continue;
		NLOG_I(lg, "label \"%s\"=\"%s\" not published: %s",
		       log_escape(name, strlen(name), k, sizeof(k)),
		       val ? log_escape(val, strlen(val), v, sizeof(v)) : "", why);
		if (!(key = strdup(name)))
			return -FB_ENOMEM;
		json_remove(labels, key); /* a built tree holds each name once */
		free(key);
		dropped++;
	}
	return dropped;
}
