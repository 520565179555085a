/* SPDX-License-Identifier: Apache-2.0 */
/* core: the string builder and the hash map every module shares (kept in smp_go.c) */
#ifndef KT_CORE_H
#define KT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
