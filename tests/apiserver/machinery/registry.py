# SPDX-License-Identifier: Apache-2.0
# registry: the resources served.  Each group module (groups/) registers
# its kinds here; discovery, routing and the store find them here.

from .common import DNS_SUBDOMAIN, not_found

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "delete", "patch", "update")


class Resource:
    """One REST resource: where it lives and what it is called."""

    def __init__(self, group, plural, singular, kind, namespaced,
                 subresources=(), short_names=(), categories=(), version="v1"):
        self.group = group
        self.version = version
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

    # the verbs served (discovery lists them); a kind that is not stored
    # (a review, a metric) serves them itself, through serve()
    verbs = READ_VERBS + WRITE_VERBS
    stored = True

    def serve(self, handler, req, verb):
        """A kind that is not stored answers verb here (handler.send_reply)."""
        raise NotImplementedError

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

    def admit_create(self, obj, ident):
        """A new object as sent, and who sends it (machinery.auth.Identity):
        fields the server fills in from the requester."""

    def split_update(self, old, new, subresource):
        """Merge a write with what it may not change, in place; True if done
        here, False for the usual split (a /status write keeps the spec, any
        other keeps the status).  Raise an ApiError to refuse the write."""
        return False

    def from_protobuf(self, message):
        """The object (JSON) of a protobuf message, for kinds whose writes
        clients send that way; None: protobuf bodies are refused."""
        return None

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
STARTERS = []
# subresources that are not a view of the stored object but a connection
# elsewhere (pods/log, nodes/proxy): (resource key, name) -> Connect
CONNECTS = {}


class Connect:
    """A subresource served by serve(handler, req, verb); with takes_path,
    the rest of the path after it is req.rest (nodes/NAME/proxy/PATH)."""

    def __init__(self, verbs, serve, takes_path=False):
        self.verbs, self.serve, self.takes_path = tuple(verbs), serve, takes_path


def register(res):
    """Serve res: its group module calls this once at import."""
    RESOURCES.append(res)
    RESOURCE_BY_PATH[(res.group, res.version, res.plural)] = res
    RESOURCE_BY_KEY[res.key] = res
    return res


def connect(res_key, name, connection):
    """Serve the subresource name of the resource res_key through connection."""
    res = RESOURCE_BY_KEY[res_key]
    res.subresources = res.subresources + (name,)
    CONNECTS[(res_key, name)] = connection
    return connection


def connection_of(req):
    return CONNECTS.get((req.res.key, req.sub)) if req.sub else None


def on_start(start):
    """start(state, options): run once the server's State exists."""
    STARTERS.append(start)
    return start


def start_all(state, options):
    for start in STARTERS:
        start(state, options)


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
                 "verbs": sorted(res.verbs)}
        if res.short_names:
            entry["shortNames"] = res.short_names
        if res.categories:
            entry["categories"] = res.categories
        resources.append(entry)
        for sub in sorted(res.subresources):
            connection = CONNECTS.get((res.key, sub))
            verbs = sorted(connection.verbs) if connection else ["get", "patch", "update"]
            kind = {"log": "Pod", "proxy": "NodeProxyOptions", "exec": "PodExecOptions",
                    "attach": "PodAttachOptions",
                    "portforward": "PodPortForwardOptions"}.get(sub, res.kind) \
                if connection else res.kind
            resources.append({"name": "%s/%s" % (res.plural, sub), "singularName": "",
                              "namespaced": res.namespaced, "kind": kind,
                              "verbs": verbs})
    group_version = "%s/%s" % (group, version) if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": resources}


def api_groups():
    groups = []
    for group in sorted({r.group for r in RESOURCES if r.group}):
        name = next(r.version for r in RESOURCES if r.group == group)
        version = {"groupVersion": "%s/%s" % (group, name), "version": name}
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
        if path == "/apis/" + group["preferredVersion"]["groupVersion"]:
            return api_resource_list(group["name"], group["preferredVersion"]["version"])
    return None


# ---------------------------------------------------------------------------
# Paths of resources.


class ResourceRequest:
    def __init__(self, res, namespace, name, sub, watch_path, rest=None):
        self.res, self.namespace, self.name = res, namespace, name
        self.sub, self.watch_path, self.rest = sub, watch_path, rest
        self.ident = None  # who asks (the handler sets it)


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
    if not segs or "" in segs[:4]:
        return None
    namespace = None
    # /namespaces/NAME/status is the namespace's own subresource, not a resource.
    if segs[0] == "namespaces" and len(segs) >= 3 and segs[2] not in ("status", "finalize"):
        namespace, segs = segs[1], segs[2:]
    res = RESOURCE_BY_PATH.get((group, version, segs[0]))
    rest = None
    if len(segs) > 3:
        connection = CONNECTS.get((res.key, segs[2])) if res else None
        if connection is None or not connection.takes_path:
            return None
        segs, rest = segs[:3], "/".join(segs[3:])
    name = segs[1] if len(segs) > 1 else None
    sub = segs[2] if len(segs) > 2 else None
    if res is None or (namespace is not None and not res.namespaced):
        return None
    if (res.namespaced and namespace is None and name is not None) \
            or (sub is not None and sub not in res.subresources):
        return None
    return ResourceRequest(res, namespace, name, sub, watch_path, rest)
