# nfd-worker's kernel config (issue 18): read as upstream's source/kernel
# reads it: the kconfigFile option, /proc/config.gz (gunzipped), then the
# plain files of the search list ending with /boot/config-<release>; the
# first one read wins, a bad one is passed over. kernel.config has every
# option, the kernel-config.* labels the configOpts (NO_HZ, NO_HZ_IDLE,
# NO_HZ_FULL, PREEMPT by default) with y and m as "true".
. "$(dirname "$0")/../lib/testing.sh"
NS=feature.node.kubernetes.io
REL=6.8.0-test
NW="$FB nfd-worker --config $W/none.conf --node-name node1 --features-dir $W/empty --oneshot --no-publish"

# root NAME: a host root with only what the kernel source reads
root() {
	mkdir -p "$W/$1/proc/sys/kernel" "$W/$1/sys/fs" "$W/$1/boot"
	echo "$REL" >"$W/$1/proc/sys/kernel/osrelease"
}
mkdir -p "$W/empty"
cat >"$W/kconfig" <<'EOF'
#
# Automatically generated file; DO NOT EDIT.
#
CONFIG_NO_HZ=y
CONFIG_NO_HZ_IDLE=y
# CONFIG_NO_HZ_FULL is not set
CONFIG_PREEMPT=y
CONFIG_HZ=250
CONFIG_LOCALVERSION=""
CONFIG_DEFAULT_HOSTNAME="(none)"
CONFIG_KVM=m
EOF
printf 'CONFIG_NO_HZ=y\nCONFIG_FROM_BOOT=y\n' >"$W/boot-config"

# labels NAME [FLAGS]: the kernel-config labels of root NAME
labels() { r=$1; shift; $NW --host-prefix "$W/$r/" --label-sources=kernel "$@" 2>/dev/null | grep kernel-config; }
# config NAME [FLAGS]: kernel.config of root NAME as sorted KEY=VALUE lines
config() {
	r=$1; shift
	$NW --host-prefix "$W/$r/" --feature-sources=kernel --label-sources=kernel --print-features "$@" 2>/dev/null |
		python3 -c 'import json, sys
e = json.load(sys.stdin)["spec"]["features"]["attributes"].get("kernel.config", {}).get("elements")
print("none" if e is None else "\n".join("%s=%s" % kv for kv in sorted(e.items())))'
}
LABELS="$NS/kernel-config.NO_HZ=true
$NS/kernel-config.NO_HZ_IDLE=true
$NS/kernel-config.PREEMPT=true\n"
CONFIG="DEFAULT_HOSTNAME=(none)
HZ=250
KVM=m
LOCALVERSION=
NO_HZ=y
NO_HZ_IDLE=y
PREEMPT=y\n"

# 1. /proc/config.gz alone: what upstream publishes from it.
root gz && gzip -9 -n -c "$W/kconfig" >"$W/gz/proc/config.gz"
testing "proc/config.gz only: kernel-config labels (configOpts defaults)" "labels gz" "$LABELS"
testing "proc/config.gz only: kernel.config has every option, values unquoted" "config gz" "$CONFIG"
testing "proc/config.gz only: configOpts from --options" \
	"labels gz --options '{\"sources\":{\"kernel\":{\"configOpts\":[\"HZ\",\"KVM\",\"LOCALVERSION\"]}}}'" \
	"$NS/kernel-config.HZ=250\n$NS/kernel-config.KVM=true\n$NS/kernel-config.LOCALVERSION=\n"
root gz1 && gzip -1 -c "$W/kconfig" >"$W/gz1/proc/config.gz"
testing "proc/config.gz made by gzip -1 with a file name" "config gz1" "$CONFIG"
root norel && rm "$W/norel/proc/sys/kernel/osrelease" && cp "$W/gz/proc/config.gz" "$W/norel/proc/"
testing "no kernel release: proc/config.gz is still read" "labels norel" "$LABELS"

# 2. The order: /proc/config.gz before /boot/config-<release>.
root boot && cp "$W/boot-config" "$W/boot/boot/config-$REL"
testing "boot/config-<release> only: read" "config boot" "FROM_BOOT=y\nNO_HZ=y\n"
root both && cp "$W/gz/proc/config.gz" "$W/both/proc/" && cp "$W/boot-config" "$W/both/boot/config-$REL"
testing "proc/config.gz and boot/config-<release>: proc/config.gz wins" "config both" "$CONFIG"

# 3. A bad /proc/config.gz is passed over, with a warning naming the problem.
root badcrc && cp "$W/boot-config" "$W/badcrc/boot/config-$REL"
python3 - "$W/gz/proc/config.gz" "$W/badcrc/proc/config.gz" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-8] ^= 1
open(sys.argv[2], "wb").write(b)
PY
testing "corrupt proc/config.gz: boot/config-<release> is used" "config badcrc" "FROM_BOOT=y\nNO_HZ=y\n"
testing "corrupt proc/config.gz: a warning naming the file and the problem" \
	"$NW --host-prefix $W/badcrc/ --label-sources=kernel 2>&1 >/dev/null | grep -c 'badcrc/proc/config.gz: CRC-32 mismatch; trying the next kernel config'" "1\n"
root trunc && head -c 100 "$W/gz/proc/config.gz" >"$W/trunc/proc/config.gz"
testing "truncated proc/config.gz alone: no kernel.config, no labels" "config trunc; labels trunc | wc -l" "none\n0\n"
testing "truncated proc/config.gz alone: the warning, then upstream's error" \
	"$NW --host-prefix $W/trunc/ --label-sources=kernel 2>&1 >/dev/null | grep -o -e 'config.gz: unexpected end of data' -e 'failed to read kconfig'" \
	"config.gz: unexpected end of data\nfailed to read kconfig\n"
root plain && cp "$W/kconfig" "$W/plain/proc/config.gz"
testing "a plain text proc/config.gz is not gzip: passed over" \
	"$NW --host-prefix $W/plain/ --label-sources=kernel 2>&1 >/dev/null | grep -c 'config.gz: not in gzip format'" "1\n"

# 4. Bounds: the output cap of a plain config (4 MiB) is an error, not a cut.
root big && cp "$W/boot-config" "$W/big/boot/config-$REL"
python3 - "$W/big/proc/config.gz" <<'PY'
import gzip, sys
open(sys.argv[1], "wb").write(gzip.compress(b"CONFIG_NO_HZ=y\n" + b"#" * (4 << 20) + b"\nCONFIG_LAST=y\n", 9))
PY
testing "proc/config.gz of over 4 MiB: refused with a warning, boot config used" \
	"$NW --host-prefix $W/big/ --label-sources=kernel 2>&1 >/dev/null | grep -c 'config.gz: output larger than 4194303 bytes'; config big" \
	"1\nFROM_BOOT=y\nNO_HZ=y\n"

# 5. Several gzip members: their outputs concatenated, as gzip and Go do.
root multi && { head -n 6 "$W/kconfig" | gzip -n; tail -n +7 "$W/kconfig" | gzip -n -1; } >"$W/multi/proc/config.gz"
testing "proc/config.gz of two members: both read" "config multi" "$CONFIG"

# 6. kconfigFile: a path of the worker's own filesystem, gunzipped when it
# ends in .gz; a bad one falls back to the search list.
printf 'CONFIG_NO_HZ=y\nCONFIG_FROM_KCONFIGFILE=y\n' | gzip -n >"$W/own-config.gz"
testing "kconfigFile naming a .gz file: gunzipped, before proc/config.gz" \
	"config both --options '{\"sources\":{\"kernel\":{\"kconfigFile\":\"$W/own-config.gz\"}}}'" "FROM_KCONFIGFILE=y\nNO_HZ=y\n"
cp "$W/boot-config" "$W/own-config-plain.gz"
testing "kconfigFile .gz that is not gzip: warning, then proc/config.gz" \
	"config both --options '{\"sources\":{\"kernel\":{\"kconfigFile\":\"$W/own-config-plain.gz\"}}}'; $NW --host-prefix $W/both/ --label-sources=kernel --options '{\"sources\":{\"kernel\":{\"kconfigFile\":\"$W/own-config-plain.gz\"}}}' 2>&1 >/dev/null | grep -c 'own-config-plain.gz: not in gzip format'" \
	"$CONFIG""1\n"

# 7. This machine's own /proc/config.gz, when it has one: as many
# kernel.config options as the file has CONFIG_ lines.
if [ -r /proc/config.gz ] && gzip -t /proc/config.gz 2>/dev/null; then
	root host && cp /proc/config.gz "$W/host/proc/config.gz"
	want=$(gzip -dc /proc/config.gz | grep -c '^CONFIG_')
	testing "this host's /proc/config.gz: $want options, as zcat | grep -c ^CONFIG_" \
		"config host | wc -l" "$want\n"
else
	skip "this host's /proc/config.gz" "no readable /proc/config.gz here"
fi

# 8. In upstream's pod layout (prefix /host-) the worker reads its own
# /proc/config.gz, the running kernel's, as upstream does: our manifests
# mount only a few files of the host's /proc. Elsewhere the prefix's.
testing "prefix /host-: /proc/config.gz itself is tried first" \
	"$NW --host-prefix /host- --label-sources=kernel -v=3 2>&1 >/dev/null | grep 'kernel: trying' | head -n 1 | sed 's/.*kernel: //'" \
	"trying /proc/config.gz (the running kernel's, in a pod)\n"
testing "a fixture prefix: its own proc/config.gz" \
	"$NW --host-prefix $W/both/ --label-sources=kernel -v=3 2>&1 >/dev/null | grep 'kernel: trying' | head -n 1 | sed 's/.*kernel: //'" \
	"trying $W/both/proc/config.gz\n"

done_testing
