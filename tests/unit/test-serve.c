/* SPDX-License-Identifier: Apache-2.0 */
/* test-serve: kubelet-serve's routes, names, log options and the kubelet's
 * authorization attributes */
#include <string.h>

#include "serve.h"
#include "tap.h"

/* parses GET target: the status (0 when routed) */
static int status_of(const char *target, struct kt_serve_req *r, struct kt_serve_refusal *no)
{
	return kt_serve_parse("GET", target, r, no) == 0 ? 0 : no->status;
}

static void test_routes(void)
{
	struct kt_serve_req r;
	struct kt_serve_refusal no;

	tap_ok(status_of("/healthz", &r, &no) == 0 && r.route == KT_SERVE_HEALTHZ, "/healthz");
	tap_ok(status_of("/pods/", &r, &no) == 0 && r.route == KT_SERVE_PODS, "/pods/");
	tap_ok(status_of("/runningpods/", &r, &no) == 0 && r.route == KT_SERVE_RUNNINGPODS,
	       "/runningpods/");
	tap_ok(status_of("/stats/summary?only_cpu_and_memory=true", &r, &no) == 0 &&
		   r.route == KT_SERVE_STATS_SUMMARY,
	       "/stats/summary with metrics-server's query");
	tap_ok(status_of("/metrics/resource", &r, &no) == 0 && r.route == KT_SERVE_METRICS_RESOURCE,
	       "/metrics/resource");
	tap_ok(status_of("/metrics/resource/more", &r, &no) == 404, "a path below a route: 404");
	tap_ok(status_of("/execute", &r, &no) == 404, "/execute is not /exec");
	tap_ok(status_of("/run/default/web-1/app", &r, &no) == 501 &&
		   strstr(no.body, "run is not implemented"),
	       "/run: 501, saying so");
	tap_ok(status_of("/exec", &r, &no) == 404, "/exec without names: 404");
	tap_ok(kt_serve_parse("DELETE", "/pods", &r, &no) < 0 && no.status == 405,
	       "a method a route does not take: 405");
	tap_ok(status_of("", &r, &no) == 404 && status_of("healthz", &r, &no) == 404,
	       "a target that is no path: 404");
}

/* exec, attach and port-forward: paths, the query, the kubelet's refusals */
static void test_streams(void)
{
	struct kt_serve_req r;
	struct kt_serve_refusal no;
	const char *u = "0b6c0a4e-0000-4000-8000-000000000001";
	char t[512];

	tap_ok(kt_serve_parse("POST",
			      "/exec/default/web-1/app?command=sh&command=-c&command=echo+a%26b"
			      "&output=1&error=true",
			      &r, &no) == 0 &&
		   r.route == KT_SERVE_EXEC && !strcmp(r.ns, "default") &&
		   !strcmp(r.pod, "web-1") && !strcmp(r.container, "app") && !r.uid[0] &&
		   r.st.argc == 3 && !strcmp(r.st.argv, "sh") && !strcmp(r.st.argv + 3, "-c") &&
		   !strcmp(r.st.argv + 6, "echo a&b") && r.st.out && r.st.err && !r.st.in &&
		   !r.st.tty,
	       "exec: the words in order, decoded; \"1\" and \"true\" are on");
	snprintf(t, sizeof(t), "/exec/default/web-1/%s/app?command=ls&input=1&tty=1", u);
	tap_ok(kt_serve_parse("GET", t, &r, &no) == 0 && !strcmp(r.uid, u) &&
		   !strcmp(r.container, "app") && r.st.in && r.st.tty,
	       "exec with the pod's UID, by GET");
	tap_ok(kt_serve_parse("POST", "/exec/default/web-1/app?command=ls&output=yes", &r, &no) ==
		       -1 &&
		   no.status == 400 &&
		   !strcmp(no.body, "you must specify at least 1 of stdin, stdout, stderr"),
	       "exec: no stream asked for (\"yes\" is not on): 400");
	tap_ok(kt_serve_parse("POST", "/exec/default/web-1/app?output=1", &r, &no) == -1 &&
		   no.status == 400 &&
		   !strcmp(no.body, "you must specify at least one command for the container"),
	       "exec: no command: 400");
	tap_ok(kt_serve_parse("POST", "/exec/default/web-1/app?command=ls&tty=1&error=1", &r,
			      &no) == -1 &&
		   no.status == 400 && strstr(no.body, "tty and stderr"),
	       "exec: a terminal and stderr: 400");
	tap_ok(kt_serve_parse("POST", "/attach/default/web-1/app?output=1", &r, &no) == 0 &&
		   r.route == KT_SERVE_ATTACH && r.st.argc == 0,
	       "attach needs no command");
	tap_ok(kt_serve_parse("POST", "/attach/default/web-1/app?command=ls&output=1", &r, &no) ==
		       0 &&
		   r.st.argc == 0,
	       "attach takes no command words");
	snprintf(t, sizeof(t), "/portForward/default/web-1/%s", u);
	tap_ok(kt_serve_parse("POST", "/portForward/default/web-1", &r, &no) == 0 &&
		   r.route == KT_SERVE_PORTFORWARD && !r.container[0] &&
		   kt_serve_parse("GET", t, &r, &no) == 0 && !strcmp(r.uid, u),
	       "portForward with and without the UID");
	tap_ok(kt_serve_parse("PUT", "/exec/default/web-1/app?command=ls&output=1", &r, &no) ==
		       -1 &&
		   no.status == 405,
	       "exec by PUT: 405");
	tap_ok(kt_serve_parse("POST", "/exec/default/web-1/x%2fy/app?command=ls&output=1", &r,
			      &no) == -1 &&
		   no.status == 400 && strstr(no.body, "invalid pod UID"),
	       "a UID that is not one: 400");
	tap_ok(kt_serve_parse("POST", "/exec/Default/web-1/app?command=ls&output=1", &r, &no) ==
		       -1 &&
		   no.status == 400,
	       "exec: a bad namespace name: 400");
	tap_ok(kt_serve_parse("POST", "/exec/default/web-1/a/b/c?command=ls&output=1", &r, &no) ==
		       -1 &&
		   no.status == 404,
	       "exec: too many segments: 404");
	tap_ok(!strcmp(kt_serve_subresource("/exec/default/web-1/app"), "proxy") &&
		   !strcmp(kt_serve_subresource("/portForward/default/web-1"), "proxy") &&
		   !strcmp(kt_serve_verb("POST"), "create") && !strcmp(kt_serve_verb("GET"), "get"),
	       "exec is nodes/proxy, create by POST and get by GET, as the kubelet authorizes");
}

static void test_logs(void)
{
	struct kt_serve_req r;
	struct kt_serve_refusal no;

	tap_ok(status_of("/containerLogs/kube-system/web-1.a/app", &r, &no) == 0 &&
		   !strcmp(r.ns, "kube-system") && !strcmp(r.pod, "web-1.a") &&
		   !strcmp(r.container, "app") && r.log.tail_lines == -1 &&
		   r.log.limit_bytes == -1 && !r.log.follow,
	       "names, and no option given");
	tap_ok(status_of("/containerLogs/a/b/c?follow&timestamps=True&previous=0&tailLines=%2B5"
			 "&limitBytes=10&sinceSeconds=60",
			 &r, &no) == 0 &&
		   r.log.follow && r.log.timestamps && !r.log.previous && r.log.tail_lines == 5 &&
		   r.log.limit_bytes == 10 && r.log.since_seconds == 60,
	       "every option, a bare follow true, values percent-decoded");
	tap_ok(status_of("/containerLogs/a/b/c?tail=all&tailLines=3", &r, &no) == 0 &&
		   r.log.tail_lines == 3,
	       "tail=all is no tail; tailLines still counts");
	tap_ok(status_of("/containerLogs/a/b/c?tailLines=2&tailLines=-1", &r, &no) == 0 &&
		   r.log.tail_lines == 2,
	       "a repeated key: the first counts, as Go's Values.Get");
	tap_ok(status_of("/containerLogs/a/b/c?sinceTime=2026-01-02T03:04:05.5Z", &r, &no) == 0 &&
		   r.log.since_time_ns == INT64_C(1767323045500000000),
	       "sinceTime to the nanosecond");
	tap_ok(
	    status_of("/containerLogs/a/b/c?sinceTime=2026-01-02T03:04:05Z&sinceSeconds=1", &r,
		      &no) == 400 &&
		!strcmp(no.body, "at most one of `sinceTime` or `sinceSeconds` may be specified"),
	    "sinceTime with sinceSeconds: 400, the kubelet's words");
	tap_ok(status_of("/containerLogs/a/b/c?tailLines=1e3", &r, &no) == 400 &&
		   status_of("/containerLogs/a/b/c?limitBytes=", &r, &no) == 400 &&
		   status_of("/containerLogs/a/b/c?sinceSeconds=99999999999999999999", &r, &no) ==
		       400,
	       "not a whole number, empty, out of range: 400");
	tap_ok(status_of("/containerLogs/a/b/c?x=%zz", &r, &no) == 400 &&
		   !strcmp(no.body, "{\"message\": \"Unable to decode query.\"}"),
	       "a query that does not decode: 400");
	tap_ok(status_of("/containerLogs/a/%2E%2E/c", &r, &no) == 400 &&
		   status_of("/containerLogs/a/b%2Fc/c", &r, &no) == 400 &&
		   status_of("/containerLogs/a/b%00/c", &r, &no) == 400 &&
		   status_of("/containerLogs/a.b/c/d", &r, &no) == 400 &&
		   status_of("/containerLogs/a/b/C", &r, &no) == 400,
	       "'..', '/', NUL, a dotted namespace, a capital: 400 before any file");
	tap_ok(status_of("/containerLogs/a/b", &r, &no) == 400 &&
		   status_of("/containerLogs/a/b/", &r, &no) == 400,
	       "no container: 400");
}

static void test_names_and_attributes(void)
{
	char long_label[70];

	memset(long_label, 'a', 64);
	tap_ok(kt_serve_dns_label(long_label, 63) == 0 && kt_serve_dns_label(long_label, 64) < 0,
	       "a label is at most 63 bytes");
	tap_ok(kt_serve_dns_label("-a", 2) < 0 && kt_serve_dns_label("a-", 2) < 0 &&
		   kt_serve_dns_label("a-b", 3) == 0,
	       "a label starts and ends with a letter or digit");
	tap_ok(kt_serve_dns_subdomain("a.b", 3) == 0 && kt_serve_dns_subdomain("a..b", 4) < 0 &&
		   kt_serve_dns_subdomain(".a", 2) < 0,
	       "a subdomain is labels joined by '.'");
	tap_str(kt_serve_verb("GET"), "get", "GET is get");
	tap_str(kt_serve_verb("HEAD"), "get", "HEAD is get");
	tap_str(kt_serve_verb("POST"), "create", "POST is create");
	tap_ok(kt_serve_verb("TRACE") == NULL, "TRACE has no verb");
	tap_str(kt_serve_subresource("/stats/summary"), "stats", "/stats/summary: stats");
	tap_str(kt_serve_subresource("/stats"), "stats", "/stats: stats");
	tap_str(kt_serve_subresource("/metrics/resource"), "metrics", "/metrics/...: metrics");
	tap_str(kt_serve_subresource("/logs/syslog"), "log", "/logs/...: log");
	tap_str(kt_serve_subresource("/containerLogs/a/b/c"), "proxy",
		"/containerLogs: proxy, as the kubelet maps it");
	tap_str(kt_serve_subresource("/statsx"), "proxy", "/statsx is not under /stats");
	tap_str(kt_serve_subresource("/pods"), "proxy", "/pods: proxy");
}

int main(void)
{
	test_streams();
	test_routes();
	test_logs();
	test_names_and_attributes();
	return tap_done();
}
