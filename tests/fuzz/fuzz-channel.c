/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-channel: an upgrade request's four headers (Connection, Upgrade,
 * X-Stream-Protocol-Version, Sec-WebSocket-Protocol), NUL-separated, then a
 * WebSocket message, also read as a terminal size.  Properties: an upgrade is
 * granted a known version or refused with 400 or 403 and a body; a message read
 * back from what was written is the same; a size read is within 0 to 65535.
 */
#include "fuzz.h"
#include "core.h"
#include "channel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *f[4] = { 0 }, *p;
	struct kt_chan_upgrade up;
	struct kt_chan_refusal no;
	struct kt_sb d = { 0 }, m = { 0 }, again = { 0 };
	unsigned w, h;
	size_t rest;
	int chan, chan2;

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	p = text;
	for (int i = 0; i < 4 && p <= text + size; i++) {
		f[i] = p;
		p += strlen(p) + 1;
	}
	if (kt_chan_negotiate(f[0], f[1], f[2], f[3], &up, &no) == 0)
		FUZZ_CHECK(up.version >= 1 && up.version <= 5 &&
			   (up.transport == KT_CHAN_SPDY || up.transport == KT_CHAN_WEBSOCKET));
	else
		FUZZ_CHECK((no.status == 400 || no.status == 403) && no.body[0]);
	rest = p <= text + size ? (size_t)(text + size - p) : 0;
	for (int b64 = 0; b64 < 2 && rest; b64++) {
		kt_sb_trunc(&d, 0);
		kt_sb_trunc(&m, 0);
		kt_sb_trunc(&again, 0);
		if (kt_chan_ws_read(b64, p, rest, &chan, &d) == 0 && chan < 10) {
			kt_chan_ws_put(b64, chan, d.buf, d.len, &m);
			FUZZ_CHECK(kt_chan_ws_read(b64, m.buf, m.len, &chan2, &again) == 0 &&
				   chan2 == chan && again.len == d.len &&
				   (d.len == 0 || !memcmp(again.buf, d.buf, d.len)));
		}
	}
	if (rest && kt_chan_resize_parse(p, rest, &w, &h) == 0)
		FUZZ_CHECK(w <= 65535 && h <= 65535);
	kt_sb_release(&d);
	kt_sb_release(&m);
	kt_sb_release(&again);
	free(text);
	return 0;
}
