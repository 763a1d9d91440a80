#!/usr/bin/env python3
"""tests/k8s/server.py: a strict Kubernetes API server for the integration tests.

Python 3 standard library only.  Serves HTTPS on a free loopback port with a
per-run PKI made by the openssl CLI, keeps objects in memory, and implements the
API conventions the project's client relies on: resourceVersions from one global
counter, 409/404/422/415 Status errors, label and field selectors, paging with
expiring continue tokens, JSON / merge / strategic-merge patches, watches with
bookmarks and 410 Expired, bearer-token and client-certificate authentication
with per-user allow rules, and a control API under /__test/ for fault injection,
token rotation, history resets and the request log.  See README.md.

    python3 tests/k8s/server.py --dir DIR [--cert rsa|ecdsa|expired|wrongname]
        [--history N] [--bookmark-interval SECONDS] [--watch-chunks event|split|batch]
        [--port N] [--listen ADDR]
        [--seed FILE] [--verbose]
"""

import argparse
import base64
import collections
import datetime
import ipaddress
import json
import os
import queue
import random
import re
import secrets
import select
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 3 * 1024 * 1024          # real apiserver: 413 above 3 MiB
MAX_OBJECT = 1536 * 1024            # etcd's 1.5 MiB request limit: 500 "etcdserver: request is too large"
MAX_ANNOTATIONS = 256 * 1024        # TotalAnnotationSizeLimitB
LOG_MAX = 200000
SNAPSHOTS_MAX = 256

VERBOSE = False


def jcopy(v):
    """Deep copy of JSON data (much faster than copy.deepcopy for it)."""
    if isinstance(v, (dict, list)):
        return json.loads(json.dumps(v))
    return v


def log(msg):
    sys.stderr.write("k8s-test-server: %s\n" % msg)
    sys.stderr.flush()


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------
# Status errors

REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
    413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
    504: "Timeout",
}


def status_obj(code, reason, message, details=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
          "message": message, "reason": reason}
    if details:
        st["details"] = details
    st["code"] = code
    return st


class ApiError(Exception):
    def __init__(self, code, message, reason=None, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason if reason is not None else REASONS.get(code, "")
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        return status_obj(self.code, self.reason, self.message, self.details)


def _details(res, name):
    d = {}
    if name:
        d["name"] = name
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    return d


def not_found(res, name):
    return ApiError(404, '%s "%s" not found' % (res.gr(), name), details=_details(res, name))


def already_exists(res, name):
    return ApiError(409, '%s "%s" already exists' % (res.gr(), name), "AlreadyExists",
                    _details(res, name))


def conflict(res, name, why=None):
    return ApiError(409, 'Operation cannot be fulfilled on %s "%s": %s' % (
        res.gr(), name, why or "the object has been modified; please apply your changes "
        "to the latest version and try again"), "Conflict", _details(res, name))


# Kubernetes' NodeRestriction admission plugin (plugin/pkg/admission/noderestriction),
# for Nodes: a node user (system:node:<name> in the group system:nodes) may
# create, modify and delete only its own Node; it may not change spec.taints of
# its Node, nor add, change or remove a label in node-restriction.kubernetes.io
# or a subdomain (reserved so that nodes cannot forge it). The allow-list of
# kubernetes.io/k8s.io labels a kubelet may set is not emulated.
NODE_USER_PREFIX = "system:node:"
NODE_RESTRICTION_NS = "node-restriction.kubernetes.io"


def node_name_of(user, groups):
    if user.startswith(NODE_USER_PREFIX) and "system:nodes" in groups:
        return user[len(NODE_USER_PREFIX):]
    return None


def _restricted_label(key):
    ns = key.split("/", 1)[0] if "/" in key else ""
    return ns == NODE_RESTRICTION_NS or ns.endswith("." + NODE_RESTRICTION_NS)


def node_restriction(node, res, name, old, new):
    """Raises 403 as the real plugin does; old None: a create, new None: a delete."""
    if res.plural != "nodes":
        return

    def forbidden(why):
        return ApiError(403, 'nodes "%s" is forbidden: %s' % (name, why), details=_details(res, name))
    if name != node:
        raise forbidden('node "%s" is not allowed to modify node "%s"' % (node, name))
    if old is None or new is None:
        if new is not None:
            bad = sorted(k for k in (new.get("metadata", {}).get("labels") or {}) if _restricted_label(k))
            if bad:
                raise forbidden('node "%s" is not allowed to set the following labels: %s' % (node, ", ".join(bad)))
        return
    if not json_equal((old.get("spec") or {}).get("taints") or [], (new.get("spec") or {}).get("taints") or []):
        raise forbidden('node "%s" is not allowed to modify taints' % node)
    ol = old.get("metadata", {}).get("labels") or {}
    nl = new.get("metadata", {}).get("labels") or {}
    bad = sorted(k for k in set(ol) | set(nl) if _restricted_label(k) and ol.get(k) != nl.get(k))
    if bad:
        raise forbidden("is not allowed to modify labels: %s" % ", ".join(bad))


def bad_request(msg):
    return ApiError(400, msg)


def invalid(res, name, causes):
    """causes: list of (field, message-after-field) tuples."""
    parts = ["%s: %s" % (f, m) for f, m in causes]
    # the group-qualified kind, as the API server's GroupKind.String()
    msg = '%s "%s" is invalid: %s' % (res.kind + ("." + res.group if res.group else ""), name,
                                      parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]")
    d = {"name": name, "group": res.group, "kind": res.kind,
         "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]}
    if not res.group:
        del d["group"]
    return ApiError(422, msg, "Invalid", d)


# ---------------------------------------------------------------------------
# Resources

class Res:
    def __init__(self, group, version, plural, kind, namespaced, status=False, crd=False,
                 short=(), status_on_create=True, default_status=None, return_deleted=False,
                 schema=None):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.schema = schema                # a CRD version's openAPIV3Schema (see SCHEMA)
        self.namespaced, self.has_status, self.crd = namespaced, status, crd
        self.short = list(short)
        self.status_on_create = status_on_create
        self.default_status = default_status
        self.return_deleted = return_deleted
        self.api_version = "%s/%s" % (group, version) if group else version
        self.singular = kind.lower()

    def gr(self):
        return "%s.%s" % (self.plural, self.group) if self.group else self.plural

    def prefix(self):
        return "/apis/%s/%s" % (self.group, self.version) if self.group else "/api/v1"


# ---------------------------------------------------------------------------
# A YAML subset, enough for the CRD files under deploy/base/crds/ (and for
# what `kubectl kustomize` prints): block mappings and sequences (also a
# sequence at its key's indent, and "- key: v" items), plain, single- and
# double-quoted scalars (also folded over several lines, as kustomize wraps
# them), flow lists and maps, "|" and ">" block scalars, comments, "---"
# between documents. Plain scalars resolve as in YAML 1.2's core schema (null,
# true/false, integers, floats, else strings). Anchors, aliases, tags, "?" keys
# and directives are refused with YamlError naming the line.

class YamlError(Exception):
    pass


_YAML_INT = re.compile(r"[-+]?[0-9]+\Z")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_YAML_ESC = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
             "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
             "N": "\x85", "_": "\xa0"}


def _yaml_plain(s, where):
    if s[:1] in ("&", "*", "!", "?", "|", ">", "%", "@", "`"):
        raise YamlError("%s: unsupported YAML (anchor, alias, tag or indicator): %r" % (where, s))
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if _YAML_INT.match(s):
        return int(s)
    if re.match(r"0x[0-9a-fA-F]+\Z", s):
        return int(s[2:], 16)
    if re.match(r"0o[0-7]+\Z", s):
        return int(s[2:], 8)
    if _YAML_FLOAT.match(s):
        return float(s)
    return s


def _yaml_quoted(s, i, where):
    """The quoted scalar starting at s[i]: (value, index after it)."""
    q, out, i = s[i], [], i + 1
    while i < len(s):
        c = s[i]
        if q == "'" and c == "'":
            if s[i + 1:i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), i + 1
        if q == '"' and c == '"':
            return "".join(out), i + 1
        if q == '"' and c == "\\":
            e = s[i + 1:i + 2]
            if e in ("x", "u", "U"):
                n = {"x": 2, "u": 4, "U": 8}[e]
                try:
                    out.append(chr(int(s[i + 2:i + 2 + n], 16)))
                except ValueError:
                    raise YamlError("%s: bad escape in %s" % (where, s))
                i += 2 + n
                continue
            if e not in _YAML_ESC:
                raise YamlError("%s: bad escape \\%s" % (where, e))
            out.append(_YAML_ESC[e])
            i += 2
            continue
        out.append(c)
        i += 1
    raise YamlError("%s: unterminated quoted string" % where)


def _yaml_strip_comment(s):
    """s without a trailing comment ("#" after a blank, outside quotes)."""
    q = None
    for i, c in enumerate(s):
        if q:
            if c == q:
                q = None if q == '"' or s[i + 1:i + 2] != "'" else q
            elif c == "\\" and q == '"':
                pass
        elif c in "'\"" and (i == 0 or s[i - 1] in " \t[{,:-"):
            q = c
        elif c == "#" and (i == 0 or s[i - 1] in " \t"):
            return s[:i].rstrip()
    return s.rstrip()


def _yaml_flow(s, i, where):
    """The flow node at s[i] ([...], {...}, quoted or plain): (value, next index)."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s):
        raise YamlError("%s: unterminated flow collection (must be on one line)" % where)
    c = s[i]
    if c in "[{":
        close, out = ("]", []) if c == "[" else ("}", {})
        i += 1
        while True:
            while i < len(s) and s[i] == " ":
                i += 1
            if i < len(s) and s[i] == close:
                return out, i + 1
            if c == "[":
                v, i = _yaml_flow(s, i, where)
                out.append(v)
            else:
                k, i = _yaml_flow(s, i, where)
                while i < len(s) and s[i] == " ":
                    i += 1
                if i < len(s) and s[i] == ":":
                    v, i = _yaml_flow(s, i + 1, where)
                else:
                    v = None
                if not isinstance(k, str) and k is not None:
                    k = str(k).lower() if isinstance(k, bool) else str(k)
                if k in out:
                    raise YamlError("%s: duplicate key %r" % (where, k))
                out[k] = v
            while i < len(s) and s[i] == " ":
                i += 1
            if i < len(s) and s[i] == ",":
                i += 1
            elif i < len(s) and s[i] == close:
                continue
            else:
                raise YamlError("%s: expected ',' or '%s' in %s" % (where, close, s))
    if c in "'\"":
        return _yaml_quoted(s, i, where)
    j = i
    while j < len(s) and s[j] not in ",]}" and not (s[j] == ":" and s[j + 1:j + 2] in ("", " ", ",", "]", "}")):
        j += 1
    return _yaml_plain(s[i:j].strip(), where), j


def _yaml_key(content, where):
    """(key, rest) when content is a "key: value" entry, else None."""
    if content[:1] in "'\"":
        k, i = _yaml_quoted(content, 0, where)
        if content[i:i + 1] == ":" and content[i + 1:i + 2] in ("", " "):
            return k, content[i + 1:].strip()
        return None
    if content[:1] in "[{":
        return None
    m = re.match(r"([^#]*?):( |$)", content)
    if not m:
        return None
    k = m.group(1).strip()
    if k[:1] in ("&", "*", "!", "?"):
        raise YamlError("%s: unsupported key %r" % (where, k))
    return k, content[m.end():].strip()


class _YamlDoc:
    def __init__(self, lines, name):
        self.raw = lines  # (lineno, text) of one document
        self.name = name
        self.lines = []   # (lineno, indent, content) of the lines that carry structure
        for n, t in lines:
            if "\t" in t[:len(t) - len(t.lstrip(" \t"))]:
                raise YamlError("%s:%d: tab in indentation" % (name, n))
            c = t.strip()
            if not c or c.startswith("#"):
                continue
            self.lines.append((n, len(t) - len(t.lstrip(" ")), t.strip()))
        self.i = 0

    def where(self):
        return "%s:%d" % (self.name, self.lines[min(self.i, len(self.lines) - 1)][0])

    def parse(self):
        if not self.lines:
            return None
        v = self.node(self.lines[0][1])
        if self.i < len(self.lines):
            raise YamlError("%s: unexpected content (bad indentation?)" % self.where())
        return v

    def node(self, ind, owner=None):
        """The node at the current line (indent ind); a scalar's continuation
        lines must be indented more than owner (default ind)."""
        n, cur, content = self.lines[self.i]
        if cur != ind:
            raise YamlError("%s: bad indentation" % self.where())
        if content == "-" or content.startswith("- "):
            return self.seq(ind)
        if _yaml_key(_yaml_strip_comment(content), self.where()) is not None:
            return self.map(ind)
        self.i += 1
        return self.inline(_yaml_strip_comment(content), n, ind if owner is None else owner)

    def continued(self, first, n, ind):
        """first plus its continuation lines (indented more than ind), folded
        as YAML folds a multi-line flow scalar: one line break is a space, each
        blank line a newline."""
        k = next(k for k, (ln, _) in enumerate(self.raw) if ln == n) + 1
        parts, plain = [first], first[:1] not in "'\"[{"
        while k < len(self.raw):
            t = self.raw[k][1]
            if not t.strip():
                parts.append("")
            elif len(t) - len(t.lstrip(" ")) > ind and not (plain and t.strip().startswith("#")):
                parts.append(_yaml_strip_comment(t).strip() if plain else t.strip())
            else:
                break
            k += 1
        while parts[-1] == "" and len(parts) > 1:
            parts.pop()
        end = self.raw[k][0] if k < len(self.raw) else None
        while self.i < len(self.lines) and (end is None or self.lines[self.i][0] < end):
            self.i += 1
        out = ""
        for p in parts:
            if not p:
                out += "\n"
            elif not out or out.endswith("\n"):
                out += p
            else:
                out += " " + p
        return out

    def inline(self, s, n, ind):
        where = "%s:%d" % (self.name, n)
        if s[:1] in "|>":
            return self.block_scalar(s, n, ind)
        s = self.continued(s, n, ind)
        if s[:1] in "[{\"'":
            v, j = _yaml_flow(s, 0, where)
            if s[j:].strip():
                raise YamlError("%s: trailing characters after %s" % (where, s[:j]))
            return v
        return _yaml_plain(s, where)

    def block_scalar(self, header, n, ind):
        m = re.match(r"([|>])([-+]?)([1-9]?)([-+]?)\Z", header)
        if not m:
            raise YamlError("%s:%d: bad block scalar header %r" % (self.name, n, header))
        style, chomp = m.group(1), m.group(2) or m.group(4)
        k = next(k for k, (ln, _) in enumerate(self.raw) if ln == n) + 1
        body = []
        while k < len(self.raw):
            t = self.raw[k][1]
            if t.strip() and len(t) - len(t.lstrip(" ")) <= ind:
                break
            body.append(t)
            k += 1
        end = self.raw[k][0] if k < len(self.raw) else None
        while self.i < len(self.lines) and (end is None or self.lines[self.i][0] < end):
            self.i += 1
        trail = 0
        while body and not body[-1].strip():
            body.pop()
            trail += 1
        if m.group(3):
            bi = ind + int(m.group(3))
        else:
            bi = min((len(t) - len(t.lstrip(" ")) for t in body if t.strip()), default=ind + 1)
        rows = [t[bi:] if t.strip() else "" for t in body]
        if style == "|":
            text = "\n".join(rows)
        else:
            text, prev_blank = "", True
            for r in rows:
                if not r:
                    text += "\n"
                    prev_blank = True
                elif r.startswith(" "):
                    text += ("" if prev_blank or text.endswith("\n") else "\n") + r + "\n"
                    prev_blank = True
                else:
                    text += ("" if prev_blank else " ") + r
                    prev_blank = False
            text = text.rstrip("\n") if not rows or rows[-1] else text
        if not rows:
            return ""
        if chomp == "-":
            return text
        if chomp == "+":
            return text + "\n" * (1 + trail)
        return text + "\n"

    def map(self, ind):
        out = {}
        while self.i < len(self.lines) and self.lines[self.i][1] == ind:
            n, _, content = self.lines[self.i]
            if content == "-" or content.startswith("- "):
                break
            kv = _yaml_key(_yaml_strip_comment(content), self.where())
            if kv is None:
                raise YamlError("%s: expected 'key: value'" % self.where())
            k, rest = kv
            if k in out:
                raise YamlError("%s: duplicate key %r" % (self.where(), k))
            self.i += 1
            if rest:
                out[k] = self.inline(rest, n, ind)
            elif self.i < len(self.lines) and self.lines[self.i][1] > ind:
                out[k] = self.node(self.lines[self.i][1])
            elif self.i < len(self.lines) and self.lines[self.i][1] == ind and (
                    self.lines[self.i][2] == "-" or self.lines[self.i][2].startswith("- ")):
                out[k] = self.seq(ind)
            else:
                out[k] = None
        return out

    def seq(self, ind):
        out = []
        while self.i < len(self.lines) and self.lines[self.i][1] == ind:
            n, _, content = self.lines[self.i]
            if not (content == "-" or content.startswith("- ")):
                break
            rest = content[1:].lstrip(" ")
            if not rest or rest.startswith("#"):
                self.i += 1
                if self.i < len(self.lines) and self.lines[self.i][1] > ind:
                    out.append(self.node(self.lines[self.i][1]))
                else:
                    out.append(None)
                continue
            # "- x": x stands as if on its own line, at its column
            self.lines[self.i] = (n, ind + len(content) - len(rest), rest)
            out.append(self.node(ind + len(content) - len(rest), owner=ind))
        return out


def yaml_load_all(text, name="<yaml>"):
    """The documents of a YAML stream in the subset above, as Python data."""
    docs, cur = [], []
    for n, t in enumerate(text.split("\n"), 1):
        t = t.rstrip("\r")
        if t.startswith("%"):
            raise YamlError("%s:%d: directives are not supported" % (name, n))
        if t.rstrip() == "---" or t.startswith("--- ") or t.rstrip() == "...":
            docs.append(cur)
            cur = []
            if t.startswith("--- ") and _yaml_strip_comment(t[4:]).strip():
                raise YamlError("%s:%d: content after '---' is not supported" % (name, n))
            continue
        cur.append((n, t))
    docs.append(cur)
    out = []
    for d in docs:
        doc = _YamlDoc(d, name)
        if doc.lines:
            out.append(doc.parse())
    return out

# The custom resources are those of the project's own CRD files (one source of
# truth with deploy/): FB_CRD_DIR, default deploy/base/crds of this tree.
CRD_DIR = os.environ.get("FB_CRD_DIR") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "deploy", "base", "crds")


def crd_resources(d):
    """One Res per served version of each CustomResourceDefinition in d/*.yaml:
    group, version, plural, kind, scope, shortNames and the status subresource
    come from the file. As a real apiserver does for custom resources, status
    is dropped on create when the status subresource exists, and DELETE
    answers with the object."""
    out = []
    try:
        files = sorted(f for f in os.listdir(d) if f.endswith(".yaml"))
        for f in files:
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                docs = yaml_load_all(fh.read(), path)
            for doc in docs:
                if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                    continue
                spec, names = doc["spec"], doc["spec"]["names"]
                for v in spec["versions"]:
                    if not v.get("served"):
                        continue
                    status = "status" in (v.get("subresources") or {})
                    out.append(Res(spec["group"], v["name"], names["plural"], names["kind"],
                                   spec["scope"] == "Namespaced", status=status, crd=True,
                                   short=names.get("shortNames") or (), status_on_create=not status,
                                   return_deleted=True,
                                   schema=(v.get("schema") or {}).get("openAPIV3Schema")))
    except (OSError, YamlError, KeyError, TypeError) as e:
        sys.exit("server.py: cannot load the CRDs of %s: %s: %s" % (d, type(e).__name__, e))
    if not out:
        sys.exit("server.py: no CustomResourceDefinition in %s/*.yaml" % d)
    return out


RESOURCES = [
    Res("", "v1", "nodes", "Node", False, status=True, short=["no"]),
    Res("", "v1", "namespaces", "Namespace", False, status=True, short=["ns"],
        status_on_create=False, default_status={"phase": "Active"}),
    Res("", "v1", "pods", "Pod", True, status=True, short=["po"], status_on_create=False,
        default_status={"phase": "Pending"}, return_deleted=True),
    Res("", "v1", "configmaps", "ConfigMap", True, short=["cm"]),
    Res("", "v1", "events", "Event", True, short=["ev"]),
    Res("coordination.k8s.io", "v1", "leases", "Lease", True),
    Res("batch", "v1", "jobs", "Job", True, status=True, status_on_create=False,
        default_status={}),
] + crd_resources(CRD_DIR)
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
BY_GVK = {(r.api_version, r.kind): r for r in RESOURCES}
BY_PLURAL = {r.plural: r for r in RESOURCES}
VERBS_ALL = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def discovery_resources(group, version):
    out = []
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        e = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
             "kind": r.kind, "verbs": VERBS_ALL}
        if r.short:
            e["shortNames"] = r.short
        out.append(e)
        if r.has_status:
            out.append({"name": r.plural + "/status", "singularName": "", "namespaced": r.namespaced,
                        "kind": r.kind, "verbs": ["get", "patch", "update"]})
    return out


def groups():
    seen = collections.OrderedDict()
    for r in RESOURCES:
        if r.group:
            seen.setdefault(r.group, [])
            if r.version not in seen[r.group]:
                seen[r.group].append(r.version)
    return seen


def api_group(g, versions):
    vs = [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in versions]
    return {"name": g, "versions": vs, "preferredVersion": vs[0]}


# ---------------------------------------------------------------------------
# PKI and the files in DIR

SANS = "IP:127.0.0.1, IP:::1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, " \
       "DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local"

EXT_CNF = """\
[srv]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = %(sans)s
[wrong]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:wrong.example
[cli]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
""" % {"sans": SANS}

CA_CNF = """\
[ca]
default_ca = test
[test]
database = cadb/index.txt
serial = cadb/serial
new_certs_dir = cadb
certificate = ca.crt
private_key = ca.key
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
[any]
commonName = supplied
[srv]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = %(sans)s
""" % {"sans": SANS}


def openssl(args, cwd):
    p = subprocess.run(["openssl"] + args, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args[:2]), p.stderr.strip()[-800:]))


def make_pki(d):
    """DIR/pki: made once per DIR (reused on restart)."""
    pki = os.path.join(d, "pki")
    if os.path.exists(os.path.join(pki, "complete")):
        return pki
    tmp = pki + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(pki, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "ext.cnf"), "w") as f:
        f.write(EXT_CNF)
    with open(os.path.join(tmp, "ca.cnf"), "w") as f:
        f.write(CA_CNF)
    ca_ext = ["-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"]
    openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.crt", "-days", "30", "-subj", "/CN=featurebox test kube CA"] + ca_ext, tmp)
    openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", "other-ca.key", "-out", "other-ca.crt", "-days", "30",
             "-subj", "/CN=unrelated CA"] + ca_ext, tmp)
    openssl(["ecparam", "-name", "prime256v1", "-out", "ec.param"], tmp)

    def sign(name, section, keyspec, subj):
        openssl(["req", "-new", "-newkey", keyspec, "-nodes", "-keyout", name + ".key",
                 "-out", name + ".csr", "-subj", subj], tmp)
        openssl(["x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "30", "-extfile", "ext.cnf", "-extensions",
                 section, "-out", name + ".crt"], tmp)
        os.unlink(os.path.join(tmp, name + ".csr"))

    sign("server-rsa", "srv", "rsa:2048", "/CN=kube-apiserver")
    sign("server-ecdsa", "srv", "ec:ec.param", "/CN=kube-apiserver")
    sign("server-wrongname", "wrong", "ec:ec.param", "/CN=wrong.example")
    # client identities: CN = user, O = group (kubeadm and kubelet key formats:
    # PKCS#1 "RSA PRIVATE KEY" for admin, SEC1 "EC PRIVATE KEY" for the node)
    sign("client-admin", "cli", "rsa:2048", "/O=system:masters/CN=admin")
    sign("client-node1", "cli", "ec:ec.param", "/O=system:nodes/CN=system:node:node1")
    for k in ("client-admin", "client-node1"):
        openssl(["pkey", "-in", k + ".key", "-out", k + ".trad", "-traditional"], tmp)
        os.replace(os.path.join(tmp, k + ".trad"), os.path.join(tmp, k + ".key"))
    # expired: OpenSSL 3.0's `x509 -req` cannot put dates in the past, `ca` can
    os.makedirs(os.path.join(tmp, "cadb"))
    open(os.path.join(tmp, "cadb", "index.txt"), "w").close()
    with open(os.path.join(tmp, "cadb", "serial"), "w") as f:
        f.write("1000\n")
    openssl(["req", "-new", "-newkey", "ec:ec.param", "-nodes", "-keyout", "server-expired.key",
             "-out", "server-expired.csr", "-subj", "/CN=kube-apiserver"], tmp)
    openssl(["ca", "-batch", "-config", "ca.cnf", "-extensions", "srv", "-startdate",
             "20200101000000Z", "-enddate", "20200201000000Z", "-in", "server-expired.csr",
             "-out", "server-expired.crt", "-notext"], tmp)
    for n in ("ca", "other-ca", "server-rsa", "server-ecdsa", "server-wrongname",
              "server-expired", "client-admin", "client-node1"):
        if not os.path.getsize(os.path.join(tmp, n + ".crt")):
            raise RuntimeError("PKI: %s.crt not made" % n)
    open(os.path.join(tmp, "complete"), "w").close()
    os.rename(tmp, pki)
    return pki


def write_atomic(path, data, mode=0o644):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def yq(s):
    """A YAML scalar: plain when safe, else double-quoted (JSON escapes are YAML escapes)."""
    s = str(s)
    if re.fullmatch(r"[A-Za-z0-9_./][A-Za-z0-9_./:@-]*", s) and s not in ("true", "false", "null", "yes", "no", "on", "off", "~"):
        return s
    return json.dumps(s)


def kubeconfig(server, user_name, cluster_lines, user_lines):
    lines = ["apiVersion: v1", "kind: Config", "clusters:", "- name: test", "  cluster:",
             "    server: " + yq(server)]
    lines += ["    " + l for l in cluster_lines]
    lines += ["contexts:", "- name: test", "  context:", "    cluster: test",
              "    user: " + yq(user_name), "current-context: test", "preferences: {}",
              "users:", "- name: " + yq(user_name), "  user:"]
    lines += ["    " + l for l in user_lines]
    return "\n".join(lines) + "\n"


def b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


# ---------------------------------------------------------------------------
# Tokens and users

# node users with a token file and kubeconfig-NODE: each may act only as its own Node
NODE_USERS = ("node1", "node2", "node3")
USER_ALIASES = {n: "system:node:" + n for n in NODE_USERS}

DEFAULT_RULES = {
    "admin": [{"verbs": ["*"], "resources": ["*"]}],
    "system:node:node1": [
        {"verbs": ["get", "list", "watch", "patch", "update"], "resources": ["nodes"]},
        {"verbs": ["get", "patch", "update"], "resources": ["nodes/status"]},
        {"verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
         "resources": ["nodefeatures", "physicalgpus"]},
        {"verbs": ["get", "patch", "update"], "resources": ["physicalgpus/status"]},
        {"verbs": ["get", "list", "watch"], "resources": ["configmaps"]},
        {"verbs": ["create", "patch"], "resources": ["events"]},
    ],
}
for _n in NODE_USERS[1:]:
    DEFAULT_RULES["system:node:" + _n] = DEFAULT_RULES["system:node:node1"]


def username_of(short):
    return USER_ALIASES.get(short, short)


def short_of(username):
    for k, v in USER_ALIASES.items():
        if v == username:
            return k
    return username


class Auth:
    """Tokens (token -> username, optional expiry) and allow rules per username."""

    def __init__(self, d):
        self.dir = d
        self.lock = threading.Lock()
        self.tokens = {}
        self.rules = jcopy(DEFAULT_RULES)
        self.tokdir = os.path.join(d, "tokens")
        self.datadir = os.path.join(self.tokdir, ".data")
        os.makedirs(self.datadir, exist_ok=True)

    def _publish(self, short, token):
        """kubelet-style: write a new data file, then atomically swap the symlink."""
        link = os.path.join(self.tokdir, short)
        n = "%s.%d.%s" % (short, int(time.time() * 1000), secrets.token_hex(3))
        write_atomic(os.path.join(self.datadir, n), token + "\n", 0o600)
        old = None
        if os.path.islink(link):
            old = os.path.realpath(link)
        tmpl = os.path.join(self.tokdir, ".%s.link.tmp" % short)
        if os.path.lexists(tmpl):
            os.unlink(tmpl)
        os.symlink(os.path.join(".data", n), tmpl)
        os.replace(tmpl, link)
        if old and os.path.dirname(old) == os.path.realpath(self.datadir) and \
                os.path.basename(old) != n:
            try:
                os.unlink(old)
            except OSError:
                pass
        if short == "admin":
            write_atomic(os.path.join(self.dir, "admin.token"), token + "\n", 0o600)

    def ensure(self, short):
        """The user's current token: reused from DIR/tokens/<user> across restarts."""
        link = os.path.join(self.tokdir, short)
        tok = None
        try:
            with open(link) as f:
                tok = f.read().strip()
        except OSError:
            pass
        if not tok or not re.fullmatch(r"[A-Za-z0-9_.-]+", tok):
            tok = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[tok] = {"user": username_of(short), "expires": None}
        if not os.path.islink(link):
            if os.path.lexists(link):
                os.unlink(link)
            self._publish(short, tok)
        elif short == "admin":
            write_atomic(os.path.join(self.dir, "admin.token"), tok + "\n", 0o600)
        return tok

    def rotate(self, short, grace):
        username = username_of(short)
        tok = secrets.token_urlsafe(24)
        with self.lock:
            for t, e in self.tokens.items():
                if e["user"] == username:
                    exp = time.time() + grace if grace > 0 else 0
                    if e["expires"] is None or e["expires"] > exp:
                        e["expires"] = exp
            self.tokens[tok] = {"user": username, "expires": None}
            self.rules.setdefault(username, [])
        self._publish(short, tok)
        return tok

    def revoke(self, token):
        with self.lock:
            return self.tokens.pop(token, None) is not None

    def revoke_user(self, short):
        username = username_of(short)
        n = 0
        with self.lock:
            for t in [t for t, e in self.tokens.items() if e["user"] == username]:
                del self.tokens[t]
                n += 1
        return n

    def user_of_token(self, token):
        with self.lock:
            e = self.tokens.get(token)
            if e is None:
                return None
            if e["expires"] is not None and e["expires"] <= time.time():
                del self.tokens[token]
                return None
            return e["user"]

    def allowed(self, user, groups, verb, resource, namespace):
        if "system:masters" in groups:
            return True
        with self.lock:
            rules = self.rules.get(user, [])
            for r in rules:
                if ("*" in r.get("verbs", []) or verb in r.get("verbs", [])) and \
                        ("*" in r.get("resources", []) or resource in r.get("resources", [])):
                    nss = r.get("namespaces")
                    if nss and (namespace is None or namespace not in nss) and "*" not in nss:
                        continue
                    return True
        return False

    def set_rules(self, short, rules):
        if not isinstance(rules, list) or not all(
                isinstance(r, dict) and isinstance(r.get("verbs"), list) and
                isinstance(r.get("resources"), list) for r in rules):
            raise bad_request("rules: a list of {verbs: [...], resources: [...], "
                              "namespaces: [...] (optional)}")
        with self.lock:
            self.rules[username_of(short)] = rules

    def get_rules(self):
        with self.lock:
            return jcopy(self.rules)


# ---------------------------------------------------------------------------
# Validation (Kubernetes apimachinery rules)

QNAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
DNS1123_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUB_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUANTITY_RE = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
QNAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
             "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
SUB_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
           "'-' or '.', and must start and end with an alphanumeric character (e.g. "
           "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
           "([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
             "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
             "or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)"
             "?[A-Za-z0-9])?')")


def qualified_name_errors(k):
    """[] when k is a valid qualified name (label key / annotation key)."""
    if not isinstance(k, str):
        return ["must be a string"]
    errs = []
    parts = k.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errs.append("prefix part must be no more than 253 characters")
        elif not DNS1123_SUB_RE.fullmatch(prefix):
            errs.append("prefix part " + SUB_MSG)
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                "[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
                "'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    elif not QNAME_RE.fullmatch(name):
        errs.append(QNAME_MSG)
    return errs


def label_value_errors(v):
    if not isinstance(v, str):
        return ["must be a string"]
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if v and not QNAME_RE.fullmatch(v):
        errs.append(VALUE_MSG)
    return errs


def q(v):
    return json.dumps(v) if isinstance(v, str) else json.dumps(v)


def validate_meta_maps(meta, causes, base="metadata"):
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, dict):
            causes.append((base + ".labels", "Invalid value: must be an object"))
        else:
            for k, v in labels.items():
                for e in qualified_name_errors(k):
                    causes.append((base + ".labels", "Invalid value: %s: %s" % (q(k), e)))
                for e in label_value_errors(v):
                    causes.append((base + ".labels", "Invalid value: %s: %s" % (q(v), e)))
    ann = meta.get("annotations")
    if ann is not None:
        if not isinstance(ann, dict):
            causes.append((base + ".annotations", "Invalid value: must be an object"))
        else:
            total = 0
            for k, v in ann.items():
                # apimachinery lower-cases annotation keys before checking them
                for e in qualified_name_errors(k.lower()):
                    causes.append((base + ".annotations", "Invalid value: %s: %s" % (q(k), e)))
                if not isinstance(v, str):
                    causes.append((base + ".annotations", "Invalid value: %s: must be a string" % q(k)))
                else:
                    total += len(k) + len(v)
            if total > MAX_ANNOTATIONS:
                causes.append((base + ".annotations", "Too long: must have at most %d bytes"
                               % MAX_ANNOTATIONS))


# ---------------------------------------------------------------------------
# A CRD's structural schema, as the apiserver applies it to custom resources
# (apiextensions-apiserver: pruning, then OpenAPI validation). Off unless
# --schema or FB_K8S_SCHEMA=1: most suites write objects straight through the
# control API or test the clients against the server's other rules, and a
# suite that wants the CRD files held to their schemas asks for it.
#   pruning: a field an object schema does not list is dropped (but under
#     x-kubernetes-preserve-unknown-fields: true; additionalProperties lists
#     every key); apiVersion, kind and metadata at the root are kept; a null
#     is dropped unless the field is nullable.
#   validation: type (an integral float counts as an integer), enum,
#     required, format date-time, pattern, min/maxLength, min/maxItems,
#     minimum/maximum, and unique keys in x-kubernetes-list-type map and set
#     lists; 422 Invalid with one cause per field, in the apiserver's words.

SCHEMA = os.environ.get("FB_K8S_SCHEMA") == "1"
RFC3339_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                        r"([Zz]|[+-][0-9]{2}:[0-9]{2})\Z")
_JSON_TYPES = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
               "object": "object", "array": "array"}


def _json_type(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "null"


def schema_prune(sch, v, root=False):
    """Drops from v (in place) what schema sch does not know; returns v."""
    if not isinstance(sch, dict):
        return v
    if isinstance(v, dict):
        props = sch.get("properties")
        addl = sch.get("additionalProperties")
        keep = sch.get("x-kubernetes-preserve-unknown-fields") is True
        for k in list(v):
            if root and k in ("apiVersion", "kind", "metadata"):
                continue
            sub = props.get(k) if isinstance(props, dict) else None
            if sub is None and isinstance(addl, dict):
                sub = addl
            if sub is None and not keep and addl is not True:
                del v[k]
            elif sub is not None:
                if v[k] is None and not sub.get("nullable"):
                    del v[k]
                else:
                    schema_prune(sub, v[k])
    elif isinstance(v, list) and isinstance(sch.get("items"), dict):
        for i in reversed(range(len(v))):
            schema_prune(sch["items"], v[i])
    return v


def schema_causes(sch, v, path, causes):
    """Appends (field, message) for each way v breaks schema sch."""
    if not isinstance(sch, dict):
        return
    if v is None:
        if not sch.get("nullable") and sch.get("type"):
            causes.append((path, "Invalid value: \"null\": %s in body must be of type %s: \"null\""
                           % (path, sch["type"])))
        return
    t, got = sch.get("type"), _json_type(v)
    if t in _JSON_TYPES and got != t and not (
            t == "number" and got == "integer") and not (
            t == "integer" and got == "number" and float(v).is_integer()) and not (
            sch.get("x-kubernetes-int-or-string") and got in ("integer", "string")):
        causes.append((path, 'Invalid value: "%s": %s in body must be of type %s: "%s"'
                       % (got, path, t, got)))
        return
    if "enum" in sch and v not in sch["enum"]:
        causes.append((path, "Unsupported value: %s: supported values: %s"
                       % (json.dumps(v), ", ".join(json.dumps(e) for e in sch["enum"]))))
    if isinstance(v, str):
        if sch.get("format") == "date-time" and not RFC3339_RE.match(v):
            causes.append((path, 'Invalid value: %s: %s in body must be of type date-time: %s'
                           % (json.dumps(v), path, json.dumps(v))))
        if "maxLength" in sch and len(v) > sch["maxLength"]:
            causes.append((path, "Too long: may not be more than %d bytes" % sch["maxLength"]))
        if "minLength" in sch and len(v) < sch["minLength"]:
            causes.append((path, "Invalid value: %s: %s in body should be at least %d chars long"
                           % (json.dumps(v), path, sch["minLength"])))
        if "pattern" in sch and not re.search(sch["pattern"], v):
            causes.append((path, "Invalid value: %s: %s in body should match '%s'"
                           % (json.dumps(v), path, sch["pattern"])))
    if got in ("integer", "number"):
        if "minimum" in sch and v < sch["minimum"]:
            causes.append((path, "Invalid value: %s: %s in body should be greater than or equal "
                           "to %s" % (json.dumps(v), path, sch["minimum"])))
        if "maximum" in sch and v > sch["maximum"]:
            causes.append((path, "Invalid value: %s: %s in body should be less than or equal to %s"
                           % (json.dumps(v), path, sch["maximum"])))
    if isinstance(v, dict):
        for k in sch.get("required") or ():
            if k not in v:
                causes.append((path + "." + k if path else k, "Required value"))
        props = sch.get("properties") or {}
        addl = sch.get("additionalProperties")
        for k, x in v.items():
            sub = props.get(k, addl if isinstance(addl, dict) else None)
            if sub is not None and not (path == "" and k in ("apiVersion", "kind", "metadata")):
                schema_causes(sub, x, path + "." + k if path else k, causes)
    if isinstance(v, list):
        if "maxItems" in sch and len(v) > sch["maxItems"]:
            causes.append((path, "Too many: %d: must have at most %d items" % (len(v), sch["maxItems"])))
        if "minItems" in sch and len(v) < sch["minItems"]:
            causes.append((path, "Invalid value: %d: %s in body should have at least %d items"
                           % (len(v), path, sch["minItems"])))
        lt, seen = sch.get("x-kubernetes-list-type"), set()
        for i, x in enumerate(v):
            p = "%s[%d]" % (path, i)
            schema_causes(sch.get("items"), x, p, causes)
            if lt == "set" or (lt == "map" and isinstance(x, dict)):
                key = json.dumps(x if lt == "set" else [x.get(k) for k in
                                                        sch.get("x-kubernetes-list-map-keys") or ()],
                                 sort_keys=True)
                if key in seen:
                    causes.append((p, "Duplicate value: %s" % key))
                seen.add(key)


def schema_apply(res, obj):
    """Prunes obj (in place) by res's CRD schema when SCHEMA is on."""
    if SCHEMA and res.schema:
        schema_prune(res.schema, obj, root=True)


def validate(res, obj, for_update=False):
    """Raises 422 Invalid with causes."""
    meta = obj.get("metadata")
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    causes = []
    if not isinstance(meta, dict):
        raise invalid(res, "", [("metadata", "Required value")])
    if not isinstance(name, str) or not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif res.plural == "namespaces":
        if len(name) > 63 or not DNS1123_LABEL_RE.fullmatch(name):
            causes.append(("metadata.name", "Invalid value: %s: %s" % (q(name), LABEL_MSG)))
    elif len(name) > 253 or not DNS1123_SUB_RE.fullmatch(name):
        causes.append(("metadata.name", "Invalid value: %s: %s" % (q(name), SUB_MSG)))
    validate_meta_maps(meta, causes)
    fin = meta.get("finalizers")
    if fin is not None and (not isinstance(fin, list) or not all(isinstance(x, str) for x in fin)):
        causes.append(("metadata.finalizers", "Invalid value: must be a list of strings"))
    if res.plural == "nodes":
        spec = obj.get("spec") or {}
        taints = spec.get("taints") if isinstance(spec, dict) else None
        if taints is not None:
            if not isinstance(taints, list):
                causes.append(("spec.taints", "Invalid value: must be a list"))
            else:
                seen = set()
                for i, t in enumerate(taints):
                    f = "spec.taints[%d]" % i
                    if not isinstance(t, dict):
                        causes.append((f, "Invalid value: must be an object"))
                        continue
                    for e in qualified_name_errors(t.get("key", "")):
                        causes.append((f + ".key", "Invalid value: %s: %s" % (q(t.get("key", "")), e)))
                    for e in label_value_errors(t.get("value", "")):
                        causes.append((f + ".value", "Invalid value: %s: %s" % (q(t.get("value")), e)))
                    if t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                        causes.append((f + ".effect", 'Unsupported value: %s: supported values: '
                                       '"NoSchedule", "PreferNoSchedule", "NoExecute"' % q(t.get("effect"))))
                    kk = (t.get("key"), t.get("effect"))
                    if kk in seen:
                        causes.append((f, "Duplicate value: %s" % q("%s:%s" % kk)))
                    seen.add(kk)
        st = obj.get("status") or {}
        for fld in ("capacity", "allocatable"):
            m = st.get(fld) if isinstance(st, dict) else None
            if m is None:
                continue
            if not isinstance(m, dict):
                causes.append(("status." + fld, "Invalid value: must be an object"))
                continue
            for k, v in m.items():
                for e in qualified_name_errors(k):
                    causes.append(("status.%s[%s]" % (fld, k), "Invalid value: %s: %s" % (q(k), e)))
                if not isinstance(v, str) or not QUANTITY_RE.fullmatch(v):
                    causes.append(("status.%s[%s]" % (fld, k), "Invalid value: %s: quantities must "
                                   "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*"
                                   "[-+]?[0-9]*)$'" % q(v)))
    if SCHEMA and res.schema:
        schema_causes(res.schema, obj, "", causes)
    if res.plural == "configmaps":
        for fld in ("data", "binaryData"):
            m = obj.get(fld)
            if m is not None and (not isinstance(m, dict) or not all(
                    isinstance(v, str) for v in m.values())):
                causes.append((fld, "Invalid value: must be a map of strings"))
    if causes:
        raise invalid(res, name if isinstance(name, str) else "", causes)
    # what passes validation goes to etcd, which refuses a request over 1.5 MiB;
    # the apiserver passes its error on as a 500
    if len(json.dumps(obj, separators=(",", ":"))) > MAX_OBJECT:
        raise ApiError(500, "etcdserver: request is too large")


# ---------------------------------------------------------------------------
# Selectors

class Selector:
    """Label selector: list of (key, op, values)."""

    TOK = re.compile(r"\s*(\(|\)|,|!=|==|=|!|[^\s(),=!]+)")

    def __init__(self, s):
        self.reqs = []
        self.src = s
        if s is None or s.strip() == "":
            return
        toks = []
        pos = 0
        while pos < len(s):
            if s[pos:].strip() == "":
                break
            m = self.TOK.match(s, pos)
            if not m:
                raise bad_request("unable to parse requirement: invalid label selector %r" % s)
            toks.append(m.group(1))
            pos = m.end()
        i = 0

        def err(msg):
            raise bad_request("unable to parse requirement: %s (label selector %r)" % (msg, s))

        def word(t):
            return t not in ("(", ")", ",", "!=", "==", "=", "!")

        while i < len(toks):
            neg = False
            if toks[i] == "!":
                neg = True
                i += 1
            if i >= len(toks) or not word(toks[i]):
                err("found end of selector or punctuation, expected key")
            key = toks[i]
            i += 1
            ke = qualified_name_errors(key)
            if ke:
                err("invalid label key %r: %s" % (key, ke[0]))
            if neg:
                self.reqs.append((key, "!", []))
            elif i >= len(toks) or toks[i] == ",":
                self.reqs.append((key, "exists", []))
            elif toks[i] in ("=", "==", "!="):
                op = "!=" if toks[i] == "!=" else "="
                i += 1
                val = ""
                if i < len(toks) and word(toks[i]):
                    val = toks[i]
                    i += 1
                ve = label_value_errors(val)
                if ve:
                    err("invalid label value %r: %s" % (val, ve[0]))
                self.reqs.append((key, op, [val]))
            elif toks[i] in ("in", "notin"):
                op = toks[i]
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    err("expected '(' after %s" % op)
                i += 1
                vals = []
                while True:
                    if i >= len(toks):
                        err("missing ')'")
                    if toks[i] == ")":
                        i += 1
                        break
                    if toks[i] == ",":
                        i += 1
                        continue
                    if not word(toks[i]):
                        err("unexpected %r in value list" % toks[i])
                    ve = label_value_errors(toks[i])
                    if ve:
                        err("invalid label value %r: %s" % (toks[i], ve[0]))
                    vals.append(toks[i])
                    i += 1
                if not vals:
                    err("for 'in', 'notin' operators, values set can't be empty")
                self.reqs.append((key, op, vals))
            elif toks[i].startswith(("<", ">")) or toks[i] in ("gt", "lt"):
                err("gt/lt operators are not supported by this test server")
            else:
                err("unexpected %r after key %r" % (toks[i], key))
            if i < len(toks):
                if toks[i] != ",":
                    err("expected ',' but got %r" % toks[i])
                i += 1
                if i >= len(toks):
                    err("found end of selector after ','")

    def empty(self):
        return not self.reqs

    def matches(self, labels):
        labels = labels if isinstance(labels, dict) else {}
        for key, op, vals in self.reqs:
            has = key in labels
            v = labels.get(key)
            if op == "exists" and not has:
                return False
            if op == "!" and has:
                return False
            if op == "=" and (not has or v != vals[0]):
                return False
            if op == "!=" and has and v == vals[0]:
                return False
            if op == "in" and (not has or v not in vals):
                return False
            if op == "notin" and has and v in vals:
                return False
        return True


FIELDS = {
    "pods": ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "status.phase", "status.podIP", "status.nominatedNodeName"],
    "events": ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
               "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"],
    "nodes": ["spec.unschedulable"],
    "namespaces": ["status.phase"],
    "jobs": ["status.successful"],
}


def field_value(obj, path):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


class FieldSelector:
    def __init__(self, s, res):
        self.reqs = []
        if s is None or s.strip() == "":
            return
        allowed = ["metadata.name", "metadata.namespace"] + FIELDS.get(res.plural, [])
        for part in s.split(","):
            part = part.strip()
            m = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", part)
            if not m:
                raise bad_request("invalid selector: '%s'; can't understand '%s'" % (s, part))
            f, op, v = m.group(1).strip(), m.group(2), m.group(3).strip()
            if f not in allowed:
                raise bad_request('field label not supported: %s' % f)
            self.reqs.append((f, "!=" if op == "!=" else "=", v))

    def empty(self):
        return not self.reqs

    def name_only(self):
        for f, op, v in self.reqs:
            if f == "metadata.name" and op == "=":
                return v
        return None

    def matches(self, obj):
        for f, op, v in self.reqs:
            have = field_value(obj, f)
            if (have == v) != (op == "="):
                return False
        return True


# ---------------------------------------------------------------------------
# Patches

class PatchError(Exception):
    pass


def json_equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) != type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return a == b


def pointer(path):
    if not isinstance(path, str):
        raise PatchError("path must be a string")
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("JSON pointer must be empty or start with /: %r" % path)
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(tok, n, allow_end):
    if tok == "-" and allow_end:
        return n
    if not re.fullmatch(r"0|[1-9][0-9]*", tok):
        raise PatchError("invalid array index %r" % tok)
    i = int(tok)
    if i > n or (i == n and not allow_end):
        raise PatchError("array index %d out of bounds" % i)
    return i


def _parent(doc, toks, opname, path):
    cur = doc
    for t in toks[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("%s operation does not apply: doc is missing path: %s" % (opname, path))
            cur = cur[t]
        elif isinstance(cur, list):
            try:
                cur = cur[_index(t, len(cur), False)]
            except PatchError:
                raise PatchError("%s operation does not apply: doc is missing path: %s" % (opname, path))
        else:
            raise PatchError("%s operation does not apply: doc is missing path: %s" % (opname, path))
    return cur


def _get(doc, path, opname):
    toks = pointer(path)
    if not toks:
        return doc
    par = _parent(doc, toks, opname, path)
    last = toks[-1]
    if isinstance(par, dict):
        if last not in par:
            raise PatchError("%s operation does not apply: doc is missing key: %s" % (opname, path))
        return par[last]
    if isinstance(par, list):
        try:
            return par[_index(last, len(par), False)]
        except PatchError:
            raise PatchError("%s operation does not apply: doc is missing key: %s" % (opname, path))
    raise PatchError("%s operation does not apply: doc is missing key: %s" % (opname, path))


def _add(doc, path, value):
    toks = pointer(path)
    if not toks:
        return value
    par = _parent(doc, toks, "add", path)
    last = toks[-1]
    if isinstance(par, dict):
        par[last] = value
    elif isinstance(par, list):
        par.insert(_index(last, len(par), True), value)
    else:
        raise PatchError("add operation does not apply: doc is missing path: %s" % path)
    return doc


def _remove(doc, path, opname="remove"):
    toks = pointer(path)
    if not toks:
        raise PatchError("%s operation does not apply: cannot remove the whole document" % opname)
    par = _parent(doc, toks, opname, path)
    last = toks[-1]
    if isinstance(par, dict):
        if last not in par:
            raise PatchError("%s operation does not apply: doc is missing key: %s" % (opname, path))
        return par.pop(last)
    if isinstance(par, list):
        try:
            return par.pop(_index(last, len(par), False))
        except PatchError:
            raise PatchError("%s operation does not apply: doc is missing key: %s" % (opname, path))
    raise PatchError("%s operation does not apply: doc is missing path: %s" % (opname, path))


def apply_json_patch(doc, ops):
    """RFC 6902.  Structural errors (not a list of objects) are 400; failures while
    applying (missing path, failed test) raise PatchError (422, as the apiserver)."""
    if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = jcopy(doc)
    for o in ops:
        op = o.get("op")
        path = o.get("path")
        if "path" not in o:
            raise PatchError("operation missing path: %s" % json.dumps(o))
        if op in ("add", "replace", "test") and "value" not in o:
            raise PatchError("%s operation missing value: %s" % (op, json.dumps(o)))
        if op == "add":
            doc = _add(doc, path, jcopy(o["value"]))
        elif op == "remove":
            _remove(doc, path)
        elif op == "replace":
            if pointer(path) == []:
                doc = jcopy(o["value"])
            else:
                _get(doc, path, "replace")
                _remove(doc, path, "replace")
                doc = _add(doc, path, jcopy(o["value"]))
        elif op == "move":
            frm = o.get("from")
            if not isinstance(frm, str):
                raise PatchError("move operation missing from")
            if path != frm and path.startswith(frm + "/"):
                raise PatchError("move operation cannot move %s into its own child %s" % (frm, path))
            v = _remove(doc, frm, "move")
            doc = _add(doc, path, v)
        elif op == "copy":
            frm = o.get("from")
            if not isinstance(frm, str):
                raise PatchError("copy operation missing from")
            doc = _add(doc, path, jcopy(_get(doc, frm, "copy")))
        elif op == "test":
            try:
                have = _get(doc, path, "test")
            except PatchError:
                if o["value"] is None:
                    continue
                raise PatchError("testing value %s failed: test failed" % path)
            if not json_equal(have, o["value"]):
                raise PatchError("testing value %s failed: test failed" % path)
        else:
            raise PatchError("Unexpected kind: %s" % op)
    return doc


def apply_merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return jcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = apply_merge_patch(out.get(k), v)
    return out


# Strategic merge: list fields merged by key (by field name, wherever they are).
SMP_KEYS = {
    "taints": ("key", "effect"),
    "conditions": ("type",),
    "addresses": ("type",),
    "ownerReferences": ("uid",),
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "volumes": ("name",), "env": ("name",), "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",), "ports": ("containerPort",),
}
SMP_PRIMITIVE_MERGE = {"finalizers"}


def apply_strategic_patch(target, patch):
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    return _smp_map(target if isinstance(target, dict) else {}, patch)


def _smp_map(target, patch):
    d = patch.get("$patch")
    if d == "replace":
        return {k: jcopy(v) for k, v in patch.items() if k != "$patch"}
    if d == "delete":
        return None
    if d is not None:
        raise bad_request("unknown patch type: %r in map" % d)
    out = dict(target)
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            f = k.split("/", 1)[1]
            if isinstance(out.get(f), list) and isinstance(v, list):
                out[f] = [x for x in out[f] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            r = _smp_map(out.get(k) if isinstance(out.get(k), dict) else {}, v)
            if r is None:
                out.pop(k, None)
            else:
                out[k] = r
        elif isinstance(v, list) and k in SMP_KEYS:
            out[k] = _smp_list(out.get(k) if isinstance(out.get(k), list) else [], v, SMP_KEYS[k])
        elif isinstance(v, list) and k in SMP_PRIMITIVE_MERGE:
            cur = list(out.get(k) or [])
            for x in v:
                if x not in cur:
                    cur.append(x)
            out[k] = cur
        else:
            out[k] = jcopy(v)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _smp_list(target, patch, keys):
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [jcopy(e) for e in patch if not (isinstance(e, dict) and "$patch" in e)]
    out = [jcopy(e) for e in target]
    for e in patch:
        if not isinstance(e, dict):
            raise bad_request("strategic merge patch: list element must be an object")
        kv = tuple(e.get(k) for k in keys)
        idx = None
        for i, t in enumerate(out):
            if isinstance(t, dict) and tuple(t.get(k) for k in keys) == kv:
                idx = i
                break
        if e.get("$patch") == "delete":
            out = [t for t in out if not (isinstance(t, dict) and tuple(t.get(k) for k in keys) == kv)]
        elif idx is not None:
            out[idx] = _smp_map(out[idx], e)
        else:
            out.append(_smp_map({}, e))
    return out


# ---------------------------------------------------------------------------
# Storage: objects, one global resourceVersion counter, event history, watchers

class Event:
    __slots__ = ("rv", "res", "type", "old", "new", "_json")

    def __init__(self, rv, res, etype, old, new):
        self.rv, self.res, self.type, self.old, self.new = rv, res, etype, old, new
        self._json = None

    def obj_json(self):
        if self._json is None:
            self._json = json.dumps(self.new, separators=(",", ":"))
        return self._json


class Watcher:
    def __init__(self, res, ns, lsel, fsel, user):
        self.res, self.ns, self.lsel, self.fsel, self.user = res, ns, lsel, fsel, user
        self.q = queue.Queue()
        self.drop = None          # None, "close" or "end"
        self.started = time.time()

    def match(self, obj):
        if obj is None:
            return False
        md = obj.get("metadata") or {}
        return self.lsel.matches(md.get("labels")) and self.fsel.matches(obj)

    def translate(self, ev):
        """(type, object) to send for event ev, or None (selector transitions as the apiserver)."""
        if ev.type == "ADDED":
            return "ADDED" if self.match(ev.new) else None
        if ev.type == "DELETED":
            return "DELETED" if self.match(ev.new) else None
        om, nm = self.match(ev.old), self.match(ev.new)
        if om and nm:
            return "MODIFIED"
        if nm:
            return "ADDED"
        if om:
            return "DELETED"
        return None


def obj_key(res, obj):
    md = obj["metadata"]
    return (md.get("namespace", "") if res.namespaced else "", md["name"])


def spec_of(res, obj):
    if res.crd:
        return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}
    return obj.get("spec")


def typed(res, body, copy=True):
    """A deep copy of body with apiVersion and kind first, as the apiserver writes them
    (copy=False: body's values are taken over, for a freshly parsed body nobody else keeps)."""
    out = {"apiVersion": res.api_version, "kind": res.kind}
    for k, v in (jcopy(body) if copy else body).items():
        if k not in out:
            out[k] = v
    return out


OMITEMPTY_META = ("labels", "annotations", "finalizers", "ownerReferences", "generateName",
                  "namespace", "managedFields", "deletionGracePeriodSeconds", "deletionTimestamp")


def default_meta(res, obj):
    """The apiserver's defaulting that clients can see: every Namespace carries the label
    kubernetes.io/metadata.name=<its name>, set on create and update whatever was sent."""
    md = obj.get("metadata")
    if res.plural == "namespaces" and isinstance(md, dict) and isinstance(md.get("name"), str):
        if not isinstance(md.get("labels"), dict):
            md["labels"] = {}
        md["labels"]["kubernetes.io/metadata.name"] = md["name"]
    return obj


def normalize_meta(obj):
    """ObjectMeta is typed even for custom resources: empty maps/lists/strings are omitted."""
    md = obj.get("metadata")
    if isinstance(md, dict):
        for k in OMITEMPTY_META:
            if k in md and md[k] in (None, {}, [], ""):
                del md[k]
    return obj


GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"


class Store:
    def __init__(self, history_max, start_rv=100):
        self.lock = threading.RLock()
        self.rv = start_rv
        self.objs = {r.plural: {} for r in RESOURCES}
        self.frozen = False  # set at shutdown with --keep-state: no more writes
        self.history = collections.deque()
        self.history_max = max(1, history_max)
        self.floor = self.rv
        self.epoch = 0
        self.watchers = set()
        self.snapshots = collections.OrderedDict()
        self.snap_seq = 0

    # -- low level ---------------------------------------------------------
    def _commit(self, res, key, old, new, etype):
        if self.frozen:
            raise ApiError(503, "the server is shutting down")
        self.rv += 1
        rv = str(self.rv)
        table = self.objs[res.plural]
        if new is not None:
            new["metadata"]["resourceVersion"] = rv
            manager = getattr(CURRENT, "manager", None)
            if manager is not None:
                update_managed_fields(old, new, manager)
                # etcd stores the managed fields too; where they would take the
                # object over its 1.5 MiB, the API server stores it without
                # them (seen in tests/k8s/real.sh: 20,000 labels, 860 KB)
                if len(json.dumps(new, separators=(",", ":"))) > MAX_OBJECT:
                    new["metadata"].pop("managedFields", None)
            table[key] = new
            obj = new
        else:
            del table[key]
            obj = dict(old)
            obj["metadata"] = dict(old["metadata"])
            obj["metadata"]["resourceVersion"] = rv
        ev = Event(self.rv, res, etype, old, obj)
        note_label_changes(old, new)
        self.history.append(ev)
        while len(self.history) > self.history_max:
            e = self.history.popleft()
            self.floor = max(self.floor, e.rv)
        for w in self.watchers:
            if w.res is res and (w.ns is None or w.ns == key[0]):
                w.q.put(ev)
        return obj

    def _get(self, res, ns, name):
        return self.objs[res.plural].get((ns or "" if res.namespaced else "", name))

    def _check_body(self, res, body):
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be a JSON object")
        av, kind = body.get("apiVersion"), body.get("kind")
        if res.crd and (not av or not kind):
            raise bad_request("Object 'Kind' is missing in '%s'" % json.dumps(body)[:200])
        if av is not None and av != res.api_version:
            raise bad_request("the API version in the data (%s) does not match the expected API "
                              "version (%s)" % (av, res.api_version))
        if kind is not None and kind != res.kind:
            raise bad_request("the kind in the data (%s) does not match the expected kind (%s)"
                              % (kind, res.kind))
        md = body.get("metadata")
        if md is not None and not isinstance(md, dict):
            raise bad_request("metadata must be a JSON object")

    def namespace_exists(self, ns):
        return ("", ns) in self.objs["namespaces"]

    # -- reads -------------------------------------------------------------
    def get(self, res, ns, name):
        with self.lock:
            o = self._get(res, ns, name)
        if o is None:
            raise not_found(res, name)
        return o

    def list(self, res, ns, lsel, fsel, limit, cont):
        with self.lock:
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont + "=" * (-len(cont) % 4)))
                    sid, off, trv = int(tok["snap"]), int(tok["off"]), int(tok["rv"])
                except Exception:
                    raise bad_request("continue key is not valid: %s" % cont[:100])
                snap = self.snapshots.get(sid)
                if snap is None or snap["epoch"] != self.epoch or trv < self.floor:
                    self.snapshots.pop(sid, None)
                    raise ApiError(410, "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the "
                                   "continue parameter.", "Expired")
                if snap["res"] is not res or snap["ns"] != ns:
                    raise bad_request("continue key is not valid: it was issued for another list")
                self.snapshots.move_to_end(sid)
                items, list_rv = snap["items"], snap["rv"]
            else:
                table = self.objs[res.plural]
                keys = sorted(k for k in table if ns is None or k[0] == ns)
                items = [table[k] for k in keys]
                list_rv, off, sid = self.rv, 0, None
            out = []
            i = off
            n = len(items)
            while i < n and (not limit or len(out) < limit):
                o = items[i]
                i += 1
                if lsel.matches(o["metadata"].get("labels")) and fsel.matches(o):
                    out.append(o)
            more = False
            if limit and i < n:
                if lsel.empty() and fsel.empty():
                    more = True
                else:
                    more = any(lsel.matches(o["metadata"].get("labels")) and fsel.matches(o)
                               for o in items[i:])
            token, remaining = "", None
            if more:
                if sid is None:
                    self.snap_seq += 1
                    sid = self.snap_seq
                    self.snapshots[sid] = {"items": items, "rv": list_rv, "epoch": self.epoch,
                                           "res": res, "ns": ns}
                    while len(self.snapshots) > SNAPSHOTS_MAX:
                        self.snapshots.popitem(last=False)
                token = base64.urlsafe_b64encode(json.dumps(
                    {"v": "meta.k8s.io/v1", "rv": list_rv, "snap": sid, "off": i}).encode()
                ).decode().rstrip("=")
                if lsel.empty() and fsel.empty():
                    remaining = n - i
            return out, list_rv, token, remaining

    # -- writes ------------------------------------------------------------
    def create(self, res, ns, body, dry_run=False, admit=None):
        with self.lock:
            self._check_body(res, body)
            obj = typed(res, body)
            schema_apply(res, obj)
            md = obj.setdefault("metadata", {})
            if md.get("resourceVersion"):
                raise ApiError(500, "resourceVersion should not be set on objects to be created")
            if not md.get("name") and isinstance(md.get("generateName"), str) and md["generateName"]:
                md["name"] = md["generateName"] + "".join(random.choice(GEN_CHARS) for _ in range(5))
            if res.namespaced:
                if md.get("namespace") and md["namespace"] != ns:
                    raise bad_request("the namespace of the provided object does not match the "
                                      "namespace sent on the request")
                md["namespace"] = ns
            else:
                md.pop("namespace", None)
            for k in ("uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "selfLink", "managedFields"):
                md.pop(k, None)
            if res.has_status and not res.status_on_create:
                if res.default_status is not None:
                    obj["status"] = jcopy(res.default_status)
                else:
                    obj.pop("status", None)
            if res.plural == "namespaces":
                obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            default_meta(res, obj)
            normalize_meta(obj)
            validate(res, obj)
            if res.namespaced and not self.namespace_exists(ns):
                raise ApiError(404, 'namespaces "%s" not found' % ns,
                               details={"name": ns, "kind": "namespaces"})
            key = obj_key(res, obj)
            if key in self.objs[res.plural]:
                raise already_exists(res, md["name"])
            if admit:
                admit(md["name"], None, obj)
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_rfc3339()
            md["generation"] = 1
            if dry_run:
                md["resourceVersion"] = ""
                return obj
            return self._commit(res, key, None, obj, "ADDED")

    def _update_locked(self, res, ns, name, body, sub, dry_run, patch=False, admit=None):
        self._check_body(res, body)
        md = body.get("metadata")
        if not isinstance(md, dict):
            raise bad_request("metadata is required in an update")
        if md.get("name") != name:
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                              % (md.get("name"), name))
        if res.namespaced and md.get("namespace") not in (None, "", ns):
            raise bad_request("the namespace of the provided object does not match the namespace "
                              "sent on the request")
        old = self._get(res, ns, name)
        if old is None:
            raise not_found(res, name)
        omd = old["metadata"]
        rv = md.get("resourceVersion")
        if rv:
            if rv != omd["resourceVersion"]:
                raise conflict(res, name)
        elif res.crd and not patch:
            raise invalid(res, name, [("metadata.resourceVersion",
                                       "Invalid value: 0x0: must be specified for an update")])
        if md.get("uid") and md["uid"] != omd["uid"]:
            raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in object "
                           "meta: %s" % (omd["uid"], md["uid"]))
        if sub == "status":
            new = jcopy(old)
            if "status" in body:
                new["status"] = jcopy(body["status"])
            else:
                new.pop("status", None)
        else:
            new = jcopy(body)
            if res.has_status:
                if "status" in old:
                    new["status"] = jcopy(old["status"])
                else:
                    new.pop("status", None)
        new = typed(res, new)
        schema_apply(res, new)
        nmd = new["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation"):
            if k in omd:
                nmd[k] = omd[k]
            else:
                nmd.pop(k, None)
        nmd["name"] = name
        if res.namespaced:
            nmd["namespace"] = ns
        else:
            nmd.pop("namespace", None)
        nmd["resourceVersion"] = omd["resourceVersion"]
        # the server keeps the managed fields itself (see update_managed_fields)
        if "managedFields" in omd:
            nmd["managedFields"] = omd["managedFields"]
        else:
            nmd.pop("managedFields", None)
        if not json_equal(spec_of(res, new), spec_of(res, old)):
            nmd["generation"] = omd.get("generation", 1) + 1
        default_meta(res, new)
        normalize_meta(new)
        validate(res, new, True)
        if admit:
            admit(name, old, new)
        if json_equal(new, old):
            return old                      # no-op: no write, no new resourceVersion, no event
        if dry_run:
            return new
        key = obj_key(res, old)
        if nmd.get("deletionTimestamp") and not nmd.get("finalizers"):
            return self._commit(res, key, old, None, "DELETED")
        return self._commit(res, key, old, new, "MODIFIED")

    def update(self, res, ns, name, body, sub=None, dry_run=False, admit=None):
        with self.lock:
            return self._update_locked(res, ns, name, body, sub, dry_run, admit=admit)

    def patch(self, res, ns, name, ptype, doc, sub=None, dry_run=False, admit=None):
        with self.lock:
            old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            try:
                if ptype == "json":
                    new = apply_json_patch(old, doc)
                elif ptype == "merge":
                    new = apply_merge_patch(jcopy(old), doc)
                else:
                    new = apply_strategic_patch(jcopy(old), doc)
            except PatchError as e:
                raise ApiError(422, str(e), "Invalid")
            if not isinstance(new, dict):
                raise ApiError(422, "the patched document is not a JSON object", "Invalid")
            md = new.get("metadata")
            if isinstance(md, dict):
                prv = md.get("resourceVersion")
                if prv and prv != old["metadata"]["resourceVersion"]:
                    raise conflict(res, name)
                md["resourceVersion"] = old["metadata"]["resourceVersion"]
            return self._update_locked(res, ns, name, new, sub, dry_run, patch=True, admit=admit)

    def delete(self, res, ns, name, opts=None, dry_run=False, admit=None):
        with self.lock:
            old = self._get(res, ns, name)
            if old is None:
                raise not_found(res, name)
            if admit:
                admit(name, old, None)
            omd = old["metadata"]
            pre = (opts or {}).get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != omd["uid"]:
                raise conflict(res, name, "Precondition failed: UID in precondition: %s, UID in "
                               "object meta: %s" % (pre["uid"], omd["uid"]))
            if pre.get("resourceVersion") and pre["resourceVersion"] != omd["resourceVersion"]:
                raise conflict(res, name, "Precondition failed: ResourceVersion in precondition: "
                               "%s, ResourceVersion in object meta: %s"
                               % (pre["resourceVersion"], omd["resourceVersion"]))
            if dry_run:
                return old
            key = obj_key(res, old)
            if omd.get("finalizers"):
                if omd.get("deletionTimestamp"):
                    return old
                new = jcopy(old)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                return self._commit(res, key, old, new, "MODIFIED")
            if res.plural == "namespaces":
                for r in RESOURCES:
                    if r.namespaced:
                        for k in [k for k in self.objs[r.plural] if k[0] == name]:
                            self._commit(r, k, self.objs[r.plural][k], None, "DELETED")
            return self._commit(res, key, old, None, "DELETED")

    # -- the control API's direct access ------------------------------------
    def direct_put(self, res, ns, name, body):
        """Create or replace, no auth/validation/RV checks; bumps the RV and emits events."""
        with self.lock:
            if not isinstance(body, dict):
                raise bad_request("the body must be a JSON object")
            # every caller passes a body it just parsed and drops: no deep copy (it was 60%
            # of the time to load thousands of NodeFeatures, and the seed document stayed in
            # memory next to its copy)
            obj = typed(res, body, copy=False)
            md = obj.setdefault("metadata", {})
            if not isinstance(md, dict):
                raise bad_request("metadata must be an object")
            md["name"] = name
            if res.namespaced:
                md["namespace"] = ns
            else:
                md.pop("namespace", None)
            default_meta(res, obj)
            key = obj_key(res, obj)
            old = self.objs[res.plural].get(key)
            if old is not None:
                omd = old["metadata"]
                md.setdefault("uid", omd.get("uid"))
                md.setdefault("creationTimestamp", omd.get("creationTimestamp"))
                if "generation" not in md:
                    g = omd.get("generation", 1)
                    md["generation"] = g + 1 if not json_equal(spec_of(res, obj), spec_of(res, old)) else g
            else:
                md.setdefault("uid", str(uuid.uuid4()))
                md.setdefault("creationTimestamp", now_rfc3339())
                md.setdefault("generation", 1)
            return self._commit(res, key, old, obj, "ADDED" if old is None else "MODIFIED")

    def direct_delete(self, res, ns, name):
        with self.lock:
            key = (ns or "" if res.namespaced else "", name)
            old = self.objs[res.plural].get(key)
            if old is None:
                raise not_found(res, name)
            return self._commit(res, key, old, None, "DELETED")

    # -- watches -------------------------------------------------------------
    def watch_start(self, res, ns, lsel, fsel, rvp, user):
        """A registered Watcher with its initial events queued, or raises ApiError(410)."""
        with self.lock:
            w = Watcher(res, ns, lsel, fsel, user)
            if rvp in (None, "", "0"):
                table = self.objs[res.plural]
                for k in sorted(k for k in table if ns is None or k[0] == ns):
                    o = table[k]
                    w.q.put(Event(int(o["metadata"]["resourceVersion"]), res, "ADDED", None, o))
            else:
                try:
                    r = int(rvp)
                    if r < 0:
                        raise ValueError
                except ValueError:
                    raise bad_request('invalid resource version "%s"' % rvp)
                if r < self.floor:
                    raise ApiError(410, "too old resource version: %d (%d)" % (r, self.floor),
                                   "Expired")
                for ev in self.history:
                    if ev.rv > r and ev.res is res and (ns is None or ev.new["metadata"].get(
                            "namespace", "") == ns):
                        w.q.put(ev)
            self.watchers.add(w)
            return w

    def watch_stop(self, w):
        with self.lock:
            self.watchers.discard(w)

    def bookmark_rv(self, w):
        """The current RV if nothing is queued for w (so every event up to it was sent)."""
        with self.lock:
            if w.q.empty():
                return self.rv
            return None

    def drop_watches(self, mode):
        with self.lock:
            ws = list(self.watchers)
            for w in ws:
                w.drop = mode
                w.q.put(None)
            return len(ws)

    def reset_history(self):
        with self.lock:
            self.rv += 1
            self.floor = self.rv
            self.history.clear()
            self.epoch += 1
            self.snapshots.clear()
            return self.rv

    def info(self):
        with self.lock:
            return {"resourceVersion": str(self.rv), "historyFloor": str(self.floor),
                    "historyLength": len(self.history), "historyMax": self.history_max,
                    "epoch": self.epoch, "watches": len(self.watchers),
                    "watchesByResource": dict(collections.Counter(
                        w.res.plural for w in self.watchers)),
                    "objects": {k: len(v) for k, v in self.objs.items() if v}}


# ---------------------------------------------------------------------------
# Request log and fault rules

# The request being served on this thread: writes note in its log entry
# which labels they removed, added or changed, so tests can tell from the log
# alone whether a client ever took away a label it should have kept.
CURRENT = threading.local()


# metadata.managedFields, as the API server (1.18+) keeps them for every write
# through the API: one entry per field manager (the User-Agent up to its first
# "/"), operation Update, the fields it set as FieldsV1. A manager owns the
# fields its writes added or changed; another manager's change takes them
# from it; removed fields are nobody's. Lists are owned whole (the server
# tracks list items by key). Writes through the control API keep none.
MF_META = ("labels", "annotations", "ownerReferences", "finalizers")


def _mf_paths(obj):
    """{path tuple: leaf value or DICT} for every field a manager can own."""
    out = {}

    def walk(v, path):
        if isinstance(v, dict):
            out[path] = DICT
            for k, c in v.items():
                walk(c, path + (k,))
        else:
            out[path] = v
    for k, v in obj.items():
        if k in ("apiVersion", "kind"):
            continue
        if k == "metadata":
            for mk in MF_META:
                if mk in (v or {}):
                    walk(v[mk], ("metadata", mk))
            continue
        walk(v, (k,))
    return out


DICT = object()


def _mf_fields(paths):
    """A set of paths as FieldsV1 (metadata itself without "." as the server has it)."""
    root = {}
    for p in sorted(paths):
        node = root
        for i, k in enumerate(p):
            node = node.setdefault("f:" + k, {})
            if i == len(p) - 1 and paths[p] is DICT and p != ("metadata",):
                node["."] = {}
    return root


def _mf_parse(fields, prefix=()):
    out = set()
    for k, v in (fields or {}).items():
        if k == ".":
            out.add(prefix)
        elif k.startswith("f:"):
            p = prefix + (k[2:],)
            if not v or list(v) == ["."]:
                out.add(p)
            out |= _mf_parse(v, p)
    return out


def update_managed_fields(old, new, manager):
    np_ = _mf_paths(new)
    op = _mf_paths(old) if old is not None else {}
    changed = {p for p, v in np_.items() if p not in op or (v is not DICT and not json_equal(v, op[p]))}
    entries = []
    mine = set()
    for e in ((old or {}).get("metadata") or {}).get("managedFields") or []:
        owned = _mf_parse(e.get("fieldsV1")) & set(np_)
        if e.get("manager") == manager and e.get("operation") == "Update":
            mine = owned
            continue
        owned -= changed
        if owned:
            e = dict(e)
            e["fieldsV1"] = _mf_fields({p: np_[p] for p in owned})
            entries.append(e)
    mine = (mine | changed) & set(np_)
    if mine:
        entries.append({"manager": manager, "operation": "Update",
                        "apiVersion": new.get("apiVersion", "v1"), "time": now_rfc3339(),
                        "fieldsType": "FieldsV1", "fieldsV1": _mf_fields({p: np_[p] for p in mine})})
    if entries:
        new["metadata"]["managedFields"] = entries
    else:
        new["metadata"].pop("managedFields", None)


def note_label_changes(old, new):
    e = getattr(CURRENT, "entry", None)
    if e is None:
        return
    ol = ((old or {}).get("metadata") or {}).get("labels") or {}
    nl = ((new or {}).get("metadata") or {}).get("labels") or {}
    d = {"removed": sorted(k for k in ol if k not in nl),
         "added": sorted(k for k in nl if k not in ol),
         "changed": sorted(k for k in nl if k in ol and ol[k] != nl[k])}
    for k, v in d.items():
        if v:
            have = e.setdefault("labels", {}).setdefault(k, [])
            have[:] = sorted(set(have) | set(v))


class RequestLog:
    def __init__(self):
        self.lock = threading.Lock()
        self.entries = collections.deque(maxlen=LOG_MAX)
        self.seq = 0

    def add(self, **kw):
        with self.lock:
            self.seq += 1
            e = {"seq": self.seq, "time": round(time.time(), 6)}
            e.update(kw)
            self.entries.append(e)
            return e

    def items(self, since=0):
        with self.lock:
            return [dict(e) for e in self.entries if e["seq"] > since]

    def clear(self):
        with self.lock:
            self.entries.clear()


ACTIONS = ("status", "delay", "close", "reset", "hold")
HOLD_MAX = 300                      # seconds a held request waits at most (a test that never releases)


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.releases = {}          # rule id -> Event set on release (or clear)
        self.next_id = 1

    def add(self, spec):
        if not isinstance(spec, dict):
            raise bad_request("a fault rule is a JSON object")
        r = {"method": str(spec.get("method") or "*").upper(), "path": spec.get("path") or "",
             "query": spec.get("query"), "verb": spec.get("verb"), "user": spec.get("user"),
             "watch": spec.get("watch"), "action": spec.get("action"),
             "count": spec.get("count", 1), "skip": spec.get("skip", 0)}
        for k in ("path", "query"):
            if r[k] is not None:
                try:
                    re.compile(r[k])
                except (re.error, TypeError) as e:
                    raise bad_request("fault rule %s: bad regular expression: %s" % (k, e))
        if r["action"] not in ACTIONS:
            raise bad_request("fault rule action must be one of %s" % ", ".join(ACTIONS))
        if r["watch"] is not None and not isinstance(r["watch"], bool):
            raise bad_request("fault rule watch must be true, false or absent")
        if r["count"] is None:
            r["count"] = -1
        if not isinstance(r["count"], int) or r["count"] == 0 or r["count"] < -1:
            raise bad_request("fault rule count must be a positive integer or -1 (unlimited)")
        if not isinstance(r["skip"], int) or r["skip"] < 0:
            raise bad_request("fault rule skip must be a non-negative integer")
        if r["action"] == "status":
            st = spec.get("status")
            if not isinstance(st, int) or not 100 <= st <= 599:
                raise bad_request("fault rule status must be an HTTP status code")
            r["status"] = st
            ra = spec.get("retry_after")
            if ra is not None and (not isinstance(ra, (int, float)) or ra < 0):
                raise bad_request("fault rule retry_after must be a number of seconds")
            r["retry_after"] = ra
            r["reason"] = spec.get("reason")
            r["message"] = spec.get("message")
            r["body"] = spec.get("body")
        elif r["action"] == "delay":
            ms = spec.get("ms")
            if not isinstance(ms, (int, float)) or ms < 0:
                raise bad_request("fault rule delay needs ms (milliseconds)")
            r["ms"] = ms
        elif r["action"] == "hold":
            to = spec.get("timeout", 60)
            if not isinstance(to, (int, float)) or not 0 < to <= HOLD_MAX:
                raise bad_request("fault rule hold timeout must be a number of seconds, at most %d" % HOLD_MAX)
            r["timeout"] = to
        with self.lock:
            r["id"] = self.next_id
            self.next_id += 1
            r["hits"] = 0
            r["seen"] = 0
            r["held"] = 0
            self.rules.append(r)
            self.releases[r["id"]] = threading.Event()
            return dict(r)

    def hold(self, f):
        """Holds the calling request (rule f matched it with action hold) until the rule is
        released or cleared, or its timeout passes; True when released."""
        with self.lock:
            ev = self.releases.get(f["id"])
            live = next((r for r in self.rules if r["id"] == f["id"]), None)
            if ev is None or live is None:
                return True
            live["held"] += 1
        try:
            return ev.wait(f["timeout"])
        finally:
            with self.lock:
                live["held"] -= 1

    def release(self, rid):
        """Lets every request held by rule rid (and any it matches later) go; the number
        held at that moment, or None for an unknown rule."""
        with self.lock:
            ev = self.releases.get(rid)
            live = next((r for r in self.rules if r["id"] == rid), None)
            if ev is None or live is None:
                return None
            ev.set()
            return live["held"]

    def match(self, method, path, query, verb, user, watch):
        with self.lock:
            for r in self.rules:
                if r["count"] == 0:
                    continue
                if r["method"] not in ("*", method):
                    continue
                if r["path"] and not re.search(r["path"], path):
                    continue
                if r["query"] is not None and not re.search(r["query"], query):
                    continue
                if r["verb"] and r["verb"] != verb:
                    continue
                if r["user"] and r["user"] not in (user, short_of(user or "")):
                    continue
                if r["watch"] is not None and r["watch"] != watch:
                    continue
                r["seen"] += 1
                if r["seen"] <= r["skip"]:
                    continue
                r["hits"] += 1
                if r["count"] > 0:
                    r["count"] -= 1
                return dict(r)
        return None

    def clear(self):
        with self.lock:
            n = len(self.rules)
            self.rules = []
            for ev in self.releases.values():
                ev.set()            # nothing stays held once its rule is gone
            self.releases = {}
            return n

    def list(self):
        with self.lock:
            return [dict(r) for r in self.rules]


# ---------------------------------------------------------------------------
# Globals set up by main()

CFG = {"dir": None, "bookmark_interval": 1.0, "port": 0, "host": "127.0.0.1", "watch_chunks": "event"}
STORE = None
AUTH = None
LOG = RequestLog()
FAULTS = Faults()
SHUTDOWN = threading.Event()

PATCH_TYPES = {"application/json-patch+json": "json", "application/merge-patch+json": "merge",
               "application/strategic-merge-patch+json": "strategic"}


def media_type(h):
    return (h or "").split(";", 1)[0].strip().lower()


def parse_route(path):
    """path -> (res, namespace, name, subresource), or raises 404."""
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise ApiError(404, "the server could not find the requested resource")
    nf = ApiError(404, "the server could not find the requested resource")
    ns = None
    if not rest:
        raise nf
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] == "status"):
        ns = rest[1]
        rest = rest[2:]
    if not rest or len(rest) > 3 or any(p == "" for p in rest):
        raise nf
    res = BY_PATH.get((group, version, rest[0]))
    if res is None:
        raise nf
    if ns is not None and not res.namespaced:
        raise nf
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and (sub != "status" or not res.has_status):
        raise nf
    return res, ns, name, sub


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "featurebox-k8s-test/1"
    sys_version = ""
    timeout = 600

    def version_string(self):
        return self.server_version

    # -- connection --------------------------------------------------------
    def setup(self):
        self.peer = None
        self.request.settimeout(15)
        try:
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        self.request.do_handshake()
        cert = self.request.getpeercert()
        if cert:
            cn, orgs = None, []
            for rdn in cert.get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
                    elif k == "organizationName":
                        orgs.append(v)
            if cn:
                self.peer = (cn, orgs)
        super().setup()

    def log_message(self, fmt, *args):
        if VERBOSE:
            log("%s %s" % (self.address_string(), fmt % args))

    def log_request(self, code="-", size="-"):
        if VERBOSE:
            log('"%s" %s' % (self.requestline, code))

    def send_error(self, code, message=None, explain=None):
        """Protocol-level errors (bad request line, ...) as Status objects."""
        try:
            self.close_connection = True
            if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
                self.request_version = "HTTP/1.1"     # always answer with a status line
            body = json.dumps(status_obj(code, REASONS.get(code, "BadRequest"),
                                         message or self.responses.get(code, ("",))[0]),
                              separators=(",", ":")).encode()
            self.send_response(code, None)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD" and code >= 200 and code not in (204, 304):
                self.wfile.write(body)
        except OSError:
            pass

    def hard_close(self, rst):
        """Close the connection now: with rst, a TCP reset (SO_LINGER 0)."""
        self.close_connection = True
        try:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            self.rfile.close()
            self.connection.close()
        except OSError:
            pass

    # -- responses ---------------------------------------------------------
    def send_body(self, code, body, ctype="application/json", headers=None):
        if isinstance(body, (dict, list)):
            body = json.dumps(body, separators=(",", ":"))
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.sent = True
        if self.entry is not None:
            self.entry["status"] = code
        if self.fault_close:
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.hard_close(False)
            return
        # headers and body in one write (no Nagle / delayed-ACK stall)
        self._headers_buffer.append(b"\r\n")
        if self.command != "HEAD":
            self._headers_buffer.append(body)
        self.flush_headers()

    def send_status(self, e):
        self.send_body(e.code, e.status(), headers=e.headers)

    # -- request plumbing ----------------------------------------------------
    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = bytearray()
            while True:
                line = self.rfile.readline(100)
                try:
                    n = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    self.close_connection = True
                    raise bad_request("malformed chunked request body")
                if n == 0:
                    while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                if len(out) + n > MAX_BODY:
                    self.close_connection = True
                    raise ApiError(413, "Request entity too large: limit is %d" % MAX_BODY)
                out += self.rfile.read(n)
                self.rfile.readline(10)
            return bytes(out)
        cl = self.headers.get("Content-Length")
        if cl is None:
            return b""
        try:
            n = int(cl)
            if n < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise bad_request("invalid Content-Length")
        if n > MAX_BODY:
            # read (and drop) up to 64 MiB so that the client gets to see the 413
            self.close_connection = True
            left = n if n <= 64 * 1024 * 1024 else 0
            while left > 0:
                got = self.rfile.read(min(left, 1 << 20))
                if not got:
                    break
                left -= len(got)
            raise ApiError(413, "Request entity too large: limit is %d" % MAX_BODY)
        data = self.rfile.read(n)
        if len(data) != n:
            self.close_connection = True
            raise bad_request("request body shorter than Content-Length")
        return data

    def json_body(self, raw, required=True):
        if not raw:
            if required:
                raise bad_request("the request body is empty: a JSON object is required")
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise bad_request("couldn't get version/kind; json parse error: %s" % e)

    def identity(self):
        """(user, groups, how) or None; a bad Authorization header also gives None."""
        if self.peer:
            return self.peer[0], self.peer[1] + ["system:authenticated"], "cert"
        h = self.headers.get("Authorization")
        if h:
            m = re.fullmatch(r"[Bb]earer\s+(\S+)\s*", h)
            if m:
                u = AUTH.user_of_token(m.group(1))
                if u:
                    gs = ["system:nodes"] if u.startswith(NODE_USER_PREFIX) else []
                    return u, gs + ["system:authenticated"], "token"
        return None

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def dispatch(self):
        self.entry = None
        CURRENT.entry = None
        CURRENT.manager = None
        self.fault_close = False
        self.sent = False
        try:
            self._dispatch()
        except ApiError as e:
            if not self.sent:
                try:
                    self.send_status(e)
                except OSError:
                    self.close_connection = True
            else:
                self.close_connection = True
        except (OSError, ssl.SSLError) as e:
            if VERBOSE:
                log("connection error: %s" % e)
            self.close_connection = True
        except Exception as e:
            log("internal error on %s %s:\n%s" % (self.command, self.path, traceback.format_exc()))
            if not self.sent:
                try:
                    self.close_connection = True
                    self.send_status(ApiError(500, "Internal error occurred: test server: %s" % e))
                except OSError:
                    pass
            else:
                self.close_connection = True

    def _dispatch(self):
        u = urllib.parse.urlsplit(self.path)
        path = u.path
        try:
            qs = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        except ValueError:
            qs = {}
        q1 = {k: v[0] for k, v in qs.items()}
        method = self.command
        if path.startswith("/__test/") or path == "/__test":
            raw = self.read_body()
            return self.control(method, path, q1, raw)
        watch = q1.get("watch", "") in ("1", "true")
        ident = self.identity()
        route, route_err, verb = None, None, None
        if path.startswith(("/api/", "/apis/")):
            try:
                route = parse_route(path)
            except ApiError as e:
                route_err = e
        if route:
            res, ns, name, sub = route
            verb = {"GET": "watch" if watch else ("get" if name else "list"), "POST": "create",
                    "PUT": "update", "PATCH": "patch",
                    "DELETE": "delete" if name else "deletecollection"}.get(method)
        self.entry = LOG.add(method=method, path=path, query=u.query,
                             user=ident[0] if ident else None, auth=ident[2] if ident else None,
                             verb=verb, resource=(route[0].plural + ("/" + route[3] if route[3] else "")) if route else None,
                             watch=watch, status=None, fault=None)
        CURRENT.entry = self.entry
        # the field manager of this request's writes: the User-Agent up to its first "/"
        CURRENT.manager = (self.headers.get("User-Agent") or "unknown").split("/")[0] if route else None
        raw = self.read_body()
        f = FAULTS.match(method, path, u.query, verb, ident[0] if ident else None, watch)
        if f:
            self.entry["fault"] = f["action"] + (":%d" % f["status"] if f["action"] == "status" else
                                                 ":%sms" % f["ms"] if f["action"] == "delay" else "")
            if f["action"] == "hold":
                self.entry["held"] = True
            self.entry["fault_id"] = f["id"]
            log("fault %d (%s) on %s %s" % (f["id"], self.entry["fault"], method, self.path))
            if f["action"] == "reset":
                self.entry["status"] = 0
                self.hard_close(True)
                return
            if f["action"] == "status":
                code = f["status"]
                hdrs = {}
                if f.get("retry_after") is not None:
                    hdrs["Retry-After"] = int(f["retry_after"]) if float(f["retry_after"]).is_integer() \
                        else f["retry_after"]
                body = f.get("body")
                if body is None:
                    reason = f.get("reason") or REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
                    msg = f.get("message") or {
                        429: "Too many requests, please try again later.",
                        500: "Internal error occurred: injected fault",
                        503: "The server is currently unable to handle the request (injected fault)",
                    }.get(code, "injected fault %d" % code)
                    det = {"retryAfterSeconds": int(f["retry_after"])} if f.get("retry_after") else None
                    body = status_obj(code, reason, msg, det)
                return self.send_body(code, body, headers=hdrs)
            if f["action"] == "delay":
                time.sleep(f["ms"] / 1000.0)
            elif f["action"] == "hold":
                if not FAULTS.hold(f):
                    log("fault %d: hold timed out after %g s on %s %s" % (f["id"], f["timeout"], method, self.path))
                    self.entry["hold_timed_out"] = True
                self.entry["held"] = False
            elif f["action"] == "close":
                self.fault_close = True
        if path in ("/healthz", "/livez", "/readyz") or path.startswith(("/healthz/", "/livez/", "/readyz/")):
            return self.send_body(200, "ok", "text/plain; charset=utf-8")
        if ident is None:
            raise ApiError(401, "Unauthorized")
        user, groups, _ = ident
        if method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise ApiError(405, "the server does not allow this method on the requested resource")
        self.check_accept()
        if route is None:
            if method != "GET" and route_err is not None:
                raise route_err
            return self.discovery(method, path)
        res, ns, name, sub = route
        rbac_res = res.plural + ("/" + sub if sub else "")
        if not AUTH.allowed(user, groups, verb, rbac_res, ns):
            what = ('%s "%s"' % (res.gr(), name)) if name else res.gr()
            where = ('in the namespace "%s"' % ns) if ns else "at the cluster scope"
            raise ApiError(403, '%s is forbidden: User "%s" cannot %s resource "%s" in API group '
                           '"%s" %s' % (what, user, verb, rbac_res, res.group, where),
                           details=_details(res, name))
        node = node_name_of(user, groups)
        admit = None
        if node is not None and res.plural == "nodes":
            def admit(oname, old, new):
                node_restriction(node, res, oname, old, new)
        if res.namespaced and ns is None and name is not None:
            raise ApiError(404, "the server could not find the requested resource")
        if res.namespaced and ns is None and method == "POST":
            raise ApiError(405, "the server does not allow this method on the requested resource")
        dry = q1.get("dryRun")
        if dry not in (None, "All"):
            raise bad_request('dryRun: Unsupported value: "%s": supported values: "All"' % dry)
        dry = dry == "All"
        if method == "GET":
            lsel = Selector(q1.get("labelSelector"))
            fsel = FieldSelector(q1.get("fieldSelector"), res)
            if watch:
                if name:
                    fsel.reqs.append(("metadata.name", "=", name))
                return self.watch(res, ns, lsel, fsel, q1, user)
            if name:
                return self.send_body(200, STORE.get(res, ns, name))
            return self.do_list(res, ns, lsel, fsel, q1)
        if method == "POST":
            if name:
                raise ApiError(405, "the server does not allow this method on the requested resource")
            self.check_json_ctype()
            obj = STORE.create(res, ns, self.json_body(raw), dry, admit)
            return self.send_body(201, obj)
        if method == "PUT":
            if not name:
                raise ApiError(405, "the server does not allow this method on the requested resource")
            self.check_json_ctype()
            return self.send_body(200, STORE.update(res, ns, name, self.json_body(raw), sub, dry, admit))
        if method == "PATCH":
            if not name:
                raise ApiError(405, "the server does not allow this method on the requested resource")
            mt = media_type(self.headers.get("Content-Type"))
            ptype = PATCH_TYPES.get(mt)
            if ptype is None or (ptype == "strategic" and res.crd):
                acc = "application/json-patch+json, application/merge-patch+json"
                if not res.crd:
                    acc += ", application/strategic-merge-patch+json"
                raise ApiError(415, "the body of the request was in an unknown format - accepted "
                               "media types include: %s" % acc)
            doc = self.json_body(raw)
            return self.send_body(200, STORE.patch(res, ns, name, ptype, doc, sub, dry, admit))
        if method == "DELETE":
            opts = self.json_body(raw, required=False) if raw.strip() else None
            if opts is not None and not isinstance(opts, dict):
                raise bad_request("DeleteOptions must be a JSON object")
            if sub:
                raise ApiError(405, "the server does not allow this method on the requested resource")
            if name:
                obj = STORE.delete(res, ns, name, opts, dry, admit)
                if res.return_deleted or obj["metadata"].get("deletionTimestamp"):
                    return self.send_body(200, obj)
                d = _details(res, name)
                d["uid"] = obj["metadata"].get("uid")
                return self.send_body(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Success", "details": d})
            lsel = Selector(q1.get("labelSelector"))
            fsel = FieldSelector(q1.get("fieldSelector"), res)
            items, _, _, _ = STORE.list(res, ns, lsel, fsel, 0, None)
            deleted = []
            for o in items:
                try:
                    deleted.append(STORE.delete(res, o["metadata"].get("namespace"),
                                                o["metadata"]["name"], opts, dry, admit))
                except ApiError as e:
                    if e.code != 404:
                        raise
            return self.send_list(res, deleted, str(STORE.rv), "", None)
        raise ApiError(405, "the server does not allow this method on the requested resource")

    def check_accept(self):
        acc = self.headers.get("Accept")
        if not acc:
            return
        for part in acc.split(","):
            mt = media_type(part)
            if mt in ("application/json", "*/*", "application/*", ""):
                return
        raise ApiError(406, "only the following media types are accepted: application/json")

    def check_json_ctype(self):
        mt = media_type(self.headers.get("Content-Type"))
        if mt not in ("", "application/json"):
            raise ApiError(415, 'the body of the request was in an unknown format - accepted media '
                           'types include: application/json (this test server does not take '
                           'YAML or protobuf)')

    def send_list(self, res, items, rv, cont, remaining):
        md = {"resourceVersion": rv}
        if cont:
            md["continue"] = cont
        if remaining is not None:
            md["remainingItemCount"] = remaining
        parts = []
        for o in items:
            if not res.crd:                       # built-in list items carry no kind/apiVersion
                o = {k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
            parts.append(json.dumps(o, separators=(",", ":")))
        head = {"kind": res.kind + "List", "apiVersion": res.api_version, "metadata": md}
        body = json.dumps(head, separators=(",", ":"))[:-1] + ',"items":[' + ",".join(parts) + "]}"
        self.send_body(200, body)

    def do_list(self, res, ns, lsel, fsel, q1):
        limit = q1.get("limit")
        try:
            limit = int(limit) if limit not in (None, "") else 0
            if limit < 0:
                raise ValueError
        except ValueError:
            raise bad_request("limit: Invalid value: must be a non-negative integer")
        cont = q1.get("continue") or None
        rvp = q1.get("resourceVersion")
        if rvp not in (None, "", "0"):
            try:
                int(rvp)
            except ValueError:
                raise bad_request('invalid resource version "%s"' % rvp)
            if cont:
                raise bad_request("specifying resource version is not allowed when using continue")
        items, rv, token, remaining = STORE.list(res, ns, lsel, fsel, limit, cont)
        self.send_list(res, items, str(rv), token, remaining)

    # -- watch -------------------------------------------------------------
    def client_gone(self):
        """True when the client closed its end of an idle watch connection."""
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        if not r:
            return False
        try:
            self.connection.settimeout(0)
            try:
                return self.connection.recv(1) == b""
            except (ssl.SSLWantReadError, BlockingIOError):
                return False
            except (OSError, ssl.SSLError):
                return True
        finally:
            try:
                self.connection.settimeout(self.timeout)
            except OSError:
                pass

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def watch(self, res, ns, lsel, fsel, q1, user):
        ts = q1.get("timeoutSeconds")
        try:
            ts = float(ts) if ts not in (None, "") else 0
            if ts < 0:
                raise ValueError
        except ValueError:
            raise bad_request("timeoutSeconds: Invalid value: must be a non-negative integer")
        if ts == 0:
            ts = 1800 * (1 + random.random())
        bookmarks = q1.get("allowWatchBookmarks", "") in ("1", "true")
        err = None
        try:
            w = STORE.watch_start(res, ns, lsel, fsel, q1.get("resourceVersion"), user)
        except ApiError as e:
            if e.code != 410:
                raise
            err, w = e, None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.sent = True
        self.entry["status"] = 200
        if self.fault_close:
            if w:
                STORE.watch_stop(w)
            self.wfile.write(b'80\r\n{"type":"ADDED","object":{"kind":"%s","apiVersion":"'
                             % res.kind.encode())
            self.hard_close(False)
            return
        if err is not None:
            self.entry["watch_error"] = 410
            self.write_chunk(json.dumps({"type": "ERROR", "object": err.status()},
                                        separators=(",", ":")).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        interval = CFG["bookmark_interval"]
        start = time.time()
        deadline = start + ts
        next_bm = start + interval
        next_check = start + 0.25
        try:
            while True:
                now = time.time()
                if now >= deadline or SHUTDOWN.is_set():
                    break
                wake = deadline
                if bookmarks:
                    wake = min(wake, next_bm)
                try:
                    ev = w.q.get(timeout=max(0.001, min(wake - now, 0.5)))
                except queue.Empty:
                    ev = None
                if w.drop == "close":
                    self.entry["dropped"] = True
                    self.hard_close(False)
                    return
                if w.drop == "end":
                    self.entry["dropped"] = True
                    break
                if ev is not None:
                    t = w.translate(ev)
                    data = (('{"type":"%s","object":' % t).encode() +
                            ev.obj_json().encode() + b"}\n") if t else b""
                    mode = CFG["watch_chunks"]
                    if mode == "batch":
                        # every event already queued goes into this one chunk
                        while True:
                            try:
                                more = w.q.get_nowait()
                            except queue.Empty:
                                break
                            t2 = w.translate(more)
                            if t2:
                                data += (('{"type":"%s","object":' % t2).encode() +
                                         more.obj_json().encode() + b"}\n")
                    if not data:
                        continue
                    if mode == "split" and len(data) > 3:
                        # an event cut into pieces at random places, each its own chunk
                        cuts = sorted(random.sample(range(1, len(data)), 2))
                        for a, b in zip([0] + cuts, cuts + [len(data)]):
                            self.write_chunk(data[a:b])
                            self.wfile.flush()
                    else:
                        self.write_chunk(data)
                    continue
                if time.time() >= next_check:
                    next_check = time.time() + 0.25
                    if self.client_gone():
                        self.entry["client_gone"] = True
                        self.hard_close(False)
                        return
                if bookmarks and time.time() >= next_bm:
                    rv = STORE.bookmark_rv(w)
                    if rv is not None:
                        self.write_chunk(json.dumps({"type": "BOOKMARK", "object": {
                            "kind": res.kind, "apiVersion": res.api_version,
                            "metadata": {"resourceVersion": str(rv)}}},
                            separators=(",", ":")).encode() + b"\n")
                    next_bm = time.time() + interval
            self.wfile.write(b"0\r\n\r\n")
        finally:
            STORE.watch_stop(w)

    # -- discovery ---------------------------------------------------------
    def discovery(self, method, path):
        if method != "GET":
            raise ApiError(405, "the server does not allow this method on the requested resource")
        p = path.rstrip("/") or "/"
        if p == "/version":
            return self.send_body(200, {"major": "1", "minor": "31", "gitVersion": "v1.31.0",
                                        "gitCommit": "featurebox-test-server", "gitTreeState": "clean",
                                        "buildDate": "2024-08-13T00:00:00Z", "goVersion": "go1.22.5",
                                        "compiler": "gc", "platform": "linux/amd64"})
        if p == "/api":
            return self.send_body(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [{
                                            "clientCIDR": "0.0.0.0/0",
                                            "serverAddress": "%s:%d" % (CFG["host"], CFG["port"])}]})
        if p == "/api/v1":
            return self.send_body(200, {"kind": "APIResourceList", "groupVersion": "v1",
                                        "resources": discovery_resources("", "v1")})
        gs = groups()
        if p == "/apis":
            return self.send_body(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                        "groups": [api_group(g, v) for g, v in gs.items()]})
        parts = p.strip("/").split("/")
        if parts[0] == "apis" and len(parts) == 2 and parts[1] in gs:
            d = api_group(parts[1], gs[parts[1]])
            d.update({"kind": "APIGroup", "apiVersion": "v1"})
            return self.send_body(200, d)
        if parts[0] == "apis" and len(parts) == 3 and parts[1] in gs and parts[2] in gs[parts[1]]:
            return self.send_body(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                        "groupVersion": "%s/%s" % (parts[1], parts[2]),
                                        "resources": discovery_resources(parts[1], parts[2])})
        raise ApiError(404, "the server could not find the requested resource")

    # -- control API -------------------------------------------------------
    def control(self, method, path, q1, raw):
        ident = self.identity()
        if ident is None:
            raise ApiError(401, "Unauthorized")
        if ident[0] != "admin" and "system:masters" not in ident[1]:
            raise ApiError(403, "the control API is for the admin user only")
        p = path[len("/__test"):].rstrip("/") or "/"

        def body():
            b = self.json_body(raw, required=False)
            return {} if b is None else b

        if p == "/ready" and method == "GET":
            return self.send_body(200, {"ready": True})
        if p == "/info" and method == "GET":
            return self.send_body(200, STORE.info())
        if p == "/faults":
            if method == "GET":
                return self.send_body(200, {"items": FAULTS.list()})
            if method == "POST":
                return self.send_body(201, FAULTS.add(body()))
            if method == "DELETE":
                return self.send_body(200, {"cleared": FAULTS.clear()})
        m = re.fullmatch(r"/faults/([0-9]+)/release", p)
        if m and method == "POST":
            n = FAULTS.release(int(m.group(1)))
            if n is None:
                raise ApiError(404, "no fault rule %s" % m.group(1))
            return self.send_body(200, {"released": n})
        if p == "/drop-watches" and method == "POST":
            mode = body().get("mode", "close")
            if mode not in ("close", "end"):
                raise bad_request('mode must be "close" (connection closed) or "end" (stream ended)')
            return self.send_body(200, {"dropped": STORE.drop_watches(mode)})
        if p == "/reset-history" and method == "POST":
            b = body()
            rv = STORE.reset_history()
            n = 0
            if b.get("dropWatches", True):
                n = STORE.drop_watches(b.get("mode", "close"))
            return self.send_body(200, {"resourceVersion": str(rv), "dropped": n})
        if p == "/tokens/rotate" and method == "POST":
            b = body()
            user = b.get("user")
            if not isinstance(user, str) or not re.fullmatch(r"[A-Za-z0-9_.:-]+", user):
                raise bad_request("user: a name made of [A-Za-z0-9_.:-]")
            grace = b.get("grace", 0)
            if not isinstance(grace, (int, float)) or grace < 0:
                raise bad_request("grace: seconds")
            tok = AUTH.rotate(user, grace)
            return self.send_body(200, {"user": username_of(user), "token": tok,
                                        "file": os.path.join(CFG["dir"], "tokens", user)})
        if p == "/tokens/revoke" and method == "POST":
            b = body()
            if isinstance(b.get("token"), str):
                ok = AUTH.revoke(b["token"].strip())
                if not ok:
                    raise ApiError(404, "no such token")
                return self.send_body(200, {"revoked": 1})
            if isinstance(b.get("user"), str):
                return self.send_body(200, {"revoked": AUTH.revoke_user(b["user"])})
            raise bad_request("give token or user")
        if p == "/rules":
            if method == "GET":
                return self.send_body(200, AUTH.get_rules())
        if p.startswith("/rules/") and method == "PUT":
            user = urllib.parse.unquote(p[len("/rules/"):])
            b = self.json_body(raw)
            AUTH.set_rules(user, b.get("rules") if isinstance(b, dict) else b)
            return self.send_body(200, {"user": username_of(user), "rules": AUTH.get_rules()[username_of(user)]})
        if p == "/log":
            if method == "GET":
                try:
                    since = int(q1.get("since", "0"))
                except ValueError:
                    raise bad_request("since: an integer")
                return self.send_body(200, {"items": LOG.items(since)})
            if method == "DELETE":
                LOG.clear()
                return self.send_body(200, {"cleared": True})
        if p == "/objects" and method == "POST":
            b = self.json_body(raw)
            objs = b.get("items") if isinstance(b, dict) and "items" in b else (
                b if isinstance(b, list) else [b])
            return self.send_body(200, {"items": [load_object(o) for o in objs]})
        if p.startswith("/objects/"):
            res, ns, name, sub = parse_route(p[len("/objects"):])
            if method == "GET":
                if name:
                    return self.send_body(200, STORE.get(res, ns, name))
                items, rv, _, _ = STORE.list(res, ns, Selector(""), FieldSelector("", res), 0, None)
                return self.send_body(200, {"kind": res.kind + "List", "apiVersion": res.api_version,
                                            "metadata": {"resourceVersion": str(rv)}, "items": items})
            if not name or (res.namespaced and ns is None):
                raise bad_request("an object path is needed (with its namespace when namespaced)")
            if method == "PUT":
                return self.send_body(200, STORE.direct_put(res, ns, name, self.json_body(raw)))
            if method == "DELETE":
                return self.send_body(200, STORE.direct_delete(res, ns, name))
        raise ApiError(404, "unknown control API path or method: %s %s" % (method, path))


def load_object(o):
    if not isinstance(o, dict):
        raise bad_request("objects must be JSON objects")
    res = BY_GVK.get((o.get("apiVersion"), o.get("kind")))
    if res is None:
        raise bad_request("unknown apiVersion/kind %s/%s" % (o.get("apiVersion"), o.get("kind")))
    md = o.get("metadata") or {}
    if not md.get("name"):
        raise bad_request("metadata.name is required")
    ns = md.get("namespace") or "default" if res.namespaced else None
    return STORE.direct_put(res, ns, md["name"], o)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def server_bind(self):
        import socketserver
        socketserver.TCPServer.server_bind(self)
        self.server_name = "localhost"
        self.server_port = self.server_address[1]

    def handle_error(self, request, client_address):
        e = sys.exc_info()[1]
        if VERBOSE or not isinstance(e, (OSError, ssl.SSLError)):
            log("connection from %s: %s: %s" % (client_address[0], type(e).__name__, e))


# ---------------------------------------------------------------------------
# main

CERTS = {"rsa": "server-rsa", "ecdsa": "server-ecdsa", "expired": "server-expired",
         "wrongname": "server-wrongname"}


def main():
    global STORE, AUTH, VERBOSE, SCHEMA
    ap = argparse.ArgumentParser(description="featurebox test Kubernetes API server")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--cert", choices=sorted(CERTS), default="rsa")
    ap.add_argument("--history", type=int, default=1000)
    ap.add_argument("--bookmark-interval", type=float, default=1.0)
    ap.add_argument("--watch-chunks", choices=("event", "split", "batch"), default="event",
                    help="watch stream chunking: one event per chunk, each event split over "
                         "several chunks, or all queued events in one chunk")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--listen", default="127.0.0.1")
    ap.add_argument("--seed", action="append", default=[])
    ap.add_argument("--keep-state", action="store_true",
                    help="keep objects, users and rules in DIR/state.json across restarts "
                         "(an apiserver restart over the same etcd)")
    ap.add_argument("--schema", action="store_true",
                    help="prune and validate custom resources by their CRD's schema, as the "
                         "apiserver does (also FB_K8S_SCHEMA=1)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    VERBOSE = a.verbose
    if a.schema:
        SCHEMA = True
    try:
        if not ipaddress.ip_address(a.listen).is_loopback:
            ap.error("--listen must be a loopback address")
    except ValueError:
        ap.error("--listen must be an IP address")
    d = os.path.abspath(a.dir)
    os.makedirs(d, exist_ok=True)
    for f in ("ready", "port"):
        try:
            os.unlink(os.path.join(d, f))
        except FileNotFoundError:
            pass
    CFG["dir"] = d
    CFG["bookmark_interval"] = max(0.01, a.bookmark_interval)
    CFG["watch_chunks"] = a.watch_chunks
    pki = make_pki(d)
    for src, dst in (("ca.crt", "ca.crt"), ("other-ca.crt", "other-ca.crt"),
                     ("client-admin.crt", "admin.crt"), ("client-admin.key", "admin.key"),
                     ("client-node1.crt", "node1.crt"), ("client-node1.key", "node1.key")):
        with open(os.path.join(pki, src), "rb") as f:
            write_atomic(os.path.join(d, dst), f.read(), 0o600 if dst.endswith(".key") else 0o644)
    served = os.path.join(pki, CERTS[a.cert])
    with open(served + ".crt", "rb") as f:
        write_atomic(os.path.join(d, "served.crt"), f.read())

    AUTH = Auth(d)
    admin_tok = AUTH.ensure("admin")
    for n in NODE_USERS:
        AUTH.ensure(n)
    # resourceVersions keep growing across restarts in one DIR: a client's resourceVersion
    # from before a restart is older than the new history and gets 410, as after etcd loss
    start_rv = 100
    try:
        with open(os.path.join(d, "last-rv")) as f:
            start_rv = int(f.read()) + 1000
    except (OSError, ValueError):
        pass
    STORE = Store(a.history, start_rv)
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        STORE.create(BY_PLURAL["namespaces"], None, {"metadata": {"name": ns}})
    state = os.path.join(d, "state.json")
    if a.keep_state and os.path.exists(state):
        with open(state) as f:
            st = json.load(f)
        for short in st.get("users", []):
            AUTH.ensure(short)
        for user, rules in st.get("rules", {}).items():
            AUTH.set_rules(user, rules)
        for o in st.get("objects", []):
            load_object(o)
        LOG.seq = st.get("logSeq", 0) # a test's "since" stays meaningful

    for s in a.seed:
        with open(s) as f:
            b = json.load(f)
        for o in (b.get("items") if isinstance(b, dict) and "items" in b else
                  b if isinstance(b, list) else [b]):
            load_object(o)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(served + ".crt", served + ".key")
    ctx.load_verify_locations(os.path.join(pki, "ca.crt"))
    ctx.verify_mode = ssl.CERT_OPTIONAL

    cls = Server
    if ":" in a.listen:
        cls = type("Server6", (Server,), {"address_family": socket.AF_INET6})
    httpd = cls((a.listen, a.port), Handler)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    port = httpd.server_address[1]
    CFG["port"], CFG["host"] = port, a.listen
    url = "https://%s:%d" % ("[%s]" % a.listen if ":" in a.listen else a.listen, port)

    write_atomic(os.path.join(d, "port"), "%d\n" % port)
    write_atomic(os.path.join(d, "url"), url + "\n")
    ca = os.path.join(d, "ca.crt")
    write_atomic(os.path.join(d, "kubeconfig-admin"), kubeconfig(
        url, "admin", ["certificate-authority: " + yq(ca)], ["token: " + yq(admin_tok)]), 0o600)
    write_atomic(os.path.join(d, "kubeconfig-cert"), kubeconfig(
        url, "admin", ["certificate-authority-data: " + b64file(ca)],
        ["client-certificate-data: " + b64file(os.path.join(d, "admin.crt")),
         "client-key-data: " + b64file(os.path.join(d, "admin.key"))]), 0o600)
    for n in NODE_USERS:
        write_atomic(os.path.join(d, "kubeconfig-" + n), kubeconfig(
            url, "system:node:" + n, ["certificate-authority: " + yq(ca)],
            ["tokenFile: " + yq(os.path.join(d, "tokens", n))]), 0o600)
    write_atomic(os.path.join(d, "kubeconfig-node1-cert"), kubeconfig(
        url, "system:node:node1", ["certificate-authority: " + yq(ca)],
        ["client-certificate: " + yq(os.path.join(d, "node1.crt")),
         "client-key: " + yq(os.path.join(d, "node1.key"))]), 0o600)

    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    t.start()
    write_atomic(os.path.join(d, "ready"), "%d\n" % port)
    log("ready on %s (pid %d, cert %s, dir %s)" % (url, os.getpid(), a.cert, d))
    while not stop.wait(1.0):
        pass
    log("stopping")
    SHUTDOWN.set()
    if a.keep_state:
        # what was acknowledged is what is kept: no write commits after this
        with STORE.lock:
            STORE.frozen = True
            try:
                write_atomic(state, json.dumps(dump_state()))
            except OSError as e:
                log("cannot write %s: %s" % (state, e))
    for f in ("ready",):
        try:
            os.unlink(os.path.join(d, f))
        except OSError:
            pass
    httpd.shutdown()
    STORE.drop_watches("end")
    httpd.server_close()
    try:
        write_atomic(os.path.join(d, "last-rv"), "%d\n" % STORE.rv)
    except OSError:
        pass
    return 0


def dump_state():
    """Everything --keep-state restores: the objects (kind and apiVersion set, so
    load_object places them), the users with a token file, and the allow rules."""
    objs = []
    # the caller holds STORE.lock
    for r in RESOURCES:
        for k in sorted(STORE.objs[r.plural]):
            o = jcopy(STORE.objs[r.plural][k])
            o["kind"], o["apiVersion"] = r.kind, r.api_version
            objs.append(o)
    users = sorted(n for n in os.listdir(AUTH.tokdir)
                   if not n.startswith(".") and os.path.islink(os.path.join(AUTH.tokdir, n)))
    return {"objects": objs, "users": users, "rules": AUTH.get_rules(), "logSeq": LOG.seq}


if __name__ == "__main__":
    sys.exit(main())
