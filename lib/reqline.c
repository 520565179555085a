/* SPDX-License-Identifier: Apache-2.0 */
/* reqline: kube-request --stream's request and answer lines (reqline.h) */
#include "reqline.h"

#include <ctype.h>
#include <string.h>

#include "json.h"

static const char *const methods[] = { "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD" };

static const struct {
	const char *name, *type;
} patch_types[] = {
	{ "strategic", "application/strategic-merge-patch+json" },
	{ "merge", "application/merge-patch+json" },
	{ "json", "application/json-patch+json" },
};

const char *kt_reqline_patch_type(const char *name)
{
	for (size_t i = 0; i < sizeof(patch_types) / sizeof(patch_types[0]); i++)
		if (!strcmp(name, patch_types[i].name))
			return patch_types[i].type;
	return NULL;
}

/* printable ASCII without the space: what an ID, a path and a MIME type are made of */
static bool word(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static int bad(struct kt_err *err, struct kt_reqline *r, long lineno, size_t col, const char *what)
{
	const char *id = r->id;

	memset(r, 0, sizeof(*r));
	r->id = id ? id : "-";
	return kt_error_kind(err, KT_ERR_INPUT, "-:%ld:%zu: %s", lineno, col + 1, what);
}

int kt_reqline_parse(char *line, size_t len, long lineno, struct kt_reqline *r, struct kt_err *err)
{
	char *f[5] = { 0 };
	size_t at[5] = { 0 };
	size_t n = 0, i, start = 0;
	bool patch, needs, takes;
	char *body_text;

	memset(r, 0, sizeof(*r));
	if (memchr(line, '\0', len))
		return bad(err, r, lineno, (size_t)((char *)memchr(line, '\0', len) - line),
			   "a NUL byte in the line");
	line[len] = '\0';
	/* four tabs cut the first four fields; the body is the rest, tabs and all */
	for (i = 0; i <= len && n < 4; i++) {
		if (i == len || line[i] == '\t') {
			at[n] = start;
			f[n++] = line + start;
			start = i + 1;
			if (i < len)
				line[i] = '\0';
		}
	}
	if (n == 4 && start <= len) {
		at[4] = start;
		f[4] = line + start;
	}
	if (!word(f[0]) || strlen(f[0]) > KT_REQLINE_ID_MAX)
		return bad(err, r, lineno, 0,
			   "the ID is empty, longer than 253 bytes, or not printable ASCII "
			   "without spaces");
	r->id = f[0];
	if (n < 3)
		return bad(err, r, lineno, len,
			   "a request is ID, METHOD and PATH (then TYPE and BODY), "
			   "separated by tabs");
	for (i = 0; f[1][i] && i + 1 < sizeof(r->method); i++)
		r->method[i] = (char)toupper((unsigned char)f[1][i]);
	r->method[i] = '\0';
	if (f[1][i])
		r->method[0] = '\0';
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (!strcmp(r->method, methods[i]))
			break;
	if (i == sizeof(methods) / sizeof(methods[0]))
		return bad(err, r, lineno, at[1],
			   "unknown method (GET, POST, PUT, PATCH, DELETE or HEAD)");
	if (f[2][0] != '/' || !word(f[2]))
		return bad(err, r, lineno, at[2],
			   "the path must start with '/' and be printable ASCII without spaces");
	r->path = f[2];
	patch = !strcmp(r->method, "PATCH");
	if (f[3] && f[3][0] && strcmp(f[3], "-")) {
		r->content_type = kt_reqline_patch_type(f[3]);
		if (r->content_type && !patch)
			return bad(err, r, lineno, at[3], "a patch type is for PATCH only");
		if (!r->content_type) {
			if (!word(f[3]) || !strchr(f[3], '/'))
				return bad(err, r, lineno, at[3],
					   "the type is '-', strategic, merge, json or a "
					   "MIME type");
			r->content_type = f[3];
		}
	}
	needs = patch || !strcmp(r->method, "POST") || !strcmp(r->method, "PUT");
	takes = strcmp(r->method, "GET") && strcmp(r->method, "HEAD");
	body_text = f[4];
	if (!body_text || !body_text[0] || !strcmp(body_text, "-")) {
		if (needs)
			return bad(err, r, lineno, f[4] ? at[4] : len, "this method needs a body");
		return 0;
	}
	if (!takes)
		return bad(err, r, lineno, at[4], "this method takes no body");
	if (body_text[0] == '@') {
		if (!body_text[1])
			return bad(err, r, lineno, at[4], "'@' names no file");
		r->body_kind = KT_REQLINE_BODY_FILE;
		r->body = body_text + 1;
		return 0;
	}
	r->json = kt_json_parse_at("-", body_text, strlen(body_text), lineno, (long)at[4] + 1, err);
	if (!r->json) {
		const char *id = r->id;

		memset(r, 0, sizeof(*r));
		r->id = id;
		err->kind = KT_ERR_INPUT;
		return -1;
	}
	r->body_kind = KT_REQLINE_BODY_INLINE;
	return 0;
}

void kt_reqline_answer(struct kt_sb *sb, const char *id, long code, const char *text)
{
	const unsigned char *s = (const unsigned char *)(text ? text : "");

	kt_sb_puts(sb, id);
	if (code < 0)
		kt_sb_puts(sb, "\tinvalid\t");
	else
		kt_sb_printf(sb, "\t%ld\t", code);
	for (; *s; s++) {
		if (*s == '\t' || *s == '\n' || *s == '\r')
			kt_sb_put(sb, " ", 1);
		else if (*s < 0x20 || *s == 0x7f)
			kt_sb_put(sb, "?", 1);
		else if (*s == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
			kt_sb_put(sb, "?", 1);
			s++;
		} else
			kt_sb_put(sb, (const char *)s, 1);
	}
	kt_sb_put(sb, "\n", 1);
}
