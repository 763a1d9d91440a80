/* nodelabels: the filter (namespace policy, whitelist, values, dynamic
 * values, quantities, taints), the node diff (exact JSON Patches, checked
 * again by applying them with a small RFC 6902 applier and diffing the
 * result, which must need no further patch) and prune.
 *
 * JSON in the tables is written with ' for " and these shorthands:
 * F/ = feature.node.kubernetes.io/, N/ = nfd.node.kubernetes.io/,
 * R/ = node-restriction.kubernetes.io/ (and F~1, N~1, R~1 in JSON
 * Pointers); the record label's value (a digest) is compared as 'R'. */
#include "t.h"

#include "../../core/features.h"
#include "../../core/json.h"
#include "../../core/log.h"
#include "../../core/nodelabels.h"
#include "../../core/re.h"


static struct fb_log lg;

/* ---- helpers ----------------------------------------------------------- */

static char *expand(const char *s)
{
	static const struct {
		const char *from, *to;
	} sh[] = {
		{ "F/", "feature.node.kubernetes.io/" }, { "F~1", "feature.node.kubernetes.io~1" },
		{ "N/", "nfd.node.kubernetes.io/" },     { "N~1", "nfd.node.kubernetes.io~1" },
		{ "R/", "node-restriction.kubernetes.io/" }, { "R~1", "node-restriction.kubernetes.io~1" },
	};
	char *out = malloc(strlen(s) * 12 + 1), *o = out;

	while (*s) {
		size_t i;

		for (i = 0; i < sizeof(sh) / sizeof(sh[0]); i++)
			if (strncmp(s, sh[i].from, strlen(sh[i].from)) == 0)
				break;
		if (i < sizeof(sh) / sizeof(sh[0])) {
			o = stpcpy(o, sh[i].to);
			s += strlen(sh[i].from);
		} else {
			*o++ = *s == '\'' ? '"' : *s;
			s++;
		}
	}
	*o = '\0';
	return out;
}

/* Parses a table's JSON (NULL stays NULL); a broken table ends the test. */
static struct json *J(const char *s)
{
	struct fb_errinfo ei;
	struct json *j;
	char *x;

	if (!s)
		return NULL;
	x = expand(s);
	j = json_parse(x, strlen(x), "table", &ei);
	if (!j) {
		fprintf(stderr, "bad table JSON: %s (%s)\n", x, ei.detail);
		exit(2);
	}
	free(x);
	return j;
}

static const char *show(const struct json *j)
{
	static char buf[4][8192];
	static int k;
	char *s = j ? json_print(j, NULL) : NULL;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s", s ? s : "null");
	free(s);
	return buf[k];
}

/* A copy of j with every record label value (a member named "...nfd-record",
 * or an op on such a path) replaced by "R". Owned. */
static struct json *masked(const struct json *j)
{
	struct json *m = json_dup(j);
	struct json *stack[64];
	int n = 0;

	if (m)
		stack[n++] = m;
	while (n > 0) {
		struct json *o = stack[--n];
		const char *path = json_get_str(o, "path", NULL);
		char key[300] = ""; /* one record label per labels object */

		if (path && strstr(path, "nfd-record") && json_get(o, "value"))
			json_set_str(o, "value", "R");
		for (struct json *c = json_child(o); c; c = json_next(c)) {
			if (json_key(c) && strstr(json_key(c), "nfd-record") && json_str(c))
				snprintf(key, sizeof(key), "%s", json_key(c));
			else if ((json_type(c) == JSON_OBJECT || json_type(c) == JSON_ARRAY) && n < 64)
				stack[n++] = c;
		}
		if (key[0])
			json_set_str(o, key, "R");
	}
	return m;
}

static void set_from(struct nl_set *s, const char *text)
{
	struct json *j = J(text);

	memset(s, 0, sizeof(*s));
	if (!j)
		return;
	s->labels = json_dup(json_get(j, "labels"));
	s->annotations = json_dup(json_get(j, "annotations"));
	s->extended_resources = json_dup(json_get(j, "ers"));
	s->taints = json_dup(json_get(j, "taints"));
	json_free(j);
}

/* The set as one object, empty members left out: {"labels","annotations","ers","taints"}. */
static struct json *set_json(const struct nl_set *s)
{
	struct json *o = json_new_object();

	if (json_count(s->labels))
		json_set_take(o, "labels", json_dup(s->labels));
	if (json_count(s->annotations))
		json_set_take(o, "annotations", json_dup(s->annotations));
	if (json_count(s->extended_resources))
		json_set_take(o, "ers", json_dup(s->extended_resources));
	if (json_count(s->taints))
		json_set_take(o, "taints", json_dup(s->taints));
	return o;
}

/* RFC 6902 on object members (all nodelabels ever addresses): add, remove,
 * replace, test; a missing parent, a missing target of remove/replace or a
 * failed test is an error, as on the API server. Returns 0 or -1. */
static int patch_apply(struct json *doc, const struct json *ops, char *err, size_t size)
{
	for (const struct json *op = json_child(ops); op; op = json_next(op)) {
		const char *o = json_get_str(op, "op", ""), *path = json_get_str(op, "path", "");
		struct json *cur = doc, *val = json_get(op, "value");
		char tok[1024], *t;

		if (path[0] != '/') {
			snprintf(err, size, "bad path %s", path);
			return -1;
		}
		for (path++;;) {
			t = tok;
			for (; *path && *path != '/'; path++) {
				if (*path == '~' && (path[1] == '0' || path[1] == '1'))
					*t++ = *++path == '0' ? '~' : '/';
				else
					*t++ = *path;
			}
			*t = '\0';
			if (!*path)
				break;
			path++;
			if (!(cur = json_get(cur, tok))) {
				snprintf(err, size, "%s: missing parent of %s", o, json_get_str(op, "path", ""));
				return -1;
			}
		}
		if (json_type(cur) != JSON_OBJECT) {
			snprintf(err, size, "%s: parent is not an object", o);
			return -1;
		}
		if (strcmp(o, "add") == 0) {
			json_set_take(cur, tok, json_dup(val));
		} else if (strcmp(o, "remove") == 0 || strcmp(o, "replace") == 0) {
			if (!json_get(cur, tok)) {
				snprintf(err, size, "%s: missing %s", o, json_get_str(op, "path", ""));
				return -1;
			}
			if (o[2] == 'm')
				json_remove(cur, tok);
			else
				json_set_take(cur, tok, json_dup(val));
		} else if (strcmp(o, "test") == 0) {
			if (!json_equal(json_get(cur, tok), val)) {
				snprintf(err, size, "test of %s failed", json_get_str(op, "path", ""));
				return -1;
			}
		} else {
			snprintf(err, size, "unknown op %s", o);
			return -1;
		}
	}
	return 0;
}

/* ---- the applier itself ------------------------------------------------ */

static void test_applier(void)
{
	struct json *doc = J("{'a':{'b~/c':1}}"), *ok = J("[{'op':'add','path':'/a/x','value':2},"
							  "{'op':'remove','path':'/a/b~0~1c'},"
							  "{'op':'test','path':'/a/x','value':2}]");
	struct json *bad1 = J("[{'op':'add','path':'/nope/x','value':1}]");
	struct json *bad2 = J("[{'op':'remove','path':'/a/zz'}]");
	struct json *bad3 = J("[{'op':'test','path':'/a/x','value':3}]");
	char err[256];

	T_INT("applier: add, remove with ~0 ~1, test", patch_apply(doc, ok, err, sizeof(err)), 0);
	T_STR("applier: result", show(doc), "{\"a\":{\"x\":2}}");
	T_INT("applier: add below a missing parent fails", patch_apply(doc, bad1, err, sizeof(err)), -1);
	T_INT("applier: remove of a missing key fails", patch_apply(doc, bad2, err, sizeof(err)), -1);
	T_INT("applier: failed test", patch_apply(doc, bad3, err, sizeof(err)), -1);
	json_free(doc);
	json_free(ok);
	json_free(bad1);
	json_free(bad2);
	json_free(bad3);
}

/* ---- filter ------------------------------------------------------------ */

static const struct fcase {
	const char *name;
	const char *in, *want;
	unsigned long rl, ra, re, rt; /* rejects: labels, annotations, ers, taints */
	const char *deny, *extra, *whitelist; /* comma lists; a regex */
	int taints, nofeat;
	const char *log; /* in the log, or NULL */
	int unprefixed;  /* the policy's (NL_AUTO_PREFIX: 0) */
} fcases[] = {
	{ "unprefixed keys get the default namespace",
	  "{'labels':{'cpu-avx':'true','F/x':'1'},'annotations':{'note':'hi'},'ers':{'gpu':'2'}}",
	  "{'labels':{'F/cpu-avx':'true','F/x':'1'},'annotations':{'F/note':'hi'},'ers':{'F/gpu':'2'}}" },
	{ "a prefixed duplicate wins over the unprefixed key",
	  "{'labels':{'a':'unprefixed','F/a':'prefixed'}}", "{'labels':{'F/a':'prefixed'}}" },
	{ "kubernetes.io and its subdomains are denied",
	  "{'labels':{'kubernetes.io/a':'1','node.kubernetes.io/b':'1','x.y.kubernetes.io/c':'1'}}", "{}", 3, .log = "namespace node.kubernetes.io is not allowed" },
	{ "feature and profile namespaces and their subdomains are allowed",
	  "{'labels':{'F/a':'1','sub.F/b':'1','profile.node.kubernetes.io/c':'1','x.profile.node.kubernetes.io/d':'1'}}",
	  "{'labels':{'F/a':'1','sub.F/b':'1','profile.node.kubernetes.io/c':'1','x.profile.node.kubernetes.io/d':'1'}}" },
	{ "a look-alike of kubernetes.io is not kubernetes.io",
	  "{'labels':{'notkubernetes.io/a':'1','kubernetes.io.example.com/b':'1'}}",
	  "{'labels':{'notkubernetes.io/a':'1','kubernetes.io.example.com/b':'1'}}" },
	{ "k8s.io and other namespaces are allowed",
	  "{'labels':{'k8s.io/a':'1','example.com/b':'1','sub.k8s.io/c':'1'}}",
	  "{'labels':{'k8s.io/a':'1','example.com/b':'1','sub.k8s.io/c':'1'}}" },
	{ "deny_ns exact",
	  "{'labels':{'example.com/a':'1','sub.example.com/b':'1','other.org/c':'1'}}",
	  "{'labels':{'sub.example.com/b':'1','other.org/c':'1'}}", 1, .deny = "example.com" },
	{ "deny_ns wildcard: leading * stripped, suffix match",
	  "{'labels':{'example.com/a':'1','sub.example.com/b':'1','x.sub.example.com/c':'1','other.org/d':'1'}}",
	  "{'labels':{'example.com/a':'1','other.org/d':'1'}}", 2, .deny = "*.example.com" },
	{ "deny_ns wildcard without a dot matches any suffix (as upstream)",
	  "{'labels':{'badexample.com/a':'1','example.com/b':'1'}}", "{}", 2, .deny = "*example.com" },
	{ "extra_ns re-allows a denied namespace (exactly)",
	  "{'labels':{'example.com/a':'1','sub.example.com/b':'1','other.org/c':'1'}}",
	  "{'labels':{'sub.example.com/b':'1','other.org/c':'1'}}", 1, .deny = "example.com,*.example.com,other.org",
	  .extra = "sub.example.com,other.org" },
	{ "extra_ns re-allows kubernetes.io namespaces too (upstream's code)",
	  "{'labels':{'node.kubernetes.io/a':'1','kubernetes.io/b':'1'}}",
	  "{'labels':{'node.kubernetes.io/a':'1'}}", 1, .extra = "node.kubernetes.io" },
	{ "deny_ns can deny the feature namespace unless extra re-allows it",
	  "{'labels':{'F/a':'1'}}", "{}", 1, .deny = "feature.node.kubernetes.io" },
	{ "whitelist on the name part, unanchored",
	  "{'labels':{'F/cpu-avx':'1','F/pci-0300':'1','example.com/cpu':'1'}}",
	  "{'labels':{'F/cpu-avx':'1','example.com/cpu':'1'}}", 1, .whitelist = "^cpu",
	  .log = "does not match the label whitelist" },
	{ "invalid label values and keys",
	  "{'labels':{'F/a':'has space','F/b':'-x','F/c':'0123456789012345678901234567890123456789012345678901234567890123',"
	  "'F/d':'','F/e':'ok.value_1','F/Bad Name':'1','Bad.Prefix/x':'1','/x':'1'}}",
	  "{'labels':{'F/d':'','F/e':'ok.value_1'}}", 6, .log = "invalid value" },
	{ "a value that is not a string",
	  "{'labels':{'F/a':1,'F/b':'x'}}", "{'labels':{'F/b':'x'}}", 1, .log = "value is not a string" },
	{ "dynamic values from attribute features",
	  "{'labels':{'vendor':'@cpu.model.vendor_id','kver':'@kernel.version.full'},'ers':{'cores':'@cpu.topology.cores'}}",
	  "{'labels':{'F/vendor':'GenuineIntel','F/kver':'6.1.0-13-amd64'},'ers':{'F/cores':'16'}}" },
	{ "dynamic values: missing feature, element, flag feature, bad form",
	  "{'labels':{'a':'@cpu.model.nope','b':'@cpu.nope.x','c':'@cpu.cpuid.AVX','d':'@cpu.model','e':'@'}}",
	  "{}", 5, .log = "element nope not found on feature cpu.model" },
	{ "dynamic values without features are dropped",
	  "{'labels':{'a':'@cpu.model.vendor_id','b':'plain'}}", "{'labels':{'F/b':'plain'}}", 1, .nofeat = 1,
	  .log = "feature cpu.model not found" },
	{ "a dynamic value must still be a valid label value",
	  "{'labels':{'a':'@cpu.model.name'}}", "{}", 1 },
	{ "annotations: only the feature namespace of kubernetes.io, values up to 1024 bytes",
	  "{'annotations':{'F/a':'x','sub.F/b':'x','profile.node.kubernetes.io/c':'x','N/feature-labels':'x',"
	  "'example.com/d':'has spaces, @signs and: colons','e':'@cpu.model.vendor_id'}}",
	  "{'annotations':{'F/a':'x','sub.F/b':'x','example.com/d':'has spaces, @signs and: colons','F/e':'@cpu.model.vendor_id'}}",
	  0, 2 },
	{ "annotations: deny_ns, extra_ns and the whitelist are for labels only",
	  "{'annotations':{'example.com/a':'x','node.kubernetes.io/b':'x'}}", "{'annotations':{'example.com/a':'x'}}",
	  0, 1, .deny = "example.com", .extra = "node.kubernetes.io", .whitelist = "^zzz" },
	{ "extended resources: namespaces, extra_ns not applied",
	  "{'ers':{'F/a':'1','sub.F/b':'2','profile.node.kubernetes.io/c':'3','example.com/d':'4','node.kubernetes.io/e':'5'}}",
	  "{'ers':{'F/a':'1','sub.F/b':'2','example.com/d':'4'}}", 0, 0, 2, .extra = "node.kubernetes.io",
	  .deny = "example.com" },
	{ "extended resources: quantity syntax",
	  "{'ers':{'a':'1','b':'1k','c':'2Ki','d':'1.5Gi','e':'1e3','f':'1E3','g':'+5','h':'10M','i':'7E','j':'.5k','k':'5.'}}",
	  "{'ers':{'F/a':'1','F/b':'1k','F/c':'2Ki','F/d':'1.5Gi','F/e':'1e3','F/f':'1E3','F/g':'+5','F/h':'10M','F/i':'7E','F/j':'.5k','F/k':'5.'}}" },
	{ "extended resources: not quantities",
	  "{'ers':{'a':'','b':'abc','c':'1KB','d':'1ki','e':'1e','f':'1.2.3','g':'.','h':'1 ','i':'0x10','j':'1Kii','k':'--1'}}",
	  "{}", 0, 0, 11, .log = "value is not a quantity" },
	{ "extended resources: negative or fractional values the API server refuses",
	  "{'ers':{'a':'-1','b':'500m','c':'1.5','example.com/d':'0.5','example.com/e':'0.5Ki','example.com/f':'-0'}}",
	  "{'ers':{'F/b':'500m','F/c':'1.5','example.com/e':'0.5Ki','example.com/f':'-0'}}", 0, 0, 2 },
	{ "taints: effects, prefix required, namespaces",
	  "{'taints':[{'key':'F/a','value':'v','effect':'NoSchedule'},{'key':'F/b','effect':'PreferNoSchedule'},"
	  "{'key':'example.com/c','effect':'NoExecute'},{'key':'F/d','effect':'Sometimes'},{'key':'F/e'},"
	  "{'key':'unprefixed','effect':'NoSchedule'},{'key':'node.kubernetes.io/f','effect':'NoSchedule'},"
	  "{'key':'profile.node.kubernetes.io/g','effect':'NoSchedule'},{'key':'F/h','value':'bad value','effect':'NoSchedule'},"
	  "{'value':'x','effect':'NoSchedule'}]}",
	  "{'taints':[{'key':'F/a','value':'v','effect':'NoSchedule'},{'key':'F/b','effect':'PreferNoSchedule'},"
	  "{'key':'example.com/c','effect':'NoExecute'}]}", 0, 0, 0, 7, .taints = 1, .log = "unprefixed keys are not allowed" },
	{ "taints: the same key and effect twice, the last wins",
	  "{'taints':[{'key':'F/a','value':'1','effect':'NoSchedule'},{'key':'F/a','value':'2','effect':'NoExecute'},"
	  "{'key':'F/a','value':'3','effect':'NoSchedule'}]}",
	  "{'taints':[{'key':'F/a','value':'2','effect':'NoExecute'},{'key':'F/a','value':'3','effect':'NoSchedule'}]}",
	  .taints = 1 },
	{ "taints off: dropped whole, not counted",
	  "{'labels':{'a':'1'},'taints':[{'key':'F/a','effect':'NoSchedule'}]}", "{'labels':{'F/a':'1'}}" },
	/* upstream nfd-master-internal_test.go TestFilterLabels, DisableAutoPrefix on */
	{ "upstream DisableAutoPrefix: unprefixed label & annotation allowed",
	  "{'labels':{'test-label':'test-value'},'annotations':{'test-annotation':'bar'}}",
	  "{'labels':{'test-label':'test-value'},'annotations':{'test-annotation':'bar'}}",
	  .unprefixed = NL_KEEP_UNPREFIXED },
	{ "upstream DisableAutoPrefix: unprefixed extended resources allowed",
	  "{'ers':{'micromicrowaves':'10','tooster':'5'}}", "{'ers':{'micromicrowaves':'10','tooster':'5'}}",
	  .unprefixed = NL_KEEP_UNPREFIXED },
	/* the same, prefixing off and the gate off (upstream's filter on its own; v0.15-v0.17's autoDefaultNs: false) */
	{ "upstream: unprefixed label denied",
	  "{'labels':{'test-label':'test-value'}}", "{}", 1, .unprefixed = NL_DROP_UNPREFIXED,
	  .log = "unprefixed keys are not allowed" },
	{ "upstream: unprefixed extended resources & annotations not allowed",
	  "{'ers':{'micromicrowaves':'10','tooster':'5'},'annotations':{'test-annotation':'bar'}}", "{}", 0, 1, 2,
	  .unprefixed = NL_DROP_UNPREFIXED, .log = "unprefixed keys are not allowed" },
	/* ours around it */
	{ "DisableAutoPrefix: \"a\" and \"<default>/a\" are two names",
	  "{'labels':{'a':'1','F/a':'2'},'annotations':{'n':'x','F/n':'y'},'ers':{'w':'1','F/w':'2'}}",
	  "{'labels':{'a':'1','F/a':'2'},'annotations':{'n':'x','F/n':'y'},'ers':{'w':'1','F/w':'2'}}",
	  .unprefixed = NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix: values still checked, the whitelist on the whole name, dynamic values",
	  "{'labels':{'a':'has space','cpu-x':'1','gpu-y':'1','vendor':'@cpu.model.vendor_id'},"
	  "'annotations':{'big':'" "x" "'},'ers':{'q':'lots','f':'0.5','n':'-1'}}",
	  "{'labels':{'cpu-x':'1'},'annotations':{'big':'x'},'ers':{'f':'0.5'}}", 3, 0, 2, .whitelist = "^cpu",
	  .unprefixed = NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix: not for taint keys",
	  "{'taints':[{'key':'t','effect':'NoSchedule'},{'key':'F/t','effect':'NoSchedule'}]}",
	  "{'taints':[{'key':'F/t','effect':'NoSchedule'}]}", 0, 0, 0, 1, .taints = 1, .unprefixed = NL_KEEP_UNPREFIXED,
	  .log = "unprefixed keys are not allowed" },
	{ "DisableAutoPrefix: a denied-namespace wildcard \"*\" takes unprefixed labels too (as upstream)",
	  "{'labels':{'a':'1','example.com/b':'1'}}", "{'labels':{'example.com/b':'1'}}", 1, .deny = "*",
	  .extra = "example.com", .unprefixed = NL_KEEP_UNPREFIXED },
};

static const char **split(const char *s, size_t *n, char *buf, size_t size)
{
	static const char *v[8];

	*n = 0;
	if (!s)
		return v;
	snprintf(buf, size, "%s", s);
	for (char *p = strtok(buf, ","); p && *n < 8; p = strtok(NULL, ","))
		v[(*n)++] = p;
	return v;
}

static void test_filter(struct features *feat)
{
	for (size_t i = 0; i < sizeof(fcases) / sizeof(fcases[0]); i++) {
		const struct fcase *c = &fcases[i];
		struct nl_policy p;
		struct nl_set s;
		struct nl_rejects rej = { 0 };
		struct json *got, *want = J(c->want);
		char dbuf[256], ebuf[256], name[256];
		const char *deny[8], *extra[8], *const *v;
		struct re re;
		int rc;

		nl_policy_init(&p);
		v = split(c->deny, &p.n_deny, dbuf, sizeof(dbuf));
		memcpy(deny, v, sizeof(deny));
		p.deny_ns = deny;
		v = split(c->extra, &p.n_extra, ebuf, sizeof(ebuf));
		memcpy(extra, v, sizeof(extra));
		p.extra_ns = extra;
		if (c->whitelist) {
			T_INT(c->name, re_compile(&re, c->whitelist, NULL, 0), 0);
			p.label_whitelist = &re;
		}
		p.enable_taints = c->taints;
		p.unprefixed = c->unprefixed;
		set_from(&s, c->in);
		t_logged(lg.fd);
		rc = nl_filter(&p, &s, c->nofeat ? NULL : feat, &lg, &rej);
		got = set_json(&s);
		snprintf(name, sizeof(name), "filter: %s", c->name);
		T_INT(name, rc, 0);
		T_OK(name, json_equal(got, want), "got %s, want %s", show(got), show(want));
		T_OK(name, rej.labels == c->rl && rej.annotations == c->ra && rej.extended_resources == c->re &&
				   rej.taints == c->rt,
		     "rejects %lu/%lu/%lu/%lu, want %lu/%lu/%lu/%lu", rej.labels, rej.annotations,
		     rej.extended_resources, rej.taints, c->rl, c->ra, c->re, c->rt);
		if (c->log) {
			const char *l = t_logged(lg.fd);

			T_OK(name, strstr(l, c->log) && strstr(l, "W"), "log %s lacks %s", l, c->log);
		}
		if (c->whitelist)
			re_free(&re);
		json_free(got);
		json_free(want);
		nl_set_free(&s);
	}
}

static void test_filter_misc(void)
{
	struct nl_policy p;
	struct nl_set s;
	int rc;

	nl_policy_init(&p);
	T_STR("policy defaults: no instance", p.instance, "");
	T_INT("policy defaults: overwrite on, taints off", p.allow_overwrite * 10 + p.enable_taints, 10);
	set_from(&s, "{'labels':{'k':'v'},'annotations':{'bad key':'x'}}");
	t_logged(lg.fd);
	rc = nl_filter(&p, &s, NULL, &lg, NULL);
	T_INT("filter: rejects may be NULL", rc, 0);
	T_OK("filter: rejects logged with the key, escaped", strstr(t_logged(lg.fd), "feature.node.kubernetes.io/bad key"),
	     "no key in the log");
	nl_set_free(&s);
	nl_set_free(&s);
	memset(&s, 0, sizeof(s));
	T_INT("filter: an empty set", nl_filter(&p, &s, NULL, &lg, NULL), 0);
	T_OK("filter: an empty set stays empty", !s.labels && !s.taints, "not empty");
	/* a control character in a value is escaped in the log line */
	set_from(&s, "{'labels':{'k':'a\\nb'}}");
	nl_filter(&p, &s, NULL, &lg, NULL);
	{
		const char *l = t_logged(lg.fd);

		T_OK("filter: log lines cannot be forged", strstr(l, "a\\x0ab") && !strstr(l, "a\nb"), "%s", l);
	}
	nl_set_free(&s);
	/* a name given twice (a parsed document may repeat one) */
	set_from(&s, "{'labels':{'b':'1','a':'x','b':'2','F/c':'3','F/c':'4'}}");
	T_INT("filter: repeated names", nl_filter(&p, &s, NULL, &lg, NULL), 0);
	T_STR("filter: repeated names keep their first place and take the last value", show(s.labels),
	      "{\"feature.node.kubernetes.io/b\":\"2\",\"feature.node.kubernetes.io/a\":\"x\","
	      "\"feature.node.kubernetes.io/c\":\"4\"}");
	nl_set_free(&s);
	{
		struct nl_rejects rej = { 0 };

		set_from(&s, "{'labels':['F/a']}");
		T_INT("filter: a map that is not an object", nl_filter(&p, &s, NULL, &lg, &rej), 0);
		T_OK("filter: a map that is not an object: its elements rejected",
		     rej.labels == 1 && json_count(s.labels) == 0, "%lu rejected, %s left", rej.labels, show(s.labels));
		nl_set_free(&s);
	}
}

/* ---- diff -------------------------------------------------------------- */

#define BARE "{'metadata':{'name':'n1','resourceVersion':'5'}}"
/* a node as an upstream master leaves it */
#define UPSTREAM                                                                                      \
	"{'metadata':{'name':'n1','resourceVersion':'42','labels':{'kubernetes.io/hostname':'n1',"    \
	"'F/cpu-cpuid.AVX':'true','F/kernel-version.major':'6','example.com/gpu':'yes'},"             \
	"'annotations':{'N/feature-labels':'cpu-cpuid.AVX,example.com/gpu,kernel-version.major',"    \
	"'N/extended-resources':'example.com/widgets,hugecount','N/feature-annotations':'note',"      \
	"'N/taints':'F/special=yes:NoSchedule','F/note':'hello','kubeadm.alpha.kubernetes.io/cri-socket':'x'}}," \
	"'spec':{'taints':[{'key':'node-role.kubernetes.io/control-plane','effect':'NoSchedule'},"    \
	"{'key':'F/special','value':'yes','effect':'NoSchedule'}]},"                                  \
	"'status':{'capacity':{'cpu':'4','F/hugecount':'1k','example.com/widgets':'3'},"              \
	"'allocatable':{'cpu':'4','F/hugecount':'1k','example.com/widgets':'3'}}}"
#define UPSTREAM_SET                                                                                  \
	"{'labels':{'F/cpu-cpuid.AVX':'true','F/kernel-version.major':'6','example.com/gpu':'yes'},"  \
	"'annotations':{'F/note':'hello'},'ers':{'F/hugecount':'1000','example.com/widgets':'3'},"    \
	"'taints':[{'key':'F/special','value':'yes','effect':'NoSchedule'}]}"

enum { SIGNED = 2 };

static const struct dcase {
	const char *name;
	const char *node, *set;
	const char *status, *meta; /* expected patches, NULL: none */
	const char *result;        /* the node after both, NULL: not checked */
	const char *instance;
	int no_overwrite, skip_removal, prune;
	int record;          /* nl_policy.record; SIGNED: and the node carries a record
			      * that vouches for its annotations */
	int no_taints;       /* taints disabled (enabled otherwise) */
	const char *extra, *deny; /* one --extra-label-ns, one --deny-label-ns */
	const char *tamper;  /* N/feature-labels written after signing: a node's edit */
	int sign_taints;     /* signed as with taints enabled */
	int unprefixed;      /* the policy's (NL_AUTO_PREFIX: 0) */
} dcases[] = {
	{ "first labelling of a bare node: whole maps added",
	  BARE, "{'labels':{'F/cpu-avx':'true','example.com/x':'1'},'annotations':{'F/note':'hi'},'ers':{'F/gpu':'2'}}",
	  "[{'op':'add','path':'/status','value':{'capacity':{'F/gpu':'2'}}}]",
	  "[{'op':'add','path':'/metadata/labels','value':{'F/cpu-avx':'true','example.com/x':'1'}},"
	  "{'op':'add','path':'/metadata/annotations','value':{'F/note':'hi','N/extended-resources':'gpu',"
	  "'N/feature-annotations':'note','N/feature-labels':'cpu-avx,example.com/x'}}]",
	  "{'metadata':{'name':'n1','resourceVersion':'5','labels':{'F/cpu-avx':'true','example.com/x':'1'},"
	  "'annotations':{'F/note':'hi','N/extended-resources':'gpu','N/feature-annotations':'note',"
	  "'N/feature-labels':'cpu-avx,example.com/x'}},'status':{'capacity':{'F/gpu':'2'}}}" },
	{ "an unchanged node needs no patch",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'},'annotations':{'N/feature-labels':'a'}}}",
	  "{'labels':{'F/a':'1'}}", NULL, NULL },
	{ "a node labelled by an upstream master: no patch at all",
	  UPSTREAM, UPSTREAM_SET, NULL, NULL },
	{ "stale tracked label removed, others kept",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1','F/b':'1','other':'x'},'annotations':{'N/feature-labels':'a,b'}}}",
	  "{'labels':{'F/a':'1'}}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1b'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1feature-labels','value':'a'}]",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1','other':'x'},'annotations':{'N/feature-labels':'a'}}}" },
	{ "the last tracked label removed: the bookkeeping annotation goes too",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'},'annotations':{'N/feature-labels':'a','x':'y'}}}",
	  "{}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1a'},{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','labels':{},'annotations':{'x':'y'}}}" },
	{ "an untracked label is never removed",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1','F/c':'1'},'annotations':{'N/feature-labels':'a'}}}",
	  "{'labels':{'F/a':'1'}}", NULL, NULL },
	{ "an untracked label with a wanted key is replaced and taken over (allowOverwrite)",
	  "{'metadata':{'name':'n1','labels':{'F/c':'old'}}}", "{'labels':{'F/c':'new'}}", NULL,
	  "[{'op':'replace','path':'/metadata/labels/F~1c','value':'new'},"
	  "{'op':'add','path':'/metadata/annotations','value':{'N/feature-labels':'c'}}]",
	  "{'metadata':{'name':'n1','labels':{'F/c':'new'},'annotations':{'N/feature-labels':'c'}}}" },
	{ "allowOverwrite off: an untracked label is left alone, not taken over",
	  "{'metadata':{'name':'n1','labels':{'F/c':'old','F/d':'same'}}}", "{'labels':{'F/c':'new','F/d':'same'}}",
	  NULL, NULL, .no_overwrite = 1 },
	{ "allowOverwrite off: tracked keys are still updated",
	  "{'metadata':{'name':'n1','labels':{'F/c':'old','F/x':'theirs'},'annotations':{'N/feature-labels':'c','F/n':'1',"
	  "'N/feature-annotations':'n','example.com/n':'theirs'}},'status':{'capacity':{'F/r':'1','example.com/r':'9'}}}",
	  "{'labels':{'F/c':'new','F/x':'ours'},'annotations':{'F/n':'2','example.com/n':'ours'},"
	  "'ers':{'F/r':'2','example.com/r':'1'}}",
	  NULL /* F/r and example.com/r are not tracked: left alone */,
	  "[{'op':'replace','path':'/metadata/labels/F~1c','value':'new'},"
	  "{'op':'replace','path':'/metadata/annotations/F~1n','value':'2'}]",
	  NULL, .no_overwrite = 1 },
	{ "legacy version annotations are removed",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'},'annotations':{'N/master.version':'v0.10.0',"
	  "'N/worker.version':'v0.10.0','N/feature-labels':'a','N/other':'kept'}}}",
	  "{'labels':{'F/a':'1'}}", NULL,
	  "[{'op':'remove','path':'/metadata/annotations/N~1master.version'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1worker.version'}]",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'},'annotations':{'N/feature-labels':'a','N/other':'kept'}}}" },
	{ "instance: its own bookkeeping annotations, the default instance's untouched",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'},'annotations':{'N/feature-labels':'a','N/master.version':'x'}}}",
	  "{'labels':{'F/b':'1'}}", NULL,
	  "[{'op':'add','path':'/metadata/labels/F~1b','value':'1'},"
	  "{'op':'add','path':'/metadata/annotations/blue.N~1feature-labels','value':'b'}]",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1','F/b':'1'},'annotations':{'N/feature-labels':'a',"
	  "'N/master.version':'x','blue.N/feature-labels':'b'}}}",
	  .instance = "blue" },
	{ "instance: stale labels by its own annotation",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1','F/b':'1'},'annotations':{'N/feature-labels':'a','blue.N/feature-labels':'b'}}}",
	  "{}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1b'},{'op':'remove','path':'/metadata/annotations/blue.N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'},'annotations':{'N/feature-labels':'a'}}}",
	  .instance = "blue" },
	{ "skip_removal: only adds and replaces, still tracking what stays",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1','F/b':'1'},'annotations':{'N/feature-labels':'a,b,gone'}},"
	  "'status':{'capacity':{'F/r':'1'}}}",
	  "{'labels':{'F/a':'2','F/c':'1'}}", NULL,
	  "[{'op':'replace','path':'/metadata/labels/F~1a','value':'2'},{'op':'add','path':'/metadata/labels/F~1c','value':'1'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1feature-labels','value':'a,b,c'}]",
	  "{'metadata':{'name':'n1','labels':{'F/a':'2','F/b':'1','F/c':'1'},'annotations':{'N/feature-labels':'a,b,c'}},"
	  "'status':{'capacity':{'F/r':'1'}}}",
	  .skip_removal = 1 },
	{ "extended resources: add, replace (allocatable where present), remove tracked ones only",
	  "{'metadata':{'name':'n1','annotations':{'N/extended-resources':'chg,keep,old,gone,example.com/foreign2'}},"
	  "'status':{'capacity':{'cpu':'4','F/old':'1','F/keep':'2','F/chg':'3','F/chg2':'3','example.com/foreign':'5'},"
	  "'allocatable':{'cpu':'4','F/old':'1','F/chg':'3'}}}",
	  "{'ers':{'F/keep':'2','F/chg':'4','F/chg2':'5','F/new':'1'}}",
	  "[{'op':'remove','path':'/status/capacity/F~1old'},{'op':'remove','path':'/status/allocatable/F~1old'},"
	  "{'op':'replace','path':'/status/capacity/F~1chg','value':'4'},{'op':'replace','path':'/status/allocatable/F~1chg','value':'4'},"
	  "{'op':'replace','path':'/status/capacity/F~1chg2','value':'5'},{'op':'add','path':'/status/capacity/F~1new','value':'1'}]",
	  "[{'op':'replace','path':'/metadata/annotations/N~1extended-resources','value':'chg,chg2,keep,new'}]",
	  "{'metadata':{'name':'n1','annotations':{'N/extended-resources':'chg,chg2,keep,new'}},"
	  "'status':{'capacity':{'cpu':'4','F/keep':'2','F/chg':'4','F/chg2':'5','example.com/foreign':'5','F/new':'1'},"
	  "'allocatable':{'cpu':'4','F/chg':'4'}}}" },
	{ "extended resources: compared as quantities",
	  "{'metadata':{'name':'n1','annotations':{'N/extended-resources':'a,b,c,d'}},"
	  "'status':{'capacity':{'F/a':'1k','F/b':'2Ki','F/c':'1500m','F/d':'0'}}}",
	  "{'ers':{'F/a':'1000','F/b':'2048','F/c':'1.5','F/d':'-0'}}", NULL, NULL },
	{ "extended resources: status without capacity",
	  "{'metadata':{'name':'n1'},'status':{'nodeInfo':{}}}", "{'ers':{'F/a':'1'}}",
	  "[{'op':'add','path':'/status/capacity','value':{'F/a':'1'}}]",
	  "[{'op':'add','path':'/metadata/annotations','value':{'N/extended-resources':'a'}}]",
	  "{'metadata':{'name':'n1','annotations':{'N/extended-resources':'a'}},'status':{'nodeInfo':{},'capacity':{'F/a':'1'}}}" },
	{ "taints: added next to foreign ones, guarded by the resourceVersion",
	  "{'metadata':{'name':'n1','resourceVersion':'7'},'spec':{'taints':[{'key':'node.kubernetes.io/unschedulable','effect':'NoSchedule'}]}}",
	  "{'taints':[{'key':'F/t1','value':'v','effect':'NoSchedule'}]}", NULL,
	  "[{'op':'test','path':'/metadata/resourceVersion','value':'7'},"
	  "{'op':'add','path':'/metadata/annotations','value':{'N/taints':'F/t1=v:NoSchedule'}},"
	  "{'op':'replace','path':'/spec/taints','value':[{'key':'node.kubernetes.io/unschedulable','effect':'NoSchedule'},"
	  "{'key':'F/t1','value':'v','effect':'NoSchedule'}]}]",
	  "{'metadata':{'name':'n1','resourceVersion':'7','annotations':{'N/taints':'F/t1=v:NoSchedule'}},"
	  "'spec':{'taints':[{'key':'node.kubernetes.io/unschedulable','effect':'NoSchedule'},{'key':'F/t1','value':'v','effect':'NoSchedule'}]}}" },
	{ "taints: a node without spec.taints or spec",
	  "{'metadata':{'name':'n1','resourceVersion':'7','annotations':{}}}",
	  "{'taints':[{'key':'F/t1','effect':'NoExecute'}]}", NULL,
	  "[{'op':'test','path':'/metadata/resourceVersion','value':'7'},"
	  "{'op':'add','path':'/metadata/annotations/N~1taints','value':'F/t1:NoExecute'},"
	  "{'op':'add','path':'/spec','value':{'taints':[{'key':'F/t1','effect':'NoExecute'}]}}]",
	  "{'metadata':{'name':'n1','resourceVersion':'7','annotations':{'N/taints':'F/t1:NoExecute'}},"
	  "'spec':{'taints':[{'key':'F/t1','effect':'NoExecute'}]}}" },
	{ "taints (the record vouches): stale NFD taints removed, foreign and wanted ones kept, a value changed",
	  "{'metadata':{'name':'n1','resourceVersion':'8','annotations':{'N/taints':'F/t1=v:NoSchedule,F/t2:NoExecute,F/t3=a:NoSchedule'}},"
	  "'spec':{'taints':[{'key':'F/t1','value':'v','effect':'NoSchedule'},{'key':'foreign','effect':'NoSchedule'},"
	  "{'key':'F/t2','effect':'NoExecute'},{'key':'F/t3','value':'a','effect':'NoSchedule'}]}}",
	  "{'taints':[{'key':'F/t2','effect':'NoExecute'},{'key':'F/t3','value':'b','effect':'NoSchedule'}]}", NULL,
	  "[{'op':'test','path':'/metadata/resourceVersion','value':'8'},"
	  "{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1taints','value':'F/t2:NoExecute,F/t3=b:NoSchedule'},"
	  "{'op':'replace','path':'/spec/taints','value':[{'key':'foreign','effect':'NoSchedule'},{'key':'F/t2','effect':'NoExecute'},"
	  "{'key':'F/t3','value':'b','effect':'NoSchedule'}]}]",
	  "{'metadata':{'name':'n1','resourceVersion':'8','labels':{'R/nfd-record':'R'},"
	  "'annotations':{'N/taints':'F/t2:NoExecute,F/t3=b:NoSchedule'}},"
	  "'spec':{'taints':[{'key':'foreign','effect':'NoSchedule'},{'key':'F/t2','effect':'NoExecute'},"
	  "{'key':'F/t3','value':'b','effect':'NoSchedule'}]}}", .record = SIGNED },
	{ "taints: a taint named only by the annotation (no record) is never removed",
	  "{'metadata':{'name':'n1','resourceVersion':'8','annotations':{'N/taints':'F/t1=v:NoSchedule,F/t2:NoExecute'}},"
	  "'spec':{'taints':[{'key':'F/t1','value':'v','effect':'NoSchedule'},{'key':'F/t2','effect':'NoExecute'}]}}",
	  "{'taints':[{'key':'F/t2','effect':'NoExecute'}]}", NULL,
	  "[{'op':'replace','path':'/metadata/annotations/N~1taints','value':'F/t2:NoExecute'}]", NULL },
	{ "taints disabled: NFD's own taints and their annotation are left alone, record or not (not as upstream)",
	  "{'metadata':{'name':'n1','resourceVersion':'9','annotations':{'N/taints':'F/t1:NoSchedule'}},"
	  "'spec':{'taints':[{'key':'F/t1','effect':'NoSchedule'}]}}",
	  "{'taints':[{'key':'F/t2','effect':'NoSchedule'}]}", NULL, NULL, NULL, .record = SIGNED, .no_taints = 1 },
	{ "taints disabled: a record that vouched for the taints annotation still does",
	  "{'metadata':{'name':'n1','resourceVersion':'9','labels':{'F/a':'1'},'annotations':{'N/taints':'F/t1:NoSchedule',"
	  "'N/feature-labels':'a'}},'spec':{'taints':[{'key':'F/t1','effect':'NoSchedule'}]}}",
	  "{}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1a'},{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  NULL, .record = SIGNED, .sign_taints = 1, .no_taints = 1 },
	/* issue 16: a node (which may edit its own annotations, not its taints or
	 * node-restriction.kubernetes.io labels) turns the master against the admin */
	{ "a node's forged taints annotation removes no taint; the master's record replaces it",
	  "{'metadata':{'name':'n1','resourceVersion':'3','annotations':{'N/taints':'quarantine.example.com/compromised=true:NoExecute'}},"
	  "'spec':{'taints':[{'key':'quarantine.example.com/compromised','value':'true','effect':'NoExecute'}]}}",
	  "{}", NULL,
	  "[{'op':'add','path':'/metadata/labels','value':{'R/nfd-record':'R'}},"
	  "{'op':'remove','path':'/metadata/annotations/N~1taints'}]",
	  "{'metadata':{'name':'n1','resourceVersion':'3','labels':{'R/nfd-record':'R'},'annotations':{}},"
	  "'spec':{'taints':[{'key':'quarantine.example.com/compromised','value':'true','effect':'NoExecute'}]}}",
	  .record = 1 },
	{ "... with taints disabled neither the taint nor the annotation is touched",
	  "{'metadata':{'name':'n1','resourceVersion':'3','annotations':{'N/taints':'quarantine.example.com/compromised=true:NoExecute'}},"
	  "'spec':{'taints':[{'key':'quarantine.example.com/compromised','value':'true','effect':'NoExecute'}]}}",
	  "{}", NULL, "[{'op':'add','path':'/metadata/labels','value':{'R/nfd-record':'R'}}]", NULL,
	  .record = 1, .no_taints = 1 },
	{ "a node's forged feature-labels removes only what the node could remove and the policy writes",
	  "{'metadata':{'name':'n1','labels':{'kubernetes.io/hostname':'n1','R/tenant':'a','k8s.io/x':'1','F/stale':'1',"
	  "'example.com/stale':'1','F/keep':'1'},"
	  "'annotations':{'N/feature-labels':'R/tenant,kubernetes.io/hostname,k8s.io/x,stale,example.com/stale'}}}",
	  "{'labels':{'F/keep':'1'}}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/example.com~1stale'},{'op':'remove','path':'/metadata/labels/F~1stale'},"
	  "{'op':'add','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1feature-labels','value':'keep'}]",
	  "{'metadata':{'name':'n1','labels':{'kubernetes.io/hostname':'n1','R/tenant':'a','k8s.io/x':'1','F/keep':'1',"
	  "'R/nfd-record':'R'},'annotations':{'N/feature-labels':'keep'}}}",
	  .record = 1, .extra = "node-restriction.kubernetes.io" },
	{ "... the same without a record (nfd-worker --standalone)",
	  "{'metadata':{'name':'n1','labels':{'kubernetes.io/hostname':'n1','R/tenant':'a','k8s.io/x':'1','F/stale':'1'},"
	  "'annotations':{'N/feature-labels':'R/tenant,kubernetes.io/hostname,k8s.io/x,stale'}}}",
	  "{}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1stale'},{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','labels':{'kubernetes.io/hostname':'n1','R/tenant':'a','k8s.io/x':'1'},'annotations':{}}}" },
	{ "the record vouches: a label this master wrote goes, even one the node could not remove",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'k8s.io/x':'1','F/a':'1'},'annotations':{'N/feature-labels':'a,k8s.io/x'}}}",
	  "{}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1a'},{'op':'remove','path':'/metadata/labels/k8s.io~1x'},"
	  "{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'R/nfd-record':'R'},'annotations':{}}}", .record = SIGNED },
	{ "a node edits the annotation the record vouched for: back to hints",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'k8s.io/x':'1','F/a':'1','kubernetes.io/hostname':'n1'},"
	  "'annotations':{'N/feature-labels':'a,k8s.io/x'}}}",
	  "{}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1a'},"
	  "{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'k8s.io/x':'1','kubernetes.io/hostname':'n1','R/nfd-record':'R'},"
	  "'annotations':{}}}",
	  .record = SIGNED, .tamper = "a,k8s.io/x,kubernetes.io/hostname" },
	{ "the record vouches, but the namespace is denied now: neither removed nor tracked",
	  "{'metadata':{'name':'n1','labels':{'example.com/a':'1'},'annotations':{'N/feature-labels':'example.com/a'}}}",
	  "{}", NULL,
	  "[{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','labels':{'example.com/a':'1','R/nfd-record':'R'},'annotations':{}}}",
	  .record = SIGNED, .deny = "example.com" },
	{ "skip_removal: a forged entry is not carried into the record",
	  "{'metadata':{'name':'n1','labels':{'kubernetes.io/hostname':'n1','F/a':'1'},"
	  "'annotations':{'N/feature-labels':'a,kubernetes.io/hostname'}}}",
	  "{}", NULL,
	  "[{'op':'add','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1feature-labels','value':'a'}]",
	  NULL, .record = 1, .skip_removal = 1 },
	{ "an upstream master's node taken over: only the record is added",
	  UPSTREAM, UPSTREAM_SET, NULL, "[{'op':'add','path':'/metadata/labels/R~1nfd-record','value':'R'}]", NULL,
	  .record = 1 },
	{ "a record label is never a feature: the filter drops it (the diff would not remove it)",
	  "{'metadata':{'name':'n1','labels':{'R/nfd-record':'x'},'annotations':{'N/feature-labels':'R/nfd-record'}}}",
	  "{}", NULL, "[{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]", NULL,
	  .extra = "node-restriction.kubernetes.io" },
	{ "taints: an untracked taint with the wanted key and effect is taken over",
	  "{'metadata':{'name':'n1','resourceVersion':'9'},'spec':{'taints':[{'key':'F/t1','value':'x','effect':'NoSchedule',"
	  "'timeAdded':'2024-01-01T00:00:00Z'}]}}",
	  "{'taints':[{'key':'F/t1','value':'x','effect':'NoSchedule'}]}", NULL,
	  "[{'op':'test','path':'/metadata/resourceVersion','value':'9'},"
	  "{'op':'add','path':'/metadata/annotations','value':{'N/taints':'F/t1=x:NoSchedule'}},"
	  "{'op':'replace','path':'/spec/taints','value':[{'key':'F/t1','value':'x','effect':'NoSchedule'}]}]",
	  NULL },
	{ "taints: the annotation catches up without touching spec.taints",
	  "{'metadata':{'name':'n1','resourceVersion':'9','annotations':{'N/taints':'F/old:NoSchedule'}},"
	  "'spec':{'taints':[{'key':'F/t1','effect':'NoSchedule'}]}}",
	  "{'taints':[{'key':'F/t1','effect':'NoSchedule'}]}", NULL,
	  "[{'op':'replace','path':'/metadata/annotations/N~1taints','value':'F/t1:NoSchedule'}]", NULL },
	{ "keys with / and ~ are escaped in JSON Pointers",
	  "{'metadata':{'name':'n1','labels':{'keep':'1'},'annotations':{}}}",
	  "{'labels':{'example.com/x~y':'1'}}", NULL,
	  "[{'op':'add','path':'/metadata/labels/example.com~1x~0y','value':'1'},"
	  "{'op':'add','path':'/metadata/annotations/N~1feature-labels','value':'example.com/x~y'}]",
	  "{'metadata':{'name':'n1','labels':{'keep':'1','example.com/x~y':'1'},'annotations':{'N/feature-labels':'example.com/x~y'}}}" },
	{ "bookkeeping lists sorted after stripping the default namespace",
	  "{'metadata':{'name':'n1','labels':{},'annotations':{}}}",
	  "{'labels':{'F/zeta':'1','a.example.com/b':'1','F/alpha':'1','sub.F/m':'1'}}", NULL,
	  "[{'op':'add','path':'/metadata/labels/a.example.com~1b','value':'1'},{'op':'add','path':'/metadata/labels/F~1alpha','value':'1'},"
	  "{'op':'add','path':'/metadata/labels/F~1zeta','value':'1'},{'op':'add','path':'/metadata/labels/sub.F~1m','value':'1'},"
	  "{'op':'add','path':'/metadata/annotations/N~1feature-labels','value':'a.example.com/b,alpha,sub.F/m,zeta'}]",
	  NULL },
	{ "prune (the record vouches): everything NFD tracks, its annotations and the record",
	  UPSTREAM, NULL,
	  "[{'op':'remove','path':'/status/capacity/example.com~1widgets'},{'op':'remove','path':'/status/allocatable/example.com~1widgets'},"
	  "{'op':'remove','path':'/status/capacity/F~1hugecount'},{'op':'remove','path':'/status/allocatable/F~1hugecount'}]",
	  "[{'op':'test','path':'/metadata/resourceVersion','value':'42'},"
	  "{'op':'remove','path':'/metadata/labels/example.com~1gpu'},"
	  "{'op':'remove','path':'/metadata/labels/F~1cpu-cpuid.AVX'},{'op':'remove','path':'/metadata/labels/F~1kernel-version.major'},"
	  "{'op':'remove','path':'/metadata/labels/R~1nfd-record'},"
	  "{'op':'remove','path':'/metadata/annotations/F~1note'},{'op':'remove','path':'/metadata/annotations/N~1extended-resources'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-annotations'},{'op':'remove','path':'/metadata/annotations/N~1feature-labels'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1taints'},"
	  "{'op':'replace','path':'/spec/taints','value':[{'key':'node-role.kubernetes.io/control-plane','effect':'NoSchedule'}]}]",
	  "{'metadata':{'name':'n1','resourceVersion':'42','labels':{'kubernetes.io/hostname':'n1'},"
	  "'annotations':{'kubeadm.alpha.kubernetes.io/cri-socket':'x'}},"
	  "'spec':{'taints':[{'key':'node-role.kubernetes.io/control-plane','effect':'NoSchedule'}]},"
	  "'status':{'capacity':{'cpu':'4'},'allocatable':{'cpu':'4'}}}",
	  .prune = 1, .record = SIGNED },
	{ "prune without a record (upstream's node): the hints pass, the taint stays",
	  UPSTREAM, NULL,
	  "[{'op':'remove','path':'/status/capacity/example.com~1widgets'},{'op':'remove','path':'/status/allocatable/example.com~1widgets'},"
	  "{'op':'remove','path':'/status/capacity/F~1hugecount'},{'op':'remove','path':'/status/allocatable/F~1hugecount'}]",
	  "[{'op':'remove','path':'/metadata/labels/example.com~1gpu'},"
	  "{'op':'remove','path':'/metadata/labels/F~1cpu-cpuid.AVX'},{'op':'remove','path':'/metadata/labels/F~1kernel-version.major'},"
	  "{'op':'remove','path':'/metadata/annotations/F~1note'},{'op':'remove','path':'/metadata/annotations/N~1extended-resources'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-annotations'},{'op':'remove','path':'/metadata/annotations/N~1feature-labels'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1taints'}]",
	  "{'metadata':{'name':'n1','resourceVersion':'42','labels':{'kubernetes.io/hostname':'n1'},"
	  "'annotations':{'kubeadm.alpha.kubernetes.io/cri-socket':'x'}},"
	  "'spec':{'taints':[{'key':'node-role.kubernetes.io/control-plane','effect':'NoSchedule'},"
	  "{'key':'F/special','value':'yes','effect':'NoSchedule'}]},"
	  "'status':{'capacity':{'cpu':'4'},'allocatable':{'cpu':'4'}}}",
	  .prune = 1, .record = 1 },
	{ "prune: every annotation of the instance's prefix, other instances kept",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'},'annotations':{'blue.N/feature-labels':'a','blue.N/anything':'x',"
	  "'N/feature-labels':'z','N/worker.version':'1','red.N/feature-labels':'y'}}}",
	  NULL, NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1a'},{'op':'remove','path':'/metadata/annotations/blue.N~1anything'},"
	  "{'op':'remove','path':'/metadata/annotations/blue.N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','labels':{},'annotations':{'N/feature-labels':'z','N/worker.version':'1','red.N/feature-labels':'y'}}}",
	  .instance = "blue", .prune = 1 },
	{ "prune: the default instance takes every nfd.node.kubernetes.io/ annotation",
	  "{'metadata':{'name':'n1','annotations':{'N/worker.version':'1','N/something':'x','blue.N/feature-labels':'y'}}}",
	  NULL, NULL,
	  "[{'op':'remove','path':'/metadata/annotations/N~1something'},{'op':'remove','path':'/metadata/annotations/N~1worker.version'}]",
	  "{'metadata':{'name':'n1','annotations':{'blue.N/feature-labels':'y'}}}", .prune = 1 },
	{ "prune: nothing of NFD's, nothing to do",
	  "{'metadata':{'name':'n1','labels':{'F/a':'1'}}}", NULL, NULL, NULL, .prune = 1 },
	/* unprefixed names (DisableAutoPrefix): listed "/name", removed only on the record */
	{ "DisableAutoPrefix: unprefixed names written as they are, listed \"/name\"",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{},'annotations':{}},'status':{'capacity':{}}}",
	  "{'labels':{'foo':'1','F/foo':'2'},'annotations':{'note':'x'},'ers':{'widgets':'2'}}",
	  "[{'op':'add','path':'/status/capacity/widgets','value':'2'}]",
	  "[{'op':'add','path':'/metadata/labels/F~1foo','value':'2'},{'op':'add','path':'/metadata/labels/foo','value':'1'},"
	  "{'op':'add','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'add','path':'/metadata/annotations/N~1extended-resources','value':'/widgets'},"
	  "{'op':'add','path':'/metadata/annotations/N~1feature-annotations','value':'/note'},"
	  "{'op':'add','path':'/metadata/annotations/N~1feature-labels','value':'/foo,foo'},"
	  "{'op':'add','path':'/metadata/annotations/note','value':'x'}]",
	  NULL, .record = 1, .unprefixed = NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix: on the record, unprefixed names no longer wanted go; an admin's stays",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'foo':'1','F/foo':'2','baz':'admin'},"
	  "'annotations':{'note':'x','N/feature-labels':'/foo,foo','N/feature-annotations':'/note','N/extended-resources':'/widgets'}},"
	  "'status':{'capacity':{'widgets':'2'},'allocatable':{'widgets':'2'}}}",
	  "{}",
	  "[{'op':'remove','path':'/status/capacity/widgets'},{'op':'remove','path':'/status/allocatable/widgets'}]",
	  "[{'op':'remove','path':'/metadata/labels/F~1foo'},{'op':'remove','path':'/metadata/labels/foo'},"
	  "{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1extended-resources'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-annotations'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'},{'op':'remove','path':'/metadata/annotations/note'}]",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'baz':'admin','R/nfd-record':'R'},'annotations':{}},"
	  "'status':{'capacity':{},'allocatable':{}}}",
	  .record = SIGNED, .unprefixed = NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix off again: what the record says was written unprefixed goes, the prefixed one comes",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'foo':'1'},'annotations':{'N/feature-labels':'/foo'}}}",
	  "{'labels':{'F/foo':'1'}}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/foo'},{'op':'add','path':'/metadata/labels/F~1foo','value':'1'},"
	  "{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1feature-labels','value':'foo'}]",
	  NULL, .record = SIGNED },
	{ "DisableAutoPrefix, no record (upstream's bookkeeping, or a node's): a bare name is the default namespace's",
	  "{'metadata':{'name':'n1','labels':{'baz':'admin','F/baz':'1'},'annotations':{'N/feature-labels':'baz'}}}",
	  "{}", NULL,
	  "[{'op':'remove','path':'/metadata/labels/F~1baz'},{'op':'add','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','labels':{'baz':'admin','R/nfd-record':'R'},'annotations':{}}}",
	  .record = 1, .unprefixed = NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix: \"/baz\" without the record removes nothing and is not carried on",
	  "{'metadata':{'name':'n1','labels':{'baz':'admin'},'annotations':{'N/feature-labels':'/baz'}}}",
	  "{'labels':{'foo':'1'}}", NULL,
	  "[{'op':'add','path':'/metadata/labels/foo','value':'1'},{'op':'add','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1feature-labels','value':'/foo'}]",
	  "{'metadata':{'name':'n1','labels':{'baz':'admin','foo':'1','R/nfd-record':'R'},'annotations':{'N/feature-labels':'/foo'}}}",
	  .record = 1, .unprefixed = NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix: a node adds \"/baz\" to the list the record vouched for: baz stays",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'baz':'admin','foo':'1'},'annotations':{'N/feature-labels':'/foo'}}}",
	  "{}", NULL,
	  "[{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'baz':'admin','foo':'1','R/nfd-record':'R'},'annotations':{}}}",
	  .record = SIGNED, .tamper = "/baz,/foo", .unprefixed = NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix, skip_removal: a tracked unprefixed label still there stays listed",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'foo':'1'},'annotations':{'N/feature-labels':'/foo'}}}",
	  "{'labels':{'bar':'1'}}", NULL,
	  "[{'op':'add','path':'/metadata/labels/bar','value':'1'},"
	  "{'op':'replace','path':'/metadata/labels/R~1nfd-record','value':'R'},"
	  "{'op':'replace','path':'/metadata/annotations/N~1feature-labels','value':'/bar,/foo'}]",
	  NULL, .record = SIGNED, .skip_removal = 1, .unprefixed = NL_KEEP_UNPREFIXED },
	{ "prune on the record: unprefixed names go too",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'foo':'1','baz':'admin'},'annotations':{'N/feature-labels':'/foo'}}}",
	  NULL, NULL,
	  "[{'op':'remove','path':'/metadata/labels/foo'},{'op':'remove','path':'/metadata/labels/R~1nfd-record'},"
	  "{'op':'remove','path':'/metadata/annotations/N~1feature-labels'}]",
	  "{'metadata':{'name':'n1','uid':'u1','labels':{'baz':'admin'},'annotations':{}}}",
	  .prune = 1, .record = SIGNED },
};

static void dcase_policy(const struct dcase *c, struct nl_policy *p)
{
	nl_policy_init(p);
	if (c->instance)
		p->instance = c->instance;
	p->allow_overwrite = !c->no_overwrite;
	p->enable_taints = !c->no_taints;
	p->record = c->record != 0;
	p->extra_ns = &c->extra;
	p->n_extra = c->extra != NULL;
	p->deny_ns = &c->deny;
	p->n_deny = c->deny != NULL;
	p->unprefixed = c->unprefixed;
}

/* Gives node the record label nfd-master would have written for its
 * annotations as they are, then applies c->tamper. */
static void sign(const struct dcase *c, struct json *node)
{
	struct json *md = json_get(node, "metadata"), *labels = json_get(md, "labels");
	struct nl_policy p;
	char rec[NL_RECORD_SIZE], name[300];

	dcase_policy(c, &p);
	p.enable_taints |= c->sign_taints;
	if (nl_record_value(&p, node, rec) < 0) {
		fprintf(stderr, "%s: no record\n", c->name);
		exit(2);
	}
	if (!labels) {
		json_set_take(md, "labels", json_new_object());
		labels = json_get(md, "labels");
	}
	snprintf(name, sizeof(name), "%s%s" NL_RECORD_NAME, c->instance ? c->instance : "", c->instance ? "." : "");
	json_set_str(labels, name, rec);
	if (c->tamper)
		json_set_str(json_get(md, "annotations"), "nfd.node.kubernetes.io/feature-labels", c->tamper);
}

static int run_diff(const struct dcase *c, const struct json *node, struct nl_patches *pp)
{
	struct nl_policy p;
	struct nl_set s;
	int rc;

	dcase_policy(c, &p);
	set_from(&s, c->set);
	rc = c->prune ? nl_prune_diff(&p, node, pp) : nl_diff(&p, node, &s, c->skip_removal, pp);
	nl_set_free(&s);
	return rc;
}

static void test_diff(void)
{
	for (size_t i = 0; i < sizeof(dcases) / sizeof(dcases[0]); i++) {
		const struct dcase *c = &dcases[i];
		struct json *node = J(c->node), *ws = J(c->status), *wm = J(c->meta), *wr = J(c->result);
		struct nl_patches pp = { 0 }, again = { 0 };
		char name[300], err[256] = "";
		int rc;

		struct json *got;

		snprintf(name, sizeof(name), "diff: %s", c->name);
		if (c->record == SIGNED)
			sign(c, node);
		rc = run_diff(c, node, &pp);
		T_INT(name, rc, 0);
		T_OK(name, (!ws && !pp.status) || json_equal(pp.status, ws), "status patch %s, want %s", show(pp.status),
		     show(ws));
		got = masked(pp.meta);
		T_OK(name, (!wm && !pp.meta) || json_equal(got, wm), "meta patch %s, want %s", show(got), show(wm));
		json_free(got);
		/* the patches apply cleanly, give the expected node, and leave nothing to do */
		snprintf(name, sizeof(name), "diff: %s: applied", c->name);
		rc = (pp.status ? patch_apply(node, pp.status, err, sizeof(err)) : 0) ||
		     (pp.meta ? patch_apply(node, pp.meta, err, sizeof(err)) : 0);
		T_OK(name, rc == 0, "%s", err);
		if (wr) {
			got = masked(node);
			T_OK(name, json_equal(got, wr), "node %s, want %s", show(got), show(wr));
			json_free(got);
		}
		snprintf(name, sizeof(name), "diff: %s: then nothing to do", c->name);
		rc = run_diff(c, node, &again);
		T_OK(name, rc == 0 && !again.status && !again.meta, "rc %d, status %s, meta %s", rc, show(again.status),
		     show(again.meta));
		nl_patches_free(&pp);
		nl_patches_free(&again);
		nl_patches_free(&again);
		json_free(node);
		json_free(ws);
		json_free(wm);
		json_free(wr);
	}
}

static void test_diff_misc(void)
{
	struct nl_policy p;
	struct nl_patches pp = { 0 };
	struct nl_set s = { 0 };
	struct json *node = J("{'kind':'Node'}"), *arr = J("[1]");

	nl_policy_init(&p);
	T_INT("diff: not a Node object", nl_diff(&p, node, &s, 0, &pp), -FB_EINVAL);
	T_INT("diff: not an object at all", nl_prune_diff(&p, arr, &pp), -FB_EINVAL);
	T_OK("diff: nothing returned on error", !pp.status && !pp.meta, "patches set");
	json_free(node);
	json_free(arr);
	/* garbage in the bookkeeping annotations removes nothing it does not name */
	node = J("{'metadata':{'name':'n','labels':{'F/a':'1','b':'2'},'annotations':{'N/feature-labels':',,,x,,',"
		 "'N/taints':'garbage,:,=:,F/a=b=c:NoSchedule,:NoSchedule'}},'spec':{'taints':'not a list'}}");
	T_INT("diff: malformed bookkeeping", nl_diff(&p, node, &s, 0, &pp), 0);
	T_STR("diff: malformed bookkeeping: only the annotation goes (taints disabled: not theirs)", show(pp.meta),
	      "[{\"op\":\"remove\",\"path\":\"/metadata/annotations/nfd.node.kubernetes.io~1feature-labels\"}]");
	nl_patches_free(&pp);
	json_free(node);
	{
		/* the record binds the node's uid (a recreated Node is a new one) and
		 * says whether it covers the taints annotation */
		struct json *a = J("{'metadata':{'uid':'u1','annotations':{'N/feature-labels':'a','N/taints':'F/t:NoSchedule'}}}"),
			    *b = J("{'metadata':{'uid':'u2','annotations':{'N/feature-labels':'a','N/taints':'F/t:NoSchedule'}}}"),
			    *c = J("{'metadata':{'uid':'u1','annotations':{'N/feature-labels':'a','N/taints':'F/u:NoSchedule'}}}");
		char ra[NL_RECORD_SIZE], rb[NL_RECORD_SIZE], rc1[NL_RECORD_SIZE], rn[NL_RECORD_SIZE], rcn[NL_RECORD_SIZE];

		p.enable_taints = 1;
		T_OK("record: a valid label value", nl_record_value(&p, a, ra) == 0 && strlen(ra) == 62 && ra[0] == 't' &&
		     ra[1] == '-' && strspn(ra + 2, "0123456789abcdef") == 60, "%s", ra);
		T_OK("record: bound to the uid", nl_record_value(&p, b, rb) == 0 && strcmp(ra, rb) != 0, "%s %s", ra, rb);
		T_OK("record: covers the taints annotation when taints are enabled",
		     nl_record_value(&p, c, rc1) == 0 && strcmp(ra, rc1) != 0, "%s", rc1);
		p.enable_taints = 0;
		T_OK("record: not when they are disabled",
		     nl_record_value(&p, a, rn) == 0 && nl_record_value(&p, c, rcn) == 0 && rn[0] == 'n' && !strcmp(rn, rcn),
		     "%s %s", rn, rcn);
		json_free(a);
		json_free(b);
		json_free(c);
	}
}

/* A node with a few hundred labels (looked up through an index, not a walk
 * over the members), one of them repeated (the first counts, as in
 * json_get): the ops come removes first, then adds and replaces, each in key
 * order; they apply cleanly and leave nothing to do. */
static void test_diff_large(void)
{
	size_t size = 1 << 16, nl = 0, nt = 0, ns = 0;
	char *labels = malloc(size), *tracked = malloc(size), *set = malloc(size), *text = malloc(3 * size);
	struct json *node, *set_j, *ops;
	struct nl_policy p;
	struct nl_set s = { 0 };
	struct nl_patches pp = { 0 }, again = { 0 };
	char err[256] = "";

	/* the node: F/l000..F/l199 (F/l000..F/l149 NFD's), F/l005 again, 100 others */
	for (int i = 0; i < 200; i++)
		nl += (size_t)snprintf(labels + nl, size - nl, "'F/l%03d':'%s',", i, i == 5 ? "2" : "1");
	nl += (size_t)snprintf(labels + nl, size - nl, "'F/l005':'1'");
	for (int i = 0; i < 100; i++)
		nl += (size_t)snprintf(labels + nl, size - nl, ",'example.com/o%03d':'x'", i);
	for (int i = 0; i < 150; i++)
		nt += (size_t)snprintf(tracked + nt, size - nt, "%sl%03d", i ? "," : "", i);
	/* wanted: F/l000..F/l119 (F/l000..F/l009 changed to 2), F/l300..F/l329 new */
	for (int i = 0; i < 150; i++)
		ns += (size_t)snprintf(set + ns, size - ns, "%s'F/l%03d':'%s'", i ? "," : "", i < 120 ? i : 180 + i,
				       i < 10 ? "2" : "1");
	snprintf(text, 3 * size, "{'metadata':{'name':'n1','labels':{%s},'annotations':{'N/feature-labels':'%s'}}}",
		 labels, tracked);
	node = J(text);
	snprintf(text, 3 * size, "{'labels':{%s}}", set);
	set_j = J(text);
	s.labels = json_dup(json_get(set_j, "labels"));
	nl_policy_init(&p);
	T_INT("diff: a large node", nl_diff(&p, node, &s, 0, &pp), 0);
	ops = pp.meta;
	T_INT("diff: a large node: 30 removes, 9 replaces, 30 adds, the bookkeeping", (long long)json_count(ops), 70);
	T_STR("diff: a large node: removes first", show(json_at(ops, 0)),
	      "{\"op\":\"remove\",\"path\":\"/metadata/labels/feature.node.kubernetes.io~1l120\"}");
	T_STR("diff: a large node: removes in key order", show(json_at(ops, 29)),
	      "{\"op\":\"remove\",\"path\":\"/metadata/labels/feature.node.kubernetes.io~1l149\"}");
	T_STR("diff: a large node: then in key order", show(json_at(ops, 30)),
	      "{\"op\":\"replace\",\"path\":\"/metadata/labels/feature.node.kubernetes.io~1l000\",\"value\":\"2\"}");
	T_STR("diff: a large node: a repeated name counts by its first value", show(json_at(ops, 35)),
	      "{\"op\":\"replace\",\"path\":\"/metadata/labels/feature.node.kubernetes.io~1l006\",\"value\":\"2\"}");
	T_STR("diff: a large node: adds", show(json_at(ops, 39)),
	      "{\"op\":\"add\",\"path\":\"/metadata/labels/feature.node.kubernetes.io~1l300\",\"value\":\"1\"}");
	T_STR("diff: a large node: the bookkeeping last", json_get_str(json_at(ops, 69), "path", ""),
	      "/metadata/annotations/nfd.node.kubernetes.io~1feature-labels");
	T_INT("diff: a large node: applies", patch_apply(node, ops, err, sizeof(err)), 0);
	T_INT("diff: a large node: then", nl_diff(&p, node, &s, 0, &again), 0);
	T_OK("diff: a large node: then nothing to do", !again.status && !again.meta, "meta %s", show(again.meta));
	nl_patches_free(&pp);
	nl_patches_free(&again);
	nl_set_free(&s);
	json_free(node);
	json_free(set_j);
	free(labels);
	free(tracked);
	free(set);
	free(text);
}

int main(void)
{
	char tmpl[] = "/tmp/fb-nodelabels.XXXXXX", *dir = mkdtemp(tmpl);
	struct features feat;
	struct json *inst;

	t_suite = "unit/nodelabels";
	if (!dir)
		return 2;
	log_init(&lg);
	lg.fd = t_log_open(dir);
	if (features_init(&feat) < 0)
		return 2;
	features_attr(&feat, "cpu.model", "vendor_id", "GenuineIntel");
	features_attr(&feat, "cpu.model", "name", "Intel(R) Xeon(R)");
	features_attr(&feat, "cpu.topology", "cores", "16");
	features_attr(&feat, "kernel.version", "full", "6.1.0-13-amd64");
	features_flag(&feat, "cpu.cpuid", "AVX");
	inst = features_instance(&feat, "pci.device");
	features_inst_attr(inst, "vendor", "8086");

	test_applier();
	test_filter(&feat);
	test_filter_misc();
	test_diff();
	test_diff_misc();
	test_diff_large();

	features_free(&feat);
	close(lg.fd);
	{
		char p[1100];

		snprintf(p, sizeof(p), "%s/log", dir);
		unlink(p);
		rmdir(dir);
	}
	return t_done();
}
