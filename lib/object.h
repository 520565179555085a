/* SPDX-License-Identifier: Apache-2.0 */
/* object: the type every API object carries (apiVersion, kind) and a list gives its items */
#ifndef KT_OBJECT_H
#define KT_OBJECT_H

#include <stddef.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * The kind of the items of a list of kind list_kind: the kind without its
 * "List" (PodList -> Pod), in buf; "" when list_kind is NULL, names no list,
 * or does not fit.  Returns buf.
 */
const char *kt_object_item_kind(const char *list_kind, char *buf, size_t size);

/*
 * Gives obj (an object) kind and apiVersion, first as the API writes them,
 * where it has none; a NULL or "" value is not set.  -1 when out of memory.
 */
int kt_object_set_type(cJSON *obj, const char *kind, const char *api_version);

/*
 * Types every object in list's items as kt_object_set_type, from list's
 * kind (kt_object_item_kind) and apiVersion: what the API's clients do
 * before they hand a list's items on.  -1 when out of memory.
 */
int kt_object_type_items(cJSON *list);

/*
 * The one line for a reply outside 2xx, in every tool: what (the request,
 * "GET /api/v1/nodes/x", or the object a step acts on, "lease/x
 * (kube-node-lease)"), the status and its reason phrase ("Server Error" or
 * "Client Error" for a code without one), then the server's Status message
 * (its reason when it has none), left out when it only repeats the phrase,
 * control characters replaced:
 * "GET /api/v1/nodes/x: 404 Not Found: nodes "x" not found".  Fills err
 * with kind and http_status; returns -1.
 */
int kt_object_status_error(struct kt_err *err, enum kt_err_kind kind, const char *what, long status,
			   const cJSON *body);

#endif
