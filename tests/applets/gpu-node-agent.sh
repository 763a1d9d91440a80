# gpu-node-agent offline: --oneshot --no-publish on the sysfs fixtures
# (tests/fixtures/sysfs/mkgpufixtures writes gpu4/ and mixedgpu/; each has
# its own small usr/share/misc/pci.ids for the names).
. "$(dirname "$0")/../lib/testing.sh"
F=$FB_TOP/tests/fixtures/sysfs
GA="$FB gpu-node-agent --oneshot --no-publish"
# one device per line, keys sorted, condition times blanked
norm() {
	python3 -c '
import json, sys
for d in json.load(sys.stdin):
    for c in d.get("conditions", []):
        c["lastTransitionTime"] = "T"
    print(json.dumps(d, sort_keys=True, separators=(",", ":")))'
}
# address vendor class driverType [bootVGA] per device
brief() {
	python3 -c '
import json, sys
for d in json.load(sys.stdin):
    p = d["pciInfo"]
    print(p["address"], p["vendor"]["id"], p["class"]["code"], d["currentState"]["driverType"], p.get("bootVGA", "-"))'
}

C1='{"lastTransitionTime":"T","message":"found in the PCI scan","reason":"Discovered","status":"True","type":"Present"}'
NI='"nodeInfo":{"bareMetal":true,"kernelRelease":"5.15.0-105-generic","nodeName":"worker-1","os":{"id":"ubuntu","name":"Ubuntu 22.04.4 LTS","version":"22.04"}}'
A100='"device":{"id":"20b5","name":"GA100 [A100 PCIe 80GB]"}'
A100S='"subsystem":{"device":"1533","name":"A100 PCIe 80GB","vendor":"10de"},"vendor":{"id":"10de","name":"NVIDIA Corporation"}'
CLS='"class":{"code":"0302","name":"3D controller"}'
bound() { printf '{"lastTransitionTime":"T","message":"bound to %s","reason":"Bound","status":"True","type":"DriverBound"}' "$1"; }
GPU4="{\"conditions\":[$C1,$(bound nvidia)],\"currentState\":{\"driver\":\"nvidia\",\"driverType\":\"Nvidia\"},$NI,\"pciInfo\":{\"address\":\"0000:17:00.0\",$CLS,$A100,\"iommuGroup\":20,\"link\":{\"speed\":\"16.0 GT/s PCIe\",\"width\":16},\"numaNode\":0,\"revision\":\"a1\",$A100S}}
{\"conditions\":[$C1,$(bound vfio-pci)],\"currentState\":{\"driver\":\"vfio-pci\",\"driverType\":\"VFIO\"},$NI,\"pciInfo\":{\"address\":\"0000:31:00.0\",$CLS,$A100,\"iommuGroup\":30,\"link\":{\"speed\":\"16.0 GT/s PCIe\",\"width\":16},\"numaNode\":0,\"revision\":\"a1\",$A100S}}
{\"conditions\":[$C1,{\"lastTransitionTime\":\"T\",\"message\":\"no driver is bound\",\"reason\":\"NoDriver\",\"status\":\"False\",\"type\":\"DriverBound\"}],\"currentState\":{\"driverType\":\"None\"},$NI,\"pciInfo\":{\"address\":\"0000:b1:00.0\",$CLS,\"device\":{\"id\":\"20b7\",\"name\":\"GA100GL [A30 PCIe]\"},\"iommuGroup\":40,\"link\":{\"speed\":\"16.0 GT/s PCIe\",\"width\":16},\"numaNode\":1,\"revision\":\"a1\",\"subsystem\":{\"device\":\"1532\",\"name\":\"A30 24GB\",\"vendor\":\"10de\"},\"vendor\":{\"id\":\"10de\",\"name\":\"NVIDIA Corporation\"}}}
{\"conditions\":[$C1,$(bound nvidia)],\"currentState\":{\"driver\":\"nvidia\",\"driverType\":\"Nvidia\"},$NI,\"pciInfo\":{\"address\":\"0000:ca:00.0\",$CLS,$A100,\"iommuGroup\":50,\"link\":{\"speed\":\"8.0 GT/s PCIe\",\"width\":8},\"numaNode\":1,\"revision\":\"a1\",$A100S}}
"

# 1. The 4-GPU server: exactly this (the HDA functions, root ports, the BMC
#    VGA of an unlisted vendor and the Intel NIC are not GPUs).
testing "gpu4: four PhysicalGPU statuses, exactly" "$GA --node-name worker-1 --host-prefix $F/gpu4/ 2>/dev/null | norm" "$GPU4"
testing "gpu4: exit 0" "$GA --node-name worker-1 --host-prefix $F/gpu4/ >/dev/null 2>&1; echo \$?" "0\n"
testing "gpu4: the built-in vendor map is used with a warning" \
	"$GA --node-name worker-1 --host-prefix $F/gpu4/ 2>&1 >/dev/null | grep -c 'using the built-in vendors'" "1\n"

# 2. Mixed vendors in a VM; the Gaudi2 (1da3, class 12) only when listed.
testing "mixedgpu: built-in map: NVIDIA x2, AMD, Intel" \
	"$GA --node-name vm-1 --host-prefix $F/mixedgpu/ 2>/dev/null | brief" \
	"0000:00:02.0 8086 0300 Other -\n0000:01:00.0 10de 0300 Nvidia True\n0000:02:00.0 10de 0300 VFIO False\n0000:03:00.0 1002 0380 ROCm -\n"
testing "mixedgpu: virtual machine (DMI QEMU, hypervisor flag)" \
	"$GA --node-name vm-1 --host-prefix $F/mixedgpu/ 2>/dev/null | python3 -c 'import json,sys; print({d[\"nodeInfo\"][\"bareMetal\"] for d in json.load(sys.stdin)})'" \
	"{False}\n"
testing "mixedgpu: a vendors file that lists Habana adds the class-12 accelerator" \
	"printf 'nvidia: \"10de\"\nhabana: \"1da3\"\n' >v.yaml; $GA --node-name vm-1 --host-prefix $F/mixedgpu/ --vendors-file v.yaml 2>/dev/null | brief" \
	"0000:01:00.0 10de 0300 Nvidia True\n0000:02:00.0 10de 0300 VFIO False\n0000:04:00.0 1da3 1200 Other -\n"
testing "mixedgpu: the Gaudi2's class name from pci.ids" \
	"printf '{\"habana\": \"1da3\"}' >v.json; $GA --node-name vm-1 --host-prefix $F/mixedgpu/ --vendors-file v.json 2>/dev/null | python3 -c 'import json,sys; print([d[\"pciInfo\"][\"class\"] for d in json.load(sys.stdin)])'" \
	"[{'code': '1200', 'name': 'Processing accelerators'}]\n"
testing "a vendors file may be a whole ConfigMap; classes narrow the match" \
	"printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gpu-supported-vendors\ndata:\n  nvidia: \"10de, 0x10DE\"\n  amd: \"1002\"\n  classes: \"0380\"\n' >cm.yaml; $GA --node-name vm-1 --host-prefix $F/mixedgpu/ --vendors-file cm.yaml 2>/dev/null | brief" \
	"0000:03:00.0 1002 0380 ROCm -\n"

# 3. No GPU at all: an empty list.
testing "rpi4: no GPU: []" "$GA --node-name pi --host-prefix $F/rpi4/ 2>/dev/null" "[]\n"
testing "no PCI bus at all: []" "mkdir -p empty; $GA --node-name x --host-prefix empty/ 2>/dev/null; echo \$?" "[]\n0\n"

# 4. Bad vendor entries: a warning each, the entry ignored, the rest used.
testing "malformed vendor entries are ignored with a warning" \
	"printf 'nvidia: \"10de\"\nBad_Name!: \"1002\"\namd: \"10,02\"\nintel: [\"8086\"]\nclasses: \"3\"\n' >v.yaml; $GA --node-name vm-1 --host-prefix $F/mixedgpu/ --vendors-file v.yaml 2>err | brief; grep -c 'entry ignored' err; grep -c 'classes: want' err" \
	"0000:01:00.0 10de 0300 Nvidia True\n0000:02:00.0 10de 0300 VFIO False\n3\n1\n"
testing "a vendors file that is not a map: exit 2" \
	"echo '[1, 2]' >v.yaml; $GA --node-name vm-1 --host-prefix $F/mixedgpu/ --vendors-file v.yaml 2>err; echo \$?; grep -c 'not a map' err" "2\n1\n"
testing "a missing vendors file: exit 2" \
	"$GA --node-name vm-1 --host-prefix $F/mixedgpu/ --vendors-file nope.yaml 2>/dev/null; echo \$?" "2\n"

# 5. Absurd attribute values: warnings, no crash, the device still reported.
cp -r "$F/gpu4" "$W/bad"
D=$W/bad/sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0
chmod -R u+w "$W/bad"
echo garbage >"$D/numa_node"
head -c 4096 /dev/zero | tr '\0' 'x' >"$D/current_link_speed"
# a GPU without uevent whose vendor file is 4 KiB: skipped by the PCI scan
D2=$W/bad/sys/devices/pci0000:30/0000:30:01.0/0000:31:00.0
rm -f "$D2/uevent"
head -c 4096 /dev/zero | tr '\0' '1' >"$D2/vendor"
testing "garbage numa_node and a 4 KiB link speed: left out, warned" \
	"$GA --node-name worker-1 --host-prefix $W/bad/ 2>err | python3 -c 'import json,sys; d=json.load(sys.stdin)[0][\"pciInfo\"]; print(d[\"address\"], \"numaNode\" in d, \"link\" in d)'; grep -c 'numa_node: malformed' err; grep -c 'current_link_speed/width: unusable' err" \
	"0000:17:00.0 False False\n1\n1\n"
testing "a 4 KiB vendor file: that device is skipped with a warning" \
	"$GA --node-name worker-1 --host-prefix $W/bad/ 2>err | brief | cut -d' ' -f1; grep -c 'skipping device 0000:31:00.0: vendor' err" \
	"0000:17:00.0\n0000:b1:00.0\n0000:ca:00.0\n1\n"

# 6. No ID database: IDs only, one warning; the device label falls back to the id.
testing "no pci.ids: ids without names" \
	"$GA --node-name worker-1 --host-prefix $F/gpu4/ --pci-ids $W/none.ids 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin)[2][\"pciInfo\"]; print(d[\"device\"], d[\"vendor\"], d[\"class\"])'" \
	"{'id': '20b7'} {'id': '10de'} {'code': '0302'}\n"

# 7. Usage.
testing "--help exits 0 and names the applet" "$FB gpu-node-agent --help | head -1" "Usage: gpu-node-agent [OPTIONS]\n"
testing "--no-publish without --oneshot: usage error" "$FB gpu-node-agent --no-publish 2>/dev/null; echo \$?" "2\n"
testing "an invalid node name: exit 2" "$GA --node-name 'Not_A_Node' --host-prefix $F/gpu4/ 2>/dev/null; echo \$?" "2\n"

# pci.ids is read only when a name is needed (core/ids is lazy)
testing "rpi4 (no GPU): pci.ids never read" \
	"$GA --node-name pi --host-prefix $F/rpi4/ --pci-ids $F/gpu4/usr/share/misc/pci.ids -v 1 2>&1 >/dev/null | grep -o 'pci.ids: [0-9]* lines parsed'" \
	"pci.ids: 0 lines parsed\n"
testing "gpu4: pci.ids read once names are needed" \
	"$GA --node-name worker-1 --host-prefix $F/gpu4/ -v 1 2>&1 >/dev/null | grep -c 'pci.ids: [1-9][0-9]* lines parsed'" "1\n"

done_testing
