/* nfdsrc cpuid: where cpu.cpuid's registers come from. The running worker
 * asks its own CPU (core/cpuid); a test gives a host root with the hidden
 * file <proc>/.featurebox-cpuid, a register dump in cpuid.h's text format,
 * so fixture hosts get the same cpu labels on any machine. The file is not
 * a flag or an option: a real /proc cannot hold it, so in production the
 * CPU always answers. */
#include "nfdsrc_internal.h"

#include "cpuid.h"

#include <stdlib.h>
#include <string.h>

#define DUMP_PATH "proc/.featurebox-cpuid"

int nfdsrc_cpuid_read_(const struct hostfs *h, struct cpuid_info *out, int *x86, const struct fb_log *lg)
{
	struct cpuid_dump *d = malloc(sizeof(*d));
	char *text = NULL, err[96];
	ssize_t n;
	int rc = 0;

	*x86 = 0;
	memset(out, 0, sizeof(*out));
	if (!d)
		return -FB_ENOMEM;
	n = nfdsrc_host_exists_(h, DUMP_PATH) == 1 ? nfdsrc_host_head_(h, DUMP_PATH, CPUID_DUMP_MAX + 2, &text)
						   : -FB_ENOENT;
	if (n == -FB_ENOMEM) {
		rc = -FB_ENOMEM;
		goto out;
	}
	if (n == -FB_ENOENT) {
		if (cpuid_dump_self(d) < 0)
			NLOG_E(lg, "cpu: cannot read the CPU's identification on this architecture");
	} else if (n < 0) {
		NLOG_E(lg, "cpu: %s: %s", DUMP_PATH, fb_strerror((int)n));
		cpuid_dump_init(d);
	} else if (cpuid_dump_parse(d, text, (size_t)n, err, sizeof(err)) < 0) {
		NLOG_E(lg, "cpu: %s: %s", DUMP_PATH, err);
		cpuid_dump_init(d);
	}
	cpuid_detect(d, out);
	*x86 = d->arch == CPUID_X86;
out:
	free(text);
	free(d);
	return rc;
}
