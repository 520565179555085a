/* SPDX-License-Identifier: Apache-2.0 */
/* object: the type every API object carries (apiVersion, kind) and a list gives its items */
#ifndef KT_OBJECT_H
#define KT_OBJECT_H

#include <stddef.h>

#include <cJSON.h>

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

#endif
