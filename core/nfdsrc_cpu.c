/* nfdsrc cpu: cpu.* as upstream's source/cpu publishes them. cpu.cpuid,
 * cpu.model and cpu.rdt come from the CPU itself (core/cpuid: CPUID and
 * XGETBV on x86, the auxiliary vector and MIDR_EL1 on arm; nfdsrc_cpuid.c
 * says how tests give a register dump instead); the rest from
 * <sys>/devices/system/cpu and friends. /proc/cpuinfo is not read: nothing
 * upstream publishes needs it.
 *
 * Which sources run is decided by the CPU's architecture, as upstream's
 * build tags do: cstate, pstate, rdt and security exist on x86 only.
 *
 * Upstream's GetLabels also looks for <sys>/sys/devices/cpu_atom/cpus and
 * cpu_core/cpus (hybrid parts) to label cpu-cpu_atom and cpu-cpu_core, but
 * joins "sys" onto a root that already ends in /sys, so the files never
 * exist on a real host and upstream never publishes those labels; neither
 * do we.
 *
 * Deviation: RDTL3CA_NUM_CLOSID reads <sys>/fs/resctrl/info/L3/num_closids,
 * where upstream (runc's intelrdt) finds the resctrl mount in the worker's
 * own mount table. */
#include "nfdsrc_internal.h"

#include "cpuid.h"

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

/* cpu.rdt (x86): upstream's CPUID reads, and the number of L3 classes of
 * service less the default one. */
static int cpu_rdt(const struct hostfs *h, const struct cpuid_info *ci, struct features *f)
{
	static const struct {
		unsigned bit;
		const char *name;
	} rdt[] = { { CPUID_RDTMON, "RDTMON" }, { CPUID_RDTCMT, "RDTCMT" }, { CPUID_RDTMBM, "RDTMBM" },
		    { CPUID_RDTL3CA, "RDTL3CA" }, { CPUID_RDTL2CA, "RDTL2CA" }, { CPUID_RDTMBA, "RDTMBA" } };
	char buf[ATTR_SIZE];
	int rc;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.rdt")) < 0)
		return rc;
	for (size_t i = 0; i < sizeof(rdt) / sizeof(rdt[0]); i++)
		if ((ci->rdt & rdt[i].bit) && (rc = features_attr(f, "cpu.rdt", rdt[i].name, "true")) < 0)
			return rc;
	if ((ci->rdt & CPUID_RDTL3CA) &&
	    nfdsrc_host_attr_(h, "sys/fs/resctrl/info/L3/num_closids", buf, sizeof(buf)) > 0) {
		long n = nfdsrc_num_(buf, 10, -1);

		if (n >= 0) {
			snprintf(buf, sizeof(buf), "%ld", n - 1);
			if ((rc = features_attr(f, "cpu.rdt", "RDTL3CA_NUM_CLOSID", buf)) < 0)
				return rc;
		}
	}
	return 0;
}

static int has_flag(const struct cpuid_info *ci, const char *name)
{
	for (size_t i = 0; i < ci->nflags; i++)
		if (strcmp(ci->flags[i], name) == 0)
			return 1;
	return 0;
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
static int cpu_security(const struct hostfs *h, const struct cpuid_info *ci, struct features *f,
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
	if (has_flag(ci, "SGX") &&
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
	if (has_flag(ci, "TDX_GUEST")) {
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
	struct cpuid_info *ci = malloc(sizeof(*ci));
	char family[24], model[24], hv[sizeof(ci->hypervisor)];
	int rc, x86;

	if (!ci)
		return -FB_ENOMEM;
	if ((rc = nfdsrc_cpuid_read_(h, ci, &x86, lg)) < 0)
		goto out;

	/* features in key order: cpu.coprocessor, cpu.cpuid, cpu.cstate, ... */
	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.coprocessor")) < 0 ||
	    (rc = features_ensure(f, FEATURES_FLAGS, "cpu.cpuid")) < 0)
		goto out;
	for (size_t i = 0; i < ci->nflags; i++) {
		char name[80];
		int pass = c->cpu_whitelist.n ? nfdsrc_list_has_(&c->cpu_whitelist, ci->flags[i])
					      : !nfdsrc_list_has_(&c->cpu_blacklist, ci->flags[i]);

		if ((rc = features_flag(f, "cpu.cpuid", ci->flags[i])) < 0)
			goto out;
		snprintf(name, sizeof(name), "cpuid.%s", ci->flags[i]);
		if (pass && (rc = nfdsrc_label_true_(labels, "cpu", name, lg)) < 0)
			goto out;
	}
	/* the attributes exist (maybe empty) on x86 only, and are never filtered */
	if (x86 && (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cpuid")) < 0)
		goto out;
	if (ci->avx10) {
		char v[12];

		snprintf(v, sizeof(v), "%u", ci->avx10);
		if ((rc = features_attr(f, "cpu.cpuid", "AVX10_VERSION", v)) < 0 ||
		    (rc = nfdsrc_label_(labels, "cpu", "cpuid.AVX10_VERSION", v, lg)) < 0)
			goto out;
	}
	if (x86)
		rc = cpu_cstate(h, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (rc < 0)
		goto out;

	snprintf(family, sizeof(family), "%d", ci->family);
	snprintf(model, sizeof(model), "%d", ci->model);
	snprintf(hv, sizeof(hv), "%s", ci->hypervisor);
	nfdsrc_squash_invalid_(hv);
	if ((rc = features_attr(f, "cpu.model", "family", family)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "hypervisor", hv)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "id", model)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "vendor_id", ci->vendor)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.family", family, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.hypervisor", hv, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.id", model, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.vendor_id", ci->vendor, lg)) < 0)
		goto out;

	if (x86)
		rc = cpu_pstate(h, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.pstate");
	if (rc < 0)
		goto out;
	if (x86)
		rc = cpu_rdt(h, ci, f);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.rdt");
	if (rc < 0)
		goto out;
	if (x86)
		rc = cpu_security(h, ci, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.security");
	if (rc < 0 || (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.sst")) < 0)
		goto out;
	rc = cpu_topology(h, f, labels, lg);
out:
	free(ci);
	return rc;
}

static int cpu_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_cpu(c->h, c->cfg, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_cpu_source_ = { "cpu", NFDSRC_HOST, 0, 0, cpu_discover };

