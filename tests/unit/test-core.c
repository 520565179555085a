/* SPDX-License-Identifier: Apache-2.0 */
/* test-core: the core utilities, durations, times, redaction, atomic files */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

static void test_durations(void)
{
	static const struct {
		const char *in;
		int64_t ms;
	} ok[] = { { "500ms", 500 }, { "10s", 10000 }, { "1m30s", 90000 }, { "0", 0 },
		   { "1h", 3600000 }, { "1.5s", 1500 } };
	struct kt_err err = { 0 };
	char buf[32];
	int64_t ms;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		bool good = kt_duration_parse(ok[i].in, &ms, &err) == 0 && ms == ok[i].ms;

		tap_ok(good, ok[i].in);
	}
	tap_ok(kt_duration_parse("10", &ms, &err) < 0 && strstr(err.msg, "unit"),
	       "a number without a unit is refused");
	tap_ok(kt_duration_parse("5x", &ms, &err) < 0, "an unknown unit is refused");
	/* issue 10 row 10: only Go's number syntax, never NaN, infinity or hex */
	tap_ok(kt_duration_parse("nans", &ms, &err) < 0 && kt_duration_parse("infs", &ms, &err) < 0 &&
		       kt_duration_parse("0x10s", &ms, &err) < 0 &&
		       kt_duration_parse("1e3s", &ms, &err) < 0 && kt_duration_parse(".s", &ms, &err) < 0,
	       "nan, inf, hexadecimal and exponents are not durations");
	tap_ok(kt_duration_parse(".5s", &ms, &err) == 0 && ms == 500, ".5s is 500ms, as in Go");
	tap_ok(kt_duration_parse("-5s", &ms, &err) == 0 && ms == -5000, "-5s parses as Go's does");
	tap_ok(kt_duration_parse("9999999999999999999999999999999h", &ms, &err) < 0 &&
		       strstr(err.msg, "too large"),
	       "a duration past int64 milliseconds is too large");
	tap_str(kt_duration_format(90000, buf, sizeof(buf)), "1m30s", "format 1m30s");
	tap_str(kt_duration_format(250, buf, sizeof(buf)), "250ms", "format 250ms");
	/* as Go's time.Duration.String: fractions without trailing zeros */
	tap_str(kt_duration_format(1500, buf, sizeof(buf)), "1.5s", "format 1.5s, not 1.500s");
	tap_str(kt_duration_format(61500, buf, sizeof(buf)), "1m1.5s", "format 1m1.5s");
	tap_str(kt_duration_format(1050, buf, sizeof(buf)), "1.05s", "format 1.05s");
	tap_str(kt_duration_format(1001, buf, sizeof(buf)), "1.001s", "format 1.001s");
	tap_str(kt_duration_format(3600000, buf, sizeof(buf)), "1h0m0s", "format 1h0m0s");
	tap_str(kt_duration_format(-2500, buf, sizeof(buf)), "-2.5s", "format -2.5s");
	tap_str(kt_duration_format(0, buf, sizeof(buf)), "0s", "format 0s");
	tap_str(kt_duration_format(1, buf, sizeof(buf)), "1ms", "format 1ms");
	tap_str(kt_duration_format(999, buf, sizeof(buf)), "999ms", "format 999ms");
	tap_str(kt_duration_format(1000, buf, sizeof(buf)), "1s", "format 1s");
	tap_str(kt_duration_format(3661001, buf, sizeof(buf)), "1h1m1.001s", "format 1h1m1.001s");
	tap_str(kt_duration_format(100000000, buf, sizeof(buf)), "27h46m40s",
		"format: hours do not roll into days");
	tap_str(kt_duration_format(-1, buf, sizeof(buf)), "-1ms", "format -1ms");
	tap_str(kt_duration_format(INT64_MIN, buf, sizeof(buf)), "-2562047788015h12m55.808s",
		"format: the most negative duration");
}

static cJSON *j(const char *text)
{
	return kt_json_parse("test", text, strlen(text), NULL);
}

static void test_equal(void)
{
	cJSON *null = j("null"), *one = j("1"), *onef = j("1.0"), *onee = j("1e0");
	cJSON *a = j("{\"x\":[1,\"s\",true],\"y\":null}"), *b = j("{\"y\":null,\"x\":[1,\"s\",true]}");
	cJSON *c = j("{\"x\":[1,\"s\",true]}");

	tap_ok(kt_go_equal(NULL, NULL) && kt_go_equal(NULL, null) && kt_go_equal(null, NULL),
	       "equal: a NULL pointer is a JSON null, as a missing key reads nil in Go");
	tap_ok(!kt_go_equal(NULL, one), "equal: NULL is not a number");
	tap_ok(!kt_go_equal(one, onef), "equal: int64 1 is not float64 1.0");
	tap_ok(kt_go_equal(onef, onee), "equal: floats compare by value");
	tap_ok(kt_go_equal(a, b), "equal: key order does not count");
	tap_ok(!kt_go_equal(a, c), "equal: a null member is not a missing one inside a map");
	cJSON_Delete(null);
	cJSON_Delete(one);
	cJSON_Delete(onef);
	cJSON_Delete(onee);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
}

static void test_int_text(void)
{
	cJSON *big = j("9223372036854775807"), *over = j("9223372036854775808");
	cJSON *f = j("1.0"), *e = j("1e3");
	int64_t v = 0;

	tap_ok(kt_go_int64(big, &v) && v == INT64_MAX, "int text: the largest int64 fits exactly");
	tap_ok(!kt_go_int64(over, NULL), "int text: one more is a float64, as Go decodes it");
	tap_ok(!kt_go_int64(f, NULL) && !kt_go_int64(e, NULL), "int text: '.' or 'e' is a float");
	cJSON_Delete(big);
	cJSON_Delete(over);
	cJSON_Delete(f);
	cJSON_Delete(e);
}

static void test_go_printer(void)
{
	cJSON *s = cJSON_CreateString("a\bb\fc<d>&\x01\xe2\x80\xa8\n");
	char *t = kt_json_print(s, KT_JSON_GO_ESCAPE);

	/* encoding/json since Go 1.22 writes \b and \f short; 1.21 wrote \u0008 */
	tap_str(t, "\"a\\bb\\fc\\u003cd\\u003e\\u0026\\u0001\\u2028\\n\"\n",
		"Go printer: \\b and \\f short, < > & and U+2028 escaped");
	free(t);
	t = kt_json_print(s, KT_JSON_SORTED);
	tap_str(t, "\"a\\bb\\fc\\u003cd\\u003e\\u0026\\u0001\\u2028\\n\"\n",
		"Go printer: a patch (sorted) escapes the same way");
	free(t);
	cJSON_Delete(s);
	s = j("{\"b\":1,\"a\":{\"d\":1,\"c\":\"<\"}}");
	t = kt_json_print(s, KT_JSON_SORT_KEYS);
	tap_str(t, "{\"a\":{\"c\":\"<\",\"d\":1},\"b\":1}\n",
		"sort keys without Go escaping");
	free(t);
	kt_sort_keys(s);
	t = kt_json_print(s, 0);
	tap_str(t, "{\"a\":{\"c\":\"<\",\"d\":1},\"b\":1}\n", "kt_sort_keys: the tree itself");
	free(t);
	cJSON_Delete(s);
}

static void test_sb_hmap(void)
{
	struct kt_sb sb = { 0 };
	struct kt_hmap m = { .own_keys = true };
	char key[16];
	bool all = true;

	kt_sb_puts(&sb, "ab");
	kt_sb_printf(&sb, "%d%s", 12, "cd");
	kt_sb_trunc(&sb, 4);
	tap_str(kt_sb_str(&sb), "ab12", "sb: put, printf, trunc");
	kt_sb_release(&sb);
	tap_str(kt_sb_str(&sb), "", "sb: released is empty");
	for (long i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%ld", i);
		kt_hmap_put(&m, key, (void *)(i + 1));
	}
	kt_hmap_put_first(&m, "k7", (void *)99);
	for (long i = 0; i < 1000 && all; i++) {
		snprintf(key, sizeof(key), "k%ld", i);
		all = kt_hmap_get(&m, key) == (void *)(i + 1);
	}
	tap_ok(all && m.len == 1000 && !kt_hmap_has(&m, "k1000"),
	       "hmap: 1000 keys through growth; put_new keeps the first");
	kt_hmap_release(&m);
	tap_str(kt_http_reason(409), "Conflict", "http reason: 409");
	tap_str(kt_http_reason(299), "", "http reason: unknown is empty");
}

static void test_times(void)
{
	struct kt_err err = { 0 };
	char buf[40];
	int64_t us;

	tap_ok(kt_time_parse("2026-11-30T07:22:21.5Z", &us, &err) == 0, "parse a fraction");
	tap_str(kt_time_format(us, true, buf, sizeof(buf)), "2026-11-30T07:22:21.500000Z",
		"MicroTime has six digits");
	tap_str(kt_time_format(us, false, buf, sizeof(buf)), "2026-11-30T07:22:21Z",
		"Time has whole seconds");
	tap_ok(kt_time_parse("2026-11-30T09:22:21+02:00", &us, &err) == 0 &&
		       us == 1796023341000000LL,
	       "an offset is applied");
	tap_ok(kt_time_parse("yesterday", &us, &err) < 0, "garbage refused");
}

static void test_redact(void)
{
	char buf[512];

	kt_redact("Authorization: Bearer abc.def\nX: y", buf, sizeof(buf));
	tap_ok(!strstr(buf, "abc.def") && strstr(buf, "X: y"), "bearer token redacted");
	kt_redact("{\"token\":\"s3cr3t\",\"a\":1}", buf, sizeof(buf));
	tap_ok(!strstr(buf, "s3cr3t") && strstr(buf, "\"a\":1"), "JSON token redacted");
	kt_redact("-----BEGIN EC PRIVATE KEY-----\nMHcCAQ\n-----END EC PRIVATE KEY-----\nok",
		  buf, sizeof(buf));
	tap_ok(!strstr(buf, "MHcCAQ") && strstr(buf, "ok"), "PEM key redacted");
}

static void test_files(void)
{
	char dir[] = "/tmp/kt-test-XXXXXX", path[256], *buf = NULL;
	struct kt_err err = { 0 };
	struct kt_lock lk;
	size_t len;

	if (!mkdtemp(dir)) {
		tap_ok(false, "temp dir");
		return;
	}
	snprintf(path, sizeof(path), "%s/state.json", dir);
	tap_ok(kt_file_replace(path, "one", 3, 0666, &err) == 0, "replace creates");
	tap_ok(kt_file_replace(path, "two!", 4, 0666, &err) == 0, "replace overwrites");
	tap_ok(kt_file_read(path, NULL, 100, &buf, &len, &err) == 0 && len == 4 &&
		       !strcmp(buf, "two!"),
	       "read back the new content");
	free(buf);
	tap_ok(kt_file_read(path, NULL, 2, &buf, &len, &err) < 0 && err.about == KT_ERR_ABOUT_NONE,
	       "size cap enforced");
	snprintf(path, sizeof(path), "%s/none", dir);
	tap_ok(kt_file_read(path, "token file", 2, &buf, &len, &err) < 0 &&
		       err.about == KT_ERR_ABOUT_FILE && !strncmp(err.msg, "cannot read token file '", 24),
	       "a file that is not there: about the file, named by what it is");
	snprintf(path, sizeof(path), "%s/state.json", dir);
	tap_ok(kt_lock_acquire(&lk, path, &err) == 0, "lock taken");
	kt_lock_release(&lk);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.json.lock", dir);
	unlink(path);
	rmdir(dir);
}

static void test_names(void)
{
	static const char *good[] = { "vk-1", "a", "node.example.com", "0abc", "a-b.c-d" };
	static const char *bad[] = { "", "VK-1", "vk_1", "-vk", "vk-", "a..b", ".a", "a.",
				     "a.-b", "v k", "vk/1" };
	struct kt_err err = { 0 };
	char longname[300];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		tap_ok(kt_node_name_check(good[i], &err) == 0, good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tap_ok(kt_node_name_check(bad[i], &err) < 0 && err.kind == KT_ERR_INPUT,
		       bad[i][0] ? bad[i] : "empty name refused");
	tap_str(err.msg,
		"invalid node name 'vk/1': only lower-case letters, digits, '-' and '.' are allowed",
		"the message quotes the name and says why");
	memset(longname, 'a', 254);
	longname[254] = '\0';
	tap_ok(kt_node_name_check(longname, &err) < 0, "254 characters refused");
	longname[253] = '\0';
	tap_ok(kt_node_name_check(longname, &err) == 0, "253 characters allowed");
}

/* the one retry rule: the lease, node-ping's fleet and api's requests ask it */
static void test_retryable(void)
{
	static const long again[] = { 0, 429, 500, 502, 503, 504 };
	static const long never[] = { 400, 401, 403, 404, 409, 422, 501, 505, 599 };
	bool ok = true;

	for (size_t i = 0; i < sizeof(again) / sizeof(*again); i++)
		ok &= kt_http_retryable(again[i], false);
	for (size_t i = 0; i < sizeof(never) / sizeof(*never); i++)
		ok &= !kt_http_retryable(never[i], false);
	tap_ok(ok, "retryable: no reply, 429, 500, 502-504; no other status");
	tap_ok(kt_http_retryable(501, true) && kt_http_retryable(599, true) &&
		       !kt_http_retryable(404, true) && !kt_http_retryable(409, true),
	       "retryable: another 5xx when it says when to come back, a 4xx never");
}

/* the key order over an array of char *, for qsort and bsearch */
static void test_key_cmp_ptr(void)
{
	const char *v[] = { "vk-b", "vk-a", "Vk-c", "vk-a0" }, *key = "vk-a0";

	qsort(v, 4, sizeof(*v), kt_key_cmp_ptr);
	tap_ok(!strcmp(v[0], "Vk-c") && !strcmp(v[1], "vk-a") && !strcmp(v[2], "vk-a0") &&
		       !strcmp(v[3], "vk-b") && bsearch(&key, v, 4, sizeof(*v), kt_key_cmp_ptr),
	       "key_cmp_ptr: bytewise order of char * elements, bsearch finds one");
}

/* the one backoff: its sequence, its cap, its jitter's bound, steps, reset */
static void test_backoff(void)
{
	struct kt_backoff b = { .first_ms = 200, .cap_ms = 7000, .factor = 2 };
	static const int64_t want[] = { 200, 400, 800, 1600, 3200, 6400, 7000, 7000 };
	int64_t d, lo = INT64_MAX, hi = 0;
	bool ok = true;

	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		ok &= kt_backoff_peek(&b, 0) == want[i];
		ok &= kt_backoff_next(&b, 0) == want[i];
	}
	tap_ok(ok, "backoff: doubles from the first wait up to the cap, peek agrees");
	b.wait_ms = 5000;
	tap_ok(kt_backoff_next(&b, 0) == 7000, "backoff: a stretched wait grows from there");
	kt_backoff_reset(&b);
	tap_ok(kt_backoff_next(&b, 0) == 200, "backoff: back to the first wait after reset");

	b = (struct kt_backoff){ .first_ms = 800, .cap_ms = 30000, .factor = 2, .jitter = 1,
				 .reset_ms = 120000, .seed = 7 };
	for (int i = 0; i < 2000; i++) {
		d = kt_backoff_next(&b, 1000);
		ok &= d >= b.wait_ms && d <= 2 * b.wait_ms;
		if (b.wait_ms == 30000) {
			lo = d < lo ? d : lo;
			hi = d > hi ? d : hi;
		}
	}
	tap_ok(ok && b.wait_ms == 30000, "backoff: jitter stays within [wait, 2 wait]");
	tap_ok(lo < 33000 && hi > 57000, "backoff: jitter spreads over its bound");
	tap_ok(kt_backoff_peek(&b, 1000 + 120000) == 30000 &&
		       kt_backoff_peek(&b, 1000 + 120001) == 800,
	       "backoff: back to the first wait after reset_ms without one");

	b = (struct kt_backoff){ .first_ms = 100, .factor = 3, .steps = 3 };
	tap_ok(kt_backoff_next(&b, 0) == 100 && kt_backoff_next(&b, 0) == 300 &&
		       kt_backoff_next(&b, 0) == 900 && kt_backoff_next(&b, 0) == -1,
	       "backoff: no cap grows unbounded; steps waits, then -1");
}

static void test_base64(void)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					     "Zm9vYmFy" };
	bool all = true;
	size_t n;
	char *d;

	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		char *e = kt_base64_encode(plain[i], strlen(plain[i]));

		d = kt_base64_decode(coded[i], strlen(coded[i]), &n);
		all = all && e && d && !strcmp(e, coded[i]) && n == strlen(plain[i]) &&
		      !memcmp(d, plain[i], n);
		free(e);
		free(d);
	}
	tap_ok(all, "base64: RFC 4648's vectors both ways");
	d = kt_base64_decode("Zm9v\nYmE", 8, &n);
	tap_ok(d && n == 5 && !memcmp(d, "fooba", 5), "base64: a line break skipped, padding optional");
	free(d);
	tap_ok(!kt_base64_decode("Zm9v!", 5, &n) && !kt_base64_decode("Zg==Zg", 6, &n),
	       "base64: a foreign byte or data after padding is refused");
}

int main(void)
{
	test_retryable();
	test_backoff();
	test_key_cmp_ptr();
	test_durations();
	test_equal();
	test_int_text();
	test_go_printer();
	test_sb_hmap();
	test_times();
	test_redact();
	test_files();
	test_names();
	test_base64();
	return tap_done();
}
