#!/usr/bin/env python3
"""tests/k8s/test_server.py: self-tests of the test API server (stdlib only).

Starts real servers (tests/k8s/server.py) in a temporary directory and talks to them
with http.client + ssl.  Prints "PASS: k8s/server: NAME" or "FAIL: k8s/server: NAME
(detail)" per check (SKIP where the machine lacks IPv6); exits 0 only if all pass.

    python3 tests/k8s/test_server.py [-k SUBSTRING] [--keep]
"""

import base64
import contextlib
import http.client
import importlib.machinery
import importlib.util
import io
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "server.py")
CTL = os.path.join(HERE, "ctl")
SUITE = "k8s/server"

fails = 0
passes = 0


def report(ok, name, detail=""):
    global fails, passes
    if ok:
        passes += 1
        print("PASS: %s: %s" % (SUITE, name), flush=True)
    else:
        fails += 1
        detail = " ".join(str(detail).split())[:600]
        print("FAIL: %s: %s (%s)" % (SUITE, name, detail), flush=True)


def check(name, cond, detail=""):
    report(bool(cond), name, detail)
    return bool(cond)


def skip(name, why):
    print("SKIP: %s: %s (%s)" % (SUITE, name, why), flush=True)


# ---------------------------------------------------------------------------

class Srv:
    def __init__(self, d, *args):
        self.dir = d
        os.makedirs(d, exist_ok=True)
        self.log = open(os.path.join(d, "server.log"), "ab")
        self.p = subprocess.Popen([sys.executable, SERVER, "--dir", d] + list(args),
                                  stdout=self.log, stderr=self.log)

    def wait(self, timeout=120):  # a bound on a hang: a loaded machine starts slowly
        end = time.time() + timeout
        while not os.path.exists(os.path.join(self.dir, "ready")):
            if self.p.poll() is not None:
                raise RuntimeError("server exited %s: %s" % (self.p.returncode, self.logtail()))
            if time.time() > end:
                raise RuntimeError("server not ready: %s" % self.logtail())
            time.sleep(0.02)
        self.port = int(open(os.path.join(self.dir, "port")).read())
        self.token = open(os.path.join(self.dir, "admin.token")).read().strip()
        self.ca = os.path.join(self.dir, "ca.crt")
        return self

    def logtail(self):
        try:
            with open(os.path.join(self.dir, "server.log"), "rb") as f:
                return f.read()[-800:].decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        return self.p.returncode

    def ctx(self, ca=None, cert=None):
        c = ssl.create_default_context(cafile=ca or self.ca)
        if cert:
            c.load_cert_chain(os.path.join(self.dir, cert + ".crt"), os.path.join(self.dir, cert + ".key"))
        return c

    def conn(self, ca=None, cert=None, host="127.0.0.1", timeout=10):
        return http.client.HTTPSConnection(host, self.port, context=self.ctx(ca, cert), timeout=timeout)

    def ctl(self, *args, stdin=None):
        """tests/k8s/ctl run in-process (fast): (exit status, stdout, stderr)."""
        m = ctl_module()
        out, err = io.StringIO(), io.StringIO()
        old_in = sys.stdin
        sys.stdin = io.StringIO(stdin or "")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = m.main([self.dir] + list(args))
                except m.CtlError as e:
                    print("ctl: %s" % e, file=sys.stderr)
                    rc = 1
                except SystemExit as e:
                    rc = e.code if isinstance(e.code, int) else 1
        finally:
            sys.stdin = old_in
        return rc, out.getvalue(), err.getvalue()

    def ctl_proc(self, *args, stdin=None):
        """tests/k8s/ctl as a program."""
        p = subprocess.run([sys.executable, CTL, self.dir] + list(args), input=stdin,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr


_CTL = []


def ctl_module():
    if not _CTL:
        loader = importlib.machinery.SourceFileLoader("k8s_ctl", CTL)
        spec = importlib.util.spec_from_loader("k8s_ctl", loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        _CTL.append(mod)
    return _CTL[0]


class Resp:
    def __init__(self, status, headers, raw):
        self.status, self.headers, self.raw = status, headers, raw
        try:
            self.json = json.loads(raw) if raw else None
        except ValueError:
            self.json = None

    def get(self, *path):
        cur = self.json
        for p in path:
            if isinstance(cur, dict):
                cur = cur.get(p)
            elif isinstance(cur, list) and isinstance(p, int) and p < len(cur):
                cur = cur[p]
            else:
                return None
        return cur

    def __repr__(self):
        return "HTTP %s %s" % (self.status, self.raw[:300].decode(errors="replace"))


class Client:
    """One keep-alive connection; token=None sends no Authorization header."""

    def __init__(self, srv, token="admin", cert=None):
        self.srv = srv
        self.token = srv.token if token == "admin" else token
        self.c = srv.conn(cert=cert)

    def req(self, method, path, body=None, ctype=None, headers=None):
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            h["Content-Type"] = ctype or "application/json"
        elif ctype:
            h["Content-Type"] = ctype
        h.update(headers or {})
        self.c.request(method, path, body=data, headers=h)
        r = self.c.getresponse()
        return Resp(r.status, r.headers, r.read())

    def close(self):
        self.c.close()


def node(name, labels=None, **kw):
    o = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if labels is not None:
        o["metadata"]["labels"] = labels
    o.update(kw)
    return o


def cm(name, ns="default", data=None, **md):
    o = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(name=name, namespace=ns, **md)}
    if data is not None:
        o["data"] = data
    return o


PGPU = "/apis/gpu.deckhouse.io/v1alpha1/physicalgpus"


def pgpu(name, spec=None, status=None):
    o = {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "PhysicalGPU",
         "metadata": {"name": name}, "spec": spec if spec is not None else {}}
    if status is not None:
        o["status"] = status
    return o


def is_status(r, code, reason):
    return (r.status == code and r.get("kind") == "Status" and r.get("apiVersion") == "v1"
            and r.get("status") == "Failure" and r.get("code") == code and r.get("reason") == reason
            and isinstance(r.get("message"), str))


class Watch:
    """A watch stream read by a thread: events (type, object) and how it ended."""

    def __init__(self, srv, path, token=None, timeout=15):
        self.events = []
        self.end = None           # "eof" (clean chunked end), or the exception name
        self.status = None
        self.c = srv.conn(timeout=timeout)
        self.c.request("GET", path, headers={"Authorization": "Bearer " + (token or srv.token)})
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.cond = threading.Condition()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        try:
            if self.status != 200:
                self.body = self.r.read()
                self.end = "status"
                return
            buf = b""
            while True:
                # read1, not readline: readline turns a cut chunked stream into a clean EOF
                data = self.r.read1(65536)
                if not data:
                    self.end = "eof" if not buf else "partial-line"
                    break
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    ev = json.loads(line)
                    with self.cond:
                        self.events.append((ev["type"], ev["object"], time.time()))
                        self.cond.notify_all()
        except Exception as e:
            self.end = type(e).__name__
        finally:
            with self.cond:
                self.cond.notify_all()

    def wait_for(self, pred, timeout=5):
        end = time.time() + timeout
        with self.cond:
            while True:
                for e in self.events:
                    if pred(e):
                        return e
                left = end - time.time()
                if left <= 0 or self.end is not None:
                    for e in self.events:
                        if pred(e):
                            return e
                    return None
                self.cond.wait(left)

    def join(self, timeout=10):
        self.t.join(timeout)
        return not self.t.is_alive()

    def types(self):
        return [e[0] for e in self.events if e[0] != "BOOKMARK"]

    def close(self):
        try:
            self.c.sock and self.c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.c.close()


# ---------------------------------------------------------------------------
# checks

def t_files(S):
    d = S.dir
    names = ["port", "url", "ca.crt", "other-ca.crt", "admin.token", "kubeconfig-admin",
             "kubeconfig-cert", "kubeconfig-node1", "kubeconfig-node1-cert", "kubeconfig-node2", "admin.crt",
             "admin.key", "node1.crt", "node1.key", "served.crt", "ready"]
    missing = [n for n in names if not os.path.isfile(os.path.join(d, n))]
    check("DIR has port, ca.crt, tokens, kubeconfigs, ready", not missing, "missing %s" % missing)
    link = os.path.join(d, "tokens", "node1")
    check("DIR/tokens/node1 is a symlink to a data file (kubelet style)",
          os.path.islink(link) and os.path.isfile(os.path.realpath(link)), link)
    ka = open(os.path.join(d, "kubeconfig-admin")).read()
    check("kubeconfig-admin: server URL, CA file, token",
          "server: https://127.0.0.1:%d" % S.port in ka and "certificate-authority: %s" % S.ca in ka
          and "token: " + S.token in ka, ka)
    kc = open(os.path.join(d, "kubeconfig-cert")).read()
    check("kubeconfig-cert: inline CA, client certificate and key",
          all(k + ": " in kc for k in ("certificate-authority-data", "client-certificate-data",
                                       "client-key-data")) and
          base64.b64encode(open(S.ca, "rb").read()).decode() in kc, kc[:200])
    kn = open(os.path.join(d, "kubeconfig-node1")).read()
    check("kubeconfig-node1: tokenFile DIR/tokens/node1", "tokenFile: %s" % link in kn, kn)
    ak = open(os.path.join(d, "admin.key")).read()
    nk = open(os.path.join(d, "node1.key")).read()
    check("client keys in PKCS#1 (admin, RSA) and SEC1 (node1, EC) form",
          "BEGIN RSA PRIVATE KEY" in ak and "BEGIN EC PRIVATE KEY" in nk)


def tls_try(port, ca, host="127.0.0.1", ciphers=None, sni=None):
    """None on a verified handshake, else the error text."""
    ctx = ssl.create_default_context(cafile=ca)
    if ciphers:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(ciphers)
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            with ctx.wrap_socket(s, server_hostname=sni or host):
                return None
    except (ssl.SSLError, ssl.CertificateError, OSError) as e:
        return "%s: %s" % (type(e).__name__, e)


def t_tls(S, extra):
    e = tls_try(S.port, S.ca)
    check("TLS: RSA server certificate verifies for 127.0.0.1 with DIR/ca.crt", e is None, e)
    e = tls_try(S.port, S.ca, "localhost")
    check("TLS: certificate verifies for localhost", e is None, e)
    e = tls_try(S.port, S.ca, sni="kubernetes.default.svc")
    check("TLS: certificate verifies for kubernetes.default.svc", e is None, e)
    e = tls_try(S.port, S.ca, ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    check("TLS: --cert rsa serves an RSA key (ECDHE-RSA suite negotiates)", e is None, e)
    e = tls_try(S.port, os.path.join(S.dir, "other-ca.crt"))
    check("TLS: refused when verified against an unrelated CA (other-ca.crt)",
          e and "CERTIFICATE_VERIFY_FAILED" in e, e)
    ec = extra.get("ecdsa")
    if ec:
        e = tls_try(ec.port, ec.ca, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256")
        check("TLS: --cert ecdsa serves a P-256 key (ECDHE-ECDSA suite negotiates)", e is None, e)
        e = tls_try(ec.port, ec.ca, ciphers="ECDHE-RSA-AES128-GCM-SHA256")
        check("TLS: --cert ecdsa offers no RSA key", e is not None, "handshake succeeded")
        c = Client(ec)
        r = c.req("GET", "/api/v1/namespaces")
        check("TLS: --cert ecdsa server answers API requests", r.status == 200, r)
        c.close()
    ex = extra.get("expired")
    if ex:
        e = tls_try(ex.port, ex.ca)
        check("TLS: --cert expired is refused (certificate has expired)",
              e and "expired" in e, e)
    wn = extra.get("wrongname")
    if wn:
        e1 = tls_try(wn.port, wn.ca)
        e2 = tls_try(wn.port, wn.ca, "localhost")
        check("TLS: --cert wrongname is refused for 127.0.0.1 and localhost",
              e1 and e2 and "mismatch" in (e1 + e2).lower(), "%s / %s" % (e1, e2))
        e = tls_try(wn.port, wn.ca, sni="wrong.example")
        check("TLS: --cert wrongname verifies only as wrong.example", e is None, e)
    v6 = extra.get("v6")
    if v6 is not None:
        e = tls_try(v6.port, v6.ca, "::1")
        check("TLS: --listen ::1 serves on [::1] and the certificate has IP:::1", e is None, e)
        check("TLS: IPv6 url and kubeconfig use [::1]",
              open(os.path.join(v6.dir, "url")).read().strip() == "https://[::1]:%d" % v6.port)


def t_auth(S):
    c = Client(S, token=None)
    r = c.req("GET", "/api/v1/nodes")
    check("auth: no credentials -> 401 Status Unauthorized", is_status(r, 401, "Unauthorized"), r)
    c.close()
    c = Client(S, token="not-a-token")
    r = c.req("GET", "/api/v1/nodes")
    check("auth: unknown token -> 401", is_status(r, 401, "Unauthorized"), r)
    c.close()
    c = Client(S, token=None, cert="admin")
    r = c.req("GET", "/api/v1/nodes")
    check("auth: admin client certificate (CN=admin, O=system:masters) -> 200", r.status == 200, r)
    r = c.req("GET", "/__test/info")
    check("auth: control API accepts the admin client certificate", r.status == 200, r)
    c.close()
    c = Client(S, token=None, cert="node1")
    r = c.req("GET", "/api/v1/nodes")
    check("auth: node1 client certificate may list nodes", r.status == 200, r)
    r = c.req("DELETE", "/api/v1/nodes/x")
    check("auth: node1 certificate may not delete nodes -> 403 Forbidden",
          is_status(r, 403, "Forbidden") and 'User "system:node:node1" cannot delete resource '
          '"nodes"' in r.get("message"), r)
    c.close()
    tok1 = open(os.path.join(S.dir, "tokens", "node1")).read().strip()
    c = Client(S, token=tok1)
    r = c.req("GET", "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/default/nodefeatures")
    check("auth: node1 token may list nodefeatures", r.status == 200, r)
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", cm("x"))
    check("auth: node1 token may not create configmaps -> 403",
          is_status(r, 403, "Forbidden") and 'in the namespace "default"' in r.get("message"), r)
    r = c.req("GET", "/__test/info")
    check("auth: control API refuses non-admin users -> 403", r.status == 403, r)
    c.close()
    # rules via the control API
    rc, out, err = S.ctl("set-rules", "node1", "-", stdin=json.dumps(
        [{"verbs": ["create", "get"], "resources": ["configmaps"], "namespaces": ["default"]}]))
    c = Client(S, token=tok1)
    r1 = c.req("POST", "/api/v1/namespaces/default/configmaps", cm("rules-cm"))
    r2 = c.req("GET", "/api/v1/nodes")
    r3 = c.req("POST", "/api/v1/namespaces/kube-system/configmaps", cm("rules-cm", "kube-system"))
    check("auth: ctl set-rules replaces a user's allow rules (namespaced rule honoured)",
          rc == 0 and r1.status == 201 and r2.status == 403 and r3.status == 403,
          "%s %s %s %s %s" % (rc, err, r1, r2, r3))
    c.close()
    # restore the defaults used later
    S.ctl("set-rules", "node1", "-", stdin=json.dumps([
        {"verbs": ["get", "list", "watch", "patch", "update"], "resources": ["nodes"]},
        {"verbs": ["get", "patch", "update"], "resources": ["nodes/status", "physicalgpus/status"]},
        {"verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
         "resources": ["nodefeatures", "physicalgpus"]},
        {"verbs": ["get", "list", "watch"], "resources": ["configmaps"]}]))
    # rotation: symlink swap, old token revoked
    link = os.path.join(S.dir, "tokens", "node1")
    target1 = os.path.realpath(link)
    rc, out, err = S.ctl("rotate-token", "node1")
    tok2 = out.strip()
    target2 = os.path.realpath(link)
    check("auth: rotate-token swaps the symlink to a new data file holding the new token",
          rc == 0 and os.path.islink(link) and target1 != target2 and
          open(link).read().strip() == tok2 and tok2 != tok1 and not os.path.exists(target1),
          "%s %s %s %s" % (rc, err, target1, target2))
    c = Client(S, token=tok1)
    r = c.req("GET", "/api/v1/nodes")
    check("auth: the rotated-out token gets 401", is_status(r, 401, "Unauthorized"), r)
    c.close()
    c = Client(S, token=tok2)
    r = c.req("GET", "/api/v1/nodes")
    check("auth: the new token (read from the file again) works", r.status == 200, r)
    c.close()
    rc, out, err = S.ctl("rotate-token", "node1", "--grace", "0.6")
    tok3 = out.strip()
    c = Client(S, token=tok2)
    r1 = c.req("GET", "/api/v1/nodes")
    time.sleep(0.8)  # (the grace period running out is the test)
    r2 = c.req("GET", "/api/v1/nodes")
    check("auth: rotate-token --grace keeps the old token valid for the grace period only",
          r1.status == 200 and r2.status == 401, "%s %s" % (r1, r2))
    c.close()
    rc, out, err = S.ctl("revoke-token", tok3)
    c = Client(S, token=tok3)
    r = c.req("GET", "/api/v1/nodes")
    check("auth: revoke-token -> 401", rc == 0 and r.status == 401, "%s %s %s" % (rc, err, r))
    c.close()
    rc, out, err = S.ctl("rotate-token", "node1")
    c = Client(S, token=open(link).read().strip())
    r = c.req("GET", "/api/v1/nodes")
    check("auth: a user whose tokens were all revoked gets a new one by rotation", r.status == 200, r)
    c.close()


def t_crud(S):
    c = Client(S)
    r = c.req("POST", "/api/v1/nodes", node("crud-1", {"a": "1"}, spec={"podCIDR": "10.0.0.0/24"}))
    md = r.get("metadata") or {}
    check("create: 201 with uid, creationTimestamp, resourceVersion, generation 1",
          r.status == 201 and md.get("uid") and md.get("creationTimestamp", "").endswith("Z") and
          md.get("resourceVersion", "").isdigit() and md.get("generation") == 1 and
          r.get("kind") == "Node" and r.get("apiVersion") == "v1", r)
    rv1 = md.get("resourceVersion", "0")
    r = c.req("POST", "/api/v1/nodes", node("crud-1"))
    check("create: existing name -> 409 AlreadyExists",
          is_status(r, 409, "AlreadyExists") and r.get("details", "name") == "crud-1" and
          r.get("details", "kind") == "nodes", r)
    r = c.req("GET", "/api/v1/nodes/crud-1")
    check("get: 200 with the stored object", r.status == 200 and r.get("metadata", "uid") == md.get("uid"), r)
    r = c.req("GET", "/api/v1/nodes/nope")
    check("get: missing -> 404 NotFound with details",
          is_status(r, 404, "NotFound") and r.get("message") == 'nodes "nope" not found' and
          r.get("details", "name") == "nope", r)
    r = c.req("GET", PGPU + "/nope")
    check("get: missing custom resource -> 404 naming resource.group",
          is_status(r, 404, "NotFound") and r.get("message") ==
          'physicalgpus.gpu.deckhouse.io "nope" not found' and
          r.get("details", "group") == "gpu.deckhouse.io", r)
    # update
    obj = c.req("GET", "/api/v1/nodes/crud-1").json
    obj["metadata"]["labels"]["b"] = "2"
    r = c.req("PUT", "/api/v1/nodes/crud-1", obj)
    rv2 = r.get("metadata", "resourceVersion") or "0"
    check("update: 200, new resourceVersion from the global counter, generation unchanged by labels",
          r.status == 200 and int(rv2) > int(rv1) and r.get("metadata", "generation") == 1, r)
    r = c.req("PUT", "/api/v1/nodes/crud-1", obj)
    check("update: stale resourceVersion -> 409 Conflict",
          is_status(r, 409, "Conflict") and "the object has been modified" in r.get("message"), r)
    obj2 = dict(obj)
    obj2["metadata"] = dict(obj["metadata"])
    del obj2["metadata"]["resourceVersion"]
    obj2["spec"] = {"podCIDR": "10.0.1.0/24"}
    r = c.req("PUT", "/api/v1/nodes/crud-1", obj2)
    check("update: built-in without resourceVersion is unconditional; spec change bumps generation",
          r.status == 200 and r.get("metadata", "generation") == 2, r)
    r = c.req("PUT", "/api/v1/nodes/other", obj2)
    check("update: name in body differs from URL -> 400 BadRequest", is_status(r, 400, "BadRequest"), r)
    o3 = node("crud-missing")
    r = c.req("PUT", "/api/v1/nodes/crud-missing", o3)
    check("update: missing object -> 404", is_status(r, 404, "NotFound"), r)
    r = c.req("POST", "/api/v1/nodes", node("crud-rv", metadata={"name": "crud-rv", "resourceVersion": "5"}))
    check("create: resourceVersion set -> 500 as the apiserver", r.status == 500 and
          "resourceVersion should not be set" in (r.get("message") or ""), r)
    r = c.req("POST", "/api/v1/nodes", {"metadata": {"name": "crud-nokind"}})
    check("create: built-in without apiVersion/kind is defaulted from the URL",
          r.status == 201 and r.get("kind") == "Node", r)
    r = c.req("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}})
    check("create: wrong kind -> 400", is_status(r, 400, "BadRequest"), r)
    r = c.req("POST", PGPU, {"metadata": {"name": "nokind"}})
    check("create: custom resource without apiVersion/kind -> 400", is_status(r, 400, "BadRequest"), r)
    r = c.req("POST", "/api/v1/nodes", node("x", spec={}, metadata={"generateName": "gen-"}))
    check("create: generateName", r.status == 201 and r.get("metadata", "name", ).startswith("gen-")
          and len(r.get("metadata", "name")) == 9, r)
    # namespaced
    r = c.req("POST", "/api/v1/namespaces/nope/configmaps", cm("a", "nope"))
    check("create: in a missing namespace -> 404 namespaces not found",
          is_status(r, 404, "NotFound") and 'namespaces "nope"' in r.get("message"), r)
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", cm("a", "kube-system"))
    check("create: namespace in body differs from URL -> 400", is_status(r, 400, "BadRequest"), r)
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", cm("cm1", data={"k": "v"}))
    check("create: configmap 201 with metadata.namespace", r.status == 201 and
          r.get("metadata", "namespace") == "default", r)
    r = c.req("GET", "/api/v1/configmaps")
    check("list: namespaced resource across all namespaces; items carry no kind (built-in)",
          r.status == 200 and r.get("kind") == "ConfigMapList" and
          any(i["metadata"]["name"] == "cm1" for i in r.get("items")) and
          all("kind" not in i for i in r.get("items")), r)
    r = c.req("GET", "/api/v1/configmaps/cm1")
    check("get: namespaced item without namespace -> 404", r.status == 404, r)
    # delete
    r = c.req("DELETE", "/api/v1/namespaces/default/configmaps/cm1")
    check("delete: built-in -> 200 Status Success with details",
          r.status == 200 and r.get("status") == "Success" and r.get("details", "name") == "cm1", r)
    r = c.req("DELETE", "/api/v1/namespaces/default/configmaps/cm1")
    check("delete: missing -> 404", is_status(r, 404, "NotFound"), r)
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", cm("fin", finalizers=["test/x"]))
    r = c.req("DELETE", "/api/v1/namespaces/default/configmaps/fin")
    r2 = c.req("GET", "/api/v1/namespaces/default/configmaps/fin")
    check("delete: with finalizers sets deletionTimestamp and keeps the object",
          r.status == 200 and r.get("metadata", "deletionTimestamp") and r2.status == 200, r)
    r = c.req("PATCH", "/api/v1/namespaces/default/configmaps/fin",
              {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    r2 = c.req("GET", "/api/v1/namespaces/default/configmaps/fin")
    check("delete: removing the last finalizer deletes the object", r.status == 200 and
          r2.status == 404, "%s %s" % (r, r2))
    r = c.req("DELETE", "/api/v1/nodes/crud-1", {"apiVersion": "v1", "kind": "DeleteOptions",
                                                "preconditions": {"uid": "wrong"}})
    check("delete: failed uid precondition -> 409", is_status(r, 409, "Conflict"), r)
    # custom resources
    r = c.req("POST", PGPU, pgpu("crud-gpu", {"x": 1}))
    o = r.json or {}
    o.get("metadata", {}).pop("resourceVersion", None)
    r = c.req("PUT", PGPU + "/crud-gpu", o)
    check("update: custom resource without resourceVersion -> 422 (as the apiserver)",
          is_status(r, 422, "Invalid") and "metadata.resourceVersion" in r.get("message"), r)
    r = c.req("DELETE", PGPU + "/crud-gpu")
    check("delete: custom resource returns the deleted object",
          r.status == 200 and r.get("kind") == "PhysicalGPU", r)
    # requests the server must refuse cleanly
    r = c.req("POST", "/api/v1/nodes", b'{"apiVersion": "v1", "kind": ')
    check("malformed JSON -> 400 Status", is_status(r, 400, "BadRequest"), r)
    r = c.req("POST", "/api/v1/nodes", b"apiVersion: v1", "application/yaml")
    check("wrong content type -> 415 Status", is_status(r, 415, "UnsupportedMediaType"), r)
    r = c.req("GET", "/api/v1/nodes", headers={"Accept": "application/vnd.kubernetes.protobuf"})
    check("Accept without JSON -> 406", r.status == 406 and r.get("kind") == "Status", r)
    r = c.req("GET", "/api/v1/widgets")
    check("unknown resource -> 404 Status", is_status(r, 404, "NotFound"), r)
    r = c.req("GET", "/no/such/path")
    check("unknown path -> 404 Status", is_status(r, 404, "NotFound"), r)
    r = c.req("POST", "/api/v1/nodes/crud-1", node("crud-1"))
    check("POST to an item -> 405 Status", r.status == 405 and r.get("kind") == "Status", r)
    r = c.req("PUT", "/api/v1/nodes/crud-1/status2", node("crud-1"))
    check("unknown subresource -> 404", r.status == 404, r)
    c.close()
    # keep-alive: several requests share one TCP connection
    c = Client(S)
    c.req("GET", "/api/v1/nodes")
    s1 = c.c.sock
    c.req("GET", "/api/v1/nodes/nope")
    c.req("POST", "/api/v1/nodes", b"{bad")
    check("HTTP/1.1 keep-alive: one connection serves successive requests, errors included",
          c.c.sock is s1 and s1 is not None)
    c.close()
    # a malformed request line gets a Status, not HTML
    with socket.create_connection(("127.0.0.1", S.port), timeout=5) as raw:
        with S.ctx().wrap_socket(raw, server_hostname="127.0.0.1") as t:
            t.sendall(b"GARBAGE\r\n\r\n")
            data = b""
            while True:
                d = t.recv(65536)
                if not d:
                    break
                data += d
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        st = json.loads(body)
    except ValueError:
        st = None
    check("malformed request line -> 400 with a Status body", head.startswith(b"HTTP/1.") and
          b" 400 " in head.split(b"\r\n")[0] and isinstance(st, dict) and st.get("kind") == "Status",
          data[:300])
    # bodies over 3 MiB and objects over 1.5 MiB
    c = Client(S)
    big = cm("big", data={"k": "x" * (3 * 1024 * 1024 + 10)})
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", big)
    check("request body over 3 MiB -> 413", r.status == 413 and r.get("kind") == "Status", r)
    c.close()
    c = Client(S)
    big = cm("big", data={"k": "x" * (1600 * 1024)})
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", big)
    check("object over 1.5 MiB -> 500 from etcd, as a real apiserver answers",
          is_status(r, 500, "InternalError") and r.get("message") == "etcdserver: request is too large", r)
    r = c.req("GET", "/api/v1/namespaces/default/configmaps/big")
    check("object over 1.5 MiB: not stored", is_status(r, 404, "NotFound"), r)
    ok = cm("big", data={"k": "x" * (1400 * 1024)})
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", ok)
    check("object of 1.4 MiB: stored", r.status == 201, r)
    ok["data"]["k"] = "x" * (1600 * 1024)
    ok["metadata"]["resourceVersion"] = r.get("metadata", "resourceVersion")
    r = c.req("PUT", "/api/v1/namespaces/default/configmaps/big", ok)
    check("update to over 1.5 MiB -> 500 from etcd", is_status(r, 500, "InternalError"), r)
    r = c.req("PATCH", "/api/v1/namespaces/default/configmaps/big",
              {"data": {"k2": "y" * (200 * 1024)}}, ctype="application/merge-patch+json")
    check("merge patch to over 1.5 MiB -> 500 from etcd", is_status(r, 500, "InternalError"), r)
    r = c.req("DELETE", "/api/v1/namespaces/default/configmaps/big")
    c.close()


def names(r):
    return sorted(i["metadata"]["name"] for i in (r.get("items") or []))


def t_namespaces(S):
    """Namespaces: the kubernetes.io/metadata.name label the apiserver sets, labels in list
    and watch selectors (nfd-master's restrictions.nodeFeatureNamespaceSelector)."""
    c = Client(S)
    M = "application/merge-patch+json"
    KEY = "kubernetes.io/metadata.name"
    r = c.req("GET", "/api/v1/namespaces/kube-system")
    check("namespaces: the built-in ones carry kubernetes.io/metadata.name",
          r.status == 200 and (r.get("metadata", "labels") or {}).get(KEY) == "kube-system", r)
    r = c.req("POST", "/api/v1/namespaces", {"metadata": {"name": "nsl-a", "labels": {KEY: "forged"}}})
    check("namespaces: create sets kubernetes.io/metadata.name to the name, whatever was sent",
          r.status == 201 and r.get("metadata", "labels") == {KEY: "nsl-a"}, r)
    r = c.req("PATCH", "/api/v1/namespaces/nsl-a", {"metadata": {"labels": {KEY: None, "t": "x"}}}, M)
    check("namespaces: an update cannot remove or change it",
          r.status == 200 and r.get("metadata", "labels") == {KEY: "nsl-a", "t": "x"}, r)
    c.req("POST", "/api/v1/namespaces", {"metadata": {"name": "nsl-b"}})
    r = c.req("GET", "/api/v1/namespaces?labelSelector=t%3Dx")
    check("namespaces: list by label", r.status == 200 and names(r) == ["nsl-a"], r)
    r = c.req("GET", "/api/v1/namespaces?labelSelector=" + KEY.replace("/", "%2F") + "%20in%20(nsl-b)")
    check("namespaces: list by kubernetes.io/metadata.name", r.status == 200 and names(r) == ["nsl-b"], r)
    rv0 = r.get("metadata", "resourceVersion")
    w = Watch(S, "/api/v1/namespaces?watch=1&timeoutSeconds=2&labelSelector=t%%3Dx&resourceVersion=%s" % rv0)
    c.req("PATCH", "/api/v1/namespaces/nsl-b", {"metadata": {"labels": {"t": "x"}}}, M)
    c.req("PATCH", "/api/v1/namespaces/nsl-a", {"metadata": {"labels": {"t": None}}}, M)
    c.req("PATCH", "/api/v1/namespaces/nsl-a", {"metadata": {"labels": {"t": "x"}}}, M)
    w.join(6)
    evs = [(e[0], e[1]["metadata"]["name"]) for e in w.events if e[0] != "BOOKMARK"]
    check("namespaces: a watch by label gets ADDED/DELETED as labels come and go",
          w.status == 200 and evs == [("ADDED", "nsl-b"), ("DELETED", "nsl-a"), ("ADDED", "nsl-a")], evs)
    c.close()


def t_selectors(S):
    c = Client(S)
    for n, l in (("sel-a", {"app": "x", "tier": "fe"}), ("sel-b", {"app": "y", "tier": "be"}),
                 ("sel-c", {"app": "z"}), ("sel-d", {})):
        c.req("POST", "/api/v1/nodes", node(n, l))

    def q(sel, field=None):
        from urllib.parse import quote
        p = "/api/v1/nodes?labelSelector=" + quote(sel)
        if field:
            p += "&fieldSelector=" + quote(field)
        r = c.req("GET", p)
        return [n for n in names(r) if n.startswith("sel-")] if r.status == 200 else r

    cases = [("app=x", ["sel-a"]), ("app==y", ["sel-b"]), ("app!=x", ["sel-b", "sel-c", "sel-d"]),
             ("app in (x,z)", ["sel-a", "sel-c"]), ("app notin (x, z)", ["sel-b", "sel-d"]),
             ("tier", ["sel-a", "sel-b"]), ("!tier", ["sel-c", "sel-d"]),
             ("app,tier=be", ["sel-b"]), ("app in (x,y),!tier", [])]
    for sel, want in cases:
        got = q(sel)
        check("labelSelector %r" % sel, got == want, "got %s want %s" % (got, want))
    got = q("", "metadata.name=sel-c")
    check("fieldSelector metadata.name=", got == ["sel-c"], got)
    got = q("app", "metadata.name!=sel-c")
    check("fieldSelector metadata.name!= combined with a label selector", got == ["sel-a", "sel-b"], got)
    c.req("POST", "/api/v1/namespaces/kube-system/configmaps", cm("fs", "kube-system"))
    r = c.req("GET", "/api/v1/configmaps?fieldSelector=metadata.namespace%3Dkube-system")
    check("fieldSelector metadata.namespace=", r.status == 200 and names(r) == ["fs"], r)
    r = c.req("GET", "/api/v1/nodes?labelSelector=app%20in%20(x")
    check("malformed labelSelector -> 400", is_status(r, 400, "BadRequest"), r)
    r = c.req("GET", "/api/v1/nodes?labelSelector=bad%20key%3Dx")
    check("labelSelector with an invalid key -> 400", is_status(r, 400, "BadRequest"), r)
    r = c.req("GET", "/api/v1/nodes?fieldSelector=spec.bogus%3Dx")
    check("unsupported fieldSelector field -> 400 field label not supported",
          is_status(r, 400, "BadRequest") and "field label not supported" in r.get("message"), r)
    c.close()


def t_paging(S):
    c = Client(S)
    c.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "paging"}})
    for i in range(7):
        c.req("POST", "/api/v1/namespaces/paging/configmaps", cm("page-%d" % i, "paging"))
    # one in another namespace: not part of the list
    c.req("POST", "/api/v1/namespaces/default/configmaps", cm("page-x"))
    base = "/api/v1/namespaces/paging/configmaps?labelSelector=&limit=3"
    r1 = c.req("GET", base)
    t1 = r1.get("metadata", "continue")
    rv = r1.get("metadata", "resourceVersion")
    c.req("POST", "/api/v1/namespaces/paging/configmaps", cm("page-9", "paging"))  # after the snapshot
    r2 = c.req("GET", base + "&continue=" + (t1 or ""))
    t2 = r2.get("metadata", "continue")
    r3 = c.req("GET", base + "&continue=" + (t2 or ""))
    all_names = names(r1) + names(r2) + names(r3)
    check("paging: limit=3 gives 3+3+1 items with continue tokens, then none",
          len(r1.get("items") or []) == 3 and len(r2.get("items") or []) == 3 and
          len(r3.get("items") or []) == 1 and t1 and t2 and not r3.get("metadata", "continue"),
          "%s | %s | %s" % (r1, r2, r3))
    check("paging: pages are one consistent snapshot (same resourceVersion, later create not seen)",
          all_names == ["page-%d" % i for i in range(7)] and
          r2.get("metadata", "resourceVersion") == rv == r3.get("metadata", "resourceVersion"),
          all_names)
    check("paging: remainingItemCount", r1.get("metadata", "remainingItemCount") == 4 and
          r2.get("metadata", "remainingItemCount") == 1, r1.get("metadata"))
    r = c.req("GET", "/api/v1/namespaces/paging/configmaps?limit=2&labelSelector=nope")
    check("paging: limit with a selector matching nothing -> empty, no continue",
          r.status == 200 and r.get("items") == [] and not r.get("metadata", "continue"), r)
    r = c.req("GET", base + "&continue=garbage!")
    check("paging: malformed continue -> 400", is_status(r, 400, "BadRequest"), r)
    r1 = c.req("GET", base)
    t1 = r1.get("metadata", "continue")
    rc, out, err = S.ctl("reset-history")
    r = c.req("GET", base + "&continue=" + (t1 or ""))
    check("paging: continue token after reset-history -> 410 Expired",
          rc == 0 and is_status(r, 410, "Expired"), "%s %s" % (err, r))
    r = c.req("GET", base)
    check("paging: a fresh list works after the 410", r.status == 200 and len(r.get("items")) == 3, r)
    c.close()


def t_patch(S):
    c = Client(S)
    J, M, SM = ("application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json")
    c.req("POST", "/api/v1/nodes", node("p1", {"keep": "1", "old": "x"},
                                        metadata={"name": "p1", "labels": {"keep": "1", "old": "x"},
                                                  "annotations": {"a": "1"}}))
    r = c.req("PATCH", "/api/v1/nodes/p1", [
        {"op": "add", "path": "/metadata/labels/example.com~1new", "value": "v"},
        {"op": "replace", "path": "/metadata/labels/keep", "value": "2"},
        {"op": "remove", "path": "/metadata/labels/old"},
        {"op": "copy", "from": "/metadata/labels/keep", "path": "/metadata/labels/copied"},
        {"op": "move", "from": "/metadata/annotations/a", "path": "/metadata/annotations/b"},
        {"op": "test", "path": "/metadata/labels/copied", "value": "2"}], J)
    check("JSON patch: add (~1 escape), replace, remove, copy, move, test",
          r.status == 200 and r.get("metadata", "labels") ==
          {"keep": "2", "example.com/new": "v", "copied": "2"} and
          r.get("metadata", "annotations") == {"b": "1"}, r)
    rv = r.get("metadata", "resourceVersion")
    r = c.req("PATCH", "/api/v1/nodes/p1", [
        {"op": "add", "path": "/metadata/labels/t", "value": "1"},
        {"op": "test", "path": "/metadata/labels/keep", "value": "nope"}], J)
    r2 = c.req("GET", "/api/v1/nodes/p1")
    check("JSON patch: failed test -> 422 Invalid, nothing applied",
          is_status(r, 422, "Invalid") and r2.get("metadata", "resourceVersion") == rv and
          "t" not in r2.get("metadata", "labels"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", [{"op": "add", "path": "/spec/taints/0/key", "value": "x"}], J)
    check("JSON patch: add below a missing parent -> 422", is_status(r, 422, "Invalid"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", [{"op": "remove", "path": "/metadata/labels/absent"}], J)
    check("JSON patch: remove of a missing key -> 422", is_status(r, 422, "Invalid"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", {"op": "add"}, J)
    check("JSON patch: not a list -> 400", is_status(r, 400, "BadRequest"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", [{"op": "test", "path": "/metadata/resourceVersion",
                                             "value": rv}, {"op": "add", "path": "/metadata/labels/t",
                                                            "value": "1"}], J)
    check("JSON patch: test on resourceVersion as a precondition", r.status == 200, r)
    r = c.req("PATCH", "/api/v1/nodes/p1", {"metadata": {"labels": {"t": None, "m": "1"},
                                                         "annotations": {"b": None}}}, M)
    check("merge patch: null deletes, maps merge (RFC 7386)",
          r.status == 200 and r.get("metadata", "labels") ==
          {"keep": "2", "example.com/new": "v", "copied": "2", "m": "1"} and
          "annotations" not in r.get("metadata"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", {"metadata": {"resourceVersion": "1", "labels": {"z": "1"}}}, M)
    check("merge patch: stale metadata.resourceVersion -> 409", is_status(r, 409, "Conflict"), r)
    rv = c.req("GET", "/api/v1/nodes/p1").get("metadata", "resourceVersion")
    r = c.req("PATCH", "/api/v1/nodes/p1", {"metadata": {"labels": {"m": "1"}}}, M)
    check("patch: a no-op patch writes nothing (resourceVersion unchanged)",
          r.status == 200 and r.get("metadata", "resourceVersion") == rv, r)
    c.req("PATCH", "/api/v1/nodes/p1", {"spec": {"taints": [
        {"key": "a", "effect": "NoSchedule", "value": "1"},
        {"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoSchedule"}]}}, M)
    r = c.req("PATCH", "/api/v1/nodes/p1", {
        "metadata": {"labels": {"keep": None, "sm": "1"}},
        "spec": {"taints": [{"key": "a", "effect": "NoSchedule", "value": "2"},
                            {"key": "b", "effect": "NoSchedule", "$patch": "delete"},
                            {"key": "c", "effect": "NoSchedule"}]}}, SM)
    check("strategic merge: node labels merge, null deletes",
          r.status == 200 and r.get("metadata", "labels") ==
          {"example.com/new": "v", "copied": "2", "m": "1", "sm": "1"}, r)
    check("strategic merge: taints merged by key+effect ($patch: delete honoured)",
          r.get("spec", "taints") == [{"key": "a", "effect": "NoSchedule", "value": "2"},
                                      {"key": "a", "effect": "NoExecute"},
                                      {"key": "c", "effect": "NoSchedule"}], r.get("spec"))
    r = c.req("PATCH", "/api/v1/nodes/p1", {"spec": {"taints": [
        {"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}]}}, M)
    check("node taints: duplicate key+effect -> 422", is_status(r, 422, "Invalid"), r)
    c.req("POST", PGPU, pgpu("p-gpu"))
    r = c.req("PATCH", PGPU + "/p-gpu", {"metadata": {"labels": {"a": "b"}}}, SM)
    check("strategic merge on a custom resource -> 415", is_status(r, 415, "UnsupportedMediaType"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", {"metadata": {}}, "application/json")
    check("patch with Content-Type application/json -> 415", is_status(r, 415, "UnsupportedMediaType"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", b"metadata: {}", "application/apply-patch+yaml")
    check("server-side apply -> 415 (not implemented)", r.status == 415, r)
    r = c.req("PATCH", "/api/v1/nodes/nope", {"metadata": {}}, M)
    check("patch of a missing object -> 404", is_status(r, 404, "NotFound"), r)
    r = c.req("PATCH", "/api/v1/nodes/p1", {"metadata": {"labels": {"bad key": "v"}}}, M)
    check("patch producing an invalid label -> 422", is_status(r, 422, "Invalid"), r)
    c.close()


def t_generation(S):
    c = Client(S)
    M = "application/merge-patch+json"
    c.req("POST", "/api/v1/nodes", node("gen-1", spec={"podCIDR": "10.1.0.0/24"}))
    r1 = c.req("PATCH", "/api/v1/nodes/gen-1", {"metadata": {"labels": {"x": "1"},
                                                             "annotations": {"y": "2"}}}, M)
    r2 = c.req("PATCH", "/api/v1/nodes/gen-1", {"spec": {"unschedulable": True}}, M)
    r3 = c.req("PATCH", "/api/v1/nodes/gen-1/status", {"status": {"capacity": {"example.com/x": "1"}}}, M)
    check("generation: metadata change keeps it, spec change bumps it, status change keeps it",
          r1.get("metadata", "generation") == 1 and r2.get("metadata", "generation") == 2 and
          r3.get("metadata", "generation") == 2, "%s %s %s" % (r1, r2, r3))
    c.req("POST", PGPU, pgpu("gen-gpu", {"a": 1}))
    r1 = c.req("PATCH", PGPU + "/gen-gpu", {"spec": {"a": 2}}, M)
    r2 = c.req("PATCH", PGPU + "/gen-gpu", {"metadata": {"labels": {"l": "1"}}}, M)
    check("generation: custom resource spec change bumps, label change does not",
          r1.get("metadata", "generation") == 2 and r2.get("metadata", "generation") == 2, "%s %s" % (r1, r2))
    c.close()


def t_managed_fields(S):
    """metadata.managedFields as kube-apiserver 1.20 keeps them (seen against the
    real one in tests/k8s/real.sh): per User-Agent manager, fields it set."""
    c = Client(S)
    M = "application/merge-patch+json"
    r = c.req("POST", "/api/v1/nodes", node("mf-1", labels={"a": "1", "b": "2"}),
              headers={"User-Agent": "mgr-a/1.0 (linux)"})
    mf = r.get("metadata", "managedFields") or []
    check("managedFields: a create is the User-Agent's up to its first /, operation Update, FieldsV1",
          len(mf) == 1 and mf[0]["manager"] == "mgr-a" and mf[0]["operation"] == "Update" and
          mf[0]["fieldsType"] == "FieldsV1" and mf[0]["apiVersion"] == "v1" and
          mf[0]["fieldsV1"]["f:metadata"]["f:labels"] == {".": {}, "f:a": {}, "f:b": {}}, mf)
    r = c.req("PATCH", "/api/v1/nodes/mf-1", {"metadata": {"labels": {"b": "3", "c": "4"}}}, M,
              headers={"User-Agent": "mgr-b/2"})
    mf = {e["manager"]: e["fieldsV1"].get("f:metadata", {}).get("f:labels") for e in
          r.get("metadata", "managedFields") or []}
    check("managedFields: another manager's change takes the field from the first",
          mf == {"mgr-a": {".": {}, "f:a": {}}, "mgr-b": {"f:b": {}, "f:c": {}}}, mf)
    rv = r.get("metadata", "resourceVersion")
    r = c.req("PUT", "/api/v1/nodes/mf-1", dict(r.json, metadata=dict(r.json["metadata"], managedFields=[])),
              headers={"User-Agent": "mgr-c/2"})
    check("managedFields: an update that changes nothing keeps them (and the resourceVersion)",
          len(r.get("metadata", "managedFields") or []) == 2 and r.get("metadata", "resourceVersion") == rv, r)
    big = {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
           "metadata": {"name": "mf-big", "namespace": "default"},
           "spec": {"labels": {"feature.node.kubernetes.io/b-%05d" % i: "v" for i in range(20000)}}}
    r = c.req("POST", "/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/default/nodefeatures", big)
    check("managedFields: left out where they would take the object over etcd's 1.5 MiB "
          "(20,000 labels: 860 KB, with them 1.7 MB)",
          r.status == 201 and r.get("metadata", "managedFields") is None and
          len(r.get("spec", "labels") or {}) == 20000, r)
    r = c.req("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "mf-2", "labels": {"x": 5}}})
    r2 = c.req("POST", PGPU, pgpu("mf-gpu", {"a": "x"}))
    r3 = c.req("PATCH", PGPU + "/mf-gpu", {"metadata": {"labels": {"l": 5}}}, M)
    check("422 messages name the group-qualified kind, as the API server does",
          'Node "mf-2" is invalid' in (r.get("message") or "") and
          'PhysicalGPU.gpu.deckhouse.io "mf-gpu" is invalid' in (r3.get("message") or ""),
          "%s %s %s" % (r, r2, r3))
    c.close()


def t_validation(S):
    c = Client(S)
    M = "application/merge-patch+json"
    c.req("POST", "/api/v1/nodes", node("val-1"))
    good = {"a": "", "A_b.c-d": "X.y_z-1", "example.com/x": "v", "a.b.c/" + "n" * 63: "v" * 63}
    r = c.req("PATCH", "/api/v1/nodes/val-1", {"metadata": {"labels": good}}, M)
    check("validation: valid label keys/values (prefix, 63-char name and value, empty value)",
          r.status == 200, r)
    bad_keys = ["-a", "a-", "a b", "Example.com/x", "a/b/c", "/x", "x/", "n" * 64,
                "a" * 254 + "/x", "a_b.com/x"]
    for k in bad_keys:
        r = c.req("PATCH", "/api/v1/nodes/val-1", {"metadata": {"labels": {k: "v"}}}, M)
        ok = is_status(r, 422, "Invalid") and r.get("details", "causes", 0, "field") == "metadata.labels" \
            and r.get("details", "kind") == "Node" and r.get("details", "name") == "val-1"
        check("validation: label key %r -> 422 with causes" % (k[:40],), ok, r)
    for v in ["-v", "v-", "a b", "v" * 64, "a/b"]:
        r = c.req("PATCH", "/api/v1/nodes/val-1", {"metadata": {"labels": {"k": v}}}, M)
        check("validation: label value %r -> 422" % (v[:40],), is_status(r, 422, "Invalid"), r)
    r = c.req("PATCH", "/api/v1/nodes/val-1", {"metadata": {"annotations": {"Example.COM/Key": "any value at all"}}}, M)
    check("validation: annotation keys are checked lower-cased, values are free", r.status == 200, r)
    r = c.req("PATCH", "/api/v1/nodes/val-1", {"metadata": {"annotations": {"a b": "v"}}}, M)
    check("validation: bad annotation key -> 422", is_status(r, 422, "Invalid") and
          r.get("details", "causes", 0, "field") == "metadata.annotations", r)
    r = c.req("PATCH", "/api/v1/nodes/val-1", {"metadata": {"annotations": {"big": "x" * (256 * 1024 + 1)}}}, M)
    check("validation: annotations over 256 KiB -> 422", is_status(r, 422, "Invalid"), r)
    r = c.req("POST", "/api/v1/nodes", node("Bad_Name"))
    check("validation: object name not a DNS-1123 subdomain -> 422",
          is_status(r, 422, "Invalid") and r.get("details", "causes", 0, "field") == "metadata.name", r)
    r = c.req("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": "a.b"}})
    check("validation: namespace name must be a DNS-1123 label -> 422", is_status(r, 422, "Invalid"), r)
    r = c.req("PATCH", "/api/v1/nodes/val-1/status", {"status": {"capacity": {"example.com/gpu": "two"}}}, M)
    check("validation: node extended resource quantity must parse -> 422", is_status(r, 422, "Invalid"), r)
    c.close()


def t_status_subresource(S):
    c = Client(S)
    M = "application/merge-patch+json"
    r = c.req("POST", PGPU, pgpu("st-1", {"a": 1}, {"s": 1}))
    check("status subresource: create ignores .status", r.status == 201 and "status" not in r.json, r)
    r = c.req("PATCH", PGPU + "/st-1/status", {"status": {"s": 2}}, M)
    rv = r.get("metadata", "resourceVersion")
    check("status subresource: PATCH /status sets .status", r.status == 200 and r.get("status") == {"s": 2}, r)
    o = c.req("GET", PGPU + "/st-1").json
    o["status"] = {"s": 99}
    o["spec"] = {"a": 5}
    r = c.req("PUT", PGPU + "/st-1", o)
    check("status subresource: PUT to the main resource ignores .status changes",
          r.status == 200 and r.get("status") == {"s": 2} and r.get("spec") == {"a": 5}, r)
    o = r.json
    o["status"] = {"s": 3}
    o["spec"] = {"a": 7}
    o["metadata"]["labels"] = {"x": "y"}
    r = c.req("PUT", PGPU + "/st-1/status", o)
    check("status subresource: PUT /status ignores everything but .status",
          r.status == 200 and r.get("status") == {"s": 3} and r.get("spec") == {"a": 5} and
          not r.get("metadata", "labels"), r)
    r = c.req("PATCH", PGPU + "/st-1", {"status": {"s": 4}, "spec": {"a": 6}}, M)
    check("status subresource: PATCH to the main resource ignores .status",
          r.status == 200 and r.get("status") == {"s": 3} and r.get("spec") == {"a": 6}, r)
    o = r.json
    o["metadata"]["resourceVersion"] = rv
    r = c.req("PUT", PGPU + "/st-1/status", o)
    check("status subresource: stale resourceVersion on /status -> 409", is_status(r, 409, "Conflict"), r)
    r = c.req("GET", PGPU + "/st-1/status")
    check("status subresource: GET /status returns the object", r.status == 200 and
          r.get("kind") == "PhysicalGPU", r)
    r = c.req("PUT", "/api/v1/namespaces/default/configmaps/x/status", cm("x"))
    check("no status subresource on configmaps -> 404", r.status == 404, r)
    tok = open(os.path.join(S.dir, "tokens", "node1")).read().strip()
    n = Client(S, token=tok)
    r = n.req("PATCH", PGPU + "/st-1/status", {"status": {"s": 5}}, M)
    check("status subresource: node1 may patch physicalgpus/status", r.status == 200, r)
    n.close()
    c.close()


def t_node_restriction(S):
    """NodeRestriction: a node user changes only its own Node, never its taints
    or its node-restriction.kubernetes.io labels; others are not restricted."""
    c = Client(S)
    J, M = "application/json-patch+json", "application/merge-patch+json"
    taint = {"key": "quarantine.example.com/compromised", "value": "true", "effect": "NoExecute"}
    for n in ("node1", "node2"):
        c.req("DELETE", "/api/v1/nodes/" + n)
        r = c.req("POST", "/api/v1/nodes", node(n, {"node-restriction.kubernetes.io/tenant": "a", "team": "x"},
                                                  spec={"taints": [taint]}))
        check("node restriction: the admin creates %s with a taint and a restricted label" % n, r.status == 201, r)
    tok1 = open(os.path.join(S.dir, "tokens", "node1")).read().strip()
    tok2 = open(os.path.join(S.dir, "tokens", "node2")).read().strip()
    n1 = Client(S, token=tok1)
    r = n1.req("PATCH", "/api/v1/nodes/node1", {"metadata": {"labels": {"team": "y"},
                                                             "annotations": {"nfd.node.kubernetes.io/taints": "x"}}}, M)
    check("node restriction: node1 may change its own labels and annotations", r.status == 200, r)
    r = n1.req("PATCH", "/api/v1/nodes/node1", [{"op": "remove", "path": "/spec/taints"}], J)
    check("node restriction: node1 may not remove its taints -> 403, the plugin's message",
          is_status(r, 403, "Forbidden") and r.get("message") ==
          'nodes "node1" is forbidden: node "node1" is not allowed to modify taints', r)
    r = n1.req("PATCH", "/api/v1/nodes/node1", {"spec": {"taints": [taint, {"key": "a", "effect": "NoSchedule"}]}}, M)
    check("node restriction: ... nor add one", is_status(r, 403, "Forbidden"), r)
    for what, ops in (("remove a node-restriction.kubernetes.io label", [{"op": "remove", "path": "/metadata/labels/node-restriction.kubernetes.io~1tenant"}]),
                      ("change one", [{"op": "replace", "path": "/metadata/labels/node-restriction.kubernetes.io~1tenant",
                                   "value": "b"}]),
                      ("add one in a subdomain", [{"op": "add", "path": "/metadata/labels/x.node-restriction.kubernetes.io~1r",
                                              "value": "1"}])):
        r = n1.req("PATCH", "/api/v1/nodes/node1", ops, J)
        check("node restriction: node1 may not %s -> 403" % what,
              is_status(r, 403, "Forbidden") and "is not allowed to modify labels: " in r.get("message"), r)
    r = n1.req("PUT", "/api/v1/nodes/node1", dict(c.req("GET", "/api/v1/nodes/node1").json, spec={}))
    check("node restriction: ... PUT alike", is_status(r, 403, "Forbidden") and "taints" in r.get("message"), r)
    r = n1.req("PATCH", "/api/v1/nodes/node2", {"metadata": {"labels": {"team": "z"}}}, M)
    check("node restriction: node1 may not modify node2",
          is_status(r, 403, "Forbidden") and r.get("message") ==
          'nodes "node2" is forbidden: node "node1" is not allowed to modify node "node2"', r)
    r = n1.req("PATCH", "/api/v1/nodes/node2/status", {"status": {"capacity": {"x.example.com/r": "1"}}}, M)
    check("node restriction: ... nor its status", is_status(r, 403, "Forbidden"), r)
    r = n1.req("PATCH", "/api/v1/nodes/node1/status", {"status": {"capacity": {"x.example.com/r": "1"}}}, M)
    check("node restriction: node1 may patch its own status", r.status == 200, r)
    n1.close()
    n2 = Client(S, token=tok2)
    r = n2.req("PATCH", "/api/v1/nodes/node2", {"metadata": {"labels": {"team": "z"}}}, M)
    check("node restriction: node2 (kubeconfig-node2) modifies its own Node", r.status == 200, r)
    n2.close()
    r = c.req("GET", "/api/v1/nodes/node1")
    check("node restriction: node1's taint and restricted label are as the admin left them",
          r.get("spec", "taints") == [taint] and r.get("metadata", "labels") ==
          {"node-restriction.kubernetes.io/tenant": "a", "team": "y"}, r)
    r = c.req("PATCH", "/api/v1/nodes/node1", [{"op": "remove", "path": "/spec/taints"},
                                               {"op": "replace", "path": "/metadata/labels/node-restriction.kubernetes.io~1tenant",
                                                "value": "b"}], J)
    check("node restriction: the admin is not restricted", r.status == 200, r)
    for n in ("node1", "node2"):
        c.req("DELETE", "/api/v1/nodes/" + n)
    c.close()


def t_watch(S):
    c = Client(S)
    M = "application/merge-patch+json"
    r = c.req("GET", "/api/v1/nodes?labelSelector=w%3D1")
    rv0 = r.get("metadata", "resourceVersion")
    t0 = time.time()
    w = Watch(S, "/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=2&"
                 "labelSelector=w%%3D1&resourceVersion=%s" % rv0)
    lw = Watch(S, "/api/v1/nodes?watch=true&timeoutSeconds=2&resourceVersion=%s" % rv0)
    c.req("POST", "/api/v1/nodes", node("w-1", {"w": "1"}))
    c.req("PATCH", "/api/v1/nodes/w-1", {"metadata": {"annotations": {"x": "y"}}}, M)
    c.req("POST", "/api/v1/nodes", node("w-other", {"w": "2"}))
    c.req("PATCH", "/api/v1/nodes/w-other", {"metadata": {"labels": {"w": "1"}}}, M)
    c.req("PATCH", "/api/v1/nodes/w-other", {"metadata": {"labels": {"w": "3"}}}, M)
    c.req("DELETE", "/api/v1/nodes/w-1")
    w.join(6)
    lw.join(6)
    dt = time.time() - t0
    evs = [(e[0], e[1]["metadata"]["name"]) for e in w.events if e[0] != "BOOKMARK"]
    want = [("ADDED", "w-1"), ("MODIFIED", "w-1"), ("ADDED", "w-other"), ("DELETED", "w-other"),
            ("DELETED", "w-1")]
    check("watch: ADDED/MODIFIED/DELETED in order, selector transitions as ADDED/DELETED",
          w.status == 200 and evs == want, "%s %s" % (w.status, evs))
    rvs = [int(e[1]["metadata"]["resourceVersion"]) for e in w.events if e[0] != "BOOKMARK"]
    check("watch: resourceVersions increase, and exceed the list's",
          rvs == sorted(rvs) and len(set(rvs)) == len(rvs) and rvs and rvs[0] > int(rv0), rvs)
    check("watch: event objects carry kind and apiVersion",
          all(e[1].get("kind") == "Node" and e[1].get("apiVersion") == "v1"
              for e in w.events if e[0] != "BOOKMARK"))
    bms = [e for e in w.events if e[0] == "BOOKMARK"]
    check("watch: BOOKMARK events (allowWatchBookmarks) hold only kind/apiVersion/metadata.resourceVersion",
          bms and all(set(b[1]) == {"kind", "apiVersion", "metadata"} and
                      list(b[1]["metadata"]) == ["resourceVersion"] and b[1]["kind"] == "Node"
                      for b in bms), bms[:2])
    check("watch: bookmark resourceVersion never goes backwards past sent events",
          all(int(b[1]["metadata"]["resourceVersion"]) >= max([0] + [
              int(e[1]["metadata"]["resourceVersion"]) for e in w.events
              if e[0] != "BOOKMARK" and e[2] <= b[2]]) for b in bms))
    check("watch: timeoutSeconds=2 ends the stream cleanly (chunked end) after ~2 s",
          w.end == "eof" and 1.8 <= dt < 4.5, "%s %.2f" % (w.end, dt))
    check("watch: no bookmarks without allowWatchBookmarks; unfiltered sees all events",
          not any(e[0] == "BOOKMARK" for e in lw.events) and len(lw.types()) == 6, lw.types())
    # the connection is reusable after the chunked stream ended
    w.c.request("GET", "/api/v1/nodes", headers={"Authorization": "Bearer " + S.token})
    rr = w.c.getresponse()
    rr.read()
    check("watch: keep-alive connection reusable after a watch ended", rr.status == 200, rr.status)
    w.close()
    lw.close()
    # resourceVersion 0 / "": synthetic ADDED for current objects first
    c.req("POST", "/api/v1/nodes", node("w-2", {"w2": "a"}))
    c.req("POST", "/api/v1/nodes", node("w-3", {"w2": "b"}))
    ws = [(rvq, Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=1&labelSelector=w2" + rvq))
          for rvq in ("&resourceVersion=0", "")]
    # fieldSelector and a namespaced watch
    w = Watch(S, "/api/v1/namespaces/kube-system/configmaps?watch=1&timeoutSeconds=1&"
                 "fieldSelector=metadata.name%3Dwcm")
    c.req("POST", "/api/v1/namespaces/default/configmaps", cm("wcm"))
    c.req("POST", "/api/v1/namespaces/kube-system/configmaps", cm("wcm-no", "kube-system"))
    c.req("POST", "/api/v1/namespaces/kube-system/configmaps", cm("wcm", "kube-system"))
    for rvq, w0 in ws:
        w0.join(4)
        check("watch: resourceVersion=%s starts with ADDED for existing objects" % (rvq[17:] or '""'),
              [(e[0], e[1]["metadata"]["name"]) for e in w0.events] == [("ADDED", "w-2"), ("ADDED", "w-3")],
              w0.events)
        w0.close()
    w.join(4)
    check("watch: namespaced watch with a fieldSelector sees only its object",
          [(e[0], e[1]["metadata"]["namespace"]) for e in w.events] == [("ADDED", "kube-system")],
          w.events)
    w.close()
    # 410 after reset-history
    rv_old = c.req("GET", "/api/v1/nodes").get("metadata", "resourceVersion")
    c.req("POST", "/api/v1/nodes", node("w-4"))
    S.ctl("reset-history")
    w = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=5&resourceVersion=%s" % rv_old)
    w.join(4)
    e = w.events[0] if w.events else None
    check("watch: resourceVersion before reset-history -> 200 stream with one ERROR 410 Expired event",
          w.status == 200 and len(w.events) == 1 and e[0] == "ERROR" and
          e[1].get("kind") == "Status" and e[1].get("code") == 410 and
          e[1].get("reason") == "Expired" and w.end == "eof", "%s %s %s" % (w.status, w.events, w.end))
    w.close()
    rv_new = c.req("GET", "/api/v1/nodes").get("metadata", "resourceVersion")
    w = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=1&resourceVersion=%s" % rv_new)
    c.req("POST", "/api/v1/nodes", node("w-5"))
    w.join(4)
    check("watch: from a list made after the reset it works again",
          w.types() == ["ADDED"], w.events)
    w.close()
    r = c.req("GET", "/api/v1/nodes?watch=1&resourceVersion=abc")
    check("watch: non-numeric resourceVersion -> 400", is_status(r, 400, "BadRequest"), r)
    c.close()


def t_watch_history(S):
    """--history N: a resourceVersion more than N events old is 410."""
    c = Client(S)
    rv = c.req("GET", "/api/v1/namespaces").get("metadata", "resourceVersion")
    w_ok = Watch(S, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion=%s" % rv)
    for i in range(12):
        c.req("POST", "/api/v1/namespaces/default/configmaps", cm("h-%d" % i))
    w_ok.join(4)
    check("watch: events within the history window are replayed (--history)",
          len(w_ok.types()) == 12, w_ok.types())
    w = Watch(S, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1&resourceVersion=%s" % rv)
    w.join(4)
    check("watch: resourceVersion older than --history events -> ERROR 410",
          w.events and w.events[0][0] == "ERROR" and w.events[0][1].get("code") == 410, w.events)
    w_ok.close()
    w.close()
    c.close()


def t_drop(S):
    w1 = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=30")
    w2 = Watch(S, "/api/v1/namespaces?watch=1&timeoutSeconds=30")
    rc, out, err = S.ctl("watches")
    check("ctl watches counts the open watch streams", rc == 0 and out.strip() == "2", out + err)
    rc, out, err = S.ctl("drop-watches")
    w1.join(5)
    w2.join(5)
    check("drop-watches: open watches are cut (connection closed mid-stream)",
          rc == 0 and out.strip() == "2" and w1.end == "IncompleteRead" and w2.end == "IncompleteRead",
          "%s %s %s %s" % (rc, out, w1.end, w2.end))
    w1.close()
    w2.close()
    w = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=30")
    rc, out, err = S.ctl("drop-watches", "--end")
    w.join(5)
    check("drop-watches --end: the stream ends cleanly", rc == 0 and w.end == "eof", w.end)
    w.close()
    w = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=30")
    n1 = S.ctl("watches")[1].strip()
    w.close()
    end = time.time() + 3
    n2 = None
    while time.time() < end:
        n2 = S.ctl("watches")[1].strip()
        if n2 == "0":
            break
        time.sleep(0.05)
    check("a watch whose client went away is noticed and closed (watches back to 0)",
          n1 == "1" and n2 == "0", "%s %s" % (n1, n2))


def raw_request(S, method, path, body=None):
    """(status or None, error name) for requests whose connection the server may cut."""
    c = S.conn(timeout=5)
    try:
        h = {"Authorization": "Bearer " + S.token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        r.read()
        return r.status, None
    except Exception as e:
        return None, type(e).__name__
    finally:
        c.close()


def t_faults(S):
    rc, out, err = S.ctl("fault", "--method", "GET", "--path", "^/api/v1/nodes$", "--status", "429",
                         "--retry-after", "3", "--count", "2")
    c = Client(S)
    rs = [c.req("GET", "/api/v1/nodes") for _ in range(3)]
    check("fault status 429 with Retry-After: next 2 matching requests fail, then success",
          rc == 0 and out.strip().isdigit() and [r.status for r in rs] == [429, 429, 200] and
          rs[0].headers.get("Retry-After") == "3" and is_status(rs[0], 429, "TooManyRequests") and
          rs[0].get("details", "retryAfterSeconds") == 3, "%s %s %s" % (rc, err, rs))
    check("fault: a faulted keep-alive connection stays usable", c.c.sock is not None)
    S.ctl("fault", "--path", "^/api/v1/nodes/f1$", "--status", "503")
    S.ctl("fault", "--path", "^/api/v1/nodes/f2$", "--status", "500", "--message", "boom")
    r1 = c.req("GET", "/api/v1/nodes/f1")
    r2 = c.req("GET", "/api/v1/nodes/f2")
    check("fault status 503 and 500 give Status bodies",
          is_status(r1, 503, "ServiceUnavailable") and is_status(r2, 500, "InternalError") and
          r2.get("message") == "boom", "%s %s" % (r1, r2))
    S.ctl("fault", "--method", "GET", "--path", "^/api/v1/nodes/f3$", "--skip", "1", "--status", "503")
    r1 = c.req("GET", "/api/v1/nodes/f3")
    r2 = c.req("GET", "/api/v1/nodes/f3")
    check("fault --skip 1: the first match passes, the second fails", r1.status == 404 and r2.status == 503,
          "%s %s" % (r1, r2))
    S.ctl("fault", "--verb", "create", "--path", "configmaps", "--delay", "400")
    t0 = time.time()
    r = c.req("POST", "/api/v1/namespaces/default/configmaps", cm("slow"))
    dt = time.time() - t0
    check("fault delay 400 ms: the request is slow, then served", r.status == 201 and 0.38 <= dt < 2, "%s %.2f" % (r, dt))
    c.close()
    S.ctl("fault", "--method", "POST", "--path", "configmaps$", "--close")
    st, e = raw_request(S, "POST", "/api/v1/namespaces/default/configmaps", cm("closed"))
    c = Client(S)
    r = c.req("GET", "/api/v1/namespaces/default/configmaps/closed")
    check("fault close: headers and part of the body, then the connection closes (request applied)",
          st is None and e == "IncompleteRead" and r.status == 200, "%s %s %s" % (st, e, r))
    S.ctl("fault", "--method", "POST", "--path", "configmaps$", "--reset")
    st, e = raw_request(S, "POST", "/api/v1/namespaces/default/configmaps", cm("reset"))
    r = c.req("GET", "/api/v1/namespaces/default/configmaps/reset")
    check("fault reset: connection reset before any response (request not applied)",
          st is None and e in ("ConnectionResetError", "RemoteDisconnected", "SSLError",
                               "SSLEOFError", "BadStatusLine") and r.status == 404,
          "%s %s %s" % (st, e, r))
    S.ctl("fault", "--watch", "--path", "^/api/v1/nodes$", "--close")
    w = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=5")
    w.join(5)
    check("fault close on a watch: stream cut inside the first event",
          w.status == 200 and w.end in ("IncompleteRead", "JSONDecodeError") and not w.events,
          "%s %s" % (w.end, w.events))
    w.close()
    # hold: the request waits until the test releases it, so a competing write
    # lands inside the window whatever the machine's speed
    held_path = "/api/v1/namespaces/default/configmaps/held"
    c.req("POST", "/api/v1/namespaces/default/configmaps", cm("held", data={"k": "v"}))
    rc, out, err = S.ctl("fault", "--method", "PATCH", "--path", "^%s$" % held_path, "--hold")
    hid = out.strip()
    res = {}

    def held_patch(key, val):
        c2 = Client(S)
        res[key] = c2.req("PATCH", held_path, {"data": {"k": val}}, "application/merge-patch+json")
        res[key + "_t"] = time.time()
        c2.close()

    th = threading.Thread(target=held_patch, args=("p", "patched"))
    th.start()
    rc1, _, err1 = S.ctl("wait-held", hid, "--timeout", "20")
    rlog = [e for e in json.loads(S.ctl("log", "--json")[1]) if e["path"] == held_path and e["method"] == "PATCH"]
    r = c.req("PATCH", held_path, {"data": {"k": "competing"}}, "application/merge-patch+json")
    alive = th.is_alive()
    t_rel = time.time()
    rc2, out2, _ = S.ctl("release", hid)
    th.join(20)
    r2 = c.req("GET", held_path)
    check("fault hold: the request waits (logged as held) until released; a competing write goes first",
          rc == 0 and hid.isdigit() and rc1 == 0 and alive and r.status == 200 and out2.strip() == "1" and
          rlog and rlog[-1].get("held") is True and rlog[-1].get("fault") == "hold" and
          res.get("p") is not None and res["p"].status == 200 and res["p_t"] >= t_rel and
          r2.get("data", "k") == "patched",
          "%s %s %s %s %s %s %s" % (rc, err, rc1, err1, out2, rlog[-1:], res))
    t0 = time.time()
    held_patch("p2", "again")
    check("fault hold: once released, the rule holds nothing more",
          res["p2"].status == 200 and res["p2_t"] - t0 < 5, res)
    S.ctl("fault", "--method", "GET", "--path", "^/api/v1/nodes/hold-to$", "--hold", "--hold-timeout", "0.5")
    t0 = time.time()
    r = c.req("GET", "/api/v1/nodes/hold-to")
    dt = time.time() - t0
    check("fault hold --hold-timeout 0.5: never released, served after the timeout",
          r.status == 404 and 0.45 <= dt < 8, "%s %.2f" % (r, dt))
    rc, out, err = S.ctl("fault", "--method", "PATCH", "--path", "^%s$" % held_path, "--hold")
    th = threading.Thread(target=held_patch, args=("p3", "cleared"))
    th.start()
    rc1, _, err1 = S.ctl("wait-held", out.strip(), "--timeout", "20")
    S.ctl("clear-faults")
    th.join(20)
    check("fault hold: clear-faults lets every held request go",
          rc1 == 0 and not th.is_alive() and res.get("p3") is not None and res["p3"].status == 200,
          "%s %s %s" % (rc1, err1, res.get("p3")))
    rc, _, err = S.ctl_proc("release", "9999")
    rc3, _, err3 = S.ctl_proc("wait-held", "9999", "--timeout", "1")
    check("ctl release / wait-held of an unknown rule -> exit 1 and a message",
          rc == 1 and "9999" in err and rc3 == 1 and "9999" in err3, "%s %s" % (err, err3))
    S.ctl("fault", "--path", "^/api/v1/nodes$", "--status", "503", "--count", "-1")
    r1 = c.req("GET", "/api/v1/nodes")
    rc, out, err = S.ctl("faults")
    rc2, _, _ = S.ctl("clear-faults")
    r2 = c.req("GET", "/api/v1/nodes")
    check("fault --count -1 until clear-faults", r1.status == 503 and r2.status == 200 and rc2 == 0 and
          json.loads(out)[-1]["hits"] == 1, "%s %s" % (r1, r2))
    rc, out, err = S.ctl_proc("fault", "--path", "(", "--status", "500")
    check("ctl fault with a bad regular expression -> non-zero exit and a message",
          rc == 1 and "regular expression" in err, err)
    c.close()


def t_log(S):
    rc, _, _ = S.ctl("clear-log")
    c = Client(S)
    for _ in range(3):
        c.req("GET", "/api/v1/nodes/log-x")
    c.req("GET", "/api/v1/nodes")
    c.req("PATCH", "/api/v1/nodes/log-x", {}, "application/merge-patch+json")
    w = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=1")
    w.join(3)
    w.close()
    S.ctl("fault", "--path", "^/api/v1/nodes$", "--status", "503")
    c.req("GET", "/api/v1/nodes")
    c.close()
    S.ctl("info")        # control API requests are not logged

    def cnt(*a):
        rc, out, err = S.ctl("count", *a)
        return out.strip() if rc == 0 else "rc=%d %s" % (rc, err)

    got = [cnt("GET", "^/api/v1/nodes/log-x$"), cnt("get", "^/api/v1/nodes/log-x$", "--status", "404"),
           cnt("list", "^/api/v1/nodes$"), cnt("watch", "nodes"), cnt("patch", "log-x"),
           cnt("*", "."), cnt("GET", "^/api/v1/nodes$", "--status", "503"), cnt("*", "__test")]
    check("log: ctl count by method, verb, path regex and status",
          rc == 0 and got == ["3", "3", "2", "1", "1", "7", "1", "0"], got)
    rc, out, err = S.ctl("log", "--json")
    items = json.loads(out) if rc == 0 else []
    keys = {"seq", "time", "method", "path", "query", "user", "status", "watch", "fault"}
    check("log: entries have seq, time, method, path, query, user, status, watch, fault",
          items and all(keys <= set(e) for e in items) and
          [e["seq"] for e in items] == sorted(e["seq"] for e in items), items[:1])
    wl = [e for e in items if e["watch"]]
    check("log: watch flag and query recorded",
          len(wl) == 1 and "watch=1" in wl[0]["query"] and wl[0]["status"] == 200, wl)
    fl = [e for e in items if e["fault"]]
    check("log: fault applied recorded", len(fl) == 1 and fl[0]["fault"] == "status:503", fl)
    check("log: user recorded", all(e["user"] == "admin" for e in items), items[:1])
    rc, out, err = S.ctl("log")
    check("log: text form, one line per request", rc == 0 and len(out.splitlines()) == 7, out)
    S.ctl("clear-log")
    check("log: clear-log empties it", cnt("*", ".") == "0")
    c = Client(S)
    c.req("POST", "/api/v1/nodes", node("log-l", {"a": "1", "b": "1"}))
    c.req("PATCH", "/api/v1/nodes/log-l", {"metadata": {"labels": {"a": None, "b": "2", "c": "3"}}},
          "application/merge-patch+json")
    c.req("PATCH", "/api/v1/nodes/log-l", {"metadata": {"annotations": {"x": "y"}}},
          "application/merge-patch+json")
    c.req("DELETE", "/api/v1/nodes/log-l")
    c.close()
    rc, out, err = S.ctl("log", "--json")
    got = [e.get("labels") for e in json.loads(out)] if rc == 0 else err
    check("log: writes note the labels they removed, added and changed",
          got == [{"added": ["a", "b"]}, {"removed": ["a"], "added": ["c"], "changed": ["b"]},
                  None, {"removed": ["b", "c"]}], got)


def t_discovery(S):
    c = Client(S)
    r = c.req("GET", "/api")
    check("discovery: /api lists v1", r.status == 200 and r.get("kind") == "APIVersions" and
          r.get("versions") == ["v1"], r)
    r = c.req("GET", "/api/v1")
    res = {x["name"]: x for x in r.get("resources") or []}
    check("discovery: /api/v1 has nodes, nodes/status, namespaces, pods, configmaps, events",
          {"nodes", "nodes/status", "namespaces", "pods", "configmaps", "events"} <= set(res) and
          res["nodes"]["namespaced"] is False and res["pods"]["namespaced"] is True and
          "watch" in res["nodes"]["verbs"], r)
    r = c.req("GET", "/apis")
    gs = {g["name"]: g for g in r.get("groups") or []}
    check("discovery: /apis lists coordination.k8s.io, batch, nfd.k8s-sigs.io, gpu.deckhouse.io",
          r.get("kind") == "APIGroupList" and {"coordination.k8s.io", "batch", "nfd.k8s-sigs.io",
                                               "gpu.deckhouse.io"} <= set(gs), r)
    r = c.req("GET", "/apis/gpu.deckhouse.io/v1alpha1")
    res = {x["name"]: x for x in r.get("resources") or []}
    check("discovery: physicalgpus is cluster-scoped with a status subresource and shortName pgpu",
          "physicalgpus/status" in res and res["physicalgpus"]["namespaced"] is False and
          res["physicalgpus"].get("shortNames") == ["pgpu"], r)
    r = c.req("GET", "/apis/nfd.k8s-sigs.io/v1alpha1")
    res = {x["name"]: x for x in r.get("resources") or []}
    check("discovery: nodefeatures namespaced, nodefeaturerules cluster-scoped",
          res.get("nodefeatures", {}).get("namespaced") is True and
          res.get("nodefeaturerules", {}).get("namespaced") is False, r)
    r = c.req("GET", "/apis/batch")
    check("discovery: /apis/<group>", r.status == 200 and r.get("kind") == "APIGroup", r)
    r = c.req("GET", "/version")
    check("discovery: /version", r.status == 200 and r.get("major") == "1" and
          (r.get("gitVersion") or "").startswith("v1."), r)
    c.close()
    c = Client(S, token=None)
    r = c.req("GET", "/healthz")
    check("/healthz answers without credentials", r.status == 200 and r.raw == b"ok", r)
    c.close()
    c = Client(S)
    for path, kind in (("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "LeaseList"),
                       ("/apis/batch/v1/namespaces/default/jobs", "JobList"),
                       ("/api/v1/namespaces/default/events", "EventList"),
                       ("/api/v1/namespaces/default/pods", "PodList"),
                       ("/apis/nfd.k8s-sigs.io/v1alpha1/nodefeaturerules", "NodeFeatureRuleList")):
        r = c.req("GET", path)
        check("list %s -> %s" % (path, kind), r.status == 200 and r.get("kind") == kind, r)
    c.close()


def t_ctl_objects(S):
    rc, out, err = S.ctl("put", "/api/v1/nodes/direct", "-", stdin=json.dumps(
        {"metadata": {"name": "direct", "labels": {"bad key": "allowed here"}}}))
    o = json.loads(out) if rc == 0 else {}
    check("ctl put: creates bypassing validation, with uid and resourceVersion",
          rc == 0 and o.get("metadata", {}).get("uid") and o.get("kind") == "Node", err)
    w = Watch(S, "/api/v1/nodes?watch=1&timeoutSeconds=1&resourceVersion=%s" % o["metadata"]["resourceVersion"])
    S.ctl("put", "api/v1/nodes/direct", "-", stdin=json.dumps({"metadata": {"name": "direct"}}))
    rc2, _, _ = S.ctl("delete", "/api/v1/nodes/direct")
    w.join(3)
    check("ctl put/delete emit watch events", rc2 == 0 and w.types() == ["MODIFIED", "DELETED"], w.events)
    w.close()
    rc, out, err = S.ctl_proc("get", "/api/v1/nodes/direct")
    check("ctl get of a missing object -> exit 1 with the message", rc == 1 and "not found" in err, err)
    rc, out, err = S.ctl_proc("count", "GET", ".")
    check("ctl as a program prints a count", rc == 0 and out.strip().isdigit(), out + err)
    rc, out, err = S.ctl_proc("no-such-command")
    check("ctl: unknown command -> exit 2", rc == 2, err)
    rc, out, err = S.ctl("load", "-", stdin=json.dumps({"kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ld", "namespace": "kube-system"}},
        {"apiVersion": "nfd.k8s-sigs.io/v1alpha1", "kind": "NodeFeature",
         "metadata": {"name": "nf1", "namespace": "default"}, "spec": {}}]}))
    check("ctl load: objects placed by apiVersion/kind", rc == 0 and len(out.splitlines()) == 2, out + err)
    rc, out, err = S.ctl("get", "/api/v1/namespaces/kube-system/configmaps")
    check("ctl get of a collection", rc == 0 and any(i["metadata"]["name"] == "ld"
                                                     for i in json.loads(out)["items"]), err)


def t_shutdown(S):
    t0 = time.time()
    rc = S.stop()
    check("SIGTERM: clean exit 0 within 2 s, DIR/ready removed",
          rc == 0 and time.time() - t0 < 2 and not os.path.exists(os.path.join(S.dir, "ready")),
          "rc=%s %.2f" % (rc, time.time() - t0))


def t_start_sh(tmp):
    d = os.path.join(tmp, "sh")
    shutil.copytree(os.path.join(tmp, "main", "pki"), os.path.join(d, "pki"))
    script = """
set -u
. '%s/start.sh'
k8s_start '%s' --cert ecdsa || exit 1
trap k8s_stop EXIT
[ -n "$K8S_PID" ] && [ "$K8S_PORT" = "$(cat '%s/port')" ] && [ "$K8S_DIR" = '%s' ] || exit 2
k8s_ctl wait-ready || exit 3
k8s_ctl info >/dev/null || exit 4
pid=$K8S_PID
port=$K8S_PORT
tok=$(cat "$K8S_DIR/tokens/node1")
rv1=$(k8s_ctl info | sed -n 's/.*"resourceVersion": "\\([0-9]*\\)".*/\\1/p')
k8s_stop
kill -0 $pid 2>/dev/null && exit 5
[ -z "${K8S_PID:-}" ] || exit 6
[ ! -e '%s/ready' ] || exit 7
echo '[{"apiVersion":"v1","kind":"Node","metadata":{"name":"seeded"}}]' >'%s/seed.json'
k8s_start '%s' --port "$port" --seed '%s/seed.json' || exit 8
[ "$K8S_PORT" = "$port" ] || exit 9
[ "$(cat "$K8S_DIR/tokens/node1")" = "$tok" ] || exit 10
k8s_ctl get /api/v1/nodes/seeded >/dev/null || exit 11
rv2=$(k8s_ctl info | sed -n 's/.*"resourceVersion": "\\([0-9]*\\)".*/\\1/p')
[ -n "$rv1" ] && [ "$rv2" -gt "$rv1" ] || { echo "rv $rv1 -> $rv2"; exit 12; }
k8s_stop
# --keep-state: objects, a user made by rotate-token and its rules survive a restart
k8s_start '%s' --port "$port" --keep-state || exit 13
k8s_ctl rotate-token kept >/dev/null || exit 14
echo '[{"verbs":["get"],"resources":["nodes"]}]' | k8s_ctl set-rules kept - >/dev/null || exit 15
k8s_ctl put /api/v1/nodes/kept - >/dev/null <<'J' || exit 16
{"apiVersion":"v1","kind":"Node","metadata":{"name":"kept","labels":{"a":"1"}}}
J
k8s_stop
k8s_start '%s' --port "$port" --keep-state || exit 17
k8s_ctl get /api/v1/nodes/kept | grep -q '"a": "1"' || exit 18
k8s_ctl get /api/v1/nodes/seeded >/dev/null 2>&1 && exit 19
code=$(curl -s -o /dev/null -w '%%{http_code}' --cacert "$K8S_DIR/ca.crt" \
	-H "Authorization: Bearer $(cat "$K8S_DIR/tokens/kept")" "$K8S_URL/api/v1/nodes/kept")
[ "$code" = 200 ] || { echo "kept user: HTTP $code"; exit 20; }
k8s_stop
echo ok
""" % (HERE, d, d, d, d, tmp, d, tmp, d, d)
    p = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)  # four server starts: a hang guard only
    check("start.sh: k8s_start exports K8S_DIR/K8S_PORT/K8S_PID, k8s_ctl works, k8s_stop stops it; "
          "restart on --port keeps tokens, loads --seed, resourceVersions keep growing; "
          "--keep-state keeps objects, users and rules",
          p.returncode == 0 and p.stdout.strip() == "ok", "rc=%d %s %s" % (p.returncode, p.stdout, p.stderr))


# ---------------------------------------------------------------------------

def main():
    args = sys.argv[1:]
    keep = "--keep" in args
    only = args[args.index("-k") + 1] if "-k" in args else None
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="k8s-selftest.")
    servers = []
    try:
        S = Srv(os.path.join(tmp, "main"), "--bookmark-interval", "0.2")
        servers.append(S)
        S.wait()
        extra = {}
        # the other certificates: same PKI (copied), separate servers
        for kind in ("ecdsa", "expired", "wrongname"):
            d = os.path.join(tmp, kind)
            shutil.copytree(os.path.join(S.dir, "pki"), os.path.join(d, "pki"))
            extra[kind] = Srv(d, "--cert", kind)
            servers.append(extra[kind])
        d = os.path.join(tmp, "hist")
        shutil.copytree(os.path.join(S.dir, "pki"), os.path.join(d, "pki"))
        H = Srv(d, "--history", "10")
        servers.append(H)
        v6ok = socket.has_ipv6
        if v6ok:
            try:
                with socket.socket(socket.AF_INET6) as s6:
                    s6.bind(("::1", 0))
            except OSError:
                v6ok = False
        if v6ok:
            d = os.path.join(tmp, "v6")
            shutil.copytree(os.path.join(S.dir, "pki"), os.path.join(d, "pki"))
            extra["v6"] = Srv(d, "--listen", "::1")
            servers.append(extra["v6"])
        for s in servers[1:]:
            s.wait()
        tests = [("files", lambda: t_files(S)), ("tls", lambda: t_tls(S, extra)),
                 ("auth", lambda: t_auth(S)), ("crud", lambda: t_crud(S)),
                 ("generation", lambda: t_generation(S)), ("managed-fields", lambda: t_managed_fields(S)),
                 ("selectors", lambda: t_selectors(S)),
                 ("namespaces", lambda: t_namespaces(S)),
                 ("paging", lambda: t_paging(S)), ("patch", lambda: t_patch(S)),
                 ("validation", lambda: t_validation(S)),
                 ("status", lambda: t_status_subresource(S)),
                 ("node-restriction", lambda: t_node_restriction(S)), ("watch", lambda: t_watch(S)),
                 ("history", lambda: t_watch_history(H)), ("drop", lambda: t_drop(S)),
                 ("faults", lambda: t_faults(S)), ("log", lambda: t_log(S)),
                 ("discovery", lambda: t_discovery(S)), ("ctl", lambda: t_ctl_objects(S)),
                 ("shutdown", lambda: t_shutdown(S)), ("start.sh", lambda: t_start_sh(tmp))]
        if not v6ok:
            skip("TLS: --listen ::1", "no IPv6 loopback on this machine")
        for name, fn in tests:
            if only and only not in name:
                continue
            t1 = time.time()
            try:
                fn()
                if "-v" in args:
                    print("# %s: %.1f s" % (name, time.time() - t1), file=sys.stderr)
            except Exception as e:
                report(False, "%s checks ran to completion" % name,
                       "%s: %s" % (type(e).__name__, traceback.format_exc()[-500:]))
        for s in servers:
            if s.p.poll() is None and s is not S:
                s.stop()
        errs = []
        for s in servers:
            t = s.logtail() if os.path.exists(os.path.join(s.dir, "server.log")) else ""
            if "Traceback" in t or "internal error" in t:
                errs.append(t)
        check("no server tracebacks or internal errors logged", not errs, " ".join(errs)[:500])
    except Exception as e:
        report(False, "self-test setup", "%s: %s" % (type(e).__name__, e))
    finally:
        for s in servers:
            if s.p.poll() is None:
                s.stop()
        if keep:
            print("kept %s" % tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("# k8s/server: %d passed, %d failed in %.1f s" % (passes, fails, time.time() - t_start),
          file=sys.stderr)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
