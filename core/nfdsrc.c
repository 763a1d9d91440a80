/* nfdsrc: NFD's built-in feature sources, read through the hostfs prefix.
 *
 * Mirrors kubernetes-sigs/node-feature-discovery source/{cpu,kernel,memory,
 * network,pci,storage,system,usb} (v0.17-v0.19, checked against master at
 * v0.20.0-devel): feature keys, element names, value formats and label
 * names as upstream; see ../../shared/reference/nfd-upstream-facts.md §1-2.
 *
 * Deliberate deviations, all because upstream asks the CPU or links a
 * library where we read files:
 *  - x86 cpu.cpuid: upstream runs CPUID through klauspost/cpuid; we read the
 *    kernel's /proc/cpuinfo flags and translate them to klauspost's names
 *    (pni -> SSE3, sse4_2 -> SSE42, pclmulqdq -> CLMUL, abm -> LZCNT+POPCNT,
 *    ...) with its derived flags (OSXSAVE, HTT, AVXSLOW, X86_64_V1..4), so
 *    the default blacklist (klauspost names) works and labels match.
 *    Flags with no cpuinfo counterpart are never reported: the AMD IBS
 *    subleaf, FP128/FP256/MOVU, HWA, KEYLOCKER, AVX10*, APX_F, the AVX-VNNI-
 *    INT8/16 and AMX-TF32 group, SGXPQC, MCOMMIT, TBM (klauspost never sets
 *    it either), PMU_FIXEDCOUNTER_TOPDOWN_SLOTS; the cpu.cpuid attribute
 *    AVX10_VERSION neither. PMU_FIXEDCOUNTER_{CYCLES,INSTRUCTIONS,REFCYCLES}
 *    are inferred from Intel's arch_perfmon flag.
 *  - cpu.model hypervisor: upstream reads CPUID leaf 0x40000000; we infer it
 *    from the clocksource (kvm-clock, hyperv, xen) and DMI sys_vendor
 *    (VMware, BHYVE, QEMU), else "unknown". Bare metal is "none" as upstream.
 *  - cpu.rdt, cpu.sst, cpu.coprocessor are published empty (they need CPUID
 *    leaves or MSRs); cpu.security has everything but the SGX EPC size,
 *    which comes from <sys>/devices/system/node/node<N>/x86/sgx_total_bytes
 *    instead of CPUID leaf 0x12.
 *  - kernel.config: /proc/config.gz is skipped (no zlib here; a hand-written
 *    inflate is not worth its size), and so is a kconfigFile ending in .gz;
 *    the plain-text files of upstream's search list are read. Upstream
 *    reads /lib/modules/<ver>/build/.config from the container's own root;
 *    we read it under the host prefix like the rest.
 *  - pci.device: an absent <sys>/bus/pci (or usb) directory gives an empty
 *    device list here (pci_scan's contract) where upstream fails the source.
 *  - cpu flags come from the first processor of /proc/cpuinfo; upstream
 *    asks whichever CPU the worker runs on.
 * Where upstream's versions differ, the reference's commit decides:
 * network instances carry "mtu", system.dmiid has the 16 DMI attributes. */
#include "nfdsrc.h"

#include "labels.h"
#include "re.h"
#include "sysfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NLOG_I(lg, ...) do { if (lg) LOG_I(lg, __VA_ARGS__); } while (0)
#define NLOG_E(lg, ...) do { if (lg) LOG_E(lg, __VA_ARGS__); } while (0)
#define NLOG_V(lg, n, ...) do { if (lg) LOG_V(lg, n, __VA_ARGS__); } while (0)

#define FILE_CAP (4u << 20) /* kernel configs are ~300 KiB */
#define ATTR_SIZE 256

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

static int list_has(const struct nfdsrc_list *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i] && strcmp(l->v[i], s) == 0)
			return 1;
	return 0;
}

/* ---- small helpers ---------------------------------------------------- */

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Go's strings.TrimSpace, in place (ASCII whitespace). Returns the length. */
static size_t trim(char *s)
{
	size_t len = strlen(s), start = 0;

	while (len && is_space(s[len - 1]))
		len--;
	while (start < len && is_space(s[start]))
		start++;
	memmove(s, s + start, len - start);
	s[len - start] = '\0';
	return len - start;
}

/* A small attribute below dfd, trimmed. Returns its length or an fb_err. */
static ssize_t attr_at(int dfd, const char *name, char *buf, size_t size)
{
	ssize_t n = sysfs_read(dfd, name, buf, size);

	return n < 0 ? n : (ssize_t)trim(buf);
}

static ssize_t host_attr(const struct hostfs *h, const char *rel, char *buf, size_t size)
{
	char path[PATH_MAX];

	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	return attr_at(AT_FDCWD, path, buf, size);
}

static ssize_t host_file(const struct hostfs *h, const char *rel, char **out)
{
	char path[PATH_MAX];

	*out = NULL;
	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	return sysfs_read_alloc(AT_FDCWD, path, FILE_CAP, out);
}

/* The first size-1 bytes (or all) of a regular host file, NUL-terminated, in
 * a new buffer: /proc/cpuinfo of a big host is megabytes the kernel makes on
 * each read, and only its first processor is used. */
static ssize_t host_head(const struct hostfs *h, const char *rel, size_t size, char **out)
{
	struct stat st;
	size_t len = 0;
	int fd = hostfs_open(h, rel, O_RDONLY | O_NONBLOCK); /* a FIFO must not hang us */
	char *buf;

	*out = NULL;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -FB_EINVAL;
	}
	if (!(buf = malloc(size))) {
		close(fd);
		return -FB_ENOMEM;
	}
	while (len + 1 < size) {
		ssize_t r = read(fd, buf + len, size - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			close(fd);
			return -FB_EIO;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

/* 1 when the host path exists (following links), 0 when it does not, or
 * -FB_EIO for any other stat failure. */
static int host_exists(const struct hostfs *h, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	if (stat(path, &st) == 0)
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -FB_EIO;
}

static int host_opendir(const struct hostfs *h, const char *rel)
{
	char path[PATH_MAX];
	int fd;

	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? -FB_ENOENT : -FB_EIO;
	return fd;
}

/* Directory entries (all but . and ..) sorted by name, as Go's os.ReadDir. */
struct names {
	char **v;
	size_t n, cap;
};

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	nm->v = NULL;
	nm->n = nm->cap = 0;
}

static int names_push(struct names *nm, const char *s)
{
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 16;
		char **v = realloc(nm->v, cap * sizeof(*v));

		if (!v)
			return -FB_ENOMEM;
		nm->v = v;
		nm->cap = cap;
	}
	if (!(nm->v[nm->n] = strdup(s)))
		return -FB_ENOMEM;
	nm->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int names_list(int dfd, struct names *nm)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -FB_EIO;
	}
	rewinddir(d);
	while (rc == 0 && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			rc = names_push(nm, e->d_name);
	closedir(d);
	if (rc == 0 && nm->n > 1)
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_str);
	return rc;
}

/* Lists <host>/rel. Returns 0, or -FB_ENOENT/-FB_EIO/-FB_ENOMEM. */
static int host_list(const struct hostfs *h, const char *rel, int *dfd, struct names *nm)
{
	int fd = host_opendir(h, rel), rc;

	if (fd < 0)
		return fd;
	rc = names_list(fd, nm);
	if (rc < 0 || !dfd)
		close(fd);
	else
		*dfd = fd;
	return rc;
}

/* Adds "feature.node.kubernetes.io/<src>-<name>" = value when labels is set.
 * A name too long for any valid label is dropped here with the same log
 * line the filter would write, rather than cut. */
static int label(struct json *labels, const char *src, const char *name, const char *value,
		 const struct fb_log *lg)
{
	char key[512];
	int n;

	if (!labels)
		return 0;
	n = snprintf(key, sizeof(key), NFDSRC_LABEL_NS "/%s-%s", src, name);
	if (n < 0 || (size_t)n >= sizeof(key)) {
		NLOG_I(lg, "label %s-%.64s... dropped: name too long", src, name);
		return 0;
	}
	return json_set_str(labels, key, value);
}

static int label_true(struct json *labels, const char *src, const char *name,
		      const struct fb_log *lg)
{
	return label(labels, src, name, "true", lg);
}

/* Upstream's regexp.ReplaceAllString("[^-A-Za-z0-9_.]+", "_"), in place. */
static void squash_invalid(char *s)
{
	char *w = s;

	for (const char *r = s; *r;) {
		if (isalnum((unsigned char)*r) || *r == '-' || *r == '_' || *r == '.') {
			*w++ = *r++;
			continue;
		}
		*w++ = '_';
		while (*r && !(isalnum((unsigned char)*r) || *r == '-' || *r == '_' || *r == '.'))
			r++;
	}
	*w = '\0';
}

/* A set of borrowed strings (flag names), insertion-ordered, no repeats. */
struct strset {
	const char **v;
	size_t n, cap;
};

static int set_has(const struct strset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return 1;
	return 0;
}

static int set_add(struct strset *s, const char *name)
{
	if (set_has(s, name))
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		const char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -FB_ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = name;
	return 0;
}

static void set_del(struct strset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0) {
			memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof(*s->v));
			s->n--;
			return;
		}
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- pci -------------------------------------------------------------- */

static const char *const pci_fields[] = { "class", "vendor", "device", "subsystem_vendor",
					  "subsystem_device" };
static const char *const usb_fields[] = { "class", "vendor", "device", "serial" };

/* The label fields upstream uses: the configured ones that are valid, in
 * canonical order whatever the config order; none valid: the fallback.
 * Writes indexes into canon[] to out and returns their count. */
static size_t label_fields(const struct nfdsrc_list *cfg, const char *const *canon, size_t ncanon,
			   const size_t *fallback, size_t nfallback, size_t *out, const char *src,
			   const struct fb_log *lg)
{
	size_t n = 0;

	for (size_t i = 0; i < ncanon; i++)
		if (list_has(cfg, canon[i]))
			out[n++] = i;
	for (size_t i = 0; i < cfg->n; i++) {
		size_t k;

		for (k = 0; k < ncanon && (!cfg->v[i] || strcmp(cfg->v[i], canon[k]) != 0); k++)
			;
		if (k == ncanon)
			NLOG_I(lg, "%s: ignoring invalid field \"%s\" in deviceLabelFields", src,
			       cfg->v[i] ? cfg->v[i] : "");
	}
	if (n == 0) {
		NLOG_I(lg, "%s: no valid fields in deviceLabelFields defined, using the defaults",
		       src);
		memcpy(out, fallback, nfallback * sizeof(*out));
		n = nfallback;
	}
	return n;
}

/* Prefix match of class against the lower-cased whitelist entries. */
static int class_listed(const struct nfdsrc_list *wl, const char *cls)
{
	for (size_t i = 0; i < wl->n; i++) {
		const char *w = wl->v[i] ? wl->v[i] : "";
		size_t k;

		for (k = 0; w[k] && cls[k] && tolower((unsigned char)w[k]) == cls[k]; k++)
			;
		if (!w[k])
			return 1;
	}
	return 0;
}

/* "<v0>_<v1>_...": the device label of upstream's GetLabels. */
static int device_label(char *buf, size_t size, const char *const *vals, const size_t *idx,
			size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + len, size - len, "%s%s", i ? "_" : "", vals[idx[i]]);

		if (w < 0 || (size_t)w >= size - len)
			return -FB_E2BIG;
		len += (size_t)w;
	}
	return 0;
}

static const char *no0x(const char *s)
{
	return s[0] == '0' && s[1] == 'x' ? s + 2 : s;
}

int nfdsrc_pci(const struct nfdsrc_config *c, const struct pci_list *pl, struct features *f,
	       struct json *labels, const struct fb_log *lg)
{
	static const size_t fallback[] = { 0, 1 };
	size_t idx[5], nidx = 0;
	int rc;

	if ((rc = features_ensure(f, FEATURES_INSTANCES, "pci.device")) < 0)
		return rc;
	if (labels)
		nidx = label_fields(&c->pci_label_fields, pci_fields, 5, fallback, 2, idx, "pci", lg);
	for (size_t i = 0; i < pl->n; i++) {
		const struct pci_dev *d = &pl->dev[i];
		size_t cl = strnlen(d->cls, 4); /* prog-if dropped: 030000 -> 0300 */
		char cls[5], name[256];
		const char *vals[5];
		struct json *in = features_instance(f, "pci.device");

		if (!in)
			return -FB_ENOMEM;
		memcpy(cls, d->cls, cl);
		cls[cl] = '\0';
		/* members in key order, as Go prints the map */
		if ((rc = features_inst_attr(in, "class", cls)) < 0 ||
		    (rc = features_inst_attr(in, "device", d->device)) < 0 ||
		    (d->iommu_version[0] &&
		     (rc = features_inst_attr(in, "iommu/intel-iommu/version", d->iommu_version)) < 0) ||
		    (d->iommu_group_type[0] &&
		     (rc = features_inst_attr(in, "iommu_group/type", d->iommu_group_type)) < 0) ||
		    (d->has_sriov &&
		     (rc = features_inst_attr(in, "sriov_totalvfs", no0x(d->sriov_totalvfs))) < 0) ||
		    (rc = features_inst_attr(in, "subsystem_device", d->subsystem_device)) < 0 ||
		    (rc = features_inst_attr(in, "subsystem_vendor", d->subsystem_vendor)) < 0 ||
		    (rc = features_inst_attr(in, "vendor", d->vendor)) < 0)
			return rc;
		if (!labels || !class_listed(&c->pci_class_whitelist, cls))
			continue;
		vals[0] = cls;
		vals[1] = d->vendor;
		vals[2] = d->device;
		vals[3] = d->subsystem_vendor;
		vals[4] = d->subsystem_device;
		if (device_label(name, sizeof(name) - 16, vals, idx, nidx) < 0)
			continue;
		strcat(name, ".present");
		if ((rc = label_true(labels, "pci", name, lg)) < 0)
			return rc;
		if (d->has_sriov) {
			strcpy(name + strlen(name) - strlen(".present"), ".sriov.capable");
			if ((rc = label_true(labels, "pci", name, lg)) < 0)
				return rc;
		}
	}
	return 0;
}

/* ---- usb -------------------------------------------------------------- */

static int usb_instance(struct features *f, const struct usb_dev *d, const char *cls)
{
	struct json *in = features_instance(f, "usb.device");
	int rc;

	if (!in)
		return -FB_ENOMEM;
	if ((cls && (rc = features_inst_attr(in, "class", cls)) < 0) ||
	    (d->product[0] && (rc = features_inst_attr(in, "device", d->product)) < 0) ||
	    (d->has_serial && d->serial[0] &&
	     (rc = features_inst_attr(in, "serial", d->serial)) < 0) ||
	    (d->vendor[0] && (rc = features_inst_attr(in, "vendor", d->vendor)) < 0))
		return rc;
	return 0;
}

static int usb_label(const struct nfdsrc_config *c, const struct usb_dev *d, const char *cls,
		     const size_t *idx, size_t nidx, struct json *labels, const struct fb_log *lg)
{
	const char *vals[4] = { cls ? cls : "", d->vendor, d->product,
				d->has_serial ? d->serial : "" };
	char name[512];

	if (!labels || !class_listed(&c->usb_class_whitelist, vals[0]))
		return 0;
	if (device_label(name, sizeof(name) - 16, vals, idx, nidx) < 0)
		return 0;
	strcat(name, ".present");
	return label_true(labels, "usb", name, lg);
}

int nfdsrc_usb(const struct nfdsrc_config *c, const struct usb_list *ul, struct features *f,
	       struct json *labels, const struct fb_log *lg)
{
	static const size_t fallback[] = { 0, 1, 2 };
	size_t idx[4], nidx = 0;
	int rc;

	if ((rc = features_ensure(f, FEATURES_INSTANCES, "usb.device")) < 0)
		return rc;
	if (labels)
		nidx = label_fields(&c->usb_label_fields, usb_fields, 4, fallback, 3, idx, "usb", lg);
	for (size_t i = 0; i < ul->n; i++) {
		const struct usb_dev *d = &ul->dev[i];

		if (strcmp(d->cls, "00") != 0) {
			/* an unreadable class is no attribute, and not "00" */
			const char *cls = d->cls[0] ? d->cls : NULL;

			if ((rc = usb_instance(f, d, cls)) < 0 ||
			    (rc = usb_label(c, d, cls, idx, nidx, labels, lg)) < 0)
				return rc;
			continue;
		}
		/* class per interface: one instance each, or the whole device
		 * dropped when one interface class could not be read */
		if (d->iface_err) {
			NLOG_E(lg, "usb: failed to read the interface classes of device %s", d->name);
			continue;
		}
		for (int k = 0; k < d->niface; k++)
			if ((rc = usb_instance(f, d, d->iface_cls[k])) < 0 ||
			    (rc = usb_label(c, d, d->iface_cls[k], idx, nidx, labels, lg)) < 0)
				return rc;
	}
	return 0;
}

/* ---- cpu -------------------------------------------------------------- */

/* The first value of each /proc/cpuinfo key we use (borrowed from the
 * buffer, which parse_cpuinfo cuts into strings). */
struct cpuinfo {
	const char *vendor, *family, *model, *flags, *siblings, *cores;
	const char *features, *implementer, *variant, *part, *revision;
};

static void parse_cpuinfo(char *buf, struct cpuinfo *ci)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "vendor_id", offsetof(struct cpuinfo, vendor) },
		{ "cpu family", offsetof(struct cpuinfo, family) },
		{ "model", offsetof(struct cpuinfo, model) },
		{ "flags", offsetof(struct cpuinfo, flags) },
		{ "siblings", offsetof(struct cpuinfo, siblings) },
		{ "cpu cores", offsetof(struct cpuinfo, cores) },
		{ "Features", offsetof(struct cpuinfo, features) },
		{ "CPU implementer", offsetof(struct cpuinfo, implementer) },
		{ "CPU variant", offsetof(struct cpuinfo, variant) },
		{ "CPU part", offsetof(struct cpuinfo, part) },
		{ "CPU revision", offsetof(struct cpuinfo, revision) },
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
		while (end > line && is_space(end[-1]))
			*--end = '\0';
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			const char **slot = (const char **)((char *)ci + keys[i].off);

			if (!*slot && strcmp(line, keys[i].key) == 0) {
				trim(colon + 1);
				*slot = colon + 1;
			}
		}
	}
}

/* Linux's x86 cpuinfo flag names and the klauspost/cpuid names upstream
 * reports for the same CPUID bit (one flag may give two: sse also sets
 * FXSROPT in klauspost, abm is LZCNT and POPCNT, xsave means the kernel
 * turned on OSXSAVE). */
static const struct x86map {
	const char *linux, *kp;
} x86map[] = {
	{ "fpu", "X87" }, { "cx8", "CMPXCHG8" }, { "sep", "SYSEE" }, { "cmov", "CMOV" },
	{ "mmx", "MMX" }, { "fxsr", "FXSR" }, { "sse", "SSE" }, { "sse", "FXSROPT" },
	{ "sse2", "SSE2" }, { "ht", "HTT" },
	{ "pni", "SSE3" }, { "pclmulqdq", "CLMUL" }, { "vmx", "VMX" }, { "ssse3", "SSSE3" },
	{ "fma", "FMA3" }, { "cx16", "CX16" }, { "sse4_1", "SSE4" }, { "sse4_2", "SSE42" },
	{ "movbe", "MOVBE" }, { "popcnt", "POPCNT" }, { "aes", "AESNI" }, { "xsave", "XSAVE" },
	{ "xsave", "OSXSAVE" }, { "avx", "AVX" }, { "f16c", "F16C" }, { "rdrand", "RDRAND" },
	{ "hypervisor", "HYPERVISOR" },
	{ "syscall", "SYSCALL" }, { "nx", "NX" }, { "mmxext", "MMXEXT" }, { "fxsr_opt", "FXSROPT" },
	{ "rdtscp", "RDTSCP" }, { "3dnowext", "AMD3DNOWEXT" }, { "3dnow", "AMD3DNOW" },
	{ "lahf_lm", "LAHF" }, { "svm", "SVM" }, { "abm", "LZCNT" }, { "abm", "POPCNT" },
	{ "sse4a", "SSE4A" }, { "ibs", "IBS" }, { "topoext", "TOPEXT" }, { "xop", "XOP" },
	{ "fma4", "FMA4" },
	{ "sgx", "SGX" }, { "bmi1", "BMI1" }, { "hle", "HLE" }, { "avx2", "AVX2" },
	{ "bmi2", "BMI2" }, { "erms", "ERMS" }, { "rtm", "RTM" }, { "mpx", "MPX" },
	{ "avx512f", "AVX512F" }, { "avx512dq", "AVX512DQ" }, { "rdseed", "RDSEED" },
	{ "adx", "ADX" }, { "avx512ifma", "AVX512IFMA" }, { "avx512pf", "AVX512PF" },
	{ "avx512er", "AVX512ER" }, { "avx512cd", "AVX512CD" }, { "sha_ni", "SHA" },
	{ "avx512bw", "AVX512BW" }, { "avx512vl", "AVX512VL" },
	{ "avx512vbmi", "AVX512VBMI" }, { "waitpkg", "WAITPKG" }, { "avx512_vbmi2", "AVX512VBMI2" },
	{ "shstk", "CETSS" }, { "gfni", "GFNI" }, { "vaes", "VAES" }, { "vpclmulqdq", "VPCLMULQDQ" },
	{ "avx512_vnni", "AVX512VNNI" }, { "avx512_bitalg", "AVX512BITALG" }, { "tme", "TME" },
	{ "avx512_vpopcntdq", "AVX512VPOPCNTDQ" }, { "cldemote", "CLDEMOTE" },
	{ "movdiri", "MOVDIRI" }, { "movdir64b", "MOVDIR64B" }, { "enqcmd", "ENQCMD" },
	{ "sgx_lc", "SGXLC" },
	{ "fsrm", "FSRM" }, { "avx512_vp2intersect", "AVX512VP2INTERSECT" },
	{ "srbds_ctrl", "SRBDS_CTRL" }, { "md_clear", "MD_CLEAR" },
	{ "rtm_always_abort", "RTM_ALWAYS_ABORT" }, { "serialize", "SERIALIZE" },
	{ "hybrid_cpu", "HYBRID_CPU" }, { "tsxldtrk", "TSXLDTRK" }, { "pconfig", "PCONFIG" },
	{ "ibt", "CETIBT" }, { "amx_bf16", "AMXBF16" }, { "avx512_fp16", "AVX512FP16" },
	{ "amx_tile", "AMXTILE" }, { "amx_int8", "AMXINT8" }, { "ibpb", "IBPB" },
	{ "stibp", "STIBP" }, { "flush_l1d", "FLUSH_L1D" }, { "arch_capabilities", "IA32_ARCH_CAP" },
	{ "core_capabilities", "IA32_CORE_CAP" }, { "ssbd", "SPEC_CTRL_SSBD" },
	{ "avx_vnni", "AVXVNNI" }, { "avx512_bf16", "AVX512BF16" }, { "cmpccxadd", "CMPCCXADD" },
	{ "fzrm", "MOVSB_ZL" }, { "fsrs", "STOSB_SHORT" }, { "fsrc", "CMPSB_SCADBS_SHORT" },
	{ "amx_fp16", "AMXFP16" }, { "avx_ifma", "AVXIFMA" }, { "lam", "LAM" },
	{ "wrmsrns", "WRMSRNS" }, { "sm3", "SM3_X86" }, { "sm4", "SM4_X86" },
	{ "ipred_ctrl", "IDPRED_CTRL" }, { "rrsba_ctrl", "RRSBA_CTRL" }, { "bhi_ctrl", "BHI_CTRL" },
	{ "xsaveopt", "XSAVEOPT" }, { "xsavec", "XSAVEC" }, { "xgetbv1", "XGETBV1" },
	{ "xsaves", "XSAVES" },
	{ "overflow_recov", "MCAOVERFLOW" }, { "succor", "SUCCOR" }, { "cpb", "CPBOOST" },
	{ "clzero", "CLZERO" }, { "irperf", "MSRIRC" }, { "rdpru", "RDPRU" },
	{ "wbnoinvd", "WBNOINVD" }, { "amd_ppin", "PPIN" }, { "cppc", "CPPC" },
	{ "invlpgb", "INVLPGB" }, { "amd_ibpb", "IBPB" }, { "amd_ibrs", "IBRS" },
	{ "amd_stibp", "STIBP" }, { "amd_stibp_always_on", "STIBP_ALWAYSON" },
	{ "amd_ssbd", "SPEC_CTRL_SSBD" }, { "amd_psfd", "PSFD" },
	{ "npt", "SVMNP" }, { "lbrv", "LBRVIRT" }, { "svm_lock", "SVML" }, { "nrip_save", "NRIPS" },
	{ "tsc_scale", "TSCRATEMSR" }, { "vmcb_clean", "VMCBCLEAN" }, { "flushbyasid", "SVMFBASID" },
	{ "decodeassists", "SVMDA" }, { "pausefilter", "SVMPF" }, { "pfthreshold", "SVMPFT" },
	{ "tdx_guest", "TDX_GUEST" },
};

/* The same, for bits klauspost only looks at on AMD parts. */
static const struct x86map x86map_amd[] = {
	{ "sme", "SME" }, { "sev", "SEV" }, { "vm_page_flush", "MSR_PAGEFLUSH" },
	{ "sev_es", "SEV_ES" }, { "sev_snp", "SEV_SNP" }, { "sme_coherent", "SME_COHERENT" },
	{ "debug_swap", "SEV_DEBUGSWAP" }, { "sbpb", "SBPB" }, { "ibpb_brtype", "IBPB_BRTYPE" },
	{ "srso_no", "SRSO_NO" }, { "srso_user_kernel_no", "SRSO_USER_KERNEL_NO" },
	{ "tsa_sq_no", "TSA_SQ_NO" }, { "tsa_l1_no", "TSA_L1_NO" },
	{ "verw_clear", "TSA_VERW_CLEAR" },
};

/* klauspost's vendor table (CPUID leaf 0 strings; cpuinfo trims them). */
static const struct {
	const char *id, *name;
} x86vendors[] = {
	{ "AMDisbetter!", "AMD" }, { "AuthenticAMD", "AMD" }, { "CentaurHauls", "VIA" },
	{ "GenuineIntel", "Intel" }, { "TransmetaCPU", "Transmeta" }, { "GenuineTMx86", "Transmeta" },
	{ "Geode by NSC", "NSC" }, { "VIA VIA VIA", "VIA" }, { "HygonGenuine", "Hygon" },
	{ "Vortex86 SoC", "SiS" }, { "SiS SiS SiS", "SiS" }, { "RiseRiseRise", "SiS" },
	{ "Genuine  RDC", "RDC" },
};

/* klauspost's x86-64 microarchitecture levels (X64Level), cumulative. */
static const char *const x86_level[4][9] = {
	{ "CMOV", "CMPXCHG8", "X87", "FXSR", "MMX", "SSE", "SSE2" },
	{ "CX16", "LAHF", "POPCNT", "SSE3", "SSE4", "SSE42", "SSSE3" },
	{ "AVX", "AVX2", "BMI1", "BMI2", "F16C", "FMA3", "LZCNT", "MOVBE", "OSXSAVE" },
	{ "AVX512F", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512VL" },
};
static const char *const x86_level_flag[4] = { "X86_64_V1", "X86_64_V2", "X86_64_V3", "X86_64_V4" };

/* upstream's arm64 HWCAP/HWCAP2 table: the kernel's cpuinfo names upper-cased */
static const char *const arm64_caps[] = {
	"FP", "ASIMD", "EVTSTRM", "AES", "PMULL", "SHA1", "SHA2", "CRC32", "ATOMICS", "FPHP",
	"ASIMDHP", "CPUID", "ASIMDRDM", "JSCVT", "FCMA", "LRCPC", "DCPOP", "SHA3", "SM3", "SM4",
	"ASIMDDP", "SHA512", "SVE", "ASIMDFHM", "DIT", "USCAT", "ILRCPC", "FLAGM", "SSBS", "SB",
	"PACA", "PACG", "DCPODP", "SVE2", "SVEAES", "SVEPMULL", "SVEBITPERM", "SVESHA3", "SVESM4",
	"FLAGM2", "FRINT", "SVEI8MM", "SVEF32MM", "SVEF64MM", "SVEBF16", "I8MM", "BF16", "DGH",
	"RNG", "BTI", "MTE", "ECV", "AFP", "RPRES", "MTE3", "SME", "SMEI16I64", "SMEF64F64",
	"SMEI8I32", "SMEF16F32", "SMEB16F32", "SMEF32F32", "SMEFA64", "WFXT", "EBF16", "SVEEBF16",
};

/* upstream's 32-bit arm table: kernel cpuinfo name -> upstream's name */
static const struct {
	const char *linux, *name;
	int arm32_only;
} arm_caps[] = {
	{ "swp", "SWP", 1 }, { "half", "HALF", 1 }, { "thumb", "THUMB", 1 }, { "26bit", "26BIT", 1 },
	{ "fastmult", "FASTMUL", 1 }, { "fpa", "FPA", 1 }, { "vfp", "VFP", 1 }, { "edsp", "EDSP", 1 },
	{ "java", "JAVA", 1 }, { "iwmmxt", "IWMMXT", 1 }, { "crunch", "CRUNCH", 1 },
	{ "thumbee", "THUMBEE", 1 }, { "neon", "NEON", 1 }, { "vfpv3", "VFPv3", 1 },
	{ "vfpv3d16", "VFPv3D16", 1 }, { "tls", "TLS", 1 }, { "vfpv4", "VFPv4", 1 },
	{ "idiva", "IDIVA", 1 }, { "idivt", "IDIVT", 1 }, { "vfpd32", "VFPD32", 1 },
	{ "lpae", "LPAE", 1 }, { "evtstrm", "EVTSTRM", 0 }, { "aes", "AES", 0 },
	{ "pmull", "PMULL", 0 }, { "sha1", "SHA1", 0 }, { "sha2", "SHA2", 0 }, { "crc32", "CRC32", 0 },
};

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

enum cpu_flavour { CPU_UNKNOWN, CPU_X86, CPU_ARM64, CPU_ARM };

/* Whitespace-separated token iteration over a cpuinfo flags line. */
static const char *next_tok(const char *s, char *tok, size_t size)
{
	size_t n = 0;

	while (*s && is_space(*s))
		s++;
	if (!*s)
		return NULL;
	while (*s && !is_space(*s)) {
		if (n + 1 < size)
			tok[n++] = *s;
		s++;
	}
	tok[n] = '\0';
	return s;
}

static int has_tok(const char *line, const char *want)
{
	char tok[64];

	for (const char *p = line; p && (p = next_tok(p, tok, sizeof(tok)));)
		if (strcmp(tok, want) == 0)
			return 1;
	return 0;
}

static long num(const char *s, int base, long def)
{
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, base);
	return errno || *end ? def : v;
}

static const char *x86_vendor(const char *id)
{
	for (size_t i = 0; id && i < sizeof(x86vendors) / sizeof(x86vendors[0]); i++)
		if (strcmp(id, x86vendors[i].id) == 0)
			return x86vendors[i].name;
	return "VendorUnknown";
}

/* The klauspost flag set of an x86 cpuinfo. */
static int x86_flags(const struct cpuinfo *ci, struct strset *s)
{
	const char *vendor = x86_vendor(ci->vendor);
	int amd = strcmp(vendor, "AMD") == 0, intel = strcmp(vendor, "Intel") == 0;
	long family = num(ci->family, 10, 0), model = num(ci->model, 10, 0);
	char tok[64];
	int rc, level = 0;

	for (const char *p = ci->flags; p && (p = next_tok(p, tok, sizeof(tok)));) {
		for (size_t i = 0; i < sizeof(x86map) / sizeof(x86map[0]); i++)
			if (strcmp(tok, x86map[i].linux) == 0 && (rc = set_add(s, x86map[i].kp)) < 0)
				return rc;
		for (size_t i = 0; amd && i < sizeof(x86map_amd) / sizeof(x86map_amd[0]); i++)
			if (strcmp(tok, x86map_amd[i].linux) == 0 &&
			    (rc = set_add(s, x86map_amd[i].kp)) < 0)
				return rc;
	}
	/* what klauspost checks before setting a flag */
	if (!set_has(s, "BMI1"))
		set_del(s, "BMI2");
	if (!set_has(s, "AVX")) {
		set_del(s, "AVX2");
		set_del(s, "AVXVNNI");
		set_del(s, "XOP");
		set_del(s, "FMA4");
	}
	if (!set_has(s, "OSXSAVE"))
		set_del(s, "FMA3");
	/* HTT: the ht bit and more than one thread per core, Intel or AMD only */
	if (!(intel || amd) || num(ci->siblings, 10, 1) <= num(ci->cores, 10, 1))
		set_del(s, "HTT");
	if (set_has(s, "AVX") &&
	    ((intel && family == 6 && model < 60) ||
	     (amd && (family < 23 || (family == 23 && model < 49)))) &&
	    (rc = set_add(s, "AVXSLOW")) < 0)
		return rc;
	/* klauspost reads CPUID.7.0:ECX bit 3 (which is PKU) as AMXFP8 when
	 * the OS saves AVX-512 state; reproduced so the labels match */
	if (has_tok(ci->flags, "pku") && set_has(s, "AVX512F") && (rc = set_add(s, "AMXFP8")) < 0)
		return rc;
	/* AMD parts before family 19h, and some 1Ah, are not affected by TSA */
	if (amd && (family < 0x19 || (family == 0x1a && (model <= 0x4f ||
							 (model >= 0x60 && model <= 0x7f))))) {
		if ((rc = set_add(s, "TSA_L1_NO")) < 0 || (rc = set_add(s, "TSA_SQ_NO")) < 0)
			return rc;
	}
	/* CPUID leaf 0xA fixed counters: every Intel part with architectural
	 * perfmon v2+ has the first three */
	if (intel && has_tok(ci->flags, "arch_perfmon") &&
	    ((rc = set_add(s, "PMU_FIXEDCOUNTER_CYCLES")) < 0 ||
	     (rc = set_add(s, "PMU_FIXEDCOUNTER_INSTRUCTIONS")) < 0 ||
	     (rc = set_add(s, "PMU_FIXEDCOUNTER_REFCYCLES")) < 0))
		return rc;
	if (set_has(s, "SYSCALL") || set_has(s, "SYSEE")) {
		for (level = 0; level < 4; level++) {
			int ok = 1;

			for (size_t i = 0; i < 9 && x86_level[level][i]; i++)
				ok &= set_has(s, x86_level[level][i]);
			if (!ok)
				break;
		}
	}
	for (int i = 0; i < level; i++)
		if ((rc = set_add(s, x86_level_flag[i])) < 0)
			return rc;
	return 0;
}

/* Upper-cases into buf; 0 when it does not fit. */
static int upper(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < size; i++)
		buf[i] = (char)toupper((unsigned char)s[i]);
	buf[i] = '\0';
	return !s[i];
}

static int arm_flags(const struct cpuinfo *ci, enum cpu_flavour fl, struct strset *s)
{
	char tok[64], up[64];
	int rc;

	for (const char *p = ci->features; p && (p = next_tok(p, tok, sizeof(tok)));) {
		const char *name = NULL;

		if (fl == CPU_ARM) {
			for (size_t i = 0; !name && i < sizeof(arm_caps) / sizeof(arm_caps[0]); i++)
				if (strcmp(tok, arm_caps[i].linux) == 0)
					name = arm_caps[i].name;
		} else if (upper(tok, up, sizeof(up))) {
			for (size_t i = 0; !name && i < sizeof(arm64_caps) / sizeof(arm64_caps[0]); i++)
				if (strcmp(up, arm64_caps[i]) == 0)
					name = arm64_caps[i];
		}
		if (name && (rc = set_add(s, name)) < 0)
			return rc;
	}
	return 0;
}

static enum cpu_flavour cpu_flavour(const struct cpuinfo *ci)
{
	char tok[64];

	if (ci->flags)
		return CPU_X86;
	if (!ci->features)
		return CPU_UNKNOWN;
	/* a 32-bit kernel, or an arm64 one answering a 32-bit reader, lists the
	 * AArch32 hwcaps: what upstream's arm build would see */
	for (const char *p = ci->features; (p = next_tok(p, tok, sizeof(tok)));)
		for (size_t i = 0; i < sizeof(arm_caps) / sizeof(arm_caps[0]); i++)
			if (arm_caps[i].arm32_only && strcmp(tok, arm_caps[i].linux) == 0)
				return CPU_ARM;
	return CPU_ARM64;
}

/* cpu.model: x86 from cpuinfo, arm64 from MIDR_EL1 as klauspost decodes it
 * (only readable when the kernel exposes the CPUID hwcap), else unknown. */
static int cpu_model(const struct hostfs *h, const struct cpuinfo *ci, enum cpu_flavour fl,
		     const struct strset *flags, char *vendor, size_t vsize, char *family,
		     char *model)
{
	unsigned long midr = 0;
	char buf[ATTR_SIZE];
	int have = 0;

	snprintf(vendor, vsize, "VendorUnknown");
	strcpy(family, "0");
	strcpy(model, "0");
	if (fl == CPU_X86) {
		snprintf(vendor, vsize, "%s", x86_vendor(ci->vendor));
		snprintf(family, 24, "%ld", num(ci->family, 10, 0));
		snprintf(model, 24, "%ld", num(ci->model, 10, 0));
		return 0;
	}
	if (fl != CPU_ARM64 || !set_has(flags, "CPUID"))
		return 0;
	if (host_attr(h, "sys/devices/system/cpu/cpu0/regs/identification/midr_el1", buf,
		      sizeof(buf)) > 0 && sysfs_parse_hex(buf, &midr) == 0) {
		have = 1;
	} else if (ci->implementer && ci->part) {
		/* the architecture field of every AArch64 MIDR is 0xf */
		midr = ((unsigned long)num(ci->implementer, 0, 0) & 0xff) << 24 |
		       ((unsigned long)num(ci->variant, 0, 0) & 0xf) << 20 | 0xful << 16 |
		       ((unsigned long)num(ci->part, 0, 0) & 0xfff) << 4 |
		       ((unsigned long)num(ci->revision, 0, 0) & 0xf);
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
	if (host_attr(h, "sys/hypervisor/type", buf, sizeof(buf)) > 0 && strcmp(buf, "xen") == 0) {
		snprintf(out, size, "xenhvm");
		return;
	}
	if (host_attr(h, "sys/devices/system/clocksource/clocksource0/available_clocksource", buf,
		      sizeof(buf)) > 0) {
		for (const char *p = buf; (p = next_tok(p, tok, sizeof(tok)));)
			for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
				if (strncmp(tok, clocks[i].clock, strlen(clocks[i].clock)) == 0) {
					snprintf(out, size, "%s", clocks[i].name);
					return;
				}
	}
	if (host_attr(h, "sys/devices/virtual/dmi/id/sys_vendor", buf, sizeof(buf)) > 0)
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
	struct names cpus = { 0 }, pkgs = { 0 };
	char buf[ATTR_SIZE], path[NAME_MAX + 64];
	int dfd = -1, rc, ht = 0, ok = 1;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.topology")) < 0)
		return rc;
	rc = host_list(h, "sys/bus/cpu/devices", &dfd, &cpus);
	if (rc == -FB_ENOMEM)
		goto out;
	if (rc < 0) {
		NLOG_E(lg, "cpu: failed to read devices folder: %s", fb_strerror(rc));
		rc = 0;
		goto out;
	}
	for (size_t i = 0; ok && i < cpus.n; i++) {
		snprintf(path, sizeof(path), "%s/topology/thread_siblings_list", cpus.v[i]);
		if (attr_at(dfd, path, buf, sizeof(buf)) < 0) {
			NLOG_E(lg, "cpu: error while reading %s", path);
			ok = 0;
			break;
		}
		ht |= strpbrk(buf, ",-") != NULL;
		snprintf(path, sizeof(path), "%s/topology/physical_package_id", cpus.v[i]);
		if (attr_at(dfd, path, buf, sizeof(buf)) < 0) {
			NLOG_E(lg, "cpu: error while reading %s", path);
			ok = 0;
			break;
		}
		for (size_t k = 0; k <= pkgs.n; k++) {
			if (k == pkgs.n) {
				if ((rc = names_push(&pkgs, buf)) < 0)
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
		    (rc = label(labels, "cpu", "hardware_multithreading", ht ? "true" : "false",
				lg)) < 0)
			goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	names_free(&cpus);
	names_free(&pkgs);
	return rc;
}

/* intel_idle's max_cstate (amd64 only upstream). 1: a set to publish. */
static int cpu_cstate(const struct hostfs *h, struct features *f, struct json *labels,
		      const struct fb_log *lg)
{
	char buf[ATTR_SIZE];
	long n;
	int rc;

	if (host_exists(h, "sys/devices/system/cpu") != 1) {
		NLOG_E(lg, "cpu: unable to detect cstate status");
		return 0;
	}
	if (host_exists(h, "sys/devices/system/cpu/cpuidle") == 0)
		return features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (host_attr(h, "sys/devices/system/cpu/cpuidle/current_driver", buf, sizeof(buf)) < 0) {
		NLOG_E(lg, "cpu: cannot get driver for cpuidle");
		return 0;
	}
	if (strcmp(buf, "intel_idle") != 0)
		return features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (host_attr(h, "sys/module/intel_idle/parameters/max_cstate", buf, sizeof(buf)) < 0 ||
	    (n = num(buf, 10, -1)) == -1) {
		NLOG_E(lg, "cpu: cannot determine cstate from max_cstate");
		return 0;
	}
	if ((rc = features_attr(f, "cpu.cstate", "enabled", n > 0 ? "true" : "false")) < 0)
		return rc;
	return label(labels, "cpu", "cstate.enabled", n > 0 ? "true" : "false", lg);
}

/* intel_pstate status, turbo and the common scaling governor (amd64 only). */
static int cpu_pstate(const struct hostfs *h, struct features *f, struct json *labels,
		      const struct fb_log *lg)
{
	static const char *const keys[] = { "scaling_governor", "status", "turbo" };
	char status[ATTR_SIZE], turbo[8] = "", gov[ATTR_SIZE] = "", buf[ATTR_SIZE];
	char path[NAME_MAX + 64];
	struct names pol = { 0 };
	const char *vals[3];
	int rc, dfd = -1;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.pstate")) < 0)
		return rc;
	if (host_exists(h, "sys/devices/system/cpu") != 1 ||
	    host_exists(h, "sys/devices/system/cpu/intel_pstate") == 0)
		return 0;
	if (host_attr(h, "sys/devices/system/cpu/intel_pstate/status", status, sizeof(status)) < 0) {
		NLOG_E(lg, "cpu: failed to detect pstate");
		return 0;
	}
	if (strcmp(status, "off") == 0)
		return 0;
	if (host_attr(h, "sys/devices/system/cpu/intel_pstate/no_turbo", buf, sizeof(buf)) < 0)
		NLOG_E(lg, "cpu: can't detect whether turbo boost is enabled");
	else
		strcpy(turbo, buf[0] == '0' ? "true" : "false");
	if (strcmp(status, "active") == 0 &&
	    (rc = host_list(h, "sys/devices/system/cpu/cpufreq", &dfd, &pol)) == 0) {
		for (size_t i = 0; i < pol.n; i++) {
			snprintf(path, sizeof(path), "%s/affected_cpus", pol.v[i]);
			if (attr_at(dfd, path, buf, sizeof(buf)) <= 0)
				continue;
			snprintf(path, sizeof(path), "%s/scaling_governor", pol.v[i]);
			if (attr_at(dfd, path, buf, sizeof(buf)) < 0)
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
	names_free(&pol);
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
		    (rc = label(labels, "cpu", name, vals[i], lg)) < 0)
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

		if (host_file(h, files[i], &buf) < 0)
			continue;
		for (line = buf; line && *line; line = next) {
			char *sp;

			if ((next = strchr(line, '\n')))
				*next++ = '\0';
			if (strncmp(line, res, strlen(res)) != 0)
				continue;
			if ((sp = strchr(line, ' ')))
				v = num(sp + 1, 10, -1);
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
	return host_attr(h, rel, buf, sizeof(buf)) > 0 && (buf[0] == '1' || buf[0] == 'Y');
}

/* cpu.security (amd64): SGX, TDX and SEV as the kernel reports them. */
static int cpu_security(const struct hostfs *h, const struct strset *flags, struct features *f,
			struct json *labels, const struct fb_log *lg)
{
	struct { const char *k; char v[24]; } el[11];
	size_t n = 0;
	struct names nodes = { 0 };
	unsigned long long epc = 0;
	int rc, dfd = -1;
	long v;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.security")) < 0)
		return rc;
	if (set_has(flags, "SGX") &&
	    (rc = host_list(h, "sys/devices/system/node", &dfd, &nodes)) != -FB_ENOMEM) {
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
	names_free(&nodes);
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

		if (host_file(h, "sys/module/kvm_intel/parameters/tdx", &tdx) >= 0 &&
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
	if (set_has(flags, "TDX_GUEST")) {
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
		if ((rc = label(labels, "cpu", name, el[i].v, lg)) < 0)
			return rc;
	}
	return 0;
}

int nfdsrc_cpu(const struct hostfs *h, const struct nfdsrc_config *c, struct features *f,
	       struct json *labels, const struct fb_log *lg)
{
	struct strset flags = { 0 };
	struct cpuinfo ci;
	enum cpu_flavour fl = CPU_UNKNOWN;
	char *buf = NULL, vendor[64], family[24], model[24], hv[ATTR_SIZE];
	ssize_t n;
	int rc;

	n = host_head(h, "proc/cpuinfo", 64 << 10, &buf);
	if (n == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (n < 0) {
		NLOG_E(lg, "cpu: failed to read cpuinfo: %s", fb_strerror((int)n));
		memset(&ci, 0, sizeof(ci));
	} else {
		parse_cpuinfo(buf, &ci);
		fl = cpu_flavour(&ci);
	}
	if (fl == CPU_X86)
		rc = x86_flags(&ci, &flags);
	else
		rc = arm_flags(&ci, fl, &flags);
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
		int pass = c->cpu_whitelist.n ? list_has(&c->cpu_whitelist, flags.v[i])
					      : !list_has(&c->cpu_blacklist, flags.v[i]);

		if ((rc = features_flag(f, "cpu.cpuid", flags.v[i])) < 0)
			goto out;
		snprintf(name, sizeof(name), "cpuid.%s", flags.v[i]);
		if (pass && (rc = label_true(labels, "cpu", name, lg)) < 0)
			goto out;
	}
	if (fl == CPU_X86)
		rc = cpu_cstate(h, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (rc < 0)
		goto out;

	cpu_model(h, &ci, fl, &flags, vendor, sizeof(vendor), family, model);
	hypervisor(h, fl == CPU_X86 && set_has(&flags, "HYPERVISOR"), hv, sizeof(hv));
	squash_invalid(hv);
	if ((rc = features_attr(f, "cpu.model", "family", family)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "hypervisor", hv)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "id", model)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "vendor_id", vendor)) < 0 ||
	    (rc = label(labels, "cpu", "model.family", family, lg)) < 0 ||
	    (rc = label(labels, "cpu", "model.hypervisor", hv, lg)) < 0 ||
	    (rc = label(labels, "cpu", "model.id", model, lg)) < 0 ||
	    (rc = label(labels, "cpu", "model.vendor_id", vendor, lg)) < 0)
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

/* ---- kernel ----------------------------------------------------------- */

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
	    (rc = label(labels, "kernel", "version.full", full, lg)) < 0)
		return rc;
	if (matched) {
		static const char *const names[] = { "major", "minor", "revision" };

		for (int k = 0; k < 3; k++) {
			char name[32];

			/* an unmatched group is still a key, with "" */
			snprintf(name, sizeof(name), "version.%s", names[k]);
			if ((rc = features_attr(f, "kernel.version", names[k], part[k])) < 0 ||
			    (rc = label(labels, "kernel", name, part[k], lg)) < 0)
				return rc;
		}
	}
	return 0;
}

/* Reads the first kernel config of upstream's search list that exists. */
static ssize_t kconfig_read(const struct hostfs *h, const struct nfdsrc_config *c,
			    const char *ver, char **out, const struct fb_log *lg)
{
	static const char *const with_ver[] = {
		"usr/src/linux-%s/.config", "usr/src/linux-rt-%s/.config", "usr/src/linux/.config",
		"usr/lib/modules/%s/config", "usr/lib/ostree-boot/config-%s",
		"usr/lib/kernel/config-%s", "usr/src/linux-headers-%s/.config",
		"lib/modules/%s/build/.config", "usr/src/linux-rt-headers-%s/.config",
		"boot/config-%s",
	};
	static const char *const no_ver[] = { "usr/src/linux/.config" };
	const char *const *list = ver ? with_ver : no_ver;
	size_t n = ver ? sizeof(with_ver) / sizeof(with_ver[0]) : 1;
	const char *cfg = c->kernel_kconfig_file;
	char rel[PATH_MAX];
	ssize_t len;

	*out = NULL;
	if (cfg && cfg[0]) {
		size_t cl = strlen(cfg);

		if (cl > 3 && strcmp(cfg + cl - 3, ".gz") == 0) {
			NLOG_I(lg, "kernel: kconfigFile %s is gzipped, which is not supported; "
				   "searching for a plain config", cfg);
		} else {
			/* a path of the worker's own filesystem, as upstream */
			len = sysfs_read_alloc(AT_FDCWD, cfg, FILE_CAP, out);
			if (len >= 0 || len == -FB_ENOMEM)
				return len;
		}
	}
	NLOG_V(lg, 2, "kernel: /proc/config.gz skipped (gzip is not supported)");
	for (size_t i = 0; i < n; i++) {
		/* the format is one of the fixed strings above */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		if (snprintf(rel, sizeof(rel), list[i], ver) >= (int)sizeof(rel))
			continue;
#pragma GCC diagnostic pop
		len = host_file(h, rel, out);
		if (len >= 0 || len == -FB_ENOMEM)
			return len;
	}
	return -FB_ENOENT;
}

/* A kernel config, parsed: option names without CONFIG_, their values
 * trimmed of quotes, and whether the raw value was exactly y or m. */
struct kconfig {
	const char **name, **value;
	unsigned char *yes;
	size_t n, cap;
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
		if (k->n == k->cap) {
			size_t cap = k->cap ? k->cap * 2 : 1024;
			const char **nn = realloc(k->name, cap * sizeof(*nn)), **nv;
			unsigned char *ny;

			if (nn)
				k->name = nn;
			if (!nn || !(nv = realloc(k->value, cap * sizeof(*nv))))
				return -FB_ENOMEM;
			k->value = nv;
			if (!(ny = realloc(k->yes, cap)))
				return -FB_ENOMEM;
			k->yes = ny;
			k->cap = cap;
		}
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
		if ((rc = label(labels, "kernel", lname, k.yes[j - 1] ? "true" : k.value[j - 1],
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
		while (b < end && is_space(*b))
			b++;
		if (builtin) {
			e = end;
			while (e > b && is_space(e[-1]))
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
			for (e = b; e < end && !is_space(*e); e++)
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

	n = host_attr(h, "proc/sys/kernel/osrelease", raw, sizeof(raw));
	if (n < 0)
		NLOG_E(lg, "kernel: failed to get kernel version: %s", fb_strerror((int)n));
	else
		ver = raw;

	if ((rc = kernel_config(h, c, ver, f, labels, lg)) < 0)
		return rc;

	/* kernel.enabledmodule = loaded + builtin, only when builtin is read */
	n = host_file(h, "proc/modules", &loaded);
	if (n == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (n < 0)
		NLOG_E(lg, "kernel: failed to get loaded kernel modules: %s", fb_strerror((int)n));
	if (ver && snprintf(rel, sizeof(rel), "lib/modules/%s/modules.builtin", ver) <
			   (int)sizeof(rel))
		n = host_file(h, rel, &builtin);
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
	e = host_exists(h, "sys/devices/virtual/misc/kvm");
	if (e < 0)
		NLOG_E(lg, "kernel: failed to detect kvm status");
	else if ((rc = features_attr(f, "kernel.kvm", "enabled", e ? "true" : "false")) < 0)
		goto out;

	if (loaded && (rc = module_flags(loaded, 0, f, "kernel.loadedmodule")) < 0)
		goto out;

	/* kernel.selinux: <sys>/fs must exist; no selinux dir means disabled */
	if (host_exists(h, "sys/fs") != 1) {
		NLOG_E(lg, "kernel: failed to detect selinux status");
	} else if (host_exists(h, "sys/fs/selinux") == 0) {
		if ((rc = features_attr(f, "kernel.selinux", "enabled", "false")) < 0)
			goto out;
	} else if (host_attr(h, "sys/fs/selinux/enforce", buf, sizeof(buf)) < 0) {
		NLOG_E(lg, "kernel: failed to detect selinux status");
	} else {
		int on = buf[0] == '1';

		if ((rc = features_attr(f, "kernel.selinux", "enabled", on ? "true" : "false")) < 0 ||
		    (on && (rc = label_true(labels, "kernel", "selinux.enabled", lg)) < 0))
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

/* ---- memory ----------------------------------------------------------- */

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
	struct names dirs = { 0 };
	int dfd = -1, rc, enabled = 0;

	rc = host_list(h, "sys/kernel/mm/hugepages", &dfd, &dirs);
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
		if (attr_at(dfd, path, total, sizeof(total)) < 0) {
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
		enabled |= num(total, 10, 0) > 0;
	}
	rc = features_attr(f, "memory.hugepages", "enabled", enabled ? "true" : "false");
out:
	if (dfd >= 0)
		close(dfd);
	names_free(&dirs);
	return rc;
}

int nfdsrc_memory(const struct hostfs *h, struct features *f, struct json *labels,
		  const struct fb_log *lg)
{
	struct names nodes = { 0 }, nd = { 0 };
	char *swaps = NULL, buf[32];
	int rc, dfd = -1, dax = 0;
	ssize_t n;

	/* memory.hugepages */
	if ((rc = memory_hugepages(h, f, lg)) < 0)
		return rc;

	/* memory.numa */
	rc = host_list(h, "sys/bus/node/devices", NULL, &nodes);
	if (rc == -FB_ENOMEM)
		goto out;
	if (rc < 0) {
		NLOG_E(lg, "memory: failed to detect NUMA nodes: %s", fb_strerror(rc));
	} else {
		snprintf(buf, sizeof(buf), "%zu", nodes.n);
		if ((rc = features_attr(f, "memory.numa", "is_numa", nodes.n > 1 ? "true" : "false")) < 0 ||
		    (rc = features_attr(f, "memory.numa", "node_count", buf)) < 0 ||
		    (nodes.n > 1 && (rc = label_true(labels, "memory", "numa", lg)) < 0))
			goto out;
	}

	/* memory.nv: one instance per <sys>/bus/nd/devices entry */
	rc = host_list(h, "sys/bus/nd/devices", &dfd, &nd);
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
			has_dt = attr_at(dfd, path, dt, sizeof(dt)) >= 0;
			snprintf(path, sizeof(path), "%s/mode", nd.v[i]);
			has_mode = attr_at(dfd, path, mode, sizeof(mode)) >= 0;
			if ((has_dt && (rc = features_inst_attr(in, "devtype", dt)) < 0) ||
			    (has_mode && (rc = features_inst_attr(in, "mode", mode)) < 0) ||
			    (rc = features_inst_attr(in, "name", nd.v[i])) < 0)
				goto out;
			dax |= has_dt && strcmp(dt, "nd_dax") == 0;
		}
		if ((nd.n && (rc = label_true(labels, "memory", "nv.present", lg)) < 0) ||
		    (dax && (rc = label_true(labels, "memory", "nv.dax", lg)) < 0))
			goto out;
	}

	/* memory.swap: more than the header line in <proc>/swaps */
	n = host_file(h, "proc/swaps", &swaps);
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
			lines += trim(line) > 0;
		}
		if ((rc = features_attr(f, "memory.swap", "enabled", lines > 1 ? "true" : "false")) < 0 ||
		    (lines > 1 && (rc = label_true(labels, "memory", "swap", lg)) < 0))
			goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	names_free(&nodes);
	names_free(&nd);
	free(swaps);
	return rc;
}

/* ---- network ---------------------------------------------------------- */

/* Reads dir/file into the instance as the file's base name; a missing file
 * or EINVAL (speed of a link that is down) is skipped silently. */
static int iface_attr(int dfd, const char *iface, const char *file, struct json *in,
		      char *out, size_t size, const struct fb_log *lg)
{
	char path[NAME_MAX + 40];
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	ssize_t n;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", iface, file);
	n = attr_at(dfd, path, out, size);
	if (n < 0) {
		if (n != -FB_ENOENT && !(n == -FB_EIO && errno == EINVAL))
			NLOG_E(lg, "network: failed to read %s: %s", path, fb_strerror((int)n));
		return 0;
	}
	return features_inst_attr(in, base, out);
}

static int sriov_positive(const char *v, const char *attr, const char *iface,
			  const struct fb_log *lg)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (!*v || *end || errno) {
		NLOG_E(lg, "network: failed to parse %s of %s: \"%s\"", attr, iface, v);
		return 0;
	}
	return n > 0;
}

int nfdsrc_network(const struct hostfs *h, struct features *f, struct json *labels,
		   const struct fb_log *lg)
{
	static const char *const dev_files[] = { "mtu", "operstate", "speed",
						 "device/sriov_numvfs", "device/sriov_totalvfs" };
	struct names ifs = { 0 };
	int dfd = -1, rc, capable = 0, configured = 0;

	rc = host_list(h, "sys/class/net", &dfd, &ifs);
	if (rc < 0) {
		if (rc != -FB_ENOMEM)
			NLOG_E(lg, "network: failed to list network interfaces: %s", fb_strerror(rc));
		goto out;
	}
	if ((rc = features_ensure(f, FEATURES_INSTANCES, "network.device")) < 0 ||
	    (rc = features_ensure(f, FEATURES_INSTANCES, "network.virtual")) < 0)
		goto out;
	for (size_t i = 0; i < ifs.n; i++) {
		const char *name = ifs.v[i];
		char path[NAME_MAX + 16], v[5][ATTR_SIZE];
		struct stat st;
		struct json *in;
		int dev;

		if (strcmp(name, "bonding_masters") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/device", name);
		dev = fstatat(dfd, path, &st, 0) == 0;
		if (!(in = features_instance(f, dev ? "network.device" : "network.virtual"))) {
			rc = -FB_ENOMEM;
			goto out;
		}
		/* members in key order: mtu, name, operstate, speed, sriov_* */
		if ((rc = iface_attr(dfd, name, dev_files[0], in, v[0], ATTR_SIZE, lg)) < 0 ||
		    (rc = features_inst_attr(in, "name", name)) < 0)
			goto out;
		for (size_t k = 1; k < (dev ? 5u : 3u); k++)
			if ((rc = iface_attr(dfd, name, dev_files[k], in, v[k], ATTR_SIZE, lg)) < 0)
				goto out;
		if (!dev)
			continue;
		if (json_get(in, "sriov_totalvfs"))
			capable |= sriov_positive(v[4], "sriov_totalvfs", name, lg);
		if (json_get(in, "sriov_numvfs"))
			configured |= sriov_positive(v[3], "sriov_numvfs", name, lg);
	}
	if ((capable && (rc = label_true(labels, "network", "sriov.capable", lg)) < 0) ||
	    (configured && (rc = label_true(labels, "network", "sriov.configured", lg)) < 0))
		goto out;
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	names_free(&ifs);
	return rc;
}

/* ---- storage ---------------------------------------------------------- */

int nfdsrc_storage(const struct hostfs *h, struct features *f, struct json *labels,
		   const struct fb_log *lg)
{
	static const char *const queue[] = { "dax", "name", "nr_zones", "rotational", "zoned" };
	struct names devs = { 0 };
	int dfd = -1, rc, nonrot = 0;

	rc = host_list(h, "sys/block", &dfd, &devs);
	if (rc < 0) {
		if (rc != -FB_ENOMEM)
			NLOG_E(lg, "storage: failed to list block devices: %s", fb_strerror(rc));
		goto out;
	}
	if ((rc = features_ensure(f, FEATURES_INSTANCES, "storage.block")) < 0)
		goto out;
	for (size_t i = 0; i < devs.n; i++) {
		struct json *in = features_instance(f, "storage.block");

		if (!in) {
			rc = -FB_ENOMEM;
			goto out;
		}
		for (size_t k = 0; k < sizeof(queue) / sizeof(queue[0]); k++) {
			char path[NAME_MAX + 24], v[ATTR_SIZE];

			if (strcmp(queue[k], "name") == 0) {
				if ((rc = features_inst_attr(in, "name", devs.v[i])) < 0)
					goto out;
				continue;
			}
			snprintf(path, sizeof(path), "%s/queue/%s", devs.v[i], queue[k]);
			if (attr_at(dfd, path, v, sizeof(v)) < 0) {
				NLOG_V(lg, 3, "storage: failed to read %s", path);
				continue;
			}
			if ((rc = features_inst_attr(in, queue[k], v)) < 0)
				goto out;
			nonrot |= strcmp(queue[k], "rotational") == 0 && strcmp(v, "0") == 0;
		}
	}
	if (nonrot && (rc = label_true(labels, "storage", "nonrotationaldisk", lg)) < 0)
		goto out;
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	names_free(&devs);
	return rc;
}

/* ---- system ----------------------------------------------------------- */

static int system_osrelease(const struct hostfs *h, struct features *f, struct json *labels,
			    const struct fb_log *lg)
{
	static const char *const label_keys[] = { "ID", "VERSION_ID", "VERSION_ID.major",
						  "VERSION_ID.minor" };
	char *buf, *line, *next, major[32] = "", minor[32] = "";
	const char *vid;
	ssize_t n = host_file(h, "etc/os-release", &buf);
	int rc = 0;

	if (n == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (n < 0) {
		NLOG_E(lg, "system: failed to get os-release: %s", fb_strerror((int)n));
		return 0;
	}
	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "system.osrelease")) < 0)
		goto out;
	/* ^(\w+)=(.+), the value trimmed of " and ' at both ends */
	for (line = buf; line; line = next) {
		char *eq, *v, *e;
		size_t len;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		len = strlen(line);
		if (len && line[len - 1] == '\r') /* bufio.ScanLines drops it */
			line[--len] = '\0';
		for (eq = line; isalnum((unsigned char)*eq) || *eq == '_'; eq++)
			;
		if (eq == line || *eq != '=' || !eq[1])
			continue;
		*eq = '\0';
		v = eq + 1;
		while (*v == '"' || *v == '\'')
			v++;
		e = v + strlen(v);
		while (e > v && (e[-1] == '"' || e[-1] == '\''))
			*--e = '\0';
		if ((rc = features_attr(f, "system.osrelease", line, v)) < 0)
			goto out;
	}
	/* VERSION_ID.major/.minor from ^(\d+)(\.(\d+))?(\..*)?$, set when
	 * not empty */
	vid = json_get_str(features_attrs(f, "system.osrelease"), "VERSION_ID", NULL);
	if (vid) {
		size_t a = strspn(vid, "0123456789"), b = 0;

		if (a && a < sizeof(major) && (vid[a] == '\0' || vid[a] == '.')) {
			memcpy(major, vid, a);
			major[a] = '\0';
			if (vid[a] == '.') {
				b = strspn(vid + a + 1, "0123456789");
				if (b && b < sizeof(minor) &&
				    (vid[a + 1 + b] == '\0' || vid[a + 1 + b] == '.')) {
					memcpy(minor, vid + a + 1, b);
					minor[b] = '\0';
				}
			}
		}
		if ((major[0] && (rc = features_attr(f, "system.osrelease", "VERSION_ID.major",
						     major)) < 0) ||
		    (minor[0] && (rc = features_attr(f, "system.osrelease", "VERSION_ID.minor",
						     minor)) < 0))
			goto out;
	}
	for (size_t i = 0; labels && i < sizeof(label_keys) / sizeof(label_keys[0]); i++) {
		const char *v = json_get_str(features_attrs(f, "system.osrelease"), label_keys[i],
					     NULL);
		char name[48];

		snprintf(name, sizeof(name), "os_release.%s", label_keys[i]);
		if (v && (rc = label(labels, "system", name, v, lg)) < 0)
			goto out;
	}
out:
	free(buf);
	return rc;
}

int nfdsrc_system(const struct hostfs *h, const char *nodename, struct features *f,
		  struct json *labels, const struct fb_log *lg)
{
	static const char *const dmi[] = {
		"bios_date", "bios_vendor", "bios_version", "board_asset_tag", "board_name",
		"board_vendor", "board_version", "chassis_asset_tag", "chassis_type",
		"chassis_vendor", "chassis_version", "product_family", "product_name",
		"product_sku", "product_version", "sys_vendor",
	};
	int rc;

	for (size_t i = 0; i < sizeof(dmi) / sizeof(dmi[0]); i++) {
		char rel[64], v[ATTR_SIZE];

		snprintf(rel, sizeof(rel), "sys/devices/virtual/dmi/id/%s", dmi[i]);
		if (host_attr(h, rel, v, sizeof(v)) < 0) {
			NLOG_V(lg, 2, "system: failed to get DMI entry %s", dmi[i]);
			continue;
		}
		if ((rc = features_attr(f, "system.dmiid", dmi[i], v)) < 0)
			return rc;
	}
	if ((rc = features_attr(f, "system.name", "nodename", nodename ? nodename : "")) < 0)
		return rc;
	return system_osrelease(h, f, labels, lg);
}

/* ---- label checks ----------------------------------------------------- */

int nfdsrc_whitelist_setup(regex_t *re, const char *pattern, struct fb_errinfo *ei)
{
	char msg[128];
	int rc;

	if (!pattern || !pattern[0])
		return 0;
	rc = re_compile(re, pattern, REG_NOSUB, msg, sizeof(msg));
	if (rc == -FB_EINVAL)
		return fb_errinfo_set(ei, FB_EINVAL, 0, "core.labelWhiteList", msg);
	return rc < 0 ? rc : 1;
}

int nfdsrc_labels_filter(struct json *labels, const regex_t *whitelist, const struct fb_log *lg)
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
			 regexec(whitelist, (slash = strchr(name, '/')) ? slash + 1 : name, 0, NULL, 0) != 0)
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
