/* nfdsrc cpuid: cpu.cpuid's flag names from /proc/cpuinfo, translated to
 * the names upstream's klauspost/cpuid (x86) and its arm tables give (the
 * deviation is in nfdsrc.c). */
#include "nfdsrc_internal.h"

#include "buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nfdsrc_set_has_(const struct nfdsrc_strset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0)
			return 1;
	return 0;
}

int nfdsrc_set_add_(struct nfdsrc_strset *s, const char *name)
{
	if (nfdsrc_set_has_(s, name))
		return 0;
	if (ARRAY_GROW(s->v, s->size, s->n + 1) < 0)
		return -FB_ENOMEM;
	s->v[s->n++] = name;
	return 0;
}

void nfdsrc_set_del_(struct nfdsrc_strset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], name) == 0) {
			memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof(*s->v));
			s->n--;
			return;
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


/* Whitespace-separated token iteration over a cpuinfo flags line. */
const char *nfdsrc_next_tok_(const char *s, char *tok, size_t size)
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

	for (const char *p = line; p && (p = nfdsrc_next_tok_(p, tok, sizeof(tok)));)
		if (strcmp(tok, want) == 0)
			return 1;
	return 0;
}

const char *nfdsrc_x86_vendor_(const char *id)
{
	for (size_t i = 0; id && i < sizeof(x86vendors) / sizeof(x86vendors[0]); i++)
		if (strcmp(id, x86vendors[i].id) == 0)
			return x86vendors[i].name;
	return "VendorUnknown";
}

/* The klauspost flag set of an x86 cpuinfo. */
int nfdsrc_x86_flags_(const struct nfdsrc_cpuinfo *ci, struct nfdsrc_strset *s)
{
	const char *vendor = nfdsrc_x86_vendor_(ci->vendor);
	int amd = strcmp(vendor, "AMD") == 0, intel = strcmp(vendor, "Intel") == 0;
	long family = nfdsrc_num_(ci->family, 10, 0), model = nfdsrc_num_(ci->model, 10, 0);
	char tok[64];
	int rc, level = 0;

	for (const char *p = ci->flags; p && (p = nfdsrc_next_tok_(p, tok, sizeof(tok)));) {
		for (size_t i = 0; i < sizeof(x86map) / sizeof(x86map[0]); i++)
			if (strcmp(tok, x86map[i].linux) == 0 && (rc = nfdsrc_set_add_(s, x86map[i].kp)) < 0)
				return rc;
		for (size_t i = 0; amd && i < sizeof(x86map_amd) / sizeof(x86map_amd[0]); i++)
			if (strcmp(tok, x86map_amd[i].linux) == 0 &&
			    (rc = nfdsrc_set_add_(s, x86map_amd[i].kp)) < 0)
				return rc;
	}
	/* what klauspost checks before setting a flag */
	if (!nfdsrc_set_has_(s, "BMI1"))
		nfdsrc_set_del_(s, "BMI2");
	if (!nfdsrc_set_has_(s, "AVX")) {
		nfdsrc_set_del_(s, "AVX2");
		nfdsrc_set_del_(s, "AVXVNNI");
		nfdsrc_set_del_(s, "XOP");
		nfdsrc_set_del_(s, "FMA4");
	}
	if (!nfdsrc_set_has_(s, "OSXSAVE"))
		nfdsrc_set_del_(s, "FMA3");
	/* HTT: the ht bit and more than one thread per core, Intel or AMD only */
	if (!(intel || amd) || nfdsrc_num_(ci->siblings, 10, 1) <= nfdsrc_num_(ci->cores, 10, 1))
		nfdsrc_set_del_(s, "HTT");
	if (nfdsrc_set_has_(s, "AVX") &&
	    ((intel && family == 6 && model < 60) ||
	     (amd && (family < 23 || (family == 23 && model < 49)))) &&
	    (rc = nfdsrc_set_add_(s, "AVXSLOW")) < 0)
		return rc;
	/* klauspost reads CPUID.7.0:ECX bit 3 (which is PKU) as AMXFP8 when
	 * the OS saves AVX-512 state; reproduced so the labels match */
	if (has_tok(ci->flags, "pku") && nfdsrc_set_has_(s, "AVX512F") && (rc = nfdsrc_set_add_(s, "AMXFP8")) < 0)
		return rc;
	/* AMD parts before family 19h, and some 1Ah, are not affected by TSA */
	if (amd && (family < 0x19 || (family == 0x1a && (model <= 0x4f ||
							 (model >= 0x60 && model <= 0x7f))))) {
		if ((rc = nfdsrc_set_add_(s, "TSA_L1_NO")) < 0 || (rc = nfdsrc_set_add_(s, "TSA_SQ_NO")) < 0)
			return rc;
	}
	/* CPUID leaf 0xA fixed counters: every Intel part with architectural
	 * perfmon v2+ has the first three */
	if (intel && has_tok(ci->flags, "arch_perfmon") &&
	    ((rc = nfdsrc_set_add_(s, "PMU_FIXEDCOUNTER_CYCLES")) < 0 ||
	     (rc = nfdsrc_set_add_(s, "PMU_FIXEDCOUNTER_INSTRUCTIONS")) < 0 ||
	     (rc = nfdsrc_set_add_(s, "PMU_FIXEDCOUNTER_REFCYCLES")) < 0))
		return rc;
	if (nfdsrc_set_has_(s, "SYSCALL") || nfdsrc_set_has_(s, "SYSEE")) {
		for (level = 0; level < 4; level++) {
			int ok = 1;

			for (size_t i = 0; i < 9 && x86_level[level][i]; i++)
				ok &= nfdsrc_set_has_(s, x86_level[level][i]);
			if (!ok)
				break;
		}
	}
	for (int i = 0; i < level; i++)
		if ((rc = nfdsrc_set_add_(s, x86_level_flag[i])) < 0)
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

int nfdsrc_arm_flags_(const struct nfdsrc_cpuinfo *ci, enum nfdsrc_cpu_flavour fl, struct nfdsrc_strset *s)
{
	char tok[64], up[64];
	int rc;

	for (const char *p = ci->features; p && (p = nfdsrc_next_tok_(p, tok, sizeof(tok)));) {
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
		if (name && (rc = nfdsrc_set_add_(s, name)) < 0)
			return rc;
	}
	return 0;
}

enum nfdsrc_cpu_flavour nfdsrc_cpu_flavour_(const struct nfdsrc_cpuinfo *ci)
{
	char tok[64];

	if (ci->flags)
		return CPU_X86;
	if (!ci->features)
		return CPU_UNKNOWN;
	/* a 32-bit kernel, or an arm64 one answering a 32-bit reader, lists the
	 * AArch32 hwcaps: what upstream's arm build would see */
	for (const char *p = ci->features; (p = nfdsrc_next_tok_(p, tok, sizeof(tok)));)
		for (size_t i = 0; i < sizeof(arm_caps) / sizeof(arm_caps[0]); i++)
			if (arm_caps[i].arm32_only && strcmp(tok, arm_caps[i].linux) == 0)
				return CPU_ARM;
	return CPU_ARM64;
}
