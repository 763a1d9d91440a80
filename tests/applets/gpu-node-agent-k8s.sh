# gpu-node-agent against the test API server: PhysicalGPU objects, the Node
# label, no writes in steady state, removals, driver changes, the vendors
# ConfigMap watch, and an API outage.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
F=$FB_TOP/tests/fixtures/sysfs
trap 'k8s_stop; [ -n "${apid:-}" ] && kill -9 $apid 2>/dev/null; rm -rf "$W"' EXIT

# --schema: the server prunes and validates PhysicalGPUs by deploy/'s CRD, so
# every field the agent writes must be in it
FB_K8S_SCHEMA=1 k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
S=$K8S_DIR
NSP=d8-nvidia-gpu
P=/apis/gpu.deckhouse.io/v1alpha1/physicalgpus
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
for n in node1 node2; do
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{"kubernetes.io/hostname":"%s"}}}' $n $n |
		k8s_ctl put /api/v1/nodes/$n - >/dev/null
done
# another node's object: never touched
printf '{"apiVersion":"gpu.deckhouse.io/v1alpha1","kind":"PhysicalGPU","metadata":{"name":"node2-0000-17-00-0","labels":{"gpu.deckhouse.io/node":"node2","gpu.deckhouse.io/vendor":"nvidia"}},"spec":{}}' |
	k8s_ctl put $P/node2-0000-17-00-0 - >/dev/null
mkdir -p "$W/root"
cp -r "$F/gpu4/." "$W/root/"
chmod -R u+w "$W/root"
export KUBERNETES_NAMESPACE=$NSP
GA="$FB gpu-node-agent --kubeconfig $S/kubeconfig-node1 --node-name node1 --host-prefix $W/root/"
names() { k8s_ctl get $P | python3 -c 'import json,sys; print(" ".join(sorted(o["metadata"]["name"] for o in json.load(sys.stdin)["items"])))'; }
nodelabels() { k8s_ctl get /api/v1/nodes/node1 | python3 -c 'import json,sys; l=json.load(sys.stdin)["metadata"]["labels"]; print(" ".join("%s=%s" % kv for kv in sorted(l.items()) if kv[0].startswith("gpu.")) or "-")'; }
writes() { echo $(( $(k8s_ctl count POST '^/api') + $(k8s_ctl count PUT '^/api') + $(k8s_ctl count PATCH '^/api') + $(k8s_ctl count DELETE '^/api') )); }
# in a subshell for wait_for: true when COMMAND's output equals WANT
is() { # WANT COMMAND...
	local want=$1
	shift
	[ "$("$@" 2>/dev/null)" = "$want" ]
}

# 1. --oneshot: the objects, their labels and status, and the Node label.
testing "--oneshot syncs and exits 0" "$GA --oneshot 2>$W/one.log; echo \$?" "0\n"
testing "one object per GPU, named <node>-<address>; node2's untouched" "names" \
	"node1-0000-17-00-0 node1-0000-31-00-0 node1-0000-b1-00-0 node1-0000-ca-00-0 node2-0000-17-00-0\n"
check "objects: labels, spec and status as documented" python3 - "$(k8s_ctl get $P)" <<'PY'
import json, sys
items = {o["metadata"]["name"]: o for o in json.loads(sys.argv[1])["items"]}
o = items["node1-0000-b1-00-0"]
assert o["apiVersion"] == "gpu.deckhouse.io/v1alpha1" and o["kind"] == "PhysicalGPU", o
assert o["metadata"]["labels"] == {"gpu.deckhouse.io/node": "node1", "gpu.deckhouse.io/vendor": "nvidia",
                                   "gpu.deckhouse.io/device": "a30-pcie"}, o["metadata"]["labels"]
assert o["spec"] == {}, o["spec"]
st = o["status"]
assert st["pciInfo"]["address"] == "0000:b1:00.0" and st["pciInfo"]["numaNode"] == 1
assert st["pciInfo"]["device"] == {"id": "20b7", "name": "GA100GL [A30 PCIe]"}, st["pciInfo"]
assert st["currentState"] == {"driverType": "None"}, st["currentState"]
conds = {c["type"]: c for c in st["conditions"]}
assert conds["Present"]["status"] == "True" and conds["DriverBound"]["status"] == "False", conds
assert all(c["lastTransitionTime"].endswith("Z") for c in conds.values())
assert st["nodeInfo"]["nodeName"] == "node1" and st["nodeInfo"]["bareMetal"] is True
a = items["node1-0000-17-00-0"]
assert a["metadata"]["labels"]["gpu.deckhouse.io/device"] == "a100-pcie-80gb", a["metadata"]["labels"]
assert a["status"]["currentState"] == {"driver": "nvidia", "driverType": "Nvidia", "driverVersion": "550.54.15",
                                      "nvidia": {"driverVersion": "550.54.15",
                                                 "gpuUUID": "GPU-5e1c8a3b-0c3e-4bd1-93b2-1f6e8a0c2d17"}}, a["status"]["currentState"]
assert a["status"]["capabilities"] == {"architecture": "Ampere", "computeAPI": "CUDA", "computeCapability": "8.0",
                                       "memoryMiB": 81920, "nvidia": {"computeCap": "8.0", "productArchitecture": "Ampere"},
                                       "productName": "NVIDIA A100 80GB PCIe", "vendor": "Nvidia"}, a["status"]["capabilities"]
assert a["status"]["pciInfo"]["iommuGroup"] == 20 and a["status"]["pciInfo"]["link"] == {"speed": "16.0 GT/s PCIe", "width": 16}
assert items["node1-0000-31-00-0"]["status"]["currentState"]["driverType"] == "VFIO"
assert "status" not in items["node2-0000-17-00-0"]
PY
testing "the Node: gpu.deckhouse.io/vendor=nvidia, vendor.nvidia=true" "nodelabels" "gpu.deckhouse.io/vendor=nvidia gpu.deckhouse.io/vendor.nvidia=true\n"
testing "no ConfigMap: the built-in map, with a warning" "grep -c 'gpu-supported-vendors not found' $W/one.log" "1\n"

# 2. Nothing changed: a second run writes nothing.
k8s_ctl clear-log >/dev/null
testing "a second --oneshot with no change: zero writes" "$GA --oneshot 2>/dev/null; writes" "0\n"

# 3. A device removed: its object goes, only this node's.
B=$(readlink -f "$W/root/sys/bus/pci/devices/0000:ca:00.0")
t0=$(k8s_ctl get $P/node1-0000-b1-00-0 | python3 -c 'import json,sys; print([c["lastTransitionTime"] for c in json.load(sys.stdin)["status"]["conditions"] if c["type"] == "Present"][0])')
rm -rf "$B" "$W/root/sys/bus/pci/devices/0000:ca:00.0" "$W/root/sys/bus/pci/devices/0000:ca:00.1"
# 4. ... and a driver bound: the A30 goes to vfio-pci.
mkdir -p "$W/root/sys/bus/pci/drivers/vfio-pci"
ln -sfn ../../../../bus/pci/drivers/vfio-pci "$(readlink -f "$W/root/sys/bus/pci/devices/0000:b1:00.0")/driver"
# the next second on the clock, so that a new lastTransitionTime would differ
s0=$(date +%s)
wait_for 5 sh -c "[ \$(date +%s) -gt $s0 ]"
testing "removal and driver change: --oneshot exits 0" "$GA --oneshot 2>/dev/null; echo \$?" "0\n"
testing "the removed GPU's object is deleted, node2's kept" "names" \
	"node1-0000-17-00-0 node1-0000-31-00-0 node1-0000-b1-00-0 node2-0000-17-00-0\n"
testing "the driver change is in the status; Present keeps its time" \
	"k8s_ctl get $P/node1-0000-b1-00-0 | python3 -c 'import json,sys; s=json.load(sys.stdin)[\"status\"]; c={c[\"type\"]: c for c in s[\"conditions\"]}; print(s[\"currentState\"], c[\"DriverBound\"][\"status\"], c[\"Present\"][\"lastTransitionTime\"] == \"$t0\")'" \
	"{'driver': 'vfio-pci', 'driverType': 'VFIO'} True True\n"

# 5. The daemon on a mixed node, following the vendors ConfigMap.
rm -rf "$W/root"/*
cp -r "$F/mixedgpu/." "$W/root/"
chmod -R u+w "$W/root"
printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gpu-supported-vendors","namespace":"%s"},"data":{"nvidia":"10de"}}' $NSP |
	k8s_ctl put /api/v1/namespaces/$NSP/configmaps/gpu-supported-vendors - >/dev/null
# --features-expiry 4s: the file is rewritten every 2 s or so (half of it)
$GA --resync 1s --port 0 --features-file "$W/fd/gpu-node-agent" --features-expiry 4s >"$W/d.log" 2>&1 &
apid=$!
# the vendors' labels file: its label keys, "-" when it has none
featkeys() { grep -v '^#' "$W/fd/gpu-node-agent" 2>/dev/null | cut -d= -f1 | grep -E '^(nvidia.com/gpu.(count|product)|amd.com/gpu.device-id)$' | tr '\n' ' ' | sed 's/ $//'; }
check "daemon: nvidia only, the gpu4 objects gone" wait_for 15 is \
	"node1-0000-01-00-0 node1-0000-02-00-0 node2-0000-17-00-0" names
check "daemon: Node vendor=nvidia" wait_for 5 is "gpu.deckhouse.io/vendor=nvidia gpu.deckhouse.io/vendor.nvidia=true" nodelabels
check "daemon: the vendors' labels file, NVIDIA's" wait_for 5 is "nvidia.com/gpu.count nvidia.com/gpu.product" featkeys
expiry() { sed -n 's/^# +expiry-time=//p' "$W/fd/gpu-node-agent" 2>/dev/null; }
e0=$(expiry)
expiry_moved() { local e; e=$(expiry); [ -n "$e" ] && [ "$e" \> "$e0" ]; }
check "the same labels are rewritten before they expire: the expiry moves on (was $e0)" wait_for 20 expiry_moved
port=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$W/d.log")
testing "/healthz and /readyz answer 200" \
	"curl -s -o /dev/null -w '%{http_code} ' http://127.0.0.1:$port/healthz; curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/readyz" "200 200"
testing "/metrics counts the devices" "curl -s http://127.0.0.1:$port/metrics | grep '^gpu_node_agent_devices '" "gpu_node_agent_devices 2\n"
# syncs: the daemon's passes that left the server in sync (its /metrics)
syncs() { curl -s -m 5 "http://127.0.0.1:$port/metrics" | awk '/^gpu_node_agent_syncs_total / { print int($2) }'; }
syncs_ge() { [ "$(syncs)" -ge "$1" ] 2>/dev/null; }
syncs_after() { # N: wait until N more passes than now have ended in sync
	local n
	n=$(syncs)
	wait_for 30 syncs_ge $((${n:-0} + $1))
}
syncs_after 1 || fail "a pass in sync (/metrics)"
k8s_ctl clear-log >/dev/null
syncs_after 2 || fail "two more passes in sync (/metrics)"
testing "steady state (resyncs every second): zero writes" "writes" "0\n"
printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gpu-supported-vendors","namespace":"%s"},"data":{"nvidia":"10de","amd":"1002","intel":"8086","habana":"1da3"}}' $NSP |
	k8s_ctl put /api/v1/namespaces/$NSP/configmaps/gpu-supported-vendors - >/dev/null
check "ConfigMap edited: objects for every listed vendor" wait_for 10 is \
	"node1-0000-00-02-0 node1-0000-01-00-0 node1-0000-02-00-0 node1-0000-03-00-0 node1-0000-04-00-0 node2-0000-17-00-0" names
check "several vendors: the module's label for the majority, a label and a count for each (so each adapter can select the node)" wait_for 5 is \
	"gpu.deckhouse.io/amd.count=1 gpu.deckhouse.io/habana.count=1 gpu.deckhouse.io/intel.count=1 gpu.deckhouse.io/nvidia.count=2 gpu.deckhouse.io/vendor=nvidia gpu.deckhouse.io/vendor.amd=true gpu.deckhouse.io/vendor.habana=true gpu.deckhouse.io/vendor.intel=true gpu.deckhouse.io/vendor.nvidia=true" nodelabels
testing "the PhysicalGPU vendor labels follow the map" \
	"k8s_ctl get $P/node1-0000-04-00-0 | python3 -c 'import json,sys; l=json.load(sys.stdin)[\"metadata\"][\"labels\"]; print(l[\"gpu.deckhouse.io/vendor\"], l[\"gpu.deckhouse.io/device\"])'" \
	"habana gaudi2-ai-training-accelerator\n"
printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gpu-supported-vendors","namespace":"%s"},"data":{"amd":"1002"}}' $NSP |
	k8s_ctl put /api/v1/namespaces/$NSP/configmaps/gpu-supported-vendors - >/dev/null
check "one vendor again: the counts and the other vendors' labels are removed" wait_for 10 is "gpu.deckhouse.io/vendor=amd gpu.deckhouse.io/vendor.amd=true" nodelabels
testing "only the AMD object is left" "names" "node1-0000-03-00-0 node2-0000-17-00-0\n"
check "the labels file follows the map: AMD's only" wait_for 10 is "amd.com/gpu.device-id" featkeys
testing "the Node's other labels are kept" \
	"k8s_ctl get /api/v1/nodes/node1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"metadata\"][\"labels\"][\"kubernetes.io/hostname\"])'" "node1\n"

# 6. The API fails for a while (503 on everything): the agent keeps running
#    and converges after.
k8s_ctl clear-log >/dev/null
k8s_ctl fault --status 503 --count 3 >/dev/null
ln -sfn ../../../../bus/pci/drivers/vfio-pci "$(readlink -f "$W/root/sys/bus/pci/devices/0000:03:00.0")/driver"
mkdir -p "$W/root/sys/bus/pci/drivers/vfio-pci"
check "API failing: the driver change arrives once it recovers" wait_for 30 sh -c \
	"cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get $P/node1-0000-03-00-0 | grep -q '\"VFIO\"'"
check "the labels file follows the rebind (the API failing or not): no amdgpu, no AMD labels" wait_for 30 is "" featkeys
testing "the 503s were seen" "k8s_ctl count '*' '^/api' --status 503 | awk '{ print (\$1 >= 1) }'" "1\n"
check "and the agent never exited" kill -0 $apid

# 7. SIGTERM: exit 0 promptly.
kill -TERM $apid
wait $apid
rc=$?
apid=
testing "SIGTERM: exit 0" "echo $rc" "0\n"
testing "no token text in the log" "grep -c -F -e \"\$(cat $S/tokens/node1)\" $W/d.log" "0\n"

# 8. The vendors ConfigMap cannot be read (no RBAC for it): the agent still
#    publishes, with the built-in vendors, and says so. An object of one of
#    our names that is not labelled for us (a 409 on create) is skipped; the
#    other devices sync and the agent gets ready.
printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"node3"}}' | k8s_ctl put /api/v1/nodes/node3 - >/dev/null
printf '{"apiVersion":"gpu.deckhouse.io/v1alpha1","kind":"PhysicalGPU","metadata":{"name":"node3-0000-01-00-0"},"spec":{}}' |
	k8s_ctl put $P/node3-0000-01-00-0 - >/dev/null
k8s_ctl set-rules node3 - >/dev/null <<'JSON'
[{"verbs": ["get", "list", "watch", "patch", "update"], "resources": ["nodes"]},
 {"verbs": ["get", "list", "watch", "create", "update", "patch", "delete"], "resources": ["physicalgpus", "physicalgpus/status"]}]
JSON
# node3's own identity: under NodeRestriction a node may label only itself
$FB gpu-node-agent --kubeconfig $S/kubeconfig-node3 --node-name node3 --host-prefix $W/root/ --port 0 --resync 1s >"$W/d3.log" 2>&1 &
apid=$!
check "ConfigMap forbidden: the built-in vendors are used and published" wait_for 20 sh -c \
	"cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get $P/node3-0000-03-00-0 >/dev/null && K8S_DIR=$S k8s_ctl get $P/node3-0000-02-00-0 >/dev/null"
check "... and it says why" grep -q 'using the built-in vendors' "$W/d3.log"
check "an unlabelled object of our name is skipped with a warning" grep -q 'node3-0000-01-00-0 exists but is not labelled' "$W/d3.log"
testing "... and left as it was" "k8s_ctl get $P/node3-0000-01-00-0 | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"metadata\"].get(\"labels\"))'" "None\n"
check "... and node3 is labelled by node3's identity" wait_for 20 sh -c \
	"cd $FB_TOP && . tests/k8s/start.sh && K8S_DIR=$S k8s_ctl get /api/v1/nodes/node3 | grep -q '\"gpu.deckhouse.io/vendor\"'"
check "the agent keeps running" kill -0 $apid
kill -TERM $apid
wait $apid
rc=$?
apid=
testing "SIGTERM: exit 0 (node3)" "echo $rc" "0\n"

done_testing
