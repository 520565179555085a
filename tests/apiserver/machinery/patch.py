# SPDX-License-Identifier: Apache-2.0
# patch: JSON merge patch (RFC 7386) and JSON patch (RFC 6902) are simple
# enough to do here; strategic merge patch is kubectl's job.

import copy
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

from .common import ApiError, same_json

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


