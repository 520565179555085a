/* SPDX-License-Identifier: Apache-2.0 */
/* test-crilog: CRI log lines, and reading them with the kubelet's log options */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

/* 2025-12-02T10:00:00Z */
#define T0 INT64_C(1764669600000000000)

static void test_times(void)
{
	char buf[40];
	int64_t ns;

	tap_str(kt_time_format_ns(T0 + 1500, true, buf, sizeof(buf)),
		"2025-12-02T10:00:00.000001500Z", "fixed: nine digits, as the log files have them");
	tap_str(kt_time_format_ns(T0 + 1500, false, buf, sizeof(buf)),
		"2025-12-02T10:00:00.0000015Z", "RFC3339Nano: trailing zeros left out");
	tap_str(kt_time_format_ns(T0, false, buf, sizeof(buf)), "2025-12-02T10:00:00Z",
		"RFC3339Nano: no fraction at all when it is zero");
	tap_ok(kt_time_parse_ns("2025-12-02T10:00:00.000001500Z", &ns, NULL) == 0 &&
		   ns == T0 + 1500,
	       "nanoseconds parsed");
	tap_ok(kt_time_parse_ns("2025-12-02T12:00:00.1234567891+02:00", &ns, NULL) == 0 &&
		   ns == T0 + 123456789,
	       "an offset, and digits past the ninth dropped");
	tap_ok(kt_time_parse_ns("9999-12-31T23:59:59Z", &ns, NULL) < 0 &&
		   kt_time_parse("9999-12-31T23:59:59.5Z", &ns, NULL) == 0 &&
		   ns == INT64_C(253402300799500000),
	       "past 2261 nanoseconds overflow and are refused; microseconds still reach 9999");
}

static void test_parse_format(void)
{
	struct kt_sb sb = { 0 };
	struct kt_cri_line l;
	const char *s;

	kt_cri_format(&sb, T0 + 7, KT_CRI_STDERR, true, "half a li", 9);
	kt_cri_format(&sb, T0 + 8, KT_CRI_STDOUT, false, "", 0);
	tap_str(kt_sb_str(&sb),
		"2025-12-02T10:00:00.000000007Z stderr P half a li\n"
		"2025-12-02T10:00:00.000000008Z stdout F \n",
		"formatted: time, stream, tag, text");
	s = kt_sb_str(&sb);
	tap_ok(kt_cri_parse(s, strcspn(s, "\n"), &l) == 0 && l.ns == T0 + 7 &&
		   l.stream == KT_CRI_STDERR && l.partial && l.len == 9 &&
		   !memcmp(l.text, "half a li", 9),
	       "what was formatted parses back");
	s = "2025-12-02T10:00:00Z stdout F:x text with  spaces ";
	tap_ok(kt_cri_parse(s, strlen(s), &l) == 0 && !l.partial &&
		   l.len == strlen("text with  spaces "),
	       "more tags after ':', and the text kept to its last byte");
	static const char *bad[] = { "",
				     "2025-12-02T10:00:00Z",
				     "yesterday stdout F x",
				     "2025-12-02T10:00:00Z stdin F x",
				     "2025-12-02T10:00:00Z stdout X x",
				     "2025-12-02T10:00:00Z stdout F",
				     "2025-12-02T10:00:00Z stdout PF x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		tap_ok(kt_cri_parse(bad[i], strlen(bad[i]), &l) < 0, bad[i][0] ? bad[i] : "empty");
	kt_sb_release(&sb);
}

/* feeds every line of file through kt_cri_emit from offset start */
static char *read_all(const char *file, size_t start, const struct kt_cri_opts *o, int *stopped)
{
	static struct kt_sb out;
	int64_t sent = 0;
	const char *p = file + start, *nl;

	kt_sb_release(&out);
	*stopped = 0;
	for (; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if ((*stopped = kt_cri_emit(o, p, (size_t)(nl - p), &out, &sent)))
			break;
	}
	kt_sb_put(&out, "", 0);
	return out.buf ? out.buf : "";
}

static void test_read(void)
{
	const char *file = "2025-12-02T10:00:00.5Z stdout F one\n"
			   "2025-12-02T10:00:01Z stderr P tw\n"
			   "2025-12-02T10:00:01.25Z stderr F o\n"
			   "not a log line\n"
			   "2025-12-02T10:00:02Z stdout F three\n";
	struct kt_cri_opts o = { .limit_bytes = -1 };
	int stopped;

	tap_str(read_all(file, 0, &o, &stopped), "one\ntwo\nthree\n",
		"plain: partial lines joined, a line that is not CRI skipped");
	o.timestamps = true;
	tap_str(read_all(file, 0, &o, &stopped),
		"2025-12-02T10:00:00.5Z one\n2025-12-02T10:00:01Z tw2025-12-02T10:00:01.25Z o\n"
		"2025-12-02T10:00:02Z three\n",
		"timestamps: each record its own time, as the kubelet writes them");
	o.timestamps = false;
	o.since_ns = T0 + 1000000000;
	tap_str(read_all(file, 0, &o, &stopped), "two\nthree\n",
		"since: a line at the time is kept");
	o.since_ns = 0;
	o.limit_bytes = 6;
	tap_ok(!strcmp(read_all(file, 0, &o, &stopped), "one\ntw") && stopped,
	       "limitBytes: cut inside a line, and reading stops");
	o.limit_bytes = 4;
	tap_ok(!strcmp(read_all(file, 0, &o, &stopped), "one\n") && stopped,
	       "limitBytes met exactly stops too");
	o.limit_bytes = -1;
	tap_str(read_all(file, kt_cri_tail_start(file, strlen(file), 2), &o, &stopped), "three\n",
		"tail 2: the last two lines of the file, one not a log line");
	tap_ok(kt_cri_tail_start(file, strlen(file), 0) == strlen(file), "tail 0: nothing");
	tap_ok(kt_cri_tail_start(file, strlen(file), 99) == 0 &&
		   kt_cri_tail_start(file, strlen(file), -1) == 0,
	       "more lines than there are, or -1: the whole file");
	tap_ok(kt_cri_tail_start("a\nb", 3, 1) == 2, "a last line without its newline counts");
}

int main(void)
{
	test_times();
	test_parse_format();
	test_read();
	return tap_done();
}
