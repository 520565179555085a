#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# strategic-patch: diff, diff3 and apply on built-in and OpenAPI schemas, and bad input

load helper

# --------------------------------------------------------------- behaviour

@test "strategic-patch: diff of two nodes merges conditions on type" {
	prints 0 "$(cat "$FIX/diff.out.json")" strategic-patch diff "$FIX/node-last.json" "$FIX/node-desired.json"
}

@test "strategic-patch: diff reads YAML and gives the same patch" {
	prints 0 "$(cat "$FIX/diff.out.json")" strategic-patch diff "$FIX/node-last.yaml" "$FIX/node-desired.json"
}

@test "strategic-patch: diff3 keeps what only the live node has" {
	prints 0 "$(cat "$FIX/diff3.out.json")" strategic-patch diff3 "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json"
}

@test "strategic-patch: a YAML key repeated after an anchor takes the first one's place" {
	# found by fuzzing: with an anchor in the document, a repeated key that was
	# not the first or last failed as "out of memory" and leaked its value
	printf 'data:\n  a: &x "1"\n  b: "2"\n  c: *x\n  b: "4"\n' >"$BATS_TEST_TMPDIR/p.yaml"
	echo '{"kind":"ConfigMap"}' >"$BATS_TEST_TMPDIR/cm.json"
	prints 0 '{"kind":"ConfigMap","data":{"a":"1","b":"4","c":"1"}}' strategic-patch apply "$BATS_TEST_TMPDIR/cm.json" "$BATS_TEST_TMPDIR/p.yaml"
}

@test "strategic-patch: apply keeps the object's key order and places new conditions as upstream" {
	prints 0 "$(cat "$FIX/apply.out.json")" strategic-patch apply "$FIX/node-live.json" "$FIX/diff3.out.json"
}

@test "strategic-patch: apply --sort-keys sorts the object's keys" {
	prints 0 "$(cat "$FIX/apply-sorted.out.json")" strategic-patch apply -S "$FIX/node-live.json" "$FIX/diff3.out.json"
}

@test "strategic-patch: apply reads the patch from standard input" {
	prints 0 "$(cat "$FIX/apply.out.json")" strategic-patch apply "$FIX/node-live.json" - < "$FIX/diff3.out.json"
}

@test "strategic-patch: diff of pods merges containers, ports and env, keeps numbers exact" {
	prints 0 "$(cat "$FIX/pod-diff.out.json")" strategic-patch diff "$FIX/pod-old.json" "$FIX/pod-new.json"
}

@test "strategic-patch: applying a diff gives the modified object back" {
	prints 0 '{"kind":"Pod","spec":{"containers":[{"image":"s:1","name":"sidecar"},{"env":[{"name":"B","value":"2"}],"image":"a:2","name":"app","ports":[{"containerPort":80},{"containerPort":443}]}],"priority":9223372036854775807},"status":{"big":1e+21,"ratio":2.5,"small":1e-7}}' strategic-patch apply -S "$FIX/pod-old.json" "$FIX/pod-diff.out.json"
}

@test "strategic-patch: --kind picks the schema when the input has no kind" {
	prints 0 '{"kind":"Node","metadata":{"labels":{"zone":"a"}},"status":{"conditions":[{"status":"True","type":"Ready"}]}}' strategic-patch diff --kind Node "$FIX/nokind.json" "$FIX/node-ready.json"
}

@test "strategic-patch: a Lease patches like a JSON merge patch" {
	printf '{"kind":"Lease","spec":{"holderIdentity":"a","leaseDurationSeconds":40}}' > "$BATS_TEST_TMPDIR/old.json"
	printf '{"kind":"Lease","spec":{"holderIdentity":"b"}}' > "$BATS_TEST_TMPDIR/new.json"
	prints 0 '{"spec":{"holderIdentity":"b","leaseDurationSeconds":null}}' strategic-patch diff "$BATS_TEST_TMPDIR/old.json" "$BATS_TEST_TMPDIR/new.json"
}

@test "strategic-patch: the built-in Node schema and openapi-core.json give the same diff3" {
	prints 0 "$(cat "$FIX/diff3.out.json")" strategic-patch diff3 --schema "$KT_SRCDIR/tests/fixtures/openapi-core.json" --definition io.k8s.api.core.v1.Node "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json"
}

@test "strategic-patch: diff3 --no-overwrite reports a conflict with both sides" {
	fails_with 1 'strategic-patch: conflict: patch {"metadata":{"labels":{"role":"gateway"}}} conflicts with changes made from original to current: {"metadata":{"labels":{"role":"core"}}}' strategic-patch diff3 --no-overwrite "$FIX/node-last.json" "$FIX/node-desired-role.json" "$FIX/node-live-changed.json"
}

@test "strategic-patch: diff3 overwrites the same change by default" {
	prints 0 '{"metadata":{"labels":{"role":"gateway"}}}' strategic-patch diff3 "$FIX/node-last.json" "$FIX/node-desired-role.json" "$FIX/node-live-changed.json"
}

@test "strategic-patch: diff3 --no-overwrite passes when there is no conflict" {
	prints 0 "$(cat "$FIX/diff3.out.json")" strategic-patch diff3 --no-overwrite "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json"
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
	prints 0 '{"$setElementOrder/mergingList":[{"name":"b"},{"name":"a"}],"mergingList":[{"name":"b"},{"name":"a","value":"2"}]}' strategic-patch diff --schema "$KT_SRCDIR/tests/fixtures/smp-conformance/swagger-merge-item-v3.json" --definition mergeItem "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
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
	prints 0 '{"kind":"Node","a":9223372036854775807,"b":12345678901234567000,"c":1.5,"d":1000,"e":0}' strategic-patch apply "$BATS_TEST_TMPDIR/n.json" "$BATS_TEST_TMPDIR/n.json"
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
	fails_with 2 "$want" strategic-patch "$@"
}

@test "strategic-patch: bad input: each row exits 2 with one line naming the place" {
	cd "$FIX"
	printf '{"kind":"Node","spec":{"podCIDRs":[["a"]]}}' > "$BATS_TEST_TMPDIR/lists.json"
	printf '{"status":{"extra":{"a":1}}}' > "$BATS_TEST_TMPDIR/a.json"
	printf '{"status":{"extra":{"a":2}}}' > "$BATS_TEST_TMPDIR/b.json"
	input_errors strategic-patch <<EOF
# a document that is not an object
diff array.json node-ready.json|invalid JSON document: 'array.json': not an object
# malformed JSON names file, line and column
diff malformed.json node-ready.json|invalid JSON document: malformed.json:2:31: unexpected '}', expected a string key
# malformed YAML names file, line and column
apply node-ready.json malformed.yaml|invalid JSON document: malformed.yaml:3:1: did not find expected node content while parsing a flow node
# an empty file
apply node-ready.json empty.json|invalid JSON document: empty.json: empty input, expected a document
# a merge list element without its merge key
apply node-ready.json patch-no-merge-key.json|status.conditions: map: map[status:True] does not contain declared merge key: type
# list elements change type between original and modified
diff node-ready.json node-cond-strings.json|status.conditions: list element types are not identical: [[map[status:True type:Ready]] [Ready]]
# a list of lists in a merge list
diff node-cidr.json node-cidr-lists.json|spec.podCIDRs: list element types are not identical: [[10.0.0.0/24] [[10.0.0.0/24]]]
# a list of lists added to a merge list
apply "\$BATS_TEST_TMPDIR/lists.json" "\$BATS_TEST_TMPDIR/lists.json"|spec.podCIDRs: lists of lists are not supported
# an unknown \$patch directive in a map
apply node-ready.json patch-unknown-directive.json|metadata.labels: unknown patch type: frobnicate in map: map[\$patch:frobnicate]
# \$patch: merge in a list
apply node-ready.json patch-list-merge.json|status.conditions: merging lists cannot yet be specified in the patch
# \$retainKeys that is not a list
apply node-ready.json patch-retainkeys-string.json|metadata: invalid patch format of retainKeys
# \$retainKeys that leaves out a patched key
apply node-ready.json patch-retainkeys-missing.json|metadata: invalid patch format of retainKeys
# a patch list out of \$setElementOrder's order
apply node-ready.json patch-order-mismatch.json|status.conditions: The order in patch list: [map[status:False type:Disk] map[status:True type:Ready]] doesn't match \$setElementOrder list: [map[type:Ready]]
# \$setElementOrder that is not a list
apply node-ready.json patch-order-string.json|status.\$setElementOrder/conditions: expected a []interface {}, but received a string
# \$deleteFromPrimitiveList without a field
apply node-ready.json patch-delete-list-key.json|metadata.\$deleteFromPrimitiveList: invalid patch format of primitive list
# a \$patch value that is not a string
diff -k Node patch-directive-number.json patch-directive-number2.json|metadata.\$patch: invalid value for special key: \$patch
# a field the OpenAPI schema does not have
diff --schema "\$KT_SRCDIR/tests/fixtures/openapi-core.json" --definition io.k8s.api.core.v1.Node "\$BATS_TEST_TMPDIR/a.json" "\$BATS_TEST_TMPDIR/b.json"|status.extra: unable to find api field "extra" in io.k8s.api.core.v1.NodeStatus
# a schema file that is not OpenAPI
diff --schema not-openapi.json --definition Node nokind.json nokind.json|not-openapi.json: not an OpenAPI document: no 'definitions' (v2) or 'components.schemas' (v3)
# --definition that the schema does not define
diff --schema "\$KT_SRCDIR/tests/fixtures/openapi-core.json" --definition io.k8s.api.core.v1.Nope "\$FIX/nokind.json" "\$FIX/nokind.json"|$KT_SRCDIR/tests/fixtures/openapi-core.json: no definition 'io.k8s.api.core.v1.Nope'
# an unknown kind
apply --kind Secret node-ready.json node-ready.json|unknown kind 'Secret': built in are Node, Pod, Lease, ConfigMap, Service, Deployment, ObjectMeta
# no kind and no schema
diff nokind.json nokind.json|no schema: give --kind or --schema, or a 'kind' in the input
# a file that does not exist
diff missing.json nokind.json|cannot open 'missing.json': No such file or directory
EOF
}

@test "strategic-patch: bad usage: each row exits 2 with the two usage lines" {
	cd "$FIX"
	usage_errors strategic-patch <<EOF
# a missing operand
diff3 node-ready.json node-ready.json|diff3: missing operand: expected 3 files
# an extra operand
apply node-ready.json node-ready.json nokind.json|apply: unexpected operand 'nokind.json'
# no command
|missing command: diff, diff3 or apply
# an unknown command
merge a b|unknown command 'merge': expected diff, diff3 or apply
# --schema without --definition
diff --schema x.json a b|--schema and --definition go together
# --kind and --schema exclude each other
diff --kind Node --schema x.json --definition Node a b|--kind and --schema cannot be used together
# a bad option value, said as every tool says it
diff --v=10 a b|invalid value '10' for --v: must be from 0 to 9
# --no-overwrite outside diff3
diff --no-overwrite a b|--no-overwrite only applies to diff3
# --sort-keys outside apply
diff -S a b|--sort-keys only applies to apply
diff3 --sort-keys a b c|--sort-keys only applies to apply
# standard input twice
diff - -|standard input ('-') can be read only once
EOF
}

@test "strategic-patch: the old spellings -s and --type, which mean --state and a patch type elsewhere, are gone" {
	local args=("$KT_SRCDIR/tests/fixtures/openapi-core.json" "$FIX/node-last.json" "$FIX/node-desired.json" "$FIX/node-live.json")
	fails_with 2 "strategic-patch: invalid option -- 's'
Try 'strategic-patch --help' for more information." strategic-patch diff3 -s "${args[@]}"
	fails_with 2 "strategic-patch: unrecognized option '--type'
Try 'strategic-patch --help' for more information." strategic-patch diff3 --type io.k8s.api.core.v1.Node "${args[@]}"
}

@test "strategic-patch: bad input: a patch strategy that cannot be split" {
	cd "$FIX"
	bad "strategic-patch: items: unexpected patch strategy: [merge replace]" diff --schema bad-strategy-swagger.json --definition Thing thing-a.json thing-b.json
}
