# klog's flags on nfd-worker and nfd-master (issue 18): upstream's daemons
# are Go programs that register klog/v2's flags, and their manifests and
# users pass them. Each is accepted; the ones featurebox can honour work as
# klog's do (-logtostderr=false with -log_file, -alsologtostderr,
# -stderrthreshold, -skip_headers, -add_dir_header, -vmodule).
. "$(dirname "$0")/../lib/testing.sh"
F=$FB_TOP/tests/fixtures

mkdir -p "$W/pi" "$W/fd"
cp -r "$F/nfd/rpi4/." "$W/pi/" && cp -r "$F/sysfs/rpi4/." "$W/pi/"
NW="$FB nfd-worker --config $W/none.conf --node-name node1 --host-prefix $W/pi/ --features-dir $W/fd --oneshot --no-publish"
# a kubeconfig that is not there: the master gets past its flags, then exits 1
NM="$FB nfd-master --config $W/none.conf --kubeconfig $W/no-such-kubeconfig"
HDR='^[IWE][0-9]{4} [0-9:.]{15} '

ALL="-logtostderr -alsologtostderr -add_dir_header=false -skip_headers=false -skip_log_headers -one_output"
ALL="$ALL -log_dir=$W -log_file=$W/unused.log -log_file_max_size=1800 -stderrthreshold=ERROR -vmodule=nfdconf=1"
# shellcheck disable=SC2086
testing "nfd-worker: every klog flag accepted (two dashes too)" \
	"$NW $ALL >/dev/null 2>$W/w.err; echo \$?; $NW --logtostderr --v=0 --vmodule= >/dev/null 2>&1; echo \$?" "0\n0\n"
testing "nfd-worker: ... and with -logtostderr (the default) nothing goes to -log_file" "ls $W/unused.log 2>&1 | grep -c 'No such'" "1\n"
# shellcheck disable=SC2086
testing "nfd-master: every klog flag accepted (exit 1 is the missing kubeconfig, not a usage error)" \
	"$NM $ALL >/dev/null 2>$W/m.err; echo \$?; grep -c 'unknown option' $W/m.err" "1\n0\n"
testing "nfd-worker --help lists klog's flags" "$FB nfd-worker --help | grep -c -E '^  --(logtostderr|log_file|vmodule|stderrthreshold) '" "4\n"

# -logtostderr=false -log_file: the lines go to the file, ERROR and above
# (klog's default -stderrthreshold) to stderr as well
$NW -logtostderr=false -log_file="$W/w.log" >/dev/null 2>"$W/w2.err"
testing "-log_file: the log is in the file, headers and all" \
	"grep -c 'config file $W/none.conf not found' $W/w.log; grep -c -v -E '$HDR' $W/w.log" "1\n0\n"
testing "-log_file: stderr has only the ERROR lines (-stderrthreshold ERROR)" \
	"grep -c -v '^E' $W/w2.err; [ \$(grep -c '^E' $W/w.log) = \$(grep -c '^E' $W/w2.err) ] && echo same" "0\nsame\n"
$NW -logtostderr=false -log_file="$W/w.log" -alsologtostderr >/dev/null 2>"$W/w3.err"
testing "-alsologtostderr: every line on stderr too" "grep -c 'not found, using defaults' $W/w3.err" "1\n"
$NW -logtostderr=false -log_file="$W/w.log" -stderrthreshold=INFO >/dev/null 2>"$W/w4.err"
testing "-stderrthreshold=INFO: every line on stderr too" "grep -c 'not found, using defaults' $W/w4.err" "1\n"
testing "-log_file appends" "grep -c 'not found, using defaults' $W/w.log" "3\n"
testing "-log_file in a missing directory: exit 1, naming it" \
	"$NW -logtostderr=false -log_file=$W/no/such/dir/x.log >/dev/null 2>$W/w5.err; echo \$?; grep -c 'log_file $W/no/such/dir/x.log' $W/w5.err" "1\n1\n"
testing "-stderrthreshold of no known severity: exit 2, naming it" \
	"$NW -stderrthreshold=LOUD >/dev/null 2>$W/w6.err; echo \$?; grep -c \"stderrthreshold: 'LOUD'\" $W/w6.err" "2\n1\n"
testing "-logtostderr=false without -log_file: a warning, and the log stays on stderr" \
	"$NW -logtostderr=false -log_dir=$W >/dev/null 2>$W/w7.err; echo \$?; grep -c 'without -log_file.*-log_dir is not used' $W/w7.err; grep -c 'not found, using defaults' $W/w7.err" "0\n1\n1\n"

# headers
testing "-skip_headers: lines without klog's header" \
	"$NW -skip_headers >/dev/null 2>$W/h.err; grep -c -E '$HDR' $W/h.err; grep -c '^config file .* not found, using defaults' $W/h.err" "0\n1\n"
testing "-add_dir_header: the source file's directory in the header" \
	"$NW -add_dir_header >/dev/null 2>$W/d.err; grep -c -E '$HDR'core/nfdconf.c: $W/d.err" "1\n"

# -vmodule: verbosity per file; featurebox's file names (nfdsrc_kernel.c)
$NW -v=0 >/dev/null 2>"$W/v0.err"
$NW -v=0 -vmodule='nfdsrc_k*=5' >/dev/null 2>"$W/v5.err"
testing "-vmodule: a pattern raises one file's verbosity" \
	"[ \$(grep -c nfdsrc_kernel.c $W/v5.err) -gt \$(grep -c nfdsrc_kernel.c $W/v0.err) ] && echo more; [ \$(grep -v -c nfdsrc_kernel.c $W/v5.err) = \$(grep -v -c nfdsrc_kernel.c $W/v0.err) ] && echo same" "more\nsame\n"

# The config file's core.klog (worker) and klog (master): each klog flag by
# its camelCase name, where the command line did not give it (upstream's
# MergeKlogConfiguration). Lines logged while the file is read follow the
# command line; what comes after, the merged settings.
CW="$FB nfd-worker --node-name node1 --host-prefix $W/pi/ --features-dir $W/fd --oneshot --no-publish"
printf 'core:\n  klog:\n    skipHeaders: true\n    addDirHeader: "false"\n' >"$W/k1.conf"
testing "core.klog.skipHeaders: true: lines after the file without a header" \
	"$CW --config $W/k1.conf >/dev/null 2>$W/k1.err; grep -c -E '$HDR' $W/k1.err; grep -c -v -E '$HDR' $W/k1.err | grep -qv '^0' && echo headerless" "0\nheaderless\n"
testing "... -skip_headers=false on the command line wins" \
	"$CW --config $W/k1.conf -skip_headers=false >/dev/null 2>$W/k2.err; grep -c -v -E '$HDR' $W/k2.err" "0\n"
printf 'core:\n  klog:\n    logtostderr: false\n    logFile: %s\n    stderrthreshold: ERROR\n' "$W/k3.log" >"$W/k3.conf"
testing "core.klog.logtostderr false + logFile: the lines after the file go to it" \
	"$CW --config $W/k3.conf -v=2 >/dev/null 2>$W/k3.err; [ -s $W/k3.log ] && echo written; grep -c -v '^E' $W/k3.err" "written\n0\n"
printf 'core:\n  klog:\n    logFileMaxSize: lots\n' >"$W/k4.conf"
testing "core.klog.logFileMaxSize that is no number: exit 2, naming the key" \
	"$CW --config $W/k4.conf >/dev/null 2>$W/k4.err; echo \$?; grep -c \"core.klog.logFileMaxSize: 'lots' is not an integer\" $W/k4.err" "2\n1\n"
printf 'klog:\n  skipHeaders: true\n' >"$W/m1.conf"
testing "nfd-master klog.skipHeaders: true (then the missing kubeconfig, without a header)" \
	"$FB nfd-master --config $W/m1.conf --kubeconfig $W/no-such-kubeconfig >/dev/null 2>$W/m1.err; echo \$?; grep -c -E '$HDR' $W/m1.err" "1\n0\n"
printf 'klog:\n  stderrthreshold: LOUD\n' >"$W/m2.conf"
testing "nfd-master klog.stderrthreshold of no severity: exit 2, naming it" \
	"$FB nfd-master --config $W/m2.conf --kubeconfig $W/no-such-kubeconfig >/dev/null 2>$W/m2.err; echo \$?; grep -c \"stderrthreshold: 'LOUD'\" $W/m2.err" "2\n1\n"
done_testing
