#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# pod-status: upstream's getPhase and condition cases, probe results, transition times,
# the patch against kubectl, streams, bad input

load helper

NOW=2026-12-01T10:00:00Z

# every case of a fixture file: its pod (and probe results) through pod-status, the
# phase and the conditions it names compared with what the case expects.  One jq
# takes the cases apart and one compares all the answers: a jq per field of each
# case was most of the test's time
cases() {
	local n term pod line got=$BATS_TEST_TMPDIR/got results=$BATS_TEST_TMPDIR/results
	: >"$got"
	# per case the engine can be given as a Pod (one that cannot says why in
	# .skip): its probe results' count and whether it is terminal, the pod, the
	# results
	while read -r n term; do
		IFS= read -r pod
		: >"$results"
		for ((; n > 0; n--)); do
			IFS= read -r line
			printf '%s\n' "$line" >>"$results"
		done
		[ "$term" = - ] && term=
		printf '%s\n' "$pod" | pod-status --now=$NOW $term --probe-results="$results" >>"$got"
	done < <(jq -r 'select(.skip == null)
		| "\((.probeResults // []) | length) \(if .terminal then "--terminal" else "-" end)",
		  (.pod | tojson), ((.probeResults // [])[] | tojson)' "$FIX/$1")
	run -0 jq -rn --slurpfile c "$FIX/$1" --slurpfile g "$got" '
		[$c[] | select(.skip == null)] as $cases
		| if ($cases | length) != ($g | length) then "# \($g | length) answers for \($cases | length) cases"
		  else range($cases | length) | $cases[.] as $k | $g[.] as $got | $k.expect as $e
			| select((($e.phase == null or $e.phase == $got.phase) and
				([($e.conditions // {}) | to_entries[] | .key as $t | .value as $v |
				  ([$got.conditions[] | select(.type == $t)][0]) as $x |
				  $x.status == $v.status and $x.reason == $v.reason and
				  $x.message == $v.message] | all)) | not)
			| "# \($k.test): \($k.case): expected \($e | tojson), got \($got | {phase, conditions} | tojson)"
		  end'
	[ -z "$output" ] || { echo "$output"; return 1; }
}

# one fixture file for each upstream test function (its name is in each case's .test)
@test "pod-status: upstream's phase and condition tests, case by case" {
	local f fails=0
	for f in \
		phase-restart-always \
		phase-restart-always-init \
		phase-restart-always-sidecar \
		phase-restart-always-has-run \
		phase-restart-never \
		phase-restart-never-init \
		phase-restart-never-sidecar \
		phase-restart-onfailure \
		phase-container-restart-policy \
		phase-container-restart-policy-init \
		cond-containers-ready \
		cond-ready \
		cond-initialized \
		cond-ready-to-start; do
		cases "$f.ndjson" || fails=$((fails + 1))
	done
	[ "$fails" = 0 ]
}

# --- probe results ---------------------------------------------------------------

# the status of web.json with these probe-run lines
status_with() {
	printf '%s\n' "$@" >"$BATS_TEST_TMPDIR/results"
	run_ok pod-status --now=$NOW --probe-results="$BATS_TEST_TMPDIR/results" \
		"$FIX/web.json"
}

# one field of the last status: a container's ("web.ready") or a condition's ("Ready")
ready_of() {
	jq -r --arg c "$1" '[.initContainerStatuses[], .containerStatuses[]] |
		map(select(.name == $c))[0] | "\(.ready) \(.started)"' <<<"$output"
}
cond_of() {
	jq -c --arg t "$1" '.conditions[] | select(.type == $t) | [.status, .reason, .message]' \
		<<<"$output"
}

@test "pod-status: every probe passed: the golden status, byte for byte" {
	prints 0 "$(cat "$FIX/web-ready.out.json")" pod-status --now=$NOW --probe-results="$FIX/results-ready.ndjson" \
		"$FIX/web.json"
}

@test "pod-status: a readiness failure makes the container and the pod unready" {
	status_with '{"pod":"shop/web","container":"proxy","type":"readiness","result":"success"}' \
		'{"pod":"shop/web","container":"web","type":"startup","result":"success"}' \
		'{"pod":"shop/web","container":"web","type":"readiness","result":"failure","output":"HTTP probe failed with statuscode: 503"}'
	[ "$(ready_of web)" = "false true" ]
	[ "$(ready_of log)" = "true true" ]
	[ "$(cond_of ContainersReady)" = '["False","ContainersNotReady","containers with unready status: [web]"]' ]
	[ "$(cond_of Ready)" = '["False","ContainersNotReady","containers with unready status: [web]"]' ]
	[ "$(jq -r .phase <<<"$output")" = Running ]
}

@test "pod-status: a startup probe not yet passed leaves started false and the pod unready" {
	status_with '{"pod":"shop/web","container":"proxy","type":"readiness","result":"success"}' \
		'{"pod":"shop/web","container":"web","type":"startup","result":"failure"}' \
		'{"pod":"shop/web","container":"web","type":"readiness","result":"success"}'
	[ "$(ready_of web)" = "false false" ]
	[ "$(cond_of Ready)" = '["False","ContainersNotReady","containers with unready status: [web]"]' ]
}

@test "pod-status: no result yet is not ready, sidecars named first" {
	status_with
	[ "$(ready_of proxy)" = "false true" ]
	[ "$(ready_of web)" = "false false" ]
	[ "$(cond_of ContainersReady)" = '["False","ContainersNotReady","containers with unready status: [proxy web]"]' ]
	[ "$(cond_of Initialized)" = '["True",null,null]' ]
}

@test "pod-status: unknown is no result, the latest line wins, other pods' lines are ignored" {
	status_with '{"pod":"shop/web","container":"proxy","type":"readiness","result":"success"}' \
		'{"pod":"shop/web","container":"web","type":"startup","result":"success"}' \
		'{"pod":"shop/web","container":"web","type":"readiness","result":"success"}' \
		'{"pod":"shop/other","container":"nothing","type":"readiness","result":"success"}' \
		'{"pod":"shop/web","container":"proxy","type":"readiness","result":"unknown"}'
	[ "$(ready_of proxy)" = "false true" ]
	[ "$(ready_of web)" = "true true" ]
	[ "$(cond_of Ready)" = '["False","ContainersNotReady","containers with unready status: [proxy]"]' ]
}

@test "pod-status: a sidecar without a startup success keeps the pod initializing" {
	jq -c '.spec.initContainers[1].startupProbe = {"exec":{"command":["true"]}} |
		.status.containerStatuses = []' "$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW "$BATS_TEST_TMPDIR/pod.json"
	[ "$(ready_of proxy)" = "false false" ]
	[ "$(jq -r .phase <<<"$output")" = Pending ]
	[ "$(cond_of Initialized)" = '["False","ContainersNotInitialized","containers with incomplete status: [proxy]"]' ]
	jq_is '.containerStatuses[] | [.name, .state.waiting.reason]' \
		"$(printf '%s\n' '["log","PodInitializing"]' '["web","PodInitializing"]')"
}

# --- transition times and the patch ------------------------------------------------

@test "pod-status: --current keeps lastTransitionTime of the conditions that did not change" {
	run -0 --separate-stderr pod-status --now=2026-12-01T10:00:00Z "$FIX/web.json"
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/current.json"
	run -0 --separate-stderr pod-status --now=2026-12-01T11:00:00Z \
		--probe-results="$FIX/results-ready.ndjson" --current="$BATS_TEST_TMPDIR/current.json" \
		"$FIX/web.json"
	jq_is '[.conditions[] | [.type, .status, .lastTransitionTime]]' \
		'[["PodReadyToStartContainers","True","2026-12-01T10:00:00Z"],["Initialized","True","2026-12-01T10:00:00Z"],["Ready","True","2026-12-01T11:00:00Z"],["ContainersReady","True","2026-12-01T11:00:00Z"],["PodScheduled","True","2026-12-01T10:00:00Z"]]'
	[ -z "$stderr" ]
}

@test "pod-status: --current takes a whole Pod as well as a status" {
	run -0 pod-status --now=2026-12-01T10:00:00Z -o pod "$FIX/web.json"
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/current-pod.json"
	run -0 --separate-stderr pod-status --now=2026-12-01T11:00:00Z \
		--current="$BATS_TEST_TMPDIR/current-pod.json" "$FIX/web.json"
	[ "$(jq -r '[.conditions[].lastTransitionTime] | unique | join(" ")' <<<"$output")" = \
		2026-12-01T10:00:00Z ]
}

@test "pod-status: without --current the pod's own conditions give the times" {
	jq -c '.status.conditions = [{"type":"Ready","status":"False","lastTransitionTime":"2026-11-30T08:00:00Z"},
		{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-11-30T07:00:00Z"}]' \
		"$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW "$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.conditions[] | [.type, .lastTransitionTime]]' \
		'[["PodReadyToStartContainers","2026-12-01T10:00:00Z"],["Initialized","2026-12-01T10:00:00Z"],["Ready","2026-11-30T08:00:00Z"],["ContainersReady","2026-12-01T10:00:00Z"],["PodScheduled","2026-11-30T07:00:00Z"]]'
}

# kubectl prunes the nulls of a merge patch's lists (lastProbeTime: null), as the
# API server decodes them: absent and null are the same field, so both sides drop them
kubectl_status() {
	kubectl patch --local --type merge -f "$1" --patch-file "$2" -o json |
		jq -S '.status | .conditions |= map(with_entries(select(.value != null)))'
}

@test "pod-status: -o patch applied to the current status by kubectl gives the -o status result" {
	run -0 pod-status --now=2026-12-01T10:00:00Z -o pod "$FIX/web.json"
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/current.json"
	run_ok pod-status --now=2026-12-01T11:00:00Z -o patch \
		--probe-results="$FIX/results-ready.ndjson" --current="$BATS_TEST_TMPDIR/current.json" \
		"$FIX/web.json"
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/patch.json"
	jq_is '.metadata' '{"uid":"5f0c1d2e-web"}'
	jq_is '.status | keys' '["conditions","containerStatuses","initContainerStatuses"]'
	run -0 pod-status --now=2026-12-01T11:00:00Z --probe-results="$FIX/results-ready.ndjson" \
		--current="$BATS_TEST_TMPDIR/current.json" "$FIX/web.json"
	jq --argjson s "$output" '.status = $s' "$BATS_TEST_TMPDIR/current.json" \
		>"$BATS_TEST_TMPDIR/want.json"
	echo '{}' >"$BATS_TEST_TMPDIR/empty.json"
	run -0 kubectl_status "$BATS_TEST_TMPDIR/current.json" "$BATS_TEST_TMPDIR/patch.json"
	local applied=$output
	run -0 kubectl_status "$BATS_TEST_TMPDIR/want.json" "$BATS_TEST_TMPDIR/empty.json"
	[ "$applied" = "$output" ]
	[ "$(jq -r '.conditions[] | select(.type == "Ready") | .status' <<<"$applied")" = True ]
}

@test "pod-status: -o patch of an unchanged status is the uid precondition alone" {
	run -0 pod-status --now=2026-12-01T10:00:00Z "$FIX/web.json"
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/current.json"
	run -0 --separate-stderr pod-status --now=2026-12-01T12:00:00Z -o patch \
		--current="$BATS_TEST_TMPDIR/current.json" "$FIX/web.json"
	[ "$output" = '{"metadata":{"uid":"5f0c1d2e-web"}}' ]
}

@test "pod-status: -o status,patch,brief prints each of one computation, a line each, in that order" {
	run -0 pod-status --now=2026-12-01T10:00:00Z "$FIX/web.json"
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/current.json"
	local args="--now=2026-12-01T11:00:00Z --probe-results=$FIX/results-ready.ndjson"
	args="$args --current=$BATS_TEST_TMPDIR/current.json"
	run -0 --separate-stderr pod-status $args -o status,patch,brief "$FIX/web.json"
	[ -z "$stderr" ]
	[ "${#lines[@]}" = 3 ]
	[ "${lines[0]}" = "$(pod-status $args "$FIX/web.json")" ]
	[ "${lines[1]}" = "$(pod-status $args -o patch "$FIX/web.json")" ]
	[ "${lines[2]}" = "Running True" ]
	# the order given is the order printed; without the probe results, not Ready
	run -0 pod-status --now=$NOW -o brief,pod "$FIX/web.json"
	[ "${lines[0]}" = "Running False" ]
	[ "$(jq -r .metadata.name <<<"${lines[1]}")" = "$(jq -r .metadata.name "$FIX/web.json")" ]
}

@test "pod-status: -o brief says Pending False for a pod whose container waits" {
	jq -c '.status.containerStatuses[0].state = {waiting: {reason: "ContainerCreating"}}
		| del(.status.initContainerStatuses)' "$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW -o brief "$BATS_TEST_TMPDIR/pod.json"
	[ "$output" = "Pending False" ]
}

@test "pod-status: -o pod prints the whole Pod with the new status" {
	run -0 --separate-stderr pod-status --now=$NOW --probe-results="$FIX/results-ready.ndjson" \
		-o pod "$FIX/web.json"
	jq_is 'del(.status)' "$(jq -c 'del(.status)' "$FIX/web.json")"
	jq_is .status "$(cat "$FIX/web-ready.out.json")"
}

@test "pod-status: a terminal phase is kept with its reason and message" {
	jq -c '.status.phase = "Failed" | .status.reason = "Evicted" |
		.status.message = "The node was low on resource: memory."' "$FIX/web.json" \
		>"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW "$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.phase, .reason, .message]' '["Failed","Evicted","The node was low on resource: memory."]'
	[ "$(cond_of ContainersReady)" = '["False","PodFailed",null]' ]
	[ "$(cond_of Ready)" = '["False","PodFailed",null]' ]
}

@test "pod-status: a terminal phase in the input keeps its reason and message over --current's phase" {
	jq -c '.status.phase = "Failed" | .status.reason = "Evicted" |
		.status.message = "The node was low on resource: memory."' "$FIX/web.json" \
		>"$BATS_TEST_TMPDIR/pod.json"
	jq -c '.status.phase = "Running" | .status.reason = "Old" | .status' "$FIX/web.json" \
		>"$BATS_TEST_TMPDIR/current.json"
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		"$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.phase, .reason, .message]' '["Failed","Evicted","The node was low on resource: memory."]'
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		-o patch "$BATS_TEST_TMPDIR/pod.json"
	jq_is '.status | [.phase, .reason, .message]' '["Failed","Evicted","The node was low on resource: memory."]'
}

@test "pod-status: a reason and message go when the phase changes" {
	jq -c '.status.phase = "Pending" | .status.reason = "Waiting"' "$FIX/web.json" \
		>"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW "$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.phase, .reason]' '["Running",null]'
}

@test "pod-status: --terminal makes a stopped pod Succeeded, but never a static one" {
	jq -c '.spec.restartPolicy = "Always" | .spec.initContainers = [] |
		.status.initContainerStatuses = [] |
		.status.containerStatuses[].state = {"terminated":{"exitCode":0}}' "$FIX/web.json" \
		>"$BATS_TEST_TMPDIR/pod.json"
	run -0 pod-status --now=$NOW "$BATS_TEST_TMPDIR/pod.json"
	[ "$(jq -r .phase <<<"$output")" = Running ]
	run -0 pod-status --now=$NOW --terminal "$BATS_TEST_TMPDIR/pod.json"
	[ "$(jq -r .phase <<<"$output")" = Succeeded ]
	jq -c '.metadata.annotations["kubernetes.io/config.source"] = "file"' \
		"$BATS_TEST_TMPDIR/pod.json" >"$BATS_TEST_TMPDIR/static.json"
	run -0 pod-status --now=$NOW --terminal "$BATS_TEST_TMPDIR/static.json"
	[ "$(jq -r .phase <<<"$output")" = Running ]
}

# --- a kill's status (node shutdown, eviction) ------------------------------------

SHUTDOWN_MSG="Pod was terminated in response to imminent node shutdown."

# kill.json: what a node shutdown reports; web.json's containers given $1 as state
kill_setup() {
	jq -nc --arg m "$SHUTDOWN_MSG" '{phase: "Failed", reason: "Terminated", message: $m,
		conditions: [{type: "DisruptionTarget", status: "True",
			lastTransitionTime: "2026-12-01T09:30:00Z",
			reason: "TerminationByKubelet", message: $m}]}' >"$BATS_TEST_TMPDIR/kill.json"
	jq -c --argjson st "$1" '.spec.initContainers = [] | .status.initContainerStatuses = [] |
		.spec.containers[].startupProbe = null | .spec.containers[].readinessProbe = null |
		.status.containerStatuses[].state = $st' "$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	# the server's status: the pod Running and Ready an hour ago
	pod-status --now=2026-12-01T09:00:00Z "$BATS_TEST_TMPDIR/pod.json" |
		jq -c '.phase = "Running"' >"$BATS_TEST_TMPDIR/current.json"
}

@test "pod-status: a kill status over running containers changes nothing until the pod is terminal" {
	kill_setup '{"running":{"startedAt":"2026-12-01T09:00:04Z"}}'
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		--kill-status="$BATS_TEST_TMPDIR/kill.json" "$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.phase, .reason, .message]' '["Running",null,null]'
	jq_is '[.conditions[].type]' '["PodReadyToStartContainers","Initialized","Ready","ContainersReady","PodScheduled"]'
	[ "$(cond_of Ready)" = '["True",null,null]' ]
	# the same as without it
	[ "$output" = "$(pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		"$BATS_TEST_TMPDIR/pod.json")" ]
}

@test "pod-status: a kill status over terminated containers of a terminal pod: its phase, reason, message and DisruptionTarget" {
	kill_setup '{"terminated":{"exitCode":143,"reason":"Error","startedAt":"2026-12-01T09:00:04Z","finishedAt":"2026-12-01T09:59:58Z"}}'
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		--terminal --kill-status="$BATS_TEST_TMPDIR/kill.json" "$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.phase, .reason, .message]' "[\"Failed\",\"Terminated\",\"$SHUTDOWN_MSG\"]"
	# the condition's time is the status manager's: now, as the condition is new
	jq_is '.conditions[0]' "{\"type\":\"DisruptionTarget\",\"status\":\"True\",\"lastTransitionTime\":\"$NOW\",\"reason\":\"TerminationByKubelet\",\"message\":\"$SHUTDOWN_MSG\"}"
	[ "$(cond_of Ready)" = '["False","PodFailed",null]' ]
	[ "$(cond_of ContainersReady)" = '["False","PodFailed",null]' ]
	# the patch kubectl applies to the server's status gives that status
	pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" --terminal \
		--kill-status="$BATS_TEST_TMPDIR/kill.json" -o patch "$BATS_TEST_TMPDIR/pod.json" \
		>"$BATS_TEST_TMPDIR/patch.json"
	jq -c --slurpfile s "$BATS_TEST_TMPDIR/current.json" '.status = $s[0]' \
		"$BATS_TEST_TMPDIR/pod.json" >"$BATS_TEST_TMPDIR/server.json"
	jq -c --argjson s "$output" '.status = $s' "$BATS_TEST_TMPDIR/pod.json" \
		>"$BATS_TEST_TMPDIR/want.json"
	echo '{}' >"$BATS_TEST_TMPDIR/empty.json"
	run -0 kubectl_status "$BATS_TEST_TMPDIR/server.json" "$BATS_TEST_TMPDIR/patch.json"
	local applied=$output
	run -0 kubectl_status "$BATS_TEST_TMPDIR/want.json" "$BATS_TEST_TMPDIR/empty.json"
	[ "$applied" = "$output" ]
	jq_is '[.phase, .reason, ([.conditions[].type] | index("DisruptionTarget"))]' '["Failed","Terminated",0]'
}

@test "pod-status: a kill status whose phase the containers contradict: Succeeded, without its reason, with its DisruptionTarget" {
	kill_setup '{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-12-01T09:00:04Z","finishedAt":"2026-12-01T09:59:58Z"}}'
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		--terminal --kill-status="$BATS_TEST_TMPDIR/kill.json" "$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.phase, .reason, .message]' '["Succeeded",null,null]'
	[ "$(cond_of DisruptionTarget)" = "[\"True\",\"TerminationByKubelet\",\"$SHUTDOWN_MSG\"]" ]
}

@test "pod-status: a kill status over a pod the server has terminal already keeps the server's condition time" {
	kill_setup '{"terminated":{"exitCode":143,"reason":"Error","startedAt":"2026-12-01T09:00:04Z","finishedAt":"2026-12-01T09:59:58Z"}}'
	pod-status --now=2026-12-01T09:59:59Z --current="$BATS_TEST_TMPDIR/current.json" --terminal \
		--kill-status="$BATS_TEST_TMPDIR/kill.json" "$BATS_TEST_TMPDIR/pod.json" \
		>"$BATS_TEST_TMPDIR/sent.json"
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/sent.json" \
		--terminal --kill-status="$BATS_TEST_TMPDIR/kill.json" "$BATS_TEST_TMPDIR/pod.json"
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/sent.json")" ]
	jq_is '.conditions[0].lastTransitionTime' '"2026-12-01T09:59:59Z"'
}

@test "pod-status: a bad kill status: exit 2, the file and what is wrong, nothing on stdout" {
	kill_setup '{"running":{"startedAt":"2026-12-01T09:00:04Z"}}'
	local k=$BATS_TEST_TMPDIR/k.json
	printf '{"phase": "Failed",\n "reason": Terminated}\n' >"$k"
	run -2 --separate-stderr pod-status --now=$NOW --terminal --kill-status="$k" "$BATS_TEST_TMPDIR/pod.json"
	[ "$output" = "" ]
	[ "$stderr" = "pod-status: $k:2:12: unexpected 'T', expected a value" ]
	while IFS=$'\t' read -r doc msg; do
		printf '%s\n' "$doc" >"$k"
		run -2 --separate-stderr pod-status --now=$NOW --terminal --kill-status="$k" \
			"$BATS_TEST_TMPDIR/pod.json"
		[ "$output" = "" ]
		[ "$stderr" = "pod-status: $k: $msg" ] || { echo "$doc: $stderr"; return 1; }
	done <<-'EOF'
	[]	a kill status: expected an object, got an array
	{"phase":3}	phase: expected a string, got a number
	{"phase":"Evicted"}	phase: 'Evicted' is not Pending, Running, Succeeded, Failed or Unknown
	{"message":{}}	message: expected a string, got an object
	{"conditions":{}}	conditions: expected an array, got an object
	{"conditions":[{"type":"DisruptionTarget"}]}	conditions[0].status: missing
	{"conditions":[{"status":"True"}]}	conditions[0].type: missing
	EOF
	run -2 --separate-stderr pod-status --kill-status="$BATS_TEST_TMPDIR/kill.json" --stream \
		"$BATS_TEST_TMPDIR/pod.json"
	[ "$output" = "" ]
	[[ "$stderr" == "pod-status: --kill-status and --stream cannot be used together"* ]]
}

@test "pod-status: YAML in, the same status out" {
	run -0 --separate-stderr pod-status --now=$NOW --probe-results="$FIX/results-ready.ndjson" \
		"$FIX/web.yaml"
	[ "$output" = "$(cat "$FIX/web-ready.out.json")" ]
}

# --- streams -----------------------------------------------------------------------

@test "pod-status: --stream prints a pod again when a probe result changes its status, not otherwise" {
	{
		cat "$FIX/web.json"
		echo '{"pod":"shop/web","container":"proxy","type":"readiness","result":"success"}'
		echo '{"pod":"shop/web","container":"web","type":"startup","result":"success"}'
		echo '{"pod":"shop/web","container":"web","type":"readiness","result":"failure"}'
		echo '{"pod":"shop/web","container":"web","type":"readiness","result":"success"}'
		echo '{"pod":"shop/web","container":"web","type":"liveness","result":"success"}'
	} >"$BATS_TEST_TMPDIR/stream.ndjson"
	run_ok pod-status --now=$NOW --stream -o pod "$BATS_TEST_TMPDIR/stream.ndjson"
	[ "$(jq -c '[.metadata.name, ([.status.initContainerStatuses[], .status.containerStatuses[]] |
		map("\(.name)=\(.ready)/\(.started)") | join(",")), (.status.conditions[] |
		select(.type == "Ready") | .status)]' <<<"$output")" = "$(printf '%s\n' \
		'["web","setup=true/false,proxy=false/true,log=true/true,web=false/false","False"]' \
		'["web","setup=true/false,proxy=true/true,log=true/true,web=false/false","False"]' \
		'["web","setup=true/false,proxy=true/true,log=true/true,web=false/true","False"]' \
		'["web","setup=true/false,proxy=true/true,log=true/true,web=true/true","True"]')" ]
}

@test "pod-status: --stream reports a bad document by its line and goes on" {
	{
		echo '{"kind":"Node","metadata":{"name":"n1"}}'
		jq -c . "$FIX/web.json"
		echo '{"pod":"shop/web","container":"web","type":"sometimes","result":"success"}'
		jq -c 'del(.metadata.name)' "$FIX/web.json"
	} >"$BATS_TEST_TMPDIR/stream.ndjson"
	run -2 --separate-stderr pod-status --now=$NOW --stream "$BATS_TEST_TMPDIR/stream.ndjson"
	[ "${#lines[@]}" = 1 ]
	[ "$(jq -r .phase <<<"$output")" = Running ]
	[ "${stderr_lines[0]}" = "pod-status: $BATS_TEST_TMPDIR/stream.ndjson:1: kind: not a Pod: 'Node'" ]
	[ "${stderr_lines[1]}" = "pod-status: $BATS_TEST_TMPDIR/stream.ndjson:3: type: 'sometimes' is not liveness, readiness or startup" ]
	[ "${stderr_lines[2]}" = "pod-status: $BATS_TEST_TMPDIR/stream.ndjson:4: metadata.name: missing: a stream tells pods apart by namespace and name" ]
}

# --- bad input ---------------------------------------------------------------------

# a row: web.json changed by a jq filter must exit 2 with this message, nothing on stdout
bad_pod() {
	local filter=$1 want=$2 f="$BATS_TEST_TMPDIR/bad.json"
	shift 2
	jq -c "$filter" "$FIX/web.json" >"$f"
	run -2 --separate-stderr pod-status --now=$NOW "$@" "$f"
	if [ -n "$output" ] || [ "$stderr" != "pod-status: $f:1: $want" ]; then
		echo "# $filter: got [$output] [$stderr]"
		echo "#   want [pod-status: $f:1: $want]"
		return 1
	fi
}

@test "pod-status: bad pods: exit 2, the field's path in the message, nothing on stdout" {
	local n=0
	bad_pod '.kind = "Node"' "kind: not a Pod: 'Node'" || n=$((n + 1))
	bad_pod '[.]' "not a Pod: expected an object, got an array" || n=$((n + 1))
	bad_pod 'del(.spec)' "spec: missing: not a Pod" || n=$((n + 1))
	bad_pod '.spec = []' "spec: expected an object" || n=$((n + 1))
	bad_pod 'del(.spec.containers)' "spec.containers: missing: a Pod has at least one container" || n=$((n + 1))
	bad_pod '.spec.containers = []' "spec.containers: empty: a Pod has at least one container" || n=$((n + 1))
	bad_pod 'del(.spec.containers[1].name)' "spec.containers[1].name: missing" || n=$((n + 1))
	bad_pod '.spec.containers[1].name = 7' "spec.containers[1].name: expected a string, got a number" || n=$((n + 1))
	bad_pod '.spec.containers[1].name = ""' "spec.containers[1].name: empty" || n=$((n + 1))
	bad_pod '.spec.containers[1].name = "proxy"' "spec.containers[1].name: 'proxy' is the name of another container" || n=$((n + 1))
	bad_pod '.spec.restartPolicy = "Sometimes"' "spec.restartPolicy: expected Always, OnFailure or Never" || n=$((n + 1))
	bad_pod '.spec.initContainers[0].restartPolicy = "Maybe"' "spec.initContainers[0].restartPolicy: expected Always, OnFailure or Never" || n=$((n + 1))
	bad_pod '.spec.containers[0].restartPolicy = "Never" | .spec.containers[0].restartPolicyRules = [{"action":"Restart","exitCodes":{"operator":"In","values":["42"]}}]' "spec.containers[0].restartPolicyRules[0].exitCodes.values[0]: expected an integer, got a string" || n=$((n + 1))
	bad_pod '.spec.readinessGates = [{}]' "spec.readinessGates[0].conditionType: missing" || n=$((n + 1))
	bad_pod '.status = "Running"' "status: expected an object, got a string" || n=$((n + 1))
	bad_pod '.status.containerStatuses[0].name = "db"' "status.containerStatuses[0].name: no container 'db' in spec.containers" || n=$((n + 1))
	bad_pod '.status.initContainerStatuses[0].name = "web"' "status.initContainerStatuses[0].name: no container 'web' in spec.initContainers" || n=$((n + 1))
	bad_pod '.status.ephemeralContainerStatuses = [{"name":"debug"}]' "status.ephemeralContainerStatuses[0].name: no container 'debug' in spec.ephemeralContainers" || n=$((n + 1))
	bad_pod '.status.containerStatuses[1].name = "web"' "status.containerStatuses[1].name: a second status for container 'web'" || n=$((n + 1))
	bad_pod '.status.containerStatuses = {}' "status.containerStatuses: expected an array, got an object" || n=$((n + 1))
	bad_pod '.status.containerStatuses[1] = "log"' "status.containerStatuses[1]: expected an object, got a string" || n=$((n + 1))
	bad_pod '.status.containerStatuses[0].state.terminated = {"exitCode":1}' "status.containerStatuses[0].state: more than one state (running, terminated): a container is in one state at a time" || n=$((n + 1))
	bad_pod '.status.containerStatuses[1].lastState = {"waiting":{},"terminated":{}}' "status.containerStatuses[1].lastState: more than one state (waiting, terminated): a container is in one state at a time" || n=$((n + 1))
	bad_pod '.status.containerStatuses[0].state = {"sleeping":{}}' "status.containerStatuses[0].state.sleeping: not a container state (waiting, running or terminated)" || n=$((n + 1))
	bad_pod '.status.containerStatuses[0].state = {"running":true}' "status.containerStatuses[0].state.running: expected an object, got a boolean" || n=$((n + 1))
	bad_pod '.status.containerStatuses[0].restartCount = -1' "status.containerStatuses[0].restartCount: -1 is out of range (0 to 2147483647)" || n=$((n + 1))
	bad_pod '.status.containerStatuses[0].restartCount = "1"' "status.containerStatuses[0].restartCount: expected an integer, got a string" || n=$((n + 1))
	bad_pod '.status.initContainerStatuses[0].state.terminated.exitCode = 1.5' "status.initContainerStatuses[0].state.terminated.exitCode: expected an integer, got a fraction" || n=$((n + 1))
	bad_pod '.status.containerStatuses[0].state.running.startedAt = "yesterday"' "status.containerStatuses[0].state.running.startedAt: expected an RFC 3339 time, got a string that is not one" || n=$((n + 1))
	bad_pod '.status.conditions = [{"status":"True"}]' "status.conditions[0].type: missing" || n=$((n + 1))
	bad_pod '.metadata.generation = "3"' "metadata.generation: expected an integer, got a string" || n=$((n + 1))
	[ "$n" = 0 ]
}

@test "pod-status: bad probe results: exit 2, the line and the field in the message" {
	local n=0 f="$BATS_TEST_TMPDIR/results.ndjson" want
	for row in \
		'{"pod":"shop/web","container":"db","type":"readiness","result":"success"}|web.json:1: RES:1: container: pod '"'"'shop/web'"'"' has no container '"'"'db'"'"' that is probed (containers and sidecar init containers)' \
		'{"pod":"shop/web","container":"setup","type":"readiness","result":"success"}|web.json:1: RES:1: container: pod '"'"'shop/web'"'"' has no container '"'"'setup'"'"' that is probed (containers and sidecar init containers)' \
		'{"container":"web","type":"readiness","result":"success"}|RES:1: pod: missing' \
		'{"pod":"shop/web","container":"web","type":"sometimes","result":"success"}|RES:1: type: '"'"'sometimes'"'"' is not liveness, readiness or startup' \
		'{"pod":"shop/web","container":"web","type":"readiness","result":"maybe"}|RES:1: result: '"'"'maybe'"'"' is not success, failure or unknown' \
		'["web"]|RES:1: not a probe result: expected an object, got an array' \
		'{"pod":"shop/web",|RES:2:1: unexpected end of input, expected a string key'; do
		printf '%s\n' "${row%%|*}" >"$f"
		want="pod-status: ${row#*|}"
		want=${want//RES/$f}
		want=${want//web.json/$FIX/web.json}
		run -2 --separate-stderr pod-status --now=$NOW --probe-results="$f" "$FIX/web.json"
		if [ -n "$output" ] || [ "$stderr" != "$want" ]; then
			echo "# ${row%%|*}: got [$output] [$stderr], want [$want]"
			n=$((n + 1))
		fi
	done
	[ "$n" = 0 ]
}

@test "pod-status: a current status that is not one, and usage errors, exit 2" {
	echo '[1]' >"$BATS_TEST_TMPDIR/current.json"
	fails_with 2 "pod-status: $BATS_TEST_TMPDIR/current.json: expected a Pod or a pod status, got an array" pod-status --current="$BATS_TEST_TMPDIR/current.json" "$FIX/web.json"
	run -2 --separate-stderr pod-status -o yaml "$FIX/web.json"
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "pod-status: invalid value 'yaml' for --output: 'yaml' is not status, patch, pod or brief" ]
	run -2 --separate-stderr pod-status -o status,patch,status "$FIX/web.json"
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "pod-status: invalid value 'status,patch,status' for --output: names status twice" ]
	run -2 --separate-stderr pod-status -o status, "$FIX/web.json"
	[ "${stderr_lines[0]}" = "pod-status: invalid value 'status,' for --output: '' is not status, patch, pod or brief" ]
	run -2 --separate-stderr pod-status --now=today "$FIX/web.json"
	[ -z "$output" ]
	[[ "${stderr_lines[0]}" == "pod-status: --now: "* ]]
	run -2 --separate-stderr pod-status --stream --current="$FIX/web.json"
	[ "${stderr_lines[0]}" = "pod-status: --current and --stream cannot be used together: in a stream, each pod's last status printed is its current one" ]
	run -2 --separate-stderr pod-status "$FIX/web.json" "$FIX/web.yaml"
	[ "${stderr_lines[0]}" = "pod-status: unexpected operand '$FIX/web.yaml': one <pod> file at most" ]
	printf '' >"$BATS_TEST_TMPDIR/empty.json"
	fails_with 2 "pod-status: $BATS_TEST_TMPDIR/empty.json: no Pod in the input" pod-status "$BATS_TEST_TMPDIR/empty.json"
}

# --- containers the runtime lost (TestConvertToAPIContainerStatuses) ----------------

lost_status='{"name":"NAME","state":{"waiting":{"reason":"ContainerCreating"}},"lastState":{"terminated":{"exitCode":137,"reason":"ContainerStatusUnknown","message":"The container could not be located when the pod was deleted.  The container used to be Running"}},"ready":false,"restartCount":COUNT,"image":"","imageID":"","started":false}'

@test "pod-status: TestConvertToAPIContainerStatuses 'no current status, with previous statuses and no deletion'" {
	run -0 --separate-stderr pod-status --now=$NOW --current="$FIX/lost-current.json" \
		"$FIX/lost.json"
	[ "$(jq -c '.containerStatuses[]' <<<"$output")" = "$(for c in containerA containerB; do
		s=${lost_status/NAME/$c}; echo "${s/COUNT/1}"; done)" ]
	[ "$(jq -r .phase <<<"$output")" = Running ]
}

@test "pod-status: TestConvertToAPIContainerStatuses 'no current status, with previous statuses and deletion'" {
	jq -c '.metadata.deletionTimestamp = "2026-12-01T09:59:00Z"' "$FIX/lost.json" \
		>"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW --current="$FIX/lost-current.json" \
		"$BATS_TEST_TMPDIR/pod.json"
	[ "$(jq -c '.containerStatuses[]' <<<"$output")" = "$(for c in containerA containerB; do
		s=${lost_status/NAME/$c}; echo "${s/COUNT/0}"; done)" ]
}

@test "pod-status: a container terminated in the current status and unknown to the runtime keeps that status" {
	echo '{"containerStatuses":[{"name":"containerA","state":{"terminated":{"exitCode":3,"reason":"Error"}},"restartCount":2}]}' \
		>"$BATS_TEST_TMPDIR/current.json"
	jq -c '.spec.restartPolicy = "Never"' "$FIX/lost.json" >"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		"$BATS_TEST_TMPDIR/pod.json"
	jq_is '.containerStatuses[0]' '{"name":"containerA","state":{"terminated":{"exitCode":3,"reason":"Error"}},"restartCount":2,"ready":false,"started":false}'
	[ "$(jq -r .phase <<<"$output")" = Pending ]
}

@test "pod-status: conditions the kubelet does not own are kept, and readiness gates read them" {
	jq -c '.spec.readinessGates = [{"conditionType":"example.com/lb"}] |
		.status.conditions = [
		{"type":"example.com/lb","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-30T08:00:00Z"},
		{"type":"DisruptionTarget","status":"True","reason":"TerminationByKubelet","lastTransitionTime":"2026-11-30T09:00:00Z"},
		{"type":"Ready","status":"True","lastTransitionTime":"2026-11-30T07:00:00Z"}]' \
		"$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW --probe-results="$FIX/results-ready.ndjson" \
		"$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.conditions[] | [.type, .status, .lastTransitionTime]]' \
		'[["example.com/lb","True","2026-11-30T08:00:00Z"],["DisruptionTarget","True","2026-11-30T09:00:00Z"],["PodReadyToStartContainers","True","2026-12-01T10:00:00Z"],["Initialized","True","2026-12-01T10:00:00Z"],["Ready","True","2026-11-30T07:00:00Z"],["ContainersReady","True","2026-12-01T10:00:00Z"],["PodScheduled","True","2026-12-01T10:00:00Z"]]'
	jq -c '.status.conditions[0].status = "False"' "$BATS_TEST_TMPDIR/pod.json" \
		>"$BATS_TEST_TMPDIR/gate-false.json"
	run -0 --separate-stderr pod-status --now=$NOW --probe-results="$FIX/results-ready.ndjson" \
		"$BATS_TEST_TMPDIR/gate-false.json"
	[ "$(cond_of Ready)" = '["False","ReadinessGatesNotReady","the status of pod readiness gate \"example.com/lb\" is not \"True\", but False"]' ]
	[ "$(jq -r '.conditions[] | select(.type == "Ready") | .lastTransitionTime' <<<"$output")" = 2026-12-01T10:00:00Z ]
}

@test "pod-status: probe-run --watch lines feed a stream as probe-run prints them" {
	local watch="$BATS_TEST_TMPDIR/watch.ndjson" pid
	probe-run --watch --pod="$FIX/exec.json" >"$watch" 2>/dev/null &
	pid=$!
	# the watch is asynchronous: wait (up to 20 s) for the last change it will make
	wait_until 100 0.2 grep -q '"container":"app","type":"readiness","result":"success"' "$watch"
	kill "$pid"
	wait "$pid" || true
	run_ok bash -c 'cat "$1" "$2" | pod-status --now=$3 --stream -o pod' \
		_ "$FIX/exec.json" "$watch" "$NOW"
	[ "$(tail -n 1 <<<"$output" | jq -c '[.status.containerStatuses[] |
		"\(.name)=\(.ready)/\(.started)"], (.status.conditions[] |
		select(.type == "Ready") | .message)')" = \
		"$(printf '%s\n' '["app=true/true","side=false/true"]' '"containers with unready status: [side]"')" ]
	[ "$(head -n 1 <<<"$output" | jq -c '[.status.containerStatuses[] | "\(.name)=\(.ready)/\(.started)"]')" = \
		'["app=false/false","side=false/true"]' ]
}

@test "pod-status: --stream reports a result for a container the pod does not probe once, and goes on" {
	{
		echo '{"pod":"shop/web","container":"db","type":"readiness","result":"success"}'
		jq -c . "$FIX/web.json"
		cat "$FIX/results-ready.ndjson"
	} >"$BATS_TEST_TMPDIR/stream.ndjson"
	run -2 --separate-stderr pod-status --now=$NOW --stream "$BATS_TEST_TMPDIR/stream.ndjson"
	[ "$stderr" = "pod-status: $BATS_TEST_TMPDIR/stream.ndjson:1: container: pod 'shop/web' has no container 'db' that is probed (containers and sidecar init containers)" ]
	[ "$(tail -n 1 <<<"$output")" = "$(cat "$FIX/web-ready.out.json")" ]
}

@test "pod-status: the pod's generation is observed by the status and the kubelet's conditions" {
	jq -c '.metadata.generation = 3 | .status.conditions = [{"type":"example.com/lb","status":"True"}]' \
		"$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr pod-status --now=$NOW "$BATS_TEST_TMPDIR/pod.json"
	jq_is '[.observedGeneration, [.conditions[] | [.type, .observedGeneration]]]' \
		'[3,[["example.com/lb",null],["PodReadyToStartContainers",3],["Initialized",3],["Ready",3],["ContainersReady",3],["PodScheduled",3]]]'
	jq_is '.conditions[1] | keys_unsorted' \
		'["type","observedGeneration","status","lastProbeTime","lastTransitionTime"]'
	echo '{"observedGeneration":5}' >"$BATS_TEST_TMPDIR/current.json"
	run -0 --separate-stderr pod-status --now=$NOW --current="$BATS_TEST_TMPDIR/current.json" \
		"$BATS_TEST_TMPDIR/pod.json"
	jq_is .observedGeneration 5
	run -0 --separate-stderr pod-status --now=$NOW "$FIX/web.json"
	jq_is '[.observedGeneration, .conditions[0].observedGeneration]' '[null,null]'
}
