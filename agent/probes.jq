# SPDX-License-Identifier: Apache-2.0
# probes.jq: probe-run --serve's commands from kt-agent's tab-separated requests,
# read with jq -R, so the shell never writes JSON itself:
#   start <pod as JSON>        start (or start over) the probes of a pod
#   stop <uid> [<types>]       stop them, or only those types (comma-separated)

split("\t") as $f
| if $f[0] == "start" then {op: "start", pod: ($f[1] | fromjson)}
  elif $f[0] == "stop" then
	{op: "stop", uid: $f[1]}
	+ (if ($f[2] // "") != "" then {types: ($f[2] | split(","))} else {} end)
  else empty
  end
