#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# hostile input and hostile servers (issue 10 rows 1-4, 8, 9, 11, 13; issue 16
# item 5): every case through a tool, each with its own server on a free port

load helper

teardown() {
	# a kt-agent a test left running, and what it started: its containers and
	# the pod watch lead process groups of their own
	if [ -n "${KT_AGENT_PID:-}" ]; then
		kill -KILL "$KT_AGENT_PID" 2>/dev/null || true
		local f
		for f in "$KT_AGENT_STATE"/pod-source.pid "$KT_AGENT_STATE"/pods/*/containers/*/pid; do
			[ ! -f "$f" ] || kill -KILL "-$(cat "$f")" 2>/dev/null || true
		done
		for f in "$KT_AGENT_STATE"/node-ping.pid "$KT_AGENT_STATE"/node-patch3way.pid; do
			[ ! -f "$f" ] || kill -KILL "$(cat "$f")" 2>/dev/null || true
		done
	fi
	stop_jobs
	[ -z "${APISERVER_PID:-}" ] || apiserver_stop
	true
}

setup() {
	T=$BATS_TEST_TMPDIR
	export HOME=$T/home
	mkdir -p "$HOME"
	unset KUBECONFIG KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	echo '{}' >"$T/empty.json"
}

# hostile_start MODE [LOG]: a hostile-server.py in the background (stop_jobs, the
# teardown, ends it); sets PORT
hostile_start() {
	"${PYTHON:-python3}" "$KT_SRCDIR/tests/hostile-server.py" "$1" "$T/port" "${2:-}" 3>&- &
	wait_until 100 0.05 test -s "$T/port"
	PORT=$(cat "$T/port")
}

# kubeconfig FILE SERVER USER-YAML: one context, current
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
current-context: c
clusters: [{name: c, cluster: {server: "$2"}}]
users: [{name: u, user: $3}]
contexts: [{name: c, context: {cluster: c, user: u}}]
EOF
}

# --------------------------------------------------------------- YAML (rows 1, 2, 9)

@test "hostile: an alias to a value a duplicate key replaced copies the anchored value" {
	printf 'a: &x [1]\na: 2\nb: *x\nc: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n' >"$T/p.yaml"
	prints 0 '{"a":2,"b":[1],"c":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}' strategic-patch apply -k ConfigMap "$T/empty.json" "$T/p.yaml"
}

@test "hostile: a kubeconfig with an alias to a replaced value loads" {
	cat >"$T/kc" <<'EOF'
apiVersion: v1
kind: Config
current-context: &x c
current-context: c
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c}}]
users: []
extra: *x
EOF
	run -1 --separate-stderr kube-request --kubeconfig "$T/kc" GET /api
	[ -z "$output" ]
	[[ "$stderr" == "kube-request: GET http://127.0.0.1:1/api: Failed to connect to 127.0.0.1 port 1: Connection refused ("* ]]
}

@test "hostile: a billion laughs stops at the alias budget with exit 2, naming --max-input" {
	{
		echo 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
		for i in 1 2 3 4 5 6 7 8; do
			p=$((i - 1))
			echo "a$i: &a$i [*a$p,*a$p,*a$p,*a$p,*a$p,*a$p,*a$p,*a$p,*a$p,*a$p]"
		done
	} >"$T/laughs.yaml"
	fails_with 2 "strategic-patch: invalid JSON document: $T/laughs.yaml:6:42: aliases expand to more than 1048576 nodes (see --max-input)" strategic-patch apply -k ConfigMap "$T/empty.json" "$T/laughs.yaml"
}

@test "hostile: the alias budget follows --max-input" {
	{
		echo 'a0: &a0 [x,x,x,x,x,x,x,x,x,x]'
		echo 'a1: &a1 [*a0,*a0,*a0,*a0,*a0,*a0,*a0,*a0,*a0,*a0]'
		echo 'a2: &a2 [*a1,*a1,*a1,*a1,*a1,*a1,*a1,*a1,*a1,*a1]'
		echo 'a3: [*a2,*a2,*a2,*a2,*a2,*a2,*a2,*a2,*a2,*a2]'
	} >"$T/l.yaml"
	run -0 --separate-stderr strategic-patch apply -k ConfigMap "$T/empty.json" "$T/l.yaml"
	[ "$(jq '.a3 | flatten | length' <<<"$output")" = 10000 ]
	fails_with 2 "strategic-patch: invalid JSON document: $T/l.yaml:3:42: aliases expand to more than 1024 nodes (see --max-input)" strategic-patch --max-input=64Ki apply -k ConfigMap "$T/empty.json" "$T/l.yaml"
}

@test "hostile: numbers past the double range never come out as inf" {
	printf 'a: +1e999\nb: .5e999\nc: -1e999\nd: 12\n' >"$T/n.yaml"
	run -0 --separate-stderr strategic-patch apply -k ConfigMap "$T/empty.json" "$T/n.yaml"
	[ "$output" = '{"a":"+1e999","b":".5e999","c":"-1e999","d":12}' ]
	jq -e . <<<"$output" >/dev/null
}

@test "hostile: nesting past 1000 levels is refused, naming the limit" {
	{ printf '%.0s[' $(seq 1001); printf '%.0s]' $(seq 1001); } >"$T/deep.json"
	fails_with 2 "strategic-patch: invalid JSON document: $T/deep.json:1:1001: document nested deeper than 1000 levels" strategic-patch apply -k ConfigMap "$T/empty.json" "$T/deep.json"
}

# ------------------------------------------------- exec plugin (rows 3 and 4)

@test "hostile: an exec plugin printing more than 1 MiB is killed and named, within the timeout" {
	cat >"$T/big.sh" <<EOF
#!/bin/sh
echo \$\$ >"$T/plugin.pid"
head -c 2097152 /dev/zero | tr '\\\\0' ' '
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}'
EOF
	chmod +x "$T/big.sh"
	kubeconfig "$T/kc" "http://127.0.0.1:1" \
		"{exec: {apiVersion: client.authentication.k8s.io/v1, command: $T/big.sh}}"
	# a plugin still running at the timeout would be named for that instead
	run -1 --separate-stderr kube-request --kubeconfig "$T/kc" --request-timeout=20s GET /api
	[ -z "$output" ]
	[ "$stderr" = "kube-request: exec plugin '$T/big.sh' printed more than 1048576 bytes (1 MiB)" ]
	! kill -0 "$(cat "$T/plugin.pid")" 2>/dev/null
}

@test "hostile: 401s from a whole fleet run the exec plugin once per stale credential, off the loop" {
	hostile_start 401
	cat >"$T/plugin.sh" <<EOF
#!/bin/sh
echo run >>"$T/runs.log"
sleep 0.2
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}'
EOF
	chmod +x "$T/plugin.sh"
	kubeconfig "$T/kc" "http://127.0.0.1:$PORT" \
		"{exec: {apiVersion: client.authentication.k8s.io/v1, command: $T/plugin.sh}}"
	seq -f 'vk-%g' 30 >"$T/nodes.txt"
	run -1 --separate-stderr node-ping --kubeconfig "$T/kc" --once --nodes-from="$T/nodes.txt"
	# before: a run per 401, one after another, 32 here with the loop
	# stopped.  Now one run per credential that got a 401: node-ping's
	# blocking lease LIST at start runs it twice (first use, then its 401),
	# and the 30 calls of the fleet (all within its 32 request slots) share
	# one refresh
	[ "$(wc -l <"$T/runs.log")" -le 3 ]
	# one cause for the 30 nodes: said once, with a count
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "${stderr_lines[0]}" == "node-ping: node/vk-"*": 401 Unauthorized (and 29 more nodes with the same error)" ]]
}

# ----------------------------------------------------- tokens (row 8)

@test "hostile: a token file with a line break inside is refused and nothing is sent" {
	hostile_start capture "$T/requests.log"
	printf 'abc\r\nX-Injected: yes\r\n' >"$T/token"
	fails_with 1 "kube-request: token file '$T/token' has a control character (a line break?) before its end; only trailing whitespace is trimmed" kube-request --server "http://127.0.0.1:$PORT" --token-file "$T/token" GET /api
	[ ! -e "$T/requests.log" ]
}

@test "hostile: a kubeconfig token with a line break is refused and nothing is sent" {
	hostile_start capture "$T/requests.log"
	kubeconfig "$T/kc" "http://127.0.0.1:$PORT" '{token: "abc\r\nX-Injected: yes"}'
	run -1 --separate-stderr kube-request --kubeconfig "$T/kc" GET /api
	[ -z "$output" ]
	[[ "$stderr" == "kube-request: "*": token has a control character (a line break?) and cannot go in a header" ]]
	[ ! -e "$T/requests.log" ]
}

@test "hostile: --token with a line break is a usage error that does not echo the token" {
	run -2 --separate-stderr kube-request --server http://127.0.0.1:1 --token "$(printf 'abc\nX-Injected: yes')" GET /api
	[ -z "$output" ]
	[ "${stderr_lines[0]}" = "kube-request: invalid --token: empty or with a control character" ]
	[[ "$stderr" != *Injected* ]]
}

@test "hostile: an exec plugin token with a line break is refused" {
	hostile_start capture "$T/requests.log"
	cat >"$T/plugin.sh" <<'EOF'
#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc\r\nX-Injected: yes"}}'
EOF
	chmod +x "$T/plugin.sh"
	kubeconfig "$T/kc" "http://127.0.0.1:$PORT" \
		"{exec: {apiVersion: client.authentication.k8s.io/v1, command: $T/plugin.sh}}"
	fails_with 1 "kube-request: exec plugin '$T/plugin.sh': status.token has a control character and cannot go in a header" kube-request --kubeconfig "$T/kc" GET /api
	[ ! -e "$T/requests.log" ]
}

# ----------------------------------------- what a server sends back (11, 13)

@test "hostile: a Status message's escape sequences never reach the terminal" {
	hostile_start escapes
	fails_with 1 "kube-request: GET /api: 404 Not Found: ?]0;pwned??[2J?[31mall good?[0m?1m  next line?" kube-request --server "http://127.0.0.1:$PORT" --token x GET /api
}

@test "hostile: a Retry-After of a day waits 60 s at most" {
	hostile_start retry-after
	kube-request -v 4 --server "http://127.0.0.1:$PORT" --token x --request-timeout=0 GET /api \
		2>"$T/log" &
	local pid=$!
	wait_until 100 0.05 grep -q '"retrying request"' "$T/log"
	kill "$pid"
	wait "$pid" || true
	grep -q '"retrying request" verb="GET" url="http://127.0.0.1:'"$PORT"'/api" attempt=2 delayMs=60000$' "$T/log"
}

# ------------------------------------------------- a server that is down (16.5)

@test "hostile: a refused connection fails a one-shot within 2 s, naming the server and the attempts" {
	run -1 --separate-stderr kube-request -v 4 --server http://127.0.0.1:1 --token x --request-timeout=0 GET /api
	# the promise is 2 s: the waits between the tries, as the tool planned them
	[ "$(retry_plan_ms)" -gt 0 ] && [ "$(retry_plan_ms)" -lt 2000 ]
	[ -z "$output" ]
	[[ "${stderr_lines[-1]}" =~ ^"kube-request: GET http://127.0.0.1:1/api: Failed to connect to 127.0.0.1 port 1: Connection refused ("[0-9]+" attempts in "[0-9.]+m?s")"$ ]]
}

@test "hostile: node-ping --once against a server that is down fails within 2 s with the attempts" {
	run -1 --separate-stderr node-ping -v 4 --server http://127.0.0.1:1 --token x --once vk-1
	[ "$(retry_plan_ms)" -gt 0 ] && [ "$(retry_plan_ms)" -lt 2000 ]
	[[ "${stderr_lines[-1]}" =~ ^"node-ping: node/vk-1: GET http://127.0.0.1:1/api/v1/nodes/vk-1: Failed to connect to 127.0.0.1 port 1: Connection refused ("[0-9]+" attempts)"$ ]]
}

@test "hostile: the example units with a dynamic user get the kubeconfig as a credential, never world-readable" {
	local unit n=0 kc cred
	for unit in "$KT_SRCDIR"/examples/*.service; do
		grep -qx 'DynamicUser=yes' "$unit" || continue
		n=$((n + 1))
		# the kubeconfig they name is the copy systemd makes for the unit's user
		kc=$(sed -n 's/.*--kubeconfig=\([^ ]*\).*/\1/p' "$unit")
		[ "$kc" = '%d/kubeconfig' ] || fail "${unit##*/}: --kubeconfig=$kc"
		grep -qx 'LoadCredential=kubeconfig:/etc/kubelet-tools/kubeconfig' "$unit" ||
			fail "${unit##*/}: no LoadCredential for the kubeconfig"
	done
	[ "$n" -ge 3 ]
	[ "$(id -u)" = 0 ] || skip "a dynamic user's uid needs root"
	# the copy, as systemd makes it: the unit's user's own, 0400; the original 0600
	# (in a directory that user can reach: the test's own is 0700)
	local d
	d=$(mktemp -d /tmp/kt-creds.XXXXXX)
	chmod 755 "$d"
	mkdir -m 755 "$d/creds"
	kubeconfig "$d/kubeconfig" "http://127.0.0.1:1" '{token: t}'
	chmod 600 "$d/kubeconfig"
	cp "$d/kubeconfig" "$d/creds/kubeconfig"
	chown 61234:61234 "$d/creds/kubeconfig"
	chmod 400 "$d/creds/kubeconfig"
	run -1 --separate-stderr setpriv --reuid=61234 --regid=61234 --clear-groups \
		node-ping --once --kubeconfig="$d/creds/kubeconfig" vk-1
	copy=$stderr
	run -1 --separate-stderr setpriv --reuid=61234 --regid=61234 --clear-groups \
		node-ping --once --kubeconfig="$d/kubeconfig" vk-1
	rm -rf "$d"
	[[ "$copy" != *"cannot read kubeconfig"* ]] && [[ "$copy" == *"Connection refused"* ]]
	[[ "$stderr" == *"cannot read kubeconfig"* ]]
}

# ------------------------------------------------------- kt-agent's main loop

# loop_cpu_us PID: the CPU time in microseconds the process itself has run (its
# children left out: a shell's own work), from the scheduler's count in
# nanoseconds; /proc/PID/stat's counts in clock ticks are too coarse for it
loop_cpu_us() {
	local ns rest
	read -r ns rest <"/proc/$1/schedstat"
	echo $((ns / 1000))
}

# big_pod NAME BYTES NODE: a pod whose annotation is BYTES long, to FILE $T/NAME.json
big_pod() {
	"$PYTHON" - "$@" >"$T/$1.json" <<'PY'
import json, sys
name, size, node = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
	"metadata": {"name": name, "namespace": "default", "annotations": {"tenant/blob": "x" * size}},
	"spec": {"nodeName": node, "terminationGracePeriodSeconds": 1,
		"tolerations": [{"key": "kubelet-tools.io/provider", "operator": "Exists", "effect": "NoSchedule"}],
		"containers": [{"name": "c", "image": "sh", "command": ["tail", "-f", "/dev/null"]}]}}))
PY
}

@test "hostile: a pod ten times larger costs kt-agent's main loop no more CPU: no pod passes through its shell" {
	[ -r /proc/self/schedstat ] || skip "no /proc/PID/schedstat here"
	apiserver_start
	local node=hostile-$$ kc=$KUBECONFIG_FILE
	KT_AGENT_STATE=$T/agent
	kt-agent --kubeconfig="$kc" --node="$node" --state-dir="$KT_AGENT_STATE" --kubelet-port=0 \
		--shutdown-grace=2 --shutdown-grace-critical=1 -q 2>"$T/agent.err" 3>&- &
	KT_AGENT_PID=$!
	kube-wait --kubeconfig="$kc" --timeout=2m "node/$node" --for=condition=Ready >/dev/null
	big_pod small 1500000 "$node"
	big_pod large 15000000 "$node"
	# the one process that reads the pod watch for the agent (kube-request,
	# which stores each pod in its file)
	local jq_pid
	jq_pid=$(pgrep -P "$(cat "$KT_AGENT_STATE/pod-source.pid")" -x kube-request)
	local c0 c1 c2 j0 j1 j2
	c0=$(loop_cpu_us "$KT_AGENT_PID") j0=$(loop_cpu_us "$jq_pid")
	# a pod is done with once its Ready status is on the server: kube-wait's
	# watch ends on that event
	kube-request --kubeconfig="$kc" POST /api/v1/namespaces/default/pods "$T/small.json" >/dev/null
	kube-wait --kubeconfig="$kc" --timeout=5m pod/small --for=condition=Ready >/dev/null
	c1=$(loop_cpu_us "$KT_AGENT_PID") j1=$(loop_cpu_us "$jq_pid")
	kube-request --kubeconfig="$kc" POST /api/v1/namespaces/default/pods "$T/large.json" >/dev/null
	kube-wait --kubeconfig="$kc" --timeout=5m pod/large --for=condition=Ready >/dev/null
	c2=$(loop_cpu_us "$KT_AGENT_PID") j2=$(loop_cpu_us "$jq_pid")
	local small=$((c1 - c0)) large=$((c2 - c1)) jq_large=$((j2 - j1))
	echo "the loop's CPU: $small us for 1.5 MB, $large us for 15 MB; the watch's for 15 MB: $jq_large us"
	# The loop's work for a pod does not follow its size: its lines name the
	# pod's files.  Before, it read each pod a byte a system call, more than
	# once: seconds of CPU for the small pod, ten times that and more for the
	# large one.  Measured (loaded machine): about 2.5 times for ten times the
	# bytes (the loop's one-second ticks while the large pod is read), and a
	# small part of what the watch spends to read and store it
	[ "$large" -lt $((10 * small)) ]
	[ $((10 * large)) -lt "$jq_large" ]
	term_ok "$KT_AGENT_PID"
	KT_AGENT_PID=""
}
