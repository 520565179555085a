#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# pod-status: upstream's getPhase and condition cases, probe results, transition times,
# the patch against kubectl, streams, bad input

load helper

NOW=2026-12-01T10:00:00Z

# every case of a fixture file: its pod (and probe results) through pod-status, the
# phase and the conditions it names compared with what the case expects
cases() {
	local line name term got want fails=0
	while IFS= read -r line; do
		name=$(jq -r '.test + ": " + .case' <<<"$line")
		term=$(jq -r 'if .terminal then "--terminal" else "" end' <<<"$line")
		jq -c '.probeResults[]?' <<<"$line" >"$BATS_TEST_TMPDIR/results"
		got=$(jq -c .pod <<<"$line" |
			pod-status --now=$NOW $term --probe-results="$BATS_TEST_TMPDIR/results")
		want=$(jq -c .expect <<<"$line")
		if ! jq -en --argjson g "$got" --argjson e "$want" '
			($e.phase == null or $e.phase == $g.phase) and
			([($e.conditions // {}) | to_entries[] | .key as $k | .value as $v |
			  ([$g.conditions[] | select(.type == $k)][0]) as $c |
			  $c.status == $v.status and $c.reason == $v.reason and
			  $c.message == $v.message] | all)' >/dev/null; then
			echo "# $name: expected $want, got $(jq -c '{phase,conditions}' <<<"$got")"
			fails=$((fails + 1))
		fi
	done <"$FIX/$1"
	[ "$fails" = 0 ]
}

@test "pod-status: TestPodPhaseWithRestartAlways, case by case" {
	cases phase-restart-always.ndjson
}

@test "pod-status: TestPodPhaseWithRestartAlwaysInitContainers, case by case" {
	cases phase-restart-always-init.ndjson
}

@test "pod-status: TestPodPhaseWithRestartAlwaysRestartableInitContainers, case by case" {
	cases phase-restart-always-sidecar.ndjson
}

@test "pod-status: TestPodPhaseWithRestartAlwaysAndPodHasRun, case by case" {
	cases phase-restart-always-has-run.ndjson
}

@test "pod-status: TestPodPhaseWithRestartNever, case by case" {
	cases phase-restart-never.ndjson
}

@test "pod-status: TestPodPhaseWithRestartNeverInitContainers, case by case" {
	cases phase-restart-never-init.ndjson
}

@test "pod-status: TestPodPhaseWithRestartNeverRestartableInitContainers, case by case" {
	cases phase-restart-never-sidecar.ndjson
}

@test "pod-status: TestPodPhaseWithRestartOnFailure, case by case" {
	cases phase-restart-onfailure.ndjson
}

@test "pod-status: TestPodPhaseWithContainerRestartPolicy, case by case" {
	cases phase-container-restart-policy.ndjson
}

@test "pod-status: TestPodPhaseWithContainerRestartPolicyInitContainers, case by case" {
	cases phase-container-restart-policy-init.ndjson
}

@test "pod-status: TestGenerateContainersReadyCondition, case by case" {
	cases cond-containers-ready.ndjson
}

@test "pod-status: TestGeneratePodReadyCondition, case by case" {
	cases cond-ready.ndjson
}

@test "pod-status: TestGeneratePodInitializedCondition, case by case" {
	cases cond-initialized.ndjson
}

@test "pod-status: TestGeneratePodReadyToStartContainersCondition, case by case" {
	cases cond-ready-to-start.ndjson
}
