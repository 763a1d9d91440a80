# tests/lib/testing.sh: the one shell harness of every suite (after toybox's
# scripts/runtest.sh). Source it first; it gives a scratch directory $W
# (removed on exit: a suite that sets its own EXIT trap removes it there),
# $SUITE (applets/FLAVOUR/NAME for a suite with FBBIN, else the script's
# name: set it after sourcing to change it), and:
#
#   testing NAME CMD EXPECTED [INPUT [STDIN]]
# runs CMD with eval in a fresh scratch directory $W/run (INPUT written to the
# file "input" there, STDIN fed to it) and compares its stdout with EXPECTED,
# both after printf '%b' so "\n" works. Prints "PASS: SUITE: NAME" or a FAIL
# with both outputs. $FB runs the binary under test ("featurebox" in front of
# the applet name); $FBRUN is the emulator for cross builds (empty on the host).
# Use "; echo \$?" inside CMD to check exit codes, 2>&1 to check messages.
#   check NAME CMD...        passes when CMD succeeds (its output shown on a FAIL)
#   t NAME CMD...            the same, its output in the FAIL line itself
#   wait_for SECONDS CMD...  until CMD succeeds: for state another process
#                            reaches in its own time (never a fixed sleep)
#   pass NAME / fail NAME / skip NAME WHY, as_nobody CMD..., done_testing

FBRUN=${FBRUN:-}
FLAVOUR=${FLAVOUR:-release}
if [ -n "${FBBIN:-}" ]; then
	FB="$FBRUN $FBBIN"
	SUITE="applets/$FLAVOUR/$(basename "$0" .sh)"
else
	SUITE=$(basename "$0" .sh)
fi
W=$(mktemp -d /tmp/fb-test.XXXXXX)
chmod 755 "$W"
trap 'rm -rf "$W"' EXIT
fails=0
# Sanitizer reports (check flavour) go to files that every test looks for, so
# a leak or UB fails the test even when the output was right. The directory
# is world-writable for the runs that drop to nobody.
mkdir -p "$W/san" && chmod 1777 "$W/san"
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$W/san/report"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$W/san/report"

# sanitizer_clean NAME: fails NAME when a sanitizer wrote a report.
sanitizer_clean() {
	if ls "$W"/san/report* >/dev/null 2>&1; then
		fail "$1 (sanitizer report)"
		head -c 3000 "$W"/san/report* | sed 's/^/  /'
		rm -f "$W"/san/report*
		return 1
	fi
	return 0
}

pass() { printf 'PASS: %s: %s\n' "$SUITE" "$1"; }
fail() { printf 'FAIL: %s: %s\n' "$SUITE" "$1"; fails=$((fails + 1)); }
skip() { printf 'SKIP: %s: %s\n' "$SUITE" "$1"; }

testing() {
	local name=$1 cmd=$2 want got
	want=$(printf '%b' "$3")
	rm -rf "$W/run"
	mkdir -p "$W/run"
	printf '%b' "${4:-}" >"$W/run/input"
	got=$(cd "$W/run" && printf '%b' "${5:-}" | eval "$cmd" 2>"$W/stderr")
	sanitizer_clean "$name" || return 0
	if [ "$got" = "$want" ]; then
		pass "$name"
	else
		fail "$name (command: $cmd)"
		printf '  --- want\n%s\n  --- got\n%s\n  --- stderr\n%s\n' "$want" "$got" \
			"$(head -c 2000 "$W/stderr")" | sed 's/^/  /'
	fi
}

# check NAME COMMAND...: passes when the command succeeds (for assertions that
# are not about stdout: file contents, stderr wording).
check() {
	local name=$1
	shift
	if "$@" >"$W/check.out" 2>&1 && sanitizer_clean "$name"; then
		pass "$name"
	else
		fail "$name"
		head -c 2000 "$W/check.out" | sed 's/^/  /'
	fi
}

# t NAME COMMAND...: passes when the command succeeds; its output (600
# bytes, on one line) in the FAIL line
t() {
	local n=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$n"; else fail "$n: $(printf '%s' "$out" | tr '\n' ' ' | head -c 600)"; fi
}

# stop PID: SIGTERM, then up to 60 s for it to exit (SIGKILL after that:
# a daemon that never exits fails its test instead of hanging the suite);
# its exit status in STOP_RC. (Not in $(...): wait needs the parent shell.)
stop() {
	kill -TERM "$1" 2>/dev/null
	wait_for 60 exited "$1" || kill -9 "$1" 2>/dev/null
	wait "$1"
	STOP_RC=$?
}

# probe URL: the HTTP status of URL the way the kubelet probes it (1 s
# timeout, failureThreshold 3): the first 200 of up to three tries in a
# row, else the last try's status (000: no answer within 1 s).
probe() {
	local i st
	for i in 1 2 3; do
		st=$(curl -s -m 1 -o /dev/null -w '%{http_code}' "$1")
		[ "$st" = 200 ] && break
	done
	printf '%s' "$st"
}

# exited PID: the process is gone or a zombie (kill -0 succeeds on
# zombies). With wait_for, a process that never exits fails the test
# instead of hanging it.
exited() { ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }

# wait_for SECONDS COMMAND...: until the command succeeds (0), or 1 after
# SECONDS; for state another process reaches in its own time.
wait_for() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# as_nobody CMD...: runs CMD as uid/gid 65534 when we are root, else as we are,
# so permission tests mean something under CI's root.
as_nobody() {
	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
	else
		"$@"
	fi
}

done_testing() {
	[ "$fails" -eq 0 ]
}
