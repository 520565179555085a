/* SPDX-License-Identifier: Apache-2.0 */
/* json_print: compact, pretty and sorted-key printers into memory, whole-document writes */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"

struct out {
	struct kt_sb sb;
	unsigned flags;
};

static void put(struct out *o, const char *s, size_t n)
{
	kt_sb_put(&o->sb, s, n);
}

static void puts_(struct out *o, const char *s)
{
	kt_sb_puts(&o->sb, s);
}

/*
 * Strings in Go mode are escaped as Go's encoder does (see
 * KT_JSON_GO_ESCAPE), so a patch compares byte for byte with upstream's;
 * other output escapes only what JSON needs, \b and \f short as well.
 */
static void put_string(struct out *o, const char *s)
{
	bool go = o->flags & KT_JSON_GO_ESCAPE;
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
		case '\b': rep = "\\b"; break;
		case '\f': rep = "\\f"; break;
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

static void put_value(struct out *o, const cJSON *v, int level);

static void put_members(struct out *o, const cJSON *obj, int level)
{
	const cJSON **kids = NULL, *c;
	size_t n = 0, i = 0;
	bool pretty = o->flags & KT_JSON_PRETTY;

	if (!obj->child) {
		puts_(o, "{}");
		return;
	}
	if (o->flags & KT_JSON_SORT_KEYS) {
		kids = kt_sorted_members(obj, &n);
	} else {
		for (c = obj->child; c; c = c->next)
			n++;
		kids = malloc(n * sizeof(*kids));
		for (c = obj->child; kids && c; c = c->next)
			kids[i++] = c;
	}
	if (!kids) {
		o->sb.oom = true;
		return;
	}
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
	if (!(flags & KT_JSON_NO_NEWLINE))
		put(&o, "\n", 1);
	if (o.sb.oom) {
		kt_sb_release(&o.sb);
		return NULL;
	}
	return o.sb.buf;
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
