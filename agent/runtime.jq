# SPDX-License-Identifier: Apache-2.0
# runtime.jq: the pod as pod-status reads it: the API's pod with status holding
# what the provider reports for its containers (the runtime's view).  One jq -R
# runs it for the whole node; kt-agent writes one request a line, tab-separated:
#   <uid> <terminated> <since> <containers> <pod as JSON>
# terminated: 1 when the pod worker finished the pod (its cleanup ran), else 0;
# since: when the agent first saw the pod (startTime); containers: one record a
# container the provider knows, records separated by \u001e (RS) and fields by
# \u001f (US): name, running|terminated|waiting, startedAt, exit code, finishedAt,
# restarts, waiting reason.  Each request gives a short line and the runtime pod,
#   <uid> <terminated> <bytes>
#   <runtime pod as JSON>
# bytes being the second line's, newline included, so that the agent copies it
# to a file (head -c) and no shell reads it; or one line,
#   <uid> <terminated> error <why>
# when the request could not be read.
# pod-status then decides ready, started, the phase and the conditions, and lays
# what a kill reports over them (--kill-status).

def runtime($since; $containers):
	. as $p
	| ($p.status // {}) as $api
	| [$containers | split("\u001e")[] | select(. != "") | split("\u001f")
		| {key: .[0], value: {kind: .[1], startedAt: .[2], exit: .[3], finishedAt: .[4],
			restarts: (.[5] | tonumber? // 0), waiting: (.[6] // "")}}] | from_entries
	| . as $rt
	| $p
	| .status = ({}
		+ (if ($api.phase // "") == "Succeeded" or ($api.phase // "") == "Failed"
		   then {phase: $api.phase, reason: $api.reason, message: $api.message} else {} end)
		+ {conditions: ($api.conditions // []),
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
			  end]});

split("\t") as $f
| "\($f[0])\t\($f[1])\t" as $head
| try
	($f[4:] | join("\t") | fromjson
	 | runtime($f[2]; $f[3])
	 | tojson
	 | $head + (utf8bytelength + 1 | tostring), .)
  catch ($head + "error \(tostring | .[:300] | gsub("[\t\n]"; " "))")
