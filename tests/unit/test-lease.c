/* SPDX-License-Identifier: Apache-2.0 */
/* test-lease: the Lease object, its renew and repair rules, the steps of a renewal */
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

/* 2026-11-30T07:22:21.000042Z */
#define NOW_US 1796023341000042LL

static const struct kt_lease_spec spec = { .node = "vk-1", .duration_s = 40 };

static char *compact(const cJSON *doc)
{
	return cJSON_PrintUnformatted(doc);
}

static void test_new(void)
{
	struct kt_err err = { 0 };
	struct kt_lease_spec other = { .node = "vk-1", .holder = "agent-7", .duration_s = 15 };
	cJSON *lease = kt_lease_doc_new(&spec, "uid-1", NOW_US, &err);
	char *text = compact(lease);

	tap_str(text,
		"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
		"{\"name\":\"vk-1\",\"namespace\":\"kube-node-lease\",\"ownerReferences\":"
		"[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"uid-1\"}]},"
		"\"spec\":{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,"
		"\"renewTime\":\"2026-11-30T07:22:21.000042Z\"}}",
		"a new lease has every field, the owner and a MicroTime");
	cJSON_free(text);
	cJSON_Delete(lease);

	lease = kt_lease_doc_new(&other, NULL, NOW_US, &err);
	text = compact(lease);
	tap_str(text,
		"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
		"{\"name\":\"vk-1\",\"namespace\":\"kube-node-lease\"},"
		"\"spec\":{\"holderIdentity\":\"agent-7\",\"leaseDurationSeconds\":15,"
		"\"renewTime\":\"2026-11-30T07:22:21.000042Z\"}}",
		"without a node uid there is no owner; the holder is the one given");
	cJSON_free(text);
	cJSON_Delete(lease);
}

static cJSON *parse(const char *text)
{
	struct kt_err err = { 0 };

	return kt_json_parse("test", text, strlen(text), &err);
}

static void renew_case(const char *base_text, const char *uid, const char *want,
		       unsigned want_changed, const char *name)
{
	struct kt_err err = { 0 };
	cJSON *base = parse(base_text), *out;
	char *before = compact(base), *text;
	unsigned changed = 99;

	out = kt_lease_renewed(base, &spec, uid, NOW_US, &changed, &err);
	text = compact(out);
	tap_str(text, want, name);
	tap_ok(changed == want_changed, "  and says what changed");
	text = (cJSON_free(text), compact(base));
	tap_str(text, before, "  and leaves the base alone");
	cJSON_free(text);
	cJSON_free(before);
	cJSON_Delete(out);
	cJSON_Delete(base);
}

static void test_renewed(void)
{
	renew_case("{\"metadata\":{\"name\":\"vk-1\",\"resourceVersion\":\"7\"},"
		   "\"spec\":{\"holderIdentity\":\"old\",\"leaseDurationSeconds\":10,"
		   "\"renewTime\":\"2020-01-01T00:00:00.000000Z\"}}",
		   "uid-1",
		   "{\"metadata\":{\"name\":\"vk-1\",\"resourceVersion\":\"7\",\"ownerReferences\":"
		   "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"uid-1\"}]},"
		   "\"spec\":{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,"
		   "\"renewTime\":\"2026-11-30T07:22:21.000042Z\"}}",
		   KT_LEASE_OWNER_ADDED, "renewal keeps resourceVersion and adds a missing owner");
	renew_case("{\"metadata\":{\"name\":\"vk-1\",\"resourceVersion\":\"8\",\"ownerReferences\":"
		   "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"x\",\"uid\":\"d\"},"
		   "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"old-uid\"}]},"
		   "\"spec\":{}}",
		   "new-uid",
		   "{\"metadata\":{\"name\":\"vk-1\",\"resourceVersion\":\"8\",\"ownerReferences\":"
		   "[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"x\",\"uid\":\"d\"},"
		   "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"new-uid\"}]},"
		   "\"spec\":{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,"
		   "\"renewTime\":\"2026-11-30T07:22:21.000042Z\"}}",
		   KT_LEASE_OWNER_REPAIRED, "a stale owner uid is rewritten, others kept");
	renew_case("{\"metadata\":{\"ownerReferences\":"
		   "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"u\"}]}}",
		   "u",
		   "{\"metadata\":{\"ownerReferences\":"
		   "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"u\"}]},"
		   "\"spec\":{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,"
		   "\"renewTime\":\"2026-11-30T07:22:21.000042Z\"}}",
		   0, "a right owner is left alone");
	renew_case("{\"metadata\":{\"ownerReferences\":"
		   "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"u\"}]}}",
		   NULL,
		   "{\"metadata\":{\"ownerReferences\":"
		   "[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"u\"}]},"
		   "\"spec\":{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,"
		   "\"renewTime\":\"2026-11-30T07:22:21.000042Z\"}}",
		   0, "no node uid: the owner is not touched");
}

/* feeds one reply and checks what the renewal does next */
static enum kt_lease_next feed(struct kt_lease *l, long status, const char *body,
			       int64_t now_ms, int64_t *delay)
{
	cJSON *json = body ? parse(body) : NULL;
	struct kt_lease_reply r = { .status = status, .json = json, .error = "refused" };
	enum kt_lease_next next = kt_lease_reply(l, &r, now_ms, delay);

	cJSON_Delete(json);
	return next;
}

static bool req_is(struct kt_lease *l, const char *method, const char *path)
{
	struct kt_lease_req req;
	struct kt_err err = { 0 };

	if (kt_lease_request(l, NOW_US, &req, &err) < 0)
		return false;
	return !strcmp(req.method, method) && !strcmp(req.path, path);
}

#define LEASE_PATH KT_LEASE_COLLECTION "/vk-1"
#define NODE_JSON "{\"metadata\":{\"name\":\"vk-1\",\"uid\":\"u-1\"}}"
#define LEASE_JSON "{\"metadata\":{\"name\":\"vk-1\",\"resourceVersion\":\"3\"},\"spec\":{}}"

static void test_steps_create(void)
{
	struct kt_lease l;
	int64_t delay = 0;

	kt_lease_init(&l, &spec);
	kt_lease_begin(&l, 0, true);
	tap_ok(req_is(&l, "GET", "/api/v1/nodes/vk-1"), "first the node is read");
	tap_ok(feed(&l, 200, NODE_JSON, 0, &delay) == KT_LEASE_SEND &&
		       req_is(&l, "GET", LEASE_PATH),
	       "then the lease");
	tap_ok(feed(&l, 404, NULL, 0, &delay) == KT_LEASE_SEND &&
		       req_is(&l, "POST", KT_LEASE_COLLECTION),
	       "a missing lease is created");
	tap_ok(l.body && strstr(l.body, "\"uid\":\"u-1\""), "with the node's uid");
	tap_ok(feed(&l, 201, LEASE_JSON, 0, &delay) == KT_LEASE_DONE &&
		       l.result == KT_LEASE_CREATED,
	       "created");
	tap_str(l.renew_time, "2026-11-30T07:22:21.000042Z", "the renewTime written is kept");

	kt_lease_begin(&l, 0, true);
	tap_ok(req_is(&l, "GET", "/api/v1/nodes/vk-1") &&
		       feed(&l, 200, NODE_JSON, 0, &delay) == KT_LEASE_SEND &&
		       req_is(&l, "PUT", LEASE_PATH),
	       "the next renewal PUTs from the lease kept, without a GET");
	tap_ok(l.body && strstr(l.body, "\"resourceVersion\":\"3\""), "with its resourceVersion");
	tap_ok(feed(&l, 200, LEASE_JSON, 0, &delay) == KT_LEASE_DONE &&
		       l.result == KT_LEASE_RENEWED,
	       "renewed");

	kt_lease_begin(&l, 0, false);
	tap_ok(req_is(&l, "PUT", LEASE_PATH) && strstr(l.body, "\"uid\":\"u-1\""),
	       "without read_node the known uid is used and the node not read");
	feed(&l, 200, LEASE_JSON, 0, &delay);
	kt_lease_set_node_uid(&l, "u-2");
	kt_lease_begin(&l, 0, false);
	tap_ok(req_is(&l, "PUT", LEASE_PATH) && strstr(l.body, "\"uid\":\"u-2\""),
	       "a uid set from elsewhere is written");
	kt_lease_release(&l);

	kt_lease_init(&l, &spec);
	kt_lease_begin(&l, 0, false);
	tap_ok(req_is(&l, "GET", "/api/v1/nodes/vk-1"), "the first renewal reads the node anyway");
	tap_ok(kt_lease_take_latest(&l, parse(LEASE_JSON)) == 0, "a listed lease is taken");
	feed(&l, 200, NODE_JSON, 0, &delay);
	tap_ok(req_is(&l, "PUT", LEASE_PATH), "and PUT without a GET");
	tap_ok(!strncmp(l.body, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
			"\"metadata\":{\"name\":\"vk-1\",\"resourceVersion\":\"3\"}", 90),
	       "with apiVersion and kind put first");
	kt_lease_release(&l);
}

static void test_steps_conflict(void)
{
	struct kt_lease l;
	int64_t delay = 0;
	int i;

	kt_lease_init(&l, &spec);
	kt_lease_begin(&l, 0, true);
	req_is(&l, "GET", "/api/v1/nodes/vk-1");
	tap_ok(feed(&l, 404, NULL, 0, &delay) == KT_LEASE_DONE && l.result == KT_LEASE_SKIPPED &&
		       l.no_node && l.err.http_status == 404,
	       "a node that does not exist ends the renewal, skipped, before any lease request");
	tap_str(l.err.msg,
		"node/vk-1: not found: no lease is written for a node that does not exist",
		"and says so");
	kt_lease_begin(&l, 0, false);
	tap_ok(req_is(&l, "GET", "/api/v1/nodes/vk-1"),
	       "the next renewal reads the node again, whatever read_node says");
	feed(&l, 200, "{\"metadata\":{\"name\":\"vk-1\"}}", 0, &delay);
	tap_ok(req_is(&l, "GET", LEASE_PATH) && !l.no_node, "a node that exists lets it go on");
	feed(&l, 200, LEASE_JSON, 0, &delay);
	tap_ok(req_is(&l, "PUT", LEASE_PATH) && !strstr(l.body, "ownerReferences"),
	       "a node without a uid gives the lease no owner");
	for (i = 1; i < KT_LEASE_MAX_TRIES; i++) {
		if (feed(&l, 409, NULL, 0, &delay) != KT_LEASE_SEND ||
		    !req_is(&l, "GET", LEASE_PATH))
			break;
		feed(&l, 200, LEASE_JSON, 0, &delay);
		if (!req_is(&l, "PUT", LEASE_PATH))
			break;
	}
	tap_ok(i == KT_LEASE_MAX_TRIES, "each 409 re-reads the lease and writes again");
	tap_ok(feed(&l, 409,
		    "{\"kind\":\"Status\",\"message\":\"the object has been modified\"}", 0,
		    &delay) == KT_LEASE_DONE &&
		       l.result == KT_LEASE_FAILED,
	       "the fifth 409 gives up");
	tap_str(l.err.msg,
		"lease/vk-1 (kube-node-lease): 409 Conflict: the object has been modified",
		"naming the lease, the status and the server's message");
	tap_ok(l.err.http_status == 409, "with the HTTP status");
	kt_lease_release(&l);
}

static void test_steps_backoff(void)
{
	static const int64_t want[] = { 200, 400, 800, 1600, 3200, 6400, 7000, 7000 };
	struct kt_lease l;
	int64_t delay = 0, now = 0;
	bool ok = true;

	kt_lease_init(&l, &spec);
	kt_lease_begin(&l, 0, true);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		req_is(&l, "GET", "/api/v1/nodes/vk-1");
		ok = ok && feed(&l, 503, NULL, now, &delay) == KT_LEASE_WAIT && delay == want[i];
		now += delay;
	}
	tap_ok(ok, "5xx backs off 200 ms doubling to a 7 s cap");
	feed(&l, 200, NODE_JSON, now, &delay);
	feed(&l, 200, LEASE_JSON, now, &delay);
	feed(&l, 200, LEASE_JSON, now, &delay);
	tap_ok(l.result == KT_LEASE_RENEWED && kt_lease_next_backoff(&l) == 200,
	       "success resets the backoff");

	kt_lease_begin(&l, 1000, true);
	req_is(&l, "GET", "/api/v1/nodes/vk-1");
	tap_ok(feed(&l, 0, NULL, 0, &delay) == KT_LEASE_WAIT && delay == 200, "no reply waits");
	tap_ok(feed(&l, 500, NULL, 200, &delay) == KT_LEASE_WAIT && delay == 400, "500 waits");
	tap_ok(feed(&l, 500, NULL, 600, &delay) == KT_LEASE_DONE && l.result == KT_LEASE_FAILED,
	       "a wait past the deadline is not made");
	tap_str(l.err.msg, "node/vk-1: 500 Internal Server Error", "the last error is kept");
	tap_ok(kt_lease_next_backoff(&l) == 800, "and the backoff carries on");

	kt_lease_begin(&l, 0, true);
	req_is(&l, "GET", "/api/v1/nodes/vk-1");
	tap_ok(feed(&l, 429,
		    "{\"kind\":\"Status\",\"code\":429,\"details\":{\"retryAfterSeconds\":3}}", 0,
		    &delay) == KT_LEASE_WAIT &&
		       delay == 3000,
	       "429 waits as long as the server asks");

	kt_lease_begin(&l, 0, true);
	req_is(&l, "GET", "/api/v1/nodes/vk-1");
	tap_ok(feed(&l, 401, "{\"kind\":\"Status\",\"message\":\"Unauthorized\"}", 0, &delay) ==
			       KT_LEASE_DONE &&
		       l.result == KT_LEASE_FAILED,
	       "401 is not retried");
	tap_str(l.err.msg, "node/vk-1: 401 Unauthorized", "and says so once");
	kt_lease_release(&l);

	/* issue 16 item 5: a server that never answers fails a renewal in 1.5 s */
	kt_lease_init(&l, &spec);
	kt_lease_begin(&l, 0, true);
	req_is(&l, "GET", "/api/v1/nodes/vk-1");
	tap_ok(feed(&l, 0, NULL, 0, &delay) == KT_LEASE_WAIT && delay == 200 &&
		       (req_is(&l, "GET", "/api/v1/nodes/vk-1"),
			feed(&l, 0, NULL, 200, &delay) == KT_LEASE_WAIT) &&
		       delay == 400 &&
		       (req_is(&l, "GET", "/api/v1/nodes/vk-1"),
			feed(&l, 0, NULL, 600, &delay) == KT_LEASE_WAIT) &&
		       delay == 800,
	       "no reply is tried again within 1.5 s of the first");
	req_is(&l, "GET", "/api/v1/nodes/vk-1");
	tap_ok(feed(&l, 0, NULL, 1400, &delay) == KT_LEASE_DONE && l.result == KT_LEASE_FAILED,
	       "then the renewal fails, with no deadline at all");
	tap_str(l.err.msg, "node/vk-1: refused (4 attempts)", "saying how many requests it made");
	kt_lease_release(&l);
}

static void test_steps_repair(void)
{
	struct kt_lease l;
	int64_t delay = 0;

	kt_lease_init(&l, &spec);
	kt_lease_begin(&l, 0, true);
	req_is(&l, "GET", "/api/v1/nodes/vk-1");
	feed(&l, 200, "{\"metadata\":{\"uid\":\"new\"}}", 0, &delay);
	req_is(&l, "GET", LEASE_PATH);
	feed(&l, 200,
	     "{\"metadata\":{\"resourceVersion\":\"9\",\"ownerReferences\":[{\"apiVersion\":\"v1\","
	     "\"kind\":\"Node\",\"name\":\"vk-1\",\"uid\":\"old\"}]}}",
	     0, &delay);
	tap_ok(req_is(&l, "PUT", LEASE_PATH) && strstr(l.body, "\"uid\":\"new\"") &&
		       !strstr(l.body, "\"old\"") && l.changed == KT_LEASE_OWNER_REPAIRED,
	       "a recreated node's uid is written to the lease");
	tap_ok(feed(&l, 500, NULL, 0, &delay) == KT_LEASE_WAIT &&
		       req_is(&l, "PUT", LEASE_PATH) && strstr(l.body, "\"uid\":\"new\"") &&
		       l.changed == KT_LEASE_OWNER_REPAIRED,
	       "a retried write still says what the first one changed");
	feed(&l, 404, NULL, 0, &delay);
	tap_ok(req_is(&l, "POST", KT_LEASE_COLLECTION), "a lease deleted meanwhile is created");
	kt_lease_release(&l);
}

static void test_steps_take(void)
{
	struct kt_lease l;
	int64_t delay = 0;
	cJSON *json = parse(LEASE_JSON), *given = json;
	struct kt_lease_reply r = { .status = 200, .json = json, .own = &json };

	kt_lease_init(&l, &spec);
	kt_lease_set_node_uid(&l, "u-1");
	kt_lease_take_latest(&l, parse(LEASE_JSON));
	kt_lease_begin(&l, 0, false);
	req_is(&l, "PUT", LEASE_PATH);
	tap_ok(kt_lease_reply(&l, &r, 0, &delay) == KT_LEASE_DONE && !json && l.latest == given,
	       "a reply given to keep is taken, not copied");
	kt_lease_release(&l);
}

static void tally_line(const char *msg, size_t more, void *arg)
{
	char *out = arg;
	size_t len = strlen(out);

	snprintf(out + len, 1024 - len, "%s|%zu\n", msg, more);
}

static void test_tally(void)
{
	struct kt_tally t = { 0 };
	char out[1024] = "";

	kt_tally_add(&t, "vk-1", "node/vk-1: 401 Unauthorized");
	kt_tally_add(&t, "vk-2", "lease/vk-2 (kube-node-lease): 500 Internal Server Error");
	kt_tally_add(&t, "vk-3", "node/vk-3: 401 Unauthorized");
	kt_tally_add(&t, "vk-1.x", "node/vk-1.x: 401 Unauthorized");
	kt_tally_add(&t, "vk", "GET https://h/api/v1/nodes/vk: nodes \"vk\" not found in vk-1");
	kt_tally_add(&t, "vk-9", "GET https://h/api/v1/nodes/vk-9: nodes \"vk-9\" not found in vk-1");
	kt_tally_flush(&t, tally_line, out);
	tap_str(out,
		"node/vk-1: 401 Unauthorized|2\n"
		"lease/vk-2 (kube-node-lease): 500 Internal Server Error|0\n"
		"GET https://h/api/v1/nodes/vk: nodes \"vk\" not found in vk-1|1\n",
		"tally: one line per cause, first seen first, the name masked only as a name");
	tap_ok(t.len == 0, "tally: a flush empties it");
	out[0] = '\0';
	kt_tally_flush(&t, tally_line, out);
	tap_str(out, "", "tally: an empty flush says nothing");
	kt_tally_release(&t);
}

/* a renewal as node-ping -o json prints it */
static void test_fleet_line(void)
{
	struct kt_lease l = { .result = KT_LEASE_RENEWED, .renew_time = "2026-01-02T03:04:05.000000Z" };
	cJSON *doc = kt_fleet_line("vk-1", &l);
	char *text = doc ? cJSON_PrintUnformatted(doc) : NULL;

	tap_str(text, "{\"node\":\"vk-1\",\"result\":\"renewed\","
		"\"renewTime\":\"2026-01-02T03:04:05.000000Z\"}",
		"fleet line: a renewal with the time written");
	free(text);
	cJSON_Delete(doc);
	l.result = KT_LEASE_SKIPPED;
	snprintf(l.err.msg, sizeof(l.err.msg), "check failed");
	doc = kt_fleet_line("vk-1", &l);
	text = doc ? cJSON_PrintUnformatted(doc) : NULL;
	tap_str(text, "{\"node\":\"vk-1\",\"result\":\"skipped\",\"error\":\"check failed\"}",
		"fleet line: a skipped renewal says why and no time");
	free(text);
	cJSON_Delete(doc);
}

int main(void)
{
	test_fleet_line();
	test_new();
	test_renewed();
	test_steps_create();
	test_steps_conflict();
	test_steps_backoff();
	test_steps_repair();
	test_steps_take();
	test_tally();
	return tap_done();
}
