# SPDX-License-Identifier: Apache-2.0
"""kube-wait against kubectl wait, in one run (bench/wait/run starts the server).

bench.py WORKDIR ROUNDS PODS SECONDS, with APISERVER_DIR, APISERVER_URL,
APISERVER_TOKEN and KUBECONFIG_FILE in the environment."""

import http.client
import json
import os
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

WORK, ROUNDS, PODS, SECONDS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
DIR = os.environ["APISERVER_DIR"]
URL = urllib.parse.urlsplit(os.environ["APISERVER_URL"])
TOKEN = os.environ["APISERVER_TOKEN"]
KUBECONFIG = os.environ["KUBECONFIG_FILE"]
KUBECTL = os.environ.get("KT_KUBECTL", "kubectl")
NS = "/api/v1/namespaces/default"
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


class Client:
    """One kept-alive HTTPS connection to the server, as the tests' curl but cheaper."""

    def __init__(self):
        ctx = ssl.create_default_context(cafile=os.path.join(DIR, "ca.crt"))
        self.conn = http.client.HTTPSConnection(URL.hostname, URL.port, context=ctx)

    def call(self, method, path, body=None, ctype="application/json"):
        headers = {"Authorization": "Bearer " + TOKEN}
        if body is not None:
            headers["Content-Type"] = ctype
            body = json.dumps(body)
        self.conn.request(method, path, body=body, headers=headers)
        reply = self.conn.getresponse()
        data = reply.read()
        if reply.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, reply.status, data[:200]))
        return data


def make_pod(c, name, app):
    c.call("POST", NS + "/pods", {"metadata": {"name": name, "labels": {"app": app}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}})


def set_ready(c, name):
    c.call("PATCH", NS + "/pods/%s/status" % name, {"status": READY},
           "application/merge-patch+json")


def kubectl(*args):
    return [KUBECTL, "--kubeconfig", KUBECONFIG, "--cache-dir", os.path.join(WORK, "kube-cache")] \
        + list(args)


def kube_wait(*args):
    return ["kube-wait", "--kubeconfig", KUBECONFIG] + list(args)


def measure(argv, on_line=None):
    """Runs argv; returns (exit status, CPU s user+sys, wall s); on_line(line, t) per line."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if on_line:
            on_line(line.rstrip("\n"), time.monotonic())
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime, wall


def log_lines():
    with open(os.path.join(DIR, "requests.log")) as f:
        return [json.loads(l) for l in f if l.strip()]


def clear_log(c):
    c.call("DELETE", "/_requests")


def one_ready_pod(c):
    make_pod(c, "web", "web")
    set_ready(c, "web")
    cmds = {"kube-wait": kube_wait("pod/web", "--for=condition=Ready", "--timeout=30s"),
            "kubectl wait": kubectl("wait", "pod/web", "--for=condition=Ready", "--timeout=30s")}
    # what loading the libraries costs before any work: a C main that
    # returns 0, linked with libssl and with libcurl (run compiles them)
    for name, exe in (("empty main", "empty"), ("empty main + libssl", "empty-ssl"),
                      ("empty main + libcurl", "empty-curl")):
        if os.path.exists(os.path.join(WORK, exe)):
            cmds[name] = [os.path.join(WORK, exe)]
    runs = {name: [] for name in cmds}
    measure(cmds["kubectl wait"])  # its discovery cache filled, as on a CI runner's second call
    for _ in range(ROUNDS):
        for name, argv in cmds.items():
            rc, cpu, wall = measure(argv)
            if rc != 0:
                raise RuntimeError("%s exited %d" % (name, rc))
            runs[name].append((cpu, wall))
    print("\n## One pod already Ready, %d rounds, medians\n" % ROUNDS)
    print("| tool | CPU ms (user+sys) | wall ms |")
    print("| --- | ---: | ---: |")
    med = {}
    for name, r in runs.items():
        med[name] = (statistics.median(x[0] for x in r), statistics.median(x[1] for x in r))
        print("| %s | %.1f | %.1f |" % (name, med[name][0] * 1e3, med[name][1] * 1e3))
    kw, kc = med["kube-wait"], med["kubectl wait"]
    print("| kubectl / kube-wait | %.1fx | %.1fx |" % (kc[0] / kw[0], kc[1] / kw[1]))


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


def many_pods(c, tool, app):
    for i in range(PODS):
        make_pod(c, "%s-%d" % (app, i), app)
    clear_log(c)
    seen = {}
    written = {}

    def on_line(line, t):
        parts = line.split()
        if parts and parts[-2:] == ["condition", "met"]:
            seen[parts[0].split("/", 1)[1]] = t

    if tool == "kube-wait":
        argv = kube_wait("pods", "-l", "app=" + app, "--for=condition=Ready", "--timeout=5m")
    else:
        argv = kubectl("wait", "pods", "-l", "app=" + app, "--for=condition=Ready", "--timeout=5m")
    result = {}

    def run_tool():
        result["r"] = measure(argv, on_line)

    th = threading.Thread(target=run_tool)
    th.start()
    # the writes start once the tool has read the pods (its list or its first watch)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(r["method"] == "GET" and r["path"] == NS + "/pods" for r in log_lines()):
            break
        time.sleep(0.05)
    time.sleep(0.5)
    w = Client()
    start = time.monotonic()
    for i in range(PODS):
        due = start + SECONDS * i / PODS
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        name = "%s-%d" % (app, i)
        written[name] = time.monotonic()
        set_ready(w, name)
    th.join()
    rc, cpu, wall = result["r"]
    log = log_lines()
    watches = sum(1 for r in log if r["method"] == "GET" and "watch=1" in (r.get("query") or "")
                  or "watch=true" in (r.get("query") or ""))
    lists = sum(1 for r in log if r["method"] == "GET" and r["path"] == NS + "/pods"
                and "watch" not in (r.get("query") or ""))
    lat = [(seen[n] - written[n]) * 1e3 for n in written if n in seen]
    return {"rc": rc, "cpu": cpu, "wall": wall, "watches": watches, "lists": lists,
            "reported": len(lat), "p50": pct(lat, 50) if lat else float("nan"),
            "p99": pct(lat, 99) if lat else float("nan"), "max": max(lat) if lat else float("nan"),
            "within100": sum(1 for x in lat if x <= 100)}


def main():
    c = Client()
    one_ready_pod(c)
    rows = {"kube-wait": many_pods(c, "kube-wait", "a"), "kubectl wait": many_pods(c, "kubectl", "b")}
    print("\n## %d pods by selector, made Ready over %g s\n" % (PODS, SECONDS))
    print("| tool | exit | watches opened | lists | CPU s | wall s | pods reported | "
          "latency p50 ms | p99 ms | max ms | within 100 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows.items():
        print("| %s | %d | %d | %d | %.3f | %.1f | %d | %.1f | %.1f | %.1f | %d |" % (
            name, r["rc"], r["watches"], r["lists"], r["cpu"], r["wall"], r["reported"],
            r["p50"], r["p99"], r["max"], r["within100"]))
    print("| kube-wait / kubectl CPU | | | | %.3f | | | | | | |"
          % (rows["kube-wait"]["cpu"] / rows["kubectl wait"]["cpu"]))


main()
