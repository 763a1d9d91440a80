# nfd-worker: upstream's built-in custom rules (rdma.capable, rdma.available)
# and its fake source, through the binary.
. "$(dirname "$0")/../lib/testing.sh"
F=$FB_TOP/tests/fixtures
mkdir -p "$W/pi" "$W/rdma" "$W/fd"
cp -r "$F/nfd/rpi4/." "$W/pi/" && cp -r "$F/sysfs/rpi4/." "$W/pi/"
cp -r "$W/pi/." "$W/rdma/"
NW="$FB nfd-worker --oneshot --no-publish --config $W/none.conf --node-name node1 --features-dir $W/fd"

# 1. The built-in rules: a Mellanox (15b3) PCI device; ib_uverbs and rdma_ucm
# loaded. Custom labels are unprefixed in the NodeFeature, as upstream's.
testing "no Mellanox device, no RDMA modules: neither rdma label" \
	"$NW --host-prefix $W/pi/ --label-sources=custom 2>/dev/null | grep -c rdma" "0\n"
# the VL805 made a Mellanox part (the worker reads the ids from uevent)
sed -i 's/^PCI_ID=1106:/PCI_ID=15B3:/' "$W/rdma/sys/bus/pci/devices/0000:01:00.0/uevent"
printf '0x15b3\n' >"$W/rdma/sys/bus/pci/devices/0000:01:00.0/vendor"
testing "a Mellanox PCI device: rdma.capable" \
	"$NW --host-prefix $W/rdma/ --label-sources=custom 2>/dev/null" \
	"rdma.capable=true\n"
echo "ib_uverbs 163840 2 rdma_ucm, Live 0x0000000000000000" >>"$W/rdma/proc/modules"
testing "ib_uverbs alone: no rdma.available (both modules are needed)" \
	"$NW --host-prefix $W/rdma/ --label-sources=custom 2>/dev/null | grep -c rdma.available" "0\n"
echo "rdma_ucm 32768 0 - Live 0x0000000000000000" >>"$W/rdma/proc/modules"
testing "ib_uverbs and rdma_ucm: rdma.available as well" \
	"$NW --host-prefix $W/rdma/ --label-sources=custom 2>/dev/null" \
	"rdma.available=true\nrdma.capable=true\n"
testing "a config rule sees the same features after them" \
	"$NW --host-prefix $W/rdma/ --label-sources=custom --options '{\"sources\":{\"custom\":[{\"name\":\"mine\",\"labels\":{\"my-rdma\":\"yes\"},\"matchFeatures\":[{\"feature\":\"kernel.loadedmodule\",\"matchExpressions\":{\"rdma_ucm\":{\"op\":\"Exists\"}}}]}]}}' 2>/dev/null" \
	"my-rdma=yes\nrdma.available=true\nrdma.capable=true\n"
testing "-custom in labelSources: no rdma labels" \
	"$NW --host-prefix $W/rdma/ --label-sources=all,-custom 2>/dev/null | grep -c rdma" "0\n"

# 2. The fake source (upstream's, for trying rules without the hardware).
testing "fake is not in \"all\"" \
	"$NW --host-prefix $W/pi/ --print-features 2>/dev/null | grep -c -e fake -e fakefeature" "0\n"
testing "-feature-sources=fake: upstream's default labels" \
	"$NW --host-prefix $W/pi/ -feature-sources=fake -label-sources=fake 2>/dev/null" \
	"feature.node.kubernetes.io/fake-fakefeature1=true\nfeature.node.kubernetes.io/fake-fakefeature2=true\nfeature.node.kubernetes.io/fake-fakefeature3=true\n"
testing "... and its default features" \
	"$NW --host-prefix $W/pi/ -feature-sources=fake --print-features 2>/dev/null | python3 -c 'import json,sys; f=json.load(sys.stdin)[\"spec\"][\"features\"]; print(sorted(f[\"flags\"][\"fake.flag\"][\"elements\"]), f[\"attributes\"][\"fake.attribute\"][\"elements\"], [sorted(e[\"attributes\"].items()) for e in f[\"instances\"][\"fake.instance\"][\"elements\"]])'" \
	"['flag_1', 'flag_2', 'flag_3'] {'attr_1': 'true', 'attr_2': 'false', 'attr_3': '10'} [[('attr_1', 'true'), ('attr_2', 'false'), ('attr_3', '10'), ('attr_4', 'foobar'), ('name', 'instance_1')], [('attr_1', 'true'), ('attr_2', 'true'), ('attr_3', '100'), ('name', 'instance_2')], [('name', 'instance_3')]]\n"
cat >"$W/fake.conf" <<'EOC'
core:
  featureSources: [fake]
  labelSources: [fake, custom]
sources:
  fake:
    labels:
      gpu-model: a100
      example.com/zone: lab
    attributeFeatures:
      attr_3: "42"
    instanceFeatures:
    - {name: nic0, speed: "100"}
  custom:
  - name: fake-rule
    labels: {fast-nic: "true"}
    matchFeatures:
    - feature: fake.instance
      matchExpressions: {speed: {op: Gt, value: ["40"]}}
    - feature: fake.attribute
      matchExpressions: {attr_3: {op: In, value: ["42"]}}
EOC
testing "sources.fake from the file: labels added to the defaults, a rule matches its features" \
	"$FB nfd-worker --oneshot --no-publish --config $W/fake.conf --node-name node1 --host-prefix $W/pi/ --features-dir $W/fd 2>/dev/null" \
	"example.com/zone=lab\nfast-nic=true\nfeature.node.kubernetes.io/fake-fakefeature1=true\nfeature.node.kubernetes.io/fake-fakefeature2=true\nfeature.node.kubernetes.io/fake-fakefeature3=true\nfeature.node.kubernetes.io/fake-gpu-model=a100\n"
testing "a bad sources.fake: exit 1, names the key" \
	"$NW --host-prefix $W/pi/ -feature-sources=fake --options '{\"sources\":{\"fake\":{\"labels\":[1]}}}' 2>&1 | grep -c 'sources.fake: labels: expected a mapping, got a list'; $NW --host-prefix $W/pi/ -feature-sources=fake --options '{\"sources\":{\"fake\":{\"labels\":[1]}}}' >/dev/null 2>&1; echo \$?" \
	"1\n1\n"

done_testing
