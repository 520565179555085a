/* SPDX-License-Identifier: Apache-2.0 */
/* test-prober: the prober worker's schedule on a made-up clock, a pod's probes, commands */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

/* a spec from probe JSON text; aborts the test run on a bad one */
static void spec_of(struct kt_probe_spec *spec, const char *text, enum kt_probe_type t)
{
	struct kt_err err = { 0 };
	cJSON *probe = kt_json_parse("probe", text, strlen(text), &err);

	if (!probe || kt_probe_spec_parse(spec, probe, t, NULL, "probe", &err) < 0) {
		printf("Bail out! %s\n", err.msg);
		exit(1);
	}
	cJSON_Delete(probe);
}

static void test_ticks(void)
{
	struct kt_probe_spec spec;
	struct kt_prober_worker w;

	spec_of(&spec, "{\"tcpSocket\":{\"port\":1}}", KT_PROBE_READINESS);
	kt_prober_worker_init(&w, &spec, 1000);
	tap_ok(w.due_ms == 1000, "ticks: the first is due at once");
	tap_ok(kt_prober_worker_tick(&w, 1000, true) == KT_PROBER_PROBE && w.due_ms == 11000,
	       "ticks: probe at once, next one period on");
	kt_prober_worker_started(&w);
	tap_ok(kt_prober_worker_done(&w, KT_PROBE_SUCCESS, 1200, true) ==
		       (KT_PROBE_FEED_SET | KT_PROBE_FEED_CHANGED),
	       "ticks: the result is counted, nothing queued");
	tap_ok(kt_prober_worker_tick(&w, 11003, true) == KT_PROBER_PROBE && w.due_ms == 21000,
	       "ticks: a late tick keeps the period");
	kt_prober_worker_started(&w);
	tap_ok(kt_prober_worker_tick(&w, 21000, true) == 0 && w.pending,
	       "ticks: a tick during an attempt waits for it");
	tap_ok(kt_prober_worker_tick(&w, 31000, true) == 0 && w.due_ms == 41000,
	       "ticks: a second tick during it is not queued twice");
	tap_ok(kt_prober_worker_done(&w, KT_PROBE_SUCCESS, 35000, true) ==
		       (KT_PROBE_FEED_SET | KT_PROBER_PROBE | KT_PROBER_QUEUED),
	       "ticks: the waiting tick probes when the attempt ends");
	kt_prober_worker_started(&w);
	kt_prober_worker_done(&w, KT_PROBE_SUCCESS, 35100, true);
	tap_ok(!w.pending, "ticks: nothing is left waiting");
	tap_ok(kt_prober_worker_tick(&w, 75500, true) == KT_PROBER_PROBE && w.due_ms == 81000,
	       "ticks: a loop late by several periods drops the missed ticks");
	kt_probe_spec_release(&spec);
}

static void test_delay_and_gate(void)
{
	struct kt_probe_spec spec;
	struct kt_prober_worker w;

	spec_of(&spec, "{\"tcpSocket\":{\"port\":1},\"initialDelaySeconds\":5,\"periodSeconds\":1}",
		KT_PROBE_READINESS);
	kt_prober_worker_init(&w, &spec, 0);
	tap_ok(kt_prober_worker_tick(&w, 0, true) == 0, "delay: not before initialDelaySeconds");
	tap_ok(kt_prober_worker_tick(&w, 4999, true) == 0, "delay: whole seconds count");
	tap_ok(kt_prober_worker_tick(&w, 5000, true) == KT_PROBER_PROBE, "delay: then it probes");
	tap_ok(kt_prober_worker_tick(&w, 6000, false) == 0,
	       "gate: readiness waits while the startup probe has not succeeded");
	tap_ok(kt_prober_worker_trigger(&w, 6100) == KT_PROBER_PROBE,
	       "gate: startup success triggers an idle readiness worker");
	kt_prober_worker_started(&w);
	tap_ok(kt_prober_worker_trigger(&w, 6200) == 0, "gate: not one that is probing");
	kt_probe_spec_release(&spec);

	spec_of(&spec, "{\"tcpSocket\":{\"port\":1}}", KT_PROBE_STARTUP);
	kt_prober_worker_init(&w, &spec, 0);
	tap_ok(kt_prober_worker_tick(&w, 0, false) == KT_PROBER_PROBE,
	       "gate: startup probes while not started");
	tap_ok(kt_prober_worker_tick(&w, 10000, true) == 0, "gate: and stops once started");
	tap_ok(kt_prober_worker_trigger(&w, 10000) == 0, "gate: a trigger is for readiness only");
	kt_probe_spec_release(&spec);
}

static void test_hold(void)
{
	struct kt_probe_spec spec;
	struct kt_prober_worker w;
	unsigned m;

	spec_of(&spec, "{\"tcpSocket\":{\"port\":1},\"failureThreshold\":2}", KT_PROBE_LIVENESS);
	kt_prober_worker_init(&w, &spec, 0);
	kt_prober_worker_tick(&w, 0, true);
	kt_prober_worker_started(&w);
	tap_ok(kt_prober_worker_done(&w, KT_PROBE_FAILURE, 10, true) == 0,
	       "hold: one failure of two is not reported");
	kt_prober_worker_tick(&w, 10000, true);
	kt_prober_worker_started(&w);
	m = kt_prober_worker_done(&w, KT_PROBE_FAILURE, 10010, true);
	tap_ok(m == (KT_PROBE_FEED_SET | KT_PROBE_FEED_CHANGED | KT_PROBE_FEED_HOLD),
	       "hold: the second changes liveness to failure and holds");
	tap_ok(kt_prober_worker_tick(&w, 20000, true) == 0 && w.due_ms == -1,
	       "hold: no more ticks");
	kt_probe_spec_release(&spec);

	spec_of(&spec, "{\"tcpSocket\":{\"port\":1},\"failureThreshold\":1}", KT_PROBE_READINESS);
	kt_prober_worker_init(&w, &spec, 0);
	kt_prober_worker_tick(&w, 0, true);
	kt_prober_worker_started(&w);
	m = kt_prober_worker_done(&w, KT_PROBE_FAILURE, 10, true);
	tap_ok(!(m & KT_PROBE_FEED_HOLD) && kt_prober_worker_tick(&w, 10000, true),
	       "hold: readiness is never held");
	kt_probe_spec_release(&spec);
}

/* the probes of a workload as "field:type" lines */
static const char *probes_of(const char *text, const char *container, unsigned types)
{
	static char buf[1024];
	cJSON *obj = kt_json_parse("pod", text, strlen(text), NULL);
	const char *prefix = NULL;
	const cJSON *spec = kt_prober_pod_spec(obj, &prefix);
	struct kt_prober_probe *pr = NULL;
	bool matched;
	int n;
	size_t len = 0;

	buf[0] = '\0';
	if (!spec) {
		cJSON_Delete(obj);
		return "no spec";
	}
	n = kt_prober_pod_probes(spec, prefix, container, types, &pr, &matched, NULL);
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "",
					pr[i].field);
	if (!matched)
		snprintf(buf + len, sizeof(buf) - len, "(no match)");
	free(pr);
	cJSON_Delete(obj);
	return buf;
}

#define PROBES "\"livenessProbe\":{},\"readinessProbe\":{},\"startupProbe\":{}"

static void test_pod_probes(void)
{
	const char *pod = "{\"spec\":{\"containers\":[{\"name\":\"a\"," PROBES "},"
			  "{\"name\":\"b\",\"readinessProbe\":null}],"
			  "\"initContainers\":[{\"name\":\"init\"," PROBES "},"
			  "{\"name\":\"side\",\"restartPolicy\":\"Always\",\"livenessProbe\":{}}]}}";

	tap_str(probes_of(pod, NULL, ~0u),
		"spec.containers[0].startupProbe spec.containers[0].readinessProbe "
		"spec.containers[0].livenessProbe spec.initContainers[1].livenessProbe",
		"pod: the kubelet's order, sidecars only among init containers");
	tap_str(probes_of(pod, "side", ~0u), "spec.initContainers[1].livenessProbe",
		"pod: a container filter");
	tap_str(probes_of(pod, "init", ~0u), "(no match)",
		"pod: a plain init container is no match");
	tap_str(probes_of(pod, NULL, 1u << KT_PROBE_READINESS), "spec.containers[0].readinessProbe",
		"pod: a type filter");
	tap_str(probes_of("{\"kind\":\"Deployment\",\"spec\":{\"template\":{\"spec\":"
			  "{\"containers\":[{\"name\":\"a\",\"livenessProbe\":{}}]}}}}", NULL, ~0u),
		"spec.template.spec.containers[0].livenessProbe", "workload: a Deployment's template");
	tap_str(probes_of("{\"kind\":\"CronJob\",\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":"
			  "{\"spec\":{\"containers\":[{\"name\":\"a\",\"livenessProbe\":{}}]}}}}}}",
			  NULL, ~0u),
		"spec.jobTemplate.spec.template.spec.containers[0].livenessProbe",
		"workload: a CronJob's job template");
	tap_str(probes_of("{\"kind\":\"PodTemplate\",\"template\":{\"spec\":"
			  "{\"containers\":[{\"name\":\"a\",\"livenessProbe\":{}}]}}}", NULL, ~0u),
		"template.spec.containers[0].livenessProbe", "workload: a PodTemplate");
	tap_str(probes_of("{\"kind\":\"Service\",\"spec\":{}}", NULL, ~0u), "no spec",
		"workload: another kind has no pod spec");
}

static void on_report(struct kt_prober *p, const struct kt_prober_report *r, void *arg)
{
	(void)p;
	(void)r;
	(*(int *)arg)++;
}

static size_t workers(struct kt_prober *p)
{
	struct kt_prober_counts c;

	kt_prober_count(p, &c);
	return c.workers;
}

/* the size cap of the commands' pod files */
#define MAX (1 << 20)

static void test_commands(void)
{
	static const char *const start =
		"{\"op\":\"start\",\"pod\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},"
		"\"spec\":{\"containers\":[{\"name\":\"a\",\"livenessProbe\":{\"tcpSocket\":"
		"{\"port\":1}},\"readinessProbe\":{\"tcpSocket\":{\"port\":1}}}]}}}";
	static const char *const bad =
		"{\"op\":\"start\",\"pod\":{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},"
		"\"spec\":{\"containers\":[{\"name\":\"a\",\"livenessProbe\":{}}]}}}";
	struct kt_prober_filter f = { 0 };
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(NULL);
	int reports = 0;
	struct kt_prober *p = kt_prober_new(loop, 0, on_report, &reports, NULL);

	tap_ok(kt_prober_command(p, start, strlen(start), 1, &f, MAX, &err) == 0 && workers(p) == 2,
	       "commands: start adds the pod's workers");
	tap_ok(kt_prober_command(p, start, strlen(start), 2, &f, MAX, &err) == 0 && workers(p) == 2,
	       "commands: start again replaces them");
	tap_ok(kt_prober_command(p, bad, strlen(bad), 3, &f, MAX, &err) < 0 && workers(p) == 2,
	       "commands: a bad pod changes nothing");
	tap_str(err.msg, "<stdin>:3: pod.spec.containers[0].livenessProbe: Required value: "
		"must specify a handler type", "commands: and is named with its line");
	tap_ok(kt_prober_command(p, "{\"op\":\"stop\",\"uid\":\"u\",\"types\":[\"liveness\"]}", 45,
				 4, &f, MAX, &err) == 0 &&
		   workers(p) == 1,
	       "commands: stop of one type");
	tap_ok(kt_prober_command(p, "{\"op\":\"stop\",\"uid\":\"u\"}", 24, 5, &f, MAX, &err) == 0 &&
		   workers(p) == 0,
	       "commands: stop of the rest");
	tap_ok(kt_prober_command(p, "  \r", 3, 6, &f, MAX, &err) == 0, "commands: a blank line");
	tap_ok(kt_prober_command(p, "{\"op\":1}", 8, 7, &f, MAX, &err) < 0 &&
		   err.kind == KT_ERR_INPUT,
	       "commands: a bad op is bad input");
	tap_ok(reports == 0, "commands: nothing is reported before the prober runs");
	kt_prober_free(p);
	kt_loop_free(loop);
}

/* writes text to path whole; aborts the test run when it cannot */
static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
}

static void test_command_files(void)
{
	static const char *const probed =
	    "{\"metadata\":{\"name\":\"p\",\"uid\":\"v\"},\"spec\":{\"containers\":"
	    "[{\"name\":\"a\",\"readinessProbe\":{\"tcpSocket\":{\"port\":1}}}]}}";
	static const char *const bare =
	    "{\"metadata\":{\"name\":\"p\",\"uid\":\"v\"},\"spec\":{\"containers\":"
	    "[{\"name\":\"a\"}]}}";
	static const char *const stop = "{\"op\":\"stop\",\"uid\":\"v\"}";
	char dir[] = "/tmp/kt-test-XXXXXX", path[64], line[160];
	struct kt_prober_filter f = { 0 };
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(NULL);
	int reports = 0;
	struct kt_prober *p = kt_prober_new(loop, 0, on_report, &reports, NULL);

	if (!mkdtemp(dir)) {
		printf("Bail out! no temporary directory\n");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/pod.json", dir);
	snprintf(line, sizeof(line), "{\"op\":\"start\",\"podFile\":\"%s\"}", path);
	put_file(path, probed);
	tap_ok(kt_prober_command(p, line, strlen(line), 1, &f, MAX, &err) == 0 && workers(p) == 1,
	       "podFile: start reads the pod from its file");
	put_file(path, bare);
	tap_ok(kt_prober_command(p, line, strlen(line), 2, &f, MAX, &err) == 0 && workers(p) == 0,
	       "podFile: a pod without probes has no worker, and ends those of its uid");
	tap_ok(kt_prober_command(p, stop, strlen(stop), 3, &f, MAX, &err) == 0,
	       "podFile: a stop of a pod without probes is fine");
	put_file(path, probed);
	tap_ok(kt_prober_command(p, line, strlen(line), 4, &f, 16, &err) < 0 &&
		   err.kind == KT_ERR_INPUT && workers(p) == 0,
	       "podFile: a file over the cap is refused");
	tap_ok(strncmp(err.msg, "<stdin>:4: podFile: ", 20) == 0,
	       "podFile: and named with its line and key");
	unlink(path);
	rmdir(dir);
	kt_prober_free(p);
	kt_loop_free(loop);
}

static void test_texts(void)
{
	struct kt_prober_target pod = { .pod = "ns/web", .container = "app" }, bare = { 0 };
	struct kt_prober_report r = { .event = KT_PROBER_RESULT, .target = &pod,
				      .type = KT_PROBE_READINESS, .result = KT_PROBE_FAILURE,
				      .run = 1, .threshold = 3, .output = "no\nway\n",
				      .output_len = 7 };
	struct kt_probe_state st = { .failure_threshold = 3 };
	struct kt_prober_view v = { .target = &bare, .type = KT_PROBE_LIVENESS, .st = &st,
				    .last = KT_PROBE_FAILURE, .output = "down", .output_len = 4 };
	char buf[200];

	kt_prober_progress_text(buf, sizeof(buf), &r);
	tap_str(buf, "readiness probe of ns/web container app: failure 1/3: no way",
		"texts: progress on one line, with the count");
	r.target = &bare;
	r.result = KT_PROBE_UNKNOWN;
	r.run = 0;
	r.output = "exec: \"x\": not found";
	r.output_len = strlen(r.output);
	kt_prober_progress_text(buf, sizeof(buf), &r);
	tap_str(buf, "readiness probe: unknown: exec: \"x\": not found",
		"texts: an unknown result has no count");
	tap_ok(kt_prober_why_text(buf, sizeof(buf), &v, " after 30s"), "texts: failing is not ready");
	tap_str(buf, "not ready after 30s: liveness probe: failure: down", "texts: why, with when");
	st.on_hold = true;
	kt_prober_why_text(buf, sizeof(buf), &v, "");
	tap_str(buf, "liveness probe failed 3 times in a row: down", "texts: why, held");
	st.on_hold = false;
	v.last = KT_PROBE_UNKNOWN;
	v.output_len = 0;
	kt_prober_why_text(buf, sizeof(buf), &v, "");
	tap_str(buf, "not ready: liveness probe: not probed yet", "texts: why, before any attempt");
	st.settled = true;
	st.reported = KT_PROBE_SUCCESS;
	tap_ok(!kt_prober_why_text(buf, sizeof(buf), &v, "") && !*buf,
	       "texts: nothing for a probe that succeeded");
}

int main(void)
{
	test_ticks();
	test_delay_and_gate();
	test_hold();
	test_pod_probes();
	test_commands();
	test_command_files();
	test_texts();
	return tap_done();
}
