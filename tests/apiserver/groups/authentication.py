# SPDX-License-Identifier: Apache-2.0
# authentication: authentication.k8s.io/v1 TokenReview (create only), how
# a kubelet learns whose bearer token a request carries: answered from the
# server's own tokens (apiserver.py's admin, viewer, reader).

import hmac

from machinery.api import decode_json, media_type
from machinery.common import bad_request, unsupported_media
from machinery.objects import check_kind
from machinery.registry import Resource, register

# the audience the server's tokens are good for (kubeadm's default issuer)
API_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]


def read_review(res, handler):
    if media_type(handler.headers.get("Content-Type")) != "application/json":
        raise unsupported_media(["application/json"])
    review = decode_json(handler.body)
    check_kind(res, review)
    if not isinstance(review.get("spec"), dict):
        review["spec"] = {}
    meta = review.get("metadata") if isinstance(review.get("metadata"), dict) else {}
    meta["creationTimestamp"] = None
    review["metadata"] = meta
    return review


class TokenReviews(Resource):
    verbs = ("create",)
    stored = False

    def __init__(self):
        super().__init__("authentication.k8s.io", "tokenreviews", "tokenreview", "TokenReview",
                         False)

    def serve(self, handler, req, verb):
        review = read_review(self, handler)
        spec = review["spec"]
        token = spec.get("token")
        if not isinstance(token, str):
            raise bad_request("spec.token must be a string")
        wanted = spec.get("audiences") or []
        audiences = [a for a in wanted if a in API_AUDIENCES] if wanted else API_AUDIENCES
        ident = None
        for known, who in handler.server.state.tokens:
            if token and hmac.compare_digest(known.encode(), token.encode()):
                ident = who
        if ident is None or not audiences:
            review["status"] = {"user": {}}
        else:
            review["status"] = {"authenticated": True,
                                "user": {"username": ident.user, "groups": ident.groups},
                                "audiences": audiences}
        handler.send_reply(201, review)


register(TokenReviews())
