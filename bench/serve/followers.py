# SPDX-License-Identifier: Apache-2.0
# followers.py: what the kubelet-serve benches share: N TLS clients with a
# client certificate, each having sent GET PATH and read its reply's head
import socket
import ssl


def open_followers(port, n, ca, cert, key, path):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.load_cert_chain(cert, key)
    conns = []
    for _ in range(int(n)):
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(port))),
                            server_hostname="127.0.0.1")
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head[:40]
        conns.append(s)
    return conns
