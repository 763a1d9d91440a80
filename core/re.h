/* re: Go RE2 regular expressions (what NFD rules and labelWhiteList are
 * written in) on top of POSIX regcomp. The pattern is translated to an
 * extended regular expression that matches exactly the same strings, or
 * refused with a message naming the construct: never a silent mismatch.
 *
 * Translated: \d \D \w \W \s \S (also inside bracket expressions, where the
 * negated ones are refused), [[:word:]], escaped punctuation, \t \n \r \f \v
 * \a \xHH (ASCII), \A and \z, a leading (?i) (REG_ICASE: ASCII letters), (?:...) as (...),
 * lazy quantifiers (*? +? ?? {n,m}?: a yes/no match does not depend on
 * laziness), a repeated anchor (^+ is ^, ^* nothing), '.' as "any byte but
 * newline" (RE2 without (?s)). Matching is unanchored, as Go's
 * MatchString. Refused: any other (?flags), named and look-around groups,
 * \b \B \p \P \Q \C, back-references and octal escapes, non-ASCII bytes
 * inside brackets, nested repetition (a**), a repetition with nothing to
 * repeat, repeat counts over 1000 (also multiplied through nesting), and an
 * anchor that a match may skip ((^|a?)b, (a?^)?, $^|x): musl's regexec gets
 * those wrong. Bytes, not runes: '.' matches one byte of a multi-byte UTF-8
 * character. */
#ifndef FB_RE_H
#define FB_RE_H

#include <regex.h>
#include <stddef.h>

/* Compiles pattern into re with cflags (REG_EXTENDED is implied; pass
 * REG_NOSUB when no submatches are wanted). Returns 0 (regfree(re) later),
 * -FB_EINVAL with a NUL-terminated reason in err[0..errsize) (the construct
 * refused, or regcomp's message), or -FB_ENOMEM. err may be NULL. */
int re_compile(regex_t *re, const char *pattern, int cflags, char *err, size_t errsize);

#endif
