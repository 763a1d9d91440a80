/* rules_explain: the verdicts agree with rules_run (rule, matcher, term,
 * expression), what each expression held for, and what a failed one saw
 * (flag, attribute value, each instance's value, an absent feature), on a
 * table of rules. JSON is written with ' for " (see q()). */
#include "t.h"
#include "t_json.h"

#include "../../core/features.h"
#include "../../core/json.h"
#include "../../core/rules.h"

static const char *const features_json =
	"{'flags': {'cpu.cpuid': {'elements': {'AVX2': {}, 'AVX512F': {}}}},"
	" 'attributes': {'kernel.version': {'elements': {'major': '6', 'minor': '8', 'full': '6.8.0-49'}},"
	"                'cpu.cpuid': {'elements': {'AVX10_VERSION': '1'}}},"
	" 'instances': {'pci.device': {'elements': ["
	"   {'attributes': {'class': '0380', 'vendor': '1002', 'device': '74a1'}},"
	"   {'attributes': {'class': '0300', 'vendor': '1a03', 'device': '2000'}}]}}}";

/* A rule, and what json_getv paths of its explanation must print as. */
struct check {
	const char *path[8]; /* member names and array indices, NULL-ended */
	const char *want;    /* json_print of that node, ' for " */
};
struct tcase {
	const char *name, *rule;
	struct check c[6];
};

static const struct tcase cases[] = {
	{ "matched attribute: the element it held for", "{'name': 'r', 'labels': {'a': 'b'}, 'matchFeatures': ["
	  "{'feature': 'kernel.version', 'matchExpressions': {'major': {'op': 'Ge', 'value': ['6']}}}]}",
	  { { { "matched", NULL }, "true" },
	    { { "matchFeatures", "terms", "0", "expressions", "0", "elements", NULL }, "[{'name':'major','value':'6'}]" } } },
	{ "failed attribute: the value seen", "{'name': 'r', 'matchFeatures': ["
	  "{'feature': 'kernel.version', 'matchExpressions': {'minor': {'op': 'Gt', 'value': ['10']}}}]}",
	  { { { "matched", NULL }, "false" },
	    { { "matchFeatures", "terms", "0", "expressions", "0", NULL },
	      "{'key':'minor','op':'Gt','values':['10'],'matched':false,'seen':[{'kind':'attribute','value':'8'}]}" } } },
	{ "flags and attributes of one feature: both seen", "{'name': 'r', 'matchFeatures': ["
	  "{'feature': 'cpu.cpuid', 'matchExpressions': {'AVX512BF16': {'op': 'Exists'}}}]}",
	  { { { "matchFeatures", "terms", "0", "expressions", "0", "seen", NULL },
	      "[{'kind':'flag','present':false},{'kind':'attribute'}]" } } },
	{ "instances: per expression, the instances seen", "{'name': 'r', 'matchFeatures': ["
	  "{'feature': 'pci.device', 'matchExpressions': {'vendor': {'op': 'In', 'value': ['1002']},"
	  " 'device': {'op': 'In', 'value': ['7410']}}}]}",
	  { { { "matched", NULL }, "false" },
	    { { "matchFeatures", "terms", "0", "matched", NULL }, "false" },
	    { { "matchFeatures", "terms", "0", "expressions", "0", "elements", NULL }, "[{'instance':0}]" },
	    { { "matchFeatures", "terms", "0", "expressions", "1", "seen", NULL },
	      "[{'kind':'instance','index':0,'value':'74a1'},{'kind':'instance','index':1,'value':'2000'}]" } } },
	{ "matchAny: each entry, the rule matches by one", "{'name': 'r', 'matchAny': ["
	  "{'matchFeatures': [{'feature': 'pci.device', 'matchExpressions': {'device': {'op': 'In', 'value': ['74a5']}}}]},"
	  "{'matchFeatures': [{'feature': 'pci.device', 'matchExpressions': {'device': {'op': 'In', 'value': ['74a1']}}}]}]}",
	  { { { "matched", NULL }, "true" },
	    { { "matchAny", "0", "matched", NULL }, "false" },
	    { { "matchAny", "1", "terms", "0", "elements", NULL }, "[{'instance':0}]" } } },
	{ "an absent feature", "{'name': 'r', 'matchFeatures': [{'feature': 'usb.device', 'matchExpressions': {}}]}",
	  { { { "matchFeatures", "terms", "0", NULL }, "{'feature':'usb.device','present':false,'matched':false,'expressions':[]}" } } },
	{ "matchName", "{'name': 'r', 'matchFeatures': [{'feature': 'cpu.cpuid', 'matchName': {'op': 'InRegexp', 'value': ['^AVX5']}}]}",
	  { { { "matchFeatures", "terms", "0", "matchName", "elements", NULL }, "[{'name':'AVX512F'}]" } } },
	{ "a run-time error", "{'name': 'r', 'matchFeatures': [{'feature': 'kernel.version', 'matchExpressions': {'full': {'op': 'Gt', 'value': ['5']}}}]}",
	  { { { "matchFeatures", "error", NULL }, "'matchExpressions Gt: value \\'6.8.0-49\\' of full is not an integer'" } } },
	{ "a rule that does not compile", "{'name': 'r', 'matchFeatures': [{'feature': 'kernel.version', 'matchExpressions': {'x': {'op': 'Nope'}}}]}",
	  { { { "matched", NULL }, "false" } } },
};

/* json_getv with a path of names and decimal indices */
static const struct json *walk(const struct json *j, const char *const *path)
{
	for (; j && *path; path++)
		j = json_type(j) == JSON_ARRAY ? json_at(j, (size_t)atoi(*path)) : json_get(j, *path);
	return j;
}

static void run_case(const struct tcase *tc)
{
	struct json *rules = json_new_array(), *x = NULL;
	struct features f;
	struct rules *r = NULL;
	struct rules_out o;
	char name[200];

	f.root = pj(features_json);
	json_append_take(rules, pj(tc->rule));
	rules_compile(&r, rules, RULES_NFR, "test");
	snprintf(name, sizeof(name), "%s: explained", tc->name);
	T_INT(name, rules_explain(r, 0, &f, &x), 0);
	for (size_t i = 0; i < 6 && tc->c[i].want; i++) {
		const struct json *n = walk(x, tc->c[i].path);
		char *got = n ? json_print(n, NULL) : NULL, *want = q(tc->c[i].want);

		snprintf(name, sizeof(name), "%s: %s...", tc->name, tc->c[i].path[0]);
		T_STR(name, got, want);
		free(got);
		free(want);
	}
	/* the verdict is rules_run's: a rule with labels gives them when it matched */
	if (json_get(json_at(rules, 0), "labels") && rules_out_init(&o) == 0) {
		snprintf(name, sizeof(name), "%s: rules_run agrees", tc->name);
		T_INT(name, rules_run(r, &f, &o, NULL, NULL) == 0 && json_count(o.labels) > 0,
		      json_bool(json_get(x, "matched")));
		rules_out_free(&o);
	}
	T_INT("no rule 1", rules_explain(r, 1, &f, &(struct json *){ NULL }), -FB_EINVAL);
	json_free(x);
	rules_free(r);
	json_free(rules);
	features_free(&f);
}

int main(void)
{
	t_suite = "rules_explain";
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	return t_done();
}
