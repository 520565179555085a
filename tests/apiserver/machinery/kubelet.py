# SPDX-License-Identifier: Apache-2.0
# kubelet: the server as a client of the nodes' kubelets (logs, the node
# proxy, metrics): where a node's kubelet is, as kube-apiserver finds it,
# and requests to it over HTTPS with the server's own client certificate.

import base64
import errno
import hashlib
import http.client
import io
import os
import socket
import ssl
import struct
import threading

from .common import STOP, ApiError
from .registry import RESOURCE_BY_KEY

# kubeadm's --kubelet-preferred-address-types: the first a node has wins
ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")
REQUEST_TIMEOUT = 10  # seconds to connect and to wait for a reply's headers


def go_address(address):
    """A NodeAddress as Go's %v prints it: {InternalIP 10.0.0.1}."""
    if not isinstance(address, dict):
        return "{ }"
    return "{%s %s}" % (address.get("type", ""), address.get("address", ""))


def net_error(err):
    """An OSError worded as Go's net package words it."""
    if isinstance(err, ConnectionRefusedError) \
            or getattr(err, "errno", None) == errno.ECONNREFUSED:
        return "connect: connection refused"
    if isinstance(err, (socket.timeout, TimeoutError)):
        return "i/o timeout"
    if isinstance(err, ConnectionResetError):
        return "read: connection reset by peer"
    if isinstance(err, ssl.SSLError):
        return "remote error: tls: %s" % (err.reason or err).lower().replace("_", " ")
    return getattr(err, "strerror", None) or str(err)


def unknown_error(message):
    """An error that is no API status: 500 without a reason, which kubectl
    prints as "Error from server: MESSAGE"."""
    return ApiError(500, message, reason="")


class KubeletClient:
    def __init__(self, directory, default_port, ca_file=None):
        self.default_port = default_port
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_cert_chain(os.path.join(directory, "kubelet-client.crt"),
                                os.path.join(directory, "kubelet-client.key"))
        if ca_file:
            context.load_verify_locations(ca_file)
        else:
            # kube-apiserver without --kubelet-certificate-authority
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self.context = context

    def location(self, node):
        """(host, port) of a node's kubelet: the first address of
        ADDRESS_TYPES, the published port or the default one."""
        status = node.get("status") if isinstance(node.get("status"), dict) else {}
        addresses = status.get("addresses")
        addresses = addresses if isinstance(addresses, list) else []
        host = None
        for kind in ADDRESS_TYPES:
            host = next((a.get("address") for a in addresses if isinstance(a, dict)
                         and a.get("type") == kind and a.get("address")), None)
            if host:
                break
        if not host:
            raise unknown_error("no preferred addresses found; known addresses: [%s]"
                                % " ".join(go_address(a) for a in addresses))
        endpoint = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {})
        port = endpoint.get("Port") if isinstance(endpoint, dict) else None
        if not isinstance(port, int) or port <= 0:
            port = self.default_port
        return host, port

    def node(self, store, name):
        return store.get(RESOURCE_BY_KEY["nodes"], None, name)

    def open(self, host, port, method, target, body=None, headers=(), url_error=True):
        """Send a request; (connection, response) once the headers came.  A
        connection that fails is a 500 worded as Go's client words it: with
        url_error as http.Client's "Get "URL": ...", else the bare net error
        (as the reverse proxy's)."""
        netloc = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
        conn = http.client.HTTPSConnection(host, port, context=self.context,
                                           timeout=REQUEST_TIMEOUT)
        try:
            conn.putrequest(method, target, skip_accept_encoding=True)
            for key, value in headers:
                conn.putheader(key, value)
            if body:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body or None)
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            if isinstance(err, OSError) and not isinstance(err, ssl.SSLError) \
                    and not isinstance(err, (socket.timeout, ConnectionResetError)):
                why = "dial tcp %s: %s" % (netloc, net_error(err))
            elif isinstance(err, http.client.HTTPException):
                why = "EOF"
            else:
                why = net_error(err)
            if url_error:
                why = '%s "https://%s%s": %s' % (method.capitalize(), netloc, target, why)
            raise unknown_error(why)
        conn.sock.settimeout(None)  # a follow may be quiet for long
        return conn, response


def relay(handler, conn, response):
    """Copy a reply's body to the client chunk by chunk as it comes, until
    the kubelet ends it or the client goes away (then the kubelet's
    connection is closed, which ends the copy)."""
    done = threading.Event()

    def watch_client():
        while not done.is_set():
            if STOP.is_set() or handler.client_gone():
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except (OSError, AttributeError):
                    pass
                return
            done.wait(0.1)
    watcher = threading.Thread(target=watch_client, daemon=True)
    watcher.start()
    ended = False
    try:
        while True:
            try:
                data = response.read1(64 << 10)
            except (OSError, http.client.HTTPException, ValueError):
                break
            if not data:
                ended = not done.is_set() and not handler.client_gone()
                break
            handler.send_chunk(data)
            handler.wfile.flush()
        if ended:
            handler.wfile.write(b"0\r\n\r\n")
        else:
            handler.close_connection = True
    except OSError:
        handler.close_connection = True
    finally:
        done.set()
        conn.close()


class Upgraded:
    """A kubelet's answer to an upgrade request: status, reason, the
    header block as it came (head, bytes) and parsed (headers), and the
    connection with its reader (what follows the head is the stream)."""

    def __init__(self, sock, reader, status, reason, head, headers):
        self.sock, self.reader = sock, reader
        self.status, self.reason, self.head, self.headers = status, reason, head, headers


def read_head(reader):
    """Status line and header lines up to the empty line: (status, reason,
    the bytes, the headers).  ValueError when it is no HTTP/1.x reply."""
    line = reader.readline(65537)
    parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ValueError("malformed HTTP response %r" % line[:100])
    lines = [line]
    while True:
        header = reader.readline(65537)
        if not header:
            raise ValueError("unexpected EOF")
        lines.append(header)
        if header in (b"\r\n", b"\n"):
            break
        if len(lines) > 200:
            raise ValueError("too many headers")
    head = b"".join(lines)
    headers = http.client.parse_headers(io.BytesIO(b"".join(lines[1:])))
    return int(parts[1]), parts[2] if len(parts) > 2 else "", head, headers


def upgrade(client, host, port, method, target, headers):
    """Send an upgrade request as it is to a kubelet; its Upgraded answer.
    A connection that fails is a 500 worded as the reverse proxy's."""
    netloc = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
    try:
        raw = socket.create_connection((host, port), timeout=REQUEST_TIMEOUT)
    except OSError as err:
        raise unknown_error("dial tcp %s: %s" % (netloc, net_error(err)))
    try:
        sock = client.context.wrap_socket(raw, server_hostname=host)
        lines = ["%s %s HTTP/1.1" % (method, target), "Host: %s" % netloc]
        lines += ["%s: %s" % (key, value) for key, value in headers]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        reader = sock.makefile("rb")
        status, reason, head, parsed = read_head(reader)
    except (OSError, ValueError) as err:
        raw.close()
        why = net_error(err) if isinstance(err, OSError) else "EOF"
        raise unknown_error("error dialing backend: %s" % why)
    sock.settimeout(None)  # a session may be quiet for long
    return Upgraded(sock, reader, status, reason, head, parsed)


def close_quietly(sock):
    for end in (lambda: sock.shutdown(socket.SHUT_RDWR), sock.close):
        try:
            end()
        except (OSError, ValueError, AttributeError):
            pass


COPY_BUFFER = 256 << 10  # the most a read of a spliced connection takes


def splice(client_reader, client_sock, kubelet_reader, kubelet_sock):
    """Bytes both ways, each with its own thread, until either side ends
    or fails; then both connections are shut, which ends the other copy."""
    def copy(reader, sock):
        # one buffer for the whole copy: a read (a TLS record, most often)
        # lands in it and is sent from it, nothing made or copied a chunk
        view = memoryview(bytearray(COPY_BUFFER))
        try:
            while True:
                size = reader.readinto1(view)
                if not size:
                    break
                sock.sendall(view[:size])
        except (OSError, ValueError):
            pass
        finally:
            close_quietly(kubelet_sock)
            try:
                client_sock.shutdown(socket.SHUT_RDWR)
            except (OSError, ValueError):
                pass

    back = threading.Thread(target=copy, args=(kubelet_reader, client_sock), daemon=True)
    back.start()
    copy(client_reader, kubelet_sock)
    back.join()


WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def websocket_accept(key):
    return base64.b64encode(hashlib.sha1(key.encode("latin-1") + WS_GUID).digest()).decode()


def websocket_head(opcode, size):
    """The head of an unmasked frame of size bytes, as a server sends it."""
    if size < 126:
        return struct.pack("!BB", 0x80 | opcode, size)
    if size < 1 << 16:
        return struct.pack("!BBH", 0x80 | opcode, 126, size)
    return struct.pack("!BBQ", 0x80 | opcode, 127, size)


def websocket_frame(opcode, payload):
    """One unmasked frame, as a server sends it."""
    return websocket_head(opcode, len(payload)) + payload


def read_exact(reader, size):
    data = reader.read(size)
    if len(data) != size:
        raise EOFError
    return data


def websocket_frames(reader):
    """(opcode, payload) of each frame a client sends, unmasked."""
    while True:
        first, second = read_exact(reader, 2)
        size = second & 0x7F
        if size == 126:
            size = struct.unpack("!H", read_exact(reader, 2))[0]
        elif size == 127:
            size = struct.unpack("!Q", read_exact(reader, 8))[0]
        mask = read_exact(reader, 4) if second & 0x80 else None
        payload = read_exact(reader, size)
        if mask:
            key = int.from_bytes((mask * (size // 4 + 1))[:size], "big")
            payload = (int.from_bytes(payload, "big") ^ key).to_bytes(size, "big")
        yield first & 0x0F, payload


def splice_tunnel(client_reader, client_sock, kubelet_reader, kubelet_sock):
    """A SPDY session carried in a client's WebSocket, as the real server's
    port-forward tunnel carries it: each binary message's bytes to the
    kubelet, the kubelet's bytes back as binary messages, a ping answered;
    a close or either end ends both."""
    lock = threading.Lock()

    def send(opcode, payload):
        with lock:
            client_sock.sendall(websocket_frame(opcode, payload))

    def end():
        close_quietly(kubelet_sock)
        try:
            client_sock.shutdown(socket.SHUT_RDWR)
        except (OSError, ValueError):
            pass

    def back():
        # each read lands after room for the longest frame head, which is
        # written just before it: the frame is sent as it lies
        view = memoryview(bytearray(10 + COPY_BUFFER))
        try:
            while True:
                size = kubelet_reader.readinto1(view[10:])
                if not size:
                    break
                head = websocket_head(0x2, size)
                start = 10 - len(head)
                view[start:10] = head
                with lock:
                    client_sock.sendall(view[start:10 + size])
        except (OSError, ValueError):
            pass
        finally:
            end()

    thread = threading.Thread(target=back, daemon=True)
    thread.start()
    try:
        for opcode, payload in websocket_frames(client_reader):
            if opcode in (0x0, 0x1, 0x2):
                kubelet_sock.sendall(payload)
            elif opcode == 0x8:
                try:
                    send(0x8, payload[:2])
                except OSError:
                    pass
                break
            elif opcode == 0x9:
                send(0xA, payload)
    except (OSError, ValueError, EOFError):
        pass
    finally:
        end()
    thread.join()
