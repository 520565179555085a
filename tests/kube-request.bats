#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# kube-request against the local API server
load helper

# a server of its own for each test, so that tests can run in parallel
# (bats --jobs) and none sees another's objects, faults or request log
setup() {
	apiserver_start
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME"
	unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
	export KUBECONFIG=$KUBECONFIG_FILE
	D=$APISERVER_DIR
	T=$BATS_TEST_TMPDIR
}

teardown() {
	stop_jobs
	apiserver_stop
}

# a fault rule, through the admin endpoint
fault() {
	apiserver_curl /_faults -X POST -H 'Content-Type: application/json' -d "$1" -o /dev/null
}

# write_kubeconfig FILE CLUSTER-LINES USER-LINES: one context "t" (current)
write_kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
current-context: t
clusters:
- name: c
  cluster:
$2
users:
- name: u
  user:
$3
contexts:
- name: t
  context: {cluster: c, user: u}
EOF
}

cluster_lines() {
	printf '    server: %s\n    certificate-authority: %s\n' "$APISERVER_URL" "$D/ca.crt"
}

make_node() {
	apiserver_curl /api/v1/nodes -X POST -H 'Content-Type: application/json' \
		-d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$1\"}}" >/dev/null
}

server_json() {
	apiserver_curl "$1" | jq -c .
}

# node_labels_are NAME JSON: the server has these labels on node NAME
node_labels_are() {
	local got
	got=$(server_json "/api/v1/nodes/$1" | jq -c .metadata.labels)
	[ "$got" = "$2" ] || { echo "node $1 has labels $got, want $2" >&2; return 1; }
}

# ------------------------------------------------------------------ verbs

@test "kube-request: GET prints the object as the server has it" {
	make_node vk-1
	run -0 --separate-stderr kube-request GET /api/v1/nodes/vk-1
	[ "$output" = "$(server_json /api/v1/nodes/vk-1)" ]
	[ -z "$stderr" ]
	run -0 apiserver_requests GET /api/v1/nodes/vk-1
	[[ "$output" == *'"user":"admin","auth":"token"'*'"status":200'* ]]
}

@test "kube-request: POST sends a YAML body as JSON and prints the created object" {
	run_ok kube-request POST /api/v1/nodes "$FIX/node.yaml"
	[ "$output" = "$(server_json /api/v1/nodes/vk-1)" ]
	[ "$(jq -r .metadata.labels.type <<<"$output")" = virtual-kubelet ]
	run -0 apiserver_requests POST /api/v1/nodes
	[[ "$output" == *'"contentType":"application/json"'* ]]
	[[ "$output" == *'"body":{"apiVersion":"v1","kind":"Node","metadata":{"name":"vk-1","labels":{"type":"virtual-kubelet"}}}'* ]]
}

@test "kube-request: PUT from standard input replaces the object" {
	make_node vk-1
	server_json /api/v1/nodes/vk-1 | jq -c '.metadata.labels = {"a": "b"}' >"$T/put.json"
	run_ok kube-request PUT /api/v1/nodes/vk-1 - <"$T/put.json"
	node_labels_are vk-1 '{"a":"b"}'
	[ "$output" = "$(server_json /api/v1/nodes/vk-1)" ]
	run -0 apiserver_requests PUT /api/v1/nodes/vk-1
	[[ "$output" == *'"contentType":"application/json"'*'"status":200'* ]]
}

@test "kube-request: PATCH is a strategic merge patch by default" {
	make_node vk-1
	echo '{"metadata":{"labels":{"x":"1"}}}' >"$T/p.json"
	run_ok kube-request PATCH /api/v1/nodes/vk-1 "$T/p.json"
	jq_is .metadata.labels '{"x":"1"}'
	node_labels_are vk-1 '{"x":"1"}'
	run -0 apiserver_requests PATCH /api/v1/nodes/vk-1
	[[ "$output" == *'"contentType":"application/strategic-merge-patch+json"'* ]]
	[[ "$output" == *'"body":{"metadata":{"labels":{"x":"1"}}}'* ]]
}

@test "kube-request: PATCH --type merge and --type json" {
	make_node vk-1
	run -0 --separate-stderr kube-request --type=merge PATCH /api/v1/nodes/vk-1 - \
		<<<'{"metadata":{"labels":{"m":"1"}}}'
	run_ok kube-request --type json PATCH /api/v1/nodes/vk-1 - \
		<<<'[{"op":"add","path":"/metadata/labels/j","value":"2"}]'
	node_labels_are vk-1 '{"m":"1","j":"2"}'
	run -0 apiserver_requests PATCH /api/v1/nodes/vk-1
	[[ "${lines[0]}" == *'"contentType":"application/merge-patch+json"'* ]]
	[[ "${lines[1]}" == *'"contentType":"application/json-patch+json"'* ]]
}

@test "kube-request: --content-type overrides the patch type" {
	make_node vk-1
	run -0 --separate-stderr kube-request --content-type=application/merge-patch+json \
		PATCH /api/v1/nodes/vk-1 - <<<'{"metadata":{"labels":{"c":"3"}}}'
	run -0 apiserver_requests PATCH /api/v1/nodes/vk-1
	[[ "$output" == *'"contentType":"application/merge-patch+json"'* ]]
}

@test "kube-request: DELETE, then GET of the deleted node fails with the Status message" {
	make_node vk-1
	run_ok kube-request delete /api/v1/nodes/vk-1
	[ "$(jq -r .metadata.name <<<"$output")" = vk-1 ]
	fails_with 1 'kube-request: GET /api/v1/nodes/vk-1: 404 Not Found: nodes "vk-1" not found' kube-request GET /api/v1/nodes/vk-1
}

@test "kube-request: DELETE sends DeleteOptions when given a body" {
	make_node vk-1
	run_ok kube-request DELETE /api/v1/nodes/vk-1 - <<<'{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}'
	run -0 apiserver_requests DELETE /api/v1/nodes/vk-1
	[[ "$output" == *'"contentType":"application/json"'*'"body":{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}'* ]]
	[ "$(apiserver_curl /api/v1/nodes/vk-1 -o /dev/null -w '%{http_code}')" = 404 ]
}

@test "kube-request: --pretty indents the reply" {
	run -0 --separate-stderr kube-request --pretty GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default | jq .)" ]
}

@test "kube-request: --items prints a list's items with apiVersion and kind" {
	make_node vk-1
	make_node vk-2
	run_ok kube-request --items GET /api/v1/nodes
	[ "${#lines[@]}" -eq 2 ]
	[ "$output" = "$(server_json /api/v1/nodes | jq -c '.items[] | {apiVersion: "v1", kind: "Node"} + .')" ]
	run -0 --separate-stderr kube-request -i GET /api/v1/nodes/vk-1
	[ "$output" = "$(server_json /api/v1/nodes/vk-1)" ]
}

# ------------------------------------------------------------ credentials

@test "kube-request: -o yaml prints YAML that reads back as the same object" {
	apiserver_curl /api/v1/nodes -X POST -H 'Content-Type: application/json' \
		-d '{"apiVersion":"v1","kind":"Node","metadata":{"name":"vk-1","labels":{"a":"true","b":"1.5","c":"","d":"x: y","e":"line1\nline2","f":"0x1F","g":"caf\u00e9","h":"null"}},"spec":{"taints":[{"key":"k","effect":"NoSchedule"}],"podCIDRs":[]}}' >/dev/null
	run_ok kube-request -o yaml GET /api/v1/nodes/vk-1
	[ "${lines[0]}" = "kind: Node" ]
	[ "$(sed -n '/^  labels:/,/^  [a-z]/p' <<<"$output" | sed '$d')" = "$(cat <<'EOF'
  labels:
    a: "true"
    b: "1.5"
    c: ""
    d: 'x: y'
    e: |-
      line1
      line2
    f: "0x1F"
    g: café
    h: "null"
EOF
)" ]
	[[ "$output" == *'
  taints:
  - key: k
    effect: NoSchedule
  podCIDRs: []
'* ]]
	[[ "$output" == *'  creationTimestamp: "'* ]]
	printf '%s\n' "$output" >"$T/node.yaml"
	echo '{}' >"$T/empty.json"
	# read back by the project's reader, which strategic-patch apply prints as JSON
	[ "$(strategic-patch apply "$T/node.yaml" "$T/empty.json" | jq -S -c .)" = \
		"$(server_json /api/v1/nodes/vk-1 | jq -S -c .)" ]
}

@test "kube-request: -o yaml with --items separates the documents with ---" {
	make_node vk-1
	make_node vk-2
	run -0 --separate-stderr kube-request -o yaml --items GET /api/v1/nodes
	[ "$(grep -c '^---$' <<<"$output")" -eq 1 ]
	[ "$(grep '^  name: ' <<<"$output")" = "  name: vk-1
  name: vk-2" ]
	[ "${lines[0]}" = "apiVersion: v1" ]
	[ "${lines[1]}" = "kind: Node" ]
}

@test "kube-request: a full URL on the configured server is taken as its path" {
	make_node vk-1
	port=$(cat "$D/port")
	run -0 --separate-stderr kube-request GET "$APISERVER_URL/api/v1/nodes/vk-1"
	[ "$output" = "$(server_json /api/v1/nodes/vk-1)" ]
	run -0 --separate-stderr kube-request GET "HTTPS://127.0.0.1:$port/api/v1/nodes?labelSelector=x"
	[ "$output" = "$(server_json '/api/v1/nodes?labelSelector=x')" ]
	run -0 apiserver_requests GET /api/v1/nodes
	[[ "$output" == *'"query":"labelSelector=x"'* ]]
}

@test "kube-request: a URL on another server is refused before anything is sent" {
	port=$(cat "$D/port")
	while IFS='|' read -r url msg; do
		run -2 --separate-stderr kube-request GET "$url"
		[ -z "$output" ]
		[ "$stderr" = "kube-request: $msg" ] || { echo "$url: $stderr"; false; }
	done <<EOF
https://127.0.0.2:$port/api/v1/nodes|URL 'https://127.0.0.2:$port/api/v1/nodes' is not on the configured server '$APISERVER_URL': the credentials are that server's; give a path, or --server
http://127.0.0.1:$port/api/v1/nodes|URL 'http://127.0.0.1:$port/api/v1/nodes' is not on the configured server '$APISERVER_URL': the credentials are that server's; give a path, or --server
https://127.0.0.1/api/v1/nodes|URL 'https://127.0.0.1/api/v1/nodes' is not on the configured server '$APISERVER_URL': the credentials are that server's; give a path, or --server
https://127.0.0.1:$port|URL 'https://127.0.0.1:$port' has no path
EOF
	run -0 apiserver_requests
	[ -z "$output" ]
}

@test "kube-request: client certificate from the kubeconfig" {
	run -0 --separate-stderr kube-request --kubeconfig "$D/kubeconfig-cert" GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
	run -0 apiserver_requests GET /api/v1/namespaces/default
	[[ "$output" == *'"user":"admin","auth":"cert"'* ]]
}

@test "kube-request: flags alone, token and client certificate, without a kubeconfig" {
	unset KUBECONFIG
	run -0 --separate-stderr kube-request --server "$APISERVER_URL" --certificate-authority "$D/ca.crt" \
		--token-file "$D/viewer-token" GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
	run -0 --separate-stderr kube-request --server "$APISERVER_URL" --certificate-authority "$D/ca.crt" \
		--client-certificate "$D/admin.crt" --client-key "$D/admin.key" GET /api/v1/namespaces/default
	run -0 apiserver_requests GET /api/v1/namespaces/default
	[[ "${lines[0]}" == *'"user":"viewer","auth":"token"'* ]]
	[[ "${lines[2]}" == *'"user":"admin","auth":"cert"'* ]]
}

@test "kube-request: --token replaces the kubeconfig's credentials" {
	fails_with 1 'kube-request: POST /api/v1/nodes: 403 Forbidden: nodes is forbidden: User "viewer" cannot create resource "nodes" in API group "" at the cluster scope' kube-request --token "$(cat "$D/viewer-token")" POST /api/v1/nodes "$FIX/node.yaml"
}

@test "kube-request: -data fields in the kubeconfig" {
	write_kubeconfig "$T/kc" \
		"    server: $APISERVER_URL
    certificate-authority-data: $(base64 -w0 "$D/ca.crt")" \
		"    client-certificate-data: $(base64 -w0 "$D/admin.crt")
    client-key-data: $(base64 -w0 "$D/admin.key")"
	run -0 --separate-stderr kube-request --kubeconfig "$T/kc" GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
	run -0 apiserver_requests GET /api/v1/namespaces/default
	[[ "$output" == *'"auth":"cert"'* ]]
}

@test "kube-request: exec credential plugin" {
	cp "$D/token" "$T/plugin-token"
	write_kubeconfig "$T/kc" "$(cluster_lines)" \
		"    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $FIX/exec-plugin.sh
      args: [\"$T/plugin-token\"]
      env: [{name: PLUGIN_GREETING, value: hello}]
      interactiveMode: Never"
	run_ok kube-request --kubeconfig "$T/kc" GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
	[ "$(cat "$T/plugin-token.runs")" = run ]
	run -0 apiserver_requests GET /api/v1/namespaces/default
	[[ "$output" == *'"user":"admin","auth":"token"'* ]]
}

@test "kube-request: exec plugin answering with a client certificate" {
	write_kubeconfig "$T/kc" "$(cluster_lines)" \
		"    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: $FIX/exec-cert.sh
      args: [\"$D/admin.crt\", \"$D/admin.key\"]"
	run_ok kube-request --kubeconfig "$T/kc" GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
	run -0 apiserver_requests GET /api/v1/namespaces/default
	[[ "${lines[0]}" == *'"user":"admin","auth":"cert"'* ]]
}

@test "kube-request: a 401 runs the exec plugin again and retries once" {
	echo wrong >"$T/plugin-token"
	cp "$D/token" "$T/plugin-token.next"
	write_kubeconfig "$T/kc" "$(cluster_lines)" \
		"    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $FIX/exec-plugin.sh
      args: [\"$T/plugin-token\"]
      env: [{name: PLUGIN_GREETING, value: hello}]"
	run_ok kube-request --kubeconfig "$T/kc" POST /api/v1/nodes "$FIX/node.yaml"
	[ "$(jq -r .metadata.name <<<"$output")" = vk-1 ]
	[ "$(wc -l <"$T/plugin-token.runs")" -eq 2 ]
	run -0 apiserver_requests POST /api/v1/nodes
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == *'"status":401'* ]]
	[[ "${lines[1]}" == *'"user":"admin","auth":"token"'*'"status":201'* ]]
}

@test "kube-request: --insecure-skip-tls-verify needs no CA" {
	unset KUBECONFIG
	run_ok kube-request --server "$APISERVER_URL" --token "$APISERVER_TOKEN" \
		--insecure-skip-tls-verify GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
	fails_with 1 "kube-request: GET $APISERVER_URL/api/v1/namespaces/default: SSL certificate problem: self-signed certificate in certificate chain" kube-request --server "$APISERVER_URL" --token "$APISERVER_TOKEN" \
		GET /api/v1/namespaces/default
}

@test "kube-request: KUBECONFIG with two files merges them" {
	cat >"$T/a" <<EOF
apiVersion: v1
kind: Config
current-context: split
clusters:
- name: c
  cluster:
$(cluster_lines)
contexts:
- name: split
  context: {cluster: c, user: u}
EOF
	cat >"$T/b" <<EOF
apiVersion: v1
kind: Config
current-context: ignored
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: "$(cat "$D/viewer-token")"}
EOF
	KUBECONFIG="$T/a:$T/b" run -0 --separate-stderr kube-request GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
	run -0 apiserver_requests GET /api/v1/namespaces/default
	[[ "$output" == *'"user":"viewer","auth":"token"'* ]]
}

@test "kube-request: --context selects a context other than the current one" {
	cat >"$T/kc" <<EOF
apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: c
  cluster:
$(cluster_lines)
users:
- name: admin
  user: {token: "$(cat "$D/token")"}
- name: viewer
  user: {tokenFile: "$D/viewer-token"}
contexts:
- name: admin
  context: {cluster: c, user: admin}
- name: viewer
  context: {cluster: c, user: viewer}
EOF
	run -0 --separate-stderr kube-request --kubeconfig "$T/kc" --context viewer GET /api/v1/nodes
	run -0 --separate-stderr kube-request --kubeconfig "$T/kc" GET /api/v1/nodes
	run -0 apiserver_requests GET /api/v1/nodes
	[[ "${lines[0]}" == *'"user":"viewer"'* ]]
	[[ "${lines[1]}" == *'"user":"admin"'* ]]
}

@test "kube-request: tls-server-name that the certificate names is accepted" {
	write_kubeconfig "$T/kc" "$(cluster_lines)
    tls-server-name: localhost" "    token: $APISERVER_TOKEN"
	run -0 --separate-stderr kube-request --kubeconfig "$T/kc" GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
}

# ---------------------------------------------------------------- retries

@test "kube-request: a 503 with Retry-After: 1 is retried a second later and succeeds" {
	make_node vk-1
	fault '{"method":"GET","path":"^/api/v1/nodes/vk-1$","status":503,"retryAfter":1,"count":1}'
	run_ok kube-request GET /api/v1/nodes/vk-1
	node=$output
	run -0 apiserver_requests GET /api/v1/nodes/vk-1
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == *'"status":503,"fault":true'* ]]
	[[ "${lines[1]}" == *'"status":200,"fault":false'* ]]
	# seconds of the day of each request: the second one at least 1 s later
	gap=$(printf '%s\n' "${lines[@]}" | sed 's/.*"time":"[^T]*T\([^Z]*\)Z".*/\1/' |
		awk -F: '{ t[NR] = $1 * 3600 + $2 * 60 + $3 } END { print (t[2] - t[1] >= 1.0) }')
	[ "$gap" = 1 ]
	[ "$node" = "$(server_json /api/v1/nodes/vk-1)" ]
}

@test "kube-request: a dropped connection on GET is retried" {
	fault '{"method":"GET","path":"^/api/v1/namespaces/default$","drop":true,"count":1}'
	run_ok kube-request GET /api/v1/namespaces/default
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
}

@test "kube-request: a 503 on POST is not retried" {
	fault '{"method":"POST","path":"^/api/v1/nodes$","status":503,"retryAfter":1,"count":1}'
	fails_with 1 "kube-request: POST /api/v1/nodes: 503 Service Unavailable: the server is currently unable to handle the request" kube-request POST /api/v1/nodes "$FIX/node.yaml"
	run -0 apiserver_requests POST /api/v1/nodes
	[ "${#lines[@]}" -eq 1 ]
}

@test "kube-request: a 429 is retried even on POST" {
	fault '{"method":"POST","path":"^/api/v1/nodes$","status":429,"retryAfter":1,"count":1}'
	run_ok kube-request POST /api/v1/nodes "$FIX/node.yaml"
	[ "$(jq -r .metadata.name <<<"$output")" = vk-1 ]
	run -0 apiserver_requests POST /api/v1/nodes
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == *'"status":429,"fault":true'* ]]
	[[ "${lines[1]}" == *'"status":201,"fault":false'* ]]
}

@test "kube-request: a 409 is returned, not retried" {
	make_node vk-1
	fault '{"method":"PUT","path":"^/api/v1/nodes/vk-1$","status":409,"count":1}'
	server_json /api/v1/nodes/vk-1 >"$T/n.json"
	fails_with 1 'kube-request: PUT /api/v1/nodes/vk-1: 409 Conflict: Operation cannot be fulfilled on nodes "vk-1": the object has been modified; please apply your changes to the latest version and try again' kube-request PUT /api/v1/nodes/vk-1 "$T/n.json"
	run -0 apiserver_requests PUT /api/v1/nodes/vk-1
	[ "${#lines[@]}" -eq 1 ]
}

@test "kube-request: a server that keeps failing gives up within --request-timeout" {
	fault '{"method":"GET","path":"^/api$","status":500,"count":-1}'
	run -1 --separate-stderr kube-request -v 4 --request-timeout=1s GET /api
	# no wait it planned goes past the second
	[ "$(retry_plan_ms)" -gt 0 ] && [ "$(retry_plan_ms)" -lt 1000 ]
	[ -z "$output" ]
	[ "${stderr_lines[-1]}" = "kube-request: GET /api: 500 Internal Server Error: injected fault (status 500)" ]
	run -0 apiserver_requests GET /api
	[ "${#lines[@]}" -ge 2 ]
}

# issue 16 item 8: a bare number of seconds, as kubectl takes it
@test "kube-request: --request-timeout=1 is one second, as in kubectl" {
	fault '{"method":"GET","path":"^/api$","status":500,"count":-1}'
	run -1 --separate-stderr kube-request -v 4 --request-timeout=1 GET /api
	[ "$(retry_plan_ms)" -gt 0 ] && [ "$(retry_plan_ms)" -lt 1000 ]
	run -0 apiserver_requests GET /api
	[ "${#lines[@]}" -ge 2 ]
}

# -------------------------------------------------------------- redaction

@test "kube-request: -v 9 never shows the token" {
	run -0 --separate-stderr kube-request -v 9 GET /api/v1/namespaces/default
	[[ "$stderr" == *'"request" verb="GET" url="'"$APISERVER_URL"'/api/v1/namespaces/default" status=200 ms='* ]]
	[[ "$stderr" == *'header="Authorization: <redacted>"'* ]]
	[[ "$stderr" == *'"response body" body="{\"kind\":\"Namespace\"'* ]]
	[[ "$stderr" != *"$APISERVER_TOKEN"* ]]
}

@test "kube-request: -v 9 never shows the client key" {
	write_kubeconfig "$T/kc" "$(cluster_lines)" \
		"    client-certificate-data: $(base64 -w0 "$D/admin.crt")
    client-key-data: $(base64 -w0 "$D/admin.key")"
	run -0 --separate-stderr kube-request -v 9 --kubeconfig "$T/kc" GET /api/v1/namespaces/default
	[[ "$stderr" == *'"config loaded"'* ]]
	[[ "$stderr" != *"$(base64 -w0 "$D/admin.key")"* ]]
	[[ "$stderr" != *"$(sed -n 2p "$D/admin.key")"* ]]
	[[ "$stderr" != *PRIVATE* ]]
}

@test "kube-request: -v 9 never shows an exec plugin's token" {
	cp "$D/token" "$T/plugin-token"
	write_kubeconfig "$T/kc" "$(cluster_lines)" \
		"    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $FIX/exec-plugin.sh
      args: [\"$T/plugin-token\"]
      env: [{name: PLUGIN_GREETING, value: hello}]"
	run -0 --separate-stderr kube-request -v 9 --kubeconfig "$T/kc" GET /api/v1/namespaces/default
	[[ "$stderr" == *'"running exec credential plugin"'* ]]
	[[ "$stderr" != *"$APISERVER_TOKEN"* ]]
}

@test "kube-request: -v 6 cuts bodies at 1 KiB, -v 9 logs them whole, -v 2 one line a request" {
	big=$(printf '%01500d' 0)
	apiserver_curl /api/v1/nodes -X POST -H 'Content-Type: application/json' \
		-d "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"vk-1\",\"annotations\":{\"big\":\"$big\",\"tail\":\"end-marker\"}}}" >/dev/null
	run -0 --separate-stderr kube-request -v 6 GET /api/v1/nodes/vk-1
	[[ "$stderr" == *'"response body" body="{\"kind\":\"Node\"'* ]]
	[[ "$stderr" != *end-marker* ]]
	run -0 --separate-stderr kube-request -v 9 GET /api/v1/nodes/vk-1
	[[ "$stderr" == *end-marker* ]]
	run -0 --separate-stderr kube-request -v 2 GET /api/v1/nodes/vk-1
	[ "${#stderr_lines[@]}" -eq 2 ]
	[[ "${stderr_lines[0]}" == *'"config loaded" source="'"$KUBECONFIG_FILE"'" context="local"'* ]]
	[[ "${stderr_lines[1]}" == *'"request" verb="GET" url="'"$APISERVER_URL"'/api/v1/nodes/vk-1" status=200 ms='* ]]
}

@test "kube-request: writes carry ?fieldManager=kube-request, --field-manager's value, or the path's own" {
	run_ok kube-request POST /api/v1/nodes <<<'{"metadata":{"name":"n1"}}'
	run_ok kube-request --field-manager=ops --type=merge PATCH /api/v1/nodes/n1 <<<'{"metadata":{"labels":{"a":"b"}}}'
	run_ok kube-request --type=merge PATCH '/api/v1/nodes/n1?fieldManager=mine&dryRun=All' <<<'{"metadata":{"labels":{"c":"d"}}}'
	run_ok kube-request GET /api/v1/nodes/n1
	run_ok kube-request DELETE /api/v1/nodes/n1
	run -0 apiserver_requests
	jq_is '[.method, .query, (.userAgent | test("^kube-request/[^ ]+ \\([a-z0-9]+/[a-z0-9]+\\) kubelet-tools$"))]' \
		'["POST","fieldManager=kube-request",true]
["PATCH","fieldManager=ops",true]
["PATCH","fieldManager=mine&dryRun=All",true]
["GET","",true]
["DELETE","fieldManager=kube-request",true]'
}

# -------------------------------------------------------------- bad input

@test "kube-request: usage errors exit 2 with two lines and no output" {
	usage_errors kube-request <<'EOF'
|missing <method> and <path>
GET|missing <path>
FETCH /api|unknown method 'FETCH'
GET api/v1|path 'api/v1' must start with '/' or be a URL
GET /api body.json|GET takes no body
DELETE /a /b /c|unexpected operand '/c'
--type=apply PATCH /x|invalid value 'apply' for --type: expected strategic, merge or json
--type=merge PUT /x|--type applies to PATCH only
--watch POST /x|--watch applies to GET only
-o table GET /api|invalid value 'table' for --output: expected json or yaml
--server=not-a-url GET /api|invalid value 'not-a-url' for --server: expected an http(s) URL
--server='https://bad host' GET /api|invalid value 'https://bad host' for --server: expected an http(s) URL
--request-timeout=soon GET /api|--request-timeout: invalid duration 'soon': expected a number and a unit such as 500ms, 10s, 1m30s
--request-timeout=nans GET /api|--request-timeout: invalid duration 'nans': expected a number and a unit such as 500ms, 10s, 1m30s
--request-timeout=-5s GET /api|invalid value '-5s' for --request-timeout: must not be negative
--request-timeout=-5 GET /api|invalid value '-5' for --request-timeout: must not be negative
--bogus GET /api|unrecognized option '--bogus'
--field-manager=$(printf 'm%.0s' {1..129}) GET /api|invalid --field-manager: 129 bytes long, the API server takes at most 128
--field-manager=$'a\x7fb' GET /api|invalid --field-manager: it has a control character
--field-manager=$'a\xc2\x85b' GET /api|invalid --field-manager: it has a control character
--stream GET /api|--stream takes no operand: the requests are its input lines
--stream --type=merge|--type and --content-type are per line with --stream (its TYPE field)
--stream --content-type=text/plain|--type and --content-type are per line with --stream (its TYPE field)
--stream -o yaml|--stream answers one line each: -o yaml does not apply
--stream --items|--items and --stream cannot be used together: an answer is one line
--stream --watch|--watch and --stream cannot be used together: a watch never ends, a stream's requests do
--stream --chunk-size=5|the --watch options do not apply to --stream
--no-body GET /api|--no-body needs --stream
EOF
}

@test "kube-request: a body that is not JSON or YAML exits 2" {
	fails_with 2 "kube-request: $FIX/broken.json:2:1: unexpected end of input, expected a string key" kube-request POST /api/v1/nodes "$FIX/broken.json"
	run -0 apiserver_requests POST
	[ -z "$output" ]
}

@test "kube-request: kubeconfig problems exit 1 with one line naming them" {
	printf 'clusters: [\n  {name: c\n' >"$T/broken"
	write_kubeconfig "$T/ctx" "$(cluster_lines)" "    token: x"
	write_kubeconfig "$T/badurl" "    server: not a url" "    token: x"
	write_kubeconfig "$T/noca" "    server: $APISERVER_URL
    certificate-authority: $T/missing.crt" "    token: x"
	write_kubeconfig "$T/pemca" "    server: $APISERVER_URL
    certificate-authority: $FIX/not-pem.crt" "    token: x"
	write_kubeconfig "$T/pemkey" "$(cluster_lines)" "    client-certificate: $D/admin.crt
    client-key: $FIX/not-pem.crt"
	write_kubeconfig "$T/nokey" "$(cluster_lines)" "    client-certificate: $D/admin.crt
    client-key: $T/missing.key"
	sed 's/user: u}/user: ghost}/' "$T/ctx" >"$T/nouser"
	sed 's/{cluster: c,/{cluster: ghost,/' "$T/ctx" >"$T/nocluster"
	while IFS='|' read -r args msg; do
		eval "set -- $args"
		run -1 --separate-stderr kube-request "$@" GET /api
		[ -z "$output" ]
		[ "$stderr" = "kube-request: $msg" ] || { echo "$args: $stderr"; false; }
	done <<EOF
--kubeconfig $T/none|cannot read kubeconfig '$T/none': No such file or directory
--kubeconfig $T/broken|invalid kubeconfig: $T/broken:3:1: did not find expected ',' or '}' while parsing a flow mapping
--kubeconfig $T/ctx --context nope|kubeconfig '$T/ctx': context 'nope' not found
--kubeconfig $T/nouser|kubeconfig '$T/nouser': user 'ghost' not found for context 't'
--kubeconfig $T/nocluster|kubeconfig '$T/nocluster': cluster 'ghost' not found for context 't'
--kubeconfig $T/badurl|kubeconfig '$T/badurl': cluster 'c': server 'not a url' is not an http(s) URL
--kubeconfig $T/noca|cannot read certificate authority '$T/missing.crt': No such file or directory
--kubeconfig $T/pemca|certificate authority '$FIX/not-pem.crt' is not PEM
--kubeconfig $T/pemkey|client key '$FIX/not-pem.crt' is not PEM
--kubeconfig $T/nokey|cannot read client key '$T/missing.key': No such file or directory
--certificate-authority $FIX/not-pem.crt|certificate authority '$FIX/not-pem.crt' is not PEM
--client-certificate $T/missing.crt|cannot read client certificate '$T/missing.crt': No such file or directory
EOF
	run -0 apiserver_requests
	[ -z "$output" ]
}

@test "kube-request: exec plugins that fail, print garbage, are missing or want a terminal" {
	for p in fail garbage; do
		write_kubeconfig "$T/kc-$p" "$(cluster_lines)" "    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: $FIX/exec-$p.sh"
	done
	fails_with 1 "kube-request: exec plugin '$FIX/exec-fail.sh' failed with exit status 1" kube-request --kubeconfig "$T/kc-fail" GET /api
	fails_with 1 "kube-request: exec plugin '$FIX/exec-garbage.sh' printed something that is not JSON" kube-request --kubeconfig "$T/kc-garbage" GET /api
	write_kubeconfig "$T/kc-missing" "$(cluster_lines)" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: kt-no-such-plugin
      installHint: |
        install kt-no-such-plugin
        from your cloud's tools"
	fails_with 1 "kube-request: exec plugin 'kt-no-such-plugin': cannot run it: No such file or directory: install kt-no-such-plugin from your cloud's tools" kube-request --kubeconfig "$T/kc-missing" GET /api
	write_kubeconfig "$T/kc-tty" "$(cluster_lines)" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $FIX/exec-plugin.sh
      interactiveMode: Always"
	fails_with 1 "kube-request: kubeconfig '$T/kc-tty': user 'u': exec plugin needs a terminal (interactiveMode Always)" kube-request --kubeconfig "$T/kc-tty" GET /api
	run -0 apiserver_requests
	[ -z "$output" ]
}

@test "kube-request: an exec plugin that hangs is killed at the request timeout" {
	write_kubeconfig "$T/kc" "$(cluster_lines)" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $FIX/exec-hang.sh"
	# killed at the timeout, as the message says, not waited for (60 s)
	run -1 --separate-stderr kube-request --kubeconfig "$T/kc" --request-timeout=1s GET /api
	[ -z "$output" ]
	[ "$stderr" = "kube-request: exec plugin '$FIX/exec-hang.sh' did not finish within 1s" ]
}

# the failure names the request and the port; on a busy machine the request
# timeout may end the attempts before the refusal is read, so the test holds
# to what is said, not to which of the two comes first
@test "kube-request: a server that refuses connections" {
	port=1	# tcpmux: nothing listens there
	run -1 --separate-stderr kube-request --server "https://127.0.0.1:$port" --token x \
		--request-timeout=2s GET /api
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" = 1 ]
	[[ "$stderr" == "kube-request: GET https://127.0.0.1:$port/api: "*"127.0.0.1 port $port"* ]]
}

@test "kube-request: a certificate for another host name fails verification" {
	write_kubeconfig "$T/kc" "$(cluster_lines)
    tls-server-name: other.example" "    token: $APISERVER_TOKEN"
	fails_with 1 "kube-request: GET $APISERVER_URL/api: SSL: no alternative certificate subject name matches target host name 'other.example'" kube-request --kubeconfig "$T/kc" GET /api
	run -0 apiserver_requests
	[ -z "$output" ]
}

@test "kube-request: proxy-url sends the connection through the proxy" {
	write_kubeconfig "$T/kc" "$(cluster_lines)
    proxy-url: http://127.0.0.1:1" "    token: $APISERVER_TOKEN"
	run -1 --separate-stderr kube-request --kubeconfig "$T/kc" --request-timeout=300ms GET /api
	[ -z "$output" ]
	[[ "$stderr" == "kube-request: GET $APISERVER_URL/api: Failed to connect to 127.0.0.1 port 1: Connection refused ("[0-9]*" attempts in "*")" ]]
	run -0 apiserver_requests
	[ -z "$output" ]
}

@test "kube-request: proxy variables of the environment skip a loopback server" {
	https_proxy=http://127.0.0.1:1 HTTPS_PROXY=http://127.0.0.1:1 \
		run -0 --separate-stderr kube-request GET /api/v1/namespaces/default
	[ -z "$stderr" ]
	[ "$output" = "$(server_json /api/v1/namespaces/default)" ]
}

@test "kube-request: a CA that did not sign the server's certificate fails verification" {
	fails_with 1 "kube-request: GET $APISERVER_URL/api: SSL certificate problem: self-signed certificate in certificate chain" kube-request --certificate-authority "$D/admin.crt" GET /api
}

@test "kube-request: a reply that is not JSON is an error naming the URL" {
	fault '{"method":"GET","path":"^/api/v1/nodes$","status":200,"body":"hello","count":1}'
	fails_with 1 "kube-request: GET $APISERVER_URL/api/v1/nodes: response is not JSON (Content-Type: text/plain; charset=utf-8)" kube-request GET /api/v1/nodes
}

@test "kube-request: a wrong token is answered 401" {
	fails_with 1 "kube-request: GET /api/v1/nodes: 401 Unauthorized" kube-request --token wrong GET /api/v1/nodes
}

# ------------------------------------------------------------------ --stream

# the pod p as a file, and a line of --stream's input: fields joined by tabs
stream_pod() {
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"default"},"spec":{"nodeName":"n","containers":[{"name":"c","image":"x"}]}}\n' \
		"$1" >"$T/$1.json"
}
req() {
	local IFS=$'\t'
	printf '%s\n' "$*"
}
P=/api/v1/namespaces/default/pods

@test "kube-request --stream: many requests on one connection, an answer a line, in order" {
	stream_pod p1
	{
		req a POST "$P" - "@$T/p1.json"
		for i in 1 2 3 4 5 6 7 8 9 10; do
			req "m$i" PATCH "$P/p1/status" merge "{\"status\":{\"message\":\"m$i\"}}"
		done
		req s patch "$P/p1" strategic '{"metadata":{"labels":{"a":"b"}}}'
		req g GET "$P/p1"
		req d DELETE "$P/p1" - '{"gracePeriodSeconds":0}'
		req gone GET "$P/p1"
	} >"$T/in"
	run --separate-stderr kube-request --stream <"$T/in"
	[ "$status" = 0 ] && [ -z "$stderr" ]
	[ "${#lines[@]}" = 15 ]
	for i in $(seq 0 14); do
		IFS=$'\t' read -r id code text <<<"${lines[i]}"
		[ "$id" = "$(cut -f1 <<<"$(sed -n "$((i + 1))p" "$T/in")")" ]
		case $id in
		a) [ "$code" = 201 ] && jq -e '.metadata.name == "p1"' <<<"$text" ;;
		m*) [ "$code" = 200 ] && jq -e --arg m "$id" '.status.message == $m' <<<"$text" ;;
		s | g) [ "$code" = 200 ] && jq -e '.metadata.labels.a == "b"' <<<"$text" ;;
		d) [ "$code" = 200 ] ;;
		gone) [ "$code" = 404 ] && [[ $text == *'pods "p1" not found'* ]] ;;
		esac
	done
	# the server saw them in that order, on one connection, each once
	run apiserver_requests
	[ "${#lines[@]}" = 15 ]
	jq -se '[.[].conn] | unique | length == 1' "$D/requests.log"
	jq -se '[.[] | .method] == ["POST"] + [range(10) | "PATCH"] + ["PATCH", "GET", "DELETE", "GET"]' \
		"$D/requests.log"
	jq -se '[.[] | select(.method == "PATCH") | .contentType] | unique ==
		["application/merge-patch+json", "application/strategic-merge-patch+json"]' "$D/requests.log"
	jq -se '.[-2].body == {"gracePeriodSeconds": 0}' "$D/requests.log"
}

@test "kube-request --stream: a 409 and a 422 are answers like any other, and --no-body keeps only the status" {
	stream_pod p1
	{
		req a POST "$P" - "@$T/p1.json"
		req b POST "$P" - "@$T/p1.json"
		req c PATCH "$P/p1" json '[{"op":"test","path":"/metadata/name","value":"other"}]'
		req d PATCH "$P/p1" application/merge-patch+json '{"metadata":{"labels":{"x":"y"}}}'
	} >"$T/in"
	run --separate-stderr kube-request --stream --no-body <"$T/in"
	[ "$status" = 0 ] && [ -z "$stderr" ]
	[ "${lines[0]}" = $'a\t201\t' ]
	[ "${lines[1]}" = $'b\t409\tPOST /api/v1/namespaces/default/pods: 409 Conflict: pods "p1" already exists' ]
	[[ ${lines[2]} == $'c\t422\tPATCH /api/v1/namespaces/default/pods/p1: 422 Unprocessable Entity: '* ]]
	[ "${lines[3]}" = $'d\t200\t' ]
	[ "${#lines[@]}" = 4 ]
	# a conflict is not sent again
	[ "$(apiserver_requests POST | wc -l)" = 2 ]
	[ "$(server_json "$P/p1" | jq -r .metadata.labels.x)" = y ]
}

@test "kube-request --stream: a bad line is answered invalid, where it is wrong, and the stream goes on" {
	{
		req a GET /api/v1/nodes
		printf 'no tabs at all\n'
		req '' GET /api/v1/nodes
		req b FETCH /api/v1/nodes
		req c GET api/v1/nodes
		req d GET '/api/v1/no des'
		req e POST "$P"
		req f GET /api/v1/nodes - '{}'
		req g PATCH "$P/p" fancy '{}'
		req h POST "$P" merge '{}'
		req i POST "$P" - '{"a":'
		req j POST "$P" - '@'
		req k POST "$P" - "@$T/missing.json"
		req l GET '/api/v1/pods?watch=true'
		printf 'm\tGET\t/api/v1/nodes\r\n'
		printf '\n'
		req z GET /api/v1/namespaces
	} >"$T/in"
	run --separate-stderr kube-request --stream --no-body <"$T/in"
	[ "$status" = 2 ] && [ -z "$stderr" ]
	lines_are $'a\t200\t' \
		$'-\tinvalid\t-:2:1: the ID is empty, longer than 253 bytes, or not printable ASCII without spaces' \
		$'-\tinvalid\t-:3:1: the ID is empty, longer than 253 bytes, or not printable ASCII without spaces' \
		$'b\tinvalid\t-:4:3: unknown method (GET, POST, PUT, PATCH, DELETE or HEAD)' \
		$'c\tinvalid\t-:5:7: the path must start with \'/\' and be printable ASCII without spaces' \
		$'d\tinvalid\t-:6:7: the path must start with \'/\' and be printable ASCII without spaces' \
		$'e\tinvalid\t-:7:39: this method needs a body' \
		$'f\tinvalid\t-:8:23: this method takes no body' \
		$'g\tinvalid\t-:9:43: the type is \'-\', strategic, merge, json or a MIME type' \
		$'h\tinvalid\t-:10:40: a patch type is for PATCH only' \
		$'i\tinvalid\t-:11:47: unexpected end of input, expected a value' \
		$'j\tinvalid\t-:12:42: \'@\' names no file' \
		"k"$'\tinvalid\t'"-:13: cannot open '$T/missing.json': No such file or directory" \
		$'l\tinvalid\t-:14: a watch needs kube-request --watch' \
		$'m\t200\t' \
		$'z\t200\t'
	# only the good ones reached the server
	[ "$(apiserver_requests | wc -l)" = 3 ]
}

@test "kube-request --stream: a dropped connection retries a GET, not a POST, and the next request reconnects" {
	stream_pod p1
	fault '{"method":"POST","drop":true,"count":1}'
	fault '{"method":"GET","path":"/pods/p1$","drop":true,"count":1}'
	{
		req a POST "$P" - "@$T/p1.json"
		req b POST "$P" - "@$T/p1.json"
		req c GET "$P/p1"
	} >"$T/in"
	run --separate-stderr kube-request --stream --no-body <"$T/in"
	[ "$status" = 0 ] && [ -z "$stderr" ]
	[[ ${lines[0]} == $'a\t0\tPOST '"$APISERVER_URL$P"': '* ]]
	[ "${lines[1]}" = $'b\t201\t' ]
	[ "${lines[2]}" = $'c\t200\t' ]
	# the dropped POST was sent once, not again; the GET twice; three connections
	# (one per drop, then the one the GET's retry opened)
	[ "$(apiserver_requests POST | wc -l)" = 2 ]
	[ "$(apiserver_requests GET "$P/p1" | wc -l)" = 2 ]
	jq -se '[.[].conn] | unique | length == 3' "$D/requests.log"
}

@test "kube-request --stream: the server restarted mid-stream: the next request goes on a new connection" {
	local port
	port=$(cat "$D/port")
	apiserver_stop
	# the same port and certificates across the restart; a client certificate,
	# since the server's tokens are new each start
	apiserver_start "$T/api2" --port "$port"
	cp "$T/api2/kubeconfig-cert" "$T/kc"
	stream_pod p1
	stream_pod p2
	coproc KR { exec kube-request --kubeconfig="$T/kc" --stream --no-body 2>"$T/err" 3>&-; }
	req a POST "$P" - "@$T/p1.json" >&"${KR[1]}"
	IFS= read -r line <&"${KR[0]}"
	[ "$line" = $'a\t201\t' ]
	apiserver_stop
	mv "$T/api2/requests.log" "$T/before.log"
	apiserver_start "$T/api2" --port "$port"
	# the old server's objects are gone with it: p1 is not found, p2 is made
	req b GET "$P/p1" >&"${KR[1]}"
	req c POST "$P" - "@$T/p2.json" >&"${KR[1]}"
	IFS= read -r line <&"${KR[0]}"
	[[ $line == $'b\t404\t'* ]]
	IFS= read -r line <&"${KR[0]}"
	[ "$line" = $'c\t201\t' ]
	exec {KR[1]}>&-
	wait "$KR_PID"
	[ ! -s "$T/err" ]
	# each server saw each of its requests once
	[ "$(grep -c . "$T/before.log")" = 1 ]
	[ "$(grep -c . "$T/api2/requests.log")" = 2 ]
	[ "$(apiserver_requests POST | wc -l)" = 1 ]
}

@test "kube-request --stream: a line over --max-input is answered invalid with its ID, and the next is read" {
	{
		printf 'long\tPOST\t/api/v1/namespaces\t-\t{"metadata":{"name":"%0200d"}}\n' 0
		req x GET /api/v1/namespaces/default
	} >"$T/in"
	run --separate-stderr kube-request --max-input=100 --stream --no-body <"$T/in"
	[ "$status" = 2 ] && [ -z "$stderr" ]
	lines_are $'long\tinvalid\t-:1:1: line longer than 100 bytes (see --max-input)' $'x\t200\t'
	[ "$(apiserver_requests | wc -l)" = 1 ]
}
