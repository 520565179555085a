#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/agent/cost.sh AGENT_DIR...: what one pod costs kt-agent, for each agent
# directory given (as bench/agent/run.sh takes them), side by side.  PODS pods
# (default 40, one sleep container each) are created in a burst (10 POSTs at a
# time) against the local API server, followed by a watch until all are Running,
# then deleted (grace 1 s) and followed until all are gone.  Per pod:
#   - the agent tree's CPU over the whole run (ms, /proc ticks of the agent and
#     the children it waited for) from the first create to the last pod gone;
#   - the requests the agent's tools (kube-request or pod-status) made for its
#     pods' status PATCHes and DELETEs, and the TLS connections they came on (the local API server logs
#     each request's client address and port: one per connection);
#   - with STRACE=1, a second run under strace -f: the processes forked and the
#     programs executed over the same window (strace inflates CPU and times:
#     not used for those);
#   - with PERF=1, a third run under perf record (task-clock, one sample a
#     millisecond of CPU, inherited by every process the agent starts): the
#     agent tree's CPU over the same window by program name (comm: a script's
#     own name, "sh" for the agent's subshells);
#   - the stages of a start (median and p90 in seconds): the create returned ->
#     the agent has the pod (its directory's since) -> the provider's create
#     ran (created) -> the Running status PATCH on the server (its request log)
#     -> a watch shows it Running.
# Run from a build directory: the tools come from it.  Prints tables.
set -u
build=$(pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
pods=${PODS:-40}
PATH="$build:$PATH"
export PATH
work=$(mktemp -d)
api_pid="" agent_pid="" watch_pid=""

stop_all() {
	[ -n "$watch_pid" ] && kill "$watch_pid" 2>/dev/null
	# under strace (or perf), agent_pid is strace's: the agent is its child, and strace
	# ends once every process it follows has, the pods' containers among them
	if [ -n "$agent_pid" ]; then
		for c in $(ps -o pid= --ppid "$agent_pid") "$agent_pid"; do
			kill -TERM "$c" 2>/dev/null
		done
		for f in "$work"/*/state/pods/*/containers/*/pid "$work"/*/state/pod-source.pid; do
			[ -f "$f" ] && kill -KILL "-$(cat "$f")" 2>/dev/null
		done
		wait "$agent_pid" 2>/dev/null
	fi
	[ -n "$api_pid" ] && kill "$api_pid" 2>/dev/null && wait "$api_pid" 2>/dev/null
	for f in "$work"/*/state/pods/*/containers/*/pid "$work"/*/state/pod-source.pid; do
		[ -f "$f" ] && kill -KILL "-$(cat "$f")" 2>/dev/null
	done
	watch_pid="" agent_pid="" api_pid=""
}
trap 'stop_all; rm -rf "$work"; exit 1' INT TERM

ticks() { # pid: CPU ticks of it and its descendants, with their waited-for children
	python3 "$src/bench/agent/tree.py" "$1" | cut -d ' ' -f 1
}

mono() { # the monotonic clock, perf's with -k mono
	python3 -c 'import time; print("%.6f" % time.monotonic())'
}

# one NAME AGENT_DIR [strace]: a run; leaves its files in $work/NAME
one() {
	d=$work/$1
	mkdir -p "$d/fix"
	python3 "$src/tests/apiserver/apiserver.py" --dir "$d/api" >"$d/api.log" 2>&1 &
	api_pid=$!
	while [ ! -e "$d/api/ready" ]; do sleep 0.1; done
	KUBECONFIG=$d/api/kubeconfig
	export KUBECONFIG
	sed -e "s|@pkglibexecdir@|$2|" -e 's|@VERSION@|bench|' "$2/kt-agent.in" >"$d/kt-agent"
	if [ "${3:-}" = perf ]; then
		KT_AGENT_LIBDIR=$2 perf record -q -e task-clock -c 1000000 -k mono -o "$d/perf.data" \
			sh "$d/kt-agent" --node=bench --state-dir="$d/state" -q \
			--status-interval=10s 2>"$d/agent.log" &
	elif [ "${3:-}" = strace ]; then
		KT_AGENT_LIBDIR=$2 strace -f -qq -ttt -e trace=process -e signal=none -o "$d/trace" \
			sh "$d/kt-agent" --node=bench --state-dir="$d/state" -q \
			--status-interval=10s 2>"$d/agent.log" &
	else
		KT_AGENT_LIBDIR=$2 sh "$d/kt-agent" --node=bench --state-dir="$d/state" -q \
			--status-interval=10s 2>"$d/agent.log" &
	fi
	agent_pid=$!
	until kube-request GET /api/v1/nodes/bench >/dev/null 2>&1; do sleep 0.2; done
	t=0
	until grep -q sync-known-pods "$d/state/steps.log" 2>/dev/null || [ $t -ge 300 ]; do
		sleep 0.2
		t=$((t + 1))
	done
	t0=$(ticks "$agent_pid")
	: >"$d/watched"
	sh -c 'echo $$ >"$1"; exec kube-request --watch \
		GET "/api/v1/pods?fieldSelector=spec.nodeName=bench"' - "$d/watch.pid" |
		jq -r --unbuffered 'if .type == "DELETED" then "gone \(.object.metadata.name) \(now)"
			elif .object.status.phase == "Running" then
				"running \(.object.metadata.name) \(now)" else empty end' >>"$d/watched" &
	watch_pid=$!
	i=1
	while [ $i -le "$pods" ]; do
		printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%s","namespace":"default"},"spec":{"nodeName":"bench","terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"sh","command":["sleep","3600"]}]}}\n' \
			"$i" >"$d/fix/p$i.json"
		i=$((i + 1))
	done
	burst() { # POST|DELETE
		i=1
		while [ $i -le "$pods" ]; do
			j=$i pids=""
			while [ $j -lt $((i + 10)) ] && [ $j -le "$pods" ]; do
				if [ "$1" = POST ]; then
					(kube-request POST /api/v1/namespaces/default/pods "$d/fix/p$j.json" \
						>/dev/null && echo "p$j $(date +%s.%N)" >>"$d/created") &
				else
					kube-request DELETE /api/v1/namespaces/default/pods/p$j >/dev/null &
				fi
				pids="$pids $!"
				j=$((j + 1))
			done
			for p in $pids; do wait "$p"; done
			i=$j
		done
	}
	date +%s.%N >"$d/window"
	mono >"$d/mono"
	burst POST
	# the watch's lines, read every 0.2 s (a bench, not a test: it has a deadline)
	end=$(($(date +%s) + 180))
	while [ "$(awk '$1 == "running" && !s[$2]++' "$d/watched" | wc -l)" -lt "$pods" ] &&
		[ "$(date +%s)" -lt "$end" ]; do
		sleep 0.2
	done
	# when the agent had each pod and had created it, read before the pods go
	# (a forgotten pod's directory is removed)
	for f in "$d"/state/pods/*/name; do
		[ -f "$f" ] || continue
		u=$(dirname "$f")
		printf '%s %s %s\n' "$(cat "$f" 2>/dev/null)" "$(stat -c %.6Y "$u/since" 2>/dev/null || echo -)" \
			"$(stat -c %.6Y "$u/created" 2>/dev/null || echo -)"
	done >"$d/agent-times"
	burst DELETE
	while [ "$(awk '$1 == "gone" && !s[$2]++' "$d/watched" | wc -l)" -lt "$pods" ] &&
		[ "$(date +%s)" -lt "$end" ]; do
		sleep 0.2
	done
	t1=$(ticks "$agent_pid")
	date +%s.%N >>"$d/window"
	mono >>"$d/mono"
	kill "$(cat "$d/watch.pid")" 2>/dev/null
	wait "$watch_pid" 2>/dev/null
	watch_pid=""
	cp "$d/api/requests.log" "$d/requests.log"
	stop_all
	echo "$t0 $t1" >"$d/ticks"
}

for a in "$@"; do
	a=$(cd "$a" && pwd)
	name=$(basename "$(dirname "$a")")-$(basename "$a")
	one "$name" "$a"
	[ "${STRACE:-0}" = 1 ] && one "$name-strace" "$a" strace
	if [ "${PERF:-0}" = 1 ]; then
		one "$name-perf" "$a" perf
		w=$work/$name-perf
		perf script -i "$w/perf.data" -F comm,time 2>/dev/null |
			awk -v w0="$(sed -n 1p "$w/mono")" -v w1="$(sed -n 2p "$w/mono")" '
				{ t = $NF; sub(/:$/, "", t); $NF = ""; sub(/ +$/, "")
				  if (t + 0 >= w0 + 0 && t + 0 <= w1 + 0) n[$0]++ }
				END { for (c in n) print n[c], c }' >"$w/comms"
	fi
done

python3 - "$work" "$pods" "$(getconf CLK_TCK)" "$@" <<'PY'
import json, os, sys, collections
work, pods, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = []
for a in sys.argv[4:]:
    a = os.path.realpath(a)
    names.append(os.path.basename(os.path.dirname(a)) + "-" + os.path.basename(a))

def q(v, f):
    v = sorted(v)
    return v[min(len(v) - 1, int(f * len(v)))] if v else float("nan")

def iso(t):
    import datetime
    return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()

print("per pod, %d pods created in a burst then deleted" % pods)
print("%-24s %8s %9s %9s %9s %9s %9s %9s" % ("agent", "cpu_ms", "patches", "deletes",
      "conns", "forks", "execs", "running"))
stages = {}
for n in names:
    d = os.path.join(work, n)
    t0, t1 = map(int, open(os.path.join(d, "ticks")).read().split())
    cpu = 1000.0 * (t1 - t0) / hz / pods
    reqs = [json.loads(l) for l in open(os.path.join(d, "requests.log"))]
    mine = [r for r in reqs if r["path"].startswith("/api/v1/namespaces/default/pods/")
            and (r.get("userAgent") or "").startswith(("kube-request", "pod-status"))
            and (r["method"] == "PATCH" or (r["method"] == "DELETE" and r.get("body")))]
    patches = sum(1 for r in mine if r["method"] == "PATCH")
    deletes = sum(1 for r in mine if r["method"] == "DELETE")
    conns = len(set(r.get("conn") for r in mine))
    forks = execs = "-"
    tr = os.path.join(work, n + "-strace", "trace")
    win = os.path.join(work, n + "-strace", "window")
    progs = collections.Counter()
    if os.path.exists(tr):
        forks = execs = 0
        w0, w1 = (float(x) for x in open(win).read().split())
        # strace -f splits a call other processes' calls came between into
        # "call(... <unfinished ...>" and "<... call resumed>...": joined here
        pending = {}
        for l in open(tr):
            f = l.split(None, 2)
            if len(f) < 3:
                continue
            c = f[2].rstrip("\n")
            if c.endswith("<unfinished ...>"):
                pending[f[0]] = (f[1], c[:-len("<unfinished ...>")])
                continue
            if c.startswith("<... "):
                t, head = pending.pop(f[0], (f[1], ""))
                f[1], c = t, head + c.split(" resumed>", 1)[-1]
            if not w0 <= float(f[1]) <= w1:
                continue
            if c.startswith(("clone(", "clone3(", "fork(", "vfork(")) and "= " in c \
                    and c.rsplit("= ", 1)[1].split()[0].isdigit():
                forks += 1
            elif c.startswith("execve(") and c.rstrip().endswith("= 0"):
                execs += 1
                progs[os.path.basename(c.split('"')[1])] += 1
        forks, execs = "%.1f" % (forks / pods), "%.1f" % (execs / pods)
    watched = [l.split() for l in open(os.path.join(d, "watched"))]
    running = {}
    for w in watched:
        if w[0] == "running":
            running.setdefault(w[1], float(w[2]))
    print("%-24s %8.1f %9.2f %9.2f %9.3f %9s %9s %6d/%d" % (n, cpu, patches / pods,
          deletes / pods, conns / pods, forks, execs, len(running), pods))
    if progs:
        print("    programs executed per pod: " + ", ".join(
            "%s %.1f" % (p, c / pods) for p, c in progs.most_common(12)))
    cf = os.path.join(work, n + "-perf", "comms")
    if os.path.exists(cf):
        comms = sorted((l.split(None, 1) for l in open(cf)), key=lambda x: -int(x[0]))
        total = sum(int(c) for c, _ in comms)
        print("    perf run: %.1f ms a pod sampled; by program, ms a pod: " % (total / pods) +
              ", ".join("%s %.1f" % (m.strip(), int(c) / pods) for c, m in comms[:40]))
    created = dict((l.split()[0], float(l.split()[1])) for l in open(os.path.join(d, "created")))
    agent = {}
    for l in open(os.path.join(d, "agent-times")):
        f = l.split()
        agent[f[0]] = f[1:]
    patched = {}
    for r in reqs:
        if r["method"] == "PATCH" and r["path"].endswith("/status") and \
                '"Running"' in json.dumps(r.get("body")):
            patched.setdefault(r["path"].split("/")[-2], iso(r["time"]))
    s = collections.defaultdict(list)
    for p, c in created.items():
        a = agent.get(p)
        if not a or a[0] == "-" or a[1] == "-" or p not in patched or p not in running:
            continue
        seen, made = float(a[0]), float(a[1])
        s["create -> agent has it"].append(seen - c)
        s["-> provider create ran"].append(made - seen)
        s["-> Running PATCH on server"].append(patched[p] - made)
        s["-> a watch sees Running"].append(running[p] - patched[p])
        s["create -> Running (all)"].append(running[p] - c)
    stages[n] = s

print()
print("stages, seconds (median / p90)")
keys = ["create -> agent has it", "-> provider create ran", "-> Running PATCH on server",
        "-> a watch sees Running", "create -> Running (all)"]
print("%-28s" % "stage" + "".join("%22s" % n for n in names))
for k in keys:
    print("%-28s" % k + "".join("%22s" % ("%.2f / %.2f" % (q(stages[n][k], .5), q(stages[n][k], .9)))
                                for n in names))
PY
rm -rf "$work"
