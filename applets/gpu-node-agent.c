/* gpu-node-agent: one PhysicalGPU object per accelerator, and a vendor label on the Node.
 *
 * Mirrors the Deckhouse `gpu` module's gpu-node-agent
 * (https://deckhouse.io/modules/gpu/; public prototype
 * aleksandr-podmoskovniy/gpu-control-plane, images/gpu-artifact): scan the
 * host's PCI devices and the PCI ID database, keep one cluster-scoped
 * PhysicalGPU (gpu.deckhouse.io/v1alpha1) per device whose class and vendor
 * are configured, and label the Node gpu.deckhouse.io/vendor=<vendor>.
 * Deliberate deviations (the module's own source is not public; the formats
 * are ours and documented in README.md):
 * - Vendors come from the gpu-supported-vendors ConfigMap (data: vendor name
 *   -> comma list of 4-hex PCI vendor IDs, optional "classes") or
 *   --vendors-file, not only NVIDIA as in the prototype.
 * - Objects are named <node>-<pci address> (stable across rescans), not
 *   <node>-<index>-<vendor>-<device>.
 * - status has nodeInfo, pciInfo (plus subsystem, revision, numaNode,
 *   iommuGroup, bootVGA, link), currentState{driver, driverType} with None
 *   and Other added to the driverType enum, and the conditions Present and
 *   DriverBound. No capabilities: they need NVML/ROCm, which we do not link.
 * - No watch of PhysicalGPU objects: the agent remembers what it wrote and
 *   re-lists every --resync (default 5m), so a deleted or edited object is
 *   repaired then. No Events are emitted.
 * - API errors never end the daemon: it backs off (800 ms to 30 s) and
 *   converges later. --oneshot syncs once and exits 1 when it could not.
 * - Flags: --host-prefix (as nfd-worker) replaces --sysfs-path and
 *   --os-release-path; --pci-ids is repeatable instead of a comma list.
 *   --health-probe-bind-address HOST:PORT and $HEALTH_PROBE_BIND_ADDRESS are
 *   the prototype's (default :8081); /metrics is served on the same address,
 *   and --port N (ours) means ":N". A bad address exits 1 naming it.
 */
#include "applets.h"

#include "../core/app.h"
#include "../core/err.h"
#include "../core/hostfs.h"
#include "../core/http.h"
#include "../core/ids.h"
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/labels.h"
#include "../core/log.h"
#include "../core/loop.h"
#include "../core/metrics.h"
#include "../core/opt.h"
#include "../core/pci.h"
#include "../core/pgpu.h"
#include "../core/sysfs.h"
#include "../core/version.h"
#include "../core/yaml.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"Usage: gpu-node-agent [OPTIONS]\n"
	"\n"
	"Find the node's GPUs and accelerators (PCI class 03, 12, 0b40 from the vendors\n"
	"in the gpu-supported-vendors ConfigMap), keep one PhysicalGPU object per device\n"
	"and label the Node gpu.deckhouse.io/vendor=VENDOR. --oneshot --no-publish prints\n"
	"the devices as JSON instead.\n";

#define GROUP PGPU_GROUP
#define DEFAULT_CM "gpu-supported-vendors"
#define VMAP_MAX 32       /* vendors */
#define VMAP_IDS 16       /* ids per vendor */
#define VMAP_CLASSES 16
#define VENDOR_NAME_MAX 57 /* "<vendor>.count" must be a label name */
#define DEBOUNCE_MS 1000

#if defined(__SANITIZE_ADDRESS__)
#define FREE_AT_EXIT(x) x
#else
#define FREE_AT_EXIT(x) ((void)0)
#endif

/* The vendor map: which devices are ours and under which vendor name. */
struct vmap {
	size_t n, ncls;
	struct {
		char name[VENDOR_NAME_MAX + 1];
		unsigned id[VMAP_IDS];
		size_t nid;
	} v[VMAP_MAX];
	char cls[VMAP_CLASSES][7]; /* hex prefixes of the class code: "03", "0b40" */
};

struct agent {
	struct fb_log log;
	struct hostfs h;
	struct ids *ids;
	struct vmap vm;
	int vm_ready;             /* the ConfigMap (or its absence) has been read */
	const char *vendors_file;
	char node[254], cm_ns[254], cm_name[254];
	struct json *node_info;   /* status.nodeInfo, owned; made once */
	struct loop *l;
	struct kube *k;
	struct http_server *srv;
	struct metrics m;
	int m_devices, m_syncs, m_errors, m_build;
	struct json *server;      /* our PhysicalGPUs as the server has them, name -> object; owned; NULL: list first */
	struct json *node_labels; /* our labels on the Node as last seen, owned; NULL: GET first */
	struct kube_watch *cmw;   /* the ConfigMap watch */
	char cm_rv[64];           /* resume the watch from here; "": list first */
	long long cm_watch_ms;    /* when the ConfigMap watch started */
	int cm_fails;             /* failed watches in a row with no event */
	long long resync_ms;
	int retry_timer, debounce_timer, cm_timer;
	struct kube_backoff bo;
	struct kube_backoff cmbo; /* the ConfigMap watch's own: reset by a watch that lived 30 s */
	int nl_fd;
	int ready;
};

/* ---- small helpers ------------------------------------------------------ */

/* The device label value: the part inside the first [...] of the pci.ids
 * name when there is one ("GA100GL [A30 PCIe]" -> "a30-pcie"), else the
 * whole name; the device id without a name. */
static void device_label(const char *name, const char *id, char *out)
{
	char buf[256];
	const char *o = name ? strchr(name, '[') : NULL, *c = o ? strchr(o, ']') : NULL;

	if (o && c && c > o + 1) {
		snprintf(buf, sizeof(buf), "%.*s", (int)(c - o - 1), o + 1);
		name = buf;
	}
	pgpu_normalise(name && *name ? name : id, out, LABELS_NAME_MAX);
	if (!*out)
		pgpu_normalise(id, out, LABELS_NAME_MAX);
}

static void now_rfc3339(char *out, size_t size)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Reads a small host file (through hostfs, symlinks re-rooted) into a new
 * buffer. Returns its length or a negative fb_err. */
static ssize_t host_file(const struct hostfs *h, const char *rel, size_t cap, char **out)
{
	char path[PATH_MAX];

	*out = NULL;
	if (hostfs_resolve(h, rel, path, sizeof(path)) < 0)
		return -FB_E2BIG;
	return sysfs_read_alloc(AT_FDCWD, path, cap, out);
}

static int json_set_int(struct json *o, const char *key, long long v)
{
	return json_set_take(o, key, json_new_number((double)v));
}

/* ---- the vendor map ----------------------------------------------------- */

static void vmap_default(struct vmap *vm)
{
	static const struct { const char *name; unsigned id; } d[] = {
		{ "amd", 0x1002 }, { "intel", 0x8086 }, { "nvidia", 0x10de },
	};

	memset(vm, 0, sizeof(*vm));
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		snprintf(vm->v[i].name, sizeof(vm->v[i].name), "%s", d[i].name);
		vm->v[i].id[0] = d[i].id;
		vm->v[i].nid = 1;
	}
	vm->n = sizeof(d) / sizeof(d[0]);
	strcpy(vm->cls[0], "03");
	strcpy(vm->cls[1], "12");
	strcpy(vm->cls[2], "0b40");
	vm->ncls = 3;
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* Splits a comma list (spaces around items allowed) and calls fn on each
 * item; an empty list or item makes it fail. Returns 0 or -1. */
static int each_item(const char *s, int (*fn)(void *ctx, const char *item, size_t len), void *ctx)
{
	if (!*s)
		return -1;
	for (;;) {
		const char *e = strchr(s, ','), *end = e ? e : s + strlen(s);

		while (s < end && *s == ' ')
			s++;
		while (end > s && end[-1] == ' ')
			end--;
		if (end == s || fn(ctx, s, (size_t)(end - s)) < 0)
			return -1;
		if (!e)
			return 0;
		s = e + 1;
	}
}

static int add_id(void *ctx, const char *s, size_t len)
{
	unsigned *out = ctx;   /* out[0]: count, out[1..]: ids */
	char buf[8];

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	if (len != 4 || !is_hex(s, 4) || out[0] >= VMAP_IDS)
		return -1;
	memcpy(buf, s, 4);
	buf[4] = '\0';
	out[1 + out[0]++] = (unsigned)strtoul(buf, NULL, 16);
	return 0;
}

static int add_class(void *ctx, const char *s, size_t len)
{
	struct vmap *vm = ctx;

	if ((len != 2 && len != 4 && len != 6) || !is_hex(s, len) || vm->ncls >= VMAP_CLASSES)
		return -1;
	for (size_t i = 0; i < len; i++)
		vm->cls[vm->ncls][i] = (char)tolower((unsigned char)s[i]);
	vm->cls[vm->ncls++][len] = '\0';
	return 0;
}

/* The map from a ConfigMap's data (or a vendors file's map): bad entries are
 * warned about and left out; no usable vendor leaves the map empty (nothing
 * is ours), a bad "classes" keeps the default classes. */
static void vmap_from_data(struct vmap *vm, const struct json *data, const char *what,
			   const struct fb_log *lg)
{
	struct vmap def;
	char esc[128];

	vmap_default(&def);
	memset(vm, 0, sizeof(*vm));
	for (const struct json *e = json_child(data); e; e = json_next(e)) {
		const char *k = json_key(e), *v = json_str(e);
		unsigned ids[1 + VMAP_IDS] = { 0 };

		log_escape(k, strlen(k), esc, sizeof(esc));
		if (!v) {
			LOG_W(lg, "%s: \"%s\": not a string (entry ignored)", what, esc);
			continue;
		}
		if (strcmp(k, "classes") == 0) {
			if (each_item(v, add_class, vm) < 0) {
				LOG_W(lg, "%s: classes: want a comma list of 2, 4 or 6 hex digits (default 03,12,0b40 used)",
				      what);
				vm->ncls = 0;
			}
			continue;
		}
		if (!labels_valid_name(k, strlen(k)) || strlen(k) > VENDOR_NAME_MAX) {
			LOG_W(lg, "%s: vendor name \"%s\" is not a valid label value of at most %d characters (entry ignored)",
			      what, esc, VENDOR_NAME_MAX);
			continue;
		}
		if (each_item(v, add_id, ids) < 0) {
			char ev[128];

			LOG_W(lg, "%s: %s: \"%s\" is not a comma list of 4-hex PCI vendor IDs (entry ignored)", what,
			      esc, log_escape(v, strlen(v), ev, sizeof(ev)));
			continue;
		}
		if (vm->n >= VMAP_MAX) {
			LOG_W(lg, "%s: more than %d vendors (%s ignored)", what, VMAP_MAX, esc);
			continue;
		}
		snprintf(vm->v[vm->n].name, sizeof(vm->v[vm->n].name), "%s", k);
		vm->v[vm->n].nid = ids[0];
		memcpy(vm->v[vm->n].id, ids + 1, ids[0] * sizeof(unsigned));
		vm->n++;
	}
	if (!vm->ncls) {
		memcpy(vm->cls, def.cls, sizeof(def.cls));
		vm->ncls = def.ncls;
	}
	if (!vm->n)
		LOG_W(lg, "%s: no usable vendor: no device is a GPU", what);
}

static const char *vmap_vendor(const struct vmap *vm, unsigned id)
{
	for (size_t i = 0; i < vm->n; i++)
		for (size_t j = 0; j < vm->v[i].nid; j++)
			if (vm->v[i].id[j] == id)
				return vm->v[i].name;
	return NULL;
}

static int vmap_class(const struct vmap *vm, const char *cls)
{
	for (size_t i = 0; i < vm->ncls; i++)
		if (strncmp(cls, vm->cls[i], strlen(vm->cls[i])) == 0)
			return 1;
	return 0;
}

/* --vendors-file: YAML or JSON, the data map itself or a whole ConfigMap. */
static int vmap_load_file(struct vmap *vm, const char *path, const struct fb_log *lg)
{
	char *text = NULL, msg[600];
	ssize_t n = sysfs_read_alloc(AT_FDCWD, path, 64 << 10, &text);
	struct fb_errinfo ei;
	struct json *doc;
	const struct json *data;

	fb_errinfo_init(&ei);
	if (n < 0) {
		LOG_E(lg, "--vendors-file %s: %s", path, fb_strerror((int)n));
		return -1;
	}
	doc = yaml_parse(text, (size_t)n, path, &ei);
	free(text);
	if (!doc) {
		LOG_E(lg, "--vendors-file: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return -1;
	}
	data = json_get(doc, "data") && json_type(json_get(doc, "data")) == JSON_OBJECT ? json_get(doc, "data") : doc;
	if (json_type(data) != JSON_OBJECT) {
		LOG_E(lg, "--vendors-file %s: not a map of vendor names to PCI vendor IDs", path);
		json_free(doc);
		return -1;
	}
	vmap_from_data(vm, data, path, lg);
	json_free(doc);
	return 0;
}

/* ---- discovery ---------------------------------------------------------- */

static const char *const virt_words[] = {
	"kvm", "qemu", "vmware", "virtualbox", "xen", "hv", "hyper-v", "microsoft", "openstack",
	"amazon", "ec2", "google", "compute engine", "digitalocean", "parallels", "bhyve", "bochs",
};

/* 1 bare metal, 0 virtual, -1 unknown: the prototype's rule (cpuinfo's
 * hypervisor flag, then DMI vendor and product names). */
static int bare_metal(const struct hostfs *h)
{
	char *text = NULL, dmi[2][256] = { "", "" };
	static const char *const files[] = { "sys/devices/virtual/dmi/id/sys_vendor",
					     "sys/devices/virtual/dmi/id/product_name" };
	ssize_t n = host_file(h, "proc/cpuinfo", 16 << 20, &text);
	int virt = 0;

	for (ssize_t i = 0; n > 0 && i + 10 <= n && !virt; i++)
		if (memcmp(text + i, "hypervisor", 10) == 0 && (i == 0 || !isalnum((unsigned char)text[i - 1])) &&
		    (i + 10 == n || !isalnum((unsigned char)text[i + 10]) || text[i + 10] == '_'))
			virt = text[i + 10] != '_';
	free(text);
	if (virt)
		return 0;
	for (size_t f = 0; f < 2; f++) {
		char *t = NULL;
		ssize_t m = host_file(h, files[f], sizeof(dmi[f]), &t);

		if (m > 0) {
			for (ssize_t i = 0; i < m; i++)
				dmi[f][i] = (char)tolower((unsigned char)t[i]);
			dmi[f][m] = '\0';
			while (m > 0 && isspace((unsigned char)dmi[f][m - 1]))
				dmi[f][--m] = '\0';
		}
		free(t);
	}
	if (!dmi[0][0] && !dmi[1][0])
		return -1;
	for (size_t i = 0; i < sizeof(virt_words) / sizeof(virt_words[0]); i++)
		if (strstr(dmi[0], virt_words[i]) || strstr(dmi[1], virt_words[i]))
			return 0;
	return 1;
}

/* An os-release value, unquoted, into out ("" when absent). */
static void os_release_value(const char *text, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *e = strchr(p, '\n');
		size_t len;

		if (strncmp(p, key, kl) != 0 || p[kl] != '=')
			continue;
		p += kl + 1;
		len = e ? (size_t)(e - p) : strlen(p);
		if (len >= 2 && (p[0] == '"' || p[0] == '\'') && p[len - 1] == p[0]) {
			p++;
			len -= 2;
		}
		snprintf(out, size, "%.*s", (int)len, p);
		return;
	}
}

/* status.nodeInfo: OS, kernel, bare metal. Owned by the caller. */
static struct json *node_info(struct agent *a)
{
	struct json *ni = json_new_object(), *os = json_new_object();
	char *text = NULL, v[256];
	int bm = bare_metal(&a->h);

	if (!ni || !os)
		goto nomem;
	json_set_str(ni, "nodeName", a->node);
	if (host_file(&a->h, "etc/os-release", 64 << 10, &text) >= 0) {
		static const char *const keys[][2] = { { "ID", "id" }, { "VERSION_ID", "version" },
						      { "PRETTY_NAME", "name" } };

		for (size_t i = 0; i < 3; i++) {
			os_release_value(text, keys[i][0], v, sizeof(v));
			if (*v)
				json_set_str(os, keys[i][1], v);
		}
	} else {
		LOG_W(&a->log, "etc/os-release: cannot read it (nodeInfo.os left empty)");
	}
	free(text);
	if (json_set_take(ni, "os", os) < 0) {
		os = NULL;
		goto nomem;
	}
	os = NULL;
	if (host_file(&a->h, "proc/sys/kernel/osrelease", 256, &text) > 0) {
		text[strcspn(text, "\n")] = '\0';
		json_set_str(ni, "kernelRelease", text);
	}
	free(text);
	if (bm >= 0)
		json_set_take(ni, "bareMetal", json_new_bool(bm));
	return ni;
nomem:
	json_free(os);
	json_free(ni);
	return NULL;
}

static struct json *condition(const char *type, int ok, const char *reason, const char *msg)
{
	struct json *c = json_new_object();

	if (c && (json_set_str(c, "type", type) < 0 || json_set_str(c, "status", ok ? "True" : "False") < 0 ||
		  json_set_str(c, "reason", reason) < 0 || json_set_str(c, "message", msg) < 0)) {
		json_free(c);
		return NULL;
	}
	return c;
}

/* {id, name} with the name only when the database knows it. */
static struct json *id_name(const char *idkey, const char *id, const char *name)
{
	struct json *o = json_new_object();

	if (o && (json_set_str(o, idkey, id) < 0 || (name && json_set_str(o, "name", name) < 0))) {
		json_free(o);
		return NULL;
	}
	return o;
}

/* Reads the attributes pci_scan does not give us from the device
 * directory into pi, and the bound driver (the link, not uevent: it is what
 * a rebind changes) into driver ("" when unbound). Odd values are warned
 * about and left out. */
static void device_extras(struct agent *a, const struct pci_dev *d, struct json *pi, char *driver,
			  size_t dsize)
{
	char rel[64], buf[64], esc[96];
	ssize_t n;
	int fd;

	driver[0] = '\0';
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", d->addr);
	fd = hostfs_open(&a->h, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return;
	if ((n = sysfs_read(fd, "revision", buf, sizeof(buf))) >= 0) {
		char hex[3];

		if (pci_hex_norm_(buf, (size_t)n, 2, hex) == 0)
			json_set_str(pi, "revision", hex);
		else
			LOG_W(&a->log, "pci %s: revision: malformed value \"%s\"", d->addr,
			      log_escape(buf, (size_t)n, esc, sizeof(esc)));
	}
	n = sysfs_read(fd, "numa_node", buf, sizeof(buf));
	if (n >= 0) {
		char *end;
		long v = strtol(buf, &end, 10);

		if (end == buf || *end || v < -1 || v > 4095)
			LOG_W(&a->log, "pci %s: numa_node: malformed value \"%s\"", d->addr,
			      log_escape(buf, (size_t)n, esc, sizeof(esc)));
		else if (v >= 0)
			json_set_int(pi, "numaNode", v);
	} else if (n != -FB_ENOENT) {
		LOG_W(&a->log, "pci %s: numa_node: %s", d->addr, fb_strerror((int)n));
	}
	if (sysfs_link_base(fd, "iommu_group", buf, sizeof(buf)) > 0) {
		char *end;
		long v = strtol(buf, &end, 10);

		if (end != buf && !*end && v >= 0)
			json_set_int(pi, "iommuGroup", v);
	}
	if (sysfs_read(fd, "boot_vga", buf, sizeof(buf)) >= 0 && (buf[0] == '0' || buf[0] == '1') && !buf[1])
		json_set_take(pi, "bootVGA", json_new_bool(buf[0] == '1'));
	{
		char speed[64];
		ssize_t s = sysfs_read(fd, "current_link_speed", speed, sizeof(speed));
		unsigned long width = 0;
		int w = sysfs_read_dec(fd, "current_link_width", &width);

		if (s == -FB_E2BIG || (w < 0 && w != -FB_ENOENT))
			LOG_W(&a->log, "pci %s: current_link_speed/width: unusable value (link left out)", d->addr);
		if (s > 0 && w == 0 && width <= 64 && strcmp(speed, "Unknown") != 0) {
			struct json *lk = json_new_object();

			if (lk && json_set_str(lk, "speed", speed) == 0 && json_set_int(lk, "width", (long long)width) == 0)
				json_set_take(pi, "link", lk);
			else
				json_free(lk);
		}
	}
	if (sysfs_link_base(fd, "driver", driver, dsize) < 0)
		driver[0] = '\0';
	close(fd);
}

/* One device's status (conditions without lastTransitionTime). Owned. */
static struct json *device_status(struct agent *a, const struct pci_dev *d)
{
	struct json *st = json_new_object(), *pi = json_new_object(), *cs = json_new_object(),
		    *conds = json_new_array(), *sub;
	unsigned ven = (unsigned)strtoul(d->vendor, NULL, 16), dev = (unsigned)strtoul(d->device, NULL, 16);
	unsigned sv = (unsigned)strtoul(d->subsystem_vendor, NULL, 16),
		 sd = (unsigned)strtoul(d->subsystem_device, NULL, 16);
	unsigned cls = (unsigned)strtoul(d->cls, NULL, 16) >> 8;
	const char *cname = ids_class(a->ids, cls, 4), *sname;
	char code[5], driver[64], msg[128];

	if (!st || !pi || !cs || !conds)
		goto nomem;
	if (!cname)
		cname = ids_class(a->ids, cls >> 8, 2);
	memcpy(code, d->cls, 4);
	code[4] = '\0';
	json_set_str(pi, "address", d->addr);
	json_set_take(pi, "class", id_name("code", code, cname));
	json_set_take(pi, "vendor", id_name("id", d->vendor, ids_vendor(a->ids, ven)));
	json_set_take(pi, "device", id_name("id", d->device, ids_device(a->ids, ven, dev)));
	if ((sub = json_new_object())) {
		json_set_str(sub, "vendor", d->subsystem_vendor);
		json_set_str(sub, "device", d->subsystem_device);
		if ((sname = ids_subsystem(a->ids, ven, dev, sv, sd)))
			json_set_str(sub, "name", sname);
		json_set_take(pi, "subsystem", sub);
	}
	device_extras(a, d, pi, driver, sizeof(driver));
	if (*driver)
		json_set_str(cs, "driver", driver);
	json_set_str(cs, "driverType", pgpu_driver_type(driver));
	json_append_take(conds, condition("Present", 1, "Discovered", "found in the PCI scan"));
	snprintf(msg, sizeof(msg), "bound to %s", driver);
	json_append_take(conds, *driver ? condition("DriverBound", 1, "Bound", msg)
				       : condition("DriverBound", 0, "NoDriver", "no driver is bound"));
	if (json_set_take(st, "nodeInfo", json_dup(a->node_info)) < 0)
		goto nomem; /* pi is still ours: freed there */
	if (json_set_take(st, "pciInfo", pi) < 0) {
		pi = NULL;
		goto nomem;
	}
	pi = NULL;
	if (json_set_take(st, "currentState", cs) < 0) {
		cs = NULL;
		goto nomem;
	}
	cs = NULL;
	if (json_set_take(st, "conditions", conds) < 0) {
		conds = NULL;
		goto nomem;
	}
	return st;
nomem:
	json_free(pi);
	json_free(cs);
	json_free(conds);
	json_free(st);
	return NULL;
}

/* Scans the host: an object name -> {"labels": {...}, "status": {...}} for
 * every device of the map, in address order. Owned; NULL when out of
 * memory or the bus could not be read (logged). */
static struct json *discover(struct agent *a)
{
	struct pci_list pl;
	struct fb_errinfo ei;
	struct json *out = json_new_object();
	char msg[600];

	pci_list_init(&pl);
	fb_errinfo_init(&ei);
	if (!out)
		return NULL;
	if (pci_scan(&a->h, 0, &pl, &a->log, &ei) < 0) {
		LOG_E(&a->log, "pci: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		json_free(out);
		return NULL;
	}
	for (size_t i = 0; i < pl.n; i++) {
		const struct pci_dev *d = &pl.dev[i];
		const char *vendor = vmap_vendor(&a->vm, (unsigned)strtoul(d->vendor, NULL, 16));
		struct json *e, *lab, *st;
		char name[PGPU_NAME_MAX + 1], devlab[LABELS_NAME_MAX + 1];

		if (!vendor || !vmap_class(&a->vm, d->cls))
			continue;
		pgpu_name(a->node, d->addr, name);
		st = device_status(a, d);
		device_label(json_get_str(json_getv(st, "pciInfo", "device", NULL), "name", NULL), d->device, devlab);
		e = json_new_object();
		lab = json_new_object();
		if (!st || !e || !lab || json_set_str(lab, GROUP "/node", a->node) < 0 ||
		    json_set_str(lab, GROUP "/vendor", vendor) < 0 || json_set_str(lab, GROUP "/device", devlab) < 0 ||
		    json_set_take(e, "labels", lab) < 0 || (lab = NULL, json_set_take(e, "status", st) < 0) ||
		    (st = NULL, json_set_take(out, name, e) < 0)) {
			json_free(lab);
			json_free(st);
			json_free(e);
			json_free(out);
			pci_list_free(&pl);
			return NULL;
		}
	}
	pci_list_free(&pl);
	metrics_set(&a->m, a->m_devices, (double)json_count(out));
	return out;
}

/* Gives every condition of want its lastTransitionTime: the one in have
 * when the condition's status did not change, else now. */
static void condition_times(struct json *want, const struct json *have)
{
	char now[32];

	now_rfc3339(now, sizeof(now));
	for (struct json *c = json_child(json_get(want, "conditions")); c; c = json_next(c)) {
		const char *t = NULL;

		for (const struct json *h = json_child(json_get(have, "conditions")); h; h = json_next(h))
			if (!strcmp(json_get_str(h, "type", ""), json_get_str(c, "type", "-")) &&
			    !strcmp(json_get_str(h, "status", ""), json_get_str(c, "status", "-")))
				t = json_get_str(h, "lastTransitionTime", NULL);
		json_set_str(c, "lastTransitionTime", t ? t : now);
	}
}

/* The Node labels for the devices found: vendor (most devices, ties by
 * name) and, with several vendors, <vendor>.count. Owned. */
static struct json *node_labels_for(const struct json *want)
{
	struct json *counts = json_new_object(), *out = json_new_object();
	const char *best = NULL;
	long long bestn = 0;

	if (!counts || !out) {
		json_free(counts);
		json_free(out);
		return NULL;
	}
	for (const struct json *e = json_child(want); e; e = json_next(e)) {
		const char *v = json_get_str(json_get(e, "labels"), GROUP "/vendor", "");
		long long n = 0;

		json_int(json_get(counts, v), &n);
		json_set_int(counts, v, n + 1);
	}
	for (const struct json *c = json_child(counts); c; c = json_next(c)) {
		long long n = 0;

		json_int(c, &n);
		if (!best || n > bestn || (n == bestn && strcmp(json_key(c), best) < 0)) {
			best = json_key(c);
			bestn = n;
		}
	}
	if (best)
		json_set_str(out, GROUP "/vendor", best);
	if (json_count(counts) > 1)
		for (const struct json *c = json_child(counts); c; c = json_next(c)) {
			char key[128], v[24];
			long long n = 0;

			json_int(c, &n);
			snprintf(key, sizeof(key), GROUP "/%s.count", json_key(c));
			snprintf(v, sizeof(v), "%lld", n);
			json_set_str(out, key, v);
		}
	json_free(counts);
	return out;
}

/* ---- publishing --------------------------------------------------------- */

/* Our keys among a Node's labels: gpu.deckhouse.io/vendor and /<x>.count. */
static int our_node_key(const char *k)
{
	size_t n = strlen(k);

	if (strncmp(k, GROUP "/", sizeof(GROUP)) != 0)
		return 0;
	return strcmp(k, GROUP "/vendor") == 0 || (n > 6 && strcmp(k + n - 6, ".count") == 0);
}

static void remember_node(struct agent *a, const struct json *node)
{
	struct json *ours = json_new_object();

	for (const struct json *l = json_child(json_getv(node, "metadata", "labels", NULL)); ours && l; l = json_next(l))
		if (our_node_key(json_key(l)) && json_str(l))
			json_set_str(ours, json_key(l), json_str(l));
	json_free(a->node_labels);
	a->node_labels = ours;
}

/* Logs a failed request. Returns -1. */
static int req_fail(struct agent *a, const char *what, int rc, const struct kube_result *res,
		    const struct fb_errinfo *ei)
{
	char msg[600];

	if (rc < 0)
		LOG_E(&a->log, "%s: %s", what, fb_errinfo_str(ei, msg, sizeof(msg)));
	else
		LOG_E(&a->log, "%s: HTTP %d %s", what, res->status, res->message);
	return -1;
}

/* One request whose 2xx body replaces *keep (when keep is given). Returns
 * the HTTP status (0 after a transport error, logged unless ok404). */
static int call(struct agent *a, const char *method, const char *path, const char *ctype, const struct json *body,
		struct json **keep, const char *what)
{
	struct kube_result res = { 0 };
	struct fb_errinfo ei;
	char *b = body ? json_print(body, NULL) : NULL;
	int rc, status;

	fb_errinfo_init(&ei);
	if (body && !b)
		return 0;
	rc = kube_request(a->k, method, path, ctype, b, b ? strlen(b) : 0, &res, &ei);
	free(b);
	status = rc < 0 ? 0 : res.status;
	if (status >= 200 && status < 300) {
		if (keep) {
			json_free(*keep);
			*keep = res.body;
			res.body = NULL;
		}
	} else if (status != 404 || strcmp(method, "DELETE") != 0) {
		req_fail(a, what, rc, &res, &ei);
	}
	kube_result_free(&res);
	return status;
}

/* Lists our objects into a->server. Returns 0 or -1. */
static int list_ours(struct agent *a)
{
	char path[600], rv[64];
	struct json *items = NULL, *map = json_new_object();
	struct fb_errinfo ei;
	char msg[600];

	fb_errinfo_init(&ei);
	snprintf(path, sizeof(path), PGPU_PATH "?labelSelector=" GROUP "%%2Fnode%%3D%s", a->node);
	if (!map || kube_list(a->k, path, &items, rv, sizeof(rv), &ei) < 0) {
		if (map)
			LOG_E(&a->log, "listing PhysicalGPUs: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		json_free(map);
		return -1;
	}
	for (const struct json *o = json_child(items); o; o = json_next(o)) {
		const char *n = json_get_str(json_get(o, "metadata"), "name", NULL);

		/* the selector is the server's business; this guards against a
		 * server that ignores it: never touch another node's objects */
		if (n && !strcmp(json_get_str(json_getv(o, "metadata", "labels", NULL), GROUP "/node", ""), a->node))
			json_set_take(map, n, json_dup(o));
	}
	json_free(items);
	json_free(a->server);
	a->server = map;
	return 0;
}

static int sync_object(struct agent *a, const char *name, const struct json *want)
{
	struct json *have = json_dup(json_get(a->server, name)), *st, *patch = NULL;
	const struct json *wl = json_get(want, "labels");
	char path[600], what[400];
	int s, rc = -1;

	snprintf(path, sizeof(path), PGPU_PATH "/%s", name);
	if (!have) {
		struct json *o = json_new_object(), *md = json_new_object();

		snprintf(what, sizeof(what), "creating PhysicalGPU %s", name);
		if (o && md && json_set_str(o, "apiVersion", PGPU_API) == 0 &&
		    json_set_str(o, "kind", "PhysicalGPU") == 0 && json_set_str(md, "name", name) == 0 &&
		    json_set_take(md, "labels", json_dup(wl)) == 0 && json_set_take(o, "metadata", md) == 0 &&
		    (md = NULL, json_set_take(o, "spec", json_new_object()) == 0)) {
			s = call(a, "POST", PGPU_PATH, "application/json", o, &have, what);
			if (s == 201 || s == 200)
				LOG_I(&a->log, "created PhysicalGPU %s", name);
		} else {
			s = 0;
		}
		json_free(md);
		json_free(o);
		if (!have && s == 409) {
			/* an object of that name without our node label (edited, or a
			 * node name that normalises the same): not ours to take over;
			 * the other devices still sync, and /readyz still comes */
			LOG_W(&a->log, "PhysicalGPU %s exists but is not labelled for node %s: skipping that device",
			      name, a->node);
			rc = 0;
			goto out;
		}
		if (!have)
			goto out;
	} else {
		int same = 1;

		for (const struct json *l = json_child(wl); l; l = json_next(l))
			same &= !strcmp(json_get_str(json_getv(have, "metadata", "labels", NULL), json_key(l), "\x01"),
					json_str(l));
		if (!same) {
			struct json *p = json_new_object(), *md = json_new_object();

			snprintf(what, sizeof(what), "labelling PhysicalGPU %s", name);
			if (!p || !md || json_set_take(md, "labels", json_dup(wl)) < 0 ||
			    json_set_take(p, "metadata", md) < 0) {
				json_free(md);
				json_free(p);
				goto out;
			}
			s = call(a, "PATCH", path, "application/merge-patch+json", p, &have, what);
			json_free(p);
			if (s != 200)
				goto out;
		}
	}
	st = json_dup(json_get(want, "status"));
	if (!st)
		goto out;
	condition_times(st, json_get(have, "status"));
	if (!json_equal(json_get(have, "status"), st)) {
		struct json *op = json_new_object();

		patch = json_new_array();
		if (!op || !patch || json_set_str(op, "op", "add") < 0 || json_set_str(op, "path", "/status") < 0 ||
		    json_set_take(op, "value", st) < 0 || (st = NULL, json_append_take(patch, op) < 0)) {
			json_free(op);
			json_free(st);
			goto out;
		}
		snprintf(what, sizeof(what), "updating the status of PhysicalGPU %s", name);
		strncat(path, "/status", sizeof(path) - strlen(path) - 1);
		s = call(a, "PATCH", path, "application/json-patch+json", patch, &have, what);
		if (s != 200)
			goto out;
		LOG_I(&a->log, "updated the status of PhysicalGPU %s", name);
	}
	json_free(st);
	rc = 0;
out:
	json_free(patch);
	if (have && rc == 0)
		json_set_take(a->server, name, have);
	else
		json_free(have);
	return rc;
}

static int sync_node(struct agent *a, const struct json *want)
{
	struct json *patch = NULL, *labels = NULL, *md, *node = NULL;
	char path[400];
	int rc = -1;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", a->node);
	if (!a->node_labels) {
		if (call(a, "GET", path, NULL, NULL, &node, "reading the Node") != 200)
			goto out;
		remember_node(a, node);
		json_free(node);
		node = NULL;
	}
	if (!(labels = json_new_object()))
		goto out;
	for (const struct json *l = json_child(want); l; l = json_next(l))
		if (strcmp(json_get_str(a->node_labels, json_key(l), "\x01"), json_str(l)) != 0)
			json_set_str(labels, json_key(l), json_str(l));
	for (const struct json *l = json_child(a->node_labels); l; l = json_next(l))
		if (!json_get(want, json_key(l)))
			json_set_take(labels, json_key(l), json_new_null());
	if (!json_count(labels)) {
		rc = 0;
		goto out;
	}
	patch = json_new_object();
	md = json_new_object();
	if (!patch || !md) {
		json_free(md);
		goto out;
	}
	{
		int taken = json_set_take(md, "labels", labels); /* frees labels when it fails */

		labels = NULL;
		if (taken < 0) {
			json_free(md);
			goto out;
		}
	}
	if (json_set_take(patch, "metadata", md) < 0) /* frees md when it fails */
		goto out;
	if (call(a, "PATCH", path, "application/merge-patch+json", patch, &node, "labelling the Node") != 200)
		goto out;
	LOG_I(&a->log, "labelled Node %s (gpu.deckhouse.io/vendor=%s)", a->node,
	      json_get_str(want, GROUP "/vendor", "<none>"));
	remember_node(a, node);
	rc = 0;
out:
	json_free(node);
	json_free(labels);
	json_free(patch);
	return rc;
}

/* Makes the server match want. Returns 0, or -1 (logged) with the caches
 * dropped so the next try starts from the server's state. */
static int sync_all(struct agent *a, const struct json *want)
{
	struct json *nl = node_labels_for(want);
	int rc = 0;

	if (!nl || (!a->server && list_ours(a) < 0)) {
		rc = -1;
		goto out;
	}
	for (const struct json *e = json_child(want); e; e = json_next(e))
		if (sync_object(a, json_key(e), e) < 0)
			rc = -1;
	for (const struct json *o = json_child(a->server), *next; o; o = next) {
		char path[600], what[400];
		int s;

		next = json_next(o);
		if (json_get(want, json_key(o)))
			continue;
		snprintf(path, sizeof(path), PGPU_PATH "/%s", json_key(o));
		snprintf(what, sizeof(what), "deleting PhysicalGPU %s", json_key(o));
		s = call(a, "DELETE", path, NULL, NULL, NULL, what);
		if (s == 200 || s == 202 || s == 404) {
			char name[254];

			/* json_remove looks the name up again after freeing the member */
			snprintf(name, sizeof(name), "%s", json_key(o));
			LOG_I(&a->log, "deleted PhysicalGPU %s (device gone)", name);
			json_remove(a->server, name);
		} else {
			rc = -1;
		}
	}
	if (sync_node(a, nl) < 0)
		rc = -1;
out:
	json_free(nl);
	metrics_inc(&a->m, rc == 0 ? a->m_syncs : a->m_errors, 1);
	if (rc < 0) {
		json_free(a->server);
		a->server = NULL;
		json_free(a->node_labels);
		a->node_labels = NULL;
	}
	return rc;
}

/* ---- the ConfigMap ------------------------------------------------------ */

/* Takes the ConfigMap (NULL: it does not exist). Returns 1 when the map changed. */
static int cm_apply(struct agent *a, const struct json *cm)
{
	struct vmap vm;
	char what[600];

	snprintf(what, sizeof(what), "ConfigMap %s/%s", a->cm_ns, a->cm_name);
	if (cm) {
		vmap_from_data(&vm, json_get(cm, "data"), what, &a->log);
	} else {
		LOG_W(&a->log, "%s not found: using the built-in vendors amd=1002, intel=8086, nvidia=10de", what);
		vmap_default(&vm);
	}
	if (a->vm_ready && memcmp(&vm, &a->vm, sizeof(vm)) == 0)
		return 0;
	if (a->vm_ready)
		LOG_I(&a->log, "%s changed: re-evaluating the devices", what);
	a->vm = vm;
	a->vm_ready = 1;
	return 1;
}

static void schedule(struct agent *a, long long ms);

static void on_cm_event(void *ctx, const char *type, const struct json *obj)
{
	struct agent *a = ctx;

	a->cm_fails = 0;
	if (strcmp(json_get_str(json_get(obj, "metadata"), "name", ""), a->cm_name) != 0)
		return;
	if (cm_apply(a, strcmp(type, "DELETED") == 0 ? NULL : obj))
		schedule(a, 0);
}

static int cm_watch(struct agent *a, int from_pass);

static void on_cm_timer(void *ctx)
{
	struct agent *a = ctx;

	a->cm_timer = 0;
	if (!a->cmw && cm_watch(a, 0) < 0 && !loop_signal(a->l))
		a->cm_timer = loop_timer(a->l, kube_backoff_next(&a->cmbo), on_cm_timer, a);
}

/* The watch ended: watch again, from where it was unless the server said
 * 410 or three watches in a row failed with no event (the resourceVersion
 * may be the trouble): then list first. Only the watch is restarted, not a
 * scan and sync; a watch cut again and again (a proxy, a server in trouble)
 * backs off instead of looping, and only one that lived 30 s resets that
 * backoff. */
static void on_cm_end(void *ctx, enum kube_watch_end why, const struct fb_errinfo *ei)
{
	struct agent *a = ctx;
	long long lived = loop_now_ms() - a->cm_watch_ms;
	char msg[600];

	if (why != KUBE_WATCH_FAILED)
		a->cm_fails = 0;
	if (why == KUBE_WATCH_EXPIRED || (why == KUBE_WATCH_FAILED && ++a->cm_fails >= 3)) {
		a->cm_rv[0] = '\0';
		a->cm_fails = 0;
	} else if (kube_watch_rv(a->cmw)[0])
		snprintf(a->cm_rv, sizeof(a->cm_rv), "%s", kube_watch_rv(a->cmw));
	if (why == KUBE_WATCH_FAILED)
		LOG_W(&a->log, "ConfigMap watch: %s", fb_errinfo_str(ei, msg, sizeof(msg)));
	kube_watch_free(a->cmw);
	a->cmw = NULL;
	if (loop_signal(a->l))
		return;
	if (lived >= 30000)
		kube_backoff_reset(&a->cmbo);
	loop_timer_cancel(a->l, a->cm_timer);
	a->cm_timer = loop_timer(a->l, why == KUBE_WATCH_CLOSED && lived >= 10000 ? 0 : kube_backoff_next(&a->cmbo),
				 on_cm_timer, a);
}

static void cm_path(const struct agent *a, char *path, size_t size, int list)
{
	snprintf(path, size, "/api/v1/namespaces/%s/configmaps%s%s", a->cm_ns,
		 list ? "?fieldSelector=metadata.name%3D" : "/", a->cm_name);
}

/* Reads the ConfigMap once (the --oneshot way). Returns 0 or -1. */
static int cm_get(struct agent *a)
{
	struct json *cm = NULL;
	char path[700];
	int s;

	cm_path(a, path, sizeof(path), 0);
	s = call(a, "GET", path, NULL, NULL, &cm, "reading the vendors ConfigMap");
	if (s == 200 || s == 404)
		cm_apply(a, s == 200 ? cm : NULL);
	json_free(cm);
	return s == 200 || s == 404 ? 0 : -1;
}

/* Lists (when there is no resourceVersion to resume from) and watches the
 * ConfigMap; a changed map read outside a pass schedules one. Returns 0 or
 * -1 (logged). */
static int cm_watch(struct agent *a, int from_pass)
{
	char path[700], msg[600];
	struct fb_errinfo ei;

	fb_errinfo_init(&ei);
	cm_path(a, path, sizeof(path), 1);
	if (!a->cm_rv[0]) {
		struct json *items = NULL;

		if (kube_list(a->k, path, &items, a->cm_rv, sizeof(a->cm_rv), &ei) < 0) {
			LOG_E(&a->log, "reading the vendors ConfigMap: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
			a->cm_rv[0] = '\0';
			return -1;
		}
		if (cm_apply(a, json_at(items, 0)) && !from_pass)
			schedule(a, 0);
		json_free(items);
	}
	a->cm_watch_ms = loop_now_ms();
	if (kube_watch_start(&a->cmw, a->k, a->l, path, a->cm_rv, on_cm_event, on_cm_end, a, &ei) < 0) {
		LOG_E(&a->log, "watching the vendors ConfigMap: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		a->cmw = NULL;
		a->cm_rv[0] = '\0';
		return -1;
	}
	return 0;
}

/* ---- the loop ----------------------------------------------------------- */

static void on_pass(void *ctx);

static void schedule(struct agent *a, long long ms)
{
	loop_timer_cancel(a->l, a->retry_timer);
	a->retry_timer = loop_timer(a->l, ms, on_pass, a);
}

static void on_pass(void *ctx)
{
	struct agent *a = ctx;
	struct json *want;
	int cm_failed = 0;

	a->retry_timer = 0;
	if (!a->vendors_file && !a->cmw && !a->cm_timer && cm_watch(a, 1) < 0) {
		/* keep scanning and publishing with what we have (the built-in
		 * map when nothing was ever read); the backoff retries the watch */
		cm_failed = 1;
		if (!a->vm_ready) {
			LOG_W(&a->log, "vendors ConfigMap unreadable: using the built-in vendors amd=1002, "
			      "intel=8086, nvidia=10de until it can be read");
			vmap_default(&a->vm);
			a->vm_ready = 1;
		}
	}
	if (!(want = discover(a)))
		goto retry;
	if (sync_all(a, want) < 0) {
		json_free(want);
		goto retry;
	}
	json_free(want);
	if (cm_failed)
		goto retry;
	if (!a->ready)
		LOG_I(&a->log, "in sync: %zu PhysicalGPU object(s)", json_count(a->server));
	a->ready = 1;
	kube_backoff_reset(&a->bo);
	return;
retry:
	if (!loop_signal(a->l))
		schedule(a, kube_backoff_next(&a->bo));
}

static void on_debounced(void *ctx)
{
	struct agent *a = ctx;

	a->debounce_timer = 0;
	if (!a->retry_timer) /* a pending retry will scan anyway */
		on_pass(a);
}

static void on_resync(void *ctx)
{
	struct agent *a = ctx;

	/* forget what we think the server holds: someone may have edited or
	 * deleted our objects or labels */
	json_free(a->server);
	a->server = NULL;
	json_free(a->node_labels);
	a->node_labels = NULL;
	if (!a->retry_timer)
		on_pass(a);
	loop_timer(a->l, a->resync_ms, on_resync, a);
}

/* A datagram per event: "ACTION@DEVPATH\0KEY=VALUE\0...". */
static void on_uevent(void *ctx, int fd, short revents)
{
	struct agent *a = ctx;
	char buf[8192];
	ssize_t n;
	int pci = 0;

	(void)revents;
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		if (pci_uevent_msg_is_pci(buf, (size_t)n)) /* tests/fuzz/fuzz_uevent.c */
			pci = 1;
	if (n < 0 && errno == ENOBUFS) /* the kernel dropped events: one may have been ours */
		pci = 1;
	if (pci) {
		LOG_V(&a->log, 1, "PCI uevent: rescanning in %d ms", DEBOUNCE_MS);
		loop_timer_cancel(a->l, a->debounce_timer);
		a->debounce_timer = loop_timer(a->l, DEBOUNCE_MS, on_debounced, a);
	}
}

/* The kernel's struct sockaddr_nl and NETLINK_KOBJECT_UEVENT
 * (linux/netlink.h, a fixed ABI): the musl cross toolchains have no kernel
 * headers. Group 1 is the kernel's own broadcast (udev listens to it). */
struct uevent_addr {
	sa_family_t nl_family;
	unsigned short nl_pad;
	uint32_t nl_pid, nl_groups;
};
#define UEVENT_PROTO 15

static int uevent_open(void)
{
	struct uevent_addr sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, UEVENT_PROTO);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- main --------------------------------------------------------------- */

static int print_devices(const struct json *want)
{
	struct json *arr = json_new_array();
	char *s;
	int rc;

	for (const struct json *e = json_child(want); arr && e; e = json_next(e)) {
		struct json *st = json_dup(json_get(e, "status"));

		condition_times(st, NULL);
		json_append_take(arr, st);
	}
	json_sort_keys(arr);
	s = arr ? json_print(arr, NULL) : NULL;
	json_free(arr);
	if (!s)
		return 1;
	rc = printf("%s\n", s) < 0 || fflush(stdout) != 0;
	free(s);
	return rc;
}

/* ---- options, setup, teardown -------------------------------------------- */

struct agent_opts {
	const char *kubeconfig, *host, *node_name, *cm, *vendors_file;
	const char *probe_addr; /* --health-probe-bind-address */
	struct opt_list pci_ids;
	int oneshot, no_publish, seen_port;
	long verbosity, port;
	long long resync;
};

#define AO(member) offsetof(struct agent_opts, member)

static const struct opt agent_optv[] = {
	{ .lo = "kubeconfig", .kind = OPT_STR, .off = AO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig (default $KUBECONFIG, in-cluster, ~/.kube/config)" },
	{ .lo = "node-name", .kind = OPT_STR, .off = AO(node_name), .arg = "NAME",
	  .help = "the node (default $NODE_NAME, else the host name)" },
	{ .lo = "host-prefix", .kind = OPT_STR, .off = AO(host), .arg = "P",
	  .help = "read host sys/proc/etc/usr at P+\"sys\"... (default /host- if /host-sys exists, else /)" },
	{ .lo = "pci-ids", .kind = OPT_STRS, .off = AO(pci_ids), .arg = "PATH",
	  .help = "pci.ids to use, first found wins (repeatable; default usr/share/{hwdata,misc,}/pci.ids on the host)" },
	{ .lo = "vendors-configmap", .kind = OPT_STR, .off = AO(cm), .arg = "[NS/]NAME",
	  .help = "vendor map ConfigMap, watched (default " DEFAULT_CM " in the agent's namespace)" },
	{ .lo = "vendors-file", .kind = OPT_STR, .off = AO(vendors_file), .arg = "PATH",
	  .help = "vendor map from a YAML/JSON file instead of the ConfigMap" },
	{ .lo = "resync", .kind = OPT_DUR, .off = AO(resync), .min = 100, .arg = "DUR",
	  .help = "re-read the server's objects and rescan this often (default 5m)" },
	{ .lo = "port", .kind = OPT_INT, .off = AO(port), .seen = OPT_SEEN(struct agent_opts, seen_port), .min = 0,
	  .max = 65535, .arg = "N",
	  .help = "serve /healthz, /readyz and /metrics on this port (default 8081; 0: any free port)" },
	{ .lo = "health-probe-bind-address", .kind = OPT_STR, .off = AO(probe_addr), .arg = "ADDR",
	  .help = "serve them on HOST:PORT instead (\"127.0.0.1:8081\", \"[::1]:0\"; default "
		  "$HEALTH_PROBE_BIND_ADDRESS, else \":\" and --port)" },
	{ .lo = "oneshot", .kind = OPT_FLAG, .off = AO(oneshot),
	  .help = "sync once and exit (1 if that failed)" },
	{ .lo = "no-publish", .kind = OPT_FLAG, .off = AO(no_publish),
	  .help = "with --oneshot: no API access; print the devices as a JSON array of status objects" },
	{ .lo = "v", .so = 'v', .kind = OPT_INT, .off = AO(verbosity), .min = 0, .max = 10, .arg = "N",
	  .help = "log verbosity" },
};

static const struct opt_spec agent_spec = { "gpu-node-agent", usage, agent_optv,
					    sizeof(agent_optv) / sizeof(agent_optv[0]) };

static const struct metrics_def agent_metrics[] = {
	{ METRIC_GAUGE, "gpu_node_agent_build_info", "version=\"" FB_VERSION "\"",
	  "Build information; the value is the start time", NULL, 0, offsetof(struct agent, m_build) },
	{ METRIC_GAUGE, "gpu_node_agent_devices", "", "Devices found by the last scan", NULL, 0,
	  offsetof(struct agent, m_devices) },
	{ METRIC_COUNTER, "gpu_node_agent_syncs_total", "", "Passes that left the server in sync", NULL, 0,
	  offsetof(struct agent, m_syncs) },
	{ METRIC_COUNTER, "gpu_node_agent_sync_errors_total", "", "Passes that failed and were retried", NULL, 0,
	  offsetof(struct agent, m_errors) },
};

/* Checks the flags and sets a up to the ID database. Returns -1 to go on,
 * else the exit status (the message printed). addr: room for ":PORT". */
static int agent_configure(struct agent *a, struct agent_opts *o, char *addr, size_t addr_size)
{
	static const char *const ids_rel[] = { "usr/share/hwdata/pci.ids", "usr/share/misc/pci.ids",
					       "usr/share/pci.ids" };
	struct fb_errinfo ei;
	char msg[1200], hostname[256], idpaths[OPT_LIST_MAX][PATH_MAX];
	const char *idp[OPT_LIST_MAX];
	size_t nid = 0;

	if (o->no_publish && !o->oneshot) {
		fprintf(stderr, "gpu-node-agent: --no-publish needs --oneshot\n");
		return 2;
	}
	if (o->probe_addr && o->seen_port) {
		fprintf(stderr, "gpu-node-agent: give --port or --health-probe-bind-address, not both\n");
		return 2;
	}
	if (!o->probe_addr && !o->seen_port && (o->probe_addr = getenv("HEALTH_PROBE_BIND_ADDRESS")) &&
	    !*o->probe_addr)
		o->probe_addr = NULL;
	if (!o->probe_addr) {
		snprintf(addr, addr_size, ":%ld", o->port);
		o->probe_addr = addr;
	}
	fb_errinfo_init(&ei);
	if (http_addr_check(o->probe_addr, &ei) < 0) {
		fprintf(stderr, "gpu-node-agent: health probe bind address %s\n", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	a->log.v = (int)o->verbosity;
	a->resync_ms = o->resync;
	a->vendors_file = o->vendors_file;
	hostfs_init(&a->h);
	if (hostfs_setup(&a->h, o->host) < 0) {
		fprintf(stderr, "gpu-node-agent: --host-prefix is too long\n");
		return 2;
	}
	snprintf(a->node, sizeof(a->node), "%s", app_node_name(o->node_name, hostname, sizeof(hostname)));
	if (!labels_valid_prefix(a->node, strlen(a->node)) || strlen(a->node) > LABELS_NAME_MAX) {
		LOG_E(&a->log, "node name \"%s\" is not a valid node name and label value", a->node);
		return 2;
	}
	/* the ID database: --pci-ids as given, else the host's usual places */
	if (o->pci_ids.n) {
		for (int i = 0; i < o->pci_ids.n; i++)
			idp[nid++] = o->pci_ids.v[i];
	} else {
		for (size_t i = 0; i < sizeof(ids_rel) / sizeof(ids_rel[0]); i++)
			if (hostfs_resolve(&a->h, ids_rel[i], idpaths[nid], sizeof(idpaths[nid])) >= 0) {
				idp[nid] = idpaths[nid];
				nid++;
			}
	}
	if (ids_open(&a->ids, IDS_PCI, idp, nid, &a->log) < 0)
		return 1;
	return -1;
}

/* --no-publish: scan once and print. Returns the exit status. */
static int agent_print(struct agent *a)
{
	struct json *want;
	int ret;

	if (!a->vm_ready) {
		LOG_W(&a->log, "no --vendors-file: using the built-in vendors amd=1002, intel=8086, nvidia=10de");
		vmap_default(&a->vm);
	}
	want = discover(a);
	/* names are read only when a device needs one: 0 lines on a node without GPUs */
	LOG_V(&a->log, 1, "pci.ids: %lu lines parsed", ids_lines_parsed(a->ids));
	ret = want ? print_devices(want) : 1;
	FREE_AT_EXIT(json_free(want));
	return ret;
}

/* The loop, the API client, the ConfigMap's name. Returns -1 to go on, else
 * the exit status (logged). */
static int agent_connect(struct agent *a, const struct agent_opts *o)
{
	struct kube_opts ko;
	struct fb_errinfo ei;
	const char *slash = strchr(o->cm, '/');
	char msg[1200];
	unsigned seed;
	int rc;

	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = o->kubeconfig;
	if (!o->oneshot) { /* the loop retries: a request must not hold the probes for minutes */
		ko.max_attempts = 1;
		ko.timeout_ms = 5000;
	}
	if ((rc = loop_new(&a->l, &ei)) == 0)
		rc = kube_connect(&a->k, &ko, &a->log, loop_cancel_fd(a->l), a->cm_ns, sizeof(a->cm_ns), &ei);
	if (rc < 0) {
		LOG_E(&a->log, "%s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		return 1;
	}
	if (slash)
		snprintf(a->cm_ns, sizeof(a->cm_ns), "%.*s", (int)(slash - o->cm), o->cm);
	snprintf(a->cm_name, sizeof(a->cm_name), "%s", slash ? slash + 1 : o->cm);
	if (!labels_valid_prefix(a->cm_name, strlen(a->cm_name)) || !labels_valid_prefix(a->cm_ns, strlen(a->cm_ns))) {
		fprintf(stderr, "gpu-node-agent: --vendors-configmap: \"%s\" is not [NAMESPACE/]NAME\n", o->cm);
		return 2;
	}
	seed = (unsigned)time(NULL) ^ (unsigned)loop_now_ms();
	for (const char *p = a->node; *p; p++)
		seed = seed * 31 + (unsigned char)*p;
	kube_backoff_init(&a->bo, ko.backoff_base_ms, ko.backoff_max_ms, seed);
	kube_backoff_init(&a->cmbo, ko.backoff_base_ms, ko.backoff_max_ms, seed + 1);
	return -1;
}

static int ready_cb(void *ctx)
{
	return ((struct agent *)ctx)->ready;
}

static void agent_free(struct agent *a)
{
	if (a->nl_fd >= 0)
		close(a->nl_fd);
	kube_watch_free(a->cmw);
	http_server_free(a->srv);
	json_free(a->server);
	json_free(a->node_labels);
	json_free(a->node_info);
	kube_free(a->k);
	loop_free(a->l);
	ids_free(a->ids);
}

int gpu_node_agent_main(int argc, char **argv)
{
	struct agent a;
	struct agent_opts o = { .cm = DEFAULT_CM, .port = 8081, .resync = 5 * 60 * 1000 };
	struct app_probes probes;
	char addr[32], where[96];
	int rc, ret = 1;

	memset(&a, 0, sizeof(a));
	a.nl_fd = -1;
	log_init(&a.log);
	metrics_init(&a.m);
	if ((rc = opt_parse_only(&agent_spec, &o, argc, argv)) >= 0)
		return rc;
	if ((rc = agent_configure(&a, &o, addr, sizeof(addr))) >= 0) {
		ret = rc;
		goto out;
	}
	metrics_add_table(&a.m, agent_metrics, sizeof(agent_metrics) / sizeof(agent_metrics[0]), &a);
	metrics_set(&a.m, a.m_build, (double)time(NULL));
	if (!(a.node_info = node_info(&a)))
		goto out;
	if (a.vendors_file) {
		if (vmap_load_file(&a.vm, a.vendors_file, &a.log) < 0) {
			ret = 2;
			goto out;
		}
		a.vm_ready = 1;
	}
	if (o.no_publish) {
		ret = agent_print(&a);
		goto out;
	}
	if ((rc = agent_connect(&a, &o)) >= 0) {
		ret = rc;
		goto out;
	}
	if (o.oneshot) {
		struct json *want = NULL;

		if ((a.vm_ready || cm_get(&a) == 0) && (want = discover(&a)) && sync_all(&a, want) == 0)
			ret = 0;
		json_free(want);
		goto out;
	}
	probes = (struct app_probes){ .mx = &a.m, .ready = ready_cb, .ctx = &a, .waiting = "not yet in sync\n" };
	snprintf(where, sizeof(where), " (%.80s)", o.probe_addr);
	app_serve(&a.srv, a.l, o.probe_addr, &probes, &a.log, "/healthz, /readyz and /metrics", where);
	a.nl_fd = uevent_open();
	if (a.nl_fd < 0 || loop_watch(a.l, a.nl_fd, POLLIN, on_uevent, &a) < 0)
		LOG_W(&a.log, "no kernel uevents (%s): PCI changes are seen every --resync only", strerror(errno));
	schedule(&a, 0);
	loop_timer(a.l, a.resync_ms, on_resync, &a);
	loop_run(a.l);
	LOG_I(&a.log, "stopping (signal %d)", loop_signal(a.l));
	ret = 0;
out:
	agent_free(&a);
	return ret;
}
