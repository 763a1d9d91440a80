/* re: Go RE2 regular expressions (what NFD rules and labelWhiteList are
 * written in), answered yes or no. The pattern is checked and compiled to a
 * Thompson NFA that is run over the subject with state sets: time linear in
 * the subject times the program, memory bounded by the program, no
 * backtracking. What cannot be matched exactly is refused with a message
 * naming the construct: never a silent mismatch. The accepted subset and
 * its messages are those of the POSIX-ERE translation this replaced (musl's
 * regcomp behind it, tests/re holds it for the differential test).
 *
 * Supported: \d \D \w \W \s \S (also inside bracket expressions, where the
 * negated ones are refused), [[:word:]], escaped punctuation, \t \n \r \f \v
 * \a \xHH (ASCII), \A and \z, a leading (?i) (ASCII letters), (?:...),
 * lazy quantifiers (*? +? ?? {n,m}?: a yes/no match does not depend on
 * laziness), a repeated anchor (^+ is ^, ^* nothing), '.' as "any byte but
 * newline" (RE2 without (?s)). Matching is unanchored, as Go's
 * MatchString. Refused: any other (?flags), named and look-around groups,
 * \b \B \p \P \Q \C, back-references and octal escapes, non-ASCII bytes
 * inside brackets, nested repetition (a**), a repetition with nothing to
 * repeat, repeat counts over 1000 (also multiplied through nesting) and,
 * as musl's regcomp did, a count over 255 ("Invalid contents of {}"), and an
 * anchor that a match may skip ((^|a?)b, (a?^)?, $^|x), which musl's regexec
 * got wrong. Bytes, not runes: '.' matches one byte of a multi-byte UTF-8
 * character. */
#ifndef FB_RE_H
#define FB_RE_H

#include <stddef.h>

/* the most instructions a program may have (about 12 bytes each, and 20
 * more while matching) */
#define RE_MAX_INST (1u << 20)

struct re_inst;

struct re {
	struct re_inst *prog; /* owned */
	unsigned char *sets;  /* owned: the 256-bit byte sets prog points into */
	size_t n;             /* instructions in prog */
	size_t *mark;         /* owned: the state sets re_matches works in (n marks, 3n unsigned) */
};

/* Compiles pattern into re. Returns 0 (re_free(re) later), -FB_EINVAL with
 * a NUL-terminated reason in err[0..errsize) (the construct refused), or
 * -FB_ENOMEM (also for a program over RE_MAX_INST instructions: a pattern
 * that repeats large repeats many times). err may be NULL. On failure re
 * holds nothing (re_free is still safe). */
int re_compile(struct re *re, const char *pattern, char *err, size_t errsize);

/* Whether pattern matches somewhere in s (as Go's MatchString): 1 or 0. It
 * cannot fail: re_compile allocated the state sets (about 20 bytes an
 * instruction). Not reentrant on one re (it works in re->mark); nothing in
 * featurebox matches one pattern from two threads. */
int re_matches(const struct re *re, const char *s);

/* Frees what re_compile put in re; safe on a zeroed re and twice. */
void re_free(struct re *re);

#endif
