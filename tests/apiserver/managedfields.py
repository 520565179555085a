# SPDX-License-Identifier: Apache-2.0
# managedfields: metadata.managedFields kept as the real API server keeps them for updates.
"""Field ownership for the local API server.

Each write is an "Update" by a manager: the request's ?fieldManager=, else
the program name at the head of its User-Agent (what the real server
derives).  The manager comes to own the fields the write changed (fieldsV1,
with list items named by their merge keys as k:{...}); the other managers
lose those fields, and entries left with nothing are dropped.  A write that
changes nothing leaves managedFields as it was.  One entry per manager and
subresource, with the time of its last change; the entry just written goes
last.  Server-set metadata (uid, resourceVersion, ...) is owned by nobody.
"""

import json

# list fields whose items have merge keys, by the name of the list
LIST_KEYS = {
    "conditions": ("type",),
    "addresses": ("type",),
    "taints": ("effect", "key"),
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "ports": ("containerPort", "protocol"),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "ownerReferences": ("uid",),
    "containerStatuses": ("name",),
    "initContainerStatuses": ("name",),
}

NOT_OWNED_META = ("name", "namespace", "uid", "resourceVersion", "generation",
                  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "managedFields", "selfLink")


def item_key(list_name, item):
    keys = LIST_KEYS.get(list_name)
    if not keys or not isinstance(item, dict) or any(k not in item for k in keys):
        return None
    return "k:" + json.dumps({k: item[k] for k in keys}, separators=(",", ":"),
                             sort_keys=True)


def leaves(value, path=(), name=None, out=None):
    """Every owned leaf of value: {path tuple: leaf value}."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            if path == ("f:metadata",) and k in NOT_OWNED_META:
                continue
            leaves(v, path + ("f:" + k,), k, out)
    elif isinstance(value, list) and value and all(item_key(name, i) for i in value):
        for item in value:
            leaves(item, path + (item_key(name, item),), None, out)
    elif path:
        out[path] = value
    return out


def changed_paths(old, new):
    """Paths new sets to another value, and paths old had that new has not."""
    a = leaves(old) if old is not None else {}
    b = leaves(new)
    changed = {p for p, v in b.items() if p not in a or a[p] != v}
    removed = {p for p in a if p not in b}
    return changed, removed


def to_fields(paths):
    tree = {}
    for path in sorted(paths):
        node = tree
        for seg in path:
            node = node.setdefault(seg, {})
    return tree


def from_fields(tree, prefix=()):
    out = set()
    for seg, sub in tree.items():
        if seg == ".":
            continue
        if sub:
            out |= from_fields(sub, prefix + (seg,))
        else:
            out.add(prefix + (seg,))
    return out


def covers(paths, path):
    """Does a set of owned paths own path, or a parent or child of it?"""
    for owned in paths:
        n = min(len(owned), len(path))
        if owned[:n] == path[:n]:
            return True
    return False


def track(old, new, manager, subresource, api_version, now):
    """The managedFields new gets when manager writes it over old (None: create)."""
    entries = list(((old or {}).get("metadata") or {}).get("managedFields") or [])
    changed, removed = changed_paths(old, new)
    if not changed and not removed and old is not None:
        return entries
    kept = []
    mine = set()
    for e in entries:
        owned = from_fields(e.get("fieldsV1") or {})
        if e.get("manager") == manager and e.get("subresource") == subresource:
            mine = owned
            continue
        owned = {p for p in owned if not covers(changed | removed, p)}
        if owned:
            e = dict(e, fieldsV1=to_fields(owned))
            kept.append(e)
    mine = {p for p in mine if not covers(removed, p)} | changed
    if mine:
        entry = {"manager": manager, "operation": "Update", "apiVersion": api_version,
                 "time": now, "fieldsType": "FieldsV1", "fieldsV1": to_fields(mine)}
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    return kept


def manager_of(query, user_agent):
    """?fieldManager=, else the program at the head of the User-Agent."""
    if query.get("fieldManager"):
        return query["fieldManager"]
    agent = (user_agent or "").split(" ", 1)[0].split("/", 1)[0]
    return agent or "unknown"
