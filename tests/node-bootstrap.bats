#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-bootstrap: certificates reused, refused and bad input; with the local API
# server's certificates.k8s.io, bootstrap, approval, denial and rotation end to end

load helper

setup() {
	D=$BATS_TEST_TMPDIR
	PKI=$D/pki
	OUT=$D/kubeconfig
	NODE=edge-1
	# a bootstrap kubeconfig for a server nobody answers at: the tests that
	# use it must not make a request
	cat >"$D/nowhere" <<-EOF
	apiVersion: v1
	kind: Config
	clusters: [{name: c, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
	users: [{name: u, user: {token: abcdef.0123456789abcdef}}]
	contexts: [{name: x, context: {cluster: c, user: u}}]
	current-context: x
	EOF
}

boot() {
	node-bootstrap --bootstrap-kubeconfig "$D/nowhere" --kubeconfig "$OUT" \
		--cert-dir "$PKI" --node "$NODE" "$@"
}

# pair DAYS [SUBJECT]: a key and a self-signed certificate valid DAYS days
# (negative: expired), into $PKI/kubelet-client-current.pem
pair() {
	mkdir -p -m 700 "$PKI"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "${2:-/O=system:nodes/CN=system:node:$NODE}" -days "$1" \
		-keyout "$D/k.pem" -out "$D/c.pem" 2>/dev/null
	cat "$D/k.pem" "$D/c.pem" >"$PKI/kubelet-client-current.pem"
	chmod 600 "$PKI/kubelet-client-current.pem"
}

@test "node-bootstrap: bad usage" {
	usage_errors node-bootstrap <<-'EOF'
	# no bootstrap kubeconfig
	--kubeconfig k --cert-dir d --node n|missing --bootstrap-kubeconfig
	# no kubeconfig to write
	--bootstrap-kubeconfig b --cert-dir d --node n|missing --kubeconfig
	# no directory
	--bootstrap-kubeconfig b --kubeconfig k --node n|missing --cert-dir
	# no node
	--bootstrap-kubeconfig b --kubeconfig k --cert-dir d|missing --node
	# a node name that cannot be one
	--bootstrap-kubeconfig b --kubeconfig k --cert-dir d --node Edge_1|--node: invalid node name 'Edge_1': only lower-case letters, digits, '-' and '.' are allowed
	# an address without --serving
	--bootstrap-kubeconfig b --kubeconfig k --cert-dir d --node n --address 10.0.0.1|--address is for the serving certificate: add --serving
	# --serving without an IP
	--bootstrap-kubeconfig b --kubeconfig k --cert-dir d --node n --serving --address n.example|--serving needs at least one --address that is an IP
	# an operand
	--bootstrap-kubeconfig b --kubeconfig k --cert-dir d --node n extra|unexpected argument 'extra'
	EOF
}

@test "node-bootstrap: a certificate directory open to others is refused" {
	mkdir -m 755 "$PKI"
	fails_with 2 "node-bootstrap: certificate directory '$PKI' is open to group or others (mode 0755): make it private with 'chmod 700 $PKI'" boot
	[ ! -e "$OUT" ]
	[ -z "$(ls -A "$PKI")" ]
}

@test "node-bootstrap: a valid certificate is reused, no request made" {
	pair 10
	serial=$(openssl x509 -in "$D/c.pem" -noout -serial | sed 's/^serial=//')
	run -0 --separate-stderr boot
	[ -z "$stderr" ]
	jq_is '[.certificate, .event, .file, .serial, .subject, has("csr")]' \
		"[\"client\",\"reused\",\"$PKI/kubelet-client-current.pem\",\"$serial\",\"CN=system:node:$NODE,O=system:nodes\",false]"
	# the kubeconfig uses the file, and kubectl reads it
	run -0 kubectl --kubeconfig "$OUT" config view -o jsonpath='{.users[0].user.client-certificate} {.users[0].user.client-key} {.clusters[0].cluster.server}'
	[ "$output" = "$PKI/kubelet-client-current.pem $PKI/kubelet-client-current.pem https://127.0.0.1:9" ]
	[ "$(stat -c %a "$OUT")" = 600 ]
	# a second run changes nothing
	before=$(stat -c %i "$OUT")
	run -0 --separate-stderr boot
	[ "$(stat -c %i "$OUT")" = "$before" ]
}

@test "node-bootstrap: a certificate for another key is refused and left alone" {
	pair 10
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$D/other.pem"
	cat "$D/other.pem" "$D/c.pem" >"$PKI/kubelet-client-current.pem"
	sum=$(sha256sum <"$PKI/kubelet-client-current.pem")
	fails_with 2 "node-bootstrap: '$PKI/kubelet-client-current.pem': the certificate is not for the private key; remove the file to bootstrap a new one" boot
	[ "$(sha256sum <"$PKI/kubelet-client-current.pem")" = "$sum" ]
	[ ! -e "$OUT" ]
}
