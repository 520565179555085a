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

/* a repeated key keeps the first one's place and takes the last value, in a
 * small object and past the members compared one by one */
static void test_duplicate_keys(void)
{
	char in[1024], want[1024];
	size_t i = 0, o = 0;

	check("{\"a\":1,\"b\":2,\"a\":{\"c\":3},\"b\":[4]}", 0, "{\"a\":{\"c\":3},\"b\":[4]}",
	      "JSON: the last duplicate key wins, in the first one's place");
	i += (size_t)snprintf(in + i, sizeof(in) - i, "{");
	o += (size_t)snprintf(want + o, sizeof(want) - o, "{");
	for (int k = 0; k < 40; k++) {
		i += (size_t)snprintf(in + i, sizeof(in) - i, "\"k%02d\":%d,", k, k);
		if (k == 2 || k == 30)
			o += (size_t)snprintf(want + o, sizeof(want) - o, "\"k%02d\":\"last\",", k);
		else if (k == 39)
			o += (size_t)snprintf(want + o, sizeof(want) - o, "\"k39\":[1]}");
		else
			o += (size_t)snprintf(want + o, sizeof(want) - o, "\"k%02d\":%d,", k, k);
	}
	snprintf(in + i, sizeof(in) - i,
		 "\"k30\":{\"x\":1},\"k02\":\"mid\",\"k39\":[1],\"k30\":\"last\",\"k02\":\"last\"}");
	check(in, 0, want, "JSON: the same in an object of 40 members, keys early and late");
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
	/* a C string would end at the NUL: refused, never cut short */
	check("{\"a\":\"x\\u0000y\"}", 0, "t:1:9: \\u0000 in a string: a NUL cannot be kept",
	      "\\u0000 in a JSON string refused");
	check("a: \"x\\0y\"\n", 0, "t:1:4: a NUL in a string cannot be kept",
	      "\\0 in a YAML string refused");
	check("{\"a\":\"x\\u0001y\"}", 0, "{\"a\":\"x\\u0001y\"}", "other control escapes kept");
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
	check("v: [0x1F, 0o17, +12, -007, 1., .5, +1.5e2, 1e3, -0.0, 1_000, 0x, -0x5, 0o8, .inf, 1e]",
	      0, "{\"v\":[31,15,12,-7,1,0.5,150,1e3,-0.0,\"1_000\",\"0x\",\"-0x5\",\"0o8\",\".inf\","
	      "\"1e\"]}", "plain scalars resolved by the core schema's patterns");
}

/* strings that start the printer's table of special words, found with the
 * sanitizers: each is a plain string, the words themselves are quoted */
static void test_yaml_print_words(void)
{
	struct kt_err err = { 0 };
	cJSON *d = tap_doc("{\"a\":\"|\",\"b\":\"|~\",\"c\":\"|~|n\",\"d\":\"~\","
			   "\"e\":\"NULL\",\"f\":\"|no\",\"g\":\".NAN\"}");
	char *y = d ? kt_yaml_print(d, &err) : NULL;

	tap_str(y, "a: '|'\nb: '|~'\nc: '|~|n'\nd: \"~\"\ne: \"NULL\"\nf: '|no'\ng: \".NAN\"\n",
		"-o yaml: a prefix of the special words is read within its table");
	free(y);
	cJSON_Delete(d);
}

/* issue 10 rows 1, 2 and 9: hostile YAML */
static void test_yaml_hostile(void)
{
	const char *laughs = "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a]\n"
			     "c: [*b, *b, *b, *b, *b, *b, *b, *b]\n";
	struct kt_err err = { 0 };
	struct kt_json_reader *r;
	cJSON *doc = NULL;

	check("a: &x [1]\na: 2\nb: *x\nc: xxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", 0,
	      "{\"a\":2,\"b\":[1],\"c\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
	      "an alias to a value replaced by a duplicate key copies the anchored value");
	check("m: {k: &v [1]}\nm: {k: 2}\nn: *v\n", 0, "{\"m\":{\"k\":2},\"n\":[1]}",
	      "an alias into a replaced mapping still copies the anchored value");
	check("a: 1\nb: 2\na: 3\n", 0, "{\"a\":3,\"b\":2}",
	      "the last duplicate key wins, in the first one's place");
	check("a: &x 1\nb: 2\nc: 3\nb: *x\nd: 4\n", 0, "{\"a\":1,\"b\":1,\"c\":3,\"d\":4}",
	      "with anchors about, a middle key repeated keeps its place too");
	/* b copies 6 * 9 nodes, c 8 * 55: 494 in all */
	r = kt_json_reader_open_mem("l", laughs, strlen(laughs), 64 * 494, 0, &err);
	tap_ok(kt_json_reader_next(r, &doc, &err) == 1, "aliases within the budget expand");
	cJSON_Delete(doc);
	kt_json_reader_close(r);
	r = kt_json_reader_open_mem("l", laughs, strlen(laughs), 64 * 100, 0, &err);
	tap_str(kt_json_reader_next(r, &doc, &err) == -1 ? err.msg : "accepted",
		"l:3:5: aliases expand to more than 100 nodes (see --max-input)",
		"alias expansion past one node per 64 bytes of --max-input is refused");
	kt_json_reader_close(r);
	check("a: 99999999999999999999\nb: 18446744073709551615\nc: -9223372036854775809\n"
	      "d: +00099999999999999999999\ne: 0x1ffffffffffffffff\n", 0,
	      "{\"a\":99999999999999999999,\"b\":18446744073709551615,"
	      "\"c\":-9223372036854775809,\"d\":99999999999999999999,"
	      "\"e\":\"0x1ffffffffffffffff\"}",
	      "integers past int64 keep their exact digits");
	check("a: +1e999\nb: .5e999\nc: -1e999\nd: 1e-999\ne: +.5e91252\n", 0,
	      "{\"a\":\"+1e999\",\"b\":\".5e999\",\"c\":\"-1e999\",\"d\":1e-999,"
	      "\"e\":\"+.5e91252\"}",
	      "floats past the double range are strings, never inf");
}

static void test_stream(void)
{
	const char *text = "{\"a\":1}\n[2]{\"b\":\"}\"}\n";
	struct kt_err err = { 0 };
	struct kt_json_reader *r =
		kt_json_reader_open_mem("s", text, strlen(text), 0, KT_JSON_STREAM, &err);
	cJSON *doc;
	int n = 0;

	while (kt_json_reader_next(r, &doc, &err) == 1) {
		n++;
		cJSON_Delete(doc);
	}
	kt_json_reader_close(r);
	tap_ok(n == 3, "a concatenated stream gives each document");

	text = "a: 1\n---\n---\nb: 2\n";
	r = kt_json_reader_open_mem("s", text, strlen(text), 0, KT_JSON_STREAM, &err);
	n = 0;
	while (kt_json_reader_next(r, &doc, &err) == 1) {
		n++;
		cJSON_Delete(doc);
	}
	tap_ok(n == 2, "a YAML stream skips empty documents");
	tap_ok(kt_json_reader_next(r, &doc, &err) == 0, "asking again after the end is still the end");
	kt_json_reader_close(r);

	text = "{\"a\":\"0123456789\"}";
	r = kt_json_reader_open_mem("s", text, strlen(text), 8, 0, &err);
	tap_ok(kt_json_reader_next(r, &doc, &err) == -1 &&
		       strstr(err.msg, "document larger than 8 bytes"),
	       "a document over the cap is refused");
	kt_json_reader_close(r);
}

static void test_equal(void)
{
	struct kt_err err = { 0 };
	cJSON *a = kt_json_parse("a", "{\"x\":1,\"y\":[1,2]}", 17, &err);
	cJSON *b = kt_json_parse("b", "{\"y\":[1,2],\"x\":1}", 17, &err);
	cJSON *c = kt_json_parse("c", "{\"y\":[1,2],\"x\":1.0}", 19, &err);
	cJSON *d = kt_json_parse("d", "{\"y\":[2,1],\"x\":1}", 17, &err);

	cJSON *n = kt_json_parse("n", "{\"x\":null}", 10, &err);
	cJSON *e = kt_json_parse("e", "{}", 2, &err);

	tap_ok(kt_go_equal(a, b), "key order does not matter");
	tap_ok(!kt_go_equal(a, c), "an integer never equals a float");
	tap_ok(!kt_go_equal(a, d), "array order matters");
	/* the one deep-equal's null rule: a missing key reads as nil, as in Go,
	 * but a map holding a null differs from one without the key */
	tap_ok(kt_go_equal(kt_json_get(n, "x"), kt_json_get(e, "x")),
	       "a null member equals a missing one");
	tap_ok(!kt_go_equal(n, e), "a map with a null member is not an empty map");
	cJSON_Delete(n);
	cJSON_Delete(e);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(d);
}

int main(void)
{
	test_duplicate_keys();
	test_numbers();
	test_errors();
	test_yaml();
	test_yaml_hostile();
	test_yaml_print_words();
	test_stream();
	test_equal();
	return tap_done();
}
