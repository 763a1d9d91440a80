# tests/faults.sh: the fault matrix. Every daemon runs at once against the
# test API server (tests/cluster.sh: nfd-master, nfd-worker, nfd-worker
# --standalone, gpu-node-agent, dt-labeller), built with the sanitizers. Each
# round breaks the API in one way, changes the cluster's inputs while it is
# broken (features.d of both workers, a NodeFeatureRule), heals it, and then
# asserts:
#   - the cluster converges to what the new inputs ask for (node labels from
#     every daemon, the NodeFeature, the four PhysicalGPUs);
#   - no daemon exited, and every /healthz still answers;
#   - no write took away a label that should have stayed or changed one the
#     inputs did not change, and nothing was deleted (the request log);
#   - while the API refused requests or cut watches, the daemons backed off
#     (a bounded number of requests, not a retry storm).
# At the end every daemon must stop on SIGTERM with exit 0 and no sanitizer
# report (leaks included).
#   FBBIN=build/check/featurebox bash tests/faults.sh   (FB_FAULT_ONLY=REGEX: some rounds)
. "$(dirname "$0")/lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/cluster.sh"
SUITE=faults
IMP=
trap 'for n in $DAEMONS; do eval "kill -9 \${pid_$n:-0} 2>/dev/null"; done; k8s_stop; [ -n "$IMP" ] && kill -9 $IMP 2>/dev/null; rm -rf "$W"' EXIT
HOLD=${FB_FAULT_HOLD:-8}  # seconds each fault lasts
SETTLE=${FB_FAULT_SETTLE:-75} # seconds to converge once healed (backoff tops out at 30 s)

cluster_start || { fail "the cluster starts"; exit 1; }
check "every daemon labels and publishes: the cluster converges" wait_for 60 cluster_expect 0
check "... and no daemon exited" cluster_alive

health() { # every daemon with a port answers /healthz
	local n port bad=
	for n in master worker standalone gpu; do
		port=$(sed -n 's/.* port \([0-9][0-9]*\).*/\1/p' "$W/$n.log" | head -n 1)
		curl -sf -m 5 "http://127.0.0.1:$port/healthz" >/dev/null || bad="$bad $n(port ${port:-?})"
	done
	[ -z "$bad" ] || { echo "unhealthy:$bad"; return 1; }
}
check "every daemon serves /healthz" health

# fault rules on every API request (the control API is never faulted)
fault() { k8s_ctl fault --path '^/api' --count -1 "$@" >/dev/null; }
requests_since() { k8s_ctl count '*' '^/api' --since "$1"; }

K=0
# round NAME BREAK HEAL [MAX-REQUESTS]: BREAK and HEAL are commands; with
# MAX-REQUESTS, the requests the daemons made while broken are bounded.
round() {
	local name=$1 brk=$2 heal=$3 max=${4:-} seq n
	# FB_FAULT_ONLY=REGEX: only the rounds named so (a local re-run)
	[ -z "${FB_FAULT_ONLY:-}" ] || [[ $name =~ $FB_FAULT_ONLY ]] || return 0
	K=$((K + 1))
	seq=$(k8s_seq)
	$brk
	cluster_round $K
	sleep "$HOLD" # (the fault's duration is the test: the daemons back off meanwhile)
	n=$(requests_since "$seq" 2>/dev/null || echo "?")
	[ -n "${K8S_PID:-}" ] && k8s_ctl log --json --since "$seq" >"$W/round$K.json"
	t0=$(date +%s.%N)
	$heal
	[ -n "${K8S_PID:-}" ] || { fail "$name: the API server is back"; return; }
	cl_rule $K
	check "$name: converged after the fault" wait_for "$SETTLE" cluster_expect $K
	t1=$(date +%s.%N)
	check "$name: no daemon exited" cluster_alive
	check "$name: every /healthz answers" health
	check "$name: no label removed or wrongly changed, nothing deleted" cluster_log_ok "$seq"
	if [ -n "$max" ]; then
		check "$name: backed off ($n requests in ${HOLD} s, at most $max)" \
			sh -c '[ "$1" != "?" ] && [ "$1" -le "$2" ]' _ "$n" "$max"
	fi
	printf '# round %s (%s): %s requests while broken, converged %.1f s after healing\n' \
		$K "$name" "$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" >&2
	[ -s "$W/round$K.json" ] && python3 -c '
import collections, json, sys
c = collections.Counter("%s %s %s%s" % (e.get("user"), e["verb"], e["resource"], " watch" if e["watch"] else "")
                        for e in json.load(open(sys.argv[1])))
for k, v in c.most_common(8):
    print("#   %4d %s" % (v, k))' "$W/round$K.json" >&2
}

stopped_break() { server_down; }
stopped_heal() { server_up; }
history_break() { k8s_ctl reset-history >/dev/null; }
nothing() { :; }
r429_break() { fault --status 429 --retry-after 2; }
r500_break() { fault --status 500; }
clear() { k8s_ctl clear-faults >/dev/null; }
body_break() { fault --no-watch --close; }
rst_break() { fault --no-watch --reset; }
watch_break() {
	fault --watch --close
	k8s_ctl drop-watches >/dev/null
}
slow_break() { fault --delay 1500; }
expire_break() {
	fault --watch --status 410
	k8s_ctl drop-watches >/dev/null
}
token_break() {
	k8s_ctl rotate-token node1 >/dev/null
	k8s_ctl rotate-token node2 >/dev/null
	k8s_ctl rotate-token fb-master >/dev/null
}
# CA mismatch: another server, with its own CA, answers on the API's port.
imposter_break() {
	server_down
	python3 "$FB_TOP/tests/k8s/server.py" --dir "$W/imposter" --port "$CL_PORT" --verbose >"$W/imposter.log" 2>&1 &
	IMP=$!
	wait_for 10 test -e "$W/imposter/ready"
}
imposter_heal() {
	imposter_requests=$("$FB_TOP/tests/k8s/ctl" "$W/imposter" count '*' '.' 2>/dev/null || echo "?")
	# --verbose logs each connection whose TLS handshake failed
	imposter_refused=$(grep -c 'connection from' "$W/imposter.log")
	kill -TERM $IMP
	wait $IMP
	IMP=
	server_up
}
# the imposter's PKI is made now, not while the clock runs
python3 "$FB_TOP/tests/k8s/server.py" --dir "$W/imposter" >"$W/imposter.log" 2>&1 &
IMP=$!
wait_for 30 test -e "$W/imposter/ready"
kill -TERM $IMP
wait $IMP
IMP=

# 5 daemons; in backoff each makes a few requests per HOLD seconds
round "API server stopped" stopped_break stopped_heal
round "410: history reset, watches dropped" history_break nothing
round "429 storm with Retry-After" r429_break clear 60
round "500 on every request" r500_break clear 60
round "connections closed mid-body (writes applied)" body_break clear 120
round "connections reset (RST)" rst_break clear 120
round "watches cut mid-event" watch_break clear 60
# a watch cache behind the list: every watch expires at once, even one
# started from the list just made; relisting at once would loop
round "410 on every watch, right after each list" expire_break clear 60
round "slow server (1.5 s per request)" slow_break clear
round "token rotation" token_break nothing
round "CA mismatch: an imposter on the API's port" imposter_break imposter_heal
if [ -z "${FB_FAULT_ONLY:-}" ] || [ -n "${imposter_requests:-}" ]; then
	check "CA mismatch: the daemons tried the imposter (${imposter_refused:-no} TLS handshakes refused)" \
		[ "${imposter_refused:-0}" -gt 0 ]
	check "CA mismatch: no request reached the imposter (TLS verification held)" [ "${imposter_requests:-?}" = 0 ]
fi
round "API server restarted with a fresh history again" stopped_break stopped_heal

# (sanitizer reports go to $W/san, which every check looks at)
check "every daemon stops on SIGTERM with exit 0, no sanitizer report" cluster_stop
done_testing
