# SPDX-License-Identifier: Apache-2.0
# store: objects, one resourceVersion counter, and the event history that
# watches replay.

import bisect
import copy
import threading

from . import registry
from .common import HISTORY_LIMIT, already_exists, canonical, not_found, same_json


class Stale(Exception):
    """The object changed between our read and our write; read again."""


class Event:
    __slots__ = ("rv", "type", "resource", "namespace", "object", "old")

    def __init__(self, rv, kind, resource, namespace, obj, old):
        self.rv, self.type, self.resource = rv, kind, resource
        self.namespace, self.object, self.old = namespace, obj, old


def object_key(res, obj):
    meta = obj["metadata"]
    return (res.key, meta.get("namespace", "") if res.namespaced else "", meta["name"])


def without_rv(obj):
    trimmed = dict(obj)
    trimmed["metadata"] = dict(obj["metadata"])
    trimmed["metadata"].pop("resourceVersion", None)
    return trimmed


class Store:
    """Thread-safe in-memory objects.  A stored dict is never changed: a
    write replaces it.  get() and the writes hand out deep copies; list()
    hands out the stored dicts themselves, to read (and encode) without the
    lock held, as the watch events do."""

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
            for res, obj in registry.initial_objects():
                self.insert(res, obj)
            self.cond.notify_all()

    def _record(self, kind, res, obj, old):
        self.events.append(Event(self.rv, kind, res.key, obj["metadata"].get("namespace", ""),
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
            obj = self.objects.get((res.key, namespace or "", name))
            if obj is None:
                raise not_found(res, name)
            return copy.deepcopy(obj)

    def exists(self, res, namespace, name):
        with self.cond:
            return (res.key, namespace or "", name) in self.objects

    def list(self, res, namespace, predicate):
        """(resourceVersion, matching objects sorted by namespace and name).
        The objects are the stored ones, not copies: read them, never change
        them.  Only taking the snapshot holds the lock; the selection, the
        copying and the encoding a large list costs do not, so that a write
        goes on meanwhile."""
        with self.cond:
            snapshot = [(key, obj) for key, obj in self.objects.items()
                        if key[0] == res.key and namespace in (None, key[1])]
            rv = self.rv
        snapshot.sort(key=lambda item: item[0])
        return rv, [obj for _, obj in snapshot if predicate(obj)]

    def insert(self, res, obj):
        with self.cond:
            key = object_key(res, obj)
            if res.namespaced and not self.exists(registry.namespaces(), "", key[1]):
                raise registry.namespace_not_found(key[1])
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
            key = (res.key, namespace or "", name)
            current = self._current(res, key, expected_rv)
            if res is registry.namespaces():
                self._remove_contents(name)
            del self.objects[key]
            gone = self._stamp(copy.deepcopy(current))
            self._record("DELETED", res, gone, None)
            return copy.deepcopy(gone)

    def _remove_contents(self, namespace):
        for key in [k for k in self.objects if k[1] == namespace]:
            res = registry.RESOURCE_BY_KEY[key[0]]
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


