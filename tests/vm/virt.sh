# virt.sh: the aarch64 guest (-M virt, cortex-a72 x4, two virtio PCI devices).
# Expectations are computed by busybox shell from the same /proc and /sys.
SUITE=vm/aarch64-virt

# ---- 4. dt-labeller: the live tree and the raw blob give the same labels ----
# dt-labeller's rule: the compatible strings of the root node and of the nodes
# named cpu and gpu, ',' -> '-', counted per string.
dtwant() {
	for n in /proc/device-tree $(find /proc/device-tree/ -type d \( -name cpu -o -name "cpu@*" -o -name gpu -o -name "gpu@*" \)); do
		[ -f "$n/compatible" ] && tr '\0' '\n' <"$n/compatible"
	done | grep -v '^$' | sed 's/,/-/g' | sort | uniq -c | awk '{ print "beta.devicetree.org/" $2 ": " $1 }'
}
featurebox dt-labeller -d --host-prefix / >/tmp/dt-proc 2>/tmp/dt.err
same "dt-labeller -d from /proc/device-tree exits 0" "$?" 0
featurebox dt-labeller -d --dtb /sys/firmware/fdt >/tmp/dt-fdt 2>>/tmp/dt.err
same "dt-labeller -d --dtb /sys/firmware/fdt exits 0" "$?" 0
same "dt-labeller: the labels are the shell's reading of /proc/device-tree" "$(grep '^beta' /tmp/dt-proc)" "$(dtwant)"
same "dt-labeller: /proc/device-tree and /sys/firmware/fdt give the same output" "$(cat /tmp/dt-fdt)" "$(cat /tmp/dt-proc)"
same "dt-labeller: linux,dummy-virt and four cortex-a72" "$(grep '^beta' /tmp/dt-proc)" \
	"beta.devicetree.org/arm-cortex-a72: 4
beta.devicetree.org/linux-dummy-virt: 1"

# ---- 5. nfd-worker: the virtio PCI devices ----------------------------------
# /etc/nfd-worker.conf whitelists classes 00 and 06, so the host bridge and the
# virtio devices get labels.
hex() { v=$(cat "$1"); v=${v#0x}; echo "$v"; }
want=
for d in /sys/bus/pci/devices/*; do
	c=$(hex $d/class)
	c=${c%??}
	case $c in 00* | 06*) want="$want feature.node.kubernetes.io/pci-${c}_$(hex $d/vendor).present=true" ;; esac
done
featurebox nfd-worker --oneshot --no-publish --config /etc/nfd-worker.conf --host-prefix / >/tmp/labels 2>/tmp/nfd.err
same "nfd-worker exits 0" "$?" 0
same "nfd-worker: the PCI labels are the shell's" "$(grep '^feature.node.kubernetes.io/pci-' /tmp/labels | sort)" \
	"$(for l in $want; do echo $l; done | sort -u)"
ok "nfd-worker: the virtio devices' label (1af4)" grep -q '^feature.node.kubernetes.io/pci-00ff_1af4.present=true$' /tmp/labels
featurebox nfd-worker --oneshot --no-publish --print-features --config /etc/nfd-worker.conf --host-prefix / >/tmp/nf.json 2>>/tmp/nfd.err
got=$(tr '{' '\n' </tmp/nf.json | sed -n 's/^"class":"\([0-9a-f]*\)","device":"\([0-9a-f]*\)","subsystem_device":"\([0-9a-f]*\)","subsystem_vendor":"\([0-9a-f]*\)","vendor":"\([0-9a-f]*\)".*/\1 \5 \2 \4 \3/p' | sort)
want=$(for d in /sys/bus/pci/devices/*; do
	c=$(hex $d/class)
	echo "${c%??} $(hex $d/vendor) $(hex $d/device) $(hex $d/subsystem_vendor) $(hex $d/subsystem_device)"
done | sort)
same "nfd-worker: pci.device instances are the guest's three PCI functions" "$got" "$want"
same "nfd-worker: three of them" "$(echo "$want" | wc -l)" 3
# cpu.cpuid on arm64: the kernel's Features line, upper-cased
grep -o '"cpu.cpuid":{"elements":{\("[A-Za-z0-9_.]*":{},\{0,1\}\)*}' /tmp/nf.json | head -n 1 >/tmp/cpuid
for f in fp asimd aes sha2 crc32 atomics; do
	k=$(echo $f | tr a-z A-Z)
	grep -q "^Features.*[[:space:]]$f\([[:space:]]\|\$\)" /proc/cpuinfo && w=yes || w=no
	grep -q "\"$k\":{}" /tmp/cpuid && g=yes || g=no
	same "nfd-worker: cpu.cpuid $k as /proc/cpuinfo's Features says ($w)" "$g" "$w"
done
finish
