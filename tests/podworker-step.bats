#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# podworker-step: upstream's pod worker cases as event streams, state file safety, bad input

load helper

# a case: its events through one process, compared with the expected results
# (which carry the pod in sync-pod actions, so that they check it too)
golden() {
	run -0 --separate-stderr podworker-step --show-pod --stream "$FIX/$1.in.json"
	[ "$output" = "$(cat "$FIX/$1.out.json")" ]
	[ -z "$stderr" ]
}

# the same events one invocation each, through a state file
golden_oneshot() {
	local st="$BATS_TEST_TMPDIR/$1.state" ev out="$BATS_TEST_TMPDIR/$1.out"
	: >"$out"
	while IFS= read -r ev; do
		podworker-step --show-pod --state "$st" "$ev" >>"$out"
	done <"$FIX/$1.in.json"
	cmp "$out" "$FIX/$1.out.json"
}

# a create event for each UID given; printf only, since process start-up is what costs
create() {
	local uid
	for uid; do
		printf '{"op":"update","updateType":"create","now":"2026-01-01T00:00:01Z","pod":{"metadata":{"uid":"%s","name":"pod-%s","namespace":"ns"},"spec":{"terminationGracePeriodSeconds":30}}}\n' "$uid" "$uid"
	done
}

@test "podworker-step: TestUpdatePod 'new pod recorded and started'" {
	golden update-new-pod
}

@test "podworker-step: TestUpdatePod 'create of a terminating UID sets restartRequested and is dropped'" {
	golden update-duplicate-terminating-uid
}

@test "podworker-step: TestUpdatePod 'a RunningPod beside a Pod is ignored'" {
	golden update-running-pod-with-pod
}

@test "podworker-step: TestUpdatePod 'terminated when an update has a deletionTimestamp'" {
	golden update-deletion-timestamp
}

@test "podworker-step: TestUpdatePod 'terminated when an eviction is requested'" {
	golden update-evicted
}

@test "podworker-step: TestUpdatePod 'terminal, never started, no terminal runtime state'" {
	golden update-terminal-not-cached
}

@test "podworker-step: TestUpdatePod 'terminal, never started, terminal runtime state cached'" {
	golden update-terminal-cached
}

@test "podworker-step: TestUpdatePod 'orphaned running pod is killed and forgotten'" {
	golden update-orphan-running-pod
}

@test "podworker-step: TestUpdatePod 'orphaned running pod with a non-kill update is ignored'" {
	golden update-orphan-running-pod-not-kill
}

@test "podworker-step: TestUpdatePodForTerminatedRuntimePod: no work for a runtime kill" {
	golden update-terminated-runtime-pod
}

@test "podworker-step: TestKillPodNowFunc: override 0 and the kill's status" {
	golden kill-pod-now
}

@test "podworker-step: TestUpdatePodDoesNotForgetSyncPodKill" {
	golden does-not-forget-sync-pod-kill
}

@test "podworker-step: TestTerminalPhaseTransition" {
	golden terminal-phase-transition
}

@test "podworker-step: TestStaticPodExclusion" {
	golden static-pod-exclusion
}

@test "podworker-step: TestStaticPodExclusion leaves the started and waiting maps in the state" {
	local st="$BATS_TEST_TMPDIR/state"
	run -0 --separate-stderr podworker-step --show-pod --state "$st" --stream "$FIX/static-pod-exclusion.in.json"
	[ "$output" = "$(cat "$FIX/static-pod-exclusion.out.json")" ]
	run -0 cat "$st/node"
	[ "$output" = '{"kind":"PodWorkerState","version":2,"podsSynced":true,"nextSeq":9,"startedStaticPodsByFullname":{"pod1_test1":"8-static"},"waitingToStartStaticPodsByFullname":{"pod1_test1":["9-static"]}}' ]
	# two pods are left: 1-normal terminating as an orphan, 8-static syncing
	run -0 ls "$st/pods"
	[ "$output" = $'1-normal\n8-static' ]
}

@test "podworker-step: TestSyncKnownPods" {
	golden sync-known-pods
}

@test "podworker-step: Test_removeTerminatedWorker" {
	golden remove-terminated-worker
}

@test "podworker-step: Test_calculateEffectiveGracePeriod, and grace only shrinks" {
	golden effective-grace
}

@test "podworker-step: grace 30 stops liveness and startup before the kill, readiness after" {
	golden probes-grace-30
	run -0 jq -c 'select(.work == "terminating") | [.actions[] | .action + ":" + ((.types // [.gracePeriodSeconds]) | map(tostring) | join(","))]' <<<"$output"
	[ "$output" = '["stop-probes:liveness,startup","kill-pod:30","stop-probes:readiness"]' ]
}

@test "podworker-step: grace 1 and 0 stop every probe at once before the kill" {
	golden probes-grace-1
	golden probes-grace-0
	run -0 jq -c 'select(.work == "terminating") | [.actions[] | .action + ":" + ((.types // [.gracePeriodSeconds]) | map(tostring) | join(","))]' <<<"$output"
	[ "$output" = '["stop-probes:liveness,readiness,startup","kill-pod:1"]' ]
}

@test "podworker-step: start-probes carries each container's probes" {
	golden probes-grace-30
	run -0 jq -c 'select(.work == "sync") | .actions[0]' <<<"$output"
	[ "$output" = '{"action":"start-probes","containers":[{"name":"app","livenessProbe":{"exec":{"command":["true"]}},"readinessProbe":{"httpGet":{"path":"/","port":8080}},"startupProbe":{"tcpSocket":{"port":8080}}}]}' ]
}

@test "podworker-step: node shutdown kills the lowest priority group first with min(group, pod) grace" {
	golden node-shutdown
	run -0 jq -c 'select(.op == "node-shutdown") | [.groups[] | [.priority, .shutdownGracePeriodSeconds, .deadline, [.pods[] | [.uid, .gracePeriodSeconds, .work]]]]' <<<"$output"
	[ "$output" = '[[0,20,"2026-01-01T00:00:28Z",[["low-a",20,"terminating"],["low-b",5,"terminating"],["done",20,null]]]]' ]
}

@test "podworker-step: node shutdown starts the next group when the last kill of a group completes" {
	golden node-shutdown-order
	# each event after the shutdown: what it started, and where the shutdown is
	run -0 jq -c 'select(.shutdown != null and .op != "node-shutdown") | [.op, .uid, [.groups[] | [.priority, .deadline, [.pods[].uid]]], .shutdown]' <<<"$output"
	[ "$output" = '["complete","done",[],"running"]
["complete","done",[],"running"]
["complete","low-a",[],"running"]
["tick",null,[],"running"]
["complete","low-b",[[2000000000,"2026-01-01T00:00:23Z",["crit"]]],"running"]
["tick",null,[],"running"]
["complete","crit",[],"done"]' ]
	# and after it, nothing more
	run -0 jq -c 'select(.op == "tick") | .shutdown' <<<"$(tail -n 1 "$FIX/node-shutdown-order.out.json")"
	[ "$output" = null ]
}

@test "podworker-step: node shutdown starts the next group at the deadline (grace plus slack) its pods did not beat" {
	golden node-shutdown-deadline
	# the deadline is the grace plus the slack; a pod that outlives it is left to its kill
	run -0 jq -c 'select(.op == "node-shutdown" or .op == "tick") | [[.groups[]? | [.priority, .shutdownGracePeriodSeconds, .deadline, [.pods[] | [.uid, .gracePeriodSeconds, .work]]]], .shutdown]' <<<"$output"
	[ "$output" = '[[[0,5,"2026-01-01T00:00:17Z",[["low",5,"terminating"]]]],"running"]
[[],"running"]
[[[1000,0,"2026-01-01T00:00:19Z",[["mid",1,"terminating"]]]],"running"]
[[],"running"]
[[[2000000000,3,"2026-01-01T00:00:24Z",[["crit",3,"terminating"]]]],"running"]
[[],"running"]
[[],"done"]
[[],null]' ]
	golden_oneshot node-shutdown-deadline
	# one shutdown at a time
	run -2 --separate-stderr podworker-step --stream <<-EOF
	$(create u1)
	{"op":"node-shutdown","shutdownGracePeriodSeconds":30}
	{"op":"node-shutdown","shutdownGracePeriodSeconds":30}
	EOF
	[ "$stderr" = "podworker-step: event 3: a node shutdown is already under way (cancel it first)" ]
	[ "$(jq -r .shutdown <<<"$output" | tail -n 1)" = running ]
	# cancelled (a restarted node is not shutting down): the groups not started stay
	# alive, what was killed stays killed, and a new shutdown may come
	run -0 --separate-stderr podworker-step --stream <<-EOF
	$(create u1)
	{"op":"update","updateType":"create","pod":{"metadata":{"uid":"u2","name":"pod-u2","namespace":"ns"},"spec":{"priority":1}}}
	{"op":"complete","uid":"u1","work":"sync","result":"ok"}
	{"op":"complete","uid":"u2","work":"sync","result":"ok"}
	{"op":"node-shutdown","shutdownGracePeriodByPodPriority":[{"priority":0,"shutdownGracePeriodSeconds":5},{"priority":1,"shutdownGracePeriodSeconds":5}]}
	{"op":"node-shutdown","cancel":true}
	{"op":"node-shutdown","cancel":true}
	{"op":"complete","uid":"u1","work":"terminating","result":"ok"}
	{"op":"tick","now":"2030-01-01T00:00:00Z"}
	{"op":"query","uid":"u2"}
	{"op":"node-shutdown","shutdownGracePeriodSeconds":30}
	EOF
	run -0 jq -c '[.op, .shutdown, [.groups[]? | [.priority, .pods[].uid]], .queries.isPodTerminationRequested]' <<<"$output"
	[ "${lines[4]}" = '["node-shutdown","running",[[0,"u1"]],null]' ]
	[ "${lines[5]}" = '["node-shutdown","canceled",[],null]' ]
	[ "${lines[6]}" = '["node-shutdown","none",[],null]' ]
	[ "${lines[7]}" = '["complete",null,[],true]' ]
	[ "${lines[8]}" = '["tick",null,[],null]' ]
	[ "${lines[9]}" = '["query",null,[],false]' ]
	[ "${lines[10]}" = '["node-shutdown","running",[[0,"u2"]],null]' ]
}

@test "podworker-step: node shutdown writes upstream's status, keeping Succeeded" {
	golden node-shutdown
	run -0 jq -c 'select(.op == "node-shutdown") | .groups[0].pods[0].actions[1].status' <<<"$output"
	[ "$output" = '{"phase":"Failed","reason":"Terminated","message":"Pod was terminated in response to imminent node shutdown.","conditions":[{"type":"DisruptionTarget","status":"True","lastTransitionTime":"2026-01-01T00:00:08Z","reason":"TerminationByKubelet","message":"Pod was terminated in response to imminent node shutdown."}]}' ]
	run -0 jq -c 'select(.op == "complete" and .uid == "done") | .actions[1].status.phase' <<<"$(podworker-step --stream "$FIX/node-shutdown.in.json")"
	[ "$output" = '"Succeeded"' ]
}

@test "podworker-step: node shutdown from the legacy pair of grace periods" {
	golden node-shutdown-legacy
}

@test "podworker-step: node shutdown is off when the critical grace exceeds the total" {
	golden node-shutdown-off
}

@test "podworker-step: a local-storage eviction reports no DisruptionTarget condition" {
	golden evict-local-storage
}

@test "podworker-step: errors requeue after the backoff, 1s when the network is not ready" {
	golden sync-error-requeue
}

@test "podworker-step: one invocation per event through a state file gives the same results" {
	golden_oneshot update-deletion-timestamp
	golden_oneshot update-duplicate-terminating-uid
	golden_oneshot static-pod-exclusion
}

@test "podworker-step: --stream with a state file gives the same results and keeps the state" {
	local st="$BATS_TEST_TMPDIR/state"
	prints 0 "$(cat "$FIX/sync-known-pods.out.json")" podworker-step --show-pod --state "$st" --stream <"$FIX/sync-known-pods.in.json"
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"2"}'
	[ "$output" = '{"op":"query","uid":"2","queries":{"isPodKnownTerminated":false,"couldHaveRunningContainers":false,"shouldPodBeFinished":true,"isPodTerminationRequested":false,"shouldPodContainersBeTerminating":true,"shouldPodRuntimeBeRemoved":true,"shouldPodContentBeRemoved":true},"state":null}' ]
}

@test "podworker-step: a complete for work never handed out is refused and changes nothing" {
	local st="$BATS_TEST_TMPDIR/state"
	podworker-step --state "$st" "$(create u1)" >/dev/null
	podworker-step --state "$st" '{"op":"complete","uid":"u1","work":"sync","result":"ok","now":"2026-01-01T00:00:02Z"}' >/dev/null
	cp -a "$st" "$BATS_TEST_TMPDIR/before"
	fails_with 2 "podworker-step: event: no 'sync' work was handed out for pod 'u1' (nothing is running)" podworker-step --state "$st" '{"op":"complete","uid":"u1","work":"sync","result":"ok"}'
	run -2 --separate-stderr podworker-step --state "$st" '{"op":"complete","uid":"u1","work":"terminated","result":"ok"}'
	[ "$stderr" = "podworker-step: event: no 'terminated' work was handed out for pod 'u1' (nothing is running)" ]
	diff -r "$st" "$BATS_TEST_TMPDIR/before"
}

@test "podworker-step: in a stream a bad event is reported by number and the rest go on" {
	run -2 --separate-stderr podworker-step --stream <<-'EOF'
	{"op":"query","uid":"a"}
	{"op":"frobnicate"}
	{"op":"query","uid":"b","now":"2026-01-01T00:00:01Z"}
	EOF
	[ "${#lines[@]}" = 2 ]
	[ "${lines[1]}" = '{"op":"query","uid":"b","queries":{"isPodKnownTerminated":false,"couldHaveRunningContainers":true,"shouldPodBeFinished":false,"isPodTerminationRequested":false,"shouldPodContainersBeTerminating":false,"shouldPodRuntimeBeRemoved":false,"shouldPodContentBeRemoved":false},"state":null}' ]
	[ "$stderr" = "podworker-step: event 2: unknown op 'frobnicate' (expected update, complete, sync-known-pods, node-shutdown, tick, query or resume)" ]
}

# damaged WHERE WHAT EVENT: podworker-step --state "$st" refuses EVENT: exit 2, nothing
# on stdout, and the one line that says the state is damaged at WHERE by WHAT
damaged() {
	fails_with 2 "podworker-step: state '$st' is damaged: $1: $2; it was left as it is: restore it, or move it aside to start from an empty state" \
		podworker-step --state "$st" "$3"
}

@test "podworker-step: a damaged single-file state is refused, left as it is, with the way out" {
	local st="$BATS_TEST_TMPDIR/state"
	printf '{"kind":"PodWorkerState","version":1,"podsSynced":false,"startedStaticPodsByFullname":{},"waitingToStartStaticPodsByFullname":{}}\n{"uid":"u1","fullna' >"$st"
	cp "$st" "$BATS_TEST_TMPDIR/before"
	damaged "$st:2" "not a pod status line" "$(create u2)"
	cmp "$st" "$BATS_TEST_TMPDIR/before"
}

@test "podworker-step: a pod file that does not parse is found when the pod is touched, named, left as it is" {
	local st="$BATS_TEST_TMPDIR/state" ev
	podworker-step --state "$st" "$(create u1)" >/dev/null
	podworker-step --state "$st" "$(create u2)" >/dev/null
	sed -i 's/"gracePeriod":0/"gracePeriod":"x"/' "$st/pods/u1"
	cp -a "$st" "$BATS_TEST_TMPDIR/before"
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"u2"}'
	for ev in '{"op":"query","uid":"u1"}' "$(create u1)" '{"op":"sync-known-pods","uids":["u2"]}'; do
		damaged "$st/pods/u1:1" "'gracePeriod' must be an integer" "$ev"
	done
	diff -r "$st" "$BATS_TEST_TMPDIR/before"
	# a file that is not JSON, or holds another pod, is named the same way
	echo '{"uid":"u1",' >"$st/pods/u1"
	run -2 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"u1"}'
	[[ "$stderr" == "podworker-step: state '$st' is damaged: $st/pods/u1:1:"* ]]
	cp "$st/pods/u2" "$st/pods/u1"
	damaged "$st/pods/u1:1" "'uid' is not 'u1'" '{"op":"query","uid":"u1"}'
}

@test "podworker-step: a damaged node file or journal is refused and left as it is" {
	local st="$BATS_TEST_TMPDIR/state"
	podworker-step --state "$st" "$(create u1)" >/dev/null
	echo '{"kind":"Pod"}' >"$st/node"
	cp -a "$st" "$BATS_TEST_TMPDIR/before"
	damaged "$st/node:1" "not a pod worker state (no \"kind\":\"PodWorkerState\")" '{"op":"query","uid":"u1"}'
	diff -r "$st" "$BATS_TEST_TMPDIR/before"
	rm -r "$st" "$BATS_TEST_TMPDIR/before"
	podworker-step --state "$st" "$(create u1)" >/dev/null
	printf 'podstore-journal 1\nput ../escape 3\nabc\nend\n' >"$st/journal"
	cp -a "$st" "$BATS_TEST_TMPDIR/before"
	damaged "$st/journal" "not a journal this version wrote" '{"op":"query","uid":"u1"}'
	diff -r "$st" "$BATS_TEST_TMPDIR/before"
	[ ! -e "$BATS_TEST_TMPDIR/escape" ]
}

@test "podworker-step: a state file that is not a state is refused" {
	local st="$BATS_TEST_TMPDIR/state"
	echo '{"apiVersion":"v1","kind":"Pod"}' >"$st"
	damaged "$st:1" "not a pod worker state (no \"kind\":\"PodWorkerState\")" '{"op":"query","uid":"u1"}'
	echo '{"kind":"PodWorkerState","version":3,"startedStaticPodsByFullname":{},"waitingToStartStaticPodsByFullname":{}}' >"$st"
	damaged "$st:1" "unsupported state version" '{"op":"query","uid":"u1"}'
}

# issue 10 rows 6, 7 and 16: state file permissions, an inconsistent state, hostile paths

@test "podworker-step: the state's files are 0600 less the umask, its directories and lock file 0700 and 0600" {
	local st="$BATS_TEST_TMPDIR/state"
	(umask 022 && podworker-step --state "$st" "$(create u1)" >/dev/null)
	[ "$(stat -c %a "$st" "$st/pods" "$st/node" "$st/pods/u1" "$st.lock")" = $'700\n700\n600\n600\n600' ]
	(umask 077 && podworker-step --state "$st" "$(create u2)" >/dev/null)
	[ "$(stat -c %a "$st/node" "$st/pods/u2")" = $'600\n600' ]
	(umask 277 && podworker-step --state "$st" "$(create u3)" >/dev/null)
	[ "$(stat -c %a "$st" "$st/node" "$st/pods/u3")" = $'700\n400\n400' ]
}

@test "podworker-step: runningWork without activeUpdate is a damaged state, left as it is" {
	local st="$BATS_TEST_TMPDIR/state"
	printf '%s\n' '{"kind":"PodWorkerState","version":1,"podsSynced":false,"startedStaticPodsByFullname":{},"waitingToStartStaticPodsByFullname":{}}' \
		'{"uid":"0","fullname":"p_ns","runningWork":"terminating"}' >"$st"
	cp "$st" "$BATS_TEST_TMPDIR/before"
	damaged "$st:2" "'runningWork' without 'activeUpdate'" '{"op":"complete","uid":"0","work":"terminating","result":"ok"}'
	cmp "$st" "$BATS_TEST_TMPDIR/before"
}

@test "podworker-step: a symbolic link planted as the lock file is refused, its target untouched" {
	local st="$BATS_TEST_TMPDIR/state"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$st.lock"
	fails_with 1 "podworker-step: cannot open lock file '$st.lock': Too many levels of symbolic links" podworker-step --state "$st" "$(create u1)"
	[ ! -e "$BATS_TEST_TMPDIR/elsewhere" ]
	[ ! -e "$st" ]
}

@test "podworker-step: glob characters in the state path clear only that path's leftovers" {
	local d="$BATS_TEST_TMPDIR"
	: >"$d/a.tmp.123456"
	: >"$d/b.tmp.123456"
	: >"$d/[ab].tmp.654321"
	run -0 --separate-stderr podworker-step --state "$d/[ab]" "$(create u1)"
	[ -e "$d/a.tmp.123456" ]
	[ -e "$d/b.tmp.123456" ]
	[ ! -e "$d/[ab].tmp.654321" ]
	[ -s "$d/[ab]/node" ]
	# inside the state directory too
	: >"$d/[ab]/pod.tmp.123456"
	run -0 --separate-stderr podworker-step --state "$d/[ab]" '{"op":"query","uid":"u1"}'
	[ ! -e "$d/[ab]/pod.tmp.123456" ]
	[ -e "$d/a.tmp.123456" ]
}

@test "podworker-step: an empty or missing state file is an empty state; a query does not create it" {
	local st="$BATS_TEST_TMPDIR/state"
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"u1"}'
	[ ! -e "$st" ]
	: >"$st"
	run -0 --separate-stderr podworker-step --state "$st" "$(create u1)"
	run -0 head -c 30 "$st/node"
	[ "$output" = '{"kind":"PodWorkerState","vers' ]
}

# bad input: the event (one-shot, as an argument) and the exact message; exit 2, no output
bad_events() {
	local P='"pod":{"metadata":{"uid":"u1","name":"web","namespace":"ns"}}'
	cat <<-EOF
	{"op":"bogus"}	event: unknown op 'bogus' (expected update, complete, sync-known-pods, node-shutdown, tick, query or resume)
	{}	event: 'op' must be a string
	{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}	event: 'op' must be a string: this is an object (a Pod), not an event; a new pod is {"op":"update","updateType":"create","pod":<the pod>} (ops: update, complete, sync-known-pods, node-shutdown, tick, query, resume)
	{"metadata":{"name":"web"},"spec":{}}	event: 'op' must be a string: this is an object (a kind not given), not an event; a new pod is {"op":"update","updateType":"create","pod":<the pod>} (ops: update, complete, sync-known-pods, node-shutdown, tick, query, resume)
	{"op":7}	event: 'op' must be a string
	[]	event: must be a JSON object
	{"op":"query"}	event: 'uid' must be a non-empty string
	{"op":"query","uid":""}	event: 'uid' must be a non-empty string
	{"op":"query","uid":5}	event: 'uid' must be a non-empty string
	{"op":"update","updateType":"create"}	event: needs 'pod' or 'runningPod'
	{"op":"update","updateType":"create","pod":{"metadata":{"name":"x"}}}	event: pod has no metadata.uid
	{"op":"update","updateType":"create","pod":{}}	event: pod has no metadata.uid
	{"op":"update","updateType":"create","pod":[]}	event: 'pod' must be an object
	{"op":"update","updateType":"bogus",$P}	event: 'updateType' must be one of create, update, sync, kill
	{"op":"update",$P}	event: 'updateType' must be one of create, update, sync, kill
	{"op":"update","updateType":"kill",$P,"killPodOptions":{"gracePeriodSecondsOverride":-1}}	event: 'gracePeriodSecondsOverride' must not be negative
	{"op":"update","updateType":"kill",$P,"killPodOptions":{"gracePeriodSecondsOverride":"30"}}	event: 'gracePeriodSecondsOverride' must be an integer
	{"op":"update","updateType":"kill",$P,"killPodOptions":{"gracePeriodSecondsOverride":1.5}}	event: 'gracePeriodSecondsOverride' must be an integer
	{"op":"update","updateType":"kill",$P,"killPodOptions":{"evict":"yes"}}	event: 'evict' must be true or false
	{"op":"update","updateType":"kill",$P,"killPodOptions":true}	event: 'killPodOptions' must be an object
	{"op":"update","updateType":"kill",$P,"killPodOptions":{"status":"Failed"}}	event: 'killPodOptions.status' must be an object
	{"op":"update","updateType":"kill",$P,"killPodOptions":{"status":{"conditions":{}}}}	event: 'killPodOptions.status.conditions' must be an array
	{"op":"update","updateType":"update","pod":{"metadata":{"uid":"u1","deletionGracePeriodSeconds":-5}}}	event: pod 'metadata.deletionGracePeriodSeconds' must not be negative
	{"op":"update","updateType":"update","pod":{"metadata":{"uid":"u1"},"spec":{"terminationGracePeriodSeconds":"30"}}}	event: pod 'spec.terminationGracePeriodSeconds' must be an integer
	{"op":"update","updateType":"update","pod":{"metadata":{"uid":"u1"},"status":{"phase":5}}}	event: pod 'status.phase' must be a string
	{"op":"update","updateType":"kill","runningPod":{"name":"x"}}	event: runningPod has no uid
	{"op":"update","updateType":"kill","runningPod":"x"}	event: 'runningPod' must be an object
	{"op":"update","updateType":"create",$P,"podCacheTerminal":"yes"}	event: 'podCacheTerminal' must be true or false
	{"op":"update","updateType":"create",$P,"now":"yesterday"}	event: bad 'now' 'yesterday': invalid time 'yesterday': expected RFC 3339, such as 2026-11-30T07:22:21Z
	{"op":"update","updateType":"create",$P,"now":12345}	event: 'now' must be an RFC 3339 string
	{"op":"update","updateType":"create",$P,"now":"2026-13-01T00:00:00Z"}	event: bad 'now' '2026-13-01T00:00:00Z': invalid time '2026-13-01T00:00:00Z': expected RFC 3339, such as 2026-11-30T07:22:21Z
	{"op":"complete","uid":"u9","work":"sync","result":"ok"}	event: no 'sync' work was handed out for pod 'u9' (unknown pod)
	{"op":"complete","uid":"u1","work":"run","result":"ok"}	event: 'work' must be one of sync, terminating, terminated
	{"op":"complete","uid":"u1","work":"sync","result":"maybe"}	event: 'result' must be one of ok, error, canceled
	{"op":"complete","uid":"u1","work":"sync","result":"ok","isTerminal":"true"}	event: 'isTerminal' must be true or false
	{"op":"complete","uid":"u1","work":"sync","result":"error","message":5}	event: 'message' must be a string
	{"op":"sync-known-pods","uids":"u1"}	event: 'uids' must be an array of strings
	{"op":"sync-known-pods","uids":[1]}	event: 'uids' must be an array of strings
	{"op":"node-shutdown"}	event: needs 'shutdownGracePeriodByPodPriority' or 'shutdownGracePeriodSeconds'
	{"op":"node-shutdown","shutdownGracePeriodSeconds":30,"shutdownGracePeriodByPodPriority":[]}	event: give 'shutdownGracePeriodByPodPriority' or 'shutdownGracePeriodSeconds', not both
	{"op":"node-shutdown","shutdownGracePeriodSeconds":-30}	event: 'shutdownGracePeriodSeconds' must not be negative
	{"op":"node-shutdown","shutdownGracePeriodByPodPriority":[{"shutdownGracePeriodSeconds":10}]}	event: each 'shutdownGracePeriodByPodPriority' entry needs an integer priority and a shutdownGracePeriodSeconds >= 0
	{"op":"node-shutdown","shutdownGracePeriodByPodPriority":{"priority":0}}	event: 'shutdownGracePeriodByPodPriority' must be an array
	{"op":"node-shutdown","shutdownGracePeriodSeconds":30,"shutdownSlackSeconds":-1}	event: 'shutdownSlackSeconds' must not be negative
	{"op":"node-shutdown","shutdownGracePeriodSeconds":30,"shutdownSlackSeconds":"2"}	event: 'shutdownSlackSeconds' must be an integer
	{"op":"update","updateType":"create",	<argument>:1:38: unexpected end of input, expected a string key
	{"op":"query","uid":"a"} {"op":"query","uid":"b"}	<argument>:1:26: unexpected data after the document
	EOF
}

@test "podworker-step: bad events exit 2 with a message and change nothing" {
	local st="$BATS_TEST_TMPDIR/state" ev msg n=0
	podworker-step --state "$st" "$(create u1)" >/dev/null
	cp -a "$st" "$BATS_TEST_TMPDIR/before"
	while IFS=$'\t' read -r ev msg; do
		run -2 --separate-stderr podworker-step --state "$st" "$ev"
		[ -z "$output" ] || { echo "output for $ev: $output"; false; }
		[ "$stderr" = "podworker-step: $msg" ] || { echo "for $ev: got '$stderr'"; false; }
		n=$((n + 1))
	done < <(bad_events)
	[ "$n" -ge 30 ]
	diff -r "$st" "$BATS_TEST_TMPDIR/before"
}

@test "podworker-step: usage errors" {
	run -2 --separate-stderr podworker-step a b
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "podworker-step: too many operands: one <event> at most" ]
	[ "${stderr_lines[1]}" = "Try 'podworker-step --help' for more information." ]
	run -2 --separate-stderr podworker-step --state= '{"op":"query","uid":"a"}'
	[ "${stderr_lines[0]}" = "podworker-step: invalid value '' for --state: must not be empty" ]
	run -2 --separate-stderr podworker-step </dev/null
	[ "$stderr" = "podworker-step: no event in the input" ]
	run -2 --separate-stderr podworker-step "$BATS_TEST_TMPDIR/none.json"
	[ "$stderr" = "podworker-step: cannot open '$BATS_TEST_TMPDIR/none.json': No such file or directory" ]
	run -0 --separate-stderr podworker-step --stream </dev/null
	[ -z "$output" ]
}

@test "podworker-step: reads YAML events, one or a stream, on standard input" {
	run -0 --separate-stderr podworker-step - <<-'EOF'
	op: update
	updateType: create
	now: "2026-01-01T00:00:01Z"
	pod: {metadata: {uid: y1, name: web, namespace: ns}}
	EOF
	[[ "$output" == '{"op":"update","uid":"y1","work":"sync",'* ]]
	run -0 --separate-stderr podworker-step --stream <<-'EOF'
	op: query
	uid: y1
	---
	op: query
	uid: y2
	EOF
	[ "${#lines[@]}" = 2 ]
	[[ "${lines[1]}" == '{"op":"query","uid":"y2",'* ]]
	[ -z "$stderr" ]
}

@test "podworker-step: --help shows an example and --version the version" {
	run -0 --separate-stderr podworker-step --help
	[[ "$output" == *"Example:"*"podworker-step --state pods.state"* ]]
	[ "${lines[-1]}" = "See podworker-step(1)." ]
	run -0 --separate-stderr podworker-step --version
	[[ "$output" == "podworker-step from kubelet-tools "* ]]
}

# a writer killed with SIGKILL at random points, 200 times: the state always
# loads and every result line printed before the kill is in it (the loop is
# a plain script: bats' per-command traps would make it slow)
# bats test_tags=slow
@test "podworker-step: SIGKILL at random points never damages the state or loses an acknowledged event" {
	slow
	run --separate-stderr bash "$FIX/crash.sh" "$BATS_TEST_TMPDIR" 200
	[ "$status" = 0 ] || { echo "$output"; false; }
	[[ "$output" == "rounds=200 acknowledged="* ]]
	[ -z "$stderr" ]
}

@test "podworker-step: two processes stepping one state file serialize" {
	local d="$BATS_TEST_TMPDIR" st="$BATS_TEST_TMPDIR/state" i
	local -a a b c q
	for ((i = 1; i <= 150; i++)); do a+=("a$i") b+=("b$i"); done
	for ((i = 1; i <= 10; i++)); do c+=("c$i"); done
	create "${a[@]}" >"$d/a.json"
	create "${b[@]}" >"$d/b.json"
	podworker-step --state "$st" --stream "$d/a.json" >/dev/null &
	podworker-step --state "$st" --stream "$d/b.json" >/dev/null &
	for i in "${c[@]}"; do podworker-step --state "$st" "$(create "$i")" >/dev/null & done
	wait
	for i in "${a[@]}" "${b[@]}" "${c[@]}"; do q+=("{\"op\":\"query\",\"uid\":\"$i\"}"); done
	run -0 --separate-stderr podworker-step --state "$st" --stream < <(printf '%s\n' "${q[@]}")
	[ "${#lines[@]}" = 310 ]
	[[ "$output" != *'"state":null'* ]]
	run -0 find "$st/pods" -type f
	[ "${#lines[@]}" = 310 ]
}

@test "podworker-step: a one-shot waits for the lock a stream holds" {
	local d="$BATS_TEST_TMPDIR" st="$BATS_TEST_TMPDIR/state" s o
	mkfifo "$d/fifo"
	podworker-step --state "$st" --stream <"$d/fifo" >"$d/s.out" &
	s=$!
	exec 7>"$d/fifo"
	create s1 >&7
	sleep 0.2
	podworker-step --state "$st" "$(create o1)" >"$d/o.out" 7>&- &
	o=$!
	sleep 0.3
	kill -0 "$o"
	[ ! -s "$d/o.out" ]
	exec 7>&-
	wait "$s"
	wait "$o"
	run -0 --separate-stderr podworker-step --state "$st" --stream <<-'EOF'
	{"op":"query","uid":"s1"}
	{"op":"query","uid":"o1"}
	EOF
	[[ "$output" != *'"state":null'* ]]
}

@test "podworker-step: a result names the pod by uid; the whole pod only with --show-pod" {
	run -0 --separate-stderr podworker-step "$(create u1)"
	run -0 jq -c '[.uid, (.actions[] | select(.action == "sync-pod") | keys)]' <<<"$output"
	[ "$output" = '["u1",["action","updateType"]]' ]
	run -0 --separate-stderr podworker-step --show-pod "$(create u1)"
	run -0 jq -c '.actions[] | select(.action == "sync-pod") | .pod.metadata.uid' <<<"$output"
	[ "$output" = '"u1"' ]
}

@test "podworker-step: -S, the old spelling of --stream (--sort-keys elsewhere), is gone" {
	fails_with 2 "podworker-step: invalid option -- 'S'
Try 'podworker-step --help' for more information." podworker-step -S
}

@test "podworker-step: --help starts with a new pod, and the example runs as shown" {
	run -0 --separate-stderr podworker-step --help
	[[ "$output" == *"The ops are update"*"complete"*"sync-known-pods"*"node-shutdown"*"tick"*"query"* ]]
	# the example starts where a newcomer starts, with a new pod, and runs as shown
	ex=$(sed -n "s/^  podworker-step --state pods.state '\(.*\)$/\1/p" <<<"$output")
	ex+=$(grep -A1 "updateType" <<<"$output" | sed -n "2s/^ *\(.*\)'$/\1/p")
	[[ "$ex" == '{"op":"update","updateType":"create",'* ]] || fail "first example event: $ex"
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr podworker-step --state pods.state "$ex"
	[[ "$output" == *'"work":"sync"'*'"action":"sync-pod"'* ]]
}

# the state directory: a file per pod, a node file, a journal; the single-file layout converted

# the queries and a housekeeping pass over every pod of the version 1 fixture
v1_probe() {
	local uid
	for uid in 1-normal 8-static 9-static low-a low-b crit done none; do
		printf '{"op":"query","uid":"%s","now":"2026-01-01T00:01:00Z"}\n' "$uid"
	done
	echo '{"op":"sync-known-pods","uids":["8-static","crit"],"now":"2026-01-01T00:01:00Z"}'
}

@test "podworker-step: a single-file state is converted to a directory on first use, every pod and the order kept" {
	local d="$BATS_TEST_TMPDIR" st="$BATS_TEST_TMPDIR/state" f
	# the same events, kept in a directory from the start
	for f in static-pod-exclusion sync-known-pods node-shutdown; do
		podworker-step --state "$d/direct" --stream "$FIX/$f.in.json" >/dev/null
	done
	cp "$FIX/version1.state" "$st"
	chmod 600 "$st"
	run_ok podworker-step --state "$st" --stream < <(v1_probe)
	[ "$output" = "$(v1_probe | podworker-step --state "$d/direct" --stream)" ]
	[[ "${lines[-1]}" == *'"workers":{"1-normal":'*'"8-static":'*'"low-a":'*'"low-b":'*'"crit":'*'"done":'* ]]
	[ -d "$st" ]
	[ ! -e "$st.old" ]
	[ ! -e "$st.new" ]
	run -0 ls "$st/pods"
	[ "$output" = "$(ls "$d/direct/pods")" ]
	# pods first seen after the conversion come after the converted ones
	run -0 --separate-stderr podworker-step --state "$st" --stream < <(create new; echo '{"op":"sync-known-pods","uids":["new","crit"]}')
	[[ "${lines[1]}" == *'"workers":{'*'"crit":'*'"new":'* ]]
}

@test "podworker-step: a conversion cut short is finished or undone by the next user" {
	local d="$BATS_TEST_TMPDIR" st="$BATS_TEST_TMPDIR/state" want
	cp "$FIX/version1.state" "$d/ref"
	want=$(podworker-step --state "$d/ref" '{"op":"query","uid":"low-b"}')
	# killed while PATH.new was being built: PATH is still the old file
	cp "$FIX/version1.state" "$st"
	mkdir -p "$st.new/pods"
	echo half >"$st.new/pods/low-b"
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"low-b"}'
	[ "$output" = "$want" ]
	[ ! -e "$st.new" ]
	# killed after PATH became PATH.old: the complete PATH.new is taken
	mv "$st" "$st.new"
	cp "$FIX/version1.state" "$st.old"
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"low-b"}'
	[ "$output" = "$want" ]
	[ -d "$st" ]
	[ ! -e "$st.old" ]
	# killed before PATH.old was removed
	cp "$FIX/version1.state" "$st.old"
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"low-b"}'
	[ "$output" = "$want" ]
	[ ! -e "$st.old" ]
}

@test "podworker-step: a damaged single-file state is not converted" {
	local st="$BATS_TEST_TMPDIR/state"
	sed '3s/"gracePeriod":[0-9]*/"gracePeriod":"x"/' "$FIX/version1.state" >"$st"
	cp "$st" "$BATS_TEST_TMPDIR/before"
	damaged "$st:3" "'gracePeriod' must be an integer" '{"op":"query","uid":"crit"}'
	cmp "$st" "$BATS_TEST_TMPDIR/before"
	[ ! -e "$st.new" ]
}

# SIGKILL while a 2,000-pod single-file state is converted: every pod is there after
# bats test_tags=slow
@test "podworker-step: SIGKILL during a conversion never loses the state" {
	slow
	local d="$BATS_TEST_TMPDIR" st="$BATS_TEST_TMPDIR/state" k n i
	create $(seq -f 'c%g' 2000) | podworker-step --state "$d/dir" --stream >/dev/null
	{ sed 's/"version":2,\(.*\)"nextSeq":[0-9]*,/"version":1,\1/' "$d/dir/node"
	  cat "$d/dir/pods/"* | sed 's/,"seq":[0-9]*//'; } >"$d/v1"
	for ((k = 1; k <= 20; k++)); do
		rm -rf "$st" "$st.new" "$st.old"
		cp "$d/v1" "$st"
		podworker-step --state "$st" '{"op":"query","uid":"c1"}' >/dev/null &
		sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
		kill -9 $! 2>/dev/null || true
		wait $! 2>/dev/null || true
		run -0 --separate-stderr podworker-step --state "$st" --stream < <(for i in $(seq 1 2000); do echo "{\"op\":\"query\",\"uid\":\"c$i\"}"; done)
		[[ "$output" != *'"state":null'* ]] || { echo "round $k: a pod was lost"; false; }
		[ "${#lines[@]}" = 2000 ]
		[ -d "$st" ] && [ ! -e "$st.old" ] && [ ! -e "$st.new" ]
	done
}

@test "podworker-step: a commit cut short after its journal is applied by the next user" {
	local st="$BATS_TEST_TMPDIR/state" line
	podworker-step --state "$st" --stream < <(create u1 u2) >/dev/null
	# a journal as a writer killed after its commit point leaves it: u2 forgotten, u3 new
	line=$(sed 's/"uid":"u1"/"uid":"u3"/; s/pod-u1/pod-u3/' "$st/pods/u1")
	printf 'podstore-journal 1\nput pods/u3 %d\n%s\ndel pods/u2\nend\n' $((${#line} + 1)) "$line" >"$st/journal"
	run -0 --separate-stderr podworker-step --state "$st" --stream <<-'EOF'
	{"op":"query","uid":"u1"}
	{"op":"query","uid":"u2"}
	{"op":"query","uid":"u3"}
	EOF
	[[ "${lines[0]}" != *'"state":null'* ]]
	[[ "${lines[1]}" == *'"state":null'* ]]
	[[ "${lines[2]}" == *'"state":{"uid":"u3","fullname":"pod-u3_ns"'* ]]
	[ ! -e "$st/journal" ]
	[ ! -e "$st/pods/u2" ]
}

@test "podworker-step: any UID is a file inside the state, never a path out of it" {
	local st="$BATS_TEST_TMPDIR/state" long u
	long=$(printf 'x%.0s' $(seq 300))
	for u in ../escape .hidden 'a/b' '%41' "$long"; do
		podworker-step --state "$st" "$(create "$u")" >/dev/null
	done
	[ ! -e "$BATS_TEST_TMPDIR/escape" ]
	run -0 ls -A "$st/pods"
	[ "${#lines[@]}" = 5 ]
	[ "${lines[0]}" = '%2541' ]
	[ "${lines[1]}" = '%2e.%2fescape' ]
	[ "${lines[2]}" = '%2ehidden' ]
	[ "${lines[3]}" = 'a%2fb' ]
	[[ "${lines[4]}" =~ ^x{158}~[0-9a-f]{16}$ ]]
	for u in ../escape .hidden 'a/b' '%41' "$long"; do
		run -0 --separate-stderr podworker-step --state "$st" "{\"op\":\"query\",\"uid\":\"$u\"}"
		[[ "$output" == *"\"state\":{\"uid\":\"$u\""* ]]
	done
}

@test "podworker-step: a one-shot event reads and writes only the pods it names" {
	local st="$BATS_TEST_TMPDIR/state"
	podworker-step --state "$st" --stream < <(create a b c) >/dev/null
	echo garbage >"$st/pods/c"
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"complete","uid":"a","work":"sync","result":"ok"}'
	[[ "$output" == '{"op":"complete","uid":"a",'* ]]
	[ "$(cat "$st/pods/c")" = garbage ]
}

@test "podworker-step: a state path too long is bad usage, not a damaged state" {
	local st msg
	st="$BATS_TEST_TMPDIR/$(printf 'a%.0s' $(seq 4100))"
	run -2 --separate-stderr podworker-step --state "$st" '{"op":"query","uid":"u"}'
	[ -z "$output" ]
	# a message is at most 511 bytes: the path is cut, and said only once
	msg="path too long: '$st'"
	[ "$stderr" = "podworker-step: ${msg:0:511}" ]
}

@test "podworker-step: an update's pod read from its podFile is the pod given inline; a bad podFile is refused" {
	local T=$BATS_TEST_TMPDIR
	jq -c '.pod' <<<'{"pod":{"metadata":{"uid":"u1","name":"p","namespace":"d"},"spec":{"containers":[{"name":"c"}]}}}' >"$T/p.json"
	run -0 --separate-stderr podworker-step --show-pod --stream <<EOF2
{"op":"update","updateType":"create","podFile":"$T/p.json","now":"2026-12-01T10:00:00Z"}
EOF2
	jq_is '[.uid, .work, (.actions[] | select(.action == "sync-pod") | .pod.metadata.name)]' '["u1","sync","p"]'
	run -2 --separate-stderr podworker-step --stream <<EOF2
{"op":"update","updateType":"create","podFile":"$T/none.json"}
{"op":"update","updateType":"create","podFile":"$T/p.json","pod":{}}
{"op":"update","updateType":"create","podFile":""}
EOF2
	[ -z "$output" ]
	lines_are --stderr \
		"podworker-step: event 1: podFile: cannot open '$T/none.json': No such file or directory" \
		"podworker-step: event 2: podFile: give pod or podFile, not both" \
		"podworker-step: event 3: podFile: an empty file name"
}

@test "podworker-step: resume hands out again the work a killed caller never completed" {
	local st="$BATS_TEST_TMPDIR/state"
	# u1 synced and running, u2's sync out, u3's kill out, u4's cleanup out, u5 done
	podworker-step --state "$st" --stream >/dev/null <<-EOF
	$(create u1 u2 u3 u4 u5)
	{"op":"complete","uid":"u1","work":"sync","result":"ok"}
	{"op":"complete","uid":"u3","work":"sync","result":"ok"}
	{"op":"complete","uid":"u4","work":"sync","result":"ok"}
	{"op":"complete","uid":"u5","work":"sync","result":"ok"}
	{"op":"update","updateType":"kill","pod":{"metadata":{"uid":"u3","name":"pod-u3","namespace":"ns"},"spec":{"terminationGracePeriodSeconds":7}}}
	{"op":"update","updateType":"kill","pod":{"metadata":{"uid":"u4","name":"pod-u4","namespace":"ns"},"spec":{"terminationGracePeriodSeconds":30}}}
	{"op":"complete","uid":"u4","work":"terminating","result":"ok"}
	{"op":"update","updateType":"kill","pod":{"metadata":{"uid":"u5","name":"pod-u5","namespace":"ns"},"spec":{"terminationGracePeriodSeconds":30}}}
	{"op":"complete","uid":"u5","work":"terminating","result":"ok"}
	{"op":"complete","uid":"u5","work":"terminated","result":"ok"}
	EOF
	# a new process, as after a restart: the state alone says what is out
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"resume"}'
	run -0 jq -c '[.pods[] | [.uid, .work, [.actions[] | .action + ":" + (.gracePeriodSeconds // "" | tostring)]]]' <<<"$output"
	[ "$output" = '[["u2","sync",["start-probes:","sync-pod:"]],["u3","terminating",["stop-probes:","kill-pod:7","stop-probes:"]],["u4","terminated",["cleanup-pod:"]]]' ]
	# the work stays out: completing it is accepted, and then nothing is left
	podworker-step --state "$st" --stream >/dev/null <<-EOF
	{"op":"complete","uid":"u2","work":"sync","result":"ok"}
	{"op":"complete","uid":"u3","work":"terminating","result":"ok"}
	{"op":"complete","uid":"u4","work":"terminated","result":"ok"}
	EOF
	run -0 --separate-stderr podworker-step --state "$st" '{"op":"resume"}'
	# but u3's cleanup, handed out by its kill's completion
	run -0 jq -c '[.pods[] | [.uid, .work]]' <<<"$output"
	[ "$output" = '[["u3","terminated"]]' ]
}
