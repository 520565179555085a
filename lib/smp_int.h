/* SPDX-License-Identifier: Apache-2.0 */
/* smp_int: Go value semantics the SMP engine needs; not for use outside smp */
#ifndef KT_SMP_INT_H
#define KT_SMP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "err.h"

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

enum kt_gk kt_gk_of(const cJSON *v);	   /* NULL pointer counts as null */
const char *kt_gk_type_name(enum kt_gk k); /* "map[string]interface {}" ... */
double kt_gk_float(const cJSON *v);

/* reflect.DeepEqual on decoded JSON (int64 never equals float64) */
bool kt_go_equal(const cJSON *a, const cJSON *b);

/* a growable string; all functions keep it terminated, oom is sticky */
struct kt_sb {
	char *buf;
	size_t len, cap;
	bool oom;
};
void kt_sb_put(struct kt_sb *sb, const char *s, size_t n);
void kt_sb_puts(struct kt_sb *sb, const char *s);
void kt_sb_printf(struct kt_sb *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void kt_sb_trunc(struct kt_sb *sb, size_t len);
const char *kt_sb_str(const struct kt_sb *sb); /* "" when empty */
void kt_sb_release(struct kt_sb *sb);

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

/* string -> pointer hash; keys are borrowed and must outlive the map */
struct kt_hmap {
	size_t cap, len;
	bool own_keys; /* set before the first put: keys are copied and freed */
	struct kt_hent {
		const char *key;
		uint64_t hash;
		void *val;
	} *e;
};
int kt_hmap_put(struct kt_hmap *m, const char *key, void *val);	    /* replaces */
int kt_hmap_put_new(struct kt_hmap *m, const char *key, void *val); /* keeps first */
void *kt_hmap_get(const struct kt_hmap *m, const char *key);
bool kt_hmap_has(const struct kt_hmap *m, const char *key);
void kt_hmap_release(struct kt_hmap *m);

/*
 * Go's sort.SliceStable (insertion sort in blocks of 20, then symMerge), so
 * that comparators that are not strict orders come out as upstream's do.
 * less(i, j, ctx) compares the items now at positions i and j.
 */
void kt_go_stable_sort(void **items, size_t n, bool (*less)(void *a, void *b, void *ctx),
		       void *ctx);

#endif
