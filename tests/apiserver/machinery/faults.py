# SPDX-License-Identifier: Apache-2.0
# faults: the rules of /_faults (see apiserver.py) and which request they hit.

import re
import threading

from .common import bad_request

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


