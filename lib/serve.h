/* SPDX-License-Identifier: Apache-2.0 */
/* serve: the kubelet API's routes as kubelet-serve reads them: a request line's
 * method and target in, the route, its names and the log options out, or the
 * status and body to answer with.  Names are checked here (DNS labels and
 * subdomains), before anything looks at a file.  Pure. */
#ifndef KT_SERVE_H
#define KT_SERVE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kt_serve_route {
	KT_SERVE_HEALTHZ,
	KT_SERVE_PODS,
	KT_SERVE_RUNNINGPODS,
	KT_SERVE_LOGS,
	KT_SERVE_STATS_SUMMARY,
	KT_SERVE_METRICS_RESOURCE,
	KT_SERVE_EXEC,
	KT_SERVE_ATTACH,
	KT_SERVE_PORTFORWARD,
};

#define KT_SERVE_ARGV_MAX 8192 /* exec: the command's words, all together */

/* exec, attach and port-forward: what the query asks for */
struct kt_serve_streamq {
	bool in, out, err, tty;	      /* the kubelet's stdin, stdout, stderr, tty */
	char argv[KT_SERVE_ARGV_MAX]; /* exec: each word NUL-ended, one after another */
	size_t argc;
};

/* the kubelet's log options (v1 PodLogOptions as its query gives them) */
struct kt_serve_logq {
	bool follow, timestamps, previous;
	long tail_lines;       /* -1: the whole file */
	int64_t since_seconds; /* 0: not given */
	int64_t since_time_ns; /* 0: not given */
	int64_t limit_bytes;   /* -1: no limit */
};

struct kt_serve_req {
	enum kt_serve_route route;
	char ns[64], pod[254], container[64]; /* valid names; port-forward: no container */
	char uid[64];			      /* exec, attach, port-forward: "" when not given */
	struct kt_serve_logq log;
	struct kt_serve_streamq st;
};

/* what a refused request is answered with: status and a body (a line) */
struct kt_serve_refusal {
	int status;
	char body[400];
};

/*
 * Routes method and target (path and query, as the request line has it).
 * 0 with *r filled in; -1 with *no saying what to answer: 404 for a path the
 * kubelet does not serve, 405 for a method a route does not take, 400 for a
 * bad name or log option (the kubelet's wording), 400 for an exec without a
 * command or a stream, or with a terminal and stderr both, 501 for /run,
 * which kubelet-serve does not serve yet.
 */
int kt_serve_parse(const char *method, const char *target, struct kt_serve_req *r,
		   struct kt_serve_refusal *no);

/* the kubelet's authorization attributes for a request: the verb from the
 * method ("get", "create", ...; NULL for one the kubelet refuses) and the
 * subresource of nodes the path falls under: stats, metrics, log, else proxy */
const char *kt_serve_verb(const char *method);
const char *kt_serve_subresource(const char *path);

/* 0 when s is an RFC 1123 label (namespace, container) or subdomain (pod) */
int kt_serve_dns_label(const char *s, size_t n);
int kt_serve_dns_subdomain(const char *s, size_t n);
#endif
