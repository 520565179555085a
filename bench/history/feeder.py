#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# feeder: a loopback stand-in API server that lists and watches N nodes whose
# heartbeats arrive every INTERVAL seconds and which change for real every
# CHANGE seconds, for node-history's bench.
"""Usage: feeder.py PORT NODES INTERVAL_S CHANGE_S

Serves GET /api/v1/nodes (the list) and GET /api/v1/nodes?watch=... (a
chunked stream of MODIFIED events) over plain HTTP on 127.0.0.1:PORT.
Each node's heartbeat (lastHeartbeatTime, resourceVersion and the kubelet's
managedFields time) comes every INTERVAL_S seconds, spread evenly; every
CHANGE_S seconds each node changes for real (its Ready condition flips, with
the kubelet as manager).  Prints the events sent on SIGTERM."""

import json
import signal
import sys
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, NODES, INTERVAL, CHANGE = (int(a) for a in sys.argv[1:5])
lock = threading.Lock()
rv = [1]
sent = [0]


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(i):
    t = now()
    conds = [{"type": k, "status": "False", "reason": "Kubelet" + r,
              "message": "kubelet has " + m, "lastHeartbeatTime": t,
              "lastTransitionTime": t}
             for k, r, m in (("MemoryPressure", "HasSufficientMemory", "sufficient memory"),
                             ("DiskPressure", "HasNoDiskPressure", "no disk pressure"),
                             ("PIDPressure", "HasSufficientPID", "sufficient PID"))]
    conds.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                  "message": "kubelet is posting ready status", "lastHeartbeatTime": t,
                  "lastTransitionTime": t})
    name = "vk-%05d" % i
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "uid-%d" % i, "resourceVersion": "1",
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "node.kubernetes.io/instance-type": "virtual"},
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
                         "managedFields": [{"manager": "kubelet", "operation": "Update",
                                            "apiVersion": "v1", "time": t,
                                            "fieldsType": "FieldsV1", "subresource": "status",
                                            "fieldsV1": {"f:status": {"f:conditions": {}}}}]},
            "spec": {"podCIDR": "10.244.%d.0/24" % (i % 250)},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                       "allocatable": {"cpu": "8", "memory": "31Gi", "pods": "110"},
                       "conditions": conds,
                       "addresses": [{"type": "InternalIP", "address": "10.0.%d.%d"
                                      % (i // 250, i % 250)},
                                     {"type": "Hostname", "address": name}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian 12",
                                    "containerRuntimeVersion": "containerd://1.7"}}}


nodes = [node(i) for i in range(NODES)]


def bump(n, real):
    t = now()
    for c in n["status"]["conditions"]:
        c["lastHeartbeatTime"] = t
        if real and c["type"] == "Ready":
            c["status"] = "False" if c["status"] == "True" else "True"
            c["reason"] = "KubeletReady" if c["status"] == "True" else "KubeletNotReady"
            c["lastTransitionTime"] = t
    n["metadata"]["managedFields"][0]["time"] = t
    rv[0] += 1
    n["metadata"]["resourceVersion"] = str(rv[0])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if "watch" not in self.path:
            with lock:
                body = json.dumps({"apiVersion": "v1", "kind": "NodeList",
                                   "metadata": {"resourceVersion": str(rv[0])},
                                   "items": nodes}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        step = INTERVAL / NODES
        start, k = time.monotonic(), 0
        try:
            while True:
                due = start + k * step
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                i = k % NODES
                rounds = k // NODES
                # every CHANGE/INTERVAL rounds a node's heartbeat is also a real change
                real = (rounds + i) % max(1, CHANGE // INTERVAL) == 0
                with lock:
                    bump(nodes[i], real)
                    line = json.dumps({"type": "MODIFIED", "object": nodes[i]}).encode() + b"\n"
                    sent[0] += 1
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                k += 1
        except (BrokenPipeError, ConnectionResetError):
            pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    server.daemon_threads = True

    def stop(*_):
        print(json.dumps({"events": sent[0]}), flush=True)
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


main()
