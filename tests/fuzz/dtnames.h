/* dtnames.h: the property check fuzz_dt and fuzz_dtdir share. Every string
 * of a compatible property, val[0..len) (the last NUL may be missing), goes
 * through dt-labeller's label-name sanitiser, which must only ever produce a
 * valid label name; abort() otherwise. */
#ifndef FB_FUZZ_DTNAMES_H
#define FB_FUZZ_DTNAMES_H

#include "../../core/labels.h"

#include <stdlib.h>
#include <string.h>

static void check_compatible_names(const char *val, size_t len)
{
	for (const char *p = val, *end = p + len; p < end;) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));
		size_t slen = nul ? (size_t)(nul - p) : (size_t)(end - p);
		char name[LABELS_NAME_MAX + 1];
		ssize_t n = labels_dt_name(p, slen, name, sizeof(name));

		if (n > 0 && !labels_valid_name(name, (size_t)n))
			abort();
		p += slen + 1;
	}
}

#endif
