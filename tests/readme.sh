# tests/readme.sh: the README's commands, run as they are written. A block is
# the fenced code after a line "<!-- readme-test: NAME -->".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
. tests/lib/testing.sh
SUITE=readme
block() {
	awk -v n="$1" '
		$0 == "<!-- readme-test: " n " -->" { on = 1; next }
		on && /^```/ { if (in_code) exit; in_code = 1; next }
		on && in_code { print }' README.md
}

code=$(block quickstart)
if [ -z "$code" ]; then
	fail "quickstart: the block is in README.md"
else
	pass "quickstart: the block is in README.md"
	out=$(mktemp)
	# its own process group, so the servers it starts in the background go with it
	setsid bash -c "$code" >"$out" 2>&1 &
	pid=$!
	for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	kill -0 $pid 2>/dev/null && kill -- -$pid 2>/dev/null # hung: 60 s is plenty
	wait $pid
	rc=$?
	kill -- -$pid 2>/dev/null
	n=$(tail -n 1 "$out")
	if [ $rc -eq 0 ] && [ "$n" -gt 0 ] 2>/dev/null; then
		pass "quickstart: the worker and the master put $n feature labels on the demo node"
	else
		fail "quickstart: labels on the demo node (exit $rc, output: $(tail -n 5 "$out" | tr '\n' ' '))"
	fi
	rm -f "$out"
fi

[ $fails -eq 0 ]
