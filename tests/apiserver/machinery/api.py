# SPDX-License-Identifier: Apache-2.0
# api: the verbs (get, list, create, update, patch, delete and the start of
# a watch) on any registered resource, independent of HTTP.

import base64
import bisect
import copy
import json

import managedfields

from . import protobuf, registry
from .common import (UPDATE_RETRIES, ApiError, Encoded, bad_request, conflict, invalid,
                     json_bytes, meta_of, method_not_allowed, rfc3339, unsupported_media,
                     utc_now)
from .objects import (check_kind, deletion_finished, plan_deletion, prepare_create,
                      prepare_update)
from .patch import PATCH_JSON, PATCH_MERGE, PATCH_TYPES, PatchFailed, json_patch, merge_patch
from .selector import parse_field_selector, parse_label_selector
from .store import Stale


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


def list_item_json(obj):
    """A list item carries no kind or apiVersion, as the real server's do."""
    return json.dumps({k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
                      separators=(",", ":"))


def encode_list(head, items):
    """json_bytes(dict(head, items=items)), byte for byte, in pieces: each
    item is encoded on its own, so that a large list never holds the
    interpreter lock for long and other requests are answered meanwhile."""
    pieces = [(json.dumps(head, separators=(",", ":"))[:-1] + ',"items":[').encode()]
    for i, item in enumerate(items):
        pieces.append((("," if i else "") + list_item_json(item)).encode())
    pieces.append(b"]}\n")
    return Encoded(pieces)


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
        return 200, encode_list({"kind": req.res.kind + "List",
                                 "apiVersion": req.res.api_version, "metadata": meta}, page)

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
            if not self.store.exists(registry.namespaces(), "", req.namespace):
                raise registry.namespace_not_found(req.namespace)
        if not meta.get("name") and not meta.get("generateName"):
            raise invalid(req.res, "", [("metadata.name", "Required value: name or"
                                         " generateName is required")])
        req.res.admit_create(obj, req.ident)
        obj = prepare_create(req.res, obj)
        obj["metadata"]["managedFields"] = managedfields.track(
            None, obj, req.manager, None, req.res.api_version, rfc3339(utc_now()))
        if query.get("dryRun"):
            return 201, obj
        return 201, self.store.insert(req.res, obj)

    def update(self, req, body, content_type, query):
        obj = None
        if media_type(content_type) == protobuf.PROTOBUF:
            api_version, kind, message = protobuf.unwrap(body)
            try:
                obj = req.res.from_protobuf(message)
            except (ValueError, UnicodeDecodeError) as err:
                raise bad_request("the protobuf body cannot be read: %s" % err)
            if obj is not None:
                obj.update(apiVersion=api_version, kind=kind)
        if obj is None:
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
        res.check_delete(req.name)
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
