# SPDX-License-Identifier: Apache-2.0
# Pod changes for the watch tests (kube-request --watch, --store), through curl:
# quick, so a window in which watches are refused stays short whatever
# kube-request runs under (valgrind, sanitizers).  PODS is the collection.

# mkpod NAME [NODE]: a pod, bound to NODE when given (its delete is then graceful)
mkpod() {
	local node=${2:+,\"nodeName\":\"$2\"}
	apiserver_curl $PODS -X POST -H 'Content-Type: application/json' -o /dev/null -d \
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]$node}}"
}

# relabel NAME VALUE: a label change, one MODIFIED event
relabel() {
	apiserver_curl "$PODS/$1" -X PATCH -H 'Content-Type: application/merge-patch+json' \
		-o /dev/null -d "{\"metadata\":{\"labels\":{\"v\":\"$2\"}}}"
}

# delpod NAME [GRACE]
delpod() {
	apiserver_curl "$PODS/$1${2:+?gracePeriodSeconds=$2}" -X DELETE -o /dev/null
}
