# core/kube against the test API server: TLS, kubeconfig auth, token
# rotation, the retry policy and watches, driven by tests/tools/kubetool
# (the sanitizer build: same core code as the applets).
. "$FB_TOP/tests/lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
KT=${KUBETOOL:-$FB_TOP/build/check/tests/kubetool}
SUITE=k8s/client
trap 'k8s_stop; rm -rf "$W"' EXIT

k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
D=$K8S_DIR
k8s_ctl put /api/v1/nodes/node1 - >/dev/null <<'JSON'
{"apiVersion":"v1","kind":"Node","metadata":{"name":"node1","labels":{"a":"1"}}}
JSON

# kubeconfig variants of the admin one: another server URL, CA or flag.
mkkc() { # NAME SERVER CA-LINE [EXTRA-CLUSTER-LINE]
	cat >"$W/$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: $2
    $3
    ${4:-}
contexts:
- name: x
  context: {cluster: c, user: admin}
current-context: x
users:
- name: admin
  user:
    token: $(cat "$D/admin.token")
KC
}

# 1. TLS
testing "RSA certificate, 127.0.0.1 (IP SAN)" "$KT --kubeconfig $D/kubeconfig-admin request GET /api/v1/nodes/node1 | head -1" "200 \n"
mkkc dns "https://localhost:$K8S_PORT" "certificate-authority: $D/ca.crt"
testing "RSA certificate, localhost (DNS SAN)" "$KT --kubeconfig $W/dns request GET /api/v1/nodes/node1 | head -1" "200 \n"
mkkc sni "https://127.0.0.1:$K8S_PORT" "certificate-authority: $D/ca.crt" "tls-server-name: kubernetes.default.svc"
testing "tls-server-name checked instead of the host" "$KT --kubeconfig $W/sni request GET /api/v1/nodes/node1 | head -1" "200 \n"
testing "client certificate auth (inline -data)" "$KT --kubeconfig $D/kubeconfig-cert request GET /api/v1/nodes/node1 | head -1" "200 \n"
mkkc wrongca "https://127.0.0.1:$K8S_PORT" "certificate-authority: $D/other-ca.crt"
testing "wrong CA: refused, saying why" \
	"$KT --kubeconfig $W/wrongca --attempts 1 request GET /api/v1/nodes 2>&1 >/dev/null | grep -c 'certificate verification failed: The certificate is not correctly signed by the trusted CA'; $KT --kubeconfig $W/wrongca --attempts 1 request GET /api/v1/nodes 2>/dev/null; echo \$?" "1\n1\n"
testing "wrong CA: no request reached the server" "k8s_ctl count '*' '^/api/v1/nodes\$'" "0\n"
mkkc insecure "https://127.0.0.1:$K8S_PORT" "certificate-authority: $D/other-ca.crt" "insecure-skip-tls-verify: true"
testing "insecure-skip-tls-verify only when the kubeconfig says so, with a warning" \
	"$KT --kubeconfig $W/insecure request GET /api/v1/nodes/node1 2>$W/err | head -1; grep -c 'verification of https://127.0.0.1:$K8S_PORT is OFF' $W/err" "200 \n1\n"
mkkc wrongname "https://127.0.0.1:$K8S_PORT" "certificate-authority: $D/ca.crt" "tls-server-name: api.example.com"
testing "name not in the certificate: refused" \
	"$KT --kubeconfig $W/wrongname --attempts 1 request GET /api/v1/nodes 2>&1 >/dev/null | grep -c 'certificate verification failed.*CN'" "1\n"
# A second server per certificate kind (same CA, DIR reused for its PKI).
for kind in ecdsa expired wrongname; do
	mkdir -p "$W/k8s-$kind" && cp -r "$D/pki" "$W/k8s-$kind/" # same CA, no new keys
	(k8s_start "$W/k8s-$kind" --cert "$kind" && echo "$K8S_PORT" >"$W/port-$kind" && echo "$K8S_PID" >"$W/pid-$kind"
	 # keep it running past this subshell: k8s_stop is not called here
	 trap - EXIT) || fail "server with the $kind certificate starts"
done
mkkc ecdsa "https://127.0.0.1:$(cat "$W/port-ecdsa")" "certificate-authority: $W/k8s-ecdsa/ca.crt"
sed -i "s|token: .*|token: $(cat "$W/k8s-ecdsa/admin.token")|" "$W/ecdsa"
testing "ECDSA certificate" "$KT --kubeconfig $W/ecdsa request GET /api/v1/nodes | head -1" "200 \n"
mkkc expired "https://127.0.0.1:$(cat "$W/port-expired")" "certificate-authority: $W/k8s-expired/ca.crt"
testing "expired certificate: refused, saying so" \
	"$KT --kubeconfig $W/expired --attempts 1 request GET /api/v1/nodes 2>&1 >/dev/null | grep -c 'certificate verification failed.*expired'" "1\n"
mkkc wn "https://127.0.0.1:$(cat "$W/port-wrongname")" "certificate-authority: $W/k8s-wrongname/ca.crt"
testing "certificate for another host: refused" \
	"$KT --kubeconfig $W/wn --attempts 1 request GET /api/v1/nodes 2>&1 >/dev/null | grep -c 'certificate verification failed'" "1\n"
for kind in ecdsa expired wrongname; do kill "$(cat "$W/pid-$kind")" 2>/dev/null; done

# 2. The retry policy, asserted from the server's request log.
P=/api/v1/nodes/node1
k8s_ctl clear-log
k8s_ctl fault --method GET --path "^$P\$" --count 2 --status 429 --retry-after 2 >/dev/null
t0=$(date +%s%N)
testing "429 with Retry-After: succeeds once the server recovers" "$KT --kubeconfig $D/kubeconfig-admin request GET $P 2>/dev/null | head -1" "200 \n"
t1=$(date +%s%N)
testing "429: waited at least Retry-After each time (>= 4 s)" "[ \$(( ($t1 - $t0) / 1000000 )) -ge 4000 ] && echo ok" "ok\n"
testing "429: three attempts in the log" "k8s_ctl count GET '^$P\$'" "3\n"
for st in 500 503; do
	k8s_ctl clear-log
	k8s_ctl fault --method GET --path "^$P\$" --count 2 --status $st >/dev/null
	testing "$st twice, then served" "$KT --kubeconfig $D/kubeconfig-admin request GET $P 2>/dev/null | head -1" "200 \n"
	testing "$st: three attempts" "k8s_ctl count GET '^$P\$'" "3\n"
done
k8s_ctl clear-log
k8s_ctl fault --method GET --path "^$P\$" --count -1 --status 503 >/dev/null
testing "503 forever: gives up with the last answer after a bounded number of attempts" \
	"$KT --kubeconfig $D/kubeconfig-admin --attempts 4 request GET $P 2>/dev/null | head -1; k8s_ctl count GET '^$P\$'" "503 ServiceUnavailable\n4\n"
k8s_ctl clear-faults
k8s_ctl clear-log
k8s_ctl fault --method GET --path "^$P\$" --count 1 --close >/dev/null
testing "connection closed mid-body: retried" "$KT --kubeconfig $D/kubeconfig-admin request GET $P 2>/dev/null | head -1; k8s_ctl count GET '^$P\$'" "200 \n2\n"
k8s_ctl clear-log
k8s_ctl fault --method GET --path "^$P\$" --count 1 --delay 8000 >/dev/null
testing "slow server: the attempt times out and the next one is served" \
	"$KT --kubeconfig $D/kubeconfig-admin --timeout-ms 3000 request GET $P 2>/dev/null | head -1; k8s_ctl count GET '^$P\$'" "200 \n2\n"
k8s_ctl clear-log
k8s_ctl fault --method POST --path '^/api/v1/namespaces/default/configmaps$' --count 1 --close >/dev/null
testing "POST cut off after it was sent: not resent blindly" \
	"$KT --kubeconfig $D/kubeconfig-admin request POST /api/v1/namespaces/default/configmaps application/json '{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"once\"}}' >/dev/null 2>&1; echo \$?; k8s_ctl count POST configmaps" "1\n1\n"
k8s_ctl clear-faults

# Paged lists: every page followed, and an expired continue token restarts the list once.
for n in p1 p2 p3 p4 p5 p6 p7; do
	printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"default"}}' $n |
		k8s_ctl put /api/v1/namespaces/default/configmaps/$n - >/dev/null
done
k8s_ctl clear-log
testing "list in pages of 2: all items" \
	"$KT --kubeconfig $D/kubeconfig-admin --page 2 list /api/v1/namespaces/default/configmaps | head -1" "items 8\n"
testing "list in pages of 2: four requests" "k8s_ctl count GET '^/api/v1/namespaces/default/configmaps\$'" "4\n"
k8s_ctl clear-log
k8s_ctl fault --method GET --path '^/api/v1/namespaces/default/configmaps$' --query 'continue=' --count 1 --status 410 --reason Expired >/dev/null
testing "expired continue token: the list starts over and completes" \
	"$KT --kubeconfig $D/kubeconfig-admin --page 3 list /api/v1/namespaces/default/configmaps | head -1; k8s_ctl count GET '^/api/v1/namespaces/default/configmaps\$' --status 410" "items 8\n1\n"
k8s_ctl clear-faults
# 24 objects of 1.4 MiB (under the API's 1.5 MiB each) make a 34 MiB page,
# over the client's 32 MiB body cap: the page is asked for again, half as long
for i in $(seq -w 0 23); do
	python3 -c 'import json,sys; print(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "big" + sys.argv[1], "namespace": "kube-public"}, "data": {"d": "x" * (1400 * 1024)}}))' $i |
		k8s_ctl put /api/v1/namespaces/kube-public/configmaps/big$i - >/dev/null
done
testing "a page over the body cap: asked for again with half the limit, every item listed" \
	"$KT --kubeconfig $D/kubeconfig-admin --page 50 list /api/v1/namespaces/kube-public/configmaps 2>$W/big.err | head -1; grep -c 'asking for 12 items a page' $W/big.err" "items 24\n1\n"
for i in $(seq -w 0 23); do k8s_ctl delete /api/v1/namespaces/kube-public/configmaps/big$i >/dev/null; done
k8s_ctl clear-log
k8s_ctl fault --method PATCH --path "^$P\$" --count 1 --close >/dev/null
testing "PATCH cut off after it was sent: not resent either" \
	"$KT --kubeconfig $D/kubeconfig-admin request PATCH $P application/merge-patch+json '{\"metadata\":{\"labels\":{\"p\":\"1\"}}}' >/dev/null 2>&1; echo \$?; k8s_ctl count PATCH '^$P\$'" "1\n1\n"
k8s_ctl clear-log
k8s_ctl fault --method PATCH --path "^$P\$" --count 1 --status 500 >/dev/null
testing "PATCH answered 500: not resent (it may have been applied)" \
	"$KT --kubeconfig $D/kubeconfig-admin request PATCH $P application/merge-patch+json '{\"metadata\":{\"labels\":{\"p\":\"2\"}}}' 2>/dev/null | head -1; k8s_ctl count PATCH '^$P\$'" "500 InternalError\n1\n"
k8s_ctl clear-log
k8s_ctl fault --method PATCH --path "^$P\$" --count 1 --status 503 >/dev/null
testing "PATCH answered 503: retried (it was not applied)" \
	"$KT --kubeconfig $D/kubeconfig-admin request PATCH $P application/merge-patch+json '{\"metadata\":{\"labels\":{\"p\":\"3\"}}}' 2>/dev/null | head -1; k8s_ctl count PATCH '^$P\$'" "200 \n2\n"
k8s_ctl clear-faults

# 3. Tokens: rotated by a kubelet-style symlink swap, the old one revoked.
k8s_ctl clear-log
old=$(cat "$D/tokens/node1")
"$KT" --kubeconfig "$D/kubeconfig-node1" request GET $P >/dev/null 2>"$W/tok.log" &
wait $!
new=$(k8s_ctl rotate-token node1)
testing "token file is a symlink that was swapped" "[ -L $D/tokens/node1 ] && [ \"\$(cat $D/tokens/node1)\" = '$new' ] && echo swapped" "swapped\n"
testing "old token now refused by the server" \
	"curl -s -o /dev/null -w '%{http_code}' --cacert $D/ca.crt -H 'Authorization: Bearer $old' $K8S_URL$P" "401"
# A long-lived client across a rotation (401, re-read, retry) is the dt-labeller
# controller in tests/applets/dt-labeller-k8s.sh; here a fresh client reads the new file.
k8s_ctl rotate-token node1 >/dev/null
testing "after rotation, a fresh client uses the new file" "$KT --kubeconfig $D/kubeconfig-node1 request GET $P 2>>$W/tok.log | head -1" "200 \n"
testing "no token text in any log line" "cat $W/tok.log $W/err $D/server.log 2>/dev/null | grep -c -e '$old' -e '$new' -e '$(cat "$D/admin.token")'" "0\n"

# 4. Watch: the mirrored state equals the server's after updates, deletes,
#    dropped streams (connection closed, and ended cleanly) and a history
#    reset; with one event per chunk, events split over chunks, and many
#    events in one chunk.
watch_reqs() { k8s_ctl count watch '^/api/v1/nodes$' --status 200 2>/dev/null || echo 0; }
# wait_watch [N]: until a watch stream is open, and more than N have been
# opened in all: a dropped stream may still be counted open for a moment, and
# what follows must not start before the client has really watched again
# (the sanitizer build is slow to start, more so on a busy machine).
wait_watch() {
	local i=0 n=${1:--1}
	until [ "$(k8s_ctl watches 2>/dev/null)" -ge 1 ] 2>/dev/null && [ "$(watch_reqs)" -gt "$n" ]; do
		i=$((i + 1))
		[ $i -lt 150 ] || return 1
		sleep 0.1
	done
}
watch_scenario() { # MODE KUBECONFIG
	local mode=$1 kc=$2 mpid n
	for n in w1 w2 w3; do
		printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{"n":"%s"}}}' $n $n | k8s_ctl put /api/v1/nodes/$n - >/dev/null
	done
	"$KT" --kubeconfig "$kc" mirror /api/v1/nodes 120 >"$W/mirror.out" 2>"$W/mirror.err" &
	mpid=$!
	wait_watch
	for n in 1 2 3 4 5 6; do # a burst: queued together in batch mode
		printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"w1","labels":{"n":"changed-%s"}}}' $n | k8s_ctl put /api/v1/nodes/w1 - >/dev/null
	done
	k8s_ctl delete /api/v1/nodes/w2 >/dev/null
	# the burst came over the stream (the mirror says each event it applies)
	wait_for 30 grep -qx 'event DELETED w2' "$W/mirror.err" || fail "watch ($mode chunks): the burst arrives"
	n=$(watch_reqs)
	k8s_ctl drop-watches --end >/dev/null    # a clean end: re-watch from the last RV
	wait_watch "$n"
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"w4","labels":{"n":"new"}}}' | k8s_ctl put /api/v1/nodes/w4 - >/dev/null
	wait_for 30 grep -qx 'event ADDED w4' "$W/mirror.err" || fail "watch ($mode chunks): w4 arrives"
	n=$(watch_reqs)
	k8s_ctl drop-watches >/dev/null          # connection closed: list again
	wait_watch "$n"
	# the history goes and the stream ends cleanly in one step (two steps would
	# let a bookmark with the new resourceVersion slip in between on a busy
	# machine): the re-watch from the old resourceVersion gets 410, then a relist
	k8s_ctl reset-history --end >/dev/null
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"w3","labels":{"n":"after-reset"}}}' | k8s_ctl put /api/v1/nodes/w3 - >/dev/null
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"zz-stop"}}' | k8s_ctl put /api/v1/nodes/zz-stop - >/dev/null
	wait $mpid
	k8s_ctl get /api/v1/nodes | python3 -c '
import json, sys
for o in sorted(json.load(sys.stdin)["items"], key=lambda o: o["metadata"]["name"]):
    print(o["metadata"]["name"], json.dumps(o["metadata"].get("labels", {}), separators=(",", ":")))
' >"$W/server.state"
	testing "watch ($mode chunks): mirror ends with the server's state" "diff $W/server.state $W/mirror.out && echo same" "same\n"
	testing "watch ($mode chunks): a cleanly ended watch is resumed, not relisted" "grep -c '^rewatches [1-9]' $W/mirror.err" "1\n"
	testing "watch ($mode chunks): closed connection and 410 lead to relists" "awk '/^relists/ { print (\$2 >= 3) }' $W/mirror.err" "1\n"
	testing "watch ($mode chunks): the 410 came from a re-watch" "k8s_ctl log --json | grep -c '\"watch_error\": *410' | awk '{ print (\$1 >= 1) }'" "1\n"
}
watch_scenario event "$D/kubeconfig-admin"
testing "watch requests carried bookmarks and a timeout" \
	"k8s_ctl log | grep -c 'watch=1.*allowWatchBookmarks=true.*timeoutSeconds=' | awk '{ print (\$1 >= 3) }'" "1\n"
for mode in split batch; do
	k8s_stop
	mkdir -p "$W/k8s-$mode" && cp -r "$D/pki" "$W/k8s-$mode/"
	k8s_start "$W/k8s-$mode" --watch-chunks $mode || { fail "server with --watch-chunks $mode starts"; continue; }
	watch_scenario $mode "$K8S_DIR/kubeconfig-admin"
done

done_testing
