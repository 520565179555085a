/* SPDX-License-Identifier: Apache-2.0 */
/* yaml: YAML documents to cJSON trees, resolving plain scalars as Kubernetes tools do */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_int.h"

#define MAX_DEPTH 1000
/* aliases may copy one node per this many bytes of the input cap (--max-input):
 * 1048576 nodes at the default 64 MiB, so a "billion laughs" stops early */
#define ALIAS_BYTES_PER_NODE 64

struct frame {
	cJSON *node;
	char *key;	/* a mapping's key waiting for its value */
};

struct anchor {
	char *name;
	cJSON *node;	/* borrowed from the tree being built */
};

struct builder {
	struct frame stack[MAX_DEPTH];
	int depth;
	struct anchor *anchors;
	size_t nanchors;
	/* values replaced by a later duplicate key, kept until the document
	 * ends because an anchor may still point into them */
	cJSON *replaced;
	size_t alias_nodes, alias_max;	/* nodes copied by aliases, and the cap */
	cJSON *root;
	bool empty;	/* the document had no content at all ("---" alone) */
	const char *name;
	struct kt_err *err;
	/* where the parser's text starts in the input messages name: line 1
	 * column 1, or further on for a document cut from a stream */
	long line0, col0;
};

static int yaml_fail(struct builder *b, const yaml_mark_t *m, const char *what)
{
	long line = b->line0 + (long)m->line;
	long col = (long)m->column + (m->line == 0 ? b->col0 : 1);

	return kt_error_kind(b->err, KT_ERR_INPUT, "%s:%ld:%ld: %s", b->name, line, col, what);
}

/* how the scalar text looks, following the YAML 1.2 core schema's patterns */
enum shape { SH_OTHER, SH_DEC, SH_HEX, SH_OCT, SH_FLOAT };

static size_t digits(const char *s, int base)
{
	size_t n = 0;

	while (s[n] && (base == 16 ? isxdigit((unsigned char)s[n])
				   : s[n] >= '0' && s[n] < '0' + base))
		n++;
	return n;
}

/*
 * [-+]?[0-9]+ | 0x[0-9a-fA-F]+ | 0o[0-7]+ is an integer,
 * [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? a float
 */
static enum shape scalar_shape(const char *s)
{
	const char *p = s;
	size_t n;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) {
		n = digits(p + 2, p[1] == 'x' ? 16 : 8);
		if (n && !p[2 + n])
			return p[1] == 'x' ? SH_HEX : SH_OCT;
	}
	if (*p == '+' || *p == '-')
		p++;
	n = digits(p, 10);
	if (n && !p[n])
		return SH_DEC;
	p += n;
	if (*p == '.') {
		size_t f = digits(p + 1, 10);

		if (!n && !f)
			return SH_OTHER;
		p += 1 + f;
	} else if (!n) {
		return SH_OTHER;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		n = digits(p, 10);
		if (!n)
			return SH_OTHER;
		p += n;
	}
	return *p ? SH_OTHER : SH_FLOAT;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?: the text can go out as it is */
static bool json_number_text(const char *s)
{
	size_t n;

	if (*s == '-')
		s++;
	n = digits(s, 10);
	if (!n || (n > 1 && *s == '0'))
		return false;
	s += n;
	if (*s == '.') {
		n = digits(s + 1, 10);
		if (!n)
			return false;
		s += 1 + n;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		n = digits(s, 10);
		if (!n)
			return false;
		s += n;
	}
	return !*s;
}

/*
 * A decimal integer past int64 keeps its exact digits (Go's YAML reader makes
 * it a uint64 or a big.Int, which encoding/json prints exactly); the text
 * loses a '+' and leading zeros so that it is JSON.
 */
static cJSON *big_decimal_node(const char *s)
{
	bool neg = *s == '-';
	const char *p = s + (*s == '+' || *s == '-');
	size_t n;
	char *text;
	cJSON *node;

	while (p[0] == '0' && p[1])
		p++;
	n = strlen(p);
	text = malloc(n + 2);
	if (!text)
		return NULL;
	text[0] = '-';
	memcpy(text + neg, p, n + 1);
	node = kt_json_num_new_text(text);
	free(text);
	return node;
}

static cJSON *int_node(const char *s, enum shape sh)
{
	char *end;
	const char *p = s;
	bool neg = false;
	unsigned long long v;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (sh != SH_DEC)
		p += 2;
	errno = 0;
	v = strtoull(p, &end, sh == SH_HEX ? 16 : sh == SH_OCT ? 8 : 10);
	if (errno || *end) {
		/* a hexadecimal or octal integer past 64 bits stays text */
		return sh == SH_DEC ? big_decimal_node(s) : cJSON_CreateString(s);
	}
	if (neg && v > (unsigned long long)INT64_MAX)
		return big_decimal_node(s);
	if (!neg && v > (unsigned long long)INT64_MAX) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%llu", v);
		return kt_json_num_new_text(buf);
	}
	return kt_json_num_new_int(neg ? -(int64_t)v : (int64_t)v);
}

/*
 * A float keeps its text when it is JSON already, else it is written as the
 * shortest double that reads back.  A float past the double range is a
 * string, as Go's YAML reader resolves it (never "inf", which is not JSON).
 */
static cJSON *float_node(const char *s)
{
	double v = strtod(s, NULL);

	if (!isfinite(v))
		return cJSON_CreateString(s);
	if (json_number_text(s))
		return kt_json_num_new_text(s);
	return kt_json_num_new_double(v);
}

/* the YAML 1.2 core schema, which is what kubectl's YAML reader resolves */
static cJSON *plain_scalar(const char *s)
{
	enum shape sh;

	if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
	    !strcmp(s, "NULL"))
		return cJSON_CreateNull();
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return cJSON_CreateTrue();
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return cJSON_CreateFalse();
	sh = scalar_shape(s);
	if (sh == SH_FLOAT)
		return float_node(s);
	if (sh != SH_OTHER)
		return int_node(s, sh);
	return cJSON_CreateString(s);
}

static cJSON *scalar_node(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	const char *tag = (const char *)ev->data.scalar.tag;

	if (tag) {
		if (!strcmp(tag, YAML_STR_TAG))
			return cJSON_CreateString(s);
		if (!strcmp(tag, YAML_NULL_TAG) || !strcmp(tag, YAML_BOOL_TAG) ||
		    !strcmp(tag, YAML_INT_TAG) || !strcmp(tag, YAML_FLOAT_TAG))
			return plain_scalar(s);
	}
	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return cJSON_CreateString(s);
	return plain_scalar(s);
}

static int remember_anchor(struct builder *b, const yaml_char_t *anchor, cJSON *node)
{
	struct anchor *na;

	if (!anchor)
		return 0;
	na = realloc(b->anchors, (b->nanchors + 1) * sizeof(*na));
	if (!na)
		return -1;
	b->anchors = na;
	na[b->nanchors].name = strdup((const char *)anchor);
	na[b->nanchors].node = node;
	if (!na[b->nanchors].name)
		return -1;
	b->nanchors++;
	return 0;
}

static cJSON *find_anchor(struct builder *b, const yaml_char_t *name)
{
	for (size_t i = b->nanchors; i-- > 0;)
		if (!strcmp(b->anchors[i].name, (const char *)name))
			return b->anchors[i].node;
	return NULL;
}

/*
 * obj[key] = node, the later of duplicate keys winning in the earlier one's
 * place, as Go's YAML reader does; the value it replaces is kept aside while
 * anchors exist, so an alias to it still copies what the anchor named.
 */
static int set_value(struct builder *b, cJSON *obj, const char *key, cJSON *node)
{
	cJSON *old = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!old || !b->nanchors)
		return kt_json_set(obj, key, node);
	if (!b->replaced)
		b->replaced = cJSON_CreateArray();
	if (!b->replaced) {
		cJSON_Delete(node);
		return -1;
	}
	/* a copy made by an alias may carry the key it had (cJSON frees with free) */
	if (!(node->type & cJSON_StringIsConst))
		free(node->string);
	node->type &= ~cJSON_StringIsConst;
	node->string = strdup(key);
	if (!node->string) {
		cJSON_Delete(node);
		return -1;
	}
	/*
	 * node takes old's place by hand: Debian 12's cJSON_InsertItemInArray
	 * refuses a detached item anywhere but first or last (its
	 * CVE-2023-50471 check tests the new item's prev), which failed a
	 * duplicate of any middle key as "out of memory" and leaked the value.
	 */
	node->next = old->next;
	node->prev = old->prev == old ? node : old->prev;
	if (obj->child == old)
		obj->child = node;
	else
		old->prev->next = node;
	if (old->next)
		old->next->prev = node;
	else
		obj->child->prev = node;
	old->next = old->prev = NULL;
	cJSON_AddItemToArray(b->replaced, old);
	return 0;
}

static size_t count_nodes(const cJSON *node)
{
	size_t n = 1;

	for (const cJSON *c = node->child; c; c = c->next)
		n += count_nodes(c);
	return n;
}

/* puts node where it belongs: the root, a sequence item, a key or a value */
static int place(struct builder *b, cJSON *node, bool is_container, const yaml_event_t *ev)
{
	struct frame *top = b->depth ? &b->stack[b->depth - 1] : NULL;

	if (!node)
		return yaml_fail(b, &ev->start_mark, "out of memory");
	if (!top) {
		b->root = node;
	} else if (cJSON_IsArray(top->node)) {
		if (kt_json_append(top->node, node) < 0)
			return yaml_fail(b, &ev->start_mark, "out of memory");
	} else if (!top->key) {
		if (is_container || !(cJSON_IsString(node) || kt_json_is_number(node) ||
				      cJSON_IsBool(node) || cJSON_IsNull(node))) {
			cJSON_Delete(node);
			return yaml_fail(b, &ev->start_mark, "mapping keys must be scalars");
		}
		top->key = strdup(ev->type == YAML_SCALAR_EVENT
					  ? (const char *)ev->data.scalar.value
					  : "");
		cJSON_Delete(node);
		return top->key ? 0 : yaml_fail(b, &ev->start_mark, "out of memory");
	} else {
		int rc = set_value(b, top->node, top->key, node);

		free(top->key);
		top->key = NULL;
		if (rc < 0)
			return yaml_fail(b, &ev->start_mark, "out of memory");
	}
	return 0;
}

static int push(struct builder *b, cJSON *node, const yaml_event_t *ev)
{
	if (b->depth == MAX_DEPTH) {
		cJSON_Delete(node);
		return yaml_fail(b, &ev->start_mark,
				 "document nested deeper than 1000 levels");
	}
	if (place(b, node, true, ev) < 0)
		return -1;
	b->stack[b->depth].node = node;
	b->stack[b->depth].key = NULL;
	b->depth++;
	return 0;
}

static int on_event(struct builder *b, const yaml_event_t *ev)
{
	cJSON *node, *target;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (!b->depth && !ev->data.scalar.length && !ev->data.scalar.tag &&
		    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			b->empty = true;
		/* a NUL ("\0" in a double-quoted scalar) would cut the string */
		if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length))
			return yaml_fail(b, &ev->start_mark, "a NUL in a string cannot be kept");
		node = scalar_node(ev);
		if (!node)
			return yaml_fail(b, &ev->start_mark, "out of memory");
		if (place(b, node, false, ev) < 0)
			return -1;
		/* a scalar that became a key was freed; only values can be anchored */
		if (ev->data.scalar.anchor && b->depth &&
		    !b->stack[b->depth - 1].key)
			return remember_anchor(b, ev->data.scalar.anchor, node);
		return b->depth ? 0 : remember_anchor(b, ev->data.scalar.anchor, node);
	case YAML_SEQUENCE_START_EVENT:
		node = cJSON_CreateArray();
		if (push(b, node, ev) < 0)
			return -1;
		return remember_anchor(b, ev->data.sequence_start.anchor, node);
	case YAML_MAPPING_START_EVENT:
		node = cJSON_CreateObject();
		if (push(b, node, ev) < 0)
			return -1;
		return remember_anchor(b, ev->data.mapping_start.anchor, node);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		b->depth--;
		free(b->stack[b->depth].key);
		return 0;
	case YAML_ALIAS_EVENT:
		target = find_anchor(b, ev->data.alias.anchor);
		if (!target)
			return yaml_fail(b, &ev->start_mark, "alias to an unknown anchor");
		b->alias_nodes += count_nodes(target);
		if (b->alias_nodes > b->alias_max) {
			char what[96];

			snprintf(what, sizeof(what), "aliases expand to more than %zu "
				 "nodes (see --max-input)", b->alias_max);
			return yaml_fail(b, &ev->start_mark, what);
		}
		return place(b, kt_json_dup(target), cJSON_IsArray(target) || cJSON_IsObject(target),
			     ev);
	default:
		return 0;
	}
}

static void builder_release(struct builder *b)
{
	while (b->depth > 0)
		free(b->stack[--b->depth].key);
	for (size_t i = 0; i < b->nanchors; i++)
		free(b->anchors[i].name);
	free(b->anchors);
	b->anchors = NULL;
	b->nanchors = 0;
	cJSON_Delete(b->replaced);
	b->replaced = NULL;
	b->alias_nodes = 0;
}

static int parse_error(yaml_parser_t *yp, struct builder *b)
{
	char what[256];

	snprintf(what, sizeof(what), "%s%s%s", yp->problem ? yp->problem : "invalid YAML",
		 yp->context ? " " : "", yp->context ? yp->context : "");
	return yaml_fail(b, &yp->problem_mark, what);
}

/* one document's events; 1 with b->root set, 0 at stream end */
static int read_document(yaml_parser_t *yp, struct builder *b, size_t max)
{
	yaml_event_t ev;
	size_t start = 0;
	bool in_doc = false;

	for (;;) {
		int rc = 0;

		if (!yaml_parser_parse(yp, &ev))
			return parse_error(yp, b);
		/* after the stream's end libyaml hands out empty events, forever */
		if (ev.type == YAML_STREAM_END_EVENT || ev.type == YAML_NO_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT) {
			start = ev.start_mark.index;
			in_doc = true;
		} else if (ev.type == YAML_DOCUMENT_END_EVENT) {
			yaml_event_delete(&ev);
			return 1;
		} else if (in_doc && ev.end_mark.index - start > max) {
			char what[96];

			snprintf(what, sizeof(what),
				 "document larger than %zu bytes (see --max-input)", max);
			rc = yaml_fail(b, &ev.start_mark, what);
		} else {
			rc = on_event(b, &ev);
		}
		yaml_event_delete(&ev);
		if (rc < 0)
			return -1;
	}
}

static int yaml_next(yaml_parser_t *yp, const char *name, long line0, long col0, size_t max,
		     cJSON **out, struct kt_err *err)
{
	struct builder *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return kt_error(err, "out of memory");
	b->name = name;
	b->err = err;
	b->line0 = line0;
	b->col0 = col0;
	b->alias_max = max / ALIAS_BYTES_PER_NODE;
	for (;;) {
		rc = read_document(yp, b, max);
		builder_release(b);
		if (rc <= 0) {
			cJSON_Delete(b->root);
			break;
		}
		/* an empty document ("---" alone) is skipped, as kubectl does;
		 * an explicit null is a document */
		if (b->root && !b->empty) {
			*out = b->root;
			break;
		}
		cJSON_Delete(b->root);
		b->root = NULL;
		b->empty = false;
	}
	free(b);
	return rc;
}

int kt_yaml_next(yaml_parser_t *yp, const char *name, size_t max, cJSON **out,
		 struct kt_err *err)
{
	return yaml_next(yp, name, 1, 1, max, out, err);
}

int kt_yaml_parse_at(const char *name, const char *text, size_t len, long line, long col,
		     size_t max, cJSON **out, struct kt_err *err)
{
	yaml_parser_t yp;
	cJSON *extra = NULL;
	int rc, more;

	*out = NULL;
	if (!yaml_parser_initialize(&yp))
		return kt_error(err, "out of memory");
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	rc = yaml_next(&yp, name, line, col, max, out, err);
	/* the text is one document of a stream cut at its marker lines: a
	 * second can only come from a marker libyaml sees and the cut did not */
	more = rc > 0 ? yaml_next(&yp, name, line, col, max, &extra, err) : 0;
	if (more != 0) {
		cJSON_Delete(*out);
		cJSON_Delete(extra);
		*out = NULL;
		rc = more < 0 ? -1
			      : kt_error_kind(err, KT_ERR_INPUT,
					      "%s:%ld:%ld: more than one YAML document", name,
					      line, col);
	}
	yaml_parser_delete(&yp);
	return rc;
}
