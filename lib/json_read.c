/* SPDX-License-Identifier: Apache-2.0 */
/* json_read: documents and streams from a file or memory, JSON or YAML, with a size cap */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "json_int.h"

enum fmt { FMT_UNKNOWN, FMT_JSON, FMT_YAML };

struct kt_json_reader {
	int fd;			/* -1 for memory input */
	bool own_fd;
	bool regular;		/* a regular file: its end is known to come */
	bool eof;
	char *name;
	char *buf;
	size_t len, cap, pos;	/* unread input is buf[pos, len) */
	long line, col;		/* position of buf[pos] */
	size_t max;
	unsigned flags;
	enum fmt fmt;
	int ndocs;
	long doc_line;		/* where the last JSON document began, 0 for YAML */
	yaml_parser_t yp;
	bool yp_init;
};

static int reader_fill(struct kt_json_reader *r, struct kt_err *err)
{
	ssize_t n;

	if (r->eof)
		return 0;
	if (r->pos > 0 && r->pos * 2 >= r->len) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	if (r->cap - r->len < 65536) {
		size_t cap = r->cap ? r->cap * 2 : 131072;
		char *nb = realloc(r->buf, cap + 1);

		if (!nb)
			return kt_error(err, "%s: out of memory", r->name);
		r->buf = nb;
		r->cap = cap;
	}
	do
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return kt_error_file(err, KT_ERR_FAIL, "cannot read '%s': %s", r->name,
				     strerror(errno));
	if (n == 0)
		r->eof = true;
	r->len += (size_t)n;
	return (int)n;
}

static struct kt_json_reader *reader_new(const char *name, size_t max, unsigned flags)
{
	struct kt_json_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->name = strdup(name);
	if (!r->name) {
		free(r);
		return NULL;
	}
	r->fd = -1;
	r->line = 1;
	r->col = 1;
	r->max = max ? max : KT_JSON_MAX_INPUT_DEFAULT;
	r->flags = flags;
	return r;
}

struct kt_json_reader *kt_json_reader_open(const char *path, size_t max_input, unsigned flags,
					   struct kt_err *err)
{
	bool is_stdin = !path || strcmp(path, "-") == 0;
	struct kt_json_reader *r = reader_new(is_stdin ? "<stdin>" : path, max_input, flags);
	struct stat st;

	if (!r) {
		kt_error(err, "out of memory");
		return NULL;
	}
	if (is_stdin) {
		r->fd = STDIN_FILENO;
		r->regular = fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode);
		return r;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		kt_error_file(err, KT_ERR_INPUT, "cannot open '%s': %s", path, strerror(errno));
		kt_json_reader_close(r);
		return NULL;
	}
	r->own_fd = true;
	r->regular = fstat(r->fd, &st) == 0 && S_ISREG(st.st_mode);
	return r;
}

struct kt_json_reader *kt_json_reader_open_mem(const char *name, const char *buf, size_t len,
					       size_t max_input, unsigned flags, struct kt_err *err)
{
	struct kt_json_reader *r = reader_new(name, max_input, flags);

	if (!r || !(r->buf = malloc(len + 1))) {
		kt_json_reader_close(r);
		kt_error(err, "out of memory");
		return NULL;
	}
	memcpy(r->buf, buf, len);
	r->buf[len] = '\0';
	r->len = r->cap = len;
	r->eof = true;
	return r;
}

void kt_json_reader_close(struct kt_json_reader *r)
{
	if (!r)
		return;
	if (r->yp_init)
		yaml_parser_delete(&r->yp);
	if (r->own_fd)
		close(r->fd);
	free(r->buf);
	free(r->name);
	free(r);
}

void kt_json_pos_advance(long *line, long *col, const char *text, size_t n)
{
	const char *p = text, *end = text + n, *nl, *last = NULL;

	while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
		(*line)++;
		last = nl;
		p = nl + 1;
	}
	*col = last ? (long)(end - last) : *col + (long)n;
}

static void reader_advance(struct kt_json_reader *r, size_t n)
{
	kt_json_pos_advance(&r->line, &r->col, r->buf + r->pos, n);
	r->pos += n;
}

/* skips blanks; 1 when a byte is waiting, 0 at end of input, -1 on error */
static int skip_blank(struct kt_json_reader *r, struct kt_err *err)
{
	for (;;) {
		while (r->pos < r->len && strchr(" \t\r\n", r->buf[r->pos]))
			reader_advance(r, 1);
		if (r->pos < r->len)
			return 1;
		if (r->eof)
			return 0;
		if (reader_fill(r, err) < 0)
			return -1;
	}
}

static int too_big(struct kt_json_reader *r, struct kt_err *err)
{
	return kt_error_kind(err, KT_ERR_INPUT,
			     "%s:%ld:%ld: document larger than %zu bytes (see --max-input)",
			     r->name, r->line, r->col, r->max);
}

int kt_json_scan_end(struct kt_json_scan *s, const char *text, size_t avail, size_t *end)
{
	bool container = text[0] == '{' || text[0] == '[';

	for (; s->n < avail; s->n++) {
		char c = text[s->n];

		if (s->in_str) {
			if (s->esc)
				s->esc = false;
			else if (c == '\\')
				s->esc = true;
			else if (c == '"')
				s->in_str = false;
			continue;
		}
		if (!container && s->n > 0 && (c == '"' || strchr(" \t\r\n{}[],", c))) {
			*end = s->n;
			return 1;
		}
		if (c == '"') {
			s->in_str = true;
		} else if (c == '{' || c == '[') {
			s->depth++;
		} else if ((c == '}' || c == ']') && --s->depth == 0 && container) {
			*end = ++s->n;
			return 1;
		}
	}
	return 0;
}

/*
 * Finds the end of the JSON text starting at r->pos, reading more input as
 * needed; a stream can therefore be consumed as it arrives.
 */
static int scan_json(struct kt_json_reader *r, size_t *end, struct kt_err *err)
{
	struct kt_json_scan s = { 0 };

	while (!kt_json_scan_end(&s, r->buf + r->pos, r->len - r->pos, end)) {
		if (s.n > r->max)
			return too_big(r, err);
		if (r->eof) {
			*end = s.n;	/* the parser reports what is missing */
			break;
		}
		if (reader_fill(r, err) < 0)
			return -1;
	}
	if (*end > r->max)
		return too_big(r, err);
	*end += r->pos;
	return 0;
}

/*
 * All the rest of the input is in the buffer and under the cap: true at the end
 * of a stream, and made true for a regular file read as one document (its end
 * is near and it must be read to the end anyway, to refuse a second document).
 */
static int all_buffered(struct kt_json_reader *r, struct kt_err *err)
{
	if (!r->eof && r->regular && !(r->flags & KT_JSON_STREAM)) {
		while (!r->eof && r->len - r->pos <= r->max)
			if (reader_fill(r, err) < 0)
				return -1;
	}
	return r->eof && r->len - r->pos <= r->max;
}

static int next_json(struct kt_json_reader *r, cJSON **out, struct kt_err *err)
{
	size_t end = 0;
	cJSON *doc;
	char first = r->buf[r->pos];
	int all = first == '{' || first == '[' ? all_buffered(r, err) : 0;

	if (all < 0)
		return -1;
	r->doc_line = r->line;
	if (all) {
		/* an object or array ends where the parser finds its close: no
		 * scan for the end first */
		doc = kt_json_parse_prefix(r->name, r->buf + r->pos, r->len - r->pos, r->line,
					   r->col, &end, err);
		if (!doc)
			return -1;
		reader_advance(r, end);
		*out = doc;
		return 1;
	}
	if (scan_json(r, &end, err) < 0)
		return -1;
	doc = kt_json_parse_at(r->name, r->buf + r->pos, end - r->pos, r->line, r->col, err);
	if (!doc)
		return -1;
	reader_advance(r, end - r->pos);
	*out = doc;
	return 1;
}

/* libyaml pulls its input through here: what is buffered first, then the fd */
static int yaml_read(void *data, unsigned char *buffer, size_t size, size_t *size_read)
{
	struct kt_json_reader *r = data;
	size_t n;

	if (r->pos == r->len && !r->eof) {
		if (reader_fill(r, NULL) < 0)
			return 0;
	}
	n = r->len - r->pos;
	if (n > size)
		n = size;
	memcpy(buffer, r->buf + r->pos, n);
	r->pos += n;
	*size_read = n;
	return 1;
}

/* JSON texts start with these; '-' only before a digit ("---" and "- x" are YAML) */
int kt_json_sniff(const char *p, size_t avail, bool eof)
{
	char c = p[0];

	if (strchr("-ntf", c) && avail < 6 && !eof)
		return -1;
	if (c == '-')
		return avail > 1 && p[1] >= '0' && p[1] <= '9';
	if (avail >= 4 && (!strncmp(p, "null", 4) || !strncmp(p, "true", 4)))
		return avail == 4 || strchr(" \t\r\n", p[4]);
	if (avail >= 5 && !strncmp(p, "false", 5))
		return avail == 5 || strchr(" \t\r\n", p[5]);
	return c == '{' || c == '[' || c == '"' || (c >= '0' && c <= '9');
}

size_t kt_yaml_marker(const char *text, size_t len)
{
	if (len < 3 || (strncmp(text, "---", 3) != 0 && strncmp(text, "...", 3) != 0))
		return 0;
	return len == 3 || memchr(" \t\r\n", text[3], 4) ? 3 : 0;
}

int kt_yaml_scan_end(struct kt_yaml_scan *s, const char *text, size_t avail, bool eof,
		     size_t *end)
{
	for (;;) {
		const char *nl = s->n < avail ? memchr(text + s->n, '\n', avail - s->n) : NULL;
		size_t eol = nl ? (size_t)(nl - text) : avail;

		s->n = eol;
		if (!nl && (!eof || s->line == avail))
			return 0;
		if (kt_yaml_marker(text + s->line, eol - s->line)) {
			*end = s->line;
			return 1;
		}
		s->line = s->n = nl ? eol + 1 : avail;
	}
}

int kt_json_reader_next(struct kt_json_reader *r, cJSON **out, struct kt_err *err)
{
	int rc;

	*out = NULL;
	if (r->fmt != FMT_YAML) {
		rc = skip_blank(r, err);
		if (rc <= 0)
			return rc;
		if (r->fmt == FMT_UNKNOWN) {
			while ((rc = kt_json_sniff(r->buf + r->pos, r->len - r->pos, r->eof)) < 0)
				if (reader_fill(r, err) < 0)
					return -1;
			r->fmt = rc || (r->flags & KT_JSON_JSON_ONLY) ? FMT_JSON : FMT_YAML;
		}
	}
	if (r->ndocs > 0 && !(r->flags & KT_JSON_STREAM) && r->fmt == FMT_JSON)
		return kt_error_kind(err, KT_ERR_INPUT,
				     "%s:%ld:%ld: unexpected data after the document", r->name,
				     r->line, r->col);
	if (r->fmt == FMT_JSON) {
		rc = next_json(r, out, err);
	} else {
		if (!r->yp_init) {
			if (!yaml_parser_initialize(&r->yp))
				return kt_error(err, "out of memory");
			yaml_parser_set_input(&r->yp, yaml_read, r);
			r->yp_init = true;
		}
		rc = kt_yaml_next(&r->yp, r->name, r->max, out, err);
		if (rc > 0 && r->ndocs > 0 && !(r->flags & KT_JSON_STREAM)) {
			cJSON_Delete(*out);
			*out = NULL;
			return kt_error_kind(err, KT_ERR_INPUT,
					     "%s: more than one YAML document", r->name);
		}
	}
	if (rc > 0)
		r->ndocs++;
	return rc;
}

long kt_json_reader_line(const struct kt_json_reader *r)
{
	return r && r->fmt == FMT_JSON ? r->doc_line : 0;
}

/* exactly one document from r, which is freed; NULL with err otherwise */
static cJSON *read_one(struct kt_json_reader *r, struct kt_err *err)
{
	cJSON *doc = NULL, *extra = NULL;
	int rc;

	if (!r)
		return NULL;
	rc = kt_json_reader_next(r, &doc, err);
	if (rc == 0)
		kt_error_kind(err, KT_ERR_INPUT, "%s: empty input, expected a document",
			      r->name);
	if (rc == 1 && kt_json_reader_next(r, &extra, err) != 0) {
		cJSON_Delete(doc);
		cJSON_Delete(extra);
		doc = NULL;
	}
	kt_json_reader_close(r);
	return doc;
}

cJSON *kt_json_read_file(const char *path, size_t max_input, struct kt_err *err)
{
	return read_one(kt_json_reader_open(path, max_input, 0, err), err);
}

int kt_json_inline_file(cJSON *obj, const char *key, const char *file_key, size_t max_input,
			struct kt_err *err)
{
	const cJSON *file = kt_json_get(obj, file_key);
	cJSON *doc;

	if (!file)
		return 0;
	if (!cJSON_IsString(file))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: expected a file name, got %s",
				     file_key, kt_json_type_name(file));
	if (!file->valuestring[0])
		return kt_error_kind(err, KT_ERR_INPUT, "%s: an empty file name", file_key);
	if (kt_json_get(obj, key))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: give %s or %s, not both", file_key,
				     key, file_key);
	/* a path, and the reader's "-" is standard input: this one is a file's */
	doc = kt_json_read_file(strcmp(file->valuestring, "-") == 0 ? "./-" : file->valuestring,
				max_input, err);
	if (!doc) {
		kt_err_prefix(err, "%s", file_key);
		return -1;
	}
	if (kt_json_set(obj, key, doc) < 0)
		return kt_error(err, "out of memory");
	cJSON_DeleteItemFromObjectCaseSensitive(obj, file_key);
	return 1;
}

cJSON *kt_json_parse(const char *name, const char *text, size_t len, struct kt_err *err)
{
	return read_one(kt_json_reader_open_mem(name, text, len, 0, 0, err), err);
}
