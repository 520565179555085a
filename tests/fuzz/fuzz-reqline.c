/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-reqline: kube-request --stream's request lines.  The input is cut at
 * each newline and every piece parsed as a line.  Properties: a line is a
 * request or refused as bad input, never half; a refusal says where
 * ("-:LINE:COL: "); the ID given back is "-" or a word of the line; a request
 * has a known method, a path starting with '/', a body exactly when its
 * method allows one; an answer is one line of three tab-separated fields.
 */
#include "fuzz.h"
#include "reqline.h"

static void check_answer(const char *id, long code, const char *text)
{
	struct kt_sb sb = { 0 };
	const char *s, *nl;
	int tabs = 0;

	kt_reqline_answer(&sb, id, code, text);
	s = kt_sb_str(&sb);
	nl = strchr(s, '\n');
	FUZZ_CHECK(sb.oom || (nl && nl[1] == '\0'));
	for (; *s && *s != '\n'; s++) {
		FUZZ_CHECK((unsigned char)*s >= 0x20 || *s == '\t');
		FUZZ_CHECK(*s != 0x7f);
		tabs += *s == '\t';
	}
	FUZZ_CHECK(sb.oom || tabs == 2);
	kt_sb_release(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *p, *end, *nl;
	long lineno = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	end = buf + size;
	for (p = buf; p < end; p = nl + 1) {
		struct kt_reqline r;
		struct kt_err err = { 0 };
		size_t len;
		bool body_ok;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		len = (size_t)(nl - p);
		lineno++;
		if (kt_reqline_parse(p, len, lineno, &r, &err) < 0) {
			FUZZ_CHECK(err.kind == KT_ERR_INPUT || !strcmp(err.msg, "out of memory"));
			FUZZ_CHECK(!strncmp(err.msg, "-:", 2));
			FUZZ_CHECK(r.id && r.json == NULL && r.body_kind == KT_REQLINE_BODY_NONE);
			check_answer(r.id, -1, err.msg);
			continue;
		}
		FUZZ_CHECK(r.id && r.id[0] && !strchr(r.id, ' ') && !strchr(r.id, '\t'));
		FUZZ_CHECK(strlen(r.id) <= KT_REQLINE_ID_MAX);
		FUZZ_CHECK(r.path && r.path[0] == '/');
		FUZZ_CHECK(!strcmp(r.method, "GET") || !strcmp(r.method, "POST") ||
			   !strcmp(r.method, "PUT") || !strcmp(r.method, "PATCH") ||
			   !strcmp(r.method, "DELETE") || !strcmp(r.method, "HEAD"));
		body_ok = r.body_kind == KT_REQLINE_BODY_NONE
			      ? strcmp(r.method, "POST") && strcmp(r.method, "PUT") &&
				    strcmp(r.method, "PATCH")
			      : strcmp(r.method, "GET") && strcmp(r.method, "HEAD");
		FUZZ_CHECK(body_ok);
		FUZZ_CHECK((r.body_kind == KT_REQLINE_BODY_INLINE) == (r.json != NULL));
		FUZZ_CHECK(r.body_kind != KT_REQLINE_BODY_FILE || (r.body && r.body[0]));
		check_answer(r.id, 200, p + len > p ? r.path : "");
		cJSON_Delete(r.json);
	}
	free(buf);
	return 0;
}
