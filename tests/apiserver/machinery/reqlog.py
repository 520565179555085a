# SPDX-License-Identifier: Apache-2.0
# reqlog: requests.log and /_requests, one JSON line a request.

import json
import threading


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


