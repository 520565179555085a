# SPDX-License-Identifier: Apache-2.0
# Start, drive and stop the local API server (apiserver.py) from bats tests.
#
# Source this file, then:
#   apiserver_start [DIR [ARGS...]]
#                                start a server in DIR (default
#                                $BATS_TEST_TMPDIR/apiserver) with apiserver.py's
#                                options ARGS and export APISERVER_DIR,
#                                APISERVER_URL, APISERVER_TOKEN, KUBECONFIG_FILE;
#                                every server of one bats run shares one CA
#                                (APISERVER_PKI, default
#                                $BATS_RUN_TMPDIR/apiserver-pki)
#                                $APISERVER_DIR/bootstrap-kubeconfig is a
#                                bootstrap token's (system:bootstrappers)
#   apiserver_stop               SIGTERM it and wait for it to exit
#   apiserver_fault JSON         add a fault rule (see apiserver.py)
#   apiserver_clear_faults       remove all fault rules
#   apiserver_reset              empty the store back to its namespaces
#   apiserver_compact            forget the watch history (410 for older
#                                resourceVersions)
#   apiserver_drop_watches       cut every open watch connection now
#   apiserver_requests [METHOD [PATH]]
#                                print request log lines, optionally only
#                                those with that method and exactly that path
#   apiserver_clear_requests     empty the request log
#   apiserver_curl PATH [ARGS...]
#                                curl -sS with the CA and the admin token;
#                                PATH is /api/... or a full URL
#   apiserver_kubectl ARGS...    kubectl with the server's kubeconfig
#   kubectl_minor                its minor version (20 is Debian 12's)
#
# KT_SRCDIR is the source tree's top (make check exports it); without it,
# it is worked out from this file's place.  PYTHON, if set, is the Python 3
# interpreter to run the server with (default: python3 from PATH).

if [ -z "${KT_SRCDIR:-}" ]; then
	KT_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fi
export KT_SRCDIR

APISERVER_PY="$KT_SRCDIR/tests/apiserver/apiserver.py"

# Start the server and wait until it says it is ready: 10 s at most, or
# APISERVER_START_TIMEOUT seconds.
apiserver_start() {
	local dir=${1:-${BATS_TEST_TMPDIR:?}/apiserver} i tries
	local pki=${APISERVER_PKI:-${BATS_RUN_TMPDIR:+$BATS_RUN_TMPDIR/apiserver-pki}}
	shift $(($# > 0))
	tries=$((${APISERVER_START_TIMEOUT:-10} * 20))
	mkdir -p "$dir" || return 1
	rm -f "$dir/ready"
	# Close fd 3 too: bats waits for every holder of it before going on.
	"${PYTHON:-python3}" "$APISERVER_PY" --dir "$dir" ${pki:+--pki "$pki"} "$@" \
		</dev/null >"$dir/stdout" 2>"$dir/stderr" 3>&- &
	APISERVER_PID=$!
	for ((i = 0; i < tries; i++)); do
		[ -e "$dir/ready" ] && break
		if ! kill -0 "$APISERVER_PID" 2>/dev/null; then
			break
		fi
		sleep 0.05
	done
	if [ ! -e "$dir/ready" ]; then
		echo "apiserver_start: the API server did not come up in $dir" >&2
		cat "$dir/stderr" >&2
		apiserver_stop
		return 1
	fi
	APISERVER_DIR=$dir
	APISERVER_URL=$(cat "$dir/url")
	APISERVER_TOKEN=$(cat "$dir/token")
	KUBECONFIG_FILE=$dir/kubeconfig
	export APISERVER_DIR APISERVER_URL APISERVER_TOKEN KUBECONFIG_FILE APISERVER_PID
}

# SIGTERM, then wait up to 5 s before SIGKILL: no server outlives its test.
apiserver_stop() {
	local pid=${APISERVER_PID:-} i
	if [ -z "$pid" ] && [ -n "${APISERVER_DIR:-}" ] && [ -e "$APISERVER_DIR/pid" ]; then
		pid=$(cat "$APISERVER_DIR/pid")
	fi
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "apiserver_stop: $pid ignored SIGTERM; killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	unset APISERVER_PID
}

# POST/DELETE an admin endpoint with curl (faster than another python3).
apiserver_admin() {
	local method=$1 path=$2 body=${3-} out
	local args=(-sS --cacert "${APISERVER_DIR:?}/ca.crt" -X "$method"
		-H "Authorization: Bearer $APISERVER_TOKEN" -w '\n%{http_code}')
	if [ -n "$body" ]; then
		args+=(-H "Content-Type: application/json" --data-binary "$body")
	fi
	out=$(curl "${args[@]}" "$APISERVER_URL$path") || return 1
	case ${out##*$'\n'} in
	2??) return 0 ;;
	esac
	echo "$method $path: ${out%$'\n'*}" >&2
	return 1
}

apiserver_fault() {
	apiserver_admin POST /_faults "${1:?apiserver_fault: a JSON rule}"
}

apiserver_clear_faults() {
	apiserver_admin DELETE /_faults
}

apiserver_reset() {
	apiserver_admin POST /_reset
}

# forget the watch history: older resourceVersions get 410 Gone
apiserver_compact() {
	apiserver_admin POST /_compact
}

# cut every open watch; returns once they are closed
apiserver_drop_watches() {
	apiserver_admin POST /_drop-watches
}

# The log is written compactly by the server, so "method":"PUT" and
# "path":"/x" appear literally: no jq needed to filter it.
apiserver_requests() {
	local log=${APISERVER_DIR:?}/requests.log
	if [ $# -eq 0 ]; then
		cat "$log"
	elif [ $# -eq 1 ]; then
		grep -F "\"method\":\"$1\"," "$log" || true
	else
		grep -F "\"method\":\"$1\"," "$log" | grep -F "\"path\":\"$2\"," || true
	fi
}

apiserver_clear_requests() {
	apiserver_admin DELETE /_requests
}

apiserver_curl() {
	local target=${1:?apiserver_curl: a path or URL first}
	shift
	case $target in
	/*) target=$APISERVER_URL$target ;;
	esac
	curl -sS --cacert "${APISERVER_DIR:?}/ca.crt" \
		-H "Authorization: Bearer $APISERVER_TOKEN" "$@" "$target"
}

# the minor version of the kubectl apiserver_kubectl runs (20 for Debian 12's)
kubectl_minor() {
	"${KT_KUBECTL:-kubectl}" version --client -o json 2>/dev/null |
		sed -n 's/^ *"minor": *"\([0-9]*\).*/\1/p' | head -n 1
}

apiserver_kubectl() {
	"${KT_KUBECTL:-kubectl}" --kubeconfig "${KUBECONFIG_FILE:?}" \
		--cache-dir "$APISERVER_DIR/kube-cache" "$@"
}
