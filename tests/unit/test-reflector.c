/* SPDX-License-Identifier: Apache-2.0 */
/* test-reflector: the reflector's steps, its re-list difference, backoff and driver */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

/* what the reflector reported, "TYPE key rv" a line */
static char seen[4096];

static int record(const char *type, const cJSON *obj, void *arg)
{
	const cJSON *meta = kt_json_get_object(obj, "metadata");
	const char *name = kt_json_get_string(meta, "name");
	const char *rv = kt_json_get_string(meta, "resourceVersion");
	size_t n = strlen(seen);

	(void)arg;
	snprintf(seen + n, sizeof(seen) - n, "%s %s %s\n", type, name ? name : "-",
		 rv ? rv : "-");
	return 0;
}

static int stop_at_second(const char *type, const cJSON *obj, void *arg)
{
	int *count = arg;

	(void)type;
	(void)obj;
	return ++*count >= 2 ? -1 : 0;
}

/* a pod as a list item (no kind, no apiVersion) */
static char *pod(char *buf, size_t size, const char *name, const char *uid,
		 const char *rv)
{
	snprintf(buf, size,
		 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\","
		 "\"resourceVersion\":\"%s\"}}",
		 name, uid, rv);
	return buf;
}

/* feeds a PodList of the given items (JSON texts joined by commas) */
static enum kt_refl_next list(struct kt_refl *r, const char *rv, const char *items,
			      const char *cont, int64_t now, int64_t *delay)
{
	char text[4096];
	cJSON *doc;
	struct kt_err err = { 0 };
	struct kt_refl_reply reply = { .status = 200 };
	enum kt_refl_next next;

	snprintf(text, sizeof(text),
		 "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":"
		 "{\"resourceVersion\":\"%s\"%s%s%s},\"items\":[%s]}",
		 rv, cont ? ",\"continue\":\"" : "", cont ? cont : "", cont ? "\"" : "",
		 items);
	/* as the client parses a reply: numbers exact */
	doc = kt_json_parse("list", text, strlen(text), &err);
	reply.json = doc;
	next = kt_refl_list_reply(r, &reply, now, delay);
	cJSON_Delete(doc);
	return next;
}

static int line(struct kt_refl *r, const char *type, const char *obj)
{
	char text[2048];

	snprintf(text, sizeof(text), "{\"type\":\"%s\",\"object\":%s}", type, obj);
	return kt_refl_watch_line(r, text, strlen(text));
}

static const char *path_of(struct kt_refl *r, int64_t now)
{
	static struct kt_refl_req req;
	struct kt_err err = { 0 };

	if (kt_refl_request(r, now, &req, &err) < 0)
		return "(error)";
	return req.path;
}

static void test_first_list_and_watch(void)
{
	struct kt_refl_opts o = { .path = "/api/v1/pods?labelSelector=app%3Dweb",
				  .watch_timeout_s = 60 };
	struct kt_refl r;
	struct kt_refl_reply end = { .status = 200 };
	char a[256], b[256], items[600];
	int64_t delay = -1;

	seen[0] = '\0';
	kt_refl_init(&r, &o, record, NULL, 1, NULL);
	tap_str(path_of(&r, 0), "/api/v1/pods?labelSelector=app%3Dweb&limit=500",
		"the first list: the path's query, then limit");
	snprintf(items, sizeof(items), "%s,%s", pod(a, sizeof(a), "a", "u1", "5"),
		 pod(b, sizeof(b), "b", "u2", "6"));
	tap_ok(list(&r, "10", items, NULL, 0, &delay) == KT_REFL_SEND && delay == 0,
	       "a complete list: send the watch now");
	tap_str(seen, "ADDED a 5\nADDED b 6\n", "each item ADDED, in the list's order");
	tap_str(path_of(&r, 0),
		"/api/v1/pods?labelSelector=app%3Dweb&watch=1&resourceVersion=10"
		"&allowWatchBookmarks=true&timeoutSeconds=60",
		"the watch: from the list's resourceVersion, with bookmarks and the "
		"timeout");
	seen[0] = '\0';
	tap_ok(line(&r, "MODIFIED",
		    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
		    "\"a\","
		    "\"namespace\":\"ns\",\"uid\":\"u1\",\"resourceVersion\":\"11\"}}") ==
		       0,
	       "an event goes on");
	tap_ok(line(&r, "MODIFIED",
		    "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
		    "\"a\","
		    "\"namespace\":\"ns\",\"uid\":\"u1\",\"resourceVersion\":\"11\"}}") ==
		       0,
	       "the same version again goes on");
	tap_ok(line(&r, "BOOKMARK",
		    "{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"15\"}}") == 0,
	       "a bookmark goes on");
	tap_str(seen, "MODIFIED a 11\n", "the repeat and the bookmark are not reported");
	tap_str(kt_refl_resource_version(&r), "15",
		"the bookmark moved the resourceVersion");
	tap_ok(kt_refl_watch_end(&r, &end, 5000, &delay) == KT_REFL_SEND && delay == 0,
	       "a watch the server ended: resume at once");
	tap_ok(strstr(path_of(&r, 5000), "&resourceVersion=15&") != NULL,
	       "the resume starts from the bookmark's resourceVersion");
	end.status = 0;
	end.error = "connection refused";
	tap_ok(kt_refl_watch_end(&r, &end, 5100, &delay) == KT_REFL_WAIT &&
		       delay >= 800 && delay <= 1600,
	       "a watch that failed at once: wait 800 ms plus jitter");
	tap_ok(r.step == KT_REFL_WATCH, "... then watch again, not list");
	kt_refl_release(&r);
}

/* a store of a, b, c; then a re-list: a changed, b gone, c replaced, d new */
static void test_relist_difference(void)
{
	struct kt_refl_opts o = { .path = "/api/v1/pods", .watch_timeout_s = 60 };
	struct kt_refl r;
	struct kt_refl_reply end = { .status = 200 };
	char p1[256], p2[256], p3[256], items[900];
	int64_t delay;
	size_t n;
	struct kt_refl_obj *const *objs;

	kt_refl_init(&r, &o, record, NULL, 7, NULL);
	snprintf(items, sizeof(items), "%s,%s,%s", pod(p1, sizeof(p1), "a", "u1", "5"),
		 pod(p2, sizeof(p2), "b", "u2", "6"),
		 pod(p3, sizeof(p3), "c", "u3", "7"));
	list(&r, "8", items, NULL, 0, &delay);
	path_of(&r, 0);
	seen[0] = '\0';
	tap_ok(line(&r, "ERROR",
		    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		    "\"message\":\"too old resource version: 8 "
		    "(9)\",\"reason\":\"Expired\","
		    "\"code\":410}") < 0,
	       "an ERROR event ends the watch");
	tap_ok(kt_refl_watch_end(&r, &end, 100, &delay) == KT_REFL_WAIT &&
		       r.step == KT_REFL_LIST,
	       "410 as an ERROR event: list again after the backoff");
	tap_str(path_of(&r, 2000), "/api/v1/pods?limit=500",
		"the re-list asks for the latest");
	snprintf(items, sizeof(items), "%s,%s,%s,%s",
		 pod(p1, sizeof(p1), "c", "u4", "12"),
		 "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\","
		 "\"resourceVersion\":\"9\"}}",
		 pod(p2, sizeof(p2), "d", "u5", "13"),
		 pod(p3, sizeof(p3), "e", "u6", "5"));
	/* e has the resourceVersion a had: it is still new */
	tap_ok(list(&r, "14", items, NULL, 2100, &delay) == KT_REFL_SEND,
	       "the re-list completes");
	tap_str(seen,
		"DELETED b 6\nDELETED c 7\nADDED c 12\nMODIFIED a 9\nADDED d 13\nADDED e "
		"5\n",
		"gone and replaced first, as last reported; then the list's order");
	objs = kt_refl_objects(&r, &n);
	tap_ok(r.live == 4, "four objects kept");
	{
		char order[200] = "";

		for (size_t i = 0; i < n; i++)
			if (objs[i]) {
				strcat(order, objs[i]->key);
				strcat(order, " ");
			}
		tap_str(order, "ns/c ns/a ns/d ns/e ",
			"the store follows the list's order");
	}
	seen[0] = '\0';
	path_of(&r, 2100);
	tap_ok(list(&r, "15", items, NULL, 2200, &delay) == KT_REFL_SEND && !seen[0],
	       "an unchanged re-list reports nothing");
	kt_refl_release(&r);
}

static void test_pages(void)
{
	struct kt_refl_opts o = { .path = "/api/v1/pods", .page_size = 2 };
	struct kt_refl r;
	struct kt_refl_reply gone = { .status = 410, .error = "continue expired" };
	char p1[256], p2[256], items[600];
	int64_t delay;

	seen[0] = '\0';
	kt_refl_init(&r, &o, record, NULL, 3, NULL);
	tap_str(path_of(&r, 0), "/api/v1/pods?limit=2", "a page size of 2");
	snprintf(items, sizeof(items), "%s,%s", pod(p1, sizeof(p1), "a", "u1", "3"),
		 pod(p2, sizeof(p2), "b", "u2", "4"));
	tap_ok(list(&r, "9", items, "tok/en=", 0, &delay) == KT_REFL_SEND && !seen[0],
	       "a first page: nothing reported yet, ask for the next");
	tap_str(path_of(&r, 0), "/api/v1/pods?limit=2&continue=tok%2Fen%3D",
		"the continue token, escaped");
	tap_ok(kt_refl_list_reply(&r, &gone, 10, &delay) == KT_REFL_SEND,
	       "an expired continue token: list again");
	tap_str(path_of(&r, 10), "/api/v1/pods", "... in one piece");
	tap_ok(list(&r, "11", items, NULL, 20, &delay) == KT_REFL_SEND,
	       "the one page completes");
	tap_str(seen, "ADDED a 3\nADDED b 4\n", "each item once");
	tap_ok(strstr(path_of(&r, 20), "&resourceVersion=11&") != NULL,
	       "the watch starts from the full list's resourceVersion");
	kt_refl_release(&r);

	seen[0] = '\0';
	kt_refl_init(&r, &o, record, NULL, 3, NULL);
	path_of(&r, 0);
	list(&r, "9", p1, "next", 0, &delay);
	path_of(&r, 0);
	list(&r, "12", p2, NULL, 0, &delay);
	tap_ok(strstr(path_of(&r, 0), "&resourceVersion=9&") != NULL,
	       "pages share the first page's resourceVersion");
	tap_str(seen, "ADDED a 3\nADDED b 4\n", "two pages, two items");
	kt_refl_release(&r);
}

static void test_failures(void)
{
	struct kt_refl_opts o = { .path = "/api/v1/pods", .idle_ms = 180000 };
	struct kt_refl r;
	struct kt_refl_reply rep = { .status = 403, .error = "forbidden" };
	int64_t delay;
	bool grows = true, capped = true;
	int count = 0;

	kt_refl_init(&r, &o, record, NULL, 5, NULL);
	path_of(&r, 0);
	tap_ok(kt_refl_list_reply(&r, &rep, 0, &delay) == KT_REFL_DONE &&
		       r.err.http_status == 403 && !strcmp(r.err.msg, "forbidden"),
	       "the first list failing ends the reflector");
	kt_refl_release(&r);

	o.flags = KT_REFL_WAIT_FOR_SERVER;
	kt_refl_init(&r, &o, record, NULL, 5, NULL);
	path_of(&r, 0);
	rep.status = 503;
	tap_ok(kt_refl_list_reply(&r, &rep, 0, &delay) == KT_REFL_WAIT && delay >= 800,
	       "KT_REFL_WAIT_FOR_SERVER: the first list waits out a 503");
	path_of(&r, 0);
	rep.status = 404;
	tap_ok(kt_refl_list_reply(&r, &rep, 0, &delay) == KT_REFL_DONE &&
		       r.err.http_status == 404,
	       "... but not a 404");
	kt_refl_release(&r);
	o.flags = 0;
	rep.status = 403;

	kt_refl_init(&r, &o, record, NULL, 5, NULL);
	path_of(&r, 0);
	list(&r, "3", "", NULL, 0, &delay);
	path_of(&r, 0);
	rep.status = 0;
	rep.error = "connection refused";
	for (int i = 0; i < 9; i++) {
		tap_ok(kt_refl_watch_end(&r, &rep, i * 100, &delay) == KT_REFL_WAIT,
		       "retry");
		path_of(&r, i * 100);
		if (i < 5)
			grows = grows && delay >= (800 << i) && delay <= (1600 << i);
		else
			capped = capped && delay >= 30000 && delay <= 60000;
	}
	tap_ok(grows, "the wait doubles from 800 ms, each plus up to as much jitter");
	tap_ok(capped, "... up to 30 s (plus jitter)");
	path_of(&r, 199950); /* a watch that fails at once, after two quiet minutes */
	kt_refl_watch_end(&r, &rep, 200000, &delay);
	tap_ok(delay >= 800 && delay <= 1600, "two quiet minutes reset the backoff");
	path_of(&r, 200000);
	rep.status = 410;
	rep.error = "gone";
	tap_ok(kt_refl_watch_end(&r, &rep, 200100, &delay) == KT_REFL_WAIT &&
		       r.step == KT_REFL_LIST,
	       "410 in reply to the watch: list again");
	path_of(&r, 200100);
	list(&r, "4", "", NULL, 200200, &delay);
	path_of(&r, 200200);
	rep.status = 503;
	tap_ok(kt_refl_watch_end(&r, &rep, 200300, &delay) == KT_REFL_WAIT &&
		       r.step == KT_REFL_LIST,
	       "a 5xx: list again, as client-go does");
	path_of(&r, 200300);
	rep.status = 503;
	tap_ok(kt_refl_list_reply(&r, &rep, 200400, &delay) == KT_REFL_WAIT,
	       "a later list failing waits and tries again");
	path_of(&r, 200400);
	list(&r, "4", "", NULL, 200500, &delay);
	path_of(&r, 200500);
	rep.status = 0;
	rep.idle = true;
	tap_ok(kt_refl_watch_end(&r, &rep, 400000, &delay) == KT_REFL_DONE &&
		       !strcmp(r.err.msg, "no event or bookmark for 3m0s"),
	       "a silent watch ends it, naming the limit");
	kt_refl_release(&r);

	kt_refl_init(&r, &o, stop_at_second, &count, 5, NULL);
	path_of(&r, 0);
	tap_ok(list(&r, "3",
		    "{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}}",
		    NULL, 0, &delay) == KT_REFL_DONE &&
		       r.err.http_status == -1,
	       "the callback can stop it");
	kt_refl_release(&r);
}

static void test_object_paths(void)
{
	static const struct {
		const char *in, *out;
	} tab[] = {
		{ "/api/v1/nodes", "/api/v1/nodes?limit=500" },
		{ "/api/v1/nodes/vk-1",
		  "/api/v1/nodes?fieldSelector=metadata.name%3Dvk-1&limit=500" },
		{ "/api/v1/namespaces/default",
		  "/api/v1/namespaces?fieldSelector=metadata.name%3Ddefault&limit=500" },
		{ "/api/v1/namespaces/ns/pods", "/api/v1/namespaces/ns/pods?limit=500" },
		{ "/api/v1/namespaces/ns/pods/web?labelSelector=a",
		  "/api/v1/namespaces/ns/pods?labelSelector=a"
		  "&fieldSelector=metadata.name%3Dweb"
		  "&limit=500" },
		{ "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vk-1",
		  "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
		  "?fieldSelector=metadata.name%3Dvk-1&limit=500" },
		{ "/apis/apps/v1/deployments", "/apis/apps/v1/deployments?limit=500" },
	};
	static const char *const bad[] = { "/api/v1/nodes/vk-1/status",
					   "/api/v1/namespaces/ns/pods/web/status",
					   "/api/v1/nodes/vk-1?fieldSelector=a%3Db" };
	struct kt_refl_opts o = { 0 };
	struct kt_refl r;
	struct kt_err err = { 0 };

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		o.path = tab[i].in;
		kt_refl_init(&r, &o, record, NULL, 1, NULL);
		tap_str(path_of(&r, 0), tab[i].out, tab[i].in);
		kt_refl_release(&r);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.path = bad[i];
		tap_ok(kt_refl_init(&r, &o, record, NULL, 1, &err) < 0 &&
			       err.kind == KT_ERR_INPUT,
		       bad[i]);
	}
	tap_str(err.msg,
		"'/api/v1/nodes/vk-1' names one object: it takes no fieldSelector",
		"the message names the path");
}

/* ------------------------------------------------------------ the driver */

/*
 * A server for the driver: a list of a (list resourceVersion 10), a watch
 * from 10 that sends b and closes, then a watch from 11 that is answered
 * 403 under /forbid/ and never answered under /idle/.
 */
static void serve(int fd)
{
	static const char list[] =
		"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":"
		"{\"resourceVersion\":\"10\"},\"items\":[{\"metadata\":{\"name\":\"a\","
		"\"namespace\":\"ns\",\"uid\":\"u1\",\"resourceVersion\":\"5\"}}]}";
	static const char event[] =
		"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
		"\"metadata\":{\"name\":\"b\",\"namespace\":\"ns\",\"uid\":\"u2\","
		"\"resourceVersion\":\"11\"}}}\n";
	static const char forbidden[] =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		"\"message\":\"pods is forbidden\",\"reason\":\"Forbidden\","
		"\"code\":403}";
	char req[2048], out[1024];
	ssize_t n = read(fd, req, sizeof(req) - 1);
	const char *status = "200 OK", *body = list;
	int len;

	if (n <= 0)
		return;
	req[n] = '\0';
	if (strstr(req, "resourceVersion=10&")) {
		len = snprintf(out, sizeof(out),
			       "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			       "Connection: close\r\n\r\n%s",
			       event);
		if (write(fd, out, (size_t)len) < 0)
			return;
		return;
	}
	if (strstr(req, "resourceVersion=11&") && strstr(req, "/idle/")) {
		sleep(10);
		return;
	}
	if (strstr(req, "resourceVersion=11&")) {
		status = "403 Forbidden";
		body = forbidden;
	}
	len = snprintf(out, sizeof(out),
		       "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
		       "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		       status, strlen(body), body);
	if (write(fd, out, (size_t)len) < 0)
		return;
}

static int server_start(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(lfd, 16) < 0 || getsockname(lfd, (struct sockaddr *)&sa, &len) < 0)
		abort();
	if (fork() == 0) {
		/* never outlive the test; one child a connection, reaped by init */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGCHLD, SIG_IGN);
		for (;;) {
			int c = accept(lfd, NULL, NULL);

			if (c < 0)
				continue;
			if (fork() == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				serve(c);
				_exit(0);
			}
			close(c);
		}
	}
	close(lfd);
	return ntohs(sa.sin_port);
}

static void test_driver(void)
{
	char url[64];
	struct kt_api_opts ao = { .server = url };
	struct kt_refl_opts o = { .path = "/api/v1/namespaces/forbid/pods" };
	struct kt_err err = { 0 };
	struct kt_api *api;
	struct kt_refl r;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", server_start());
	api = kt_api_open(&ao, &err);
	if (!tap_ok(api != NULL, "a client for the test server"))
		return;
	seen[0] = '\0';
	kt_refl_init(&r, &o, record, NULL, 1, NULL);
	tap_ok(kt_refl_run(&r, api, &err) < 0 && err.http_status == 403 &&
		       strstr(err.msg, "pods is forbidden"),
	       "blocking: list, watch, resume, then a 403 ends it with the Status");
	tap_str(seen, "ADDED a 5\nADDED b 11\n", "... having reported both objects once");
	kt_refl_release(&r);

	seen[0] = '\0';
	o.path = "/api/v1/namespaces/idle/pods";
	o.idle_ms = 300;
	kt_refl_init(&r, &o, record, NULL, 1, NULL);
	tap_ok(kt_refl_run(&r, api, &err) < 0 &&
		       !strcmp(err.msg, "no event or bookmark for 300ms"),
	       "a watch that stays silent past idle_ms ends it");
	tap_str(seen, "ADDED a 5\nADDED b 11\n", "... after what came before");
	kt_refl_release(&r);
	kt_api_close(api);
}

/* what a path to follow may not carry, and the event framing followers print */
/* what kt_refl_last gives from the callback: "rv" of the version before, "-" none */
static char before[256];

static int record_last(const char *type, const cJSON *obj, void *arg)
{
	const cJSON *last = kt_refl_last(arg, obj);
	const char *rv = kt_json_get_string(kt_json_get_object(last, "metadata"),
					    "resourceVersion");
	size_t n = strlen(before);

	snprintf(before + n, sizeof(before) - n, "%s:%s ", type, last ? rv : "-");
	return 0;
}

static void test_last(void)
{
	struct kt_refl_opts o = { .path = "/api/v1/pods", .watch_timeout_s = 60 };
	struct kt_refl r;
	struct kt_err err = { 0 };
	char a[256], b[256], items[600];
	int64_t delay = -1;
	cJSON *known;

	kt_refl_init(&r, &o, record_last, &r, 1, &err);
	known = tap_doc(pod(a, sizeof(a), "a", "u1", "3"));
	kt_refl_know(&r, known, &err);
	snprintf(items, sizeof(items), "%s,%s", pod(a, sizeof(a), "a", "u1", "4"),
		 pod(b, sizeof(b), "b", "u2", "5"));
	before[0] = '\0';
	list(&r, "5", items, NULL, 0, &delay);
	line(&r, "MODIFIED", pod(b, sizeof(b), "b", "u2", "6"));
	/* the same name under another uid is another object */
	line(&r, "MODIFIED", pod(b, sizeof(b), "b", "u3", "7"));
	line(&r, "DELETED", pod(a, sizeof(a), "a", "u1", "8"));
	tap_str(before, "MODIFIED:3 ADDED:- MODIFIED:5 MODIFIED:- DELETED:4 ",
		"kt_refl_last: the version before the event's, the known one first");
	kt_refl_release(&r);
}

static void test_query_and_event(void)
{
	cJSON *obj = cJSON_Parse("{\"metadata\":{\"name\":\"a\"}}");
	cJSON *ev = kt_refl_event("ADDED", obj);
	char *text = ev ? cJSON_PrintUnformatted(ev) : NULL;
	const char *own = kt_refl_own_param("/api/v1/pods?labelSelector=a&limit=5");

	tap_str(own, "limit", "own param: limit is the reflector's");
	tap_str(kt_refl_own_param("/api/v1/pods?x=1&resourceVersion"), "resourceVersion",
		"own param: found without a value");
	tap_ok(!kt_refl_own_param("/api/v1/pods?limits=1&fieldSelector=x%3Dlimit") &&
		       !kt_refl_own_param("/api/v1/pods"),
	       "own param: a longer name, a value, no query are not");
	tap_ok(kt_refl_query_watches("/api/v1/pods?a=b&watch=1") &&
		       kt_refl_query_watches("/api/v1/pods?watch=true") &&
		       kt_refl_query_watches("/api/v1/pods?watch="),
	       "query watches: watch= anything but 0 or false");
	tap_ok(!kt_refl_query_watches("/api/v1/pods?watch=0") &&
		       !kt_refl_query_watches("/api/v1/pods?watch=false") &&
		       !kt_refl_query_watches("/api/v1/pods?watcher=1") &&
		       !kt_refl_query_watches("/api/v1/pods"),
	       "query watches: 0, false, another name, no query do not");
	tap_str(text, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}",
		"event: the API's watch framing, with a copy of the object");
	free(text);
	cJSON_Delete(ev);
	cJSON_Delete(obj);
}

/* the object of each report, as printed */
static char printed[1024];

static int print_obj(const char *type, const cJSON *obj, void *arg)
{
	char *text = kt_json_print(kt_json_get(obj, "spec"), 0);

	(void)type;
	(void)arg;
	snprintf(printed, sizeof(printed), "%s", text ? text : "(null)");
	printed[strcspn(printed, "\n")] = '\0';
	free(text);
	return 0;
}

/* a watch event reads its numbers as a list does: an int64 past 2^53 exact */
static void test_watch_exact(void)
{
	struct kt_refl_opts o = { .path = "/api/v1/pods", .watch_timeout_s = 60 };
	struct kt_refl r;
	int64_t delay = -1;
	const char *item = "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\","
			   "\"resourceVersion\":\"5\"},\"spec\":{\"big\":9007199254740993}}";

	kt_refl_init(&r, &o, print_obj, NULL, 1, NULL);
	list(&r, "10", item, NULL, 0, &delay);
	tap_str(printed, "{\"big\":9007199254740993}", "a listed int64 past 2^53 stays exact");
	printed[0] = '\0';
	line(&r, "MODIFIED", "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":"
			     "\"u1\",\"resourceVersion\":\"11\"},\"spec\":{\"big\":"
			     "9007199254740995}}");
	tap_str(printed, "{\"big\":9007199254740995}", "so does one in a watch event");
	kt_refl_release(&r);
}

/* objects made known before the first list: it reports the difference only */
static void test_known(void)
{
	struct kt_refl_opts o = { .path = "/api/v1/pods", .watch_timeout_s = 60,
				  .flags = KT_REFL_BOOKMARKS };
	struct kt_refl r;
	struct kt_err err = { 0 };
	char p1[256], p2[256], p3[256], items[900];
	int64_t delay;
	size_t n;

	kt_refl_init(&r, &o, record, NULL, 7, NULL);
	pod(p1, sizeof(p1), "a", "u1", "5");
	pod(p2, sizeof(p2), "b", "u2", "6");
	pod(p3, sizeof(p3), "c", "u3", "7");
	tap_ok(kt_refl_know(&r, kt_json_parse("k", p1, strlen(p1), NULL), &err) == 0 &&
		       kt_refl_know(&r, kt_json_parse("k", p2, strlen(p2), NULL), &err) == 0 &&
		       kt_refl_know(&r, kt_json_parse("k", p3, strlen(p3), NULL), &err) == 0,
	       "three objects made known");
	tap_ok(kt_refl_know(&r, kt_json_parse("k", p3, strlen(p3), NULL), &err) < 0 &&
		       err.kind == KT_ERR_INPUT && strstr(err.msg, "ns/c is known twice"),
	       "one key known twice is refused");
	tap_ok(kt_refl_know(&r, cJSON_CreateObject(), &err) < 0 && err.kind == KT_ERR_INPUT,
	       "an object without a name is refused");
	seen[0] = '\0';
	/* a unchanged, b changed, c gone, d new */
	snprintf(items, sizeof(items), "%s,%s,%s", pod(p1, sizeof(p1), "a", "u1", "5"),
		 pod(p2, sizeof(p2), "b", "u2", "9"), pod(p3, sizeof(p3), "d", "u4", "10"));
	path_of(&r, 0);
	tap_ok(list(&r, "11", items, NULL, 0, &delay) == KT_REFL_SEND, "the first list completes");
	tap_str(seen, "DELETED c 7\nMODIFIED b 9\nADDED d 10\nBOOKMARK - 11\n",
		"what is gone, then what changed, then the end of the initial events");
	tap_ok(kt_refl_know(&r, cJSON_CreateObject(), &err) < 0,
	       "nothing is made known after the first list");
	kt_refl_release(&r);

	/* one name under three uids: the listed one stays, the others are gone */
	kt_refl_init(&r, &o, record, NULL, 7, NULL);
	pod(p1, sizeof(p1), "a", "u1", "5");
	pod(p2, sizeof(p2), "a", "u2", "6");
	pod(p3, sizeof(p3), "a", "u3", "7");
	tap_ok(kt_refl_know(&r, kt_json_parse("k", p1, strlen(p1), NULL), &err) == 0 &&
		       kt_refl_know(&r, kt_json_parse("k", p2, strlen(p2), NULL), &err) == 0 &&
		       kt_refl_know(&r, kt_json_parse("k", p3, strlen(p3), NULL), &err) == 0,
	       "a name known under three uids");
	tap_ok(kt_refl_know(&r, kt_json_parse("k", p2, strlen(p2), NULL), &err) < 0 &&
		       strstr(err.msg, "ns/a is known twice"),
	       "one of them again is refused");
	seen[0] = '\0';
	path_of(&r, 0);
	list(&r, "11", pod(p1, sizeof(p1), "a", "u2", "6"), NULL, 0, &delay);
	tap_str(seen, "DELETED a 5\nDELETED a 7\nBOOKMARK - 11\n",
		"the two not listed are DELETED, the listed one is unchanged");
	{
		struct kt_refl_obj *const *objs = kt_refl_objects(&r, &n);
		const char *uid = "";

		for (size_t i = 0; i < n; i++)
			if (objs[i])
				uid = objs[i]->uid;
		tap_ok(r.live == 1 && !strcmp(uid, "u2") && !r.nreplaced,
		       "the listed uid holds the name");
	}
	kt_refl_release(&r);

	/* a leak check: replaced objects never listed are freed with the reflector */
	kt_refl_init(&r, &o, record, NULL, 7, NULL);
	pod(p1, sizeof(p1), "a", "u1", "5");
	pod(p2, sizeof(p2), "a", "u2", "6");
	kt_refl_know(&r, kt_json_parse("k", p1, strlen(p1), NULL), &err);
	kt_refl_know(&r, kt_json_parse("k", p2, strlen(p2), NULL), &err);
	tap_ok(r.nreplaced == 1, "one replaced object held until the first list");
	kt_refl_release(&r);
}

int main(void)
{
	test_last();
	test_query_and_event();
	test_object_paths();
	test_first_list_and_watch();
	test_relist_difference();
	test_known();
	test_pages();
	test_failures();
	test_driver();
	test_watch_exact();
	return tap_done();
}
