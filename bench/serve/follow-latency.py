# SPDX-License-Identifier: Apache-2.0
# follow-latency.py PORT N CA CERT KEY PATH LOG ROUNDS: N clients follow PATH
# over TLS; then ROUNDS times, a second apart, one line is appended to LOG and
# the time until each client has it is taken; prints p50, p99 and the maximum
import selectors
import ssl
import sys
import time

from followers import open_followers

port, n, ca, cert, key, path, log, rounds = sys.argv[1:9]
sel = selectors.DefaultSelector()
conns = open_followers(port, n, ca, cert, key, path)
for s in conns:
    s.setblocking(False)
time.sleep(2)
for s in conns:  # what came before the rounds
    try:
        while s.recv(65536):
            pass
    except (ssl.SSLWantReadError, BlockingIOError):
        pass
lat = []
for r in range(int(rounds)):
    for s in conns:
        sel.register(s, selectors.EVENT_READ)
    with open(log, "a") as f:
        t0 = time.monotonic()
        f.write("2026-01-01T00:00:00.000000000Z stdout F round %d\n" % r)
    left = len(conns)
    while left:
        for key_, _ in sel.select(5):
            s = key_.fileobj
            try:
                if s.recv(65536):
                    lat.append(time.monotonic() - t0)
                    sel.unregister(s)
                    left -= 1
            except (ssl.SSLWantReadError, BlockingIOError):
                pass
    time.sleep(1)
lat.sort()
print("followers=%d lines=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f" % (
    len(conns), int(rounds), 1000 * lat[len(lat) // 2], 1000 * lat[int(len(lat) * 0.99)],
    1000 * lat[-1]))
