# SPDX-License-Identifier: Apache-2.0
# registry: the resources served.  Each group module (groups/) registers
# its kinds here; discovery, routing and the store find them here.

from .common import DNS_SUBDOMAIN, not_found

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "patch", "update")


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
        self.key = self.group_resource

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
        return "status" in self.subresources

    def details(self, name):
        details = {}
        if name:
            details["name"] = name
        if self.group:
            details["group"] = self.group
        details["kind"] = self.plural
        return details

    # What a group module overrides for a kind of its own; these defaults
    # are what a resource with no rules of its own gets.

    # fields a fieldSelector may name beyond metadata.name and
    # metadata.namespace, each with the value a missing field has
    fields = {}
    # the names allowed: a DNS subdomain (a label for a few kinds)
    name_pattern = DNS_SUBDOMAIN
    # metadata a write to /status may not change
    status_keeps_meta = ()
    # whether objects carry a spec (an Event has none)
    has_spec = True

    def on_create(self, obj):
        """A new object, before the defaults: initial fields."""

    def defaults(self, obj):
        """Defaults filled in on every write, after spec and status are {}."""

    def after_defaults(self, obj):
        """A new object, after the defaults: fields computed from them."""

    def causes(self, obj):
        """Validation failures beyond the name's: (field, message) pairs."""
        return []

    def grace(self, obj, requested):
        """The grace period a DELETE gets (requested may be None)."""
        return 0

    def check_delete(self, name):
        """Raise an ApiError if this object may never be deleted."""


# Registered resources, in the order discovery lists them, and the
# objects every (re)started store begins with.
RESOURCES = []
RESOURCE_BY_PATH = {}
RESOURCE_BY_KEY = {}
SEEDS = []


def register(res):
    """Serve res: its group module calls this once at import."""
    RESOURCES.append(res)
    RESOURCE_BY_PATH[(res.group, res.version, res.plural)] = res
    RESOURCE_BY_KEY[res.key] = res
    return res


def seed(make):
    """make() -> [(resource, prepared object)]: what a reset store holds."""
    SEEDS.append(make)
    return make


def initial_objects():
    return [item for make in SEEDS for item in make()]


def namespaces():
    return RESOURCE_BY_PATH[("", "v1", "namespaces")]


def namespace_not_found(namespace):
    return not_found(namespaces(), namespace)


# ---------------------------------------------------------------------------
# Discovery.


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


# ---------------------------------------------------------------------------
# Paths of resources.


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
