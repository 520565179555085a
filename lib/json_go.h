/* SPDX-License-Identifier: Apache-2.0 */
/* json_go: Go's view of decoded JSON values, and the key sorts of cJSON objects */
#ifndef KT_JSON_GO_H
#define KT_JSON_GO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

/*
 * Part of the json module: these are rules about JSON values, so they live
 * beside the reader and the printer, not in core (which knows no cJSON type).
 * Every function is pure; memory rules are given with each.
 */

/* ------------------------------------------------------- Go's view of values */

/* the Go dynamic type a decoded JSON value has upstream */
enum kt_gk {
	KT_GK_NULL,
	KT_GK_BOOL,
	KT_GK_INT,   /* int64: integer text that fits */
	KT_GK_FLOAT, /* float64: everything else */
	KT_GK_STRING,
	KT_GK_MAP,
	KT_GK_SLICE,
};

/* the kind of v; a NULL pointer counts as null */
enum kt_gk kt_gk_of(const cJSON *v);

/*
 * The one integer-text check: true when v is a number written as an integer
 * (no '.', 'e' or 'E') that fits int64, as Go's decoder into interface{}
 * with UseNumber then Int64 would take it; *out (may be NULL) gets it.
 */
bool kt_go_int64(const cJSON *v, int64_t *out);

/*
 * The one deep-equal: reflect.DeepEqual on values as Go decodes them.  Key
 * order does not count, int64 never equals float64 (1 and 1.0 differ), two
 * floats compare by value (1.0 and 1e0 are equal).  Null semantics: a NULL
 * pointer is a JSON null, as a missing map key reads as nil in Go, so
 * kt_go_equal(NULL, null) is true.
 */
bool kt_go_equal(const cJSON *a, const cJSON *b);

/* -------------------------------------------------------- key order (cJSON) */

/* obj's members sorted by key (*n, may be NULL, gets how many); caller frees
 * the array (not the members); NULL when out of memory */
const cJSON **kt_sorted_members(const cJSON *obj, size_t *n);

/* relinks obj's members in key order, one level; false when out of memory */
bool kt_sort_members(cJSON *obj);

/* sorts the keys of every object in item, recursively */
void kt_sort_keys(cJSON *item);

#endif
