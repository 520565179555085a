#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# hostile-server: an HTTP server on 127.0.0.1 that misbehaves in one chosen way,
# for tests/hostile.bats.  Usage: hostile-server.py MODE PORTFILE [LOG]
# It binds a free port, writes it to PORTFILE and serves until killed.
# Modes:
#   401          every request is answered 401 Unauthorized
#   escapes      every request gets a 404 Status whose message holds terminal escapes
#   retry-after  every request gets 503 with Retry-After: 86399
#   capture      the request line and headers are appended to LOG; 200 {}
import http.server
import json
import os
import sys

MODE, PORTFILE = sys.argv[1], sys.argv[2]
LOG = sys.argv[3] if len(sys.argv) > 3 else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, code, body, extra=()):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if MODE == "401":
            self.answer(401, {"kind": "Status", "code": 401, "message": "Unauthorized"})
        elif MODE == "escapes":
            msg = "\x1b]0;pwned\x07\x1b[2J\x1b[31mall good\x1b[0m\x9b1m\r\nnext\tline\x7f"
            self.answer(404, {"kind": "Status", "code": 404, "message": msg})
        elif MODE == "retry-after":
            self.answer(503, {"kind": "Status", "code": 503, "message": "busy"},
                        [("Retry-After", "86399")])
        else:
            with open(LOG, "a") as f:
                f.write(self.requestline + "\n")
                for name, value in self.headers.items():
                    f.write("%s: %s\n" % (name, value))
            self.answer(200, {})

    do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = handle_any

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that hangs up early is what these tests are about


server = Server(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
