# The applets against a real control plane: kube-apiserver 1.20 built from
# Debian's kubernetes source package and Debian's etcd, started by
# tests/k8s/real/controlplane with Node,RBAC authorization and the
# NodeRestriction admission plugin. The CRDs of deploy/base/crds get the real
# structural-schema validation and pruning; each applet runs under its
# ServiceAccount and the RBAC of deploy/base/rbac (a token from the
# TokenRequest API), and a node acts with its real node identity
# (system:node:NAME). The stand-in server (tests/k8s/server.py) stays for
# fault injection.
set -u
. "$FB_TOP/tests/lib/testing.sh"
SUITE=k8s/real
FB=${FBBIN:-$FB_TOP/build/featurebox}
CP=$FB_TOP/tests/k8s/real/controlplane
D=$W/cp
PIDS=
cleanup() {
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	"$CP" stop "$D" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
[ -n "${FB_REAL_KEEP:-}" ] && trap 'for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done; "$CP" stop "$D"' EXIT

if ! "$CP" start "$D" node1 node2 >"$W/start.log" 2>&1; then
	fail "the control plane starts (tests/k8s/real/controlplane): $(tail -c 800 "$W/start.log" | tr '\n' ' ')"
	exit 1
fi
pass "etcd and kube-apiserver ($("$(cat "$D/kube-apiserver-path")" --version 2>&1)) start, /readyz ok"

# daemon VAR LOG CMD...: CMD in the background, its output in LOG, its pid in
# VAR (and in PIDS, killed on exit); end it with testing.sh's stop (bounded)
daemon() {
	local v=$1 log=$2
	shift 2
	"$@" >"$log" 2>&1 &
	printf -v "$v" '%s' $!
	PIDS="$PIDS $!"
}
K() { kubectl --kubeconfig "$D/kubeconfig-admin" "$@"; }
KN() { # NODE ARGS...: as system:node:NODE
	local n=$1
	shift
	kubectl --kubeconfig "$D/kubeconfig-node-$n" "$@"
}
NS=node-feature-discovery
GPUNS=d8-nvidia-gpu
NFAPI=/apis/nfd.k8s-sigs.io/v1alpha1

# sa_kubeconfig NS SA FILE: a kubeconfig for the ServiceAccount, with a token
# from the TokenRequest API (an hour) and NS as its namespace (mode 600)
sa_kubeconfig() {
	local tok
	(umask 077 && : >"$3")
	tok=$(printf '%s' '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}' |
		K create --raw "/api/v1/namespaces/$1/serviceaccounts/$2/token" -f - |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["status"]["token"])') || return 1
	cat >"$3" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: real
		  cluster: {server: "$(cat "$D/url")", certificate-authority: "$D/ca.crt"}
		users:
		- name: $2
		  user: {token: "$tok"}
		contexts:
		- name: real
		  context: {cluster: real, user: $2, namespace: $1}
		current-context: real
	EOF
}

# jget PATH EXPR [ARG]...: python expression EXPR over the object at PATH (as
# admin), printed; the ARGs are sys.argv[1:] there
jget() {
	local p=$1 e=$2
	shift 2
	K get --raw "$p" | python3 -c 'import json, sys; o = json.load(sys.stdin); sys.argv = sys.argv[1:]; print(eval(sys.argv[0]))' "$e" "$@"
}

# 1. The CRDs, and the custom resource that crashed a stock build
if K apply -k "$FB_TOP/deploy/base/crds" >"$W/out" 2>&1 &&
	K wait --for condition=established --timeout=120s crd --all >>"$W/out" 2>&1; then
	pass "deploy/base/crds: applied and established ($(grep -c created "$W/out") CRDs)"
else
	fail "deploy/base/crds: $(head -c 600 "$W/out")"
fi
K create namespace probe >/dev/null 2>&1
nf() { # NAME NODE EXTRA-SPEC-JSON
	printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"%s","namespace":"probe","labels":{"nfd.node.kubernetes.io/node-name":"%s"}},"spec":%s}' "$1" "$2" "$3"
}
if nf first node9 '{"labels":{"example.com/a":"1"},"unknownField":"x","features":{"flags":{"f":{"elements":{"x":{}}}},"attributes":{},"instances":{},"extra":1}}' |
	K create -f - >"$W/out" 2>&1 && K get --raw /readyz >/dev/null 2>&1; then
	pass "the first custom resource is stored and the API server lives (Debian's reflect2 1.0.2 in the build)"
else
	fail "creating the first NodeFeature: $(head -c 400 "$W/out"); $(tail -n 5 "$D/apiserver.log" | tr '\n' ' ' | head -c 400)"
fi
got=$(jget "$NFAPI/namespaces/probe/nodefeatures/first" 'sorted(o["spec"]) + sorted(o["spec"]["features"])')
if [ "$got" = "['features', 'labels', 'attributes', 'flags', 'instances']" ]; then
	pass "structural pruning: unknown fields of a NodeFeature are dropped (spec.unknownField, spec.features.extra)"
else
	fail "structural pruning: the stored spec has $got"
fi
if nf bad node9 '{"labels":{"example.com/a":5}}' | K create -f - >"$W/out" 2>&1; then
	fail "a NodeFeature with a number as a label value is accepted"
elif grep -q 'Invalid value' "$W/out"; then
	pass "validation: a number as a label value is refused (422 Invalid value)"
else
	fail "a bad NodeFeature is refused, but not for its schema: $(head -c 300 "$W/out")"
fi

# 2. The manifests: the default and gpu overlays (namespaces, ServiceAccounts,
# RBAC, workloads that nothing runs here: no scheduler, no kubelet)
for o in default gpu; do
	if K apply -k "$FB_TOP/deploy/overlays/$o" >"$W/out" 2>&1; then
		pass "kubectl apply -k deploy/overlays/$o"
	else
		fail "kubectl apply -k deploy/overlays/$o: $(grep -v '^[a-z].* \(created\|unchanged\|configured\)$' "$W/out" | head -c 600)"
	fi
done
for sa in $NS:nfd-worker $NS:nfd-master $NS:nfd-gc $GPUNS:gpu-node-agent $GPUNS:vfio-switch; do
	IFS=: read -r ns name <<<"$sa"
	if sa_kubeconfig "$ns" "$name" "$W/kc-$name" 2>"$W/err"; then
		pass "a token for ServiceAccount $ns/$name from the TokenRequest API"
	else
		fail "TokenRequest for $ns/$name: $(head -c 300 "$W/err")"
	fi
done

# 3. The nodes register themselves, as kubelets do (NodeRestriction: its own
# Node only)
for n in node1 node2; do
	if printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{"admin.example.com/rack":"r1"}}}' "$n" |
		KN "$n" create -f - >"$W/out" 2>&1; then
		pass "system:node:$n creates its own Node"
	else
		fail "system:node:$n creates its Node: $(head -c 300 "$W/out")"
	fi
done
if KN node1 annotate node node2 example.com/x=y >"$W/out" 2>&1; then
	fail "system:node:node1 may annotate node2"
elif grep -qi 'forbidden' "$W/out"; then
	pass "NodeRestriction: system:node:node1 cannot annotate node2 (forbidden)"
else
	fail "node1 annotating node2 fails, but not as forbidden: $(head -c 300 "$W/out")"
fi

# 4. nfd-worker under its ServiceAccount: its NodeFeature, as the real server
# validates and prunes it
mkdir -p "$W/host" "$W/empty"
cp -r "$FB_TOP/tests/fixtures/nfd/x86-server/." "$FB_TOP/tests/fixtures/sysfs/gpuserver/." "$W/host/"
worker() { # NODE KUBECONFIG [ARGS]
	local n=$1 kc=$2
	shift 2
	"$FB" nfd-worker --oneshot --kubeconfig "$kc" --node-name "$n" --host-prefix "$W/host/" \
		--features-dir "$W/empty" --config "$W/none.conf" --port 0 "$@"
}
if worker node1 "$W/kc-nfd-worker" >"$W/out" 2>&1; then
	pass "nfd-worker --oneshot as ServiceAccount nfd-worker publishes node1's NodeFeature"
else
	fail "nfd-worker --oneshot as nfd-worker: $(tail -c 600 "$W/out")"
fi
"$FB" nfd-worker --oneshot --no-publish --node-name node1 --host-prefix "$W/host/" --features-dir "$W/empty" \
	--config "$W/none.conf" 2>/dev/null | sort >"$W/labels.want"
jget "$NFAPI/namespaces/$NS/nodefeatures/node1" \
	'"\n".join(sorted(k + "=" + v for k, v in o["spec"]["labels"].items()))' >"$W/labels.got" 2>"$W/err"
if [ -s "$W/labels.want" ] && cmp -s "$W/labels.want" "$W/labels.got"; then
	pass "the stored NodeFeature node1 holds the worker's $(wc -l <"$W/labels.want") labels (nothing pruned)"
else
	fail "the stored NodeFeature's labels differ from --no-publish's: $(diff "$W/labels.want" "$W/labels.got" | head -c 400) $(head -c 200 "$W/err")"
fi
t "the stored NodeFeature node1: features.flags/attributes/instances and the node-name label survive pruning" \
	jget "$NFAPI/namespaces/$NS/nodefeatures/node1" \
	'1 / (o["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == "node1" and len(o["spec"]["features"]["flags"]) > 0 and len(o["spec"]["features"]["attributes"]) > 0 and len(o["spec"]["features"]["instances"]) > 0)'

# One rule less: each applet's role without one rule it needs fails the
# applet, saying 403. less_rule KIND NS NAME RESOURCE VERB drops VERB on
# RESOURCE from the role; restore puts the role back as it was.
less_rule() {
	local ns=()
	[ -n "$2" ] && ns=(-n "$2")
	K get "$1" "${ns[@]}" "$3" -o json >"$W/role.orig.json"
	# the role as read, less the server's metadata; then without the verb
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
    r["metadata"].pop(k, None)
json.dump(r, open(sys.argv[1], "w"))
for x in r["rules"]:
    if sys.argv[3] in x["resources"] and sys.argv[4] in x["verbs"]:
        x["verbs"].remove(sys.argv[4])
r["rules"] = [x for x in r["rules"] if x["verbs"]]
json.dump(r, open(sys.argv[2], "w"))' "$W/role.orig.json" "$W/role.less.json" "$4" "$5"
	K replace -f "$W/role.less.json" >/dev/null
}
restore() { K replace -f "$W/role.orig.json" >/dev/null; }
# RBAC is enforced at once, but say so through the API: the SA's own view
cannot() { # KUBECONFIG VERB RESOURCE [NS]
	[ "$(kubectl --kubeconfig "$1" auth can-i "$2" "$3" ${4:+-n "$4"} 2>/dev/null)" = no ]
}
refused() { # NAME LOGFILE
	if grep -q '403' "$2"; then pass "$1"; else fail "$1: no 403 in $(tail -c 300 "$2")"; fi
}
# nfd-worker's Role without create on nodefeatures: its first publish fails
less_rule role $NS nfd-worker nodefeatures create
K delete nodefeature -n $NS node1 >/dev/null 2>&1
wait_for 30 cannot "$W/kc-nfd-worker" create nodefeatures.nfd.k8s-sigs.io $NS
if worker node1 "$W/kc-nfd-worker" >"$W/out" 2>&1; then
	fail "nfd-worker publishes with create on nodefeatures removed from its Role"
else
	refused "nfd-worker without create on nodefeatures: the run fails, saying 403" "$W/out"
fi
restore
worker node1 "$W/kc-nfd-worker" >"$W/out" 2>&1 || fail "nfd-worker with its Role restored: $(tail -c 300 "$W/out")"

# audited VERB URI-REGEX USER: requests in the API server's audit log
audited() {
	python3 -c '
import json, re, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("stage") == "ResponseComplete" and e["verb"] == sys.argv[2] and \
            re.search(sys.argv[3], e["requestURI"]) and e["user"]["username"] == sys.argv[4]:
        n += 1
print(n)' "$D/audit.log" "$@"
}

# 5. nfd-master under its ServiceAccount, with leader election on a real
# Lease, listing in pages of 25 (120 more Nodes: continue tokens)
for i in $(seq 1 120); do
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"filler-%03d"}}\n' "$i"
done | K create -f - >/dev/null 2>&1 || fail "creating 120 filler Nodes"
daemon master "$W/master.log" \
	"$FB" nfd-master --kubeconfig "$W/kc-nfd-master" --enable-leader-election --port 0 --informer-page-size 25
lease_holder() { jget "/apis/coordination.k8s.io/v1/namespaces/$NS/leases/nfd-master.nfd.kubernetes.io" 'o["spec"]["holderIdentity"]'; }
if wait_for 120 lease_holder; then
	pass "nfd-master takes the Lease nfd-master.nfd.kubernetes.io (holder $(lease_holder))"
else
	fail "nfd-master holds no Lease after 120 s: $(tail -c 400 "$W/master.log")"
fi
has_label() { # NODE KEY=VALUE
	jget "/api/v1/nodes/$1" 'o["metadata"].get("labels", {}).get(sys.argv[1].split("=")[0])' "$2" 2>/dev/null |
		grep -qx "${2#*=}"
}
not_label() { # NODE KEY
	[ "$(jget "/api/v1/nodes/$1" 'o["metadata"].get("labels", {}).get(sys.argv[1])' "$2")" = None ]
}
if wait_for 120 has_label node1 feature.node.kubernetes.io/pci-0302_10de.present=true; then
	pass "nfd-master labels node1 from its NodeFeature (a JSON patch the real server applies)"
else
	fail "node1 not labelled after 120 s: $(K get node node1 -o json | head -c 300); $(tail -c 400 "$W/master.log")"
fi
t "the admin's label on node1 is kept" has_label node1 admin.example.com/rack=r1
SAM=system:serviceaccount:$NS:nfd-master
pages=$(audited list '^/api/v1/nodes\?.*continue=' "$SAM")
listed=$(sed -n 's/.*everything listed: \([0-9]*\) nodes.*/\1/p' "$W/master.log" | head -n 1)
# (its count also takes the nodes that only have a NodeFeature: node9's in "probe")
if [ "$pages" -ge 4 ] && [ "${listed:-0}" -ge 122 ]; then
	pass "nfd-master lists the 122 Nodes in pages of 25: $pages requests with the real server's continue tokens"
else
	fail "nfd-master's paged Node list: $pages continued requests; $(grep 'everything listed' "$W/master.log" | head -n 1)"
fi

# The node's own identity claims an admin's label as NFD's through its own
# annotations (NodeRestriction lets a node write those). A label the node may
# remove itself (admin.example.com/rack) is no escalation; one in
# node-restriction.kubernetes.io, which the real NodeRestriction keeps the
# node from touching, nfd-master must keep (core/nodelabels.c, issue 16).
K label node node1 node-restriction.kubernetes.io/zone=secure >/dev/null 2>&1 ||
	fail "the admin labels node1 node-restriction.kubernetes.io/zone=secure"
if KN node1 label node node1 node-restriction.kubernetes.io/zone- >"$W/out" 2>&1; then
	fail "system:node:node1 may remove its node-restriction.kubernetes.io label itself"
elif grep -qi 'forbidden' "$W/out"; then
	pass "NodeRestriction: system:node:node1 cannot remove node-restriction.kubernetes.io/zone from itself"
else
	fail "node1 removing its node-restriction label fails, but not as forbidden: $(head -c 300 "$W/out")"
fi
if KN node1 annotate --overwrite node node1 \
	nfd.node.kubernetes.io/feature-labels=node-restriction.kubernetes.io/zone,feature.node.kubernetes.io/pci-0302_10de.present \
	>"$W/out" 2>&1; then
	pass "system:node:node1 rewrites its own Node's nfd annotations (allowed by NodeRestriction)"
else
	fail "node1 annotating itself: $(head -c 300 "$W/out")"
fi
# the worker republishes with the cpu labels only: once the master has
# removed the pci label it owned, it has acted on the claim too
worker node1 "$W/kc-nfd-worker" --label-sources cpu >"$W/out" 2>&1 ||
	fail "nfd-worker --label-sources cpu: $(tail -c 300 "$W/out")"
if ! wait_for 120 not_label node1 feature.node.kubernetes.io/pci-0302_10de.present; then
	fail "nfd-master did not remove the pci label node1 no longer has within 120 s: $(tail -c 400 "$W/master.log")"
elif has_label node1 node-restriction.kubernetes.io/zone=secure; then
	pass "nfd-master keeps the admin's node-restriction label that node1's own annotation claimed"
else
	fail "nfd-master removed node-restriction.kubernetes.io/zone after node1 claimed it: $(K get node node1 -o json | head -c 400)"
fi

# 6. The API server restarted over the same etcd: the master's watches come
# back and it goes on labelling
if "$FB_TOP/tests/k8s/real/controlplane" restart "$D" >"$W/out" 2>&1; then
	pass "kube-apiserver restarted over the same etcd"
else
	fail "kube-apiserver restart: $(tail -c 400 "$W/out")"
fi
worker node1 "$W/kc-nfd-worker" >"$W/out" 2>&1 || fail "nfd-worker after the restart: $(tail -c 300 "$W/out")"
if wait_for 120 has_label node1 feature.node.kubernetes.io/pci-0302_10de.present=true; then
	pass "after the restart nfd-master applies node1's new NodeFeature (its watches came back)"
else
	fail "after the restart node1's pci label is not back within 120 s: $(tail -c 600 "$W/master.log")"
fi

# 7. etcd compacted past what the master has seen, then the API server
# restarted (its watch cache refilled from the compacted etcd): the master's
# watches resume from an old resourceVersion, get a real 410 Gone, list again
ETCD="$(cat "$D/etcd-url")"
rev=$(ETCDCTL_API=3 etcdctl --endpoints "$ETCD" endpoint status -w json |
	python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
relists=$(grep -c 'expired; listing again' "$W/master.log")
kill -STOP "$master" # it must not see the change before the compaction
worker node1 "$W/kc-nfd-worker" --label-sources cpu >/dev/null 2>&1 # changes etcd past what the master saw
rev2=$(ETCDCTL_API=3 etcdctl --endpoints "$ETCD" endpoint status -w json |
	python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])')
if ETCDCTL_API=3 etcdctl --endpoints "$ETCD" compact "$rev2" >"$W/out" 2>&1 &&
	"$FB_TOP/tests/k8s/real/controlplane" restart "$D" >>"$W/out" 2>&1; then
	pass "etcd compacted to revision $rev2 (from $rev) and the API server restarted"
else
	fail "etcd compaction and restart: $(tail -c 400 "$W/out")"
fi
kill -CONT "$master"
relisted() { [ "$(grep -c 'expired; listing again' "$W/master.log")" -gt "$relists" ]; }
if wait_for 120 relisted; then
	pass "nfd-master's watches get 410 Gone for a compacted resourceVersion and list again: $(grep 'expired; listing again' "$W/master.log" | tail -n 1 | sed 's/^.*] //')"
else
	fail "nfd-master saw no expired resourceVersion after the compaction: $(tail -c 600 "$W/master.log")"
fi
if wait_for 120 not_label node1 feature.node.kubernetes.io/pci-0302_10de.present; then
	pass "nfd-master applies the change it missed while its resourceVersion was compacted away"
else
	fail "node1 keeps the pci label the NodeFeature no longer has: $(tail -c 600 "$W/master.log")"
fi

stop "$master"

# 8. nfd-gc under its ServiceAccount: the NodeFeature of a node that does not exist goes
printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"gone","namespace":"%s","labels":{"nfd.node.kubernetes.io/node-name":"gone"}},"spec":{}}' $NS |
	K create -f - >/dev/null 2>&1
daemon gc "$W/gc.log" "$FB" nfd-gc --kubeconfig "$W/kc-nfd-gc" --port 0 --gc-interval 1h
nf_gone() { ! K get nodefeature -n $NS gone >/dev/null 2>&1; }
if wait_for 120 nf_gone; then
	pass "nfd-gc as ServiceAccount nfd-gc deletes the NodeFeature of a node that does not exist"
else
	fail "nfd-gc left NodeFeature gone: $(tail -c 400 "$W/gc.log")"
fi
t "nfd-gc keeps node1's NodeFeature" K get nodefeature -n $NS node1
stop "$gc"

# 9. gpu-node-agent under its ServiceAccount: PhysicalGPU objects as the real
# server validates and prunes them, and the node's vendor label
mkdir -p "$W/gpuroot"
cp -r "$FB_TOP/tests/fixtures/sysfs/gpu4/." "$W/gpuroot/"
if KUBERNETES_NAMESPACE=$GPUNS "$FB" gpu-node-agent --oneshot --kubeconfig "$W/kc-gpu-node-agent" --node-name node2 \
	--host-prefix "$W/gpuroot/" --port 0 >"$W/out" 2>&1; then
	pass "gpu-node-agent --oneshot as ServiceAccount gpu-node-agent"
else
	fail "gpu-node-agent --oneshot: $(tail -c 600 "$W/out")"
fi
KUBERNETES_NAMESPACE=$GPUNS "$FB" gpu-node-agent --oneshot --no-publish --node-name node2 --host-prefix "$W/gpuroot/" \
	2>/dev/null | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' >"$W/ngpu.want"
ngpu=$(jget /apis/gpu.deckhouse.io/v1alpha1/physicalgpus 'len([i for i in o["items"] if i["metadata"]["labels"].get("gpu.deckhouse.io/node") == "node2"])')
if [ "$ngpu" -gt 0 ] && [ "$ngpu" = "$(cat "$W/ngpu.want")" ]; then
	pass "node2's $ngpu PhysicalGPUs are stored, one per device --no-publish prints"
else
	fail "node2's PhysicalGPUs: $ngpu stored, $(cat "$W/ngpu.want") devices"
fi

# 10. dt-labeller under its ServiceAccount: the devicetree's labels on node2
dtc -I dts -O dtb -o "$W/rpi4.dtb" "$FB_TOP/tests/fixtures/dt/rpi4.dts" 2>/dev/null
"$FB" dt-labeller -d --dtb "$W/rpi4.dtb" 2>/dev/null | sed -n 's|^\(beta\.devicetree\.org/[^:]*\): \(.*\)$|\1=\2|p' | sort >"$W/dt.want"
# deploy/base/rbac/dt-labeller is in no overlay (dt-labeller's controller
# mode): applied on its own, in $NS
K kustomize "$FB_TOP/deploy/base/rbac/dt-labeller" >"$W/dt-rbac.yaml" 2>/dev/null
python3 -c '
import sys
out = []
for doc in open(sys.argv[1]).read().split("\n---\n"):
    if "kind: ServiceAccount" in doc:
        doc = doc.replace("\n  name: dt-labeller", "\n  name: dt-labeller\n  namespace: " + sys.argv[2], 1)
    doc = doc.replace("- kind: ServiceAccount\n  name: dt-labeller", "- kind: ServiceAccount\n  name: dt-labeller\n  namespace: " + sys.argv[2])
    out.append(doc)
open(sys.argv[1], "w").write("\n---\n".join(out))' "$W/dt-rbac.yaml" $NS
K apply -f "$W/dt-rbac.yaml" >"$W/out" 2>&1 || fail "deploy/base/rbac/dt-labeller: $(head -c 300 "$W/out")"
sa_kubeconfig $NS dt-labeller "$W/kc-dt-labeller" 2>/dev/null
if "$FB" dt-labeller --oneshot --kubeconfig "$W/kc-dt-labeller" --node-name node2 --dtb "$W/rpi4.dtb" >"$W/out" 2>&1; then
	pass "dt-labeller --oneshot as ServiceAccount dt-labeller"
else
	fail "dt-labeller --oneshot: $(tail -c 400 "$W/out")"
fi
jget /api/v1/nodes/node2 '"\n".join(sorted(k + "=" + v for k, v in o["metadata"]["labels"].items()))' >"$W/dt.got"
missing=$(comm -23 "$W/dt.want" "$W/dt.got")
if [ -s "$W/dt.want" ] && [ -z "$missing" ]; then
	pass "node2 carries dt-labeller's $(wc -l <"$W/dt.want") devicetree labels"
else
	fail "node2 lacks devicetree labels: $(head -c 300 <<<"$missing")"
fi

# 11. vfio-switch --update-physicalgpu under its ServiceAccount (a copy of
# the vfio fixture tree, tests/applets/fakekernel.py binding drivers): the
# PhysicalGPU's status.currentState and an Event in "default"
T=$W/vfio
cp -r "$FB_TOP/tests/fixtures/sysfs/vfio" "$T" && chmod -R u+w "$T"
daemon fk "$W/fakekernel.log" python3 "$FB_TOP/tests/applets/fakekernel.py" "$T"
wait_for 60 test -f "$T/fakekernel.ready" || fail "fakekernel.py starts"
printf '{"apiVersion":"gpu.deckhouse.io/v1alpha1","kind":"PhysicalGPU","metadata":{"name":"node1-0000-01-00-0","labels":{"gpu.deckhouse.io/node":"node1"}},"spec":{}}' |
	K create -f - >/dev/null 2>&1 || fail "creating PhysicalGPU node1-0000-01-00-0"
VS=("$FB" vfio-switch --host-prefix "$T/" --node node1 --update-physicalgpu --kubeconfig "$W/kc-vfio-switch")
if "${VS[@]}" --pci 0000:01:00.0 --to vfio-pci >"$W/out" 2>&1; then
	pass "vfio-switch --update-physicalgpu as ServiceAccount vfio-switch: 0000:01:00.0 to vfio-pci"
else
	fail "vfio-switch --update-physicalgpu: $(tail -c 400 "$W/out")"
fi
t "the PhysicalGPU's status.currentState is vfio-pci / VFIO (the status subresource)" \
	jget /apis/gpu.deckhouse.io/v1alpha1/physicalgpus/node1-0000-01-00-0 \
	'1 / (o["status"]["currentState"] == {"driver": "vfio-pci", "driverType": "VFIO"})'
t "an Event DriverSwitched on the PhysicalGPU in default" jget /api/v1/namespaces/default/events \
	'1 / any(e["reason"] == "DriverSwitched" and e["involvedObject"]["name"] == "node1-0000-01-00-0" for e in o["items"])'

# 12. One rule less for the other applets (nfd-worker's is in 4).
less_rule clusterrole "" featurebox-dt-labeller nodes patch
wait_for 30 cannot "$W/kc-dt-labeller" patch nodes
if "$FB" dt-labeller --oneshot --kubeconfig "$W/kc-dt-labeller" --node-name node1 --dtb "$W/rpi4.dtb" >"$W/out" 2>&1; then
	fail "dt-labeller labels node1 without the nodes patch rule"
else
	refused "dt-labeller without patch on nodes: the run fails, saying 403" "$W/out"
fi
restore
less_rule clusterrole "" featurebox-gpu-node-agent physicalgpus create
wait_for 30 cannot "$W/kc-gpu-node-agent" create physicalgpus.gpu.deckhouse.io
if KUBERNETES_NAMESPACE=$GPUNS "$FB" gpu-node-agent --oneshot --kubeconfig "$W/kc-gpu-node-agent" --node-name node1 \
	--host-prefix "$W/gpuroot/" --port 0 >"$W/out" 2>&1; then
	fail "gpu-node-agent creates node1's PhysicalGPUs without the create rule"
else
	refused "gpu-node-agent without create on physicalgpus: the run fails, saying 403" "$W/out"
fi
restore
less_rule clusterrole "" featurebox-vfio-switch physicalgpus/status patch
wait_for 30 cannot "$W/kc-vfio-switch" patch physicalgpus.gpu.deckhouse.io/status
"${VS[@]}" --pci 0000:01:00.0 --to default >"$W/out" 2>&1
refused "vfio-switch without patch on physicalgpus/status: the switch is done, the status update refused with 403 (a warning)" "$W/out"
restore
less_rule clusterrole "" featurebox-nfd-gc nodefeatures delete
wait_for 30 cannot "$W/kc-nfd-gc" delete nodefeatures.nfd.k8s-sigs.io $NS
printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"gone2","namespace":"%s","labels":{"nfd.node.kubernetes.io/node-name":"gone2"}},"spec":{}}' $NS |
	K create -f - >/dev/null 2>&1
# refused_daemon NAME LOG CHECK... -- CMD...: the daemon CMD logs a 403 and
# CHECK holds (what it could not do was not done); then it is stopped
refused_daemon() {
	local name=$1 log=$2 check=() pid
	shift 2
	while [ "$1" != -- ]; do check+=("$1"); shift; done
	shift
	daemon pid "$log" "$@"
	if wait_for 120 grep -q 403 "$log" && "${check[@]}" >/dev/null 2>&1; then
		pass "$name"
	else
		fail "$name: $(tail -c 300 "$log")"
	fi
	stop "$pid"
}
refused_daemon "nfd-gc without delete on nodefeatures: the NodeFeature stays, the log says 403" "$W/gc.log" \
	K get nodefeature -n $NS gone2 -- "$FB" nfd-gc --kubeconfig "$W/kc-nfd-gc" --port 0 --gc-interval 1h
restore
less_rule role $NS nfd-master leases create
wait_for 30 cannot "$W/kc-nfd-master" create leases.coordination.k8s.io $NS
K delete lease -n $NS nfd-master.nfd.kubernetes.io >/dev/null 2>&1
no_lease() { ! K get lease -n $NS nfd-master.nfd.kubernetes.io; }
refused_daemon "nfd-master without create on leases: no Lease, the log says 403" "$W/master2.log" \
	no_lease -- "$FB" nfd-master --kubeconfig "$W/kc-nfd-master" --enable-leader-election --port 0
restore
stop "$fk"

# 13. A compromised node1 with what it can really use: the nfd-worker
# ServiceAccount token of the worker Pod on it. It writes node1's NodeFeature
# with labels an admin owns or the kubelet sets, and one with 20,000 labels;
# nfd-master (its own ServiceAccount) writes none of the forbidden ones,
# refuses the big one, keeps answering /healthz, and still applies node2's
# NodeFeature.
daemon m3 "$W/master3.log" "$FB" nfd-master --kubeconfig "$W/kc-nfd-master" --port 0
wait_for 120 grep -q 'everything listed' "$W/master3.log" || fail "nfd-master starts: $(tail -c 300 "$W/master3.log")"
mport=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$W/master3.log" | head -n 1)
# put_nf_as_worker NAME LABELS-FILE: node NAME's NodeFeature with those labels,
# read and replaced (PUT) with the worker's token, the verbs its Role has
put_nf_as_worker() {
	local kw=(kubectl --kubeconfig "$W/kc-nfd-worker" -n $NS)
	"${kw[@]}" get nodefeature "$1" -o json >"$W/nf.cur.json" 2>"$W/out" || return 1
	python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
o["spec"]["labels"] = json.load(open(sys.argv[2]))
json.dump(o, open(sys.argv[3], "w"))' "$W/nf.cur.json" "$2" "$W/nf.json" &&
		"${kw[@]}" replace -f "$W/nf.json" >"$W/out" 2>&1
}
printf '%s' '{"node-restriction.kubernetes.io/zone":"evil","kubernetes.io/hostname":"evil","feature.node.kubernetes.io/hostile":"1"}' >"$W/hostile.json"
if put_nf_as_worker node1 "$W/hostile.json"; then
	pass "nfd-worker's token (node1 compromised) writes node1's NodeFeature claiming node-restriction and kubernetes.io labels"
else
	fail "writing node1's hostile NodeFeature with the worker's token: $(head -c 300 "$W/out")"
fi
if wait_for 120 has_label node1 feature.node.kubernetes.io/hostile=1; then
	if has_label node1 node-restriction.kubernetes.io/zone=secure && not_label node1 kubernetes.io/hostname; then
		pass "nfd-master applies node1's feature label but neither node-restriction.kubernetes.io/zone=evil nor kubernetes.io/hostname"
	else
		fail "nfd-master wrote a forbidden label: $(jget /api/v1/nodes/node1 'o["metadata"]["labels"]')"
	fi
else
	fail "nfd-master did not apply node1's NodeFeature: $(tail -c 400 "$W/master3.log")"
fi
# labels N FILE: N labels of about 50 bytes each
labels() {
	python3 -c '
import json, sys
print(json.dumps({"feature.node.kubernetes.io/big-%05d-%s" % (i, "x" * 10): "v" * 10 for i in range(int(sys.argv[1]))}))' "$1" >"$2"
}
# 20,000 labels (about 1.3 MB): stored, but without managed fields, which
# would take the object over etcd's 1.5 MiB (the API server drops them then)
labels 20000 "$W/big.json"
if put_nf_as_worker node1 "$W/big.json"; then
	pass "the worker's token writes a $(($(wc -c <"$W/nf.json") / 1024)) KiB NodeFeature with 20,000 labels (over the master's 10,000 cap)"
else
	fail "the 20,000-label NodeFeature: $(head -c 300 "$W/out")"
fi
t "the real server stores it without metadata.managedFields (with them it would be over etcd's 1.5 MiB)" \
	jget "$NFAPI/namespaces/$NS/nodefeatures/node1" '1 / (len(o["spec"]["labels"]) == 20000 and "managedFields" not in o["metadata"])'
if wait_for 120 grep -q "NodeFeature $NS/node1 (node node1): 20000 labels, more than 10000; refused" "$W/master3.log"; then
	pass "nfd-master refuses node1's 20,000-label NodeFeature, naming it"
else
	fail "nfd-master did not refuse the 20,000-label NodeFeature: $(tail -c 400 "$W/master3.log")"
fi
printf '{"apiVersion":"nfd.k8s-sigs.io/v1alpha1","kind":"NodeFeature","metadata":{"name":"node2","namespace":"%s","labels":{"nfd.node.kubernetes.io/node-name":"node2"}},"spec":{"labels":{"feature.node.kubernetes.io/after":"1"}}}' $NS |
	K apply -f - >/dev/null 2>&1
if wait_for 120 has_label node2 feature.node.kubernetes.io/after=1 &&
	[ "$(probe "http://127.0.0.1:$mport/healthz")" = 200 ]; then
	pass "with node1's 20,000-label NodeFeature in, nfd-master still applies node2's and answers /healthz"
else
	fail "nfd-master after the 20,000-label NodeFeature: healthz $(probe "http://127.0.0.1:$mport/healthz"); $(tail -c 400 "$W/master3.log")"
fi
stop "$m3"
[ "$fails" -eq 0 ]
