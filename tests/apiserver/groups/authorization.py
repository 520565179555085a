# SPDX-License-Identifier: Apache-2.0
# authorization: authorization.k8s.io/v1 SubjectAccessReview (create only),
# how a kubelet asks whether a user may reach it: answered from the role
# table the server itself obeys (machinery/auth.py).

from machinery.auth import authorize
from machinery.common import ApiError
from machinery.registry import Resource, register

from .authentication import read_review


def invalid_review(res, causes):
    text = ", ".join("%s: %s" % c for c in causes)
    if len(causes) > 1:
        text = "[%s]" % text
    return ApiError(422, '%s.%s "" is invalid: %s' % (res.kind, res.group, text), details={
        "group": res.group, "kind": res.kind, "causes": [
            {"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]})


class SubjectAccessReviews(Resource):
    verbs = ("create",)
    stored = False

    def __init__(self):
        super().__init__("authorization.k8s.io", "subjectaccessreviews", "subjectaccessreview",
                         "SubjectAccessReview", False)

    def serve(self, handler, req, verb):
        review = read_review(self, handler)
        spec = review["spec"]
        resource, path = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        user, groups = spec.get("user") or "", spec.get("groups") or []
        causes = []
        if (resource is None) == (path is None):
            causes.append(("spec.resourceAttributes", "Invalid value: \"null\": exactly one"
                           " of nonResourceAttributes or resourceAttributes must be"
                           " specified"))
        if not user and not groups:
            causes.append(("spec.user", "Invalid value: \"\": at least one of user or group"
                           " must be specified"))
        if causes or not all(isinstance(x, str) for x in groups) \
                or not isinstance(resource or path, dict):
            raise invalid_review(self, causes or [("spec", "Invalid value: malformed")])
        attrs = resource if resource is not None else path
        verb = attrs.get("verb") or ""
        if resource is not None:
            allowed, reason = authorize(user, groups, verb, attrs.get("group") or "",
                                        attrs.get("resource") or "",
                                        attrs.get("subresource") or "")
        else:
            allowed, reason = authorize(user, groups, verb)
        status = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        review["status"] = status
        handler.send_reply(201, review)


register(SubjectAccessReviews())
