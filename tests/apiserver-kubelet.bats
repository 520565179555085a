#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The local API server as kube-apiserver towards kubelets: kubectl logs and
# get --raw .../proxy forwarded with its own client certificate, kubectl top
# from the kubelets' /metrics/resource, TokenReview and SubjectAccessReview
# over its role table.  The kubelet is tests/fixtures/kubelet.py.

load helper

KUBELET_PY="$BATS_TEST_DIRNAME/fixtures/kubelet.py"
RESOLUTION=0.2

setup() {
	local resolution=$RESOLUTION
	if [[ "$BATS_TEST_DESCRIPTION" == *"before two scrapes"* ]]; then
		resolution=3600
	fi
	apiserver_start "" --metric-resolution "$resolution"
	kubelet_start kubelet
	node n1 "$KUBELET_PORT"
	pod p1 n1 c1
}

teardown() {
	stop_jobs
	apiserver_stop
}

k() {
	apiserver_kubectl "$@"
}

# k_exec ARGS...: kubectl itself in place of the shell, so that $! of
# "k_exec ... &" is kubectl's
k_exec() {
	exec "${KT_KUBECTL:-kubectl}" --kubeconfig "$KUBECONFIG_FILE" \
		--cache-dir "$APISERVER_DIR/kube-cache" "$@"
}

# kubelet_start NAME [ARGS...]: the stand-in kubelet in $BATS_TEST_TMPDIR/NAME,
# serving with the API server's certificate, trusting its CA; its port in
# KUBELET_PORT and KUBELET_DIR
kubelet_start() {
	local d=$BATS_TEST_TMPDIR/$1
	shift
	mkdir -p "$d"
	"${PYTHON:-python3}" "$KUBELET_PY" "$d" "$APISERVER_DIR/server.crt" \
		"$APISERVER_DIR/server.key" "$APISERVER_DIR/ca.crt" --pod default/p1/c1 "$@" \
		</dev/null >"$d/stdout" 2>"$d/stderr" 3>&- &
	wait_until 200 0.05 test -s "$d/port"
	KUBELET_PORT=$(cat "$d/port")
	KUBELET_DIR=$d
}

# kubelet PATH [CURL ARGS...]: call the stand-in kubelet as the API server
kubelet() {
	local path=$1
	shift
	curl -sS --fail -k --cert "$APISERVER_DIR/kubelet-client.crt" \
		--key "$APISERVER_DIR/kubelet-client.key" "$@" "https://127.0.0.1:$KUBELET_PORT$path"
}

# node NAME [PORT [ADDRESSES]]: a node whose kubelet is on 127.0.0.1:PORT
node() {
	local addresses=${3-'[{"type":"Hostname","address":"'$1'"},{"type":"InternalIP","address":"127.0.0.1"}]'}
	apiserver_curl /api/v1/nodes --fail -o /dev/null -H 'Content-Type: application/json' \
		-d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"'"$1"'","labels":{"kind":"test"}}}'
	apiserver_curl "/api/v1/nodes/$1/status" --fail -o /dev/null -X PATCH \
		-H 'Content-Type: application/merge-patch+json' -d '{"status":{
		"addresses":'"$addresses"',
		"daemonEndpoints":{"kubeletEndpoint":{"Port":'"${2:-0}"'}},
		"capacity":{"cpu":"2","memory":"2Gi"},"allocatable":{"cpu":"2","memory":"2Gi"}}}'
}

# pod NAME NODE CONTAINER...: a pod in default bound to NODE ("" for none)
pod() {
	local name=$1 node=$2 containers="" c
	shift 2
	for c in "$@"; do
		containers+="${containers:+,}{\"name\":\"$c\",\"image\":\"busybox\"}"
	done
	apiserver_curl /api/v1/namespaces/default/pods --fail -o /dev/null \
		-H 'Content-Type: application/json' -d '{"apiVersion":"v1","kind":"Pod",
		"metadata":{"name":"'"$name"'","labels":{"app":"'"$name"'"}},
		"spec":{"nodeName":"'"$node"'","containers":['"$containers"']}}'
}

# the kubelet saw this request line (METHOD TARGET USER)
kubelet_saw() {
	grep -qxF "$1" "$KUBELET_DIR/requests"
}

followers_are() {
	[ "$(kubelet /_followers)" = "$1" ]
}

file_has() {
	grep -qxF "$2" "$1"
}

@test "apiserver-kubelet: kubectl logs reads the container's log from its node's kubelet, as the API server" {
	run -0 k logs p1
	assert_output "$(printf 'default/p1/c1 line %d\n' 1 2 3 4 5)"
	kubelet_saw "GET /containerLogs/default/p1/c1 kube-apiserver-kubelet-client"
	run -0 apiserver_requests GET /api/v1/namespaces/default/pods/p1/log
	[ -n "$output" ]
}

@test "apiserver-kubelet: kubectl logs passes --tail, --timestamps, --since, --limit-bytes, -p and -c to the kubelet" {
	run -0 k logs p1 --tail=2 --timestamps
	[ "${#lines[@]}" = 2 ]
	[[ "${lines[0]}" =~ ^[0-9-]{10}T[0-9:]{8}\.[0-9]{9}Z\ default/p1/c1\ line\ 4$ ]]
	[[ "${lines[1]}" =~ ^[0-9-]{10}T[0-9:]{8}\.[0-9]{9}Z\ default/p1/c1\ line\ 5$ ]]
	kubelet_saw "GET /containerLogs/default/p1/c1?tailLines=2&timestamps=true kube-apiserver-kubelet-client"
	# the lines were 3600, 1800, 600, 120 and 30 s old at the kubelet's start
	run -0 k logs p1 --since=45m
	assert_output "$(printf 'default/p1/c1 line %d\n' 2 3 4 5)"
	kubelet_saw "GET /containerLogs/default/p1/c1?sinceSeconds=2700 kube-apiserver-kubelet-client"
	run -0 k logs p1 --since-time=2000-01-01T00:00:00Z --limit-bytes=10
	assert_output "default/p1"
	kubelet_saw "GET /containerLogs/default/p1/c1?limitBytes=10&sinceTime=2000-01-01T00%3A00%3A00Z kube-apiserver-kubelet-client"
	run -0 k logs p1 -p
	assert_output "default/p1/c1 previous line 1"
	kubelet_saw "GET /containerLogs/default/p1/c1?previous=true kube-apiserver-kubelet-client"
	pod p2 n1 a b
	run -0 k logs p2 -c b --tail=1
	assert_output "default/p2/b line 5"
}

@test "apiserver-kubelet: kubectl logs -f streams each line as the kubelet writes it, until the kubelet ends it" {
	k logs -f p1 >"$BATS_TEST_TMPDIR/follow" 2>&1 &
	local pid=$!
	wait_until 200 0.05 followers_are 1
	wait_until 200 0.05 file_has "$BATS_TEST_TMPDIR/follow" "default/p1/c1 line 5"
	kubelet /_append/default/p1/c1 -d "one more line"
	wait_until 200 0.05 file_has "$BATS_TEST_TMPDIR/follow" "one more line"
	kubelet /_end/default/p1/c1 -X POST
	wait "$pid" || fail "kubectl logs -f: $(cat "$BATS_TEST_TMPDIR/follow")"
	run -0 cat "$BATS_TEST_TMPDIR/follow"
	assert_output "$(printf 'default/p1/c1 line %d\n' 1 2 3 4 5; echo "one more line")"
}

@test "apiserver-kubelet: a follow ends at the kubelet when kubectl goes away" {
	k_exec logs -f p1 >"$BATS_TEST_TMPDIR/follow" 2>&1 &
	local pid=$!
	wait_until 200 0.05 followers_are 1
	kill "$pid"
	wait "$pid" || true
	wait_until 200 0.05 followers_are 0
}

@test "apiserver-kubelet: log errors read as kube-apiserver's" {
	pod p2 n1 a gone
	run -1 k get --raw /api/v1/namespaces/default/pods/p2/log
	assert_output "Error from server (BadRequest): a container name must be specified for pod p2, choose one of: [a gone]"
	run -1 k get --raw '/api/v1/namespaces/default/pods/p2/log?container=c9'
	assert_output "Error from server (BadRequest): container c9 is not valid for pod p2"
	run -1 k get --raw /api/v1/namespaces/default/pods/nope/log
	assert_output 'Error from server (NotFound): pods "nope" not found'
	# the kubelet's 404, through the response checker
	run -1 k logs p2 -c gone
	assert_output "Error from server (NotFound): the server could not find the requested resource ( pods/log p2)"
	run -1 k get --raw '/api/v1/namespaces/default/pods/p1/log?tailLines=-1'
	assert_output --partial 'PodLogOptions "p1" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0'
	# not scheduled: an empty log
	pod p3 "" c1
	run -0 k logs p3
	assert_output ""
	# a node with no address, and one whose kubelet refuses the connection
	node n2 "$KUBELET_PORT" '[]'
	pod p4 n2 c1
	run -1 k logs p4
	assert_output "Error from server: no preferred addresses found; known addresses: []"
	node n3 1
	pod p5 n3 c1
	run -1 k logs p5
	assert_output 'Error from server: Get "https://127.0.0.1:1/containerLogs/default/p5/c1": dial tcp 127.0.0.1:1: connect: connection refused'
	run -1 k get --raw /api/v1/nodes/n3/proxy/healthz
	assert_output 'Error from server: dial tcp 127.0.0.1:1: connect: connection refused'
	run -1 k get --raw /api/v1/nodes/n9/proxy/healthz
	assert_output 'Error from server (NotFound): nodes "n9" not found'
}

@test "apiserver-kubelet: a node that publishes no kubelet port is reached at --kubelet-port" {
	# a second server of the same CA, whose default port is the kubelet's
	apiserver_start "$BATS_TEST_TMPDIR/second" --kubelet-port "$KUBELET_PORT"
	node n5 0
	pod p5 n5 c1
	run -0 k logs p5 --tail=1
	assert_output "default/p5/c1 line 5"
}

@test "apiserver-kubelet: a kubelet that refuses the API server's certificate is a 403 kubectl shows" {
	kubelet_start other --user someone-else
	node n4 "$KUBELET_PORT"
	pod p4 n4 c1
	run -1 k logs p4
	assert_output "Error from server (Forbidden): Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[proxy])
 ( pods/log p4)"
}

@test "apiserver-kubelet: kubectl get --raw reaches the kubelet through nodes/NAME/proxy, any method" {
	run -0 k get --raw /api/v1/nodes/n1/proxy/healthz
	assert_output ok
	kubelet_saw "GET /healthz kube-apiserver-kubelet-client"
	run -0 k get --raw '/api/v1/nodes/n1/proxy/containerLogs/default/p1/c1?tailLines=1'
	assert_output "default/p1/c1 line 5"
	run -0 apiserver_curl /api/v1/nodes/n1/proxy/_append/default/p1/c1 --fail -d posted
	kubelet_saw "POST /_append/default/p1/c1 kube-apiserver-kubelet-client"
	# the kubelet's own 404 passes through as it is
	run -0 apiserver_curl /api/v1/nodes/n1/proxy/nothing -w ' %{http_code}'
	assert_output "404 page not found
 404"
}

@test "apiserver-kubelet: kubectl exec, attach and port-forward reach the kubelet's session paths; its refusal comes back as it is" {
	# the stand-in kubelet serves no session: its 404, passed back as it is,
	# is what kubectl reports, after the request went to the container's path
	# with the kubelet's query made of kubectl's
	run -1 --separate-stderr k exec p1 -- true
	[ "$stderr" = "error: unable to upgrade connection: 404 page not found" ]
	kubelet_saw "POST /exec/default/p1/c1?command=true&error=1&output=1 kube-apiserver-kubelet-client"
	run -0 apiserver_requests POST /api/v1/namespaces/default/pods/p1/exec
	jq -e -s 'map(.status) == [404]' <<<"$output"
	run -1 --separate-stderr k attach p1
	[[ "$stderr" == *"error: unable to upgrade connection: 404 page not found" ]]
	kubelet_saw "POST /attach/default/p1/c1?error=1&output=1 kube-apiserver-kubelet-client"
	# port-forward asks for a running pod first; the session has no container
	apiserver_curl /api/v1/namespaces/default/pods/p1/status --fail -o /dev/null -X PATCH \
		-H 'Content-Type: application/merge-patch+json' -d '{"status":{"phase":"Running"}}'
	run -1 --separate-stderr k port-forward pod/p1 0:80
	[[ "$stderr" == *"404 page not found"* ]]
	kubelet_saw "POST /portForward/default/p1 kube-apiserver-kubelet-client"
}

@test "apiserver-kubelet: a session needs create on its subresource, for the WebSocket's GET too" {
	run -1 --separate-stderr kubectl_as reader exec p1 -- true
	[[ "$stderr" == *'pods "p1" is forbidden: User "reader" cannot create resource "pods/exec" in API group "" in the namespace "default"'* ]]
	run -22 curl -sS --cacert "$APISERVER_DIR/ca.crt" --fail-with-body \
		-H "Authorization: Bearer $(cat "$APISERVER_DIR/reader-token")" \
		"$APISERVER_URL/api/v1/namespaces/default/pods/p1/exec?command=true"
	[[ "$output" == *'cannot create resource \"pods/exec\"'* ]]
	! grep -q /exec "$KUBELET_DIR/requests"
}

@test "apiserver-kubelet: a token without nodes/proxy gets 403 from kubectl; the viewer's passes" {
	run -1 kubectl_as reader get --raw /api/v1/nodes/n1/proxy/healthz
	assert_output 'Error from server (Forbidden): nodes "n1" is forbidden: User "reader" cannot get resource "nodes/proxy" in API group "" at the cluster scope'
	run -0 kubectl_as viewer get --raw /api/v1/nodes/n1/proxy/healthz
	assert_output ok
	# reading logs is pods/log, which the reader has
	run -0 kubectl_as reader logs p1 --tail=1
	assert_output "default/p1/c1 line 5"
}

kubectl_as() {
	local who=$1
	shift
	"${KT_KUBECTL:-kubectl}" --kubeconfig "$APISERVER_DIR/kubeconfig-$who" \
		--cache-dir "$APISERVER_DIR/kube-cache-$who" "$@"
}

# the CPU and memory columns of kubectl top's line for NAME
top_row() {
	local what=$1 name=$2
	shift 2
	k top "$what" "$@" | awk -v n="$name" '$1 == n { print $2, ($3 ~ /%$/ ? $4 : $3) }'
}

top_shows() {
	[ "$(top_row "$@")" = "$TOP_WANT" ]
}

@test "apiserver-kubelet: kubectl top node and top pod read the rate between the last two scrapes" {
	TOP_WANT="500m 512Mi"
	wait_until 200 0.05 top_shows node n1
	run -0 k top node
	[[ "${lines[1]}" =~ ^n1\ +500m\ +25%\ +512Mi\ +25% ]]
	TOP_WANT="100m 64Mi"
	wait_until 200 0.05 top_shows pod p1
	run -0 k top pod p1 --containers
	[[ "${lines[1]}" =~ ^p1\ +c1\ +100m\ +64Mi ]]
	run -0 apiserver_curl /apis/metrics.k8s.io/v1beta1/namespaces/default/pods/p1
	run -0 jq -c '[.kind, .apiVersion, .metadata.name, .metadata.labels.app, .containers]' <<<"$output"
	assert_output '["PodMetrics","metrics.k8s.io/v1beta1","p1","p1",[{"name":"c1","usage":{"cpu":"100m","memory":"64Mi"}}]]'
	run -0 apiserver_curl /apis/metrics.k8s.io/v1beta1/nodes?labelSelector=kind%3Dtest
	run -0 jq -r '.kind, .items[0].metadata.name, (.items[0].window | test("^[0-9.]+m?s$"))' <<<"$output"
	assert_output "NodeMetricsList
n1
true"
	kubelet_saw "GET /metrics/resource kube-apiserver-kubelet-client"
}

@test "apiserver-kubelet: a node or pod before two scrapes has no metrics" {
	run -0 apiserver_curl /apis/metrics.k8s.io/v1beta1/nodes
	run -0 jq -c '.items' <<<"$output"
	assert_output '[]'
	run -1 k get --raw /apis/metrics.k8s.io/v1beta1/nodes/n1
	assert_output 'Error from server (NotFound): nodemetrics.metrics.k8s.io "n1" not found'
	run -1 k get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/pods/p1
	assert_output 'Error from server (NotFound): podmetrics.metrics.k8s.io "default/p1" not found'
	run -0 apiserver_curl /apis/metrics.k8s.io/v1beta1
	run -0 jq -r '[.resources[] | "\(.name):\(.kind):\(.verbs | join(","))"] | join(" ")' <<<"$output"
	assert_output "nodes:NodeMetrics:get,list pods:PodMetrics:get,list"
}

# review KIND SPEC: create a review with kubectl, print its status
review() {
	local group=authentication.k8s.io
	[ "$1" = TokenReview ] || group=authorization.k8s.io
	set -o pipefail
	printf '{"apiVersion":"%s/v1","kind":"%s","spec":%s}' "$group" "$1" "$2" |
		k create -f - -o json | jq -c .status
}

@test "apiserver-kubelet: TokenReview says whose token it is, through kubectl create" {
	run -0 review TokenReview '{"token":"'"$(cat "$APISERVER_DIR/reader-token")"'"}'
	assert_output '{"audiences":["https://kubernetes.default.svc.cluster.local"],"authenticated":true,"user":{"groups":["system:authenticated"],"username":"reader"}}'
	run -0 review TokenReview '{"token":"'"$APISERVER_TOKEN"'"}'
	assert_output '{"audiences":["https://kubernetes.default.svc.cluster.local"],"authenticated":true,"user":{"groups":["system:masters","system:authenticated"],"username":"admin"}}'
	run -0 review TokenReview '{"token":"0123456789abcdef"}'
	assert_output '{"user":{}}'
	run -0 review TokenReview '{"token":"'"$APISERVER_TOKEN"'","audiences":["elsewhere"]}'
	assert_output '{"user":{}}'
	# only admins may ask
	run -1 kubectl_as viewer create -f - <<<'{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}'
	assert_output --partial 'User "viewer" cannot create resource "tokenreviews" in API group "authentication.k8s.io" at the cluster scope'
}

@test "apiserver-kubelet: SubjectAccessReview answers from the role table, through kubectl create" {
	local proxy='"resourceAttributes":{"verb":"get","resource":"nodes","subresource":"proxy","name":"n1"}'
	run -0 review SubjectAccessReview '{"user":"reader","groups":["system:authenticated"],'"$proxy"'}'
	assert_output '{"allowed":false}'
	run -0 review SubjectAccessReview '{"user":"reader",'"${proxy/proxy/metrics}"'}'
	assert_output '{"allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding \"reader\" of ClusterRole \"kt:reader\" to User \"reader\""}'
	run -0 review SubjectAccessReview '{"user":"viewer",'"$proxy"'}'
	assert_output '{"allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding \"viewer\" of ClusterRole \"kt:viewer\" to User \"viewer\""}'
	run -0 review SubjectAccessReview '{"user":"viewer",'"${proxy/get/create}"'}'
	assert_output '{"allowed":false}'
	run -0 review SubjectAccessReview '{"user":"kube-apiserver-kubelet-client","groups":["system:masters"],'"${proxy/get/create}"'}'
	assert_output '{"allowed":true}'
	run -0 review SubjectAccessReview '{"user":"reader","nonResourceAttributes":{"verb":"get","path":"/healthz"}}'
	assert_output --partial '"allowed":true'
	run -0 review SubjectAccessReview '{"user":"someone",'"$proxy"'}'
	assert_output '{"allowed":false}'
	run -1 review SubjectAccessReview '{'"$proxy"'}'
	run -1 k create -f - <<<'{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"x"}}'
	assert_output --partial 'exactly one of nonResourceAttributes or resourceAttributes must be specified'
}
