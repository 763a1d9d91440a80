# pgpu-crd: deploy/base/crds/physicalgpu-crd.yaml is a superset of the
# Deckhouse gpu module's PhysicalGPU CRD, as transcribed from its public
# sources in tests/applets/data/physicalgpu-released/fields.txt: every field
# with its type and every enum value, the names and printer columns; objects
# carrying every transcribed field survive the test API server (started with
# --schema: it prunes and validates as the apiserver does) whole, while junk
# is pruned; and gpu-node-agent's statuses on the test trees are kept whole
# and valid. The checks are in pgpu-crd.py; "selftest" shows they can fail.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
trap 'k8s_stop; rm -rf "$W"' EXIT
CRD=$FB_TOP/deploy/base/crds/physicalgpu-crd.yaml
FIELDS=$FB_TOP/tests/applets/data/physicalgpu-released/fields.txt
PY="python3 $FB_TOP/tests/applets/pgpu-crd.py"

t "the checks fail on broken copies of the CRD" $PY selftest "$CRD" "$FIELDS"
t "group, kind, scope, version, short name, categories, status subresource" $PY names "$CRD" "$FIELDS"
t "every field of the released reference, same type and enum" $PY fields "$CRD" "$FIELDS" R
t "every field of the prototype, same type and format, every enum value" $PY fields "$CRD" "$FIELDS" P
t "partitionSupport keeps its (unpublished) fields; junk is pruned everywhere else" $PY unknown "$CRD" "$FIELDS"
t "no field required that theirs may leave out" $PY required "$CRD" "$FIELDS"
t "their printer columns" $PY columns "$CRD" "$FIELDS"

# The round trip: the server serves the CRDs of this tree (FB_CRD_DIR unset).
if k8s_start "$W/k8s" --schema; then
	t "objects with every transcribed field round-trip the API server unpruned (junk pruned)" \
		$PY roundtrip "$CRD" "$FIELDS" "$K8S_DIR"
	k8s_stop
else
	fail "test API server starts"
fi

# gpu-node-agent's statuses on every test tree: kept whole and valid.
statuses=
for tree in "$FB_TOP"/tests/fixtures/sysfs/*/; do
	[ -d "$tree/sys/bus/pci" ] || continue
	n=$(basename "$tree")
	rm -rf "$W/root"
	mkdir -p "$W/root"
	cp -r "$tree/." "$W/root/"
	chmod -R u+w "$W/root"
	if $FB gpu-node-agent --oneshot --no-publish --node-name node1 --host-prefix "$W/root/" \
		>"$W/$n.json" 2>"$W/$n.err"; then
		statuses="$statuses $W/$n.json"
	else
		fail "gpu-node-agent --oneshot --no-publish on $n ($(head -c 300 "$W/$n.err"))"
	fi
done
# shellcheck disable=SC2086
t "gpu-node-agent's statuses on the test trees are kept whole and valid" \
	$PY statuses "$CRD" "$FIELDS" ${statuses:-}
done_testing
