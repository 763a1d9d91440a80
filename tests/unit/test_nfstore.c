/* nfstore: nfd-master's store, with no network. Each case applies a few API
 * objects in order and looks at one node: its desired labels, how many
 * NodeFeatures it has, whether it was marked, the "@" names it counts. */
#include "t.h"

#include "../../core/err.h"
#include "../../core/json.h"
#include "../../core/log.h"
#include "../../core/metrics.h"
#include "../../core/nfstore.h"
#include "../../core/nodelabels.h"

#define OWN "node-feature-discovery"
/* a NodeFeature of namespace ns, name n, for node nd, with that spec */
#define NF(ns, n, nd, spec) \
	"{\"metadata\":{\"namespace\":\"" ns "\",\"name\":\"" n "\",\"labels\":" \
	"{\"nfd.node.kubernetes.io/node-name\":\"" nd "\"}},\"spec\":" spec "}"
#define NODE(n) "{\"metadata\":{\"name\":\"" n "\"}}"
#define NS(n) "{\"metadata\":{\"name\":\"" n "\"}}"
#define NFR(n, rules) "{\"metadata\":{\"name\":\"" n "\"},\"spec\":{\"rules\":" rules "}}"
#define KVER "{\"attributes\":{\"kernel.version\":{\"elements\":{\"major\":\"6\",\"minor\":\"1\"}}}}"
/* a rule labelling kver=<major> when the kernel is newer than 4 */
#define RULE_KVER \
	"[{\"name\":\"k\",\"labels\":{\"kver\":\"@kernel.version.major\"},\"matchFeatures\":[{\"feature\":" \
	"\"kernel.version\",\"matchExpressions\":{\"major\":{\"op\":\"Gt\",\"value\":[\"4\"]}}}]}]"

/* a rule that always matches, labelling bar=1 */
#define UNPREF_RULE "[{\"name\":\"u\",\"labels\":{\"bar\":\"1\"}}]"

enum op {
	END, NFA, NFD, NFRA, NFRD, NODEA, NODED, NSA, NSD, /* apply or delete */
	NF_LIST, NODE_LIST, NFR_LIST, /* begin, the objects of the step as a list, end */
	CLEAR,                        /* forget the marks so far */
};

struct step {
	enum op op;
	const char *obj;
	const char *obj2; /* the list's second object */
};

struct tcase {
	const char *name;
	int ns_filter, listed; /* conf.ns_filter; conf.listed answers listed */
	struct step steps[8];
	const char *node;      /* the node looked at */
	const char *labels;    /* its desired labels, compact; NULL: no such node */
	int nfs, marked, relist, dyn, stale;
	/* nfs: its NodeFeatures; marked: dirty hook calls since the last CLEAR
	 * (-1: not checked); relist: relist_nf; dyn: "@" names counted; stale:
	 * objects kept before the node's last "@" name (read again) */
	int unprefixed; /* the policy's (NL_AUTO_PREFIX: 0) */
};

static const struct tcase cases[] = {
	{ "one NodeFeature: its labels, prefixed", 0, 1,
	  { { NODEA, NODE("n1") }, { CLEAR }, { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\",\"x.io/b\":\"2\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"1\",\"x.io/b\":\"2\"}", 1, 1, 0, 0, 0 },
	{ "a NodeFeature before its Node: filed, not marked", 0, 1,
	  { { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"1\"}", 1, 0, 0, 0, 0 },
	{ "the same NodeFeature again: nothing marked", 0, 1,
	  { { NODEA, NODE("n1") }, { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\"}}") }, { CLEAR },
	    { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"1\"}", 1, 0, 0, 0, 0 },
	{ "deleting the NodeFeature: labels gone, node marked", 0, 1,
	  { { NODEA, NODE("n1") }, { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\"}}") }, { CLEAR },
	    { NFD, NF(OWN, "n1", "n1", "{}") } },
	  "n1", "{}", 0, 1, 0, 0, 0 },
	{ "no node-name label: ignored", 0, 1,
	  { { NFA, "{\"metadata\":{\"namespace\":\"a\",\"name\":\"b\"},\"spec\":{\"labels\":{\"a\":\"1\"}}}" } },
	  "b", NULL, 0, 0, 0, 0, 0 },
	{ "an object moving to another node leaves the first", 0, 1,
	  { { NODEA, NODE("n1") }, { NODEA, NODE("n2") }, { NFA, NF("x", "o", "n1", "{\"labels\":{\"a\":\"1\"}}") },
	    { NFA, NF("x", "o", "n2", "{\"labels\":{\"a\":\"1\"}}") } },
	  "n1", "{}", 0, -1, 0, 0, 0 },
	{ "merge order: our namespace first, then by name, the later wins", 0, 1,
	  { { NFA, NF(OWN, "z", "n1", "{\"labels\":{\"a\":\"own\",\"o\":\"1\"}}") },
	    { NFA, NF("b", "y", "n1", "{\"labels\":{\"a\":\"b-y\"}}") },
	    { NFA, NF("a", "y", "n1", "{\"labels\":{\"a\":\"a-y\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"b-y\",\"feature.node.kubernetes.io/o\":\"1\"}", 3, 0, 0, 0, 0 },
	{ "a rule over the features kept for it", 0, 0,
	  { { NFRA, NFR("r", RULE_KVER) }, { NFA, NF(OWN, "n1", "n1", "{\"features\":" KVER "}") } },
	  "n1", "{\"feature.node.kubernetes.io/kver\":\"6\"}", 1, 0, 0, 0, 0 },
	{ "a new rule marks every node; more features: list again", 0, 1,
	  { { NODEA, NODE("n1") }, { NFA, NF(OWN, "n1", "n1", "{\"features\":" KVER "}") }, { CLEAR },
	    { NFRA, NFR("r", RULE_KVER) } },
	  "n1", "{}", 1, 1, 1, 0, 0 },
	{ "a new rule before NodeFeatures are listed: no relist", 0, 0,
	  { { NFRA, NFR("r", RULE_KVER) }, { NFA, NF(OWN, "n1", "n1", "{\"features\":" KVER "}") } },
	  "n1", "{\"feature.node.kubernetes.io/kver\":\"6\"}", 1, 0, 0, 0, 0 },
	{ "deleting the rule: its labels go, the node is marked", 0, 1,
	  { { NODEA, NODE("n1") }, { NFRA, NFR("r", RULE_KVER) },
	    { NFA, NF(OWN, "n1", "n1", "{\"features\":" KVER "}") }, { CLEAR }, { NFRD, NFR("r", "[]") } },
	  "n1", "{}", 1, 1, 1, 0, 0 },
	{ "a rule missing from the list is deleted", 0, 1,
	  { { NODEA, NODE("n1") }, { NFRA, NFR("r", RULE_KVER) },
	    { NFA, NF(OWN, "n1", "n1", "{\"features\":" KVER "}") }, { CLEAR }, { NFR_LIST, NFR("s", "[]") } },
	  "n1", "{}", 1, -1, 1, 0, 0 },
	/* a stale object lacks what the lookups need: until it is read again,
	 * "@" values find nothing (the applet's nf_refetch reads it first) */
	{ "\"@\" names: counted per node, the other object kept before is stale", 0, 1,
	  { { NFA, NF("x", "b", "n1", "{\"features\":" KVER "}") },
	    { NFA, NF(OWN, "a", "n1", "{\"labels\":{\"k\":\"@kernel.version.major\",\"m\":\"@kernel.version.minor\"}}") } },
	  "n1", "{}", 2, 0, 0, 1, 1 }, /* two values, one feature: one name, counted twice */
	{ "\"@\" names: kept again, nothing stale", 0, 1,
	  { { NFA, NF("x", "b", "n1", "{\"features\":" KVER "}") },
	    { NFA, NF(OWN, "a", "n1", "{\"labels\":{\"k\":\"@kernel.version.major\"}}") },
	    { NF_LIST, NF("x", "b", "n1", "{\"features\":" KVER ",\"labels\":{\"z\":\"1\"}}"),
	      NF(OWN, "a", "n1", "{\"labels\":{\"k\":\"@kernel.version.major\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/k\":\"6\",\"feature.node.kubernetes.io/z\":\"1\"}", 2, 0, 0, 1, 0 },
	{ "\"@\" names: gone with the object that named them", 0, 1,
	  { { NFA, NF("x", "b", "n1", "{\"labels\":{\"k\":\"@kernel.version.major\"}}") },
	    { NFA, NF(OWN, "a", "n1", "{\"labels\":{\"k\":\"@kernel.version.major\"}}") },
	    { NFD, NF(OWN, "a", "n1", "{}") }, { NFA, NF("x", "b", "n1", "{\"labels\":{\"k\":\"1\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/k\":\"1\"}", 1, 0, 0, 0, 0 },
	{ "a NodeFeature missing from the list is deleted", 0, 1,
	  { { NODEA, NODE("n1") }, { NFA, NF(OWN, "a", "n1", "{\"labels\":{\"a\":\"1\"}}") },
	    { NFA, NF(OWN, "b", "n1", "{\"labels\":{\"b\":\"1\"}}") },
	    { NF_LIST, NF(OWN, "b", "n1", "{\"labels\":{\"b\":\"1\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/b\":\"1\"}", 1, -1, 0, 0, 0 },
	{ "a Node deleted: gone once it has no NodeFeatures", 0, 1,
	  { { NODEA, NODE("n1") }, { NODED, NODE("n1") } }, "n1", NULL, 0, -1, 0, 0, 0 },
	{ "a Node deleted keeps its entry while it has NodeFeatures", 0, 1,
	  { { NODEA, NODE("n1") }, { NFA, NF(OWN, "a", "n1", "{\"labels\":{\"a\":\"1\"}}") },
	    { NODE_LIST, NODE("n2") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"1\"}", 1, -1, 0, 0, 0 },
	{ "a Node missing from the list is dropped", 0, 1,
	  { { NODEA, NODE("n1") }, { NODEA, NODE("n2") }, { NODE_LIST, NODE("n2") } }, "n1", NULL, 0, -1, 0, 0, 0 },
	{ "a Node's first appearance marks it", 0, 1,
	  { { NFA, NF(OWN, "a", "n1", "{\"labels\":{\"a\":\"1\"}}") }, { NODEA, NODE("n1") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"1\"}", 1, 1, 0, 0, 0 },
	{ "namespace selector: unselected namespaces do not count", 1, 1,
	  { { NFA, NF("a", "o", "n1", "{\"labels\":{\"a\":\"1\"}}") },
	    { NFA, NF("b", "o", "n1", "{\"labels\":{\"b\":\"1\"}}") }, { NSA, NS("b") } },
	  "n1", "{\"feature.node.kubernetes.io/b\":\"1\"}", 2, 0, 0, 0, 0 },
	{ "namespace selector: a namespace selected marks its nodes", 1, 1,
	  { { NODEA, NODE("n1") }, { NFA, NF("a", "o", "n1", "{\"labels\":{\"a\":\"1\"}}") }, { CLEAR },
	    { NSA, NS("a") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"1\"}", 1, 1, 0, 0, 0 },
	{ "namespace selector: deselected", 1, 1,
	  { { NODEA, NODE("n1") }, { NSA, NS("a") }, { NFA, NF("a", "o", "n1", "{\"labels\":{\"a\":\"1\"}}") },
	    { CLEAR }, { NSD, NS("a") } },
	  "n1", "{}", 1, 1, 0, 0, 0 },
	/* unprefixed names (DisableAutoPrefix; autoDefaultNs: false): an
	 * object's "a" and "<default>/a" are two labels, kept and merged apart */
	{ "auto prefix: a NodeFeature's and a rule's unprefixed names prefixed, the prefixed duplicate wins", 0, 1,
	  { { NFRA, NFR("r", UNPREF_RULE) },
	    { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\",\"feature.node.kubernetes.io/a\":\"2\",\"x.io/b\":\"3\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"2\",\"x.io/b\":\"3\",\"feature.node.kubernetes.io/bar\":\"1\"}", 1, -1, 0, 0,
	  0 },
	{ "DisableAutoPrefix: a NodeFeature's and a rule's unprefixed names as they are", 0, 1,
	  { { NFRA, NFR("r", UNPREF_RULE) },
	    { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\",\"feature.node.kubernetes.io/a\":\"2\",\"x.io/b\":\"3\"}}") } },
	  "n1", "{\"a\":\"1\",\"feature.node.kubernetes.io/a\":\"2\",\"x.io/b\":\"3\",\"bar\":\"1\"}", 1, -1, 0, 0, 0,
	  NL_KEEP_UNPREFIXED },
	{ "DisableAutoPrefix: two objects, \"a\" of the later one wins, \"<default>/a\" is another label", 0, 1,
	  { { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\",\"feature.node.kubernetes.io/a\":\"2\"}}") },
	    { NFA, NF("vendor", "v", "n1", "{\"labels\":{\"a\":\"3\"}}") } },
	  "n1", "{\"a\":\"3\",\"feature.node.kubernetes.io/a\":\"2\"}", 2, -1, 0, 0, 0, NL_KEEP_UNPREFIXED },
	{ "autoDefaultNs: false: unprefixed names refused, not prefixed", 0, 1,
	  { { NFRA, NFR("r", UNPREF_RULE) },
	    { NFA, NF(OWN, "n1", "n1", "{\"labels\":{\"a\":\"1\",\"feature.node.kubernetes.io/a\":\"2\",\"x.io/b\":\"3\"}}") } },
	  "n1", "{\"feature.node.kubernetes.io/a\":\"2\",\"x.io/b\":\"3\"}", 1, -1, 0, 0, 0, NL_DROP_UNPREFIXED },
};

struct ctx {
	int marked, listed;
};

static void on_dirty(void *p)
{
	((struct ctx *)p)->marked++;
}

static int on_listed(void *p, int what)
{
	(void)what;
	return ((struct ctx *)p)->listed;
}

static int apply(struct nfstore *s, enum op op, const char *text)
{
	struct fb_errinfo ei;
	struct json *o = json_parse(text, strlen(text), "test", &ei);
	int rc = -FB_EINVAL;

	if (!o)
		return rc;
	switch (op) {
	case NFA: case NFD: rc = nfstore_nf_apply(s, o, op == NFD); break;
	case NFRA: case NFRD: rc = nfstore_nfr_apply(s, o, op == NFRD); break;
	case NODEA: case NODED: rc = nfstore_node_apply(s, o, op == NODED); break;
	case NSA: case NSD: rc = nfstore_ns_apply(s, o, op == NSD); break;
	default: break;
	}
	json_free(o);
	return rc;
}

static int list(struct nfstore *s, const struct step *st)
{
	static const struct {
		enum op op, each;
		void (*begin)(struct nfstore *), (*end)(struct nfstore *);
	} how[] = {
		{ NF_LIST, NFA, nfstore_nf_begin, nfstore_nf_end },
		{ NODE_LIST, NODEA, nfstore_node_begin, nfstore_node_end },
		{ NFR_LIST, NFRA, nfstore_nfr_begin, nfstore_nfr_end },
	};
	int rc = 0;

	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		if (how[i].op != st->op)
			continue;
		how[i].begin(s);
		if (st->obj)
			rc |= apply(s, how[i].each, st->obj);
		if (st->obj2)
			rc |= apply(s, how[i].each, st->obj2);
		how[i].end(s);
	}
	return rc;
}

static void store_open(struct nfstore *s, struct ctx *cx, struct fb_log *lg, struct metrics *mx,
		       struct nl_policy *pol, int ns_filter)
{
	struct nfstore_conf c = {
		.log = lg, .mx = mx, .ns = OWN, .pol = pol, .ns_filter = ns_filter, .m_rule_errors = -1,
		.m_rule_time = -1, .m_rej_labels = -1, .m_rej_ers = -1, .m_rej_taints = -1,
		.dirty = on_dirty, .listed = on_listed, .ctx = cx,
	};

	log_init(lg);
	lg->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	metrics_init(mx);
	c.m_rej_nfs = metrics_add(mx, METRIC_COUNTER, "rejected", "", "rejected");
	nl_policy_init(pol);
	nfstore_init(s, &c);
}

static void store_close(struct nfstore *s, struct fb_log *lg, struct metrics *mx)
{
	(void)mx; /* a fixed table: nothing to free */
	nfstore_free(s);
	close(lg->fd);
}

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcase *tc = &cases[i];
		struct nfstore s;
		struct ctx cx = { 0, tc->listed };
		struct fb_log lg;
		struct metrics mx;
		struct nl_policy pol;
		struct nfstore_node *n;
		int rc = 0, nfs = 0, stale = 0;
		char what[300];

		store_open(&s, &cx, &lg, &mx, &pol, tc->ns_filter);
		pol.unprefixed = tc->unprefixed;
		for (const struct step *st = tc->steps; st->op != END; st++) {
			if (st->op == CLEAR)
				cx.marked = 0;
			else if (st->op >= NF_LIST)
				rc |= list(&s, st);
			else
				rc |= apply(&s, st->op, st->obj);
		}
		snprintf(what, sizeof(what), "%s: every step succeeds", tc->name);
		T_INT(what, rc, 0);
		n = nfstore_node_find(&s, tc->node);
		for (struct nfstore_nf *o = n ? n->nfs : NULL; o; o = o->next, nfs++)
			stale += o->dyn_gen != n->dyn_gen;
		snprintf(what, sizeof(what), "%s: NodeFeatures", tc->name);
		T_INT(what, nfs, tc->nfs);
		if (tc->marked >= 0) {
			snprintf(what, sizeof(what), "%s: marked", tc->name);
			T_INT(what, cx.marked > 0, tc->marked);
		}
		snprintf(what, sizeof(what), "%s: relist", tc->name);
		T_INT(what, s.relist_nf, tc->relist);
		snprintf(what, sizeof(what), "%s: \"@\" names, stale objects", tc->name);
		T_OK(what, n ? (n->dyn.n == (size_t)tc->dyn && stale == tc->stale) : !tc->dyn,
		     "%zu names (want %d), %d stale (want %d)", n ? n->dyn.n : 0, tc->dyn, stale, tc->stale);
		if (tc->labels) {
			struct nl_set set;
			char *got = NULL;

			if (n && nfstore_desired(&s, n, &set) == 0) {
				got = json_print(set.labels, NULL);
				nl_set_free(&set);
			}
			snprintf(what, sizeof(what), "%s: desired labels", tc->name);
			T_STR(what, got, tc->labels);
			free(got);
		} else if (tc->nfs == 0) {
			snprintf(what, sizeof(what), "%s: no node entry", tc->name);
			T_OK(what, !n, "node %s is there", tc->node);
		}
		store_close(&s, &lg, &mx);
	}
}

/* Beyond the caps: refused whole, counted, and what the object said before
 * no longer counts. */
static char *big(int labels, size_t bytes)
{
	size_t size = 256 + (size_t)labels * 24 + bytes;
	char *p = malloc(size), *e = p;

	e += sprintf(e, "{\"metadata\":{\"namespace\":\"x\",\"name\":\"o\",\"labels\":"
		     "{\"nfd.node.kubernetes.io/node-name\":\"n1\"}},\"spec\":{\"labels\":{\"a\":\"1\"");
	for (int i = 0; i < labels; i++)
		e += sprintf(e, ",\"l%d\":\"v\"", i);
	if (bytes) {
		e += sprintf(e, ",\"pad\":\"");
		memset(e, 'x', bytes);
		e += bytes;
		*e++ = '"';
	}
	sprintf(e, "}}}");
	return p;
}

static void test_caps(void)
{
	static const struct {
		const char *name;
		int labels;
		size_t bytes;
		int refused;
	} caps[] = {
		{ "at the label cap", NFSTORE_MAX_LABELS - 1, 0, 0 },
		{ "over the label cap", NFSTORE_MAX_LABELS, 0, 1 },
		{ "just under the byte cap", 0, NFSTORE_MAX_BYTES - 1024, 0 },
		{ "over the byte cap", 0, NFSTORE_MAX_BYTES, 1 },
	};

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct nfstore s;
		struct ctx cx = { 0, 1 };
		struct fb_log lg;
		struct metrics mx;
		struct nl_policy pol;
		struct nfstore_node *n;
		char *text = big(caps[i].labels, caps[i].bytes), what[200], *kept = NULL;
		int rc;

		store_open(&s, &cx, &lg, &mx, &pol, 0);
		apply(&s, NFA, NF("x", "o", "n1", "{\"labels\":{\"before\":\"1\"}}"));
		rc = apply(&s, NFA, text);
		n = nfstore_node_find(&s, "n1");
		if (n && n->nfs) {
			struct json *k = nfstore_nf_kept(&s, n->nfs);

			kept = k ? json_print(k, NULL) : NULL;
			json_free(k);
		}
		snprintf(what, sizeof(what), "caps: %s: %s", caps[i].name, caps[i].refused ? "refused" : "kept");
		T_OK(what, rc == 0 && (caps[i].refused ? !n && s.nfs.n == 0
				       : n && n->nfs && !n->nfs->next && kept && strstr(kept, "\"a\"") &&
						 !strstr(kept, "before")),
		     "rc %d, node %p", rc, (void *)n);
		free(kept);
		snprintf(what, sizeof(what), "caps: %s: counted", caps[i].name);
		T_INT(what, mx.m[s.c.m_rej_nfs].value, caps[i].refused);
		store_close(&s, &lg, &mx);
		free(text);
	}
	{
		/* a label value holding \u0000: refused whole, not a label cut at the NUL */
		struct nfstore s;
		struct ctx cx = { 0, 1 };
		struct fb_log lg;
		struct metrics mx;
		struct nl_policy pol;

		store_open(&s, &cx, &lg, &mx, &pol, 0);
		apply(&s, NFA, NF("x", "o", "n1", "{\"labels\":{\"before\":\"1\"}}"));
		T_INT("caps: a \\u0000 in the spec: applied", apply(&s, NFA, NF("x", "o", "n1",
			"{\"labels\":{\"a\":\"ok\\u0000hidden\"}}")), 0);
		T_OK("caps: a \\u0000 in the spec: refused", !nfstore_node_find(&s, "n1") && s.nfs.n == 0,
		     "nfs %zu", s.nfs.n);
		T_INT("caps: a \\u0000 in the spec: counted", mx.m[s.c.m_rej_nfs].value, 1);
		store_close(&s, &lg, &mx);
	}
}

/* NodeFeatureGroups: members, what the object shows, slicing, deletion. */
#define NFG(n, ns, rules, status) \
	"{\"metadata\":{\"name\":\"" n "\",\"namespace\":\"" ns "\"},\"spec\":{\"featureGroupRules\":" rules "}" \
	status "}"
#define GRULE_NEW \
	"[{\"name\":\"new\",\"matchFeatures\":[{\"feature\":\"kernel.version\",\"matchExpressions\":" \
	"{\"major\":{\"op\":\"Gt\",\"value\":[\"5\"]}}}]}]"

static int group_apply(struct nfstore *s, const char *text, int deleted)
{
	struct fb_errinfo ei;
	struct json *o = json_parse(text, strlen(text), "test", &ei);
	int rc = o ? nfstore_nfg_apply(s, o, deleted) : -FB_EINVAL;

	json_free(o);
	return rc;
}

static int stop_now(void *ctx)
{
	return --*(int *)ctx >= 0;
}

static char *members(const struct nfstore *s, size_t i)
{
	struct json *a = i < s->n_nfgs ? nfstore_group_nodes(s->nfgs[i]) : NULL;
	char *t = a ? json_print(a, NULL) : NULL;

	json_free(a);
	return t;
}

static void test_groups(void)
{
	struct nfstore s;
	struct ctx cx = { 0, 1 };
	struct fb_log lg;
	struct metrics mx;
	struct nl_policy pol;
	char *t;
	int budget = 1;

	store_open(&s, &cx, &lg, &mx, &pol, 0);
	apply(&s, NODEA, NODE("n3"));
	apply(&s, NODEA, NODE("n1"));
	apply(&s, NODEA, NODE("n2"));
	apply(&s, NFA, NF(OWN, "n1", "n1", "{\"features\":" KVER "}"));
	apply(&s, NFA, NF(OWN, "n3", "n3", "{\"features\":" KVER "}"));
	apply(&s, NFA, NF(OWN, "n2", "n2", "{\"features\":{\"attributes\":{\"kernel.version\":{\"elements\":{\"major\":\"5\"}}}}}"));
	T_INT("groups: another namespace's group is ignored",
	      group_apply(&s, NFG("g", "elsewhere", GRULE_NEW, ""), 0) == 0 && s.n_nfgs == 0, 1);
	T_INT("groups: a group of ours is kept", group_apply(&s, NFG("g", OWN, GRULE_NEW, ""), 0) == 0 && s.n_nfgs == 1, 1);
	T_INT("groups: its rules' feature is kept: NodeFeatures listed again", s.relist_nf, 1);
	s.relist_nf = 0;
	s.refresh_all = 1; /* the applet lists them again */
	nfstore_nf_begin(&s);
	apply(&s, NFA, NF(OWN, "n1", "n1", "{\"features\":" KVER "}"));
	apply(&s, NFA, NF(OWN, "n3", "n3", "{\"features\":" KVER "}"));
	apply(&s, NFA, NF(OWN, "n2", "n2", "{\"features\":{\"attributes\":{\"kernel.version\":{\"elements\":{\"major\":\"5\"}}}}}"));
	nfstore_nf_end(&s);
	T_INT("groups: a slice that ends at once leaves nodes to do", nfstore_groups_update(&s, stop_now, &budget, NULL), 1);
	T_INT("groups: then every node", nfstore_groups_update(&s, NULL, NULL, NULL), 0);
	t = members(&s, 0);
	T_STR("groups: the matching nodes, sorted", t, "[{\"name\":\"n1\"},{\"name\":\"n3\"}]");
	free(t);
	T_INT("groups: no status on the object: a write is wanted", nfstore_group_want(s.nfgs[0]) != s.nfgs[0]->have, 1);
	group_apply(&s, NFG("g", OWN, GRULE_NEW, ",\"status\":{\"nodes\":[{\"name\":\"n1\"},{\"name\":\"n3\"}]}"), 0);
	T_INT("groups: the object shows the members: nothing to write", nfstore_group_want(s.nfgs[0]) == s.nfgs[0]->have, 1);
	group_apply(&s, NFG("g", OWN, GRULE_NEW, ",\"status\":{\"nodes\":[{\"name\":\"n3\"},{\"name\":\"n1\"}]}"), 0);
	T_INT("groups: another order: a write is wanted", nfstore_group_want(s.nfgs[0]) != s.nfgs[0]->have, 1);
	group_apply(&s, NFG("g", OWN, GRULE_NEW, ",\"status\":{\"nodes\":[{\"name\":\"n1\"},{\"name\":\"n3\"},{\"name\":\"n9\"}]}"), 0);
	T_INT("groups: a node more: a write is wanted", nfstore_group_want(s.nfgs[0]) != s.nfgs[0]->have, 1);
	apply(&s, NODED, NODE("n3"));
	t = members(&s, 0);
	T_STR("groups: a deleted Node leaves at once", t, "[{\"name\":\"n1\"}]");
	free(t);
	apply(&s, NFD, NF(OWN, "n1", "n1", "{}"));
	nfstore_groups_update(&s, NULL, NULL, NULL);
	t = members(&s, 0);
	T_STR("groups: a node without NodeFeatures is no member", t, "[]");
	free(t);
	group_apply(&s, NFG("g", OWN, "[]", ",\"status\":{\"nodes\":[]}"), 0);
	T_INT("groups: [] on the object and no members: nothing to write",
	      nfstore_group_want(s.nfgs[0]) == s.nfgs[0]->have, 1);
	group_apply(&s, NFG("g", OWN, "[]", ""), 1);
	T_INT("groups: deleted", s.n_nfgs, 0);
	store_close(&s, &lg, &mx);
}

int main(void)
{
	t_suite = "nfstore";
	test_cases();
	test_caps();
	test_groups();
	return t_done();
}
