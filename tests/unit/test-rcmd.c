/* SPDX-License-Identifier: Apache-2.0 */
/* test-rcmd: the server's end of exec, attach and port-forward, driven by a
 * client made of lib/spdy and lib/ws: streams, readiness, input and its end,
 * terminal sizes, flow control, the end on the error stream, protocol errors */
#include <string.h>

#include "channel.h"
#include "rcmd.h"
#include "spdy.h"
#include "tap.h"
#include "ws.h"

/* what the callbacks heard */
struct heard {
	struct kt_sb in;
	int ends, resizes;
	unsigned w, h;
	uint32_t fwd_key;
	unsigned fwd_port;
};

static void on_input(void *arg, uint32_t key, const unsigned char *d, size_t n)
{
	(void)key;
	kt_sb_put(&((struct heard *)arg)->in, (const char *)d, n);
}

static void on_end(void *arg, uint32_t key)
{
	(void)key;
	((struct heard *)arg)->ends++;
}

static void on_resize(void *arg, unsigned w, unsigned h)
{
	struct heard *x = arg;

	x->resizes++;
	x->w = w;
	x->h = h;
}

static void on_forward(void *arg, uint32_t key, unsigned port)
{
	struct heard *x = arg;

	x->fwd_key = key;
	x->fwd_port = port;
}

static const struct kt_rcmd_cb cb = { on_input, on_end, on_resize, on_forward };

static struct kt_rcmd *spdy_session(enum kt_rcmd_kind kind, bool in, bool tty, struct heard *x)
{
	struct kt_rcmd_opts o = { .kind = kind,
				  .up = { .transport = KT_CHAN_SPDY, .version = 4 },
				  .in = in,
				  .out = true,
				  .tty = tty,
				  .max_frame = 1 << 20,
				  .max_headers = 64 * 1024 };

	memset(x, 0, sizeof(*x));
	return kt_rcmd_new(&o, &cb, x);
}

static void syn(struct kt_spdy *c, struct kt_sb *b, uint32_t id, const char *type)
{
	struct kt_spdy_header h = { "streamtype", (char *)type, strlen(type) };

	kt_spdy_put_syn_stream(c, b, id, 0, 0, 0, &h, 1);
}

/* the frames of the server's bytes, their types and stream ids as text */
static void frames(struct kt_spdy *c, struct kt_rcmd *r, char *got, size_t size,
		   struct kt_sb *error_data)
{
	struct kt_sb out = { 0 };
	size_t off = 0;

	got[0] = 0;
	kt_rcmd_out(r, &out);
	while (off < out.len) {
		struct kt_spdy_frame f;
		const char *why;
		ssize_t n = kt_spdy_parse(c, out.buf + off, out.len - off, &f, &why);

		if (n <= 0)
			break;
		snprintf(got + strlen(got), size - strlen(got), "%s%d:%u%s", got[0] ? " " : "",
			 f.type, f.type == KT_SPDY_GOAWAY ? f.value : f.stream_id,
			 f.flags & KT_SPDY_FLAG_FIN ? "F" : "");
		if (f.type == KT_SPDY_DATA && f.stream_id == 5 && error_data)
			kt_sb_put(error_data, (const char *)f.data, f.len);
		kt_spdy_frame_clear(&f);
		off += (size_t)n;
	}
	kt_sb_release(&out);
}

static void test_exec(void)
{
	struct heard x;
	struct kt_rcmd *r = spdy_session(KT_RCMD_EXEC, true, false, &x);
	struct kt_spdy *c = kt_spdy_new(1 << 20, 1 << 20), *cr = kt_spdy_new(1 << 20, 1 << 20);
	struct kt_sb b = { 0 }, err = { 0 };
	char got[512];

	syn(c, &b, 1, "stdin");
	syn(c, &b, 3, "stdout");
	tap_ok(kt_rcmd_feed(r, b.buf, b.len) == 0 && !kt_rcmd_ready(r),
	       "not ready before the error stream");
	kt_sb_trunc(&b, 0);
	syn(c, &b, 5, "error");
	kt_spdy_put_data(&b, 1, 0, "hel", 3);
	/* fed a byte at a time: nothing is lost between frames */
	for (size_t i = 0; i < b.len; i++)
		kt_rcmd_feed(r, b.buf + i, 1);
	kt_sb_trunc(&b, 0);
	tap_ok(kt_rcmd_ready(r), "ready once stdin, stdout and error are there");
	tap_str(kt_sb_str(&x.in), "hel", "stdin's data, cut anywhere");
	frames(cr, r, got, sizeof(got), NULL);
	tap_str(got, "2:1 2:3 2:5", "a SYN_REPLY for each stream");
	kt_spdy_put_data(&b, 1, KT_SPDY_FLAG_FIN, "lo", 2);
	kt_rcmd_feed(r, b.buf, b.len);
	kt_sb_trunc(&b, 0);
	tap_ok(x.ends == 1 && !strcmp(kt_sb_str(&x.in), "hello"), "the FIN ends stdin");
	tap_ok(kt_rcmd_room(r, KT_CHAN_STDOUT) > 0 && kt_rcmd_room(r, KT_CHAN_STDERR) == 0,
	       "room for stdout, none for a stream not opened");
	tap_ok(kt_rcmd_write(r, KT_CHAN_STDOUT, "out", 3) == 3, "output taken");
	kt_rcmd_end(r, KT_CHAN_STDOUT);
	kt_rcmd_exit(r, 3, NULL);
	tap_ok(kt_rcmd_done(r), "done after the exit");
	frames(cr, r, got, sizeof(got), &err);
	tap_str(got, "0:3 0:3F 0:1F 0:5 0:5F 7:0",
		"stdout, its FIN, our end of stdin, the status and its FIN, GOAWAY");
	tap_ok(strstr(kt_sb_str(&err), "\"reason\":\"NonZeroExitCode\"") != NULL,
	       "the status says the exit code");
	kt_rcmd_free(r);
	kt_spdy_free(c);
	kt_spdy_free(cr);
	kt_sb_release(&b);
	kt_sb_release(&err);
	kt_sb_release(&x.in);
}

static void test_resize_and_flow(void)
{
	struct heard x;
	struct kt_rcmd *r = spdy_session(KT_RCMD_EXEC, false, true, &x);
	struct kt_spdy *c = kt_spdy_new(1 << 20, 1 << 20);
	struct kt_sb b = { 0 };
	static char big[KT_SPDY_WINDOW + 10];

	syn(c, &b, 1, "stdout");
	syn(c, &b, 3, "error");
	syn(c, &b, 5, "resize");
	const char *s1 = "{\"Width\":80,\"Height\":24}\n{\"Width\":1", *s2 = "00,\"Height\":33}\n";

	kt_spdy_put_data(&b, 5, 0, s1, strlen(s1));
	kt_spdy_put_data(&b, 5, 0, s2, strlen(s2));
	tap_ok(kt_rcmd_feed(r, b.buf, b.len) == 0 && kt_rcmd_ready(r),
	       "a terminal: ready with the resize stream (v4)");
	tap_ok(x.resizes == 2 && x.w == 100 && x.h == 33, "both sizes, the second cut in two");
	kt_sb_trunc(&b, 0);
	tap_ok(kt_rcmd_write(r, KT_CHAN_STDOUT, big, sizeof(big)) < sizeof(big),
	       "a write is cut to a frame");
	/* a client that does flow control: its window counts */
	kt_spdy_put_window_update(&b, 1, 1);
	kt_rcmd_feed(r, b.buf, b.len);
	kt_sb_trunc(&b, 0);
	while (kt_rcmd_write(r, KT_CHAN_STDOUT, big, sizeof(big)) > 0)
		;
	tap_ok(kt_rcmd_room(r, KT_CHAN_STDOUT) == 0, "no room once the client's window is used");
	kt_spdy_put_window_update(&b, 1, 100);
	kt_rcmd_feed(r, b.buf, b.len);
	kt_sb_trunc(&b, 0);
	tap_ok(kt_rcmd_room(r, KT_CHAN_STDOUT) == 100, "a WINDOW_UPDATE gives that much again");
	kt_spdy_put_data(&b, 1, 0, big, sizeof(big));
	tap_ok(kt_rcmd_feed(r, b.buf, b.len) < 0 &&
		   !strcmp(kt_rcmd_why(r), "the client overran its window"),
	       "a client past our window: a protocol error");
	tap_ok(kt_rcmd_done(r) && kt_rcmd_feed(r, "x", 1) < 0, "and the end");
	kt_rcmd_free(r);
	kt_spdy_free(c);
	kt_sb_release(&b);
}

static void test_errors(void)
{
	struct heard x;
	struct kt_rcmd *r = spdy_session(KT_RCMD_EXEC, false, false, &x);
	struct kt_spdy *c = kt_spdy_new(1 << 20, 1 << 20);
	struct kt_sb b = { 0 };

	syn(c, &b, 3, "stdout");
	syn(c, &b, 1, "error");
	tap_ok(kt_rcmd_feed(r, b.buf, b.len) < 0 &&
		   !strcmp(kt_rcmd_why(r), "stream id 1 reused or out of order"),
	       "a stream id going down: a protocol error");
	kt_rcmd_free(r);
	kt_sb_trunc(&b, 0);
	kt_spdy_free(c);

	r = spdy_session(KT_RCMD_EXEC, false, false, &x);
	c = kt_spdy_new(1 << 20, 1 << 20);
	syn(c, &b, 1, "stdin");
	tap_ok(kt_rcmd_feed(r, b.buf, b.len) < 0 && strstr(kt_rcmd_why(r), "not asked for"),
	       "a stream the request did not ask for: a protocol error");
	kt_rcmd_free(r);
	kt_sb_trunc(&b, 0);
	kt_spdy_free(c);

	r = spdy_session(KT_RCMD_EXEC, false, false, &x);
	tap_ok(kt_rcmd_feed(r, "\x00\x00\x00\x01\x00\xff\xff\xff", 8) < 0,
	       "a frame over the limit: a protocol error");
	kt_rcmd_free(r);
	kt_sb_release(&b);
}

static void test_portforward(void)
{
	struct heard x;
	struct kt_rcmd *r = spdy_session(KT_RCMD_PORTFORWARD, false, false, &x);
	struct kt_spdy *c = kt_spdy_new(1 << 20, 1 << 20);
	struct kt_sb b = { 0 };
	struct kt_spdy_header he[] = { { "streamtype", "error", 5 },
				       { "port", "8080", 4 },
				       { "requestid", "7", 1 } };
	struct kt_spdy_header hd[] = { { "streamtype", "data", 4 },
				       { "port", "8080", 4 },
				       { "requestid", "7", 1 } };

	kt_spdy_put_syn_stream(c, &b, 1, 0, 0, 0, he, 3);
	kt_rcmd_feed(r, b.buf, b.len);
	tap_ok(x.fwd_port == 0, "no forward with the error stream alone");
	kt_sb_trunc(&b, 0);
	kt_spdy_put_syn_stream(c, &b, 3, 0, 0, 0, hd, 3);
	kt_spdy_put_data(&b, 3, 0, "ping", 4);
	kt_rcmd_feed(r, b.buf, b.len);
	tap_ok(x.fwd_port == 8080 && x.fwd_key == 3 && !strcmp(kt_sb_str(&x.in), "ping"),
	       "the pair: a forward to its port, keyed by the data stream, its data");
	tap_ok(kt_rcmd_write(r, 3, "pong", 4) == 4, "data back on the data stream");
	{
		/* a head made for data the caller places after it */
		unsigned char frame[KT_RCMD_DATA_HEAD + 5];
		struct kt_spdy_frame f;
		const char *why;
		struct kt_sb w = { 0 };

		kt_spdy_put_window_update(&w, 3, 1);
		kt_rcmd_feed(r, w.buf, w.len);
		kt_sb_release(&w);
		size_t room = kt_rcmd_room(r, 3);

		tap_ok(kt_rcmd_data_head(r, 3, room + 1, frame) == 0 &&
			   kt_rcmd_data_head(r, 3, 0, frame) == 0 && kt_rcmd_room(r, 3) == room,
		       "no head past the room or for nothing");
		tap_ok(kt_rcmd_data_head(r, 3, 5, frame) == 5 && kt_rcmd_room(r, 3) == room - 5,
		       "a head takes its length from the window");
		memcpy(frame + KT_RCMD_DATA_HEAD, "hello", 5);
		tap_ok(kt_spdy_parse(c, frame, sizeof(frame), &f, &why) == (ssize_t)sizeof(frame) &&
			   f.type == KT_SPDY_DATA && f.stream_id == 3 && f.flags == 0 &&
			   f.len == 5 && !memcmp(f.data, "hello", 5),
		       "the head and its data: a DATA frame on the data stream");
		kt_spdy_frame_clear(&f);
	}
	kt_rcmd_free(r);
	kt_spdy_free(c);
	kt_sb_release(&b);
	kt_sb_release(&x.in);
}

static struct kt_sb ws_got;
static void ws_msg(void *arg, bool text, const unsigned char *d, size_t n)
{
	(void)arg;
	(void)text;
	kt_sb_printf(&ws_got, "[%d]%.*s", d[0], (int)n - 1, d + 1);
}

static void test_websocket(void)
{
	struct heard x = { 0 };
	struct kt_rcmd_opts o = { .kind = KT_RCMD_EXEC,
				  .up = { .transport = KT_CHAN_WEBSOCKET, .version = 5 },
				  .in = true,
				  .out = true };
	struct kt_rcmd *r = kt_rcmd_new(&o, &cb, &x);
	struct kt_ws *c = kt_ws_new(false, 1 << 20, ws_msg, NULL);
	struct kt_sb b = { 0 }, out = { 0 };
	static const unsigned char in[] = { 0, 'h', 'i' }, close0[] = { 255, 0 };

	tap_ok(kt_rcmd_ready(r), "WebSocket: ready at once");
	kt_ws_send(c, false, in, sizeof(in));
	kt_ws_send(c, false, close0, sizeof(close0));
	kt_ws_flush(c, &b);
	tap_ok(kt_rcmd_feed(r, b.buf, b.len) == 0 && !strcmp(kt_sb_str(&x.in), "hi") && x.ends == 1,
	       "channel 0 is stdin; v5's close of channel 0 is its end");
	kt_rcmd_write(r, KT_CHAN_STDOUT, "out", 3);
	kt_rcmd_exit(r, 0, NULL);
	kt_rcmd_out(r, &out);
	kt_ws_feed(c, out.buf, out.len);
	tap_ok(!strncmp(kt_sb_str(&ws_got), "[1]out[3]{", 10) &&
		   strstr(kt_sb_str(&ws_got), "\"Success\""),
	       "stdout, then the status on channel 3 before the close");
	tap_ok(kt_rcmd_done(r), "done");
	kt_rcmd_free(r);
	kt_ws_free(c);
	kt_sb_release(&b);
	kt_sb_release(&out);
	kt_sb_release(&ws_got);
	kt_sb_release(&x.in);
}

int main(void)
{
	test_exec();
	test_resize_and_flow();
	test_errors();
	test_portforward();
	test_websocket();
	return tap_done();
}
