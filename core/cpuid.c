/* cpuid: register dumps (the running CPU's, or text) and the dispatch to
 * the x86 and arm detection (cpuid_x86.c, cpuid_arm.c). */
#include "cpuid_int.h"

#include "err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cpuid_dump_init(struct cpuid_dump *d)
{
	memset(d, 0, sizeof(*d));
}

int cpuid_dump_self(struct cpuid_dump *d)
{
	cpuid_dump_init(d);
#if defined(__x86_64__)
	return cpuid_x86_self_(d);
#else
	return cpuid_arm_self_(d);
#endif
}

const uint32_t *cpuid_regs_(const struct cpuid_dump *d, uint32_t leaf, uint32_t sub)
{
	static const uint32_t zero[4];

	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].leaf == leaf && d->v[i].sub == sub)
			return d->v[i].r;
	return zero;
}

void cpuid_flag_(struct cpuid_info *out, const char *name)
{
	if (out->nflags < CPUID_MAX_FLAGS)
		out->flags[out->nflags++] = name;
}

/* One hex number of at most bits bits from *p; moves *p past it. */
static int hex(const char **p, const char *end, unsigned bits, uint64_t *v)
{
	const char *s = *p;
	uint64_t n = 0;
	size_t digits = 0;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	for (; s < end; s++, digits++) {
		int c = (unsigned char)*s, dv;

		if (c >= '0' && c <= '9')
			dv = c - '0';
		else if (c >= 'a' && c <= 'f')
			dv = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			dv = c - 'A' + 10;
		else
			break;
		if (digits >= bits / 4)
			return -FB_ERANGE;
		n = n << 4 | (uint64_t)dv;
	}
	if (!digits || (s < end && *s != ' ' && *s != '\t' && *s != '#'))
		return -FB_EINVAL;
	*p = s;
	*v = n;
	return 0;
}

int cpuid_dump_parse(struct cpuid_dump *d, const char *text, size_t len, char *err, size_t esize)
{
	static const char *const fields[] = { "leaf", "subleaf", "eax", "ebx", "ecx", "edx" };
	const char *p = text, *end = text + len;
	unsigned line = 0;

	cpuid_dump_init(d);
	if (len > CPUID_DUMP_MAX) {
		snprintf(err, esize, "larger than %d bytes", CPUID_DUMP_MAX);
		return -FB_E2BIG;
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q = p, *kw;
		size_t kl;
		uint64_t v[6];

		if (!eol)
			eol = end;
		line++;
		while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		kw = q;
		while (q < eol && *q != ' ' && *q != '\t' && *q != '\r')
			q++;
		kl = (size_t)(q - kw);
		if (kl == 0 || *kw == '#') {
			p = eol + (eol < end);
			continue;
		}
#define KW(s) (kl == sizeof(s) - 1 && memcmp(kw, s, kl) == 0)
		if (KW("arch")) {
			const char *a = q;

			while (a < eol && (*a == ' ' || *a == '\t'))
				a++;
			q = a;
			while (q < eol && *q != ' ' && *q != '\t' && *q != '\r')
				q++;
			if (q - a == 3 && memcmp(a, "x86", 3) == 0)
				d->arch = CPUID_X86;
			else if (q - a == 5 && memcmp(a, "arm64", 5) == 0)
				d->arch = CPUID_ARM64;
			else if (q - a == 3 && memcmp(a, "arm", 3) == 0)
				d->arch = CPUID_ARM;
			else {
				snprintf(err, esize, "line %u: arch: not x86, arm64 or arm", line);
				return -FB_EINVAL;
			}
		} else if (KW("cpuid")) {
			struct cpuid_leaf *l;

			for (int i = 0; i < 6; i++)
				if (hex(&q, eol, 32, &v[i]) < 0) {
					snprintf(err, esize, "line %u: cpuid: bad %s", line, fields[i]);
					return -FB_EINVAL;
				}
			if (d->n >= CPUID_MAX_LEAVES) {
				snprintf(err, esize, "line %u: more than %d leaves", line, CPUID_MAX_LEAVES);
				return -FB_E2BIG;
			}
			l = &d->v[d->n++];
			l->leaf = (uint32_t)v[0];
			l->sub = (uint32_t)v[1];
			for (int i = 0; i < 4; i++)
				l->r[i] = (uint32_t)v[2 + i];
		} else if (KW("xgetbv0") || KW("hwcap") || KW("hwcap2") || KW("midr")) {
			if (hex(&q, eol, KW("xgetbv0") ? 32 : 64, &v[0]) < 0) {
				snprintf(err, esize, "line %u: %.*s: bad value", line, (int)kl, kw);
				return -FB_EINVAL;
			}
			if (KW("xgetbv0"))
				d->xcr0 = (uint32_t)v[0];
			else if (KW("hwcap"))
				d->hwcap = v[0];
			else if (KW("hwcap2"))
				d->hwcap2 = v[0];
			else {
				d->midr = v[0];
				d->have_midr = 1;
			}
		} else {
			snprintf(err, esize, "line %u: unknown item '%.*s'", line, (int)(kl > 32 ? 32 : kl), kw);
			return -FB_EINVAL;
		}
#undef KW
		while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q < eol && *q != '#') {
			snprintf(err, esize, "line %u: trailing text", line);
			return -FB_EINVAL;
		}
		p = eol + (eol < end);
	}
	if (d->arch == CPUID_NONE) {
		snprintf(err, esize, "no arch line");
		return -FB_EINVAL;
	}
	return 0;
}

int cpuid_dump_write(const struct cpuid_dump *d, FILE *out)
{
	static const char *const arch[] = { "none", "x86", "arm64", "arm" };

	fprintf(out, "arch %s\n", arch[d->arch]);
	for (size_t i = 0; i < d->n; i++)
		fprintf(out, "cpuid %08x %02x %08x %08x %08x %08x\n", d->v[i].leaf, d->v[i].sub, d->v[i].r[0],
			d->v[i].r[1], d->v[i].r[2], d->v[i].r[3]);
	if (d->arch == CPUID_X86)
		fprintf(out, "xgetbv0 %08x\n", d->xcr0);
	else {
		fprintf(out, "hwcap %016llx\nhwcap2 %016llx\n", (unsigned long long)d->hwcap,
			(unsigned long long)d->hwcap2);
		if (d->have_midr)
			fprintf(out, "midr %016llx\n", (unsigned long long)d->midr);
	}
	return ferror(out) ? -FB_EIO : 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void cpuid_detect(const struct cpuid_dump *d, struct cpuid_info *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->vendor, sizeof(out->vendor), "VendorUnknown");
	snprintf(out->hypervisor, sizeof(out->hypervisor), "none");
	if (d->arch == CPUID_X86)
		cpuid_x86_detect_(d, out);
	else if (d->arch == CPUID_ARM64 || d->arch == CPUID_ARM)
		cpuid_arm_detect_(d, out);
	/* names can repeat (hwcap tables do not, but stay safe): sort, dedupe */
	qsort(out->flags, out->nflags, sizeof(*out->flags), cmp_name);
	if (out->nflags > 1) {
		size_t n = 1;

		for (size_t i = 1; i < out->nflags; i++)
			if (strcmp(out->flags[i], out->flags[n - 1]) != 0)
				out->flags[n++] = out->flags[i];
		out->nflags = n;
	}
}
