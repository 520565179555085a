# SPDX-License-Identifier: Apache-2.0
# idle-follow.py PORT N CA CERT KEY PATH SECONDS: N clients follow PATH over TLS
# with a client certificate, each reading its reply head, then all stay open
# and quiet for SECONDS; prints how many were opened
import socket
import ssl
import sys
import time

port, n, ca, cert, key, path, secs = sys.argv[1:8]
ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(cert, key)
conns = []
for i in range(int(n)):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(port))),
                        server_hostname="127.0.0.1")
    s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head[:40]
    conns.append(s)
print("opened", len(conns), flush=True)
time.sleep(float(secs))
