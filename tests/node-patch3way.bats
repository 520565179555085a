#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-patch3way: the three-way node status patch, offline and against the local API server

load helper

# a server of its own for each test, so that tests can run in parallel
# (bats --jobs) and none sees another's objects, faults or request log
setup() {
	cd "$FIX"
	apiserver_start
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME"
	unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	export KUBECONFIG=$KUBECONFIG_FILE
}

teardown() {
	apiserver_stop
}

SA=virtual-kubelet.io/last-applied-node-status
MA=virtual-kubelet.io/last-applied-object-meta

# ---------------------------------------------------------------- offline

@test "node-patch3way: worked example A: foreign condition kept, dropped condition deleted" {
	run -0 --separate-stderr node-patch3way --current example-a.current.json example-a.desired.json
	[ "$output" = "$(cat example-a.patch.json)" ]
	[ -z "$stderr" ]
}

@test "node-patch3way: worked example A -o node: conditions A and C, labels kept" {
	run_ok node-patch3way --current example-a.current.json -o node \
		example-a.desired.json
	jq_is '[.status.conditions[] | [.type, .lastHeartbeatTime]]' \
		'[["A","2024-05-01T10:00:20Z"],["C",null]]'
	jq_is '.metadata.labels' '{"type":"virtual-kubelet","team":"x"}'
	[ "$(jq -r --arg k "$SA" '.metadata.annotations[$k]' <<<"$output")" = \
		"$(jq -r --arg k "$SA" '.metadata.annotations[$k]' example-a.patch.json)" ]
}

@test "node-patch3way: worked example B: upgrade path deletes nothing" {
	run -0 --separate-stderr node-patch3way --current example-b.current.json < example-b.desired.json
	[ "$output" = "$(cat example-b.patch.json)" ]
	[ -z "$stderr" ]
}

@test "node-patch3way: worked example B -o node keeps the annotation, label and condition set before" {
	run_ok node-patch3way --current example-b.current.json -o node \
		example-b.desired.json
	[ "$(jq -c '[.metadata.annotations.before, .metadata.annotations.test, .metadata.labels.x]' \
		<<<"$output")" = '["v","v","y"]' ]
	jq_is '[.status.conditions[] | .type + "=" + .status]' \
		'["Ready=True","Foreign=True"]'
}

@test "node-patch3way: -o both prints the patch and the patched node" {
	run_ok node-patch3way --current example-a.current.json -o both \
		example-a.desired.json
	jq_is '.patch' "$(jq -c . example-a.patch.json)"
	jq_is '[.node.metadata.name, (.node.status.conditions | length)]' \
		'["vk",2]'
}

@test "node-patch3way: emptied labels are deleted per key, never as a whole field" {
	run_ok node-patch3way --current example-a.current.json -o both \
		<<<'{"status":{"conditions":[{"type":"A","status":"True"}]}}'
	jq_is '.patch.metadata.labels' '{"type":null}'
	jq_is '.node.metadata.labels' '{"team":"x"}'
}

@test "node-patch3way: emptied conditions are deleted per element, foreign ones survive" {
	run_ok node-patch3way --current example-a.current.json -o both \
		<<<'{"metadata":{"labels":{"type":"virtual-kubelet"}},"status":{"conditions":[]}}'
	jq_is '.patch.status' \
		'{"conditions":[{"$patch":"delete","type":"A"},{"$patch":"delete","type":"B"}]}'
	jq_is '.node.status.conditions' '[{"type":"C","status":"True"}]'
}

@test "node-patch3way: an emptied annotation and address set deletes per element" {
	run_ok node-patch3way --current stash-addresses.current.json -o both \
		<<<'{"status":{"addresses":[]}}'
	jq_is '[.patch.metadata.annotations.mine, .patch.status.addresses]' \
		'[null,[{"$patch":"delete","type":"InternalIP"}]]'
	[ "$(jq -c '[.node.metadata.annotations.theirs, .node.metadata.annotations.mine,
		.node.status.addresses]' <<<"$output")" = \
		'["t",null,[{"type":"Hostname","address":"theirs"}]]' ]
}

@test "node-patch3way: taking over a node stashed by virtual-kubelet deletes nothing" {
	run_ok node-patch3way --current vk-takeover.current.json -o both \
		vk-takeover.desired.json
	jq_is '[.patch | .. | select(. == null)] | length' 0
	jq_is '.patch.status' \
		'{"nodeInfo":{"kubeletVersion":"v1.31.0"}}'
	jq_is '[.node.status.nodeInfo, .node.status.daemonEndpoints]' \
		'[{"machineID":"m1","kubeletVersion":"v1.31.0","kubeProxyVersion":"v1.30.0"},{"kubeletEndpoint":{"Port":10250}}]'
}

@test "node-patch3way: an empty label value is a value: set, then deleted when dropped" {
	run_ok node-patch3way --current example-b.current.json -o node \
		<<<'{"metadata":{"labels":{"e":""}}}'
	jq_is '.metadata.labels' '{"type":"virtual-kubelet","x":"y","e":""}'
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/next.json"
	run_ok node-patch3way --current "$BATS_TEST_TMPDIR/next.json" \
		<<<'{"metadata":{"labels":{}}}'
	jq_is '.metadata.labels' '{"e":null}'
}

@test "node-patch3way: a second run against the patched node changes nothing" {
	run -0 --separate-stderr node-patch3way --current example-a.current.json -o node \
		example-a.desired.json
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/next.json"
	run_ok node-patch3way --current "$BATS_TEST_TMPDIR/next.json" -o both \
		example-a.desired.json
	# as upstream: the foreign condition C makes the order be restated
	jq_is .patch '{"status":{"$setElementOrder/conditions":[{"type":"A"}]}}'
	jq_is .node "$(jq -c . "$BATS_TEST_TMPDIR/next.json")"
}

@test "node-patch3way: a second run with nothing foreign prints {}" {
	run -0 --separate-stderr node-patch3way --current example-b.current.json -o node \
		<<<'{"metadata":{"labels":{"x":"y"}}}'
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/next.json"
	prints 0 "{}" node-patch3way --current "$BATS_TEST_TMPDIR/next.json" \
		<<<'{"metadata":{"labels":{"x":"y"}}}'
}

@test "node-patch3way: --heartbeat stamps heartbeats, and transition times where status changed" {
	run_ok node-patch3way --current example-a.current.json --heartbeat -o node \
		<<<'{"status":{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"False"},{"type":"N","status":"True"}]}}'
	now=$(jq -r '.status.conditions[0].lastHeartbeatTime' <<<"$output")
	[[ "$now" =~ ^20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z$ ]]
	[ "$(jq -c --arg n "$now" '[.status.conditions[] |
		[.type, .lastHeartbeatTime == $n, .lastTransitionTime == $n]]' <<<"$output")" = \
		'[["A",true,false],["B",true,true],["N",true,true],["C",false,false]]' ]
	[ "$(jq -r '.status.conditions[0].lastTransitionTime' <<<"$output")" = 2024-05-01T10:00:00Z ]
}

@test "node-patch3way: --stream handles every document, YAML too" {
	run_ok node-patch3way --current example-b.current.json --stream \
		<<<$'metadata:\n  labels: {x: "y"}\n---\nmetadata:\n  labels: {x: z}\n'
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -c '.metadata.labels' <<<"${lines[0]}")" = 'null' ]
	[ "$(jq -c '.metadata.labels' <<<"${lines[1]}")" = '{"x":"z"}' ]
}

@test "node-patch3way: --stream reports a bad document, goes on, and exits 2" {
	run -2 --separate-stderr node-patch3way --current example-b.current.json --stream \
		<<<'[1] {"metadata":{"labels":{"x":"z"}}}'
	jq_is '.metadata.labels' '{"x":"z"}'
	[ "$stderr" = "node-patch3way: desired: expected a node object, got an array" ]
}

# ------------------------------------------------------------- addresses

# keys sorted, as a patch and the API server write them
V4='{"address":"10.0.0.1","type":"InternalIP"}'
V6='{"address":"fd00::1","type":"InternalIP"}'
EXT1='{"address":"203.0.113.1","type":"ExternalIP"}'
EXT2='{"address":"203.0.113.2","type":"ExternalIP"}'
STALE='{"address":"198.51.100.9","type":"ExternalIP"}'

@test "node-patch3way: a dual-stack node keeps both InternalIPs, in desired's order" {
	run_ok node-patch3way --current stash-addresses.current.json -o both \
		<<<'{"status":{"addresses":['"$V4,$V6"']}}'
	jq_is .patch.status "{\"addresses\":[$V4,$V6,{\"\$patch\":\"replace\"}]}"
	jq_is .node.status.addresses "[$V4,$V6]"
}

@test "node-patch3way: several ExternalIPs are kept, and a stale one is removed" {
	jq -c ".status.addresses = [$V4,$EXT1,$STALE]" stash-addresses.current.json \
		>"$BATS_TEST_TMPDIR/current.json"
	run_ok node-patch3way --current "$BATS_TEST_TMPDIR/current.json" -o node \
		<<<'{"status":{"addresses":['"$V4,$EXT1,$EXT2"']}}'
	jq_is .status.addresses "[$V4,$EXT1,$EXT2]"
}

@test "node-patch3way: reordered addresses are replaced in desired's order; equal ones are left out" {
	jq -c ".status.addresses = [$V6,$V4]" stash-addresses.current.json \
		>"$BATS_TEST_TMPDIR/current.json"
	run_ok node-patch3way --current "$BATS_TEST_TMPDIR/current.json" -o both \
		<<<'{"status":{"addresses":['"$V4,$V6"']}}'
	jq_is .patch.status.addresses "[$V4,$V6,{\"\$patch\":\"replace\"}]"
	jq_is .node.status.addresses "[$V4,$V6]"
	jq -c .node <<<"$output" >"$BATS_TEST_TMPDIR/next.json"
	run_ok node-patch3way --current "$BATS_TEST_TMPDIR/next.json" \
		<<<'{"status":{"addresses":['"$V4,$V6"']}}'
	jq_is '.status | has("addresses") or has("$setElementOrder/addresses")' false
}

# --------------------------------------------------------- --remove-condition

@test "node-patch3way: --remove-condition deletes a foreign condition and carries the resourceVersion" {
	jq -c '.metadata.resourceVersion = "41"' example-a.current.json >"$BATS_TEST_TMPDIR/current.json"
	run_ok node-patch3way --current "$BATS_TEST_TMPDIR/current.json" -o both \
		--remove-condition C example-a.desired.json
	jq_is '[.patch.metadata.resourceVersion, .patch.status.conditions[-1]]' \
		'["41",{"$patch":"delete","type":"C"}]'
	jq_is '[.node.status.conditions[].type]' '["A"]'
}

@test "node-patch3way: --remove-condition of a type the node lacks is no error, said at -v 1" {
	run -0 --separate-stderr node-patch3way --current example-a.current.json -v 1 \
		--remove-condition KernelDeadlock example-a.desired.json
	[ "$output" = "$(cat example-a.patch.json)" ]
	[[ "$stderr" == *'node-patch3way.c:'*'] "no such condition, nothing to remove" node="vk" type="KernelDeadlock"' ]]
	[ "$(wc -l <<<"$stderr")" = 1 ]
}

# ------------------------------------------------------- bad input table

@test "node-patch3way: bad usage: each row exits 2 with the two usage lines" {
	usage_errors node-patch3way <<'EOF'
# -o that is not patch, node or both
-o yaml --current example-a.current.json|invalid value 'yaml' for --output: expected patch, node or both
# --current with --node
--current example-a.current.json --node vk|--current and --node cannot be used together
# --current with --send
--current example-a.current.json --send|--send reads the node from the API server: drop --current
# --register without --send
--register --current example-a.current.json|--register needs --send
# two operands
--current example-a.current.json a.json b.json|too many operands: expected at most one <desired>
# a node name that cannot be in a path
--node a/b|invalid node name 'a/b': only lower-case letters, digits, '-' and '.' are allowed
# a node name that is not a DNS-1123 subdomain, as node-ping says
--node VK_1:x|invalid node name 'VK_1:x': only lower-case letters, digits, '-' and '.' are allowed
# a condition type with a space
--remove-condition 'Kernel Deadlock' --current example-a.current.json|invalid condition type 'Kernel Deadlock': expected a qualified name such as KernelDeadlock or example.com/Custom
# a condition type whose prefix is not a DNS name
--remove-condition Example.com/X --current example-a.current.json|invalid condition type 'Example.com/X': expected a qualified name such as KernelDeadlock or example.com/Custom
# an empty condition type
--remove-condition '' --current example-a.current.json|invalid condition type '': expected a qualified name such as KernelDeadlock or example.com/Custom
# a field manager longer than the API server takes
--field-manager $(printf 'm%.0s' {1..129}) --current example-a.current.json|invalid --field-manager: 129 bytes long, the API server takes at most 128
# a field manager with a control character
--field-manager $'a\tb' --current example-a.current.json|invalid --field-manager: it has a control character
# an empty field manager
--field-manager '' --current example-a.current.json|invalid --field-manager: it is empty
EOF
}

# each row: args|message|desired on standard input
@test "node-patch3way: bad input: each row exits 2 with one line naming the place" {
	input_errors node-patch3way <<EOF
# desired's own name is checked by the same rule
--server https://127.0.0.1:9|invalid node name 'vk..1': each dot-separated part must start and end with a letter or digit|'{"metadata":{"name":"vk..1"},"status":{}}'
# no node name anywhere
--server https://127.0.0.1:9|desired: no metadata.name; name the node with --node|'{"status":{}}'
# desired is not an object
--current example-a.current.json|desired: expected a node object, got an array|'["vk"]'
# malformed JSON is reported with line and column
--current example-a.current.json|<stdin>:2:19: unexpected '}', expected a value|\$'{"status":\n  {"conditions": [}}'
# malformed CURRENT names its file
--current broken.json|broken.json:2:1: unexpected end of input, expected a value
# empty desired
--current example-a.current.json|<stdin>: empty input, expected a document|''
# two documents without --stream
--current example-a.current.json|<stdin>:1:4: unexpected data after the document|'{} {}'
# labels that are not a map
--current example-a.current.json|desired: metadata.labels: expected an object, got an array|'{"metadata":{"labels":["a"]}}'
# an annotation value that is not a string
--current example-a.current.json|desired: metadata.annotations: 'a': expected a string, got a number|'{"metadata":{"annotations":{"a":1}}}'
# status that is not an object
--current example-a.current.json|desired: status: expected an object, got a string|'{"status":"Ready"}'
# conditions that are not a list
--current example-a.current.json|desired: status.conditions: expected an array, got an object|'{"status":{"conditions":{"type":"Ready"}}}'
# a condition without a type
--current example-a.current.json|desired: status.conditions[1]: missing the string 'type'|'{"status":{"conditions":[{"type":"A","status":"True"},{"status":"True"}]}}'
# an address without a type
--current example-a.current.json|desired: status.addresses[0]: missing the string 'type'|'{"status":{"addresses":[{"address":"10.0.0.1"}]}}'
# a node-status stash that is not JSON names the annotation
--current bad-stash.current.json|annotation '$SA' is not valid JSON: value:1:2: unexpected 'c', expected a string key|'{}'
# an object-meta stash that is not an object
--current bad-meta.current.json|annotation '$MA' holds an array, expected a JSON object|'{}'
# CURRENT that is not a node
--current list.json|current: expected a node object, got an array|'{}'
# a condition both desired and to be removed
--current example-a.current.json --remove-condition A|desired has the condition 'A' that --remove-condition deletes: drop it from one of the two|'{"status":{"conditions":[{"type":"A","status":"True"}]}}'
# a document over --max-input
--max-input 16 --current tiny.current.json|<stdin>:1:1: document larger than 16 bytes (see --max-input)|'{"metadata":{"labels":{"a":"b"}}}'
EOF
}

# ------------------------------------------------------ against the API server

# create NODE-JSON: POST a node as some other component would (not logged)
create() {
	apiserver_curl /api/v1/nodes -X POST -H 'Content-Type: application/json' -d "$1" -o /dev/null
	apiserver_clear_requests
}

# status-patch NAME PATCH: another component's own status patch (not logged)
status_patch() {
	apiserver_curl "/api/v1/nodes/$1/status" -X PATCH \
		-H 'Content-Type: application/strategic-merge-patch+json' -d "$2" -o /dev/null
	apiserver_clear_requests
}

node_json() {
	apiserver_curl "/api/v1/nodes/$1" | jq -c "${2:-.}"
}

# server_now: the server's clock in whole seconds (the time it logs a GET of
# /version at)
server_now() {
	apiserver_curl /version -o /dev/null
	apiserver_requests GET /version | tail -n 1 | jq -r '.time | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601'
}

# the logged requests as "METHOD PATH STATUS CONTENT-TYPE", one a line
requests() {
	apiserver_requests | jq -r '[.method, .path, .status, .contentType // "-"] | join(" ")'
}

SMP=application/strategic-merge-patch+json

# the processor as Go names it (GOARCH), for the User-Agent
go_arch() {
	case $(uname -m) in
	x86_64) echo amd64 ;;
	aarch64) echo arm64 ;;
	i?86) echo 386 ;;
	*) uname -m ;;
	esac
}

@test "node-patch3way: --send to a missing node is 'not found', exit 1, nothing patched" {
	fails_with 1 'node-patch3way: GET /api/v1/nodes/vk: 404 Not Found: nodes "vk" not found' node-patch3way --send <<<'{"metadata":{"name":"vk"},"status":{}}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 404 -" ]
}

@test "node-patch3way: --send round-trips the status, then a phase change" {
	create '{"metadata":{"name":"vk"}}'
	d='{"metadata":{"name":"vk"},"status":{"phase":"Pending","conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2024-05-01T10:00:00Z","lastTransitionTime":"2024-05-01T09:00:00Z","reason":"KubeletReady"}]}}'
	run_ok node-patch3way --send <<<"$d"
	[ "$(jq -cS .status.conditions <<<"$output")" = "$(jq -cS .status.conditions <<<"$d")" ]
	[ "$(jq -r .status.phase <<<"$output")" = Pending ]
	[ "$(requests)" = "GET /api/v1/nodes/vk 200 -
PATCH /api/v1/nodes/vk/status 200 $SMP" ]
	[ "$(node_json vk .status)" = "$(jq -c .status <<<"$output")" ]
	run -0 --separate-stderr node-patch3way --send <<<"${d/Pending/Running}"
	[ "$(node_json vk .status.phase)" = '"Running"' ]
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | tail -n 1 | jq -c '.body | .status.phase')" = '"Running"' ]
}

@test "node-patch3way: --register creates a missing node from desired, then patches its status" {
	run_ok node-patch3way --send --register -o both \
		<<<'{"metadata":{"name":"vk","labels":{"type":"virtual-kubelet"}},"spec":{"taints":[{"key":"vk","effect":"NoSchedule"}]},"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 404 -
POST /api/v1/nodes 201 application/json
PATCH /api/v1/nodes/vk/status 200 $SMP" ]
	[ "$(node_json vk '[.metadata.labels.type, .spec.taints[0].key, .status.conditions[0].type]')" = \
		'["virtual-kubelet","vk","Ready"]' ]
	[ "$(jq -c '.node.metadata.uid == (.patch.metadata.annotations["'$MA'"] | fromjson | .uid)' <<<"$output")" = true ]
}

@test "node-patch3way: annotations set before the tool are preserved" {
	create '{"metadata":{"name":"vk","annotations":{"beforeAnnotation":"value"}}}'
	run_ok node-patch3way --send \
		<<<'{"metadata":{"name":"vk","annotations":{"testAnnotation":"value"}}}'
	[ "$(node_json vk '[.metadata.annotations.beforeAnnotation, .metadata.annotations.testAnnotation]')" = \
		'["value","value"]' ]
}

@test "node-patch3way: a condition and annotation added out of band survive, the dropped one is deleted" {
	create '{"metadata":{"name":"vk"}}'
	base='{"type":"BaseCondition","status":"Ok","reason":"NA","message":"base"}'
	run -0 --separate-stderr node-patch3way --send \
		<<<'{"metadata":{"name":"vk","annotations":{"testAnnotation":"value"}},"status":{"conditions":['"$base"']}}'
	[ "$(node_json vk '[(.status.conditions | length), .metadata.annotations.testAnnotation]')" = '[1,"value"]' ]
	status_patch vk '{"metadata":{"annotations":{"manuallyAddedAnnotation":"v"}},"status":{"conditions":[{"type":"ManuallyAddedCondition","status":"Ok","reason":"NA","message":"manual"}]}}'
	run_ok node-patch3way --send \
		<<<'{"metadata":{"name":"vk"},"status":{"conditions":['"$base"',{"type":"NewCondition","status":"Ok","reason":"NA","message":"new"}]}}'
	[ "$(node_json vk '[.status.conditions[].type] | sort')" = \
		'["BaseCondition","ManuallyAddedCondition","NewCondition"]' ]
	[ "$(node_json vk '[.metadata.annotations.testAnnotation, .metadata.annotations.manuallyAddedAnnotation]')" = \
		'[null,"v"]' ]
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | tail -n 1 |
		jq -c '.body.metadata.annotations | [has("testAnnotation"), .testAnnotation]')" = '[true,null]' ]
}

@test "node-patch3way: taking over a node virtual-kubelet stashed deletes nothing" {
	jq -c 'del(.metadata.uid)' vk-takeover.current.json > "$BATS_TEST_TMPDIR/node.json"
	create "$(jq -c 'del(.status)' "$BATS_TEST_TMPDIR/node.json")"
	status_patch vk "$(jq -c '{status}' "$BATS_TEST_TMPDIR/node.json")"
	run_ok node-patch3way --send -o both vk-takeover.desired.json
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | jq -c '[.body | .. | select(. == null)] | length')" = 0 ]
	[ "$(node_json vk '.status | [.nodeInfo.machineID, .nodeInfo.kubeletVersion,
		.nodeInfo.kubeProxyVersion, .daemonEndpoints.kubeletEndpoint.Port,
		.conditions[0].lastTransitionTime, .conditions[0].lastHeartbeatTime]')" = \
		'["m1","v1.31.0","v1.30.0",10250,"2024-05-01T09:00:00Z","2024-05-01T10:00:00Z"]' ]
}

@test "node-patch3way: emptying labels and conditions deletes per key, foreign ones stay" {
	create '{"metadata":{"name":"vk","labels":{"foreign":"f"}}}'
	status_patch vk '{"status":{"conditions":[{"type":"Foreign","status":"True"}]}}'
	run -0 --separate-stderr node-patch3way --send \
		<<<'{"metadata":{"name":"vk","labels":{"mine":"m"}},"status":{"conditions":[{"type":"Mine","status":"True"}]}}'
	run_ok node-patch3way --send <<<'{"metadata":{"name":"vk"}}'
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | tail -n 1 | jq -c '.body | [.metadata.labels, .status.conditions]')" = \
		'[{"mine":null},[{"$patch":"delete","type":"Mine"}]]' ]
	[ "$(node_json vk '[.metadata.labels, [.status.conditions[].type]]')" = '[{"foreign":"f"},["Foreign"]]' ]
}

@test "node-patch3way: a 409 mid-update is answered by reading the node again" {
	create '{"metadata":{"name":"vk"}}'
	apiserver_fault '{"method":"PATCH","path":"^/api/v1/nodes/vk/status$","status":409,"count":1}'
	run -0 --separate-stderr node-patch3way --send -v 4 \
		<<<'{"metadata":{"name":"vk","labels":{"a":"b"}}}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 200 -
PATCH /api/v1/nodes/vk/status 409 $SMP
GET /api/v1/nodes/vk 200 -
PATCH /api/v1/nodes/vk/status 200 $SMP" ]
	[[ "$stderr" == *'"conflict, reading the node again" node="vk" attempt=1'* ]]
	[ "$(node_json vk .metadata.labels)" = '{"a":"b"}' ]
}

@test "node-patch3way: five conflicts in a row give up with exit 1" {
	create '{"metadata":{"name":"vk"}}'
	apiserver_fault '{"method":"PATCH","path":"^/api/v1/nodes/vk/status$","status":409,"count":5,"message":"the object has been modified"}'
	fails_with 1 "node-patch3way: PATCH /api/v1/nodes/vk/status: 409 Conflict: the object has been modified" node-patch3way --send <<<'{"metadata":{"name":"vk","labels":{"a":"b"}}}'
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | wc -l)" = 5 ]
}

@test "node-patch3way: a broken stash on the server stops --send before any PATCH" {
	create "$(jq -c '{metadata}' bad-stash.current.json)"
	fails_with 2 "node-patch3way: annotation '$SA' is not valid JSON: value:1:2: unexpected 'c', expected a string key" node-patch3way --send <<<'{"metadata":{"name":"vk"}}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 200 -" ]
}

@test "node-patch3way: --node without --send fetches the node and only prints the patch" {
	create '{"metadata":{"name":"vk","labels":{"x":"y"}}}'
	run_ok node-patch3way --node vk <<<'{"metadata":{"labels":{"x":"z"}}}'
	jq_is .metadata.labels '{"x":"z"}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 200 -" ]
}

@test "node-patch3way: a patch that changes nothing is not sent" {
	create '{"metadata":{"name":"vk"}}'
	d='{"metadata":{"name":"vk","labels":{"a":"b"}}}'
	run -0 --separate-stderr node-patch3way --send <<<"$d"
	apiserver_clear_requests
	run -0 --separate-stderr node-patch3way --send <<<"$d"
	jq_is .metadata.labels '{"a":"b"}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 200 -" ]
}

@test "node-patch3way: --stream --send coalesces: the latest state wins while a send is in flight" {
	create '{"metadata":{"name":"vk"}}'
	create '{"metadata":{"name":"other"}}'
	apiserver_fault '{"method":"PATCH","path":"^/api/v1/nodes/vk/status$","latencyMs":1500,"count":1}'
	# the writer, done, says so to the server: a GET of a node named writer-done
	run -0 --separate-stderr bash -c '
		{ echo "{\"metadata\":{\"name\":\"vk\",\"labels\":{\"n\":\"1\"}}}"; sleep 0.5
		  for i in 2 3 4; do echo "{\"metadata\":{\"name\":\"vk\",\"labels\":{\"n\":\"$i\"}}}"; done
		  echo "{\"metadata\":{\"name\":\"other\",\"labels\":{\"n\":\"o\"}}}"
		  curl -sS -o /dev/null --cacert "$APISERVER_DIR/ca.crt" -H "Authorization: Bearer $APISERVER_TOKEN" \
			"$APISERVER_URL/api/v1/nodes/writer-done"; } | node-patch3way --stream --send -v 2'
	# the writer was done before the slow PATCH came back: the server logs a
	# request as it answers it
	[ "$(apiserver_requests | jq -r 'select(.path == "/api/v1/nodes/writer-done" or
		(.method == "PATCH" and .path == "/api/v1/nodes/vk/status")) | .path' | head -n 1)" = \
		/api/v1/nodes/writer-done ]
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | jq -c '.body | .metadata.labels.n')" = '"1"
"4"' ]
	[ "$(node_json vk .metadata.labels.n)" = '"4"' ]
	[ "$(node_json other .metadata.labels.n)" = '"o"' ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(grep -c '"superseded by a newer desired state" node="vk"' <<<"$stderr")" -eq 2 ]
}

@test "node-patch3way: --stream --send from a file: each node once, then its latest state" {
	create '{"metadata":{"name":"vk"}}'
	create '{"metadata":{"name":"other"}}'
	for n in 1 2 3; do
		echo "{\"metadata\":{\"name\":\"vk\",\"labels\":{\"n\":\"$n\"}}}"
	done > "$BATS_TEST_TMPDIR/desired.ndjson"
	echo '{"metadata":{"name":"other","labels":{"n":"o"}}}' >> "$BATS_TEST_TMPDIR/desired.ndjson"
	run_ok node-patch3way --stream --send -o patch "$BATS_TEST_TMPDIR/desired.ndjson"
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | jq -c '.body.metadata.labels.n')" = '"1"
"3"' ]
	[ "$(jq -sc 'map(.metadata.labels.n) | sort' <<<"$output")" = '["1","3","o"]' ]
	[ "$(node_json vk .metadata.labels.n)" = '"3"' ]
}

@test "node-patch3way: --stream --send reports a failing node and goes on with the others" {
	create '{"metadata":{"name":"other"}}'
	run -1 --separate-stderr node-patch3way --stream --send <<<'{"metadata":{"name":"vk"}}
{"metadata":{"name":"other","labels":{"n":"o"}}}'
	jq_is .metadata.labels '{"n":"o"}'
	[ "$stderr" = "node-patch3way: node 'vk': GET /api/v1/nodes/vk: 404 Not Found: nodes \"vk\" not found" ]
}

@test "node-patch3way: without --heartbeat the server's condition times are kept (README example)" {
	# the node as an earlier send with times left it
	create '{"metadata":{"name":"vk"}}'
	d='{"metadata":{"name":"vk"},"status":{"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2024-05-01T10:00:00Z","lastTransitionTime":"2024-05-01T09:00:00Z"},{"type":"DiskPressure","status":"False","lastHeartbeatTime":"2024-05-01T10:00:00Z","lastTransitionTime":"2024-05-01T08:00:00Z"}]}}'
	run -0 --separate-stderr node-patch3way --send <<<"$d"
	apiserver_clear_requests
	# the provider prints its state without times, as the README's example pipes it
	before=$(server_now)
	run -0 --separate-stderr node-patch3way --send \
		<<<'{"metadata":{"name":"vk"},"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"DiskPressure","status":"True"}]}}'
	after=$(server_now)
	[ -z "$stderr" ]
	# the unchanged condition keeps both times; the changed one keeps its
	# heartbeat and gets the time of the send as its transition
	[ "$(node_json vk '.status.conditions[0] | [.type, .lastHeartbeatTime, .lastTransitionTime]')" = \
		'["Ready","2024-05-01T10:00:00Z","2024-05-01T09:00:00Z"]' ]
	[ "$(node_json vk '.status.conditions[1] | [.type, .status, .lastHeartbeatTime]')" = \
		'["DiskPressure","True","2024-05-01T10:00:00Z"]' ]
	lt=$(node_json vk '.status.conditions[1].lastTransitionTime | fromdateiso8601')
	[ "$lt" -ge "$before" ] && [ "$lt" -le "$after" ]
	# and nothing null went out
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | jq -c '[.body | .. | select(. == null)] | length')" = 0 ]
}

@test "node-patch3way: without --heartbeat a new condition gets a transition time and no heartbeat" {
	create '{"metadata":{"name":"vk"}}'
	before=$(server_now)
	run -0 --separate-stderr node-patch3way --send \
		<<<'{"metadata":{"name":"vk"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
	after=$(server_now)
	[ -z "$stderr" ]
	[ "$(node_json vk '.status.conditions[0] | has("lastHeartbeatTime")')" = false ]
	lt=$(node_json vk '.status.conditions[0].lastTransitionTime | fromdateiso8601')
	[ "$lt" -ge "$before" ] && [ "$lt" -le "$after" ]
}

@test "node-patch3way: --heartbeat --send stamps the conditions with the time of the send" {
	create '{"metadata":{"name":"vk"}}'
	before=$(server_now)
	run -0 --separate-stderr node-patch3way --send --heartbeat \
		<<<'{"metadata":{"name":"vk"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
	after=$(server_now)
	[ -z "$stderr" ]
	hb=$(node_json vk '.status.conditions[0].lastHeartbeatTime | fromdateiso8601')
	lt=$(node_json vk '.status.conditions[0].lastTransitionTime | fromdateiso8601')
	[ "$hb" -ge "$before" ] && [ "$hb" -le "$after" ] && [ "$lt" = "$hb" ]
}

@test "node-patch3way: --register when someone else registers first patches their node" {
	# the first GET says 404, but the node is there by the time of the POST
	create '{"metadata":{"name":"vk","labels":{"theirs":"t"}}}'
	apiserver_fault '{"method":"GET","path":"^/api/v1/nodes/vk$","status":404,"count":1}'
	run_ok node-patch3way --send --register \
		<<<'{"metadata":{"name":"vk","labels":{"mine":"m"}}}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 404 -
POST /api/v1/nodes 409 application/json
GET /api/v1/nodes/vk 200 -
PATCH /api/v1/nodes/vk/status 200 $SMP" ]
	[ "$(node_json vk .metadata.labels)" = '{"mine":"m","theirs":"t"}' ]
}

@test "node-patch3way: --stream --send --register: a 409 on registration is one more read, not a PATCH attempt" {
	# as without --stream: the registration conflict is answered by one GET,
	# and all five PATCH attempts remain (the loop used to spend one of them)
	create '{"metadata":{"name":"vk"}}'
	apiserver_fault '{"method":"GET","path":"^/api/v1/nodes/vk$","status":404,"count":1}'
	apiserver_fault '{"method":"PATCH","path":"^/api/v1/nodes/vk/status$","status":409,"count":4}'
	run_ok node-patch3way --stream --send --register \
		<<<'{"metadata":{"name":"vk","labels":{"mine":"m"}}}'
	[ "$(requests | grep -c '^PATCH')" = 5 ]
	[ "$(requests | grep -c '^POST')" = 1 ]
	[ "$(node_json vk .metadata.labels)" = '{"mine":"m"}' ]
}

@test "node-patch3way: --stream --send reads YAML documents too" {
	create '{"metadata":{"name":"vk"}}'
	run_ok node-patch3way --stream --send -o patch \
		<<<$'metadata:\n  name: vk\n  labels: {n: "1"}\n---\nmetadata:\n  name: vk\n  labels: {n: "2"}\n'
	[ "$(node_json vk .metadata.labels.n)" = '"2"' ]
}

@test "node-patch3way: --stream --send refuses a document over --max-input and stops reading" {
	create '{"metadata":{"name":"vk"}}'
	run -2 --separate-stderr node-patch3way --stream --send --max-input 100 \
		<<<'{"metadata":{"name":"vk","labels":{"n":"1"}}}
{"metadata":{"name":"vk","labels":{"n":"2","x":"'"$(printf '%0200d' 0)"'"}}}
{"metadata":{"name":"vk","labels":{"n":"3"}}}'
	[ "$stderr" = "node-patch3way: <stdin>:2:1: document larger than 100 bytes (see --max-input)" ]
	[ "$(node_json vk .metadata.labels.n)" = '"1"' ]
}

@test "node-patch3way: --send replaces a dual-stack node's addresses whole, through the reference applier" {
	create '{"metadata":{"name":"vk"}}'
	status_patch vk '{"status":{"addresses":['"$V4,$STALE"']}}'
	d='{"metadata":{"name":"vk"},"status":{"addresses":['"$V4,$V6,$EXT1,$EXT2"']}}'
	run_ok node-patch3way --send <<<"$d"
	[ "$(node_json vk .status.addresses)" = "[$V4,$V6,$EXT1,$EXT2]" ]
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | jq -c '.body.status.addresses[-1]')" = \
		'{"$patch":"replace"}' ]
	# equal now: nothing to send
	apiserver_clear_requests
	run_ok node-patch3way --send <<<"$d"
	[ "$(requests)" = "GET /api/v1/nodes/vk 200 -" ]
}

@test "node-patch3way: --stream --send keeps both addresses of a dual-stack node, in order" {
	create '{"metadata":{"name":"vk"}}'
	status_patch vk '{"status":{"addresses":['"$V6"']}}'
	run_ok node-patch3way --stream --send -o patch <<<'{"metadata":{"name":"vk"},"status":{"addresses":['"$V4"']}}
{"metadata":{"name":"vk"},"status":{"addresses":['"$V4,$V6"']}}'
	[ "$(node_json vk .status.addresses)" = "[$V4,$V6]" ]
}

@test "node-patch3way: --send --remove-condition deletes a condition node-problem-detector left" {
	create '{"metadata":{"name":"vk"}}'
	status_patch vk '{"status":{"conditions":[{"type":"KernelDeadlock","status":"True","reason":"DockerHung"},{"type":"Ready","status":"True"}]}}'
	rv=$(node_json vk .metadata.resourceVersion)
	run_ok node-patch3way --send --remove-condition KernelDeadlock \
		<<<'{"metadata":{"name":"vk"},"status":{"conditions":[{"type":"Ready","status":"True"}]}}'
	[ "$(node_json vk '[.status.conditions[].type]')" = '["Ready"]' ]
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | jq -c --argjson rv "$rv" \
		'.body | [.metadata.resourceVersion == $rv, .status.conditions[-1]]')" = \
		'[true,{"$patch":"delete","type":"KernelDeadlock"}]' ]
}

@test "node-patch3way: --remove-condition loses a race cleanly: 409, the node read again, the right result" {
	create '{"metadata":{"name":"vk"}}'
	status_patch vk '{"status":{"conditions":[{"type":"KernelDeadlock","status":"True"}]}}'
	# the node as the tool first reads it; another writer changes it right after
	stale=$(node_json vk)
	status_patch vk '{"status":{"conditions":[{"type":"FrequentKubeletRestart","status":"True"}]}}'
	rvs="[$(jq -c .metadata.resourceVersion <<<"$stale"),$(node_json vk .metadata.resourceVersion)]"
	apiserver_clear_requests
	apiserver_fault "$(jq -c '{method:"GET",path:"^/api/v1/nodes/vk$",status:200,body:.,count:1}' <<<"$stale")"
	run_ok node-patch3way --send --remove-condition KernelDeadlock -o patch <<<'{"metadata":{"name":"vk"}}'
	[ "$(requests)" = "GET /api/v1/nodes/vk 200 -
PATCH /api/v1/nodes/vk/status 409 $SMP
GET /api/v1/nodes/vk 200 -
PATCH /api/v1/nodes/vk/status 200 $SMP" ]
	[ "$(node_json vk '[.status.conditions[].type]')" = '["FrequentKubeletRestart"]' ]
	# each PATCH was computed from, and carries, the node it had just read
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | jq -sc 'map(.body.metadata.resourceVersion)')" = "$rvs" ]
}

@test "node-patch3way: every request names the tool, every write its field manager" {
	create '{"metadata":{"name":"vk"}}'
	run_ok node-patch3way --send <<<'{"metadata":{"name":"vk","labels":{"a":"b"}}}'
	ua="node-patch3way/$(node-patch3way --version | sed 's/.* //') (linux/$(go_arch)) kubelet-tools"
	[ "$(apiserver_requests | jq -r '[.method, .query, .userAgent] | join("|")')" = \
		"GET||$ua
PATCH|fieldManager=node-patch3way|$ua" ]
	run_ok apiserver_kubectl get node vk --show-managed-fields -o json
	jq_is '[.metadata.managedFields[] | select(.subresource == "status") | .manager]' '["node-patch3way"]'
	run_ok node-patch3way --send --field-manager 'ops/fix 1' <<<'{"metadata":{"name":"vk","labels":{"a":"c"}}}'
	[ "$(apiserver_requests PATCH /api/v1/nodes/vk/status | tail -n 1 | jq -r .query)" = \
		'fieldManager=ops%2Ffix%201' ]
	[ "$(node_json vk '[.metadata.managedFields[] | select(.subresource == "status") | .manager]')" = \
		'["node-patch3way","ops/fix 1"]' ]
}
