# SPDX-License-Identifier: Apache-2.0
# auth: who a request is (client certificate or bearer token) and what it
# may do, from the role table below (authorize), which SubjectAccessReview
# answers from too.

import hmac
import ssl
import time

from .common import ApiError, unauthorized
from .registry import READ_VERBS

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"

# The role table, as RBAC would hold it: user -> (ClusterRole, what it
# denies among reads).  The group system:masters may do anything (the
# privileged-group authorizer, before RBAC).  A user in the table reads
# every resource, subresource and non-resource path (get, list, watch) but
# the subresources it names; anyone else may do nothing.
ROLES = {
    "viewer": ("kt:viewer", ()),
    "reader": ("kt:reader", (("", "nodes", "proxy"),)),
}

BOOTSTRAPPERS = "system:bootstrappers"
NODES = "system:nodes"
CSRS = ("certificates.k8s.io", "certificatesigningrequests")
ALL = ("get", "list", "watch", "create", "update", "patch", "delete")

# What a group may do, as the ClusterRoleBindings kubeadm makes grant it:
# group -> [(ClusterRoleBinding, ClusterRole, group, resource, subresources,
# verbs)].  Bootstrappers ask for certificates (system:node-bootstrapper)
# and have their node client CSRs approved (nodeclient); nodes also keep
# their Node, its lease, their pods' status and events, and have their own
# client CSRs renewed (selfnodeclient).  The node authorizer's restriction
# of a node to its own objects is not applied.
GROUP_ROLES = {
    BOOTSTRAPPERS: [
        ("kubeadm:kubelet-bootstrap", "system:node-bootstrapper") + CSRS
        + (("",), ("create", "get", "list", "watch")),
        ("kubeadm:node-autoapprove-bootstrap",
         "system:certificates.k8s.io:certificatesigningrequests:nodeclient") + CSRS
        + (("nodeclient",), ("create",)),
    ],
    NODES: [
        ("system:node", "system:node") + CSRS + (("",), ("create", "get", "list", "watch")),
        ("kubeadm:node-autoapprove-certificate-rotation",
         "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient") + CSRS
        + (("selfnodeclient",), ("create",)),
        ("system:node", "system:node", "", "nodes", ("", "status"), ALL),
        ("system:node", "system:node", "coordination.k8s.io", "leases", ("",), ALL),
        ("system:node", "system:node", "", "pods", ("",), ("get", "list", "watch", "delete")),
        ("system:node", "system:node", "", "pods", ("status",), ("get", "update", "patch")),
        ("system:node", "system:node", "", "events", ("",), ("create", "update", "patch")),
    ],
}


class Identity:
    def __init__(self, user, groups, via, uid=""):
        self.user, self.groups, self.via, self.uid = user, list(groups), via, uid

    @property
    def is_admin(self):
        return MASTERS in self.groups

    def may(self, verb, group="", resource="", subresource=""):
        return authorize(self.user, self.groups, verb, group, resource, subresource)[0]


def authorize(user, groups, verb, group="", resource="", subresource=""):
    """(allowed, reason) as the real server's authorizers answer: the
    privileged group first, then RBAC over ROLES.  A resource of "" is a
    non-resource path."""
    if MASTERS in groups:
        return True, ""
    for name in groups:
        for binding, cluster_role, g, r, subs, verbs in GROUP_ROLES.get(name, ()):
            if (g, r) == (group, resource) and (subresource or "") in subs and verb in verbs:
                return True, ('RBAC: allowed by ClusterRoleBinding "%s" of ClusterRole "%s"'
                              ' to Group "%s"' % (binding, cluster_role, name))
    role = ROLES.get(user)
    if role is None or verb not in READ_VERBS:
        return False, ""
    if (group, resource, subresource or "") in role[1]:
        return False, ""
    return True, ('RBAC: allowed by ClusterRoleBinding "%s" of ClusterRole "%s" to User "%s"'
                  % (user, role[0], user))


def certificate_identity(conn):
    """The verified client certificate's CN and O, if one was presented
    and is valid now (the handshake does not check the dates); every
    authenticated user is in system:authenticated too."""
    try:
        cert = conn.getpeercert()
    except (ValueError, OSError):
        return None
    if not cert:
        return None
    try:
        now = time.time()
        if not ssl.cert_time_to_seconds(cert["notBefore"]) <= now \
                <= ssl.cert_time_to_seconds(cert["notAfter"]):
            return None  # expired or not yet valid: not who it says
    except (KeyError, ValueError):
        return None
    user, groups = None, []
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    if not user:
        return None
    return Identity(user, groups + [g for g in (AUTHENTICATED,) if g not in groups], "cert")


def forbidden(ident, verb, req):
    """403 worded as the RBAC authorizer words it."""
    res = req.res
    resource = res.plural + ("/" + req.sub if req.sub else "")
    scope = ('in the namespace "%s"' % req.namespace) if req.namespace else "at the cluster scope"
    subject = ('%s "%s"' % (res.group_resource, req.name)) if req.name else res.group_resource
    message = ('%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s'
               % (subject, ident.user, verb, resource, res.group, scope))
    return ApiError(403, message, details=res.details(req.name))


def forbidden_path(ident, method, path):
    return ApiError(403, 'forbidden: User "%s" cannot %s path "%s"'
                    % (ident.user, method.lower(), path), details={})


def authenticate(conn, authorization, tokens):
    """Client certificate first, then bearer token, as the real union
    authenticator tries them.  No anonymous access: 401.  tokens is a list
    of (token, Identity)."""
    ident = certificate_identity(conn)
    if ident is not None:
        return ident
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise unauthorized()
    for known, ident in tokens:
        if hmac.compare_digest(known.encode(), token.encode()):
            return ident
    raise unauthorized()
