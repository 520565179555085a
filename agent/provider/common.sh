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

# alive PID-FILE: the container whose pid file it is still runs.  A pid file
# outlives its process, and the pid may be another's by now: once the container
# has ended (exit) nothing is, and otherwise the process must be this
# container's run-container.  start_container gives it the directory with a
# '/' after it, which no container name has: its command line, read without
# a fork (a shell's read drops the NULs between the words), says whose it is.
# One started without it (by an earlier version) is looked at as it was
alive() {
	_alive_pid="" _alive_cmd=""
	[ ! -f "${1%/*}/exit" ] && [ -f "$1" ] && read -r _alive_pid <"$1" &&
		[ -n "$_alive_pid" ] || return 1
	{ IFS= read -r _alive_cmd <"/proc/$_alive_pid/cmdline"; } 2>/dev/null
	case $_alive_cmd in
	*"run-container${1%/*}/"*) return 0 ;;
	esac
	is_ours "$_alive_pid" "run-container ${1%/*} "
}

# pod_plan DIR: the pod's plan (see kt-pod-plan --help) in this shell: made
# from DIR/pod.json by kt-pod-plan at the pod's first call and kept in
# DIR/plan, which every later call sources; 1, with why on stderr, when it
# cannot be made.  started_at, the time (RFC 3339) of a container's start, is
# kt-pod-plan's when it ran, else taken at the first start after it.  The
# program is beside this script once installed, in PATH in a build tree
pod_plan() {
	# shellcheck disable=SC2034 # the plan's words use it
	NL='
'
	n_containers=0 restart_policy=Always grace=30 started_at=""
	# sourced, not read: a read takes a byte a system call, and env values
	# make a plan as large as the pod
	if [ -s "$1/plan" ]; then
		# shellcheck disable=SC1091
		. "$1/plan"
		return 0
	fi
	_planner=$here/kt-pod-plan
	[ -x "$_planner" ] || _planner=kt-pod-plan
	_plan=$("$_planner" "$1/pod.json") || {
		say "no plan for the pod: kt-pod-plan could not read $1/pod.json"
		return 1
	}
	case $_plan in
	'!'*)
		say "no plan for the pod: ${_plan#!}"
		return 1
		;;
	esac
	started_at=${_plan##*"$NL"} _plan=${_plan%"$NL"*}
	# whole under a name of this process's, then renamed: a script of the
	# pod's running beside this one sources all of it or makes its own
	{ printf '%s\n' "$_plan" >"$1/plan.$$" && mv -f "$1/plan.$$" "$1/plan"; } 2>/dev/null ||
		rm -f "$1/plan.$$"
	eval "$_plan"
}

# plan_name I: sets name to container I's (a DNS label: kt-pod-plan checked them)
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

# euid: sets euid to this process's effective uid, from its /proc status (the
# second of the Uid: line's four) without a fork; from id where it has none
euid() {
	euid=""
	while read -r _eu_k _eu_r _eu_e _eu_rest; do
		[ "$_eu_k" != Uid: ] || { euid=$_eu_e; break; }
	done 2>/dev/null </proc/self/status
	[ -n "$euid" ] || euid=$(id -u)
}

# run_as USER: sets run_as to the UID:GID a container runs as: USER (the pod's
# runAsUser) or the agent's pod user (KT_POD_USER); empty when the agent is not
# root, so that the container runs as the agent's own user.  1 when it would be
# the agent's own uid
run_as() {
	run_as=""
	[ -n "${euid:-}" ] || euid
	[ "$euid" = 0 ] || return 0
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
	for _f in exit finishedAt waiting stdin stdin.fifo stdin.holder; do
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
	# the pod's env pairs, then command and args, each one word shell-quoted: in a
	# file only the agent reads, never in an argv (ps shows those to every user).
	# An instance's argv is replaced whole (exec may be reading it); the first is
	# written in place, as nothing reads it before its container runs
	if [ -e "$_cd/argv" ]; then
		printf '%s\n' "$_argv" >"$_cd/argv.tmp" && mv "$_cd/argv.tmp" "$_cd/argv" || return 1
	elif ! printf '%s\n' "$_argv" >"$_cd/argv"; then
		rm -f "$_cd/argv"
		return 1
	fi
	# who it runs as, for exec (empty: the agent's own user)
	printf '%s\n' "$run_as" >"$_cd/user"
	# a container with stdin reads it from a fifo that attach writes to, there
	# before any attach can come (see run-container); the last instance's went
	# with its other files above
	[ ! -d "$_cd/stdin.used" ] || rmdir "$_cd/stdin.used"
	if [ -n "$stdin" ]; then
		mkfifo -m 600 "$_cd/stdin.fifo" || return 1
		printf '%s\n' "$stdin" >"$_cd/stdin"
	fi
	[ -n "$started_at" ] || started_at=$(now_rfc3339)
	echo "$started_at" >"$_cd/startedAt"
	_host=""
	read -r _host <"$_dir/name"
	# the '/' after the directory: see alive.  Descriptor 8 (create's lock)
	# goes along and run-container closes it first thing: until the process
	# is run-container, whose pid alive knows, no other create gets the lock
	setsid "$here/run-container" "$_cd/" "$run_as" "$_host" </dev/null >/dev/null 2>&1 &
	echo $! >"$_cd/pid"
}

# stop_container DIR NAME GRACE: SIGTERM to the group, SIGKILL at the deadline;
# returns when nothing of the group is left
stop_container() {
	_cd="$1/containers/$2"
	[ -f "$_cd/pid" ] || return 0
	_pg=""
	read -r _pg <"$_cd/pid"
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

# node_cgroup_bases: cg_lines as pod_cgroup_bases sets it, found once for the
# node: kept in STATE/cgroup-bases (KT_STATE_DIR) with what it was found for
# (KT_POD_CGROUP, the node, the effective uid, this process's own cgroups,
# read without a fork), and found again when any of those differs or one of
# its cgroups cannot be joined any more.  Where none can be made, nothing is
# kept: the next pod looks again, as the agent does at each start
node_cgroup_bases() {
	_nb_f=${KT_STATE_DIR:+$KT_STATE_DIR/cgroup-bases}
	[ -n "${euid:-}" ] || euid
	_nb_key="${KT_POD_CGROUP:-auto} ${KT_NODE:-node} $euid" _nb_own=""
	while IFS= read -r _nb_l; do
		_nb_own="$_nb_own $_nb_l"
	done 2>/dev/null </proc/self/cgroup
	if [ -n "$_nb_f" ] && [ -f "$_nb_f" ]; then
		_nb_n=0 _nb_ok=1 cg_lines=""
		while IFS= read -r _nb_l; do
			_nb_n=$((_nb_n + 1))
			case $_nb_n in
			1) [ "$_nb_l" = "key $_nb_key" ] || _nb_ok="" ;;
			2) [ "$_nb_l" = "own$_nb_own" ] || _nb_ok="" ;;
			*)
				[ -w "${_nb_l#* * }/cgroup.procs" ] || _nb_ok=""
				cg_lines=${cg_lines:+$cg_lines$NL}$_nb_l
				;;
			esac
		done <"$_nb_f"
		[ -z "$_nb_ok" ] || [ -z "$cg_lines" ] || return 0
	fi
	pod_cgroup_bases
	[ -n "$_nb_f" ] || return 0
	if [ -z "$cg_lines" ]; then
		[ ! -f "$_nb_f" ] || rm -f "$_nb_f"
		return 0
	fi
	{
		printf 'key %s\nown%s\n%s\n' "$_nb_key" "$_nb_own" "$cg_lines" \
			>"$_nb_f.$$" && mv -f "$_nb_f.$$" "$_nb_f"
	} 2>/dev/null || rm -f "$_nb_f.$$"
}

# pod_make DIR: the directories of the pod's containers (from its plan) and the
# pod's cgroups (see pod_cgroup_bases) with each container's below them, in one
# mkdir; the cgroups are recorded in DIR/cgroup for run-container, which puts
# each container in its own, and for the readers of its stats; nothing where
# none can be made.  A pod that has DIR/cgroup has its cgroups
pod_make() {
	_pm_d=$1 _pm_u=${1##*/} cg_lines=""
	[ -f "$_pm_d/cgroup" ] || node_cgroup_bases
	set --
	_pm_i=1
	while [ "$_pm_i" -le "$n_containers" ]; do
		eval "_pm_n=\$c_name_$_pm_i"
		set -- "$@" "$_pm_d/containers/$_pm_n"
		_pm_i=$((_pm_i + 1))
	done
	if [ -n "$cg_lines" ]; then
		while read -r _pm_r _pm_v _pm_b; do
			set -- "$@" "$_pm_b/$_pm_u"
			_pm_i=1
			while [ "$_pm_i" -le "$n_containers" ]; do
				eval "_pm_n=\$c_name_$_pm_i"
				set -- "$@" "$_pm_b/$_pm_u/$_pm_n"
				_pm_i=$((_pm_i + 1))
			done
		done <<EOF
$cg_lines
EOF
	fi
	[ "$#" -gt 0 ] || return 0
	_pm_ok=""
	mkdir -p "$@" 2>/dev/null && _pm_ok=1
	[ -n "$cg_lines" ] || return 0
	# where the one mkdir failed, each hierarchy on its own (the containers'
	# own cgroups are then made by run-container)
	while read -r _pm_r _pm_v _pm_b; do
		_pm_p=$_pm_b/$_pm_u
		[ -n "$_pm_ok" ] || mkdir -p "$_pm_p" 2>/dev/null || continue
		# v2: the containers' memory is counted each in its own cgroup
		[ "$_pm_r.$_pm_v" != memory.v2 ] || echo +memory >"$_pm_p/cgroup.subtree_control" 2>/dev/null
		printf '%s %s %s\n' "$_pm_r" "$_pm_v" "$_pm_p"
	done >"$_pm_d/cgroup.tmp" <<EOF && mv -f "$_pm_d/cgroup.tmp" "$_pm_d/cgroup"
$cg_lines
EOF
}

# pod_cgroup_remove DIR: the pod's cgroups removed, what is left in them (a
# process that left its container's process group) killed first.  Empty, as
# they are once the containers have ended, they go in one rmdir (the
# containers' before their pod's)
pod_cgroup_remove() {
	_pr_d=$1
	[ -f "$_pr_d/cgroup" ] || return 0
	set --
	while read -r _r _v _p; do
		[ -d "$_p" ] || continue
		for _c in "$_p"/*/; do
			[ ! -d "$_c" ] || set -- "$@" "$_c"
		done
		set -- "$@" "$_p"
	done <"$_pr_d/cgroup"
	[ "$#" -eq 0 ] || rmdir "$@" 2>/dev/null ||
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
		done <"$_pr_d/cgroup"
	rm -f "$_pr_d/cgroup"
}
