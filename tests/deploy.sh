# tests/deploy.sh: the kustomize tree under deploy/ (run by tests/run).
#
# - every overlay, deploy/jobs and the bases render with `kubectl kustomize`;
# - tests/deploy_check.py checks the rendered objects (security contexts,
#   probes, resources, hostPath mounts, the one privileged Job, the image,
#   ServiceAccounts, RBAC against its table of expected rules, and that
#   build/featurebox accepts every container's arguments) ...
# - ... and fails on deliberately broken copies of deploy/ (a check that
#   cannot fail proves nothing);
# - the test API server (tests/k8s/server.py) serves exactly the CRDs of
#   deploy/base/crds/*.yaml, and follows those files when they change; its
#   YAML loader reads every file under deploy/ and every rendering as PyYAML
#   does (where PyYAML is installed).
# Needs kubectl (kustomize v5, kubectl >= 1.27); without it: FAIL under CI,
# else SKIP.
set -u
cd "${FB_TOP:?}"
. tests/lib/testing.sh
SUITE=deploy
K8S_PID=
cleanup() {
	[ -n "$K8S_PID" ] && k8s_stop
	rm -rf "$W"
}
trap cleanup EXIT

if ! command -v kubectl >/dev/null 2>&1; then
	if [ -n "${CI:-}" ]; then
		fail "kubectl is installed (needed for kubectl kustomize)"
	else
		skip "kubectl kustomize (no kubectl here)"
	fi
	exit $((fails > 0))
fi

# render DEPLOY_DIR NAME: kubectl kustomize deploy/NAME into $W/out/<name with - for />.yaml
render() {
	local top=$1 d=$2 out
	out=$W/out/$(printf '%s' "$d" | tr / -).yaml
	mkdir -p "$W/out"
	kubectl kustomize "$top/deploy/$d" >"$out" 2>"$W/err" && [ -s "$out" ]
}

APPLIED="overlays/default overlays/standalone overlays/standalone-devicetree overlays/gpu jobs base/rbac"
for d in $APPLIED base base/crds; do
	if render . "$d"; then
		pass "kubectl kustomize deploy/$d renders"
	else
		fail "kubectl kustomize deploy/$d renders ($(head -c 600 "$W/err"))"
	fi
done

renders() { for d in $APPLIED; do printf '%s ' "$W/out/$(printf '%s' "$d" | tr / -).yaml"; done; }
# The checker's own PASS/FAIL lines, one per check and rendering; with the
# release binary (tests/run runs after make) it also runs every container's
# command line with --help, so a flag the applet does not have fails here.
fbbin=()
if [ -x build/featurebox ]; then
	fbbin=(--fbbin "$PWD/build/featurebox")
else
	fail "build/featurebox is built (make), to check the containers' arguments"
fi
# shellcheck disable=SC2046
python3 tests/deploy_check.py --top . "${fbbin[@]}" --needs jobs=overlays-gpu $(renders) 2>"$W/err"
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
	fail "tests/deploy_check.py ran (exit $rc: $(tail -n 5 "$W/err" | tr '\n' ' '))"
fi

# Broken copies of deploy/: each must make the checker fail, naming the fault.
# mutate NAME FILE OLD NEW WANT: in a fresh copy, replace OLD by NEW in
# deploy/FILE (OLD must be there), render everything, and expect a FAIL line
# containing WANT.
mutate() {
	local name=$1 file=$2 old=$3 new=$4 want=$5 t=$W/mut out
	rm -rf "$t" "$W/out"
	mkdir -p "$t/tests/k8s"
	cp -R deploy "$t/deploy"
	cp tests/k8s/server.py "$t/tests/k8s/"
	if ! python3 - "$t/deploy/$file" "$old" "$new" <<-'EOF'
		import sys
		p, old, new = sys.argv[1], sys.argv[2].encode().decode("unicode_escape"), sys.argv[3].encode().decode("unicode_escape")
		s = open(p).read()
		if s.count(old) != 1:
		    sys.exit("%r occurs %d times in %s" % (old, s.count(old), p))
		open(p, "w").write(s.replace(old, new))
	EOF
	then
		fail "the checker catches: $name (the mutation no longer applies: deploy/$file changed)"
		return
	fi
	for d in $APPLIED; do
		if ! render "$t" "$d"; then
			fail "the checker catches: $name (deploy/$d does not render: $(head -c 300 "$W/err"))"
			return
		fi
	done
	# shellcheck disable=SC2046
	out=$(python3 tests/deploy_check.py --top "$t" "${fbbin[@]}" --needs jobs=overlays-gpu $(renders) 2>&1)
	if [ $? -eq 1 ] && printf '%s\n' "$out" | grep '^FAIL: ' | grep -qF -- "$want"; then
		pass "the checker catches: $name"
	else
		fail "the checker catches: $name (no FAIL naming '$want': $(printf '%s\n' "$out" | grep -v '^PASS' | head -c 600))"
	fi
}
mutate "a privileged nfd-worker" base/apps/nfd-worker/daemonset.yaml \
	'            allowPrivilegeEscalation: false\n' \
	'            allowPrivilegeEscalation: false\n            privileged: true\n' \
	"DaemonSet/nfd-worker nfd-worker is privileged"
mutate "nfd-worker running as root" base/apps/nfd-worker/daemonset.yaml \
	'            runAsUser: 65534\n            runAsGroup: 65534\n            readOnlyRootFilesystem' \
	'            runAsUser: 0\n            runAsGroup: 65534\n            readOnlyRootFilesystem' \
	"nfd-worker: runAsUser is not 65534"
mutate "/sys mounted where --host-prefix does not look" base/apps/nfd-worker/daemonset.yaml \
	"{name: host-sys, mountPath: /host-sys, readOnly: true}" "{name: host-sys, mountPath: /host/sys, readOnly: true}" \
	"but --host-prefix=/host- reads it at /host-sys"
mutate "a writable hostPath mount" base/apps/gpu-node-agent/daemonset.yaml \
	'mountPath: /host-sys, readOnly: true' 'mountPath: /host-sys, readOnly: false' \
	"hostPath /sys mounted read-write at /host-sys"
mutate "a wildcard verb in nfd-worker's Role" base/rbac/nfd-worker/rbac.yaml \
	'verbs: [create, get, update, delete]' 'verbs: ["*"]' \
	"Role/nfd-worker: wildcard in verbs"
mutate "nfd-master allowed to update Nodes" base/rbac/nfd-master/rbac.yaml \
	'verbs: [get, list, watch, patch]' 'verbs: [get, list, watch, patch, update]' \
	"ClusterRole/featurebox-nfd-master grants ('', 'nodes', 'update', '*')"
mutate "a probe on a port the applet does not serve" base/apps/gpu-node-agent/daemonset.yaml \
	'            - --port=8081\n' '            - --port=9090\n' \
	"readinessProbe port http is not the --port 9090"
mutate "the dt-labeller initContainer without resources" components/devicetree/devicetree.yaml \
	'          resources:\n            requests:\n              cpu: 5m\n              memory: 8Mi\n            limits:\n              memory: 32Mi\n' '' \
	"DaemonSet/nfd-worker dt-labeller: no cpu+memory requests"
mutate "a second image" jobs/vfio-switch.yaml 'image: featurebox' 'image: busybox' \
	"switch: image busybox"
mutate "the vfio-switch Job retried" jobs/vfio-switch.yaml 'backoffLimit: 0 ' 'backoffLimit: 6 ' \
	"backoffLimit is not 0"
mutate "a missing ServiceAccount" base/apps/nfd-master/deployment.yaml \
	'serviceAccountName: nfd-master' 'serviceAccountName: nfd-master-typo' \
	"ServiceAccount node-feature-discovery/nfd-master-typo is not defined here"
[ ${#fbbin[@]} -gt 0 ] && mutate "an option nfd-master does not have" base/apps/nfd-master/deployment.yaml \
	'- --enable-leader-election' '- --leader-elect' \
	"Deployment/nfd-master nfd-master: nfd-master --port=8080 --leader-elect --gc-interval=0 exits 2"
mutate "gpu-node-agent bound to the master's role" base/rbac/gpu-node-agent/rbac.yaml \
	'  kind: ClusterRole\n  name: featurebox-gpu-node-agent\n' \
	'  kind: ClusterRole\n  name: featurebox-nfd-master\n' \
	"ClusterRoleBinding/featurebox-gpu-node-agent: subjects"

# The test API server's CRDs are those of deploy/base/crds/*.yaml.
. tests/k8s/start.sh
if k8s_start "$W/k8s" 2>"$W/err"; then
	python3 tests/deploy_check.py --top . --discovery "$K8S_DIR" deploy/base/crds deploy/base/crds 2>"$W/err"
	[ $? -gt 1 ] && fail "discovery check ran ($(tail -n 3 "$W/err" | tr '\n' ' '))"
	k8s_stop
	K8S_PID=
else
	fail "the test API server starts with deploy/base/crds ($(tail -n 5 "$W/err" | tr '\n' ' '))"
fi
# ... and follows them: an edited copy (a new short name, no status
# subresource on PhysicalGPU, NodeFeatureRule namespaced) changes discovery.
mkdir -p "$W/crds"
cp deploy/base/crds/*.yaml "$W/crds/"
python3 - "$W/crds" <<-'EOF'
	import sys
	d = sys.argv[1]
	def edit(f, old, new):
	    s = open(d + "/" + f).read()
	    assert s.count(old) == 1, (f, old)
	    open(d + "/" + f, "w").write(s.replace(old, new))
	edit("physicalgpu-crd.yaml", "shortNames: [pgpu]", "shortNames: [pgpu, gpus]")
	edit("physicalgpu-crd.yaml", "      subresources:\n        status: {}\n", "")
	edit("nodefeaturerule-crd.yaml", "scope: Cluster", "scope: Namespaced")
EOF
export FB_CRD_DIR=$W/crds
if k8s_start "$W/k8s2" 2>"$W/err"; then
	python3 tests/deploy_check.py --top . --discovery "$K8S_DIR" "$W/crds" "an edited copy (FB_CRD_DIR)" 2>"$W/err"
	[ $? -gt 1 ] && fail "discovery check of the edited copy ran ($(tail -n 3 "$W/err" | tr '\n' ' '))"
	k8s_stop
	K8S_PID=
else
	fail "the test API server starts with an edited copy of the CRDs ($(tail -n 5 "$W/err" | tr '\n' ' '))"
fi
# ... and refuses what its loader cannot read, instead of serving less.
printf 'x: &a 1\n' >>"$W/crds/nodefeature-crd.yaml"
out=$(timeout -k 10 20 python3 tests/k8s/server.py --dir "$W/k8s3" 2>&1)
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && printf '%s' "$out" | grep -q 'cannot load the CRDs'; then
	pass "the test API server refuses a CRD file outside its YAML subset"
else
	fail "the test API server refuses a CRD file outside its YAML subset (exit $rc: $(printf '%s' "$out" | tail -c 300))"
fi
unset FB_CRD_DIR

# NodeFeatureGroup's CRD is upstream's schema without its descriptions: the
# sha256 of upstream's spec (nfd-api-crds.yaml at 76e6cc8cc, descriptions
# removed, canonical JSON), read with the test API server's own loader.
if out=$(python3 - deploy/base/crds/nodefeaturegroup-crd.yaml <<-'EOF' 2>&1
	import hashlib, importlib.util, json, sys
	spec = importlib.util.spec_from_file_location("srv", "tests/k8s/server.py")
	srv = importlib.util.module_from_spec(spec)
	spec.loader.exec_module(srv)
	def strip(x):
	    if isinstance(x, dict):
	        return {k: strip(v) for k, v in x.items() if k != "description"}
	    if isinstance(x, list):
	        return [strip(v) for v in x]
	    return x
	doc = srv.yaml_load_all(open(sys.argv[1]).read(), sys.argv[1])[0]
	h = hashlib.sha256(json.dumps(strip(doc["spec"]), sort_keys=True, separators=(",", ":")).encode()).hexdigest()
	print(h)
	sys.exit(h != "4c7d599c225d9e64a395cd91a46487028fcc99295ee061c0e5768b3fa33c8abf")
EOF
); then
	pass "NodeFeatureGroup's CRD schema is upstream's"
else
	fail "NodeFeatureGroup's CRD schema is upstream's (sha256 $out)"
fi

# The server's YAML loader against PyYAML, on every file and rendering.
if python3 -c 'import yaml' 2>/dev/null; then
	rm -rf "$W/out" # the mutations rendered their copies there
	for d in $APPLIED base base/crds; do render . "$d"; done
	if out=$(python3 - deploy "$W/out" <<-'EOF' 2>&1
		import glob, importlib.util, sys, yaml
		spec = importlib.util.spec_from_file_location("srv", "tests/k8s/server.py")
		srv = importlib.util.module_from_spec(spec)
		spec.loader.exec_module(srv)
		files = sorted(glob.glob(sys.argv[1] + "/**/*.yaml", recursive=True) + glob.glob(sys.argv[2] + "/*.yaml"))
		bad = []
		for f in files:
		    text = open(f).read()
		    want = [d for d in yaml.safe_load_all(text) if d is not None]
		    try:
		        got = srv.yaml_load_all(text, f)
		    except srv.YamlError as e:
		        bad.append(str(e))
		        continue
		    if got != want:
		        bad.append(f + " differs")
		print("%d files" % len(files))
		if bad or len(files) < 20:
		    sys.exit("; ".join(bad) or "too few files")
	EOF
	); then
		pass "the server's YAML loader reads every deploy/ file and rendering as PyYAML does ($out)"
	else
		fail "the server's YAML loader reads every deploy/ file and rendering as PyYAML does ($(printf '%s' "$out" | tail -c 600))"
	fi
else
	skip "the server's YAML loader against PyYAML (python3-yaml not installed)"
fi

exit $((fails > 0))
