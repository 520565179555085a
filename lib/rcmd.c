/* SPDX-License-Identifier: Apache-2.0 */
/* rcmd: the server's end of exec, attach and port-forward (see rcmd.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "rcmd.h"
#include "spdy.h"
#include "ws.h"

#define MAX_STREAMS 64		/* a connection's streams, at most */
#define WS_MAX_MSG  (1 << 20)	/* a WebSocket message, at most */
#define RESIZE_MAX  4096	/* a resize message not ended by then is bad */
#define DATA_CHUNK  (64 * 1024) /* the longest DATA frame we send */

/* SPDY streamtype values, in the order of enum kt_chan_id */
static const char *const types[] = { "stdin", "stdout", "stderr", "error", "resize" };

struct stream {
	uint32_t id;
	int chan;      /* KT_CHAN_*; port-forward: KT_CHAN_STDOUT data, KT_CHAN_ERROR error */
	long request;  /* port-forward: its requestID */
	unsigned port; /* port-forward */
	bool in_fin, out_fin;
	int64_t send_window; /* what we may still send */
	int64_t recv_window; /* what the client may still send */
	uint32_t unacked;    /* consumed, not yet given back by WINDOW_UPDATE */
	bool paired;	     /* port-forward: forward was called */
};

struct kt_rcmd {
	struct kt_rcmd_opts o;
	struct kt_rcmd_cb cb;
	void *arg;
	struct kt_spdy *spdy;
	struct kt_ws *ws;
	struct kt_sb in;  /* SPDY: the start of a frame not whole yet */
	struct kt_sb out; /* to the client */
	struct kt_sb resize;
	struct stream st[MAX_STREAMS];
	size_t nst;
	uint32_t last_id;
	int64_t initial_window; /* the client's, for what we send */
	bool flow;		/* the client does flow control: it sent a window */
	bool failed, ended, in_closed;
	char why[200];
};

static int fail(struct kt_rcmd *r, uint32_t status, const char *fmt, const char *arg)
    __attribute__((format(printf, 3, 0)));

static int fail(struct kt_rcmd *r, uint32_t status, const char *fmt, const char *arg)
{
	if (!r->failed) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(r->why, sizeof(r->why), fmt, arg ? arg : "");
#pragma GCC diagnostic pop
		r->failed = true;
		if (r->spdy)
			kt_spdy_put_goaway(&r->out, r->last_id, status);
		else if (r->ws)
			kt_ws_close(r->ws, 1002, r->why);
	}
	return -1;
}

static struct stream *by_id(struct kt_rcmd *r, uint32_t id)
{
	for (size_t i = 0; i < r->nst; i++)
		if (r->st[i].id == id)
			return &r->st[i];
	return NULL;
}

/* exec and attach: the stream of a channel; port-forward: the data stream key
 * (chan KT_CHAN_STDOUT) or its error stream (KT_CHAN_ERROR) */
static struct stream *by_key(struct kt_rcmd *r, uint32_t key, int chan)
{
	if (r->o.kind != KT_RCMD_PORTFORWARD) {
		for (size_t i = 0; i < r->nst; i++)
			if (r->st[i].chan == (int)key)
				return &r->st[i];
		return NULL;
	}
	struct stream *d = by_id(r, key);

	if (!d || chan == KT_CHAN_STDOUT)
		return d;
	for (size_t i = 0; i < r->nst; i++)
		if (r->st[i].chan == KT_CHAN_ERROR && r->st[i].request == d->request)
			return &r->st[i];
	return NULL;
}

static void ws_msg(void *arg, bool text, const unsigned char *data, size_t len);

struct kt_rcmd *kt_rcmd_new(const struct kt_rcmd_opts *o, const struct kt_rcmd_cb *cb, void *arg)
{
	struct kt_rcmd *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->o = *o;
	r->cb = *cb;
	r->arg = arg;
	r->initial_window = KT_SPDY_WINDOW;
	if (o->up.transport == KT_CHAN_SPDY)
		r->spdy = kt_spdy_new(o->max_frame, o->max_headers);
	else
		r->ws = kt_ws_new(true, WS_MAX_MSG, ws_msg, r);
	if (!r->spdy && !r->ws) {
		free(r);
		return NULL;
	}
	return r;
}

void kt_rcmd_free(struct kt_rcmd *r)
{
	if (!r)
		return;
	kt_spdy_free(r->spdy);
	kt_ws_free(r->ws);
	kt_sb_release(&r->in);
	kt_sb_release(&r->out);
	kt_sb_release(&r->resize);
	free(r);
}

const char *kt_rcmd_why(const struct kt_rcmd *r)
{
	return r->why;
}

/* the streams the request asks for, as the kubelet counts them */
static bool wanted(const struct kt_rcmd *r, int chan)
{
	switch (chan) {
	case KT_CHAN_STDIN:
		return r->o.in;
	case KT_CHAN_STDOUT:
		return r->o.out;
	case KT_CHAN_STDERR:
		return r->o.err;
	case KT_CHAN_ERROR:
		return true;
	case KT_CHAN_RESIZE:
		return r->o.tty && r->o.up.version >= 3;
	default:
		return false;
	}
}

bool kt_rcmd_ready(const struct kt_rcmd *r)
{
	if (r->ws || r->o.kind == KT_RCMD_PORTFORWARD)
		return true;
	for (int c = KT_CHAN_STDIN; c <= KT_CHAN_RESIZE; c++) {
		bool have = false;

		for (size_t i = 0; i < r->nst; i++)
			have |= r->st[i].chan == c;
		if (wanted(r, c) && !have)
			return false;
	}
	return true;
}

/* a terminal size or several, each a JSON object, as kubectl writes them */
static int resize_data(struct kt_rcmd *r, const unsigned char *data, size_t len)
{
	char *end;

	kt_sb_put(&r->resize, (const char *)data, len);
	while (r->resize.len && (end = memchr(r->resize.buf, '}', r->resize.len))) {
		size_t n = (size_t)(end - r->resize.buf) + 1;
		unsigned w, h;

		if (kt_chan_resize_parse(r->resize.buf, n, &w, &h) < 0)
			return fail(r, KT_SPDY_PROTOCOL_ERROR, "a terminal size that is not one",
				    NULL);
		if (r->cb.resize)
			r->cb.resize(r->arg, w, h);
		memmove(r->resize.buf, r->resize.buf + n, r->resize.len - n);
		kt_sb_trunc(&r->resize, r->resize.len - n);
	}
	if (r->resize.len > RESIZE_MAX)
		return fail(r, KT_SPDY_PROTOCOL_ERROR, "a terminal size that never ends", NULL);
	return 0;
}

/* -------------------------------------------------------------------- SPDY */

static int syn_stream(struct kt_rcmd *r, const struct kt_spdy_frame *f)
{
	const char *type = kt_spdy_header_get(f, "streamtype");
	struct stream *s;
	int chan = -1;

	if (f->stream_id <= r->last_id || !(f->stream_id & 1)) {
		char id[16];

		snprintf(id, sizeof(id), "%u", f->stream_id);
		return fail(r, KT_SPDY_PROTOCOL_ERROR, "stream id %s reused or out of order", id);
	}
	r->last_id = f->stream_id;
	if (r->nst == MAX_STREAMS)
		return fail(r, KT_SPDY_PROTOCOL_ERROR, "too many streams", NULL);
	if (!type)
		return fail(r, KT_SPDY_PROTOCOL_ERROR, "a stream without a streamtype", NULL);
	if (r->o.kind == KT_RCMD_PORTFORWARD) {
		if (!strcmp(type, "data"))
			chan = KT_CHAN_STDOUT;
		else if (!strcmp(type, "error"))
			chan = KT_CHAN_ERROR;
	} else {
		for (int c = 0; c <= KT_CHAN_RESIZE; c++)
			if (!strcmp(type, types[c]))
				chan = c;
		if (chan >= 0 && !wanted(r, chan))
			chan = -1;
		for (size_t i = 0; chan >= 0 && i < r->nst; i++)
			if (r->st[i].chan == chan)
				return fail(r, KT_SPDY_PROTOCOL_ERROR, "a second %s stream", type);
	}
	if (chan < 0)
		return fail(r, KT_SPDY_PROTOCOL_ERROR, "a stream of type \"%.40s\" not asked for",
			    type);
	s = &r->st[r->nst++];
	*s = (struct stream){ .id = f->stream_id,
			      .chan = chan,
			      .request = -1,
			      .in_fin = f->flags & (KT_SPDY_FLAG_FIN),
			      .out_fin = f->flags & KT_SPDY_FLAG_UNIDIRECTIONAL,
			      .send_window = r->initial_window,
			      .recv_window = KT_SPDY_WINDOW };
	if (r->o.kind == KT_RCMD_PORTFORWARD) {
		const char *port = kt_spdy_header_get(f, "port");
		const char *req = kt_spdy_header_get(f, "requestid");
		char *end;
		long p = port ? strtol(port, &end, 10) : 0;

		if (!port || *end || p < 1 || p > 65535)
			return fail(r, KT_SPDY_PROTOCOL_ERROR,
				    "a port-forward stream without a port", NULL);
		s->port = (unsigned)p;
		s->request = req ? strtol(req, &end, 10) : 0;
		if (req && (*end || s->request < 0))
			return fail(r, KT_SPDY_PROTOCOL_ERROR, "a requestID that is not a number",
				    NULL);
	}
	if (kt_spdy_put_syn_reply(r->spdy, &r->out, f->stream_id, 0, NULL, 0) < 0)
		return fail(r, KT_SPDY_INTERNAL_ERROR, "cannot reply", NULL);
	if (s->in_fin && r->cb.input_end && (chan == KT_CHAN_STDIN))
		r->cb.input_end(r->arg, KT_CHAN_STDIN);
	if (r->o.kind == KT_RCMD_PORTFORWARD) {
		/* the pair is whole: the data stream and its error stream */
		struct stream *d = NULL, *e = NULL;

		for (size_t i = 0; i < r->nst; i++)
			if (r->st[i].request == s->request) {
				if (r->st[i].chan == KT_CHAN_STDOUT)
					d = &r->st[i];
				else
					e = &r->st[i];
			}
		if (d && e && !d->paired) {
			d->paired = true;
			if (r->cb.forward)
				r->cb.forward(r->arg, d->id, d->port);
		}
	}
	return 0;
}

static int data(struct kt_rcmd *r, const struct kt_spdy_frame *f)
{
	struct stream *s = by_id(r, f->stream_id);

	if (!s) {
		/* a stream we never had or have reset: refused, no more */
		kt_spdy_put_rst_stream(&r->out, f->stream_id, KT_SPDY_INVALID_STREAM);
		return 0;
	}
	if (s->in_fin)
		return fail(r, KT_SPDY_PROTOCOL_ERROR, "data after the end of a stream", NULL);
	s->recv_window -= (int64_t)f->len;
	if (s->recv_window < 0 && r->flow)
		return fail(r, KT_SPDY_FLOW_CONTROL_ERROR, "the client overran its window", NULL);
	if (f->len) {
		if (s->chan == KT_CHAN_RESIZE) {
			if (resize_data(r, f->data, f->len) < 0)
				return -1;
			kt_rcmd_consumed(r, KT_CHAN_RESIZE, f->len);
		} else if (s->chan == KT_CHAN_STDIN ||
			   (r->o.kind == KT_RCMD_PORTFORWARD && s->chan == KT_CHAN_STDOUT)) {
			if (r->cb.input)
				r->cb.input(r->arg, r->o.kind == KT_RCMD_PORTFORWARD ? s->id : 0,
					    f->data, f->len);
		} else {
			/* output streams carry nothing from the client: dropped */
			s->recv_window += (int64_t)f->len;
		}
	}
	if (f->flags & KT_SPDY_FLAG_FIN) {
		s->in_fin = true;
		if (r->cb.input_end && s->chan == KT_CHAN_STDIN && r->o.kind != KT_RCMD_PORTFORWARD)
			r->cb.input_end(r->arg, KT_CHAN_STDIN);
		if (r->cb.input_end && r->o.kind == KT_RCMD_PORTFORWARD &&
		    s->chan == KT_CHAN_STDOUT)
			r->cb.input_end(r->arg, s->id);
	}
	return 0;
}

static int frame(struct kt_rcmd *r, const struct kt_spdy_frame *f)
{
	struct stream *s;

	switch (f->type) {
	case KT_SPDY_SYN_STREAM:
		return syn_stream(r, f);
	case KT_SPDY_DATA:
		return data(r, f);
	case KT_SPDY_PING:
		/* the client's pings (odd ids) are answered; ours are never sent */
		if (f->value & 1)
			kt_spdy_put_ping(&r->out, f->value);
		return 0;
	case KT_SPDY_RST_STREAM:
		s = by_id(r, f->stream_id);
		if (s) {
			s->in_fin = s->out_fin = true;
			if (r->cb.input_end && s->chan == KT_CHAN_STDIN &&
			    r->o.kind != KT_RCMD_PORTFORWARD)
				r->cb.input_end(r->arg, KT_CHAN_STDIN);
		}
		return 0;
	case KT_SPDY_GOAWAY:
		/* the client goes: nothing more comes from it */
		r->in_closed = true;
		return 0;
	case KT_SPDY_SETTINGS:
		for (size_t i = 0; i < f->nsettings; i++) {
			if (f->settings[i].id != KT_SPDY_SETTINGS_INITIAL_WINDOW_SIZE)
				continue;
			if (f->settings[i].value > 0x7fffffff)
				return fail(r, KT_SPDY_PROTOCOL_ERROR, "a window too large", NULL);
			for (size_t j = 0; j < r->nst; j++)
				r->st[j].send_window +=
				    (int64_t)f->settings[i].value - r->initial_window;
			r->initial_window = f->settings[i].value;
			r->flow = true;
		}
		return 0;
	case KT_SPDY_WINDOW_UPDATE:
		r->flow = true;
		s = by_id(r, f->stream_id);
		if (!s)
			return 0;
		s->send_window += f->value;
		if (s->send_window > 0x7fffffff)
			return fail(r, KT_SPDY_FLOW_CONTROL_ERROR, "a window past 2^31-1", NULL);
		return 0;
	case KT_SPDY_SYN_REPLY:
	case KT_SPDY_HEADERS:
	default:
		return 0;
	}
}

static int feed_spdy(struct kt_rcmd *r, const void *buf, size_t len)
{
	const unsigned char *p;
	size_t left;

	kt_sb_put(&r->in, buf, len);
	if (r->in.oom)
		return fail(r, KT_SPDY_INTERNAL_ERROR, "out of memory", NULL);
	p = (const unsigned char *)r->in.buf;
	left = r->in.len;
	while (left && !r->failed) {
		struct kt_spdy_frame f;
		const char *why = NULL;
		ssize_t n = kt_spdy_parse(r->spdy, p, left, &f, &why);

		if (n == 0)
			break;
		if (n < 0) {
			fail(r, KT_SPDY_PROTOCOL_ERROR, "%s", why ? why : "a bad frame");
			break;
		}
		frame(r, &f);
		kt_spdy_frame_clear(&f);
		p += n;
		left -= (size_t)n;
	}
	if (left && p != (const unsigned char *)r->in.buf)
		memmove(r->in.buf, p, left);
	kt_sb_trunc(&r->in, left);
	return r->failed ? -1 : 0;
}

/* --------------------------------------------------------------- WebSocket */

static void ws_msg(void *arg, bool text, const unsigned char *msg, size_t len)
{
	struct kt_rcmd *r = arg;
	struct kt_sb d = { 0 };
	int chan;

	(void)text;
	if (r->failed)
		return;
	if (len >= 1 && msg[0] == KT_CHAN_CLOSE && r->o.up.version >= 5 && !r->o.up.base64) {
		/* v5: the client closed a channel; stdin is the one that counts */
		if (len >= 2 && msg[1] == KT_CHAN_STDIN && r->cb.input_end && !r->in_closed) {
			r->in_closed = true;
			r->cb.input_end(r->arg, KT_CHAN_STDIN);
		}
		return;
	}
	if (kt_chan_ws_read(r->o.up.base64, msg, len, &chan, &d) < 0) {
		kt_sb_release(&d);
		fail(r, 0, "a message that is no channel's", NULL);
		return;
	}
	if (chan == KT_CHAN_STDIN && r->o.in && d.len && !r->in_closed) {
		if (r->cb.input)
			r->cb.input(r->arg, KT_CHAN_STDIN, (const unsigned char *)d.buf, d.len);
	} else if (chan == KT_CHAN_RESIZE && r->o.tty && d.len) {
		resize_data(r, (const unsigned char *)d.buf, d.len);
	}
	kt_sb_release(&d);
}

int kt_rcmd_feed(struct kt_rcmd *r, const void *buf, size_t len)
{
	if (r->failed)
		return -1;
	if (r->spdy)
		return feed_spdy(r, buf, len);
	if (kt_ws_feed(r->ws, buf, len) < 0)
		return fail(r, 0, "a WebSocket protocol error", NULL);
	if (kt_ws_done(r->ws) && !r->ended) {
		/* the client closed: nothing more comes */
		r->in_closed = true;
	}
	return r->failed ? -1 : 0;
}

/* ------------------------------------------------------------------ output */

size_t kt_rcmd_room(const struct kt_rcmd *r, uint32_t key)
{
	const struct stream *s;

	if (r->failed || r->ended)
		return 0;
	if (r->ws)
		return WS_MAX_MSG / 4;
	s = by_key((struct kt_rcmd *)r, key, KT_CHAN_STDOUT);
	if (!s || s->out_fin)
		return 0;
	if (!r->flow)
		return DATA_CHUNK;
	return s->send_window > 0
		   ? (size_t)(s->send_window < DATA_CHUNK ? s->send_window : DATA_CHUNK)
		   : 0;
}

size_t kt_rcmd_write(struct kt_rcmd *r, uint32_t key, const void *buf, size_t len)
{
	size_t room = kt_rcmd_room(r, key), n = len < room ? len : room;

	if (n == 0)
		return 0;
	if (r->ws) {
		struct kt_sb m = { 0 };

		kt_chan_ws_put(r->o.up.base64, (int)key, buf, n, &m);
		kt_ws_send(r->ws, r->o.up.base64, m.buf, m.len);
		kt_sb_release(&m);
		return n;
	}
	struct stream *s = by_key(r, key, KT_CHAN_STDOUT);

	kt_spdy_put_data(&r->out, s->id, 0, buf, n);
	s->send_window -= (int64_t)n;
	return n;
}

size_t kt_rcmd_data_head(struct kt_rcmd *r, uint32_t key, size_t len,
			 unsigned char head[KT_RCMD_DATA_HEAD])
{
	struct stream *s;

	if (!r->spdy || len == 0 || len > kt_rcmd_room(r, key))
		return 0;
	s = by_key(r, key, KT_CHAN_STDOUT);
	/* a DATA frame's head: the stream id, no flags, the length */
	head[0] = (unsigned char)(s->id >> 24 & 0x7f);
	head[1] = (unsigned char)(s->id >> 16);
	head[2] = (unsigned char)(s->id >> 8);
	head[3] = (unsigned char)s->id;
	head[4] = 0;
	head[5] = (unsigned char)(len >> 16);
	head[6] = (unsigned char)(len >> 8);
	head[7] = (unsigned char)len;
	s->send_window -= (int64_t)len;
	return len;
}

void kt_rcmd_consumed(struct kt_rcmd *r, uint32_t key, size_t len)
{
	struct stream *s;

	if (!r->spdy || r->failed)
		return;
	s = r->o.kind == KT_RCMD_PORTFORWARD ? by_id(r, key) : by_key(r, key, KT_CHAN_STDIN);
	if (!s || s->in_fin)
		return;
	s->recv_window += (int64_t)len;
	s->unacked += (uint32_t)len;
	/* given back in steps, not a frame per read */
	if (s->unacked >= KT_SPDY_WINDOW / 4) {
		kt_spdy_put_window_update(&r->out, s->id, s->unacked);
		s->unacked = 0;
	}
}

void kt_rcmd_end(struct kt_rcmd *r, uint32_t key)
{
	struct stream *s;

	if (r->ws || r->failed)
		return;
	s = by_key(r, key, KT_CHAN_STDOUT);
	if (s && !s->out_fin) {
		kt_spdy_put_data(&r->out, s->id, KT_SPDY_FLAG_FIN, "", 0);
		s->out_fin = true;
	}
}

void kt_rcmd_forward_error(struct kt_rcmd *r, uint32_t key, const char *text)
{
	struct stream *e;

	if (!r->spdy || r->failed)
		return;
	e = by_key(r, key, KT_CHAN_ERROR);
	if (e && !e->out_fin && text && *text) {
		kt_spdy_put_data(&r->out, e->id, 0, text, strlen(text));
	}
	if (e && !e->out_fin) {
		kt_spdy_put_data(&r->out, e->id, KT_SPDY_FLAG_FIN, "", 0);
		e->out_fin = true;
	}
	kt_rcmd_end(r, key);
}

void kt_rcmd_exit(struct kt_rcmd *r, int code, const char *why)
{
	struct kt_sb st = { 0 };

	if (r->ended || r->failed)
		return;
	kt_chan_exit_status(&st, r->o.up.version, code, why);
	if (r->ws) {
		if (st.len) {
			struct kt_sb m = { 0 };

			kt_chan_ws_put(r->o.up.base64, KT_CHAN_ERROR, st.buf, st.len, &m);
			kt_ws_send(r->ws, r->o.up.base64, m.buf, m.len);
			kt_sb_release(&m);
		}
		/* wslay sends a queued close before queued messages: the
		 * messages go out first */
		kt_ws_flush(r->ws, &r->out);
		kt_ws_close(r->ws, 1000, "");
	} else {
		for (size_t i = 0; i < r->nst; i++) {
			struct stream *s = &r->st[i];

			if (s->chan == KT_CHAN_ERROR && st.len && !s->out_fin)
				kt_spdy_put_data(&r->out, s->id, 0, st.buf, st.len);
			if (!s->out_fin)
				kt_spdy_put_data(&r->out, s->id, KT_SPDY_FLAG_FIN, "", 0);
			s->out_fin = true;
		}
		kt_spdy_put_goaway(&r->out, r->last_id, 0);
	}
	kt_sb_release(&st);
	r->ended = true;
}

void kt_rcmd_out(struct kt_rcmd *r, struct kt_sb *out)
{
	if (r->ws)
		kt_ws_flush(r->ws, &r->out);
	kt_sb_put(out, r->out.buf ? r->out.buf : "", r->out.len);
	kt_sb_trunc(&r->out, 0);
}

bool kt_rcmd_done(const struct kt_rcmd *r)
{
	if (r->failed)
		return true;
	if (r->ws)
		return r->ended || kt_ws_done(r->ws);
	return r->ended || r->in_closed;
}
