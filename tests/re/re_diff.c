/* re_diff: the differential test of core/re.c. Random patterns, built from
 * the pieces RE2 writers use and the ones re.h refuses, are compiled by
 * core/re.c and by the translation it replaced (tests/re/re_posix.c) with
 * the C library's regcomp behind it; both must accept or refuse alike (a
 * refusal with the same message), and an accepted pattern must give the same
 * yes/no on every subject. Built statically with musl-gcc by tests/re/diff.sh:
 * musl is the release's C library, so the reference is what featurebox did.
 * glibc is no reference: besides its own messages and counts up to 32767,
 * its regexec matches /\n^/ (a newline, then the start) on "\n", which
 * neither musl nor RE2 does.
 * Then core/log.c's glob (-vmodule) against musl's fnmatch(p, s, 0).
 * Usage: re_diff [PATTERNS [SEED]]. Prints "PASS: re/diff...: ..." or FAIL
 * lines naming the first disagreements. */
#include "../../core/err.h"
#include "../../core/log.h"
#include "../../core/re.h"

#include <fnmatch.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int re_posix_compile(regex_t *re, const char *pattern, int cflags, char *err, size_t errsize);

static uint64_t rng;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *const pieces[] = {
	/* atoms */
	"a", "b", "a", "b", "c", "A", "B", "x", "_", "-", ".", ".", " ", "1", "\xc3", "\xa9", "\xc3\xa9",
	"\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\.", "\\-", "\\x41", "\\x{62}", "\\t", "\\n", "\\^", "\\$",
	"\\[", "\\]", "\\*", "\\\\", "[ab]", "[^a]", "[a-c]", "[A-Z]", "[^A-Z]", "[[:alpha:]]", "[[:upper:]]",
	"[[:word:]]", "[\\d]", "[\\w-]", "[]a]", "[^]]", "[-a]", "[a-]", "[\\^]", "[\\^-]", "[\\d.]", "[^\\n]",
	"[^-]", "[^^]", "[!-/]", "[.]", "[\\x41-\\x43]", "{", "}", "]", ",", "{,2}", "{a}",
	/* anchors */
	"^", "$", "^", "$", "\\A", "\\z",
	/* groups and alternation */
	"(", "(", "(", "(?:", ")", ")", ")", "|", "|", "()", "(a|)", "(|b)",
	/* repeats */
	"*", "+", "?", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{0}", "{0,1}", "{2,}", "{1,2}?",
	"{0,0}", "{3,2}", "{255}", "{256}", "{1000}", "{1001}", "{0255}",
	/* refused */
	"\\b", "\\B", "\\pL", "\\Q", "\\1", "(?i)", "(?s)", "(?P<n>", "(?=", "[\\D]", "[\xc3\xa9]", "[[:^alpha:]]",
	"[z-a]", "[a", "\\", "\\x{263a}", "\\x00", "[[:foo:]]", "\\C",
};
#define NREFUSED 19

static void gen_pattern(char *p, size_t size)
{
	size_t len = 0;
	unsigned n = rnd(10) + (rnd(4) == 0 ? rnd(10) : 0);

	p[0] = '\0';
	if (rnd(5) == 0)
		len += (size_t)snprintf(p, size, "(?i)");
	for (unsigned i = 0; i < n && len + 16 < size; i++) {
		unsigned k = rnd(sizeof(pieces) / sizeof(pieces[0]));

		/* the refused pieces (the last NREFUSED) less often, so most compile */
		if (k >= sizeof(pieces) / sizeof(pieces[0]) - NREFUSED && rnd(2))
			k = 0;
		len += (size_t)snprintf(p + len, size - len, "%s", pieces[k]);
	}
}

static void gen_subject(char *s, size_t size, const char *pattern)
{
	static const char alpha[] = "abcABxX_-. 1\n]^$[\xc3\xa9";
	unsigned n = rnd(12);
	size_t len = 0;

	/* half the time, the pattern's own bytes, so more of them match */
	for (unsigned i = 0; i < n && len + 1 < size; i++)
		s[len++] = rnd(2) && pattern[0] ? pattern[rnd((unsigned)strlen(pattern))]
						: alpha[rnd(sizeof(alpha) - 1)];
	s[len] = '\0';
}

static void show(const char *s, char *out, size_t size)
{
	size_t n = 0;

	for (; *s && n + 5 < size; s++)
		n += (size_t)snprintf(out + n, size - n, (unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f ||
							 *s == '"' ? "\\x%02x" : "%c", (unsigned char)*s);
	out[n] = '\0';
}

static const char *const gpieces[] = {
	"*", "*", "?", "a", "b", "c", "z", "/", ".", "_", "-", "]", "[", "\\", "\\*", "\\[", "\\a", "!",
	"[a-c]", "[!a]", "[^a]", "[]a]", "[!]a]", "[-a]", "[a-]", "[a-c-e]", "[[:alpha:]]", "[[:digit:]-z]",
	"[[:foo:]]", "[[.a.]]", "[[=a=]]", "[[:alpha:]", "[\\]]", "[z-a]", "[*?]", "[[]", "[[:]]", "[[::]]",
	"\xc3", "[\xc3-\xff]",
};

/* Returns the disagreements (printed). */
static int glob_diff(long n)
{
	unsigned long long checks = 0, yes = 0;
	int bad = 0;

	for (long k = 0; k < n && bad < 10; k++) {
		char pat[128], sub[16], sp[512], ss[64];
		size_t len = 0;
		unsigned np = rnd(8);

		for (unsigned i = 0; i < np; i++)
			len += (size_t)snprintf(pat + len, sizeof(pat) - len, "%s",
						gpieces[rnd(sizeof(gpieces) / sizeof(gpieces[0]))]);
		pat[len] = '\0';
		for (int i = 0; i < 16; i++) {
			int m1, m2;

			gen_subject(sub, sizeof(sub), pat);
			m1 = log_glob_(pat, sub);
			m2 = fnmatch(pat, sub, 0) == 0;
			checks++;
			yes += m1;
			if (m1 != m2) {
				show(pat, sp, sizeof(sp));
				show(sub, ss, sizeof(ss));
				printf("FAIL: re/glob: \"%s\" on \"%s\": glob %d, fnmatch %d\n", sp, ss, m1, m2);
				bad++;
				break;
			}
		}
	}
	if (!bad)
		printf("PASS: re/glob: %ld patterns, %llu subjects matched as musl's fnmatch does (%llu yes)\n", n,
		       checks, yes);
	return bad;
}

int main(int argc, char **argv)
{
	long npat = argc > 1 ? atol(argv[1]) : 200000;
	unsigned long long checks = 0, yes = 0, accepted = 0, refused = 0, late = 0;
	int bad = 0;

	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x9e3779b97f4a7c15ull;
	for (long k = 0; k < npat && bad < 10; k++) {
		char pat[256], sub[32], e1[256], e2[256], sp[1024], ss[128];
		struct re re;
		regex_t px;
		int r1, r2;

		gen_pattern(pat, sizeof(pat));
		r1 = re_compile(&re, pat, e1, sizeof(e1));
		r2 = re_posix_compile(&px, pat, REG_NOSUB, e2, sizeof(e2));
		show(pat, sp, sizeof(sp));
		if (r1 != r2 || (r1 == -FB_EINVAL && strcmp(e1, e2) != 0)) {
			printf("FAIL: re/diff: /%s/: new %d \"%s\", old %d \"%s\"\n", sp, r1, r1 ? e1 : "",
			       r2, r2 ? e2 : "");
			bad++;
			if (r1 == 0)
				re_free(&re);
			if (r2 == 0)
				regfree(&px);
			continue;
		}
		if (r1 < 0) {
			refused++;
			late += strcmp(e1, "Invalid contents of {}") == 0;
			continue;
		}
		accepted++;
		for (int i = 0; i < 24; i++) {
			int m1, m2;

			gen_subject(sub, sizeof(sub), pat);
			m1 = re_matches(&re, sub);
			m2 = regexec(&px, sub, 0, NULL, 0) == 0;
			checks++;
			yes += m1 == 1;
			if (m1 != m2) {
				show(sub, ss, sizeof(ss));
				printf("FAIL: re/diff: /%s/ on \"%s\": new %d, old %d\n", sp, ss, m1, m2);
				bad++;
				break;
			}
		}
		re_free(&re);
		regfree(&px);
	}
	if (!bad)
		printf("PASS: re/diff: %ld patterns: %llu accepted, %llu refused alike (%llu with regcomp's "
		       "count message); %llu subjects matched alike (%llu yes)\n",
		       npat, accepted, refused, late, checks, yes);
	bad += glob_diff(npat / 2);
	return bad != 0;
}
