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

done_testing
