#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kubelet-serve's exec, attach and port-forward: a real server on loopback with
# the built-in provider and a real state directory, driven by tests/exec-client
# over SPDY/3.1 and WebSocket: the streams, the exit status, a terminal, every
# refusal, hostile clients and the timeouts

load helper

setup_file() {
	"$BATS_TEST_DIRNAME/fixtures/kubelet-serve/certs.sh" "$BATS_FILE_TMPDIR/pki"
}

setup() {
	serve_state app:busybox
	# a running container as the provider's exec finds it: its argv, no exit
	echo 'tail -f /dev/null' >"$POD/containers/app/argv"
	EXEC=/exec/default/web-1/app
}

teardown() {
	stop_jobs
}

# serve [OPTIONS...]: kubelet-serve with the built-in provider; $port, $srv_pid
serve() {
	serve_kubelet --provider="$KT_SRCDIR/agent/provider" "$@"
}

# client [OPTIONS...] PATH: tests/exec-client against the server, in place of
# the shell that runs it (through run, or in the background: its pid is $!)
client() {
	exec "$KT_BUILDDIR/tests/exec-client" --port="$port" --ca="$PKI/ca.crt" \
		--cert="$PKI/client.crt" --key="$PKI/client.key" "$@"
}

# q WORD...: the command query of the words
q() {
	local w out=
	for w in "$@"; do
		out+="command=$(jq -rn --arg w "$w" '$w | @uri')&"
	done
	printf '%s' "${out%&}"
}

# what kubelet-serve holds besides its sockets (pipes, terminals, pidfds, files),
# and its children
held() {
	local fd n=0
	for fd in /proc/"$srv_pid"/fd/*; do
		case $(readlink "$fd") in socket:*) ;; *) n=$((n + 1)) ;; esac
	done
	echo "fds=$n children=$(wc -w </proc/"$srv_pid"/task/"$srv_pid"/children)"
}

# a plain request, answered after whatever the server was doing
healthz() {
	curl -sS --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" \
		"https://127.0.0.1:$port/healthz"
}

OUT_ERR_3=$(printf '%s' 'echo out; echo err >&2; exit 3')

@test "exec over SPDY (v4): stdout and stderr on their streams, the exit status 3" {
	serve
	run --separate-stderr client --spdy=v4.channel.k8s.io --streams=stdout,stderr,error \
		--status="$T/status" "$EXEC?$(q sh -c "$OUT_ERR_3")&output=1&error=1"
	[ "$status" = 0 ]
	lines_are out
	lines_are --stderr err
	output=$(head -n 1 "$T/status")
	jq_is '[.status, .reason, .details.causes[0].reason, .details.causes[0].message]' \
		'["Failure","NonZeroExitCode","ExitCode","3"]'
	# the streams closed, then the connection with a GOAWAY
	[ "$(tail -n 1 "$T/status")" = "GOAWAY 0" ]
}

@test "exec over WebSocket: v5, v4 and v4 in base64 give the same streams and status" {
	serve
	local p
	for p in v5.channel.k8s.io v4.channel.k8s.io v4.base64.channel.k8s.io; do
		run --separate-stderr client --ws="$p" --method=GET --status="$T/status" \
			"$EXEC?$(q sh -c "$OUT_ERR_3")&output=1&error=1"
		[ "$status" = 0 ]
		lines_are out
		lines_are --stderr err
		output=$(cat "$T/status")
		jq_is '[.status, .reason, .details.causes[0].message]' \
			'["Failure","NonZeroExitCode","3"]'
	done
	# channel.k8s.io (v1) says the end as text
	run --separate-stderr client --ws=channel.k8s.io --method=GET --status="$T/status" \
		"$EXEC?$(q sh -c "$OUT_ERR_3")&output=1&error=1"
	lines_are out
	[ "$(cat "$T/status")" = "command terminated with non-zero exit code: exit status 3" ]
}

@test "stdin is passed through and its end seen (SPDY FIN, WebSocket v5 close)" {
	serve
	printf 'hello\nworld\n' >"$T/in"
	run_ok client --spdy=v4.channel.k8s.io --streams=stdin,stdout,error --stdin="$T/in" \
		--status="$T/status" "$EXEC?$(q sh -c 'cat; echo end')&input=1&output=1"
	lines_are hello world end
	output=$(head -n 1 "$T/status")
	jq_is .status '"Success"'
	run_ok client --ws=v5.channel.k8s.io --stdin="$T/in" --status="$T/status" \
		"$EXEC?$(q sh -c 'cat; echo end')&input=1&output=1"
	lines_are hello world end
	output=$(cat "$T/status")
	jq_is .status '"Success"'
	# more than a window of input, which the process takes as it reads
	head -c 300000 /dev/zero | tr '\0' x >"$T/big"
	run_ok client --spdy=v4.channel.k8s.io --streams=stdin,stdout,error --stdin="$T/big" \
		--status="$T/status" "$EXEC?$(q wc -c)&input=1&output=1"
	lines_are 300000
}

@test "output larger than every buffer and window arrives whole, in order" {
	serve
	local p
	seq 1 400000 >"$T/want"
	# --flow: a client that keeps windows, and fails if the server sends past one
	for p in --spdy=v4.channel.k8s.io "--spdy=v4.channel.k8s.io --flow" --ws=v5.channel.k8s.io; do
		# stdout,error opens SPDY's streams; WebSocket has its channels at once
		# shellcheck disable=SC2086 # $p is one or two options
		(client $p --streams=stdout,error --status="$T/status" \
			"$EXEC?$(q seq 1 400000)&output=1") >"$T/got"
		cmp "$T/want" "$T/got"
		output=$(head -n 1 "$T/status")
		jq_is .status '"Success"'
	done
}

@test "a terminal: tty is a device, the size the client sent is the terminal's" {
	serve
	echo go >"$T/go"
	run_ok client --spdy=v4.channel.k8s.io --streams=stdin,stdout,error,resize \
		--resize=100x33 --stdin="$T/go" --status="$T/status" \
		"$EXEC?$(q sh -c 'tty; read x; stty size')&input=1&output=1&tty=1"
	# the terminal echoes the input (before or after tty's line, as the
	# process runs); its lines end in CR LF
	tr -d '\r' <<<"$output" >"$T/out"
	grep -qx '/dev/pts/[0-9]*' "$T/out"
	grep -qx '33 100' "$T/out"
	grep -qx go "$T/out"
	output=$(head -n 1 "$T/status")
	jq_is .status '"Success"'
	# the same over WebSocket v5
	run_ok client --ws=v5.channel.k8s.io --resize=80x24 --stdin="$T/go" \
		--status="$T/status" \
		"$EXEC?$(q sh -c 'read x; stty size; ps -o tty= -p $$; echo fds $(ls /proc/self/fd)')&input=1&output=1&tty=1"
	tr -d '\r' <<<"$output" >"$T/out"
	grep -qx '24 80' "$T/out"
	# the terminal is the controlling one of the program's session, and the
	# program holds nothing of the server's: fds 0, 1, 2 (3 is ls's own)
	grep -q '^pts/[0-9]' "$T/out"
	grep -qx 'fds 0 1 2 3' "$T/out"
}

@test "bad requests: the kubelet's 400s, 404 before any upgrade, 403 with the versions" {
	serve
	local uid2=0b6c0a4e-0000-4000-8000-0000000000ff
	while IFS='|' read -r path want; do
		run_ok client --spdy=v4.channel.k8s.io "$path"
		[ "$(printf '%s\n' "${lines[@]}" | paste -sd'|')" = "$want" ] ||
			{ echo "$path: got ${lines[*]}, want $want" >&2; false; }
	done <<-EOF
	$EXEC?output=1|400|you must specify at least one command for the container
	$EXEC?command=ls|400|you must specify at least 1 of stdin, stdout, stderr
	$EXEC?command=ls&output=1&error=1&tty=1|400|tty and stderr cannot both be true: a terminal has one output
	/exec/default/web-1/nope?command=ls&output=1|404|container not found ("nope")
	/exec/default/web-2/app?command=ls&output=1|404|pod does not exist
	/exec/default/web-1/$uid2/app?command=ls&output=1|404|pod does not exist
	/attach/default/web-1/nope?output=1|404|container not found ("nope")
	EOF
	run_ok client --spdy=v9.channel.k8s.io "$EXEC?command=ls&output=1"
	lines_are 403 'accepted: v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io' \
		'unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], server accepts [v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io]'
	run_ok client "$EXEC?command=ls&output=1"
	lines_are 400 'unable to upgrade: missing upgrade headers in request'
	run_ok client --ws=v9.channel.k8s.io "$EXEC?command=ls&output=1"
	[ "${lines[0]}" = 400 ]
	[[ ${lines[1]} == "requested protocol(s) are not supported: [v9.channel.k8s.io]"* ]]
	run_ok client --spdy=v4.channel.k8s.io "/portForward/default/web-1"
	lines_are 403 'accepted: portforward.k8s.io' \
		'unable to upgrade: unable to negotiate protocol: client supports [v4.channel.k8s.io], server accepts [portforward.k8s.io]'
	run_ok client --spdy=v4.channel.k8s.io --method=PUT "$EXEC?command=ls&output=1"
	lines_are 405 'Method Not Allowed'
	# nothing was started for any of them
	[ "$(held)" = "$(held)" ]
	run ! grep -q '"process started"' "$T/serve.log"
}

# hostile MODE STREAMS: a client that breaks the protocol once its streams are
# open; the connection ends with a GOAWAY, nothing is left behind, and the
# server goes on serving
hostile() {
	local before
	before=$(held)
	run_ok client --spdy=v4.channel.k8s.io --streams="$2" --hostile="$1" \
		--status="$T/status" "$EXEC?$(q cat)&input=1&output=1"
	[ "$(tail -n 1 "$T/status")" = "GOAWAY ${3:-1}" ] ||
		{ echo "$1: $(cat "$T/status")" >&2; false; }
	run_ok healthz
	[ "$output" = ok ]
	[ "$(held)" = "$before" ] || { echo "$1: before $before, after $(held)" >&2; false; }
}

@test "hostile SPDY clients: a frame too large, a zlib bomb, a stream id reused, a window overrun" {
	serve
	hostile big-frame stdin,stdout,error
	grep -q 'why="a frame is longer than the limit"' "$T/serve.log"
	hostile zlib-bomb stdout
	hostile reuse-id stdin,stdout,error
	grep -q 'why="stream id 5 reused or out of order"' "$T/serve.log"
	hostile overrun stdin,stdout,error 7
	grep -q 'why="the client overran its window"' "$T/serve.log"
}

@test "a hostile WebSocket client: an unmasked frame ends the session, nothing is left" {
	serve
	local before
	before=$(held)
	run_ok client --ws=v5.channel.k8s.io --hostile=unmasked --status="$T/status" \
		"$EXEC?$(q cat)&input=1&output=1"
	[ ! -s "$T/status" ]
	grep -q 'why="a WebSocket protocol error"' "$T/serve.log"
	run_ok healthz
	[ "$output" = ok ]
	[ "$(held)" = "$before" ]
}

@test "a client that goes away: its process is killed and reaped, nothing is left" {
	serve
	mkfifo "$T/proc" "$T/hold"
	local before pid
	before=$(held)
	# the process says its pid on a fifo it keeps open: its end is the fifo's
	client --spdy=v4.channel.k8s.io --streams=stdout,error --wait-fd=5 \
		"$EXEC?$(q sh -c "exec 3>$T/proc; echo \$\$ >&3; exec sleep 1000")&output=1" \
		5<"$T/hold" &
	local cpid=$!
	exec 6>"$T/hold"
	exec 4<"$T/proc"
	read -r pid <&4
	kill -0 "$pid"
	kill -KILL "$cpid"
	# blocks until the process and its group are gone
	cat <&4
	exec 4<&- 6>&-
	run ! kill -0 "$pid"
	run_ok healthz
	[ "$(held)" = "$before" ]
}

@test "a client that never reads: the idle timeout ends the session and kills the process" {
	serve --stream-idle-timeout=1s
	mkfifo "$T/proc" "$T/hold"
	local before
	before=$(held)
	client --spdy=v4.channel.k8s.io --streams=stdout,error --hostile=no-read --wait-fd=5 \
		--status="$T/status" \
		"$EXEC?$(q sh -c "exec 3>$T/proc; echo \$\$ >&3; exec yes")&output=1" \
		5<"$T/hold" >/dev/null &
	local cpid=$!
	exec 6>"$T/hold"
	exec 4<"$T/proc"
	read -r pid <&4
	# the pipe ends when yes is killed
	cat <&4
	exec 4<&-
	run ! kill -0 "$pid"
	grep -q '"stream session timed out" why="idle"' "$T/serve.log"
	# the client reads again: what was sent, then the end of the connection
	exec 6>&-
	wait "$cpid"
	run_ok healthz
	[ "$(held)" = "$before" ]
}

@test "the stream creation timeout: a client that never opens its streams is closed" {
	serve --stream-creation-timeout=1s
	local before
	before=$(held)
	# stdout was asked for, only the error stream comes
	run_ok client --spdy=v4.channel.k8s.io --streams=error --status="$T/status" \
		"$EXEC?$(q echo never)&output=1"
	[ -z "$output" ]
	[ ! -s "$T/status" ]
	grep -q '"stream session timed out" why="the streams were not all created"' "$T/serve.log"
	run ! grep -q '"process started"' "$T/serve.log"
	[ "$(held)" = "$before" ]
}

@test "exec by the pod's UID, POST and GET, on a second state directory" {
	local p2=$T/state2/pods/0b6c0a4e-0000-4000-8000-000000000002
	mkdir -p "$p2/containers/db"
	echo prod >"$p2/ns"
	echo db-0 >"$p2/name"
	echo '{"metadata":{"name":"db-0","namespace":"prod"},"spec":{"containers":[{"name":"db"}]}}' \
		>"$p2/pod.json"
	echo 'tail -f /dev/null' >"$p2/containers/db/argv"
	serve --state-dir="$T/state2"
	run_ok client --spdy=v4.channel.k8s.io --streams=stdout,error --method=GET \
		"/exec/prod/db-0/0b6c0a4e-0000-4000-8000-000000000002/db?$(q sh -c 'echo "$HOSTNAME"')&output=1"
	# the provider ran with that pod's state directory: the pod's name
	lines_are db-0
}

@test "a container that is not running: the provider's status 126 and its message" {
	rm "$POD/containers/app/argv"
	serve
	run --separate-stderr client --spdy=v4.channel.k8s.io --streams=stdout,stderr,error \
		--status="$T/status" "$EXEC?$(q true)&output=1&error=1"
	[[ $stderr == *"container app of pod $UID1 is not running"* ]]
	output=$(head -n 1 "$T/status")
	jq_is '.details.causes[0].message' '"126"'
}

# a provider of the test's own with attach and port-forward, as the contract
# has them: attach UID CONTAINER, port-forward UID PORT (fds 0 and 1 the
# socket)
provider() {
	mkdir -p "$T/provider"
	cat >"$T/provider/attach" <<-'SH'
	#!/bin/sh
	echo "attached $1 $2 $KT_STATE_DIR"
	exec cat
	SH
	cat >"$T/provider/port-forward" <<-'SH'
	#!/bin/sh
	[ "$2" != 1 ] || { echo "no listener on port $2" >&2; exit 1; }
	echo "port $2 of $1"
	exec cat
	SH
	chmod +x "$T/provider/attach" "$T/provider/port-forward"
}

@test "attach: the provider's attach with the pod's UID and container, stdin through" {
	provider
	serve --provider="$T/provider"
	printf 'hi\n' >"$T/in"
	run_ok client --spdy=v4.channel.k8s.io --streams=stdin,stdout,error --stdin="$T/in" \
		--status="$T/status" "/attach/default/web-1/app?input=1&output=1"
	lines_are "attached $UID1 app $S" hi
	output=$(head -n 1 "$T/status")
	jq_is .status '"Success"'
	run_ok client --ws=v5.channel.k8s.io --stdin="$T/in" --status="$T/status" \
		"/attach/default/web-1/app?input=1&output=1"
	lines_are "attached $UID1 app $S" hi
}

@test "port-forward: a stream pair runs the provider's port-forward, data both ways" {
	provider
	serve --provider="$T/provider"
	printf 'ping\n' >"$T/in"
	run_ok client --spdy=portforward.k8s.io --forward=8080 --stdin="$T/in" \
		--status="$T/status" "/portForward/default/web-1"
	lines_are "port 8080 of $UID1" ping
	[ ! -s "$T/status" ]
	# a port the provider cannot reach: its stderr on the error stream
	run_ok client --spdy=portforward.k8s.io --forward=1 --stdin="$T/in" \
		--status="$T/status" "/portForward/default/web-1"
	[ -z "$output" ]
	[ "$(cat "$T/status")" = "no listener on port 1" ]
}
