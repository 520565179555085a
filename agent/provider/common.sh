# SPDX-License-Identifier: Apache-2.0
# common.sh: what the built-in provider's executables share.  Sourced, never run.
# Each container lives in POD_DIR/containers/NAME: pid (its process group),
# startedAt, restarts, and once it has ended exit and finishedAt.

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=agent/lib.sh
. "$here/../lib.sh"
KT_PROG="kt-agent provider"

pod_flat() { # dir
	cat "$1/pod.flat"
}

# container_names DIR: one name a line, in spec order
container_names() {
	sed -n "s/^\\.spec\\.containers\\[[0-9]*\\]\\.name$TAB\"\\(.*\\)\"\$/\\1/p" "$1/pod.flat"
}

container_index() { # dir name
	sed -n "s/^\\.spec\\.containers\\[\\([0-9]*\\)\\]\\.name$TAB\"$2\"\$/\\1/p" "$1/pod.flat"
}

alive() { # pid-file
	[ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# start_container DIR NAME: the container's command and args as a process group of
# its own, with the pod's env, stdout and stderr in its log
start_container() {
	local _argc _cd _dir _flat _i _k _n _name _part _raw
	_dir=$1 _name=$2
	_i=$(container_index "$_dir" "$_name")
	_cd="$_dir/containers/$_name"
	mkdir -p "$_cd"
	rm -f "$_cd/exit" "$_cd/finishedAt" "$_cd/waiting"
	_flat=$(pod_flat "$_dir")
	# env -i, the pod's env pairs, then command and args, each element unescaped
	set -- env -i "PATH=$PATH" "HOME=${HOME:-/}" "HOSTNAME=$(cat "$_dir/name")"
	_k=0
	while :; do
		_n=$(json_get "$_flat" ".spec.containers[$_i].env[$_k].name")
		[ -n "$_n" ] || break
		set -- "$@" "$_n=$(json_get "$_flat" ".spec.containers[$_i].env[$_k].value")"
		_k=$((_k + 1))
	done
	_argc=$#
	for _part in command args; do
		_k=0
		while :; do
			_raw=$(printf '%s\n' "$_flat" | awk -F '\t' -v p=".spec.containers[$_i].$_part[$_k]" '$1 == p { print $2; exit }')
			[ -n "$_raw" ] || break
			set -- "$@" "$(json_unquote "$_raw")"
			_k=$((_k + 1))
		done
	done
	if [ $# -eq "$_argc" ]; then
		echo "CreateContainerConfigError" >"$_cd/waiting"
		say "container $_name has no command: a local process needs one"
		return 1
	fi
	now_rfc3339 >"$_cd/startedAt"
	setsid "$here/run-container" "$_cd" "$@" </dev/null >/dev/null 2>&1 &
	echo $! >"$_cd/pid"
}

# stop_container DIR NAME GRACE: SIGTERM to the group, SIGKILL at the deadline;
# returns when nothing of the group is left
stop_container() {
	local _cd _pg _t
	_cd="$1/containers/$2"
	[ -f "$_cd/pid" ] || return 0
	_pg=$(cat "$_cd/pid")
	if kill -0 "-$_pg" 2>/dev/null; then
		kill -TERM "-$_pg" 2>/dev/null
		_t=0
		while [ "$_t" -lt "$(( $3 * 10 ))" ] && kill -0 "-$_pg" 2>/dev/null; do
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
