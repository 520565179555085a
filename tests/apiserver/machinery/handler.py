# SPDX-License-Identifier: Apache-2.0
# handler: HTTP.  One thread a connection (TLS handshake included): the
# request is read, authenticated, matched against the fault rules, routed
# to the admin endpoints, the non-resource paths or a resource verb, and
# logged when its reply starts.  No lock is held while a reply is written.

import os
import select
import socket
import ssl
import sys
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import managedfields

from .api import Api, decode_json
from .auth import authenticate, forbidden, forbidden_path
from .common import (BOOKMARK_INTERVAL, HANDSHAKE_TIMEOUT, HANG_LIMIT, IDLE_TIMEOUT,
                     MAX_BODY, REASONS, SERVER_VERSION, STOP, ApiError, Encoded,
                     bad_request, conflict, json_bytes, method_not_allowed, path_not_found,
                     status_body, utc_now, warn)
from .faults import Faults
from .openapi import PROTOBUF_OPENAPI_V2, OpenAPI, accepts_json
from .patch import Kubectl
from .registry import api_groups, connection_of, discovery_document, parse_resource_path
from .reqlog import RequestLog, body_for_log
from .store import Store
from .watch import Watches, WatchStream

OPENAPI_V2_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "openapi-v2.json")
WRITE_PIECE = 64 << 10  # bytes: a list's pieces are written in about this size

NON_RESOURCE_PATHS = ("/", "/version", "/healthz", "/livez", "/readyz",
                      "/openapi/v2", "/openapi/v3")


class Handler(WatchStream, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every reply has Content-Length
    server_version = "kt-apiserver"
    sys_version = ""
    timeout = IDLE_TIMEOUT

    def do_GET(self):
        self.handle_api("GET")

    def do_POST(self):
        self.handle_api("POST")

    def do_PUT(self):
        self.handle_api("PUT")

    def do_PATCH(self):
        self.handle_api("PATCH")

    def do_DELETE(self):
        self.handle_api("DELETE")

    def log_message(self, fmt, *args):
        pass  # the request log does this job

    def log_error(self, fmt, *args):
        if "timed out" not in fmt % args:
            warn("%s: %s" % (self.address_string(), fmt % args))

    # -- one request ------------------------------------------------------

    def handle_api(self, method):
        state = self.server.state
        url = urlsplit(self.path)
        self.method, self.url_path, self.raw_query = method, url.path, url.query
        self.query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self.ident, self.body, self.logged, self.faulted, self.started = None, b"", False, False, False
        self.drop_after, self.trickle = None, None
        try:
            self.body = self.read_body()
            self.ident = authenticate(self.connection, self.headers.get("Authorization"),
                                      state.tokens)
            if not self.is_admin_path():
                rule = state.faults.take(method, self.url_path, self.raw_query)
                if rule is not None and self.inject(rule):
                    return
            self.route()
        except ApiError as err:
            self.send_api_error(err)
        except (ConnectionError, socket.timeout, ssl.SSLError):
            self.close_connection = True
        except Exception:
            warn("%s %s failed:\n%s" % (method, self.path, traceback.format_exc()))
            self.send_api_error(ApiError(500, "Internal error occurred: see the"
                                         " apiserver's stderr"))

    def is_admin_path(self):
        return self.url_path.startswith("/_")

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self.read_chunked_body()
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        if not length.isdigit():
            self.close_connection = True
            raise bad_request("invalid Content-Length")
        if int(length) > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "the request body is larger than %d bytes" % MAX_BODY)
        return self.rfile.read(int(length))

    def read_chunked_body(self):
        chunks, total = [], 0
        while True:
            size_line = self.rfile.readline(1024).split(b";")[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                self.close_connection = True
                raise bad_request("invalid chunked request body")
            total += size
            if total > MAX_BODY:
                self.close_connection = True
                raise ApiError(413, "the request body is larger than %d bytes" % MAX_BODY)
            if size == 0:
                while self.rfile.readline(1024).strip():
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)

    # -- replies ----------------------------------------------------------

    def record(self, status, extra=None):
        """One request log line, when the reply starts (or is abandoned);
        extra's fields added to it."""
        if self.logged or self.is_admin_path():
            return
        self.logged = True
        ident = self.ident
        entry = {
            "time": utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "method": self.method, "path": self.url_path, "query": self.raw_query,
            "contentType": self.headers.get("Content-Type"),
            "userAgent": self.headers.get("User-Agent"),
            "user": ident.user if ident else "none", "auth": ident.via if ident else "none",
            "body": body_for_log(self.body), "status": status, "fault": self.faulted,
            "conn": "%s:%d" % (self.client_address[0], self.client_address[1])}
        entry.update(extra or {})
        self.server.state.log.add(entry)

    def send_reply(self, code, body, content_type="application/json", headers=()):
        if isinstance(body, Encoded):
            pieces = body.pieces
        else:
            pieces = [body if isinstance(body, bytes) else json_bytes(body)]
        self.record(code)
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(sum(len(piece) for piece in pieces)))
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()
        batch, size = [], 0
        for piece in pieces:
            batch.append(piece)
            size += len(piece)
            if size >= WRITE_PIECE:
                self.wfile.write(b"".join(batch))
                batch, size = [], 0
        if batch:
            self.wfile.write(b"".join(batch))

    def send_api_error(self, err):
        if self.started:
            self.close_connection = True  # too late for a status line
            return
        self.send_reply(err.code, err.status(), headers=err.headers)

    def start_stream(self, code=200, content_type="application/json"):
        self.record(code)
        self.started = True
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, data):
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))

    def client_gone(self):
        """A watching or hung client has nothing to send: readable means EOF."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    # -- faults -----------------------------------------------------------

    def inject(self, rule):
        """Apply a fault rule; True if that answered (or ended) the request."""
        self.faulted = True
        if rule.latency and STOP.wait(rule.latency):
            return self.drop()
        if rule.hang:
            return self.hang()
        if rule.drop:
            return self.drop()
        if (rule.drop_after is not None or rule.trickle) and rule.status is None:
            # the watch goes on, then drops or trickles
            self.drop_after, self.trickle = rule.drop_after, rule.trickle
            return False
        if rule.status is None:
            self.faulted = False  # latency only: the request goes on normally
            return False
        self.send_fault_status(rule)
        return True

    def send_fault_status(self, rule):
        headers = []
        if rule.retry_after is not None:
            headers.append(("Retry-After", "%d" % rule.retry_after))
        body = rule.spec.get("body")
        if body is None:
            body = self.fault_status_body(rule)
        elif isinstance(body, str):
            self.send_reply(rule.status, body.encode(), "text/plain; charset=utf-8", headers)
            return
        self.send_reply(rule.status, body, headers=headers)

    def fault_status_body(self, rule):
        code = rule.status
        message = rule.spec.get("message")
        req = parse_resource_path(self.url_path)
        if message is None and code == 409 and req is not None and req.name:
            return conflict(req.res, req.name).status()
        if message is None:
            message = {429: "Too many requests, please try again later.",
                       503: "the server is currently unable to handle the request",
                       504: "the server was unable to return a response in the time allotted"
                       }.get(code, "injected fault (status %d)" % code)
        details = None
        if rule.retry_after is not None:
            details = {"retryAfterSeconds": int(rule.retry_after)}
        if code < 400:
            return {"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Success", "message": message, "code": code}
        return status_body(code, REASONS.get(code, ""), message, details)

    def drop(self):
        """Close the connection without a reply."""
        self.record(None)
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def hang(self):
        """Hold the request without a reply until the client gives up."""
        self.record(None)
        deadline = time.monotonic() + HANG_LIMIT
        while not STOP.is_set() and time.monotonic() < deadline:
            if self.client_gone():
                break
            STOP.wait(0.1)
        return self.drop()

    # -- routing ----------------------------------------------------------

    def route(self):
        path = self.url_path.rstrip("/") or "/"
        if self.is_admin_path():
            return self.admin(path)
        req = parse_resource_path(path)
        if req is not None:
            return self.resource(req)
        if self.method != "GET":
            if not self.ident.may(self.method.lower()):
                raise forbidden_path(self.ident, self.method, path)
            raise method_not_allowed()
        return self.non_resource(path)

    def non_resource(self, path):
        state = self.server.state
        if path in ("/healthz", "/livez", "/readyz"):
            return self.send_reply(200, b"ok", "text/plain; charset=utf-8")
        if path == "/version":
            return self.send_reply(200, SERVER_VERSION)
        if path == "/":
            return self.send_reply(200, {"paths": sorted(
                ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version",
                 "/healthz", "/livez", "/readyz"]
                + ["/apis/" + g["name"] for g in api_groups()]
                + ["/apis/" + g["preferredVersion"]["groupVersion"] for g in api_groups()])})
        if path == "/openapi/v2":
            accept = self.headers.get("Accept")
            if accepts_json(accept):
                return self.send_reply(200, state.openapi.v2)
            if PROTOBUF_OPENAPI_V2 in (accept or ""):
                # what the real server says: Go cannot parse the '@' of the other
                return self.send_reply(200, state.openapi.v2_protobuf(),
                                       "application/octet-stream")
            raise ApiError(406, "only application/json and %s are served here"
                           % PROTOBUF_OPENAPI_V2, details={})
        if path == "/openapi/v3":
            return self.send_reply(200, state.openapi.v3_index())
        if path.startswith("/openapi/v3/"):
            data = state.openapi.v3().get(path[len("/openapi/v3/"):])
            if data is None:
                raise path_not_found()
            return self.send_reply(200, data)
        document = discovery_document(path, self.server.server_address[1])
        if document is None:
            raise path_not_found()
        return self.send_reply(200, document)

    def connect_verb(self, connection):
        """A connection's verb, as the real server names a proxy's."""
        return {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}[self.method]

    def verb_for(self, req):
        watch = req.watch_path or self.query.get("watch") in ("true", "1")
        if self.method == "GET":
            return "watch" if watch else ("get" if req.name else "list")
        if self.method == "POST":
            return "create"
        if self.method == "DELETE":
            return "delete" if req.name else "deletecollection"
        return {"PUT": "update", "PATCH": "patch"}[self.method]

    def resource(self, req):
        api = self.server.state.api
        connection = connection_of(req)
        verb = self.connect_verb(connection) if connection else self.verb_for(req)
        if not self.ident.may(verb, req.res.group, req.res.plural, req.sub):
            raise forbidden(self.ident, verb, req)
        if connection is not None:
            if verb not in connection.verbs:
                raise method_not_allowed()
            return connection.serve(self, req, verb)
        if not req.res.stored:
            if verb not in req.res.verbs or (verb == "create" and req.name):
                raise method_not_allowed()
            return req.res.serve(self, req, verb)
        if (verb in ("get", "update", "patch", "delete")) != bool(req.name) \
                or (verb == "create" and (req.name or (req.res.namespaced
                                                       and req.namespace is None))) \
                or verb == "deletecollection" or (verb in ("list", "watch") and req.name):
            raise method_not_allowed()
        content_type = self.headers.get("Content-Type")
        req.manager = managedfields.manager_of(self.query, self.headers.get("User-Agent"))
        req.ident = self.ident
        if verb == "watch":
            return self.watch(req)
        if verb == "get":
            code, obj = api.get(req)
        elif verb == "list":
            code, obj = api.list(req, self.query)
        elif verb == "create":
            code, obj = api.create(req, self.body, content_type, self.query)
        elif verb == "update":
            code, obj = api.update(req, self.body, content_type, self.query)
        elif verb == "patch":
            code, obj = api.patch(req, self.body, content_type, self.query)
        else:
            code, obj = api.delete(req, self.body, self.query)
        self.send_reply(code, obj)

    # -- admin endpoints --------------------------------------------------

    def admin(self, path):
        state = self.server.state
        if not self.ident.is_admin:
            raise forbidden_path(self.ident, self.method, path)
        action = (self.method, path)
        if action == ("POST", "/_faults"):
            specs = decode_json(self.body)
            if isinstance(specs, list):
                return self.send_reply(201, [state.faults.add(spec) for spec in specs])
            return self.send_reply(201, state.faults.add(specs))
        if action == ("GET", "/_faults"):
            return self.send_reply(200, state.faults.list())
        if action == ("DELETE", "/_faults"):
            return self.send_reply(200, {"cleared": state.faults.clear()})
        if action == ("POST", "/_reset"):
            state.store.reset()
            return self.send_reply(200, {"reset": True})
        if action == ("POST", "/_compact"):
            return self.send_reply(200, {"compacted": str(state.store.compact())})
        if action == ("POST", "/_drop-watches"):
            return self.send_reply(200, {"dropped": state.watches.drop_all(state.store)})
        if action == ("GET", "/_requests"):
            return self.send_reply(200, state.log.all())
        if action == ("DELETE", "/_requests"):
            state.log.clear()
            return self.send_reply(200, {"cleared": True})
        if path in ("/_faults", "/_reset", "/_requests", "/_compact", "/_drop-watches"):
            raise method_not_allowed()
        raise path_not_found()


class TLSServer(ThreadingHTTPServer):
    """Threaded HTTPS server.  The TLS handshake happens in the connection's
    own thread, so a slow or silent client never holds up accept()."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, state, context):
        self.state = state
        self.context = context
        super().__init__(address, Handler)

    def finish_request(self, request, client_address):
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            conn = self.context.wrap_socket(request, server_side=True)
        except OSError:
            # The client gave up or refused our certificate (a test of TLS
            # verification does that on purpose): its problem, not ours.
            request.close()
            return
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, socket.timeout, ssl.SSLError)):
            return  # the client went away; nothing to report
        warn("connection from %s:%d failed:\n%s" % (client_address[0], client_address[1],
                                                    traceback.format_exc()))


class State:
    """Everything the handlers share."""

    def __init__(self, directory, tokens, bookmark_interval=BOOKMARK_INTERVAL):
        self.directory = directory
        self.store = Store()
        self.kubectl = Kubectl(directory)
        self.api = Api(self.store, self.kubectl)
        self.faults = Faults()
        self.log = RequestLog(os.path.join(directory, "requests.log"))
        self.openapi = OpenAPI(OPENAPI_V2_FILE)
        self.tokens = tokens
        self.watches = Watches()
        self.bookmark_interval = bookmark_interval


