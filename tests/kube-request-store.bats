#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kube-request --watch --store against the local API server: each object in a file
load helper
load watch-pods

PODS=/api/v1/namespaces/default/pods
TIME_RE='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'

# one server per test
setup() {
	T=$BATS_TEST_TMPDIR
	S=$T/store
	export HOME=$T/home
	mkdir -p "$HOME"
	unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	apiserver_start "$T/apiserver" ${SERVER_ARGS:-}
	export KUBECONFIG=$KUBECONFIG_FILE
	WATCH_PID=
}

teardown() {
	exec 5<&- || true
	stop_jobs
	WATCH_PID=
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -e "$T/watch.out" ]; then
		cat "$T/watch.out" "$T/watch.err" "$APISERVER_DIR/requests.log" >&2
	fi
	apiserver_stop
}

# setstatus NAME FIELD VALUE: a status-only change
setstatus() {
	apiserver_curl "$PODS/$1/status" -X PATCH -H 'Content-Type: application/merge-patch+json' \
		-o /dev/null -d "{\"status\":{\"$2\":\"$3\"}}"
}

uid_of() {
	apiserver_curl "$PODS/$1" | jq -r .metadata.uid
}

# start_store ARGS...: kube-request --watch --store=$S ARGS... GET $PODS, its
# output read line by line through a fifo on fd 5 (next_line)
start_store() {
	rm -f "$T/lines"
	mkfifo "$T/lines"
	kube-request --watch --store="$S" "$@" GET $PODS >"$T/lines" 2>"$T/watch.err" 3>&- &
	WATCH_PID=$!
	exec 5<"$T/lines"
	: >"$T/watch.out"
}

# next_line: the next line the tool prints, in LINE (and appended to
# watch.out); the read is bounded, never polled
next_line() {
	IFS= read -r -t 60 -u 5 LINE || { echo "no line from kube-request" >&2; return 1; }
	printf '%s\n' "$LINE" >>"$T/watch.out"
}

# the lines up to SYNCED
until_synced() {
	LINE=
	while [ "$LINE" != SYNCED ]; do
		next_line
	done
}

# SIGTERM ends the watch cleanly; nothing was printed but what was read
stop_store() {
	kill -TERM "$WATCH_PID"
	WATCH_RC=0
	wait "$WATCH_PID" || WATCH_RC=$?
	WATCH_PID=
	[ "$WATCH_RC" -eq 0 ] || { cat "$T/watch.err" >&2; false; }
	run -0 cat <&5
	exec 5<&-
	[ -z "$output" ]
}

# the lines read, with the time checked and cut off
events() {
	local type rest
	while IFS= read -r line; do
		case $line in
		SYNCED | INVALID*) printf '%s\n' "$line" ;;
		*)
			[[ $line =~ ^([A-Z]+)$'\t'(.*)$'\t'($TIME_RE)$ ]] || { echo "bad line: $line" >&2; return 1; }
			printf '%s\t%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
			;;
		esac
	done <"$T/watch.out"
}

# stored UID: the object stored for UID, keys sorted
stored() {
	jq -S -c . "$S/$1/object.json"
}

@test "kube-request --watch --store: objects land in DIR/UID/object.json, a line for each after it" {
	mkpod a vk-1
	mkpod b
	start_store
	until_synced
	ua=$(uid_of a) ub=$(uid_of b)
	[ "$(events)" = "ADDED	$ua	default	a
ADDED	$ub	default	b
SYNCED" ]
	[ "$(stored "$ua")" = "$(apiserver_curl $PODS/a | jq -S -c .)" ]
	[ "$(stat -c %a "$S/$ua")" = 700 ]
	[ "$(stat -c %a "$S/$ua/object.json")" = 600 ]
	# another file in the object's directory is not the store's
	echo theirs >"$S/$ua/status.json"
	relabel a 1
	next_line
	[ "$LINE" != "${LINE#MODIFIED	$ua	default	a	}" ]
	[ "$(jq -r .metadata.labels.v "$S/$ua/object.json")" = 1 ]
	# a graceful delete (MODIFIED), then the final one: DELETED keeps the last object
	delpod a
	next_line
	[ "$LINE" != "${LINE#MODIFIED	$ua	}" ]
	delpod a 0
	next_line
	[ "$LINE" != "${LINE#DELETED	$ua	default	a	}" ]
	run -0 jq -r '.metadata | [.name, (.deletionTimestamp != null)] | @tsv' "$S/$ua/object.json"
	[ "$output" = "a	true" ]
	[ "$(cat "$S/$ua/status.json")" = theirs ]
	[ "$(ls -A "$S/$ua")" = "object.json
status.json" ]
	stop_store
	[ ! -s "$T/watch.err" ]
}

@test "kube-request --watch --store: a restart prints only what changed while it was down" {
	mkpod a
	mkpod b
	mkpod c
	start_store --store-file=pod.json
	until_synced
	stop_store
	ua=$(uid_of a) ub=$(uid_of b) uc=$(uid_of c)
	[ "$(ls "$S" | sort)" = "$(printf '%s\n' "$ua" "$ub" "$uc" | sort)" ]
	# away: a deleted, b changed, c the same, d new
	delpod a
	relabel b 2
	mkpod d
	ud=$(uid_of d)
	start_store --store-file=pod.json
	until_synced
	stop_store
	[ "$(events)" = "DELETED	$ua	default	a
MODIFIED	$ub	default	b
ADDED	$ud	default	d
SYNCED" ]
	[ "$(jq -r .metadata.labels.v "$S/$ub/pod.json")" = 2 ]
	[ "$(jq -S -c . "$S/$ud/pod.json")" = "$(apiserver_curl $PODS/d | jq -S -c .)" ]
	[ -e "$S/$ua/pod.json" ]
	[ ! -s "$T/watch.err" ]
}

@test "kube-request --watch --store: a file that does not parse is a warning; its object comes as ADDED" {
	mkpod a
	mkpod b
	start_store
	until_synced
	stop_store
	ua=$(uid_of a) ub=$(uid_of b)
	printf '{"metadata":' >"$S/$ua/object.json"
	mkdir "$S/x1"
	echo '{"metadata":{"name":"z","uid":"x2"}}' >"$S/x1/object.json"
	mkdir "$S/no-file"
	start_store
	until_synced
	stop_store
	[ "$(events)" = "ADDED	$ua	default	a
SYNCED" ]
	run -0 cat "$T/watch.err"
	assert_line --index 0 --regexp "^kube-request: warning: $S/$ua/object.json:1:13: .*: not known$"
	assert_line --index 1 "kube-request: warning: $S/x1/object.json: its metadata.uid is not its directory's name: not known"
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -r .metadata.name "$S/$ua/object.json")" = a ]
}

@test "kube-request --watch --store --spec-changes: a status-only change rewrites the file but prints nothing" {
	mkpod a
	start_store --spec-changes
	until_synced
	ua=$(uid_of a)
	setstatus a phase Running
	relabel a 1
	# the next line is the label's; the status came before it and is in the file
	next_line
	[ "$LINE" != "${LINE#MODIFIED	$ua	default	a	}" ]
	run -0 jq -r '[.status.phase, .metadata.labels.v] | @tsv' "$S/$ua/object.json"
	[ "$output" = "Running	1" ]
	stop_store
	[ "$(events | cut -f1)" = "ADDED
SYNCED
MODIFIED" ]
	# a restart compares with the stored object: the status changed, nothing else
	setstatus a message one
	start_store --spec-changes
	until_synced
	stop_store
	[ "$(events)" = SYNCED ]
	[ "$(jq -r .status.message "$S/$ua/object.json")" = one ]
	# without --spec-changes the same change is a MODIFIED
	setstatus a message two
	start_store
	until_synced
	stop_store
	[ "$(events | cut -f1)" = "MODIFIED
SYNCED" ]
}

@test "kube-request --watch --spec-changes: without --store, the events less status-only ones" {
	mkpod a
	rm -f "$T/lines"
	mkfifo "$T/lines"
	kube-request --watch --spec-changes --bookmarks GET $PODS >"$T/lines" 2>"$T/watch.err" 3>&- &
	WATCH_PID=$!
	exec 5<"$T/lines"
	: >"$T/watch.out"
	next_line
	[ "$(jq -r .type <<<"$LINE")" = ADDED ]
	next_line
	[ "$(jq -r .type <<<"$LINE")" = BOOKMARK ]
	setstatus a phase Running
	relabel a 1
	next_line
	[ "$(jq -r '[.type, .object.status.phase, .object.metadata.labels.v] | @tsv' <<<"$LINE")" = "MODIFIED	Running	1" ]
	stop_store
}

@test "kube-request --watch --store: SYNCED once, later bookmarks print nothing" {
	SERVER_ARGS="--bookmark-interval 0.2"
	teardown
	setup
	mkpod a
	# the logs on the same fifo: the bookmarks are seen arriving between the lines
	rm -f "$T/lines"
	mkfifo "$T/lines"
	kube-request -v 4 --watch --store="$S" GET $PODS >"$T/lines" 2>&1 3>&- &
	WATCH_PID=$!
	exec 5<"$T/lines"
	: >"$T/watch.out"
	: >"$T/watch.err"
	until_synced
	bookmarks=0
	while [ "$bookmarks" -lt 2 ]; do
		next_line
		[[ $LINE != *'"reflector bookmark"'* ]] || bookmarks=$((bookmarks + 1))
	done
	relabel a 1
	next_line
	while [[ $LINE == [IW][0-9]* ]]; do
		next_line
	done
	[ "$LINE" != "${LINE#MODIFIED	$(uid_of a)	default	a	}" ]
	kill -TERM "$WATCH_PID"
	wait "$WATCH_PID"
	WATCH_PID=
	cat <&5 >>"$T/watch.out"
	exec 5<&-
	[ "$(grep -v '^[IW][0-9]' "$T/watch.out" | cut -f1)" = "ADDED
SYNCED
MODIFIED" ]
}

@test "kube-request --watch --store: a store that cannot be written is refused before any request" {
	: >"$T/file"
	run -2 --separate-stderr kube-request --watch --store="$T/file" GET $PODS
	[ -z "$output" ]
	[ "$stderr" = "kube-request: store directory '$T/file' is not a directory" ]
	run -2 --separate-stderr kube-request --watch --store="$T/file/s" GET $PODS
	[ -z "$output" ]
	[ "$stderr" = "kube-request: cannot make store directory '$T/file/s': Not a directory" ]
	if [ "$(id -u)" -ne 0 ]; then
		mkdir -m 0500 "$T/ro"
		run -2 --separate-stderr kube-request --watch --store="$T/ro" GET $PODS
		[ "$stderr" = "kube-request: cannot write in store directory '$T/ro': Permission denied" ]
	fi
	run -0 apiserver_requests
	[ -z "$output" ]
	# a missing directory is made
	mkpod a
	start_store
	until_synced
	stop_store
	[ "$(stat -c %a "$S")" = 700 ]
}

@test "kube-request --watch --store: a write that fails ends it with exit 1" {
	mkpod a
	start_store
	until_synced
	rm -rf "$S"
	mkpod b
	WATCH_RC=0
	wait "$WATCH_PID" || WATCH_RC=$?
	WATCH_PID=
	[ "$WATCH_RC" -eq 1 ]
	run -0 cat <&5
	[ -z "$output" ]
	exec 5<&-
	[ "$(cat "$T/watch.err")" = "kube-request: cannot make directory '$S/$(uid_of b)': No such file or directory" ]
}

@test "kube-request --watch --store: bad options exit 2 with two lines and no output" {
	usage_errors kube-request <<'EOF'
--store=s GET /api/v1/pods|--store needs --watch
--spec-changes GET /api/v1/pods|--spec-changes needs --watch
--watch --store-file=p.json GET /api/v1/pods|--store-file needs --store
--watch --store=s --known=k.json GET /api/v1/pods|--store and --known cannot be used together: the store's objects are the ones known
--watch --store=s -o yaml GET /api/v1/pods|--store and -o yaml cannot be used together: it prints one line an event
--watch --store=s --pretty GET /api/v1/pods|--store and --pretty cannot be used together: it prints one line an event
--watch --store=s --watch-only GET /api/v1/pods|--store and --watch-only cannot be used together: the first list is compared with the store
--watch --store=s --bookmarks GET /api/v1/pods|--store and --bookmarks cannot be used together: it prints SYNCED for the first list's end
--watch --store=s --items GET /api/v1/pods|--items and --watch cannot be used together: a watch prints one event a line
--watch --store= GET /api/v1/pods|invalid value '' for --store: must not be empty
--watch --store=s --store-file=a/b GET /api/v1/pods|invalid value 'a/b' for --store-file: a file name, without '/'
--watch --store=s --store-file=.. GET /api/v1/pods|invalid value '..' for --store-file: a file name, not '.' or '..'
--watch --store=s --store-file= GET /api/v1/pods|invalid value '' for --store-file: must not be empty
--stream --store=s|the --watch options do not apply to --stream
EOF
	[ ! -e s ]
	run -0 apiserver_requests
	[ -z "$output" ]
}
