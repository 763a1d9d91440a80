# nfd-master's unprefixed names against the test API server: upstream's
# DisableAutoPrefix feature gate (docs/reference/feature-gates.md: a
# NodeFeature's spec.labels and a NodeFeatureRule's labels, annotations and
# extended resources are written as they are, taint keys unaffected; the
# DisableAutoPrefix cases of pkg/nfd-master/nfd-master-internal_test.go
# TestFilterLabels) and v0.15-v0.17's autoDefaultNs: false (no prefix put in
# front, so unprefixed names are refused). The bookkeeping lists an
# unprefixed name as "/name" (upstream's "name" reads back as
# feature.node.kubernetes.io/name), and only the record label makes such an
# entry removable: a node that forges its feature-labels annotation (it may
# edit its own annotations, not the record) removes no admin's label.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/applets/nfd-master.lib"
master_suite_start
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null

# cap NODE: the node's status.capacity, one "KEY=VALUE" per line, sorted, but cpu and pods
cap() {
	k8s_ctl get /api/v1/nodes/$1 | python3 -c '
import json, sys
c = json.load(sys.stdin).get("status", {}).get("capacity", {})
print("\n".join(sorted("%s=%s" % kv for kv in c.items() if kv[0] not in ("cpu", "pods"))))'
}
has_cap() { cap "$1" | grep -qxF "$2"; }
hasnt_cap() { ! cap "$1" | grep -qF "$2"; }
# labels_of NODE: its labels, one "KEY=VALUE" per line, sorted (not the record)
labels_of() { nfd_state "$1" | sed -n 's/^label //p'; }
FL=nfd.node.kubernetes.io/feature-labels

# node1: an admin's unprefixed label baz; node2: as an upstream master with
# the gate on leaves a node (bare "up" listed as "up", which upstream itself
# reads back as feature.node.kubernetes.io/up) next to a label of the
# default namespace it also wrote
put_node node1 '{"kubernetes.io/hostname":"node1","baz":"admin"}'
put_node node2 '{"kubernetes.io/hostname":"node2","up":"1","feature.node.kubernetes.io/old":"1"}' \
	'{"nfd.node.kubernetes.io/feature-labels":"old,up"}'
put_nf $NSP node1 node1 '{"features":{},"labels":{"foo":"1","feature.node.kubernetes.io/pfx":"2"}}'
put_nf $NSP node2 node2 '{"features":{},"labels":{}}'
# a rule that matches every node; its names are upstream's test's
put_rule rules '[{"name":"all","labels":{"bar":"true","test-label":"test-value"},
  "annotations":{"test-annotation":"bar"},"extendedResources":{"micromicrowaves":"10","tooster":"5"},
  "taints":[{"key":"untainted","effect":"NoSchedule"}]}]'

# --- the gate on: everything as it is, taint keys still need a prefix
start_master dap --feature-gates DisableAutoPrefix=true --enable-taints
check "DisableAutoPrefix: starts (it refused to before), lists everything" wait_for 60 grep -q 'everything listed' "$W/dap.log"
check "DisableAutoPrefix: says so" grep -q 'unprefixed names are written as they are' "$W/dap.log"
check "DisableAutoPrefix: node1 labelled" wait_for 60 has node1 "label foo=1"
testing "DisableAutoPrefix: the NodeFeature's foo and the rule's names land unprefixed, bookkept as /NAME" \
	"nfd_state node1" \
"annotation nfd.node.kubernetes.io/extended-resources=/micromicrowaves,/tooster
annotation nfd.node.kubernetes.io/feature-annotations=/test-annotation
annotation $FL=/bar,/foo,/test-label,pfx
annotation test-annotation=bar
label bar=true
label baz=admin
label feature.node.kubernetes.io/pfx=2
label foo=1
label kubernetes.io/hostname=node1
label test-label=test-value"
testing "DisableAutoPrefix: the unprefixed extended resources (upstream's micromicrowaves and tooster)" \
	"cap node1" "micromicrowaves=10\ntooster=5\n"
check "DisableAutoPrefix: the record vouches for it" has_record node1
check "DisableAutoPrefix: an unprefixed taint key is still refused" grep -q 'ignoring taint untainted.*unprefixed keys are not allowed' "$W/dap.log"
check "upstream's node2: its feature.node.kubernetes.io/old (listed \"old\") goes" wait_for 60 hasnt node2 "label feature.node.kubernetes.io/old"
testing "upstream's node2: \"up\" reads as feature.node.kubernetes.io/up (as upstream reads it): the bare label stays" \
	"labels_of node2" "bar=true\nkubernetes.io/hostname=node2\ntest-label=test-value\nup=1\n"

# --- removal: what is no longer wanted goes (the record vouches), baz stays
put_nf $NSP node1 node1 '{"features":{},"labels":{"feature.node.kubernetes.io/pfx":"2"}}'
put_rule rules '[{"name":"all","labels":{"bar":"true"}}]'
check "removal: the NodeFeature's foo goes" wait_for 60 hasnt node1 "label foo="
check "removal: the rule's annotation and extended resources go" wait_for 60 hasnt_cap node1 tooster
testing "removal: left: bar, the admin's baz, pfx" "nfd_state node1" \
"annotation $FL=/bar,pfx
label bar=true
label baz=admin
label feature.node.kubernetes.io/pfx=2
label kubernetes.io/hostname=node1"
testing "removal: no extended resource left" "cap node1" ""

# --- a forged feature-labels annotation: node1 names the admin's baz
# (both ways) and asks for an update; nothing it names is removed
testing "forged: node1 may write its feature-labels annotation" \
	"as_node node1 PATCH /api/v1/nodes/node1 application/merge-patch+json '{\"metadata\":{\"annotations\":{\"$FL\":\"/bar,/baz,baz,pfx\"}}}'" "200\n"
put_rule rules '[{"name":"all","labels":{"bar":"true","new":"1"}}]'
check "forged: the next update lands" wait_for 60 has node1 "label new=1"
# (the record no longer vouches for the annotation: no entry of it is
# trusted, so NFD's own bar is not taken back either: it stays as it is,
# never removed, as upstream never removes an unprefixed name)
testing "forged: baz stays; the forged entries are not carried into the bookkeeping; bar is left alone" "nfd_state node1" \
"annotation $FL=/new,pfx
label bar=true
label baz=admin
label feature.node.kubernetes.io/pfx=2
label kubernetes.io/hostname=node1
label new=1"
check "forged: the record vouches again" has_record node1

# --- a NodeFeature (any worker may write one for any node) asks for the
# admin's baz: an unprefixed label NFD did not write is never taken over, so
# it can never be removed later either (upstream overwrites it)
put_nf $NSP evil node1 '{"features":{},"labels":{"baz":"taken","evil":"1"}}'
check "NodeFeature: its other label lands" wait_for 60 has node1 "label evil=1"
testing "NodeFeature: the admin's baz keeps its value and is not bookkept" "nfd_state node1" \
"annotation $FL=/evil,/new,pfx
label bar=true
label baz=admin
label evil=1
label feature.node.kubernetes.io/pfx=2
label kubernetes.io/hostname=node1
label new=1"
k8s_ctl delete $NFAPI/namespaces/$NSP/nodefeatures/evil >/dev/null
check "NodeFeature gone: its label goes, baz stays" wait_for 60 hasnt node1 "label evil="
check "... baz=admin" has node1 "label baz=admin"
stop_master dap
testing "DisableAutoPrefix: SIGTERM: exit 0" "echo $?" "0\n"

# --- the gate off again (default): the names written unprefixed go (the
# record says this master wrote them), the prefixed ones come
start_master auto
check "gate off: bar becomes feature.node.kubernetes.io/bar" wait_for 60 has node1 "label feature.node.kubernetes.io/bar=true"
check "gate off: ... the unprefixed new goes" wait_for 60 hasnt node1 "label new="
# (bar, left alone since the forged annotation, stays: nobody vouches for it)
testing "gate off: as before the gate, the admin's baz untouched" "nfd_state node1" \
"annotation $FL=bar,new,pfx
label bar=true
label baz=admin
label feature.node.kubernetes.io/bar=true
label feature.node.kubernetes.io/new=1
label feature.node.kubernetes.io/pfx=2
label kubernetes.io/hostname=node1"
stop_master auto >/dev/null

# --- autoDefaultNs: false (v0.15-v0.17's nfd-master.conf): no prefix put in
# front, and unprefixed names are refused (upstream's test: "Unprefixed
# should be denied", "Unprefixed extended resources & annotations should not
# be allowed")
put_nf $NSP node1 node1 '{"features":{},"labels":{"foo":"1","feature.node.kubernetes.io/pfx":"2"}}'
put_rule rules '[{"name":"all","labels":{"test-label":"test-value","example.com/kept":"yes"},
  "annotations":{"test-annotation":"bar"},"extendedResources":{"micromicrowaves":"10","tooster":"5"}}]'
printf 'autoDefaultNs: false\n' >"$W/autons.conf"
start_master autons --config "$W/autons.conf"
check "autoDefaultNs: false: starts (it refused to before)" wait_for 60 grep -q 'everything listed' "$W/autons.log"
check "autoDefaultNs: false: says so" grep -q 'unprefixed names are refused (autoDefaultNs: false)' "$W/autons.log"
check "autoDefaultNs: false: the prefixed rule label lands" wait_for 60 has node1 "label example.com/kept=yes"
testing "autoDefaultNs: false: nothing unprefixed written, nothing prefixed for it" "nfd_state node1" \
"annotation $FL=example.com/kept,pfx
label bar=true
label baz=admin
label example.com/kept=yes
label feature.node.kubernetes.io/pfx=2
label kubernetes.io/hostname=node1"
testing "autoDefaultNs: false: no extended resource" "cap node1" ""
for n in foo test-label test-annotation micromicrowaves tooster; do
	check "autoDefaultNs: false: $n refused, logged" grep -q "ignoring [a-z ]* $n=.*unprefixed keys are not allowed" "$W/autons.log"
done
stop_master autons >/dev/null

# the gate wins over autoDefaultNs: false (v0.18 dropped the key)
start_master both --config "$W/autons.conf" --feature-gates DisableAutoPrefix=true
check "gate and autoDefaultNs: false: the gate wins" wait_for 60 has node1 "label test-label=test-value"
check "... foo too" wait_for 60 has node1 "label foo=1"
stop_master both >/dev/null
done_testing
