# The sysfs of a real kernel (QEMU q35 + intel-iommu under Debian's 6.1 kernel,
# copied out of the tests/vm guest: FB_VM_CAPTURE=1 tests/vm/run q35) as a
# regression fixture: what the applets read from it must not drift from what
# they read in the guest. labels is the guest's shell reading, not ours.
. "$(dirname "$0")/../lib/testing.sh"
Q=$FB_TOP/tests/fixtures/sysfs/qemu-q35
testing "nfd-worker: the PCI and USB labels the guest's shell computed" \
	"$FB nfd-worker --oneshot --no-publish --host-prefix $Q/ 2>/dev/null | grep -E '^feature.node.kubernetes.io/(pci|usb)-' | sort" \
	"$(cat "$Q/labels")\n"
testing "nfd-worker: every PCI function an instance, with the Intel IOMMU version" \
	"$FB nfd-worker --oneshot --no-publish --print-features --host-prefix $Q/ 2>/dev/null | python3 -c 'import json,sys; f=json.load(sys.stdin)[\"spec\"][\"features\"][\"instances\"][\"pci.device\"][\"elements\"]; print(len(f), sorted({e[\"attributes\"][\"iommu/intel-iommu/version\"] for e in f}))'" \
	"6 ['1:0']\n"
printf 'qemu: "1234"\n' >"$W/vendors.yaml"
testing "gpu-node-agent: the bochs display, bochs-drm, IOMMU group 2" \
	"$FB gpu-node-agent --oneshot --no-publish --node-name vm --host-prefix $Q/ --vendors-file $W/vendors.yaml 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print([(x[\"pciInfo\"][\"address\"], x[\"currentState\"], x[\"pciInfo\"][\"iommuGroup\"]) for x in d])'" \
	"[('0000:00:02.0', {'driver': 'bochs-drm', 'driverType': 'Other'}, 2)]\n"
testing "vfio-switch --dry-run: the plan the guest ran" \
	"$FB vfio-switch --host-prefix $Q/ --pci 0000:00:02.0 --to vfio-pci --dry-run 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[\"iommuGroup\"]); print(\"\\n\".join(r[\"plan\"]))'" \
	"2\nmodprobe vfio-pci\nwrite $Q/sys/bus/pci/devices/0000:00:02.0/driver_override: vfio-pci\nwrite $Q/sys/bus/pci/devices/0000:00:02.0/driver/unbind: 0000:00:02.0\nwrite $Q/sys/bus/pci/drivers_probe: 0000:00:02.0\nwait until 0000:00:02.0 is bound to vfio-pci\n"
testing "vfio-switch --dry-run: the ICH9 functions share group 3 with no bridge to hide behind" \
	"$FB vfio-switch --host-prefix $Q/ --pci 0000:00:1f.2 --to vfio-pci --dry-run 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[\"result\"], [f[\"address\"] for f in r[\"functions\"]])'" \
	"dry-run ['0000:00:1f.0', '0000:00:1f.2', '0000:00:1f.3']\n"
done_testing
