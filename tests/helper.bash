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

# runs a tool under valgrind when KT_VALGRIND=1 (make check KT_VALGRIND=1)
if [ "${KT_VALGRIND:-0}" = 1 ]; then
	kt_valgrind_wrap() {
		local bin="$KT_BUILDDIR/$1"
		shift
		valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
			"$bin" "$@"
	}
fi
