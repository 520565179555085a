# SPDX-License-Identifier: Apache-2.0
# probes.jq: probe-run --serve's commands from kt-agent's tab-separated requests,
# read with jq -R, so the shell never writes JSON itself:
#   start @<path>              start (or start over) the probes of the pod in the
#                              file <path>: probe-run reads it, no shell or jq does
#   start <pod as JSON>        the same with the pod itself
#   stop <uid> [<types>]       stop them, or only those types (comma-separated)

split("\t") as $f
| if $f[0] == "start" then
	if $f[1] | startswith("@") then {op: "start", podFile: $f[1][1:]}
	else {op: "start", pod: ($f[1] | fromjson)} end
  elif $f[0] == "stop" then
	{op: "stop", uid: $f[1]}
	+ (if ($f[2] // "") != "" then {types: ($f[2] | split(","))} else {} end)
  else empty
  end
