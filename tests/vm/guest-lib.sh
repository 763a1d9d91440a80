# guest-lib.sh: put in front of every guest script by scripts/vm initramfs.
# The guest is busybox sh as PID 1. It prints its results between the
# markers as PASS/FAIL lines for tests/run, then powers off.
# kernel messages must not land inside our lines on the shared console
dmesg -n 1 2>/dev/null
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
export PATH=/bin:/sbin
hostname vm
SUITE=vm
npass=0
nfail=0
pass() { npass=$((npass + 1)); echo "PASS: $SUITE: $1"; }
# fail NAME [DETAIL...]
fail() {
	nfail=$((nfail + 1))
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
# health: the kernel must not be tainted (a WARN, an oops) by what we did
taint0=$(cat /proc/sys/kernel/tainted)
finish() {
	same "the kernel is not tainted by the run (WARN, oops)" "$(cat /proc/sys/kernel/tainted)" "$taint0"
	dmesg | grep -E 'WARNING:|BUG:|Oops|DMAR:.*[Ff]ault' | head -5 >/tmp/dmesg.bad
	same "no kernel warning, bug or DMAR fault in dmesg" "$(cat /tmp/dmesg.bad)" ""
	echo "=== fb-vm end pass=$npass fail=$nfail ==="
	sync
	poweroff -f
	sleep 60
}
echo
echo "=== fb-vm begin ==="
