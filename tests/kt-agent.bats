#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kt-agent: the whole agent, end to end against the local API server, with real processes

load helper

setup() {
	# a node of its own: tests of other files may run their agents beside this one
	NODE="kt-$BATS_TEST_NUMBER-$$"
	apiserver_start
	STATE="$BATS_TEST_TMPDIR/agent"
	AGENT_PID=""
}

teardown() {
	# a test that failed shows the agent's log
	[ -n "${BATS_TEST_COMPLETED:-}" ] || cat "$BATS_TEST_TMPDIR/agent.err" >&2 2>/dev/null
	[ -n "$AGENT_PID" ] && kill -KILL "$AGENT_PID" 2>/dev/null
	for pidf in "$STATE"/node-ping.pid "$STATE"/node-patch3way.pid "$STATE"/pods/*/probes.pid; do
		[ -f "$pidf" ] && kill -KILL "$(cat "$pidf")" 2>/dev/null
	done
	# the pod watch leads a process group of its own
	[ -f "$STATE/pod-source.pid" ] && kill -KILL "-$(cat "$STATE/pod-source.pid")" 2>/dev/null
	pkill -KILL -f "node-ping.* $NODE\$" 2>/dev/null
	# nothing the test started may outlive it: containers are process groups of their own
	for pidf in "$STATE"/pods/*/containers/*/pid; do
		[ -f "$pidf" ] && kill -KILL "-$(cat "$pidf")" 2>/dev/null
	done
	pkill -KILL -f "$STATE" 2>/dev/null
	stop_jobs
	apiserver_stop
	free_ports
	true
}

agent_start() { # extra kt-agent options
	kt-agent --kubeconfig="$KUBECONFIG_FILE" --node="$NODE" --state-dir="$STATE" \
		--status-interval=2s --shutdown-grace=4 --shutdown-grace-critical=2 \
		"$@" >"$BATS_TEST_TMPDIR/agent.out" 2>"$BATS_TEST_TMPDIR/agent.err" 3>&- &
	AGENT_PID=$!
}

kr() {
	kube-request --kubeconfig="$KUBECONFIG_FILE" "$@"
}

# the ports a pod's server listens on, each claimed by a directory of its own:
# tests running at the same time (bats --jobs, or another build's) never get the
# same one
PORTS=${TMPDIR:-/tmp}/kubelet-tools-test-ports

# free_port: a port for a pod's server to bind, claimed until the teardown.  It is
# below the kernel's range for port 0 (which no bind of port 0 takes meanwhile),
# claimed by no other test, and free now
free_port() {
	local p i
	mkdir -p "$PORTS"
	for ((i = 0; i < 100; i++)); do
		p=$((20000 + RANDOM % 12000))
		mkdir "$PORTS/$p" 2>/dev/null || continue
		echo "$p" >>"$BATS_TEST_TMPDIR/ports"
		if python3 -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "free_port: no free port claimed in $i tries" >&2
	return 1
}

# free_ports: the test's claims given up
free_ports() {
	local p
	[ -f "$BATS_TEST_TMPDIR/ports" ] || return 0
	while read -r p; do
		rmdir "$PORTS/$p" 2>/dev/null
	done <"$BATS_TEST_TMPDIR/ports"
}

# answered STATUS METHOD PATH-REGEX N: the server logged N requests or more of
# that method and a path matching PATH-REGEX, answered STATUS
answered() {
	[ "$(apiserver_requests | jq -c --argjson s "$1" --arg m "$2" --arg p "$3" \
		'select(.status == $s and .method == $m and (.path | test($p)))' | wc -l)" -ge "$4" ]
}

pod_create() { # fixture [port]
	sed -e "s/NODE/$NODE/" -e "s/PORT/${2:-0}/g" -e "s#MARKER#$BATS_TEST_TMPDIR/healthy#" \
		"$FIX/$1.json" >"$BATS_TEST_TMPDIR/$1.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/$1.json" >/dev/null
}

pod_json() {
	kr GET "/api/v1/namespaces/default/pods/$1" 2>/dev/null
}

# jq -e is true on no input at all: the document must be there first
json_is() { # json jq-expression
	[ -n "$1" ] && printf '%s' "$1" | jq -e "$2" >/dev/null 2>&1
}

pod_is() { # name jq-expression: true when the expression holds for the pod
	json_is "$(pod_json "$1")" "$2"
}

pod_gone() {
	! kr GET "/api/v1/namespaces/default/pods/$1" >/dev/null 2>&1
}

node_is() {
	json_is "$(kr GET "/api/v1/nodes/$NODE" 2>/dev/null)" "$1"
}

container_pid() { # pod container
	local d
	for d in "$STATE"/pods/*/; do
		[ "$(cat "$d/name" 2>/dev/null)" = "$1" ] && cat "$d/containers/$2/pid" 2>/dev/null
	done | head -n 1
}

@test "kt-agent: registers the node with capacity, addresses, nodeInfo and Ready, and keeps its lease" {
	agent_start
	wait_until 100 0.2 node_is '.status.conditions[] | select(.type == "Ready" and .status == "True")'
	run -0 kr GET "/api/v1/nodes/$NODE"
	echo "$output" | jq -e '.status.capacity.pods == "110" and .status.addresses[0].address == "127.0.0.1"'
	echo "$output" | jq -e '.status.nodeInfo.operatingSystem == "linux"'
	echo "$output" | jq -e '.metadata.annotations["virtual-kubelet.io/last-applied-node-status"] | fromjson | .conditions | length == 4'
	wait_until 50 0.2 kr GET "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$NODE"
	run -0 kr GET "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$NODE"
	echo "$output" | jq -e --arg n "$NODE" '.spec.holderIdentity == $n and .metadata.ownerReferences[0].kind == "Node"'
	# the node was registered through the three-way patch of its status
	apiserver_requests PATCH "/api/v1/nodes/$NODE/status" | head -n 1 | grep -q 'strategic-merge-patch'
}

@test "kt-agent: a pod runs as a local process and becomes Ready through its readiness probe" {
	port=$(free_port)
	agent_start
	pod_create web "$port"
	wait_until 200 0.2 pod_is web '.status.phase == "Running" and (.status.conditions[] | select(.type == "Ready") | .status == "True")'
	run -0 pod_json web
	echo "$output" | jq -e '.status.podIP == "127.0.0.1" and .status.containerStatuses[0].ready == true'
	echo "$output" | jq -e '.status.containerStatuses[0].started == true and .status.containerStatuses[0].restartCount == 0'
	echo "$output" | jq -e '.status.containerStatuses[0].state.running.startedAt != null'
	echo "$output" | jq -e '.status.conditions[] | select(.type == "ContainersReady") | .status == "True"'
	# the container really serves, with the pod's env
	curl -fsS "http://127.0.0.1:$port/" >/dev/null
	pid=$(container_pid web web)
	for p in $(pgrep -g "$pid"); do
		tr '\0' '\n' <"/proc/$p/environ"
	done | grep -qx 'GREETING=hello world'
	# status went to the status subresource, as a merge patch
	apiserver_requests PATCH /api/v1/namespaces/default/pods/web/status | grep -q 'merge-patch'
}

@test "kt-agent: a node condition added from outside survives the agent's status updates" {
	agent_start
	wait_until 100 0.2 node_is '.status.conditions[] | select(.type == "Ready")'
	echo '{"status":{"conditions":[{"type":"KernelDeadlock","status":"False","reason":"KernelHasNoDeadlock"}]}}' |
		kr PATCH "/api/v1/nodes/$NODE/status" - >/dev/null
	status_patches() {
		[ "$(apiserver_requests PATCH "/api/v1/nodes/$NODE/status" | wc -l)" -ge "$1" ]
	}
	n=$(apiserver_requests PATCH "/api/v1/nodes/$NODE/status" | wc -l)
	wait_until 100 0.2 status_patches $((n + 2))
	node_is '.status.conditions[] | select(.type == "KernelDeadlock" and .status == "False")'
	node_is '.status.conditions[] | select(.type == "Ready" and .status == "True")'
}

@test "kt-agent: deleting a pod terminates it gracefully and removes it from the API" {
	port=$(free_port)
	agent_start
	pod_create web "$port"
	wait_until 200 0.2 pod_is web '.status.phase == "Running"'
	pid=$(container_pid web web)
	kill -0 "-$pid"
	kr DELETE /api/v1/namespaces/default/pods/web >/dev/null
	pod_is web '.metadata.deletionTimestamp != null'
	wait_until 150 0.2 pod_gone web
	! kill -0 "-$pid" 2>/dev/null
	# the final status was reported before the object was deleted with grace 0
	apiserver_requests PATCH /api/v1/namespaces/default/pods/web/status | tail -n 1 | grep -q '"Failed"'
	apiserver_requests DELETE /api/v1/namespaces/default/pods/web | tail -n 1 | grep -q '"gracePeriodSeconds": *0'
}

@test "kt-agent: a pod with grace 1s that ignores SIGTERM is killed, all its probes stopped at once" {
	agent_start
	pod_create stubborn
	wait_until 200 0.2 pod_is stubborn '.status.phase == "Running" and (.status.conditions[] | select(.type == "Ready") | .status == "True")'
	pid=$(container_pid stubborn main)
	dir=$(dirname "$(dirname "$(dirname "$(ls "$STATE"/pods/*/containers/main/pid)")")")
	[ -f "$dir/probing" ]
	kr DELETE /api/v1/namespaces/default/pods/stubborn >/dev/null
	wait_until 150 0.2 pod_gone stubborn
	! kill -0 "-$pid" 2>/dev/null
	# the node's prober was told to stop the pod's probes
	[ ! -e "$dir/probing" ] || [ ! -d "$dir" ]
	# grace 1: podworker-step stopped every probe type before the kill
	grep '"gracePeriodSeconds":1' "$STATE/steps.log" |
		grep -q '"stop-probes","types":\["liveness","readiness","startup"\]},{"action":"kill-pod"'
}

@test "kt-agent: a container that fails liveness is restarted and its restartCount grows" {
	touch "$BATS_TEST_TMPDIR/healthy"
	agent_start
	pod_create flaky
	wait_until 200 0.2 pod_is flaky '.status.phase == "Running"'
	first=$(container_pid flaky main)
	rm "$BATS_TEST_TMPDIR/healthy"
	wait_until 200 0.2 pod_is flaky '.status.containerStatuses[0].restartCount >= 1'
	touch "$BATS_TEST_TMPDIR/healthy"
	second=$(container_pid flaky main)
	[ "$first" != "$second" ]
	! kill -0 "-$first" 2>/dev/null
}

@test "kt-agent: an API outage every loop meets: pods keep running, the agent catches up, a pod deleted meanwhile is terminated" {
	# a lease renewed every 2 s
	agent_start --lease-duration=8
	pod_create sleeper
	mkdir "$BATS_TEST_TMPDIR/fix"
	sed 's/"sleeper"/"doomed"/' "$FIX/sleeper.json" >"$BATS_TEST_TMPDIR/fix/doomed.json"
	FIX=$BATS_TEST_TMPDIR/fix pod_create doomed
	wait_until 200 0.2 pod_is sleeper '.status.phase == "Running"'
	wait_until 200 0.2 pod_is doomed '.status.phase == "Running"'
	pid=$(container_pid sleeper main)
	doomed=$(container_pid doomed main)
	# every request the agent makes fails, and its watch is cut: only DELETE works
	for m in GET PUT PATCH POST; do
		apiserver_fault "{\"method\":\"$m\",\"status\":503,\"count\":-1}"
	done
	apiserver_curl /_drop-watches -X POST >/dev/null
	# doomed goes for good (grace 0) while the agent cannot see it
	echo '{"gracePeriodSeconds":0}' | kr DELETE /api/v1/namespaces/default/pods/doomed - >/dev/null
	# the outage lasts until the server has turned away the lease loop, the
	# node status, and the pod watch four times (its back-off grows meanwhile)
	wait_until 300 0.2 answered 503 GET "^(/api/v1/nodes/$NODE|/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$NODE)\$" 2
	wait_until 300 0.2 answered 503 PATCH "^/api/v1/nodes/$NODE/status\$" 1
	wait_until 300 0.2 answered 503 GET '^/api/v1/pods$' 4
	# the pods ran all along
	kill -0 "-$pid"
	kill -0 "-$doomed"
	apiserver_clear_faults
	apiserver_clear_requests
	gone() { ! kill -0 "-$doomed" 2>/dev/null; }
	# eventually: the reflector's back-off after many failures is up to a minute
	wait_until 450 0.2 gone
	# nothing restarted: the same process, no restart counted
	[ "$(container_pid sleeper main)" = "$pid" ]
	kill -0 "-$pid"
	pod_is sleeper '.status.phase == "Running" and .status.containerStatuses[0].restartCount == 0'
	# a renewal the server took after the outage
	wait_until 150 0.2 answered 200 PUT "/leases/$NODE\$" 1
	node_is '.status.conditions[] | select(.type == "Ready" and .status == "True")'
}

@test "kt-agent: killed with SIGKILL and restarted, it adopts its running pods without duplicates" {
	agent_start
	pod_create sleeper
	wait_until 200 0.2 pod_is sleeper '.status.phase == "Running"'
	pid=$(container_pid sleeper main)
	kill -KILL "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null || true
	# how many housekeeping steps so far (none yet if it was killed early)
	housekeeping=$(cat "$STATE/steps.log" 2>/dev/null | grep -c '"op":"sync-known-pods"' || true)
	agent_start
	wait_until 100 0.2 grep -q 'pod sleeper adopted' "$BATS_TEST_TMPDIR/agent.err"
	# the restarted agent has listed its pods: housekeeping found nothing to kill
	housekept() { [ "$(grep -c '"op":"sync-known-pods"' "$STATE/steps.log")" -gt "$housekeeping" ]; }
	wait_until 100 0.2 housekept
	# the same process runs, not restarted; no second lease loop is left over
	[ "$(container_pid sleeper main)" = "$pid" ]
	kill -0 "-$pid"
	! grep -q 'sleeper terminating\|sleeper started' "$BATS_TEST_TMPDIR/agent.err"
	pod_is sleeper '.status.phase == "Running" and .status.containerStatuses[0].restartCount == 0'
	[ "$(pgrep -f "node-ping.* $NODE\$" | wc -l)" -eq 1 ]
}

@test "kt-agent: SIGTERM shuts the node down: pods killed and marked, then Ready=False" {
	agent_start
	pod_create sleeper
	wait_until 200 0.2 pod_is sleeper '.status.phase == "Running"'
	pid=$(container_pid sleeper main)
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
	AGENT_PID=""
	# once kt-agent has exited, its Ready=False is on the server: one look, no waiting
	run -0 kr GET "/api/v1/nodes/$NODE"
	echo "$output" | jq -e '.status.conditions[] | select(.type == "Ready") |
		.status == "False" and .reason == "KubeletNotReady"'
	grep -q "node $NODE Ready=False" "$BATS_TEST_TMPDIR/agent.err"
	# the status stream was started once, never restarted
	! grep -q 'starting it again' "$BATS_TEST_TMPDIR/agent.err"
	! kill -0 "-$pid" 2>/dev/null
	pod_is sleeper '.status.phase == "Failed" and .status.reason == "Terminated"'
	pod_is sleeper '.status.message == "Pod was terminated in response to imminent node shutdown."'
	pod_is sleeper '.status.conditions[] | select(.type == "DisruptionTarget" and .reason == "TerminationByKubelet")'
	! pgrep -f "node-ping.* $NODE\$"
}

@test "kt-agent: an emoji and a quote in an annotation, a dotted label key, \$(VAR) in a command: nothing mangled" {
	agent_start
	pod_create odd
	wait_until 200 0.2 pod_is odd '.status.phase == "Running" and .status.containerStatuses[0].ready == true'
	run -0 pod_json odd
	# what the agent patched left metadata as it was
	jq -e '.metadata.annotations == {"kubelet-tools.io/note": "caf\u00e9 \ud83d\ude00 \"quoted\" \\ back\tslash",
		"example.com/a.b": "dots"} and .metadata.labels["app.kubernetes.io/name"] == "odd.one"' <<<"$output"
	jq -e '[.status.conditions[] | select(.type == "Ready" or .type == "ContainersReady") | .status] == ["True", "True"]' <<<"$output"
	# $(GREETING) was expanded from the env, $$(GREETING) was not, bytes kept whole
	out=$(ls "$STATE"/pods/*/containers/main/out)
	wait_until 50 0.2 test -s "$out"
	[ "$(cat "$out")" = "$(printf 'h\303\251llo \360\237\230\200 "w" $x|$(GREETING)')" ]
}

@test "kt-agent: watches dropped and history compacted while pods come and go: no pod missed" {
	agent_start
	wait_until 100 0.2 node_is '.status.conditions[] | select(.type == "Ready")'
	mkdir "$BATS_TEST_TMPDIR/fix"
	for i in 1 2 3 4 5 6; do
		sed "s/\"sleeper\"/\"p$i\"/" "$FIX/sleeper.json" >"$BATS_TEST_TMPDIR/fix/p$i.json"
	done
	FIX=$BATS_TEST_TMPDIR/fix pod_create p1
	FIX=$BATS_TEST_TMPDIR/fix pod_create p2
	apiserver_curl /_drop-watches -X POST >/dev/null
	FIX=$BATS_TEST_TMPDIR/fix pod_create p3
	echo '{"gracePeriodSeconds":0}' | kr DELETE /api/v1/namespaces/default/pods/p1 - >/dev/null
	apiserver_curl /_compact -X POST >/dev/null
	apiserver_curl /_drop-watches -X POST >/dev/null
	FIX=$BATS_TEST_TMPDIR/fix pod_create p4
	FIX=$BATS_TEST_TMPDIR/fix pod_create p5
	apiserver_curl /_drop-watches -X POST >/dev/null
	kr DELETE /api/v1/namespaces/default/pods/p2 >/dev/null
	FIX=$BATS_TEST_TMPDIR/fix pod_create p6
	for p in p3 p4 p5 p6; do
		wait_until 200 0.2 pod_is "$p" '.status.phase == "Running"'
	done
	# p2 was deleted gracefully: terminated, then removed by the agent
	wait_until 200 0.2 pod_gone p2
	# p1 went with grace 0: whatever of it started is stopped
	p1_stopped() {
		local f
		for f in "$STATE"/pods/*/name; do
			[ "$(cat "$f")" = p1 ] || continue
			! kill -0 "-$(cat "$(dirname "$f")/containers/main/pid" 2>/dev/null || echo 0)" 2>/dev/null || return 1
		done
	}
	wait_until 150 0.2 p1_stopped
	# each pod was started once
	for p in p3 p4 p5 p6; do
		[ "$(grep -c "pod $p started" "$BATS_TEST_TMPDIR/agent.err")" -eq 1 ]
	done
}

@test "kt-agent: bad usage is refused with exit 2 and nothing started" {
	run -2 --separate-stderr kt-agent --state-dir="$STATE"
	[ "$stderr" = "kt-agent: missing --node=<name>
Try 'kt-agent --help' for more information." ]
	run -2 --separate-stderr kt-agent --node=Bad_Name
	[ "${stderr_lines[0]}" = "kt-agent: invalid node name 'Bad_Name': use lower case letters, digits, '-' and '.'" ]
	run -2 --separate-stderr kt-agent --node=n1 --status-interval=5
	[ "${stderr_lines[0]}" = "kt-agent: invalid duration '5': use a unit, such as 1s or 1m" ]
	run -2 --separate-stderr kt-agent --node=n1 --provider="$BATS_TEST_TMPDIR/none"
	[ "${stderr_lines[0]}" = "kt-agent: provider '$BATS_TEST_TMPDIR/none' has no executable 'create'" ]
	run -2 --separate-stderr kt-agent --node=n1 --lease-duration=abc
	[ "${stderr_lines[0]}" = "kt-agent: invalid number 'abc'" ]
	run -2 --separate-stderr kt-agent --node=n1 extra
	[ "${stderr_lines[0]}" = "kt-agent: unexpected argument 'extra'" ]
	[ ! -e "$STATE" ]
}

@test "kt-agent: the node-name rule in sh is the tools' rule" {
	local n sh c
	for n in vk-1 a 0abc node.example.com a-b.c-d "$(printf 'a%.0s' $(seq 253))" \
		'' VK-1 vk_1 -vk vk- a..b .a a. a.-b a-.b 'v k' vk/1 'VK_1:x' \
		"$(printf 'a%.0s' $(seq 254))"; do
		sh=1
		(. "$KT_AGENT_LIBDIR/lib.sh" && is_dns_subdomain "$n") && sh=0
		# node-ping checks its operands before it looks for a kubeconfig
		c=0
		KUBECONFIG=/nonexistent HOME=/nonexistent node-ping "$n" 2>/dev/null || c=$?
		case $c in
		1) c=0 ;; # valid: it went on to the missing kubeconfig
		2) c=1 ;; # refused as bad usage
		*) echo "'$n': node-ping exited $c"; false ;;
		esac
		[ "$sh" = "$c" ] || { echo "'$n': sh says $sh, node-ping says $c"; false; }
	done
}
