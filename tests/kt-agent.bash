# SPDX-License-Identifier: Apache-2.0
# kt-agent.bash: what the files that run a whole kt-agent load after helper: a node
# of each test's own, the agent started against the local API server and all it
# started gone at the end, and the API objects asked about

setup() {
	# a node of its own: tests of other files may run their agents beside this one
	NODE="kt-$BATS_TEST_NUMBER-$$"
	case $BATS_TEST_DESCRIPTION in
	*"--cert-lifetime"*) apiserver_start "" --cert-lifetime 30s ;;
	*) apiserver_start ;;
	esac
	STATE="$BATS_TEST_TMPDIR/agent"
	AGENT_PID=""
}

teardown() {
	# a test that failed shows the agent's log
	[ -n "${BATS_TEST_COMPLETED:-}" ] || cat "$BATS_TEST_TMPDIR/agent.err" >&2 2>/dev/null
	[ -n "$AGENT_PID" ] && kill -KILL "$AGENT_PID" 2>/dev/null
	for pidf in "$STATE"/node-ping.pid "$STATE"/node-patch3way.pid "$STATE"/kubelet-serve.pid \
		"$STATE"/node-bootstrap.pid "$STATE"/pods/*/probes.pid; do
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
	# the pods' cgroups an agent killed before its cleanup left, once the
	# processes killed above have left them
	wait_until 50 0.1 cgroups_removed || true
	apiserver_stop
	free_ports
	true
}

# cgroups_removed: the cgroups of this test's node are gone (removed here)
cgroups_removed() {
	find /sys/fs/cgroup -depth -type d \( -path "*/kubelet-tools/$NODE" -o \
		-path "*/kubelet-tools/$NODE/*" \) -exec rmdir {} + 2>/dev/null
	! find /sys/fs/cgroup -type d -path "*/kubelet-tools/$NODE" 2>/dev/null | grep -q .
}

agent_start() { # extra kt-agent options; no kubelet API unless a test asks
	kt-agent --kubeconfig="$KUBECONFIG_FILE" --node="$NODE" --state-dir="$STATE" \
		--status-interval=2s --shutdown-grace=4 --shutdown-grace-critical=2 --kubelet-port=0 \
		"$@" >"$BATS_TEST_TMPDIR/agent.out" 2>"$BATS_TEST_TMPDIR/agent.err" 3>&- &
	AGENT_PID=$!
}

kr() {
	kube-request --kubeconfig="$KUBECONFIG_FILE" "$@"
}

# node_ready, lease_made: block on a watch until the node is Ready, its Lease
# exists (kube-wait ends on the event: nothing is polled)
node_ready() {
	kube-wait --kubeconfig="$KUBECONFIG_FILE" "node/$NODE" --for=condition=Ready --timeout=60s >/dev/null
}
lease_made() {
	kube-wait --kubeconfig="$KUBECONFIG_FILE" -n kube-node-lease "lease/$NODE" --for=create \
		--timeout=60s >/dev/null
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

# node_shut_down: the node's Ready condition is False, as the agent's graceful
# shutdown leaves it on the server
node_shut_down() {
	run -0 kr GET "/api/v1/nodes/$NODE"
	echo "$output" | jq -e '.status.conditions[] | select(.type == "Ready") |
		.status == "False" and .reason == "KubeletNotReady"'
}

node_is() {
	json_is "$(kr GET "/api/v1/nodes/$NODE" 2>/dev/null)" "$1"
}

# group_running PGID: a process of group PGID still runs; one that ended but
# its parent has not reaped yet (a zombie) does not count, as it runs nothing
group_running() {
	ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

container_pid() { # pod container
	local d
	for d in "$STATE"/pods/*/; do
		[ "$(cat "$d/name" 2>/dev/null)" = "$1" ] && cat "$d/containers/$2/pid" 2>/dev/null
	done | head -n 1
}
