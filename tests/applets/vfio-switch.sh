# vfio-switch on copies of the vfio fixture tree (tests/fixtures/sysfs/mkgpufixtures),
# with fakekernel.py playing the kernel's part of driver binding; and the
# PhysicalGPU status + Event against the test API server.
# The unit test (unit/vfio) injects a failure at every step; tests/vm/ runs it
# on a real kernel.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
F=$FB_TOP/tests/fixtures/sysfs/vfio
T=$W/t
fkpid=
stop_fk() {
	if [ -n "$fkpid" ]; then
		kill "$fkpid" 2>/dev/null
		wait "$fkpid" 2>/dev/null
		fkpid=
	fi
}
trap 'stop_fk; k8s_stop; rm -rf "$W"' EXIT

# fresh [fakekernel args]: a new copy of the tree with its kernel running
fresh() {
	stop_fk
	rm -rf "$T"
	cp -r "$F" "$T"
	chmod -R u+w "$T"
	python3 "$FB_TOP/tests/applets/fakekernel.py" "$T" "$@" &
	fkpid=$!
	for _ in $(seq 100); do
		[ -f "$T/fakekernel.ready" ] && return 0
		sleep 0.05
	done
	fail "fakekernel starts"
	return 1
}
# state ADDR...: "driver/override" per address, "-" for none
state() {
	local a d o out=
	for a in "$@"; do
		d=$(readlink "$T/sys/bus/pci/devices/$a/driver" 2>/dev/null)
		o=$(cat "$T/sys/bus/pci/devices/$a/driver_override")
		[ "$o" = "(null)" ] && o=
		d=${d##*/}
		out="$out ${d:--}/${o:--}"
	done
	echo "${out# }"
}
# tree: every driver link and override of the tree, for "changes nothing"
tree() {
	(cd "$T/sys/bus/pci/devices" && for a in *; do
		printf '%s %s %s\n' "$a" "$(readlink "$a/driver" 2>/dev/null)" "$(cat "$a/driver_override")"
	done)
}
# j EXPR: evaluates a Python expression over the JSON result read from stdin as r
j() { python3 -c "import json,sys; r=json.load(sys.stdin); v=($1); print(v)"; }
kernlog() { cat "$T/fakekernel.log" 2>/dev/null; }

VS="$FB vfio-switch --host-prefix $T/"
GPU=0000:01:00.0
HDA=0000:01:00.1

# 1. Usage errors: exit 2 with a message that names the problem.
testing "no arguments: exit 2" "$FB vfio-switch 2>err; echo \$?; grep -c 'are required' err" "2\n1\n"
for bad in 0000:65:00 0000:65:20.0 0000:65:00.8 000:65:00.0 100000000:00:00.0 g000:65:00.0 "0000:65:00.0/.." ""; do
	testing "malformed address \"$bad\": exit 2, named" \
		"$VS --pci '$bad' --to vfio-pci 2>err; echo \$?; grep -c 'not a PCI address' err" "2\n1\n"
done
testing "--to .. is no driver name: exit 2" "$VS --pci $GPU --to .. 2>/dev/null; echo \$?" "2\n"
testing "--to=-r is no driver name (never an option to modprobe): exit 2" "$VS --pci $GPU --to=-r 2>/dev/null; echo \$?" "2\n"
testing "--to with a slash: exit 2" "$VS --pci $GPU --to ../x 2>err; echo \$?; grep -c 'not a driver name' err" "2\n1\n"
testing "--to none would leave it driverless: exit 2" "$VS --pci $GPU --to none 2>/dev/null; echo \$?" "2\n"
testing "--group other: exit 2" "$VS --pci $GPU --to vfio-pci --group all 2>/dev/null; echo \$?" "2\n"
testing "--output yaml: exit 2" "$VS --pci $GPU --to vfio-pci --output yaml 2>/dev/null; echo \$?" "2\n"
testing "--update-physicalgpu without a node name: exit 2" \
	"env -u NODE_NAME $VS --pci $GPU --to vfio-pci --update-physicalgpu 2>err; echo \$?; grep -c 'needs --node' err" "2\n1\n"

fresh
# 2. A device that does not exist: exit 3.
testing "unknown device: exit 3, result not-found" \
	"$VS --pci 0000:99:00.0 --to vfio-pci 2>/dev/null | j 'r[\"result\"], r[\"error\"][:26]'; $VS --pci 0000:99:00.0 --to vfio-pci >/dev/null 2>&1; echo \$?" \
	"('not-found', 'no PCI device 0000:99:00.0')\n3\n"

# 3. Safety refusals: exit 4, nothing written.
before=$(tree)
testing "a group shared with another card's NIC: refused, naming the NIC" \
	"$VS --pci 0000:02:00.0 --to vfio-pci 2>/dev/null | j 'r[\"result\"], \"0000:03:00.0 (class 0200, ice)\" in r[\"error\"]'; $VS --pci 0000:02:00.0 --to vfio-pci >/dev/null 2>&1; echo \$?" \
	"('refused', True)\n4\n"
testing "the boot VGA device: refused" \
	"$VS --pci 0000:04:00.0 --to vfio-pci 2>/dev/null | j '\"boot VGA\" in r[\"error\"]'; $VS --pci 0000:04:00.0 --to vfio-pci >/dev/null 2>&1; echo \$?" \
	"True\n4\n"
testing "no IOMMU group: refused" \
	"$VS --pci 0000:05:00.0 --to vfio-pci 2>/dev/null | j '\"has no IOMMU group\" in r[\"error\"]'; $VS --pci 0000:05:00.0 --to vfio-pci >/dev/null 2>&1; echo \$?" \
	"True\n4\n"
testing "refusals wrote nothing" "tree; kernlog" "$before"

# 4. --dry-run: the plan, and no write at all.
testing "--dry-run: the plan of both functions" \
	"$VS --pci $GPU --to vfio-pci --dry-run 2>/dev/null | j 'r[\"result\"], [(f[\"address\"], f[\"from\"], f[\"to\"], f[\"result\"]) for f in r[\"functions\"]], len(r[\"plan\"]), r[\"plan\"][0]'" \
	"('dry-run', [('$GPU', 'nvidia', 'vfio-pci', 'planned'), ('$HDA', 'snd_hda_intel', 'vfio-pci', 'planned')], 8, 'write $T/sys/bus/pci/devices/$GPU/driver_override: vfio-pci')\n"
testing "--dry-run changed nothing, the kernel saw no write" "tree; kernlog" "$before"

# 5. The switch: GPU and HDA to vfio-pci, overrides set, exit 0.
testing "switch to vfio-pci: both functions, exit 0" \
	"$VS --pci $GPU --to vfio-pci >out 2>$W/err.log; rc=\$?; j 'r[\"result\"], r[\"from\"], r[\"iommuGroup\"], [(f[\"address\"], f[\"to\"], f[\"result\"]) for f in r[\"functions\"]]' <out; echo \$rc" \
	"('switched', 'nvidia', '2', [('$GPU', 'vfio-pci', 'switched'), ('$HDA', 'vfio-pci', 'switched')])\n0\n"
testing "the tree: both on vfio-pci with the override" "state $GPU $HDA 0000:00:1c.0" \
	"vfio-pci/vfio-pci vfio-pci/vfio-pci pcieport/-\n"
testing "the kernel saw unbind, probe per function, in order" "kernlog" \
	"unbind $GPU: from nvidia\nprobe $GPU: bound to vfio-pci\nunbind $HDA: from snd_hda_intel\nprobe $HDA: bound to vfio-pci\n"
n=$(kernlog | wc -l)
testing "a second identical call: unchanged, exit 0, no write" \
	"$VS --pci $GPU --to vfio-pci 2>/dev/null | j 'r[\"result\"], [f[\"result\"] for f in r[\"functions\"]]'; kernlog | wc -l" \
	"('unchanged', ['unchanged', 'unchanged'])\n$n\n"
testing "--to default: the override cleared, the host drivers back" \
	"$VS --pci $GPU --to default 2>/dev/null | j 'r[\"result\"], [f[\"to\"] for f in r[\"functions\"]]'; state $GPU $HDA" \
	"('switched', ['nvidia', 'snd_hda_intel'])\nnvidia/- snd_hda_intel/-\n"
testing "text output" "$VS --pci $GPU --to vfio-pci -o text 2>/dev/null | grep -v '^  '" \
	"$GPU  nvidia -> vfio-pci  switched\n$HDA  snd_hda_intel -> vfio-pci  switched\nswitched\n"
testing "--to nvidia from vfio-pci: the GPU to nvidia, the HDA to its own driver" \
	"$VS --pci $GPU --to nvidia 2>/dev/null | j 'r[\"result\"]'; state $GPU $HDA" \
	"switched\nnvidia/nvidia snd_hda_intel/-\n"

# 6. --group device, --force, a VMD domain.
fresh
testing "--group device: only the GPU, a warning that the group is not viable" \
	"$VS --pci $GPU --to vfio-pci --group device 2>/dev/null | j 'r[\"result\"], \"not viable\" in r[\"warning\"]'; state $GPU $HDA" \
	"('switched', True)\nvfio-pci/vfio-pci snd_hda_intel/-\n"
testing "--force moves a shared group, NIC included" \
	"$VS --pci 0000:02:00.0 --to vfio-pci --force 2>/dev/null | j 'r[\"result\"], \"forced past\" in r[\"warning\"]'; state 0000:02:00.0 0000:03:00.0" \
	"('switched', True)\nvfio-pci/vfio-pci vfio-pci/vfio-pci\n"
testing "a domain of 5 hex digits, unbound before" \
	"$VS --pci 10000:01:00.0 --to vfio-pci 2>/dev/null | j 'r[\"result\"], r[\"from\"]'; state 10000:01:00.0" \
	"('switched', None)\nvfio-pci/vfio-pci\n"
testing "a pair already on vfio-pci: unchanged" \
	"$VS --pci 0000:06:00.1 --to vfio-pci 2>/dev/null | j 'r[\"result\"]'" "unchanged\n"

testing "a domain written with leading zeros is the kernel's name" \
	"$VS --pci 00000:01:00.0 --to vfio-pci --dry-run 2>/dev/null | j 'r[\"device\"], r[\"result\"]'" "('0000:01:00.0', 'dry-run')\n"
fresh
echo vfio-pci >"$T/sys/bus/pci/devices/$GPU/driver_override"
testing "on the target with a stale override: only the override is rewritten" \
	"$VS --pci $GPU --to nvidia 2>/dev/null | j 'r[\"result\"], r[\"plan\"]'; state $GPU; kernlog" \
	"('switched', ['write $T/sys/bus/pci/devices/$GPU/driver_override: nvidia'])\nnvidia/nvidia\n"
fresh
testing "back from vfio-pci where the HDA has no host driver: the GPU on nvidia, the HDA left driverless, exit 0" \
	"$VS --pci 0000:06:00.0 --to nvidia >out 2>$W/err.log; rc=\$?; j 'r[\"result\"], [f[\"to\"] for f in r[\"functions\"]]' <out; echo \$rc; state 0000:06:00.0 0000:06:00.1; grep -c 'no host driver took it' $W/err.log" \
	"('switched', ['nvidia', None])\n0\nnvidia/nvidia -/-\n1\n"

# 7. Failures: rolled back (5), or stuck and listed (6).
fresh --refuse $HDA=vfio-pci
testing "the HDA's probe fails: rolled back, exit 5" \
	"$VS --pci $GPU --to vfio-pci --timeout 400ms >out 2>$W/err.log; rc=\$?; j 'r[\"result\"], [f[\"result\"] for f in r[\"functions\"]], \"$HDA: on no driver after 400 ms\" in r[\"error\"]' <out; echo \$rc" \
	"('rolled-back', ['rolled-back', 'rolled-back'], True)\n5\n"
testing "after the rollback: both on their drivers, no override" "state $GPU $HDA" "nvidia/- snd_hda_intel/-\n"
fresh --refuse $HDA=vfio-pci --refuse $GPU=nvidia
testing "the GPU refuses nvidia again: exit 6, stuck device listed" \
	"$VS --pci $GPU --to vfio-pci --timeout 400ms >out 2>$W/err.log; rc=\$?; j 'r[\"result\"], r[\"stuck\"], \"rollback failed for $GPU\" in r[\"error\"]' <out; echo \$rc" \
	"('rollback-failed', ['$GPU'], True)\n6\n"

# SIGTERM (Job deleted, deadline) in the middle: stopped, rolled back, the result printed.
sigterm() {
	$VS --pci $GPU --to vfio-pci --timeout 20s >"$W/term.out" 2>"$W/term.err" &
	local pid=$! i
	for i in $(seq 200); do
		grep -q "probe $HDA" "$T/fakekernel.log" 2>/dev/null && break
		sleep 0.05
	done
	kill -TERM $pid
	wait $pid
	echo $?
	j 'r["result"], "terminated by a signal" in r["error"]' <"$W/term.out"
	state $GPU $HDA
}
fresh --refuse $HDA=vfio-pci
testing "SIGTERM while waiting: rolled back, exit 5, result printed" "sigterm" \
	"5\n('rolled-back', True)\nnvidia/- snd_hda_intel/-\n"
# Another run holds the IOMMU group: refused after --timeout.
fresh
python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(60)' "$T/sys/kernel/iommu_groups/2" "$W/locked" &
lockpid=$!
for _ in $(seq 100); do [ -f "$W/locked" ] && break; sleep 0.05; done
testing "IOMMU group locked by another run: refused after --timeout, exit 4, nothing written" \
	"$VS --pci $GPU --to vfio-pci --timeout 300ms >out 2>/dev/null; rc=\$?; j 'r[\"result\"], \"locked by another vfio-switch\" in r[\"error\"]' <out; echo \$rc; kernlog" \
	"('refused', True)\n4\n"
kill $lockpid 2>/dev/null
wait $lockpid 2>/dev/null
testing "the lock released: the switch goes through" "$VS --pci $GPU --to vfio-pci 2>/dev/null | j 'r[\"result\"]'" "switched\n"

# An IOMMU group bigger than we handle (32 functions): refused, not half-done.
fresh
for dev in 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11; do
	for fn in 0 1; do ln -s ../../../../devices/pci0000:00/none "$T/sys/kernel/iommu_groups/2/devices/0000:05:$dev.$fn"; done
done
testing "an IOMMU group of more than 32 functions: refused, exit 4, nothing written" \
	"$VS --pci $GPU --to vfio-pci >out 2>/dev/null; rc=\$?; j 'r[\"result\"], \"more functions than we handle\" in r[\"error\"]' <out; echo \$rc; kernlog" \
	"('refused', True)\n4\n"

# 8. Loading the target driver with modprobe from PATH.
fresh
mkdir -p "$W/bin"
cat >"$W/bin/modprobe" <<EOF
#!/bin/sh
# fake modprobe: registers the driver in the test tree
echo "\$@" >>"$W/modprobe.log"
[ "\$1" = -q ] && shift
[ "\$1" = -- ] && shift
[ "\$1" = nouveau ] || exit 1
mkdir -p "$T/sys/bus/pci/drivers/\$1" && : >"$T/sys/bus/pci/drivers/\$1/unbind" && : >"$T/sys/bus/pci/drivers/\$1/bind"
EOF
chmod +x "$W/bin/modprobe"
testing "a driver not loaded is modprobe'd, then bound" \
	"PATH=$W/bin:\$PATH $VS --pci $GPU --to nouveau 2>/dev/null | j 'r[\"result\"], r[\"plan\"][0]'; cat $W/modprobe.log; state $GPU $HDA" \
	"('switched', 'modprobe nouveau')\n-q -- nouveau\nnouveau/nouveau snd_hda_intel/-\n"
fresh
before=$(tree)
testing "a driver modprobe cannot load: refused, exit 4, nothing written" \
	"PATH=$W/bin:\$PATH $VS --pci $GPU --to nosuchdrv 2>/dev/null | j 'r[\"result\"], \"modprobe nosuchdrv did not load it\" in r[\"error\"]'; PATH=$W/bin:\$PATH $VS --pci $GPU --to nosuchdrv >/dev/null 2>&1; echo \$?; tree; kernlog" \
	"('refused', True)\n4\n$before\n"

# modprobe inside the host root (a prefix ending in "/"), found there even
# when sbin/modprobe is an absolute link (Debian: /sbin/modprobe -> /bin/kmod).
if [ "$(id -u)" = 0 ] && command -v musl-gcc >/dev/null; then
	fresh
	mkdir -p "$T/opt" "$T/sbin"
	printf '%s\n' '#include <stdio.h>' '#include <sys/stat.h>' \
		'int main(int argc, char **argv)' '{' \
		'	const char *m = argv[argc - 1];' '	char p[256];' '	FILE *f;' \
		'	snprintf(p, sizeof(p), "/sys/bus/pci/drivers/%s", m);' '	mkdir(p, 0755);' \
		'	snprintf(p, sizeof(p), "/sys/bus/pci/drivers/%s/unbind", m);' \
		'	if ((f = fopen(p, "w")))' '		fclose(f);' \
		'	if ((f = fopen("/modprobe.log", "a"))) {' \
		'		for (int i = 1; i < argc; i++)' \
		'			fprintf(f, "%s%s", argv[i], i + 1 < argc ? " " : "\n");' \
		'		fclose(f);' '	}' '	return 0;' '}' >"$W/kmod.c"
	musl-gcc -static -o "$T/opt/kmod" "$W/kmod.c"
	ln -s /opt/kmod "$T/sbin/modprobe"
	testing "modprobe runs chrooted in the host root through an absolute link, with -- before the name" \
		"env PATH=/nonexistent ${FBRUN:+$(command -v "$FBRUN")} $FBBIN vfio-switch --host-prefix $T/ --pci $GPU --to nouveau 2>/dev/null | j 'r[\"result\"]'; cat $T/modprobe.log; state $GPU" \
		"switched\n-q -- nouveau\nnouveau/nouveau\n"
else
	echo "SKIP: $SUITE: modprobe in a chroot (needs root for chroot(2) and musl-gcc for a static stand-in)"
fi

# 9. Busy devices: a process holding the device's DRM or NVIDIA node refuses
# the switch (exit 4, nothing written), naming it; the check runs on a planted
# <prefix>/proc and /dev (plain files: a test tree cannot mknod, so a fd link
# naming a planted node's path counts; the VM suite matches real nodes by
# st_rdev).
# holder PID COMM FD TARGET: a process with TARGET open as FD
holder() {
	mkdir -p "$T/proc/$1/fd"
	printf '%s\n' "$2" >"$T/proc/$1/comm"
	ln -s "$4" "$T/proc/$1/fd/$3"
}
# drm ADDR NAME MAJ:MIN: a DRM node of ADDR in sysfs, and its /dev entry
drm() {
	mkdir -p "$T/sys/bus/pci/devices/$1/drm/$2" "$T/dev/dri"
	echo "$3" >"$T/sys/bus/pci/devices/$1/drm/$2/dev"
	: >"$T/dev/dri/$2"
}
fresh
drm $GPU card1 226:1
drm $GPU renderD129 226:129
drm 0000:04:00.0 card0 226:0
holder 4242 Xorg 7 /dev/dri/card1
holder 4242 Xorg 8 /dev/dri/card1
holder 4243 bash 0 /dev/dri/card0
holder 4244 sleep 3 socket:[77]
before=$(tree)
testing "a process holds the GPU's DRM node: refused, exit 4, naming its pid and command" \
	"$VS --pci $GPU --to vfio-pci >out 2>$W/err.log; rc=\$?; j 'r[\"result\"], r[\"holders\"], r[\"busyCheck\"], \"in use: pid 4242 (Xorg) holds /dev/dri/card1 of $GPU\" in r[\"error\"]' <out; echo \$rc; grep -c 'refused: in use: pid 4242 (Xorg)' $W/err.log" \
	"('refused', [{'pid': 4242, 'command': 'Xorg', 'node': '/dev/dri/card1', 'address': '$GPU'}], 'complete', True)\n4\n1\n"
testing "the refusal wrote nothing" "tree; kernlog" "$before"
holder 4250 qemu-system-x86 9 /dev/dri/renderD129
testing "a 15-character command name (QEMU's: the kernel's longest) is named whole" \
	"$VS --pci $GPU --to vfio-pci 2>/dev/null | j 'sorted(h[\"command\"] for h in r[\"holders\"])'" "['Xorg', 'qemu-system-x86']\n"
rm -r "$T/proc/4250"
testing "--dry-run shows the refusal (exit 4)" \
	"$VS --pci $GPU --to vfio-pci --dry-run >out 2>/dev/null; rc=\$?; j 'r[\"result\"], len(r[\"holders\"])' <out; echo \$rc" \
	"('refused', 1)\n4\n"
testing "text output names the holder" "$VS --pci $GPU --to vfio-pci -o text 2>/dev/null | grep held" \
	"  held: pid 4242 (Xorg) has /dev/dri/card1 of $GPU open\n"
holder 4245 Xorg 3 /dev/dri/renderD129
testing "two holders of two nodes: both named" \
	"$VS --pci $GPU --to vfio-pci 2>/dev/null | j 'sorted((h[\"pid\"], h[\"node\"]) for h in r[\"holders\"])'" \
	"[(4242, '/dev/dri/card1'), (4245, '/dev/dri/renderD129')]\n"
rm -rf "$T/proc/4245"
drm $GPU card7 226:7
drm $GPU card8 226:8
drm $GPU card9 226:9
testing "more DRM nodes than it looks for: the check says partial" \
	"$VS --pci $GPU --to vfio-pci --dry-run 2>/dev/null | j 'r[\"busyCheck\"]'" \
	"partial: 1 device nodes past 4 per function: not looked for\n"
rm -rf "$T/sys/bus/pci/devices/$GPU/drm/card7" "$T/sys/bus/pci/devices/$GPU/drm/card8" "$T/sys/bus/pci/devices/$GPU/drm/card9"
testing "--force: switched past the holder, with a warning" \
	"$VS --pci $GPU --to vfio-pci --force >out 2>$W/err.log; rc=\$?; j 'r[\"result\"], \"forced past: in use: pid 4242 (Xorg)\" in r[\"warning\"]' <out; echo \$rc; state $GPU" \
	"('switched', True)\n0\nvfio-pci/vfio-pci\n"
fresh
drm $GPU card1 226:1
holder 4242 Xorg 7 /dev/dri/card1
testing "held, staying on its own driver: already there, no refusal" \
	"$VS --pci $GPU --to nvidia 2>/dev/null | j 'r[\"result\"]'" "unchanged\n"
rm -rf "$T/proc/4242"
holder 4242 Xorg 7 /dev/dri/card0
testing "the holder gone (another card's node is no matter): switched" \
	"$VS --pci $GPU --to vfio-pci 2>/dev/null | j 'r[\"result\"], r[\"holders\"]'; state $GPU $HDA" \
	"('switched', [])\nvfio-pci/vfio-pci vfio-pci/vfio-pci\n"
fresh
drm $GPU card1 226:1
rm -rf "$T/proc"
testing "no <prefix>proc: the busy check not done, said, not refused" \
	"$VS --pci $GPU --to vfio-pci --dry-run 2>/dev/null | j 'r[\"result\"], r[\"busyCheck\"][:9], \"busy check not done\" in r[\"warning\"]'" \
	"('dry-run', 'not done:', True)\n"

# A VM (QEMU) holding the group of a pair on vfio-pci: going back is refused.
fresh
mkdir -p "$T/sys/class/vfio/6" "$T/dev/vfio"
echo 511:6 >"$T/sys/class/vfio/6/dev"
: >"$T/dev/vfio/6"
holder 900 qemu-system-x86 30 /dev/vfio/6
testing "a VM holds the group's /dev/vfio/6: back to the host refused, exit 4, both functions' holder named" \
	"$VS --pci 0000:06:00.0 --to default >out 2>/dev/null; rc=\$?; j 'r[\"result\"], [(h[\"pid\"], h[\"node\"], h[\"address\"]) for h in r[\"holders\"]]' <out; echo \$rc; state 0000:06:00.0 0000:06:00.1" \
	"('refused', [(900, '/dev/vfio/6', '0000:06:00.0'), (900, '/dev/vfio/6', '0000:06:00.1')])\n4\nvfio-pci/vfio-pci vfio-pci/vfio-pci\n"

# NVIDIA: /dev/nvidiaN from procfs's Device Minor, and the unbindLock.
nvidia() {
	mkdir -p "$T/proc/driver/nvidia/gpus/$GPU" "$T/dev"
	printf 'Model: \t\t NVIDIA GeForce RTX 3090\nIRQ:   \t\t 130\nDevice Minor: \t 2\nBus Type: \t PCIe\n' \
		>"$T/proc/driver/nvidia/gpus/$GPU/information"
	echo 0 >"$T/proc/driver/nvidia/gpus/$GPU/unbindLock"
	: >"$T/dev/nvidia2"
}
fresh
nvidia
holder 777 nvidia-smi 4 /dev/nvidia2
testing "NVIDIA: a process holding /dev/nvidia2 (Device Minor: 2): refused, named, the lock not tried" \
	"$VS --pci $GPU --to vfio-pci >out 2>/dev/null; rc=\$?; j 'r[\"holders\"]' <out; echo \$rc; cat $T/proc/driver/nvidia/gpus/$GPU/unbindLock" \
	"[{'pid': 777, 'command': 'nvidia-smi', 'node': '/dev/nvidia2', 'address': '$GPU'}]\n4\n0\n"
rm -rf "$T/proc/777"
testing "NVIDIA free: the plan takes the unbindLock first" \
	"$VS --pci $GPU --to vfio-pci --dry-run 2>/dev/null | j 'r[\"plan\"][0]'" \
	"take the NVIDIA unbind lock of $GPU: write 1 to $T/proc/driver/nvidia/gpus/$GPU/unbindLock, read back 1\n"
testing "NVIDIA free: the lock taken (1), then switched" \
	"$VS --pci $GPU --to vfio-pci 2>$W/err.log | j 'r[\"result\"]'; echo \$(cat $T/proc/driver/nvidia/gpus/$GPU/unbindLock); grep -c 'NVIDIA unbind lock is taken' $W/err.log" \
	"switched\n1\n1\n"
fresh --refuse $HDA=vfio-pci
nvidia
testing "NVIDIA: the lock taken, then a failure: rolled back, the lock released (0)" \
	"$VS --pci $GPU --to vfio-pci --timeout 400ms 2>/dev/null | j 'r[\"result\"]'; echo \$(cat $T/proc/driver/nvidia/gpus/$GPU/unbindLock); state $GPU" \
	"rolled-back\n0\nnvidia/-\n"
fresh
nvidia
rm "$T/proc/driver/nvidia/gpus/$GPU/unbindLock"
mkdir "$T/proc/driver/nvidia/gpus/$GPU/unbindLock" # cannot be written: never granted
before=$(tree)
testing "NVIDIA: the unbindLock not granted: refused, exit 4, no sysfs write" \
	"$VS --pci $GPU --to vfio-pci >out 2>/dev/null; rc=\$?; j 'r[\"result\"], \"the NVIDIA unbind lock was not taken\" in r[\"error\"]' <out; echo \$rc; tree; kernlog" \
	"('refused', True)\n4\n$before\n"

# 10. --to vfio: each function's VFIO variant from the host's modules.alias.
aliases() {
	mkdir -p "$T/proc/sys/kernel" "$T/lib/modules/6.1.0-fbtest"
	echo 6.1.0-fbtest >"$T/proc/sys/kernel/osrelease"
	cp "$FB_TOP/tests/fixtures/vfio-alias/modules.alias" "$T/lib/modules/6.1.0-fbtest/"
	# the fixture GPU (10de:2204) gets a variant of its own
	echo "alias vfio_pci:v000010DEd00002204sv*sd*bc03sc*i* fbtest_gpu_vfio_pci" >>"$T/lib/modules/6.1.0-fbtest/modules.alias"
}
fresh
aliases
testing "--to vfio --dry-run: the GPU to its variant (modprobe'd first), the HDA to vfio-pci, each saying why" \
	"$VS --pci $GPU --to vfio --dry-run 2>/dev/null | j 'r[\"to\"], r[\"driver\"], r[\"driverChoice\"], [(f[\"to\"], f[\"driverChoice\"][:40]) for f in r[\"functions\"]], r[\"plan\"][0], r[\"plan\"][1]'" \
	"('vfio', 'fbtest_gpu_vfio_pci', 'alias vfio_pci:v000010DEd00002204sv*sd*bc03sc*i* fbtest_gpu_vfio_pci (4 wildcard fields)', [('fbtest_gpu_vfio_pci', 'alias vfio_pci:v000010DEd00002204sv*sd*b'), ('vfio-pci', 'no variant matched (16 vfio_pci aliases ')], 'modprobe fbtest_gpu_vfio_pci', 'write $T/sys/bus/pci/devices/$GPU/driver_override: fbtest_gpu_vfio_pci')\n"
testing "--to vfio, text: the choice and its alias line" "$VS --pci $GPU --to vfio --dry-run -o text 2>/dev/null | grep 'driver for'" \
	"  driver for $GPU: fbtest_gpu_vfio_pci: alias vfio_pci:v000010DEd00002204sv*sd*bc03sc*i* fbtest_gpu_vfio_pci (4 wildcard fields)\n  driver for $HDA: vfio-pci: no variant matched (16 vfio_pci aliases in $T/lib/modules/6.1.0-fbtest/modules.alias, some lines unreadable); vfio-pci\n"
cat >"$W/bin/modprobe" <<EOF
#!/bin/sh
[ "\$1" = -q ] && shift
[ "\$1" = -- ] && shift
echo "\$1" >>"$W/modprobe.log"
[ "\$1" = fbtest_gpu_vfio_pci ] || exit 1
mkdir -p "$T/sys/bus/pci/drivers/\$1" && : >"$T/sys/bus/pci/drivers/\$1/unbind" && : >"$T/sys/bus/pci/drivers/\$1/bind"
EOF
rm -f "$W/modprobe.log"
testing "--to vfio: the variant loaded and bound, the HDA on vfio-pci" \
	"PATH=$W/bin:\$PATH $VS --pci $GPU --to vfio 2>/dev/null | j 'r[\"result\"]'; cat $W/modprobe.log; state $GPU $HDA" \
	"switched\nfbtest_gpu_vfio_pci\nfbtest_gpu_vfio_pci/fbtest_gpu_vfio_pci vfio-pci/vfio-pci\n"
testing "--to vfio again: unchanged" "$VS --pci $GPU --to vfio 2>/dev/null | j 'r[\"result\"]'" "unchanged\n"
fresh
testing "--to vfio with no modules.alias: vfio-pci, saying so" \
	"$VS --pci $GPU --to vfio --dry-run 2>/dev/null | j 'r[\"driver\"], r[\"driverChoice\"][:18], r[\"driverChoice\"][-10:]'" \
	"('vfio-pci', 'no modules.alias (', '; vfio-pci')\n"

# 11. --update-physicalgpu: status.currentState and an Event, with the node's own rights.
k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
P=/apis/gpu.deckhouse.io/v1alpha1/physicalgpus
printf '{"apiVersion":"gpu.deckhouse.io/v1alpha1","kind":"PhysicalGPU","metadata":{"name":"node1-0000-01-00-0","labels":{"gpu.deckhouse.io/node":"node1"}},"spec":{}}' |
	k8s_ctl put $P/node1-0000-01-00-0 - >/dev/null
printf '{"apiVersion":"gpu.deckhouse.io/v1alpha1","kind":"PhysicalGPU","metadata":{"name":"node1-0000-02-00-0","labels":{"gpu.deckhouse.io/node":"node1"}},"spec":{}}' |
	k8s_ctl put $P/node1-0000-02-00-0 - >/dev/null
fresh
UP="$VS --node node1 --update-physicalgpu --kubeconfig $K8S_DIR/kubeconfig-node1"
testing "switch with --update-physicalgpu: exit 0" "$UP -v 5 --pci $GPU --to vfio-pci >/dev/null 2>$W/up.log; echo \$?" "0\n"
testing "status.currentState is vfio-pci / VFIO" \
	"k8s_ctl get $P/node1-0000-01-00-0 | j 'r[\"status\"][\"currentState\"]'" "{'driver': 'vfio-pci', 'driverType': 'VFIO'}\n"
events() { k8s_ctl get /api/v1/namespaces/default/events | j '[(e["reason"], e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"], bool(e["involvedObject"]["uid"])) for e in r["items"]]'; }
testing "an Event DriverSwitched on the PhysicalGPU" "events" \
	"[('DriverSwitched', 'Normal', 'PhysicalGPU', 'node1-0000-01-00-0', True)]\n"
testing "unchanged: status patched again, no Event" \
	"$UP --pci $GPU --to vfio-pci >/dev/null 2>&1; echo \$?; k8s_ctl count patch '/status\$'; events" \
	"0\n2\n[('DriverSwitched', 'Normal', 'PhysicalGPU', 'node1-0000-01-00-0', True)]\n"
testing "refused: exit 4 kept, a Warning Event" \
	"$UP --pci 0000:02:00.0 --to vfio-pci >/dev/null 2>&1; echo \$?; events | grep -o \"'DriverSwitchRefused', 'Warning', 'PhysicalGPU', 'node1-0000-02-00-0'\"" \
	"4\n'DriverSwitchRefused', 'Warning', 'PhysicalGPU', 'node1-0000-02-00-0'\n"
testing "no PhysicalGPU for the device: exit 4 kept, a warning naming the 404, no Event" \
	"$UP --pci 0000:04:00.0 --to vfio-pci >/dev/null 2>$W/err.log; echo \$?; grep -c 'node1-0000-04-00-0/status: HTTP 404' $W/err.log; events | grep -c 04-00-0" "4\n1\n0\n"
k8s_ctl fault --path physicalgpus --status 500 --count -1 >/dev/null
testing "API failing: the switch still succeeds, exit 0, a warning" \
	"$UP --pci $GPU --to default >/dev/null 2>$W/err.log; echo \$?; grep -c 'HTTP 500' $W/err.log; state $GPU" "0\n1\nnvidia/-\n"
k8s_ctl clear-faults >/dev/null
testing "the token never reaches the log" "cat $W/up.log $W/err.log | grep -c -F -e \"\$(cat $K8S_DIR/tokens/node1)\"" "0\n"

done_testing
