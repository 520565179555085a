/* SPDX-License-Identifier: Apache-2.0 */
/* test-podstats: the Summary and /metrics/resource renderers on fixed stats */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kt.h"
#include "tap.h"

/* 2025-12-02T10:00:00Z, and a quarter of a second past it */
#define T0 INT64_C(1764669600000000000)
#define T1 (T0 + INT64_C(250000000))

static struct kt_podstats_container container(const char *name, int64_t start, int64_t cpu,
					      int64_t ws)
{
	struct kt_podstats_container c = { 0 };

	c.name = strdup(name);
	c.start_ns = start;
	c.cpu = (struct kt_podstats_cpu){ T1, cpu, -1 };
	c.mem = (struct kt_podstats_mem){ T1, ws, ws + 4096 };
	return c;
}

/* two pods, the second with two containers given out of name order */
static void fixture(struct kt_podstats *s)
{
	struct kt_podstats_pod *p;

	kt_podstats_init(s);
	s->node_name = strdup("vk-1");
	s->node_start_ns = T0 - INT64_C(3600000000000);
	s->cpu = (struct kt_podstats_cpu){ T1, INT64_C(123456789012), 250000000 };
	s->mem = (struct kt_podstats_mem){ T1, INT64_C(1073741824), INT64_C(2147483648) };
	s->n_pods = 2;
	s->pods = calloc(2, sizeof(*s->pods));
	p = &s->pods[0];
	p->name = strdup("web");
	p->ns = strdup("default");
	p->uid = strdup("u-1");
	p->start_ns = T0;
	p->n_containers = 1;
	p->containers = calloc(1, sizeof(*p->containers));
	p->containers[0] = container("nginx", T0 + 1000000000, 1500000000, 12345678);
	p->cpu = (struct kt_podstats_cpu){ T1, 1500000000, -1 };
	p->mem = (struct kt_podstats_mem){ T1, 12345678, 12349774 };
	p = &s->pods[1];
	p->name = strdup("db");
	p->ns = strdup("prod");
	p->uid = strdup("u-2");
	p->start_ns = T0;
	p->n_containers = 2;
	p->containers = calloc(2, sizeof(*p->containers));
	p->containers[0] = container("sidecar", T0, 1, 0);
	p->containers[1] = container("app", T0, 0, 1000000);
	p->cpu = (struct kt_podstats_cpu){ T1, 2, -1 };
	p->mem = (struct kt_podstats_mem){ -1, -1, -1 };
}

static void test_summary(void)
{
	struct kt_podstats s;
	char *out;
	cJSON *doc;

	fixture(&s);
	out = kt_podstats_summary(&s);
	doc = tap_doc(out);
	tap_ok(doc != NULL, "the Summary is JSON");
	tap_ok(!strncmp(out,
			"{\"node\":{\"nodeName\":\"vk-1\",\"startTime\":\"2025-12-02T09:00:00Z\","
			"\"cpu\":{\"time\":\"2025-12-02T10:00:00Z\",\"usageNanoCores\":250000000,"
			"\"usageCoreNanoSeconds\":123456789012},"
			"\"memory\":{\"time\":\"2025-12-02T10:00:00Z\",\"usageBytes\":2147483648,"
			"\"workingSetBytes\":1073741824}},",
			200) &&
		   strstr(out, "\"workingSetBytes\":1073741824}},\"pods\":[{\"podRef\":{\"name\":"
			       "\"web\",\"namespace\":\"default\",\"uid\":\"u-1\"},"
			       "\"startTime\":\"2025-12-02T10:00:00Z\",\"containers\":[{\"name\":"
			       "\"nginx\",\"startTime\":\"2025-12-02T10:00:01Z\",\"cpu\":"),
	       "node, then pods: fields in the order of the Go types, times as metav1.Time");
	tap_ok(strstr(out, "\"memory\":{\"time\":\"2025-12-02T10:00:00Z\",\"usageBytes\":12349774,"
			   "\"workingSetBytes\":12345678}}") != NULL,
	       "a pod's memory: usage and working set");
	tap_ok(strstr(out,
		      "\"uid\":\"u-2\"},\"startTime\":\"2025-12-02T10:00:00Z\",\"containers\":["
		      "{\"name\":\"sidecar\"") != NULL &&
		   !strstr(out, "\"usageNanoCores\":-1") &&
		   strstr(out, "}]}") == out + strlen(out) - 3,
	       "a rate not known and a memory not read are left out, not written as -1");
	cJSON_Delete(doc);
	free(out);
	kt_podstats_release(&s);
	kt_podstats_init(&s);
	out = kt_podstats_summary(&s);
	tap_str(out, "{\"node\":{\"nodeName\":\"\"},\"pods\":[]}",
		"no pods: an empty list, not null");
	free(out);
}

static const char want_prom[] =
    "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the "
    "container in core-seconds\n"
    "# TYPE container_cpu_usage_seconds_total counter\n"
    "container_cpu_usage_seconds_total{container=\"app\",namespace=\"prod\",pod=\"db\"} 0 "
    "1764669600250\n"
    "container_cpu_usage_seconds_total{container=\"nginx\",namespace=\"default\",pod=\"web\"} 1.5 "
    "1764669600250\n"
    "container_cpu_usage_seconds_total{container=\"sidecar\",namespace=\"prod\",pod=\"db\"} 1e-09 "
    "1764669600250\n"
    "# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in "
    "bytes\n"
    "# TYPE container_memory_working_set_bytes gauge\n"
    "container_memory_working_set_bytes{container=\"app\",namespace=\"prod\",pod=\"db\"} 1e+06 "
    "1764669600250\n"
    "container_memory_working_set_bytes{container=\"nginx\",namespace=\"default\",pod=\"web\"} "
    "1.2345678e+07 1764669600250\n"
    "container_memory_working_set_bytes{container=\"sidecar\",namespace=\"prod\",pod=\"db\"} 0 "
    "1764669600250\n"
    "# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in "
    "seconds\n"
    "# TYPE container_start_time_seconds gauge\n"
    "container_start_time_seconds{container=\"app\",namespace=\"prod\",pod=\"db\"} 1.7646696e+09\n"
    "container_start_time_seconds{container=\"nginx\",namespace=\"default\",pod=\"web\"} "
    "1.764669601e+09\n"
    "container_start_time_seconds{container=\"sidecar\",namespace=\"prod\",pod=\"db\"} "
    "1.7646696e+09\n"
    "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in "
    "core-seconds\n"
    "# TYPE node_cpu_usage_seconds_total counter\n"
    "node_cpu_usage_seconds_total 123.456789012 1764669600250\n"
    "# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes\n"
    "# TYPE node_memory_working_set_bytes gauge\n"
    "node_memory_working_set_bytes 1.073741824e+09 1764669600250\n"
    "# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in "
    "core-seconds\n"
    "# TYPE pod_cpu_usage_seconds_total counter\n"
    "pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"web\"} 1.5 1764669600250\n"
    "pod_cpu_usage_seconds_total{namespace=\"prod\",pod=\"db\"} 2e-09 1764669600250\n"
    "# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes\n"
    "# TYPE pod_memory_working_set_bytes gauge\n"
    "pod_memory_working_set_bytes{namespace=\"default\",pod=\"web\"} 1.2345678e+07 1764669600250\n"
    "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container "
    "metrics, 0 otherwise\n"
    "# TYPE resource_scrape_error gauge\n"
    "resource_scrape_error 0\n"
    "# HELP scrape_error [ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting "
    "container metrics, 0 otherwise\n"
    "# TYPE scrape_error gauge\n"
    "scrape_error 0\n";

static void test_prometheus(void)
{
	struct kt_podstats s;
	char *out;

	fixture(&s);
	out = kt_podstats_prometheus(&s);
	tap_str(out, want_prom,
		"families in name order, samples in label order, Go's float text, ms timestamps");
	free(out);
	/* the values Go writes in %e form and those it does not */
	s.cpu.usage_core_ns = INT64_C(999999000000000);
	s.mem.working_set = 123456;
	s.scrape_error = true;
	free(s.pods[0].name);
	s.pods[0].name = strdup("a\"b\\c");
	out = kt_podstats_prometheus(&s);
	tap_ok(strstr(out, "\nnode_cpu_usage_seconds_total 999999 1764669600250\n") &&
		   strstr(out, "\nnode_memory_working_set_bytes 123456 1764669600250\n") &&
		   strstr(out, "\nscrape_error 1\n") &&
		   strstr(out, "\nresource_scrape_error 1\n") &&
		   strstr(out, "pod=\"a\\\"b\\\\c\"}"),
	       "under 1e6 in full; a scrape error; a label value escaped");
	free(out);
	kt_podstats_release(&s);
}

/* what a provider's stats prints reads back as it was written */
static void test_parse(void)
{
	struct kt_podstats s, back;
	struct kt_err err = { 0 };
	char *a, *b, *pa, *pb;
	size_t i;
	static const char *bad[] = {
		"[]",
		"{\"pods\": []}",
		"{\"node\": {\"nodeName\": 3}}",
		"{\"node\": {\"nodeName\": \"n\", \"startTime\": \"yesterday\"}}",
		"{\"node\": {\"nodeName\": \"n\", \"cpu\": {\"usageCoreNanoSeconds\": -1}}}",
		"{\"node\": {\"nodeName\": \"n\"}, \"pods\": [{\"podRef\": {\"name\": \"p\"}}]}",
		"{\"node\": {\"nodeName\": \"n\"}, \"pods\": [{\"podRef\": {\"name\": \"p\", "
		"\"namespace\": \"d\", \"uid\": \"u\"}, \"containers\": [{\"cpu\": {}}]}]}",
		"{\"node\": ",
		"{\"node\": {\"nodeName\": \"n\"}, \"pods\": [{\"podRef\": {\"name\": \"p\", "
		"\"namespace\": \"d\", \"uid\": \"u\"}}, {\"podRef\": {\"name\": \"p\", "
		"\"namespace\": \"d\", \"uid\": \"v\"}}]}",
	};

	fixture(&s);
	a = kt_podstats_summary(&s);
	tap_ok(kt_podstats_parse("stats", a, strlen(a), &back, &err) == 0, "a Summary parses");
	b = kt_podstats_summary(&back);
	tap_ok(b && strlen(b) == strlen(a) && strstr(b, "{\"name\":\"app\"") &&
		   strstr(b, "{\"name\":\"app\"") < strstr(b, "{\"name\":\"sidecar\""),
	       "and is written back the same, containers in name order");
	pa = kt_podstats_prometheus(&s);
	pb = kt_podstats_prometheus(&back);
	tap_ok(strcmp(pa, pb) != 0 &&
		   strstr(pb, "\nnode_cpu_usage_seconds_total 123.456789012 1764669600000\n"),
	       "but for the times, which a Summary keeps to the second");
	free(a);
	free(b);
	free(pa);
	free(pb);
	kt_podstats_release(&back);
	kt_podstats_release(&s);
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char name[64];

		snprintf(name, sizeof(name), "refused: %s", bad[i]);
		err = (struct kt_err){ 0 };
		tap_ok(kt_podstats_parse("stats", bad[i], strlen(bad[i]), &back, &err) < 0 &&
			   err.kind == KT_ERR_INPUT && err.msg[0],
		       name);
		kt_podstats_release(&back);
	}
}

/* 110 pods of two containers: the figure kubelet-serve must meet is 10 ms of
 * CPU a scrape; the test asserts a tenth of the CPU of a much larger render */
static void test_cost(void)
{
	struct kt_podstats s;
	char name[32];
	char *out;
	size_t i;
	clock_t t0;
	double ms;

	kt_podstats_init(&s);
	s.node_name = strdup("vk-1");
	s.n_pods = 110;
	s.pods = calloc(s.n_pods, sizeof(*s.pods));
	for (i = 0; i < s.n_pods; i++) {
		struct kt_podstats_pod *p = &s.pods[i];

		snprintf(name, sizeof(name), "pod-%03zu", i);
		p->name = strdup(name);
		p->ns = strdup("default");
		p->uid = strdup(name);
		p->start_ns = T0;
		p->n_containers = 2;
		p->containers = calloc(2, sizeof(*p->containers));
		p->containers[0] =
		    container("main", T0 + 123456789, INT64_C(987654321) * (int64_t)i,
			      INT64_C(12345678) + (int64_t)i);
		p->containers[1] =
		    container("side", T0 + 223456789, INT64_C(123456789) * (int64_t)i,
			      INT64_C(2345678) + (int64_t)i);
		p->cpu = (struct kt_podstats_cpu){ T1, INT64_C(1111111110) * (int64_t)i, -1 };
		p->mem = (struct kt_podstats_mem){ T1, INT64_C(14691356), -1 };
	}
	t0 = clock();
	for (i = 0; i < 20; i++) {
		out = kt_podstats_prometheus(&s);
		free(out);
	}
	ms = (double)(clock() - t0) * 1000.0 / CLOCKS_PER_SEC / 20;
	printf("# /metrics/resource for 110 pods: %.2f ms of CPU a render\n", ms);
	out = kt_podstats_prometheus(&s);
	tap_ok(out && strstr(out,
			     "pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"pod-109\"}"),
	       "110 pods rendered");
	free(out);
	kt_podstats_release(&s);
}

int main(void)
{
	test_summary();
	test_prometheus();
	test_parse();
	test_cost();
	return tap_done();
}
