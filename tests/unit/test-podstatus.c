/* SPDX-License-Identifier: Apache-2.0 */
/* test-podstatus: upstream's getPhase and condition cases through lib, one TAP line each
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

#define NOW 1796119200000000LL /* 2026-12-01T10:00:00Z */
#define LATER (NOW + 3600000000LL)

/* the condition of this type in a status, or NULL */
static const cJSON *cond(const cJSON *status, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, kt_json_get(status, "conditions"))
		if (strcmp(kt_json_get_string(c, "type"), type) == 0)
			return c;
	return NULL;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* does status have the phase and conditions the case expects? says why not */
static bool matches(const cJSON *status, const cJSON *expect)
{
	const char *phase = kt_json_get_string(expect, "phase");
	const cJSON *want;

	if (phase && !same_str(phase, kt_json_get_string(status, "phase"))) {
		printf("# phase: got %s, want %s\n", kt_json_get_string(status, "phase"),
		       phase);
		return false;
	}
	cJSON_ArrayForEach (want, kt_json_get(expect, "conditions")) {
		const cJSON *got = cond(status, want->string);
		static const char *const keys[] = { "status", "reason", "message" };

		for (int i = 0; i < 3; i++) {
			const char *g = kt_json_get_string(got, keys[i]);
			const char *w = kt_json_get_string(want, keys[i]);

			if (!same_str(g, w)) {
				printf("# %s %s: got %s, want %s\n", want->string,
				       keys[i], g ? g : "(none)", w ? w : "(none)");
				return false;
			}
		}
	}
	return true;
}

/* one fixture line: its pod and results through the engine */
static void run_case(const cJSON *c)
{
	struct kt_probe_results *pr = kt_probe_results_new();
	struct kt_podstatus_opts o = { .now_us = NOW };
	struct kt_err err = { 0 };
	char name[512];
	const cJSON *line;
	cJSON *st;

	snprintf(name, sizeof(name), "%s: %s", kt_json_get_string(c, "test"),
		 kt_json_get_string(c, "case"));
	if (kt_json_get_string(c, "skip")) {
		/* a TAP directive: counted, shown, not run */
		printf("ok %d - %s # SKIP %s\n", ++tap_n, name,
		       kt_json_get_string(c, "skip"));
		kt_probe_results_free(pr);
		return;
	}
	cJSON_ArrayForEach (line, kt_json_get(c, "probeResults"))
		kt_probe_results_add(pr, line, "fixture", &err);
	o.probes = pr;
	o.terminal = cJSON_IsTrue(kt_json_get(c, "terminal"));
	st = kt_podstatus_compute(kt_json_get(c, "pod"), &o, &err);
	if (!st)
		printf("# %s\n", err.msg);
	tap_ok(st && matches(st, kt_json_get(c, "expect")), name);
	cJSON_Delete(st);
	kt_probe_results_free(pr);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* every .ndjson fixture of upstream's cases, files in name order */
static void fixtures(const char *dir)
{
	char *names[64], path[8192];
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!tap_ok(d != NULL, "the fixture directory opens"))
		return;
	while ((de = readdir(d)) && n < 64) {
		size_t len = strlen(de->d_name);

		if (len > 7 && strcmp(de->d_name + len - 7, ".ndjson") == 0 &&
		    (strncmp(de->d_name, "phase-", 6) == 0 ||
		     strncmp(de->d_name, "cond-", 5) == 0))
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		struct kt_err err = { 0 };
		struct kt_json_reader *r;
		cJSON *c;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		r = kt_json_reader_open(path, KT_JSON_MAX_INPUT_DEFAULT, KT_JSON_STREAM,
					&err);
		while (r && kt_json_reader_next(r, &c, &err) > 0) {
			run_case(c);
			cJSON_Delete(c);
		}
		kt_json_reader_close(r);
		free(names[i]);
	}
}

static const char *pod_text =
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":"
	"\"u\"},"
	"\"spec\":{\"containers\":[{\"name\":\"c\",\"readinessProbe\":{\"exec\":{}}}]},"
	"\"status\":{\"podIP\":\"10.0.0.1\",\"containerStatuses\":[{\"name\":\"c\","
	"\"state\":{\"running\":{}}}]}}";

static void probe_results(void)
{
	struct kt_probe_results *pr = kt_probe_results_new();
	struct kt_podstatus_opts o = { .now_us = NOW, .probes = pr };
	struct kt_err err = { 0 };
	cJSON *pod = tap_doc(pod_text), *line, *st;

	st = kt_podstatus_compute(pod, &o, &err);
	tap_str(kt_json_get_string(cond(st, "Ready"), "message"),
		"containers with unready status: [c]", "no readiness result: not ready");
	cJSON_Delete(st);

	line = tap_doc("{\"pod\":\"ns/p\",\"container\":\"c\",\"type\":\"readiness\","
		   "\"result\":\"warning\"}");
	tap_ok(kt_probe_results_add(pr, line, "r:1", &err) == 0,
	       "a warning line is taken");
	cJSON_Delete(line);
	st = kt_podstatus_compute(pod, &o, &err);
	tap_str(kt_json_get_string(cond(st, "Ready"), "status"), "True",
		"a warning counts as success, as the kubelet counts it");
	cJSON_Delete(st);

	line = tap_doc("{\"pod\":\"ns/p\",\"container\":\"x\",\"type\":\"startup\","
		   "\"result\":\"success\"}");
	kt_probe_results_add(pr, line, "r:2", &err);
	cJSON_Delete(line);
	st = kt_podstatus_compute(pod, &o, &err);
	tap_ok(!st && err.kind == KT_ERR_INPUT,
	       "a result for an unknown container is bad input");
	tap_str(err.msg,
		"r:2: container: pod 'ns/p' has no container 'x' that is probed "
		"(containers "
		"and sidecar init containers)",
		"its message names the line and the field");
	cJSON_Delete(st);

	line = tap_doc("{\"pod\":\"ns/p\",\"container\":\"c\",\"type\":\"readiness\"}");
	tap_ok(kt_probe_results_add(pr, line, "r:3", &err) < 0 &&
		       strcmp(err.msg, "result: missing") == 0,
	       "a line without a result is refused: result: missing");
	cJSON_Delete(line);
	tap_ok(kt_probe_results_prune(pr, pod) == 1, "prune drops the one result for 'x'");
	st = kt_podstatus_compute(pod, &o, &err);
	tap_str(kt_json_get_string(cond(st, "Ready"), "status"), "True",
		"and the pod's status is computed again from the rest");
	tap_ok(kt_probe_results_prune(pr, pod) == 0, "a second prune finds nothing");
	cJSON_Delete(st);
	cJSON_Delete(pod);
	kt_probe_results_free(pr);
}

/* the status manager keeps a condition's time while its status stays */
static void transition_times(void)
{
	struct kt_podstatus_opts o = { .now_us = NOW };
	struct kt_err err = { 0 };
	cJSON *pod = tap_doc(pod_text), *first, *second, *patch = NULL;
	char buf[40];

	first = kt_podstatus_compute(pod, &o, &err);
	o.current = first;
	o.now_us = LATER;
	second = kt_podstatus_compute(pod, &o, &err);
	tap_str(kt_json_get_string(cond(second, "Ready"), "lastTransitionTime"),
		kt_time_format(NOW, false, buf, sizeof(buf)),
		"an unchanged condition keeps its lastTransitionTime");
	tap_ok(kt_go_equal(first, second),
	       "the same input later gives the same status");
	tap_ok(kt_podstatus_patch(pod, first, second, &patch, &err) == 0,
	       "a patch is made");
	{
		char *text = kt_json_print(patch, KT_JSON_SORTED);

		tap_str(text, "{\"metadata\":{\"uid\":\"u\"}}\n",
			"the patch of an unchanged status is the uid alone");
		free(text);
	}
	cJSON_Delete(patch);
	cJSON_Delete(second);
	cJSON_Delete(first);
	cJSON_Delete(pod);
}

static void start_time(void)
{
	struct kt_podstatus_opts o = { .now_us = NOW };
	struct kt_err err = { 0 };
	cJSON *pod = tap_doc("{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}"), *st, *cs,
	      *reason;

	st = kt_podstatus_compute(pod, &o, &err);
	tap_str(kt_json_get_string(st, "startTime"), "2026-12-01T10:00:00Z",
		"a pod without a startTime gets the time of the run");
	cs = cJSON_GetArrayItem(kt_json_get(st, "containerStatuses"), 0);
	reason = kt_json_path(cs, "state.waiting.reason");
	tap_str(cJSON_IsString(reason) ? reason->valuestring : NULL, "ContainerCreating",
		"a container with no status waits in ContainerCreating");
	tap_ok(cJSON_IsFalse(kt_json_get(cs, "started")) &&
		       cJSON_IsFalse(kt_json_get(cs, "ready")),
	       "and is neither started nor ready");
	cJSON_Delete(st);
	cJSON_Delete(pod);
}

/* a node shutdown's kill status over a pod whose one container is in state st */
static cJSON *killed(const char *st, bool terminal, const cJSON *current)
{
	char text[1024];
	struct kt_err err = { 0 };
	cJSON *pod, *kill, *out;
	struct kt_podstatus_opts o = { .now_us = LATER, .terminal = terminal,
				       .current = current };

	snprintf(text, sizeof(text),
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
		 "\"spec\":{\"containers\":[{\"name\":\"c\"}]},\"status\":{"
		 "\"phase\":\"Running\",\"podIP\":\"10.0.0.1\",\"containerStatuses\":"
		 "[{\"name\":\"c\",\"state\":%s}]}}", st);
	pod = tap_doc(text);
	kill = tap_doc("{\"phase\":\"Failed\",\"reason\":\"Terminated\",\"message\":\"m\","
		       "\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":\"True\","
		       "\"reason\":\"TerminationByKubelet\",\"lastTransitionTime\":"
		       "\"2020-01-01T00:00:00Z\"},{\"type\":\"Other\",\"status\":\"True\"}]}");
	o.kill = kill;
	out = kt_podstatus_compute(pod, &o, &err);
	if (!out)
		printf("# %s\n", err.msg);
	cJSON_Delete(kill);
	cJSON_Delete(pod);
	return out;
}

static void kill_status(void)
{
	static const char *const running = "{\"running\":{}}",
				 *const failed = "{\"terminated\":{\"exitCode\":143}}",
				 *const done = "{\"terminated\":{\"exitCode\":0}}";
	struct kt_err err = { 0 };
	cJSON *st = killed(running, false, NULL), *again, *bad;
	char later[40];

	kt_time_format(LATER, false, later, sizeof(later));
	tap_ok(st && strcmp(kt_json_get_string(st, "phase"), "Running") == 0 &&
		       !kt_json_get(st, "reason") && !cond(st, "DisruptionTarget"),
	       "kill: not terminal yet, the kill changes nothing");
	cJSON_Delete(st);
	st = killed(failed, true, NULL);
	tap_str(kt_json_get_string(st, "reason"), "Terminated",
		"kill: terminal, the kill's reason goes with its phase");
	tap_str(kt_json_get_string(cond(st, "DisruptionTarget"), "lastTransitionTime"), later,
		"kill: its DisruptionTarget is new: the time is now, not the kill's");
	tap_ok(!cond(st, "Other"), "kill: a condition that is not the kubelet's to send is not");
	tap_str(kt_json_get_string(cond(st, "Ready"), "reason"), "PodFailed",
		"kill: Ready follows the kill's phase");
	again = killed(failed, true, st);
	tap_ok(again && kt_go_equal(st, again),
	       "kill: the same status again once the server has it");
	cJSON_Delete(again);
	cJSON_Delete(st);
	st = killed(done, true, NULL);
	tap_ok(st && strcmp(kt_json_get_string(st, "phase"), "Succeeded") == 0 &&
		       !kt_json_get(st, "reason") && cond(st, "DisruptionTarget"),
	       "kill: every container exited 0: Succeeded, no reason, the condition kept");
	cJSON_Delete(st);
	bad = tap_doc("{\"conditions\":[{\"type\":\"DisruptionTarget\",\"status\":1}]}");
	tap_ok(kt_podstatus_kill_check(bad, &err) < 0 && err.kind == KT_ERR_INPUT,
	       "kill: a condition's status that is no string is bad input");
	tap_str(err.msg, "conditions[0].status: expected a string, got a number",
		"kill: the message names the field");
	cJSON_Delete(bad);
}

/* what a pod stream gave: the Ready status of each status given, "dropped" */
static char stream_seen[512];

static int stream_give(const cJSON *pod, const cJSON *current, const cJSON *status, void *arg,
		       struct kt_err *err)
{
	size_t n = strlen(stream_seen);

	(void)pod;
	(void)arg;
	(void)err;
	snprintf(stream_seen + n, sizeof(stream_seen) - n, "%s%s ", current ? "again:" : "",
		 kt_json_get_string(cond(status, "Ready"), "status"));
	return 0;
}

static void stream_dropped(const struct kt_err *err, void *arg)
{
	size_t n = strlen(stream_seen);

	(void)err;
	(void)arg;
	snprintf(stream_seen + n, sizeof(stream_seen) - n, "dropped ");
}

static int feed(struct kt_podstream *ps, const char *text, struct kt_err *err)
{
	return kt_podstream_feed(ps, tap_doc(text), "s", err);
}

static void pod_stream(void)
{
	struct kt_probe_results *pr = kt_probe_results_new();
	struct kt_podstatus_opts o = { .now_us = NOW };
	struct kt_podstream *ps = kt_podstream_new(pr, &o, stream_give, stream_dropped, NULL);
	struct kt_err err = { 0 };
	const char *ready = "{\"pod\":\"ns/p\",\"container\":\"c\",\"type\":\"readiness\","
			    "\"result\":\"success\"}";

	stream_seen[0] = '\0';
	tap_ok(feed(ps, ready, &err) == 0 && !stream_seen[0],
	       "stream: a result for a pod not seen yet is kept, nothing given");
	tap_ok(feed(ps, pod_text, &err) == 0, "stream: a pod is taken");
	tap_ok(feed(ps, ready, &err) == 0, "stream: the same result again is taken");
	tap_ok(feed(ps, "{\"pod\":\"ns/p\",\"container\":\"c\",\"type\":\"readiness\","
			"\"result\":\"failure\"}", &err) == 0,
	       "stream: a changed result is taken");
	tap_ok(feed(ps, "{\"pod\":\"ns/p\",\"container\":\"x\",\"type\":\"startup\","
			"\"result\":\"success\"}", &err) == 0,
	       "stream: a result for a container the pod does not probe goes on");
	tap_str(stream_seen, "True again:False dropped ",
		"stream: a pod's status at once, again only when it changed, drops said");
	tap_ok(feed(ps, "{\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"ns\"}}", &err) < 0 &&
		       err.kind == KT_ERR_INPUT && strstr(err.msg, "metadata.name: missing"),
	       "stream: a pod without a name is bad input");
	kt_podstream_free(ps);
	kt_probe_results_free(pr);
}

int main(void)
{
	pod_stream();
	const char *src = getenv("KT_SRCDIR");
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s/tests/fixtures/pod-status", src ? src : ".");
	fixtures(dir);
	probe_results();
	transition_times();
	start_time();
	kill_status();
	return tap_done();
}
