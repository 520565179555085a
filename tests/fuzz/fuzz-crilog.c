/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-crilog: a container's log file read with the kubelet's options.
 * Byte 0: bit 0 timestamps, bits 1-3 the tail, bits 4-7 the byte limit (0:
 * none).  The rest is the file.  Properties: a line that parses, formatted
 * again, parses to the same time, stream, tag and text; the reader never
 * sends more than the limit, and stops only at it; the tail starts a line or is the end.
 */
#include "fuzz.h"
#include "core.h"
#include "crilog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_cri_opts o = { .limit_bytes = -1 };
	struct kt_sb out = { 0 }, again = { 0 };
	const char *file, *p, *end, *nl;
	int64_t sent = 0;
	size_t start;
	int stop = 0;

	if (size < 1)
		return 0;
	o.timestamps = data[0] & 1;
	if (data[0] >> 4)
		o.limit_bytes = (data[0] >> 4) * 7;
	file = (const char *)data + 1;
	end = file + size - 1;
	start = kt_cri_tail_start(file, size - 1, (data[0] >> 1) & 7);
	FUZZ_CHECK(start <= size - 1 &&
		   (start == 0 || start == size - 1 || file[start - 1] == '\n'));
	for (p = file + start; p < end && !stop; p = nl + 1) {
		struct kt_cri_line l;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (kt_cri_parse(p, (size_t)(nl - p), &l) == 0) {
			struct kt_cri_line m;

			kt_sb_trunc(&again, 0);
			kt_cri_format(&again, l.ns, l.stream, l.partial, l.text, l.len);
			FUZZ_CHECK(again.oom || (kt_cri_parse(again.buf, again.len - 1, &m) == 0 &&
						 m.ns == l.ns && m.stream == l.stream &&
						 m.partial == l.partial && m.len == l.len &&
						 !memcmp(m.text, l.text, l.len)));
		}
		stop = kt_cri_emit(&o, p, (size_t)(nl - p), &out, &sent);
		FUZZ_CHECK(o.limit_bytes < 0 || sent <= o.limit_bytes);
		FUZZ_CHECK(!stop || sent == o.limit_bytes);
		FUZZ_CHECK((int64_t)out.len == sent || out.oom);
	}
	kt_sb_release(&out);
	kt_sb_release(&again);
	return 0;
}
