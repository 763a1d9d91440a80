#!/usr/bin/env python3
"""fuzz-seeds.py DIR: writes the hand-made seed inputs of fuzz_http into DIR,
named by SHA-1 like libFuzzer's own. Each input is one control byte (bit 0:
the request was HEAD; bits 1-2: body cap default/16/300/none; the rest seeds
the slice lengths) followed by a response as an API server would send it."""
import hashlib
import os
import sys

def chunked(parts):
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"

ev = [
    b'{"type":"ADDED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","resourceVersion":"101","labels":{"feature.node.kubernetes.io/cpu-cpuid.AVX2":"true"}}}}\n',
    b'{"type":"MODIFIED","object":{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","resourceVersion":"102"}}}\n',
    b'{"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"105","annotations":{"k8s.io/initial-events-end":"true"}}}}\n',
    b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (105)","reason":"Expired","code":410}}\n',
]
status429 = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}\n'
status410 = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The provided continue parameter is too old","reason":"Expired","code":410}\n'
node = b'{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","uid":"6f0c","resourceVersion":"101"},"spec":{},"status":{}}'
go_hdr = b"Audit-Id: 3f6c0e5e-1b5a-4c3e-9d59-8a0b2f1b6a51\r\nCache-Control: no-cache, private\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n"

def resp(status, headers, body=b""):
    return b"HTTP/1.1 " + status + b"\r\n" + go_hdr + headers + b"\r\n" + body

seeds = [
    (0x00, resp(b"200 OK", b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(node), node)),
    (0x06, resp(b"200 OK", b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
                chunked([ev[0][:40], ev[0][40:] + ev[1], ev[2]]))),
    (0x21, resp(b"200 OK", b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
                chunked([ev[0] + ev[1] + ev[2] + ev[3]]))),
    (0x00, resp(b"429 Too Many Requests", b"Content-Type: application/json\r\nRetry-After: 1\r\nContent-Length: %d\r\n" % len(status429), status429)),
    (0x00, resp(b"410 Gone", b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(status410), status410)),
    (0x40, b"HTTP/1.1 100 Continue\r\n\r\n" + resp(b"201 Created", b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(node), node)),
    (0x00, resp(b"204 No Content", b"")),
    (0x00, resp(b"304 Not Modified", b"ETag: \"abc\"\r\n")),
    (0x00, b"HTTP/1.0 200 ok\r\nContent-type: text/html\r\n\r\n<HTML><BODY BGCOLOR=\"#ffffff\">\n<pre>\n\ns_server -www\n</pre></BODY></HTML>\r\n\r\n"),
    (0x01, resp(b"200 OK", b"Content-Type: application/json\r\nContent-Length: 1234\r\n")),
    (0x86, resp(b"200 OK", b"Transfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n",
                b"5;name=value\r\nhello\r\n7 ; a ; b=\"c\"\r\n, world\r\n0\r\nX-Checksum: 1234\r\n\r\n")),
    (0x00, resp(b"503 Service Unavailable", b"Retry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n", b"upstream unavailable\n")),
    (0x00, resp(b"401 Unauthorized", b"Content-Type: application/json\r\nWWW-Authenticate: Bearer realm=\"kubernetes\"\r\nContent-Length: 2\r\n", b"{}")),
    (0x02, resp(b"200 OK", b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", chunked([node[:30], node[30:]]))),
    (0x00, b"GET /healthz HTTP/1.1\r\nHost: 10.0.0.1:8080\r\nUser-Agent: kube-probe/1.29\r\nAccept: */*\r\nConnection: close\r\n\r\n"),
    (0x00, b"HEAD /metrics?x=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
]

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for ctl, body in seeds:
    data = bytes([ctl]) + body
    with open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
print(len(seeds), "seeds in", out)
