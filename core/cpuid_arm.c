/* cpuid arm: cpu.cpuid on arm64 and 32-bit arm is upstream's own reading of
 * the auxiliary vector (source/cpu/cpuid_linux_arm64.go, cpuid_linux_arm.go:
 * getauxval(AT_HWCAP) and AT_HWCAP2, one name a bit), not the library's.
 * cpu.model on arm64 is the library's (v2.4.0 detect_arm64.go): MIDR_EL1,
 * read only when the kernel sets HWCAP_CPUID (it then emulates the MRS); on
 * 32-bit arm the library detects nothing (VendorUnknown, 0, 0). Neither sets
 * the hypervisor flag, so cpu.model.hypervisor is "none". */
#include "cpuid_int.h"

#include "err.h"

#include <string.h>
#if defined(__aarch64__) || defined(__arm__)
#include <sys/auxv.h>
#endif

/* arm64: AT_HWCAP bits 0-31, then AT_HWCAP2 bits 0-33 */
static const char *const arm64_hwcap[] = {
	"FP", "ASIMD", "EVTSTRM", "AES", "PMULL", "SHA1", "SHA2", "CRC32", "ATOMICS", "FPHP",
	"ASIMDHP", "CPUID", "ASIMDRDM", "JSCVT", "FCMA", "LRCPC", "DCPOP", "SHA3", "SM3", "SM4",
	"ASIMDDP", "SHA512", "SVE", "ASIMDFHM", "DIT", "USCAT", "ILRCPC", "FLAGM", "SSBS", "SB",
	"PACA", "PACG",
};
static const char *const arm64_hwcap2[] = {
	"DCPODP", "SVE2", "SVEAES", "SVEPMULL", "SVEBITPERM", "SVESHA3", "SVESM4", "FLAGM2",
	"FRINT", "SVEI8MM", "SVEF32MM", "SVEF64MM", "SVEBF16", "I8MM", "BF16", "DGH", "RNG", "BTI",
	"MTE", "ECV", "AFP", "RPRES", "MTE3", "SME", "SMEI16I64", "SMEF64F64", "SMEI8I32",
	"SMEF16F32", "SMEB16F32", "SMEF32F32", "SMEFA64", "WFXT", "EBF16", "SVEEBF16",
};
/* 32-bit arm: AT_HWCAP bits 0-21, AT_HWCAP2 bits 0-4 */
static const char *const arm_hwcap[] = {
	"SWP", "HALF", "THUMB", "26BIT", "FASTMUL", "FPA", "VFP", "EDSP", "JAVA", "IWMMXT",
	"CRUNCH", "THUMBEE", "NEON", "VFPv3", "VFPv3D16", "TLS", "VFPv4", "IDIVA", "IDIVT",
	"VFPD32", "LPAE", "EVTSTRM",
};
static const char *const arm_hwcap2[] = { "AES", "PMULL", "SHA1", "SHA2", "CRC32" };

#define ARM64_HWCAP_CPUID (1u << 11) /* the kernel emulates MRS of the ID registers */

/* the library's MIDR implementer table */
static const struct {
	uint8_t code;
	const char *name;
} implementers[] = {
	{ 0xc0, "Ampere" }, { 0x41, "ARM" }, { 0x42, "Broadcom" }, { 0x43, "Cavium" },
	{ 0x44, "DEC" }, { 0x46, "Fujitsu" }, { 0x49, "Infineon" }, { 0x4d, "Motorola" },
	{ 0x4e, "NVIDIA" }, { 0x50, "AMCC" }, { 0x51, "Qualcomm" }, { 0x56, "Marvell" },
	{ 0x69, "Intel" },
};

static void caps(struct cpuid_info *out, uint64_t v, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n && i < 64; i++)
		if ((v >> i) & 1)
			cpuid_flag_(out, names[i]);
}

void cpuid_arm_detect_(const struct cpuid_dump *d, struct cpuid_info *out)
{
	snprintf(out->vendor, sizeof(out->vendor), "VendorUnknown");
	snprintf(out->hypervisor, sizeof(out->hypervisor), "none");
	if (d->arch == CPUID_ARM) {
		caps(out, d->hwcap, arm_hwcap, sizeof(arm_hwcap) / sizeof(arm_hwcap[0]));
		caps(out, d->hwcap2, arm_hwcap2, sizeof(arm_hwcap2) / sizeof(arm_hwcap2[0]));
		return;
	}
	caps(out, d->hwcap, arm64_hwcap, sizeof(arm64_hwcap) / sizeof(arm64_hwcap[0]));
	caps(out, d->hwcap2, arm64_hwcap2, sizeof(arm64_hwcap2) / sizeof(arm64_hwcap2[0]));
	if (!(d->hwcap & ARM64_HWCAP_CPUID) || !d->have_midr)
		return;
	for (size_t i = 0; i < sizeof(implementers) / sizeof(implementers[0]); i++)
		if (((d->midr >> 24) & 0xff) == implementers[i].code)
			snprintf(out->vendor, sizeof(out->vendor), "%s", implementers[i].name);
	out->family = (int)((d->midr >> 16) & 0xff);
	out->model = (int)(d->midr & 0xffff);
}

int cpuid_arm_self_(struct cpuid_dump *d)
{
#if defined(__aarch64__)
	d->arch = CPUID_ARM64;
	d->hwcap = getauxval(AT_HWCAP);
	d->hwcap2 = getauxval(AT_HWCAP2);
	if (d->hwcap & ARM64_HWCAP_CPUID) {
		uint64_t midr;

		__asm__ volatile("mrs %0, MIDR_EL1" : "=r"(midr));
		d->midr = midr;
		d->have_midr = 1;
	}
	return 0;
#elif defined(__arm__)
	d->arch = CPUID_ARM;
	d->hwcap = getauxval(AT_HWCAP);
	d->hwcap2 = getauxval(AT_HWCAP2);
	return 0;
#else
	(void)d;
	return -FB_EINVAL;
#endif
}
