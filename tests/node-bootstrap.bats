#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# node-bootstrap: certificates reused, refused and bad input; with the local API
# server's certificates.k8s.io, bootstrap, approval, denial and rotation end to end

load helper

CSRS=/apis/certificates.k8s.io/v1/certificatesigningrequests

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
	case $BATS_TEST_DESCRIPTION in
	*"(no server)"*) return 0 ;;
	esac
	case $BATS_TEST_DESCRIPTION in
	*"--rotate"*) apiserver_start "$D/apiserver" --cert-lifetime 30s ;;
	*) apiserver_start ;;
	esac
}

teardown() {
	stop_jobs
	apiserver_stop
}

# node-bootstrap with the local API server's bootstrap kubeconfig
join() {
	node-bootstrap --bootstrap-kubeconfig "$APISERVER_DIR/bootstrap-kubeconfig" \
		--kubeconfig "$OUT" --cert-dir "$PKI" --node "$NODE" "$@"
}

# csr NAME JSONPATH: a field of a CSR, as the admin reads it
csr() {
	apiserver_kubectl get csr "$1" -o "jsonpath=$2"
}

# serving_start [ARGS...]: node-bootstrap --serving in the background, its
# stdout in $D/out, its stderr read from the fifo on fd 7, its pid in $BOOT;
# returns once it has said which CSR is pending, its name in $PENDING
serving_start() {
	mkfifo "$D/err"
	join --serving --address 127.0.0.1 --address "$NODE.example" "$@" >"$D/out" 2>"$D/err" &
	BOOT=$!
	exec 7<"$D/err"
	read -r PENDING_LINE <&7
	PENDING=$(sed -n "s/^node-bootstrap: CSR '\([^']*\)' for the serving certificate is pending: .*/\1/p" <<<"$PENDING_LINE")
	[ -n "$PENDING" ] || { echo "not a pending line: $PENDING_LINE" >&2; return 1; }
	[ "$PENDING_LINE" = "node-bootstrap: CSR '$PENDING' for the serving certificate is pending: approve it with 'kubectl certificate approve $PENDING'" ]
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

@test "node-bootstrap: bad usage (no server)" {
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

@test "node-bootstrap: a certificate directory open to others is refused (no server)" {
	mkdir -m 755 "$PKI"
	fails_with 2 "node-bootstrap: certificate directory '$PKI' is open to group or others (mode 0755): make it private with 'chmod 700 $PKI'" boot
	[ ! -e "$OUT" ]
	[ -z "$(ls -A "$PKI")" ]
}

@test "node-bootstrap: a valid certificate is reused, no request made (no server)" {
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

@test "node-bootstrap: a certificate for another key is refused and left alone (no server)" {
	pair 10
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$D/other.pem"
	cat "$D/other.pem" "$D/c.pem" >"$PKI/kubelet-client-current.pem"
	sum=$(sha256sum <"$PKI/kubelet-client-current.pem")
	fails_with 2 "node-bootstrap: '$PKI/kubelet-client-current.pem': the certificate is not for the private key; remove the file to bootstrap a new one" boot
	[ "$(sha256sum <"$PKI/kubelet-client-current.pem")" = "$sum" ]
	[ ! -e "$OUT" ]
}

@test "node-bootstrap: a node with only the bootstrap kubeconfig gets a client certificate and heartbeats on it" {
	apiserver_kubectl create -f - <<<'{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}'
	run -0 --separate-stderr join
	[ -z "$stderr" ]
	name=$(jq -r .csr <<<"$output")
	file=$PKI/kubelet-client-current.pem
	serial=$(openssl x509 -in "$file" -noout -serial | sed 's/^serial=//')
	jq_is '[.certificate, .event, .file, .subject, .serial]' \
		"[\"client\",\"issued\",\"$file\",\"CN=system:node:edge-1,O=system:nodes\",\"$serial\"]"
	# the CSR as the kubelet makes it, from the bootstrap token's user
	[ "$(csr "$name" '{.spec.signerName} {.spec.usages} {.spec.username}')" = \
		"kubernetes.io/kube-apiserver-client-kubelet [\"digital signature\",\"client auth\"] system:bootstrap:$(cut -d. -f1 "$APISERVER_DIR/bootstrap-token")" ]
	[ "$(csr "$name" '{.spec.request}' | base64 -d | openssl req -noout -subject)" = \
		"subject=O = system:nodes, CN = system:node:edge-1" ]
	# private files in a private directory; the key is the certificate's
	[ "$(stat -c %a "$PKI") $(stat -c %a "$file") $(stat -c %a "$OUT")" = "700 600 600" ]
	[ "$(openssl pkey -in "$file" -pubout)" = "$(openssl x509 -in "$file" -noout -pubkey)" ]
	! grep -q "$(cut -d. -f2 "$APISERVER_DIR/bootstrap-token")" "$OUT"
	# node-ping heartbeats with it, as the node
	run -0 --separate-stderr node-ping --kubeconfig "$OUT" -o json edge-1
	jq_is '.result' '"created"'
	run -0 grep -c '"path":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases".*"user":"system:node:edge-1","auth":"cert"' "$APISERVER_DIR/requests.log"
	# run again: the certificate is reused, no CSR
	run -0 --separate-stderr join
	jq_is '[.event, .serial]' "[\"reused\",\"$serial\"]"
	[ "$(apiserver_requests POST "$CSRS" | wc -l)" = 1 ]
}

@test "node-bootstrap: --serving waits, names the CSR, and goes on when it is approved" {
	serving_start
	# the client certificate came first, and with it the serving CSR was made
	[ "$(csr "$PENDING" '{.spec.signerName} {.spec.usages} {.spec.username}')" = \
		'kubernetes.io/kubelet-serving ["digital signature","server auth"] system:node:edge-1' ]
	run -0 apiserver_kubectl certificate approve "$PENDING"
	wait "$BOOT"
	run -0 cat "$D/out"
	[ "${#lines[@]}" = 2 ]
	[ "$(jq -c '[.certificate, .event]' <<<"${lines[0]}")" = '["client","issued"]' ]
	[ "$(jq -c '[.certificate, .event, .csr]' <<<"${lines[1]}")" = "[\"serving\",\"issued\",\"$PENDING\"]" ]
	[ -z "$(cat <&7)" ]
	run -0 openssl x509 -in "$PKI/kubelet-server-current.pem" -noout -ext subjectAltName,extendedKeyUsage
	[[ "$output" == *"DNS:edge-1.example, IP Address:127.0.0.1"* ]]
	[[ "$output" == *"TLS Web Server Authentication"* ]]
}

@test "node-bootstrap: a denied serving CSR fails with its reason" {
	serving_start
	run -0 apiserver_kubectl certificate deny "$PENDING"
	rc=0
	wait "$BOOT" || rc=$?
	[ "$rc" = 1 ]
	[ "$(cat <&7)" = "node-bootstrap: CSR '$PENDING' was denied: KubectlDeny: This CSR was denied by kubectl certificate deny." ]
	[ ! -e "$PKI/kubelet-server-current.pem" ]
	[ -e "$PKI/kubelet-client-current.pem" ]
}

@test "node-bootstrap: a CSR deleted while waited for fails, nothing written" {
	serving_start
	run -0 apiserver_kubectl delete csr "$PENDING"
	rc=0
	wait "$BOOT" || rc=$?
	[ "$rc" = 1 ]
	[ "$(cat <&7)" = "node-bootstrap: CSR '$PENDING' was deleted while waiting for its certificate" ]
	[ ! -e "$PKI/kubelet-server-current.pem" ]
}

@test "node-bootstrap: --wait gives up on a CSR nobody approves" {
	serving_start --wait 1s
	rc=0
	wait "$BOOT" || rc=$?
	[ "$rc" = 1 ]
	[ "$(cat <&7)" = "node-bootstrap: CSR '$PENDING' has no certificate after 1s (--wait): nobody approved it" ]
	[ ! -e "$PKI/kubelet-server-current.pem" ]
}

@test "node-bootstrap: a bootstrap token the server refuses is named, never shown" {
	token=$(cat "$APISERVER_DIR/bootstrap-token")
	sed "s/$token/${token%%.*}.0000000000000000/" "$APISERVER_DIR/bootstrap-kubeconfig" >"$D/bad"
	fails_with 1 "node-bootstrap: bootstrap kubeconfig '$D/bad': the API server refused its credentials (401 Unauthorized): the bootstrap token is wrong or has expired" \
		node-bootstrap --bootstrap-kubeconfig "$D/bad" --kubeconfig "$OUT" --cert-dir "$PKI" --node "$NODE"
	[ ! -e "$OUT" ]
	# nor at the highest verbosity: the Authorization header is redacted
	run -1 --separate-stderr node-bootstrap --bootstrap-kubeconfig "$D/bad" --kubeconfig "$OUT" \
		--cert-dir "$PKI" --node "$NODE" -v 9
	[[ "$stderr" == *'"Authorization: <redacted>"'* ]]
	[[ "$stderr" != *0000000000000000* ]]
	[ -z "$(ls -A "$PKI")" ]
}

@test "node-bootstrap: a corrupt certificate file is replaced, with a warning" {
	mkdir -m 700 "$PKI"
	echo "not a certificate" >"$PKI/kubelet-client-current.pem"
	run -0 --separate-stderr join
	jq_is .event '"issued"'
	[ "${#stderr_lines[@]}" = 1 ]
	[[ "${stderr_lines[0]}" == W*'"certificate file is corrupt, a new one replaces it" file="'"$PKI"'/kubelet-client-current.pem" error="no private key that can be read'* ]]
	openssl x509 -in "$PKI/kubelet-client-current.pem" -noout
}

@test "node-bootstrap: --rotate renews before expiry while node-ping keeps renewing its Lease" {
	apiserver_kubectl create -f - <<<'{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}'
	mkfifo "$D/boot" "$D/ping"
	join --rotate >"$D/boot" 2>"$D/boot.err" &
	exec 7<"$D/boot"
	read -r first <&7
	[ "$(jq -r .event <<<"$first")" = issued ]
	node-ping --kubeconfig "$OUT" --interval 1s -o json -v 1 edge-1 >"$D/ping" 2>"$D/ping.err" &
	exec 8<"$D/ping"
	read -r second <&7
	read -r third <&7
	# each a new certificate, requested before the one in place expired
	[ "$(jq -r .event <<<"$second") $(jq -r .event <<<"$third")" = "renewed renewed" ]
	s1=$(jq -r .serial <<<"$first") s2=$(jq -r .serial <<<"$second") s3=$(jq -r .serial <<<"$third")
	[ "$s1" != "$s2" ] && [ "$s2" != "$s3" ]
	(($(epoch "$(csr "$(jq -r .csr <<<"$second")" '{.metadata.creationTimestamp}')") < $(epoch "$(jq -r .notAfter <<<"$first")")))
	(($(epoch "$(csr "$(jq -r .csr <<<"$third")" '{.metadata.creationTimestamp}')") < $(epoch "$(jq -r .notAfter <<<"$second")")))
	# renewals came with the node's own certificate, not the bootstrap token
	[ "$(apiserver_requests POST "$CSRS" | grep -c '"user":"system:node:edge-1","auth":"cert"')" = 2 ]
	# the first certificate has expired by now (the third was asked for after
	# it): node-ping, started on it, renews the Lease past its end
	(($(epoch "$(csr "$(jq -r .csr <<<"$third")" '{.metadata.creationTimestamp}')") >= $(epoch "$(jq -r .notAfter <<<"$first")")))
	expired=$(epoch "$(jq -r .notAfter <<<"$first")")
	past=
	while read -r -t 30 line <&8; do
		[ "$(jq -r .result <<<"$line")" = renewed ] || continue
		(($(epoch "$(jq -r .renewTime <<<"$line")") > expired)) && { past=$line; break; }
	done
	[ -n "$past" ]
	# it said so each time it took a new certificate, and nothing went wrong
	[ "$(grep -c '"client certificate reloaded" file="'"$PKI"'/kubelet-client-current.pem"' "$D/ping.err")" -ge 2 ]
	[ -z "$(grep -v '^I' "$D/ping.err")" ]
	# the file holds the latest certificate (the third, or one renewed since)
	now=$(openssl x509 -in "$PKI/kubelet-client-current.pem" -noout -serial)
	[ "$now" != "serial=$s1" ] && [ "$now" != "serial=$s2" ]
}
