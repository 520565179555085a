# SPDX-License-Identifier: Apache-2.0
# pods.jq: the node's pods as kt-agent wants them, from lists (PodList) and watch
# events ({"type":..,"object":..}) read with jq -n: one tab-separated line per pod
# that changed in a way the pod worker cares about,
#   ADDED|MODIFIED|DELETED <uid> <namespace> <name> <flags> <pod as JSON>
# flags being "p" when it has probes, "d" when its deletionTimestamp is set, or "-",
# LISTED after each list (the agent then runs housekeeping), and
#   INVALID <message>
# for a pod whose UID, namespace, name or container names could not name a file
# or a path.  A change of status or resourceVersion alone is no change: the
# kubelet's config source does not hand those to the pod workers either.

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
		[$type, .metadata.uid, .metadata.namespace, .metadata.name,
		 ((if has_probes then "p" else "" end)
		  + (if .metadata.deletionTimestamp != null then "d" else "" end)
		  | if . == "" then "-" else . end),
		 tojson] | join("\t")
	  end;

def uid: .metadata.uid;

foreach inputs as $in ({known: {}, out: []};
	.known as $old
	| if ($in | type) != "object" then .out = []
	  elif ($in | has("items")) then
		[($in.items // [])[] | select(uid | type == "string")] as $items
		| ($items | map({key: uid, value: semantic}) | from_entries) as $now
		| .out = [($items[] | uid as $u | select($old[$u] != semantic)
				| line(if $old | has($u) then "MODIFIED" else "ADDED" end)),
			  ($old | to_entries[] | select($now | has(.key) | not) | .value | line("DELETED")),
			  "LISTED"]
		| .known = $now
	  elif ($in.type == "ADDED" or $in.type == "MODIFIED") and ($in.object | uid | type == "string")
	  then
		$in.object as $o | ($o | uid) as $u
		| if $old[$u] == ($o | semantic) then .out = []
		  else .out = [$o | line(if $old | has($u) then "MODIFIED" else "ADDED" end)]
			| .known[$u] = ($o | semantic)
		  end
	  elif $in.type == "DELETED" and ($in.object | uid | type == "string")
		and ($old | has($in.object | uid)) then
		.out = [$in.object | line("DELETED")] | del(.known[$in.object | uid])
	  else .out = []
	  end;
	.out[])
