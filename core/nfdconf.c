/* nfdconf: nfd-worker.conf, nfd-master.conf and their --options. The
 * document is parsed into a json tree (core/yaml) and walked against a table
 * of members, twice: the first walk checks every value and warns about
 * unknown keys, the second stores, so a bad value leaves the config as it
 * was. One walker, two tables: the worker's follows Go's encoding/json
 * (document order, later spelling wins, positions in messages); the master's
 * keeps what its hand decoder did (table order, first spelling, no
 * positions), chosen by walk.master. */
#include "nfdconf.h"

#include "nfdsrc.h"

#include "json.h"
#include "kube.h"
#include "log.h"
#include "opt.h"
#include "sysfs.h"
#include "yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CONF_MAX_SIZE (1 << 20)

/* ---- defaults ----------------------------------------------------------- */

static const char *const none[1] = { NULL };
static const char *const def_all[] = { "all" };
static const char *const def_owner_refs[] = { "pod", "ds" };
static const char *const def_pci_classes[] = { "03", "0b40", "12" };
static const char *const def_pci_fields[] = { "class", "vendor" };
static const char *const def_usb_classes[] = { "0e", "ef", "fe", "ff" };
static const char *const def_usb_fields[] = { "class", "vendor", "device" };
static const char *const def_cpuid_blacklist[] = {
	"AVX10", "BMI1", "BMI2", "CLMUL", "CMOV", "CX16", "ERMS", "F16C", "HTT", "LZCNT",
	"MMX", "MMXEXT", "NX", "POPCNT", "RDRAND", "RDSEED", "RDTSCP", "SGX", "SGXLC", "SSE",
	"SSE2", "SSE3", "SSE4", "SSE42", "SSSE3", "TDX_GUEST",
};
static const char *const def_kernel_opts[] = { "NO_HZ", "NO_HZ_IDLE", "NO_HZ_FULL", "PREEMPT" };

#define LIST(a) ((struct nfd_strlist){ .v = (a), .n = sizeof(a) / sizeof((a)[0]) })
#define EMPTY ((struct nfd_strlist){ .v = none, .n = 0 })

void nfdconf_init(struct nfd_worker_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->core.sleep_interval_ms = 60000;
	cfg->core.feature_sources = LIST(def_all);
	cfg->core.label_sources = LIST(def_all);
	cfg->core.label_whitelist = "";
	cfg->core.no_publish_features = EMPTY;
	cfg->core.owner_refs = LIST(def_owner_refs);
	cfg->pci.device_class_whitelist = LIST(def_pci_classes);
	cfg->pci.device_label_fields = LIST(def_pci_fields);
	cfg->usb.device_class_whitelist = LIST(def_usb_classes);
	cfg->usb.device_label_fields = LIST(def_usb_fields);
	cfg->cpuid.attribute_blacklist = LIST(def_cpuid_blacklist);
	cfg->cpuid.attribute_whitelist = EMPTY;
	cfg->kernel.kconfig_file = "";
	cfg->kernel.config_opts = LIST(def_kernel_opts);
}

static void list_free(struct nfd_strlist *l)
{
	free(l->own_);
	*l = EMPTY;
}

void nfdconf_free(struct nfd_worker_config *cfg)
{
	struct nfd_strlist *lists[] = {
		&cfg->core.feature_sources, &cfg->core.label_sources, &cfg->core.no_publish_features,
		&cfg->core.owner_refs, &cfg->pci.device_class_whitelist, &cfg->pci.device_label_fields,
		&cfg->usb.device_class_whitelist, &cfg->usb.device_label_fields,
		&cfg->cpuid.attribute_blacklist, &cfg->cpuid.attribute_whitelist,
		&cfg->kernel.config_opts,
	};

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		list_free(lists[i]);
	free(cfg->core.label_whitelist_own_);
	free(cfg->kernel.kconfig_file_own_);
	json_free(cfg->custom);
	json_free(cfg->fake);
	json_free(cfg->core.klog);
	nfdconf_init(cfg);
}

int nfdconf_list_set(struct nfd_strlist *l, const char *const *items, size_t n)
{
	size_t size = n * sizeof(char *);
	char **v;
	char *p;

	if (n == 0) {
		list_free(l);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		size += strlen(items[i]) + 1;
	v = malloc(size);
	if (!v)
		return -FB_ENOMEM;
	p = (char *)(v + n);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(items[i]) + 1;

		memcpy(p, items[i], len);
		v[i] = p;
		p += len;
	}
	list_free(l);
	l->v = (const char *const *)v;
	l->n = n;
	l->own_ = v;
	return 0;
}

/* Replaces *str (and its owned storage *own) with a copy of s. */
static int str_set(const char **str, char **own, const char *s)
{
	char *c = strdup(s);

	if (!c)
		return -FB_ENOMEM;
	free(*own);
	*str = *own = c;
	return 0;
}

/* ---- the member table ------------------------------------------------------ */

enum kind {
	K_OBJ,      /* a struct: members from sub, case-insensitive */
	K_MAP,      /* a map: members from sub, exact names */
	K_BOOL,
	K_STR,      /* a Go string: scalars convert */
	K_REGEXP,   /* labelWhiteList: strings only */
	K_LIST,     /* []string */
	K_DUR,      /* core.sleepInterval */
	K_OWNERS,   /* core.ownerRefs: a checked list */
	K_ALIAS,    /* core.sources: a list kept for after the walk */
	K_NOOWNERS, /* core.noOwnerRefs */
	K_KLOG,     /* core.klog: a map of known names to strings */
	K_KLOGV,    /* core.klog.v */
	K_SCALAR,   /* a klog option we accept and ignore */
	K_RULES,    /* sources.custom: kept as a json array */
	K_FAKE,     /* sources.fake: merged into a json object as Go's decoder merges */
	/* nfd-master.conf: its own messages, kept from before the table */
	M_BOOL,     /* true/false: "not true or false" */
	M_DUR,      /* a Go duration string or integer nanoseconds, into ms */
	M_LIST,     /* a list of strings; null leaves it */
	M_STR,      /* labelWhiteList: strings only */
	M_PAGE,     /* informerPageSize: 0..100000 */
	M_KLOGV,    /* klog.v */
	M_NSSEL,    /* restrictions.nodeFeatureNamespaceSelector: a labelSelector */
	M_IGNORE,   /* a key that is known and not read here */
};

/* Flags of a K_OBJ member in the master's table (the worker's use none). */
enum {
	F_LENIENT = 1, /* not a mapping: ignored; unknown keys: ignored */
	F_STRICT = 2,  /* unknown keys are an error (restrictions: skipping one fails open) */
};

struct field {
	const char *name;
	enum kind kind;
	size_t off; /* into the config struct the walk fills */
	const struct field *sub;
	int flags;
};

#define F(name, kind, member) { name, kind, offsetof(struct nfd_worker_config, member), NULL, 0 }
#define SUB(name, kind, fields) { name, kind, 0, fields, 0 }

static const struct field klog_fields[] = {
	{ "addDirHeader", K_SCALAR, 0, NULL, 0 }, { "alsologtostderr", K_SCALAR, 0, NULL, 0 },
	{ "logBacktraceAt", K_SCALAR, 0, NULL, 0 }, { "logDir", K_SCALAR, 0, NULL, 0 },
	{ "logFile", K_SCALAR, 0, NULL, 0 }, { "logFileMaxSize", K_SCALAR, 0, NULL, 0 },
	{ "logtostderr", K_SCALAR, 0, NULL, 0 }, { "skipHeaders", K_SCALAR, 0, NULL, 0 },
	{ "skipLogHeaders", K_SCALAR, 0, NULL, 0 }, { "stderrthreshold", K_SCALAR, 0, NULL, 0 },
	F("v", K_KLOGV, core.klog_v), { "vmodule", K_SCALAR, 0, NULL, 0 },
	{ "oneOutput", K_SCALAR, 0, NULL, 0 }, { "alsologtostderrthreshold", K_SCALAR, 0, NULL, 0 },
	{ "legacyStderrThresholdBehavior", K_SCALAR, 0, NULL, 0 },
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field core_fields[] = {
	SUB("klog", K_KLOG, klog_fields),
	F("labelWhiteList", K_REGEXP, core.label_whitelist),
	F("noPublish", K_BOOL, core.no_publish),
	{ "noOwnerRefs", K_NOOWNERS, 0, NULL, 0 },
	F("featureSources", K_LIST, core.feature_sources),
	{ "sources", K_ALIAS, 0, NULL, 0 },
	F("labelSources", K_LIST, core.label_sources),
	F("sleepInterval", K_DUR, core.sleep_interval_ms),
	F("noPublishFeatures", K_LIST, core.no_publish_features),
	F("ownerRefs", K_OWNERS, core.owner_refs),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field cpuid_fields[] = {
	F("attributeBlacklist", K_LIST, cpuid.attribute_blacklist),
	F("attributeWhitelist", K_LIST, cpuid.attribute_whitelist),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field cpu_fields[] = {
	SUB("cpuid", K_OBJ, cpuid_fields),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field kernel_fields[] = {
	F("kconfigFile", K_STR, kernel.kconfig_file),
	F("configOpts", K_LIST, kernel.config_opts),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field pci_fields[] = {
	F("deviceClassWhitelist", K_LIST, pci.device_class_whitelist),
	F("deviceLabelFields", K_LIST, pci.device_label_fields),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field usb_fields[] = {
	F("deviceClassWhitelist", K_LIST, usb.device_class_whitelist),
	F("deviceLabelFields", K_LIST, usb.device_label_fields),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field local_fields[] = {
	F("hooksEnabled", K_BOOL, local_hooks_enabled),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field source_fields[] = {
	SUB("cpu", K_OBJ, cpu_fields),
	{ "custom", K_RULES, 0, NULL, 0 },
	{ "fake", K_FAKE, 0, NULL, 0 },
	SUB("kernel", K_OBJ, kernel_fields),
	SUB("local", K_OBJ, local_fields),
	SUB("pci", K_OBJ, pci_fields),
	SUB("usb", K_OBJ, usb_fields),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field top_fields[] = {
	SUB("core", K_OBJ, core_fields),
	SUB("sources", K_MAP, source_fields),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

/* ---- the walk -------------------------------------------------------------- */

#define MAX_PATH 12

struct walk {
	struct nfd_worker_config *cfg; /* the worker's walk */
	char *base;                    /* the struct the offsets are into */
	int master;                    /* nfd-master.conf: members in table order, first
					* spelling wins; messages without positions */
	const char *text, *what;
	size_t len;
	const struct fb_log *lg;
	struct fb_errinfo *ei;
	int apply; /* 0: check and warn, 1: store */
	int depth;
	const char *path[MAX_PATH + 1]; /* names as written; items as decimal text */
	char idx[MAX_PATH][24];
	int is_idx[MAX_PATH];
	struct json *alias;  /* core.sources, borrowed from the tree */
	int no_owner_refs;
};

static void push(struct walk *w, const char *name)
{
	if (w->depth < MAX_PATH) {
		w->path[w->depth] = name;
		w->is_idx[w->depth] = 0;
	}
	w->depth++;
}

static void push_idx(struct walk *w, size_t i)
{
	if (w->depth < MAX_PATH) {
		snprintf(w->idx[w->depth], sizeof(w->idx[0]), "%zu", i);
		w->path[w->depth] = w->idx[w->depth];
		w->is_idx[w->depth] = 1;
	}
	w->depth++;
}

static void pop(struct walk *w)
{
	w->depth--;
}

/* "core.ownerRefs[1]" (escaped: keys come from the file) */
static const char *path_str(const struct walk *w, char *buf, size_t size)
{
	size_t n = 0;

	snprintf(buf, size, "%s", w->depth ? "" : "the document");
	for (int i = 0; i < w->depth && i < MAX_PATH && n + 1 < size; i++) {
		char e[96];

		if (w->is_idx[i])
			snprintf(buf + n, size - n, "[%s]", w->path[i]);
		else
			snprintf(buf + n, size - n, "%s%s", i ? "." : "",
				 log_escape(w->path[i], strlen(w->path[i]), e, sizeof(e)));
		n += strlen(buf + n);
	}
	return buf;
}

static void locate(const struct walk *w, int *line, int *col)
{
	const char *p[MAX_PATH + 1] = { NULL };

	for (int i = 0; i < w->depth && i < MAX_PATH; i++)
		p[i] = w->path[i];
	*line = *col = 0;
	/* NULLs past the depth end the path */
	yaml_locate(w->text, w->len, line, col, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7],
		    p[8], p[9], p[10], p[11], (const char *)NULL);
}

static int fail(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct walk *w, const char *fmt, ...)
{
	char detail[sizeof(w->ei->detail)], path[128], msg[128];
	int line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w->master) /* nfdconf_master_apply_yaml puts the document's name in front */
		return fb_errinfo_set(w->ei, FB_EINVAL, 0, path_str(w, path, sizeof(path)), msg);
	locate(w, &line, &col);
	snprintf(detail, sizeof(detail), "line %d column %d: %s: %s", line, col,
		 path_str(w, path, sizeof(path)), msg);
	return fb_errinfo_set(w->ei, FB_EINVAL, 0, w->what, detail);
}

static void warn_unknown(struct walk *w)
{
	char path[160];
	int line, col;

	if (w->apply)
		return;
	if (w->master) {
		LOG_W(w->lg, "%s: unknown key %s, ignored", w->what, w->path[0]);
		return;
	}
	locate(w, &line, &col);
	LOG_W(w->lg, "%s: line %d column %d: unknown key %s, ignored", w->what, line, col,
	      path_str(w, path, sizeof(path)));
}

static const char *type_name(const struct json *j)
{
	switch (json_type(j)) {
	case JSON_NULL: return "null";
	case JSON_BOOL: return "a boolean";
	case JSON_NUMBER: return "a number";
	case JSON_STRING: return "a string";
	case JSON_ARRAY: return "a list";
	case JSON_OBJECT: return "a mapping";
	default: return "invalid";
	}
}

/* A scalar's text, as sigs.k8s.io/yaml gives it to a Go string. Returns it
 * (borrowed, or in *tofree), NULL when j is no scalar (*tofree NULL) or on
 * allocation failure (*tofree set to j's print failure marker: oom = 1). */
static const char *scalar_text(const struct json *j, char **tofree, int *oom)
{
	*tofree = NULL;
	switch (json_type(j)) {
	case JSON_STRING:
		return json_str(j);
	case JSON_BOOL:
		return json_bool(j) ? "true" : "false";
	case JSON_NUMBER:
		*tofree = json_print(j, NULL);
		if (!*tofree)
			*oom = 1;
		return *tofree;
	default:
		return NULL;
	}
}

/* Checks a list of strings j, and stores it into *l when store is set. */
static int do_list(struct walk *w, const struct json *j, struct nfd_strlist *l, int store)
{
	size_t n = json_count(j), i = 0;
	const char **items = NULL;
	char **frees = NULL;
	int rc = 0, oom = 0;

	if (json_type(j) == JSON_NULL)
		return store ? nfdconf_list_set(l, NULL, 0) : 0;
	if (json_type(j) != JSON_ARRAY)
		return fail(w, "expected a list of strings, got %s", type_name(j));
	if (store) {
		items = calloc(n ? n : 1, sizeof(*items));
		frees = calloc(n ? n : 1, sizeof(*frees));
		if (!items || !frees) {
			rc = -FB_ENOMEM;
			goto out;
		}
	}
	for (const struct json *c = json_child(j); c; c = json_next(c), i++) {
		char *f = NULL;
		const char *s = json_type(c) == JSON_NULL ? "" : scalar_text(c, &f, &oom);

		if (!s && !oom) {
			push_idx(w, i);
			rc = fail(w, "expected a string, got %s", type_name(c));
			pop(w);
			goto out;
		}
		if (!items) {
			free(f);
			continue;
		}
		if (!s) {
			rc = -FB_ENOMEM;
			goto out;
		}
		items[i] = s;
		frees[i] = f;
	}
	if (items)
		rc = nfdconf_list_set(l, items, n);
out:
	if (frees)
		for (size_t k = 0; k < n; k++)
			free(frees[k]);
	free(frees);
	free(items);
	if (oom && rc == 0)
		rc = -FB_ENOMEM;
	return rc;
}

static int do_duration(struct walk *w, const struct json *j, long long *ms)
{
	long long ns = 0;
	int rc;

	switch (json_type(j)) {
	case JSON_NULL:
		return 0;
	case JSON_STRING:
		rc = opt_parse_duration(json_str(j), &ns);
		if (rc < 0) {
			char e[64];

			return fail(w, "invalid duration \"%s\" (want a Go duration like 60s or 1m30s)",
				    log_escape(json_str(j), strlen(json_str(j)), e, sizeof(e)));
		}
		break;
	case JSON_NUMBER: { /* nanoseconds, as upstream's DurationVal */
		char *t = json_print(j, NULL);
		double v;

		if (!t)
			return -FB_ENOMEM;
		v = strtod(t, NULL);
		free(t);
		if (!(v > -9.2e18 && v < 9.2e18))
			return fail(w, "duration out of range");
		ns = (long long)v;
		break;
	}
	default:
		return fail(w, "invalid duration: got %s", type_name(j));
	}
	if (!w->apply)
		return 0;
	if (ns <= 0) {
		*ms = 0;
	} else if (ns < 1000000000LL) {
		LOG_I(w->lg, "%s: too short sleep interval specified (%lld ns), forcing to 1s", w->what, ns);
		*ms = 1000;
	} else {
		*ms = ns / 1000000;
	}
	return 0;
}

static int do_klog_v(struct walk *w, const struct json *j, int *v)
{
	long long n;
	char *end;

	if (json_type(j) == JSON_NULL)
		return 0;
	if (json_type(j) == JSON_NUMBER) {
		if (json_int(j, &n) < 0 || n < INT32_MIN || n > INT32_MAX)
			return fail(w, "expected a verbosity level (an integer)");
	} else if (json_type(j) == JSON_STRING) {
		const char *s = json_str(j);

		errno = 0;
		n = strtoll(s, &end, 10);
		if (*s == '\0' || *end || errno || n < INT32_MIN || n > INT32_MAX)
			return fail(w, "expected a verbosity level (an integer)");
	} else {
		return fail(w, "expected a verbosity level (an integer), got %s", type_name(j));
	}
	if (w->apply)
		*v = (int)n;
	return 0;
}

static int walk_obj(struct walk *w, const struct json *j, const struct field *fields, int exact);
static int walk_master(struct walk *w, const struct json *j, const struct field *fields, int flags);

static int do_master(struct walk *w, const struct field *f, const struct json *j, void *dst);

/* j as a Go map[string]string (scalars convert), or null, into a new
 * object in *out (store) or only checked. */
static int fake_map(struct walk *w, const struct json *j, const char *key, struct json **out)
{
	int oom = 0;

	if (json_type(j) != JSON_NULL && json_type(j) != JSON_OBJECT)
		return fail(w, "%s: expected a mapping, got %s", key, type_name(j));
	if (out && !(*out = json_type(j) == JSON_NULL ? json_new_null() : json_new_object()))
		return -FB_ENOMEM;
	for (const struct json *c = json_child(j); c; c = json_next(c)) {
		char *tofree;
		const char *v = scalar_text(c, &tofree, &oom);

		if (!v && !oom)
			return fail(w, "%s.%s: expected a string, got %s", key, json_key(c), type_name(c));
		if (out && !oom && json_set_str(*out, json_key(c), v) < 0)
			oom = 1;
		free(tofree);
		if (oom)
			return -FB_ENOMEM;
	}
	return 0;
}

static int fake_apply(struct json **dst, const struct json *layer, struct walk *w);

/* sources.fake (upstream's fake source): labels and attributeFeatures are
 * maps that a later layer adds to (Go's decoder keeps a map's entries),
 * flagFeatures and instanceFeatures lists it replaces; null clears one. The
 * first layer starts from NFDSRC_FAKE_DEFAULTS, as upstream's config does. */
static int fake_apply(struct json **dst, const struct json *layer, struct walk *w)
{
	if (json_type(layer) == JSON_NULL)
		return 0;
	if (json_type(layer) != JSON_OBJECT)
		return fail(w, "expected a mapping, got %s", type_name(layer));
	if (dst && !*dst) {
		struct fb_errinfo ei;
		struct json *def = yaml_parse(NFDSRC_FAKE_DEFAULTS, sizeof(NFDSRC_FAKE_DEFAULTS) - 1,
					      "fake defaults", &ei);
		int rc;

		if (!(*dst = json_new_object())) {
			json_free(def);
			return -FB_ENOMEM;
		}
		rc = def ? fake_apply(dst, def, w) : -FB_ENOMEM;
		json_free(def);
		if (rc < 0)
			return rc;
	}
	for (const struct json *c = json_child(layer); c; c = json_next(c)) {
		const char *key = json_key(c);
		struct json *v = NULL, *have = dst ? json_get(*dst, key) : NULL;
		int rc = 0, oom = 0;

		if (strcmp(key, "labels") == 0 || strcmp(key, "attributeFeatures") == 0) {
			if ((rc = fake_map(w, c, key, dst ? &v : NULL)) < 0)
				return rc;
			if (dst && json_type(v) == JSON_OBJECT && json_type(have) == JSON_OBJECT) {
				for (const struct json *e = json_child(v); e && !oom; e = json_next(e))
					oom = json_set_str(have, json_key(e), json_str(e)) < 0;
				json_free(v);
				if (oom)
					return -FB_ENOMEM;
				continue;
			}
		} else if (strcmp(key, "flagFeatures") == 0 || strcmp(key, "instanceFeatures") == 0) {
			int inst = key[0] == 'i';

			if (json_type(c) != JSON_NULL && json_type(c) != JSON_ARRAY)
				return fail(w, "%s: expected a list, got %s", key, type_name(c));
			if (dst && !(v = json_type(c) == JSON_NULL ? json_new_null() : json_new_array()))
				return -FB_ENOMEM;
			for (const struct json *e = json_child(c); e && rc == 0; e = json_next(e)) {
				struct json *item = NULL;
				char *tofree;
				const char *t;

				if (inst) {
					rc = fake_map(w, e, key, v ? &item : NULL);
				} else if (!(t = scalar_text(e, &tofree, &oom))) {
					rc = oom ? -FB_ENOMEM : fail(w, "%s: expected a string, got %s", key, type_name(e));
				} else {
					if (v && !(item = json_new_string(t)))
						rc = -FB_ENOMEM;
					free(tofree);
				}
				if (item && json_append_take(v, item) < 0) {
					json_free(item);
					rc = -FB_ENOMEM;
				}
			}
			if (rc < 0) {
				json_free(v);
				return rc;
			}
		} else {
			if (!w->apply)
				LOG_W(w->lg, "%s: unknown key sources.fake.%s, ignored", w->what, key);
			continue;
		}
		if (dst && json_set_take(*dst, key, v) < 0) {
			json_free(v);
			return -FB_ENOMEM;
		}
	}
	return 0;
}

/* core.klog / klog: every scalar member as a string into *dst (made on
 * first use; a later layer's keys replace an earlier one's), for
 * app_klog_config. What is no mapping, or no scalar, is not kept (the walk
 * has refused or ignored it). */
static int klog_store(const struct json *j, struct json **dst)
{
	int oom = 0;

	if (json_type(j) != JSON_OBJECT)
		return 0;
	if (!*dst && !(*dst = json_new_object()))
		return -FB_ENOMEM;
	for (const struct json *c = json_child(j); c && !oom; c = json_next(c)) {
		char *tofree;
		const char *v = scalar_text(c, &tofree, &oom);

		if (v && json_set_str(*dst, json_key(c), v) < 0)
			oom = 1;
		free(tofree);
	}
	return oom ? -FB_ENOMEM : 0;
}

static int do_fake(struct walk *w, const struct json *j)
{
	return fake_apply(w->apply ? &w->cfg->fake : NULL, j, w);
}

static int do_field(struct walk *w, const struct field *f, const struct json *j)
{
	void *dst = w->base + f->off;
	char *tofree = NULL;
	const char *s;
	int rc = 0, oom = 0;

	switch (f->kind) {
	case K_KLOG:
		rc = w->master ? walk_master(w, j, f->sub, f->flags) : walk_obj(w, j, f->sub, 1);
		if (rc == 0 && w->apply)
			rc = klog_store(j, w->master ? &((struct nfd_master_config *)w->base)->klog
						  : &w->cfg->core.klog);
		return rc;
	case K_OBJ:
	case K_MAP:
		if (w->master)
			return walk_master(w, j, f->sub, f->flags);
		return walk_obj(w, j, f->sub, f->kind != K_OBJ);
	case K_BOOL:
	case K_NOOWNERS:
		if (json_type(j) == JSON_NULL)
			return 0;
		if (json_type(j) != JSON_BOOL)
			return fail(w, "expected true or false, got %s", type_name(j));
		if (w->apply && f->kind == K_BOOL)
			*(int *)dst = json_bool(j);
		if (w->apply && f->kind == K_NOOWNERS)
			w->no_owner_refs = json_bool(j);
		return 0;
	case K_STR:
	case K_REGEXP:
		if (json_type(j) == JSON_NULL)
			return 0;
		s = f->kind == K_REGEXP ? json_str(j) : scalar_text(j, &tofree, &oom);
		if (oom)
			return -FB_ENOMEM;
		if (!s)
			return fail(w, "expected a string, got %s", type_name(j));
		if (w->apply)
			rc = str_set(dst, f->kind == K_REGEXP ? &w->cfg->core.label_whitelist_own_ :
						   &w->cfg->kernel.kconfig_file_own_, s);
		free(tofree);
		return rc;
	case K_LIST:
		return do_list(w, j, dst, w->apply);
	case K_OWNERS: {
		struct nfd_strlist l = EMPTY;
		struct fb_errinfo ei;

		if (w->apply)
			return do_list(w, j, dst, 1);
		/* check a scratch copy */
		rc = do_list(w, j, &l, 1);
		if (rc == 0 && nfdconf_owner_refs(&l, &ei) < 0)
			rc = fail(w, "%s", ei.detail);
		list_free(&l);
		return rc;
	}
	case K_ALIAS:
		rc = do_list(w, j, NULL, 0);
		if (rc == 0)
			w->alias = (struct json *)j;
		return rc;
	case K_DUR:
		return do_duration(w, j, dst);
	case K_KLOGV:
		return do_klog_v(w, j, dst);
	case K_SCALAR:
		if (json_type(j) == JSON_ARRAY || json_type(j) == JSON_OBJECT)
			return fail(w, "expected a string, got %s", type_name(j));
		return 0;
	case K_RULES:
		if (json_type(j) != JSON_NULL && json_type(j) != JSON_ARRAY)
			return fail(w, "expected a list of rules, got %s", type_name(j));
		if (w->apply) {
			struct json *dup = json_type(j) == JSON_ARRAY ? json_dup(j) : NULL;

			if (json_type(j) == JSON_ARRAY && !dup)
				return -FB_ENOMEM;
			json_free(w->cfg->custom);
			w->cfg->custom = dup;
		}
		return 0;
	case K_FAKE:
		return do_fake(w, j);
	default:
		return do_master(w, f, j, dst);
	}
	return 0;
}

static const struct field *find(const struct field *fields, const char *key, int exact)
{
	for (const struct field *f = fields; f->name; f++)
		if (strcmp(f->name, key) == 0)
			return f;
	if (!exact)
		for (const struct field *f = fields; f->name; f++)
			if (strcasecmp(f->name, key) == 0)
				return f;
	return NULL;
}

static int walk_obj(struct walk *w, const struct json *j, const struct field *fields, int exact)
{
	if (json_type(j) == JSON_NULL)
		return 0;
	if (json_type(j) != JSON_OBJECT)
		return fail(w, "expected a mapping, got %s", type_name(j));
	for (const struct json *c = json_child(j); c; c = json_next(c)) {
		const struct field *f = find(fields, json_key(c), exact);
		int rc = 0;

		push(w, json_key(c));
		if (f)
			rc = do_field(w, f, c);
		else
			warn_unknown(w);
		pop(w);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int nfdconf_apply_yaml(struct nfd_worker_config *cfg, const char *text, size_t len, const char *what,
		       const struct fb_log *lg, struct fb_errinfo *ei)
{
	struct fb_errinfo ei2;
	struct walk w = { .cfg = cfg, .base = (char *)cfg, .text = text, .what = what, .len = len, .lg = lg,
			  .ei = ei ? ei : &ei2 };
	struct json *doc = yaml_parse(text, len, what, w.ei);
	int rc;

	if (!doc)
		return -w.ei->code;
	rc = walk_obj(&w, doc, top_fields, 0);
	if (rc == 0) {
		w.apply = 1;
		w.alias = NULL;
		rc = walk_obj(&w, doc, top_fields, 0);
	}
	if (rc == 0 && w.alias) {
		LOG_I(lg, "%s: usage of deprecated 'core.sources' config file option, please use "
		      "'core.labelSources' instead", what);
		w.depth = 0;
		rc = do_list(&w, w.alias, &cfg->core.label_sources, 1);
	}
	if (rc == 0 && w.no_owner_refs) {
		LOG_W(lg, "%s: 'core.noOwnerRefs' is deprecated, use 'core.ownerRefs: []'", what);
		list_free(&cfg->core.owner_refs);
	}
	json_free(doc);
	if (rc == -FB_ENOMEM)
		fb_errinfo_set(w.ei, FB_ENOMEM, 0, what, NULL);
	return rc;
}

int nfdconf_load_file(struct nfd_worker_config *cfg, const char *path, const struct fb_log *lg,
		      struct fb_errinfo *ei)
{
	char *buf = NULL;
	ssize_t len = sysfs_read_alloc(AT_FDCWD, path, CONF_MAX_SIZE, &buf);
	int rc;

	if (len == -FB_ENOENT) {
		LOG_I(lg, "config file %s not found, using defaults", path);
		return 0;
	}
	if (len == -FB_E2BIG)
		return fb_errinfo_set(ei, FB_E2BIG, 0, path, "config file larger than 1 MiB");
	if (len == -FB_EINVAL)
		return fb_errinfo_set(ei, FB_EINVAL, 0, path, "not a regular file");
	if (len < 0)
		return fb_errinfo_set(ei, (int)-len, len == -FB_EIO ? errno : 0, path, "reading the config file");
	rc = nfdconf_apply_yaml(cfg, buf, (size_t)len, path, lg, ei);
	free(buf);
	return rc;
}

/* ---- nfd-master.conf --------------------------------------------------------
 * The same walk over the master's table. Kept from the master's decoder of
 * before: members are read in table order (so the first bad value in that
 * order is the one reported), a member is the exact key or else the first
 * key equal ignoring ASCII case, messages name the member without a
 * position, and top-level unknown keys warn without one. */

#define M(name, kind, member) { name, kind, offsetof(struct nfd_master_config, member), NULL, 0 }
#define MSUB(name, fields, flags) { name, K_OBJ, 0, fields, flags }

static const struct field m_le_fields[] = {
	M("leaseDuration", M_DUR, lease_ms),
	M("renewDeadline", M_DUR, renew_ms),
	M("retryPeriod", M_DUR, retry_ms),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field m_klog_fields[] = {
	M("v", M_KLOGV, klog_v),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

/* every upstream key is implemented */
static const struct field m_restr_fields[] = {
	M("allowOverwrite", M_BOOL, allow_overwrite),
	M("disableLabels", M_BOOL, disable_labels),
	M("disableAnnotations", M_BOOL, disable_annotations),
	M("disableExtendedResources", M_BOOL, disable_ers),
	M("denyNodeFeatureLabels", M_BOOL, deny_nf_labels),
	M("nodeFeatureNamespaceSelector", M_NSSEL, ns_query),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

static const struct field m_top_fields[] = {
	M("noPublish", M_BOOL, no_publish),
	M("enableTaints", M_BOOL, enable_taints),
	M("extraLabelNs", M_LIST, extra_ns),
	M("denyLabelNs", M_LIST, deny_ns),
	M("resyncPeriod", M_DUR, resync_ms),
	M("labelWhiteList", M_STR, whitelist),
	MSUB("leaderElection", m_le_fields, F_LENIENT),
	{ "nfdApiParallelism", M_IGNORE, 0, NULL, 0 }, /* the flag's business */
	M("informerPageSize", M_PAGE, page_size),
	{ "klog", K_KLOG, 0, m_klog_fields, F_LENIENT },
	MSUB("restrictions", m_restr_fields, F_STRICT),
	/* v0.15-v0.17 (dropped in v0.18): false, no feature.node.kubernetes.io/
	 * put in front of unprefixed names, which are then refused */
	M("autoDefaultNs", M_BOOL, auto_default_ns),
	{ NULL, K_OBJ, 0, NULL, 0 },
};

/* A member by name, exact first, then ignoring ASCII case (Go's encoding/json). */
static const struct json *ci_get(const struct json *o, const char *key)
{
	const struct json *c = json_get(o, key);

	if (json_type(o) != JSON_OBJECT)
		return NULL;
	for (const struct json *e = json_child(o); !c && e; e = json_next(e))
		if (strcasecmp(json_key(e), key) == 0)
			c = e;
	return c;
}

static int walk_master(struct walk *w, const struct json *j, const struct field *fields, int flags)
{
	if (json_type(j) == JSON_NULL)
		return 0;
	if (json_type(j) != JSON_OBJECT)
		return flags & F_LENIENT ? 0 : fail(w, "not a mapping");
	for (const struct json *c = json_child(j); c && !(flags & F_LENIENT); c = json_next(c)) {
		char key[128];

		if (find(fields, json_key(c), 0))
			continue;
		if (!(flags & F_STRICT)) {
			push(w, json_key(c));
			warn_unknown(w);
			pop(w);
			continue;
		}
		snprintf(key, sizeof(key), "%s.%.100s", w->depth ? w->path[w->depth - 1] : "", json_key(c));
		return fb_errinfo_set(w->ei, FB_EINVAL, 0, key,
				      "not implemented: refusing to start (ignoring a restriction would fail open)");
	}
	for (const struct field *f = fields; f->name; f++) {
		const struct json *c = ci_get(j, f->name);
		int rc;

		if (!c)
			continue;
		push(w, f->name);
		rc = do_field(w, f, c);
		pop(w);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The master's value kinds: j is present (null included). */
static int do_master(struct walk *w, const struct field *f, const struct json *j, void *dst)
{
	struct nfd_master_config *c = (struct nfd_master_config *)w->base;
	long long n;

	if (json_type(j) == JSON_NULL && f->kind != M_NSSEL)
		return 0;
	switch (f->kind) {
	case M_BOOL:
		if (json_bool(j) < 0)
			return fail(w, "not true or false");
		if (w->apply)
			*(int *)dst = json_bool(j);
		return 0;
	case M_DUR:
		if (json_type(j) != JSON_NUMBER || json_int(j, &n) < 0) {
			if (!json_str(j) || opt_parse_duration(json_str(j), &n) < 0)
				return fail(w, "not a duration (like 1h, 90s)");
		}
		if (w->apply)
			*(long long *)dst = n / 1000000;
		return 0;
	case M_LIST: {
		const char **items;
		size_t k = 0;
		int rc;

		if (json_type(j) != JSON_ARRAY)
			return fail(w, "not a list");
		for (const struct json *e = json_child(j); e; e = json_next(e))
			if (!json_str(e))
				return fail(w, "list items must be strings");
		if (!w->apply)
			return 0;
		if (!(items = calloc(json_count(j) + 1, sizeof(*items))))
			return -FB_ENOMEM;
		for (const struct json *e = json_child(j); e; e = json_next(e))
			items[k++] = json_str(e);
		rc = nfdconf_list_set(dst, items, k);
		free(items);
		return rc;
	}
	case M_STR:
		if (!json_str(j))
			return fail(w, "not a string");
		return w->apply ? str_set(dst, &c->whitelist_own_, json_str(j)) : 0;
	case M_PAGE:
		if (json_int(j, &n) < 0 || n < 0 || n > 100000)
			return fail(w, "not a number from 0 to 100000");
		if (w->apply)
			*(long *)dst = (long)n;
		return 0;
	case M_KLOGV:
		if (json_int(j, &n) < 0 && (!json_str(j) || (n = strtol(json_str(j), NULL, 10)) < 0))
			return fail(w, "not a number");
		if (w->apply) {
			*(long *)dst = (long)n;
			c->have_klog_v = 1;
		}
		return 0;
	case M_NSSEL: {
		char scratch[NFDCONF_NS_QUERY_MAX], d[sizeof(w->ei->detail)];
		struct fb_errinfo sei;
		int rc;

		fb_errinfo_init(&sei);
		rc = kube_label_selector(j, w->apply ? dst : scratch, NFDCONF_NS_QUERY_MAX, &sei);
		if (rc >= 0)
			return 0;
		if (rc == -FB_E2BIG)
			snprintf(d, sizeof(d), "longer than %d bytes as an encoded labelSelector",
				 NFDCONF_NS_QUERY_MAX - 1);
		else
			snprintf(d, sizeof(d), "%.50s: %.100s", sei.what, sei.detail);
		return fb_errinfo_set(w->ei, FB_EINVAL, 0, "restrictions.nodeFeatureNamespaceSelector", d);
	}
	default: /* M_IGNORE */
		return 0;
	}
}

void nfdconf_master_init(struct nfd_master_config *c)
{
	memset(c, 0, sizeof(*c));
	c->allow_overwrite = 1;
	c->auto_default_ns = 1;
	c->extra_ns = EMPTY;
	c->deny_ns = EMPTY;
	c->resync_ms = 3600000;
	c->lease_ms = 15000;
	c->renew_ms = 10000;
	c->retry_ms = 2000;
	c->page_size = 50;
}

void nfdconf_master_free(struct nfd_master_config *c)
{
	list_free(&c->extra_ns);
	list_free(&c->deny_ns);
	free(c->whitelist_own_);
	c->whitelist_own_ = NULL;
	c->whitelist = NULL;
	json_free(c->klog);
	c->klog = NULL;
}

int nfdconf_master_apply_yaml(struct nfd_master_config *c, const char *text, size_t len, const char *what,
			      const struct fb_log *lg, struct fb_errinfo *ei)
{
	struct fb_errinfo ei2;
	struct walk w = { .base = (char *)c, .master = 1, .text = text, .what = what, .len = len, .lg = lg,
			  .ei = ei ? ei : &ei2 };
	struct json *doc = yaml_parse(text, len, what, w.ei);
	int rc = 0;

	if (!doc)
		return -w.ei->code;
	if (json_type(doc) != JSON_NULL && json_type(doc) != JSON_OBJECT) {
		json_free(doc);
		return fb_errinfo_set(w.ei, FB_EINVAL, 0, what, "not a mapping of options");
	}
	rc = walk_master(&w, doc, m_top_fields, 0);
	if (rc == 0) {
		w.apply = 1;
		rc = walk_master(&w, doc, m_top_fields, 0);
	}
	json_free(doc);
	if (rc == -FB_ENOMEM) {
		fb_errinfo_set(w.ei, FB_ENOMEM, 0, what, NULL);
	} else if (rc < 0) {
		char d[sizeof(w.ei->detail)];

		snprintf(d, sizeof(d), "%.60s: %.95s", w.ei->what, w.ei->detail);
		fb_errinfo_set(w.ei, -rc, 0, what, d);
	}
	return rc;
}

int nfdconf_master_load_file(struct nfd_master_config *c, const char *path, const struct fb_log *lg,
			     struct fb_errinfo *ei)
{
	char *buf = NULL, what[sizeof(ei->what)];
	ssize_t len = sysfs_read_alloc(AT_FDCWD, path, CONF_MAX_SIZE, &buf);
	int rc;

	if (len == -FB_ENOENT) {
		LOG_I(lg, "config file %s not found, using defaults", path);
		return 0;
	}
	if (len < 0) {
		free(buf);
		snprintf(what, sizeof(what), "reading %s", path);
		return fb_errinfo_set(ei, (int)-len, 0, what, NULL);
	}
	rc = nfdconf_master_apply_yaml(c, buf, (size_t)len, path, lg, ei);
	free(buf);
	return rc;
}

/* ---- helpers for the applet ------------------------------------------------- */

unsigned long long nfdconf_sources_mask(const struct nfd_strlist *list, const char *const *known,
					size_t nknown, unsigned long long all_mask, const char *what,
					const struct fb_log *lg)
{
	unsigned long long mask = 0;

	if (nknown > 64)
		nknown = 64;
	for (size_t i = 0; i < list->n; i++) {
		const char *name = list->v[i];
		int disable = name[0] == '-';
		size_t k;

		if (strcmp(name, "all") == 0) {
			mask |= all_mask;
			continue;
		}
		for (k = 0; k < nknown; k++)
			if (strcmp(known[k], name + disable) == 0)
				break;
		if (k == nknown) {
			char e[96];

			LOG_I(lg, "skipping unknown source specified in %s: \"%s\"", what,
			      log_escape(name, strlen(name), e, sizeof(e)));
			continue;
		}
		if (disable)
			mask &= ~(1ULL << k);
		else
			mask |= 1ULL << k;
	}
	return mask;
}

int nfdconf_owner_refs(const struct nfd_strlist *list, struct fb_errinfo *ei)
{
	static const char *const kinds[] = { "node", "pod", "ds" };
	int mask = 0;

	for (size_t i = 0; i < list->n; i++) {
		char e[64], detail[128];
		size_t k;

		for (k = 0; k < 3; k++)
			if (strcmp(list->v[i], kinds[k]) == 0)
				break;
		if (k == 3 || (mask & (1 << k))) {
			snprintf(detail, sizeof(detail), k == 3 ?
				 "invalid owner reference kind \"%s\" (want node, pod or ds)" :
				 "duplicate owner reference kind \"%s\"",
				 log_escape(list->v[i], strlen(list->v[i]), e, sizeof(e)));
			return fb_errinfo_set(ei, FB_EINVAL, 0, "ownerRefs", detail);
		}
		mask |= 1 << k;
	}
	return mask;
}
