# SPDX-License-Identifier: Apache-2.0
# apps: apps/v1 Deployments, ReplicaSets, StatefulSets and DaemonSets, each
# with its /status.  No controller runs: a test plays it by writing status.

from machinery.objects import set_default
from machinery.registry import Resource, register


class Workload(Resource):
    """A workload: a generation bumped by spec changes, its defaults."""

    # whether spec.replicas defaults to 1 (all but DaemonSets)
    has_replicas = True

    def __init__(self, plural, singular, kind, short_names):
        super().__init__("apps", plural, singular, kind, True, ["status"], short_names, ["all"])

    def on_create(self, obj):
        obj["metadata"]["generation"] = 1

    def defaults(self, obj):
        spec = obj["spec"]
        if self.has_replicas:
            set_default(spec, "replicas", 1)
        set_default(spec, "revisionHistoryLimit", 10)
        self.strategy(spec)

    def strategy(self, spec):
        """The kind's update strategy defaults."""


class Deployments(Workload):
    def __init__(self):
        super().__init__("deployments", "deployment", "Deployment", ["deploy"])

    def strategy(self, spec):
        set_default(spec, "progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            set_default(strategy, "type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    set_default(rolling, "maxSurge", "25%")
                    set_default(rolling, "maxUnavailable", "25%")


class ReplicaSets(Workload):
    def __init__(self):
        super().__init__("replicasets", "replicaset", "ReplicaSet", ["rs"])


def rolling_update(spec, **defaults):
    """updateStrategy defaulted to RollingUpdate, and its rollingUpdate's
    fields to defaults when that is the type (StatefulSets, DaemonSets)"""
    strategy = spec.setdefault("updateStrategy", {})
    if isinstance(strategy, dict):
        set_default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            if isinstance(rolling, dict):
                for k, v in defaults.items():
                    set_default(rolling, k, v)


class StatefulSets(Workload):
    def __init__(self):
        super().__init__("statefulsets", "statefulset", "StatefulSet", ["sts"])

    def strategy(self, spec):
        set_default(spec, "podManagementPolicy", "OrderedReady")
        rolling_update(spec, partition=0)


class DaemonSets(Workload):
    has_replicas = False

    def __init__(self):
        super().__init__("daemonsets", "daemonset", "DaemonSet", ["ds"])

    def strategy(self, spec):
        rolling_update(spec, maxUnavailable=1, maxSurge=0)


register(Deployments())
register(ReplicaSets())
register(StatefulSets())
register(DaemonSets())
