# q35.sh: the x86_64 guest (q35, intel-iommu, xHCI with a keyboard, a tablet and
# an FTDI serial adapter, bochs-display). Every expectation is computed here by
# busybox shell from the same sysfs featurebox reads, never by featurebox.
SUITE=vm/x86_64-q35
for m in xhci-pci usbhid hid-generic bochs; do
	modprobe "$m" || fail "modprobe $m"
done
# USB enumeration and the DRM probe are asynchronous
i=0
while [ $i -lt 600 ]; do
	n=$(ls /sys/bus/usb/devices/*/idProduct 2>/dev/null | wc -l)
	ni=$(ls /sys/bus/usb/devices/*:*/bInterfaceClass 2>/dev/null | wc -l)
	bochs=
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/vendor)" = 0x1234 ] && [ "$(cat $d/device)" = 0x1111 ] && bochs=${d##*/}
	done
	[ "$n" -ge 5 ] && [ "$ni" -ge 5 ] && [ -n "$bochs" ] && [ -e /sys/bus/pci/devices/$bochs/driver ] && break
	sleep 0.1
	i=$((i + 1))
done
same "the guest sees 5 USB devices (2 root hubs, keyboard, tablet, FTDI serial)" "$n" 5
ok "the bochs display is bound to a driver" test -e "/sys/bus/pci/devices/$bochs/driver"
drv() { b=$(readlink "/sys/bus/pci/devices/$1/driver" 2>/dev/null); echo "${b##*/}"; }
ovr() { cat "/sys/bus/pci/devices/$1/driver_override"; }
same "its driver is bochs-drm" "$(drv $bochs)" bochs-drm
group=$(readlink /sys/bus/pci/devices/$bochs/iommu_group)
group=${group##*/}
ok "it has an IOMMU group" test -n "$group"

# ---- the sysfs, copied out for tests/fixtures/sysfs/qemu-q35 -------------
cap=/tmp/cap
copy() { # DIR FILE...: the readable attributes and the driver/iommu_group links of DIR
	local d=$1 rel f
	shift
	rel=${d#/sys/}
	mkdir -p "$cap/sys/$rel"
	for f in "$@"; do
		[ -f "$d/$f" ] && cat "$d/$f" >"$cap/sys/$rel/$f" 2>/dev/null
	done
	for f in driver iommu_group iommu; do
		[ -L "$d/$f" ] && ln -s "$(readlink "$d/$f")" "$cap/sys/$rel/$f"
	done
	if [ -L "$d/driver" ]; then # the driver's directory, with the files a registered driver has
		f=$cap/sys/$(readlink -f "$d/driver" | sed 's#^/sys/##')
		mkdir -p "$f"
		: >"$f/uevent"
		: >"$f/bind"
		: >"$f/unbind"
	fi
}
mkdir -p $cap/sys/bus/pci/devices $cap/sys/bus/usb/devices
for l in /sys/bus/pci/devices/*; do
	copy "$(readlink -f "$l")" class vendor device subsystem_vendor subsystem_device revision uevent \
		modalias numa_node boot_vga driver_override irq enable local_cpulist current_link_speed \
		current_link_width max_link_speed max_link_width sriov_totalvfs
	ln -s "$(readlink "$l")" "$cap/sys/bus/pci/devices/${l##*/}"
done
mkdir -p $cap/sys/class/iommu
for u in /sys/devices/virtual/iommu/*; do
	c=$cap/sys/devices/virtual/iommu/${u##*/}
	mkdir -p "$c/intel-iommu" "$c/devices"
	for f in version cap ecap; do
		cat "$u/intel-iommu/$f" >"$c/intel-iommu/$f"
	done
	for l in "$u"/devices/*; do
		ln -s "$(readlink "$l")" "$c/devices/${l##*/}"
	done
	ln -s "$(readlink "/sys/class/iommu/${u##*/}")" "$cap/sys/class/iommu/${u##*/}"
done
for g in /sys/kernel/iommu_groups/*; do
	mkdir -p "$cap/sys/kernel/iommu_groups/${g##*/}/devices"
	cat "$g/type" >"$cap/sys/kernel/iommu_groups/${g##*/}/type"
	for l in "$g"/devices/*; do
		ln -s "$(readlink "$l")" "$cap/sys/kernel/iommu_groups/${g##*/}/devices/${l##*/}"
	done
done
for l in /sys/bus/usb/devices/*; do
	copy "$(readlink -f "$l")" idVendor idProduct bDeviceClass bDeviceSubClass bDeviceProtocol bcdDevice \
		bInterfaceClass bInterfaceSubClass bInterfaceProtocol bInterfaceNumber bNumInterfaces \
		bConfigurationValue serial manufacturer product speed version busnum devnum devpath uevent
	ln -s "$(readlink "$l")" "$cap/sys/bus/usb/devices/${l##*/}"
done
echo "=== fb-vm file sysfs.tar.gz ==="
(cd $cap && tar czf - sys) | base64
echo "=== fb-vm file end ==="

# ---- 1. nfd-worker: labels and features equal the shell's reading -----------
# NFD's defaults: pci deviceClassWhitelist 03, 0b40, 12 and fields class,vendor;
# usb deviceClassWhitelist 0e, ef, fe, ff and fields class,vendor,device, the
# class taken per interface when bDeviceClass is 00.
hex() { v=$(cat "$1"); v=${v#0x}; echo "$v"; }
want_pci=
for d in /sys/bus/pci/devices/*; do
	c=$(hex $d/class)
	c=${c%??}
	v=$(hex $d/vendor)
	case $c in 03* | 0b40 | 12*) want_pci="$want_pci feature.node.kubernetes.io/pci-${c}_$v.present=true" ;; esac
done
want_usb=
for d in /sys/bus/usb/devices/*; do
	[ -f $d/idProduct ] || continue
	c=$(cat $d/bDeviceClass)
	if [ "$c" = 00 ]; then
		c=$(cat $d/*/bInterfaceClass 2>/dev/null | sort -u)
	fi
	for k in $c; do
		case $k in 0e | ef | fe | ff)
			want_usb="$want_usb feature.node.kubernetes.io/usb-${k}_$(cat $d/idVendor)_$(cat $d/idProduct).present=true" ;;
		esac
	done
done
featurebox nfd-worker --oneshot --no-publish --host-prefix / >/tmp/labels 2>/tmp/nfd.err
same "nfd-worker --oneshot --no-publish exits 0" "$?" 0 || cat /tmp/nfd.err
same "nfd-worker: the PCI labels are the shell's" "$(grep '^feature.node.kubernetes.io/pci-' /tmp/labels | sort)" \
	"$(for l in $want_pci; do echo $l; done | sort -u)"
same "nfd-worker: the USB labels are the shell's (the FTDI adapter's class ff interface)" \
	"$(grep '^feature.node.kubernetes.io/usb-' /tmp/labels | sort)" "$(for l in $want_usb; do echo $l; done | sort -u)"
ok "nfd-worker: a whitelisted USB label is there" grep -q '^feature.node.kubernetes.io/usb-ff_0403_6001.present=true$' /tmp/labels
ok "nfd-worker: the bochs display's PCI label is there" grep -q '^feature.node.kubernetes.io/pci-0380_1234.present=true$' /tmp/labels

featurebox nfd-worker --oneshot --no-publish --print-features --host-prefix / >/tmp/nf.json 2>>/tmp/nfd.err
same "nfd-worker --print-features exits 0" "$?" 0
# every PCI function as an instance: class vendor device subsystem, the IOMMU
# group type and the Intel IOMMU version
attr() { echo "$1" | sed -n "s#.*\"$2\":\"\([^\"]*\)\".*#\1#p"; }
got=$(tr '{' '\n' </tmp/nf.json | grep '^"class":"[0-9a-f]\{4\}",' | while read -r l; do
	echo "$(attr "$l" class) $(attr "$l" vendor) $(attr "$l" device) $(attr "$l" subsystem_vendor)" \
		"$(attr "$l" subsystem_device) $(attr "$l" iommu_group/type) $(attr "$l" iommu/intel-iommu/version)"
done | sort)
want=$(for d in /sys/bus/pci/devices/*; do
	c=$(hex $d/class)
	echo "${c%??} $(hex $d/vendor) $(hex $d/device) $(hex $d/subsystem_vendor) $(hex $d/subsystem_device)" \
		"$(cat $d/iommu_group/type) $(cat $d/iommu/intel-iommu/version)"
done | sort)
same "nfd-worker: pci.device instances are the guest's PCI functions" "$got" "$want"
got=$(sed -n 's/.*"usb.device":{"elements":\[\([^]]*\)\].*/\1/p' /tmp/nf.json | tr '{' '\n' |
	sed -n 's/^"class":"\([0-9a-f]*\)","device":"\([0-9a-f]*\)",\("serial":"[^"]*",\)\{0,1\}"vendor":"\([0-9a-f]*\)".*/\1 \4 \2/p' | sort)
want=$(for d in /sys/bus/usb/devices/*; do
	[ -f $d/idProduct ] || continue
	c=$(cat $d/bDeviceClass)
	[ "$c" = 00 ] && c=$(cat $d/*/bInterfaceClass 2>/dev/null | sort -u)
	for k in $c; do echo "$k $(cat $d/idVendor) $(cat $d/idProduct)"; done
done | sort)
same "nfd-worker: usb.device instances are the guest's USB devices (per interface class for class 00)" "$got" "$want"
echo "=== fb-vm file labels ==="
for l in $want_pci $want_usb; do echo $l; done | sort -u
echo "=== fb-vm file end ==="

# ---- 2. gpu-node-agent: the bochs device, vendor 1234 mapped ----------------
printf 'qemu: "1234"\n' >/tmp/vendors.yaml
featurebox gpu-node-agent --oneshot --no-publish --node-name vm --host-prefix / --vendors-file /tmp/vendors.yaml \
	>/tmp/gpu.json 2>/tmp/gpu.err
same "gpu-node-agent --oneshot --no-publish exits 0" "$?" 0
same "gpu-node-agent: one device, the bochs display" "$(grep -o '"address":"[^"]*"' /tmp/gpu.json)" "\"address\":\"$bochs\""
same "gpu-node-agent: its driver" "$(grep -o '"currentState":{[^}]*}' /tmp/gpu.json)" \
	'"currentState":{"driver":"bochs-drm","driverType":"Other"}'
same "gpu-node-agent: its IOMMU group" "$(grep -o '"iommuGroup":[0-9]*' /tmp/gpu.json)" "\"iommuGroup\":$group"
same "gpu-node-agent: its class" "$(grep -o '"class":{"code":"[0-9a-f]*"' /tmp/gpu.json)" '"class":{"code":"0380"'

# ---- 3. vfio-switch: bochs-drm -> vfio-pci -> back -------------------------
ok "vfio-pci is not loaded yet (vfio-switch loads it)" test ! -e /sys/bus/pci/drivers/vfio-pci
seq() { cat /sys/kernel/uevent_seqnum; } # every bind and unbind is a uevent
s0=$(seq)
featurebox vfio-switch --pci $bochs --to vfio-pci --dry-run >/tmp/dry.json 2>/tmp/vs.err
same "vfio-switch --dry-run exits 0" "$?" 0
same "vfio-switch --dry-run plans the load and the four steps" \
	"$(grep -o '"plan":\[[^]]*\]' /tmp/dry.json)" \
	"\"plan\":[\"modprobe vfio-pci\",\"write /sys/bus/pci/devices/$bochs/driver_override: vfio-pci\",\"write /sys/bus/pci/devices/$bochs/driver/unbind: $bochs\",\"write /sys/bus/pci/drivers_probe: $bochs\",\"wait until $bochs is bound to vfio-pci\"]"
same "vfio-switch --dry-run changed nothing" "$(drv $bochs) $(ovr $bochs) $(ls /sys/bus/pci/drivers | grep -c vfio)" "bochs-drm (null) 0"
same "vfio-switch --dry-run: no uevent at all (nothing bound, unbound or loaded)" "$(seq)" "$s0"

# a process holding the display's DRM node: refused (exit 4), named by pid and
# command, found through /proc/PID/fd by the node's st_rdev; nothing moves
card=$(ls /sys/bus/pci/devices/$bochs/drm | grep '^card[0-9]*$' | head -n 1)
ok "the display has a DRM card node ($card)" test -c "/dev/dri/$card"
# hold NODE: a sleep with NODE open as its stdin, in $holder once the child
# has opened it and exec'd sleep (polled, at most 60 s, as the USB wait)
hold() {
	local i=0
	sleep 1000 <"$1" &
	holder=$!
	while [ $i -lt 600 ] && { [ "$(readlink /proc/$holder/fd/0)" != "$1" ] || [ "$(cat /proc/$holder/comm)" != sleep ]; }; do
		sleep 0.1
		i=$((i + 1))
	done
	same "a sleep (pid $holder) holds $1" "$(readlink /proc/$holder/fd/0) $(cat /proc/$holder/comm)" "$1 sleep"
}
hold "/dev/dri/$card"
featurebox vfio-switch --pci $bochs --to vfio-pci --dry-run >/tmp/busy-dry.json 2>>/tmp/vs.err
same "vfio-switch --dry-run while pid $holder holds /dev/dri/$card: exit 4, the refusal shown" \
	"$? $(grep -c "\"error\":\"in use: pid $holder (sleep) holds /dev/dri/$card of $bochs" /tmp/busy-dry.json)" "4 1"
featurebox vfio-switch --pci $bochs --to vfio-pci >/tmp/busy.json 2>>/tmp/vs.err
same "vfio-switch while pid $holder holds /dev/dri/$card: refused, exit 4" "$?" 4
same "the refusal names the holder: pid, command, node" "$(grep -o '"holders":\[[^]]*\]' /tmp/busy.json)" \
	"\"holders\":[{\"pid\":$holder,\"command\":\"sleep\",\"node\":\"/dev/dri/$card\",\"address\":\"$bochs\"}]"
ok "the error says it: pid $holder (sleep) holds /dev/dri/$card of $bochs" \
	grep -q "in use: pid $holder (sleep) holds /dev/dri/$card of $bochs" /tmp/busy.json
same "refused: still on bochs-drm, no override, vfio-pci not loaded, no uevent" \
	"$(drv $bochs) $(ovr $bochs) $(ls /sys/bus/pci/drivers | grep -c vfio) $(seq)" "bochs-drm (null) 0 $s0"
kill $holder
wait $holder 2>/dev/null # reaped: its files are closed
ok "the holder is gone" test ! -e /proc/$holder
# now free: the switch below goes through, and back
featurebox vfio-switch --pci 0000:00:1f.7 --to vfio-pci >/tmp/nf3.json 2>>/tmp/vs.err
same "vfio-switch: an unknown address exits 3" "$?" 3
featurebox vfio-switch --pci $bochs --to vfio-pci >/tmp/sw.json 2>>/tmp/vs.err
same "vfio-switch to vfio-pci exits 0" "$?" 0
same "vfio-switch: the result" "$(grep -o '"result":"[a-z-]*"}$' /tmp/sw.json) $(grep -o '"functions":\[[^]]*\]' /tmp/sw.json)" \
	"\"result\":\"switched\"} \"functions\":[{\"address\":\"$bochs\",\"from\":\"bochs-drm\",\"to\":\"vfio-pci\",\"result\":\"switched\"}]"
same "the kernel has it on vfio-pci with the override" "$(drv $bochs) $(ovr $bochs)" "vfio-pci vfio-pci"
ok "/dev/vfio/$group exists" test -e /dev/vfio/$group
s0=$(seq)
featurebox vfio-switch --pci $bochs --to vfio-pci >/tmp/sw2.json 2>>/tmp/vs.err
same "a second identical call exits 0 and changes nothing" "$? $(grep -o '"result":"[a-z-]*"}$' /tmp/sw2.json) $(drv $bochs)" \
	'0 "result":"unchanged"} vfio-pci'
same "the second call caused no uevent (no unbind, no rebind)" "$(seq)" "$s0"
# a VFIO user (here a sleep holding the group's /dev/vfio/N, as QEMU does):
# back to the host is refused, naming it
hold "/dev/vfio/$group"
featurebox vfio-switch --pci $bochs --to default >/tmp/busy2.json 2>>/tmp/vs.err
same "vfio-switch --to default while pid $holder holds /dev/vfio/$group: refused, exit 4, named" \
	"$? $(grep -c "in use: pid $holder (sleep) holds /dev/vfio/$group of $bochs" /tmp/busy2.json) $(drv $bochs) $(seq)" "4 1 vfio-pci $s0"
kill $holder
wait $holder 2>/dev/null
featurebox vfio-switch --pci $bochs --to default >/tmp/back.json 2>>/tmp/vs.err
same "vfio-switch --to default exits 0" "$?" 0
same "back on bochs-drm, no override" "$(drv $bochs) $(ovr $bochs)" "bochs-drm (null)"
ok "/dev/vfio/$group is gone with it" test ! -e /dev/vfio/$group
ok "the display works again: a DRM card is there" test -e /sys/bus/pci/devices/$bochs/drm
featurebox vfio-switch --pci $bochs --to vfio-pci --group device -o text >/tmp/sw3.txt 2>>/tmp/vs.err
same "text output, --group device" "$? $(tail -n 1 /tmp/sw3.txt) $(drv $bochs)" "0 switched vfio-pci"
featurebox vfio-switch --pci $bochs --to bochs-drm >/tmp/back2.json 2>>/tmp/vs.err
same "--to bochs-drm by name: back, the override names it" "$? $(drv $bochs) $(ovr $bochs)" "0 bochs-drm bochs-drm"
echo "--- vfio-switch stderr"
cat /tmp/vs.err
finish
