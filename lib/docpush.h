/* SPDX-License-Identifier: Apache-2.0 */
/* docpush: a stream of JSON or YAML documents split as bytes arrive */
#ifndef KT_DOCPUSH_H
#define KT_DOCPUSH_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "core.h"
#include "json.h"
#include "kt_err.h"

/*
 * The push side of json's stream reader (kt_json_reader is the pull side),
 * for a reader on the event loop that must never block: bytes go in as they
 * arrive, and each document comes out parsed as soon as it is complete.
 * The rules are json's, the same for both sides: the format is taken from
 * the first bytes that are not blank (kt_json_sniff), JSON texts end where
 * kt_json_scan_end says, YAML documents at a "---" or "..." line or at the
 * end.  Messages give the stream's line and column.  Each byte is looked at
 * a bounded number of times however the input is cut.
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
	struct kt_sb buf;	/* bytes read; those not yet documents start at pos */
	size_t pos;
	long line, col;		/* where buf[pos] is in the input */
	int fmt;		/* kt_json_sniff's answer: -1 not known yet */
	bool in_text;		/* a JSON text begins at pos */
	struct kt_json_scan js;
	struct kt_yaml_scan ys;
	/* bytes the splitter looked at or moved: what it costs, for tests */
	unsigned long long work;
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
