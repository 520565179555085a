/* SPDX-License-Identifier: Apache-2.0 */
/* test-reqline: kube-request --stream's request lines parsed, its answers written */
#include <stdio.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

/* parses text as line 1; "ok" or the error message */
static const char *parse(const char *text, struct kt_reqline *r)
{
	static char buf[4096];
	static struct kt_err err;

	snprintf(buf, sizeof(buf), "%s", text);
	memset(&err, 0, sizeof(err));
	if (kt_reqline_parse(buf, strlen(buf), 1, r, &err) < 0)
		return err.msg;
	return "ok";
}

static void test_requests(void)
{
	struct kt_reqline r;

	tap_str(parse("a\tget\t/api/v1/nodes", &r), "ok", "a GET, the method in any case");
	tap_ok(!strcmp(r.id, "a") && !strcmp(r.method, "GET") && !strcmp(r.path, "/api/v1/nodes") &&
		   !r.content_type && r.body_kind == KT_REQLINE_BODY_NONE,
	       "its fields");
	tap_str(parse("p\tPATCH\t/x/status\tmerge\t@/tmp/f", &r), "ok", "a PATCH from a file");
	tap_ok(!strcmp(r.content_type, "application/merge-patch+json") &&
		   r.body_kind == KT_REQLINE_BODY_FILE && !strcmp(r.body, "/tmp/f"),
	       "the patch type's MIME type, the file");
	tap_str(parse("d\tDELETE\t/x\t-\t{\"a\":\t1}", &r), "ok", "an inline body, a tab in it");
	tap_ok(r.body_kind == KT_REQLINE_BODY_INLINE && r.json &&
		   cJSON_GetObjectItem(r.json, "a")->valuedouble == 1,
	       "the body parsed");
	cJSON_Delete(r.json);
	tap_str(parse("d\tDELETE\t/x\t\t", &r), "ok", "a DELETE with empty TYPE and BODY");
	tap_ok(r.body_kind == KT_REQLINE_BODY_NONE, "has no body");
	tap_str(parse("x\tPOST\t/x\tapplication/yaml\t@f", &r), "ok", "a MIME type as TYPE");
	tap_str(r.content_type, "application/yaml", "kept as given");
}

static void test_refused(void)
{
	struct kt_reqline r;

	tap_str(parse("a b\tGET\t/", &r),
		"-:1:1: the ID is empty, longer than 253 bytes, or not printable ASCII without "
		"spaces",
		"an ID with a space");
	tap_str(r.id, "-", "answered as '-'");
	tap_str(parse("a\tGET", &r),
		"-:1:6: a request is ID, METHOD and PATH (then TYPE and BODY), separated by tabs",
		"no path");
	tap_str(r.id, "a", "answered with its ID");
	tap_str(parse("a\tGETS\t/", &r),
		"-:1:3: unknown method (GET, POST, PUT, PATCH, DELETE or HEAD)", "unknown method");
	tap_str(parse("a\tPATCH\t/x", &r), "-:1:11: this method needs a body", "PATCH, no body");
	tap_str(parse("a\tHEAD\t/x\t-\t{}", &r), "-:1:13: this method takes no body",
		"HEAD with a body");
	tap_str(parse("a\tPUT\t/x\tjson\t{}", &r), "-:1:10: a patch type is for PATCH only",
		"a patch type on PUT");
	tap_str(parse("a\tPOST\t/x\t-\t{} x", &r),
		"-:1:16: unexpected 'x', expected end of document", "text after the body");
	tap_ok(r.json == NULL && r.body_kind == KT_REQLINE_BODY_NONE, "nothing kept of it");
}

static void test_answers(void)
{
	struct kt_sb sb = { 0 };

	kt_reqline_answer(&sb, "a", 201, "{\"x\":1}");
	kt_reqline_answer(&sb, "b", 0, "failed:\tnow\r\nthen \x1b[31m\xc2\x85");
	kt_reqline_answer(&sb, "-", -1, NULL);
	tap_str(kt_sb_str(&sb),
		"a\t201\t{\"x\":1}\n"
		"b\t0\tfailed: now  then ?[31m?\n"
		"-\tinvalid\t\n",
		"one line each, three fields, control characters replaced");
	kt_sb_release(&sb);
}

int main(void)
{
	test_requests();
	test_refused();
	test_answers();
	return tap_done();
}
