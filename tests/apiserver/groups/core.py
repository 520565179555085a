# SPDX-License-Identifier: Apache-2.0
# core: the core/v1 kinds served (namespaces, nodes and pods, with their
# /status, events) and the initial namespaces.

from machinery.common import ApiError, DNS_LABEL
from machinery.objects import prepare_create, set_default
from machinery.registry import Resource, register, seed

INITIAL_NAMESPACES = ("default", "kube-system", "kube-node-lease")
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")


def image_pull_policy(image):
    """Always for :latest or an untagged image, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last or last.endswith(":latest"):
        return "Always"
    return "IfNotPresent"


def default_probe(probe):
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10),
                       ("successThreshold", 1), ("failureThreshold", 3)):
        set_default(probe, key, value)
    if isinstance(probe.get("httpGet"), dict):
        set_default(probe["httpGet"], "scheme", "HTTP")


def default_container(container):
    if not isinstance(container, dict):
        return
    if isinstance(container.get("image"), str):
        set_default(container, "imagePullPolicy", image_pull_policy(container["image"]))
    set_default(container, "resources", {})
    set_default(container, "terminationMessagePath", "/dev/termination-log")
    set_default(container, "terminationMessagePolicy", "File")
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            set_default(port, "protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        default_probe(container.get(probe))


def default_pod(pod):
    """The defaults the real server fills in that pod tools read."""
    spec = pod.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    set_default(spec, "restartPolicy", "Always")
    set_default(spec, "terminationGracePeriodSeconds", 30)
    set_default(spec, "dnsPolicy", "ClusterFirst")
    set_default(spec, "schedulerName", "default-scheduler")
    set_default(spec, "securityContext", {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            default_container(container)


def pod_qos(pod):
    """status.qosClass from the containers' requests and limits."""
    containers = (pod.get("spec") or {}).get("containers") or []
    guaranteed, empty = True, True
    for container in containers:
        resources = container.get("resources") or {} if isinstance(container, dict) else {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            empty = False
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if empty:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


NODE_INFO_FIELDS = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                    "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                    "operatingSystem", "architecture")


def pod_causes(pod):
    spec = pod.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return [("spec.containers", "Required value")]
    causes = []
    for i, container in enumerate(containers):
        for key in ("name", "image"):
            if not isinstance(container, dict) or not container.get(key):
                causes.append(("spec.containers[%d].%s" % (i, key), "Required value"))
    return causes


def pod_grace(pod, requested):
    """The grace period a pod delete gets, as the pod strategy computes it."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if requested is None:
        grace = spec.get("terminationGracePeriodSeconds")
        grace = 30 if grace is None else grace
    else:
        grace = 1 if requested < 0 else requested
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    return grace


class Namespaces(Resource):
    fields = {"status.phase": ""}
    name_pattern = DNS_LABEL

    def __init__(self):
        super().__init__("", "namespaces", "namespace", "Namespace", False, short_names=["ns"])

    @property
    def has_status(self):
        return True  # a main-resource write keeps it; its /status is not served here

    def on_create(self, obj):
        obj["status"] = {"phase": "Active"}

    def defaults(self, obj):
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            set_default(spec, "finalizers", ["kubernetes"])
        labels = obj["metadata"].setdefault("labels", {})
        if isinstance(labels, dict):
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def check_delete(self, name):
        if name in IMMORTAL_NAMESPACES:
            raise ApiError(403, 'namespaces "%s" is forbidden: this namespace may not be'
                           ' deleted' % name, details=self.details(name))


class Nodes(Resource):
    fields = {"spec.unschedulable": "false"}

    def __init__(self):
        super().__init__("", "nodes", "node", "Node", False, ["status"], ["no"])

    def defaults(self, obj):
        """A node's nodeInfo and daemonEndpoints, with zero values: Go's
        encoding always writes them (they are structs, not pointers)."""
        status = obj["status"]
        endpoints = status.setdefault("daemonEndpoints", {})
        if isinstance(endpoints, dict):
            kubelet = endpoints.setdefault("kubeletEndpoint", {})
            if isinstance(kubelet, dict):
                set_default(kubelet, "Port", 0)
        info = status.setdefault("nodeInfo", {})
        if isinstance(info, dict):
            for key in NODE_INFO_FIELDS:
                set_default(info, key, "")


class Pods(Resource):
    fields = {"spec.nodeName": "", "spec.restartPolicy": "", "spec.schedulerName": "",
              "spec.serviceAccountName": "", "spec.hostNetwork": "false",
              "status.phase": "", "status.podIP": "", "status.nominatedNodeName": ""}
    status_keeps_meta = ("ownerReferences",)

    def __init__(self):
        super().__init__("", "pods", "pod", "Pod", True, ["status"], ["po"], ["all"])

    def on_create(self, obj):
        obj["metadata"]["generation"] = 1
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            set_default(status, "phase", "Pending")

    def defaults(self, obj):
        default_pod(obj)

    def after_defaults(self, obj):
        if isinstance(obj.get("status"), dict):
            set_default(obj["status"], "qosClass", pod_qos(obj))

    def causes(self, obj):
        return pod_causes(obj)

    def grace(self, obj, requested):
        return pod_grace(obj, requested)


class Events(Resource):
    """core/v1 Events: what kubectl describe lists under an object, selected
    by the object they are about."""
    fields = {"involvedObject.kind": "", "involvedObject.namespace": "",
              "involvedObject.name": "", "involvedObject.uid": "",
              "involvedObject.apiVersion": "", "involvedObject.resourceVersion": "",
              "involvedObject.fieldPath": "", "reason": "", "reportingComponent": "",
              "source": "", "type": ""}
    has_spec = False

    def __init__(self):
        super().__init__("", "events", "event", "Event", True, [], ["ev"])

    def causes(self, obj):
        if not isinstance(obj.get("involvedObject"), dict):
            return [("involvedObject", "Required value")]
        return []


NAMESPACES = register(Namespaces())
register(Nodes())
register(Pods())
register(Events())


@seed
def initial_namespaces():
    return [(NAMESPACES, prepare_create(NAMESPACES, {
        "kind": "Namespace", "apiVersion": "v1", "metadata": {"name": name}}))
        for name in INITIAL_NAMESPACES]
