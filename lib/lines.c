/* SPDX-License-Identifier: Apache-2.0 */
/* lines: a file descriptor read line by line on the loop */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lines.h"

#define CHUNK 65536

struct kt_lines {
	struct kt_loop *loop;
	int fd;
	size_t max;
	kt_lines_fn *fn;
	void *arg;
	char *buf;
	size_t len, cap;
	long lineno;
	size_t scanned;			/* bytes at the buffer's start known to hold no newline */
	bool watched, skipping, ended;
	struct kt_timer *timer;		/* a regular file: the next read */
};

/* hands over every whole line in the buffer (and the last one at the end) */
static void split(struct kt_lines *l, bool end)
{
	size_t start = 0, from = l->scanned;
	char *nl;

	/* from: a long line is searched for its newline once, not at every read */
	while (!l->ended && ((nl = memchr(l->buf + from, '\n', l->len - from)) ||
			     (end && start < l->len))) {
		size_t stop = nl ? (size_t)(nl - l->buf) : l->len;

		l->lineno++;
		if (!l->skipping && stop - start > l->max)
			l->fn(l->loop, KT_LINES_TOO_LONG, NULL, 0, l->lineno, l->arg);
		else if (!l->skipping)
			l->fn(l->loop, KT_LINES_LINE, l->buf + start, stop - start, l->lineno, l->arg);
		l->skipping = false;
		start = nl ? stop + 1 : l->len;
		from = start;
	}
	memmove(l->buf, l->buf + start, l->len - start);
	l->len -= start;
	l->scanned = l->len;
	/* an unfinished line already over the limit: say so once, skip to its end */
	if (l->len > l->max && !l->skipping) {
		l->fn(l->loop, KT_LINES_TOO_LONG, NULL, 0, l->lineno + 1, l->arg);
		l->skipping = true;
	}
	if (l->skipping)
		l->len = l->scanned = 0;
}

static void finish(struct kt_lines *l, enum kt_lines_event ev, const char *msg)
{
	if (l->watched)
		kt_loop_unwatch_fd(l->loop, l->fd);
	l->watched = false;
	l->ended = true;
	l->fn(l->loop, ev, msg, msg ? strlen(msg) : 0, l->lineno, l->arg);
}

static void on_read(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct kt_lines *l = arg;
	ssize_t n;
	char *b;

	(void)loop;
	(void)events;
	if (l->cap - l->len < CHUNK) {
		b = realloc(l->buf, l->cap * 2 + CHUNK);
		if (!b) {
			finish(l, KT_LINES_ERROR, "out of memory");
			return;
		}
		l->buf = b;
		l->cap = l->cap * 2 + CHUNK;
	}
	n = read(fd, l->buf + l->len, l->cap - l->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) {
		finish(l, KT_LINES_ERROR, strerror(errno));
		return;
	}
	l->len += (size_t)n;
	split(l, n == 0);
	if (n == 0 && !l->ended)
		finish(l, KT_LINES_END, NULL);
}

static void on_timer(struct kt_loop *loop, void *arg)
{
	struct kt_lines *l = arg;

	l->timer = NULL;
	on_read(loop, l->fd, KT_LOOP_READ, l);
	if (!l->ended) {
		l->timer = kt_timer_add(loop, 0, on_timer, l);
		if (!l->timer)
			finish(l, KT_LINES_ERROR, "out of memory");
	}
}

struct kt_lines *kt_lines_new(struct kt_loop *loop, int fd, size_t max, kt_lines_fn *fn,
			      void *arg, struct kt_err *err)
{
	struct kt_lines *l = calloc(1, sizeof(*l));

	if (!l) {
		kt_error(err, "out of memory");
		return NULL;
	}
	*l = (struct kt_lines){ .loop = loop, .fd = fd, .max = max, .fn = fn, .arg = arg };
	if (kt_loop_watch_fd(loop, fd, KT_LOOP_READ, on_read, l, NULL) == 0) {
		l->watched = true;
		return l;
	}
	l->timer = kt_timer_add(loop, 0, on_timer, l);
	if (!l->timer) {
		free(l);
		kt_error(err, "out of memory");
		return NULL;
	}
	return l;
}

void kt_lines_free(struct kt_lines *l)
{
	if (!l)
		return;
	if (l->watched)
		kt_loop_unwatch_fd(l->loop, l->fd);
	if (l->timer)
		kt_timer_cancel(l->loop, l->timer);
	free(l->buf);
	free(l);
}
