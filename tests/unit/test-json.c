/* SPDX-License-Identifier: Apache-2.0 */
/* test-json: the reader, exact numbers, YAML, printers and equality */
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

static char *roundtrip(const char *text, unsigned flags)
{
	struct kt_err err = { 0 };
	cJSON *doc = kt_json_parse("t", text, strlen(text), &err);
	char *out;

	if (!doc)
		return strdup(err.msg);
	out = kt_json_print(doc, flags);
	cJSON_Delete(doc);
	out[strlen(out) - 1] = '\0';
	return out;
}

static void check(const char *in, unsigned flags, const char *want, const char *name)
{
	char *got = roundtrip(in, flags);

	tap_str(got, want, name);
	free(got);
}

static void test_numbers(void)
{
	check("{\"a\":9223372036854775807,\"b\":3.4028234663852886e+38,\"c\":1.0}", 0,
	      "{\"a\":9223372036854775807,\"b\":3.4028234663852886e+38,\"c\":1.0}",
	      "numbers keep their text");
	check("[-0,1e3,0.5]", 0, "[-0,1e3,0.5]", "exponent and negative zero kept");
	check("{\"b\":1,\"a\":{\"d\":1,\"c\":2}}", KT_JSON_SORTED,
	      "{\"a\":{\"c\":2,\"d\":1},\"b\":1}", "sorted keys at every level");
	check("{\"a\":\"<&>\"}", KT_JSON_SORTED, "{\"a\":\"\\u003c\\u0026\\u003e\"}",
	      "patch strings escaped as Go does");
	check("{\"a\":[1,{}],\"b\":[]}", KT_JSON_PRETTY,
	      "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}", "pretty like jq");
	check("\"\\u00e9\\ud83d\\ude00\\n\"", 0, "\"\xc3\xa9\xf0\x9f\x98\x80\\n\"",
	      "escapes decoded to UTF-8");
}

static void test_errors(void)
{
	check("{\"a\":1", 0, "t:1:7: unexpected end of input, expected ',' or '}'",
	      "truncated object names the end");
	check("{\n  \"a\": }", 0, "t:2:8: unexpected '}', expected a value",
	      "line and column of a bad value");
	check("[01]", 0, "t:1:2: invalid number", "leading zero refused");
	check("{} {}", 0, "t:1:4: unexpected data after the document",
	      "a second document refused without a stream");
	check("", 0, "t: empty input, expected a document", "empty input refused");
	check("a: [1", 0, "t:2:1: did not find expected ',' or ']' while parsing a flow sequence",
	      "YAML errors carry a position");
}

static void test_yaml(void)
{
	check("a: 1\nb: [x, 'y', \"2\"]\nc: true\nd: ~\ne: 1.5\nf: 010\n", 0,
	      "{\"a\":1,\"b\":[\"x\",\"y\",\"2\"],\"c\":true,\"d\":null,\"e\":1.5,\"f\":10}",
	      "YAML scalars resolved");
	check("---\na: 1\n", 0, "{\"a\":1}", "a YAML document may start with ---");
	check("null", 0, "null", "a null document is a document");
	check("-12", 0, "-12", "a negative number is JSON");
	check("nullable: true\n", 0, "{\"nullable\":true}", "a key that starts like null is YAML");
	check("a: &x {k: v}\nb: *x\n", 0, "{\"a\":{\"k\":\"v\"},\"b\":{\"k\":\"v\"}}",
	      "YAML aliases copied");
}

static void test_stream(void)
{
	const char *text = "{\"a\":1}\n[2]{\"b\":\"}\"}\n";
	struct kt_err err = { 0 };
	struct kt_json_reader *r = kt_json_reader_mem("s", text, strlen(text), 0, KT_JSON_STREAM,
						      &err);
	cJSON *doc;
	int n = 0;

	while (kt_json_reader_next(r, &doc, &err) == 1) {
		n++;
		cJSON_Delete(doc);
	}
	kt_json_reader_free(r);
	tap_ok(n == 3, "a concatenated stream gives each document");

	text = "a: 1\n---\n---\nb: 2\n";
	r = kt_json_reader_mem("s", text, strlen(text), 0, KT_JSON_STREAM, &err);
	n = 0;
	while (kt_json_reader_next(r, &doc, &err) == 1) {
		n++;
		cJSON_Delete(doc);
	}
	tap_ok(n == 2, "a YAML stream skips empty documents");
	tap_ok(kt_json_reader_next(r, &doc, &err) == 0, "asking again after the end is still the end");
	kt_json_reader_free(r);

	text = "{\"a\":\"0123456789\"}";
	r = kt_json_reader_mem("s", text, strlen(text), 8, 0, &err);
	tap_ok(kt_json_reader_next(r, &doc, &err) == -1 &&
		       strstr(err.msg, "document larger than 8 bytes"),
	       "a document over the cap is refused");
	kt_json_reader_free(r);
}

static void test_equal(void)
{
	struct kt_err err = { 0 };
	cJSON *a = kt_json_parse("a", "{\"x\":1,\"y\":[1,2]}", 17, &err);
	cJSON *b = kt_json_parse("b", "{\"y\":[1,2],\"x\":1}", 17, &err);
	cJSON *c = kt_json_parse("c", "{\"y\":[1,2],\"x\":1.0}", 19, &err);
	cJSON *d = kt_json_parse("d", "{\"y\":[2,1],\"x\":1}", 17, &err);

	tap_ok(kt_json_equal(a, b), "key order does not matter");
	tap_ok(!kt_json_equal(a, c), "an integer never equals a float");
	tap_ok(!kt_json_equal(a, d), "array order matters");
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(d);
}

int main(void)
{
	test_numbers();
	test_errors();
	test_yaml();
	test_stream();
	test_equal();
	return tap_done();
}
