# SPDX-License-Identifier: Apache-2.0
# common.sh: what the built-in provider's executables share.  Sourced, never run.
# Each container lives in POD_DIR/containers/NAME: pid (its process group),
# startedAt, restarts, and once it has ended exit and finishedAt.

# the agent runs each executable by its path; no fork to find the directory
case $0 in
*/*) here=${0%/*} ;;
*) here=. ;;
esac
# shellcheck source=agent/lib.sh
. "$here/../lib.sh"
KT_PROG="kt-agent provider"

# container_names DIR: one name a line, in spec order (kt-agent checked them: DNS labels)
container_names() {
	jq -r '.spec.containers[]?.name' "$1/pod.json"
}

# alive PID-FILE: the container whose pid file it is still runs.  A pid file
# outlives its process, and the pid may be another's by now: once the container
# has ended (exit) nothing is, and otherwise the process must be this
# container's run-container
alive() {
	_alive_pid=""
	[ ! -f "${1%/*}/exit" ] && [ -f "$1" ] && read -r _alive_pid <"$1" &&
		[ -n "$_alive_pid" ] && is_ours "$_alive_pid" "run-container ${1%/*} "
}

# pod_plan DIR: the pod's plan (see plan.jq) in this shell, and started_at, the time
# (RFC 3339) for a container started now
pod_plan() {
	# shellcheck disable=SC2034 # the plan's words use it
	NL='
'
	n_containers=0 restart_policy=Always grace=30
	# sourced, not read: a read takes a byte a system call, and env values
	# make a plan as large as the pod
	if [ -s "$1/plan" ]; then
		# shellcheck disable=SC1091
		. "$1/plan"
	else
		_plan=$(jq -L "$here/.." -r 'include "plan"; plan' "$1/pod.json") || return 1
		eval "$_plan"
	fi
	started_at=$(now_rfc3339)
}

# plan_name I: sets name to container I's (a DNS label: kt-agent checked them)
plan_name() {
	name=""
	eval "name=\$c_name_$1"
}

# plan_argv NAME: sets argv, user and stdin to the container's argv, user
# (UID:GID or empty) and stdin (open, once or empty) from the plan
plan_argv() {
	_i=1 argv=no-command user="" stdin=""
	while [ "$_i" -le "$n_containers" ]; do
		eval "[ \"\$c_name_$_i\" = \"\$1\" ] && argv=\$c_argv_$_i && user=\${c_user_$_i:-} && stdin=\${c_stdin_$_i:-}"
		_i=$((_i + 1))
	done
}

# run_as USER: sets run_as to the UID:GID a container runs as: USER (the pod's
# runAsUser) or the agent's pod user (KT_POD_USER); empty when the agent is not
# root, so that the container runs as the agent's own user.  1 when it would be
# the agent's own uid
run_as() {
	run_as=""
	[ "$(id -u)" = 0 ] || return 0
	run_as=${1:-${KT_POD_USER:-65534:65534}}
	case $run_as in *:*) ;; *) run_as=$run_as:$run_as ;; esac
	[ "${run_as%%:*}" != 0 ]
}

# start_container DIR NAME: the container's command and args (from the plan, which
# pod_plan made) as a process group of its own, with the pod's env, stdout and
# stderr in its log
start_container() {
	_dir=$1 _name=$2
	_cd="$_dir/containers/$_name"
	[ -d "$_cd" ] || mkdir -p "$_cd" || return 1
	for _f in exit finishedAt waiting; do
		[ ! -e "$_cd/$_f" ] || rm -f "$_cd/$_f"
	done
	# started again: the last instance's log is kept as log.previous (one, as
	# the kubelet keeps one previous instance), the new one starts afresh
	if [ -f "$_cd/log" ]; then
		mv -f "$_cd/log" "$_cd/log.previous" || return 1
		rm -f "$_cd"/log.[0-9]*
	fi
	plan_argv "$_name"
	_argv=$argv
	if [ "$_argv" = no-command ]; then
		echo "CreateContainerConfigError" >"$_cd/waiting"
		say "container $_name has no command: a local process needs one"
		return 1
	fi
	if ! run_as "$user"; then
		echo "CreateContainerConfigError" >"$_cd/waiting"
		say "container $_name would run as uid 0, the agent's own: refused"
		return 1
	fi
	# the pod's env pairs, then command and args, each one word quoted by jq: in a
	# file only the agent reads, never in an argv (ps shows those to every user)
	printf '%s\n' "$_argv" >"$_cd/argv.tmp" && mv "$_cd/argv.tmp" "$_cd/argv" || return 1
	# who it runs as, for exec (empty: the agent's own user)
	printf '%s\n' "$run_as" >"$_cd/user"
	# a container with stdin reads it from a fifo that attach writes to, there
	# before any attach can come (see run-container)
	rm -f "$_cd/stdin" "$_cd/stdin.fifo" "$_cd/stdin.holder"
	[ ! -d "$_cd/stdin.used" ] || rmdir "$_cd/stdin.used"
	if [ -n "$stdin" ]; then
		mkfifo -m 600 "$_cd/stdin.fifo" || return 1
		printf '%s\n' "$stdin" >"$_cd/stdin"
	fi
	echo "$started_at" >"$_cd/startedAt"
	_host=""
	read -r _host <"$_dir/name"
	setsid "$here/run-container" "$_cd" "$run_as" "$_host" </dev/null >/dev/null 2>&1 &
	echo $! >"$_cd/pid"
}

# stop_container DIR NAME GRACE: SIGTERM to the group, SIGKILL at the deadline;
# returns when nothing of the group is left
stop_container() {
	_cd="$1/containers/$2"
	[ -f "$_cd/pid" ] || return 0
	_pg=$(cat "$_cd/pid")
	# a container that ended, or a pid that is another's now, is never signalled
	if alive "$_cd/pid" && kill -0 "-$_pg" 2>/dev/null; then
		kill -TERM "-$_pg" 2>/dev/null
		_t=0
		while [ "$_t" -lt "$(($3 * 10))" ] && kill -0 "-$_pg" 2>/dev/null; do
			sleep 0.1
			_t=$((_t + 1))
		done
		if kill -0 "-$_pg" 2>/dev/null; then
			kill -KILL "-$_pg" 2>/dev/null
			_t=0
			while kill -0 "-$_pg" 2>/dev/null && [ "$_t" -lt 100 ]; do
				sleep 0.05
				_t=$((_t + 1))
			done
			# SIGKILL took the recorder with it: the exit is what the kubelet reports
			[ -f "$_cd/exit" ] || echo 137 >"$_cd/exit"
		fi
	fi
	[ -f "$_cd/finishedAt" ] || now_rfc3339 >"$_cd/finishedAt"
	[ -f "$_cd/exit" ] || echo 143 >"$_cd/exit"
}

# pod_cgroup_make DIR: the pod's cgroups (see pod_cgroup_bases), recorded in
# DIR/cgroup for run-container, which puts each container in its own below
# them, and for the readers of its stats; nothing where none can be made
pod_cgroup_make() {
	[ ! -f "$1/cgroup" ] || return 0
	pod_cgroup_bases
	[ -n "$cg_lines" ] || return 0
	printf '%s\n' "$cg_lines" | while read -r _r _v _b; do
		_p=$_b/${1##*/}
		mkdir -p "$_p" 2>/dev/null || continue
		# v2: the containers' memory is counted each in its own cgroup
		[ "$_r.$_v" != memory.v2 ] || echo +memory >"$_p/cgroup.subtree_control" 2>/dev/null
		printf '%s %s %s\n' "$_r" "$_v" "$_p"
	done >"$1/cgroup.tmp" && mv -f "$1/cgroup.tmp" "$1/cgroup"
}

# pod_cgroup_remove DIR: the pod's cgroups removed, what is left in them (a
# process that left its container's process group) killed first
pod_cgroup_remove() {
	[ -f "$1/cgroup" ] || return 0
	while read -r _r _v _p; do
		[ -d "$_p" ] || continue
		for _c in "$_p"/*/ "$_p/"; do
			[ -f "$_c/cgroup.procs" ] || continue
			_t=0
			while ! rmdir "$_c" 2>/dev/null && [ "$_t" -lt 50 ]; do
				while read -r _pid; do
					kill -KILL "$_pid" 2>/dev/null
				done <"$_c/cgroup.procs"
				sleep 0.1
				_t=$((_t + 1))
			done
		done
	done <"$1/cgroup"
	rm -f "$1/cgroup"
}
