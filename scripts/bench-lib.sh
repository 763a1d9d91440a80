# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
# bench-lib.sh: sourced by the scripts/bench* scripts. Tables are built as
# tab-separated rows in a file (the first row the header) and printed twice:
# aligned plain text on stdout and, when BENCH_MD names a file, a markdown
# table appended to it, so `make bench` prints what build/bench/report.md holds.

# bench_section TITLE: a heading
bench_section() {
	printf '\n== %s\n' "$1"
	[ -n "${BENCH_MD:-}" ] && printf '\n### %s\n\n' "$1" >>"$BENCH_MD"
	return 0
}

# bench_table FILE [LEFT]: the rows of FILE (tab-separated, header first);
# the first LEFT columns (default 1) left-aligned, the others right-aligned
# (they are figures)
bench_table() {
	awk -F'\t' -v left="${2:-1}" '
		{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
		  if (NF > nf) nf = NF }
		END {
			for (r = 1; r <= NR; r++) {
				line = sprintf("%-" w[1] "s", c[r, 1])
				for (i = 2; i <= nf; i++) line = line sprintf("  %" (i <= left ? "-" : "") w[i] "s", c[r, i])
				print line
			}
		}' "$1"
	[ -n "${BENCH_MD:-}" ] || return 0
	awk -F'\t' -v left="${2:-1}" '
		{ line = "|"; for (i = 1; i <= NF; i++) line = line " " $i " |"; print line }
		NR == 1 { line = "|"; for (i = 1; i <= NF; i++) line = line (i <= left ? " --- |" : " ---: |"); print line }
	' "$1" >>"$BENCH_MD"
	echo >>"$BENCH_MD"
}

# bench_note TEXT...: a line under a table
bench_note() {
	printf '%s\n' "$*"
	[ -n "${BENCH_MD:-}" ] && printf '%s\n\n' "$*" >>"$BENCH_MD"
	return 0
}

# bench_row FILE FIELD...: appends one tab-separated row
bench_row() {
	local f=$1
	shift
	(IFS=$'\t'; printf '%s\n' "$*") >>"$f"
}

# bench_calls CMD...: the syscalls of one run of CMD (strace -f -c's total)
bench_calls() {
	local out
	out=$(mktemp /tmp/fb-bench-strace-XXXXXX)
	strace -f -c -o "$out" "$@" >/dev/null 2>&1 || true
	# the sum of the per-syscall rows' calls column (the 4th: every row
	# fills the columns before it), not the total row, which strace versions
	# fill differently
	awk '/^-/ { sep++; next } sep == 1 && NF >= 5 { n += $4; seen = 1 } END { if (seen) print n }' "$out"
	rm -f "$out"
}

# bench_best RUNS CMD...: the fastest of RUNS runs of CMD, in ns (bash 5's
# EPOCHREALTIME: microseconds)
bench_best() {
	local runs=$1 b='' t0 t1
	shift
	for _ in $(seq "$runs"); do
		# bash's clock: no date process inside the interval
		t0=${EPOCHREALTIME/[.,]/}
		"$@" >/dev/null 2>&1 || true
		t1=${EPOCHREALTIME/[.,]/}
		if [ -z "$b" ] || [ $((t1 - t0)) -lt "$b" ]; then b=$((t1 - t0)); fi
	done
	echo "$((b * 1000))"
}

# bench_pair RUNS EMPTYCMD... -- CMD...: runs the two commands in turns,
# RUNS times each (so the load of a shared machine hits both alike), and
# prints "wall0 cpu0 wall1 cpu1": the best wall time and the best user+sys
# CPU time (wait4's rusage, microsecond resolution) of each, in ns
bench_pair() {
	python3 - "$@" <<'PY'
import os, sys, time
runs = int(sys.argv[1])
a = sys.argv[2:]
k = a.index("--")
cmds = [a[:k], a[k + 1:]]
best = [[None, None], [None, None]]
null = os.open(os.devnull, os.O_RDWR)
for _ in range(runs):
    for i, c in enumerate(cmds):
        t0 = time.perf_counter_ns()
        pid = os.posix_spawnp(c[0], c, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
        _, _, ru = os.wait4(pid, 0)
        wall = time.perf_counter_ns() - t0
        cpu = int((ru.ru_utime + ru.ru_stime) * 1e9)
        for j, v in enumerate((wall, cpu)):
            if best[i][j] is None or v < best[i][j]:
                best[i][j] = v
print(best[0][0], best[0][1], best[1][0], best[1][1])
PY
}

# bench_rss CMD...: peak RSS of one run, KiB (GNU time's Maximum resident set size)
bench_rss() {
	/usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ { print $2 }'
}

# bench_fmt NUMBER [DECIMALS]
bench_fmt() {
	awk -v x="$1" -v d="${2:-2}" 'BEGIN { printf "%.*f", d, x }'
}
