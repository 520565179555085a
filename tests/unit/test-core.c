/* SPDX-License-Identifier: Apache-2.0 */
/* test-core: durations, times, redaction, atomic files */
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
	tap_ok(kt_file_read(path, 100, &buf, &len, &err) == 0 && len == 4 &&
		       !strcmp(buf, "two!"),
	       "read back the new content");
	free(buf);
	tap_ok(kt_file_read(path, 2, &buf, &len, &err) < 0, "size cap enforced");
	tap_ok(kt_lock_acquire(&lk, path, &err) == 0, "lock taken");
	kt_lock_release(&lk);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state.json.lock", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_durations();
	test_times();
	test_redact();
	test_files();
	return tap_done();
}
