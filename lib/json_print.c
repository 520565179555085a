/* SPDX-License-Identifier: Apache-2.0 */
/* json_print: compact, pretty and sorted-key printers into memory, whole-document writes */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"
#include "json_go.h"

struct out {
	struct kt_sb sb;
	unsigned flags;
};

/* the buffer's terminating NUL is written once, at the end (kt_json_print) */
static inline void put(struct out *o, const char *s, size_t n)
{
	if (o->sb.len + n < o->sb.cap) {
		memcpy(o->sb.buf + o->sb.len, s, n);
		o->sb.len += n;
	} else {
		kt_sb_put(&o->sb, s, n);
	}
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* bytes a string cannot carry as they are: 1 in any output, 2 only in Go's
 * (<, >, & and the lead byte of U+2028 and U+2029) */
static const unsigned char esc_class[256] = {
	[0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1,
	[0x07] = 1, [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1,
	[0x0e] = 1, [0x0f] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1,
	[0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1,
	[0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, ['"'] = 1, ['\\'] = 1,
	['<'] = 2, ['>'] = 2, ['&'] = 2, [0xe2] = 2,
};

/*
 * Strings in Go mode are escaped as Go's encoder does (see
 * KT_JSON_GO_ESCAPE), so a patch compares byte for byte with upstream's;
 * other output escapes only what JSON needs, \b and \f short as well.
 */
static void put_string(struct out *o, const char *s)
{
	unsigned char stop = o->flags & KT_JSON_GO_ESCAPE ? 2 : 1;
	const unsigned char *p = (const unsigned char *)s, *run = p;
	char esc[8];

	put(o, "\"", 1);
	for (;; p++) {
		const char *rep = NULL;

		while (*p && (esc_class[*p] == 0 || esc_class[*p] > stop))
			p++;
		if (!*p)
			break;
		switch (*p) {
		case '"': rep = "\\\""; break;
		case '\\': rep = "\\\\"; break;
		case '\n': rep = "\\n"; break;
		case '\r': rep = "\\r"; break;
		case '\t': rep = "\\t"; break;
		case '\b': rep = "\\b"; break;
		case '\f': rep = "\\f"; break;
		default:
			if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') {
				snprintf(esc, sizeof(esc), "\\u%04x", *p);
				rep = esc;
			} else if (p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
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
		if (!kids) {
			o->sb.oom = true;
			return;
		}
	}
	put(o, "{", 1);
	/* in the object's own order the members are walked as they are linked */
	for (c = obj->child; kids ? i < n : c != NULL; i++) {
		const cJSON *m = kids ? kids[i] : c;

		if (i)
			put(o, ",", 1);
		if (pretty)
			indent(o, level + 1);
		put_string(o, m->string);
		if (pretty)
			put(o, ": ", 2);
		else
			put(o, ":", 1);
		put_value(o, m, level + 1);
		if (!kids)
			c = c->next;
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

	switch (v->type & 0xff) {
	/* only numbers are ever Raw here (see json.h) */
	case cJSON_Raw: puts_(o, v->valuestring ? v->valuestring : "null"); break;
	case cJSON_Number: puts_(o, kt_json_num_text(v, buf, sizeof(buf))); break;
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
	o.sb.buf[o.sb.len] = '\0';
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
