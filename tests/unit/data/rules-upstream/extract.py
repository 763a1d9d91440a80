#!/usr/bin/env python3
# usage: extract.py UPSTREAM_GIT_DIR > expression.jsonl
# Transcribes the facts of upstream's expression_test.go tables (op, values,
# type, key, input, expected result / error) into our JSONL case format.
import json, re, subprocess, sys
REPO = sys.argv[1] if len(sys.argv) > 1 else "."  # a bare or plain git dir of upstream
src = subprocess.run(["git", "--git-dir", REPO, "show", "HEAD:pkg/apis/nfd/nodefeaturerule/expression_test.go"],
                     capture_output=True, text=True, check=True).stdout
out = []
def strs(s):
    return re.findall(r'"((?:[^"\\]|\\.)*)"', s or "")
def gomap(s):  # I{"a": "b", ...} or I{"a": {}}
    if s is None: return None
    body = s[s.index("{") + 1:s.rindex("}")]
    if not body.strip(): return {}
    pairs = re.findall(r'"([^"]*)":\s*("(?:[^"\\]|\\.)*"|\{\})', body)
    return {k: (None if v == "{}" else json.loads(v)) for k, v in pairs}
def field(line, name, pat):
    m = re.search(r'\b' + name + r':\s*(' + pat + r')', line)
    return m.group(1) if m else None
funcs = re.split(r'\nfunc (Test\w+)', src)
for i in range(1, len(funcs), 2):
    fn, body = funcs[i], funcs[i + 1]
    tables = body.split("// Error cases")
    for ti, tb in enumerate(tables):
        for line in tb.splitlines():
            line = line.strip()
            if not line.startswith("{name:"):
                continue
            name = field(line, "name", r'"[^"]*"').strip('"')
            op = field(line, "op", r'nfdv1alpha1\.\w+|"[^"]*"')
            op = {"MatchAny": "", "MatchIn": "In", "MatchNotIn": "NotIn", "MatchInRegexp": "InRegexp",
                  "MatchExists": "Exists", "MatchDoesNotExist": "DoesNotExist", "MatchGt": "Gt", "MatchGe": "Ge",
                  "MatchLt": "Lt", "MatchLe": "Le", "MatchGtLt": "GtLt", "MatchGeLe": "GeLe", "MatchIsTrue": "IsTrue",
                  "MatchIsFalse": "IsFalse"}.get(op.split(".")[-1], op.strip('"'))
            vals = field(line, "values", r'V\{[^}]*\}')
            typ = field(line, "valueType", r'"[^"]*"')
            expr = {"op": op}
            if vals is not None: expr["value"] = strs(vals)
            if typ: expr["type"] = typ.strip('"')
            c = {"src": "expression_test.go " + fn, "name": name}
            if fn == "TestEvaluateMatchExpression":
                inp = field(line, "input", r'"[^"]*"|-?\d+|true|false|nil')
                valid = field(line, "valid", r'true|false') == "true" or ti == 1
                key = "k"
                if not valid:
                    c["values"] = {}
                elif inp in (None, "nil"):
                    c["keys"] = [key]
                else:
                    c["values"] = {key: inp.strip('"')}
                c["expr"] = {key: expr}
                c["match"] = ti == 0 and field(line, "result", r'assert\.\w+') == "assert.True"
                c["err"] = ti == 1
            else:
                key = (field(line, "key", r'"[^"]*"') or '""').strip('"')
                inp = gomap(field(line, "input", r'I\{(?:[^{}]|\{\})*\}'))
                if fn == "TestEvaluateMatchExpressionKeys":
                    c["keys"] = sorted(inp) if inp else []
                else:
                    c["values"] = inp or {}
                c["expr"] = {key: expr}
                c["match"] = field(line, "result", r'assert\.\w+') == "assert.True"
                c["err"] = field(line, "err", r'assert\.\w+') == "assert.NotNil"
            out.append(c)
for c in out:
    print(json.dumps(c, sort_keys=True))
print(len(out), file=sys.stderr)
