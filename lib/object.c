/* SPDX-License-Identifier: Apache-2.0 */
/* object: the type every API object carries (apiVersion, kind) and a list gives its items */
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "json.h"
#include "object.h"

const char *kt_object_item_kind(const char *list_kind, char *buf, size_t size)
{
	size_t n = list_kind ? strlen(list_kind) : 0;

	if (n > 4 && n < size && !strcmp(list_kind + n - 4, "List"))
		snprintf(buf, size, "%.*s", (int)(n - 4), list_kind);
	else if (size)
		buf[0] = '\0';
	return buf;
}

/* key first in obj, unless it is there or value is empty */
static int set_first(cJSON *obj, const char *key, const char *value)
{
	if (!value || !*value || kt_json_get(obj, key))
		return 0;
	return kt_json_set_first(obj, key, cJSON_CreateString(value));
}

int kt_object_set_type(cJSON *obj, const char *kind, const char *api_version)
{
	if (!cJSON_IsObject(obj))
		return 0;
	if (set_first(obj, "kind", kind) < 0 || set_first(obj, "apiVersion", api_version) < 0)
		return -1;
	return 0;
}

int kt_object_type_items(cJSON *list)
{
	const char *version = kt_json_get_string(list, "apiVersion");
	cJSON *items = kt_json_get_array(list, "items");
	char kind[256];

	kt_object_item_kind(kt_json_get_string(list, "kind"), kind, sizeof(kind));
	for (cJSON *it = items ? items->child : NULL; it; it = it->next)
		if (kt_object_set_type(it, kind, version) < 0)
			return -1;
	return 0;
}

static const char *reason_phrase(long status)
{
	const char *text = kt_http_reason(status);

	if (*text)
		return text;
	return status >= 500   ? "Server Error"
	       : status >= 400 ? "Client Error"
			       : "Unexpected Status";
}

int kt_object_status_error(struct kt_err *err, enum kt_err_kind kind, const char *what, long status,
			   const cJSON *body)
{
	const char *msg = NULL, *k = kt_json_get_string(body, "kind"),
		   *text = reason_phrase(status);
	char one[sizeof(err->msg)];

	if (k && !strcmp(k, "Status")) {
		msg = kt_json_get_string(body, "message");
		if (!msg || !*msg)
			msg = kt_json_get_string(body, "reason");
	}
	if (msg && *msg && strcmp(msg, text) != 0) {
		kt_plain_text(one, sizeof(one), msg);
		kt_error_kind(err, kind, "%s: %ld %s: %s", what, status, text, one);
	} else {
		kt_error_kind(err, kind, "%s: %ld %s", what, status, text);
	}
	err->http_status = status;
	return -1;
}
