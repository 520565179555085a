/* SPDX-License-Identifier: Apache-2.0 */
/* core: the small utilities every module shares, each written once */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "kt_err.h"

/* --------------------------------------------------------------- key sort */

int kt_key_cmp(const char *a, const char *b)
{
	return strcmp(a, b);	/* bytewise: strcmp compares as unsigned char */
}

int kt_key_cmp_ptr(const void *a, const void *b)
{
	return kt_key_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---------------------------------------------------------------- strings */

void kt_sb_put(struct kt_sb *sb, const char *s, size_t n)
{
	if (sb->oom)
		return;
	if (sb->len + n + 1 > sb->cap) {
		size_t cap = sb->cap ? sb->cap : 64;
		char *nb;

		while (sb->len + n + 1 > cap)
			cap *= 2;
		nb = realloc(sb->buf, cap);
		if (!nb) {
			sb->oom = true;
			return;
		}
		sb->buf = nb;
		sb->cap = cap;
	}
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void kt_sb_puts(struct kt_sb *sb, const char *s)
{
	kt_sb_put(sb, s, strlen(s));
}

void kt_sb_printf(struct kt_sb *sb, const char *fmt, ...)
{
	char small[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		kt_sb_put(sb, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);

	if (!big) {
		sb->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	kt_sb_put(sb, big, (size_t)n);
	free(big);
}

void kt_sb_trunc(struct kt_sb *sb, size_t len)
{
	if (sb->buf && len < sb->len) {
		sb->len = len;
		sb->buf[len] = '\0';
	}
}

const char *kt_sb_str(const struct kt_sb *sb)
{
	return sb->buf ? sb->buf : "";
}

void kt_sb_release(struct kt_sb *sb)
{
	free(sb->buf);
	*sb = (struct kt_sb){ 0 };
}

/* ------------------------------------------------------------------- hash */

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static struct kt_hent *slot(const struct kt_hmap *m, const char *key, uint64_t h)
{
	size_t i = h & (m->cap - 1);

	for (;;) {
		struct kt_hent *e = &m->e[i];

		if (!e->key || (e->hash == h && strcmp(e->key, key) == 0))
			return e;
		i = (i + 1) & (m->cap - 1);
	}
}

static int grow(struct kt_hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 16;
	struct kt_hent *old = m->e;
	size_t ocap = m->cap;

	m->e = calloc(cap, sizeof(*m->e));
	if (!m->e) {
		m->e = old;
		return -1;
	}
	m->cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key)
			*slot(m, old[i].key, old[i].hash) = old[i];
	free(old);
	return 0;
}

static int put(struct kt_hmap *m, const char *key, void *val, bool replace)
{
	uint64_t h = fnv(key);
	struct kt_hent *e;

	if ((m->len + 1) * 2 > m->cap && grow(m) < 0)
		return -1;
	e = slot(m, key, h);
	if (e->key) {
		if (replace)
			e->val = val;
		return 0;
	}
	if (m->own_keys) {
		key = strdup(key);
		if (!key)
			return -1;
	}
	*e = (struct kt_hent){ .key = key, .hash = h, .val = val };
	m->len++;
	return 0;
}

int kt_hmap_put(struct kt_hmap *m, const char *key, void *val)
{
	return put(m, key, val, true);
}

int kt_hmap_put_first(struct kt_hmap *m, const char *key, void *val)
{
	return put(m, key, val, false);
}

void *kt_hmap_get(const struct kt_hmap *m, const char *key)
{
	struct kt_hent *e;

	if (!m->cap)
		return NULL;
	e = slot(m, key, fnv(key));
	return e->key ? e->val : NULL;
}

bool kt_hmap_has(const struct kt_hmap *m, const char *key)
{
	return m->cap && slot(m, key, fnv(key))->key;
}

void kt_hmap_release(struct kt_hmap *m)
{
	for (size_t i = 0; m->own_keys && i < m->cap; i++)
		free((char *)m->e[i].key);
	free(m->e);
	*m = (struct kt_hmap){ 0 };
}

/* ---------------------------------------------------------- HTTP reasons */

static const struct {
	long code;
	const char *text;
} reasons[] = {
	{ 400, "Bad Request" },		{ 401, "Unauthorized" },
	{ 403, "Forbidden" },		{ 404, "Not Found" },
	{ 405, "Method Not Allowed" },	{ 406, "Not Acceptable" },
	{ 408, "Request Timeout" },	{ 409, "Conflict" },
	{ 410, "Gone" },		{ 413, "Request Entity Too Large" },
	{ 415, "Unsupported Media Type" }, { 422, "Unprocessable Entity" },
	{ 429, "Too Many Requests" },	{ 500, "Internal Server Error" },
	{ 501, "Not Implemented" },	{ 502, "Bad Gateway" },
	{ 503, "Service Unavailable" },	{ 504, "Gateway Timeout" },
};

bool kt_http_retryable(long status, bool retry_after)
{
	return status == 0 || status == 429 || status == 500 || status == 502 ||
	       status == 503 || status == 504 || (status > 500 && retry_after);
}

/* --------------------------------------------------------------- backoff */

static bool backoff_expired(const struct kt_backoff *b, int64_t now_ms)
{
	return b->wait_ms <= 0 || (b->reset_ms > 0 && now_ms - b->at_ms > b->reset_ms);
}

int64_t kt_backoff_peek(const struct kt_backoff *b, int64_t now_ms)
{
	double d;

	if (backoff_expired(b, now_ms))
		return b->first_ms;
	d = (double)b->wait_ms * (b->factor > 0 ? b->factor : 1);
	return b->cap_ms > 0 && d > (double)b->cap_ms ? b->cap_ms : (int64_t)d;
}

int64_t kt_backoff_next(struct kt_backoff *b, int64_t now_ms)
{
	int64_t d, spread;

	if (backoff_expired(b, now_ms))
		b->taken = 0;
	if (b->steps > 0 && b->taken >= b->steps)
		return -1;
	d = kt_backoff_peek(b, now_ms);
	b->wait_ms = d;
	b->at_ms = now_ms;
	b->taken++;
	spread = (int64_t)(b->jitter * (double)d);
	if (spread > 0)
		d += (int64_t)((unsigned long)rand_r(&b->seed) % (unsigned long)(spread + 1));
	return d;
}

void kt_backoff_reset(struct kt_backoff *b)
{
	b->wait_ms = 0;
	b->at_ms = 0;
	b->taken = 0;
}

const char *kt_http_reason(long status)
{
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].code == status)
			return reasons[i].text;
	return "";
}

/* ------------------------------------------------------------------ names */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int kt_node_name_check(const char *name, struct kt_err *err)
{
	size_t n = name ? strlen(name) : 0;
	const char *why = NULL;

	if (n == 0)
		return kt_error_kind(err, KT_ERR_INPUT, "invalid node name '': must not be empty");
	if (n > KT_NAME_MAX)
		why = "must be at most 253 characters";
	for (size_t i = 0; !why && i < n; i++) {
		char c = name[i];
		bool edge = i == 0 || i == n - 1 || name[i - 1] == '.' || name[i + 1] == '.';

		if (name_char(c))
			continue;
		if (c != '-' && c != '.')
			why = "only lower-case letters, digits, '-' and '.' are allowed";
		else if (edge)
			why = "each dot-separated part must start and end with a letter or digit";
	}
	if (why)
		return kt_error_kind(err, KT_ERR_INPUT, "invalid node name '%s': %s", name, why);
	return 0;
}

/* ------------------------------------------------------------------- base64 */

/* a base64 digit's value, of either alphabet (standard or URL-safe); -1 when none */
static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

char *kt_base64_decode(const char *in, size_t n, size_t *outlen)
{
	size_t o = 0;
	char *out = malloc(n / 4 * 3 + 4);
	unsigned acc = 0;
	int bits = 0;
	bool pad = false;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)in[i], v;

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad = true;
			continue;
		}
		v = b64val(c);
		if (v < 0 || pad) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

static const char b64_digits[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *kt_base64_encode(const char *in, size_t n)
{
	char *out = malloc((n + 2) / 3 * 4 + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)in[i] << 16;

		if (i + 1 < n)
			v |= (unsigned char)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)in[i + 2];
		out[o++] = b64_digits[(v >> 18) & 63];
		out[o++] = b64_digits[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64_digits[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64_digits[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}
