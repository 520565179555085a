# SPDX-License-Identifier: Apache-2.0
# metrics: metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics (get, list),
# what `kubectl top` reads, computed as metrics-server computes them: every
# --metric-resolution seconds each node that publishes a kubelet port is
# scraped (GET /metrics/resource, Prometheus text with millisecond
# timestamps); CPU is the rate between a node's or container's last two
# points, memory the last working set.  Fewer than two points: absent.

import math
import re
import threading
from datetime import datetime, timezone

from machinery.api import encode_list
from machinery.common import STOP, ApiError, rfc3339, utc_now, warn
from machinery.kubelet import KubeletClient
from machinery.registry import RESOURCE_BY_KEY, Resource, on_start, register
from machinery.selector import parse_label_selector

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
# a container younger than this (ms) is not given a first point at its start
FRESH_CONTAINER_MIN = 10000
SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


class Point:
    """A node's or a container's sample: when (ms since the epoch),
    cumulative CPU (core-nanoseconds), working set (bytes), start time (ms,
    or None).  Integers: an epoch in float seconds is too coarse for a
    rate over a fraction of a second."""

    def __init__(self, when=None, cpu=None, memory=None, start=None):
        self.when, self.cpu, self.memory, self.start = when, cpu, memory, start

    def complete(self):
        return self.when is not None and self.cpu is not None and self.memory is not None


def parse_labels(text):
    labels, pos = {}, 0
    text = text or ""
    while pos < len(text):
        match = LABEL.match(text, pos)
        if not match:
            raise ValueError("bad labels: %s" % text)
        labels[match.group(1)] = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n"
                                        else m.group(1), match.group(2))
        pos = match.end()
    return labels


def parse_resource_metrics(text, now):
    """(node Point, {(namespace, pod): {container: Point}}) of a
    /metrics/resource body, as metrics-server decodes it."""
    node, pods = Point(), {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if not match:
            continue
        name, labels, value, stamp = match.groups()
        try:
            value = float(value)
            labels = parse_labels(labels)
        except ValueError:
            continue
        if math.isnan(value) or value < 0:
            continue
        when = int(stamp) if stamp else now
        if name.startswith("container_"):
            key = (labels.get("namespace", ""), labels.get("pod", ""))
            container = labels.get("container", "")
            if not all(key) or not container:
                continue
            point = pods.setdefault(key, {}).setdefault(container, Point())
        elif name.startswith("node_"):
            point = node
        else:
            continue
        if name.endswith("_cpu_usage_seconds_total"):
            point.cpu, point.when = int(round(value * 1e9)), when
        elif name.endswith("_memory_working_set_bytes"):
            point.memory = int(value)
        elif name == "container_start_time_seconds":
            point.start = int(round(value * 1000))
    return node, pods


def usage(last, prev):
    """(usage, timestamp, window) between two points, or None where
    metrics-server skips them (a restart, a counter that went down)."""
    if last.start is not None and prev.start is not None and last.start < prev.start:
        return None
    if last.cpu < prev.cpu or last.when <= prev.when:
        return None
    window = last.when - prev.when
    nanocores = (last.cpu - prev.cpu) * 1000 // window
    return ({"cpu": decimal_quantity(nanocores, -9), "memory": binary_quantity(last.memory)},
            last.when, window)


def decimal_quantity(value, exponent):
    """value * 10**exponent as resource.Quantity writes a DecimalSI amount."""
    suffixes = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P",
                18: "E"}
    if value == 0:
        return "0"
    while value % 1000 == 0 and exponent < 18:
        value //= 1000
        exponent += 3
    return "%d%s" % (value, suffixes[exponent])


def binary_quantity(value):
    """Bytes as resource.Quantity writes a BinarySI amount."""
    if -1024 < value < 1024:
        return decimal_quantity(value, 0)
    suffix = ""
    for unit in ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"):
        if value % 1024:
            break
        value //= 1024
        suffix = unit
    return "%d%s" % (value, suffix)


def go_duration(ms):
    """A window (ms) as Go's time.Duration writes it: 15.001s, 1m0.5s."""
    nanos = ms * 1000000
    if nanos == 0:
        return "0s"
    if nanos < 1000000000:
        for unit, size in (("ms", 1000000), ("µs", 1000), ("ns", 1)):
            if nanos >= size:
                text = ("%.9f" % (nanos / size)).rstrip("0").rstrip(".")
                return text + unit
    hours, rest = divmod(nanos, 3600 * 10 ** 9)
    minutes, rest = divmod(rest, 60 * 10 ** 9)
    secs = ("%d.%09d" % divmod(rest, 10 ** 9)).rstrip("0").rstrip(".")
    if hours:
        return "%dh%dm%ss" % (hours, minutes, secs)
    if minutes:
        return "%dm%ss" % (minutes, secs)
    return secs + "s"


def timestamp(when):
    return rfc3339(datetime.fromtimestamp(when // 1000, timezone.utc))


class Storage:
    """The last two points of each node and container, as metrics-server's
    storage keeps them: a scrape replaces the last batch; a point moves to
    "previous" when a newer one comes."""

    def __init__(self, resolution):
        self.lock = threading.Lock()
        self.resolution = resolution
        self.nodes_last, self.nodes_prev = {}, {}
        self.pods_last, self.pods_prev = {}, {}

    def store(self, nodes, pods):
        with self.lock:
            last, prev = {}, {}
            for name, point in nodes.items():
                last[name] = point
                old = self.nodes_last.get(name)
                if old is not None and point.when > old.when:
                    prev[name] = old
                elif old is not None and name in self.nodes_prev \
                        and self.nodes_prev[name].when < point.when:
                    prev[name] = self.nodes_prev[name]
            self.nodes_last, self.nodes_prev = last, prev
            last, prev = {}, {}
            for key, containers in pods.items():
                last[key], kept = containers, {}
                old_pod = self.pods_last.get(key, {})
                prev_pod = self.pods_prev.get(key, {})
                for name, point in containers.items():
                    old = old_pod.get(name)
                    if point.start is not None and point.start < point.when \
                            and FRESH_CONTAINER_MIN <= point.when - point.start \
                            < self.resolution * 1000:
                        # a fresh container: its start is its first point
                        kept[name] = Point(point.start, 0, point.memory, point.start)
                    elif old is not None and (point.start is None or point.start < old.when):
                        if point.when > old.when:
                            kept[name] = old
                        elif name in prev_pod and prev_pod[name].when < point.when:
                            kept[name] = prev_pod[name]
                if kept:
                    prev[key] = kept
            self.pods_last, self.pods_prev = last, prev

    def node(self, name):
        with self.lock:
            last, prev = self.nodes_last.get(name), self.nodes_prev.get(name)
        return usage(last, prev) if last and prev else None

    def pod(self, key):
        """([(container, usage)], timestamp, window) or None."""
        with self.lock:
            last, prev = self.pods_last.get(key), self.pods_prev.get(key)
        if not last or not prev:
            return None
        containers, earliest = [], None
        for name in sorted(last):
            if name not in prev:
                return None
            result = usage(last[name], prev[name])
            if result is None:
                continue
            containers.append((name, result[0]))
            if earliest is None or result[1] < earliest[1]:
                earliest = result
        if earliest is None:
            return None
        return containers, earliest[1], earliest[2]


STATE = {}  # "storage": the Storage
FAILING = set()  # nodes whose last scrape failed


def scrape_failed(name, why):
    """Say so on stderr once, when a node's scrapes start failing."""
    if name not in FAILING:
        FAILING.add(name)
        warn("scraping node %s: %s" % (name, why))


def scrape_node(client, node, nodes, pods, lock):
    name = node["metadata"]["name"]
    try:
        host, port = client.location(node)
        conn, response = client.open(host, port, "GET", "/metrics/resource")
        try:
            if response.status != 200:
                return scrape_failed(name, "the kubelet answered %d" % response.status)
            body = response.read().decode("utf-8", "replace")
        finally:
            conn.close()
    except ApiError as err:
        return scrape_failed(name, err.message)
    except OSError as err:
        return scrape_failed(name, err)
    FAILING.discard(name)
    node_point, pod_points = parse_resource_metrics(body, int(utc_now().timestamp() * 1000))
    with lock:
        if node_point.complete():
            nodes[name] = node_point
        for key, containers in pod_points.items():
            complete = {c: p for c, p in containers.items() if p.complete()}
            if complete:
                pods[key] = complete


def has_kubelet_port(node):
    endpoint = ((node.get("status") or {}).get("daemonEndpoints") or {}).get(
        "kubeletEndpoint") or {}
    return isinstance(endpoint.get("Port"), int) and endpoint["Port"] > 0


def scrape_all(store, client, storage):
    _, nodes = store.list(RESOURCE_BY_KEY["nodes"], None, has_kubelet_port)
    node_points, pod_points, lock = {}, {}, threading.Lock()
    threads = [threading.Thread(target=scrape_node, daemon=True,
                                args=(client, node, node_points, pod_points, lock))
               for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    storage.store(node_points, pod_points)


def scraper(store, client, storage, resolution):
    while not STOP.wait(resolution):
        try:
            scrape_all(store, client, storage)
        except Exception as err:  # the scraper must go on whatever a kubelet says
            warn("scraping the kubelets: %s" % err)


@on_start
def start(state, options):
    storage = Storage(options.metric_resolution)
    client = KubeletClient(state.directory, options.kubelet_port,
                           options.kubelet_certificate_authority)
    STATE["storage"] = storage
    threading.Thread(target=scraper, daemon=True, args=(
        state.store, client, storage, options.metric_resolution)).start()


def metrics_not_found(res, name):
    return ApiError(404, '%s.%s "%s" not found' % (res.singular_kind, GROUP, name),
                    details={"name": name, "group": GROUP, "kind": res.singular_kind})


class MetricsResource(Resource):
    verbs = ("get", "list")
    stored = False

    def __init__(self, plural, kind, namespaced, source):
        super().__init__(GROUP, plural, "", kind, namespaced, version=VERSION)
        self.singular_kind = kind.lower()
        self.source = source  # the core kind whose objects are measured

    def serve(self, handler, req, verb):
        store = handler.server.state.store
        source = RESOURCE_BY_KEY[self.source]
        if verb == "get":
            try:
                obj = store.get(source, req.namespace, req.name)
            except ApiError:
                obj = None
            item = self.item(obj) if obj is not None else None
            if item is None:
                name = "%s/%s" % (req.namespace, req.name) if self.namespaced else req.name
                raise metrics_not_found(self, name)
            return handler.send_reply(200, dict({"kind": self.kind,
                                                 "apiVersion": self.api_version}, **item))
        labels = parse_label_selector(handler.query.get("labelSelector"))
        _, objects = store.list(source, req.namespace, labels)
        items = [item for item in map(self.item, objects) if item is not None]
        handler.send_reply(200, encode_list({"kind": self.kind + "List",
                                             "apiVersion": self.api_version,
                                             "metadata": {}}, items))

    def metadata(self, obj):
        meta = {"name": obj["metadata"]["name"]}
        if self.namespaced:
            meta["namespace"] = obj["metadata"]["namespace"]
        meta["creationTimestamp"] = rfc3339(utc_now())
        if obj["metadata"].get("labels"):
            meta["labels"] = obj["metadata"]["labels"]
        return meta

    def item(self, obj):
        storage = STATE.get("storage")
        if storage is None:
            return None
        if not self.namespaced:
            result = storage.node(obj["metadata"]["name"])
            if result is None:
                return None
            use, when, window = result
            return {"metadata": self.metadata(obj), "timestamp": timestamp(when),
                    "window": go_duration(window), "usage": use}
        result = storage.pod((obj["metadata"]["namespace"], obj["metadata"]["name"]))
        if result is None:
            return None
        containers, when, window = result
        return {"metadata": self.metadata(obj), "timestamp": timestamp(when),
                "window": go_duration(window),
                "containers": [{"name": name, "usage": use} for name, use in containers]}


register(MetricsResource("nodes", "NodeMetrics", False, "nodes"))
register(MetricsResource("pods", "PodMetrics", True, "pods"))
