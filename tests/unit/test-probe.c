/* SPDX-License-Identifier: Apache-2.0 */
/* test-probe: probe specs (defaults, validation) and the worker's thresholds, no clock */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "probe_int.h"
#include "tap.h"

static const char *container_json =
	"{\"name\":\"app\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080},"
	"{\"name\":\"grpc\",\"containerPort\":9090}],"
	"\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"$(A)-2\"},"
	"{\"name\":\"S\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}},"
	"{\"name\":\"A\",\"value\":\"3\"}]}";

/* parses text as a probe of type t; returns the error text or "" */
static const char *parse(const char *text, enum kt_probe_type t, struct kt_probe_spec *spec)
{
	static struct kt_err err;
	cJSON *probe = kt_json_parse("probe", text, strlen(text), &err);
	cJSON *container = kt_json_parse("container", container_json,
					 strlen(container_json), NULL);
	char kilo[1001], *kv = cJSON_GetObjectItemCaseSensitive(container, "env") ? kilo : NULL;
	cJSON *k = cJSON_CreateObject();

	/* K: a 1,000-byte value, for the bound on expansion */
	memset(kilo, 'k', 1000);
	kilo[1000] = '\0';
	cJSON_AddStringToObject(k, "name", "K");
	cJSON_AddStringToObject(k, "value", kv);
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(container, "env"), k);
	const char *field = t == KT_PROBE_LIVENESS ? "livenessProbe"
			    : t == KT_PROBE_READINESS ? "readinessProbe" : "startupProbe";
	int rc;

	memset(spec, 0, sizeof(*spec));
	if (!probe) {
		cJSON_Delete(container);
		return err.msg;
	}
	kt_err_clear(&err);
	rc = kt_probe_spec_parse(spec, probe, t, container, field, &err);
	cJSON_Delete(probe);
	cJSON_Delete(container);
	return rc < 0 ? err.msg : "";
}

static void test_defaults(void)
{
	struct kt_probe_spec s;

	tap_str(parse("{\"httpGet\":{\"port\":80}}", KT_PROBE_READINESS, &s), "",
		"defaults: a minimal httpGet parses");
	tap_ok(s.kind == KT_PROBE_HTTP && s.port == 80 && !s.https, "defaults: http port 80");
	tap_str(s.path, "/", "defaults: path is /");
	tap_ok(s.initial_delay_s == 0 && s.period_s == 10 && s.timeout_s == 1 &&
		       s.success_threshold == 1 && s.failure_threshold == 3,
	       "defaults: 0/10/1/1/3");
	kt_probe_spec_release(&s);

	tap_str(parse("{\"tcpSocket\":{\"port\":1},\"periodSeconds\":0,\"timeoutSeconds\":0,"
		      "\"successThreshold\":0,\"failureThreshold\":0,\"initialDelaySeconds\":7}",
		      KT_PROBE_LIVENESS, &s),
		"", "defaults: zeros are defaulted");
	tap_ok(s.period_s == 10 && s.timeout_s == 1 && s.success_threshold == 1 &&
		       s.failure_threshold == 3 && s.initial_delay_s == 7,
	       "defaults: zero means the default, initialDelaySeconds kept");
	kt_probe_spec_release(&s);

	tap_str(parse("{\"httpGet\":{\"port\":\"http\",\"scheme\":\"HTTPS\",\"path\":\"healthz\","
		      "\"httpHeaders\":[{\"name\":\"x-custom-THING\",\"value\":\"a\"},"
		      "{\"name\":\"Accept\",\"value\":\"\"}]}}",
		      KT_PROBE_READINESS, &s),
		"", "http: named port, scheme, headers");
	tap_ok(s.port == 8080 && s.https, "http: named port resolved to 8080 over https");
	tap_ok(s.nheaders == 2, "http: two headers kept in order");
	if (s.nheaders == 2) {
		tap_str(s.headers[0].name, "X-Custom-Thing", "http: header name canonical");
		tap_str(s.headers[1].value, "", "http: empty value kept");
	}
	kt_probe_spec_release(&s);

	tap_str(parse("{\"exec\":{\"command\":[\"true\",\"x\"]}}", KT_PROBE_STARTUP, &s), "",
		"exec: parses");
	tap_ok(s.argc == 2 && s.argv[2] == NULL && strcmp(s.argv[1], "x") == 0,
	       "exec: argv NULL-terminated");
	kt_probe_spec_release(&s);

	tap_str(parse("{\"exec\":{\"command\":[\"$(A)\",\"$(B)\",\"$$(A)\",\"$(S)\",\"$(C)\","
		      "\"x$(\",\"a$b$\",\"$$$$\"]}}",
		      KT_PROBE_READINESS, &s),
		"", "exec: $(VAR) expansion parses");
	if (s.argc == 8) {
		tap_str(s.argv[0], "3", "expand: the last definition wins");
		tap_str(s.argv[1], "$(A)-2", "expand: a value is not expanded itself (no chains)");
		tap_str(s.argv[2], "$(A)", "expand: $$ escapes");
		tap_str(s.argv[3], "", "expand: a valueFrom entry maps to its empty value");
		tap_str(s.argv[4], "$(C)", "expand: undefined left as written");
		tap_str(s.argv[5], "x$(", "expand: unclosed left as written");
		tap_str(s.argv[6], "a$b$", "expand: a lone $ stays");
		tap_str(s.argv[7], "$$", "expand: $$$$ is $$");
	} else {
		tap_ok(false, "expand: eight arguments");
	}
	kt_probe_spec_release(&s);

	{
		/* 1,100 references to a 1,000-byte value: over the bound */
		char *big = malloc(1100 * 4 + 64), *p = big;

		p += snprintf(p, 64, "{\"exec\":{\"command\":[\"");
		for (int i = 0; i < 1100; i++)
			p += snprintf(p, 8, "$(K)");
		snprintf(p, 16, "\"]}}");
		tap_str(parse(big, KT_PROBE_READINESS, &s),
			"readinessProbe.exec.command: Too long: with $(VAR) expanded, must have "
			"at most 1048576 bytes", "expand: the expanded command is bounded");
		kt_probe_spec_release(&s);
		free(big);
	}

	tap_str(parse("{\"grpc\":{\"port\":9090,\"service\":\"db\"}}", KT_PROBE_LIVENESS, &s), "",
		"grpc: parses");
	tap_ok(s.kind == KT_PROBE_GRPC && s.port == 9090, "grpc: port");
	tap_str(s.service, "db", "grpc: service");
	kt_probe_spec_release(&s);

	tap_str(parse("{\"tcpSocket\":{\"port\":1},\"terminationGracePeriodSeconds\":5}",
		      KT_PROBE_LIVENESS, &s),
		"", "grace: allowed on liveness");
	tap_ok(s.has_grace && s.grace_s == 5, "grace: kept");
	kt_probe_spec_release(&s);
}

static const struct bad_case {
	const char *probe;
	enum kt_probe_type type;
	const char *msg;
} bad_cases[] = {
	{ "{}", KT_PROBE_READINESS, "readinessProbe: Required value: must specify a handler type" },
	{ "{\"exec\":{\"command\":[\"true\"]},\"httpGet\":{\"port\":1}}", KT_PROBE_READINESS,
	  "readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type" },
	{ "{\"tcpSocket\":{\"port\":1},\"periodSeconds\":-1}", KT_PROBE_READINESS,
	  "readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0" },
	{ "{\"tcpSocket\":{\"port\":0}}", KT_PROBE_READINESS,
	  "readinessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive" },
	{ "{\"tcpSocket\":{\"port\":70000}}", KT_PROBE_READINESS,
	  "readinessProbe.tcpSocket.port: Invalid value: 70000: must be between 1 and 65535, inclusive" },
	{ "{\"httpGet\":{\"port\":\"metrics\"}}", KT_PROBE_READINESS,
	  "readinessProbe.httpGet.port: Not found: \"metrics\"" },
	{ "{\"httpGet\":{\"port\":80,\"scheme\":\"FTP\"}}", KT_PROBE_READINESS,
	  "readinessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"" },
	{ "{\"httpGet\":{\"port\":80,\"httpHeaders\":[{\"value\":\"x\"}]}}", KT_PROBE_READINESS,
	  "readinessProbe.httpGet.httpHeaders[0].name: Invalid value: \"\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name')" },
	{ "{\"tcpSocket\":{\"port\":1},\"successThreshold\":2}", KT_PROBE_LIVENESS,
	  "livenessProbe.successThreshold: Invalid value: 2: must be 1" },
	{ "{\"tcpSocket\":{\"port\":1},\"successThreshold\":2}", KT_PROBE_STARTUP,
	  "startupProbe.successThreshold: Invalid value: 2: must be 1" },
	{ "{\"tcpSocket\":{\"port\":1},\"terminationGracePeriodSeconds\":3}", KT_PROBE_READINESS,
	  "readinessProbe.terminationGracePeriodSeconds: Forbidden: must not be set for readinessProbes" },
	{ "{\"tcpSocket\":{\"port\":1},\"terminationGracePeriodSeconds\":0}", KT_PROBE_LIVENESS,
	  "livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0" },
	{ "{\"exec\":{\"command\":[]}}", KT_PROBE_READINESS,
	  "readinessProbe.exec.command: Required value" },
	{ "{\"exec\":{\"command\":[\"a\",1]}}", KT_PROBE_READINESS,
	  "readinessProbe.exec.command[1]: Invalid value: 1: must be a string" },
	{ "{\"grpc\":{\"port\":\"grpc\"}}", KT_PROBE_READINESS,
	  "readinessProbe.grpc.port: Invalid value: \"grpc\": must be an integer" },
	{ "{\"tcpSocket\":{}}", KT_PROBE_READINESS, "readinessProbe.tcpSocket.port: Required value" },
	{ "{\"tcpSocket\":{\"port\":\"Http\"}}", KT_PROBE_READINESS,
	  "readinessProbe.tcpSocket.port: Invalid value: \"Http\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)" },
	{ "{\"tcpSocket\":{\"port\":1},\"timeoutSeconds\":1.5}", KT_PROBE_READINESS,
	  "readinessProbe.timeoutSeconds: Invalid value: 1.5: must be an integer" },
	{ "{\"tcpSocket\":{\"port\":1},\"failureThreshold\":3000000000}", KT_PROBE_READINESS,
	  "readinessProbe.failureThreshold: Invalid value: 3000000000: must be no more than 2147483647" },
	{ "[]", KT_PROBE_READINESS, "readinessProbe: Invalid value: must be an object" },
};

static void test_bad(void)
{
	char name[96];

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct kt_probe_spec s;

		snprintf(name, sizeof(name), "invalid %zu: %.60s", i, bad_cases[i].probe);
		tap_str(parse(bad_cases[i].probe, bad_cases[i].type, &s), bad_cases[i].msg, name);
		tap_ok(s.kind == KT_PROBE_NONE && s.path == NULL, "invalid: spec left released");
	}
}

/* feeds a string of results (S success, W warning, F failure, U unknown) and
 * returns the reported value after each, as letters, '-' while unchanged */
static void feed(struct kt_probe_state *st, const char *in, char *out)
{
	for (; *in; in++, out++) {
		enum kt_probe_result r = *in == 'S' ? KT_PROBE_SUCCESS
					 : *in == 'W' ? KT_PROBE_WARNING
					 : *in == 'F' ? KT_PROBE_FAILURE : KT_PROBE_UNKNOWN;
		unsigned m = kt_probe_state_feed(st, r);

		*out = !(m & KT_PROBE_FEED_CHANGED) ? '-'
		       : st->reported == KT_PROBE_SUCCESS ? 'S' : 'F';
	}
	*out = '\0';
}

static void test_thresholds(void)
{
	struct kt_probe_spec spec = { .type = KT_PROBE_READINESS, .success_threshold = 2,
				      .failure_threshold = 3 };
	struct kt_probe_state st;
	char out[64];

	kt_probe_state_init(&st, &spec);
	tap_ok(st.reported == KT_PROBE_FAILURE && !st.settled,
	       "readiness starts as failure, not settled");
	feed(&st, "SFSSFFSFFF", out);
	tap_str(out, "---S-----F", "readiness: success after 2 in a row, failure after 3");
	feed(&st, "UUUSUS", out);
	tap_str(out, "-----S", "readiness: unknown neither counts nor breaks a run");
	feed(&st, "WW", out);
	tap_str(out, "--", "readiness: warnings count as success");

	spec.type = KT_PROBE_LIVENESS;
	spec.success_threshold = 1;
	kt_probe_state_init(&st, &spec);
	tap_ok(st.reported == KT_PROBE_SUCCESS, "liveness starts as success");
	feed(&st, "S", out);
	tap_ok(st.settled && out[0] == '-', "liveness: first success sets without a change");
	feed(&st, "FFSFFF", out);
	tap_str(out, "-----F", "liveness: failure after 3 in a row");
	tap_ok(st.on_hold && st.run == 0, "liveness: failure holds the worker");
	feed(&st, "SSS", out);
	tap_str(out, "---", "liveness: nothing counts on hold");
	tap_ok(!kt_probe_state_due(&st, &spec, 100000, true), "liveness: not due on hold");

	spec.type = KT_PROBE_STARTUP;
	spec.failure_threshold = 1;
	kt_probe_state_init(&st, &spec);
	tap_ok(st.reported == KT_PROBE_UNKNOWN, "startup starts as unknown");
	feed(&st, "S", out);
	tap_str(out, "S", "startup: success reported");
	spec.initial_delay_s = 5;
	tap_ok(!kt_probe_state_due(&st, &spec, 0, false), "due: initial delay not yet past");
	tap_ok(!kt_probe_state_due(&st, &spec, 4999, false), "due: whole seconds count");
	tap_ok(kt_probe_state_due(&st, &spec, 5000, false), "due: startup runs while not started");
	tap_ok(!kt_probe_state_due(&st, &spec, 5000, true), "due: startup skips once started");
	spec.type = KT_PROBE_READINESS;
	kt_probe_state_init(&st, &spec);
	tap_ok(!kt_probe_state_due(&st, &spec, 5000, false), "due: readiness gated by startup");
	tap_ok(kt_probe_state_due(&st, &spec, 5000, true), "due: readiness after start");
	feed(&st, "FFFFFF", out);
	tap_ok(!st.on_hold, "readiness never holds");
}

static void test_names(void)
{
	enum kt_probe_type t;

	tap_str(kt_probe_result_name(KT_PROBE_WARNING), "warning", "names: warning");
	tap_str(kt_probe_type_name(KT_PROBE_STARTUP), "startup", "names: startup");
	tap_ok(kt_probe_type_parse("readiness", &t) == 0 && t == KT_PROBE_READINESS,
	       "names: readiness parses");
	tap_ok(kt_probe_type_parse("Readiness", &t) < 0, "names: case matters");
}

struct seen {
	int calls;
	enum kt_probe_result result;
	int tries;
	char output[128];
};

static void on_done(struct kt_loop *loop, const struct kt_probe_outcome *o, void *arg)
{
	struct seen *s = arg;

	s->calls++;
	s->result = o->result;
	s->tries = o->tries;
	snprintf(s->output, sizeof(s->output), "%.*s", (int)o->output_len, o->output);
}

/* one probe of text on a fresh loop, run to the end */
static void run_probe(const char *text, struct seen *s)
{
	struct kt_probe_spec spec;
	struct kt_loop *loop = kt_loop_new(NULL);

	memset(s, 0, sizeof(*s));
	if (!loop || parse(text, KT_PROBE_READINESS, &spec)[0] != '\0') {
		kt_loop_free(loop);
		return;
	}
	if (kt_probe_start(loop, &spec, NULL, on_done, s, NULL))
		kt_loop_run(loop, NULL);
	kt_loop_free(loop);
	kt_probe_spec_release(&spec);
}

static void test_on_loop(void)
{
	struct seen s;

	run_probe("{\"exec\":{\"command\":[\"sh\",\"-c\",\"printf hi\"]}}", &s);
	tap_ok(s.calls == 1 && s.result == KT_PROBE_SUCCESS && s.tries == 1,
	       "loop: exec success, called once");
	tap_str(s.output, "hi", "loop: exec output");
	run_probe("{\"exec\":{\"command\":[\"false\"]}}", &s);
	tap_ok(s.calls == 1 && s.result == KT_PROBE_FAILURE, "loop: exec failure");
	run_probe("{\"exec\":{\"command\":[\"/no/such/program\"]}}", &s);
	tap_ok(s.calls == 1 && s.result == KT_PROBE_UNKNOWN && s.tries == 3,
	       "loop: exec that cannot start: unknown after 3 tries");
	run_probe("{\"tcpSocket\":{\"port\":1}}", &s);
	tap_ok(s.calls == 1 && s.result == KT_PROBE_FAILURE && s.tries == 1,
	       "loop: tcp to a closed port fails, not retried");
	tap_str(s.output, "dial tcp 127.0.0.1:1: connect: connection refused",
		"loop: tcp failure message");
	run_probe("{\"httpGet\":{\"port\":1,\"host\":\"127.0.0.1\"}}", &s);
	tap_ok(s.calls == 1 && s.result == KT_PROBE_FAILURE, "loop: http to a closed port fails");
}

/* a call cancelled at once never reports, and its command is reaped */
static void test_cancel(void)
{
	struct kt_probe_spec spec;
	struct kt_loop *loop = kt_loop_new(NULL);
	struct kt_probe_call *call;
	struct seen s = { 0 };

	if (parse("{\"exec\":{\"command\":[\"sleep\",\"5\"]}}", KT_PROBE_READINESS, &spec)[0]) {
		kt_loop_free(loop);
		return;
	}
	call = kt_probe_start(loop, &spec, NULL, on_done, &s, NULL);
	kt_probe_cancel(call);
	kt_loop_run(loop, NULL);
	tap_ok(s.calls == 0, "cancel: the callback is not called");
	kt_loop_free(loop);
	kt_probe_spec_release(&spec);
}

static void test_grpc_timeout(void)
{
	static const struct {
		int64_t ms;
		const char *want;
	} rows[] = { { 0, "0n" }, { 99, "99000000n" }, { 100, "100000u" }, { 1000, "1000000u" },
		     { 99999, "99999000u" }, { 100000, "100000m" }, { 100000000, "100000S" },
		     { 2147483647000LL, "35791395M" } };
	char buf[32], name[80];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		kt_probe_grpc_timeout(buf, sizeof(buf), rows[i].ms);
		snprintf(name, sizeof(name), "grpc-timeout: %lld ms is %s", (long long)rows[i].ms,
			 rows[i].want);
		tap_str(buf, rows[i].want, name);
	}
}

int main(void)
{
	test_grpc_timeout();
	test_defaults();
	test_bad();
	test_thresholds();
	test_names();
	test_on_loop();
	test_cancel();
	return tap_done();
}
