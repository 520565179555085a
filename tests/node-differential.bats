#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-differential: node-patch3way's patches on random nodes, applied by kubectl and by us

load helper

@test "node-differential: 300 random node pairs (30 under valgrind): kubectl applies our patch as we do, foreign state kept" {
	command -v "${KT_KUBECTL:-kubectl}" >/dev/null || skip "kubectl not installed"
	# under valgrind each run of the tool takes a second or more: fewer
	# cases there, the full 300 otherwise
	n=300
	[ "${KT_VALGRIND:-0}" != 1 ] || n=30
	# a fresh seed each run; the failure output names it, and
	# KT_DIFF_SEED=<seed> replays a run
	run --separate-stderr python3 "$KT_SRCDIR/tests/node-differential.py" --cases "$n" \
		${KT_DIFF_SEED:+--seed "$KT_DIFF_SEED"}
	# the failing cases and the seed to replay them, when there are any
	[ "$status" -eq 0 ] || fail "$stderr"
	[[ "$output" =~ ^$n\ cases\ passed\ \(seed\ [0-9]+\)$ ]]
	[ -z "$stderr" ]
}

@test "node-differential: a wrong patch is caught (the checker can fail)" {
	command -v "${KT_KUBECTL:-kubectl}" >/dev/null || skip "kubectl not installed"
	# a stand-in for node-patch3way that drops every deletion from the patch
	cat > "$BATS_TEST_TMPDIR/np3" <<-'SH'
	#!/bin/sh
	node-patch3way "$@" | jq -c 'if has("patch") then .patch |= del(.. | nulls)
		| .node = .node else . end'
	SH
	chmod +x "$BATS_TEST_TMPDIR/np3"
	run -1 --separate-stderr python3 "$KT_SRCDIR/tests/node-differential.py" --cases 20 \
		--seed 7 --tool "$BATS_TEST_TMPDIR/np3"
	[ -z "$output" ]
	[[ "${stderr_lines[0]}" =~ ^seed\ 7:\ [0-9]+\ of\ 20\ cases\ failed$ ]]
}
