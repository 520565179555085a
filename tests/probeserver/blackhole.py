#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# blackhole: a listener whose accept queue is full, so new connects time out
"""Usage: blackhole.py PORTFILE

Listens on 127.0.0.1 with a backlog of 0, fills the accept queue with its own
connections and never accepts: the kernel drops further SYNs, so a connect
to the port neither succeeds nor fails until its timeout.
"""
import os
import socket
import sys
import time

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(0)
port = listener.getsockname()[1]
fillers = []
for _ in range(4):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    fillers.append(c)
    time.sleep(0.05)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % port)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(3600)
