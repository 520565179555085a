/* SPDX-License-Identifier: Apache-2.0 */
/* tally: failures of many objects grouped by cause, to be reported once each */
#ifndef KT_TALLY_H
#define KT_TALLY_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A fleet tool that fails for 10,000 nodes for one reason (a bad token)
 * says so once with a count, not 10,000 times.  Each message names its
 * subject (a node); two messages share a cause when they are the same text
 * once the subject is masked where it stands as a name: after '/', '"' or
 * '\'' and not followed by a letter, digit, '-' or '.'.  Pure: no I/O.
 */
struct kt_tally_item {
	char *key;		/* msg with the subject masked */
	char *msg;
	size_t seq;		/* order of arrival */
};

struct kt_tally {
	struct kt_tally_item *items;
	size_t len, cap;
	bool oom;		/* an add failed: some messages were dropped */
};

/* notes msg (copied) about subject; -1 when out of memory (then oom is set) */
int kt_tally_add(struct kt_tally *t, const char *subject, const char *msg);

/* called once per cause: its first message and how many more share it */
typedef void kt_tally_fn(const char *msg, size_t more, void *arg);

/* reports each cause once, in the order each was first seen, then empties t */
void kt_tally_flush(struct kt_tally *t, kt_tally_fn *fn, void *arg);

/* frees what t holds; a zeroed struct is fine */
void kt_tally_release(struct kt_tally *t);

#endif
