# SPDX-License-Identifier: Apache-2.0
# helper: what every .bats file loads: bats libraries, fixtures, the local API server

bats_require_minimum_version 1.5.0

: "${KT_SRCDIR:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
: "${KT_BUILDDIR:=$KT_SRCDIR}"
export KT_SRCDIR KT_BUILDDIR
case ":$PATH:" in
*":$KT_BUILDDIR:"*) ;;
*) PATH="$KT_BUILDDIR:$PATH" ;;
esac
export PATH

for _lib in bats-support bats-assert; do
	for _dir in /usr/lib/bats /usr/share/bats /usr/local/lib/bats; do
		if [ -f "$_dir/$_lib/load.bash" ]; then
			load "$_dir/$_lib/load.bash"
			break
		fi
	done
done
unset _lib _dir

# Debian's python3 (scripts/deps installs it) for every server and generator the
# tests start: a version manager's python3 shim in PATH can cost seconds a start
if [ -x /usr/bin/python3 ]; then
	PYTHON=/usr/bin/python3
	# tests loading this at once under bats --jobs: the link is made once, never
	# replaced, so no test finds it missing
	mkdir -p "$BATS_RUN_TMPDIR/python-bin"
	ln -s /usr/bin/python3 "$BATS_RUN_TMPDIR/python-bin/python3" 2>/dev/null || true
	PATH="$BATS_RUN_TMPDIR/python-bin:$PATH"
	export PYTHON PATH
fi

# slow: the first command of a soak test, tagged "# bats test_tags=slow" too;
# it runs only with KT_SLOW_TESTS=1 (CI runs it once, in the plain build)
slow() {
	[ "${KT_SLOW_TESTS:-0}" = 1 ] || skip "a soak test: KT_SLOW_TESTS=1 runs it"
}

FIX="$BATS_TEST_DIRNAME/fixtures/$(basename "$BATS_TEST_FILENAME" .bats)"

if [ -f "$KT_SRCDIR/tests/apiserver/apiserver.bash" ]; then
	# shellcheck source=tests/apiserver/apiserver.bash
	. "$KT_SRCDIR/tests/apiserver/apiserver.bash"
fi

# the tools this tree builds, from the makefile fragments
kt_tools() {
	sed -n 's/^bin_\(PROGRAMS\|SCRIPTS\)[[:space:]]*+=[[:space:]]*//p' "$KT_SRCDIR"/mk/*.am |
		tr ' \t' '\n\n' | sed 's#.*/##' | grep -v '^$' | sort -u
}

# KT_VALGRIND=1 make check: every C tool runs under valgrind through a wrapper
# of the same name put first in PATH; an error or a definite leak exits 99
if [ "${KT_VALGRIND:-0}" = 1 ]; then
	_vg="$BATS_RUN_TMPDIR/valgrind-bin"
	if [ ! -d "$_vg" ]; then
		# made aside and renamed: a test loading this at the same time (bats
		# --jobs) sees no directory or a whole one; the loser drops its own
		_new=$(mktemp -d "$_vg.XXXXXX")
		for _t in $(kt_tools); do
			[ "$(head -c 4 "$KT_BUILDDIR/$_t" 2>/dev/null | tail -c 3)" = ELF ] || continue
			printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "%s" "$@"\n' \
				"$KT_BUILDDIR/$_t" >"$_new/$_t"
			chmod +x "$_new/$_t"
		done
		chmod 755 "$_new"
		mv -T "$_new" "$_vg" 2>/dev/null || rm -rf "$_new"
	fi
	PATH="$_vg:$PATH"
	export PATH
	unset _vg _t _new
fi

# wait_until TRIES PAUSE CMD...: for what a background process does in its own
# time: runs CMD until it succeeds, at most TRIES times PAUSE seconds apart (PAUSE
# under a second).  When it never does, the test fails here, saying what it waited
# for; a caller that goes on regardless has nothing to wait for
wait_until() {
	local tries=$1 pause=$2 i
	shift 2
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep "$pause"
	done
	echo "wait_until: still not so after $tries tries $pause s apart: $*" >&2
	return 1
}

# cri_text FILE...: the text of CRI log lines ("TIME STREAM P|F TEXT"), as
# kubectl logs shows it: a whole line (F) with its newline, a piece (P) without
cri_text() {
	awk '{ tag = $3; sub(/^[^ ]+ [^ ]+ [^ ]+ /, ""); if (tag ~ /^P/) printf "%s", $0; else print }' "$@"
}

# stop_jobs: every background job the test started and left running (and the
# children of each) gets SIGTERM, then SIGKILL if it is still there a moment later,
# and is reaped.  It is the teardown of a file that has none; a file's own
# teardown calls it
stop_jobs() {
	local pids pid i
	# errexit-safe: a test may call its teardown itself, to start over
	pids=$(jobs -p)
	[ -n "$pids" ] || return 0
	for pid in $pids; do
		pkill -TERM -P "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
	done
	for ((i = 0; i < 50; i++)); do
		for pid in $pids; do
			kill -0 "$pid" 2>/dev/null && break
			pid=
		done
		[ -z "$pid" ] && break
		sleep 0.05
	done
	for pid in $pids; do
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	return 0
}

teardown() {
	stop_jobs
}

# retry_plan_ms: the waits between tries a tool logged at -v 4 ("retrying
# request" ... delayMs=N) in the last run's stderr, added up: how long it meant
# to keep trying, by its own plan rather than by a clock
retry_plan_ms() {
	awk -F'delayMs=' 'NF > 1 { ms += $2 } END { print ms + 0 }' <<<"$stderr"
}

# prints STATUS STDOUT CMD...: CMD exits STATUS, prints exactly STDOUT and nothing
# on stderr; when not, says the command and what it got
prints() {
	local want=$1 out=$2
	shift 2
	run --separate-stderr "$@"
	[ "$status" = "$want" ] && [ "$output" = "$out" ] && [ -z "$stderr" ] && return 0
	printf '%s\n  exit %s (want %s)\n  stdout: %s\n  want:   %s\n  stderr: %s\n' \
		"$*" "$status" "$want" "$output" "$out" "$stderr" >&2
	return 1
}

# run_ok CMD...: run CMD (stdout in $output, as run leaves it); it must exit 0
# with nothing on stderr
run_ok() {
	run --separate-stderr "$@"
	[ "$status" = 0 ] && [ -z "$stderr" ] && return 0
	printf '%s\n  exit %s (want 0)\n  stderr: %s\n' "$*" "$status" "$stderr" >&2
	return 1
}

# jq_is FILTER WANT: jq -c FILTER of the last run's stdout is exactly WANT
jq_is() {
	local got
	got=$(jq -c "$1" <<<"$output") || { echo "jq -c '$1' failed on: $output" >&2; return 1; }
	[ "$got" = "$2" ] && return 0
	printf "jq -c '%s'\n  got:  %s\n  want: %s\n" "$1" "$got" "$2" >&2
	return 1
}

# lines_are [--stderr] LINE...: the last run printed exactly these lines on stdout
# (on stderr with --stderr; bats' lines, empty ones left out); when not, says which
lines_are() {
	local i=0 want name=lines
	[ "$1" = --stderr ] && { name=stderr_lines; shift; }
	local -n _got=$name
	for want in "$@"; do
		[ "${_got[i]-}" = "$want" ] || {
			printf 'line %d: %s\n  want: %s\n' "$i" "${_got[i]-(none)}" "$want" >&2
			return 1
		}
		i=$((i + 1))
	done
	[ "${#_got[@]}" = $# ] || { echo "${#_got[@]} lines, want $#" >&2; return 1; }
}

# term_ok PID: SIGTERM a background job of this test; it must exit 0
term_ok() {
	local rc=0
	kill -TERM "$1"
	wait "$1" || rc=$?
	[ "$rc" = 0 ] || { echo "exit $rc after SIGTERM" >&2; return 1; }
}

# fails_with STATUS STDERR CMD...: CMD exits STATUS with nothing on stdout and
# exactly STDERR on stderr; when not, says the command and what it got
fails_with() {
	local want=$1 err=$2
	shift 2
	run --separate-stderr "$@"
	[ "$status" = "$want" ] && [ -z "$output" ] && [ "$stderr" = "$err" ] && return 0
	printf '%s\n  exit %s (want %s)\n  stdout: %s\n  stderr: %s\n  want:   %s\n' \
		"$*" "$status" "$want" "$output" "$stderr" "$err" >&2
	return 1
}

# table_rows < table: the table's rows without blank lines and "# name" lines;
# each row is prefixed with the name above it and a tab ("-" if none)
table_rows() {
	local line name=-
	while IFS= read -r line; do
		case $line in
		'' | '#'*) [ -n "$line" ] && name=${line#\# } ;;
		*) printf '%s\t%s\n' "$name" "$line" ;;
		esac
	done
}

# input_errors TOOL < table: each row "args|message[|stdin]" (args eval'd as words,
# stdin as one word, empty if none), a "# name" line above it names it: TOOL exits 2
# with nothing on stdout and exactly "TOOL: message" on stderr.  Every row runs; the
# failing ones are named
input_errors() {
	local tool=$1 name args msg in bad=0
	while IFS=$'\t' read -r name args; do
		IFS='|' read -r args msg in <<<"$args"
		eval "set -- $args"
		eval "in=$in"
		fails_with 2 "$tool: $msg" "$tool" "$@" <<<"$in" || { echo "^ row: $name" >&2; bad=1; }
	done < <(table_rows)
	return $bad
}

# usage_errors TOOL < table: each row "args|message" (args eval'd as words) must exit
# 2 with nothing on stdout and exactly the two usage lines on stderr; rows as above
usage_errors() {
	local tool=$1 name args msg bad=0
	while IFS=$'\t' read -r name args; do
		IFS='|' read -r args msg <<<"$args"
		eval "set -- $args"
		fails_with 2 "$tool: $msg"$'\n'"Try '$tool --help' for more information." \
			"$tool" "$@" </dev/null || { echo "^ row: $name" >&2; bad=1; }
	done < <(table_rows)
	return $bad
}

# epoch TIME: an RFC 3339 time (a fraction, or openssl's ISO 8601 with a space
# for the T, allowed) as seconds since the epoch, computed by jq: no clock is read
epoch() {
	jq -rn --arg t "${1/ /T}" '$t | sub("\\.[0-9]+"; "") | fromdateiso8601'
}

# serve_state NAME:IMAGE...: what kubelet-serve's tests serve: PKI (the
# certificates setup_file made), T, and a kt-agent state directory S with one
# pod, default/web-1 (UID1, its directory POD), of these containers
serve_state() {
	local c list=""
	PKI=$BATS_FILE_TMPDIR/pki
	T=$BATS_TEST_TMPDIR
	S=$T/state
	UID1=0b6c0a4e-0000-4000-8000-000000000001
	POD=$S/pods/$UID1
	for c; do
		mkdir -p "$POD/containers/${c%%:*}"
		list="$list${list:+,}{\"name\":\"${c%%:*}\",\"image\":\"${c#*:}\"}"
	done
	echo default >"$POD/ns"
	echo web-1 >"$POD/name"
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"default","uid":"%s"},"spec":{"containers":[%s]}}\n' \
		"$UID1" "$list" >"$POD/pod.json"
	# the serving certificate, where a test may replace it
	cp "$PKI/server.crt" "$T/tls.crt"
	cp "$PKI/server.key" "$T/tls.key"
}

# serve_kubelet [OPTIONS...]: kubelet-serve on serve_state's S, an ephemeral
# port of loopback ($port, its pid $srv_pid), -v 2 into $T/serve.log
serve_kubelet() {
	kubelet-serve --state-dir="$S" --address=127.0.0.1 --port=0 \
		--tls-cert-file="$T/tls.crt" --tls-private-key-file="$T/tls.key" \
		--client-ca-file="$PKI/ca.crt" --authorization-mode=AlwaysAllow \
		-v 2 --log-file="$T/serve.log" "$@" 2>"$T/serve.err" &
	srv_pid=$!
	wait_until 100 0.05 grep -q ' port=' "$T/serve.log"
	port=$(sed -n 's/.* port=\([0-9]*\).*/\1/p' "$T/serve.log" | head -n 1)
}
