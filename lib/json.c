/* SPDX-License-Identifier: Apache-2.0 */
/* json: exact numbers, copies, setters and lookups on cJSON trees */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json_go.h"
#include "json_int.h"

bool kt_json_is_number(const cJSON *item)
{
	if (!item)
		return false;
	if (cJSON_IsNumber(item))
		return true;
	/* only numbers are ever stored as Raw by this module */
	return cJSON_IsRaw(item) && item->valuestring;
}

int kt_json_num_int64(const cJSON *item, int64_t *out, struct kt_err *err)
{
	char buf[40];

	if (!kt_json_is_number(item))
		return kt_error_kind(err, KT_ERR_INPUT, "not a number");
	if (!kt_go_int64(item, out))
		return kt_error_kind(err, KT_ERR_INPUT, "%s is not an integer that fits int64",
				     kt_json_num_text(item, buf, sizeof(buf)));
	return 0;
}

/* the shortest %g text that reads back as the same double; JSON has no
 * infinity or NaN, so those (which only a caller's own arithmetic can make)
 * come out as null, as cJSON prints them */
static void double_text(double v, char *buf, size_t size)
{
	if (!isfinite(v)) {
		snprintf(buf, size, "null");
		return;
	}
	/* the range test comes first: the cast is undefined past int64 */
	if (fabs(v) < 9007199254740992.0 && v == (double)(int64_t)v) {
		snprintf(buf, size, "%" PRId64, (int64_t)v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

const char *kt_json_num_text(const cJSON *item, char *buf, size_t size)
{
	if (cJSON_IsRaw(item) && item->valuestring)
		return item->valuestring;
	double_text(item ? item->valuedouble : 0, buf, size);
	return buf;
}

void kt_json_num_fill(cJSON *item)
{
	item->valuedouble = strtod(item->valuestring, NULL);
	item->valueint = item->valuedouble >= INT32_MAX ? INT32_MAX
			 : item->valuedouble <= INT32_MIN ? INT32_MIN
							  : (int)item->valuedouble;
}

cJSON *kt_json_num_new_text(const char *text)
{
	cJSON *item = cJSON_CreateRaw(text);

	if (item)
		kt_json_num_fill(item);
	return item;
}

cJSON *kt_json_num_new_int(int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return kt_json_num_new_text(buf);
}

/* the length of the valid UTF-8 sequence at s (at most len bytes), 0 if none */
static size_t utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;

	if (need == 0 || c == 0 || need > len || (need == 2 && c < 0xc2))
		return 0;
	for (size_t k = 1; k < need; k++) {
		if ((s[k] >> 6) != 2)
			return 0;
	}
	return need;
}

cJSON *kt_json_string_from_bytes(const char *s, size_t len)
{
	char *buf = malloc(len * 3 + 1);
	size_t n = 0, i = 0;
	cJSON *item;

	if (!buf)
		return NULL;
	while (i < len) {
		size_t k = utf8_seq((const unsigned char *)s + i, len - i);

		if (k == 0) {
			memcpy(buf + n, "\xef\xbf\xbd", 3);
			n += 3;
			i++;
			continue;
		}
		memcpy(buf + n, s + i, k);
		n += k;
		i += k;
	}
	buf[n] = '\0';
	item = cJSON_CreateString(buf);
	free(buf);
	return item;
}

cJSON *kt_json_num_new_double(double v)
{
	char buf[40];

	if (!isfinite(v))
		return NULL;
	double_text(v, buf, sizeof(buf));
	return kt_json_num_new_text(buf);
}

const char *kt_json_type_name(const cJSON *item)
{
	if (cJSON_IsObject(item))
		return "an object";
	if (cJSON_IsArray(item))
		return "an array";
	if (cJSON_IsString(item))
		return "a string";
	if (kt_json_is_number(item))
		return "a number";
	if (cJSON_IsBool(item))
		return "a boolean";
	return "null";
}

cJSON *kt_json_dup(const cJSON *item)
{
	return item ? cJSON_Duplicate(item, true) : NULL;
}

int kt_json_set(cJSON *obj, const char *key, cJSON *item)
{
	if (!obj || !item) {
		cJSON_Delete(item);
		return -1;
	}
	if (cJSON_GetObjectItemCaseSensitive(obj, key))
		return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item) ? 0 : -1;
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

int kt_json_set_first(cJSON *obj, const char *key, cJSON *item)
{
	if (!cJSON_IsObject(obj) || !item || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	if (obj->child == item)
		return 0;
	cJSON_DetachItemViaPointer(obj, item);
	if (!cJSON_InsertItemInArray(obj, 0, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

int kt_json_append(cJSON *arr, cJSON *item)
{
	if (!arr || !item || !cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

cJSON *kt_json_get(const cJSON *obj, const char *key)
{
	if (!cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const char *kt_json_get_string(const cJSON *obj, const char *key)
{
	cJSON *v = kt_json_get(obj, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

cJSON *kt_json_get_object(const cJSON *obj, const char *key)
{
	cJSON *v = kt_json_get(obj, key);

	return cJSON_IsObject(v) ? v : NULL;
}

cJSON *kt_json_get_array(const cJSON *obj, const char *key)
{
	cJSON *v = kt_json_get(obj, key);

	return cJSON_IsArray(v) ? v : NULL;
}

cJSON *kt_json_path(const cJSON *obj, const char *dotted)
{
	char key[256];
	const char *p = dotted, *dot;
	const cJSON *cur = obj;

	while (cur && *p) {
		size_t n;

		dot = strchr(p, '.');
		n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		cur = kt_json_get(cur, key);
		p = dot ? dot + 1 : p + n;
	}
	return (cJSON *)cur;
}
