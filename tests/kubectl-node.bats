#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kubectl-node: kubectl logs, kubectl get --raw of the node proxy and kubectl top
# on a kt-agent node, through the local API server to the agent's kubelet-serve.
# scripts/test-old-kubectl runs it again with Debian's kubectl 1.20

load helper
load kt-agent

@test "kubectl-node: kubectl logs, logs -f, the node proxy and kubectl top reach its pods through kubelet-serve" {
	# metrics-server's rate needs two scrapes: a scrape a second
	apiserver_stop
	apiserver_start "$BATS_TEST_TMPDIR/api-metrics" --metric-resolution 1
	port=$(free_port)
	agent_start --kubelet-port="$port" --kubelet-address=127.0.0.1 \
		--client-ca-file="$APISERVER_DIR/ca.crt"
	wait_until 100 0.2 node_is ".status.daemonEndpoints.kubeletEndpoint.Port == $port"
	jq -n -c --arg node "$NODE" '
		{apiVersion: "v1", kind: "Pod", metadata: {name: "talk", namespace: "default"},
		 spec: {nodeName: $node,
			tolerations: [{key: "kubelet-tools.io/provider", operator: "Exists", effect: "NoSchedule"}],
			containers: [{name: "main", image: "sh", command: ["sh", "-c", "echo first; echo oops >&2; exec sleep 600"]},
				{name: "ticker", image: "sh", command: ["sh", "-c", "while :; do echo tick; sleep 0.2; done"]}]}}' \
		>"$BATS_TEST_TMPDIR/talk.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/talk.json" >/dev/null
	wait_until 200 0.2 pod_is talk '.status.phase == "Running"'
	wait_until 100 0.2 apiserver_kubectl logs talk -c main --tail=1
	run -0 --separate-stderr apiserver_kubectl logs talk -c main
	[ "$output" = "first
oops" ]
	run -0 --separate-stderr apiserver_kubectl logs talk -c main --tail=1
	[ "$output" = oops ]
	run -0 --separate-stderr apiserver_kubectl logs talk -c main --timestamps --limit-bytes=100
	[[ ${lines[0]} =~ ^20[0-9-]+T[0-9:.]+Z\ first$ ]]
	run -0 --separate-stderr apiserver_kubectl logs talk -c main --since=1h
	[ "${#lines[@]}" = 2 ]
	run -0 --separate-stderr apiserver_kubectl get --raw "/api/v1/nodes/$NODE/proxy/healthz"
	[ "$output" = ok ]
	run -0 --separate-stderr apiserver_kubectl get --raw "/api/v1/nodes/$NODE/proxy/pods"
	jq -e '[.items[].metadata.name] == ["talk"]' <<<"$output"
	# a follower sees lines written after it asked
	apiserver_kubectl logs -f talk -c ticker >"$BATS_TEST_TMPDIR/follow" 2>&1 &
	followed() { [ "$(grep -c '^tick$' "$BATS_TEST_TMPDIR/follow")" -ge 3 ]; }
	wait_until 100 0.2 followed
	kill %% 2>/dev/null
	# the pod's CPU and memory, as metrics-server computes them
	wait_until 100 0.2 apiserver_kubectl top pod talk --no-headers
	run -0 --separate-stderr apiserver_kubectl top pod talk --no-headers
	[[ $output =~ ^talk\ +[0-9]+m\ +[0-9]+Mi\ *$ ]]
	wait_until 100 0.2 apiserver_kubectl top node "$NODE" --no-headers
	# and node-doctor finds nothing wrong with the node, its kubelet endpoint
	# answering
	run -0 --separate-stderr node-doctor --kubeconfig="$KUBECONFIG_FILE" "$NODE"
	! grep -v '^ok ' <<<"$output"
	grep -Eq "^ok +$NODE kubelet: https://127.0.0.1:$port/healthz answers 401" <<<"$output"
}


@test "kubectl-node: kubectl logs -p shows a restarted container's last instance, without -p the running one" {
	port=$(free_port)
	agent_start --kubelet-port="$port" --kubelet-address=127.0.0.1 \
		--client-ca-file="$APISERVER_DIR/ca.crt"
	# the first instance leaves a mark, says so and ends; the next one finds the
	# mark, says so and runs on.  It runs as the pod's user: the mark's
	# directory is open to it
	chmod o+x "$BATS_RUN_TMPDIR" "$BATS_RUN_TMPDIR/test" "$BATS_TEST_TMPDIR"
	mkdir -m 1777 "$BATS_TEST_TMPDIR/marks"
	jq -n -c --arg node "$NODE" --arg mark "$BATS_TEST_TMPDIR/marks/ran-once" '
		{apiVersion: "v1", kind: "Pod", metadata: {name: "again", namespace: "default"},
		 spec: {nodeName: $node, restartPolicy: "Always",
			tolerations: [{key: "kubelet-tools.io/provider", operator: "Exists", effect: "NoSchedule"}],
			containers: [{name: "main", image: "sh", command: ["sh", "-c",
				"if [ -e \"$1\" ]; then echo second instance; exec tail -f /dev/null; fi; : >\"$1\"; echo first instance; exit 3",
				"sh", $mark]},
				{name: "steady", image: "sh", command: ["tail", "-f", "/dev/null"]}]}}' >"$BATS_TEST_TMPDIR/again.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/again.json" >/dev/null
	# the first restart has no back-off: the watch ends when the agent reports it
	kube-wait --kubeconfig="$KUBECONFIG_FILE" --timeout=60s pod/again \
		--for='jsonpath={.status.containerStatuses[0].restartCount}=1'
	# the running instance's line, as a follower is handed it
	mkfifo "$BATS_TEST_TMPDIR/follow"
	apiserver_kubectl logs -f again -c main >"$BATS_TEST_TMPDIR/follow" &
	timeout 60 grep -m1 -qx 'second instance' <"$BATS_TEST_TMPDIR/follow"
	kill %% 2>/dev/null
	run -0 --separate-stderr apiserver_kubectl logs -p again -c main
	[ "$output" = "first instance" ]
	run -0 --separate-stderr apiserver_kubectl logs --previous=true again -c main --timestamps
	[[ $output =~ ^20[0-9-]+T[0-9:.]+Z\ first\ instance$ ]]
	run -0 --separate-stderr apiserver_kubectl logs again -c main
	[ "$output" = "second instance" ]
	# a container never restarted has no previous instance: the kubelet's message
	run -1 --separate-stderr apiserver_kubectl logs -p again -c steady
	[[ $stderr == *'previous terminated container "steady" in pod "again" not found'* ]]
}
