# SPDX-License-Identifier: Apache-2.0
# runtime.jq: the pod as pod-status reads it: the API's pod with status holding
# what the provider reports for its containers (the runtime's view), read with
# jq -n and these arguments:
#   --slurpfile pod FILE   the pod as the API has it
#   --arg containers TEXT  one line per container the provider knows, tab-separated:
#                          name, running|terminated|waiting, startedAt, exit code,
#                          finishedAt, restarts, waiting reason
#   --slurpfile kill FILE  the status a kill asked for (phase, reason, message,
#                          conditions), or an empty file
#   --arg terminated 0|1   the pod worker finished the pod (its cleanup ran)
#   --arg since TIME       when the agent first saw the pod (startTime)
# pod-status then decides ready, started, the phase and the conditions.

$pod[0] as $p
| ($terminated == "1" and $kill[0] != null) as $killed
| $kill[0] as $kill
| ($p.status // {}) as $api
| [$containers | split("\n")[] | select(. != "") | split("\t")
	| {key: .[0], value: {kind: .[1], startedAt: .[2], exit: .[3], finishedAt: .[4],
		restarts: (.[5] | tonumber? // 0), waiting: .[6]}}] | from_entries
| . as $rt
| $p
| .status = ({}
	+ (if ($api.phase // "") == "Succeeded" or ($api.phase // "") == "Failed"
	   then {phase: $api.phase, reason: $api.reason, message: $api.message} else {} end)
	+ (if $killed then {phase: $kill.phase, reason: $kill.reason, message: $kill.message}
	   else {} end)
	+ {conditions: (($api.conditions // []) + (if $killed then $kill.conditions else [] end)
			| group_by(.type) | map(last)),
	   hostIP: "127.0.0.1", podIP: "127.0.0.1", podIPs: [{ip: "127.0.0.1"}],
	   startTime: $since,
	   containerStatuses: [($p.spec.containers // [])[] as $c
		| $rt[$c.name] | select(. != null) as $r
		| {name: $c.name, restartCount: $r.restarts, image: ($c.image // ""), imageID: ""}
		+ if $r.kind == "terminated" then
			{state: {terminated: {exitCode: ($r.exit | tonumber? // 137),
				reason: (if $r.exit == "0" then "Completed" else "Error" end),
				startedAt: $r.startedAt, finishedAt: $r.finishedAt,
				containerID: ("kt://" + $c.name)}},
			 containerID: ("kt://" + $c.name)}
		  elif $r.kind == "running" then
			{state: {running: {startedAt: $r.startedAt}}, containerID: ("kt://" + $c.name)}
		  else
			{state: {waiting: {reason: (if $r.waiting != "" then $r.waiting
				else "ContainerCreating" end)}}}
		  end]})
