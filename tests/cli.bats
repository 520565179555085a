#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# cli: every tool keeps the common contract: help, version, usage errors, man page, completions

load helper

setup() {
	TOOLS=$(kt_tools)
	[ -n "$TOOLS" ]
}

@test "cli: every tool prints --help on stdout and exits 0" {
	for t in $TOOLS; do
		run -0 --separate-stderr "$t" --help
		[ -z "$stderr" ] || fail "$t --help wrote to stderr: $stderr"
		[[ "${lines[0]}" == "Usage: $t "* ]] || fail "$t --help first line: ${lines[0]}"
		[ "${lines[-1]}" = "See $t(1)." ] || fail "$t --help last line: ${lines[-1]}"
		[[ "$output" == *"Example"* ]] || fail "$t --help has no example"
	done
}

@test "cli: every tool prints --version in the house format" {
	for t in $TOOLS; do
		run -0 --separate-stderr "$t" --version
		[[ "$output" =~ ^$t\ from\ kubelet-tools\ [0-9]+\.[0-9]+\.[0-9]+$ ]] ||
			fail "$t --version: $output"
		[ -z "$stderr" ]
	done
}

@test "cli: no tool loads libcurl or libgit2 to print its version, only when it makes a request" {
	for t in $TOOLS; do
		run -0 --separate-stderr env LD_DEBUG=libs "$t" --version
		[[ "$stderr" == *libc.so.6* ]] || fail "$t: the dynamic loader said nothing: $stderr"
		[[ "$stderr" != *libcurl* ]] || fail "$t --version loaded libcurl"
		[[ "$stderr" != *libgit2* ]] || fail "$t --version loaded libgit2"
	done
	# the control: a request does load it
	run --separate-stderr env LD_DEBUG=libs kube-request --server=http://127.0.0.1:9 \
		--request-timeout=1s GET /api
	[[ "$stderr" == *libcurl* ]] || fail "kube-request made a request without libcurl: $stderr"
}

@test "cli: an unknown option is a usage error: exit 2, two lines on stderr, nothing on stdout" {
	for t in $TOOLS; do
		run -2 --separate-stderr "$t" --bogus-option
		[ -z "$output" ] || fail "$t wrote to stdout: $output"
		[ "${#stderr_lines[@]}" -eq 2 ] || fail "$t stderr: $stderr"
		[[ "${stderr_lines[0]}" == "$t: "* ]] || fail "$t first line: ${stderr_lines[0]}"
		[ "${stderr_lines[1]}" = "Try '$t --help' for more information." ]
	done
}

@test "cli: every long option in --help has a man page entry" {
	# options every tool shares are described once, in kubelet-tools(7)
	common="$KT_SRCDIR/man/kubelet-tools.7.scd"
	for t in $TOOLS; do
		page="$KT_SRCDIR/man/$t.1.scd"
		[ -f "$page" ] || fail "$t has no man page"
		for opt in $("$t" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
			re="(^|[^a-z-])$opt([^a-z-]|\$)"
			grep -qE -- "$re" "$page" || grep -qE -- "$re" "$common" ||
				fail "$t: $opt is in --help but in no man page"
		done
	done
}

@test "cli: every tool has bash and zsh completions and a test file" {
	for t in $TOOLS; do
		grep -qw -- "$t" "$KT_SRCDIR/completions/kt.bash" || fail "$t not in kt.bash"
		grep -qw -- "$t" "$KT_SRCDIR/completions/_kt.in" || fail "$t not in _kt.in"
		ls "$KT_SRCDIR"/tests/"$t"*.bats >/dev/null 2>&1 || fail "$t has no tests"
	done
}

@test "cli: -v takes 0 to 9, as documented; 10 is refused" {
	for t in $TOOLS; do
		[ "$t" = kt-agent ] && continue # it hands -v to the tools it runs
		run -2 --separate-stderr "$t" -v 10 --help
		[ -z "$output" ] || fail "$t -v 10 wrote to stdout"
		[ "${stderr_lines[0]}" = "$t: invalid value '10' for --v: must be from 0 to 9" ] ||
			fail "$t -v 10: $stderr"
		run -0 --separate-stderr "$t" -v 9 --version
	done
}

@test "cli: a KUBECONFIG that names no file is told so, not to set KUBECONFIG" {
	unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	export HOME=$BATS_TEST_TMPDIR
	KUBECONFIG=$BATS_TEST_TMPDIR/nonexistent fails_with 1 "kube-request: no kubeconfig found: KUBECONFIG='$BATS_TEST_TMPDIR/nonexistent' names no file that exists; pass --kubeconfig or --server" kube-request GET /api
	KUBECONFIG= run -1 --separate-stderr kube-request GET /api
	[ "$stderr" = "kube-request: no kubeconfig found: set KUBECONFIG, create ~/.kube/config or pass --kubeconfig or --server" ]
}

@test "cli: the README, node-ping(1) and the crontab example give one cron line" {
	local pat='^\* \* \* \* \* *node-ping '
	readme=$(grep -E "$pat" "$KT_SRCDIR/README.md")
	man=$(grep -E "$pat" "$KT_SRCDIR/man/node-ping.1.scd")
	cron=$(sed -n 's/^\*  *\*  *\*  *\*  *\*  *\(node-ping .*\) 2>&1 | logger.*/* * * * * \1/p' \
		"$KT_SRCDIR/examples/node-ping.crontab")
	[ -n "$readme" ] && [ "$readme" = "$man" ] && [ "$man" = "$cron" ] ||
		fail "README: $readme; node-ping(1): $man; crontab: $cron"
}

@test "cli: every environment variable the code reads is in kubelet-tools(7)" {
	local page="$KT_SRCDIR/man/kubelet-tools.7.scd" v
	vars=$(cat "$KT_SRCDIR"/lib/*.c "$KT_SRCDIR"/tools/*.c | grep -o 'getenv("[A-Z_]*")' |
		sed 's/getenv("\(.*\)")/\1/'
		grep -ho '\${KT_AGENT_[A-Z_]*' "$KT_SRCDIR"/agent/kt-agent.in | tr -d '${')
	[ -n "$vars" ]
	for v in $(sort -u <<<"$vars"); do
		grep -q "\*$v\*" "$page" || fail "$v is read but not in kubelet-tools(7)"
	done
}

@test "cli: a letter names one long option in every tool, as kubelet-tools(7)'s table says" {
	local page="$KT_SRCDIR/man/kubelet-tools.7.scd" t pair letter long seen=""
	# decided in kubelet-tools(7), not yet done by the tool's owner: a line
	# "tool -x --long" each, removed when its tool follows the table
	local pending=''
	for t in $TOOLS; do
		while read -r letter long; do
			grep -qxF -- "$t $letter $long" <<<"$pending" && continue
			pair=$(grep -m 1 -- "^$letter " <<<"$seen" || true)
			[ -z "$pair" ] || [ "$pair" = "$letter $long" ] ||
				fail "$t: $letter is $long, elsewhere ${pair#* }"
			seen+="$letter $long"$'\n'
			grep -qF -- "*$letter*, *$long*" "$page" ||
				fail "$t: $letter, $long is not in kubelet-tools(7)'s table"
		done < <("$t" --help | sed -n 's/^  \(-[[:alnum:]]\), \(--[[:alnum:]-]*\).*/\1 \2/p')
	done
}

@test "cli: lib never exits: cli.c, the tools' module that ends the process, is in tools/" {
	# a lib function that exits takes the decision from its caller (a fleet
	# of leases, a loop serving probes); kt_api_option lived in kcfg.c and did
	local src=${KT_SRCDIR:?} hits
	[ -f "$src/tools/cli.c" ] && [ ! -e "$src/lib/cli.c" ]
	hits=$(grep -nE '\<(exit|_exit|abort|kt_die|kt_usage_error)[[:space:]]*\(' "$src"/lib/*.c || true)
	[ -z "$hits" ] || fail "lib exits: $hits"
}

@test "cli: every include of lib/ and tools/ keeps to HACKING's layer table" {
	prints 0 '' sh "$KT_SRCDIR/tests/check-includes" "$KT_SRCDIR"
}

@test "cli: the include check names an include against the table, and a file not in it" {
	local t=$BATS_TEST_TMPDIR/tree
	mkdir -p "$t"
	cp -R "$KT_SRCDIR/HACKING" "$KT_SRCDIR/Makefile.am" "$KT_SRCDIR/mk" \
		"$KT_SRCDIR/lib" "$KT_SRCDIR/tools" "$t/"
	# core (layer 1) reaching up to json, loop to the tools' umbrella and
	# to smp's private header, kt.h to node-history's libgit2 half
	sed -i '0,/^#include "kt_err.h"/s//&\n#include "json.h"/' "$t/lib/core.c"
	sed -i '0,/^#include "loop.h"/s//&\n#include "kt.h"\n#include "smp_int.h"/' "$t/lib/loop.c"
	sed -i '0,/^#include "history.h"/s//&\n#include "history_git.h"/' "$t/lib/kt.h"
	: > "$t/lib/stray.c"
	run --separate-stderr sh "$KT_SRCDIR/tests/check-includes" "$t"
	[ "$status" = 1 ]
	lines_are "lib/core.c:$(grep -n '^#include "json.h"' "$t/lib/core.c" | cut -d: -f1): includes json.h (layer 2) from layer 1" \
		"lib/kt.h:$(grep -n '^#include "history_git.h"' "$t/lib/kt.h" | cut -d: -f1): includes history_git.h, which is not in libkt.a" \
		"lib/loop.c:$(grep -n '^#include "kt.h"' "$t/lib/loop.c" | cut -d: -f1): includes kt.h, the umbrella of the tools: include what is used" \
		"lib/loop.c:$(grep -n 'smp_int.h' "$t/lib/loop.c" | cut -d: -f1): includes smp_int.h, private to module smp" \
		"lib/stray.c: not in the layer table of HACKING"
}

@test "cli: the C files on tests/check-format's list keep .clang-format's style" {
	command -v clang-format >/dev/null || skip "no clang-format"
	prints 0 '' sh "$KT_SRCDIR/tests/check-format" "$KT_SRCDIR"
}

@test "cli: the package depends on what the tools dlopen, the sonames configure picked" {
	local config=$KT_BUILDDIR/config.h deps pkg soname
	# what dpkg-shlibdeps cannot see is computed at build time, never written down
	grep -q '^Depends:.*\${kt:Dlopen}' "$KT_SRCDIR/debian/control"
	! grep -q '^Depends:.*\(libcurl\|libgit2\)' "$KT_SRCDIR/debian/control"
	grep -q 'dlopen-depends config.h' "$KT_SRCDIR/debian/rules"
	command -v dpkg-query >/dev/null || skip "not a Debian system"
	run -0 --separate-stderr sh "$KT_SRCDIR/debian/dlopen-depends" "$config"
	deps=$output
	for def in KT_CURL_SONAME KT_LIBGIT2_SONAME; do
		soname=$(sed -n "s/^#define $def \"\(.*\)\"$/\1/p" "$config")
		[ -n "$soname" ]
		# some package in the Depends ships the file the tools open
		for pkg in $(sed 's/ ([^)]*)//g; s/,/ /g' <<<"$deps"); do
			dpkg-query -L "$pkg" | grep -q "/$soname\$" && continue 2
		done
		fail "no package in '$deps' ships $soname"
	done
	[[ $deps == *'(>= 7.84)'* ]]
	# a soname no package ships is an error, not a wrong Depends
	sed 's/^#define KT_LIBGIT2_SONAME .*/#define KT_LIBGIT2_SONAME "libgit2.so.0.0.nowhere"/' \
		"$config" >"$BATS_TEST_TMPDIR/config.h"
	run -1 --separate-stderr sh "$KT_SRCDIR/debian/dlopen-depends" "$BATS_TEST_TMPDIR/config.h"
	[ "$stderr" = 'dlopen-depends: no installed package ships libgit2.so.0.0.nowhere' ]
	[ -z "$output" ]
}

@test "cli: no test sleeps a second or more or bounds the time a command took" {
	cd "$KT_SRCDIR/tests"
	local files=(*.bats *.bash apiserver/*.bash)
	# bash's clocks, date's seconds, python's clocks: what a test would time
	# itself with.  A test asserts on the server's request log, a count
	# reached, or what the tool printed
	run grep -nE '\$\{?SECONDS\b|\bSECONDS[+-]?=|\bEPOCH(REALTIME|SECONDS)\b|\bdate\b[^|;]*\+%s|\btime\.(time|monotonic|perf_counter)\(' "${files[@]}"
	[ -z "$output" ] || fail "timed by the wall clock:"$'\n'"$output"
	# a sleep of a second or more run by the test: one that stands for a hung
	# process (in the background, exec'd, or in the text of a probe or a
	# check) is no wait; and wait_until polls less than a second apart
	run python3 - "${files[@]}" <<'EOF'
import re, sys
for name in sys.argv[1:]:
    for n, line in enumerate(open(name, encoding="utf-8"), 1):
        for m in re.finditer(r'\bsleep\s+"?([0-9.]+)', line):
            before, after = line[:m.start()].rstrip(), line[m.end():]
            if before.endswith(("'", '"', "exec")) or re.match(r'\s*&(?!&)', after):
                continue
            if float(m.group(1)) >= 1:
                print("%s:%d: %s" % (name, n, line.strip()))
        for m in re.finditer(r'\bwait_until\s+\S+\s+([0-9.]+)', line):
            if float(m.group(1)) >= 1:
                print("%s:%d: %s" % (name, n, line.strip()))
EOF
	[ "$status" = 0 ] && [ -z "$output" ] || fail "waits a second or more:"$'\n'"$output"
}
