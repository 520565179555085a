#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fleet bench: node-ping keeping NODES leases alive against a fast loopback responder
#
# Usage: bench/fleet/run.sh NODES [SECONDS] [INTERVAL_S] [NODE_PING]
#   NODES       how many nodes (vk-1 .. vk-NODES) one node-ping process renews
#   SECONDS     measuring window after one warm-up interval (default 30)
#   INTERVAL_S  the renew interval in seconds (default 10)
#   NODE_PING   the binary (default: node-ping on PATH)
# STATUS in the environment sets --status-interval (default 24h: leases only);
# WARMUP the seconds before the window (default one interval: the first
# renewal of each node reads the node too, so a big fleet's start-up backlog
# can outlast it)
#
# Prints one JSON line: nodes, renewals a second in the window, node-ping's
# CPU share of one core (and the responder's: both share the machine) and
# renewals per CPU-second, its peak RSS, and the
# renewal lateness (gap between two PUTs of a node, minus the interval) as
# the responder saw it.  Then runs a shell loop of curl PUTs against the same
# responder for comparison (renewals per CPU-second of curl and the shell).
set -eu

nodes=${1:?usage: run.sh NODES [SECONDS] [INTERVAL_S] [NODE_PING]}
window=${2:-30}
interval=${3:-10}
ping=${4:-node-ping}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-bench.XXXXXX")
port=$((20000 + $$ % 20000))
rpid=
ppid_=

cleanup() {
	[ -n "$ppid_" ] && kill -TERM "$ppid_" 2>/dev/null || true
	[ -n "$rpid" ] && kill -TERM "$rpid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

${CC:-cc} -std=gnu11 -O2 -D_GNU_SOURCE -o "$work/responder" "$here/responder.c"
"$work/responder" "$port" "$((interval * 1000))" "$nodes" >"$work/responder.out" &
rpid=$!
sleep 0.3
seq -f 'vk-%.0f' "$nodes" >"$work/nodes"

# utime + stime of a process, in clock ticks
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

"$ping" --server="http://127.0.0.1:$port" --interval="${interval}s" \
	--nodes-from="$work/nodes" --status-interval="${STATUS:-24h}" -o json >"$work/out" 2>"$work/err" &
ppid_=$!
sleep "${WARMUP:-$interval}"
kill -USR1 "$rpid"
c0=$(cpu_ticks "$ppid_")
r0=$(cpu_ticks "$rpid")
n0=$(wc -l <"$work/out")
t0=$(date +%s.%N)
sleep "$window"
c1=$(cpu_ticks "$ppid_")
r1=$(cpu_ticks "$rpid")
n1=$(wc -l <"$work/out")
t1=$(date +%s.%N)
rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$ppid_/status")
kill -TERM "$ppid_"
wait "$ppid_" || true
ppid_=
failed=$(grep -vc '"result":"renewed"\|"result":"created"' "$work/out" || true)
errs=$(wc -l <"$work/err")
head -3 "$work/err" >&2

# the curl loop: 200 PUTs, on names the responder does not time
count=200
printf '{"metadata":{"name":"vk-1","resourceVersion":"1"},"spec":{"holderIdentity":"vk-1","leaseDurationSeconds":40,"renewTime":"2026-11-30T00:00:00.000000Z"}}' >"$work/lease.json"
sh -c '
	i=1
	while [ "$i" -le "$1" ]; do
		curl -s -o /dev/null -X PUT -H "Content-Type: application/json" \
			--data-binary @"$2" \
			"http://127.0.0.1:$3/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vk-$((i + 1000000000))"
		i=$((i + 1))
	done
	times' sh "$count" "$work/lease.json" "$port" >"$work/curl-times"

kill -TERM "$rpid"
wait "$rpid" || true
rpid=

tck=$(getconf CLK_TCK)
awk -v nodes="$nodes" -v c0="$c0" -v c1="$c1" -v n0="$n0" -v n1="$n1" -v t0="$t0" \
	-v t1="$t1" -v r0="$r0" -v r1="$r1" -v rss="$rss" -v tck="$tck" -v failed="$failed" -v errs="$errs" \
	-v count="$count" -v resp="$(cat "$work/responder.out")" '
	function secs(s,   m, r) {	# "0m1.230s" -> 1.23
		m = s; sub(/m.*/, "", m); r = s; sub(/^[0-9]+m/, "", r); sub(/s$/, "", r)
		return m * 60 + r
	}
	NR == 2 { ccpu = secs($1) + secs($2) }	# children: curl and its shell
	END {
		wall = t1 - t0; cpu = (c1 - c0) / tck; ren = n1 - n0
		printf "{\"nodes\":%d,\"windowS\":%.1f,\"renewalsPerS\":%.1f,\"cpuShare\":%.3f,", nodes, wall, ren / wall, cpu / wall
		printf "\"responderCpuShare\":%.3f,", (r1 - r0) / tck / wall
		printf "\"renewalsPerCpuS\":%.0f,\"peakRssKiB\":%d,\"failedLines\":%d,\"stderrLines\":%d,", (cpu > 0 ? ren / cpu : 0), rss, failed, errs
		printf "\"curlPuts\":%d,\"curlCpuS\":%.2f,\"curlRenewalsPerCpuS\":%.0f,", count, ccpu, (ccpu > 0 ? count / ccpu : 0)
		printf "\"ratio\":%.1f,\"responder\":%s}\n", (ccpu > 0 && cpu > 0 ? (ren / cpu) / (count / ccpu) : 0), resp
	}' "$work/curl-times"
