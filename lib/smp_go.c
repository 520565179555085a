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
#include "json_go.h"
#include "core.h"
#include "smp_int.h"

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
		kt_go_int64(v, &i);
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
		kids = kt_sorted_members(v, &n);
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
		kt_go_int64(v, &i);
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

/* an integer as Go writes it already: no sign but '-', no leading zero, and
 * short enough for int64 whatever its digits */
static bool canonical_int(const char *s)
{
	bool neg = *s == '-';
	size_t n;

	s += neg;
	if (*s == '0')
		return s[1] == '\0' && !neg;	/* Go writes -0 as 0 */
	for (n = 0; s[n] >= '0' && s[n] <= '9'; n++)
		;
	return n > 0 && n <= 18 && s[n] == '\0';
}

int kt_go_normalize_numbers(cJSON *t)
{
	char buf[48];

	if (!t)
		return 0;
	switch (t->type & 0xff) {
	case cJSON_Raw:
		if (t->valuestring && canonical_int(t->valuestring))
			return 0;
		break;
	case cJSON_Object:
	case cJSON_Array:
		for (cJSON *c = t->child; c; c = c->next)
			if (kt_go_normalize_numbers(c) < 0)
				return -1;
		return 0;
	case cJSON_Number:
		break;
	default:
		return 0;	/* strings, booleans and null hold no number */
	}
	if (kt_json_is_number(t)) {
		int64_t i;
		const char *s;

		if (kt_go_int64(t, &i))
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
