/* SPDX-License-Identifier: Apache-2.0 */
/* smp: strategic merge patch (k8s.io/apimachinery strategicpatch) on cJSON trees */
#ifndef KT_SMP_H
#define KT_SMP_H

#include <stdbool.h>

#include <cJSON.h>

#include "kt_err.h"
#include "schema.h"

/*
 * Pure functions: no I/O, no clock.  Inputs are borrowed and never changed.
 * A NULL document counts as {}; a document that is not an object fails with
 * "invalid JSON document".  On success 0 and *patch / *out is the caller's
 * (cJSON_Delete).  On failure -1, *patch / *out is left NULL, and err is
 * filled: KT_ERR_INPUT for upstream's input errors (the message carries
 * upstream's phrase and the path of the offending field, such as
 * "spec.containers[name=web]: ..."), KT_ERR_CONFLICT for a three-way
 * conflict when overwrite is false, KT_ERR_FAIL when memory runs out.
 *
 * Numbers keep their text (see json.h): integers are int64 exact; a float in
 * the output is printed as Go's json.Marshal prints a float64.  Print a patch
 * with KT_JSON_SORTED so it compares byte for byte with upstream's.
 * A NULL schema means no metadata at all (every list replaces, maps merge,
 * as a JSON merge patch would).
 */

/* CreateTwoWayMergePatch: the patch that turns original into modified */
int kt_smp_diff(const cJSON *original, const cJSON *modified,
		const struct kt_schema *schema, cJSON **patch, struct kt_err *err);

/*
 * CreateThreeWayMergePatch: changes from current to modified, plus deletions
 * of what original had and modified dropped.  With overwrite false, a patch
 * that touches what changed from original to current is a conflict.
 */
int kt_smp_diff3(const cJSON *original, const cJSON *modified, const cJSON *current,
		 const struct kt_schema *schema, bool overwrite, cJSON **patch,
		 struct kt_err *err);

/*
 * The same; on a conflict (-1, KT_ERR_CONFLICT) with changed not NULL,
 * *patch and *changed hold both sides (the patch, and the diff from original
 * to current), caller's (cJSON_Delete).  With changed NULL it is kt_smp_diff3.
 */
int kt_smp_diff3_sides(const cJSON *original, const cJSON *modified, const cJSON *current,
		       const struct kt_schema *schema, bool overwrite, cJSON **patch,
		       cJSON **changed, struct kt_err *err);

/* StrategicMergePatch: doc with patch applied, directives honoured */
int kt_smp_apply(const cJSON *doc, const cJSON *patch, const struct kt_schema *schema,
		 cJSON **out, struct kt_err *err);

/*
 * The same without copying the inputs: takes doc and patch (either may be
 * NULL) and frees them, even on failure.  For callers done with both, as a
 * command applying one patch to a large object is.
 */
int kt_smp_apply_take(cJSON *doc, cJSON *patch, const struct kt_schema *schema,
		      cJSON **out, struct kt_err *err);

#endif
