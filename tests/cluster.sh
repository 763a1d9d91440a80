# tests/cluster.sh: a small cluster for the fault and soak tests (source it
# after tests/lib/testing.sh). Every daemon of featurebox runs against one
# test API server (tests/k8s) at once, as they would on a real node:
#   node1: nfd-worker (publishing its NodeFeature), gpu-node-agent (the gpu4
#          fixture: four GPUs, nvidia), dt-labeller in controller mode (the
#          rpi4 devicetree) — all with node1's rotating token file;
#   node2: nfd-worker --standalone, labelling its own Node;
#   nfd-master, with a token file of its own (user fb-master), and one
#   NodeFeatureRule whose label value the tests change.
# The server keeps its state across restarts (--keep-state), as an apiserver
# over the same etcd does.
#
#   cluster_start          server, objects, kubeconfigs, then every daemon
#   cluster_round K        the inputs of round K: features.d of both workers
#                          and the rule's label value (K is a small number)
#   cluster_expect K       0 when the cluster holds what round K asks for
#                          (prints what differs otherwise)
#   cluster_alive          0 when every daemon still runs (names the dead)
#   cluster_stop           SIGTERM every daemon; 0 when each exited 0 in 10 s
#   server_down / server_up [ARGS]  stop the API server / start it again on
#                          the same port with the same state
# Daemon logs: $W/<name>.log. PIDs: $pid_<name>. Names: $DAEMONS.

NSP=node-feature-discovery
GNS=d8-nvidia-gpu
NFAPI=/apis/nfd.k8s-sigs.io/v1alpha1
PGAPI=/apis/gpu.deckhouse.io/v1alpha1/physicalgpus
DAEMONS="master worker standalone gpu dt"
CL_FIX=$FB_TOP/tests/fixtures

server_down() {
	k8s_stop
}

server_up() {
	k8s_start "$CL_K8S" --keep-state --port "$CL_PORT" --bookmark-interval 1 "$@"
}

# The master's kubeconfig: its own user, a kubelet-style token file.
cl_master_kubeconfig() {
	cat >"$W/kubeconfig-master" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $K8S_URL
    certificate-authority: $K8S_DIR/ca.crt
users:
- name: fb-master
  user:
    tokenFile: $K8S_DIR/tokens/fb-master
contexts:
- name: test
  context:
    cluster: test
    user: fb-master
current-context: test
EOF
}

cl_rule() { # K
	printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeatureRule","metadata":{"name":"fault-rule"},"spec":{"rules":[{"name":"nvidia","labels":{"fault.example.com/rule":"r%s"},"matchFeatures":[{"feature":"pci.device","matchExpressions":{"vendor":{"op":"In","value":["10de"]}}}]}]}}' "$1" |
		k8s_ctl put $NFAPI/nodefeaturerules/fault-rule - >/dev/null
}

cluster_round() { # K
	echo "fault-round=$1" >"$W/fd1/.round.tmp" && mv "$W/fd1/.round.tmp" "$W/fd1/round"
	echo "fault-round2=$1" >"$W/fd2/.round.tmp" && mv "$W/fd2/.round.tmp" "$W/fd2/round"
	[ -n "${K8S_PID:-}" ] && cl_rule "$1"
	CL_ROUND=$1
}

cl_daemon() { # NAME COMMAND...
	local name=$1
	shift
	"$@" >"$W/$name.log" 2>&1 &
	eval "pid_$name=$!"
}

cluster_start() {
	k8s_start "$W/k8s" --keep-state --bookmark-interval 1 || return 1
	CL_K8S=$K8S_DIR
	CL_PORT=$K8S_PORT
	local ns
	for ns in $NSP $GNS; do
		printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $ns |
			k8s_ctl put /api/v1/namespaces/$ns - >/dev/null || return 1
	done
	for ns in node1 node2; do
		printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{"kubernetes.io/hostname":"%s","team":"blue"}}}' $ns $ns |
			k8s_ctl put /api/v1/nodes/$ns - >/dev/null || return 1
	done
	k8s_ctl rotate-token fb-master >/dev/null || return 1
	echo '[{"verbs":["*"],"resources":["*"]}]' | k8s_ctl set-rules fb-master - >/dev/null || return 1
	cl_master_kubeconfig
	mkdir -p "$W/fd1" "$W/fd2" "$W/root1" "$W/root2/sys" "$W/cd"
	cp -r "$CL_FIX/sysfs/gpu4/." "$W/root1/"
	dtc -q -I dts -O dtb -o "$W/rpi4.dtb" "$CL_FIX/dt/rpi4.dts" || return 1
	echo "nvidia-vendor=present" >"$W/fd1/static"
	cluster_round 0
	# what a node labelled by every daemon carries that never changes
	CL_STATIC=$(
		{
			$FB nfd-worker --oneshot --no-publish --config /nonexistent --node-name node1 --host-prefix "$W/root1/" \
				--features-dir "$W/fd1" --feature-sources=pci,local --label-sources=pci,local 2>/dev/null |
				grep -v '^fault-round=' | sed 's|^\([^/]*\)$|feature.node.kubernetes.io/\1|'
			$FB dt-labeller -d --dtb "$W/rpi4.dtb" 2>/dev/null | sed -n 's/^\(beta\.devicetree\.org\/[^:]*\): \(.*\)/\1=\2/p'
			echo "gpu.deckhouse.io/vendor=nvidia"
			echo "gpu.deckhouse.io/vendor.nvidia=true"
		} | sort
	)
	local w1="--kubeconfig $K8S_DIR/kubeconfig-node1 --node-name node1"
	# --instance: the standalone worker on node2 keeps nfd-master's
	# bookkeeping annotations itself; a master sharing the cluster with it
	# needs its own (upstream's several-masters setting), or its resync takes
	# node2's labels for its own and removes them (node2 has no NodeFeature)
	cl_daemon master $FB nfd-master --kubeconfig "$W/kubeconfig-master" --config /nonexistent --port 0 --instance fb \
		--resync-period "${CL_RESYNC:-1h}" --gc-interval "${CL_GC:-1h}"
	cl_daemon worker env KUBERNETES_NAMESPACE=$NSP $FB nfd-worker $w1 --config /nonexistent --port 0 \
		--host-prefix "$W/root1/" --features-dir "$W/fd1" --custom-dir "$W/cd" \
		--feature-sources=pci,local --label-sources=pci,local --owner-refs= \
		--options "{core: {sleepInterval: ${CL_SLEEP:-5s}}}"
	cl_daemon standalone $FB nfd-worker --standalone --kubeconfig "$K8S_DIR/kubeconfig-node2" --node-name node2 \
		--config /nonexistent --port 0 --host-prefix "$W/root2/" --features-dir "$W/fd2" --custom-dir "$W/cd" \
		--feature-sources=local --label-sources=local --options "{core: {sleepInterval: ${CL_SLEEP:-5s}}}"
	cl_daemon gpu env KUBERNETES_NAMESPACE=$GNS $FB gpu-node-agent $w1 --host-prefix "$W/root1/" --port 0 \
		--resync "${CL_RESYNC_GPU:-30s}"
	cl_daemon dt $FB dt-labeller $w1 --dtb "$W/rpi4.dtb" --resync "${CL_RESYNC_DT:-30s}"
}

# The cluster state round K asks for, checked from the server's objects.
cluster_expect() { # K
	python3 - "$1" "$CL_STATIC" "$(k8s_ctl get /api/v1/nodes)" "$(k8s_ctl get $PGAPI)" \
		"$(k8s_ctl get $NFAPI/namespaces/$NSP/nodefeatures)" <<'PY'
import json, sys
k, static = sys.argv[1], sys.argv[2].split()
nodes = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in json.loads(sys.argv[3])["items"]}
bad = []
want1 = dict(s.split("=", 1) for s in static)
want1["feature.node.kubernetes.io/fault-round"] = k
want1["fault.example.com/rule"] = "r" + k
want1["team"] = "blue"
want2 = {"feature.node.kubernetes.io/fault-round2": k, "team": "blue"}
for node, want in (("node1", want1), ("node2", want2)):
    got = nodes.get(node)
    if got is None:
        bad.append("%s: missing" % node)
        continue
    for key, v in sorted(want.items()):
        if got.get(key) != v:
            bad.append("%s: %s=%s, want %s" % (node, key, got.get(key), v))
gpus = sorted(o["metadata"]["name"] for o in json.loads(sys.argv[4])["items"])
if gpus != ["node1-0000-17-00-0", "node1-0000-31-00-0", "node1-0000-b1-00-0", "node1-0000-ca-00-0"]:
    bad.append("PhysicalGPUs: %s" % gpus)
nfs = {o["metadata"]["name"]: o for o in json.loads(sys.argv[5])["items"]}
if "node1" not in nfs or nfs["node1"]["spec"]["labels"].get("fault-round") != k:
    bad.append("NodeFeature node1: %s" % (nfs.get("node1", {}).get("spec", {}).get("labels")))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

# Labels a write took away or changed that round K's inputs do not explain,
# and deletes of objects that should stay, from the request log since SEQ.
cluster_log_ok() { # SINCE
	k8s_ctl log --json --since "$1" | python3 -c '
import json, sys
bad = []
moving = {"feature.node.kubernetes.io/fault-round", "feature.node.kubernetes.io/fault-round2",
          "fault.example.com/rule"}
for e in json.load(sys.stdin):
    l = e.get("labels") or {}
    what = "%s %s %s (%s)" % (e["seq"], e["method"], e["path"], e.get("user"))
    if l.get("removed"):
        bad.append("%s removed %s" % (what, l["removed"]))
    if set(l.get("changed", [])) - moving:
        bad.append("%s changed %s" % (what, sorted(set(l["changed"]) - moving)))
    if e["method"] == "DELETE" and (e.get("status") or 0) < 300 and e.get("status") != 0:
        bad.append("%s: status %s" % (what, e.get("status")))
print("\n".join(bad))
sys.exit(1 if bad else 0)'
}

cluster_alive() {
	local n p st dead=
	for n in $DAEMONS; do
		eval "p=\$pid_$n"
		st=
		read -r _ _ st _ 2>/dev/null <"/proc/$p/stat"
		[ -n "$st" ] && [ "$st" != Z ] || dead="$dead $n"
	done
	[ -z "$dead" ] || { echo "exited:$dead"; return 1; }
}

cluster_stop() {
	local n p rc bad=
	for n in $DAEMONS; do
		eval "p=\$pid_$n"
		kill -TERM "$p" 2>/dev/null
	done
	for n in $DAEMONS; do
		eval "p=\$pid_$n"
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p"
		rc=$?
		[ $rc = 0 ] || bad="$bad $n:$rc"
	done
	[ -z "$bad" ] || { echo "exit status:$bad"; return 1; }
}
