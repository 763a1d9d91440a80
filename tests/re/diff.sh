#!/usr/bin/env bash
# tests/re/diff.sh: core/re.c against the translation it replaced
# (tests/re/re_posix.c) with musl's regcomp and regexec behind it, the C
# library the release links: tests/re/re_diff.c, built static with musl-gcc,
# over RE_DIFF_PATTERNS random patterns (default 200000, 24 subjects each).
# (glibc is no reference: see re_diff.c.)
set -u
top=${FB_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$top"
out=build/test/re
mkdir -p "$out"
src="tests/re/re_diff.c tests/re/re_posix.c core/re.c core/buf.c core/err.c core/log.c"
flags="-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes"
if ! command -v musl-gcc >/dev/null; then
	echo "FAIL: re/diff: musl-gcc missing (the release build needs it too)"
elif ! musl-gcc -static -O2 $flags -o "$out/re_diff" $src 2>"$out/build.err"; then
	echo "FAIL: re/diff: does not build ($(head -c 300 "$out/build.err"))"
else
	"$out/re_diff" "${RE_DIFF_PATTERNS:-200000}"
fi
