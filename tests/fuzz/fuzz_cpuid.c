/* fuzz_cpuid: untrusted bytes as a CPU register dump (cpuid_dump_parse),
 * with property checks past "does not crash":
 * - a parsed dump detects without failing, giving sorted, distinct flag
 *   names, at most CPUID_MAX_FLAGS of them;
 * - a parsed dump written out and parsed again is the same dump, and
 *   detects the same;
 * - a refused dump says why (a non-empty message).
 *
 * Built as fuzz_featfile.c is: libFuzzer for make fuzz, else a replay main()
 * for the corpus in tests/fuzz/corpus/cpuid. */
#include "../../core/cpuid.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cpuid_dump d, d2;
	static struct cpuid_info ci, ci2;
	char err[128] = "", *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (cpuid_dump_parse(&d, (const char *)data, size, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();
		return 0;
	}
	cpuid_detect(&d, &ci);
	if (ci.nflags > CPUID_MAX_FLAGS)
		abort();
	for (size_t i = 1; i < ci.nflags; i++)
		if (strcmp(ci.flags[i - 1], ci.flags[i]) >= 0)
			abort();
	if (!(f = open_memstream(&buf, &len)))
		abort();
	if (cpuid_dump_write(&d, f) < 0)
		abort();
	fclose(f);
	if (cpuid_dump_parse(&d2, buf, len, err, sizeof(err)) < 0)
		abort();
	/* arm dumps write no xgetbv0, x86 ones no hwcaps: compare what is written */
	if (d2.arch != d.arch || d2.n != d.n || memcmp(d2.v, d.v, d.n * sizeof(d.v[0])) != 0)
		abort();
	cpuid_detect(&d2, &ci2);
	if (ci2.nflags != ci.nflags || memcmp(ci2.flags, ci.flags, ci.nflags * sizeof(ci.flags[0])) != 0 ||
	    strcmp(ci2.vendor, ci.vendor) != 0 || strcmp(ci2.hypervisor, ci.hypervisor) != 0 ||
	    ci2.family != ci.family || ci2.model != ci.model || ci2.avx10 != ci.avx10 || ci2.rdt != ci.rdt)
		abort();
	free(buf);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
