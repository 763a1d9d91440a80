# nfd-master's restrictions.* (upstream's master configuration reference) against
# the test API server, the master running as a user with exactly the rules of
# deploy/base/rbac/nfd-master, a compromised node acting with node1's token:
# nodeFeatureNamespaceSelector (NodeFeatures of other namespaces are ignored,
# and labelling follows the namespaces' labels as they change), disableLabels,
# disableAnnotations, disableExtendedResources, denyNodeFeatureLabels; and the
# configuration nfd-master does not implement that has a security meaning
# refuses to start.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/applets/nfd-master.lib"
master_suite_start

# ns_label NAMESPACE KEY VALUE: sets (VALUE "-": removes) a label of a namespace,
# creating the namespace if need be
ns_label() {
	{ k8s_ctl get /api/v1/namespaces/$1 2>/dev/null || printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $1; } |
		python3 -c '
import json, sys
o = json.load(sys.stdin)
l = o["metadata"].setdefault("labels", {})
if sys.argv[2] == "-":
    l.pop(sys.argv[1], None)
else:
    l[sys.argv[1]] = sys.argv[2]
print(json.dumps(o))' "$2" "$3" | k8s_ctl put /api/v1/namespaces/$1 - >/dev/null
}
# as_node1 METHOD PATH [BODY [CONTENT-TYPE]]: a request with node1's credentials;
# prints the HTTP status
as_node1() {
	curl -s -o /dev/null -w '%{http_code}' --cacert "$S/ca.crt" -H "Authorization: Bearer $(cat "$S/tokens/node1")" \
		-H "Content-Type: ${4:-application/json}" -X "$1" "$K8S_URL$2" ${3:+--data-binary "$3"}
}
# has_all NODE [- ABSENT] LINE...: the node has every LINE (and nothing containing ABSENT)
has_all() {
	local st l
	st=$(nfd_state "$1")
	shift
	if [ "$1" = - ]; then
		case "$st" in *"$2"*) return 1 ;; esac
		shift 2
	fi
	for l in "$@"; do
		printf '%s\n' "$st" | grep -qxF -- "$l" || return 1
	done
}
# run_conf NAME YAML: writes $W/NAME.conf and starts master NAME on it; waits for its first list
run_conf() {
	printf '%s\n' "$2" >"$W/$1.conf"
	MCONF=$W/kc-nfdm start_master "$1" --config "$W/$1.conf"
	check "$1: starts and lists everything" wait_for 20 grep -q 'everything listed' "$W/$1.log"
}

deploy_user

# The cluster: our namespace and a vendor's are trusted, a tenant's is not.
ns_label $NSP nfd.example.com/trusted yes
ns_label vendor nfd.example.com/trusted yes
ns_label tenant team a
put_node node1 '{"kubernetes.io/hostname":"node1"}'
put_node node2 '{"kubernetes.io/hostname":"node2"}'
put_nf $NSP node1 node1 '{"features":{"attributes":{"kernel.version":{"elements":{"major":"6"}}}},"labels":{"own":"1"}}'
put_nf $NSP node2 node2 '{"features":{"attributes":{"kernel.version":{"elements":{"major":"5"}}}},"labels":{"own":"2"}}'
put_nf vendor node1-vendor node1 '{"features":{"attributes":{"vendor.attr":{"elements":{"a":"1"}}}},"labels":{"vendor.example.com/v":"1"}}'
# in our namespace but not named after the node: a third party's too (upstream)
put_nf $NSP node1-other node1 '{"features":{},"labels":{"other":"1"}}'
put_rule rules '[{"name":"kernel","labels":{"kmaj":"6"},"annotations":{"vendor.example.com/note":"n"},
   "extendedResources":{"vendor.example.com/widgets":"2"},
   "matchFeatures":[{"feature":"kernel.version","matchExpressions":{"major":{"op":"In","value":["6"]}}}]},
 {"name":"vendor","labels":{"vrule":"true"},"matchFeatures":[{"feature":"vendor.attr","matchExpressions":{"a":{"op":"In","value":["1"]}}}]},
 {"name":"evil","labels":{"evil-rule":"true"},"matchFeatures":[{"feature":"evil.flag","matchExpressions":{"x":{"op":"Exists"}}}]}]'
# The compromised node writes a NodeFeature for itself where nobody expects one
# (node1 may write NodeFeatures in any namespace, as a kubelet's credentials
# with the worker's rights would)
EVIL='{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"node1-evil","namespace":"tenant","labels":{"nfd.node.kubernetes.io/node-name":"node1"}},"spec":{"features":{"flags":{"evil.flag":{"elements":{"x":{}}}}},"labels":{"evil":"1"}}}'
testing "node1 may create a NodeFeature in the tenant's namespace" "as_node1 POST $NFAPI/namespaces/tenant/nodefeatures '$EVIL'" "201"

# --- restrictions.nodeFeatureNamespaceSelector
run_conf sel 'restrictions:
  nodeFeatureNamespaceSelector:
    matchLabels:
      nfd.example.com/trusted: "yes"'
check "selector: node1 labelled from the selected namespaces" wait_for 20 has node1 "label feature.node.kubernetes.io/vrule=true"
testing "selector: the NodeFeature of a namespace the selector leaves out labels nothing, its features match no rule" \
	"nfd_state node1 | grep '^label'" \
"label feature.node.kubernetes.io/kmaj=6
label feature.node.kubernetes.io/other=1
label feature.node.kubernetes.io/own=1
label feature.node.kubernetes.io/vrule=true
label kubernetes.io/hostname=node1
label vendor.example.com/v=1"
# the node writes again; then the admin changes our own object: once that is
# on the node, the node's write has been seen (one watch, in order)
testing "selector: the node rewrites its object" \
	"as_node1 PATCH $NFAPI/namespaces/tenant/nodefeatures/node1-evil '{\"spec\":{\"labels\":{\"evil\":\"2\"}}}' application/merge-patch+json" "200"
put_nf $NSP node1 node1 '{"features":{"attributes":{"kernel.version":{"elements":{"major":"6"}}}},"labels":{"own":"1","seen":"1"}}'
check "selector: a later change of our own object lands" wait_for 20 has node1 "label feature.node.kubernetes.io/seen=1"
check "selector: ... and still nothing of the node's object" hasnt node1 evil
ns_label tenant nfd.example.com/trusted yes
check "selector: the namespace gets the label: its NodeFeature counts (watched, no restart)" \
	wait_for 20 has node1 "label feature.node.kubernetes.io/evil-rule=true"
check "selector: ... its labels too" has node1 "label feature.node.kubernetes.io/evil=2"
ns_label tenant nfd.example.com/trusted -
check "selector: the label goes: so do the labels from that namespace" \
	wait_for 20 hasnt node1 "label feature.node.kubernetes.io/evil"
check "selector: ... the rule label too, the others stay" has_all node1 - evil-rule \
	"label feature.node.kubernetes.io/vrule=true"
testing "selector: node2 (nothing in the other namespaces) was never touched again" \
	"k8s_ctl count patch '^/api/v1/nodes/node2' --since 0 --user nfdm" "1\n"
stop_master sel
testing "selector: SIGTERM: exit 0" "echo $?" "0\n"

# matchExpressions (In on the name the API server sets, DoesNotExist); our
# own namespace is not special: it counts only when selected
run_conf selx 'restrictions:
  nodeFeatureNamespaceSelector:
    matchExpressions:
      - {key: kubernetes.io/metadata.name, operator: In, values: [node-feature-discovery, tenant]}
      - {key: quarantined, operator: DoesNotExist}'
check "selector In: the vendor's namespace no longer counts" wait_for 20 hasnt node1 "vrule"
check "selector In: ... the tenant's does" wait_for 20 has node1 "label feature.node.kubernetes.io/evil-rule=true"
ns_label $NSP quarantined yes
check "selector DoesNotExist: our own namespace labelled quarantined: its objects no longer count" \
	wait_for 20 hasnt node1 "label feature.node.kubernetes.io/own="
check "selector DoesNotExist: ... node2 has no NodeFeature left: its labels go" \
	wait_for 20 hasnt node2 "label feature.node.kubernetes.io/own="
ns_label $NSP quarantined -
check "selector: ... and come back with the label gone" wait_for 20 has node2 "label feature.node.kubernetes.io/own=2"
stop_master selx >/dev/null
k8s_ctl delete $NFAPI/namespaces/tenant/nodefeatures/node1-evil >/dev/null

# --- restrictions.disableLabels: no label at all, from objects or rules; the
# labels written before are removed; annotations and extended resources stay
run_conf nolab 'restrictions:
  disableLabels: true'
check "disableLabels: the labels written before are removed" wait_for 20 hasnt node1 "label feature.node.kubernetes.io/own="
testing "disableLabels: no NFD label from NodeFeatures or rules; annotations and extended resources as before" \
	"nfd_state node1" \
"annotation nfd.node.kubernetes.io/extended-resources=vendor.example.com/widgets
annotation nfd.node.kubernetes.io/feature-annotations=vendor.example.com/note
annotation vendor.example.com/note=n
capacity vendor.example.com/widgets=2
label kubernetes.io/hostname=node1"
stop_master nolab >/dev/null

# --- restrictions.disableAnnotations
run_conf noann 'restrictions:
  disableAnnotations: true'
check "disableAnnotations: the rule's annotation is removed" wait_for 20 hasnt node1 "annotation vendor.example.com/note"
check "disableAnnotations: ... labels and extended resources stay" has_all node1 \
	"label feature.node.kubernetes.io/kmaj=6" "capacity vendor.example.com/widgets=2"
stop_master noann >/dev/null

# --- restrictions.disableExtendedResources
run_conf noer 'restrictions:
  disableExtendedResources: true'
check "disableExtendedResources: the rule's extended resource is removed" wait_for 20 hasnt node1 "capacity vendor.example.com/widgets"
check "disableExtendedResources: ... labels and annotations stay" has_all node1 \
	"label feature.node.kubernetes.io/kmaj=6" "annotation vendor.example.com/note=n"
stop_master noer >/dev/null

# --- restrictions.denyNodeFeatureLabels: only the object in our namespace
# named after the node (the worker's) gives labels; rules match on every object
run_conf deny 'restrictions:
  denyNodeFeatureLabels: true'
check "denyNodeFeatureLabels: the vendor's object's labels go" wait_for 20 hasnt node1 "label vendor.example.com/v="
testing "denyNodeFeatureLabels: the worker's labels stay, rules on third-party features still apply" \
	"nfd_state node1 | grep '^label'" \
"label feature.node.kubernetes.io/kmaj=6
label feature.node.kubernetes.io/own=1
label feature.node.kubernetes.io/seen=1
label feature.node.kubernetes.io/vrule=true
label kubernetes.io/hostname=node1"
stop_master deny >/dev/null

# --- configuration nfd-master does not implement that has a security meaning:
# exit 1 naming it, never a warning and a run that ignores it
refuses() { # NAME WHAT-IT-MUST-NAME ARGS...: exit 1 within 10 s, naming it
	local name=$1 key=$2
	shift 2
	testing "$name: exit 1 naming $key" \
		"timeout -k 10 10 $FB nfd-master --kubeconfig $W/kc-nfdm --config $W/none.conf --port 0 $* >$W/refuse.log 2>&1; echo \$?; grep -q -F -- '$key' $W/refuse.log && echo named" \
		"1\nnamed\n"
}
printf 'restrictions:\n  disableTaints: true\n' >"$W/unknown-restriction.conf"
refuses "a restrictions key nfd-master does not know" restrictions.disableTaints --config "$W/unknown-restriction.conf"
refuses "the same in --options" restrictions.denyAll "--options '{\"restrictions\":{\"denyAll\":true}}'"
printf 'restrictions:\n  nodeFeatureNamespaceSelector:\n    matchExpressions: [{key: a, operator: Bogus}]\n' >"$W/badsel.conf"
refuses "a selector with an unknown operator" restrictions.nodeFeatureNamespaceSelector --config "$W/badsel.conf"
printf 'restrictions:\n  nodeFeatureNamespaceSelector:\n    matchExpressions: [{key: a, operator: In, values: []}]\n' >"$W/badsel2.conf"
refuses "a selector In with no values" restrictions.nodeFeatureNamespaceSelector --config "$W/badsel2.conf"
printf 'restrictions:\n  nodeFeatureNamespaceSelector:\n    matchLabels: {"a": "x,b"}\n' >"$W/badsel3.conf"
refuses "a selector value that is no label value" restrictions.nodeFeatureNamespaceSelector --config "$W/badsel3.conf"
printf 'restrictions:\n  disableLabels: "yes"\n' >"$W/badbool.conf"
refuses "a restriction of the wrong type" restrictions.disableLabels --config "$W/badbool.conf"
testing "--feature-gates with an unknown gate: a usage error naming it" \
	"timeout -k 10 10 $FB nfd-master --kubeconfig $W/kc-nfdm --config $W/none.conf --feature-gates Bogus=true 2>&1 | grep -q Bogus && echo named; \
	 timeout -k 10 10 $FB nfd-master --kubeconfig $W/kc-nfdm --config $W/none.conf --feature-gates Bogus=true >/dev/null 2>&1; echo \$?" "named\n2\n"
# gates at upstream's defaults (the Helm chart passes them), and
# NodeFeatureGroupAPI=true (tests/applets/nfd-master-groups.sh has the groups)
MCONF=$W/kc-nfdm start_master gates --feature-gates NodeFeatureAPI=true,DisableAutoPrefix=false,NodeFeatureGroupAPI=true
check "gates at their defaults and NodeFeatureGroupAPI=true: runs" wait_for 20 grep -q 'everything listed' "$W/gates.log"
check "... and lists the NodeFeatureGroups, with deploy/'s RBAC" grep -q 'NodeFeatureGroups listed' "$W/gates.log"
stop_master gates
testing "... SIGTERM: exit 0" "echo $?" "0\n"
done_testing
