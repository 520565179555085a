# SPDX-License-Identifier: Apache-2.0
# results.jq: podworker-step's results as short lines for kt-agent's event bus,
# each well under PIPE_BUF so that writers never interleave:
#   pod <uid> <work|-> <action>...      actions in order: sync-pod, start-probes,
#                                       stop-probes:<types>, kill-pod:<grace>,
#                                       cleanup-pod, forget, cancel:<work>, requeue
#   killstatus <uid> <status as JSON>   what a kill-pod must report (before its pod line)
#   group <priority> <grace> <deadline>  a node shutdown's group started now; its
#                                       pods' lines follow
#   shutdown running|done               a node shutdown goes on, or its last group is over
#   refused <uid> <reason>              an update that was ignored

def action:
	.action + if .action == "stop-probes" then ":" + (.types | join(","))
		elif .action == "kill-pod" then ":" + (.gracePeriodSeconds | tostring)
		elif .action == "cancel" then ":" + (.work // "-")
		else "" end;

def killstatus:
	.uid as $uid
	| .actions[]? | select(.action == "kill-pod" and (.status | type) == "object")
	| .status
	| "killstatus \($uid) \({phase, reason,
		message: (.message | if type == "string" then .[:512] else . end),
		conditions: [(.conditions // [])[] | select(.type == "DisruptionTarget")
			| {type, status, reason, message: (.message // "" | .[:512])}]}
		| tojson)";

def podlines:
	killstatus,
	(select(.work != null or ((.actions // []) | length) > 0)
		| "pod \(.uid) \(.work // "-") \([(.actions // [])[] | action] | join(" "))");

# the groups a node-shutdown, complete or tick started, and where the shutdown is
def shutdown:
	select(.shutdown != null)
	| ((.groups // [])[] | "group \(.priority) \(.shutdownGracePeriodSeconds) \(.deadline)",
		(.pods[] | podlines)),
	  "shutdown \(.shutdown)";

# resume: the work a killed agent had out, handed out again as it first was
if .op == "sync-known-pods" or .op == "resume" then (.pods // [])[] | podlines
elif .op == "node-shutdown" or .op == "tick" then shutdown
elif .op == "update" or .op == "complete" then
	(select(.ignored != null) | "refused \(.uid) \(.ignored | tostring | gsub("[\n\t]"; " ") | .[:200])"),
	podlines,
	shutdown
else empty
end
