/* SPDX-License-Identifier: Apache-2.0 */
/* test-spdy: SPDY/3.1 frames written by one end and read by the other */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "spdy.h"
#include "tap.h"

#define H(n, v)                                                                                    \
	{                                                                                          \
		(char *)(n), (char *)(v), sizeof(v) - 1                                            \
	}

static void test_dictionary(void)
{
	size_t len;
	const unsigned char *d = kt_spdy_dictionary(&len);

	tap_ok(len == 1423, "the dictionary is SPDY/3's 1423 bytes");
	tap_ok(!memcmp(d, "\0\0\0\7options\0\0\0\4head", 19),
	       "it starts with length-prefixed words");
	tap_ok(!memcmp(d + len - 6, "enq=0.", 6), "and ends with the tail as it is");
}

/* parses every frame of buf with s; the number of frames, or -1 */
static int parse_all(struct kt_spdy *s, const struct kt_sb *buf, struct kt_spdy_frame *f, int max)
{
	size_t off = 0;
	int n = 0;
	const char *why;

	while (off < buf->len && n < max) {
		ssize_t k = kt_spdy_parse(s, buf->buf + off, buf->len - off, &f[n], &why);

		if (k <= 0)
			return -1;
		off += (size_t)k;
		n++;
	}
	return off == buf->len ? n : -1;
}

static void test_round_trip(void)
{
	struct kt_spdy *client = kt_spdy_new(1 << 20, 1 << 16),
		       *server = kt_spdy_new(1 << 20, 1 << 16);
	struct kt_spdy_header h1[] = { H("streamtype", "error") };
	struct kt_spdy_header h2[] = { H("streamtype", "stdout"),
				       H("port", "80\0\x38\x30\x38\x30") };
	struct kt_spdy_setting set[] = { { 0, KT_SPDY_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20 } };
	struct kt_spdy_frame f[8];
	struct kt_sb wire = { 0 };
	int n;

	tap_ok(kt_spdy_put_syn_stream(client, &wire, 1, 0, 0, 0, h1, 1) == 0 &&
		   kt_spdy_put_syn_stream(client, &wire, 3, 0, 2, KT_SPDY_FLAG_FIN, h2, 2) == 0,
	       "two SYN_STREAMs written");
	kt_spdy_put_data(&wire, 3, KT_SPDY_FLAG_FIN, "hello", 5);
	kt_spdy_put_settings(&wire, set, 1);
	kt_spdy_put_ping(&wire, 7);
	kt_spdy_put_window_update(&wire, 3, 4096);
	kt_spdy_put_rst_stream(&wire, 1, KT_SPDY_CANCEL);
	kt_spdy_put_goaway(&wire, 3, 0);
	n = parse_all(server, &wire, f, 8);
	tap_ok(n == 8, "eight frames read back, every byte taken");
	if (n == 8) {
		tap_ok(f[0].type == KT_SPDY_SYN_STREAM && f[0].stream_id == 1 &&
			   f[0].nheaders == 1 &&
			   !strcmp(kt_spdy_header_get(&f[0], "streamtype"), "error"),
		       "SYN_STREAM: stream and its header");
		tap_ok(f[1].stream_id == 3 && f[1].priority == 2 &&
			   f[1].flags == KT_SPDY_FLAG_FIN && f[1].nheaders == 2 &&
			   f[1].headers[1].value_len == 7 &&
			   !memcmp(f[1].headers[1].value,
				   "80\0"
				   "8080",
				   7),
		       "the second block, compressed against the first: priority, FIN, two values "
		       "of one name");
		tap_ok(f[2].type == KT_SPDY_DATA && f[2].stream_id == 3 && f[2].len == 5 &&
			   !memcmp(f[2].data, "hello", 5) && f[2].flags == KT_SPDY_FLAG_FIN,
		       "DATA with FIN");
		tap_ok(f[3].type == KT_SPDY_SETTINGS && f[3].nsettings == 1 &&
			   f[3].settings[0].id == KT_SPDY_SETTINGS_INITIAL_WINDOW_SIZE &&
			   f[3].settings[0].value == 1 << 20,
		       "SETTINGS");
		tap_ok(f[4].type == KT_SPDY_PING && f[4].value == 7, "PING");
		tap_ok(f[5].type == KT_SPDY_WINDOW_UPDATE && f[5].stream_id == 3 &&
			   f[5].value == 4096,
		       "WINDOW_UPDATE");
		tap_ok(f[6].type == KT_SPDY_RST_STREAM && f[6].value == KT_SPDY_CANCEL,
		       "RST_STREAM");
		tap_ok(f[7].type == KT_SPDY_GOAWAY && f[7].stream_id == 3, "GOAWAY");
	}
	for (int i = 0; i < n; i++)
		kt_spdy_frame_clear(&f[i]);

	/* the reply, the other way, on the other zlib stream */
	kt_sb_trunc(&wire, 0);
	tap_ok(kt_spdy_put_syn_reply(server, &wire, 1, 0, NULL, 0) == 0 &&
		   kt_spdy_put_syn_reply(server, &wire, 3, 0, h1, 1) == 0 &&
		   parse_all(client, &wire, f, 2) == 2 && f[0].type == KT_SPDY_SYN_REPLY &&
		   f[0].nheaders == 0 && f[1].stream_id == 3 && f[1].nheaders == 1,
	       "SYN_REPLYs read by the client");
	kt_spdy_frame_clear(&f[0]);
	kt_spdy_frame_clear(&f[1]);
	kt_sb_release(&wire);
	kt_spdy_free(client);
	kt_spdy_free(server);
}

static void test_partial(void)
{
	struct kt_spdy *a = kt_spdy_new(1 << 20, 1 << 16), *b = kt_spdy_new(1 << 20, 1 << 16);
	struct kt_spdy_header h[] = { H("streamtype", "stdin") };
	struct kt_spdy_frame f;
	struct kt_sb wire = { 0 };
	const char *why;
	bool waited = true;
	ssize_t k = 0;

	kt_spdy_put_syn_stream(a, &wire, 5, 0, 0, 0, h, 1);
	for (size_t i = 0; i < wire.len; i++)
		if (kt_spdy_parse(b, wire.buf, i, &f, &why) != 0 || why)
			waited = false;
	tap_ok(waited, "a frame cut anywhere asks for more bytes and takes none");
	k = kt_spdy_parse(b, wire.buf, wire.len, &f, &why);
	tap_ok(k == (ssize_t)wire.len && f.stream_id == 5 &&
		   !strcmp(kt_spdy_header_get(&f, "streamtype"), "stdin"),
	       "then the whole frame is read");
	kt_spdy_frame_clear(&f);
	kt_sb_release(&wire);
	kt_spdy_free(a);
	kt_spdy_free(b);
}

/* a raw control frame with a header block compressed here, with the dictionary */
static void raw_block(struct kt_sb *out, const void *plain, size_t n)
{
	z_stream z = { 0 };
	size_t dl, start = out->len, len;
	const unsigned char *d = kt_spdy_dictionary(&dl);
	unsigned char *buf = malloc(n + 1024);

	deflateInit(&z, 9);
	deflateSetDictionary(&z, d, (uInt)dl);
	z.next_in = (Bytef *)plain;
	z.avail_in = (uInt)n;
	z.next_out = buf;
	z.avail_out = (uInt)(n + 1024);
	deflate(&z, Z_SYNC_FLUSH);
	kt_sb_put(out, "\x80\x03\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01", 12);
	kt_sb_put(out, (char *)buf, n + 1024 - z.avail_out);
	len = out->len - start - 8;
	out->buf[start + 5] = (char)(len >> 16);
	out->buf[start + 6] = (char)(len >> 8);
	out->buf[start + 7] = (char)len;
	deflateEnd(&z);
	free(buf);
}

/* what one parse of bytes says, on a fresh connection */
static const char *why_of(const void *bytes, size_t n)
{
	struct kt_spdy *s = kt_spdy_new(1 << 16, 1 << 12);
	struct kt_spdy_frame f;
	const char *why = NULL;
	ssize_t k = kt_spdy_parse(s, bytes, n, &f, &why);

	if (k > 0)
		kt_spdy_frame_clear(&f);
	kt_spdy_free(s);
	return k < 0 ? why : NULL;
}

/*
 * The first frame kubectl 1.32 sends after a SPDY/3.1 upgrade of `kubectl exec`
 * (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false), as it came off the socket: the
 * error stream's SYN_STREAM.  zlib checks the dictionary's Adler-32 against the
 * one kubectl's compressor names, so reading it proves the dictionary exact.
 */
static const char kubectl_syn_stream[] =
    "\x80\x03\x00\x01\x00\x00\x00\x29\x00\x00\x00\x01\x00\x00\x00\x00"
    "\x00\x00\x78\xf9\xe3\xc6\xa7\xc2\x62\x60\x60\x60\x04\xa7\xb3\x92"
    "\xa2\xd4\xc4\x5c\x68\x51\xc2\x9a\x0a\x0a\x68\x00\x00\x00\x00\xff"
    "\xff";

static void test_kubectl(void)
{
	struct kt_spdy *s = kt_spdy_new(1 << 20, 1 << 16);
	struct kt_spdy_frame f;
	const char *why;
	ssize_t k = kt_spdy_parse(s, kubectl_syn_stream, sizeof(kubectl_syn_stream) - 1, &f, &why);

	tap_ok(k == (ssize_t)sizeof(kubectl_syn_stream) - 1 && f.type == KT_SPDY_SYN_STREAM &&
		   f.stream_id == 1 && f.nheaders == 1 &&
		   !strcmp(kt_spdy_header_get(&f, "streamtype"), "error"),
	       "kubectl's own SYN_STREAM is read: stream 1, the error stream");
	if (k > 0)
		kt_spdy_frame_clear(&f);
	kt_spdy_free(s);
}

static void test_errors(void)
{
	struct kt_sb b = { 0 };
	char *big = calloc(1, 1 << 20);
	struct kt_spdy *s = kt_spdy_new(1 << 20, 1 << 16);
	struct kt_spdy_header up[] = { H("Streamtype", "x") }, dup[] = { H("a", "1"), H("a", "2") };

	tap_ok(why_of("\x80\x02\x00\x01\x00\x00\x00\x0a", 8) != NULL,
	       "a control frame of SPDY/2 is refused");
	tap_ok(why_of("\x00\x00\x00\x01\x00\x02\x00\x00", 8) != NULL,
	       "a frame longer than the limit is refused from its first eight bytes");
	tap_ok(why_of("\x00\x00\x00\x00\x00\x00\x00\x00", 8) != NULL,
	       "DATA on stream 0 is refused");
	tap_ok(why_of("\x80\x03\x00\x03\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x05", 16) !=
		   NULL,
	       "RST_STREAM of stream 0 is refused");
	tap_ok(why_of("\x80\x03\x00\x09\x00\x00\x00\x08\x00\x00\x00\x01\x00\x00\x00\x00", 16) !=
		   NULL,
	       "WINDOW_UPDATE by 0 is refused");
	tap_ok(why_of("\x80\x03\x00\x06\x00\x00\x00\x05\x00\x00\x00\x01\x00", 13) != NULL,
	       "PING of the wrong length is refused");
	tap_ok(why_of("\x80\x03\x00\x04\x00\x00\x00\x04\x00\x00\x10\x00", 12) != NULL,
	       "SETTINGS counting more entries than it holds is refused");
	tap_ok(why_of("\x80\x03\x00\x0a\x00\x00\x00\x02\x00\x00", 10) == NULL,
	       "a control frame of an unknown type is read and ignored");

	/* the header block: 1 MiB of zeros inflates past the 4 KiB limit */
	raw_block(&b, big, 1 << 20);
	tap_ok(b.len < (1 << 16) && why_of(b.buf, b.len) != NULL,
	       "a header block that inflates past the limit (a zlib bomb) is refused");
	kt_sb_trunc(&b, 0);
	raw_block(&b, "\xff\xff\xff\xff", 4);
	tap_ok(why_of(b.buf, b.len) != NULL, "a count of pairs the block cannot hold is refused");
	kt_sb_trunc(&b, 0);
	raw_block(&b, "\0\0\0\1\0\0\0\1A\0\0\0\0", 13);
	tap_ok(why_of(b.buf, b.len) != NULL, "an upper-case name is refused");
	kt_sb_trunc(&b, 0);
	raw_block(&b, "\0\0\0\2\0\0\0\1a\0\0\0\0\0\0\0\1a\0\0\0\0", 22);
	tap_ok(why_of(b.buf, b.len) != NULL, "a name twice in one block is refused");
	kt_sb_trunc(&b, 0);
	raw_block(&b, "\0\0\0\1\0\0\0\1a\0\0\0\0z", 14);
	tap_ok(why_of(b.buf, b.len) != NULL, "bytes after the last pair are refused");
	kt_sb_trunc(&b, 0);
	raw_block(&b, "\0\0\0\1\0\0\0\1a\0\0\0\0", 13);
	tap_ok(why_of(b.buf, b.len) == NULL, "and the same block well formed is read");
	kt_sb_trunc(&b, 0);
	kt_sb_put(&b, "\x80\x03\x00\x02\x00\x00\x00\x08\x00\x00\x00\x01garbage!", 16);
	tap_ok(why_of(b.buf, b.len) != NULL, "a header block that is not zlib is refused");

	kt_sb_trunc(&b, 0);
	tap_ok(kt_spdy_put_syn_reply(s, &b, 1, 0, up, 1) < 0 && b.len == 0 &&
		   kt_spdy_put_syn_reply(s, &b, 1, 0, dup, 2) < 0 && b.len == 0,
	       "the writer refuses an upper-case or repeated name and writes nothing");
	kt_sb_release(&b);
	kt_spdy_free(s);
	free(big);
}

int main(void)
{
	test_dictionary();
	test_round_trip();
	test_partial();
	test_kubectl();
	test_errors();
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
