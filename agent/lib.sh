# SPDX-License-Identifier: Apache-2.0
# lib.sh: what kt-agent and its built-in provider share: logging, time, names.
# POSIX sh; JSON is read and written with jq only.  Sourced, never run.

# a tab, written as one (no fork for it)
TAB='	'

# now_rfc3339: the UTC time in whole seconds, as metav1.Time fields want it
now_rfc3339() {
	date -u +%Y-%m-%dT%H:%M:%SZ
}

# say: one narration line on stderr, prefixed by the program's name
say() {
	printf '%s: %s\n' "${KT_PROG:-kt-agent}" "$*" >&2
}

# is_ours PID NAME: PID is alive and runs NAME (a pid file may outlive its process)
is_ours() {
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q -- "$2"
}

# is_uid TEXT: TEXT may name a file and a path segment: a pod UID as the API
# server makes them (letters, digits and '-', at most 64), without a fork
is_uid() {
	case $1 in
	'' | -* | *[!0-9A-Za-z-]*) return 1 ;;
	esac
	[ ${#1} -le 64 ]
}

# is_dns_label TEXT: a DNS-1123 label (container names, namespaces)
is_dns_label() {
	case $1 in
	'' | -* | *- | *[!0-9a-z-]*) return 1 ;;
	esac
	[ ${#1} -le 63 ]
}

# is_dns_subdomain TEXT: a DNS-1123 subdomain (pod and node names)
is_dns_subdomain() {
	case $1 in
	'' | [.-]* | *[.-] | *..* | *.-* | *-.* | *[!0-9a-z.-]*) return 1 ;;
	esac
	[ ${#1} -le 253 ]
}

# pod_cgroup_bases: sets cg_lines to where the built-in provider makes pods'
# cgroups, one "RESOURCE VERSION DIR" line for cpu and one for memory: DIR is
# kubelet-tools/NODE under the agent's own cgroup of that hierarchy, made here.
# cgroup v2 where its memory controller can be had, else v1's cpuacct and
# memory hierarchies, else v2 for CPU alone; empty where none can be made (not
# root, read-only).  KT_POD_CGROUP (auto, v2, v1, none) limits the choice.
pod_cgroup_bases() {
	cg_lines=""
	_cg_mode=${KT_POD_CGROUP:-auto}
	[ "$_cg_mode" != none ] || return 0
	_cg_sub=kubelet-tools/${KT_NODE:-node}
	_cg_v2="" _cg_v2mem="" _cg_cpu1="" _cg_mem1=""
	if [ "$_cg_mode" != v1 ]; then
		_cg_m=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
		_cg_own=$(sed -n 's/^0:://p' /proc/self/cgroup)
		_cg_d=$_cg_m${_cg_own%/}
		if [ -n "$_cg_m" ] && mkdir -p "$_cg_d/$_cg_sub" 2>/dev/null &&
			[ -w "$_cg_d/$_cg_sub/cgroup.procs" ]; then
			_cg_v2=$_cg_d/$_cg_sub
			# memory for the pods' cgroups: enabled for the children of
			# each cgroup down to the node's
			if grep -qw memory "$_cg_d/cgroup.controllers" 2>/dev/null; then
				for _cg_p in "$_cg_d" "$_cg_d/kubelet-tools" "$_cg_v2"; do
					echo +memory >"$_cg_p/cgroup.subtree_control" 2>/dev/null
				done
				grep -qw memory "$_cg_v2/cgroup.subtree_control" 2>/dev/null && _cg_v2mem=1
			fi
		fi
	fi
	if [ "$_cg_mode" != v2 ] && [ -z "$_cg_v2mem" ]; then
		for _cg_c in cpuacct memory; do
			_cg_m=$(awk -v c="$_cg_c" '$3 == "cgroup" { n = split($4, o, ",")
				for (i = 1; i <= n; i++) if (o[i] == c) { print $2; exit } }' /proc/self/mounts)
			_cg_own=$(awk -F: -v c="$_cg_c" '{ n = split($2, a, ",")
				for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/self/cgroup)
			_cg_d=$_cg_m${_cg_own%/}/$_cg_sub
			[ -n "$_cg_m" ] && mkdir -p "$_cg_d" 2>/dev/null && [ -w "$_cg_d/cgroup.procs" ] || continue
			case $_cg_c in cpuacct) _cg_cpu1=$_cg_d ;; memory) _cg_mem1=$_cg_d ;; esac
		done
	fi
	if [ -n "$_cg_v2mem" ]; then
		cg_lines="cpu v2 $_cg_v2
memory v2 $_cg_v2"
	elif [ -n "$_cg_cpu1" ]; then
		cg_lines="cpu v1 $_cg_cpu1"
	elif [ -n "$_cg_v2" ]; then
		cg_lines="cpu v2 $_cg_v2"
	fi
	if [ -n "$_cg_mem1" ]; then
		cg_lines="${cg_lines:+$cg_lines
}memory v1 $_cg_mem1"
	fi
}
