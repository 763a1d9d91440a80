# Conformance, the policy-dependent part: upstream nfd-master's own test
# cases (pkg/nfd-master/nfd-master-internal_test.go) and end-to-end rule and
# NodeFeature files with their expectations (test/e2e/data,
# node_feature_discovery_test.go), transcribed as data in
# tests/applets/data/nfd-master-conformance/ (format and counts in its
# README), run through featurebox's nfd-master (and, where upstream runs a
# worker, featurebox's nfd-worker with the fake source) on the test API
# server. Each case starts from an empty cluster with its own nfd-master;
# each expectation waits until the node's state is exactly the expected one
# and nfd-master's record label says it processed the node. Where featurebox
# deliberately differs, the data holds upstream's expectation and
# featurebox's, with the reason: such a case passes only on featurebox's
# state and fails once it agrees with upstream. The counts per upstream test
# function go to stderr ("# " lines: tests/run keeps them as notes).
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
trap 'k8s_stop; rm -rf "$W"' EXIT
k8s_start "$W/k8s" --bookmark-interval 0.5 || { fail "test API server starts"; exit 1; }
D=$FB_TOP/tests/applets/data/nfd-master-conformance
python3 "$FB_TOP/tests/applets/nfd-master-conformance.py" "$SUITE" "$FB" "$W" \
	${FB_CONFORMANCE_CASES:-"$D/internal.cases" "$D/api-controller.cases" "$D/validate.cases" "$D/e2e.cases"}
