/* SPDX-License-Identifier: Apache-2.0 */
/* json_print: compact, pretty and sorted-key printers into memory, whole-document writes */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

struct out {
	char *buf;
	size_t len, cap;
	bool oom;
	unsigned flags;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		char *nb;

		while (o->len + n + 1 > cap)
			cap *= 2;
		nb = realloc(o->buf, cap);
		if (!nb) {
			o->oom = true;
			return;
		}
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/*
 * Strings are escaped as Go's encoder does for patches (<, >, & and the
 * line and paragraph separators as \u escapes), so sorted output compares
 * byte for byte with upstream's; other output escapes only what JSON needs.
 */
static void put_string(struct out *o, const char *s)
{
	bool go = o->flags & KT_JSON_SORTED;
	const unsigned char *p = (const unsigned char *)s, *run = p;
	char esc[8];

	put(o, "\"", 1);
	for (; *p; p++) {
		const char *rep = NULL;

		switch (*p) {
		case '"': rep = "\\\""; break;
		case '\\': rep = "\\\\"; break;
		case '\n': rep = "\\n"; break;
		case '\r': rep = "\\r"; break;
		case '\t': rep = "\\t"; break;
		default:
			if (*p < 0x20 || (go && (*p == '<' || *p == '>' || *p == '&'))) {
				snprintf(esc, sizeof(esc), "\\u%04x", *p);
				rep = esc;
			} else if (go && p[0] == 0xe2 && p[1] == 0x80 &&
				   (p[2] == 0xa8 || p[2] == 0xa9)) {
				put(o, (const char *)run, (size_t)(p - run));
				puts_(o, p[2] == 0xa8 ? "\\u2028" : "\\u2029");
				p += 2;
				run = p + 1;
				continue;
			}
		}
		if (rep) {
			put(o, (const char *)run, (size_t)(p - run));
			puts_(o, rep);
			run = p + 1;
		}
	}
	put(o, (const char *)run, (size_t)(p - run));
	put(o, "\"", 1);
}

static void indent(struct out *o, int level)
{
	put(o, "\n", 1);
	for (int i = 0; i < level; i++)
		put(o, "  ", 2);
}

static int key_cmp(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

	return strcmp(x->string, y->string);
}

static void put_value(struct out *o, const cJSON *v, int level);

static void put_members(struct out *o, const cJSON *obj, int level)
{
	const cJSON **kids = NULL, *c;
	size_t n = 0, i = 0;
	bool pretty = o->flags & KT_JSON_PRETTY;

	for (c = obj->child; c; c = c->next)
		n++;
	if (n == 0) {
		puts_(o, "{}");
		return;
	}
	kids = malloc(n * sizeof(*kids));
	if (!kids) {
		o->oom = true;
		return;
	}
	for (c = obj->child; c; c = c->next)
		kids[i++] = c;
	if (o->flags & KT_JSON_SORTED)
		qsort(kids, n, sizeof(*kids), key_cmp);
	put(o, "{", 1);
	for (i = 0; i < n; i++) {
		if (i)
			put(o, ",", 1);
		if (pretty)
			indent(o, level + 1);
		put_string(o, kids[i]->string);
		puts_(o, pretty ? ": " : ":");
		put_value(o, kids[i], level + 1);
	}
	if (pretty)
		indent(o, level);
	put(o, "}", 1);
	free(kids);
}

static void put_items(struct out *o, const cJSON *arr, int level)
{
	bool pretty = o->flags & KT_JSON_PRETTY;

	if (!arr->child) {
		puts_(o, "[]");
		return;
	}
	put(o, "[", 1);
	for (const cJSON *c = arr->child; c; c = c->next) {
		if (c != arr->child)
			put(o, ",", 1);
		if (pretty)
			indent(o, level + 1);
		put_value(o, c, level + 1);
	}
	if (pretty)
		indent(o, level);
	put(o, "]", 1);
}

static void put_value(struct out *o, const cJSON *v, int level)
{
	char buf[40];

	if (kt_json_is_number(v)) {
		puts_(o, kt_json_num_text(v, buf, sizeof(buf)));
		return;
	}
	switch (v->type & 0xff) {
	case cJSON_NULL: puts_(o, "null"); break;
	case cJSON_True: puts_(o, "true"); break;
	case cJSON_False: puts_(o, "false"); break;
	case cJSON_String: put_string(o, v->valuestring); break;
	case cJSON_Array: put_items(o, v, level); break;
	case cJSON_Object: put_members(o, v, level); break;
	default: puts_(o, "null"); break;
	}
}

char *kt_json_print(const cJSON *item, unsigned flags)
{
	struct out o = { .flags = flags };

	if (!item)
		puts_(&o, "null");
	else
		put_value(&o, item, 0);
	put(&o, "\n", 1);
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	return o.buf;
}

int kt_json_write(FILE *f, const cJSON *item, unsigned flags, struct kt_err *err)
{
	char *text = kt_json_print(item, flags);
	size_t len;

	if (!text)
		return kt_error(err, "out of memory printing a document");
	len = strlen(text);
	if (fwrite(text, 1, len, f) != len || fflush(f) != 0) {
		int e = errno;

		free(text);
		return kt_error(err, "write error: %s", strerror(e));
	}
	free(text);
	return 0;
}
