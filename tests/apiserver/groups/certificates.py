# SPDX-License-Identifier: Apache-2.0
# certificates: certificates.k8s.io/v1 CertificateSigningRequests, with
# their /status and /approval, and what kube-controller-manager does with
# them: the csrapproving controller (a node client certificate for a
# bootstrapper, nodeclient, or for the node itself, selfnodeclient) and the
# kubernetes.io signers, with the server's CA (machinery/signing.py).

import base64
import binascii
import copy
import os
import threading

from machinery import protobuf, signing
from machinery.auth import authorize
from machinery.common import STOP, ApiError, invalid, rfc3339, utc_now, warn
from machinery.registry import Resource, ResourceRequest, on_start, register

APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"
APPROVAL = (APPROVED, DENIED)
MANAGER = "kube-controller-manager"

# the approver's recognizers, in its order: (subresource a SubjectAccessReview
# asks about, the approval message)
RECOGNIZERS = (("selfnodeclient",
                "Auto approving self kubelet client certificate after SubjectAccessReview."),
               ("nodeclient",
                "Auto approving kubelet client certificate after SubjectAccessReview."))


def conditions_of(obj):
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    conditions = status.get("conditions")
    return [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []


def has_condition(obj, kind):
    return any(c.get("type") == kind and c.get("status", "True") == "True"
               for c in conditions_of(obj))


def request_bytes(spec):
    """spec.request's bytes ([]byte is base64 in JSON), or None."""
    value = spec.get("request") if isinstance(spec, dict) else None
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def stamp_conditions(old, new):
    """lastUpdateTime and lastTransitionTime for conditions that have none:
    now, or a transition kept from the old condition of that type and status."""
    now = rfc3339(utc_now())
    before = {(c.get("type"), c.get("status")): c for c in conditions_of(old)}
    for cond in conditions_of(new):
        cond.setdefault("status", "True")
        if not cond.get("lastUpdateTime"):
            cond["lastUpdateTime"] = now
        if not cond.get("lastTransitionTime"):
            previous = before.get((cond.get("type"), cond.get("status"))) or {}
            cond["lastTransitionTime"] = previous.get("lastTransitionTime") or now


def condition_causes(old, new):
    causes, seen = [], set()
    for i, cond in enumerate(conditions_of(new)):
        kind = cond.get("type")
        field = "status.conditions[%d]" % i
        if not kind:
            causes.append((field + ".type", "Required value"))
            continue
        if kind in (APPROVED, DENIED, FAILED):
            if kind in seen:
                causes.append((field + ".type", 'Duplicate value: "%s"' % kind))
            if cond.get("status") != "True":
                causes.append((field + ".status", 'Unsupported value: "%s": supported'
                               ' values: "True"' % cond.get("status")))
        seen.add(kind)
        if (kind == DENIED and APPROVED in seen) \
                or (kind == APPROVED and DENIED in seen):
            causes.append((field + ".type", 'Invalid value: "%s": Approved and Denied'
                           ' conditions are mutually exclusive' % kind))
    for kind in (APPROVED, DENIED, FAILED):
        if has_condition(old, kind) and not has_condition(new, kind):
            causes.append(("status.conditions", 'Forbidden: updates may not remove a'
                           ' condition of type "%s"' % kind))
    return causes


class CertificateSigningRequests(Resource):
    fields = {"spec.signerName": ""}

    def __init__(self):
        super().__init__("certificates.k8s.io", "certificatesigningrequests",
                         "certificatesigningrequest", "CertificateSigningRequest", False,
                         ["status", "approval"], ["csr"])

    def from_protobuf(self, message):
        """certificates.k8s.io/v1 CertificateSigningRequest: metadata and
        status (the spec never changes after create)."""
        found = protobuf.fields(message)
        obj = {"metadata": protobuf.object_meta(found.get(1, [b""])[-1])}
        status = protobuf.fields(found.get(3, [b""])[-1])
        conditions = []
        for data in status.get(1, []):
            cond = protobuf.fields(data)
            entry = {}
            for number, key in ((1, "type"), (6, "status"), (2, "reason"), (3, "message")):
                value = protobuf.text(cond, number)
                if value:
                    entry[key] = value
            for number, key in ((4, "lastUpdateTime"), (5, "lastTransitionTime")):
                value = protobuf.time_of(cond, number)
                if value:
                    entry[key] = value
            conditions.append(entry)
        obj["status"] = {}
        if conditions:
            obj["status"]["conditions"] = conditions
        if status.get(2) and status[2][-1]:
            obj["status"]["certificate"] = base64.b64encode(status[2][-1]).decode()
        return obj

    def admit_create(self, obj, ident):
        """Who asks is the server's to say: spec.username, uid, groups and
        extra come from the request's identity, whatever was sent."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        if ident is not None:
            spec["username"] = ident.user
            if ident.uid:
                spec["uid"] = ident.uid
            spec["groups"] = list(ident.groups)

    def on_create(self, obj):
        obj["status"] = {}

    def causes(self, obj):
        spec = obj.get("spec") or {}
        causes = []
        pem = request_bytes(spec)
        if pem is None:
            causes.append(("spec.request", "Required value"
                           if not spec.get("request") else "Invalid value: not base64"))
        else:
            try:
                signing.parse_request(pem)
            except ValueError as err:
                causes.append(("spec.request", "Invalid value: []byte{...}: %s" % err))
        signer = spec.get("signerName")
        if not signer:
            causes.append(("spec.signerName", "Required value"))
        elif signer == signing.LEGACY_UNKNOWN:
            causes.append(("spec.signerName", 'Invalid value: "%s": the legacy signerName'
                           ' is not allowed via this API version' % signer))
        elif not isinstance(signer, str) or "/" not in signer.strip("/"):
            causes.append(("spec.signerName", 'Invalid value: "%s": must be a fully'
                           ' qualified domain and path of the form'
                           " 'example.com/signer-name'" % signer))
        usages = spec.get("usages")
        if not usages:
            causes.append(("spec.usages", "Required value"))
        elif not isinstance(usages, list):
            causes.append(("spec.usages", "Invalid value: must be a list"))
        else:
            seen = set()
            for i, usage in enumerate(usages):
                if usage not in signing.USAGES:
                    causes.append(("spec.usages[%d]" % i, 'Unsupported value: "%s":'
                                   ' supported values: %s' % (usage, ", ".join(
                                       '"%s"' % u for u in sorted(signing.USAGES)))))
                elif usage in seen:
                    causes.append(("spec.usages[%d]" % i, 'Duplicate value: "%s"' % usage))
                if isinstance(usage, str):
                    seen.add(usage)
        seconds = spec.get("expirationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)
                                    or seconds < 600):
            causes.append(("spec.expirationSeconds", "Invalid value: %s: may not specify a"
                           " duration less than 600 seconds (10 minutes)" % seconds))
        return causes + condition_causes({}, obj)

    def split_update(self, old, new, subresource):
        """The spec never changes after create.  The main resource keeps the
        status; /status writes the certificate and conditions but Approved
        and Denied; /approval writes only Approved and Denied."""
        new["spec"] = copy.deepcopy(old.get("spec"))
        old_status = old.get("status") or {}
        sent = new.get("status") if isinstance(new.get("status"), dict) else {}
        if subresource is None:
            new["status"] = copy.deepcopy(old_status)
            return True
        approval = subresource == "approval"
        status = copy.deepcopy(old_status if approval else sent)
        conditions = [copy.deepcopy(c) for c in conditions_of(old)
                      if (c.get("type") in APPROVAL) != approval]
        conditions += [c for c in conditions_of(new) if (c.get("type") in APPROVAL) == approval]
        status.pop("conditions", None)
        if conditions:
            status["conditions"] = conditions
        new["status"] = status
        stamp_conditions(old, new)
        causes = condition_causes(old, new)
        if subresource == "status":
            causes += self.certificate_causes(old, new)
        if causes:
            raise invalid(self, old["metadata"]["name"], causes)
        return True

    def certificate_causes(self, old, new):
        before = (old.get("status") or {}).get("certificate")
        after = new["status"].get("certificate")
        if before and after != before:
            return [("status.certificate", "Forbidden: updates may not modify existing"
                     " certificate content")]
        if after and not before:
            if not has_condition(new, APPROVED):
                return [("status.certificate", "Forbidden: certificate may only be set"
                         " if the Approved condition is true")]
            if has_condition(new, FAILED):
                return [("status.certificate", "Forbidden: certificate may not be set"
                         " if the Failed condition is true")]
        return []


CSRS = register(CertificateSigningRequests())


# ---------------------------------------------------------------------------
# kube-controller-manager's part: approve, then sign.


class Controller:
    """Follows the store's history as an informer would and handles every
    CSR written, in the order written: the approver first, then the signer.  Each step writes the
    object through the API (/approval, /status), so watches see the
    Approved condition and then the certificate as separate MODIFIED
    events."""

    def __init__(self, state, authority):
        self.state, self.authority = state, authority

    def run(self):
        store = self.state.store
        seen = None
        while not STOP.is_set():
            names = {}  # in the order written: a dict keeps it
            with store.cond:
                events = None if seen is None else store.events_after(seen)
                if events == []:
                    store.cond.wait(0.5)
                    events = store.events_after(seen)
                if events is None:
                    # the start, a reset or a compaction: everything there is
                    seen, items = store.list(CSRS, None, lambda obj: True)
                    names = dict.fromkeys(item["metadata"]["name"] for item in items)
                    events = []
                for event in events:
                    seen = event.rv
                    if event.resource == CSRS.key and event.type != "DELETED":
                        names.setdefault(event.object["metadata"]["name"])
            for name in names:
                try:
                    self.handle(name)
                except ApiError:
                    pass  # gone or changed meanwhile: its next event brings it back
                except Exception as err:  # noqa: BLE001: the controller must go on
                    warn("certificate controller: %s: %s" % (name, err))

    def write(self, name, sub, change):
        req = ResourceRequest(CSRS, None, name, sub, False)
        req.manager = MANAGER
        self.state.api.guaranteed_update(req, change, {})

    def handle(self, name):
        csr = self.state.store.get(CSRS, None, name)
        spec = csr.get("spec") or {}
        approved, denied = has_condition(csr, APPROVED), has_condition(csr, DENIED)
        if (csr.get("status") or {}).get("certificate") or has_condition(csr, FAILED) \
                or denied:
            return
        try:
            req = signing.parse_request(request_bytes(spec) or b"")
        except ValueError:
            return
        usages = spec.get("usages") or []
        if not approved:
            self.approve(csr, spec, req, usages)
            return
        check = signing.SIGNER_CHECKS.get(spec.get("signerName"))
        if check is None:
            return  # not a signer of ours: someone else's to sign
        problem = check(req, usages)
        if problem is not None:
            self.write(name, "status", lambda cur: add_condition(
                cur, FAILED, "SignerValidationFailure", problem))
            return
        pem = self.authority.sign(req, usages, spec.get("expirationSeconds"), utc_now())

        def issue(cur):
            cur.setdefault("status", {})["certificate"] = base64.b64encode(pem).decode()
            return cur
        self.write(name, "status", issue)

    def approve(self, csr, spec, req, usages):
        """The csrapproving controller: a node client certificate request
        whose requester may create the recognizer's subresource."""
        if spec.get("signerName") != signing.KUBELET_CLIENT \
                or signing.kubelet_client_problem(req, usages) is not None:
            return
        for subresource, message in RECOGNIZERS:
            if subresource == "selfnodeclient" and spec.get("username") != req.common_name:
                continue
            allowed, _ = authorize(spec.get("username") or "", spec.get("groups") or [],
                                   "create", CSRS.group, CSRS.plural, subresource)
            if allowed:
                self.write(csr["metadata"]["name"], "approval", lambda cur: add_condition(
                    cur, APPROVED, "AutoApproved", message))
                return


def add_condition(obj, kind, reason, message):
    status = obj.setdefault("status", {})
    if not isinstance(status, dict):
        status = obj["status"] = {}
    now = rfc3339(utc_now())
    status.setdefault("conditions", []).append({
        "type": kind, "status": "True", "reason": reason, "message": message,
        "lastUpdateTime": now, "lastTransitionTime": now})
    return obj


@on_start
def start_controller(state, options):
    authority = signing.Authority(os.path.join(state.directory, "ca.crt"),
                                  os.path.join(state.directory, "ca.key"),
                                  getattr(options, "cert_lifetime_seconds", 365 * 86400),
                                  getattr(options, "cert_backdate_seconds", 300))
    thread = threading.Thread(target=Controller(state, authority).run, daemon=True,
                              name="certificate-controller")
    thread.start()
