# core/lease against the test API server: leader election on a
# coordination.k8s.io/v1 Lease, driven by tests/tools/leasetool (the
# sanitizer build), with candidates as separate processes. Timings are short:
# lease 2 s, renew deadline 1 s, retry period 0.3 s (plus up to 1.2x jitter
# for candidates). Waits are bounded generously; how soon something
# happened is asserted as a count of the candidate's own retries in the
# request log (a slow machine makes fewer, never more), and only lower
# bounds ("not before the lease expired") are wall-clock.
. "$FB_TOP/tests/lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
LT=${LEASETOOL:-$FB_TOP/build/check/tests/leasetool}
SUITE=k8s/lease
PIDS=
cleanup() {
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	k8s_stop
	rm -rf "$W"
}
trap cleanup EXIT

k8s_start "$W/k8s" || { fail "test API server starts"; exit 1; }
D=$K8S_DIR
LP=/apis/coordination.k8s.io/v1/namespaces/kube-system/leases
TIMES="--duration-ms 2000 --renew-ms 1000 --retry-ms 300"

# cand NAME ID KUBECONFIG LEASE [ARGS]: a candidate in the background,
# stdout in $W/NAME.out, stderr in $W/NAME.err, its pid in $pid_NAME.
cand() {
	local n=$1 id=$2 kc=$3 lease=$4
	shift 4
	# shellcheck disable=SC2086
	"$LT" --kubeconfig "$kc" --id "$id" --name "$lease" $TIMES "$@" >"$W/$n.out" 2>"$W/$n.err" &
	eval "pid_$n=$!"
	PIDS="$PIDS $!"
}
# spec LEASE FIELD...: fields of the Lease's spec as stored, one a line
# (through the control API: not in the request log, never faulted).
spec() {
	local l=$1
	shift
	curl -sf --cacert "$D/ca.crt" -H "Authorization: Bearer $(cat "$D/admin.token")" \
		"$K8S_URL/__test/objects$LP/$l" | python3 -c '
import json, sys
s = json.load(sys.stdin)["spec"]
for f in sys.argv[1:]:
    print(s.get(f, ""))' "$@"
}
# took_ms REGEX MS FILE...: prints how many ms it took for a line matching
# REGEX to show up in one of the FILEs, or "timeout" after MS.
took_ms() {
	local re=$1 ms=$2 t0 now
	shift 2
	t0=$(date +%s%3N)
	while :; do
		now=$(date +%s%3N)
		if grep -qE "$re" "$@" 2>/dev/null; then
			echo $((now - t0))
			return 0
		fi
		[ $((now - t0)) -lt "$ms" ] || { echo timeout; return 1; }
		sleep 0.02
	done
}
# between LO HI VALUE: "ok" when LO <= VALUE <= HI, else the value.
between() {
	case $3 in *[!0-9]* | '') echo "$3"; return ;; esac
	if [ "$3" -ge "$1" ] && [ "$3" -le "$2" ]; then echo ok; else echo "$3 ms"; fi
}

# Users with only the verbs nfd-master's RBAC grants on leases: the two
# candidates of 2-3 and 7 (each one's requests told apart in the log).
for u in cand-a cand-b; do
	k8s_ctl rotate-token $u >/dev/null
	echo '[{"verbs":["get","create","update"],"resources":["leases"],"namespaces":["kube-system"]}]' |
		k8s_ctl set-rules $u - >/dev/null
	sed "s|tokens/node1|tokens/$u|; s|system:node:node1|$u|" "$D/kubeconfig-node1" >"$W/kc-$u"
done

# 1. One candidate: creates the Lease, holds it, renews it.
cand a A "$D/kubeconfig-admin" single
took_ms '^leading 1 ' 30000 "$W/a.out" >/dev/null
testing "one candidate: leads at once (one GET finds no Lease, one create; no retry)" \
	"k8s_ctl count GET '^$LP/single\$'; k8s_ctl count POST '^$LP\$'; grep -c '^leading' $W/a.out" "1\n1\n1\n"
testing "one candidate: the Lease names it, with the client-go fields" \
	"spec single holderIdentity leaseDurationSeconds leaseTransitions" "A\n2\n0\n"
{ read -r rt1; read -r at1; } < <(spec single renewTime acquireTime)
testing "one candidate: renewTime and acquireTime are MicroTime (RFC 3339, microseconds, UTC)" \
	"echo '$rt1 $at1' | grep -cE '^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z ?){2}\$'" "1\n"
# a renewal since (the request log)
n=$(k8s_ctl count PUT "^$LP/single\$" --status 200)
wait_for 10 sh -c "[ \"\$($K8S_CTL count PUT '^$LP/single\$' --status 200)\" -gt $n ]" || fail "one candidate renews"
testing "one candidate: renewTime advances, acquireTime stays" \
	"spec single renewTime acquireTime | { read -r rt2; read -r at2; [ \"\$rt2\" \\> '$rt1' ] && [ \"\$at2\" = '$at1' ] && echo ok; }" "ok\n"
testing "one candidate: renewals are PUTs (no GET while it holds the lease)" \
	"k8s_ctl count GET '^$LP/single\$' --status 200" "0\n"
kill -TERM "$pid_a"
wait "$pid_a"
rc=$?
testing "one candidate: SIGTERM ends it cleanly" "echo $rc; tail -n 1 $W/a.out | cut -d' ' -f1" "0\nexit\n"
testing "one candidate: released on exit (holderIdentity \"\", 1 s)" \
	"spec single holderIdentity leaseDurationSeconds; grep -c 'lease kube-system/single: released' $W/a.err" "\n1\n1\n"
testing "one candidate: logged becoming leader once" "grep -c 'became leader as A' $W/a.err" "1\n"

# 2. Two candidates at once: both may find no Lease and create it; one wins.
k8s_ctl clear-log
cand a A "$W/kc-cand-a" pair
cand b B "$W/kc-cand-b" pair
took_ms '^leading' 30000 "$W/a.out" "$W/b.out" >/dev/null
# the other one has seen who leads
wait_for 10 grep -q 'new leader is' "$W/a.err" "$W/b.err" || fail "two candidates: the other sees the leader"
testing "two candidates: exactly one leads" "cat $W/a.out $W/b.out | grep -c '^leading'" "1\n"
if grep -q '^leading 1' "$W/a.out"; then L=a LID=A F=b FID=B; else L=b LID=B F=a FID=A; fi
testing "two candidates: the Lease names the leader" "spec pair holderIdentity" "$LID\n"
testing "two candidates: the other one logged who leads" "grep -c 'new leader is $LID' $W/$F.err" "1\n"
testing "two candidates: one create succeeded" "k8s_ctl count POST '^$LP\$' --status 201" "1\n"

# 3. SIGTERM the leader: it releases, the other takes over without waiting.
eval "lpid=\$pid_$L"
seq=$(k8s_seq)
kill -TERM "$lpid"
took_ms '^leading 1' 30000 "$W/$F.out" >/dev/null
wait "$lpid"
rc=$?
testing "SIGTERM: the leader exits 0 and released the lease" "echo $rc; grep -c 'released' $W/$L.err" "0\n1\n"
# waiting out the released lease (1 s) would be 3 or more retries of 300 ms
n=$(k8s_waited $seq "^$LP/pair\$" cand-$F cand-$L)
echo "# SIGTERM: $n GETs" >&2
testing "SIGTERM: the other candidate takes it on its next retry (not after a lease duration)" "between 0 2 '$n'" "ok\n"
testing "SIGTERM: the Lease names it, one transition" "spec pair holderIdentity leaseTransitions" "$FID\n1\n"

# 4. A foreign holder that keeps renewing is never taken, however old its
#    renewTime looks by our wall clock; once it stops, the lease is taken
#    after it expires. (Runs alongside 5, on a lease of its own.)
put_foreign() {
	printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"foreign","namespace":"kube-system"},"spec":{"holderIdentity":"foreign","leaseDurationSeconds":6,"acquireTime":"2000-01-01T00:00:00.000000Z","renewTime":"2000-01-01T00:00:00.%06dZ","leaseTransitions":5}}' "$1" |
		k8s_ctl put "$LP/foreign" - >/dev/null
}
put_foreign 0
cand f F "$D/kubeconfig-admin" foreign
(
	i=1
	end=$(($(date +%s%3N) + 3000))
	while [ "$(date +%s%3N)" -lt $end ]; do
		put_foreign $i
		i=$((i + 1))
		sleep 0.2 # (the foreign holder's renewal pace is the test)
	done
	# what F has said and the Lease as the renewals stop (section 5 runs
	# meanwhile, for as long as the machine makes it take)
	date +%s%3N >"$W/foreign.stopped"
	cp "$W/f.out" "$W/f.at-stop"
	spec foreign holderIdentity >"$W/foreign.holder"
	k8s_seq >"$W/foreign.seq"
) &
renewer=$!
PIDS="$PIDS $renewer"

# 5. SIGKILL the leader: no release; the next one waits for the lease to
#    expire by its own clock (2 s without a change), then takes over.
cand c C "$D/kubeconfig-admin" pair
wait_for 10 grep -q 'new leader is' "$W/c.err" || fail "the third candidate sees the leader"
eval "fpid=\$pid_$F"
seq=$(k8s_seq)
kill -KILL "$fpid"
wait "$fpid" 2>/dev/null
took=$(took_ms '^leading 1' 30000 "$W/c.out")
testing "SIGKILL: the waiting candidate leads only after the lease expired (>= 1.3 s)" "between 1300 30000 '$took'" "ok\n"
# a 2 s lease is at most 7 retry periods of 300 ms, plus the GET that saw the
# last renewal and the one that finds it expired
n=$(k8s_waited $seq "^$LP/pair\$" admin)
echo "# SIGKILL: $n GETs" >&2
testing "SIGKILL: ... and on the first retries past the expiry (at most 10 GETs)" "between 0 10 '$n'" "ok\n"
testing "SIGKILL: the Lease names it, two transitions" "spec pair holderIdentity leaseTransitions" "C\n2\n"
testing "SIGKILL: it logged each new leader once" "grep -c 'new leader is $FID' $W/c.err; grep -c 'new leader' $W/c.err" "1\n1\n"
kill -TERM "$pid_c"
wait "$pid_c"

wait "$renewer"
testing "foreign holder renewing: never taken (3 s)" "cat $W/f.at-stop $W/foreign.holder" "foreign\n"
testing "foreign holder renewing: logged once" "grep -c 'new leader is foreign' $W/f.err" "1\n"
took_ms '^leading 1' 30000 "$W/f.out" >/dev/null
took=$(($(date +%s%3N) - $(cat "$W/foreign.stopped")))
testing "foreign holder gone: taken only after its 6 s expired (>= 5.5 s)" "between 5500 60000 '$took'" "ok\n"
# 6 s is at most 20 retry periods of 300 ms, plus the GET that saw the last
# renewal and the one that finds it expired
n=$(k8s_waited $(cat "$W/foreign.seq") "^$LP/foreign\$" admin)
echo "# foreign holder gone: $n GETs" >&2
testing "foreign holder gone: ... on the first retries past the expiry (at most 22 GETs)" "between 0 22 '$n'" "ok\n"
testing "foreign holder gone: a new term (transitions 6)" "spec foreign holderIdentity leaseTransitions" "F\n6\n"
kill -TERM "$pid_f"
wait "$pid_f"

# 6. lease_leading() goes by the clock: a loop blocked past the renew
#    deadline sees 0 before any timer could run; then the callback reports
#    it. (Runs alongside 7, on a lease of its own.)
cand s S "$D/kubeconfig-admin" blocked --block-ms 1300

# 7. The API fails for the leader only: it stops leading at its renew
#    deadline, and a candidate of another user takes over once the lease
#    expires.
cand a A "$W/kc-cand-a" faulty
took_ms '^leading 1' 30000 "$W/a.out" >/dev/null
cand b B "$W/kc-cand-b" faulty
wait_for 10 grep -q 'new leader is A' "$W/b.err" || fail "API failing: B sees A lead"
k8s_ctl fault --user cand-a --path "^$LP/faulty\$" --status 503 --count -1 >/dev/null
tf=$(date +%s%3N)
seq=$(k8s_seq)
took_ms '^leading 0' 30000 "$W/a.out" >/dev/null
lost=$(($(date +%s%3N) - tf))
took_ms '^leading 1' 30000 "$W/b.out" >/dev/null
took=$(($(date +%s%3N) - tf))
testing "API failing: the leader stops leading only at its renew deadline (>= 0.5 s)" "between 500 30000 '$lost'" "ok\n"
testing "API failing: it logged losing leadership" "grep -c 'lost leadership: not renewed for 1000 ms' $W/a.err" "1\n"
# the safety of it: A's renew deadline (1 s) ends before B may see the 2 s
# lease expire, so A stopped before B began (the lines' monotonic times)
testing "API failing: ... before the other candidate leads" \
	"a0=\$(grep '^leading 0 ' $W/a.out | head -n 1 | cut -d' ' -f3); b1=\$(grep '^leading 1 ' $W/b.out | head -n 1 | cut -d' ' -f3); [ -n \"\$a0\" ] && [ -n \"\$b1\" ] && [ \"\$a0\" -lt \"\$b1\" ] && echo ok || echo \"A stopped at \$a0, B led at \$b1\"" "ok\n"
testing "API failing: the other user's candidate takes over only after the expiry (>= 1.3 s)" "between 1300 30000 '$took'" "ok\n"
n=$(k8s_waited $seq "^$LP/faulty\$" cand-b)
echo "# API failing: $n GETs" >&2
testing "API failing: ... on the first retries past it (at most 10 GETs)" "between 0 10 '$n'" "ok\n"
k8s_ctl clear-faults >/dev/null
wait_for 10 grep -q 'new leader is B' "$W/a.err" || fail "API failing: A sees B lead"
testing "API failing: after recovery the old leader stays a candidate" \
	"tail -n 1 $W/a.out | cut -d' ' -f1-2; spec faulty holderIdentity; grep -c 'new leader is B' $W/a.err" "leading 0\nB\n1\n"
kill -TERM "$pid_a" "$pid_b"
wait "$pid_a" "$pid_b"
testing "API failing: the candidates used only get, create, update" \
	"k8s_ctl log | grep -E ' cand-[ab] ' | grep -c -v -E ' (GET|POST|PUT) '" "0\n"

testing "blocked loop: lease_leading() is 0 once the deadline has passed" \
	"head -n 2 $W/s.out | sed 's/ [0-9]*\$//'" "leading 1\nblocked leading 0\n"
testing "blocked loop: then the callback says so, and it leads again" \
	"sed -n '3,4p' $W/s.out | cut -d' ' -f1-2" "leading 0\nleading 1\n"
kill -TERM "$pid_s"
wait "$pid_s"

# 8. Timings client-go would refuse are refused, before any request.
k8s_ctl clear-log
for t in "--duration-ms 1000 --renew-ms 1000 --retry-ms 300" "--duration-ms 2000 --renew-ms 1000 --retry-ms 900" \
	 "--duration-ms 2000 --renew-ms 1000 --retry-ms 0"; do
	# shellcheck disable=SC2086
	testing "refused: $t" "$LT --kubeconfig $D/kubeconfig-admin --id A $t 2>&1 >/dev/null | grep -c 'duration > renew deadline > 1.2 x retry period'; $LT --kubeconfig $D/kubeconfig-admin --id A $t 2>/dev/null; echo \$?" "1\n1\n"
done
testing "refused: no request was made" "k8s_ctl count '*' '^/apis'" "0\n"

check "no sanitizer report from any candidate" true
done_testing
