#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# fleet bench over TLS and HTTP/2: node-ping against nginx answering with canned replies
#
# Usage: bench/fleet/run-h2.sh NODES [SECONDS] [INTERVAL_S] [NODE_PING]
#
# Like run.sh, but the server is nginx (Debian's package) on 127.0.0.1 with
# a throw-away CA, TLS and HTTP/2, answering the node GET, the lease LIST,
# GET and PUT with `return 200 '...'`.  Lateness comes from nginx's access
# log (gap between two PUTs of a node minus the interval).  Also prints how
# many TCP connections node-ping held to the server: HTTP/2 multiplexes the
# fleet over a few.
set -eu

nodes=${1:?usage: run-h2.sh NODES [SECONDS] [INTERVAL_S] [NODE_PING]}
window=${2:-30}
interval=${3:-10}
ping=${4:-node-ping}
nginx=${NGINX:-/usr/sbin/nginx}
work=$(mktemp -d "${TMPDIR:-/tmp}/fleet-h2.XXXXXX")
port=$((20000 + ($$ + 7) % 20000))
npid=
ppid_=

cleanup() {
	[ -n "$ppid_" ] && kill -TERM "$ppid_" 2>/dev/null || true
	[ -n "$npid" ] && kill -TERM "$npid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
mkdir -p "$work/tmp"
cat >"$work/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log $work/error.log warn;
pid $work/nginx.pid;
events { worker_connections 4096; }
http {
	log_format fleet '\$msec \$request_method \$uri';
	access_log $work/access.log fleet buffer=256k flush=1s;
	client_body_temp_path $work/tmp;
	proxy_temp_path $work/tmp;
	fastcgi_temp_path $work/tmp;
	uwsgi_temp_path $work/tmp;
	scgi_temp_path $work/tmp;
	default_type application/json;
	keepalive_requests 1000000;
	server {
		listen 127.0.0.1:$port ssl http2;
		ssl_certificate $work/cert.pem;
		ssl_certificate_key $work/key.pem;
		location ~ ^/api/v1/nodes/([a-z0-9.-]+)\$ {
			return 200 '{"kind":"Node","apiVersion":"v1","metadata":{"name":"\$1","uid":"uid-\$1","resourceVersion":"1"}}';
		}
		location ~ ^/api/v1/nodes/([a-z0-9.-]+)/status\$ {
			return 200 '{"kind":"Node","apiVersion":"v1","metadata":{"name":"\$1"}}';
		}
		location = /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases {
			alias $work/leases.json;
		}
		location ~ ^/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/([a-z0-9.-]+)\$ {
			return 200 '{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"\$1","namespace":"kube-node-lease","resourceVersion":"1","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"\$1","uid":"uid-\$1"}]},"spec":{"holderIdentity":"\$1","leaseDurationSeconds":40,"renewTime":"2026-11-30T00:00:00.000000Z"}}';
		}
	}
}
EOF
# the LIST: every node's lease, as run.sh's responder answers it
awk -v n="$nodes" 'BEGIN {
	printf "{\"kind\":\"LeaseList\",\"apiVersion\":\"coordination.k8s.io/v1\",\"metadata\":{},\"items\":["
	for (i = 1; i <= n; i++)
		printf "%s{\"metadata\":{\"name\":\"vk-%d\",\"namespace\":\"kube-node-lease\",\"resourceVersion\":\"1\"},\"spec\":{\"holderIdentity\":\"vk-%d\",\"leaseDurationSeconds\":40}}", (i > 1 ? "," : ""), i, i
	printf "]}"
}' >"$work/leases.json"
"$nginx" -p "$work" -c "$work/nginx.conf" &
npid=$!
sleep 0.5
seq -f 'vk-%.0f' "$nodes" >"$work/nodes"

cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

"$ping" --server="https://127.0.0.1:$port" --certificate-authority="$work/cert.pem" \
	--interval="${interval}s" --nodes-from="$work/nodes" --status-interval=24h \
	-o json >"$work/out" 2>"$work/err" &
ppid_=$!
sleep "$interval"
c0=$(cpu_ticks "$ppid_")
n0=$(wc -l <"$work/out")
t0=$(date +%s.%N)
sleep "$window"
c1=$(cpu_ticks "$ppid_")
n1=$(wc -l <"$work/out")
t1=$(date +%s.%N)
conns=$(ss -Htn state established "( dport = :$port )" | wc -l)
rss=$(awk '/^VmHWM/ { print $2 }' "/proc/$ppid_/status")
kill -TERM "$ppid_"
wait "$ppid_" || true
ppid_=
failed=$(grep -vc '"result":"renewed"\|"result":"created"' "$work/out" || true)
errs=$(wc -l <"$work/err")
head -3 "$work/err" >&2
kill -TERM "$npid"
wait "$npid" || true
npid=

# lateness of the PUTs in the window, from nginx's log
late=$(awk -v t0="$t0" -v iv="$interval" '
	$2 == "PUT" {
		n = $3; sub(/.*\//, "", n)
		if ((n in last) && $1 >= t0) print ($1 - last[n] - iv) * 1000
		last[n] = $1
	}' "$work/access.log" | sort -n | awk '
	{ v[NR] = $1 }
	END { if (NR) printf "\"lateP50Ms\":%.1f,\"lateP99Ms\":%.1f,\"lateMaxMs\":%.1f", v[int(NR / 2) + 1], v[int(NR * 0.99) + 1], v[NR]; else printf "\"lateP50Ms\":null" }')

tck=$(getconf CLK_TCK)
awk -v nodes="$nodes" -v c0="$c0" -v c1="$c1" -v n0="$n0" -v n1="$n1" -v t0="$t0" \
	-v t1="$t1" -v rss="$rss" -v tck="$tck" -v failed="$failed" -v errs="$errs" \
	-v conns="$conns" -v late="$late" 'BEGIN {
		wall = t1 - t0; cpu = (c1 - c0) / tck; ren = n1 - n0
		printf "{\"nodes\":%d,\"transport\":\"https h2\",\"windowS\":%.1f,\"renewalsPerS\":%.1f,", nodes, wall, ren / wall
		printf "\"cpuShare\":%.3f,\"renewalsPerCpuS\":%.0f,\"peakRssKiB\":%d,", cpu / wall, (cpu > 0 ? ren / cpu : 0), rss
		printf "\"connections\":%d,\"failedLines\":%d,\"stderrLines\":%d,%s}\n", conns, failed, errs, late
	}'
