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
