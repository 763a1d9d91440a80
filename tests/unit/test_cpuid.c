/* cpuid: detection from register dumps of real CPUs, with what upstream
 * publishes for them. tests/fixtures/cpuid/NAME.dump is a dump in cpuid.h's
 * format, NAME.want the expected cpu.cpuid flags and attributes and cpu.model
 * ("flag X", "attr K V", "vendor_id V", "family N", "id N", "hypervisor H").
 * The x86 .want files are the output of github.com/klauspost/cpuid/v2 v2.4.0
 * run on the same registers (its CPUID and XGETBV functions replaced by
 * look-ups in the dump) plus X86_64_V1..Vn as upstream adds them; the arm
 * ones follow upstream's HWCAP tables and the library's MIDR decoding.
 * README's testing section says how to make them.
 *
 * `test_cpuid --self` prints this machine's dump (how this-host-*.dump was
 * made). Needs FB_TOP for the fixtures (tests/run exports it). */
#include "t.h"

#include "../../core/cpuid.h"
#include "../../core/err.h"

static const struct dump_case {
	const char *name;
	unsigned rdt; /* upstream's cpu.rdt bits for the same registers */
} dumps[] = {
	{ "intel-raptorlake", 0 },        /* hybrid: HYBRID_CPU */
	{ "synthetic-avx10", 0 },        /* hand-made: AVX10_VERSION 2 */
	{ "intel-cascadelake", CPUID_RDTMON | CPUID_RDTCMT | CPUID_RDTMBM | CPUID_RDTL3CA | CPUID_RDTMBA },
	{ "amd-zen4-raphael", CPUID_RDTMON | CPUID_RDTCMT | CPUID_RDTMBM | CPUID_RDTL3CA },
	{ "amd-zen5-graniteridge", CPUID_RDTMON | CPUID_RDTCMT | CPUID_RDTMBM | CPUID_RDTL3CA },
	{ "vm-icelake-hyperv", 0 },       /* hypervisor leaf: Microsoft Hv */
	{ "vm-unknown-hypervisor", 0 },   /* hand-made: an unknown signature */
	{ "this-host-amd-zen5-bhyve", 0 },
	{ "arm64-rpi4", 0 },
	{ "arm64-neoverse-n1", 0 },
	{ "arm64-no-cpuid-hwcap", 0 },    /* MIDR unreadable: VendorUnknown */
	{ "armhf-rpi3", 0 },
};

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = calloc(1, CPUID_DUMP_MAX + 2);
	n = buf ? fread(buf, 1, CPUID_DUMP_MAX + 1, f) : 0;
	fclose(f);
	*len = n;
	return buf;
}

/* The .want form of an info. */
static void render(const struct cpuid_info *ci, char *out, size_t size)
{
	size_t n = 0;

#define ADD(...) (n += (size_t)snprintf(out + n, n < size ? size - n : 0, __VA_ARGS__))
	for (size_t i = 0; i < ci->nflags; i++)
		ADD("flag %s\n", ci->flags[i]);
	if (ci->avx10)
		ADD("attr AVX10_VERSION %u\n", ci->avx10);
	ADD("vendor_id %s\nfamily %d\nid %d\nhypervisor %s\n", ci->vendor, ci->family, ci->model,
	    ci->hypervisor);
#undef ADD
}

static void real_cpus(const char *top)
{
	static char got[16384];
	static struct cpuid_info ci;

	for (size_t i = 0; i < sizeof(dumps) / sizeof(dumps[0]); i++) {
		char path[1024], name[128], err[128] = "";
		struct cpuid_dump d;
		size_t len, wlen;
		char *text, *want;
		int rc;

		snprintf(path, sizeof(path), "%s/tests/fixtures/cpuid/%s.dump", top, dumps[i].name);
		text = slurp(path, &len);
		snprintf(path, sizeof(path), "%s/tests/fixtures/cpuid/%s.want", top, dumps[i].name);
		want = slurp(path, &wlen);
		snprintf(name, sizeof(name), "%s: fixture files", dumps[i].name);
		T_OK(name, text && want, "missing %s", path);
		if (!text || !want) {
			free(text);
			free(want);
			continue;
		}
		rc = cpuid_dump_parse(&d, text, len, err, sizeof(err));
		snprintf(name, sizeof(name), "%s: dump parses", dumps[i].name);
		T_OK(name, rc == 0, "rc %d: %s", rc, err);
		cpuid_detect(&d, &ci);
		render(&ci, got, sizeof(got));
		snprintf(name, sizeof(name), "%s: flags and model as the library", dumps[i].name);
		T_STR(name, got, want);
		snprintf(name, sizeof(name), "%s: cpu.rdt", dumps[i].name);
		T_INT(name, ci.rdt, dumps[i].rdt);
		free(text);
		free(want);
	}
}

static const struct bad_case {
	const char *text, *err;
	int rc;
} bad[] = {
	{ "", "no arch line", -FB_EINVAL },
	{ "arch sparc\n", "line 1: arch: not x86, arm64 or arm", -FB_EINVAL },
	{ "arch x86\ncpuid 1 0 1 2 3\n", "line 2: cpuid: bad edx", -FB_EINVAL },
	{ "arch x86\ncpuid 1 0 1 2 3 4 5\n", "line 2: trailing text", -FB_EINVAL },
	{ "arch x86\ncpuid 123456789 0 0 0 0 0\n", "line 2: cpuid: bad leaf", -FB_EINVAL },
	{ "arch x86\ncpuid 1 0 0 0 0 0x1\n", "line 2: cpuid: bad edx", -FB_EINVAL },
	{ "arch x86\ncpuid 1 0 0 -1 0 0\n", "line 2: cpuid: bad ebx", -FB_EINVAL },
	{ "arch x86\nxgetbv0\n", "line 2: xgetbv0: bad value", -FB_EINVAL },
	{ "arch arm64\nhwcap 10000000000000000\n", "line 2: hwcap: bad value", -FB_EINVAL },
	{ "arch x86\nleaf 1\n", "line 2: unknown item 'leaf'", -FB_EINVAL },
	{ "arch x86\ncpuid 1 0 0 0 0 0 # comment\n  # another\n\r\n", "", 0 },
};

static void hostile(void)
{
	char name[160], err[128], *big;
	struct cpuid_dump d;
	int rc;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		rc = cpuid_dump_parse(&d, bad[i].text, strlen(bad[i].text), err, sizeof(err));
		snprintf(name, sizeof(name), "bad dump %zu: error", i);
		T_INT(name, rc, bad[i].rc);
		snprintf(name, sizeof(name), "bad dump %zu: message", i);
		T_STR(name, err, bad[i].err);
	}
	/* more leaves than the table holds, and a file over the cap */
	big = calloc(1, CPUID_DUMP_MAX * 2);
	strcpy(big, "arch x86\n");
	for (int i = 0; i <= CPUID_MAX_LEAVES; i++)
		sprintf(big + strlen(big), "cpuid %x 0 0 0 0 0\n", i);
	rc = cpuid_dump_parse(&d, big, strlen(big), err, sizeof(err));
	T_INT("too many leaves: refused", rc, -FB_E2BIG);
	T_STR("too many leaves: message", err, "line 66: more than 64 leaves");
	memset(big, '#', CPUID_DUMP_MAX + 1);
	rc = cpuid_dump_parse(&d, big, CPUID_DUMP_MAX + 1, err, sizeof(err));
	T_INT("dump over the size cap: refused", rc, -FB_E2BIG);
	free(big);
	/* detection of an empty dump: nothing, and no crash */
	{
		static struct cpuid_info ci;

		cpuid_dump_init(&d);
		d.arch = CPUID_X86;
		cpuid_detect(&d, &ci);
		T_INT("empty x86 dump: no flags", ci.nflags, 0);
		T_STR("empty x86 dump: vendor", ci.vendor, "VendorUnknown");
		T_STR("empty x86 dump: hypervisor", ci.hypervisor, "none");
	}
}

/* write -> parse gives the same dump */
static void round_trip(void)
{
	struct cpuid_dump a, b;
	char *buf = NULL, err[128] = "";
	size_t len = 0;
	FILE *f;

	cpuid_dump_init(&a);
	a.arch = CPUID_X86;
	a.n = 2;
	a.v[0] = (struct cpuid_leaf){ 0, 0, { 0xd, 0x756e6547, 0x6c65746e, 0x49656e69 } };
	a.v[1] = (struct cpuid_leaf){ 0x80000021, 3, { 1, 2, 0xffffffffu, 4 } };
	a.xcr0 = 0xe7;
	f = open_memstream(&buf, &len);
	T_INT("write", cpuid_dump_write(&a, f), 0);
	fclose(f);
	T_INT("parse back", cpuid_dump_parse(&b, buf, len, err, sizeof(err)), 0);
	T_OK("round trip", memcmp(&a, &b, sizeof(a)) == 0, "%s", buf);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *top = getenv("FB_TOP");
	struct cpuid_dump d;

	if (argc > 1 && strcmp(argv[1], "--self") == 0) {
		if (cpuid_dump_self(&d) < 0)
			return 1;
		return cpuid_dump_write(&d, stdout) < 0;
	}
	t_suite = "cpuid";
	hostile();
	round_trip();
	if (top)
		real_cpus(top);
	else
		printf("SKIP: cpuid: real CPUs (FB_TOP not set: run through tests/run)\n");
	return t_done();
}
