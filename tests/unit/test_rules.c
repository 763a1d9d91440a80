/* rules: every operator on flags, attributes and instances, versions,
 * matchName, matchAny with templates, the template subset, back-references
 * (within a list and across two lists), static-over-template precedence, the
 * custom dialect's shorthands, and every kind of rule error (the rule is
 * skipped, the others apply, the callback names it). Then re_compile's RE2
 * translations. Rule and feature JSON is written with ' for " (see q()). */
#include "t.h"
#include "t_json.h"

#include "../../core/buf.h"
#include "../../core/err.h"
#include "../../core/features.h"
#include "../../core/json.h"
#include "../../core/re.h"
#include "../../core/rules.h"

/* A realistic NodeFeature spec.features, with a "fake.both" feature that is
 * both flags and attributes. */
static const char *const features_json =
	"{'flags': {"
	"  'cpu.cpuid': {'elements': {'AVX': {}, 'AVX2': {}, 'AVX512F': {}, 'SSE4': {}}},"
	"  'kernel.loadedmodule': {'elements': {'vfio_pci': {}, 'nvidia': {}}},"
	"  'fake.both': {'elements': {'shared': {}, 'onlyflag': {}}}},"
	" 'attributes': {"
	"  'cpu.cpuid': {'elements': {'AVX10_VERSION': '2'}},"
	"  'cpu.model': {'elements': {'vendor_id': 'Intel', 'family': '6', 'id': '85'}},"
	"  'kernel.version': {'elements': {'full': '6.1.0-18-amd64', 'major': '6', 'minor': '1', 'revision': '0'}},"
	"  'kernel.config': {'elements': {'NO_HZ': 'y', 'PREEMPT': 'n'}},"
	"  'kernel.selinux': {'elements': {'enabled': 'false'}},"
	"  'system.osrelease': {'elements': {'ID': 'ubuntu', 'VERSION_ID': '22.04'}},"
	"  'fake.both': {'elements': {'shared': 'v', 'onlyattr': 'x'}}},"
	" 'instances': {"
	"  'pci.device': {'elements': ["
	"   {'attributes': {'class': '0300', 'vendor': '10de', 'device': '2330', 'sriov_totalvfs': '0'}},"
	"   {'attributes': {'class': '0200', 'vendor': '8086', 'device': '1592', 'sriov_totalvfs': '128'}},"
	"   {'attributes': {'class': '0300', 'vendor': '1002', 'device': '740f'}}]},"
	"  'usb.device': {'elements': []}}}";

struct errs {
	char buf[4096];
	size_t len;
	int calls;
};

static void on_err(void *ctx, const char *what, const char *rule, const char *msg)
{
	struct errs *e = ctx;

	e->calls++;
	e->len += (size_t)snprintf(e->buf + e->len, sizeof(e->buf) - e->len, "[%s] %s: %s\n", what, rule, msg);
	if (e->len >= sizeof(e->buf))
		e->len = sizeof(e->buf) - 1;
}

/* The outputs as one object with the non-empty members, compact. */
static char *outputs(const struct rules_out *o)
{
	struct json *all = json_new_object();
	const struct json *m[] = { o->labels, o->vars, o->annotations, o->extended_resources, o->taints };
	const char *names[] = { "labels", "vars", "annotations", "extendedResources", "taints" };
	char *s;

	for (size_t i = 0; i < 5; i++)
		if (json_count(m[i]))
			json_set_take(all, names[i], json_dup(m[i]));
	json_sort_keys(all);
	s = json_print(all, NULL);
	json_free(all);
	return s;
}

struct tcase {
	const char *name;
	int custom;           /* RULES_CUSTOM */
	const char *rules;    /* a JSON array of rules, or one rule object */
	const char *want;     /* outputs() of the result, ' for " */
	const char *err;      /* NULL: no errors; else "rule: what" must be reported */
	const char *feat;     /* NULL: features_json */
};

#define NFR 0
#define CUSTOM 1
#define M(feat, exprs) "{'feature': '" feat "', 'matchExpressions': " exprs "}"
#define R1(feat, exprs) "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchFeatures': [" M(feat, exprs) "]}"
/* a rule that matches (so its templates run) with this labelsTemplate */
#define T(tmpl) "{'name': 'r', 'matchFeatures': [{'feature': 'cpu.cpuid'}], 'labelsTemplate': '" tmpl "'}"
#define YES "{'labels':{'ok':'yes'}}"
#define NO "{}"

static const struct tcase cases[] = {
	/* ---- flags ---- */
	{ "flag Exists", NFR, R1("cpu.cpuid", "{'AVX2': {'op': 'Exists'}}"), YES },
	{ "flag Exists, absent", NFR, R1("cpu.cpuid", "{'AVX9': {'op': 'Exists'}}"), NO },
	{ "flag DoesNotExist, absent", NFR, R1("kernel.loadedmodule", "{'i915': {'op': 'DoesNotExist'}}"), YES },
	{ "flag DoesNotExist, present", NFR, R1("kernel.loadedmodule", "{'nvidia': {'op': 'DoesNotExist'}}"), NO },
	{ "flag empty op matches anything", NFR, R1("kernel.loadedmodule", "{'whatever': {'op': ''}}"), YES },
	{ "flag In is false", NFR, R1("kernel.loadedmodule", "{'nvidia': {'op': 'In', 'value': ['nvidia']}}"), NO },
	{ "flag NotIn is false", NFR, R1("kernel.loadedmodule", "{'nvidia': {'op': 'NotIn', 'value': ['x']}}"), NO },
	{ "flag InRegexp is false", NFR, R1("kernel.loadedmodule", "{'nvidia': {'op': 'InRegexp', 'value': ['.']}}"), NO },
	{ "flag Gt is false, no error", NFR, R1("kernel.loadedmodule", "{'nvidia': {'op': 'Gt', 'value': ['1']}}"), NO },
	{ "flag IsTrue is false", NFR, R1("kernel.loadedmodule", "{'nvidia': {'op': 'IsTrue'}}"), NO },
	{ "flags AND", NFR, R1("cpu.cpuid", "{'AVX': {'op': 'Exists'}, 'SSE4': {'op': 'Exists'}}"), YES },
	{ "empty set on a flag feature matches", NFR, R1("kernel.loadedmodule", "{}"), YES },
	{ "term without expressions matches an existing feature", NFR,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchFeatures': [{'feature': 'kernel.loadedmodule'}]}", YES },
	{ "missing feature fails the term, no error", NFR, R1("nope.nothing", "{}"), NO },
	{ "feature name is matched case-insensitively", NFR, R1("CPU.CPUID", "{'AVX': {'op': 'Exists'}}"), YES },

	/* ---- attributes ---- */
	{ "attr In", NFR, R1("cpu.model", "{'vendor_id': {'op': 'In', 'value': ['AMD', 'Intel']}}"), YES },
	{ "attr In, other value", NFR, R1("cpu.model", "{'vendor_id': {'op': 'In', 'value': ['AMD']}}"), NO },
	{ "attr NotIn", NFR, R1("cpu.model", "{'vendor_id': {'op': 'NotIn', 'value': ['AMD']}}"), YES },
	{ "attr NotIn, value listed", NFR, R1("cpu.model", "{'vendor_id': {'op': 'NotIn', 'value': ['Intel']}}"), NO },
	{ "attr NotIn on a missing key is false", NFR, R1("cpu.model", "{'nokey': {'op': 'NotIn', 'value': ['x']}}"), NO },
	{ "attr InRegexp, unanchored", NFR, R1("kernel.version", "{'full': {'op': 'InRegexp', 'value': ['x', 'amd6']}}"), YES },
	{ "attr InRegexp with RE2 \\d", NFR, R1("kernel.version", "{'full': {'op': 'InRegexp', 'value': ['^\\\\d+\\\\.1\\\\.']}}"), YES },
	{ "attr InRegexp no match", NFR, R1("kernel.version", "{'full': {'op': 'InRegexp', 'value': ['^5\\\\.']}}"), NO },
	{ "attr Exists", NFR, R1("cpu.model", "{'family': {'op': 'Exists'}}"), YES },
	{ "attr DoesNotExist", NFR, R1("cpu.model", "{'stepping': {'op': 'DoesNotExist'}}"), YES },
	{ "attr DoesNotExist, present", NFR, R1("cpu.model", "{'family': {'op': 'DoesNotExist'}}"), NO },
	/* upstream records {Name: n, Value: values[n]}: Value "" for an absent
	 * attribute, so a template may read it */
	{ "attr DoesNotExist: the matched element has an empty Value", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("cpu.model", "{'stepping': {'op': 'DoesNotExist'}}") "],"
	  " 'labelsTemplate': '{{range .cpu.model}}dne-{{.Name}}=v{{.Value}}{{end}}'}",
	  "{'labels':{'dne-stepping':'v'}}" },
	{ "attr Any on an absent attribute: empty Value", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("cpu.model", "{'stepping': {'op': ''}, 'family': {'op': 'In', 'value': ['6']}}") "],"
	  " 'labelsTemplate': '{{range .cpu.model}}{{.Name}}=[{{.Value}}]\n{{end}}'}",
	  "{'labels':{'family':'[6]','stepping':'[]'}}" },
	{ "union DoesNotExist: a flag element (no Value) and an attribute element", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("fake.both", "{'other': {'op': 'DoesNotExist'}}") "],"
	  " 'labelsTemplate': '{{range .fake.both}}{{.Name}}{{end}}={{range .fake.both}}{{index . \\\"Value\\\"}}.{{end}}'}",
	  "{'labels':{'otherother':'..'}}" }, /* index of a missing key: "" */
	{ "union DoesNotExist: .Value of the flag element is an error, as upstream", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("fake.both", "{'other': {'op': 'DoesNotExist'}}") "],"
	  " 'labelsTemplate': '{{range .fake.both}}x=[{{.Value}}]{{end}}'}",
	  NO, "map has no entry for key \"Value\"" },
	{ "attr Gt", NFR, R1("cpu.model", "{'id': {'op': 'Gt', 'value': ['84']}}"), YES },
	{ "attr Gt equal", NFR, R1("cpu.model", "{'id': {'op': 'Gt', 'value': ['85']}}"), NO },
	{ "attr Ge equal", NFR, R1("cpu.model", "{'id': {'op': 'Ge', 'value': ['85']}}"), YES },
	{ "attr Lt", NFR, R1("cpu.model", "{'id': {'op': 'Lt', 'value': ['+86']}}"), YES },
	{ "attr Lt equal", NFR, R1("cpu.model", "{'id': {'op': 'Lt', 'value': ['85']}}"), NO },
	{ "attr Le equal", NFR, R1("cpu.model", "{'id': {'op': 'Le', 'value': ['85']}}"), YES },
	{ "attr Gt negative", NFR, R1("cpu.model", "{'family': {'op': 'Gt', 'value': ['-10']}}"), YES },
	{ "attr GtLt inside", NFR, R1("cpu.model", "{'id': {'op': 'GtLt', 'value': ['80', '90']}}"), YES },
	{ "attr GtLt bound is exclusive", NFR, R1("cpu.model", "{'id': {'op': 'GtLt', 'value': ['85', '90']}}"), NO },
	{ "attr GeLe bound is inclusive", NFR, R1("cpu.model", "{'id': {'op': 'GeLe', 'value': ['85', '90']}}"), YES },
	{ "attr GeLe outside", NFR, R1("cpu.model", "{'id': {'op': 'GeLe', 'value': ['86', '90']}}"), NO },
	{ "attr Gt on a missing key is false, no error", NFR, R1("cpu.model", "{'nokey': {'op': 'Gt', 'value': ['1']}}"), NO },
	{ "attr IsTrue", NFR, R1("kernel.selinux", "{'enabled': {'op': 'IsTrue'}}"), NO },
	{ "attr IsFalse", NFR, R1("kernel.selinux", "{'enabled': {'op': 'IsFalse'}}"), YES },
	{ "attr empty set matches", NFR, R1("cpu.model", "{}"), YES },

	/* ---- versions ---- */
	{ "version Gt: pre-release stripped", NFR,
	  R1("kernel.version", "{'full': {'op': 'Gt', 'value': ['6.0.9'], 'type': 'version'}}"), YES },
	{ "version Ge: 6.1.0-18 equals 6.1.0", NFR,
	  R1("kernel.version", "{'full': {'op': 'Ge', 'value': ['6.1.0'], 'type': 'version'}}"), YES },
	{ "version Gt: 6.1.0-18 is not above 6.1.0", NFR,
	  R1("kernel.version", "{'full': {'op': 'Gt', 'value': ['6.1.0'], 'type': 'version'}}"), NO },
	{ "version Le two parts", NFR,
	  R1("system.osrelease", "{'VERSION_ID': {'op': 'Le', 'value': ['22.4'], 'type': 'version'}}"), YES },
	{ "version Lt one part", NFR,
	  R1("kernel.version", "{'major': {'op': 'Lt', 'value': ['7'], 'type': 'version'}}"), YES },
	{ "version GtLt", NFR,
	  R1("kernel.version", "{'full': {'op': 'GtLt', 'value': ['5.15', 'v6.2.0'], 'type': 'version'}}"), YES },
	{ "version GeLe", NFR,
	  R1("system.osrelease", "{'VERSION_ID': {'op': 'GeLe', 'value': ['20.04', '22.04'], 'type': 'version'}}"), YES },
	{ "version compares numerically", NFR,
	  R1("system.osrelease", "{'VERSION_ID': {'op': 'Gt', 'value': ['22.3'], 'type': 'version'}}"), YES },
	{ "version: bad version in the rule", NFR,
	  R1("kernel.version", "{'full': {'op': 'Gt', 'value': ['6.x'], 'type': 'version'}}"), NO,
	  "r: matchFeatures[0] (kernel.version): matchExpressions \"full\": op Gt: \"6.x\" is not a version" },
	{ "version: feature value not a version", NFR,
	  R1("system.osrelease", "{'ID': {'op': 'Gt', 'value': ['1'], 'type': 'version'}}"), NO,
	  "r: matchExpressions Gt: value \"ubuntu\" of ID is not a version" },
	{ "version: four parts is not a version", NFR,
	  R1("kernel.version", "{'full': {'op': 'Gt', 'value': ['1.2.3.4'], 'type': 'version'}}"), NO, "is not a version" },
	{ "type other than version", NFR,
	  R1("kernel.version", "{'full': {'op': 'Gt', 'value': ['1'], 'type': 'semver'}}"), NO,
	  "r: matchFeatures[0] (kernel.version): matchExpressions \"full\": unsupported type \"semver\"" },

	/* ---- flags and attributes together ---- */
	{ "union: Exists in both", NFR, R1("fake.both", "{'shared': {'op': 'Exists'}}"), YES },
	{ "union: In matches through the attribute", NFR, R1("fake.both", "{'onlyattr': {'op': 'In', 'value': ['x']}}"), YES },
	{ "union: Exists through the flag", NFR, R1("fake.both", "{'onlyflag': {'op': 'Exists'}}"), YES },
	{ "union: DoesNotExist must hold in flags", NFR, R1("fake.both", "{'onlyflag': {'op': 'DoesNotExist'}}"), NO },
	{ "union: DoesNotExist must hold in attributes", NFR, R1("fake.both", "{'onlyattr': {'op': 'DoesNotExist'}}"), NO },
	{ "union: DoesNotExist of neither", NFR, R1("fake.both", "{'other': {'op': 'DoesNotExist'}}"), YES },
	{ "union: cpu.cpuid flag and attribute in one set", NFR,
	  R1("cpu.cpuid", "{'AVX': {'op': 'Exists'}, 'AVX10_VERSION': {'op': 'Ge', 'value': ['2']}}"), YES },

	/* ---- instances ---- */
	{ "instance: both expressions in one instance", NFR,
	  R1("pci.device", "{'class': {'op': 'In', 'value': ['0300']}, 'vendor': {'op': 'In', 'value': ['10de']}}"), YES },
	{ "instance: expressions true only in different instances", NFR,
	  R1("pci.device", "{'class': {'op': 'In', 'value': ['0300']}, 'vendor': {'op': 'In', 'value': ['8086']}}"), NO },
	{ "instance: Gt, missing attribute is no error", NFR, R1("pci.device", "{'sriov_totalvfs': {'op': 'Gt', 'value': ['0']}}"), YES },
	{ "instance: DoesNotExist", NFR, R1("pci.device", "{'sriov_totalvfs': {'op': 'DoesNotExist'}}"), YES },
	{ "instance: InRegexp", NFR, R1("pci.device", "{'device': {'op': 'InRegexp', 'value': ['^74']}}"), YES },
	{ "instance: NotIn", NFR, R1("pci.device", "{'vendor': {'op': 'NotIn', 'value': ['10de', '8086', '1002']}}"), NO },
	{ "instance: empty set, no instances", NFR, R1("usb.device", "{}"), NO },
	{ "instance: IsTrue", NFR, R1("pci.device", "{'class': {'op': 'IsTrue'}}"), NO },
	{ "instance: non-integer value is an error", NFR, R1("pci.device", "{'device': {'op': 'Lt', 'value': ['3000']}}"),
	  NO, "r: matchExpressions Lt: value \"740f\" of device is not an integer" },

	/* ---- matchName ---- */
	{ "matchName on flags", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .cpu.cpuid}}{{.Name}}={{.Value}}\\n{{end}}',"
	  " 'matchFeatures': [{'feature': 'cpu.cpuid', 'matchName': {'op': 'InRegexp', 'value': ['^AVX1']}}]}",
	  "{'labels':{'AVX10_VERSION':'2'}}" },
	{ "matchName: flags and attributes, sorted", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .cpu.cpuid}}{{.Name}}=1\\n{{end}}',"
	  " 'vars': {'n': 'x'},"
	  " 'matchFeatures': [{'feature': 'cpu.cpuid', 'matchName': {'op': 'InRegexp', 'value': ['^AVX']}}]}",
	  "{'labels':{'AVX':'1','AVX10_VERSION':'1','AVX2':'1','AVX512F':'1'},'vars':{'n':'x'}}" },
	{ "matchName on instance attribute names", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .pci.device}}v-{{.vendor}}=1\\n{{end}}',"
	  " 'matchFeatures': [{'feature': 'pci.device', 'matchName': {'op': 'In', 'value': ['sriov_totalvfs']}}]}",
	  "{'labels':{'v-10de':'1','v-8086':'1'}}" },
	{ "matchName no match", NFR,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchFeatures': [{'feature': 'cpu.cpuid', 'matchName': {'op': 'In', 'value': ['SSE9']}}]}",
	  NO },
	{ "matchName and matchExpressions: both must match, elements joined", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .cpu.cpuid}}{{.Name}}=1\\n{{end}}',"
	  " 'matchFeatures': [{'feature': 'cpu.cpuid', 'matchExpressions': {'SSE4': {'op': 'Exists'}},"
	  "  'matchName': {'op': 'In', 'value': ['AVX2']}}]}",
	  "{'labels':{'AVX2':'1','SSE4':'1'}}" },
	{ "matchName Gt on names that are not numbers is an error", NFR,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchFeatures': [{'feature': 'cpu.model', 'matchName': {'op': 'Gt', 'value': ['1']}}]}",
	  NO, "r: matchName Gt: value" },

	/* ---- matchAny ---- */
	{ "matchAny: second element matches", NFR,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchAny': ["
	  " {'matchFeatures': [" M("cpu.cpuid", "{'AVX9': {'op': 'Exists'}}") "]},"
	  " {'matchFeatures': [" M("cpu.cpuid", "{'AVX': {'op': 'Exists'}}") "]}]}",
	  YES },
	{ "matchAny: none matches", NFR,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchAny': ["
	  " {'matchFeatures': [" M("cpu.cpuid", "{'AVX9': {'op': 'Exists'}}") "]}]}",
	  NO },
	{ "matchAny and matchFeatures: both needed", NFR,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchAny': ["
	  " {'matchFeatures': [" M("cpu.cpuid", "{'AVX': {'op': 'Exists'}}") "]}],"
	  " 'matchFeatures': [" M("cpu.cpuid", "{'AVX9': {'op': 'Exists'}}") "]}",
	  NO },
	{ "matchAny without templates stops at the first match", NFR,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchAny': ["
	  " {'matchFeatures': [" M("cpu.cpuid", "{'AVX': {'op': 'Exists'}}") "]},"
	  " {'matchFeatures': [" M("cpu.model", "{'vendor_id': {'op': 'Gt', 'value': ['1']}}") "]}]}",
	  YES },
	{ "matchAny with templates: the data holds only the element's features", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .cpu.cpuid}}f-{{.Name}}=1\\n{{end}}{{range .pci.device}}p-{{.vendor}}=1\\n{{end}}',"
	  " 'matchAny': ["
	  "  {'matchFeatures': [" M("cpu.cpuid", "{'AVX': {'op': 'Exists'}}") "]},"
	  "  {'matchFeatures': [" M("cpu.cpuid", "{'AVX9': {'op': 'Exists'}}") "]},"
	  "  {'matchFeatures': [" M("cpu.cpuid", "{'SSE4': {'op': 'Exists'}}") "]}]}",
	  NO, "labelsTemplate: at <.pci.device>: map has no entry for key \"pci\"" },
	{ "matchAny with templates: each element's own data", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .cpu.cpuid}}f-{{.Name}}=1\\n{{end}}',"
	  " 'matchAny': ["
	  "  {'matchFeatures': [" M("cpu.cpuid", "{'AVX': {'op': 'Exists'}}") "]},"
	  "  {'matchFeatures': [" M("cpu.cpuid", "{'AVX9': {'op': 'Exists'}}") "]},"
	  "  {'matchFeatures': [" M("cpu.cpuid", "{'SSE4': {'op': 'Exists'}}") "]}]}",
	  "{'labels':{'f-AVX':'1','f-SSE4':'1'}}" },
	{ "no matchers: always matches", NFR, "{'name': 'r', 'labels': {'ok': 'yes'}}", YES },

	/* ---- templates ---- */
	{ "template: instances, attributes by name", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{ range .pci.device }}gpu-{{ .vendor }}-{{ .device }}=true\\n{{ end }}',"
	  " 'matchFeatures': [" M("pci.device", "{'class': {'op': 'In', 'value': ['0300']}}") "]}",
	  "{'labels':{'gpu-1002-740f':'true','gpu-10de-2330':'true'}}" },
	{ "template: attribute elements sorted by name", NFR,
	  "{'name': 'r', 'varsTemplate': '{{range .cpu.model}}{{.Name}}={{.Value}}\\n{{end}}',"
	  " 'matchFeatures': [" M("cpu.model", "{'vendor_id': {'op': 'Exists'}, 'family': {'op': 'Exists'}}") "]}",
	  "{'vars':{'family':'6','vendor_id':'Intel'}}" },
	{ "template: trimming", NFR,
	  "{'name': 'r', 'labelsTemplate': '  {{- range .cpu.model }}  \\n  {{ .Name -}}  =  {{- .Value }}\\n{{ end -}}  ',"
	  " 'matchFeatures': [" M("cpu.model", "{'id': {'op': 'Exists'}}") "]}",
	  "{'labels':{'id':'85'}}" },
	{ "template: if / else if / else on values", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .kernel.config}}{{.Name}}={{if eq .Value `y`}}on{{else if eq .Value `m`}}mod{{else}}off{{end}}\\n{{end}}',"
	  " 'matchFeatures': [" M("kernel.config", "{'NO_HZ': {'op': 'Exists'}, 'PREEMPT': {'op': 'Exists'}}") "]}",
	  "{'labels':{'NO_HZ':'on','PREEMPT':'off'}}" },
	{ "template: if on a missing attribute is an error", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .pci.device}}{{if .sriov_totalvfs}}x=1{{end}}{{end}}',"
	  " 'matchFeatures': [" M("pci.device", "{'class': {'op': 'In', 'value': ['0300']}}") "]}",
	  NO, "r: labelsTemplate: at <.sriov_totalvfs>: map has no entry for key \"sriov_totalvfs\"" },
	{ "template: index returns empty for a missing attribute", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .pci.device}}{{if index . `sriov_totalvfs`}}{{.vendor}}=sriov{{else}}{{.vendor}}=plain{{end}}\\n{{end}}',"
	  " 'matchFeatures': [" M("pci.device", "{'class': {'op': 'In', 'value': ['0300']}}") "]}",
	  "{'labels':{'1002':'plain','10de':'sriov'}}" },
	{ "template: len of a printed list", NFR, T("a={{ .cpu.cpuid | printf `%v` | len }}"), "{'labels':{'a':'2'}}" },
	{ "template: lower upper trim replace printf", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .cpu.model}}"
	  "{{.Name | upper}}={{lower .Value}}\\n"
	  "t-{{.Name}}={{trim `  x y  `}}|{{replace `_` `-` .Name}}|{{printf `%s-%d-%05d-%-3s|` .Value 7 42 `a`}}\\n"
	  "{{end}}',"
	  " 'matchFeatures': [" M("cpu.model", "{'vendor_id': {'op': 'Exists'}}") "]}",
	  "{'labels':{'VENDOR_ID':'intel','t-vendor_id':'x y|vendor-id|Intel-7-00042-a  |'}}" },
	{ "template: printf's complaints as Go prints them", NFR,
	  T("a={{printf `%d %s %d` `x` 5}}\\nb={{printf `%s` `x` 1 true}}\\nc={{printf `100%%`}}"),
	  "{'labels':{'a':'%!d(string=x) %!s(int=5) %!d(MISSING)','b':'x%!(EXTRA int=1, bool=true)','c':'100%'}}" },
	{ "template: replace with an empty old string", NFR,
	  T("a={{replace `` `.` `ab`}}"), "{'labels':{'a':'.a.b.'}}" },
	{ "template: eq ne not and or, literals, parentheses", NFR,
	  T("a={{if and (eq 1 1) (ne `x` `y`) (not false)}}1{{end}}\\n"
	    "b={{or `` `dflt`}}\\nc={{and `v` ``}}|\\nd={{eq `b` `a` `b`}}\\ne={{if or false 0 ``}}t{{else}}f{{end}}"),
	  "{'labels':{'a':'1','b':'dflt','c':'|','d':'true','e':'f'}}" },
	{ "template: quoted strings with escapes, comments", NFR,
	  T("{{/* two lines */}}{{ \\'a=1\\\\nb=\\\\\\'2\\\\\\'\\' }}"),
	  "{'labels':{'a':'1','b':'\\'2\\''}}" },
	{ "template: range with else over an empty list", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .kernel.loadedmodule}}{{.Name}}=1{{else}}none=1{{end}}',"
	  " 'matchFeatures': [{'feature': 'kernel.loadedmodule'}]}",
	  "{'labels':{'none':'1'}}" },
	{ "template: two terms of one feature are joined", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .cpu.cpuid}}{{.Name}}=1\\n{{end}}',"
	  " 'matchFeatures': [" M("cpu.cpuid", "{'SSE4': {'op': 'Exists'}}") "," M("cpu.cpuid", "{'AVX': {'op': 'Exists'}}") "]}",
	  "{'labels':{'AVX':'1','SSE4':'1'}}" },
	{ "template: key and value are not trimmed around '='", NFR,
	  T("  a = b  \\n\\n  c=  "), "{'labels':{'a ':' b','c':''}}" },
	{ "template: line without '='", NFR,
	  "[{'name': 'bad', 'labelsTemplate': 'a=1\\nnovalue\\n', 'matchFeatures': [{'feature': 'cpu.cpuid'}]},"
	  " {'name': 'good', 'labels': {'g': '1'}}]",
	  "{'labels':{'g':'1'}}",
	  "bad: labelsTemplate: missing value in expanded template line \"novalue\"" },
	{ "template: static labels win over the template", NFR,
	  "{'name': 'r', 'labelsTemplate': 'a=tmpl\\nb=tmpl', 'labels': {'a': 'static'}, 'varsTemplate': 'v=tmpl',"
	  " 'vars': {'v': 'static'}, 'matchFeatures': [{'feature': 'cpu.cpuid'}]}",
	  "{'labels':{'a':'static','b':'tmpl'},'vars':{'v':'static'}}" },
	{ "template: dot outside range is the root map", NFR,
	  "{'name': 'r', 'labelsTemplate': 'x={{.Name}}', 'matchFeatures': [" M("cpu.cpuid", "{}") "]}",
	  NO, "r: labelsTemplate: at <.Name>: map has no entry for key \"Name\"" },
	{ "template: flag elements have no Value", NFR,
	  "{'name': 'r', 'labelsTemplate': '{{range .kernel.loadedmodule}}{{.Name}}={{.Value}}{{end}}',"
	  " 'matchFeatures': [" M("kernel.loadedmodule", "{'nvidia': {'op': 'Exists'}}") "]}",
	  NO, "map has no entry for key \"Value\"" },
	{ "template: with", NFR, T("a={{with .cpu}}{{len .}}{{end}}"), "{'labels':{'a':'1'}}" },
	{ "template: variables", NFR, T("{{range $k, $v := .}}{{$k}}={{len $v}}\\n{{end}}"), "{'labels':{'cpu':'1'}}" },
	{ "template: unknown function", NFR, "{'name': 'r', 'varsTemplate': 'a=1\\n{{ toYaml .Name }}'}", NO,
	  "r: varsTemplate: line 2: function \"toYaml\" not defined" },
	{ "template: printf verb %p", NFR, T("a={{printf `%p` 1}}"), NO, "printf: verb %p is not supported" },
	{ "template: missing end", NFR, "{'name': 'r', 'labelsTemplate': '{{if true}}a=1'}", NO, "unexpected EOF" },
	{ "template: unexpected end", NFR, "{'name': 'r', 'labelsTemplate': 'a=1{{end}}'}", NO, "unexpected {{end}}" },
	{ "template: unclosed action", NFR, "{'name': 'r', 'labelsTemplate': 'a={{ .x '}", NO, "unclosed action" },
	{ "template: range over a string", NFR,
	  T("{{range `abc`}}{{end}}"), NO, "range can't iterate over abc" },
	{ "template: printing a list", NFR,
	  "{'name': 'r', 'labelsTemplate': 'a={{.cpu.cpuid}}', 'matchFeatures': [" M("cpu.cpuid", "{}") "]}",
	  "{'labels':{'a':'[]'}}" },
	{ "template: wrong argument type", NFR, T("a={{lower (len .cpu.cpuid)}}"), NO,
	  "wrong type for value; expected string; got int" },
	{ "template: wrong number of arguments", NFR, T("a={{replace `a` `b`}}"), NO,
	  "wrong number of args for replace: want 3 got 2" },
	{ "template: argument to a non-function", NFR, T("a={{`x` | .cpu}}"), NO,
	  "cpu is not a method but has arguments" },
	/* hostile sizes: an intermediate value is capped like the output (1 MiB),
	 * so nested functions cannot grow memory as the product of lengths; here
	 * 1,101 insertions of 1,000 bytes that only eq would have seen */
	{ "template: a function's result over 1 MiB is an error", NFR,
	  T("a={{if eq (replace `` (printf `%01000d` 0) (printf `%01100d` 0)) `z`}}1{{end}}"), NO,
	  "replace: result larger than 1048576 bytes" },

	{ "template: truth of lists, elements and the root", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("pci.device", "{'class': {'op': 'In', 'value': ['0300']}}") ", {'feature': 'kernel.loadedmodule'}],"
	  " 'labelsTemplate': 'a={{if .pci.device}}1{{end}}\\nb={{if .kernel.loadedmodule}}1{{else}}0{{end}}\\n"
	  "c={{if .}}1{{end}}\\n{{range .pci.device}}{{if .}}d=1\\n{{end}}{{end}}\\ne={{not .pci}}'}",
	  "{'labels':{'a':'1','b':'0','c':'1','d':'1','e':'false'}}" },
	{ "template: index into a list", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("pci.device", "{'class': {'op': 'In', 'value': ['0300']}}") "],"
	  " 'labelsTemplate': 'a={{index (index .pci.device 1) `vendor`}}\\nb={{index .pci.device 0 `device`}}\\nc={{index . `pci` `device` 0 `class`}}'}",
	  "{'labels':{'a':'1002','b':'2330','c':'0300'}}" },
	{ "template: index out of range", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("pci.device", "{}") "], 'labelsTemplate': 'a={{index .pci.device 3}}'}",
	  NO, "index: index out of range: 3" },
	{ "template: index a string", NFR, T("a={{index `abc` 1}}"), "{'labels':{'a':'98'}}" },
	{ "template: more printf", NFR,
	  T("a={{printf `%.2s|%5v|%-6v|%v|%s` `abcdef` true 12 `x` false}}\\n"
	    "b={{printf `%s` `0123456789012345678901234567890123456789012345678901234567890123456789`}}\\n"
	    "c={{printf `%d` 1 `e`}}\\nd={{printf `%05.3d|%+d|% d|%`}}"),
	  "{'labels':{'a':'ab| true|12    |x|%!s(bool=false)',"
	  "'b':'0123456789012345678901234567890123456789012345678901234567890123456789',"
	  "'c':'1%!(EXTRA string=e)','d':'%!d(MISSING)|%!d(MISSING)|%!d(MISSING)|%!(NOVERB)'}}" },
	{ "template: printf of a list", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("pci.device", "{'vendor': {'op': 'In', 'value': ['1002']}}") "], 'labelsTemplate': 'a={{printf `%v` .pci.device}}'}",
	  "{'labels':{'a':'[map[class:0300 device:740f vendor:1002]]'}}" },
	{ "template: eq of different types", NFR, T("a={{eq 1 `1`}}"), NO, "eq: incompatible types for comparison" },
	{ "template: eq of a map", NFR, T("a={{eq . `1`}}"), NO, "eq: incompatible types for comparison" },
	{ "template: and without arguments", NFR, T("a={{and}}"), NO, "wrong number of args for and: want at least 1 got 0" },
	{ "template: a NUL in the output is an error, not a cut line", NFR, T("a=x{{printf `%c` 0}}y"), NO,
	  "r: labelsTemplate: the output holds a NUL byte" },
	{ "template: string escapes", NFR, T("a={{`raw\\\\n`}}|{{\\'\\\\x41\\\\t\\'}}|"), "{'labels':{'a':'raw\\\\n|A\\t|'}}" },
	{ "template: unknown escape", NFR, T("a={{\\'\\\\q\\'}}"), NO, "invalid syntax" },
	{ "template: unterminated string", NFR, T("a={{\\'abc}}"), NO, "unterminated quoted string" },
	{ "template: float literal", NFR, T("a={{1.5}}"), "{'labels':{'a':'1.5'}}" },
	{ "template: integer out of range", NFR, T("a={{99999999999999999999}}"), NO, "illegal number syntax: 99999999999999999999" },
	{ "template: function as an argument", NFR, T("a={{printf `%s` lower}}"), NO, "wrong number of args for lower: want 1 got 0" },
	{ "template: unexpected )", NFR, T("a={{lower )}}"), NO, "unexpected \")\" in operand" },
	{ "template: unclosed parenthesis", NFR, T("a={{(lower `x`}}"), NO, "unexpected \"}}\" in operand" },
	{ "template: empty command", NFR, T("a={{ | lower }}"), NO, "unexpected \"|\" in command" },
	{ "template: two operands", NFR, T("a={{ .x .y }}"), NO, "x is not a method but has arguments" },
	{ "template: strange character", NFR, T("a={{ # }}"), NO, "unexpected \"#\" in command" },
	{ "template: comment not closed", NFR, T("a={{/* x"), NO, "unclosed comment" },
	{ "template: comment with more", NFR, T("a={{/* x */ .y}}"), NO, "comment ends before closing delimiter" },
	{ "template: comment with trimming", NFR, T("a=1   {{- /* x */ -}}   \\n b=2"), "{'labels':{'a':'1b=2'}}" },
	{ "template: else with", NFR, T("{{if true}}{{else with .x}}{{end}}"), NO, "unexpected <with> in input" },
	{ "template: end with an argument", NFR, T("{{if true}}{{end 1}}"), NO, "unexpected \"1\" in end" },
	{ "template: else if in range", NFR, T("{{range .x}}{{else if true}}{{end}}"), NO, "unexpected <if> in input" },
	{ "template: two elses", NFR, T("{{if true}}{{else}}{{else}}{{end}}"), NO, "expected end; found {{else}}" },
	{ "template: field of a string", NFR, T("a={{ (lower `x`).y }}"), NO, "can't evaluate field y in type string" },
	{ "template: field of an int", NFR,
	  "{'name': 'r', 'matchFeatures': [" M("pci.device", "{}") "], 'labelsTemplate': '{{range .pci.device}}{{.vendor.x}}{{end}}'}",
	  NO, "at <.vendor.x>: can't evaluate field x in type string" },
	{ "template: nested too deeply", NFR,
	  T("{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}"
	    "{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}"
	    "{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}"
	    "{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}"
	    "{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}"
	    "{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}"
	    "{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}{{if 1}}"),
	  NO, "nested too deeply" },
	{ "template: a long else-if chain is fine", NFR,
	  T("a={{if eq 1 2}}{{else if eq 1 3}}{{else if eq 1 4}}{{else if eq 1 5}}{{else if eq 1 6}}{{else if eq 1 7}}{{else if eq 1 8}}"
	    "{{else if eq 1 9}}{{else if eq 1 10}}{{else if eq 1 11}}{{else if eq 1 12}}{{else if eq 1 13}}{{else if eq 1 14}}{{else if eq 1 15}}"
	    "{{else if eq 1 16}}{{else if eq 1 17}}{{else if eq 1 18}}{{else if eq 1 19}}{{else if eq 1 20}}{{else if eq 1 21}}{{else if eq 1 22}}"
	    "{{else if eq 1 23}}{{else if eq 1 24}}{{else if eq 1 25}}{{else if eq 1 26}}{{else if eq 1 27}}{{else if eq 1 28}}{{else if eq 1 29}}"
	    "{{else if eq 1 30}}{{else if eq 1 31}}{{else if eq 1 32}}{{else if eq 1 33}}{{else if eq 1 1}}last{{end}}"),
	  "{'labels':{'a':'last'}}" },
	{ "error: template output over 1 MiB", NFR, "", NO, "r: labelsTemplate: output longer than 1 MiB" },

	/* ---- outputs ---- */
	{ "NFR outputs: annotations, extended resources, taints", NFR,
	  "{'name': 'r', 'annotations': {'a/b': 'c'}, 'extendedResources': {'vendor.io/gpu': '2'},"
	  " 'taints': [{'key': 'k', 'value': 'v', 'effect': 'NoSchedule'}, {'key': 'k2', 'effect': 'NoExecute'}]}",
	  "{'annotations':{'a/b':'c'},'extendedResources':{'vendor.io/gpu':'2'},"
	  "'taints':[{'key':'k','value':'v','effect':'NoSchedule'},{'key':'k2','effect':'NoExecute'}]}" },
	{ "later rules overwrite, taints append", NFR,
	  "[{'name': 'a', 'labels': {'x': '1', 'y': '1'}, 'taints': [{'key': 'k', 'effect': 'NoSchedule'}]},"
	  " {'name': 'b', 'labels': {'x': '2'}, 'taints': [{'key': 'k', 'effect': 'NoSchedule'}]}]",
	  "{'labels':{'x':'2','y':'1'},'taints':[{'key':'k','effect':'NoSchedule'},{'key':'k','effect':'NoSchedule'}]}" },
	/* upstream keeps a rule whose taint has an empty key or effect: nfd-master
	 * drops that taint alone when applying (nodelabels' filter) */
	{ "taints with an empty or missing effect or key keep the rule", NFR,
	  "{'name': 'r', 'labels': {'a': '1'}, 'annotations': {'x': 'y'},"
	  " 'taints': [{'key': 'k'}, {'key': 'k2', 'effect': ''}, {'key': '', 'effect': 'NoSchedule'},"
	  " {'effect': 'NoExecute', 'value': 'v'}, {'key': 'ok', 'effect': 'NoSchedule'}]}",
	  "{'labels':{'a':'1'},'annotations':{'x':'y'},'taints':[{'key':'k','effect':''},{'key':'k2','effect':''},"
	  "{'key':'','effect':'NoSchedule'},{'key':'','value':'v','effect':'NoExecute'},{'key':'ok','effect':'NoSchedule'}]}" },
	{ "taint key not a string", NFR, "{'name': 'r', 'taints': [{'key': 1, 'effect': 'NoSchedule'}]}", NO,
	  "r: taints[0]: key must be a string" },
	{ "taint not a map", NFR, "{'name': 'r', 'taints': ['k']}", NO, "r: taints[0] must be a map" },
	/* a string that held \u0000 (json.h): the rule is refused naming the
	 * field, never applied with the value cut at the NUL */
	{ "a NUL in an annotation refuses that rule only", NFR,
	  "[{'name': 'r', 'annotations': {'note': 'abc\\u0000def'}, 'labels': {'a': '1'}},"
	  " {'name': 's', 'labels': {'b': '1'}}]",
	  "{'labels':{'b':'1'}}", "r: annotations.note holds a \\u0000 (NUL character)" },
	{ "a NUL in a member name refuses the rule", NFR,
	  "{'name': 'r', 'labels': {'a\\u0000b': '1'}}", NO, "r: labels.a holds a \\u0000" },
	{ "a NUL in an expression value refuses the rule", NFR,
	  R1("cpu.model", "{'vendor_id': {'op': 'In', 'value': ['Intel\\u0000x']}}"), NO,
	  "r: matchFeatures[0].matchExpressions.vendor_id.value[0] holds" },

	/* ---- back-references ---- */
	{ "rule.matched: labels and vars of earlier rules", NFR,
	  "[{'name': 'a', 'labels': {'gpu': 'true'}, 'vars': {'count': '5'}},"
	  " {'name': 'b', 'labels': {'big': 'yes'}, 'matchFeatures': [" M("rule.matched",
	  "{'gpu': {'op': 'IsTrue'}, 'count': {'op': 'Gt', 'value': ['3']}}") "]}]",
	  "{'labels':{'big':'yes','gpu':'true'},'vars':{'count':'5'}}" },
	{ "rule.matched: a later rule does not feed an earlier one", NFR,
	  "[{'name': 'b', 'labels': {'big': 'yes'}, 'matchFeatures': [" M("rule.matched", "{'gpu': {'op': 'Exists'}}") "]},"
	  " {'name': 'a', 'labels': {'gpu': 'true'}}]",
	  "{'labels':{'gpu':'true'}}" },
	{ "rule.matched exists (empty) once any rule ran", NFR,
	  "[{'name': 'a', 'labels': {'x': '1'}, 'matchFeatures': [" M("cpu.cpuid", "{'AVX9': {'op': 'Exists'}}") "]},"
	  " {'name': 'b', 'labels': {'b': '1'}, 'matchFeatures': [" M("rule.matched", "{'x': {'op': 'DoesNotExist'}}") "]}]",
	  "{'labels':{'b':'1'}}" },
	{ "rule.matched is missing before the first rule", NFR,
	  "[{'name': 'b', 'labels': {'b': '1'}, 'matchFeatures': [" M("rule.matched", "{'x': {'op': 'DoesNotExist'}}") "]}]", NO },
	{ "rule.matched: template labels feed back too", NFR,
	  "[{'name': 'a', 'labelsTemplate': 'tl=1', 'varsTemplate': 'tv=2', 'matchFeatures': [{'feature': 'cpu.cpuid'}]},"
	  " {'name': 'b', 'labels': {'b': '1'}, 'matchFeatures': [" M("rule.matched", "{'tl': {'op': 'In', 'value': ['1']}, 'tv': {'op': 'Exists'}}") "]}]",
	  "{'labels':{'b':'1','tl':'1'},'vars':{'tv':'2'}}" },
	{ "rule.matched: a failed rule feeds nothing", NFR,
	  "[{'name': 'a', 'labels': {'x': '1'}, 'labelsTemplate': 'nokv', 'matchFeatures': [{'feature': 'cpu.cpuid'}]},"
	  " {'name': 'b', 'labels': {'b': '1'}, 'matchFeatures': [" M("rule.matched", "{}") "]}]",
	  NO, "a: labelsTemplate: missing value" },

	/* ---- rule errors: the rule is skipped, the others apply ---- */
	{ "error: value with Exists", NFR,
	  "[{'name': 'bad', 'labels': {'b': '1'}, 'matchFeatures': [" M("cpu.cpuid", "{'AVX': {'op': 'Exists', 'value': ['x']}}") "]},"
	  " {'name': 'good', 'labels': {'g': '1'}}]",
	  "{'labels':{'g':'1'}}", "bad: matchFeatures[0] (cpu.cpuid): matchExpressions \"AVX\": op Exists takes no values (have 1)" },
	{ "error: In without values", NFR, R1("cpu.model", "{'id': {'op': 'In', 'value': []}}"), NO,
	  "r: matchFeatures[0] (cpu.model): matchExpressions \"id\": op In takes one or more values (have 0)" },
	{ "error: Gt with two values", NFR, R1("cpu.model", "{'id': {'op': 'Gt', 'value': ['1', '2']}}"), NO,
	  "op Gt takes exactly one value (have 2)" },
	{ "error: GeLe with one value", NFR, R1("cpu.model", "{'id': {'op': 'GeLe', 'value': ['1']}}"), NO,
	  "op GeLe takes exactly two values (have 1)" },
	{ "error: IsTrue with a value", NFR, R1("cpu.model", "{'id': {'op': 'IsTrue', 'value': ['1']}}"), NO,
	  "op IsTrue takes no values" },
	{ "error: empty op with a value", NFR, R1("cpu.model", "{'id': {'op': '', 'value': ['1']}}"), NO,
	  "op  takes no values" },
	{ "error: non-integer Gt in the rule", NFR, R1("cpu.model", "{'id': {'op': 'Gt', 'value': ['8.5']}}"), NO,
	  "op Gt: \"8.5\" is not an integer" },
	{ "error: non-integer feature value for Gt", NFR,
	  "[" R1("cpu.model", "{'vendor_id': {'op': 'Gt', 'value': ['5']}}") ", {'name': 'good', 'labels': {'g': '1'}}]",
	  "{'labels':{'g':'1'}}", "r: matchExpressions Gt: value \"Intel\" of vendor_id is not an integer" },
	{ "error: GtLt reversed", NFR, R1("cpu.model", "{'id': {'op': 'GtLt', 'value': ['10', '5']}}"), NO,
	  "op GtLt: value[0] must be less than value[1]" },
	{ "error: GtLt equal bounds", NFR, R1("cpu.model", "{'id': {'op': 'GtLt', 'value': ['5', '5']}}"), NO,
	  "value[0] must be less than value[1]" },
	{ "error: version GeLe reversed", NFR,
	  R1("kernel.version", "{'full': {'op': 'GeLe', 'value': ['6.2', '6.1.9'], 'type': 'version'}}"), NO,
	  "value[0] must be less than value[1]" },
	{ "error: bad regexp", NFR, R1("cpu.model", "{'id': {'op': 'InRegexp', 'value': ['(']}}"), NO,
	  "r: matchFeatures[0] (cpu.model): matchExpressions \"id\": invalid regexp \"(\":" },
	{ "error: RE2-only construct", NFR, R1("cpu.model", "{'id': {'op': 'InRegexp', 'value': ['\\\\bx']}}"), NO,
	  "invalid regexp \"\\bx\": \\b (word boundary) is not supported" },
	{ "error: RE2 flag group", NFR, R1("cpu.model", "{'id': {'op': 'InRegexp', 'value': ['(?s)x']}}"), NO,
	  "(?s): flags and groups other than a leading (?i) and (?:...) are not supported" },
	{ "error: unknown op", NFR, R1("cpu.model", "{'id': {'op': 'Equals', 'value': ['1']}}"), NO,
	  "invalid op \"Equals\"" },
	{ "error: null expression in an NFR", NFR, R1("cpu.model", "{'id': null}"), NO, "expression must be an object" },
	{ "error: value is a string in an NFR", NFR, R1("cpu.model", "{'id': {'op': 'In', 'value': 'Intel'}}"), NO,
	  "value must be a list of strings" },
	{ "error: label value not a string", NFR, "{'name': 'r', 'labels': {'a': 1}}", NO,
	  "r: labels: value of \"a\" must be a string" },
	{ "error: template longer than 64 KiB", NFR, NULL, NO, "r: labelsTemplate: longer than 64 KiB" },
	{ "error: the rules are not a list", NFR, "{'rules': 'no'}", NO, ": the rules are not a list" },
	{ "error: op not a string", NFR, R1("cpu.model", "{'id': {'op': 1}}"), NO, "op must be a string" },
	{ "error: type not a string", NFR, R1("cpu.model", "{'id': {'op': 'Gt', 'value': ['1'], 'type': 1}}"), NO,
	  "type must be a string" },
	{ "error: shorthand in an NFR", NFR, R1("cpu.model", "{'id': 'Intel'}"), NO,
	  "expression must be an object with op and value" },
	{ "error: list of names in an NFR", NFR, R1("cpu.cpuid", "['AVX']"), NO, "matchExpressions must be a map" },
	{ "error: matchFeatures is an object", NFR, "{'name': 'r', 'matchFeatures': {}}", NO, "r: matchFeatures must be a list" },
	{ "error: matchAny is an object", NFR, "{'name': 'r', 'matchAny': {}}", NO, "r: matchAny must be a list" },
	{ "error: labels is an array", NFR, "{'name': 'r', 'labels': ['a']}", NO, "r: labels must be a map" },
	{ "error: taints is an object", NFR, "{'name': 'r', 'taints': {}}", NO, "r: taints must be a list" },
	{ "error: template not a string", NFR, "{'name': 'r', 'varsTemplate': 5}", NO, "r: varsTemplate must be a string" },
	{ "error: a rule that is not an object", NFR, "[5, {'name': 'g', 'labels': {'g': '1'}}]", "{'labels':{'g':'1'}}",
	  ": a rule must be an object" },
	{ "feature without a domain never matches", NFR, R1("NoDot", "{}"), NO },
	{ "null labels and values are empty", NFR, "{'name': 'r', 'labels': {'a': null}, 'vars': null}", "{'labels':{'a':''}}" },
	{ "rule.matched is made when the features have no attributes", NFR,
	  "[{'name': 'a', 'labels': {'x': '1'}}, {'name': 'b', 'labels': {'y': '1'}, 'matchFeatures': [" M("rule.matched",
	  "{'x': {'op': 'In', 'value': ['1']}}") "]}]",
	  "{'labels':{'x':'1','y':'1'}}", NULL, "{'flags': {}}" },
	{ "version with v and build metadata", NFR,
	  R1("kernel.version", "{'full': {'op': 'Lt', 'value': ['v6.1.1+build.5'], 'type': 'version'}}"), YES },
	{ "error: feature missing", NFR, "{'name': 'r', 'matchFeatures': [{'matchExpressions': {}}]}", NO,
	  "r: matchFeatures[0]: must be an object with a feature name" },

	/* ---- custom dialect ---- */
	{ "custom: string shorthand is In", CUSTOM, R1("cpu.model", "{'vendor_id': 'Intel'}"), YES },
	{ "custom: bool shorthand", CUSTOM, R1("kernel.selinux", "{'enabled': false}"), YES },
	{ "custom: integer shorthand", CUSTOM, R1("kernel.version", "{'major': 6}"), YES },
	{ "custom: float shorthand", CUSTOM, R1("system.osrelease", "{'VERSION_ID': 22.04}"), YES },
	{ "custom: list shorthand", CUSTOM, R1("pci.device", "{'vendor': ['1002', '10de'], 'class': '0300'}"), YES },
	{ "custom: list of names and name=value", CUSTOM, R1("cpu.cpuid", "['AVX', 'AVX10_VERSION=2']"), YES },
	{ "custom: list form, value differs", CUSTOM, R1("cpu.cpuid", "['AVX', 'AVX10_VERSION=3']"), NO },
	{ "custom: null means Exists", CUSTOM, R1("cpu.cpuid", "{'AVX512F': null, 'SSE4': null}"), YES },
	{ "custom: null means Exists, absent", CUSTOM, R1("cpu.cpuid", "{'AVX9': null}"), NO },
	{ "custom: full form with a scalar value", CUSTOM, R1("cpu.model", "{'family': {'op': 'In', 'value': 6}}"), YES },
	{ "custom: full form Gt", CUSTOM, R1("cpu.model", "{'family': {'op': 'Gt', 'value': ['5']}}"), YES },
	{ "custom: matchName shorthand", CUSTOM,
	  "{'name': 'r', 'labels': {'ok': 'yes'}, 'matchFeatures': [{'feature': 'kernel.loadedmodule', 'matchName': 'nvidia'}]}", YES },
	{ "custom: keys match case-insensitively", CUSTOM,
	  "{'Name': 'r', 'Labels': {'ok': 'yes'}, 'MatchFeatures': [{'Feature': 'cpu.cpuid', 'MatchExpressions': {'AVX': null}}]}", YES },
	{ "custom: Ge is not a custom op", CUSTOM, R1("cpu.model", "{'id': {'op': 'Ge', 'value': ['1']}}"), NO,
	  "r: matchFeatures[0] (cpu.model): matchExpressions \"id\": invalid op \"Ge\"" },
	{ "custom: GeLe is not a custom op", CUSTOM, R1("cpu.model", "{'id': {'op': 'GeLe', 'value': ['1', '2']}}"), NO,
	  "invalid op \"GeLe\"" },
	{ "custom: type is ignored (values must then be integers)", CUSTOM,
	  R1("kernel.version", "{'major': {'op': 'Gt', 'value': ['5'], 'type': 'version'}}"), YES },
	{ "custom: annotations, taints and extended resources are ignored", CUSTOM,
	  "{'name': 'r', 'labels': {'l': '1'}, 'vars': {'v': '1'}, 'annotations': {'a': '1'}, 'extendedResources': {'e': '1'},"
	  " 'taints': [{'key': 'k', 'effect': 'NoSchedule'}]}",
	  "{'labels':{'l':'1'},'vars':{'v':'1'}}" },
	{ "custom: templates", CUSTOM,
	  "{'name': 'r', 'labelsTemplate': '{{range .pci.device}}dev-{{.device}}=1\\n{{end}}',"
	  " 'matchFeatures': [{'feature': 'pci.device', 'matchExpressions': {'vendor': '10de'}}]}",
	  "{'labels':{'dev-2330':'1'}}" },
	{ "custom: legacy matchOn", CUSTOM, "{'name': 'old', 'matchOn': [{'pciId': {'vendor': ['10de']}}]}", NO,
	  "old: legacy matchOn rules are not supported" },
	{ "custom: list element not a string", CUSTOM, R1("cpu.cpuid", "['AVX', 3]"), NO,
	  "matchExpressions list must hold strings" },
	{ "custom: shorthand list with a number", CUSTOM, R1("cpu.model", "{'id': ['85', 86]}"), NO,
	  "value must be a list of strings" },
	{ "custom: later duplicate replaces", CUSTOM, R1("cpu.cpuid", "['AVX10_VERSION=3', 'AVX10_VERSION']"), YES },
};

static char big_template_rule[64 * 1024 + 100], big_output_rule[40000];

static void run_case(const struct tcase *c)
{
	const char *rules_src = !c->rules ? big_template_rule : !c->rules[0] ? big_output_rule : c->rules;
	struct json *rules;
	struct features f = { 0 };
	struct rules_out o;
	struct rules *r;
	struct errs e = { .len = 0 };
	char *want = q(c->want), *got, name[200];
	int n;

	if (rules_src[0] == '{' && !strstr(c->name, "not a list")) { /* one rule: wrap it */
		rules = json_new_array();
		json_append_take(rules, pj(rules_src));
	} else {
		rules = pj(rules_src);
	}
	f.root = pj(c->feat ? c->feat : features_json);
	T_INT(c->name, rules_compile(&r, rules, c->custom ? RULES_CUSTOM : RULES_NFR, "test"), 0);
	json_free(rules);
	rules_out_init(&o);
	n = rules_run(r, &f, &o, on_err, &e);
	got = outputs(&o);
	snprintf(name, sizeof(name), "%s: outputs", c->name);
	{
		struct json *w = pj(want), *g = pj(got);

		T_OK(name, json_equal(w, g), "got %s, want %s", got, want);
		json_free(w);
		json_free(g);
	}
	snprintf(name, sizeof(name), "%s: errors", c->name);
	if (!c->err)
		T_OK(name, n == 0 && e.calls == 0, "%d failed: %s", n, e.buf);
	else
		T_OK(name, n >= 1 && n == e.calls && strstr(e.buf, c->err) && strncmp(e.buf, "[test] ", 7) == 0,
		     "%d failed, want \"%s\" in: %s", n, c->err, e.buf);
	free(want);
	free(got);
	rules_out_free(&o);
	rules_free(r);
	features_free(&f);
}

/* Two lists on the same features: the second sees the first's outputs. */
static void test_two_lists(void)
{
	struct json *a = pj("[{'name': 'a', 'vars': {'tier': 'gold'}}]");
	struct json *b = pj("[{'name': 'b', 'labels': {'premium': 'true'},"
			    " 'matchFeatures': [{'feature': 'rule.matched', 'matchExpressions': {'tier': {'op': 'In', 'value': ['gold']}}}]}]");
	struct rules *ra, *rb;
	struct features f = { .root = pj(features_json) };
	struct rules_out o;

	rules_compile(&ra, a, RULES_NFR, "NodeFeatureRule a");
	rules_compile(&rb, b, RULES_NFR, "NodeFeatureRule b");
	rules_out_init(&o);
	T_INT("two lists: first runs", rules_run(ra, &f, &o, NULL, NULL), 0);
	T_INT("two lists: second runs", rules_run(rb, &f, &o, NULL, NULL), 0);
	T_STR("two lists: the second matched on the first's vars", json_get_str(o.labels, "premium", "-"), "true");
	T_STR("two lists: vars are outputs too", json_get_str(o.vars, "tier", "-"), "gold");
	T_STR("two lists: rule.matched is in the features",
	      json_str(json_getv(f.root, "attributes", "rule.matched", "elements", "premium", NULL)), "true");
	rules_out_free(&o);
	rules_free(ra);
	rules_free(rb);
	json_free(a);
	json_free(b);
	features_free(&f);
}

static void count_ref(void *ctx, const char *feature, const char *element)
{
	char *s = ctx;

	strcat(s, feature);
	if (element) {
		strcat(s, ":");
		strcat(s, element);
	}
	strcat(s, ",");
}

static void test_api(void)
{
	struct json *j = pj("[{'name': 'one', 'matchFeatures': [{'feature': 'CPU.cpuid'}],"
			    "  'matchAny': [{'matchFeatures': [{'feature': 'pci.device'}, {'feature': 'rule.matched'}]}]},"
			    " {'name': 'two', 'matchFeatures': [{'feature': 'x.y', 'matchExpressions': {'a': {'op': 'Bad'}}}]},"
			    " {'matchFeatures': [{'feature': 'usb.device'}]},"
			    " {'matchFeatures': [{'feature': 'kernel.loadedmodule', 'matchExpressions': {'kvm': {'op': 'Exists'},"
			    "   'vfio': {'op': 'Exists'}}}, {'feature': 'pci.device', 'matchExpressions': {}}]},"
			    " {'labelsTemplate': '{{ range .cpu.model }}v={{ .Value }}{{ end }}',"
			    "  'matchFeatures': [{'feature': 'cpu.model', 'matchExpressions': {'family': {'op': 'Exists'}}}]}]");
	struct rules *r;
	char refs[512] = "";

	T_INT("api: compiles", rules_compile(&r, j, RULES_NFR, "list"), 0);
	T_INT("api: count", rules_count(r), 5);
	T_STR("api: name", rules_name(r, 0), "one");
	T_STR("api: no name is \"\"", rules_name(r, 2), "");
	T_OK("api: good rule has no error", rules_error(r, 0) == NULL, "%s", rules_error(r, 0));
	T_OK("api: broken rule's error", rules_error(r, 1) && strstr(rules_error(r, 1), "invalid op \"Bad\""), "%s",
	     rules_error(r, 1));
	T_OK("api: past the end", rules_name(r, 5) == NULL && rules_error(r, 5) == NULL, "not NULL");
	rules_refs(r, count_ref, refs);
	T_STR("api: refs (lower-cased; broken rules have none; elements where the expressions name them)", refs,
	      "pci.device,rule.matched,cpu.cpuid,usb.device,kernel.loadedmodule:kvm,kernel.loadedmodule:vfio,"
	      "pci.device,cpu.model,");
	rules_free(r);
	rules_free(NULL);
	json_free(j);
}

static const struct {
	const char *pattern, *subject;
	int want;             /* 1 match, 0 no match, -1 refused */
	const char *why;      /* refused: part of the message */
} res[] = {
	{ "\\d+", "abc123", 1 },
	{ "^\\d+$", "12a", 0 },
	{ "[\\d.]+$", "6.1.0", 1 },
	{ "^[\\d.]+$", "6.1.0-rc", 0 },
	{ "^\\w+$", "AVX_512", 1 },
	{ "^\\W+$", "a", 0 },
	{ "\\s", "a b", 1 },
	{ "\\S", " \t\n", 0 },
	{ "^[\\w-]+$", "a-b_c", 1 },
	{ "(?i)^nvidia", "NVIDIA Corp", 1 },
	{ "(?i)[a-c]x", "BX", 1 },
	{ "(?:ab)+c", "ababc", 1 },
	{ "a.c", "a\nc", 0 },
	{ "a.c", "abc", 1 },
	{ "[^a]", "\n", 1 },
	{ "a$", "a\n", 0 },
	{ "[]a]", "]", 1 },
	{ "^[^\\]]$", "]", 0 },
	{ "[a-]", "-", 1 },
	{ "^[\\^]$", "^", 1 },
	{ "^[\\^-]$", "-", 1 },
	{ "\\^", "^", 1 },
	{ "[\\[]", "[", 1 },
	{ "[\\-a]", "-", 1 },
	{ "^[!-/]$", ",", 1 },
	{ "^[-]$", "-", 1 },
	{ "^[a^]+$", "^a", 1 },
	{ "^[^-]$", "-", 0 },
	{ "a{2}", "aa", 1 },
	{ "a{2}", "a", 0 },
	{ "a{", "a{", 1 },
	{ "x{1,}y}", "xy}", 1 },
	{ "a*?b", "aab", 1 },
	{ "a+?", "", 0 },
	{ "a{1,2}?", "a", 1 },
	{ "\\<", "<", 1 },
	{ "\\<", "a", 0 },
	{ "\\.", "a", 0 },
	{ "[[:alpha:]]+", "abc", 1 },
	{ "[[:word:]]", "_", 1 },
	{ "\\x41", "A", 1 },
	{ "\\Aa\\z", "a", 1 },
	{ "\\t", "\t", 1 },
	{ "café", "un café", 1 },
	{ "a|b", "b", 1 },
	{ "^+Int", "Intel", 1 },
	{ "^+Int", "AnIntel", 0 },
	{ "x$*y", "xy", 1 },
	{ "\\A?b", "ab", 1 },
	{ "^*^+a", "a", 1 },
	{ "(^|,)avx(,|$)", "sse,avx", 1 },
	{ "(^|,)avx(,|$)", "avx2", 0 },
	{ "(a|^)+b", "b", 1 },
	{ "((^)|a)b", "cb", 0 },
	{ "^a|b$", "ab", 1 },
	{ "(^|)b", "", -1, "an anchor (^ $) that may be skipped" },
	{ "(^)?b", "", -1, "may be skipped" },
	{ "(^a)*c", "", -1, "may be skipped" },
	{ "x(a|$)*y", "", -1, "may be skipped" },
	{ "(|$)", "", -1, "may be skipped" },
	{ "$^|", "", -1, "may be skipped" },
	{ "[ab](?:a?^)?", "", -1, "may be skipped" },
	{ "(^|a?)b", "", -1, "may be skipped" },
	{ "^(a|)$", "", 1 },
	{ "", "anything", 1 },
	{ "\\bfoo", "", -1, "\\b (word boundary)" },
	{ "foo\\B", "", -1, "\\B (word boundary)" },
	{ "(?s)a", "", -1, "(?s): flags" },
	{ "(?i:a)", "", -1, "(?i:a)" },
	{ "a(?i)b", "", -1, "(?i) is only supported at the start" },
	{ "(?P<n>a)", "", -1, "named groups" },
	{ "(?<n>a)", "", -1, "named groups" },
	{ "(?=a)", "", -1, "(?=a)" },
	{ "\\pL", "", -1, "\\p (Unicode class)" },
	{ "\\p{Greek}", "", -1, "\\p (Unicode class)" },
	{ "\\Qa.b\\E", "", -1, "escape \\Q" },
	{ "\\1", "", -1, "escape \\1" },
	{ "a**", "", -1, "nested repetition" },
	{ "^(a{2}){250}$", "", 0 },
	{ "((a{2}){2}){300}", "", -1, "invalid repeat count" },
	{ "(a{10}|b{200}){6}", "", -1, "invalid repeat count" },
	{ "(a{1001})", "", -1, "invalid repeat count" },
	{ "a{3,2}", "", -1, "invalid repeat count" },
	{ "a{256}", "", -1, "Invalid contents of {}" },  /* musl's RE_DUP_MAX, as before */
	{ "a{1,300}", "", -1, "Invalid contents of {}" },
	{ "a{300}(", "", -1, "missing closing )" },      /* the RE2 checks first */
	{ "^{300}a", "a", 1 },                           /* a repeated anchor is itself */
	{ "^a{2,255}$", "aaa", 1 },
	{ "^(a|b){0}c$", "c", 1 },
	{ "(a*)*b", "aaab", 1 },
	{ "()*x|()+y", "y", 1 },
	{ "a{,2}", "a{,2}", 1 },
	{ "a{2}{3}", "", -1, "nested repetition" },
	{ "a*??", "", -1, "nested repetition" },
	{ "*a", "", -1, "missing argument" },
	{ "(+a)", "", -1, "missing argument" },
	{ "a|*", "", -1, "missing argument" },
	{ "[\\D]", "", -1, "negated class" },
	{ "[é]", "", -1, "non-ASCII" },
	{ "[[:^alpha:]]", "", -1, "character class" },
	{ "[a", "", -1, "missing closing ]" },
	{ "[z-a]", "", -1, "invalid character class range" },
	{ "^[\\d-z]+$", "1-z", 1 },
	{ "\\x{263a}", "", -1, "ASCII" },
	{ "a\\", "", -1, "trailing backslash" },
	{ "(", "", -1, "" },
	{ "a)", "", -1, "" },
};

static void test_re(void)
{
	for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++) {
		char name[160], err[160];
		struct re re;
		int rc = re_compile(&re, res[i].pattern, err, sizeof(err)), got;

		char subj[64] = "";

		for (const char *p = res[i].subject; *p; p++) /* one line per check */
			snprintf(subj + strlen(subj), sizeof(subj) - strlen(subj), *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : "%c", *p);
		snprintf(name, sizeof(name), "re: /%s/ on \"%s\"", res[i].pattern, subj);
		if (rc == 0) {
			got = re_matches(&re, res[i].subject);
			re_free(&re);
		} else {
			got = rc == -FB_EINVAL ? -1 : -2;
		}
		if (res[i].want < 0)
			T_OK(name, got == -1 && err[0] && strstr(err, res[i].why), "got %d, err \"%s\"", got, err);
		else
			T_OK(name, got == res[i].want, "got %d (rc %d, err \"%s\"), want %d", got, rc, err, res[i].want);
	}
}

/* What keeps matching linear and bounded: the program grows with the
 * repeats (RE2's 1000 copies at most), a pattern past RE_MAX_INST is
 * -FB_ENOMEM, and the patterns a backtracker takes exponential time on
 * answer over a long subject (the NFA's states are at most its program). */
static void test_re_bounds(void)
{
	static const struct {
		const char *pattern, *fill, *tail;
		int want;
	} slow[] = {
		{ "(a*)*b", "a", "", 0 },
		{ "(a|aa)*c", "a", "", 0 },
		{ "(x+x+)+y", "x", "", 0 },
		{ "^(a|a?)+$", "a", "b", 0 },
		{ "(.*a){20}", "a", "", 1 },
		{ "(a{250}){4}b", "a", "b", 1 },
	};
	size_t len = 200000;
	char *s = malloc(len + 2), *big;
	struct re re;
	struct buf b;

	if (!s)
		return;
	for (size_t i = 0; i < sizeof(slow) / sizeof(slow[0]); i++) {
		char name[128];

		memset(s, slow[i].fill[0], len);
		strcpy(s + len, slow[i].tail);
		snprintf(name, sizeof(name), "re bounds: /%s/ over %zu bytes", slow[i].pattern, len);
		T_INT(name, re_compile(&re, slow[i].pattern, NULL, 0), 0);
		T_OK(name, re.n < 3000, "%zu instructions", re.n);
		T_INT(name, re_matches(&re, s), slow[i].want);
		re_free(&re);
	}
	free(s);
	/* one (a{250}){4} is about 1000 instructions: 1100 of them are too many */
	buf_init(&b, 0);
	for (int i = 0; i < 1100; i++)
		buf_puts(&b, "(a{250}){4}");
	big = buf_take(&b, NULL);
	T_INT("re bounds: a program over RE_MAX_INST", big ? re_compile(&re, big, NULL, 0) : -FB_ENOMEM, -FB_ENOMEM);
	re_free(&re);
	free(big);
	/* a long alternation: one state per word */
	buf_init(&b, 0);
	for (int i = 0; i < 5000; i++)
		buf_printf(&b, "%sw%d", i ? "|" : "", i);
	big = buf_take(&b, NULL);
	T_INT("re bounds: 5000 alternatives", big ? re_compile(&re, big, NULL, 0) : -FB_ENOMEM, 0);
	T_INT("re bounds: the last of them", re_matches(&re, "xx w4999"), 1);
	T_INT("re bounds: none of them", re_matches(&re, "w"), 0);
	re_free(&re);
	free(big);
}

int main(void)
{
	t_suite = "rules";
	/* a labelsTemplate one byte over the cap */
	{
		size_t n = (size_t)snprintf(big_template_rule, sizeof(big_template_rule), "{'name': 'r', 'labelsTemplate': '");

		memset(big_template_rule + n, 'x', 64 * 1024 + 1);
		strcpy(big_template_rule + n + 64 * 1024 + 1, "'}");
	}
	/* a template whose output passes 1 MiB */
	{
		size_t n = (size_t)snprintf(big_output_rule, sizeof(big_output_rule),
					    "{'name': 'r', 'matchFeatures': [{'feature': 'cpu.cpuid'}], 'labelsTemplate': 'a=");

		for (int i = 0; i < 1100; i++)
			n += (size_t)snprintf(big_output_rule + n, sizeof(big_output_rule) - n, "{{printf `%%999s` ``}}");
		snprintf(big_output_rule + n, sizeof(big_output_rule) - n, "'}");
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	test_two_lists();
	test_api();
	test_re();
	test_re_bounds();
	return t_done();
}
