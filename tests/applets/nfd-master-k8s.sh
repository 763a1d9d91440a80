# nfd-master against the test API server: merge, rules, namespace policy,
# bookkeeping, extended resources, taints, restart safety, interop with an
# upstream-labelled node, GC, --prune, leader election; nfd-worker
# --standalone.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/applets/nfd-master.lib"
master_suite_start
for ns in $NSP vendor; do
	printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $ns | k8s_ctl put /api/v1/namespaces/$ns - >/dev/null
done

# The cluster: node1 with two NodeFeatures (ours and a vendor's), node2 with
# one, labels nobody at NFD set.
put_node node1 '{"kubernetes.io/hostname":"node1","team":"blue"}'
put_node node2 '{"kubernetes.io/hostname":"node2"}'
put_nf $NSP node1 node1 '{"features":{"flags":{"cpu.cpuid":{"elements":{"AVX2":{}}}},"attributes":{"kernel.version":{"elements":{"major":"6","minor":"1","full":"6.1.0-13-amd64"}},"cpu.model":{"elements":{"vendor_id":"Intel"}}},"instances":{"pci.device":{"elements":[{"attributes":{"class":"0300","vendor":"10de"}}]}}},
 "labels":{"feature.node.kubernetes.io/cpu-cpuid.AVX2":"true","shared":"ours","dyn":"@kernel.version.major",
  "kubernetes.io/evil":"x","sub.kubernetes.io/evil":"x","x.denied.org/l":"no","ok.denied.org/l":"yes","k8s.io/fine":"yes",
  "profile.node.kubernetes.io/p":"1"}}'
put_nf vendor node1-extra node1 '{"features":{"attributes":{"kernel.version":{"elements":{"minor":"9"}}},"instances":{"pci.device":{"elements":[{"attributes":{"class":"0200","vendor":"8086"}}]}}},
 "labels":{"shared":"vendor","vendor.example.com/c":"x","vendor.example.com/cpu":"@cpu.model.vendor_id"}}'
put_nf $NSP node2 node2 '{"features":{"attributes":{"kernel.version":{"elements":{"major":"5","minor":"4"}}}},"labels":{"feature.node.kubernetes.io/n2":"true"}}'
# a NodeFeature of a node that does not exist: garbage
put_nf $NSP ghost ghost '{"features":{},"labels":{"g":"1"}}'
put_rule rules-a '[{"name":"kernel","labels":{"kernel-major-ge-6":"true"},"vars":{"newkernel":"true"},
  "matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Ge","value":["6"]}}}]},
 {"name":"er","extendedResources":{"vendor.example.com/widgets":"4"},"annotations":{"vendor.example.com/note":"gpu"},
  "taints":[{"key":"vendor.example.com/gpu","value":"true","effect":"NoSchedule"}],
  "matchFeatures":[{"feature":"pci.device","matchExpressions":{"vendor":{"op":"In","value":["10de"]}}}]}]'
# a later NodeFeatureRule refers back to the first one's vars
put_rule rules-b '[{"name":"backref","labels":{"backref":"yes"},
  "matchFeatures":[{"feature":"rule.matched","matchExpressions":{"newkernel":{"op":"IsTrue"}}}]}]'

# m1 takes its namespace policy from nfd-master.conf (keys case-insensitive, as upstream)
cat >"$W/m1.conf" <<'YAML'
denyLabelNs: ["*.denied.org"]
ExtraLabelNs: [ok.denied.org]
klog:
  v: 1
YAML
start_master m1 --config "$W/m1.conf"
check "master starts, lists everything and is ready" wait_for 20 grep -q 'everything listed' "$W/m1.log"
check "node1 labelled" wait_for 15 has node1 "label feature.node.kubernetes.io/backref=yes"
P1=$(port_of m1)
# (vendor.example.com/cpu: an "@" value of one object looked up in another's features)
testing "node1: merged in order (own namespace first), rules, dynamic values, namespace policy" "nfd_state node1" \
"annotation nfd.node.kubernetes.io/extended-resources=vendor.example.com/widgets
annotation nfd.node.kubernetes.io/feature-annotations=vendor.example.com/note
annotation nfd.node.kubernetes.io/feature-labels=backref,cpu-cpuid.AVX2,dyn,k8s.io/fine,kernel-major-ge-6,ok.denied.org/l,profile.node.kubernetes.io/p,shared,vendor.example.com/c,vendor.example.com/cpu
annotation vendor.example.com/note=gpu
capacity vendor.example.com/widgets=4
label feature.node.kubernetes.io/backref=yes
label feature.node.kubernetes.io/cpu-cpuid.AVX2=true
label feature.node.kubernetes.io/dyn=6
label feature.node.kubernetes.io/kernel-major-ge-6=true
label feature.node.kubernetes.io/shared=vendor
label k8s.io/fine=yes
label kubernetes.io/hostname=node1
label ok.denied.org/l=yes
label profile.node.kubernetes.io/p=1
label team=blue
label vendor.example.com/c=x
label vendor.example.com/cpu=Intel"
testing "node2: only what matches it" "nfd_state node2" \
"annotation nfd.node.kubernetes.io/feature-labels=n2
label feature.node.kubernetes.io/n2=true
label kubernetes.io/hostname=node2"
# as upstream: capacity is added, allocatable is the kubelet's to fill in
testing "extended resource on status: capacity" \
	"k8s_ctl get /api/v1/nodes/node1 | python3 -c 'import json,sys; s=json.load(sys.stdin)[\"status\"]; print(s[\"capacity\"].get(\"vendor.example.com/widgets\"), s[\"allocatable\"].get(\"vendor.example.com/widgets\"), s[\"capacity\"][\"cpu\"])'" \
	"4 None 4\n"
# three per run of node1's rules (kubernetes.io, sub.kubernetes.io, *.denied.org)
testing "denied namespaces rejected and counted" \
	"curl -s http://127.0.0.1:$P1/metrics | awk '/^nfd_master_node_labels_rejected_total /{print (\$2 > 0 && \$2 % 3 == 0)}'" "1\n"
testing "/metrics has the upstream names" \
	"curl -s http://127.0.0.1:$P1/metrics | grep -oE '^(nfd_master_build_info|nfd_master_node_updates_total|nfd_master_node_update_failures_total|nfd_master_nodefeaturerule_processing_duration_seconds_count|nfd_master_nodefeaturerule_processing_errors_total)' | sort -u | wc -l" "5\n"
testing "/healthz and /readyz" \
	"curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:$P1/healthz; curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$P1/readyz" "200 200"
check "taints only with --enable-taints" hasnt node1 "taint "
check "GC: the NodeFeature of a node that does not exist is deleted" \
	wait_for 5 sh -c "! $K8S_CTL get $NFAPI/namespaces/$NSP/nodefeatures/ghost"
testing "GC: the others stay" "k8s_ctl get $NFAPI/nodefeatures | python3 -c 'import json,sys; print(sorted(i[\"metadata\"][\"name\"] for i in json.load(sys.stdin)[\"items\"]))'" \
	"['node1', 'node1-extra', 'node2']\n"

# Changes: a label leaves the features -> removed; a node without change gets
# no PATCH; a NodeFeatureRule change reaches every node.
k8s_ctl clear-log
put_nf vendor node1-extra node1 '{"features":{"attributes":{"kernel.version":{"elements":{"minor":"9"}}},"instances":{"pci.device":{"elements":[{"attributes":{"class":"0200","vendor":"8086"}}]}}},"labels":{"shared":"vendor"}}'
check "a label gone from the features is removed" wait_for 10 hasnt node1 "vendor.example.com/c="
check "... and from the bookkeeping annotation" has node1 \
	"annotation nfd.node.kubernetes.io/feature-labels=backref,cpu-cpuid.AVX2,dyn,k8s.io/fine,kernel-major-ge-6,ok.denied.org/l,profile.node.kubernetes.io/p,shared"
check "labels NFD never set are untouched" has node1 "label team=blue"
testing "node2 was not patched" "k8s_ctl count patch '^/api/v1/nodes/node2'" "0\n"
k8s_ctl clear-log
# metadata-only change (not spec, owner references or pod uid): nothing to do
k8s_ctl get $NFAPI/namespaces/$NSP/nodefeatures/node2 | python3 -c 'import json,sys; o=json.load(sys.stdin); o["metadata"].setdefault("annotations",{})["x"]="y"; print(json.dumps(o))' |
	k8s_ctl put $NFAPI/namespaces/$NSP/nodefeatures/node2 - >/dev/null
# a later change to node1 (a probe label, then gone again): once both are on
# node1, the master has handled node2's change before them
NF1X='{"features":{"attributes":{"kernel.version":{"elements":{"minor":"9"}}},"instances":{"pci.device":{"elements":[{"attributes":{"class":"0200","vendor":"8086"}}]}}},"labels":{"shared":"vendor"}}'
put_nf vendor node1-extra node1 "${NF1X%\}\}}"',"probe":"1"}}'
wait_for 20 has node1 "label feature.node.kubernetes.io/probe=1" || fail "the probe label reaches node1"
put_nf vendor node1-extra node1 "$NF1X"
wait_for 20 hasnt node1 "feature.node.kubernetes.io/probe" || fail "the probe label leaves node1"
testing "an object change that changes nothing: no request for the node" "k8s_ctl count '*' '^/api/v1/nodes/node2'" "0\n"
put_rule rules-a '[{"name":"kernel","labels":{"kernel-major-ge-5":"true"},"vars":{"newkernel":"true"},
  "matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Ge","value":["5"]}}}]},
 {"name":"er","extendedResources":{"vendor.example.com/widgets":"4"},"annotations":{"vendor.example.com/note":"gpu"},
  "taints":[{"key":"vendor.example.com/gpu","value":"true","effect":"NoSchedule"}],
  "matchFeatures":[{"feature":"pci.device","matchExpressions":{"vendor":{"op":"In","value":["10de"]}}}]}]'
check "NodeFeatureRule changed: every node follows" wait_for 10 has node2 "label feature.node.kubernetes.io/kernel-major-ge-5=true"
check "... node2 also gets the back-reference" wait_for 5 has node2 "label feature.node.kubernetes.io/backref=yes"
check "... the old rule label is gone from node1" hasnt node1 "kernel-major-ge-6"
# a new rule on a feature the master did not keep (cpu.cpuid): it relists
put_rule rules-c '[{"name":"avx","labels":{"avx2-rule":"true"},"matchFeatures":[{"feature":"cpu.cpuid","matchExpressions":{"AVX2":{"op":"Exists"}}}]},
  {"name":"broken","labels":{"never":"true"},"matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Gt","value":["x"]}}}]},
  {"name":"after-broken","labels":{"after-broken":"true"}}]'
check "a rule on a feature not kept so far works (relist)" wait_for 10 has node1 "label feature.node.kubernetes.io/avx2-rule=true"
check "a broken rule is skipped, the next one applies" has node1 "label feature.node.kubernetes.io/after-broken=true"
check "a broken rule is logged" grep -q 'rules-c.*broken' "$W/m1.log"
k8s_ctl delete $NFAPI/nodefeaturerules/rules-c >/dev/null
check "NodeFeatureRule deleted: its labels go" wait_for 10 hasnt node1 "avx2-rule"
check "... from every node" wait_for 5 hasnt node2 "after-broken"

# One node that cannot be updated (403 on every PATCH) holds up nobody.
k8s_ctl fault --method PATCH --path '^/api/v1/nodes/node2$' --status 403 --count -1 >/dev/null
put_rule rules-d '[{"name":"both","labels":{"both":"1"}}]'
check "node1 updated while node2 fails" wait_for 10 has node1 "label feature.node.kubernetes.io/both=1"
# node2 has failed a few times and waits for its retry (50 ms doubling: 1.6 s after the 6th)
wait_for 30 sh -c "[ \"\$($K8S_CTL count PATCH '^/api/v1/nodes/node2\$' --status 403)\" -ge 6 ]" ||
	fail "node2's PATCH fails again and again"
put_rule rules-d '[{"name":"both","labels":{"both":"2"}}]'
check "... and again, promptly, after node2 failed for a while" wait_for 4 has node1 "label feature.node.kubernetes.io/both=2"
check "... the failures are logged" grep -q 'updating node node2 failed' "$W/m1.log"
k8s_ctl clear-faults >/dev/null
k8s_ctl delete $NFAPI/nodefeaturerules/rules-d >/dev/null
check "node2 catches up once it can be written" wait_for 20 hasnt node2 "feature.node.kubernetes.io/both"

# Interop: a node labelled by an upstream master, NodeFeature in the pre-v0.15
# format (unprefixed labels): taken over with one PATCH, which adds the
# record label and removes the label upstream listed and nobody wants now
# (the hints pass: feature.node.kubernetes.io is a node's to remove anyway).
k8s_ctl clear-log
put_nf $NSP node3 node3 '{"features":{"attributes":{"kernel.version":{"elements":{"major":"5"}}}},"labels":{"legacy":"1","after":"x"}}'
put_node node3 '{"feature.node.kubernetes.io/legacy":"1","feature.node.kubernetes.io/kernel-major-ge-5":"true","feature.node.kubernetes.io/backref":"yes","feature.node.kubernetes.io/after":"x","feature.node.kubernetes.io/gone":"1"}' \
	'{"nfd.node.kubernetes.io/feature-labels":"after,backref,gone,kernel-major-ge-5,legacy"}'
check "upstream-labelled node taken over: the record label added" wait_for 10 has_record node3
check "... upstream's label nobody wants any more removed" hasnt node3 "feature.node.kubernetes.io/gone"
testing "... in one PATCH" "k8s_ctl count patch '^/api/v1/nodes/node3'" "1\n"
testing "... the other labels as they were" "nfd_state node3 | grep -c '^label feature.node.kubernetes.io/'" "4\n"

# Issue 16: a node (its own kubelet credentials) writes into the bookkeeping
# annotations an admin's taint, a label in node-restriction.kubernetes.io
# (which the node cannot change itself) and kubernetes.io/hostname, then
# makes the master reconcile (a change to its NodeFeature). Taints are
# disabled here: the master removes none of them.
# admin_sets: the admin's taint and label on node1 (kept if there)
admin_sets() {
	k8s_ctl get /api/v1/nodes/node1 | python3 -c '
import json, sys
n = json.load(sys.stdin)
n["metadata"]["labels"]["node-restriction.kubernetes.io/tenant"] = "blue"
q = {"key": "quarantine.example.com/compromised", "value": "true", "effect": "NoExecute"}
t = n.setdefault("spec", {}).setdefault("taints", [])
if q not in t:
    t.insert(0, q)
json.dump(n, sys.stdout)' | k8s_ctl put /api/v1/nodes/node1 - >/dev/null
}
admin_sets
check "m1 wrote its record on node1" wait_for 10 has_record node1
testing "node1 (the node) may edit its annotations" \
	"as_node node1 PATCH /api/v1/nodes/node1 application/merge-patch+json '{\"metadata\":{\"annotations\":{\"nfd.node.kubernetes.io/taints\":\"quarantine.example.com/compromised=true:NoExecute\",\"nfd.node.kubernetes.io/feature-labels\":\"node-restriction.kubernetes.io/tenant,kubernetes.io/hostname\"}}}'" "200\n"
testing "... not its taints or node-restriction.kubernetes.io labels itself (NodeRestriction)" \
	"as_node node1 PATCH /api/v1/nodes/node1 application/merge-patch+json '{\"spec\":{\"taints\":null}}'; as_node node1 PATCH /api/v1/nodes/node1 application/merge-patch+json '{\"metadata\":{\"labels\":{\"node-restriction.kubernetes.io/tenant\":null}}}'" "403\n403\n"
testing "... and its NodeFeature" "node_nf 'o[\"spec\"][\"labels\"][\"forged\"] = \"1\"'" "200\n"
check "the master reconciled node1" wait_for 10 has node1 "label feature.node.kubernetes.io/forged=1"
check "a forged taints annotation removes no taint (taints disabled)" \
	has node1 "taint quarantine.example.com/compromised=true:NoExecute"
check "a forged feature-labels removes no node-restriction.kubernetes.io label" \
	has node1 "label node-restriction.kubernetes.io/tenant=blue"
check "... nor kubernetes.io/hostname" has node1 "label kubernetes.io/hostname=node1"
check "... the forged annotation replaced by the master's own list" \
	has node1 "annotation nfd.node.kubernetes.io/feature-labels=backref,cpu-cpuid.AVX2,dyn,forged,k8s.io/fine,kernel-major-ge-5,ok.denied.org/l,profile.node.kubernetes.io/p,shared"
check "... and a new record" has_record node1
# the record path: a label the master wrote and no longer wants goes, even
# one no hint could remove (k8s.io: a kubelet may not touch it)
testing "node1 drops two labels from its NodeFeature" \
	"node_nf 'del o[\"spec\"][\"labels\"][\"k8s.io/fine\"]; del o[\"spec\"][\"labels\"][\"forged\"]'" "200\n"
check "the record vouches: a label the master wrote and no longer wants is removed" \
	wait_for 10 hasnt node1 "label k8s.io/fine="
check "... the forged one too" hasnt node1 "feature.node.kubernetes.io/forged"
admin_intact() {
	has node1 "taint quarantine.example.com/compromised=true:NoExecute" &&
		has node1 "label node-restriction.kubernetes.io/tenant=blue" && has node1 "label kubernetes.io/hostname=node1"
}
check "... the admin's taint and labels still there" admin_intact
stop_master m1
testing "SIGTERM: exit 0" "echo $?" "0\n"

# Taints with the flag, through the restart.
start_master m2 --enable-taints --deny-label-ns '*.denied.org'
check "taints applied with --enable-taints" wait_for 20 has node1 "taint vendor.example.com/gpu=true:NoSchedule"
check "... tracked in nfd.node.kubernetes.io/taints" has node1 "annotation nfd.node.kubernetes.io/taints=vendor.example.com/gpu=true:NoSchedule"
# (upstream removes it; we never remove a key in a namespace we refuse to write)
check "... a label --extra-label-ns allowed is kept without it" has node1 "label ok.denied.org/l=yes"
check "... but no longer tracked" has node1 \
	"annotation nfd.node.kubernetes.io/feature-labels=backref,cpu-cpuid.AVX2,dyn,kernel-major-ge-5,profile.node.kubernetes.io/p,shared"
check "... the admin's taint and labels still there" admin_intact
# Issue 16 with taints enabled: the node names the admin's taint in the
# taints annotation; the master removes it no more than with taints disabled.
admin_sets
testing "node1 forges the taints annotation" \
	"as_node node1 PATCH /api/v1/nodes/node1 application/merge-patch+json '{\"metadata\":{\"annotations\":{\"nfd.node.kubernetes.io/taints\":\"quarantine.example.com/compromised=true:NoExecute,vendor.example.com/gpu=true:NoSchedule\"}}}'" "200\n"
testing "... and changes its NodeFeature" "node_nf 'o[\"spec\"][\"labels\"][\"forged2\"] = \"1\"'" "200\n"
check "the master reconciled node1" wait_for 10 has node1 "label feature.node.kubernetes.io/forged2=1"
check "a forged taints annotation removes no taint (taints enabled)" \
	has node1 "taint quarantine.example.com/compromised=true:NoExecute"
check "... NFD's own taint stays" has node1 "taint vendor.example.com/gpu=true:NoSchedule"
check "... the annotation is the master's own again" has node1 "annotation nfd.node.kubernetes.io/taints=vendor.example.com/gpu=true:NoSchedule"
stop_master m2 >/dev/null

# Restart safety: the NodeFeature list is slow and fails at first. Until it is
# complete nothing is written; then no label disappears.
before=$(nfd_state node1)
k8s_ctl clear-log
k8s_ctl fault --method GET --path "^$NFAPI/nodefeatures\$" --no-watch --count 2 --status 503 >/dev/null
k8s_ctl fault --method GET --path "^$NFAPI/nodefeatures\$" --no-watch --count 1 --delay 2500 >/dev/null
start_master m3 --enable-taints --deny-label-ns '*.denied.org'
# node1 looked at again and again until the master has listed everything
ok=1
end=$((SECONDS + 60))
until grep -q 'everything listed' "$W/m3.log" || [ $SECONDS -gt $end ]; do
	[ "$(nfd_state node1)" = "$before" ] || { ok=0; break; }
	sleep 0.2
done
check "while the list is slow: node labels never change" [ $ok = 1 ]
check "master ready after the slow list" wait_for 20 grep -q 'everything listed' "$W/m3.log"
# the first pass read node1, node2 and node3 (a node's update is one
# synchronous read and write); then a probe node, labelled after them
for n in node1 node2 node3; do
	wait_for 20 sh -c "[ \"\$($K8S_CTL count get '^/api/v1/nodes/$n\$' --status 200)\" -ge 1 ]" ||
		fail "the restarted master reads $n"
done
put_nf $NSP probe probe '{"features":{},"labels":{"probe":"1"}}'
put_node probe
wait_for 20 has probe "label feature.node.kubernetes.io/probe=1" || fail "the restarted master labels a probe node"
testing "no write before the first complete list, and none after: nothing changed" \
	"k8s_ctl log --json | python3 -c '
import json, sys
items = json.load(sys.stdin)
items = items[\"items\"] if isinstance(items, dict) else items
done = [e[\"seq\"] for e in items if e[\"path\"] == \"$NFAPI/nodefeatures\" and e[\"status\"] == 200 and not e[\"watch\"]]
writes = [e[\"seq\"] for e in items if e[\"method\"] in (\"PATCH\", \"PUT\", \"DELETE\") and e[\"path\"].startswith(\"/api/v1/nodes\") and not e[\"path\"].startswith(\"/api/v1/nodes/probe\")]
print(len(done) >= 1, [w for w in writes if not done or w < done[0]], len(writes))'" "True [] 0\n"
testing "labels exactly as before the restart" "nfd_state node1" "$before\n"
stop_master m3 >/dev/null
k8s_ctl delete $NFAPI/namespaces/$NSP/nodefeatures/probe >/dev/null
k8s_ctl delete /api/v1/nodes/probe >/dev/null

# GC on node deletion: its NodeFeatures go, in every namespace.
start_master m4 --gc-interval 2s
check "m4 ready" wait_for 20 grep -q 'everything listed' "$W/m4.log"
# The Node list and watch fail; a node appears meanwhile. GC runs every 2 s
# but must not take it for deleted.
k8s_ctl fault --method GET --path '^/api/v1/nodes$' --status 503 --count -1 >/dev/null
k8s_ctl drop-watches >/dev/null
put_nf $NSP late late '{"features":{},"labels":{"late":"1"}}'
put_node late
# the Node list failing again and again (the window is what is tested:
# GC's 2 s timer fires meanwhile)
wait_for 60 sh -c "[ \"\$($K8S_CTL count list '^/api/v1/nodes\$' --status 503)\" -ge 4 ]" ||
	fail "the master lists the Nodes again and again"
sleep 2 # a GC period with the failing list
check "GC while Nodes cannot be listed: a new node's NodeFeature stays" k8s_ctl get $NFAPI/namespaces/$NSP/nodefeatures/late
k8s_ctl clear-faults >/dev/null
# (the Node informer retries after its backoff: up to 30 s + 25% once the list failed often)
check "... and the node is labelled once the list works" wait_for 90 has late "label feature.node.kubernetes.io/late=1"
k8s_ctl delete /api/v1/nodes/node1 >/dev/null
check "node deleted: its NodeFeatures are deleted" wait_for 10 sh -c \
	"! $K8S_CTL get $NFAPI/namespaces/$NSP/nodefeatures/node1 && ! $K8S_CTL get $NFAPI/namespaces/vendor/nodefeatures/node1-extra"
testing "... the other nodes' stay" "k8s_ctl get $NFAPI/nodefeatures | python3 -c 'import json,sys; print(sorted(i[\"metadata\"][\"name\"] for i in json.load(sys.stdin)[\"items\"]))'" \
	"['late', 'node2', 'node3']\n"
stop_master m4 >/dev/null

# --prune: nothing of NFD's left, nothing else changed.
nonnfd() {
	k8s_ctl get /api/v1/nodes/$1 | python3 -c '
import json, sys
n = json.load(sys.stdin); md = n["metadata"]
print(json.dumps([md.get("labels"), md.get("annotations"), n["status"], n.get("spec")], sort_keys=True))'
}
put_node node4 '{"keep":"me","feature.node.kubernetes.io/untracked":"stays"}' '{"keep":"me"}'
before4=$(nonnfd node4)
# node5 as NFD left it: a label, an annotation, an extended resource and a
# taint, all tracked, next to a foreign taint and a foreign capacity
k8s_ctl put /api/v1/nodes/node5 - >/dev/null <<'JSON'
{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node5",
  "labels": {"feature.node.kubernetes.io/x": "1", "other": "o"},
  "annotations": {"nfd.node.kubernetes.io/feature-labels": "x",
    "nfd.node.kubernetes.io/feature-annotations": "vendor.example.com/note", "vendor.example.com/note": "n",
    "nfd.node.kubernetes.io/extended-resources": "vendor.example.com/widgets",
    "nfd.node.kubernetes.io/taints": "vendor.example.com/gpu=true:NoSchedule"}},
 "spec": {"taints": [{"key": "vendor.example.com/gpu", "value": "true", "effect": "NoSchedule"},
                     {"key": "other.example.com/t", "effect": "NoExecute"}]},
 "status": {"capacity": {"cpu": "2", "vendor.example.com/widgets": "4", "other.example.com/r": "1"},
            "allocatable": {"cpu": "2", "vendor.example.com/widgets": "4", "other.example.com/r": "1"}}}
JSON
$FB nfd-master --kubeconfig $S/kubeconfig-admin --config $W/none.conf --prune >$W/prune.log 2>&1
testing "--prune exits 0" "echo $?" "0\n"
testing "--prune: no NFD label, annotation, extended resource or taint left" \
	"for n in node2 node3; do nfd_state \$n | grep -E 'feature.node.kubernetes.io/|nfd.node.kubernetes.io|vendor.example.com'; done; echo end" "end\n"
testing "--prune: everything else as it was" "nonnfd node4" "$before4\n"
testing "--prune: non-NFD labels of pruned nodes stay" "nfd_state node2" "label kubernetes.io/hostname=node2\n"
# (node5 carries no record: the annotations are hints, which never remove a
# taint; and without --enable-taints taints are not touched at all)
testing "--prune: the tracked label, annotation and extended resource go; the foreign ones and the taint stay" \
	"nfd_state node5; k8s_ctl get /api/v1/nodes/node5 | python3 -c 'import json,sys; s=json.load(sys.stdin)[\"status\"]; print(sorted(s[\"capacity\"]), sorted(s[\"allocatable\"]))'" \
"annotation nfd.node.kubernetes.io/taints=vendor.example.com/gpu=true:NoSchedule
capacity other.example.com/r=1
label other=o
taint other.example.com/t=:NoExecute
taint vendor.example.com/gpu=true:NoSchedule
['cpu', 'other.example.com/r'] ['cpu', 'other.example.com/r']"

# Leader election: two masters with their own users; one writes.
for u in ma mb; do
	k8s_ctl rotate-token $u >/dev/null
	printf '[{"verbs":["*"],"resources":["*"]}]' | k8s_ctl set-rules $u - >/dev/null
	sed "s|^\( *\)token: .*|\1tokenFile: $S/tokens/$u|" $S/kubeconfig-admin >$W/kc-$u
done
grep -q tokenFile $W/kc-ma || fail "kubeconfig for the leader-election users"
put_nf $NSP node2 node2 '{"features":{},"labels":{"le":"1"}}'
LE='{"leaderElection":{"leaseDuration":"3s","renewDeadline":"2s","retryPeriod":"500ms"}}'
MCONF=$W/kc-ma start_master la --enable-leader-election --options "$LE"
check "first master leads" wait_for 10 sh -c "$K8S_CTL get /apis/coordination.k8s.io/v1/namespaces/$NSP/leases/nfd-master.nfd.kubernetes.io | grep -q holderIdentity"
check "... and labels" wait_for 10 has node2 "label feature.node.kubernetes.io/le=1"
MCONF=$W/kc-mb start_master lb --enable-leader-election --options "$LE"
check "second master lists" wait_for 20 grep -q 'everything listed' "$W/lb.log"
k8s_ctl clear-log
put_nf $NSP node2 node2 '{"features":{},"labels":{"le":"2"}}'
check "a change is written" wait_for 10 has node2 "label feature.node.kubernetes.io/le=2"
testing "... by the leader only" "k8s_ctl count patch '^/api/v1/nodes/' --user mb" "0\n"
kill -9 $pid_la
seq=$(k8s_seq)
put_nf $NSP node2 node2 '{"features":{},"labels":{"le":"3"}}'
check "leader killed: the other takes over and writes" wait_for 30 has node2 "label feature.node.kubernetes.io/le=3"
# by its own retries: a 3 s lease is 6 retry periods of 500 ms; it took the
# lease on the first one past that (a wall-clock bound grows on a slow machine)
testing "... once the lease has expired: at most 6 + 2 retries" \
	"n=\$(k8s_waited $seq '/leases/nfd-master.nfd.kubernetes.io\$' mb); [ \"\$n\" != none ] && [ \"\$n\" -le 8 ] && echo ok || echo \"\$n GETs\"" "ok\n"
# the new leader loses the lease (its renewals fail): it stops writing
k8s_ctl fault --path '/leases/' --user mb --count -1 --status 503 >/dev/null
wait_for 20 grep -qi 'lost' "$W/lb.log" || fail "lb says it lost the lease"
k8s_ctl clear-log
put_nf $NSP node2 node2 '{"features":{},"labels":{"le":"4"}}'
# four more tries at the lease (retryPeriod 500 ms): the change had its time
wait_for 30 sh -c "[ \"\$($K8S_CTL count '*' '/leases/' --user mb)\" -ge 4 ]" || fail "lb tries the lease again"
testing "a master that lost the lease writes nothing" "k8s_ctl count patch '^/api/v1/nodes/' --user mb" "0\n"
check "... and says so" grep -qi 'lost' "$W/lb.log"
k8s_ctl clear-faults >/dev/null
check "it leads again once the lease is free and writes" wait_for 15 has node2 "label feature.node.kubernetes.io/le=4"
stop_master lb >/dev/null

# Configuration errors end the run with the file and the problem.
printf 'noPublish: [true\n' >"$W/bad.conf"
testing "bad YAML in nfd-master.conf: exit 1, names the file and line" \
	"$FB nfd-master --kubeconfig $S/kubeconfig-admin --config $W/bad.conf 2>&1 >/dev/null | grep -c 'bad.conf.*line 1'; echo \$?" "1\n0\n"
testing "... and the exit status" "$FB nfd-master --kubeconfig $S/kubeconfig-admin --config $W/bad.conf 2>/dev/null; echo \$?" "1\n"
printf 'resyncPeriod: soon\n' >"$W/bad2.conf"
testing "a value of the wrong kind: exit 1, names the key" \
	"$FB nfd-master --kubeconfig $S/kubeconfig-admin --config $W/bad2.conf 2>&1 >/dev/null | grep -c 'resyncPeriod'" "1\n"
printf 'noPublish: true\nnoSuchKey: 1\n' >"$W/warn.conf"
testing "an unknown key is a warning; --no-publish from the file writes nothing" \
	"k8s_ctl clear-log; timeout -k 10 5 $FB nfd-master --kubeconfig $S/kubeconfig-admin --config $W/warn.conf --port 0 2>&1 | grep -c 'unknown key noSuchKey'; k8s_ctl count patch '^/api/v1/nodes'" "1\n0\n"
testing "--instance must be a valid name" "$FB nfd-master --instance=bad- 2>&1; echo \$?" "nfd-master: --instance \"bad-\": must be 1-63 of [A-Za-z0-9._-], alphanumeric at both ends\n2\n"

# No NodeFeatureRule at all (a fresh install).
for r in rules-a rules-b; do k8s_ctl delete $NFAPI/nodefeaturerules/$r >/dev/null; done
start_master m6
check "no rules: the master lists and labels from NodeFeatures alone" wait_for 20 has node2 "label feature.node.kubernetes.io/le=4"
check "... and its rule labels are gone" wait_for 10 hasnt node2 "kernel-major-ge-5"
stop_master m6
testing "... SIGTERM: exit 0" "echo $?" "0\n"

# nfd-worker --standalone: labels its own node; no NodeFeature.
k8s_ctl delete $NFAPI/namespaces/$NSP/nodefeatures/node2 >/dev/null
mkdir -p "$W/fd" "$W/root"
printf 'site=lab\nrack=r1\n' >"$W/fd/labels"
SW="$FB nfd-worker --standalone --oneshot --kubeconfig $S/kubeconfig-node1 --node-name node1 --config $W/none.conf --host-prefix $W/root/ --features-dir $W/fd --feature-sources local --label-sources local"
put_node node1 '{"team":"blue"}'
testing "standalone: exit 0" "$SW 2>$W/sw.log; echo \$?" "0\n"
testing "standalone: labels and bookkeeping on its own Node" "nfd_state node1" \
"annotation nfd.node.kubernetes.io/feature-labels=rack,site
label feature.node.kubernetes.io/rack=r1
label feature.node.kubernetes.io/site=lab
label team=blue"
printf 'site=lab\n' >"$W/fd/labels"
testing "standalone: a stale label is removed" "$SW 2>>$W/sw.log; nfd_state node1" \
"annotation nfd.node.kubernetes.io/feature-labels=site
label feature.node.kubernetes.io/site=lab
label team=blue"
testing "standalone: no NodeFeature object" "k8s_ctl count create '^$NFAPI/'; k8s_ctl get $NFAPI/nodefeatures | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"items\"]))'" "0\n2\n"
# Issue 16, standalone: a forged feature-labels makes the worker (node1's own
# credentials, no record) remove only what the node could remove itself; it
# used to try the admin's node-restriction.kubernetes.io label too (403).
put_node node1 '{"team":"blue","node-restriction.kubernetes.io/tenant":"blue","feature.node.kubernetes.io/site":"lab","feature.node.kubernetes.io/stale":"1"}' \
	'{"nfd.node.kubernetes.io/feature-labels":"node-restriction.kubernetes.io/tenant,site,stale"}'
testing "standalone: a forged feature-labels: exit 0, the stale label removed, the restricted one kept" \
	"$SW 2>>$W/sw.log; echo \$?; nfd_state node1" \
"0
annotation nfd.node.kubernetes.io/feature-labels=site
label feature.node.kubernetes.io/site=lab
label node-restriction.kubernetes.io/tenant=blue
label team=blue"
done_testing
