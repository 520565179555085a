# SPDX-License-Identifier: Apache-2.0
# watch: the watch fan-out.  Each watch is served by its connection's own
# thread, which follows the store's event history (waiting on the store's
# condition, never holding it while it writes) and writes the events that
# pass its filter, with bookmarks, timeouts and the faults that cut or
# trickle a stream.

import copy
import socket
import ssl
import threading
import time

from .api import int_param
from .common import STOP, WATCH_DEFAULT_TIMEOUT, json_bytes, status_body


def watch_event(req, event, predicate):
    """How an event looks through a watch's filter: a change that moves an
    object into the selection is ADDED, out of it DELETED."""
    if event.resource != req.res.key or req.namespace not in (None, event.namespace):
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


class WatchStream:
    """The watch half of the HTTP handler (handler.Handler mixes it in)."""

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
