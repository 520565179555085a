# SPDX-License-Identifier: Apache-2.0
# objects: what the real server does to every object on the way in
# (defaults, validation, the fields it owns, the split between a resource
# and its /status) and on the way out (graceful deletion).  A kind's own
# rules are the Resource hooks its group module fills in.

import copy
import secrets
import uuid
from datetime import timedelta

from .common import (DNS_LABEL, bad_request, canonical, invalid, parse_rfc3339, rfc3339,
                     same_json, set_or_drop, utc_now)

SERVER_OWNED_META = ("namespace", "selfLink", "uid", "resourceVersion", "generation",
                     "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds")


def set_default(mapping, key, value):
    if mapping.get(key) is None:
        mapping[key] = value


def apply_defaults(res, obj):
    """What Go's encoding of the typed object always writes, even when the
    client sent nothing (spec and status as {}), then the kind's defaults."""
    parts = ("spec", "status") if res.has_status else ("spec",)
    for part in parts if res.has_spec else ():
        if not isinstance(obj.get(part), dict):
            obj[part] = {}
    res.defaults(obj)


def validate(res, obj):
    """The few checks that catch a malformed fixture early."""
    meta = obj["metadata"]
    name = meta.get("name") or ""
    pattern = res.name_pattern
    causes = []
    for key in ("labels", "annotations"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            causes.append(("metadata." + key, "Invalid value: must be an object"))
    if len(name) > 253 or not pattern.fullmatch(name):
        causes.append(("metadata.name", 'Invalid value: "%s": must be a lowercase RFC 1123'
                       ' %s' % (name, "label" if pattern is DNS_LABEL else "subdomain")))
    causes += res.causes(obj)
    if causes:
        raise invalid(res, name, causes)


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
    res.on_create(obj)
    apply_defaults(res, obj)
    res.after_defaults(obj)
    validate(res, obj)
    return canonical(obj)


def prepare_update(res, old, new, subresource):
    """Merge a client's new object with what the server keeps for itself.

    A write to /status keeps the old spec (and the metadata the kind says,
    for pods ownerReferences) but takes other metadata such as labels and annotations,
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
    if res.split_update(old, new, subresource):
        pass
    elif subresource == "status":
        set_or_drop(new, "spec", old.get("spec"))
        for key in res.status_keeps_meta:
            set_or_drop(meta, key, old_meta.get(key))
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


def plan_deletion(res, current, requested_grace):
    """('remove', None), ('mark', new object) or ('keep', None)."""
    meta = current["metadata"]
    finalizers = meta.get("finalizers") or []
    grace = res.grace(current, requested_grace)
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


