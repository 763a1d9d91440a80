/* cpuid x86: the x86 flags, levels and model github.com/klauspost/cpuid/v2
 * v2.4.0 gives (cpuid.go: support, familyModel, threadsPerCore, vendorID,
 * hypervisorVendorID, supportAVX10, parseLeaf0AH, X64Level), and upstream's
 * cpu.rdt (source/cpu/rdt_linux_amd64.go, which reads CPUID itself), all from
 * a register dump. The library's facts are carried over bit for bit, its
 * quirks included: XSAVE and OSXSAVE follow CPUID.1:ECX bit 0 (an operator
 * precedence slip), CPUID.7.0:ECX bit 3 (PKU on real parts) is AMXFP8 when the
 * OS saves AVX-512 state, and leaf 0x4000000C is read whenever the maximum
 * basic leaf is 0x20 or more. */
#include "cpuid_int.h"

#include "err.h"

#include <string.h>

/* The library's x86 FeatureIDs in its order (206), then the PMU ones. */
#define CPUID_X86_FLAGS(X) \
	X(ADX) X(AESNI) X(AMD3DNOW) X(AMD3DNOWEXT) X(AMXBF16) X(AMXFP16) X(AMXINT8) X(AMXFP8) X(AMXTILE) \
	X(AMXTF32) X(AMXCOMPLEX) X(AMXTRANSPOSE) X(APX_F) X(AVX) X(AVX10) X(AVX10_128) X(AVX10_256) \
	X(AVX10_512) X(AVX2) X(AVX512BF16) X(AVX512BITALG) X(AVX512BMM) X(AVX512BW) X(AVX512CD) \
	X(AVX512DQ) X(AVX512ER) X(AVX512F) X(AVX512FP16) X(AVX512IFMA) X(AVX512PF) X(AVX512VBMI) \
	X(AVX512VBMI2) X(AVX512VL) X(AVX512VNNI) X(AVX512VP2INTERSECT) X(AVX512VPOPCNTDQ) X(AVXIFMA) \
	X(AVXNECONVERT) X(AVXSLOW) X(AVXVNNI) X(AVXVNNIINT8) X(AVXVNNIINT16) X(BHI_CTRL) X(BMI1) X(BMI2) \
	X(CETIBT) X(CETSS) X(CLDEMOTE) X(CLMUL) X(CLZERO) X(CMOV) X(CMPCCXADD) X(CMPSB_SCADBS_SHORT) \
	X(CMPXCHG8) X(CPBOOST) X(CPPC) X(CX16) X(EFER_LMSLE_UNS) X(ENQCMD) X(ERMS) X(F16C) X(FLUSH_L1D) \
	X(FMA3) X(FMA4) X(FP128) X(FRED) X(FP256) X(FSRM) X(FXSR) X(FXSROPT) X(GFNI) X(HLE) X(HRESET) \
	X(HTT) X(HWA) X(HYBRID_CPU) X(HYPERVISOR) X(IA32_ARCH_CAP) X(IA32_CORE_CAP) X(IBPB) X(IBPB_BRTYPE) \
	X(IBRS) X(IBRS_PREFERRED) X(IBRS_PROVIDES_SMP) X(IBS) X(IBSBRNTRGT) X(IBSFETCHSAM) X(IBSFFV) \
	X(IBSOPCNT) X(IBSOPCNTEXT) X(IBSOPSAM) X(IBSRDWROPCNT) X(IBSRIPINVALIDCHK) X(IBS_FETCH_CTLX) \
	X(IBS_OPDATA4) X(IBS_OPFUSE) X(IBS_PREVENTHOST) X(IBS_ZEN4) X(IDPRED_CTRL) X(INT_WBINVD) \
	X(INVLPGB) X(KEYLOCKER) X(KEYLOCKERW) X(LAHF) X(LAM) X(LBRVIRT) X(LZCNT) X(MCAOVERFLOW) X(MCDT_NO) \
	X(MCOMMIT) X(MD_CLEAR) X(MMX) X(MMXEXT) X(MOVBE) X(MOVDIR64B) X(MOVDIRI) X(MOVSB_ZL) X(MOVU) \
	X(MPX) X(MSRIRC) X(MSRLIST) X(MSR_PAGEFLUSH) X(NRIPS) X(NX) X(OSXSAVE) X(PCONFIG) X(POPCNT) \
	X(PPIN) X(PREFETCHI) X(PSFD) X(RDPRU) X(RDRAND) X(RDSEED) X(RDTSCP) X(RRSBA_CTRL) X(RTM) \
	X(RTM_ALWAYS_ABORT) X(SBPB) X(SERIALIZE) X(SEV) X(SEV_64BIT) X(SEV_ALTERNATIVE) X(SEV_DEBUGSWAP) \
	X(SEV_ES) X(SEV_RESTRICTED) X(SEV_SNP) X(SGX) X(SGXLC) X(SGXPQC) X(SHA) X(SME) X(SME_COHERENT) \
	X(SM3_X86) X(SM4_X86) X(SPEC_CTRL_SSBD) X(SRBDS_CTRL) X(SRSO_MSR_FIX) X(SRSO_NO) \
	X(SRSO_USER_KERNEL_NO) X(SSE) X(SSE2) X(SSE3) X(SSE4) X(SSE42) X(SSE4A) X(SSSE3) X(STIBP) \
	X(STIBP_ALWAYSON) X(STOSB_SHORT) X(SUCCOR) X(SVM) X(SVMDA) X(SVMFBASID) X(SVML) X(SVMNP) X(SVMPF) \
	X(SVMPFT) X(SYSCALL) X(SYSEE) X(TBM) X(TDX_GUEST) X(TLB_FLUSH_NESTED) X(TME) X(TOPEXT) \
	X(TSA_L1_NO) X(TSA_SQ_NO) X(TSA_VERW_CLEAR) X(TSCRATEMSR) X(TSXLDTRK) X(VAES) X(VMCBCLEAN) X(VMPL) \
	X(VMSA_REGPROT) X(VMX) X(VPCLMULQDQ) X(VTE) X(WAITPKG) X(WBNOINVD) X(WRMSRNS) X(X87) X(XGETBV1) \
	X(XOP) X(XSAVE) X(XSAVEC) X(XSAVEOPT) X(XSAVES) X(PMU_FIXEDCOUNTER_CYCLES) \
	X(PMU_FIXEDCOUNTER_REFCYCLES) X(PMU_FIXEDCOUNTER_INSTRUCTIONS) X(PMU_FIXEDCOUNTER_TOPDOWN_SLOTS)

enum x86_flag {
#define X(n) F_##n,
	CPUID_X86_FLAGS(X)
#undef X
	F_COUNT
};

static const char *const x86_names[F_COUNT] = {
#define X(n) #n,
	CPUID_X86_FLAGS(X)
#undef X
};

struct fset {
	uint64_t w[(F_COUNT + 63) / 64];
};

static void set(struct fset *s, int f)
{
	s->w[f / 64] |= 1ull << (f % 64);
}

static int has(const struct fset *s, int f)
{
	return (s->w[f / 64] >> (f % 64)) & 1;
}

enum { EAX, EBX, ECX, EDX };
/* what a bit needs besides its leaf being in range */
enum guard { G_ALL, G_AVX, G_AVX512, G_BMI1, G_XSAVE, G_SGX, G_AVX10, G_SVM, G_IBS, G_AMD };

/* One CPUID bit: leaf, subleaf, register, bit, guard, flag. In the
 * library's order, so a guard's flag is set before a bit needs it. */
static const struct bit {
	uint32_t leaf;
	uint8_t sub, reg, bit, guard;
	uint16_t flag;
} bits[] = {
	{ 1, 0, EDX, 0, G_ALL, F_X87 }, { 1, 0, EDX, 8, G_ALL, F_CMPXCHG8 },
	{ 1, 0, EDX, 11, G_ALL, F_SYSEE }, { 1, 0, EDX, 15, G_ALL, F_CMOV },
	{ 1, 0, EDX, 23, G_ALL, F_MMX }, { 1, 0, EDX, 24, G_ALL, F_FXSR },
	{ 1, 0, EDX, 25, G_ALL, F_FXSROPT }, { 1, 0, EDX, 25, G_ALL, F_SSE },
	{ 1, 0, EDX, 26, G_ALL, F_SSE2 }, { 1, 0, ECX, 0, G_ALL, F_SSE3 },
	{ 1, 0, ECX, 5, G_ALL, F_VMX }, { 1, 0, ECX, 9, G_ALL, F_SSSE3 },
	{ 1, 0, ECX, 19, G_ALL, F_SSE4 }, { 1, 0, ECX, 20, G_ALL, F_SSE42 },
	{ 1, 0, ECX, 25, G_ALL, F_AESNI }, { 1, 0, ECX, 1, G_ALL, F_CLMUL },
	{ 1, 0, ECX, 22, G_ALL, F_MOVBE }, { 1, 0, ECX, 23, G_ALL, F_POPCNT },
	{ 1, 0, ECX, 30, G_ALL, F_RDRAND }, { 1, 0, ECX, 31, G_ALL, F_HYPERVISOR },
	{ 1, 0, ECX, 29, G_ALL, F_F16C }, { 1, 0, ECX, 13, G_ALL, F_CX16 },
	/* the library writes c&1<<26 and c&1<<27, which Go reads as (c&1)<<26:
	 * both flags follow ECX bit 0 (SSE3), not the XSAVE and OSXSAVE bits */
	{ 1, 0, ECX, 0, G_ALL, F_XSAVE }, { 1, 0, ECX, 0, G_ALL, F_OSXSAVE },

	{ 7, 0, EBX, 5, G_AVX, F_AVX2 }, { 7, 0, EBX, 3, G_ALL, F_BMI1 },
	{ 7, 0, EBX, 8, G_BMI1, F_BMI2 }, { 7, 0, EBX, 2, G_ALL, F_SGX },
	{ 7, 0, EBX, 4, G_ALL, F_HLE }, { 7, 0, EBX, 9, G_ALL, F_ERMS },
	{ 7, 0, EBX, 11, G_ALL, F_RTM }, { 7, 0, EBX, 14, G_ALL, F_MPX },
	{ 7, 0, EBX, 18, G_ALL, F_RDSEED }, { 7, 0, EBX, 19, G_ALL, F_ADX },
	{ 7, 0, EBX, 29, G_ALL, F_SHA },
	{ 7, 0, ECX, 5, G_ALL, F_WAITPKG }, { 7, 0, ECX, 7, G_ALL, F_CETSS },
	{ 7, 0, ECX, 8, G_ALL, F_GFNI }, { 7, 0, ECX, 9, G_ALL, F_VAES },
	{ 7, 0, ECX, 10, G_ALL, F_VPCLMULQDQ }, { 7, 0, ECX, 13, G_ALL, F_TME },
	{ 7, 0, ECX, 25, G_ALL, F_CLDEMOTE }, { 7, 0, ECX, 23, G_ALL, F_KEYLOCKER },
	{ 7, 0, ECX, 27, G_ALL, F_MOVDIRI }, { 7, 0, ECX, 28, G_ALL, F_MOVDIR64B },
	{ 7, 0, ECX, 29, G_ALL, F_ENQCMD }, { 7, 0, ECX, 30, G_ALL, F_SGXLC },
	{ 7, 0, EDX, 4, G_ALL, F_FSRM }, { 7, 0, EDX, 9, G_ALL, F_SRBDS_CTRL },
	{ 7, 0, EDX, 10, G_ALL, F_MD_CLEAR }, { 7, 0, EDX, 11, G_ALL, F_RTM_ALWAYS_ABORT },
	{ 7, 0, EDX, 14, G_ALL, F_SERIALIZE }, { 7, 0, EDX, 15, G_ALL, F_HYBRID_CPU },
	{ 7, 0, EDX, 16, G_ALL, F_TSXLDTRK }, { 7, 0, EDX, 18, G_ALL, F_PCONFIG },
	{ 7, 0, EDX, 20, G_ALL, F_CETIBT }, { 7, 0, EDX, 26, G_ALL, F_IBPB },
	{ 7, 0, EDX, 27, G_ALL, F_STIBP }, { 7, 0, EDX, 28, G_ALL, F_FLUSH_L1D },
	{ 7, 0, EDX, 29, G_ALL, F_IA32_ARCH_CAP }, { 7, 0, EDX, 30, G_ALL, F_IA32_CORE_CAP },
	{ 7, 0, EDX, 31, G_ALL, F_SPEC_CTRL_SSBD },
	{ 7, 1, EAX, 4, G_AVX, F_AVXVNNI }, { 7, 1, EAX, 1, G_ALL, F_SM3_X86 },
	{ 7, 1, EAX, 2, G_ALL, F_SM4_X86 }, { 7, 1, EAX, 7, G_ALL, F_CMPCCXADD },
	{ 7, 1, EAX, 10, G_ALL, F_MOVSB_ZL }, { 7, 1, EAX, 11, G_ALL, F_STOSB_SHORT },
	{ 7, 1, EAX, 12, G_ALL, F_CMPSB_SCADBS_SHORT }, { 7, 1, EAX, 17, G_ALL, F_FRED },
	{ 7, 1, EAX, 22, G_ALL, F_HRESET }, { 7, 1, EAX, 23, G_ALL, F_AVXIFMA },
	{ 7, 1, EAX, 26, G_ALL, F_LAM },
	{ 7, 1, EDX, 4, G_ALL, F_AVXVNNIINT8 }, { 7, 1, EDX, 5, G_ALL, F_AVXNECONVERT },
	{ 7, 1, EDX, 6, G_ALL, F_AMXTRANSPOSE }, { 7, 1, EDX, 7, G_ALL, F_AMXTF32 },
	{ 7, 1, EDX, 8, G_ALL, F_AMXCOMPLEX }, { 7, 1, EDX, 10, G_ALL, F_AVXVNNIINT16 },
	{ 7, 1, EDX, 14, G_ALL, F_PREFETCHI }, { 7, 1, EDX, 19, G_ALL, F_AVX10 },
	{ 7, 1, EDX, 21, G_ALL, F_APX_F },
	{ 7, 0, EBX, 16, G_AVX512, F_AVX512F }, { 7, 0, EBX, 17, G_AVX512, F_AVX512DQ },
	{ 7, 0, EBX, 21, G_AVX512, F_AVX512IFMA }, { 7, 0, EBX, 26, G_AVX512, F_AVX512PF },
	{ 7, 0, EBX, 27, G_AVX512, F_AVX512ER }, { 7, 0, EBX, 28, G_AVX512, F_AVX512CD },
	{ 7, 0, EBX, 30, G_AVX512, F_AVX512BW }, { 7, 0, EBX, 31, G_AVX512, F_AVX512VL },
	{ 7, 0, ECX, 1, G_AVX512, F_AVX512VBMI }, { 7, 0, ECX, 3, G_AVX512, F_AMXFP8 },
	{ 7, 0, ECX, 6, G_AVX512, F_AVX512VBMI2 }, { 7, 0, ECX, 11, G_AVX512, F_AVX512VNNI },
	{ 7, 0, ECX, 12, G_AVX512, F_AVX512BITALG }, { 7, 0, ECX, 14, G_AVX512, F_AVX512VPOPCNTDQ },
	{ 7, 0, EDX, 8, G_AVX512, F_AVX512VP2INTERSECT }, { 7, 0, EDX, 22, G_AVX512, F_AMXBF16 },
	{ 7, 0, EDX, 23, G_AVX512, F_AVX512FP16 }, { 7, 0, EDX, 24, G_AVX512, F_AMXTILE },
	{ 7, 0, EDX, 25, G_AVX512, F_AMXINT8 }, { 7, 1, EAX, 5, G_AVX512, F_AVX512BF16 },
	{ 7, 1, EAX, 19, G_AVX512, F_WRMSRNS }, { 7, 1, EAX, 21, G_AVX512, F_AMXFP16 },
	{ 7, 1, EAX, 27, G_AVX512, F_MSRLIST },
	{ 7, 2, EDX, 0, G_ALL, F_PSFD }, { 7, 2, EDX, 1, G_ALL, F_IDPRED_CTRL },
	{ 7, 2, EDX, 2, G_ALL, F_RRSBA_CTRL }, { 7, 2, EDX, 4, G_ALL, F_BHI_CTRL },
	{ 7, 2, EDX, 5, G_ALL, F_MCDT_NO },
	{ 0x12, 0, EAX, 12, G_SGX, F_SGXPQC },
	{ 0x24, 0, EBX, 16, G_AVX10, F_AVX10_128 }, { 0x24, 0, EBX, 17, G_AVX10, F_AVX10_256 },
	{ 0x24, 0, EBX, 18, G_AVX10, F_AVX10_512 },

	{ 0xd, 1, EAX, 0, G_XSAVE, F_XSAVEOPT }, { 0xd, 1, EAX, 1, G_XSAVE, F_XSAVEC },
	{ 0xd, 1, EAX, 2, G_XSAVE, F_XGETBV1 }, { 0xd, 1, EAX, 3, G_XSAVE, F_XSAVES },

	{ 0x80000001, 0, ECX, 5, G_ALL, F_LZCNT }, { 0x80000001, 0, ECX, 5, G_ALL, F_POPCNT },
	{ 0x80000001, 0, ECX, 0, G_ALL, F_LAHF }, { 0x80000001, 0, ECX, 2, G_ALL, F_SVM },
	{ 0x80000001, 0, ECX, 6, G_ALL, F_SSE4A }, { 0x80000001, 0, ECX, 10, G_ALL, F_IBS },
	{ 0x80000001, 0, ECX, 22, G_ALL, F_TOPEXT },
	{ 0x80000001, 0, EDX, 11, G_ALL, F_SYSCALL }, { 0x80000001, 0, EDX, 20, G_ALL, F_NX },
	{ 0x80000001, 0, EDX, 22, G_ALL, F_MMXEXT }, { 0x80000001, 0, EDX, 23, G_ALL, F_MMX },
	{ 0x80000001, 0, EDX, 24, G_ALL, F_FXSR }, { 0x80000001, 0, EDX, 25, G_ALL, F_FXSROPT },
	{ 0x80000001, 0, EDX, 27, G_ALL, F_RDTSCP }, { 0x80000001, 0, EDX, 30, G_ALL, F_AMD3DNOWEXT },
	{ 0x80000001, 0, EDX, 31, G_ALL, F_AMD3DNOW },
	{ 0x80000001, 0, ECX, 11, G_AVX, F_XOP }, { 0x80000001, 0, ECX, 16, G_AVX, F_FMA4 },

	{ 0x80000007, 0, EBX, 0, G_ALL, F_MCAOVERFLOW }, { 0x80000007, 0, EBX, 1, G_ALL, F_SUCCOR },
	{ 0x80000007, 0, EBX, 2, G_ALL, F_HWA }, { 0x80000007, 0, EDX, 9, G_ALL, F_CPBOOST },

	{ 0x80000008, 0, EBX, 28, G_ALL, F_PSFD }, { 0x80000008, 0, EBX, 27, G_ALL, F_CPPC },
	{ 0x80000008, 0, EBX, 24, G_ALL, F_SPEC_CTRL_SSBD }, { 0x80000008, 0, EBX, 23, G_ALL, F_PPIN },
	{ 0x80000008, 0, EBX, 21, G_ALL, F_TLB_FLUSH_NESTED },
	{ 0x80000008, 0, EBX, 20, G_ALL, F_EFER_LMSLE_UNS },
	{ 0x80000008, 0, EBX, 19, G_ALL, F_IBRS_PROVIDES_SMP },
	{ 0x80000008, 0, EBX, 18, G_ALL, F_IBRS_PREFERRED },
	{ 0x80000008, 0, EBX, 17, G_ALL, F_STIBP_ALWAYSON }, { 0x80000008, 0, EBX, 15, G_ALL, F_STIBP },
	{ 0x80000008, 0, EBX, 14, G_ALL, F_IBRS }, { 0x80000008, 0, EBX, 13, G_ALL, F_INT_WBINVD },
	{ 0x80000008, 0, EBX, 12, G_ALL, F_IBPB }, { 0x80000008, 0, EBX, 9, G_ALL, F_WBNOINVD },
	{ 0x80000008, 0, EBX, 8, G_ALL, F_MCOMMIT }, { 0x80000008, 0, EBX, 4, G_ALL, F_RDPRU },
	{ 0x80000008, 0, EBX, 3, G_ALL, F_INVLPGB }, { 0x80000008, 0, EBX, 1, G_ALL, F_MSRIRC },
	{ 0x80000008, 0, EBX, 0, G_ALL, F_CLZERO },

	{ 0x8000000a, 0, EDX, 0, G_SVM, F_SVMNP }, { 0x8000000a, 0, EDX, 1, G_SVM, F_LBRVIRT },
	{ 0x8000000a, 0, EDX, 2, G_SVM, F_SVML }, { 0x8000000a, 0, EDX, 3, G_SVM, F_NRIPS },
	{ 0x8000000a, 0, EDX, 4, G_SVM, F_TSCRATEMSR }, { 0x8000000a, 0, EDX, 5, G_SVM, F_VMCBCLEAN },
	{ 0x8000000a, 0, EDX, 6, G_SVM, F_SVMFBASID }, { 0x8000000a, 0, EDX, 7, G_SVM, F_SVMDA },
	{ 0x8000000a, 0, EDX, 10, G_SVM, F_SVMPF }, { 0x8000000a, 0, EDX, 12, G_SVM, F_SVMPFT },

	{ 0x8000001a, 0, EAX, 0, G_ALL, F_FP128 }, { 0x8000001a, 0, EAX, 1, G_ALL, F_MOVU },
	{ 0x8000001a, 0, EAX, 2, G_ALL, F_FP256 },

	{ 0x8000001b, 0, EAX, 0, G_IBS, F_IBSFFV }, { 0x8000001b, 0, EAX, 1, G_IBS, F_IBSFETCHSAM },
	{ 0x8000001b, 0, EAX, 2, G_IBS, F_IBSOPSAM }, { 0x8000001b, 0, EAX, 3, G_IBS, F_IBSRDWROPCNT },
	{ 0x8000001b, 0, EAX, 4, G_IBS, F_IBSOPCNT }, { 0x8000001b, 0, EAX, 5, G_IBS, F_IBSBRNTRGT },
	{ 0x8000001b, 0, EAX, 6, G_IBS, F_IBSOPCNTEXT },
	{ 0x8000001b, 0, EAX, 7, G_IBS, F_IBSRIPINVALIDCHK },
	{ 0x8000001b, 0, EAX, 8, G_IBS, F_IBS_OPFUSE }, { 0x8000001b, 0, EAX, 9, G_IBS, F_IBS_FETCH_CTLX },
	{ 0x8000001b, 0, EAX, 10, G_IBS, F_IBS_OPDATA4 }, { 0x8000001b, 0, EAX, 11, G_IBS, F_IBS_ZEN4 },

	{ 0x8000001f, 0, EAX, 0, G_AMD, F_SME }, { 0x8000001f, 0, EAX, 1, G_AMD, F_SEV },
	{ 0x8000001f, 0, EAX, 2, G_AMD, F_MSR_PAGEFLUSH }, { 0x8000001f, 0, EAX, 3, G_AMD, F_SEV_ES },
	{ 0x8000001f, 0, EAX, 4, G_AMD, F_SEV_SNP }, { 0x8000001f, 0, EAX, 5, G_AMD, F_VMPL },
	{ 0x8000001f, 0, EAX, 10, G_AMD, F_SME_COHERENT }, { 0x8000001f, 0, EAX, 11, G_AMD, F_SEV_64BIT },
	{ 0x8000001f, 0, EAX, 12, G_AMD, F_SEV_RESTRICTED },
	{ 0x8000001f, 0, EAX, 13, G_AMD, F_SEV_ALTERNATIVE },
	{ 0x8000001f, 0, EAX, 14, G_AMD, F_SEV_DEBUGSWAP },
	{ 0x8000001f, 0, EAX, 15, G_AMD, F_IBS_PREVENTHOST }, { 0x8000001f, 0, EAX, 16, G_AMD, F_VTE },
	{ 0x8000001f, 0, EAX, 24, G_AMD, F_VMSA_REGPROT },

	{ 0x80000021, 0, EAX, 31, G_AMD, F_SRSO_MSR_FIX },
	{ 0x80000021, 0, EAX, 30, G_AMD, F_SRSO_USER_KERNEL_NO },
	{ 0x80000021, 0, EAX, 29, G_AMD, F_SRSO_NO }, { 0x80000021, 0, EAX, 28, G_AMD, F_IBPB_BRTYPE },
	{ 0x80000021, 0, EAX, 27, G_AMD, F_SBPB }, { 0x80000021, 0, EAX, 23, G_AMD, F_AVX512BMM },
	{ 0x80000021, 0, ECX, 1, G_AMD, F_TSA_L1_NO }, { 0x80000021, 0, ECX, 2, G_AMD, F_TSA_SQ_NO },
	{ 0x80000021, 0, EAX, 5, G_AMD, F_TSA_VERW_CLEAR },
};

/* The library's vendor table: CPUID vendor strings, hypervisor ones too. */
static const struct {
	const char *id, *name;
} vendors[] = {
	{ "AMDisbetter!", "AMD" }, { "AuthenticAMD", "AMD" }, { "CentaurHauls", "VIA" },
	{ "GenuineIntel", "Intel" }, { "TransmetaCPU", "Transmeta" }, { "GenuineTMx86", "Transmeta" },
	{ "Geode by NSC", "NSC" }, { "VIA VIA VIA ", "VIA" }, { "KVMKVMKVM", "KVM" },
	{ "Linux KVM Hv", "KVM" }, { "TCGTCGTCGTCG", "QEMU" }, { "Microsoft Hv", "MSVM" },
	{ "VMwareVMware", "VMware" }, { "XenVMMXenVMM", "XenHVM" }, { "bhyve bhyve ", "Bhyve" },
	{ "HygonGenuine", "Hygon" }, { "Vortex86 SoC", "SiS" }, { "SiS SiS SiS ", "SiS" },
	{ "RiseRiseRise", "SiS" }, { "Genuine  RDC", "RDC" }, { "QNXQVMBSQG", "QNX" },
	{ "ACRNACRNACRN", "ACRN" }, { "SRESRESRESRE", "SRE" }, { "Apple VZ", "Apple" },
};

/* Three registers as a string, little-endian bytes, cut at the first NUL. */
static void reg_string(uint32_t a, uint32_t b, uint32_t c, char out[13])
{
	const uint32_t v[3] = { a, b, c };
	size_t n = 0;

	for (size_t i = 0; i < 3; i++)
		for (int k = 0; k < 4; k++) {
			char ch = (char)((v[i] >> (8 * k)) & 0xff);

			if (!ch)
				goto out;
			out[n++] = ch;
		}
out:
	out[n] = '\0';
}

static const char *vendor_name(const char *s)
{
	for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++)
		if (strcmp(s, vendors[i].id) == 0)
			return vendors[i].name;
	return NULL;
}

struct x86 {
	const struct cpuid_dump *d;
	uint32_t mfi, mext;
	const char *vendor;
	int intel, amd, family, model;
};

static int avail(const struct x86 *x, uint32_t leaf)
{
	if (leaf >= 0x80000000u)
		return x->mext >= leaf;
	/* leaf 0x12 (SGX) sits under the leaf 7 test, 0x24 is tested itself */
	return x->mfi >= (leaf == 0x12 ? 7 : leaf);
}

static int threads_per_core(const struct x86 *x)
{
	const uint32_t *l1 = cpuid_regs_(x->d, 1, 0);
	uint32_t b;

	if (x->mfi < 4 || (!x->intel && !x->amd))
		return 1;
	if (x->mfi < 0xb) {
		uint32_t v = (l1[EBX] >> 16) & 255;

		if (!x->intel || !(l1[EDX] & (1u << 28)) || v <= 1)
			return 1;
		return (int)(v / ((cpuid_regs_(x->d, 4, 0)[EAX] >> 26) + 1));
	}
	b = cpuid_regs_(x->d, 0xb, 0)[EBX];
	if (b & 0xffff)
		return (int)(b & 0xffff);
	if (x->amd && (l1[EDX] & (1u << 28)) && x->family >= 23) {
		if (x->mext >= 0x8000001e)
			return (int)((cpuid_regs_(x->d, 0x8000001e, 0)[EBX] >> 8) & 0xff) + 1;
		return 2;
	}
	return 1;
}

static int guard_ok(const struct x86 *x, const struct fset *s, int avx512, enum guard g)
{
	switch (g) {
	case G_AVX:
		return has(s, F_AVX);
	case G_AVX512:
		return avx512;
	case G_BMI1:
		return has(s, F_BMI1);
	case G_XSAVE:
		return has(s, F_XSAVE);
	case G_SGX:
		return has(s, F_SGX);
	case G_AVX10:
		return has(s, F_AVX10) && x->mfi >= 0x24;
	case G_SVM:
		return has(s, F_SVM);
	case G_IBS:
		return has(s, F_IBS);
	case G_AMD:
		return x->amd;
	case G_ALL:
		break;
	}
	return 1;
}

/* cpuid.go's support(): the flag set before the PMU flags. */
static void support(const struct x86 *x, struct fset *s)
{
	const uint32_t *l1 = cpuid_regs_(x->d, 1, 0);
	uint32_t c = l1[ECX], xcr0 = x->d->xcr0;
	int avx512;

	if (x->mfi < 1)
		return;
	if ((c & (7u << 26)) == 7u << 26 && (xcr0 & 6) == 6) {
		set(s, F_AVX);
		if ((x->intel && x->family == 6 && x->model < 60) ||
		    (x->amd && (x->family < 23 || (x->family == 23 && x->model < 49))))
			set(s, F_AVXSLOW);
	}
	if ((c & (1u << 12)) && (c & (1u << 27)))
		set(s, F_FMA3);
	if ((x->intel || x->amd) && (l1[EDX] & (1u << 28)) && x->mfi >= 4 && threads_per_core(x) > 1)
		set(s, F_HTT);
	/* the OS saves opmask, ZMM and XMM/YMM state */
	avx512 = (c & (3u << 26)) == 3u << 26 && ((xcr0 >> 5) & 7) == 7 && ((xcr0 >> 1) & 3) == 3;
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		const struct bit *b = &bits[i];

		if (avail(x, b->leaf) && guard_ok(x, s, avx512, b->guard) &&
		    (cpuid_regs_(x->d, b->leaf, b->sub)[b->reg] >> b->bit) & 1)
			set(s, b->flag);
	}
	if (x->mfi >= 0x19 && has(s, F_KEYLOCKER) && (cpuid_regs_(x->d, 0x19, 0)[EBX] & 5) == 5)
		set(s, F_KEYLOCKERW);
	/* AMD parts the library knows are not affected by TSA without saying so */
	if (x->amd && (x->family < 0x19 ||
		       (x->family == 0x1a && (x->model <= 0x4f || (x->model >= 0x60 && x->model <= 0x7f))))) {
		set(s, F_TSA_L1_NO);
		set(s, F_TSA_SQ_NO);
	}
	if (x->mfi >= 0x20 && cpuid_regs_(x->d, 0x4000000c, 0)[EBX] == 0xbe3)
		set(s, F_TDX_GUEST);
	if (x->mfi >= 0x21) {
		const uint32_t *r = cpuid_regs_(x->d, 0x21, 0);
		char id[13];

		reg_string(r[EBX], r[EDX], r[ECX], id);
		if (strcmp(id, "IntelTDX    ") == 0)
			set(s, F_TDX_GUEST);
	}
}

/* parseLeaf0AH: the architectural fixed counters. */
static void pmu(const struct x86 *x, struct fset *s)
{
	const uint32_t *r = cpuid_regs_(x->d, 0xa, 0);
	uint32_t ver = r[EAX] & 0xff, nfixed = ver > 1 ? r[EDX] & 0x1f : 0, ebx = r[EBX];

	if (x->mfi < 0xa || ver == 0)
		return;
	if (ebx == 0 && (nfixed == 3 || nfixed == 4)) {
		set(s, F_PMU_FIXEDCOUNTER_INSTRUCTIONS);
		set(s, F_PMU_FIXEDCOUNTER_CYCLES);
		set(s, F_PMU_FIXEDCOUNTER_REFCYCLES);
		if (nfixed == 4)
			set(s, F_PMU_FIXEDCOUNTER_TOPDOWN_SLOTS);
	} else if (ebx != 0) {
		/* a set bit says the counter is not there */
		static const int ctr[4] = { F_PMU_FIXEDCOUNTER_INSTRUCTIONS, F_PMU_FIXEDCOUNTER_CYCLES,
					    F_PMU_FIXEDCOUNTER_REFCYCLES, F_PMU_FIXEDCOUNTER_TOPDOWN_SLOTS };

		for (int i = 0; i < 4; i++)
			if (!((ebx >> i) & 1))
				set(s, ctr[i]);
	}
}

/* X64Level: the x86-64 psABI level the flags reach. */
static int x64_level(const struct fset *s)
{
	static const int need[4][10] = {
		{ F_CMOV, F_CMPXCHG8, F_X87, F_FXSR, F_MMX, F_SSE, F_SSE2, -1 },
		{ F_CX16, F_LAHF, F_POPCNT, F_SSE3, F_SSE4, F_SSE42, F_SSSE3, -1 },
		{ F_AVX, F_AVX2, F_BMI1, F_BMI2, F_F16C, F_FMA3, F_LZCNT, F_MOVBE, F_OSXSAVE, -1 },
		{ F_AVX512F, F_AVX512BW, F_AVX512CD, F_AVX512DQ, F_AVX512VL, -1 },
	};
	int level = 0;

	if (!has(s, F_SYSEE) && !has(s, F_SYSCALL))
		return 0;
	for (; level < 4; level++)
		for (int i = 0; need[level][i] >= 0; i++)
			if (!has(s, need[level][i]))
				return level;
	return level;
}

/* The label value upstream makes of an unknown hypervisor string: runs of
 * anything but [-A-Za-z0-9_.] become one '_'. */
static void sanitize(const char *in, char *out, size_t size)
{
	size_t n = 0;
	int run = 0;

	for (; *in && n + 1 < size; in++) {
		char ch = *in;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '_' || ch == '.') {
			out[n++] = ch;
			run = 0;
		} else if (!run) {
			out[n++] = '_';
			run = 1;
		}
	}
	out[n] = '\0';
}

static void hypervisor(const struct x86 *x, const struct fset *s, char *out, size_t size)
{
	const uint32_t *r = cpuid_regs_(x->d, 0x40000000, 0);
	const char *name;
	char id[13];

	if (!has(s, F_HYPERVISOR)) {
		snprintf(out, size, "none");
		return;
	}
	reg_string(r[EBX], r[ECX], r[EDX], id);
	if ((name = vendor_name(id))) {
		size_t i;

		for (i = 0; name[i] && i + 1 < size; i++)
			out[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
		out[i] = '\0';
		return;
	}
	sanitize(id, out, size);
	if (!out[0])
		snprintf(out, size, "unknown");
}

/* upstream's cpu.rdt: its own CPUID reads, no leaf range test */
static unsigned rdt(const struct cpuid_dump *d)
{
	uint32_t ebx = cpuid_regs_(d, 7, 0)[EBX], mon = cpuid_regs_(d, 0xf, 0)[EDX];
	uint32_t l3 = cpuid_regs_(d, 0xf, 1)[EDX], alloc = cpuid_regs_(d, 0x10, 0)[EBX];
	unsigned r = 0;

	if ((ebx & (1u << 12)) && (mon & 2)) {
		r |= CPUID_RDTMON;
		if (l3 & 1)
			r |= CPUID_RDTCMT;
		if ((l3 & 6) == 6)
			r |= CPUID_RDTMBM;
	}
	if (ebx & (1u << 15)) {
		if (alloc & 2)
			r |= CPUID_RDTL3CA;
		if (alloc & 4)
			r |= CPUID_RDTL2CA;
		if (alloc & 8)
			r |= CPUID_RDTMBA;
	}
	return r;
}

void cpuid_x86_detect_(const struct cpuid_dump *d, struct cpuid_info *out)
{
	static const char *const levels[4] = { "X86_64_V1", "X86_64_V2", "X86_64_V3", "X86_64_V4" };
	const uint32_t *l0 = cpuid_regs_(d, 0, 0);
	struct x86 x = { .d = d, .mfi = l0[EAX], .mext = cpuid_regs_(d, 0x80000000, 0)[EAX] };
	struct fset s = { { 0 } };
	char id[13];
	int level;

	reg_string(l0[EBX], l0[EDX], l0[ECX], id);
	x.vendor = vendor_name(id);
	x.intel = x.vendor && strcmp(x.vendor, "Intel") == 0;
	x.amd = x.vendor && strcmp(x.vendor, "AMD") == 0;
	if (x.mfi >= 1) {
		uint32_t eax = cpuid_regs_(d, 1, 0)[EAX];
		int ext;

		x.family = (int)((eax >> 8) & 0xf);
		ext = x.family == 6;
		if (x.family == 0xf) {
			x.family += (int)((eax >> 20) & 0xff);
			ext = 1;
		}
		x.model = (int)((eax >> 4) & 0xf);
		if (ext)
			x.model += (int)((eax >> 12) & 0xf0);
	}
	support(&x, &s);
	pmu(&x, &s);
	for (int f = 0; f < F_COUNT; f++)
		if (has(&s, f))
			cpuid_flag_(out, x86_names[f]);
	level = x64_level(&s);
	for (int i = 0; i < level; i++)
		cpuid_flag_(out, levels[i]);
	snprintf(out->vendor, sizeof(out->vendor), "%s", x.vendor ? x.vendor : "VendorUnknown");
	out->family = x.family;
	out->model = x.model;
	hypervisor(&x, &s, out->hypervisor, sizeof(out->hypervisor));
	if (x.mfi >= 0x24 && has(&s, F_AVX10))
		out->avx10 = cpuid_regs_(d, 0x24, 0)[EBX] & 0xff;
	out->rdt = rdt(d);
}

/* The leaves cpuid_x86_detect_ reads; the live dump takes each of them. */
static const uint32_t self_leaves[][2] = {
	{ 0, 0 }, { 1, 0 }, { 4, 0 }, { 7, 0 }, { 7, 1 }, { 7, 2 }, { 0xa, 0 }, { 0xb, 0 },
	{ 0xd, 1 }, { 0xf, 0 }, { 0xf, 1 }, { 0x10, 0 }, { 0x12, 0 }, { 0x19, 0 }, { 0x21, 0 },
	{ 0x24, 0 }, { 0x40000000, 0 }, { 0x4000000c, 0 }, { 0x80000000, 0 }, { 0x80000001, 0 },
	{ 0x80000007, 0 }, { 0x80000008, 0 }, { 0x8000000a, 0 }, { 0x8000001a, 0 },
	{ 0x8000001b, 0 }, { 0x8000001e, 0 }, { 0x8000001f, 0 }, { 0x80000021, 0 },
};

int cpuid_x86_self_(struct cpuid_dump *d)
{
#if defined(__x86_64__)
	for (size_t i = 0; i < sizeof(self_leaves) / sizeof(self_leaves[0]); i++) {
		struct cpuid_leaf *l = &d->v[d->n++];

		l->leaf = self_leaves[i][0];
		l->sub = self_leaves[i][1];
		__asm__ volatile("cpuid"
				 : "=a"(l->r[0]), "=b"(l->r[1]), "=c"(l->r[2]), "=d"(l->r[3])
				 : "a"(l->leaf), "c"(l->sub));
	}
	d->arch = CPUID_X86;
	/* XGETBV faults unless the OS set CR4.OSXSAVE (CPUID.1:ECX bit 27) */
	if (cpuid_regs_(d, 1, 0)[2] & (1u << 27)) {
		uint32_t lo, hi;

		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		(void)hi;
		d->xcr0 = lo;
	}
	return 0;
#else
	(void)d;
	(void)self_leaves;
	return -FB_EINVAL;
#endif
}
