/* SPDX-License-Identifier: Apache-2.0 */
/* serve_http: kubelet-serve's server: the kubelet API over TLS on one event
 * loop (libevent's evhttp), pods and logs read from kt-agent state
 * directories, log follows woken by inotify. */
#ifndef KT_SERVE_HTTP_H
#define KT_SERVE_HTTP_H
#include <stdbool.h>

#include "kt_err.h"
#include "tls.h"

struct kt_serve_http_opts {
	const char *const *state_dirs; /* NULL-ended: each a kt-agent --state-dir */
	const char *address;	       /* to listen on */
	int port;
	struct kt_tls *tls;   /* borrowed; loaded again as its files change */
	bool always_allow;    /* else each request needs an authorizer */
	int max_conns;	      /* past this many, a request is answered 503 */
	int header_timeout_s; /* a connection silent this long is closed */
	long max_header_bytes;
};

/*
 * Serves until SIGINT or SIGTERM: 0 then, -1 with err when it cannot start
 * (the address cannot be bound).  Writes "listening on ADDRESS:PORT" through
 * the log at level 1 once it accepts connections.
 */
int kt_serve_http_run(const struct kt_serve_http_opts *o, struct kt_err *err);

/* the hook of /stats/summary and /metrics/resource: false until the stats
 * reader is built in, and both answer 503 */
bool kt_serve_stats_available(void);
#endif
