# nfd-worker --no-publish as upstream runs it: without --oneshot a dry-run
# daemon (a pass every sleepInterval and on features.d changes, the probes,
# nothing sent anywhere), with --oneshot one pass; the node name checked
# only where it names an object.
. "$(dirname "$0")/../lib/testing.sh"
F=$FB_TOP/tests/fixtures
mkdir -p "$W/pi" "$W/fd"
cp -r "$F/nfd/rpi4/." "$W/pi/" && cp -r "$F/sysfs/rpi4/." "$W/pi/"
echo "edge.example.com/site=lab" >"$W/fd/site"
# no kubeconfig, no cluster: a dry run must not need one
unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
NW="$FB nfd-worker --config $W/none.conf --host-prefix $W/pi/ --features-dir $W/fd --label-sources=local"

# 1. The daemon: it keeps running, prints each pass, answers its probes.
$NW --node-name node1 --no-publish --port 0 --options '{"core":{"sleepInterval":"1h"}}' >"$W/out" 2>"$W/err" &
wpid=$!
check "--no-publish without --oneshot: the first pass printed" wait_for 20 grep -q '^edge.example.com/site=lab$' "$W/out"
check "... and it is still running" kill -0 "$wpid"
port=$(sed -n 's/.*serving \/healthz and \/metrics on port \([0-9]*\).*/\1/p' "$W/err")
testing "... /healthz answers 200" "probe http://127.0.0.1:$port/healthz" "200"
testing "... /metrics has the discovery histogram for the node" \
	"curl -s -m 5 http://127.0.0.1:$port/metrics | grep -c '^nfd_worker_feature_discovery_duration_seconds_count{node=\"node1\"} '" "1\n"
echo "edge.example.com/site=rack7" >"$W/fd/site"
check "... a features.d change is a new pass, printed" wait_for 20 grep -q '^edge.example.com/site=rack7$' "$W/out"
testing "... no API client: nothing about a kubeconfig or the cluster in its log" \
	"grep -ci -e kubeconfig -e 'in-cluster' -e 'NodeFeature' $W/err" "0\n"
stop "$wpid"
testing "... SIGTERM ends it with 0" "echo $STOP_RC" "0\n"

# 2. --oneshot --no-publish: one pass, exit 0 (as before).
testing "--oneshot --no-publish: one pass, exit 0" \
	"timeout -k 10 60 $NW --node-name node1 --oneshot --no-publish 2>/dev/null; echo \$?" \
	"edge.example.com/site=rack7\n0\n"
printf 'core:\n  noPublish: true\n  sleepInterval: 1h\n' >"$W/np.conf"
$FB nfd-worker --config "$W/np.conf" --node-name node1 --host-prefix "$W/pi/" --features-dir "$W/fd" \
	--label-sources=local --port 0 >"$W/out3" 2>/dev/null &
wpid=$!
check "core.noPublish in the config file: the same daemon, first pass printed" wait_for 20 grep -q 'site=rack7' "$W/out3"
check "... still running after it" kill -0 "$wpid"
stop "$wpid"

# 3. The node name: a VM whose host name is "(none)" (no NODE_NAME): a dry
# run starts, publishing refuses to.
testing "a dry run takes a node name that is no object name" \
	"timeout -k 10 60 $NW --node-name '(none)' --oneshot --no-publish 2>/dev/null; echo \$?" \
	"edge.example.com/site=rack7\n0\n"
testing "... publishing refuses it, exit 2" \
	"timeout -k 10 60 $NW --node-name '(none)' --oneshot 2>&1 | grep -c 'node name \"(none)\" is not a valid Kubernetes object name'; timeout -k 10 60 $NW --node-name '(none)' --oneshot 2>/dev/null; echo \$?" \
	"1\n2\n"
$NW --node-name 'a"b\c' --no-publish --port 0 --options '{"core":{"sleepInterval":"1h"}}' >"$W/out2" 2>"$W/err2" &
wpid=$!
check "a daemon dry run with quotes in the node name" wait_for 20 grep -q 'site=rack7' "$W/out2"
port=$(sed -n 's/.*serving \/healthz and \/metrics on port \([0-9]*\).*/\1/p' "$W/err2")
testing "... /metrics escapes it in the label value" \
	"curl -s -m 5 http://127.0.0.1:$port/metrics | grep -c '^nfd_worker_feature_discovery_duration_seconds_count{node=\"a\\\\\"b\\\\\\\\c\"} '" "1\n"
stop "$wpid"

done_testing
