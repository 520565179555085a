# SPDX-License-Identifier: Apache-2.0
# common: what every part of the local API server shares: the stop flag,
# limits, time and JSON helpers, and errors worded as the real server's.

import json
import re
import sys
import threading
from datetime import datetime, timezone

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


class Encoded:
    """A reply body already encoded, in pieces written one after another."""

    def __init__(self, pieces):
        self.pieces = pieces

    def __len__(self):
        return sum(len(piece) for piece in self.pieces)


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


DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


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
