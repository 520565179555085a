/* SPDX-License-Identifier: Apache-2.0 */
/* test-ws: WebSocket messages between a client's end and a server's, and hostile frames */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "ws.h"

struct got {
	int n;
	bool text;
	char data[256];
	size_t len;
};

static void on_msg(void *arg, bool text, const unsigned char *data, size_t len)
{
	struct got *g = arg;

	g->n++;
	g->text = text;
	g->len = len < sizeof(g->data) ? len : sizeof(g->data);
	memcpy(g->data, data, g->len);
}

/* what the client queued, flushed and fed to the server */
static int pass(struct kt_ws *from, struct kt_ws *to)
{
	struct kt_sb wire = { 0 };
	int rc;

	kt_ws_flush(from, &wire);
	rc = kt_ws_feed(to, wire.buf, wire.len);
	kt_sb_release(&wire);
	return rc;
}

static void test_messages(void)
{
	struct got cg = { 0 }, sg = { 0 };
	struct kt_ws *c = kt_ws_new(false, 1 << 16, on_msg, &cg),
		     *s = kt_ws_new(true, 1 << 16, on_msg, &sg);
	struct kt_sb wire = { 0 };

	tap_ok(kt_ws_send(c, false, "\x01out", 4) == 0 && pass(c, s) == 0 && sg.n == 1 &&
		   !sg.text && sg.len == 4 && !memcmp(sg.data, "\x01out", 4),
	       "a client's masked binary message reaches the server whole");
	tap_ok(kt_ws_send(s, true, "hello", 5) == 0 && pass(s, c) == 0 && cg.n == 1 && cg.text &&
		   cg.len == 5,
	       "and a server's text message the client");
	kt_ws_flush(c, &wire); /* nothing left */
	tap_ok(wire.len == 0, "nothing is sent twice");
	/* the client starts the close handshake; the server answers it */
	tap_ok(kt_ws_close(c, 1000, "bye") == 0 && pass(c, s) == 0 && pass(s, c) == 0 &&
		   kt_ws_done(s) && kt_ws_done(c),
	       "the close handshake ends both ends");
	tap_ok(kt_ws_send(s, false, "late", 4) < 0, "nothing is queued after the close");
	kt_sb_release(&wire);
	kt_ws_free(c);
	kt_ws_free(s);
}

/* bytes fed to a fresh server: its feed result, messages and what it sends back */
static int feed_server(const char *bytes, size_t n, size_t max, struct got *g, struct kt_sb *back)
{
	struct kt_ws *s = kt_ws_new(true, max, on_msg, g);
	int rc = kt_ws_feed(s, bytes, n);

	kt_ws_flush(s, back);
	kt_ws_free(s);
	return rc;
}

static void test_frames(void)
{
	struct got g = { 0 };
	struct kt_sb back = { 0 };

	/* masked with a zero key, so the payload reads as it is */
	tap_ok(feed_server("\x01\x83\0\0\0\0abc\x80\x82\0\0\0\0de", 17, 64, &g, &back) == 0 &&
		   g.n == 1 && g.len == 5 && !memcmp(g.data, "abcde", 5),
	       "a fragmented message is delivered once, whole");
	memset(&g, 0, sizeof(g));
	kt_sb_trunc(&back, 0);
	tap_ok(feed_server("\x89\x80\0\0\0\0", 6, 64, &g, &back) == 0 && g.n == 0 &&
		   back.len == 2 && (unsigned char)back.buf[0] == 0x8a,
	       "a ping is answered with a pong, no message");
	kt_sb_trunc(&back, 0);
	tap_ok(feed_server("\x82\x03xyz", 5, 64, &g, &back) < 0 && g.n == 0 && back.len >= 4 &&
		   (unsigned char)back.buf[0] == 0x88 && back.buf[2] == 0x03 &&
		   (unsigned char)back.buf[3] == 0xea,
	       "an unmasked frame from a client fails the connection with close 1002");
	kt_sb_trunc(&back, 0);
	tap_ok(feed_server("\x82\x91\0\0\0\0"
			   "0123456789abcdefg",
			   23, 16, &g, &back) < 0 &&
		   g.n == 0 && back.len >= 4 && back.buf[2] == 0x03 &&
		   (unsigned char)back.buf[3] == 0xf1,
	       "a message over the cap fails the connection with close 1009");
	kt_sb_trunc(&back, 0);
	{
		char big[14 + 100];

		memcpy(big, "\x82\xff\x7f\xff\xff\xff\xff\xff\xff\xff\0\0\0\0", 14);
		memset(big + 14, 'x', 100);
		tap_ok(feed_server(big, sizeof(big), 64, &g, &back) < 0 && g.n == 0,
		       "a frame claiming 2^63 bytes fails once its data passes the cap");
	}
	kt_sb_release(&back);
}

int main(void)
{
	test_messages();
	test_frames();
	printf("1..%d\n", tap_n);
	return tap_failed != 0;
}
