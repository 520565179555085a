#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# strategic-patch: diff, diff3 and apply on built-in and OpenAPI schemas, and bad input

load helper

# --------------------------------------------------------------- behaviour

@test "strategic-patch: diff of two nodes merges conditions on type" {
	run -0 --separate-stderr strategic-patch diff "$FIX/node-last.json" "$FIX/node-desired.json"
	[ "$output" = "$(cat "$FIX/diff.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: diff reads YAML and gives the same patch" {
	run -0 --separate-stderr strategic-patch diff "$FIX/node-last.yaml" "$FIX/node-desired.json"
	[ "$output" = "$(cat "$FIX/diff.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: diff3 keeps what only the live node has" {
	run -0 --separate-stderr strategic-patch diff3 "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json"
	[ "$output" = "$(cat "$FIX/diff3.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: a YAML key repeated after an anchor takes the first one's place" {
	# found by fuzzing: with an anchor in the document, a repeated key that was
	# not the first or last failed as "out of memory" and leaked its value
	printf 'data:\n  a: &x "1"\n  b: "2"\n  c: *x\n  b: "4"\n' >"$BATS_TEST_TMPDIR/p.yaml"
	echo '{"kind":"ConfigMap"}' >"$BATS_TEST_TMPDIR/cm.json"
	run -0 --separate-stderr strategic-patch apply "$BATS_TEST_TMPDIR/cm.json" "$BATS_TEST_TMPDIR/p.yaml"
	[ "$output" = '{"kind":"ConfigMap","data":{"a":"1","b":"4","c":"1"}}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: apply keeps the object's key order and places new conditions as upstream" {
	run -0 --separate-stderr strategic-patch apply "$FIX/node-live.json" "$FIX/diff3.out.json"
	[ "$output" = "$(cat "$FIX/apply.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: apply --sort-keys sorts the object's keys" {
	run -0 --separate-stderr strategic-patch apply -S "$FIX/node-live.json" "$FIX/diff3.out.json"
	[ "$output" = "$(cat "$FIX/apply-sorted.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: apply reads the patch from standard input" {
	run -0 --separate-stderr strategic-patch apply "$FIX/node-live.json" - < "$FIX/diff3.out.json"
	[ "$output" = "$(cat "$FIX/apply.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: diff of pods merges containers, ports and env, keeps numbers exact" {
	run -0 --separate-stderr strategic-patch diff "$FIX/pod-old.json" "$FIX/pod-new.json"
	[ "$output" = "$(cat "$FIX/pod-diff.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: applying a diff gives the modified object back" {
	run -0 --separate-stderr strategic-patch apply -S "$FIX/pod-old.json" "$FIX/pod-diff.out.json"
	[ "$output" = '{"kind":"Pod","spec":{"containers":[{"image":"s:1","name":"sidecar"},{"env":[{"name":"B","value":"2"}],"image":"a:2","name":"app","ports":[{"containerPort":80},{"containerPort":443}]}],"priority":9223372036854775807},"status":{"big":1e+21,"ratio":2.5,"small":1e-7}}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: --kind picks the schema when the input has no kind" {
	run -0 --separate-stderr strategic-patch diff --kind Node "$FIX/nokind.json" "$FIX/node-ready.json"
	[ "$output" = '{"kind":"Node","metadata":{"labels":{"zone":"a"}},"status":{"conditions":[{"status":"True","type":"Ready"}]}}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: a Lease patches like a JSON merge patch" {
	printf '{"kind":"Lease","spec":{"holderIdentity":"a","leaseDurationSeconds":40}}' > "$BATS_TEST_TMPDIR/old.json"
	printf '{"kind":"Lease","spec":{"holderIdentity":"b"}}' > "$BATS_TEST_TMPDIR/new.json"
	run -0 --separate-stderr strategic-patch diff "$BATS_TEST_TMPDIR/old.json" "$BATS_TEST_TMPDIR/new.json"
	[ "$output" = '{"spec":{"holderIdentity":"b","leaseDurationSeconds":null}}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: the built-in Node schema and openapi-core.json give the same diff3" {
	run -0 --separate-stderr strategic-patch diff3 --schema "$KT_SRCDIR/tests/fixtures/openapi-core.json" --definition io.k8s.api.core.v1.Node "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json"
	[ "$output" = "$(cat "$FIX/diff3.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: diff3 --no-overwrite reports a conflict with both sides" {
	run -1 --separate-stderr strategic-patch diff3 --no-overwrite "$FIX/node-last.json" "$FIX/node-desired-role.json" "$FIX/node-live-changed.json"
	[ -z "$output" ]
	[ "$stderr" = 'strategic-patch: conflict: patch {"metadata":{"labels":{"role":"gateway"}}} conflicts with changes made from original to current: {"metadata":{"labels":{"role":"core"}}}' ]
}

@test "strategic-patch: diff3 overwrites the same change by default" {
	run -0 --separate-stderr strategic-patch diff3 "$FIX/node-last.json" "$FIX/node-desired-role.json" "$FIX/node-live-changed.json"
	[ "$output" = '{"metadata":{"labels":{"role":"gateway"}}}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: diff3 --no-overwrite passes when there is no conflict" {
	run -0 --separate-stderr strategic-patch diff3 --no-overwrite "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json"
	[ "$output" = "$(cat "$FIX/diff3.out.json")" ]
	[ -z "$stderr" ]
}

@test "strategic-patch: --stream gives one line per set and reports a failing set by number" {
	cat "$FIX/node-last.json" "$FIX/node-ready.json" "$FIX/node-last.json" > "$BATS_TEST_TMPDIR/a.json"
	cat "$FIX/node-desired.json" "$FIX/node-cond-strings.json" "$FIX/node-last.json" > "$BATS_TEST_TMPDIR/b.json"
	run -2 --separate-stderr strategic-patch diff --stream "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "$(cat "$FIX/diff.out.json")" ]
	[ "${lines[1]}" = '{}' ]
	[ "$stderr" = 'strategic-patch: document 2: status.conditions: list element types are not identical: [[map[status:True type:Ready]] [Ready]]' ]
}

@test "strategic-patch: --stream stops when the operands differ in length" {
	cat "$FIX/node-last.json" "$FIX/node-last.json" > "$BATS_TEST_TMPDIR/a.json"
	run -2 --separate-stderr strategic-patch diff --stream "$BATS_TEST_TMPDIR/a.json" "$FIX/node-last.json"
	[ "$output" = '{}' ]
	[ "$stderr" = 'strategic-patch: the operands hold different numbers of documents' ]
}

@test "strategic-patch: --stream reads YAML documents separated by ---" {
	printf 'kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: b}\n' > "$BATS_TEST_TMPDIR/a.yaml"
	printf 'kind: Node\nmetadata: {name: a, labels: {x: "1"}}\n---\nkind: Node\nmetadata: {name: c}\n' > "$BATS_TEST_TMPDIR/b.yaml"
	run -0 --separate-stderr strategic-patch diff --stream "$BATS_TEST_TMPDIR/a.yaml" "$BATS_TEST_TMPDIR/b.yaml"
	[ "$output" = '{"metadata":{"labels":{"x":"1"}}}
{"metadata":{"name":"c"}}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: an OpenAPI v3 schema (allOf references) merges on the merge key" {
	printf '{"mergingList":[{"name":"a","value":"1"}]}' > "$BATS_TEST_TMPDIR/a.json"
	printf '{"mergingList":[{"name":"b"},{"name":"a","value":"2"}]}' > "$BATS_TEST_TMPDIR/b.json"
	run -0 --separate-stderr strategic-patch diff --schema "$KT_SRCDIR/tests/fixtures/smp-conformance/swagger-merge-item-v3.json" --definition mergeItem "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
	[ "$output" = '{"$setElementOrder/mergingList":[{"name":"b"},{"name":"a"}],"mergingList":[{"name":"b"},{"name":"a","value":"2"}]}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: --pretty indents the sorted patch" {
	run -0 --separate-stderr strategic-patch diff --pretty -k Node "$FIX/nokind.json" "$FIX/node-ready.json"
	[ "$output" = '{
  "kind": "Node",
  "metadata": {
    "labels": {
      "zone": "a"
    }
  },
  "status": {
    "conditions": [
      {
        "status": "True",
        "type": "Ready"
      }
    ]
  }
}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: integers are exact to 64 bits, floats print as Go prints them" {
	printf '{"kind":"Node","a":9223372036854775807,"b":12345678901234567890,"c":1.50,"d":1e3,"e":-0}' > "$BATS_TEST_TMPDIR/n.json"
	run -0 --separate-stderr strategic-patch apply "$BATS_TEST_TMPDIR/n.json" "$BATS_TEST_TMPDIR/n.json"
	[ "$output" = '{"kind":"Node","a":9223372036854775807,"b":12345678901234567000,"c":1.5,"d":1000,"e":0}' ]
	[ -z "$stderr" ]
}

@test "strategic-patch: -v 4 logs each field's strategy and merge key on stderr" {
	run -0 --separate-stderr strategic-patch -v 4 diff "$FIX/node-last.json" "$FIX/node-desired.json"
	[ "$output" = "$(cat "$FIX/diff.out.json")" ]
	[[ "$stderr" =~ I[0-9]{4}\ [0-9:.]+\ +[0-9]+\ smp\.c:[0-9]+\]\ \"smp\ field\"\ path=\"status.conditions\"\ strategy=\"merge\"\ mergeKey=\"type\" ]]
	[ "${#stderr_lines[@]}" -eq 6 ]
}

# ------------------------------------------------------------- bad input
# each row: exit 2, nothing on stdout, one line naming the place

bad() {
	local want="$1"
	shift
	run -2 --separate-stderr strategic-patch "$@"
	[ -z "$output" ]
	[ "$stderr" = "$want" ]
}

bad_usage() {
	local want="$1"
	shift
	run -2 --separate-stderr strategic-patch "$@"
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	[ "${stderr_lines[0]}" = "$want" ]
	[ "${stderr_lines[1]}" = "Try 'strategic-patch --help' for more information." ]
}

@test "strategic-patch: bad input: a document that is not an object" {
	cd "$FIX"
	bad "strategic-patch: invalid JSON document: 'array.json': not an object" diff array.json node-ready.json
}

@test "strategic-patch: bad input: malformed JSON names file, line and column" {
	cd "$FIX"
	bad "strategic-patch: invalid JSON document: malformed.json:2:31: unexpected '}', expected a string key" diff malformed.json node-ready.json
}

@test "strategic-patch: bad input: malformed YAML names file, line and column" {
	cd "$FIX"
	bad "strategic-patch: invalid JSON document: malformed.yaml:3:1: did not find expected node content while parsing a flow node" apply node-ready.json malformed.yaml
}

@test "strategic-patch: bad input: an empty file" {
	cd "$FIX"
	bad "strategic-patch: invalid JSON document: empty.json: empty input, expected a document" apply node-ready.json empty.json
}

@test "strategic-patch: bad input: a merge list element without its merge key" {
	cd "$FIX"
	bad "strategic-patch: status.conditions: map: map[status:True] does not contain declared merge key: type" apply node-ready.json patch-no-merge-key.json
}

@test "strategic-patch: bad input: list elements change type between original and modified" {
	cd "$FIX"
	bad "strategic-patch: status.conditions: list element types are not identical: [[map[status:True type:Ready]] [Ready]]" diff node-ready.json node-cond-strings.json
}

@test "strategic-patch: bad input: a list of lists in a merge list" {
	cd "$FIX"
	bad "strategic-patch: spec.podCIDRs: list element types are not identical: [[10.0.0.0/24] [[10.0.0.0/24]]]" diff node-cidr.json node-cidr-lists.json
}

@test "strategic-patch: bad input: a list of lists added to a merge list" {
	printf '{"kind":"Node","spec":{"podCIDRs":[["a"]]}}' > "$BATS_TEST_TMPDIR/a.json"
	bad "strategic-patch: spec.podCIDRs: lists of lists are not supported" apply "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/a.json"
}

@test "strategic-patch: bad input: an unknown \$patch directive in a map" {
	cd "$FIX"
	bad "strategic-patch: metadata.labels: unknown patch type: frobnicate in map: map[\$patch:frobnicate]" apply node-ready.json patch-unknown-directive.json
}

@test "strategic-patch: bad input: \$patch: merge in a list" {
	cd "$FIX"
	bad "strategic-patch: status.conditions: merging lists cannot yet be specified in the patch" apply node-ready.json patch-list-merge.json
}

@test "strategic-patch: bad input: \$retainKeys that is not a list" {
	cd "$FIX"
	bad "strategic-patch: metadata: invalid patch format of retainKeys" apply node-ready.json patch-retainkeys-string.json
}

@test "strategic-patch: bad input: \$retainKeys that leaves out a patched key" {
	cd "$FIX"
	bad "strategic-patch: metadata: invalid patch format of retainKeys" apply node-ready.json patch-retainkeys-missing.json
}

@test "strategic-patch: bad input: a patch list out of \$setElementOrder's order" {
	cd "$FIX"
	bad "strategic-patch: status.conditions: The order in patch list: [map[status:False type:Disk] map[status:True type:Ready]] doesn't match \$setElementOrder list: [map[type:Ready]]" apply node-ready.json patch-order-mismatch.json
}

@test "strategic-patch: bad input: \$setElementOrder that is not a list" {
	cd "$FIX"
	bad "strategic-patch: status.\$setElementOrder/conditions: expected a []interface {}, but received a string" apply node-ready.json patch-order-string.json
}

@test "strategic-patch: bad input: \$deleteFromPrimitiveList without a field" {
	cd "$FIX"
	bad "strategic-patch: metadata.\$deleteFromPrimitiveList: invalid patch format of primitive list" apply node-ready.json patch-delete-list-key.json
}

@test "strategic-patch: bad input: a \$patch value that is not a string" {
	cd "$FIX"
	bad "strategic-patch: metadata.\$patch: invalid value for special key: \$patch" diff -k Node patch-directive-number.json patch-directive-number2.json
}

@test "strategic-patch: bad input: a field the OpenAPI schema does not have" {
	printf '{"status":{"extra":{"a":1}}}' > "$BATS_TEST_TMPDIR/a.json"
	printf '{"status":{"extra":{"a":2}}}' > "$BATS_TEST_TMPDIR/b.json"
	bad 'strategic-patch: status.extra: unable to find api field "extra" in io.k8s.api.core.v1.NodeStatus' diff --schema "$KT_SRCDIR/tests/fixtures/openapi-core.json" --definition io.k8s.api.core.v1.Node "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
}

@test "strategic-patch: bad input: a schema file that is not OpenAPI" {
	cd "$FIX"
	bad "strategic-patch: not-openapi.json: not an OpenAPI document: no 'definitions' (v2) or 'components.schemas' (v3)" diff --schema not-openapi.json --definition Node nokind.json nokind.json
}

@test "strategic-patch: bad input: --definition that the schema does not define" {
	bad "strategic-patch: $KT_SRCDIR/tests/fixtures/openapi-core.json: no definition 'io.k8s.api.core.v1.Nope'" diff --schema "$KT_SRCDIR/tests/fixtures/openapi-core.json" --definition io.k8s.api.core.v1.Nope "$FIX/nokind.json" "$FIX/nokind.json"
}

@test "strategic-patch: bad input: an unknown kind" {
	cd "$FIX"
	bad "strategic-patch: unknown kind 'Secret': built in are Node, Pod, Lease, ConfigMap, Service, Deployment, ObjectMeta" apply --kind Secret node-ready.json node-ready.json
}

@test "strategic-patch: bad input: no kind and no schema" {
	cd "$FIX"
	bad "strategic-patch: no schema: give --kind or --schema, or a 'kind' in the input" diff nokind.json nokind.json
}

@test "strategic-patch: bad input: a file that does not exist" {
	cd "$FIX"
	bad "strategic-patch: cannot open 'missing.json': No such file or directory" diff missing.json nokind.json
}

@test "strategic-patch: bad usage: a missing operand" {
	cd "$FIX"
	bad_usage "strategic-patch: diff3: missing operand: expected 3 files" diff3 node-ready.json node-ready.json
}

@test "strategic-patch: bad usage: an extra operand" {
	cd "$FIX"
	bad_usage "strategic-patch: apply: unexpected operand 'nokind.json'" apply node-ready.json node-ready.json nokind.json
}

@test "strategic-patch: bad usage: no command" {
	bad_usage "strategic-patch: missing command: diff, diff3 or apply"
}

@test "strategic-patch: bad usage: an unknown command" {
	bad_usage "strategic-patch: unknown command 'merge': expected diff, diff3 or apply" merge a b
}

@test "strategic-patch: bad usage: --schema without --definition" {
	bad_usage "strategic-patch: --schema and --definition go together" diff --schema x.json a b
}

@test "strategic-patch: bad usage: --no-overwrite outside diff3" {
	bad_usage "strategic-patch: --no-overwrite only applies to diff3" diff --no-overwrite a b
}

@test "strategic-patch: bad usage: --sort-keys outside apply" {
	bad_usage "strategic-patch: --sort-keys only applies to apply" diff -S a b
	bad_usage "strategic-patch: --sort-keys only applies to apply" diff3 --sort-keys a b c
}

@test "strategic-patch: the old spellings -s and --type still name the schema and definition" {
	run -0 --separate-stderr strategic-patch diff3 -s "$KT_SRCDIR/tests/fixtures/openapi-core.json" --type io.k8s.api.core.v1.Node "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json"
	[ "$output" = "$(cat "$FIX/diff3.out.json")" ]
	run -0 strategic-patch --help
	[[ "$output" != *"-s, --schema"* && "$output" != *"--type"* ]]
}

@test "strategic-patch: bad usage: standard input twice" {
	bad_usage "strategic-patch: standard input ('-') can be read only once" diff - -
}

@test "strategic-patch: bad input: a patch strategy that cannot be split" {
	cd "$FIX"
	bad "strategic-patch: items: unexpected patch strategy: [merge replace]" diff --schema bad-strategy-swagger.json --definition Thing thing-a.json thing-b.json
}
