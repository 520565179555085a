#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kube-request against the local API server
load helper

@test "kube-request: --help exits 0" {
  run -0 --separate-stderr kube-request --help
  [ -z "$stderr" ]
}
