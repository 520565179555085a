#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/exec/run.sh: what a kubectl exec and a kubectl port-forward cost on a
# kt-agent node, against the local API server, in one run:
#   - the provider's exec (true) spawned directly N times in a row (the
#     reference), the same through kubelet-serve with tests/exec-client (TLS,
#     the upgrade, the session, the provider's exec: what kubelet-serve adds is
#     the difference), and kubectl exec through the API server, N times each,
#     over WebSocket and SPDY: milliseconds a call and the ratio to the
#     provider's exec;
#   - SIZE MiB (default 1024) read from a server in the pod (the reader stops
#     at the count, not at the end of the connection) directly on
#     loopback (the reference) and through kubectl port-forward (the API
#     server's tunnel or splice, kubelet-serve's SPDY session, the provider's
#     port-forward), and through kubelet-serve alone with the test client in
#     kubectl's place: MiB/s and the ratio;
#   - kubelet-serve's own time a call, from its log (-v 2): the request to the
#     session's close, less the process's life;
#   - for each of those reads, the CPU seconds (user and system, from /proc
#     and the shell's times) of each process on the path: the pod's server,
#     the provider's copier (kubelet-serve's children), kubelet-serve, the
#     API server, the client (the test client, which counts what it reads
#     as the reader does, or kubectl) and the reader: where the rate goes.
# Run from a build directory (make check builds tests/exec-client).  N (default
# 100) sets the count (0: no exec rows).  Prints the tables.
set -u
build=$(pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
n=${N:-100}
size=${SIZE:-1024}
PATH="$build:$PATH"
export PATH
[ -x "$build/tests/exec-client" ] || { echo "bench/exec: no tests/exec-client in $build (make check)" >&2; exit 1; }
work=$(mktemp -d)
chmod 755 "$work"
api_pid="" agent_pid="" fwd_pid=""

cleanup() {
	[ -n "$fwd_pid" ] && kill "$fwd_pid" 2>/dev/null
	[ -n "$agent_pid" ] && kill -TERM "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
	[ -n "$api_pid" ] && kill "$api_pid" 2>/dev/null
	for f in "$work"/state/pods/*/containers/*/pid; do
		[ -f "$f" ] && kill -KILL "-$(cat "$f")" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

port_free() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }

python3 "$src/tests/apiserver/apiserver.py" --dir "$work/api" >"$work/api.log" 2>&1 &
api_pid=$!
while [ ! -e "$work/api/ready" ]; do sleep 0.1; done
KUBECONFIG=$work/api/kubeconfig
export KUBECONFIG
kport=$(port_free)
KT_AGENT_LIBDIR=$src/agent kt-agent --node=bench --state-dir="$work/state" -q \
	--kubelet-port="$kport" --kubelet-address=127.0.0.1 --client-ca-file="$work/api/ca.crt" \
	--tls-cert-file="$work/api/server.crt" --tls-private-key-file="$work/api/server.key" \
	2>"$work/agent.log" &
agent_pid=$!
kube-wait "node/bench" --timeout=60s \
	--for="jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}=$kport" >/dev/null
sport=$(port_free)
cat >"$work/source.py" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
block = b"x" * (1 << 20)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    for _ in range(int(sys.argv[2])):
        c.sendall(block)
    c.close()
PY
chmod 644 "$work/source.py"
printf '%s\n' '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"default"},
 "spec":{"nodeName":"bench","tolerations":[{"key":"kubelet-tools.io/provider","operator":"Exists","effect":"NoSchedule"}],
  "containers":[{"name":"main","image":"sh","command":["python3","-u","'"$work/source.py"'","'"$sport"'","'"$size"'"]}]}}' >"$work/pod.json"
kube-request POST /api/v1/namespaces/default/pods "$work/pod.json" >/dev/null
kube-wait pod/b --for=jsonpath='{.status.phase}'=Running --timeout=60s >/dev/null
uid=$(kube-request GET /api/v1/namespaces/default/pods/b | jq -r .metadata.uid)
# the server says when it listens (a pipe into grep would wait for the
# follower's next write)
mkfifo "$work/log"
kubectl logs -f b >"$work/log" &
log_pid=$!
grep -m 1 -q listening <"$work/log"
kill "$log_pid"

# ms a call of N calls of "$@"
per_call() {
	t0=$(now)
	i=0
	while [ $i -lt "$n" ]; do
		"$@" >/dev/null 2>&1 || { echo "bench/exec: $* failed" >&2; exit 1; }
		i=$((i + 1))
	done
	t1=$(now)
	echo "$t0 $t1 $n" | awk '{ printf "%.2f", ($2 - $1) * 1000 / $3 }'
}
client() {
	"$build/tests/exec-client" --port="$kport" --ca="$work/api/ca.crt" \
		--cert="$work/api/kubelet-client.crt" --key="$work/api/kubelet-client.key" "$@"
}
if [ "$n" -gt 0 ]; then
	direct=$(KT_STATE_DIR=$work/state per_call "$src/agent/provider/exec" "$uid" main -- true)
	serve_spdy=$(per_call client --spdy=v4.channel.k8s.io --streams=stdout,stderr,error \
		"/exec/default/b/main?command=true&output=1&error=1")
	serve_ws=$(per_call client --ws=v5.channel.k8s.io --method=GET \
		"/exec/default/b/main?command=true&output=1&error=1")
	# kubelet-serve's own share, from its log: a second one on the node's state
	# (AlwaysAllow: no SubjectAccessReview to the API server), -v 2; per call, the
	# time from the request (authenticated) to the session's end, less the
	# process's own life (started to ended): what the server adds around the
	# command, which the provider's exec spawned directly does not pay
	vport=$(port_free)
	kubelet-serve --state-dir="$work/state" --address=127.0.0.1 --port="$vport" \
		--tls-cert-file="$work/api/server.crt" --tls-private-key-file="$work/api/server.key" \
		--client-ca-file="$work/api/ca.crt" --authorization-mode=AlwaysAllow \
		--provider="$src/agent/provider" -v 2 --log-file="$work/serve-v2.log" &
	serve_pid=$!
	own() { # exec-client options: ms a call of kubelet-serve's own
		from=$(wc -l <"$work/serve-v2.log")
		kport_saved=$kport
		kport=$vport
		per_call client "$@" "/exec/default/b/main?command=true&output=1&error=1" >/dev/null
		kport=$kport_saved
		awk -v from="$from" '
		NR <= from { next }
		function t(s,  a) { split(s, a, ":"); return (a[1] * 3600 + a[2] * 60 + a[3]) * 1000 }
		/"request"/ { r = t($2) }
		/"process started"/ { ps = t($2) }
		/"process ended"/ { life += t($2) - ps }
		/"stream session closed"/ { total += t($2) - r; n++ }
		END { if (n) printf "%.2f", (total - life) / n }' "$work/serve-v2.log"
	}
	until [ -s "$work/serve-v2.log" ]; do sleep 0.1; done
	own_spdy=$(own --spdy=v4.channel.k8s.io --streams=stdout,stderr,error)
	own_ws=$(own --ws=v5.channel.k8s.io --method=GET)
	kill "$serve_pid"
	kubectl_ws=$(KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true per_call kubectl exec b -- true)
	kubectl_spdy=$(KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false per_call kubectl exec b -- true)
fi

# port-forward: SIZE MiB read to the end
read_all() {
	python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
n, want = 0, int(sys.argv[2])
while n < want:
    got = c.recv(1 << 18)
    if not got:
        break
    n += len(got)
print(n)' "$1" $((size * 1048576))
}
mib_s() { # port
	t0=$(now)
	got=$(read_all "$1")
	t1=$(now)
	[ "$got" = $((size * 1048576)) ] || { echo "bench/exec: read $got bytes" >&2; exit 1; }
	echo "$t0 $t1 $size" | awk '{ printf "%.0f", $3 / ($2 - $1) }'
}
# CPU seconds: of a process and of its children reaped (from /proc), of
# this shell's children reaped (from times, in the shell that reaps them)
tck=$(getconf CLK_TCK)
proc_cpu() { awk -v t="$tck" '{ printf "%.2f %.2f\n", ($14 + $15) / t, ($16 + $17) / t }' "/proc/$1/stat"; }
kids_cpu() { # a file that times wrote (in a substitution, times is the subshell's)
	awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); n += a[1] * 60 + a[2] } printf "%.2f\n", n }' "$1"
}
minus() { echo "$1 $2" | awk '{ printf "%.2f", $1 - $2 }'; }
agent_serve_pid=$(cat "$work/state/kubelet-serve.pid")
source_pid=$(pgrep -f "$work/source.py" | head -n 1)
# "server copier kubelet-serve": before and after
node_cpu() { echo "$(proc_cpu "$source_pid" | cut -d' ' -f1) $(proc_cpu "$agent_serve_pid")"; }
node_delta() { # before after: the three columns
	echo "$1 $2" | awk '{ printf "%.2f %.2f %.2f", $4 - $1, $6 - $3, $5 - $2 }'
}
n0=$(node_cpu)
times >"$work/times0"
pf_direct=$(mib_s "$sport") || exit 1
times >"$work/times1"
cpu_direct="$(node_delta "$n0" "$(node_cpu)" | cut -d' ' -f1) - - - - $(minus "$(kids_cpu "$work/times1")" "$(kids_cpu "$work/times0")")"
# the node's share: the same read through kubelet-serve's SPDY session and the
# provider's port-forward, with the test client in kubectl's place and no API
# server between (its end of input sent at once: the copy goes on until the
# pod's side ends); it counts the bytes, as the loopback reader does
n0=$(node_cpu)
times >"$work/times0"
t0=$(now)
client --spdy=portforward.k8s.io --forward="$sport" --stdin=/dev/null \
	--count "/portForward/default/b" >"$work/pf-serve"
t1=$(now)
times >"$work/times1"
cpu_serve="$(node_delta "$n0" "$(node_cpu)") - $(minus "$(kids_cpu "$work/times1")" "$(kids_cpu "$work/times0")") -"
[ "$(cat "$work/pf-serve")" = $((size * 1048576)) ] ||
	{ echo "bench/exec: read $(cat "$work/pf-serve") bytes through kubelet-serve" >&2; exit 1; }
pf_serve=$(echo "$t0 $t1 $size" | awk '{ printf "%.0f", $3 / ($2 - $1) }')
fwd() { # mode
	lport=$(port_free)
	mkfifo "$work/fwd-$1"
	KUBECTL_PORT_FORWARD_WEBSOCKETS=$1 kubectl port-forward pod/b "$lport:$sport" >"$work/fwd-$1" 2>/dev/null &
	fwd_pid=$!
	# held open: kubectl says "Handling connection" on it later
	exec 7<"$work/fwd-$1"
	grep -m 1 -q '^Forwarding' <&7
	n0=$(node_cpu)
	a0=$(proc_cpu "$api_pid" | cut -d' ' -f1)
	c0=$(proc_cpu "$fwd_pid" | cut -d' ' -f1)
	times >"$work/times0"
	r=$(mib_s "$lport") || exit 1
	times >"$work/times1"
	c1=$(proc_cpu "$fwd_pid" | cut -d' ' -f1)
	a1=$(proc_cpu "$api_pid" | cut -d' ' -f1)
	echo "$(node_delta "$n0" "$(node_cpu)") $(minus "$a1" "$a0") $(minus "$c1" "$c0")" \
		"$(minus "$(kids_cpu "$work/times1")" "$(kids_cpu "$work/times0")")" >"$work/cpu-$1"
	kill "$fwd_pid"
	wait "$fwd_pid" 2>/dev/null
	exec 7<&-
	fwd_pid=""
	echo "$r"
}
pf_ws=$(fwd true) || exit 1
pf_spdy=$(fwd false) || exit 1
cpu_ws=$(cat "$work/cpu-true")
cpu_spdy=$(cat "$work/cpu-false")

ratio() { echo "$1 $2" | awk '{ printf "%.2f", $1 / $2 }'; }
if [ "$n" -gt 0 ]; then
	printf '%-52s %12s %8s\n' "kubectl exec POD -- true ($n in a row)" "ms a call" "ratio"
	printf '%-52s %12s %8s\n' "provider exec spawned directly (reference)" "$direct" 1.00
	printf '%-52s %12s %8s\n' "kubelet-serve, exec-client, SPDY/3.1" "$serve_spdy" "$(ratio "$serve_spdy" "$direct")"
	printf '%-52s %12s %8s\n' "kubelet-serve, exec-client, WebSocket" "$serve_ws" "$(ratio "$serve_ws" "$direct")"
	printf '%-52s %12s\n' "kubelet-serve's own time a call, SPDY/3.1 (its log)" "$own_spdy"
	printf '%-52s %12s\n' "kubelet-serve's own time a call, WebSocket (its log)" "$own_ws"
	printf '%-52s %12s %8s\n' "kubectl exec via the API server, WebSocket" "$kubectl_ws" "$(ratio "$kubectl_ws" "$direct")"
	printf '%-52s %12s %8s\n' "kubectl exec via the API server, SPDY/3.1" "$kubectl_spdy" "$(ratio "$kubectl_spdy" "$direct")"
fi
printf '\n%-52s %12s %8s\n' "$size MiB from a server in the pod" "MiB/s" "ratio"
printf '%-52s %12s %8s\n' "loopback, directly (reference)" "$pf_direct" 1.00
printf '%-52s %12s %8s\n' "kubelet-serve, exec-client, SPDY/3.1 (no API server)" "$pf_serve" "$(ratio "$pf_serve" "$pf_direct")"
printf '%-52s %12s %8s\n' "kubectl port-forward, WebSocket tunnel" "$pf_ws" "$(ratio "$pf_ws" "$pf_direct")"
printf '%-52s %12s %8s\n' "kubectl port-forward, SPDY/3.1" "$pf_spdy" "$(ratio "$pf_spdy" "$pf_direct")"
printf '\n%-44s %7s %7s %7s %7s %7s %7s\n' "CPU seconds for $size MiB, by process" server copier serve API client reader
cpu_row() { # label figures
	label=$1
	shift
	# shellcheck disable=SC2086
	printf '%-44s %7s %7s %7s %7s %7s %7s\n' "$label" $1
}
cpu_row "loopback, directly (reference)" "$cpu_direct"
cpu_row "kubelet-serve, exec-client, SPDY/3.1" "$cpu_serve"
cpu_row "kubectl port-forward, WebSocket tunnel" "$cpu_ws"
cpu_row "kubectl port-forward, SPDY/3.1" "$cpu_spdy"
