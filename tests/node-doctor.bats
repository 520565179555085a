#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-doctor: a healthy node, and each trouble as the finding it is; bad input

load helper

LEASES=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases
KUBELET_PY="$BATS_TEST_DIRNAME/fixtures/node-doctor/kubelet.py"

setup() {
	NODE=vk-1
	PIDS=()
	if [[ "$BATS_TEST_DESCRIPTION" == *"(no server)"* ]]; then
		return 0
	fi
	apiserver_start
}

teardown() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	apiserver_stop
}

doctor() {
	node-doctor --kubeconfig "$KUBECONFIG_FILE" "$@"
}

kr() {
	kube-request --kubeconfig "$KUBECONFIG_FILE" "$@"
}

# kubelet_start NAME [DAYS]: a stand-in kubelet; with DAYS, HTTPS with a
# certificate valid that long, else one that never finishes a handshake;
# its port in $port
kubelet_start() {
	local d=$BATS_TEST_TMPDIR/$1 i
	mkdir -p "$d"
	if [ -n "${2:-}" ]; then
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
			-days "$2" -subj "/CN=$NODE" -keyout "$d/key.pem" -out "$d/cert.pem" \
			2>/dev/null || return 1
		"${PYTHON:-python3}" "$KUBELET_PY" "$d/port" "$d/cert.pem" "$d/key.pem" \
			</dev/null >/dev/null 2>&1 3>&- &
	else
		"${PYTHON:-python3}" "$KUBELET_PY" "$d/port" </dev/null >/dev/null 2>&1 3>&- &
	fi
	PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		[ -s "$d/port" ] && { port=$(cat "$d/port"); return 0; }
		sleep 0.05
	done
	echo "kubelet_start: no port in $d" >&2
	return 1
}

# a port nothing listens on
closed_port() {
	"${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# node_up PORT [JQ]: the node as kt-agent's provider describes it, its
# kubelet port PORT, changed by JQ, sent as kt-agent sends it (node-patch3way
# --register --send --heartbeat), and its Lease renewed once (node-ping);
# the request log emptied after
node_up() {
	"$KT_SRCDIR/agent/provider/node-status" "$NODE" |
		jq -c --argjson p "$1" ".status.daemonEndpoints.kubeletEndpoint.Port = \$p | ${2:-.}" \
			>"$BATS_TEST_TMPDIR/desired.json"
	node-patch3way --kubeconfig "$KUBECONFIG_FILE" --register --send --heartbeat \
		"$BATS_TEST_TMPDIR/desired.json" >/dev/null
	node-ping --kubeconfig "$KUBECONFIG_FILE" --once "$NODE"
	apiserver_clear_requests
}

# line CHECK: the output's line of that check (and subject)
line() {
	printf '%s\n' "${lines[@]}" | grep -E "^[a-z]+ +$NODE $1: " | head -n 1
}

@test "node-doctor: a healthy kt-agent node is ok in every finding, exit 0" {
	kubelet_start kubelet 365
	node_up "$port"
	run -0 --separate-stderr doctor "$NODE"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 11 ]
	for l in "${lines[@]}"; do
		[[ "$l" == "ok   $NODE "* ]] || fail "not ok: $l"
	done
	[[ "$(line ready)" =~ ^"ok   $NODE ready: Ready since "[0-9TZ:-]+" ("[0-9]+"s ago): KubeletReady"$ ]]
	[[ "$(line lease)" =~ ^"ok   $NODE lease: renewed by $NODE at "[0-9T:.Z-]+", "[0-9]+"s ago, within the 50s grace period"$ ]]
	[[ "$(line 'condition Ready')" =~ ^"ok   $NODE condition Ready: True (KubeletReady), written by "[a-z0-9-]+", heartbeat "[0-9]+"s ago"$ ]]
	[ "$(line addresses)" = "ok   $NODE addresses: InternalIP 127.0.0.1, Hostname $NODE" ]
	[ "$(line kubelet)" = "ok   $NODE kubelet: https://127.0.0.1:$port/healthz answers 200 (ok)" ]
	[[ "$(line certificate)" =~ ^"ok   $NODE certificate: the kubelet's certificate is valid until "[0-9T:Z-]+", 36"[45]" days from now"$ ]]
	[ "$(line clock)" = "ok   $NODE clock: this host's clock is within 2s of the API server's" ]
	# read-only: GETs of the node and its Lease, nothing else
	[ -z "$(apiserver_requests | grep -v '"method":"GET"')" ] || {
		apiserver_requests >&2
		false
	}
}

@test "node-doctor: a Lease past the grace period fails; --grace moves the line" {
	kubelet_start kubelet 365
	node_up "$port"
	old=$(date -u -d '-2 minutes' +%Y-%m-%dT%H:%M:%S.000000Z)
	kr --type=merge PATCH "$LEASES/$NODE" <<<"{\"spec\":{\"renewTime\":\"$old\"}}" >/dev/null
	run -1 --separate-stderr doctor "$NODE"
	[ -z "$stderr" ]
	[[ "$(line lease)" =~ ^"fail $NODE lease: renewed by $NODE at $old, 2m"[0-9]+"s ago: past the 50s node-monitor grace period, after which the node lifecycle controller marks the node Unknown; restart the node's heartbeat (the kubelet, or node-ping) and check that it reaches the API server"$ ]]
	run -0 --separate-stderr doctor --grace=10m "$NODE"
	[[ "$(line lease)" =~ ^"ok   $NODE lease: renewed by $NODE at $old, 2m"[0-9]+"s ago, within the 10m0s grace period"$ ]]
}

@test "node-doctor: an unreachable kubelet endpoint is a finding, not a crash" {
	port=$(closed_port)
	node_up "$port"
	run -1 --separate-stderr doctor "$NODE"
	[ -z "$stderr" ]
	[[ "$(line kubelet)" =~ ^"fail $NODE kubelet: https://127.0.0.1:$port/healthz: ".*"; check that the kubelet listens on that address and port and that no firewall stands between"$ ]]
	[ -z "$(line certificate)" ]
	# the checks after it still report
	[[ "$(line clock)" == "ok   $NODE clock: "* ]]
}

@test "node-doctor: a kubelet that never finishes its handshake fails at --timeout, and the report goes on" {
	kubelet_start hung
	node_up "$port"
	run -1 --separate-stderr doctor --timeout=1s "$NODE"
	[ -z "$stderr" ]
	[ "$(line kubelet)" = "fail $NODE kubelet: https://127.0.0.1:$port/healthz: no connection and TLS handshake within 1s; check that the kubelet is not hung and that nothing drops packets to that port" ]
	[[ "$(line clock)" == "ok   $NODE clock: "* ]]
}

@test "node-doctor: a kubelet certificate with days to live warns" {
	kubelet_start kubelet 3
	node_up "$port"
	run -0 --separate-stderr doctor "$NODE"
	[[ "$(line certificate)" =~ ^"warn $NODE certificate: the kubelet's certificate expires at "[0-9T:Z-]+", in "[^,]+", of a life of 3 days; renew the kubelet's serving certificate (rotate it, or turn on serverTLSBootstrap) and restart the kubelet"$ ]]
}

@test "node-doctor: a condition no writer refreshes names its writer and node-patch3way --remove-condition" {
	kubelet_start kubelet 365
	node_up "$port"
	# node-problem-detector added KernelDeadlock two hours ago, and went away
	old=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%SZ)
	kr PATCH "/api/v1/nodes/$NODE/status?fieldManager=node-problem-detector" <<EOF >/dev/null
{"status":{"conditions":[{"type":"KernelDeadlock","status":"False","reason":"KernelHasNoDeadlock",
 "message":"kernel has no deadlock","lastHeartbeatTime":"$old","lastTransitionTime":"$old"}]}}
EOF
	run -0 --separate-stderr doctor "$NODE"
	[ -z "$stderr" ]
	[[ "$(line 'condition KernelDeadlock')" =~ ^"warn $NODE condition KernelDeadlock: False (KernelHasNoDeadlock), written by node-problem-detector, heartbeat 2h0m"[0-9]+"s ago: no writer refreshes it any more; if its writer (node-problem-detector) is gone for good, remove it with node-patch3way --remove-condition KernelDeadlock; else restart that writer"$ ]]
	[[ "$(line 'condition Ready')" == "ok   $NODE condition Ready: "* ]]
	run -0 --separate-stderr doctor --stale=3h "$NODE"
	[[ "$(line 'condition KernelDeadlock')" == "ok   $NODE condition KernelDeadlock: "* ]]
}

@test "node-doctor: a node without addresses fails, and its kubelet is not probed" {
	node_up 10250 'del(.status.addresses)'
	run -1 --separate-stderr doctor "$NODE"
	[ -z "$stderr" ]
	[ "$(line addresses)" = "fail $NODE addresses: no addresses: neither the API server (logs, exec) nor this check can reach the kubelet; have the node's writer set status.addresses (an InternalIP and a Hostname at least)" ]
	[ "$(line kubelet)" = "warn $NODE kubelet: not probed: the node has no address to reach the kubelet on; have the node's writer set status.daemonEndpoints.kubeletEndpoint.Port and an address, so that the API server can reach the kubelet" ]
}

@test "node-doctor: the lifecycle controller's unreachable taint fails, since its timeAdded" {
	kubelet_start kubelet 365
	node_up "$port"
	added=$(date -u -d '-5 minutes' +%Y-%m-%dT%H:%M:%SZ)
	kr --type=merge PATCH "/api/v1/nodes/$NODE" <<EOF >/dev/null
{"spec":{"taints":[{"key":"node.kubernetes.io/unreachable","effect":"NoExecute","timeAdded":"$added"}]}}
EOF
	run -1 --separate-stderr doctor "$NODE"
	[[ "$(line 'taint node.kubernetes.io/unreachable')" =~ ^"fail $NODE taint node.kubernetes.io/unreachable: node.kubernetes.io/unreachable:NoExecute since $added (5m"[0-9]+"s ago): pods that do not tolerate it are evicted; fix the node's heartbeat (see the lease finding): the controller removes the taint once the node is Ready again"$ ]]
}

@test "node-doctor: -o json gives one document per node, every finding with its level and action" {
	kubelet_start kubelet 365
	node_up "$port" 'del(.status.addresses)'
	run -1 --separate-stderr doctor -o json "$NODE"
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 1 ]
	jq -e --arg n "$NODE" '.node == $n and .result == "fail" and
		(.findings | length) > 5 and
		([.findings[] | select(.level != "ok") | has("action")] | all) and
		([.findings[] | select(.level == "ok") | has("action")] | any | not) and
		(.findings[] | select(.check == "addresses") | .level == "fail")' <<<"$output"
}

@test "node-doctor: a node that does not exist is one sentence and exit 1; the others are still reported" {
	kubelet_start kubelet 365
	node_up "$port"
	run -1 --separate-stderr doctor vk-9 "$NODE"
	[ "$stderr" = "node-doctor: node 'vk-9' not found" ]
	[ "${#lines[@]}" -eq 11 ]
	[[ "${lines[0]}" == "ok   $NODE ready: "* ]]
}

@test "node-doctor: a caller who may not read the node is told the permission missing" {
	node_up 10250
	# a user the API server knows but grants nothing
	pki=$APISERVER_DIR
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=stranger \
		-keyout "$BATS_TEST_TMPDIR/s.key" -out "$BATS_TEST_TMPDIR/s.csr" 2>/dev/null
	openssl x509 -req -in "$BATS_TEST_TMPDIR/s.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
		-set_serial 7 -days 1 -out "$BATS_TEST_TMPDIR/s.crt" 2>/dev/null
	cat >"$BATS_TEST_TMPDIR/stranger.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "$APISERVER_URL", certificate-authority: "$APISERVER_DIR/ca.crt"}
users:
- name: stranger
  user: {client-certificate: "$BATS_TEST_TMPDIR/s.crt", client-key: "$BATS_TEST_TMPDIR/s.key"}
contexts:
- name: local
  context: {cluster: local, user: stranger}
current-context: local
EOF
	run -1 --separate-stderr node-doctor --kubeconfig "$BATS_TEST_TMPDIR/stranger.kubeconfig" "$NODE"
	[ -z "$output" ]
	[ "$stderr" = "node-doctor: cannot read node '$NODE': needs get on nodes (GET /api/v1/nodes/$NODE: 403 Forbidden: nodes \"$NODE\" is forbidden: User \"stranger\" cannot get resource \"nodes\" in API group \"\" at the cluster scope)" ]
}

@test "node-doctor: credentials the API server does not accept are said so, not taken for a permission" {
	run -1 --separate-stderr doctor --token=wrong "$NODE"
	[ -z "$output" ]
	[[ "$stderr" == "node-doctor: cannot read node '$NODE': the API server did not accept the credentials (GET /api/v1/nodes/$NODE: 401 Unauthorized"* ]]
}

@test "node-doctor: a Lease the caller may not read is a warning naming the permission" {
	kubelet_start kubelet 365
	node_up "$port"
	apiserver_fault "{\"method\":\"GET\",\"path\":\"/leases/$NODE\$\",\"status\":403,\"message\":\"forbidden\"}"
	run -0 --separate-stderr doctor "$NODE"
	[ "$(line lease)" = "warn $NODE lease: cannot read Lease kube-node-lease/$NODE: needs get on leases (coordination.k8s.io) in the namespace kube-node-lease; grant get on leases in kube-node-lease (a Role and a RoleBinding), or run as a user who has it" ]
}

@test "node-doctor: bad usage is exit 2 with two lines and no output (no server)" {
	run -2 --separate-stderr node-doctor
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "node-doctor: missing node name" ]
	[ "${stderr_lines[1]}" = "Try 'node-doctor --help' for more information." ]
	run -2 --separate-stderr node-doctor --grace=soon vk-1
	[ -z "$output" ]
	[[ "${stderr_lines[0]}" == "node-doctor: "*"--grace"*"soon"* ]]
	run -2 --separate-stderr node-doctor --timeout=0s vk-1
	[ "${stderr_lines[0]}" = "node-doctor: invalid value '0s' for --timeout: must be more than 0" ]
	run -2 --separate-stderr node-doctor -o yaml vk-1
	[ "${stderr_lines[0]}" = "node-doctor: invalid value 'yaml' for --output: expected text or json" ]
	run -2 --separate-stderr node-doctor 'Bad_Node'
	[ -z "$output" ]
	[[ "${stderr_lines[0]}" == "node-doctor: "*"Bad_Node"* ]]
}
