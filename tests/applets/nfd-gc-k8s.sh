# nfd-gc against the test API server (issue 18): the NodeFeatures of nodes
# that are gone are deleted, at start and every -gc-interval; those of nodes
# that exist, and those without the node-name label, stay; a failing Node
# list deletes nothing; lists are paged by -list-size.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/applets/nfd-master.lib"
master_suite_start
gpid=
trap 'kill -9 $gpid 2>/dev/null; k8s_stop; rm -rf "$W"' EXIT
NFNS=$NFAPI/namespaces/$NSP/nodefeatures

printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
put_node node1
put_node node2
put_nf $NSP node1 node1 '{"features":{},"labels":{}}'
put_nf $NSP node2 node2 '{"features":{},"labels":{}}'
put_nf $NSP gone1 gone1 '{"features":{},"labels":{}}'
put_nf $NSP gone2 gone2 '{"features":{},"labels":{}}'
# an admin's object without the node-name label
printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"handmade","namespace":"%s"},"spec":{"features":{},"labels":{}}}' \
	$NSP | k8s_ctl put $NFNS/handmade - >/dev/null
exists() { k8s_ctl get "$NFNS/$1" >/dev/null 2>&1; }
gone() { ! exists "$1"; }

k8s_ctl clear-log
$FB nfd-gc --kubeconfig "$S/kubeconfig-admin" -gc-interval=1h -list-size=1 -port=0 >"$W/gc.log" 2>&1 &
gpid=$!
check "the first pass deletes the NodeFeatures of nodes that are gone" wait_for 60 sh -c \
	"cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S && ! K8S_DIR=$S k8s_ctl get $NFNS/gone1 >/dev/null 2>&1 && ! K8S_DIR=$S k8s_ctl get $NFNS/gone2 >/dev/null 2>&1"
check "... and says so" wait_for 20 grep -q 'garbage collection: 2 nodes, 2 NodeFeatures deleted' "$W/gc.log"
testing "those of existing nodes stay" "exists node1 && exists node2 && echo both" "both\n"
testing "one without the node-name label stays, logged" \
	"exists handmade && echo kept; grep -c 'NodeFeature $NSP/handmade has no nfd.node.kubernetes.io/node-name label: left alone' $W/gc.log" "kept\n1\n"
testing "lists are paged by -list-size (limit=1: a page per object)" \
	"k8s_ctl log | grep -E ' GET /api/v1/nodes\\?' | grep -c 'limit=1'; k8s_ctl log | grep -E ' GET $NFAPI/nodefeatures\\?' | grep -c 'limit=1'" "2\n5\n"
testing "the API is asked whether each node is gone before a deletion" \
	"k8s_ctl count GET '^/api/v1/nodes/gone[12]\$' --status 404" "2\n"
port=$(sed -n 's/.*serving \/healthz and \/metrics on port \([0-9]*\).*/\1/p' "$W/gc.log")
testing "/healthz answers" "probe http://127.0.0.1:$port/healthz" "200"
testing "/metrics counts the deletions as upstream names them" \
	"curl -s http://127.0.0.1:$port/metrics | grep '^nfd_gc_objects_deleted_total'" \
	"nfd_gc_objects_deleted_total{kind=\"NodeFeature\"} 2\n"
stop $gpid
rc=$STOP_RC
gpid=
testing "SIGTERM: exit 0" "echo $rc" "0\n"

# A Node list that fails deletes nothing (every node would look gone), and
# the pass is tried again, soon, once the list works.
put_nf $NSP gone3 gone3 '{"features":{},"labels":{}}'
k8s_ctl clear-log
k8s_ctl fault --method GET --path '^/api/v1/nodes$' --count -1 --status 503 >/dev/null
$FB nfd-gc --kubeconfig "$S/kubeconfig-admin" -port=0 >"$W/gc2.log" 2>&1 &
gpid=$!
check "Node list failing: logged, nothing deleted" wait_for 90 grep -q 'garbage collection: .*(nothing deleted)' "$W/gc2.log"
testing "... no DELETE while it fails" "k8s_ctl count DELETE '.'; exists gone3 && echo kept" "0\nkept\n"
k8s_ctl clear-faults >/dev/null
check "once the list works, the next pass deletes what is gone (before -gc-interval's 1h)" wait_for 90 gone gone3
testing "... and kept the others" "exists node1 && exists node2 && exists handmade && echo kept" "kept\n"
stop $gpid
gpid=

testing "klog and v0.16 flags: accepted (exit 1: the kubeconfig is missing)" \
	"$FB nfd-gc -gc-interval=1h -metrics=8081 -logtostderr -kubeconfig $W/no-such 2>&1 >/dev/null | grep -c 'unknown option'; $FB nfd-gc -metrics=8081 -kubeconfig $W/no-such >/dev/null 2>&1; echo \$?" "0\n1\n"
done_testing
