#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Tests of the local API server (tests/apiserver/) that the HTTP tests run against.

bats_require_minimum_version 1.5.0
# the shared helper: bats libraries, Debian's python3, and apiserver.bash
load helper

setup() {
	apiserver_start
}

teardown() {
	apiserver_stop
}

# call METHOD PATH [BODY [CONTENT-TYPE]]: prints the HTTP status code, then
# the body.  CALL_AS picks the credentials: admin (default), viewer, bad,
# none, admin-cert or viewer-cert.
call() {
	local method=$1 path=$2 who=${CALL_AS:-admin}
	local args=(-sS --cacert "$APISERVER_DIR/ca.crt" -X "$method"
		-o "$BATS_TEST_TMPDIR/body" -w '%{http_code}\n')
	case $who in
	admin) args+=(-H "Authorization: Bearer $APISERVER_TOKEN") ;;
	viewer) args+=(-H "Authorization: Bearer $(cat "$APISERVER_DIR/viewer-token")") ;;
	bad) args+=(-H "Authorization: Bearer 0123456789abcdef") ;;
	*-cert) args+=(--cert "$APISERVER_DIR/${who%-cert}.crt"
		--key "$APISERVER_DIR/${who%-cert}.key") ;;
	esac
	if [ $# -ge 3 ]; then
		args+=(-H "Content-Type: ${4:-application/json}" --data-binary "$3")
	fi
	curl "${args[@]}" "$APISERVER_URL$path" && cat "$BATS_TEST_TMPDIR/body"
}

# answers CODE METHOD PATH [BODY [TYPE]]: call, and the server says CODE
answers() {
	local code=$1
	shift
	run -0 call "$@"
	assert_line --index 0 "$code"
}

# Create an object as admin, failing the test unless it is created.
create() {
	answers 201 POST "$1" "$2"
}

node() {
	printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"}}' "$1"
}

pod() {
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","labels":{"app":"%s"}},' "$1" "$1"
	printf '"spec":{"nodeName":"%s","containers":[{"name":"c","image":"busybox:1.36"}]}}' "${2-}"
}

lease() {
	printf '{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"%s"},' "$1"
	printf '"spec":{"holderIdentity":"%s","leaseDurationSeconds":40}}' "$1"
}

LEASES=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases

# --- start-up and authentication ---------------------------------------------

@test "apiserver: start-up writes what clients need" {
	for f in ca.crt admin.crt admin.key viewer.crt viewer.key token viewer-token \
		kubeconfig kubeconfig-cert port url pid ready requests.log; do
		[ -s "$APISERVER_DIR/$f" ] || [ "$f" = ready ] || [ "$f" = requests.log ] ||
			fail "$f is missing or empty"
	done
	[ "$APISERVER_URL" = "https://127.0.0.1:$(cat "$APISERVER_DIR/port")" ]
	[ "$(cat "$APISERVER_DIR/pid")" = "$APISERVER_PID" ]
	run -0 openssl x509 -in "$APISERVER_DIR/admin.crt" -noout -subject
	assert_output 'subject=O = system:masters, CN = admin'
	run -0 openssl verify -CAfile "$APISERVER_DIR/ca.crt" "$APISERVER_DIR/viewer.crt"
	run -0 grep -c '^current-context: local$' "$APISERVER_DIR/kubeconfig" \
		"$APISERVER_DIR/kubeconfig-cert"
}

@test "apiserver: no credentials is 401" {
	CALL_AS=none answers 401 GET /api/v1/nodes
	assert_line --index 1 '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}'
}

@test "apiserver: an unknown token is 401" {
	CALL_AS=bad answers 401 GET /version
	assert_line --index 1 '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}'
}

@test "apiserver: the viewer token reads but may not write" {
	create /api/v1/nodes "$(node n1)"
	CALL_AS=viewer answers 200 GET /api/v1/nodes/n1
	CALL_AS=viewer answers 403 PATCH /api/v1/nodes/n1 '{"spec":{"unschedulable":true}}' \
		application/merge-patch+json
	assert_line --index 1 '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"n1\" is forbidden: User \"viewer\" cannot patch resource \"nodes\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"n1","kind":"nodes"},"code":403}'
	CALL_AS=viewer answers 403 POST "$LEASES" "$(lease n1)"
	run -0 jq -r .message "$BATS_TEST_TMPDIR/body"
	assert_output 'leases.coordination.k8s.io is forbidden: User "viewer" cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease"'
	CALL_AS=viewer answers 403 POST /_faults '{"status":500}'
}

@test "apiserver: client certificates authenticate" {
	CALL_AS=admin-cert answers 201 POST /api/v1/nodes "$(node n1)"
	CALL_AS=viewer-cert answers 200 GET /api/v1/nodes/n1
	CALL_AS=viewer-cert answers 403 DELETE /api/v1/nodes/n1
	run -0 jq -r .message "$BATS_TEST_TMPDIR/body"
	assert_output 'nodes "n1" is forbidden: User "viewer" cannot delete resource "nodes" in API group "" at the cluster scope'
	run -0 apiserver_requests POST /api/v1/nodes
	run -0 jq -c '[.user, .auth, .status]' <<<"$output"
	assert_output '["admin","cert",201]'
	run -0 apiserver_kubectl --kubeconfig "$APISERVER_DIR/kubeconfig-cert" get node n1 -o name
	assert_output node/n1
}

# --- the store ----------------------------------------------------------------

@test "apiserver: POST creates with server metadata; a second POST is 409" {
	answers 201 POST /api/v1/nodes "$(node n1)"
	run -0 jq -r '[.kind, .metadata.resourceVersion, (.metadata.uid | test("^[0-9a-f-]{36}$")),
		(.metadata.creationTimestamp | test("^[0-9-]{10}T[0-9:]{8}Z$"))] | @tsv' \
		"$BATS_TEST_TMPDIR/body"
	assert_output "$(printf 'Node\t4\ttrue\ttrue')"
	answers 409 POST /api/v1/nodes "$(node n1)"
	assert_line --index 1 '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"n1\" already exists","reason":"AlreadyExists","details":{"name":"n1","kind":"nodes"},"code":409}'
	answers 200 GET /api/v1/nodes/n1
	run -0 jq -r .metadata.name "$BATS_TEST_TMPDIR/body"
	assert_output n1
}

@test "apiserver: a missing object is 404 with a NotFound Status" {
	answers 404 GET /api/v1/nodes/x
	assert_line --index 1 '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"nodes"},"code":404}'
	answers 404 PUT /api/v1/nodes/x "$(node x)"
	answers 404 POST /api/v1/namespaces/nope/pods "$(pod p1)"
	run -0 jq -r .message "$BATS_TEST_TMPDIR/body"
	assert_output 'namespaces "nope" not found'
}

@test "apiserver: pods get Pending and defaults on create" {
	create /api/v1/namespaces/default/pods "$(pod p1 n1)"
	run -0 jq -c '[.status.phase, .status.qosClass, .spec.restartPolicy,
		.spec.terminationGracePeriodSeconds, .spec.containers[0].imagePullPolicy,
		.metadata.generation]' "$BATS_TEST_TMPDIR/body"
	assert_output '["Pending","BestEffort","Always",30,"IfNotPresent",1]'
}

@test "apiserver: LIST filters by spec.nodeName, name and labels" {
	create /api/v1/namespaces/default/pods "$(pod a n1)"
	create /api/v1/namespaces/kube-system/pods "$(pod b n1)"
	create /api/v1/namespaces/default/pods "$(pod c n2)"
	answers 200 GET '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1'
	run -0 jq -c '[.kind, .apiVersion, (.items | map(.metadata.namespace + "/" + .metadata.name))]' \
		"$BATS_TEST_TMPDIR/body"
	assert_output '["PodList","v1",["default/a","kube-system/b"]]'
	run -0 call GET '/api/v1/namespaces/default/pods?fieldSelector=spec.nodeName=n1'
	run -0 jq -c '[.items[].metadata.name]' "$BATS_TEST_TMPDIR/body"
	assert_output '["a"]'
	run -0 call GET '/api/v1/pods?labelSelector=app%3Dc'
	run -0 jq -c '[.items[].metadata.name]' "$BATS_TEST_TMPDIR/body"
	assert_output '["c"]'
	run -0 call GET '/api/v1/pods?fieldSelector=metadata.name!%3Da,spec.nodeName%3Dn1'
	run -0 jq -c '[.items[].metadata.name]' "$BATS_TEST_TMPDIR/body"
	assert_output '["b"]'
	answers 400 GET '/api/v1/pods?fieldSelector=spec.bogus%3D1'
}

@test "apiserver: PUT with a stale resourceVersion is 409" {
	create "$LEASES" "$(lease n1)"
	run -0 jq -c '.spec.holderIdentity = "other"' "$BATS_TEST_TMPDIR/body"
	local stale=$output
	answers 200 PUT "$LEASES/n1" "$stale"
	answers 409 PUT "$LEASES/n1" "$stale"
	assert_line --index 1 '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on leases.coordination.k8s.io \"n1\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"n1","group":"coordination.k8s.io","kind":"leases"},"code":409}'
}

@test "apiserver: DELETE of a bound pod with grace sets deletionTimestamp" {
	create /api/v1/namespaces/default/pods "$(pod p1 n1)"
	answers 200 DELETE '/api/v1/namespaces/default/pods/p1?gracePeriodSeconds=20'
	run -0 jq -r '[.metadata.deletionGracePeriodSeconds, (.metadata.deletionTimestamp | length)] | @tsv' \
		"$BATS_TEST_TMPDIR/body"
	assert_output "$(printf '20\t20')"
	answers 200 GET /api/v1/namespaces/default/pods/p1
	answers 200 DELETE /api/v1/namespaces/default/pods/p1 '{"gracePeriodSeconds":0}'
	answers 404 GET /api/v1/namespaces/default/pods/p1
}

@test "apiserver: DELETE of an unbound pod or a node removes it at once" {
	create /api/v1/namespaces/default/pods "$(pod p1)"
	create /api/v1/nodes "$(node n1)"
	answers 200 DELETE /api/v1/namespaces/default/pods/p1
	answers 200 DELETE /api/v1/nodes/n1
	answers 404 GET /api/v1/namespaces/default/pods/p1
	answers 404 GET /api/v1/nodes/n1
}

# --- patches ------------------------------------------------------------------

@test "apiserver: strategic merge patch of node status merges conditions by type" {
	create /api/v1/nodes "$(node n1)"
	answers 200 PATCH /api/v1/nodes/n1/status \
		'{"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"DiskPressure","status":"False"}]}}' \
		application/strategic-merge-patch+json
	answers 200 PATCH /api/v1/nodes/n1/status \
		'{"metadata":{"annotations":{"a":"b"}},"spec":{"unschedulable":true},"status":{"conditions":[{"type":"Ready","status":"True"}]}}' \
		application/strategic-merge-patch+json
	run -0 jq -c '[.status.conditions, .metadata.annotations, .spec.unschedulable, .metadata.resourceVersion]' \
		"$BATS_TEST_TMPDIR/body"
	assert_output '[[{"status":"True","type":"Ready"},{"status":"False","type":"DiskPressure"}],{"a":"b"},null,"6"]'
	run -0 apiserver_requests PATCH /api/v1/nodes/n1/status
	run -0 jq -r .contentType <<<"${lines[1]}"
	assert_output application/strategic-merge-patch+json
}

@test "apiserver: a strategic merge patch kubectl refuses is 422 with its message" {
	create /api/v1/nodes "$(node n1)"
	# Merge keys are looked up only where both sides hold a list.
	run -0 call PATCH /api/v1/nodes/n1/status '{"status":{"conditions":[{"type":"Ready"}]}}' \
		application/merge-patch+json
	answers 422 PATCH /api/v1/nodes/n1/status '{"status":{"conditions":[{"status":"True"}]}}' \
		application/strategic-merge-patch+json
	run -0 jq -r '[.reason, .message] | @tsv' "$BATS_TEST_TMPDIR/body"
	assert_output "$(printf 'Invalid\tmap: map[status:True] does not contain declared merge key: type')"
	answers 400 PATCH /api/v1/nodes/n1 '{"spec":' application/strategic-merge-patch+json
}

@test "apiserver: merge patch deletes with null and replaces lists" {
	create /api/v1/namespaces/default/pods "$(pod p1 n1)"
	answers 200 PATCH /api/v1/namespaces/default/pods/p1 \
		'{"metadata":{"labels":{"app":null,"tier":"web"},"finalizers":["x/y"]}}' \
		application/merge-patch+json
	run -0 jq -c '[.metadata.labels, .metadata.finalizers]' "$BATS_TEST_TMPDIR/body"
	assert_output '[{"tier":"web"},["x/y"]]'
}

@test "apiserver: JSON patch applies add, replace, remove, move, copy and test" {
	create /api/v1/nodes "$(node n1)"
	run -0 call PATCH /api/v1/nodes/n1 '[
		{"op":"add","path":"/metadata/labels","value":{"a":"1"}},
		{"op":"add","path":"/metadata/labels/b~1c","value":"2"},
		{"op":"test","path":"/metadata/labels/a","value":"1"},
		{"op":"copy","from":"/metadata/labels/a","path":"/metadata/labels/d"},
		{"op":"move","from":"/metadata/labels/a","path":"/metadata/labels/e"},
		{"op":"replace","path":"/metadata/labels/d","value":"3"},
		{"op":"add","path":"/spec/taints","value":[{"key":"k","effect":"NoSchedule"}]},
		{"op":"add","path":"/spec/taints/0","value":{"key":"j","effect":"NoExecute"}},
		{"op":"remove","path":"/spec/taints/1"}]' application/json-patch+json
	assert_line --index 0 200
	run -0 jq -c '[.metadata.labels, .spec.taints]' "$BATS_TEST_TMPDIR/body"
	assert_output '[{"b/c":"2","d":"3","e":"1"},[{"key":"j","effect":"NoExecute"}]]'
	answers 422 PATCH /api/v1/nodes/n1 '[{"op":"test","path":"/metadata/labels/d","value":"9"}]' \
		application/json-patch+json
}

@test "apiserver: a patch of another content type is 415" {
	create /api/v1/nodes "$(node n1)"
	answers 415 PATCH /api/v1/nodes/n1 '{"spec":{}}' application/json
	run -0 jq -r .reason "$BATS_TEST_TMPDIR/body"
	assert_output UnsupportedMediaType
	answers 415 PATCH /api/v1/nodes/n1 'spec: {}' application/apply-patch+yaml
}

@test "apiserver: a patch carrying a stale resourceVersion is 409" {
	create /api/v1/nodes "$(node n1)"
	answers 409 PATCH /api/v1/nodes/n1 '{"metadata":{"resourceVersion":"1","labels":{"a":"b"}}}' \
		application/merge-patch+json
	answers 200 PATCH /api/v1/nodes/n1 '{"metadata":{"resourceVersion":"4","labels":{"a":"b"}}}' \
		application/strategic-merge-patch+json
	run -0 jq -r .metadata.resourceVersion "$BATS_TEST_TMPDIR/body"
	assert_output 5
}

@test "apiserver: main writes keep the status; status writes keep the spec" {
	create /api/v1/namespaces/default/pods "$(pod p1 n1)"
	run -0 call PATCH /api/v1/namespaces/default/pods/p1 \
		'{"spec":{"activeDeadlineSeconds":5},"status":{"phase":"Running"}}' application/merge-patch+json
	run -0 jq -c '[.spec.activeDeadlineSeconds, .status.phase, .metadata.generation]' \
		"$BATS_TEST_TMPDIR/body"
	assert_output '[5,"Pending",2]'
	run -0 call PATCH /api/v1/namespaces/default/pods/p1/status \
		'{"spec":{"activeDeadlineSeconds":9},"status":{"phase":"Running"}}' application/merge-patch+json
	run -0 jq -c '[.spec.activeDeadlineSeconds, .status.phase, .metadata.generation]' \
		"$BATS_TEST_TMPDIR/body"
	assert_output '[5,"Running",2]'
}

# --- faults and the request log ---------------------------------------------

@test "apiserver: a 503 fault with Retry-After, then normal service" {
	apiserver_fault '{"method":"GET","path":"^/api/v1/nodes$","status":503,"retryAfter":1}'
	run -0 apiserver_curl /api/v1/nodes -i
	assert_line --index 0 --regexp '^HTTP/1.1 503'
	assert_line --regexp '^Retry-After: 1'
	assert_line '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server is currently unable to handle the request","reason":"ServiceUnavailable","details":{"retryAfterSeconds":1},"code":503}'
	answers 200 GET /api/v1/nodes
	run -0 apiserver_requests GET /api/v1/nodes
	run -0 jq -c '[.status, .fault]' <<<"$output"
	assert_output "$(printf '[503,true]\n[200,false]')"
}

@test "apiserver: fault rules count down, match by method and can repeat" {
	apiserver_fault '{"method":"POST","path":"/nodes","status":429,"count":2}'
	apiserver_fault '{"path":"/nodes/n1$","status":500,"count":-1}'
	answers 200 GET /api/v1/nodes
	answers 429 POST /api/v1/nodes "$(node n1)"
	answers 429 POST /api/v1/nodes "$(node n1)"
	answers 201 POST /api/v1/nodes "$(node n1)"
	for i in 1 2 3; do
		answers 500 GET /api/v1/nodes/n1
	done
	apiserver_clear_faults
	answers 200 GET /api/v1/nodes/n1
}

@test "apiserver: a drop fault closes the connection without a reply" {
	apiserver_fault '{"path":"^/api/v1/nodes$","drop":true}'
	run curl -sS --cacert "$APISERVER_DIR/ca.crt" -H "Authorization: Bearer $APISERVER_TOKEN" \
		"$APISERVER_URL/api/v1/nodes"
	[ "$status" -eq 52 ] || [ "$status" -eq 56 ] || fail "curl exited $status"
	answers 200 GET /api/v1/nodes
	run -0 apiserver_requests GET /api/v1/nodes
	run -0 jq -c '[.status, .fault]' <<<"${lines[0]}"
	assert_output '[null,true]'
}

@test "apiserver: latency and hang faults" {
	answers 200 GET /version
	apiserver_fault '{"path":"^/version$","latencyMs":400}'
	answers 200 GET /version
	# a request is logged as it is answered: the second 0.4 s after the first
	apiserver_requests GET /version | jq -r .time | python3 -c '
import sys, datetime as d
a, b = (d.datetime.strptime(t.strip(), "%Y-%m-%dT%H:%M:%S.%fZ") for t in sys.stdin)
assert (b - a).total_seconds() >= 0.4, (a, b)' || fail "the reply came too soon"
	apiserver_fault '{"path":"^/version$","hang":true}'
	run -28 curl -sS --max-time 1 --cacert "$APISERVER_DIR/ca.crt" \
		-H "Authorization: Bearer $APISERVER_TOKEN" "$APISERVER_URL/version"
	answers 200 GET /version
}

@test "apiserver: the request log records each request" {
	create /api/v1/nodes "$(node n1)"
	CALL_AS=none run -0 call GET /api/v1/nodes
	run -0 call PATCH '/api/v1/nodes/n1/status?fieldManager=t' '{"status":{"phase":"Running"}}' \
		application/merge-patch+json
	run -0 apiserver_curl /_requests
	run -0 jq -c 'map([.method, .path, .query, .contentType, .user, .auth, .body, .status])[]' <<<"$output"
	assert_output - <<-'EOF'
	["POST","/api/v1/nodes","","application/json","admin","token",{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}},201]
	["GET","/api/v1/nodes","",null,"none","none",null,401]
	["PATCH","/api/v1/nodes/n1/status","fieldManager=t","application/merge-patch+json","admin","token",{"status":{"phase":"Running"}},200]
	EOF
	run -0 jq -r .time "$APISERVER_DIR/requests.log"
	assert_line --index 0 --regexp '^[0-9-]{10}T[0-9:]{8}\.[0-9]{6}Z$'
	apiserver_clear_requests
	[ ! -s "$APISERVER_DIR/requests.log" ]
}

# --- watch --------------------------------------------------------------------

@test "apiserver: a watch sends what exists, then ADDED and MODIFIED" {
	create /api/v1/nodes "$(node n1)"
	curl -sS -N --cacert "$APISERVER_DIR/ca.crt" -H "Authorization: Bearer $APISERVER_TOKEN" \
		"$APISERVER_URL/api/v1/nodes?watch=true&timeoutSeconds=300" >"$BATS_TEST_TMPDIR/watch" 3>&- &
	local watcher=$!
	watching() { apiserver_requests GET /api/v1/nodes | grep -q 'watch=true'; }
	wait_until 100 0.05 watching
	create /api/v1/nodes "$(node n2)"
	run -0 call PATCH /api/v1/nodes/n2 '{"metadata":{"labels":{"a":"b"}}}' application/merge-patch+json
	# the watch stays open (a short timeoutSeconds raced a loaded machine):
	# once three events are there, the watcher is done
	three() { [ "$(wc -l <"$BATS_TEST_TMPDIR/watch")" -ge 3 ]; }
	wait_until 300 0.1 three
	kill "$watcher"
	wait "$watcher" || true
	run -0 jq -c '[.type, .object.kind, .object.metadata.name, .object.metadata.resourceVersion]' \
		"$BATS_TEST_TMPDIR/watch"
	assert_output - <<-'EOF'
	["ADDED","Node","n1","4"]
	["ADDED","Node","n2","5"]
	["MODIFIED","Node","n2","6"]
	EOF
}

@test "apiserver: a watch from a resourceVersion replays, through its fieldSelector" {
	create /api/v1/namespaces/default/pods "$(pod p1)"
	create /api/v1/namespaces/default/pods "$(pod p2 n2)"
	run -0 call PATCH /api/v1/namespaces/default/pods/p1 '{"spec":{"nodeName":"n1"}}' \
		application/merge-patch+json
	run -0 call PATCH /api/v1/namespaces/default/pods/p1 '{"spec":{"nodeName":"n3"}}' \
		application/merge-patch+json
	run -0 apiserver_curl '/api/v1/namespaces/default/pods?watch=1&resourceVersion=3&timeoutSeconds=1&fieldSelector=spec.nodeName%3Dn1'
	run -0 jq -c '[.type, .object.metadata.name, .object.metadata.resourceVersion, .object.spec.nodeName]' <<<"$output"
	assert_output - <<-'EOF'
	["ADDED","p1","6","n1"]
	["DELETED","p1","7","n1"]
	EOF
}

@test "apiserver: a watch from a compacted resourceVersion gets a 410 ERROR event" {
	create /api/v1/nodes "$(node n1)"
	create /api/v1/nodes "$(node n2)"
	run -0 apiserver_compact
	run -0 apiserver_curl '/api/v1/nodes?watch=1&resourceVersion=4&timeoutSeconds=1'
	run -0 jq -c '[.type, .object.code, .object.reason, .object.message]' <<<"$output"
	assert_output '["ERROR",410,"Expired","too old resource version: 4 (6)"]'
	# the current resourceVersion is still good: the watch just times out
	run -0 apiserver_curl '/api/v1/nodes?watch=1&resourceVersion=5&timeoutSeconds=1'
	assert_output ''
}

@test "apiserver: allowWatchBookmarks sends a bookmark 2 s before the timeout" {
	create /api/v1/nodes "$(node n1)"
	create /api/v1/namespaces/default/pods "$(pod p1)"
	run -0 apiserver_curl '/api/v1/nodes?watch=1&resourceVersion=4&timeoutSeconds=3&allowWatchBookmarks=true'
	assert_output '{"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"5"}}}'
	run -0 apiserver_curl '/api/v1/nodes?watch=1&resourceVersion=4&timeoutSeconds=3'
	assert_output ''
}

@test "apiserver: --bookmark-interval sets how often bookmarks come" {
	apiserver_stop
	apiserver_start "$BATS_TEST_TMPDIR/apiserver2" --bookmark-interval 0.2
	run -0 apiserver_curl '/api/v1/nodes?watch=1&resourceVersion=3&timeoutSeconds=3&allowWatchBookmarks=true'
	run -0 jq -r .type <<<"$output"
	[ "${#lines[@]}" -ge 4 ]
	[ "$(sort -u <<<"$output")" = BOOKMARK ]
}

@test "apiserver: /_drop-watches cuts an open watch mid-stream and says how many" {
	create /api/v1/nodes "$(node n1)"
	curl -sS -N --cacert "$APISERVER_DIR/ca.crt" -H "Authorization: Bearer $APISERVER_TOKEN" \
		"$APISERVER_URL/api/v1/nodes?watch=true" >"$BATS_TEST_TMPDIR/watch" 2>&1 3>&- &
	local watcher=$! rc=0
	wait_until 200 0.05 test -s "$BATS_TEST_TMPDIR/watch"
	run -0 apiserver_curl /_drop-watches -X POST
	assert_output '{"dropped":1}'
	wait "$watcher" || rc=$?
	# curl saw the body end before its last chunk: a dropped connection
	[ "$rc" -ne 0 ]
	run -0 head -1 "$BATS_TEST_TMPDIR/watch"
	[ "$(jq -r '.type + " " + .object.metadata.name' <<<"$output")" = "ADDED n1" ]
	run -0 apiserver_curl /_drop-watches -X POST
	assert_output '{"dropped":0}'
}

@test "apiserver: the dropAfterEvents fault cuts a watch after that many events" {
	create /api/v1/nodes "$(node n1)"
	create /api/v1/nodes "$(node n2)"
	apiserver_fault '{"query":"watch=1","dropAfterEvents":1}'
	run ! --separate-stderr apiserver_curl '/api/v1/nodes?watch=1&resourceVersion=3&timeoutSeconds=5'
	[ "$(jq -r '.type + " " + .object.metadata.name' <<<"$output")" = "ADDED n1" ]
	[[ "$stderr" == curl:* ]]
	# the rule is used up: the next watch gets both
	run -0 apiserver_curl '/api/v1/nodes?watch=1&resourceVersion=3&timeoutSeconds=1'
	[ "${#lines[@]}" -eq 2 ]
}

@test "apiserver: the trickleMs fault sends a watch's bytes slowly, never a whole event" {
	apiserver_fault '{"query":"watch=1","trickleMs":50}'
	run -28 --separate-stderr apiserver_curl '/api/v1/nodes?watch=1' --max-time 1
	[ "${#output}" -ge 3 ]
	[ "$output" = "$(head -c "${#output}" <<<'{"type":"ADDED","object":{"metadata":{"name":"x"}}}')" ]
}

@test "apiserver: lists are paged with limit and continue" {
	create /api/v1/nodes "$(node n1)"
	create /api/v1/nodes "$(node n2)"
	create /api/v1/nodes "$(node n3)"
	run -0 apiserver_curl '/api/v1/nodes?limit=2'
	jq_is '[.metadata.resourceVersion, .metadata.remainingItemCount, [.items[].metadata.name]]' '["6",1,["n1","n2"]]'
	token=$(jq -r .metadata.continue <<<"$output")
	run -0 apiserver_curl "/api/v1/nodes?limit=2&continue=$token"
	jq_is '[.metadata.resourceVersion, .metadata.continue, [.items[].metadata.name]]' '["6",null,["n3"]]'
	# a write after the first page expires the token, as compaction would
	create /api/v1/namespaces/default/pods "$(pod p1)"
	answers 410 GET "/api/v1/nodes?limit=2&continue=$token"
	[ "$(sed 1d <<<"$output" | jq -r .reason)" = Expired ]
}

# slow_list DIR PATH STARTED GO: GET PATH on a connection with a small
# receive buffer, read a few bytes of the reply, say so on the fifo STARTED,
# then read nothing until a line comes on the fifo GO; then read the rest
# and print the status line, the body's length against Content-Length, and
# the list's resourceVersion and item count.
slow_list() {
	python3 - "$@" <<-'EOF'
	import json, socket, ssl, sys
	d, path, started, go = sys.argv[1:5]
	raw = socket.socket()
	raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
	raw.connect(("127.0.0.1", int(open(d + "/port").read())))
	ctx = ssl.create_default_context(cafile=d + "/ca.crt")
	conn = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
	conn.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n"
	             % (path.encode(), open(d + "/token", "rb").read()))
	data = conn.recv(64)
	with open(started, "w") as fifo:
	    fifo.write("read %d bytes\n" % len(data))
	with open(go) as fifo:
	    fifo.readline()
	while b"\r\n\r\n" not in data:
	    data += conn.recv(65536)
	head, rest = data.split(b"\r\n\r\n", 1)
	length = int([l.split(b":")[1] for l in head.split(b"\r\n")
	              if l.lower().startswith(b"content-length:")][0])
	# one buffer filled in place: appending to bytes would copy it whole on
	# every small read the tiny receive buffer gives
	body = bytearray(rest)
	while len(body) < length:
	    chunk = conn.recv(1 << 20)
	    if not chunk:
	        break
	    body.extend(chunk)
	doc = json.loads(body)
	print(head.split(b"\r\n")[0].decode())
	print("body %s" % ("whole" if len(body) == length else "short"))
	print("resourceVersion %s items %d" % (doc["metadata"]["resourceVersion"], len(doc["items"])))
	EOF
}

@test "apiserver: a PATCH is answered while a large list is being read slowly" {
	local i big=$BATS_TEST_TMPDIR/big.json reader
	create /api/v1/nodes "$(node n1)"
	# 16 pods of 1 MiB each: far more than the socket buffers hold, so the
	# server is still writing the list while its reader reads nothing
	for ((i = 0; i < 16; i++)); do
		jq -cn --arg n "big$i" '{apiVersion: "v1", kind: "Pod",
			metadata: {name: $n, annotations: {fill: ("x" * 1048576)}},
			spec: {containers: [{name: "c", image: "busybox:1.36"}]}}' >"$big"
		apiserver_curl /api/v1/namespaces/default/pods -o /dev/null -f \
			-H 'Content-Type: application/json' --data-binary "@$big"
	done
	apiserver_clear_requests
	mkfifo "$BATS_TEST_TMPDIR/started" "$BATS_TEST_TMPDIR/go"
	slow_list "$APISERVER_DIR" /api/v1/pods "$BATS_TEST_TMPDIR/started" "$BATS_TEST_TMPDIR/go" \
		>"$BATS_TEST_TMPDIR/list" 3>&- &
	reader=$!
	# opened read-write, so that neither side blocks should the other die
	exec 4<>"$BATS_TEST_TMPDIR/started" 5<>"$BATS_TEST_TMPDIR/go"
	read -r -t 60 -u 4 line
	[[ $line == "read "*" bytes" ]]
	# the reader holds the list's reply half-read; the PATCH is answered
	answers 200 PATCH /api/v1/nodes/n1 '{"metadata":{"labels":{"a":"b"}}}' \
		application/merge-patch+json
	run -0 jq -r .metadata.resourceVersion "$BATS_TEST_TMPDIR/body"
	[ "$output" = 21 ]
	echo go >&5
	wait "$reader"
	exec 4>&- 5>&-
	# the list was taken before the PATCH (resourceVersion 20) and reaches
	# its reader whole after it
	run -0 cat "$BATS_TEST_TMPDIR/list"
	assert_output - <<-'EOF'
	HTTP/1.1 200 OK
	body whole
	resourceVersion 20 items 16
	EOF
	run -0 jq -c '[.method, .path, .status]' "$APISERVER_DIR/requests.log"
	assert_output - <<-'EOF'
	["GET","/api/v1/pods",200]
	["PATCH","/api/v1/nodes/n1",200]
	EOF
}

# --- kubectl ------------------------------------------------------------------

@test "apiserver: kubectl get nodes" {
	create /api/v1/nodes "$(node vk-1)"
	run -0 --separate-stderr apiserver_kubectl get nodes
	assert_line --index 0 --regexp '^NAME +AGE$'
	assert_line --index 1 --regexp '^vk-1 +[0-9]+s$'
	[ -z "$stderr" ]
}

@test "apiserver: kubectl apply creates a node, then updates it" {
	cat >"$BATS_TEST_TMPDIR/node.yaml" <<-'EOF'
	apiVersion: v1
	kind: Node
	metadata:
	  name: vk-1
	  labels:
	    type: virtual-kubelet
	EOF
	run -0 --separate-stderr apiserver_kubectl apply -f "$BATS_TEST_TMPDIR/node.yaml"
	assert_output 'node/vk-1 created'
	[ -z "$stderr" ]
	sed -i 's/virtual-kubelet/agent/' "$BATS_TEST_TMPDIR/node.yaml"
	run -0 --separate-stderr apiserver_kubectl apply -f "$BATS_TEST_TMPDIR/node.yaml"
	assert_output 'node/vk-1 configured'
	[ -z "$stderr" ]
	run -0 call GET /api/v1/nodes/vk-1
	run -0 jq -r .metadata.labels.type "$BATS_TEST_TMPDIR/body"
	assert_output agent
	run -0 apiserver_requests POST /api/v1/nodes
	run -0 jq -r .status <<<"$output"
	assert_output 201
	run -0 apiserver_requests PATCH /api/v1/nodes/vk-1
	run -0 jq -c '[.contentType, .body.metadata.labels.type, .status]' <<<"$output"
	assert_output '["application/strategic-merge-patch+json","agent",200]'
}

@test "apiserver: kubectl patch node" {
	create /api/v1/nodes "$(node vk-1)"
	run -0 --separate-stderr apiserver_kubectl patch node vk-1 -p '{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}'
	assert_output 'node/vk-1 patched'
	run -0 apiserver_kubectl get node vk-1 -o jsonpath='{.spec.taints[0].key}'
	assert_output k
}

@test "apiserver: kubectl patch --subresource=status" {
	[ "$(kubectl_minor)" -ge 24 ] || skip "kubectl 1.$(kubectl_minor) has no --subresource (1.24 added it)"
	create /api/v1/nodes "$(node vk-1)"
	run -0 --separate-stderr apiserver_kubectl patch node vk-1 --subresource=status --type=merge -p '{"status":{"phase":"Running"}}'
	assert_output 'node/vk-1 patched'
	run -0 apiserver_kubectl get node vk-1 -o jsonpath='{.status.phase}'
	assert_output Running
}

@test "apiserver: kubectl get lease -n kube-node-lease" {
	create "$LEASES" "$(lease vk-1)"
	run -0 --separate-stderr apiserver_kubectl get lease -n kube-node-lease
	assert_line --index 0 --regexp '^NAME +AGE$'
	assert_line --index 1 --regexp '^vk-1 +[0-9]+s$'
	run -0 apiserver_kubectl get lease -n kube-node-lease vk-1 -o jsonpath='{.spec.holderIdentity}'
	assert_output vk-1
}

# --- discovery, OpenAPI, admin ----------------------------------------------

@test "apiserver: /openapi/v2 carries upstream's patch tags" {
	run -0 apiserver_curl /openapi/v2
	run -0 jq -r '.definitions as $d | [
		$d["io.k8s.api.core.v1.NodeStatus"].properties.conditions["x-kubernetes-patch-merge-key"],
		$d["io.k8s.api.core.v1.PodSpec"].properties.containers["x-kubernetes-patch-merge-key"],
		$d["io.k8s.api.core.v1.PodSpec"].properties.volumes["x-kubernetes-patch-strategy"],
		$d["io.k8s.api.core.v1.Container"].properties.ports["x-kubernetes-patch-merge-key"],
		$d["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].properties.finalizers["x-kubernetes-patch-strategy"],
		$d["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].properties.ownerReferences["x-kubernetes-patch-merge-key"]
		] | @tsv' <<<"$output"
	assert_output "$(printf 'type\tname\tmerge,retainKeys\tcontainerPort\tmerge\tuid')"
	# Served byte for byte from the file.
	apiserver_curl /openapi/v2 >"$BATS_TEST_TMPDIR/v2.json"
	cmp "$BATS_TEST_TMPDIR/v2.json" "$KT_SRCDIR/tests/apiserver/openapi-v2.json"
}

@test "apiserver: /openapi/v2 in protobuf for kubectl before 1.24, JSON to anyone else" {
	local pb='application/com.github.proto-openapi.spec.v2@v1.0+protobuf'
	apiserver_curl /openapi/v2 -H "Accept: $pb" -D "$BATS_TEST_TMPDIR/h" -o "$BATS_TEST_TMPDIR/v2.pb"
	grep -qi '^content-type: application/octet-stream' "$BATS_TEST_TMPDIR/h"
	# a message, not JSON: field 1 (swagger) comes first, then every definition
	[ "$(head -c 6 "$BATS_TEST_TMPDIR/v2.pb" | od -An -tx1 | tr -d ' ')" = 0a03322e3012 ]
	run -0 grep -c -a -F -e io.k8s.api.core.v1.NodeStatus -e x-kubernetes-patch-merge-key \
		"$BATS_TEST_TMPDIR/v2.pb"
	run -0 curl -sS -o /dev/null -w '%{http_code}' --cacert "$APISERVER_DIR/ca.crt" \
		-H "Authorization: Bearer $APISERVER_TOKEN" -H 'Accept: text/html' "$APISERVER_URL/openapi/v2"
	assert_output 406
}

@test "apiserver: kubectl before 1.24 validates against the protobuf OpenAPI" {
	[ "$(kubectl_minor)" -lt 24 ] || skip "kubectl 1.$(kubectl_minor) validates on the server, which this one does not"
	printf 'apiVersion: v1\nkind: Node\nmetadata:\n  name: vk-1\nspec:\n  bogus: 1\n' \
		>"$BATS_TEST_TMPDIR/node.yaml"
	run -1 --separate-stderr apiserver_kubectl apply -f "$BATS_TEST_TMPDIR/node.yaml"
	[[ "$stderr" == *'unknown field "bogus" in io.k8s.api.core.v1.NodeSpec'* ]]
	run -0 apiserver_requests POST /api/v1/nodes
	[ -z "$output" ]
}

@test "apiserver: discovery lists the resources served" {
	run -0 apiserver_curl /api/v1
	run -0 jq -r '[.resources[].name] | join(" ")' <<<"$output"
	assert_output 'namespaces nodes nodes/proxy nodes/status pods pods/attach pods/exec pods/log pods/portforward pods/status events'
	run -0 apiserver_curl /apis
	run -0 jq -r '[.groups[].preferredVersion.groupVersion] | join(" ")' <<<"$output"
	assert_output 'apps/v1 authentication.k8s.io/v1 authorization.k8s.io/v1 batch/v1 certificates.k8s.io/v1 coordination.k8s.io/v1 metrics.k8s.io/v1beta1'
	run -0 apiserver_curl /apis/apps/v1
	run -0 jq -r '[.resources[].name] | join(" ")' <<<"$output"
	assert_output 'deployments deployments/status replicasets replicasets/status statefulsets statefulsets/status daemonsets daemonsets/status'
}

# --- workloads, jobs and events ---------------------------------------------

DEPLOYS=/apis/apps/v1/namespaces/default/deployments

deployment() {
	printf '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"%s"},' "$1"
	printf '"spec":{"selector":{"matchLabels":{"app":"%s"}},"template":{"metadata":' "$1"
	printf '{"labels":{"app":"%s"}},"spec":{"containers":[{"name":"c","image":"%s"}]}}}}' \
		"$1" "${2:-busybox:1.36}"
}

@test "apiserver: a Deployment gets its defaults and a generation that spec changes bump" {
	create "$DEPLOYS" "$(deployment web)"
	run -0 jq -c '[.metadata.generation, .spec.replicas, .spec.strategy.type,
		.spec.progressDeadlineSeconds, .status]' <<<"${lines[1]}"
	assert_output '[1,1,"RollingUpdate",600,{}]'
	answers 200 PATCH "$DEPLOYS/web/status" '{"status":{"observedGeneration":1,"replicas":1}}' \
		application/merge-patch+json
	answers 200 PATCH "$DEPLOYS/web" '{"spec":{"replicas":3},"status":{"replicas":9}}' \
		application/merge-patch+json
	run -0 jq -c '[.metadata.generation, .spec.replicas, .status]' <<<"${lines[1]}"
	assert_output '[2,3,{"observedGeneration":1,"replicas":1}]'
	run -0 --separate-stderr apiserver_kubectl get deploy,jobs.batch,sts,ds -o name
	assert_output deployment.apps/web
}

@test "apiserver: a Job's status is written through /status only" {
	create /apis/batch/v1/namespaces/default/jobs \
		'{"metadata":{"name":"j"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}'
	answers 200 PATCH /apis/batch/v1/namespaces/default/jobs/j/status \
		'{"status":{"conditions":[{"type":"Failed","status":"True"}]}}' application/merge-patch+json
	run -0 --separate-stderr apiserver_kubectl get job j -o jsonpath='{.status.conditions[0].type}'
	assert_output Failed
}

@test "apiserver: Events are selected by the object they are about" {
	local ev
	for ev in a:web:Pod b:web:Deployment c:db:Pod; do
		IFS=: read -r n obj kind <<<"$ev"
		create /api/v1/namespaces/default/events "$(printf '{"metadata":{"name":"%s"},"reason":"R","involvedObject":{"kind":"%s","name":"%s","namespace":"default"}}' "$n" "$kind" "$obj")"
	done
	answers 422 POST /api/v1/namespaces/default/events '{"metadata":{"name":"x"}}'
	answers 200 GET '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb,involvedObject.kind%3DPod'
	run -0 jq -c '[.items[] | .metadata.name, has("spec")]' "$BATS_TEST_TMPDIR/body"
	assert_output '["a",false]'
}

@test "apiserver: _reset empties the store back to its namespaces" {
	create /api/v1/nodes "$(node n1)"
	create /api/v1/namespaces "$(printf '{"metadata":{"name":"extra"}}')"
	apiserver_reset
	run -0 call GET /api/v1/nodes
	run -0 jq -c '.items | length' "$BATS_TEST_TMPDIR/body"
	assert_output 0
	run -0 call GET /api/v1/namespaces
	run -0 jq -c '[.items[].metadata.name]' "$BATS_TEST_TMPDIR/body"
	assert_output '["default","kube-node-lease","kube-system"]'
}

@test "apiserver: SIGTERM stops it cleanly" {
	local pid=$APISERVER_PID
	apiserver_stop
	run ! kill -0 "$pid"
	[ ! -e "$APISERVER_DIR/ready" ]
	[ ! -s "$APISERVER_DIR/stderr" ] || fail "stderr: $(cat "$APISERVER_DIR/stderr")"
}
