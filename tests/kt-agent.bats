#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kt-agent: the whole agent, end to end against the local API server, with real processes

load helper
load kt-agent

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

@test "kt-agent: --bootstrap-kubeconfig joins with a bootstrap token and runs the node on its own certificate" {
	# no kubeconfig but the bootstrap one: the node's own is written in its state
	env -u KUBECONFIG kt-agent --bootstrap-kubeconfig="$APISERVER_DIR/bootstrap-kubeconfig" \
		--node="$NODE" --state-dir="$STATE" --status-interval=2s --kubelet-port=0 \
		>"$BATS_TEST_TMPDIR/agent.out" 2>"$BATS_TEST_TMPDIR/agent.err" 3>&- &
	AGENT_PID=$!
	node_ready
	lease_made
	# a certificate of the node's own name, no token, in the state directory
	run -0 openssl x509 -in "$STATE/pki/kubelet-client-current.pem" -noout -subject
	assert_output --partial "CN = system:node:$NODE"
	jq -e --arg f "$STATE/pki/kubelet-client-current.pem" \
		'[.users[].user] == [{"client-certificate": $f, "client-key": $f}]' "$STATE/kubeconfig"
	# the CSR was the bootstrapper's, everything after it the node's
	apiserver_requests POST /apis/certificates.k8s.io/v1/certificatesigningrequests | head -n 1 |
		grep -q '"user":"system:bootstrap:'
	run -0 apiserver_requests PATCH "/api/v1/nodes/$NODE/status"
	[ -n "$output" ]
	! grep -v "\"user\":\"system:node:$NODE\"" <<<"$output"
	apiserver_requests PUT "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$NODE" |
		grep -q "\"user\":\"system:node:$NODE\"" ||
		apiserver_requests POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases |
		grep -q "\"user\":\"system:node:$NODE\""
	# and node-bootstrap stays to renew it
	tr '\0' ' ' <"/proc/$(cat "$STATE/node-bootstrap.pid")/cmdline" | grep -q -- "node-bootstrap .*--rotate"
}

@test "kt-agent: --bootstrap-kubeconfig against a server signing for 30s (--cert-lifetime): renewed in time, the agent's writes go on past the first certificate's end" {
	env -u KUBECONFIG kt-agent --bootstrap-kubeconfig="$APISERVER_DIR/bootstrap-kubeconfig" \
		--node="$NODE" --state-dir="$STATE" --status-interval=2s --kubelet-port=0 \
		>"$BATS_TEST_TMPDIR/agent.out" 2>"$BATS_TEST_TMPDIR/agent.err" 3>&- &
	AGENT_PID=$!
	# node-bootstrap's lines as they are written: the first certificate, the
	# renewer taking it over, then each renewal
	exec 7< <(timeout 300 tail -n +1 -F "$STATE/node-bootstrap.out" 2>/dev/null)
	read -r -t 120 first <&7
	[ "$(jq -r .event <<<"$first")" = issued ]
	expired=$(epoch "$(jq -r .notAfter <<<"$first")")
	# renewals until one was asked for after the first certificate's end
	local line asked=0 renewed=0
	while ((asked < expired)) && read -r -t 120 line <&7; do
		[ "$(jq -r .event <<<"$line")" = renewed ] || continue
		renewed=$((renewed + 1))
		asked=$(epoch "$(apiserver_kubectl get csr "$(jq -r .csr <<<"$line")" \
			-o 'jsonpath={.metadata.creationTimestamp}')")
	done
	((renewed >= 2 && asked >= expired))
	# the agent's node status writes, each a new request, go on with the new
	# certificate past the first one's end: one answered 200 after it
	exec 8< <(timeout 120 tail -n +1 -F "$APISERVER_DIR/requests.log" 2>/dev/null)
	local past=""
	while read -r -t 60 line <&8; do
		jq -e --arg p "/api/v1/nodes/$NODE/status" --arg u "system:node:$NODE" \
			'.method == "PATCH" and .path == $p and .user == $u and .status == 200' \
			<<<"$line" >/dev/null || continue
		(($(epoch "$(jq -r .time <<<"$line")") > expired)) && { past=$line; break; }
	done
	[ -n "$past" ]
	# and no request of the node's was refused for its certificate
	! grep -F "\"user\":\"system:node:$NODE\"" "$APISERVER_DIR/requests.log" | grep -q '"status": *401'
}

@test "kt-agent: --bootstrap-kubeconfig that cannot be read, or with --context, is refused before anything starts" {
	run -2 kt-agent --bootstrap-kubeconfig="$BATS_TEST_TMPDIR/none" --node="$NODE" --state-dir="$STATE"
	assert_output --partial "cannot read the bootstrap kubeconfig"
	run -2 kt-agent --bootstrap-kubeconfig="$APISERVER_DIR/bootstrap-kubeconfig" --context=x \
		--node="$NODE" --state-dir="$STATE"
	assert_output --partial "--context and --bootstrap-kubeconfig cannot go together"
	[ ! -e "$STATE" ]
}

@test "kt-agent: a dual-stack node keeps both addresses in order, and its writes are the agent's" {
	# a provider that gives the node an IPv6 address too
	cp -r "$KT_SRCDIR/agent/provider" "$BATS_TEST_TMPDIR/provider"
	mv "$BATS_TEST_TMPDIR/provider/node-status" "$BATS_TEST_TMPDIR/provider/node-status.v4"
	printf '#!/bin/sh\n"$(dirname "$0")/node-status.v4" "$@" | jq -c %s\n' \
		"'.status.addresses |= [.[0], {type: \"InternalIP\", address: \"::1\"}] + .[1:]'" \
		>"$BATS_TEST_TMPDIR/provider/node-status"
	chmod +x "$BATS_TEST_TMPDIR/provider/node-status"
	# the node as an earlier run left it: one address, and a stale one
	kr POST /api/v1/nodes - >/dev/null <<<"{\"metadata\":{\"name\":\"$NODE\"}}"
	kr PATCH "/api/v1/nodes/$NODE/status" - >/dev/null \
		<<<'{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"},{"type":"ExternalIP","address":"198.51.100.9"}]}}'
	agent_start --provider="$BATS_TEST_TMPDIR/provider"
	wait_until 100 0.2 node_is '.status.conditions[] | select(.type == "Ready" and .status == "True")'
	wait_until 50 0.2 kr GET "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/$NODE"
	run -0 kr GET "/api/v1/nodes/$NODE"
	jq_is '[.status.addresses[] | .address]' "[\"127.0.0.1\",\"::1\",\"$NODE\"]"
	run -0 apiserver_kubectl get node "$NODE" --show-managed-fields -o json
	# the test's own writes were kube-request's; all the others the agent's
	jq_is '[.metadata.managedFields[].manager] - ["kube-request"] | unique' '["kt-agent"]'
	run -0 apiserver_kubectl get lease -n kube-node-lease "$NODE" --show-managed-fields -o json
	jq_is '[.metadata.managedFields[].manager]' '["kt-agent"]'
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
	! group_running "$pid"
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
	! group_running "$pid"
	# the node's prober was told to stop the pod's probes
	[ ! -e "$dir/probing" ] || [ ! -d "$dir" ]
	# grace 1: podworker-step stopped every probe type before the kill
	grep '"gracePeriodSeconds":1' "$STATE/steps.log" |
		grep -q '"stop-probes","types":\["liveness","readiness","startup"\]},{"action":"kill-pod"'
}

@test "kt-agent: a container that fails liveness is restarted and its restartCount grows" {
	# the exec probe runs as the container's user: it must reach the marker
	chmod o+x "$BATS_RUN_TMPDIR" "$BATS_RUN_TMPDIR/test" "$BATS_TEST_TMPDIR"
	touch "$BATS_TEST_TMPDIR/healthy"
	agent_start
	pod_create flaky
	wait_until 200 0.2 pod_is flaky '.status.phase == "Running"'
	# probes start once the container runs: no restart before the marker goes
	pod_is flaky '.status.containerStatuses[0].restartCount == 0'
	first=$(container_pid flaky main)
	rm "$BATS_TEST_TMPDIR/healthy"
	wait_until 200 0.2 pod_is flaky '.status.containerStatuses[0].restartCount >= 1'
	touch "$BATS_TEST_TMPDIR/healthy"
	second=$(container_pid flaky main)
	[ "$first" != "$second" ]
	! group_running "$first"
	# of the probe's changes only the latest is kept, for pod-status: a
	# flapping probe grows no file
	for d in "$STATE"/pods/*/; do
		[ "$(cat "$d/name")" = flaky ] && break
	done
	[ "$(wc -l <"$d/probe.main.liveness")" = 1 ]
}

# two pods, sleeper and doomed, Running; their containers' pids in $pid and $doomed
sleeper_and_doomed() {
	pod_create sleeper
	mkdir "$BATS_TEST_TMPDIR/fix"
	sed 's/"sleeper"/"doomed"/' "$FIX/sleeper.json" >"$BATS_TEST_TMPDIR/fix/doomed.json"
	FIX=$BATS_TEST_TMPDIR/fix pod_create doomed
	wait_until 200 0.2 pod_is sleeper '.status.phase == "Running"'
	wait_until 200 0.2 pod_is doomed '.status.phase == "Running"'
	pid=$(container_pid sleeper main)
	doomed=$(container_pid doomed main)
}

@test "kt-agent: an API outage every loop meets: pods keep running, the agent catches up, a pod deleted meanwhile is terminated" {
	# a lease renewed every 2 s
	agent_start --lease-duration=8
	sleeper_and_doomed
	# every request the agent makes fails, and its watch is cut: only DELETE works
	for m in GET PUT PATCH POST; do
		apiserver_fault "{\"method\":\"$m\",\"status\":503,\"count\":-1}"
	done
	apiserver_curl /_drop-watches -X POST >/dev/null
	# doomed goes for good (grace 0) while the agent cannot see it
	echo '{"gracePeriodSeconds":0}' | kr DELETE /api/v1/namespaces/default/pods/doomed - >/dev/null
	# the outage lasts until the server has turned away the node four times
	# (the lease loop and the node status each read it before they write) and
	# the pod watch four times (its back-off grows meanwhile)
	wait_until 300 0.2 answered 503 GET "^/api/v1/nodes/$NODE\$" 4
	wait_until 300 0.2 answered 503 GET '^/api/v1/pods$' 4
	# the pods ran all along
	kill -0 "-$pid"
	kill -0 "-$doomed"
	apiserver_clear_faults
	apiserver_clear_requests
	gone() { ! group_running "$doomed"; }
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

@test "kt-agent: a pod deleted while the agent was killed is terminated after the restart, the others adopted" {
	agent_start
	sleeper_and_doomed
	kill -KILL "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null || true
	# gone for good (grace 0) while no agent runs: no watch can tell of it
	echo '{"gracePeriodSeconds":0}' | kr DELETE /api/v1/namespaces/default/pods/doomed - >/dev/null
	agent_start
	# the restarted watch knows the pods its store holds: its first list says
	# doomed is gone, and the agent stops it
	grep -m 1 -q 'pod doomed stopped' \
		< <(timeout 120 tail -n +1 -F "$BATS_TEST_TMPDIR/agent.err" 2>/dev/null 3>&-)
	! group_running "$doomed"
	[ "$(container_pid sleeper main)" = "$pid" ]
	kill -0 "-$pid"
	! grep -q 'sleeper terminating\|sleeper started' "$BATS_TEST_TMPDIR/agent.err"
}

@test "kt-agent: a status patch the server has not answered when the agent is killed is sent again after a restart" {
	# the first patch of the pod's status is refused, the next ones held unanswered
	apiserver_fault '[{"method":"PATCH","path":"/pods/sleeper/status$","status":503,"count":1},
		{"method":"PATCH","path":"/pods/sleeper/status$","hang":true,"count":-1}]'
	agent_start
	pod_create sleeper
	# the refused patch is in the server's log (a blocking read of it, no poll)
	exec 7< <(timeout 120 tail -n +1 -F "$APISERVER_DIR/requests.log" 2>/dev/null)
	grep -m 1 -q '"path":"/api/v1/namespaces/default/pods/sleeper/status"' <&7
	exec 7<&-
	kill -KILL "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null || true
	pod_is sleeper '.status.phase == "Pending"'
	old=$(cat "$STATE/pod-status.pid")
	apiserver_clear_faults
	agent_start
	kube-wait --kubeconfig="$KUBECONFIG_FILE" --timeout=2m pod/sleeper \
		--for=jsonpath='{.status.phase}'=Running >/dev/null
	# the old run's status sender was stopped by the new one (gone, or a zombie
	# nobody reaps in a container without an init)
	[ "$(cat "$STATE/pod-status.pid")" != "$old" ]
	[ ! -e "/proc/$old" ] || [ "$(cut -d ' ' -f 3 "/proc/$old/stat")" = Z ]
}

@test "kt-agent: a pod's final delete the server had not answered when the agent was killed is sent after a restart" {
	agent_start
	pod_create sleeper
	kube-wait --kubeconfig="$KUBECONFIG_FILE" --timeout=2m pod/sleeper \
		--for=jsonpath='{.status.phase}'=Running >/dev/null
	pid=$(container_pid sleeper main)
	kr DELETE /api/v1/namespaces/default/pods/sleeper >/dev/null
	# from now on the agent's delete of the pod: refused once, then held unanswered
	apiserver_fault '[{"method":"DELETE","path":"/pods/sleeper$","status":503,"count":1},
		{"method":"DELETE","path":"/pods/sleeper$","hang":true,"count":-1}]'
	exec 7< <(timeout 120 tail -n +1 -F "$APISERVER_DIR/requests.log" 2>/dev/null)
	grep -m 1 -q '"method":"DELETE","path":"/api/v1/namespaces/default/pods/sleeper".*"status":503' <&7
	exec 7<&-
	# the pod's work is all done: killed, cleaned up, its final status sent
	pod_is sleeper '.status.phase == "Failed"'
	! group_running "$pid"
	kill -KILL "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null || true
	apiserver_clear_faults
	agent_start
	kube-wait --kubeconfig="$KUBECONFIG_FILE" --timeout=2m pod/sleeper --for=delete >/dev/null
	pod_gone sleeper
}

@test "kt-agent: the status sender killed: started again, and the pods' statuses go on" {
	agent_start
	pod_create sleeper
	kube-wait --kubeconfig="$KUBECONFIG_FILE" --timeout=2m pod/sleeper \
		--for=jsonpath='{.status.phase}'=Running >/dev/null
	old=$(cat "$STATE/pod-status.pid")
	kill -KILL "$old"
	mkdir "$BATS_TEST_TMPDIR/fix"
	sed 's/"sleeper"/"second"/' "$FIX/sleeper.json" >"$BATS_TEST_TMPDIR/fix/second.json"
	FIX=$BATS_TEST_TMPDIR/fix pod_create second
	# the second pod's status can only reach the server through a new sender
	kube-wait --kubeconfig="$KUBECONFIG_FILE" --timeout=2m pod/second \
		--for=jsonpath='{.status.phase}'=Running >/dev/null
	[ "$(cat "$STATE/pod-status.pid")" != "$old" ]
	grep -q 'the status sender ended; starting it again' "$STATE/status.err"
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
	node_shut_down
	grep -q "node $NODE Ready=False" "$BATS_TEST_TMPDIR/agent.err"
	# the status stream was started once, never restarted
	! grep -q 'starting it again' "$BATS_TEST_TMPDIR/agent.err"
	! group_running "$pid"
	pod_is sleeper '.status.phase == "Failed" and .status.reason == "Terminated"'
	pod_is sleeper '.status.message == "Pod was terminated in response to imminent node shutdown."'
	pod_is sleeper '.status.conditions[] | select(.type == "DisruptionTarget" and .reason == "TerminationByKubelet")'
	! pgrep -f "node-ping.* $NODE\$"
	# podworker-step started the group and said when the shutdown was over
	grep -q "shutting down a priority group, grace 4s" "$BATS_TEST_TMPDIR/agent.err"
	grep -q '"shutdown":"done"' "$STATE/steps.log"
	! grep -q 'did not finish the node shutdown' "$BATS_TEST_TMPDIR/agent.err"
}

@test "kt-agent: SIGTERM kills the priority groups in the order podworker-step hands them out, the critical one last" {
	mkdir "$BATS_TEST_TMPDIR/fix"
	# a regular pod that ignores SIGTERM (its kill takes the group's 4s grace) and a
	# critical one
	jq -c '.spec.terminationGracePeriodSeconds = 30 | del(.spec.containers[].livenessProbe,
		.spec.containers[].readinessProbe)' "$FIX/stubborn.json" >"$BATS_TEST_TMPDIR/fix/stubborn.json"
	jq -c '.metadata.name = "critical" | .spec.priority = 2000000000' "$FIX/sleeper.json" \
		>"$BATS_TEST_TMPDIR/fix/critical.json"
	agent_start
	FIX=$BATS_TEST_TMPDIR/fix pod_create stubborn
	FIX=$BATS_TEST_TMPDIR/fix pod_create critical
	wait_until 200 0.2 pod_is stubborn '.status.phase == "Running"'
	wait_until 200 0.2 pod_is critical '.status.phase == "Running"'
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
	AGENT_PID=""
	# the regular group first, alone; the critical one started by a later event, once
	# the regular pod's kill had completed (or its deadline had come)
	run -0 jq -c 'select((.groups // []) != []) | [.op, [.groups[].priority]]' "$STATE/steps.log"
	[ "${lines[0]}" = '["node-shutdown",[0]]' ]
	[[ "${lines[1]}" == '["complete",[2000000000]]' || "${lines[1]}" == '["tick",[2000000000]]' ]]
	[ "${#lines[@]}" = 2 ]
	run -0 grep -o 'shutting down a priority group, grace [0-9]*s\|pod [a-z]* terminating' \
		"$BATS_TEST_TMPDIR/agent.err"
	[ "$output" = "shutting down a priority group, grace 4s
pod stubborn terminating
shutting down a priority group, grace 2s
pod critical terminating" ]
	pod_is stubborn '.status.phase == "Failed" and .status.reason == "Terminated"'
	pod_is critical '.status.phase == "Failed" and .status.reason == "Terminated"'
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
	# (a line goes to the log once it has its newline, as containerd writes it)
	out=$(ls "$STATE"/pods/*/containers/main/log)
	wait_until 50 0.2 test -s "$out"
	[ "$(cri_text "$out")" = "$(printf 'h\303\251llo \360\237\230\200 "w" $x|$(GREETING)')" ]
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
	[ "${stderr_lines[0]}" = "kt-agent: --status-interval: invalid duration '5': missing or unknown unit (use ns, us, ms, s, m or h)" ]
	run -2 --separate-stderr kt-agent --node=n1 --status-interval=abc
	[ "$stderr" = "kt-agent: --status-interval: invalid duration 'abc': expected a number and a unit such as 500ms, 10s, 1m30s
Try 'kt-agent --help' for more information." ]
	run -2 --separate-stderr kt-agent --node=n1 --status-interval=0s
	[ "${stderr_lines[0]}" = "kt-agent: invalid value '0s' for --status-interval: must be more than 0" ]
	run -2 --separate-stderr kt-agent --node=n1 --provider="$BATS_TEST_TMPDIR/none"
	[ "${stderr_lines[0]}" = "kt-agent: provider '$BATS_TEST_TMPDIR/none' has no executable 'create'" ]
	run -2 --separate-stderr kt-agent --node=n1 --lease-duration=abc
	[ "${stderr_lines[0]}" = "kt-agent: invalid number 'abc'" ]
	run -2 --separate-stderr kt-agent --node=n1 extra
	[ "${stderr_lines[0]}" = "kt-agent: unexpected argument 'extra'" ]
	run -2 --separate-stderr kt-agent --node=n1 --kubelet-port=70000
	[ "${stderr_lines[0]}" = "kt-agent: invalid value '70000' for --kubelet-port: must be from 0 to 65535" ]
	run -2 --separate-stderr kt-agent --node=n1 --authorization-mode=Node
	[ "${stderr_lines[0]}" = "kt-agent: invalid value 'Node' for --authorization-mode: expected AlwaysAllow or Webhook" ]
	run -2 --separate-stderr kt-agent --node=n1 --tls-cert-file=a.crt
	[ "${stderr_lines[0]}" = "kt-agent: --tls-cert-file and --tls-private-key-file go together" ]
	[ ! -e "$STATE" ]
}

@test "kt-agent: --status-interval takes the tools' durations: 1m30s is 90 one-second ticks" {
	agent_start --status-interval=1m30s
	kube-wait --kubeconfig="$KUBECONFIG_FILE" --timeout=2m "node/$NODE" --for=condition=Ready >/dev/null
	# what the agent counts, as it said it when it started
	grep -qx "kt-agent: registering node $NODE, its status every 90s" "$BATS_TEST_TMPDIR/agent.err"
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

@test "kt-agent: the node is tainted NoSchedule; a pod runs as another user, away from the agent's token and state" {
	[ "$(id -u)" = 0 ] || skip "the agent runs pods as another user only as root"
	# a token as a service account's: only the file's mode keeps it
	chmod 755 "$BATS_TEST_TMPDIR"
	mkdir -m 755 "$BATS_TEST_TMPDIR/sa"
	echo secret-token >"$BATS_TEST_TMPDIR/sa/token"
	chmod 600 "$BATS_TEST_TMPDIR/sa/token"
	agent_start
	wait_until 100 0.2 node_is '.status.conditions[] | select(.type == "Ready")'
	node_is '.spec.taints == [{key: "kubelet-tools.io/provider", value: "builtin", effect: "NoSchedule"}]'
	jq -n -c --arg node "$NODE" --arg t "$BATS_TEST_TMPDIR/sa/token" --arg s "$STATE" '
		{apiVersion: "v1", kind: "Pod", metadata: {name: "nosy", namespace: "default"},
		 spec: {nodeName: $node, restartPolicy: "Never",
			tolerations: [{key: "kubelet-tools.io/provider", operator: "Exists", effect: "NoSchedule"}],
			containers: [{name: "c", image: "sh", command: ["sh", "-c",
				"id -u; id -g; pwd; cat \"$1\" || echo no-token; ls \"$2\" || echo no-state; env",
				"sh", $t, $s]}]}}' >"$BATS_TEST_TMPDIR/nosy.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/nosy.json" >/dev/null
	wait_until 200 0.2 pod_is nosy '.status.phase == "Succeeded" or .status.phase == "Failed"'
	log=$(ls "$STATE"/pods/*/containers/c/log)
	cri_text "$log" >"$BATS_TEST_TMPDIR/nosy.out"
	run -0 cat "$BATS_TEST_TMPDIR/nosy.out"
	[ "${lines[0]}" = 65534 ] && [ "${lines[1]}" = 65534 ] && [ "${lines[2]}" = / ]
	grep -qx no-token "$BATS_TEST_TMPDIR/nosy.out" && grep -qx no-state "$BATS_TEST_TMPDIR/nosy.out"
	! grep -q secret-token "$log"
	! grep -q "$STATE" <(grep -v "^ls: " "$BATS_TEST_TMPDIR/nosy.out")
	# a runAsUser of the pod's is honoured, and uid 0 never
	jq -c '.metadata.name = "nosy2" | .spec.securityContext = {runAsUser: 4242, runAsGroup: 4343}' \
		"$BATS_TEST_TMPDIR/nosy.json" >"$BATS_TEST_TMPDIR/nosy2.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/nosy2.json" >/dev/null
	wait_until 200 0.2 pod_is nosy2 '.status.phase == "Succeeded" or .status.phase == "Failed"'
	for d in "$STATE"/pods/*/; do
		[ "$(cat "$d/name")" = nosy2 ] && log2=$d/containers/c/log
	done
	[ "$(cri_text "$log2" | head -n 2 | tr '\n' ' ')" = "4242 4343 " ]
}

@test "kt-agent: an exec probe runs in its container: the container's user and env, not the agent's" {
	[ "$(id -u)" = 0 ] || skip "the agent runs pods as another user only as root"
	agent_start
	jq -n -c --arg node "$NODE" '
		{apiVersion: "v1", kind: "Pod", metadata: {name: "probed", namespace: "default"},
		 spec: {nodeName: $node,
			tolerations: [{key: "kubelet-tools.io/provider", operator: "Exists", effect: "NoSchedule"}],
			containers: [{name: "c", image: "sh", command: ["sleep", "600"],
				env: [{name: "GREETING", value: "hi"}],
				readinessProbe: {periodSeconds: 1, exec: {command: ["sh", "-c",
					"id -u; test \"$GREETING\" = hi && test \"$(id -u)\" = 65534"]}}}]}}' \
		>"$BATS_TEST_TMPDIR/probed.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/probed.json" >/dev/null
	wait_until 200 0.2 pod_is probed '.status.conditions[] | select(.type == "Ready") | .status == "True"'
	for d in "$STATE"/pods/*/; do
		[ "$(cat "$d/name")" = probed ] && break
	done
	jq -e '.result == "success" and .output == "65534\n"' "$d/probe.c.readiness"
}

@test "kt-agent: pod env values are in no process's argv and no file other users can read" {
	agent_start
	wait_until 100 0.2 node_is '.status.conditions[] | select(.type == "Ready")'
	jq -n -c --arg node "$NODE" '{apiVersion: "v1", kind: "Pod", metadata: {name: "env", namespace: "default"},
		spec: {nodeName: $node, containers: [{name: "c", image: "sh", command: ["sleep", "600"],
			env: [{name: "DB_PASSWORD", value: "hunter2-\($node)"}]}]}}' >"$BATS_TEST_TMPDIR/env.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/env.json" >/dev/null
	wait_until 200 0.2 pod_is env '.status.phase == "Running"'
	# the container has it, in its environment
	pid=$(container_pid env c)
	for p in $(pgrep -g "$pid"); do tr '\0' '\n' <"/proc/$p/environ"; done | grep -qx "DB_PASSWORD=hunter2-$NODE"
	run -1 pgrep -f "hunter2-$NODE"
	run -0 find "$STATE" -perm /077
	[ "$output" = "" ]
}

@test "kt-agent: the provider never signals a process group that is no longer its container's" {
	umask 077
	d=$BATS_TEST_TMPDIR/pods/uid3
	mkdir -p "$d/containers/c" "$d/containers/d"
	echo '{"metadata":{"name":"p","namespace":"default","uid":"uid3"},"spec":{"containers":[{"name":"c"},{"name":"d"}]}}' >"$d/pod.json"
	# c ended long ago, and its pid is another's now; d's pid is not its run-container
	echo 0 >"$d/containers/c/exit"
	setsid sleep infinity </dev/null >/dev/null 2>&1 &
	victim=$!
	setsid sleep infinity </dev/null >/dev/null 2>&1 &
	victim2=$!
	echo "$victim" >"$d/containers/c/pid"
	echo "$victim2" >"$d/containers/d/pid"
	"$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
	alive=0
	kill -0 "$victim" && kill -0 "$victim2" && alive=1
	kill -KILL "$victim" "$victim2"
	[ "$alive" = 1 ]
}

@test "kt-agent: work podworker-step handed out before the agent was killed, never recorded, is done after a restart" {
	pod_create sleeper
	pod=$(pod_json sleeper | jq -c .)
	uid=$(jq -r .metadata.uid <<<"$pod")
	# what the agent had done for the pod when it was killed: its files written,
	# the update sent, podworker-step's answer (sync) saved but never read
	d=$STATE/pods/$uid
	mkdir -p "$d/containers"
	echo default >"$d/ns"
	echo sleeper >"$d/name"
	date -u +%Y-%m-%dT%H:%M:%SZ >"$d/since"
	printf '%s\n' "$pod" >"$d/pod.json"
	echo - >"$d/flags"
	run -0 podworker-step --state="$STATE/podworker.state" \
		"$(jq -c '{op: "update", updateType: "create", pod: .}' <<<"$pod")"
	[ "$(jq -r .work <<<"$output")" = sync ]
	agent_start
	wait_until 200 0.2 pod_is sleeper '.status.phase == "Running"'
	[ -n "$(container_pid sleeper main)" ]
}

@test "kt-agent: steps.log is kept under its size, the one older file beside it" {
	KT_AGENT_STEPS_LOG_MAX_SIZE=2000 agent_start
	for p in a b c; do
		jq -c --arg n "$p" --arg node "$NODE" '.metadata.name = $n | .spec.nodeName = $node' \
			"$FIX/sleeper.json" >"$BATS_TEST_TMPDIR/$p.json"
		kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/$p.json" >/dev/null
	done
	wait_until 200 0.2 pod_is c '.status.phase == "Running"'
	wait_until 200 0.2 pod_is a '.status.phase == "Running"'
	# looked at with each node status (every 2 s here)
	wait_until 100 0.2 test -s "$STATE/steps.log.1"
	[ "$(wc -c <"$STATE/steps.log.1")" -ge 2000 ]
	# whole lines, each a podworker-step answer
	jq -e -s 'length > 0 and all(.[]; type == "object")' "$STATE/steps.log.1" >/dev/null
}

@test "kt-agent: a container that writes, is read and writes again keeps running and logging" {
	c=$BATS_TEST_TMPDIR/pods/uid7/containers/c
	mkdir -p "$c"
	# the second write comes only once the first is in the log: two reads of
	# the fifo for certain, and the container must not die of SIGPIPE between
	# (under a limit, so that the first read is shorter than what is asked)
	jq -r -n --arg log "$c/log" '["sh", "-c", "echo first; until grep -q first \"$1\"; do :; done; echo second", "sh", $log] | map(@sh) | join(" ")' >"$c/argv"
	KT_CONTAINER_LOG_MAX_SIZE=1000 "$KT_AGENT_LIBDIR/provider/run-container" "$c" "" host
	[ "$(cat "$c/exit")" = 0 ]
	[ "$(cri_text "$c/log")" = "first
second" ]
}

@test "kt-agent: the provider's log writer writes the end time once every writer has closed, and only then" {
	d=$BATS_TEST_TMPDIR/logger
	mkdir -p "$d"
	mkfifo "$d/out" "$d/err"
	kt-cri-logger --end-time="$d/finishedAt" "$d/log" "$d/out" "$d/err" &
	pid=$!
	: >"$d/before"
	# the logger opens stdout, then stderr: these opens return once it has each,
	# and it runs until both are closed
	{
		echo last >&5
		[ ! -e "$d/finishedAt" ]
	} 5>"$d/out" 6>"$d/err"
	wait "$pid"
	: >"$d/after"
	[ "$(cri_text "$d/log")" = last ]
	run -0 cat "$d/finishedAt"
	[[ "$output" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]]
	# between two files made before and after, by their modification times
	t=$(epoch "$output")
	[ "$t" -ge "$(stat -c %Y "$d/before")" ] && [ "$t" -le "$(stat -c %Y "$d/after")" ]
	[ ! -e "$d/finishedAt.tmp" ]
}

@test "kt-agent: a container's log is rotated as the kubelet rotates it, the newest files kept" {
	umask 077
	c=$BATS_TEST_TMPDIR/pods/uid6/containers/c
	mkdir -p "$c"
	# 6,000 lines, about 120,000 bytes of text and 360,000 of log, through a
	# 30,000-byte limit and 3 files
	printf '%s\n' "'awk' 'BEGIN { for (i = 0; i < 6000; i++) printf \"line %d %s\\n\", i, \"0123456789\" }'" >"$c/argv"
	KT_CONTAINER_LOG_MAX_SIZE=30000 KT_CONTAINER_LOG_MAX_FILES=3 \
		"$KT_AGENT_LIBDIR/provider/run-container" "$c" "" host
	[ "$(cat "$c/exit")" = 0 ]
	run -0 ls "$c"
	[ "$(grep -c '^log' <<<"$output")" = 3 ]
	for f in log log.1 log.2; do
		[ "$(wc -c <"$c/$f")" -le 30000 ]
		# a file is cut between lines, never inside one
		! grep -Ev '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z stdout F line [0-9]+ 0123456789$' "$c/$f"
	done
	# the newest lines, in order: what was dropped is the oldest
	run -0 cri_text "$c/log.2" "$c/log.1" "$c/log"
	n=${#lines[@]}
	[ "$n" -ge 1000 ] && [ "$n" -lt 6000 ]
	[ "${lines[0]}" = "line $((6000 - n)) 0123456789" ] && [ "${lines[-1]}" = "line 5999 0123456789" ]
}

@test "kt-agent: a container's stdout and stderr are kept as CRI log lines, a long line in 16 KiB pieces" {
	c=$BATS_TEST_TMPDIR/pods/uid8/containers/c
	mkdir -p "$c"
	jq -r -n '["sh", "-c", "echo out; echo err >&2; head -c 20000 /dev/zero | tr \"\\\\0\" a; echo; printf \"no newline\""] | map(@sh) | join(" ")' >"$c/argv"
	"$KT_AGENT_LIBDIR/provider/run-container" "$c" "" host
	[ "$(cat "$c/exit")" = 0 ]
	run -0 cut -d ' ' -f 2,3 "$c/log"
	[ "$output" = "stdout F
stderr F
stdout P
stdout F
stdout P" ] || [ "$output" = "stderr F
stdout F
stdout P
stdout F
stdout P" ]
	grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{9}Z stdout F out$' "$c/log"
	grep -qE '^[^ ]+ stderr F err$' "$c/log"
	# containerd's cut: 16,384 bytes, then the rest of the line
	[ "$(grep ' stdout P a' "$c/log" | cut -d ' ' -f 4 | tr -d '\n' | wc -c)" = 16384 ]
	[ "$(grep ' stdout F a' "$c/log" | cut -d ' ' -f 4 | tr -d '\n' | wc -c)" = 3616 ]
	[ "$(tail -n 1 "$c/log" | cut -d ' ' -f 2-)" = "stdout P no newline" ]
	[ "$(cri_text "$c/log" | sed -n 3p | wc -c)" = 20001 ]
}

@test "kt-agent: SIGTERM to a container's process group: what it writes as it goes is in its log" {
	c=$BATS_TEST_TMPDIR/pods/uid9/containers/c
	mkdir -p "$c"
	jq -r -n '["sh", "-c", "trap \"echo last words; exit 3\" TERM; echo ready; while :; do sleep 0.1; done"] | map(@sh) | join(" ")' >"$c/argv"
	setsid "$KT_AGENT_LIBDIR/provider/run-container" "$c" "" host </dev/null >/dev/null 2>&1 &
	pg=$!
	wait_until 100 0.1 grep -q ' F ready$' "$c/log"
	kill -TERM -- "-$pg"
	wait_until 100 0.1 test -f "$c/exit"
	[ "$(cat "$c/exit")" = 3 ]
	# (the shell may say on stderr that its sleep was terminated)
	[ "$(grep ' stdout ' "$c/log" | cri_text)" = "ready
last words" ]
}

lines_in() { # file n
	[ "$(wc -l <"$1" 2>/dev/null)" = "$2" ]
}

# provider_state: what the built-in provider's scripts run with, as the agent
# gives it: the state directory, its node, the agent's umask
provider_state() {
	umask 077
	export KT_NODE=$NODE KT_STATE_DIR=$STATE
	mkdir -p "$STATE/pods"
	echo "$NODE" >"$STATE/node"
}

# provider_pod UID NAME ARGV-JSON: a pod directory in STATE as the agent makes one,
# its one container c running ARGV
provider_pod() {
	local d=$STATE/pods/$1
	mkdir -p "$d"
	echo default >"$d/ns"
	echo "$2" >"$d/name"
	date -u +%Y-%m-%dT%H:%M:%SZ >"$d/since"
	jq -n -c --arg uid "$1" --arg name "$2" --argjson argv "$3" \
		'{metadata: {name: $name, namespace: "default", uid: $uid},
		  spec: {containers: [{name: "c", image: "x", command: $argv}]}}' >"$d/pod.json"
}

@test "kt-agent: two creates of one pod at once start its container once" {
	provider_state
	# an agent killed while the provider's create ran, and the one started
	# again, each run the pod's create
	provider_pod uid15 twice '["sleep", "61515"]'
	d=$STATE/pods/uid15
	"$KT_AGENT_LIBDIR/provider/create" "$d" &
	first=$!
	"$KT_AGENT_LIBDIR/provider/create" "$d"
	wait "$first"
	# a create returns once its containers are forked; each run-container
	# holds the create's lock until it runs, so with the lock every
	# container started is a run-container by now
	flock "$d/create.lock" true
	[ "$(pgrep -f "run-container $d/containers/c/")" = "$(cat "$d/containers/c/pid")" ]
}

@test "kt-agent: the provider's create makes the pod's plan from its pod.json alone, and later scripts keep to it" {
	provider_state
	provider_pod uid16 planned '["sh", "-c", "echo started; exec sleep 61516"]'
	d=$STATE/pods/uid16
	[ ! -e "$d/plan" ]
	run -0 --separate-stderr "$KT_AGENT_LIBDIR/provider/create" "$d"
	[ -z "$output" ] && [ -z "$stderr" ]
	# the container runs: its first line comes in its log
	exec {log}< <("$KT_AGENT_LIBDIR/provider/logs" "$d" c --follow)
	read -r line <&"$log"
	[ "$(cri_text <<<"$line")" = started ]
	# the plan is there, whole, and no temporary file beside it
	run -0 sh -c '. "$1/plan"; echo "$n_containers $c_name_1 $restart_policy"' sh "$d"
	[ "$output" = "1 c Always" ]
	[ -z "$(find "$d" -maxdepth 1 -name 'plan.*')" ]
	# pod.json is not planned again: a restart runs the plan kept
	jq -c '.spec.containers[0].command = ["sleep", "61517"]' "$d/pod.json" >"$d/pod.json.new"
	mv "$d/pod.json.new" "$d/pod.json"
	"$KT_AGENT_LIBDIR/provider/restart" "$d" c
	grep -q 'exec sleep 61516' "$d/containers/c/argv"
	! grep -q 61517 "$d/containers/c/argv"
	"$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	exec {log}<&-
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
}

@test "kt-agent: the provider's create refuses a pod whose container name is not a DNS label, on one line, and starts nothing" {
	provider_state
	provider_pod uid17 badname '["sleep", "61518"]'
	d=$STATE/pods/uid17
	jq -c '.spec.containers += [{name: "Bad_Name", image: "x", command: ["sleep", "61518"]}]' \
		"$d/pod.json" >"$d/pod.json.new"
	mv "$d/pod.json.new" "$d/pod.json"
	run -1 --separate-stderr "$KT_AGENT_LIBDIR/provider/create" "$d"
	[ -z "$output" ]
	[ "$stderr" = 'kt-agent provider: no plan for the pod: invalid container name "Bad_Name": not a DNS label' ]
	[ ! -e "$d/containers" ]
	[ -z "$(find "$d" -maxdepth 1 -name 'plan*')" ]
	run -1 pgrep -f 'sleep 61518'
	# the scripts that end a pod still end it
	run -0 --separate-stderr "$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	run -0 --separate-stderr "$KT_AGENT_LIBDIR/provider/cleanup" "$d"
}

@test "kt-agent: a restarted container's last log is log.previous, and the provider's logs prints each" {
	provider_state
	provider_pod uid10 talker '["sh", "-c", "echo instance; od -An -tx1 -N8 /dev/urandom; exec sleep 600"]'
	d=$STATE/pods/uid10
	"$KT_AGENT_LIBDIR/provider/create" "$d"
	wait_until 100 0.1 lines_in "$d/containers/c/log" 2
	first=$(cri_text "$d/containers/c/log")
	"$KT_AGENT_LIBDIR/provider/restart" "$d" c
	wait_until 100 0.1 lines_in "$d/containers/c/log" 2
	[ "$(cri_text "$d/containers/c/log.previous")" = "$first" ]
	[ "$(cri_text "$d/containers/c/log")" != "$first" ]
	run -0 "$KT_AGENT_LIBDIR/provider/logs" "$d" c --previous
	[ "$(cri_text <<<"$output")" = "$first" ]
	run -0 "$KT_AGENT_LIBDIR/provider/logs" "$d" c
	[ "$output" = "$(cat "$d/containers/c/log")" ]
	# --follow ends with the container, with what it wrote last
	"$KT_AGENT_LIBDIR/provider/logs" "$d" c --follow >"$BATS_TEST_TMPDIR/follow" &
	follower=$!
	wait_until 100 0.1 grep -q instance "$BATS_TEST_TMPDIR/follow"
	"$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	wait "$follower"
	[ "$(cat "$BATS_TEST_TMPDIR/follow")" = "$(cat "$d/containers/c/log")" ]
	run -1 "$KT_AGENT_LIBDIR/provider/logs" "$d" nosuch
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
}

# stdin_pod UID ARGV FIELDS: a pod "reader" of the built-in provider whose one
# container runs ARGV with FIELDS (its stdin settings, a jq object), created
stdin_pod() {
	provider_state
	provider_pod "$1" reader "$2"
	jq -c ".spec.containers[0] += $3" "$STATE/pods/$1/pod.json" >"$STATE/pods/$1/pod.json.new"
	mv "$STATE/pods/$1/pod.json.new" "$STATE/pods/$1/pod.json"
	"$KT_AGENT_LIBDIR/provider/create" "$STATE/pods/$1"
}

@test "kt-agent: the provider's attach passes stdin to a stdinOnce container and its output back, the session's end being its stdin's" {
	stdin_pod uid12 '["sh", "-c", "while read -r l; do echo \"got $l\"; echo \"err $l\" >&2; done; echo done"]' '{stdin: true, stdinOnce: true}'
	d=$STATE/pods/uid12
	mkfifo "$BATS_TEST_TMPDIR/in"
	exec {out}< <("$KT_AGENT_LIBDIR/provider/attach" uid12 c <"$BATS_TEST_TMPDIR/in" 2>"$BATS_TEST_TMPDIR/err")
	attach=$!
	exec {in}>"$BATS_TEST_TMPDIR/in"
	echo one >&"$in"
	read -r line <&"$out"
	[ "$line" = "got one" ]
	echo two >&"$in"
	read -r line <&"$out"
	[ "$line" = "got two" ]
	# stdinOnce: the session's end is the container's
	exec {in}>&-
	read -r line <&"$out"
	[ "$line" = done ]
	! read -r line <&"$out"
	wait "$attach"
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "err one
err two" ]
	[ "$(cat "$d/containers/c/exit")" = 0 ]
	run -126 "$KT_AGENT_LIBDIR/provider/attach" uid12 c
	[[ $output == *"container c of pod uid12 is not running"* ]]
	run -126 "$KT_AGENT_LIBDIR/provider/attach" uid12 nosuch
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
}

@test "kt-agent: the provider's attach without stdin leaves a stdin container's stdin open" {
	stdin_pod uid13 '["sh", "-c", "while read -r l; do echo \"got $l\"; done; echo done"]' '{stdin: true}'
	d=$STATE/pods/uid13
	# a session with stdin ends; the container's stdin does not (no stdinOnce)
	echo one | "$KT_AGENT_LIBDIR/provider/attach" uid13 c >"$BATS_TEST_TMPDIR/first" &
	first=$!
	mkfifo "$BATS_TEST_TMPDIR/in"
	exec {out}< <("$KT_AGENT_LIBDIR/provider/attach" uid13 c <"$BATS_TEST_TMPDIR/in")
	exec {in}>"$BATS_TEST_TMPDIR/in"
	echo two >&"$in"
	# the first session's line comes before the second's
	while read -r line <&"$out" && [ "$line" != "got two" ]; do :; done
	[ "$line" = "got two" ]
	exec {in}>&-
	# the second session without stdin sees the container's later output
	exec {out2}< <("$KT_AGENT_LIBDIR/provider/attach" uid13 c </dev/null)
	second=$!
	# a session lasts as long as the container
	echo three | "$KT_AGENT_LIBDIR/provider/attach" uid13 c >/dev/null &
	third=$!
	read -r line <&"$out2"
	[ "$line" = "got three" ]
	[ ! -f "$d/containers/c/exit" ]
	"$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	wait "$first" "$second" "$third"
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
}

@test "kt-agent: the provider's port-forward copies both ways with the pod's port: the end of stdin passed on, the pod's end ends it" {
	provider_state
	provider_pod uid14 server '["sleep", "600"]'
	d=$STATE/pods/uid14
	"$KT_AGENT_LIBDIR/provider/create" "$d"
	# a server that answers once it has read everything: the end of stdin must
	# reach it, and its close must end the copy
	exec {srv}< <(python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
data = b""
while True:
    got = c.recv(65536)
    if not got:
        break
    data += got
c.sendall(b"%d bytes: %s" % (len(data), data[:5]))
c.close()')
	read -r port <&"$srv"
	run -0 --separate-stderr "$KT_AGENT_LIBDIR/provider/port-forward" uid14 "$port" <<<"hello"
	[ "$output" = "6 bytes: hello" ]
	# a megabyte through a socket end as fds 0 and 1, as kubelet-serve gives it
	exec {srv}< <(python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
while True:
    got = c.recv(65536)
    if not got:
        break
    c.sendall(got)
c.close()')
	read -r port <&"$srv"
	run -0 python3 -c '
import socket, subprocess, sys
a, b = socket.socketpair()
p = subprocess.Popen([sys.argv[1], "uid14", sys.argv[2]], stdin=b, stdout=b)
b.close()
sent = bytes(range(256)) * 4096
a.sendall(sent)
a.shutdown(socket.SHUT_WR)
got = b""
while True:
    chunk = a.recv(65536)
    if not chunk:
        break
    got += chunk
print(p.wait(), got == sent)' "$KT_AGENT_LIBDIR/provider/port-forward" "$port"
	[ "$output" = "0 True" ]
	# nothing listens: one line, status 1
	port=$(free_port)
	run -1 --separate-stderr "$KT_AGENT_LIBDIR/provider/port-forward" uid14 "$port" </dev/null
	[ "$stderr" = "kt-port-forward: cannot connect to 127.0.0.1:$port: Connection refused" ]
	[ -z "$output" ]
	"$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	run -126 "$KT_AGENT_LIBDIR/provider/port-forward" uid14 "$port"
	run -126 "$KT_AGENT_LIBDIR/provider/port-forward" nosuch "$port"
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
}

# pod_cpu_of STATS-JSON POD: the pod's usageCoreNanoSeconds, and its container's
pod_cpu_of() {
	jq -r --arg p "$2" '.pods[] | select(.podRef.name == $p) |
		"\(.cpu.usageCoreNanoSeconds) \(.containers[0].cpu.usageCoreNanoSeconds)"' <<<"$1"
}

# burn MODE: a pod whose children burn CPU and exit, one after another, read
# through the provider's stats until its counter has risen thrice; it never falls
burn() {
	umask 077
	export KT_NODE=$NODE KT_STATE_DIR=$STATE KT_POD_CGROUP=$1
	mkdir -p "$STATE/pods"
	echo "$NODE" >"$STATE/node"
	provider_pod uid11 burner '["sh", "-c", "while :; do awk \"BEGIN { for (i = 0; i < 300000; i++) s += i }\"; done"]'
	d=$STATE/pods/uid11
	"$KT_AGENT_LIBDIR/provider/create" "$d"
	last=0 rises=0 fell=0
	rose() {
		local out pod ctr
		out=$("$KT_AGENT_LIBDIR/provider/stats" "$STATE") || return 1
		read -r pod ctr <<<"$(pod_cpu_of "$out" burner)"
		[ "$pod" != null ] && [ "$ctr" != null ] || return 1
		# never down; the pod counts at least what its container does
		[ "$pod" -ge "$last" ] && [ "$pod" -ge "$ctr" ] || { echo "fell: $last then $pod ($ctr)" >&2; fell=1; }
		[ "$pod" -gt "$last" ] && rises=$((rises + 1))
		last=$pod
		[ "$rises" -ge 3 ]
	}
	wait_until 300 0.1 rose
	[ "$fell" = 0 ]
	out=$("$KT_AGENT_LIBDIR/provider/stats" "$STATE")
	jq -e --arg n "$NODE" '.node.nodeName == $n and .node.cpu.usageCoreNanoSeconds > 0 and
		.node.memory.workingSetBytes > 0 and (.pods[0].podRef | .name == "burner" and .uid == "uid11") and
		.pods[0].containers[0].memory.workingSetBytes > 0' <<<"$out"
	run -0 kt-pod-stats --prometheus "$STATE"
	grep -qE '^pod_cpu_usage_seconds_total\{namespace="default",pod="burner"\} [0-9.e+-]+ [0-9]{13}$' <<<"$output"
	"$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
}

@test "kt-agent: a pod's CPU counter, through a cgroup of its own, rises and never falls; cleanup removes the cgroup" {
	[ "$(id -u)" = 0 ] || skip "pods have cgroups only as root"
	burn auto
	[ ! -f "$STATE/pods/uid11/cgroup" ]
}

@test "kt-agent: a pod's CPU counter through a cgroup v2 for CPU alone rises and never falls" {
	[ "$(id -u)" = 0 ] || skip "pods have cgroups only as root"
	burn v2
	[ ! -f "$STATE/pods/uid11/cgroup" ]
}

@test "kt-agent: a pod's CPU counter rises and never falls where it has no cgroup (/proc)" {
	burn none
}

@test "kt-agent: a pod's containers each join their pod's cgroup before they run" {
	[ "$(id -u)" = 0 ] || skip "pods have cgroups only as root"
	umask 077
	export KT_NODE=$NODE KT_STATE_DIR=$STATE
	mkdir -p "$STATE/pods"
	provider_pod uid12 joiner '["sh", "-c", "cat /proc/self/cgroup; exec sleep 600"]'
	d=$STATE/pods/uid12
	"$KT_AGENT_LIBDIR/provider/create" "$d"
	wait_until 100 0.1 grep -q ':' "$d/containers/c/log"
	[ -s "$d/cgroup" ]
	while read -r res v dir; do
		[ -d "$dir/c" ]
		grep -q . "$dir/c/cgroup.procs"
		# what the container saw of its own cgroup is its container's
		cri_text "$d/containers/c/log" | grep -q "kubelet-tools/$NODE/uid12/c\$"
	done <"$d/cgroup"
	cp "$d/cgroup" "$BATS_TEST_TMPDIR/cgroup"
	"$KT_AGENT_LIBDIR/provider/delete" "$d" 1
	"$KT_AGENT_LIBDIR/provider/cleanup" "$d"
	while read -r res v dir; do
		[ ! -d "$dir" ]
	done <"$BATS_TEST_TMPDIR/cgroup"
}

@test "kt-agent: where no cgroup can be made the agent says so once, and stats reads its pods from /proc" {
	KT_POD_CGROUP=none agent_start
	pod_create sleeper
	wait_until 200 0.2 pod_is sleeper '.status.phase == "Running"'
	[ "$(grep -c 'no cgroup can be made for pods here' "$BATS_TEST_TMPDIR/agent.err")" = 1 ]
	[ "$(cat "$STATE/node")" = "$NODE" ]
	! ls "$STATE"/pods/*/cgroup
	run -0 "$KT_AGENT_LIBDIR/provider/stats" "$STATE"
	jq -e --arg n "$NODE" '.node.nodeName == $n and ([.pods[] | select(.podRef.name == "sleeper" and
		.podRef.namespace == "default") | .containers[0].name] == ["main"])' <<<"$output"
}
