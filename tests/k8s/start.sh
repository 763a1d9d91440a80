# tests/k8s/start.sh: start and stop the test API server from a shell test (source it).
#
#   . "$FB_TOP/tests/k8s/start.sh"
#   k8s_start "$W/k8s" [--cert ecdsa] [--history N] [--bookmark-interval S] ...
#   trap k8s_stop EXIT
#   KUBECONFIG=$K8S_DIR/kubeconfig-admin featurebox ...
#   k8s_ctl count patch '^/api/v1/nodes/node1$'
#
# k8s_start DIR [SERVER ARGS]: starts tests/k8s/server.py --dir DIR in the background
# (stderr and stdout in DIR/server.log), waits up to 120 s (a bound on a hang, not a speed test) for DIR/ready and exports
# K8S_DIR, K8S_PORT, K8S_PID, K8S_URL and K8S_CTL ("tests/k8s/ctl DIR"). Returns 1 with
# the log tail on stderr if the server does not come up. Call it directly, not inside
# $(...) or a pipeline: K8S_PID must be a child of the test shell.
# k8s_stop: SIGTERM, then waits for the server (SIGKILL after 5 s); safe to call twice.
# k8s_ctl ARGS: tests/k8s/ctl "$K8S_DIR" ARGS.

if [ -n "${BASH_SOURCE:-}" ]; then
	K8S_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
else
	K8S_SRC=${FB_TOP:?set FB_TOP to the source tree}/tests/k8s
fi

k8s_start() {
	local dir=${1:?usage: k8s_start DIR [server args]} i
	shift
	mkdir -p "$dir" || return 1
	dir=$(cd "$dir" && pwd)
	rm -f "$dir/ready"
	python3 "$K8S_SRC/server.py" --dir "$dir" "$@" >>"$dir/server.log" 2>&1 &
	K8S_PID=$!
	local until=$((SECONDS + 120))
	while [ ! -e "$dir/ready" ]; do
		if ! kill -0 "$K8S_PID" 2>/dev/null; then
			echo "k8s_start: the test API server exited:" >&2
			tail -n 20 "$dir/server.log" >&2
			wait "$K8S_PID" 2>/dev/null
			unset K8S_PID
			return 1
		fi
		if [ $SECONDS -gt $until ]; then
			echo "k8s_start: the test API server was not ready after 120 s:" >&2
			tail -n 20 "$dir/server.log" >&2
			k8s_stop
			return 1
		fi
		sleep 0.05
	done
	K8S_DIR=$dir
	K8S_PORT=$(cat "$dir/port")
	K8S_URL=$(cat "$dir/url")
	K8S_CTL="$K8S_SRC/ctl $dir"
	export K8S_DIR K8S_PORT K8S_PID K8S_URL K8S_CTL
}

k8s_stop() {
	local i=0 st
	[ -n "${K8S_PID:-}" ] || return 0
	if kill -TERM "$K8S_PID" 2>/dev/null; then
		# until it is gone or a zombie (kill -0 succeeds on zombies)
		while [ $i -lt 100 ]; do
			# bash reaps its children itself: /proc/PID may be gone, and a
			# failed redirection would end a `set -e` caller (bench-master)
			st=
			{ read -r _ _ st _ <"/proc/$K8S_PID/stat"; } 2>/dev/null || break
			[ -z "$st" ] || [ "$st" = Z ] && break
			sleep 0.05
			i=$((i + 1))
		done
		[ $i -lt 100 ] || kill -KILL "$K8S_PID" 2>/dev/null
	fi
	wait "$K8S_PID" 2>/dev/null
	unset K8S_PID
	return 0
}

k8s_ctl() {
	"$K8S_SRC/ctl" "${K8S_DIR:?k8s_start first}" "$@"
}

# k8s_seq: the request log's last sequence number (0 when it is empty: every
# entry left is newer than a clear-log); pass it to count/log --since.
k8s_seq() {
	k8s_ctl log --json | python3 -c 'import json,sys; l=json.load(sys.stdin); print(l[-1]["seq"] if l else 0)'
}

# k8s_waited SINCE PATH_REGEX WAITER [AFTER]: how many GETs WAITER (a user)
# made of the object before its first write (PUT or POST) after SINCE; with
# AFTER (another user), counted from AFTER's last PUT instead. A candidate
# that waits N retry periods makes N GETs: a count of its own retries, which
# a slow machine can only make smaller, where a wall-clock bound grows.
# Prints "none" when WAITER has not written.
k8s_waited() {
	k8s_ctl log --json --since "$1" | python3 -c '
import json, re, sys
rx, waiter, after = re.compile(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None
log = [e for e in json.load(sys.stdin) if rx.search(e["path"])]
start = max([i for i, e in enumerate(log) if after and e.get("user") == after and e["method"] == "PUT"],
            default=-1)
gets = 0
for e in log[start + 1:]:
    if e.get("user") != waiter:
        continue
    if e["method"] in ("PUT", "POST"):
        print(gets)
        break
    gets += e["method"] == "GET"
else:
    print("none")' "$2" "$3" "${@:4}"
}
