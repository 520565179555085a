/* SPDX-License-Identifier: Apache-2.0 */
/* docpush: a stream of JSON or YAML documents split as bytes arrive */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docpush.h"
#include "json.h"
#include "loop.h"

struct watch {
	struct kt_docpush *p;
	kt_docpush_fn *fn;
	kt_docpush_end_fn *end;
	void *arg;
};

void kt_docpush_init(struct kt_docpush *p, const char *name, size_t max)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->max = max;
	p->fd = -1;
	p->fd_flags = -1;
	p->line = 1;
	p->col = 1;
	p->fmt = -1;
}

static void stop_watching(struct kt_docpush *p)
{
	if (p->watching)
		kt_loop_unwatch_fd(p->loop, p->fd);
	p->watching = false;
}

void kt_docpush_release(struct kt_docpush *p)
{
	stop_watching(p);
	if (p->fd_flags >= 0)
		fcntl(p->fd, F_SETFL, p->fd_flags);
	p->fd_flags = -1;
	free(p->watch);
	p->watch = NULL;
	kt_sb_release(&p->buf);
}

static const char *pending(const struct kt_docpush *p)
{
	return p->buf.buf + p->pos;
}

/* the next n bytes are done with */
static void advance(struct kt_docpush *p, size_t n)
{
	kt_json_pos_advance(&p->line, &p->col, pending(p), n);
	p->pos += n;
	p->work += n;
}

static void skip_blank(struct kt_docpush *p)
{
	size_t n = 0;

	while (p->pos + n < p->buf.len && memchr(" \t\r\n", pending(p)[n], 4))
		n++;
	advance(p, n);
}

static int too_big(const struct kt_docpush *p, struct kt_err *err)
{
	return kt_error_kind(err, KT_ERR_INPUT,
			     "%s:%ld:%ld: document larger than %zu bytes (see --max-input)",
			     p->name, p->line, p->col, p->max);
}

/* JSON: each text ends where kt_json_scan_end says, or at the end */
static int split_json(struct kt_docpush *p, bool eof, kt_docpush_fn *fn, void *arg,
		      struct kt_err *err)
{
	for (;;) {
		size_t end, before;
		cJSON *doc;
		int found;

		if (!p->in_text) {
			skip_blank(p);
			if (p->pos == p->buf.len)
				return 0;
			p->in_text = true;
			p->js = (struct kt_json_scan){ 0 };
		}
		before = p->js.n;
		found = kt_json_scan_end(&p->js, pending(p), p->buf.len - p->pos, &end);
		p->work += p->js.n - before;
		if (!found && !eof)
			return 0;
		if (!found)
			end = p->buf.len - p->pos;	/* the parser says what is missing */
		if (end > p->max)
			return too_big(p, err);
		doc = kt_json_parse_at(p->name, pending(p), end, p->line, p->col, err);
		if (!doc)
			return -1;
		advance(p, end);
		p->in_text = false;
		fn(doc, arg);
	}
}

/* YAML: documents end at a marker line, or at the end */
static int split_yaml(struct kt_docpush *p, bool eof, kt_docpush_fn *fn, void *arg,
		      struct kt_err *err)
{
	for (;;) {
		size_t end, before = p->ys.n;
		int found = kt_yaml_scan_end(&p->ys, pending(p), p->buf.len - p->pos, eof, &end);
		cJSON *doc;
		int rc;

		p->work += p->ys.n - before;
		if (!found && !eof)
			return 0;
		if (!found)
			end = p->buf.len - p->pos;
		if (end > p->max)
			return too_big(p, err);
		rc = kt_yaml_parse_at(p->name, pending(p), end, p->line, p->col, p->max, &doc,
				      err);
		if (rc < 0)
			return -1;
		advance(p, end);
		p->ys = (struct kt_yaml_scan){ 0 };
		if (rc > 0)
			fn(doc, arg);
		if (!found)
			return 0;
		/* the marker goes; what follows it on its line starts the next one */
		advance(p, kt_yaml_marker(pending(p), p->buf.len - p->pos));
	}
}

int kt_docpush_feed(struct kt_docpush *p, const char *data, size_t n, bool eof,
		    kt_docpush_fn *fn, void *arg, struct kt_err *err)
{
	size_t left = p->buf.len - p->pos;

	/* what is done with goes once it is half the buffer: each byte moves
	 * a bounded number of times */
	if (p->pos > 0 && p->pos * 2 >= p->buf.len) {
		memmove(p->buf.buf, pending(p), left);
		kt_sb_trunc(&p->buf, left);
		p->work += left;
		p->pos = 0;
	}
	kt_sb_put(&p->buf, data, n);
	if (p->buf.oom)
		return kt_error(err, "out of memory");
	if (p->fmt < 0) {
		skip_blank(p);
		if (p->pos == p->buf.len)
			return 0;
		p->fmt = kt_json_sniff(pending(p), p->buf.len - p->pos, eof);
		if (p->fmt < 0)
			return 0;
	}
	if ((p->fmt ? split_json(p, eof, fn, arg, err) : split_yaml(p, eof, fn, arg, err)) < 0)
		return -1;
	/* what is left is one unfinished document: it must not grow unbounded */
	return p->buf.len - p->pos > p->max ? too_big(p, err) : 0;
}

static void on_readable(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct watch *w = arg;
	struct kt_docpush *p = w->p;
	char chunk[65536];
	ssize_t n;

	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0)
			kt_error(&p->err, "cannot read '%s': %s", p->name, strerror(errno));
		else if (kt_docpush_feed(p, chunk, (size_t)n, n == 0, w->fn, w->arg, &p->err) == 0 &&
			 n > 0)
			continue;
		stop_watching(p);
		w->end(p->err.msg[0] ? &p->err : NULL, w->arg);
		return;
	}
}

int kt_docpush_watch(struct kt_docpush *p, struct kt_loop *loop, int fd, kt_docpush_fn *fn,
		     kt_docpush_end_fn *end, void *arg, struct kt_err *err)
{
	struct stat sb;

	p->watch = malloc(sizeof(struct watch));
	if (!p->watch)
		return kt_error(err, "out of memory");
	*p->watch = (struct watch){ p, fn, end, arg };
	p->loop = loop;
	p->fd = fd;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		on_readable(loop, fd, KT_LOOP_READ, p->watch);
		return 0;
	}
	if (kt_loop_watch_fd(loop, fd, KT_LOOP_READ, on_readable, p->watch, err) < 0)
		return -1;
	p->watching = true;
	/* the descriptor may be shared (a terminal): its flags go back */
	p->fd_flags = fcntl(fd, F_GETFL);
	if (p->fd_flags >= 0)
		fcntl(fd, F_SETFL, p->fd_flags | O_NONBLOCK);
	return 0;
}
