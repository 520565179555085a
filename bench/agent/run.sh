#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/agent/run.sh AGENT_DIR...: kt-agent with 110 pods (the kubelet's default
# max-pods; PODS sets another count) against the local API server, for each
# agent directory given (an agent/ as in the source tree: kt-agent.in, lib.sh,
# provider/), side by side:
#   - 110 pods, one sleep container each, created in a burst (10 POSTs at a time):
#     p50/p99 from a create's return to the first list showing it Running, and
#     how long after the last create the last one was Running;
#   - the agent's whole process tree (the agent and every tool it runs, not the
#     pods' containers) idle with the pods: CPU in % of one core over IDLE
#     seconds, and the memory of its processes: the sum of their resident sizes
#     (a shared library's pages counted in every process that maps it), and that
#     memory with each file's shared pages counted once (what the tree holds);
#   - the same with an HTTP readiness probe (periodSeconds 10) on every pod.
# Run from a build directory: the tools come from it.  IDLE (default 30) sets the
# idle window.  OBSERVE=watch notes when a watch first shows each pod Running
# instead of listing the pods every 0.2 s (the lists, 110 pods each, cost the
# local API server, which the agent's patches wait for, and lag by a poll).
# Prints one table.
set -u
build=$(pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
idle=${IDLE:-30}
pods=${PODS:-110}
observe=${OBSERVE:-list}
PATH="$build:$PATH"
export PATH
work=$(mktemp -d)
api_pid="" agent_pid="" web_pid=""

cleanup() {
	[ -n "$agent_pid" ] && kill -TERM "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
	[ -n "$web_pid" ] && kill "$web_pid" 2>/dev/null
	[ -n "$api_pid" ] && kill "$api_pid" 2>/dev/null
	for f in "$work"/*/state/pods/*/containers/*/pid; do
		[ -f "$f" ] && kill -KILL "-$(cat "$f")" 2>/dev/null
	done
	for f in "$work"/*/state/pod-source.pid; do
		[ -f "$f" ] && kill -KILL "-$(cat "$f")" 2>/dev/null
	done
	rm -rf "$work"
}
trap 'cleanup; exit 1' INT TERM

# the CPU ticks and the resident KiB of PID and its descendants (alive now, plus
# what the ones that were waited for used)
tree() { # pid
	python3 "$src/bench/agent/tree.py" "$1"
}

# the KiB PID and its descendants hold: private pages, plus each file's shared
# pages once (the largest share any of them maps); shared anonymous pages (a
# forked shell's) are counted in each process, so this is still an upper bound
held() { # pid
	python3 - "$1" <<'PY'
import os, sys
root = int(sys.argv[1])
kids = {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        s = open("/proc/%s/stat" % p).read()
        kids.setdefault(int(s[s.rindex(")") + 2:].split()[1]), []).append(int(p))
    except OSError:
        pass
todo, private, anon, files = [root], 0, 0, {}
while todo:
    p = todo.pop()
    todo += kids.get(p, [])
    try:
        lines = open("/proc/%d/smaps" % p).read().splitlines()
    except OSError:
        continue
    key, shared = None, 0
    for l in lines + ["0-0 end"]:
        f = l.split()
        if "-" in f[0] and not f[0].endswith(":"):
            if key is not None and shared:
                if key[0]:
                    files[key] = max(files.get(key, 0), shared)
                else:
                    anon += shared
            key = (f[5] if len(f) > 5 and f[5].startswith("/") else "", f[2]) if len(f) > 2 else None
            shared = 0
        elif f[0] in ("Private_Clean:", "Private_Dirty:"):
            private += int(f[1])
        elif f[0] in ("Shared_Clean:", "Shared_Dirty:"):
            shared += int(f[1])
print(private + anon + sum(files.values()))
PY
}

one() { # name agent-dir probes(0|1)
	d=$work/$1
	mkdir -p "$d/fix"
	python3 "$src/tests/apiserver/apiserver.py" --dir "$d/api" >"$d/api.log" 2>&1 &
	api_pid=$!
	while [ ! -e "$d/api/ready" ]; do sleep 0.1; done
	KUBECONFIG=$d/api/kubeconfig
	export KUBECONFIG
	sed -e "s|@pkglibexecdir@|$2|" -e 's|@VERSION@|bench|' "$2/kt-agent.in" >"$d/kt-agent"
	KT_AGENT_LIBDIR=$2 sh "$d/kt-agent" --node=bench --state-dir="$d/state" -q \
		--status-interval=10s 2>"$d/agent.log" &
	agent_pid=$!
	until kube-request GET /api/v1/nodes/bench >/dev/null 2>&1; do sleep 0.2; done
	# and until it follows its pods: the pod worker's first housekeeping comes
	# after the first list (30 s at most); pods created before that waited for
	# the agent's start-up, which is not what a create's latency is about
	t=0
	until grep -q sync-known-pods "$d/state/steps.log" 2>/dev/null || [ $t -ge 150 ]; do
		sleep 0.2
		t=$((t + 1))
	done
	# OBSERVE=watch: a watch notes when the server first shows each pod Running
	: >"$d/watched"
	if [ "$observe" = watch ]; then
		sh -c 'echo $$ >"$1"; exec kube-request --watch \
			GET "/api/v1/pods?fieldSelector=spec.nodeName=bench"' - "$d/watch.pid" |
			jq -r --unbuffered 'select(.object.status.phase == "Running")
				| "\(.object.metadata.name) \(now)"' >>"$d/watched" &
	fi
	probe=""
	[ "$3" = 1 ] && probe=',"readinessProbe":{"httpGet":{"path":"/","port":'$web_port'},"periodSeconds":10}'
	i=1
	while [ $i -le $pods ]; do
		printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%s","namespace":"default"},"spec":{"nodeName":"bench","terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"sh","command":["sleep","3600"]%s}]}}\n' \
			"$i" "$probe" >"$d/fix/p$i.json"
		i=$((i + 1))
	done
	i=1
	while [ $i -le $pods ]; do
		j=$i pids=""
		while [ $j -lt $((i + 10)) ] && [ $j -le $pods ]; do
			(kube-request POST /api/v1/namespaces/default/pods "$d/fix/p$j.json" >/dev/null &&
				echo "p$j $(date +%s.%N)" >>"$d/created") &
			pids="$pids $!"
			j=$((j + 1))
		done
		for p in $pids; do wait "$p"; done
		i=$j
	done
	# the first list that shows each pod Running: each list's Running pods with the
	# time it was asked for, one jq a list (a grep a pod a list made the poll
	# itself take seconds on a loaded machine), the first time each kept after.
	# With OBSERVE=watch, no list: the watch's lines, read every 0.2 s.
	end=$(($(date +%s) + 120))
	: >"$d/lists"
	n=0
	while [ "$n" -lt "$pods" ] && [ "$(date +%s)" -lt "$end" ]; do
		if [ "$observe" = watch ]; then
			n=$(awk '!seen[$1]++' "$d/watched" | wc -l)
		else
			now=$(date +%s.%N)
			kube-request GET '/api/v1/pods?fieldSelector=spec.nodeName=bench' |
				jq -r --arg now "$now" '.items[] | select(.status.phase == "Running")
					| "\(.metadata.name) \($now)"' >>"$d/lists"
			n=$(grep -c -F " $now" "$d/lists")
		fi
		sleep 0.2
	done
	if [ "$observe" = watch ]; then
		kill "$(cat "$d/watch.pid")" 2>/dev/null
		cp "$d/watched" "$d/lists"
	fi
	sort -s -k1,1 "$d/lists" | awk '!seen[$1]++' >"$d/running"
	lat=$(python3 - "$d/created" "$d/running" <<'PY'
import sys
c = dict(l.split() for l in open(sys.argv[1]))
r = dict(l.split() for l in open(sys.argv[2]))
d = sorted(float(r[n]) - float(c[n]) for n in c if n in r)
last = max(float(v) for v in c.values())
done = max(float(v) for v in r.values()) - last if r else float("nan")
p = lambda q: d[min(len(d) - 1, int(q * len(d)))] if d else float("nan")
print("%d %.2f %.2f %.2f" % (len(d), p(0.50), p(0.99), done))
PY
)
	# let it settle, then the idle window
	sleep 5
	set -- $(tree "$agent_pid")
	t0=$1
	sleep "$idle"
	set -- $(tree "$agent_pid")
	hz=$(getconf CLK_TCK)
	cpu=$(python3 -c "print('%.1f' % (100.0 * ($1 - $t0) / $hz / $idle))")
	rss=$(($2 / 1024))
	held=$(($(held "$agent_pid") / 1024))
	# a graceful shutdown, or SIGKILL after 30 s (and what it left behind)
	kill -TERM "$agent_pid"
	(sleep 30; kill -KILL "$agent_pid" 2>/dev/null) &
	killer=$!
	wait "$agent_pid"
	kill "$killer" 2>/dev/null
	agent_pid=""
	for f in "$d"/state/node-ping.pid "$d"/state/node-patch3way.pid "$d"/state/pods/*/probes.pid; do
		[ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	for f in "$d"/state/pods/*/containers/*/pid; do
		[ -f "$f" ] && kill -KILL "-$(cat "$f")" 2>/dev/null
	done
	[ -f "$d/state/pod-source.pid" ] && kill -KILL "-$(cat "$d/state/pod-source.pid")" 2>/dev/null
	kill "$api_pid"
	wait "$api_pid" 2>/dev/null
	api_pid=""
	echo "$lat $cpu $rss $held"
}

python3 -m http.server 0 --bind 127.0.0.1 >"$work/web.log" 2>&1 &
web_pid=$!
web_port=""
while [ -z "$web_port" ]; do
	sleep 0.2
	web_port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$work/web.log" | head -n 1)
done

printf '%-28s %8s %8s %8s %12s %10s %8s %9s %14s\n' agent running p50_s p99_s last_after_s \
	idle_cpu_% rss_MiB held_MiB probes_cpu_%
for a in "$@"; do
	a=$(cd "$a" && pwd)
	name=$(basename "$(dirname "$a")")-$(basename "$a")
	set -- $(one "$name" "$a" 0)
	r1="$*"
	set -- $(one "$name-probes" "$a" 1)
	pc=$5
	set -- $r1 $pc
	printf '%-28s %8s %8s %8s %12s %10s %8s %9s %14s\n' "$name" "$1/$pods" "$2" "$3" "$4" "$5" \
		"$6" "$7" "$8"
done
cleanup
