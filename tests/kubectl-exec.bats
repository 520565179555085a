#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kubectl-exec: kubectl exec, attach and port-forward on a kt-agent node, through
# the local API server's upgrade pass-through to the agent's kubelet-serve and
# the built-in provider, over each protocol kubectl speaks: WebSocket (the
# current kubectl's first choice) and SPDY/3.1 (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=
# false, and all kubectl 1.20 has).  The server's request log says which one
# each session used.  scripts/test-old-kubectl runs it again with kubectl 1.20

load helper
load kt-agent

TOLERATE='[{key: "kubelet-tools.io/provider", operator: "Exists", effect: "NoSchedule"}]'

# node_with_kubelet: the agent, serving its kubelet API, its node Ready with the
# port published
node_with_kubelet() {
	local port
	port=$(free_port)
	agent_start --kubelet-port="$port" --kubelet-address=127.0.0.1 \
		--client-ca-file="$APISERVER_DIR/ca.crt"
	kube-wait --kubeconfig="$KUBECONFIG_FILE" "node/$NODE" --timeout=60s \
		--for="jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}=$port" >/dev/null
}

# pod_run NAME CONTAINER: a pod of one container "main" on the node (CONTAINER
# its fields, a jq expression), and its wait until it runs
pod_run() {
	local c
	c=$(jq -n -c "$2")
	jq -n -c --arg node "$NODE" --arg name "$1" --argjson c "$c" --argjson t "$(jq -n -c "$TOLERATE")" '
		{apiVersion: "v1", kind: "Pod", metadata: {name: $name, namespace: "default"},
		 spec: {nodeName: $node, restartPolicy: "Never", tolerations: $t,
			containers: [{name: "main", image: "sh"} + $c]}}' >"$BATS_TEST_TMPDIR/$1.json"
	kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/$1.json" >/dev/null
	kube-wait --kubeconfig="$KUBECONFIG_FILE" "pod/$1" --for=jsonpath='{.status.phase}'=Running \
		--timeout=60s >/dev/null
}

# the protocols kubectl runs a remote command or port-forward with, first the default one:
# "websocket" (kubectl 1.30 on) or "spdy", and "spdy" again when the
# default is the WebSocket, with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false
modes() {
	if [ "$(kubectl_minor)" -ge 30 ]; then
		echo websocket spdy
	else
		echo spdy
	fi
}

# kc MODE ARGS...: kubectl with MODE's protocol for exec, attach and
# port-forward
kc() {
	local mode=$1
	shift
	if [ "$mode" = spdy ]; then
		KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false KUBECTL_PORT_FORWARD_WEBSOCKETS=false \
			apiserver_kubectl "$@"
	else
		KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true KUBECTL_PORT_FORWARD_WEBSOCKETS=true \
			apiserver_kubectl "$@"
	fi
}

# upgrades SUBRESOURCE: each upgrade the server spliced for it, one line
# "METHOD UPGRADE PROTOCOL", in order
upgrades() {
	apiserver_requests | jq -r --arg s "$1" \
		'select(.status == 101 and (.path | endswith("/" + $s))) | "\(.method) \(.upgrade) \(.protocol)"'
}

# the upgrade line a mode's session leaves: over SPDY kubectl asks for
# v5.channel.k8s.io from 1.30 on, v4 before
upgrade_of() {
	case $1 in
	websocket) echo "GET websocket v5.channel.k8s.io" ;;
	*) echo "POST SPDY/3.1 v$([ "$(kubectl_minor)" -ge 30 ] && echo 5 || echo 4).channel.k8s.io" ;;
	esac
}

@test "kubectl-exec: kubectl exec passes stdout, stderr and the exit code, over each protocol" {
	node_with_kubelet
	pod_run talk '{command: ["sleep", "600"]}'
	local mode expected=""
	for mode in $(modes); do
		run -3 --separate-stderr kc "$mode" exec talk -- sh -c 'echo out; echo err >&2; exit 3'
		[ "$output" = out ]
		[[ $stderr == err* ]]
		run -0 --separate-stderr kc "$mode" exec talk -- printf '%s|' one 'two words'
		[ "$output" = "one|two words|" ]
		expected+="$(upgrade_of "$mode")"$'\n'"$(upgrade_of "$mode")"$'\n'
	done
	run -0 upgrades exec
	[ "$output" = "${expected%$'\n'}" ]
}

@test "kubectl-exec: kubectl exec -i passes stdin and its end, over each protocol" {
	node_with_kubelet
	pod_run count '{command: ["sleep", "600"]}'
	local mode expected=""
	for mode in $(modes); do
		run -0 --separate-stderr kc "$mode" exec -i count -- wc -l < <(printf 'a\nb\n')
		[ "$output" = 2 ]
		# a megabyte in and back: flow control both ways
		head -c 1048576 /dev/urandom >"$BATS_TEST_TMPDIR/in"
		kc "$mode" exec -i count -- cat <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out"
		cmp "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
		expected+="$(upgrade_of "$mode")"$'\n'"$(upgrade_of "$mode")"$'\n'
	done
	run -0 upgrades exec
	[ "$output" = "${expected%$'\n'}" ]
}

@test "kubectl-exec: kubectl exec -t gets a terminal, over each protocol" {
	node_with_kubelet
	pod_run term '{command: ["sleep", "600"]}'
	local mode
	for mode in $(modes); do
		# kubectl makes a terminal session only when its own stdin is one: script
		# gives it one
		run -0 script -qec "$(printf '%q ' env KUBECTL_REMOTE_COMMAND_WEBSOCKETS=$([ "$mode" = spdy ] && echo false || echo true) \
			"${KT_KUBECTL:-kubectl}" --kubeconfig "$KUBECONFIG_FILE" --cache-dir "$APISERVER_DIR/kube-cache" \
			exec -ti term -- sh -c 'tty; stty size')" /dev/null </dev/null
		echo "$mode: $output" # shown when the test fails
		[[ $output =~ /dev/pts/[0-9]+ ]]
		[[ $output != *"not a tty"* ]]
	done
	run -0 upgrades exec
	[ "$(wc -l <<<"$output")" = "$(modes | wc -w)" ]
}

@test "kubectl-exec: kubectl attach -i reads a running container's output and passes its stdin, over each protocol" {
	node_with_kubelet
	local mode expected=""
	for mode in $(modes); do
		# stdinOnce: the session's end is the container's, which ends the session
		pod_run "echo-$mode" '{stdin: true, stdinOnce: true,
			command: ["sh", "-c", "while read -r l; do echo \"got $l\"; echo \"err $l\" >&2; done; echo bye"]}'
		run -0 --separate-stderr kc "$mode" attach -i "echo-$mode" -c main < <(printf 'one\ntwo\n')
		[ "$output" = "got one
got two
bye" ]
		[[ $stderr == *"err one"*"err two"* ]]
		expected+="$(upgrade_of "$mode")"$'\n'
	done
	run -0 upgrades attach
	[ "$output" = "${expected%$'\n'}" ]
}

@test "kubectl-exec: kubectl port-forward serves an HTTP request to a server in the pod, over each protocol" {
	node_with_kubelet
	local port mode local_port fwd log follower out conn
	port=$(free_port)
	mkdir "$BATS_TEST_TMPDIR/www"
	chmod o+rx "$BATS_RUN_TMPDIR" "$BATS_RUN_TMPDIR/test" "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/www"
	echo "served from the pod" >"$BATS_TEST_TMPDIR/www/page.txt"
	chmod o+r "$BATS_TEST_TMPDIR/www/page.txt"
	pod_run web "$(jq -n -c --arg p "$port" --arg d "$BATS_TEST_TMPDIR/www" \
		'{command: ["python3", "-u", "-m", "http.server", $p, "--bind", "127.0.0.1", "--directory", $d]}')"
	# the server says when it listens: its log's first line
	exec {log}< <(apiserver_kubectl logs -f web)
	follower=$!
	grep -m 1 -q '^Serving HTTP' <&"$log"
	kill "$follower"
	exec {log}<&-
	for mode in $(modes); do
		local_port=$(free_port)
		mkfifo "$BATS_TEST_TMPDIR/fwd-$mode"
		kc "$mode" port-forward pod/web "$local_port:$port" >"$BATS_TEST_TMPDIR/fwd-$mode" \
			2>"$BATS_TEST_TMPDIR/fwd-$mode.err" &
		fwd=$!
		exec {out}<"$BATS_TEST_TMPDIR/fwd-$mode"
		# kubectl listens once it says so
		grep -m 1 -q '^Forwarding from 127.0.0.1' <&"$out"
		run -0 curl -sS --fail "http://127.0.0.1:$local_port/page.txt"
		[ "$output" = "served from the pod" ]
		run -0 curl -sS --fail "http://127.0.0.1:$local_port/page.txt"
		[ "$output" = "served from the pod" ]
		# HTTP/1.0: the pod's server closes when it has answered, and the
		# client, still able to send, reads to that end
		exec {conn}<>"/dev/tcp/127.0.0.1/$local_port"
		printf 'GET /page.txt HTTP/1.0\r\n\r\n' >&"$conn"
		run -0 timeout 60 cat <&"$conn"
		exec {conn}<&-
		[ "${lines[-1]}" = "served from the pod" ]
		kill "$fwd"
		wait "$fwd" || true
		exec {out}<&-
	done
	# over the WebSocket the server carries SPDY/3.1 to the kubelet inside
	# the WebSocket's messages, as the real one tunnels it
	run -0 upgrades portforward
	[ "$output" = "$(for mode in $(modes); do
		[ "$mode" = spdy ] && echo "POST SPDY/3.1 portforward.k8s.io" ||
			echo "GET websocket SPDY/3.1+portforward.k8s.io"
	done)" ]
	run -0 apiserver_requests GET /api/v1/namespaces/default/pods/web/portforward
	jq -e -s 'map(select(.status == 101) | .kubelet) | all(. == "SPDY/3.1 portforward.k8s.io")' <<<"$output"
}
