# SPDX-License-Identifier: Apache-2.0
# batch: batch/v1 Jobs with their /status.  No controller runs: a test
# plays it by writing status.

from machinery.objects import set_default
from machinery.registry import Resource, register


class Jobs(Resource):
    def __init__(self):
        super().__init__("batch", "jobs", "job", "Job", True, ["status"], [], ["all"])

    def on_create(self, obj):
        obj["metadata"]["generation"] = 1

    def defaults(self, obj):
        spec = obj["spec"]
        set_default(spec, "parallelism", 1)
        set_default(spec, "backoffLimit", 6)
        set_default(spec, "completionMode", "NonIndexed")
        set_default(spec, "suspend", False)


register(Jobs())
