/* pgpu_caps: status.capabilities and the driver's state of one device, from
 * sysfs, procfs and the PCI ID database only (no NVML, no ROCm SMI).
 *
 * - architecture / computeCapability: the architecture tables below, keyed
 *   on the chip code or family that pci.ids puts in the device name
 *   ("GA100GL [A30 PCIe]" -> Ampere 8.0), with NVIDIA device-ID ranges when
 *   the database has no name (approximate: a range is one generation).
 *   Compute capabilities are NVIDIA's published table ("CUDA GPUs");
 *   computeCapability is empty for other vendors, as the module says.
 * - computeAPI: from the PCI vendor (CUDA, ROCm, oneAPI, MACA).
 * - memoryMiB: exact where the kernel says it (amdgpu mem_info_vram_total;
 *   i915/xe lmem_total_bytes of the device's DRM card, per tile); for NVIDIA the
 *   nominal size pci.ids gives in the name ("A100 PCIe 80GB"), which is
 *   not exact (pgpu_memory_exact()).
 * - The NVIDIA driver's state: /proc/driver/nvidia/version (the NVRM
 *   version) and /proc/driver/nvidia/gpus/<address>/information (Model,
 *   GPU UUID), read only while the device is bound to nvidia. */
#include "pgpu.h"
#include "pgpu_int.h"

#include "err.h"
#include "sysfs.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct arch_row {
	const char *key; /* NVIDIA: a chip-code prefix; others: a word of the name */
	const char *arch, *cc;
};

/* Most specific first: the first prefix that matches wins. */
static const struct arch_row nv_chips[] = {
	{ "GR1", "Rubin", "" },          { "GB20B", "Blackwell", "12.1" }, { "GB20", "Blackwell", "12.0" },
	{ "GB10B", "Blackwell", "11.0" }, { "GB110", "Blackwell", "10.3" }, { "GB10", "Blackwell", "10.0" },
	{ "GH100", "Hopper", "9.0" },    { "AD10", "Ada Lovelace", "8.9" }, { "GA10B", "Ampere", "8.7" },
	{ "GA100", "Ampere", "8.0" },    { "GA10", "Ampere", "8.6" },     { "TU1", "Turing", "7.5" },
	{ "GV10B", "Volta", "7.2" },     { "GV100", "Volta", "7.0" },     { "GP10B", "Pascal", "6.2" },
	{ "GP100", "Pascal", "6.0" },    { "GP10", "Pascal", "6.1" },     { "GM20B", "Maxwell", "5.3" },
	{ "GM20", "Maxwell", "5.2" },    { "GM10", "Maxwell", "5.0" },    { "GK210", "Kepler", "3.7" },
	{ "GK20A", "Kepler", "3.2" },    { "GK208", "Kepler", "3.5" },    { "GK110", "Kepler", "3.5" },
	{ "GK180", "Kepler", "3.5" },    { "GK10", "Kepler", "3.0" },
};

/* NVIDIA device IDs by generation, for a device pci.ids does not name:
 * approximate (a range is where a generation's IDs were allocated). */
static const struct {
	unsigned lo, hi;
	const char *arch, *cc;
} nv_ids[] = {
	{ 0x2900, 0x29ff, "Blackwell", "10.0" }, { 0x2b00, 0x2fff, "Blackwell", "12.0" },
	{ 0x2300, 0x233f, "Hopper", "9.0" },     { 0x2600, 0x28ff, "Ada Lovelace", "8.9" },
	{ 0x20b0, 0x20ff, "Ampere", "8.0" },     { 0x2200, 0x25ff, "Ampere", "8.6" },
	{ 0x1e00, 0x1fff, "Turing", "7.5" },     { 0x2180, 0x21ff, "Turing", "7.5" },
	{ 0x1d80, 0x1dff, "Volta", "7.0" },
};

/* AMD and Intel: a family word of the pci.ids name; first match wins. */
static const struct arch_row amd_fams[] = {
	{ "Aqua Vanjaram", "CDNA3", "" }, { "Aldebaran", "CDNA2", "" }, { "Arcturus", "CDNA", "" },
	{ "Navi 4", "RDNA4", "" },       { "Navi 3", "RDNA3", "" },     { "Navi 2", "RDNA2", "" },
	{ "Navi 1", "RDNA", "" },        { "Vega", "GCN5", "" },        { "Ellesmere", "GCN4", "" },
	{ "Polaris", "GCN4", "" },       { "Baffin", "GCN4", "" },      { "Lexa", "GCN4", "" },
};
static const struct arch_row intel_fams[] = {
	{ "Ponte Vecchio", "Xe-HPC", "" }, { "Battlemage", "Xe2-HPG", "" }, { "Lunar Lake", "Xe2-LPG", "" },
	{ "Panther Lake", "Xe3-LPG", "" }, { "DG2", "Xe-HPG", "" },         { "ATS-M", "Xe-HPG", "" },
	{ "Meteor Lake", "Xe-LPG", "" },   { "Arrow Lake", "Xe-LPG", "" },  { "DG1", "Xe-LP", "" },
	{ "TigerLake", "Xe-LP", "" },      { "Tiger Lake", "Xe-LP", "" },   { "AlderLake", "Xe-LP", "" },
	{ "Alder Lake", "Xe-LP", "" },     { "RaptorLake", "Xe-LP", "" },   { "Raptor Lake", "Xe-LP", "" },
	{ "RocketLake", "Xe-LP", "" },     { "Rocket Lake", "Xe-LP", "" },  { "JasperLake", "Xe-LP", "" },
	{ "Jasper Lake", "Xe-LP", "" },    { "Iris Plus", "Gen11", "" },    { "Ice Lake", "Gen11", "" },
	{ "CoffeeLake", "Gen9", "" },      { "Coffee Lake", "Gen9", "" },   { "CometLake", "Gen9", "" },
	{ "Comet Lake", "Gen9", "" },      { "Kaby Lake", "Gen9", "" },     { "Skylake", "Gen9", "" },
};

/* 1 when word occurs in name at a word start. */
static int has_word(const char *name, const char *word)
{
	for (const char *p = name; (p = strstr(p, word)); p++)
		if (p == name || !isalnum((unsigned char)p[-1]))
			return 1;
	return 0;
}

int pgpu_arch(unsigned vendor, unsigned device, const char *name, const char **arch, const char **cc)
{
	const struct arch_row *rows = NULL;
	size_t n = 0;

	*arch = *cc = "";
	if (vendor == PGPU_VID_NVIDIA) {
		if (name && *name)
			for (size_t i = 0; i < sizeof(nv_chips) / sizeof(nv_chips[0]); i++)
				if (strncmp(name, nv_chips[i].key, strlen(nv_chips[i].key)) == 0) {
					*arch = nv_chips[i].arch;
					*cc = nv_chips[i].cc;
					return 1;
				}
		for (size_t i = 0; i < sizeof(nv_ids) / sizeof(nv_ids[0]); i++)
			if (device >= nv_ids[i].lo && device <= nv_ids[i].hi) {
				*arch = nv_ids[i].arch;
				*cc = nv_ids[i].cc;
				return 2;
			}
		return 0;
	}
	if (vendor == PGPU_VID_AMD) {
		rows = amd_fams;
		n = sizeof(amd_fams) / sizeof(amd_fams[0]);
	} else if (vendor == PGPU_VID_INTEL) {
		rows = intel_fams;
		n = sizeof(intel_fams) / sizeof(intel_fams[0]);
	}
	for (size_t i = 0; name && i < n; i++)
		if (has_word(name, rows[i].key)) {
			*arch = rows[i].arch;
			if (vendor == PGPU_VID_AMD && i == 0 && (device & 0xff00) == 0x7500)
				*arch = "CDNA4"; /* pci.ids names MI350 Aqua Vanjaram too */
			return 1;
		}
	return 0;
}

const char *pgpu_compute_api(unsigned vendor)
{
	switch (vendor) {
	case PGPU_VID_NVIDIA:
		return "CUDA";
	case PGPU_VID_AMD:
		return "ROCm";
	case PGPU_VID_INTEL:
		return "oneAPI";
	case PGPU_VID_METAX:
		return "MACA";
	}
	return NULL;
}

/* The nominal memory in a pci.ids name: "80GB" or "80 GB" as a word, in MiB;
 * 0 when there is none. */
static long long name_memory(const char *name)
{
	for (const char *p = name; p && *p; p++) {
		char *end;
		unsigned long v;

		if (!isdigit((unsigned char)*p) || (p > name && isalnum((unsigned char)p[-1])))
			continue;
		v = strtoul(p, &end, 10);
		if (*end == ' ')
			end++;
		if (v > 0 && v <= 4096 && end[0] == 'G' && end[1] == 'B' && !isalnum((unsigned char)end[2]))
			return (long long)v * 1024;
	}
	return 0;
}

/* A decimal byte count from a device attribute, in MiB; 0 when absent or
 * unusable. rel is relative to the device directory fd. */
static long long attr_mib(int fd, const char *rel)
{
	unsigned long long v;
	char buf[32], *end;
	ssize_t n = sysfs_read(fd, rel, buf, sizeof(buf));

	if (n <= 0)
		return 0;
	v = strtoull(buf, &end, 10);
	if (end == buf || *end || v < (1ULL << 20) || v > (1ULL << 50))
		return 0;
	return (long long)(v >> 20);
}

int pgpu_drm_card_(const struct hostfs *h, const char *addr, struct pgpu_card *c)
{
	char rel[160], buf[32], *end;
	char **names = NULL;
	size_t n = 0, total = 0;
	int fd;

	c->card = -1;
	c->tiles = 1;
	c->lmem = 0;
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/drm", addr);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) < 0)
		return -1;
	if (hostfs_list(fd, 32, &names, &n, &total) == 0)
		for (size_t i = 0; i < n; i++) {
			long v;

			if (strncmp(names[i], "card", 4) != 0 || !isdigit((unsigned char)names[i][4]))
				continue;
			v = strtol(names[i] + 4, &end, 10);
			if (!*end && v >= 0 && v < 1 << 20 && (c->card < 0 || v < c->card))
				c->card = (int)v;
		}
	hostfs_names_free(names, n);
	close(fd);
	if (c->card < 0)
		return -1;
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/drm/card%d/gt", addr, c->card);
	if ((fd = hostfs_open(h, rel, O_RDONLY | O_DIRECTORY)) >= 0) {
		int tiles = 0;

		names = NULL;
		n = 0;
		if (hostfs_list(fd, 64, &names, &n, &total) == 0)
			for (size_t i = 0; i < n; i++)
				tiles += strncmp(names[i], "gt", 2) == 0;
		hostfs_names_free(names, n);
		close(fd);
		if (tiles > 1)
			c->tiles = tiles;
	}
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/drm/card%d/lmem_total_bytes", addr, c->card);
	if (sysfs_host_attr(h, rel, buf, sizeof(buf)) > 0) {
		unsigned long long v = strtoull(buf, &end, 10);

		if (end != buf && (!*end || *end == '\n') && v <= 1ULL << 50) /* tiles <= 64: no wrap */
			c->lmem = v * (unsigned long long)c->tiles;
	}
	return 0;
}

void pgpu_nvidia_info(const char *text, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *e;

		if (strncmp(p, key, kl) != 0 || p[kl] != ':')
			continue;
		p += kl + 1;
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strcspn(p, "\n");
		while (e > p && isspace((unsigned char)e[-1]))
			e--;
		if ((size_t)(e - p) < size)
			snprintf(out, size, "%.*s", (int)(e - p), p);
		return;
	}
}

int pgpu_nvidia_version(const char *text, char *out, size_t size)
{
	const char *p = strstr(text ? text : "", "Module"), *nl = text ? strchr(text, '\n') : NULL;

	out[0] = '\0';
	if (!p || (nl && nl < p)) /* the NVRM line is the first */
		return -1;
	for (p += 6; *p && *p != '\n';) {
		size_t len = strcspn(p, " \t\n"), dots = 0, ok = len > 0;

		for (size_t i = 0; i < len && ok; i++) {
			if (p[i] == '.')
				dots++;
			else if (!isdigit((unsigned char)p[i]))
				ok = 0;
		}
		if (ok && dots >= 1 && dots <= 2 && isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[len - 1]) &&
		    len < size) {
			memcpy(out, p, len);
			out[len] = '\0';
			return 0;
		}
		p += len;
		while (*p == ' ' || *p == '\t')
			p++;
	}
	return -1;
}

/* A printable value (no control bytes, no quotes): 1, else 0. */
static int plain(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

void pgpu_caps_(const struct pgpu_scan *s, const struct pci_dev *d, int fd, const char *devname,
		const char *driver, struct json *st, struct json *cs)
{
	unsigned ven = (unsigned)strtoul(d->vendor, NULL, 16), dev = (unsigned)strtoul(d->device, NULL, 16);
	struct json *caps = json_new_object(), *nv = NULL, *nvs = NULL;
	const char *arch, *cc, *api = pgpu_compute_api(ven);
	const char *sub = ids_subsystem(s->ids, ven, dev, (unsigned)strtoul(d->subsystem_vendor, NULL, 16),
					(unsigned)strtoul(d->subsystem_device, NULL, 16));
	char model[128] = "", uuid[64] = "", ver[32] = "";
	long long mib = 0;

	if (!caps)
		return;
	pgpu_arch(ven, dev, devname, &arch, &cc);
	if (ven == PGPU_VID_NVIDIA && strcmp(driver, "nvidia") == 0) {
		char rel[96], *text = NULL;

		snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/information", d->addr);
		if (sysfs_host_alloc(s->h, rel, 16 << 10, &text) > 0) {
			pgpu_nvidia_info(text, "Model", model, sizeof(model));
			pgpu_nvidia_info(text, "GPU UUID", uuid, sizeof(uuid));
			if (!plain(model))
				model[0] = '\0';
			if (strncmp(uuid, "GPU-", 4) != 0 || !plain(uuid))
				uuid[0] = '\0';
		}
		free(text);
		text = NULL;
		if (sysfs_host_alloc(s->h, "proc/driver/nvidia/version", 16 << 10, &text) > 0 &&
		    pgpu_nvidia_version(text, ver, sizeof(ver)) < 0)
			LOG_W(s->log, "proc/driver/nvidia/version: no NVRM version in it (driverVersion left out)");
		free(text);
	}
	if (ven == PGPU_VID_AMD)
		mib = attr_mib(fd, "mem_info_vram_total");
	else if (ven == PGPU_VID_INTEL) {
		struct pgpu_card c;

		if (pgpu_drm_card_(s->h, d->addr, &c) == 0)
			mib = (long long)(c.lmem >> 20);
	}
	else if (ven == PGPU_VID_NVIDIA && !(mib = name_memory(devname)))
		mib = name_memory(sub);
	if (*model)
		json_set_str(caps, "productName", model);
	else if (devname && *devname)
		json_set_str(caps, "productName", devname);
	if (*arch)
		json_set_str(caps, "architecture", arch);
	if (api)
		json_set_str(caps, "computeAPI", api);
	if (*cc)
		json_set_str(caps, "computeCapability", cc);
	if (mib > 0)
		json_set_take(caps, "memoryMiB", json_new_number((double)mib));
	if (ven == PGPU_VID_NVIDIA)
		json_set_str(caps, "vendor", "Nvidia");
	else if (ven == PGPU_VID_AMD)
		json_set_str(caps, "vendor", "Amd");
	else if (ven == PGPU_VID_INTEL)
		json_set_str(caps, "vendor", "Intel");
	if (ven == PGPU_VID_NVIDIA && (*arch || *cc) && (nv = json_new_object())) {
		if (*cc)
			json_set_str(nv, "computeCap", cc);
		if (*arch)
			json_set_str(nv, "productArchitecture", arch);
		json_set_take(caps, "nvidia", nv);
	}
	if (json_count(caps))
		json_set_take(st, "capabilities", caps);
	else
		json_free(caps);
	if ((*uuid || *ver) && (nvs = json_new_object())) {
		if (*uuid)
			json_set_str(nvs, "gpuUUID", uuid);
		if (*ver)
			json_set_str(nvs, "driverVersion", ver);
		json_set_take(cs, "nvidia", nvs);
	}
	if (*ver)
		json_set_str(cs, "driverVersion", ver);
}
