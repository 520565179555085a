/* SPDX-License-Identifier: Apache-2.0 */
/* core: the small utilities every module shares, each written once */
#ifndef KT_CORE_H
#define KT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kt_err.h"

/*
 * A helper two modules need lives here, never in a module's _int.h.  Every
 * function is pure (no I/O, no clock); memory rules are given with each.
 */

/* ------------------------------------------------------------ string builder */

/* a growable string: zero it to start; kept NUL-terminated; oom is sticky */
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
const char *kt_sb_str(const struct kt_sb *sb);	/* "" when empty; borrowed */
void kt_sb_release(struct kt_sb *sb);		/* frees buf, zeroes sb */

/* ------------------------------------------------------------------ hash map */

/* string -> pointer, open addressing; zero it to start.  Keys are borrowed and
 * must outlive the map, unless own_keys is set before the first put */
struct kt_hmap {
	size_t cap, len;
	bool own_keys;
	struct kt_hent {
		const char *key;
		uint64_t hash;
		void *val;
	} *e;
};
int kt_hmap_put(struct kt_hmap *m, const char *key, void *val);	    /* replaces */
int kt_hmap_put_first(struct kt_hmap *m, const char *key, void *val); /* keeps first */
void *kt_hmap_get(const struct kt_hmap *m, const char *key);
bool kt_hmap_has(const struct kt_hmap *m, const char *key);
void kt_hmap_release(struct kt_hmap *m);

/* ------------------------------------------------------------------ key sort */

/* the one key order: bytewise, as Go sorts map keys */
int kt_key_cmp(const char *a, const char *b);
/* kt_key_cmp for qsort and bsearch over an array of char * */
int kt_key_cmp_ptr(const void *a, const void *b);

/* ---------------------------------------------------------------------- HTTP */

/* the reason phrase of an HTTP status ("Conflict"), "" when unknown */
const char *kt_http_reason(long status);

/*
 * The one rule for whether a reply is worth another try: no reply at all
 * (status 0), 429, 500, 502, 503 or 504, or another 5xx that says when to
 * come back (retry_after: a Retry-After header or details.retryAfterSeconds).
 * Whether the request may be repeated is the caller's question.
 */
bool kt_http_retryable(long status, bool retry_after);

/*
 * The one backoff, client-go's wait.Backoff with the clock passed in: the
 * first wait is first_ms, each next one factor times the last, never more
 * than cap_ms, plus up to jitter times itself at random (0: none).  Set the
 * policy fields, zero the rest.  steps > 0 allows that many waits, then
 * kt_backoff_next says -1 (give up); after reset_ms (> 0) without a wait the
 * next one is first_ms again.  wait_ms, the last wait taken before jitter (0
 * before any), is the state a caller may save, restore, or stretch to a
 * longer wait the server asked for.
 */
struct kt_backoff {
	int64_t first_ms, cap_ms, reset_ms;
	double factor, jitter;
	int steps;
	unsigned seed;		/* rand_r's state, for the jitter */
	int64_t wait_ms, at_ms;
	int taken;
};

/* the wait kt_backoff_next would take at now_ms, before jitter; nothing changes */
int64_t kt_backoff_peek(const struct kt_backoff *b, int64_t now_ms);
/* takes the next wait at now_ms: the wait with its jitter, -1 after steps waits */
int64_t kt_backoff_next(struct kt_backoff *b, int64_t now_ms);
/* after a success: the next wait is first_ms again, steps counted anew */
void kt_backoff_reset(struct kt_backoff *b);

/* ------------------------------------------------------------------- base64 */

/* base64 of n bytes, standard alphabet, padded; malloc'd, NUL-terminated; NULL
 * when out of memory */
char *kt_base64_encode(const char *in, size_t n);
/* the bytes of base64 text in[0..n) (either alphabet, whitespace skipped,
 * padding optional); malloc'd with a NUL after the *outlen bytes; NULL when it
 * is not base64 or out of memory */
char *kt_base64_decode(const char *in, size_t n, size_t *outlen);

/* --------------------------------------------------------------------- names */

#define KT_NAME_MAX 253

/*
 * The node name rule: 0 when name is a DNS-1123 subdomain (what a Node's name
 * must be: at most 253 of a-z 0-9 '-' '.', each dot-separated part starting
 * and ending with a letter or digit), else -1 with err (kind KT_ERR_INPUT)
 * saying why, the name quoted as a node name.  kt-agent's is_dns_subdomain
 * (agent/lib.sh) is the same rule in sh.
 */
int kt_node_name_check(const char *name, struct kt_err *err);

#endif
