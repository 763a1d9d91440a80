/* kubectl-nfd: check NodeFeatureRule and NodeFeatureGroup files before they
 * reach a cluster; kubectl runs it as "kubectl nfd".
 *
 * Mirrors kubernetes-sigs/node-feature-discovery's kubectl plugin
 * (cmd/kubectl-nfd, pkg/kubectl-nfd, v0.17-v0.19): the subcommands validate
 * -f RULE, test -f RULE -n NODE [-k KUBECONFIG] and dryrun -f RULE -n
 * NODEFEATURE, their flag names, their messages, and exit status 1 for an
 * error (a file that cannot be read or parsed, a rule that fails, a missing
 * required flag, an unknown subcommand). Rules are evaluated by core/rules,
 * the engine nfd-master runs, and what they write goes through nfd-master's
 * own policy (core/nodelabels).
 *
 * Deliberate deviations:
 * - --explain (ours): per rule, matcher, term and expression whether it
 *   matched, on which elements, and for a failed expression what the node
 *   has under its key; then each output's name after nfd-master's policy.
 *   -extra-label-ns, -deny-label-ns, -enable-taints and -feature-gates
 *   (DisableAutoPrefix) are nfd-master's flags, for that policy.
 * - NodeFeatureGroup files (upstream's plugin reads every file as a
 *   NodeFeatureRule, so a group has no rules and is "valid"):
 *   spec.featureGroupRules are evaluated as nfd-master does and the result
 *   says whether the node would be in status.nodes.
 * - Every document of a multi-document file (or List) is read, not only the
 *   first; a kind other than NodeFeatureRule/NodeFeatureGroup is an error.
 *   dryrun merges every NodeFeature of its file, as test merges a node's.
 * - Rules run one after another on the same features, so a rule can match
 *   the labels and vars of the ones before it ("rule.matched"), as in
 *   nfd-master (upstream's plugin runs each rule alone).
 * - Validity is nfd-master's policy: an unprefixed name is valid (nfd-master
 *   writes it under feature.node.kubernetes.io/, or as it is with
 *   DisableAutoPrefix), which upstream's plugin
 *   calls an error. Output lines are sorted (Go prints maps at random).
 * - Usage errors are worded by core/opt; no "completion" subcommand. */
#include "applets.h"

#include "../core/app.h"
#include "../core/buf.h"
#include "../core/err.h"
#include "../core/features.h"
#include "../core/json.h"
#include "../core/kube.h"
#include "../core/log.h"
#include "../core/nodelabels.h"
#include "../core/opt.h"
#include "../core/rules.h"
#include "../core/sysfs.h"
#include "../core/version.h"
#include "../core/yaml.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KN_FILE_MAX (16 << 20) /* a rule or NodeFeature file */
#define KN_DOCS_MAX 10000
#define NF_API "/apis/nfd.k8s-sigs.io/v1alpha1"
#define NODE_LABEL "nfd.node.kubernetes.io/node-name"

static const char usage_root[] =
	"Usage: kubectl-nfd COMMAND [OPTIONS]   (kubectl nfd COMMAND ...)\n"
	"kubectl plugin for NFD: debug tool to validate/dryrun/test NodeFeatureRules\n"
	"(and NodeFeatureGroups).\n\n"
	"Commands:\n"
	"  dryrun    Process a NodeFeatureRule file against a NodeFeature file\n"
	"  test      Test a NodeFeatureRule file against a Node\n"
	"  validate  Validate a NodeFeatureRule file\n"
	"  help      Help about any command\n\n"
	"Run 'kubectl-nfd COMMAND --help' for a command's options.\n";

/* ---- options ------------------------------------------------------------- */

struct kn_opts {
	const char *rule_file, *nf_file, *node, *kubeconfig;
	int explain, enable_taints;
	struct opt_list extra, deny, gates;
};

#define KO(m) offsetof(struct kn_opts, m)
#define RULE_OPT(h) { .lo = "nodefeaturerule-file", .so = 'f', .kind = OPT_STR, .off = KO(rule_file), \
		      .arg = "PATH", .help = h }
#define POLICY_OPTS \
	{ .lo = "explain", .kind = OPT_FLAG, .off = KO(explain), \
	  .help = "say why each rule and expression matched or not (ours)" }, \
	{ .lo = "extra-label-ns", .kind = OPT_LIST, .off = KO(extra), .arg = "LIST", \
	  .help = "nfd-master's -extra-label-ns, for the policy applied" }, \
	{ .lo = "deny-label-ns", .kind = OPT_LIST, .off = KO(deny), .arg = "LIST", \
	  .help = "nfd-master's -deny-label-ns, for the policy applied" }, \
	{ .lo = "enable-taints", .kind = OPT_FLAG, .off = KO(enable_taints), \
	  .help = "nfd-master's -enable-taints: taints are written" }, \
	{ .lo = "feature-gates", .kind = OPT_STRS, .off = KO(gates), .arg = "K=V,...", \
	  .help = "nfd-master's -feature-gates: DisableAutoPrefix=true keeps unprefixed names" }

static const struct opt validate_optv[] = {
	RULE_OPT("Path to the NodeFeatureRule file to validate"),
};
static const struct opt test_optv[] = {
	RULE_OPT("Path to the NodeFeatureRule file to validate"),
	{ .lo = "nodename", .so = 'n', .kind = OPT_STR, .off = KO(node), .arg = "NODE",
	  .help = "Node to validate against" },
	{ .lo = "kubeconfig", .so = 'k', .kind = OPT_STR, .off = KO(kubeconfig), .arg = "PATH",
	  .help = "kubeconfig file to use" },
	POLICY_OPTS,
};
static const struct opt dryrun_optv[] = {
	RULE_OPT("Path to the NodeFeatureRule file to validate"),
	{ .lo = "nodefeature-file", .so = 'n', .kind = OPT_STR, .off = KO(nf_file), .arg = "PATH",
	  .help = "Path to the NodeFeature file to validate against" },
	POLICY_OPTS,
};

#define NOPTS(v) (sizeof(v) / sizeof((v)[0]))
static const struct opt_spec specs[] = {
	{ .name = "kubectl-nfd dryrun", .opts = dryrun_optv, .nopts = NOPTS(dryrun_optv),
	  .usage = "Usage: kubectl-nfd dryrun -f RULE_FILE -n NODEFEATURE_FILE [--explain]\n"
		   "Process a NodeFeatureRule file against a local NodeFeature file (YAML or JSON) to dry\n"
		   "run the rule against a node before applying it to a cluster.\n" },
	{ .name = "kubectl-nfd test", .opts = test_optv, .nopts = NOPTS(test_optv),
	  .usage = "Usage: kubectl-nfd test -f RULE_FILE -n NODE [-k KUBECONFIG] [--explain]\n"
		   "Test a NodeFeatureRule file against the NodeFeatures of a Node in the cluster.\n" },
	{ .name = "kubectl-nfd validate", .opts = validate_optv, .nopts = NOPTS(validate_optv),
	  .usage = "Usage: kubectl-nfd validate -f RULE_FILE\n"
		   "Validate a NodeFeatureRule file to ensure it is valid before applying it to a cluster.\n" },
};
enum { CMD_DRYRUN, CMD_TEST, CMD_VALIDATE };

/* ---- state ---------------------------------------------------------------- */

/* One kind of output, indexed as nodelabels counts them. */
enum { K_LABEL, K_ANNOTATION, K_ER, K_TAINT, K_COUNT };
static const char *const kind_name[K_COUNT] = { "label", "annotation", "extended resource", "taint" };

struct kn {
	struct kn_opts o;
	struct fb_log log;
	struct nl_policy pol;  /* nfd-master's, taints on: to judge each entry */
	struct json *docs;     /* the rule file's documents: owned array */
	char **errs;           /* the errors, printed at the end */
	size_t nerr, errsize;
	int oom;
};

static void errf(struct kn *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void errf(struct kn *s, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (ARRAY_GROW(s->errs, s->errsize, s->nerr + 1) < 0 || !(s->errs[s->nerr] = strdup(buf))) {
		s->oom = 1;
		return;
	}
	s->nerr++;
}

/* Go's %q for the strings we print: quotes, \" \\ and escapes for control bytes. */
static const char *q(const char *s, char *out, size_t size)
{
	size_t n = 0;

	out[n++] = '"';
	for (; *s && n + 6 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			n += (size_t)snprintf(out + n, size - n, "\\%c", c);
		else if (c == '\n')
			n += (size_t)snprintf(out + n, size - n, "\\n");
		else if (c == '\t')
			n += (size_t)snprintf(out + n, size - n, "\\t");
		else if (c < 0x20 || c == 0x7f)
			n += (size_t)snprintf(out + n, size - n, "\\x%02x", c);
		else
			out[n++] = (char)c;
	}
	out[n++] = '"';
	out[n] = '\0';
	return out;
}

/* ---- reading files ---------------------------------------------------------- */

/* "open PATH: no such file or directory" as Go's os.ReadFile says it. */
static void read_error(char *out, size_t size, const char *path, int rc, int sys)
{
	char why[128];

	if (rc == -FB_E2BIG) {
		snprintf(out, size, "%s: file larger than %d MiB", path, KN_FILE_MAX >> 20);
		return;
	}
	if (rc == -FB_EINVAL) {
		snprintf(out, size, "read %s: not a regular file", path);
		return;
	}
	snprintf(why, sizeof(why), "%s", rc == -FB_ENOENT ? "no such file or directory" : strerror(sys));
	if (why[0] >= 'A' && why[0] <= 'Z' && why[1] >= 'a')
		why[0] = (char)(why[0] - 'A' + 'a');
	snprintf(out, size, "open %s: %s", path, why);
}

/* A parse error naming the file and its line (yaml_parse counts from the
 * start of the document: line0 lines come before it). */
static void parse_error(char *out, size_t size, const char *path, const struct fb_errinfo *ei, int line0)
{
	const char *d = ei->detail;
	char *e;
	long l = strncmp(d, "line ", 5) == 0 ? strtol(d + 5, &e, 10) : -1;

	if (l > 0 && l < 1000000000 && strncmp(e, " column ", 8) == 0)
		snprintf(out, size, "%s: line %ld%s", path, l + line0, e);
	else
		snprintf(out, size, "%s: %s", path, ei->detail[0] ? ei->detail : fb_strerror(ei->code));
}

/* Appends doc (taken) to docs, or its items when it is a List. */
static int add_doc(struct json *docs, struct json *doc)
{
	struct json *items = json_get(doc, "items");

	if (json_type(doc) == JSON_NULL) {
		json_free(doc);
		return 0;
	}
	if (strcmp(json_get_str(doc, "kind", ""), "List") == 0 && json_type(items) == JSON_ARRAY) {
		for (const struct json *i = json_child(items); i; i = json_next(i))
			if (json_append_take(docs, json_dup(i)) < 0) {
				json_free(doc);
				return -FB_ENOMEM;
			}
		json_free(doc);
		return 0;
	}
	return json_append_take(docs, doc);
}

/* Where the next "---" line starts at or after p (end when none). */
static const char *next_sep(const char *p, const char *end)
{
	for (; p < end; p = memchr(p, '\n', (size_t)(end - p)) ? (const char *)memchr(p, '\n', (size_t)(end - p)) + 1 : end)
		if (end - p >= 3 && memcmp(p, "---", 3) == 0 &&
		    (end - p == 3 || p[3] == '\n' || p[3] == ' ' || p[3] == '\t' || p[3] == '\r'))
			return p;
	return end;
}

/* The documents of path (YAML, several separated by "---", or JSON; a List
 * gives its items) into *out (owned array). Returns 0, or -1 with the
 * reason in msg. */
static int load_docs(const char *path, struct json **out, char *msg, size_t size)
{
	char *text = NULL;
	const char *p, *end, *doc;
	struct json *docs = json_new_array(), *d;
	struct fb_errinfo ei;
	ssize_t len;
	int line0 = 0, ndocs = 0;

	*out = NULL;
	errno = 0;
	if (!docs || (len = sysfs_read_alloc(AT_FDCWD, path, KN_FILE_MAX, &text)) < 0) {
		read_error(msg, size, path, docs ? (int)len : -FB_ENOMEM, errno);
		json_free(docs);
		return -1;
	}
	for (p = text; p < text + len && strchr(" \t\r\n", *p); p++)
		;
	fb_errinfo_init(&ei);
	if (p < text + len && *p == '{') {
		if (!(d = json_parse(text, (size_t)len, path, &ei)) || add_doc(docs, d) < 0)
			goto bad;
		goto done;
	}
	end = text + len;
	for (doc = text; doc < end; doc = p) {
		p = next_sep(doc == text ? doc : doc + 3, end);
		if (++ndocs > KN_DOCS_MAX) {
			snprintf(msg, size, "%s: more than %d documents", path, KN_DOCS_MAX);
			goto fail;
		}
		if (!(d = yaml_parse(doc, (size_t)(p - doc), path, &ei)))
			goto bad;
		if (add_doc(docs, d) < 0) {
			ei.code = FB_ENOMEM;
			goto bad;
		}
		for (const char *c = doc; c < p; c++)
			line0 += *c == '\n';
	}
done:
	free(text);
	*out = docs;
	return 0;
bad:
	parse_error(msg, size, path, &ei, line0);
fail:
	free(text);
	json_free(docs);
	return -1;
}

/* ---- features --------------------------------------------------------------- */

/* upstream Features.MergeInto: flags and attributes by element (in wins),
 * instances appended. */
static int merge_features(struct json *out, const struct json *in)
{
	static const char *const kinds[] = { "flags", "attributes", "instances" };

	for (int k = 0; k < 3; k++) {
		const struct json *src = json_get(in, kinds[k]);
		struct json *dst = json_get(out, kinds[k]);

		if (json_type(src) != JSON_OBJECT)
			continue;
		if (!dst && (json_set_take(out, kinds[k], json_new_object()) < 0 || !(dst = json_get(out, kinds[k]))))
			return -FB_ENOMEM;
		for (const struct json *set = json_child(src); set; set = json_next(set)) {
			const struct json *el = json_get(set, "elements");
			struct json *have = json_get(dst, json_key(set)), *hel;

			if (!have) {
				if (json_set_take(dst, json_key(set), json_dup(set)) < 0)
					return -FB_ENOMEM;
				continue;
			}
			if (!(hel = json_get(have, "elements"))) {
				if (el && json_set_take(have, "elements", json_dup(el)) < 0)
					return -FB_ENOMEM;
				continue;
			}
			for (const struct json *e = json_child(el); e; e = json_next(e))
				if ((k == 2 ? json_append_take(hel, json_dup(e)) : json_set_take(hel, json_key(e), json_dup(e))) < 0)
					return -FB_ENOMEM;
		}
	}
	return 0;
}

/* f (initialised) gets the merged spec.features of the NodeFeature objects. */
static int features_of(struct features *f, const struct json *objs)
{
	for (const struct json *o = json_child(objs); o; o = json_next(o)) {
		const struct json *feat = json_getv(o, "spec", "features", NULL);

		if (json_type(feat) == JSON_OBJECT && merge_features(f->root, feat) < 0)
			return -FB_ENOMEM;
	}
	return 0;
}

/* ---- nfd-master's policy, one entry at a time -------------------------------- */

/* nl_filter's reason for the refusal, whole. */
struct reason {
	char *why;
	size_t size;
};

static void keep_reason(void *ctx, const char *why)
{
	struct reason *r = ctx;

	snprintf(r->why, r->size, "%s", why);
}

/* Judges one output as nfd-master would write it: 1 with *kept (owned: the
 * one-member object, or for a taint the one-element array) when written, 0
 * with why when refused, < 0 out of memory. */
static int judge(struct kn *s, int kind, const char *key, const struct json *val, const struct features *f,
		 struct json **kept, char *why, size_t size)
{
	struct nl_set set = { 0 };
	struct json **slot = kind == K_LABEL ? &set.labels : kind == K_ANNOTATION ? &set.annotations
			     : kind == K_ER ? &set.extended_resources : &set.taints;
	struct json *one = kind == K_TAINT ? json_new_array() : json_new_object();
	struct reason rs = { why, size };
	struct nl_rejects rej = { .why = keep_reason, .ctx = &rs };
	int rc;

	*kept = NULL;
	if (!one || (kind == K_TAINT ? json_append_take(one, json_dup(val)) : json_set_str(one, key, json_str(val))) < 0) {
		json_free(one);
		return -FB_ENOMEM;
	}
	*slot = one;
	snprintf(why, size, "refused by nfd-master's policy");
	if ((rc = nl_filter(&s->pol, &set, f, NULL, &rej)) < 0) {
		nl_set_free(&set);
		return rc;
	}
	if (json_count(*slot)) {
		*kept = *slot;
		*slot = NULL;
		nl_set_free(&set);
		return 1;
	}
	nl_set_free(&set);
	return 0;
}

/* Whether why is nodelabels' reason for an "@" value that names nothing
 * (upstream's plugin makes that an error, not a validation message). */
static int dynamic_failure(const char *v, const char *why)
{
	return v && v[0] == '@' &&
	       (strncmp(why, "value is not in the form", 24) == 0 || strncmp(why, "feature ", 8) == 0 ||
		strncmp(why, "element ", 8) == 0);
}

/* ---- output ------------------------------------------------------------------ */

static int key_cmp(const void *a, const void *b)
{
	return strcmp(json_key(*(struct json *const *)a), json_key(*(struct json *const *)b));
}

/* The members of obj sorted by key: an owned vector of borrowed nodes. */
static struct json **sorted(const struct json *obj, size_t *n)
{
	struct json **v;
	size_t i = 0;

	*n = json_count(obj);
	if (!*n || !(v = malloc(*n * sizeof(*v))))
		return NULL;
	for (struct json *c = json_child(obj); c; c = json_next(c))
		v[i++] = c;
	qsort(v, *n, sizeof(*v), key_cmp);
	return v;
}

/* Upstream's sections (taints, labels, extended resources, annotations)
 * with "-Validation errors-" from nfd-master's policy; an "@" value that
 * names nothing is an error (exit 1) and left out, as upstream does. */
static int print_sections(struct kn *s, const struct rules_out *out, const struct features *f)
{
	static const char *const title[K_COUNT] = { "Labels", "Annotations", "Extended Resources", "Taints" };
	static const int order[K_COUNT] = { K_TAINT, K_LABEL, K_ER, K_ANNOTATION };
	char why[600], qa[700], qb[700];
	struct buf lines, bad;

	buf_init(&lines, 0);
	buf_init(&bad, 0);
	for (int oi = 0; oi < K_COUNT && !s->oom; oi++) {
		int k = order[oi];
		const struct json *m = k == K_LABEL ? out->labels : k == K_ANNOTATION ? out->annotations
				       : k == K_ER ? out->extended_resources : out->taints;
		size_t n = json_count(m);
		struct json **v = k == K_TAINT ? NULL : sorted(m, &n), *kept;

		buf_reset(&lines);
		buf_reset(&bad);
		for (size_t i = 0; i < n; i++) {
			const struct json *e = k == K_TAINT ? json_at(m, i) : v ? v[i] : NULL;
			const char *key = k == K_TAINT ? json_get_str(e, "key", "") : json_key(e);
			const char *val = k == K_TAINT ? json_get_str(e, "value", "") : json_str(e);
			int r;

			if (!e || (r = judge(s, k, k == K_TAINT ? NULL : key, e, f, &kept, why, sizeof(why))) < 0) {
				s->oom = 1;
				break;
			}
			if (!r && dynamic_failure(val, why)) {
				errf(s, "failed to get dynamic value for %s %s: %s", k == K_LABEL ? "label" : "extendedResource",
				     q(key, qa, sizeof(qa)), why);
				continue;
			}
			if (k == K_TAINT)
				buf_printf(&lines, "{%s %s %s <nil>}\n", key, val, json_get_str(e, "effect", ""));
			else
				buf_printf(&lines, "%s=%s\n", key, r && k != K_ANNOTATION ? json_str(json_child(kept)) : val);
			if (!r && k == K_TAINT)
				buf_printf(&bad, "invalid taint %s=%s:%s: %s\n", key, val, json_get_str(e, "effect", ""), why);
			else if (!r)
				buf_printf(&bad, "invalid %s %s:%s %s\n", kind_name[k], q(key, qa, sizeof(qa)),
					   q(val, qb, sizeof(qb)), why);
			json_free(kept);
		}
		free(v);
		if (lines.err || bad.err)
			s->oom = 1;
		if (lines.len)
			printf("***\t%s\t***\n%s", title[k], lines.p);
		if (lines.len && bad.len)
			printf("\t-Validation errors-\n%s", bad.p);
	}
	buf_free(&lines);
	buf_free(&bad);
	return s->oom ? -FB_ENOMEM : 0;
}

/* ---- --explain ------------------------------------------------------------ */

static void print_elem(const struct json *e, const struct features *f, const char *feature)
{
	const struct json *inst = json_get(e, "instance");
	long long idx;

	if (inst && json_int(inst, &idx) == 0) {
		const struct json *a = json_get(json_at(features_instances(f, feature), (size_t)idx), "attributes");
		int n = 0;

		printf("instance %lld {", idx);
		for (const struct json *c = json_child(a); c && n < 6; c = json_next(c), n++)
			printf("%s%s=%s", n ? ", " : "", json_key(c), json_str(c) ? json_str(c) : "");
		printf("%s}", json_count(a) > 6 ? ", ..." : "");
		return;
	}
	printf("%s", json_get_str(e, "name", ""));
	if (json_get_str(e, "value", NULL))
		printf("=%s", json_get_str(e, "value", ""));
}

static void print_elems(const struct json *arr, const struct features *f, const char *feature)
{
	size_t n = 0;

	for (const struct json *e = json_child(arr); e; e = json_next(e), n++) {
		if (n == 8) {
			printf(", ... (%zu in all)", json_count(arr));
			break;
		}
		printf("%s", n ? ", " : "");
		print_elem(e, f, feature);
	}
}

static void print_expr(const struct json *x, const struct features *f, const char *feature, int ind)
{
	const char *key = json_get_str(x, "key", NULL);
	int n = 0;

	printf("%*s%s %s", ind, "", key ? key : "matchName", json_get_str(x, "op", ""));
	for (const struct json *v = json_child(json_get(x, "values")); v; v = json_next(v))
		printf("%s%s", n++ ? ", " : " [", json_str(v));
	printf("%s%s: ", n ? "]" : "", json_get(x, "type") ? " (version)" : "");
	if (json_get_str(x, "error", NULL)) {
		printf("ERROR: %s\n", json_get_str(x, "error", ""));
		return;
	}
	if (json_bool(json_get(x, "matched"))) {
		printf("matched");
		if (json_count(json_get(x, "elements"))) {
			printf(" by ");
			print_elems(json_get(x, "elements"), f, feature);
		}
		printf("\n");
		return;
	}
	printf("no match");
	if (!key) {
		printf(" among the element names\n");
		return;
	}
	if (!json_count(json_get(x, "seen")))
		printf(": feature %s has no elements\n", feature);
	else
		printf(": saw ");
	n = 0;
	for (const struct json *s = json_child(json_get(x, "seen")); s; s = json_next(s), n++) {
		const char *kind = json_get_str(s, "kind", "");
		const char *v = json_get_str(s, "value", NULL);

		printf("%s", n ? ", " : "");
		if (strcmp(kind, "flag") == 0)
			printf("flag %s", json_bool(json_get(s, "present")) ? "present" : "absent");
		else if (strcmp(kind, "attribute") == 0 && v)
			printf("attribute %s=\"%s\"", key, v);
		else if (strcmp(kind, "attribute") == 0)
			printf("attribute %s absent", key);
		else if (strcmp(kind, "instance") == 0) {
			long long i = 0;

			json_int(json_get(s, "index"), &i);
			if (v)
				printf("instance %lld: \"%s\"", i, v);
			else
				printf("instance %lld: absent", i);
		} else if (strcmp(kind, "more") == 0) {
			long long c = 0;

			json_int(json_get(s, "count"), &c);
			printf("%lld more instances", c);
		}
	}
	if (json_count(json_get(x, "seen")))
		printf("\n");
}

static void print_matcher(const struct json *m, const struct features *f, const char *what, int ind)
{
	printf("%*s%s: %s%s%s\n", ind, "", what, json_bool(json_get(m, "matched")) ? "matched" : "no match",
	       json_get(m, "error") ? ": ERROR: " : "", json_get_str(m, "error", ""));
	for (const struct json *t = json_child(json_get(m, "terms")); t; t = json_next(t)) {
		const char *feature = json_get_str(t, "feature", "");

		printf("%*sfeature %s: ", ind + 2, "", feature);
		if (!json_bool(json_get(t, "present")))
			printf("no match: the node has no feature %s\n", feature);
		else if (json_get(t, "error"))
			printf("ERROR: %s\n", json_get_str(t, "error", ""));
		else if (json_bool(json_get(t, "matched"))) {
			printf("matched");
			if (json_count(json_get(t, "elements"))) {
				printf(" (elements: ");
				print_elems(json_get(t, "elements"), f, feature);
				printf(")");
			}
			printf("\n");
		} else {
			printf("no match\n");
		}
		if (!json_bool(json_get(t, "present")))
			continue;
		for (const struct json *x = json_child(json_get(t, "expressions")); x; x = json_next(x))
			print_expr(x, f, feature, ind + 4);
		if (json_get(t, "matchName"))
			print_expr(json_get(t, "matchName"), f, feature, ind + 4);
	}
}

/* Each output of one rule, and the name nfd-master would give it. */
static void explain_outputs(struct kn *s, const struct rules_out *o, const struct features *f, int group)
{
	const struct json *maps[K_COUNT] = { o->labels, o->annotations, o->extended_resources, o->taints };
	char why[600];

	if (group) {
		for (const struct json *v = json_child(o->vars); v; v = json_next(v))
			printf("    var %s=%s\n", json_key(v), json_str(v));
		return;
	}
	for (int k = 0; k < K_COUNT; k++)
		for (const struct json *e = json_child(maps[k]); e; e = json_next(e)) {
			struct json *kept = NULL;
			int r = judge(s, k, k == K_TAINT ? NULL : json_key(e), e, f, &kept, why, sizeof(why));

			if (r < 0) {
				s->oom = 1;
				return;
			}
			if (k == K_TAINT)
				printf("    taint %s=%s:%s", json_get_str(e, "key", ""), json_get_str(e, "value", ""),
				       json_get_str(e, "effect", ""));
			else
				printf("    %s %s=%s", kind_name[k], json_key(e), json_str(e));
			if (r && k == K_TAINT)
				printf(" -> written%s\n", s->o.enable_taints ? "" : " only with nfd-master -enable-taints");
			else if (r)
				printf(" -> %s=%s\n", json_key(json_child(kept)), json_str(json_child(kept)));
			else
				printf(" -> not written: %s\n", why);
			json_free(kept);
		}
	for (const struct json *v = json_child(o->vars); v; v = json_next(v))
		printf("    var %s=%s (for later rules only)\n", json_key(v), json_str(v));
}

/* ---- evaluating --------------------------------------------------------------- */

struct eval {
	struct kn *s;
	struct features f;
	struct rules_out total;
	const char *node;      /* for group membership */
	int errors;
};

struct rule_err {
	struct kn *s;
	const char *rule;
	int n;
	char msg[600];
};

static void on_rule_error(void *ctx, const char *what, const char *rule, const char *msg)
{
	struct rule_err *e = ctx;

	(void)what;
	(void)rule;
	e->n++;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
}

static int merge_out(struct rules_out *to, const struct rules_out *from)
{
	struct json *const src[] = { from->labels, from->annotations, from->extended_resources, from->vars };
	struct json *const dst[] = { to->labels, to->annotations, to->extended_resources, to->vars };

	for (int i = 0; i < 4; i++)
		for (const struct json *c = json_child(src[i]); c; c = json_next(c))
			if (json_set_str(dst[i], json_key(c), json_str(c)) < 0)
				return -FB_ENOMEM;
	for (const struct json *t = json_child(from->taints); t; t = json_next(t))
		if (json_append_take(to->taints, json_dup(t)) < 0)
			return -FB_ENOMEM;
	return 0;
}

/* Names the fields a NodeFeatureGroup rule cannot have (the API server
 * prunes them; RULES_NFG ignores them). */
static void group_unknown_fields(const struct json *r, struct kn *s)
{
	static const char *const keep[] = { "name", "vars", "varsTemplate", "matchFeatures", "matchAny" };

	for (const struct json *c = json_child(r); c; c = json_next(c)) {
		size_t i = 0;

		while (i < 5 && strcmp(keep[i], json_key(c)) != 0)
			i++;
		if (i == 5)
			errf(s, "rule %s: unknown field %s (a NodeFeatureGroup rule has name, vars, varsTemplate, "
				"matchFeatures and matchAny)", json_get_str(r, "name", ""), json_key(c));
	}
}

/* Compiles the one rule j (borrowed). */
static int compile_one(struct rules **out, const struct json *j, const char *what, int group)
{
	struct json *arr = json_new_array();
	int rc;

	if (!arr || json_append_take(arr, json_dup(j)) < 0) {
		json_free(arr);
		return -FB_ENOMEM;
	}
	rc = rules_compile(out, arr, group ? RULES_NFG : RULES_NFR, what);
	json_free(arr);
	return rc;
}

/* Runs one rule: explained when asked, its outputs added to ev->total.
 * Returns 1 matched, 0 not, -1 failed, < -1 out of memory. */
static int run_one(struct eval *ev, const struct json *j, const char *what, int group)
{
	struct kn *s = ev->s;
	struct rules *r = NULL;
	struct rules_out o;
	struct json *x = NULL;
	struct rule_err re = { .s = s };
	char qa[700];
	int matched = 0, rc;

	memset(&o, 0, sizeof(o));
	if ((rc = compile_one(&r, j, what, group)) < 0 || (rc = rules_out_init(&o)) < 0)
		goto out;
	if ((rc = rules_explain(r, 0, &ev->f, &x)) < 0)
		goto out;
	matched = json_bool(json_get(x, "matched"));
	if ((rc = rules_run(r, &ev->f, &o, on_rule_error, &re)) < 0)
		goto out;
	if (re.n) {
		errf(s, "failed to process rule: %s - %s", q(rules_name(r, 0), qa, sizeof(qa)), re.msg);
		ev->errors++;
	}
	if (s->o.explain) {
		size_t k = 0;

		printf("  %s%s%s\n", re.n ? "FAILED: " : matched ? "MATCHED" : "not matched", re.n ? re.msg : "",
		       !re.n && matched && group ? ": the node is in the group" : "");
		for (const struct json *m = json_child(json_get(x, "matchAny")); m; m = json_next(m), k++) {
			char t[40];

			snprintf(t, sizeof(t), "matchAny[%zu]", k);
			print_matcher(m, &ev->f, t, 4);
		}
		if (json_get(x, "matchFeatures"))
			print_matcher(json_get(x, "matchFeatures"), &ev->f, "matchFeatures", 4);
		if (!re.n && matched)
			explain_outputs(s, &o, &ev->f, group);
	}
	if (!group && (rc = merge_out(&ev->total, &o)) < 0)
		goto out;
	rc = re.n ? -1 : matched;
out:
	json_free(x);
	rules_out_free(&o);
	rules_free(r);
	return rc < -1 ? -FB_ENOMEM : rc;
}

/* The node name a NodeFeatureGroup would list: system.name's nodename, as
 * nfd-master takes it, else fallback. */
static const char *group_node(const struct eval *ev)
{
	const char *n = json_get_str(features_attrs(&ev->f, "system.name"), "nodename", NULL);

	return n && *n ? n : ev->node;
}

static int eval_doc(struct eval *ev, const struct json *doc, size_t di)
{
	const char *kind = json_get_str(doc, "kind", "NodeFeatureRule");
	const char *name = json_get_str(json_get(doc, "metadata"), "name", "");
	int group = strcmp(kind, "NodeFeatureGroup") == 0, member = 0, rc;
	const struct json *rules = json_getv(doc, "spec", group ? "featureGroupRules" : "rules", NULL);
	char what[400];

	if (!group && strcmp(kind, "NodeFeatureRule") != 0) {
		errf(ev->s, "document %zu: kind %s is not NodeFeatureRule or NodeFeatureGroup", di + 1, kind);
		ev->errors++;
		return 0;
	}
	snprintf(what, sizeof(what), "%s %s", kind, name);
	if (ev->s->o.explain)
		printf("%s %s\n", kind, *name ? name : "(no name)");
	for (const struct json *j = json_child(rules); j; j = json_next(j)) {
		printf("Processing %srule:  %s\n", group ? "group " : "", json_get_str(j, "name", ""));
		rc = run_one(ev, j, what, group);
		if (rc < -1)
			return rc;
		member |= rc > 0;
	}
	if (group)
		printf("***\tNodeFeatureGroup %s\t***\nnode %s %s in status.nodes\n", name, group_node(ev),
		       member ? "would be" : "would not be");
	return 0;
}

/* Every document against ev->f, then the sections. */
static int evaluate(struct kn *s, struct eval *ev)
{
	int rc = 0;
	size_t i = 0;

	for (const struct json *d = json_child(s->docs); d && rc >= 0; d = json_next(d), i++)
		rc = eval_doc(ev, d, i);
	if (rc >= 0)
		rc = print_sections(s, &ev->total, &ev->f);
	if (rc >= 0 && s->o.explain) {
		struct nl_set set = { json_dup(ev->total.labels), json_dup(ev->total.annotations),
				      json_dup(ev->total.extended_resources), json_dup(ev->total.taints) };
		struct nl_policy p = s->pol;
		const struct json *maps[3] = { set.labels, set.annotations, set.extended_resources };

		p.enable_taints = s->o.enable_taints;
		if (!set.labels || !set.annotations || !set.extended_resources || !set.taints ||
		    nl_filter(&p, &set, &ev->f, NULL, NULL) < 0) {
			nl_set_free(&set);
			return -FB_ENOMEM;
		}
		maps[0] = set.labels, maps[1] = set.annotations, maps[2] = set.extended_resources;
		printf("*** What nfd-master would write (its policy%s) ***\n",
		       s->o.enable_taints ? ", taints enabled" : "; taints need -enable-taints");
		for (int k = 0; k < 3; k++)
			for (const struct json *c = json_child(maps[k]); c; c = json_next(c))
				printf("%s %s=%s\n", kind_name[k], json_key(c), json_str(c));
		for (const struct json *t = json_child(set.taints); t; t = json_next(t))
			printf("taint %s=%s:%s\n", json_get_str(t, "key", ""), json_get_str(t, "value", ""),
			       json_get_str(t, "effect", ""));
		if (!json_count(set.labels) && !json_count(set.annotations) && !json_count(set.extended_resources) &&
		    !json_count(set.taints))
			printf("(nothing)\n");
		nl_set_free(&set);
	}
	return rc;
}

/* ---- subcommands ------------------------------------------------------------- */

/* Upstream's validate.MatchFeatures: a feature name is <domain>.<feature>
 * (templates name it so); nfd-master takes any other name as a feature no
 * node has. */
static void feature_names(struct kn *s, const struct json *matchers)
{
	for (const struct json *m = json_child(matchers); m; m = json_next(m)) {
		const char *f = json_get_str(m, "feature", ""), *dot = strchr(f, '.');

		if (!dot || strchr(dot + 1, '.'))
			errf(s, "invalid feature name %s (not <domain>.<feature>), cannot be used for templating", f);
	}
}

static int validate_rule(struct kn *s, const struct json *j, const char *what, int group)
{
	struct rules *r = NULL;
	struct features none;
	char why[600], qa[700], qb[700];
	int rc;

	printf("Validating %srule:  %s\n", group ? "group " : "", json_get_str(j, "name", ""));
	if (group)
		group_unknown_fields(j, s);
	if (!*json_get_str(j, "name", ""))
		errf(s, "rule name cannot be empty");
	if ((rc = compile_one(&r, j, what, group)) < 0)
		return rc;
	if (rules_error(r, 0))
		errf(s, "rule %s: %s", q(json_get_str(j, "name", ""), qa, sizeof(qa)), rules_error(r, 0));
	rules_free(r);
	feature_names(s, json_get(j, "matchFeatures"));
	for (const struct json *a = json_child(json_get(j, "matchAny")); a; a = json_next(a))
		feature_names(s, json_get(a, "matchFeatures"));
	if (group)
		return 0;
	/* the static outputs through nfd-master's policy; "@" values as 0 */
	memset(&none, 0, sizeof(none));
	for (int k = 0; k < K_COUNT; k++) {
		static const char *const member[K_COUNT] = { "labels", "annotations", "extendedResources", "taints" };
		const struct json *m = json_get(j, member[k]);

		for (const struct json *e = json_child(m); e; e = json_next(e)) {
			struct json *kept = NULL, *zero = NULL;
			const char *key = k == K_TAINT ? NULL : json_key(e), *v = json_str(e);

			if (k != K_TAINT && !v)
				continue; /* the compile error said so */
			if ((k == K_LABEL || k == K_ER) && v[0] == '@' && !(zero = json_new_string("0")))
				return -FB_ENOMEM;
			if ((rc = judge(s, k, key, zero ? zero : e, &none, &kept, why, sizeof(why))) < 0) {
				json_free(zero);
				return rc;
			}
			if (!rc && k == K_TAINT)
				errf(s, "invalid taint %s=%s:%s: %s", json_get_str(e, "key", ""), json_get_str(e, "value", ""),
				     json_get_str(e, "effect", ""), why);
			else if (!rc)
				errf(s, "invalid %s %s:%s %s", kind_name[k], q(key, qa, sizeof(qa)),
				     q(zero ? "0" : v, qb, sizeof(qb)), why);
			json_free(kept);
			json_free(zero);
		}
	}
	return 0;
}

static int cmd_validate(struct kn *s)
{
	char msg[1200];
	size_t di = 0;
	int rc = 0;

	printf("Validating NodeFeatureRule %s\n", s->o.rule_file);
	if (load_docs(s->o.rule_file, &s->docs, msg, sizeof(msg)) < 0)
		errf(s, "error reading NodeFeatureRule file: %s", msg);
	for (const struct json *d = json_child(s->docs); d && rc >= 0; d = json_next(d), di++) {
		const char *kind = json_get_str(d, "kind", "NodeFeatureRule");
		int group = strcmp(kind, "NodeFeatureGroup") == 0;
		char what[400];

		if (!group && strcmp(kind, "NodeFeatureRule") != 0) {
			errf(s, "document %zu: kind %s is not NodeFeatureRule or NodeFeatureGroup", di + 1, kind);
			continue;
		}
		snprintf(what, sizeof(what), "%s %s", kind, json_get_str(json_get(d, "metadata"), "name", ""));
		for (const struct json *j = json_child(json_getv(d, "spec", group ? "featureGroupRules" : "rules", NULL));
		     j && rc >= 0; j = json_next(j))
			rc = validate_rule(s, j, what, group);
	}
	if (rc < 0)
		return rc;
	if (s->nerr)
		printf("NodeFeatureRule %s is not valid\n", s->o.rule_file);
	else
		printf("NodeFeatureRule %s is valid\n", s->o.rule_file);
	return 0;
}

static int cmd_dryrun(struct kn *s, struct eval *ev)
{
	struct json *nfs = NULL;
	char msg[1200], qa[700], qb[700];
	const struct json *first;
	int rc = 0;

	printf("Evaluating NodeFeatureRule %s against NodeFeature %s\n", q(s->o.rule_file, qa, sizeof(qa)),
	       q(s->o.nf_file, qb, sizeof(qb)));
	if (load_docs(s->o.rule_file, &s->docs, msg, sizeof(msg)) < 0)
		errf(s, "error reading NodeFeatureRule file: %s", msg);
	else if (load_docs(s->o.nf_file, &nfs, msg, sizeof(msg)) < 0)
		errf(s, "error reading NodeFeature file: %s", msg);
	else if ((rc = features_of(&ev->f, nfs)) == 0) {
		first = json_child(nfs);
		ev->node = json_get_str(json_getv(first, "metadata", "labels", NULL), NODE_LABEL, NULL);
		if (!ev->node)
			ev->node = json_get_str(json_get(first, "metadata"), "name", "(unknown)");
		rc = evaluate(s, ev);
	}
	json_free(nfs);
	if (rc < 0)
		return rc;
	printf("NodeFeatureRule %s is %svalid for NodeFeature %s\n", q(s->o.rule_file, qa, sizeof(qa)), s->nerr ? "not " : "",
	       q(s->o.nf_file, qb, sizeof(qb)));
	return 0;
}

static int cmd_test(struct kn *s, struct eval *ev)
{
	struct kube_opts ko;
	struct kube *k = NULL;
	struct json *items = NULL;
	struct fb_errinfo ei;
	char msg[1200], path[600], sel[400], qa[700], rv[64];
	int rc = 0;

	printf("Evaluating NodeFeatureRule against Node %s\n", s->o.node);
	fb_errinfo_init(&ei);
	kube_opts_init(&ko);
	ko.kubeconfig = s->o.kubeconfig && *s->o.kubeconfig ? s->o.kubeconfig : NULL;
	ko.max_attempts = 2;
	/* the selector value, percent-encoded: a node name is a DNS subdomain */
	snprintf(sel, sizeof(sel), "%s", s->o.node);
	for (char *p = sel; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		      (*p >= 'A' && *p <= 'Z') || *p == '_'))
			*p = '_'; /* matches no NodeFeature: the label value cannot hold it */
	snprintf(path, sizeof(path), NF_API "/nodefeatures?labelSelector=nfd.node.kubernetes.io%%2Fnode-name%%3D%s", sel);
	if (kube_connect(&k, &ko, &s->log, -1, NULL, 0, &ei) < 0) {
		errf(s, "error building kubeconfig: %s", fb_errinfo_str(&ei, msg, sizeof(msg)));
	} else if (kube_list(k, path, &items, rv, sizeof(rv), &ei) < 0) {
		errf(s, "failed to get NodeFeature resources for node %s: %s", q(s->o.node, qa, sizeof(qa)),
		     fb_errinfo_str(&ei, msg, sizeof(msg)));
	} else {
		size_t i = 0;

		printf("Found %zu NodeFeature objects for node %s: ", json_count(items), q(s->o.node, qa, sizeof(qa)));
		for (const struct json *o = json_child(items); o; o = json_next(o), i++)
			printf("%s%s/%s", i ? ", " : "", json_get_str(json_get(o, "metadata"), "namespace", ""),
			       json_get_str(json_get(o, "metadata"), "name", ""));
		printf("\n");
		ev->node = s->o.node;
		if ((rc = features_of(&ev->f, items)) == 0 && load_docs(s->o.rule_file, &s->docs, msg, sizeof(msg)) < 0)
			errf(s, "error reading NodeFeatureRule file: %s", msg);
		else if (rc == 0)
			rc = evaluate(s, ev);
	}
	json_free(items);
	kube_free(k);
	if (rc < 0)
		return rc;
	printf("NodeFeatureRule is %svalid for Node %s\n", s->nerr ? "not " : "", s->o.node);
	return 0;
}

/* ---- main --------------------------------------------------------------------- */

/* cobra's answer to a missing required flag: exit 1. */
static int missing(const struct kn_opts *o, int cmd)
{
	const char *m[2];
	int n = 0;

	if (cmd == CMD_DRYRUN && !o->nf_file)
		m[n++] = "nodefeature-file";
	if (!o->rule_file)
		m[n++] = "nodefeaturerule-file";
	if (cmd == CMD_TEST && !o->node)
		m[n++] = "nodename";
	if (!n)
		return 0;
	fprintf(stderr, "Error: required flag(s) \"%s\"%s%s%s not set\n", m[0], n > 1 ? ", \"" : "", n > 1 ? m[1] : "",
		n > 1 ? "\"" : "");
	fprintf(stderr, "Run '%s --help' for usage.\n", specs[cmd].name);
	printf("required flag(s) \"%s\"%s%s%s not set\n", m[0], n > 1 ? ", \"" : "", n > 1 ? m[1] : "", n > 1 ? "\"" : "");
	return 1;
}

/* The options after the subcommand; pflag takes flags after operands too
 * (which it ignores), so parse on past each operand. */
static int parse(int cmd, struct kn_opts *o, int argc, char **argv)
{
	int first = 0, rc;

	while (argc > 0) {
		if ((rc = opt_parse(&specs[cmd], o, argc, argv, &first)) == OPT_EXIT)
			return 0;
		if (rc < 0)
			return 1;
		if (first >= argc)
			break;
		argv += first;
		argc -= first;
	}
	return missing(o, cmd) ? 1 : -1;
}

static int setup(struct kn *s)
{
	int dap = 0;

	log_init(&s->log);
	nl_policy_init(&s->pol);
	s->pol.extra_ns = s->o.extra.v;
	s->pol.n_extra = (size_t)s->o.extra.n;
	s->pol.deny_ns = s->o.deny.v;
	s->pol.n_deny = (size_t)s->o.deny.n;
	s->pol.enable_taints = 1;
	if (app_feature_gates("kubectl-nfd", &s->o.gates, &dap, NULL) < 0)
		return -1;
	s->pol.unprefixed = dap ? NL_KEEP_UNPREFIXED : NL_AUTO_PREFIX;
	return 0;
}

static int find_cmd(const char *name)
{
	static const char *const names[] = { "dryrun", "test", "validate" };

	for (int i = 0; i < 3; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

int kubectl_nfd_main(int argc, char **argv)
{
	struct kn s;
	struct eval ev;
	int cmd, rc, ret = 1;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    (strcmp(argv[1], "help") == 0 && argc == 2)) {
		fputs(usage_root, stdout);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (strcmp(argv[1], "help") == 0) { /* cobra: an unknown topic gets the root help */
		if ((cmd = find_cmd(argv[2])) >= 0)
			opt_help(&specs[cmd]);
		else
			fputs(usage_root, stdout);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("kubectl-nfd (featurebox) %s\n", FB_VERSION);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	if ((cmd = find_cmd(argv[1])) < 0) {
		fprintf(stderr, "Error: unknown command \"%s\" for \"kubectl-nfd\"\nRun 'kubectl-nfd --help' for usage.\n",
			argv[1]);
		printf("unknown command \"%s\" for \"kubectl-nfd\"\n", argv[1]);
		return 1;
	}
	memset(&s, 0, sizeof(s));
	if ((rc = parse(cmd, &s.o, argc - 1, argv + 1)) >= 0)
		return rc;
	memset(&ev, 0, sizeof(ev));
	ev.s = &s;
	if (setup(&s) < 0 || features_init(&ev.f) < 0 || rules_out_init(&ev.total) < 0)
		goto out;
	rc = cmd == CMD_VALIDATE ? cmd_validate(&s) : cmd == CMD_DRYRUN ? cmd_dryrun(&s, &ev) : cmd_test(&s, &ev);
	fflush(stdout);
	if (rc < 0 || s.oom) {
		fprintf(stderr, "kubectl-nfd: %s\n", fb_strerror(rc < 0 ? rc : -FB_ENOMEM));
		goto out;
	}
	for (size_t i = 0; i < s.nerr; i++)
		fprintf(stderr, "%s\n", s.errs[i]);
	ret = s.nerr ? 1 : ferror(stdout) ? 1 : 0;
out:
	for (size_t i = 0; i < s.nerr; i++)
		free(s.errs[i]);
	free(s.errs);
	json_free(s.docs);
	features_free(&ev.f);
	rules_out_free(&ev.total);
	return ret;
}
