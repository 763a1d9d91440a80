"""tests/applets/pgpu-crd.py: featurebox's PhysicalGPU CRD against the
transcription of the Deckhouse gpu module's (tests/applets/data/physicalgpu-
released/fields.txt); run by pgpu-crd.sh.

    pgpu-crd.py CHECK CRD FIELDS [ARGS]

Prints what is wrong, one line each, and exits 1; exits 0 when nothing is.
CHECK is one of
  names           group, kind, scope, version, short names, categories, status
                  subresource
  fields SRC      every field from source SRC (R: released, P: prototype) is
                  in ours, with the same type and format and every enum value
  unknown         ours keeps what is inside each unknown-inside path, and
                  prunes everywhere else (no other preserve-unknown-fields)
  required        ours requires no field the transcription does not
  columns         every transcribed printer column is ours (name, type, path)
  roundtrip K8S_DIR
                  objects carrying every transcribed field (one per enum
                  value) created and their status written through the test
                  API server (started with --schema, serving this CRD) come
                  back unchanged, but for junk fields, which must be pruned;
                  a value outside an enum, of another type or format is refused
  statuses FILE...
                  every status in the JSON lists (gpu-node-agent --oneshot
                  --no-publish) is kept whole and valid by this CRD
  selftest        the field check fails on a copy of the CRD that lacks a
                  field, has another type, or a smaller enum
"""
import copy
import http.client
import importlib.util
import json
import os
import shlex
import ssl
import sys

TOP = os.environ.get("FB_TOP") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("srv", os.path.join(TOP, "tests/k8s/server.py"))
srv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(srv)


def load_crd(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in srv.yaml_load_all(f.read(), path)
                if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    if len(docs) != 1:
        sys.exit("%s: %d CustomResourceDefinitions, want 1" % (path, len(docs)))
    return docs[0]


def load_fields(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            w = shlex.split(line)
            if not w[-1].startswith("src="):
                sys.exit("%s:%d: no src= at the end" % (path, n))
            src = set(w[-1][4:].split(","))
            if not src <= {"R", "P"} or w[0] not in ("crd", "field", "unknown-inside", "required",
                                                     "column"):
                sys.exit("%s:%d: cannot read %r" % (path, n, line))
            out.append((w[0], w[1:-1], src, n))
    return out


def version(crd):
    vs = crd["spec"]["versions"]
    return vs[0]


def node(schema, path):
    """The schema node at a dotted PATH ("[]" for an array's items), or None."""
    s = schema
    for part in path.split("."):
        arr = 0
        while part.endswith("[]"):
            part, arr = part[:-2], arr + 1
        s = (s.get("properties") or {}).get(part) if isinstance(s, dict) else None
        for _ in range(arr):
            s = s.get("items") if isinstance(s, dict) else None
        if s is None:
            return None
    return s


def check_names(crd, fields):
    errs, v, sp = [], version(crd), crd["spec"]
    have = {"group": [sp.get("group")], "kind": [sp["names"].get("kind")],
            "scope": [sp.get("scope")], "version": [x.get("name") for x in sp["versions"]],
            "shortName": sp["names"].get("shortNames") or [],
            "category": sp["names"].get("categories") or [],
            "subresource": list(v.get("subresources") or {})}
    for kind, w, src, n in fields:
        if kind == "crd" and w[1] not in have.get(w[0], []):
            errs.append("%s %s: ours has %s" % (w[0], w[1], have.get(w[0])))
    return errs


def check_fields(crd, fields, want_src):
    errs, schema = [], version(crd)["schema"]["openAPIV3Schema"]
    for kind, w, src, n in fields:
        if kind != "field" or want_src not in src:
            continue
        path, typ = w[0], w[1]
        opts = dict(x.split("=", 1) for x in w[2:])
        s = node(schema, path)
        if s is None:
            errs.append("%s: missing" % path)
            continue
        if s.get("type") != typ:
            errs.append("%s: type %s, theirs %s" % (path, s.get("type"), typ))
        if "format" in opts and s.get("format") != opts["format"]:
            errs.append("%s: format %s, theirs %s" % (path, s.get("format"), opts["format"]))
        if "enum" in opts:
            theirs = opts["enum"].split("|")
            if "enum" not in s:
                continue                    # no enum at all: every value goes
            lack = [e for e in theirs if e not in s["enum"]]
            if lack:
                errs.append("%s: enum %s lacks %s" % (path, s["enum"], lack))
        elif "enum" in s:
            errs.append("%s: ours has an enum %s, theirs none" % (path, s["enum"]))
    return errs


def preserving(s, path=""):
    """The paths of the nodes under s with x-kubernetes-preserve-unknown-fields."""
    out = []
    if not isinstance(s, dict):
        return out
    if s.get("x-kubernetes-preserve-unknown-fields"):
        out.append(path)
    for k, sub in (s.get("properties") or {}).items():
        out += preserving(sub, path + "." + k if path else k)
    if isinstance(s.get("items"), dict):
        out += preserving(s["items"], path + "[]")
    return out


def check_unknown(crd, fields):
    errs, schema = [], version(crd)["schema"]["openAPIV3Schema"]
    want = {w[0] for kind, w, src, n in fields if kind == "unknown-inside"}
    for p in sorted(want):
        s = node(schema, p)
        if s is None or s.get("x-kubernetes-preserve-unknown-fields") is not True:
            errs.append("%s: its fields are not public, but ours prunes them" % p)
    for p in preserving(schema):
        if p not in want:
            errs.append("%s: x-kubernetes-preserve-unknown-fields (unknown fields must be pruned)"
                        % (p or "the root"))
    return errs


def check_required(crd, fields):
    errs, schema = [], version(crd)["schema"]["openAPIV3Schema"]
    for kind, w, src, n in fields:
        if kind != "required":
            continue
        s = node(schema, w[0])
        extra = sorted(set((s or {}).get("required") or ()) - set(w[1].split(",")))
        if s is None:
            errs.append("%s: missing" % w[0])
        elif extra:
            errs.append("%s: ours requires %s, which theirs may leave out" % (w[0], extra))
    return errs


def check_columns(crd, fields):
    errs = []
    have = {c["name"]: c for c in version(crd).get("additionalPrinterColumns") or ()}
    for kind, w, src, n in fields:
        if kind != "column":
            continue
        c = have.get(w[0])
        if c is None:
            errs.append("column %s: missing" % w[0])
        elif (c.get("type"), c.get("jsonPath")) != (w[1], w[2]):
            errs.append("column %s: %s %s, theirs %s %s" % (w[0], c.get("type"), c.get("jsonPath"),
                                                           w[1], w[2]))
    return errs


# -- objects carrying every transcribed field ----------------------------------

PARTITION = {"anyField": "kept", "nested": {"deeper": [1, "two", True]}}
JUNK = ["status.junk", "status.capabilities.junk", "status.capabilities.nvidia.junk",
        "status.currentState.nvidia.mig.junk", "status.conditions[].junk",
        "status.capabilities.nvidia.mig.profiles[].junk", "spec.junk"]


def value(typ, opts, path, k):
    if "enum" in opts:
        e = opts["enum"].split("|")
        return e[k % len(e)]
    if typ == "string":
        return "2026-01-02T03:04:05Z" if opts.get("format") == "date-time" else \
            "V" + path.rsplit(".", 1)[-1].strip("[]")
    if typ == "integer":
        return 7 + k
    if typ == "boolean":
        return k % 2 == 0
    if typ == "number":
        return 1.5
    return {} if typ == "object" else []


def build(fl, path, k):
    """The value at PATH: its children (PATH.x, PATH[]) filled in from fl."""
    typ, opts = fl[path]
    if typ == "object":
        kids = [q for q in fl if q.startswith(path + ".") and "." not in q[len(path) + 1:]
                and not q[len(path) + 1:].endswith("[]")]
        return {q[len(path) + 1:]: build(fl, q, k) for q in kids}
    if typ == "array":
        return [build(fl, path + "[]", k)] if path + "[]" in fl else []
    return value(typ, opts, path, k)


def full_objects(fields):
    """One object per enum value (the longest enum's length), every field set."""
    fl = {w[0]: (w[1], dict(x.split("=", 1) for x in w[2:]))
          for kind, w, src, n in fields if kind == "field"}
    n = max([len(o["enum"].split("|")) for t, o in fl.values() if "enum" in o] or [1])
    out = []
    for k in range(n):
        o = {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "PhysicalGPU",
             "metadata": {"name": "roundtrip-%d" % k}, "spec": build(fl, "spec", k),
             "status": build(fl, "status", k)}
        for kind, w, src, _ in fields:
            if kind == "unknown-inside":
                head, leaf = w[0].rsplit(".", 1)
                cur = o
                for part in head.split("."):
                    cur = cur[part]
                cur[leaf] = copy.deepcopy(PARTITION)
        out.append(o)
    return out


def with_junk(o):
    o = copy.deepcopy(o)
    for p in JUNK:
        head, leaf = p.rsplit(".", 1)
        cur = o
        for part in head.split("."):
            cur = cur[part[:-2]][0] if part.endswith("[]") else cur[part]
        cur[leaf] = {"unknown": "junk"}
    return o


class Api:
    def __init__(self, k8s_dir):
        with open(os.path.join(k8s_dir, "port")) as f:
            self.port = int(f.read().strip())
        self.ctx = ssl.create_default_context(cafile=os.path.join(k8s_dir, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(k8s_dir, "admin.crt"),
                                 os.path.join(k8s_dir, "admin.key"))

    def req(self, method, path, body=None):
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, json.loads(r.read() or b"null")
        finally:
            c.close()


def roundtrip(fields, k8s_dir):
    errs, api = [], Api(k8s_dir)
    base = "/apis/gpu.deckhouse.io/v1alpha1/physicalgpus"
    for o in full_objects(fields):
        name = o["metadata"]["name"]
        sent = with_junk(o)
        st, got = api.req("POST", base, {k: v for k, v in sent.items() if k != "status"})
        if st != 201:
            errs.append("%s: create: %d %s" % (name, st, (got or {}).get("message")))
            continue
        if got.get("spec") != {}:
            errs.append("%s: spec.junk not pruned on create: %s" % (name, got.get("spec")))
        body = dict(got, status=sent["status"])
        st, got = api.req("PUT", "%s/%s/status" % (base, name), body)
        if st != 200:
            errs.append("%s: status update: %d %s" % (name, st, (got or {}).get("message")))
            continue
        st, got = api.req("GET", "%s/%s" % (base, name))
        if got.get("status") != o["status"]:
            errs.append("%s: status came back as %s" % (name, diff(o["status"], got.get("status"))))
        # ... and what no schema allows is refused, naming the field
        for path, bad in (("currentState.driverType", "Bogus"), ("capabilities.memoryMiB", "lots"),
                          ("conditions", [{"type": "T", "status": "Maybe",
                                           "lastTransitionTime": "yesterday"}])):
            b = copy.deepcopy(got)
            head, leaf = path.rsplit(".", 1) if "." in path else ("", path)
            cur = b.setdefault("status", {})
            for part in filter(None, head.split(".")):
                cur = cur.setdefault(part, {})
            cur[leaf] = bad
            st, r = api.req("PUT", "%s/%s/status" % (base, name), b)
            if st != 422 or "status." + path not in json.dumps(r):
                errs.append("%s: status.%s = %s: %d %s" % (name, path, json.dumps(bad), st,
                                                          (r or {}).get("message")))
        st, _ = api.req("DELETE", "%s/%s" % (base, name))
    return errs


def diff(want, got, path="status"):
    """The first few differences between two JSON values."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got)):
            if k not in got:
                out.append("%s.%s pruned" % (path, k))
            elif k not in want:
                out.append("%s.%s kept (junk)" % (path, k))
            else:
                out += diff(want[k], got[k], path + "." + k)
        return out[:12] if path == "status" else out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return sum((diff(a, b, "%s[%d]" % (path, i)) for i, (a, b) in enumerate(zip(want, got))), [])
    return [] if want == got else ["%s: %s -> %s" % (path, json.dumps(want), json.dumps(got))]


def statuses(crd, files):
    errs, schema = [], version(crd)["schema"]["openAPIV3Schema"]
    n = 0
    for f in files:
        with open(f) as fh:
            docs = json.load(fh)
        for st in docs:
            n += 1
            where = "%s: %s" % (os.path.basename(f), (st.get("pciInfo") or {}).get("address"))
            obj = {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "PhysicalGPU",
                   "metadata": {"name": "x"}, "spec": {}, "status": st}
            kept = srv.schema_prune(schema, copy.deepcopy(obj), root=True)
            if kept != obj:
                errs.append("%s: pruned: %s" % (where, diff(st, kept["status"])))
            causes = []
            srv.schema_causes(schema, obj, "", causes)
            errs += ["%s: %s: %s" % (where, p, m) for p, m in causes]
    if n == 0:
        errs.append("no status at all in %s" % " ".join(files))
    return errs


def selftest(crd, fields):
    """The checks must fail on broken copies of the CRD: a transcribed field
    removed, its type changed, an enum value removed, junk kept in status."""
    errs = []
    schema = lambda c: version(c)["schema"]["openAPIV3Schema"]
    fl = [w for kind, w, src, n in fields if kind == "field" and "." in w[0]]
    leaf = next((w for w in fl if node(schema(crd), w[0]) is not None
                 and node(schema(crd), w[0]).get("type") == "string"), None)
    enum = next((w for w in fl if any(x.startswith("enum=") for x in w[2:])
                 and "enum" in (node(schema(crd), w[0]) or {})), None)
    if leaf is None or enum is None:
        return ["nothing to break: no transcribed string field or enum is in ours"]

    def parent(c, path):
        return node(schema(c), path.rsplit(".", 1)[0]), path.rsplit(".", 1)[1]

    def drop(c):
        p, k = parent(c, leaf[0])
        del p["properties"][k]

    def retype(c):
        node(schema(c), leaf[0])["type"] = "integer"

    def shrink(c):
        want = [x for x in enum[2:] if x.startswith("enum=")][0][5:].split("|")
        node(schema(c), enum[0])["enum"].remove(want[0])

    for what, edit in (("%s removed" % leaf[0], drop), ("%s an integer" % leaf[0], retype),
                       ("%s without one of its values" % enum[0], shrink)):
        c = copy.deepcopy(crd)
        edit(c)
        if not check_fields(c, fields, "R") + check_fields(c, fields, "P"):
            errs.append("the field check passes a CRD with %s" % what)
    c = copy.deepcopy(crd)
    schema(c)["properties"]["status"]["x-kubernetes-preserve-unknown-fields"] = True
    if not check_unknown(c, fields):
        errs.append("the unknown-fields check passes a CRD that keeps junk in status")
    return errs


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    check, crd, fields = sys.argv[1], load_crd(sys.argv[2]), load_fields(sys.argv[3])
    args = sys.argv[4:]
    if check == "names":
        errs = check_names(crd, fields)
    elif check == "fields":
        errs = check_fields(crd, fields, args[0])
    elif check == "unknown":
        errs = check_unknown(crd, fields)
    elif check == "required":
        errs = check_required(crd, fields)
    elif check == "columns":
        errs = check_columns(crd, fields)
    elif check == "roundtrip":
        errs = roundtrip(fields, args[0])
    elif check == "statuses":
        errs = statuses(crd, args)
    elif check == "selftest":
        errs = selftest(crd, fields)
    else:
        sys.exit("unknown check %s" % check)
    for e in errs:
        print(e)
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
