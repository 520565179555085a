#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# httpserver: the HTTP(S) endpoints probe-run's tests probe, on 127.0.0.1, port 0
"""Usage: httpserver.py PORTFILE [CERTFILE KEYFILE]

Binds 127.0.0.1 on a free port, writes the port to PORTFILE, serves until
killed.  With a certificate it speaks HTTPS.  One asyncio thread, so that a
thousand probes a second are answered on time.

  /status/N            answers N with body "status N"
  /success, /fail      200 "ok" / 500
  /slow?ms=N           waits N ms, then 200
  /slowbody?ms=N       sends headers and part of the body, waits, sends the rest
  /large?bytes=N       200 with N bytes of a repeating pattern
  /headers             200 with the request's header lines, in order
  /redirect?to=U&code=C  answers C (default 302) with Location: U
  /redirects?n=N       N redirects to /redirects?n=N-1, then 200 at n=0
  /loop                302 to /loop
  /noloc               302 without a Location
  /file?path=P         200 if file P holds "ok", else 503 (a switchable health)
  /hang                never answers
  /echo-host           200 with the Host header as body

Any path takes log=FILE too: the request's arrival, as the server's clock in
seconds and the path, is appended to FILE as one line before it is answered
(what a test counts and times probes by).
"""
import asyncio
import os
import ssl
import sys
import time
from urllib.parse import parse_qs, urlsplit

PATTERN = b"0123456789abcdef"
REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found",
           500: "Internal Server Error", 503: "Service Unavailable"}


def response(code, body=b"", headers=()):
    head = ["HTTP/1.1 %d %s" % (code, REASONS.get(code, "Status"))]
    head += ["%s: %s" % h for h in headers]
    head += ["Content-Type: text/plain", "Content-Length: %d" % len(body),
             "Connection: close", "", ""]
    return "\r\n".join(head).encode("latin-1") + body


def file_healthy(path):
    try:
        with open(path, "rb") as f:
            return f.read().strip() == b"ok"
    except OSError:
        return False


async def route(path, q, header_lines, writer):
    """Writes the answer; returns when done."""
    if path.startswith("/status/"):
        code = int(path[len("/status/"):])
        writer.write(response(code, b"status %d" % code))
    elif path == "/success":
        writer.write(response(200, b"ok"))
    elif path == "/fail":
        writer.write(response(500, b"fail"))
    elif path == "/slow":
        await asyncio.sleep(int(q.get("ms", "2000")) / 1000)
        writer.write(response(200, b"slow"))
    elif path == "/slowbody":
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n12345")
        await writer.drain()
        await asyncio.sleep(int(q.get("ms", "2000")) / 1000)
        writer.write(b"67890")
    elif path == "/large":
        n = int(q.get("bytes", "1048576"))
        writer.write(response(200, (PATTERN * (n // len(PATTERN) + 1))[:n]))
    elif path == "/headers":
        writer.write(response(200, "".join(l + "\n" for l in header_lines).encode("latin-1")))
    elif path == "/redirect":
        writer.write(response(int(q.get("code", "302")), b"moved",
                              [("Location", q.get("to", "/"))]))
    elif path == "/redirects":
        n = int(q.get("n", "0"))
        if n <= 0:
            writer.write(response(200, b"arrived"))
        else:
            writer.write(response(302, b"", [("Location", "/redirects?n=%d" % (n - 1))]))
    elif path == "/loop":
        writer.write(response(302, b"", [("Location", "/loop")]))
    elif path == "/noloc":
        writer.write(response(302, b"no location"))
    elif path == "/file":
        ok = file_healthy(q.get("path", ""))
        writer.write(response(200 if ok else 503, b"healthy" if ok else b"unhealthy"))
    elif path == "/hang":
        await asyncio.sleep(3600)
    elif path == "/echo-host":
        host = ""
        for line in header_lines:
            name, _, value = line.partition(":")
            if name.lower() == "host":
                host = value.strip()
        writer.write(response(200, host.encode("latin-1")))
    else:
        writer.write(response(404, b"not found"))


async def handle(reader, writer):
    try:
        request = await reader.readline()
        header_lines = []
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            header_lines.append(line.decode("latin-1").rstrip("\r\n"))
        parts = request.decode("latin-1").split()
        if len(parts) < 2:
            return
        url = urlsplit(parts[1])
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if "log" in q:
            with open(q["log"], "a") as f:
                f.write("%.6f %s\n" % (time.time(), url.path))
        await route(url.path, q, header_lines, writer)
        await writer.drain()
    except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main():
    ctx = None
    if len(sys.argv) > 3:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
