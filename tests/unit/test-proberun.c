/* SPDX-License-Identifier: Apache-2.0 */
/* test-proberun: probe-run's runs against real sockets: once, watch, until ready, served */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

/* what a run said: "result" lines and "problem" lines, in order */
struct said {
	char text[4096];
	int results, progress, problems;
};

/* "a b\n" said */
static void add(struct said *s, const char *a, const char *b)
{
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%s %s\n", a, b);
}

static int on_result(const struct kt_prober_target *t, enum kt_probe_type type,
		     enum kt_probe_result r, const char *output, size_t len, bool stopped,
		     void *arg)
{
	struct said *s = arg;

	(void)t;
	(void)output;
	(void)len;
	s->results++;
	add(s, kt_probe_type_name(type),
	    stopped ? "stopped" : kt_probe_result_name(r));
	return 0;
}

static void on_progress(const struct kt_prober_report *r, void *arg)
{
	(void)r;
	((struct said *)arg)->progress++;
}

static void on_problem(const char *msg, void *arg)
{
	struct said *s = arg;

	s->problems++;
	add(s, "problem:", msg);
}

static const struct kt_proberun_ops ops = { on_result, on_progress, on_problem };

/* two ports on 127.0.0.1: one listening (connects succeed), one bound only (refused) */
static int up, down;

/* a TCP port on 127.0.0.1: listening (connects succeed) or bound only (refused) */
static int port_of(bool listening, int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (listening && listen(*fd, 64) < 0) ||
	    getsockname(*fd, (struct sockaddr *)&sa, &len) < 0) {
		printf("Bail out! no socket\n");
		exit(1);
	}
	return ntohs(sa.sin_port);
}

/* runs one bare tcpSocket probe of port, with more fields, of type in mode */
static int run_probe(enum kt_proberun_mode mode, const char *more, int port,
		     enum kt_probe_type type, int64_t timeout_ms, struct said *s)
{
	struct kt_proberun_opts o = { .mode = mode, .timeout_ms = timeout_ms };
	struct kt_err err = { 0 };
	struct kt_proberun *r = kt_proberun_new(&o, &ops, s, &err);
	char text[512];
	cJSON *probe;
	int status = -1;

	memset(s, 0, sizeof(*s));
	snprintf(text, sizeof(text), "{\"tcpSocket\":{\"port\":%d}%s}", port, more);
	probe = cJSON_Parse(text);
	if (r && probe &&
	    kt_prober_add_probe(kt_proberun_prober(r), probe, type, "127.0.0.1", "probe", &err) > 0)
		status = kt_proberun_run(r, &err);
	if (status < 0)
		printf("# %s\n", err.msg);
	cJSON_Delete(probe);
	kt_proberun_free(r);
	return status;
}

static void test_once(void)
{
	struct said s;

	tap_ok(run_probe(KT_PROBERUN_ONCE, "", up,
			 KT_PROBE_READINESS, 0, &s) == 0,
	       "once: a probe that succeeds exits 0");
	tap_str(s.text, "readiness success\n", "once: one final line, its result");
	tap_ok(run_probe(KT_PROBERUN_ONCE, "", down,
			 KT_PROBE_READINESS, 0, &s) == 1,
	       "once: a probe that fails exits 1");
	tap_str(s.text, "readiness failure\n", "once: its final line says failure");
}

static void test_until_ready(void)
{
	struct said s;

	tap_ok(run_probe(KT_PROBERUN_UNTIL_READY, "", up,
			 KT_PROBE_READINESS, 0, &s) == 0,
	       "until ready: a readiness probe that succeeds ends it with 0");
	tap_ok(s.progress == 1 && s.problems == 0, "until ready: one progress line, no problem");
	tap_str(s.text, "readiness success\n", "until ready: the final line");
	tap_ok(run_probe(KT_PROBERUN_UNTIL_READY,
			 ",\"failureThreshold\":1", down,
			 KT_PROBE_LIVENESS, 0, &s) == 1,
	       "until ready: a liveness probe that fails ends it with 1");
	tap_ok(s.problems == 1 && strstr(s.text, "liveness failure\nproblem: liveness probe failed"),
	       "until ready: the final line, then why");
	tap_ok(run_probe(KT_PROBERUN_UNTIL_READY,
			 ",\"periodSeconds\":3600", down,
			 KT_PROBE_READINESS, 200, &s) == 1,
	       "until ready: the timeout ends it with 1");
	tap_ok(strstr(s.text, "problem: not ready after 200ms") != NULL,
	       "until ready: saying why, with the timeout");
}

static void test_watch(void)
{
	struct said s;

	tap_ok(run_probe(KT_PROBERUN_WATCH, ",\"failureThreshold\":1",
			 down, KT_PROBE_LIVENESS, 0, &s) == 1,
	       "watch: ends with 1 when every probe is held");
	tap_str(s.text, "liveness success\nliveness failure\n",
		"watch: the initial value, then the change");
}

/* a served run reading the given lines */
static int serve(const char *input, struct said *s)
{
	struct kt_prober_filter f = { 0 };
	struct kt_proberun_opts o = {
		.mode = KT_PROBERUN_SERVE, .max_line = 64, .filter = &f
	};
	struct kt_err err = { 0 };
	struct kt_proberun *r;
	int p[2], status = -1;

	memset(s, 0, sizeof(*s));
	if (pipe(p) < 0 || write(p[1], input, strlen(input)) != (ssize_t)strlen(input))
		return -1;
	close(p[1]);
	o.in_fd = p[0];
	r = kt_proberun_new(&o, &ops, s, &err);
	if (r)
		status = kt_proberun_run(r, &err);
	kt_proberun_free(r);
	close(p[0]);
	return status;
}

static void test_serve(void)
{
	struct said s;
	char longline[200];

	tap_ok(serve("\n{\"op\":\"stop\",\"uid\":\"none\"}\n", &s) == 0 && s.problems == 0,
	       "serve: good commands and the end of input exit 0");
	memset(longline, 'x', sizeof(longline) - 2);
	longline[sizeof(longline) - 2] = '\n';
	longline[sizeof(longline) - 1] = '\0';
	tap_ok(serve(longline, &s) == 2, "serve: a line over the limit exits 2 at the end");
	tap_str(s.text, "problem: <stdin>:1: a line longer than --max-input (64 bytes)\n",
		"serve: and says which line");
	tap_ok(serve("\n{\"op\":1}\n\n", &s) == 2 && s.problems == 1 &&
		       !strncmp(s.text, "problem: <stdin>:2", 18),
	       "serve: a bad command is said with its line, the rest go on");
}

int main(void)
{
	int fu, fd;

	up = port_of(true, &fu);
	down = port_of(false, &fd);
	test_once();
	test_until_ready();
	test_watch();
	test_serve();
	close(fu);
	close(fd);
	return tap_done();
}
