/* SPDX-License-Identifier: Apache-2.0 */
/* core: the small utilities every module shares, each written once */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "err.h"
#include "json.h"

/* ---------------------------------------------------------------- numbers */

bool kt_go_int64(const cJSON *v, int64_t *out)
{
	char buf[40], *end;
	const char *s = kt_json_num_text(v, buf, sizeof(buf));
	long long x;

	if (strpbrk(s, ".eE"))
		return false;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || *end)
		return false; /* too big for int64: upstream decodes a float64 */
	if (out)
		*out = x;
	return true;
}

static double num_float(const cJSON *v)
{
	char buf[40];

	return strtod(kt_json_num_text(v, buf, sizeof(buf)), NULL);
}

enum kt_gk kt_gk_of(const cJSON *v)
{
	if (!v || cJSON_IsNull(v))
		return KT_GK_NULL;
	if (kt_json_is_number(v))
		return kt_go_int64(v, NULL) ? KT_GK_INT : KT_GK_FLOAT;
	if (cJSON_IsBool(v))
		return KT_GK_BOOL;
	if (cJSON_IsString(v))
		return KT_GK_STRING;
	if (cJSON_IsObject(v))
		return KT_GK_MAP;
	if (cJSON_IsArray(v))
		return KT_GK_SLICE;
	return KT_GK_NULL;
}

/* --------------------------------------------------------------- key sort */

int kt_key_cmp(const char *a, const char *b)
{
	return strcmp(a, b);	/* bytewise: strcmp compares as unsigned char */
}

static int member_cmp(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return kt_key_cmp(x->string, y->string);
}

const cJSON **kt_sorted_members(const cJSON *obj, size_t *n)
{
	size_t len = 0, i = 0;
	const cJSON **v;

	for (const cJSON *c = obj->child; c; c = c->next)
		len++;
	v = malloc((len ? len : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (const cJSON *c = obj->child; c; c = c->next)
		v[i++] = c;
	qsort(v, len, sizeof(*v), member_cmp);
	if (n)
		*n = len;
	return v;
}

/* relinks the members of one object in key order; false when out of memory */
bool kt_sort_members(cJSON *obj)
{
	size_t n = 0;
	cJSON **v = (cJSON **)kt_sorted_members(obj, &n);

	if (!v)
		return false;
	for (size_t i = 0; i < n; i++) {
		v[i]->prev = i ? v[i - 1] : v[n - 1];
		v[i]->next = i + 1 < n ? v[i + 1] : NULL;
	}
	obj->child = n ? v[0] : NULL;
	free(v);
	return true;
}

void kt_sort_keys(cJSON *item)
{
	if (!item)
		return;
	if (cJSON_IsObject(item) && item->child)
		kt_sort_members(item);
	for (cJSON *c = item->child; c; c = c->next)
		kt_sort_keys(c);
}

/* ------------------------------------------------------------- deep equal */

static size_t nchildren(const cJSON *o)
{
	size_t n = 0;

	for (const cJSON *c = o->child; c; c = c->next)
		n++;
	return n;
}

static bool map_equal(const cJSON *a, const cJSON *b)
{
	size_t n = nchildren(a);
	const cJSON **va, **vb;
	bool eq = true;

	if (n != nchildren(b))
		return false;
	if (n <= 16) {
		for (const cJSON *x = a->child; x; x = x->next) {
			const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);

			if (!y || !kt_go_equal(x, y))
				return false;
		}
		return true;
	}
	va = kt_sorted_members(a, NULL);
	vb = kt_sorted_members(b, NULL);
	if (!va || !vb) {
		free(va);
		free(vb);
		return false;
	}
	for (size_t i = 0; i < n && eq; i++)
		eq = strcmp(va[i]->string, vb[i]->string) == 0 &&
		     kt_go_equal(va[i], vb[i]);
	free(va);
	free(vb);
	return eq;
}

bool kt_go_equal(const cJSON *a, const cJSON *b)
{
	enum kt_gk ka = kt_gk_of(a), kb = kt_gk_of(b);
	int64_t ia, ib;
	const cJSON *x, *y;

	if (ka != kb)
		return false;
	switch (ka) {
	case KT_GK_NULL:
		return true;
	case KT_GK_BOOL:
		return cJSON_IsTrue(a) == cJSON_IsTrue(b);
	case KT_GK_INT:
		kt_go_int64(a, &ia);
		kt_go_int64(b, &ib);
		return ia == ib;
	case KT_GK_FLOAT:
		return num_float(a) == num_float(b);
	case KT_GK_STRING:
		return strcmp(a->valuestring, b->valuestring) == 0;
	case KT_GK_MAP:
		return map_equal(a, b);
	case KT_GK_SLICE:
		for (x = a->child, y = b->child; x && y; x = x->next, y = y->next)
			if (!kt_go_equal(x, y))
				return false;
		return !x && !y;
	}
	return false;
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

int kt_hmap_put_new(struct kt_hmap *m, const char *key, void *val)
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

int kt_name_check(const char *name, struct kt_err *err)
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
