/* SPDX-License-Identifier: Apache-2.0 */
/* test-podworker: the pod worker state machine through lib, with a clock the events carry */
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

#define T0 1767225600000000LL	/* 2026-01-01T00:00:00Z */

/* one event; the result (caller frees) or NULL with the message in err */
static cJSON *step(struct kt_podworker *pw, const char *ev, int64_t now, struct kt_err *err)
{
	cJSON *e = tap_doc(ev), *res = NULL;

	if (e && kt_podworker_step(pw, e, now, &res, err) < 0)
		res = NULL;
	cJSON_Delete(e);
	return res;
}

static const char *str_at(const cJSON *o, const char *path)
{
	cJSON *v = kt_json_path(o, path);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool bool_at(const cJSON *o, const char *path)
{
	return cJSON_IsTrue(kt_json_path(o, path));
}

static char *podj(char *buf, size_t n, const char *uid, const char *extra_md, bool is_static)
{
	snprintf(buf, n,
		 "{\"metadata\":{\"uid\":\"%s\",\"name\":\"pod1\",\"namespace\":\"test1\"%s%s},"
		 "\"spec\":{\"terminationGracePeriodSeconds\":30}}",
		 uid, extra_md,
		 is_static ? ",\"annotations\":{\"kubernetes.io/config.source\":\"file\"}" : "");
	return buf;
}

/* an event's work, or "-" for null, "!" for an error */
static const char *work_of(struct kt_podworker *pw, const char *ev, int64_t now)
{
	static char w[32];
	struct kt_err err = { 0 };
	cJSON *res = step(pw, ev, now, &err);

	if (!res)
		return "!";
	snprintf(w, sizeof(w), "%s", str_at(res, "work") ? str_at(res, "work") : "-");
	cJSON_Delete(res);
	return w;
}

/* an update event's work, as work_of */
static const char *update_work(struct kt_podworker *pw, const char *type, const char *uid,
			       bool is_static, int64_t now)
{
	char pod[512], ev[1024];

	podj(pod, sizeof(pod), uid, "", is_static);
	snprintf(ev, sizeof(ev), "{\"op\":\"update\",\"updateType\":\"%s\",\"pod\":%s}", type, pod);
	return work_of(pw, ev, now);
}

/* a complete event's work, as work_of */
static const char *complete(struct kt_podworker *pw, const char *uid, const char *work,
			    int64_t now)
{
	char ev[256];

	snprintf(ev, sizeof(ev), "{\"op\":\"complete\",\"uid\":\"%s\",\"work\":\"%s\",\"result\":\"ok\"}",
		 uid, work);
	return work_of(pw, ev, now);
}

static void test_grace(void)
{
	static const struct {
		const char *pod;
		bool has;
		int64_t ovr, cur, want;
		bool shortened;
		const char *name;
	} cases[] = {
		{ "{\"spec\":{\"terminationGracePeriodSeconds\":30}}", false, 0, 0, 30, false,
		  "grace: the spec's 30" },
		{ "{\"metadata\":{\"deletionGracePeriodSeconds\":5},\"spec\":{\"terminationGracePeriodSeconds\":30}}",
		  false, 0, 0, 5, false, "grace: the deletion grace 5 wins over the spec" },
		{ "{\"metadata\":{\"deletionGracePeriodSeconds\":5},\"spec\":{\"terminationGracePeriodSeconds\":30}}",
		  true, 2, 0, 2, false, "grace: an override 2 below the deletion grace" },
		{ "{\"metadata\":{\"deletionGracePeriodSeconds\":0},\"spec\":{\"terminationGracePeriodSeconds\":30}}",
		  false, 0, 0, 1, false, "grace: a deletion grace of 0 gives 1" },
		{ "{\"metadata\":{\"deletionGracePeriodSeconds\":5},\"spec\":{\"terminationGracePeriodSeconds\":30}}",
		  true, 0, 0, 1, false, "grace: an override of 0 gives 1" },
		{ "{\"spec\":{\"terminationGracePeriodSeconds\":30}}", true, 45, 20, 20, false,
		  "grace: never grows" },
		{ "{\"spec\":{\"terminationGracePeriodSeconds\":30}}", true, 10, 20, 10, true,
		  "grace: shrinks and says so" },
		{ "{\"metadata\":{}}", false, 0, 0, 1, false, "grace: a pod with no spec is given 1" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *pod = tap_doc(cases[i].pod);
		bool sh = !cases[i].shortened;
		int64_t g = kt_podworker_effective_grace(cases[i].cur, pod, cases[i].has,
							 cases[i].ovr, &sh);

		tap_ok(g == cases[i].want && sh == cases[i].shortened, cases[i].name);
		cJSON_Delete(pod);
	}
}

static void test_static(void)
{
	cJSON *a = tap_doc("{\"metadata\":{\"annotations\":{\"kubernetes.io/config.source\":\"file\"}}}");
	cJSON *b = tap_doc("{\"metadata\":{\"annotations\":{\"kubernetes.io/config.source\":\"api\"}}}");
	cJSON *c = tap_doc("{\"metadata\":{}}");

	tap_ok(kt_podworker_is_static(a) && !kt_podworker_is_static(b) &&
		       !kt_podworker_is_static(c),
	       "static: a config.source other than api");
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
}

/* Test_allowPodStart through events: who may start under one full name */
static void test_allow_start(void)
{
	/* op: an update's type, or "complete" with the work that completed */
	static const struct {
		const char *op, *uid;
		bool is_static;
		const char *work, *want, *name;
	} steps[] = {
		{ "create", "s1", true, NULL, "sync", "a static pod alone starts" },
		{ "create", "n1", false, NULL, "sync",
		  "a non-static pod starts beside a started static one" },
		{ "create", "s2", true, NULL, "-", "a second static pod of the name waits" },
		{ "create", "s3", true, NULL, "-", "a third one waits too" },
		{ "complete", "s1", true, "sync", "-", "s1 synced" },
		{ "update", "s1", true, NULL, "sync", "the started one keeps running" },
		{ "complete", "s1", true, "sync", "-", "s1 synced again" },
		{ "update", "s3", true, NULL, "-", "second in line is refused" },
		{ "kill", "s1", true, NULL, "terminating", "s1 killed" },
		{ "complete", "s1", true, "terminating", "terminated", "s1 terminated" },
		{ "update", "s3", true, NULL, "-", "s1 holds the name until its cleanup is done" },
		{ "complete", "s1", true, "terminated", "-", "s1 finished" },
		{ "update", "s3", true, NULL, "-", "s2 is still first in line" },
		{ "kill", "s2", true, NULL, "-", "a waiting pod killed never starts" },
		{ "update", "s3", true, NULL, "sync", "the terminated ones are skipped" },
	};
	struct kt_podworker *pw = kt_podworker_new();
	char name[128];

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const char *got = strcmp(steps[i].op, "complete") == 0
					  ? complete(pw, steps[i].uid, steps[i].work, T0)
					  : update_work(pw, steps[i].op, steps[i].uid,
							steps[i].is_static, T0);

		snprintf(name, sizeof(name), "allowPodStart: %s", steps[i].name);
		tap_str(got, steps[i].want, name);
	}
	kt_podworker_free(pw);
}

static void test_queries(void)
{
	struct kt_podworker *pw = kt_podworker_new();
	struct kt_err err = { 0 };
	cJSON *r = step(pw, "{\"op\":\"query\",\"uid\":\"x\"}", T0, &err);

	tap_ok(r && bool_at(r, "queries.couldHaveRunningContainers") &&
		       !bool_at(r, "queries.shouldPodContentBeRemoved") &&
		       cJSON_IsNull(kt_json_get(r, "state")),
	       "queries: an unknown UID before housekeeping may still run");
	cJSON_Delete(r);
	cJSON_Delete(step(pw, "{\"op\":\"sync-known-pods\",\"uids\":[]}", T0, &err));
	r = step(pw, "{\"op\":\"query\",\"uid\":\"x\"}", T0, &err);
	tap_ok(r && !bool_at(r, "queries.couldHaveRunningContainers") &&
		       bool_at(r, "queries.shouldPodContentBeRemoved") &&
		       bool_at(r, "queries.shouldPodBeFinished") &&
		       !bool_at(r, "queries.isPodTerminationRequested"),
	       "queries: an unknown UID after housekeeping is gone");
	cJSON_Delete(r);
	r = step(pw, "{\"op\":\"query\"}", T0, &err);
	tap_ok(!r && err.kind == KT_ERR_INPUT && err.about == KT_ERR_ABOUT_EVENT &&
		       !strcmp(err.msg + err.detail, "'uid' must be a non-empty string"),
	       "a bad event: about the event, the detail after its subject");
	kt_podworker_free(pw);
}

/* the text keeps untouched pods byte for byte and round-trips */
static void test_text(void)
{
	struct kt_podworker *pw = kt_podworker_new(), *back = NULL;
	struct kt_err err = { 0 };
	char *t1 = NULL, *t2 = NULL, *t3 = NULL, *copy;
	size_t n1 = 0, n2 = 0, n3 = 0;
	cJSON *p;

	update_work(pw, "create", "a", false, T0 + 1500000);
	update_work(pw, "create", "b", false, T0 + 2000000);
	kt_podworker_text(pw, &t1, &n1, &err);
	copy = malloc(n1 + 1);
	memcpy(copy, t1, n1 + 1);
	back = kt_podworker_take_text("state", copy, n1, &err);
	tap_ok(back && kt_podworker_count(back) == 2, "text: two pods read back");
	tap_ok(back && kt_podworker_text(back, &t2, &n2, &err) == 0 && n2 == n1 &&
		       memcmp(t1, t2, n1) == 0,
	       "text: written again unchanged");
	p = back ? kt_podworker_pod(back, "a", &err) : NULL;
	tap_str(str_at(p, "syncedAt"), "2026-01-01T00:00:01.500000Z",
		"text: times keep their fraction");
	cJSON_Delete(p);
	tap_str(back ? complete(back, "b", "sync", T0 + 3000000) : NULL, "-",
		"text: a stored pod's work completes");
	kt_podworker_text(back, &t3, &n3, &err);
	tap_ok(t3 && strstr(t3, "\"runningWork\":null") && strstr(t3, "\"runningWork\":\"sync\""),
	       "text: only the touched pod changed");
	free(t1);
	free(t2);
	free(t3);
	kt_podworker_free(back);
	kt_podworker_free(pw);
}

/* a pod of the given priority, created and synced */
static void running_pod(struct kt_podworker *pw, const char *uid, int prio, int64_t now)
{
	char ev[512];

	snprintf(ev, sizeof(ev),
		 "{\"op\":\"update\",\"updateType\":\"create\",\"pod\":{\"metadata\":"
		 "{\"uid\":\"%s\",\"name\":\"%s\",\"namespace\":\"ns\"},\"spec\":"
		 "{\"terminationGracePeriodSeconds\":30,\"priority\":%d}}}",
		 uid, uid, prio);
	work_of(pw, ev, now);
	complete(pw, uid, "sync", now);
}

/* "shutdown state: uid,uid deadline; ..." of a shutdown step's result */
static const char *shutdown_of(const cJSON *res)
{
	static char buf[256];
	const cJSON *g, *p;
	size_t n;

	snprintf(buf, sizeof(buf), "%s:", res ? kt_json_get_string(res, "shutdown") : "!");
	cJSON_ArrayForEach (g, kt_json_get(res, "groups")) {
		n = strlen(buf);
		snprintf(buf + n, sizeof(buf) - n, " %s", kt_json_get_string(g, "deadline"));
		cJSON_ArrayForEach (p, kt_json_get(g, "pods")) {
			n = strlen(buf);
			snprintf(buf + n, sizeof(buf) - n, " %s", kt_json_get_string(p, "uid"));
		}
	}
	return buf;
}

static const char *shutdown_step(struct kt_podworker **pw, const char *ev, int64_t now,
				 bool reload)
{
	struct kt_err err = { 0 };
	cJSON *res = step(*pw, ev, now, &err);
	const char *s = shutdown_of(res);
	char *text = NULL;
	size_t len = 0;

	cJSON_Delete(res);
	if (reload && kt_podworker_text(*pw, &text, &len, &err) == 0) {
		kt_podworker_free(*pw);
		*pw = kt_podworker_take_text("state", text, len, &err);
	}
	return s;
}

static void test_shutdown_order(void)
{
	static const char *const shutdown =
		"{\"op\":\"node-shutdown\",\"shutdownSlackSeconds\":1,"
		"\"shutdownGracePeriodByPodPriority\":[{\"priority\":0,"
		"\"shutdownGracePeriodSeconds\":10},{\"priority\":100,"
		"\"shutdownGracePeriodSeconds\":5},{\"priority\":200,"
		"\"shutdownGracePeriodSeconds\":5}]}";
	static const char *const tick = "{\"op\":\"tick\"}";
	struct kt_podworker *pw = kt_podworker_new();
	char ev[256];
	struct kt_err err = { 0 };
	cJSON *res;

	running_pod(pw, "a", 0, T0);
	running_pod(pw, "b", 0, T0);
	running_pod(pw, "c", 100, T0);
	running_pod(pw, "d", 300, T0);
	tap_str(shutdown_step(&pw, shutdown, T0 + 10000000, true),
		"running: 2026-01-01T00:00:21Z a b",
		"shutdown: the lowest group only, its deadline its grace plus the slack");
	tap_ok(pw != NULL, "shutdown: the state under way is read back");
	tap_str(shutdown_step(&pw, tick, T0 + 20000000, true), "running:",
		"shutdown: before the deadline a tick starts nothing");
	snprintf(ev, sizeof(ev), "{\"op\":\"complete\",\"uid\":\"a\",\"work\":"
				 "\"terminating\",\"result\":\"ok\"}");
	tap_str(shutdown_step(&pw, ev, T0 + 20000000, false), "running:",
		"shutdown: one kill of two done starts nothing");
	tap_str(shutdown_step(&pw, tick, T0 + 21000000, true),
		"running: 2026-01-01T00:00:27Z c",
		"shutdown: at the deadline the next group starts, b still dying");
	snprintf(ev, sizeof(ev), "{\"op\":\"complete\",\"uid\":\"c\",\"work\":"
				 "\"terminating\",\"result\":\"ok\"}");
	tap_str(shutdown_step(&pw, ev, T0 + 22000000, true),
		"running: 2026-01-01T00:00:28Z d",
		"shutdown: its last kill done starts the next: a pod above the top group is in it");
	snprintf(ev, sizeof(ev), "{\"op\":\"complete\",\"uid\":\"d\",\"work\":"
				 "\"terminating\",\"result\":\"ok\"}");
	tap_str(shutdown_step(&pw, ev, T0 + 23000000, false), "done:",
		"shutdown: the last group's kills done: done");
	tap_str(shutdown_step(&pw, tick, T0 + 24000000, false), "(null):",
		"shutdown: then a tick says nothing");
	res = step(pw, shutdown, T0 + 25000000, &err);
	tap_str(shutdown_of(res), "running: 2026-01-01T00:00:36Z b",
		"shutdown: once done, another may run: b, still dying, is killed again");
	cJSON_Delete(res);
	kt_podworker_free(pw);
}

static void test_damaged(void)
{
	static const char *const texts[] = {
		"{\"kind\":\"Pod\"}\n",
		"{\"kind\":\"PodWorkerState\",\"version\":1,\"startedStaticPodsByFullname\":{},"
		"\"waitingToStartStaticPodsByFullname\":{}}\nnot json\n",
		"{\"kind\":\"PodWorkerState\",\"version\":1,\"startedStaticPodsByFullname\":{},"
		"\"waitingToStartStaticPodsByFullname\":{}}\n{\"uid\":\"a\"}\n{\"uid\":\"a\"}\n",
	};
	struct kt_err err = { 0 };
	struct kt_podworker *pw;
	cJSON *r;
	char *buf;

	for (size_t i = 0; i < 3; i++) {
		buf = strdup(texts[i]);
		pw = kt_podworker_take_text("s", buf, strlen(texts[i]), &err);
		tap_ok(!pw && err.kind == KT_ERR_INPUT, "damaged: refused at load");
		kt_podworker_free(pw);
	}
	buf = strdup("{\"kind\":\"PodWorkerState\",\"version\":1,\"startedStaticPodsByFullname\":{},"
		     "\"waitingToStartStaticPodsByFullname\":{}}\n{\"uid\":\"a\",\"fullname\":7}\n");
	pw = kt_podworker_take_text("s", buf, strlen(buf), &err);
	tap_ok(pw && !kt_podworker_damaged(pw), "damaged: a bad pod line loads lazily");
	r = pw ? step(pw, "{\"op\":\"query\",\"uid\":\"a\"}", T0, &err) : NULL;
	tap_ok(!r && kt_podworker_damaged(pw) && err.kind == KT_ERR_INPUT,
	       "damaged: found when the pod is touched");
	tap_str(err.msg, "s:2: 'fullname' must be a string", "damaged: the message names the line");
	cJSON_Delete(r);
	kt_podworker_free(pw);
}

/* a refused event changes nothing */
static void test_atomic(void)
{
	struct kt_podworker *pw = kt_podworker_new();
	struct kt_err err = { 0 };
	char *t1 = NULL, *t2 = NULL;
	size_t n1 = 0, n2 = 0;
	cJSON *r;

	update_work(pw, "create", "a", false, T0);
	kt_podworker_text(pw, &t1, &n1, &err);
	r = step(pw,
		 "{\"op\":\"update\",\"updateType\":\"kill\",\"pod\":{\"metadata\":{\"uid\":\"a\"}},"
		 "\"killPodOptions\":{\"gracePeriodSecondsOverride\":-1}}",
		 T0, &err);
	kt_podworker_text(pw, &t2, &n2, &err);
	tap_ok(!r && n1 == n2 && memcmp(t1, t2, n1) == 0, "atomic: a negative grace changes nothing");
	free(t1);
	free(t2);
	kt_podworker_free(pw);
}

/* a source over pod lines kept in memory, counting what is asked of it */
struct mem_src {
	char *lines[8];
	size_t n, gets, nexts;
};

static int mem_get(void *ctx, const char *uid, char **text, size_t *len, char **where,
		   struct kt_err *err)
{
	struct mem_src *m = ctx;
	char lead[64];

	(void)err;
	m->gets++;
	snprintf(lead, sizeof(lead), "{\"uid\":\"%s\",", uid);
	for (size_t i = 0; i < m->n; i++) {
		if (m->lines[i] && strncmp(m->lines[i], lead, strlen(lead)) == 0) {
			*text = strdup(m->lines[i]);
			*len = strlen(*text);
			*where = strdup("mem");
			return 1;
		}
	}
	return 0;
}

static int mem_next(void *ctx, void **cursor, char **text, size_t *len, char **where,
		    struct kt_err *err)
{
	struct mem_src *m = ctx;
	size_t i = (size_t)(uintptr_t)*cursor;

	(void)err;
	if (!text)
		return 0;
	m->nexts++;
	while (i < m->n && !m->lines[i])
		i++;
	if (i == m->n)
		return 0;
	*cursor = (void *)(uintptr_t)(i + 1);
	*text = strdup(m->lines[i]);
	*len = strlen(*text);
	*where = strdup("mem");
	return 1;
}

/* the source's lines replaced by what the state hands out as changed */
static int mem_change(void *ctx, const char *uid, const char *text, size_t len,
		      struct kt_err *err)
{
	struct mem_src *m = ctx;
	char lead[64];
	size_t i;

	(void)len;
	(void)err;
	snprintf(lead, sizeof(lead), "{\"uid\":\"%s\",", uid);
	for (i = 0; i < m->n; i++)
		if (m->lines[i] && strncmp(m->lines[i], lead, strlen(lead)) == 0)
			break;
	if (i == m->n)
		m->n++;
	free(m->lines[i]);
	m->lines[i] = text ? strdup(text) : NULL;
	return 0;
}

static struct kt_podworker *mem_state(struct mem_src *m, const char *node)
{
	struct kt_podworker_source src = { mem_get, mem_next, m };
	struct kt_err err = { 0 };
	struct kt_podworker *pw = kt_podworker_load("node", node, strlen(node), &err);

	if (pw)
		kt_podworker_set_source(pw, &src);
	return pw;
}

/* with a source, a state reads only the pods an event names, writes only those changed */
static void test_source(void)
{
	struct mem_src m = { 0 };
	struct kt_err err = { 0 };
	struct kt_podworker *pw = mem_state(&m, ""), *back;
	char *node = NULL, keys[16];
	size_t len;
	cJSON *r;

	update_work(pw, "create", "c", false, T0);
	update_work(pw, "create", "a", false, T0);
	update_work(pw, "create", "b", false, T0);
	kt_podworker_changes(pw, mem_change, &m, &err);
	tap_ok(m.n == 3 && m.gets == 3 && m.nexts == 0,
	       "source: three new pods, each asked for once");
	kt_podworker_node_text(pw, &node, &len, &err);
	kt_podworker_free(pw);
	back = mem_state(&m, node);
	m.gets = 0;
	tap_str(complete(back, "a", "sync", T0 + 1000000), "-",
		"source: a stored pod completes");
	tap_ok(m.gets == 1 && m.nexts == 0 && kt_podworker_count(back) == 1,
	       "source: only that pod was read");
	free(m.lines[1]);
	m.lines[1] = strdup("{\"uid\":\"a\",\"fullname\":\"x\"}\n");
	kt_podworker_changes(back, mem_change, &m, &err);
	tap_ok(strstr(m.lines[1], "\"seq\":1") && strstr(m.lines[1], "\"runningWork\":null"),
	       "source: the changed pod is handed out, with its place");
	r = step(back, "{\"op\":\"sync-known-pods\",\"uids\":[\"a\",\"b\"]}", T0, &err);
	keys[0] = '\0';
	for (cJSON *w = r ? kt_json_get(r, "workers")->child : NULL; w; w = w->next)
		strcat(keys, w->string);
	tap_str(keys, "cab",
		"source: sync-known-pods visits every pod in order of first sighting");
	tap_ok(m.nexts == 4, "source: read through the source's walk");
	cJSON_Delete(r);
	free(node);
	kt_podworker_free(back);
	for (size_t i = 0; i < m.n; i++)
		free(m.lines[i]);
}

int main(void)
{
	test_grace();
	test_static();
	test_allow_start();
	test_queries();
	test_text();
	test_shutdown_order();
	test_damaged();
	test_atomic();
	test_source();
	return tap_done();
}
