# Where the daemons listen: every interface by default (as upstream), one
# address when asked: nfd-worker and nfd-master --bind-address IP (ours: NFD
# has only -port), gpu-node-agent --health-probe-bind-address HOST:PORT and
# $HEALTH_PROBE_BIND_ADDRESS (the prototype's controller-runtime flag). A bad
# address is an error naming it, exit 1.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
F=$FB_TOP/tests/fixtures
pids=
trap 'k8s_stop; for p in $pids; do kill -9 $p 2>/dev/null; done; rm -rf "$W"' EXIT

k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
S=$K8S_DIR
mkdir -p "$W/root" "$W/fd" "$W/gpu"
cp -r "$F/nfd/rpi4/." "$W/root/" && cp -r "$F/sysfs/rpi4/." "$W/root/"
cp -r "$F/sysfs/gpu4/." "$W/gpu/" && chmod -R u+w "$W/gpu"
NW="$FB nfd-worker --kubeconfig $S/kubeconfig-node1 --node-name node1 --config $W/none.conf --host-prefix $W/root/ --features-dir $W/fd"
NM="$FB nfd-master --kubeconfig $S/kubeconfig-admin --config $W/none.conf"
GA="$FB gpu-node-agent --kubeconfig $S/kubeconfig-node1 --node-name node1 --host-prefix $W/gpu/ --vendors-file $W/vendors.yaml"
printf 'nvidia: "10de"\n' >"$W/vendors.yaml"
v6=0
python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null && v6=1

# start NAME CMD...: runs a daemon, logging to $W/NAME.log
start() {
	local name=$1
	shift
	"$@" >"$W/$name.log" 2>&1 &
	pids="$pids $!"
	eval "pid_$name=$!"
}
stop() { local p; eval "p=\$pid_$1"; kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; }
port_of() { sed -n 's/.*serving .* on port \([0-9]*\).*/\1/p' "$W/$1.log" | head -1; }
# the addresses of the listening TCP sockets on PORT, from /proc/net/tcp{,6}
listening() {
	python3 - "$1" <<'PY'
import socket, sys
port = int(sys.argv[1])
out = []
for f, fam in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
    try:
        lines = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for l in lines:
        local, state = l.split()[1], l.split()[3]
        a, p = local.split(":")
        if state != "0A" or int(p, 16) != port:
            continue
        raw = bytes.fromhex(a)
        # the kernel prints each 32-bit word in host (little-endian) order
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
        out.append(socket.inet_ntop(fam, raw))
print(" ".join(sorted(out)) or "-")
PY
}
healthz() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$1/healthz"; }
served() { [ -n "$(port_of "$1")" ]; }

# 1. nfd-worker
start w1 $NW --port 0 --bind-address 127.0.0.1
check "nfd-worker --bind-address 127.0.0.1: serving" wait_for 20 served w1
p=$(port_of w1)
testing "nfd-worker --bind-address 127.0.0.1: the one listening socket is 127.0.0.1" "listening $p" "127.0.0.1\n"
testing "nfd-worker --bind-address 127.0.0.1: /healthz answers there" "healthz 127.0.0.1:$p" "200"
stop w1
start w2 $NW --port 0
check "nfd-worker, default: serving" wait_for 20 served w2
testing "nfd-worker, default: every interface, as before" "listening $(port_of w2) | grep -cxE '::|0.0.0.0'" "1\n"
stop w2
if [ $v6 = 1 ]; then
	start w3 $NW -port=0 -bind-address=::1
	check "nfd-worker -bind-address=::1 (one dash, as upstream's flags): serving" wait_for 20 served w3
	testing "nfd-worker -bind-address=::1: listens on ::1 only" "listening $(port_of w3)" "::1\n"
	stop w3
else
	echo "SKIP: $SUITE: nfd-worker --bind-address ::1 (no IPv6 loopback)"
fi
testing "nfd-worker --bind-address HOST:PORT: exit 1 naming it" \
	"timeout -k 10 20 $NW --oneshot --bind-address 127.0.0.1:8080 2>&1; echo \$?" \
	"nfd-worker: --bind-address 127.0.0.1:8080: not an IP address\n1\n"
testing "nfd-worker --bind-address of a name: exit 1" \
	"timeout -k 10 20 $NW --oneshot --bind-address localhost 2>/dev/null; echo \$?" "1\n"

# 2. nfd-master
start m1 $NM --port 0 --bind-address 127.0.0.1
check "nfd-master --bind-address 127.0.0.1: serving" wait_for 20 served m1
p=$(port_of m1)
testing "nfd-master --bind-address 127.0.0.1: the one listening socket is 127.0.0.1" "listening $p" "127.0.0.1\n"
testing "nfd-master --bind-address 127.0.0.1: /healthz answers there" "healthz 127.0.0.1:$p" "200"
stop m1
if [ $v6 = 1 ]; then
	start m2 $NM --port 0 --bind-address '[::1]'
	check "nfd-master --bind-address [::1]: serving" wait_for 20 served m2
	testing "nfd-master --bind-address [::1]: listens on ::1 only" "listening $(port_of m2)" "::1\n"
	stop m2
fi
testing "nfd-master --bind-address 10.0.0.300: exit 1 naming it" \
	"timeout -k 10 20 $NM --bind-address 10.0.0.300 2>&1; echo \$?" "nfd-master: --bind-address 10.0.0.300: not an IP address\n1\n"

# 3. gpu-node-agent
start g1 $GA --health-probe-bind-address 127.0.0.1:0
check "gpu-node-agent --health-probe-bind-address 127.0.0.1:0: serving" wait_for 20 served g1
p=$(port_of g1)
testing "gpu-node-agent --health-probe-bind-address 127.0.0.1:0: the one listening socket is 127.0.0.1" \
	"listening $p" "127.0.0.1\n"
testing "gpu-node-agent: /healthz answers there" "healthz 127.0.0.1:$p" "200"
stop g1
if [ $v6 = 1 ]; then
	HEALTH_PROBE_BIND_ADDRESS='[::1]:0' start g2 $GA
	check "gpu-node-agent, \$HEALTH_PROBE_BIND_ADDRESS=[::1]:0: serving" wait_for 20 served g2
	testing "gpu-node-agent, \$HEALTH_PROBE_BIND_ADDRESS=[::1]:0: listens on ::1 only" "listening $(port_of g2)" "::1\n"
	stop g2
fi
start g3 $GA --port 0
check "gpu-node-agent --port 0, default address: serving" wait_for 20 served g3
testing "gpu-node-agent, default: every interface, as before" "listening $(port_of g3) | grep -cxE '::|0.0.0.0'" "1\n"
stop g3
testing "gpu-node-agent --health-probe-bind-address without a port: exit 1 naming it" \
	"timeout -k 10 20 $GA --health-probe-bind-address 127.0.0.1 2>&1 | grep -c '^gpu-node-agent: health probe bind address 127.0.0.1: listen address must be HOST:PORT'; timeout -k 10 20 $GA --health-probe-bind-address 127.0.0.1 2>/dev/null; echo \$?" "1\n1\n"
testing "gpu-node-agent \$HEALTH_PROBE_BIND_ADDRESS=300.0.0.1:80: exit 1" \
	"HEALTH_PROBE_BIND_ADDRESS=300.0.0.1:80 timeout -k 10 20 $GA 2>&1 | grep -c '300.0.0.1:80'; HEALTH_PROBE_BIND_ADDRESS=300.0.0.1:80 timeout -k 10 20 $GA 2>/dev/null; echo \$?" "1\n1\n"
testing "gpu-node-agent --port and --health-probe-bind-address together: exit 2" \
	"timeout -k 10 20 $GA --port 1 --health-probe-bind-address :2 2>/dev/null; echo \$?" "2\n"

done_testing
