# make oci's multi-platform image archive, read back by the tools that
# consume one: skopeo copies each platform out of it (and refuses a corrupted
# blob), umoci unpacks each to a tree that must equal make image-rootfs's
# byte for byte, the unpacked applets run as uid 65534 (qemu-user for the
# arm ones), the image config is what scripts/image-check reads in the
# Dockerfile, two builds give the same bytes; then the import paths the
# README gives: containerd (ctr images import, and a container run from it),
# podman load, and skopeo copy --all to a registry on loopback.
# Runs after tests/image.sh in the same job: both write build/image.
set -u
cd "${FB_TOP:?}" || exit 1
. tests/lib/testing.sh
SUITE=oci

F=tests/fixtures
A=$W/featurebox.tar
host=$(uname -m)
case $host in armv*) host=armhf ;; esac
ver=$(sed -n 's/^#define FB_VERSION "\(.*\)"$/\1/p' core/version.h)
conf=etc/kubernetes/node-feature-discovery/nfd-worker.conf
def_applets=$(sed -n 's/^APPLET(\([a-z0-9-]*\),.*/\1/p' applets/applets.def)
py() { python3 -c "$@"; }
# listing DIR: every entry's type, mode, path and link target, sorted by path
listing() { (cd "$1" && find . -mindepth 1 -printf '%y %m %P %l\n' | LC_ALL=C sort -k3); }

# 1. make oci, twice: the same bytes, and the digests it prints are the blobs'
if ! out=$(make -s --no-print-directory oci OCI_OUT="$A" 2>&1); then
	fail "make oci: $(printf '%s' "$out" | tail -c 600)"
	exit 1
fi
printf '%s\n' "$out" | sed -n '/^oci:/,$p' | sed 's/^/# /' >&2
index=$(sed -n 's/^  index *\(sha256:[0-9a-f]\{64\}\)$/\1/p' <<<"$out")
nman=$(grep -cE '^  linux/(amd64|arm64|arm/v7) +manifest sha256:[0-9a-f]{64} ' <<<"$out")
if [ -n "$index" ] && [ "$nman" = 3 ]; then
	pass "make oci prints the index digest ($index) and a manifest digest for each of the 3 platforms"
else
	fail "make oci's output lacks the index digest or a platform's manifest digest: $(tr '\n' ' ' <<<"$out" | head -c 600)"
fi
if make -s --no-print-directory oci OCI_OUT="$W/again.tar" >"$W/again.out" 2>&1 && cmp -s "$A" "$W/again.tar"; then
	pass "make oci twice (the image-rootfs trees made anew): byte-identical archives"
else
	fail "make oci twice: the archives differ ($(cmp "$A" "$W/again.tar" 2>&1 | head -c 200); $(tail -c 300 "$W/again.out"))"
fi
# the same but for SOURCE_DATE_EPOCH: another archive, stamped with it
if scripts/oci-archive --out "$W/t1.tar" --source s --licenses MIT >/dev/null 2>"$W/err" &&
	SOURCE_DATE_EPOCH=86400 scripts/oci-archive --out "$W/t2.tar" --source s --licenses MIT >/dev/null 2>>"$W/err" &&
	! cmp -s "$W/t1.tar" "$W/t2.tar" &&
	skopeo inspect --raw "oci-archive:$W/t2.tar" 2>>"$W/err" | grep -q '"org.opencontainers.image.created":"1970-01-02T00:00:00Z"' &&
	[ "$(tar -tvf "$W/t2.tar" --full-time | awk '{ print $4 " " $5 }' | sort -u)" = "1970-01-02 00:00:00" ]; then
	pass "SOURCE_DATE_EPOCH=86400: created 1970-01-02T00:00:00Z and every tar entry of that time, the rest unchanged"
else
	fail "SOURCE_DATE_EPOCH is not the archive's time: $(head -c 300 "$W/err")"
fi
raw=$(skopeo inspect --raw "oci-archive:$A:$ver" 2>"$W/err")
if [ "sha256:$(printf '%s' "$raw" | sha256sum | cut -d' ' -f1)" = "$index" ]; then
	pass "skopeo reads oci-archive:...:$ver: the image index, whose sha256 is the printed index digest"
else
	fail "skopeo inspect --raw oci-archive:$A:$ver: not the printed index $index: $(head -c 300 "$W/err")"
fi

# The archive follows the Dockerfile: another CMD in it is the archive's CMD,
# and a Dockerfile whose image is more than the tree makes no archive.
sed 's|^CMD \["--help"\]$|CMD ["--list"]|' Dockerfile >"$W/Dockerfile.cmd"
if cmp -s Dockerfile "$W/Dockerfile.cmd"; then
	fail "the test could not change the Dockerfile's CMD"
elif scripts/oci-archive --out "$W/cmd.tar" --source s --licenses MIT --dockerfile "$W/Dockerfile.cmd" >/dev/null 2>"$W/err" &&
	skopeo inspect --config --raw "oci-archive:$W/cmd.tar" 2>>"$W/err" | grep -q '"Cmd":\["--list"\]'; then
	pass "a Dockerfile with CMD [\"--list\"] gives an archive whose config has that Cmd"
else
	fail "the archive does not follow the Dockerfile's CMD: $(head -c 300 "$W/err")"
fi
sed '/^USER /i COPY --from=build /src/Makefile /Makefile' Dockerfile >"$W/Dockerfile.copy"
if scripts/oci-archive --out "$W/copy.tar" --source s --licenses MIT --dockerfile "$W/Dockerfile.copy" >/dev/null 2>"$W/err"; then
	fail "scripts/oci-archive builds from a Dockerfile whose image has an extra COPY"
elif grep -q 'exactly one' "$W/err" && [ ! -e "$W/copy.tar" ]; then
	pass "a Dockerfile whose image has an extra COPY makes no archive, saying why"
else
	fail "oci-archive refuses the extra COPY without saying why: $(head -c 300 "$W/err")"
fi

# the name the manifests pull is the name the archive imports as
tag=$(sed -n 's/^ *newTag: "\(.*\)"$/\1/p' deploy/components/image/kustomization.yaml)
if [ "$tag" = "$ver" ]; then
	pass "deploy/components/image's newTag is core/version.h's $ver, the archive's tag"
else
	fail "deploy/components/image's newTag is '$tag', core/version.h's version $ver: an imported archive would not be used"
fi

# 2. the layout as written: entries sorted, numeric owners 0:0, one mtime; the
# index's platforms and annotations
rev=$(git rev-parse HEAD 2>/dev/null)
git diff --quiet HEAD -- 2>/dev/null || rev=$rev-dirty
t "the archive and each layer: sorted ustar entries, owner 0:0 without names, one mtime" py '
import gzip, io, json, sys, tarfile
def check(what, tf):
    ms = tf.getmembers()
    names = [m.name for m in ms]
    assert names == sorted(names), (what, "not sorted", names)
    for m in ms:
        assert (m.uid, m.gid, m.uname, m.gname) == (0, 0, "", ""), (what, m.name, m.uid, m.gid, m.uname, m.gname)
    assert len({m.mtime for m in ms}) == 1, (what, "mtimes", {m.mtime for m in ms})
    assert tf.format == tarfile.USTAR_FORMAT or all(not m.pax_headers for m in ms), (what, "pax headers")
tf = tarfile.open(sys.argv[1])
check("archive", tf)
for m in tf.getmembers():
    if m.isfile() and m.name.startswith("blobs/"):
        data = tf.extractfile(m).read()
        if data[:2] == b"\x1f\x8b":
            check(m.name, tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))))
' "$A"
t "the index: linux/amd64, linux/arm64, linux/arm/v7; annotations version $ver, revision $rev, source, licenses" py '
import json, sys
idx = json.loads(sys.argv[1])
plats = sorted("/".join(filter(None, [m["platform"]["os"], m["platform"]["architecture"], m["platform"].get("variant")]))
               for m in idx["manifests"])
assert plats == ["linux/amd64", "linux/arm/v7", "linux/arm64"], plats
assert all(m["mediaType"] == "application/vnd.oci.image.manifest.v1+json" for m in idx["manifests"])
a = idx["annotations"]
p = "org.opencontainers.image."
assert a[p + "version"] == sys.argv[2], a
assert a[p + "revision"] == sys.argv[3], a
assert a[p + "source"] and a[p + "licenses"], a
' "$raw" "$ver" "$rev"

# The image as the Dockerfile describes it (scripts/image-check --json)
scripts/image-check --json >"$W/image.json" 2>"$W/err" || fail "scripts/image-check --json: $(head -c 300 "$W/err")"

# 3. each platform: skopeo copy, its config, umoci unpack, the tree, the applets as nobody
mkdir -p "$W/host" "$W/host/empty"
cp -r "$F/nfd/x86-server/." "$F/sysfs/gpuserver/." "$W/host/"
chmod -R a+rX "$W/host"
# what the labels must be: the host build on the same host tree and config
as_nobody build/featurebox nfd-worker --oneshot --no-publish --config deploy/base/nfd-worker.conf \
	--host-prefix "$W/host/" --features-dir "$W/host/empty" >"$W/labels.want" 2>"$W/err"
grep -q '^feature.node.kubernetes.io/pci-0302_10de.present=true$' "$W/labels.want" ||
	fail "the reference labels from build/featurebox lack pci-0302_10de.present: $(head -c 300 "$W/err")"
for plat in amd64:x86_64 arm64:aarch64 arm:armhf; do
	IFS=: read -r p arch <<<"$plat"
	case $arch in
	x86_64) wrap=qemu-x86_64-static ;;
	aarch64) wrap=qemu-aarch64-static ;;
	armhf) wrap=qemu-arm-static ;;
	esac
	if [ "$arch" = "$host" ]; then built=build/featurebox wrap=; else built=build/$arch/featurebox; fi
	variant=()
	[ "$p" = arm ] && variant=(--override-variant v7)
	lay=$W/layout-$p
	if skopeo copy -q --override-os linux --override-arch "$p" "${variant[@]}" \
		"oci-archive:$A:$ver" "oci:$lay:featurebox" >"$W/err" 2>&1; then
		pass "$p: skopeo copy oci-archive:...:$ver to an OCI layout"
	else
		fail "$p: skopeo copy: $(head -c 400 "$W/err")"
		continue
	fi
	# the config: platform, user, entrypoint, cmd, env and labels as the Dockerfile has them
	skopeo inspect --config --raw "oci:$lay:featurebox" >"$W/config.json" 2>"$W/err"
	t "$p: the image config is the Dockerfile's (image-check --json): platform, User, Entrypoint, Cmd, Env, Labels" py '
import json, sys
c = json.load(open(sys.argv[1]))
want = [i for i in json.load(open(sys.argv[2]))["platforms"] if i["targetarch"] == sys.argv[3]][0]
assert (c["os"], c["architecture"], c.get("variant")) == ("linux", want["architecture"], want["variant"]), c
cc = c["config"]
assert cc["User"] == want["user"] == "65534:65534", cc
assert cc["Entrypoint"] == want["entrypoint"] == ["/usr/bin/featurebox"], cc
assert cc.get("Cmd") == want["cmd"] and cc["Env"] == want["env"], cc
assert cc.get("Labels", {}) == want["labels"], cc
assert len(c["rootfs"]["diff_ids"]) == 1, c["rootfs"]
' "$W/config.json" "$W/image.json" "$p"

	b=$W/bundle-$p
	if ! umoci unpack --image "$lay:featurebox" "$b" >"$W/err" 2>&1; then
		fail "$p: umoci unpack: $(head -c 400 "$W/err")"
		continue
	fi
	pass "$p: umoci unpack"
	chmod 755 "$b"
	root=$b/rootfs
	tree=build/image/$arch/rootfs
	if [ "$(listing "$root")" = "$(listing "$tree")" ] && diff -r --no-dereference "$root" "$tree" >"$W/err" 2>&1; then
		pass "$p: the unpacked tree is $tree, entry by entry (type, mode, link) and byte for byte"
	else
		fail "$p: the unpacked tree differs from $tree: $(diff <(listing "$root") <(listing "$tree") | tr '\n' ' ' | head -c 300) $(head -c 300 "$W/err")"
	fi
	t "$p: its usr/bin/featurebox is $built (the $arch binary)" cmp "$root/usr/bin/featurebox" "$built"
	t "$p: umoci's runtime config runs /usr/bin/featurebox --help as 65534:65534" py '
import json, sys
p = json.load(open(sys.argv[1]))["process"]
assert (p["user"]["uid"], p["user"]["gid"]) == (65534, 65534), p["user"]
assert p["args"] == ["/usr/bin/featurebox", "--help"], p["args"]
' "$b/config.json"

	if [ -n "$wrap" ] && ! command -v "$wrap" >/dev/null; then
		fail "$p: $wrap missing (apt-get install qemu-user-static)"
		continue
	fi
	who="as uid $(as_nobody id -u)${wrap:+ under $wrap}"
	if list=$(as_nobody $wrap "$root/usr/bin/featurebox" --list 2>"$W/err") && [ "$list" = "$def_applets" ]; then
		pass "$p: the unpacked featurebox --list names applets.def's applets ($who)"
	else
		fail "$p: the unpacked featurebox --list ($who): $(tr '\n' ' ' <<<"$list") $(head -c 300 "$W/err")"
	fi
	bad=
	for a in $def_applets; do
		out=$(as_nobody $wrap "$root/usr/bin/$a" --help 2>&1) && grep -q "^Usage: $a " <<<"$out" ||
			bad="$bad $a: $(head -c 120 <<<"$out")"
	done
	if [ -z "$bad" ]; then
		pass "$p: each applet's --help through its link in the unpacked tree ($who)"
	else
		fail "$p: applet --help in the unpacked tree ($who):$bad"
	fi
	if as_nobody $wrap "$root/usr/bin/nfd-worker" --oneshot --no-publish --config "$root/$conf" \
		--host-prefix "$W/host/" --features-dir "$W/host/empty" >"$W/labels" 2>"$W/err" &&
		cmp -s "$W/labels" "$W/labels.want"; then
		pass "$p: the unpacked nfd-worker --oneshot --no-publish on the GPU-server fixture: $(wc -l <"$W/labels") labels, the host build's ($who)"
	else
		fail "$p: the unpacked nfd-worker --oneshot --no-publish ($who): $(diff "$W/labels.want" "$W/labels" | head -c 300) $(head -c 300 "$W/err")"
	fi
done

# 4. corrupted blobs are refused: a flipped byte in arm64's layer, in amd64's config
corrupt() { # OUT PLATFORM-ARCH WHAT(layer|config)
	py '
import json, shutil, sys, tarfile
src, out, arch, what = sys.argv[1:5]
tf = tarfile.open(src)
blob = lambda d: tf.getmember("blobs/sha256/" + d.split(":")[1])
read = lambda d: json.loads(tf.extractfile(blob(d)).read())
idx = json.loads(tf.extractfile("index.json").read())
index = read(idx["manifests"][0]["digest"])
man = [m for m in index["manifests"] if m["platform"]["architecture"] == arch][0]
m = read(man["digest"])
target = blob(m["layers"][0]["digest"] if what == "layer" else m["config"]["digest"])
shutil.copyfile(src, out)
with open(out, "r+b") as f:
    off = target.offset_data + target.size // 2
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x20]))
' "$A" "$1" "$2" "$3"
}
for c in arm64:layer amd64:config; do
	IFS=: read -r p what <<<"$c"
	if ! corrupt "$W/bad.tar" "$p" "$what" 2>"$W/err"; then
		fail "could not corrupt $p's $what: $(head -c 300 "$W/err")"
		continue
	fi
	rm -rf "$W/badlay"
	if skopeo copy -q --override-os linux --override-arch "$p" "oci-archive:$W/bad.tar:$ver" "oci:$W/badlay:x" >"$W/err" 2>&1; then
		fail "skopeo copies an archive whose $p $what blob has a flipped byte"
	elif grep -q -e 'Digest did not match' -e 'does not match expected' "$W/err"; then
		pass "skopeo refuses the archive with a flipped byte in $p's $what blob (digest mismatch)"
	else
		fail "skopeo refuses the corrupted $p $what but not for its digest: $(head -c 300 "$W/err")"
	fi
done

# 5. The import paths of the README, each with its own state under $W.
# The daemons (containerd, the registry) need root here; as another user this
# part is skipped, saying so (CI runs as root).
if [ "$(id -u)" != 0 ]; then
	skip "containerd import and run, podman load, push to a registry: they need root (CI runs as root)"
	done_testing
	exit
fi
ctrd= reg=
cleanup() {
	# a container left by a timed-out ctr run, then the daemons (bounded waits)
	if [ -n "$ctrd" ]; then
		for id in list worker; do
			timeout 30 "${ctr[@]}" tasks kill -s KILL "$id" >/dev/null 2>&1
			timeout 30 "${ctr[@]}" tasks delete "$id" >/dev/null 2>&1
			timeout 30 "${ctr[@]}" containers rm "$id" >/dev/null 2>&1
		done
		stop "$ctrd"
	fi
	[ -n "$reg" ] && stop "$reg"
	# mounts containerd or podman may have left under $W, innermost first
	awk -v w="$W/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

# containerd: `ctr -n k8s.io images import`, the way k3s and a kubelet's
# containerd take an air-gapped image, then containers run from it on this
# machine's platform (runc; its state and FIFOs under $W too)
c=$W/containerd
mkdir -p "$c"
printf '%s\n' 'version = 2' "root = \"$c/root\"" "state = \"$c/state\"" \
	'disabled_plugins = ["io.containerd.grpc.v1.cri"]' \
	'[grpc]' "  address = \"$c/sock\"" '[ttrpc]' "  address = \"$c/sock.ttrpc\"" \
	'[plugins."io.containerd.internal.v1.opt"]' "  path = \"$c/opt\"" >"$c/config.toml"
# the containers' cgroup parent: removed after, unless it was there before
cg=/sys/fs/cgroup/k8s.io
[ -e "$cg" ] && cg=
containerd --config "$c/config.toml" >"$c/log" 2>&1 &
ctrd=$!
ctr=(ctr --address "$c/sock" -n k8s.io)
ref=docker.io/library/featurebox:$ver
if ! wait_for 60 "${ctr[@]}" version; then
	fail "containerd did not answer on $c/sock within 60 s: $(tail -c 400 "$c/log")"
else
	if "${ctr[@]}" images import --all-platforms "$A" >"$W/out" 2>&1; then
		pass "ctr -n k8s.io images import --all-platforms: $(tr '\n' ' ' <"$W/out" | head -c 200)"
	else
		fail "ctr images import: $(head -c 400 "$W/out")"
	fi
	line=$("${ctr[@]}" images ls 2>&1 | grep "^$ref ")
	if [ "$(awk '{ print $3 }' <<<"$line")" = "$index" ] &&
		[ "$(awk '{ print $(NF-1) }' <<<"$line")" = "linux/amd64,linux/arm/v7,linux/arm64" ]; then
		pass "containerd lists $ref: the index digest, 3 platforms"
	else
		fail "containerd's image list: $line"
	fi
	# containers of the image: its applets, and the worker on the host
	# fixture mounted read-only, as the image's user
	run_ctr() { # ID ARGS...
		local id=$1
		shift
		timeout 120 "${ctr[@]}" run --rm --fifo-dir "$c/fifo" --runc-root "$c/runc" \
			--mount "type=bind,src=$W/host,dst=/host,options=rbind:ro" "$ref" "$id" "$@"
	}
	if out=$(run_ctr list /usr/bin/featurebox --list 2>&1) && [ "$out" = "$def_applets" ]; then
		pass "ctr run: the image's featurebox --list names the applets"
	else
		fail "ctr run featurebox --list: $(head -c 400 <<<"$out")"
	fi
	if run_ctr worker nfd-worker --oneshot --no-publish --host-prefix /host/ --features-dir /host/empty \
		>"$W/labels" 2>"$W/err" && cmp -s "$W/labels" "$W/labels.want"; then
		pass "ctr run: nfd-worker (found through PATH, the image's nfd-worker.conf) on the mounted fixture: the host build's $(wc -l <"$W/labels") labels"
	else
		fail "ctr run nfd-worker: $(diff "$W/labels.want" "$W/labels" | head -c 300) $(head -c 300 "$W/err")"
	fi
	"${ctr[@]}" containers create "$ref" user >/dev/null 2>&1
	t "ctr: a container of the image runs as 65534:65534 with the image's entrypoint and command" py '
import json, sys
s = json.loads(sys.argv[1])["Spec"]["process"]
assert (s["user"]["uid"], s["user"]["gid"]) == (65534, 65534), s["user"]
assert s["args"] == ["/usr/bin/featurebox", "--help"], s["args"]
' "$("${ctr[@]}" containers info user 2>&1)"
	"${ctr[@]}" containers rm user >/dev/null 2>&1
fi
stop "$ctrd"
ctrd=
[ -n "$cg" ] && rmdir "$cg" 2>/dev/null

# podman load (docker load reads the same archive): the host platform's image
pm=(podman --root "$W/podman/root" --runroot "$W/podman/run" --tmpdir "$W/podman/tmp" --storage-driver vfs
	--cgroup-manager cgroupfs --events-backend file)
hostp=$(py 'import json, sys
print([p["targetarch"] for p in json.load(open(sys.argv[1]))["platforms"] if p["arch"] == sys.argv[2]][0])' \
	"$W/image.json" "$host")
if "${pm[@]}" load -q -i "$A" >"$W/out" 2>&1 && grep -q "featurebox:$ver" "$W/out"; then
	pass "podman load -i: $(tr '\n' ' ' <"$W/out")"
	got=$("${pm[@]}" image inspect "featurebox:$ver" \
		--format '{{.Os}}/{{.Architecture}} {{.Config.User}} {{.Config.Entrypoint}}' 2>&1)
	if [ "$got" = "linux/$hostp 65534:65534 [/usr/bin/featurebox]" ]; then
		pass "podman: the loaded image is linux/$hostp, user 65534:65534, entrypoint /usr/bin/featurebox"
	else
		fail "podman image inspect: $got"
	fi
else
	fail "podman load: $(head -c 400 "$W/out")"
fi

# skopeo copy --all to a registry (Debian's docker-registry on loopback, at a
# port the kernel gave and then freed: retried if another took it meanwhile);
# the registry then serves the index digest make oci printed
r=$W/registry
mkdir -p "$r"
for try in 1 2 3; do
	port=$(py 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf '%s\n' 'version: 0.1' 'log:' '  level: error' 'storage:' '  filesystem:' \
		"    rootdirectory: $r/data" 'http:' "  addr: 127.0.0.1:$port" >"$r/config.yml"
	docker-registry serve "$r/config.yml" >"$r/log" 2>&1 &
	reg=$!
	wait_for 30 curl -sf -o /dev/null "http://127.0.0.1:$port/v2/" && break
	kill "$reg" 2>/dev/null
	wait "$reg" 2>/dev/null
	reg=
done
if [ -z "$reg" ]; then
	fail "docker-registry did not answer on loopback: $(tail -c 300 "$r/log")"
else
	dst=docker://127.0.0.1:$port/featurebox:$ver
	if skopeo copy -q --all --dest-tls-verify=false "oci-archive:$A:$ver" "$dst" >"$W/err" 2>&1; then
		pass "skopeo copy --all oci-archive:...:$ver to a registry"
	else
		fail "skopeo copy --all to the registry: $(head -c 400 "$W/err")"
	fi
	got=$(skopeo inspect --raw --tls-verify=false "$dst" 2>"$W/err" | sha256sum | cut -d' ' -f1)
	if [ "sha256:$got" = "$index" ]; then
		pass "the registry serves featurebox:$ver as the index make oci printed"
	else
		fail "the registry's featurebox:$ver is sha256:$got, not $index: $(head -c 300 "$W/err")"
	fi
fi

done_testing
