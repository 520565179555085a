#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A stand-in for kube-apiserver on 127.0.0.1, for the test suite and the demo.
"""Local Kubernetes API server for tests.

Serving:

    apiserver.py --dir DIR [--port N] [--pki CACHE] [--bookmark-interval SECONDS]

makes a CA and certificates in DIR with the openssl CLI, listens on
https://127.0.0.1:PORT (port 0, the default, picks a free one) and writes:

    DIR/pid              our process id (written first)
    DIR/ca.crt ca.key    the CA; server.crt/key for 127.0.0.1 and localhost
    DIR/admin.crt/.key   client certificate CN=admin, O=system:masters
    DIR/viewer.crt/.key  client certificate CN=viewer (read-only)
    DIR/port DIR/url     the port, and https://127.0.0.1:PORT
    DIR/token            admin bearer token (no trailing newline)
    DIR/viewer-token     read-only bearer token (no trailing newline)
    DIR/kubeconfig       context "local", admin token
    DIR/kubeconfig-cert  context "local", admin client certificate
    DIR/kubeconfig-viewer context "local", read-only token
    DIR/requests.log     one JSON line per request (not the /_ admin ones)
    DIR/ready            created last, once the server is listening

With --pki CACHE the CA and certificates are copied from CACHE (made there
first when CACHE does not exist), so that many servers start fast.

SIGTERM or SIGINT stops it cleanly. Problems go to stderr, nothing else does.

It serves nodes (and nodes/status), pods (and pods/status), namespaces and
coordination.k8s.io/v1 leases from an in-memory store with resourceVersions,
watches, the three patch types, discovery and /openapi/v2 (the file
openapi-v2.json next to this script, served as-is, or in protobuf to the
kubectl before 1.24 that asks only for that, and /openapi/v3 derived from
it).  Strategic merge patches are applied by `kubectl patch --local`,
the reference implementation, so that tests which go through this server
check the project against upstream.  KT_KUBECTL overrides the kubectl found
on PATH.

Admin endpoints, for the admin identity only and never logged:

    POST   /_faults    add a fault rule (JSON object, or an array of them)
    GET    /_faults    list active rules
    DELETE /_faults    remove all rules
    POST   /_reset     empty the store back to the initial namespaces
    POST   /_compact   forget the watch history so far (etcd's compaction):
                       a watch from an older resourceVersion gets 410 Gone
    POST   /_drop-watches
                       close every open watch connection now, without the
                       end of its chunked body (as a dropped connection
                       looks); answers {"dropped": N} once they are closed
    GET    /_requests  the request log as a JSON array
    DELETE /_requests  empty the request log

A fault rule is a JSON object; every key is optional but one effect is needed:

    {"method": "PUT",           only this method
     "path": "/leases/vk-1$",   a regex searched for in the path (re.search)
     "query": "watch=true",     a regex searched for in the query string
     "status": 503,             answer this with a Status body (or "body")
     "retryAfter": 1,           ... and a Retry-After header
     "message": "...",          ... the Status message
     "body": {...},             ... this body instead (a string is sent as text)
     "latencyMs": 200,          wait this long first, then go on as told
     "drop": true,              close the connection without a reply
     "hang": true,              hold the request, unanswered, until the client
                                goes away (60 s at most), then close
     "dropAfterEvents": 2,      a watch: serve it, but close the connection
                                (as "drop") once it has sent that many
                                events (0: right after the reply's headers)
     "trickleMs": 200,          a watch: after the reply's headers send one
                                byte of an event every that many ms, never
                                a whole one, until the client goes away
     "count": 1}                how many matches it applies to; -1 = forever

Rules apply to every path except the admin ones, after authentication, in
the order added: the first that matches counts the request.

Client commands, which call those endpoints with DIR's url, token and CA:

    apiserver.py fault --dir DIR '<json rule>'
    apiserver.py clear-faults --dir DIR
    apiserver.py reset --dir DIR
    apiserver.py requests --dir DIR
    apiserver.py compact --dir DIR
    apiserver.py drop-watches --dir DIR

Watches follow the real server: a resourceVersion older than the history
kept (HISTORY_LIMIT events, or older than the last /_compact) gets an
ERROR event with a 410 Expired Status; timeoutSeconds ends the watch
cleanly; with allowWatchBookmarks=true a BOOKMARK carrying the latest
resourceVersion goes out every --bookmark-interval seconds (default 60) and
once 2 s before the timeout, as the watch cache sends them.

Behaviour worth knowing when writing tests (all as the real server does):

  - resourceVersions are one global counter; the three initial namespaces
    take 1 to 3, so the first object a test creates gets "4".
  - A write that changes nothing keeps the resourceVersion and makes no
    watch event.
  - A write to the main resource of nodes and pods keeps the old status; a
    write to /status keeps the old spec but takes metadata changes (labels,
    annotations), which virtual-kubelet relies on.
  - Objects carry what Go's encoding always writes: spec and status as {},
    a node's zero nodeInfo and daemonEndpoints.  Pods get the usual defaults
    (restartPolicy, terminationGracePeriodSeconds 30, imagePullPolicy, probe
    periods...), status.phase Pending and qosClass when those are absent.
  - DELETE of a pod bound to a node with a grace period over 0 only sets
    deletionTimestamp and deletionGracePeriodSeconds; a later DELETE with
    gracePeriodSeconds 0 removes it.  Objects with finalizers wait for them.
  - List items carry no kind or apiVersion; watch events' objects do.
  - metadata.managedFields is kept for updates (tests/apiserver/managedfields.py):
    the manager is ?fieldManager= or the User-Agent's program name.
  - Lists are paged with limit and continue.  A continue token is good
    only while nothing was written since the first page (the real server
    keeps its snapshot until etcd compacts it): after a write the next page
    is 410 Expired, as an expired token is.
  - Not served: Table output, server-side apply, field validation
    (fieldValidation is accepted and ignored), deletecollection, protobuf.

Python 3 standard library only, plus the openssl and kubectl programs.
"""

import argparse
import base64
import bisect
import copy
import hashlib
import hmac
import json
import os
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
import tempfile
import threading
import time
import traceback
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import managedfields  # noqa: E402  (beside this file)
OPENAPI_V2_FILE = os.path.join(HERE, "openapi-v2.json")

# Set by SIGTERM/SIGINT; every loop that waits (watches, hangs, latency)
# watches it so that shutdown is prompt.
STOP = threading.Event()

HANDSHAKE_TIMEOUT = 10  # seconds a client gets to finish the TLS handshake
IDLE_TIMEOUT = 300  # seconds an idle keep-alive connection is kept
HANG_LIMIT = 60  # seconds a "hang" fault holds a request at most
WATCH_DEFAULT_TIMEOUT = 1800  # the real server picks 30 to 60 minutes
MAX_BODY = 64 << 20
HISTORY_LIMIT = 20000  # watch events kept; older resourceVersions are "too old"
BOOKMARK_INTERVAL = 60.0  # seconds between bookmarks (the watch cache's minute)
UPDATE_RETRIES = 20  # internal retries of a write that raced another one

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kt",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def warn(message):
    """Report a problem on stderr, the only thing we ever print there."""
    sys.stderr.write("apiserver: %s\n" % message)
    sys.stderr.flush()


# ---------------------------------------------------------------------------
# Small helpers: time, JSON, object fields.


def utc_now():
    return datetime.now(timezone.utc)


def rfc3339(moment):
    """metav1.Time: RFC 3339 in UTC, whole seconds."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text):
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)


def json_bytes(value):
    # The real server ends every JSON document with a newline.
    return (json.dumps(value, separators=(",", ":")) + "\n").encode()


def same_json(a, b):
    """Equal as JSON documents: unlike ==, true is not 1 and 1 is not 1.0."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def meta_of(obj):
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def set_or_drop(target, key, value):
    """Copy a field from another object: absent there means absent here."""
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value


# Key order the real server writes, so objects read like kubectl's output.
TOP_ORDER = ("kind", "apiVersion", "metadata", "spec", "status")
META_ORDER = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
    "generation", "creationTimestamp", "deletionTimestamp",
    "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
    "finalizers", "managedFields",
)


def reorder(mapping, order):
    head = [(k, mapping[k]) for k in order if k in mapping]
    tail = [(k, v) for k, v in mapping.items() if k not in order]
    return dict(head + tail)


def canonical(obj):
    obj = reorder(obj, TOP_ORDER)
    if isinstance(obj.get("metadata"), dict):
        obj["metadata"] = reorder(obj["metadata"], META_ORDER)
    return obj


# ---------------------------------------------------------------------------
# The resources served.


class Resource:
    """One REST resource: where it lives and what it is called."""

    def __init__(self, group, plural, singular, kind, namespaced,
                 subresources=(), short_names=(), categories=()):
        self.group = group
        self.version = "v1"
        self.plural = plural
        self.singular = singular
        self.kind = kind
        self.namespaced = namespaced
        self.subresources = tuple(subresources)
        self.short_names = list(short_names)
        self.categories = list(categories)

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def group_resource(self):
        """The name used in messages: nodes, leases.coordination.k8s.io."""
        return "%s.%s" % (self.plural, self.group) if self.group else self.plural

    @property
    def has_status(self):
        """Kinds whose status is written only through /status."""
        return "status" in self.subresources or self.plural == "namespaces"

    def details(self, name):
        details = {}
        if name:
            details["name"] = name
        if self.group:
            details["group"] = self.group
        details["kind"] = self.plural
        return details


RESOURCES = [
    Resource("", "namespaces", "namespace", "Namespace", False, short_names=["ns"]),
    Resource("", "nodes", "node", "Node", False, ["status"], ["no"]),
    Resource("", "pods", "pod", "Pod", True, ["status"], ["po"], ["all"]),
    Resource("coordination.k8s.io", "leases", "lease", "Lease", True),
]
RESOURCE_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
NAMESPACES = RESOURCE_BY_PATH[("", "v1", "namespaces")]
INITIAL_NAMESPACES = ("default", "kube-system", "kube-node-lease")
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")
READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "patch", "update")


# ---------------------------------------------------------------------------
# Errors, answered as metav1.Status the way the real server words them.

REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict",
    410: "Expired", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType",
    422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}


class ApiError(Exception):
    """An answer other than success; carries its Status body."""

    def __init__(self, code, message, reason=None, details=None, headers=()):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason if reason is not None else REASONS.get(code, "")
        self.details = details
        self.headers = list(headers)

    def status(self):
        return status_body(self.code, self.reason, self.message, self.details)


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message}
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def unauthorized():
    return ApiError(401, "Unauthorized")


def bad_request(message):
    return ApiError(400, message)


def not_found(res, name):
    return ApiError(404, '%s "%s" not found' % (res.group_resource, name),
                    details=res.details(name))


def namespace_not_found(namespace):
    return not_found(NAMESPACES, namespace)


def already_exists(res, name):
    return ApiError(409, '%s "%s" already exists' % (res.group_resource, name),
                    "AlreadyExists", res.details(name))


def conflict(res, name, why=None):
    why = why or ("the object has been modified; please apply your changes"
                  " to the latest version and try again")
    return ApiError(409, 'Operation cannot be fulfilled on %s "%s": %s'
                    % (res.group_resource, name, why), details=res.details(name))


def invalid(res, name, causes):
    """422 with field causes, each (field, message)."""
    text = ", ".join("%s: %s" % c for c in causes)
    if len(causes) > 1:
        text = "[%s]" % text
    details = {"name": name}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.kind
    details["causes"] = [{"reason": "FieldValueInvalid", "message": m, "field": f}
                         for f, m in causes]
    return ApiError(422, '%s "%s" is invalid: %s' % (res.kind, name, text),
                    details=details)


def method_not_allowed():
    return ApiError(405, "the server does not allow this method on the requested resource",
                    details={})


def path_not_found():
    return ApiError(404, "the server could not find the requested resource", details={})


def unsupported_media(accepted):
    return ApiError(415, "the body of the request was in an unknown format - "
                    "accepted media types include: " + ", ".join(accepted))


# ---------------------------------------------------------------------------
# Selectors.

# Fields each resource can be selected on, with the value a missing field has.
FIELD_SELECTABLE = {
    "pods": {"spec.nodeName": "", "spec.restartPolicy": "", "spec.schedulerName": "",
             "spec.serviceAccountName": "", "spec.hostNetwork": "false",
             "status.phase": "", "status.podIP": "", "status.nominatedNodeName": ""},
    "nodes": {"spec.unschedulable": "false"},
    "namespaces": {"status.phase": ""},
    "leases": {},
}
COMMON_FIELDS = {"metadata.name": "", "metadata.namespace": ""}


def field_value(obj, dotted, missing):
    value = obj
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return missing
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(res, text):
    """Return a predicate for a fieldSelector such as spec.nodeName=n1,status.phase!=Failed."""
    fields = dict(COMMON_FIELDS, **FIELD_SELECTABLE[res.plural])
    terms = []
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        match = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", term)
        if not match:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (text, term))
        field, op, value = match.groups()
        if field not in fields:
            raise bad_request('field label not supported: %s' % field)
        terms.append((field, op == "!=", value.strip()))

    def matches(obj):
        for field, negate, value in terms:
            if (field_value(obj, field, fields[field]) == value) == negate:
                return False
        return True
    return matches


LABEL_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
LABEL_VALUE = r"[-A-Za-z0-9_.]*"


def split_label_terms(text):
    """Split on commas outside parentheses: a in (x,y),b=c -> two terms."""
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms if t.strip()]


def parse_label_term(term):
    """One requirement as a function of the labels map."""
    match = re.fullmatch(r"!\s*(%s)" % LABEL_KEY, term)
    if match:
        key = match.group(1)
        return lambda labels: key not in labels
    match = re.fullmatch(r"(%s)\s+(in|notin)\s*\(([^)]*)\)" % LABEL_KEY, term)
    if match:
        key, op, values = match.groups()
        allowed = {v.strip() for v in values.split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed
    match = re.fullmatch(r"(%s)\s*(==|=|!=)\s*(%s)" % (LABEL_KEY, LABEL_VALUE), term)
    if match:
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    match = re.fullmatch(LABEL_KEY, term)
    if match:
        return lambda labels: term in labels
    raise bad_request("unable to parse requirement: %s" % term)


def parse_label_selector(text):
    checks = [parse_label_term(t) for t in split_label_terms(text or "")]

    def matches(obj):
        labels = meta_of(obj).get("labels") or {}
        return all(check(labels) for check in checks)
    return matches


# ---------------------------------------------------------------------------
# Patches.  JSON merge patch (RFC 7386) and JSON patch (RFC 6902) are simple
# enough to do here; strategic merge patch is kubectl's job.

PATCH_STRATEGIC = "application/strategic-merge-patch+json"
PATCH_MERGE = "application/merge-patch+json"
PATCH_JSON = "application/json-patch+json"
PATCH_TYPES = (PATCH_JSON, PATCH_MERGE, PATCH_STRATEGIC)


def merge_patch(target, patch):
    """RFC 7386: objects merge key by key, null deletes, the rest replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class PatchFailed(Exception):
    """A JSON patch operation that does not apply (422)."""


def pointer_tokens(pointer):
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchFailed('invalid JSON pointer "%s"' % pointer)
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def list_index(container, token, pointer, allow_end):
    if allow_end and token == "-":
        return len(container)
    if not re.fullmatch(r"0|[1-9][0-9]*", token):
        raise PatchFailed('invalid array index "%s" in "%s"' % (token, pointer))
    index = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if index > limit:
        raise PatchFailed('array index %d out of bounds in "%s"' % (index, pointer))
    return index


def walk_to_parent(doc, pointer):
    """The container holding the pointer's last token, and that token."""
    tokens = pointer_tokens(pointer)
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[list_index(node, token, pointer, False)]
        else:
            raise PatchFailed('doc is missing path: "%s"' % pointer)
    return node, tokens[-1]


def pointer_get(doc, pointer):
    if pointer == "":
        return doc
    parent, token = walk_to_parent(doc, pointer)
    if isinstance(parent, dict) and token in parent:
        return parent[token]
    if isinstance(parent, list):
        return parent[list_index(parent, token, pointer, False)]
    raise PatchFailed('doc is missing key: "%s"' % pointer)


def pointer_add(doc, pointer, value):
    if pointer == "":
        return value
    parent, token = walk_to_parent(doc, pointer)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(list_index(parent, token, pointer, True), value)
    else:
        raise PatchFailed('doc is missing path: "%s"' % pointer)
    return doc


def pointer_replace(doc, pointer, value):
    """Replace in place, so a replaced key keeps its place in the object."""
    if pointer == "":
        return value
    parent, token = walk_to_parent(doc, pointer)
    if isinstance(parent, dict) and token in parent:
        parent[token] = value
    elif isinstance(parent, list):
        parent[list_index(parent, token, pointer, False)] = value
    else:
        raise PatchFailed('doc is missing key: "%s"' % pointer)
    return doc


def pointer_remove(doc, pointer):
    if pointer == "":
        raise PatchFailed("cannot remove the whole document")
    parent, token = walk_to_parent(doc, pointer)
    if isinstance(parent, dict) and token in parent:
        return parent.pop(token)
    if isinstance(parent, list):
        return parent.pop(list_index(parent, token, pointer, False))
    raise PatchFailed('doc is missing key: "%s"' % pointer)


def json_patch_op(doc, op):
    if not isinstance(op, dict) or not isinstance(op.get("path"), str):
        raise PatchFailed("each operation needs a string \"path\"")
    kind, path = op.get("op"), op["path"]
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchFailed('%s operation needs a "value"' % kind)
    if kind in ("move", "copy") and not isinstance(op.get("from"), str):
        raise PatchFailed('%s operation needs a "from"' % kind)
    if kind == "add":
        return pointer_add(doc, path, copy.deepcopy(op["value"]))
    if kind == "remove":
        pointer_remove(doc, path)
        return doc
    if kind == "replace":
        return pointer_replace(doc, path, copy.deepcopy(op["value"]))
    if kind == "move":
        if path.startswith(op["from"] + "/"):
            raise PatchFailed('cannot move "%s" into its own child' % op["from"])
        value = pointer_remove(doc, op["from"])
        return pointer_add(doc, path, value)
    if kind == "copy":
        return pointer_add(doc, path, copy.deepcopy(pointer_get(doc, op["from"])))
    if kind == "test":
        if not same_json(pointer_get(doc, path), op["value"]):
            raise PatchFailed("testing value %s failed: test failed" % path)
        return doc
    raise PatchFailed("unexpected operation %s" % json.dumps(kind))


def json_patch(doc, ops):
    """RFC 6902 applied to a deep copy; the original is left alone."""
    doc = copy.deepcopy(doc)
    for op in ops:
        doc = json_patch_op(doc, op)
    return doc


class Kubectl:
    """Applies strategic merge patches with `kubectl patch --local`."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.path = os.environ.get("KT_KUBECTL") or shutil.which("kubectl")
        self._patch_file = None
        self._lock = threading.Lock()
        self._running = set()  # kubectl processes, ended by stop()

    def supports_patch_file(self):
        """--patch-file appeared in kubectl 1.19; ask once, lazily."""
        with self._lock:
            known = self._patch_file
        if known is None:
            _, out, _ = self.run(["patch", "--help"], self.workdir)
            known = self._patch_file = "--patch-file" in out
        return known

    def run(self, args, tmp):
        """(exit status, stdout, stderr) of one kubectl run."""
        # An empty kubeconfig: --local must never talk to a server.
        env = dict(os.environ, KUBECONFIG=os.path.join(tmp, "no-kubeconfig"))
        proc = subprocess.Popen([self.path] + args, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with self._lock:
            self._running.add(proc)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += "\nkubectl took more than 60 s"
        finally:
            with self._lock:
                self._running.discard(proc)
        return proc.returncode, out, err

    def stop(self):
        """End the kubectl runs still going, so none outlives the server."""
        with self._lock:
            for proc in self._running:
                proc.kill()

    def strategic_patch(self, obj, patch_text):
        if not self.path:
            raise ApiError(500, "strategic merge patch needs kubectl: put it on PATH"
                           " or set KT_KUBECTL")
        with tempfile.TemporaryDirectory(prefix="smp-", dir=self.workdir) as tmp:
            obj_file = os.path.join(tmp, "object.json")
            with open(obj_file, "w") as out:
                json.dump(obj, out)
            args = ["patch", "--local", "-f", obj_file, "--type", "strategic", "-o", "json"]
            if self.supports_patch_file():
                patch_file = os.path.join(tmp, "patch.json")
                with open(patch_file, "w") as out:
                    out.write(patch_text)
                args += ["--patch-file", patch_file]
            else:
                args += ["-p", patch_text]
            code, out, err = self.run(args, tmp)
        if code != 0:
            raise ApiError(422, kubectl_error(err))
        return json.loads(out)


def kubectl_error(stderr):
    """kubectl's own error line, without its "error: " prefix."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in lines:
        if line.startswith("error: "):
            return line[len("error: "):]
    return lines[-1] if lines else "kubectl patch failed"


# ---------------------------------------------------------------------------
# What the real server does to objects on the way in: defaults, validation,
# the fields it owns, and the split between a resource and its /status.

SERVER_OWNED_META = ("namespace", "selfLink", "uid", "resourceVersion", "generation",
                     "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def set_default(mapping, key, value):
    if mapping.get(key) is None:
        mapping[key] = value


def image_pull_policy(image):
    """Always for :latest or an untagged image, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def default_probe(probe):
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                       ("successThreshold", 1), ("failureThreshold", 3)):
        set_default(probe, key, value)
    if isinstance(probe.get("httpGet"), dict):
        set_default(probe["httpGet"], "scheme", "HTTP")


def default_container(container):
    if not isinstance(container, dict):
        return
    if isinstance(container.get("image"), str):
        set_default(container, "imagePullPolicy", image_pull_policy(container["image"]))
    set_default(container, "resources", {})
    set_default(container, "terminationMessagePath", "/dev/termination-log")
    set_default(container, "terminationMessagePolicy", "File")
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            set_default(port, "protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        default_probe(container.get(probe))


def default_pod(pod):
    """The defaults the real server fills in that pod tools read."""
    spec = pod.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    set_default(spec, "restartPolicy", "Always")
    set_default(spec, "terminationGracePeriodSeconds", 30)
    set_default(spec, "dnsPolicy", "ClusterFirst")
    set_default(spec, "schedulerName", "default-scheduler")
    set_default(spec, "securityContext", {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            default_container(container)


def pod_qos(pod):
    """status.qosClass from the containers' requests and limits."""
    containers = (pod.get("spec") or {}).get("containers") or []
    guaranteed, empty = True, True
    for container in containers:
        resources = container.get("resources") or {} if isinstance(container, dict) else {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            empty = False
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if empty:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


NODE_INFO_FIELDS = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                    "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                    "operatingSystem", "architecture")


def zero_values(res, obj):
    """What Go's encoding of the typed object always writes, even when the
    client sent nothing: spec and status as {}, and a node's nodeInfo and
    daemonEndpoints with zero values (they are structs, not pointers)."""
    parts = ("spec", "status") if res.has_status else ("spec",)
    for part in parts:
        if not isinstance(obj.get(part), dict):
            obj[part] = {}
    if res.plural != "nodes":
        return
    status = obj["status"]
    endpoints = status.setdefault("daemonEndpoints", {})
    if isinstance(endpoints, dict):
        kubelet = endpoints.setdefault("kubeletEndpoint", {})
        if isinstance(kubelet, dict):
            set_default(kubelet, "Port", 0)
    info = status.setdefault("nodeInfo", {})
    if isinstance(info, dict):
        for key in NODE_INFO_FIELDS:
            set_default(info, key, "")


def apply_defaults(res, obj):
    zero_values(res, obj)
    if res.plural == "pods":
        default_pod(obj)
    elif res.plural == "namespaces":
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            set_default(spec, "finalizers", ["kubernetes"])
        labels = obj["metadata"].setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


def validate(res, obj):
    """The few checks that catch a malformed fixture early."""
    meta = obj["metadata"]
    name = meta.get("name") or ""
    pattern = DNS_LABEL if res.plural == "namespaces" else DNS_SUBDOMAIN
    causes = []
    for key in ("labels", "annotations"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            causes.append(("metadata." + key, "Invalid value: must be an object"))
    if len(name) > 253 or not pattern.fullmatch(name):
        causes.append(("metadata.name", 'Invalid value: "%s": must be a lowercase RFC 1123'
                       ' %s' % (name, "label" if pattern is DNS_LABEL else "subdomain")))
    if res.plural == "pods":
        causes += pod_causes(obj)
    if causes:
        raise invalid(res, name, causes)


def pod_causes(pod):
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return [("spec.containers", "Required value")]
    causes = []
    for i, container in enumerate(containers):
        for key in ("name", "image"):
            if not isinstance(container, dict) or not container.get(key):
                causes.append(("spec.containers[%d].%s" % (i, key), "Required value"))
    return causes


def check_kind(res, obj):
    """Fill in kind and apiVersion, refusing ones that belong elsewhere."""
    if not isinstance(obj, dict):
        raise bad_request("the body must be a JSON object")
    for key, want in (("kind", res.kind), ("apiVersion", res.api_version)):
        if obj.get(key) not in (None, "", want):
            raise bad_request('%s "%s" does not match the expected %s "%s"'
                              % (key, obj[key], key, want))
    obj["kind"], obj["apiVersion"] = res.kind, res.api_version
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}


def prepare_create(res, obj):
    """Server-owned metadata, defaults and initial status for a new object."""
    meta = obj["metadata"]
    for key in SERVER_OWNED_META:
        if key != "namespace" or not res.namespaced:
            meta.pop(key, None)
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + "".join(
            secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = rfc3339(utc_now())
    if res.plural == "pods":
        meta["generation"] = 1
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            set_default(status, "phase", "Pending")
    if res.plural == "namespaces":
        obj["status"] = {"phase": "Active"}
    apply_defaults(res, obj)
    if res.plural == "pods" and isinstance(obj.get("status"), dict):
        set_default(obj["status"], "qosClass", pod_qos(obj))
    validate(res, obj)
    return canonical(obj)


def prepare_update(res, old, new, subresource):
    """Merge a client's new object with what the server keeps for itself.

    A write to /status keeps the old spec (and for pods the old
    ownerReferences) but takes metadata such as labels and annotations,
    as the real server does (virtual-kubelet relies on it); a write to the
    main resource of a kind with a status subresource keeps the old status.
    """
    if not isinstance(new, dict):
        raise bad_request("the patched object must be a JSON object")
    new["kind"], new["apiVersion"] = old["kind"], old["apiVersion"]
    if not isinstance(new.get("metadata"), dict):
        new["metadata"] = {}
    meta, old_meta = new["metadata"], old["metadata"]
    if meta.get("name") != old_meta["name"]:
        raise invalid(res, old_meta["name"], [("metadata.name", "Invalid value: \"%s\":"
                                               " field is immutable" % meta.get("name"))])
    for key in SERVER_OWNED_META:
        set_or_drop(meta, key, old_meta.get(key))
    if subresource == "status":
        set_or_drop(new, "spec", old.get("spec"))
        if res.plural == "pods":
            set_or_drop(meta, "ownerReferences", old_meta.get("ownerReferences"))
    elif res.has_status:
        set_or_drop(new, "status", old.get("status"))
    apply_defaults(res, new)
    if "generation" in old_meta and not same_json(new.get("spec"), old.get("spec")):
        meta["generation"] = old_meta["generation"] + 1
    validate(res, new)
    return canonical(new)


def deletion_finished(obj):
    """A deleting object with no finalizers and no grace left is gone."""
    meta = obj["metadata"]
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") \
        and not meta.get("deletionGracePeriodSeconds")


def pod_grace(pod, requested):
    """The grace period a pod delete gets, as the pod strategy computes it."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if requested is None:
        grace = spec.get("terminationGracePeriodSeconds")
        grace = 30 if grace is None else grace
    else:
        grace = 1 if requested < 0 else requested
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    return grace


def plan_deletion(res, current, requested_grace):
    """('remove', None), ('mark', new object) or ('keep', None)."""
    meta = current["metadata"]
    finalizers = meta.get("finalizers") or []
    grace = pod_grace(current, requested_grace) if res.plural == "pods" else 0
    if meta.get("deletionTimestamp"):
        old_grace = meta.get("deletionGracePeriodSeconds") or 0
        if grace >= old_grace:
            return ("keep", None)
        if grace == 0 and not finalizers:
            return ("remove", None)
        new = copy.deepcopy(current)
        moment = parse_rfc3339(meta["deletionTimestamp"]) - timedelta(seconds=old_grace - grace)
        new["metadata"]["deletionTimestamp"] = rfc3339(moment)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        return ("mark", canonical(new))
    if grace == 0 and not finalizers:
        return ("remove", None)
    new = copy.deepcopy(current)
    new["metadata"]["deletionTimestamp"] = rfc3339(utc_now() + timedelta(seconds=grace))
    new["metadata"]["deletionGracePeriodSeconds"] = grace
    return ("mark", canonical(new))


# ---------------------------------------------------------------------------
# The store: objects, one resourceVersion counter, and the event history
# that watches replay.


class Stale(Exception):
    """The object changed between our read and our write; read again."""


class Event:
    __slots__ = ("rv", "type", "plural", "namespace", "object", "old")

    def __init__(self, rv, kind, plural, namespace, obj, old):
        self.rv, self.type, self.plural = rv, kind, plural
        self.namespace, self.object, self.old = namespace, obj, old


def object_key(res, obj):
    meta = obj["metadata"]
    return (res.plural, meta.get("namespace", "") if res.namespaced else "", meta["name"])


def without_rv(obj):
    trimmed = dict(obj)
    trimmed["metadata"] = dict(obj["metadata"])
    trimmed["metadata"].pop("resourceVersion", None)
    return trimmed


class Store:
    """Thread-safe in-memory objects.  Stored dicts are never handed out:
    callers get deep copies, and a write replaces the stored dict."""

    def __init__(self):
        self.cond = threading.Condition()
        self.rv = 0
        self.objects = {}
        self.events = []
        self.event_rvs = []
        self.oldest_rv = 0  # events after this resourceVersion are kept
        self.reset()

    def reset(self):
        """Back to the initial namespaces; resourceVersions keep growing."""
        with self.cond:
            self.objects.clear()
            self.events, self.event_rvs = [], []
            self.oldest_rv = self.rv
            for name in INITIAL_NAMESPACES:
                self.insert(NAMESPACES, prepare_create(NAMESPACES, {
                    "kind": "Namespace", "apiVersion": "v1", "metadata": {"name": name}}))
            self.cond.notify_all()

    def _record(self, kind, res, obj, old):
        self.events.append(Event(self.rv, kind, res.plural, obj["metadata"].get("namespace", ""),
                                 obj, old))
        self.event_rvs.append(self.rv)
        if len(self.events) > HISTORY_LIMIT:
            drop = len(self.events) - HISTORY_LIMIT // 2
            self.oldest_rv = self.event_rvs[drop - 1]
            del self.events[:drop], self.event_rvs[:drop]
        self.cond.notify_all()

    def _stamp(self, obj):
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return canonical(obj)

    def get(self, res, namespace, name):
        with self.cond:
            obj = self.objects.get((res.plural, namespace or "", name))
            if obj is None:
                raise not_found(res, name)
            return copy.deepcopy(obj)

    def exists(self, res, namespace, name):
        with self.cond:
            return (res.plural, namespace or "", name) in self.objects

    def list(self, res, namespace, predicate):
        """(resourceVersion, matching objects sorted by namespace and name)."""
        with self.cond:
            found = [obj for key, obj in sorted(self.objects.items())
                     if key[0] == res.plural and namespace in (None, key[1])
                     and predicate(obj)]
            return self.rv, copy.deepcopy(found)

    def insert(self, res, obj):
        with self.cond:
            key = object_key(res, obj)
            if res.namespaced and not self.exists(NAMESPACES, "", key[1]):
                raise namespace_not_found(key[1])
            if key in self.objects:
                raise already_exists(res, key[2])
            obj = self._stamp(copy.deepcopy(obj))
            self.objects[key] = obj
            self._record("ADDED", res, obj, None)
            return copy.deepcopy(obj)

    def _current(self, res, key, expected_rv):
        current = self.objects.get(key)
        if current is None:
            raise not_found(res, key[2])
        if current["metadata"]["resourceVersion"] != expected_rv:
            raise Stale()
        return current

    def replace(self, res, obj, expected_rv):
        """Store obj if the object is still at expected_rv.  A write that
        changes nothing keeps the resourceVersion and sends no event."""
        with self.cond:
            key = object_key(res, obj)
            current = self._current(res, key, expected_rv)
            if same_json(without_rv(current), without_rv(obj)):
                return copy.deepcopy(current)
            obj = self._stamp(copy.deepcopy(obj))
            self.objects[key] = obj
            self._record("MODIFIED", res, obj, current)
            return copy.deepcopy(obj)

    def remove(self, res, namespace, name, expected_rv):
        with self.cond:
            key = (res.plural, namespace or "", name)
            current = self._current(res, key, expected_rv)
            if res is NAMESPACES:
                self._remove_contents(name)
            del self.objects[key]
            gone = self._stamp(copy.deepcopy(current))
            self._record("DELETED", res, gone, None)
            return copy.deepcopy(gone)

    def _remove_contents(self, namespace):
        for key in [k for k in self.objects if k[1] == namespace]:
            res = next(r for r in RESOURCES if r.plural == key[0])
            gone = self._stamp(copy.deepcopy(self.objects.pop(key)))
            self._record("DELETED", res, gone, None)

    def compact(self):
        """Forget every event so far, as etcd's compaction does."""
        with self.cond:
            self.events, self.event_rvs = [], []
            self.oldest_rv = self.rv
            self.cond.notify_all()
            return self.rv

    def events_after(self, rv):
        """Events newer than rv, or None if rv is older than the history."""
        with self.cond:
            if rv < self.oldest_rv:
                return None
            return self.events[bisect.bisect_right(self.event_rvs, rv):]


# ---------------------------------------------------------------------------
# Authentication and authorization.


class Identity:
    def __init__(self, user, groups, via):
        self.user, self.groups, self.via = user, list(groups), via

    @property
    def is_admin(self):
        return "system:masters" in self.groups

    def may(self, verb):
        """Admins do anything; "viewer" reads; anyone else nothing."""
        return self.is_admin or (self.user == "viewer" and verb in READ_VERBS)


def certificate_identity(conn):
    """The verified client certificate's CN and O, if one was presented."""
    try:
        cert = conn.getpeercert()
    except (ValueError, OSError):
        return None
    if not cert:
        return None
    user, groups = None, []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    return Identity(user, groups, "cert") if user else None


def forbidden(ident, verb, req):
    """403 worded as the RBAC authorizer words it."""
    res = req.res
    resource = res.plural + ("/" + req.sub if req.sub else "")
    scope = ('in the namespace "%s"' % req.namespace) if req.namespace else "at the cluster scope"
    subject = ('%s "%s"' % (res.group_resource, req.name)) if req.name else res.group_resource
    message = ('%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s'
               % (subject, ident.user, verb, resource, res.group, scope))
    return ApiError(403, message, details=res.details(req.name))


def forbidden_path(ident, method, path):
    return ApiError(403, 'forbidden: User "%s" cannot %s path "%s"'
                    % (ident.user, method.lower(), path), details={})


# ---------------------------------------------------------------------------
# Fault injection.

FAULT_KEYS = {"method", "path", "query", "status", "retryAfter", "body", "message",
              "count", "latencyMs", "drop", "hang", "dropAfterEvents", "trickleMs"}


class FaultRule:
    def __init__(self, spec, rule_id):
        if not isinstance(spec, dict):
            raise bad_request("a fault rule must be a JSON object")
        unknown = sorted(set(spec) - FAULT_KEYS)
        if unknown:
            raise bad_request("unknown fault rule keys: %s" % ", ".join(unknown))
        self.spec = dict(spec, id=rule_id)
        self.method = (spec.get("method") or "").upper() or None
        try:
            self.path = re.compile(spec.get("path") or "")
            self.query = re.compile(spec.get("query") or "")
        except re.error as err:
            raise bad_request("bad fault regex: %s" % err)
        self.status = self._number(spec, "status", 100, 599)
        self.retry_after = self._number(spec, "retryAfter", 0, 86400)
        self.latency = (self._number(spec, "latencyMs", 0, 600000) or 0) / 1000.0
        self.count = self._number(spec, "count", -1, 10 ** 9)
        self.count = 1 if self.count is None else self.count
        self.drop, self.hang = bool(spec.get("drop")), bool(spec.get("hang"))
        self.drop_after = self._number(spec, "dropAfterEvents", 0, 10 ** 9)
        self.trickle = self._number(spec, "trickleMs", 1, 60000)
        if spec.get("body") is not None and self.status is None:
            self.status = 500
        if self.count == 0 or not (self.status or self.latency or self.drop or self.hang
                                   or self.drop_after is not None or self.trickle):
            raise bad_request("a fault rule needs a non-zero count and one of status,"
                              " latencyMs, drop, hang, dropAfterEvents or trickleMs")

    @staticmethod
    def _number(spec, key, low, high):
        value = spec.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not low <= value <= high:
            raise bad_request("fault rule %s must be a number from %d to %d" % (key, low, high))
        return value

    def matches(self, method, path, query):
        return (self.method in (None, method) and self.path.search(path)
                and self.query.search(query))


class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.next_id = 1

    def add(self, spec):
        with self.lock:
            rule = FaultRule(spec, self.next_id)
            self.next_id += 1
            self.rules.append(rule)
            return rule.spec

    def take(self, method, path, query):
        """The first matching rule, counting this match against it."""
        with self.lock:
            for rule in self.rules:
                if rule.matches(method, path, query):
                    if rule.count > 0:
                        rule.count -= 1
                        if rule.count == 0:
                            self.rules.remove(rule)
                    return rule
            return None

    def list(self):
        with self.lock:
            return [dict(r.spec, remaining=r.count) for r in self.rules]

    def clear(self):
        with self.lock:
            count = len(self.rules)
            self.rules = []
            return count


# ---------------------------------------------------------------------------
# The request log.


class RequestLog:
    """requests.log, one JSON line a request, flushed as written."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.entries = []
        self.file = open(path, "a", encoding="utf-8")

    def add(self, entry):
        line = json.dumps(entry, separators=(",", ":"))
        with self.lock:
            self.entries.append(entry)
            self.file.write(line + "\n")
            self.file.flush()

    def all(self):
        with self.lock:
            return list(self.entries)

    def clear(self):
        with self.lock:
            self.entries = []
            self.file.truncate(0)
            self.file.seek(0)


def body_for_log(data):
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


# ---------------------------------------------------------------------------
# Discovery and OpenAPI documents.


def api_resource_list(group, version):
    resources = []
    for res in RESOURCES:
        if (res.group, res.version) != (group, version):
            continue
        entry = {"name": res.plural, "singularName": res.singular,
                 "namespaced": res.namespaced, "kind": res.kind,
                 "verbs": sorted(READ_VERBS + WRITE_VERBS)}
        if res.short_names:
            entry["shortNames"] = res.short_names
        if res.categories:
            entry["categories"] = res.categories
        resources.append(entry)
        for sub in res.subresources:
            resources.append({"name": "%s/%s" % (res.plural, sub), "singularName": "",
                              "namespaced": res.namespaced, "kind": res.kind,
                              "verbs": ["get", "patch", "update"]})
    group_version = "%s/%s" % (group, version) if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": resources}


def api_groups():
    groups = []
    for group in sorted({r.group for r in RESOURCES if r.group}):
        version = {"groupVersion": group + "/v1", "version": "v1"}
        groups.append({"name": group, "versions": [version], "preferredVersion": version})
    return groups


def discovery_document(path, port):
    """The body for a discovery path, or None."""
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:%d" % port}]}
    if path == "/api/v1":
        return api_resource_list("", "v1")
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": api_groups()}
    for group in api_groups():
        if path == "/apis/" + group["name"]:
            return dict({"kind": "APIGroup", "apiVersion": "v1"}, **group)
        if path == "/apis/%s/v1" % group["name"]:
            return api_resource_list(group["name"], "v1")
    return None


def to_v3_refs(value):
    """Swagger 2.0 schema references, rewritten for OpenAPI 3."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                item = item.replace("#/definitions/", "#/components/schemas/")
            out[key] = to_v3_refs(item)
        return out
    if isinstance(value, list):
        return [to_v3_refs(item) for item in value]
    return value


def v3_operation(op):
    """A swagger 2.0 operation as OpenAPI 3: body parameter -> requestBody,
    response schemas under content types."""
    out = {k: to_v3_refs(v) for k, v in op.items()
           if k not in ("parameters", "responses", "consumes", "produces", "schemes")}
    params = []
    for param in op.get("parameters", []):
        if param.get("in") == "body":
            schema = to_v3_refs(param.get("schema", {}))
            out["requestBody"] = {"content": {ct: {"schema": schema}
                                              for ct in op.get("consumes", ["application/json"])},
                                  "required": bool(param.get("required"))}
            continue
        entry = {k: param[k] for k in ("name", "in", "description", "required") if k in param}
        entry["schema"] = {k: param[k] for k in ("type", "uniqueItems") if k in param}
        params.append(entry)
    if params:
        out["parameters"] = params
    responses = {}
    for code, response in op.get("responses", {}).items():
        entry = {"description": response.get("description", "")}
        if "schema" in response:
            schema = to_v3_refs(response["schema"])
            entry["content"] = {ct: {"schema": schema}
                                for ct in op.get("produces", ["application/json"])}
        responses[code] = entry
    out["responses"] = responses
    return out


def group_version_of(path):
    """api/v1 or apis/GROUP/VERSION: the OpenAPI v3 document a path is in."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 2:
        return "/".join(parts[:2])
    if parts[0] == "apis" and len(parts) >= 3:
        return "/".join(parts[:3])
    return None


def openapi_v3_documents(v2):
    """One OpenAPI 3 document per group version, derived from the v2 one.
    kubectl reads only v3 as JSON (its v2 client wants protobuf), and uses
    it to compute apply patches and to see that fieldValidation is served."""
    schemas = to_v3_refs(v2.get("definitions", {}))
    documents = {}
    for path, item in v2.get("paths", {}).items():
        gv = group_version_of(path)
        if gv is None:
            continue
        doc = documents.setdefault(gv, {
            "openapi": "3.0.0", "info": v2.get("info", {}), "paths": {},
            "components": {"schemas": schemas}})
        converted = {}
        for key, value in item.items():
            if key == "parameters":
                converted[key] = [v3_operation({"parameters": [p]})["parameters"][0]
                                  for p in value]
            else:
                converted[key] = v3_operation(value)
        doc["paths"][path] = converted
    return {gv: json_bytes(doc) for gv, doc in documents.items()}


# /openapi/v2 in protobuf, for kubectl before 1.24 (Debian 12 ships 1.20): it
# asks for nothing else and gives up on a 406.  The message is gnostic's
# openapi_v2.Document with the swagger version, the info and every
# definition: what kubectl reads to find a kind's schema, its patch
# strategies and merge keys, and to validate.  The paths are left out (only
# --dry-run=server looks at them).
PROTOBUF_OPENAPI_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

# Schema's scalar fields: JSON key -> (field number, kind)
PB_SCHEMA_SCALARS = (
    ("$ref", 1, "string"), ("format", 2, "string"), ("title", 3, "string"),
    ("description", 4, "string"), ("default", 5, "any"), ("multipleOf", 6, "double"),
    ("maximum", 7, "double"), ("exclusiveMaximum", 8, "bool"), ("minimum", 9, "double"),
    ("exclusiveMinimum", 10, "bool"), ("maxLength", 11, "int"), ("minLength", 12, "int"),
    ("pattern", 13, "string"), ("maxItems", 14, "int"), ("minItems", 15, "int"),
    ("uniqueItems", 16, "bool"), ("maxProperties", 17, "int"), ("minProperties", 18, "int"),
    ("discriminator", 26, "string"), ("readOnly", 27, "bool"), ("example", 30, "any"))


def pb_varint(number):
    out = bytearray()
    number &= (1 << 64) - 1  # int64: two's complement, as Go writes it
    while number > 0x7f:
        out.append(number & 0x7f | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def pb_field(number, data):
    """A length-delimited field: strings and embedded messages."""
    if isinstance(data, str):
        data = data.encode()
    return pb_varint(number << 3 | 2) + pb_varint(len(data)) + data


def pb_scalar(number, kind, value):
    if kind == "string":
        return pb_field(number, value)
    if kind == "any":  # gnostic's Any: the value as YAML text, which JSON is
        return pb_field(number, pb_field(2, json.dumps(value)))
    if kind == "double":
        return pb_varint(number << 3 | 1) + struct.pack("<d", float(value))
    if kind == "bool":
        return pb_varint(number << 3) + pb_varint(1) if value else b""
    return pb_varint(number << 3) + pb_varint(int(value))


def pb_named(number, name, value):
    """NamedSchema or NamedAny: name 1, value 2."""
    return pb_field(number, pb_field(1, name) + pb_field(2, value))


def pb_schema(schema):
    out = []
    for key, number, kind in PB_SCHEMA_SCALARS:
        if key in schema:
            out.append(pb_scalar(number, kind, schema[key]))
    out += [pb_field(19, name) for name in schema.get("required", [])]
    out += [pb_scalar(20, "any", value) for value in schema.get("enum", [])]
    extra = schema.get("additionalProperties")
    if isinstance(extra, bool):
        # a oneof: false is written too, to say which member is set
        out.append(pb_field(21, pb_varint(2 << 3) + pb_varint(int(extra))))
    elif isinstance(extra, dict):
        out.append(pb_field(21, pb_field(1, pb_schema(extra))))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        out.append(pb_field(22, b"".join(pb_field(1, t) for t in types)))
    if "items" in schema:
        items = schema["items"] if isinstance(schema["items"], list) else [schema["items"]]
        out.append(pb_field(23, b"".join(pb_field(1, pb_schema(i)) for i in items)))
    out += [pb_field(24, pb_schema(part)) for part in schema.get("allOf", [])]
    if "properties" in schema:
        out.append(pb_field(25, b"".join(pb_named(1, name, pb_schema(sub))
                                         for name, sub in schema["properties"].items())))
    out += [pb_named(31, key, pb_field(2, json.dumps(value)))
            for key, value in schema.items() if key.startswith("x-")]
    return b"".join(out)


def openapi_v2_protobuf(v2):
    info = v2.get("info", {})
    info_pb = b"".join(pb_field(number, info[key]) for key, number in
                       (("title", 1), ("version", 2), ("description", 3)) if key in info)
    definitions = b"".join(pb_named(1, name, pb_schema(schema))
                           for name, schema in v2.get("definitions", {}).items())
    return (pb_field(1, v2.get("swagger", "2.0")) + pb_field(2, info_pb)
            + pb_field(9, definitions))



class OpenAPI:
    """/openapi/v2 served byte for byte from the file; /openapi/v3 built
    from it on first use, as is the protobuf form of v2."""

    def __init__(self, path):
        with open(path, "rb") as src:
            self.v2 = src.read()
        json.loads(self.v2)  # refuse to start with a broken document
        self._v3 = None
        self._v2_protobuf = None
        self._lock = threading.Lock()

    def v2_protobuf(self):
        with self._lock:
            if self._v2_protobuf is None:
                self._v2_protobuf = openapi_v2_protobuf(json.loads(self.v2))
            return self._v2_protobuf

    def v3(self):
        with self._lock:
            if self._v3 is None:
                self._v3 = openapi_v3_documents(json.loads(self.v2))
            return self._v3

    def v3_index(self):
        paths = {}
        for gv, data in sorted(self.v3().items()):
            digest = hashlib.sha512(data).hexdigest()[:32].upper()
            paths[gv] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (gv, digest)}
        return {"paths": paths}


def accepts_json(accept):
    """False when the client asked only for other types (kubectl's v2
    OpenAPI client asks for protobuf only)."""
    if not accept:
        return True
    for item in accept.split(","):
        media = item.split(";")[0].strip().lower()
        if media in ("*/*", "application/*", "application/json"):
            return True
    return False


# ---------------------------------------------------------------------------
# The API proper: one method per verb, independent of HTTP.


class ResourceRequest:
    def __init__(self, res, namespace, name, sub, watch_path):
        self.res, self.namespace, self.name = res, namespace, name
        self.sub, self.watch_path = sub, watch_path


def parse_resource_path(path):
    """A ResourceRequest for /api/v1/... or /apis/G/V/..., or None."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        group, version, segs = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, version, segs = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_path = segs[0] == "watch"
    if watch_path:
        segs = segs[1:]
    if "" in segs or not segs:
        return None
    namespace = None
    # /namespaces/NAME/status is the namespace's own subresource, not a resource.
    if segs[0] == "namespaces" and len(segs) >= 3 and segs[2] not in ("status", "finalize"):
        namespace, segs = segs[1], segs[2:]
    if len(segs) > 3:
        return None
    res = RESOURCE_BY_PATH.get((group, version, segs[0]))
    name = segs[1] if len(segs) > 1 else None
    sub = segs[2] if len(segs) > 2 else None
    if res is None or (namespace is not None and not res.namespaced):
        return None
    if (res.namespaced and namespace is None and name is not None) \
            or (sub is not None and sub not in res.subresources):
        return None
    return ResourceRequest(res, namespace, name, sub, watch_path)


def decode_json(data, what="body"):
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise bad_request("the %s is not valid JSON: %s" % (what, err))


def media_type(content_type):
    return (content_type or "").split(";")[0].strip().lower()


def int_param(query, key):
    value = query.get(key)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request('invalid value for %s: "%s"' % (key, value))


def item_key(obj):
    meta = obj["metadata"]
    return [meta.get("namespace", ""), meta["name"]]


def encode_continue(rv, after):
    return base64.urlsafe_b64encode(json_bytes({"rv": rv, "after": after})).decode()


def decode_continue(token):
    """(snapshot resourceVersion, key of the last item sent) of a token."""
    try:
        value = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(value["rv"]), list(value["after"])
    except (ValueError, KeyError, TypeError):
        raise bad_request("invalid continue token")


def strip_for_list(obj):
    """List items carry no kind or apiVersion, as the real server's do."""
    obj.pop("kind", None)
    obj.pop("apiVersion", None)
    return obj


class Api:
    def __init__(self, store, kubectl):
        self.store = store
        self.kubectl = kubectl

    def get(self, req):
        return 200, self.store.get(req.res, req.namespace, req.name)

    def predicate(self, req, query):
        fields = parse_field_selector(req.res, query.get("fieldSelector"))
        labels = parse_label_selector(query.get("labelSelector"))
        return lambda obj: fields(obj) and labels(obj)

    def list(self, req, query):
        rv, items = self.store.list(req.res, req.namespace, self.predicate(req, query))
        limit = int_param(query, "limit") or 0
        start, meta = 0, {"resourceVersion": str(rv)}
        if query.get("continue"):
            snapshot, after = decode_continue(query["continue"])
            if snapshot != rv:
                raise ApiError(410, "The provided continue parameter is too old to display"
                               " a consistent list result. You can start a new list"
                               " without the continue parameter.", reason="Expired")
            keys = [item_key(item) for item in items]
            start = bisect.bisect_right(keys, after)
        page = items[start:start + limit] if limit > 0 else items[start:]
        if limit > 0 and start + limit < len(items):
            meta["continue"] = encode_continue(rv, item_key(page[-1]))
            meta["remainingItemCount"] = len(items) - start - limit
        return 200, {"kind": req.res.kind + "List", "apiVersion": req.res.api_version,
                     "metadata": meta, "items": [strip_for_list(item) for item in page]}

    def create(self, req, body, content_type, query):
        if req.sub:
            raise method_not_allowed()
        if media_type(content_type) != "application/json":
            raise unsupported_media(["application/json"])
        obj = decode_json(body)
        check_kind(req.res, obj)
        meta = obj["metadata"]
        if req.res.namespaced:
            if meta.get("namespace") not in (None, "", req.namespace):
                raise bad_request("the namespace of the provided object does not match"
                                  " the namespace sent on the request")
            meta["namespace"] = req.namespace
            if not self.store.exists(NAMESPACES, "", req.namespace):
                raise namespace_not_found(req.namespace)
        if not meta.get("name") and not meta.get("generateName"):
            raise invalid(req.res, "", [("metadata.name", "Required value: name or"
                                         " generateName is required")])
        obj = prepare_create(req.res, obj)
        obj["metadata"]["managedFields"] = managedfields.track(
            None, obj, req.manager, None, req.res.api_version, rfc3339(utc_now()))
        if query.get("dryRun"):
            return 201, obj
        return 201, self.store.insert(req.res, obj)

    def update(self, req, body, content_type, query):
        if media_type(content_type) != "application/json":
            raise unsupported_media(["application/json"])
        obj = decode_json(body)
        check_kind(req.res, obj)
        meta = obj["metadata"]
        if meta.get("name") != req.name:
            raise bad_request("the name of the object (%s) does not match the name on"
                              " the URL (%s)" % (meta.get("name"), req.name))
        if req.res.namespaced and meta.get("namespace") not in (None, "", req.namespace):
            raise bad_request("the namespace of the provided object does not match"
                              " the namespace sent on the request")
        return 200, self.guaranteed_update(req, lambda current: copy.deepcopy(obj), query)

    def patch(self, req, body, content_type, query):
        kind = media_type(content_type)
        if kind not in PATCH_TYPES:
            raise unsupported_media(list(PATCH_TYPES))
        patch = decode_json(body, "patch")
        if kind == PATCH_JSON and not isinstance(patch, list):
            raise bad_request("a JSON patch must be a JSON array of operations")
        if kind != PATCH_JSON and not isinstance(patch, dict):
            raise bad_request("a %s patch must be a JSON object"
                              % ("merge" if kind == PATCH_MERGE else "strategic merge"))
        text = body.decode("utf-8")
        return 200, self.guaranteed_update(
            req, lambda current: self.apply_patch(kind, current, patch, text), query)

    def apply_patch(self, kind, current, patch, text):
        if kind == PATCH_MERGE:
            return merge_patch(current, patch)
        if kind == PATCH_JSON:
            try:
                return json_patch(current, patch)
            except PatchFailed as err:
                raise ApiError(422, str(err))
        return self.kubectl.strategic_patch(current, text)

    def guaranteed_update(self, req, mutate, query):
        """Read, change, write; redo it if another write got in between.
        A resourceVersion in the new object is a precondition."""
        res = req.res
        for _ in range(UPDATE_RETRIES):
            current = self.store.get(res, req.namespace, req.name)
            current_rv = current["metadata"]["resourceVersion"]
            new = mutate(copy.deepcopy(current))
            new_meta = meta_of(new) if isinstance(new, dict) else {}
            if new_meta.get("resourceVersion") not in (None, "", current_rv):
                raise conflict(res, req.name)
            if new_meta.get("uid") not in (None, "", current["metadata"]["uid"]):
                raise conflict(res, req.name, "Precondition failed: UID in precondition: %s,"
                               " UID in object meta: %s"
                               % (new_meta["uid"], current["metadata"]["uid"]))
            final = prepare_update(res, current, new, req.sub)
            final["metadata"]["managedFields"] = managedfields.track(
                current, final, req.manager, req.sub, res.api_version, rfc3339(utc_now()))
            if query.get("dryRun"):
                return final
            try:
                stored = self.store.replace(res, final, current_rv)
                if deletion_finished(stored):
                    self.store.remove(res, req.namespace, req.name,
                                      stored["metadata"]["resourceVersion"])
                return stored
            except Stale:
                continue
        raise conflict(res, req.name)

    def delete_options(self, body, query):
        options = decode_json(body) if body.strip() else {}
        if not isinstance(options, dict):
            raise bad_request("DeleteOptions must be a JSON object")
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = int_param(query, "gracePeriodSeconds")
        if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
            raise bad_request("gracePeriodSeconds must be an integer")
        dry_run = bool(options.get("dryRun") or query.get("dryRun"))
        return grace, options.get("preconditions") or {}, dry_run

    def check_preconditions(self, req, current, preconditions):
        meta = current["metadata"]
        for key, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            want = preconditions.get(key)
            if want and want != meta.get(key):
                raise conflict(req.res, req.name, "Precondition failed: %s in precondition:"
                               " %s, %s in object meta: %s" % (label, want, label, meta.get(key)))

    def delete(self, req, body, query):
        res = req.res
        if req.sub:
            raise method_not_allowed()
        if res is NAMESPACES and req.name in IMMORTAL_NAMESPACES:
            raise ApiError(403, 'namespaces "%s" is forbidden: this namespace may not be'
                           ' deleted' % req.name, details=res.details(req.name))
        grace, preconditions, dry_run = self.delete_options(body, query)
        for _ in range(UPDATE_RETRIES):
            current = self.store.get(res, req.namespace, req.name)
            self.check_preconditions(req, current, preconditions)
            action, new = plan_deletion(res, current, grace)
            rv = current["metadata"]["resourceVersion"]
            try:
                if action == "keep" or dry_run:
                    return 200, new or current
                if action == "mark":
                    return 200, self.store.replace(res, new, rv)
                return 200, self.store.remove(res, req.namespace, req.name, rv)
            except Stale:
                continue
        raise conflict(res, req.name)

    def watch_start(self, req, query):
        """(initial events, resourceVersion to continue after, predicate).
        No resourceVersion, or "0", starts with ADDED for what exists now."""
        predicate = self.predicate(req, query)
        rv_text = query.get("resourceVersion")
        if rv_text in (None, "", "0") or query.get("sendInitialEvents") == "true":
            rv, items = self.store.list(req.res, req.namespace, predicate)
            return [("ADDED", item) for item in items], rv, predicate
        try:
            return [], int(rv_text), predicate
        except ValueError:
            raise bad_request('invalid resourceVersion "%s"' % rv_text)


def watch_event(req, event, predicate):
    """How an event looks through a watch's filter: a change that moves an
    object into the selection is ADDED, out of it DELETED."""
    if event.plural != req.res.plural or req.namespace not in (None, event.namespace):
        return None
    now = predicate(event.object)
    if event.type != "MODIFIED":
        return (event.type, event.object) if now else None
    before = predicate(event.old)
    if now and before:
        return ("MODIFIED", event.object)
    if now:
        return ("ADDED", event.object)
    if before:
        gone = copy.deepcopy(event.old)
        gone["metadata"]["resourceVersion"] = event.object["metadata"]["resourceVersion"]
        return ("DELETED", gone)
    return None


# ---------------------------------------------------------------------------
# HTTP.

NON_RESOURCE_PATHS = ("/", "/version", "/healthz", "/livez", "/readyz",
                      "/openapi/v2", "/openapi/v3")


class Handler(BaseHTTPRequestHandler):
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
            self.ident = self.authenticate(state)
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

    def authenticate(self, state):
        """Client certificate first, then bearer token, as the real union
        authenticator tries them.  No anonymous access: 401."""
        ident = certificate_identity(self.connection)
        if ident is not None:
            return ident
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise unauthorized()
        for known, ident in state.tokens:
            if hmac.compare_digest(known.encode(), token.encode()):
                return ident
        raise unauthorized()

    # -- replies ----------------------------------------------------------

    def record(self, status):
        """One request log line, when the reply starts (or is abandoned)."""
        if self.logged or self.is_admin_path():
            return
        self.logged = True
        ident = self.ident
        self.server.state.log.add({
            "time": utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "method": self.method, "path": self.url_path, "query": self.raw_query,
            "contentType": self.headers.get("Content-Type"),
            "userAgent": self.headers.get("User-Agent"),
            "user": ident.user if ident else "none", "auth": ident.via if ident else "none",
            "body": body_for_log(self.body), "status": status, "fault": self.faulted})

    def send_reply(self, code, body, content_type="application/json", headers=()):
        data = body if isinstance(body, bytes) else json_bytes(body)
        self.record(code)
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def send_api_error(self, err):
        if self.started:
            self.close_connection = True  # too late for a status line
            return
        self.send_reply(err.code, err.status(), headers=err.headers)

    def start_stream(self):
        self.record(200)
        self.started = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
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
                + ["/apis/%s/v1" % g["name"] for g in api_groups()])})
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
        verb = self.verb_for(req)
        if not self.ident.may(verb):
            raise forbidden(self.ident, verb, req)
        if (verb in ("get", "update", "patch", "delete")) != bool(req.name) \
                or (verb == "create" and (req.name or (req.res.namespaced
                                                       and req.namespace is None))) \
                or verb == "deletecollection" or (verb in ("list", "watch") and req.name):
            raise method_not_allowed()
        content_type = self.headers.get("Content-Type")
        req.manager = managedfields.manager_of(self.query, self.headers.get("User-Agent"))
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

    # -- watch ------------------------------------------------------------

    def watch(self, req):
        api, store = self.server.state.api, self.server.state.store
        # As in the real server, no timeout or 0 means its own default.
        timeout = int_param(self.query, "timeoutSeconds") or WATCH_DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout
        initial, last_rv, predicate = api.watch_start(req, self.query)
        self.sent, self.cut = 0, threading.Event()
        self.bookmarks = self.query.get("allowWatchBookmarks") == "true"
        self.start_stream()
        watches = self.server.state.watches
        watches.add(self)
        try:
            if self.drop_after == 0:
                return self.abort_stream()
            if self.trickle:
                return self.trickle_stream()
            for kind, obj in initial:
                if self.send_event(kind, obj):
                    return
            if self.query.get("sendInitialEvents") == "true":
                self.send_bookmark(req, last_rv, {"k8s.io/initial-events-end": "true"})
            if self.follow(req, store, last_rv, predicate, deadline):
                self.wfile.write(b"0\r\n\r\n")
        except (ConnectionError, socket.timeout, ssl.SSLError, OSError):
            self.close_connection = True
        finally:
            watches.remove(self)
            self.cut.set()

    def trickle_stream(self):
        """One byte of an event at a time, never a whole event."""
        event = json_bytes({"type": "ADDED", "object": {"metadata": {"name": "x"}}})
        for byte in event[:-1] * 1000:
            if STOP.wait(self.trickle / 1000.0) or self.client_gone():
                break
            self.send_chunk(bytes([byte]))
        self.close_connection = True

    def send_event(self, kind, obj):
        """Sends one event; True when a dropAfterEvents fault then cut the stream."""
        self.send_chunk(json_bytes({"type": kind, "object": obj}))
        self.sent += 1
        if self.drop_after is not None and self.sent >= self.drop_after:
            self.abort_stream()
            return True
        return False

    def send_bookmark(self, req, rv, annotations=None):
        meta = {"resourceVersion": str(rv)}
        if annotations:
            meta["annotations"] = annotations
        self.send_chunk(json_bytes({"type": "BOOKMARK", "object": {
            "kind": req.res.kind, "apiVersion": req.res.api_version, "metadata": meta}}))

    def abort_stream(self):
        """Close a watch's connection mid-body, as a dropped connection does."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.cut.set()

    def next_bookmark(self, now, deadline):
        """(when the next bookmark is due, whether it is the one 2 s before
        the timeout): every interval, and that one once, as the watch cache
        schedules them."""
        if not self.bookmarks:
            return float("inf"), False
        periodic = now + self.server.state.bookmark_interval
        if not self.pre_timeout_sent and deadline - 2 <= periodic:
            return deadline - 2, True
        return periodic, False

    def follow(self, req, store, last_rv, predicate, deadline):
        """Streams events until the timeout (True) or until the stream was
        cut or the client went away (False)."""
        self.pre_timeout_sent = False
        bookmark_at, pre = self.next_bookmark(time.monotonic(), deadline)
        while not STOP.is_set():
            now = time.monotonic()
            remaining = deadline - now
            if self.drop_requested():
                self.abort_stream()
                return False
            if remaining <= 0:
                return True
            if self.client_gone():
                return False
            with store.cond:
                events = store.events_after(last_rv)
                if events == []:
                    store.cond.wait(max(0, min(remaining, 0.5, bookmark_at - now)))
                    events = store.events_after(last_rv)
            if events is None:
                self.send_event("ERROR", status_body(
                    410, "Expired", "too old resource version: %d (%d)"
                    % (last_rv, store.oldest_rv + 1)))
                return True
            for event in events:
                last_rv = event.rv
                shown = watch_event(req, event, predicate)
                if shown is not None and self.send_event(*shown):
                    return False
            now = time.monotonic()
            if now >= bookmark_at:
                self.pre_timeout_sent = self.pre_timeout_sent or pre
                self.send_bookmark(req, last_rv)
                bookmark_at, pre = self.next_bookmark(now, deadline)
        return False

    def drop_requested(self):
        return self in self.server.state.watches.to_drop

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


class Watches:
    """The watches being served, so that /_drop-watches can cut them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.open = set()
        self.to_drop = set()

    def add(self, handler):
        with self.lock:
            self.open.add(handler)

    def remove(self, handler):
        with self.lock:
            self.open.discard(handler)
            self.to_drop.discard(handler)

    def drop_all(self, store):
        """Asks every open watch to cut its stream and waits (5 s at most)
        until each has: the caller knows none is left streaming."""
        with self.lock:
            victims = list(self.open)
            self.to_drop.update(victims)
        with store.cond:
            store.cond.notify_all()
        for handler in victims:
            handler.cut.wait(5)
        return len(victims)


class State:
    """Everything the handlers share."""

    def __init__(self, directory, tokens, bookmark_interval=BOOKMARK_INTERVAL):
        self.store = Store()
        self.kubectl = Kubectl(directory)
        self.api = Api(self.store, self.kubectl)
        self.faults = Faults()
        self.log = RequestLog(os.path.join(directory, "requests.log"))
        self.openapi = OpenAPI(OPENAPI_V2_FILE)
        self.tokens = tokens
        self.watches = Watches()
        self.bookmark_interval = bookmark_interval


# ---------------------------------------------------------------------------
# Start-up: certificates, files, serving.

OPENSSL_CONFIG = """\
# Written by apiserver.py: only what its certificates need.
[req]
distinguished_name = dn
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
"""

EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
LEAF_CERTS = (("server", "/CN=kube-apiserver", "server"),
              ("admin", "/O=system:masters/CN=admin", "client"),
              ("viewer", "/CN=viewer", "client"))


def openssl(args, stdin=None):
    proc = subprocess.run(["openssl"] + args, input=stdin, capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (args[0], proc.stderr.decode(
            "utf-8", "replace").strip()))
    return proc.stdout


def make_leaf(directory, config, name, subject, section):
    """A key and a certificate signed by the CA, EC P-256.  OpenSSL 3 signs
    in the same step that makes the key; older ones need a CSR first."""
    path = os.path.join(directory, name)
    ca = ["-CA", os.path.join(directory, "ca.crt"), "-CAkey", os.path.join(directory, "ca.key"),
          "-set_serial", str(secrets.randbits(63)), "-days", "3650",
          "-extensions", section, "-out", path + ".crt"]
    try:
        openssl(["req", "-x509", "-new", "-config", config] + EC_KEY +
                ["-keyout", path + ".key", "-subj", subject] + ca)
        return
    except RuntimeError:
        if openssl(["version"]).startswith(b"OpenSSL 3"):
            raise
    csr = openssl(["req", "-new", "-config", config] + EC_KEY +
                  ["-keyout", path + ".key", "-subj", subject])
    openssl(["x509", "-req", "-extfile", config] + ca, csr)


def make_pki(directory):
    """CA, server and client certificates.  The three leaves are made in
    parallel: start-up time is mostly openssl's."""
    config = os.path.join(directory, "openssl.cnf")
    write_file(config, OPENSSL_CONFIG)
    openssl(["req", "-x509", "-new", "-config", config, "-extensions", "ca"] + EC_KEY +
            ["-keyout", os.path.join(directory, "ca.key"),
             "-out", os.path.join(directory, "ca.crt"),
             "-days", "3650", "-subj", "/CN=kubelet-tools test CA"])
    errors = []

    def leaf(*args):
        try:
            make_leaf(directory, config, *args)
        except RuntimeError as err:
            errors.append(err)
    threads = [threading.Thread(target=leaf, args=spec) for spec in LEAF_CERTS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


PKI_FILES = ("ca.crt", "ca.key", "server.crt", "server.key", "admin.crt", "admin.key",
             "viewer.crt", "viewer.key")


def copy_pki(directory, cache):
    """The certificates of CACHE, made there first by whichever server comes
    first: tests that start a server each share one CA and save openssl's
    time.  A server makes them aside and renames the whole directory, so
    CACHE is complete whenever it exists; a server that loses the race drops
    its own."""
    cache = os.path.abspath(cache)
    if not os.path.isdir(cache):
        parent = os.path.dirname(cache)
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".pki-", dir=parent)
        make_pki(staging)
        try:
            os.rename(staging, cache)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    for name in PKI_FILES:
        shutil.copy(os.path.join(cache, name), os.path.join(directory, name))


def tls_context(directory):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(os.path.join(directory, "server.crt"),
                            os.path.join(directory, "server.key"))
    context.load_verify_locations(os.path.join(directory, "ca.crt"))
    context.verify_mode = ssl.CERT_OPTIONAL
    context.set_alpn_protocols(["http/1.1"])
    return context


def write_file(path, text):
    """Write whole or not at all, so a reader never sees half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as out:
        out.write(text)
    os.replace(tmp, path)


def kubeconfig(url, ca, user):
    """A kubeconfig with one cluster, one user and the context "local".
    Values are JSON strings, which YAML reads as double-quoted scalars."""
    q = json.dumps
    user_lines = "".join("    %s: %s\n" % (key, q(value)) for key, value in user.items())
    return ("apiVersion: v1\nkind: Config\n"
            "clusters:\n- name: local\n  cluster:\n"
            "    server: %s\n    certificate-authority: %s\n"
            "users:\n- name: local\n  user:\n%s"
            "contexts:\n- name: local\n  context:\n    cluster: local\n    user: local\n"
            "current-context: local\n" % (q(url), q(ca), user_lines))


def write_client_files(directory, port, admin_token, viewer_token):
    url = "https://127.0.0.1:%d" % port
    ca = os.path.join(directory, "ca.crt")
    write_file(os.path.join(directory, "port"), "%d\n" % port)
    write_file(os.path.join(directory, "url"), url + "\n")
    write_file(os.path.join(directory, "token"), admin_token)
    write_file(os.path.join(directory, "viewer-token"), viewer_token)
    write_file(os.path.join(directory, "kubeconfig"), kubeconfig(url, ca, {"token": admin_token}))
    write_file(os.path.join(directory, "kubeconfig-viewer"),
               kubeconfig(url, ca, {"token": viewer_token}))
    write_file(os.path.join(directory, "kubeconfig-cert"), kubeconfig(url, ca, {
        "client-certificate": os.path.join(directory, "admin.crt"),
        "client-key": os.path.join(directory, "admin.key")}))


def remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def serve(args):
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)
    remove_quietly(os.path.join(directory, "ready"))
    write_file(os.path.join(directory, "pid"), "%d\n" % os.getpid())
    if args.pki:
        copy_pki(directory, args.pki)
    else:
        make_pki(directory)
    admin_token, viewer_token = secrets.token_hex(16), secrets.token_hex(16)
    tokens = [(admin_token, Identity("admin", ["system:masters", "system:authenticated"],
                                     "token")),
              (viewer_token, Identity("viewer", ["system:authenticated"], "token"))]
    state = State(directory, tokens, args.bookmark_interval)
    server = TLSServer(("127.0.0.1", args.port), state, tls_context(directory))
    write_client_files(directory, server.server_address[1], admin_token, viewer_token)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: STOP.set())
    write_file(os.path.join(directory, "ready"), "")
    while not STOP.wait(1):
        pass
    server.shutdown()
    server.server_close()
    state.kubectl.stop()
    remove_quietly(os.path.join(directory, "ready"))
    remove_quietly(os.path.join(directory, "pid"))
    return 0


# ---------------------------------------------------------------------------
# Client commands for tests: talk to a running server through DIR's files.

CLIENT_COMMANDS = {
    "fault": ("POST", "/_faults", True),
    "clear-faults": ("DELETE", "/_faults", False),
    "reset": ("POST", "/_reset", False),
    "requests": ("GET", "/_requests", False),
    "compact": ("POST", "/_compact", False),
    "drop-watches": ("POST", "/_drop-watches", False),
}


def read_text(directory, name):
    with open(os.path.join(directory, name)) as src:
        return src.read().strip()


def client_main(argv):
    command = argv[0]
    method, path, needs_body = CLIENT_COMMANDS[command]
    parser = argparse.ArgumentParser(prog="apiserver.py " + command)
    parser.add_argument("--dir", required=True, help="the server's directory")
    if needs_body:
        parser.add_argument("rule", help="a fault rule as JSON")
    args = parser.parse_args(argv[1:])
    body = None
    if needs_body:
        try:
            json.loads(args.rule)
        except ValueError as err:
            warn("the fault rule is not valid JSON: %s" % err)
            return 2
        body = args.rule.encode()
    # Imported here: only these commands need them, and the server starts faster.
    import urllib.error
    import urllib.request
    request = urllib.request.Request(read_text(args.dir, "url") + path, data=body,
                                     method=method)
    request.add_header("Authorization", "Bearer " + read_text(args.dir, "token"))
    if body is not None:
        request.add_header("Content-Type", "application/json")
    context = ssl.create_default_context(cafile=os.path.join(args.dir, "ca.crt"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as reply:
            sys.stdout.write(reply.read().decode())
        return 0
    except urllib.error.HTTPError as err:
        warn("%s %s: %s" % (method, path, err.read().decode("utf-8", "replace").strip()))
    except (urllib.error.URLError, OSError) as err:
        warn("%s %s: %s" % (method, path, err))
    return 1


def main(argv):
    if argv and argv[0] in CLIENT_COMMANDS:
        return client_main(argv)
    parser = argparse.ArgumentParser(
        prog="apiserver.py", description="A local stand-in for kube-apiserver, for tests.")
    parser.add_argument("--dir", required=True, help="where certificates, tokens,"
                        " kubeconfigs and the request log go")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1"
                        " (default 0: any free port)")
    parser.add_argument("--pki", help="take the CA and certificates from this directory,"
                        " making them there first if it does not exist")
    parser.add_argument("--bookmark-interval", type=float, default=BOOKMARK_INTERVAL,
                        help="seconds between a watch's bookmarks (default 60)")
    args = parser.parse_args(argv)
    try:
        return serve(args)
    except (OSError, RuntimeError, ValueError) as err:
        warn("cannot start: %s" % err)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
