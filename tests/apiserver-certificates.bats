#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The local API server's certificates.k8s.io/v1 and TLS bootstrap: CSRs made
# with openssl and created with kubectl, as a bootstrapper (the token of
# bootstrap-kubeconfig) and as a node (the client certificate it was issued),
# auto-approved as kube-controller-manager's csrapproving controller does,
# approved and denied with kubectl certificate, signed by the server's CA
# with the kubernetes.io signers' checks, and the certificates used.
#
# The server's controller handles CSRs in the order they are written, so a
# CSR it leaves pending is known to be handled once a CSR created after it
# has been approved: these tests wait on that through a watch, never by time.

load helper

CSRS=/apis/certificates.k8s.io/v1/certificatesigningrequests
CLIENT=kubernetes.io/kube-apiserver-client-kubelet
SERVING=kubernetes.io/kubelet-serving

setup() {
	if [[ "$BATS_TEST_DESCRIPTION" == *"default lifetime"* ]]; then
		apiserver_start ""
	else
		apiserver_start "" --cert-lifetime 30s
	fi
	T=$BATS_TEST_TMPDIR
	BOOT_ID=$(cut -d. -f1 "$APISERVER_DIR/bootstrap-token")
}

teardown() {
	if [ -n "${WATCH_PID:-}" ]; then
		kill "$WATCH_PID" 2>/dev/null || true
		wait "$WATCH_PID" 2>/dev/null || true
	fi
	apiserver_stop
}

k() {
	apiserver_kubectl "$@"
}

# as KUBECONFIG ARGS...: kubectl with another kubeconfig
as() {
	local config=$1
	shift
	"${KT_KUBECTL:-kubectl}" --kubeconfig "$config" --cache-dir "$APISERVER_DIR/kube-cache" "$@"
}

# key NAME [CURVE]: an EC key in $T/NAME.key (P-256 unless told)
key() {
	openssl genpkey -algorithm EC -pkeyopt "ec_paramgen_curve:${2:-P-256}" \
		-out "$T/$1.key" 2>/dev/null
}

# csr NAME SUBJECT SIGNER USAGES [SANS]: a CSR object in $T/NAME.yaml for the
# key $T/NAME.key (made if missing), USAGES comma-separated
csr() {
	local name=$1 subject=$2 signer=$3 usages=$4 sans=${5:-}
	[ -e "$T/$name.key" ] || key "$name"
	openssl req -new -key "$T/$name.key" -subj "$subject" \
		${sans:+-addext "subjectAltName=$sans"} -out "$T/$name.csr" || return 1
	{
		printf 'apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\n'
		printf 'metadata:\n  name: %s\nspec:\n  request: %s\n  signerName: %s\n' \
			"$name" "$(base64 -w0 "$T/$name.csr")" "$signer"
		printf '  usages:\n'
		tr ',' '\n' <<<"$usages" | sed 's/^/  - /'
	} >"$T/$name.yaml"
}

# node_csr NAME NODE: a kubelet client CSR for system:node:NODE
node_csr() {
	csr "$1" "/O=system:nodes/CN=system:node:$2" "$CLIENT" "digital signature,client auth"
}

# watch_csr NAME JQ: follow the CSR NAME through a watch (its state now, then
# each change) until an event's object satisfies the jq filter JQ; print that
# object.  The server ends the watch after 20 s if nothing satisfies it.
watch_csr() {
	local name=$1 filter=$2 line fd
	exec {fd}< <(exec curl -sS -N --cacert "$APISERVER_DIR/ca.crt" \
		-H "Authorization: Bearer $APISERVER_TOKEN" \
		"$APISERVER_URL$CSRS?watch=1&fieldSelector=metadata.name%3D$name&timeoutSeconds=20")
	WATCH_PID=$!
	while IFS= read -r -u "$fd" line; do
		printf '%s\n' "$line" >>"$T/watch-$name.log"
		if jq -e ".object | $filter" >/dev/null <<<"$line"; then
			jq -c .object <<<"$line"
			kill "$WATCH_PID" 2>/dev/null
			exec {fd}<&-
			return 0
		fi
	done
	exec {fd}<&-
	echo "watch_csr: $name never satisfied $filter; events:" >&2
	cat "$T/watch-$name.log" >&2
	return 1
}

APPROVED='[.status.conditions[]? | select(.type == "Approved")] | length > 0'
ISSUED='(.status.certificate // "") != ""'

# issued NAME: wait for the certificate of CSR NAME; write it to $T/NAME.crt
issued() {
	watch_csr "$1" "$ISSUED" | jq -r .status.certificate | base64 -d >"$T/$1.crt"
	[ -s "$T/$1.crt" ]
}

# kubeconfig_for NAME: $T/NAME.kubeconfig with $T/NAME.crt and .key
kubeconfig_for() {
	cat >"$T/$1.kubeconfig" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: local
		  cluster:
		    server: "$APISERVER_URL"
		    certificate-authority: "$APISERVER_DIR/ca.crt"
		users:
		- name: $1
		  user:
		    client-certificate: "$T/$1.crt"
		    client-key: "$T/$1.key"
		contexts:
		- name: local
		  context: {cluster: local, user: $1}
		current-context: local
	EOF
}

# bootstrap NODE: the client certificate of system:node:NODE got with the
# bootstrap token, and its kubeconfig $T/NODE.kubeconfig
bootstrap() {
	node_csr "$1" "$1" || return 1
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/$1.yaml" >/dev/null || return 1
	issued "$1" && kubeconfig_for "$1"
}

# notbefore NAME, notafter NAME: a certificate's validity as epoch seconds
notbefore() {
	epoch "$(openssl x509 -in "$T/$1.crt" -noout -startdate -dateopt iso_8601 | cut -d= -f2)"
}
notafter() {
	epoch "$(openssl x509 -in "$T/$1.crt" -noout -enddate -dateopt iso_8601 | cut -d= -f2)"
}

# seconds NAME: the certificate's notAfter minus its notBefore
seconds() {
	echo $(($(notafter "$1") - $(notbefore "$1")))
}

@test "apiserver certificates: bootstrap-kubeconfig's token is system:bootstrap:ID in system:bootstrappers" {
	run -0 cat "$APISERVER_DIR/bootstrap-token"
	[[ "$output" =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]]
	grep -qF "token: \"$output\"" "$APISERVER_DIR/bootstrap-kubeconfig"
	run -0 curl -sS --cacert "$APISERVER_DIR/ca.crt" -H "Authorization: Bearer $APISERVER_TOKEN" \
		-H 'Content-Type: application/json' -X POST \
		--data-binary "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":\"$output\"}}" \
		"$APISERVER_URL/apis/authentication.k8s.io/v1/tokenreviews"
	run -0 jq -c .status.user <<<"$output"
	assert_output "{\"username\":\"system:bootstrap:$BOOT_ID\",\"groups\":[\"system:bootstrappers\",\"system:authenticated\"]}"
	# a bootstrapper may ask for certificates, nothing else
	run -1 as "$APISERVER_DIR/bootstrap-kubeconfig" get nodes
	assert_output --partial "User \"system:bootstrap:$BOOT_ID\" cannot list resource \"nodes\""
	run -0 as "$APISERVER_DIR/bootstrap-kubeconfig" get csr
}

@test "apiserver certificates: a wrong bootstrap token is 401" {
	run -0 curl -sS -o /dev/null -w '%{http_code}' --cacert "$APISERVER_DIR/ca.crt" \
		-H "Authorization: Bearer $BOOT_ID.0123456789abcdef" "$APISERVER_URL$CSRS"
	assert_output 401
	sed "s/token: .*/token: \"$BOOT_ID.0123456789abcdef\"/" \
		"$APISERVER_DIR/bootstrap-kubeconfig" >"$T/wrong"
	run -1 as "$T/wrong" get csr
	assert_output --partial "error: You must be logged in to the server"
}

@test "apiserver certificates: a bootstrapper's node client CSR is approved and signed; spec's requester is the server's to say" {
	node_csr n1 n1
	# what a client says about itself is replaced by who it is
	printf '  username: admin\n  groups: [system:masters]\n  uid: "42"\n' >>"$T/n1.yaml"
	run -0 as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/n1.yaml"
	assert_output "certificatesigningrequest.certificates.k8s.io/n1 created"
	run -0 watch_csr n1 "$ISSUED"
	run -0 jq -c '[.spec.username, .spec.groups, .spec.uid, [.status.conditions[] | .type, .status, .reason, .message]]' <<<"$output"
	assert_output "[\"system:bootstrap:$BOOT_ID\",[\"system:bootstrappers\",\"system:authenticated\"],null,[\"Approved\",\"True\",\"AutoApproved\",\"Auto approving kubelet client certificate after SubjectAccessReview.\"]]"
	issued n1
	run -0 openssl x509 -in "$T/n1.crt" -noout -subject -ext keyUsage,extendedKeyUsage,basicConstraints
	assert_output - <<-'EOF'
		subject=O = system:nodes, CN = system:node:n1
		X509v3 Key Usage: critical
		    Digital Signature
		X509v3 Extended Key Usage: 
		    TLS Web Client Authentication
		X509v3 Basic Constraints: critical
		    CA:FALSE
	EOF
	run -0 openssl verify -CAfile "$APISERVER_DIR/ca.crt" "$T/n1.crt"
	# the key is the CSR's
	[ "$(openssl x509 -in "$T/n1.crt" -noout -pubkey)" = "$(openssl pkey -in "$T/n1.key" -pubout)" ]
	run -0 k get csr n1 -o 'jsonpath={.metadata.name}'
	run -0 k describe csr n1
	assert_output --partial "Approved,Issued"
	assert_output --partial "system:bootstrap:$BOOT_ID"
}

@test "apiserver certificates: --cert-lifetime bounds what is signed, expirationSeconds too; 5 minutes backdated" {
	node_csr n1 n1
	sed -i 's/^spec:$/spec:\n  expirationSeconds: 3600/' "$T/n1.yaml"
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/n1.yaml"
	issued n1
	# 30 s after signing, from 5 minutes before it (as the signer backdates)
	run -0 seconds n1
	assert_output 330
	start=$(notbefore n1)
	created=$(epoch "$(k get csr n1 -o 'jsonpath={.metadata.creationTimestamp}')")
	[ $((created - start)) -ge 299 ] && [ $((created - start)) -le 301 ]
}

@test "apiserver certificates: --cert-backdate 0s starts a certificate when it is signed" {
	apiserver_stop
	apiserver_start "$T/nobackdate" --cert-lifetime 30s --cert-backdate 0s
	BOOT_ID=$(cut -d. -f1 "$APISERVER_DIR/bootstrap-token")
	node_csr n1 n1
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/n1.yaml"
	issued n1
	run -0 seconds n1
	assert_output 30
}

@test "apiserver certificates: the default lifetime is a year, as kube-controller-manager's" {
	node_csr n1 n1
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/n1.yaml"
	issued n1
	run -0 seconds n1
	assert_output $((8760 * 3600))
}

@test "apiserver certificates: --cert-lifetime and --cert-backdate take a Go duration" {
	run -2 --separate-stderr "${PYTHON:-python3}" "$APISERVER_PY" --dir "$T/bad" --cert-lifetime soon
	assert_output ""
	[[ "$stderr" == *'--cert-lifetime: invalid duration "soon"'* ]]
	run -2 "${PYTHON:-python3}" "$APISERVER_PY" --dir "$T/bad" --cert-lifetime 0s
	assert_output --partial "--cert-lifetime must be at least 1s"
	run -2 "${PYTHON:-python3}" "$APISERVER_PY" --dir "$T/bad" --cert-backdate 5
	assert_output --partial '--cert-backdate: invalid duration "5"'
	[ ! -e "$T/bad" ]
}

@test "apiserver certificates: the issued client certificate authenticates as system:node:NAME in system:nodes" {
	bootstrap n1
	run -0 as "$T/n1.kubeconfig" create -f - <<-'EOF'
		apiVersion: v1
		kind: Node
		metadata: {name: n1}
	EOF
	run -0 as "$T/n1.kubeconfig" -n kube-node-lease create -f - <<-'EOF'
		apiVersion: coordination.k8s.io/v1
		kind: Lease
		metadata: {name: n1}
		spec: {holderIdentity: n1, leaseDurationSeconds: 40}
	EOF
	run -0 as "$T/n1.kubeconfig" get nodes -o name
	assert_output "node/n1"
	run -0 grep -F '"path":"/api/v1/nodes"' "$APISERVER_DIR/requests.log"
	assert_output --partial '"user":"system:node:n1","auth":"cert"'
	# a node is not an admin
	run -1 as "$T/n1.kubeconfig" delete namespace kube-node-lease
	assert_output --partial 'User "system:node:n1" cannot delete resource "namespaces"'
}

@test "apiserver certificates: an expired client certificate of the CA is 401, not a failed handshake" {
	key old
	openssl req -new -key "$T/old.key" -subj /O=system:nodes/CN=system:node:n1 -out "$T/old.csr"
	: >"$T/index.txt"
	echo 1000 >"$T/serial"
	cat >"$T/ca.cnf" <<-EOF
		[ca]
		default_ca = test
		[test]
		database = $T/index.txt
		serial = $T/serial
		new_certs_dir = $T
		default_md = sha256
		policy = any
		[any]
		organizationName = optional
		commonName = supplied
	EOF
	openssl ca -batch -config "$T/ca.cnf" -cert "$APISERVER_DIR/ca.crt" \
		-keyfile "$APISERVER_DIR/ca.key" -in "$T/old.csr" -out "$T/old.crt" -notext \
		-startdate 20200101000000Z -enddate 20200102000000Z 2>/dev/null
	kubeconfig_for old
	run -1 as "$T/old.kubeconfig" get nodes
	assert_output --partial "error: You must be logged in to the server"
	run -0 apiserver_requests GET
	assert_output --partial '"user":"none","auth":"none","body":null,"status":401'
	refute_output --partial '"user":"system:node:n1"'
}

@test "apiserver certificates: a node renews its own client certificate (selfnodeclient); another node's name stays pending" {
	bootstrap n1
	# n2 first, then n1's renewal: the renewal approved means n2 was handled
	node_csr other n2
	as "$T/n1.kubeconfig" create -f "$T/other.yaml"
	key renew
	node_csr renew n1
	as "$T/n1.kubeconfig" create -f "$T/renew.yaml"
	run -0 watch_csr renew "$ISSUED"
	run -0 jq -c '[.spec.username, .spec.groups, .status.conditions[0].message]' <<<"$output"
	assert_output '["system:node:n1",["system:nodes","system:authenticated"],"Auto approving self kubelet client certificate after SubjectAccessReview."]'
	run -0 k get csr other -o json
	run -0 jq -c '[.spec.username, .status]' <<<"$output"
	assert_output '["system:node:n1",{}]'
	# the renewed certificate works too
	issued renew
	kubeconfig_for renew
	run -0 as "$T/renew.kubeconfig" get csr -o name
	assert_line certificatesigningrequest.certificates.k8s.io/renew
}

@test "apiserver certificates: a serving CSR waits for kubectl certificate approve, then has its SANs" {
	bootstrap n1
	csr serve /O=system:nodes/CN=system:node:n1 "$SERVING" "digital signature,key encipherment,server auth" \
		"DNS:n1,DNS:n1.example,IP:10.0.0.1"
	as "$T/n1.kubeconfig" create -f "$T/serve.yaml"
	node_csr marker m1
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/marker.yaml"
	watch_csr marker "$APPROVED" >/dev/null
	run -0 k get csr serve -o 'jsonpath={.status}'
	assert_output '{}'
	run -0 k certificate approve serve
	assert_output "certificatesigningrequest.certificates.k8s.io/serve approved"
	issued serve
	run -0 openssl x509 -in "$T/serve.crt" -noout -subject -ext keyUsage,extendedKeyUsage,subjectAltName
	assert_output - <<-'EOF'
		subject=O = system:nodes, CN = system:node:n1
		X509v3 Key Usage: critical
		    Digital Signature, Key Encipherment
		X509v3 Extended Key Usage: 
		    TLS Web Server Authentication
		X509v3 Subject Alternative Name: 
		    DNS:n1, DNS:n1.example, IP Address:10.0.0.1
	EOF
	run -0 openssl verify -CAfile "$APISERVER_DIR/ca.crt" "$T/serve.crt"
	run -0 k get csr serve -o json
	run -0 jq -c '[.status.conditions[] | .type, .reason, .message]' <<<"$output"
	assert_output '["Approved","KubectlApprove","This CSR was approved by kubectl certificate approve."]'
}

@test "apiserver certificates: kubectl certificate deny gives Denied with its reason; nothing is signed" {
	csr serve /O=system:nodes/CN=system:node:n1 "$SERVING" "digital signature,server auth" "IP:10.0.0.1"
	k create -f "$T/serve.yaml"
	run -0 k certificate deny serve
	assert_output "certificatesigningrequest.certificates.k8s.io/serve denied"
	node_csr marker m1
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/marker.yaml"
	watch_csr marker "$APPROVED" >/dev/null
	run -0 k get csr serve -o json
	run -0 jq -c '[.status.certificate, [.status.conditions[] | .type, .status, .reason, .message]]' <<<"$output"
	assert_output '[null,["Denied","True","KubectlDeny","This CSR was denied by kubectl certificate deny."]]'
	run -0 k describe csr serve
	assert_output --partial "Denied"
	# Approved and Denied exclude each other, and neither is taken back
	run -0 k get csr serve -o json
	jq '.status.conditions[0].type = "Approved"' <<<"$output" >"$T/flip.json"
	run -0 apiserver_curl "$CSRS/serve/approval" -X PUT -H 'Content-Type: application/json' \
		--data-binary @"$T/flip.json"
	run -0 jq -r '[.code, .message] | join(" ")' <<<"$output"
	assert_output --partial '422 CertificateSigningRequest "serve" is invalid: status.conditions: Forbidden: updates may not remove a condition of type "Denied"'
}

@test "apiserver certificates: what the signer refuses is Failed with its reason" {
	# server auth is not a kubelet client usage: the approver leaves it alone,
	# an admin approves it, the signer refuses it
	csr extra /O=system:nodes/CN=system:node:n1 "$CLIENT" "digital signature,client auth,server auth"
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/extra.yaml"
	csr admin /O=system:masters/CN=admin "$CLIENT" "digital signature,client auth"
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/admin.yaml"
	node_csr marker m1
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/marker.yaml"
	watch_csr marker "$APPROVED" >/dev/null
	run -0 k get csr extra admin -o 'jsonpath={.items[*].status}'
	assert_output '{} {}'
	k certificate approve extra admin
	FAILED='[.status.conditions[]? | select(.type == "Failed")] | length > 0'
	run -0 watch_csr extra "$FAILED"
	run -0 jq -c '[.status.certificate, [.status.conditions[] | .type, .reason, .message]]' <<<"$output"
	assert_output '[null,["Approved","KubectlApprove","This CSR was approved by kubectl certificate approve.","Failed","SignerValidationFailure","usages did not match [client auth digital signature key encipherment]"]]'
	run -0 watch_csr admin "$FAILED"
	run -0 jq -c '.status.conditions[1].message' <<<"$output"
	assert_output '"subject organization is not system:nodes"'
	# a serving CSR without a name to serve
	csr nosan /O=system:nodes/CN=system:node:n1 "$SERVING" "digital signature,server auth"
	k create -f "$T/nosan.yaml"
	k certificate approve nosan
	run -0 watch_csr nosan "$FAILED"
	run -0 jq -c '.status.conditions[1].message' <<<"$output"
	assert_output '"DNS or IP subjectAltName is required"'
}

@test "apiserver certificates: a request the API cannot read is refused at create" {
	key k1 secp256k1
	csr k1 /O=system:nodes/CN=system:node:n1 "$CLIENT" "digital signature,client auth"
	run -1 as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/k1.yaml"
	assert_output --partial 'spec.request: Invalid value'
	assert_output --partial 'x509: unsupported elliptic curve'
	node_csr n1 n1
	sed -i 's/^  signerName: .*//; s/^  - client auth$/  - client auth\n  - flying/' "$T/n1.yaml"
	run -1 as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/n1.yaml"
	assert_output --partial 'spec.signerName: Required value'
	assert_output --partial 'spec.usages[2]: Unsupported value: "flying"'
	run -0 k get csr -o name
	assert_output ""
}

@test "apiserver certificates: an RSA key is accepted, and kube-apiserver-client certificates authenticate as their subject" {
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/jane.key" 2>/dev/null
	csr jane /O=devs/CN=jane kubernetes.io/kube-apiserver-client "digital signature,key encipherment,client auth"
	k create -f "$T/jane.yaml"
	k certificate approve jane
	issued jane
	kubeconfig_for jane
	run -1 as "$T/jane.kubeconfig" get nodes
	assert_output --partial 'User "jane" cannot list resource "nodes"'
	run -0 grep -F '"user":"jane","auth":"cert"' "$APISERVER_DIR/requests.log"
}

@test "apiserver certificates: a watch sees the CSR added, approved, then issued" {
	exec {fd}< <(exec curl -sS -N --cacert "$APISERVER_DIR/ca.crt" \
		-H "Authorization: Bearer $APISERVER_TOKEN" "$APISERVER_URL$CSRS?watch=1&timeoutSeconds=20")
	WATCH_PID=$!
	node_csr n1 n1
	as "$APISERVER_DIR/bootstrap-kubeconfig" create -f "$T/n1.yaml"
	events=()
	while IFS= read -r -u "$fd" line; do
		events+=("$(jq -c '[.type, .object.metadata.name, [.object.status.conditions[]?.type], (.object.status.certificate // "" | length > 0)]' <<<"$line")")
		[[ "${events[-1]}" == *true]* ]] && break
	done
	exec {fd}<&-
	run -0 printf '%s\n' "${events[@]}"
	assert_output - <<-'EOF'
		["ADDED","n1",[],false]
		["MODIFIED","n1",["Approved"],false]
		["MODIFIED","n1",["Approved"],true]
	EOF
}

@test "apiserver certificates: discovery and kubectl's short name" {
	run -0 apiserver_curl /apis/certificates.k8s.io/v1
	run -0 jq -c '[.resources[] | [.name, .verbs]]' <<<"$output"
	assert_output '[["certificatesigningrequests",["create","delete","get","list","patch","update","watch"]],["certificatesigningrequests/approval",["get","patch","update"]],["certificatesigningrequests/status",["get","patch","update"]]]'
	run -0 k api-resources --api-group certificates.k8s.io -o name
	assert_output certificatesigningrequests.certificates.k8s.io
	node_csr n1 n1
	k create -f "$T/n1.yaml"
	run -0 k delete csr n1
	assert_output 'certificatesigningrequest.certificates.k8s.io "n1" deleted'
}
