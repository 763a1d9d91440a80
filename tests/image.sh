# image checks without a Docker engine: `make image-rootfs` for every arch
# makes the file tree the Dockerfile's final stage copies; the tree is checked
# entry by entry, its binary runs (natively or under qemu-user) through the
# applet links, and scripts/image-check holds the Dockerfile to that tree.
# The tree sizes are in the PASS line of each make (tests/run shows only
# PASS/FAIL/SKIP lines).
set -u
cd "${FB_TOP:?}" || exit 1
. tests/lib/testing.sh
SUITE=image

host=$(uname -m)
case $host in armv*) host=armhf ;; esac
conf=etc/kubernetes/node-feature-discovery/nfd-worker.conf
def_applets=$(sed -n 's/^APPLET(\([a-z0-9-]*\),.*/\1/p' applets/applets.def)

# readelf -h facts per arch: machine, class, and for armhf the float ABI
elf_ok() { # ARCH FILE
	local h
	h=$(readelf -hW "$2") || return 1
	case $1 in
	x86_64) grep -q 'Machine: *Advanced Micro Devices X86-64$' <<<"$h" && grep -q 'Class: *ELF64' <<<"$h" ;;
	aarch64) grep -q 'Machine: *AArch64$' <<<"$h" && grep -q 'Class: *ELF64' <<<"$h" ;;
	armhf) grep -q 'Machine: *ARM$' <<<"$h" && grep -q 'Class: *ELF32' <<<"$h" &&
		grep -q 'Flags:.*Version5 EABI.*hard-float ABI' <<<"$h" ;;
	esac || { printf '%s\n' "$h" | grep -E 'Class|Machine|Flags'; return 1; }
}

# static: no program interpreter, no dynamic section (not even static-pie)
static_ok() {
	! readelf -lW "$1" | grep -q 'INTERP' || { echo "has a PT_INTERP"; return 1; }
	readelf -dW "$1" | grep -q 'There is no dynamic section' || { echo "has a dynamic section"; return 1; }
}

stripped_ok() {
	! readelf -SW "$1" | grep -qE ' \.(symtab|debug_[a-z]+) ' || { echo "has .symtab or debug sections"; return 1; }
}

# every entry with its type and mode, relative to the tree
listing() { (cd "$1" && find . -mindepth 1 -printf '%y %m %P\n' | LC_ALL=C sort -k3); }

# links_ok ROOT: every usr/bin entry except featurebox is a relative symlink
# (as make image-rootfs makes them: an absolute one would point out of the
# tree here) that names the tree's featurebox regular file.
links_ok() {
	local root=$1 bin=$1/usr/bin/featurebox l tgt p bad=0
	for l in "$root"/usr/bin/*; do
		[ "$l" = "$bin" ] && continue
		if [ ! -L "$l" ]; then echo "${l#"$root"/} is not a symlink"; bad=1; continue; fi
		tgt=$(readlink "$l")
		case $tgt in /*) echo "${l#"$root"/} -> $tgt is absolute"; bad=1; continue ;; esac
		p=$(dirname "$l")/$tgt
		if [ -L "$p" ] || [ ! -f "$p" ] || [ "$(readlink -f "$p")" != "$(readlink -f "$bin")" ]; then
			echo "${l#"$root"/} -> $tgt does not resolve to usr/bin/featurebox in the tree"
			bad=1
		fi
	done
	return $bad
}

for arch in x86_64 aarch64 armhf; do
	case $arch in
	x86_64) qemu="qemu-x86_64-static" ;;
	aarch64) qemu="qemu-aarch64-static" ;;
	armhf) qemu="qemu-arm-static" ;;
	esac
	if [ "$arch" = "$host" ]; then built=build/featurebox wrap=; else built=build/$arch/featurebox wrap=$qemu; fi
	root=build/image/$arch/rootfs
	if [ ! -x "$built" ]; then
		fail "$arch: $built not built (make ARCH=$arch)"
		continue
	fi
	if ! out=$(make -s --no-print-directory image-rootfs ARCH="$arch" 2>&1); then
		fail "$arch: make image-rootfs ARCH=$arch: $(printf '%s' "$out" | tail -c 600)"
		continue
	fi
	bytes=$(find "$root" -mindepth 1 ! -type d -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
	kib=$(du -sk "$root" | cut -f1)
	printf '%s\n' "$out"
	pass "$arch: make image-rootfs ARCH=$arch: $root is $bytes bytes ($kib KiB on disk)"
	fb=$root/usr/bin/featurebox

	t "$arch: the tree's featurebox is $built, byte for byte" cmp "$fb" "$built"
	t "$arch: featurebox is static (no PT_INTERP, no dynamic section)" static_ok "$fb"
	t "$arch: featurebox is stripped (no .symtab)" stripped_ok "$fb"
	t "$arch: featurebox is an ELF for $arch (readelf -h)" elf_ok "$arch" "$fb"

	if [ -n "$wrap" ] && ! command -v "$wrap" >/dev/null; then
		fail "$arch: $wrap missing (apt-get install qemu-user-static)"
		continue
	fi
	# featurebox --list, run the way the image runs it (and under qemu-user)
	if list=$($wrap "$fb" --list 2>"$W/err"); then
		pass "$arch: usr/bin/featurebox --list runs${wrap:+ under $wrap}"
	else
		fail "$arch: usr/bin/featurebox --list${wrap:+ under $wrap}: $(head -c 300 "$W/err")"
		continue
	fi
	if [ "$list" = "$def_applets" ]; then
		pass "$arch: featurebox --list names the applets of applets.def"
	else
		fail "$arch: featurebox --list says $(tr '\n' ' ' <<<"$list")but applets.def has $(tr '\n' ' ' <<<"$def_applets")"
	fi

	# exactly: the dirs, the binary, one link per listed applet, the config
	want=$(
		{
			printf 'd 755 %s\n' etc etc/kubernetes etc/kubernetes/node-feature-discovery usr usr/bin
			printf 'f 755 usr/bin/featurebox\n'
			printf 'f 644 %s\n' "$conf"
			for a in $list; do printf 'l 777 usr/bin/%s\n' "$a"; done
		} | LC_ALL=C sort -k3
	)
	got=$(listing "$root")
	if [ "$got" = "$want" ]; then
		pass "$arch: the tree holds exactly featurebox, $(wc -w <<<"$list") applet links and nfd-worker.conf"
	else
		fail "$arch: the tree is not exactly the image's files (type mode path): $(diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") | grep '^[<>]' | tr '\n' ' ' | head -c 600)"
	fi
	t "$arch: $conf is deploy/base/nfd-worker.conf" cmp "$root/$conf" deploy/base/nfd-worker.conf
	t "$arch: every applet link resolves to usr/bin/featurebox inside the tree" links_ok "$root"

	# argv[0] dispatch through each link: the applet's own --help
	for a in $list; do
		if out=$($wrap "$root/usr/bin/$a" --help 2>&1) && grep -q "^Usage: $a " <<<"$out"; then
			pass "$arch: usr/bin/$a --help runs $a through the link"
		else
			fail "$arch: usr/bin/$a --help: $(printf '%s' "$out" | head -c 300)"
		fi
	done
done

# The Dockerfile copies exactly that tree; an extra COPY is caught.
t "scripts/image-check passes on the Dockerfile" scripts/image-check
cp Dockerfile "$W/Dockerfile"
sed -i '/^USER /i COPY --from=build /src/Makefile /Makefile' "$W/Dockerfile"
if ! grep -q '^COPY --from=build /src/Makefile' "$W/Dockerfile"; then
	fail "scripts/image-check: the test could not add a COPY to the Dockerfile's final stage"
elif scripts/image-check "$W/Dockerfile" >"$W/out" 2>&1; then
	fail "scripts/image-check accepts a Dockerfile whose image has an extra COPY"
elif grep -q 'exactly one' "$W/out"; then
	pass "scripts/image-check refuses an extra COPY in the final stage, saying why"
else
	fail "scripts/image-check refuses an extra COPY but says: $(head -c 300 "$W/out")"
fi
cp Dockerfile "$W/Dockerfile"
sed -i 's|^\(COPY --from=build /src/build/image/\)armhf/|\1aarch64/|' "$W/Dockerfile"
if ! grep -q '^FROM scratch AS rootfs-arm$' Dockerfile || cmp -s Dockerfile "$W/Dockerfile"; then
	fail "scripts/image-check: the test could not swap the arm stage's tree"
elif scripts/image-check "$W/Dockerfile" >"$W/out" 2>&1; then
	fail "scripts/image-check accepts the aarch64 tree in the arm image"
else
	pass "scripts/image-check refuses another arch's tree in a TARGETARCH's image"
fi
[ "$fails" -eq 0 ]
