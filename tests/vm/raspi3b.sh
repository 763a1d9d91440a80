# raspi3b.sh: the aarch64 guest on QEMU's Raspberry Pi 3 B with the kernel
# package's bcm2837-rpi-3-b.dtb.
SUITE=vm/aarch64-raspi3b
dtwant() {
	for n in /proc/device-tree $(find /proc/device-tree/ -type d \( -name cpu -o -name "cpu@*" -o -name gpu -o -name "gpu@*" \)); do
		[ -f "$n/compatible" ] && tr '\0' '\n' <"$n/compatible"
	done | grep -v '^$' | sed 's/,/-/g' | sort | uniq -c | awk '{ print "beta.devicetree.org/" $2 ": " $1 }'
}
featurebox dt-labeller -d --host-prefix / >/tmp/dt-proc 2>/tmp/dt.err
same "dt-labeller -d exits 0" "$?" 0
for l in "raspberrypi-3-model-b: 1" "brcm-bcm2837: 1" "arm-cortex-a53: 4"; do
	ok "dt-labeller: beta.devicetree.org/$l" grep -qx "beta.devicetree.org/$l" /tmp/dt-proc
done
same "dt-labeller: the labels are the shell's reading of /proc/device-tree" "$(grep '^beta' /tmp/dt-proc)" "$(dtwant)"
featurebox dt-labeller -d --dtb /sys/firmware/fdt >/tmp/dt-fdt 2>>/tmp/dt.err
same "dt-labeller: /sys/firmware/fdt gives the same output" "$(cat /tmp/dt-fdt)" "$(cat /tmp/dt-proc)"
finish
