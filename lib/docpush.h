/* SPDX-License-Identifier: Apache-2.0 */
/* docpush: a stream of JSON or YAML documents split as bytes arrive */
#ifndef KT_DOCPUSH_H
#define KT_DOCPUSH_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "core.h"
#include "kt_err.h"

/*
 * The push side of reading a stream, for a reader on the event loop that
 * must never block: bytes go in as they arrive, and each document comes
 * out parsed as soon as it is complete.  The format is taken from the first
 * byte that is not blank: '{' or '[' is JSON (documents end where their
 * brackets close, outside strings), anything else YAML (documents end at a
 * "---" or "..." line, or at the end).
 *
 * kt_json_reader (json.h) is the pull side for blocking reads; both should
 * become one reader (see HACKING).
 */
struct kt_loop;

struct kt_docpush {
	const char *name;	/* for messages ("<stdin>", a file); borrowed */
	size_t max;		/* the largest document, in bytes */
	/* kt_docpush_watch's */
	struct kt_loop *loop;
	int fd;
	int fd_flags;		/* as found, restored by release (-1: untouched) */
	bool watching;
	struct watch *watch;
	struct kt_err err;	/* why reading stopped early */
	struct kt_sb buf;	/* bytes read and not yet made documents */
	size_t scan;		/* JSON splitter state over buf */
	int depth;
	bool in_str, esc, started, yaml;
};

/* one complete document, taken by the callback (cJSON_Delete) */
typedef void kt_docpush_fn(cJSON *doc, void *arg);
/* reading ended: at the end of the input (err NULL) or on an error */
typedef void kt_docpush_end_fn(const struct kt_err *err, void *arg);

void kt_docpush_init(struct kt_docpush *p, const char *name, size_t max);
/* frees the buffer, stops watching, gives fd its flags back (not closed) */
void kt_docpush_release(struct kt_docpush *p);

/*
 * Feeds n bytes of data (eof: the input has ended; data may then be
 * empty).  Each document completed goes to fn.  -1 with err (KT_ERR_INPUT
 * for a syntax error, with name:line:col, or a document over max; else out
 * of memory): the stream cannot go on.
 */
int kt_docpush_feed(struct kt_docpush *p, const char *data, size_t n, bool eof,
		    kt_docpush_fn *fn, void *arg, struct kt_err *err);

/*
 * Reads fd (borrowed) on loop without ever blocking and feeds what comes:
 * a regular file (which epoll refuses, and which never blocks) is read
 * whole at once; anything else is watched, set non-blocking until release.
 * end runs once, when the input ends or reading fails.  -1 with err when
 * fd cannot be watched.
 */
int kt_docpush_watch(struct kt_docpush *p, struct kt_loop *loop, int fd, kt_docpush_fn *fn,
		     kt_docpush_end_fn *end, void *arg, struct kt_err *err);

#endif
