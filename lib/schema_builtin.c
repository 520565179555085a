/* SPDX-License-Identifier: Apache-2.0 */
/* schema_builtin: patch tags of the core Kubernetes types, as a table */
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"

/*
 * One row per field that matters to SMP: the fields with patch tags, and the
 * maps, lists and structs on the way to them.  A row reads: type, field,
 * shape ('s' struct, 'a' array, 'm' map, 'p' primitive), element or struct
 * type (NULL: primitive or unknown), patch strategy, merge key.  Types are
 * "open": a field not listed here has no metadata, which is what upstream's
 * struct tags say for every untagged field.
 */
struct row {
	const char *type, *field;
	char shape;
	const char *ref, *strategy, *key;
};

static const struct row rows[] = {
	/* roots */
	{ "Node", "metadata", 's', "ObjectMeta", NULL, NULL },
	{ "Node", "spec", 's', "NodeSpec", NULL, NULL },
	{ "Node", "status", 's', "NodeStatus", NULL, NULL },
	{ "Pod", "metadata", 's', "ObjectMeta", NULL, NULL },
	{ "Pod", "spec", 's', "PodSpec", NULL, NULL },
	{ "Pod", "status", 's', "PodStatus", NULL, NULL },
	{ "Lease", "metadata", 's', "ObjectMeta", NULL, NULL },
	{ "Lease", "spec", 's', "LeaseSpec", NULL, NULL },
	{ "ConfigMap", "metadata", 's', "ObjectMeta", NULL, NULL },
	{ "ConfigMap", "data", 'm', NULL, NULL, NULL },
	{ "ConfigMap", "binaryData", 'm', NULL, NULL, NULL },
	{ "Service", "metadata", 's', "ObjectMeta", NULL, NULL },
	{ "Service", "spec", 's', "ServiceSpec", NULL, NULL },
	{ "Service", "status", 's', "ServiceStatus", NULL, NULL },
	{ "Deployment", "metadata", 's', "ObjectMeta", NULL, NULL },
	{ "Deployment", "spec", 's', "DeploymentSpec", NULL, NULL },
	{ "Deployment", "status", 's', "DeploymentStatus", NULL, NULL },

	/* meta/v1 */
	{ "ObjectMeta", "labels", 'm', NULL, NULL, NULL },
	{ "ObjectMeta", "annotations", 'm', NULL, NULL, NULL },
	{ "ObjectMeta", "ownerReferences", 'a', "OwnerReference", "merge", "uid" },
	{ "ObjectMeta", "finalizers", 'a', NULL, "merge", NULL },
	{ "ObjectMeta", "managedFields", 'a', "ManagedFieldsEntry", NULL, NULL },
	{ "LabelSelector", "matchLabels", 'm', NULL, NULL, NULL },
	{ "LabelSelector", "matchExpressions", 'a', "LabelSelectorRequirement", NULL,
	  NULL },
	{ "LabelSelectorRequirement", "values", 'a', NULL, NULL, NULL },

	/* core/v1 Node */
	{ "NodeSpec", "podCIDRs", 'a', NULL, "merge", NULL },
	{ "NodeSpec", "taints", 'a', "Taint", NULL, NULL },
	{ "NodeStatus", "capacity", 'm', NULL, NULL, NULL },
	{ "NodeStatus", "allocatable", 'm', NULL, NULL, NULL },
	{ "NodeStatus", "conditions", 'a', "NodeCondition", "merge", "type" },
	{ "NodeStatus", "addresses", 'a', "NodeAddress", "merge", "type" },
	{ "NodeStatus", "daemonEndpoints", 's', "NodeDaemonEndpoints", NULL, NULL },
	{ "NodeStatus", "nodeInfo", 's', "NodeSystemInfo", NULL, NULL },
	{ "NodeStatus", "images", 'a', "ContainerImage", NULL, NULL },
	{ "NodeStatus", "volumesInUse", 'a', NULL, NULL, NULL },
	{ "NodeStatus", "volumesAttached", 'a', "AttachedVolume", NULL, NULL },
	{ "NodeStatus", "config", 's', "NodeConfigStatus", NULL, NULL },
	{ "NodeStatus", "runtimeHandlers", 'a', "NodeRuntimeHandler", NULL, NULL },
	{ "NodeStatus", "features", 's', "NodeFeatures", NULL, NULL },
	{ "NodeStatus", "declaredFeatures", 'a', NULL, NULL, NULL },
	{ "ContainerImage", "names", 'a', NULL, NULL, NULL },

	/* core/v1 Pod */
	{ "PodSpec", "volumes", 'a', "Volume", "merge,retainKeys", "name" },
	{ "PodSpec", "initContainers", 'a', "Container", "merge", "name" },
	{ "PodSpec", "containers", 'a', "Container", "merge", "name" },
	{ "PodSpec", "ephemeralContainers", 'a', "EphemeralContainer", "merge", "name" },
	{ "PodSpec", "imagePullSecrets", 'a', "LocalObjectReference", "merge", "name" },
	{ "PodSpec", "hostAliases", 'a', "HostAlias", "merge", "ip" },
	{ "PodSpec", "topologySpreadConstraints", 'a', "TopologySpreadConstraint",
	  "merge", "topologyKey" },
	{ "PodSpec", "schedulingGates", 'a', "PodSchedulingGate", "merge", "name" },
	{ "PodSpec", "resourceClaims", 'a', "PodResourceClaim", "merge,retainKeys",
	  "name" },
	{ "PodSpec", "evictionResponders", 'a', "EvictionResponder", "merge", "name" },
	{ "PodSpec", "tolerations", 'a', "Toleration", NULL, NULL },
	{ "PodSpec", "readinessGates", 'a', "PodReadinessGate", NULL, NULL },
	{ "PodSpec", "nodeSelector", 'm', NULL, NULL, NULL },
	{ "PodSpec", "overhead", 'm', NULL, NULL, NULL },
	{ "PodSpec", "resources", 's', "ResourceRequirements", NULL, NULL },
	{ "PodStatus", "conditions", 'a', "PodCondition", "merge", "type" },
	{ "PodStatus", "hostIPs", 'a', "HostIP", "merge", "ip" },
	{ "PodStatus", "podIPs", 'a', "PodIP", "merge", "ip" },
	{ "PodStatus", "resourceClaimStatuses", 'a', "PodResourceClaimStatus",
	  "merge,retainKeys", "name" },
	{ "PodStatus", "nodeAllocatableResourceClaimStatuses", 'a',
	  "NodeAllocatableResourceClaimStatus", "merge", "resourceClaimName" },
	{ "PodStatus", "initContainerStatuses", 'a', "ContainerStatus", NULL, NULL },
	{ "PodStatus", "containerStatuses", 'a', "ContainerStatus", NULL, NULL },
	{ "PodStatus", "ephemeralContainerStatuses", 'a', "ContainerStatus", NULL, NULL },
	{ "PodStatus", "volumeHealth", 'a', "PodVolumeHealth", NULL, NULL },
	{ "PodVolumeHealth", "healthConditions", 'a', "VolumeHealthCondition", "merge",
	  "status" },
	{ "NodeAllocatableResourceClaimStatus", "mapping", 'a', NULL, "merge", "name" },
	{ "NodeAllocatableResourceClaimStatus", "overhead", 'a', NULL, "merge", "name" },

	{ "Container", "ports", 'a', "ContainerPort", "merge", "containerPort" },
	{ "Container", "env", 'a', "EnvVar", "merge", "name" },
	{ "Container", "volumeMounts", 'a', "VolumeMount", "merge", "mountPath" },
	{ "Container", "volumeDevices", 'a', "VolumeDevice", "merge", "devicePath" },
	{ "Container", "command", 'a', NULL, NULL, NULL },
	{ "Container", "args", 'a', NULL, NULL, NULL },
	{ "Container", "envFrom", 'a', "EnvFromSource", NULL, NULL },
	{ "Container", "resizePolicy", 'a', "ContainerResizePolicy", NULL, NULL },
	{ "Container", "restartPolicyRules", 'a', "ContainerRestartRule", NULL, NULL },
	{ "Container", "resources", 's', "ResourceRequirements", NULL, NULL },
	{ "EphemeralContainer", "ports", 'a', "ContainerPort", "merge", "containerPort" },
	{ "EphemeralContainer", "env", 'a', "EnvVar", "merge", "name" },
	{ "EphemeralContainer", "volumeMounts", 'a', "VolumeMount", "merge",
	  "mountPath" },
	{ "EphemeralContainer", "volumeDevices", 'a', "VolumeDevice", "merge",
	  "devicePath" },
	{ "EphemeralContainer", "command", 'a', NULL, NULL, NULL },
	{ "EphemeralContainer", "args", 'a', NULL, NULL, NULL },
	{ "EphemeralContainer", "resources", 's', "ResourceRequirements", NULL, NULL },
	{ "ResourceRequirements", "limits", 'm', NULL, NULL, NULL },
	{ "ResourceRequirements", "requests", 'm', NULL, NULL, NULL },
	{ "ResourceRequirements", "claims", 'a', "ResourceClaim", NULL, NULL },
	{ "ContainerStatus", "volumeMounts", 'a', "VolumeMountStatus", "merge",
	  "mountPath" },
	{ "ContainerStatus", "allocatedResourcesStatus", 'a', "ResourceStatus", "merge",
	  "name" },
	{ "ContainerStatus", "allocatedResources", 'm', NULL, NULL, NULL },
	{ "ContainerStatus", "resources", 's', "ResourceRequirements", NULL, NULL },
	{ "ResourceStatus", "resources", 'a', "ResourceHealth", NULL, NULL },

	/* coordination/v1 Lease: no patch tags at all */
	{ "LeaseSpec", "holderIdentity", 'p', NULL, NULL, NULL },

	/* core/v1 Service */
	{ "ServiceSpec", "ports", 'a', "ServicePort", "merge", "port" },
	{ "ServiceSpec", "selector", 'm', NULL, NULL, NULL },
	{ "ServiceSpec", "clusterIPs", 'a', NULL, NULL, NULL },
	{ "ServiceSpec", "externalIPs", 'a', NULL, NULL, NULL },
	{ "ServiceSpec", "ipFamilies", 'a', NULL, NULL, NULL },
	{ "ServiceSpec", "loadBalancerSourceRanges", 'a', NULL, NULL, NULL },
	{ "ServiceStatus", "conditions", 'a', "Condition", "merge", "type" },
	{ "ServiceStatus", "loadBalancer", 's', "LoadBalancerStatus", NULL, NULL },
	{ "LoadBalancerStatus", "ingress", 'a', "LoadBalancerIngress", NULL, NULL },

	/* apps/v1 Deployment */
	{ "DeploymentSpec", "selector", 's', "LabelSelector", NULL, NULL },
	{ "DeploymentSpec", "template", 's', "PodTemplateSpec", NULL, NULL },
	{ "DeploymentSpec", "strategy", 's', "DeploymentStrategy", NULL, NULL },
	{ "PodTemplateSpec", "metadata", 's', "ObjectMeta", NULL, NULL },
	{ "PodTemplateSpec", "spec", 's', "PodSpec", NULL, NULL },
	{ "DeploymentStatus", "conditions", 'a', "DeploymentCondition", "merge", "type" },
};

static const char *const kinds[] = {
	"Node", "Pod", "Lease", "ConfigMap", "Service", "Deployment", "ObjectMeta", NULL,
};

const char *const *kt_schema_builtin_kinds(void)
{
	return kinds;
}

static struct kt_schema_node *named(struct kt_schema *s, const char *name)
{
	struct kt_schema_node *n;

	for (n = s->nodes; n; n = n->next_alloc)
		if (n->kind == KT_SK_STRUCT && strcmp(n->name, name) == 0)
			return n;
	n = kt_schema_node_new(s, KT_SK_STRUCT, name);
	if (n)
		n->open = true;
	return n;
}

/* the node a row's field holds */
static struct kt_schema_node *row_type(struct kt_schema *s, const struct row *r)
{
	struct kt_schema_node *elem = NULL, *n;

	if (r->shape == 'p')
		return kt_schema_node_new(s, KT_SK_PRIM, "");
	if (r->shape == 's')
		return named(s, r->ref);
	if (r->ref) {
		elem = named(s, r->ref);
		if (!elem)
			return NULL;
	} else {
		/* merge lists of maps without a listed type still hold structs */
		elem = kt_schema_node_new(s, r->key ? KT_SK_STRUCT : KT_SK_PRIM, "");
		if (elem && r->key)
			elem->open = true;
		if (!elem)
			return NULL;
	}
	n = kt_schema_node_new(s, r->shape == 'a' ? KT_SK_ARRAY : KT_SK_MAP, "");
	if (n)
		n->elem = elem;
	return n;
}

struct kt_schema *kt_schema_builtin(const char *kind, struct kt_err *err)
{
	struct kt_schema *s;
	size_t i;

	for (i = 0; kinds[i]; i++)
		if (kind && strcmp(kinds[i], kind) == 0)
			break;
	if (!kinds[i]) {
		kt_error_kind(
			err, KT_ERR_INPUT,
			"unknown kind '%s': built in are Node, Pod, Lease, ConfigMap, "
			"Service, Deployment, ObjectMeta",
			kind ? kind : "");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto out;
	/* the whole table is small: build every type, then pick the root */
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct kt_schema_node *owner = named(s, rows[i].type);
		struct kt_schema_node *t = owner ? row_type(s, &rows[i]) : NULL;

		if (!t || kt_schema_field_add(owner, rows[i].field, rows[i].strategy,
					      rows[i].key, t) < 0)
			goto out;
	}
	s->root = named(s, kind);
	if (!s->root)
		goto out;
	kt_schema_seal(s);
	return s;
out:
	kt_schema_free(s);
	kt_error(err, "out of memory");
	return NULL;
}
