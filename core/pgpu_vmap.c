/* pgpu_vmap: the vendor map (pgpu.h). */
#include "pgpu.h"

#include "err.h"
#include "labels.h"
#include "sysfs.h"
#include "yaml.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pgpu_vmap_default(struct pgpu_vmap *vm)
{
	static const struct { const char *name; unsigned id; } d[] = {
		{ "amd", 0x1002 }, { "intel", 0x8086 }, { "metax", 0x9999 }, { "nvidia", 0x10de },
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
	if (len != 4 || !is_hex(s, 4) || out[0] >= PGPU_VMAP_IDS)
		return -1;
	memcpy(buf, s, 4);
	buf[4] = '\0';
	out[1 + out[0]++] = (unsigned)strtoul(buf, NULL, 16);
	return 0;
}

static int add_class(void *ctx, const char *s, size_t len)
{
	struct pgpu_vmap *vm = ctx;

	if ((len != 2 && len != 4 && len != 6) || !is_hex(s, len) || vm->ncls >= PGPU_VMAP_CLASSES)
		return -1;
	for (size_t i = 0; i < len; i++)
		vm->cls[vm->ncls][i] = (char)tolower((unsigned char)s[i]);
	vm->cls[vm->ncls++][len] = '\0';
	return 0;
}

/* The map from a ConfigMap's data (or a vendors file's map): bad entries are
 * warned about and left out; no usable vendor leaves the map empty (nothing
 * is ours), a bad "classes" keeps the default classes. */
void pgpu_vmap_from_data(struct pgpu_vmap *vm, const struct json *data, const char *what,
			   const struct fb_log *lg)
{
	struct pgpu_vmap def;
	char esc[128];

	pgpu_vmap_default(&def);
	memset(vm, 0, sizeof(*vm));
	for (const struct json *e = json_child(data); e; e = json_next(e)) {
		const char *k = json_key(e), *v = json_str(e);
		unsigned ids[1 + PGPU_VMAP_IDS] = { 0 };

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
		if (!labels_valid_name(k, strlen(k)) || strlen(k) > PGPU_VENDOR_NAME_MAX) {
			LOG_W(lg, "%s: vendor name \"%s\" is not a valid label value of at most %d characters (entry ignored)",
			      what, esc, PGPU_VENDOR_NAME_MAX);
			continue;
		}
		if (each_item(v, add_id, ids) < 0) {
			char ev[128];

			LOG_W(lg, "%s: %s: \"%s\" is not a comma list of 4-hex PCI vendor IDs (entry ignored)", what,
			      esc, log_escape(v, strlen(v), ev, sizeof(ev)));
			continue;
		}
		if (vm->n >= PGPU_VMAP_MAX) {
			LOG_W(lg, "%s: more than %d vendors (%s ignored)", what, PGPU_VMAP_MAX, esc);
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

const char *pgpu_vmap_vendor(const struct pgpu_vmap *vm, unsigned id)
{
	for (size_t i = 0; i < vm->n; i++)
		for (size_t j = 0; j < vm->v[i].nid; j++)
			if (vm->v[i].id[j] == id)
				return vm->v[i].name;
	return NULL;
}

int pgpu_vmap_class(const struct pgpu_vmap *vm, const char *cls)
{
	for (size_t i = 0; i < vm->ncls; i++)
		if (strncmp(cls, vm->cls[i], strlen(vm->cls[i])) == 0)
			return 1;
	return 0;
}

/* --vendors-file: YAML or JSON, the data map itself or a whole ConfigMap. */
int pgpu_vmap_load(struct pgpu_vmap *vm, const char *path, const struct fb_log *lg)
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
	pgpu_vmap_from_data(vm, data, path, lg);
	json_free(doc);
	return 0;
}

