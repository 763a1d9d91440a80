# guest-lib.sh: put in front of every guest script by scripts/vm initramfs.
# The guest is busybox sh as PID 1. It prints its results between the
# markers as PASS/FAIL lines for tests/run, then powers off.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
export PATH=/bin:/sbin
hostname vm
SUITE=vm
pass() { echo "PASS: $SUITE: $1"; }
# fail NAME [DETAIL...]
fail() {
	echo "FAIL: $SUITE: $1"
	shift
	for l in "$@"; do printf '%s\n' "$l" | sed 's/^/    /'; done
}
# same NAME GOT WANT
same() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "want:" "$3" "got:" "$2"; return 1; fi
}
# ok NAME CMD...: passes when CMD succeeds
ok() {
	local n=$1
	shift
	if "$@" >/tmp/ok.out 2>&1; then pass "$n"; else fail "$n" "$(head -c 1500 /tmp/ok.out)"; fi
}
finish() {
	echo "=== fb-vm end ==="
	sync
	poweroff -f
	sleep 60
}
echo
echo "=== fb-vm begin ==="
