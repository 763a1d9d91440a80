/* fuzz_re: untrusted bytes as an RE2 pattern (up to the first NUL) and the
 * subjects after it (NUL-separated), through core/re.c, with property
 * checks:
 * - re_compile gives 0, -FB_EINVAL with a non-empty message, or
 *   -FB_ENOMEM, and the same again on a second try;
 * - re_matches gives 0 or 1, the same twice;
 * - with "(?i)" in front, a subject and its ASCII case swapped match alike;
 * - the pattern and each subject through log_glob_ (the -vmodule glob)
 *   return, whatever the bytes.
 * The answers themselves are held to musl's regexec by tests/re/diff.sh.
 *
 * Built two ways, as the other targets: libFuzzer (make fuzz), and a replay
 * main() over tests/fuzz/corpus/re under ASan+UBSan (make test). */
#include "../../core/err.h"
#include "../../core/log.h"
#include "../../core/re.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in, *end, *pat, *ipat, err[160], err2[160];
	struct re re, re2, ire;
	int rc, rc2, irc;

	if (size > 4096 || !(in = malloc(size + 1)))
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	end = in + size;
	pat = in;
	if (!(ipat = malloc(strlen(pat) + 5))) {
		free(in);
		return 0;
	}
	snprintf(ipat, strlen(pat) + 5, "(?i)%s", pat);
	rc = re_compile(&re, pat, err, sizeof(err));
	rc2 = re_compile(&re2, pat, err2, sizeof(err2));
	if (rc != 0 && rc != -FB_EINVAL && rc != -FB_ENOMEM)
		abort();
	if (rc == -FB_EINVAL && !err[0])
		abort();
	if (rc != rc2 || (rc == -FB_EINVAL && strcmp(err, err2) != 0))
		abort();
	irc = strncmp(pat, "(?i)", 4) == 0 ? -1 : re_compile(&ire, ipat, NULL, 0);
	for (char *s = pat + strlen(pat) + 1; s <= end; s += strlen(s) + 1) {
		int m = rc == 0 ? re_matches(&re, s) : 0;

		if (m != 0 && m != 1 && m != -FB_ENOMEM)
			abort();
		if (rc == 0 && re_matches(&re2, s) != m)
			abort();
		if (irc == 0) {
			int im = re_matches(&ire, s);

			for (char *c = s; *c; c++)
				if ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'z')
					*c ^= 0x20;
			if (im >= 0 && re_matches(&ire, s) != im)
				abort();
		}
		log_glob_(pat, s);
	}
	if (rc == 0) {
		re_free(&re);
		re_free(&re2);
	}
	if (irc == 0)
		re_free(&ire);
	re_free(&re); /* safe twice */
	free(ipat);
	free(in);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
