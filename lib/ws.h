/* SPDX-License-Identifier: Apache-2.0 */
/* ws: WebSocket (RFC 6455) messages on a connection, over wslay's event API
 *
 * Pure framing, like spdy: the caller feeds the peer's bytes in
 * (kt_ws_feed), whole messages come out through a callback, and what is
 * queued to send is taken as bytes (kt_ws_flush).  wslay checks the frames
 * (a server takes only masked ones), reassembles fragments, answers pings and
 * the close handshake, and closes with 1009 a message longer than the cap. */
#ifndef KT_WS_H
#define KT_WS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"

struct kt_ws;

/* a whole message from the peer: text or binary; data is borrowed */
typedef void (*kt_ws_on_msg)(void *arg, bool text, const unsigned char *data, size_t len);

/* a server's end (or a client's, masking what it sends, for tests and tools);
 * NULL when out of memory */
struct kt_ws *kt_ws_new(bool server, size_t max_msg, kt_ws_on_msg on_msg, void *arg);
void kt_ws_free(struct kt_ws *ws);

/* the peer's bytes: each whole message goes to on_msg; 0, or -1 when the
 * connection failed (a protocol error: the close to send is queued) */
int kt_ws_feed(struct kt_ws *ws, const void *buf, size_t len);
/* queues a message; -1 once a close was queued or when out of memory */
int kt_ws_send(struct kt_ws *ws, bool text, const void *data, size_t len);
/* queues the close handshake with a status code and a short reason */
int kt_ws_close(struct kt_ws *ws, uint16_t code, const char *reason);
/* appends what is queued to send to out */
void kt_ws_flush(struct kt_ws *ws, struct kt_sb *out);
/* the close handshake is over, or the connection failed: nothing more comes
 * or goes once what kt_ws_flush gave is written */
bool kt_ws_done(const struct kt_ws *ws);

#endif
