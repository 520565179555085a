/* SPDX-License-Identifier: Apache-2.0 */
/* spdy: SPDY/3.1 frames and their zlib-compressed header blocks (see spdy.h) */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "spdy.h"

/*
 * SPDY/3's dictionary for header compression: the words below, each preceded
 * by its length as four big-endian bytes, then the tail as it is, 1423 bytes.
 * Both ends prime zlib with it; one byte off and no peer can read our headers.
 */
static const char *const dict_words[] = {
	"options",
	"head",
	"post",
	"put",
	"delete",
	"trace",
	"accept",
	"accept-charset",
	"accept-encoding",
	"accept-language",
	"accept-ranges",
	"age",
	"allow",
	"authorization",
	"cache-control",
	"connection",
	"content-base",
	"content-encoding",
	"content-language",
	"content-length",
	"content-location",
	"content-md5",
	"content-range",
	"content-type",
	"date",
	"etag",
	"expect",
	"expires",
	"from",
	"host",
	"if-match",
	"if-modified-since",
	"if-none-match",
	"if-range",
	"if-unmodified-since",
	"last-modified",
	"location",
	"max-forwards",
	"pragma",
	"proxy-authenticate",
	"proxy-authorization",
	"range",
	"referer",
	"retry-after",
	"server",
	"te",
	"trailer",
	"transfer-encoding",
	"upgrade",
	"user-agent",
	"vary",
	"via",
	"warning",
	"www-authenticate",
	"method",
	"get",
	"status",
	"200 OK",
	"version",
	"HTTP/1.1",
	"url",
	"public",
	"set-cookie",
	"keep-alive",
	"origin",
};
static const char dict_tail[] =
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417"
    "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
    "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
    "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
    "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
    "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8"
    "charset=iso-8859-1,utf-,*,enq=0.";

#define DICT_LEN 1423
static unsigned char dict[DICT_LEN];
static size_t dict_len;

const unsigned char *kt_spdy_dictionary(size_t *len)
{
	if (!dict_len) {
		size_t n = 0;

		for (size_t i = 0; i < sizeof(dict_words) / sizeof(dict_words[0]); i++) {
			size_t w = strlen(dict_words[i]);

			dict[n] = dict[n + 1] = dict[n + 2] = 0;
			dict[n + 3] = (unsigned char)w;
			memcpy(dict + n + 4, dict_words[i], w);
			n += 4 + w;
		}
		memcpy(dict + n, dict_tail, sizeof(dict_tail) - 1);
		dict_len = n + sizeof(dict_tail) - 1;
	}
	*len = dict_len;
	return dict;
}

struct kt_spdy {
	z_stream in, out; /* header blocks read, header blocks written */
	bool in_ok, out_ok;
	size_t max_frame, max_headers;
	unsigned char *block; /* an inflated header block */
	size_t block_cap;
};

struct kt_spdy *kt_spdy_new(size_t max_frame, size_t max_headers)
{
	struct kt_spdy *s = calloc(1, sizeof(*s));
	size_t dl;
	const unsigned char *d = kt_spdy_dictionary(&dl);

	if (!s)
		return NULL;
	s->max_frame = max_frame > 0xffffff ? 0xffffff : max_frame;
	s->max_headers = max_headers;
	s->in_ok = inflateInit(&s->in) == Z_OK;
	s->out_ok = deflateInit(&s->out, Z_DEFAULT_COMPRESSION) == Z_OK &&
		    deflateSetDictionary(&s->out, d, (uInt)dl) == Z_OK;
	if (!s->in_ok || !s->out_ok) {
		kt_spdy_free(s);
		return NULL;
	}
	return s;
}

void kt_spdy_free(struct kt_spdy *s)
{
	if (!s)
		return;
	if (s->in_ok)
		inflateEnd(&s->in);
	if (s->out_ok)
		deflateEnd(&s->out);
	free(s->block);
	free(s);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(struct kt_sb *out, uint32_t v)
{
	char b[4] = { (char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v };

	kt_sb_put(out, b, 4);
}

/* the eight bytes that start a control frame */
static void put_control(struct kt_sb *out, enum kt_spdy_type type, uint8_t flags, size_t len)
{
	char b[8] = { (char)0x80,	3,	     (char)(type >> 8),
		      (char)type,	(char)flags, (char)(len >> 16),
		      (char)(len >> 8), (char)len };

	kt_sb_put(out, b, 8);
}

void kt_spdy_frame_clear(struct kt_spdy_frame *f)
{
	for (size_t i = 0; i < f->nheaders; i++) {
		free(f->headers[i].name);
		free(f->headers[i].value);
	}
	free(f->headers);
	free(f->settings);
	memset(f, 0, sizeof(*f));
}

const char *kt_spdy_header_get(const struct kt_spdy_frame *f, const char *name)
{
	for (size_t i = 0; i < f->nheaders; i++)
		if (!strcmp(f->headers[i].name, name))
			return f->headers[i].value;
	return NULL;
}

/* inflates one header block into s->block; its length, or -1 with *why */
static ssize_t inflate_block(struct kt_spdy *s, const unsigned char *z, size_t n, const char **why)
{
	size_t got = 0;

	s->in.next_in = (Bytef *)z;
	s->in.avail_in = (uInt)n;
	for (;;) {
		int rc;

		if (got == s->block_cap) {
			size_t cap = s->block_cap ? s->block_cap * 2 : 1024;
			unsigned char *b;

			if (cap > s->max_headers + 1)
				cap = s->max_headers + 1;
			if (cap <= got) {
				*why = "a header block inflates past the limit";
				return -1;
			}
			b = realloc(s->block, cap);
			if (!b) {
				*why = "out of memory";
				return -1;
			}
			s->block = b;
			s->block_cap = cap;
		}
		s->in.next_out = s->block + got;
		s->in.avail_out = (uInt)(s->block_cap - got);
		rc = inflate(&s->in, Z_SYNC_FLUSH);
		got = s->block_cap - s->in.avail_out;
		if (rc == Z_NEED_DICT) {
			size_t dl;
			const unsigned char *d = kt_spdy_dictionary(&dl);

			if (inflateSetDictionary(&s->in, d, (uInt)dl) != Z_OK) {
				*why = "a header block is compressed with another dictionary";
				return -1;
			}
			continue;
		}
		if (rc == Z_BUF_ERROR && s->in.avail_in == 0 && s->in.avail_out > 0)
			break; /* all input taken, no more output */
		if (rc != Z_OK) {
			*why = rc == Z_STREAM_END ? "a header block ends the compressed stream"
						  : "a header block is not valid zlib data";
			return -1;
		}
		if (got > s->max_headers) {
			*why = "a header block inflates past the limit";
			return -1;
		}
		if (s->in.avail_in == 0 && s->in.avail_out > 0)
			break;
	}
	if (got > s->max_headers) {
		*why = "a header block inflates past the limit";
		return -1;
	}
	return (ssize_t)got;
}

static bool name_ok(const unsigned char *p, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] == 0 || (p[i] >= 'A' && p[i] <= 'Z'))
			return false;
	return true;
}

/* reads the name/value pairs of an inflated block into f */
static int read_pairs(const unsigned char *p, size_t n, struct kt_spdy_frame *f, const char **why)
{
	const unsigned char *end = p + n;
	uint32_t count;

	if (n < 4) {
		*why = "a header block is shorter than its count";
		return -1;
	}
	count = be32(p);
	p += 4;
	/* a pair takes at least eight bytes: the count cannot ask for more memory
	 * than the block could fill */
	if (count > (size_t)(end - p) / 8) {
		*why = "a header block counts more pairs than it holds";
		return -1;
	}
	f->headers = calloc(count ? count : 1, sizeof(*f->headers));
	if (!f->headers) {
		*why = "out of memory";
		return -1;
	}
	for (uint32_t i = 0; i < count; i++) {
		struct kt_spdy_header *h = &f->headers[i];
		uint32_t nl, vl;

		if (end - p < 4 || (nl = be32(p)) > (size_t)(end - p) - 4) {
			*why = "a header name runs past its block";
			return -1;
		}
		if (!name_ok(p + 4, nl)) {
			*why = "a header name is empty, or not lower case";
			return -1;
		}
		h->name = strndup((const char *)p + 4, nl);
		p += 4 + nl;
		if (end - p < 4 || (vl = be32(p)) > (size_t)(end - p) - 4) {
			free(h->name);
			h->name = NULL;
			*why = "a header value runs past its block";
			return -1;
		}
		h->value = malloc((size_t)vl + 1);
		if (!h->name || !h->value) {
			free(h->name);
			free(h->value);
			h->name = h->value = NULL;
			*why = "out of memory";
			return -1;
		}
		memcpy(h->value, p + 4, vl);
		h->value[vl] = 0;
		h->value_len = vl;
		p += 4 + vl;
		f->nheaders = i + 1;
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(f->headers[j].name, h->name)) {
				*why = "a header name appears twice in one block";
				return -1;
			}
	}
	if (p != end) {
		*why = "a header block has bytes after its last pair";
		return -1;
	}
	return 0;
}

static int read_headers(struct kt_spdy *s, const unsigned char *z, size_t n,
			struct kt_spdy_frame *f, const char **why)
{
	ssize_t len = inflate_block(s, z, n, why);

	return len < 0 ? -1 : read_pairs(s->block, (size_t)len, f, why);
}

/* a control frame's fixed part: exactly `want` bytes, or at least them */
static int need(size_t len, size_t want, bool exact, const char **why)
{
	if (exact ? len != want : len < want) {
		*why = "a control frame has the wrong length for its type";
		return -1;
	}
	return 0;
}

static int read_control(struct kt_spdy *s, unsigned type, const unsigned char *p, size_t len,
			struct kt_spdy_frame *f, const char **why)
{
	f->type = (enum kt_spdy_type)type;
	switch (type) {
	case KT_SPDY_SYN_STREAM:
		if (need(len, 10, false, why) < 0)
			return -1;
		f->stream_id = be32(p) & 0x7fffffff;
		f->assoc_id = be32(p + 4) & 0x7fffffff;
		f->priority = p[8] >> 5;
		if (!f->stream_id) {
			*why = "SYN_STREAM for stream 0";
			return -1;
		}
		return read_headers(s, p + 10, len - 10, f, why);
	case KT_SPDY_SYN_REPLY:
	case KT_SPDY_HEADERS:
		if (need(len, 4, false, why) < 0)
			return -1;
		f->stream_id = be32(p) & 0x7fffffff;
		if (!f->stream_id) {
			*why = "headers for stream 0";
			return -1;
		}
		return read_headers(s, p + 4, len - 4, f, why);
	case KT_SPDY_RST_STREAM:
	case KT_SPDY_WINDOW_UPDATE:
		if (need(len, 8, true, why) < 0)
			return -1;
		f->stream_id = be32(p) & 0x7fffffff;
		f->value = be32(p + 4);
		if (type == KT_SPDY_WINDOW_UPDATE) {
			f->value &= 0x7fffffff;
			if (!f->value) {
				*why = "WINDOW_UPDATE by 0";
				return -1;
			}
		} else if (!f->stream_id) {
			*why = "RST_STREAM for stream 0";
			return -1;
		}
		return 0;
	case KT_SPDY_GOAWAY:
		if (need(len, 8, true, why) < 0)
			return -1;
		f->stream_id = be32(p) & 0x7fffffff;
		f->value = be32(p + 4);
		return 0;
	case KT_SPDY_PING:
		if (need(len, 4, true, why) < 0)
			return -1;
		f->value = be32(p);
		return 0;
	case KT_SPDY_SETTINGS: {
		uint32_t n;

		if (need(len, 4, false, why) < 0)
			return -1;
		n = be32(p);
		if (n > (len - 4) / 8 || len != 4 + (size_t)n * 8) {
			*why = "SETTINGS counts other than the entries it holds";
			return -1;
		}
		f->settings = calloc(n ? n : 1, sizeof(*f->settings));
		if (!f->settings) {
			*why = "out of memory";
			return -1;
		}
		for (uint32_t i = 0; i < n; i++) {
			const unsigned char *e = p + 4 + 8 * (size_t)i;

			f->settings[i].flags = e[0];
			f->settings[i].id = be32(e) & 0xffffff;
			f->settings[i].value = be32(e + 4);
		}
		f->nsettings = n;
		return 0;
	}
	default:
		/* a type this version does not know is ignored, as the spec asks */
		return 0;
	}
}

ssize_t kt_spdy_parse(struct kt_spdy *s, const void *buf, size_t len, struct kt_spdy_frame *f,
		      const char **why)
{
	const unsigned char *b = buf;
	size_t flen;

	memset(f, 0, sizeof(*f));
	*why = NULL;
	if (len < 8)
		return 0;
	flen = (size_t)b[5] << 16 | (size_t)b[6] << 8 | b[7];
	if (flen > s->max_frame) {
		*why = "a frame is longer than the limit";
		return -1;
	}
	if ((b[0] & 0x80) && ((unsigned)(b[0] & 0x7f) << 8 | b[1]) != 3) {
		*why = "a control frame is not of SPDY version 3";
		return -1;
	}
	if (len < 8 + flen)
		return 0;
	f->flags = b[4];
	if (b[0] & 0x80) {
		if (read_control(s, (unsigned)b[2] << 8 | b[3], b + 8, flen, f, why) < 0) {
			uint32_t id = f->stream_id;

			kt_spdy_frame_clear(f);
			f->stream_id = id;
			return -1;
		}
		return (ssize_t)(8 + flen);
	}
	f->type = KT_SPDY_DATA;
	f->stream_id = be32(b) & 0x7fffffff;
	if (!f->stream_id) {
		*why = "DATA on stream 0";
		return -1;
	}
	f->data = b + 8;
	f->len = flen;
	return (ssize_t)(8 + flen);
}

/* appends the compressed header block of h to out; -1 when h is not valid */
static int put_block(struct kt_spdy *s, struct kt_sb *out, const struct kt_spdy_header *h, size_t n)
{
	struct kt_sb plain = { 0 };
	unsigned char chunk[4096];
	int rc = 0;

	put32(&plain, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(h[i].name);

		if (!name_ok((const unsigned char *)h[i].name, nl))
			rc = -1;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(h[j].name, h[i].name))
				rc = -1;
		put32(&plain, (uint32_t)nl);
		kt_sb_put(&plain, h[i].name, nl);
		put32(&plain, (uint32_t)h[i].value_len);
		kt_sb_put(&plain, h[i].value, h[i].value_len);
	}
	if (rc < 0 || plain.oom) {
		kt_sb_release(&plain);
		return -1;
	}
	s->out.next_in = (Bytef *)plain.buf;
	s->out.avail_in = (uInt)plain.len;
	do {
		s->out.next_out = chunk;
		s->out.avail_out = sizeof(chunk);
		if (deflate(&s->out, Z_SYNC_FLUSH) == Z_STREAM_ERROR) {
			rc = -1;
			break;
		}
		kt_sb_put(out, (const char *)chunk, sizeof(chunk) - s->out.avail_out);
	} while (s->out.avail_out == 0);
	kt_sb_release(&plain);
	return rc;
}

/* a frame with a header block: the fixed part, then the block, then the length */
static int put_with_block(struct kt_spdy *s, struct kt_sb *out, enum kt_spdy_type type,
			  uint8_t flags, const char *fixed, size_t nfixed,
			  const struct kt_spdy_header *h, size_t n)
{
	size_t start = out->len, len;

	put_control(out, type, flags, 0);
	kt_sb_put(out, fixed, nfixed);
	if (put_block(s, out, h, n) < 0 || out->oom || (len = out->len - start - 8) > 0xffffff) {
		kt_sb_trunc(out, start);
		return -1;
	}
	out->buf[start + 5] = (char)(len >> 16);
	out->buf[start + 6] = (char)(len >> 8);
	out->buf[start + 7] = (char)len;
	return 0;
}

int kt_spdy_put_syn_stream(struct kt_spdy *s, struct kt_sb *out, uint32_t id, uint32_t assoc,
			   uint8_t priority, uint8_t flags, const struct kt_spdy_header *h,
			   size_t n)
{
	char fixed[10] = { (char)(id >> 24 & 0x7f),
			   (char)(id >> 16),
			   (char)(id >> 8),
			   (char)id,
			   (char)(assoc >> 24 & 0x7f),
			   (char)(assoc >> 16),
			   (char)(assoc >> 8),
			   (char)assoc,
			   (char)((priority & 7) << 5),
			   0 };

	return put_with_block(s, out, KT_SPDY_SYN_STREAM, flags, fixed, 10, h, n);
}

int kt_spdy_put_syn_reply(struct kt_spdy *s, struct kt_sb *out, uint32_t id, uint8_t flags,
			  const struct kt_spdy_header *h, size_t n)
{
	char fixed[4] = { (char)(id >> 24 & 0x7f), (char)(id >> 16), (char)(id >> 8), (char)id };

	return put_with_block(s, out, KT_SPDY_SYN_REPLY, flags, fixed, 4, h, n);
}

int kt_spdy_put_headers(struct kt_spdy *s, struct kt_sb *out, uint32_t id, uint8_t flags,
			const struct kt_spdy_header *h, size_t n)
{
	char fixed[4] = { (char)(id >> 24 & 0x7f), (char)(id >> 16), (char)(id >> 8), (char)id };

	return put_with_block(s, out, KT_SPDY_HEADERS, flags, fixed, 4, h, n);
}

void kt_spdy_put_data(struct kt_sb *out, uint32_t id, uint8_t flags, const void *data, size_t len)
{
	const char *p = data;

	/* a frame carries at most 2^24-1 bytes: longer data goes in several, the
	 * flags on the last */
	do {
		size_t n = len > 0xffffff ? 0xffffff : len;

		put32(out, id & 0x7fffffff);
		put32(out, (uint32_t)(n == len ? flags : 0) << 24 | (uint32_t)n);
		kt_sb_put(out, p, n);
		p += n;
		len -= n;
	} while (len > 0);
}

void kt_spdy_put_rst_stream(struct kt_sb *out, uint32_t id, uint32_t status)
{
	put_control(out, KT_SPDY_RST_STREAM, 0, 8);
	put32(out, id & 0x7fffffff);
	put32(out, status);
}

void kt_spdy_put_settings(struct kt_sb *out, const struct kt_spdy_setting *set, size_t n)
{
	put_control(out, KT_SPDY_SETTINGS, 0, 4 + 8 * n);
	put32(out, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		put32(out, (uint32_t)set[i].flags << 24 | (set[i].id & 0xffffff));
		put32(out, set[i].value);
	}
}

void kt_spdy_put_ping(struct kt_sb *out, uint32_t id)
{
	put_control(out, KT_SPDY_PING, 0, 4);
	put32(out, id);
}

void kt_spdy_put_goaway(struct kt_sb *out, uint32_t last_good, uint32_t status)
{
	put_control(out, KT_SPDY_GOAWAY, 0, 8);
	put32(out, last_good & 0x7fffffff);
	put32(out, status);
}

void kt_spdy_put_window_update(struct kt_sb *out, uint32_t id, uint32_t delta)
{
	put_control(out, KT_SPDY_WINDOW_UPDATE, 0, 8);
	put32(out, id & 0x7fffffff);
	put32(out, delta & 0x7fffffff);
}
