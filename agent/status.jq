# SPDX-License-Identifier: Apache-2.0
# status.jq: a pod's status as the kubelet would report it, from what the provider
# keeps for its containers, read with jq -n and these arguments:
#   --slurpfile pod FILE   the pod as the API has it
#   --slurpfile prev FILE  the status patch sent last (null if none): condition
#                          times move only when a condition's status does
#   --arg containers TEXT  one line per container the provider knows, tab-separated:
#                          name, running|terminated|waiting, startedAt, exit code,
#                          finishedAt, restarts, waiting reason
#   --arg probes TEXT      one line per probe result: container type result
#   --slurpfile kill FILE  the status a kill asked for (phase, reason, message,
#                          conditions), or an empty file
#   --arg terminated 0|1   the pod worker finished the pod (its cleanup ran)
#   --arg since TIME       when the agent first saw the pod (startTime)
#   --arg now TIME
# Prints two lines: "<phase> <True|False>", then the merge patch of pods/NAME/status.

$pod[0] as $p
| $kill[0] as $kill
| ($prev[0] // {}) as $last
| ($terminated == "1") as $done
| ([$containers | split("\n")[] | select(. != "") | split("\t")
	| {key: .[0], value: {kind: .[1], startedAt: .[2], exit: .[3], finishedAt: .[4],
		restarts: (.[5] | tonumber? // 0), waiting: .[6]}}] | from_entries) as $rt
| ([$probes | split("\n")[] | select(. != "") | split(" ")
	| {key: (.[0] + "/" + .[1]), value: .[2]}] | from_entries) as $pr
| [($p.spec.containers // [])[] as $c
	| ($rt[$c.name] // {kind: "waiting"}) as $r
	| ($r.kind == "running") as $running
	| ($running and (($c | has("startupProbe") | not) or $pr[$c.name + "/startup"] == "success"))
		as $started
	| ($started and (($c | has("readinessProbe") | not)
		or $pr[$c.name + "/readiness"] == "success") and ($done | not)) as $ready
	| {name: $c.name,
	   state: (if $r.kind == "terminated" then
			{terminated: {exitCode: ($r.exit | tonumber? // 137),
				reason: (if $r.exit == "0" then "Completed" else "Error" end),
				startedAt: $r.startedAt, finishedAt: $r.finishedAt,
				containerID: ("kt://" + $c.name)}}
		elif $running then {running: {startedAt: $r.startedAt}}
		else {waiting: {reason: (if ($r.waiting // "") != "" then $r.waiting
			else "ContainerCreating" end)}}
		end),
	   ready: $ready, restartCount: $r.restarts, image: ($c.image // ""), imageID: "",
	   started: $started}
	  + (if $r.kind == "waiting" then {} else {containerID: ("kt://" + $c.name)} end)]
	as $cs
| [$rt[]] as $known
| ([$known[] | select(.kind == "terminated")]) as $ended
| ([$ended[] | select(.exit == "0")] | length) as $ok
| (($p.spec.containers // []) | length) as $n
| (if any($known[]; .kind == "running") and ($done | not) then "Running"
   elif $n > 0 and ($ended | length) == $n and ($p.spec.restartPolicy // "Always") != "Always"
	then (if $ok == $n then "Succeeded" else "Failed" end)
   elif $done then "Failed"
   elif $ended != [] then "Running"
   else "Pending"
   end) as $phase0
| ($done and $kill != null) as $killed
| (if $killed and ($kill.phase // "") != "" then $kill.phase else $phase0 end) as $phase
| (if $phase == "Running" and $cs != [] and all($cs[]; .ready) then "True" else "False" end)
	as $readyStatus
| def cond($type; $status):
	([($last.status.conditions // [])[] | select(.type == $type and .status == $status)
		| .lastTransitionTime][0] // $now) as $t
	| {type: $type, status: $status, lastProbeTime: null, lastTransitionTime: $t};
  ([(cond("PodScheduled"; "True") | .lastTransitionTime = $since),
   (cond("Initialized"; "True") | .lastTransitionTime = $since),
   cond("ContainersReady"; $readyStatus), cond("Ready"; $readyStatus)]
  + (if $killed then [$kill.conditions[]? | cond(.type; .status // "True") + {reason, message}]
     else [] end))
	as $conditions
| "\($phase) \($readyStatus)",
  ({status: ({phase: $phase}
	+ (if $killed then {reason: $kill.reason, message: $kill.message} else {} end)
	+ {conditions: $conditions, hostIP: "127.0.0.1", podIP: "127.0.0.1",
	   podIPs: [{ip: "127.0.0.1"}], startTime: $since, containerStatuses: $cs})} | tojson)
