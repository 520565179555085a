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

static bool blank_only(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n", s[i]))
			return false;
	return true;
}

/* a line of only "---" (or "...") ends a YAML document */
static bool yaml_separator(const char *s, size_t n)
{
	if (n < 3 || (strncmp(s, "---", 3) != 0 && strncmp(s, "...", 3) != 0))
		return false;
	return n == 3 || strchr(" \t\r#", s[3]);
}

static void drop_bytes(struct kt_docpush *p, size_t n)
{
	memmove(p->buf.buf, p->buf.buf + n, p->buf.len - n);
	p->buf.len -= n;
	p->buf.buf[p->buf.len] = '\0';
	p->scan = 0;
}

static int too_big(const struct kt_docpush *p, struct kt_err *err)
{
	return kt_error_kind(err, KT_ERR_INPUT, "%s: document larger than %zu bytes "
			     "(see --max-input)", p->name, p->max);
}

/* the first n bytes are one document: parsed, handed on, dropped */
static int parse_doc(struct kt_docpush *p, size_t n, kt_docpush_fn *fn, void *arg,
		     struct kt_err *err)
{
	cJSON *doc;

	if (blank_only(p->buf.buf, n)) {
		drop_bytes(p, n);
		return 0;
	}
	if (n > p->max)
		return too_big(p, err);
	doc = kt_json_parse(p->name, p->buf.buf, n, err);
	if (!doc)
		return -1;
	drop_bytes(p, n);
	fn(doc, arg);
	return 0;
}

/* JSON: a document ends where its brackets close, outside strings */
static int split_json(struct kt_docpush *p, bool eof, kt_docpush_fn *fn, void *arg,
		      struct kt_err *err)
{
	while (p->scan < p->buf.len) {
		char c = p->buf.buf[p->scan++];

		if (p->in_str) {
			if (p->esc)
				p->esc = false;
			else if (c == '\\')
				p->esc = true;
			else if (c == '"')
				p->in_str = false;
		} else if (c == '"') {
			p->in_str = true;
		} else if (c == '{' || c == '[') {
			p->depth++;
		} else if ((c == '}' || c == ']') && --p->depth <= 0) {
			p->depth = 0;
			if (parse_doc(p, p->scan, fn, arg, err) < 0)
				return -1;
		}
	}
	if (eof && p->buf.len && parse_doc(p, p->buf.len, fn, arg, err) < 0)
		return -1;
	return 0;
}

/* YAML: documents end at a "---" line, or at the end of the input */
static int split_yaml(struct kt_docpush *p, bool eof, kt_docpush_fn *fn, void *arg,
		      struct kt_err *err)
{
	size_t i = 0, eol;

	while (i < p->buf.len) {
		char *nl = memchr(p->buf.buf + i, '\n', p->buf.len - i);

		if (!nl)
			break;
		eol = (size_t)(nl - p->buf.buf);
		if (yaml_separator(p->buf.buf + i, eol - i)) {
			if (parse_doc(p, i, fn, arg, err) < 0)
				return -1;
			/* the marker itself goes: a document that starts with '-'
			 * would not be taken for YAML; what follows it stays */
			drop_bytes(p, 3);
			i = 0;
			continue;
		}
		i = eol + 1;
	}
	if (eof && p->buf.len && parse_doc(p, p->buf.len, fn, arg, err) < 0)
		return -1;
	return 0;
}

int kt_docpush_feed(struct kt_docpush *p, const char *data, size_t n, bool eof,
		    kt_docpush_fn *fn, void *arg, struct kt_err *err)
{
	kt_sb_put(&p->buf, data, n);
	if (p->buf.oom)
		return kt_error(err, "out of memory");
	if (!p->started) {
		size_t i = 0;

		while (i < p->buf.len && strchr(" \t\r\n", p->buf.buf[i]))
			i++;
		if (i == p->buf.len && !eof)
			return 0;
		p->started = true;
		p->yaml = i < p->buf.len && p->buf.buf[i] != '{' && p->buf.buf[i] != '[';
	}
	if (!p->buf.len)
		return 0;
	if ((p->yaml ? split_yaml(p, eof, fn, arg, err) : split_json(p, eof, fn, arg, err)) < 0)
		return -1;
	/* what is left is one unfinished document: it must not grow unbounded */
	return p->buf.len > p->max ? too_big(p, err) : 0;
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
