/* SPDX-License-Identifier: Apache-2.0 */
/* json_parse: one JSON text to a cJSON tree, numbers kept as text, errors with line:col */
#include <stdlib.h>
#include <string.h>

#include "json_int.h"

#define MAX_DEPTH 1000

struct parser {
	const char *s;
	size_t len, pos;
	long line, col;		/* of s[pos] */
	const char *name;
	struct kt_err *err;
	int depth;
};

static int fail(struct parser *p, const char *what)
{
	return kt_error_kind(p->err, KT_ERR_INPUT, "%s:%ld:%ld: %s", p->name, p->line, p->col,
			     what);
}

static void advance(struct parser *p, size_t n)
{
	while (n-- && p->pos < p->len) {
		if (p->s[p->pos] == '\n') {
			p->line++;
			p->col = 1;
		} else {
			p->col++;
		}
		p->pos++;
	}
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]))
		advance(p, 1);
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

	advance(p, 1);
	c = peek(p);
	m = c > 0 ? strchr(from, c) : NULL;
	if (m && c != 0) {
		out[(*o)++] = to[m - from];
		advance(p, 1);
		return 0;
	}
	if (c != 'u' || hex4(p, p->pos + 1, &cp) < 0)
		return fail(p, "invalid escape in string");
	advance(p, 5);
	if (cp >= 0xd800 && cp < 0xdc00 && p->pos + 6 <= p->len && p->s[p->pos] == '\\' &&
	    p->s[p->pos + 1] == 'u' && hex4(p, p->pos + 2, &lo) == 0 && lo >= 0xdc00 &&
	    lo < 0xe000) {
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		advance(p, 6);
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

	while (end < p->len && p->s[end] != '"')
		end += p->s[end] == '\\' ? 2 : 1;
	/* unescaped text never grows: the buffer is big enough */
	buf = malloc(end - start + 8);
	if (!buf)
		return fail(p, "out of memory");
	advance(p, 1);
	for (;;) {
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
		if (c == '\\') {
			if (parse_escape(p, buf, &o) < 0) {
				free(buf);
				return -1;
			}
			continue;
		}
		buf[o++] = (char)c;
		advance(p, 1);
	}
	advance(p, 1);
	buf[o] = '\0';
	*out = buf;
	return 0;
}

static cJSON *parse_string(struct parser *p)
{
	char *s;
	cJSON *item;

	if (parse_string_raw(p, &s) < 0)
		return NULL;
	item = cJSON_CreateString(s);
	free(s);
	if (!item)
		fail(p, "out of memory");
	return item;
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
	item = text ? kt_json_num_new_text(text) : NULL;
	free(text);
	if (!item) {
		fail(p, "out of memory");
		return NULL;
	}
	advance(p, i - p->pos);
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
			advance(p, n);
			if (lits[i].type == cJSON_True)
				return cJSON_CreateTrue();
			return lits[i].type == cJSON_False ? cJSON_CreateFalse() : cJSON_CreateNull();
		}
	}
	unexpected(p, "a value");
	return NULL;
}

static cJSON *parse_array(struct parser *p)
{
	cJSON *arr = cJSON_CreateArray(), *item;

	advance(p, 1);
	skip_ws(p);
	if (peek(p) == ']') {
		advance(p, 1);
		return arr;
	}
	for (;;) {
		skip_ws(p);
		item = parse_value(p);
		if (!item || kt_json_append(arr, item) < 0)
			goto fail;
		skip_ws(p);
		if (peek(p) == ']') {
			advance(p, 1);
			return arr;
		}
		if (peek(p) != ',') {
			unexpected(p, "',' or ']'");
			goto fail;
		}
		advance(p, 1);
	}
fail:
	cJSON_Delete(arr);
	return NULL;
}

static cJSON *parse_object(struct parser *p)
{
	cJSON *obj = cJSON_CreateObject(), *item;
	char *key = NULL;

	advance(p, 1);
	skip_ws(p);
	if (peek(p) == '}') {
		advance(p, 1);
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
		advance(p, 1);
		skip_ws(p);
		item = parse_value(p);
		if (!item)
			goto fail;
		/* duplicate keys: the last one wins, as Go's decoder does */
		if (kt_json_set(obj, key, item) < 0) {
			fail(p, "out of memory");
			goto fail;
		}
		free(key);
		key = NULL;
		skip_ws(p);
		if (peek(p) == '}') {
			advance(p, 1);
			return obj;
		}
		if (peek(p) != ',') {
			unexpected(p, "',' or '}'");
			goto fail;
		}
		advance(p, 1);
	}
fail:
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
