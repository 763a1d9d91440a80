#!/usr/bin/env python3
"""Writes the inflate unit test's inputs: NAME.hex, the compressed bytes in
hex, 32 bytes a line. Run from this directory; needs gzip(1) and Python's zlib.
The plain texts are made by kconfig_text(n), which test_inflate.c makes too.
Corrupt and hand-made streams come from a small DEFLATE bit writer below."""
import gzip as pygzip
import os
import struct
import subprocess
import zlib


def kconfig_text(n):
    """A kernel-config-like text of n options (mirrored in test_inflate.c)."""
    out = ["#\n# Automatically generated file; DO NOT EDIT.\n#\n"]
    for i in range(n):
        k = i % 4
        if k == 0:
            out.append("CONFIG_OPTION_%d=y\n" % i)
        elif k == 1:
            out.append("CONFIG_OPTION_%d=m\n" % i)
        elif k == 2:
            out.append("CONFIG_OPTION_%d=\"value %d\"\n" % (i, i * 7))
        else:
            out.append("# CONFIG_OPTION_%d is not set\n" % i)
    return "".join(out).encode()


def write(name, data):
    with open(name + ".hex", "w") as f:
        h = data.hex()
        for i in range(0, len(h), 64):
            f.write(h[i:i + 64] + "\n")


def gz_header(flg=0, extra=b"", name=None, comment=None, hcrc=False):
    h = bytes([0x1F, 0x8B, 8, flg | (4 if extra else 0) | (8 if name is not None else 0)
               | (16 if comment is not None else 0) | (2 if hcrc else 0)]) + b"\0\0\0\0\0\3"
    if extra:
        h += struct.pack("<H", len(extra)) + extra
    if name is not None:
        h += name + b"\0"
    if comment is not None:
        h += comment + b"\0"
    if hcrc:
        h += struct.pack("<H", zlib.crc32(h) & 0xFFFF)
    return h


def gz_trailer(plain):
    return struct.pack("<II", zlib.crc32(plain), len(plain) & 0xFFFFFFFF)


def raw_deflate(plain, level=6, strategy=zlib.Z_DEFAULT_STRATEGY):
    c = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
    return c.compress(plain) + c.flush()


def gz(raw, plain, **kw):
    return gz_header(**kw) + raw + gz_trailer(plain)


class Bits:
    def __init__(self):
        self.b = []

    def put(self, v, n):  # a number, lowest bit first
        self.b += [(v >> i) & 1 for i in range(n)]

    def code(self, c, n):  # a Huffman code, first bit first
        self.b += [(c >> i) & 1 for i in reversed(range(n))]

    def done(self):
        out = bytearray()
        for i in range(0, len(self.b), 8):
            out.append(sum(bit << j for j, bit in enumerate(self.b[i:i + 8])))
        return bytes(out)


def fixed_lit(w, v):
    if v < 144:
        w.code(0x30 + v, 8)
    elif v < 256:
        w.code(0x190 + v - 144, 9)
    elif v < 280:
        w.code(v - 256, 7)
    else:
        w.code(0xC0 + v - 280, 8)


def canon(lengths):
    """Canonical codes {symbol: (code, length)} for lengths (RFC 1951 3.2.2)."""
    mx = max(lengths)
    count = [0] * (mx + 1)
    for n in lengths:
        if n:
            count[n] += 1
    nxt, code = [0] * (mx + 2), 0
    for n in range(1, mx + 1):
        code = (code + count[n - 1]) << 1 if n > 1 else 0
        nxt[n] = code
    out = {}
    for s, n in enumerate(lengths):
        if n:
            out[s] = (nxt[n], n)
            nxt[n] += 1
    return out


ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]


def dyn_header(w, nlit, ndist, cl_lengths, syms, last=1):
    """A dynamic block header: cl_lengths (19, by symbol) for the code length
    code, then syms, a list of (symbol, extra value, extra bits) in it."""
    w.put(last, 1)
    w.put(2, 2)
    w.put(nlit - 257, 5)
    w.put(ndist - 1, 5)
    w.put(15, 4)  # all 19 code length lengths
    for s in ORDER:
        w.put(cl_lengths[s], 3)
    codes = canon(cl_lengths)
    for s, v, n in syms:
        w.code(*codes[s])
        if n:
            w.put(v, n)


def main():
    text = kconfig_text(1500)
    with open("/tmp/kconfig-inflate", "wb") as f:
        f.write(text)
    for lvl in ("1", "9"):
        # GNU gzip keeps the name (FNAME) unless -n
        out = subprocess.run(["gzip", "-c", "-" + lvl, "/tmp/kconfig-inflate"],
                             check=True, stdout=subprocess.PIPE).stdout
        write("gzip-%s" % lvl, out)
    os.unlink("/tmp/kconfig-inflate")
    small = kconfig_text(40)
    write("stored", pygzip.compress(small, compresslevel=0, mtime=0))
    write("fixed", gz(raw_deflate(small, 9, zlib.Z_FIXED), small))
    write("huffman-only", gz(raw_deflate(small, 9, zlib.Z_HUFFMAN_ONLY), small))
    write("rle", gz(raw_deflate(small, 9, zlib.Z_RLE), small))
    write("filtered", gz(raw_deflate(small, 9, zlib.Z_FILTERED), small))
    write("zeros-1mib", pygzip.compress(bytes(1 << 20), 9, mtime=0))
    write("empty", pygzip.compress(b"", mtime=0))
    write("empty-fixed", gz(raw_deflate(b"", 9, zlib.Z_FIXED), b""))
    a, b = kconfig_text(8), kconfig_text(12)
    write("multi-member", pygzip.compress(a, mtime=0) + pygzip.compress(b, 9, mtime=0))
    write("header-fields", gz(raw_deflate(small), small, extra=b"AB\x04\x00wxyz",
                              name=b"config", comment=b"kernel configuration", hcrc=True))
    write("name-511", gz(raw_deflate(small), small, name=b"n" * 511))
    write("reserved-flags", gz(raw_deflate(small), small, flg=0xE0))
    # one distance (3): zlib sends a distance code of a lone length-1 code
    rep = b"abc" * 100
    write("one-distance", gz(raw_deflate(rep, 9), rep))

    # hand-made: literals only, with an empty distance code (HDIST 1, length 0)
    w = Bits()
    lit = [0] * 257
    lit[ord("a")] = lit[ord("b")] = lit[256] = 2
    lit[ord("c")] = 2
    cl = [0] * 19
    cl[0] = cl[2] = 1
    dyn_header(w, 257, 1, cl, [(v, 0, 0) for v in lit + [0]])
    codes = canon(lit)
    for ch in b"abcab":
        w.code(*codes[ch])
    w.code(*codes[256])
    write("empty-distance-code", gz(w.done(), b"abcab"))

    # a distance code of one code of length 1 (zlib's encoder never makes
    # one, its decoder takes it, and so does Go's)
    w = Bits()
    lit = [0] * 258
    lit[ord("a")] = lit[ord("b")] = lit[256] = lit[257] = 2
    cl = [0] * 19
    cl[0] = 1
    cl[1] = cl[2] = 2
    dyn_header(w, 258, 1, cl, [(v, 0, 0) for v in lit + [1]])
    codes = canon(lit)
    w.code(*codes[ord("a")])
    w.code(*codes[257])
    w.code(0, 1)
    w.code(*codes[ord("b")])
    w.code(*codes[256])
    write("lone-distance-code", gz(w.done(), b"aaaab"))

    good = pygzip.compress(small, mtime=0)
    bad = bytearray(good)
    bad[0] = 0x1E
    write("bad-magic", bytes(bad))
    bad = bytearray(good)
    bad[2] = 7
    write("bad-method", bytes(bad))
    bad = bytearray(good)
    bad[-8] ^= 1
    write("bad-crc", bytes(bad))
    bad = bytearray(good)
    bad[-4] ^= 1
    write("bad-isize", bytes(bad))
    write("truncated-data", good[:len(good) // 2])
    write("truncated-trailer", good[:-3])
    write("truncated-header", good[:7])
    write("trailing-garbage", good + b"\0\0\0")
    write("trailing-short", good + good[:5])
    hdr = bytearray(gz(raw_deflate(small), small, name=b"config", hcrc=True))
    hdr[18] ^= 0xFF  # the header CRC (10 + 7 bytes of name before it)
    write("bad-header-crc", bytes(hdr))
    write("name-too-long", gz(raw_deflate(small), small, name=b"n" * 512))
    write("name-unterminated", gz_header()[:3] + b"\x08" + b"\0" * 6 + b"config")
    bad = bytearray(pygzip.compress(small, compresslevel=0, mtime=0))
    bad[13] ^= 0xFF  # NLEN of the stored block
    write("stored-nlen", bytes(bad))

    def block(build, plain=b""):
        w = Bits()
        build(w)
        return gz(w.done(), plain)

    write("block-type-3", block(lambda w: (w.put(1, 1), w.put(3, 2), w.put(0, 5))))

    def far(w):  # 'a', then length 3 at distance 2
        w.put(1, 1)
        w.put(1, 2)
        fixed_lit(w, ord("a"))
        fixed_lit(w, 257)
        w.code(1, 5)
        fixed_lit(w, 256)
    write("distance-too-far", block(far, b"aaaa"))

    def far_member(w):  # a second member reaching into the first one's output
        w.put(1, 1)
        w.put(1, 2)
        fixed_lit(w, 257)
        w.code(2, 5)
        fixed_lit(w, 256)
    write("distance-into-previous-member", pygzip.compress(b"abc", mtime=0) + block(far_member, b"abc"))

    def dist30(w):
        w.put(1, 1)
        w.put(1, 2)
        fixed_lit(w, ord("a"))
        fixed_lit(w, 257)
        w.code(30, 5)
        fixed_lit(w, 256)
    write("distance-code-30", block(dist30))

    def lit286(w):
        w.put(1, 1)
        w.put(1, 2)
        fixed_lit(w, 286)
        fixed_lit(w, 256)
    write("literal-286", block(lit286))

    def too_many(w):  # HLIT 30: 287 literal/length codes
        w.put(1, 1)
        w.put(2, 2)
        w.put(30, 5)
        w.put(0, 5)
        w.put(0, 4)
        w.put(0, 12)
    write("too-many-lengths", block(too_many))

    def cl_over(w):  # code length code: 19 codes of length 1
        dyn_header(w, 257, 1, [1] * 19, [])
    write("oversubscribed-code-length-code", block(cl_over))

    def cl_inc(w):  # code length code: two codes of length 2
        cl = [0] * 19
        cl[1] = cl[2] = 2
        dyn_header(w, 257, 1, cl, [])
    write("incomplete-code-length-code", block(cl_inc))

    def lit_over(w):  # 258 lengths of 1
        cl = [0] * 19
        cl[1] = cl[2] = 1
        dyn_header(w, 257, 1, cl, [(1, 0, 0)] * 258)
    write("oversubscribed-literal-code", block(lit_over))

    def lit_inc(w):  # two codes of length 2: 'A' and end-of-block
        cl = [0] * 19
        cl[0] = cl[2] = 1
        lens = [0] * 258
        lens[65] = lens[256] = 2
        dyn_header(w, 257, 1, cl, [(v, 0, 0) for v in lens])
    write("incomplete-literal-code", block(lit_inc))

    def dist_inc(w):  # distance codes: three of length 2
        cl = [0] * 19
        cl[0] = cl[1] = cl[2] = 2
        cl[3] = 2
        lens = [0] * 257 + [2, 2, 2]
        lens[256] = 1
        lens[65] = 1
        dyn_header(w, 257, 3, cl, [(v, 0, 0) for v in lens])
    write("incomplete-distance-code", block(dist_inc))

    def rep_first(w):  # code length 16 (repeat) as the first one
        cl = [0] * 19
        cl[16] = cl[1] = 1
        dyn_header(w, 257, 1, cl, [(16, 0, 2)])
    write("repeat-first", block(rep_first))

    def rep_past(w):  # code length 18 x 138 twice, then x 11 past 258
        cl = [0] * 19
        cl[18] = cl[1] = 1
        dyn_header(w, 257, 1, cl, [(18, 127, 7), (18, 127, 7), (18, 0, 7)])
    write("repeat-past-end", block(rep_past))

    def no_eob(w):  # 'A' and 'B' only, no end-of-block code
        cl = [0] * 19
        cl[0] = cl[1] = 1
        lens = [0] * 258
        lens[65] = lens[66] = 1
        dyn_header(w, 257, 1, cl, [(v, 0, 0) for v in lens])
    write("no-end-of-block", block(no_eob))

    def empty_dist_used(w):  # literals-only code, then a length
        cl = [0] * 19
        cl[0] = cl[2] = 1
        lens = [0] * 258
        lens[65] = lens[256] = lens[257] = 2
        lens[66] = 2
        dyn_header(w, 257 + 1, 1, cl, [(v, 0, 0) for v in lens + [0]][:259])
        c = canon(lens)
        w.code(*c[65])
        w.code(*c[257])
        w.put(0, 15)
    write("empty-distance-code-used", block(empty_dist_used))
    write("not-gzip", b"CONFIG_X=y\n")


if __name__ == "__main__":
    main()
