# tests/soak.sh: every daemon (tests/cluster.sh) for FB_SOAK_SECONDS (default
# 600) against the test API server with churn: features.d rewritten on both
# workers and the NodeFeatureRule edited every cycle, a node (with its
# NodeFeature) added and the previous one deleted every cycle, the vendors
# ConfigMap rewritten. Every 10 s the daemons' VmRSS and open fds are read
# from /proc. Asserts:
#   - after every cycle's changes the cluster converges (labels, NodeFeature,
#     PhysicalGPUs; the churned node labelled, the deleted one's NodeFeature
#     collected);
#   - open fds are flat: the last third's peak no higher than the first
#     third's (the first minute at least; meaningful from a few minutes on);
#   - RSS is flat (release build only: ASan's quarantine makes it grow by
#     design): the last third's peak within 10% + 256 KiB of the first
#     third's;
#   - every daemon stops on SIGTERM with exit 0: under the sanitizer build
#     LeakSanitizer turns a leak into a non-zero exit and a report.
#   FLAVOUR=check FBBIN=build/check/featurebox FB_SOAK_SECONDS=60 bash tests/soak.sh
. "$(dirname "$0")/lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/cluster.sh"
SUITE=soak/$FLAVOUR
trap 'for n in $DAEMONS; do eval "kill -9 \${pid_$n:-0} 2>/dev/null"; done; k8s_stop; rm -rf "$W"' EXIT
DUR=${FB_SOAK_SECONDS:-600}
CYCLE=${FB_SOAK_CYCLE:-20}
CL_SLEEP=5s CL_RESYNC=60s CL_GC=60s CL_RESYNC_GPU=30s CL_RESYNC_DT=30s

cluster_start || { fail "the cluster starts"; exit 1; }
check "the cluster converges" wait_for 60 cluster_expect 0

# sample T: one line per daemon "T NAME RSS-KiB FDS" into $W/samples
sample() {
	local n p rss fds
	for n in $DAEMONS; do
		eval "p=\$pid_$n"
		rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
		fds=$(ls "/proc/$p/fd" 2>/dev/null | wc -l)
		echo "$1 $n ${rss:-0} $fds" >>"$W/samples"
	done
}

put_churn_node() { # K
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"churn-%s"}}' "$1" |
		k8s_ctl put /api/v1/nodes/churn-$1 - >/dev/null
	printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"churn-%s","namespace":"%s","labels":{"nfd.node.kubernetes.io/node-name":"churn-%s"}},"spec":{"labels":{"churn":"%s"}}}' \
		"$1" $NSP "$1" "$1" | k8s_ctl put $NFAPI/namespaces/$NSP/nodefeatures/churn-$1 - >/dev/null
}
churn_ok() { # K: churn-K labelled, churn-(K-1)'s NodeFeature gone
	k8s_ctl get /api/v1/nodes/churn-$1 | grep -q "\"feature.node.kubernetes.io/churn\": \"$1\"" &&
		! k8s_ctl get $NFAPI/namespaces/$NSP/nodefeatures/churn-$(($1 - 1)) >/dev/null 2>&1
}
put_vendors() { # K: the ConfigMap, rewritten (a comment changes)
	printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gpu-supported-vendors","namespace":"%s","annotations":{"cycle":"%s"}},"data":{"nvidia":"10de"}}' \
		$GNS "$1" | k8s_ctl put /api/v1/namespaces/$GNS/configmaps/gpu-supported-vendors - >/dev/null
}

start=$(date +%s)
end=$((start + DUR))
K=0
bad_cycles=0
sample 0
next_sample=$((start + 10))
while [ "$(date +%s)" -lt "$end" ]; do
	K=$((K + 1))
	cluster_round $K
	put_churn_node $K
	[ $K -gt 1 ] && k8s_ctl delete /api/v1/nodes/churn-$((K - 1)) >/dev/null
	put_vendors $K
	if ! wait_for 60 cluster_expect $K || ! wait_for 30 churn_ok $K; then
		bad_cycles=$((bad_cycles + 1))
		echo "# cycle $K did not converge: $(cluster_expect $K | tr '\n' ' ')" >&2
	fi
	cluster_alive >/dev/null || break
	cyc_end=$(($(date +%s) + CYCLE))
	while [ "$(date +%s)" -lt "$cyc_end" ] && [ "$(date +%s)" -lt "$end" ]; do
		if [ "$(date +%s)" -ge "$next_sample" ]; then
			sample $(($(date +%s) - start))
			next_sample=$((next_sample + 10))
		fi
		sleep 1 # (the soak's pace: its length is the test)
	done
done
sample $(($(date +%s) - start))
check "$K cycles of churn over ${DUR} s: each converged" [ "$bad_cycles" = 0 ]
check "no daemon exited" cluster_alive

# flatness from the samples, per daemon
python3 - "$W/samples" "$FLAVOUR" >"$W/flat" <<'PY'
import collections, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    t, n, rss, fds = line.split()
    rows[n].append((int(t), int(rss), int(fds)))
for n, s in rows.items():
    s = [r for r in s if r[1] > 0]
    tmax = s[-1][0]
    first = [r for r in s if r[0] <= max(60, tmax / 3)]
    last = [r for r in s if r[0] >= tmax * 2 / 3]
    r1, r3 = max(r[1] for r in first), max(r[1] for r in last)
    f1, f3 = max(r[2] for r in first), max(r[2] for r in last)
    ok_fd = f3 <= f1
    ok_rss = sys.argv[2] != "release" or r3 <= r1 * 1.10 + 256
    print("%s %s %s rss KiB first-third peak %d, last-third peak %d; fds %d -> %d (%d samples over %d s)"
          % ("ok" if ok_fd and ok_rss else "BAD", n, "fds" if ok_fd else "FDS", r1, r3, f1, f3, len(s), tmax))
PY
sed 's/^/# /' "$W/flat" >&2
for n in $DAEMONS; do
	line=$(grep " $n " "$W/flat")
	check "$n: open fds flat$([ "$FLAVOUR" = release ] && echo ', RSS flat')" \
		sh -c "echo '$line'; case '$line' in ok*) exit 0;; *) exit 1;; esac"
done
# (sanitizer reports go to $W/san, which every check looks at)
check "every daemon stops on SIGTERM with exit 0, no sanitizer report" cluster_stop
done_testing
