/* SPDX-License-Identifier: Apache-2.0 */
/* json_go: Go's view of decoded JSON values, and the key sorts of cJSON objects */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"
#include "json_go.h"

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
