# syscalls: nfd-worker's USB discovery within its syscall budget, 10 per
# device (issue 21; the floor, tests/tools/uevfloor's one read of each
# entry's uevent, is about 8). Counted, not timed, so the verdict is the same
# on a loaded machine: strace -f -c's total of one --oneshot run over a
# scripts/gen-usb-fixture tree of 50 and of 500 devices, less the run over
# an empty tree (the process start-up), over the devices. The release
# binary: the sanitizer build's runtime makes syscalls of its own.
#   bash tests/syscalls.sh        (FB_TOP set; tests/run runs it)
#   FB_SYSCALLS_BIN=PATH          another binary (default build/featurebox)
set -u
cd "${FB_TOP:?}"
. tests/lib/testing.sh
. scripts/bench-lib.sh
bin=${FB_SYSCALLS_BIN:-build/featurebox}
budget=10

if ! command -v strace >/dev/null; then
	fail "strace missing (scripts/install-deps installs it)"
	exit 1
fi
if [ ! -x "$bin" ]; then
	fail "$bin not built (make)"
	exit 1
fi
if ! out=$(strace -f -c -o /dev/null true 2>&1); then
	fail "strace cannot trace here: $(printf '%s' "$out" | head -c 300)"
	exit 1
fi

# worker TREE: the command line of one discovery pass over TREE
worker() {
	CMD=("$bin" nfd-worker --oneshot --no-publish --feature-sources=usb --label-sources=usb
		--host-prefix "$1/" --config /nonexistent --node-name syscalls --features-dir "$W/featuresd")
}
mkdir -p "$W/empty/sys/bus/usb/devices" "$W/featuresd"
worker "$W/empty"
c0=$(bench_calls "${CMD[@]}")
for n in 50 500; do
	d=$W/usb$n
	if ! gen=$(scripts/gen-usb-fixture "$n" "$d" 2>&1); then
		fail "usb: $n devices: gen-usb-fixture failed: $gen"
		continue
	fi
	# the pass must find what the tree holds: a broken tree or reader
	# cannot pass by reading nothing
	want=$(printf '%s\n' "$gen" | sed -n 's/.*, \([0-9]*\) usb.device instances/\1/p')
	worker "$d"
	got=$("${CMD[@]}" --print-features 2>/dev/null | python3 -c '
import json, sys
print(len(json.load(sys.stdin)["spec"]["features"]["instances"]["usb.device"]["elements"]))' 2>&1)
	if [ "$got" != "$want" ]; then
		fail "usb: $n devices: nfd-worker reports $got usb.device instances, the tree holds $want"
		continue
	fi
	c=$(bench_calls "${CMD[@]}")
	per=$(awk -v c="$c" -v c0="$c0" -v n="$n" 'BEGIN { if (c == "" || c0 == "") exit 1; printf "%.2f", (c - c0) / n }') ||
		{ fail "usb: $n devices: strace counted nothing ($c, empty tree $c0)"; continue; }
	echo "# usb: $n devices: $per syscalls per device ($c, empty tree $c0; budget $budget)" >&2
	t "usb: $n devices: at most $budget syscalls per device" \
		awk -v p="$per" -v b="$budget" -v c="$c" -v c0="$c0" 'BEGIN {
			if (p + 0 <= b) exit 0
			printf "%s syscalls per device (%s in all, %s for the empty tree)\n", p, c, c0; exit 1 }'
done
done_testing
