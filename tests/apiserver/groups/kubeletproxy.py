# SPDX-License-Identifier: Apache-2.0
# kubeletproxy: what kube-apiserver forwards to a node's kubelet, with its
# own client certificate (kubelet-client.crt): pods/NAME/log (kubectl logs)
# to /containerLogs, nodes/NAME/proxy/PATH (kubectl get --raw) to PATH, and
# the streaming sessions pods/NAME/exec, attach and portforward (kubectl exec,
# attach, port-forward) to /exec, /attach and /portForward, upgraded as the
# kubelet upgrades them (SPDY/3.1 or WebSocket) and then spliced.

from urllib.parse import parse_qsl, quote, urlencode

from machinery.auth import forbidden
from machinery.common import ApiError, bad_request, parse_rfc3339
from machinery.kubelet import (KubeletClient, relay, splice, splice_tunnel, upgrade,
                               websocket_accept)
from machinery.registry import Connect, connect, on_start

CLIENT = {}  # "kubelet": the KubeletClient, made at start-up

# the log options kubectl sends, in the order Go's url.Values encodes them
# (sorted): booleans, then integers and the one time
BOOL_OPTIONS = ("follow", "previous", "timestamps")
INT_OPTIONS = {"tailLines": (0, "must be greater than or equal to 0"),
               "limitBytes": (1, "must be greater than 0"),
               "sinceSeconds": (1, "must be greater than 0")}
# hop-by-hop headers a proxy never forwards, and ours to set
SKIP_HEADERS = ("connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
                "trailer", "upgrade", "content-length", "authorization", "host")


@on_start
def start(state, options):
    CLIENT["kubelet"] = KubeletClient(state.directory, options.kubelet_port,
                                      options.kubelet_certificate_authority)


def query_bool(query, key):
    value = query.get(key)
    if value in (None, "", "false", "0", "False"):
        return False
    if value in ("true", "1", "True"):
        return True
    raise bad_request('invalid value for %s: "%s"' % (key, value))


def log_params(name, query):
    """The kubelet's query string for PodLogOptions, as LogLocation
    builds it, after the options' validation."""
    params, causes = {}, []
    for key in BOOL_OPTIONS:
        if query_bool(query, key):
            params[key] = "true"
    for key, (least, why) in INT_OPTIONS.items():
        value = query.get(key)
        if value in (None, ""):
            continue
        try:
            number = int(value)
        except ValueError:
            raise bad_request('invalid value for %s: "%s"' % (key, value))
        if number < least:
            causes.append((key, "Invalid value: %d: %s" % (number, why)))
        params[key] = str(number)
    since_time = query.get("sinceTime")
    if since_time:
        try:
            moment = parse_rfc3339(since_time)
        except ValueError:
            raise bad_request('invalid value for sinceTime: "%s"' % since_time)
        params["sinceTime"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        if "sinceSeconds" in params:
            causes.append(("", "Forbidden: at most one of `sinceTime` or `sinceSeconds`"
                           " may be specified"))
    if causes:
        text = ", ".join(("%s: %s" % c) if c[0] else c[1] for c in causes)
        if len(causes) > 1:
            text = "[%s]" % text
        raise ApiError(422, 'PodLogOptions "%s" is invalid: %s' % (name, text),
                       details={"name": name, "kind": "PodLogOptions", "causes": [
                           {"reason": "FieldValueInvalid", "message": m, "field": f}
                           for f, m in causes]})
    return urlencode(sorted(params.items()))


def pod_container(pod, container):
    """The container a log request names, or the only one, as
    validateContainer picks it."""
    spec = pod.get("spec") or {}
    names = [c.get("name") for key in ("initContainers", "containers", "ephemeralContainers")
             for c in spec.get(key) or [] if isinstance(c, dict)]
    name = pod["metadata"]["name"]
    if not container:
        containers = spec.get("containers") or []
        if len(containers) == 1:
            return containers[0].get("name")
        if not containers:
            raise bad_request("a container name must be specified for pod %s" % name)
        raise bad_request("a container name must be specified for pod %s, choose one of: [%s]"
                          % (name, " ".join(names)))
    if container not in names:
        raise bad_request("container %s is not valid for pod %s" % (container, name))
    return container


def kubelet_error(response, name):
    """A kubelet's reply outside 200-206 as the real server's response
    checker turns it into a Status."""
    body = response.read(50000).decode("utf-8", "replace")
    code = response.status
    details = {"name": name, "kind": "pods/log"}
    if code == 500:
        return ApiError(500, "Internal error occurred: " + body, details={"causes": [
            {"message": body}]})
    if code == 400:
        return ApiError(400, body)
    message = {404: "the server could not find the requested resource",
               401: "the server has asked for the client to provide credentials",
               403: body,
               405: "the server does not allow this method on the requested resource",
               503: "the server is currently unable to handle the request",
               504: "the server was unable to return a response in the time allotted",
               429: "the server has received too many requests and has asked us to try"
                    " again later"}.get(code)
    reason = {404: "NotFound", 401: "Unauthorized", 403: "Forbidden", 405: "MethodNotAllowed",
              503: "ServiceUnavailable", 504: "Timeout", 429: "TooManyRequests"}.get(code, "")
    if message is None:
        message = "the server responded with the status code %d but did not return more" \
                  " information" % code
        if code > 500:
            reason = "InternalError"
            message = ('an error on the server ("%s") has prevented the request from'
                       ' succeeding' % body.replace("\\", "\\\\").replace('"', '\\"'))
    return ApiError(code, "%s ( pods/log %s)" % (message, name), reason=reason,
                    details=details)


def serve_log(handler, req, verb):
    state, query = handler.server.state, handler.query
    pod = state.store.get(req.res, req.namespace, req.name)
    container = pod_container(pod, query.get("container"))
    params = log_params(req.name, query)
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        # not scheduled: no location, an empty log
        return handler.send_reply(200, b"", "text/plain")
    client = CLIENT["kubelet"]
    host, port = client.location(client.node(state.store, node_name))
    target = "/containerLogs/%s/%s/%s" % (quote(req.namespace, safe=""),
                                          quote(req.name, safe=""), quote(container, safe=""))
    if params:
        target += "?" + params
    conn, response = client.open(host, port, "GET", target)
    if not 200 <= response.status <= 206:
        try:
            raise kubelet_error(response, req.name)
        finally:
            conn.close()
    handler.start_stream(200, "text/plain")
    relay(handler, conn, response)


def serve_proxy(handler, req, verb):
    """Any method to the kubelet's PATH, the reply passed through."""
    state = handler.server.state
    client = CLIENT["kubelet"]
    host, port = client.location(client.node(state.store, req.name))
    marker = "/nodes/%s/proxy" % req.name
    path = handler.url_path[handler.url_path.find(marker) + len(marker):] or "/"
    if not path.startswith("/"):
        path = "/" + path
    target = path + ("?" + handler.raw_query if handler.raw_query else "")
    headers = [(key, value) for key, value in handler.headers.items()
               if key.lower() not in SKIP_HEADERS]
    conn, response = client.open(host, port, handler.method, target, handler.body, headers,
                                 url_error=False)
    handler.record(response.status)
    handler.started = True
    handler.send_response(response.status)
    for key, value in response.getheaders():
        if key.lower() not in SKIP_HEADERS and key.lower() not in ("date", "server"):
            handler.send_header(key, value)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    relay(handler, conn, response)


# what an upgrade request carries to the kubelet: the protocols asked for
UPGRADE_HEADERS = ("upgrade", "connection", "x-stream-protocol-version", "user-agent")
# what a port-forward WebSocket asks for: SPDY carried in its messages
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
# subresource -> the kubelet's path, and whether it names a container
STREAMS = {"exec": ("/exec", True), "attach": ("/attach", True),
           "portforward": ("/portForward", False)}


def stream_target(handler, req):
    """The kubelet's path and query for a session, as ExecLocation,
    AttachLocation and PortForwardLocation find them; with the node."""
    state = handler.server.state
    pod = state.store.get(req.res, req.namespace, req.name)
    path, names_container = STREAMS[req.sub]
    target = "%s/%s/%s" % (path, quote(req.namespace, safe=""), quote(req.name, safe=""))
    if names_container:
        container = pod_container(pod, handler.query.get("container"))
        target += "/" + quote(container, safe="")
    node_name = (pod.get("spec") or {}).get("nodeName")
    if not node_name:
        raise bad_request("pod %s does not have a host assigned" % req.name)
    query = kubelet_stream_query(req.sub, handler.raw_query)
    if query:
        target += "?" + query
    return target, node_name


def kubelet_stream_query(sub, raw_query):
    """The kubelet's query for a session, as the real server builds it
    from the options kubectl sent: the streams as input, output, error and
    tty ("1"), the command's words, a port-forward's ports; keys sorted as
    Go's url.Values encodes them."""
    pairs = parse_qsl(raw_query, keep_blank_values=True)
    params = []
    if sub == "portforward":
        params += [("port", value) for key, value in pairs if key == "ports"]
    else:
        values = dict(pairs)
        for key, kubelet_key in (("stderr", "error"), ("stdin", "input"), ("stdout", "output"),
                                 ("tty", "tty")):
            if query_bool(values, key):
                params.append((kubelet_key, "1"))
        if sub == "exec":
            params = [("command", value) for key, value in pairs if key == "command"] + params
    return urlencode(params)


def upgrade_protocol(answer):
    """What the request log says a 101 used: (upgrade, subprotocol)."""
    upgraded = answer.headers.get("Upgrade", "")
    if upgraded.lower() == "websocket":
        return "websocket", answer.headers.get("Sec-WebSocket-Protocol", "")
    return upgraded, answer.headers.get("X-Stream-Protocol-Version", "")


def serve_stream(handler, req, verb):
    """The request sent on to the node's kubelet as it came (its Upgrade,
    Connection and protocol headers); after the kubelet's 101 the two
    connections spliced until either ends, anything else passed back as
    the kubelet wrote it, as the upgrade-aware proxy does."""
    state = handler.server.state
    if verb == "get" and not handler.ident.may("create", "", "pods", req.sub):
        # a WebSocket session is a GET, and needs create as the POST does
        raise forbidden(handler.ident, "create", req)
    target, node_name = stream_target(handler, req)
    client = CLIENT["kubelet"]
    host, port = client.location(client.node(state.store, node_name))
    if req.sub == "portforward" and is_tunnel(handler.headers):
        return serve_tunnel(handler, client, host, port, target)
    headers = [(key, value) for key, value in handler.headers.items()
               if key.lower() in UPGRADE_HEADERS or key.lower().startswith("sec-websocket-")]
    answer = upgrade(client, host, port, handler.method, target, headers)
    handler.started = True
    handler.close_connection = True
    try:
        if answer.status != 101:
            return pass_back(handler, answer)
        upgraded, protocol = upgrade_protocol(answer)
        handler.record(101, {"upgrade": upgraded, "protocol": protocol})
        handler.wfile.write(answer.head)
        handler.wfile.flush()
        handler.connection.settimeout(None)
        splice(handler.rfile, handler.connection, answer.reader, answer.sock)
    except (OSError, ValueError):
        pass
    finally:
        answer.reader.close()
        answer.sock.close()


def is_tunnel(headers):
    """A WebSocket that asks for SPDY port-forwarding inside it."""
    protocols = [p.strip() for p in headers.get("Sec-WebSocket-Protocol", "").split(",")]
    return headers.get("Upgrade", "").lower() == "websocket" and TUNNEL_PROTOCOL in protocols


def serve_tunnel(handler, client, host, port, target):
    """A port-forward WebSocket as the real server takes it: a SPDY/3.1
    upgrade to the kubelet, then, after its 101, the client's WebSocket
    accepted and the SPDY session carried in its binary messages.  The
    kubelet's refusal is passed back as it is."""
    headers = [("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1"),
               ("X-Stream-Protocol-Version", "portforward.k8s.io")]
    agent = handler.headers.get("User-Agent")
    if agent:
        headers.append(("User-Agent", agent))
    answer = upgrade(client, host, port, "POST", target, headers)
    handler.started = True
    handler.close_connection = True
    try:
        if answer.status != 101:
            return pass_back(handler, answer)
        handler.record(101, {"upgrade": "websocket", "protocol": TUNNEL_PROTOCOL,
                             "kubelet": "%s %s" % upgrade_protocol(answer)})
        handler.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                             "Sec-WebSocket-Protocol: %s\r\n\r\n"
                             % (websocket_accept(handler.headers.get("Sec-WebSocket-Key", "")),
                                TUNNEL_PROTOCOL)).encode("latin-1"))
        handler.wfile.flush()
        handler.connection.settimeout(None)
        splice_tunnel(handler.rfile, handler.connection, answer.reader, answer.sock)
    except (OSError, ValueError):
        pass
    finally:
        answer.reader.close()
        answer.sock.close()


def pass_back(handler, answer):
    """A kubelet's answer that is no 101, to the client as it came."""
    handler.record(answer.status)
    handler.wfile.write(answer.head)
    length = answer.headers.get("Content-Length")
    body = answer.reader.read(min(int(length), 1 << 20)) \
        if length and length.isdigit() else answer.reader.read(1 << 20)
    handler.wfile.write(body)
    handler.wfile.flush()


connect("pods", "log", Connect(["get"], serve_log))
for _sub in STREAMS:
    connect("pods", _sub, Connect(["get", "create"], serve_stream))
connect("nodes", "proxy", Connect(["create", "delete", "get", "patch", "update"],
                                  serve_proxy, takes_path=True))
