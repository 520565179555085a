# SPDX-License-Identifier: Apache-2.0
# coordination: coordination.k8s.io/v1 leases, the node heartbeats.

from machinery.registry import Resource, register

register(Resource("coordination.k8s.io", "leases", "lease", "Lease", True))
