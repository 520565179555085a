/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-spdy: a peer's bytes read as SPDY/3.1 frames, one connection.  Byte 0
 * picks how the bytes arrive (bits 0-3: a chunk size, 0 all at once).
 * Properties: a parse takes nothing or a whole frame, never more than it was
 * given; a header block read back is written again and read again the same by
 * a second pair of ends; an error ends the connection.
 */
#include "fuzz.h"
#include "core.h"
#include "spdy.h"

/* writes f's headers with one end and reads them with the other: the same */
static void again(struct kt_spdy *w, struct kt_spdy *r, const struct kt_spdy_frame *f)
{
	struct kt_sb out = { 0 };
	struct kt_spdy_frame g;
	const char *why;

	if (kt_spdy_put_headers(w, &out, f->stream_id ? f->stream_id : 1, 0, f->headers,
				f->nheaders) == 0) {
		ssize_t k = kt_spdy_parse(r, out.buf, out.len, &g, &why);

		FUZZ_CHECK(out.oom || k == (ssize_t)out.len);
		if (k > 0) {
			FUZZ_CHECK(g.nheaders == f->nheaders);
			for (size_t i = 0; i < g.nheaders; i++)
				FUZZ_CHECK(!strcmp(g.headers[i].name, f->headers[i].name) &&
					   g.headers[i].value_len == f->headers[i].value_len &&
					   !memcmp(g.headers[i].value, f->headers[i].value,
						   g.headers[i].value_len));
			kt_spdy_frame_clear(&g);
		}
	}
	kt_sb_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_spdy *s, *w, *r;
	size_t chunk, have, off = 0;

	if (size < 1)
		return 0;
	chunk = data[0] & 15;
	data++;
	size--;
	s = kt_spdy_new(1 << 16, 1 << 14);
	w = kt_spdy_new(1 << 16, 1 << 14);
	r = kt_spdy_new(1 << 16, 1 << 14);
	if (!s || !w || !r)
		abort();
	have = chunk ? (chunk < size ? chunk : size) : size;
	while (off < size) {
		struct kt_spdy_frame f;
		const char *why;
		ssize_t k = kt_spdy_parse(s, data + off, have - off, &f, &why);

		FUZZ_CHECK(k <= (ssize_t)(have - off));
		if (k < 0) {
			FUZZ_CHECK(why != NULL);
			break;
		}
		if (k == 0) {
			if (have == size)
				break;
			have = have + chunk < size ? have + chunk : size;
			continue;
		}
		FUZZ_CHECK(k >= 8);
		if (f.nheaders)
			again(w, r, &f);
		kt_spdy_frame_clear(&f);
		off += (size_t)k;
	}
	kt_spdy_free(s);
	kt_spdy_free(w);
	kt_spdy_free(r);
	return 0;
}
