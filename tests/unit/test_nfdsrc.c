/* nfdsrc: NFD's built-in sources on the fixture hosts under
 * tests/fixtures/nfd/ (every feature and label written out), the pci/usb
 * label rules on hand-made device lists, label validity and the whitelist,
 * the corner cases of each parser on small trees made here, and the registry
 * with the local and custom sources. */
#include "t.h"

#include "../../core/cpuid.h"
#include "../../core/err.h"
#include "../../core/features.h"
#include "../../core/hostfs.h"
#include "../../core/nfdsrc.h"
#include "../../core/re.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NS "feature.node.kubernetes.io/"
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define L(...) ((struct nfdsrc_list){ (const char *const[]){ __VA_ARGS__ }, \
				      sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *) })

static const char *top = ".";
static struct fb_log quiet;

/* ---- helpers ------------------------------------------------------------ */

static char *print(const struct json *j)
{
	static char buf[16384];
	char *s = json_print(j, NULL);

	snprintf(buf, sizeof(buf), "%s", s ? s : "(absent)");
	free(s);
	return buf;
}

/* The names of a flag set, space-separated. */
static char *words(const struct json *el)
{
	static char buf[4096];
	size_t len = 0;

	buf[0] = '\0';
	if (!el)
		return strcpy(buf, "(absent)");
	for (const struct json *c = json_child(el); c; c = json_next(c))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? " " : "", json_key(c));
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "name=value" lines of the labels (default namespace shortened to "~"),
 * sorted, one string; caller frees. */
static char *label_lines(const struct json *labels)
{
	size_t n = json_count(labels), len = 0, size = 1;
	char **v = calloc(n + 1, sizeof(*v)), *out;
	size_t i = 0;

	for (const struct json *c = json_child(labels); c; c = json_next(c), i++) {
		const char *k = json_key(c);
		size_t l = strlen(k) + strlen(json_str(c) ? json_str(c) : "?") + 3;

		if (strncmp(k, NS, strlen(NS)) == 0)
			k += strlen(NS) - 1;
		v[i] = malloc(l);
		snprintf(v[i], l, "%s%s=%s", k == json_key(c) ? "" : "~", k == json_key(c) ? k : k + 1,
			 json_str(c) ? json_str(c) : "?");
		size += strlen(v[i]) + 1;
	}
	qsort(v, n, sizeof(*v), cmp_str);
	out = malloc(size);
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		len += (size_t)snprintf(out + len, size - len, "%s\n", v[i]);
		free(v[i]);
	}
	free(v);
	return out;
}

/* Same shape from an expected list ("~" stands for the namespace). */
static char *want_lines(const char *const *want, size_t n)
{
	size_t size = 1, len = 0;
	char **v = calloc(n + 1, sizeof(*v)), *out;

	for (size_t i = 0; i < n; i++) {
		v[i] = strdup(want[i]);
		size += strlen(want[i]) + 1;
	}
	qsort(v, n, sizeof(*v), cmp_str);
	out = malloc(size);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		len += (size_t)snprintf(out + len, size - len, "%s\n", v[i]);
		free(v[i]);
	}
	free(v);
	return out;
}

static void check_labels(const char *name, const struct json *labels, const char *const *want,
			 size_t n)
{
	char *got = label_lines(labels), *exp = want_lines(want, n);

	T_STR(name, got, exp);
	free(got);
	free(exp);
}

/* Expected features: flags as space-separated names, the others as the
 * compact JSON of their "elements". */
struct fexp {
	const char *kind, *key, *want;
};

static void check_features(const char *fx, struct features *f, const struct fexp *e, size_t n)
{
	static const char *const kinds[] = { "flags", "attributes", "instances" };
	char name[160];
	int extra = 0;

	features_sort(f);
	for (size_t i = 0; i < n; i++) {
		const struct json *el = json_getv(f->root, e[i].kind, e[i].key, "elements", NULL);

		snprintf(name, sizeof(name), "%s: %s %s", fx, e[i].kind, e[i].key);
		if (strcmp(e[i].kind, "flags") == 0)
			T_STR(name, words(el), e[i].want);
		else
			T_STR(name, print(el), e[i].want);
	}
	for (size_t k = 0; k < N(kinds); k++)
		for (const struct json *c = json_child(json_get(f->root, kinds[k])); c; c = json_next(c)) {
			size_t i;

			for (i = 0; i < n && !(strcmp(e[i].kind, kinds[k]) == 0 &&
					       strcmp(e[i].key, json_key(c)) == 0); i++)
				;
			if (i == n) {
				printf("FAIL: nfdsrc: %s: unexpected %s %s\n", fx, kinds[k], json_key(c));
				t_failed++;
				extra++;
			}
		}
	snprintf(name, sizeof(name), "%s: no other features", fx);
	T_INT(name, extra, 0);
}

static void fixture(struct hostfs *h, const char *fx)
{
	char p[HOSTFS_PREFIX_MAX];

	snprintf(p, sizeof(p), "%s/tests/fixtures/nfd/%s/", top, fx);
	hostfs_init(h);
	hostfs_setup(h, p);
}

/* Every file-reading source over the host h, each expected to return 0. */
static void run_all(const char *fx, const struct hostfs *h, const struct nfdsrc_config *c,
		    struct features *f, struct json *labels)
{
	char name[96];

	snprintf(name, sizeof(name), "%s: cpu", fx);
	T_INT(name, nfdsrc_cpu(h, c, f, labels, &quiet), 0);
	snprintf(name, sizeof(name), "%s: kernel", fx);
	T_INT(name, nfdsrc_kernel(h, c, f, labels, &quiet), 0);
	snprintf(name, sizeof(name), "%s: memory", fx);
	T_INT(name, nfdsrc_memory(h, f, labels, &quiet), 0);
	snprintf(name, sizeof(name), "%s: network", fx);
	T_INT(name, nfdsrc_network(h, f, labels, &quiet), 0);
	snprintf(name, sizeof(name), "%s: storage", fx);
	T_INT(name, nfdsrc_storage(h, f, labels, &quiet), 0);
	snprintf(name, sizeof(name), "%s: system", fx);
	T_INT(name, nfdsrc_system(h, "node-1", f, labels, &quiet), 0);
}

/* Labels of one source prefix ("cpu-cpuid."), shortened as label_lines does. */
static char *labels_with(const struct json *labels, const char *prefix)
{
	struct json *sub = json_new_object();
	char key[256], *out;

	snprintf(key, sizeof(key), NS "%s", prefix);
	for (const struct json *c = json_child(labels); c; c = json_next(c))
		if (strncmp(json_key(c), key, strlen(key)) == 0)
			json_set_str(sub, json_key(c), json_str(c));
	out = label_lines(sub);
	json_free(sub);
	return out;
}

/* ---- small trees made here ---------------------------------------------- */

static char tmp[64];

static void tmp_new(void)
{
	strcpy(tmp, "/tmp/fb-nfdsrc-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		exit(2);
	}
}

static void tmp_put(const char *rel, const char *content)
{
	char path[512];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	for (char *s = path + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	if (!(fp = fopen(path, "w")) || fputs(content, fp) < 0 || fclose(fp) != 0) {
		perror(path);
		exit(2);
	}
}

/* A symlink rel -> target, parents made. */
static void tmp_link(const char *rel, const char *target)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	for (char *s = path + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	if (symlink(target, path) != 0) {
		perror(path);
		exit(2);
	}
}

static void tmp_done(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		perror(cmd);
}

static void tmp_hostfs(struct hostfs *h)
{
	char p[96];

	snprintf(p, sizeof(p), "%s/", tmp);
	hostfs_init(h);
	hostfs_setup(h, p);
}

/* ---- the fixtures -------------------------------------------------------- */

static const struct fexp x86_features[] = {
	{ "flags", "cpu.cpuid",
	  "ADX AESNI AMXFP8 AVX AVX2 AVX512BW AVX512CD AVX512DQ AVX512F AVX512VL AVX512VNNI BMI1 BMI2 "
	  "CLMUL CMOV CMPXCHG8 CX16 ERMS F16C FLUSH_L1D FMA3 FXSR FXSROPT HLE HTT IA32_ARCH_CAP IBPB "
	  "LAHF LZCNT MD_CLEAR MMX MOVBE MPX NX OSXSAVE PMU_FIXEDCOUNTER_CYCLES "
	  "PMU_FIXEDCOUNTER_INSTRUCTIONS PMU_FIXEDCOUNTER_REFCYCLES POPCNT RDRAND RDSEED RDTSCP RTM "
	  "SPEC_CTRL_SSBD SSE SSE2 SSE3 SSE4 SSE42 SSSE3 STIBP SYSCALL SYSEE VMX X86_64_V1 X86_64_V2 "
	  "X86_64_V3 X86_64_V4 X87 XGETBV1 XSAVE XSAVEC XSAVEOPT XSAVES" },
	{ "flags", "kernel.enabledmodule",
	  "bridge crc32c-intel ext4 ixgbe kvm kvm_intel llc nvme stp zlib_inflate" },
	{ "flags", "kernel.loadedmodule", "bridge ixgbe kvm kvm_intel llc nvme stp" },
	{ "attributes", "cpu.coprocessor", "{}" },
	{ "attributes", "cpu.cpuid", "{}" },
	{ "attributes", "cpu.cstate", "{\"enabled\":\"true\"}" },
	{ "attributes", "cpu.model",
	  "{\"family\":\"6\",\"hypervisor\":\"none\",\"id\":\"85\",\"vendor_id\":\"Intel\"}" },
	{ "attributes", "cpu.pstate",
	  "{\"scaling_governor\":\"performance\",\"status\":\"active\",\"turbo\":\"true\"}" },
	{ "attributes", "cpu.rdt",
	  "{\"RDTCMT\":\"true\",\"RDTL3CA\":\"true\",\"RDTMBA\":\"true\",\"RDTMBM\":\"true\",\"RDTMON\":\"true\"}" },
	{ "attributes", "cpu.security", "{}" },
	{ "attributes", "cpu.sst", "{}" },
	{ "attributes", "cpu.topology", "{\"hardware_multithreading\":\"true\",\"socket_count\":\"2\"}" },
	{ "attributes", "kernel.config",
	  "{\"CC_IS_GCC\":\"y\",\"CC_VERSION_TEXT\":\"gcc-12 (Debian 12.2.0-14) 12.2.0\","
	  "\"DEFAULT_HOSTNAME\":\"(none)\",\"GCC_VERSION\":\"120200\",\"HIGH_RES_TIMERS\":\"y\","
	  "\"HZ\":\"250\",\"HZ_250\":\"y\",\"KVM\":\"m\",\"KVM_INTEL\":\"m\",\"LOCALVERSION\":\"\","
	  "\"NO_HZ\":\"y\",\"NO_HZ_COMMON\":\"y\",\"NO_HZ_IDLE\":\"y\",\"PREEMPT_BUILD\":\"y\","
	  "\"PREEMPT_COUNT\":\"y\",\"PREEMPT_DYNAMIC\":\"y\",\"PREEMPT_VOLUNTARY\":\"y\"}" },
	{ "attributes", "kernel.kvm", "{\"enabled\":\"true\"}" },
	{ "attributes", "kernel.selinux", "{\"enabled\":\"false\"}" },
	{ "attributes", "kernel.version",
	  "{\"full\":\"6.1.0-18-amd64\",\"major\":\"6\",\"minor\":\"1\",\"revision\":\"0\"}" },
	{ "attributes", "memory.hugepages",
	  "{\"enabled\":\"true\",\"hugepages-1Gi\":\"4\",\"hugepages-2Mi\":\"1024\"}" },
	{ "attributes", "memory.numa", "{\"is_numa\":\"true\",\"node_count\":\"2\"}" },
	{ "attributes", "memory.swap", "{\"enabled\":\"true\"}" },
	{ "attributes", "system.dmiid",
	  "{\"bios_date\":\"06/12/2023\",\"bios_vendor\":\"Dell Inc.\",\"bios_version\":\"2.19.1\","
	  "\"board_name\":\"0H28RR\",\"board_vendor\":\"Dell Inc.\",\"chassis_type\":\"23\","
	  "\"chassis_vendor\":\"Dell Inc.\",\"product_name\":\"PowerEdge R640\","
	  "\"product_sku\":\"SKU=0716;ModelName=PowerEdge R640\",\"sys_vendor\":\"Dell Inc.\"}" },
	{ "attributes", "system.name", "{\"nodename\":\"node-1\"}" },
	{ "attributes", "system.osrelease",
	  "{\"BUG_REPORT_URL\":\"https://bugs.debian.org/\",\"HOME_URL\":\"https://www.debian.org/\","
	  "\"ID\":\"debian\",\"NAME\":\"Debian GNU/Linux\",\"PRETTY_NAME\":\"Debian GNU/Linux 12 "
	  "(bookworm)\",\"SUPPORT_URL\":\"https://www.debian.org/support\",\"VERSION\":\"12 "
	  "(bookworm)\",\"VERSION_CODENAME\":\"bookworm\",\"VERSION_ID\":\"12\","
	  "\"VERSION_ID.major\":\"12\"}" },
	{ "instances", "memory.nv",
	  "[{\"attributes\":{\"devtype\":\"nd_dax\",\"name\":\"dax0.0\"}},{\"attributes\":"
	  "{\"devtype\":\"nd_namespace_pmem\",\"mode\":\"devdax\",\"name\":\"namespace0.0\"}},"
	  "{\"attributes\":{\"name\":\"ndbus0\"}},{\"attributes\":{\"devtype\":\"nvdimm\","
	  "\"name\":\"nmem0\"}},{\"attributes\":{\"devtype\":\"nd_pmem\",\"name\":\"region0\"}}]" },
	{ "instances", "network.device",
	  "[{\"attributes\":{\"mtu\":\"1500\",\"name\":\"eno1\",\"operstate\":\"up\",\"speed\":\"1000\"}},"
	  "{\"attributes\":{\"mtu\":\"9000\",\"name\":\"ens1f0\",\"operstate\":\"up\",\"speed\":\"10000\","
	  "\"sriov_numvfs\":\"8\",\"sriov_totalvfs\":\"64\"}},{\"attributes\":{\"mtu\":\"1500\","
	  "\"name\":\"ens1f1\",\"operstate\":\"down\",\"sriov_numvfs\":\"0\",\"sriov_totalvfs\":\"64\"}}]" },
	{ "instances", "network.virtual",
	  "[{\"attributes\":{\"mtu\":\"1500\",\"name\":\"br0\",\"operstate\":\"up\"}},"
	  "{\"attributes\":{\"mtu\":\"65536\",\"name\":\"lo\",\"operstate\":\"unknown\"}}]" },
	{ "instances", "storage.block",
	  "[{\"attributes\":{\"dax\":\"0\",\"name\":\"nvme0n1\",\"nr_zones\":\"0\",\"rotational\":\"0\","
	  "\"zoned\":\"none\"}},{\"attributes\":{\"dax\":\"0\",\"name\":\"sda\",\"nr_zones\":\"0\","
	  "\"rotational\":\"1\",\"zoned\":\"none\"}}]" },
};

/* the default blacklist hides BMI1 BMI2 CLMUL CMOV CX16 ERMS F16C HTT LZCNT
 * MMX NX POPCNT RDRAND RDSEED RDTSCP SSE SSE2 SSE3 SSE4 SSE42 SSSE3 */
static const char *const x86_labels[] = {
	"~cpu-cpuid.ADX=true", "~cpu-cpuid.AESNI=true", "~cpu-cpuid.AMXFP8=true",
	"~cpu-cpuid.AVX=true", "~cpu-cpuid.AVX2=true", "~cpu-cpuid.AVX512BW=true",
	"~cpu-cpuid.AVX512CD=true", "~cpu-cpuid.AVX512DQ=true", "~cpu-cpuid.AVX512F=true",
	"~cpu-cpuid.AVX512VL=true", "~cpu-cpuid.AVX512VNNI=true", "~cpu-cpuid.CMPXCHG8=true",
	"~cpu-cpuid.FLUSH_L1D=true", "~cpu-cpuid.FMA3=true", "~cpu-cpuid.FXSR=true",
	"~cpu-cpuid.FXSROPT=true", "~cpu-cpuid.HLE=true", "~cpu-cpuid.IA32_ARCH_CAP=true", "~cpu-cpuid.IBPB=true",
	"~cpu-cpuid.LAHF=true", "~cpu-cpuid.MD_CLEAR=true", "~cpu-cpuid.MOVBE=true",
	"~cpu-cpuid.MPX=true", "~cpu-cpuid.OSXSAVE=true", "~cpu-cpuid.PMU_FIXEDCOUNTER_CYCLES=true",
	"~cpu-cpuid.PMU_FIXEDCOUNTER_INSTRUCTIONS=true", "~cpu-cpuid.PMU_FIXEDCOUNTER_REFCYCLES=true",
	"~cpu-cpuid.RTM=true", "~cpu-cpuid.SPEC_CTRL_SSBD=true", "~cpu-cpuid.STIBP=true", "~cpu-cpuid.SYSCALL=true",
	"~cpu-cpuid.SYSEE=true", "~cpu-cpuid.VMX=true", "~cpu-cpuid.X86_64_V1=true",
	"~cpu-cpuid.X86_64_V2=true", "~cpu-cpuid.X86_64_V3=true", "~cpu-cpuid.X86_64_V4=true",
	"~cpu-cpuid.X87=true", "~cpu-cpuid.XGETBV1=true", "~cpu-cpuid.XSAVE=true",
	"~cpu-cpuid.XSAVEC=true", "~cpu-cpuid.XSAVEOPT=true", "~cpu-cpuid.XSAVES=true",
	"~cpu-cstate.enabled=true", "~cpu-hardware_multithreading=true", "~cpu-model.family=6",
	"~cpu-model.hypervisor=none", "~cpu-model.id=85", "~cpu-model.vendor_id=Intel",
	"~cpu-pstate.scaling_governor=performance", "~cpu-pstate.status=active",
	"~cpu-pstate.turbo=true", "~kernel-config.NO_HZ=true", "~kernel-config.NO_HZ_IDLE=true",
	"~kernel-version.full=6.1.0-18-amd64", "~kernel-version.major=6", "~kernel-version.minor=1",
	"~kernel-version.revision=0", "~memory-numa=true", "~memory-nv.dax=true",
	"~memory-nv.present=true", "~memory-swap=true", "~network-sriov.capable=true",
	"~network-sriov.configured=true", "~storage-nonrotationaldisk=true",
	"~system-os_release.ID=debian", "~system-os_release.VERSION_ID=12",
	"~system-os_release.VERSION_ID.major=12",
};

static const struct fexp rpi4_features[] = {
	{ "flags", "cpu.cpuid", "ASIMD CPUID CRC32 EVTSTRM FP" },
	{ "flags", "kernel.loadedmodule", "brcmfmac brcmutil snd_soc_hdmi_codec v3d vc4" },
	{ "attributes", "cpu.coprocessor", "{}" },
	{ "attributes", "cpu.cstate", "{}" },
	{ "attributes", "cpu.model",
	  "{\"family\":\"15\",\"hypervisor\":\"none\",\"id\":\"53379\",\"vendor_id\":\"ARM\"}" },
	{ "attributes", "cpu.pstate", "{}" },
	{ "attributes", "cpu.rdt", "{}" },
	{ "attributes", "cpu.security", "{}" },
	{ "attributes", "cpu.sst", "{}" },
	{ "attributes", "cpu.topology", "{\"hardware_multithreading\":\"false\",\"socket_count\":\"1\"}" },
	/* the linux-headers copy: earlier in the search list than /boot's */
	{ "attributes", "kernel.config",
	  "{\"ARCH_BCM2835\":\"y\",\"BRCMFMAC\":\"m\",\"CC_VERSION_TEXT\":\"aarch64-linux-gnu-gcc-13 "
	  "(Ubuntu 13.2.0-23ubuntu3) 13.2.0\",\"HZ\":\"250\",\"NO_HZ\":\"y\",\"NO_HZ_COMMON\":\"y\","
	  "\"NO_HZ_IDLE\":\"y\",\"PREEMPT\":\"y\",\"PREEMPT_BUILD\":\"y\",\"PREEMPT_COUNT\":\"y\"}" },
	{ "attributes", "kernel.kvm", "{\"enabled\":\"false\"}" },
	{ "attributes", "kernel.selinux", "{\"enabled\":\"false\"}" },
	{ "attributes", "kernel.version",
	  "{\"full\":\"6.8.0-1004-raspi\",\"major\":\"6\",\"minor\":\"8\",\"revision\":\"0\"}" },
	{ "attributes", "memory.hugepages",
	  "{\"enabled\":\"false\",\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\","
	  "\"hugepages-32Mi\":\"0\",\"hugepages-64Ki\":\"0\"}" },
	{ "attributes", "memory.numa", "{\"is_numa\":\"false\",\"node_count\":\"1\"}" },
	{ "attributes", "memory.swap", "{\"enabled\":\"false\"}" },
	{ "attributes", "system.name", "{\"nodename\":\"node-1\"}" },
	{ "attributes", "system.osrelease",
	  "{\"BUG_REPORT_URL\":\"https://bugs.launchpad.net/ubuntu/\",\"HOME_URL\":"
	  "\"https://www.ubuntu.com/\",\"ID\":\"ubuntu\",\"ID_LIKE\":\"debian\",\"LOGO\":\"ubuntu-logo\","
	  "\"NAME\":\"Ubuntu\",\"PRETTY_NAME\":\"Ubuntu 24.04 LTS\",\"PRIVACY_POLICY_URL\":"
	  "\"https://www.ubuntu.com/legal/terms-and-policies/privacy-policy\",\"SUPPORT_URL\":"
	  "\"https://help.ubuntu.com/\",\"UBUNTU_CODENAME\":\"noble\",\"VERSION\":\"24.04 LTS (Noble "
	  "Numbat)\",\"VERSION_CODENAME\":\"noble\",\"VERSION_ID\":\"24.04\",\"VERSION_ID.major\":\"24\","
	  "\"VERSION_ID.minor\":\"04\"}" },
	{ "instances", "memory.nv", "[]" },
	{ "instances", "network.device",
	  "[{\"attributes\":{\"mtu\":\"1500\",\"name\":\"eth0\",\"operstate\":\"up\",\"speed\":\"1000\"}},"
	  "{\"attributes\":{\"mtu\":\"1500\",\"name\":\"wlan0\",\"operstate\":\"dormant\"}}]" },
	{ "instances", "network.virtual",
	  "[{\"attributes\":{\"mtu\":\"65536\",\"name\":\"lo\",\"operstate\":\"unknown\"}}]" },
	{ "instances", "storage.block",
	  "[{\"attributes\":{\"dax\":\"0\",\"name\":\"mmcblk0\",\"nr_zones\":\"0\",\"rotational\":\"0\","
	  "\"zoned\":\"none\"}}]" },
};

static const char *const rpi4_labels[] = {
	"~cpu-cpuid.ASIMD=true", "~cpu-cpuid.CPUID=true", "~cpu-cpuid.CRC32=true",
	"~cpu-cpuid.EVTSTRM=true", "~cpu-cpuid.FP=true", "~cpu-hardware_multithreading=false",
	"~cpu-model.family=15", "~cpu-model.hypervisor=none", "~cpu-model.id=53379",
	"~cpu-model.vendor_id=ARM", "~kernel-config.NO_HZ=true", "~kernel-config.NO_HZ_IDLE=true",
	"~kernel-config.PREEMPT=true", "~kernel-version.full=6.8.0-1004-raspi",
	"~kernel-version.major=6", "~kernel-version.minor=8", "~kernel-version.revision=0",
	"~storage-nonrotationaldisk=true", "~system-os_release.ID=ubuntu",
	"~system-os_release.VERSION_ID=24.04", "~system-os_release.VERSION_ID.major=24",
	"~system-os_release.VERSION_ID.minor=04",
};

static void test_fixtures(void)
{
	struct nfdsrc_config c;
	struct hostfs h;
	struct features f;
	struct json *labels;

	nfdsrc_config_init(&c);

	fixture(&h, "x86-server");
	features_init(&f);
	labels = json_new_object();
	run_all("x86-server", &h, &c, &f, labels);
	check_features("x86-server", &f, x86_features, N(x86_features));
	T_INT("x86-server: all labels valid", nfdsrc_labels_filter(labels, NULL, &quiet), 0);
	check_labels("x86-server: labels", labels, x86_labels, N(x86_labels));
	features_free(&f);
	json_free(labels);

	fixture(&h, "rpi4");
	features_init(&f);
	labels = json_new_object();
	run_all("rpi4", &h, &c, &f, labels);
	check_features("rpi4", &f, rpi4_features, N(rpi4_features));
	T_INT("rpi4: all labels valid", nfdsrc_labels_filter(labels, NULL, &quiet), 0);
	check_labels("rpi4: labels", labels, rpi4_labels, N(rpi4_labels));
	features_free(&f);
	json_free(labels);

	/* no labels object: the same features, nothing else touched */
	fixture(&h, "rpi4");
	features_init(&f);
	run_all("rpi4 without labels", &h, &c, &f, NULL);
	check_features("rpi4 without labels", &f, rpi4_features, N(rpi4_features));
	features_free(&f);
}

/* ---- source options on the x86 fixture ----------------------------------- */

static void test_options(void)
{
	struct nfdsrc_config c;
	struct hostfs h;
	struct features f;
	struct json *labels;
	char *got, kc[128];

	fixture(&h, "x86-server");

	/* a non-empty attributeWhitelist wins over the blacklist */
	nfdsrc_config_init(&c);
	c.cpu_whitelist = L("AVX512F", "SSE", "NOPE");
	features_init(&f);
	labels = json_new_object();
	nfdsrc_cpu(&h, &c, &f, labels, &quiet);
	got = labels_with(labels, "cpu-cpuid.");
	T_STR("cpuid attributeWhitelist", got, "~cpu-cpuid.AVX512F=true\n~cpu-cpuid.SSE=true\n");
	free(got);
	T_INT("...features unfiltered", json_count(features_flags(&f, "cpu.cpuid")), 64);
	features_free(&f);
	json_free(labels);

	/* an empty blacklist labels every flag */
	nfdsrc_config_init(&c);
	c.cpu_blacklist = (struct nfdsrc_list){ NULL, 0 };
	features_init(&f);
	labels = json_new_object();
	nfdsrc_cpu(&h, &c, &f, labels, &quiet);
	T_OK("empty attributeBlacklist: every flag labelled",
	     json_get(labels, NS "cpu-cpuid.SSE42") && json_get(labels, NS "cpu-cpuid.HTT") &&
	     json_count(labels) == 64 + 9, "%zu labels", json_count(labels));
	features_free(&f);
	json_free(labels);

	/* configOpts: y/m give "true", other values themselves, "" too */
	nfdsrc_config_init(&c);
	c.kernel_config_opts = L("HZ", "PREEMPT_VOLUNTARY", "PREEMPT", "LOCALVERSION", "KVM", "NOPE");
	features_init(&f);
	labels = json_new_object();
	nfdsrc_kernel(&h, &c, &f, labels, &quiet);
	got = labels_with(labels, "kernel-config.");
	T_STR("configOpts", got,
	      "~kernel-config.HZ=250\n~kernel-config.KVM=true\n~kernel-config.LOCALVERSION=\n"
	      "~kernel-config.PREEMPT_VOLUNTARY=true\n");
	free(got);
	features_free(&f);
	json_free(labels);

	/* kconfigFile: taken as it is (not under the host prefix); the last of
	 * a repeated option wins; quotes trimmed; only y/m unquoted are "true" */
	tmp_new();
	tmp_put("kconfig", "CONFIG_A=y\nCONFIG_B=\"y\"\nCONFIG_A=m\nCONFIG_C=\"quoted\"\n"
			   "  CONFIG_D=y\nCONFIG_E\n# CONFIG_F is not set\nCONFIG_G=\"\"x\"\"\n"
			   "CONFIG_H=a=b\nCONFIG_PREEMPT=y\r\n");
	snprintf(kc, sizeof(kc), "%s/kconfig", tmp);
	nfdsrc_config_init(&c);
	c.kernel_kconfig_file = kc;
	c.kernel_config_opts = L("A", "B", "C", "D", "G", "H", "PREEMPT");
	features_init(&f);
	labels = json_new_object();
	nfdsrc_kernel(&h, &c, &f, labels, &quiet);
	T_STR("kconfigFile: features", print(features_attrs(&f, "kernel.config")),
	      "{\"A\":\"m\",\"B\":\"y\",\"C\":\"quoted\",\"G\":\"x\",\"H\":\"a=b\",\"PREEMPT\":\"y\\r\"}");
	got = labels_with(labels, "kernel-config.");
	T_STR("kconfigFile: labels", got,
	      "~kernel-config.A=true\n~kernel-config.B=y\n~kernel-config.C=quoted\n"
	      "~kernel-config.G=x\n~kernel-config.H=a=b\n~kernel-config.PREEMPT=y\r\n");
	free(got);
	T_INT("...the invalid ones dropped", nfdsrc_labels_filter(labels, NULL, &quiet), 2);
	features_free(&f);
	json_free(labels);
	tmp_done();

	/* a gzipped or missing kconfigFile: the search list still applies */
	nfdsrc_config_init(&c);
	c.kernel_kconfig_file = "/nonexistent/config.gz";
	features_init(&f);
	nfdsrc_kernel(&h, &c, &f, NULL, &quiet);
	T_STR("kconfigFile .gz skipped", json_get_str(features_attrs(&f, "kernel.config"), "HZ", "-"), "250");
	features_free(&f);
	c.kernel_kconfig_file = "/nonexistent/config";
	features_init(&f);
	nfdsrc_kernel(&h, &c, &f, NULL, &quiet);
	T_STR("kconfigFile missing: search list", json_get_str(features_attrs(&f, "kernel.config"), "HZ", "-"),
	      "250");
	features_free(&f);
}

/* ---- pci ----------------------------------------------------------------- */

static const struct pci_dev pci_devs[] = {
	{ .addr = "0000:00:02.0", .cls = "030000", .vendor = "8086", .device = "3e92",
	  .subsystem_vendor = "1028", .subsystem_device = "0869" },
	{ .addr = "0000:3b:00.0", .cls = "020000", .vendor = "8086", .device = "1572",
	  .subsystem_vendor = "8086", .subsystem_device = "0006", .has_sriov = 1,
	  .sriov_totalvfs = "64" },
	{ .addr = "0000:af:00.0", .cls = "030200", .vendor = "10de", .device = "1eb8",
	  .subsystem_vendor = "10de", .subsystem_device = "12a2", .has_sriov = 1,
	  .sriov_totalvfs = "0", .iommu_group = "42", .iommu_group_type = "DMA-FQ",
	  .iommu_version = "1:0" },
	{ .addr = "0000:b1:00.0", .cls = "0b4000", .vendor = "8086", .device = "37c8",
	  .subsystem_vendor = "8086", .subsystem_device = "0001", .has_sriov = 1,
	  .sriov_totalvfs = "16" },
	{ .addr = "0000:c1:00.0", .cls = "120000", .vendor = "1ded", .device = "8000",
	  .subsystem_vendor = "1ded", .subsystem_device = "8000" },
	{ .addr = "0000:d1:00.0", .cls = "0b4100", .vendor = "1234", .device = "5678",
	  .subsystem_vendor = "0000", .subsystem_device = "0000" },
};

static const struct {
	const char *name;
	struct nfdsrc_list classes, fields;
	int defaults;
	const char *want;
} pci_cases[] = {
	/* 030200 is a 3D controller: class 0302, still under "03" */
	{ "pci: defaults", { 0 }, { 0 }, 1,
	  "~pci-0300_8086.present=true\n~pci-0302_10de.present=true\n~pci-0302_10de.sriov.capable=true\n"
	  "~pci-0b40_8086.present=true\n~pci-0b40_8086.sriov.capable=true\n~pci-1200_1ded.present=true\n" },
	{ "pci: whitelist is a prefix match", L("0b"), L("class", "vendor"), 0,
	  "~pci-0b40_8086.present=true\n~pci-0b40_8086.sriov.capable=true\n~pci-0b41_1234.present=true\n" },
	{ "pci: whitelist lower-cased", L("0B40"), L("class", "vendor"), 0,
	  "~pci-0b40_8086.present=true\n~pci-0b40_8086.sriov.capable=true\n" },
	{ "pci: a NIC class", L("02"), L("class", "vendor"), 0,
	  "~pci-0200_8086.present=true\n~pci-0200_8086.sriov.capable=true\n" },
	{ "pci: fields in canonical order", L("03"), L("subsystem_device", "device", "vendor"), 0,
	  "~pci-10de_1eb8_12a2.present=true\n~pci-10de_1eb8_12a2.sriov.capable=true\n"
	  "~pci-8086_3e92_0869.present=true\n" },
	{ "pci: all five fields", L("12"),
	  L("subsystem_vendor", "subsystem_device", "device", "vendor", "class"), 0,
	  "~pci-1200_1ded_8000_1ded_8000.present=true\n" },
	{ "pci: unknown field ignored", L("12"), L("vendor", "bogus"), 0, "~pci-1ded.present=true\n" },
	{ "pci: no valid field: class_vendor", L("12"), L("bogus", "serial"), 0,
	  "~pci-1200_1ded.present=true\n" },
	{ "pci: empty field list: class_vendor", L("12"), { NULL, 0 }, 0, "~pci-1200_1ded.present=true\n" },
	{ "pci: empty whitelist: no labels", { NULL, 0 }, L("class", "vendor"), 0, "" },
	{ "pci: first matching entry only", L("03", "0300", "030"), L("class", "vendor"), 0,
	  "~pci-0300_8086.present=true\n~pci-0302_10de.present=true\n~pci-0302_10de.sriov.capable=true\n" },
	{ "pci: whitelist of a whole class", L("0300"), L("class", "vendor"), 0,
	  "~pci-0300_8086.present=true\n" },
};

static void test_pci(void)
{
	struct pci_list pl = { (struct pci_dev *)pci_devs, N(pci_devs), N(pci_devs) };
	struct pci_list none = { NULL, 0, 0 };
	struct nfdsrc_config c;
	struct features f;
	struct json *labels;
	char *got;

	for (size_t i = 0; i < N(pci_cases); i++) {
		nfdsrc_config_init(&c);
		if (!pci_cases[i].defaults) {
			c.pci_class_whitelist = pci_cases[i].classes;
			c.pci_label_fields = pci_cases[i].fields;
		}
		features_init(&f);
		labels = json_new_object();
		T_INT(pci_cases[i].name, nfdsrc_pci(&c, &pl, &f, labels, &quiet), 0);
		got = label_lines(labels);
		T_STR(pci_cases[i].name, got, pci_cases[i].want);
		free(got);
		features_free(&f);
		json_free(labels);
	}

	/* the features of the list, printed whole, as upstream would */
	nfdsrc_config_init(&c);
	features_init(&f);
	nfdsrc_pci(&c, &pl, &f, NULL, &quiet);
	features_sort(&f);
	T_STR("pci: features", print(f.root),
	      "{\"flags\":{},\"attributes\":{},\"instances\":{\"pci.device\":{\"elements\":["
	      "{\"attributes\":{\"class\":\"0300\",\"device\":\"3e92\",\"subsystem_device\":\"0869\","
	      "\"subsystem_vendor\":\"1028\",\"vendor\":\"8086\"}},"
	      "{\"attributes\":{\"class\":\"0200\",\"device\":\"1572\",\"sriov_totalvfs\":\"64\","
	      "\"subsystem_device\":\"0006\",\"subsystem_vendor\":\"8086\",\"vendor\":\"8086\"}},"
	      "{\"attributes\":{\"class\":\"0302\",\"device\":\"1eb8\",\"iommu/intel-iommu/version\":"
	      "\"1:0\",\"iommu_group/type\":\"DMA-FQ\",\"sriov_totalvfs\":\"0\",\"subsystem_device\":"
	      "\"12a2\",\"subsystem_vendor\":\"10de\",\"vendor\":\"10de\"}},"
	      "{\"attributes\":{\"class\":\"0b40\",\"device\":\"37c8\",\"sriov_totalvfs\":\"16\","
	      "\"subsystem_device\":\"0001\",\"subsystem_vendor\":\"8086\",\"vendor\":\"8086\"}},"
	      "{\"attributes\":{\"class\":\"1200\",\"device\":\"8000\",\"subsystem_device\":\"8000\","
	      "\"subsystem_vendor\":\"1ded\",\"vendor\":\"1ded\"}},"
	      "{\"attributes\":{\"class\":\"0b41\",\"device\":\"5678\",\"subsystem_device\":\"0000\","
	      "\"subsystem_vendor\":\"0000\",\"vendor\":\"1234\"}}]}}}");
	features_free(&f);

	features_init(&f);
	nfdsrc_pci(&c, &none, &f, NULL, &quiet);
	T_STR("pci: no devices is an empty set", print(features_instances(&f, "pci.device")), "[]");
	features_free(&f);
}

/* ---- usb ----------------------------------------------------------------- */

static const struct usb_dev usb_devs[] = {
	{ .name = "1-1", .cls = "09", .vendor = "2109", .product = "3431" },
	/* Coral Edge TPU before its firmware is loaded: per-interface class fe */
	{ .name = "1-1.1", .cls = "00", .vendor = "1a6e", .product = "089a", .niface = 1,
	  .iface_cls = { "fe" } },
	/* Intel NCS2 (Myriad X), unbooted: per-interface class ff */
	{ .name = "1-1.2", .cls = "00", .vendor = "03e7", .product = "2485", .niface = 1,
	  .iface_cls = { "ff" } },
	/* a webcam: video and audio interfaces, two of each */
	{ .name = "1-1.3", .cls = "00", .vendor = "046d", .product = "0825", .niface = 4,
	  .iface_cls = { "0e", "0e", "01", "01" } },
	{ .name = "1-1.4", .cls = "ff", .vendor = "0403", .product = "6001", .has_serial = 1,
	  .serial = "A50285BI" },
	{ .name = "1-1.5", .cls = "ff", .vendor = "1a86", .product = "7523" },
	/* an interface class could not be read: the whole device is dropped */
	{ .name = "2-1", .cls = "00", .vendor = "0bda", .product = "8153", .niface = 1,
	  .iface_cls = { "ff" }, .iface_err = 1 },
	/* no readable class: no class attribute, and no whitelist matches "" */
	{ .name = "2-2", .cls = "", .vendor = "1234", .product = "abcd" },
	/* class 00 with no interface at all: no instance */
	{ .name = "2-3", .cls = "00", .vendor = "05e3", .product = "0610" },
	{ .name = "3-1", .cls = "ef", .vendor = "8087", .product = "0aaa" },
};

static const struct {
	const char *name;
	struct nfdsrc_list classes, fields;
	int defaults;
	const char *want;
} usb_cases[] = {
	{ "usb: defaults", { 0 }, { 0 }, 1,
	  "~usb-0e_046d_0825.present=true\n~usb-ef_8087_0aaa.present=true\n"
	  "~usb-fe_1a6e_089a.present=true\n~usb-ff_03e7_2485.present=true\n"
	  "~usb-ff_0403_6001.present=true\n~usb-ff_1a86_7523.present=true\n" },
	{ "usb: serial, missing serial is an empty component", L("ff", "fe"),
	  L("serial", "device", "vendor", "class"), 0,
	  "~usb-fe_1a6e_089a_.present=true\n~usb-ff_03e7_2485_.present=true\n"
	  "~usb-ff_0403_6001_A50285BI.present=true\n~usb-ff_1a86_7523_.present=true\n" },
	{ "usb: unknown field ignored", L("0e", "ef", "fe", "ff"), L("class", "bogus"), 0,
	  "~usb-0e.present=true\n~usb-ef.present=true\n~usb-fe.present=true\n~usb-ff.present=true\n" },
	{ "usb: no valid field: class_vendor_device", L("09"), L("subsystem_vendor"), 0,
	  "~usb-09_2109_3431.present=true\n" },
	{ "usb: interface classes are whitelisted too", L("01"), L("class", "vendor", "device"), 0,
	  "~usb-01_046d_0825.present=true\n" },
	{ "usb: whitelist lower-cased", L("EF"), L("vendor"), 0, "~usb-8087.present=true\n" },
};

static void test_usb(void)
{
	struct usb_list ul = { (struct usb_dev *)usb_devs, N(usb_devs), N(usb_devs) };
	struct nfdsrc_config c;
	struct features f;
	struct json *labels;
	struct usb_dev longser = { .name = "4-1", .cls = "ff", .vendor = "1111", .product = "2222",
				   .has_serial = 1,
				   .serial = "0123456789012345678901234567890123456789012345678901" };
	struct usb_list one = { &longser, 1, 1 };
	char *got;

	for (size_t i = 0; i < N(usb_cases); i++) {
		nfdsrc_config_init(&c);
		if (!usb_cases[i].defaults) {
			c.usb_class_whitelist = usb_cases[i].classes;
			c.usb_label_fields = usb_cases[i].fields;
		}
		features_init(&f);
		labels = json_new_object();
		T_INT(usb_cases[i].name, nfdsrc_usb(&c, &ul, &f, labels, &quiet), 0);
		got = label_lines(labels);
		T_STR(usb_cases[i].name, got, usb_cases[i].want);
		free(got);
		features_free(&f);
		json_free(labels);
	}

	nfdsrc_config_init(&c);
	features_init(&f);
	nfdsrc_usb(&c, &ul, &f, NULL, &quiet);
	features_sort(&f);
	T_STR("usb: features", print(f.root),
	      "{\"flags\":{},\"attributes\":{},\"instances\":{\"usb.device\":{\"elements\":["
	      "{\"attributes\":{\"class\":\"09\",\"device\":\"3431\",\"vendor\":\"2109\"}},"
	      "{\"attributes\":{\"class\":\"fe\",\"device\":\"089a\",\"vendor\":\"1a6e\"}},"
	      "{\"attributes\":{\"class\":\"ff\",\"device\":\"2485\",\"vendor\":\"03e7\"}},"
	      "{\"attributes\":{\"class\":\"0e\",\"device\":\"0825\",\"vendor\":\"046d\"}},"
	      "{\"attributes\":{\"class\":\"0e\",\"device\":\"0825\",\"vendor\":\"046d\"}},"
	      "{\"attributes\":{\"class\":\"01\",\"device\":\"0825\",\"vendor\":\"046d\"}},"
	      "{\"attributes\":{\"class\":\"01\",\"device\":\"0825\",\"vendor\":\"046d\"}},"
	      "{\"attributes\":{\"class\":\"ff\",\"device\":\"6001\",\"serial\":\"A50285BI\","
	      "\"vendor\":\"0403\"}},"
	      "{\"attributes\":{\"class\":\"ff\",\"device\":\"7523\",\"vendor\":\"1a86\"}},"
	      "{\"attributes\":{\"device\":\"abcd\",\"vendor\":\"1234\"}},"
	      "{\"attributes\":{\"class\":\"ef\",\"device\":\"0aaa\",\"vendor\":\"8087\"}}]}}}");
	features_free(&f);

	/* a long serial makes a label name over 63: dropped, never cut */
	c.usb_label_fields = L("class", "vendor", "device", "serial");
	features_init(&f);
	labels = json_new_object();
	nfdsrc_usb(&c, &one, &f, labels, &quiet);
	T_INT("usb: a label from a long serial is made", json_count(labels), 1);
	T_INT("...and dropped by the filter", nfdsrc_labels_filter(labels, NULL, &quiet), 1);
	T_INT("...leaving nothing", json_count(labels), 0);
	features_free(&f);
	json_free(labels);
}

/* ---- label validity and the whitelist ------------------------------------ */

static const struct {
	const char *key, *value;
	int keep;
} label_cases[] = {
	{ NS "cpu-cpuid.AVX=true", "true", 0 }, /* '=' is not a name character */
	{ NS "cpu-cpuid.AVX", "true", 1 },
	{ NS "empty-value", "", 1 },
	{ NS "a23456789012345678901234567890123456789012345678901234567890123", "v", 1 },
	{ NS "a234567890123456789012345678901234567890123456789012345678901234", "v", 0 },
	{ NS "v63", "a23456789012345678901234567890123456789012345678901234567890123", 1 },
	{ NS "v64", "a234567890123456789012345678901234567890123456789012345678901234", 0 },
	{ NS "space", "a b", 0 },
	{ NS "-leading", "x", 0 },
	{ NS "trailing.", "x", 0 },
	{ NS "value-ends", "x-", 0 },
	{ "Feature.Node/upper-prefix", "x", 0 },
	{ "a/b/c", "x", 0 },
	{ "/no-prefix", "x", 0 },
	{ "unprefixed.local", "v", 1 },
	{ "example.com/vendor.gpu", "x_y.z", 1 },
};

static void test_labels(void)
{
	struct json *labels = json_new_object();
	struct fb_log lg;
	struct fb_errinfo ei;
	struct re re;
	char logf[] = "/tmp/fb-nfdsrc-log-XXXXXX", buf[8192], *got;
	int fd = mkstemp(logf), kept = 0, rc;
	ssize_t n;

	for (size_t i = 0; i < N(label_cases); i++) {
		json_set_str(labels, label_cases[i].key, label_cases[i].value);
		kept += label_cases[i].keep;
	}
	log_init(&lg);
	lg.fd = fd;
	T_INT("filter: dropped", nfdsrc_labels_filter(labels, NULL, &lg), (int)N(label_cases) - kept);
	for (size_t i = 0; i < N(label_cases); i++) {
		char name[160];

		snprintf(name, sizeof(name), "filter: %s \"%.40s\"", label_cases[i].keep ? "keeps" : "drops",
			 label_cases[i].key);
		T_OK(name, !!json_get(labels, label_cases[i].key) == label_cases[i].keep, "kept: %d",
		     !!json_get(labels, label_cases[i].key));
	}
	T_INT("filter: nothing truncated", json_count(labels), kept);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	T_OK("filter: one log line per dropped label", n > 0 && strstr(buf, "v64") &&
	     strstr(buf, "Feature.Node/upper-prefix") && strstr(buf, "invalid label value"),
	     "log: %.300s", buf);
	close(fd);
	unlink(logf);
	json_free(labels);

	/* core.labelWhiteList */
	fb_errinfo_init(&ei);
	T_INT("whitelist \"\" is none", nfdsrc_whitelist_setup(&re, "", &ei), 0);
	T_INT("whitelist that does not compile", nfdsrc_whitelist_setup(&re, "(", &ei), -FB_EINVAL);
	T_STR("...names the option", ei.what, "core.labelWhiteList");
	rc = nfdsrc_whitelist_setup(&re, "^(cpu-model|kernel-version)\\.", &ei);
	T_INT("whitelist compiles", rc, 1);
	labels = json_new_object();
	json_set_str(labels, NS "cpu-model.id", "85");
	json_set_str(labels, NS "cpu-cpuid.AVX", "true");
	json_set_str(labels, NS "kernel-version.major", "6");
	json_set_str(labels, "kernel-version.local", "1");
	json_set_str(labels, "feature.node.kubernetes.io.x/cpu-model.x", "1");
	T_INT("whitelist: matched against the name after '/'", nfdsrc_labels_filter(labels, &re, &quiet), 1);
	got = label_lines(labels);
	T_STR("whitelist: what is left", got,
	      "feature.node.kubernetes.io.x/cpu-model.x=1\nkernel-version.local=1\n~cpu-model.id=85\n"
	      "~kernel-version.major=6\n");
	free(got);
	json_free(labels);
	re_free(&re);
	/* unanchored, as Go's MatchString */
	nfdsrc_whitelist_setup(&re, "NO_HZ", &ei);
	labels = json_new_object();
	json_set_str(labels, NS "kernel-config.NO_HZ", "true");
	json_set_str(labels, NS "kernel-config.NO_HZ_IDLE", "true");
	json_set_str(labels, NS "kernel-config.PREEMPT", "true");
	T_INT("whitelist is unanchored", nfdsrc_labels_filter(labels, &re, &quiet), 1);
	json_free(labels);
	re_free(&re);
}

/* ---- parsers on small trees ---------------------------------------------- */

static const struct {
	const char *osrelease, *want;
} versions[] = {
	{ "6.1.0-18-amd64\n", "{\"full\":\"6.1.0-18-amd64\",\"major\":\"6\",\"minor\":\"1\",\"revision\":\"0\"}" },
	{ "5.4\n", "{\"full\":\"5.4\",\"major\":\"5\",\"minor\":\"4\",\"revision\":\"\"}" },
	{ "6\n", "{\"full\":\"6\",\"major\":\"6\",\"minor\":\"\",\"revision\":\"\"}" },
	{ "4.19.0+\n", "{\"full\":\"4.19.0\",\"major\":\"4\",\"minor\":\"19\",\"revision\":\"0\"}" },
	{ "-5.10.0-rt#1-\n", "{\"full\":\"5.10.0-rt_1\",\"major\":\"5\",\"minor\":\"10\",\"revision\":\"0\"}" },
	{ "6.6.0_rt #1\n", "{\"full\":\"6.6.0_rt__1\"}" },
	{ "6.1.x\n", "{\"full\":\"6.1.x\"}" },
	{ "v6.1\n", "{\"full\":\"v6.1\"}" },
	{ "6.8.12.3-x\n", "{\"full\":\"6.8.12.3-x\"}" },
};

static const struct {
	const char *version_id, *major, *minor;
} version_ids[] = {
	{ "\"24.04\"", "24", "04" }, { "12", "12", NULL }, { "'3.18.4'", "3", "18" },
	{ "rolling", NULL, NULL }, { "1.2x", "1", NULL }, { "8.", "8", NULL }, { "9.a.1", "9", NULL },
	{ "x1.2", NULL, NULL },
};

static const struct {
	const char *dir, *key;
} hugepages[] = {
	{ "hugepages-64kB", "hugepages-64Ki" },   { "hugepages-2048kB", "hugepages-2Mi" },
	{ "hugepages-1536kB", "hugepages-1536Ki" }, { "hugepages-1048576kB", "hugepages-1Gi" },
	{ "hugepages-16777216kB", "hugepages-16Gi" },
};

static void test_parsers(void)
{
	struct nfdsrc_config c;
	struct hostfs h;
	struct features f;
	struct json *labels;
	char name[128], *got;

	nfdsrc_config_init(&c);
	for (size_t i = 0; i < N(versions); i++) {
		tmp_new();
		tmp_put("proc/sys/kernel/osrelease", versions[i].osrelease);
		tmp_hostfs(&h);
		features_init(&f);
		nfdsrc_kernel(&h, &c, &f, NULL, &quiet);
		snprintf(name, sizeof(name), "kernel.version of \"%.*s\"",
			 (int)strcspn(versions[i].osrelease, "\n"), versions[i].osrelease);
		T_STR(name, print(features_attrs(&f, "kernel.version")), versions[i].want);
		features_free(&f);
		tmp_done();
	}

	for (size_t i = 0; i < N(version_ids); i++) {
		char osr[256];

		tmp_new();
		snprintf(osr, sizeof(osr), "NAME=x\nVERSION_ID=%s\n", version_ids[i].version_id);
		tmp_put("etc/os-release", osr);
		tmp_hostfs(&h);
		features_init(&f);
		labels = json_new_object();
		nfdsrc_system(&h, "n", &f, labels, &quiet);
		snprintf(name, sizeof(name), "VERSION_ID.major of %s", version_ids[i].version_id);
		T_STR(name, json_get_str(features_attrs(&f, "system.osrelease"), "VERSION_ID.major", "(none)"),
		      version_ids[i].major ? version_ids[i].major : "(none)");
		snprintf(name, sizeof(name), "VERSION_ID.minor of %s", version_ids[i].version_id);
		T_STR(name, json_get_str(features_attrs(&f, "system.osrelease"), "VERSION_ID.minor", "(none)"),
		      version_ids[i].minor ? version_ids[i].minor : "(none)");
		snprintf(name, sizeof(name), "label VERSION_ID.minor of %s", version_ids[i].version_id);
		T_STR(name, json_get_str(labels, NS "system-os_release.VERSION_ID.minor", "(none)"),
		      version_ids[i].minor ? version_ids[i].minor : "(none)");
		features_free(&f);
		json_free(labels);
		tmp_done();
	}

	/* os-release syntax: \w+=.+, quotes trimmed, later lines win */
	tmp_new();
	tmp_put("etc/os-release", "# comment\nID=first\nID=\"second\"\nEMPTY=\nlower_case='v'\n"
				  "BAD KEY=x\n=novalue\nCRLF=yes\r\nEQ=a=b\n  INDENT=x\n");
	tmp_hostfs(&h);
	features_init(&f);
	nfdsrc_system(&h, NULL, &f, NULL, &quiet);
	features_sort(&f);
	T_STR("os-release syntax", print(f.root),
	      "{\"flags\":{},\"attributes\":{\"system.name\":{\"elements\":{\"nodename\":\"\"}},"
	      "\"system.osrelease\":{\"elements\":{\"CRLF\":\"yes\",\"EQ\":\"a=b\",\"ID\":\"second\","
	      "\"lower_case\":\"v\"}}},\"instances\":{}}");
	features_free(&f);
	tmp_done();

	/* hugepage sizes as resource.Quantity prints them */
	tmp_new();
	for (size_t i = 0; i < N(hugepages); i++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "sys/kernel/mm/hugepages/%s/nr_hugepages", hugepages[i].dir);
		tmp_put(rel, i == 2 ? "3\n" : "0\n");
	}
	tmp_put("sys/kernel/mm/hugepages/not-a-dir", "");
	tmp_put("sys/kernel/mm/hugepages/hugepages-xkB/nr_hugepages", "1\n");
	tmp_hostfs(&h);
	features_init(&f);
	nfdsrc_memory(&h, &f, NULL, &quiet);
	for (size_t i = 0; i < N(hugepages); i++) {
		snprintf(name, sizeof(name), "hugepages: %s is %s", hugepages[i].dir, hugepages[i].key);
		T_STR(name, json_get_str(features_attrs(&f, "memory.hugepages"), hugepages[i].key, "(none)"),
		      i == 2 ? "3" : "0");
	}
	T_INT("hugepages: a bad size or a file is skipped", json_count(features_attrs(&f, "memory.hugepages")),
	      N(hugepages) + 1);
	T_STR("hugepages: enabled when a pool has pages",
	      json_get_str(features_attrs(&f, "memory.hugepages"), "enabled", "(none)"), "true");
	features_free(&f);
	tmp_done();

	/* selinux: enforce "1" labels; no <sys>/fs at all: no feature */
	tmp_new();
	tmp_put("sys/fs/selinux/enforce", "1\n");
	tmp_hostfs(&h);
	features_init(&f);
	labels = json_new_object();
	nfdsrc_kernel(&h, &c, &f, labels, &quiet);
	T_STR("selinux enforcing", print(features_attrs(&f, "kernel.selinux")), "{\"enabled\":\"true\"}");
	T_STR("...labelled", json_get_str(labels, NS "kernel-selinux.enabled", "(none)"), "true");
	T_OK("no osrelease: no kernel.version, no modules, no config",
	     !features_attrs(&f, "kernel.version") && !features_flags(&f, "kernel.loadedmodule") &&
	     !features_flags(&f, "kernel.enabledmodule") && !features_attrs(&f, "kernel.config"),
	     "%s", print(f.root));
	T_STR("kvm absent: false", print(features_attrs(&f, "kernel.kvm")), "{\"enabled\":\"false\"}");
	features_free(&f);
	json_free(labels);
	tmp_done();
	tmp_new();
	tmp_put("sys/fs/selinux/enforce", "0\n");
	tmp_hostfs(&h);
	features_init(&f);
	labels = json_new_object();
	nfdsrc_kernel(&h, &c, &f, labels, &quiet);
	T_STR("selinux permissive", print(features_attrs(&f, "kernel.selinux")), "{\"enabled\":\"false\"}");
	T_INT("...not labelled", json_count(labels), 0);
	features_free(&f);
	json_free(labels);
	tmp_done();

	/* an empty host: what each source still publishes (its CPU, a 32-bit
	 * arm one, says nothing: without the dump the test machine's answers) */
	tmp_new();
	tmp_put("proc/.featurebox-cpuid", "arch arm\n");
	tmp_hostfs(&h);
	features_init(&f);
	labels = json_new_object();
	T_INT("empty host: cpu", nfdsrc_cpu(&h, &c, &f, labels, &quiet), 0);
	T_INT("empty host: kernel", nfdsrc_kernel(&h, &c, &f, labels, &quiet), 0);
	T_INT("empty host: memory", nfdsrc_memory(&h, &f, labels, &quiet), 0);
	T_INT("empty host: network fails as upstream", nfdsrc_network(&h, &f, labels, &quiet), -FB_ENOENT);
	T_INT("empty host: storage fails as upstream", nfdsrc_storage(&h, &f, labels, &quiet), -FB_ENOENT);
	T_INT("empty host: system", nfdsrc_system(&h, "n", &f, labels, &quiet), 0);
	features_sort(&f);
	T_STR("empty host: features", print(f.root),
	      "{\"flags\":{\"cpu.cpuid\":{\"elements\":{}}},\"attributes\":{\"cpu.coprocessor\":"
	      "{\"elements\":{}},\"cpu.cstate\":{\"elements\":{}},\"cpu.model\":{\"elements\":"
	      "{\"family\":\"0\",\"hypervisor\":\"none\",\"id\":\"0\",\"vendor_id\":\"VendorUnknown\"}},"
	      "\"cpu.pstate\":{\"elements\":{}},\"cpu.rdt\":{\"elements\":{}},\"cpu.security\":"
	      "{\"elements\":{}},\"cpu.sst\":{\"elements\":{}},\"cpu.topology\":{\"elements\":{}},"
	      "\"kernel.kvm\":{\"elements\":{\"enabled\":\"false\"}},\"memory.hugepages\":{\"elements\":{\"enabled\":\"false\"}},\"system.name\":{\"elements\":"
	      "{\"nodename\":\"n\"}}},\"instances\":{\"memory.nv\":{\"elements\":[]}}}");
	got = label_lines(labels);
	T_STR("empty host: labels", got,
	      "~cpu-model.family=0\n~cpu-model.hypervisor=none\n~cpu-model.id=0\n"
	      "~cpu-model.vendor_id=VendorUnknown\n");
	free(got);
	features_free(&f);
	json_free(labels);
	tmp_done();

	/* network: unparsable or zero VF counts label nothing */
	tmp_new();
	tmp_put("sys/devices/pci0/0000:01:00.0/sriov_totalvfs", "lots\n");
	tmp_put("sys/devices/pci0/0000:01:00.0/sriov_numvfs", "0\n");
	tmp_put("sys/devices/pci0/0000:01:00.0/net/eth0/operstate", "up\n");
	tmp_link("sys/class/net/eth0", "../../devices/pci0/0000:01:00.0/net/eth0");
	tmp_link("sys/devices/pci0/0000:01:00.0/net/eth0/device", "../../../0000:01:00.0");
	tmp_hostfs(&h);
	features_init(&f);
	labels = json_new_object();
	T_INT("network: bad VF count", nfdsrc_network(&h, &f, labels, &quiet), 0);
	T_STR("...kept as read", print(features_instances(&f, "network.device")),
	      "[{\"attributes\":{\"name\":\"eth0\",\"operstate\":\"up\",\"sriov_numvfs\":\"0\","
	      "\"sriov_totalvfs\":\"lots\"}}]");
	T_INT("...no sriov label", json_count(labels), 0);
	features_free(&f);
	json_free(labels);
	tmp_done();
}

/* ---- the cpu source on small trees ----------------------------------------- */

/* The host root's register dump, <proc>/.featurebox-cpuid, decides the
 * cpu.* sources (tests/unit/test_cpuid.c checks the detection itself). */
static const struct {
	const char *name, *dump, *extra_path, *extra;
	const char *flags, *model, *cpuid_attrs, *rdt;
} cpus[] = {
	/* AVX10: the cpu.cpuid attribute AVX10_VERSION; RDT: cpu.rdt, and the
	 * classes of service less the default one from resctrl */
	{ "x86 avx10 rdt",
	  "arch x86\ncpuid 0 0 24 756e6547 6c65746e 49656e69\ncpuid 1 0 906a0 0 1 0\n"
	  "cpuid 7 0 0 9000 0 0\ncpuid 7 1 0 0 0 80000\ncpuid 24 0 0 70001 0 0\n"
	  "cpuid f 0 0 0 0 2\ncpuid f 1 0 0 0 7\ncpuid 10 0 0 a 0 0\n",
	  "sys/fs/resctrl/info/L3/num_closids", "16\n",
	  "AVX10 AVX10_128 AVX10_256 AVX10_512 OSXSAVE SSE3 XSAVE",
	  "{\"family\":\"6\",\"hypervisor\":\"none\",\"id\":\"154\",\"vendor_id\":\"Intel\"}",
	  "{\"AVX10_VERSION\":\"1\"}",
	  "{\"RDTCMT\":\"true\",\"RDTL3CA\":\"true\",\"RDTL3CA_NUM_CLOSID\":\"15\",\"RDTMBA\":\"true\","
	  "\"RDTMBM\":\"true\",\"RDTMON\":\"true\"}" },
	/* an unknown hypervisor signature, as upstream squashes it */
	{ "x86 unknown hypervisor",
	  "arch x86\ncpuid 0 0 1 0 0 0\ncpuid 1 0 0 0 80000000 0\ncpuid 40000000 0 0 64726557 48482f69 30312056\n",
	  NULL, NULL, "HYPERVISOR",
	  "{\"family\":\"0\",\"hypervisor\":\"Werdi_HHV_10\",\"id\":\"0\",\"vendor_id\":\"VendorUnknown\"}", "{}",
	  "{}" },
	/* arm: upstream's HWCAP names, no cpu.cpuid attributes, empty cpu.rdt */
	{ "arm 32-bit", "arch arm\nhwcap 3fb0d6\nhwcap2 10\n", NULL, NULL,
	  "CRC32 EDSP EVTSTRM FASTMUL HALF IDIVA IDIVT LPAE NEON THUMB TLS VFP VFPD32 VFPv3 VFPv4",
	  "{\"family\":\"0\",\"hypervisor\":\"none\",\"id\":\"0\",\"vendor_id\":\"VendorUnknown\"}", NULL,
	  "{}" },
	{ "arm64 AmpereOne", "arch arm64\nhwcap 10119fff\nhwcap2 0\nmidr c00fac30\n", NULL, NULL,
	  "AES ASIMD ASIMDDP ASIMDHP ASIMDRDM ATOMICS CPUID CRC32 DCPOP EVTSTRM FP FPHP LRCPC PMULL SHA1 "
	  "SHA2 SSBS",
	  "{\"family\":\"15\",\"hypervisor\":\"none\",\"id\":\"44080\",\"vendor_id\":\"Ampere\"}", NULL, "{}" },
	/* a malformed dump: logged, and a CPU that says nothing */
	{ "bad dump", "arch x86\ncpuid 1\n", NULL, NULL, "",
	  "{\"family\":\"0\",\"hypervisor\":\"none\",\"id\":\"0\",\"vendor_id\":\"VendorUnknown\"}", NULL,
	  "{}" },
};

static void test_cpus(void)
{
	struct nfdsrc_config c;
	struct hostfs h;
	struct features f;
	struct json *labels;
	char name[128];

	nfdsrc_config_init(&c);
	for (size_t i = 0; i < N(cpus); i++) {
		const struct json *attrs;

		tmp_new();
		tmp_put("proc/.featurebox-cpuid", cpus[i].dump);
		if (cpus[i].extra_path)
			tmp_put(cpus[i].extra_path, cpus[i].extra);
		tmp_hostfs(&h);
		features_init(&f);
		labels = json_new_object();
		nfdsrc_cpu(&h, &c, &f, labels, &quiet);
		features_sort(&f);
		snprintf(name, sizeof(name), "cpu %s: flags", cpus[i].name);
		T_STR(name, words(features_flags(&f, "cpu.cpuid")), cpus[i].flags);
		snprintf(name, sizeof(name), "cpu %s: model", cpus[i].name);
		T_STR(name, print(features_attrs(&f, "cpu.model")), cpus[i].model);
		attrs = features_attrs(&f, "cpu.cpuid");
		snprintf(name, sizeof(name), "cpu %s: cpu.cpuid attributes", cpus[i].name);
		T_STR(name, attrs ? print(attrs) : "(none)", cpus[i].cpuid_attrs ? cpus[i].cpuid_attrs : "(none)");
		snprintf(name, sizeof(name), "cpu %s: cpu.rdt", cpus[i].name);
		T_STR(name, print(features_attrs(&f, "cpu.rdt")), cpus[i].rdt);
		if (cpus[i].cpuid_attrs && strstr(cpus[i].cpuid_attrs, "AVX10")) {
			const struct json *l = json_get(labels, NS "cpu-cpuid.AVX10_VERSION");

			T_STR("cpu avx10: labelled, whatever the blacklist", l ? json_str(l) : "(none)", "1");
		}
		features_free(&f);
		json_free(labels);
		tmp_done();
	}
}

/* A dump that is not a regular file, or too big, is no dump: no hang, no
 * flags. */
static void test_cpu_dump_reads(void)
{
	struct nfdsrc_config c;
	struct hostfs h;
	struct features f;
	size_t size = CPUID_DUMP_MAX + 64;
	char *big = malloc(size + 1);

	nfdsrc_config_init(&c);
	memset(big, '#', size);
	memcpy(big, "arch arm\nhwcap 1\n", 17);
	big[size] = '\0';
	tmp_new();
	tmp_put("proc/.featurebox-cpuid", big);
	tmp_hostfs(&h);
	features_init(&f);
	T_INT("cpu dump over the cap", nfdsrc_cpu(&h, &c, &f, NULL, &quiet), 0);
	T_STR("...refused", words(features_flags(&f, "cpu.cpuid")), "");
	features_free(&f);
	tmp_done();
	free(big);

	tmp_new();
	tmp_put("proc/.featurebox-cpuid/x", "");
	tmp_hostfs(&h);
	features_init(&f);
	T_INT("cpu dump that is a directory", nfdsrc_cpu(&h, &c, &f, NULL, &quiet), 0);
	T_STR("...no flags", words(features_flags(&f, "cpu.cpuid")), "");
	features_free(&f);
	tmp_done();
}

/* ---- the registry, local and custom ---------------------------------------- */

static void test_registry(void)
{
	int sorted = 1, named = 1, host = 1;

	for (int i = 0; i < NFDSRC_COUNT; i++) {
		const struct nfdsrc_source *s = nfdsrc_sources[i];

		named &= s && s->discover && strcmp(s->name, nfdsrc_names[i]) == 0;
		sorted &= i == 0 || strcmp(nfdsrc_names[i - 1], nfdsrc_names[i]) < 0;
		if (i != NFDSRC_LOCAL && i != NFDSRC_CUSTOM)
			host &= s && s->stage == NFDSRC_HOST && s->prio == 0 && !s->label_only;
	}
	T_OK("registry: every source named as nfdsrc_names", named, "a name differs");
	T_OK("registry: in upstream's sorted order (the mask bits)", sorted, "not sorted");
	T_OK("registry: the built-ins are host sources of priority 0", host, "one is not");
	T_INT("registry: local reads files", nfdsrc_sources[NFDSRC_LOCAL]->stage, NFDSRC_FILES);
	T_INT("registry: custom runs rules", nfdsrc_sources[NFDSRC_CUSTOM]->stage, NFDSRC_RULES);
	T_INT("registry: custom is a label source only", nfdsrc_sources[NFDSRC_CUSTOM]->label_only, 1);
	T_INT("registry: local is a feature source", nfdsrc_sources[NFDSRC_LOCAL]->label_only, 0);
	T_OK("registry: local's labels over custom's over the built-ins'",
	     nfdsrc_sources[NFDSRC_LOCAL]->prio > nfdsrc_sources[NFDSRC_CUSTOM]->prio &&
		     nfdsrc_sources[NFDSRC_CUSTOM]->prio > 0, "local %d, custom %d",
	     nfdsrc_sources[NFDSRC_LOCAL]->prio, nfdsrc_sources[NFDSRC_CUSTOM]->prio);
}

/* A host source through the registry is the source called directly. */
static void test_registry_host(void)
{
	struct nfdsrc_config c;
	struct nfdsrc_ctx ctx = { .lg = &quiet, .nodename = "n1" };
	struct hostfs h;
	struct features f;
	struct json *labels = json_new_object();
	char *got;

	nfdsrc_config_init(&c);
	tmp_new();
	tmp_put("etc/os-release", "ID=debian\nVERSION_ID=\"12.4\"\n");
	tmp_hostfs(&h);
	ctx.h = &h;
	ctx.cfg = &c;
	features_init(&f);
	nfdsrc_sources[NFDSRC_SYSTEM]->discover(&ctx, &f, labels);
	T_STR("registry: system source, features", json_get_str(features_attrs(&f, "system.name"), "nodename", "?"),
	      "n1");
	got = label_lines(labels);
	T_STR("registry: system source, labels", got,
	      "~system-os_release.ID=debian\n~system-os_release.VERSION_ID.major=12\n"
	      "~system-os_release.VERSION_ID.minor=4\n~system-os_release.VERSION_ID=12.4\n");
	free(got);
	features_free(&f);
	json_free(labels);
	tmp_done();
}

static const struct {
	const char *name;
	const char *file;  /* features.d/10 (NULL: no features.d) */
	const char *hooks; /* hook labels and features, JSON (NULL: no hooks) */
	int labels;        /* a label source too */
	const char *want_labels, *want_label_attr, *want_feature_attr;
} local_cases[] = {
	{ "no features.d, no hooks", NULL, NULL, 1, "", "{}", "{}" },
	{ "files", "a=1\n# +no-label\nb=2\n", NULL, 1, "a=1\n", "{\"a\":\"1\"}", "{\"a\":\"1\",\"b\":\"2\"}" },
	{ "hooks over files", "a=1\n# +no-label\nb=2\n", "[{\"a\":\"hook\",\"h\":\"x\"},{\"hf\":\"y\"}]", 1,
	  "a=hook\nh=x\n", "{\"a\":\"hook\",\"h\":\"x\"}", "{\"a\":\"1\",\"b\":\"2\",\"hf\":\"y\"}" },
	{ "hooks without features.d", NULL, "[{\"h\":\"x\"},{}]", 1, "h=x\n", "{\"h\":\"x\"}", "{}" },
	{ "a feature source only", "a=1\n", NULL, 0, "", "{\"a\":\"1\"}", "{\"a\":\"1\"}" },
};

static void test_local(void)
{
	char name[160], dir[128], *got;

	for (size_t i = 0; i < N(local_cases); i++) {
		struct nfdsrc_ctx ctx = { .lg = &quiet, .features_dir = dir };
		struct json *hooks = NULL, *labels = json_new_object();
		struct features f;

		tmp_new();
		snprintf(dir, sizeof(dir), "%s/features.d", tmp);
		if (local_cases[i].file)
			tmp_put("features.d/10", local_cases[i].file);
		if (local_cases[i].hooks) {
			hooks = json_parse(local_cases[i].hooks, strlen(local_cases[i].hooks), "t", NULL);
			ctx.hook_labels = json_at(hooks, 0);
			ctx.hook_features = json_at(hooks, 1);
		}
		features_init(&f);
		nfdsrc_sources[NFDSRC_LOCAL]->discover(&ctx, &f, local_cases[i].labels ? labels : NULL);
		snprintf(name, sizeof(name), "local: %s: labels", local_cases[i].name);
		got = label_lines(labels);
		T_STR(name, got, local_cases[i].want_labels);
		free(got);
		snprintf(name, sizeof(name), "local: %s: local.label", local_cases[i].name);
		T_STR(name, print(features_attrs(&f, "local.label")), local_cases[i].want_label_attr);
		snprintf(name, sizeof(name), "local: %s: local.feature", local_cases[i].name);
		T_STR(name, print(features_attrs(&f, "local.feature")), local_cases[i].want_feature_attr);
		features_free(&f);
		json_free(labels);
		json_free(hooks);
		tmp_done();
	}
}

static void test_custom(void)
{
	static const char rules[] =
		"[{\"name\":\"cfg\",\"labels\":{\"x\":\"1\"},\"vars\":{\"v\":\"true\"},"
		"\"matchFeatures\":[{\"feature\":\"local.label\",\"matchExpressions\":{\"a\":{\"op\":\"Exists\"}}}]},"
		"{\"name\":\"never\",\"labels\":{\"never\":\"1\"},"
		"\"matchFeatures\":[{\"feature\":\"local.label\",\"matchExpressions\":{\"zz\":{\"op\":\"Exists\"}}}]}]";
	struct nfdsrc_ctx ctx = { .lg = &quiet };
	struct json *labels = json_new_object(), *r = json_parse(rules, strlen(rules), "t", NULL);
	struct features f;
	char dir[128], *got;

	tmp_new();
	snprintf(dir, sizeof(dir), "%s/custom.d", tmp);
	tmp_put("custom.d/10.yaml", "- name: backref\n  labels: {y: \"2\"}\n  matchFeatures:\n"
				    "    - feature: rule.matched\n      matchExpressions: {v: {op: IsTrue}}\n");
	tmp_put("custom.d/20-bad.yaml", "not: [valid\n");
	tmp_put("custom.d/cm/rules.yaml", "- name: cm\n  labels: {z: \"3\"}\n");
	tmp_put("custom.d/cm/deeper/rules.yaml", "- name: deep\n  labels: {deep: \"1\"}\n");
	tmp_put("custom.d/.hidden.yaml", "- name: hidden\n  labels: {hidden: \"1\"}\n");
	ctx.custom_rules = r;
	ctx.custom_dir = dir;
	features_init(&f);
	features_attr(&f, "local.label", "a", "1");
	nfdsrc_sources[NFDSRC_CUSTOM]->discover(&ctx, &f, labels);
	got = label_lines(labels);
	T_STR("custom: config and custom.d rules, back-reference, one subdirectory, no hidden file", got,
	      "x=1\ny=2\nz=3\n");
	free(got);
	T_STR("custom: rule.matched is not kept", print(features_attrs(&f, "rule.matched")), "(absent)");
	features_free(&f);
	json_free(labels);

	/* no custom.d, no rules: nothing */
	ctx.custom_rules = NULL;
	snprintf(dir, sizeof(dir), "%s/none", tmp);
	labels = json_new_object();
	features_init(&f);
	nfdsrc_sources[NFDSRC_CUSTOM]->discover(&ctx, &f, labels);
	T_INT("custom: no rules, no custom.d: no labels", json_count(labels), 0);
	features_free(&f);
	json_free(labels);
	json_free(r);
	tmp_done();
}

int main(void)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	t_suite = "nfdsrc";
	if (getenv("FB_TOP"))
		top = getenv("FB_TOP");
	log_init(&quiet);
	quiet.fd = null;
	quiet.v = 5;

	test_fixtures();
	test_options();
	test_pci();
	test_usb();
	test_labels();
	test_parsers();
	test_cpus();
	test_cpu_dump_reads();
	test_registry();
	test_registry_host();
	test_local();
	test_custom();
	close(null);
	return t_done();
}
