#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# probe-run: probes against real servers on 127.0.0.1 (HTTP, HTTPS, TCP, exec, gRPC)

load helper

SRV="$KT_SRCDIR/tests/probeserver"

# has_lines FILE N: FILE has N lines or more (what a background probe-run printed,
# or the requests the test server logged: see log=FILE in probeserver/httpserver.py)
has_lines() {
	[ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ]
}

# a python3 that has grpc (python3-grpcio), or nothing
grpc_python() {
	local py
	for py in /usr/bin/python3 python3; do
		if "$py" -c 'import grpc' 2>/dev/null; then
			echo "$py"
			return 0
		fi
	done
	return 0
}

setup_file() {
	local d="$BATS_FILE_TMPDIR" py
	python3 "$SRV/httpserver.py" "$d/http.port" 3>&- &
	echo $! >"$d/pids"
	python3 "$SRV/httpserver.py" "$d/http2.port" 3>&- &
	echo $! >>"$d/pids"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
		-keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
	python3 "$SRV/httpserver.py" "$d/https.port" "$d/cert.pem" "$d/key.pem" 3>&- &
	echo $! >>"$d/pids"
	python3 "$SRV/blackhole.py" "$d/blackhole.port" 3>&- &
	echo $! >>"$d/pids"
	py=$(grpc_python)
	if [ -n "$py" ]; then
		"$py" "$SRV/grpcserver.py" "$d/grpc.port" "$d/grpcbare.port" 3>&- &
		echo $! >>"$d/pids"
		wait_until 100 0.1 test -s "$d/grpc.port"
		wait_until 100 0.1 test -s "$d/grpcbare.port"
	fi
	wait_until 100 0.1 test -s "$d/http.port"
	wait_until 100 0.1 test -s "$d/http2.port"
	wait_until 100 0.1 test -s "$d/https.port"
	wait_until 100 0.1 test -s "$d/blackhole.port"
}

teardown_file() {
	local pid
	while read -r pid; do
		kill "$pid" 2>/dev/null || true
	done <"$BATS_FILE_TMPDIR/pids"
}

setup() {
	HTTP=$(cat "$BATS_FILE_TMPDIR/http.port")
	HTTP2=$(cat "$BATS_FILE_TMPDIR/http2.port")
	HTTPS=$(cat "$BATS_FILE_TMPDIR/https.port")
	HOLE=$(cat "$BATS_FILE_TMPDIR/blackhole.port")
	GRPC=$(cat "$BATS_FILE_TMPDIR/grpc.port" 2>/dev/null || true)
	GRPCBARE=$(cat "$BATS_FILE_TMPDIR/grpcbare.port" 2>/dev/null || true)
}

need_grpc() {
	[ -n "$GRPC" ] || skip "python3-grpcio is not installed (apt-get install python3-grpcio)"
}

# an httpGet probe of path on the HTTP server, extra fields appended
http_probe() {
	printf '{"httpGet":{"port":%s,"path":"%s"%s}%s}' "$HTTP" "$1" "${2:-}" "${3:-}"
}

# ------------------------------------------------------------------- --once

@test "probe-run: --once http 200 is success with the body" {
	prints 0 '{"result":"success","output":"ok"}' probe-run "$(http_probe /success)"
}

@test "probe-run: the probe can come from a file or standard input, JSON or YAML" {
	http_probe /success >"$BATS_TEST_TMPDIR/p.json"
	printf 'httpGet:\n  port: %s\n  path: /success\n' "$HTTP" >"$BATS_TEST_TMPDIR/p.yaml"
	prints 0 '{"result":"success","output":"ok"}' probe-run "$BATS_TEST_TMPDIR/p.json"
	prints 0 '{"result":"success","output":"ok"}' probe-run <"$BATS_TEST_TMPDIR/p.yaml"
}

# upstream's HTTP matrix (pkg/probe/http tests), one row per line:
# path  extra-httpGet-fields  exit  expected output line
@test "probe-run: upstream's HTTP status and redirect matrix" {
	local rows=(
		"/success||0|{\"result\":\"success\",\"output\":\"ok\"}"
		"/fail||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 500\"}"
		"/status/404||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 404\"}"
		"/status/204||0|{\"result\":\"success\",\"output\":\"\"}"
		"/status/299||0|{\"result\":\"success\",\"output\":\"status 299\"}"
		"/status/300||0|{\"result\":\"warning\",\"output\":\"Probe terminated redirects, Response body: status 300\"}"
		"/status/304||0|{\"result\":\"warning\",\"output\":\"Probe terminated redirects, Response body: \"}"
		"/status/400||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 400\"}"
		"/status/503||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 503\"}"
		"/redirect?to=/success&code=301||0|{\"result\":\"success\",\"output\":\"ok\"}"
		"/redirect?to=/success&code=302||0|{\"result\":\"success\",\"output\":\"ok\"}"
		"/redirect?to=/success&code=303||0|{\"result\":\"success\",\"output\":\"ok\"}"
		"/redirect?to=/success&code=307||0|{\"result\":\"success\",\"output\":\"ok\"}"
		"/redirect?to=/success&code=308||0|{\"result\":\"success\",\"output\":\"ok\"}"
		"/redirect?to=/fail&code=301||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 500\"}"
		"/redirect?to=/fail&code=302||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 500\"}"
		"/redirect?to=/fail&code=307||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 500\"}"
		"/redirect?to=/fail&code=308||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 500\"}"
		"/redirect?to=http://127.0.0.1:$HTTP2/success||0|{\"result\":\"success\",\"output\":\"ok\"}"
		"/redirect?to=http://127.0.0.1:$HTTP2/fail||1|{\"result\":\"failure\",\"output\":\"HTTP probe failed with statuscode: 500\"}"
		"/redirect?to=http://0.0.0.0:$HTTP/fail||0|{\"result\":\"warning\",\"output\":\"Probe terminated redirects, Response body: moved\"}"
		"/redirect?to=http://localhost:$HTTP/success||0|{\"result\":\"warning\",\"output\":\"Probe terminated redirects, Response body: moved\"}"
		"/loop||1|{\"result\":\"failure\",\"output\":\"Get \\\"/loop\\\": stopped after 10 redirects\"}"
		"/redirects?n=9||0|{\"result\":\"success\",\"output\":\"arrived\"}"
		"/redirects?n=10||1|{\"result\":\"failure\",\"output\":\"Get \\\"/redirects?n=0\\\": stopped after 10 redirects\"}"
		"/noloc||0|{\"result\":\"warning\",\"output\":\"Probe terminated redirects, Response body: no location\"}"
		"/slow?ms=3000||1|{\"result\":\"failure\",\"output\":\"Get \\\"http://127.0.0.1:$HTTP/slow?ms=3000\\\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)\"}"
		"/slow?ms=300||0|{\"result\":\"success\",\"output\":\"slow\"}"
		"success||0|{\"result\":\"success\",\"output\":\"ok\"}"
	)
	local row path extra code want
	for row in "${rows[@]}"; do
		IFS='|' read -r path extra code want <<<"$row"
		run --separate-stderr probe-run "$(http_probe "$path" "$extra")"
		if [ "$status" != "$code" ] || [ "$output" != "$want" ] || [ -n "$stderr" ]; then
			printf 'row %s\n got %s %s %s\nwant %s %s\n' "$path" "$status" "$output" \
				"$stderr" "$code" "$want" >&2
			return 1
		fi
	done
}

@test "probe-run: default headers, no keep-alive, no Accept-Encoding" {
	prints 0 "{\"result\":\"success\",\"output\":\"Host: 127.0.0.1:$HTTP\\nAccept: */*\\nUser-Agent: kube-probe/1.31\\nConnection: close\\n\"}" probe-run "$(http_probe /headers)"
}

@test "probe-run: custom headers in order, repeated names, canonical names" {
	prints 0 "{\"result\":\"success\",\"output\":\"Host: 127.0.0.1:$HTTP\\nAccept: */*\\nX-Custom: one\\nX-Custom: two\\nX-Empty:\\nUser-Agent: kube-probe/1.31\\nConnection: close\\n\"}" probe-run "$(http_probe /headers ',"httpHeaders":[{"name":"x-custom","value":"one"},{"name":"X-Custom","value":"two"},{"name":"X-Empty","value":""}]')"
}

@test "probe-run: User-Agent and Accept overridden, and removed by an empty value" {
	prints 0 "{\"result\":\"success\",\"output\":\"Host: 127.0.0.1:$HTTP\\nUser-Agent: mine/2\\nAccept: text/plain\\nConnection: close\\n\"}" probe-run "$(http_probe /headers ',"httpHeaders":[{"name":"User-Agent","value":"mine/2"},{"name":"Accept","value":"text/plain"}]')"
	prints 0 "{\"result\":\"success\",\"output\":\"Host: 127.0.0.1:$HTTP\\nConnection: close\\n\"}" probe-run "$(http_probe /headers ',"httpHeaders":[{"name":"User-Agent","value":""},{"name":"Accept","value":""}]')"
}

@test "probe-run: a Host header sets the host, also across a relative redirect" {
	prints 0 '{"result":"success","output":"example.test"}' probe-run "$(http_probe /echo-host ',"httpHeaders":[{"name":"Host","value":"example.test"}]')"
	prints 0 '{"result":"success","output":"example.test"}' probe-run "$(http_probe '/redirect?to=/echo-host' ',"httpHeaders":[{"name":"Host","value":"example.test"}]')"
}

@test "probe-run: the body is read to exactly 10 KiB" {
	local want
	want=$(python3 -c 'print(("0123456789abcdef" * 640)[:10240], end="")')
	prints 0 "{\"result\":\"success\",\"output\":\"$want\"}" probe-run "$(http_probe '/large?bytes=1048576')"
}

@test "probe-run: no proxy whatever the environment says" {
	http_proxy=http://127.0.0.1:1 HTTP_PROXY=http://127.0.0.1:1 all_proxy=http://127.0.0.1:1 \
		prints 0 '{"result":"success","output":"ok"}' probe-run "$(http_probe /success)"
}

@test "probe-run: https with a self-signed certificate is not verified" {
	prints 0 '{"result":"success","output":"ok"}' probe-run "{\"httpGet\":{\"scheme\":\"HTTPS\",\"port\":$HTTPS,\"path\":\"/success\"}}"
}

@test "probe-run: a body that times out is an error, tried 3 times, then unknown" {
	prints 3 '{"result":"unknown","output":"context deadline exceeded (Client.Timeout or context cancellation while reading body)"}' probe-run "$(http_probe "/slowbody?ms=1500&log=$BATS_TEST_TMPDIR/tries")"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/tries")" = 3 ]
}

@test "probe-run: http to a closed port fails as Go words it" {
	prints 1 '{"result":"failure","output":"Get \"http://127.0.0.1:1/x\": dial tcp 127.0.0.1:1: connect: connection refused"}' probe-run '{"httpGet":{"port":1,"path":"/x"}}'
}

@test "probe-run: IPv6 hosts are bracketed" {
	prints 1 '{"result":"failure","output":"Get \"http://[::1]:1/\": dial tcp [::1]:1: connect: connection refused"}' probe-run '{"httpGet":{"host":"::1","port":1}}'
	prints 1 '{"result":"failure","output":"dial tcp [::1]:1: connect: connection refused"}' probe-run '{"tcpSocket":{"host":"::1","port":1}}'
}

@test "probe-run: tcp to a listener succeeds, to a closed port fails" {
	prints 0 '{"result":"success","output":""}' probe-run "{\"tcpSocket\":{\"port\":$HTTP}}"
	prints 1 '{"result":"failure","output":"dial tcp 127.0.0.1:1: connect: connection refused"}' probe-run '{"tcpSocket":{"port":1}}'
}

@test "probe-run: a slow DNS lookup in a tcp probe does not hold up the other probes" {
	# a resolver that never answers, seen only by probe-run (its own mount namespace)
	[ "$(id -u)" = 0 ] && command -v unshare >/dev/null || skip "needs root and unshare(1)"
	unshare -m true 2>/dev/null || skip "cannot make a mount namespace here"
	local d="$BATS_TEST_TMPDIR" ns="127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
open(sys.argv[2], "w").write("ready")
while True:
    s.recvfrom(4096)
' "$ns" "$d/dns.ready" 3>&- &
	local dns=$!
	wait_until 100 0.1 test -s "$d/dns.ready"
	printf 'nameserver %s\noptions timeout:4 attempts:1\n' "$ns" >"$d/resolv.conf"
	python3 - "$HTTP" "$d/fast" >"$d/pods.json" <<'EOF'
import json, sys
port = int(sys.argv[1])
cs = [{"name": "slow", "readinessProbe": {"tcpSocket": {"host": "probe.slow.test", "port": 80}, "timeoutSeconds": 6, "periodSeconds": 30}}]
cs += [{"name": "c%d" % i, "readinessProbe": {"httpGet": {"port": port, "path": "/success?log=" + sys.argv[2]}, "periodSeconds": 1}} for i in range(3)]
print(json.dumps({"metadata": {"name": "p"}, "spec": {"containers": cs}}))
EOF
	unshare -m sh -c 'mount --bind "$1/resolv.conf" /etc/resolv.conf && exec probe-run --watch --pod="$1/pods.json" --stats="$1/stats.json"' sh "$d" \
		>"$d/out" 3>&- &
	local pid=$!
	# four initial lines, then the three fast probes' successes; and their
	# second round, which the slow lookup would hold up on the loop
	wait_until 200 0.1 has_lines "$d/out" 7
	wait_until 200 0.1 has_lines "$d/fast" 6
	kill -TERM "$pid"
	local rc=0
	wait "$pid" || rc=$?
	kill "$dns"
	[ "$rc" = 0 ]
	run -0 grep -c '"result":"success"' "$d/out"
	[ "$output" = 3 ]
	# a lookup on the loop would have started the others 4 s late
	run -0 jq -e '.probes >= 6 and .lateMsMax < 1000' "$d/stats.json"
}

@test "probe-run: a connect that never completes times out (tcp, http, grpc)" {
	prints 1 "{\"result\":\"failure\",\"output\":\"dial tcp 127.0.0.1:$HOLE: i/o timeout\"}" probe-run "{\"tcpSocket\":{\"port\":$HOLE}}"
	prints 1 "{\"result\":\"failure\",\"output\":\"Get \\\"http://127.0.0.1:$HOLE/x\\\": dial tcp 127.0.0.1:$HOLE: i/o timeout (Client.Timeout exceeded while awaiting headers)\"}" probe-run "{\"httpGet\":{\"port\":$HOLE,\"path\":\"/x\"}}"
	prints 1 "{\"result\":\"failure\",\"output\":\"timeout: failed to connect service \\\"127.0.0.1:$HOLE\\\" within 1s: context deadline exceeded\"}" probe-run "{\"grpc\":{\"port\":$HOLE}}"
}

@test "probe-run: exec success and failure keep stdout and stderr together" {
	prints 0 '{"result":"success","output":"out\nerr\n"}' probe-run '{"exec":{"command":["sh","-c","echo out; echo err >&2"]}}'
	prints 1 '{"result":"failure","output":"sick\n"}' probe-run '{"exec":{"command":["sh","-c","echo sick; exit 3"]}}'
}

@test "probe-run: exec runs argv without a shell" {
	prints 0 '{"result":"success","output":"$HOME a;b\n"}' probe-run '{"exec":{"command":["echo","$HOME","a;b"]}}'
}

@test "probe-run: exec output is kept to 10 KiB of 1 MiB" {
	local want
	want=$(head -c 10240 /dev/zero | tr '\0' x)
	prints 0 "{\"result\":\"success\",\"output\":\"$want\"}" \
		probe-run '{"exec":{"command":["sh","-c","head -c 1048576 /dev/zero | tr \"\\\\0\" x"]}}'
}

@test "probe-run: exec that outlives the timeout is killed with its process group" {
	local pidfile="$BATS_TEST_TMPDIR/bg.pid"
	prints 1 "{\"result\":\"failure\",\"output\":\"command \\\"sh -c trap '' TERM; sleep 30 & echo \$! >$pidfile; wait\\\" timed out\"}" probe-run "{\"exec\":{\"command\":[\"sh\",\"-c\",\"trap '' TERM; sleep 30 & echo \$! >$pidfile; wait\"]},\"timeoutSeconds\":1}"
	sleep 0.2
	# gone, or a zombie waiting for whoever adopted it
	run -0 sh -c "ps -o stat= -p $(cat "$pidfile") || true"
	[ -z "$output" ] || [[ "$output" == Z* ]]
}

@test "probe-run: exec that cannot start is unknown after 3 tries" {
	prints 3 '{"result":"unknown","output":"exec: \"no-such-command-here\": executable file not found in $PATH"}' probe-run '{"exec":{"command":["no-such-command-here"]}}'
	prints 3 '{"result":"unknown","output":"exec: \"/nonexistent/cmd\": no such file or directory"}' probe-run '{"exec":{"command":["/nonexistent/cmd"]}}'
}

@test "probe-run: \$(VAR) in an exec command never chains through env values, as the kubelet's" {
	printf '{"metadata":{"name":"e"},"spec":{"containers":[{"name":"c","env":[{"name":"B","value":"x"},{"name":"A","value":"$(B)"},{"name":"S","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],"readinessProbe":{"exec":{"command":["printf","%%s|%%s|%%s","$(A)","$(S)","$(B)"]}}}]}}' >"$BATS_TEST_TMPDIR/pod.json"
	run -0 --separate-stderr probe-run --pod="$BATS_TEST_TMPDIR/pod.json"
	[ "$output" = '{"pod":"default/e","container":"c","type":"readiness","result":"success","output":"$(B)||x"}' ]
}

@test "probe-run: nested \$(VAR) values do not blow up memory; an oversized command is refused" {
	python3 - "$BATS_TEST_TMPDIR" <<'EOF'
import json, sys
d = sys.argv[1]
env = [{"name": "A", "value": "x" * 1000}, {"name": "B", "value": "$(A)" * 100},
       {"name": "C", "value": "$(B)" * 100}, {"name": "D", "value": "$(C)" * 100}]
def pod(cmd):
    return {"metadata": {"name": "bomb"}, "spec": {"containers": [{"name": "c", "env": env,
            "readinessProbe": {"exec": {"command": cmd}}}]}}
json.dump(pod(["printf", "%.20s", "$(D)"]), open(d + "/bomb.json", "w"))
json.dump(pod(["true"] + ["$(A)" * 300] * 4), open(d + "/big.json", "w"))
EOF
	# under 200 MB of address space (the chained expansion took about 1 GB); a
	# sanitizer or valgrind build reserves more than that, so it runs unbounded
	local limit=200000
	if [ "$(head -c 4 "$(command -v probe-run)" | tail -c 3)" != ELF ] ||
		ldd "$(command -v probe-run)" | grep -q libasan; then
		limit=unlimited
	fi
	run -0 --separate-stderr sh -c 'ulimit -v "$1"; exec probe-run --pod="$2"' sh "$limit" "$BATS_TEST_TMPDIR/bomb.json"
	[ "$output" = '{"pod":"default/bomb","container":"c","type":"readiness","result":"success","output":"$(C)$(C)$(C)$(C)$(C)"}' ]
	run -2 --separate-stderr probe-run --pod="$BATS_TEST_TMPDIR/big.json"
	[ -z "$output" ]
	[ "$stderr" = "probe-run: $BATS_TEST_TMPDIR/big.json: spec.containers[0].readinessProbe.exec.command: Too long: with \$(VAR) expanded, must have at most 1048576 bytes" ]
}

@test "probe-run: --watch leaves no zombie behind after exec timeouts" {
	local runs="$BATS_TEST_TMPDIR/runs"
	probe-run --watch "{\"exec\":{\"command\":[\"sh\",\"-c\",\"echo >>$runs; exec sleep 10\"]},\"timeoutSeconds\":1,\"periodSeconds\":1}" \
		>"$BATS_TEST_TMPDIR/out" 3>&- &
	local pid=$!
	# the third attempt has started: the two before it timed out
	wait_until 200 0.1 has_lines "$runs" 3
	run -0 --separate-stderr sh -c "ps -o stat= --ppid $pid || true"
	[[ "$output" != *Z* ]]
	term_ok "$pid"
}

# ------------------------------------------------------------------- gRPC

@test "probe-run: grpc SERVING is success, everything else failure" {
	need_grpc
	prints 0 '{"result":"success","output":"service healthy"}' probe-run "{\"grpc\":{\"port\":$GRPC}}"
	prints 0 '{"result":"success","output":"service healthy"}' probe-run "{\"grpc\":{\"port\":$GRPC,\"service\":\"web\"}}"
	prints 1 '{"result":"failure","output":"service unhealthy (responded with \"NOT_SERVING\")"}' probe-run "{\"grpc\":{\"port\":$GRPC,\"service\":\"down\"}}"
	prints 1 '{"result":"failure","output":"service unhealthy (responded with \"UNKNOWN\")"}' probe-run "{\"grpc\":{\"port\":$GRPC,\"service\":\"unknown\"}}"
	prints 1 '{"result":"failure","output":"error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"}' probe-run "{\"grpc\":{\"port\":$GRPC,\"service\":\"nope\"}}"
}

@test "probe-run: grpc without the health service, too slow, or not listening" {
	need_grpc
	prints 1 '{"result":"failure","output":"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): Method not found!"}' probe-run "{\"grpc\":{\"port\":$GRPCBARE}}"
	prints 1 '{"result":"failure","output":"timeout: health rpc did not complete within 1s"}' probe-run "{\"grpc\":{\"port\":$GRPC,\"service\":\"slow\"}}"
	prints 1 '{"result":"failure","output":"timeout: failed to connect service \"127.0.0.1:1\" within 2s: context deadline exceeded"}' probe-run '{"grpc":{"port":1},"timeoutSeconds":2}'
}

@test "probe-run: grpc-timeout stays within 8 digits, in grpc-go's units" {
	need_grpc
	run -0 --separate-stderr probe-run -v 7 "{\"grpc\":{\"port\":$GRPC},\"timeoutSeconds\":100000}"
	[ "$output" = '{"result":"success","output":"service healthy"}' ]
	[[ "$stderr" == *'"probe request headers" grpc-timeout="100000S"'* ]]
	run -0 --separate-stderr probe-run -v 7 "{\"grpc\":{\"port\":$GRPC}}"
	[[ "$stderr" == *'"probe request headers" grpc-timeout="1000000u"'* ]]
}

@test "probe-run: grpc to an HTTP/1 server is a failed connection" {
	prints 1 "{\"result\":\"failure\",\"output\":\"timeout: failed to connect service \\\"127.0.0.1:$HTTP\\\" within 1s: context deadline exceeded\"}" probe-run "{\"grpc\":{\"port\":$HTTP}}"
}

# ------------------------------------------------------------------- pods

@test "probe-run: --pod names each result, --container and --probe filter" {
	sed "s/@PORT@/$HTTP/g" "$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	run -1 --separate-stderr probe-run --pod="$BATS_TEST_TMPDIR/pod.json"
	lines_are \
		'{"pod":"shop/web","container":"app","type":"startup","result":"success","output":""}' \
		'{"pod":"shop/web","container":"app","type":"readiness","result":"success","output":"ok"}' \
		'{"pod":"shop/web","container":"app","type":"liveness","result":"failure","output":"HTTP probe failed with statuscode: 500"}' \
		'{"pod":"shop/web","container":"proxy","type":"readiness","result":"success","output":"healthy\n"}'
	prints 0 '{"pod":"shop/web","container":"proxy","type":"readiness","result":"success","output":"healthy\n"}' probe-run --pod="$BATS_TEST_TMPDIR/pod.json" --container=proxy
	prints 1 '{"pod":"shop/web","container":"app","type":"liveness","result":"failure","output":"HTTP probe failed with statuscode: 500"}' probe-run --pod="$BATS_TEST_TMPDIR/pod.json" --probe=liveness
}

@test "probe-run: --exec-via runs a pod's exec probes through the runtime's exec, named by UID and container" {
	# the runtime's exec: says what it was given, and runs the command where
	# only it sets INSIDE
	cat >"$BATS_TEST_TMPDIR/via" <<-'EOF'
	#!/bin/sh
	printf '%s|' "$@" >>"${0%/*}/via.args"
	shift 3
	INSIDE=yes exec "$@"
	EOF
	chmod +x "$BATS_TEST_TMPDIR/via"
	jq -n -c '{apiVersion: "v1", kind: "Pod", metadata: {name: "p", namespace: "ns", uid: "u-1"},
		spec: {containers: [{name: "c", image: "x", readinessProbe: {exec: {command:
			["sh", "-c", "echo inside=$INSIDE; test \"$INSIDE\" = yes"]}}}]}}' >"$BATS_TEST_TMPDIR/pod.json"
	prints 0 '{"pod":"ns/p","container":"c","type":"readiness","result":"success","output":"inside=yes\n"}' \
		probe-run --pod="$BATS_TEST_TMPDIR/pod.json" --exec-via="$BATS_TEST_TMPDIR/via"
	[ "$(cat "$BATS_TEST_TMPDIR/via.args")" = "u-1|c|--|sh|-c|echo inside=\$INSIDE; test \"\$INSIDE\" = yes|" ]
	# without it the command runs as probe-run's own child
	prints 1 '{"pod":"ns/p","container":"c","type":"readiness","result":"failure","output":"inside=\n"}' \
		probe-run --pod="$BATS_TEST_TMPDIR/pod.json"
	# a bare probe has no pod to run in: as it is
	prints 1 '{"result":"failure","output":"inside=\n"}' probe-run --exec-via="$BATS_TEST_TMPDIR/via" \
		'{"exec":{"command":["sh","-c","echo inside=$INSIDE; test \"$INSIDE\" = yes"]}}'
}

@test "probe-run: --pods reads a stream of Pods (YAML or JSON) from standard input" {
	sed "s/@PORT@/$HTTP/g" "$FIX/web.json" >"$BATS_TEST_TMPDIR/pod.json"
	local doc='metadata:\n  name: %s\nspec:\n  containers:\n  - name: c\n    livenessProbe:\n      tcpSocket:\n        port: %s\n'
	# shellcheck disable=SC2059
	printf "$doc---\n$doc" second "$HTTP" third "$HTTP" >"$BATS_TEST_TMPDIR/two.yaml"
	run -0 --separate-stderr probe-run --pods=- --probe=liveness <"$BATS_TEST_TMPDIR/two.yaml"
	lines_are \
		'{"pod":"default/second","container":"c","type":"liveness","result":"success","output":""}' \
		'{"pod":"default/third","container":"c","type":"liveness","result":"success","output":""}'
	run -0 --separate-stderr sh -c "cat '$BATS_TEST_TMPDIR/pod.json' '$BATS_TEST_TMPDIR/pod.json' | probe-run --pods=- --probe=readiness --container=proxy"
	lines_are \
		'{"pod":"shop/web","container":"proxy","type":"readiness","result":"success","output":"healthy\n"}' \
		"${lines[0]}"
	[ -z "$stderr" ]
}

@test "probe-run: --once with pods exits 3 when a probe is unknown and none failed" {
	printf '{"metadata":{"name":"u"},"spec":{"containers":[{"name":"a","readinessProbe":{"exec":{"command":["/no/such/cmd"]}}},{"name":"b","readinessProbe":{"tcpSocket":{"port":%s}}}]}}' "$HTTP" >"$BATS_TEST_TMPDIR/u.json"
	run -3 --separate-stderr probe-run --pod="$BATS_TEST_TMPDIR/u.json"
	[ "${lines[0]}" = '{"pod":"default/u","container":"a","type":"readiness","result":"unknown","output":"exec: \"/no/such/cmd\": no such file or directory"}' ]
	[ "${lines[1]}" = '{"pod":"default/u","container":"b","type":"readiness","result":"success","output":""}' ]
	[ -z "$stderr" ]
}

@test "probe-run: the pod's status.podIP is the host, before --host" {
	sed "s/@PORT@/$HTTP/g; s/\"podIP\": \"\"/\"podIP\": \"127.0.0.1\"/" "$FIX/web.json" \
		>"$BATS_TEST_TMPDIR/pod.json"
	prints 0 '{"pod":"shop/web","container":"app","type":"readiness","result":"success","output":"ok"}' probe-run --pod="$BATS_TEST_TMPDIR/pod.json" --host=192.0.2.1 \
		--probe=readiness --container=app
}

# ------------------------------------------------------------------- --watch

@test "probe-run: --watch reports changes only after the thresholds" {
	local flag="$BATS_TEST_TMPDIR/health" out="$BATS_TEST_TMPDIR/out"
	echo bad >"$flag"
	probe-run --watch "$(http_probe "/file?path=$flag&log=$BATS_TEST_TMPDIR/tries" '' ',"periodSeconds":1,"successThreshold":2,"failureThreshold":2')" \
		>"$out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local pid=$!
	wait_until 200 0.1 has_lines "$out" 1
	# two failures: no change to print
	wait_until 200 0.1 has_lines "$BATS_TEST_TMPDIR/tries" 2
	[ "$(wc -l <"$out")" = 1 ]
	echo ok >"$flag"
	wait_until 200 0.1 has_lines "$out" 2
	echo bad >"$flag"
	wait_until 200 0.1 has_lines "$out" 3
	term_ok "$pid"
	run -0 --separate-stderr cat "$out"
	lines_are \
		'{"type":"readiness","result":"failure","output":""}' \
		'{"type":"readiness","result":"success","output":"healthy"}' \
		'{"type":"readiness","result":"failure","output":"HTTP probe failed with statuscode: 503"}'
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
}

@test "probe-run: --watch holds liveness and readiness until startup succeeds" {
	local flag="$BATS_TEST_TMPDIR/started" out="$BATS_TEST_TMPDIR/out"
	# the startup probe counts its runs
	sed -e 's#\[ "test", "-e", "@FLAG@" \]#[ "sh", "-c", "echo >>@FLAG@.tries; test -e @FLAG@" ]#' \
		-e "s/@PORT@/$HTTP/g; s#@FLAG@#$flag#g" "$FIX/gated.json" >"$BATS_TEST_TMPDIR/pod.json"
	grep -q "$flag.tries" "$BATS_TEST_TMPDIR/pod.json"
	probe-run --watch --pod="$BATS_TEST_TMPDIR/pod.json" >"$out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local pid=$!
	wait_until 200 0.1 has_lines "$out" 3
	wait_until 200 0.1 has_lines "$flag.tries" 3
	# nothing but the initial values while the startup probe fails,
	# and the liveness probe has not run
	[ "$(wc -l <"$out")" = 3 ]
	[ ! -e "$flag.liveness" ]
	touch "$flag"
	wait_until 200 0.1 has_lines "$out" 5
	wait_until 30 0.1 test -e "$flag.liveness"
	term_ok "$pid"
	run -0 --separate-stderr cat "$out"
	lines_are \
		'{"pod":"default/gated","container":"app","type":"startup","result":"unknown","output":""}' \
		'{"pod":"default/gated","container":"app","type":"readiness","result":"failure","output":""}' \
		'{"pod":"default/gated","container":"app","type":"liveness","result":"success","output":""}' \
		'{"pod":"default/gated","container":"app","type":"startup","result":"success","output":""}' \
		'{"pod":"default/gated","container":"app","type":"readiness","result":"success","output":"ok"}'
}

@test "probe-run: --watch exits 1 once every probe is held after a liveness failure" {
	run -1 --separate-stderr probe-run --watch --probe=liveness "$(http_probe /fail '' ',"periodSeconds":1,"failureThreshold":2')"
	lines_are \
		'{"type":"liveness","result":"success","output":""}' \
		'{"type":"liveness","result":"failure","output":"HTTP probe failed with statuscode: 500"}'
	[ -z "$stderr" ]
}

@test "probe-run: --watch waits initialDelaySeconds before the first probe" {
	local log="$BATS_TEST_TMPDIR/requests"
	# the server's clock at the start, then at the probe
	curl -fsS -o /dev/null "http://127.0.0.1:$HTTP/success?log=$log"
	run -0 --separate-stderr probe-run --until-ready "$(http_probe "/success?log=$log" '' ',"initialDelaySeconds":2,"periodSeconds":1')"
	[ "$output" = '{"type":"readiness","result":"success","output":"ok"}' ]
	[ "$stderr" = "probe-run: readiness probe: success 1/1: ok" ]
	run -0 awk 'NR == 1 { t = $1 } NR == 2 { print ($1 - t >= 2) } END { print NR }' "$log"
	lines_are 1 2
}

@test "probe-run: --until-ready exits 0 after successThreshold, 1 when liveness reaches failureThreshold" {
	run -0 --separate-stderr probe-run --until-ready "$(http_probe /success '' ',"periodSeconds":1,"successThreshold":2')"
	[ "$output" = '{"type":"readiness","result":"success","output":"ok"}' ]
	[ "$stderr" = "probe-run: readiness probe: success 1/2: ok" ]
	run -1 --separate-stderr probe-run --until-ready --probe=liveness "$(http_probe /fail '' ',"periodSeconds":1,"failureThreshold":2')"
	[ "$output" = '{"type":"liveness","result":"failure","output":"HTTP probe failed with statuscode: 500"}' ]
	lines_are --stderr \
		"probe-run: liveness probe: failure 1/2: HTTP probe failed with statuscode: 500" \
		"probe-run: liveness probe failed 2 times in a row: HTTP probe failed with statuscode: 500"
}

@test "probe-run: --until-ready keeps probing readiness past failureThreshold until --timeout" {
	run -1 --separate-stderr probe-run --until-ready --timeout=3s "$(http_probe "/fail?log=$BATS_TEST_TMPDIR/fails" '' ',"periodSeconds":1,"failureThreshold":1')"
	# probed again after the first failure
	[ "$(wc -l <"$BATS_TEST_TMPDIR/fails")" -ge 2 ]
	[ "$output" = '{"type":"readiness","result":"failure","output":"HTTP probe failed with statuscode: 500"}' ]
	lines_are --stderr \
		"probe-run: readiness probe: failure 1/1: HTTP probe failed with statuscode: 500" \
		"probe-run: not ready after 3s: readiness probe: failure: HTTP probe failed with statuscode: 500"
	# a service that comes up after failureThreshold x periodSeconds is still waited for
	local flag="$BATS_TEST_TMPDIR/health" tries="$BATS_TEST_TMPDIR/tries"
	echo bad >"$flag"
	# it comes up once it has failed twice
	(wait_until 200 0.1 has_lines "$tries" 2 && echo ok >"$flag") 3>&- &
	run -0 --separate-stderr probe-run --until-ready --timeout=20s "$(http_probe "/file?path=$flag&log=$tries" '' ',"periodSeconds":1,"failureThreshold":1')"
	[ "$output" = '{"type":"readiness","result":"success","output":"healthy"}' ]
	[ "${stderr_lines[0]}" = "probe-run: readiness probe: failure 1/1: HTTP probe failed with statuscode: 503" ]
	[ "${stderr_lines[1]}" = "probe-run: readiness probe: success 1/1: healthy" ]
}

@test "probe-run: --until-ready says at once that an exec probe cannot start" {
	probe-run --until-ready --timeout=0 '{"exec":{"command":["/no/such/check"]},"periodSeconds":1}' \
		>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local pid=$!
	# said after the first attempt's three tries, once
	wait_until 200 0.1 grep -q 'no such file or directory' "$BATS_TEST_TMPDIR/err"
	run -0 cat "$BATS_TEST_TMPDIR/err"
	[ "$output" = 'probe-run: readiness probe: unknown: exec: "/no/such/check": no such file or directory' ]
	kill -INT "$pid"
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" = 130 ]
	# and at -v 2 the log line carries the reason
	run -1 --separate-stderr probe-run -v 2 --until-ready --timeout=1s '{"exec":{"command":["/no/such/check"]}}'
	[[ "$stderr" == *'"probe result" pod="" container="" type="readiness" result="unknown" reported="failure" output="exec: '*'/no/such/check'*': no such file or directory"'* ]]
}

@test "probe-run: --until-ready interrupted: 143 for SIGTERM, 130 for SIGINT, and says so" {
	local sig code name
	for sig in TERM:143 INT:130; do
		name=${sig%%:*}
		code=${sig#*:}
		: >"$BATS_TEST_TMPDIR/err"
		probe-run --until-ready "$(http_probe /fail '' ',"periodSeconds":1,"failureThreshold":100')" \
			>"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
		local pid=$!
		wait_until 200 0.1 grep -q 'failure 1/100' "$BATS_TEST_TMPDIR/err"
		kill -"$name" "$pid"
		local rc=0
		wait "$pid" || rc=$?
		[ "$rc" = "$code" ]
		[ ! -s "$BATS_TEST_TMPDIR/out" ]
		run -0 tail -n 2 "$BATS_TEST_TMPDIR/err"
		[ "${lines[0]}" = "probe-run: not ready: readiness probe: failure: HTTP probe failed with statuscode: 500" ]
		[ "${lines[1]}" = "probe-run: interrupted by SIG$name before every probe was ready" ]
	done
}

@test "probe-run: --pod takes the pod template of every workload kind" {
	local kind tmpl
	for kind in Deployment StatefulSet DaemonSet ReplicaSet Job CronJob; do
		tmpl=$(printf '{"metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"web","readinessProbe":{"httpGet":{"port":%s,"path":"/success"}}}]}}' "$HTTP")
		if [ "$kind" = CronJob ]; then
			printf 'apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: w, namespace: ci}\nspec:\n  schedule: "* * * * *"\n  jobTemplate: {spec: {template: %s}}\n' "$tmpl"
		else
			printf 'apiVersion: apps/v1\nkind: %s\nmetadata: {name: w, namespace: ci}\nspec:\n  template: %s\n' "$kind" "$tmpl"
		fi >"$BATS_TEST_TMPDIR/w.yaml"
		run -0 --separate-stderr probe-run --pod="$BATS_TEST_TMPDIR/w.yaml"
		[ "$output" = '{"pod":"ci/w","container":"web","type":"readiness","result":"success","output":"ok"}' ] ||
			{ echo "$kind: $output $stderr" >&2; return 1; }
	done
	printf 'kind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers: [{name: web, livenessProbe: {}}]\n' >"$BATS_TEST_TMPDIR/bad.yaml"
	run -2 --separate-stderr probe-run --pod="$BATS_TEST_TMPDIR/bad.yaml"
	[ "$stderr" = "probe-run: $BATS_TEST_TMPDIR/bad.yaml: spec.template.spec.containers[0].livenessProbe: Required value: must specify a handler type" ]
	printf 'kind: Service\nmetadata: {name: w}\nspec: {}\n' >"$BATS_TEST_TMPDIR/svc.yaml"
	run -2 --separate-stderr probe-run --pod="$BATS_TEST_TMPDIR/svc.yaml"
	[ "$stderr" = "probe-run: $BATS_TEST_TMPDIR/svc.yaml: a Service has no pod template" ]
}

# ------------------------------------------------------------------- many

@test "probe-run: 1,000 probes in one process and one that hangs: every result, in order" {
	python3 - "$HTTP" >"$BATS_TEST_TMPDIR/pods.json" <<'EOF'
import json, sys
port = int(sys.argv[1])
cs = [{"name": "c%d" % i, "readinessProbe": {"httpGet": {"port": port, "path": "/status/%d" % (200 + i % 3)}, "timeoutSeconds": 10}}
      for i in range(1000)]
cs.append({"name": "hang", "readinessProbe": {"httpGet": {"port": port, "path": "/hang"}, "timeoutSeconds": 3}})
print(json.dumps({"kind": "PodList", "items": [{"metadata": {"name": "big"}, "spec": {"containers": cs}}]}))
EOF
	run -1 --separate-stderr probe-run --pods="$BATS_TEST_TMPDIR/pods.json"
	[ -z "$stderr" ]
	[ "${#lines[@]}" = 1001 ]
	local i want
	for i in $(seq 0 999); do
		case $((i % 3)) in
		0) want="{\"pod\":\"default/big\",\"container\":\"c$i\",\"type\":\"readiness\",\"result\":\"success\",\"output\":\"status 200\"}" ;;
		1) want="{\"pod\":\"default/big\",\"container\":\"c$i\",\"type\":\"readiness\",\"result\":\"success\",\"output\":\"status 201\"}" ;;
		2) want="{\"pod\":\"default/big\",\"container\":\"c$i\",\"type\":\"readiness\",\"result\":\"success\",\"output\":\"status 202\"}" ;;
		esac
		[ "${lines[$i]}" = "$want" ] || { echo "line $i: ${lines[$i]}" >&2; return 1; }
	done
	[ "${lines[1000]}" = "{\"pod\":\"default/big\",\"container\":\"hang\",\"type\":\"readiness\",\"result\":\"failure\",\"output\":\"Get \\\"http://127.0.0.1:$HTTP/hang\\\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)\"}" ]
}

@test "probe-run: --watch with 1,000 probes starts each on time while one hangs" {
	python3 - "$HTTP" "$BATS_TEST_TMPDIR/requests" >"$BATS_TEST_TMPDIR/pods.json" <<'EOF'
import json, sys
port = int(sys.argv[1])
cs = [{"name": "c%d" % i, "readinessProbe": {"httpGet": {"port": port, "path": "/success?log=" + sys.argv[2]}, "periodSeconds": 2, "timeoutSeconds": 5}}
      for i in range(1000)]
cs.append({"name": "hang", "readinessProbe": {"httpGet": {"port": port, "path": "/hang"}, "timeoutSeconds": 10, "periodSeconds": 1}})
print(json.dumps({"kind": "PodList", "items": [{"metadata": {"name": "big"}, "spec": {"containers": cs}}]}))
EOF
	probe-run --watch --pods="$BATS_TEST_TMPDIR/pods.json" --stats="$BATS_TEST_TMPDIR/stats.json" \
		>"$BATS_TEST_TMPDIR/out" 3>&- &
	local pid=$!
	# 1,001 initial lines, then 1,000 readiness successes; then the second
	# round, two periods of the hanging probe later
	wait_until 300 0.1 has_lines "$BATS_TEST_TMPDIR/out" 2001
	wait_until 300 0.1 has_lines "$BATS_TEST_TMPDIR/requests" 2000
	term_ok "$pid"
	run -0 grep -c '"result":"success","output":"ok"' "$BATS_TEST_TMPDIR/out"
	[ "$output" = 1000 ]
	# a loop blocked by the hanging probe would start others its 10 s late;
	# half of that leaves room for a loaded machine
	run -0 jq -e '.probes >= 1000 and .lateMsMax < 5000' "$BATS_TEST_TMPDIR/stats.json"
}

# ------------------------------------------------------------------ --serve

# a start command for a pod: name uid and its containers' JSON
serve_start() {
	printf '{"op":"start","pod":{"metadata":{"name":"%s","namespace":"ns","uid":"%s"},"spec":{"containers":%s}}}\n' "$1" "$2" "$3"
}

# a container named c with a readiness httpGet probe of path, period 1 s
ready_c() {
	printf '[{"name":"c","readinessProbe":{"httpGet":{"port":%s,"path":"%s"},"periodSeconds":1}}]' "$HTTP" "$1"
}

# starts probe-run --serve reading the fifo in, writing out; fd 4 writes commands
serve_begin() {
	mkfifo "$BATS_TEST_TMPDIR/in"
	probe-run --serve "$@" <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out" \
		2>"$BATS_TEST_TMPDIR/err" 3>&- &
	SERVE_PID=$!
	exec 4>"$BATS_TEST_TMPDIR/in"
}

@test "probe-run: --serve starts, replaces and stops pods' probes as told" {
	local out="$BATS_TEST_TMPDIR/out" p='"pod":"ns/a","uid":"u1","container":"c","type":"readiness"'
	local q='"pod":"ns/b","uid":"u2","container":"c","type":"readiness"'
	serve_begin
	# one write, so that both pods start before either's first result
	printf '%s\n%s\n' "$(serve_start a u1 "$(ready_c /success)")" \
		"$(serve_start b u2 "$(ready_c /fail)")" >&4
	wait_until 200 0.1 has_lines "$out" 3
	# the same uid again: its probes start over with the new spec
	serve_start b u2 "$(ready_c /success)" >&4
	wait_until 200 0.1 has_lines "$out" 6
	echo '{"op":"stop","uid":"u1"}' >&4
	wait_until 200 0.1 has_lines "$out" 7
	exec 4>&-
	local rc=0
	wait "$SERVE_PID" || rc=$?
	[ "$rc" = 0 ]
	run -0 --separate-stderr cat "$out"
	lines_are \
		"{$p,\"result\":\"failure\",\"output\":\"\"}" \
		"{$q,\"result\":\"failure\",\"output\":\"\"}" \
		"{$p,\"result\":\"success\",\"output\":\"ok\"}" \
		"{$q,\"result\":\"unknown\",\"output\":\"\",\"stopped\":true}" \
		"{$q,\"result\":\"failure\",\"output\":\"\"}" \
		"{$q,\"result\":\"success\",\"output\":\"ok\"}" \
		"{$p,\"result\":\"unknown\",\"output\":\"\",\"stopped\":true}"
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
}

@test "probe-run: --serve stop of some types: those probes really stop, the others go on" {
	local d="$BATS_TEST_TMPDIR" out="$BATS_TEST_TMPDIR/out"
	local cs
	cs=$(printf '[{"name":"c","livenessProbe":{"exec":{"command":["sh","-c","echo x >>%s/live"]},"periodSeconds":1},"readinessProbe":{"exec":{"command":["sh","-c","echo x >>%s/ready"]},"periodSeconds":1}}]' "$d" "$d")
	serve_begin
	serve_start a u1 "$cs" >&4
	# initial values, then readiness turns success; and liveness has run
	wait_until 200 0.1 has_lines "$out" 3
	wait_until 50 0.1 test -s "$d/live"
	echo '{"op":"stop","uid":"u1","types":["liveness"]}' >&4
	wait_until 200 0.1 has_lines "$out" 4
	local live ready
	live=$(wc -l <"$d/live")
	ready=$(wc -l <"$d/ready")
	# readiness kept its period, twice more: liveness, of the same period,
	# had no attempt after the stop line
	wait_until 200 0.1 has_lines "$d/ready" $((ready + 2))
	[ "$(wc -l <"$d/live")" = "$live" ]
	kill -TERM "$SERVE_PID"
	local rc=0
	wait "$SERVE_PID" || rc=$?
	exec 4>&-
	[ "$rc" = 0 ]
	run -0 grep -c '"stopped":true' "$out"
	[ "$output" = 1 ]
	run -0 grep '"stopped":true' "$out"
	[ "$output" = '{"pod":"ns/a","uid":"u1","container":"c","type":"liveness","result":"unknown","output":"","stopped":true}' ]
}

@test "probe-run: --serve bad lines: each named on stderr, skipped, the rest served, exit 2" {
	local good
	good=$(serve_start ok u9 "$(ready_c /success)")
	run -2 --separate-stderr probe-run --serve <<EOF
not json
[1]
{"pod":{}}
{"op":"restart"}
{"op":"start"}
{"op":"start","pod":{"metadata":{"name":"x"},"spec":{}}}
{"op":"start","pod":{"metadata":{"name":"x","uid":"u"},"spec":{"containers":[{"name":"c","livenessProbe":{}}]}}}
{"op":"stop"}
{"op":"stop","uid":"u","types":["sideways"]}

$good
{"op":"stop","uid":"nobody"}
EOF
	[ "$output" = '{"pod":"ns/ok","uid":"u9","container":"c","type":"readiness","result":"failure","output":""}' ]
	lines_are --stderr \
		"probe-run: <stdin>:1:1: unexpected 'n', expected a value" \
		"probe-run: <stdin>:2: Invalid value: an array: must be an object" \
		"probe-run: <stdin>:3: op: Required value" \
		'probe-run: <stdin>:4: op: Unsupported value: "restart": supported values: "start", "stop"' \
		"probe-run: <stdin>:5: pod: Required value: a Pod object, or its podFile" \
		"probe-run: <stdin>:6: pod.metadata.uid: Required value" \
		"probe-run: <stdin>:7: pod.spec.containers[0].livenessProbe: Required value: must specify a handler type" \
		"probe-run: <stdin>:8: uid: Required value" \
		'probe-run: <stdin>:9: types[0]: Unsupported value: supported values: "liveness", "readiness", "startup"'
}

# pod_file FILE NAME UID CONTAINERS-JSON: a pod as its file, as kt-agent keeps one
pod_file() {
	printf '{"metadata":{"name":"%s","namespace":"ns","uid":"%s"},"spec":{"containers":%s}}\n' \
		"$2" "$3" "$4" >"$1"
}

@test "probe-run: --serve starts a pod by its file, the agent's request through probes.jq; a pod without probes costs nothing" {
	local d="$BATS_TEST_TMPDIR" line
	local p='"pod":"ns/web","uid":"u1","container":"c","type":"readiness"'
	pod_file "$d/web.json" web u1 "$(ready_c /success)"
	pod_file "$d/quiet.json" quiet u2 '[{"name":"c","image":"x"}]'
	mkfifo "$d/in" "$d/out"
	probe-run --serve <"$d/in" >"$d/out" 2>"$d/err" 3>&- &
	SERVE_PID=$!
	exec 4>"$d/in" 5<"$d/out"
	# kt-agent's requests for every pod it has, as it sends them: the pod
	# without probes and its stop say nothing, the other is probed
	printf 'start\t@%s\nstop\tu2\nstart\t@%s\n' "$d/quiet.json" "$d/web.json" |
		jq -R -c -f "$KT_SRCDIR/agent/probes.jq" >&4
	read -r line <&5
	[ "$line" = "{$p,\"result\":\"failure\",\"output\":\"\"}" ]
	read -r line <&5
	[ "$line" = "{$p,\"result\":\"success\",\"output\":\"ok\"}" ]
	# the same uid from a changed file starts over with the file's new spec
	pod_file "$d/web.json" web u1 "$(ready_c /fail)"
	printf '{"op":"start","podFile":"%s"}\n' "$d/web.json" >&4
	read -r line <&5
	[ "$line" = "{$p,\"result\":\"unknown\",\"output\":\"\",\"stopped\":true}" ]
	read -r line <&5
	[ "$line" = "{$p,\"result\":\"failure\",\"output\":\"\"}" ]
	exec 4>&-
	# the end of the input ends the run, and nothing more was said
	! read -r line <&5
	local rc=0
	wait "$SERVE_PID" || rc=$?
	[ "$rc" = 0 ]
	[ ! -s "$d/err" ]
}

@test "probe-run: --serve refuses a bad podFile on its line and serves the next one" {
	local d="$BATS_TEST_TMPDIR"
	pod_file "$d/web.json" web u1 "$(ready_c /success)"
	printf '{"metadata":{"name":"x","uid":"u"},,}\n' >"$d/bad.json"
	printf '{"metadata":{"name":"x"},"spec":{}}\n' >"$d/nouid.json"
	run -2 --separate-stderr probe-run --serve <<EOF
{"op":"start","podFile":"$d/none.json"}
{"op":"start","podFile":"$d/bad.json"}
{"op":"start","podFile":"$d/web.json","pod":{"metadata":{"name":"x","uid":"u"}}}
{"op":"start","podFile":7}
{"op":"start","podFile":""}
{"op":"start","podFile":"$d/nouid.json"}
{"op":"start","podFile":"$d/web.json"}
EOF
	[ "$output" = '{"pod":"ns/web","uid":"u1","container":"c","type":"readiness","result":"failure","output":""}' ]
	lines_are --stderr \
		"probe-run: <stdin>:1: podFile: cannot open '$d/none.json': No such file or directory" \
		"probe-run: <stdin>:2: podFile: $d/bad.json:1:36: unexpected ',', expected a string key" \
		"probe-run: <stdin>:3: podFile: give pod or podFile, not both" \
		"probe-run: <stdin>:4: podFile: expected a file name, got a number" \
		"probe-run: <stdin>:5: podFile: an empty file name" \
		"probe-run: <stdin>:6: pod.metadata.uid: Required value"
}

@test "probe-run: --serve refuses a podFile over --max-input, and goes on" {
	local d="$BATS_TEST_TMPDIR"
	pod_file "$d/web.json" web u1 "$(ready_c /success)"
	printf '{"metadata":{"name":"w","uid":"u2"}}\n' >"$d/small.json"
	run -2 --separate-stderr probe-run --serve --max-input=100 <<EOF
{"op":"start","podFile":"$d/web.json"}
{"op":"start","podFile":"$d/small.json"}
EOF
	[ -z "$output" ]
	lines_are --stderr "probe-run: <stdin>:1: podFile: $d/web.json:1:1: document larger than 100 bytes (see --max-input)"
}

@test "probe-run: --serve refuses a line over --max-input, whole or still coming, and goes on" {
	{
		printf '{"op":"stop","uid":"%0300d"}\n' 0
		echo '{"op":"stop","uid":"x"}'
		head -c 200000 /dev/zero | tr '\0' 'a'
		printf '\n{"op":"zap"}'
	} >"$BATS_TEST_TMPDIR/cmds"
	run -2 --separate-stderr sh -c 'cat "$1" | probe-run --serve --max-input=100' sh "$BATS_TEST_TMPDIR/cmds"
	[ -z "$output" ]
	lines_are --stderr \
		"probe-run: <stdin>:1: a line longer than --max-input (100 bytes)" \
		"probe-run: <stdin>:3: a line longer than --max-input (100 bytes)" \
		'probe-run: <stdin>:4: op: Unsupported value: "zap": supported values: "start", "stop"'
}

# ------------------------------------------------------------------- bad input

@test "probe-run: bad input table" {
	local pod="$BATS_TEST_TMPDIR/pod.json" bad="$BATS_TEST_TMPDIR/bad.json"
	sed "s/@PORT@/$HTTP/g" "$FIX/web.json" >"$pod"
	printf '{\n  "httpGet": {\n    "port": 80,,\n  }\n}\n' >"$bad"
	printf '{"httpGet": {"port": 80}}\n{"tcpSocket": {"port": 80}}\n' >"$BATS_TEST_TMPDIR/two.json"
	printf '{"metadata":{"name":"empty"},"spec":{"containers":[{"name":"a"}]}}\n' >"$BATS_TEST_TMPDIR/noprobe.json"
	printf '{"kind":"Pod","spec":{}}\n' >"$BATS_TEST_TMPDIR/notpod.json"
	echo '[]' >"$BATS_TEST_TMPDIR/array.json"
	local P='probe-run: <probe>: readinessProbe'
	# exit | stderr | arguments (separated by ' ;; ')
	local rows=(
		"2|$P: Required value: must specify a handler type|{}"
		"2|$P.httpGet: Forbidden: may not specify more than 1 handler type|{\"exec\":{\"command\":[\"true\"]},\"httpGet\":{\"port\":80}}"
		"2|$P.tcpSocket: Forbidden: may not specify more than 1 handler type|{\"httpGet\":{\"port\":80},\"tcpSocket\":{\"port\":80}}"
		"2|$P.periodSeconds: Invalid value: -1: must be greater than or equal to 0|{\"tcpSocket\":{\"port\":80},\"periodSeconds\":-1}"
		"2|$P.timeoutSeconds: Invalid value: -5: must be greater than or equal to 0|{\"tcpSocket\":{\"port\":80},\"timeoutSeconds\":-5}"
		"2|$P.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0|{\"tcpSocket\":{\"port\":80},\"initialDelaySeconds\":-1}"
		"2|$P.failureThreshold: Invalid value: -3: must be greater than or equal to 0|{\"tcpSocket\":{\"port\":80},\"failureThreshold\":-3}"
		"2|$P.successThreshold: Invalid value: -1: must be greater than or equal to 0|{\"tcpSocket\":{\"port\":80},\"successThreshold\":-1}"
		"2|$P.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive|{\"tcpSocket\":{\"port\":0}}"
		"2|$P.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive|{\"httpGet\":{\"port\":70000}}"
		"2|$P.httpGet.port: Not found: \"http\"|{\"httpGet\":{\"port\":\"http\"}}"
		"2|$P.httpGet.port: Invalid value: \"8080\": must contain at least one letter (a-z)|{\"httpGet\":{\"port\":\"8080\"}}"
		"2|$P.httpGet.port: Invalid value: 80.5: must be an integer|{\"httpGet\":{\"port\":80.5}}"
		"2|$P.httpGet.port: Required value|{\"httpGet\":{\"path\":\"/\"}}"
		"2|$P.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"|{\"httpGet\":{\"port\":80,\"scheme\":\"FTP\"}}"
		"2|$P.httpGet.scheme: Unsupported value: \"https\": supported values: \"HTTP\", \"HTTPS\"|{\"httpGet\":{\"port\":80,\"scheme\":\"https\"}}"
		"2|$P.httpGet.httpHeaders[0].name: Invalid value: \"\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name')|{\"httpGet\":{\"port\":80,\"httpHeaders\":[{\"value\":\"v\"}]}}"
		"2|$P.httpGet.httpHeaders[1].name: Invalid value: \"X Bad\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name')|{\"httpGet\":{\"port\":80,\"httpHeaders\":[{\"name\":\"A\",\"value\":\"v\"},{\"name\":\"X Bad\",\"value\":\"v\"}]}}"
		"2|probe-run: <probe>: livenessProbe.successThreshold: Invalid value: 2: must be 1|--probe=liveness ;; {\"tcpSocket\":{\"port\":80},\"successThreshold\":2}"
		"2|probe-run: <probe>: startupProbe.successThreshold: Invalid value: 3: must be 1|--probe=startup ;; {\"tcpSocket\":{\"port\":80},\"successThreshold\":3}"
		"2|$P.terminationGracePeriodSeconds: Forbidden: must not be set for readinessProbes|{\"tcpSocket\":{\"port\":80},\"terminationGracePeriodSeconds\":10}"
		"2|probe-run: <probe>: livenessProbe.terminationGracePeriodSeconds: Invalid value: -1: must be greater than 0|--probe=liveness ;; {\"tcpSocket\":{\"port\":80},\"terminationGracePeriodSeconds\":-1}"
		"2|$P.exec.command: Required value|{\"exec\":{}}"
		"2|$P.exec.command[0]: Invalid value: 7: must be a string|{\"exec\":{\"command\":[7]}}"
		"2|$P.grpc.port: Invalid value: \"grpc\": must be an integer|{\"grpc\":{\"port\":\"grpc\"}}"
		"2|$P.periodSeconds: Invalid value: \"10\": must be an integer|{\"tcpSocket\":{\"port\":80},\"periodSeconds\":\"10\"}"
		"2|probe-run: $BATS_TEST_TMPDIR/array.json: readinessProbe: Invalid value: must be an object|$BATS_TEST_TMPDIR/array.json"
		"2|$P.httpGet: Invalid value: must be an object|{\"httpGet\":7}"
		"2|probe-run: $bad:3:16: unexpected ',', expected a string key|$bad"
		"2|probe-run: $BATS_TEST_TMPDIR/two.json:2:1: unexpected data after the document|$BATS_TEST_TMPDIR/two.json"
		"2|probe-run: $FIX/nohandler.json: spec.containers[0].livenessProbe: Required value: must specify a handler type|--pod=$FIX/nohandler.json"
		"2|probe-run: $FIX/liveness2.yaml: spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1|--pod=$FIX/liveness2.yaml"
		"2|probe-run: $FIX/namedport.json: spec.initContainers[1].readinessProbe.tcpSocket.port: Not found: \"admin\"|--pod=$FIX/namedport.json"
		"2|probe-run: $pod: pod 'web' has no container 'nope'|--pod=$pod ;; --container=nope"
		"2|probe-run: no probe to run|--pod=$BATS_TEST_TMPDIR/noprobe.json"
		"2|probe-run: $BATS_TEST_TMPDIR/notpod.json: not a Pod: metadata.name is missing|--pod=$BATS_TEST_TMPDIR/notpod.json"
		"2|probe-run: cannot open '$BATS_TEST_TMPDIR/missing.json': No such file or directory|$BATS_TEST_TMPDIR/missing.json"
		"2|probe-run: invalid value 'sideways' for --probe: expected liveness, readiness or startup|--probe=sideways ;; {}"
		"2|probe-run: --pod and --pods cannot be used together|--pod=$pod ;; --pods=$pod"
		"2|probe-run: --container needs --pod, --pods or --serve|--container=app ;; {}"
		"2|probe-run: --once and --watch cannot be used together|--once ;; --watch ;; {}"
		"2|probe-run: --serve reads pods from standard input: no --pod, --pods or <probe>|--serve ;; {}"
		"2|probe-run: --timeout needs --until-ready|--timeout=5s ;; {}"
		"2|probe-run: unexpected operand 'b.json'|a.json ;; b.json"
		"2|probe-run: unexpected operand 'x.json' with --pod or --pods|--pod=$pod ;; x.json"
		"2|probe-run: invalid value '' for --host: must not be empty|--host= ;; {}"
		"2|probe-run: invalid value '' for --exec-via: must not be empty|--exec-via= ;; {}"
	)
	local row code want args arg
	for row in "${rows[@]}"; do
		IFS='|' read -r code want args <<<"$row"
		local argv=()
		while [ -n "$args" ]; do
			arg=${args%% ;; *}
			argv+=("$arg")
			[ "$arg" = "$args" ] && break
			args=${args#* ;; }
		done
		run --separate-stderr probe-run "${argv[@]}"
		if [ "$status" != "$code" ] || [ -n "$output" ] || [ "${stderr_lines[0]}" != "$want" ]; then
			printf 'args: %s\n got %s [%s] %s\nwant %s %s\n' "${argv[*]}" "$status" "$output" \
				"$stderr" "$code" "$want" >&2
			return 1
		fi
		case $want in
		*"invalid value"* | *"cannot be used"* | *"needs --"* | *"unexpected operand"* | *"--serve reads"*)
			[ "${stderr_lines[1]}" = "Try 'probe-run --help' for more information." ] || return 1
			[ "${#stderr_lines[@]}" = 2 ] || return 1
			;;
		*)
			[ "${#stderr_lines[@]}" = 1 ] || { echo "extra stderr: $stderr" >&2; return 1; }
			;;
		esac
	done
}
