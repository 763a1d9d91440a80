#!/usr/bin/env python3
"""fakekernel.py ROOT [--default ADDR=DRIVER]... [--refuse ADDR=DRIVER]...

The kernel's side of PCI driver binding over a copied sysfs fixture tree, so
vfio-switch can run end to end without a kernel (the real one is tests/vm/).

It turns ROOT/sys/bus/pci/drivers_probe and every drivers/<D>/unbind and
drivers/<D>/bind into FIFOs and serves what is written there as the kernel
does (Documentation/ABI/testing/sysfs-bus-pci):
  <D>/unbind ADDR   removes ADDR's driver link when it points at D
  <D>/bind ADDR     binds ADDR to D when it is unbound (and not refused)
  drivers_probe ADDR  an unbound ADDR gets the driver named by its
                    driver_override, else its default driver (the one it had
                    at start unless that was a VFIO driver, or --default);
                    nothing binds when that driver is not registered or the
                    pair is refused (--refuse: the driver's probe fails).
driver_override stays a plain file: vfio-switch writes it with O_TRUNC and the
probe reads it. Writes to unbind are served before drivers_probe when both
are pending, as the writer made them in that order. New driver directories
(made by a fake modprobe) are picked up within 20 ms. Every action is
appended to ROOT/fakekernel.log; ROOT/fakekernel.ready appears once it serves.
Stops on SIGTERM.
"""
import os
import re
import select
import signal
import sys

ADDR = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def main(argv):
    root = argv[1]
    defaults, refuse = {}, set()
    i = 2
    while i < len(argv):
        k, v = argv[i + 1].split("=", 1)
        if argv[i] == "--default":
            defaults[k] = v
        elif argv[i] == "--refuse":
            refuse.add((k, v))
        i += 2
    bus = os.path.join(root, "sys/bus/pci")
    devs = os.path.join(bus, "devices")
    drivers = os.path.join(bus, "drivers")
    log = open(os.path.join(root, "fakekernel.log"), "a", buffering=1)

    def devdir(a):
        return os.path.realpath(os.path.join(devs, a))

    def bound(a):
        p = os.path.join(devdir(a), "driver")
        return os.path.basename(os.readlink(p)) if os.path.islink(p) else ""

    for a in sorted(os.listdir(devs)):
        d = bound(a)
        if a not in defaults and d and "vfio" not in d:
            defaults[a] = d

    def bind(a, drv, why):
        ddir = os.path.join(drivers, drv)
        if not os.path.isdir(ddir) or (a, drv) in refuse:
            log.write("%s %s: %s does not take it\n" % (why, a, drv))
            return
        dd = devdir(a)
        os.symlink(os.path.relpath(os.path.realpath(ddir), dd), os.path.join(dd, "driver"))
        log.write("%s %s: bound to %s\n" % (why, a, drv))

    def serve(kind, drv, data):
        for a in ADDR.findall(data):
            if not os.path.isdir(os.path.join(devs, a)):
                log.write("%s %s: no such device\n" % (kind, a))
                continue
            cur = bound(a)
            if kind == "unbind":
                if cur == drv:
                    os.unlink(os.path.join(devdir(a), "driver"))
                    log.write("unbind %s: from %s\n" % (a, drv))
                else:
                    log.write("unbind %s: not bound to %s\n" % (a, drv))
            elif cur:
                log.write("%s %s: already bound to %s\n" % (kind, a, cur))
            elif kind == "bind":
                bind(a, drv, "bind")
            else:
                with open(os.path.join(devdir(a), "driver_override")) as f:
                    ov = f.read().strip()
                want = ov if ov and ov != "(null)" else defaults.get(a, "")
                if want:
                    bind(a, want, "probe")
                else:
                    log.write("probe %s: no driver\n" % a)

    fds = {}  # path -> (fd, kind, driver)

    def fifo(path, kind, drv):
        if path in fds:
            return
        if not stat_is_fifo(path):
            if os.path.exists(path):
                os.unlink(path)
            os.mkfifo(path, 0o600)
        fds[path] = (os.open(path, os.O_RDWR | os.O_NONBLOCK), kind, drv)

    def scan():
        fifo(os.path.join(bus, "drivers_probe"), "probe", "")
        for d in sorted(os.listdir(drivers)):
            for kind in ("unbind", "bind"):
                p = os.path.join(drivers, d, kind)
                if os.path.lexists(p):
                    fifo(p, kind, d)

    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    scan()
    with open(os.path.join(root, "fakekernel.ready"), "w") as f:
        f.write("%d\n" % os.getpid())
    order = {"unbind": 0, "bind": 1, "probe": 2}
    while not stop:
        try:
            ready, _, _ = select.select([v[0] for v in fds.values()], [], [], 0.02)
        except InterruptedError:
            continue
        got = []
        for path, (fd, kind, drv) in fds.items():
            if fd in ready:
                got.append((order[kind], path, kind, drv, os.read(fd, 65536).decode("ascii", "replace")))
        for _, _, kind, drv, data in sorted(got):
            serve(kind, drv, data)
        scan()
    return 0


def stat_is_fifo(path):
    import stat
    try:
        return stat.S_ISFIFO(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv))
