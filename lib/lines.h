/* SPDX-License-Identifier: Apache-2.0 */
/* lines: a file descriptor read line by line on the loop (a protocol on standard input) */
#ifndef KT_LINES_H
#define KT_LINES_H

#include <stddef.h>

#include "kt_err.h"
#include "loop.h"

enum kt_lines_event {
	KT_LINES_LINE,		/* line holds one line, without its newline */
	KT_LINES_TOO_LONG,	/* a line over the limit was skipped; line is NULL */
	KT_LINES_END,		/* end of input (a last line without newline came first) */
	KT_LINES_ERROR,		/* a read error; line is the message */
};

/* line is borrowed for the call; lineno counts from 1 */
typedef void kt_lines_fn(struct kt_loop *loop, enum kt_lines_event ev, const char *line,
			 size_t len, long lineno, void *arg);

struct kt_lines;

/*
 * Reads fd (borrowed, left open) on loop and calls fn for each line, then
 * once with KT_LINES_END or KT_LINES_ERROR, after which nothing is read.  A
 * regular file, which epoll cannot watch, is read from timers instead.  max
 * bounds a line.  Caller owns; kt_lines_free stops reading.  NULL with err
 * on allocation failure.
 */
struct kt_lines *kt_lines_new(struct kt_loop *loop, int fd, size_t max, kt_lines_fn *fn,
			      void *arg, struct kt_err *err);
void kt_lines_free(struct kt_lines *l);

#endif
