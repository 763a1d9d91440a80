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
#   expression.jsonl, expression-api.jsonl  expression_test.go and
#                    expression-api_test.go (MatchMulti, MatchNamesMulti): a
#                    NodeFeatureRule of one rule whose one term has the case's
#                    matchExpressions or matchName on a feature holding the
#                    case's flags, attributes and instances; whether it
#                    matched or failed, and the matched elements where
#                    upstream lists them (see gen.py's expr_case); all 245 in
#                    one run (one process each would take a minute more with
#                    the sanitizers)
# A case may say "differs": featurebox is known to disagree (why); it passes
# while the output differs from upstream's as "featurebox" (the lines it
# gives, when recorded) says, and fails once it agrees.
# "inexpressible" cases are only counted. Test names start with the upstream
# file and function; the counts per function go to stderr as "# " notes.
. "$(dirname "$0")/../lib/testing.sh"
D=$FB_TOP/tests/unit/data/rules-upstream
K="$FB kubectl-nfd"

# gen.py DATA OUT: each case of the six files as OUT/N/{rule.json,nf.json,want}
# (and fbwant: what featurebox gives instead, for a known difference); the
# expression cases' rules and node as one run: OUT/expr-rules.json (a List
# of NodeFeatureRules, one a case) and OUT/expr-nf.json, OUT/N/want alone;
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
def elem(e):
    if "Name" in e and set(e) <= {"Name", "Value"}:
        return e["Name"] + ("=" + e["Value"] if "Value" in e else "")
    return "instance {%s}" % ", ".join("%s=%s" % (k, e[k]) for k in sorted(e))
# an expression case N: a NodeFeatureRule cN of one rule cN, its one term on
# the feature t.fN; the flags, attributes and instances the case gives go to
# t.fN of one NodeFeature that all these cases share (none given: no t.fN,
# where upstream's rule engine stops before MatchMulti, with the same
# result). Their matched elements are read twice: --explain's "elements:"
# line and var e of a varsTemplate printing each element's map as a template
# sees it (its keys sorted)
def expr_case(c, n, xfeat):
    ft = "t.f%d" % n
    t = {"feature": ft}
    if "nexpr" in c:
        t["matchName"] = c["nexpr"]
    else:
        t["matchExpressions"] = c["expr"]
    r = {"name": "c%d" % n, "labels": {"m": "1"}, "matchFeatures": [t]}
    if "out" in c:
        r["varsTemplate"] = "e={{range .%s}}<{{range $k, $v := .}}{{$k}}={{$v}};{{end}}>{{end}}" % ft
    if "keys" in c:
        xfeat["flags"][ft] = {"elements": {k: {} for k in c["keys"]}}
    if "values" in c:
        xfeat["attributes"][ft] = {"elements": c["values"]}
    if "instances" in c:
        xfeat["instances"][ft] = {"elements": [{"attributes": i} for i in c["instances"]]}
    if c["err"]:
        want = ["error"]
    elif not c["match"]:
        want = ["not matched"]
    else:
        want = ["matched"]
        if "out" in c:
            want.append("elements: " + ("; ".join(elem(e) for e in c["out"]) or "(none)"))
            want.append("template: " + "".join("<%s>" % "".join("%s=%s;" % (k, e[k]) for k in sorted(e))
                                               for e in c["out"]))
    rdoc = doc("NodeFeatureRule", {"rules": [r]})
    rdoc["metadata"]["name"] = "c%d" % n
    return ("elems" if "out" in c else "expr"), rdoc, want
xdocs, xfeat = [], {"flags": {}, "attributes": {}, "instances": {}}
index, inexpressible, n = [], [], 0
for f in ("rule.jsonl", "grouprule.jsonl", "template.jsonl", "validate.jsonl", "expression.jsonl",
          "expression-api.jsonl"):
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
        if f.startswith("expression"):
            mode, rdoc, want = expr_case(c, n, xfeat)
            xdocs.append(rdoc)
        elif f == "grouprule.jsonl":
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
        if not mode.startswith(("expr", "elems")):
            json.dump(rdoc, open(os.path.join(d, "rule.json"), "w"))
            nf = doc("NodeFeature", {"features": features})
            nf["metadata"]["name"] = "node1"
            json.dump(nf, open(os.path.join(d, "nf.json"), "w"))
        open(os.path.join(d, "want"), "w").write("".join(l + "\n" for l in want))
        if "featurebox" in c:
            open(os.path.join(d, "fbwant"), "w").write("".join(l + "\n" for l in c["featurebox"]))
        index.append("%d\t%s\t%s\t%s" % (n, mode, name.replace("\t", " "), c.get("differs", "")))
json.dump({"apiVersion": "v1", "kind": "List", "items": xdocs},
          open(os.path.join(out, "expr-rules.json"), "w"))
nf = doc("NodeFeature", {"features": xfeat})
nf["metadata"]["name"] = "node1"
json.dump(nf, open(os.path.join(out, "expr-nf.json"), "w"))
open(os.path.join(out, "index"), "w").write("".join(l + "\n" for l in index))
open(os.path.join(out, "inexpressible"), "w").write("".join(l + "\n" for l in inexpressible))
PY

# norm.py OUT: for each case of OUT/index, kubectl-nfd's output in OUT/N/raw
# (dryrun --explain, or validate; stdout then stderr, then "exit N"), or its
# rule's part of OUT/expr-raw (the expression cases: stdout only), as the
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
def expr_norm(mode, n, lines):
    # case n's rule: MATCHED and its label, and the term's matched elements
    # as gen.py writes upstream's: name, name=value, instance {attributes,
    # sorted}; the template's as they are
    if lines is None:
        return ["no output for rule c%s" % n]
    if any(l.startswith("  FAILED: ") for l in lines):
        return ["error"]
    if "  MATCHED" not in lines:
        return ["not matched"]
    labelled = any(l.startswith("    label m=1 -> ") for l in lines)
    out = ["matched" if labelled else "MATCHED without its label"]
    if mode == "expr":
        return out
    el, tm = "no line \"feature t.f%s: matched\"" % n, "no line \"var e=\""
    for l in lines:
        m = re.match(r"      feature t\.f%s: matched(?: \(elements: (.*)\))?$" % n, l)
        if m:
            el = []
            for e in re.finditer(r"instance \d+ \{([^}]*)\}|[^, ][^,]*", m.group(1) or ""):
                if e.group(1) is not None:
                    el.append("instance {%s}" % ", ".join(sorted(a for a in e.group(1).split(", ") if a)))
                else:
                    el.append(e.group(0))
            el = "; ".join(el) or "(none)"
        m = re.match(r"    var e=(.*) \(for later rules only\)$", l)
        if m:
            tm = m.group(1)
    return out + ["elements: " + el, "template: " + tm]
top = sys.argv[1]
# the expression cases' one run, cut at each "Processing rule:  cN"
xrule, cur = {}, None
for l in open(os.path.join(top, "expr-raw"), encoding="utf-8", errors="replace").read().split("\n"):
    m = re.match(r"Processing rule:  c(\d+)$", l)
    if m:
        cur = xrule.setdefault(m.group(1), [])
    elif cur is not None:
        cur.append(l)
for line in open(os.path.join(top, "index")):
    n, mode = line.split("\t")[:2]
    d = os.path.join(top, n)
    if mode in ("expr", "elems"):
        got = expr_norm(mode, n, xrule.get(n))
    else:
        got = norm(mode, open(os.path.join(d, "raw"), encoding="utf-8", errors="replace").read().split("\n"))
    open(os.path.join(d, "got"), "w").write("".join(l + "\n" for l in got))
PY

python3 "$W/gen.py" "$D" "$W/c" || fail "the data files could not be read"

# per-function counts (the function is the test name up to ':')
declare -A NPASS NFAIL NDIFF NNONE
eval "_pass() $(declare -f pass | sed 1d)"
eval "_fail() $(declare -f fail | sed 1d)"
pass() { _pass "$@"; NPASS[${1%%:*}]=$((${NPASS[${1%%:*}]:-0} + 1)); }
fail() { _fail "$@"; NFAIL[${1%%:*}]=$((${NFAIL[${1%%:*}]:-0} + 1)); }

# kubectl-nfd on every case (a sanitizer's report kept with its case; the
# expression cases in one run, its report kept with each of them), then the
# outputs normalised in one go, then one test a case
$K dryrun -f "$W/c/expr-rules.json" -n "$W/c/expr-nf.json" --explain >"$W/c/expr-raw" 2>"$W/c/expr-err"
if ls "$W"/san/report* >/dev/null 2>&1; then
	cat "$W"/san/report* >"$W/c/expr-san" && rm -f "$W"/san/report*
fi
while IFS=$'\t' read -r n mode name differs; do
	d=$W/c/$n
	if [ "$mode" = expr ] || [ "$mode" = elems ]; then
		[ ! -e "$W/c/expr-san" ] || cp "$W/c/expr-san" "$d/san"
		continue
	elif [ "$mode" = validate ]; then
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
