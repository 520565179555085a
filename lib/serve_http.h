/* SPDX-License-Identifier: Apache-2.0 */
/* serve_http: kubelet-serve's server: the kubelet API over TLS on one event
 * loop (libevent's evhttp), pods and logs read from kt-agent state
 * directories, log follows woken by inotify. */
#ifndef KT_SERVE_HTTP_H
#define KT_SERVE_HTTP_H
#include <stdbool.h>

#include "api.h"
#include "kt_err.h"
#include "tls.h"

struct kt_serve_http_opts {
	const char *const *state_dirs; /* NULL-ended: each a kt-agent --state-dir */
	const char *address;	       /* to listen on */
	int port;
	struct kt_tls *tls;    /* borrowed; loaded again as its files change */
	bool always_allow;     /* else a SubjectAccessReview through api */
	struct kt_api *api;    /* borrowed: TokenReview, SubjectAccessReview */
	bool token_webhook;    /* bearer tokens through a TokenReview */
	const char *node_name; /* the name in each SubjectAccessReview */
	int max_conns;	       /* past this many, a request is answered 503 */
	int header_timeout_s;  /* a connection silent this long is closed */
	long max_header_bytes;
	const char *provider;  /* exec, attach, port-forward's programs; NULL: 501 */
	long stream_create_ms; /* a session's streams all there within this */
	long stream_idle_ms;   /* a session quiet this long is ended */
};

/*
 * Serves until SIGINT or SIGTERM: 0 then, -1 with err when it cannot start
 * (the address cannot be bound).  Writes "listening on ADDRESS:PORT" through
 * the log at level 1 once it accepts connections.
 */
int kt_serve_http_run(const struct kt_serve_http_opts *o, struct kt_err *err);

/* how long the webhooks' answers are kept, in milliseconds, as the
 * kubelet's defaults: a token 2 min, an allowed request 5 min, a denied 30 s */
#define KT_SERVE_TOKEN_TTL_MS (2 * 60 * 1000)
#define KT_SERVE_ALLOW_TTL_MS (5 * 60 * 1000)
#define KT_SERVE_DENY_TTL_MS  (30 * 1000)
#endif
