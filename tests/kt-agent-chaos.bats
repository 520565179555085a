#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kt-agent under faults: what the project promises is that no fault loses or
# doubles a pod, on a loaded machine too.  A node runs under a supervisor that
# starts it again whenever it ends (tests/kt-agent-supervise); rounds picked
# from a seed each do one fault (a tool the agent runs killed, the agent
# killed alone or with everything it started but its pods' containers, the
# API server turned away) while pods are created and deleted, then look as a
# user would, once the waits on watches have returned.  Soak tests: they run
# with KT_SLOW_TESTS=1.
#
# KT_CHAOS_SEED picks the faults and the pods (default 20261203), and
# KT_CHAOS_ROUNDS how many rounds (default 12; 3 beside the CPU burners).  Each
# test prints the seed and every round's action: a failure is replayed with
# KT_CHAOS_SEED=N.
#
# The local API server keeps its objects in memory only, so restarting it
# would lose every pod and node: an outage stands for that fault (the pod
# watch cut, the agent's next writes and lists answered 503).

load helper
load kt-agent

# one test at a time: the burners of one would load the other
setup_file() {
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
}

# the teardown of every agent test, after the supervisor (first, so that it
# starts nothing more) and the CPU burners are gone
eval "$(declare -f teardown | sed '1s/^teardown/agent_teardown/')"
teardown() {
	[ -z "${SUP_PID:-}" ] || kill -KILL "$SUP_PID" 2>/dev/null
	[ -z "${BURNERS:-}" ] || kill -KILL $BURNERS 2>/dev/null
	[ -f "$STATE.pid" ] && AGENT_PID=$(cat "$STATE.pid")
	agent_teardown
}

# chaos_pick N: R is the seed's next number, from 0 to N-1 (the same on every
# bash: no $RANDOM)
chaos_pick() {
	CHAOS=$(((CHAOS * 1103515245 + 12345) % 2147483648))
	R=$(((CHAOS / 65536) % $1))
}

# kwait ARGS...: kube-wait, quiet unless it fails
kwait() {
	kube-wait --kubeconfig="$KUBECONFIG_FILE" "$@" >/dev/null 2>"$BATS_TEST_TMPDIR/wait.err" ||
		{ cat "$BATS_TEST_TMPDIR/wait.err" >&2; return 1; }
}

# supervised_start: the node under its supervisor, its lease every 2 s, its
# kubelet API served (kubelet-serve is one of the tools killed)
supervised_start() {
	local port
	port=$(free_port)
	KUBELET_PORT=$port
	"$BATS_TEST_DIRNAME/kt-agent-supervise" "$STATE.pid" --kubeconfig="$KUBECONFIG_FILE" --node="$NODE" \
		--state-dir="$STATE" --status-interval=10s --lease-duration=8 --shutdown-grace=4 \
		--shutdown-grace-critical=2 --kubelet-port="$port" --kubelet-address=127.0.0.1 \
		>"$BATS_TEST_TMPDIR/agent.out" 2>>"$BATS_TEST_TMPDIR/agent.err" 3>&- &
	SUP_PID=$!
	kwait "node/$NODE" --for=condition=Ready --timeout=60s
	kwait -n kube-node-lease "lease/$NODE" --for=create --timeout=60s
}

# pod_doc NAME SECONDS PROBED: a pod of two containers, each sleeping SECONDS
# (a number of this pod's alone: its processes are told by it), the first
# with an exec readiness probe when PROBED is 1
pod_doc() {
	jq -n -c --arg name "$1" --arg node "$NODE" --arg secs "$2" --argjson probed "$3" '
		{apiVersion: "v1", kind: "Pod", metadata: {name: $name, namespace: "default"},
		 spec: {nodeName: $node, terminationGracePeriodSeconds: 2,
			tolerations: [{key: "kubelet-tools.io/provider", operator: "Exists",
				effect: "NoSchedule"}],
			containers: [
				({name: "main", image: "sh", command: ["sleep", $secs]}
				 + if $probed == 1 then {readinessProbe: {exec: {command: ["true"]},
					periodSeconds: 2}} else {} end),
				{name: "side", image: "sh", command: ["sleep", $secs]}]}}'
}

# ps_now: every process as PID PPID PGID SID STAT ARGS, in $PS
ps_now() {
	PS=$(ps -e -o pid=,ppid=,pgid=,sid=,stat=,args=)
}

# agent_tree: the agent's processes in $PS (its descendants, and the pod
# watch's process group), but the containers: each is a session of its own
agent_tree() {
	local agent src=0
	agent=$(cat "$STATE.pid")
	[ -f "$STATE/pod-source.pid" ] && src=$(cat "$STATE/pod-source.pid")
	awk -v a="$agent" -v src="$src" '
		{ pid[NR] = $1; ppid[NR] = $2; pgid[NR] = $3; sid[NR] = $4 }
		$1 == a { asid = $4 }
		END {
			in_tree[a] = 1
			do {
				more = 0
				for (i = 1; i <= NR; i++)
					if (!(pid[i] in in_tree) && (ppid[i] in in_tree) &&
						(sid[i] == asid || pgid[i] == src)) { in_tree[pid[i]] = 1; more = 1 }
			} while (more)
			for (i = 1; i <= NR; i++)
				if (pgid[i] == src && src != 0) in_tree[pid[i]] = 1
			for (p in in_tree) print p
		}' <<<"$PS"
}

# victims PATTERN: the pids of the agent's processes whose command line starts
# with PATTERN (an awk regular expression)
victims() {
	local tree
	ps_now
	tree=" $(agent_tree | tr '\n' ' ')"
	awk -v pat="$1" -v tree="$tree" '{
		pid = $1; $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, "")
		if ($0 ~ "^" pat && index(tree, " " pid " ")) print pid
	}' <<<"$PS"
}

# kill_tool NAME PATTERN: SIGKILL to the agent's processes running PATTERN,
# which must be there: a tool the agent no longer runs fails the round
kill_tool() {
	local pids
	pids=$(victims "$2")
	[ -n "$pids" ] || { echo "round $ROUND: no $1 runs for the agent" >&2; return 1; }
	echo "  killed $1: $(echo $pids)"
	kill -KILL $pids 2>/dev/null || true
}

# kill_tree: SIGKILL to the agent and everything it runs but the containers,
# all of them stopped first, so that none starts another meanwhile
kill_tree() {
	local pids all="" i
	for i in 1 2 3; do
		ps_now
		pids=$(agent_tree)
		all=$(printf '%s\n%s\n' "$all" "$pids" | sort -u)
		kill -STOP $pids 2>/dev/null || true
	done
	echo "  killed the agent's tree: $(echo $all | wc -w) processes"
	kill -KILL $all 2>/dev/null || true
}

# outage: the pod watch cut, and the agent's next status patches, lease
# renewals and pod lists answered 503 (a count of them, used up as it retries)
outage() {
	apiserver_fault '[{"method":"PATCH","status":503,"count":4},
		{"method":"PUT","path":"/leases/","status":503,"count":2},
		{"method":"GET","query":"spec.nodeName","status":503,"count":3}]'
	apiserver_drop_watches >/dev/null
	echo "  API server away: watches cut, 503 for the next writes and lists"
}

# the faults the seeded rounds pick from; KT_CHAOS_FAULTS (names from fault's
# list) picks from fewer
read -r -a FAULTS <<<"$(echo ${KT_CHAOS_FAULTS:-node-ping node-patch3way podworker-step probe-run \
	status-sender pod-watch kubelet-serve agent agent-tree api-outage})"

fault() { # name
	case $1 in
	node-ping) kill_tool node-ping 'node-ping ' ;;
	node-patch3way) kill_tool node-patch3way 'node-patch3way .*--stream' ;;
	podworker-step) kill_tool podworker-step 'podworker-step ' ;;
	probe-run) kill_tool probe-run 'probe-run --serve' ;;
	status-sender) kill_tool 'pod-status --send' 'pod-status .*--send' ;;
	pod-watch) kill_tool 'the pod watch' 'kube-request .*--watch' ;;
	kubelet-serve) kill_tool kubelet-serve 'kubelet-serve ' ;;
	agent)
		kill -KILL "$(cat "$STATE.pid")"
		echo "  killed the agent's shell alone"
		;;
	agent-tree) kill_tree ;;
	api-outage) outage ;;
	esac
}

# sleepers SECONDS: how many processes (not zombies) run "sleep SECONDS"
sleepers() {
	awk -v s="$1" '$5 !~ /^Z/ && $6 == "sleep" && $7 == s && NF == 7' <<<"$PS" | wc -l
}

# one_set NAME: the pod's two containers each run once: its pid files name
# live run-containers of its own directory, each leading the group its sleep
# is in, and no other process anywhere sleeps its number
one_set() {
	local name=$1 uid secs c pid n
	uid=${UID_OF[$name]} secs=${SECS_OF[$name]}
	for c in main side; do
		[ -f "$STATE/pods/$uid/containers/$c/pid" ] ||
			{ echo "pod $name: no pid file for $c" >&2; return 1; }
		pid=$(cat "$STATE/pods/$uid/containers/$c/pid")
		n=$(awk -v p="$pid" -v d="$STATE/pods/$uid/containers/$c" \
			'$1 == p && $5 !~ /^Z/ && index($0, "run-container " d "/")' <<<"$PS" | wc -l)
		[ "$n" = 1 ] || { echo "pod $name: container $c's pid $pid is no run-container of its own" >&2; return 1; }
		n=$(awk -v g="$pid" -v s="$secs" '$3 == g && $5 !~ /^Z/ && $6 == "sleep" && $7 == s' <<<"$PS" | wc -l)
		[ "$n" = 1 ] || { echo "pod $name: $n processes of container $c in its group $pid" >&2; return 1; }
		n=$(awk -v d="$STATE/pods/$uid/containers/$c" '$5 !~ /^Z/ && index($0, "run-container " d "/")' <<<"$PS" | wc -l)
		[ "$n" = 1 ] || { echo "pod $name: container $c has $n run-containers" >&2; return 1; }
	done
	n=$(sleepers "$secs")
	[ "$n" = 2 ] || { echo "pod $name: $n container processes, want 2" >&2; return 1; }
}

# none_left NAME: a deleted pod's processes are all gone
none_left() {
	local n
	n=$(sleepers "${SECS_OF[$1]}")
	[ "$n" = 0 ] || { echo "pod $1 deleted, yet $n of its container processes run" >&2; return 1; }
	n=$(awk -v d="$STATE/pods/${UID_OF[$1]:-none}/" '$5 !~ /^Z/ && index($0, "run-container " d)' <<<"$PS" | wc -l)
	[ "$n" = 0 ] || { echo "pod $1 deleted, yet $n of its run-containers run" >&2; return 1; }
}

# lease_renewed: the node's Lease is renewed after now (the first change a
# watch started now sees)
lease_renewed() {
	grep -m 1 -q '"MODIFIED"' < <(timeout 60 kube-request --kubeconfig="$KUBECONFIG_FILE" \
		--watch --watch-only \
		GET "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?fieldSelector=metadata.name=$NODE" \
		2>/dev/null 3>&-) || { echo "round $ROUND: the node's Lease was not renewed after the fault" >&2; return 1; }
}

# kubelet_answers: the node's kubelet API answers (401: no client certificate)
kubelet_answers() {
	local code
	code=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$KUBELET_PORT/healthz") || true
	[ "$code" != 000 ] || { echo "round $ROUND: the kubelet API does not answer" >&2; return 1; }
}

# chaos ROUNDS: the rounds, then the node's graceful shutdown
chaos() {
	local rounds=$1 serial=0 live=() deleted=() new names p i n f when secs
	declare -gA UID_OF=() SECS_OF=()
	CHAOS=$SEED
	echo "# chaos seed $SEED, $rounds rounds (KT_CHAOS_SEED=$SEED replays them)" >&3
	echo "seed $SEED, $rounds rounds"
	supervised_start
	# round 0 has no fault: its pods Ready, the agent runs all its tools
	for ((ROUND = 0; ROUND <= rounds; ROUND++)); do
		# the fault, before the pods come and go or while the agent takes them
		f=none when=before
		if [ "$ROUND" -gt 0 ]; then
			chaos_pick ${#FAULTS[@]}
			f=${FAULTS[R]}
			chaos_pick 2
			[ "$R" = 0 ] || when=after
		fi
		echo "round $ROUND: $f, $when the pods"
		echo "# round $ROUND: $f, $when the pods" >&3
		[ "$f" = none ] || [ "$when" = after ] || fault "$f"
		# two pods come and up to two of those running go
		new=()
		for i in 1 2; do
			serial=$((serial + 1))
			p="chaos-$serial"
			secs=$((BATS_TEST_NUMBER * 100000 + 70000 + serial))
			SECS_OF[$p]=$secs
			chaos_pick 2
			pod_doc "$p" "$secs" "$R" >"$BATS_TEST_TMPDIR/$p.json"
			new+=("$p")
			echo "  create $p$([ "$R" = 1 ] && echo ', probed')"
		done
		names=()
		chaos_pick 3
		n=$R
		[ ${#live[@]} -ge 4 ] && [ "$n" = 0 ] && n=1
		for ((i = 0; i < n && ${#live[@]} > 0; i++)); do
			chaos_pick ${#live[@]}
			names+=("${live[R]}")
			live=("${live[@]:0:R}" "${live[@]:R+1}")
		done
		for p in "${new[@]}"; do
			kr POST /api/v1/namespaces/default/pods "$BATS_TEST_TMPDIR/$p.json" >/dev/null
		done
		# each with its grace period: the agent removes it once it has stopped
		[ ${#names[@]} -eq 0 ] || echo "  delete ${names[*]}"
		for p in "${names[@]}"; do
			kr DELETE "/api/v1/namespaces/default/pods/$p" >/dev/null
		done
		[ "$f" = none ] || [ "$when" = before ] || fault "$f"
		live+=("${new[@]}")
		deleted+=("${names[@]}")
		# what a user waits for: every pod Ready, the deleted ones gone, the node Ready
		kwait --timeout="${KT_CHAOS_WAIT:-120s}" --for=condition=Ready "${live[@]/#/pod/}"
		[ ${#names[@]} -eq 0 ] || kwait --timeout="${KT_CHAOS_WAIT:-120s}" --for=delete "${names[@]/#/pod/}"
		kwait --timeout=60s --for=condition=Ready "node/$NODE"
		lease_renewed
		kubelet_answers
		apiserver_clear_faults
		for p in "${new[@]}"; do
			UID_OF[$p]=$(kr GET "/api/v1/namespaces/default/pods/$p" | jq -r .metadata.uid)
		done
		# and what runs: one set of processes a pod, nothing of a deleted one
		ps_now
		for p in "${live[@]}"; do one_set "$p"; done
		for p in "${deleted[@]}"; do none_left "$p"; done
		[ "$(awk -v b="$((BATS_TEST_NUMBER * 100000 + 70000))" \
			'$5 !~ /^Z/ && $6 == "sleep" && $7 > b && $7 < b + 10000' <<<"$PS" | wc -l)" = \
			$((2 * ${#live[@]})) ]
	done
	echo "rounds done"
	echo "# rounds done" >&3
	# SIGTERM: the node goes down gracefully, and once the agent has exited its
	# Ready=False is on the server
	kill -TERM "$SUP_PID"
	wait "$SUP_PID"
	SUP_PID=""
	node_shut_down
	ps_now
	for p in "${live[@]}" "${deleted[@]}"; do none_left "$p"; done
}

# bats test_tags=slow
@test "kt-agent chaos: seeded faults while pods come and go: none lost, none doubled, the node Ready and its lease renewed" {
	slow
	SEED=${KT_CHAOS_SEED:-20261203}
	chaos "${KT_CHAOS_ROUNDS:-12}"
}

# bats test_tags=slow
@test "kt-agent chaos: the same beside two CPU burners" {
	slow
	SEED=${KT_CHAOS_SEED:-20261203}
	sh -c 'while :; do :; done' 3>&- &
	BURNERS=$!
	sh -c 'while :; do :; done' 3>&- &
	BURNERS="$BURNERS $!"
	chaos "${KT_CHAOS_ROUNDS:-3}"
}
