# SPDX-License-Identifier: Apache-2.0
# common.sh: what the built-in provider's executables share.  Sourced, never run.
# Each container lives in POD_DIR/containers/NAME: pid (its process group),
# startedAt, restarts, and once it has ended exit and finishedAt.

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=agent/lib.sh
. "$here/../lib.sh"
KT_PROG="kt-agent provider"

# container_names DIR: one name a line, in spec order (kt-agent checked them: DNS labels)
container_names() {
	jq -r '.spec.containers[]?.name' "$1/pod.json"
}

alive() { # pid-file
	[ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# the argv of a container as the kubelet builds it: env as NAME=VALUE, then command
# and args, with $(VAR) references expanded from the env before it ($$ is a '$')
# and shell-quoted for eval; "no-command" when there is nothing to run
_ARGV_JQ='
def expand($env):
	def go:
		index([36]) as $i
		| if $i == null then implode
		  else (.[:$i] | implode) + (.[$i + 1:] as $r
			| if $r[0] == 36 then "$" + ($r[1:] | go)
			  elif $r[0] == 40 and ($r | index([41])) != null then
				($r | index([41])) as $j | ($r[1:$j] | implode) as $n
				| (if $env | has($n) then $env[$n] else "$(" + $n + ")" end)
				  + ($r[$j + 1:] | go)
			  else "$" + ($r | go) end)
		  end;
	explode | go;
(.spec.containers[]? | select(.name == $name)) as $c
| (reduce ($c.env // [])[] as $e ({};
	. as $known
	| if $e | has("valueFrom") then . else .[$e.name] = ($e.value // "" | expand($known)) end))
	as $env
| [$env | to_entries[] | "\(.key)=\(.value)"] as $pairs
| [($c.command // [])[], ($c.args // [])[] | expand($env)] as $argv
| if $argv == [] then "no-command" else ($pairs + $argv | @sh) end'

# start_container DIR NAME: the container's command and args as a process group of
# its own, with the pod's env, stdout and stderr in its log
start_container() {
	_dir=$1 _name=$2
	_cd="$_dir/containers/$_name"
	mkdir -p "$_cd"
	rm -f "$_cd/exit" "$_cd/finishedAt" "$_cd/waiting"
	_argv=$(jq -r --arg name "$_name" "$_ARGV_JQ" "$_dir/pod.json") || return 1
	if [ "$_argv" = no-command ]; then
		echo "CreateContainerConfigError" >"$_cd/waiting"
		say "container $_name has no command: a local process needs one"
		return 1
	fi
	# env -i, the pod's env pairs, then command and args: each one word, quoted by jq
	eval "set -- $_argv"
	now_rfc3339 >"$_cd/startedAt"
	setsid "$here/run-container" "$_cd" env -i "PATH=$PATH" "HOME=${HOME:-/}" \
		"HOSTNAME=$(cat "$_dir/name")" "$@" </dev/null >/dev/null 2>&1 &
	echo $! >"$_cd/pid"
}

# stop_container DIR NAME GRACE: SIGTERM to the group, SIGKILL at the deadline;
# returns when nothing of the group is left
stop_container() {
	_cd="$1/containers/$2"
	[ -f "$_cd/pid" ] || return 0
	_pg=$(cat "$_cd/pid")
	if kill -0 "-$_pg" 2>/dev/null; then
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
