/* SPDX-License-Identifier: Apache-2.0 */
/* schema: patch metadata nodes, lookups, and the OpenAPI v2/v3 loader */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsio.h"
#include "json.h"
#include "schema_int.h"

struct kt_schema_node *kt_schema_node_new(struct kt_schema *s, enum kt_sk kind,
					  const char *name)
{
	struct kt_schema_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->name = strdup(name ? name : "");
	if (!n->name) {
		free(n);
		return NULL;
	}
	n->kind = kind;
	n->next_alloc = s->nodes;
	s->nodes = n;
	return n;
}

int kt_schema_field_add(struct kt_schema_node *n, const char *name, const char *strategy,
			const char *merge_key, struct kt_schema_node *type)
{
	struct kt_schema_field *f;

	if (n->nfields == n->capfields) {
		size_t cap = n->capfields ? n->capfields * 2 : 8;
		struct kt_schema_field *nf = realloc(n->fields, cap * sizeof(*nf));

		if (!nf)
			return -1;
		n->fields = nf;
		n->capfields = cap;
	}
	f = &n->fields[n->nfields];
	f->name = strdup(name);
	f->strategy = strdup(strategy ? strategy : "");
	f->merge_key = strdup(merge_key ? merge_key : "");
	f->node = type;
	if (!f->name || !f->strategy || !f->merge_key) {
		free(f->name);
		free(f->strategy);
		free(f->merge_key);
		return -1;
	}
	n->nfields++;
	return 0;
}

static int cmp_field(const void *a, const void *b)
{
	return strcmp(((const struct kt_schema_field *)a)->name,
		      ((const struct kt_schema_field *)b)->name);
}

void kt_schema_seal(struct kt_schema *s)
{
	for (struct kt_schema_node *n = s->nodes; n; n = n->next_alloc)
		if (n->nfields > 1)
			qsort(n->fields, n->nfields, sizeof(*n->fields), cmp_field);
}

void kt_schema_free(struct kt_schema *s)
{
	struct kt_schema_node *n, *next;

	if (!s)
		return;
	for (n = s->nodes; n; n = next) {
		next = n->next_alloc;
		for (size_t i = 0; i < n->nfields; i++) {
			free(n->fields[i].name);
			free(n->fields[i].strategy);
			free(n->fields[i].merge_key);
		}
		free(n->fields);
		free(n->name);
		free(n);
	}
	free(s);
}

const struct kt_schema_node *kt_schema_root(const struct kt_schema *s)
{
	return s ? s->root : NULL;
}

const char *kt_schema_node_name(const struct kt_schema_node *n)
{
	return n ? n->name : "";
}

static const struct kt_schema_field *find_field(const struct kt_schema_node *n,
						const char *key)
{
	size_t lo = 0, hi = n->nfields;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(key, n->fields[mid].name);

		if (c == 0)
			return &n->fields[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static const char *shape(enum kt_sk k)
{
	return k == KT_SK_ARRAY ? "slice" : k == KT_SK_MAP ? "map" : "primitive";
}

/* a struct field's element type when the field is used as a list */
static int list_elem(const struct kt_schema_node *t, const char *key,
		     const struct kt_schema_node **out, struct kt_err *err)
{
	*out = NULL;
	if (!t || t->kind == KT_SK_ANY)
		return 0;
	switch (t->kind) {
	case KT_SK_ARRAY:
		*out = t->elem;
		if (t->elem && t->elem->kind == KT_SK_ARRAY)
			return kt_error_kind(err, KT_ERR_INPUT,
					     "unexpected slice of slice");
		return 0;
	case KT_SK_STRUCT:
		/* a pointer to a struct used as a list: its elements are that struct */
		*out = t;
		return 0;
	default:
		return kt_error_kind(err, KT_ERR_INPUT, "expected slice, but got %s",
				     shape(t->kind));
	}
}

int kt_schema_lookup(const struct kt_schema_node *node, const char *key, bool as_list,
		     struct kt_schema_meta *meta, struct kt_err *err)
{
	const struct kt_schema_field *f;

	*meta = (struct kt_schema_meta){ .strategy = "", .merge_key = "", .sub = NULL };
	if (!node || node->kind == KT_SK_ANY)
		return 0;
	switch (node->kind) {
	case KT_SK_MAP:
		/* a map's values are all of one type, whatever the key */
		if (!as_list) {
			meta->sub = node->elem;
			return 0;
		}
		return list_elem(node->elem, key, &meta->sub, err);
	case KT_SK_ARRAY:
	case KT_SK_PRIM:
		return kt_error_kind(err, KT_ERR_INPUT, "expected %s, but got %s",
				     as_list ? "slice" : "kind", shape(node->kind));
	default:
		break;
	}
	f = find_field(node, key);
	if (!f) {
		if (node->open)
			return 0;
		return kt_error_kind(err, KT_ERR_INPUT,
				     "unable to find api field \"%s\" in %s", key,
				     node->name);
	}
	meta->strategy = f->strategy;
	meta->merge_key = f->merge_key;
	if (!as_list) {
		meta->sub = f->node;
		return 0;
	}
	return list_elem(f->node, key, &meta->sub, err);
}

/* --------------------------------------------------------------- OpenAPI */

struct loader {
	struct kt_schema *s;
	const cJSON *defs;  /* definitions or components.schemas */
	const char *prefix; /* "#/definitions/" or "#/components/schemas/" */
	const char *name;   /* file name for messages */
	struct kt_defmemo {
		const char *def;
		struct kt_schema_node *node;
	} * memo;
	size_t nmemo, capmemo;
	int depth;
};

static struct kt_schema_node *build(struct loader *l, const cJSON *sch, const char *name,
				    struct kt_err *err);

static struct kt_schema_node *memo_get(struct loader *l, const char *def)
{
	for (size_t i = 0; i < l->nmemo; i++)
		if (strcmp(l->memo[i].def, def) == 0)
			return l->memo[i].node;
	return NULL;
}

static int memo_put(struct loader *l, const char *def, struct kt_schema_node *n)
{
	if (l->nmemo == l->capmemo) {
		size_t cap = l->capmemo ? l->capmemo * 2 : 16;
		struct kt_defmemo *m = realloc(l->memo, cap * sizeof(*m));

		if (!m)
			return -1;
		l->memo = m;
		l->capmemo = cap;
	}
	l->memo[l->nmemo].def = def;
	l->memo[l->nmemo].node = n;
	l->nmemo++;
	return 0;
}

/* the node of a named definition, built once (references may loop) */
static struct kt_schema_node *def_node(struct loader *l, const char *def,
				       struct kt_err *err)
{
	const cJSON *sch = kt_json_get_object(l->defs, def);
	struct kt_schema_node *n = memo_get(l, def);

	if (n)
		return n;
	if (!sch) {
		kt_error_kind(err, KT_ERR_INPUT, "%s: no definition '%s'", l->name, def);
		return NULL;
	}
	return build(l, sch, def, err);
}

static struct kt_schema_node *ref_node(struct loader *l, const char *ref,
				       struct kt_err *err)
{
	size_t n = strlen(l->prefix);

	if (strncmp(ref, l->prefix, n) != 0) {
		kt_error_kind(err, KT_ERR_INPUT, "%s: unable to resolve %s", l->name,
			      ref);
		return NULL;
	}
	return def_node(l, ref + n, err);
}

static int add_props(struct loader *l, struct kt_schema_node *n, const cJSON *props,
		     struct kt_err *err)
{
	for (const cJSON *p = props->child; p; p = p->next) {
		const cJSON *ps = kt_json_get(p, "x-kubernetes-patch-strategy");
		const cJSON *mk = kt_json_get(p, "x-kubernetes-patch-merge-key");
		struct kt_schema_node *t;

		if ((ps && !cJSON_IsString(ps)) || (mk && !cJSON_IsString(mk)))
			return kt_error_kind(
				err, KT_ERR_INPUT,
				"%s: %s.%s: patch extensions must be strings", l->name,
				n->name, p->string);
		if (!cJSON_IsObject(p))
			return kt_error_kind(err, KT_ERR_INPUT, "%s: %s.%s: not a schema",
					     l->name, n->name, p->string);
		t = build(l, p, "", err);
		if (!t)
			return -1;
		if (kt_schema_field_add(n, p->string, ps ? ps->valuestring : "",
					mk ? mk->valuestring : "", t) < 0)
			return kt_error(err, "out of memory");
	}
	return 0;
}

static struct kt_schema_node *build_inner(struct loader *l, const cJSON *sch,
					  const char *name, struct kt_err *err)
{
	const cJSON *all = kt_json_get_array(sch, "allOf");
	const char *ref = kt_json_get_string(sch, "$ref");
	const char *type = kt_json_get_string(sch, "type");
	const cJSON *props = kt_json_get_object(sch, "properties");
	const cJSON *items = kt_json_get_object(sch, "items");
	const cJSON *addl = kt_json_get_object(sch, "additionalProperties");
	struct kt_schema_node *n;

	if (all && all->child)
		return build(l, all->child, name, err);
	if (ref)
		return ref_node(l, ref, err);
	if ((!type && props) || (type && strcmp(type, "object") == 0 && props)) {
		n = kt_schema_node_new(l->s, KT_SK_STRUCT, name);
		if (!n || (*name && memo_put(l, name, n) < 0)) {
			kt_error(err, "out of memory");
			return NULL;
		}
		return add_props(l, n, props, err) < 0 ? NULL : n;
	}
	if (type && strcmp(type, "object") == 0) {
		n = kt_schema_node_new(l->s, KT_SK_MAP, name);
		if (n && addl)
			n->elem = build(l, addl, "", err);
		if (n && addl && !n->elem)
			return NULL;
	} else if (type && strcmp(type, "array") == 0) {
		n = kt_schema_node_new(l->s, KT_SK_ARRAY, name);
		if (n && items)
			n->elem = build(l, items, "", err);
		if (n && items && !n->elem)
			return NULL;
	} else {
		n = kt_schema_node_new(l->s, type ? KT_SK_PRIM : KT_SK_ANY, name);
	}
	if (!n)
		kt_error(err, "out of memory");
	else if (*name && memo_put(l, name, n) < 0)
		return NULL;
	return n;
}

static struct kt_schema_node *build(struct loader *l, const cJSON *sch, const char *name,
				    struct kt_err *err)
{
	struct kt_schema_node *n;

	if (!cJSON_IsObject(sch)) {
		kt_error_kind(err, KT_ERR_INPUT, "%s: %s: a schema must be an object",
			      l->name, *name ? name : "definition");
		return NULL;
	}
	if (++l->depth > 200) {
		kt_error_kind(err, KT_ERR_INPUT, "%s: schemas nest too deeply", l->name);
		return NULL;
	}
	n = build_inner(l, sch, name, err);
	l->depth--;
	return n;
}

struct kt_schema *kt_schema_openapi_from_doc(const cJSON *doc, const char *name,
					     const char *type, struct kt_err *err)
{
	struct loader l = { .name = name ? name : "schema" };
	const cJSON *comp = kt_json_get_object(doc, "components");

	if ((l.defs = kt_json_get_object(doc, "definitions"))) {
		l.prefix = "#/definitions/";
	} else if (comp && (l.defs = kt_json_get_object(comp, "schemas"))) {
		l.prefix = "#/components/schemas/";
	} else {
		kt_error_kind(err, KT_ERR_INPUT,
			      "%s: not an OpenAPI document: no 'definitions' (v2) or "
			      "'components.schemas' (v3)",
			      l.name);
		return NULL;
	}
	if (!kt_json_get_object(l.defs, type)) {
		kt_error_kind(err, KT_ERR_INPUT, "%s: no definition '%s'", l.name, type);
		return NULL;
	}
	l.s = calloc(1, sizeof(*l.s));
	if (!l.s) {
		kt_error(err, "out of memory");
		return NULL;
	}
	l.s->root = def_node(&l, type, err);
	free(l.memo);
	if (!l.s->root) {
		kt_schema_free(l.s);
		return NULL;
	}
	kt_schema_seal(l.s);
	return l.s;
}

/*
 * Upstream reads its schema files with a YAML parser, which forgives what
 * strict JSON does not (a trailing comma, as in a published test schema).
 * So a file that fails as JSON is read again as YAML; if that fails too the
 * JSON error is the one reported.
 */
static cJSON *read_lenient(const char *path, struct kt_err *err)
{
	struct kt_err yerr = { 0 };
	struct kt_json_reader *r;
	char *text = NULL, *buf;
	size_t len = 0;
	cJSON *doc = kt_json_read_file(path, KT_JSON_MAX_INPUT_DEFAULT, err);

	if (doc || err->kind != KT_ERR_INPUT ||
	    kt_file_read(path, NULL, KT_JSON_MAX_INPUT_DEFAULT, &text, &len, &yerr) < 0)
		return doc;
	/* a comment line first, so the reader takes the text as YAML */
	buf = malloc(len + 2);
	if (buf) {
		memcpy(buf, "#\n", 2);
		memcpy(buf + 2, text, len);
	}
	free(text);
	if (!buf)
		return NULL;
	r = kt_json_reader_open_mem(path, buf, len + 2, KT_JSON_MAX_INPUT_DEFAULT, 0, &yerr);
	free(buf);
	if (r && kt_json_reader_next(r, &doc, &yerr) != 1)
		doc = NULL;
	kt_json_reader_close(r);
	return doc;
}

struct kt_schema *kt_schema_openapi_load(const char *path, const char *type,
					 struct kt_err *err)
{
	struct kt_schema *s;
	cJSON *doc = read_lenient(path, err);

	if (!doc)
		return NULL;
	s = kt_schema_openapi_from_doc(doc, path, type, err);
	cJSON_Delete(doc);
	return s;
}
