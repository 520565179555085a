/* SPDX-License-Identifier: Apache-2.0 */
/* tally: failures of many objects grouped by cause, to be reported once each */
#include <stdlib.h>
#include <string.h>

#include "tally.h"

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

/* msg with each standalone subject replaced by a byte no message holds */
static char *mask(const char *subject, const char *msg)
{
	size_t n = strlen(subject), len = strlen(msg), o = 0;
	char *key = malloc(len + 1);

	if (!key)
		return NULL;
	for (size_t i = 0; i < len;) {
		bool starts = i > 0 && strchr("/\"'", msg[i - 1]);

		if (n && starts && strncmp(msg + i, subject, n) == 0 && !name_char(msg[i + n])) {
			key[o++] = '\001';
			i += n;
			continue;
		}
		key[o++] = msg[i++];
	}
	key[o] = '\0';
	return key;
}

int kt_tally_add(struct kt_tally *t, const char *subject, const char *msg)
{
	struct kt_tally_item it = { .seq = t->len };

	if (t->len == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct kt_tally_item *p = realloc(t->items, cap * sizeof(*p));

		if (!p)
			goto oom;
		t->items = p;
		t->cap = cap;
	}
	it.key = mask(subject, msg);
	it.msg = strdup(msg);
	if (!it.key || !it.msg) {
		free(it.key);
		free(it.msg);
		goto oom;
	}
	t->items[t->len++] = it;
	return 0;
oom:
	t->oom = true;
	return -1;
}

static int by_key(const void *a, const void *b)
{
	const struct kt_tally_item *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* a run of items with one key: the first of them and how many */
struct run {
	const struct kt_tally_item *first;
	size_t n;
};

static int by_seq(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	return (x->first->seq > y->first->seq) - (x->first->seq < y->first->seq);
}

void kt_tally_flush(struct kt_tally *t, kt_tally_fn *fn, void *arg)
{
	struct run *runs;
	size_t nruns = 0;

	if (!t->len)
		return;
	qsort(t->items, t->len, sizeof(*t->items), by_key);
	runs = malloc(t->len * sizeof(*runs));
	for (size_t i = 0; i < t->len; i++) {
		bool same = i && strcmp(t->items[i].key, t->items[i - 1].key) == 0;

		if (!runs)
			fn(t->items[i].msg, 0, arg);	/* out of memory: one by one */
		else if (same)
			runs[nruns - 1].n++;
		else
			runs[nruns++] = (struct run){ &t->items[i], 1 };
	}
	if (runs) {
		qsort(runs, nruns, sizeof(*runs), by_seq);
		for (size_t i = 0; i < nruns; i++)
			fn(runs[i].first->msg, runs[i].n - 1, arg);
	}
	free(runs);
	kt_tally_release(t);
}

void kt_tally_release(struct kt_tally *t)
{
	for (size_t i = 0; i < t->len; i++) {
		free(t->items[i].key);
		free(t->items[i].msg);
	}
	free(t->items);
	t->items = NULL;
	t->len = t->cap = 0;
	t->oom = false;
}
