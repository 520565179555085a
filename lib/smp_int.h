/* SPDX-License-Identifier: Apache-2.0 */
/* smp_int: Go value semantics the SMP engine needs; not for use outside smp */
#ifndef KT_SMP_INT_H
#define KT_SMP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "core.h"
#include "kt_err.h"
#include "json_go.h"

const char *kt_gk_type_name(enum kt_gk k); /* "map[string]interface {}" ... */
double kt_gk_float(const cJSON *v);


/* fmt's %v of a decoded value, appended */
void kt_go_fmt_v(struct kt_sb *sb, const cJSON *v);
/* Go's json.Marshal text of a float64 into buf (size >= 32) */
void kt_go_float_json(double f, char *buf, size_t size);

/*
 * Identity as Go's == on interface values sees it: a string that is equal
 * for two values exactly when == is true.  Appended to sb.
 */
void kt_go_ident(struct kt_sb *sb, const cJSON *v);

/* rewrites every number in the tree as Go's json.Marshal prints it */
int kt_go_normalize_numbers(cJSON *tree);

/*
 * Go's sort.SliceStable (insertion sort in blocks of 20, then symMerge), so
 * that comparators that are not strict orders come out as upstream's do.
 * less(i, j, ctx) compares the items now at positions i and j.
 */
void kt_go_stable_sort(void **items, size_t n, bool (*less)(void *a, void *b, void *ctx),
		       void *ctx);

#endif
