/* pgpu_scan: each device's PhysicalGPU labels and status, and the node's (pgpu.h). */
#include "pgpu.h"
#include "pgpu_int.h"

#include "attr.h"
#include "err.h"
#include "labels.h"
#include "pci.h"
#include "sysfs.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static int json_set_int(struct json *o, const char *key, long long v)
{
	return json_set_take(o, key, json_new_number((double)v));
}

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
	ssize_t n = sysfs_host_alloc(h, "proc/cpuinfo", 16 << 20, &text);
	int virt = 0;

	for (ssize_t i = 0; n > 0 && i + 10 <= n && !virt; i++)
		if (memcmp(text + i, "hypervisor", 10) == 0 && (i == 0 || !isalnum((unsigned char)text[i - 1])) &&
		    (i + 10 == n || !isalnum((unsigned char)text[i + 10]) || text[i + 10] == '_'))
			virt = text[i + 10] != '_';
	free(text);
	if (virt)
		return 0;
	for (size_t f = 0; f < 2; f++) {
		ssize_t m = sysfs_host_attr(h, files[f], dmi[f], sizeof(dmi[f]));

		if (m < 0)
			m = 0;
		for (ssize_t i = 0; i < m; i++)
			dmi[f][i] = (char)tolower((unsigned char)dmi[f][i]);
		dmi[f][m] = '\0';
		while (m > 0 && isspace((unsigned char)dmi[f][m - 1]))
			dmi[f][--m] = '\0';
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
struct json *pgpu_node_info(const struct hostfs *h, const char *node, const struct fb_log *lg)
{
	struct json *ni = json_new_object(), *os = json_new_object();
	char *text = NULL, v[256];
	int bm = bare_metal(h);

	if (!ni || !os)
		goto nomem;
	json_set_str(ni, "nodeName", node);
	if (sysfs_host_alloc(h, "etc/os-release", 64 << 10, &text) >= 0) {
		static const char *const keys[][2] = { { "ID", "id" }, { "VERSION_ID", "version" },
						      { "PRETTY_NAME", "name" } };

		for (size_t i = 0; i < 3; i++) {
			os_release_value(text, keys[i][0], v, sizeof(v));
			if (*v)
				json_set_str(os, keys[i][1], v);
		}
	} else {
		LOG_W(lg, "etc/os-release: cannot read it (nodeInfo.os left empty)");
	}
	free(text);
	if (json_set_take(ni, "os", os) < 0) {
		os = NULL;
		goto nomem;
	}
	os = NULL;
	if (sysfs_host_attr(h, "proc/sys/kernel/osrelease", v, sizeof(v)) > 0) {
		v[strcspn(v, "\n")] = '\0';
		json_set_str(ni, "kernelRelease", v);
	}
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
static void device_extras(const struct pgpu_scan *sc, const struct pci_dev *d, int fd, struct json *pi,
			  char *driver, size_t dsize)
{
	char buf[64], esc[96];
	ssize_t n;

	driver[0] = '\0';
	if (fd < 0)
		return;
	if ((n = sysfs_read(fd, "revision", buf, sizeof(buf))) >= 0) {
		char hex[3];

		if (pci_hex_norm_(buf, (size_t)n, 2, hex) == 0)
			json_set_str(pi, "revision", hex);
		else
			LOG_W(sc->log, "pci %s: revision: malformed value \"%s\"", d->addr,
			      log_escape(buf, (size_t)n, esc, sizeof(esc)));
	}
	n = sysfs_read(fd, "numa_node", buf, sizeof(buf));
	if (n >= 0) {
		char *end;
		long v = strtol(buf, &end, 10);

		if (end == buf || *end || v < -1 || v > 4095)
			LOG_W(sc->log, "pci %s: numa_node: malformed value \"%s\"", d->addr,
			      log_escape(buf, (size_t)n, esc, sizeof(esc)));
		else if (v >= 0)
			json_set_int(pi, "numaNode", v);
	} else if (n != -FB_ENOENT) {
		LOG_W(sc->log, "pci %s: numa_node: %s", d->addr, fb_strerror((int)n));
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
			LOG_W(sc->log, "pci %s: current_link_speed/width: unusable value (link left out)", d->addr);
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
}

/* One device's status (conditions without lastTransitionTime). Owned. */
static struct json *device_status(const struct pgpu_scan *s, const struct pci_dev *d)
{
	struct json *st = json_new_object(), *pi = json_new_object(), *cs = json_new_object(),
		    *conds = json_new_array(), *sub;
	unsigned ven = (unsigned)strtoul(d->vendor, NULL, 16), dev = (unsigned)strtoul(d->device, NULL, 16);
	unsigned sv = (unsigned)strtoul(d->subsystem_vendor, NULL, 16),
		 sd = (unsigned)strtoul(d->subsystem_device, NULL, 16);
	unsigned cls = (unsigned)strtoul(d->cls, NULL, 16) >> 8;
	const char *cname = ids_class(s->ids, cls, 4), *sname;
	char code[5], driver[64], msg[128], rel[64];
	int fd;

	if (!st || !pi || !cs || !conds)
		goto nomem;
	if (!cname)
		cname = ids_class(s->ids, cls >> 8, 2);
	memcpy(code, d->cls, 4);
	code[4] = '\0';
	json_set_str(pi, "address", d->addr);
	json_set_take(pi, "class", id_name("code", code, cname));
	json_set_take(pi, "vendor", id_name("id", d->vendor, ids_vendor(s->ids, ven)));
	json_set_take(pi, "device", id_name("id", d->device, ids_device(s->ids, ven, dev)));
	if ((sub = json_new_object())) {
		json_set_str(sub, "vendor", d->subsystem_vendor);
		json_set_str(sub, "device", d->subsystem_device);
		if ((sname = ids_subsystem(s->ids, ven, dev, sv, sd)))
			json_set_str(sub, "name", sname);
		json_set_take(pi, "subsystem", sub);
	}
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", d->addr);
	fd = hostfs_open(s->h, rel, O_RDONLY | O_DIRECTORY);
	device_extras(s, d, fd, pi, driver, sizeof(driver));
	if (*driver)
		json_set_str(cs, "driver", driver);
	json_set_str(cs, "driverType", pgpu_driver_type(driver));
	pgpu_caps_(s, d, fd, ids_device(s->ids, ven, dev), driver, st, cs);
	if (fd >= 0)
		close(fd);
	json_append_take(conds, condition("Present", 1, "Discovered", "found in the PCI scan"));
	snprintf(msg, sizeof(msg), "bound to %s", driver);
	json_append_take(conds, *driver ? condition("DriverBound", 1, "Bound", msg)
				       : condition("DriverBound", 0, "NoDriver", "no driver is bound"));
	if (json_set_take(st, "nodeInfo", json_dup(s->node_info)) < 0)
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
struct json *pgpu_discover(const struct pgpu_scan *s)
{
	struct pci_list pl;
	struct fb_errinfo ei;
	struct json *out = json_new_object();
	char msg[600];

	pci_list_init(&pl);
	fb_errinfo_init(&ei);
	if (!out)
		return NULL;
	if (pci_scan(s->h, 0, &pl, s->log, &ei) < 0) {
		LOG_E(s->log, "pci: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
		json_free(out);
		return NULL;
	}
	for (size_t i = 0; i < pl.n; i++) {
		const struct pci_dev *d = &pl.dev[i];
		const char *vendor = pgpu_vmap_vendor(s->vm, (unsigned)strtoul(d->vendor, NULL, 16));
		struct json *e, *lab, *st;
		char name[PGPU_NAME_MAX + 1], devlab[LABELS_NAME_MAX + 1];

		if (!vendor || !pgpu_vmap_class(s->vm, d->cls))
			continue;
		pgpu_name(s->node, d->addr, name);
		st = device_status(s, d);
		device_label(json_get_str(json_getv(st, "pciInfo", "device", NULL), "name", NULL), d->device, devlab);
		e = json_new_object();
		lab = json_new_object();
		if (!st || !e || !lab || json_set_str(lab, PGPU_GROUP "/node", s->node) < 0 ||
		    json_set_str(lab, PGPU_GROUP "/vendor", vendor) < 0 || json_set_str(lab, PGPU_GROUP "/device", devlab) < 0 ||
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
	return out;
}

/* Gives every condition of want its lastTransitionTime: the one in have
 * when the condition's status did not change, else now. */
void pgpu_condition_times(struct json *want, const struct json *have)
{
	char now[32];

	log_rfc3339(time(NULL), now, sizeof(now));
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
 * name), vendor.<vendor>=true for every vendor present and, with several
 * vendors, <vendor>.count. Owned. */
struct json *pgpu_node_labels(const struct json *want)
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
		const char *v = json_get_str(json_get(e, "labels"), PGPU_GROUP "/vendor", "");
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
		json_set_str(out, PGPU_GROUP "/vendor", best);
	for (const struct json *c = json_child(counts); c; c = json_next(c)) {
		char key[128];

		snprintf(key, sizeof(key), PGPU_GROUP "/vendor.%s", json_key(c));
		json_set_str(out, key, "true");
	}
	if (json_count(counts) > 1)
		for (const struct json *c = json_child(counts); c; c = json_next(c)) {
			char key[128], v[24];
			long long n = 0;

			json_int(c, &n);
			snprintf(key, sizeof(key), PGPU_GROUP "/%s.count", json_key(c));
			snprintf(v, sizeof(v), "%lld", n);
			json_set_str(out, key, v);
		}
	json_free(counts);
	return out;
}

