/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-rcmd: a client's bytes to the server's end of exec, attach and
 * port-forward.  Byte 0 picks the session: bit 0 WebSocket (v5) or SPDY (v4),
 * bits 1-2 exec, attach or port-forward, bit 3 stdin, bit 4 a terminal, bits
 * 5-7 a chunk size (0: all at once).  Properties: input comes only as whole
 * callbacks within what was fed, a terminal size is one, a write takes no more
 * than the room there is, an error is the end and stays it, the exit ends
 * the session.
 */
#include "fuzz.h"
#include "channel.h"
#include "core.h"
#include "rcmd.h"

static size_t fed, taken;
static struct kt_rcmd *cur;

static void on_input(void *arg, uint32_t key, const unsigned char *d, size_t n)
{
	volatile unsigned char sum = 0;

	(void)arg;
	for (size_t i = 0; i < n; i++)
		sum ^= d[i];
	taken += n;
	FUZZ_CHECK(taken <= fed);
	/* given on at once, as the process takes it */
	kt_rcmd_consumed(cur, key, n);
}

static void on_end(void *arg, uint32_t key)
{
	(void)arg;
	(void)key;
}

static void on_resize(void *arg, unsigned w, unsigned h)
{
	(void)arg;
	FUZZ_CHECK(w <= 65535 && h <= 65535);
}

static void on_forward(void *arg, uint32_t key, unsigned port)
{
	(void)arg;
	FUZZ_CHECK(port >= 1 && port <= 65535 && (key & 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct kt_rcmd_cb cb = { on_input, on_end, on_resize, on_forward };
	static const enum kt_rcmd_kind kinds[] = { KT_RCMD_EXEC, KT_RCMD_ATTACH,
						   KT_RCMD_PORTFORWARD, KT_RCMD_EXEC };
	struct kt_rcmd_opts o = { .max_frame = 1 << 16, .max_headers = 1 << 14 };
	struct kt_sb out = { 0 };
	size_t chunk, off = 1;
	bool failed = false;

	if (size < 1)
		return 0;
	o.up.transport = (data[0] & 1) ? KT_CHAN_WEBSOCKET : KT_CHAN_SPDY;
	o.up.version = (data[0] & 1) ? 5 : 4;
	o.kind = kinds[(data[0] >> 1) & 3];
	o.in = data[0] & 8;
	o.tty = data[0] & 16;
	o.out = true;
	chunk = (size_t)(data[0] >> 5) * 5;
	fed = taken = 0;
	cur = kt_rcmd_new(&o, &cb, NULL);
	if (!cur)
		return 0;
	while (off < size) {
		size_t n = chunk && size - off > chunk ? chunk : size - off;
		size_t room;

		fed += n;
		if (kt_rcmd_feed(cur, data + off, n) < 0) {
			FUZZ_CHECK(kt_rcmd_done(cur) && kt_rcmd_why(cur)[0]);
			failed = true;
			break;
		}
		off += n;
		room = kt_rcmd_room(cur, KT_CHAN_STDOUT);
		FUZZ_CHECK(kt_rcmd_write(cur, KT_CHAN_STDOUT, data, size) <= room);
		kt_rcmd_out(cur, &out);
		kt_sb_trunc(&out, 0);
	}
	if (failed)
		FUZZ_CHECK(kt_rcmd_feed(cur, data, size) < 0 && kt_rcmd_done(cur));
	kt_rcmd_exit(cur, 3, NULL);
	FUZZ_CHECK(kt_rcmd_done(cur));
	kt_rcmd_out(cur, &out);
	kt_sb_release(&out);
	kt_rcmd_free(cur);
	cur = NULL;
	return 0;
}
