#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# pod-status --state-dir: a pod of a kt-agent state directory, computed, and with
# --send kept on the local API server as the kubelet's status manager keeps it

load helper

setup() {
	apiserver_start
	export KUBECONFIG=$KUBECONFIG_FILE
	T=$BATS_TEST_TMPDIR
	S=$T/state
	mkdir -p "$S/pods"
}

teardown() {
	stop_jobs
	apiserver_stop
}

kr() {
	kube-request "$@"
}

# make_pod NAME [POLICY]: the pod on the server, bound to node n1, and its
# directory in the state (pod.json as the server has it, since); sets U and D
make_pod() {
	jq -c --arg n "$1" --arg p "${2:-Always}" '.metadata.name = $n | .spec.nodeName = "n1"
		| .spec.restartPolicy = $p' "$KT_SRCDIR/tests/fixtures/kt-agent/sleeper.json" |
		kr POST /api/v1/namespaces/default/pods - >"$T/$1.json"
	U=$(jq -r .metadata.uid "$T/$1.json")
	D=$S/pods/$U
	mkdir -p "$D/containers"
	cp "$T/$1.json" "$D/pod.json"
	echo 2026-12-01T10:00:00Z >"$D/since"
}

# container NAME FIELD=VALUE...: the provider's record of a container of the pod in $D
container() {
	local c=$D/containers/$1 kv
	shift
	mkdir -p "$c"
	for kv; do echo "${kv#*=}" >"$c/${kv%%=*}"; done
}

# a process group that runs for the test: what a running container's pid names
running_group() {
	setsid sleep infinity </dev/null >/dev/null 2>&1 3>&- &
	GROUP=$!
}

@test "pod-status --state-dir: the runtime's view of a pod from the provider's records" {
	make_pod web
	running_group
	container main pid=$GROUP startedAt=2026-12-01T10:00:01Z restarts=2
	run_ok pod-status --now=2026-12-01T10:00:05Z --state-dir="$S" "$U"
	jq_is '[.phase, .podIP, .podIPs, .hostIP, .startTime]' \
		'["Running","127.0.0.1",[{"ip":"127.0.0.1"}],"127.0.0.1","2026-12-01T10:00:00Z"]'
	jq_is '.containerStatuses[0] | [.name, .state, .ready, .started, .restartCount, .containerID, .image]' \
		'["main",{"running":{"startedAt":"2026-12-01T10:00:01Z"}},true,true,2,"kt://main","sh"]'
	jq_is '[.conditions[] | select(.type == "Ready") | .status]' '["True"]'
	# the group gone without an exit code: no longer running, waiting with its reason
	kill -KILL "$GROUP"
	wait "$GROUP" 2>/dev/null || true
	echo CrashLoopBackOff >"$D/containers/main/waiting"
	run_ok pod-status --now=2026-12-01T10:00:05Z --state-dir="$S" "$U"
	jq_is '.containerStatuses[0].state' '{"waiting":{"reason":"CrashLoopBackOff"}}'
}

@test "pod-status --state-dir: an exit code ends the container; the probes' and the kill's files are read" {
	make_pod job Never
	container main pid=1 startedAt=2026-12-01T10:00:01Z exit=3 finishedAt=2026-12-01T10:00:04Z
	run_ok pod-status --now=2026-12-01T10:00:05Z --state-dir="$S" --terminal "$U"
	jq_is '[.phase, .containerStatuses[0].state.terminated.exitCode, .containerStatuses[0].state.terminated.reason]' \
		'["Failed",3,"Error"]'
	# a readiness probe's failure, from its latest line
	make_pod web
	running_group
	jq -c '.spec.containers[0].readinessProbe = {exec: {command: ["true"]}}' "$D/pod.json" >"$T/p" &&
		mv "$T/p" "$D/pod.json"
	container main pid=$GROUP startedAt=2026-12-01T10:00:01Z
	printf '{"pod":"default/web","uid":"%s","container":"main","type":"readiness","result":"failure"}\n' \
		"$U" >"$D/probe.main.readiness"
	run_ok pod-status --now=2026-12-01T10:00:05Z --state-dir="$S" "$U"
	jq_is '[.containerStatuses[0].ready, (.conditions[] | select(.type == "Ready") | .status)]' '[false,"False"]'
	# what a kill reports, laid over once the pod is terminal
	echo '{"phase":"Failed","reason":"Terminated","message":"the node is shutting down"}' >"$D/kill-status.json"
	kill -KILL "$GROUP"
	wait "$GROUP" 2>/dev/null || true
	container main exit=143 finishedAt=2026-12-01T10:00:04Z
	run_ok pod-status --now=2026-12-01T10:00:05Z --state-dir="$S" --terminal "$U"
	jq_is '[.phase, .reason, .message]' '["Failed","Terminated","the node is shutting down"]'
}

@test "pod-status --send: a pod's status patched once, the same status never sent again" {
	make_pod web
	running_group
	container main pid=$GROUP startedAt=2026-12-01T10:00:01Z
	prints 0 "patched $U Running True" pod-status --state-dir="$S" --send <<<"$U"
	run_ok kr GET /api/v1/namespaces/default/pods/web
	jq_is '[.status.phase, .status.containerStatuses[0].state.running.startedAt, .status.startTime]' \
		'["Running","2026-12-01T10:00:01Z","2026-12-01T10:00:00Z"]'
	# a merge patch with the UID as its precondition, as the status manager sends it
	apiserver_requests PATCH /api/v1/namespaces/default/pods/web/status | grep -q 'merge-patch'
	# the pod as the server has it now: a new sender sends nothing, twice asked
	printf '%s\n' "$output" >"$D/pod.json"
	prints 0 "" pod-status --state-dir="$S" --send <<<"$U"$'\n'"$U"
	[ "$(apiserver_requests PATCH /api/v1/namespaces/default/pods/web/status | wc -l)" = 1 ]
	# the write is named for the field manager given
	run_ok kr GET /api/v1/namespaces/default/pods/web
	jq_is '[.metadata.managedFields[] | select(.subresource == "status") | .manager]' '["pod-status"]'
}

@test "pod-status --send: a terminal pod whose deletion has begun gets its final status, then is deleted" {
	make_pod job Never
	container main pid=1 startedAt=2026-12-01T10:00:01Z exit=0 finishedAt=2026-12-01T10:00:04Z
	kr DELETE /api/v1/namespaces/default/pods/job >/dev/null
	kr GET /api/v1/namespaces/default/pods/job >"$D/pod.json"
	jq -e '.metadata.deletionTimestamp' "$D/pod.json" >/dev/null
	run_ok pod-status --state-dir="$S" --send --field-manager=kt-agent <<<"$U terminal"
	lines_are "patched $U Succeeded False" "deleted $U"
	# the final status went first, then the delete, with grace 0 and the UID
	apiserver_requests PATCH /api/v1/namespaces/default/pods/job/status | grep -q Succeeded
	apiserver_requests DELETE /api/v1/namespaces/default/pods/job | tail -n 1 |
		grep -q '"gracePeriodSeconds": *0'
	run -1 kr GET /api/v1/namespaces/default/pods/job
	# a pod the server no longer has is forgotten
	prints 0 "gone $U" pod-status --state-dir="$S" --send <<<"$U"
}

@test "pod-status --send: a refused patch is sent again; one that fails at the end of input is exit 1" {
	make_pod web
	running_group
	container main pid=$GROUP startedAt=2026-12-01T10:00:01Z
	apiserver_fault '[{"method":"PATCH","path":"/pods/web/status$","status":500,"count":12}]'
	# the input stays open: the first sends fail past the client's own retries,
	# the sync tries again, and the line comes once the server answers
	mkfifo "$T/in" "$T/out"
	pod-status --state-dir="$S" --send --request-timeout=3s <"$T/in" >"$T/out" 2>"$T/err" &
	pid=$!
	exec 7>"$T/in"
	echo "$U" >&7
	exec 8<"$T/out"
	read -r line <&8
	[ "$line" = "patched $U Running True" ]
	exec 7>&-
	wait "$pid"
	grep -q "pod-status: pod $U: PATCH /api/v1/namespaces/default/pods/web/status: 500" "$T/err"
	# the server away for good: the end of input is the last try, and exit 1
	apiserver_fault '[{"method":"PATCH","path":"/pods/web/status$","status":500,"count":-1}]'
	rm -f "$D/containers/main/pid"
	run -1 --separate-stderr pod-status --state-dir="$S" --send --request-timeout=1s <<<"$U"
	[ -z "$output" ]
	[[ "$stderr" == "pod-status: pod $U: PATCH /api/v1/namespaces/default/pods/web/status: 500"* ]]
}

@test "pod-status --state-dir: bad usage and bad input lines are exit 2, the good lines still sent" {
	usage_errors pod-status <<'EOF2'
# --send without a state directory
--send|--send needs --state-dir: the pods it sends are a state directory's
# no pod
--state-dir=/tmp|--state-dir needs the <uid> of one pod (or --send)
# an operand with --send
--state-dir=/tmp --send u1|unexpected operand: with --send the UIDs are the input's lines
# -o with --send
--state-dir=/tmp --send -o patch|--send prints what it sent, a line each: -o does not apply
# --stream
--state-dir=/tmp --stream u1|--stream and --state-dir cannot be used together: a state directory's pods come as UIDs
# probe results
--state-dir=/tmp -r x u1|--probe-results and --state-dir cannot be used together: the probes' results are the pod's probe.* files
# --terminal is a line's
--state-dir=/tmp --send --terminal|--terminal and --send cannot be used together: a line says 'UID terminal' for a pod the pod worker finished
EOF2
	fails_with 2 "pod-status: '../x' is not a pod UID (letters, digits and '-')" \
		pod-status --state-dir="$S" ../x
	fails_with 1 "pod-status: $S/pods/u-nothing: no such pod" pod-status --state-dir="$S" u-nothing
	make_pod web
	running_group
	container main pid=$GROUP startedAt=2026-12-01T10:00:01Z
	run -2 --separate-stderr pod-status --state-dir="$S" --send <<EOF2
../etc
$U later
$(printf 'a\033]0;x')

$U terminal
EOF2
	[ "$output" = "patched $U Succeeded False" ] || [ "$output" = "patched $U Running True" ]
	[ "${stderr_lines[0]}" = "pod-status: -:1:1: '../etc' is not a pod UID (letters, digits and '-')" ]
	[ "${stderr_lines[1]}" = "pod-status: -:2:$(( ${#U} + 2 )): expected 'terminal' or the end of the line" ]
	[ "${stderr_lines[2]}" = "pod-status: -:3:1: 'a?]0;x' is not a pod UID (letters, digits and '-')" ]
	[ "${stderr_lines[3]}" = "pod-status: -:4:1: expected a pod UID" ]
	[ "${#stderr_lines[@]}" = 4 ]
}
