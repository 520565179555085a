# SPDX-License-Identifier: Apache-2.0
# events.jq: podworker-step's events from kt-agent's tab-separated requests, read
# with jq -R, so the shell never writes JSON itself:
#   update <create|update|kill> <pod as JSON, or @ and the file that holds it>
#   complete <uid> <sync|terminating|terminated> <ok|error|canceled>
#   known <uid>...                     sync-known-pods (housekeeping)
#   shutdown <grace> <critical grace> <slack>  graceful node shutdown
#   cancel-shutdown                    no shutdown goes on (the agent has started)
#   tick                               time passed (a shutdown's deadlines)
#   resume                             the work handed out and not completed, again
# Every event carries the current time as "now".

(now | todate) as $now
| split("\t") as $f
| if $f[0] == "update" then
	{op: "update", updateType: $f[1], now: $now}
	+ if $f[2] | startswith("@") then {podFile: $f[2][1:]} else {pod: ($f[2] | fromjson)} end
  elif $f[0] == "complete" then
	{op: "complete", uid: $f[1], work: $f[2], result: $f[3], now: $now}
  elif $f[0] == "known" then
	{op: "sync-known-pods", uids: [$f[1:][] | select(. != "")], now: $now}
  elif $f[0] == "resume" then {op: "resume"}
  elif $f[0] == "shutdown" then
	{op: "node-shutdown", shutdownGracePeriodSeconds: ($f[1] | tonumber),
	 shutdownGracePeriodCriticalPodsSeconds: ($f[2] | tonumber),
	 shutdownSlackSeconds: ($f[3] // "0" | tonumber), now: $now}
  elif $f[0] == "tick" then {op: "tick", now: $now}
  elif $f[0] == "cancel-shutdown" then {op: "node-shutdown", cancel: true, now: $now}
  else empty
  end
