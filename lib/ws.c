/* SPDX-License-Identifier: Apache-2.0 */
/* ws: WebSocket messages over wslay's event API, on memory (see ws.h) */
#include <stdlib.h>
#include <string.h>

#include <wslay/wslay.h>

#include "ws.h"

struct kt_ws {
	wslay_event_context_ptr ctx;
	const unsigned char *in; /* what kt_ws_feed was given and wslay has not read */
	size_t in_len;
	struct kt_sb *out; /* where kt_ws_flush puts what wslay sends */
	kt_ws_on_msg on_msg;
	void *arg;
	unsigned seed; /* a client's masks */
	bool failed;
};

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *user)
{
	struct kt_ws *ws = user;
	size_t n = len < ws->in_len ? len : ws->in_len;

	(void)flags;
	if (n == 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	memcpy(buf, ws->in, n);
	ws->in += n;
	ws->in_len -= n;
	return (ssize_t)n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
		       void *user)
{
	struct kt_ws *ws = user;

	(void)flags;
	if (!ws->out) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	kt_sb_put(ws->out, (const char *)data, len);
	return (ssize_t)len;
}

static int on_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
	struct kt_ws *ws = user;

	(void)ctx;
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)rand_r(&ws->seed);
	return 0;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
		   void *user)
{
	struct kt_ws *ws = user;

	(void)ctx;
	if (a->opcode == WSLAY_TEXT_FRAME || a->opcode == WSLAY_BINARY_FRAME)
		ws->on_msg(ws->arg, a->opcode == WSLAY_TEXT_FRAME, a->msg, a->msg_length);
}

struct kt_ws *kt_ws_new(bool server, size_t max_msg, kt_ws_on_msg on_msg_cb, void *arg)
{
	struct wslay_event_callbacks cb = { .recv_callback = on_recv,
					    .send_callback = on_send,
					    .genmask_callback = on_genmask,
					    .on_msg_recv_callback = on_msg };
	struct kt_ws *ws = calloc(1, sizeof(*ws));
	int rc;

	if (!ws)
		return NULL;
	ws->on_msg = on_msg_cb;
	ws->arg = arg;
	ws->seed = 0x6b74;
	rc = server ? wslay_event_context_server_init(&ws->ctx, &cb, ws)
		    : wslay_event_context_client_init(&ws->ctx, &cb, ws);
	if (rc != 0) {
		free(ws);
		return NULL;
	}
	wslay_event_config_set_max_recv_msg_length(ws->ctx, max_msg);
	return ws;
}

void kt_ws_free(struct kt_ws *ws)
{
	if (!ws)
		return;
	wslay_event_context_free(ws->ctx);
	free(ws);
}

int kt_ws_feed(struct kt_ws *ws, const void *buf, size_t len)
{
	ws->in = buf;
	ws->in_len = len;
	if (wslay_event_recv(ws->ctx) != 0)
		ws->failed = true;
	ws->in = NULL;
	ws->in_len = 0;
	/* wslay stops reading after a protocol error, queueing its close; after
	 * the peer's own close it stops too, but that is no failure */
	if (!wslay_event_get_read_enabled(ws->ctx) && !wslay_event_get_close_received(ws->ctx))
		ws->failed = true;
	return ws->failed ? -1 : 0;
}

int kt_ws_send(struct kt_ws *ws, bool text, const void *data, size_t len)
{
	struct wslay_event_msg m = { text ? WSLAY_TEXT_FRAME : WSLAY_BINARY_FRAME, data, len };

	return wslay_event_queue_msg(ws->ctx, &m) == 0 ? 0 : -1;
}

int kt_ws_close(struct kt_ws *ws, uint16_t code, const char *reason)
{
	size_t n = reason ? strlen(reason) : 0;

	return wslay_event_queue_close(ws->ctx, code, (const uint8_t *)reason, n > 120 ? 120 : n) ==
		       0
		   ? 0
		   : -1;
}

void kt_ws_flush(struct kt_ws *ws, struct kt_sb *out)
{
	ws->out = out;
	if (wslay_event_send(ws->ctx) != 0)
		ws->failed = true;
	ws->out = NULL;
}

bool kt_ws_done(const struct kt_ws *ws)
{
	return ws->failed ||
	       (wslay_event_get_close_received(ws->ctx) && wslay_event_get_close_sent(ws->ctx)) ||
	       (!wslay_event_get_read_enabled(ws->ctx) && !wslay_event_get_write_enabled(ws->ctx));
}
