# dt-labeller controller mode and --oneshot against the test API server.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
: "${FB_TEST_DT:?run through tests/run}"
D=$(cd "$FB_TEST_DT" && pwd)
K=beta.devicetree.org
trap 'k8s_stop; [ -n "${cpid:-}" ] && kill -9 $cpid 2>/dev/null; rm -rf "$W"' EXIT

k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
S=$K8S_DIR
labels() { # the Node's labels, one "key=value" per line, sorted
	k8s_ctl get /api/v1/nodes/node1 | python3 -c '
import json, sys
for k, v in sorted(json.load(sys.stdin)["metadata"].get("labels", {}).items()):
    print("%s=%s" % (k, v))'
}
has() { labels | grep -qx "$1"; }
hasnt() { ! labels | grep -q "^$1="; }
set_labels() { # JSON object of labels: replace the node's labels by hand
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node1","labels":%s}}' "$1" |
		k8s_ctl put /api/v1/nodes/node1 - >/dev/null
}
set_labels '{"keep":"me","beta.devicetree.org/stale":"1","devicetree.orgx/x":"y","devicetree.org/not-ours":"1"}'

JETSON="$K/arm-armv8=4\n$K/arm-cortex-a57=4\n$K/nvidia-gm20b=1\n$K/nvidia-jetson-nano=1\n$K/nvidia-p3450-0000=1\n$K/nvidia-tegra210=1\n$K/nvidia-tegra210-gm20b=1\n"
testing "--oneshot labels the node and exits 0" \
	"$FB dt-labeller --oneshot --kubeconfig $S/kubeconfig-node1 --node-name node1 --dtb $D/jetson.dtb 2>$W/one.log; echo \$?" "0\n"
testing "labels: ours set, our stale one gone, others untouched" "labels" \
	"${JETSON}devicetree.org/not-ours=1\ndevicetree.orgx/x=y\nkeep=me\n"
k8s_ctl clear-log
testing "--oneshot again: nothing to change, no write" \
	"$FB dt-labeller --oneshot --kubeconfig $S/kubeconfig-node1 --node-name node1 --dtb $D/jetson.dtb 2>/dev/null; k8s_ctl count PATCH '^/api/v1/nodes/node1\$'" "0\n"
testing "NODE_NAME is used without --node-name" \
	"NODE_NAME=nope $FB dt-labeller --oneshot --kubeconfig $S/kubeconfig-node1 --dtb $D/jetson.dtb 2>&1 | grep -c 'reading node nope: HTTP 404'" "1\n"

# The controller: a different board now, so every label of ours changes.
$FB dt-labeller --kubeconfig "$S/kubeconfig-node1" --node-name node1 --dtb "$D/rpi4.dtb" --resync 2s \
	>"$W/ctl.log" 2>&1 &
cpid=$!
check "controller converges to the new board" wait_for 20 has "$K/raspberrypi-4-model-b=1"
testing "controller: exactly our labels plus the others" "labels" \
	"$K/arm-cortex-a72=4\n$K/brcm-bcm2711=1\n$K/brcm-bcm2711-vc5=1\n$K/raspberrypi-4-model-b=1\ndevicetree.org/not-ours=1\ndevicetree.orgx/x=y\nkeep=me\n"
set_labels '{"keep":"me","beta.devicetree.org/arm-cortex-a72":"4","beta.devicetree.org/brcm-bcm2711":"1","beta.devicetree.org/raspberrypi-4-model-b":"1","beta.devicetree.org/left-over":"7"}'
check "a label removed by hand comes back" wait_for 10 has "$K/brcm-bcm2711-vc5=1"
check "a stale label of ours added by hand goes" wait_for 10 hasnt "$K/left-over"
check "a label of someone else stays" has "keep=me"

# Steady state: the resync timer fires (2 s) but nothing is written or read.
# (The controller's last PATCH is in the log already: the label it removed is
# gone. The window is what is tested: nothing happens in it, by design.)
k8s_ctl clear-log
sleep 4 # two resync periods
testing "steady state: no API request besides the open watch" "k8s_ctl count '*' '^/api/' --no-watch" "0\n"
testing "steady state: and no new watch either" "k8s_ctl count '*' '^/api/' --watch" "0\n"

# The server forgets its history (an apiserver restart): one relist, one new
# watch, no storm of 410s.
k8s_ctl clear-log
k8s_ctl reset-history --keep-watches >/dev/null
k8s_ctl drop-watches --end >/dev/null
# the controller watches again (a watch answered 200 since the reset), then
# a resync period with it open: the window is what is tested
wait_for 20 sh -c "[ \"\$($K8S_CTL count watch '^/api/v1/nodes' --status 200)\" -ge 1 ] && [ \"\$($K8S_CTL watches)\" -ge 1 ]" ||
	fail "the controller watches again after the history reset"
sleep 3 # a resync period and more
# (the relist, a watch that gets 410 and the new watch: 3; at most 6)
testing "after a history reset: a bounded number of requests, not a storm" \
	"k8s_ctl count '*' '^/api/' | awk '{ print (\$1 <= 6) }'" "1\n"
set_labels '{"keep":"me"}'
check "after a history reset the controller still re-asserts" wait_for 10 has "$K/raspberrypi-4-model-b=1"

# Token rotation while running: the old token is revoked at once.
old=$(cat "$S/tokens/node1")
new=$(k8s_ctl rotate-token node1)
set_labels '{"keep":"me"}'
check "after a token rotation the controller recovers by itself" wait_for 15 has "$K/raspberrypi-4-model-b=1"
testing "the rejected old token was retried with the new one" "k8s_ctl count PATCH '^/api/v1/nodes/node1\$' --status 401 | awk '{ print (\$1 >= 1) }'" "1\n"
testing "no token text in the controller's log" "grep -c -e '$old' -e '$new' $W/ctl.log" "0\n"

# API down for a while: the process stays up and converges when it returns.
port=$K8S_PORT
mark=$(wc -l <"$W/ctl.log")
k8s_stop
# the controller has noticed (it logs its watch failing)
wait_for 30 sh -c "[ \$(wc -l <$W/ctl.log) -gt $mark ]" || fail "API down: the controller notices"
check "API down: the controller is still running" kill -0 $cpid
k8s_start "$S" --port "$port" || fail "test API server restarts on port $port"
set_labels '{"keep":"me"}'
check "API back: labels converge again" wait_for 40 has "$K/raspberrypi-4-model-b=1"
check "and the process never exited" kill -0 $cpid

# SIGTERM in the middle of a request (its PATCH held by the server, which
# would answer only after the 30 s request timeout): a clean exit at once.
# The bound is half that timeout: far from it, and far above any delay a
# loaded machine adds to a signal.
k8s_ctl clear-log
hold=$(k8s_ctl fault --method PATCH --path '^/api/v1/nodes/node1$' --count -1 --hold)
set_labels '{"keep":"me"}'
k8s_ctl wait-held "$hold" --timeout 60 >/dev/null || fail "the controller's PATCH is held"
t0=$(date +%s%N)
stop $cpid
rc=$STOP_RC
t1=$(date +%s%N)
cpid=
k8s_ctl release "$hold" >/dev/null
k8s_ctl clear-faults >/dev/null
echo "# SIGTERM during a held PATCH: gone after $(( (t1 - t0) / 1000000 )) ms" >&2
testing "SIGTERM: exit status 0" "echo $rc" "0\n"
testing "SIGTERM: gone without waiting for the held request (< 15 s of its 30 s timeout)" "[ \$(( ($t1 - $t0) / 1000000 )) -lt 15000 ] && echo ok" "ok\n"
testing "controller log says why it stopped" "grep -c 'stopping (signal 15)' $W/ctl.log" "1\n"

done_testing
