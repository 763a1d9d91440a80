/* nfdsrc cpu: cpu.* from <proc>/cpuinfo and <sys>/devices/system/cpu
 * (upstream source/cpu; the deviations are in nfdsrc.c). */
#include "nfdsrc_internal.h"

#include "buf.h"
#include "sysfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A set of borrowed strings (flag names), insertion-ordered, no repeats. */
struct strset {
	const char **v;
	size_t n, size;
};

static int set_has(const struct strset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return 1;
	return 0;
}

static int set_add(struct strset *s, const char *name)
{
	if (set_has(s, name))
		return 0;
	if (ARRAY_GROW(s->v, s->size, s->n + 1) < 0)
		return -FB_ENOMEM;
	s->v[s->n++] = name;
	return 0;
}

static void set_del(struct strset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0) {
			memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof(*s->v));
			s->n--;
			return;
		}
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first value of each /proc/cpuinfo key we use (borrowed from the
 * buffer, which parse_cpuinfo cuts into strings). */
struct cpuinfo {
	const char *vendor, *family, *model, *flags, *siblings, *cores;
	const char *features, *implementer, *variant, *part, *revision;
};

static void parse_cpuinfo(char *buf, struct cpuinfo *ci)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "vendor_id", offsetof(struct cpuinfo, vendor) },
		{ "cpu family", offsetof(struct cpuinfo, family) },
		{ "model", offsetof(struct cpuinfo, model) },
		{ "flags", offsetof(struct cpuinfo, flags) },
		{ "siblings", offsetof(struct cpuinfo, siblings) },
		{ "cpu cores", offsetof(struct cpuinfo, cores) },
		{ "Features", offsetof(struct cpuinfo, features) },
		{ "CPU implementer", offsetof(struct cpuinfo, implementer) },
		{ "CPU variant", offsetof(struct cpuinfo, variant) },
		{ "CPU part", offsetof(struct cpuinfo, part) },
		{ "CPU revision", offsetof(struct cpuinfo, revision) },
	};
	char *line = buf, *next;

	memset(ci, 0, sizeof(*ci));
	for (; line && *line; line = next) {
		char *colon, *end;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!(colon = strchr(line, ':')))
			continue;
		*colon = '\0';
		end = colon;
		while (end > line && nfdsrc_is_space_(end[-1]))
			*--end = '\0';
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			const char **slot = (const char **)((char *)ci + keys[i].off);

			if (!*slot && strcmp(line, keys[i].key) == 0) {
				nfdsrc_trim_(colon + 1);
				*slot = colon + 1;
			}
		}
	}
}

/* Linux's x86 cpuinfo flag names and the klauspost/cpuid names upstream
 * reports for the same CPUID bit (one flag may give two: sse also sets
 * FXSROPT in klauspost, abm is LZCNT and POPCNT, xsave means the kernel
 * turned on OSXSAVE). */
static const struct x86map {
	const char *linux, *kp;
} x86map[] = {
	{ "fpu", "X87" }, { "cx8", "CMPXCHG8" }, { "sep", "SYSEE" }, { "cmov", "CMOV" },
	{ "mmx", "MMX" }, { "fxsr", "FXSR" }, { "sse", "SSE" }, { "sse", "FXSROPT" },
	{ "sse2", "SSE2" }, { "ht", "HTT" },
	{ "pni", "SSE3" }, { "pclmulqdq", "CLMUL" }, { "vmx", "VMX" }, { "ssse3", "SSSE3" },
	{ "fma", "FMA3" }, { "cx16", "CX16" }, { "sse4_1", "SSE4" }, { "sse4_2", "SSE42" },
	{ "movbe", "MOVBE" }, { "popcnt", "POPCNT" }, { "aes", "AESNI" }, { "xsave", "XSAVE" },
	{ "xsave", "OSXSAVE" }, { "avx", "AVX" }, { "f16c", "F16C" }, { "rdrand", "RDRAND" },
	{ "hypervisor", "HYPERVISOR" },
	{ "syscall", "SYSCALL" }, { "nx", "NX" }, { "mmxext", "MMXEXT" }, { "fxsr_opt", "FXSROPT" },
	{ "rdtscp", "RDTSCP" }, { "3dnowext", "AMD3DNOWEXT" }, { "3dnow", "AMD3DNOW" },
	{ "lahf_lm", "LAHF" }, { "svm", "SVM" }, { "abm", "LZCNT" }, { "abm", "POPCNT" },
	{ "sse4a", "SSE4A" }, { "ibs", "IBS" }, { "topoext", "TOPEXT" }, { "xop", "XOP" },
	{ "fma4", "FMA4" },
	{ "sgx", "SGX" }, { "bmi1", "BMI1" }, { "hle", "HLE" }, { "avx2", "AVX2" },
	{ "bmi2", "BMI2" }, { "erms", "ERMS" }, { "rtm", "RTM" }, { "mpx", "MPX" },
	{ "avx512f", "AVX512F" }, { "avx512dq", "AVX512DQ" }, { "rdseed", "RDSEED" },
	{ "adx", "ADX" }, { "avx512ifma", "AVX512IFMA" }, { "avx512pf", "AVX512PF" },
	{ "avx512er", "AVX512ER" }, { "avx512cd", "AVX512CD" }, { "sha_ni", "SHA" },
	{ "avx512bw", "AVX512BW" }, { "avx512vl", "AVX512VL" },
	{ "avx512vbmi", "AVX512VBMI" }, { "waitpkg", "WAITPKG" }, { "avx512_vbmi2", "AVX512VBMI2" },
	{ "shstk", "CETSS" }, { "gfni", "GFNI" }, { "vaes", "VAES" }, { "vpclmulqdq", "VPCLMULQDQ" },
	{ "avx512_vnni", "AVX512VNNI" }, { "avx512_bitalg", "AVX512BITALG" }, { "tme", "TME" },
	{ "avx512_vpopcntdq", "AVX512VPOPCNTDQ" }, { "cldemote", "CLDEMOTE" },
	{ "movdiri", "MOVDIRI" }, { "movdir64b", "MOVDIR64B" }, { "enqcmd", "ENQCMD" },
	{ "sgx_lc", "SGXLC" },
	{ "fsrm", "FSRM" }, { "avx512_vp2intersect", "AVX512VP2INTERSECT" },
	{ "srbds_ctrl", "SRBDS_CTRL" }, { "md_clear", "MD_CLEAR" },
	{ "rtm_always_abort", "RTM_ALWAYS_ABORT" }, { "serialize", "SERIALIZE" },
	{ "hybrid_cpu", "HYBRID_CPU" }, { "tsxldtrk", "TSXLDTRK" }, { "pconfig", "PCONFIG" },
	{ "ibt", "CETIBT" }, { "amx_bf16", "AMXBF16" }, { "avx512_fp16", "AVX512FP16" },
	{ "amx_tile", "AMXTILE" }, { "amx_int8", "AMXINT8" }, { "ibpb", "IBPB" },
	{ "stibp", "STIBP" }, { "flush_l1d", "FLUSH_L1D" }, { "arch_capabilities", "IA32_ARCH_CAP" },
	{ "core_capabilities", "IA32_CORE_CAP" }, { "ssbd", "SPEC_CTRL_SSBD" },
	{ "avx_vnni", "AVXVNNI" }, { "avx512_bf16", "AVX512BF16" }, { "cmpccxadd", "CMPCCXADD" },
	{ "fzrm", "MOVSB_ZL" }, { "fsrs", "STOSB_SHORT" }, { "fsrc", "CMPSB_SCADBS_SHORT" },
	{ "amx_fp16", "AMXFP16" }, { "avx_ifma", "AVXIFMA" }, { "lam", "LAM" },
	{ "wrmsrns", "WRMSRNS" }, { "sm3", "SM3_X86" }, { "sm4", "SM4_X86" },
	{ "ipred_ctrl", "IDPRED_CTRL" }, { "rrsba_ctrl", "RRSBA_CTRL" }, { "bhi_ctrl", "BHI_CTRL" },
	{ "xsaveopt", "XSAVEOPT" }, { "xsavec", "XSAVEC" }, { "xgetbv1", "XGETBV1" },
	{ "xsaves", "XSAVES" },
	{ "overflow_recov", "MCAOVERFLOW" }, { "succor", "SUCCOR" }, { "cpb", "CPBOOST" },
	{ "clzero", "CLZERO" }, { "irperf", "MSRIRC" }, { "rdpru", "RDPRU" },
	{ "wbnoinvd", "WBNOINVD" }, { "amd_ppin", "PPIN" }, { "cppc", "CPPC" },
	{ "invlpgb", "INVLPGB" }, { "amd_ibpb", "IBPB" }, { "amd_ibrs", "IBRS" },
	{ "amd_stibp", "STIBP" }, { "amd_stibp_always_on", "STIBP_ALWAYSON" },
	{ "amd_ssbd", "SPEC_CTRL_SSBD" }, { "amd_psfd", "PSFD" },
	{ "npt", "SVMNP" }, { "lbrv", "LBRVIRT" }, { "svm_lock", "SVML" }, { "nrip_save", "NRIPS" },
	{ "tsc_scale", "TSCRATEMSR" }, { "vmcb_clean", "VMCBCLEAN" }, { "flushbyasid", "SVMFBASID" },
	{ "decodeassists", "SVMDA" }, { "pausefilter", "SVMPF" }, { "pfthreshold", "SVMPFT" },
	{ "tdx_guest", "TDX_GUEST" },
};

/* The same, for bits klauspost only looks at on AMD parts. */
static const struct x86map x86map_amd[] = {
	{ "sme", "SME" }, { "sev", "SEV" }, { "vm_page_flush", "MSR_PAGEFLUSH" },
	{ "sev_es", "SEV_ES" }, { "sev_snp", "SEV_SNP" }, { "sme_coherent", "SME_COHERENT" },
	{ "debug_swap", "SEV_DEBUGSWAP" }, { "sbpb", "SBPB" }, { "ibpb_brtype", "IBPB_BRTYPE" },
	{ "srso_no", "SRSO_NO" }, { "srso_user_kernel_no", "SRSO_USER_KERNEL_NO" },
	{ "tsa_sq_no", "TSA_SQ_NO" }, { "tsa_l1_no", "TSA_L1_NO" },
	{ "verw_clear", "TSA_VERW_CLEAR" },
};

/* klauspost's vendor table (CPUID leaf 0 strings; cpuinfo trims them). */
static const struct {
	const char *id, *name;
} x86vendors[] = {
	{ "AMDisbetter!", "AMD" }, { "AuthenticAMD", "AMD" }, { "CentaurHauls", "VIA" },
	{ "GenuineIntel", "Intel" }, { "TransmetaCPU", "Transmeta" }, { "GenuineTMx86", "Transmeta" },
	{ "Geode by NSC", "NSC" }, { "VIA VIA VIA", "VIA" }, { "HygonGenuine", "Hygon" },
	{ "Vortex86 SoC", "SiS" }, { "SiS SiS SiS", "SiS" }, { "RiseRiseRise", "SiS" },
	{ "Genuine  RDC", "RDC" },
};

/* klauspost's x86-64 microarchitecture levels (X64Level), cumulative. */
static const char *const x86_level[4][9] = {
	{ "CMOV", "CMPXCHG8", "X87", "FXSR", "MMX", "SSE", "SSE2" },
	{ "CX16", "LAHF", "POPCNT", "SSE3", "SSE4", "SSE42", "SSSE3" },
	{ "AVX", "AVX2", "BMI1", "BMI2", "F16C", "FMA3", "LZCNT", "MOVBE", "OSXSAVE" },
	{ "AVX512F", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512VL" },
};
static const char *const x86_level_flag[4] = { "X86_64_V1", "X86_64_V2", "X86_64_V3", "X86_64_V4" };

/* upstream's arm64 HWCAP/HWCAP2 table: the kernel's cpuinfo names upper-cased */
static const char *const arm64_caps[] = {
	"FP", "ASIMD", "EVTSTRM", "AES", "PMULL", "SHA1", "SHA2", "CRC32", "ATOMICS", "FPHP",
	"ASIMDHP", "CPUID", "ASIMDRDM", "JSCVT", "FCMA", "LRCPC", "DCPOP", "SHA3", "SM3", "SM4",
	"ASIMDDP", "SHA512", "SVE", "ASIMDFHM", "DIT", "USCAT", "ILRCPC", "FLAGM", "SSBS", "SB",
	"PACA", "PACG", "DCPODP", "SVE2", "SVEAES", "SVEPMULL", "SVEBITPERM", "SVESHA3", "SVESM4",
	"FLAGM2", "FRINT", "SVEI8MM", "SVEF32MM", "SVEF64MM", "SVEBF16", "I8MM", "BF16", "DGH",
	"RNG", "BTI", "MTE", "ECV", "AFP", "RPRES", "MTE3", "SME", "SMEI16I64", "SMEF64F64",
	"SMEI8I32", "SMEF16F32", "SMEB16F32", "SMEF32F32", "SMEFA64", "WFXT", "EBF16", "SVEEBF16",
};

/* upstream's 32-bit arm table: kernel cpuinfo name -> upstream's name */
static const struct {
	const char *linux, *name;
	int arm32_only;
} arm_caps[] = {
	{ "swp", "SWP", 1 }, { "half", "HALF", 1 }, { "thumb", "THUMB", 1 }, { "26bit", "26BIT", 1 },
	{ "fastmult", "FASTMUL", 1 }, { "fpa", "FPA", 1 }, { "vfp", "VFP", 1 }, { "edsp", "EDSP", 1 },
	{ "java", "JAVA", 1 }, { "iwmmxt", "IWMMXT", 1 }, { "crunch", "CRUNCH", 1 },
	{ "thumbee", "THUMBEE", 1 }, { "neon", "NEON", 1 }, { "vfpv3", "VFPv3", 1 },
	{ "vfpv3d16", "VFPv3D16", 1 }, { "tls", "TLS", 1 }, { "vfpv4", "VFPv4", 1 },
	{ "idiva", "IDIVA", 1 }, { "idivt", "IDIVT", 1 }, { "vfpd32", "VFPD32", 1 },
	{ "lpae", "LPAE", 1 }, { "evtstrm", "EVTSTRM", 0 }, { "aes", "AES", 0 },
	{ "pmull", "PMULL", 0 }, { "sha1", "SHA1", 0 }, { "sha2", "SHA2", 0 }, { "crc32", "CRC32", 0 },
};

/* klauspost's MIDR implementer table (arm64) */
static const struct {
	unsigned code;
	const char *name;
} arm_vendors[] = {
	{ 0xc0, "Ampere" }, { 0x41, "ARM" }, { 0x42, "Broadcom" }, { 0x43, "Cavium" },
	{ 0x44, "DEC" }, { 0x46, "Fujitsu" }, { 0x49, "Infineon" }, { 0x4d, "Motorola" },
	{ 0x4e, "NVIDIA" }, { 0x50, "AMCC" }, { 0x51, "Qualcomm" }, { 0x56, "Marvell" },
	{ 0x69, "Intel" },
};

enum cpu_flavour { CPU_UNKNOWN, CPU_X86, CPU_ARM64, CPU_ARM };

/* Whitespace-separated token iteration over a cpuinfo flags line. */
static const char *next_tok(const char *s, char *tok, size_t size)
{
	size_t n = 0;

	while (*s && nfdsrc_is_space_(*s))
		s++;
	if (!*s)
		return NULL;
	while (*s && !nfdsrc_is_space_(*s)) {
		if (n + 1 < size)
			tok[n++] = *s;
		s++;
	}
	tok[n] = '\0';
	return s;
}

static int has_tok(const char *line, const char *want)
{
	char tok[64];

	for (const char *p = line; p && (p = next_tok(p, tok, sizeof(tok)));)
		if (strcmp(tok, want) == 0)
			return 1;
	return 0;
}

static const char *x86_vendor(const char *id)
{
	for (size_t i = 0; id && i < sizeof(x86vendors) / sizeof(x86vendors[0]); i++)
		if (strcmp(id, x86vendors[i].id) == 0)
			return x86vendors[i].name;
	return "VendorUnknown";
}

/* The klauspost flag set of an x86 cpuinfo. */
static int x86_flags(const struct cpuinfo *ci, struct strset *s)
{
	const char *vendor = x86_vendor(ci->vendor);
	int amd = strcmp(vendor, "AMD") == 0, intel = strcmp(vendor, "Intel") == 0;
	long family = nfdsrc_num_(ci->family, 10, 0), model = nfdsrc_num_(ci->model, 10, 0);
	char tok[64];
	int rc, level = 0;

	for (const char *p = ci->flags; p && (p = next_tok(p, tok, sizeof(tok)));) {
		for (size_t i = 0; i < sizeof(x86map) / sizeof(x86map[0]); i++)
			if (strcmp(tok, x86map[i].linux) == 0 && (rc = set_add(s, x86map[i].kp)) < 0)
				return rc;
		for (size_t i = 0; amd && i < sizeof(x86map_amd) / sizeof(x86map_amd[0]); i++)
			if (strcmp(tok, x86map_amd[i].linux) == 0 &&
			    (rc = set_add(s, x86map_amd[i].kp)) < 0)
				return rc;
	}
	/* what klauspost checks before setting a flag */
	if (!set_has(s, "BMI1"))
		set_del(s, "BMI2");
	if (!set_has(s, "AVX")) {
		set_del(s, "AVX2");
		set_del(s, "AVXVNNI");
		set_del(s, "XOP");
		set_del(s, "FMA4");
	}
	if (!set_has(s, "OSXSAVE"))
		set_del(s, "FMA3");
	/* HTT: the ht bit and more than one thread per core, Intel or AMD only */
	if (!(intel || amd) || nfdsrc_num_(ci->siblings, 10, 1) <= nfdsrc_num_(ci->cores, 10, 1))
		set_del(s, "HTT");
	if (set_has(s, "AVX") &&
	    ((intel && family == 6 && model < 60) ||
	     (amd && (family < 23 || (family == 23 && model < 49)))) &&
	    (rc = set_add(s, "AVXSLOW")) < 0)
		return rc;
	/* klauspost reads CPUID.7.0:ECX bit 3 (which is PKU) as AMXFP8 when
	 * the OS saves AVX-512 state; reproduced so the labels match */
	if (has_tok(ci->flags, "pku") && set_has(s, "AVX512F") && (rc = set_add(s, "AMXFP8")) < 0)
		return rc;
	/* AMD parts before family 19h, and some 1Ah, are not affected by TSA */
	if (amd && (family < 0x19 || (family == 0x1a && (model <= 0x4f ||
							 (model >= 0x60 && model <= 0x7f))))) {
		if ((rc = set_add(s, "TSA_L1_NO")) < 0 || (rc = set_add(s, "TSA_SQ_NO")) < 0)
			return rc;
	}
	/* CPUID leaf 0xA fixed counters: every Intel part with architectural
	 * perfmon v2+ has the first three */
	if (intel && has_tok(ci->flags, "arch_perfmon") &&
	    ((rc = set_add(s, "PMU_FIXEDCOUNTER_CYCLES")) < 0 ||
	     (rc = set_add(s, "PMU_FIXEDCOUNTER_INSTRUCTIONS")) < 0 ||
	     (rc = set_add(s, "PMU_FIXEDCOUNTER_REFCYCLES")) < 0))
		return rc;
	if (set_has(s, "SYSCALL") || set_has(s, "SYSEE")) {
		for (level = 0; level < 4; level++) {
			int ok = 1;

			for (size_t i = 0; i < 9 && x86_level[level][i]; i++)
				ok &= set_has(s, x86_level[level][i]);
			if (!ok)
				break;
		}
	}
	for (int i = 0; i < level; i++)
		if ((rc = set_add(s, x86_level_flag[i])) < 0)
			return rc;
	return 0;
}

/* Upper-cases into buf; 0 when it does not fit. */
static int upper(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < size; i++)
		buf[i] = (char)toupper((unsigned char)s[i]);
	buf[i] = '\0';
	return !s[i];
}

static int arm_flags(const struct cpuinfo *ci, enum cpu_flavour fl, struct strset *s)
{
	char tok[64], up[64];
	int rc;

	for (const char *p = ci->features; p && (p = next_tok(p, tok, sizeof(tok)));) {
		const char *name = NULL;

		if (fl == CPU_ARM) {
			for (size_t i = 0; !name && i < sizeof(arm_caps) / sizeof(arm_caps[0]); i++)
				if (strcmp(tok, arm_caps[i].linux) == 0)
					name = arm_caps[i].name;
		} else if (upper(tok, up, sizeof(up))) {
			for (size_t i = 0; !name && i < sizeof(arm64_caps) / sizeof(arm64_caps[0]); i++)
				if (strcmp(up, arm64_caps[i]) == 0)
					name = arm64_caps[i];
		}
		if (name && (rc = set_add(s, name)) < 0)
			return rc;
	}
	return 0;
}

static enum cpu_flavour cpu_flavour(const struct cpuinfo *ci)
{
	char tok[64];

	if (ci->flags)
		return CPU_X86;
	if (!ci->features)
		return CPU_UNKNOWN;
	/* a 32-bit kernel, or an arm64 one answering a 32-bit reader, lists the
	 * AArch32 hwcaps: what upstream's arm build would see */
	for (const char *p = ci->features; (p = next_tok(p, tok, sizeof(tok)));)
		for (size_t i = 0; i < sizeof(arm_caps) / sizeof(arm_caps[0]); i++)
			if (arm_caps[i].arm32_only && strcmp(tok, arm_caps[i].linux) == 0)
				return CPU_ARM;
	return CPU_ARM64;
}

/* cpu.model: x86 from cpuinfo, arm64 from MIDR_EL1 as klauspost decodes it
 * (only readable when the kernel exposes the CPUID hwcap), else unknown. */
static int cpu_model(const struct hostfs *h, const struct cpuinfo *ci, enum cpu_flavour fl,
		     const struct strset *flags, char *vendor, size_t vsize, char *family,
		     char *model)
{
	unsigned long midr = 0;
	char buf[ATTR_SIZE];
	int have = 0;

	snprintf(vendor, vsize, "VendorUnknown");
	strcpy(family, "0");
	strcpy(model, "0");
	if (fl == CPU_X86) {
		snprintf(vendor, vsize, "%s", x86_vendor(ci->vendor));
		snprintf(family, 24, "%ld", nfdsrc_num_(ci->family, 10, 0));
		snprintf(model, 24, "%ld", nfdsrc_num_(ci->model, 10, 0));
		return 0;
	}
	if (fl != CPU_ARM64 || !set_has(flags, "CPUID"))
		return 0;
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/cpu0/regs/identification/midr_el1", buf,
		      sizeof(buf)) > 0 && sysfs_parse_hex(buf, &midr) == 0) {
		have = 1;
	} else if (ci->implementer && ci->part) {
		/* the architecture field of every AArch64 MIDR is 0xf */
		midr = ((unsigned long)nfdsrc_num_(ci->implementer, 0, 0) & 0xff) << 24 |
		       ((unsigned long)nfdsrc_num_(ci->variant, 0, 0) & 0xf) << 20 | 0xful << 16 |
		       ((unsigned long)nfdsrc_num_(ci->part, 0, 0) & 0xfff) << 4 |
		       ((unsigned long)nfdsrc_num_(ci->revision, 0, 0) & 0xf);
		have = 1;
	}
	if (!have)
		return 0;
	for (size_t i = 0; i < sizeof(arm_vendors) / sizeof(arm_vendors[0]); i++)
		if (((midr >> 24) & 0xff) == arm_vendors[i].code)
			snprintf(vendor, vsize, "%s", arm_vendors[i].name);
	snprintf(family, 24, "%lu", (midr >> 16) & 0xff);
	snprintf(model, 24, "%lu", midr & 0xffff);
	return 0;
}

/* Upstream asks CPUID leaf 0x40000000 for the hypervisor's signature; the
 * kernel's choice of clocksource and the DMI vendor say the same here. */
static void hypervisor(const struct hostfs *h, int vm, char *out, size_t size)
{
	static const struct {
		const char *clock, *name;
	} clocks[] = { { "kvm-clock", "kvm" }, { "hyperv_clocksource", "msvm" }, { "xen", "xenhvm" } };
	static const struct {
		const char *vendor, *name;
	} dmi[] = { { "VMware, Inc.", "vmware" }, { "BHYVE", "bhyve" }, { "QEMU", "qemu" },
		    { "Microsoft Corporation", "msvm" }, { "Xen", "xenhvm" } };
	char buf[ATTR_SIZE], tok[64];

	snprintf(out, size, "%s", vm ? "unknown" : "none");
	if (!vm)
		return;
	if (nfdsrc_host_attr_(h, "sys/hypervisor/type", buf, sizeof(buf)) > 0 && strcmp(buf, "xen") == 0) {
		snprintf(out, size, "xenhvm");
		return;
	}
	if (nfdsrc_host_attr_(h, "sys/devices/system/clocksource/clocksource0/available_clocksource", buf,
		      sizeof(buf)) > 0) {
		for (const char *p = buf; (p = next_tok(p, tok, sizeof(tok)));)
			for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
				if (strncmp(tok, clocks[i].clock, strlen(clocks[i].clock)) == 0) {
					snprintf(out, size, "%s", clocks[i].name);
					return;
				}
	}
	if (nfdsrc_host_attr_(h, "sys/devices/virtual/dmi/id/sys_vendor", buf, sizeof(buf)) > 0)
		for (size_t i = 0; i < sizeof(dmi) / sizeof(dmi[0]); i++)
			if (strcmp(buf, dmi[i].vendor) == 0) {
				snprintf(out, size, "%s", dmi[i].name);
				return;
			}
}

/* cpu.topology: any CPU with thread siblings, and distinct packages. Any
 * unreadable file empties the set, as upstream. */
static int cpu_topology(const struct hostfs *h, struct features *f, struct json *labels,
			const struct fb_log *lg)
{
	struct nfdsrc_names cpus = { 0 }, pkgs = { 0 };
	char buf[ATTR_SIZE], path[NAME_MAX + 64];
	int dfd = -1, rc, ht = 0, ok = 1;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.topology")) < 0)
		return rc;
	rc = nfdsrc_host_list_(h, "sys/bus/cpu/devices", &dfd, &cpus);
	if (rc == -FB_ENOMEM)
		goto out;
	if (rc < 0) {
		NLOG_E(lg, "cpu: failed to read devices folder: %s", fb_strerror(rc));
		rc = 0;
		goto out;
	}
	for (size_t i = 0; ok && i < cpus.n; i++) {
		snprintf(path, sizeof(path), "%s/topology/thread_siblings_list", cpus.v[i]);
		if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) < 0) {
			NLOG_E(lg, "cpu: error while reading %s", path);
			ok = 0;
			break;
		}
		ht |= strpbrk(buf, ",-") != NULL;
		snprintf(path, sizeof(path), "%s/topology/physical_package_id", cpus.v[i]);
		if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) < 0) {
			NLOG_E(lg, "cpu: error while reading %s", path);
			ok = 0;
			break;
		}
		for (size_t k = 0; k <= pkgs.n; k++) {
			if (k == pkgs.n) {
				if ((rc = nfdsrc_names_push_(&pkgs, buf)) < 0)
					goto out;
				break;
			}
			if (strcmp(pkgs.v[k], buf) == 0)
				break;
		}
	}
	if (ok) {
		snprintf(buf, sizeof(buf), "%zu", pkgs.n);
		if ((rc = features_attr(f, "cpu.topology", "hardware_multithreading",
					ht ? "true" : "false")) < 0 ||
		    (rc = features_attr(f, "cpu.topology", "socket_count", buf)) < 0 ||
		    (rc = nfdsrc_label_(labels, "cpu", "hardware_multithreading", ht ? "true" : "false",
				lg)) < 0)
			goto out;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&cpus);
	nfdsrc_names_free_(&pkgs);
	return rc;
}

/* intel_idle's max_cstate (amd64 only upstream). 1: a set to publish. */
static int cpu_cstate(const struct hostfs *h, struct features *f, struct json *labels,
		      const struct fb_log *lg)
{
	char buf[ATTR_SIZE];
	long n;
	int rc;

	if (nfdsrc_host_exists_(h, "sys/devices/system/cpu") != 1) {
		NLOG_E(lg, "cpu: unable to detect cstate status");
		return 0;
	}
	if (nfdsrc_host_exists_(h, "sys/devices/system/cpu/cpuidle") == 0)
		return features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/cpuidle/current_driver", buf, sizeof(buf)) < 0) {
		NLOG_E(lg, "cpu: cannot get driver for cpuidle");
		return 0;
	}
	if (strcmp(buf, "intel_idle") != 0)
		return features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (nfdsrc_host_attr_(h, "sys/module/intel_idle/parameters/max_cstate", buf, sizeof(buf)) < 0 ||
	    (n = nfdsrc_num_(buf, 10, -1)) == -1) {
		NLOG_E(lg, "cpu: cannot determine cstate from max_cstate");
		return 0;
	}
	if ((rc = features_attr(f, "cpu.cstate", "enabled", n > 0 ? "true" : "false")) < 0)
		return rc;
	return nfdsrc_label_(labels, "cpu", "cstate.enabled", n > 0 ? "true" : "false", lg);
}

/* intel_pstate status, turbo and the common scaling governor (amd64 only). */
static int cpu_pstate(const struct hostfs *h, struct features *f, struct json *labels,
		      const struct fb_log *lg)
{
	static const char *const keys[] = { "scaling_governor", "status", "turbo" };
	char status[ATTR_SIZE], turbo[8] = "", gov[ATTR_SIZE] = "", buf[ATTR_SIZE];
	char path[NAME_MAX + 64];
	struct nfdsrc_names pol = { 0 };
	const char *vals[3];
	int rc, dfd = -1;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.pstate")) < 0)
		return rc;
	if (nfdsrc_host_exists_(h, "sys/devices/system/cpu") != 1 ||
	    nfdsrc_host_exists_(h, "sys/devices/system/cpu/intel_pstate") == 0)
		return 0;
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/intel_pstate/status", status, sizeof(status)) < 0) {
		NLOG_E(lg, "cpu: failed to detect pstate");
		return 0;
	}
	if (strcmp(status, "off") == 0)
		return 0;
	if (nfdsrc_host_attr_(h, "sys/devices/system/cpu/intel_pstate/no_turbo", buf, sizeof(buf)) < 0)
		NLOG_E(lg, "cpu: can't detect whether turbo boost is enabled");
	else
		strcpy(turbo, buf[0] == '0' ? "true" : "false");
	if (strcmp(status, "active") == 0 &&
	    (rc = nfdsrc_host_list_(h, "sys/devices/system/cpu/cpufreq", &dfd, &pol)) == 0) {
		for (size_t i = 0; i < pol.n; i++) {
			snprintf(path, sizeof(path), "%s/affected_cpus", pol.v[i]);
			if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) <= 0)
				continue;
			snprintf(path, sizeof(path), "%s/scaling_governor", pol.v[i]);
			if (nfdsrc_attr_at_(dfd, path, buf, sizeof(buf)) < 0)
				continue;
			if (gov[0] && strcmp(gov, buf) != 0) {
				gov[0] = '\0';
				break;
			}
			strcpy(gov, buf);
		}
	}
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&pol);
	if (rc == -FB_ENOMEM)
		return rc;
	vals[0] = gov;
	vals[1] = status;
	vals[2] = turbo;
	for (size_t i = 0; i < 3; i++) {
		char name[32];

		if (!vals[i][0])
			continue;
		snprintf(name, sizeof(name), "pstate.%s", keys[i]);
		if ((rc = features_attr(f, "cpu.pstate", keys[i], vals[i])) < 0 ||
		    (rc = nfdsrc_label_(labels, "cpu", name, vals[i], lg)) < 0)
			return rc;
	}
	return 0;
}

/* The first number of the misc cgroup capacity line starting with res. */
static long misc_capacity(const struct hostfs *h, const char *res)
{
	static const char *const files[] = { "sys/fs/cgroup/misc.capacity",
					     "sys/fs/cgroup/misc/misc.capacity" };

	for (size_t i = 0; i < 2; i++) {
		char *buf, *line, *next;
		long v = -1;

		if (nfdsrc_host_file_(h, files[i], &buf) < 0)
			continue;
		for (line = buf; line && *line; line = next) {
			char *sp;

			if ((next = strchr(line, '\n')))
				*next++ = '\0';
			if (strncmp(line, res, strlen(res)) != 0)
				continue;
			if ((sp = strchr(line, ' ')))
				v = nfdsrc_num_(sp + 1, 10, -1);
			break;
		}
		free(buf);
		return v;
	}
	return -1;
}

static int kvm_param(const struct hostfs *h, const char *param)
{
	char rel[96], buf[ATTR_SIZE];

	snprintf(rel, sizeof(rel), "sys/module/kvm_amd/parameters/%s", param);
	return nfdsrc_host_attr_(h, rel, buf, sizeof(buf)) > 0 && (buf[0] == '1' || buf[0] == 'Y');
}

/* cpu.security (amd64): SGX, TDX and SEV as the kernel reports them. */
static int cpu_security(const struct hostfs *h, const struct strset *flags, struct features *f,
			struct json *labels, const struct fb_log *lg)
{
	struct { const char *k; char v[24]; } el[11];
	size_t n = 0;
	struct nfdsrc_names nodes = { 0 };
	unsigned long long epc = 0;
	int rc, dfd = -1;
	long v;

	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.security")) < 0)
		return rc;
	if (set_has(flags, "SGX") &&
	    (rc = nfdsrc_host_list_(h, "sys/devices/system/node", &dfd, &nodes)) != -FB_ENOMEM) {
		for (size_t i = 0; rc == 0 && i < nodes.n; i++) {
			char path[NAME_MAX + 32];
			unsigned long b;

			snprintf(path, sizeof(path), "%s/x86/sgx_total_bytes", nodes.v[i]);
			if (strncmp(nodes.v[i], "node", 4) == 0 && sysfs_read_dec(dfd, path, &b) == 0)
				epc += b;
		}
	}
	if (dfd >= 0)
		close(dfd);
	nfdsrc_names_free_(&nodes);
	if (rc == -FB_ENOMEM)
		return rc;
	if (epc) {
		el[n].k = "sgx.enabled";
		strcpy(el[n++].v, "true");
		el[n].k = "sgx.epc";
		snprintf(el[n++].v, sizeof(el[0].v), "%llu", epc);
	}
	{
		/* exactly "Y\n": upstream compares the whole file */
		char *tdx = NULL;

		if (nfdsrc_host_file_(h, "sys/module/kvm_intel/parameters/tdx", &tdx) >= 0 &&
		    strcmp(tdx, "Y\n") == 0) {
			el[n].k = "tdx.enabled";
			strcpy(el[n++].v, "true");
			if ((v = misc_capacity(h, "tdx")) > -1) {
				el[n].k = "tdx.total_keys";
				snprintf(el[n++].v, sizeof(el[0].v), "%ld", v);
			}
		}
		free(tdx);
	}
	if (set_has(flags, "TDX_GUEST")) {
		el[n].k = "tdx.protected";
		strcpy(el[n++].v, "true");
	}
	if (kvm_param(h, "sev")) {
		el[n].k = "sev.enabled";
		strcpy(el[n++].v, "true");
		if ((v = misc_capacity(h, "sev")) > -1) {
			el[n].k = "sev.asids";
			snprintf(el[n++].v, sizeof(el[0].v), "%ld", v);
		}
	}
	if (kvm_param(h, "sev_es")) {
		el[n].k = "sev.es.enabled";
		strcpy(el[n++].v, "true");
		if ((v = misc_capacity(h, "sev_es")) > -1) {
			el[n].k = "sev.encrypted_state_ids";
			snprintf(el[n++].v, sizeof(el[0].v), "%ld", v);
		}
	}
	if (kvm_param(h, "sev_snp")) {
		el[n].k = "sev.snp.enabled";
		strcpy(el[n++].v, "true");
	}
	for (size_t i = 0; i < n; i++) {
		char name[48];

		if ((rc = features_attr(f, "cpu.security", el[i].k, el[i].v)) < 0)
			return rc;
		/* sizes and counts are for rules and extended resources only */
		if (strcmp(el[i].k, "tdx.total_keys") == 0 || strcmp(el[i].k, "sgx.epc") == 0 ||
		    strcmp(el[i].k, "sev.encrypted_state_ids") == 0 ||
		    strcmp(el[i].k, "sev.asids") == 0)
			continue;
		snprintf(name, sizeof(name), "security.%s", el[i].k);
		if ((rc = nfdsrc_label_(labels, "cpu", name, el[i].v, lg)) < 0)
			return rc;
	}
	return 0;
}

int nfdsrc_cpu(const struct hostfs *h, const struct nfdsrc_config *c, struct features *f,
	       struct json *labels, const struct fb_log *lg)
{
	struct strset flags = { 0 };
	struct cpuinfo ci;
	enum cpu_flavour fl = CPU_UNKNOWN;
	char *buf = NULL, vendor[64], family[24], model[24], hv[ATTR_SIZE];
	ssize_t n;
	int rc;

	n = nfdsrc_host_head_(h, "proc/cpuinfo", 64 << 10, &buf);
	if (n == -FB_ENOMEM)
		return -FB_ENOMEM;
	if (n < 0) {
		NLOG_E(lg, "cpu: failed to read cpuinfo: %s", fb_strerror((int)n));
		memset(&ci, 0, sizeof(ci));
	} else {
		parse_cpuinfo(buf, &ci);
		fl = cpu_flavour(&ci);
	}
	if (fl == CPU_X86)
		rc = x86_flags(&ci, &flags);
	else
		rc = arm_flags(&ci, fl, &flags);
	if (rc < 0)
		goto out;
	if (flags.n)
		qsort(flags.v, flags.n, sizeof(*flags.v), cmp_cstr);

	/* features in key order: cpu.coprocessor, cpu.cpuid, cpu.cstate, ... */
	if ((rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.coprocessor")) < 0 ||
	    (rc = features_ensure(f, FEATURES_FLAGS, "cpu.cpuid")) < 0)
		goto out;
	if (fl == CPU_X86 && (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cpuid")) < 0)
		goto out;
	for (size_t i = 0; i < flags.n; i++) {
		char name[80];
		int pass = c->cpu_whitelist.n ? nfdsrc_list_has_(&c->cpu_whitelist, flags.v[i])
					      : !nfdsrc_list_has_(&c->cpu_blacklist, flags.v[i]);

		if ((rc = features_flag(f, "cpu.cpuid", flags.v[i])) < 0)
			goto out;
		snprintf(name, sizeof(name), "cpuid.%s", flags.v[i]);
		if (pass && (rc = nfdsrc_label_true_(labels, "cpu", name, lg)) < 0)
			goto out;
	}
	if (fl == CPU_X86)
		rc = cpu_cstate(h, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.cstate");
	if (rc < 0)
		goto out;

	cpu_model(h, &ci, fl, &flags, vendor, sizeof(vendor), family, model);
	hypervisor(h, fl == CPU_X86 && set_has(&flags, "HYPERVISOR"), hv, sizeof(hv));
	nfdsrc_squash_invalid_(hv);
	if ((rc = features_attr(f, "cpu.model", "family", family)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "hypervisor", hv)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "id", model)) < 0 ||
	    (rc = features_attr(f, "cpu.model", "vendor_id", vendor)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.family", family, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.hypervisor", hv, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.id", model, lg)) < 0 ||
	    (rc = nfdsrc_label_(labels, "cpu", "model.vendor_id", vendor, lg)) < 0)
		goto out;

	if (fl == CPU_X86)
		rc = cpu_pstate(h, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.pstate");
	if (rc < 0 || (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.rdt")) < 0)
		goto out;
	if (fl == CPU_X86)
		rc = cpu_security(h, &flags, f, labels, lg);
	else
		rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.security");
	if (rc < 0 || (rc = features_ensure(f, FEATURES_ATTRIBUTES, "cpu.sst")) < 0)
		goto out;
	rc = cpu_topology(h, f, labels, lg);
out:
	free(flags.v);
	free(buf);
	return rc;
}

static int cpu_discover(const struct nfdsrc_ctx *c, struct features *f, struct json *labels)
{
	return nfdsrc_cpu(c->h, c->cfg, f, labels, c->lg);
}

const struct nfdsrc_source nfdsrc_cpu_source_ = { "cpu", NFDSRC_HOST, 0, 0, cpu_discover };
