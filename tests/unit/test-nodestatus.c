/* SPDX-License-Identifier: Apache-2.0 */
/* test-nodestatus: the stash, original, modified, stamping, the patch; nodesend; docpush */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

#define Z0 "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":0}},\"nodeInfo\":{" \
	"\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\",\"kernelVersion\":\"\"," \
	"\"osImage\":\"\",\"containerRuntimeVersion\":\"\",\"kubeletVersion\":\"\"," \
	"\"kubeProxyVersion\":\"\",\"operatingSystem\":\"\",\"architecture\":\"\"}"

/* 2024-05-01T10:00:20Z */
#define NOW_US (1714557620LL * 1000000)

/* compact text without the newline; caller frees */
static char *text_of(const cJSON *item)
{
	char *s = kt_json_print(item, KT_JSON_SORTED);

	if (s && *s)
		s[strlen(s) - 1] = '\0';
	return s;
}

static void test_status_text(void)
{
	struct kt_err err = { 0 };
	cJSON *st = tap_doc("{\"zz\":1,\"conditions\":[{\"status\":\"True\",\"type\":\"Ready\","
			"\"message\":\"a<b&c>\",\"reason\":\"\"}],"
			"\"capacity\":{\"pods\":\"110\",\"cpu\":\"2\"},\"phase\":\"\"}");
	char *t = kt_nodestatus_status_text(st, &err);

	tap_str(t, "{\"capacity\":{\"cpu\":\"2\",\"pods\":\"110\"},\"conditions\":[{\"type\":"
		"\"Ready\",\"status\":\"True\",\"lastHeartbeatTime\":null,\"lastTransitionTime\":"
		"null,\"message\":\"a\\u003cb\\u0026c\\u003e\"}]," Z0 ",\"zz\":1}",
		"status stash in Go field order with zero values, Go escaping");
	free(t);
	t = kt_nodestatus_status_text(NULL, &err);
	tap_str(t, "{" Z0 "}", "status stash of no status is the zero NodeStatus");
	free(t);
	cJSON_Delete(st);
}

static void test_meta_text(void)
{
	struct kt_err err = { 0 };
	cJSON *cur = tap_doc("{\"metadata\":{\"name\":\"vk\",\"uid\":\"u1\",\"labels\":{\"x\":\"y\"}}}");
	cJSON *des = tap_doc("{\"metadata\":{\"name\":\"other\",\"labels\":{\"b\":\"\",\"a\":\"1\"},"
			 "\"annotations\":{\"" KT_NODESTATUS_ANN_STATUS "\":\"{}\",\"t\":\"v\"}}}");
	cJSON *bare = tap_doc("{\"status\":{}}");
	char *t = kt_nodestatus_meta_text(des, cur, &err);

	tap_str(t, "{\"name\":\"vk\",\"uid\":\"u1\",\"labels\":{\"a\":\"1\",\"b\":\"\"},"
		"\"annotations\":{\"t\":\"v\"}}",
		"object-meta stash: identity from current, maps from desired, no stash keys");
	free(t);
	t = kt_nodestatus_meta_text(bare, cur, &err);
	tap_str(t, "{\"name\":\"vk\",\"uid\":\"u1\"}", "object-meta stash omits empty maps");
	free(t);
	cJSON_Delete(bare);
	cJSON_Delete(des);
	cJSON_Delete(cur);
}

static void test_original(void)
{
	struct kt_err err = { 0 };
	cJSON *o = NULL;
	char *t;
	cJSON *one = tap_doc("{\"metadata\":{\"annotations\":{\"" KT_NODESTATUS_ANN_STATUS
			 "\":\"{}\"}}}");
	cJSON *both = tap_doc("{\"metadata\":{\"annotations\":{"
			  "\"" KT_NODESTATUS_ANN_META "\":\"{\\\"name\\\":\\\"vk\\\","
			  "\\\"creationTimestamp\\\":null,\\\"labels\\\":{\\\"a\\\":\\\"\\\"}}\","
			  "\"" KT_NODESTATUS_ANN_STATUS "\":\"{\\\"conditions\\\":[{\\\"type\\\":"
			  "\\\"R\\\",\\\"status\\\":\\\"True\\\",\\\"lastHeartbeatTime\\\":null}],"
			  "\\\"daemonEndpoints\\\":{\\\"kubeletEndpoint\\\":{\\\"Port\\\":0}},"
			  "\\\"nodeInfo\\\":{\\\"bootID\\\":\\\"\\\",\\\"kubeletVersion\\\":\\\"v1\\\"}}\""
			  "}}}");
	cJSON *bad = tap_doc("{\"metadata\":{\"annotations\":{"
			 "\"" KT_NODESTATUS_ANN_META "\":\"{}\","
			 "\"" KT_NODESTATUS_ANN_STATUS "\":\"{conditions: []}\"}}}");
	cJSON *arr = tap_doc("{\"metadata\":{\"annotations\":{"
			 "\"" KT_NODESTATUS_ANN_META "\":\"[1]\","
			 "\"" KT_NODESTATUS_ANN_STATUS "\":\"{}\"}}}");

	kt_nodestatus_original(one, &o, &err);
	t = text_of(o);
	tap_str(t, "{}", "one stash annotation missing: the empty original");
	free(t);
	cJSON_Delete(o);
	kt_nodestatus_original(both, &o, &err);
	t = text_of(o);
	tap_str(t, "{\"metadata\":{\"labels\":{\"a\":\"\"},\"name\":\"vk\"},\"status\":{"
		"\"conditions\":[{\"status\":\"True\",\"type\":\"R\"}],\"nodeInfo\":{"
		"\"kubeletVersion\":\"v1\"}}}",
		"original drops Go zero values, keeps an empty label value");
	free(t);
	cJSON_Delete(o);
	o = NULL;
	tap_ok(kt_nodestatus_original(bad, &o, &err) < 0 && !o && err.kind == KT_ERR_INPUT &&
	       strstr(err.msg, "annotation '" KT_NODESTATUS_ANN_STATUS "' is not valid JSON"),
	       "a stash that is not JSON is an input error naming the annotation");
	tap_ok(kt_nodestatus_original(arr, &o, &err) < 0 &&
	       strstr(err.msg, "annotation '" KT_NODESTATUS_ANN_META "'") &&
	       strstr(err.msg, "holds an array, expected a JSON object"),
	       "a stash that is not an object is an input error");
	cJSON_Delete(arr);
	cJSON_Delete(bad);
	cJSON_Delete(both);
	cJSON_Delete(one);
}

static void test_stamp(void)
{
	struct kt_err err = { 0 };
	cJSON *cur = tap_doc("{\"status\":{\"conditions\":["
			 "{\"type\":\"Same\",\"status\":\"True\",\"lastTransitionTime\":\"T0\"},"
			 "{\"type\":\"Flip\",\"status\":\"True\",\"lastTransitionTime\":\"T0\"},"
			 "{\"type\":\"Given\",\"status\":\"True\"}]}}");
	cJSON *des = tap_doc("{\"status\":{\"conditions\":["
			 "{\"type\":\"Same\",\"status\":\"True\"},"
			 "{\"type\":\"Flip\",\"status\":\"False\"},"
			 "{\"type\":\"Given\",\"status\":\"False\",\"lastTransitionTime\":\"T1\"},"
			 "{\"type\":\"New\",\"status\":\"True\"}]}}");
	cJSON *out = NULL;
	char *t;

	kt_nodestatus_stamp(des, cur, NOW_US, &out, &err);
	t = text_of(out);
	tap_str(t, "{\"status\":{\"conditions\":["
		"{\"lastHeartbeatTime\":\"2024-05-01T10:00:20Z\",\"lastTransitionTime\":\"T0\","
		"\"status\":\"True\",\"type\":\"Same\"},"
		"{\"lastHeartbeatTime\":\"2024-05-01T10:00:20Z\",\"lastTransitionTime\":"
		"\"2024-05-01T10:00:20Z\",\"status\":\"False\",\"type\":\"Flip\"},"
		"{\"lastHeartbeatTime\":\"2024-05-01T10:00:20Z\",\"lastTransitionTime\":\"T1\","
		"\"status\":\"False\",\"type\":\"Given\"},"
		"{\"lastHeartbeatTime\":\"2024-05-01T10:00:20Z\",\"lastTransitionTime\":"
		"\"2024-05-01T10:00:20Z\",\"status\":\"True\",\"type\":\"New\"}]}}",
		"heartbeat: every condition, transition time only where status changed");
	free(t);
	tap_ok(!kt_json_get(kt_json_get_array(kt_json_get_object(des, "status"),
					      "conditions")->child, "lastHeartbeatTime"),
	       "stamping leaves the caller's desired alone");
	cJSON_Delete(out);
	cJSON_Delete(des);
	cJSON_Delete(cur);
}

/* the patch for desired against current, as sorted compact text */
static char *patch_text(const char *desired, const char *current, unsigned flags)
{
	struct kt_err err = { 0 };
	cJSON *d = tap_doc(desired), *c = tap_doc(current), *p = NULL;
	char *t;

	if (kt_nodestatus_patch(d, c, NULL, flags, NOW_US, &p, &err) < 0)
		t = strdup(err.msg);
	else
		t = text_of(p);
	cJSON_Delete(p);
	cJSON_Delete(c);
	cJSON_Delete(d);
	return t;
}

#define ESC_Z0 "\\\"daemonEndpoints\\\":{\\\"kubeletEndpoint\\\":{\\\"Port\\\":0}}," \
	"\\\"nodeInfo\\\":{\\\"machineID\\\":\\\"\\\",\\\"systemUUID\\\":\\\"\\\"," \
	"\\\"bootID\\\":\\\"\\\",\\\"kernelVersion\\\":\\\"\\\",\\\"osImage\\\":\\\"\\\"," \
	"\\\"containerRuntimeVersion\\\":\\\"\\\",\\\"kubeletVersion\\\":\\\"\\\"," \
	"\\\"kubeProxyVersion\\\":\\\"\\\",\\\"operatingSystem\\\":\\\"\\\"," \
	"\\\"architecture\\\":\\\"\\\"}"

#define COND(t, hb) "{\\\"type\\\":\\\"" t "\\\",\\\"status\\\":\\\"True\\\"," \
	"\\\"lastHeartbeatTime\\\":\\\"2024-05-01T10:00:" hb "Z\\\"," \
	"\\\"lastTransitionTime\\\":\\\"2024-05-01T10:00:00Z\\\"}"
#define RAWCOND(t, hb) "{\"type\":\"" t "\",\"status\":\"True\"," \
	"\"lastHeartbeatTime\":\"2024-05-01T10:00:" hb "Z\"," \
	"\"lastTransitionTime\":\"2024-05-01T10:00:00Z\"}"
#define META_VK "{\\\"name\\\":\\\"vk\\\",\\\"uid\\\":\\\"u1\\\",\\\"labels\\\":{" \
	"\\\"type\\\":\\\"virtual-kubelet\\\"}}"
#define RAW_Z0 "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":0}},\"nodeInfo\":{" \
	"\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\",\"kernelVersion\":\"\"," \
	"\"osImage\":\"\",\"containerRuntimeVersion\":\"\",\"kubeletVersion\":\"\"," \
	"\"kubeProxyVersion\":\"\",\"operatingSystem\":\"\",\"architecture\":\"\"}"

static const char example_a_current[] =
	"{\"metadata\":{\"name\":\"vk\",\"uid\":\"u1\",\"labels\":{\"type\":\"virtual-kubelet\","
	"\"team\":\"x\"},\"annotations\":{\"" KT_NODESTATUS_ANN_META "\":\"" META_VK "\",\""
	KT_NODESTATUS_ANN_STATUS "\":\"{\\\"conditions\\\":[" COND("A", "10") "," COND("B", "10")
	"]," ESC_Z0 "}\"}},\"status\":{\"conditions\":[" RAWCOND("A", "10") ","
	RAWCOND("B", "10") ",{\"type\":\"C\",\"status\":\"True\"}]," RAW_Z0 "}}";

static void test_patch(void)
{
	char *t;

	t = patch_text("{\"metadata\":{\"labels\":{\"type\":\"virtual-kubelet\"}},\"status\":{"
		       "\"conditions\":[{\"type\":\"A\",\"status\":\"True\","
		       "\"lastTransitionTime\":\"2024-05-01T10:00:00Z\"}]}}",
		       example_a_current, KT_NODESTATUS_HEARTBEAT);
	tap_str(t, "{\"metadata\":{\"annotations\":{\"" KT_NODESTATUS_ANN_STATUS "\":\""
		"{\\\"conditions\\\":[" COND("A", "20") "]," ESC_Z0 "}\"}},\"status\":{"
		"\"$setElementOrder/conditions\":[{\"type\":\"A\"}],\"conditions\":["
		"{\"lastHeartbeatTime\":\"2024-05-01T10:00:20Z\",\"type\":\"A\"},"
		"{\"$patch\":\"delete\",\"type\":\"B\"}]}}",
		"worked example A: foreign condition kept, dropped one deleted");
	free(t);
	t = patch_text("{\"status\":{}}", example_a_current, 0);
	tap_ok(t && strstr(t, "\"labels\":{\"type\":null}") && !strstr(t, "\"labels\":null") &&
	       strstr(t, "{\"$patch\":\"delete\",\"type\":\"A\"}") &&
	       !strstr(t, "\"conditions\":null"),
	       "emptied labels and conditions delete per element");
	if (t && !strstr(t, "\"labels\":{\"type\":null}"))
		printf("# %s\n", t);
	free(t);
	t = patch_text("{\"status\":{\"nodeInfo\":{\"kubeletVersion\":\"v2\"}}}",
		       "{\"metadata\":{\"name\":\"n\",\"annotations\":{\"" KT_NODESTATUS_ANN_META
		       "\":\"{}\",\"" KT_NODESTATUS_ANN_STATUS "\":\"{" ESC_Z0 "}\"}},"
		       "\"status\":{\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},"
		       "\"nodeInfo\":{\"bootID\":\"b\",\"kubeletVersion\":\"v1\"}}}", 0);
	tap_ok(t && strstr(t, "\"status\":{\"nodeInfo\":{\"kubeletVersion\":\"v2\"}}") &&
	       !strstr(t, "null"),
	       "taking over a virtual-kubelet stash with zero values deletes nothing");
	free(t);
	t = patch_text("{\"status\":{\"conditions\":[{\"type\":\"C\",\"status\":\"True\","
		       "\"lastTransitionTime\":\"2024-05-01T12:00:20.75+02:00\"}]}}",
		       example_a_current, 0);
	tap_ok(t && strstr(t, "\"conditions\":[{\"lastTransitionTime\":\"2024-05-01T10:00:20Z\","
			   "\"type\":\"C\"}") &&
	       strstr(t, "lastTransitionTime\\\":\\\"2024-05-01T10:00:20Z"),
	       "condition times are sent and stashed in UTC whole seconds");
	free(t);
	t = patch_text("{\"status\":{\"capacity\":{\"a\":\"2000m\",\"b\":\"1024Mi\","
		       "\"c\":\"1000\",\"d\":\"0.5\",\"e\":\"1.5Gi\",\"f\":\"0.5Ki\","
		       "\"g\":\"1200e3\",\"h\":\"1.5e3\",\"i\":\"110\",\"j\":\"-0.1\","
		       "\"k\":\"0Mi\",\"l\":\"1000Mi\",\"m\":\"0.3Ki\",\"n\":\"x\","
		       "\"o\":\"100Gi\",\"p\":\"1000k\",\"q\":\"12e6\",\"r\":\"+1\"}}}",
		       "{\"metadata\":{\"name\":\"n\"}}", 0);
	tap_ok(t && strstr(t, "\"status\":{\"capacity\":{\"a\":\"2\",\"b\":\"1Gi\","
			   "\"c\":\"1k\",\"d\":\"500m\",\"e\":\"1536Mi\",\"f\":\"512\","
			   "\"g\":\"1200e3\",\"h\":\"1500\",\"i\":\"110\",\"j\":\"-100m\","
			   "\"k\":\"0\",\"l\":\"1000Mi\",\"m\":\"0.3Ki\",\"n\":\"x\","
			   "\"o\":\"100Gi\",\"p\":\"1M\",\"q\":\"12e6\",\"r\":\"+1\"}}"),
	       "quantities in canonical form, as resource.Quantity writes them");
	if (t && !strstr(t, "\"a\":\"2\""))
		printf("# %s\n", t);
	free(t);
	t = patch_text("[1]", example_a_current, 0);
	tap_str(t, "desired: expected a node object, got an array", "desired must be an object");
	free(t);
}

/* applying the patch, then the patch computed again, changes nothing more */
static void test_fixpoint(void)
{
	struct kt_err err = { 0 };
	cJSON *d = tap_doc("{\"metadata\":{\"labels\":{\"a\":\"1\"},\"annotations\":{\"n\":\"\"}},"
		       "\"status\":{\"capacity\":{\"cpu\":\"1\"},\"conditions\":[{\"type\":"
		       "\"Ready\",\"status\":\"True\"}],\"addresses\":[{\"type\":\"InternalIP\","
		       "\"address\":\"10.0.0.1\"}]}}");
	cJSON *c = tap_doc(example_a_current);
	struct kt_schema *s = kt_schema_builtin("Node", &err);
	cJSON *p = NULL, *next = NULL, *p2 = NULL, *last = NULL;
	char *t;

	kt_nodestatus_patch(d, c, s, 0, NOW_US, &p, &err);
	kt_smp_apply(c, p, s, &next, &err);
	kt_nodestatus_patch(d, next, s, 0, NOW_US, &p2, &err);
	t = p2 ? text_of(p2) : strdup(err.msg);
	/* upstream orders the merge list again because the foreign condition
	 * makes the lists' lengths differ; applying that changes nothing */
	tap_str(t, "{\"status\":{\"$setElementOrder/conditions\":[{\"type\":\"Ready\"}]}}",
		"a second run only restates the order");
	kt_smp_apply(next, p2, s, &last, &err);
	tap_ok(last && kt_go_equal(last, next), "and applying that changes nothing");
	free(t);
	cJSON_Delete(last);
	cJSON_Delete(p2);
	cJSON_Delete(next);
	cJSON_Delete(p);
	cJSON_Delete(c);
	cJSON_Delete(d);
	kt_schema_free(s);
}

/* without heartbeat stamping, desired without times keeps the server's */
static void test_times_kept(void)
{
	struct kt_err err = { 0 };
	cJSON *d = tap_doc("{\"status\":{\"conditions\":[{\"type\":\"A\",\"status\":\"True\"},"
		       "{\"type\":\"B\",\"status\":\"True\"},{\"type\":\"C\",\"status\":\"True\"},"
		       "{\"type\":\"D\",\"status\":\"True\",\"lastTransitionTime\":"
		       "\"2024-01-01T00:00:00Z\"}]}}");
	cJSON *c = tap_doc("{\"metadata\":{\"name\":\"vk\"},\"status\":{\"conditions\":["
		       "{\"type\":\"A\",\"status\":\"True\",\"lastHeartbeatTime\":"
		       "\"2024-05-01T09:59:00Z\",\"lastTransitionTime\":\"2024-05-01T09:00:00Z\"},"
		       "{\"type\":\"B\",\"status\":\"False\",\"lastHeartbeatTime\":"
		       "\"2024-05-01T09:59:00Z\",\"lastTransitionTime\":\"2024-05-01T09:00:00Z\"},"
		       "{\"type\":\"D\",\"status\":\"False\"}]}}");
	cJSON *p = NULL;
	char *t;

	kt_nodestatus_patch(d, c, NULL, 0, NOW_US, &p, &err);
	t = text_of(kt_json_path(p, "status.conditions"));
	tap_str(t, "[{\"lastTransitionTime\":\"2024-05-01T10:00:20Z\",\"status\":\"True\","
		"\"type\":\"B\"},{\"lastTransitionTime\":\"2024-05-01T10:00:20Z\",\"status\":"
		"\"True\",\"type\":\"C\"},{\"lastTransitionTime\":\"2024-01-01T00:00:00Z\","
		"\"status\":\"True\",\"type\":\"D\"}]",
		"no heartbeat: unchanged A keeps both times, changed B keeps its heartbeat and "
		"transitions now, new C transitions now, D's own time stands");
	free(t);
	cJSON_Delete(p);
	cJSON_Delete(c);
	cJSON_Delete(d);
}

/* ------------------------------------------------------------- nodesend */

static const struct kt_err api_404 = { .kind = KT_ERR_NOTFOUND, .http_status = 404,
				      .msg = "nodes \"vk\" not found" };
static const struct kt_err api_409 = { .kind = KT_ERR_CONFLICT, .http_status = 409,
				      .msg = "the object has been modified" };

/* the method and path of the next request, "METHOD PATH" */
static const char *next_req(struct kt_nodesend *s)
{
	static char buf[600];
	struct kt_nodesend_req req;
	struct kt_err err = { 0 };

	if (kt_nodesend_request(s, &req, &err) < 0) {
		snprintf(buf, sizeof(buf), "%s", err.msg);
		return buf;
	}
	snprintf(buf, sizeof(buf), "%s %s", req.method, req.path);
	return buf;
}

static enum kt_nodesend_next answer(struct kt_nodesend *s, const cJSON *json,
				    const struct kt_err *err)
{
	struct kt_nodesend_reply r = { .json = json, .err = err };

	return kt_nodesend_reply(s, &r, NOW_US);
}

static void test_send_register_conflict(const struct kt_schema *schema)
{
	struct kt_nodesend s;
	cJSON *node = tap_doc("{\"metadata\":{\"name\":\"vk\",\"uid\":\"u\"}}");

	kt_nodesend_init(&s, "vk", schema, KT_NODESEND_REGISTER);
	kt_nodesend_begin(&s, tap_doc("{\"metadata\":{\"labels\":{\"a\":\"b\"}}}"));
	tap_str(next_req(&s), "GET /api/v1/nodes/vk", "send: GET the node first");
	answer(&s, NULL, &api_404);
	tap_str(next_req(&s), "POST /api/v1/nodes", "send: a missing node is registered");
	tap_ok(strstr(s.body, "\"labels\":{\"a\":\"b\"}") != NULL,
	       "send: the registration carries desired's labels");
	answer(&s, NULL, &api_409);
	tap_str(next_req(&s), "GET /api/v1/nodes/vk", "send: a 409 on registration reads it again");
	tap_ok(answer(&s, NULL, &api_404) == KT_NODESEND_DONE &&
	       s.result == KT_NODESEND_FAILED && s.err.kind == KT_ERR_NOTFOUND,
	       "send: registration is tried once per send");
	kt_nodesend_begin(&s, tap_doc("{\"metadata\":{\"labels\":{\"a\":\"b\"}}}"));
	next_req(&s);
	answer(&s, node, NULL);
	tap_str(next_req(&s), "PATCH /api/v1/nodes/vk/status", "send: then PATCH the status");
	tap_ok(s.writes == 1, "send: one write counted");
	kt_nodesend_release(&s);
	cJSON_Delete(node);
}

static void test_send_conflicts(const struct kt_schema *schema)
{
	struct kt_nodesend s;
	cJSON *node = tap_doc("{\"metadata\":{\"name\":\"vk\"}}");
	int patches = 0;

	kt_nodesend_init(&s, "vk", schema, 0);
	kt_nodesend_begin(&s, tap_doc("{\"metadata\":{\"labels\":{\"a\":\"b\"}}}"));
	for (;;) {
		const char *r = next_req(&s);
		enum kt_nodesend_next next;

		if (r[0] == 'P') {
			patches++;
			next = answer(&s, NULL, &api_409);
		} else {
			next = answer(&s, node, NULL);
		}
		if (next == KT_NODESEND_DONE)
			break;
	}
	tap_ok(patches == KT_NODESEND_MAX_WRITES && s.result == KT_NODESEND_FAILED &&
	       s.err.http_status == 409, "send: five PATCHes, then the 409 is the answer");
	kt_nodesend_release(&s);
	cJSON_Delete(node);
}

static void test_send_refresh(const struct kt_schema *schema)
{
	struct kt_nodesend s;
	cJSON *node = tap_doc("{\"metadata\":{\"name\":\"vk\"},\"status\":{\"conditions\":"
			  "[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	char *t;

	kt_nodesend_init(&s, "vk", schema, KT_NODESEND_REFRESH);
	kt_nodesend_begin(&s, NULL);
	next_req(&s);
	tap_ok(answer(&s, NULL, &api_404) == KT_NODESEND_DONE && s.result == KT_NODESEND_ABSENT,
	       "refresh: a missing node is absent, not a failure");
	kt_nodesend_begin(&s, NULL);
	next_req(&s);
	answer(&s, node, NULL);
	tap_str(next_req(&s), "PATCH /api/v1/nodes/vk/status", "refresh: PATCHes the heartbeats");
	t = text_of(kt_json_path(s.patch, "status.conditions"));
	tap_str(t, "[{\"lastHeartbeatTime\":\"2024-05-01T10:00:20Z\",\"type\":\"Ready\"}]",
		"refresh: every condition gets a heartbeat, nothing else");
	free(t);
	kt_nodesend_release(&s);
	cJSON_Delete(node);
}

static void test_send_noop(const struct kt_schema *schema)
{
	struct kt_nodesend s;
	struct kt_err err = { 0 };
	cJSON *node = tap_doc("{\"metadata\":{\"name\":\"vk\"}}"), *after = NULL;

	kt_nodesend_init(&s, "vk", schema, 0);
	kt_nodesend_begin(&s, tap_doc("{\"metadata\":{\"labels\":{\"a\":\"b\"}}}"));
	next_req(&s);
	answer(&s, node, NULL);
	kt_smp_apply(node, s.patch, schema, &after, &err);
	kt_nodesend_begin(&s, tap_doc("{\"metadata\":{\"labels\":{\"a\":\"b\"}}}"));
	next_req(&s);
	tap_ok(after && answer(&s, after, NULL) == KT_NODESEND_DONE &&
	       s.result == KT_NODESEND_UNCHANGED && kt_go_equal(s.node, after),
	       "send: a patch that changes nothing is not sent");
	kt_nodesend_release(&s);
	cJSON_Delete(after);
	cJSON_Delete(node);
}

static void test_send(void)
{
	struct kt_err err = { 0 };
	struct kt_schema *schema = kt_schema_builtin("Node", &err);

	test_send_register_conflict(schema);
	test_send_conflicts(schema);
	test_send_refresh(schema);
	test_send_noop(schema);
	kt_schema_free(schema);
}

/* ------------------------------------------------------------- docpush */

static void collect(cJSON *doc, void *arg)
{
	char *out = arg, *t = text_of(doc);
	size_t len = strlen(out);

	snprintf(out + len, 512 - len, "%s|", t);
	free(t);
	cJSON_Delete(doc);
}

static void test_docpush(void)
{
	struct kt_docpush p;
	struct kt_err err = { 0 };
	char out[512] = "";
	const char *json = " {\"a\":\"}\"}[1,\n2]{\"b\":{}}";
	int rc = 0;

	kt_docpush_init(&p, "in", 1024);
	for (size_t i = 0; json[i] && rc == 0; i++)
		rc = kt_docpush_feed(&p, json + i, 1, false, collect, out, &err);
	tap_str(out, "{\"a\":\"}\"}|[1,2]|{\"b\":{}}|",
		"docpush: JSON documents come out as they close, a byte at a time");
	kt_docpush_release(&p);

	out[0] = '\0';
	kt_docpush_init(&p, "in", 1024);
	kt_docpush_feed(&p, "a: 1\n---\nb: [2]\n", 16, false, collect, out, &err);
	tap_str(out, "{\"a\":1}|", "docpush: a YAML document ends at ---");
	kt_docpush_feed(&p, "", 0, true, collect, out, &err);
	tap_str(out, "{\"a\":1}|{\"b\":[2]}|", "docpush: and the last one at the end");
	kt_docpush_release(&p);

	kt_docpush_init(&p, "in", 8);
	rc = kt_docpush_feed(&p, "{\"long\":\"0123456789\"}", 21, false, collect, out, &err);
	tap_ok(rc < 0 && err.kind == KT_ERR_INPUT &&
		       !strcmp(err.msg, "in:1:1: document larger than 8 bytes (see --max-input)"),
	       "docpush: a document over the cap is refused, named");
	kt_docpush_release(&p);

	kt_docpush_init(&p, "in", 1024);
	rc = kt_docpush_feed(&p, "{\"a\" 1}", 7, false, collect, out, &err);
	tap_ok(rc < 0 && err.kind == KT_ERR_INPUT && !strncmp(err.msg, "in:1:", 5),
	       "docpush: a syntax error has the name, line and column");
	kt_docpush_release(&p);
}

/* every document of text, fed n bytes at a time, joined as "doc|doc|";
 * the splitter's work in *work */
static void push_all(const char *text, size_t n, char *out, unsigned long long *work,
		     struct kt_err *err)
{
	struct kt_docpush p;
	size_t len = strlen(text);
	int rc = 0;

	out[0] = '\0';
	kt_docpush_init(&p, "in", (size_t)1 << 24);
	for (size_t i = 0; i < len && rc == 0; i += n)
		rc = kt_docpush_feed(&p, text + i, i + n < len ? n : len - i, false, collect, out,
				     err);
	if (rc == 0)
		rc = kt_docpush_feed(&p, "", 0, true, collect, out, err);
	if (rc < 0)
		snprintf(out + strlen(out), 512 - strlen(out), "error");
	*work = p.work;
	kt_docpush_release(&p);
}

/* the same stream through the pull side */
static void pull_all(const char *text, char *out, struct kt_err *err)
{
	struct kt_json_reader *r = kt_json_reader_open_mem("in", text, strlen(text), 0,
							   KT_JSON_STREAM, err);
	cJSON *doc;
	int rc;

	out[0] = '\0';
	while ((rc = kt_json_reader_next(r, &doc, err)) > 0)
		collect(doc, out);
	if (rc < 0)
		snprintf(out + strlen(out), 512 - strlen(out), "error");
	kt_json_reader_close(r);
}

static void test_docpush_same_rules(void)
{
	static const char *streams[] = {
		"1 \"x\" null [2]{\"a\":true}",
		"-5\n-6",
		"--- a\n---\n# only a comment\n---\nb: [1]\n...\n--- |\n  text\n",
		"nullable: yes\n---\n{\"c\": 3}\n",
		"\n\n  - 1\n  - 2\n---",
	};
	struct kt_err err = { 0 };
	unsigned long long work;
	char push[512], pull[512], name[96];

	for (size_t i = 0; i < sizeof(streams) / sizeof(*streams); i++) {
		pull_all(streams[i], pull, &err);
		for (size_t n = 1; n <= 7; n += 6) {
			push_all(streams[i], n, push, &work, &err);
			snprintf(name, sizeof(name),
				 "docpush: stream %zu in %zu-byte pieces reads as the pull side does",
				 i, n);
			tap_str(push, pull, name);
		}
	}

	push_all("a: 1\n---\nb: 2\n---\nc: [\n", 1, push, &work, &err);
	tap_str(err.msg, "in:6:1: did not find expected node content while parsing a flow node",
		"docpush: a YAML error names the line in the stream, not in the document");
	push_all("{}\n\n  {\"a\" 1}", 1, push, &work, &err);
	tap_ok(!strncmp(err.msg, "in:3:8: ", 8),
	       "docpush: a JSON error names the line and column in the stream");
}

/* n documents of lines lines each, in YAML or JSON */
static char *big_stream(bool yaml, int n, int lines)
{
	struct kt_sb sb = { 0 };

	for (int d = 0; d < n; d++) {
		kt_sb_puts(&sb, yaml ? "---\n" : "{\n");
		for (int l = 0; l < lines; l++)
			kt_sb_printf(&sb, yaml ? "key%d: value %d\n" : "\"key%d\": \"value %d\",\n",
				     l, d);
		kt_sb_puts(&sb, yaml ? "" : "\"end\": true}\n");
	}
	return sb.buf;
}

/* the splitter's work grows as the input does, however small the pieces:
 * ten times the text costs about ten times as much, not a hundred */
static void test_docpush_linear(void)
{
	struct kt_err err = { 0 };
	char out[512];

	for (int yaml = 0; yaml <= 1; yaml++) {
		char *small = big_stream(yaml, 3, 300), *large = big_stream(yaml, 3, 3000);
		unsigned long long w1, w10;
		double ratio;
		char name[128];

		push_all(small, 1, out, &w1, &err);
		push_all(large, 1, out, &w10, &err);
		ratio = (double)w10 / (double)w1;
		snprintf(name, sizeof(name),
			 "docpush: %s a byte at a time, 10x the input costs %.1fx (under 12x)",
			 yaml ? "YAML" : "JSON", ratio);
		tap_ok(w1 >= strlen(small) && ratio < 12, name);
		free(small);
		free(large);
	}
}

/* which node a desired document is for */
static void test_target(void)
{
	cJSON *named = cJSON_Parse("{\"metadata\":{\"name\":\"vk-1\"}}");
	cJSON *bare = cJSON_Parse("{\"status\":{}}");
	cJSON *cur = cJSON_Parse("{\"metadata\":{\"name\":\"vk-2\"}}");
	cJSON *list = cJSON_Parse("[]");
	struct kt_err err = { 0 };

	tap_str(kt_nodesend_target(named, NULL, cur, &err), "vk-1", "target: desired's name");
	tap_str(kt_nodesend_target(named, "vk-3", cur, &err), "vk-3", "target: a given name first");
	tap_str(kt_nodesend_target(bare, NULL, cur, &err), "vk-2", "target: else current's");
	tap_ok(!kt_nodesend_target(bare, NULL, NULL, &err) && err.kind == KT_ERR_INPUT,
	       "target: none at all is bad input");
	tap_str(err.msg, "desired: no metadata.name; name the node with --node",
		"target: saying how to name it");
	tap_ok(!kt_nodesend_target(named, "Bad_Name", NULL, &err) && err.kind == KT_ERR_INPUT,
	       "target: a name that is no node name is refused");
	tap_ok(!kt_nodesend_target(list, NULL, NULL, &err) &&
		       strstr(err.msg, "expected a node object") != NULL,
	       "target: a document that is no object is refused");
	cJSON_Delete(named);
	cJSON_Delete(bare);
	cJSON_Delete(cur);
	cJSON_Delete(list);
}

int main(void)
{
	test_target();
	test_status_text();
	test_meta_text();
	test_original();
	test_stamp();
	test_patch();
	test_fixpoint();
	test_times_kept();
	test_send();
	test_docpush();
	test_docpush_same_rules();
	test_docpush_linear();
	return tap_done();
}
