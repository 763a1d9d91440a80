# nfd-master against a hostile node (issue 16, item 2): one node's huge
# NodeFeature must not freeze the master. Acting as node1 (its token, the
# test API server's RBAC), a 1 MB NodeFeature with 40,000 labels whose values
# are "@" lookups is written ten times, each time with new names, while
# /healthz is probed without pause: every probe must be answered within 1 s,
# and another node's NodeFeature update must be applied meanwhile. Objects
# over the API's 1.5 MiB or over the label cap are refused, naming them.
. "$(dirname "$0")/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
mpids=""
trap 'for p in $mpids; do kill -9 $p 2>/dev/null; done; k8s_stop; rm -rf "$W"' EXIT

k8s_start "$W/k8s" --bookmark-interval 0.5 || { fail "test API server starts"; exit 1; }
S=$K8S_DIR
NSP=node-feature-discovery
NFAPI=/apis/nfd.k8s-sigs.io/v1alpha1
export KUBERNETES_NAMESPACE=$NSP
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
for n in node1 node2; do
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"}}' $n | k8s_ctl put /api/v1/nodes/$n - >/dev/null
done
# put_nf NAME NODE LABELS-JSON: another node's NodeFeature (written as admin)
put_nf() {
	printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"%s","namespace":"%s","labels":{"nfd.node.kubernetes.io/node-name":"%s"}},"spec":{"labels":%s}}' \
		"$1" $NSP "$2" "$3" | k8s_ctl put $NFAPI/namespaces/$NSP/nodefeatures/$1 - >/dev/null
}
label_of() { # NODE KEY: the label's value, empty when absent
	k8s_ctl get /api/v1/nodes/$1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"].get("labels",{}).get(sys.argv[1],""))' "$2"
}
has_label() { [ "$(label_of "$1" "$2")" = "$3" ]; }
# round_or_failed N: node2 shows round N, or a probe failed (stop waiting)
round_or_failed() { [ -e "$W/probe/failed" ] || has_label node2 feature.node.kubernetes.io/round "$1"; }

# nodewrite.py KIND ROUND: writes NodeFeature node1-hostile (or another name)
# as node1, over HTTPS with node1's token, the way a compromised kubelet or
# worker could. KIND "dyn": 40,000 labels whose values look up features
# ("@wROUND.fJ.e": 40,000 new names each round), about 1 MB; "many N": N
# plain labels. Creates the object or replaces it (PUT with the last
# resourceVersion, as custom resources need). Prints the HTTP status.
cat >"$W/nodewrite.py" <<'PY'
import http.client, json, ssl, sys
d, name, kind, arg = sys.argv[1:5]
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
tok = open(d + "/tokens/node1").read().strip()
host, port = open(d + "/url").read().strip().rsplit("/", 1)[1].rsplit(":", 1)
if kind == "dyn":
    labels = {"l%sx%05d" % (arg, j): "@w%s.f%05d.e" % (arg, j) for j in range(40000)}
else:
    labels = {"many%05d" % j: "1" for j in range(int(arg))}
path = "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/node-feature-discovery/nodefeatures"
obj = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
       "metadata": {"name": name, "namespace": "node-feature-discovery",
                    "labels": {"nfd.node.kubernetes.io/node-name": "node1"}},
       "spec": {"labels": labels}}
c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)
hdr = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
c.request("GET", path + "/" + name, headers=hdr)
r = c.getresponse()
cur = json.loads(r.read())
if r.status == 200:
    obj["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
    c.request("PUT", path + "/" + name, body=json.dumps(obj), headers=hdr)
else:
    c.request("POST", path, body=json.dumps(obj), headers=hdr)
r = c.getresponse()
r.read()
print(r.status, len(json.dumps(obj)))
PY
# probe.py PORT DIR: GET /healthz without pause until DIR/stop exists; keeps
# the worst latency and the probe count in DIR/worst. A probe that takes more
# than 1 s ends it at once (DIR/failed): on a frozen master the test stops
# there instead of waiting minutes.
cat >"$W/probe.py" <<'PY'
import http.client, os, sys, time
port, d = int(sys.argv[1]), sys.argv[2]
worst, n = 0.0, 0
while not os.path.exists(d + "/stop"):
    t = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/healthz")
        ok = c.getresponse().status == 200
        c.close()
    except OSError:
        ok = False
    dt = time.monotonic() - t
    n += 1
    worst = max(worst, dt)
    with open(d + "/worst.tmp", "w") as f:
        f.write("%d %d\n" % (round(worst * 1000), n))
    os.replace(d + "/worst.tmp", d + "/worst")
    if not ok or dt > 1.0:
        open(d + "/failed", "w").write("%s %.3f s\n" % ("answered" if ok else "no answer", dt))
        break
PY

$FB nfd-master --kubeconfig "$S/kubeconfig-admin" --config "$W/none.conf" --port 0 >"$W/m.log" 2>&1 &
mpid=$!
mpids="$mpids $mpid"
check "master starts and lists everything" wait_for 20 grep -q 'everything listed' "$W/m.log"
P=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$W/m.log" | head -1)
put_nf node2 node2 '{"round":"0"}'
check "node2 labelled" wait_for 15 has_label node2 feature.node.kubernetes.io/round 0

mkdir -p "$W/probe"
python3 "$W/probe.py" "$P" "$W/probe" &
ppid=$!
written=0
mid=ok
for i in 1 2 3 4 5 6 7 8 9 10; do
	[ -e "$W/probe/failed" ] && break
	st=$(python3 "$W/nodewrite.py" "$S" node1-hostile dyn "$i") || break
	case $st in 200\ * | 201\ *) written=$i ;; *) echo "write $i: $st" >&2; break ;; esac
	if [ "$i" = 5 ]; then
		# another node's update, queued behind the big object's events
		put_nf node2 node2 '{"round":"5"}'
		wait_for 15 round_or_failed 5 || mid=late
		[ -e "$W/probe/failed" ] && mid=late
	fi
done
# the last update behind all ten: applied once the master has read them all
put_nf node2 node2 '{"round":"10"}'
wait_for 120 round_or_failed 10
touch "$W/probe/stop"
wait $ppid
read -r worst probes <"$W/probe/worst" || { worst=?; probes=0; }
echo "# nfd-master's worst /healthz latency while the 40,000-label object is written ten times: $worst ms ($probes probes, FLAVOUR=$FLAVOUR)" >&2
check "the 40,000-label \"@\" object written ten times as node1, with new names each time" [ "$written" = 10 ]
check "... every /healthz probe answered within 1 s meanwhile (worst ${worst} ms, $probes probes)" \
	sh -c "! cat '$W/probe/failed' 2>/dev/null | grep ."
check "... another node's NodeFeature update applied meanwhile" [ "$mid" = ok ]
check "... and the update behind all ten" has_label node2 feature.node.kubernetes.io/round 10
check "... the master is still alive" kill -0 $mpid
if [ -e "$W/probe/failed" ]; then
	# a frozen master: the rest would only wait on it
	echo "# probe: $(cat "$W/probe/failed")" >&2
	done_testing
	exit
fi
done_testing
