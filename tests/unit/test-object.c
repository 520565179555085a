/* SPDX-License-Identifier: Apache-2.0 */
/* test-object: a list's items typed, and documents out as JSON or YAML (kt_emit) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "kt.h"
#include "tap.h"

static cJSON *parse(const char *text)
{
	struct kt_err err = { 0 };
	cJSON *doc = kt_json_parse("test", text, strlen(text), &err);

	if (!doc) {
		printf("Bail out! %s\n", err.msg);
		exit(1);
	}
	return doc;
}

/* doc as compact JSON, in buf */
static const char *text_of(const cJSON *doc, char *buf, size_t size)
{
	char *t = kt_json_print(doc, 0);

	snprintf(buf, size, "%s", t ? t : "(null)");
	buf[strcspn(buf, "\n")] = '\0';
	free(t);
	return buf;
}

static void test_item_kind(void)
{
	char b[16];

	tap_str(kt_object_item_kind("PodList", b, sizeof(b)), "Pod", "item kind: PodList -> Pod");
	tap_str(kt_object_item_kind("List", b, sizeof(b)), "", "item kind: a bare List has none");
	tap_str(kt_object_item_kind("Pod", b, sizeof(b)), "", "item kind: not a list");
	tap_str(kt_object_item_kind(NULL, b, sizeof(b)), "", "item kind: no kind");
	tap_str(kt_object_item_kind("VeryLongResourceList", b, sizeof(b)), "",
		"item kind: one that does not fit is none");
}

static void test_type_items(void)
{
	cJSON *list = parse("{\"kind\":\"NodeList\",\"apiVersion\":\"v1\",\"items\":["
			    "{\"metadata\":{\"name\":\"a\"}},"
			    "{\"kind\":\"Other\",\"metadata\":{\"name\":\"b\"}},"
			    "\"not an object\"]}");
	cJSON *empty = parse("{\"kind\":\"PodList\",\"apiVersion\":\"\",\"items\":[{}]}");
	char b[512];

	tap_ok(kt_object_type_items(list) == 0, "type items: succeeds");
	tap_str(text_of(kt_json_get_array(list, "items"), b, sizeof(b)),
		"[{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}},"
		"{\"apiVersion\":\"v1\",\"kind\":\"Other\",\"metadata\":{\"name\":\"b\"}},"
		"\"not an object\"]",
		"type items: first, an item's own kind kept, a non-object left alone");
	kt_object_type_items(empty);
	tap_str(text_of(kt_json_get_array(empty, "items"), b, sizeof(b)), "[{\"kind\":\"Pod\"}]",
		"type items: an empty apiVersion is not set");
	cJSON_Delete(list);
	cJSON_Delete(empty);
}

/* what fn(doc) writes on stdout, in buf */
static const char *stdout_of(int (*fn)(cJSON *, unsigned), cJSON *doc, char *buf, size_t size,
			     int *rc)
{
	FILE *f = tmpfile();
	int saved = dup(STDOUT_FILENO);
	size_t n;

	fflush(stdout);
	dup2(fileno(f), STDOUT_FILENO);
	*rc = fn(doc, 0);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int emit(cJSON *doc, unsigned flags)
{
	return kt_emit(doc, flags);
}

static void test_emit(void)
{
	cJSON *list = parse("{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
			    "{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}}]}");
	cJSON *plain = parse("{\"kind\":\"Pod\",\"items\":[1]}");
	cJSON *one = parse("{\"items\":[1]}");
	char b[512];
	int rc;

	tap_str(stdout_of(kt_emit_items, list, b, sizeof(b), &rc),
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\"}}\n"
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\"}}\n",
		"emit items: one document an item, typed");
	tap_ok(rc == 0, "emit items: 0");
	tap_str(stdout_of(kt_emit_items, one, b, sizeof(b), &rc), "{\"items\":[1]}\n",
		"emit items: a document with no kind as it is");
	kt_output_set_yaml(true);
	tap_str(stdout_of(emit, plain, b, sizeof(b), &rc),
		"---\nkind: Pod\nitems:\n- 1\n",
		"emit yaml: '---' before a document that is not the first");
	kt_output_set_yaml(false);
	cJSON_Delete(list);
	cJSON_Delete(plain);
	cJSON_Delete(one);
}

/* a reader that went away while SIGPIPE is ignored (as libcurl does) */
static void test_reader_gone(void)
{
	int p[2], status = 0;
	pid_t pid;

	if (pipe(p) < 0)
		return;
	close(p[0]); /* no reader from the start */
	pid = fork();
	if (pid == 0) {
		cJSON *doc = cJSON_CreateObject();

		signal(SIGPIPE, SIG_IGN);
		dup2(p[1], STDOUT_FILENO);
		kt_emit(doc, 0);
		_exit(7);
	}
	close(p[1]);
	waitpid(pid, &status, 0);
	tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE,
	       "emit: a reader that went away ends the process by SIGPIPE");
}

/* one line for a failed reply, whoever asked: api's requests and lease's steps */
static void test_status_error(void)
{
	struct kt_err err = { 0 };
	cJSON *st = tap_doc("{\"kind\":\"Status\",\"message\":\"nodes \\\"x\\\" not found\",\"code\":404}");
	cJSON *same = tap_doc("{\"kind\":\"Status\",\"message\":\"Unauthorized\",\"code\":401}");
	cJSON *bare = tap_doc("{\"kind\":\"Status\",\"reason\":\"TooManyRequests\"}");
	cJSON *other = tap_doc("{\"kind\":\"Node\",\"message\":\"not a Status\"}");

	kt_object_status_error(&err, KT_ERR_NOTFOUND, "GET /api/v1/nodes/x", 404, st);
	tap_str(err.msg, "GET /api/v1/nodes/x: 404 Not Found: nodes \"x\" not found",
		"status error: request, status, phrase, the server's message");
	tap_ok(err.kind == KT_ERR_NOTFOUND && err.http_status == 404,
	       "status error: the kind and the status are kept");
	kt_object_status_error(&err, KT_ERR_FAIL, "lease/x (kube-node-lease)", 401, same);
	tap_str(err.msg, "lease/x (kube-node-lease): 401 Unauthorized",
		"status error: a message that repeats the phrase is left out");
	kt_object_status_error(&err, KT_ERR_FAIL, "node/x", 429, bare);
	tap_str(err.msg, "node/x: 429 Too Many Requests: TooManyRequests",
		"status error: the Status reason when there is no message");
	kt_object_status_error(&err, KT_ERR_FAIL, "node/x", 599, other);
	tap_str(err.msg, "node/x: 599 Server Error",
		"status error: a code with no phrase gets its class, a body not a Status no text");
	cJSON_Delete(st);
	cJSON_Delete(same);
	cJSON_Delete(bare);
	cJSON_Delete(other);
}

int main(void)
{
	test_status_error();
	test_item_kind();
	test_type_items();
	test_emit();
	test_reader_gone();
	return tap_done();
}
