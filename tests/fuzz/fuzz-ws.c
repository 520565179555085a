/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-ws: a client's bytes to a server's WebSocket end, in chunks byte 0
 * picks (bits 0-3, 0: all at once).  Properties: no message is longer than the
 * cap; after a failure nothing more is delivered; whatever is queued flushes.
 */
#include "fuzz.h"
#include "core.h"
#include "ws.h"

#define CAP 256

static int delivered;

static void on_msg(void *arg, bool text, const unsigned char *data, size_t len)
{
	(void)arg;
	(void)text;
	(void)data;
	FUZZ_CHECK(len <= CAP);
	delivered++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_ws *s;
	struct kt_sb out = { 0 };
	size_t chunk, off = 0;

	if (size < 1)
		return 0;
	chunk = data[0] & 15;
	data++;
	size--;
	s = kt_ws_new(true, CAP, on_msg, NULL);
	if (!s)
		abort();
	delivered = 0;
	while (off < size) {
		size_t n = chunk && chunk < size - off ? chunk : size - off;

		if (kt_ws_feed(s, data + off, n) < 0) {
			int before = delivered;

			off += n;
			if (off < size)
				kt_ws_feed(s, data + off, size - off);
			FUZZ_CHECK(delivered == before);
			break;
		}
		off += n;
	}
	kt_ws_send(s, false, "x", 1);
	kt_ws_flush(s, &out);
	kt_sb_release(&out);
	kt_ws_free(s);
	return 0;
}
