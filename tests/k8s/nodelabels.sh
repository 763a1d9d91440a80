# core/nodelabels' nl_apply against the test API server, driven by
# tests/tools/kubetool nl-apply (the sanitizer build): first labelling, no
# request for an unchanged node, stale and foreign keys, taints next to
# foreign ones, re-reads on 409/422, errors, a missing node, and prune; the
# record label (its value shown as R) that lets nfd-master trust its
# bookkeeping annotations, and what a node's forged annotations cannot do.
. "$FB_TOP/tests/lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
KT=${KUBETOOL:-$FB_TOP/build/check/tests/kubetool}
SUITE=k8s/nodelabels
trap 'k8s_stop; rm -rf "$W"' EXIT

k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
KC=$K8S_DIR/kubeconfig-admin
N=/api/v1/nodes/n1
k8s_ctl put $N - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"kubernetes.io/hostname":"n1"}},
 "spec":{"taints":[{"key":"node-role.kubernetes.io/control-plane","effect":"NoSchedule"}]},
 "status":{"capacity":{"cpu":"4"},"allocatable":{"cpu":"4"}}}
JSON
cat >"$W/d1.json" <<'JSON'
{"labels":{"cpu-avx":"true","example.com/gpu":"yes","kubernetes.io/bad":"x"},
 "annotations":{"note":"hi"},
 "extended_resources":{"gpu":"2","huge":"1000"},
 "taints":[{"key":"feature.node.kubernetes.io/special","value":"yes","effect":"NoSchedule"}]}
JSON
sed 's/"cpu-avx":"true",//; s/"gpu":"2",//' "$W/d1.json" >"$W/d2.json"

apply() { # NODE DESIRED|--prune [OPTIONS]: "changed C requests R", then the exit status
	"$KT" --kubeconfig "$KC" nl-apply "$@" 2>>"$W/kt.log"
	echo "rc $?"
}
# the parts of the node NFD touches, one line each, sorted keys
show() {
	k8s_ctl get "$N" | python3 -c '
import json, sys
o = json.load(sys.stdin)
md, st = o["metadata"], o.get("status", {})
d = lambda m: json.dumps(m, sort_keys=True, separators=(",", ":"))
for k in md.get("labels", {}):
    if k.endswith("node-restriction.kubernetes.io/nfd-record"):
        md["labels"][k] = "R" 
print("labels", d(md.get("labels", {})))
print("annotations", d(md.get("annotations", {})))
print("capacity", d(st.get("capacity", {})))
print("allocatable", d(st.get("allocatable", {})))
print("taints", d(o.get("spec", {}).get("taints", [])))'
}
FNK=feature.node.kubernetes.io
NFD=nfd.node.kubernetes.io
NR=node-restriction.kubernetes.io

k8s_ctl clear-log
testing "first labelling: GET, PATCH status, PATCH node" "apply n1 $W/d1.json --enable-taints" \
	"changed 1 requests 3\nrc 0\n"
testing "first labelling: the node" "show" \
"labels {\"example.com/gpu\":\"yes\",\"$FNK/cpu-avx\":\"true\",\"kubernetes.io/hostname\":\"n1\",\"$NR/nfd-record\":\"R\"}
annotations {\"$FNK/note\":\"hi\",\"$NFD/extended-resources\":\"gpu,huge\",\"$NFD/feature-annotations\":\"note\",\"$NFD/feature-labels\":\"cpu-avx,example.com/gpu\",\"$NFD/taints\":\"$FNK/special=yes:NoSchedule\"}
capacity {\"cpu\":\"4\",\"$FNK/gpu\":\"2\",\"$FNK/huge\":\"1000\"}
allocatable {\"cpu\":\"4\"}
taints [{\"effect\":\"NoSchedule\",\"key\":\"node-role.kubernetes.io/control-plane\"},{\"effect\":\"NoSchedule\",\"key\":\"$FNK/special\",\"value\":\"yes\"}]\n"
testing "the denied label was logged" "grep -c 'ignoring label kubernetes.io/bad=x: namespace kubernetes.io is not allowed' $W/kt.log" "1\n"
testing "PATCHes went to the node and its status" \
	"k8s_ctl log --json | python3 -c 'import json,sys; print(sorted(set(e[\"path\"] for e in json.load(sys.stdin) if e[\"method\"] == \"PATCH\")))'" \
	"['/api/v1/nodes/n1', '/api/v1/nodes/n1/status']\n"

k8s_ctl clear-log
testing "unchanged node: one GET, no PATCH" "apply n1 $W/d1.json --enable-taints; k8s_ctl count PATCH '^/api/v1/nodes/n1'" \
	"changed 0 requests 1\nrc 0\n0\n"
# the kubelet copies capacity to allocatable; a label someone else set
k8s_ctl get $N | python3 -c '
import json, sys
o = json.load(sys.stdin)
o["status"]["allocatable"].update({"feature.node.kubernetes.io/gpu": "2", "feature.node.kubernetes.io/huge": "1k"})
o["status"]["capacity"]["feature.node.kubernetes.io/huge"] = "1k"
o["metadata"]["labels"]["example.com/theirs"] = "x"
json.dump(o, sys.stdout)' | k8s_ctl put $N - >/dev/null
k8s_ctl clear-log
testing "quantities compared by value, foreign labels ignored: no PATCH" \
	"apply n1 $W/d1.json --enable-taints; k8s_ctl count PATCH '^/api/v1/nodes/n1'" "changed 0 requests 1\nrc 0\n0\n"

testing "stale label and resource removed (allocatable too), foreign ones kept" \
	"apply n1 $W/d2.json --enable-taints; show | grep -v ^taints" \
"changed 1 requests 3\nrc 0
labels {\"example.com/gpu\":\"yes\",\"example.com/theirs\":\"x\",\"kubernetes.io/hostname\":\"n1\",\"$NR/nfd-record\":\"R\"}
annotations {\"$FNK/note\":\"hi\",\"$NFD/extended-resources\":\"huge\",\"$NFD/feature-annotations\":\"note\",\"$NFD/feature-labels\":\"example.com/gpu\",\"$NFD/taints\":\"$FNK/special=yes:NoSchedule\"}
capacity {\"cpu\":\"4\",\"$FNK/huge\":\"1k\"}
allocatable {\"cpu\":\"4\",\"$FNK/huge\":\"1k\"}\n"

# (upstream removes NFD's taints when they are turned off; we never touch taints then)
testing "taints turned off: nothing touched, NFD's taint and its annotation stay" \
	"apply n1 $W/d2.json; show | grep -E '^taints'; k8s_ctl get $N | python3 -c 'import json, sys; print(sum(k == sys.argv[1] for k in json.load(sys.stdin)[\"metadata\"].get(\"annotations\", {})))' $NFD/taints" \
	"changed 0 requests 1\nrc 0\ntaints [{\"effect\":\"NoSchedule\",\"key\":\"node-role.kubernetes.io/control-plane\"},{\"effect\":\"NoSchedule\",\"key\":\"$FNK/special\",\"value\":\"yes\"}]\n1\n"
sed 's/"taints":.*/"taints":[]}/' "$W/d2.json" >"$W/d2-notaints.json"
testing "taints on again, none wanted: NFD's own taint goes (the record vouches), the foreign one stays" \
	"apply n1 $W/d2-notaints.json --enable-taints; show | grep -E '^taints'; k8s_ctl get $N | grep -c $NFD/taints" \
	"changed 1 requests 2\nrc 0\ntaints [{\"effect\":\"NoSchedule\",\"key\":\"node-role.kubernetes.io/control-plane\"}]\n0\n"

k8s_ctl clear-log
k8s_ctl fault --method PATCH --path "^$N\$" --count 1 --status 409 --reason Conflict >/dev/null
testing "409 once: read again and applied" \
	"apply n1 $W/d1.json --enable-taints; k8s_ctl count GET '^$N\$'; k8s_ctl count PATCH '^$N\$'; show | grep -c $FNK/special" \
	"changed 1 requests 5\nrc 0\n2\n2\n2\n"
k8s_ctl clear-faults

# a taint change between our GET and our PATCH: the resourceVersion test fails (422)
k8s_ctl clear-log
k8s_ctl fault --method PATCH --path "^$N\$" --count 1 --status 422 --reason Invalid \
	--message 'testing value /metadata/resourceVersion failed: test failed' >/dev/null
testing "422 once: read again and applied" "apply n1 $W/d2.json; k8s_ctl count GET '^$N\$'; k8s_ctl count PATCH '^$N\$'" \
	"changed 1 requests 5\nrc 0\n2\n2\n"
k8s_ctl clear-faults

k8s_ctl fault --method PATCH --path "^$N/status\$" --count 1 --status 403 --reason Forbidden --message 'nodes/status is forbidden' >/dev/null
testing "403: an error naming the node and the API's message" \
	"apply n1 $W/d1.json --enable-taints; tail -n 1 $W/kt.log" \
	"changed 0 requests 2\nrc 1\nkubetool: node n1: PATCH /api/v1/nodes/n1/status: HTTP 403 Forbidden: nodes/status is forbidden\n"
k8s_ctl clear-faults
k8s_ctl fault --method PATCH --path "^$N\$" --count -1 --status 409 --reason Conflict >/dev/null
testing "always 409: gives up after 3 rounds, naming the node" \
	"apply n1 $W/d1.json --enable-taints; tail -n 1 $W/kt.log" \
	"changed 1 requests 7\nrc 1\nkubetool: node n1: changed under us 3 times: HTTP 409 Conflict: injected fault 409\n"
k8s_ctl clear-faults
# someone adds a taint between our GET and our PATCH (the server holds our
# PATCH until the competing write is in, then lets it go: no time window):
# the resourceVersion test fails (422), the node is read again, both taints
# stay (NFD's taint taken off first, so that our PATCH changes taints)
k8s_ctl get $N | python3 -c '
import json, sys
o = json.load(sys.stdin)
o["spec"]["taints"] = [t for t in o["spec"]["taints"] if t["key"] != "feature.node.kubernetes.io/special"]
json.dump(o, sys.stdout)' | k8s_ctl put $N - >/dev/null
k8s_ctl get $N | python3 -c '
import json, sys
o = json.load(sys.stdin)
o["spec"]["taints"].append({"key": "example.com/late", "effect": "NoExecute"})
json.dump(o, sys.stdout)' >"$W/late.json"
k8s_ctl clear-log
hold=$(k8s_ctl fault --method PATCH --path "^$N\$" --count 1 --hold)
apply n1 "$W/d1.json" --enable-taints >"$W/race.out" &
race=$!
k8s_ctl wait-held "$hold" || fail "the PATCH is held"
k8s_ctl put $N - <"$W/late.json" >/dev/null
k8s_ctl release "$hold" >/dev/null
wait $race
k8s_ctl clear-faults
testing "a concurrent taint change: 422 on the resourceVersion test, read again, both kept" \
	"cat $W/race.out; k8s_ctl count PATCH '^$N\$' --status 422; show | grep ^taints" \
	"changed 1 requests 4\nrc 0\n1\ntaints [{\"effect\":\"NoSchedule\",\"key\":\"node-role.kubernetes.io/control-plane\"},{\"effect\":\"NoExecute\",\"key\":\"example.com/late\"},{\"effect\":\"NoSchedule\",\"key\":\"$FNK/special\",\"value\":\"yes\"}]\n"
testing "a missing node" "apply nosuch $W/d1.json; tail -n 1 $W/kt.log" \
	"changed 0 requests 1\nrc 3\nkubetool: nosuch: no such node\n"

# an upstream master's second instance next to us; then prune
apply n1 "$W/d1.json" --enable-taints >/dev/null
testing "instance: its own bookkeeping, the default instance's kept" \
	"apply n1 $W/d2.json --instance blue --enable-taints; k8s_ctl get $N | grep -o '\"[a-z.]*nfd.node.kubernetes.io/[a-z-]*\"' | LC_ALL=C sort | tr '\n' ' '" \
	"changed 1 requests 2\nrc 0\n\"blue.$NFD/extended-resources\" \"blue.$NFD/feature-annotations\" \"blue.$NFD/feature-labels\" \"$NFD/extended-resources\" \"$NFD/feature-annotations\" \"$NFD/feature-labels\" \"$NFD/taints\" "
testing "prune: everything NFD owns goes (its taint by the record), the rest stays" "apply n1 --prune --enable-taints; show" \
"changed 1 requests 3\nrc 0
labels {\"blue.$NR/nfd-record\":\"R\",\"example.com/theirs\":\"x\",\"kubernetes.io/hostname\":\"n1\"}
annotations {\"blue.$NFD/extended-resources\":\"huge\",\"blue.$NFD/feature-annotations\":\"note\",\"blue.$NFD/feature-labels\":\"example.com/gpu\"}
capacity {\"cpu\":\"4\"}
allocatable {\"cpu\":\"4\"}
taints [{\"effect\":\"NoSchedule\",\"key\":\"node-role.kubernetes.io/control-plane\"},{\"effect\":\"NoExecute\",\"key\":\"example.com/late\"}]\n"
testing "prune again: nothing to do" "apply n1 --prune" "changed 0 requests 1\nrc 0\n"

done_testing
