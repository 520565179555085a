/* SPDX-License-Identifier: Apache-2.0 */
/* smp_go: Go's view of decoded JSON (types, ==, %v, float text), a hash, a stable sort */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "smp_int.h"

static bool int_text(const cJSON *v, int64_t *out)
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

enum kt_gk kt_gk_of(const cJSON *v)
{
	if (!v || cJSON_IsNull(v))
		return KT_GK_NULL;
	if (kt_json_is_number(v))
		return int_text(v, NULL) ? KT_GK_INT : KT_GK_FLOAT;
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

const char *kt_gk_type_name(enum kt_gk k)
{
	static const char *const names[] = {
		[KT_GK_NULL] = "<nil>",
		[KT_GK_BOOL] = "bool",
		[KT_GK_INT] = "int64",
		[KT_GK_FLOAT] = "float64",
		[KT_GK_STRING] = "string",
		[KT_GK_MAP] = "map[string]interface {}",
		[KT_GK_SLICE] = "[]interface {}",
	};
	return names[k];
}

double kt_gk_float(const cJSON *v)
{
	char buf[40];

	return strtod(kt_json_num_text(v, buf, sizeof(buf)), NULL);
}

static size_t nchildren(const cJSON *o)
{
	size_t n = 0;

	for (const cJSON *c = o->child; c; c = c->next)
		n++;
	return n;
}

static int cmp_keyptr(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return strcmp(x->string, y->string);
}

/* the children of an object sorted by key; caller frees the array */
static const cJSON **sorted_children(const cJSON *o, size_t n)
{
	const cJSON **v = malloc((n ? n : 1) * sizeof(*v));
	size_t i = 0;

	if (!v)
		return NULL;
	for (const cJSON *c = o->child; c; c = c->next)
		v[i++] = c;
	qsort(v, n, sizeof(*v), cmp_keyptr);
	return v;
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
	va = sorted_children(a, n);
	vb = sorted_children(b, n);
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
		int_text(a, &ia);
		int_text(b, &ib);
		return ia == ib;
	case KT_GK_FLOAT:
		return kt_gk_float(a) == kt_gk_float(b);
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

/* ----------------------------------------------------------------- floats */

/* shortest round-trip digits: "%.*e" text with the fewest digits */
static int shortest_e(double f, char *buf, size_t size)
{
	int p;

	for (p = 1; p <= 17; p++) {
		snprintf(buf, size, "%.*e", p - 1, f);
		if (strtod(buf, NULL) == f)
			break;
	}
	return p;
}

/* decimal exponent of a "%e" text */
static int e_exponent(const char *etext)
{
	const char *e = strchr(etext, 'e');

	return e ? (int)strtol(e + 1, NULL, 10) : 0;
}

void kt_go_float_json(double f, char *buf, size_t size)
{
	double a = fabs(f);
	char e[48];
	int p, exp;

	if (f == 0) {
		snprintf(buf, size, "%s", signbit(f) ? "-0" : "0");
		return;
	}
	p = shortest_e(f, e, sizeof(e));
	if (a < 1e-6 || a >= 1e21) {
		/* Go keeps e+XX but shortens e-0X to e-X */
		char *m = strstr(e, "e-0");

		if (m)
			memmove(m + 2, m + 3, strlen(m + 3) + 1);
		snprintf(buf, size, "%s", e);
		return;
	}
	exp = e_exponent(e);
	if (exp >= p - 1) {
		/* an integral value: Go writes the shortest digits, then zeros,
		 * where %f would write the binary value's exact digits */
		size_t n = 0;

		for (const char *d = e; *d && *d != 'e' && n + 1 < size; d++)
			if (*d == '-' || (*d >= '0' && *d <= '9'))
				buf[n++] = *d;
		for (int z = exp - (p - 1); z > 0 && n + 1 < size; z--)
			buf[n++] = '0';
		buf[n] = '\0';
		return;
	}
	snprintf(buf, size, "%.*f", p - 1 - exp, f);
}

static void float_v(struct kt_sb *sb, double f)
{
	char e[48];
	int p, exp;

	if (isinf(f)) {
		kt_sb_puts(sb, f > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (f == 0) {
		kt_sb_puts(sb, signbit(f) ? "-0" : "0");
		return;
	}
	p = shortest_e(f, e, sizeof(e));
	exp = e_exponent(e);
	if (exp < -4 || exp >= 6) {
		kt_sb_puts(sb, e);
		return;
	}
	kt_sb_printf(sb, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, f);
}

/* ------------------------------------------------------------------- %v */

void kt_go_fmt_v(struct kt_sb *sb, const cJSON *v)
{
	int64_t i;
	size_t n;
	const cJSON **kids;
	const char *sep = "";

	switch (kt_gk_of(v)) {
	case KT_GK_NULL:
		kt_sb_puts(sb, "<nil>");
		return;
	case KT_GK_BOOL:
		kt_sb_puts(sb, cJSON_IsTrue(v) ? "true" : "false");
		return;
	case KT_GK_INT:
		int_text(v, &i);
		kt_sb_printf(sb, "%" PRId64, i);
		return;
	case KT_GK_FLOAT:
		float_v(sb, kt_gk_float(v));
		return;
	case KT_GK_STRING:
		kt_sb_puts(sb, v->valuestring);
		return;
	case KT_GK_SLICE:
		kt_sb_puts(sb, "[");
		for (const cJSON *c = v->child; c; c = c->next, sep = " ") {
			kt_sb_puts(sb, sep);
			kt_go_fmt_v(sb, c);
		}
		kt_sb_puts(sb, "]");
		return;
	case KT_GK_MAP:
		n = nchildren(v);
		kids = sorted_children(v, n);
		if (!kids) {
			sb->oom = true;
			return;
		}
		kt_sb_puts(sb, "map[");
		for (size_t k = 0; k < n; k++) {
			kt_sb_puts(sb, k ? " " : "");
			kt_sb_puts(sb, kids[k]->string);
			kt_sb_puts(sb, ":");
			kt_go_fmt_v(sb, kids[k]);
		}
		kt_sb_puts(sb, "]");
		free(kids);
		return;
	}
}

void kt_go_ident(struct kt_sb *sb, const cJSON *v)
{
	enum kt_gk k = kt_gk_of(v);
	char buf[48];
	int64_t i;
	double f;

	switch (k) {
	case KT_GK_NULL:
		kt_sb_puts(sb, "n");
		return;
	case KT_GK_BOOL:
		kt_sb_puts(sb, cJSON_IsTrue(v) ? "bt" : "bf");
		return;
	case KT_GK_INT:
		int_text(v, &i);
		kt_sb_printf(sb, "i%" PRId64, i);
		return;
	case KT_GK_FLOAT:
		f = kt_gk_float(v);
		if (f == 0)
			f = 0; /* -0 == 0 in Go */
		snprintf(buf, sizeof(buf), "f%.17g", f);
		kt_sb_puts(sb, buf);
		return;
	case KT_GK_STRING:
		kt_sb_puts(sb, "s");
		kt_sb_puts(sb, v->valuestring);
		return;
	default:
		/* Go panics comparing maps and slices; give them a stable text */
		kt_sb_puts(sb, k == KT_GK_MAP ? "m" : "l");
		kt_go_fmt_v(sb, v);
		return;
	}
}

int kt_go_normalize_numbers(cJSON *t)
{
	char buf[48];

	if (!t)
		return 0;
	if (kt_json_is_number(t)) {
		int64_t i;
		const char *s;

		if (int_text(t, &i))
			snprintf(buf, sizeof(buf), "%" PRId64, i);
		else
			kt_go_float_json(kt_gk_float(t), buf, sizeof(buf));
		s = cJSON_IsRaw(t) ? t->valuestring : NULL;
		if (s && strcmp(s, buf) == 0)
			return 0;
		cJSON *n = kt_json_num_new_text(buf);

		if (!n)
			return -1;
		/* swap the payload in place so the item keeps its place and key */
		char *old = cJSON_IsRaw(t) ? t->valuestring : NULL;

		t->type = (t->type & ~0xff) | cJSON_Raw;
		t->valuestring = n->valuestring;
		t->valuedouble = n->valuedouble;
		t->valueint = n->valueint;
		n->valuestring = NULL;
		cJSON_Delete(n);
		free(old);
		return 0;
	}
	for (cJSON *c = t->child; c; c = c->next)
		if (kt_go_normalize_numbers(c) < 0)
			return -1;
	return 0;
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

/* ------------------------------------------------------------ stable sort */

struct sorter {
	void **v;
	bool (*less)(void *a, void *b, void *ctx);
	void *ctx;
};

static bool lt(struct sorter *s, size_t i, size_t j)
{
	return s->less(s->v[i], s->v[j], s->ctx);
}

static void swp(struct sorter *s, size_t i, size_t j)
{
	void *t = s->v[i];

	s->v[i] = s->v[j];
	s->v[j] = t;
}

static void insertion(struct sorter *s, size_t a, size_t b)
{
	for (size_t i = a + 1; i < b; i++)
		for (size_t j = i; j > a && lt(s, j, j - 1); j--)
			swp(s, j, j - 1);
}

static void swap_range(struct sorter *s, size_t a, size_t b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		swp(s, a + i, b + i);
}

static void rotate(struct sorter *s, size_t a, size_t m, size_t b)
{
	size_t i = m - a, j = b - m;

	while (i != j) {
		if (i > j) {
			swap_range(s, m - i, m, j);
			i -= j;
		} else {
			swap_range(s, m - i, m + j - i, i);
			j -= i;
		}
	}
	swap_range(s, m - i, m, i);
}

static void sym_merge(struct sorter *s, size_t a, size_t m, size_t b)
{
	size_t i, j, h, mid, n, start, r, p, end;

	if (m - a == 1) {
		i = m;
		j = b;
		while (i < j) {
			h = (i + j) >> 1;
			if (lt(s, h, a))
				i = h + 1;
			else
				j = h;
		}
		for (size_t k = a; k + 1 < i; k++)
			swp(s, k, k + 1);
		return;
	}
	if (b - m == 1) {
		i = a;
		j = m;
		while (i < j) {
			h = (i + j) >> 1;
			if (!lt(s, m, h))
				i = h + 1;
			else
				j = h;
		}
		for (size_t k = m; k > i; k--)
			swp(s, k, k - 1);
		return;
	}
	mid = (a + b) >> 1;
	n = mid + m;
	if (m > mid) {
		start = n - b;
		r = mid;
	} else {
		start = a;
		r = m;
	}
	p = n - 1;
	while (start < r) {
		size_t c = (start + r) >> 1;

		if (!lt(s, p - c, c))
			start = c + 1;
		else
			r = c;
	}
	end = n - start;
	if (start < m && m < end)
		rotate(s, start, m, end);
	if (a < start && start < mid)
		sym_merge(s, a, start, mid);
	if (mid < end && end < b)
		sym_merge(s, mid, end, b);
}

void kt_go_stable_sort(void **items, size_t n, bool (*less)(void *a, void *b, void *ctx),
		       void *ctx)
{
	struct sorter s = { items, less, ctx };
	size_t block = 20, a, b;

	a = 0;
	b = block;
	while (b <= n) {
		insertion(&s, a, b);
		a = b;
		b += block;
	}
	insertion(&s, a, n);
	while (block < n) {
		a = 0;
		b = 2 * block;
		while (b <= n) {
			sym_merge(&s, a, a + block, b);
			a = b;
			b += 2 * block;
		}
		if (a + block < n)
			sym_merge(&s, a, a + block, n);
		block *= 2;
	}
}
