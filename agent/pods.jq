# SPDX-License-Identifier: Apache-2.0
# pods.jq: the node's pods as kt-agent wants them, from kube-request --watch
# --bookmarks read with jq -n -r: for each pod that changed in a way the pod worker
# cares about, a short tab-separated line, then its plan, then the pod,
#   ADDED|MODIFIED|DELETED <uid> <namespace> <name> <flags> <time> <plan bytes> <pod bytes>
#   <plan>
#   <pod as JSON>
# flags being "p" when it has probes, "d" when its deletionTimestamp is set, or "-",
# and time the time of the line (RFC 3339, whole seconds), so that the agent
# learns when it first saw a pod without running date; plan is the built-in
# provider's plan for it (plan.jq), a line left out when it cannot be made (the
# provider then says why).  The byte counts are those of the two lines that
# follow, newlines included (0: the plan is left out), so that pod-source copies
# each into a file (head -c) and no shell reads the pod: it can be megabytes;
#   SYNCED
# once the initial events are out (the bookmark that ends them), and
#   INVALID <message>
# for a pod whose UID, namespace, name or container names could not name a file
# or a path.  A change of status or resourceVersion alone is no change: the
# kubelet's config source does not hand those to the pod workers either.
# A pod deleted while the watch was away comes as DELETED from kube-request
# itself: pod-source hands it the pods the agent has (--known), and its first
# list reports what is gone, as a re-list does.

include "plan";

def valid_uid: type == "string" and test("^[0-9A-Za-z][-0-9A-Za-z]{0,63}$");
def valid_label: type == "string" and length <= 63 and test("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
def valid_subdomain:
	type == "string" and length <= 253
	and test("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");

def problem:
	if (.metadata.uid | valid_uid | not) then "uid \(.metadata.uid | tojson)"
	elif (.metadata.namespace | valid_label | not) then "namespace \(.metadata.namespace | tojson)"
	elif (.metadata.name | valid_subdomain | not) then "name \(.metadata.name | tojson)"
	else [(.spec.initContainers // [])[], (.spec.containers // [])[]
		| .name | select(valid_label | not)] as $bad
		| if $bad != [] then "container name \($bad[0] | tojson)" else null end
	end;

# watch events' objects carry kind and apiVersion, list items do not
def semantic: del(.kind, .apiVersion, .metadata.resourceVersion, .metadata.managedFields, .status);

def has_probes:
	any((.spec.initContainers // [])[], (.spec.containers // [])[];
		has("livenessProbe") or has("readinessProbe") or has("startupProbe"));

def line($type):
	problem as $p
	| if $p != null then
		"INVALID\tpod \(.metadata.namespace | tojson)/\(.metadata.name | tojson): invalid \($p)"
	  else
		(try plan catch "") as $plan
		| tojson as $pod
		| ([$type, .metadata.uid, .metadata.namespace, .metadata.name,
		    ((if has_probes then "p" else "" end)
		     + (if .metadata.deletionTimestamp != null then "d" else "" end)
		     | if . == "" then "-" else . end),
		    (now | todate),
		    (if $plan == "" then 0 else ($plan | utf8bytelength) + 1 end | tostring),
		    ($pod | utf8bytelength) + 1 | tostring] | join("\t")),
		  ($plan | select(. != "")), $pod
	  end;

def uid: .metadata.uid;

def initial_end:
	.type == "BOOKMARK"
	and (.object.metadata.annotations["k8s.io/initial-events-end"] // "") == "true";

foreach inputs as $in ({known: {}, out: []};
	.known as $old
	| if ($in | type) != "object" then .out = []
	  elif ($in | initial_end) then .out = ["SYNCED"]
	  elif ($in.type == "ADDED" or $in.type == "MODIFIED") and ($in.object | uid | type == "string")
	  then
		$in.object as $o | ($o | uid) as $u
		# a UID that cannot name a pod is reported, and never kept
		| if ($u | valid_uid | not) then .out = [$o | line("ADDED")]
		  elif $old[$u] == ($o | semantic) then .out = []
		  else .out = [$o | line(if $old | has($u) then "MODIFIED" else "ADDED" end)]
			| .known[$u] = ($o | semantic)
		  end
	  # every DELETED: after a restart the agent knows pods this filter never saw
	  elif $in.type == "DELETED" and ($in.object | uid | valid_uid) then
		.out = [$in.object | line("DELETED")] | del(.known[$in.object | uid])
	  else .out = []
	  end;
	.out[])
