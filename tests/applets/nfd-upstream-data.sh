# Conformance: upstream node-feature-discovery's own per-source test data
# (tests/fixtures/nfd-upstream) run through nfd-worker, with the features and
# labels upstream's source/*/*_test.go expect (copied below as tables: the
# values are facts). Each test name starts with its source; the last lines
# count the passes per source.
. "$(dirname "$0")/../lib/testing.sh"
U=$FB_TOP/tests/fixtures/nfd-upstream
NS=feature.node.kubernetes.io
mkdir -p "$W/empty"
NW="$FB nfd-worker --config $W/none.conf --node-name node1 --oneshot --no-publish --features-dir $W/empty"

# per-source pass/fail counts (the source is the test name up to ':')
declare -A NPASS NFAIL
eval "_pass() $(declare -f pass | sed 1d)"
eval "_fail() $(declare -f fail | sed 1d)"
pass() { _pass "$@"; NPASS[${1%%:*}]=$((${NPASS[${1%%:*}]:-0} + 1)); }
fail() { _fail "$@"; NFAIL[${1%%:*}]=$((${NFAIL[${1%%:*}]:-0} + 1)); }

# nf.py WHAT [FEATURE]: from a NodeFeature on stdin, "inst F": each element
# of instance feature F on a line as sorted k=v, in order; "attr F": the k=v
# of attribute feature F, sorted ("-" when F is absent); "flag F": its names;
# "keys": the features' names; "labels": the k=v labels, sorted.
cat >"$W/nf.py" <<'PY'
import json, sys
o = json.load(sys.stdin)["spec"]
f, what = o["features"], sys.argv[1]
if what == "keys":
    for kind in ("flags", "attributes", "instances"):
        for k in sorted(f[kind]):
            print(kind, k)
elif what == "labels":
    for k in sorted(o["labels"]):
        print("%s=%s" % (k, o["labels"][k]))
elif what == "inst":
    if sys.argv[2] not in f["instances"]:
        print("-")
    for e in f["instances"].get(sys.argv[2], {"elements": []})["elements"]:
        print(" ".join("%s=%s" % (k, v) for k, v in sorted(e["attributes"].items())))
else:
    kind = "attributes" if what == "attr" else "flags"
    if sys.argv[2] not in f[kind]:
        print("-")
    for k, v in sorted(f[kind].get(sys.argv[2], {"elements": {}})["elements"].items()):
        print("%s=%s" % (k, v) if what == "attr" else k)
PY
NF="python3 $W/nf.py"
mk() { python3 "$U/mktree" "$U/$1.tree" "$2" || fail "fixture: $1 ($2)"; }

# ---- pci: testdata/source/pci/rootfs-1, source/pci/pci_test.go ----------
mk pci-rootfs-1 "$W/pci"
# expectedFeatures["rootfs-1"]: pci.device, in upstream's (directory) order
PCI_DEVS="class=0880 device=2021 subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=ff00 device=a1ed subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=0106 device=a1d2 subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=1180 device=a1b1 subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=0780 device=a1ba subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=0604 device=a193 subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=0c80 device=a1a4 subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=0300 device=2000 subsystem_device=2000 subsystem_vendor=1a03 vendor=1a03
class=0b40 device=37c8 iommu/intel-iommu/version=1:0 iommu_group/type=identity sriov_totalvfs=16 subsystem_device=35cf subsystem_vendor=8086 vendor=8086
class=0200 device=37d2 sriov_totalvfs=32 subsystem_device=35cf subsystem_vendor=8086 vendor=8086"
PW="$NW --print-features --feature-sources=pci --label-sources=pci"
$PW --host-prefix "$W/pci/" >"$W/pci.json" 2>"$W/pci.err"
testing "pci: rootfs-1: pci.device is upstream's ten devices, in order" "$NF inst pci.device <$W/pci.json" "$PCI_DEVS\n"
n=0
while IFS= read -r dev; do
	n=$((n + 1))
	testing "pci: rootfs-1: device $n of 10 (${dev%% subsystem_device*})" \
		"$NF inst pci.device <$W/pci.json | grep -cxF '$dev'" "1\n"
done <<<"$PCI_DEVS"
testing "pci: rootfs-1: no other feature of the pci source" "$NF keys <$W/pci.json" "instances pci.device\n"
testing "pci: rootfs-1: the incomplete 0000:00:1f.2 is skipped, saying why" \
	"grep -c 'skipping device 0000:00:1f.2: vendor: not found' $W/pci.err" "1\n"
# the test cases: config (deviceClassWhitelist, deviceLabelFields) -> labels
testing "pci: detect with default config" "$NF labels <$W/pci.json" \
	"$NS/pci-0300_1a03.present=true\n$NS/pci-0b40_8086.present=true\n$NS/pci-0b40_8086.sriov.capable=true\n"
pci_case() { # NAME FIELDS LABELS: whitelist ["0c"]; features as the default's
	$PW --host-prefix "$W/pci/" --options "{\"sources\":{\"pci\":{\"deviceClassWhitelist\":[\"0c\"],\"deviceLabelFields\":$2}}}" \
		>"$W/case.json" 2>/dev/null
	testing "pci: $1: labels" "$NF labels <$W/case.json" "$3"
	testing "pci: $1: features as with the default config" \
		"$NF inst pci.device <$W/case.json | cmp - $W/pci.devs && echo same" "same\n"
}
$NF inst pci.device <"$W/pci.json" >"$W/pci.devs"
pci_case "test config with empty DeviceLabelFields" '[]' "$NS/pci-0c80_8086.present=true\n"
pci_case "test config with only invalid DeviceLabelFields" '["foo","bar"]' "$NS/pci-0c80_8086.present=true\n"
pci_case "test config with some invalid DeviceLabelFields" '["foo","class"]' "$NS/pci-0c80.present=true\n"
# rootfs-empty: Discover fails, no pci.device, no labels
$PW --host-prefix "$W/empty/" >"$W/pe.json" 2>"$W/pe.err"
testing "pci: test empty sysfs: no features" "$NF keys <$W/pe.json" ""
testing "pci: test empty sysfs: no labels" "$NF labels <$W/pe.json" ""
testing "pci: test empty sysfs: the error is logged" "grep -c 'pci: failed to detect PCI devices: .*sys/bus/pci/devices: not found' $W/pe.err" "1\n"

# The same facts in the kernel's layout: iommu_group a link into
# sys/kernel/iommu_groups/N, iommu a link to the unit in
# sys/devices/virtual/iommu, which sys/class/iommu and the unit's devices/
# list (as core/pci reads them on a real host).
K=$W/pcik
cp -r "$W/pci" "$K"
D=$K/sys/bus/pci/devices/0000:3b:00.0
mkdir -p "$K/sys/kernel/iommu_groups/30" "$K/sys/devices/virtual/iommu/dmar3/devices" "$K/sys/class/iommu"
mv "$D/iommu_group/type" "$K/sys/kernel/iommu_groups/30/type" && rmdir "$D/iommu_group"
mv "$D/iommu/intel-iommu" "$K/sys/devices/virtual/iommu/dmar3/" && rmdir "$D/iommu"
ln -s ../../../../kernel/iommu_groups/30 "$D/iommu_group"
ln -s ../../../../devices/virtual/iommu/dmar3 "$D/iommu"
ln -s ../../devices/virtual/iommu/dmar3 "$K/sys/class/iommu/dmar3"
ln -s ../../../../bus/pci/devices/0000:3b:00.0 "$K/sys/devices/virtual/iommu/dmar3/devices/0000:3b:00.0"
testing "pci: rootfs-1 in the kernel's layout (symlinks): the same ten devices" \
	"$PW --host-prefix $K/ 2>/dev/null | $NF inst pci.device" "$PCI_DEVS\n"

# Hostile trees: a planted link may not take a read out of the host root.
mkdir -p "$W/outside/30" "$W/outside/dmar3/intel-iommu" "$W/outside/dmar3/devices"
echo SECRET >"$W/outside/30/type"
echo 9:9 >"$W/outside/dmar3/intel-iommu/version"
ln -s "$K/sys/bus/pci/devices/0000:3b:00.0" "$W/outside/dmar3/devices/0000:3b:00.0"
H=$W/pcih
cp -a "$K" "$H"
D=$H/sys/bus/pci/devices/0000:3b:00.0
rm -r "$H/sys/kernel/iommu_groups/30" "$D/iommu_group" "$H/sys/devices/virtual/iommu/dmar3"
ln -s "$W/outside/30" "$H/sys/kernel/iommu_groups/30"
ln -s ../../../../../../outside/30 "$D/iommu_group"
ln -s "$W/outside/dmar3" "$H/sys/devices/virtual/iommu/dmar3"
testing "fixture: the planted kernel-layout links lead out of the root" \
	"cat $D/iommu_group/type $H/sys/kernel/iommu_groups/30/type $H/sys/devices/virtual/iommu/dmar3/intel-iommu/version" "SECRET\nSECRET\n9:9\n"
testing "pci: kernel layout, group and unit links out of the root: nothing read through them" \
	"$PW --host-prefix $H/ 2>/dev/null | $NF inst pci.device | grep 37c8" \
	"class=0b40 device=37c8 sriov_totalvfs=16 subsystem_device=35cf subsystem_vendor=8086 vendor=8086\n"
H=$W/pcih2
cp -a "$W/pci" "$H"
D=$H/sys/bus/pci/devices/0000:3b:00.0
rm "$D/iommu_group/type" && ln -s "$W/outside/30/type" "$D/iommu_group/type"
rm -r "$D/iommu/intel-iommu" && ln -s ../../../../../../../outside/dmar3/intel-iommu "$D/iommu/intel-iommu"
testing "fixture: the planted links in upstream's layout lead out of the root" \
	"cat $D/iommu_group/type $D/iommu/intel-iommu/version" "SECRET\n9:9\n"
testing "pci: upstream's layout, links out of the device directory: nothing read through them" \
	"$PW --host-prefix $H/ 2>/dev/null | $NF inst pci.device | grep 37c8" \
	"class=0b40 device=37c8 sriov_totalvfs=16 subsystem_device=35cf subsystem_vendor=8086 vendor=8086\n"

# ---- usb: upstream ships no USB data; source/usb/usb_test.go checks that
# no devices give no labels (its glob over bus/usb/devices is no error)
$NW --print-features --feature-sources=usb --label-sources=usb --host-prefix "$W/empty/" >"$W/usb.json" 2>/dev/null
testing "usb: no devices: usb.device with no elements" "$NF keys <$W/usb.json; $NF inst usb.device <$W/usb.json | wc -l" \
	"instances usb.device\n0\n"
testing "usb: no devices: no labels" "$NF labels <$W/usb.json" ""

# ---- memory: source/memory/testdata, source/memory/memory_test.go --------
mk memory "$W/memdata"
MW="$NW --print-features --feature-sources=memory --label-sources=memory"
mkdir -p "$W/mem1/proc" && cp -r "$W/memdata/hugepages" "$W/mem1/sys"
$MW --host-prefix "$W/mem1/" >"$W/mem1.json" 2>"$W/mem1.err"
testing "memory: With configured 1Gi huge pages size" "$NF attr memory.hugepages <$W/mem1.json" \
	"enabled=true\nhugepages-1Gi=2\nhugepages-2Mi=0\n"
testing "memory: With invalid directory structure" \
	"$MW --host-prefix $W/empty/ 2>/dev/null | $NF attr memory.hugepages" "enabled=false\n"
# getNumberOfNonEmptyLinesFromFile on /proc/swaps: swap 2 lines, noswap 1, a
# missing file an error (then upstream leaves memory.swap out)
cp "$W/memdata/swap" "$W/mem1/proc/swaps"
$MW --host-prefix "$W/mem1/" >"$W/mem2.json" 2>/dev/null
testing "memory: testdata/swap (2 lines): swap enabled" "$NF attr memory.swap <$W/mem2.json" "enabled=true\n"
testing "memory: testdata/swap: the memory-swap label" "$NF labels <$W/mem2.json" "$NS/memory-swap=true\n"
cp "$W/memdata/noswap" "$W/mem1/proc/swaps"
$MW --host-prefix "$W/mem1/" >"$W/mem3.json" 2>/dev/null
testing "memory: testdata/noswap (1 line): swap not enabled" "$NF attr memory.swap <$W/mem3.json" "enabled=false\n"
testing "memory: testdata/noswap: no label" "$NF labels <$W/mem3.json" ""
testing "memory: file_not_exist: no memory.swap, the error logged" \
	"$NF attr memory.swap <$W/mem1.json; grep -c 'failed to detect swap' $W/mem1.err" "-\n1\n"
# numa and nv: upstream's tests have no data for them; its memory.go is the
# spec (node count of bus/node/devices; bus/nd/devices instances with
# devtype, mode, name; labels numa, nv.present, nv.dax)
mkdir -p "$W/mem4/sys/bus/node/devices/node0" "$W/mem4/sys/bus/node/devices/node1" \
	"$W/mem4/sys/bus/nd/devices/dax0.0" "$W/mem4/sys/bus/nd/devices/region0"
echo nd_dax >"$W/mem4/sys/bus/nd/devices/dax0.0/devtype"
echo devdax >"$W/mem4/sys/bus/nd/devices/dax0.0/mode"
echo nd_region >"$W/mem4/sys/bus/nd/devices/region0/devtype"
$MW --host-prefix "$W/mem4/" >"$W/mem4.json" 2>/dev/null
testing "memory: two NUMA nodes" "$NF attr memory.numa <$W/mem4.json" "is_numa=true\nnode_count=2\n"
testing "memory: NVDIMM instances" "$NF inst memory.nv <$W/mem4.json" \
	"devtype=nd_dax mode=devdax name=dax0.0\ndevtype=nd_region name=region0\n"
testing "memory: numa, nv.present and nv.dax labels" "$NF labels <$W/mem4.json" \
	"$NS/memory-numa=true\n$NS/memory-nv.dax=true\n$NS/memory-nv.present=true\n"
rm -r "$W/mem4/sys/bus/node/devices/node1" "$W/mem4/sys/bus/nd/devices/dax0.0"
testing "memory: one NUMA node, no nd_dax: is_numa false, only nv.present" \
	"$MW --host-prefix $W/mem4/ 2>/dev/null | tee $W/mem5.json | $NF attr memory.numa; $NF labels <$W/mem5.json" \
	"is_numa=false\nnode_count=1\n$NS/memory-nv.present=true\n"

# ---- local: source/local/testdata/features.d, source/local/local_test.go --
mk local "$W/localdata"
LW="$NW --print-features --feature-sources=local --label-sources=local --host-prefix $W/empty/"
$LW --features-dir "$W/localdata/features.d" >"$W/local.json" 2>"$W/local.err"
# TestGetExpirationDate: 7 features, 8 labels; these are the ones
testing "local: TestGetExpirationDate: 7 features" "$NF attr local.feature <$W/local.json | wc -l" "7\n"
testing "local: TestGetExpirationDate: 8 labels" "$NF attr local.label <$W/local.json | wc -l" "8\n"
testing "local: local.feature" "$NF attr local.feature <$W/local.json" \
	"featureKey2=featureValue2\nfeatureKey3=featureValue3\nfeatureKeyRandomComment=featureValue\nfeatureKeyUnparsable=featureValue\nfeatureKeyValid=featureValue\nfoo=baz\nmy-feature=value\n"
testing "local: local.label" "$NF attr local.label <$W/local.json" \
	"featureKey2=featureValue2\nfeatureKey3=featureValue3\nfeatureKeyRandomComment=featureValue\nfeatureKeyUnparsable=featureValue\nfeatureKeyValid=featureValue\nlabel-only=value\nlabel-only-2=value\nmy-feature=value\n"
testing "local: the labels published are local.label, unprefixed" "$NF labels <$W/local.json" \
	"featureKey2=featureValue2\nfeatureKey3=featureValue3\nfeatureKeyRandomComment=featureValue\nfeatureKeyUnparsable=featureValue\nfeatureKeyValid=featureValue\nlabel-only=value\nlabel-only-2=value\nmy-feature=value\n"
testing "local: big_file (70262 bytes) over the 64 KiB cap: skipped, logged" \
	"grep -c 'big_file: file size limit exceeded: 70262 bytes > 65536 bytes' $W/local.err; grep -c featureKeyValid2 $W/local.json" "1\n0\n"
testing "local: expired_feature and the expired keys of multiple_expiration_dates left out" \
	"grep -c -e featureKeyExpired -e 'featureKey\"' -e featureKey4 $W/local.json" "0\n"
testing "local: unparsable_expiry_comment: logged, its key kept" \
	"grep -c 'unparsable_expiry_comment line 1' $W/local.err" "1\n"
testing "local: the hidden .my.feature is not read" "grep -c hiddenFeatureKey $W/local.json" "0\n"
# TestParseDirectives: a valid directive, an unknown one, a malformed one
mkdir -p "$W/fd2"
printf '# +expiry-time=2080-07-28T11:22:33Z\nk1=v\n# +random-key=random-value\nk2=v\n# + Something\nk3=v\n' >"$W/fd2/directives"
$LW --features-dir "$W/fd2" >"$W/fd2.json" 2>"$W/fd2.err"
testing "local: TestParseDirectives: valid directive: no error" "grep -c 'line 1' $W/fd2.err" "0\n"
testing "local: TestParseDirectives: invalid directive: an error" "grep -c 'line 3' $W/fd2.err" "1\n"
testing "local: TestParseDirectives: invalid directive format: an error" "grep -c 'line 5' $W/fd2.err" "1\n"
testing "local: lines after a directive error are still read" "$NF attr local.feature <$W/fd2.json" "k1=v\nk2=v\nk3=v\n"

# ---- kernel: source/kernel/version_test.go (TestParseVersion) ------------
kver() { # RAW WANT: kernel.version of a host whose osrelease is RAW
	rm -rf "$W/k" && mkdir -p "$W/k/proc/sys/kernel" && printf '%s\n' "$1" >"$W/k/proc/sys/kernel/osrelease"
	$NW --print-features --feature-sources=kernel --label-sources=kernel --host-prefix "$W/k/" >"$W/k.json" 2>/dev/null
	testing "kernel: parseVersion($1): kernel.version" "$NF attr kernel.version <$W/k.json" "$2"
	testing "kernel: parseVersion($1): the labels" "$NF labels <$W/k.json | grep kernel-version" \
		"$(printf '%b' "$2" | sed "s|^|$NS/kernel-version.|")\n"
}
kver 6.2.3 "full=6.2.3\nmajor=6\nminor=2\nrevision=3\n"
kver 6.0.0-beta "full=6.0.0-beta\nmajor=6\nminor=0\nrevision=0\n"
kver 6.8 "full=6.8\nmajor=6\nminor=8\nrevision=\n"
kver '6.0.10-100+123.x86_64~' "full=6.0.10-100_123.x86_64\nmajor=6\nminor=0\nrevision=10\n"

# ---- system: source/system/system_test.go (TestDmiIDAttributeNames) ------
DMI="bios_date=01/01/2024
bios_vendor=TestBIOSVendor
bios_version=1.0.0
board_asset_tag=BoardAsset123
board_name=TestBoard
board_vendor=TestBoardVendor
board_version=Rev 1.0
chassis_asset_tag=ChassisAsset456
chassis_type=17
chassis_vendor=TestChassisVendor
chassis_version=N/A
product_family=TestFamily
product_name=TestProduct
product_sku=SKU-001
product_version=2.0
sys_vendor=TestVendor"
mkdir -p "$W/sys1/sys/devices/virtual/dmi/id" "$W/sys1/etc"
printf 'ID=test\nVERSION_ID=1.0\n' >"$W/sys1/etc/os-release"
while IFS='=' read -r k v; do printf '%s\n' "$v" >"$W/sys1/sys/devices/virtual/dmi/id/$k"; done <<<"$DMI"
testing "system: the 16 DMI attributes, whitespace trimmed" \
	"$NW --print-features --feature-sources=system --label-sources=system --host-prefix $W/sys1/ 2>/dev/null | $NF attr system.dmiid" "$DMI\n"

for s in pci usb memory local kernel system; do
	printf '# conformance: %s: %d of %d checks passed\n' "$s" "${NPASS[$s]:-0}" $((${NPASS[$s]:-0} + ${NFAIL[$s]:-0}))
done
done_testing
