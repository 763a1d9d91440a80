/* cpuid: what the CPU says about itself, as upstream node-feature-discovery
 * publishes it (github.com/klauspost/cpuid/v2 v2.4.0 on x86, upstream's own
 * HWCAP tables on arm64 and arm).
 *
 * Detection is a pure function of a register dump: on x86 the CPUID leaves
 * the library reads (leaf, subleaf -> eax, ebx, ecx, edx) and XGETBV(0); on
 * arm the auxiliary vector's AT_HWCAP/AT_HWCAP2 and MIDR_EL1. cpuid_dump_self
 * takes the dump from the running CPU; cpuid_dump_parse reads one from text,
 * so tests give any CPU's registers. The text format, one item a line, '#'
 * starts a comment, numbers in hex:
 *
 *     arch x86 | arm64 | arm
 *     cpuid LEAF SUBLEAF EAX EBX ECX EDX   (x86; a leaf not listed reads 0)
 *     xgetbv0 EAX                          (x86; XCR0's low half)
 *     hwcap HEX / hwcap2 HEX / midr HEX    (arm)
 */
#ifndef FB_CPUID_H
#define FB_CPUID_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cpuid_arch { CPUID_NONE, CPUID_X86, CPUID_ARM64, CPUID_ARM };

#define CPUID_MAX_LEAVES 64
#define CPUID_MAX_FLAGS 256
/* a dump file larger than this is refused */
#define CPUID_DUMP_MAX (16 << 10)

struct cpuid_leaf {
	uint32_t leaf, sub, r[4]; /* r: eax, ebx, ecx, edx */
};

struct cpuid_dump {
	enum cpuid_arch arch;
	size_t n;
	struct cpuid_leaf v[CPUID_MAX_LEAVES];
	uint32_t xcr0;
	uint64_t hwcap, hwcap2, midr;
	int have_midr;
};

/* cpu.rdt attributes (upstream source/cpu/rdt_linux_amd64.go) */
enum {
	CPUID_RDTMON = 1, CPUID_RDTCMT = 2, CPUID_RDTMBM = 4, CPUID_RDTL3CA = 8,
	CPUID_RDTL2CA = 16, CPUID_RDTMBA = 32,
};

struct cpuid_info {
	const char *flags[CPUID_MAX_FLAGS]; /* static names, sorted (strcmp) */
	size_t nflags;
	char vendor[16];      /* cpu.model vendor_id: the library's Vendor name */
	int family, model;    /* cpu.model family and id */
	char hypervisor[64];  /* cpu.model hypervisor: none, a vendor, or unknown */
	unsigned avx10;       /* cpu.cpuid AVX10_VERSION; 0: not published */
	unsigned rdt;         /* CPUID_RDT* bits */
};

void cpuid_dump_init(struct cpuid_dump *d);
/* The running CPU's registers. Returns 0, or -FB_EINVAL on an architecture
 * this build cannot read (d->arch is then CPUID_NONE). */
int cpuid_dump_self(struct cpuid_dump *d);
/* Parses len bytes of dump text. Returns 0 or -FB_EINVAL (err names the
 * line and the field), -FB_E2BIG (too many leaves). */
int cpuid_dump_parse(struct cpuid_dump *d, const char *text, size_t len, char *err, size_t esize);
/* Writes d in the text format. Returns 0 or -FB_EIO. */
int cpuid_dump_write(const struct cpuid_dump *d, FILE *out);
/* What upstream publishes for the CPU of d. Cannot fail. */
void cpuid_detect(const struct cpuid_dump *d, struct cpuid_info *out);

#endif
