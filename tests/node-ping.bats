#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-ping: leases created, renewed, repaired; the loop, the check, a fleet; bad input

load helper

LEASES=/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases
MICRO='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z'

setup() {
	if [[ "$BATS_TEST_DESCRIPTION" == *"(no server)"* ]]; then
		return 0
	fi
	apiserver_start
}

teardown() {
	stop_jobs
	apiserver_stop
}

# make_node NAME: creates the Node and prints its uid
make_node() {
	apiserver_curl /api/v1/nodes -X POST -H 'Content-Type: application/json' \
		-d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\"}}" |
		jq -r .metadata.uid
	apiserver_clear_requests
}

# make_nodes NAME...: creates the Nodes, over one connection
make_nodes() {
	local args=() n
	for n in "$@"; do
		[ ${#args[@]} -gt 0 ] && args+=(--next)
		args+=(-sS -o /dev/null --cacert "$APISERVER_DIR/ca.crt"
			-H "Authorization: Bearer $APISERVER_TOKEN" -H 'Content-Type: application/json'
			-d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$n\"}}"
			"$APISERVER_URL/api/v1/nodes")
	done
	curl "${args[@]}"
	apiserver_clear_requests
}

lease_of() {
	apiserver_curl "$LEASES/$1"
}

ping() {
	node-ping --kubeconfig "$KUBECONFIG_FILE" "$@"
}

# ping_bg ARGS...: node-ping in the background, stdout and stderr in files
ping_bg() {
	node-ping --kubeconfig "$KUBECONFIG_FILE" "$@" >"$BATS_TEST_TMPDIR/out" \
		2>"$BATS_TEST_TMPDIR/err" 3>&- &
	PING_PID=$!
}

# ping_stop: SIGTERM, and the exit status in $status
ping_stop() {
	kill -TERM "$PING_PID"
	status=0
	wait "$PING_PID" || status=$?
	PING_PID=
}

# outputs REGEX N: the background node-ping printed N lines matching REGEX (grep)
outputs() {
	[ "$(grep -c "$1" "$BATS_TEST_TMPDIR/out")" -ge "$2" ]
}

# answered STATUS METHOD PATH N: the server logged N such requests answered STATUS
answered() {
	[ "$(apiserver_requests "$2" "$3" | grep -c "\"status\":$1[,}]")" -ge "$4" ]
}

@test "node-ping: the first run creates the lease with every field and the owner" {
	uid=$(make_node vk-1)
	run_ok ping -o json vk-1
	[[ "$output" =~ ^\{\"node\":\"vk-1\",\"result\":\"created\",\"renewTime\":\"($MICRO)\"\}$ ]]
	written=${BASH_REMATCH[1]}
	# what went over the wire: GET node, GET lease (404), POST lease
	log=$(apiserver_requests | jq -r '[.method, .path, .status, (.contentType // "-")] | join(" ")')
	[ "$log" = "GET /api/v1/nodes/vk-1 200 -
GET $LEASES/vk-1 404 -
POST $LEASES 201 application/json" ]
	lease=$(lease_of vk-1)
	[ "$(jq -c '.spec' <<<"$lease")" = \
		"{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,\"renewTime\":\"$written\"}" ]
	[ "$(jq -c '.metadata.ownerReferences' <<<"$lease")" = \
		"[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"$uid\"}]" ]
	[ "$(jq -r .metadata.namespace <<<"$lease")" = kube-node-lease ]
	# the body sent is the lease as made, in the house key order
	[ "$(apiserver_requests POST "$LEASES" | jq -c .body)" = "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"vk-1\",\"namespace\":\"kube-node-lease\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"$uid\"}]},\"spec\":{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,\"renewTime\":\"$written\"}}" ]
}

@test "node-ping: the next run renews with the resourceVersion as precondition" {
	make_node vk-1 >/dev/null
	run -0 --separate-stderr ping vk-1
	[ -z "$output" ]
	[ -z "$stderr" ]
	before=$(lease_of vk-1)
	rv=$(jq -r .metadata.resourceVersion <<<"$before")
	apiserver_clear_requests
	sleep 0.01
	run_ok ping -o json vk-1
	[[ "$output" =~ ^\{\"node\":\"vk-1\",\"result\":\"renewed\",\"renewTime\":\"($MICRO)\"\}$ ]]
	after=$(lease_of vk-1)
	[ "$(jq -r .spec.renewTime <<<"$after")" = "${BASH_REMATCH[1]}" ]
	[[ "$(jq -r .spec.renewTime <<<"$after")" > "$(jq -r .spec.renewTime <<<"$before")" ]]
	put=$(apiserver_requests PUT "$LEASES/vk-1")
	[ "$(jq -r .status <<<"$put")" = 200 ]
	[ "$(jq -r .contentType <<<"$put")" = application/json ]
	[ "$(jq -r .body.metadata.resourceVersion <<<"$put")" = "$rv" ]
	[ "$(jq -r .body.spec.renewTime <<<"$put")" = "${BASH_REMATCH[1]}" ]
}

@test "node-ping: a node created again with a new uid gets the lease's owner rewritten" {
	old=$(make_node vk-1)
	run -0 --separate-stderr ping vk-1
	apiserver_curl /api/v1/nodes/vk-1 -X DELETE >/dev/null
	new=$(make_node vk-1)
	[ "$old" != "$new" ]
	run_ok ping -o json vk-1
	[[ "$output" == '{"node":"vk-1","result":"renewed",'* ]]
	[ "$(lease_of vk-1 | jq -c .metadata.ownerReferences)" = \
		"[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"$new\"}]" ]
	[ "$(apiserver_requests PUT "$LEASES/vk-1" | jq -r '.body.metadata.ownerReferences[0].uid')" = "$new" ]
}

# renewed_past FIELDS: vk-1 and its lease exist; the next PUT of the lease meets a
# fault with these fields, and ping -o json vk-1 renews it all the same (the request
# log is of that ping alone)
renewed_past() {
	make_node vk-1 >/dev/null
	run -0 --separate-stderr ping vk-1
	apiserver_clear_requests
	apiserver_fault "{\"method\":\"PUT\",\"path\":\"/leases/vk-1\$\",$1,\"count\":1}"
	run_ok ping -o json vk-1
	[[ "$output" == '{"node":"vk-1","result":"renewed",'* ]]
}

@test "node-ping: a 409 on the update re-reads the lease and succeeds" {
	renewed_past '"status":409'
	log=$(apiserver_requests | jq -r '[.method, .status] | join(" ")')
	[ "$log" = "GET 200
GET 200
PUT 409
GET 200
PUT 200" ]
}

@test "node-ping: five 409s in a row give up with the conflict named" {
	make_node vk-1 >/dev/null
	run -0 --separate-stderr ping vk-1
	apiserver_fault "{\"method\":\"PUT\",\"path\":\"/leases/vk-1\$\",\"status\":409,\"count\":-1}"
	fails_with 1 "node-ping: lease/vk-1 (kube-node-lease): 409 Conflict: Operation cannot be fulfilled on leases.coordination.k8s.io \"vk-1\": the object has been modified; please apply your changes to the latest version and try again" ping vk-1
	[ "$(apiserver_requests PUT | wc -l)" = 5 ]
}

@test "node-ping: a 429 waits as long as the server asks before trying again" {
	renewed_past '"status":429,"retryAfter":1'
	mapfile -t puts < <(apiserver_requests PUT "$LEASES/vk-1" | jq -r '[.status, .time] | join(" ")')
	[ "${#puts[@]}" = 2 ]
	[[ "${puts[0]}" == "429 "* && "${puts[1]}" == "200 "* ]]
	python3 - "${puts[0]#* }" "${puts[1]#* }" <<'EOF'
import sys, datetime as d
a, b = (d.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ") for t in sys.argv[1:])
assert 1.0 <= (b - a).total_seconds() < 2.5, (a, b)
EOF
}

@test "node-ping: during an outage --once exits 1 naming the lease and the status" {
	make_node vk-1 >/dev/null
	apiserver_fault '{"path":"/leases","status":500,"count":-1}'
	run -1 --separate-stderr ping --request-timeout=1s -o json vk-1
	[ "$output" = '{"node":"vk-1","result":"failed","error":"lease/vk-1 (kube-node-lease): 500 Internal Server Error: injected fault (status 500)"}' ]
	[ "$stderr" = "node-ping: lease/vk-1 (kube-node-lease): 500 Internal Server Error: injected fault (status 500)" ]
}

@test "node-ping: a retry is logged at -v 4 as every tool logs one" {
	make_node vk-1 >/dev/null
	apiserver_fault '{"path":"/leases","status":500,"count":1}'
	run -0 --separate-stderr ping -v 4 vk-1
	grep -q '"retrying request" node="vk-1" status=500 delayMs=[0-9]*$' <<<"$stderr"
	apiserver_fault '{"method":"GET","path":"/nodes/vk-1$","status":503,"count":1}'
	run -0 --separate-stderr kube-request --kubeconfig "$KUBECONFIG_FILE" -v 4 GET /api/v1/nodes/vk-1
	grep -q '"retrying request" verb="GET" url="[^"]*/api/v1/nodes/vk-1" attempt=2 delayMs=[0-9]*$' <<<"$stderr"
}

@test "node-ping: after five 500s renewals resume, backing off once per step" {
	make_node vk-1 >/dev/null
	apiserver_fault '{"path":"/leases","status":500,"count":-1}'
	ping_bg --interval=10s -o json vk-1
	wait_until 100 0.1 answered 500 GET "$LEASES/vk-1" 5
	apiserver_clear_faults
	wait_until 80 0.1 test -s "$BATS_TEST_TMPDIR/out"
	ping_stop
	[ "$status" = 0 ]
	[ -z "$(cat "$BATS_TEST_TMPDIR/err")" ]
	[[ "$(cat "$BATS_TEST_TMPDIR/out")" == '{"node":"vk-1","result":"created",'* ]]
	# the waits between failed tries: 0.2 0.4 0.8 1.6 s (not doubled twice)
	mapfile -t t < <(apiserver_requests GET "$LEASES/vk-1" | jq -r .time | python3 -c '
import sys, datetime as d
for l in sys.stdin:
    print(d.datetime.strptime(l.strip(), "%Y-%m-%dT%H:%M:%S.%fZ").timestamp())')
	[ "${#t[@]}" -ge 5 ]
	python3 - "${t[@]}" <<'EOF'
import sys
t = [float(x) for x in sys.argv[1:]]
gaps = [b - a for a, b in zip(t, t[1:])]
want = [0.2, 0.4, 0.8, 1.6]
# never shorter than the backoff (but for the few ms the server's log time
# of one answer may lag behind the next's); in all no more than a second
# over it, where waiting twice per step would take 6 s
for g, w in zip(gaps, want):
    assert w - 0.02 <= g < w + 0.6, (gaps, want)
assert sum(gaps[:4]) < sum(want) + 1.0, gaps
assert all(g < 7.5 for g in gaps), gaps
EOF
}

@test "node-ping: --interval renews once an interval by the server's clock and stops on SIGTERM" {
	make_node vk-1 >/dev/null
	ping_bg --interval=300ms --status-interval=60s -o json vk-1
	wait_until 200 0.1 outputs '"result":"\(renewed\|created\)"' 4
	ping_stop
	[ "$status" = 0 ]
	[ -z "$(cat "$BATS_TEST_TMPDIR/err")" ]
	[ "$(grep -c '"result":"\(renewed\|created\)"' "$BATS_TEST_TMPDIR/out")" -ge 4 ]
	[ "$(grep -vc '"result":"\(renewed\|created\)"' "$BATS_TEST_TMPDIR/out")" = 0 ]
	[ "$(apiserver_requests PUT "$LEASES/vk-1" | wc -l)" -ge 3 ]
	# one write an interval, never sooner, as the server received them (a
	# little under 300 ms apart when the one before came in late)
	mapfile -t t < <(apiserver_requests | jq -r 'select(.method != "GET" and (.path | contains("/leases"))) | .time')
	python3 - "${t[@]}" <<'EOF'
import sys, datetime as d
t = [d.datetime.strptime(x, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() for x in sys.argv[1:]]
gaps = [b - a for a, b in zip(t, t[1:])]
assert len(gaps) >= 3 and all(g >= 0.2 for g in gaps), gaps
EOF
}

@test "node-ping: --status-interval refreshes condition heartbeats without holding renewals" {
	make_node vk-1 >/dev/null
	apiserver_curl /api/v1/nodes/vk-1/status -X PATCH \
		-H 'Content-Type: application/merge-patch+json' \
		-d '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"2020-01-01T00:00:00Z","lastTransitionTime":"2020-01-01T00:00:00Z"}]}}' >/dev/null
	apiserver_clear_requests
	ping_bg --interval=300ms --lease-duration=2 --status-interval=1s -o json vk-1
	# the test server patches through kubectl, which takes a second or so:
	# renewals go on meanwhile
	wait_until 80 0.1 answered 200 PATCH /api/v1/nodes/vk-1/status 1
	# and renewals kept coming (a loaded machine may need a moment for the third)
	wait_until 50 0.1 outputs '"result":"\(renewed\|created\)"' 3
	ping_stop
	[ "$status" = 0 ]
	[ -z "$(cat "$BATS_TEST_TMPDIR/err")" ]
	[ "$(grep -c '"result":"\(renewed\|created\)"' "$BATS_TEST_TMPDIR/out")" -ge 3 ]
	patches=$(apiserver_requests PATCH /api/v1/nodes/vk-1/status)
	[ "$(head -1 <<<"$patches" | jq -r '[.contentType, .status] | join(" ")')" = \
		"application/strategic-merge-patch+json 200" ]
	ready=$(apiserver_curl /api/v1/nodes/vk-1 | jq -c '.status.conditions[0]')
	[ "$(jq -r '[.status, .reason, .lastTransitionTime] | join(" ")' <<<"$ready")" = \
		"True KubeletReady 2020-01-01T00:00:00Z" ]
	[[ "$(jq -r .lastHeartbeatTime <<<"$ready")" > "2026-" ]]
}

@test "node-ping: --check false skips the renewal and exits 1" {
	make_node vk-1 >/dev/null
	run -1 --separate-stderr ping --check=false -o json vk-1
	[ "$output" = '{"node":"vk-1","result":"skipped","error":"check '\''false'\'' failed: exit status 1"}' ]
	[ "$stderr" = "node-ping: check 'false' failed: exit status 1" ]
	[ -z "$(apiserver_requests)" ]
}

@test "node-ping: --check false skips every renewal of the loop" {
	make_node vk-1 >/dev/null
	ping_bg --interval=300ms --check=false -o json vk-1 vk-2
	# two rounds at least
	wait_until 100 0.1 outputs '"result":"skipped"' 4
	ping_stop
	[ "$status" = 0 ]
	[ "$(grep -c '"result":"skipped"' "$BATS_TEST_TMPDIR/out")" -ge 4 ]
	[ "$(grep -vc '"result":"skipped"' "$BATS_TEST_TMPDIR/out")" = 0 ]
	[ "$(grep -vc "^node-ping: check 'false' failed: exit status 1\$" "$BATS_TEST_TMPDIR/err")" = 0 ]
	[ -z "$(apiserver_requests)" ]
}

@test "node-ping: a hung check times out, skips, and the loop keeps going" {
	make_node vk-1 >/dev/null
	ping_bg --interval=500ms --check='sleep 10.4242' --check-timeout=300ms -o json vk-1
	wait_until 100 0.1 outputs '"result":"skipped"' 2
	ping_stop
	[ "$status" = 0 ]
	[ "$(grep -c '"result":"skipped","error":"check '\''sleep 10.4242'\'' timed out after 300ms"' \
		"$BATS_TEST_TMPDIR/out")" -ge 2 ]
	[ "$(grep -vc '"result":"skipped"' "$BATS_TEST_TMPDIR/out")" = 0 ]
	! pgrep -f 'sleep 10.4242'
}

@test "node-ping: a passing check lets the renewal through" {
	make_node vk-1 >/dev/null
	run -0 --separate-stderr ping --check='test -n "$HOME" && echo hello' -o json vk-1
	[[ "$output" =~ ^\{\"node\":\"vk-1\",\"result\":\"created\",\"renewTime\":\"$MICRO\"\}$ ]]
	[ "$stderr" = hello ]
}

@test "node-ping: --nodes-from reads names, skipping blanks and comments" {
	make_nodes vk-a vk-b vk-c vk-z
	run_ok ping --nodes-from="$FIX/nodes.txt" -o json vk-z
	[ "$(jq -r '.node + " " + .result' <<<"$output" | sort)" = "vk-a created
vk-b created
vk-c created
vk-z created" ]
	run -0 --separate-stderr ping --nodes-from=- --holder-identity=agent-7 \
		--lease-duration=15 -o json <<<"vk-a"
	[[ "$output" == '{"node":"vk-a","result":"renewed",'* ]]
	[ "$(lease_of vk-a | jq -c '[.spec.holderIdentity, .spec.leaseDurationSeconds]')" = '["agent-7",15]' ]
}

@test "node-ping: eight nodes or more are read with one LIST, then each lease is PUT" {
	make_nodes vk-1 vk-2 vk-3 vk-4 vk-5 vk-6 vk-7 vk-8
	run -0 --separate-stderr ping vk-1 vk-2 vk-3 vk-4 vk-5 vk-6 vk-7 vk-8
	apiserver_clear_requests
	run_ok ping -o json vk-1 vk-2 vk-3 vk-4 vk-5 vk-6 vk-7 vk-8
	[ "$(jq -r .result <<<"$output" | sort | uniq -c | tr -s ' ')" = " 8 renewed" ]
	log=$(apiserver_requests | jq -r '[.method, (.path | sub("vk-[0-9]$"; "vk-N")), .status] |
		join(" ")' | sort | uniq -c | awk '{ print $1, $2, $3, $4 }')
	[ "$log" = "8 GET /api/v1/nodes/vk-N 200
1 GET $LEASES 200
8 PUT $LEASES/vk-N 200" ]
	[ "$(apiserver_requests PUT "$LEASES/vk-3" | jq -c '[.body.apiVersion, .body.kind, (.body | keys_unsorted[0:2])]')" = \
		'["coordination.k8s.io/v1","Lease",["apiVersion","kind"]]' ]
}

@test "node-ping: over 500 leases are listed in pages that continue, and none is read alone" {
	seq -f 'vk-%03g' 501 >"$BATS_TEST_TMPDIR/nodes"
	mapfile -t names <"$BATS_TEST_TMPDIR/nodes"
	make_nodes "${names[@]}"
	run -0 --separate-stderr ping --nodes-from="$BATS_TEST_TMPDIR/nodes"
	apiserver_clear_requests
	run -0 --separate-stderr ping --nodes-from="$BATS_TEST_TMPDIR/nodes" -o json
	[ -z "$stderr" ]
	[ "$(jq -r .result <<<"$output" | sort | uniq -c | tr -s ' ')" = " 501 renewed" ]
	# two pages: the second continues the first; no lease is read on its own
	[ "$(apiserver_requests GET "$LEASES" | jq -r '.query | sub("continue=[^&]*"; "continue=T")')" = \
		"limit=500
limit=500&continue=T" ]
	[ "$(apiserver_requests GET "$LEASES" | jq -r '.status' | sort -u)" = 200 ]
	[ "$(apiserver_requests | jq -r 'select(.method == "GET" and (.path | startswith("'"$LEASES"'/"))) | .path')" = "" ]
	[ "$(apiserver_requests PUT | jq -r .path | sort -u | wc -l)" = 501 ]
}

@test "node-ping: a fleet of 200 renews each interval; a hanging node delays none" {
	seq -f 'vk-%03g' 200 >"$BATS_TEST_TMPDIR/nodes"
	mapfile -t names <"$BATS_TEST_TMPDIR/nodes"
	make_nodes "${names[@]}"
	apiserver_fault '{"path":"/leases/vk-007$","hang":true,"count":-1}'
	ping_bg --interval=2s --lease-duration=10 --request-timeout=30s \
		--nodes-from="$BATS_TEST_TMPDIR/nodes" -o json
	out="$BATS_TEST_TMPDIR/out"
	# every other node: created in the first interval, then renewed; the
	# wait is for a slow test server, not for node-ping
	renewed_199() { [ "$(grep '"result":"renewed"' "$out" | cut -d'"' -f4 | sort -u | wc -l)" = 199 ]; }
	wait_until 400 0.1 renewed_199
	ping_stop
	[ "$status" = 0 ]
	[ -z "$(cat "$BATS_TEST_TMPDIR/err")" ] || { head "$BATS_TEST_TMPDIR/err"; false; }
	[ "$(grep -c '"result":"created"' "$out")" = 199 ]
	[ "$(jq -r 'select(.result == "renewed") | .node' "$out" | sort -u | wc -l)" = 199 ]
	[ "$(jq -r 'select(.result != "renewed" and .result != "created")' "$out")" = "" ]
	! grep -q '"node":"vk-007"' "$out"
	# vk-007's lease was asked for and never answered
	[ "$(apiserver_requests GET "$LEASES/vk-007" | jq -c '[.status, .fault]')" = '[null,true]' ]
}

@test "node-ping: wrong credentials exit 1 naming the node and the status" {
	make_node vk-1 >/dev/null
	fails_with 1 "node-ping: node/vk-1: 401 Unauthorized" node-ping --server="$APISERVER_URL" --token=wrong \
		--certificate-authority="$APISERVER_DIR/ca.crt" vk-1
}

@test "node-ping: a node that does not exist gets no lease, is skipped and exits 1" {
	make_node vk-1 >/dev/null
	run -1 --separate-stderr ping -o json vk-1 vk-typo
	[ "$stderr" = "node-ping: node/vk-typo: not found: no lease is written for a node that does not exist" ]
	[ "$(jq -c 'select(.node == "vk-typo")' <<<"$output")" = \
		'{"node":"vk-typo","result":"skipped","error":"node/vk-typo: not found: no lease is written for a node that does not exist"}' ]
	[ "$(jq -r 'select(.node == "vk-1") | .result' <<<"$output")" = created ]
	# nothing but the read of the node was asked about vk-typo
	[ "$(apiserver_requests | jq -r 'select(.path | test("vk-typo")) | [.method, .path, .status] | join(" ")')" = \
		"GET /api/v1/nodes/vk-typo 404" ]
	run -0 apiserver_curl "$LEASES/vk-typo" -o /dev/null -w '%{http_code}'
	[ "$output" = 404 ]
}

@test "node-ping: a lease is written again once its node exists" {
	run -1 --separate-stderr ping vk-late
	make_node vk-late >/dev/null
	run_ok ping -o json vk-late
	[ "$(jq -r .result <<<"$output")" = created ]
}

@test "node-ping: a bad token over 50 nodes is one line with a count" {
	mapfile -t names < <(seq -f 'vk-%02g' 50)
	make_nodes "${names[@]}"
	run -1 --separate-stderr node-ping --server="$APISERVER_URL" --token=wrong \
		--certificate-authority="$APISERVER_DIR/ca.crt" -o json "${names[@]}"
	[ "$(wc -l <<<"$stderr")" = 1 ]
	[[ "$stderr" =~ ^node-ping:\ node/vk-[0-9]{2}:\ 401\ Unauthorized\ \(and\ 49\ more\ nodes\ with\ the\ same\ error\)$ ]]
	# the data on stdout stays one line per node
	[ "$(jq -r .result <<<"$output" | sort | uniq -c | tr -s ' ')" = " 50 failed" ]
}

@test "node-ping: causes are counted apart, and each is said once" {
	make_nodes vk-1 vk-2
	apiserver_fault '{"method":"GET","path":"^/api/v1/nodes/vk-2$","status":403,"count":-1}'
	run -1 --separate-stderr ping vk-1 vk-2 vk-x vk-y vk-z
	[ "${#stderr_lines[@]}" = 2 ]
	[[ "${stderr_lines[*]}" == *"node-ping: node/vk-2: 403 Forbidden"* ]]
	[[ "$stderr" =~ node-ping:\ node/vk-[xyz]:\ not\ found:\ no\ lease\ is\ written\ for\ a\ node\ that\ does\ not\ exist\ \(and\ 2\ more\ nodes\ with\ the\ same\ error\) ]]
}

@test "node-ping: looping, missing nodes are summed up once an interval" {
	ping_bg --interval=2s --lease-duration=10 --status-interval=60s vk-x vk-y vk-z
	# the contract: one summary at the end of each interval; wait for two
	summed_twice() { [ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -ge 2 ]; }
	wait_until 80 0.1 summed_twice
	ping_stop
	[ "$status" = 0 ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/err")" -ge 2 ]
	! grep -v 'not found: no lease is written for a node that does not exist (and 2 more nodes with the same error)$' \
		"$BATS_TEST_TMPDIR/err"
	[ -z "$(apiserver_requests | jq -r 'select(.path | test("leases/")) | .path')" ]
}

@test "node-ping: its writes name it as field manager, or --field-manager's value" {
  make_node vk-1 >/dev/null
  run_ok ping vk-1
  run_ok apiserver_kubectl get lease -n kube-node-lease vk-1 --show-managed-fields -o json
  jq_is '[.metadata.managedFields[].manager]' '["node-ping"]'
  run_ok ping --field-manager=lease-fixer vk-1
  [ "$(apiserver_requests PUT "$LEASES/vk-1" | jq -r '[.query, (.userAgent | sub("/.*"; ""))] | join(" ")')" = \
    "fieldManager=lease-fixer node-ping" ]
  run_ok apiserver_kubectl get lease -n kube-node-lease vk-1 --show-managed-fields -o json
  jq_is '[.metadata.managedFields[].manager]' '["node-ping","lease-fixer"]'
}

@test "node-ping: a server that is down exits 1 (no server)" {
	run -1 --separate-stderr node-ping --server=https://127.0.0.1:1 --token=x \
		--request-timeout=500ms -o json vk-1
	[[ "$stderr" == "node-ping: node/vk-1: GET https://127.0.0.1:1/api/v1/nodes/vk-1: "* ]]
	[ "$(wc -l <<<"$stderr")" = 1 ]
	[[ "$output" == '{"node":"vk-1","result":"failed","error":"node/vk-1: GET https://127.0.0.1:1/'* ]]
}

@test "node-ping: bad input is a usage error (no server)" {
	printf 'vk-1\n\nBad_Name\n' >"$BATS_TEST_TMPDIR/bad-nodes"
	printf 'vk-2\n# a comment\nvk-3\nvk-2\n' >"$BATS_TEST_TMPDIR/twice"
	while IFS='|' read -r args want; do
		eval "set -- $args"
		run -2 --separate-stderr node-ping "$@"
		[ -z "$output" ] || { echo "stdout for $args: $output"; false; }
		[ "${#stderr_lines[@]}" = 2 ] || { echo "stderr for $args: $stderr"; false; }
		[ "${stderr_lines[0]}" = "node-ping: $want" ] ||
			{ echo "for $args: got '${stderr_lines[0]}'"; false; }
		[ "${stderr_lines[1]}" = "Try 'node-ping --help' for more information." ]
	done <<EOF
VK_1|invalid node name 'VK_1': only lower-case letters, digits, '-' and '.' are allowed
vk-1. vk-2|invalid node name 'vk-1.': each dot-separated part must start and end with a letter or digit
vk/1|invalid node name 'vk/1': only lower-case letters, digits, '-' and '.' are allowed
''|invalid node name '': must not be empty
|missing node name
vk-1 vk-1|node 'vk-1' is given twice
--nodes-from=$BATS_TEST_TMPDIR/twice|$BATS_TEST_TMPDIR/twice:4: node 'vk-2' is given twice (first at $BATS_TEST_TMPDIR/twice:1)
--nodes-from=$BATS_TEST_TMPDIR/twice vk-3|$BATS_TEST_TMPDIR/twice:3: node 'vk-3' is given twice (first on the command line)
--interval=0 vk-1|invalid value '0' for --interval: must be more than 0
--interval=-2s vk-1|invalid value '-2s' for --interval: must be more than 0
--interval=10 vk-1|--interval: invalid duration '10': missing or unknown unit (use ns, us, ms, s, m or h)
--lease-duration=0 vk-1|invalid value '0' for --lease-duration: must be from 1 to 2147483647
--lease-duration=-40 vk-1|invalid value '-40' for --lease-duration: must be from 1 to 2147483647
--lease-duration=ten vk-1|invalid value 'ten' for --lease-duration: expected a whole number
--lease-duration=20 --interval=30s vk-1|--interval 30s must be shorter than the lease duration 20s
--lease-duration=3 vk-1 --interval=3s|--interval 3s must be shorter than the lease duration 3s
--check=true --check-timeout=0s vk-1|invalid value '0s' for --check-timeout: must be more than 0
--status-interval=-1m --interval=1s vk-1|invalid value '-1m' for --status-interval: must be more than 0
--status-interval=1m vk-1|--status-interval needs --interval
--once --interval=5s vk-1|--once and --interval cannot be used together
-o yaml vk-1|invalid value 'yaml' for --output: expected json
--holder-identity= vk-1|--holder-identity must not be empty
--nodes-from=/nonexistent/nodes|cannot open '/nonexistent/nodes': No such file or directory
--nodes-from=$BATS_TEST_TMPDIR/bad-nodes|$BATS_TEST_TMPDIR/bad-nodes:3: invalid node name 'Bad_Name': only lower-case letters, digits, '-' and '.' are allowed
--field-manager=$(printf 'm%.0s' {1..129}) vk-1|invalid --field-manager: 129 bytes long, the API server takes at most 128
--field-manager=\$'ping\\r' vk-1|invalid --field-manager: it has a control character
--print-seconds=90|--print-seconds: invalid duration '90': missing or unknown unit (use ns, us, ms, s, m or h)
--print-seconds=0s|invalid value '0s' for --print-seconds: must be more than 0
EOF
}

@test "node-ping: --print-seconds prints a duration in whole seconds, rounded up, and renews nothing (no server)" {
	local d
	for d in 1m30s:90 500ms:1 10s:10 1h:3600 1.5s:2 2m0.001s:121; do
		prints 0 "${d#*:}" node-ping --kubeconfig=/nonexistent --print-seconds="${d%%:*}"
	done
}

@test "node-ping: --version names the tool and the package (no server)" {
	run -0 --separate-stderr node-ping --version
	[[ "$output" =~ ^node-ping\ from\ kubelet-tools\ [0-9] ]]
	[ -z "$stderr" ]
}

@test "node-ping: a credential the server rejects runs the exec plugin once, for 40 nodes" {
  mapfile -t names < <(seq -f 'vk-%02g' 40)
  make_nodes "${names[@]}"
  local tok=$BATS_TEST_TMPDIR/token
  # the plugin hands out a token the server refuses, every time it runs
  echo refused >"$tok"
  # the server's kubeconfig, its user the plugin instead of the token
  sed "s|^    token: .*|    exec: {apiVersion: client.authentication.k8s.io/v1, \
command: $BATS_TEST_DIRNAME/fixtures/kube-request/exec-plugin.sh, args: [$tok], \
env: [{name: PLUGIN_GREETING, value: hello}]}|" "$KUBECONFIG_FILE" >"$BATS_TEST_TMPDIR/kc"
  run -1 --separate-stderr node-ping --kubeconfig "$BATS_TEST_TMPDIR/kc" -o json "${names[@]}"
  [[ "$stderr" =~ ^node-ping:\ node/vk-[0-9]{2}:\ 401\ Unauthorized\ \(and\ 39\ more\ nodes\ with\ the\ same\ error\)$ ]]
  # one run for the first credential, one more once the server refused it
  [ "$(wc -l <"$tok.runs")" -eq 2 ]
  # the plugin gave the refused token back: nothing was sent again with it
  run -0 apiserver_requests
  [ "$(grep -c '"status":401' <<<"$output")" -eq 41 ]
  [ "${#lines[@]}" -eq 41 ]
}
