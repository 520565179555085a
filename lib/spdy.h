/* SPDX-License-Identifier: Apache-2.0 */
/* spdy: SPDY/3.1 framing, the streams kubectl and kube-apiserver open on a
 * kubelet for exec, attach and port-forward
 *
 * Pure framing: bytes in, frames out (kt_spdy_parse), frames in, bytes out
 * (kt_spdy_put_*).  A connection has one zlib stream per direction for its
 * header blocks, primed with SPDY/3's dictionary, so one struct kt_spdy holds
 * both and frames must be read and written in connection order.  What the
 * streams mean (channels, flow control, timeouts) is the caller's.
 *
 * Limits: a frame longer than max_frame, or a header block that inflates past
 * max_headers (a zlib bomb), is a protocol error, and so is any malformed frame;
 * after an error the connection is unusable (the compression state is lost) and
 * must be closed, as the spec says. */
#ifndef KT_SPDY_H
#define KT_SPDY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"

enum kt_spdy_type {
	KT_SPDY_DATA = 0,
	KT_SPDY_SYN_STREAM = 1,
	KT_SPDY_SYN_REPLY = 2,
	KT_SPDY_RST_STREAM = 3,
	KT_SPDY_SETTINGS = 4,
	KT_SPDY_PING = 6,
	KT_SPDY_GOAWAY = 7,
	KT_SPDY_HEADERS = 8,
	KT_SPDY_WINDOW_UPDATE = 9,
};

#define KT_SPDY_FLAG_FIN	    0x01 /* the sender's half of the stream ends */
#define KT_SPDY_FLAG_UNIDIRECTIONAL 0x02 /* SYN_STREAM: the receiver sends nothing */

/* RST_STREAM status codes */
enum kt_spdy_rst {
	KT_SPDY_PROTOCOL_ERROR = 1,
	KT_SPDY_INVALID_STREAM = 2,
	KT_SPDY_REFUSED_STREAM = 3,
	KT_SPDY_UNSUPPORTED_VERSION = 4,
	KT_SPDY_CANCEL = 5,
	KT_SPDY_INTERNAL_ERROR = 6,
	KT_SPDY_FLOW_CONTROL_ERROR = 7,
	KT_SPDY_STREAM_IN_USE = 8,
	KT_SPDY_STREAM_ALREADY_CLOSED = 9,
	KT_SPDY_FRAME_TOO_LARGE = 11,
};

/* the initial flow-control window of every stream, until SETTINGS changes it */
#define KT_SPDY_WINDOW 65536
/* SETTINGS ids this module names */
#define KT_SPDY_SETTINGS_MAX_CONCURRENT_STREAMS 4
#define KT_SPDY_SETTINGS_INITIAL_WINDOW_SIZE	7

/* one name and its value; several values of one name are joined by NUL bytes,
 * so value_len counts them and value is NUL-terminated after the last */
struct kt_spdy_header {
	char *name;
	char *value;
	size_t value_len;
};

struct kt_spdy_setting {
	uint8_t flags;
	uint32_t id, value;
};

/* one frame; which fields are set depends on its type */
struct kt_spdy_frame {
	enum kt_spdy_type type;
	uint8_t flags;
	uint32_t
	    stream_id; /* DATA, SYN_*, RST_STREAM, HEADERS, WINDOW_UPDATE; GOAWAY: last good id */
	uint32_t assoc_id; /* SYN_STREAM */
	uint8_t priority;  /* SYN_STREAM, 0 (highest) to 7 */
	uint32_t value;	   /* RST_STREAM and GOAWAY: status; PING: id; WINDOW_UPDATE: delta */
	struct kt_spdy_header *headers; /* SYN_STREAM, SYN_REPLY, HEADERS: owned */
	size_t nheaders;
	struct kt_spdy_setting *settings; /* SETTINGS: owned */
	size_t nsettings;
	const unsigned char *data; /* DATA: borrowed from the parsed bytes */
	size_t len;
};

struct kt_spdy;

/* a connection's framing state; NULL when out of memory */
struct kt_spdy *kt_spdy_new(size_t max_frame, size_t max_headers);
void kt_spdy_free(struct kt_spdy *s);

/*
 * Reads one frame from the start of buf.  Returns how many bytes it took (the
 * frame is in *f, to be released with kt_spdy_frame_clear), 0 when buf does
 * not hold a whole frame yet (nothing is consumed; call again with more), or -1
 * on a protocol error, with a sentence in *why and, when the error belongs to
 * one stream, its id in f->stream_id.
 */
ssize_t kt_spdy_parse(struct kt_spdy *s, const void *buf, size_t len, struct kt_spdy_frame *f,
		      const char **why);
void kt_spdy_frame_clear(struct kt_spdy_frame *f);

/* the first value of a header of the frame (names are lower case), or NULL */
const char *kt_spdy_header_get(const struct kt_spdy_frame *f, const char *name);

/*
 * Writers append one frame to out.  Those with a header block use the
 * connection's compressor and return -1 (out unchanged) when it fails or the
 * headers are not valid (a name empty or not lower case, a duplicate name).
 */
int kt_spdy_put_syn_stream(struct kt_spdy *s, struct kt_sb *out, uint32_t id, uint32_t assoc,
			   uint8_t priority, uint8_t flags, const struct kt_spdy_header *h,
			   size_t n);
int kt_spdy_put_syn_reply(struct kt_spdy *s, struct kt_sb *out, uint32_t id, uint8_t flags,
			  const struct kt_spdy_header *h, size_t n);
int kt_spdy_put_headers(struct kt_spdy *s, struct kt_sb *out, uint32_t id, uint8_t flags,
			const struct kt_spdy_header *h, size_t n);
void kt_spdy_put_data(struct kt_sb *out, uint32_t id, uint8_t flags, const void *data, size_t len);
void kt_spdy_put_rst_stream(struct kt_sb *out, uint32_t id, uint32_t status);
void kt_spdy_put_settings(struct kt_sb *out, const struct kt_spdy_setting *set, size_t n);
void kt_spdy_put_ping(struct kt_sb *out, uint32_t id);
void kt_spdy_put_goaway(struct kt_sb *out, uint32_t last_good, uint32_t status);
void kt_spdy_put_window_update(struct kt_sb *out, uint32_t id, uint32_t delta);

/* the SPDY/3 header dictionary (for tests that check it against a peer's) */
const unsigned char *kt_spdy_dictionary(size_t *len);

#endif
