# Conformance: upstream node-feature-discovery's rule-engine test cases run
# through `kubectl-nfd dryrun` (and `validate` for the checks only upstream's
# validate subcommand makes). The cases are facts kept as data in
# tests/unit/data/rules-upstream/ (README there: the format and the counts):
#   rule.jsonl       rule_test.go (TestRule, TestTemplating): a NodeFeatureRule
#                    of one rule against a NodeFeature; the labels and vars
#   grouprule.jsonl  grouprule_test.go: a NodeFeatureGroup of one rule; its vars
#                    and whether the node would be in status.nodes
#   template.jsonl   template_test.go: templates in a rule (size cap, the
#                    functions dropped and kept)
#   validate.jsonl   validate_test.go: each output accepted, with the name
#                    nfd-master gives it, or rejected and why (a class: key,
#                    unprefixed, namespace, value, empty-effect,
#                    invalid-effect); MatchFeatures, MatchAny and Template
#                    through `kubectl-nfd validate` (upstream's use of them)
# A case may say "differs": featurebox is known to disagree (why); it passes
# while the output differs from upstream's as "featurebox" (the lines it
# gives, when recorded) says, and fails once it agrees.
# "inexpressible" cases are only counted. Test names start with the upstream
# file and function; the counts per function go to stderr as "# " notes.
. "$(dirname "$0")/../lib/testing.sh"
D=$FB_TOP/tests/unit/data/rules-upstream
K="$FB kubectl-nfd"

# gen.py DATA OUT: each case of the four files as OUT/N/{rule.json,nf.json,want}
# (and fbwant: what featurebox gives instead, for a known difference);
# OUT/index: "N<TAB>mode<TAB>name<TAB>differs" a case; OUT/inexpressible:
# "src<TAB>name<TAB>why". {"$repeat": S, "len": N[, "prefix": P]} anywhere in
# a case stands for P followed by S repeated, N bytes in all.
cat >"$W/gen.py" <<'PY'
import json, os, sys
data, out = sys.argv[1], sys.argv[2]
def expand(v):
    if isinstance(v, dict) and "$repeat" in v:
        s = v.get("prefix", "")
        return (s + v["$repeat"] * (v["len"] // max(len(v["$repeat"]), 1) + 1))[:v["len"]]
    if isinstance(v, dict):
        return {k: expand(x) for k, x in v.items()}
    if isinstance(v, list):
        return [expand(x) for x in v]
    return v
def kv(kind, m):
    return ["%s %s=%s" % (kind, k, m[k]) for k in sorted(m)]
def rule_want(c):
    if c["err"]:
        return ["error"]
    return kv("label", c.get("labels", {})) + kv("var", c.get("vars", {}))
def group_want(c):
    if c["err"]:
        return ["error"]
    return ["member" if c["member"] else "not member"] + kv("var", c["vars"])
def verdict(v, name):
    return "accepted as " + name if v == "ok" else "rejected (%s)" % v
def out_want(c):
    w = ["matched"]
    for kind, member in (("label", "labels"), ("annotation", "annotations"), ("extended resource", "extendedResources")):
        m = c.get(member, {})
        w += ["%s %s: %s" % (kind, k, verdict(c["want"][k], k)) for k in sorted(m)]
    for t, v in zip(c.get("taints", []), c.get("want", []) if "taints" in c else []):
        w.append("taint %s=%s:%s: %s" % (t["key"], t["value"], t["effect"], "accepted" if v == "ok" else "rejected (%s)" % v))
    return w
def doc(kind, spec):
    return {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": kind, "metadata": {"name": "conformance"}, "spec": spec}
index, inexpressible, n = [], [], 0
for f in ("rule.jsonl", "grouprule.jsonl", "template.jsonl", "validate.jsonl"):
    for line in open(os.path.join(data, f)):
        if not line.strip() or line.startswith("#"):
            continue
        c = expand(json.loads(line))
        name = "%s: %s" % (c["src"], c["name"])
        if "inexpressible" in c:
            inexpressible.append("%s\t%s\t%s" % (c["src"], c["name"], c["inexpressible"]))
            continue
        n += 1
        d = os.path.join(out, str(n))
        os.makedirs(d)
        features = c.get("features", {})
        if f == "grouprule.jsonl":
            mode, rdoc, want = "group", doc("NodeFeatureGroup", {"featureGroupRules": [c["rule"]]}), group_want(c)
        elif "rule" in c:
            mode, rdoc, want = "rule", doc("NodeFeatureRule", {"rules": [c["rule"]]}), rule_want(c)
        elif "validate" in c:
            r = {"name": "v", "labels": {"example.com/v": "true"}}
            r.update(c["validate"])
            mode, rdoc = "validate", doc("NodeFeatureRule", {"rules": [r]})
            want = ["valid" if not c["errors"] else "not valid", "%d errors" % c["errors"]]
        else:
            r = {"name": "v"}
            for m in ("labels", "annotations", "extendedResources", "taints"):
                if m in c:
                    r[m] = c[m]
            mode, rdoc, want = "out", doc("NodeFeatureRule", {"rules": [r]}), out_want(c)
        json.dump(rdoc, open(os.path.join(d, "rule.json"), "w"))
        nf = doc("NodeFeature", {"features": features})
        nf["metadata"]["name"] = "node1"
        json.dump(nf, open(os.path.join(d, "nf.json"), "w"))
        open(os.path.join(d, "want"), "w").write("".join(l + "\n" for l in want))
        if "featurebox" in c:
            open(os.path.join(d, "fbwant"), "w").write("".join(l + "\n" for l in c["featurebox"]))
        index.append("%d\t%s\t%s\t%s" % (n, mode, name.replace("\t", " "), c.get("differs", "")))
open(os.path.join(out, "index"), "w").write("".join(l + "\n" for l in index))
open(os.path.join(out, "inexpressible"), "w").write("".join(l + "\n" for l in inexpressible))
PY

# norm.py OUT: for each case of OUT/index, kubectl-nfd's output in OUT/N/raw
# (dryrun --explain, or validate; stdout then stderr, then "exit N") as the
# lines gen.py writes for upstream's result, into OUT/N/got
cat >"$W/norm.py" <<'PY'
import os, re, sys
def cls(why):
    for pfx, c in (("invalid key", "key"), ("unprefixed", "unprefixed"), ("namespace ", "namespace"),
                   ("empty taint effect", "empty-effect"), ("invalid taint effect", "invalid-effect"),
                   ("invalid value", "value"), ("value ", "value")):
        if why.startswith(pfx):
            return c
    return "other: " + why
def norm(mode, lines):
    if mode == "validate":
        errs = [l for l in lines if l and not l.startswith(("Validating ", "NodeFeatureRule ", "exit "))]
        return ["not valid" if "exit 1" in lines else "valid", "%d errors" % len(errs)]
    if any(l.startswith("  FAILED: ") for l in lines):
        return ["error"]
    out, var, head = [], [], []
    for l in lines:
        if mode == "group" and re.match(r"node \S+ would (not )?be in status\.nodes$", l):
            head = ["not member" if " would not be " in l else "member"]
        elif l.startswith("    var "):
            var.append("var " + re.sub(r" \(for later rules only\)$", "", l[8:]))
        elif mode == "rule" and l.startswith("    label ") and " -> " in l:
            out.append("label " + l[10:].rsplit(" -> ", 1)[0])
        elif mode == "out":
            m = re.match(r"    (label|annotation|extended resource|taint) (.*) -> (.*)$", l)
            if not m:
                continue
            kind, what, res = m.groups()
            key = what if kind == "taint" else what.split("=", 1)[0]
            if res.startswith("not written: "):
                out.append("%s %s: rejected (%s)" % (kind, key, cls(res[13:])))
            elif kind == "taint":
                out.append("%s %s: accepted" % (kind, key))
            else:
                out.append("%s %s: accepted as %s" % (kind, key, res.split("=", 1)[0]))
    if mode == "out":
        if "  MATCHED" not in lines:
            return ["not matched"]
        return ["matched"] + sorted(l for l in out if not l.startswith("taint ")) + [l for l in out if l.startswith("taint ")]
    return head + sorted(out) + sorted(var)
top = sys.argv[1]
for line in open(os.path.join(top, "index")):
    n, mode = line.split("\t")[:2]
    d = os.path.join(top, n)
    lines = open(os.path.join(d, "raw"), encoding="utf-8", errors="replace").read().split("\n")
    open(os.path.join(d, "got"), "w").write("".join(l + "\n" for l in norm(mode, lines)))
PY

python3 "$W/gen.py" "$D" "$W/c" || fail "the data files could not be read"

# per-function counts (the function is the test name up to ':')
declare -A NPASS NFAIL NDIFF NNONE
eval "_pass() $(declare -f pass | sed 1d)"
eval "_fail() $(declare -f fail | sed 1d)"
pass() { _pass "$@"; NPASS[${1%%:*}]=$((${NPASS[${1%%:*}]:-0} + 1)); }
fail() { _fail "$@"; NFAIL[${1%%:*}]=$((${NFAIL[${1%%:*}]:-0} + 1)); }

# kubectl-nfd on every case (a sanitizer's report kept with its case), then
# the outputs normalised in one go, then one test a case
while IFS=$'\t' read -r n mode name differs; do
	d=$W/c/$n
	if [ "$mode" = validate ]; then
		{ $K validate -f "$d/rule.json" 2>&1; echo "exit $?"; } >"$d/raw"
	else
		{ $K dryrun -f "$d/rule.json" -n "$d/nf.json" --explain 2>&1; echo "exit $?"; } >"$d/raw"
	fi
	if ls "$W"/san/report* >/dev/null 2>&1; then
		cat "$W"/san/report* >"$d/san" && rm -f "$W"/san/report*
	fi
done <"$W/c/index"
python3 "$W/norm.py" "$W/c" || fail "the outputs could not be read"
while IFS=$'\t' read -r n mode name differs; do
	d=$W/c/$n
	if [ -z "$differs" ]; then
		testing "$name" "head -c 3000 $d/san 2>/dev/null; diff $d/want $d/got && echo agrees" "agrees\n"
	else
		f0=$fails
		testing "$name [known difference: $differs]" \
			"head -c 3000 $d/san 2>/dev/null; if diff $d/want $d/got >/dev/null; then echo 'agrees with upstream now: drop its differs note'; elif [ -e $d/fbwant ]; then diff $d/fbwant $d/got && echo differs; else echo differs; fi" "differs\n"
		[ "$fails" != "$f0" ] || NDIFF[${name%%:*}]=$((${NDIFF[${name%%:*}]:-0} + 1))
	fi
done <"$W/c/index"
while IFS=$'\t' read -r src name why; do
	NNONE[$src]=$((${NNONE[$src]:-0} + 1))
	printf '# conformance: not expressible: %s: %s: %s\n' "$src" "$name" "$why" >&2
done <"$W/c/inexpressible"

printf '%s\n' "${!NPASS[@]}" "${!NFAIL[@]}" "${!NNONE[@]}" | sort -u >"$W/functions"
while IFS= read -r fn; do
	p=${NPASS[$fn]:-0} f=${NFAIL[$fn]:-0} k=${NDIFF[$fn]:-0} x=${NNONE[$fn]:-0}
	printf '# conformance: %s: %d cases, %d agree, %d known differences, %d fail, %d not expressible\n' \
		"$fn" $((p + f + x)) $((p - k)) "$k" "$f" "$x" >&2
done <"$W/functions"
done_testing
