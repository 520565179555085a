/* SPDX-License-Identifier: Apache-2.0 */
/* reqline: kube-request --stream's lines, a request in and an answer out.  Pure. */
#ifndef KT_REQLINE_H
#define KT_REQLINE_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "core.h"
#include "kt_err.h"

/*
 * A request is one line of tab-separated fields:
 *
 *   ID <TAB> METHOD <TAB> PATH [<TAB> TYPE [<TAB> BODY]]
 *
 * ID      the caller's name for the request, given back with its answer: 1 to
 *         KT_REQLINE_ID_MAX printable ASCII bytes, no space
 * METHOD  GET, POST, PUT, PATCH, DELETE or HEAD (any case)
 * PATH    starts with '/': printable ASCII, no space
 * TYPE    '-' or empty: the default (application/json, a strategic merge patch
 *         for PATCH); strategic, merge or json (PATCH only); or a MIME type
 *         (with a '/', printable ASCII, no space)
 * BODY    '-' or empty: none; @FILE: the file (JSON or YAML), read when the
 *         request is sent; otherwise one JSON text, the rest of the line
 *
 * POST, PUT and PATCH need a body, GET and HEAD take none.  A line ends at
 * '\n' (a '\r' before it is dropped); it holds no NUL.
 *
 * An answer is one line of three tab-separated fields:
 *
 *   ID <TAB> CODE <TAB> TEXT
 *
 * CODE    the HTTP status of the last attempt's reply (200, 404, 409, 422...),
 *         0 when no reply came (the connection failed, retries included), or
 *         "invalid" for a line that is not a request (ID is then "-" when the
 *         line has none that is valid)
 * TEXT    for a 2xx the reply as compact JSON ("" when empty or not asked for),
 *         otherwise what failed, one line: no tab, no control character
 */

#define KT_REQLINE_ID_MAX 253

enum kt_reqline_body {
	KT_REQLINE_BODY_NONE,
	KT_REQLINE_BODY_FILE,	/* body names the file */
	KT_REQLINE_BODY_INLINE, /* json holds it */
};

/* a parsed line; the strings point into the line given, NUL-terminated there */
struct kt_reqline {
	const char *id;
	char method[8];
	const char *path;
	const char *content_type; /* NULL: the default */
	enum kt_reqline_body body_kind;
	const char *body; /* KT_REQLINE_BODY_FILE: the file */
	cJSON *json;	  /* KT_REQLINE_BODY_INLINE: the caller's (cJSON_Delete) */
};

/*
 * Parses line[0..len) (no newline), which it cuts in place (tabs become NULs:
 * line[len] must be writable).  0 and *r filled, or -1 with err (KT_ERR_INPUT,
 * "-:LINENO:COL: what is wrong", lineno being the line's number in the stream)
 * and *r zeroed but for id, which is the line's ID when that field is valid,
 * else "-".
 */
int kt_reqline_parse(char *line, size_t len, long lineno, struct kt_reqline *r, struct kt_err *err);

/* the Content-Type a TYPE field's patch name stands for; NULL when not one */
const char *kt_reqline_patch_type(const char *name);

/*
 * Appends one answer line, newline included: code is the HTTP status (0: no
 * reply) or -1 for "invalid"; text (may be NULL) is made one line of
 * printable text (tabs, line breaks and control characters replaced).
 */
void kt_reqline_answer(struct kt_sb *sb, const char *id, long code, const char *text);

#endif
