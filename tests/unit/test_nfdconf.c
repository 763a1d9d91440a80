/* nfdconf: upstream defaults, the example nfd-worker.conf with everything
 * commented in, lists replacing defaults, key matching as encoding/json does
 * it, warnings for unknown keys, errors with positions, durations, the
 * source-list and ownerRefs helpers, file loading. */
#include "t.h"

#include "../../core/json.h"
#include "../../core/log.h"
#include "../../core/nfdconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static struct fb_log lg;
static char logbuf[1 << 16];

static void log_reset(void)
{
	if (ftruncate(lg.fd, 0) != 0 || lseek(lg.fd, 0, SEEK_SET) != 0)
		abort();
}

static const char *log_text(void)
{
	ssize_t n = pread(lg.fd, logbuf, sizeof(logbuf) - 1, 0);

	logbuf[n > 0 ? n : 0] = '\0';
	return logbuf;
}

/* "a,b,c" for a list, to compare with one string */
static const char *joined(const struct nfd_strlist *l)
{
	static char buf[4][1024];
	static int k;
	size_t n = 0;

	k = (k + 1) % 4;
	buf[k][0] = '\0';
	for (size_t i = 0; i < l->n && n < sizeof(buf[k]); i++)
		n += (size_t)snprintf(buf[k] + n, sizeof(buf[k]) - n, "%s%s", i ? "," : "", l->v[i]);
	return buf[k];
}

#define T_LIST(name, list, want) T_STR(name, joined(&(list)), want)

static int apply(struct nfd_worker_config *c, const char *yaml, struct fb_errinfo *ei)
{
	return nfdconf_apply_yaml(c, yaml, strlen(yaml), "test.conf", &lg, ei);
}

static void test_defaults(void)
{
	struct nfd_worker_config c;

	nfdconf_init(&c);
	T_INT("defaults: sleepInterval 60s", c.core.sleep_interval_ms, 60000);
	T_LIST("defaults: featureSources", c.core.feature_sources, "all");
	T_LIST("defaults: labelSources", c.core.label_sources, "all");
	T_STR("defaults: labelWhiteList", c.core.label_whitelist, "");
	T_INT("defaults: noPublish", c.core.no_publish, 0);
	T_LIST("defaults: noPublishFeatures", c.core.no_publish_features, "");
	T_LIST("defaults: ownerRefs", c.core.owner_refs, "pod,ds");
	T_INT("defaults: klog.v", c.core.klog_v, 0);
	T_LIST("defaults: pci classes", c.pci.device_class_whitelist, "03,0b40,12");
	T_LIST("defaults: pci fields", c.pci.device_label_fields, "class,vendor");
	T_LIST("defaults: usb classes", c.usb.device_class_whitelist, "0e,ef,fe,ff");
	T_LIST("defaults: usb fields", c.usb.device_label_fields, "class,vendor,device");
	T_LIST("defaults: cpuid blacklist", c.cpuid.attribute_blacklist,
	       "AVX10,BMI1,BMI2,CLMUL,CMOV,CX16,ERMS,F16C,HTT,LZCNT,MMX,MMXEXT,NX,POPCNT,RDRAND,"
	       "RDSEED,RDTSCP,SGX,SGXLC,SSE,SSE2,SSE3,SSE4,SSE42,SSSE3,TDX_GUEST");
	T_LIST("defaults: cpuid whitelist", c.cpuid.attribute_whitelist, "");
	T_STR("defaults: kconfigFile", c.kernel.kconfig_file, "");
	T_LIST("defaults: kernel configOpts", c.kernel.config_opts, "NO_HZ,NO_HZ_IDLE,NO_HZ_FULL,PREEMPT");
	T_INT("defaults: hooksEnabled", c.local_hooks_enabled, 0);
	T_OK("defaults: no custom rules", c.custom == NULL, "custom set");
	nfdconf_free(&c);
	nfdconf_free(&c);
	T_OK("free twice is safe and leaves defaults", c.core.sleep_interval_ms == 60000, "not reset");
}

/* upstream's deployment/components/worker-config/nfd-worker.conf.example
 * with every line commented in, plus the v0.19 core keys */
static const char example[] =
	"core:\n"
	"  labelWhiteList:\n"
	"  noPublish: false\n"
	"  noPublishFeatures: [\"pci.device\", \"usb.*\"]\n"
	"  ownerRefs: [node, pod]\n"
	"  sleepInterval: 60s\n"
	"  featureSources: [all, -memory]\n"
	"  sources: [all]\n"
	"  klog:\n"
	"    addDirHeader: false\n"
	"    alsologtostderr: false\n"
	"    logBacktraceAt:\n"
	"    logtostderr: true\n"
	"    skipHeaders: false\n"
	"    stderrthreshold: 2\n"
	"    v: 0\n"
	"    vmodule:\n"
	"##   NOTE: the following options are not dynamically run-time configurable\n"
	"##         and require a nfd-worker restart to take effect after being changed\n"
	"    logDir:\n"
	"    logFile:\n"
	"    logFileMaxSize: 1800\n"
	"    skipLogHeaders: false\n"
	"sources:\n"
	"  cpu:\n"
	"    cpuid:\n"
	"##     NOTE: whitelist has priority over blacklist\n"
	"      attributeBlacklist:\n"
	"        - \"BMI1\"\n"
	"        - \"BMI2\"\n"
	"        - \"CLMUL\"\n"
	"        - \"CMOV\"\n"
	"        - \"CX16\"\n"
	"        - \"ERMS\"\n"
	"        - \"F16C\"\n"
	"        - \"HTT\"\n"
	"        - \"LZCNT\"\n"
	"        - \"MMX\"\n"
	"        - \"MMXEXT\"\n"
	"        - \"NX\"\n"
	"        - \"POPCNT\"\n"
	"        - \"RDRAND\"\n"
	"        - \"RDSEED\"\n"
	"        - \"RDTSCP\"\n"
	"        - \"SGX\"\n"
	"        - \"SSE\"\n"
	"        - \"SSE2\"\n"
	"        - \"SSE3\"\n"
	"        - \"SSE4\"\n"
	"        - \"SSE42\"\n"
	"        - \"SSSE3\"\n"
	"      attributeWhitelist:\n"
	"  kernel:\n"
	"    kconfigFile: \"/path/to/kconfig\"\n"
	"    configOpts:\n"
	"      - \"NO_HZ\"\n"
	"      - \"X86\"\n"
	"      - \"DMI\"\n"
	"  pci:\n"
	"    deviceClassWhitelist:\n"
	"      - \"0200\"\n"
	"      - \"03\"\n"
	"      - \"12\"\n"
	"    deviceLabelFields:\n"
	"      - \"class\"\n"
	"      - \"vendor\"\n"
	"      - \"device\"\n"
	"      - \"subsystem_vendor\"\n"
	"      - \"subsystem_device\"\n"
	"  usb:\n"
	"    deviceClassWhitelist:\n"
	"      - \"0e\"\n"
	"      - \"ef\"\n"
	"      - \"fe\"\n"
	"      - \"ff\"\n"
	"    deviceLabelFields:\n"
	"      - \"class\"\n"
	"      - \"vendor\"\n"
	"      - \"device\"\n"
	"  local:\n"
	"    hooksEnabled: false\n"
	"  custom:\n"
	"    - name: \"my.kernel.feature\"\n"
	"      matchOn:\n"
	"        - loadedKMod: [\"example_kmod1\", \"example_kmod2\"]\n"
	"    - name: \"feature.by.nodename\"\n"
	"      value: customValue\n"
	"      matchOn:\n"
	"        - nodename: [\"worker-0\", \"my-.*-node\"]\n"
	"\n"
	"    # The following feature demonstrates the capabilities of the matchFeatures\n"
	"    - name: \"my.ng.feature\"\n"
	"      labels:\n"
	"        my-ng-feature: \"true\"\n"
	"      matchFeatures:\n"
	"        - feature: cpu.cpuid\n"
	"          matchExpressions:\n"
	"            AVX512F: {op: Exists}\n"
	"        - feature: kernel.version\n"
	"          matchExpressions:\n"
	"            major: {op: In, value: [\"5\"]}\n"
	"            minor: {op: Gt, value: [\"10\"]}\n";

static const char example_custom[] =
	"[{\"name\":\"my.kernel.feature\",\"matchOn\":[{\"loadedKMod\":[\"example_kmod1\",\"example_kmod2\"]}]},"
	"{\"name\":\"feature.by.nodename\",\"value\":\"customValue\",\"matchOn\":[{\"nodename\":[\"worker-0\",\"my-.*-node\"]}]},"
	"{\"name\":\"my.ng.feature\",\"labels\":{\"my-ng-feature\":\"true\"},\"matchFeatures\":["
	"{\"feature\":\"cpu.cpuid\",\"matchExpressions\":{\"AVX512F\":{\"op\":\"Exists\"}}},"
	"{\"feature\":\"kernel.version\",\"matchExpressions\":{\"major\":{\"op\":\"In\",\"value\":[\"5\"]},"
	"\"minor\":{\"op\":\"Gt\",\"value\":[\"10\"]}}}]}]";

static void test_example(void)
{
	struct nfd_worker_config c;
	struct fb_errinfo ei;
	struct json *want = json_parse(example_custom, strlen(example_custom), "want", NULL);
	char buf[256];
	int rc;

	nfdconf_init(&c);
	log_reset();
	rc = apply(&c, example, &ei);
	log_text();
	T_OK("example: parses", rc == 0, "rc=%d %s", rc, fb_errinfo_str(&ei, buf, sizeof(buf)));
	T_OK("example: no unknown keys", !strstr(logbuf, "unknown key"), "log: %s", logbuf);
	T_OK("example: deprecated core.sources is reported", strstr(logbuf, "deprecated 'core.sources'"),
	     "log: %s", logbuf);
	T_INT("example: sleepInterval", c.core.sleep_interval_ms, 60000);
	T_STR("example: empty labelWhiteList keeps the default", c.core.label_whitelist, "");
	T_INT("example: noPublish", c.core.no_publish, 0);
	T_LIST("example: noPublishFeatures", c.core.no_publish_features, "pci.device,usb.*");
	T_LIST("example: ownerRefs", c.core.owner_refs, "node,pod");
	T_LIST("example: featureSources", c.core.feature_sources, "all,-memory");
	T_LIST("example: core.sources sets labelSources", c.core.label_sources, "all");
	T_INT("example: klog.v", c.core.klog_v, 0);
	T_LIST("example: cpuid blacklist replaced", c.cpuid.attribute_blacklist,
	       "BMI1,BMI2,CLMUL,CMOV,CX16,ERMS,F16C,HTT,LZCNT,MMX,MMXEXT,NX,POPCNT,RDRAND,RDSEED,"
	       "RDTSCP,SGX,SSE,SSE2,SSE3,SSE4,SSE42,SSSE3");
	T_LIST("example: empty cpuid whitelist", c.cpuid.attribute_whitelist, "");
	T_STR("example: kconfigFile", c.kernel.kconfig_file, "/path/to/kconfig");
	T_LIST("example: configOpts", c.kernel.config_opts, "NO_HZ,X86,DMI");
	T_LIST("example: pci classes", c.pci.device_class_whitelist, "0200,03,12");
	T_LIST("example: pci fields", c.pci.device_label_fields,
	       "class,vendor,device,subsystem_vendor,subsystem_device");
	T_LIST("example: usb classes", c.usb.device_class_whitelist, "0e,ef,fe,ff");
	T_LIST("example: usb fields", c.usb.device_label_fields, "class,vendor,device");
	T_INT("example: hooksEnabled", c.local_hooks_enabled, 0);
	T_OK("example: custom rules kept as a tree", want && c.custom && json_equal(c.custom, want),
	     "custom differs");
	json_free(want);
	nfdconf_free(&c);
}

static void test_values(void)
{
	struct nfd_worker_config c;
	struct fb_errinfo ei;

	nfdconf_init(&c);
	T_INT("a list replaces the default list", apply(&c, "sources:\n  pci:\n    deviceClassWhitelist: [\"0300\"]\n", &ei), 0);
	T_LIST("  with only the given items", c.pci.device_class_whitelist, "0300");
	T_LIST("  and the other list keeps its default", c.pci.device_label_fields, "class,vendor");
	T_LIST("  and usb keeps its own", c.usb.device_class_whitelist, "0e,ef,fe,ff");
	T_INT("an empty list", apply(&c, "core: {featureSources: []}", &ei), 0);
	T_LIST("  empties", c.core.feature_sources, "");
	T_INT("a null list", apply(&c, "core:\n  labelSources:\n", &ei), 0);
	T_LIST("  empties too", c.core.label_sources, "");
	T_INT("numbers and booleans in a string list", apply(&c, "sources: {usb: {deviceClassWhitelist: [12, 3.5, true, 03]}}", &ei), 0);
	T_LIST("  become their text", c.usb.device_class_whitelist, "12,3.5,true,3");
	T_INT("a null item", apply(&c, "core: {noPublishFeatures: [a, null, b]}", &ei), 0);
	T_LIST("  is an empty string (Go's zero value)", c.core.no_publish_features, "a,,b");
	T_INT("a number as kconfigFile", apply(&c, "sources: {kernel: {kconfigFile: 42}}", &ei), 0);
	T_STR("  becomes its text", c.kernel.kconfig_file, "42");
	T_INT("labelWhiteList", apply(&c, "core: {labelWhiteList: '^cpu-.*'}", &ei), 0);
	T_STR("  kept as text", c.core.label_whitelist, "^cpu-.*");
	T_INT("null leaves a scalar alone", apply(&c, "core: {labelWhiteList: null, noPublish: ~}", &ei), 0);
	T_STR("  labelWhiteList unchanged", c.core.label_whitelist, "^cpu-.*");
	T_INT("booleans", apply(&c, "core: {noPublish: true}\nsources: {local: {hooksEnabled: true}}", &ei), 0);
	T_OK("  set", c.core.no_publish == 1 && c.local_hooks_enabled == 1, "%d %d", c.core.no_publish,
	     c.local_hooks_enabled);

	/* encoding/json: struct members case-insensitive, map keys exact */
	log_reset();
	T_INT("struct keys match case-insensitively",
	      apply(&c, "Core:\n  SleepInterval: 2s\n  LABELSOURCES: [pci]\nSources:\n  pci:\n    DeviceLabelFields: [vendor]\n", &ei), 0);
	T_OK("  applied", c.core.sleep_interval_ms == 2000 && !strcmp(joined(&c.core.label_sources), "pci") &&
	     !strcmp(joined(&c.pci.device_label_fields), "vendor"), "sleep=%lld", c.core.sleep_interval_ms);
	T_OK("  without warnings", !strstr(log_text(), "unknown key"), "log: %s", logbuf);
	log_reset();
	T_INT("source names are map keys: exact", apply(&c, "sources:\n  PCI:\n    deviceLabelFields: [device]\n", &ei), 0);
	T_LIST("  PCI is not pci", c.pci.device_label_fields, "vendor");
	T_OK("  and is reported", strstr(log_text(), "line 2 column 3: unknown key sources.PCI, ignored"),
	     "log: %s", logbuf);
	T_INT("two spellings of one member: the later wins",
	      apply(&c, "core:\n  sleepInterval: 3s\n  SleepInterval: 4s\n", &ei), 0);
	T_INT("  4s", c.core.sleep_interval_ms, 4000);

	/* deprecated keys */
	T_INT("core.sources wins over labelSources whatever the order",
	      apply(&c, "core: {sources: [cpu], labelSources: [usb]}", &ei), 0);
	T_LIST("  cpu", c.core.label_sources, "cpu");
	log_reset();
	T_INT("core.noOwnerRefs: true", apply(&c, "core: {ownerRefs: [node], noOwnerRefs: true}", &ei), 0);
	T_LIST("  empties ownerRefs", c.core.owner_refs, "");
	T_OK("  with a warning", strstr(log_text(), "'core.noOwnerRefs' is deprecated"), "log: %s", logbuf);
	T_INT("core.noOwnerRefs: false", apply(&c, "core: {ownerRefs: [ds, node], noOwnerRefs: false}", &ei), 0);
	T_LIST("  keeps ownerRefs", c.core.owner_refs, "ds,node");

	/* klog */
	T_INT("klog.v as a number", apply(&c, "core: {klog: {v: 3}}", &ei), 0);
	T_INT("  3", c.core.klog_v, 3);
	T_INT("klog.v as a string", apply(&c, "core: {klog: {v: \"5\"}}", &ei), 0);
	T_INT("  5", c.core.klog_v, 5);
	log_reset();
	T_INT("klog option names are exact", apply(&c, "core:\n  klog:\n    V: 7\n", &ei), 0);
	T_INT("  V is not v", c.core.klog_v, 5);
	T_OK("  and is reported", strstr(log_text(), "line 3 column 5: unknown key core.klog.V, ignored"),
	     "log: %s", logbuf);

	/* custom */
	T_INT("custom: an empty list", apply(&c, "sources: {custom: []}", &ei), 0);
	T_OK("  kept", c.custom && json_type(c.custom) == JSON_ARRAY && json_count(c.custom) == 0, "custom");
	T_INT("custom: null", apply(&c, "sources: {custom: null}", &ei), 0);
	T_OK("  none", c.custom == NULL, "custom");

	/* empty documents */
	T_INT("an empty document changes nothing", apply(&c, "", &ei), 0);
	T_INT("a comment-only document too", apply(&c, "# nothing\n", &ei), 0);
	T_INT("core: null too", apply(&c, "core:\nsources:\n", &ei), 0);
	T_INT("  sleepInterval still 4s", c.core.sleep_interval_ms, 4000);
	nfdconf_free(&c);
}

static const struct {
	const char *in;
	long long ms;
	const char *log;
} sleep_cases[] = {
	{ "1m30s", 90000, NULL },
	{ "60s", 60000, NULL },
	{ "1.5h", 5400000, NULL },
	{ "2h45m0.5s", 9900500, NULL },
	{ "1500ms", 1500, NULL },
	{ "500ms", 1000, "too short sleep interval" },
	{ "1ns", 1000, "too short sleep interval" },
	{ "0", 0, NULL },
	{ "0s", 0, NULL },
	{ "-1s", 0, NULL },
	{ "60", 1000, "too short sleep interval specified (60 ns)" }, /* a number is nanoseconds */
	{ "90000000000", 90000, NULL },
};

static void test_sleep(void)
{
	for (size_t i = 0; i < sizeof(sleep_cases) / sizeof(sleep_cases[0]); i++) {
		struct nfd_worker_config c;
		struct fb_errinfo ei;
		char yaml[128], name[128];
		int rc;

		nfdconf_init(&c);
		snprintf(yaml, sizeof(yaml), "core:\n  sleepInterval: %s\n", sleep_cases[i].in);
		log_reset();
		rc = apply(&c, yaml, &ei);
		log_text();
		snprintf(name, sizeof(name), "sleepInterval: %s -> %lld ms", sleep_cases[i].in, sleep_cases[i].ms);
		T_OK(name, rc == 0 && c.core.sleep_interval_ms == sleep_cases[i].ms &&
		     (sleep_cases[i].log ? strstr(logbuf, sleep_cases[i].log) != NULL : logbuf[0] == '\0'),
		     "rc=%d ms=%lld log=%s", rc, c.core.sleep_interval_ms, logbuf);
		nfdconf_free(&c);
	}
}

static const struct {
	const char *name, *yaml;
	int rc;
	const char *detail;
} error_cases[] = {
	{ "bad YAML", "core:\n  sleepInterval: [1s\n", -FB_EINVAL, "line 2 column " },
	{ "a tab in indentation", "core:\n\tnoPublish: true\n", -FB_EINVAL, "line 2 column 1: " },
	{ "a string for a boolean", "core:\n  noPublish: \"yes\"\n", -FB_EINVAL,
	  "line 2 column 3: core.noPublish: expected true or false, got a string" },
	{ "a bad duration", "core:\n  sleepInterval: soon\n", -FB_EINVAL,
	  "line 2 column 3: core.sleepInterval: invalid duration \"soon\"" },
	{ "a boolean duration", "core:\n  sleepInterval: true\n", -FB_EINVAL,
	  "line 2 column 3: core.sleepInterval: invalid duration: got a boolean" },
	{ "a string for a list", "sources:\n  pci:\n    deviceClassWhitelist: \"03\"\n", -FB_EINVAL,
	  "line 3 column 5: sources.pci.deviceClassWhitelist: expected a list of strings, got a string" },
	{ "a mapping in a list", "core:\n  featureSources:\n    - pci\n    - {a: b}\n", -FB_EINVAL,
	  "line 4 column 5: core.featureSources[1]: expected a string, got a mapping" },
	{ "a list for a mapping", "sources:\n  cpu:\n    cpuid: [a]\n", -FB_EINVAL,
	  "line 3 column 5: sources.cpu.cpuid: expected a mapping, got a list" },
	{ "a list at the top", "- core\n", -FB_EINVAL, "line 1 column 1: the document: expected a mapping, got a list" },
	{ "a number for labelWhiteList", "core: {labelWhiteList: 5}", -FB_EINVAL,
	  "core.labelWhiteList: expected a string, got a number" },
	{ "a list for kconfigFile", "sources: {kernel: {kconfigFile: [a]}}", -FB_EINVAL,
	  "sources.kernel.kconfigFile: expected a string, got a list" },
	{ "a bad klog.v", "core:\n  klog:\n    v: high\n", -FB_EINVAL,
	  "line 3 column 5: core.klog.v: expected a verbosity level (an integer)" },
	{ "a list as a klog option", "core: {klog: {vmodule: [a]}}", -FB_EINVAL,
	  "core.klog.vmodule: expected a string, got a list" },
	{ "an unknown owner kind", "core:\n  ownerRefs: [pod, daemonset]\n", -FB_EINVAL,
	  "line 2 column 3: core.ownerRefs: invalid owner reference kind \"daemonset\"" },
	{ "a duplicate owner kind", "core:\n  ownerRefs: [pod, pod]\n", -FB_EINVAL,
	  "core.ownerRefs: duplicate owner reference kind \"pod\"" },
	{ "custom as a mapping", "sources:\n  custom: {name: x}\n", -FB_EINVAL,
	  "line 2 column 3: sources.custom: expected a list of rules, got a mapping" },
	{ "a duplicate key", "core:\n  noPublish: true\n  noPublish: false\n", -FB_EINVAL, "line 3" },
	{ "fake as a list", "sources: {fake: [a]}", -FB_EINVAL, "sources.fake: expected a mapping, got a list" },
	{ "fake labels as a list", "sources: {fake: {labels: [a]}}", -FB_EINVAL,
	  "sources.fake: labels: expected a mapping, got a list" },
	{ "a fake label value as a list", "sources: {fake: {labels: {a: [b]}}}", -FB_EINVAL,
	  "sources.fake: labels.a: expected a string, got a list" },
	{ "fake flags as a mapping", "sources: {fake: {flagFeatures: {a: b}}}", -FB_EINVAL,
	  "sources.fake: flagFeatures: expected a list, got a mapping" },
	{ "a fake instance as a string", "sources: {fake: {instanceFeatures: [a]}}", -FB_EINVAL,
	  "sources.fake: instanceFeatures: expected a mapping, got a string" },
};

/* sources.fake layered as upstream's Go decoder layers it: maps keep what
 * an earlier layer (or the defaults) put in, lists are replaced. */
static void test_fake(void)
{
	struct nfd_worker_config c;
	struct fb_errinfo ei;
	char *s;
	int rc;

	nfdconf_init(&c);
	rc = apply(&c, "sources:\n  fake:\n    labels: {mine: 1}\n    flagFeatures: [x, 2]\n", &ei);
	rc |= nfdconf_apply_yaml(&c, "{sources: {fake: {labels: {more: x}, attributeFeatures: {attr_3: 11}}}}",
				 strlen("{sources: {fake: {labels: {more: x}, attributeFeatures: {attr_3: 11}}}}"),
				 "--options", &lg, &ei);
	s = rc == 0 ? json_print(c.fake, NULL) : NULL;
	T_STR("fake: defaults, then a file, then --options", s ? s : "(none)",
	      "{\"labels\":{\"fakefeature1\":\"true\",\"fakefeature2\":\"true\",\"fakefeature3\":\"true\","
	      "\"mine\":\"1\",\"more\":\"x\"},\"flagFeatures\":[\"x\",\"2\"],"
	      "\"attributeFeatures\":{\"attr_1\":\"true\",\"attr_2\":\"false\",\"attr_3\":\"11\"},"
	      "\"instanceFeatures\":[{\"name\":\"instance_1\",\"attr_1\":\"true\",\"attr_2\":\"false\","
	      "\"attr_3\":\"10\",\"attr_4\":\"foobar\"},{\"name\":\"instance_2\",\"attr_1\":\"true\","
	      "\"attr_2\":\"true\",\"attr_3\":\"100\"},{\"name\":\"instance_3\"}]}");
	free(s);
	rc = apply(&c, "sources: {fake: {labels: null, instanceFeatures: [{name: only}]}}", &ei);
	s = rc == 0 ? json_print(c.fake, NULL) : NULL;
	T_OK("fake: null clears a map, a list replaces", s && strstr(s, "\"labels\":null") &&
	     strstr(s, "\"instanceFeatures\":[{\"name\":\"only\"}]") && strstr(s, "\"attr_3\":\"11\""), "%s", s);
	free(s);
	nfdconf_free(&c);
	nfdconf_init(&c);
	T_OK("fake: no sources.fake, no object (the source uses its defaults)",
	     apply(&c, "sources: {pci: {}}", &ei) == 0 && c.fake == NULL, "fake=%p", (void *)c.fake);
	nfdconf_free(&c);
}

static void test_errors(void)
{
	for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
		struct nfd_worker_config c;
		struct fb_errinfo ei;
		char name[160];
		int rc;

		nfdconf_init(&c);
		c.core.klog_v = 9;
		memset(&ei, 0, sizeof(ei));
		rc = apply(&c, error_cases[i].yaml, &ei);
		snprintf(name, sizeof(name), "error: %s", error_cases[i].name);
		T_OK(name, rc == error_cases[i].rc && !strcmp(ei.what, "test.conf") &&
		     strstr(ei.detail, error_cases[i].detail) && c.core.klog_v == 9 && !c.core.no_publish,
		     "rc=%d what=%s detail=%s", rc, ei.what, ei.detail);
		nfdconf_free(&c);
	}
	{
		struct nfd_worker_config c;
		struct fb_errinfo ei;
		int rc;

		nfdconf_init(&c);
		rc = apply(&c, "core:\n  noPublish: true\n  featureSources: [pci]\n  sleepInterval: never\n", &ei);
		T_OK("an error leaves the config unchanged", rc == -FB_EINVAL && c.core.no_publish == 0 &&
		     !strcmp(joined(&c.core.feature_sources), "all"), "rc=%d", rc);
		nfdconf_free(&c);
	}
}

static const struct {
	const char *yaml, *log;
} warn_cases[] = {
	{ "core:\n  foo: 1\n", "WHAT: line 2 column 3: unknown key core.foo, ignored" },
	{ "core:\n  noPublish: true\n  bar: [1, 2]\n", "WHAT: line 3 column 3: unknown key core.bar, ignored" },
	{ "extra: 1\n", "WHAT: line 1 column 1: unknown key extra, ignored" },
	{ "sources:\n  memory:\n    x: 1\n", "WHAT: line 2 column 3: unknown key sources.memory, ignored" },
	{ "sources:\n  fake:\n    bogus: {a: b}\n", "unknown key sources.fake.bogus, ignored" },
	{ "sources:\n  pci:\n    deviceClassWhitelist: [\"03\"]\n    deviceLabelField: [class]\n",
	  "WHAT: line 4 column 5: unknown key sources.pci.deviceLabelField, ignored" },
	{ "sources:\n  cpu:\n    cpuid:\n      attributeBlackList: [X]\n      attributeGreylist: [Y]\n",
	  "line 5 column 7: unknown key sources.cpu.cpuid.attributeGreylist, ignored" },
	{ "core: {klog: {verbose: 1}}\n", "line 1 column 15: unknown key core.klog.verbose, ignored" },
};

static void test_warnings(void)
{
	for (size_t i = 0; i < sizeof(warn_cases) / sizeof(warn_cases[0]); i++) {
		struct nfd_worker_config c;
		struct fb_errinfo ei;
		char name[160];
		int rc;

		nfdconf_init(&c);
		log_reset();
		rc = nfdconf_apply_yaml(&c, warn_cases[i].yaml, strlen(warn_cases[i].yaml), "WHAT", &lg, &ei);
		log_text();
		snprintf(name, sizeof(name), "warning: %s", warn_cases[i].log);
		T_OK(name, rc == 0 && strstr(logbuf, warn_cases[i].log) && logbuf[0] == 'W', "rc=%d log=%s",
		     rc, logbuf);
		nfdconf_free(&c);
	}
}

static void test_helpers(void)
{
	static const char *const known[] = { "cpu", "custom", "fake", "kernel", "local", "pci", "usb" };
	const unsigned long long all = 0x7f & ~(1ULL << 2); /* fake is not in "all" */
	static const struct {
		const char *items[4];
		size_t n;
		unsigned long long want;
		const char *log;
	} cases[] = {
		{ { "all" }, 1, 0x7b, NULL },
		{ { "all", "-pci" }, 2, 0x5b, NULL },
		{ { "-pci", "all" }, 2, 0x7b, NULL },
		{ { "pci", "usb" }, 2, 0x60, NULL },
		{ { "all", "fake" }, 2, 0x7f, NULL },
		{ { "pci", "bogus", "-nope" }, 3, 0x20,
		  "skipping unknown source specified in core.labelSources: \"bogus\"" },
		{ { "-all" }, 1, 0, "skipping unknown source specified in core.labelSources: \"-all\"" },
		{ { NULL }, 0, 0, NULL },
	};
	struct fb_errinfo ei;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nfd_strlist l = { 0 };
		unsigned long long m;
		char name[128];

		nfdconf_list_set(&l, cases[i].items, cases[i].n);
		log_reset();
		m = nfdconf_sources_mask(&l, known, 7, all, "core.labelSources", &lg);
		log_text();
		snprintf(name, sizeof(name), "sources mask: [%s]", joined(&l));
		T_OK(name, m == cases[i].want &&
		     (cases[i].log ? strstr(logbuf, cases[i].log) != NULL : logbuf[0] == '\0'),
		     "mask=%#llx log=%s", m, logbuf);
		free(l.own_);
	}
	{
		static const char *const a[] = { "ds", "node", "pod" }, *const b[] = { "pod", "x" };
		struct nfd_strlist l = { 0 };

		nfdconf_list_set(&l, a, 3);
		T_INT("ownerRefs: all three", nfdconf_owner_refs(&l, &ei), 7);
		nfdconf_list_set(&l, a, 0);
		T_INT("ownerRefs: none", nfdconf_owner_refs(&l, &ei), 0);
		nfdconf_list_set(&l, b, 2);
		T_OK("ownerRefs: unknown kind", nfdconf_owner_refs(&l, &ei) == -FB_EINVAL &&
		     strstr(ei.detail, "\"x\""), "detail=%s", ei.detail);
		free(l.own_);
	}
}

static void test_files(void)
{
	char tmpl[] = "/tmp/fb-nfdconf-XXXXXX", p[256], q[512];
	char *dir = mkdtemp(tmpl);
	struct nfd_worker_config c;
	struct fb_errinfo ei;
	int fd, rc;

	nfdconf_init(&c);
	snprintf(p, sizeof(p), "%s/nfd-worker.conf", dir);
	log_reset();
	rc = nfdconf_load_file(&c, p, &lg, &ei);
	T_OK("file: a missing file is defaults, logged", rc == 0 && c.core.sleep_interval_ms == 60000 &&
	     strstr(log_text(), "not found, using defaults"), "rc=%d log=%s", rc, logbuf);

	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "core:\n  sleepInterval: 10s\n  noPublish: true\n", 45) != 45)
		abort();
	close(fd);
	rc = nfdconf_load_file(&c, p, &lg, &ei);
	T_OK("file: read and applied", rc == 0 && c.core.sleep_interval_ms == 10000 && c.core.no_publish,
	     "rc=%d", rc);
	rc = nfdconf_apply_yaml(&c, "{core: {sleepInterval: 20s}}", 28, "--options", &lg, &ei);
	T_OK("file then --options: options win, the rest stays", rc == 0 &&
	     c.core.sleep_interval_ms == 20000 && c.core.no_publish, "rc=%d", rc);

	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0 || write(fd, "core:\n  noPublish: 1\n", 21) != 21)
		abort();
	close(fd);
	rc = nfdconf_load_file(&c, p, &lg, &ei);
	T_OK("file: errors name the file", rc == -FB_EINVAL && !strcmp(ei.what, p) &&
	     strstr(ei.detail, "line 2 column 3: core.noPublish"), "rc=%d what=%s detail=%s", rc, ei.what,
	     ei.detail);
	rc = nfdconf_load_file(&c, dir, &lg, &ei);
	T_OK("file: a directory is refused", rc == -FB_EINVAL || rc == -FB_EIO, "rc=%d", rc);
	nfdconf_free(&c);
	snprintf(q, sizeof(q), "rm -rf '%s'", dir);
	if (system(q) != 0)
		abort();
}

/* ---- nfd-master.conf: the same walker over the master's table ---------- */

static const struct {
	const char *name, *yaml;
	int rc;
	const char *err;  /* fb_errinfo_str, or NULL */
	const char *warn; /* in the log, or NULL */
} master_cases[] = {
	{ "empty", "", 0, NULL, NULL },
	{ "null", "null", 0, NULL, NULL },
	{ "a list", "[1]", -FB_EINVAL, "--options: not a mapping of options", NULL },
	{ "a bool", "noPublish: 3", -FB_EINVAL, "--options: noPublish: not true or false", NULL },
	{ "case: exact spelling wins", "{NoPublish: 3, noPublish: true}", 0, NULL, NULL },
	{ "case: first other spelling", "{NOPUBLISH: 3, NoPublish: true}", -FB_EINVAL,
	  "--options: noPublish: not true or false", NULL },
	{ "table order, not document order", "{resyncPeriod: x, enableTaints: 3}", -FB_EINVAL,
	  "--options: enableTaints: not true or false", NULL },
	{ "a list", "extraLabelNs: a", -FB_EINVAL, "--options: extraLabelNs: not a list", NULL },
	{ "list items", "denyLabelNs: [a, 1]", -FB_EINVAL, "--options: denyLabelNs: list items must be strings",
	  NULL },
	{ "a duration", "resyncPeriod: soon", -FB_EINVAL, "--options: resyncPeriod: not a duration (like 1h, 90s)",
	  NULL },
	{ "nested duration", "leaderElection: {retryPeriod: 1.5}", -FB_EINVAL,
	  "--options: leaderElection.retryPeriod: not a duration (like 1h, 90s)", NULL },
	{ "leaderElection not a mapping: ignored", "leaderElection: [1]", 0, NULL, NULL },
	{ "page size", "informerPageSize: 100001", -FB_EINVAL,
	  "--options: informerPageSize: not a number from 0 to 100000", NULL },
	{ "klog.v", "klog: {v: [1]}", -FB_EINVAL, "--options: klog.v: not a number", NULL },
	{ "klog.v: text is strtol's (as before)", "klog: {v: x}", 0, NULL, NULL },
	{ "whitelist", "labelWhiteList: 3", -FB_EINVAL, "--options: labelWhiteList: not a string", NULL },
	{ "restrictions: not a mapping", "restrictions: 3", -FB_EINVAL, "--options: restrictions: not a mapping",
	  NULL },
	{ "restrictions: unknown key", "restrictions: {disableLabels: true, bogus: 1}", -FB_EINVAL,
	  "--options: restrictions.bogus: not implemented: refusing to start (ignoring a restriction would fail open)",
	  NULL },
	{ "restrictions: bool", "restrictions: {AllowOverwrite: 3}", -FB_EINVAL,
	  "--options: restrictions.allowOverwrite: not true or false", NULL },
	{ "restrictions: selector", "restrictions: {nodeFeatureNamespaceSelector: {matchExpressions: [{key: a, operator: Foo}]}}",
	  -FB_EINVAL, "--options: restrictions.nodeFeatureNamespaceSelector: ", NULL },
	{ "autoDefaultNs: false is read", "autoDefaultNs: false", 0, NULL, NULL },
	{ "autoDefaultNs: not a bool", "autoDefaultNs: sometimes", -FB_EINVAL, "--options: autoDefaultNs: not true or false",
	  NULL },
	{ "unknown key warns", "{zz: 1, noPublish: true}", 0, NULL, "--options: unknown key zz, ignored" },
	{ "known, not read here", "nfdApiParallelism: [1]", 0, NULL, NULL },
};

static void test_master(void)
{
	struct nfd_master_config c;
	struct fb_errinfo ei;
	char name[160], msg[1300];
	int fd;

	for (size_t i = 0; i < sizeof(master_cases) / sizeof(master_cases[0]); i++) {
		int rc;

		nfdconf_master_init(&c);
		fb_errinfo_init(&ei);
		log_reset();
		rc = nfdconf_master_apply_yaml(&c, master_cases[i].yaml, strlen(master_cases[i].yaml), "--options", &lg,
					       &ei);
		snprintf(name, sizeof(name), "master: %s", master_cases[i].name);
		T_INT(name, rc, master_cases[i].rc);
		if (master_cases[i].err) {
			fb_errinfo_str(&ei, msg, sizeof(msg));
			T_OK(name, strncmp(msg, master_cases[i].err, strlen(master_cases[i].err)) == 0, "got \"%s\"", msg);
		}
		if (master_cases[i].warn)
			T_OK(name, strstr(log_text(), master_cases[i].warn) != NULL, "log \"%s\"", log_text());
		nfdconf_master_free(&c);
	}

	nfdconf_master_init(&c);
	T_OK("master: defaults", c.allow_overwrite == 1 && c.auto_default_ns == 1 && c.resync_ms == 3600000 &&
		 c.lease_ms == 15000 && c.renew_ms == 10000 && c.retry_ms == 2000 && c.page_size == 50 &&
		 !c.have_klog_v && !c.whitelist && c.extra_ns.n == 0 && !c.ns_query[0], "bad defaults");
#define MAPPLY(text, what) nfdconf_master_apply_yaml(&c, text, strlen(text), what, &lg, &ei)
	T_INT("master: values",
	      MAPPLY("noPublish: true\nenableTaints: true\nextraLabelNs: [a.io, b.io]\n"
					"resyncPeriod: 1.5m\nlabelWhiteList: '^x'\n"
					"leaderElection: {leaseDuration: 20s, renewDeadline: 3000000000, retryPeriod: 1h1ms}\n"
					"informerPageSize: 0\nklog: {v: '4'}\nautoDefaultNs: false\n"
					"restrictions: {allowOverwrite: false, disableLabels: true, "
					"nodeFeatureNamespaceSelector: {matchLabels: {team: a}}}\n", "f"), 0);
	T_OK("master: values stored", c.no_publish && c.enable_taints && c.resync_ms == 90000 && c.lease_ms == 20000 &&
		 c.renew_ms == 3000 && c.retry_ms == 3600001 && c.page_size == 0 && c.have_klog_v && c.klog_v == 4 &&
		 !c.allow_overwrite && c.disable_labels && c.whitelist && !strcmp(c.whitelist, "^x") &&
		 !c.auto_default_ns,
	     "resync=%lld lease=%lld renew=%lld retry=%lld", c.resync_ms, c.lease_ms, c.renew_ms, c.retry_ms);
	T_LIST("master: extraLabelNs", c.extra_ns, "a.io,b.io");
	T_STR("master: selector encoded", c.ns_query, "team%3Da");
	/* a later document: given members replace, others stay, null leaves */
	T_INT("master: --options over the file",
	      MAPPLY("extraLabelNs: [c.io]\ndenyLabelNs: null\nlabelWhiteList: null\n", "--options"), 0);
	T_LIST("master: list replaced", c.extra_ns, "c.io");
	T_OK("master: others kept", c.no_publish && c.whitelist && !strcmp(c.whitelist, "^x"), "lost");
	/* a bad document leaves the config as it was */
	T_INT("master: bad document", MAPPLY("extraLabelNs: [d.io]\nnoPublish: 3\n", "--options"), -FB_EINVAL);
	T_LIST("master: unchanged after an error", c.extra_ns, "c.io");
	nfdconf_master_free(&c);

	/* files: missing is defaults, unreadable says "reading PATH" */
	nfdconf_master_init(&c);
	log_reset();
	T_INT("master: missing file", nfdconf_master_load_file(&c, "/nonexistent/nfd-master.conf", &lg, &ei), 0);
	T_OK("master: missing file logged", strstr(log_text(), "config file /nonexistent/nfd-master.conf not found, "
				  "using defaults") != NULL, "%s", log_text());
	T_INT("master: a directory", nfdconf_master_load_file(&c, "/", &lg, &ei), -FB_EINVAL);
	T_STR("master: a directory: message", fb_errinfo_str(&ei, msg, sizeof(msg)), "reading /: invalid value");
	{
		char path[] = "/tmp/fb-nfdmaster-XXXXXX";

		fd = mkstemp(path);
		if (fd >= 0) {
			T_OK("master: file written", write(fd, "resyncPeriod: 2m\n", 17) == 17, "short write");
			close(fd);
			T_INT("master: file", nfdconf_master_load_file(&c, path, &lg, &ei), 0);
			T_INT("master: file value", c.resync_ms, 120000);
			unlink(path);
		}
	}
	nfdconf_master_free(&c);
}

int main(void)
{
	char logtmpl[] = "/tmp/fb-nfdconf-log-XXXXXX";

	t_suite = "nfdconf";
	log_init(&lg);
	lg.fd = mkstemp(logtmpl);
	if (lg.fd < 0)
		return 2;
	unlink(logtmpl);
	test_defaults();
	test_example();
	test_values();
	test_sleep();
	test_errors();
	test_fake();
	test_warnings();
	test_helpers();
	test_files();
	test_master();
	close(lg.fd);
	return t_done();
}
