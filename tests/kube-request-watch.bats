#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kube-request --watch against the local API server: list, watch, resume, re-list
load helper
load watch-pods

PODS=/api/v1/namespaces/default/pods

# one server per test: resourceVersions start afresh (the first object gets 4)
setup() {
	T=$BATS_TEST_TMPDIR
	export HOME=$T/home
	mkdir -p "$HOME"
	unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	apiserver_start "$T/apiserver" ${SERVER_ARGS:-}
	export KUBECONFIG=$KUBECONFIG_FILE
	WATCH_PID=
}

teardown() {
	stop_jobs
	WATCH_PID=
	# a test that failed shows what the watch printed and what it asked
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -e "$T/watch.out" ]; then
		cat "$T/watch.out" "$T/watch.err" "$APISERVER_DIR/requests.log" >&2
	fi
	apiserver_stop
}

# kube-request --watch ARGS... in the background, output in $T/watch.out
start_watch() {
	kube-request --watch "$@" >"$T/watch.out" 2>"$T/watch.err" 3>&- &
	WATCH_PID=$!
}

# The watch's contract is "eventually": what it prints and asks is waited for
# (wait_until 900 0.1: the longest wait between two attempts, 30 s plus as much
# jitter, and a margin)

# printed N: the watch printed N lines
printed() {
	[ "$(wc -l <"$T/watch.out")" -ge "$1" ]
}

# requested STRING: the request log has a line with the fixed string STRING
requested() {
	grep -qF -- "$1" "$APISERVER_DIR/requests.log"
}

# SIGTERM ends a watch cleanly: exit 0
stop_watch() {
	kill -TERM "$WATCH_PID"
	WATCH_RC=0
	wait "$WATCH_PID" || WATCH_RC=$?
	WATCH_PID=
	[ "$WATCH_RC" -eq 0 ] || { cat "$T/watch.err" >&2; false; }
}

# "TYPE name resourceVersion", one line per event
events() {
	jq -r '.type + " " + (.object.metadata.name // "-") + " " + .object.metadata.resourceVersion' "$T/watch.out"
}

# the queries of the GETs of the pods collection, in order
queries() {
	apiserver_requests GET $PODS | jq -r .query
}

@test "kube-request --watch: the initial list as ADDED, then each change once" {
	mkpod a
	mkpod b
	start_watch GET $PODS
	wait_until 900 0.1 printed 2
	mkpod c
	relabel a 1
	delpod b
	wait_until 900 0.1 printed 5
	stop_watch
	[ "$(events)" = "ADDED a 4
ADDED b 5
ADDED c 6
MODIFIED a 7
DELETED b 8" ]
	[ ! -s "$T/watch.err" ]
	# list items come with apiVersion and kind, as the watch's objects do
	run -0 jq -c '.object | [.apiVersion, .kind]' "$T/watch.out"
	[ "$(sort -u <<<"$output")" = '["v1","Pod"]' ]
	[ "$(jq -S .object "$T/watch.out" | jq -s -c '.[2]')" = "$(apiserver_curl $PODS/c | jq -S -c .)" ]
	run -0 queries
	[ "${lines[0]}" = "limit=500" ]
	[[ "${lines[1]}" =~ ^watch=1\&resourceVersion=5\&allowWatchBookmarks=true\&timeoutSeconds=([0-9]+)$ ]]
	[ "${BASH_REMATCH[1]}" -ge 300 ] && [ "${BASH_REMATCH[1]}" -lt 600 ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "kube-request --watch: --watch-only leaves out the initial list" {
	mkpod a
	start_watch --watch-only GET $PODS
	wait_until 900 0.1 requested "resourceVersion=4"
	relabel a 1
	wait_until 900 0.1 printed 1
	stop_watch
	[ "$(events)" = "MODIFIED a 5" ]
}

@test "kube-request --watch: a path naming one object follows that object only" {
	mkpod a
	mkpod b
	start_watch GET $PODS/a
	wait_until 900 0.1 printed 1
	relabel b 1
	relabel a 1
	delpod a
	wait_until 900 0.1 printed 3
	stop_watch
	[ "$(events)" = "ADDED a 4
MODIFIED a 7
DELETED a 8" ]
	run -0 queries
	[ "${lines[0]}" = "fieldSelector=metadata.name%3Da&limit=500" ]
}

@test "kube-request --watch: -o yaml prints each event as a YAML document" {
	mkpod a
	start_watch -o yaml GET $PODS
	wait_until 900 0.1 requested "resourceVersion=4"
	relabel a 1
	wait_until 300 0.1 grep -q '^type: MODIFIED$' "$T/watch.out"
	stop_watch
	run -0 grep -E '^(---|type: .*|object:|  kind: Pod)$' "$T/watch.out"
	[ "$output" = "type: ADDED
object:
  kind: Pod
---
type: MODIFIED
object:
  kind: Pod" ]
}

@test "kube-request --watch: --chunk-size lists in pages; an expired page lists in one piece" {
	mkpod a
	mkpod b
	mkpod c
	apiserver_fault '{"query":"continue=","status":410,"count":1}'
	start_watch --chunk-size=2 GET $PODS
	wait_until 900 0.1 printed 3
	wait_until 900 0.1 requested "watch=1&resourceVersion=6&"
	stop_watch
	[ "$(events)" = "ADDED a 4
ADDED b 5
ADDED c 6" ]
	# the first page, the second (410), the whole list in one piece, the watch
	[ "$(queries | sed 's/&continue=.*/\&continue=T/; s/^\(watch=1&resourceVersion=6\)&.*/\1/')" = \
		"limit=2
limit=2&continue=T

watch=1&resourceVersion=6" ]
	run -0 apiserver_requests GET $PODS
	[ "$(jq -r .status <<<"$output" | tr '\n' ' ')" = "200 410 200 200 " ]
}

@test "kube-request --watch: --chunk-size=0 lists in one piece, no --chunk-size in pages of 500" {
	mkpod a
	start_watch --chunk-size=0 GET $PODS
	wait_until 900 0.1 printed 1
	wait_until 900 0.1 requested "watch=1&resourceVersion=4&"
	stop_watch
	[ "$(queries | sed -n 1p)" = "" ]
	start_watch GET $PODS
	wait_until 900 0.1 requested "limit=500"
	stop_watch
}

@test "kube-request --watch: a connection dropped mid-stream resumes from the last event" {
	mkpod a
	mkpod b
	apiserver_fault '{"query":"watch=1","dropAfterEvents":2,"count":1}'
	start_watch GET $PODS
	wait_until 900 0.1 printed 2
	mkpod c
	relabel a 1 # the second event: the server drops the connection after it
	mkpod d
	delpod c
	relabel a 2
	wait_until 900 0.1 printed 7
	stop_watch
	[ "$(events)" = "ADDED a 4
ADDED b 5
ADDED c 6
MODIFIED a 7
ADDED d 8
DELETED c 9
MODIFIED a 10" ]
	run -0 queries
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "limit=500" ]
	[[ "${lines[1]}" == "watch=1&resourceVersion=5&"* ]]
	[[ "${lines[2]}" == "watch=1&resourceVersion=7&"* ]]
}

@test "kube-request --watch: changes made while the watch is down come after it, none lost or repeated" {
	mkpod a
	mkpod b
	start_watch GET $PODS
	wait_until 900 0.1 printed 2
	wait_until 900 0.1 requested "resourceVersion=5"
	# every new watch is refused until the changes are made
	apiserver_fault '{"query":"watch=1","drop":true,"count":-1}'
	apiserver_drop_watches
	mkpod c
	relabel a 1
	delpod b
	apiserver_clear_faults
	wait_until 900 0.1 printed 5
	stop_watch
	[ "$(events)" = "ADDED a 4
ADDED b 5
ADDED c 6
MODIFIED a 7
DELETED b 8" ]
	# resumed from resourceVersion 5, never listed again
	run -0 queries
	[ "${lines[0]}" = "limit=500" ]
	for q in "${lines[@]:1}"; do
		[[ "$q" == "watch=1&resourceVersion=5&"* ]]
	done
	[ "${#lines[@]}" -ge 3 ]
}

@test "kube-request --watch: an expired resourceVersion re-lists and reports the difference" {
	mkpod a
	mkpod b
	mkpod c
	start_watch GET $PODS
	wait_until 900 0.1 printed 3
	wait_until 900 0.1 requested "resourceVersion=6"
	apiserver_fault '{"query":"watch=1","drop":true,"count":-1}'
	apiserver_drop_watches
	relabel a 1 # 7
	delpod b    # 8
	delpod c    # 9
	mkpod c     # 10, another uid
	mkpod d     # 11
	apiserver_compact
	apiserver_clear_faults
	wait_until 900 0.1 printed 8
	stop_watch
	# gone and replaced objects first, as last reported; then the list's order
	[ "$(events)" = "ADDED a 4
ADDED b 5
ADDED c 6
DELETED b 5
DELETED c 6
MODIFIED a 7
ADDED c 10
ADDED d 11" ]
	[ "$(jq -r 'select(.type == "DELETED") | .object.metadata.uid' "$T/watch.out" | sed -n 2p)" = \
		"$(jq -r 'select(.type == "ADDED" and .object.metadata.name == "c") | .object.metadata.uid' "$T/watch.out" | sed -n 1p)" ]
	run -0 queries
	[ "$(grep -c '^limit=500$' <<<"$output")" -eq 2 ]
	[ "${lines[-1]}" != "${lines[-1]#watch=1&resourceVersion=11&}" ]
}

@test "kube-request --watch: 410 Gone in reply to the watch re-lists" {
	mkpod a
	apiserver_fault '{"query":"watch=1","status":410,"count":1,"message":"too old resource version: 4 (5)"}'
	start_watch -v 2 GET $PODS
	wait_until 900 0.1 requested '"status":410'
	relabel a 1
	wait_until 900 0.1 printed 2
	stop_watch
	[ "$(events)" = "ADDED a 4
MODIFIED a 5" ]
	run -0 queries
	[ "$(grep -c '^limit=500$' <<<"$output")" -eq 2 ]
	grep -qE '"reflector re-listing" path="/api/v1/namespaces/default/pods" resourceVersion="4" reason="GET /api/v1/namespaces/default/pods\?watch=1&resourceVersion=4&[^"]*: 410 Gone: too old resource version: 4 \(5\)"' "$T/watch.err"
}

@test "kube-request --watch: --bookmarks prints them; they move the resourceVersion a resume uses" {
	SERVER_ARGS="--bookmark-interval 0.2"
	teardown
	setup
	mkpod a
	start_watch --bookmarks GET $PODS
	wait_until 900 0.1 printed 2
	run -0 sed -n 2p "$T/watch.out"
	[ "$output" = '{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"4","annotations":{"k8s.io/initial-events-end":"true"}}}}' ]
	# a change outside the watch's selection moves the server's resourceVersion
	kube-request POST /api/v1/nodes - >/dev/null <<<'{"apiVersion":"v1","kind":"Node","metadata":{"name":"vk-1"}}'
	wait_until 300 0.1 grep -qF '"metadata":{"resourceVersion":"5"}' "$T/watch.out"
	apiserver_drop_watches
	wait_until 900 0.1 requested "watch=1&resourceVersion=5&"
	stop_watch
	run -0 jq -r .type "$T/watch.out"
	[ "${lines[0]}" = ADDED ]
	[ "$(sed 1d <<<"$output" | sort -u)" = BOOKMARK ]
}

@test "kube-request --watch: bookmarks are not printed without --bookmarks" {
	SERVER_ARGS="--bookmark-interval 0.2"
	teardown
	setup
	mkpod a
	start_watch -v 4 GET $PODS
	two_bookmarks() { [ "$(grep -c '"reflector bookmark"' "$T/watch.err")" -ge 2 ]; }
	wait_until 300 0.1 two_bookmarks
	stop_watch
	[ "$(events)" = "ADDED a 4" ]
}

@test "kube-request --watch: --watch-timeout is the server's timeout; each end resumes" {
	mkpod a
	start_watch -v 2 --watch-timeout=1s GET $PODS
	wait_until 900 0.1 printed 1
	wait_until 900 0.1 requested "watch=1&resourceVersion=4&allowWatchBookmarks=true&timeoutSeconds=1"
	mkpod b
	wait_until 900 0.1 printed 2
	wait_until 900 0.1 requested "watch=1&resourceVersion=5&"
	three_watches() { [ "$(queries | grep -c '^watch=1')" -ge 3 ]; }
	wait_until 300 0.1 three_watches
	stop_watch
	[ "$(events)" = "ADDED a 4
ADDED b 5" ]
	run -0 queries
	[ "$(grep -c '^limit=500$' <<<"$output")" -eq 1 ]
	[ "$(grep -vc 'timeoutSeconds=1$' <<<"$output")" -eq 1 ]
	grep -q '"reflector resuming the watch" path="/api/v1/namespaces/default/pods" resourceVersion="5" events=[0-9]* reason="the server ended it"' "$T/watch.err"
}

# idles_out FAULT-FIELDS SECONDS: every watch meets a fault with these fields; the
# watch prints pod a's ADDED, then fails after --idle-timeout=SECONDS
idles_out() {
	mkpod a
	apiserver_fault "{\"query\":\"watch=1\",$1,\"count\":-1}"
	run -1 --separate-stderr kube-request --watch --idle-timeout="$2s" GET $PODS
	[ "$(jq -r .type <<<"$output")" = ADDED ]
	[ "$stderr" = "kube-request: watch of '$PODS': no event or bookmark for $2s (--idle-timeout)" ]
}

@test "kube-request --watch: a silent server fails after --idle-timeout" {
	idles_out '"hang":true' 1
}

@test "kube-request --watch: a server that trickles bytes but no event fails after --idle-timeout" {
	idles_out '"trickleMs":100' 2
}

@test "kube-request --watch: the first list waits out a server that keeps failing" {
	mkpod a
	# more 503s than one call's ten attempts: the watch's own backoff takes over
	apiserver_fault '{"query":"^limit=500$","status":503,"retryAfter":0,"count":12}'
	start_watch GET $PODS
	wait_until 900 0.1 printed 1
	stop_watch
	[ "$(events)" = "ADDED a 4" ]
	[ "$(grep -c '"reflector list failed" path="/api/v1/namespaces/default/pods" status=503' "$T/watch.err")" -eq 1 ]
	[ "$(apiserver_requests GET $PODS | grep -c '"query":"limit=500"')" -eq 13 ]
}

@test "kube-request --watch: a reader that went away ends it by SIGPIPE, quietly" {
	mkpod a
	# stdout is a pipe whose reading end is already closed
	run -0 --separate-stderr "${PYTHON:-python3}" -c '
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
print(subprocess.run(sys.argv[1:], stdout=w, timeout=60).returncode)' \
		kube-request --watch GET $PODS
	[ "$output" = -13 ]
	[ -z "$stderr" ]
}

@test "kube-request --watch: a collection that does not exist fails at once" {
	run -1 --separate-stderr kube-request --watch GET /api/v1/namespaces/default/widgets
	[ -z "$output" ]
	[[ "$stderr" == "kube-request: watch of '/api/v1/namespaces/default/widgets': "* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "kube-request --watch: bad options exit 2 with two lines and no output" {
	usage_errors kube-request <<'EOF'
--watch-only GET /api/v1/pods|--watch-only needs --watch
--bookmarks GET /api/v1/pods|--bookmarks needs --watch
--watch-timeout=1m GET /api/v1/pods|--watch-timeout needs --watch
--idle-timeout=1m GET /api/v1/pods|--idle-timeout needs --watch
--watch --watch-timeout=500ms GET /api/v1/pods|invalid value '500ms' for --watch-timeout: must be at least 1s
--watch --watch-timeout=soon GET /api/v1/pods|--watch-timeout: invalid duration 'soon': expected a number and a unit such as 500ms, 10s, 1m30s
--watch --idle-timeout=later GET /api/v1/pods|--idle-timeout: invalid duration 'later': expected a number and a unit such as 500ms, 10s, 1m30s
--chunk-size=5 GET /api/v1/pods|--chunk-size needs --watch
--chunk-size=0 GET /api/v1/pods|--chunk-size needs --watch
--watch --chunk-size=-1 GET /api/v1/pods|invalid value '-1' for --chunk-size: must be from 0 to 1000000
--watch --items GET /api/v1/pods|--items and --watch cannot be used together: a watch prints one event a line
--watch GET '/api/v1/pods?resourceVersion=5'|--watch sets 'resourceVersion' itself: remove it from <path>
--watch GET '/api/v1/pods?labelSelector=a&timeoutSeconds=1'|--watch sets 'timeoutSeconds' itself: remove it from <path>
--watch GET '/api/v1/pods?watch=true'|--watch sets 'watch' itself: remove it from <path>
--watch GET '/api/v1/pods?limit=5'|--watch sets 'limit' itself: remove it from <path>
--watch DELETE /api/v1/pods|--watch applies to GET only
--watch GET /api/v1/nodes/vk-1/status|'/api/v1/nodes/vk-1/status' is not a collection or an object: a subresource cannot be watched
--watch GET '/api/v1/nodes/vk-1?fieldSelector=spec.unschedulable%3Dtrue'|'/api/v1/nodes/vk-1' names one object: it takes no fieldSelector
GET '/api/v1/pods?labelSelector=a&watch=true'|a watch in <path> needs --watch (remove 'watch' from <path>)
--known=k.json GET /api/v1/pods|--known needs --watch
--watch --watch-only --known=k.json GET /api/v1/pods|--watch-only and --known cannot be used together: the first list is either left out or compared
--watch --known= GET /api/v1/pods|invalid value '' for --known: must not be empty
EOF
	run -0 apiserver_requests
	[ -z "$output" ]
}

# the watch's events up to the end of its initial ones (the bookmark that
# marks it), read as they come; then the watch is stopped
initial_events() {
	local line
	rm -f "$T/events"
	mkfifo "$T/events"
	kube-request --watch --bookmarks "$@" GET $PODS >"$T/events" 2>"$T/watch.err" 3>&- &
	WATCH_PID=$!
	exec 5<"$T/events"
	: >"$T/watch.out"
	while IFS= read -r -t 60 -u 5 line; do
		printf '%s\n' "$line" >>"$T/watch.out"
		[[ $line != *'"k8s.io/initial-events-end":"true"'* ]] || break
	done
	exec 5<&-
	stop_watch
}

@test "kube-request --watch --known: a restarted watcher hears what changed while it was away, deletes too" {
	mkpod a
	mkpod b
	mkpod c
	apiserver_curl $PODS -o "$T/known.json"
	# away: a deleted, b changed, c the same, d new
	delpod a
	relabel b 2
	mkpod d
	initial_events --known="$T/known.json"
	run -0 events
	assert_output - <<-EOF
	DELETED a 4
	MODIFIED b 8
	ADDED d 9
	BOOKMARK - 9
	EOF
	# the object of a DELETED is the one known, as it was
	run -0 jq -c 'select(.type == "DELETED") | .object | [.kind, .metadata.uid == "'"$(jq -r '.items[0].metadata.uid' "$T/known.json")"'"]' "$T/watch.out"
	assert_output '["Pod",true]'
	# known as single documents, YAML too; an empty file knows nothing
	jq -c '.items[] | {apiVersion: "v1", kind: "Pod"} + .' "$T/known.json" >"$T/known.ndjson"
	initial_events --known="$T/known.ndjson"
	run -0 events
	assert_line --index 0 'DELETED a 4'
	printf 'metadata:\n  name: gone\n  namespace: default\n  resourceVersion: "1"\n' >"$T/known.yaml"
	initial_events --known="$T/known.yaml"
	run -0 events
	assert_line --index 0 'DELETED gone 1'
	assert_line --index 1 'ADDED b 8'
	: >"$T/empty"
	initial_events --known="$T/empty"
	run -0 events
	assert_output - <<-EOF
	ADDED b 8
	ADDED c 6
	ADDED d 9
	BOOKMARK - 9
	EOF
}

@test "kube-request --watch --known: a known file that cannot be read is refused before any request" {
	printf '{"metadata":{"name":"a"}}\n{"metadata":{}}\n' >"$T/noname.json"
	run -2 --separate-stderr kube-request --watch --known="$T/noname.json" GET $PODS
	assert_equal "$stderr" "kube-request: $T/noname.json:2: a known object needs metadata.name"
	[ -z "$output" ]
	printf '{"metadata":{"name":"a"}}\n{"metadata":{"name":"a"}}\n' >"$T/twice.json"
	run -2 --separate-stderr kube-request --watch --known="$T/twice.json" GET $PODS
	assert_equal "$stderr" "kube-request: $T/twice.json:2: a is known twice"
	printf '{"metadata":\n' >"$T/cut.json"
	run -2 --separate-stderr kube-request --watch --known="$T/cut.json" GET $PODS
	assert_regex "$stderr" "^kube-request: $T/cut.json:2:1: "
	run -2 --separate-stderr kube-request --watch --known="$T/none.json" GET $PODS
	assert_equal "$stderr" "kube-request: cannot open '$T/none.json': No such file or directory"
	[ -z "$output" ]
	run -0 apiserver_requests
	[ -z "$output" ]
}
