# nfd-worker's hooks (source.d, sources.local.hooksEnabled): they run off the
# event loop, so /healthz and /metrics answer while a hook sleeps, and nothing
# a hook starts outlives it, not even what calls setsid. The worker runs as
# uid 65534 (no capabilities), as in the upstream DaemonSet.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
F=$FB_TOP/tests/fixtures
# Every hook exports a marker that its descendants inherit: the escape hooks
# MARK_ESC, the sleeping one MARK_SLEEP. marked MARK lists the processes
# that carry it, wherever they were reparented to.
MARK_ESC=fbhookesc$$x$RANDOM
MARK_SLEEP=fbhooksleep$$x$RANDOM
marked() {
	grep -s -z -x -l "FBHOOK_MARK=$1" /proc/[0-9]*/environ | sed 's,^/proc/\([0-9]*\)/environ$,\1,'
}
none_marked() { [ -z "$(marked "$1")" ]; }
# none_left NAME LOG [SECONDS]: nothing of the escape hooks is left. qemu-user
# (the cross flavours, FBRUN) does not implement PR_SET_CHILD_SUBREAPER: the
# worker logs that it cannot be one, and there the check is not made.
none_left() {
	if [ -n "$FBRUN" ] && grep -q 'cannot become a child subreaper' "$2"; then
		echo "# $1: not checked under $FBRUN: $(grep -o 'cannot become a child subreaper ([^)]*)' "$2" | head -n 1)" >&2
	else
		check "$1" wait_for "${3:-5}" none_marked "$MARK_ESC"
	fi
	for p in $(marked "$MARK_ESC"); do kill -9 "$p" 2>/dev/null; done
}
# the sleeping hook leaves DONE/done.PID when it finishes (nobody may write
# there: the worker runs hooks as 65534)
DONE=$(mktemp -d /tmp/fbhookdone.XXXXXX) && chmod 1777 "$DONE"
cleanup() {
	k8s_stop
	rm -rf "$DONE"
	[ -n "${wpid:-}" ] && kill -9 "$wpid" 2>/dev/null
	# what escaped an unfixed worker
	for p in $(marked "$MARK_ESC") $(marked "$MARK_SLEEP"); do kill -9 "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT

mkdir -p "$W/root" "$W/fd" "$W/hooks" "$W/eschooks"
cp -r "$F/nfd/rpi4/." "$W/root/" && cp -r "$F/sysfs/rpi4/." "$W/root/"
echo "edge.example.com/site=lab" >"$W/fd/site"
echo "hook.example.com/both=file" >>"$W/fd/site"
# a hook that sleeps 5 s, half the hook timeout (10 s)
printf '#!/bin/sh\nexport FBHOOK_MARK=%s\nsleep 5\n: >%s/done.$$\necho hook.example.com/slept=yes\n' "$MARK_SLEEP" "$DONE" >"$W/hooks/10-sleep"
# children that leave the hook's session: one keeps the hook's stdout open,
# one is a daemon (no stdio) with a child of its own
cat >"$W/hooks/20-escape" <<EOF
#!/bin/sh
export FBHOOK_MARK=$MARK_ESC
setsid sleep 1000 &
setsid sh -c 'sleep 1000 & exec sleep 1001' </dev/null >/dev/null 2>&1 &
echo hook.example.com/escape=ran
echo hook.example.com/both=hook
EOF
# endless output: cut at 64 KiB, the hook is skipped
printf '#!/bin/sh\nexec yes hook.example.com/flood=x\n' >"$W/hooks/30-flood"
cp "$W/hooks/20-escape" "$W/eschooks/"
chmod 755 "$W/hooks/"* "$W/eschooks/"*
HOOKS_ON='"sources":{"local":{"hooksEnabled":true}}'
NB="as_nobody $FB nfd-worker --node-name node1 --config $W/none.conf --host-prefix $W/root/ --features-dir $W/fd --label-sources=local"

# 1. --no-publish: the hooks' labels, and nothing of theirs left when it exits.
testing "--no-publish: hook labels, hooks override features.d (as upstream)" \
	"$NB --oneshot --no-publish --hooks-dir $W/eschooks --options '{$HOOKS_ON}' 2>$W/np.log" \
	"edge.example.com/site=lab\nhook.example.com/both=hook\nhook.example.com/escape=ran\n"
none_left "--no-publish: no process from a hook outlives the worker" "$W/np.log"

k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
S=$K8S_DIR
chmod a+r "$S/kubeconfig-node1" "$S"/tokens/.data/*
NSP=node-feature-discovery
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node1"}}' | k8s_ctl put /api/v1/nodes/node1 - >/dev/null
k8s_ctl set-rules node1 - >/dev/null <<'JSON'
[{"verbs": ["get", "list", "watch"], "resources": ["nodes"]},
 {"verbs": ["get"], "resources": ["pods"]},
 {"verbs": ["get", "list", "watch", "create", "update", "patch", "delete"], "resources": ["nodefeatures"]}]
JSON
NFP=/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/$NSP/nodefeatures/node1
export KUBERNETES_NAMESPACE=$NSP
NB="$NB --kubeconfig $S/kubeconfig-node1 --owner-refs="
labels() { k8s_ctl get $NFP | python3 -c 'import json,sys; l=json.load(sys.stdin)["spec"]["labels"]; print(" ".join(k+"="+v for k,v in sorted(l.items()) if k.startswith("hook.")))'; }

# 2. --oneshot: runs the hooks, waits for them, publishes what they said.
testing "--oneshot: hook labels published, exit 0" \
	"$NB --oneshot --hooks-dir $W/eschooks --options '{$HOOKS_ON}' 2>$W/one.log; echo \$?; labels" \
	"0\nhook.example.com/both=hook hook.example.com/escape=ran\n"
none_left "--oneshot: no process from a hook outlives the worker" "$W/one.log"
k8s_ctl delete $NFP >/dev/null

# 3. The daemon, a pass every second: probes answer within a second while a
#    hook sleeps 5 s, pass after pass; no hook descendant accumulates.
# setpriv execs the worker, so $! is the worker (as_nobody would be a subshell)
NOBODY=
[ "$(id -u)" = 0 ] && NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --"
$NOBODY ${NB#as_nobody } --hooks-dir $W/hooks --options "{\"core\":{\"sleepInterval\":\"1s\"},$HOOKS_ON}" --port 0 >"$W/w.log" 2>&1 &
wpid=$!
wait_for 20 grep -q 'serving /healthz and /metrics on port' "$W/w.log" || fail "the worker serves"
if [ -n "$NOBODY" ]; then
	check "the daemon runs as uid 65534 without capabilities" sh -c \
		"grep -q '^Uid:[[:space:]]*65534' /proc/$wpid/status && grep -q '^CapEff:[[:space:]]*0*$' /proc/$wpid/status"
fi
port=$(sed -n 's/.*serving \/healthz and \/metrics on port \([0-9]*\).*/\1/p' "$W/w.log")
# probe /healthz every 100 ms until /metrics counts three discovery passes
# (each waits for the 5 s hook), the way the kubelet probes: an answer later
# than 1 s is a failure, and 3 failures in a row would restart the container.
# A loop that waits for the hook fails 5 in a row; one slow answer on a
# loaded machine is not that.
check "daemon: /healthz and /metrics never fail 3 in a row (1 s each) while hooks run, 3 passes" \
	python3 - "$port" <<'PY'
import http.client, re, sys, time
port = int(sys.argv[1])
def get(path):
    t = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
        c.request("GET", path)
        r = c.getresponse()
        st, body = r.status, r.read().decode()
        c.close()
    except OSError:  # (a timeout too)
        st, body = None, ""
    return st, body, time.monotonic() - t
worst, slow, row, most, probes, passes = 0.0, 0, 0, 0, 0, 0
end = time.monotonic() + 90
while passes < 3 and time.monotonic() < end:
    for path in ("/healthz",) * 5 + ("/metrics",):
        st, body, dt = get(path)
        probes += 1
        worst = max(worst, dt)
        failed = st != 200 or dt > 1.0
        slow += failed
        row = row + 1 if failed else 0
        most = max(most, row)
        if path == "/metrics" and st == 200:
            m = re.search(r'^nfd_worker_feature_discovery_duration_seconds_count\{node="node1"\} (\d+)', body, re.M)
            passes = int(m.group(1)) if m else 0
        time.sleep(0.1)
print("# worst /healthz|/metrics latency over %d probes, %d passes with a 5 s hook: %.0f ms (%d failed, at most %d in a row)"
      % (probes, passes, worst * 1000, slow, most), file=sys.stderr)
assert passes >= 3, "only %d passes in 90 s" % passes
assert most < 3, "%d probes in a row failed (%d in all, worst %.1f s)" % (most, slow, worst)
PY
sed -n 's/^# /# /p' "$W/check.out" >&2
echo "# processes of the escape hook found after three passes: $(marked "$MARK_ESC" | wc -l)" >&2
none_left "daemon: after three passes no process from a hook is left (setsid escapes too)" "$W/w.log" 10
testing "daemon: hook output is published as labels, hooks override features.d" \
	"labels" "hook.example.com/both=hook hook.example.com/escape=ran hook.example.com/slept=yes\n"
testing "daemon: hook output is published as local.label features" \
	"k8s_ctl get $NFP | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"spec\"][\"features\"][\"attributes\"][\"local.label\"][\"elements\"].get(\"hook.example.com/slept\"))'" "yes\n"
check "daemon: the endless hook is cut at 64 KiB and skipped" grep -q 'hook 30-flood: output larger than 65536 bytes' "$W/w.log"
testing "daemon: nothing of the endless hook is published" "k8s_ctl get $NFP | grep -c flood" "0\n"

# 4. SIGTERM while the 5 s hook sleeps: exit 0 at once, the hook killed.
#    Shown by events, not a stopwatch: SIGTERM right after a run of the hook
#    begins, and the run never finishes (no done file), the worker gone.
old=$(marked "$MARK_SLEEP")
fresh_run() {
	local p
	for p in $(marked "$MARK_SLEEP"); do
		printf '%s\n' "$old" | grep -qx "$p" || return 0
	done
	return 1
}
wait_for 30 fresh_run ||
	{ fail "the sleeping hook runs again"; tail -n 30 "$W/w.log" | sed 's/^/  /'; }
rm -f "$DONE"/done.*
t0=$(date +%s%N)
kill -TERM $wpid
wait_for 10 exited $wpid || kill -9 $wpid
t1=$(date +%s%N)
wait $wpid
rc=$?
wpid=
echo "# SIGTERM during a hook: exit after $(( (t1 - t0) / 1000000 )) ms" >&2
testing "SIGTERM during a hook: exit 0" "echo $rc" "0\n"
check "SIGTERM during a hook: the hook is gone" wait_for 5 none_marked "$MARK_SLEEP"
testing "SIGTERM during a hook: it did not wait for the hook (the run never finished)" "ls $DONE | grep -c '^done'" "0\n"

# 5. As a container's PID 1 (a new PID namespace; root only, to make one):
#    the hook's escapees are killed, an older orphan of the container is not.
#    A second hook looks from inside and says what it sees, as labels.
if [ "$(id -u)" = 0 ] && [ -z "$FBRUN" ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
	mkdir -p "$W/pid1" "$W/pid1run" && chmod 1777 "$W/pid1run"
	cp "$W/hooks/20-escape" "$W/pid1/10-escape"
	{
		echo '#!/bin/sh'
		echo 'echo "pid1.example.com/worker-pid=$PPID"'
		echo "echo \"pid1.example.com/escapees=\$(grep -s -z -x -l FBHOOK_MARK=$MARK_ESC /proc/[0-9]*/environ | wc -l)\""
		echo "kill -0 \"\$(cat $W/pid1run/older.pid)\" 2>/dev/null && echo pid1.example.com/older=alive"
		echo "exit 0"
	} >"$W/pid1/20-look"
	chmod 755 "$W/pid1/20-look"
	cat >"$W/pid1.sh" <<EOF
sleep 1000 &
echo \$! >$W/pid1run/older.pid
exec ${NB#as_nobody } --oneshot --no-publish --hooks-dir $W/pid1 --options '{$HOOKS_ON}'
EOF
	testing "as PID 1: escapees killed, an older orphan left alone" \
		"unshare --pid --fork --mount-proc $NOBODY sh $W/pid1.sh 2>$W/pid1.log | grep pid1" \
		"pid1.example.com/escapees=0\npid1.example.com/older=alive\npid1.example.com/worker-pid=1\n"
else
	echo "# as PID 1: not checked (needs root for a PID namespace, not under qemu-user)" >&2
fi

done_testing
