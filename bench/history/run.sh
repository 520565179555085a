#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# history bench: node-history following NODES nodes whose heartbeats arrive
# every INTERVAL_S seconds, with one real change every CHANGE_S seconds per node
#
# Usage: bench/history/run.sh [NODES] [SECONDS] [INTERVAL_S] [CHANGE_S] [NODE_HISTORY]
#   defaults: 1000 nodes, a 60 s window, heartbeats every 10 s, a change a minute
#
# Prints a table: lines a second (events, or commits), the CPU share of one
# core and the peak RSS; then the repository's size per commit and per day as
# node-history leaves it (it packs every 1,000 commits and at exit) and after
# `git gc`.  For
# comparison, the same events through `kube-request --watch` into /dev/null
# (the cost of following alone) in the same run.
set -eu

nodes=${1:-1000}
window=${2:-60}
interval=${3:-10}
change=${4:-60}
nh=${5:-node-history}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/history-bench.XXXXXX")
port=$((20000 + $$ % 20000))
fpid=
npid=

cleanup() {
	[ -n "$npid" ] && kill -TERM "$npid" 2>/dev/null || true
	[ -n "$fpid" ] && kill -TERM "$fpid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
bytes() { if [ -d "$1" ]; then du -sb "$1" | awk '{ print $1 }'; else echo 0; fi; }

python3 "$here/feeder.py" "$port" "$nodes" "$interval" "$change" >"$work/feeder.out" &
fpid=$!
sleep 1
export HOME="$work"
unset KUBECONFIG

# measure CMD's process for the window: cpu share, and what it printed
measure() { # label cmd...
	label=$1
	shift
	"$@" >"$work/out" 2>"$work/err" &
	npid=$!
	# warm-up: the first list's commits
	sleep "$interval"
	c0=$(cpu_ticks "$npid")
	l0=$(wc -l <"$work/out")
	sleep "$window"
	c1=$(cpu_ticks "$npid")
	l1=$(wc -l <"$work/out")
	rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$npid/status")
	kill -TERM "$npid"
	wait "$npid" || true
	npid=
	hz=$(getconf CLK_TCK)
	printf '%-32s %10s %8s %10s\n' "$label" \
		"$(echo "$l1 $l0 $window" | awk '{ printf "%.1f", ($1 - $2) / $3 }')" \
		"$(echo "$c1 $c0 $hz $window" | awk '{ printf "%.1f%%", 100 * ($1 - $2) / $3 / $4 }')" \
		"$((rss / 1024)) MiB"
}

echo "# $nodes nodes, heartbeats every ${interval}s, a real change every ${change}s each; ${window}s window"
printf '%-32s %10s %8s %10s\n' "what" "lines/s" "cpu" "peak rss"
measure "kube-request --watch (follow)" kube-request --server="http://127.0.0.1:$port" \
	--watch GET /api/v1/nodes
measure "node-history record --all" "$nh" record --all --repo="$work/repo" \
	--server="http://127.0.0.1:$port"
commits=$(git -C "$work/repo" rev-list --count HEAD)
before=$(bytes "$work/repo/.git")
git -C "$work/repo" gc -q
after=$(bytes "$work/repo/.git")
# a day has NODES * 86400 / CHANGE_S real changes, one commit each
perday() { echo "$1 $commits $nodes $change" | awk '{ printf "%.0f MiB a day (%.0f bytes a commit)", $1 / $2 * $3 * 86400 / $4 / 1048576, $1 / $2 }'; }
echo "# repository after the run: $commits commits"
echo "#   as node-history leaves it (packed every 1,000 commits and at exit): $(perday "$before")"
echo "#   after git gc: $(perday "$after")"
