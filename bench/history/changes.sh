#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/history/changes.sh [BUILDDIR] [N]: builds changes.c against BUILDDIR's
# libkt.a (default _build) and prints the CPU of one event of a node with up
# to N conditions (default 8000), doubling from 500.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:-$top/_build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -I"$top/lib" -I"$build" -include "$build/config.h" -o "$work/changes" "$here/changes.c" \
	"$build/lib/libkt.a" $(pkg-config --cflags --libs libcjson yaml-0.1) -lm
"$work/changes" "${2:-8000}"
