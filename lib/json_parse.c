/* SPDX-License-Identifier: Apache-2.0 */
/* json_parse: one JSON text to a cJSON tree, numbers kept as text, errors with line:col */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json_int.h"

#define MAX_DEPTH 1000

/*
 * The parser walks by index and keeps no line or column: a message works its
 * place out from the text read so far, once, when something is wrong.
 */
struct parser {
	const char *s;
	size_t len, pos;
	long line, col;		/* of s[0] */
	const char *name;
	struct kt_err *err;
	int depth;
};

/* blanks between tokens; NUL counts as one, as it always has here */
static const bool blank[256] = { [' '] = true, ['\t'] = true, ['\r'] = true, ['\n'] = true,
				 ['\0'] = true };

/* bytes that end a plain run in a string: the quote, the backslash, controls */
static const bool str_stop[256] = {
	[0x00] = true, [0x01] = true, [0x02] = true, [0x03] = true, [0x04] = true,
	[0x05] = true, [0x06] = true, [0x07] = true, [0x08] = true, [0x09] = true,
	[0x0a] = true, [0x0b] = true, [0x0c] = true, [0x0d] = true, [0x0e] = true,
	[0x0f] = true, [0x10] = true, [0x11] = true, [0x12] = true, [0x13] = true,
	[0x14] = true, [0x15] = true, [0x16] = true, [0x17] = true, [0x18] = true,
	[0x19] = true, [0x1a] = true, [0x1b] = true, [0x1c] = true, [0x1d] = true,
	[0x1e] = true, [0x1f] = true, ['"'] = true, ['\\'] = true,
};

static int fail_at(struct parser *p, size_t at, const char *what)
{
	long line = p->line, col = p->col;
	const char *q = p->s, *end = p->s + at, *nl, *last = NULL;

	while ((nl = memchr(q, '\n', (size_t)(end - q)))) {
		line++;
		last = nl;
		q = nl + 1;
	}
	col = last ? (long)(end - last) : col + (long)at;
	return kt_error_kind(p->err, KT_ERR_INPUT, "%s:%ld:%ld: %s", p->name, line, col, what);
}

static int fail(struct parser *p, const char *what)
{
	return fail_at(p, p->pos, what);
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && blank[(unsigned char)p->s[p->pos]])
		p->pos++;
}

static int peek(struct parser *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int unexpected(struct parser *p, const char *expected)
{
	char msg[128];
	int c = peek(p);

	if (c < 0)
		snprintf(msg, sizeof(msg), "unexpected end of input, expected %s", expected);
	else if (c >= 0x20 && c < 0x7f)
		snprintf(msg, sizeof(msg), "unexpected '%c', expected %s", c, expected);
	else
		snprintf(msg, sizeof(msg), "unexpected byte 0x%02x, expected %s", c, expected);
	return fail(p, msg);
}

static cJSON *parse_value(struct parser *p);

static int hex4(struct parser *p, size_t at, unsigned *out)
{
	unsigned v = 0;

	if (at + 4 > p->len)
		return -1;
	for (size_t i = at; i < at + 4; i++) {
		char c = p->s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* an escape after the backslash at p->pos; appends to out, advances */
static int parse_escape(struct parser *p, char *out, size_t *o)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	unsigned cp, lo;
	int c;
	const char *m;

	p->pos++;
	c = peek(p);
	m = c > 0 ? strchr(from, c) : NULL;
	if (m) {
		out[(*o)++] = to[m - from];
		p->pos++;
		return 0;
	}
	if (c != 'u' || hex4(p, p->pos + 1, &cp) < 0)
		return fail(p, "invalid escape in string");
	/* Go keeps a NUL in a string; a C string ends at it, so it would be cut
	 * off silently: refused, with where */
	if (cp == 0)
		return fail(p, "\\u0000 in a string: a NUL cannot be kept");
	p->pos += 5;
	if (cp >= 0xd800 && cp < 0xdc00 && p->pos + 6 <= p->len && p->s[p->pos] == '\\' &&
	    p->s[p->pos + 1] == 'u' && hex4(p, p->pos + 2, &lo) == 0 && lo >= 0xdc00 &&
	    lo < 0xe000) {
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		p->pos += 6;
	} else if (cp >= 0xd800 && cp < 0xe000) {
		cp = 0xfffd;	/* a lone surrogate, as Go decodes it */
	}
	*o += put_utf8(out + *o, cp);
	return 0;
}

/* a string at p->pos (on the quote); *out is malloc'd */
static int parse_string_raw(struct parser *p, char **out)
{
	size_t o = 0, start = p->pos + 1, end = start;
	char *buf;

	/* the common case: no escape, copied in one piece */
	while (end < p->len && !str_stop[(unsigned char)p->s[end]])
		end++;
	if (end < p->len && p->s[end] == '"') {
		buf = malloc(end - start + 1);
		if (!buf)
			return fail(p, "out of memory");
		memcpy(buf, p->s + start, end - start);
		buf[end - start] = '\0';
		p->pos = end + 1;
		*out = buf;
		return 0;
	}
	while (end < p->len && p->s[end] != '"')
		end += p->s[end] == '\\' ? 2 : 1;
	/* unescaped text never grows: the buffer is big enough */
	buf = malloc(end - start + 8);
	if (!buf)
		return fail(p, "out of memory");
	p->pos++;
	for (;;) {
		size_t run = p->pos;

		while (run < p->len && !str_stop[(unsigned char)p->s[run]])
			run++;
		memcpy(buf + o, p->s + p->pos, run - p->pos);
		o += run - p->pos;
		p->pos = run;

		int c = peek(p);

		if (c < 0) {
			free(buf);
			return fail(p, "unterminated string");
		}
		if (c == '"')
			break;
		if (c < 0x20) {
			free(buf);
			return fail(p, "control character in string");
		}
		if (parse_escape(p, buf, &o) < 0) {
			free(buf);
			return -1;
		}
	}
	p->pos++;
	buf[o] = '\0';
	*out = buf;
	return 0;
}

/* an item of the given type that owns text, which is freed on failure */
static cJSON *item_take(struct parser *p, int type, char *text)
{
	cJSON *item = cJSON_CreateNull();

	if (!item) {
		free(text);
		fail(p, "out of memory");
		return NULL;
	}
	item->type = type;
	item->valuestring = text;	/* cJSON_Delete frees it */
	return item;
}

static cJSON *parse_string(struct parser *p)
{
	char *s;

	if (parse_string_raw(p, &s) < 0)
		return NULL;
	return item_take(p, cJSON_String, s);
}

static size_t digits(struct parser *p, size_t at)
{
	size_t n = 0;

	while (at + n < p->len && p->s[at + n] >= '0' && p->s[at + n] <= '9')
		n++;
	return n;
}

static cJSON *parse_number(struct parser *p)
{
	size_t i = p->pos, n;
	char *text;
	cJSON *item;

	if (p->s[i] == '-')
		i++;
	n = digits(p, i);
	if (n == 0 || (n > 1 && p->s[i] == '0')) {
		fail(p, "invalid number");
		return NULL;
	}
	i += n;
	if (i < p->len && p->s[i] == '.') {
		n = digits(p, i + 1);
		if (n == 0) {
			fail(p, "invalid number");
			return NULL;
		}
		i += n + 1;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		n = digits(p, i);
		if (n == 0) {
			fail(p, "invalid number");
			return NULL;
		}
		i += n;
	}
	text = strndup(p->s + p->pos, i - p->pos);
	if (!text) {
		fail(p, "out of memory");
		return NULL;
	}
	item = item_take(p, cJSON_Raw, text);
	if (!item)
		return NULL;
	kt_json_num_fill(item);
	p->pos = i;
	return item;
}

static cJSON *parse_literal(struct parser *p)
{
	static const struct {
		const char *word;
		int type;
	} lits[] = { { "true", cJSON_True }, { "false", cJSON_False }, { "null", cJSON_NULL } };

	for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		size_t n = strlen(lits[i].word);

		if (p->len - p->pos >= n && memcmp(p->s + p->pos, lits[i].word, n) == 0) {
			cJSON *v = cJSON_CreateNull();

			if (!v) {
				fail(p, "out of memory");
				return NULL;
			}
			v->type = lits[i].type;
			p->pos += n;
			return v;
		}
	}
	unexpected(p, "a value");
	return NULL;
}

static cJSON *parse_array(struct parser *p)
{
	cJSON *arr = cJSON_CreateArray(), *item;

	if (!arr) {
		fail(p, "out of memory");
		return NULL;
	}
	p->pos++;
	skip_ws(p);
	if (peek(p) == ']') {
		p->pos++;
		return arr;
	}
	for (;;) {
		skip_ws(p);
		item = parse_value(p);
		if (!item)
			goto fail;
		cJSON_AddItemToArray(arr, item);
		skip_ws(p);
		if (peek(p) == ']') {
			p->pos++;
			return arr;
		}
		if (peek(p) != ',') {
			unexpected(p, "',' or ']'");
			goto fail;
		}
		p->pos++;
	}
fail:
	cJSON_Delete(arr);
	return NULL;
}

/* members past which an object finds a repeated key through a hash map */
#define LINEAR_MEMBERS 16

/* dst takes src's value and src dst's, keys and places staying where they are */
static void swap_values(cJSON *dst, cJSON *src)
{
	cJSON t = *dst;

	dst->type = src->type;
	dst->valuestring = src->valuestring;
	dst->valueint = src->valueint;
	dst->valuedouble = src->valuedouble;
	dst->child = src->child;
	src->type = t.type;
	src->valuestring = t.valuestring;
	src->valueint = t.valueint;
	src->valuedouble = t.valuedouble;
	src->child = t.child;
}

/*
 * Sets key (taken) to item (taken) in obj, which has n members.  A repeated
 * key keeps its first place and takes the last value, as Go's decoder does:
 * the member in place takes the new value and the new item goes, with the
 * old value.  The first LINEAR_MEMBERS keys are compared in turn; past them
 * seen maps each key to its member (the member's own key string, which stays).
 * 1 when a member was added, 0 when one took the new value, -1 out of memory.
 */
static int set_member(cJSON *obj, size_t n, struct kt_hmap *seen, char *key, cJSON *item)
{
	cJSON *same = NULL;

	item->string = key;	/* cJSON_Delete frees it */
	if (n < LINEAR_MEMBERS) {
		for (cJSON *c = obj->child; c && !same; c = c->next)
			if (strcmp(c->string, key) == 0)
				same = c;
	} else {
		if (!seen->len)
			for (cJSON *c = obj->child; c; c = c->next)
				if (kt_hmap_put(seen, c->string, c) < 0)
					goto oom;
		same = kt_hmap_get(seen, key);
	}
	if (same) {
		swap_values(same, item);
		cJSON_Delete(item);
		return 0;
	}
	if (n >= LINEAR_MEMBERS && kt_hmap_put(seen, key, item) < 0)
		goto oom;
	cJSON_AddItemToArray(obj, item);
	return 1;
oom:
	cJSON_Delete(item);
	return -1;
}

static cJSON *parse_object(struct parser *p)
{
	cJSON *obj = cJSON_CreateObject(), *item;
	struct kt_hmap seen = { 0 };
	char *key = NULL;
	size_t n = 0;
	int rc;

	if (!obj) {
		fail(p, "out of memory");
		return NULL;
	}
	p->pos++;
	skip_ws(p);
	if (peek(p) == '}') {
		p->pos++;
		return obj;
	}
	for (;;) {
		skip_ws(p);
		if (peek(p) != '"') {
			unexpected(p, "a string key");
			goto fail;
		}
		if (parse_string_raw(p, &key) < 0)
			goto fail;
		skip_ws(p);
		if (peek(p) != ':') {
			unexpected(p, "':'");
			goto fail;
		}
		p->pos++;
		skip_ws(p);
		item = parse_value(p);
		if (!item)
			goto fail;
		rc = set_member(obj, n, &seen, key, item);
		key = NULL;
		if (rc < 0) {
			fail(p, "out of memory");
			goto fail;
		}
		n += (size_t)rc;
		skip_ws(p);
		if (peek(p) == '}') {
			p->pos++;
			kt_hmap_release(&seen);
			return obj;
		}
		if (peek(p) != ',') {
			unexpected(p, "',' or '}'");
			goto fail;
		}
		p->pos++;
	}
fail:
	kt_hmap_release(&seen);
	free(key);
	cJSON_Delete(obj);
	return NULL;
}

static cJSON *parse_value(struct parser *p)
{
	cJSON *v;
	int c = peek(p);

	if (++p->depth > MAX_DEPTH) {
		fail(p, "document nested deeper than 1000 levels");
		return NULL;
	}
	if (c == '{')
		v = parse_object(p);
	else if (c == '[')
		v = parse_array(p);
	else if (c == '"')
		v = parse_string(p);
	else if (c == '-' || (c >= '0' && c <= '9'))
		v = parse_number(p);
	else if (c == 't' || c == 'f' || c == 'n')
		v = parse_literal(p);
	else {
		unexpected(p, "a value");
		v = NULL;
	}
	p->depth--;
	return v;
}

cJSON *kt_json_parse_prefix(const char *name, const char *text, size_t len, long line,
			    long col, size_t *used, struct kt_err *err)
{
	struct parser p = { .s = text, .len = len, .line = line, .col = col, .name = name,
			    .err = err };
	cJSON *v;

	skip_ws(&p);
	v = parse_value(&p);
	if (v)
		*used = p.pos;
	return v;
}

cJSON *kt_json_parse_at(const char *name, const char *text, size_t len, long line, long col,
			struct kt_err *err)
{
	struct parser p = { .s = text, .len = len, .line = line, .col = col, .name = name,
			    .err = err };
	cJSON *v;

	skip_ws(&p);
	v = parse_value(&p);
	if (!v)
		return NULL;
	skip_ws(&p);
	if (p.pos < p.len) {
		unexpected(&p, "end of document");
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}
