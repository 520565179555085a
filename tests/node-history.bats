#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-history against the local API server (which keeps managedFields), read
# back with the git command line
load helper

setup() {
	apiserver_start "$BATS_TEST_TMPDIR/apiserver"
	export KUBECONFIG=$KUBECONFIG_FILE HOME=$BATS_TEST_TMPDIR
	R=$BATS_TEST_TMPDIR/repo
	git config --global user.name tester
	git config --global user.email tester@example.com
	git config --global init.defaultBranch main
}

teardown() {
	stop_jobs
	apiserver_stop
}

# as MANAGER: create node NAME, Ready True since 09:00
make_node() { # name manager
	apiserver_curl "/api/v1/nodes?fieldManager=$2" -X POST -H 'Content-Type: application/json' \
		-o /dev/null -d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\",
		\"labels\":{\"tier\":\"gold\"}},\"status\":{\"capacity\":{\"cpu\":\"4\"}}}"
	set_ready "$1" True KubeletReady 'kubelet is posting ready status' 09:00:00 "$2"
}

# as MANAGER: a merge patch to nodes/NAME or its status
patch_node() { # name manager subresource json
	apiserver_curl "/api/v1/nodes/$1$3?fieldManager=$2" -X PATCH -o /dev/null --fail-with-body \
		-H 'Content-Type: application/merge-patch+json' -d "$4"
}

# the Ready condition (with KernelDeadlock as it is) through nodes/NAME/status
set_ready() { # name status reason message hh:mm:ss manager [heartbeat]
	local conds
	conds=$(apiserver_curl "/api/v1/nodes/$1" | jq -c --arg s "$2" --arg r "$3" --arg m "$4" \
		--arg t "2026-12-01T$5Z" --arg hb "2026-12-01T${7:-$5}Z" '
		[(.status.conditions // [])[] | select(.type != "Ready")] as $rest |
		[{type:"Ready",status:$s,reason:$r,message:$m,lastHeartbeatTime:$hb,
		  lastTransitionTime:$t}] + $rest')
	patch_node "$1" "$6" /status "{\"status\":{\"conditions\":$conds}}"
}

record() {
	node-history record --once --repo="$R" "$@"
}

# a recorder in HOLDER that holds the repository's lock: its list hangs
start_holder() {
	local gets
	apiserver_fault '{"method":"GET","path":"/nodes$","hang":true,"count":1}'
	gets=$(apiserver_requests GET /api/v1/nodes | wc -l)
	node-history record --once --repo="$R" vk-1 >/dev/null 2>&1 &
	HOLDER=$!
	# it holds the lock once its list has reached the server
	listed() { [ "$(apiserver_requests GET /api/v1/nodes | wc -l)" -gt "$gets" ]; }
	wait_until 100 0.1 listed
}

@test "node-history: a first snapshot makes the repository and one commit" {
	make_node vk-1 kubelet
	prints 0 '{"node":"vk-1","author":"kubelet","summary":"vk-1: first seen"}' record vk-1
	[ "$(git -C "$R" log --format='%an <%ae>|%s')" = 'kubelet <kubelet@node-history>|vk-1: first seen' ]
	[ "$(git -C "$R" log --format=%cn)" = node-history ]
	git -C "$R" show HEAD:nodes/vk-1.yaml >"$BATS_TEST_TMPDIR/file"
	grep -qx '    tier: gold' "$BATS_TEST_TMPDIR/file"
	grep -qx '    type: Ready' "$BATS_TEST_TMPDIR/file"
	! grep -q 'resourceVersion\|managedFields\|lastHeartbeatTime' "$BATS_TEST_TMPDIR/file"
	# the work tree is up to date with HEAD
	[ -z "$(git -C "$R" status --porcelain)" ]
	cmp "$BATS_TEST_TMPDIR/file" "$R/nodes/vk-1.yaml"
	git -C "$R" fsck --strict
}

@test "node-history: Ready flapping three times is six commits, each in words" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	for flap in 1 2 3; do
		set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' "10:0$flap:00" kubelet
		run -0 --separate-stderr record vk-1
		[ "$output" = '{"node":"vk-1","author":"kubelet","summary":"vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy)"}' ]
		set_ready vk-1 True KubeletReady 'kubelet is posting ready status' "10:0$flap:30" kubelet
		run -0 --separate-stderr record vk-1
		[ "$output" = '{"node":"vk-1","author":"kubelet","summary":"vk-1: Ready False -> True (KubeletReady: kubelet is posting ready status)"}' ]
	done
	[ "$(git -C "$R" rev-list --count HEAD)" = 7 ]
	# a commit is dated when it was recorded; the transition time is in the file
	[ "$(git -C "$R" log -1 --format=%aI)" = "$(git -C "$R" log -1 --format=%cI)" ]
	[ "$(git -C "$R" log -1 --format=%as)" != 2026-12-01 ]
	# git log -p shows exactly the changed lines
	git -C "$R" log -1 -p --format= -- nodes/vk-1.yaml | grep '^[-+] ' >"$BATS_TEST_TMPDIR/diff"
	cat >"$BATS_TEST_TMPDIR/want" <<'EOF'
-  - lastTransitionTime: "2026-12-01T10:03:00Z"
-    message: PLEG is not healthy
-    reason: KubeletNotReady
-    status: "False"
+  - lastTransitionTime: "2026-12-01T10:03:30Z"
+    message: kubelet is posting ready status
+    reason: KubeletReady
+    status: "True"
EOF
	diff -u "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/diff"
	git -C "$R" fsck --strict
}

@test "node-history: a heartbeat alone makes no commit, and a rerun commits nothing twice" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	set_ready vk-1 True KubeletReady 'kubelet is posting ready status' 09:00:00 kubelet 10:00:10
	[ "$(apiserver_curl /api/v1/nodes/vk-1 | jq -r '.status.conditions[0].lastHeartbeatTime')" = 2026-12-01T10:00:10Z ]
	run -0 --separate-stderr record vk-1
	[ -z "$output" ]
	run -0 --separate-stderr record vk-1
	[ -z "$output" ]
	[ "$(git -C "$R" rev-list --count HEAD)" = 1 ]
	# --keep-heartbeats records it
	run -0 --separate-stderr record --keep-heartbeats vk-1
	[ "$(jq -r .node <<<"$output")" = vk-1 ]
	git -C "$R" show HEAD:nodes/vk-1.yaml >"$BATS_TEST_TMPDIR/file"
	grep -qx '  - lastHeartbeatTime: "2026-12-01T10:00:10Z"' "$BATS_TEST_TMPDIR/file"
	grep -q '^  resourceVersion: ' "$BATS_TEST_TMPDIR/file"
	[ "$(git -C "$R" rev-list --count HEAD)" = 2 ]
}

@test "node-history: a condition from node-problem-detector is authored by it" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	conds=$(apiserver_curl /api/v1/nodes/vk-1 | jq -c '.status.conditions + [{type:"KernelDeadlock",
		status:"True",reason:"KernelHasDeadlock",message:"task docker:7 blocked for more than 300 seconds",
		lastHeartbeatTime:"2026-12-01T11:00:00Z",lastTransitionTime:"2026-12-01T11:00:00Z"}]')
	patch_node vk-1 node-problem-detector /status "{\"status\":{\"conditions\":$conds}}"
	run -0 --separate-stderr record vk-1
	[ "$output" = '{"node":"vk-1","author":"node-problem-detector","summary":"vk-1: +condition KernelDeadlock=True (KernelHasDeadlock: task docker:7 blocked for more than 300 seconds)"}' ]
	set_ready vk-1 False KubeletNotReady 'container runtime is down' 11:00:05 kubelet
	record vk-1 >/dev/null
	[ "$(git -C "$R" log --author=node-problem-detector --format=%s)" = 'vk-1: +condition KernelDeadlock=True (KernelHasDeadlock: task docker:7 blocked for more than 300 seconds)' ]
	[ "$(git -C "$R" log -1 --format='%an|%s')" = 'kubelet|vk-1: Ready True -> False (KubeletNotReady: container runtime is down)' ]
}

@test "node-history: the tools are authors by name, and so is an operator's --field-manager" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	node-patch3way --send >/dev/null <<<'{"metadata":{"name":"vk-1","labels":{"zone":"a"}}}'
	run -0 --separate-stderr record vk-1
	jq_is .author '"node-patch3way"'
	node-patch3way --send --field-manager=oncall --remove-condition=Ready >/dev/null \
		<<<'{"metadata":{"name":"vk-1","labels":{"zone":"a"}}}'
	run -0 --separate-stderr record vk-1
	jq_is .author '"oncall"'
	[ "$(git -C "$R" log --format=%an | head -n 2)" = 'oncall
node-patch3way' ]
}

@test "node-history: taints and labels, added and removed, by the manager that changed them" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	patch_node vk-1 kubectl-edit '' '{"spec":{"taints":[{"key":"node.kubernetes.io/unreachable","effect":"NoExecute"}]}}'
	run -0 --separate-stderr record vk-1
	[ "$output" = '{"node":"vk-1","author":"kubectl-edit","summary":"vk-1: +taint node.kubernetes.io/unreachable:NoExecute"}' ]
	patch_node vk-1 kubectl-edit '' '{"spec":{"taints":null}}'
	run -0 --separate-stderr record vk-1
	[ "$output" = '{"node":"vk-1","author":"kubectl-edit","summary":"vk-1: -taint node.kubernetes.io/unreachable:NoExecute"}' ]
	patch_node vk-1 kubectl-label '' '{"metadata":{"labels":{"tier":null,"zone":"eu-1"}}}'
	run -0 --separate-stderr record vk-1
	[ "$output" = '{"node":"vk-1","author":"kubectl-label","summary":"vk-1: label tier=gold removed, label zone=eu-1 added"}' ]
	[ "$(git -C "$R" log -1 --format=%b)" = 'label tier=gold removed
label zone=eu-1 added' ]
	patch_node vk-1 kubectl-label '' '{"metadata":{"labels":{"zone":"eu-2"}}}'
	run -0 --separate-stderr record vk-1
	[ "$(jq -r .summary <<<"$output")" = 'vk-1: label zone eu-1 -> eu-2' ]
}

@test "node-history: --all records a node deleted and created again" {
	make_node vk-1 kubelet
	make_node vk-2 kubelet
	run -0 --separate-stderr record --all
	[ "${#lines[@]}" = 2 ]
	apiserver_curl /api/v1/nodes/vk-2 -X DELETE -o /dev/null
	run -0 --separate-stderr record --all
	[ "$output" = '{"node":"vk-2","author":"unknown","summary":"vk-2: deleted"}' ]
	[ ! -e "$R/nodes/vk-2.yaml" ]
	make_node vk-2 kubelet
	run -0 --separate-stderr record --all
	[ "$output" = '{"node":"vk-2","author":"kubelet","summary":"vk-2: created"}' ]
	[ "$(git -C "$R" log --format=%s -- nodes/vk-2.yaml)" = 'vk-2: created
vk-2: deleted
vk-2: first seen' ]
	git -C "$R" fsck --strict
}

@test "node-history: log prints the timeline, as text and as JSON lines" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' 10:01:00 kubelet
	record vk-1 >/dev/null
	patch_node vk-1 kubectl-label '' '{"metadata":{"labels":{"zone":"eu-1"}}}'
	record vk-1 >/dev/null
	# the time is when node-history saw the change, not the transition the
	# node wrote (a day back), which stays as data
	seen=$(TZ=UTC git -C "$R" log -1 --skip=1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
	run_ok node-history log --repo="$R" vk-1
	[ "${#lines[@]}" = 3 ]
	[ "${lines[0]:20}" = '  kubelet                   first seen' ]
	[ "${lines[1]}" = "$seen  kubelet                   Ready True -> False (KubeletNotReady: PLEG is not healthy)" ]
	[ "${lines[2]:20}" = '  kubectl-label             label zone=eu-1 added' ]
	run -0 --separate-stderr node-history log --repo="$R" -o json vk-1
	[ "${lines[1]}" = '{"author":"kubelet","from":"True","kind":"condition","lastTransitionTime":"2026-12-01T10:01:00Z","message":"PLEG is not healthy","observed":"'"$seen"'","reason":"KubeletNotReady","to":"False","type":"Ready"}' ]
	[ "$(jq -r '[.kind,.key,.to] | join(" ")' <<<"${lines[2]}")" = 'label zone eu-1' ]
	# --since goes by when node-history saw a change: a back-dated
	# transition is in the last hour
	run -0 --separate-stderr node-history log --repo="$R" --since=1h vk-1
	[ "${#lines[@]}" = 3 ]
	[ "${lines[1]:20}" = '  kubelet                   Ready True -> False (KubeletNotReady: PLEG is not healthy)' ]
	run -0 --separate-stderr node-history log --repo="$R" --since="$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" vk-1
	[ "${#lines[@]}" = 0 ]
}

@test "node-history: a field manager git cannot take as a name is recorded, named in the message" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	# '<' and '>' are valid in a field manager, and libgit2 refuses them
	patch_node vk-1 'evil%3Cx%3E' '' '{"metadata":{"labels":{"zone":"eu-1"}}}'
	run -0 --separate-stderr record vk-1
	[ "$output" = '{"node":"vk-1","author":"evil<x>","summary":"vk-1: label zone=eu-1 added"}' ]
	[ -z "$stderr" ]
	[ "$(git -C "$R" log -1 --format='%an <%ae>|%s')" = 'evil?x? <evil?x?@node-history>|vk-1: label zone=eu-1 added' ]
	git -C "$R" log -1 --format=%b | grep -qx 'Field manager: evil<x>'
	# a name of nothing but what git trims is "unknown"
	patch_node vk-1 '.%20.' '' '{"metadata":{"labels":{"zone":"eu-2"}}}'
	run -0 --separate-stderr record vk-1
	[ "$(git -C "$R" log -1 --format='%an|%s')" = 'unknown|vk-1: label zone eu-1 -> eu-2' ]
	git -C "$R" log -1 --format=%b | grep -qx 'Field manager: \. \.'
	[ "$(git -C "$R" rev-list --count HEAD)" = 3 ]
	git -C "$R" fsck --strict
}

@test "node-history: log escapes the control characters a node's writers put in its fields" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	set_ready vk-1 False KubeletNotReady $'\e]0;owned\a\e[2J\e[32mall\r\ngood\e[0m\u009b' 10:01:00 kubelet
	record vk-1 >/dev/null
	run_ok node-history log --repo="$R" vk-1
	[ "${#lines[@]}" = 2 ]
	[ "${lines[1]:20}" = '  kubelet                   Ready True -> False (KubeletNotReady: ^[]0;owned^G^[[2J^[[32mall\r\ngood^[[0m\u009b)' ]
	# JSON output carries them as they are, escaped by JSON
	run -0 --separate-stderr node-history log --repo="$R" -o json vk-1
	[ "$(jq -r .message <<<"${lines[1]}")" = $'\e]0;owned\a\e[2J\e[32mall\r\ngood\e[0m\u009b' ]
}

@test "node-history: a second recorder on one repository exits 2 naming the first" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	start_holder
	fails_with 2 "node-history: repository '$R' is in use by node-history (pid $HOLDER)" record vk-1
}

@test "node-history: bad command lines" {
	mkdir "$BATS_TEST_TMPDIR/plain"
	while IFS='|' read -r args want; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr node-history $args
		[ -z "$output" ] || { echo "stdout for: $args"; false; }
		[ "${stderr_lines[0]}" = "node-history: $want" ] ||
			{ echo "args: $args"; echo "got:  ${stderr_lines[0]}"; echo "want: node-history: $want"; false; }
	done <<EOF
|missing command: record or log
show vk-1|unknown command 'show': expected record or log
record --once|missing <node> or --all
record --once --all vk-1|--all takes no <node>
record --once --since=1h vk-1|--since applies to log only
record --once -o json vk-1|--output applies to log only
log|missing <node>
log vk-1 vk-2|log takes one <node>
log --once vk-1|--once applies to record only
log --all vk-1|--all applies to record only
log --keep-heartbeats vk-1|--keep-heartbeats applies to record only
log --since=yesterday vk-1|invalid value 'yesterday' for --since: expected an RFC 3339 time or a duration
log -o yaml vk-1|invalid value 'yaml' for --output: expected text or json
record --once VK_1|invalid node name 'VK_1': only lower-case letters, digits, '-' and '.' are allowed
record --once a..b|invalid node name 'a..b': each dot-separated part must start and end with a letter or digit
log --repo=$BATS_TEST_TMPDIR/plain vk-1|'$BATS_TEST_TMPDIR/plain' is not a git repository
EOF
}

@test "node-history: a recorder killed mid-run leaves the repository whole, and the next one goes on" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' 10:01:00 kubelet
	start_holder
	kill -KILL "$HOLDER"
	wait "$HOLDER" || true
	# the lock file still names the dead recorder; the lock itself died with it

	[ "$(cat "$R/.git/node-history.lock")" = "$HOLDER" ]
	run -0 --separate-stderr record vk-1
	[ "$output" = '{"node":"vk-1","author":"kubelet","summary":"vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy)"}' ]
	[ "$(cat "$R/.git/node-history.lock")" != "$HOLDER" ]
	[ "$(git -C "$R" rev-list --count HEAD)" = 2 ]
	git -C "$R" fsck --strict
}

# the repository's commit count
commits() {
	git -C "$R" rev-list --count HEAD 2>/dev/null || echo 0
}

# commits_reach N: the repository has N commits or more (a follower is
# "eventually": wait_until 100 0.1 gives it 10 s)
commits_reach() {
	[ "$(commits)" -ge "$1" ]
}

# watching: a watch of the nodes has reached the server since its log was cleared
watching() {
	apiserver_requests GET | grep -q '"query":"[^"]*watch=1'
}

start_follower() {
	node-history record --repo="$R" "$@" >"$BATS_TEST_TMPDIR/follow.out" 2>"$BATS_TEST_TMPDIR/follow.err" &
	HOLDER=$!
}

stop_follower() {
	local rc=0
	kill -TERM "$HOLDER"
	wait "$HOLDER" || rc=$?
	HOLDER=
	[ "$rc" = 0 ] || { echo "node-history exited $rc"; cat "$BATS_TEST_TMPDIR/follow.err"; false; }
	# warnings (a watch that failed and was retried) are fine; errors are not
	! grep '^node-history:' "$BATS_TEST_TMPDIR/follow.err"
}

@test "node-history: record follows the nodes through a watch, and stops cleanly on SIGTERM" {
	make_node vk-1 kubelet
	start_follower --all
	wait_until 100 0.1 commits_reach 1
	[ "$(commits)" = 1 ]
	set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' 10:01:00 kubelet
	wait_until 100 0.1 commits_reach 2
	[ "$(commits)" = 2 ]
	# a follower sees every state: the node created, then its Ready condition
	make_node vk-2 kubelet
	wait_until 100 0.1 commits_reach 4
	[ "$(commits)" = 4 ]
	# a heartbeat alone is no commit
	set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' 10:01:00 kubelet 10:02:00
	apiserver_curl /api/v1/nodes/vk-2 -X DELETE -o /dev/null
	wait_until 100 0.1 commits_reach 5
	[ "$(commits)" = 5 ]
	stop_follower
	[ "$(git -C "$R" log --reverse --format='%an|%s')" = 'kubelet|vk-1: first seen
kubelet|vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy)
kubelet|vk-2: first seen
kubelet|vk-2: +condition Ready=True (KubeletReady: kubelet is posting ready status)
unknown|vk-2: deleted' ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/follow.out")" = 5 ]
	git -C "$R" fsck --strict
}

# changed_unwatched DROPS: vk-1 followed and first seen; then the open watch is cut
# off, the next DROPS watches are cut too, and meanwhile vk-1 goes NotReady and is
# labelled
changed_unwatched() {
	make_node vk-1 kubelet
	start_follower vk-1
	wait_until 100 0.1 commits_reach 1
	[ "$(commits)" = 1 ]
	apiserver_fault "{\"method\":\"GET\",\"query\":\"watch=\",\"drop\":true,\"count\":$1}"
	apiserver_drop_watches
	set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' 10:01:00 kubelet
	patch_node vk-1 kubectl-label '' '{"metadata":{"labels":{"zone":"eu-1"}}}'
}

@test "node-history: a watch dropped by the server loses no change" {
	# the changes made meanwhile come through the watch that resumes
	changed_unwatched 2
	wait_until 100 0.1 commits_reach 3
	[ "$(commits)" = 3 ]
	stop_follower
	[ "$(git -C "$R" log --reverse --format='%an|%s')" = 'kubelet|vk-1: first seen
kubelet|vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy)
kubectl-label|vk-1: label zone=eu-1 added' ]
	[ "$(apiserver_requests GET | grep -c '"query":"[^"]*watch=1')" -ge 4 ]
}

@test "node-history: a watch too old to resume (410 Gone) re-lists and commits the difference" {
	# every watch is cut until the history is compacted, so that none resumes
	# before it and sees the changes one by one
	changed_unwatched 1000
	apiserver_compact
	apiserver_clear_faults
	wait_until 100 0.1 commits_reach 2
	[ "$(commits)" = 2 ]
	stop_follower
	# the re-list sees both changes at once: one commit, by the latest manager
	# of the fields that changed
	[ "$(git -C "$R" log -1 --format='%an|%s')" = 'kubectl-label|vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy), label zone=eu-1 added' ]
	[ "$(git -C "$R" rev-list --count HEAD)" = 2 ]
}

@test "node-history: a restart catches up with what changed while it was down, and commits nothing twice" {
	make_node vk-1 kubelet
	make_node vk-2 kubelet
	start_follower --all
	wait_until 100 0.1 commits_reach 2
	[ "$(commits)" = 2 ]
	stop_follower
	set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' 10:01:00 kubelet
	apiserver_curl /api/v1/nodes/vk-2 -X DELETE -o /dev/null
	start_follower --all
	wait_until 100 0.1 commits_reach 4
	[ "$(commits)" = 4 ]
	stop_follower
	# once it watches, it has listed and committed what it found
	apiserver_clear_requests
	start_follower --all
	wait_until 100 0.1 watching
	stop_follower
	[ "$(git -C "$R" rev-list --count HEAD)" = 4 ]
	[ "$(git -C "$R" log --format=%s -2 | sort)" = 'vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy)
vk-2: deleted' ]
}

@test "node-history: a run of 100 commits or more ends packed, like git gc" {
	for n in $(seq 101); do
		printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"n-%s"}}' "$n" |
			apiserver_curl '/api/v1/nodes?fieldManager=kubelet' -X POST -o /dev/null \
				-H 'Content-Type: application/json' --data-binary @-
	done
	# traced: the pack reaches the disk before a loose object is deleted
	# (LeakSanitizer cannot run under ptrace: a sanitizer build checks leaks elsewhere)
	run -0 --separate-stderr env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -y -e trace=fsync,fdatasync,unlink,unlinkat \
		-o "$BATS_TEST_TMPDIR/trace" node-history record --once --repo="$R" --all
	[ "${#lines[@]}" = 101 ]
	[ -z "$stderr" ]
	grep -n 'objects/pack/pack-[0-9a-f]*\.pack>)\|unlinkat.*objects/[0-9a-f][0-9a-f]>' \
		"$BATS_TEST_TMPDIR/trace" | head -n 1 | grep -q 'fsync('
	grep -q 'fsync([0-9]*</[^>]*/objects/pack>)' "$BATS_TEST_TMPDIR/trace"
	[ "$(git -C "$R" count-objects -v | sed -n 's/^count: //p')" = 0 ]
	[ "$(git -C "$R" count-objects -v | sed -n 's/^packs: //p')" = 1 ]
	[ "$(git -C "$R" rev-parse refs/node-history/packed)" = "$(git -C "$R" rev-parse HEAD)" ]
	git -C "$R" fsck --strict
	# a few more commits stay loose until the next hundred
	apiserver_curl /api/v1/nodes/n-1 -X DELETE -o /dev/null
	run -0 --separate-stderr record --all
	[ "$output" = '{"node":"n-1","author":"unknown","summary":"n-1: deleted"}' ]
	[ "$(git -C "$R" count-objects -v | sed -n 's/^packs: //p')" = 1 ]
	[ "$(git -C "$R" count-objects -v | sed -n 's/^count: //p')" -gt 0 ]
	[ "$(git -C "$R" log -1 --format=%s -- nodes/n-2.yaml)" = 'n-2: first seen' ]
}

@test "node-history: a follower waits for a server that is down; --once fails at once" {
	make_node vk-1 kubelet
	apiserver_fault '{"method":"GET","path":"/nodes$","status":503,"count":2}'
	start_follower vk-1
	wait_until 100 0.1 commits_reach 1
	[ "$(commits)" = 1 ]
	stop_follower
	apiserver_fault '{"method":"GET","path":"/nodes$","status":403,"message":"no","count":1}'
	run -1 --separate-stderr record vk-1
	[ -z "$output" ]
	[[ "$stderr" == "node-history: nodes: GET /api/v1/nodes?"*": 403 Forbidden: no" ]]
}

@test "node-history: a reader that went away ends a follower by SIGPIPE, quietly, as kube-request --watch" {
	make_node vk-1 kubelet
	record vk-1 >/dev/null
	# stdout is a pipe whose reading end is already closed; the commit of a
	# change is printed from within the watch, where libcurl ignores SIGPIPE
	"${PYTHON:-python3}" -c '
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
print(subprocess.run(sys.argv[1:], stdout=w, timeout=60).returncode)' \
		node-history record --repo="$R" vk-1 >"$BATS_TEST_TMPDIR/rc" 2>"$BATS_TEST_TMPDIR/err" &
	HOLDER=$!
	# the change goes out once the follower's watch has reached the server
	wait_until 100 0.1 watching
	set_ready vk-1 False KubeletNotReady 'PLEG is not healthy' 10:01:00 kubelet
	wait "$HOLDER"
	HOLDER=
	[ "$(cat "$BATS_TEST_TMPDIR/rc")" = -13 ]
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
}
