/* pgpu_feat: the vendors' own node labels for the GPUs a scan found, without
 * their management libraries (pgpu.h). Sources of the label names and
 * formats: NVIDIA gpu-feature-discovery (k8s-device-plugin internal/lm), the
 * ROCm k8s-node-labeller and Intel's GPU labeler (gpu_nfdhook); the
 * differences are in README.md ("gpu-node-agent: vendor labels"). */
#include "pgpu.h"
#include "pgpu_int.h"

#include "hostfs.h"
#include "labels.h"
#include "sysfs.h"

#include <ctype.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NV "nvidia.com/"

static void put(struct json *o, const char *key, const char *v)
{
	if (labels_valid_key(key) && labels_valid_value(v, strlen(v)))
		json_set_str(o, key, v);
}

static void put_int(struct json *o, const char *key, long long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", v);
	put(o, key, buf);
}

/* A label value: at most 63 characters, alphanumeric at both ends. */
static void value_fit(char *v)
{
	size_t n = strlen(v), i = 0;

	if (n > LABELS_VALUE_MAX)
		v[n = LABELS_VALUE_MAX] = '\0';
	while (n > 0 && !isalnum((unsigned char)v[n - 1]))
		v[--n] = '\0';
	while (v[i] && !isalnum((unsigned char)v[i]))
		i++;
	memmove(v, v + i, n - i + 1);
}

void pgpu_gfd_sanitise(const char *s, char *out, size_t size)
{
	size_t o = 0;
	int gap = 0;

	for (; *s && o + 2 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (isspace(c)) {
			gap = o > 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_' && c != '.')
			continue;
		if (gap)
			out[o++] = '-';
		gap = 0;
		out[o++] = (char)c;
	}
	out[o] = '\0';
}

/* The part inside the first [...] of a pci.ids name, else the name. */
static void bracket(const char *name, char *out, size_t size)
{
	const char *o = strchr(name, '['), *c = o ? strchr(o, ']') : NULL;

	if (o && c && c > o + 1)
		snprintf(out, size, "%.*s", (int)(c - o - 1), o + 1);
	else
		snprintf(out, size, "%s", name);
}

static const char *dev_str(const struct json *e, const char *a, const char *b, const char *c)
{
	const struct json *st = json_get(e, "status");

	return json_str(c ? json_getv(st, a, b, c, NULL) : json_getv(st, a, b, NULL));
}

/* ---- NVIDIA: gpu-feature-discovery's labels ----------------------------- */

static const char *gfd_family(int major, int minor)
{
	static const char *const fam[] = { NULL,     "tesla",  "fermi",    "kepler", NULL,     "maxwell",
					   "pascal", NULL,     NULL,       "hopper", "blackwell", NULL,
					   "blackwell", "rubin" };

	if (major == 7)
		return minor < 5 ? "volta" : "turing";
	if (major == 8)
		return minor < 9 ? "ampere" : "ada-lovelace";
	if (major > 0 && major < (int)(sizeof(fam) / sizeof(fam[0])) && fam[major])
		return fam[major];
	return "undefined";
}

/* The product of an NVIDIA device: the driver's Model (productName when it
 * is not the pci.ids name), else the pci.ids name's [...] part, else its id. */
static void nv_product(const struct json *e, char *out, size_t size)
{
	const char *pn = dev_str(e, "capabilities", "productName", NULL);
	const char *dn = dev_str(e, "pciInfo", "device", "name");
	char raw[256];

	if (pn && (!dn || strcmp(pn, dn) != 0))
		snprintf(raw, sizeof(raw), "%s", pn);
	else if (dn)
		bracket(dn, raw, sizeof(raw));
	else
		snprintf(raw, sizeof(raw), "%s", dev_str(e, "pciInfo", "device", "id") ? dev_str(e, "pciInfo", "device", "id") : "");
	pgpu_gfd_sanitise(raw, out, size);
	value_fit(out);
}

/* A GPU gpu-feature-discovery would count: NVIDIA, display class, bound
 * to nvidia (what NVML sees). */
static int nv_counted(const struct json *e)
{
	const char *drv = dev_str(e, "currentState", "driver", NULL), *cls = dev_str(e, "pciInfo", "class", "code");
	const char *ven = dev_str(e, "pciInfo", "vendor", "id");

	return ven && !strcmp(ven, "10de") && drv && !strcmp(drv, "nvidia") && cls && !strncmp(cls, "03", 2);
}

static void nvidia_labels(const struct pgpu_scan *s, const struct json *want, long long started, struct json *out)
{
	struct json *counts = json_new_object();
	const struct json *win = NULL, *first = NULL;
	const char *best = NULL, *mode = NULL, *ver = NULL;
	long long bestn = 0, n = 0;
	char prod[256], buf[256], key[128];

	if (!counts)
		return;
	for (const struct json *e = json_child(want); e; e = json_next(e)) {
		const char *cls = dev_str(e, "pciInfo", "class", "code");
		const char *m;
		long long c = 0;

		if (!nv_counted(e))
			continue;
		n++;
		m = !strcmp(cls, "0300") ? "graphics" : !strcmp(cls, "0302") ? "compute" : "unknown";
		mode = !mode || !strcmp(mode, m) ? m : "unknown";
		if (!ver)
			ver = dev_str(e, "currentState", "nvidia", "driverVersion");
		nv_product(e, prod, sizeof(prod));
		json_int(json_get(counts, prod), &c);
		if (json_set_take(counts, prod, json_new_number((double)(c + 1))) < 0) {
			json_free(counts);
			return;
		}
		if (!first)
			first = e;
	}
	if (!n || !json_count(counts)) {
		json_free(counts);
		return;
	}
	for (const struct json *c = json_child(counts); c; c = json_next(c)) {
		long long v = 0;

		json_int(c, &v);
		if (!best || v > bestn || (v == bestn && strcmp(json_key(c), best) < 0)) {
			best = json_key(c);
			bestn = v;
		}
	}
	for (const struct json *e = first; e && !win; e = json_next(e)) {
		if (!nv_counted(e))
			continue;
		nv_product(e, prod, sizeof(prod));
		if (!strcmp(prod, best))
			win = e;
	}
	put_int(out, NV "gpu.count", bestn);
	put(out, NV "gpu.product", best);
	if (json_count(counts) > 1)
		for (const struct json *c = json_child(counts); c; c = json_next(c)) {
			long long v = 0;

			json_int(c, &v);
			snprintf(key, sizeof(key), NV "gpu.product.%s", json_key(c));
			put_int(out, key, v);
		}
	put(out, NV "gpu.mode", mode);
	if (sysfs_host_attr(s->h, "sys/class/dmi/id/product_name", buf, sizeof(buf)) > 0 ||
	    sysfs_host_attr(s->h, "sys/devices/virtual/dmi/id/product_name", buf, sizeof(buf)) > 0) {
		char m[256];

		pgpu_gfd_sanitise(buf, m, sizeof(m));
		value_fit(m);
		put(out, NV "gpu.machine", *m ? m : "unknown");
	} else {
		put(out, NV "gpu.machine", "unknown");
	}
	if (ver) {
		char parts[3][16] = { "", "", "" };
		int np = 0, ok = 1;

		for (const char *p = ver; ok; np++) {
			size_t l = strcspn(p, ".");

			if (np == 3 || l == 0 || l >= sizeof(parts[0])) {
				ok = 0;
				break;
			}
			memcpy(parts[np], p, l);
			parts[np][l] = '\0';
			if (!p[l])
				break;
			p += l + 1;
		}
		if (ok && np >= 1) {
			put(out, NV "cuda.driver.major", parts[0]);
			put(out, NV "cuda.driver.minor", parts[1]);
			put(out, NV "cuda.driver.rev", parts[2]);
			put(out, NV "cuda.driver-version.major", parts[0]);
			put(out, NV "cuda.driver-version.minor", parts[1]);
			put(out, NV "cuda.driver-version.revision", parts[2]);
			put(out, NV "cuda.driver-version.full", ver);
		}
	}
	if (win) {
		const char *arch, *cc, *id = dev_str(win, "pciInfo", "device", "id");
		char *dot;
		int major = 0, minor = 0;

		if (pgpu_arch(PGPU_VID_NVIDIA, (unsigned)strtoul(id ? id : "0", NULL, 16),
			      dev_str(win, "pciInfo", "device", "name"), &arch, &cc) == 1 &&
		    (major = (int)strtol(cc, &dot, 10)) > 0 && *dot == '.') {
			minor = (int)strtol(dot + 1, NULL, 10);
			put_int(out, NV "gpu.compute.major", major);
			put_int(out, NV "gpu.compute.minor", minor);
			put(out, NV "gpu.family", gfd_family(major, minor));
		}
	}
	if (started > 0)
		put_int(out, NV "gfd.timestamp", started);
	json_free(counts);
}

/* ---- AMD: the ROCm k8s-node-labeller's labels --------------------------- */

enum { AMD_FAMILY, AMD_DEVICE_ID, AMD_PRODUCT, AMD_VRAM, AMD_SIMD, AMD_CU, AMD_KINDS };
static const char *const amd_kind[AMD_KINDS] = { "family", "device-id", "product-name", "vram", "simd-count",
						 "cu-count" };

static const char *amd_family(const char *arch)
{
	static const char *const map[][2] = { { "GCN4", "VI" }, { "GCN5", "AI" },       { "CDNA", "AI" },
					      { "CDNA2", "AI" }, { "CDNA3", "AI" },      { "CDNA4", "AI" },
					      { "RDNA", "NV" },  { "RDNA2", "NV" },      { "RDNA3", "GC_11_0_0" },
					      { "RDNA4", "GC_12_0_0" } };

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(arch, map[i][0]))
			return map[i][1];
	return NULL;
}

/* A "name value" line of a KFD properties file; -1 when absent. */
static long long kfd_prop(const char *text, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, nl) && p[nl] == ' ' && isdigit((unsigned char)p[nl + 1]))
			return strtoll(p + nl + 1, NULL, 10);
	return -1;
}

/* simd_count and simd_per_cu of the KFD node at PCI address addr
 * (DDDD:BB:DD.F, as the scan gives it). */
static void kfd_counts(const struct pgpu_scan *s, const char *addr, long long *simd, long long *per_cu)
{
	unsigned long f[4];
	const char *p = addr;
	char *end;
	int fd, ok = 1;
	char **names = NULL;
	size_t n = 0, total = 0;

	*simd = *per_cu = -1;
	for (int i = 0; i < 4 && ok; i++) {
		f[i] = strtoul(p, &end, 16);
		ok = end > p && *end == (i < 2 ? ':' : i == 2 ? '.' : '\0');
		p = end + 1;
	}
	if (!ok || (fd = hostfs_open(s->h, "sys/class/kfd/kfd/topology/nodes", O_RDONLY | O_DIRECTORY)) < 0)
		return;
	if (hostfs_list(fd, 256, &names, &n, &total) == 0)
		for (size_t i = 0; i < n && *simd < 0; i++) {
			char rel[300], *text = NULL;

			snprintf(rel, sizeof(rel), "sys/class/kfd/kfd/topology/nodes/%s/properties", names[i]);
			if (sysfs_host_alloc(s->h, rel, 64 << 10, &text) > 0 &&
			    kfd_prop(text, "location_id") == (long long)((f[1] << 8) | (f[2] << 3) | f[3]) &&
			    kfd_prop(text, "domain") == (long long)f[0]) {
				*simd = kfd_prop(text, "simd_count");
				*per_cu = kfd_prop(text, "simd_per_cu");
			}
			free(text);
		}
	hostfs_names_free(names, n);
	close(fd);
}

static void count_value(struct json *m, const char *v)
{
	long long c = 0;

	if (!*v)
		return;
	json_int(json_get(m, v), &c);
	json_set_take(m, v, json_new_number((double)(c + 1)));
}

static void amd_labels(const struct pgpu_scan *s, const struct json *want, struct json *out)
{
	struct json *m[AMD_KINDS];
	int any = 0;

	for (int k = 0; k < AMD_KINDS; k++)
		if (!(m[k] = json_new_object())) {
			while (k-- > 0)
				json_free(m[k]);
			return;
		}
	for (const struct json *e = json_child(want); e; e = json_next(e)) {
		const char *drv = dev_str(e, "currentState", "driver", NULL), *addr = dev_str(e, "pciInfo", "address", NULL);
		const char *arch = dev_str(e, "capabilities", "architecture", NULL), *fam;
		const char *id = dev_str(e, "pciInfo", "device", "id"), *dn = dev_str(e, "pciInfo", "device", "name");
		char rel[128], v[256], raw[256];
		long long simd, per_cu, mib = 0;
		size_t o = 0;

		if (!drv || strcmp(drv, "amdgpu") != 0 || !addr)
			continue;
		any = 1;
		if (arch && (fam = amd_family(arch)))
			count_value(m[AMD_FAMILY], fam);
		count_value(m[AMD_DEVICE_ID], id ? id : "");
		snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/product_name", addr);
		if (sysfs_host_attr(s->h, rel, raw, sizeof(raw)) <= 0 || !*raw)
			bracket(dn ? dn : "", raw, sizeof(raw));
		for (const char *p = raw; *p && o + 1 < sizeof(v); p++) /* the labeller: ' ' -> '_', no ( ) */
			if (*p == ' ')
				v[o++] = '_';
			else if (isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.')
				v[o++] = *p;
		v[o] = '\0';
		value_fit(v);
		count_value(m[AMD_PRODUCT], v);
		json_int(json_getv(e, "status", "capabilities", "memoryMiB", NULL), &mib);
		if (mib > 0) {
			snprintf(v, sizeof(v), "%lldG", (mib + 512) / 1024);
			count_value(m[AMD_VRAM], v);
		}
		kfd_counts(s, addr, &simd, &per_cu);
		if (simd > 0) {
			snprintf(v, sizeof(v), "%lld", simd);
			count_value(m[AMD_SIMD], v);
			if (per_cu > 0) {
				snprintf(v, sizeof(v), "%lld", simd / per_cu);
				count_value(m[AMD_CU], v);
			}
		}
	}
	for (int k = 0; k < AMD_KINDS; k++) {
		size_t nv = json_count(m[k]);
		char key[160];

		for (const struct json *c = json_child(m[k]); any && c; c = json_next(c)) {
			long long cnt = 0;

			json_int(c, &cnt);
			snprintf(key, sizeof(key), "beta.amd.com/gpu.%s.%s", amd_kind[k], json_key(c));
			put_int(out, key, cnt);
			if (nv > 1) {
				snprintf(key, sizeof(key), "amd.com/gpu.%s.%s", amd_kind[k], json_key(c));
				put_int(out, key, cnt);
			}
		}
		if (any && nv == 1) {
			snprintf(key, sizeof(key), "amd.com/gpu.%s", amd_kind[k]);
			put(out, key, json_key(json_child(m[k])));
			snprintf(key, sizeof(key), "beta.amd.com/gpu.%s", amd_kind[k]);
			put(out, key, json_key(json_child(m[k])));
		}
		json_free(m[k]);
	}
}

/* ---- Intel: the GPU plugin's labeler ------------------------------------ */

/* Puts key=v, split as the labeler splits a long value: chunks of at most 63
 * characters cut after the last alphanumeric one, the later ones prefixed
 * with "Z", the keys numbered key, key2, key3... */
static void put_split(struct json *o, const char *key, const char *v)
{
	char chunk[LABELS_VALUE_MAX + 1], k[128];
	int part = 1;

	while (*v) {
		size_t room = LABELS_VALUE_MAX - (part > 1), cut = strlen(v);

		if (cut > room) {
			cut = room;
			while (cut > 0 && !isalnum((unsigned char)v[cut - 1]))
				cut--;
			if (!cut)
				return;
		}
		snprintf(chunk, sizeof(chunk), "%s%.*s", part > 1 ? "Z" : "", (int)cut, v);
		if (part == 1)
			snprintf(k, sizeof(k), "%s", key);
		else
			snprintf(k, sizeof(k), "%s%d", key, part);
		put(o, k, chunk);
		v += cut;
		while (*v && !isalnum((unsigned char)*v))
			v++;
		part++;
	}
}

struct igpu {
	int card, numa, tiles;
	unsigned long long mem;
};

static int igpu_cmp(const void *a, const void *b)
{
	const struct igpu *x = a, *y = b;

	return x->numa != y->numa ? (x->numa > y->numa) - (x->numa < y->numa) : (x->card > y->card) - (x->card < y->card);
}

#define IGPU_MAX 64

static void intel_labels(const struct pgpu_scan *s, const struct json *want, struct json *out)
{
	struct igpu g[IGPU_MAX];
	size_t n = 0;
	unsigned long long mem = 0;
	long long tiles = 0;
	char cards[IGPU_MAX * 8] = "", nums[IGPU_MAX * 4] = "", map[IGPU_MAX * 8] = "";

	for (const struct json *e = json_child(want); e && n < IGPU_MAX; e = json_next(e)) {
		const char *drv = dev_str(e, "currentState", "driver", NULL), *addr = dev_str(e, "pciInfo", "address", NULL);
		long long numa = -1;
		struct pgpu_card c;

		if (!drv || (strcmp(drv, "i915") != 0 && strcmp(drv, "xe") != 0) || !addr ||
		    pgpu_drm_card_(s->h, addr, &c) < 0)
			continue;
		g[n].card = c.card;
		g[n].tiles = c.tiles;
		g[n].mem = c.lmem;
		if (json_int(json_getv(e, "status", "pciInfo", "numaNode", NULL), &numa) < 0)
			numa = -1;
		g[n].numa = (int)numa;
		mem = mem + g[n].mem < mem ? ~0ULL : mem + g[n].mem;
		tiles += g[n].tiles;
		n++;
	}
	if (!n)
		return;
	qsort(g, n, sizeof(g[0]), igpu_cmp);
	{ /* cards and numbers in card order */
		int order[IGPU_MAX];

		for (size_t i = 0; i < n; i++)
			order[i] = g[i].card;
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0 && order[j - 1] > order[j]; j--) {
				int t = order[j];

				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		for (size_t i = 0; i < n; i++) {
			snprintf(cards + strlen(cards), sizeof(cards) - strlen(cards), "%scard%d", i ? "." : "", order[i]);
			snprintf(nums + strlen(nums), sizeof(nums) - strlen(nums), "%s%d", i ? "." : "", order[i]);
		}
	}
	for (size_t i = 0; i < n; i++) { /* numa-gpu-map: 0-0.1_1-3.4 */
		if (g[i].numa < 0)
			continue;
		if (i == 0 || g[i - 1].numa != g[i].numa)
			snprintf(map + strlen(map), sizeof(map) - strlen(map), "%s%d-%d", *map ? "_" : "", g[i].numa,
				 g[i].card);
		else
			snprintf(map + strlen(map), sizeof(map) - strlen(map), ".%d", g[i].card);
	}
	{
		if (strlen(cards) > LABELS_VALUE_MAX) /* deprecated: its first chunk only */
			cards[LABELS_VALUE_MAX] = '\0';
		value_fit(cards);
		put(out, "gpu.intel.com/cards", cards);
	}
	put_split(out, "gpu.intel.com/gpu-numbers", nums);
	put_int(out, "gpu.intel.com/millicores", 1000LL * (long long)n);
	if (mem <= (unsigned long long)LLONG_MAX)
		put_int(out, "gpu.intel.com/memory.max", (long long)mem);
	put_int(out, "gpu.intel.com/tiles", tiles);
	if (*map)
		put_split(out, "gpu.intel.com/numa-gpu-map", map);
}

struct json *pgpu_feature_labels(const struct pgpu_scan *s, const struct json *want, long long started)
{
	struct json *out = json_new_object();

	if (!out)
		return NULL;
	nvidia_labels(s, want, started, out);
	amd_labels(s, want, out);
	intel_labels(s, want, out);
	json_sort_keys(out);
	return out;
}
