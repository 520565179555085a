/* SPDX-License-Identifier: Apache-2.0 */
/* rcmd: the server's end of an exec, attach or port-forward connection after
 * its upgrade, as the kubelet serves it: the client's streams (SPDY/3.1) or
 * channels (WebSocket) read and answered, flow control both ways, the
 * process's output framed for the client, its end on the error stream.
 *
 * Pure, like spdy and ws: the caller feeds the client's bytes in
 * (kt_rcmd_feed), hears what they mean through callbacks (input for the
 * process, its end, a terminal size, a port-forward pair), hands the
 * process's output in (kt_rcmd_write) and writes what kt_rcmd_out holds to
 * the client.  Timeouts are the caller's: kt_rcmd_ready says whether every
 * stream the request asked for is there. */
#ifndef KT_RCMD_H
#define KT_RCMD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel.h"
#include "core.h"

enum kt_rcmd_kind { KT_RCMD_EXEC, KT_RCMD_ATTACH, KT_RCMD_PORTFORWARD };

struct kt_rcmd_opts {
	enum kt_rcmd_kind kind;
	struct kt_chan_upgrade up; /* what the upgrade granted */
	bool in, out, err, tty;	   /* exec and attach: the streams asked for */
	size_t max_frame;	   /* SPDY: a longer frame is a protocol error */
	size_t max_headers;	   /* SPDY: a header block inflating past this, too */
};

/*
 * What the client's bytes mean.  key names a stream of the process: for exec
 * and attach its channel (KT_CHAN_STDIN); for port-forward the id of a data
 * stream.  The callbacks may call kt_rcmd_write and kt_rcmd_end, not
 * kt_rcmd_free.
 */
struct kt_rcmd_cb {
	/* data for the process's input */
	void (*input)(void *arg, uint32_t key, const unsigned char *data, size_t len);
	/* the client closed that input: no more comes */
	void (*input_end)(void *arg, uint32_t key);
	/* a terminal size from the resize channel */
	void (*resize)(void *arg, unsigned width, unsigned height);
	/* port-forward: a data stream and its error stream are both there */
	void (*forward)(void *arg, uint32_t key, unsigned port);
};

struct kt_rcmd;

/* NULL when out of memory */
struct kt_rcmd *kt_rcmd_new(const struct kt_rcmd_opts *o, const struct kt_rcmd_cb *cb, void *arg);
void kt_rcmd_free(struct kt_rcmd *r);

/*
 * The client's bytes; what is not a whole frame yet is kept.  0, or -1 on a
 * protocol error (a frame too large, a header block too large or bad, a
 * stream id reused or out of order, a window overrun, a stream type the
 * request did not ask for): kt_rcmd_why says which, and the connection is to
 * be closed once what kt_rcmd_out holds (a GOAWAY, a close) is written.
 */
int kt_rcmd_feed(struct kt_rcmd *r, const void *buf, size_t len);
const char *kt_rcmd_why(const struct kt_rcmd *r);

/* every stream the request asked for is there (WebSocket: at once) */
bool kt_rcmd_ready(const struct kt_rcmd *r);

/* how much of the process's output key may take now (the peer's window) */
size_t kt_rcmd_room(const struct kt_rcmd *r, uint32_t key);
/* the process's output on key; takes at most kt_rcmd_room bytes and says
 * how many it took */
size_t kt_rcmd_write(struct kt_rcmd *r, uint32_t key, const void *data, size_t len);
/* SPDY only, for output read straight into the connection's buffer: the
 * head of a DATA frame of len bytes on key (at most kt_rcmd_room) written
 * into head, the len bytes taken from the window, to be sent right after
 * the head and after all kt_rcmd_out held before; 0 (nothing written) on
 * WebSocket, for len 0 or past the room */
#define KT_RCMD_DATA_HEAD 8
size_t kt_rcmd_data_head(struct kt_rcmd *r, uint32_t key, size_t len,
			 unsigned char head[KT_RCMD_DATA_HEAD]);
/* the client may send len more bytes on key: the caller gave them on */
void kt_rcmd_consumed(struct kt_rcmd *r, uint32_t key, size_t len);
/* no more output on key (a FIN) */
void kt_rcmd_end(struct kt_rcmd *r, uint32_t key);
/* port-forward: text on key's error stream, then both of the pair end */
void kt_rcmd_forward_error(struct kt_rcmd *r, uint32_t key, const char *text);

/*
 * The process ended with code (< 0: it could not run, why says why): its
 * status on the error stream, then every stream ends and the connection is
 * closed (a GOAWAY, or the WebSocket close).  After this kt_rcmd_done.
 */
void kt_rcmd_exit(struct kt_rcmd *r, int code, const char *why);

/* the bytes to write to the client, taken (the buffer is emptied) */
void kt_rcmd_out(struct kt_rcmd *r, struct kt_sb *out);
/* nothing more will come or go: close once kt_rcmd_out's bytes are written */
bool kt_rcmd_done(const struct kt_rcmd *r);

#endif
