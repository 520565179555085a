/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-watch-split: the watch framing, kt_api_split_lines, fed as a server
 * chooses.  Byte 0 picks the fragment sizes (up to 64 bytes, varying); the
 * rest is the body.  Whatever the fragments, the lines that come out are the
 * body's non-empty lines, and no byte is searched twice.
 */
#include "fuzz.h"
#include "kt.h"

/* the lines, each followed by a newline (a line holds none) */
static int keep_line(const char *line, size_t len, void *arg)
{
	struct kt_sb *out = arg;

	FUZZ_CHECK(len > 0 && !memchr(line, '\n', len));
	kt_sb_put(out, line, len);
	kt_sb_put(out, "\n", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_sb got = { 0 }, want = { 0 }, buf = { 0 };
	struct kt_api_split s = { 0 };
	const char *body = (const char *)data + 1;
	size_t n, pos = 0, used, start = 0, f;

	if (size < 1)
		return 0;
	n = size - 1;
	f = (size_t)(data[0] & 63) + 1;
	for (size_t i = 0; pos < n || i == 0; i++) {
		size_t take = (i * 7 + data[0]) % f + 1;

		if (take > n - pos)
			take = n - pos;
		kt_sb_put(&buf, body + pos, take);
		pos += take;
		FUZZ_CHECK(kt_api_split_lines(&s, buf.buf, buf.len, pos == n, keep_line, &got,
					      &used) == 0);
		FUZZ_CHECK(used <= buf.len);
		memmove(buf.buf, buf.buf + used, buf.len - used);
		kt_sb_trunc(&buf, buf.len - used);
	}
	FUZZ_CHECK(buf.len == 0);
	FUZZ_CHECK(s.work <= n);
	for (size_t i = 0; i <= n; i++) {
		if (i < n && body[i] != '\n')
			continue;
		if (i > start) {
			kt_sb_put(&want, body + start, i - start);
			kt_sb_put(&want, "\n", 1);
		}
		start = i + 1;
	}
	FUZZ_CHECK(got.len == want.len && (!got.len || !memcmp(got.buf, want.buf, got.len)));
	kt_sb_release(&got);
	kt_sb_release(&want);
	kt_sb_release(&buf);
	return 0;
}
