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
# status.capabilities of an A100 80GB (the name: pci.ids, else the driver's Model) and an A30
CAPS() { printf '"capabilities":{"architecture":"Ampere","computeAPI":"CUDA","computeCapability":"8.0","memoryMiB":%s,"nvidia":{"computeCap":"8.0","productArchitecture":"Ampere"},"productName":"%s","vendor":"Nvidia"}' "$1" "$2"; }
NVS() { printf '"currentState":{"driver":"nvidia","driverType":"Nvidia","driverVersion":"550.54.15","nvidia":{"driverVersion":"550.54.15","gpuUUID":"%s"}}' "$1"; }
bound() { printf '{"lastTransitionTime":"T","message":"bound to %s","reason":"Bound","status":"True","type":"DriverBound"}' "$1"; }
GPU4="{$(CAPS 81920 'NVIDIA A100 80GB PCIe'),\"conditions\":[$C1,$(bound nvidia)],$(NVS GPU-5e1c8a3b-0c3e-4bd1-93b2-1f6e8a0c2d17),$NI,\"pciInfo\":{\"address\":\"0000:17:00.0\",$CLS,$A100,\"iommuGroup\":20,\"link\":{\"speed\":\"16.0 GT/s PCIe\",\"width\":16},\"numaNode\":0,\"revision\":\"a1\",$A100S}}
{$(CAPS 81920 'GA100 [A100 PCIe 80GB]'),\"conditions\":[$C1,$(bound vfio-pci)],\"currentState\":{\"driver\":\"vfio-pci\",\"driverType\":\"VFIO\"},$NI,\"pciInfo\":{\"address\":\"0000:31:00.0\",$CLS,$A100,\"iommuGroup\":30,\"link\":{\"speed\":\"16.0 GT/s PCIe\",\"width\":16},\"numaNode\":0,\"revision\":\"a1\",$A100S}}
{$(CAPS 24576 'GA100GL [A30 PCIe]'),\"conditions\":[$C1,{\"lastTransitionTime\":\"T\",\"message\":\"no driver is bound\",\"reason\":\"NoDriver\",\"status\":\"False\",\"type\":\"DriverBound\"}],\"currentState\":{\"driverType\":\"None\"},$NI,\"pciInfo\":{\"address\":\"0000:b1:00.0\",$CLS,\"device\":{\"id\":\"20b7\",\"name\":\"GA100GL [A30 PCIe]\"},\"iommuGroup\":40,\"link\":{\"speed\":\"16.0 GT/s PCIe\",\"width\":16},\"numaNode\":1,\"revision\":\"a1\",\"subsystem\":{\"device\":\"1532\",\"name\":\"A30 24GB\",\"vendor\":\"10de\"},\"vendor\":{\"id\":\"10de\",\"name\":\"NVIDIA Corporation\"}}}
{$(CAPS 81920 'NVIDIA A100 80GB PCIe'),\"conditions\":[$C1,$(bound nvidia)],$(NVS GPU-9f0d2e44-7a61-4c55-8e0b-3b2a9c6d1e42),$NI,\"pciInfo\":{\"address\":\"0000:ca:00.0\",$CLS,$A100,\"iommuGroup\":50,\"link\":{\"speed\":\"8.0 GT/s PCIe\",\"width\":8},\"numaNode\":1,\"revision\":\"a1\",$A100S}}
"

# 1. The 4-GPU server: exactly this (the HDA functions, root ports, the BMC
#    VGA of an unlisted vendor and the Intel NIC are not GPUs).
testing "gpu4: four PhysicalGPU statuses, exactly" "$GA --node-name worker-1 --host-prefix $F/gpu4/ 2>/dev/null | norm" "$GPU4"
testing "gpu4: exit 0" "$GA --node-name worker-1 --host-prefix $F/gpu4/ >/dev/null 2>&1; echo \$?" "0\n"
testing "gpu4: the built-in vendor map is used with a warning" \
	"$GA --node-name worker-1 --host-prefix $F/gpu4/ 2>&1 >/dev/null | grep -c 'using the built-in vendors'" "1\n"

# 2. Mixed vendors in a VM; the Gaudi2 (1da3, class 12) only when listed.
testing "mixedgpu: built-in map: NVIDIA x2, AMD, Intel, MetaX" \
	"$GA --node-name vm-1 --host-prefix $F/mixedgpu/ 2>/dev/null | brief" \
	"0000:00:02.0 8086 0300 Other -\n0000:01:00.0 10de 0300 Nvidia True\n0000:02:00.0 10de 0300 VFIO False\n0000:03:00.0 1002 0380 ROCm -\n0000:05:00.0 9999 0380 None -\n"
# address: architecture computeAPI computeCapability memoryMiB productName
caps() {
	python3 -c '
import json, sys
for d in json.load(sys.stdin):
    c = d.get("capabilities", {})
    print(d["pciInfo"]["address"] + ":", c.get("architecture", "-"), c.get("computeAPI", "-"), c.get("computeCapability", "-"), c.get("memoryMiB", "-"), c.get("productName", "-"))'
}
testing "mixedgpu: capabilities per vendor (MI210: mem_info_vram_total; no NVIDIA size in pci.ids' name)" \
	"$GA --node-name vm-1 --host-prefix $F/mixedgpu/ 2>/dev/null | caps" \
	"0000:00:02.0: Xe-LP oneAPI - - AlderLake-S GT1\n0000:01:00.0: Ampere CUDA 8.6 - NVIDIA GeForce RTX 3090\n0000:02:00.0: Ampere CUDA 8.6 - GA102 [GeForce RTX 3090]\n0000:03:00.0: CDNA2 ROCm - 65520 Aldebaran/MI200 [Instinct MI210]\n0000:05:00.0: - MACA - - C500\n"
testing "amdgpu: MI300X: CDNA3, 192 GiB; the FRU product_name is the labeller's, not the status's" \
	"$GA --node-name a --host-prefix $F/amdgpu/ 2>/dev/null | caps" \
	"0000:21:00.0: CDNA2 ROCm - 65520 Aldebaran/MI200 [Instinct MI210]\n0000:41:00.0: CDNA2 ROCm - 65520 Aldebaran/MI200 [Instinct MI210]\n0000:61:00.0: CDNA3 ROCm - 196592 Aqua Vanjaram [Instinct MI300X]\n"
testing "intelgpu: Flex 170 (ATS-M) Xe-HPG, Max 1550 Xe-HPC: lmem_total_bytes of the card per tile" \
	"$GA --node-name i --host-prefix $F/intelgpu/ 2>/dev/null | caps" \
	"0000:00:02.0: Xe-LP oneAPI - - AlderLake-S GT1\n0000:4d:00.0: Xe-HPG oneAPI - 16384 ATS-M [Data Center GPU Flex 170]\n0000:ca:00.0: Xe-HPG oneAPI - 16384 ATS-M [Data Center GPU Flex 170]\n0000:e1:00.0: Xe-HPC oneAPI - 131072 Ponte Vecchio XT (2 Tile) [Data Center GPU Max 1550]\n"
testing "no pci.ids: the architecture from the NVIDIA device-ID range; nothing for AMD" \
	"$GA --node-name vm-1 --host-prefix $F/mixedgpu/ --pci-ids /nonexistent 2>/dev/null | caps" \
	"0000:00:02.0: - oneAPI - - -\n0000:01:00.0: Ampere CUDA 8.6 - NVIDIA GeForce RTX 3090\n0000:02:00.0: Ampere CUDA 8.6 - -\n0000:03:00.0: - ROCm - 65520 -\n0000:05:00.0: - MACA - - -\n"
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

# 7. The vendors' node labels as an NFD features file (--features-file):
#    GFD's for NVIDIA, the ROCm labeller's for AMD, Intel's labeler's.
#    gfd.timestamp is the start time: blanked here, checked below.
feat() { # TREE: the file's labels, the timestamp as T
	rm -f "$W/feat"
	$GA --node-name n --host-prefix "$F/$1/" --features-file "$W/feat" >/dev/null 2>&1 &&
		grep -v '^#' "$W/feat" | sed 's/^\(nvidia.com\/gfd.timestamp\)=[0-9]*$/\1=T/'
}
CUDA="nvidia.com/cuda.driver-version.full=550.54.15
nvidia.com/cuda.driver-version.major=550
nvidia.com/cuda.driver-version.minor=54
nvidia.com/cuda.driver-version.revision=15
nvidia.com/cuda.driver.major=550
nvidia.com/cuda.driver.minor=54
nvidia.com/cuda.driver.rev=15
nvidia.com/gfd.timestamp=T"
# two A100 80GB on nvidia, Ampere, the SYS-420GP-TNR's
A100X2="$CUDA
nvidia.com/gpu.compute.major=8
nvidia.com/gpu.compute.minor=0
nvidia.com/gpu.count=2
nvidia.com/gpu.family=ampere
nvidia.com/gpu.machine=SYS-420GP-TNR
nvidia.com/gpu.mode=compute
nvidia.com/gpu.product=NVIDIA-A100-80GB-PCIe"
testing "gpu4 (NVIDIA: the A100 on vfio-pci and the unbound A30 are not counted, as NVML would not see them)" "feat gpu4" \
"$A100X2
"
# the A30 bound to nvidia too: two models on one node
cp -r "$F/gpu4" "$W/mixedmodel"
chmod -R u+w "$W/mixedmodel"
ln -s ../../../../bus/pci/drivers/nvidia "$W/mixedmodel/sys/devices/pci0000:b0/0000:b0:01.0/0000:b1:00.0/driver"
mkdir -p "$W/mixedmodel/proc/driver/nvidia/gpus/0000:b1:00.0"
printf 'Model: \t\t NVIDIA A30\nGPU UUID: \t GPU-11111111-2222-3333-4444-555555555555\nDevice Minor: \t 1\n' \
	>"$W/mixedmodel/proc/driver/nvidia/gpus/0000:b1:00.0/information"
F0=$F
F=$W
testing "two models: GFD's labels for the one with most devices, and a count per model" "feat mixedmodel" \
"$A100X2
nvidia.com/gpu.product.NVIDIA-A100-80GB-PCIe=2
nvidia.com/gpu.product.NVIDIA-A30=1
"
F=$F0
testing "amdgpu (two MI210, an MI300X): the labeller's per-value counts" "feat amdgpu" \
"amd.com/gpu.cu-count.104=2
amd.com/gpu.cu-count.304=1
amd.com/gpu.device-id.740f=2
amd.com/gpu.device-id.74a1=1
amd.com/gpu.family=AI
amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM=1
amd.com/gpu.product-name.Instinct_MI210=2
amd.com/gpu.simd-count.1216=1
amd.com/gpu.simd-count.416=2
amd.com/gpu.vram.192G=1
amd.com/gpu.vram.64G=2
beta.amd.com/gpu.cu-count.104=2
beta.amd.com/gpu.cu-count.304=1
beta.amd.com/gpu.device-id.740f=2
beta.amd.com/gpu.device-id.74a1=1
beta.amd.com/gpu.family=AI
beta.amd.com/gpu.family.AI=3
beta.amd.com/gpu.product-name.AMD_Instinct_MI300X_OAM=1
beta.amd.com/gpu.product-name.Instinct_MI210=2
beta.amd.com/gpu.simd-count.1216=1
beta.amd.com/gpu.simd-count.416=2
beta.amd.com/gpu.vram.192G=1
beta.amd.com/gpu.vram.64G=2
"
testing "intelgpu (iGPU, two Flex 170, a two-tile Max 1550): the labeler's" "feat intelgpu" \
"gpu.intel.com/cards=card0.card1.card2.card3
gpu.intel.com/gpu-numbers=0.1.2.3
gpu.intel.com/memory.max=171798691840
gpu.intel.com/millicores=4000
gpu.intel.com/numa-gpu-map=0-0.1_1-2.3
gpu.intel.com/tiles=5
"
testing "mixedgpu (a VM, four vendors): the vfio-pci RTX 3090 is not counted; MetaX has no labeller" "feat mixedgpu" \
"amd.com/gpu.cu-count=104
amd.com/gpu.device-id=740f
amd.com/gpu.family=AI
amd.com/gpu.product-name=Instinct_MI210
amd.com/gpu.simd-count=416
amd.com/gpu.vram=64G
beta.amd.com/gpu.cu-count=104
beta.amd.com/gpu.cu-count.104=1
beta.amd.com/gpu.device-id=740f
beta.amd.com/gpu.device-id.740f=1
beta.amd.com/gpu.family=AI
beta.amd.com/gpu.family.AI=1
beta.amd.com/gpu.product-name=Instinct_MI210
beta.amd.com/gpu.product-name.Instinct_MI210=1
beta.amd.com/gpu.simd-count=416
beta.amd.com/gpu.simd-count.416=1
beta.amd.com/gpu.vram=64G
beta.amd.com/gpu.vram.64G=1
gpu.intel.com/cards=card0
gpu.intel.com/gpu-numbers=0
gpu.intel.com/memory.max=0
gpu.intel.com/millicores=1000
gpu.intel.com/tiles=1
$CUDA
nvidia.com/gpu.compute.major=8
nvidia.com/gpu.compute.minor=6
nvidia.com/gpu.count=1
nvidia.com/gpu.family=ampere
nvidia.com/gpu.machine=Standard-PC-Q35-ICH9-2009
nvidia.com/gpu.mode=graphics
nvidia.com/gpu.product=NVIDIA-GeForce-RTX-3090
"
testing "rpi4 (no GPU): a file with no labels" "feat rpi4" ""
cp -r "$F/gpu4" "$W/v2"
chmod -R u+w "$W/v2"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022\n' >"$W/v2/proc/driver/nvidia/version"
testing "a two-part driver version: the revision is empty, as GFD's" \
	"$GA --node-name n --host-prefix $W/v2/ --features-file $W/feat >/dev/null 2>&1; grep -E '^nvidia.com/cuda.driver(-version)?.(rev|revision|full)=' $W/feat" \
	"nvidia.com/cuda.driver-version.full=515.76\nnvidia.com/cuda.driver-version.revision=\nnvidia.com/cuda.driver.rev=\n"
testing "the file expires: one expiry-time directive, RFC 3339, about an hour ahead (--features-expiry 1h)" \
	"feat gpu4 >/dev/null; grep -c '^# +expiry-time=' $W/feat; python3 -c 'import datetime,re,sys; t=re.search(r\"expiry-time=(\\S+)\", open(sys.argv[1]).read()).group(1); d=datetime.datetime.strptime(t, \"%Y-%m-%dT%H:%M:%SZ\").replace(tzinfo=datetime.timezone.utc)-datetime.datetime.now(datetime.timezone.utc); print(3500 < d.total_seconds() <= 3600)' $W/feat" \
	"1\nTrue\n"
testing "--features-expiry 2h moves it" \
	"$GA --node-name n --host-prefix $F/gpu4/ --features-file $W/feat --features-expiry 2h >/dev/null 2>&1; python3 -c 'import datetime,re,sys; t=re.search(r\"expiry-time=(\\S+)\", open(sys.argv[1]).read()).group(1); d=datetime.datetime.strptime(t, \"%Y-%m-%dT%H:%M:%SZ\").replace(tzinfo=datetime.timezone.utc)-datetime.datetime.now(datetime.timezone.utc); print(7100 < d.total_seconds() <= 7200)' $W/feat" \
	"True\n"
testing "gfd.timestamp is the agent's start, in Unix seconds" \
	"t0=\$(date +%s); $GA --node-name n --host-prefix $F/gpu4/ --features-file $W/feat >/dev/null 2>&1; t=\$(sed -n 's/^nvidia.com.gfd.timestamp=//p' $W/feat); t1=\$(date +%s); [ \$t -ge \$t0 ] && [ \$t -le \$t1 ] && echo ok" "ok\n"
: >"$W/none.conf"
mkdir -p "$W/fd"
testing "nfd-worker publishes the file like any features.d file" \
	"$GA --node-name n --host-prefix $F/gpu4/ --features-file $W/fd/gpu-node-agent >/dev/null 2>&1; mkdir -p $W/empty-root; $FB nfd-worker --config $W/none.conf --node-name n --host-prefix $W/empty-root/ --features-dir $W/fd --feature-sources local --label-sources local --oneshot --no-publish 2>/dev/null | grep -E '^nvidia.com/gpu.(count|product)='" \
	"nvidia.com/gpu.count=2\nnvidia.com/gpu.product=NVIDIA-A100-80GB-PCIe\n"
testing "nfd-worker drops the labels once the file has expired" \
	"sed -i 's/^# +expiry-time=.*/# +expiry-time=2001-01-01T00:00:00Z/' $W/fd/gpu-node-agent; $FB nfd-worker --config $W/none.conf --node-name n --host-prefix $W/empty-root/ --features-dir $W/fd --feature-sources local --label-sources local --oneshot --no-publish 2>/dev/null | grep -c '^nvidia.com/'" \
	"0\n"
testing "--features-file naming a directory: usage error" \
	"$GA --node-name n --host-prefix $F/gpu4/ --features-file $W/fd/ >/dev/null 2>&1; echo \$?" "2\n"
mkdir -p "$W/ro"
chmod 555 "$W/ro"
if [ "$(id -u)" != 0 ]; then
	testing "an unwritable features directory: exit 1, the file named" \
		"$GA --node-name n --host-prefix $F/gpu4/ --features-file $W/ro/f >/dev/null 2>err; echo \$?; grep -c '$W/ro' err" "1\n1\n"
else
	testing "a features file path through a regular file: exit 1, the path named" \
		"touch $W/plain; $GA --node-name n --host-prefix $F/gpu4/ --features-file $W/plain/f >/dev/null 2>err; echo \$?; grep -c '$W/plain' err" "1\n1\n"
fi

# The deploy's shape: a root initContainer (--features-setup) gives the
# agent a hidden directory in the root-owned features.d and links NAME to
# its file; the agent then writes as nobody; nfd-worker reads the link.
if [ "$(id -u)" = 0 ]; then
	# as the deploy runs it: root with CAP_CHOWN only, its directory already
	# made (root's, 0755) by the kubelet for the agent's own mount
	mkdir -p "$W/hfd/.gpu-node-agent"
	FS="setpriv --bounding-set=-all,+chown --inh-caps=-all $FB gpu-node-agent --features-setup 65534:65534 --features-file $W/hfd/.gpu-node-agent/gpu-node-agent"
	testing "--features-setup: the hidden directory for nobody, the link" \
		"$FS; stat -c '%U %a' $W/hfd/.gpu-node-agent; readlink $W/hfd/gpu-node-agent" \
		"$W/hfd/gpu-node-agent -> .gpu-node-agent/gpu-node-agent (owner 65534:65534)\nnobody 755\n.gpu-node-agent/gpu-node-agent\n"
	testing "--features-setup again (a restarted Pod): exit 0" "$FS >/dev/null; echo \$?" "0\n"
	testing "the agent as nobody writes there; nfd-worker reads it through the link" \
		"as_nobody $GA --node-name n --host-prefix $F/gpu4/ --features-file $W/hfd/.gpu-node-agent/gpu-node-agent >/dev/null 2>&1; echo \$?; $FB nfd-worker --config $W/none.conf --node-name n --host-prefix $W/empty-root/ --features-dir $W/hfd --feature-sources local --label-sources local --oneshot --no-publish 2>/dev/null | grep '^nvidia.com/gpu.count='" \
		"0\nnvidia.com/gpu.count=2\n"
	rm "$W/hfd/gpu-node-agent"
	echo 'admin=label' >"$W/hfd/gpu-node-agent"
	testing "--features-setup never replaces a file someone else put there" \
		"$FS 2>&1 >/dev/null | grep -c 'is not a link'; $FS >/dev/null 2>&1; echo \$?; cat $W/hfd/gpu-node-agent" "1\n1\nadmin=label\n"
	testing "--features-setup wants DIR/.SUB/NAME; . and .. are no SUB" \
		"for f in $W/hfd/plain $W/hfd/./x $W/hfd/../x; do $FB gpu-node-agent --features-setup 65534:65534 --features-file \$f 2>&1 | grep -c 'hidden SUB'; done; stat -c %U $W/hfd $W" "1\n1\n1\nroot\nroot\n"
	# --features-verify: the agent's directory must be the one features.d
	# names (through a read-only view), not one a link pointed the mount at
	mkdir -p "$W/elsewhere"
	testing "--features-verify: the right directory: written" \
		"$GA --node-name n --host-prefix $F/gpu4/ --features-file $W/hfd/.gpu-node-agent/gpu-node-agent --features-verify $W/hfd/.gpu-node-agent >/dev/null 2>&1; echo \$?" "0\n"
	testing "--features-verify: another directory (a link swapped in): not written, exit 1, said" \
		"$GA --node-name n --host-prefix $F/gpu4/ --features-file $W/elsewhere/gpu-node-agent --features-verify $W/hfd/.gpu-node-agent >/dev/null 2>err; echo \$?; ls $W/elsewhere | wc -l; grep -c 'is not the directory' err" "1\n0\n1\n"
	ln -s "$W/elsewhere" "$W/hfd/.swapped"
	testing "--features-verify: a link in features.d is refused even when it leads there" \
		"$GA --node-name n --host-prefix $F/gpu4/ --features-file $W/elsewhere/gpu-node-agent --features-verify $W/hfd/.swapped >/dev/null 2>&1; echo \$?; ls $W/elsewhere | wc -l" "1\n0\n"
else
	skip "--features-setup: it needs root (chown), and these tests run as uid $(id -u)"
fi

# 8. Hostile procfs and sysfs: an information file full of junk, control
#    bytes in the model, a driver version that is not one, a 1 MiB
#    mem_info_vram_total, a KFD properties file that loops: no crash, the
#    odd values left out.
cp -r "$F/mixedgpu" "$W/hostile"
chmod -R u+w "$W/hostile"
H=$W/hostile
printf 'Model: \t\t NVIDIA \033[31mRED\nGPU UUID: \t not-a-uuid\n' >"$H/proc/driver/nvidia/gpus/0000:01:00.0/information"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  banana  today\n' >"$H/proc/driver/nvidia/version"
head -c 1048576 /dev/zero | tr '\0' '9' >"$H/sys/devices/pci0000:00/0000:03:00.0/mem_info_vram_total"
ln -sf /proc/self/fd/0 "$H/sys/class/kfd/kfd/topology/nodes/1/properties"
testing "hostile: junk left out, the rest reported, exit 0" \
	"$GA --node-name vm-1 --host-prefix $H/ --features-file $W/hf </dev/null 2>err | caps; echo \$?; grep -c 'no NVRM version' err; grep -c -E '^(nvidia.com/cuda|amd.com/gpu.(vram|simd|cu))' $W/hf" \
	"0000:00:02.0: Xe-LP oneAPI - - AlderLake-S GT1\n0000:01:00.0: Ampere CUDA 8.6 - GA102 [GeForce RTX 3090]\n0000:02:00.0: Ampere CUDA 8.6 - GA102 [GeForce RTX 3090]\n0000:03:00.0: CDNA2 ROCm - - Aldebaran/MI200 [Instinct MI210]\n0000:05:00.0: - MACA - - C500\n0\n1\n0\n"

# 9. Usage.
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
