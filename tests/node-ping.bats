#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-ping: leases created, renewed, repaired; loop, check, fleet; bad input

load helper

@test "node-ping: --help shows an example" {
  run -0 --separate-stderr node-ping --help
  [ -z "$stderr" ]
  [[ "$output" == *"Example:"* ]]
}
