# nfd-worker without an API server: labels and the NodeFeature object from
# fixture hosts, config and flags, features.d.
. "$(dirname "$0")/../lib/testing.sh"
F=$FB_TOP/tests/fixtures
NS=feature.node.kubernetes.io

# Host roots: an x86 GPU server and a Raspberry Pi 4 with its USB devices.
mkdir -p "$W/gpu" "$W/pi" "$W/fd" "$W/empty"
cp -r "$F/nfd/x86-server/." "$W/gpu/" && cp -r "$F/sysfs/gpuserver/." "$W/gpu/"
cp -r "$F/nfd/rpi4/." "$W/pi/" && cp -r "$F/sysfs/rpi4/." "$W/pi/"
NW="$FB nfd-worker --oneshot --config $W/none.conf --node-name node1"

# 1. Labels a user of each machine checks (everything but the cpuid flags).
testing "GPU server: labels" \
	"$NW --no-publish --host-prefix $W/gpu/ --features-dir $W/empty 2>/dev/null | grep -v cpu-cpuid" \
	"$NS/cpu-cstate.enabled=true
$NS/cpu-hardware_multithreading=true
$NS/cpu-model.family=6
$NS/cpu-model.hypervisor=none
$NS/cpu-model.id=85
$NS/cpu-model.vendor_id=Intel
$NS/cpu-pstate.scaling_governor=performance
$NS/cpu-pstate.status=active
$NS/cpu-pstate.turbo=true
$NS/kernel-config.NO_HZ=true
$NS/kernel-config.NO_HZ_IDLE=true
$NS/kernel-version.full=6.1.0-18-amd64
$NS/kernel-version.major=6
$NS/kernel-version.minor=1
$NS/kernel-version.revision=0
$NS/memory-numa=true
$NS/memory-nv.dax=true
$NS/memory-nv.present=true
$NS/memory-swap=true
$NS/network-sriov.capable=true
$NS/network-sriov.configured=true
$NS/pci-0300_1a03.present=true
$NS/pci-0302_10de.present=true
$NS/pci-0302_10de.sriov.capable=true
$NS/pci-0b40_8086.present=true
$NS/pci-0b40_8086.sriov.capable=true
$NS/storage-nonrotationaldisk=true
$NS/system-os_release.ID=debian
$NS/system-os_release.VERSION_ID=12
$NS/system-os_release.VERSION_ID.major=12\n"
testing "GPU server: blacklisted cpuid flags are not labels, others are" \
	"$NW --no-publish --host-prefix $W/gpu/ --features-dir $W/empty 2>/dev/null | grep -e 'cpuid.SSE2=' -e 'cpuid.AVX512F='" \
	"$NS/cpu-cpuid.AVX512F=true\n"
testing "GPU server: the incomplete PCI device is skipped with a warning" \
	"$NW --no-publish --host-prefix $W/gpu/ --features-dir $W/empty 2>&1 >/dev/null | grep -c 'skipping device 0000:00:1f.2: vendor: not found'" "1\n"
testing "Raspberry Pi: USB accelerators labelled, bridges and hubs not" \
	"$NW --no-publish --host-prefix $W/pi/ --features-dir $W/empty 2>/dev/null | grep -e usb- -e pci-" \
	"$NS/usb-0e_1908_2311.present=true\n$NS/usb-fe_1a6e_089a.present=true\n$NS/usb-ff_03e7_2485.present=true\n"
# USB from each entry's uevent alone, in the kernel's forms: PRODUCT in hex
# without leading zeros, TYPE and INTERFACE in decimal (14 is class 0e)
U=$W/uev/sys/bus/usb/devices
mkdir -p "$U/1-1" "$U/1-2" "$U/1-2:1.0" "$U/1-3"
printf 'DEVTYPE=usb_device\nDRIVER=usb\nPRODUCT=3e7/2485/1\nTYPE=255/17/255\nBUSNUM=001\nDEVNUM=002\n' >"$U/1-1/uevent"
printf 'DEVTYPE=usb_device\nDRIVER=usb\nPRODUCT=1908/2311/100\nTYPE=0/0/0\nBUSNUM=001\nDEVNUM=003\n' >"$U/1-2/uevent"
printf 'DEVTYPE=usb_interface\nPRODUCT=1908/2311/100\nTYPE=0/0/0\nINTERFACE=14/1/0\n' >"$U/1-2:1.0/uevent"
printf 'DEVTYPE=usb_device\nPRODUCT=0x3e7/2485/1\nTYPE=255/0/0\n' >"$U/1-3/uevent"
testing "USB from uevent: hex PRODUCT, decimal TYPE and INTERFACE" \
	"$NW --no-publish --host-prefix $W/uev/ --features-dir $W/empty --label-sources=usb 2>/dev/null" \
	"$NS/usb-0e_1908_2311.present=true\n$NS/usb-ff_03e7_2485.present=true\n"
testing "USB from uevent: a garbled PRODUCT skips the device, named" \
	"$NW --no-publish --host-prefix $W/uev/ --features-dir $W/empty --label-sources=usb 2>&1 >/dev/null | grep -c 'usb: skipping device 1-3: uevent: malformed PRODUCT \"0x3e7/2485/1\"'" "1\n"

# 2. Sources, config and --options.
testing "--label-sources=pci: only PCI labels" \
	"$NW --no-publish --host-prefix $W/gpu/ --features-dir $W/empty --label-sources=pci 2>/dev/null | cut -d- -f1 | sort -u" \
	"$NS/pci\n"
testing "-label-sources=all,-cpu (one dash, Go style): no cpu labels" \
	"$NW -no-publish -host-prefix $W/gpu/ -features-dir $W/empty -label-sources=all,-cpu 2>/dev/null | grep -c cpu-" "0\n"
testing "--options replaces the PCI class whitelist" \
	"$NW --no-publish --host-prefix $W/gpu/ --features-dir $W/empty --label-sources=pci --options '{\"sources\":{\"pci\":{\"deviceClassWhitelist\":[\"0b40\"],\"deviceLabelFields\":[\"vendor\",\"class\",\"device\"]}}}' 2>/dev/null" \
	"$NS/pci-0b40_8086_4940.present=true\n$NS/pci-0b40_8086_4940.sriov.capable=true\n"
cat >"$W/worker.conf" <<'CONF'
core:
  labelSources: [usb]
sources:
  usb:
    deviceClassWhitelist: ["fe"]
CONF
testing "config file: lists replace the defaults" \
	"$NW --config $W/worker.conf --no-publish --host-prefix $W/pi/ --features-dir $W/empty 2>/dev/null" "$NS/usb-fe_1a6e_089a.present=true\n"
testing "flags beat the config file" \
	"$NW --config $W/worker.conf --label-sources=system --no-publish --host-prefix $W/pi/ --features-dir $W/empty 2>/dev/null | grep -c usb-" "0\n"
printf 'core:\n  sleepInterval: [oops\n' >"$W/bad.conf"
testing "bad config YAML: exit 1 naming line and column" \
	"$NW --config $W/bad.conf --no-publish 2>&1 | grep -c 'bad.conf: line 2 column'; $NW --config $W/bad.conf --no-publish 2>/dev/null; echo \$?" "1\n1\n"
printf 'core:\n  sleepInterval: 5s\n  noSuchKey: 1\n' >"$W/unknown.conf"
testing "unknown config key: a warning, not fatal" \
	"$NW --config $W/unknown.conf --no-publish --host-prefix $W/empty/ --features-dir $W/empty 2>&1 >/dev/null | grep -c 'unknown key core.noSuchKey'; $NW --config $W/unknown.conf --no-publish --host-prefix $W/empty/ --features-dir $W/empty >/dev/null 2>&1; echo \$?" "1\n0\n"
testing "a disabled feature source gives no labels either (as upstream)" \
	"$NW --no-publish --host-prefix $W/gpu/ --features-dir $W/empty --feature-sources=all,-cpu,-pci 2>/dev/null | grep -c -e cpu- -e pci-" "0\n"
mkdir -p "$W/fifo/proc" && mkfifo "$W/fifo/proc/cpuinfo" "$W/fifo/proc/.featurebox-cpuid"
testing "a FIFO where /proc/cpuinfo or the test cpuid dump should be: no hang" \
	"timeout -k 10 20 $NW --no-publish --host-prefix $W/fifo/ --features-dir $W/empty >/dev/null 2>&1; echo \$?" "0\n"
testing "RE2 non-capturing groups in labelWhiteList work" \
	"$NW --no-publish --host-prefix $W/gpu/ --features-dir $W/empty --options '{\"core\":{\"labelWhiteList\":\"^(?:pci|storage)-\"}}' 2>/dev/null | cut -d- -f1 | sort -u" \
	"$NS/pci\n$NS/storage\n"
testing "--owner-refs with an unknown kind: exit 2" "$NW --owner-refs=node,rs --no-publish 2>/dev/null; echo \$?" "2\n"
testing "an operand: exit 2" "$NW --no-publish extra 2>/dev/null; echo \$?" "2\n"

# 3. features.d: the local source.
cat >"$W/fd/10-first" <<'EOF2'
vendor.example.com/accel=fast
overridden=first
# +no-label
feature-only=1
# +expiry-time=2000-01-01T00:00:00Z
expired-label=yes
EOF2
printf 'overridden=second\nflag-label\nBad Key=1\n' >"$W/fd/20-second"
printf 'hidden=1\n' >"$W/fd/.hidden"
testing "features.d: labels as written, later files win, expired and hidden ones left out" \
	"$NW --no-publish --host-prefix $W/empty/ --features-dir $W/fd --label-sources=local 2>/dev/null" \
	"flag-label=true\noverridden=second\nvendor.example.com/accel=fast\n"
testing "features.d: an invalid label key is dropped and logged" \
	"$NW --no-publish --host-prefix $W/empty/ --features-dir $W/fd --label-sources=local 2>&1 >/dev/null | grep -c 'invalid name'" "1\n"

# Hooks: only when sources.local.hooksEnabled; hooks override files, as
# upstream (more in nfd-worker-hooks.sh).
mkdir -p "$W/hooks"
printf '#!/bin/sh\necho hook.example.com/ran=yes\necho overridden=hook\n' >"$W/hooks/10-hook"
chmod 755 "$W/hooks/10-hook"
testing "hooks are off by default" \
	"$NW --no-publish --host-prefix $W/empty/ --features-dir $W/fd --hooks-dir $W/hooks --label-sources=local 2>/dev/null | grep -c hook" "0\n"
testing "hooksEnabled: hook labels merged, hooks override features.d" \
	"$NW --no-publish --host-prefix $W/empty/ --features-dir $W/fd --hooks-dir $W/hooks --label-sources=local --options '{\"sources\":{\"local\":{\"hooksEnabled\":true}}}' 2>/dev/null" \
	"flag-label=true\nhook.example.com/ran=yes\noverridden=hook\nvendor.example.com/accel=fast\n"

# 4. The NodeFeature object (--print-features): upstream's exact shape.
$NW --no-publish --print-features --host-prefix "$W/gpu/" --features-dir "$W/fd" >"$W/nf.json" 2>/dev/null
check "--print-features: the NodeFeature object" python3 - "$W/nf.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["apiVersion"] == "nfd.k8s-sigs.io/v1alpha1" and o["kind"] == "NodeFeature", o.get("kind")
md = o["metadata"]
assert md["name"] == "node1", md
assert md["labels"] == {"nfd.node.kubernetes.io/node-name": "node1"}, md["labels"]
assert md["annotations"]["nfd.node.kubernetes.io/worker.version"], md["annotations"]
f = o["spec"]["features"]
assert sorted(f) == ["attributes", "flags", "instances"], sorted(f)
for kind in f.values():
    for k, v in kind.items():
        assert "." in k and "elements" in v, (k, v)
assert {"cpu.cpuid", "kernel.loadedmodule"} <= set(f["flags"]), sorted(f["flags"])
for k in ("cpu.model", "kernel.version", "system.osrelease", "local.label", "local.feature"):
    assert k in f["attributes"], k
assert f["attributes"]["local.feature"]["elements"].get("feature-only") == "1"
assert "feature-only" not in o["spec"]["labels"]
gpus = [i["attributes"] for i in f["instances"]["pci.device"]["elements"] if i["attributes"]["vendor"] == "10de"]
assert gpus and gpus[0]["class"] == "0302" and "sriov_totalvfs" in gpus[0], gpus
assert all(isinstance(v, str) for i in f["instances"]["pci.device"]["elements"] for v in i["attributes"].values())
assert o["spec"]["labels"]["feature.node.kubernetes.io/pci-0302_10de.present"] == "true"
PY
testing "local.label and local.feature are published even when empty" \
	"$NW --no-publish --print-features --host-prefix $W/empty/ --features-dir $W/empty --feature-sources=local 2>/dev/null | grep -c '\"local.feature\":{\"elements\":{}}.*\"local.label\":{\"elements\":{}}'" "1\n"
testing "--no-publish-features drops a feature" \
	"$NW --no-publish --print-features --host-prefix $W/gpu/ --features-dir $W/empty --no-publish-features=cpu.cpuid 2>/dev/null | grep -c '\"cpu.cpuid\"'" "0\n"

# The custom source: sources.custom and custom.d rules (shorthand syntax),
# evaluated by the NodeFeatureRule engine over every discovered feature;
# labels unprefixed (the master prefixes); local labels win over custom ones.
mkdir -p "$W/custom.d/cm" "$W/cfd"
cat >"$W/custom.conf" <<'YAML'
sources:
  custom:
    - name: gpu
      labels: {nvidia-gpu: "true", shared: from-config}
      vars: {hasgpu: "true"}
      matchFeatures:
        - feature: pci.device
          matchExpressions: {vendor: ["10de"]}
    - name: never
      labels: {never: "true"}
      matchFeatures:
        - feature: pci.device
          matchExpressions: {vendor: {op: In, value: ["ffff"]}}
YAML
cat >"$W/custom.d/10-kernel.yaml" <<'YAML'
- name: backref
  labels: {gpu-node: "yes"}
  matchFeatures:
    - feature: rule.matched
      matchExpressions: {hasgpu: {op: IsTrue}}
- name: broken
  labels: {broken: "true"}
  matchFeatures:
    - feature: kernel.version
      matchExpressions: {major: {op: Gt, value: [x]}}
- name: after-broken
  labels: {after-broken: "true"}
YAML
printf 'not: [valid\n' >"$W/custom.d/20-bad.yaml"
printf -- '- name: cm\n  labels: {from-configmap: "true"}\n' >"$W/custom.d/cm/rules.yaml"
printf -- '- name: hidden\n  labels: {hidden: "true"}\n' >"$W/custom.d/.hidden.yaml"
printf 'shared=from-local\n' >"$W/cfd/labels"
CW="$NW --config $W/custom.conf --custom-dir $W/custom.d --no-publish --host-prefix $W/gpu/ --features-dir $W/cfd"
testing "custom: config and custom.d rules, back-reference, subdirectory, local wins" \
	"$CW 2>/dev/null | grep -v -e '^$NS/' -e '^feature'" \
	"after-broken=true\nfrom-configmap=true\ngpu-node=yes\nnvidia-gpu=true\nshared=from-local\n"
testing "custom: a broken rule and a bad file are logged, the rest applies" \
	"$CW 2>&1 >/dev/null | grep -c -e 'rule \"broken\"' -e '20-bad.yaml'" "2\n"
testing "custom: --label-sources=-custom turns it off" \
	"$CW --label-sources=all,-custom 2>/dev/null | grep -c -e nvidia-gpu -e from-configmap" "0\n"
testing "custom: rule.matched is not published" \
	"$CW --print-features 2>/dev/null | grep -c rule.matched" "0\n"

# 5. Files other users write (issue 16): a symlink in features.d, custom.d or
#    source.d is followed only while it stays inside that directory (ConfigMap
#    volumes' "..data" links keep working); a line that is no valid feature
#    reaches neither the NodeFeature nor a log line raw or whole.
mkdir -p "$W/secret" "$W/sfd" "$W/scd" "$W/outside"
TOKEN=FAKE-TOKEN-eyJhbGciOiJSUzI1NiIsImtpZCI6InNlY3JldCJ9.c2VjcmV0LXBheWxvYWQ
printf '%s\n' "$TOKEN" >"$W/secret/token"
ln -s "$W/secret/token" "$W/sfd/abs-token"
ln -s ../secret/token "$W/sfd/rel-token"
ln -s "$W/secret" "$W/sfd/dir-link"
ln -s dir-link/token "$W/sfd/via-dir-link"
printf 'ok.example.com/plain=yes\n' >"$W/sfd/plain"
$NW --no-publish --print-features --host-prefix "$W/empty/" --features-dir "$W/sfd" >"$W/sym.out" 2>"$W/sym.err"
$NW --no-publish --host-prefix "$W/empty/" --features-dir "$W/sfd" --label-sources=local >>"$W/sym.out" 2>>"$W/sym.err"
testing "features.d: a symlink out of the directory is not read (the token is nowhere)" \
	"cat $W/sym.out $W/sym.err | grep -c -F -e FAKE-TOKEN -e c2VjcmV0LXBheWxvYWQ; grep -c ok.example.com/plain $W/sym.out" "0\n2\n"
testing "features.d: each refused symlink is named in a warning" \
	"grep -c -e 'abs-token.*outside' -e 'rel-token.*outside' -e 'via-dir-link.*outside' $W/sym.err" "6\n"
# A ConfigMap volume: NAME -> ..data/NAME, ..data -> ..<timestamp>/ (relative)
mkdir -p "$W/cmfd/..2024_01_01_00_00_00.000000001/sub"
printf 'cm.example.com/from=configmap\n' >"$W/cmfd/..2024_01_01_00_00_00.000000001/labels"
printf 'cm.example.com/nested=yes\n' >"$W/cmfd/..2024_01_01_00_00_00.000000001/sub/more"
ln -s ..2024_01_01_00_00_00.000000001 "$W/cmfd/..data"
ln -s ..data/labels "$W/cmfd/labels"
ln -s ./..data/sub/../sub/more "$W/cmfd/more"
testing "features.d: a ConfigMap volume's ..data links still work" \
	"$NW --no-publish --host-prefix $W/empty/ --features-dir $W/cmfd --label-sources=local 2>$W/cm.err; grep -c outside $W/cm.err" \
	"cm.example.com/from=configmap\ncm.example.com/nested=yes\n0\n"
# custom.d: a rules file outside (planted by whoever can write custom.d)
printf -- '- name: outside\n  labels: {outside-rule: "true"}\n' >"$W/outside/rules.yaml"
printf -- '- name: inside\n  labels: {inside-rule: "true"}\n' >"$W/outside/inside.yaml"
mkdir -p "$W/scd/..2024_01_01_00_00_00.000000001" "$W/scd/cm"
cp "$W/outside/inside.yaml" "$W/scd/..2024_01_01_00_00_00.000000001/rules.yaml"
ln -s ..2024_01_01_00_00_00.000000001 "$W/scd/..data"
ln -s ..data/rules.yaml "$W/scd/10-cm.yaml"
ln -s "$W/outside/rules.yaml" "$W/scd/20-abs.yaml"
ln -s ../outside/rules.yaml "$W/scd/30-rel.yaml"
ln -s ../../outside "$W/scd/cm/up"
ln -s "$W/secret/token" "$W/scd/40-token.yaml"
SCW="$NW --custom-dir $W/scd --no-publish --host-prefix $W/empty/ --features-dir $W/empty --label-sources=custom"
testing "custom.d: symlinks out of the directory are refused and named, ..data links work" \
	"$SCW 2>$W/scd.err; grep -c -e '20-abs.yaml.*outside' -e '30-rel.yaml.*outside' -e '40-token.yaml.*outside' $W/scd.err; grep -c -F FAKE-TOKEN $W/scd.err" \
	"inside-rule=true\n3\n0\n"
# source.d: a hook that is a symlink to an executable elsewhere is not run
mkdir -p "$W/shooks" "$W/outbin"
printf '#!/bin/sh\necho hook.example.com/outside=ran\n' >"$W/outbin/evil"
printf '#!/bin/sh\necho hook.example.com/inside=ran\n' >"$W/shooks/.real"
chmod 755 "$W/outbin/evil" "$W/shooks/.real"
ln -s "$W/outbin/evil" "$W/shooks/10-evil"
ln -s .real "$W/shooks/20-inside"
testing "source.d: a hook symlinked from outside is not run, one inside is" \
	"$NW --no-publish --host-prefix $W/empty/ --features-dir $W/empty --hooks-dir $W/shooks --label-sources=local --options '{\"sources\":{\"local\":{\"hooksEnabled\":true}}}' 2>$W/sh.err; grep -c '10-evil.*outside' $W/sh.err" \
	"hook.example.com/inside=ran\n1\n"
# A line that is no valid feature: control characters, a name past any label key
mkdir -p "$W/badfd"
LONG=$(head -c 5000 /dev/zero | tr '\0' k)
printf 'bad\033]0;pwned\007key=1\n%s=2\nok.example.com/fine=3\n' "$LONG" >"$W/badfd/x"
$NW --no-publish --print-features --host-prefix "$W/empty/" --features-dir "$W/badfd" --feature-sources=local >"$W/bad.out" 2>"$W/bad.err"
testing "features.d: an invalid feature name is not published, a valid one is" \
	"grep -c -e pwned -e kkkkkkkkkk $W/bad.out; grep -c ok.example.com/fine $W/bad.out" "0\n1\n"
check "features.d: an invalid name is logged escaped and cut short" python3 - "$W/bad.err" <<'PY'
import sys
err = open(sys.argv[1], "rb").read()
assert b"\x1b" not in err and b"\x07" not in err, "raw control characters in the log"
assert b"bad\\x1b]0;pwned\\x07key" in err, err[:2000]
lines = [l for l in err.split(b"\n") if b"kkkkkkkk" in l]
assert lines and all(len(l) < 300 for l in lines), [len(l) for l in lines]
assert all(b"..." in l for l in lines), lines
import re
shown = max(len(m) for l in lines for m in re.findall(rb"k+", l))
assert shown <= 80, "%d bytes of the name shown" % shown
PY

# 6. Memory is bounded by the largest file, not the sum, and the number of
#    files read is capped (issue 16: 1,500 comment-only files of 64 KiB took
#    105 MB). Hard links: the files cost the disk nothing.
mkdir -p "$W/manyfd"
python3 -c 'import sys; line = "# " + "c" * 61 + "\n"; sys.stdout.write(line * (65536 // 64))' >"$W/manyfd/0000"
i=1
while [ $i -lt 1500 ]; do ln "$W/manyfd/0000" "$W/manyfd/$(printf %04d $i)"; i=$((i + 1)); done
printf 'last.example.com/read=no\n' >"$W/manyfd/zzzz"
printf 'first.example.com/read=yes\n' >"$W/manyfd/-first"
/usr/bin/time -f '%M' -o "$W/rss" $NW --no-publish --host-prefix "$W/empty/" --features-dir "$W/manyfd" --feature-sources=local >"$W/many.out" 2>"$W/many.err"
rss=$(tail -1 "$W/rss")
echo "# nfd-worker peak RSS over 1,502 features.d files (1,500 of 64 KiB, comments only): $rss KiB ($FLAVOUR build)" >&2
testing "features.d: files past the cap are skipped with one warning naming the count" \
	"cat $W/many.out; grep -c 'features.d: 1502 files in $W/manyfd, reading the first 1024' $W/many.err" \
	"first.example.com/read=yes\n1\n"
if [ "$FLAVOUR" = check ]; then
	pass "features.d: peak RSS under 16 MiB (not asserted under the sanitizers: $rss KiB)"
else
	testing "features.d: peak RSS under 16 MiB ($rss KiB)" "[ $rss -lt 16384 ] && echo ok" "ok\n"
fi

done_testing
