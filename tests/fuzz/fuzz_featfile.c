/* fuzz_featfile: untrusted bytes as a features.d file, through the parser,
 * with property checks past "does not crash":
 * - parsing never fails (no allocation failure here) and gives two objects
 *   of string values that print and parse back equal (escapes, U+FFFD);
 * - every label key is a valid Kubernetes label key, every feature key a
 *   possible feature name (1 to FEATFILE_KEY_MAX bytes, no control
 *   characters);
 * - the same bytes parsed again give the same objects (no hidden state);
 * - the first line, as an RFC 3339 time, either is refused or parses to a
 *   time that, printed back in canonical form, parses to the same instant.
 *
 * Built two ways: with clang -fsanitize=fuzzer (make fuzz, local runs that grow
 * tests/fuzz/corpus/featfile), and as a plain program whose main() replays
 * every file named on the command line or found in the directories named
 * there, which is how `make test` runs the corpus under ASan+UBSan. */
#include "../../core/featfile.h"
#include "../../core/json.h"
#include "../../core/labels.h"
#include "../../core/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_object(const struct json *o, int labels)
{
	struct fb_errinfo ei;
	size_t len = 0;
	char *s;
	struct json *back;

	if (json_type(o) != JSON_OBJECT)
		abort();
	for (const struct json *c = json_child(o); c; c = json_next(c)) {
		if (json_type(c) != JSON_STRING)
			abort();
		if (labels && !labels_valid_key(json_key(c)))
			abort();
		len = strlen(json_key(c));
		if (len == 0 || len > FEATFILE_KEY_MAX)
			abort();
		for (const unsigned char *k = (const unsigned char *)json_key(c); *k; k++)
			if (*k < 0x20 || *k == 0x7f)
				abort();
	}
	len = 0;
	s = json_print(o, &len);
	if (!s)
		abort();
	back = json_parse(s, len, "printed", &ei);
	if (!back || !json_equal(o, back))
		abort();
	json_free(back);
	free(s);
}

/* Inverse of days_from_civil (Howard Hinnant's civil_from_days). */
static void civil(long long z, long long *y, int *m, int *d)
{
	long long era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static void check_time(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	size_t len = nl ? (size_t)(nl - (const char *)data) : size;
	struct featfile_time t, t2;
	long long y, days, rem;
	int m, d, n;
	char buf[64];

	if (featfile_parse_rfc3339((const char *)data, len, &t) < 0)
		return;
	if (t.nsec < 0 || t.nsec > 999999999)
		abort();
	days = t.sec >= 0 ? t.sec / 86400 : -((-t.sec + 86399) / 86400);
	rem = t.sec - days * 86400;
	civil(days, &y, &m, &d);
	/* an offset can move a year-0000 or year-9999 time past the 4-digit range */
	if (y < 0 || y > 9999)
		return;
	n = snprintf(buf, sizeof(buf), "%04lld-%02d-%02dT%02lld:%02lld:%02lld.%09ldZ", y, m, d, rem / 3600,
		     rem / 60 % 60, rem % 60, t.nsec);
	if (featfile_parse_rfc3339(buf, (size_t)n, &t2) < 0 || t2.sec != t.sec || t2.nsec != t.nsec)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct featfile_time now = { 1748736000, 500000000 }; /* 2025-06-01 */
	struct fb_log lg = { .v = 2, .fd = -1 }; /* every log path, written nowhere */
	struct json *l, *f, *l2, *f2;

	if (featfile_parse((const char *)data, size, "fuzz", &now, &lg, &l, &f) != 0)
		abort();
	check_object(l, 1);
	check_object(f, 0);
	if (featfile_parse((const char *)data, size, "fuzz", &now, &lg, &l2, &f2) != 0 ||
	    !json_equal(l, l2) || !json_equal(f, f2))
		abort();
	json_free(l);
	json_free(f);
	json_free(l2);
	json_free(f2);
	check_time(data, size);
	return 0;
}

#ifndef FB_LIBFUZZER
#include "replay.h"
#endif
