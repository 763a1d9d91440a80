#!/usr/bin/env python3
"""dtdir-seed.py DIR OUT - encodes a /proc/device-tree style directory (as
scripts/dtb2dir writes one) into fuzz_dtdir's record format, for the seed
corpus tests/fuzz/corpus/dtdir:
  op:1 pathlen:1 path  (op 0: directory)
  op:1 pathlen:1 path datalen:2 (little-endian) data  (op 1: file, 2: symlink)
Entries past fuzz_dtdir's 64 records, paths over 255 bytes and files over
65535 bytes are left out (parents before children, so what is kept is a
tree). Python 3 standard library only."""
import os
import struct
import sys

MAX_RECORDS = 64


def main():
    top, out = sys.argv[1], sys.argv[2]
    recs = []
    for d, dirs, files in os.walk(top):
        dirs.sort()
        rel = os.path.relpath(d, top)
        rel = "" if rel == "." else rel
        if rel:
            recs.append(bytes([0, len(rel)]) + rel.encode())
        for f in sorted(files):
            p = os.path.join(rel, f) if rel else f
            full = os.path.join(d, f)
            if os.path.islink(full):
                op, data = 2, os.readlink(full).encode()
            else:
                op, data = 1, open(full, "rb").read()
            if len(p) > 255 or len(data) > 65535:
                continue
            recs.append(bytes([op, len(p)]) + p.encode() + struct.pack("<H", len(data)) + data)
    with open(out, "wb") as f:
        f.write(b"".join(recs[:MAX_RECORDS]))


if __name__ == "__main__":
    main()
