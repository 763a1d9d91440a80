/* cpuid's files among themselves. */
#ifndef FB_CPUID_INT_H
#define FB_CPUID_INT_H

#include "cpuid.h"

/* Registers of (leaf, sub) in d; zeros when the dump lacks them. */
const uint32_t *cpuid_regs_(const struct cpuid_dump *d, uint32_t leaf, uint32_t sub);
/* Appends a static name to out->flags (ignored when full). */
void cpuid_flag_(struct cpuid_info *out, const char *name);
void cpuid_x86_detect_(const struct cpuid_dump *d, struct cpuid_info *out);
void cpuid_arm_detect_(const struct cpuid_dump *d, struct cpuid_info *out);
/* Fill d from the running CPU; return 0, or -FB_EINVAL on another arch. */
int cpuid_x86_self_(struct cpuid_dump *d);
int cpuid_arm_self_(struct cpuid_dump *d);

#endif
