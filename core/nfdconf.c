/* nfdconf: nfd-worker.conf and --options. The document is parsed into a json
 * tree (core/yaml) and walked against a table of members, twice: the first
 * walk checks every value and warns about unknown keys, the second stores,
 * so a bad value leaves the config as it was. */
#include "nfdconf.h"

#include "json.h"
#include "log.h"
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

/* ---- durations (Go's time.ParseDuration) ---------------------------------- */

int nfdconf_parse_duration(const char *s, long long *ns)
{
	static const struct { const char *u; unsigned long long mul; } units[] = {
		{ "ns", 1ULL }, { "us", 1000ULL }, { "\xC2\xB5s", 1000ULL }, { "\xCE\xBCs", 1000ULL },
		{ "ms", 1000000ULL }, { "s", 1000000000ULL }, { "m", 60000000000ULL },
		{ "h", 3600000000000ULL },
	};
	const unsigned long long lim = 1ULL << 63;
	unsigned long long d = 0;
	int neg = 0;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0)
		return *ns = 0, 0;
	if (*s == '\0')
		return -FB_EINVAL;
	while (*s) {
		unsigned long long v = 0, f = 0, mul;
		double scale = 1;
		int pre = 0, post = 0;
		const char *u;
		size_t ulen, i;

		if (*s != '.' && (*s < '0' || *s > '9'))
			return -FB_EINVAL;
		for (; *s >= '0' && *s <= '9'; s++, pre = 1) {
			if (v > lim / 10)
				return -FB_ERANGE;
			v = v * 10 + (unsigned long long)(*s - '0');
			if (v > lim)
				return -FB_ERANGE;
		}
		if (*s == '.') {
			int overflow = 0;

			for (s++; *s >= '0' && *s <= '9'; s++, post = 1) {
				if (overflow)
					continue;
				if (f > (lim - 1) / 10) { /* further digits cannot matter */
					overflow = 1;
					continue;
				}
				f = f * 10 + (unsigned long long)(*s - '0');
				scale *= 10;
			}
		}
		if (!pre && !post)
			return -FB_EINVAL;
		for (u = s; *s && *s != '.' && (*s < '0' || *s > '9'); s++)
			;
		ulen = (size_t)(s - u);
		if (ulen == 0)
			return -FB_EINVAL; /* missing unit */
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (strlen(units[i].u) == ulen && memcmp(units[i].u, u, ulen) == 0)
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -FB_EINVAL;
		mul = units[i].mul;
		if (v > lim / mul)
			return -FB_ERANGE;
		v *= mul;
		if (f > 0) {
			v += (unsigned long long)((double)f * ((double)mul / scale));
			if (v > lim)
				return -FB_ERANGE;
		}
		d += v;
		if (d > lim)
			return -FB_ERANGE;
	}
	if (neg) {
		*ns = d == lim ? LLONG_MIN : -(long long)d;
		return 0;
	}
	if (d > lim - 1)
		return -FB_ERANGE;
	*ns = (long long)d;
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
};

struct field {
	const char *name;
	enum kind kind;
	size_t off; /* into struct nfd_worker_config */
	const struct field *sub;
};

#define F(name, kind, member) { name, kind, offsetof(struct nfd_worker_config, member), NULL }
#define SUB(name, kind, fields) { name, kind, 0, fields }

static const struct field klog_fields[] = {
	{ "addDirHeader", K_SCALAR, 0, NULL }, { "alsologtostderr", K_SCALAR, 0, NULL },
	{ "logBacktraceAt", K_SCALAR, 0, NULL }, { "logDir", K_SCALAR, 0, NULL },
	{ "logFile", K_SCALAR, 0, NULL }, { "logFileMaxSize", K_SCALAR, 0, NULL },
	{ "logtostderr", K_SCALAR, 0, NULL }, { "skipHeaders", K_SCALAR, 0, NULL },
	{ "skipLogHeaders", K_SCALAR, 0, NULL }, { "stderrthreshold", K_SCALAR, 0, NULL },
	F("v", K_KLOGV, core.klog_v), { "vmodule", K_SCALAR, 0, NULL },
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field core_fields[] = {
	SUB("klog", K_KLOG, klog_fields),
	F("labelWhiteList", K_REGEXP, core.label_whitelist),
	F("noPublish", K_BOOL, core.no_publish),
	{ "noOwnerRefs", K_NOOWNERS, 0, NULL },
	F("featureSources", K_LIST, core.feature_sources),
	{ "sources", K_ALIAS, 0, NULL },
	F("labelSources", K_LIST, core.label_sources),
	F("sleepInterval", K_DUR, core.sleep_interval_ms),
	F("noPublishFeatures", K_LIST, core.no_publish_features),
	F("ownerRefs", K_OWNERS, core.owner_refs),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field cpuid_fields[] = {
	F("attributeBlacklist", K_LIST, cpuid.attribute_blacklist),
	F("attributeWhitelist", K_LIST, cpuid.attribute_whitelist),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field cpu_fields[] = {
	SUB("cpuid", K_OBJ, cpuid_fields),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field kernel_fields[] = {
	F("kconfigFile", K_STR, kernel.kconfig_file),
	F("configOpts", K_LIST, kernel.config_opts),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field pci_fields[] = {
	F("deviceClassWhitelist", K_LIST, pci.device_class_whitelist),
	F("deviceLabelFields", K_LIST, pci.device_label_fields),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field usb_fields[] = {
	F("deviceClassWhitelist", K_LIST, usb.device_class_whitelist),
	F("deviceLabelFields", K_LIST, usb.device_label_fields),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field local_fields[] = {
	F("hooksEnabled", K_BOOL, local_hooks_enabled),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field source_fields[] = {
	SUB("cpu", K_OBJ, cpu_fields),
	{ "custom", K_RULES, 0, NULL },
	SUB("kernel", K_OBJ, kernel_fields),
	SUB("local", K_OBJ, local_fields),
	SUB("pci", K_OBJ, pci_fields),
	SUB("usb", K_OBJ, usb_fields),
	{ NULL, K_OBJ, 0, NULL },
};

static const struct field top_fields[] = {
	SUB("core", K_OBJ, core_fields),
	SUB("sources", K_MAP, source_fields),
	{ NULL, K_OBJ, 0, NULL },
};

/* ---- the walk -------------------------------------------------------------- */

#define MAX_PATH 12

struct walk {
	struct nfd_worker_config *cfg;
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
		rc = nfdconf_parse_duration(json_str(j), &ns);
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

static int do_field(struct walk *w, const struct field *f, const struct json *j)
{
	void *dst = (char *)w->cfg + f->off;
	char *tofree = NULL;
	const char *s;
	int rc = 0, oom = 0;

	switch (f->kind) {
	case K_OBJ:
	case K_MAP:
	case K_KLOG:
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
	struct walk w = { .cfg = cfg, .text = text, .what = what, .len = len, .lg = lg,
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
