/* nfdsrc cpu: cpu.* from <proc>/cpuinfo and <sys>/devices/system/cpu
 * (upstream source/cpu; the deviations are in nfdsrc.c). */
#include "nfdsrc_internal.h"

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

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void parse_cpuinfo(char *buf, struct nfdsrc_cpuinfo *ci)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "vendor_id", offsetof(struct nfdsrc_cpuinfo, vendor) },
		{ "cpu family", offsetof(struct nfdsrc_cpuinfo, family) },
		{ "model", offsetof(struct nfdsrc_cpuinfo, model) },
		{ "flags", offsetof(struct nfdsrc_cpuinfo, flags) },
		{ "siblings", offsetof(struct nfdsrc_cpuinfo, siblings) },
		{ "cpu cores", offsetof(struct nfdsrc_cpuinfo, cores) },
		{ "Features", offsetof(struct nfdsrc_cpuinfo, features) },
		{ "CPU implementer", offsetof(struct nfdsrc_cpuinfo, implementer) },
		{ "CPU variant", offsetof(struct nfdsrc_cpuinfo, variant) },
		{ "CPU part", offsetof(struct nfdsrc_cpuinfo, part) },
		{ "CPU revision", offsetof(struct nfdsrc_cpuinfo, revision) },
	};
	char *line = buf, *next;

	memset(ci, 0, sizeof(*ci));
	for (; line && *line; line = next) {
		char *colon, *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!(colon = strchr(line, ':')))
			continue;
		*colon = '\0';
		end = colon;
		while (end > line && nfdsrc_is_space_(end[-1]))
			*--end = '\0';
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			const char **slot = (const char **)((char *)ci + keys[i].off);

			if (!*slot && strcmp(line, keys[i].key) == 0) {
				nfdsrc_trim_(colon + 1);
				*slot = colon + 1;
			}
		}
	}
}


/* klauspost's MIDR implementer table (arm64) */
static const struct {
	unsigned code;
	const char *name;
} arm_vendors[] = {
	{ 0xc0, "Ampere" }, { 0x41, "ARM" }, { 0x42, "Broadcom" }, { 0x43, "Cavium" },
	{ 0x44, "DEC" }, { 0x46, "Fujitsu" }, { 0x49, "Infineon" }, { 0x4d, "Motorola" },
	{ 0x4e, "NVIDIA" }, { 0x50, "AMCC" }, { 0x51, "Qualcomm" }, { 0x56, "Marvell" },
	{ 0x69, "Intel" },
};

/* cpu.model: x86 from cpuinfo, arm64 from MIDR_EL1 as klauspost decodes it
 * (only readable when the kernel exposes the CPUID hwcap), else unknown. */
static int cpu_model(const struct hostfs *h, const struct nfdsrc_cpuinfo *ci, enum nfdsrc_cpu_flavour fl,
		     const struct nfdsrc_strset *flags, char *vendor, size_t vsize, char *family,
		     char *model)
{
	unsigned long midr = 0;
	char buf[ATTR_SIZE];
	int have = 0;

	snprintf(vendor, vsize, "VendorUnknown");
	strcpy(family, "0");
	strcpy(model, "0");
	if (fl == CPU_X86) {
		snprintf(vendor, vsize, "%s", nfdsrc_x86_vendor_(ci->vendor));
		snprintf(family, 24, "%ld", nfdsrc_num_(ci->family, 10, 0));
		snprintf(model, 24, "%ld", nfdsrc_num_(ci->model, 10, 0));
		return 0;
	}
	if (fl != CPU_ARM64 || !nfdsrc_set_has_(flags, "CPUID"))
		return 0;
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/cpu0/regs/identification/midr_el1", buf,
		      sizeof(buf)) > 0 && sysfs_parse_hex(buf, &midr) == 0) {
		have = 1;
	} else if (ci->implementer && ci->part) {
		/* the architecture field of every AArch64 MIDR is 0xf */
		midr = ((unsigned long)nfdsrc_num_(ci->implementer, 0, 0) & 0xff) << 24 |
		       ((unsigned long)nfdsrc_num_(ci->variant, 0, 0) & 0xf) << 20 | 0xful << 16 |
		       ((unsigned long)nfdsrc_num_(ci->part, 0, 0) & 0xfff) << 4 |
		       ((unsigned long)nfdsrc_num_(ci->revision, 0, 0) & 0xf);
		have = 1;
	}
	if (!have)
		return 0;
	for (size_t i = 0; i < sizeof(arm_vendors) / sizeof(arm_vendors[0]); i++)
		if (((midr >> 24) & 0xff) == arm_vendors[i].code)
			snprintf(vendor, vsize, "%s", arm_vendors[i].name);
	snprintf(family, 24, "%lu", (midr >> 16) & 0xff);
	snprintf(model, 24, "%lu", midr & 0xffff);
	return 0;
}

/* Upstream asks CPUID leaf 0x40000000 for the hypervisor's signature; the
 * kernel's choice of clocksource and the DMI vendor say the same here. */
static void hypervisor(const struct hostfs *h, int vm, char *out, size_t size)
{
	static const struct {
		const char *clock, *name;
	} clocks[] = { { "kvm-clock", "kvm" }, { "hyperv_clocksource", "msvm" }, { "xen", "xenhvm" } };
	static const struct {
		const char *vendor, *name;
	} dmi[] = { { "VMware, Inc.", "vmware" }, { "BHYVE", "bhyve" }, { "QEMU", "qemu" },
		    { "Microsoft Corporation", "msvm" }, { "Xen", "xenhvm" } };
	char buf[ATTR_SIZE], tok[64];

	snprintf(out, size, "%s", vm ? "unknown" : "none");
	if (!vm)
		return;
	if (nfdsrc_host_attr_(h, "sys/hypervisor/type", buf, sizeof(buf)) > 0 && strcmp(buf, "xen") == 0) {
		snprintf(out, size, "xenhvm");
		return;
	}
	if (nfdsrc_host_attr_(h, "sys/devices/system/clocksource/clocksource0/available_clocksource", buf,
		      sizeof(buf)) > 0) {
		for (const char *p = buf; (p = nfdsrc_next_tok_(p, tok, sizeof(tok)));)
			for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
				if (strncmp(tok, clocks[i].clock, strlen(clocks[i].clock)) == 0) {
					snprintf(out, size, "%s", clocks[i].name);
					return;
				}
	}
	if (nfdsrc_host_attr_(h, "sys/devices/virtual/dmi/id/sys_vendor", buf, sizeof(buf)) > 0)
		for (size_t i = 0; i < sizeof(dmi) / sizeof(dmi[0]); i++)
			if (strcmp(buf, dmi[i].vendor) == 0) {
				snprintf(out, size, "%s", dmi[i].name);
				return;
			}
}

/* cpu.topology: any CPU with thread siblings, and distinct packages. Any
 * unreadable file empties the set, as upstream. */
static int cpu_topology(const struct hostfs *h, struct features *f, struct json *labels,
			const struct fb_log *lg)
{
	struct nfdsrc_names cpus = { 0 }, pkgs = { 0 };
	char buf[ATTR_SIZE], path[NAME_MAX + 64];
	int dfd = -1, rc, ht = 0, ok = 1;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.topology")) < 0)
		return rc;
	rc = nfdsrc_host_list_(h, "sys/bus/cpu/devices", &dfd, &cpus);
	if (rc == -FB_ENOMEM)
		goto out;
	if (rc < 0) {
		NLOG_E(lg, "cpu: failed to read devices folder: %s", fb_strerror(rc));
		rc = 0;
		goto out;
	}
	for (size_t i = 0; ok && i < cpus.n; i++) {
		snprintf(path, sizeof(path), "%s/topology/thread_siblings_list", cpus.v[i]);
		if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) < 0) {
			NLOG_E(lg, "cpu: error while reading %s", path);
			ok = 0;
			break;
		}
		ht |= strpbrk(buf, ",-") != NULL;
		snprintf(path, sizeof(path), "%s/topology/physical_package_id", cpus.v[i]);
		if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) < 0) {
			NLOG_E(lg, "cpu: error while reading %s", path);
			ok = 0;
			break;
		}
		for (size_t k = 0; k <= pkgs.n; k++) {
			if (k == pkgs.n) {
				if ((rc = nfdsrc_names_push_(&pkgs, buf)) < 0)
					goto out;
				break;
			}
			if (strcmp(pkgs.v[k], buf) == 0)
				break;
		}
	}
	if (ok) {
		snprintf(buf, sizeof(buf), "%zu", pkgs.n);
		if ((rc = features_attr(f, "cpu.topology", "hardware_multithreading",
					ht ? "true" : "false")) < 0 ||
		    (rc = features_attr(f, "cpu.topology", "socket_count", buf)) < 0 ||
		    (rc = nfdsrc_label_(labels, "cpu", "hardware_multithreading", ht ? "true" : "false",
				lg)) < 0)
			goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&cpus);
	nfdsrc_names_free_(&pkgs);
	return rc;
}

/* intel_idle's max_cstate (amd64 only upstream). 1: a set to publish. */
static int cpu_cstate(const struct hostfs *h, struct features *f, struct json *labels,
		      const struct fb_log *lg)
{
	char buf[ATTR_SIZE];
	long n;
	int rc;

	if (nfdsrc_host_exists_(h, "sys/devices/system/cpu") != 1) {
		NLOG_E(lg, "cpu: unable to detect cstate status");
		return 0;
	}
	if (nfdsrc_host_exists_(h, "sys/devices/system/cpu/cpuidle") == 0)
		return features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/cpuidle/current_driver", buf, sizeof(buf)) < 0) {
		NLOG_E(lg, "cpu: cannot get driver for cpuidle");
		return 0;
	}
	if (strcmp(buf, "intel_idle") != 0)
		return features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (nfdsrc_host_attr_(h, "sys/module/intel_idle/parameters/max_cstate", buf, sizeof(buf)) < 0 ||
	    (n = nfdsrc_num_(buf, 10, -1)) == -1) {
		NLOG_E(lg, "cpu: cannot determine cstate from max_cstate");
		return 0;
	}
	if ((rc = features_attr(f, "cpu.cstate", "enabled", n > 0 ? "true" : "false")) < 0)
		return rc;
	return nfdsrc_label_(labels, "cpu", "cstate.enabled", n > 0 ? "true" : "false", lg);
}

/* intel_pstate status, turbo and the common scaling governor (amd64 only). */
static int cpu_pstate(const struct hostfs *h, struct features *f, struct json *labels,
		      const struct fb_log *lg)
{
	static const char *const keys[] = { "scaling_governor", "status", "turbo" };
	char status[ATTR_SIZE], turbo[8] = "", gov[ATTR_SIZE] = "", buf[ATTR_SIZE];
	char path[NAME_MAX + 64];
	struct nfdsrc_names pol = { 0 };
	const char *vals[3];
	int rc, dfd = -1;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.pstate")) < 0)
		return rc;
	if (nfdsrc_host_exists_(h, "sys/devices/system/cpu") != 1 ||
	    nfdsrc_host_exists_(h, "sys/devices/system/cpu/intel_pstate") == 0)
		return 0;
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/intel_pstate/status", status, sizeof(status)) < 0) {
		NLOG_E(lg, "cpu: failed to detect pstate");
		return 0;
	}
	if (strcmp(status, "off") == 0)
		return 0;
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/intel_pstate/no_turbo", buf, sizeof(buf)) < 0)
		NLOG_E(lg, "cpu: can't detect whether turbo boost is enabled");
	else
		strcpy(turbo, buf[0] == '0' ? "true" : "false");
	if (strcmp(status, "active") == 0 &&
	    (rc = nfdsrc_host_list_(h, "sys/devices/system/cpu/cpufreq", &dfd, &pol)) == 0) {
		for (size_t i = 0; i < pol.n; i++) {
			snprintf(path, sizeof(path), "%s/affected_cpus", pol.v[i]);
			if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) <= 0)
				continue;
			snprintf(path, sizeof(path), "%s/scaling_governor", pol.v[i]);
			if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) < 0)
				continue;
			if (gov[0] && strcmp(gov, buf) != 0) {
				gov[0] = '\0';
				break;
			}
			strcpy(gov, buf);
		}
	}
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&pol);
	if (rc == -FB_ENOMEM)
		return rc;
	vals[0] = gov;
	vals[1] = status;
	vals[2] = turbo;
	for (size_t i = 0; i < 3; i++) {
		char name[32];

		if (!vals[i][0])
			continue;
		snprintf(name, sizeof(name), "pstate.%s", keys[i]);
		if ((rc = features_attr(f, "cpu.pstate", keys[i], vals[i])) < 0 ||
		    (rc = nfdsrc_label_(labels, "cpu", name, vals[i], lg)) < 0)
			return rc;
	}
	return 0;
}

/* The first number of the misc cgroup capacity line starting with res. */
static long misc_capacity(const struct hostfs *h, const char *res)
{
	static const char *const files[] = { "sys/fs/cgroup/misc.capacity",
					     "sys/fs/cgroup/misc/misc.capacity" };

	for (size_t i = 0; i < 2; i++) {
		char *buf, *line, *next;
		long v = -1;

		if (nfdsrc_host_file_(h, files[i], &buf) < 0)
			continue;
		for (line = buf; line && *line; line = next) {
			char *sp;

			if ((next = strchr(line, '\n')))
				*next++ = '\0';
			if (strncmp(line, res, strlen(res)) != 0)
				continue;
			if ((sp = strchr(line, ' ')))
				v = nfdsrc_num_(sp + 1, 10, -1);
			break;
		}
		free(buf);
		return v;
	}
	return -1;
}

static int kvm_param(const struct hostfs *h, const char *param)
{
	char rel[96], buf[ATTR_SIZE];

	snprintf(rel, sizeof(rel), "sys/module/kvm_amd/parameters/%s", param);
	return nfdsrc_host_attr_(h, rel, buf, sizeof(buf)) > 0 && (buf[0] == '1' || buf[0] == 'Y');
}

/* cpu.security (amd64): SGX, TDX and SEV as the kernel reports them. */
static int cpu_security(const struct hostfs *h, const struct nfdsrc_strset *flags, struct features *f,
			struct json *labels, const struct fb_log *lg)
{
	struct { const char *k; char v[24]; } el[11];
	size_t n = 0;
	struct nfdsrc_names nodes = { 0 };
	unsigned long long epc = 0;
	int rc, dfd = -1;
	long v;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.security")) < 0)
		return rc;
	if (nfdsrc_set_has_(flags, "SGX") &&
	    (rc = nfdsrc_host_list_(h, "sys/devices/system/node", &dfd, &nodes)) != -FB_ENOMEM) {
		for (size_t i = 0; rc == 0 && i < nodes.n; i++) {
			char path[NAME_MAX + 32];
			unsigned long b;

			snprintf(path, sizeof(path), "%s/x86/sgx_total_bytes", nodes.v[i]);
			if (strncmp(nodes.v[i], "node", 4) == 0 && sysfs_read_dec(dfd, path, &b) == 0)
				epc += b;
		}
	}
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&nodes);
	if (rc == -FB_ENOMEM)
		return rc;
	if (epc) {
		el[n].k = "sgx.enabled";
		strcpy(el[n++].v, "true");
		el[n].k = "sgx.epc";
		snprintf(el[n++].v, sizeof(el[0].v), "%llu", epc);
	}
	{
		/* exactly "Y\n": upstream compares the whole file */
		char *tdx = NULL;

		if (nfdsrc_host_file_(h, "sys/module/kvm_intel/parameters/tdx", &tdx) >= 0 &&
		    strcmp(tdx, "Y\n") == 0) {
			el[n].k = "tdx.enabled";
			strcpy(el[n++].v, "true");
			if ((v = misc_capacity(h, "tdx")) > -1) {
				el[n].k = "tdx.total_keys";
				snprintf(el[n++].v, sizeof(el[0].v), "%ld", v);
			}
		}
		free(tdx);
	}
	if (nfdsrc_set_has_(flags, "TDX_GUEST")) {
		el[n].k = "tdx.protected";
		strcpy(el[n++].v, "true");
	}
	if (kvm_param(h, "sev")) {
		el[n].k = "sev.enabled";
		strcpy(el[n++].v, "true");
		if ((v = misc_capacity(h, "sev")) > -1) {
			el[n].k = "sev.asids";
			snprintf(el[n++].v, sizeof(el[0].v), "%ld", v);
		}
	}
	if (kvm_param(h, "sev_es")) {
		el[n].k = "sev.es.enabled";
		strcpy(el[n++].v, "true");
		if ((v = misc_capacity(h, "sev_es")) > -1) {
			el[n].k = "sev.encrypted_state_ids";
			snprintf(el[n++].v, sizeof(el[0].v), "%ld", v);
		}
	}
	if (kvm_param(h, "sev_snp")) {
		el[n].k = "sev.snp.enabled";
		strcpy(el[n++].v, "true");
	}
	for (size_t i = 0; i < n; i++) {
		char name[48];

		if ((rc = features_attr(f, "cpu.security", el[i].k, el[i].v)) < 0)
			return rc;
		/* sizes and counts are for rules and extended resources only */
		if (strcmp(el[i].k, "tdx.total_keys") == 0 || strcmp(el[i].k, "sgx.epc") == 0 ||
		    strcmp(el[i].k, "sev.encrypted_state_ids") == 0 ||
		    strcmp(el[i].k, "sev.asids") == 0)
			continue;
		snprintf(name, sizeof(name), "security.%s", el[i].k);
		if ((rc = nfdsrc_label_(labels, "cpu", name, el[i].v, lg)) < 0)
			return rc;
	}
	return 0;
}

int nfdsrc_cpu(const struct hostfs *h, const struct nfdsrc_config *c, struct features *f,
	       struct json *labels, const struct fb_log *lg)
{
	struct nfdsrc_strset flags = { 0 };
	struct nfdsrc_cpuinfo ci;
	enum nfdsrc_cpu_flavour fl = CPU_UNKNOWN;
	char *buf = NULL, vendor[64], family[24], model[24], hv[ATTR_SIZE];
	ssize_t n;
	int rc;

	n = nfdsrc_host_head_(h, "proc/cpuinfo", 64 << 10, &buf);
	if (n == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (n < 0) {
		NLOG_E(lg, "cpu: failed to read cpuinfo: %s", fb_strerror((int)n));
		memset(&ci, 0, sizeof(ci));
	} else {
		parse_cpuinfo(buf, &ci);
		fl = nfdsrc_cpu_flavour_(&ci);
	}
	if (fl == CPU_X86)
		rc = nfdsrc_x86_flags_(&ci, &flags);
	else
		rc = nfdsrc_arm_flags_(&ci, fl, &flags);
	if (rc < 0)
		goto out;
	if (flags.n)
		qsort(flags.v, flags.n, sizeof(*flags.v), cmp_cstr);

	/* features in key order: cpu.coprocessor, cpu.cpuid, cpu.cstate, ... */
	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.coprocessor")) < 0 ||
	    (rc = features_ensure(f, FEATURES_FLAGS, "cpu.cpuid")) < 0)
		goto out;
	if (fl == CPU_X86 && (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cpuid")) < 0)
		goto out;
	for (size_t i = 0; i < flags.n; i++) {
		char name[80];
		int pass = c->cpu_whitelist.n ? nfdsrc_list_has_(&c->cpu_whitelist, flags.v[i])
					      : !nfdsrc_list_has_(&c->cpu_blacklist, flags.v[i]);

		if ((rc = features_flag(f, "cpu.cpuid", flags.v[i])) < 0)
			goto out;
		snprintf(name, sizeof(name), "cpuid.%s", flags.v[i]);
		if (pass && (rc = nfdsrc_label_true_(labels, "cpu", name, lg)) < 0)
			goto out;
	}
	if (fl == CPU_X86)
		rc = cpu_cstate(h, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (rc < 0)
		goto out;

	cpu_model(h, &ci, fl, &flags, vendor, sizeof(vendor), family, model);
	hypervisor(h, fl == CPU_X86 && nfdsrc_set_has_(&flags, "HYPERVISOR"), hv, sizeof(hv));
	nfdsrc_squash_invalid_(hv);
	if ((rc = features_attr(f, "cpu.model", "family", family)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "hypervisor", hv)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "id", model)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "vendor_id", vendor)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.family", family, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.hypervisor", hv, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.id", model, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.vendor_id", vendor, lg)) < 0)
		goto out;

	if (fl == CPU_X86)
		rc = cpu_pstate(h, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.pstate");
	if (rc < 0 || (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.rdt")) < 0)
		goto out;
	if (fl == CPU_X86)
		rc = cpu_security(h, &flags, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.security");
	if (rc < 0 || (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.sst")) < 0)
		goto out;
	rc = cpu_topology(h, f, labels, lg);
out:
	free(flags.v);
	free(buf);
	return rc;
}

static int cpu_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_cpu(c->h, c->cfg, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_cpu_source_ = { "cpu", NFDSRC_HOST, 0, 0, cpu_discover };

