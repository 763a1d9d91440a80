# build checks: the binaries are static and within budget, the source tree
# keeps the house rules that a reviewer would otherwise have to police.
#   bash tests/build.sh          everything (make test: every arch built)
#   bash tests/build.sh --lint   the source-tree rules only (make quick)
set -u
cd "${FB_TOP:?}"
. tests/lib/testing.sh
SUITE=build

lint=0
[ "${1:-}" = --lint ] && lint=1
if [ $lint = 0 ]; then
for b in build/featurebox build/aarch64/featurebox build/armhf/featurebox; do
	t "$b is statically linked (file)" sh -c "file -L '$b' | grep -q 'statically linked'"
	t "$b is stripped" sh -c "file -L '$b' | grep -q ', stripped'"
done
t "aarch64 binary is an ARM aarch64 ELF" sh -c "file -L build/aarch64/featurebox | grep -q 'ARM aarch64'"
t "armhf binary is a 32-bit ARM EABI5 hard-float ELF" \
	sh -c "file -L build/armhf/featurebox | grep -q 'ELF 32-bit LSB executable, ARM, EABI5'"
t "sizes within budget: every arch (scripts/size-budgets.sh; make size)" scripts/size-report --check
t "a binary over its budget fails the size check" \
	sh -c "! SIZE_BUDGET_aarch64=\$((\$(stat -c %s build/aarch64/featurebox) - 1)) scripts/size-report --check >/dev/null"
t "the sanitizer build is dynamic and instrumented" \
	sh -c "file -L build/check/featurebox | grep -q 'dynamically linked' && nm build/check/featurebox | grep -q __asan_init"
fi

# applets.def: sorted, and every entry has its applets/<name>.c (and vice versa).
def=$(sed -n 's/^APPLET(\([^,]*\), *\([a-z_0-9]*\)).*/\1 \2/p' applets/applets.def)
t "applets.def is sorted" sh -c "printf '%s\n' \"\$1\" | LC_ALL=C sort -c" _ "$def"
while read -r name id; do
	t "applet $name has applets/$name.c defining ${id}_main" grep -q "^int ${id}_main(int argc, char \*\*argv)" "applets/$name.c"
done <<<"$def"
for f in applets/*.c; do
	n=$(basename "$f" .c)
	t "applets/$n.c is registered" grep -q "^APPLET($n," applets/applets.def
	t "applets/$n.c opens with its header comment" sh -c "head -1 '$f' | grep -q '^/\* $n: '"
done

# Third-party headers are included by exactly one core module each.
only() { # HEADER-REGEX ALLOWED-FILE
	local hits
	hits=$(grep -lE "#include [<\"]$1" core/*.[ch] applets/*.[ch] 2>/dev/null | grep -v "^$2\$")
	[ -z "$hits" ] || { echo "included by: $hits"; return 1; }
}
t "libfdt is included only by core/dt.c" only 'libfdt' core/dt.c
t "cJSON is included only by core/json.c" only 'cJSON' core/json.c
t "mbedTLS is included only by core/tls.c" only 'mbedtls/' core/tls.c

# Every host path goes through hostfs: no literal /sys, /proc, ... elsewhere in core.
t "no literal host paths outside core/hostfs.c" sh -c \
	"! grep -nE '\"/(sys|proc|boot|etc|usr|lib|host-)' core/*.c | grep -v -e '^core/hostfs.c:' -e '/proc/self/'"
# applets name features.d paths under /etc (NFD does not prefix them), never host state
t "no literal /sys, /proc or /boot in applets" sh -c "! grep -nE '\"/(sys|proc|boot)' applets/*.c"

# Each header compiles on its own.
for h in core/*.h applets/applets.h; do
	t "$h compiles on its own" sh -c "printf '#include \"%s\"\n' '$PWD/$h' | gcc -std=c11 -D_GNU_SOURCE -Wall -Werror -fsyntax-only -x c -"
done
done_testing
