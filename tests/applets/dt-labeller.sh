# dt-labeller applet tests: labels from blobs and /proc/device-tree style trees,
# the features file, flags, exit codes and bad input.
. "$(dirname "$0")/../lib/testing.sh"
: "${FB_TEST_DT:?run through tests/run (it compiles the fixtures)}"
D=$(cd "$FB_TEST_DT" && pwd)
X=$FB_TOP/tests/fixtures/dt/expect.py
H="Discovered the following devicetree properties:\n\n"
K=beta.devicetree.org

# Host roots holding the same tree in each place the applet looks.
mkroot() { # NAME FIXTURE KIND
	local r=$W/$1
	mkdir -p "$r/proc" "$r/sys/firmware/devicetree"
	case $3 in
	proc) cp -r "$D/$2" "$r/proc/device-tree" ;;
	link) cp -r "$D/$2" "$r/sys/firmware/devicetree/base"
	      ln -s ../sys/firmware/devicetree/base "$r/proc/device-tree" ;;
	abs)  cp -r "$D/$2" "$r/sys/firmware/devicetree/base" # what the kernel has
	      ln -s /sys/firmware/devicetree/base "$r/proc/device-tree" ;;
	base) cp -r "$D/$2" "$r/sys/firmware/devicetree/base" ;;
	fdt)  cp "$D/$2.dtb" "$r/sys/firmware/fdt"
	      ln -s ../sys/firmware/devicetree/base "$r/proc/device-tree" ;; # dangling, as in a masked container
	esac
}

# 1. Exact labels a user of a Raspberry Pi 4 and a Jetson Nano would check.
RPI4="$K/arm-cortex-a72: 4\n$K/brcm-bcm2711: 1\n$K/brcm-bcm2711-vc5: 1\n$K/raspberrypi-4-model-b: 1\n"
testing "rpi4 blob -d" "$FB dt-labeller -d --dtb $D/rpi4.dtb; echo \$?" "$H${RPI4}0\n"
JETSON="$K/arm-armv8: 4\n$K/arm-cortex-a57: 4\n$K/nvidia-gm20b: 1\n$K/nvidia-jetson-nano: 1\n$K/nvidia-p3450-0000: 1\n$K/nvidia-tegra210: 1\n$K/nvidia-tegra210-gm20b: 1\n"
testing "jetson blob -d" "$FB dt-labeller -d --dtb $D/jetson.dtb" "$H$JETSON"
testing "jetson -n gpu pwm-fan (original syntax)" \
	"$FB dt-labeller -d --dtb $D/jetson.dtb -n gpu pwm-fan | grep -c pwm-fan" "1\n"
testing "jetson --nodes pwm-fan" "$FB dt-labeller -d --dtb $D/jetson.dtb --nodes pwm-fan | grep pwm" "$K/pwm-fan: 1\n"
testing "xilinx: xlnx becomes xilinx" "$FB dt-labeller -d --dtb $D/xilinx.dtb" \
	"$H$K/arm-cortex-a9: 2\n$K/xilinx-zynq-7000: 1\n"
testing "node names are literal, not regexes" "$FB dt-labeller -d --dtb $D/xilinx.dtb -n 'g.io' | grep -c gpio" "0\n"

# 2. Every fixture, every source: equal to the independent expectation computed
#    by expect.py from the directory form, byte for byte.
for f in rpi4 jetson xilinx edge; do
	want=$("$X" "$D/$f" 2>/dev/null)
	for kind in proc link abs base fdt; do
		mkroot "$f-$kind" "$f" "$kind"
	done
	testing "$f: --dtb matches expect.py" "$FB dt-labeller -d --dtb $D/$f.dtb" "$H$want\n"
	testing "$f: <host>/proc/device-tree matches expect.py" \
		"$FB dt-labeller -d --host-prefix $W/$f-proc/" "$H$want\n"
	testing "$f: /proc/device-tree symlink into sysfs" \
		"$FB dt-labeller -d --host-prefix $W/$f-link/" "$H$want\n"
	testing "$f: absolute /proc/device-tree symlink resolved inside the host prefix" \
		"$FB dt-labeller -d --host-prefix $W/$f-abs/" "$H$want\n"
	testing "$f: <host>/sys/firmware/devicetree/base" \
		"$FB dt-labeller -d --host-prefix $W/$f-base/" "$H$want\n"
	testing "$f: <host>/sys/firmware/fdt behind a dangling /proc/device-tree" \
		"$FB dt-labeller -d --host-prefix $W/$f-fdt/" "$H$want\n"
done
want=$("$X" "$D/jetson" -n gpu pwm-fan 2>/dev/null)
testing "jetson -n gpu pwm-fan matches expect.py" \
	"$FB dt-labeller -d --host-prefix $W/jetson-proc/ -n gpu pwm-fan" "$H$want\n"
testing "output is byte-stable between runs" \
	"a=\$($FB dt-labeller -d --dtb $D/edge.dtb 2>&1 | sed 's/^W[0-9 :.]*//'); b=\$($FB dt-labeller -d --host-prefix $W/edge-proc/ 2>&1 | sed 's/^W[0-9 :.]*//'); [ \"\$a\" = \"\$b\" ] && echo same" "same\n"
testing "over-long names are skipped with a warning naming them" \
	"$FB dt-labeller -d --dtb $D/edge.dtb 2>&1 >/dev/null | grep -c 'over 63 characters, skipped'" "2\n"
testing "a 64-character name is not truncated into a label" \
	"$FB dt-labeller -d --dtb $D/edge.dtb 2>/dev/null | grep -c 'skipped-not-cut'" "0\n"
testing "--prefix" "$FB dt-labeller -d --dtb $D/xilinx.dtb --prefix=example.com/" \
	"${H}example.com/arm-cortex-a9: 2\nexample.com/xilinx-zynq-7000: 1\n"

# Which source wins when several are there: proc, then base, then fdt.
mkroot prio rpi4 proc
cp -r "$D/xilinx" "$W/prio/sys/firmware/devicetree/base"
cp "$D/jetson.dtb" "$W/prio/sys/firmware/fdt"
testing "priority: /proc/device-tree over the others" "$FB dt-labeller -d --host-prefix $W/prio/" "$H$RPI4"
rm -rf "$W/prio/proc/device-tree"
testing "priority: devicetree/base over fdt" "$FB dt-labeller -d --host-prefix $W/prio/" \
	"$H$K/arm-cortex-a9: 2\n$K/xilinx-zynq-7000: 1\n"
rm -rf "$W/prio/sys/firmware/devicetree/base"
testing "priority: fdt last" "$FB dt-labeller -d --host-prefix $W/prio/ | grep -c nvidia-jetson-nano" "1\n"

# Node lists: -n repeatable, --nodes multi-valued and repeatable, all together.
testing "-n given twice keeps both" "$FB dt-labeller -d --dtb $D/jetson.dtb -n pwm-fan -n gpu | grep -c pwm-fan" "1\n"
testing "--nodes a,b --nodes c" "$FB dt-labeller -d --dtb $D/jetson.dtb --nodes nope,pwm-fan --nodes other | grep -c pwm-fan" "1\n"
testing "-n and --nodes together" \
	"$FB dt-labeller -d --dtb $D/xilinx.dtb --nodes pwm-fan -n gpio | grep -c -e gpio -e cortex-a9" "2\n"
testing "an option after the node names: exit 2 naming it" \
	"$FB dt-labeller -d -n gpu pwm-fan --dtb $D/jetson.dtb 2>&1 | head -1; $FB dt-labeller -d -n gpu pwm-fan --dtb x 2>/dev/null; echo \$?" \
	"dt-labeller: option '--dtb' after the node names: put options before -n\n2\n"

# A compatible without its final NUL, and strings that try to forge log lines.
cat >"$W/odd.dts" <<'DTS'
/dts-v1/;
/ {
	compatible = "arm,odd", [61 2c 62];
	cpu@0 { compatible = "x,\nE1129 00:00:00.000000 fake.c:1] forged-line-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"; };
};
DTS
dtc -q -I dts -O dtb -o "$W/odd.dtb" "$W/odd.dts"
testing "unterminated compatible: the tail is dropped" "$FB dt-labeller -d --dtb $W/odd.dtb 2>/dev/null" "$H$K/arm-odd: 1\n"
testing "unterminated compatible: warned about" \
	"$FB dt-labeller -d --dtb $W/odd.dtb 2>&1 >/dev/null | grep -c 'ends without a NUL; \"a,b\" dropped'" "1\n"
testing "devicetree text cannot forge a log line" \
	"$FB dt-labeller -d --dtb $W/odd.dtb 2>&1 >/dev/null | grep -c -e '^E1129 00:00:00' -e 'x,\\\\x0aE1129'" "1\n"

# A compatible over 64 KiB (DT_PROP_MAX) on one node: that node is skipped with
# a warning naming it, the others are labelled, exit 0; the same from a blob
# and from a directory. Exactly 64 KiB is still read.
{
	printf '/dts-v1/;\n/ {\n\tcompatible = "arm,big-board";\n'
	printf '\tcpu@0 { compatible = "arm,cortex-a53"; };\n'
	printf '\tcpu@1 { compatible = '
	i=0; while [ $i -lt 6000 ]; do printf '"v,x%08d", ' $i; i=$((i + 1)); done # 6000 x 12 bytes
	printf '"v,last"; };\n'
	printf '\tgpu { compatible = "arm,mali"; };\n};\n'
} >"$W/bigcompat.dts"
dtc -q -I dts -O dtb -o "$W/bigcompat.dtb" "$W/bigcompat.dts"
"$FB_TOP/scripts/dtb2dir" "$W/bigcompat.dtb" "$W/bigcompat-root/proc/device-tree"
BIG="$H$K/arm-big-board: 1\n$K/arm-cortex-a53: 1\n$K/arm-mali: 1\n"
for src in "--dtb $W/bigcompat.dtb" "--host-prefix $W/bigcompat-root/"; do
	testing "compatible over 64 KiB ($src): node skipped, others labelled, exit 0" \
		"$FB dt-labeller -d $src >$W/big.out 2>$W/err; echo \$?; head -n 6 $W/big.out" "0\n$BIG"
	testing "compatible over 64 KiB ($src): the warning names the node" \
		"grep -c 'node /cpu@1: compatible of more than 64 KiB, node skipped' $W/err" "1\n"
done
head -c 65535 /dev/zero | tr '\0' 'a' >"$W/bigcompat-root/proc/device-tree/cpu@1/compatible"
printf '\0' >>"$W/bigcompat-root/proc/device-tree/cpu@1/compatible"
testing "compatible of exactly 64 KiB: read, its name over 63 characters skipped" \
	"$FB dt-labeller -d --host-prefix $W/bigcompat-root/ 2>$W/err; grep -c 'node /cpu@1: compatible \"aaaa.*gives a label name over 63' $W/err" "${BIG}1\n"

# 3. No devicetree (an x86 node): a warning, no labels, exit 0.
mkdir -p "$W/empty"
testing "no devicetree: exit 0, no labels" "$FB dt-labeller -d --host-prefix $W/empty/ 2>/dev/null; echo \$?" "${H}0\n"
testing "no devicetree: the warning names the places looked at" \
	"$FB dt-labeller -d --host-prefix $W/empty/ 2>&1 >/dev/null | grep -c 'no devicetree found.*empty/proc/device-tree'" "1\n"

# 4. The features file.
F=$W/out/features.d/devicetree-features
testing "-f --features-file=PATH: message and exit 0" \
	"$FB dt-labeller -f --features-file=$F --dtb $D/rpi4.dtb; echo \$?" \
	"Writing out discovered features to $F\n0\n"
testing "features file: KEY=COUNT lines, sorted" "cat $F" \
	"$K/arm-cortex-a72=4\n$K/brcm-bcm2711=1\n$K/brcm-bcm2711-vc5=1\n$K/raspberrypi-4-model-b=1\n"
testing "features file: no temporary left, mode 0644" "ls -A $W/out/features.d; stat -c %a $F" "devicetree-features\n644\n"
testing "features file: rewritten in place with new contents" \
	"$FB dt-labeller --features-file=$F --dtb $D/xilinx.dtb >/dev/null; cat $F" \
	"$K/arm-cortex-a9=2\n$K/xilinx-zynq-7000=1\n"
testing "--oneshot -f writes once and exits" \
	"$FB dt-labeller --oneshot -f --features-file=$F --dtb $D/rpi4.dtb >/dev/null; echo \$?; wc -l <$F" "0\n4\n"
testing "no devicetree: -f writes an empty file (stale labels go)" \
	"$FB dt-labeller -f --features-file=$F --host-prefix $W/empty/ 2>/dev/null >/dev/null; echo \$?; wc -c <$F" "0\n0\n"
testing "-f after --features-file=PATH keeps PATH" \
	"$FB dt-labeller --features-file=$W/kept --dtb $D/rpi4.dtb -f | cut -d' ' -f6; wc -l <$W/kept" "$W/kept\n4\n"
testing "empty --features-file=: exit 2" "$FB dt-labeller --features-file= --dtb $D/rpi4.dtb 2>&1 | head -1; $FB dt-labeller --features-file= 2>/dev/null; echo \$?" \
	"dt-labeller: --features-file '' does not name a file\n2\n"
testing "--features-file ending in /: exit 2" "$FB dt-labeller --features-file=$W/dir/ --dtb $D/rpi4.dtb 2>/dev/null; echo \$?" "2\n"
testing "-d to a full disk: exit 1" "$FB dt-labeller -d --dtb $D/rpi4.dtb >/dev/full 2>/dev/null; echo \$?" "1\n"
testing "-d wins over -f: nothing written" \
	"$FB dt-labeller -d -f --features-file=$W/never --dtb $D/rpi4.dtb >/dev/null; ls $W/never 2>&1 | grep -c 'No such'" "1\n"
testing "features file whose parent is a file: exit 1 naming it" \
	"$FB dt-labeller -f --features-file=$F/x --dtb $D/rpi4.dtb >/dev/null 2>$W/err; echo \$?; grep -c 'devicetree-features.*Not a directory' $W/err" "1\n1\n"
testing "features file over a directory: exit 1, nothing left behind" \
	"mkdir -p $W/isdir/f; $FB dt-labeller -f --features-file=$W/isdir/f --dtb $D/rpi4.dtb >/dev/null 2>&1; echo \$?; ls -A $W/isdir" "1\nf\n"

# 5. Permissions bind an unprivileged user (CI runs as root: drop to nobody).
mkdir -p "$W/bin" && cp "$FBBIN" "$W/bin/featurebox" && chmod 755 "$W/bin/featurebox"
NB="as_nobody $FBRUN $W/bin/featurebox"
mkdir -p "$W/ro" && chmod 555 "$W/ro"
testing "read-only features directory: exit 1 with the path and reason" \
	"$NB dt-labeller -f --features-file=$W/ro/devicetree-features --dtb $D/rpi4.dtb >/dev/null 2>$W/err; echo \$?; grep -c 'ro/.devicetree-features.tmp: creating temporary file: Permission denied' $W/err" "1\n1\n"
testing "missing directory under a read-only one: exit 1" \
	"$NB dt-labeller -f --features-file=$W/ro/sub/f --dtb $D/rpi4.dtb >/dev/null 2>$W/err; echo \$?; grep -c 'ro/sub: creating directory: Permission denied' $W/err" "1\n1\n"
mkroot locked rpi4 proc
chmod 000 "$W/locked/proc/device-tree/cpus/cpu@2"
testing "unreadable node directory: exit 1 naming the node" \
	"$NB dt-labeller -d --host-prefix $W/locked/ >/dev/null 2>$W/err; echo \$?; grep -c '/cpus/cpu@2: opening node directory: Permission denied' $W/err" "1\n1\n"
mkroot locked2 rpi4 proc
chmod 000 "$W/locked2/proc/device-tree/cpus/cpu@1/compatible"
testing "unreadable compatible: exit 1 naming the file" \
	"$NB dt-labeller -d --host-prefix $W/locked2/ >/dev/null 2>$W/err; echo \$?; grep -c '/cpus/cpu@1/compatible (in directory .*): .*Permission denied' $W/err" "1\n1\n"
testing "works unprivileged on a readable tree" "$NB dt-labeller -d --host-prefix $W/rpi4-proc/" "$H$RPI4"
testing "-f alone writes the NFD default path" \
	"$NB dt-labeller -f --dtb $D/rpi4.dtb 2>/dev/null; echo \$?" \
	"Writing out discovered features to /etc/kubernetes/node-feature-discovery/features.d/devicetree-features\n1\n"

# 6. Hostile trees (root can trip over these too).
mkroot fifo rpi4 proc
rm "$W/fifo/proc/device-tree/gpu/compatible" && mkfifo "$W/fifo/proc/device-tree/gpu/compatible"
testing "FIFO as a property: exit 1, no hang" \
	"timeout -k 10 20 $FB dt-labeller -d --host-prefix $W/fifo/ >/dev/null 2>$W/err; echo \$?; grep -c 'gpu/compatible.*not a regular file' $W/err" "1\n1\n"
mkroot fifo2 rpi4 proc
mkfifo "$W/fifo2/proc/device-tree/soc/compatible-fifo"
testing "FIFO in a node that is not scanned is never opened" \
	"timeout -k 10 20 $FB dt-labeller -d --host-prefix $W/fifo2/" "$H$RPI4"

# 7. Bad blobs: clear message naming the file and libfdt's reason, exit 1.
head -c 300 "$D/rpi4.dtb" >"$W/trunc.dtb"
{ printf '\xde\xad\xbe\xef'; tail -c +5 "$D/rpi4.dtb"; } >"$W/magic.dtb"
{ head -c 8 "$D/rpi4.dtb"; printf '\x7f\xff\xff\x00'; tail -c +13 "$D/rpi4.dtb"; } >"$W/offset.dtb"
: >"$W/empty.dtb"
for b in trunc:FDT_ERR_TRUNCATED magic:FDT_ERR_BADMAGIC offset:FDT_ERR_ empty:'shorter than its header'; do
	n=${b%%:*} why=${b#*:}
	testing "bad blob ($n): exit 1, no output" "$FB dt-labeller -d --dtb $W/$n.dtb 2>$W/err; echo \$?" "1\n"
	testing "bad blob ($n): message names file and reason" \
		"grep -c '$n.dtb: invalid devicetree blob.*$why' $W/err" "1\n"
	testing "bad blob ($n) via <host>/sys/firmware/fdt: exit 1" \
		"mkdir -p $W/bad-$n/sys/firmware && cp $W/$n.dtb $W/bad-$n/sys/firmware/fdt && $FB dt-labeller -d --host-prefix $W/bad-$n/ >/dev/null 2>&1; echo \$?" "1\n"
done
testing "missing --dtb file: exit 1 naming it" \
	"$FB dt-labeller -d --dtb $W/nope.dtb 2>&1 >/dev/null | grep -c 'nope.dtb: No such file'; $FB dt-labeller -d --dtb $W/nope.dtb 2>/dev/null; echo \$?" "1\n1\n"

# 8. Usage errors: exit 2 with a message; --help/--version exit 0.
testing "node names without -n: exit 2" "$FB dt-labeller -d gpu 2>&1 | head -1; $FB dt-labeller -d gpu 2>/dev/null; echo \$?" \
	"dt-labeller: unexpected argument 'gpu' (node names go after -n)\n2\n"
testing "unknown option: exit 2" "$FB dt-labeller --bogus 2>&1 | head -1; $FB dt-labeller --bogus 2>/dev/null; echo \$?" \
	"dt-labeller: unknown option --bogus\n2\n"
testing "bad --prefix: exit 2" "$FB dt-labeller -d --prefix 'Not_A_Domain' --dtb $D/rpi4.dtb 2>/dev/null; echo \$?" "2\n"
testing "-v out of range: exit 2" "$FB dt-labeller -d -v 99 2>/dev/null; echo \$?" "2\n"
testing "controller mode without any API configuration: exit 1 saying what to do" \
	"env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST HOME=$W/nohome $FB dt-labeller --dtb $D/rpi4.dtb 2>&1 | grep -c 'no configuration: give --kubeconfig'; env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST HOME=$W/nohome $FB dt-labeller --dtb $D/rpi4.dtb 2>/dev/null; echo \$?" "1\n1\n"
testing "--resync below a second: exit 2" "$FB dt-labeller --resync 10ms 2>/dev/null; echo \$?" "2\n"
testing "--help: usage and options, exit 0" \
	"$FB dt-labeller --help | grep -cE '^Usage: dt-labeller|--features-file\\[=PATH\\]|--host-prefix'; echo \$?" "3\n0\n"
testing "-help (Go style) works too" "$FB dt-labeller -help | head -1" "Usage: dt-labeller [OPTIONS] [-n NODE [NODE...]]\n"
testing "--version" "$FB dt-labeller --version" "dt-labeller (featurebox) 0.1.0\n"
testing "-v 2 logs the source read" "$FB dt-labeller -d -v 2 --dtb $D/rpi4.dtb 2>&1 >/dev/null | grep -c 'reading devicetree from blob'" "1\n"

done_testing
