/* SPDX-License-Identifier: Apache-2.0 */
/* test-api: the API client, blocking and on the loop, against a tiny local HTTP server */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

static int port;
static pid_t server_pid;

/* ------------------------------------------------------------- the server */

struct hits {
	char path[64];
	int n;
};

static int hit(struct hits *h, size_t cap, const char *path)
{
	for (size_t i = 0; i < cap; i++) {
		if (!h[i].path[0])
			snprintf(h[i].path, sizeof(h[i].path), "%s", path);
		if (!strcmp(h[i].path, path))
			return ++h[i].n;
	}
	return 0;
}

static void reply(int fd, const char *status, const char *type, const char *extra,
		  const char *body)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n",
			 status, type, strlen(body), extra);

	if (write(fd, head, (size_t)n) < 0 || write(fd, body, strlen(body)) < 0)
		return;
}

static const char notfound[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	"\"message\":\"nodes \\\"x\\\" not found\",\"reason\":\"NotFound\","
	"\"code\":404}";
static const char conflict[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
	"\"message\":\"the object has been modified\",\"reason\":\"Conflict\","
	"\"code\":409}";

static void serve_one(int fd, struct hits *h)
{
	char req[16384], method[16] = "", path[64] = "", body[512];
	size_t len = 0;
	ssize_t r;
	char *end = NULL, *cl;
	long want = 0;
	int n;

	while (len < sizeof(req) - 1) {
		r = read(fd, req + len, sizeof(req) - 1 - len);
		if (r <= 0)
			return;
		len += (size_t)r;
		req[len] = '\0';
		end = strstr(req, "\r\n\r\n");
		if (!end)
			continue;
		cl = strcasestr(req, "Content-Length:");
		want = cl ? strtol(cl + 15, NULL, 10) : 0;
		if ((long)(len - (size_t)(end + 4 - req)) >= want)
			break;
	}
	if (!end || sscanf(req, "%15s %63s", method, path) != 2)
		return;
	/* the route is the path without its query (writes carry ?fieldManager=) */
	if (strchr(path, '?'))
		*strchr(path, '?') = '\0';
	n = hit(h, 32, path);
	if (!strcmp(path, "/ok")) {
		reply(fd, "200 OK", "application/json", "",
		      "{\"kind\":\"Thing\",\"big\":12345678901234567890}");
	} else if (!strcmp(path, "/notfound")) {
		reply(fd, "404 Not Found", "application/json", "", notfound);
	} else if (!strcmp(path, "/conflict")) {
		reply(fd, "409 Conflict", "application/json", "", conflict);
	} else if (!strncmp(path, "/flaky", 6) && n % 2 == 1) {
		reply(fd, "503 Service Unavailable", "application/json",
		      "Retry-After: 0\r\n", "{}");
	} else if (!strcmp(path, "/dated") && n % 2 == 1) {
		/* a 501 is retried only when the server says when: here as a
		 * date already past, which means now */
		reply(fd, "501 Not Implemented", "application/json",
		      "Retry-After: Wed, 21 Oct 2015 07:28:00 GMT\r\n", "{}");
	} else if (!strcmp(path, "/undated")) {
		reply(fd, "501 Not Implemented", "application/json", "", "{}");
	} else if (!strncmp(path, "/backoff", 8) && n % 2 == 1) {
		reply(fd, "500 Internal Server Error", "text/plain", "", "oops");
	} else if (!strcmp(path, "/always503")) {
		reply(fd, "503 Service Unavailable", "text/plain", "", "busy");
	} else if (!strcmp(path, "/text")) {
		reply(fd, "200 OK", "text/plain", "", "hello");
	} else if (!strcmp(path, "/echo")) {
		const char *ct = strcasestr(req, "Content-Type: ");
		char type[64] = "";

		if (ct)
			sscanf(ct + 14, "%63[^\r]", type);
		snprintf(body, sizeof(body),
			 "{\"method\":\"%s\",\"type\":\"%s\",\"len\":%ld,"
			 "\"auth\":%s}",
			 method, type, want,
			 strstr(req, "Authorization: Bearer sekrit") ? "true" : "false");
		reply(fd, "200 OK", "application/json", "", body);
	} else if (!strcmp(path, "/watch")) {
		static const char w[] =
			"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			"Connection: close\r\n\r\n"
			"{\"type\":\"ADDED\",\"n\":1}\n{\"type\":\"MODIFIED\",\"n\":2}\n"
			"\n{\"type\":\"DELETED\",\"n\":3}";

		if (write(fd, w, sizeof(w) - 1) < 0)
			return;
	} else {
		reply(fd, "200 OK", "application/json", "", "{\"kind\":\"Other\"}");
	}
}

static void server_start(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int lfd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 128) < 0 || getsockname(lfd, (struct sockaddr *)&sa, &len) < 0)
		abort();
	port = ntohs(sa.sin_port);
	server_pid = fork();
	if (server_pid == 0) {
		static struct hits h[32];
		int devnull = open("/dev/null", O_WRONLY);

		/* never outlive the test, never hold its output open */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(0);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}

		for (;;) {
			int c = accept(lfd, NULL, NULL);

			if (c < 0)
				continue;
			serve_one(c, h);
			close(c);
		}
	}
	close(lfd);
}

/* a port where nothing listens: bound, never listening */
static int dead_port(int *fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(*fd, (struct sockaddr *)&sa, &len) < 0)
		abort();
	return ntohs(sa.sin_port);
}

/* -------------------------------------------------------------- blocking */

static struct kt_api *client(int p, int64_t timeout_ms)
{
	char url[64];
	struct kt_api_opts o = { .server = url,
				 .token = "sekrit",
				 .timeout_set = timeout_ms > 0,
				 .timeout_ms = timeout_ms };
	struct kt_err err = { 0 };
	struct kt_api *api;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", p);
	api = kt_api_open(&o, &err);
	if (!api) {
		printf("# %s\n", err.msg);
		abort();
	}
	return api;
}

static const struct retry_case {
	const char *method, *path;
	unsigned flags;
	long status; /* the failing reply it ends with, 0: it succeeds */
	int attempts;
	const char *what;
} retries[] = {
	{ "GET", "/flaky-get", 0, 0, 2, "503 with Retry-After on GET: retried, succeeds" },
	{ "GET", "/dated", 0, 0, 2, "501 with an HTTP-date Retry-After: retried, succeeds" },
	{ "GET", "/undated", 0, 501, 1, "501 without Retry-After: not retried" },
	{ "GET", "/backoff-get", 0, 0, 2, "500 without Retry-After: retried after backoff" },
	{ "POST", "/flaky-post", 0, 503, 1, "503 on POST: not retried" },
	{ "PATCH", "/flaky-patch", KT_API_PRECONDITION, 0, 2,
	  "503 on PATCH with a precondition: retried" },
};

static int get(struct kt_api *api, const char *method, const char *path, unsigned flags,
	       struct kt_api_resp *resp, struct kt_err *err)
{
	struct kt_api_req req = { .method = method, .path = path, .flags = flags };

	if (strcmp(method, "GET")) {
		req.body = "{}";
		req.body_len = 2;
	}
	kt_err_clear(err);
	return kt_api_do(api, &req, resp, err);
}

static void test_blocking(void)
{
	struct kt_api *api = client(port, 0);
	struct kt_api_resp resp = { 0 };
	struct kt_err err = { 0 };
	char want[256];
	char *text;
	int rc;

	rc = get(api, "GET", "/ok", 0, &resp, &err);
	text = resp.json ? kt_json_print(resp.json, 0) : NULL;
	tap_ok(rc == 0 && resp.status == 200 && resp.attempts == 1, "GET 200");
	tap_str(text, "{\"kind\":\"Thing\",\"big\":12345678901234567890}\n",
		"GET: body parsed with exact numbers");
	free(text);
	kt_api_resp_release(&resp);

	rc = get(api, "GET", "/notfound", 0, &resp, &err);
	tap_str(rc < 0 ? err.msg : "(ok)", "GET /notfound: 404 Not Found: nodes \"x\" not found",
		"404: the request, the status and the Status message");
	tap_ok(err.kind == KT_ERR_NOTFOUND && err.http_status == 404 &&
		       resp.status == 404 && resp.attempts == 1,
	       "404: kind NOTFOUND, http_status, not retried");
	kt_api_resp_release(&resp);

	rc = get(api, "PUT", "/conflict", 0, &resp, &err);
	tap_ok(rc < 0 && err.kind == KT_ERR_CONFLICT && err.http_status == 409 &&
		       resp.attempts == 1,
	       "409: kind CONFLICT, never retried");
	kt_api_resp_release(&resp);

	/* who is retried: the status, Retry-After, and whether the verb may be */
	for (size_t i = 0; i < sizeof(retries) / sizeof(retries[0]); i++) {
		const struct retry_case *t = &retries[i];

		rc = get(api, t->method, t->path, t->flags, &resp, &err);
		tap_ok((t->status ? rc < 0 && resp.status == t->status : rc == 0) &&
			       resp.attempts == t->attempts,
		       t->what);
		kt_api_resp_release(&resp);
	}

	rc = get(api, "GET", "/text", 0, &resp, &err);
	snprintf(want, sizeof(want),
		 "GET http://127.0.0.1:%d/text: response is not JSON "
		 "(Content-Type: text/plain)",
		 port);
	tap_str(rc < 0 ? err.msg : "(ok)", want,
		"2xx that is not JSON: error naming the URL");
	kt_api_resp_release(&resp);

	rc = get(api, "GET", "/text", KT_API_RAW, &resp, &err);
	tap_ok(rc == 0 && resp.body && !strcmp(resp.body, "hello") && !resp.json,
	       "KT_API_RAW keeps the body as it is");
	kt_api_resp_release(&resp);
	kt_api_close(api);

	api = client(port, 700);
	rc = get(api, "GET", "/always503", 0, &resp, &err);
	snprintf(want, sizeof(want), "GET /always503: 503 Service Unavailable");
	tap_str(rc < 0 ? err.msg : "(ok)", want,
		"always 503: the last reply once time is up");
	/* 700 ms of retries; left unbounded they would go on for 10 attempts and
	 * several seconds, so 3.5 s leaves room for a loaded machine */
	tap_ok(resp.attempts > 2 && resp.elapsed_ms < 3500,
	       "always 503: retried within the request timeout");
	kt_api_resp_release(&resp);
	kt_api_close(api);
}

static int on_line(const char *line, size_t len, void *arg);

static void test_refused(void)
{
	int fd, p = dead_port(&fd);
	struct kt_api *api = client(p, 400);
	struct kt_api_resp resp = { 0 };
	struct kt_err err = { 0 };
	char want[128];
	int rc = get(api, "GET", "/ok", 0, &resp, &err);

	snprintf(want, sizeof(want), "GET http://127.0.0.1:%d/ok: ", p);
	tap_ok(rc < 0 && !strncmp(err.msg, want, strlen(want)) && err.http_status == 0 &&
		       resp.attempts > 1,
	       "refused connection: retried, then an error naming the URL");
	if (rc == 0 || strncmp(err.msg, want, strlen(want)))
		printf("# %s\n", err.msg);
	kt_api_resp_release(&resp);
	kt_api_close(api);

	/* issue 16 item 5: without a timeout a one-shot still gives up at once */
	api = client(p, 0);
	rc = get(api, "GET", "/ok", 0, &resp, &err);
	snprintf(want, sizeof(want), " attempts in ");
	/* the retries stop after 1.5 s; without that rule they would go on for
	 * 10 attempts and about 20 s: 5 s leaves room for a loaded machine */
	tap_ok(rc < 0 && resp.elapsed_ms < 5000 && strstr(err.msg, "Connection refused (") &&
		       strstr(err.msg, want),
	       "refused connection, no timeout: an error at once (1.5 s of retries) with the attempts");
	printf("# %s\n", err.msg);
	kt_api_resp_release(&resp);
	kt_api_close(api);
	/* 4 s: the backoff (at most 100+200+400+800+1600 ms) then surely makes
	 * a 6th attempt, past 1.5 s */
	api = client(p, 4000);
	rc = get(api, "GET", "/ok", KT_API_PERSIST, &resp, &err);
	tap_ok(rc < 0 && resp.elapsed_ms >= 1500,
	       "refused connection with KT_API_PERSIST: retried for the whole timeout");
	kt_api_resp_release(&resp);
	kt_api_close(api);
	{
		struct kt_api_req watch = { .method = "GET", .path = "/w", .on_line = on_line };

		api = client(p, 4000);
		rc = kt_api_do(api, &watch, &resp, &err);
		tap_ok(rc < 0 && resp.elapsed_ms >= 1500,
		       "refused connection on a watch: it keeps waiting, as a loop does");
		kt_api_resp_release(&resp);
		kt_api_close(api);
	}
	close(fd);
}

static void test_json(void)
{
	struct kt_api *api = client(port, 0);
	struct kt_err err = { 0 };
	cJSON *body = cJSON_CreateObject(), *out;
	char *text;

	cJSON_AddStringToObject(body, "a", "b");
	out = kt_api_json(api, "POST", "/echo", body, NULL, 0, &err);
	text = out ? kt_json_print(out, 0) : NULL;
	tap_str(text,
		"{\"method\":\"POST\",\"type\":\"application/json\",\"len\":9,\"auth\":true}\n",
		"kt_api_json: compact body, Content-Type, bearer token");
	free(text);
	cJSON_Delete(out);
	out = kt_api_json(api, "PATCH", "/echo", body, "application/merge-patch+json", 0,
			  &err);
	tap_str(kt_json_get_string(out, "type"), "application/merge-patch+json",
		"kt_api_json: content type given");
	cJSON_Delete(out);
	cJSON_Delete(body);
	kt_api_close(api);
}

/* ----------------------------------------------------------------- async */

static int done_ok, done_notfound, done_other;

static void on_done(struct kt_api_call *call, struct kt_api_resp *resp,
		    const struct kt_err *err, void *arg)
{
	if (!err && resp->json &&
	    !strcmp(kt_json_get_string(resp->json, "kind"), "Thing"))
		done_ok++;
	else if (err && err->kind == KT_ERR_NOTFOUND && resp->status == 404)
		done_notfound++;
	else
		done_other++;
}

static int lines;
static char line_types[64];

static int on_line(const char *line, size_t len, void *arg)
{
	cJSON *doc = cJSON_ParseWithLength(line, len);
	const char *t = kt_json_get_string(doc, "type");

	lines++;
	if (t) {
		size_t l = strlen(line_types);

		snprintf(line_types + l, sizeof(line_types) - l, "%s%c", t, ',');
	}
	cJSON_Delete(doc);
	return 0;
}

static void test_async(void)
{
	struct kt_api *api = client(port, 0);
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	struct kt_api_req ok = { .method = "GET", .path = "/ok" };
	struct kt_api_req nf = { .method = "GET", .path = "/notfound" };
	struct kt_api_req flaky = { .method = "GET", .path = "/backoff-async" };
	struct kt_api_req watch = { .method = "GET",
				    .path = "/watch",
				    .on_line = on_line };
	struct kt_api_call *c;
	bool started = true;

	for (int i = 0; i < 20; i++)
		started = started && kt_api_start(api, loop, &ok, on_done, NULL, &err);
	started = started && kt_api_start(api, loop, &nf, on_done, NULL, &err);
	started = started && kt_api_start(api, loop, &flaky, on_done, NULL, &err);
	started = started && kt_api_start(api, loop, &watch, on_done, NULL, &err);
	c = kt_api_start(api, loop, &ok, on_done, NULL, &err);
	kt_api_cancel(c);
	tap_ok(started && c, "async: 24 calls started");
	tap_ok(kt_loop_run(loop, &err) == 0, "async: loop runs until all have ended");
	tap_ok(done_ok == 20, "async: 20 replies of 200 with their documents");
	tap_ok(done_notfound == 1, "async: a 404 with its error");
	tap_ok(done_other == 2,
	       "async: the retried call and the watch ended without error");
	tap_ok(lines == 3,
	       "async: a streamed reply comes line by line, blank lines skipped");
	tap_str(line_types, "ADDED,MODIFIED,DELETED,",
		"async: lines in order, last unterminated");
	kt_api_close(api);
	kt_loop_free(loop);
}

static int many_ok, many_bad;

static void on_many(struct kt_api_call *call, struct kt_api_resp *resp,
		    const struct kt_err *err, void *arg)
{
	if (!err && resp->status == 200)
		many_ok++;
	else
		many_bad++;
}

/* a fleet: many calls queued on few connections, all answered */
static void test_many(void)
{
	struct kt_api *api = client(port, 0);
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	struct kt_api_req ok = { .method = "GET", .path = "/ok" };
	int started = 0;

	curl_multi_setopt(kt_loop_multi(loop), CURLMOPT_MAX_HOST_CONNECTIONS, 16L);
	for (int i = 0; i < 1000; i++)
		started += kt_api_start(api, loop, &ok, on_many, NULL, &err) != NULL;
	kt_loop_run(loop, &err);
	tap_ok(started == 1000 && many_ok == 1000 && many_bad == 0,
	       "async: 1000 calls over at most 16 connections all answered");
	kt_api_close(api);
	kt_loop_free(loop);
}

/* ---------------------------------------------------------- the framing */

struct got_lines {
	int n;
	char last[64];
};

static int count_line(const char *line, size_t len, void *arg)
{
	struct got_lines *g = arg;

	g->n++;
	snprintf(g->last, sizeof(g->last), "%.*s", (int)len, line);
	return 0;
}

/* one line of n bytes fed as a hostile server frames it, a byte per
 * fragment, then a short line; returns the bytes the splitter searched */
static uint64_t split_work(size_t n, struct got_lines *g)
{
	struct kt_api_split s = { 0 };
	struct kt_sb buf = { 0 };
	const char *tail = "\n{\"b\":1}\n";
	size_t used;

	for (size_t i = 0; i < n + strlen(tail); i++) {
		char c = i < n ? 'x' : tail[i - n];

		kt_sb_put(&buf, &c, 1);
		if (kt_api_split_lines(&s, buf.buf, buf.len, false, count_line, g, &used) < 0)
			break;
		memmove(buf.buf, buf.buf + used, buf.len - used);
		kt_sb_trunc(&buf, buf.len - used);
	}
	kt_sb_release(&buf);
	return s.work;
}

static void test_split(void)
{
	struct got_lines g = { 0 }, g10 = { 0 };
	struct kt_api_split s = { 0 };
	const char *two = "{\"a\":1}\n\n{\"a\":2}";
	uint64_t w = split_work(4096, &g), w10 = split_work(40960, &g10);
	size_t used;

	tap_ok(g.n == 2 && g10.n == 2 && !strcmp(g10.last, "{\"b\":1}"),
	       "split: a line sent a byte at a time arrives whole");
	if (!tap_ok(w10 <= 11 * w, "split: ten times the bytes a byte at a time cost at "
				   "most eleven times the search"))
		printf("# searched %llu bytes for 4 KiB, %llu for 40 KiB\n",
		       (unsigned long long)w, (unsigned long long)w10);
	g = (struct got_lines){ 0 };
	kt_api_split_lines(&s, two, strlen(two), false, count_line, &g, &used);
	tap_ok(g.n == 1 && used == 9, "split: an empty line is skipped, the pending one kept");
	kt_api_split_lines(&s, two + used, strlen(two) - used, true, count_line, &g, &used);
	tap_ok(g.n == 2 && !strcmp(g.last, "{\"a\":2}") && used == 7,
	       "split: the end hands over a last line without newline");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	unsetenv("KUBECONFIG");
	unsetenv("HOME");
	server_start();
	test_blocking();
	test_refused();
	test_json();
	test_async();
	test_many();
	test_split();
	kill(server_pid, SIGTERM);
	waitpid(server_pid, NULL, 0);
	return tap_done();
}
