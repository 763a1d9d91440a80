#!/usr/bin/env python3
"""The runner of tests/applets/nfd-master-conformance.sh: upstream
node-feature-discovery's nfd-master test cases, transcribed as data
(tests/applets/data/nfd-master-conformance/*.cases, format in its README),
run through featurebox's nfd-master against the test API server.

  nfd-master-conformance.py SUITE FB W CASES...

FB is the command that runs featurebox (emulator and binary, split on
spaces), W the suite's scratch directory (the test API server already runs,
K8S_DIR in the environment). Prints the harness's PASS/FAIL lines, one per
`expect` (and per `no-status-patch`), and on stderr "# " lines with the
counts per upstream test file and function or context. Exit 0 when nothing
failed.

Every case starts from an empty cluster: its objects are written first, then
its nfd-master starts (so the first list holds all of them), and each
`expect` waits until the node's state is exactly the expected one and
nfd-master has written its record label there (it writes it on every node it
processes, with the same PATCH as the bookkeeping annotations, so a state
that only looks right because nothing happened yet does not pass). Nothing
waits a fixed time.
"""
import glob
import json
import os
import re
import shlex
import signal
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

NFAPI = "/apis/nfd.k8s-sigs.io/v1alpha1"
NSP = "node-feature-discovery"
RECORD = "node-restriction.kubernetes.io/nfd-record"
KINDS = ("label", "annotation", "capacity", "allocatable", "taint")
WAIT_S = 60  # a bound on a hang, not a speed test


class Case:
    def __init__(self, src, line, cid, ref):
        self.src, self.line, self.id, self.ref = src, line, cid, ref
        self.steps = []
        self.not_expressible = None


def parse(path):
    """The cases of one file: a directive starts in column 0, indented lines
    continue it (JSON spans lines that way; expect blocks list states)."""
    cases, cur, last = [], None, None
    src = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for n, raw in enumerate(lines, 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if raw[0] in " \t":
            if last is None:
                raise SystemExit("%s:%d: continuation line outside a directive" % (path, n))
            last["more"].append(raw.strip())
            last["raw"].append(raw)
            continue
        word, _, rest = raw.partition(" ")
        if word == "case":
            cid, _, ref = rest.strip().partition(" ")
            cur = Case(src, n, cid, ref.strip())
            cases.append(cur)
            last = None
            continue
        if cur is None:
            raise SystemExit("%s:%d: %s before the first case" % (path, n, word))
        last = {"op": word, "rest": rest.strip(), "more": [], "raw": [], "line": n}
        cur.steps.append(last)
    for c in cases:
        for s in c.steps:
            if s["op"] == "not-expressible":
                c.not_expressible = " ".join([s["rest"]] + s["more"])
    return cases


class Api:
    """The test API server: the control API for objects and the request log,
    the admin token for ordinary requests."""

    def __init__(self, d):
        self.url = open(os.path.join(d, "url")).read().strip()
        self.token = open(os.path.join(d, "admin.token")).read().strip()
        self.ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))

    def req(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.url + path, data=data, method=method)
        r.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            r.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(r, context=self.ctx, timeout=30) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def put(self, path, obj):
        st, o = self.req("PUT", "/__test/objects" + path, obj)
        if st not in (200, 201):
            raise RuntimeError("PUT %s: %d %s" % (path, st, o))

    def get(self, path):
        st, o = self.req("GET", "/__test/objects" + path)
        return o if st == 200 else None

    def delete(self, path):
        st, o = self.req("DELETE", "/__test/objects" + path)
        if st != 200:
            raise RuntimeError("DELETE %s: %d %s" % (path, st, o))

    def log(self, since=0):
        st, o = self.req("GET", "/__test/log?since=%d" % since)
        return o["items"]

    def seq(self):
        items = self.log()
        return items[-1]["seq"] if items else 0

    def empty(self):
        """Removes every node, NodeFeature, NodeFeatureRule and namespace
        but the built-in ones: the next case starts from nothing."""
        for o in self.get(NFAPI + "/nodefeatures")["items"]:
            md = o["metadata"]
            self.delete("%s/namespaces/%s/nodefeatures/%s" % (NFAPI, md["namespace"], md["name"]))
        for o in self.get(NFAPI + "/nodefeaturerules")["items"]:
            self.delete("%s/nodefeaturerules/%s" % (NFAPI, o["metadata"]["name"]))
        for o in self.get("/api/v1/nodes")["items"]:
            self.delete("/api/v1/nodes/" + o["metadata"]["name"])
        for o in self.get("/api/v1/namespaces")["items"]:
            n = o["metadata"]["name"]
            if n not in ("default", "kube-system", "kube-public", "kube-node-lease"):
                self.delete("/api/v1/namespaces/" + n)


def state(node, kinds):
    """The NFD-relevant part of a Node, one "kind key=value" per line,
    sorted: labels (but the record label), annotations, capacity and
    allocatable entries with a "/" in the name (extended resources), taints
    as key=value:effect."""
    out = []
    if node is None:
        return None
    md, st = node["metadata"], node.get("status", {})
    for k, v in md.get("labels", {}).items():
        if not k.endswith(RECORD):
            out.append("label %s=%s" % (k, v))
    for k, v in md.get("annotations", {}).items():
        out.append("annotation %s=%s" % (k, v))
    for what in ("capacity", "allocatable"):
        for k, v in st.get(what, {}).items():
            if "/" in k:
                out.append("%s %s=%s" % (what, k, v))
    for t in node.get("spec", {}).get("taints", []):
        out.append("taint %s=%s:%s" % (t["key"], t.get("value", ""), t["effect"]))
    return sorted(l for l in out if l.split(" ", 1)[0] in kinds)


def has_record(node):
    return node is not None and any(k.endswith(RECORD) for k in node["metadata"].get("labels", {}))


STATE_RX = re.compile(r"^(%s) [^ ]*=" % "|".join(KINDS))


def states(s):
    """The state lines of an expect block ("KIND key=value")."""
    return [l for l in s["more"] if STATE_RX.match(l)]


def reason(s):
    """The reason of an expect-featurebox: its line and the continuation
    lines that are no state lines."""
    return " ".join([s["rest"]] + [l for l in s["more"] if not STATE_RX.match(l)])


def jarg(s, words):
    """Splits `words` leading words off a directive, the rest (and its
    continuation lines) is one JSON value (None when there is none)."""
    parts = s["rest"].split(None, words)
    head = parts[:words]
    tail = " ".join(parts[words:] + s["more"]).strip()
    return head, (json.loads(tail) if tail else None)


class Runner:
    def __init__(self, suite, fb, w):
        self.suite, self.fb, self.w = suite, fb, w
        self.api = Api(os.environ["K8S_DIR"])
        self.kdir = os.environ["K8S_DIR"]
        self.fails = 0
        self.counts = {}  # (file, group) -> {result: n}

    def out(self, verdict, name, why=""):
        print("%s: %s: %s%s" % (verdict, self.suite, name, " (%s)" % why if why else ""), flush=True)
        if verdict == "FAIL":
            self.fails += 1

    def sanitizer(self):
        reps = glob.glob(os.path.join(self.w, "san", "report*"))
        text = ""
        for r in reps:
            with open(r, errors="replace") as f:
                text += f.read(3000)
            os.unlink(r)
        return text

    # --- the master
    def start(self, c):
        conf = os.path.join(self.w, "conf-%s.yaml" % c.id)
        with open(conf, "w") as f:
            f.write(c.config)
        self.mlog = os.path.join(self.w, "master-%s.log" % c.id)
        env = dict(os.environ, KUBERNETES_NAMESPACE=NSP)
        env.update(c.env)
        cmd = self.fb + ["nfd-master", "--kubeconfig", os.path.join(self.kdir, "kubeconfig-admin"),
                         "--config", conf, "--port", "0"] + c.margs
        self.master = subprocess.Popen(cmd, stdout=open(self.mlog, "w"), stderr=subprocess.STDOUT, env=env)
        self.started = True
        ok = self.until(lambda: "everything listed" in self.masterlog())
        if "unknown key" in self.masterlog():  # a typo in the data, never a silent pass
            raise RuntimeError("nfd-master ignored configuration: %s" % self.masterlog()[:600])
        return ok

    def masterlog(self):
        with open(self.mlog, errors="replace") as f:
            return f.read()

    def stop(self):
        if not getattr(self, "master", None):
            return 0
        self.master.send_signal(signal.SIGTERM)
        try:
            rc = self.master.wait(20)
        except subprocess.TimeoutExpired:
            self.master.kill()
            rc = self.master.wait()
        self.master = None
        return rc

    def until(self, pred, secs=WAIT_S):
        end = time.monotonic() + secs
        while True:
            if pred():
                return True
            if time.monotonic() > end:
                return False
            if self.master is not None and self.master.poll() is not None:
                return pred()
            time.sleep(0.1)

    # --- objects
    def node(self, name, spec):
        spec = spec or {}
        o = {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": name, "labels": spec.get("labels", {}),
                          "annotations": spec.get("annotations", {})},
             "spec": {},
             "status": {"capacity": dict({"cpu": "2", "pods": "110"}, **spec.get("capacity", {})),
                        "allocatable": dict({"cpu": "2", "pods": "110"}, **spec.get("allocatable", {}))}}
        if spec.get("taints"):
            o["spec"]["taints"] = spec["taints"]
        self.api.put("/api/v1/nodes/" + name, o)

    def nodefeature(self, nsname, node, spec):
        """NODE "-": no node-name label; '""': an empty one."""
        ns, name = nsname.split("/")
        labels = {} if node == "-" else {"nfd.node.kubernetes.io/node-name": "" if node == '""' else node}
        self.api.put("%s/namespaces/%s/nodefeatures/%s" % (NFAPI, ns, name), {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": spec or {}})

    def rule(self, name, rules):
        self.api.put("%s/nodefeaturerules/%s" % (NFAPI, name), {
            "apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeatureRule",
            "metadata": {"name": name}, "spec": {"rules": rules}})

    def namespace(self, name, labels, keep=False):
        old = self.api.get("/api/v1/namespaces/" + name)
        if old is not None and keep:
            return
        o = old or {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        o["metadata"]["labels"] = dict(o["metadata"].get("labels", {}), **(labels or {}))
        self.api.put("/api/v1/namespaces/" + name, o)

    def worker(self, node, options):
        empty = os.path.join(self.w, "empty")
        os.makedirs(empty, exist_ok=True)
        conf = os.path.join(self.w, "none.conf")
        open(conf, "a").close()
        env = dict(os.environ, KUBERNETES_NAMESPACE=NSP)
        r = subprocess.run(self.fb + ["nfd-worker", "--kubeconfig", os.path.join(self.kdir, "kubeconfig-admin"),
                                      "--node-name", node, "--oneshot", "--config", conf,
                                      "--host-prefix", empty + "/", "--features-dir", empty,
                                      "--options", json.dumps(options)],
                           env=env, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("nfd-worker --oneshot for %s: exit %d: %s" % (node, r.returncode, r.stderr[-600:]))

    # --- one case
    def run_case(self, c):
        group = c.ref.split(":")[0] if c.ref else "?"
        key = (c.src, group)
        cnt = self.counts.setdefault(key, {"cases": 0, "passing": 0, "known-different": 0,
                                           "not-expressible": 0, "failing": 0})
        if c.not_expressible:
            # one entry may stand for a whole table: "(N cases)" in its title
            m = re.search(r"\((\d+) (?:cases|Its)\)", c.ref)
            cnt["cases"] += int(m.group(1)) if m else 1
            cnt["not-expressible"] += int(m.group(1)) if m else 1
            return
        cnt["cases"] += 1
        c.margs, c.env, c.config = [], {}, ""
        self.master, self.started = None, False
        result = "passing"
        name = "%s: %s" % (c.src.split(".")[0], c.id)
        try:
            self.api.empty()
            self.namespace(NSP, None)
            self.since = self.api.seq()
            steps = c.steps
            i = 0
            nexp = 0
            while i < len(steps):
                s = steps[i]
                op = s["op"]
                if op == "master":
                    c.margs += shlex.split(" ".join([s["rest"]] + s["more"]))
                elif op == "env":
                    k, _, v = s["rest"].partition("=")
                    c.env[k] = v
                elif op == "config":
                    c.config = textwrap.dedent("\n".join(s["raw"])) + "\n"
                elif op == "namespace":
                    (n,), labels = jarg(s, 1)
                    self.namespace(n, labels)
                elif op == "label-namespace":
                    n, k, v = s["rest"].split()
                    o = self.api.get("/api/v1/namespaces/" + n)
                    if v == "-":
                        o["metadata"].get("labels", {}).pop(k, None)
                    else:
                        o["metadata"].setdefault("labels", {})[k] = v
                    self.api.put("/api/v1/namespaces/" + n, o)
                elif op == "node":
                    (n,), spec = jarg(s, 1)
                    self.node(n, spec)
                elif op == "nodefeature":
                    (nn, node), spec = jarg(s, 2)
                    self.nodefeature(nn, node, spec)
                elif op == "rule":
                    (n,), rules = jarg(s, 1)
                    self.rule(n, rules)
                elif op == "worker":
                    (node,), options = jarg(s, 1)
                    self.worker(node, options or {})
                elif op == "delete":
                    what, obj = s["rest"].split()
                    if what == "nodefeature":
                        ns, n = obj.split("/")
                        self.api.delete("%s/namespaces/%s/nodefeatures/%s" % (NFAPI, ns, n))
                    elif what == "rule":
                        self.api.delete("%s/nodefeaturerules/%s" % (NFAPI, obj))
                    else:
                        raise RuntimeError("line %d: delete what? %s" % (s["line"], what))
                elif op == "patch-node":
                    (n,), patch = jarg(s, 1)
                    st, o = self.api.req("PATCH", "/api/v1/nodes/" + n, patch, "application/json-patch+json")
                    if st != 200:
                        raise RuntimeError("line %d: PATCH node %s: %d %s" % (s["line"], n, st, o))
                elif op == "start":
                    if not self.started and not self.start(c):
                        raise RuntimeError("nfd-master did not list everything: %s" % self.masterlog()[-800:])
                elif op in ("expect", "no-status-patch"):
                    if not self.started and not self.start(c):
                        raise RuntimeError("nfd-master did not list everything: %s" % self.masterlog()[-800:])
                    nexp += 1
                    fbs = None
                    if op == "expect" and i + 1 < len(steps) and steps[i + 1]["op"] == "expect-featurebox":
                        fbs = steps[i + 1]
                        i += 1
                    r = self.expect(s, fbs, "%s: %d" % (name, nexp)) if op == "expect" else \
                        self.no_status_patch(s, "%s: %d" % (name, nexp))
                    if r == "failing" or (r == "known-different" and result == "passing"):
                        result = r
                elif op in ("not-expressible", "expect-featurebox"):
                    if op == "expect-featurebox":
                        raise RuntimeError("line %d: expect-featurebox without an expect" % s["line"])
                else:
                    raise RuntimeError("line %d: unknown directive %s" % (s["line"], op))
                i += 1
            rc = self.stop()
            if rc != 0:
                self.out("FAIL", "%s: nfd-master exits 0 on SIGTERM" % name, "exit %d: %s" % (rc, self.masterlog()[-600:]))
                result = "failing"
        except Exception as e:  # a broken case is a failure, never a crash of the suite
            self.stop()
            self.out("FAIL", "%s: runs" % name, "%s: %s" % (type(e).__name__, e))
            result = "failing"
        san = self.sanitizer()
        if san:
            self.out("FAIL", "%s: no sanitizer report" % name, san[:2000].replace("\n", " | "))
            result = "failing"
        cnt[result] += 1

    def expect(self, s, fbs, name):
        words = s["rest"].split()
        node = words[0]
        kinds = tuple(words[1].split(",")) if len(words) > 1 else KINDS
        want = sorted(states(s))
        fb = sorted(states(fbs)) if fbs else None
        desc = "%s (line %d: %s %s)" % (name, s["line"], node, ",".join(kinds))
        got = [None]

        def reached():
            n = self.api.get("/api/v1/nodes/" + node)
            got[0] = state(n, kinds)
            return has_record(n) and (got[0] == want or (fb is not None and got[0] == fb))

        ok = self.until(reached)
        if ok and got[0] == want:
            if fb is not None:
                self.out("FAIL", desc, "known-different case now agrees with upstream: make it a plain expect")
                return "failing"
            self.out("PASS", desc)
            return "passing"
        if ok:
            self.out("PASS", desc + " known-different: " + reason(fbs))
            return "known-different"
        self.out("FAIL", desc, "want %s%s, got %s%s" % (
            want, "" if fb is None else " (or featurebox's known %s)" % fb, got[0],
            "" if got[0] is None or has_record(self.api.get("/api/v1/nodes/" + node)) else ", no record label"))
        return "failing"

    def no_status_patch(self, s, name):
        node = s["rest"].split()[0]
        n = None

        def done():
            nonlocal n
            n = self.api.get("/api/v1/nodes/" + node)
            return has_record(n)

        if not self.until(done):
            self.out("FAIL", name, "nfd-master never processed %s" % node)
            return "failing"
        hits = [e for e in self.api.log(self.since) if e["path"] == "/api/v1/nodes/%s/status" % node and e["method"] != "GET"]
        if hits:
            self.out("FAIL", "%s (line %d: no status write on %s)" % (name, s["line"], node),
                     "%s" % [(e["method"], e["status"]) for e in hits])
            return "failing"
        self.out("PASS", "%s (line %d: no status write on %s)" % (name, s["line"], node))
        return "passing"


def main():
    suite, fb, w = sys.argv[1], sys.argv[2].split(), sys.argv[3]
    r = Runner(suite, fb, w)
    for path in sys.argv[4:]:
        for c in parse(path):
            if re.search(os.environ.get("FB_CONFORMANCE_ONLY", ""), c.id):
                r.run_case(c)
    tot = {}
    for (src, group), cnt in sorted(r.counts.items()):
        print("# %s %s: %s" % (src, group, ", ".join("%s %d" % kv for kv in cnt.items())), file=sys.stderr)
        for k, v in cnt.items():
            tot[k] = tot.get(k, 0) + v
    print("# all: %s" % ", ".join("%s %d" % kv for kv in tot.items()), file=sys.stderr)
    return 1 if r.fails else 0


if __name__ == "__main__":
    sys.exit(main())
