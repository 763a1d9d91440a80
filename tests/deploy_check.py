#!/usr/bin/env python3
"""tests/deploy_check.py: checks the objects `kubectl kustomize` renders from deploy/.

    python3 tests/deploy_check.py --top DIR [--needs RENDER=OTHER]... RENDER.yaml...

Each RENDER.yaml is one rendering of something meant to be applied (an
overlay, deploy/jobs, or the whole of deploy/base/rbac); its file name, less
.yaml, names it in the output. --needs says that RENDER is applied after
OTHER (deploy/jobs after overlays/gpu): OTHER's ServiceAccounts count for it.
Checks that have nothing to look at in a rendering are left out. Prints one line "PASS: deploy: RENDER: check" or "FAIL: deploy:
RENDER: check (why)" per check and exits 1 when any failed. Python 3 standard
library only: YAML is read by the test API server's loader (tests/k8s/server.py),
which tests/deploy.sh compares with PyYAML where that is installed.

What it enforces:
- Long-running workloads (Deployment, DaemonSet, StatefulSet): every container
  and initContainer non-root (runAsNonRoot, runAsUser 65534), read-only root
  filesystem, allowPrivilegeEscalation false, capabilities drop ALL and add
  none, seccomp RuntimeDefault, not privileged; no host network, PID or IPC;
  requests cpu+memory and a memory limit; every (non-init) container has HTTP
  liveness (/healthz) and readiness (/healthz or /readyz) probes on a declared
  port that is the one its --port argument names, and NODE_NAME, POD_NAME and
  POD_UID from the downward API.
- With --fbbin: every container's command is /usr/bin/featurebox APPLET and
  the binary accepts its arguments (APPLET ARGS... --help exits 0).
- Jobs: only vfio-switch-*, which is the only privileged container anywhere:
  pinned to a node, backoffLimit 0, a grace period of at least 120 s,
  --update-physicalgpu, NODE_NAME from the downward API, resources.
- hostPath mounts read-only everywhere except vfio-switch's /sys and /proc, and
  features.d for gpu-node-agent's --features-setup initContainer (root with
  CAP_CHOWN only) and its own features.d/.gpu-node-agent.
- Every container's image is the one of deploy/components/image.
- Every Pod names a ServiceAccount that the same rendering defines.
- RBAC: every Role/ClusterRole is in the table below and grants exactly its
  rules (no wildcard, no nonResourceURLs, no aggregation); every binding binds
  a known role to exactly that role's ServiceAccount, which exists.
- CRDs: only those of deploy/base/crds.
- gpu-node-agent: runs in the Deckhouse gpu module's namespace (GPU_NS); the
  vendor ConfigMap it reads (--vendors-configmap [NS/]NAME, default
  gpu-supported-vendors in its own namespace) is in the rendering, in that
  namespace, where the agent's Role grants it by name; with --fbbin the agent
  reads that ConfigMap without a warning about it.

    python3 tests/deploy_check.py --top DIR --discovery K8S_DIR CRD_DIR LABEL

compares what the running test API server (tests/k8s, files in K8S_DIR)
lists in discovery for the CRDs' groups with the CRD files in CRD_DIR: group,
version, plural, kind, scope, short names and the status subresource, read
with PyYAML where installed (an independent reader).
"""

import argparse
import importlib.util
import os
import re
import sys

RBAC = "rbac.authorization.k8s.io"


def rules(*specs):
    """{(apiGroup, resource, verb, resourceName or '*')} from (groups, resources, verbs[, names])."""
    out = set()
    for s in specs:
        groups, resources, verbs = s[0], s[1], s[2]
        names = s[3] if len(s) > 3 else ["*"]
        for g in groups:
            for r in resources:
                for v in verbs:
                    for n in names:
                        out.add((g, r, v, n))
    return out


# (kind, name) -> (ServiceAccount it is for, the exact rules). The spec's lists
# (specs/deploy.md, specs/gpu-node-agent.md, README's RBAC lines).
EXPECTED = {
    ("Role", "nfd-worker"): ("nfd-worker", rules(
        (["nfd.k8s-sigs.io"], ["nodefeatures"], ["create", "get", "update", "delete"]),
        ([""], ["pods"], ["get"]))),
    ("ClusterRole", "featurebox-nfd-worker-standalone"): ("nfd-worker", rules(
        ([""], ["nodes"], ["get", "patch"]),
        ([""], ["nodes/status"], ["patch"]))),
    ("ClusterRole", "featurebox-nfd-master"): ("nfd-master", rules(
        ([""], ["namespaces"], ["watch", "list"]),
        ([""], ["nodes"], ["get", "list", "watch", "patch"]),
        ([""], ["nodes/status"], ["patch"]),
        (["nfd.k8s-sigs.io"], ["nodefeatures"], ["get", "list", "watch", "delete"]),
        (["nfd.k8s-sigs.io"], ["nodefeaturerules"], ["get", "list", "watch"]))),
    ("ClusterRole", "featurebox-nfd-gc"): ("nfd-gc", rules(
        ([""], ["nodes"], ["get", "list"]),
        (["nfd.k8s-sigs.io"], ["nodefeatures"], ["list", "delete"]))),
    ("Role", "nfd-master"): ("nfd-master", rules(
        (["nfd.k8s-sigs.io"], ["nodefeaturegroups"], ["get", "list", "watch"]),
        (["nfd.k8s-sigs.io"], ["nodefeaturegroups/status"], ["patch"]),
        (["coordination.k8s.io"], ["leases"], ["create"]),
        (["coordination.k8s.io"], ["leases"], ["get", "update"], ["nfd-master.nfd.kubernetes.io"]))),
    ("ClusterRole", "featurebox-dt-labeller"): ("dt-labeller", rules(
        ([""], ["nodes"], ["get", "list", "watch", "patch"]))),
    ("ClusterRole", "featurebox-gpu-node-agent"): ("gpu-node-agent", rules(
        (["gpu.deckhouse.io"], ["physicalgpus"],
         ["get", "list", "watch", "create", "update", "patch", "delete"]),
        (["gpu.deckhouse.io"], ["physicalgpus/status"], ["update", "patch"]),
        ([""], ["nodes"], ["get", "patch"]))),
    ("Role", "gpu-node-agent"): ("gpu-node-agent", rules(
        ([""], ["configmaps"], ["get", "list", "watch"], ["gpu-supported-vendors"]),
        ([""], ["events"], ["create"]))),
    ("ClusterRole", "featurebox-vfio-switch"): ("vfio-switch", rules(
        (["gpu.deckhouse.io"], ["physicalgpus/status"], ["patch"]))),
    ("Role", "featurebox-vfio-switch-events"): ("vfio-switch", rules(
        ([""], ["events"], ["create"]))),
}
# Roles whose namespace is fixed whatever the overlay's namespace is.
FIXED_NS = {("Role", "featurebox-vfio-switch-events"): "default"}

LONG_RUNNING = ("Deployment", "DaemonSet", "StatefulSet")
# The Deckhouse gpu module's namespace (its docs: "Deployed into namespace
# d8-nvidia-gpu"), where its gpu-supported-vendors ConfigMap is.
GPU_NS = "d8-nvidia-gpu"
DOWNWARD = {"NODE_NAME": "spec.nodeName", "POD_NAME": "metadata.name", "POD_UID": "metadata.uid"}


def load_server(top):
    spec = importlib.util.spec_from_file_location("fb_k8s_server", os.path.join(top, "tests/k8s/server.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Checker:
    def __init__(self, render, objs, image, crd_names, needed=(), fbbin=None):
        self.render, self.objs, self.image, self.crd_names = render, objs, image, crd_names
        self.fbbin = fbbin
        self.needed = list(needed)  # objects applied before these (ServiceAccounts)
        self.failed = 0

    def report(self, check, errs):
        if errs:
            self.failed += 1
            print("FAIL: deploy: %s: %s (%s)" % (self.render, check, "; ".join(errs[:8])))
        else:
            print("PASS: deploy: %s: %s" % (self.render, check))

    def of_kind(self, *kinds):
        return [o for o in self.objs if o.get("kind") in kinds]

    # -- pods ---------------------------------------------------------------

    def pods(self):
        """(workload object, pod spec) for every workload."""
        out = []
        for o in self.objs:
            k = o.get("kind")
            if k in LONG_RUNNING or k == "Job":
                out.append((o, o["spec"]["template"]["spec"]))
            elif k == "CronJob":
                out.append((o, o["spec"]["jobTemplate"]["spec"]["template"]["spec"]))
            elif k == "Pod":
                out.append((o, o["spec"]))
        return out

    @staticmethod
    def wname(o):
        return "%s/%s" % (o["kind"], o["metadata"]["name"])

    @staticmethod
    def is_vfio_job(o):
        return o.get("kind") == "Job" and o["metadata"]["name"].startswith("vfio-switch-")

    @staticmethod
    def containers(ps, init=True):
        out = [(c, False) for c in ps.get("containers") or []]
        if init:
            out += [(c, True) for c in ps.get("initContainers") or []]
        return out

    @staticmethod
    def eff(ps, c, key):
        """The container's securityContext key, else the pod's (where the pod level has it)."""
        csc = c.get("securityContext") or {}
        if key in csc:
            return csc[key]
        if key in ("runAsNonRoot", "runAsUser", "runAsGroup", "seccompProfile"):
            return (ps.get("securityContext") or {}).get(key)
        return None

    FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"

    @staticmethod
    def features_setup(c, init):
        """gpu-node-agent's one root step: an initContainer running
        --features-setup (root, CAP_CHOWN and nothing else)."""
        argv = list(c.get("command") or []) + list(c.get("args") or [])
        return init and any(a.startswith("--features-setup") for a in argv)

    def check_security(self):
        errs = []
        for o, ps in self.pods():
            if o["kind"] not in LONG_RUNNING:
                continue
            w = self.wname(o)
            for key in ("hostNetwork", "hostPID", "hostIPC"):
                if ps.get(key):
                    errs.append("%s: %s" % (w, key))
            for c, init in self.containers(ps):
                n = "%s %s" % (w, c.get("name"))
                setup = self.features_setup(c, init)
                if setup:  # root, CAP_CHOWN only; the rest as for everyone
                    caps = self.eff(ps, c, "capabilities") or {}
                    if self.eff(ps, c, "runAsUser") != 0 or (caps.get("add") or []) != ["CHOWN"]:
                        errs.append("%s: --features-setup runs as root with CAP_CHOWN only" % n)
                elif self.eff(ps, c, "runAsNonRoot") is not True:
                    errs.append("%s: runAsNonRoot is not true" % n)
                if not setup and self.eff(ps, c, "runAsUser") != 65534:
                    errs.append("%s: runAsUser is not 65534" % n)
                if self.eff(ps, c, "readOnlyRootFilesystem") is not True:
                    errs.append("%s: readOnlyRootFilesystem is not true" % n)
                if self.eff(ps, c, "allowPrivilegeEscalation") is not False:
                    errs.append("%s: allowPrivilegeEscalation is not false" % n)
                if self.eff(ps, c, "privileged"):
                    errs.append("%s: privileged" % n)
                caps = self.eff(ps, c, "capabilities") or {}
                if "ALL" not in (caps.get("drop") or []):
                    errs.append("%s: capabilities do not drop ALL" % n)
                if caps.get("add") and not setup:
                    errs.append("%s: capabilities add %s" % (n, caps["add"]))
                if (self.eff(ps, c, "seccompProfile") or {}).get("type") != "RuntimeDefault":
                    errs.append("%s: seccompProfile is not RuntimeDefault" % n)
        self.report("long-running containers: non-root, read-only root, no escalation, drop ALL, seccomp",
                    errs)

    def check_privileged(self):
        errs = []
        for o, ps in self.pods():
            for c, _ in self.containers(ps):
                sc = c.get("securityContext") or {}
                if sc.get("privileged") or "SYS_ADMIN" in ((sc.get("capabilities") or {}).get("add") or []):
                    if not self.is_vfio_job(o):
                        errs.append("%s %s is privileged" % (self.wname(o), c.get("name")))
        self.report("only the vfio-switch Job is privileged", errs)

    def check_probes_resources_env(self):
        errs = []
        for o, ps in self.pods():
            w = self.wname(o)
            for c, init in self.containers(ps):
                n = "%s %s" % (w, c.get("name"))
                res = c.get("resources") or {}
                req, lim = res.get("requests") or {}, res.get("limits") or {}
                if not req.get("cpu") or not req.get("memory"):
                    errs.append("%s: no cpu+memory requests" % n)
                if not lim.get("memory"):
                    errs.append("%s: no memory limit" % n)
                if init:
                    continue
                env = {e.get("name"): ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
                       for e in c.get("env") or []}
                # nfd-gc works on the whole cluster: no node, no owner
                gc = "nfd-gc" in (c.get("command") or [])
                for k, path in DOWNWARD.items():
                    if (o["kind"] == "Job" and k != "NODE_NAME") or gc:
                        continue
                    if env.get(k) != path:
                        errs.append("%s: %s not from the downward API (%s)" % (n, k, path))
                if o["kind"] not in LONG_RUNNING:
                    continue
                ports = {}
                for p in c.get("ports") or []:
                    ports[p.get("containerPort")] = p.get("containerPort")
                    if p.get("name"):
                        ports[p["name"]] = p.get("containerPort")
                port_arg = None
                for a in c.get("args") or []:
                    m = re.match(r"--?port=([0-9]+)\Z", str(a))
                    if m:
                        port_arg = int(m.group(1))
                if port_arg is None:
                    errs.append("%s: no --port=N argument" % n)
                for probe, paths in (("livenessProbe", ("/healthz",)),
                                     ("readinessProbe", ("/healthz", "/readyz"))):
                    pr = c.get(probe)
                    hg = (pr or {}).get("httpGet")
                    if not hg:
                        errs.append("%s: no HTTP %s" % (n, probe))
                        continue
                    if hg.get("path") not in paths:
                        errs.append("%s: %s path %s" % (n, probe, hg.get("path")))
                    port = ports.get(hg.get("port"))
                    if port is None or port != port_arg:
                        errs.append("%s: %s port %s is not the --port %s" % (n, probe, hg.get("port"), port_arg))
        self.report("probes on /healthz and /readyz at --port, resources, downward-API env", errs)

    def check_hostpath(self):
        errs = []
        for o, ps in self.pods():
            w = self.wname(o)
            hp = {v["name"]: v["hostPath"].get("path") for v in ps.get("volumes") or [] if v.get("hostPath")}
            for c, init in self.containers(ps):
                for m in c.get("volumeMounts") or []:
                    if m.get("name") not in hp:
                        continue
                    if m.get("readOnly") is True:
                        continue
                    # vfio-switch writes sysfs and NVIDIA's unbindLock (/proc)
                    if self.is_vfio_job(o) and hp[m["name"]] in ("/sys", "/proc"):
                        continue
                    # gpu-node-agent: features.d for its setup step, its own
                    # hidden directory there for the agent
                    if self.features_setup(c, init) and hp[m["name"]] == self.FEATURES_D:
                        continue
                    if c.get("name") == "gpu-node-agent" and hp[m["name"]] == self.FEATURES_D + "/.gpu-node-agent":
                        continue
                    errs.append("%s %s: hostPath %s mounted read-write at %s"
                                % (w, c.get("name"), hp[m["name"]], m.get("mountPath")))
        self.report("hostPath mounts read-only (but vfio-switch's /sys and /proc)", errs)
        # where the applet looks: --host-prefix P reads host /X at P + "X"
        errs = []
        for o, ps in self.pods():
            w = self.wname(o)
            hp = {v["name"]: v["hostPath"].get("path") for v in ps.get("volumes") or [] if v.get("hostPath")}
            for c, _ in self.containers(ps):
                argv = list(c.get("command") or []) + list(c.get("args") or [])
                prefix = None
                for i, a in enumerate(argv):
                    if a.startswith("--host-prefix="):
                        prefix = a.split("=", 1)[1]
                    elif a == "--host-prefix" and i + 1 < len(argv):
                        prefix = argv[i + 1]
                if prefix is None:
                    continue
                for m in c.get("volumeMounts") or []:
                    path = hp.get(m.get("name"))
                    if path is None or path.startswith(self.FEATURES_D):
                        continue
                    want = prefix + path.lstrip("/")
                    if m.get("mountPath") != want:
                        errs.append("%s %s: hostPath %s at %s, but --host-prefix=%s reads it at %s"
                                    % (w, c.get("name"), path, m.get("mountPath"), prefix, want))
        self.report("hostPath mounts where --host-prefix reads them", errs)

    def check_jobs(self):
        jobs = self.of_kind("Job", "CronJob")
        if not jobs:
            return
        errs = []
        for o in jobs:
            w = self.wname(o)
            if not self.is_vfio_job(o):
                errs.append("%s: no Job but vfio-switch-<node>-<pci>" % w)
                continue
            js, ps = o["spec"], o["spec"]["template"]["spec"]
            if js.get("backoffLimit") != 0:
                errs.append("%s: backoffLimit is not 0" % w)
            if (ps.get("terminationGracePeriodSeconds") or 30) < 120:
                errs.append("%s: terminationGracePeriodSeconds under 120" % w)
            if not ps.get("nodeName") and "kubernetes.io/hostname" not in (ps.get("nodeSelector") or {}):
                errs.append("%s: not pinned to a node" % w)
            if ps.get("restartPolicy") != "Never":
                errs.append("%s: restartPolicy is not Never" % w)
            cs = ps.get("containers") or []
            if len(cs) != 1 or "--update-physicalgpu" not in (cs[0].get("args") or []):
                errs.append("%s: not one container with --update-physicalgpu" % w)
            elif not (cs[0].get("securityContext") or {}).get("privileged"):
                errs.append("%s: not privileged (it writes driver_override and bind)" % w)
            hp = [v["hostPath"].get("path") for v in ps.get("volumes") or [] if v.get("hostPath")]
            # /sys to switch, /proc and /dev for the busy check and NVIDIA's
            # unbindLock, /lib/modules for --to vfio's modules.alias
            if sorted(hp) != ["/dev", "/lib/modules", "/proc", "/sys"]:
                errs.append("%s: hostPath volumes %s, want /sys, /proc, /dev, /lib/modules" % (w, hp))
        self.report("the vfio-switch Job: pinned, privileged, backoffLimit 0, grace >= 120 s", errs)

    def check_images(self):
        errs = []
        for o, ps in self.pods():
            for c, _ in self.containers(ps):
                if c.get("image") != self.image:
                    errs.append("%s %s: image %s" % (self.wname(o), c.get("name"), c.get("image")))
        self.report("every container runs the image %s" % self.image, errs)

    def check_args(self):
        """Every container runs /usr/bin/featurebox APPLET with arguments the
        built binary accepts: "featurebox APPLET ARGS... --help" exits 0 only
        when every option before --help parsed (placeholders filled in)."""
        import subprocess
        fill = {"__NODE__": "worker-1", "__PCI__": "0000-65-00-0", "__ADDRESS__": "0000:65:00.0",
                "__DRIVER__": "vfio-pci"}
        errs = []
        for o, ps in self.pods():
            for c, _ in self.containers(ps):
                n = "%s %s" % (self.wname(o), c.get("name"))
                cmd = [str(x) for x in (c.get("command") or []) + (c.get("args") or [])]
                if len(cmd) < 2 or cmd[0] != "/usr/bin/featurebox":
                    errs.append("%s: command is not /usr/bin/featurebox APPLET" % n)
                    continue
                for k, v in fill.items():
                    cmd = [x.replace(k, v) for x in cmd]
                r = subprocess.run([self.fbbin] + cmd[1:] + ["--help"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=20)
                if r.returncode != 0:
                    errs.append("%s: %s exits %d: %s" % (n, " ".join(cmd[1:]), r.returncode,
                                                         r.stderr.decode(errors="replace").strip()[:200]))
        self.report("every container's applet accepts its arguments (%s)" % os.path.basename(self.fbbin), errs)

    def ns(self, o, default=None):
        return o["metadata"].get("namespace", default)

    def check_service_accounts(self):
        errs = []
        sas = {(self.ns(o), o["metadata"]["name"])
               for o in self.objs + self.needed if o.get("kind") == "ServiceAccount"}
        for o, ps in self.pods():
            sa = ps.get("serviceAccountName")
            if not sa or sa == "default":
                errs.append("%s: no serviceAccountName of its own" % self.wname(o))
            elif (self.ns(o), sa) not in sas:
                errs.append("%s: ServiceAccount %s/%s is not defined here" % (self.wname(o), self.ns(o), sa))
        self.report("every Pod's ServiceAccount exists", errs)

    # -- RBAC ---------------------------------------------------------------

    def check_rbac(self):
        errs = []
        roles = {}
        for o in self.of_kind("Role", "ClusterRole"):
            key = (o["kind"], o["metadata"]["name"])
            roles[(key, self.ns(o) if o["kind"] == "Role" else None)] = o
            if key not in EXPECTED:
                errs.append("%s/%s is not in the expected table" % key)
                continue
            if o.get("aggregationRule"):
                errs.append("%s/%s aggregates" % key)
            if key in FIXED_NS and self.ns(o) != FIXED_NS[key]:
                errs.append("%s/%s is not in namespace %s" % (key + (FIXED_NS[key],)))
            got = set()
            for r in o.get("rules") or []:
                if r.get("nonResourceURLs"):
                    errs.append("%s/%s: nonResourceURLs" % key)
                for f in ("apiGroups", "resources", "verbs", "resourceNames"):
                    if "*" in (r.get(f) or []):
                        errs.append("%s/%s: wildcard in %s" % (key + (f,)))
                got |= rules((r.get("apiGroups") or [], r.get("resources") or [], r.get("verbs") or [],
                              r.get("resourceNames") or ["*"]))
            want = EXPECTED[key][1]
            for t in sorted(got - want):
                errs.append("%s/%s grants %s" % (key + (t,)))
            for t in sorted(want - got):
                errs.append("%s/%s lacks %s" % (key + (t,)))
        sas = {(self.ns(o), o["metadata"]["name"]) for o in self.of_kind("ServiceAccount")}
        bound = set()
        for b in self.of_kind("RoleBinding", "ClusterRoleBinding"):
            bn = "%s/%s" % (b["kind"], b["metadata"]["name"])
            ref = b.get("roleRef") or {}
            key = (ref.get("kind"), ref.get("name"))
            if ref.get("apiGroup") != RBAC or key not in EXPECTED:
                errs.append("%s: roleRef %s/%s is not a known role" % (bn, key[0], key[1]))
                continue
            rns = self.ns(b) if key[0] == "Role" else None
            if (key, rns) not in roles:
                errs.append("%s: %s/%s is not defined here%s" % (bn, key[0], key[1],
                                                                 " (in %s)" % rns if rns else ""))
            else:
                bound.add((key, rns))
            if b["kind"] == "ClusterRoleBinding" and key[0] != "ClusterRole":
                errs.append("%s: binds a Role" % bn)
            subj = b.get("subjects") or []
            want_sa = EXPECTED[key][0]
            if len(subj) != 1 or subj[0].get("kind") != "ServiceAccount" or subj[0].get("name") != want_sa:
                errs.append("%s: subjects %s, want exactly ServiceAccount %s" % (bn, subj, want_sa))
            elif (subj[0].get("namespace"), want_sa) not in sas:
                errs.append("%s: ServiceAccount %s/%s is not defined here" % (bn, subj[0].get("namespace"), want_sa))
        for (key, rns) in roles:
            if key in EXPECTED and (key, rns) not in bound:
                errs.append("%s/%s is bound to nobody" % key)
        self.report("RBAC: exactly the expected rules per applet, no wildcards, bindings to the applet's ServiceAccount",
                    errs)

    def check_gpu_vendors(self):
        """gpu-node-agent in GPU_NS, and the vendor ConfigMap it reads where it reads it."""
        agents = [(o, c) for o, ps in self.pods() for c, _ in self.containers(ps)
                  if (c.get("command") or [None, None])[1:2] == ["gpu-node-agent"]]
        if not agents:
            return
        errs = []
        for o, c in agents:
            n = "%s %s" % (self.wname(o), c.get("name"))
            own = self.ns(o)
            if own != GPU_NS:
                errs.append("%s: in namespace %s, not the gpu module's %s" % (n, own, GPU_NS))
            ref = "gpu-supported-vendors"
            for a in [str(x) for x in c.get("args") or []]:
                if a.startswith("--vendors-configmap="):
                    ref = a.split("=", 1)[1]
            cns, name = ref.split("/", 1) if "/" in ref else (own, ref)
            cms = [x for x in self.objs if x.get("kind") == "ConfigMap"
                   and x["metadata"]["name"] == name and self.ns(x) == cns]
            if not cms:
                errs.append("%s: reads ConfigMap %s/%s, which is not here" % (n, cns, name))
            granted = False
            for r in self.of_kind("Role"):
                if self.ns(r) != cns:
                    continue
                for rule in r.get("rules") or []:
                    if ("configmaps" in (rule.get("resources") or []) and
                            name in (rule.get("resourceNames") or []) and
                            {"get", "list", "watch"} <= set(rule.get("verbs") or [])):
                        granted = True
            if not granted:
                errs.append("%s: no Role in %s grants get/list/watch on ConfigMap %s" % (n, cns, name))
            if cms and self.fbbin:
                import json
                import subprocess
                import tempfile
                with tempfile.TemporaryDirectory() as d:
                    f = os.path.join(d, "rendered-vendors.json")
                    with open(f, "w") as fh:
                        json.dump(cms[0], fh)
                    os.mkdir(os.path.join(d, "host"))
                    r = subprocess.run([self.fbbin, "gpu-node-agent", "--oneshot", "--no-publish",
                                        "--node-name", "n", "--vendors-file", f,
                                        "--host-prefix", os.path.join(d, "host") + "/"],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, timeout=20)
                    bad = [ln for ln in r.stderr.decode(errors="replace").splitlines()
                           if "rendered-vendors.json" in ln]
                    if r.returncode != 0 or bad:
                        errs.append("%s: gpu-node-agent --vendors-file on ConfigMap %s/%s: exit %d %s"
                                    % (n, cns, name, r.returncode, " ".join(bad)[:300]))
        self.report("gpu-node-agent in %s, reading a vendor ConfigMap that is there and granted" % GPU_NS,
                    errs)

    def check_crds(self):
        crds = self.of_kind("CustomResourceDefinition")
        if not crds:
            return
        errs = ["%s is not one of deploy/base/crds" % o["metadata"]["name"]
                for o in crds if o["metadata"]["name"] not in self.crd_names]
        self.report("CRDs are those of deploy/base/crds", errs)

    def run(self):
        if not self.objs:
            self.report("renders objects", ["nothing rendered"])
            return self.failed
        self.check_crds()
        if self.pods():
            self.check_security()
            self.check_privileged()
            self.check_probes_resources_env()
            self.check_hostpath()
            self.check_jobs()
            self.check_images()
            self.check_service_accounts()
            self.check_gpu_vendors()
            if self.fbbin:
                self.check_args()
        if self.of_kind("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"):
            self.check_rbac()
        return self.failed


def crd_table(srv, d, use_pyyaml):
    """{(group, version, plural): (kind, namespaced, shortNames, status)} of d/*.yaml,
    read with PyYAML when asked (an independent reader), else with the server's loader."""
    out = {}
    for f in sorted(os.listdir(d)):
        if not f.endswith(".yaml"):
            continue
        with open(os.path.join(d, f)) as fh:
            text = fh.read()
        if use_pyyaml:
            import yaml
            docs = list(yaml.safe_load_all(text))
        else:
            docs = srv.yaml_load_all(text, f)
        for o in docs:
            if not isinstance(o, dict) or o.get("kind") != "CustomResourceDefinition":
                continue
            sp = o["spec"]
            for v in sp["versions"]:
                if v.get("served"):
                    out[(sp["group"], v["name"], sp["names"]["plural"])] = (
                        sp["names"]["kind"], sp["scope"] == "Namespaced",
                        tuple(sp["names"].get("shortNames") or ()),
                        "status" in (v.get("subresources") or {}))
    return out


def discovery_table(k8s_dir, groups):
    """The same table from the running test API server's discovery documents."""
    import json
    import ssl
    import urllib.request
    with open(os.path.join(k8s_dir, "url")) as f:
        url = f.read().strip()
    with open(os.path.join(k8s_dir, "admin.token")) as f:
        tok = f.read().strip()
    ctx = ssl.create_default_context(cafile=os.path.join(k8s_dir, "ca.crt"))

    def get(path):
        req = urllib.request.Request(url + path, headers={"Authorization": "Bearer " + tok})
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return json.load(r)
    out = {}
    for g in get("/apis")["groups"]:
        if g["name"] not in groups:
            continue
        for v in g["versions"]:
            rl = get("/apis/%s/%s" % (g["name"], v["version"]))["resources"]
            subs = {r["name"] for r in rl if "/" in r["name"]}
            for r in rl:
                if "/" in r["name"]:
                    continue
                out[(g["name"], v["version"], r["name"])] = (
                    r["kind"], r["namespaced"], tuple(r.get("shortNames") or ()),
                    r["name"] + "/status" in subs)
    return out


def check_discovery(top, k8s_dir, crd_dir, label):
    """PASS when the server's discovery for the CRDs' groups is exactly the CRD files' table."""
    srv = load_server(top)
    try:
        import yaml  # noqa: F401
        use_pyyaml, how = True, "PyYAML"
    except ImportError:
        use_pyyaml, how = False, "the server's loader; PyYAML not installed"
    want = crd_table(srv, crd_dir, use_pyyaml)
    got = discovery_table(k8s_dir, {k[0] for k in want})
    errs = ["%s: discovery %s, YAML %s" % ("/".join(k), got.get(k), want.get(k))
            for k in sorted(set(want) | set(got)) if got.get(k) != want.get(k)]
    name = "the test API server serves exactly the CRDs of %s (%d resources; YAML read by %s)" % (
        label, len(want), how)
    if errs:
        print("FAIL: deploy: %s (%s)" % (name, "; ".join(errs)))
        return 1
    print("PASS: deploy: %s" % name)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", required=True, help="the source tree (for the YAML loader, image, CRDs)")
    ap.add_argument("--discovery", nargs=3, metavar=("K8S_DIR", "CRD_DIR", "LABEL"),
                    help="instead: compare the running test API server's discovery with CRD_DIR")
    ap.add_argument("--needs", action="append", default=[], metavar="RENDER=OTHER")
    ap.add_argument("--fbbin", help="also run each container's applet with its arguments and --help")
    ap.add_argument("renders", nargs="*")
    a = ap.parse_args()
    if a.discovery:
        return check_discovery(a.top, *a.discovery)
    srv = load_server(a.top)
    with open(os.path.join(a.top, "deploy/components/image/kustomization.yaml")) as f:
        comp = srv.yaml_load_all(f.read(), "components/image")[0]
    imgs = comp.get("images") or []
    if len(imgs) != 1 or imgs[0].get("name") != "featurebox":
        print("FAIL: deploy: components/image names one image, featurebox (%s)" % imgs)
        return 1
    image = "%s:%s" % (imgs[0].get("newName", "featurebox"), imgs[0]["newTag"])
    crd_names = set()
    d = os.path.join(a.top, "deploy/base/crds")
    for f in sorted(os.listdir(d)):
        if f.endswith("-crd.yaml"):
            with open(os.path.join(d, f)) as fh:
                crd_names |= {o["metadata"]["name"] for o in srv.yaml_load_all(fh.read(), f)}
    failed, loaded = 0, {}
    for path in a.renders:
        name = os.path.basename(path)[:-5] if path.endswith(".yaml") else os.path.basename(path)
        with open(path) as f:
            text = f.read()
        try:
            loaded[name] = [o for o in srv.yaml_load_all(text, path) if o is not None]
        except srv.YamlError as e:
            print("FAIL: deploy: %s: parses (%s)" % (name, e))
            failed += 1
    needs = dict(n.split("=", 1) for n in a.needs)
    for name, objs in loaded.items():
        if needs.get(name) and needs[name] not in loaded:
            print("FAIL: deploy: %s: needs %s, which was not given" % (name, needs[name]))
            failed += 1
            continue
        failed += Checker(name, objs, image, crd_names, loaded.get(needs.get(name), ()), a.fbbin).run()
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a crash must be a FAIL line, not silently fewer checks
        print("FAIL: deploy: tests/deploy_check.py crashed: %s: %s" % (type(e).__name__, e))
        sys.exit(2)
