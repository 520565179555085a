#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A stand-in for kube-apiserver on 127.0.0.1, for the test suite and the demo.
"""Local Kubernetes API server for tests.

Serving:

    apiserver.py --dir DIR [--port N] [--pki CACHE] [--bookmark-interval SECONDS]
                 [--metric-resolution SECONDS] [--kubelet-port N]
                 [--kubelet-certificate-authority FILE] [--cert-lifetime DURATION]
                 [--cert-backdate DURATION]

makes a CA and certificates in DIR with the openssl CLI, listens on
https://127.0.0.1:PORT (port 0, the default, picks a free one) and writes:

    DIR/pid              our process id (written first)
    DIR/ca.crt ca.key    the CA; server.crt/key for 127.0.0.1 and localhost
    DIR/admin.crt/.key   client certificate CN=admin, O=system:masters
    DIR/viewer.crt/.key  client certificate CN=viewer (read-only)
    DIR/kubelet-client.crt/.key
                         the server's own client certificate towards kubelets:
                         CN=kube-apiserver-kubelet-client, O=system:masters
    DIR/port DIR/url     the port, and https://127.0.0.1:PORT
    DIR/token            admin bearer token (no trailing newline)
    DIR/viewer-token     read-only bearer token (no trailing newline)
    DIR/reader-token     read-only but nodes/proxy (no trailing newline)
    DIR/bootstrap-token  a bootstrap token ID.SECRET ([a-z0-9]{6}.[a-z0-9]{16},
                         no trailing newline): user system:bootstrap:ID, groups
                         system:bootstrappers and system:authenticated
    DIR/kubeconfig       context "local", admin token
    DIR/kubeconfig-cert  context "local", admin client certificate
    DIR/kubeconfig-viewer context "local", read-only token
    DIR/kubeconfig-reader context "local", the reader's token
    DIR/bootstrap-kubeconfig
                         context "local", the bootstrap token (what a kubelet's
                         --bootstrap-kubeconfig holds)
    DIR/requests.log     one JSON line per request (not the /_ admin ones); its
                         "conn" (the client's address and port) tells one TLS
                         connection from another
    DIR/ready            created last, once the server is listening

With --pki CACHE the CA and certificates are copied from CACHE (made there
first when CACHE does not exist), so that many servers start fast.

SIGTERM or SIGINT stops it cleanly. Problems go to stderr, nothing else does.

It serves nodes (and nodes/status), pods (and pods/status), namespaces and
coordination.k8s.io/v1 leases from an in-memory store with resourceVersions,
watches, the three patch types, discovery and /openapi/v2 (the file
openapi-v2.json next to this script, served as-is, or in protobuf to the
kubectl before 1.24 that asks only for that, and /openapi/v3 derived from
it).  Strategic merge patches are applied by `kubectl patch --local`,
the reference implementation, so that tests which go through this server
check the project against upstream.  KT_KUBECTL overrides the kubectl found
on PATH.

It also does what kube-apiserver does towards kubelets: pods/NAME/log and
nodes/NAME/proxy/PATH are forwarded to the node's kubelet with
DIR/kubelet-client.crt, metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics
are computed from the kubelets' /metrics/resource, scraped every
--metric-resolution seconds (default 15), and TokenReview and
SubjectAccessReview are answered from its tokens and role table.  README
beside this file says how, and who may do what.

certificates.k8s.io/v1 CertificateSigningRequests (and their /approval and
/status) are approved and signed as kube-controller-manager does: node
client certificates auto-approved for bootstrappers and for a node renewing
its own, the kubernetes.io/kube-apiserver-client-kubelet, kubelet-serving and
kube-apiserver-client signers signing with DIR/ca.crt, for --cert-lifetime
(a Go duration, default 8760h) at most, from --cert-backdate (default 5m)
before the signing.  What the CA issues authenticates to
this server as its CN, in the groups of its O.

Admin endpoints, for the admin identity only and never logged:

    POST   /_faults    add a fault rule (JSON object, or an array of them)
    GET    /_faults    list active rules
    DELETE /_faults    remove all rules
    POST   /_reset     empty the store back to the initial namespaces
    POST   /_compact   forget the watch history so far (etcd's compaction):
                       a watch from an older resourceVersion gets 410 Gone
    POST   /_drop-watches
                       close every open watch connection now, without the
                       end of its chunked body (as a dropped connection
                       looks); answers {"dropped": N} once they are closed
    GET    /_requests  the request log as a JSON array
    DELETE /_requests  empty the request log

A fault rule is a JSON object; every key is optional but one effect is needed:

    {"method": "PUT",           only this method
     "path": "/leases/vk-1$",   a regex searched for in the path (re.search)
     "query": "watch=true",     a regex searched for in the query string
     "status": 503,             answer this with a Status body (or "body")
     "retryAfter": 1,           ... and a Retry-After header
     "message": "...",          ... the Status message
     "body": {...},             ... this body instead (a string is sent as text)
     "latencyMs": 200,          wait this long first, then go on as told
     "drop": true,              close the connection without a reply
     "hang": true,              hold the request, unanswered, until the client
                                goes away (60 s at most), then close
     "dropAfterEvents": 2,      a watch: serve it, but close the connection
                                (as "drop") once it has sent that many
                                events (0: right after the reply's headers)
     "trickleMs": 200,          a watch: after the reply's headers send one
                                byte of an event every that many ms, never
                                a whole one, until the client goes away
     "count": 1}                how many matches it applies to; -1 = forever

Rules apply to every path except the admin ones, after authentication, in
the order added: the first that matches counts the request.

Client commands, which call those endpoints with DIR's url, token and CA:

    apiserver.py fault --dir DIR '<json rule>'
    apiserver.py clear-faults --dir DIR
    apiserver.py reset --dir DIR
    apiserver.py requests --dir DIR
    apiserver.py compact --dir DIR
    apiserver.py drop-watches --dir DIR

Watches follow the real server: a resourceVersion older than the history
kept (HISTORY_LIMIT events, or older than the last /_compact) gets an
ERROR event with a 410 Expired Status; timeoutSeconds ends the watch
cleanly; with allowWatchBookmarks=true a BOOKMARK carrying the latest
resourceVersion goes out every --bookmark-interval seconds (default 60) and
once 2 s before the timeout, as the watch cache sends them.

Behaviour worth knowing when writing tests (all as the real server does):

  - resourceVersions are one global counter; the three initial namespaces
    take 1 to 3, so the first object a test creates gets "4".
  - A write that changes nothing keeps the resourceVersion and makes no
    watch event.
  - A write to the main resource of nodes and pods keeps the old status; a
    write to /status keeps the old spec but takes metadata changes (labels,
    annotations), which virtual-kubelet relies on.
  - Objects carry what Go's encoding always writes: spec and status as {},
    a node's zero nodeInfo and daemonEndpoints.  Pods get the usual defaults
    (restartPolicy, terminationGracePeriodSeconds 30, imagePullPolicy, probe
    periods...), status.phase Pending and qosClass when those are absent.
  - DELETE of a pod bound to a node with a grace period over 0 only sets
    deletionTimestamp and deletionGracePeriodSeconds; a later DELETE with
    gracePeriodSeconds 0 removes it.  Objects with finalizers wait for them.
  - List items carry no kind or apiVersion; watch events' objects do.
  - metadata.managedFields is kept for updates (tests/apiserver/managedfields.py):
    the manager is ?fieldManager= or the User-Agent's program name.
  - Lists are paged with limit and continue.  A continue token is good
    only while nothing was written since the first page (the real server
    keeps its snapshot until etcd compacts it): after a write the next page
    is 410 Expired, as an expired token is.
  - Not served: Table output, server-side apply, field validation
    (fieldValidation is accepted and ignored), deletecollection, protobuf.

The code is one module per API group (groups/) on shared machinery
(machinery/): see README beside this file.

Python 3 standard library only, plus the openssl and kubectl programs; the
CSR signers also need Python's cryptography package (python3-cryptography).
"""

import argparse
import json
import os
import secrets
import signal
import ssl
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# noqa: E402 below: the modules are beside this file, found through HERE
import groups  # noqa: E402,F401  (registers every resource served)
from machinery.auth import Identity  # noqa: E402
from machinery.common import BOOKMARK_INTERVAL, STOP, warn  # noqa: E402
from machinery.signing import parse_duration  # noqa: E402
from machinery.handler import State, TLSServer  # noqa: E402
from machinery.registry import start_all  # noqa: E402
from machinery.pki import (copy_pki, make_pki, remove_quietly, tls_context,  # noqa: E402
                           write_client_files, write_file)


# a bootstrap token's id and secret: [a-z0-9]{6}.[a-z0-9]{16}
BOOTSTRAP_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def serve(args):
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)
    remove_quietly(os.path.join(directory, "ready"))
    write_file(os.path.join(directory, "pid"), "%d\n" % os.getpid())
    if args.pki:
        copy_pki(directory, args.pki)
    else:
        make_pki(directory)
    admin_token, viewer_token, reader_token = (secrets.token_hex(16) for _ in range(3))
    bootstrap_id, bootstrap_secret = (
        "".join(secrets.choice(BOOTSTRAP_ALPHABET) for _ in range(n)) for n in (6, 16))
    bootstrap_token = "%s.%s" % (bootstrap_id, bootstrap_secret)
    tokens = [(admin_token, Identity("admin", ["system:masters", "system:authenticated"],
                                     "token")),
              (viewer_token, Identity("viewer", ["system:authenticated"], "token")),
              (reader_token, Identity("reader", ["system:authenticated"], "token")),
              (bootstrap_token, Identity("system:bootstrap:" + bootstrap_id,
                                         ["system:bootstrappers", "system:authenticated"],
                                         "token"))]
    state = State(directory, tokens, args.bookmark_interval)
    start_all(state, args)
    server = TLSServer(("127.0.0.1", args.port), state, tls_context(directory))
    write_client_files(directory, server.server_address[1], admin_token, viewer_token,
                       reader_token, bootstrap_token)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: STOP.set())
    write_file(os.path.join(directory, "ready"), "")
    while not STOP.wait(1):
        pass
    server.shutdown()
    server.server_close()
    state.kubectl.stop()
    remove_quietly(os.path.join(directory, "ready"))
    remove_quietly(os.path.join(directory, "pid"))
    return 0


# ---------------------------------------------------------------------------
# Client commands for tests: talk to a running server through DIR's files.

CLIENT_COMMANDS = {
    "fault": ("POST", "/_faults", True),
    "clear-faults": ("DELETE", "/_faults", False),
    "reset": ("POST", "/_reset", False),
    "requests": ("GET", "/_requests", False),
    "compact": ("POST", "/_compact", False),
    "drop-watches": ("POST", "/_drop-watches", False),
}


def read_text(directory, name):
    with open(os.path.join(directory, name)) as src:
        return src.read().strip()


def client_main(argv):
    command = argv[0]
    method, path, needs_body = CLIENT_COMMANDS[command]
    parser = argparse.ArgumentParser(prog="apiserver.py " + command)
    parser.add_argument("--dir", required=True, help="the server's directory")
    if needs_body:
        parser.add_argument("rule", help="a fault rule as JSON")
    args = parser.parse_args(argv[1:])
    body = None
    if needs_body:
        try:
            json.loads(args.rule)
        except ValueError as err:
            warn("the fault rule is not valid JSON: %s" % err)
            return 2
        body = args.rule.encode()
    # Imported here: only these commands need them, and the server starts faster.
    import urllib.error
    import urllib.request
    request = urllib.request.Request(read_text(args.dir, "url") + path, data=body,
                                     method=method)
    request.add_header("Authorization", "Bearer " + read_text(args.dir, "token"))
    if body is not None:
        request.add_header("Content-Type", "application/json")
    context = ssl.create_default_context(cafile=os.path.join(args.dir, "ca.crt"))
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as reply:
            sys.stdout.write(reply.read().decode())
        return 0
    except urllib.error.HTTPError as err:
        warn("%s %s: %s" % (method, path, err.read().decode("utf-8", "replace").strip()))
    except (urllib.error.URLError, OSError) as err:
        warn("%s %s: %s" % (method, path, err))
    return 1


def main(argv):
    if argv and argv[0] in CLIENT_COMMANDS:
        return client_main(argv)
    parser = argparse.ArgumentParser(
        prog="apiserver.py", description="A local stand-in for kube-apiserver, for tests.")
    parser.add_argument("--dir", required=True, help="where certificates, tokens,"
                        " kubeconfigs and the request log go")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1"
                        " (default 0: any free port)")
    parser.add_argument("--pki", help="take the CA and certificates from this directory,"
                        " making them there first if it does not exist")
    parser.add_argument("--bookmark-interval", type=float, default=BOOKMARK_INTERVAL,
                        help="seconds between a watch's bookmarks (default 60)")
    parser.add_argument("--metric-resolution", type=float, default=15.0,
                        help="seconds between scrapes of the kubelets' /metrics/resource"
                        " (default 15, as metrics-server's)")
    parser.add_argument("--kubelet-port", type=int, default=10250,
                        help="the kubelet port of a node that publishes none (default 10250)")
    parser.add_argument("--kubelet-certificate-authority",
                        help="verify kubelets' serving certificates against this CA"
                        " (default: not verified, as kube-apiserver without the option)")
    parser.add_argument("--cert-lifetime", default="8760h", metavar="DURATION",
                        help="the longest certificate the CSR signers issue, a Go"
                        " duration such as 30s or 1h (default 8760h, as"
                        " kube-controller-manager's --cluster-signing-duration)")
    parser.add_argument("--cert-backdate", default="5m", metavar="DURATION",
                        help="how long before its signing a certificate starts (default"
                        " 5m, as kube-controller-manager's signers; 0s for rotation tests"
                        " that read a lifetime from notBefore)")
    args = parser.parse_args(argv)
    if not args.metric_resolution > 0:
        parser.error("--metric-resolution must be a number of seconds over 0")
    try:
        args.cert_lifetime_seconds = parse_duration(args.cert_lifetime)
    except ValueError as err:
        parser.error("--cert-lifetime: %s" % err)
    if not args.cert_lifetime_seconds >= 1:
        parser.error("--cert-lifetime must be at least 1s")
    try:
        args.cert_backdate_seconds = parse_duration(args.cert_backdate)
    except ValueError as err:
        parser.error("--cert-backdate: %s" % err)
    try:
        return serve(args)
    except (OSError, RuntimeError, ValueError) as err:
        warn("cannot start: %s" % err)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

