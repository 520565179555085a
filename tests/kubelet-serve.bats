#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kubelet-serve: a real server on loopback, curl over TLS with client
# certificates: every route, every log option, follow, rotation, bad input

load helper

setup_file() {
	"$BATS_TEST_DIRNAME/fixtures/kubelet-serve/certs.sh" "$BATS_FILE_TMPDIR/pki"
}

setup() {
	serve_state app:busybox side:pause
	LOG=$POD/containers/app/log
	printf '%s\n' \
		'2026-01-01T00:00:01.000000000Z stdout F one' \
		'2026-01-01T00:00:02.000000000Z stderr F two' \
		'2026-01-01T00:00:03.000000000Z stdout P thr' \
		'2026-01-01T00:00:03.500000000Z stdout F ee' >"$LOG"
	printf '%s\n' '2025-12-31T23:00:00.000000000Z stdout F before the restart' \
		>"$POD/containers/app/log.previous"
	# the container: a process that runs until the test ends
	tail -f /dev/null &
	echo "$!" >"$POD/containers/app/pid"
}

teardown() {
	stop_jobs
}

# serve [OPTIONS...]: kubelet-serve on an ephemeral port of loopback; $port
serve() {
	serve_kubelet "$@"
}

# get PATH [CURL OPTIONS...]: the body, then a line with the status
get() {
	local path=$1
	shift
	curl -sS --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" \
		-w '\n%{http_code}' "$@" "https://127.0.0.1:$port$path"
}

@test "healthz, pods and runningpods" {
	serve
	run_ok get /healthz
	lines_are ok 200
	run_ok get /pods
	[ "${lines[1]}" = 200 ]
	output=${lines[0]}
	jq_is '[.kind, .apiVersion, [.items[].metadata.name]]' '["PodList","v1",["web-1"]]'
	run_ok get /runningpods/
	[ "${lines[1]}" = 200 ]
	output=${lines[0]}
	jq_is '[.kind, .items[0].metadata.uid, [.items[0].spec.containers[].name]]' \
		"[\"PodList\",\"$UID1\",[\"app\"]]"
}

@test "one server, two nodes: pods and logs of both state directories" {
	local p2=$T/state2/pods/0b6c0a4e-0000-4000-8000-000000000002
	mkdir -p "$p2/containers/db"
	echo prod >"$p2/ns"
	echo db-0 >"$p2/name"
	echo '{"metadata":{"name":"db-0","namespace":"prod"},"spec":{"containers":[{"name":"db"}]}}' \
		>"$p2/pod.json"
	echo '2026-01-01T00:00:09.000000000Z stdout F ready' >"$p2/containers/db/log"
	serve --state-dir="$T/state2"
	run_ok get /pods
	output=${lines[0]}
	jq_is '[.items[].metadata.name] | sort' '["db-0","web-1"]'
	run_ok get /containerLogs/prod/db-0/db
	lines_are ready 200
	run_ok get /containerLogs/default/web-1/app?tailLines=1
	lines_are ee 200
	run_ok get /containerLogs/prod/web-1/app
	lines_are 'pod "web-1" does not exist' 404
}

@test "containerLogs with each of the kubelet's options, exact output" {
	serve
	local base=/containerLogs/default/web-1/app
	run_ok get "$base"
	lines_are one two three 200
	# a line the runtime cut (P, then F) is two lines of the file
	run_ok get "$base?tailLines=3"
	lines_are two three 200
	run_ok get "$base?tailLines=1"
	lines_are ee 200
	run_ok get "$base?tail=all"
	lines_are one two three 200
	run_ok get "$base?timestamps=true&tailLines=2"
	lines_are '2026-01-01T00:00:03Z thr2026-01-01T00:00:03.5Z ee' 200
	run_ok get "$base?sinceTime=2026-01-01T00:00:02Z"
	lines_are two three 200
	run_ok get "$base?sinceSeconds=3600"
	lines_are 200
	run_ok get "$base?limitBytes=6"
	lines_are one tw 200
	run_ok get "$base?previous=true"
	lines_are 'before the restart' 200
	run_ok get "$base?follow=false"
	lines_are one two three 200
}

@test "follow delivers a line written after the request, and ends with the container" {
	serve
	get '/containerLogs/default/web-1/app?follow=true&tailLines=2' -N >"$T/out" &
	local cpid=$!
	wait_until 100 0.05 grep -qx three "$T/out"
	printf '%s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ) stdout F four" >>"$LOG"
	wait_until 100 0.05 grep -qx four "$T/out"
	echo 0 >"$POD/containers/app/exit"
	wait "$cpid"
	run cat "$T/out"
	lines_are three four 200
}

@test "follow reads a rotated log to its end, then the new one" {
	serve
	get '/containerLogs/default/web-1/app?follow=1&tailLines=0' -N >"$T/out" &
	local cpid=$!
	wait_until 100 0.05 grep -q '"following"' "$T/serve.log"
	printf '%s\n' '2026-01-01T00:00:04.000000000Z stdout F last of old' >>"$LOG"
	wait_until 100 0.05 grep -qx 'last of old' "$T/out"
	mv "$LOG" "$LOG.1"
	printf '%s\n' '2026-01-01T00:00:05.000000000Z stdout F first of new' >"$LOG"
	wait_until 100 0.05 grep -qx 'first of new' "$T/out"
	echo 0 >"$POD/containers/app/exit"
	wait "$cpid"
	run cat "$T/out"
	lines_are 'last of old' 'first of new' 200
}

@test "a client certificate of the CA is accepted, one of another CA and none are 401" {
	serve
	run_ok get /healthz
	lines_are ok 200
	run_ok curl -sS --cacert "$PKI/ca.crt" --cert "$PKI/stranger.crt" \
		--key "$PKI/stranger.key" -w '\n%{http_code}' "https://127.0.0.1:$port/pods"
	lines_are Unauthorized 401
	run_ok curl -sS --cacert "$PKI/ca.crt" -w '\n%{http_code}' "https://127.0.0.1:$port/pods"
	lines_are Unauthorized 401
}

@test "a replaced certificate serves new connections while a follow stays open" {
	serve
	subject() {
		openssl s_client -connect "127.0.0.1:$port" -servername localhost </dev/null \
			2>/dev/null | openssl x509 -noout -subject
	}
	run_ok subject
	[ "$output" = "subject=CN = node-1" ]
	get '/containerLogs/default/web-1/app?follow=1&tailLines=0' -N >"$T/out" &
	local cpid=$!
	wait_until 100 0.05 grep -q '"following"' "$T/serve.log"
	printf '%s\n' '2026-01-01T00:00:04.000000000Z stdout F before' >>"$LOG"
	wait_until 100 0.05 grep -qx before "$T/out"
	cp "$PKI/server2.key" "$T/tls.key.new"
	cp "$PKI/server2.crt" "$T/tls.crt.new"
	mv "$T/tls.key.new" "$T/tls.key"
	mv "$T/tls.crt.new" "$T/tls.crt"
	run_ok subject
	[ "$output" = "subject=CN = node-1-rotated" ]
	printf '%s\n' '2026-01-01T00:00:05.000000000Z stdout F after' >>"$LOG"
	wait_until 100 0.05 grep -qx after "$T/out"
	run_ok get /healthz
	lines_are ok 200
	echo 0 >"$POD/containers/app/exit"
	wait "$cpid"
}

# webhook: the stand-in API server for TokenReview and SubjectAccessReview, and
# kubelet-serve in Webhook mode against it; the reviews asked are in $T/reviews
serve_webhook() {
	"${PYTHON:-python3}" "$BATS_TEST_DIRNAME/fixtures/kubelet-serve/webhook.py" \
		"$T/wport" "$PKI/server.crt" "$PKI/server.key" "$T/reviews" </dev/null 3>&- &
	wait_until 100 0.05 test -s "$T/wport"
	cat >"$T/kubeconfig" <<-YAML
	apiVersion: v1
	kind: Config
	clusters: [{name: c, cluster: {server: "https://127.0.0.1:$(cat "$T/wport")", certificate-authority: "$PKI/ca.crt"}}]
	users: [{name: u, user: {token: kubelet-serve-token}}]
	contexts: [{name: c, context: {cluster: c, user: u}}]
	current-context: c
	YAML
	: >"$T/reviews"
	kubelet-serve --state-dir="$S" --address=127.0.0.1 --port=0 \
		--tls-cert-file="$T/tls.crt" --tls-private-key-file="$T/tls.key" \
		--client-ca-file="$PKI/ca.crt" --authentication-token-webhook \
		--kubeconfig="$T/kubeconfig" --node-name=node-1 \
		-v 2 --log-file="$T/serve.log" 2>"$T/serve.err" &
	wait_until 100 0.05 grep -q ' port=' "$T/serve.log"
	port=$(sed -n 's/.* port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -n 1)
}

# token TOKEN PATH: a request with a bearer token and no client certificate
token() {
	curl -sS --cacert "$PKI/ca.crt" -H "Authorization: Bearer $1" -w '\n%{http_code}' \
		"https://127.0.0.1:$port$2"
}

@test "webhook mode: a SubjectAccessReview per user, verb and subresource, kept" {
	serve_webhook
	run_ok get /healthz
	lines_are ok 200
	run_ok get /containerLogs/default/web-1/app?tailLines=1
	lines_are ee 200
	run_ok get /stats/summary
	[ "${lines[-1]}" = 200 ]
	run cat "$T/reviews"
	lines_are 'access admin get proxy node-1 system:masters,ops,system:authenticated' \
		'access admin get stats node-1 system:masters,ops,system:authenticated'
	[ ! -s "$T/serve.err" ]
}

@test "webhook mode: bearer tokens through a TokenReview; 401 and 403 bodies" {
	serve_webhook
	run_ok token alice-token /containerLogs/default/web-1/app?tailLines=1
	lines_are ee 200
	run_ok token alice-token /pods
	[ "${lines[-1]}" = 200 ]
	run_ok token alice-token /stats/summary
	lines_are 'Forbidden (user=alice, verb=get, resource=nodes, subresource=stats)' 403
	run_ok token alice-token /metrics/resource
	lines_are 'Forbidden (user=alice, verb=get, resource=nodes, subresource=metrics)' 403
	run_ok token mallory-token /pods
	lines_are Unauthorized 401
	run cat "$T/reviews"
	lines_are 'token alice-token' \
		'access alice get proxy node-1 devs,system:authenticated' \
		'access alice get stats node-1 devs,system:authenticated' \
		'access alice get metrics node-1 devs,system:authenticated' \
		'token mallory-token'
}

@test "stats and metrics: the node's and its pods' CPU and memory, as the kubelet's Summary and Prometheus text" {
	echo node-1 >"$S/node"
	serve
	get /stats/summary >"$T/summary"
	[ "$(tail -n 1 "$T/summary")" = 200 ]
	sed '$d' "$T/summary" | jq -e --arg uid "$UID1" '.node.nodeName == "node-1" and
		(.node.cpu.usageCoreNanoSeconds > 0) and (.node.memory.workingSetBytes > 0) and
		([.pods[] | select(.podRef == {name: "web-1", namespace: "default", uid: $uid})
			| .containers[].name] | index("app") != null)'
	get /metrics/resource >"$T/metrics"
	[ "$(tail -n 1 "$T/metrics")" = 200 ]
	grep -q '^# TYPE node_cpu_usage_seconds_total counter$' "$T/metrics"
	grep -Eq '^node_memory_working_set_bytes [0-9.e+]+ [0-9]{13}$' "$T/metrics"
	grep -Eq '^container_cpu_usage_seconds_total\{container="app",namespace="default",pod="web-1"\} [0-9.e+-]+ [0-9]{13}$' "$T/metrics"
}

@test "bad requests: status and body" {
	serve
	local bad=0 path want body
	while IFS="|" read -r path want body; do
		[ -n "$path" ] || continue
		run get "$path"
		[ "${lines[-1]}" = "$want" ] && [ "${lines[0]}" = "$body" ] && continue
		printf "%s\n  got:  %s\n  want: %s %s\n" "$path" "$output" "$want" "$body" >&2
		bad=1
	done <<-'EOF'
	/containerLogs/default/nope/app|404|pod "nope" does not exist
	/containerLogs/default/web-1/nope|404|container "nope" not found in pod "web-1"
	/containerLogs/default/web-1/side|400|container "side" in pod "web-1" is waiting to start: ContainerCreating
	/containerLogs/default/web-1/app?tailLines=-1|400|tailLines: Invalid value: -1: must be greater than or equal to 0
	/containerLogs/default/web-1/app?tailLines=ten|400|tailLines: Invalid value: "ten": not a whole number
	/containerLogs/default/web-1/app?limitBytes=0|400|limitBytes: Invalid value: 0: must be greater than 0
	/containerLogs/default/web-1/app?sinceSeconds=-5|400|sinceSeconds: Invalid value: -5: must be greater than 0
	/containerLogs/default/web-1/app?sinceSeconds=1&sinceTime=2026-01-01T00:00:00Z|400|at most one of `sinceTime` or `sinceSeconds` may be specified
	/containerLogs/default/web-1/app?sinceTime=yesterday|400|sinceTime: Invalid value: "yesterday": not an RFC 3339 time
	/containerLogs/default/web-1/app?follow=maybe|400|follow: Invalid value: "maybe": not a boolean
	/containerLogs/default/%2e%2e/app|400|invalid pod name "..": a lowercase RFC 1123 subdomain: letters a-z, digits and '-', labels joined by '.', starting and ending with a letter or digit
	/containerLogs/default/..%2f..%2fetc/app|400|invalid pod name "../../etc": a lowercase RFC 1123 subdomain: letters a-z, digits and '-', labels joined by '.', starting and ending with a letter or digit
	/containerLogs/Default/web-1/app|400|invalid namespace name "Default": a lowercase RFC 1123 label: letters a-z, digits and '-', starting and ending with a letter or digit
	/containerLogs/default/web-1|400|{"message": "Missing container name."}
	/containerLogs/default/web-1/app/more|404|404 page not found
	/nothing|404|404 page not found
	/exec/default/web-1/app?command=ls&output=1|501|kubelet-serve runs no --provider: exec, attach and portForward are not served
	/attach/default/web-1/app?output=1|501|kubelet-serve runs no --provider: exec, attach and portForward are not served
	/portForward/default/web-1|501|kubelet-serve runs no --provider: exec, attach and portForward are not served
	/run/default/web-1/app|501|run is not implemented in kubelet-serve yet: it serves logs, pods, stats, metrics, exec, attach and portForward
	EOF
	[ "$bad" = 0 ]
	run_ok get /pods -X POST
	lines_are 'Method Not Allowed' 405
}

@test "a symlink out of the state directory is not followed" {
	mkdir -p "$T/outside"
	printf '%s\n' '2026-01-01T00:00:01.000000000Z stdout F secret' >"$T/outside/log"
	rm -rf "$POD/containers/side"
	ln -s "$T/outside" "$POD/containers/side"
	serve
	run_ok get /containerLogs/default/web-1/side
	lines_are 'container "side" in pod "web-1" is waiting to start: ContainerCreating' 400
}

@test "a follower that stops reading: the server stops reading the log" {
	serve
	# a client that asks for a follow and then reads nothing
	"${PYTHON:-python3}" -c '
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
ctx.load_cert_chain(sys.argv[3], sys.argv[4])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))),
                    server_hostname="127.0.0.1")
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"GET /containerLogs/default/web-1/app?follow=1 HTTP/1.1\r\nHost: x\r\n\r\n")
print("sent", flush=True)
time.sleep(600)
' "$port" "$PKI/ca.crt" "$PKI/client.crt" "$PKI/client.key" >"$T/holder" 3>&- &
	wait_until 100 0.05 grep -q '"following"' "$T/serve.log"
	yes '2026-01-01T00:00:09.000000000Z stdout F a line of the log, many times over, to fill it' |
		head -c 33554432 >>"$LOG"
	# served meanwhile; what the follow read is what the sockets' kernel
	# buffers hold (some MiB on loopback) and 256 KiB of the server's own
	run_ok get /healthz
	lines_are ok 200
	local pid fd pos rss
	pid=$srv_pid
	fd=$(find "/proc/$pid/fd" -lname "$LOG" -printf '%f\n' | head -n 1)
	pos=$(awk '/^pos:/ { print $2 }' "/proc/$pid/fdinfo/$fd")
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
	[ "$pos" -lt 16777216 ] || { echo "read $pos of 33554432 bytes, rss $rss KiB" >&2; false; }
	# a sanitizer build's shadow memory is not the server's to bound
	if ! ldd "$(command -v kubelet-serve)" 2>/dev/null | grep -q libasan; then
		[ "$rss" -lt 65536 ]
	fi
}

@test "oversized headers are refused and the server serves others" {
	serve
	run_ok "${PYTHON:-python3}" "$BATS_TEST_DIRNAME/fixtures/kubelet-serve/bigheader.py" \
		"$port" "$PKI/ca.crt" "$PKI/client.crt" "$PKI/client.key"
	[ "$output" = "HTTP/1.1 400 Bad Request" ]
	run_ok get /healthz
	lines_are ok 200
}

@test "past --max-connections a request is 503, and served again once they go" {
	serve --max-connections=2
	exec 5<>"/dev/tcp/127.0.0.1/$port"
	exec 6<>"/dev/tcp/127.0.0.1/$port"
	run_ok get /healthz
	lines_are 'too many connections: try again later' 503
	exec 5>&- 6>&-
	wait_until 100 0.05 eval 'get /healthz | grep -qx 200'
}

@test "usage errors" {
	usage_errors kubelet-serve <<-'EOF'
	# no state directory
	--authorization-mode=AlwaysAllow|missing --state-dir
	# an argument
	--state-dir=. --authorization-mode=AlwaysAllow x|unexpected argument 'x'
	# a mode
	--state-dir=. --authorization-mode=Node|invalid value 'Node' for --authorization-mode: expected AlwaysAllow or Webhook
	# a node name
	--state-dir=. --node-name=Bad_Name|invalid node name 'Bad_Name': only lower-case letters, digits, '-' and '.' are allowed
	# a certificate without its key
	--state-dir=. --authorization-mode=AlwaysAllow --tls-cert-file=x|--tls-cert-file and --tls-private-key-file go together
	# a port
	--state-dir=. --authorization-mode=AlwaysAllow --port=70000|invalid value '70000' for --port: must be from 0 to 65535
	# a state directory that is not there
	--state-dir=/nonexistent --authorization-mode=AlwaysAllow|/nonexistent: not a directory it can read
	EOF
}

@test "a certificate file that cannot be used: exit 2, nothing served" {
	fails_with 2 "kubelet-serve: $T/none.crt: cannot read it" kubelet-serve --state-dir="$S" \
		--authorization-mode=AlwaysAllow --tls-cert-file="$T/none.crt" \
		--tls-private-key-file="$T/tls.key"
	run --separate-stderr kubelet-serve --state-dir="$S" --authorization-mode=AlwaysAllow \
		--tls-cert-file="$T/tls.key" --tls-private-key-file="$T/tls.key"
	[ "$status" = 2 ] && [ -z "$output" ]
	[[ "$stderr" == "kubelet-serve: $T/tls.key: cannot load the certificate: "* ]]
}

@test "without a certificate: a self-signed one, with a warning" {
	kubelet-serve --state-dir="$S" --address=127.0.0.1 --port=0 \
		--client-ca-file="$PKI/ca.crt" --authorization-mode=AlwaysAllow \
		-v 1 --log-file="$T/serve.log" 2>"$T/serve.err" &
	wait_until 100 0.05 grep -q ' port=' "$T/serve.log"
	port=$(sed -n 's/.* port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -n 1)
	grep -q '^kubelet-serve: warning: no --tls-cert-file: serving a self-signed certificate for 127.0.0.1' "$T/serve.err"
	run_ok curl -sS -k --cert "$PKI/client.crt" --key "$PKI/client.key" \
		"https://127.0.0.1:$port/healthz"
	[ "$output" = ok ]
}

@test "--help and --version" {
	run_ok kubelet-serve --help
	[[ "$output" == *"Usage: kubelet-serve"* ]]
	run_ok kubelet-serve --version
}
