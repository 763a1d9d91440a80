# nfd-worker publishing its NodeFeature to the test API server.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
F=$FB_TOP/tests/fixtures
trap 'k8s_stop; [ -n "${wpid:-}" ] && kill -9 $wpid 2>/dev/null; rm -rf "$W"' EXIT

k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
S=$K8S_DIR
NSP=node-feature-discovery
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node1"}}' | k8s_ctl put /api/v1/nodes/node1 - >/dev/null
printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nfd-worker-abcde","namespace":"%s","ownerReferences":[{"apiVersion":"apps/v1","kind":"DaemonSet","name":"nfd-worker","uid":"ds-uid-1","controller":true}]}}' $NSP |
	k8s_ctl put /api/v1/namespaces/$NSP/pods/nfd-worker-abcde - >/dev/null
# the worker's RBAC as upstream's: nodefeatures, and get on its own Pod and Node
k8s_ctl set-rules node1 - >/dev/null <<'JSON'
[{"verbs": ["get", "list", "watch"], "resources": ["nodes"]},
 {"verbs": ["get"], "resources": ["pods"]},
 {"verbs": ["get", "list", "watch", "create", "update", "patch", "delete"], "resources": ["nodefeatures"]}]
JSON
mkdir -p "$W/root" "$W/fd"
cp -r "$F/nfd/rpi4/." "$W/root/" && cp -r "$F/sysfs/rpi4/." "$W/root/"
echo "edge.example.com/site=lab" >"$W/fd/site"
NFP=/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/$NSP/nodefeatures/node1
export KUBERNETES_NAMESPACE=$NSP POD_NAME=nfd-worker-abcde POD_UID=pod-uid-1
NW="$FB nfd-worker --kubeconfig $S/kubeconfig-node1 --node-name node1 --config $W/none.conf --host-prefix $W/root/ --features-dir $W/fd"
nf() { k8s_ctl get $NFP; }
nf_label() { nf | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["labels"].get(sys.argv[1], "-"))' "$1"; }
# 1. --oneshot: the object, exactly as upstream's worker makes it.
testing "--oneshot publishes and exits 0" "$NW --oneshot 2>$W/one.log; echo \$?" "0\n"
check "NodeFeature: upstream shape" python3 - "$(nf)" <<'PY'
import json, sys
o = json.loads(sys.argv[1])
md = o["metadata"]
assert o["apiVersion"] == "nfd.k8s-sigs.io/v1alpha1" and o["kind"] == "NodeFeature"
assert md["name"] == "node1" and md["namespace"] == "node-feature-discovery", md
assert md["labels"] == {"nfd.node.kubernetes.io/node-name": "node1"}, md["labels"]
assert md["annotations"] == {"nfd.node.kubernetes.io/worker.version": "0.1.0",
                             "nfd.node.kubernetes.io/worker.pod.uid": "pod-uid-1"}, md["annotations"]
refs = [(r["kind"], r["name"], r["uid"], r["blockOwnerDeletion"]) for r in md["ownerReferences"]]
assert refs == [("Pod", "nfd-worker-abcde", "pod-uid-1", False), ("DaemonSet", "nfd-worker", "ds-uid-1", False)], refs
l = o["spec"]["labels"]
assert l["feature.node.kubernetes.io/usb-fe_1a6e_089a.present"] == "true"
assert l["feature.node.kubernetes.io/usb-ff_03e7_2485.present"] == "true"
assert l["edge.example.com/site"] == "lab"
f = o["spec"]["features"]
assert "usb.device" in f["instances"] and "local.label" in f["attributes"], sorted(f["instances"])
PY
testing "--owner-refs=node: a reference to the Node with its uid" \
	"$NW --oneshot --owner-refs=node 2>/dev/null; nf | python3 -c 'import json,sys; print([(r[\"kind\"], r[\"name\"], r[\"uid\"] != \"\") for r in json.load(sys.stdin)[\"metadata\"][\"ownerReferences\"]])'" \
	"[('Node', 'node1', True)]\n"
testing "--owner-refs= (empty): none" \
	"$NW --oneshot --owner-refs= 2>/dev/null; nf | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"metadata\"].get(\"ownerReferences\", []))'" "[]\n"

# 2. The daemon: steady state costs nothing; a features.d change is
#    published within a second or two, once.
# The Pod cannot be read at first (503): the DaemonSet reference must still
# arrive once it can, not be left out for the life of the process.
k8s_ctl fault --method GET --path '/pods/nfd-worker-abcde$' --count 2 --status 503 >/dev/null
$NW --options '{"core":{"sleepInterval":"1s"}}' --port 0 >"$W/w.log" 2>&1 &
wpid=$!
check "daemon publishes" wait_for 15 grep -qE '(created|updated) NodeFeature node-feature-discovery/node1' "$W/w.log"
check "a transient failure at start does not lose the DaemonSet owner reference" wait_for 15 sh -c \
	"cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get $NFP | grep -q '\"kind\": *\"DaemonSet\"'"
port=$(sed -n 's/.*serving \/healthz and \/metrics on port \([0-9]*\).*/\1/p' "$W/w.log")
testing "/healthz answers 200" "probe http://127.0.0.1:$port/healthz" "200"
testing "/metrics has the upstream discovery histogram" \
	"curl -s http://127.0.0.1:$port/metrics | grep -c -e '^nfd_worker_feature_discovery_duration_seconds_count{node=\"node1\"}' -e '^nfd_worker_build_info{version='" "2\n"
# passes: the worker's full discovery passes so far (its /metrics)
passes() {
	curl -s -m 5 "http://127.0.0.1:$port/metrics" |
		awk '/^nfd_worker_feature_discovery_duration_seconds_count\{node="node1"\} / { print int($2) }'
}
passes_ge() { [ "$(passes)" -ge "$1" ] 2>/dev/null; }
# passes_after N: wait until N more passes than now have run
passes_after() {
	local n
	n=$(passes)
	wait_for 30 passes_ge $((${n:-0} + $1))
}
# a whole pass after the publishing above, then three more
passes_after 2 || fail "two more discovery passes (/metrics)"
k8s_ctl clear-log
passes_after 3 || fail "three more discovery passes (/metrics)"
testing "three more discovery passes, no change: zero API requests" "k8s_ctl count '*' '^/api'" "0\n"
echo "edge.example.com/rack=r7" >>"$W/fd/site"
check "a features.d change is published promptly" wait_for 5 sh -c "[ \"\$(cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get $NFP | grep -c r7)\" -ge 1 ]"
# two whole passes later nothing more was sent
passes_after 2 || fail "two more discovery passes (/metrics)"
testing "published once" "k8s_ctl count PUT '^$NFP\$'" "1\n"

# 3. Someone else replaced the object: our next write gets 409, re-reads, wins.
nf | python3 -c 'import json,sys; o=json.load(sys.stdin); o["spec"]["labels"]["intruder"]="x"; print(json.dumps(o))' |
	k8s_ctl put $NFP - >/dev/null
k8s_ctl clear-log
echo "edge.example.com/row=3" >>"$W/fd/site"
check "after a 409 the worker re-reads and replaces" wait_for 10 sh -c "cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get $NFP | grep -q '\"edge.example.com/row\"' && ! K8S_DIR=$S k8s_ctl get $NFP | grep -q intruder"
testing "the 409 happened" "k8s_ctl count PUT '^$NFP\$' --status 409 | awk '{ print (\$1 >= 1) }'" "1\n"

# 4. API down for a while: still running, publishes after recovery.
port_api=$K8S_PORT
k8s_stop
echo "edge.example.com/after=outage" >>"$W/fd/site"
# two discovery passes with the API down
passes_after 2 || fail "two more discovery passes (/metrics)"
check "API down: the worker is still running" kill -0 $wpid
testing "API down: /healthz still answers (1 s, 3 tries: the kubelet's probe)" "probe http://127.0.0.1:$port/healthz" "200"
k8s_start "$S" --port "$port_api" || fail "API server restarts"
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
check "API back: the NodeFeature is published again" wait_for 40 sh -c "cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get $NFP 2>/dev/null | grep -q outage"
check "and the worker never exited" kill -0 $wpid
testing "no token text in the worker's log" "grep -c -F -e \"\$(cat $S/tokens/node1)\" $W/w.log" "0\n"

# 5. SIGTERM: exit 0 (how soon: at the end of 6, where the worker waits on
#    a 10 min timer; a worker that never exits fails here, not hangs).
stop $wpid
rc=$STOP_RC
wpid=
testing "SIGTERM: exit 0" "echo $rc" "0\n"

# 6. features.d churn (issue 16: a file rewritten every 50 ms made 96
#    NodeFeature requests in 11 s). A change re-runs the local source only
#    (upstream: the discovery histogram counts full passes, which stay at
#    one), changes are coalesced and published at most once a second, and
#    the last one is never lost.
k8s_ctl clear-log
NODE_NAME=node1 $FB nfd-worker --kubeconfig $S/kubeconfig-node1 --config $W/none.conf --host-prefix $W/root/ \
	--features-dir $W/fd --port 0 --options '{"core":{"sleepInterval":"10m"}}' >"$W/w6.log" 2>&1 &
wpid=$!
check "churn: the worker's first pass reached the server" wait_for 30 sh -c \
	"cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl count GET '^$NFP\$' | grep -qv '^0\$'"
port=$(sed -n 's/.*serving \/healthz and \/metrics on port \([0-9]*\).*/\1/p' "$W/w6.log")
k8s_ctl clear-log
t0=$(date +%s%N)
i=0
while [ $i -lt 200 ]; do
	echo "churn.example.com/n=$i" >"$W/fd/churn"
	i=$((i + 1))
	sleep 0.05 # (the churn's pace is what is tested: a rewrite every 50 ms)
done
t1=$(date +%s%N)
check "churn: the last value is published" wait_for 20 sh -c "cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get $NFP | grep -q '\"churn.example.com/n\": *\"199\"'"
# the last value is on the server: the last change was read, and an unchanged
# spec is never sent again, so the count is final (no waiting for stragglers)
reqs=$(k8s_ctl count '*' "^$NFP")
ms=$(( (t1 - t0) / 1000000 ))
echo "# features.d churn: 200 rewrites in $ms ms gave $reqs NodeFeature requests, $(( reqs * 60000 / ms )) per minute" >&2
testing "churn: at most one request a second (and a couple more)" "[ $reqs -le \$(( $ms / 1000 + 3 )) ] && echo ok" "ok\n"
testing "churn: only the local source re-ran (one full discovery pass)" \
	"curl -s http://127.0.0.1:$port/metrics | grep '^nfd_worker_feature_discovery_duration_seconds_count'" \
	"nfd_worker_feature_discovery_duration_seconds_count{node=\"node1\"} 1"
# idle on its 10 min sleepInterval: SIGTERM ends it, not the timer (the
# bound is a twentieth of the interval: far above what a loaded machine adds)
t0=$(date +%s%N)
stop $wpid
rc=$STOP_RC
t1=$(date +%s%N)
wpid=
echo "# SIGTERM on a worker waiting on its 10 min timer: gone after $(( (t1 - t0) / 1000000 )) ms" >&2
testing "SIGTERM while idle: exit 0 at once, not at the next pass (< 30 s of 10 min)" \
	"echo $rc; [ \$(( ($t1 - $t0) / 1000000 )) -lt 30000 ] && echo soon" "0\nsoon\n"

# 7. More devices than an object the API takes can hold: 1,000 PCI devices
#    from the generator, each also listed under eleven more addresses
#    (domains 2000.., as if the node had 12,000 functions; core/pci reads them
#    like any other), make a pci.device list of about 1.8 MB: etcd refuses
#    that (the server answers 500 "etcdserver: request is too large", as a
#    real one). The worker cuts the list to fit 1 MiB, says so, and publishes.
"$FB_TOP/scripts/gen-pci-fixture" 1000 "$W/bigpci" >/dev/null
python3 - "$W/bigpci/sys/bus/pci/devices" <<'PY'
import os, sys
d = sys.argv[1]
for n in os.listdir(d):
    for p in "23456789abc":  # generated domains start with 0 or 1
        os.symlink(os.readlink(os.path.join(d, n)), os.path.join(d, p + n[1:]))
PY
BIG="$FB nfd-worker --kubeconfig $S/kubeconfig-node1 --node-name node1 --config $W/none.conf --host-prefix $W/bigpci/ --features-dir $W/fd --feature-sources pci,local --label-sources pci,local"
k8s_ctl delete $NFP >/dev/null
testing "12,000 PCI functions: --oneshot publishes, exit 0, no error" \
	"$BIG --oneshot 2>$W/big.log; echo \$?; sed -n 's/^E[^]]*] //p' $W/big.log | cut -c1-300" "0\n"
testing "12,000 PCI functions: the warning names the source cut" \
	"grep -c 'NodeFeature node-feature-discovery/node1: over [0-9]* bytes: pci.device: [0-9]* of 12000 instances published, the rest dropped' $W/big.log" "1\n"
nf >"$W/big.json"
check "12,000 PCI functions: the object holds a capped list, under 1 MiB" python3 - "$W/big.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
n = len(o["spec"]["features"]["instances"]["pci.device"]["elements"])
size = len(json.dumps(o, separators=(",", ":")))
print("# published %d of 12000 pci.device instances, %d bytes" % (n, size), file=sys.stderr)
assert 4000 < n < 12000, n
assert size <= 1 << 20, size
assert o["spec"]["labels"]["edge.example.com/site"] == "lab", o["spec"]["labels"]
PY
k8s_ctl clear-log
testing "the same cut on the next pass: nothing to write" \
	"$BIG --oneshot 2>/dev/null; echo \$?; k8s_ctl count PUT '^$NFP\$'; k8s_ctl count POST '^$NFP\$'" "0\n0\n0\n"

# 8. --standalone with more labels than a Node's annotations can list (the
#    bookkeeping annotation names every label; all annotations together may
#    take 256 KiB): the labels are cut to 128 KiB, with a warning.
k8s_ctl set-rules node1 - >/dev/null <<'JSON'
[{"verbs": ["get", "list", "watch", "patch", "update"], "resources": ["nodes"]}]
JSON
mkdir -p "$W/fdbig"
for f in 1 2 3 4 5 6 7 8; do
	awk -v f=$f 'BEGIN { for (i = 0; i < 1000; i++) printf "edge.example.com/accelerator-slot-%d-%04d=true\n", f, i }' >"$W/fdbig/slots$f"
done
printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node1"}}' | k8s_ctl put /api/v1/nodes/node1 - >/dev/null
SA="$FB nfd-worker --standalone --oneshot --kubeconfig $S/kubeconfig-node1 --node-name node1 --config $W/none.conf --host-prefix $W/root/ --features-dir $W/fdbig --feature-sources local --label-sources local"
testing "standalone, 8,000 labels: exit 0, no error" \
	"$SA 2>$W/sa.log; echo \$?; sed -n 's/^E[^]]*] //p' $W/sa.log | cut -c1-300" "0\n"
testing "standalone, 8,000 labels: the warning says how many were published" \
	"grep -c 'labels for node node1: labels over 131072 bytes: [0-9]* of 8000 labels published, the rest dropped' $W/sa.log" "1\n"
k8s_ctl get /api/v1/nodes/node1 >"$W/node1.json"
check "standalone, 8,000 labels: the Node holds the first ones, in key order" python3 - "$W/node1.json" <<'PY'
import json, sys
md = json.load(open(sys.argv[1]))["metadata"]
l = sorted(k for k in md.get("labels", {}) if k.startswith("edge.example.com/"))
print("# standalone: %d of 8000 labels" % len(l), file=sys.stderr)
assert 1000 < len(l) < 8000, len(l)
assert l == ["edge.example.com/accelerator-slot-%d-%04d" % (i // 1000 + 1, i % 1000) for i in range(len(l))], l[:3]
assert len(json.dumps(md.get("annotations", {}))) < 256 * 1024
PY

done_testing
