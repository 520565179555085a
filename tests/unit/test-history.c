/* SPDX-License-Identifier: Apache-2.0 */
/* test-history: node-history's records, changes, messages and authors */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "kt.h"
#include "tap.h"

static const char base[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"vk-1\","
	"\"resourceVersion\":\"7\",\"labels\":{\"tier\":\"gold\",\"kubernetes.io/os\":\"linux\"},"
	"\"annotations\":{\"a.b/c\":\"yes\"},"
	"\"managedFields\":[{\"manager\":\"kt-agent\",\"operation\":\"Update\","
	"\"time\":\"2026-12-01T10:00:00Z\",\"fieldsV1\":{\"f:status\":{\"f:conditions\":"
	"{\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\"f:status\":{}}}}}},"
	"{\"manager\":\"node-problem-detector\",\"operation\":\"Update\","
	"\"time\":\"2026-12-01T09:00:00Z\",\"fieldsV1\":{\"f:status\":{\"f:conditions\":"
	"{\"k:{\\\"type\\\":\\\"KernelDeadlock\\\"}\":{\"f:status\":{}}}}}},"
	"{\"manager\":\"kubectl-edit\",\"operation\":\"Update\","
	"\"time\":\"2026-12-01T08:00:00Z\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":"
	"{\"f:tier\":{}}},\"f:spec\":{\"f:taints\":{}}}}]},"
	"\"spec\":{\"taints\":[{\"key\":\"x\",\"value\":\"1\",\"effect\":\"NoSchedule\"}]},"
	"\"status\":{\"capacity\":{\"cpu\":\"4\",\"pods\":\"110\"},\"conditions\":["
	"{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
	"\"message\":\"ok\",\"lastHeartbeatTime\":\"2026-12-01T10:00:00Z\","
	"\"lastTransitionTime\":\"2026-12-01T09:30:00Z\"},"
	"{\"type\":\"KernelDeadlock\",\"status\":\"False\",\"reason\":\"KernelHasNoDeadlock\","
	"\"lastHeartbeatTime\":\"2026-12-01T10:00:00Z\","
	"\"lastTransitionTime\":\"2026-12-01T09:00:00Z\"}]}}";

static void test_record(void)
{
	cJSON *n = tap_doc(base), *rec = kt_history_record(n, false), *all, *back;
	struct kt_err err = { 0 };
	char *text;

	tap_ok(!kt_json_path(rec, "metadata.resourceVersion") &&
		       !kt_json_path(rec, "metadata.managedFields"),
	       "record: resourceVersion and managedFields left out");
	text = kt_json_print(rec, 0);
	tap_ok(text && !strstr(text, "lastHeartbeatTime"), "record: lastHeartbeatTime left out");
	free(text);
	all = kt_history_record(n, true);
	tap_ok(kt_go_equal(all, n), "record: --keep-heartbeats keeps everything");
	text = kt_history_render(all);
	back = text ? kt_json_parse("rendered", text, strlen(text), &err) : NULL;
	tap_ok(back && kt_go_equal(back, all), "render: reads back as the same document");
	tap_ok(text && strstr(text, "\n  labels:\n    kubernetes.io/os: linux\n    tier: gold\n"),
	       "render: keys sorted, one field a line");
	tap_ok(text && strstr(text, "  - lastHeartbeatTime: \"2026-12-01T10:00:00Z\"\n"
				    "    lastTransitionTime: \"2026-12-01T09:30:00Z\"\n"),
	       "render: list items as a block sequence, times quoted");
	tap_ok(text && strstr(text, "    \"a.b/c\": \"yes\"\n") == NULL &&
		       strstr(text, "    a.b/c: \"yes\"\n"),
	       "render: a YAML boolean word stays a string");
	free(text);
	cJSON_Delete(back);
	cJSON_Delete(all);
	cJSON_Delete(rec);
	cJSON_Delete(n);
}

/* the changes from base to base with edit applied (a merge patch) */
static cJSON *changes_after(const char *patch, cJSON **after)
{
	cJSON *a = tap_doc(base), *p = tap_doc(patch), *b, *ra, *rb, *ch;
	struct kt_err err = { 0 };

	b = NULL;
	if (kt_smp_apply(a, p, NULL, &b, &err) < 0)
		printf("# %s\n", err.msg);
	ra = kt_history_record(a, false);
	rb = kt_history_record(b, false);
	ch = kt_history_changes(ra, rb, false);
	*after = b;
	cJSON_Delete(ra);
	cJSON_Delete(rb);
	cJSON_Delete(p);
	cJSON_Delete(a);
	return ch;
}

/* the first line of the message for changes */
static char *summary(const cJSON *ch)
{
	char *msg = kt_history_message("vk-1", ch);

	if (msg)
		msg[strcspn(msg, "\n")] = '\0';
	return msg;
}

static void test_condition(void)
{
	static const char flip[] =
		"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\","
		"\"reason\":\"KubeletNotReady\",\"message\":\"PLEG is not healthy\","
		"\"lastTransitionTime\":\"2026-12-01T10:05:00Z\"},{\"type\":\"KernelDeadlock\","
		"\"status\":\"False\",\"reason\":\"KernelHasNoDeadlock\","
		"\"lastTransitionTime\":\"2026-12-01T09:00:00Z\"}]}}";
	cJSON *after, *ch = changes_after(flip, &after);
	char *s = summary(ch);

	tap_str(s, "vk-1: Ready True -> False (KubeletNotReady: PLEG is not healthy)",
		"changes: a Ready flip in words");
	tap_str(kt_history_author(after, ch), "kt-agent",
		"author: the manager that owns the changed condition");
	free(s);
	cJSON_Delete(ch);
	cJSON_Delete(after);
}

static void test_taint_label(void)
{
	static const char edit[] =
		"{\"metadata\":{\"labels\":{\"tier\":null,\"zone\":\"a\"}},"
		"\"spec\":{\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\","
		"\"effect\":\"NoExecute\"}]}}";
	cJSON *after, *ch = changes_after(edit, &after);
	char *msg = kt_history_message("vk-1", ch);

	tap_str(msg,
		"vk-1: +taint node.kubernetes.io/unreachable:NoExecute, -taint x=1:NoSchedule "
		"and 2 more\n\n"
		"+taint node.kubernetes.io/unreachable:NoExecute\n-taint x=1:NoSchedule\n"
		"label tier=gold removed\nlabel zone=a added\n",
		"changes: taints and labels in words, one line each in the body");
	tap_str(kt_history_author(after, ch), "kubectl-edit",
		"author: the owner of the labels and taints");
	free(msg);
	cJSON_Delete(ch);
	cJSON_Delete(after);
}

static void test_fields(void)
{
	cJSON *after, *ch = changes_after("{\"status\":{\"capacity\":{\"cpu\":\"8\"}}}", &after);
	char *s = summary(ch);
	cJSON *same, *none = changes_after("{\"metadata\":{\"resourceVersion\":\"9\"},"
					   "\"status\":{\"conditions\":[{\"type\":\"Ready\","
					   "\"status\":\"True\",\"reason\":\"KubeletReady\","
					   "\"message\":\"ok\",\"lastHeartbeatTime\":"
					   "\"2026-12-01T10:00:10Z\",\"lastTransitionTime\":"
					   "\"2026-12-01T09:30:00Z\"},{\"type\":\"KernelDeadlock\","
					   "\"status\":\"False\",\"reason\":\"KernelHasNoDeadlock\","
					   "\"lastHeartbeatTime\":\"2026-12-01T10:00:10Z\","
					   "\"lastTransitionTime\":\"2026-12-01T09:00:00Z\"}]}}",
					   &same);

	tap_str(s, "vk-1: status.capacity.cpu: 4 -> 8", "changes: any other field by its path");
	tap_ok(none && cJSON_GetArraySize(none) == 0, "changes: a heartbeat alone is no change");
	free(s);
	cJSON_Delete(none);
	cJSON_Delete(same);
	cJSON_Delete(ch);
	cJSON_Delete(after);
}

/* a node with n conditions C0... of status st, all owned by "npd", and Z owned
 * through a key written with a space, as another writer might */
static cJSON *many(int n, const char *st, const char *z)
{
	cJSON *node = cJSON_Parse("{\"metadata\":{\"name\":\"big\",\"managedFields\":["
				  "{\"manager\":\"npd\",\"time\":\"2026-12-01T10:00:00Z\","
				  "\"fieldsV1\":{\"f:status\":{\"f:conditions\":{}}}},"
				  "{\"manager\":\"spacey\",\"time\":\"2026-12-01T09:00:00Z\","
				  "\"fieldsV1\":{\"f:status\":{\"f:conditions\":"
				  "{\"k:{\\\"type\\\": \\\"Z\\\"}\":{}}}}}]},"
				  "\"status\":{\"conditions\":[]}}");
	cJSON *mf0 = cJSON_GetArrayItem(kt_json_path(node, "metadata.managedFields"), 0);
	cJSON *fv = kt_json_path(mf0, "fieldsV1.f:status.f:conditions");
	cJSON *conds = cJSON_GetObjectItem(cJSON_GetObjectItem(node, "status"), "conditions");
	char t[32], k[48];

	for (int i = 0; i <= n; i++) {
		cJSON *c = cJSON_CreateObject();

		snprintf(t, sizeof(t), i < n ? "C%d" : "Z", i);
		snprintf(k, sizeof(k), "k:{\"type\":\"%s\"}", t);
		cJSON_AddStringToObject(c, "type", t);
		cJSON_AddStringToObject(c, "status", i < n ? st : z);
		cJSON_AddStringToObject(c, "reason", "R");
		cJSON_AddItemToArray(conds, c);
		if (i < n)
			cJSON_AddItemToObject(fv, k, cJSON_CreateObject());
	}
	return node;
}

static void test_large(void)
{
	cJSON *a = many(3000, "True", "True"), *b = many(3000, "False", "True");
	cJSON *c = many(3000, "False", "False");
	cJSON *ab = kt_history_changes(a, b, false), *bc = kt_history_changes(b, c, false);

	tap_ok(ab && cJSON_GetArraySize(ab) == 3000, "3,000 conditions flipped: 3,000 changes");
	tap_str(ab ? kt_history_author(b, ab) : NULL, "npd",
		"author: found by each condition's key among 3,000");
	tap_ok(bc && cJSON_GetArraySize(bc) == 1, "one condition flipped among 3,001: one change");
	tap_str(bc ? kt_history_author(c, bc) : NULL, "spacey",
		"author: a key with other spacing names the same condition");
	cJSON_Delete(ab);
	cJSON_Delete(bc);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
}

static void test_node(void)
{
	cJSON *n = tap_doc(base), *ch;
	char *s;

	ch = kt_history_changes(NULL, n, false);
	s = summary(ch);
	tap_str(s, "vk-1: first seen", "changes: a node first seen");
	free(s);
	cJSON_Delete(ch);
	ch = kt_history_changes(NULL, n, true);
	s = summary(ch);
	tap_str(s, "vk-1: created", "changes: a node that came back");
	free(s);
	cJSON_Delete(ch);
	ch = kt_history_changes(n, NULL, false);
	s = summary(ch);
	tap_str(s, "vk-1: deleted", "changes: a node deleted");
	free(s);
	cJSON_Delete(ch);
	cJSON_Delete(n);
}

int main(void)
{
	test_large();
	test_record();
	test_condition();
	test_taint_label();
	test_fields();
	test_node();
	return tap_done();
}
