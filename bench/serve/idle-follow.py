# SPDX-License-Identifier: Apache-2.0
# idle-follow.py PORT N CA CERT KEY PATH SECONDS: N clients follow PATH over TLS
# with a client certificate, each reading its reply head, then all stay open
# and quiet for SECONDS; prints how many were opened
import sys
import time

from followers import open_followers

port, n, ca, cert, key, path, secs = sys.argv[1:8]
conns = open_followers(port, n, ca, cert, key, path)
print("opened", len(conns), flush=True)
time.sleep(float(secs))
