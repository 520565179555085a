#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kube-wait against the local API server, where the tests play the
# controllers by writing status; kubectl wait and kubectl rollout status
# judge the same objects beside it
load helper

NS=/api/v1/namespaces/default
APPS=/apis/apps/v1/namespaces/default
JOBS=/apis/batch/v1/namespaces/default/jobs

setup() {
	T=$BATS_TEST_TMPDIR
	export HOME=$T/home
	mkdir -p "$HOME"
	unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	apiserver_start "$T/apiserver"
	export KUBECONFIG=$KUBECONFIG_FILE
	WAIT_PID=
}

teardown() {
	stop_jobs
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -e "$T/wait.err" ]; then
		cat "$T/wait.out" "$T/wait.err" >&2
	fi
	apiserver_stop
}

# writes go through curl: quick whatever the tools run under (valgrind)

# post PATH JSON: create an object
post() {
	apiserver_curl "$1" --fail -o /dev/null -X POST -H 'Content-Type: application/json' -d "$2"
}

# status PATH JSON: write an object's status, as its controller would
status() {
	apiserver_curl "$1/status" --fail -o /dev/null -X PATCH \
		-H 'Content-Type: application/merge-patch+json' -d "{\"status\":$2}"
}

mkpod() {
	post "$NS/pods" "{\"metadata\":{\"name\":\"$1\",\"labels\":{\"app\":\"${2:-web}\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]}}"
}

ready() {
	status "$NS/pods/$1" '{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}'
}

mkdeploy() {
	post "$APPS/deployments" "{\"metadata\":{\"name\":\"$1\"},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"$1\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"$1\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]}}}}"
}

mkjob() {
	post "$JOBS" "{\"metadata\":{\"name\":\"$1\"},\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1.36\"}]}}}}"
}

# event NAME KIND OBJECT REASON MESSAGE: an Event about an object
event() {
	post "$NS/events" "{\"metadata\":{\"name\":\"$1\"},\"involvedObject\":{\"kind\":\"$2\",\"name\":\"$3\",\"namespace\":\"default\"},\"type\":\"Warning\",\"reason\":\"$4\",\"message\":\"$5\",\"lastTimestamp\":\"2026-12-02T10:00:0${6:-0}Z\"}"
}

# kube-wait ARGS... in the background, output in $T/wait.out and wait.err;
# its --timeout is long: the writes it waits for take their time under
# valgrind (KT_VALGRIND=1), and the wait ends on them, not on the clock
start_wait() {
	kube-wait "$@" >"$T/wait.out" 2>"$T/wait.err" 3>&- &
	WAIT_PID=$!
}

# end_wait STATUS: the background kube-wait exits STATUS
end_wait() {
	local rc=0
	wait "$WAIT_PID" || rc=$?
	WAIT_PID=
	[ "$rc" = "$1" ] || { echo "kube-wait exit $rc, want $1" >&2; cat "$T/wait.err" >&2; return 1; }
}

# says STATUS OUT ERR CMD...: CMD exits STATUS with exactly OUT on stdout and
# ERR on stderr ('' for nothing)
says() {
	local want=$1 out=$2 err=$3
	shift 3
	run --separate-stderr "$@"
	[ "$status" = "$want" ] && [ "$output" = "$out" ] && [ "$stderr" = "$err" ] && return 0
	printf '%s\n  exit %s (want %s)\n  stdout: %s\n  want:   %s\n  stderr: %s\n  want:   %s\n' \
		"$*" "$status" "$want" "$output" "$out" "$stderr" "$err" >&2
	return 1
}

# a discovery request in the server's log
DISCOVERY='"path":"/(api|api/v1|apis|apis/[^/"]+|apis/[^/"]+/[^/"]+)",'

# the text mode's summary on stderr, one object and one --for
ONE='kube-wait: 1 of 1 object met the condition'
NONE='kube-wait: 0 of 1 object met the condition'

# watching PATH: kube-wait's watch of the collection PATH is open
watching() {
	grep -F "\"path\":\"$1\",\"query\":\"" "$APISERVER_DIR/requests.log" | grep -q 'watch=1&'

}

@test "kube-wait: a pod already Ready, as kubectl wait says it" {
	mkpod web
	ready web
	says 0 'pod/web condition met' "$ONE" kube-wait pod/web --for=condition=Ready
	says 0 'pod/web condition met' "$ONE" kube-wait po/web --for=condition=ready=true
	run -0 --separate-stderr apiserver_kubectl wait pod/web --for=condition=Ready --timeout=5s
	assert_output 'pod/web condition met'
}

@test "kube-wait: jsonpath with a value, a filter, a quoted key, and without a value" {
	mkpod web
	ready web
	says 0 'pod/web condition met' "$ONE" kube-wait pod/web --for=jsonpath='{.status.phase}'=Running
	says 0 'pod/web condition met' "$ONE" kube-wait pod/web \
		--for=jsonpath='{.status.conditions[?(@.type=="Ready")].status}'=True
	says 0 'pod/web condition met' "$ONE" kube-wait pod/web --for="jsonpath={.metadata.labels['app']}=web"
	says 0 'pod/web condition met' "$ONE" kube-wait pod/web --for=jsonpath=.status.conditions
	if [ "$(kubectl_minor)" -ge 23 ]; then
		run -0 --separate-stderr apiserver_kubectl wait pod/web \
			--for=jsonpath='{.status.phase}'=Running --timeout=5s
		assert_output 'pod/web condition met'
	fi
}

@test "kube-wait: an object created after the wait began is waited for, by one watch" {
	start_wait pod/a pod/b --for=condition=Ready --timeout=10m
	wait_until 100 0.1 watching "$NS/pods"
	# kubectl wait --for=create (1.31 on) waits for one not created too
	local kpid=
	if [ "$(kubectl_minor)" -ge 31 ]; then
		apiserver_kubectl wait pod/b --for=create --timeout=10m >"$T/kubectl.out" 2>&1 3>&- &
		kpid=$!
	fi
	mkpod a
	mkpod b
	ready a
	ready b
	end_wait 0
	run -0 sort "$T/wait.out"
	lines_are 'pod/a condition met' 'pod/b condition met'
	if [ -n "$kpid" ]; then
		wait "$kpid"
		run -0 cat "$T/kubectl.out"
		assert_output 'pod/b condition met'
	fi
	# one watch for both pods: the pods collection listed once
	run -0 grep -cF "\"path\":\"$NS/pods\",\"query\":\"limit=" "$APISERVER_DIR/requests.log"
	assert_output 1
}

@test "kube-wait: delete holds at once for an absent object, and when the object goes" {
	# nothing on stdout for an object that never was, as kubectl
	says 0 '' "$ONE" kube-wait pod/gone --for=delete
	# (kubectl before 1.21 reported the missing object as NotFound, exit 1)
	if [ "$(kubectl_minor)" -ge 21 ]; then
		run -0 --separate-stderr apiserver_kubectl wait pod/gone --for=delete --timeout=5s
		assert_output ''
	fi
	run -0 --separate-stderr kube-wait pod/gone --for=delete -o json
	jq_is '[.object, .result, .exists]' '["pod/gone","met",false]'
	mkpod web
	start_wait pod/web --for=delete --timeout=10m
	wait_until 100 0.1 watching "$NS/pods"
	apiserver_curl "$NS/pods/web" --fail -o /dev/null -X DELETE
	end_wait 0
	run -0 cat "$T/wait.out"
	assert_output 'pod/web condition met'
}

@test "kube-wait: a selector waits for every pod it finds" {
	mkpod w1
	mkpod w2
	mkpod other db
	start_wait pods -l app=web --for=condition=Ready --timeout=10m
	wait_until 100 0.1 watching "$NS/pods"
	ready w1
	ready w2
	end_wait 0
	run -0 sort "$T/wait.out"
	lines_are 'pod/w1 condition met' 'pod/w2 condition met'
}

@test "kube-wait: set-based and field selectors, as the server and kubectl wait read them" {
	mkpod w1
	mkpod w2 api
	mkpod x db
	ready w1
	ready w2
	run -0 --separate-stderr kube-wait pods -l 'app in (web, api),!canary' --for=condition=Ready
	run -0 sort <<<"$output"
	lines_are 'pod/w1 condition met' 'pod/w2 condition met'
	run -0 --separate-stderr apiserver_kubectl wait pods -l 'app in (web, api),!canary' \
		--for=condition=Ready --timeout=5s
	run -0 sort <<<"$output"
	lines_are 'pod/w1 condition met' 'pod/w2 condition met'
	says 0 'pod/w2 condition met' "$ONE" kube-wait pods --field-selector=metadata.name=w2 \
		--for=condition=Ready
	run -0 --separate-stderr apiserver_kubectl wait pods --field-selector=metadata.name=w2 \
		--for=condition=Ready --timeout=5s
	assert_output 'pod/w2 condition met'
}

@test "kube-wait: CrashLoopBackOff fails at once, naming the state and the last Event" {
	mkpod web
	event e1 Pod web Pulled 'pulled image' 1
	event e2 Pod web BackOff 'Back-off restarting failed container c' 2
	event e3 Pod other BackOff 'not this pod' 3
	start_wait pod/web --for=condition=Ready --timeout=10m
	wait_until 100 0.1 watching "$NS/pods"
	status "$NS/pods/web" '{"containerStatuses":[{"name":"c","ready":false,"restartCount":3,"state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 40s restarting failed container=c"}}}]}'
	end_wait 1
	run -0 cat "$T/wait.err"
	lines_are 'kube-wait: pod/web can never be met: container c is waiting in CrashLoopBackOff: back-off 40s restarting failed container=c; last event: Warning BackOff: Back-off restarting failed container c' \
		"$NONE"
	# the Event read by a field selector on the object, not the namespace's whole list
	run -0 apiserver_requests GET "$NS/events"
	[ "${#lines[@]}" = 1 ]
	[[ "$output" == *'"query":"fieldSelector=involvedObject.name%3Dweb%2CinvolvedObject.kind%3DPod%2CinvolvedObject.namespace%3Ddefault"'* ]]
	[ ! -s "$T/wait.out" ]
}

@test "kube-wait: each fail-fast state of a pod exits 1 with it" {
	local state
	for state in ImagePullBackOff ErrImagePull CreateContainerConfigError InvalidImageName; do
		apiserver_reset
		mkpod web
		status "$NS/pods/web" "{\"containerStatuses\":[{\"name\":\"c\",\"state\":{\"waiting\":{\"reason\":\"$state\"}}}]}"
		fails_with 1 "kube-wait: pod/web can never be met: container c is waiting in $state"$'\n'"$NONE" \
			kube-wait pod/web --for=condition=Ready
	done
	apiserver_reset
	mkpod web
	status "$NS/pods/web" '{"conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable","message":"0/3 nodes are available"}]}'
	fails_with 1 'kube-wait: pod/web can never be met: unschedulable: 0/3 nodes are available'$'\n'"$NONE" \
		kube-wait pod/web --for=condition=Ready
	# --no-fail-fast waits to the timeout
	run -3 --separate-stderr kube-wait pod/web --for=condition=Ready --no-fail-fast --timeout=1s
	# waiting for the pod to go is not failed fast
	run -3 --separate-stderr kube-wait pod/web --for=delete --timeout=1s
}

@test "kube-wait: a Job that fails: Complete fails fast, Complete or Failed is met" {
	mkjob migrate
	start_wait job/migrate --for=condition=Complete --for=condition=Failed --any --timeout=10m
	wait_until 100 0.1 watching "$JOBS"
	status "$JOBS/migrate" '{"failed":1,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit"}]}'
	end_wait 0
	run -0 cat "$T/wait.out"
	assert_output 'job.batch/migrate condition met'
	fails_with 1 'kube-wait: job.batch/migrate can never be met: failed: BackoffLimitExceeded: Job has reached the specified backoff limit'$'\n'"$NONE" \
		kube-wait jobs.batch/migrate --for=condition=Complete
	# kubectl waits for one condition: Failed is the one it can be given
	run -0 --separate-stderr apiserver_kubectl wait job/migrate --for=condition=Failed --timeout=5s
	assert_output 'job.batch/migrate condition met'
}

@test "kube-wait: a Deployment rollout holds as kubectl rollout status says, a progress deadline fails" {
	mkdeploy web
	start_wait deploy/web --for=rollout --timeout=10m
	wait_until 100 0.1 watching "$APPS/deployments"
	status "$APPS/deployments/web" '{"observedGeneration":1,"replicas":2,"updatedReplicas":1,"availableReplicas":1}'
	status "$APPS/deployments/web" '{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"availableReplicas":2}'
	end_wait 0
	run -0 cat "$T/wait.out"
	assert_output 'deployment.apps/web condition met'
	run -0 --separate-stderr apiserver_kubectl rollout status deployment/web --timeout=5s
	assert_output 'deployment "web" successfully rolled out'

	mkdeploy stuck
	status "$APPS/deployments/stuck" '{"observedGeneration":1,"replicas":2,"updatedReplicas":1,"availableReplicas":1,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"ReplicaSet \"stuck-1\" has timed out progressing."}]}'
	fails_with 1 'kube-wait: deployment.apps/stuck can never be met: deployment "stuck" exceeded its progress deadline'$'\n'"$NONE" \
		kube-wait deployment.apps/stuck --for=rollout
	fails_with 1 'kube-wait: deployment.apps/stuck can never be met: progress deadline exceeded: ReplicaSet "stuck-1" has timed out progressing.'$'\n'"$NONE" \
		kube-wait deployment.apps/stuck --for=condition=Available
	run -1 --separate-stderr apiserver_kubectl rollout status deployment/stuck --timeout=5s
	[[ "$stderr" == *'deployment "stuck" exceeded its progress deadline'* ]]
}

@test "kube-wait: a pod of a waited Deployment or Job stuck in a fail-fast state fails the wait" {
	mkdeploy web
	start_wait deploy/web --for=rollout --timeout=10m
	wait_until 100 0.1 watching "$APPS/deployments"
	wait_until 100 0.1 watching "$NS/pods"
	mkpod web-1 web
	mkpod db-1 db
	status "$NS/pods/db-1" '{"containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}'
	event e1 Pod web-1 BackOff 'Back-off restarting failed container c'
	status "$NS/pods/web-1" '{"containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 10s"}}}]}'
	end_wait 1
	run -0 cat "$T/wait.err"
	lines_are 'kube-wait: deployment.apps/web can never be met: pod/web-1: container c is waiting in CrashLoopBackOff: back-off 10s; last event: Warning BackOff: Back-off restarting failed container c' \
		"$NONE"

	post "$JOBS" '{"metadata":{"name":"migrate"},"spec":{"selector":{"matchLabels":{"job":"migrate"}},"manualSelector":true,"template":{"metadata":{"labels":{"job":"migrate"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"nope"}]}}}}'
	post "$NS/pods" '{"metadata":{"name":"migrate-x","labels":{"job":"migrate"}},"spec":{"containers":[{"name":"c","image":"nope"}]}}'
	status "$NS/pods/migrate-x" '{"containerStatuses":[{"name":"c","state":{"waiting":{"reason":"ErrImagePull"}}}]}'
	fails_with 1 'kube-wait: job.batch/migrate can never be met: pod/migrate-x: container c is waiting in ErrImagePull'$'\n''kube-wait: 0 of 1 object met the conditions' \
		kube-wait job/migrate --for=condition=Complete --for=condition=Failed --any
	# --no-fail-fast follows no pods
	run -3 --separate-stderr kube-wait job/migrate --for=condition=Complete --no-fail-fast --timeout=1s
}

@test "kube-wait: the pods of two Deployments and a Job are followed by one watch" {
	mkdeploy web
	mkdeploy api
	mkjob migrate
	start_wait deploy/web deploy/api job/migrate --for=condition=Available \
		--for=condition=Complete --any --timeout=10m
	wait_until 100 0.1 watching "$APPS/deployments"
	wait_until 100 0.1 watching "$NS/pods"
	# a crashing pod of the second Deployment fails the wait, naming it
	mkpod api-1 api
	status "$NS/pods/api-1" '{"containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}'
	end_wait 1
	run -0 cat "$T/wait.err"
	lines_are 'kube-wait: deployment.apps/api can never be met: pod/api-1: container c is waiting in CrashLoopBackOff' \
		'kube-wait: 0 of 3 objects met the conditions'
	# one watch of the namespace's pods for the three owners
	run -0 grep -cF "\"path\":\"$NS/pods\",\"query\":\"watch=1&" "$APISERVER_DIR/requests.log"
	assert_output 1
	# an owner whose pod is already crashing when it is first seen fails at once
	fails_with 1 'kube-wait: deployment.apps/api can never be met: pod/api-1: container c is waiting in CrashLoopBackOff'$'\n''kube-wait: 0 of 2 objects met the condition' \
		kube-wait deploy/web deploy/api --for=rollout
}

@test "kube-wait: StatefulSet and DaemonSet rollouts, as kubectl rollout status judges them" {
	post "$APPS/statefulsets" '{"metadata":{"name":"db"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}'
	post "$APPS/daemonsets" '{"metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}'
	status "$APPS/statefulsets/db" '{"observedGeneration":1,"replicas":2,"readyReplicas":1,"updatedReplicas":1}'
	status "$APPS/daemonsets/agent" '{"observedGeneration":1,"desiredNumberScheduled":3,"updatedNumberScheduled":3,"numberAvailable":2}'
	run -3 --separate-stderr kube-wait sts/db ds/agent --for=rollout --timeout=0
	[ "${stderr_lines[0]}" = 'kube-wait: timed out after 0s waiting for statefulset.apps/db: waiting for 1 pods to be ready' ]
	[ "${stderr_lines[1]}" = 'kube-wait: timed out after 0s waiting for daemonset.apps/agent: 2 of 3 updated pods are available' ]
	status "$APPS/statefulsets/db" '{"observedGeneration":1,"replicas":2,"readyReplicas":2,"updatedReplicas":2}'
	status "$APPS/daemonsets/agent" '{"observedGeneration":1,"desiredNumberScheduled":3,"updatedNumberScheduled":3,"numberAvailable":3}'
	run -0 --separate-stderr kube-wait statefulset/db daemonset.apps/agent --for=rollout
	# each as it is met: two watches, so in either order
	[ "$(sort <<<"$output")" = "$(printf '%s\n' 'daemonset.apps/agent condition met' 'statefulset.apps/db condition met')" ]
	run -0 --separate-stderr apiserver_kubectl rollout status statefulset/db --timeout=5s
	assert_output 'partitioned roll out complete: 2 new pods have been updated...'
	run -0 --separate-stderr apiserver_kubectl rollout status daemonset/agent --timeout=5s
	assert_output 'daemon set "agent" successfully rolled out'
}

@test "kube-wait: a timeout exits 3, -o json showing what was last seen" {
	mkpod web
	status "$NS/pods/web" '{"phase":"Pending","conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady"}]}'
	# on the clock
	run -3 --separate-stderr kube-wait pod/web --for=condition=Ready --timeout=1s -o json
	jq_is '[.object, .result]' '["pod/web","timeout"]'
	# judged once, on the first lists: what was seen is known
	run -3 --separate-stderr kube-wait pod/web pod/later --for=condition=Ready --timeout=0 -o json
	[ "${#lines[@]}" = 2 ]
	jq_is 'select(.name == "web") | [.object, .result, .reason, .exists, .status.phase,
		.status.conditions[0].reason]' \
		'["pod/web","timeout","condition Ready=False (ContainersNotReady)",true,"Pending","ContainersNotReady"]'
	jq_is 'select(.name == "later") | [.result, .reason, .exists, has("status")]' \
		'["timeout","not created yet",false,false]'
	lines_are --stderr \
		'kube-wait: timed out after 0s waiting for pod/web: condition Ready=False (ContainersNotReady)' \
		'kube-wait: timed out after 0s waiting for pod/later: not created yet'
}

@test "kube-wait: --timeout=0 judges once, as kubectl wait does" {
	mkpod web
	fails_with 3 'kube-wait: timed out after 0s waiting for pod/web: no condition Ready'$'\n'"$NONE" \
		kube-wait pod/web --for=condition=Ready --timeout=0
	says 0 'pod/web condition met' "$ONE" kube-wait pod/web --for=create --timeout=0
	run -1 --separate-stderr apiserver_kubectl wait pod/web --for=condition=Ready --timeout=0
}

@test "kube-wait: -o json on failure and on success" {
	mkpod web
	event e1 Pod web Failed "Failed to pull image 'nope'"
	status "$NS/pods/web" '{"containerStatuses":[{"name":"c","state":{"waiting":{"reason":"ImagePullBackOff"}}}]}'
	run -1 --separate-stderr kube-wait pod/web --for=condition=Ready -o json
	jq_is '[.result, .reason, .lastEvent]' \
		'["never","container c is waiting in ImagePullBackOff","Warning Failed: Failed to pull image '"'nope'"'"]'
	ready web
	run -0 --separate-stderr kube-wait pod/web --for=condition=Ready -o json
	jq_is '[.result, .reason]' '["met","condition Ready=True"]'
}

@test "kube-wait: -f waits for every object of a multi-document manifest" {
	printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n' >"$T/app.yaml"
	mkpod a
	ready a
	mkdeploy d
	start_wait -f "$T/app.yaml" --for=create --timeout=10m
	end_wait 0
	# each as it is met: the two kinds' watches list in either order
	run -0 sort "$T/wait.out"
	lines_are 'deployment.apps/d condition met' 'pod/a condition met'
}

@test "kube-wait: a core kind costs one discovery request, a manifest one per group version" {
	mkpod web
	says 0 'pod/web condition met' "$ONE" kube-wait pods/web --for=create
	run -0 grep -oE "$DISCOVERY" "$APISERVER_DIR/requests.log"
	assert_output '"path":"/api/v1",'
	# a manifest of three groups, core last: each of its kinds found
	apiserver_clear_requests
	mkdeploy d
	mkjob j
	printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: s\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n' >"$T/app.yaml"
	start_wait -f "$T/app.yaml" --for=create --timeout=10m
	wait_until 100 0.1 watching "$APPS/statefulsets"
	post "$APPS/statefulsets" '{"metadata":{"name":"s"},"spec":{"selector":{"matchLabels":{"app":"s"}},"template":{"metadata":{"labels":{"app":"s"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}'
	end_wait 0
	run -0 sort "$T/wait.out"
	lines_are 'deployment.apps/d condition met' 'job.batch/j condition met' 'pod/web condition met' \
		'statefulset.apps/s condition met'
	run -0 grep -oE "$DISCOVERY" "$APISERVER_DIR/requests.log"
	lines_are '"path":"/apis/apps/v1",' '"path":"/apis/batch/v1",' '"path":"/api/v1",'
	# a group version the server does not serve is an unknown kind
	printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n' >"$T/w.yaml"
	fails_with 2 "kube-wait: $T/w.yaml: unknown kind example.com/v1 Widget: the server's discovery has no such resource"$'\n'"Try 'kube-wait --help' for more information." \
		kube-wait -f "$T/w.yaml" --for=create
}

@test "kube-wait: --for=rollout of a manifest: a kind without a rollout is met once it exists" {
	mkpod web
	mkdeploy d
	status "$APPS/deployments/d" '{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"availableReplicas":2}'
	printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n' >"$T/app.yaml"
	run -0 --separate-stderr kube-wait -f "$T/app.yaml" --for=rollout -o json
	output=$(jq -sc 'map([.object, .result, .reason]) | sort' <<<"$output")
	assert_output '[["deployment.apps/d","met","deployment \"d\" successfully rolled out"],["pod/web","met","created (a Pod has no rollout)"]]'
	# kubectl rollout status refuses the Pod: no status viewer for its kind
	# (the Pod alone: kubectl 1.20 takes one object, not a manifest's several)
	printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n' >"$T/pod.yaml"
	run -1 --separate-stderr apiserver_kubectl rollout status -f "$T/pod.yaml" --timeout=5s
	[[ "$stderr" == *'no status viewer has been implemented for Pod'* ]]
	# not created yet: waited for
	run -3 --separate-stderr kube-wait pod/later --for=rollout --timeout=0 -o json
	jq_is '[.result, .reason]' '["timeout","not created yet"]'
}

@test "kube-wait: a watch the caller may not make exits 1 naming the verb and resource" {
	apiserver_fault '{"method":"GET","path":"^/api/v1/namespaces/ci/pods$","status":403,"count":-1,"message":"pods is forbidden: User \"ci\" cannot list resource \"pods\" in API group \"\" in the namespace \"ci\""}'
	run -1 --separate-stderr kube-wait pod/web -n ci --for=create
	[ -z "$output" ]
	[[ "$stderr" == 'kube-wait: cannot watch pods in namespace ci: '*'pods is forbidden: User "ci" cannot list resource "pods"'* ]]
}

@test "kube-wait: a dropped watch is resumed and nothing is lost" {
	mkpod web
	start_wait pod/web --for=condition=Ready --timeout=10m
	wait_until 100 0.1 watching "$NS/pods"
	apiserver_drop_watches >/dev/null
	ready web
	end_wait 0
	run -0 cat "$T/wait.out"
	assert_output 'pod/web condition met'
}

@test "kube-wait: a watch answered 410 Gone is re-listed, and the change is still seen" {
	mkpod web
	start_wait pod/web --for=condition=Ready --timeout=10m
	wait_until 100 0.1 watching "$NS/pods"
	# the resumed watch is told its resourceVersion is too old
	apiserver_fault '{"method":"GET","path":"^/api/v1/namespaces/default/pods$","query":"watch=1","status":410,"count":1,"message":"too old resource version"}'
	apiserver_drop_watches >/dev/null
	ready web
	end_wait 0
	run -0 cat "$T/wait.out"
	assert_output 'pod/web condition met'
	# the 410 was met, and a second list followed it
	run -0 grep -F '"status":410' "$APISERVER_DIR/requests.log"
	[[ "$output" == *'"query":"'*'watch=1'* ]]
	run -0 grep -cF "\"path\":\"$NS/pods\",\"query\":\"limit=" "$APISERVER_DIR/requests.log"
	assert_output 2
}

@test "kube-wait: a watch whose history is compacted away re-lists from the stream's 410" {
	mkpod web
	start_wait pod/web --for=condition=Ready --timeout=10m
	wait_until 100 0.1 watching "$NS/pods"
	# every watch refused while the pod changes and the history is forgotten:
	# the resume after that is from a resourceVersion the server no longer has
	apiserver_fault '{"method":"GET","path":"^/api/v1/namespaces/default/pods$","query":"watch=1","status":500,"count":-1,"message":"etcd is away"}'
	apiserver_drop_watches >/dev/null
	ready web
	apiserver_compact >/dev/null
	apiserver_clear_faults >/dev/null
	end_wait 0
	run -0 cat "$T/wait.out"
	assert_output 'pod/web condition met'
	# listed again: the resume from the old resourceVersion was told 410 in its stream
	run -0 grep -cF "\"path\":\"$NS/pods\",\"query\":\"limit=" "$APISERVER_DIR/requests.log"
	assert_output 2
}

@test "kube-wait: credentials the server refuses exit 1, not a timeout" {
	run -1 --separate-stderr kube-wait --token=0123456789abcdef pod/web -n ci --for=create
	[[ "$stderr" == 'kube-wait: '*'401'* ]]
}

@test "kube-wait: bad input: exit 2 with one line, before any request" {
	usage_errors kube-wait <<'EOF'
# no --for
pod/web|missing --for: say what to wait for
# an unknown form
pod/web --for=ready|--for 'ready': expected condition=TYPE[=STATUS], jsonpath=EXPR[=VALUE], create, delete or rollout
# a jsonpath that does not parse
pod/web --for=jsonpath='{.status'|--for 'jsonpath={.status': the jsonpath's '{' is not closed
pod/web --for=jsonpath='{..name}=x'|--for 'jsonpath={..name}=x': recursive descent '..' is not supported
# --any with one --for
pod/web --for=create --any|--any needs two --for or more
# a timeout that is not a duration
pod/web --for=create --timeout=soon|--timeout: invalid duration 'soon': expected a number and a unit such as 500ms, 10s, 1m30s
# nothing to wait for
--for=create|missing what to wait for: -f <file>, <kind>/<name> or <kind> -l <selector>
# a kind without a name
pod --for=create|'pod': expected <kind>/<name> (or <kind> with -l)
# an invalid name
pod/Web --for=create|'pod/Web': 'Web' is not an object name
# -l with a name
pod/web -l app=web --for=create|-l and --field-selector take one <kind> operand, not <kind>/<name>
# delete and another, all required
pod/web --for=delete --for=create|--for=delete and another --for can never both hold
# an unknown output
pod/web --for=create -o yaml|invalid value 'yaml' for --output: expected text or json
# a file and a selector
--for=create -f x.yaml -l app=web|--filename and --selector cannot be used together
# an empty selector
pod --for=create -l ''|invalid value '' for --selector: must not be empty
# label selectors the server would refuse
pods -l 'app in web' --for=create|--selector 'app in web': 'in' and 'notin' take '(' values ')'
pods -l 'app=web,' --for=create|--selector 'app=web,': a label key is missing at ''
pods -l 'app=web app' --for=create|--selector 'app=web app': expected ',' at 'app'
# a field selector without its value
pods --field-selector=status.phase --for=create|--field-selector 'status.phase': 'status.phase' needs =, == or != and a value
pods --field-selector='metadata.name=a=b' --for=create|--field-selector 'metadata.name=a=b': an unescaped '=' in a value
EOF
	run -0 cat "$APISERVER_DIR/requests.log"
	refute_output --partial GET
}

@test "kube-wait: an unknown kind, as the server's discovery says" {
	usage_errors kube-wait <<'EOF'
# not served
widget/w --for=create|unknown kind 'widget': the server's discovery has no such resource
# in another group
deployment.batch/w --for=create|unknown kind 'deployment.batch': the server's discovery has no such resource
EOF
}
