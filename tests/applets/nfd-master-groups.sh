# NodeFeatureGroups (--feature-gates NodeFeatureGroupAPI=true) against the test
# API server, the master running as a user with exactly the rules of
# deploy/base/rbac/nfd-master: upstream's end-to-end groups
# (test/e2e/data/nodefeaturegroup-1.yaml and -2.yaml with nodefeature-1.yaml,
# the features coming from featurebox's nfd-worker with its default sources,
# which as upstream's do not include fake), then what upstream's
# nfdAPIUpdateNodeFeatureGroup does: only nodes that exist and have
# NodeFeatures, vars feeding rule.matched within one group only, status.nodes
# in the API's node order, rewritten when someone else changes it, groups of
# other namespaces left alone, the gate off touching nothing.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/applets/nfd-master.lib"
F=$FB_TOP/tests/fixtures
master_suite_start
NGAPI=$NFAPI/namespaces/$NSP/nodefeaturegroups

printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}' | k8s_ctl put /api/v1/namespaces/other - >/dev/null
deploy_user

# put_group NAMESPACE NAME RULES-JSON (spec.featureGroupRules): creates the
# group or replaces its spec (its status stays, as an update of the object
# leaves the status subresource alone)
put_group() {
	{ k8s_ctl get $NFAPI/namespaces/$1/nodefeaturegroups/$2 2>/dev/null || echo null; } | python3 -c '
import json, sys
old = json.load(sys.stdin)
o = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureGroup",
     "metadata": {"name": sys.argv[2], "namespace": sys.argv[1]}, "spec": {"featureGroupRules": json.loads(sys.argv[3])}}
if old and "status" in old:
    o["status"] = old["status"]
print(json.dumps(o))' "$1" "$2" "$3" | k8s_ctl put $NFAPI/namespaces/$1/nodefeaturegroups/$2 - >/dev/null
}
# worker NODE: NODE's worker publishes its NodeFeature once (prints its exit status)
worker() {
	KUBERNETES_NAMESPACE=$NSP $FB nfd-worker --oneshot --kubeconfig $S/kubeconfig-$1 --node-name $1 --config $W/none.conf \
		--host-prefix $W/root/ --feature-sources kernel,system --label-sources kernel 2>"$W/worker-$1.log"
	echo $?
}
# members NAME [NAMESPACE]: status.nodes as "a,b,c"; "(none)" without status.nodes
members() {
	k8s_ctl get $NFAPI/namespaces/${2:-$NSP}/nodefeaturegroups/$1 | python3 -c '
import json, sys
st = json.load(sys.stdin).get("status") or {}
print("(none)" if st.get("nodes") is None else ",".join(n["name"] for n in st["nodes"]))'
}
is_members() { [ "$(members "$1" "${3:-}")" = "$2" ]; }
# set_status NAME NODES-JSON: someone else (the admin) writes a group's status.nodes
set_status() {
	k8s_ctl get $NGAPI/$1 | python3 -c '
import json, sys
o = json.load(sys.stdin)
o["status"] = {"nodes": json.loads(sys.argv[1])}
print(json.dumps(o))' "$2" | k8s_ctl put $NGAPI/$1 - >/dev/null
}

# The cluster: three nodes; node1 and node2 run a worker (the kernel and system
# sources; upstream's e2e workers have no fake source either), node3 none.
for n in node1 node2 node3; do put_node $n; done
mkdir -p "$W/root"
cp -r "$F/nfd/rpi4/." "$W/root/" && cp -r "$F/sysfs/rpi4/." "$W/root/"
for n in node1 node2; do
	testing "the worker of $n publishes its NodeFeature" "worker $n" "0\n"
done

# upstream's e2e groups
put_group $NSP e2e-test-1 '[{"name":"e2e-attribute-test-1","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Exists"}}}]}]'
E2E2='[{"name":"e2e-matchany-test-1","vars":{"e2e-matchany-test-1":"true"},
  "matchAny":[{"matchFeatures":[{"feature":"fake.instance","matchExpressions":{"attr_1":{"op":"In","value":["nomatch"]}}}]},
              {"matchFeatures":[{"feature":"fake.instance","matchExpressions":{"attr_3":{"op":"In","value":["100"]}}}]}]},
 {"name":"e2e-template-test-1","varsTemplate":"{{ range .fake.instance }}e2e-template-test-1-{{ .name }}=found\n{{ end }}\n",
  "matchFeatures":[{"feature":"fake.instance","matchExpressions":{"attr_1":{"op":"In","value":["true"]}}}]},
 {"name":"e2e-template-test-2","varsTemplate":"{{ range .fake.attribute }}e2e-template-test-2-{{ .Name }}={{ .Value }}\n{{ end }}\n",
  "matchFeatures":[{"feature":"fake.attribute","matchExpressions":{"attr_2":{"op":"IsTrue"}},"matchName":{"op":"In","value":["attr_3"]}}]},
 {"name":"e2e-backreference-test-1",
  "matchFeatures":[{"feature":"rule.matched","matchExpressions":{"e2e-matchany-test-1:":{"op":"IsTrue"},
     "e2e-template-test-1-instance_1":{"op":"In","value":["found"]},"e2e-template-test-1-instance_2":{"op":"Exists"},
     "e2e-template-test-2-attr_2":{"op":"IsTrue"},"e2e-template-test-2-attr_3":{"op":"In","value":["10"]}}}]}]'
put_group $NSP e2e-test-2 "$E2E2"
# a group in another namespace: upstream updates only its own namespace's
put_group other elsewhere '[{"name":"all","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Exists"}}}]}]'

MCONF=$W/kc-nfdm start_master m --feature-gates NodeFeatureGroupAPI=true
check "the master starts and lists everything (groups included)" wait_for 60 grep -q 'everything listed.*NodeFeatureGroups' "$W/m.log"
check "e2e #1: every node with a worker is in status.nodes, in the API's order" wait_for 60 is_members e2e-test-1 node1,node2
testing "e2e #2: no node before nodefeature-1.yaml (no fake features)" "members e2e-test-2" "(none)\n"

# nodefeature-1.yaml for node1, as upstream's e2e creates it (named to merge last)
put_nf $NSP zzz-e2e-features-1 node1 '{"features":{"flags":{"e2e.flags":{"elements":{"flag_1":{},"flag_2":{}}}},
 "attributes":{"fake.attribute":{"elements":{"attr_2":"true"}}},
 "instances":{"fake.instance":{"elements":[{"attributes":{"name":"instance-x","attr_1":"true","attr_2":"9"}}]}}},
 "labels":{"e2e-nodefeature-test-1":"foo","feature.node.kubernetes.io/e2e-nodefeature-test-1":"obj-1","e2e-nodefeature-test-2":"obj-1","fake-fakefeature3":"overridden"}}'
check "e2e #2: with nodefeature-1.yaml, exactly that node" wait_for 60 is_members e2e-test-2 node1
k8s_ctl delete $NFAPI/namespaces/$NSP/nodefeatures/zzz-e2e-features-1 >/dev/null
check "e2e #2: the NodeFeature deleted, no node (status.nodes [])" wait_for 60 is_members e2e-test-2 ""
testing "the other namespace's group has no status" "members elsewhere other" "(none)\n"
testing "... and was never read or written" "k8s_ctl count '*' '^$NFAPI/namespaces/other/' --user nfdm" "0\n"

# vars feed rule.matched only within their group
put_group $NSP backref '[{"name":"set","vars":{"big":"yes"},"matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Exists"}}}]},
 {"name":"use","matchFeatures":[{"feature":"rule.matched","matchExpressions":{"big":{"op":"In","value":["yes"]}}}]}]'
put_group $NSP alone '[{"name":"use","matchFeatures":[{"feature":"rule.matched","matchExpressions":{"big":{"op":"In","value":["yes"]}}}]}]'
check "a rule matching the vars of an earlier rule of its group" wait_for 60 is_members backref node1,node2
testing "... but not another group's vars" "members alone" "(none)\n"

# a broken rule is skipped, the group's other rules still count
put_group $NSP broken '[{"name":"bad","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Sometimes"}}}]},
 {"name":"good","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Exists"}}}]}]'
check "a group with a broken rule: the others decide" wait_for 60 is_members broken node1,node2
check "... and the broken rule is logged by name" grep -q 'NodeFeatureGroup broken: rule "bad"' "$W/m.log"
testing "... and not counted as a NodeFeatureRule error (upstream counts none for groups)" \
	"curl -s http://127.0.0.1:$(port_of m)/metrics | awk '/^nfd_master_nodefeaturerule_processing_errors_total /{print \$2}'" "0\n"

# someone else edits status.nodes: the master puts it back
set_status e2e-test-1 '[{"name":"intruder"}]'
check "status.nodes edited by someone else is put back" wait_for 60 is_members e2e-test-1 node1,node2

# the spec changes: evaluated again
put_group $NSP e2e-test-1 '[{"name":"e2e-attribute-test-1","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"In","value":["nope"]}}}]}]'
check "a group whose rules change is evaluated again" wait_for 60 is_members e2e-test-1 ""
put_group $NSP e2e-test-1 '[{"name":"e2e-attribute-test-1","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Exists"}}}]}]'
check "... and back" wait_for 60 is_members e2e-test-1 node1,node2

# a NodeFeature naming another node in system.name: the Node's own name is listed
node_nf 'o["spec"]["features"]["attributes"]["system.name"] = {"elements": {"nodename": "node9"}}' >/dev/null
put_group $NSP named '[{"name":"n","matchFeatures":[{"feature":"system.name","matchExpressions":{"nodename":{"op":"In","value":["node9"]}}}]}]'
check "a node is listed by its Node's name, not the name its features claim" wait_for 60 is_members named node1

# a node goes away
k8s_ctl delete /api/v1/nodes/node2 >/dev/null
check "a deleted Node leaves the groups" wait_for 60 is_members e2e-test-1 node1
check "... (its NodeFeature collected)" wait_for 60 eval '! k8s_ctl get $NFAPI/namespaces/$NSP/nodefeatures/node2 >/dev/null 2>&1'
put_node node2
testing "... a node back with a worker" "worker node2" "0\n"
check "... is back in the groups" wait_for 60 is_members e2e-test-1 node1,node2

# a node whose update keeps failing does not hold the groups up
k8s_ctl fault --method PATCH --path '^/api/v1/nodes/node1$' --count -1 --status 500 >/dev/null
node_nf 'o["spec"]["labels"]["stuck"] = "1"' >/dev/null
check "(node1's update is failing)" wait_for 60 grep -q 'updating node node1 failed (attempt 2)' "$W/m.log"
put_group $NSP meanwhile '[{"name":"all","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Exists"}}}]}]'
check "a group is written while a node's update is being retried" wait_for 60 is_members meanwhile node1,node2
k8s_ctl clear-faults >/dev/null

# a failing status write is retried
FID=$(k8s_ctl fault --method PATCH --path "$NGAPI/e2e-test-1/status" --count 2 --status 500)
set_status e2e-test-1 '[]'
check "a status write that fails is retried until it lands" wait_for 60 is_members e2e-test-1 node1,node2
check "... after the failures (logged)" grep -q 'updating NodeFeatureGroup e2e-test-1 failed (attempt 2)' "$W/m.log"
k8s_ctl clear-faults >/dev/null
stop_master m
testing "the master exits 0 on SIGTERM" "echo \$?" "0\n"
check "the sanitizers found nothing" sanitizer_clean "$W/m.log"

# the gate off (upstream's default): groups are neither read nor written
put_group $NSP late '[{"name":"all","matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"Exists"}}}]}]'
SEQ=$(k8s_ctl log --json | python3 -c 'import json, sys; l = json.load(sys.stdin); print(l[-1]["seq"] if l else 0)')
MCONF=$W/kc-nfdm start_master off
check "gate off: the master starts" wait_for 60 grep -q 'everything listed' "$W/off.log"
put_nf $NSP zzz-poke node1 '{"features":{},"labels":{"poke":"1"}}'
check "gate off: the master works on" wait_for 60 has node1 "label feature.node.kubernetes.io/poke=1"
testing "gate off: no request for NodeFeatureGroups" "k8s_ctl count '*' nodefeaturegroups --since $SEQ --user nfdm" "0\n"
testing "gate off: the new group has no status" "members late" "(none)\n"
stop_master off

# --no-publish: what would be written is logged, nothing is
MCONF=$W/kc-nfdm start_master dry --feature-gates NodeFeatureGroupAPI=true --no-publish
check "--no-publish: the status a group would get is logged" wait_for 60 grep -q 'NodeFeatureGroup late: status {"nodes":\[{"name":"node1"},{"name":"node2"}\]} (--no-publish: not written)' "$W/dry.log"
testing "--no-publish: not written" "members late" "(none)\n"
stop_master dry

done_testing
