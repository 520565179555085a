#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kt-pod-plan: the built-in provider's plan of a pod.  tests/fixtures/pod-plan
# holds a table of pods, NAME.json, and the plan line each has, NAME.plan, as
# the jq program the provider ran before kt-pod-plan made it; the plan must
# not change by a byte.
load helper

FIX=$KT_SRCDIR/tests/fixtures/pod-plan
RFC3339='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'

# cpu_of FILE COMMAND...: the user and system CPU seconds COMMAND took, into FILE
cpu_of() {
	local out=$1 TIMEFORMAT='%3U %3S' rc=0
	shift
	{ time "$@" >/dev/null || rc=$?; } 2>"$out.time"
	awk '{ print $1 + $2 }' "$out.time" >"$out"
	[ "$rc" = 0 ] || { echo "$* exited $rc"; return 1; }
}

@test "kt-pod-plan: each pod of the table has the plan line the jq program made, then the time" {
	local n=0 f name
	for f in "$FIX"/*.json; do
		name=${f%.json}
		run -0 kt-pod-plan "$f"
		if [ "${lines[0]}" != "$(cat "$name.plan")" ]; then
			echo "${name##*/}: the plan differs"
			diff <(echo "${lines[0]}") "$name.plan" | head -c 2000
			return 1
		fi
		case ${lines[0]} in
		'!'*) [ "${#lines[@]}" = 1 ] ;;
		*)
			[ "${#lines[@]}" = 2 ]
			[[ ${lines[1]} =~ $RFC3339 ]]
			;;
		esac
		n=$((n + 1))
	done
	[ "$n" -ge 38 ]
}

@test "kt-pod-plan: the time line is the time the plan was made, UTC" {
	local before after
	before=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	run -0 kt-pod-plan "$FIX/plain.json"
	after=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	[ "${#lines[@]}" = 2 ]
	[[ ! ${lines[1]} < $before ]]
	[[ ! ${lines[1]} > $after ]]
}

@test "kt-pod-plan: the plan sourced gives each container's argv word for word, VAR expanded as the kubelet does" {
	local NL='
' TAB='	' argv
	jq -n -c '{spec: {restartPolicy: "Never", terminationGracePeriodSeconds: 7,
		securityContext: {runAsUser: 1000},
		containers: [{name: "main", stdin: true,
			env: [{name: "A", value: "a"}, {name: "Q", value: "it'"'"'s\n\tx"}],
			command: ["printf", "%s|"], args: ["$(A)$x$$(B)$(", "$(Q)", "", "😀 é"]},
			{name: "idle", securityContext: {runAsGroup: 5}}]}}' >"$BATS_TEST_TMPDIR/pod.json"
	run -0 kt-pod-plan "$BATS_TEST_TMPDIR/pod.json"
	[ "${#lines[@]}" = 2 ]
	eval "${lines[0]}"
	[ "$n_containers" = 2 ] && [ "$restart_policy" = Never ] && [ "$grace" = 7 ]
	[ "$c_name_1" = main ] && [ "$c_user_1" = 1000:1000 ] && [ "$c_stdin_1" = open ]
	[ "$c_name_2" = idle ] && [ "$c_argv_2" = no-command ] && [ "$c_user_2" = 1000:5 ]
	[ -z "$c_stdin_2" ]
	# the argv is one more round of quoting: evaluated, it is the words
	eval "set -- $c_argv_1"
	[ "$#" = 8 ]
	[ "$1" = A=a ] && [ "$2" = "Q=it's${NL}${TAB}x" ] && [ "$3" = printf ] && [ "$4" = '%s|' ]
	[ "$5" = 'a$x$(B)$(' ] && [ "$6" = "it's${NL}${TAB}x" ] && [ -z "$7" ] && [ "$8" = '😀 é' ]
	# and runs as such
	shift 2
	run -0 "$@"
	[ "$output" = "a\$x\$(B)\$(|it's${NL}${TAB}x||😀 é|" ]
}

@test "kt-pod-plan: a pod that cannot have a plan is one line, '!' and why" {
	jq -n -c '{spec: {initContainers: [{name: "Init_1"}], containers: [{name: "main", command: ["true"]}]}}' \
		>"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr kt-pod-plan "$BATS_TEST_TMPDIR/pod.json"
	[ "$output" = '!invalid container name "Init_1": not a DNS label' ]
	[ -z "$stderr" ]
}

@test "kt-pod-plan: a file that cannot be read or is not one JSON text is an error, exit 2, nothing out" {
	run -2 --separate-stderr kt-pod-plan "$BATS_TEST_TMPDIR/none.json"
	[ -z "$output" ]
	[[ $stderr == "kt-pod-plan: cannot open '$BATS_TEST_TMPDIR/none.json': "* ]]
	printf '{"spec": ' >"$BATS_TEST_TMPDIR/cut.json"
	run -2 --separate-stderr kt-pod-plan "$BATS_TEST_TMPDIR/cut.json"
	[ -z "$output" ]
	[[ $stderr == "kt-pod-plan: $BATS_TEST_TMPDIR/cut.json:1:10: "* ]]
	: >"$BATS_TEST_TMPDIR/empty.json"
	run -2 --separate-stderr kt-pod-plan "$BATS_TEST_TMPDIR/empty.json"
	[ -z "$output" ]
	printf 'spec:\n  containers: []\n' >"$BATS_TEST_TMPDIR/pod.yaml"
	run -2 --separate-stderr kt-pod-plan "$BATS_TEST_TMPDIR/pod.yaml"
	[ -z "$output" ]
	run -2 --separate-stderr kt-pod-plan
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "kt-pod-plan: expected POD_JSON_FILE" ]
}

@test "kt-pod-plan: \$(VAR) expansion costs CPU in proportion to the text's length" {
	local n
	for n in 3000 300000; do
		python3 -c 'import json, sys; print(json.dumps({"spec": {"containers": [{"name": "c",
			"command": ["echo"], "args": ["$(A)$x$$" * int(sys.argv[1])],
			"env": [{"name": "A", "value": "a"}]}]}}))' "$n" >"$BATS_TEST_TMPDIR/pod$n.json"
		# a quadratic expansion would take hours: it is cut short, and fails
		cpu_of "$BATS_TEST_TMPDIR/cpu$n" bash -c 'ulimit -t 10; exec "$@"' - \
			kt-pod-plan "$BATS_TEST_TMPDIR/pod$n.json"
	done
	small=$(cat "$BATS_TEST_TMPDIR/cpu3000") big=$(cat "$BATS_TEST_TMPDIR/cpu300000")
	echo "CPU: $small s for 3,000 references, $big s for 300,000"
	# a hundred times the input: linear is about a hundred times the CPU
	awk -v s="$small" -v b="$big" 'BEGIN { exit !(b <= 250 * (s > 0.01 ? s : 0.01)) }'
}
