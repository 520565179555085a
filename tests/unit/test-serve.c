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
	tap_ok(status_of("/exec", &r, &no) == 501 && strstr(no.body, "exec is not implemented"),
	       "/exec: 501, saying so");
	tap_ok(kt_serve_parse("DELETE", "/pods", &r, &no) < 0 && no.status == 405,
	       "a method a route does not take: 405");
	tap_ok(status_of("", &r, &no) == 404 && status_of("healthz", &r, &no) == 404,
	       "a target that is no path: 404");
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
	test_routes();
	test_logs();
	test_names_and_attributes();
	return tap_done();
}
