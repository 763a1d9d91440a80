# kubectl-nfd (issue 19): upstream's kubectl plugin (validate, test, dryrun:
# flags, messages, exit status 1 on an error) for NodeFeatureRule and
# NodeFeatureGroup files, evaluated by core/rules and judged by nfd-master's
# policy, and our --explain. test runs against the test API server.
. "$(dirname "$0")/../lib/testing.sh"
. "$FB_TOP/tests/k8s/start.sh"
. "$FB_TOP/tests/applets/nfd-master.lib"
F=$FB_TOP/tests/fixtures/kubectl-nfd
K="$FB kubectl-nfd"

# ---- the command line ---------------------------------------------------------
testing "no command: the help, exit 0" "$K | grep -c '^  \\(dryrun\\|test\\|validate\\) '; echo \$?" "3\n0\n"
testing "unknown command: cobra's message, exit 1" "$K frobnicate 2>&1; echo \$?" \
	"Error: unknown command \"frobnicate\" for \"kubectl-nfd\"\nRun 'kubectl-nfd --help' for usage.\nunknown command \"frobnicate\" for \"kubectl-nfd\"\n1\n"
testing "validate without -f: required flag, exit 1" "$K validate 2>/dev/null; echo \$?" \
	"required flag(s) \"nodefeaturerule-file\" not set\n1\n"
testing "dryrun without flags: both named, sorted, on stderr too" "$K dryrun 2>&1 >/dev/null | head -1; $K dryrun >/dev/null 2>&1; echo \$?" \
	"Error: required flag(s) \"nodefeature-file\", \"nodefeaturerule-file\" not set\n1\n"
testing "test without -n" "$K test -f $F/example-rule.yaml 2>/dev/null; echo \$?" \
	"required flag(s) \"nodename\" not set\n1\n"
testing "an unknown flag: exit 1" "$K dryrun --bogus >/dev/null 2>&1; echo \$?" "1\n"
testing "long flags, -f=, and flags after an operand (pflag)" \
	"$K dryrun --nodefeaturerule-file=$F/example-rule.yaml extra --nodefeature-file $F/example-nodefeature.json | tail -1; echo \$?" \
	"NodeFeatureRule \"$F/example-rule.yaml\" is valid for NodeFeature \"$F/example-nodefeature.json\"\n0\n"
testing "subcommand --help: exit 0, upstream's flag names" \
	"$K test --help | grep -c -e '--nodefeaturerule-file' -e '--nodename' -e '--kubeconfig'; echo \$?" "3\n0\n"
testing "help COMMAND: that command's help; an unknown topic: the root help" \
	"$K help dryrun | grep -c -e '--nodefeature-file' -e '--explain'; $K help nope | grep -c '^Commands:'; echo \$?" "3\n1\n0\n"
ln -s "${FBBIN:-featurebox}" "$W/kubectl-nfd"
testing "chosen by argv[0] kubectl-nfd (kubectl runs it as kubectl nfd)" \
	"$FBRUN $W/kubectl-nfd validate -f $F/example-rule.yaml | tail -1" "NodeFeatureRule $F/example-rule.yaml is valid\n"

# ---- validate ---------------------------------------------------------------------
testing "validate: a good file" "$K validate -f $F/amd-gpu-rule.yaml; echo \$?" \
	"Validating NodeFeatureRule $F/amd-gpu-rule.yaml\nValidating rule:  amd-vgpu\nValidating rule:  amd-gpu\nNodeFeatureRule $F/amd-gpu-rule.yaml is valid\n0\n"
testing "validate: every problem on stderr, exit 1" "$K validate -f $F/broken.yaml 2>&1 >/dev/null; $K validate -f $F/broken.yaml 2>/dev/null | tail -1; $K validate -f $F/broken.yaml >/dev/null 2>&1; echo \$?" \
	"rule name cannot be empty
rule \"\": matchFeatures[0] (kernel.version): matchExpressions \"major\": invalid op \"Bogus\"
invalid label \"example.com/toolong\":\"0123456789012345678901234567890123456789012345678901234567890123456789\" invalid value: at most 63 characters [A-Za-z0-9._-], alphanumeric at both ends
invalid extended resource \"example.com/er\":\"lots\" value is not a quantity
invalid taint example.com/t=:Sometimes: invalid taint effect: NoSchedule, PreferNoSchedule or NoExecute
NodeFeatureRule $F/broken.yaml is not valid\n1\n"
testing "validate: nfd-master's namespace policy (unprefixed is fine, kubernetes.io is not)" \
	"$K validate -f $F/rules.yaml 2>&1 >/dev/null; echo \$?" \
	"invalid label \"kubernetes.io/denied\":\"true\" namespace kubernetes.io is not allowed\n1\n"
testing "validate: a NodeFeatureGroup rule with a field the CRD does not have" \
	"$K validate -f $F/group-bad.yaml 2>&1 >/dev/null; echo \$?" \
	"rule nvidia: unknown field labels (a NodeFeatureGroup rule has name, vars, varsTemplate, matchFeatures and matchAny)\n1\n"
testing "validate: a NodeFeatureGroup" "$K validate -f $F/group.yaml; echo \$?" \
	"Validating NodeFeatureRule $F/group.yaml\nValidating group rule:  amd-instinct\nNodeFeatureRule $F/group.yaml is valid\n0\n"

# ---- hostile files --------------------------------------------------------------------
testing "bad YAML: the file, line and column" "$K validate -f $F/bad.yaml 2>&1 >/dev/null; echo \$?" \
	"error reading NodeFeatureRule file: $F/bad.yaml: line 7 column 11: unterminated double-quoted scalar\n1\n"
{ cat "$F/group.yaml"; printf -- '---\nkind: NodeFeatureRule\nspec:\n  rules: [\n'; } >"$W/second-bad.yaml"
testing "bad YAML in a second document: the line in the file" "$K validate -f $W/second-bad.yaml 2>&1 >/dev/null | sed 's/ column.*//'" \
	"error reading NodeFeatureRule file: $W/second-bad.yaml: line 17\n"
head -c 17000000 /dev/zero | tr '\0' '#' >"$W/huge.yaml"
testing "a file over 16 MiB: refused, exit 1" "$K dryrun -f $W/huge.yaml -n $F/nodefeature.yaml 2>&1 >/dev/null; echo \$?" \
	"error reading NodeFeatureRule file: $W/huge.yaml: file larger than 16 MiB\n1\n"
testing "a missing file: Go's wording" "$K dryrun -f $W/none.yaml -n $F/nodefeature.yaml 2>&1 >/dev/null; echo \$?" \
	"error reading NodeFeatureRule file: open $W/none.yaml: no such file or directory\n1\n"
testing "a directory" "$K validate -f $W 2>&1 >/dev/null; echo \$?" \
	"error reading NodeFeatureRule file: read $W: not a regular file\n1\n"
printf 'kind: NodeFeature\nspec: {}\n' >"$W/nf-as-rule.yaml"
testing "a document that is no rule" "$K validate -f $W/nf-as-rule.yaml 2>&1 >/dev/null; echo \$?" \
	"document 1: kind NodeFeature is not NodeFeatureRule or NodeFeatureGroup\n1\n"
yes -- --- | head -n 10002 >"$W/many.yaml"
testing "more than 10000 documents: refused" "$K validate -f $W/many.yaml 2>&1 >/dev/null; echo \$?" \
	"error reading NodeFeatureRule file: $W/many.yaml: more than 10000 documents\n1\n"
python3 -c '
import json
inst = [{"attributes": {"vendor": "1002", "class": "0380", "device": "%04x" % i}} for i in range(20000)]
print(json.dumps({"kind": "NodeFeature", "spec": {"features": {"instances": {"pci.device": {"elements": inst}}}}}))' >"$W/big-nf.json"
testing "20000 instances: --explain shows the first ones and the count" \
	"$K dryrun -f $F/group.yaml -n $W/big-nf.json --explain | grep -c 'instance 7 {vendor=1002, class=0380, device=0007}, ... (20000 in all)'" "3\n"
python3 -c 'print("{" * 100000)' >"$W/deep.json"
testing "JSON nested too deep: an error, no crash" "$K dryrun -f $F/example-rule.yaml -n $W/deep.json >/dev/null 2>&1; echo \$?" "1\n"

# ---- dryrun ------------------------------------------------------------------------------
testing "dryrun: upstream's documented example, its output" "$K dryrun -f $F/example-rule.yaml -n $F/example-nodefeature.json; echo \$?" \
	"Evaluating NodeFeatureRule \"$F/example-rule.yaml\" against NodeFeature \"$F/example-nodefeature.json\"
Processing rule:  my sample rule
***\tLabels\t***
vendor.io/my-sample-feature=true
NodeFeatureRule \"$F/example-rule.yaml\" is valid for NodeFeature \"$F/example-nodefeature.json\"\n0\n"
testing "dryrun: every kind of output, '@' values, rule.matched, validation errors" \
	"$K dryrun -f $F/rules.yaml -n $F/nodefeature.yaml | sed 1d; echo \$?" \
	"Processing rule:  kernel
Processing rule:  backref
Processing rule:  no-avx512-bf16
***\tTaints\t***
{example.com/gpu amd NoSchedule <nil>}
***\tLabels\t***
example.com/after-kernel=true
example.com/numa=true
kernel-major=6
kubernetes.io/denied=true
\t-Validation errors-
invalid label \"kubernetes.io/denied\":\"true\" namespace kubernetes.io is not allowed
***\tExtended Resources\t***
example.com/slots=8
***\tAnnotations\t***
example.com/note=kernel rule
NodeFeatureRule \"$F/rules.yaml\" is valid for NodeFeature \"$F/nodefeature.yaml\"\n0\n"
testing "dryrun: failing rules and an '@' value naming nothing: stderr, exit 1" \
	"$K dryrun -f $F/broken.yaml -n $F/nodefeature.yaml 2>&1 >/dev/null; $K dryrun -f $F/broken.yaml -n $F/nodefeature.yaml 2>/dev/null | tail -1" \
	"failed to process rule: \"\" - matchFeatures[0] (kernel.version): matchExpressions \"major\": invalid op \"Bogus\"
failed to process rule: \"bad-outputs\" - matchExpressions Gt: value \"6.8.0-49-generic\" of full is not an integer
failed to get dynamic value for label \"example.com/dyn\": feature kernel.nosuch not found
NodeFeatureRule \"$F/broken.yaml\" is not valid for NodeFeature \"$F/nodefeature.yaml\"\n"
testing "dryrun: a bad NodeFeature file names it" "$K dryrun -f $F/example-rule.yaml -n $F/bad.yaml 2>&1 >/dev/null; echo \$?" \
	"error reading NodeFeature file: $F/bad.yaml: line 7 column 11: unterminated double-quoted scalar\n1\n"
testing "dryrun: a NodeFeatureGroup: the node is in status.nodes" \
	"$K dryrun -f $F/group.yaml -n $F/nodefeature.yaml | sed -n '2,4p'" \
	"Processing group rule:  amd-instinct\n***\tNodeFeatureGroup amd-gpus\t***\nnode gpu-node-1 would be in status.nodes\n"
testing "dryrun: a NodeFeatureGroup the node is not in" \
	"$K dryrun -f $F/group-bad.yaml -n $F/nodefeature.yaml | sed -n '4p'" "node gpu-node-1 would not be in status.nodes\n"

# ---- --explain ------------------------------------------------------------------------------
testing "--explain on AMD's GPU operator rule" "$K dryrun -f $F/amd-gpu-rule.yaml -n $F/nodefeature.yaml --explain | sed 1d" \
	"NodeFeatureRule amd-gpu-label-nfd-rule
Processing rule:  amd-vgpu
  not matched
    matchAny[0]: no match
      feature pci.device: no match
        vendor In [1002]: matched by instance 0 {class=0380, device=74a1, vendor=1002}
        device In [7410]: no match: saw instance 0: \"74a1\", instance 1: \"2000\"
    matchAny[1]: no match
      feature pci.device: no match
        vendor In [1002]: matched by instance 0 {class=0380, device=74a1, vendor=1002}
        device In [74b5]: no match: saw instance 0: \"74a1\", instance 1: \"2000\"
Processing rule:  amd-gpu
  MATCHED
    matchAny[0]: no match
      feature pci.device: no match
        vendor In [1002]: matched by instance 0 {class=0380, device=74a1, vendor=1002}
        device In [74a5]: no match: saw instance 0: \"74a1\", instance 1: \"2000\"
    matchAny[1]: matched
      feature pci.device: matched (elements: instance 0 {class=0380, device=74a1, vendor=1002})
        vendor In [1002]: matched by instance 0 {class=0380, device=74a1, vendor=1002}
        device In [74a1]: matched by instance 0 {class=0380, device=74a1, vendor=1002}
    matchAny[2]: no match
      feature pci.device: no match
        vendor In [1002]: matched by instance 0 {class=0380, device=74a1, vendor=1002}
        device In [740f]: no match: saw instance 0: \"74a1\", instance 1: \"2000\"
    label feature.node.kubernetes.io/amd-gpu=true -> feature.node.kubernetes.io/amd-gpu=true
***\tLabels\t***
feature.node.kubernetes.io/amd-gpu=true
*** What nfd-master would write (its policy; taints need -enable-taints) ***
label feature.node.kubernetes.io/amd-gpu=true
NodeFeatureRule \"$F/amd-gpu-rule.yaml\" is valid for NodeFeature \"$F/nodefeature.yaml\"\n"
testing "--explain: failed expressions say what the node has, outputs their final names" \
	"$K dryrun -f $F/rules.yaml -n $F/nodefeature.yaml --explain --deny-label-ns=example.com --enable-taints | grep -e 'saw' -e ' -> ' -e '^label' -e '^taint'" \
	"    label kernel-major=@kernel.version.major -> feature.node.kubernetes.io/kernel-major=6
    label example.com/numa=true -> not written: namespace example.com is not allowed
    label kubernetes.io/denied=true -> not written: namespace kubernetes.io is not allowed
    annotation example.com/note=kernel rule -> example.com/note=kernel rule
    extended resource example.com/slots=@kernel.version.minor -> example.com/slots=8
    taint example.com/gpu=amd:NoSchedule -> written
    label example.com/after-kernel=true -> not written: namespace example.com is not allowed
        AVX512BF16 Exists: no match: saw flag absent
        minor Gt [10]: no match: saw attribute minor=\"8\"
label feature.node.kubernetes.io/kernel-major=6
taint example.com/gpu=amd:NoSchedule\n"
testing "--explain --feature-gates DisableAutoPrefix=true: unprefixed names as nfd-master with the gate writes them" \
	"$K dryrun -f $F/rules.yaml -n $F/nodefeature.yaml --explain --feature-gates DisableAutoPrefix=true | grep -e 'kernel-major'" \
	"    label kernel-major=@kernel.version.major -> kernel-major=6
kernel-major=6
label kernel-major=6\n"
testing "--feature-gates: a bad gate is an error naming it" \
	"$K dryrun -f $F/rules.yaml -n $F/nodefeature.yaml --feature-gates Bogus=true 2>&1 >/dev/null | grep -c Bogus; $K dryrun -f $F/rules.yaml -n $F/nodefeature.yaml --feature-gates Bogus=true >/dev/null 2>&1; echo \$?" \
	"1\n1\n"
testing "--explain: an absent feature, and a failing rule" \
	"$K dryrun -f $F/broken.yaml -n $F/example-nodefeature.json --explain 2>/dev/null | grep -e FAILED -e 'no feature'" \
	"  FAILED: matchFeatures[0] (kernel.version): matchExpressions \"major\": invalid op \"Bogus\"\n"

# ---- test, against the API server ------------------------------------------------------------
master_suite_start
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"}}' $NSP | k8s_ctl put /api/v1/namespaces/$NSP - >/dev/null
printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}' | k8s_ctl put /api/v1/namespaces/other - >/dev/null
put_node node1
# node1's features come in two objects: the loaded module from one, the kernel config from the other
put_nf $NSP node1 node1 '{"features":{"flags":{"kernel.loadedmodule":{"elements":{"dummy":{}}}}},"labels":{}}'
put_nf other node1-extra node1 '{"features":{"attributes":{"kernel.config":{"elements":{"X86":"y"}}}},"labels":{}}'
put_nf $NSP node2 node2 '{"features":{"attributes":{"kernel.config":{"elements":{"X86":"y"}}}},"labels":{}}'
testing "test: the node's NodeFeatures from every namespace, merged, then the rule" \
	"$K test -f $F/example-rule.yaml -n node1 -k $S/kubeconfig-admin; echo \$?" \
	"Evaluating NodeFeatureRule against Node node1
Found 2 NodeFeature objects for node \"node1\": $NSP/node1, other/node1-extra
Processing rule:  my sample rule
***\tLabels\t***
vendor.io/my-sample-feature=true
NodeFeatureRule is valid for Node node1\n0\n"
testing "test: only that node's objects (a label selector)" \
	"$K test -f $F/example-rule.yaml -n node2 --kubeconfig=$S/kubeconfig-admin --explain | grep -e Found -e 'no match'" \
	"Found 1 NodeFeature objects for node \"node2\": $NSP/node2\n    matchFeatures: no match\n      feature kernel.loadedmodule: no match: the node has no feature kernel.loadedmodule\n"
testing "test: \$KUBECONFIG when -k is not given; a node without NodeFeatures" \
	"KUBECONFIG=$S/kubeconfig-admin $K test -f $F/example-rule.yaml -n nosuch | sed -n 2p" \
	"Found 0 NodeFeature objects for node \"nosuch\": \n"
testing "test: a kubeconfig that is not there, exit 1" \
	"$K test -f $F/example-rule.yaml -n node1 -k $W/none 2>&1 >/dev/null | grep -c '^error building kubeconfig: '; $K test -f $F/example-rule.yaml -n node1 -k $W/none >/dev/null 2>&1; echo \$?" "1\n1\n"
k8s_ctl fault --method GET --path "^$NFAPI/nodefeatures\$" --count -1 --status 403 >/dev/null
testing "test: the list refused, exit 1" \
	"$K test -f $F/example-rule.yaml -n node1 -k $S/kubeconfig-admin 2>&1 >/dev/null | grep -c '^failed to get NodeFeature resources for node \"node1\": '; $K test -f $F/example-rule.yaml -n node1 -k $S/kubeconfig-admin >/dev/null 2>&1; echo \$?" "1\n1\n"
k8s_ctl clear-faults >/dev/null
# ---- the explanation's final set is what nfd-master writes ------------------------------------
# rules.yaml and nodefeature.yaml given to nfd-master on the API server: every
# label, annotation and extended resource --explain says it would write is on
# the node, and what it says is refused is not.
python3 - "$F" "$W" <<'PY'
import json, sys, yaml
f, w = sys.argv[1], sys.argv[2]
with open(f + "/nodefeature.yaml") as fh:
    json.dump(yaml.safe_load(fh)["spec"], open(w + "/nf-spec.json", "w"))
with open(f + "/rules.yaml") as fh:
    for i, d in enumerate(yaml.safe_load_all(fh)):
        json.dump(d["spec"]["rules"], open("%s/rules-%d.json" % (w, i), "w"))
PY
put_node gpu-node-1
put_nf $NSP gpu-node-1 gpu-node-1 "$(cat "$W/nf-spec.json")"
put_rule outputs "$(cat "$W/rules-0.json")"
put_rule second "$(cat "$W/rules-1.json")"
start_master m
check "nfd-master labels the node" wait_for 30 has gpu-node-1 "label feature.node.kubernetes.io/kernel-major=6"
$K dryrun -f $F/rules.yaml -n $F/nodefeature.yaml --explain | sed -n '/^\*\*\* What nfd-master would write/,/^NodeFeatureRule/p' | sed '1d;$d' |
	sed -e 's/^extended resource /capacity /' >"$W/said"
testing "--explain's final set is on the node (labels, annotations, extended resources)" \
	"wc -l <$W/said; while read -r l; do has gpu-node-1 \"\$l\" || echo \"missing: \$l\"; done <$W/said" "5\n"
testing "... and what it refused is not" \
	"hasnt gpu-node-1 kubernetes.io/denied && hasnt gpu-node-1 taint && echo absent" "absent\n"
stop_master m
done_testing
