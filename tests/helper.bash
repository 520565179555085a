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
	mkdir -p "$BATS_RUN_TMPDIR/python-bin"
	ln -sf /usr/bin/python3 "$BATS_RUN_TMPDIR/python-bin/python3"
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
		mkdir -p "$_vg"
		for _t in $(kt_tools); do
			[ "$(head -c 4 "$KT_BUILDDIR/$_t" 2>/dev/null | tail -c 3)" = ELF ] || continue
			printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "%s" "$@"\n' \
				"$KT_BUILDDIR/$_t" >"$_vg/$_t"
			chmod +x "$_vg/$_t"
		done
	fi
	PATH="$_vg:$PATH"
	export PATH
	unset _vg _t
fi

# usage_errors TOOL < table: each line "args|message" (args eval'd as words)
# must exit 2 with nothing on stdout and exactly the two usage lines on stderr
usage_errors() {
	local tool=$1 args msg
	while IFS='|' read -r args msg; do
		eval "set -- $args"
		run -2 --separate-stderr "$tool" "$@"
		[ -z "$output" ] || { echo "$args: stdout: $output"; return 1; }
		[ "${stderr_lines[0]}" = "$tool: $msg" ] || { echo "$args: ${stderr_lines[0]}"; return 1; }
		[ "${stderr_lines[1]}" = "Try '$tool --help' for more information." ] || return 1
		[ "${#stderr_lines[@]}" -eq 2 ] || { echo "$args: ${#stderr_lines[@]} lines"; return 1; }
	done
}
