/* SPDX-License-Identifier: Apache-2.0 */
/* channel: the remote command protocol of exec and attach, channel.k8s.io and
 * its versions 2 to 5, over SPDY/3.1 or WebSocket: which one an upgrade
 * request gets, the command's end as each version reports it on the error
 * stream, WebSocket messages as channel data, terminal sizes.  Pure. */
#ifndef KT_CHANNEL_H
#define KT_CHANNEL_H
#include <stdbool.h>
#include <stddef.h>

#include "core.h"

/* the channels (SPDY: the streamtype header; WebSocket: a message's first byte) */
enum kt_chan_id {
	KT_CHAN_STDIN = 0,
	KT_CHAN_STDOUT = 1,
	KT_CHAN_STDERR = 2,
	KT_CHAN_ERROR = 3,
	KT_CHAN_RESIZE = 4,
	KT_CHAN_CLOSE =
	    255, /* v5 over WebSocket: the next byte names a channel the client closed */
};

enum kt_chan_transport { KT_CHAN_SPDY, KT_CHAN_WEBSOCKET };

/* what an upgrade request was granted */
struct kt_chan_upgrade {
	enum kt_chan_transport transport;
	int version;	   /* 1 (channel.k8s.io) to 5 */
	bool base64;	   /* WebSocket text messages, base64 after the channel digit */
	char protocol[40]; /* the name to answer with; "" for a WebSocket client that named none */
};

/* a refused upgrade: the status, the X-Accepted-Stream-Protocol-Versions to
 * send (comma-joined; "" for none) and a body */
struct kt_chan_refusal {
	int status;
	char accepted[160];
	char body[300];
};

/*
 * Which protocol an exec or attach request gets, from its headers: Connection,
 * Upgrade, every X-Stream-Protocol-Version joined with commas, every
 * Sec-WebSocket-Protocol joined with commas (NULL for a header not sent).  The
 * client's order wins, as the kubelet's handshake takes the first it knows.
 * 0 with *up; -1 with *no: 400 when the request is no upgrade or a SPDY one
 * names no version, 403 with the accepted list when none is known (SPDY), 400
 * with the list in the body for WebSocket.
 */
int kt_chan_negotiate(const char *connection, const char *upgrade, const char *stream_versions,
		      const char *ws_protocols, struct kt_chan_upgrade *up,
		      struct kt_chan_refusal *no);

/*
 * The error stream's message when a command ended, appended to out: for
 * versions 4 and 5 a metav1.Status (Success; or Failure, reason NonZeroExitCode
 * with the code as the ExitCode cause, which kubectl exits with); before that
 * a text, and nothing on success.  code < 0: the command could not run, and
 * why says why (an InternalError Status, 500).
 */
void kt_chan_exit_status(struct kt_sb *out, int version, int code, const char *why);

/*
 * A WebSocket message of channel.k8s.io read: its channel in *chan and its data
 * appended to data (decoded when base64).  -1 for an empty message, a channel
 * digit that is not one, or base64 that is not.
 */
int kt_chan_ws_read(bool base64, const void *msg, size_t len, int *chan, struct kt_sb *data);
/* a WebSocket message for channel chan carrying data, appended to msg */
void kt_chan_ws_put(bool base64, int chan, const void *data, size_t len, struct kt_sb *msg);

/* a terminal size sent on the resize channel, {"Width":W,"Height":H} (a size
 * left out is 0, as Go decodes it); -1 when it is not one (0 to 65535 each) */
int kt_chan_resize_parse(const char *text, size_t len, unsigned *width, unsigned *height);

#endif
