/* SPDX-License-Identifier: Apache-2.0 */
/* smp: strategic merge patch: apply (mergeMap), two-way and three-way diff */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "smp.h"
#include "smp_int.h"

#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define DEL_PREFIX "$deleteFromPrimitiveList"
#define ORDER_PREFIX "$setElementOrder"

/* strings that live as long as one call, carved from big blocks */
struct arena_blk {
	struct arena_blk *next;
	size_t used, cap;
	char data[];
};

/* one call's state: the error, the path of the field at hand, owned strings */
struct ctx {
	struct kt_err *err;
	struct kt_sb path;
	struct kt_sb scratch;
	struct arena_blk *arena;
};

static void ctx_release(struct ctx *c);

struct mopts {
	bool parallel;	   /* MergeParallelList: apply; false merges two patches */
	bool ignore_nulls; /* IgnoreUnmatchedNulls */
};

struct dopts {
	bool order;	   /* SetElementOrder */
	bool no_changes;   /* IgnoreChangesAndAdditions */
	bool no_deletions; /* IgnoreDeletions */
	bool retain_keys;  /* BuildRetainKeysDirective */
};

/* a list item on its way through a merge: its identity and sort positions */
struct ent {
	cJSON *item;
	const char *id; /* Go == identity of the merge key value (or of the item) */
	long idx;	/* position in the list the sort follows, -1 when absent */
	long sidx;	/* position in the server order, -1 when absent */
};

struct vec {
	cJSON **v;
	size_t n, cap;
};

static int failv(struct ctx *c, enum kt_err_kind kind, const char *fmt, va_list ap)
{
	char msg[sizeof(c->err->msg)];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (c->path.len)
		return kt_error_kind(c->err, kind, "%s: %s", kt_sb_str(&c->path), msg);
	return kt_error_kind(c->err, kind, "%s", msg);
}

static int __attribute__((format(printf, 2, 3))) fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = failv(c, KT_ERR_INPUT, fmt, ap);
	va_end(ap);
	return rc;
}

static int oom(struct ctx *c)
{
	return kt_error(c->err, "out of memory");
}

/* a lookup error gets the path in front, like every other */
static int fail_err(struct ctx *c, const struct kt_err *e)
{
	return fail(c, "%s", e->msg);
}

/* %v text of a value, for messages; caller frees */
static char *vtext(const cJSON *v)
{
	struct kt_sb sb = { 0 };

	kt_go_fmt_v(&sb, v);
	if (sb.oom || !sb.buf) {
		kt_sb_release(&sb);
		return strdup("");
	}
	if (sb.len > 200)
		kt_sb_trunc(&sb, 200);
	return sb.buf;
}

static int fail_no_merge_key(struct ctx *c, const cJSON *m, const char *mk)
{
	char *t = vtext(m);
	int rc = fail(c, "map: %s does not contain declared merge key: %s", t ? t : "",
		      mk);

	free(t);
	return rc;
}

static int fail_bad_type(struct ctx *c, enum kt_gk want, const cJSON *got)
{
	return fail(c, "expected a %s, but received a %s", kt_gk_type_name(want),
		    kt_gk_type_name(kt_gk_of(got)));
}

static size_t path_key(struct ctx *c, const char *key)
{
	size_t mark = c->path.len;

	if (mark)
		kt_sb_puts(&c->path, ".");
	kt_sb_puts(&c->path, key);
	return mark;
}

static size_t path_elem(struct ctx *c, const char *mk, const cJSON *v)
{
	size_t mark = c->path.len;

	kt_sb_puts(&c->path, "[");
	kt_sb_puts(&c->path, mk);
	kt_sb_puts(&c->path, "=");
	kt_go_fmt_v(&c->path, v);
	kt_sb_puts(&c->path, "]");
	return mark;
}

static void path_pop(struct ctx *c, size_t mark)
{
	kt_sb_trunc(&c->path, mark);
}

/* a copy of the scratch text that lives as long as the call */
static const char *keep_scratch(struct ctx *c)
{
	size_t n = c->scratch.len + 1;
	struct arena_blk *b = c->arena;

	if (c->scratch.oom || !c->scratch.buf)
		return NULL;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 65536 ? n : 65536;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = c->arena;
		b->used = 0;
		b->cap = cap;
		c->arena = b;
	}
	memcpy(b->data + b->used, c->scratch.buf, n);
	b->used += n;
	return b->data + b->used - n;
}

/* the identity string of a value, owned by the call */
static const char *ident(struct ctx *c, const cJSON *v)
{
	kt_sb_trunc(&c->scratch, 0);
	kt_go_ident(&c->scratch, v);
	return keep_scratch(c);
}

/* the %v text of a value, owned by the call */
static const char *vstr(struct ctx *c, const cJSON *v)
{
	kt_sb_trunc(&c->scratch, 0);
	kt_sb_puts(&c->scratch, "");
	kt_go_fmt_v(&c->scratch, v);
	return keep_scratch(c);
}

/* identity of a list item: its merge key's value for maps, itself otherwise;
 * *missing is set when a map lacks the key (Go then sees nil) */
static const char *item_ident(struct ctx *c, const cJSON *item, const char *mk,
			      bool *missing)
{
	const cJSON *v = item;

	if (missing)
		*missing = false;
	if (*mk) {
		v = cJSON_IsObject(item) ? cJSON_GetObjectItemCaseSensitive(item, mk)
					 : NULL;
		if (!v && missing)
			*missing = true;
	}
	return ident(c, v);
}

/* ------------------------------------------------------------- vectors */

static int vec_push(struct vec *v, cJSON *item)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		cJSON **n = realloc(v->v, cap * sizeof(*n));

		if (!n)
			return -1;
		v->v = n;
		v->cap = cap;
	}
	v->v[v->n++] = item;
	return 0;
}

/* moves every element of arr into v (arr is left empty and freed) */
static int vec_take_array(struct vec *v, cJSON *arr)
{
	cJSON *c = arr ? arr->child : NULL, *next;
	int rc = 0;

	if (arr)
		arr->child = NULL;
	for (; c; c = next) {
		next = c->next;
		c->next = c->prev = NULL;
		if (rc == 0 && vec_push(v, c) < 0)
			rc = -1;
		if (rc < 0)
			cJSON_Delete(c);
	}
	cJSON_Delete(arr);
	return rc;
}

static void vec_release(struct vec *v)
{
	for (size_t i = 0; i < v->n; i++)
		cJSON_Delete(v->v[i]);
	free(v->v);
	*v = (struct vec){ 0 };
}

/* a new array holding the items (the vector is emptied) */
static cJSON *vec_to_array(struct vec *v)
{
	cJSON *arr = cJSON_CreateArray();

	if (!arr) {
		vec_release(v);
		return NULL;
	}
	for (size_t i = 0; i < v->n; i++) {
		cJSON *it = v->v[i];

		if (it->string && !(it->type & cJSON_StringIsConst))
			free(it->string);
		it->string = NULL;
		it->type &= ~cJSON_StringIsConst;
		it->next = i + 1 < v->n ? v->v[i + 1] : NULL;
		it->prev = i ? v->v[i - 1] : v->v[v->n - 1];
	}
	arr->child = v->n ? v->v[0] : NULL;
	free(v->v);
	*v = (struct vec){ 0 };
	return arr;
}

/* --------------------------------------------------------- object index */

/* objects are looked up by key many times; big ones get a hash */
struct oidx {
	cJSON *obj;
	struct kt_hmap h;
	bool hashed;
};

static int oidx_init(struct oidx *x, const cJSON *obj)
{
	size_t n = 0;

	*x = (struct oidx){ .obj = (cJSON *)obj };
	for (const cJSON *c = obj->child; c; c = c->next)
		n++;
	if (n <= 16)
		return 0;
	x->hashed = true;
	x->h.own_keys = true;
	for (cJSON *c = obj->child; c; c = c->next)
		if (kt_hmap_put_first(&x->h, c->string, c) < 0)
			return -1;
	return 0;
}

static cJSON *oidx_get(const struct oidx *x, const char *key)
{
	if (x->hashed)
		return kt_hmap_get(&x->h, key);
	return cJSON_GetObjectItemCaseSensitive(x->obj, key);
}

static void oidx_del(struct oidx *x, const char *key)
{
	cJSON *it = oidx_get(x, key);

	if (!it)
		return;
	if (x->hashed)
		kt_hmap_put(&x->h, key, NULL);
	cJSON_Delete(cJSON_DetachItemViaPointer(x->obj, it));
}

/*
 * Hands key's value to the caller, leaving a null in its place so that the
 * value set back later keeps the key's position (output keeps input order).
 */
static cJSON *oidx_take(struct oidx *x, const char *key)
{
	cJSON *it = oidx_get(x, key), *hold;

	if (!it)
		return NULL;
	hold = cJSON_CreateNull();
	if (!hold)
		return NULL;
	hold->string = it->string;
	hold->type |= it->type & cJSON_StringIsConst;
	it->string = NULL;
	it->type &= ~cJSON_StringIsConst;
	/* splice hold into it's place; cJSON's replace would free it */
	hold->next = it->next;
	hold->prev = it->prev;
	if (it->next)
		it->next->prev = hold;
	else
		x->obj->child->prev = hold;
	if (x->obj->child == it) {
		x->obj->child = hold;
		if (!hold->next)
			hold->prev = hold;
	} else {
		it->prev->next = hold;
	}
	it->next = it->prev = NULL;
	if (x->hashed)
		kt_hmap_put(&x->h, key, hold);
	return it;
}

/* adopts item as obj[key], in place of an existing value; frees it on failure */
static int oidx_set(struct oidx *x, const char *key, cJSON *item)
{
	cJSON *old = oidx_get(x, key);
	char *k = strdup(key);

	if (!k || !item) {
		free(k);
		cJSON_Delete(item);
		return -1;
	}
	if (item->string && !(item->type & cJSON_StringIsConst))
		free(item->string);
	item->type &= ~cJSON_StringIsConst;
	item->string = k;
	if (old) {
		cJSON_ReplaceItemViaPointer(x->obj, old, item);
	} else if (x->obj->child) {
		cJSON *last = x->obj->child->prev;

		last->next = item;
		item->prev = last;
		item->next = NULL;
		x->obj->child->prev = item;
	} else {
		x->obj->child = item;
		item->prev = item;
		item->next = NULL;
	}
	if (x->hashed && kt_hmap_put(&x->h, key, item) < 0)
		return -1;
	return 0;
}

static void oidx_release(struct oidx *x)
{
	kt_hmap_release(&x->h);
}

static int cmp_child(const void *a, const void *b)
{
	return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* the children of an object sorted by key (for deterministic processing) */
static cJSON **sorted_kids(const cJSON *obj, size_t *n)
{
	cJSON **v;
	size_t i = 0;

	*n = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		(*n)++;
	v = malloc((*n ? *n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (cJSON *c = obj->child; c; c = c->next)
		v[i++] = c;
	qsort(v, *n, sizeof(*v), cmp_child);
	return v;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "$setElementOrder/f" -> "f"; NULL when the key is malformed */
static const char *extract_key(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) != 0 || s[n] != '/')
		return NULL;
	return s + n + 1;
}

/* ------------------------------------------------------------ strategies */

struct strategy {
	bool retain_keys;
	const char *name; /* "", "merge", "replace", ... */
	char buf[64];
};

/* upstream prints the split strategy as a Go []string: [a b] */
static int bad_strategy(struct ctx *c, const char *text)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *p = buf; *p; p++)
		if (*p == ',')
			*p = ' ';
	return fail(c, "unexpected patch strategy: [%s]", buf);
}

/* "merge,retainKeys" -> merge + the retainKeys flag, as upstream splits it */
static int parse_strategy(struct ctx *c, const char *text, struct strategy *st)
{
	const char *comma = strchr(text, ',');
	char a[64], b[64];

	st->retain_keys = false;
	st->name = "";
	if (!*text)
		return 0;
	if (!comma) {
		if (strcmp(text, "retainKeys") == 0)
			st->retain_keys = true;
		else
			st->name = text;
		return 0;
	}
	if (strchr(comma + 1, ',') || (size_t)(comma - text) >= sizeof(a) ||
	    strlen(comma + 1) >= sizeof(b))
		return bad_strategy(c, text);
	memcpy(a, text, (size_t)(comma - text));
	a[comma - text] = '\0';
	snprintf(b, sizeof(b), "%s", comma + 1);
	if (strcmp(a, "retainKeys") == 0)
		snprintf(st->buf, sizeof(st->buf), "%s", b);
	else if (strcmp(b, "retainKeys") == 0)
		snprintf(st->buf, sizeof(st->buf), "%s", a);
	else
		return bad_strategy(c, text);
	st->retain_keys = true;
	st->name = st->buf;
	return 0;
}

/* -v 4 shows each field the schema was asked about and its answer */
static void log_meta(const struct ctx *c, const struct kt_schema_meta *meta)
{
	KT_V(4, "smp field", "path=\"%s\" strategy=\"%s\" mergeKey=\"%s\"",
	     kt_sb_str(&c->path), meta->strategy, meta->merge_key);
}

/* schema lookup plus strategy parsing; errors carry the path */
static int lookup(struct ctx *c, const struct kt_schema_node *node, const char *key,
		  bool as_list, struct kt_schema_meta *meta, struct strategy *st)
{
	struct kt_err e = { 0 };

	if (kt_schema_lookup(node, key, as_list, meta, &e) < 0)
		return fail_err(c, &e);
	if (parse_strategy(c, meta->strategy, st) < 0)
		return -1;
	log_meta(c, meta);
	return 0;
}

/* ------------------------------------------------------- element types */

static char *list_text(cJSON *const *v, size_t n)
{
	struct kt_sb sb = { 0 };

	kt_sb_puts(&sb, "[");
	for (size_t i = 0; i < n && sb.len < 200; i++) {
		kt_sb_puts(&sb, i ? " " : "");
		kt_go_fmt_v(&sb, v[i]);
	}
	kt_sb_puts(&sb, "]");
	if (sb.oom) {
		kt_sb_release(&sb);
		return NULL;
	}
	return sb.buf;
}

/* sliceElementType: the one Go type every element of both lists has */
static int elem_kind_v(struct ctx *c, cJSON *const *a, size_t na, cJSON *const *b,
		       size_t nb, enum kt_gk *kind)
{
	bool seen = false;

	for (size_t i = 0; i < na + nb; i++) {
		enum kt_gk k = kt_gk_of(i < na ? a[i] : b[i - na]);

		if (!seen) {
			if (k == KT_GK_SLICE)
				return fail(c, "lists of lists are not supported");
			*kind = k;
			seen = true;
		} else if (k != *kind) {
			char *ta = list_text(a, na), *tb = list_text(b, nb);

			fail(c, "list element types are not identical: [%s %s]",
			     ta ? ta : "", tb ? tb : "");
			free(ta);
			free(tb);
			return -1;
		}
	}
	if (!seen)
		return fail(c, "no elements in any of the given slices");
	return 0;
}

/* the children of an array as a borrowed vector (free the array only) */
static cJSON **kids_of(const cJSON *arr, size_t *n)
{
	cJSON **v;
	size_t i = 0;

	*n = 0;
	for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next)
		(*n)++;
	v = malloc((*n ? *n : 1) * sizeof(*v));
	for (cJSON *e = arr ? arr->child : NULL; v && e; e = e->next)
		v[i++] = e;
	return v;
}

static int elem_kind(struct ctx *c, const cJSON *a, const cJSON *b, enum kt_gk *kind)
{
	size_t na, nb;
	cJSON **va = kids_of(a, &na), **vb = kids_of(b, &nb);
	int rc = va && vb ? elem_kind_v(c, va, na, vb, nb, kind) : oom(c);

	free(va);
	free(vb);
	return rc;
}

/* --------------------------------------------------- patch clean-up */

/* removeDirectives: false when v itself is a map carrying $patch */
static bool remove_directives(cJSON *v)
{
	cJSON *e, *next;

	if (cJSON_IsObject(v) && cJSON_GetObjectItemCaseSensitive(v, DIRECTIVE))
		return false;
	if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
		return true;
	for (e = v->child; e; e = next) {
		next = e->next;
		if (!remove_directives(e))
			cJSON_Delete(cJSON_DetachItemViaPointer(v, e));
	}
	return true;
}

/* discardNullValuesFromPatch: null members of maps go, at any depth */
static void discard_nulls(cJSON *v)
{
	cJSON *e, *next;

	if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
		return;
	for (e = v->child; e; e = next) {
		next = e->next;
		if (cJSON_IsObject(v) && cJSON_IsNull(e))
			cJSON_Delete(cJSON_DetachItemViaPointer(v, e));
		else
			discard_nulls(e);
	}
}

/* ------------------------------------------------------------ ordering */

/* index of each entry in an order given as identities (first occurrence) */
static int index_ids(struct kt_hmap *h, const char *const *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kt_hmap_put_first(h, ids[i], (void *)(i + 1)) < 0)
			return -1;
	return 0;
}

static long pos_of(const struct kt_hmap *h, const char *id)
{
	void *p = id ? kt_hmap_get(h, id) : NULL;

	return p ? (long)((size_t)p - 1) : -1;
}

static bool less_idx(void *a, void *b, void *ctx)
{
	const struct ent *x = a, *y = b;

	(void)ctx;
	if (x->idx >= 0 && y->idx >= 0)
		return x->idx < y->idx;
	return true;
}

/* normalizeSliceOrder: stable sort by position in the order; deletes last */
static int sort_by_order(struct ent **v, size_t n, const struct kt_hmap *order, bool maps)
{
	size_t keep = 0, nd = 0;
	struct ent **dels = NULL;

	for (size_t i = 0; i < n; i++)
		v[i]->idx = pos_of(order, v[i]->id);
	if (maps) {
		dels = malloc((n ? n : 1) * sizeof(*dels));
		if (!dels)
			return -1;
		for (size_t i = 0; i < n; i++) {
			const char *d = kt_json_get_string(v[i]->item, DIRECTIVE);

			if (d && strcmp(d, "delete") == 0)
				dels[nd++] = v[i];
			else
				v[keep++] = v[i];
		}
	} else {
		keep = n;
	}
	kt_go_stable_sort((void **)v, keep, less_idx, NULL);
	for (size_t i = 0; i < nd; i++)
		v[keep + i] = dels[i];
	free(dels);
	return 0;
}

/*
 * normalizeElementOrder + mergeSortedSlice: patch items in the patch's (or
 * $setElementOrder's) order, server-only items in server order, interleaved
 * where the server order places them.  Items move from the entries to out.
 */
static int order_items(struct ctx *c, struct ent **pat, size_t np, struct ent **srv,
		       size_t ns, const struct kt_hmap *patch_order,
		       const struct kt_hmap *server_order, bool maps, struct vec *out)
{
	size_t i = 0, j = 0;

	if (sort_by_order(pat, np, patch_order, maps) < 0 ||
	    sort_by_order(srv, ns, server_order, maps) < 0)
		return oom(c);
	for (size_t k = 0; k < np; k++)
		pat[k]->sidx = pos_of(server_order, pat[k]->id);
	for (size_t k = 0; k < ns; k++)
		srv[k]->sidx = pos_of(server_order, srv[k]->id);
	while (i < ns || j < np) {
		struct ent *e;

		if (i >= ns)
			e = pat[j++];
		else if (j >= np)
			e = srv[i++];
		else if (srv[i]->sidx >= 0 && pat[j]->sidx >= 0 &&
			 srv[i]->sidx < pat[j]->sidx)
			e = srv[i++];
		else
			e = pat[j++];
		out->v[out->n++] = e->item;
	}
	return 0;
}

/* ------------------------------------------------------------- apply */

static cJSON *merge_map(struct ctx *c, cJSON *orig, cJSON *patch,
			const struct kt_schema_node *node, struct mopts o);

/* the identities of list items; for the index a missing key reads as nil */
static int idents_of(struct ctx *c, struct vec *v, const char *mk, const char ***ids)
{
	*ids = malloc((v->n ? v->n : 1) * sizeof(**ids));
	if (!*ids)
		return oom(c);
	for (size_t i = 0; i < v->n; i++) {
		(*ids)[i] = item_ident(c, v->v[i], mk, NULL);
		if (!(*ids)[i])
			return oom(c);
	}
	return 0;
}

static int vec_reserve(struct vec *v, size_t more)
{
	if (v->n + more <= v->cap)
		return 0;
	size_t cap = v->n + more;
	cJSON **n = realloc(v->v, cap * sizeof(*n));

	if (!n)
		return -1;
	v->v = n;
	v->cap = cap;
	return 0;
}

/*
 * Partitions merged items by presence in a list of identities, then orders
 * them.  On success the items have moved to out and merged is empty; on
 * failure merged still owns every item.
 */
static int partition_and_order(struct ctx *c, struct vec *merged, const char *mk,
			       const char *const *pids, size_t npids,
			       const char *const *sids, size_t nsids, bool maps,
			       struct vec *out)
{
	struct kt_hmap ph = { 0 }, sh = { 0 };
	size_t n = merged->n, np = 0, ns = 0;
	struct ent *ents = calloc(n ? n : 1, sizeof(*ents));
	struct ent **pat = malloc((n ? n : 1) * sizeof(*pat));
	struct ent **srv = malloc((n ? n : 1) * sizeof(*srv));
	int rc = -1;

	if (!ents || !pat || !srv || index_ids(&ph, pids, npids) < 0 ||
	    index_ids(&sh, sids, nsids) < 0 || vec_reserve(out, n) < 0) {
		oom(c);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *it = merged->v[i];
		bool missing = false;

		if (*mk && !cJSON_IsObject(it)) {
			fail_bad_type(c, KT_GK_MAP, it);
			goto out;
		}
		ents[i].item = it;
		ents[i].id = item_ident(c, it, mk, &missing);
		if (!ents[i].id) {
			oom(c);
			goto out;
		}
		if (missing) {
			fail_no_merge_key(c, it, mk);
			goto out;
		}
		if (kt_hmap_has(&ph, ents[i].id))
			pat[np++] = &ents[i];
		else
			srv[ns++] = &ents[i];
	}
	if (order_items(c, pat, np, srv, ns, &ph, &sh, maps, out) < 0)
		goto out;
	merged->n = 0;
	rc = 0;
out:
	kt_hmap_release(&ph);
	kt_hmap_release(&sh);
	free(ents);
	free(pat);
	free(srv);
	return rc;
}

/*
 * The server order mergePatchIntoOriginal uses is upstream's live slice
 * viewed at its original length after mergeSlice changed it in place:
 * deletions shift items left (the old last item stays behind in the freed
 * slot) and new items are appended into those slots.  view[] records that.
 */
struct view {
	const char **ids;
	size_t n;   /* the original length */
	size_t len; /* the live length while simulating */
};

struct listmerge {
	const char *mk;
	const struct kt_schema_node *elem;
	struct mopts o;
	bool delete_list;
	struct view *view; /* NULL when the caller does not need it */
};

static int merge_scalars(struct ctx *c, struct vec *orig, struct vec *patch,
			 const struct listmerge *lm, struct vec *out)
{
	const char **oids = NULL, **pids = NULL;
	struct kt_hmap seen = { 0 }, del = { 0 };
	struct vec merged = { 0 };
	int rc = -1;

	if (idents_of(c, orig, "", &oids) < 0 || idents_of(c, patch, "", &pids) < 0)
		goto out;
	if (lm->view) {
		for (size_t i = 0; i < orig->n && i < lm->view->n; i++)
			lm->view->ids[i] = oids[i];
	}
	if (lm->o.parallel && lm->delete_list) {
		if (index_ids(&del, pids, patch->n) < 0) {
			oom(c);
			goto out;
		}
		for (size_t i = 0; i < orig->n; i++) {
			if (kt_hmap_has(&del, oids[i])) {
				cJSON_Delete(orig->v[i]);
			} else if (vec_push(out, orig->v[i]) < 0) {
				cJSON_Delete(orig->v[i]);
				oom(c);
				goto out;
			}
			orig->v[i] = NULL;
		}
		rc = 0;
		goto out;
	}
	/* deduplicate orig ++ patch; the order is rebuilt below */
	for (size_t k = 0; k < 2; k++) {
		struct vec *src = k ? patch : orig;
		const char **ids = k ? pids : oids;

		for (size_t i = 0; i < src->n; i++) {
			cJSON *it = src->v[i];

			src->v[i] = NULL;
			if (kt_hmap_has(&seen, ids[i])) {
				cJSON_Delete(it);
				continue;
			}
			if (kt_hmap_put(&seen, ids[i], it) < 0 ||
			    vec_push(&merged, it) < 0) {
				cJSON_Delete(it);
				oom(c);
				goto out;
			}
		}
	}
	rc = partition_and_order(c, &merged, "", pids, patch->n, oids, orig->n, false,
				 out);
out:
	vec_release(&merged);
	kt_hmap_release(&seen);
	kt_hmap_release(&del);
	free(oids);
	free(pids);
	return rc;
}

/* the special elements ($patch) of a map merge list: deletes, replace */
static int special_elems(struct ctx *c, struct vec *patch, const char *mk,
			 struct vec *plain, struct vec *dels, bool *replace)
{
	*replace = false;
	for (size_t i = 0; i < patch->n; i++) {
		cJSON *it = patch->v[i];
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(it, DIRECTIVE);
		const char *ds = cJSON_IsString(d) ? d->valuestring : NULL;
		char *t;

		if (!d) {
			if (vec_push(plain, it) < 0)
				return oom(c);
			patch->v[i] = NULL;
			continue;
		}
		if (ds && strcmp(ds, "delete") == 0) {
			if (!cJSON_GetObjectItemCaseSensitive(it, mk))
				return fail_no_merge_key(c, it, mk);
			if (vec_push(dels, it) < 0)
				return oom(c);
			patch->v[i] = NULL;
		} else if (ds && strcmp(ds, "replace") == 0) {
			*replace = true;
		} else if (ds && strcmp(ds, "merge") == 0) {
			return fail(c,
				    "merging lists cannot yet be specified in the patch");
		} else {
			char *dt = vtext(d);

			t = vtext(it);
			fail(c, "unknown patch type: %s in map: %s", dt ? dt : "",
			     t ? t : "");
			free(dt);
			free(t);
			return -1;
		}
	}
	return 0;
}

/*
 * Deletes every orig item whose merge key equals a delete item's, in the
 * order upstream does it, while recording what the live slice looks like
 * (see struct view).  Survivors are compacted to the front of orig.
 */
static int apply_deletes(struct ctx *c, struct vec *orig, const char **oids,
			 bool *omissing, struct vec *dels, const char *mk,
			 struct view *view)
{
	struct kt_hmap first = { 0 };
	size_t *next = NULL, n = orig->n, len = n, keep = 0;
	bool *dead = NULL;
	long last = (long)n - 1;
	int rc = -1;

	if (!dels->n)
		return 0;
	next = malloc((n ? n : 1) * sizeof(*next));
	dead = calloc(n ? n : 1, sizeof(*dead));
	if (!next || !dead) {
		oom(c);
		goto out;
	}
	/* chains of equal keys, so each delete finds its matches directly */
	for (size_t i = n; i-- > 0;) {
		next[i] = SIZE_MAX;
		if (omissing[i])
			continue;
		void *p = kt_hmap_get(&first, oids[i]);

		next[i] = p ? (size_t)p - 1 : SIZE_MAX;
		if (kt_hmap_put(&first, oids[i], (void *)(i + 1)) < 0) {
			oom(c);
			goto out;
		}
	}
	for (size_t d = 0; d < dels->n; d++) {
		const char *id =
			ident(c, cJSON_GetObjectItemCaseSensitive(dels->v[d], mk));
		void *p;

		if (!id) {
			oom(c);
			goto out;
		}
		p = kt_hmap_get(&first, id);
		for (size_t i = p ? (size_t)p - 1 : SIZE_MAX; i != SIZE_MAX;
		     i = next[i]) {
			if (dead[i])
				continue;
			if (view && len - 1 < view->n && last >= 0)
				view->ids[len - 1] = oids[last];
			dead[i] = true;
			len--;
			while (last >= 0 && dead[last])
				last--;
		}
		if (kt_hmap_put(&first, id, NULL) < 0) {
			oom(c);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (dead[i]) {
			cJSON_Delete(orig->v[i]);
			continue;
		}
		oids[keep] = oids[i];
		omissing[keep] = omissing[i];
		orig->v[keep++] = orig->v[i];
	}
	orig->n = keep;
	if (view) {
		for (size_t i = 0; i < keep && i < view->n; i++)
			view->ids[i] = oids[i];
		view->len = keep;
	}
	rc = 0;
out:
	kt_hmap_release(&first);
	free(next);
	free(dead);
	return rc;
}

/* mergeSliceWithoutSpecialElements: merge by key into the first match, else append */
static int merge_plain(struct ctx *c, struct vec *list, const char **lids, size_t nlids,
		       struct vec *plain, const struct listmerge *lm)
{
	struct kt_hmap at = { 0 };
	int rc = -1;

	for (size_t i = 0; i < nlids; i++)
		if (lids[i] && kt_hmap_put_first(&at, lids[i], (void *)(i + 1)) < 0) {
			oom(c);
			goto out;
		}
	for (size_t i = 0; i < plain->n; i++) {
		cJSON *it = plain->v[i];
		const cJSON *kv = cJSON_GetObjectItemCaseSensitive(it, lm->mk);
		const char *id;
		void *p;

		if (!kv) {
			fail_no_merge_key(c, it, lm->mk);
			goto out;
		}
		id = ident(c, kv);
		if (!id) {
			oom(c);
			goto out;
		}
		p = kt_hmap_get(&at, id);
		plain->v[i] = NULL;
		if (p) {
			size_t k = (size_t)p - 1, mark = path_elem(c, lm->mk, kv);

			list->v[k] = merge_map(c, list->v[k], it, lm->elem, lm->o);
			path_pop(c, mark);
			if (!list->v[k])
				goto out;
			continue;
		}
		if (vec_push(list, it) < 0) {
			cJSON_Delete(it);
			oom(c);
			goto out;
		}
		if (kt_hmap_put(&at, id, (void *)list->n) < 0) {
			oom(c);
			goto out;
		}
		if (lm->view && lm->view->len < lm->view->n)
			lm->view->ids[lm->view->len++] = id;
	}
	rc = 0;
out:
	kt_hmap_release(&at);
	return rc;
}

static int merge_maps_list(struct ctx *c, struct vec *orig, struct vec *patch,
			   const struct listmerge *lm, struct vec *out)
{
	struct vec plain = { 0 }, dels = { 0 };
	const char **oids = NULL, **pids = NULL, **lids = NULL;
	bool *omissing = NULL, replace = false;
	size_t nserver, nplain;
	int rc = -1;

	if (!*lm->mk) {
		const char *nm = kt_schema_node_name(lm->elem);

		fail(c, "cannot merge lists without merge key for %s",
		     *nm ? nm : "type map");
		goto out;
	}
	oids = malloc((orig->n ? orig->n : 1) * sizeof(*oids));
	omissing = malloc((orig->n ? orig->n : 1) * sizeof(*omissing));
	if (!oids || !omissing) {
		oom(c);
		goto out;
	}
	for (size_t i = 0; i < orig->n; i++) {
		oids[i] = item_ident(c, orig->v[i], lm->mk, &omissing[i]);
		if (!oids[i]) {
			oom(c);
			goto out;
		}
	}
	if (lm->view) {
		for (size_t i = 0; i < orig->n && i < lm->view->n; i++)
			lm->view->ids[i] = oids[i];
		lm->view->len = orig->n;
	}
	if (special_elems(c, patch, lm->mk, &plain, &dels, &replace) < 0 ||
	    apply_deletes(c, orig, oids, omissing, &dels, lm->mk, lm->view) < 0)
		goto out;
	if (replace) {
		/* the patch's plain items are the list; all must carry the key */
		for (size_t i = 0; i < plain.n; i++)
			if (!cJSON_GetObjectItemCaseSensitive(plain.v[i], lm->mk)) {
				fail_no_merge_key(c, plain.v[i], lm->mk);
				goto out;
			}
		*out = plain;
		plain = (struct vec){ 0 };
		rc = 0;
		goto out;
	}
	/* the post-delete live list is this merge's server order (oids); items
	 * without the key never match a patch item (lids) */
	nserver = orig->n;
	nplain = plain.n;
	lids = malloc((nserver ? nserver : 1) * sizeof(*lids));
	if (!lids || idents_of(c, &plain, lm->mk, &pids) < 0) {
		oom(c);
		goto out;
	}
	for (size_t i = 0; i < nserver; i++)
		lids[i] = omissing[i] ? NULL : oids[i];
	if (merge_plain(c, orig, lids, nserver, &plain, lm) == 0)
		rc = partition_and_order(c, orig, lm->mk, pids, nplain, oids, nserver,
					 true, out);
out:
	vec_release(&plain);
	vec_release(&dels);
	free(oids);
	free(omissing);
	free(pids);
	free(lids);
	return rc;
}

/* mergeSlice: takes both vectors' items; out gets the merged list */
static int merge_slice(struct ctx *c, struct vec *orig, struct vec *patch,
		       const struct listmerge *lm, struct vec *out)
{
	enum kt_gk kind;

	if (!orig->n && !patch->n)
		return 0;
	if (elem_kind_v(c, orig->v, orig->n, patch->v, patch->n, &kind) < 0)
		return -1;
	if (kind != KT_GK_MAP)
		return merge_scalars(c, orig, patch, lm, out);
	return merge_maps_list(c, orig, patch, lm, out);
}

/* retainKeys in a map: honoured when applying, carried when merging patches */
static int apply_retain_keys(struct ctx *c, struct oidx *ox, cJSON *patch, struct mopts o)
{
	cJSON *rk = cJSON_DetachItemFromObjectCaseSensitive(patch, RETAIN_KEYS);
	struct kt_hmap keep = { 0 };
	cJSON *e, *next;
	int rc = -1;

	if (!rk)
		return 0;
	if (!o.parallel) {
		cJSON *have = oidx_get(ox, RETAIN_KEYS);

		if (!have)
			return oidx_set(ox, RETAIN_KEYS, rk) < 0 ? oom(c) : 0;
		if (!kt_go_equal(have, rk)) {
			char *a = vtext(have), *b = vtext(rk);

			fail(c,
			     "%s and %s are not deep equal: this may happen when calculating "
			     "the 3-way diff patch",
			     a ? a : "", b ? b : "");
			free(a);
			free(b);
			goto out;
		}
		rc = 0;
		goto out;
	}
	if (!cJSON_IsArray(rk)) {
		fail(c, "invalid patch format of retainKeys");
		goto out;
	}
	for (e = rk->child; e; e = e->next)
		if (cJSON_IsString(e) && kt_hmap_put(&keep, e->valuestring, e) < 0) {
			oom(c);
			goto out;
		}
	for (e = patch->child; e; e = e->next) {
		if (cJSON_IsNull(e) || has_prefix(e->string, DEL_PREFIX) ||
		    has_prefix(e->string, ORDER_PREFIX))
			continue;
		if (!kt_hmap_has(&keep, e->string)) {
			fail(c, "invalid patch format of retainKeys");
			goto out;
		}
	}
	for (e = ox->obj->child; e; e = next) {
		next = e->next;
		if (!kt_hmap_has(&keep, e->string))
			oidx_del(ox, e->string);
	}
	rc = 0;
out:
	kt_hmap_release(&keep);
	cJSON_Delete(rk);
	return rc;
}

static bool is_delete_item(const cJSON *it)
{
	const char *d = kt_json_get_string(it, DIRECTIVE);

	return d && strcmp(d, "delete") == 0;
}

/* mergeKeyValueEqual */
static int key_equal(struct ctx *c, const cJSON *a, const cJSON *b, const char *mk,
		     bool *eq)
{
	const cJSON *x, *y;

	if (!*mk) {
		*eq = kt_go_equal(a, b);
		return 0;
	}
	if (!cJSON_IsObject(a))
		return fail_bad_type(c, KT_GK_MAP, a);
	if (!cJSON_IsObject(b))
		return fail_bad_type(c, KT_GK_MAP, b);
	x = cJSON_GetObjectItemCaseSensitive(a, mk);
	if (!x)
		return fail_no_merge_key(c, a, mk);
	y = cJSON_GetObjectItemCaseSensitive(b, mk);
	if (!y)
		return fail_no_merge_key(c, b, mk);
	*eq = kt_go_equal(x, y);
	return 0;
}

/* validatePatchWithSetOrderList: the patch list must follow the order */
static int check_order(struct ctx *c, const cJSON *plist, const cJSON *order,
		       const char *mk)
{
	size_t np, no, n = 0, pi = 0, si = 0;
	cJSON **pv = kids_of(plist, &np), **ov = kids_of(order, &no);
	int rc = -1;

	if (!pv || !ov) {
		oom(c);
		goto out;
	}
	if (!no || !np) {
		rc = 0;
		goto out;
	}
	/* the items that are not deletions, in patch order */
	for (size_t i = 0; i < np; i++) {
		if (*mk && !cJSON_IsObject(pv[i])) {
			fail_bad_type(c, KT_GK_MAP, pv[i]);
			goto out;
		}
		if (!*mk || !is_delete_item(pv[i]))
			pv[n++] = pv[i];
	}
	while (pi < n && si < no) {
		bool eq = false;

		if (cJSON_IsObject(pv[pi]) &&
		    cJSON_GetObjectItemCaseSensitive(pv[pi], DIRECTIVE)) {
			pi++;
			continue;
		}
		if (key_equal(c, pv[pi], ov[si], mk, &eq) < 0)
			goto out;
		if (eq)
			pi++;
		si++;
	}
	if (pi < n && si >= no) {
		char *a = vtext(plist), *b = vtext(order);

		fail(c, "The order in patch list: %s doesn't match %s list: %s",
		     a ? a : "", ORDER_PREFIX, b ? b : "");
		free(a);
		free(b);
		goto out;
	}
	rc = 0;
out:
	free(pv);
	free(ov);
	return rc;
}

/* partition by the $setElementOrder list, then place by it and the view */
static int order_by_list(struct ctx *c, struct vec *merged, const cJSON *order,
			 const char *mk, const struct view *view, bool maps,
			 struct vec *out)
{
	size_t n = 0, k = 0;
	const char **oids;
	int rc;

	for (const cJSON *e = order->child; e; e = e->next)
		n++;
	oids = malloc((n ? n : 1) * sizeof(*oids));
	if (!oids)
		return oom(c);
	for (const cJSON *e = order->child; e; e = e->next) {
		if (*mk && !cJSON_IsObject(e)) {
			free(oids);
			return fail(c, "value for key %zu is not a map", k);
		}
		oids[k] = item_ident(c, e, mk, NULL);
		if (!oids[k++]) {
			free(oids);
			return oom(c);
		}
	}
	rc = partition_and_order(c, merged, mk, oids, n, view->ids, view->n, maps, out);
	free(oids);
	return rc;
}

/* the list named f after the directive: orig only, patch only, or merged */
static int order_source(struct ctx *c, struct vec *ov, struct vec *pv, bool found_o,
			bool found_p, const struct kt_schema_meta *meta,
			const char *strategy, struct mopts o, struct view *view,
			struct vec *merged)
{
	if (found_o && found_p && strcmp(strategy, "merge") == 0) {
		struct listmerge lm = { meta->merge_key, meta->sub, o, false, view };

		return merge_slice(c, ov, pv, &lm, merged);
	}
	if (!found_p) {
		*merged = *ov;
		*ov = (struct vec){ 0 };
		return 0;
	}
	for (size_t i = 0; i < pv->n; i++) {
		cJSON *it = pv->v[i];

		pv->v[i] = NULL;
		if (!found_o && !remove_directives(it)) {
			cJSON_Delete(it);
			continue;
		}
		if (vec_push(merged, it) < 0) {
			cJSON_Delete(it);
			return oom(c);
		}
	}
	pv->n = 0;
	return 0;
}

/* the $setElementOrder/<f> directive of mergePatchIntoOriginal, in a field path */
static int set_order_field(struct ctx *c, struct oidx *ox, cJSON *patch,
			   const cJSON *order, const char *f,
			   const struct kt_schema_node *node, struct mopts o)
{
	cJSON *olist = oidx_get(ox, f),
	      *plist = cJSON_GetObjectItemCaseSensitive(patch, f);
	struct vec ov = { 0 }, pv = { 0 }, merged = { 0 }, sorted = { 0 };
	struct kt_err kind_err = { 0 };
	struct ctx kc = { .err = &kind_err };
	struct kt_schema_meta meta;
	struct view view = { 0 };
	enum kt_gk kind = KT_GK_NULL;
	struct strategy st;
	bool kind_ok, found_o = olist, found_p = plist;
	cJSON *res;
	int rc = -1;

	if ((olist && !cJSON_IsArray(olist)) || (plist && !cJSON_IsArray(plist)))
		return fail_bad_type(c, KT_GK_SLICE,
				     olist && !cJSON_IsArray(olist) ? olist : plist);
	if (lookup(c, node, f, true, &meta, &st) < 0 ||
	    check_order(c, plist, order, meta.merge_key) < 0)
		return -1;
	if (!olist && !plist)
		return 0;
	/* upstream takes the element type from the lists as they came in */
	kind_ok = elem_kind(&kc, olist, plist, &kind) == 0;
	if (vec_take_array(&ov, olist ? oidx_take(ox, f) : NULL) < 0 ||
	    vec_take_array(&pv, plist ? cJSON_DetachItemViaPointer(patch, plist) : NULL) <
		    0) {
		oom(c);
		goto out;
	}
	view.n = ov.n;
	view.ids = calloc(ov.n ? ov.n : 1, sizeof(*view.ids));
	if (!view.ids) {
		oom(c);
		goto out;
	}
	for (size_t i = 0; i < ov.n; i++) {
		view.ids[i] = item_ident(c, ov.v[i],
					 kind == KT_GK_MAP ? meta.merge_key : "", NULL);
		if (!view.ids[i]) {
			oom(c);
			goto out;
		}
	}
	if (order_source(c, &ov, &pv, found_o, found_p, &meta, st.name, o, &view,
			 &merged) < 0)
		goto out;
	if (!kind_ok) {
		fail(c, "%s", kind_err.msg);
		goto out;
	}
	if (order_by_list(c, &merged, order, meta.merge_key, &view, kind == KT_GK_MAP,
			  &sorted) < 0)
		goto out;
	res = vec_to_array(&sorted);
	if (!res || oidx_set(ox, f, res) < 0) {
		oom(c);
		goto out;
	}
	rc = 0;
out:
	ctx_release(&kc);
	free(view.ids);
	vec_release(&ov);
	vec_release(&pv);
	vec_release(&merged);
	vec_release(&sorted);
	return rc;
}

static int set_element_order(struct ctx *c, struct oidx *ox, cJSON *patch,
			     const char *key, const struct kt_schema_node *node,
			     struct mopts o)
{
	cJSON *order = cJSON_DetachItemFromObjectCaseSensitive(patch, key);
	const char *f = extract_key(key, ORDER_PREFIX);
	size_t mark = path_key(c, key);
	int rc = -1;

	if (!order) {
		rc = 0;
		goto out;
	}
	if (!o.parallel) {
		cJSON *have = oidx_get(ox, key);

		if (have && !kt_go_equal(have, order)) {
			fail(c, "invalid patch format of setElementOrder list");
			goto out;
		}
		if (!have && oidx_set(ox, key, kt_json_dup(order)) < 0) {
			oom(c);
			goto out;
		}
	}
	if (!cJSON_IsArray(order)) {
		fail_bad_type(c, KT_GK_SLICE, order);
		goto out;
	}
	if (!f) {
		fail(c, "invalid patch format of setElementOrder list");
		goto out;
	}
	path_pop(c, mark);
	mark = path_key(c, f);
	rc = set_order_field(c, ox, patch, order, f, node, o);
out:
	path_pop(c, mark);
	cJSON_Delete(order);
	return rc;
}

static int set_element_orders(struct ctx *c, struct oidx *ox, cJSON *patch,
			      const struct kt_schema_node *node, struct mopts o)
{
	size_t n, m = 0;
	cJSON **kids = sorted_kids(patch, &n);
	char **keys = calloc(n ? n : 1, sizeof(*keys));
	int rc = 0;

	/* names first: handling one directive may remove other keys */
	for (size_t i = 0; kids && keys && i < n; i++) {
		if (!has_prefix(kids[i]->string, ORDER_PREFIX))
			continue;
		keys[m] = strdup(kids[i]->string);
		if (!keys[m++])
			rc = -1;
	}
	if (!kids || !keys || rc < 0)
		rc = oom(c);
	for (size_t i = 0; i < m && rc == 0; i++)
		rc = set_element_order(c, ox, patch, keys[i], node, o);
	for (size_t i = 0; keys && i < m; i++)
		free(keys[i]);
	free(keys);
	free(kids);
	return rc;
}

/* a patch value for a key the original lacks (or holds with another type) */
static int adopt_new(struct ctx *c, struct oidx *ox, const char *key, cJSON *pv,
		     struct mopts o)
{
	if (o.ignore_nulls)
		discard_nulls(pv);
	if (!remove_directives(pv)) {
		cJSON_Delete(pv);
		oidx_del(ox, key);
		return 0;
	}
	return oidx_set(ox, key, pv) < 0 ? oom(c) : 0;
}

static int merge_key(struct ctx *c, struct oidx *ox, const char *k, cJSON *pv,
		     const struct kt_schema_node *node, struct mopts o)
{
	struct kt_schema_meta meta;
	struct strategy st;
	bool del_list = false;
	const char *key = k;
	cJSON *ov, *res;

	if (has_prefix(k, DEL_PREFIX)) {
		const char *f = extract_key(k, DEL_PREFIX);

		if (!o.parallel)
			return oidx_set(ox, k, pv) < 0 ? oom(c) : 0;
		if (!f) {
			cJSON_Delete(pv);
			return fail(c, "invalid patch format of primitive list");
		}
		if (*f)
			key = f;
		del_list = true;
	}
	if (cJSON_IsNull(pv)) {
		oidx_del(ox, key);
		if (o.ignore_nulls) {
			cJSON_Delete(pv);
			return 0;
		}
	}
	ov = oidx_get(ox, key);
	if (!ov || kt_gk_of(ov) != kt_gk_of(pv)) {
		if (del_list) {
			cJSON_Delete(pv);
			return 0;
		}
		return adopt_new(c, ox, key, pv, o);
	}
	if (!cJSON_IsObject(ov) && !cJSON_IsArray(ov))
		return oidx_set(ox, key, pv) < 0 ? oom(c) : 0;
	if (lookup(c, node, key, cJSON_IsArray(ov), &meta, &st) < 0) {
		cJSON_Delete(pv);
		return -1;
	}
	if (cJSON_IsObject(ov)) {
		if (strcmp(st.name, "replace") == 0)
			return oidx_set(ox, key, pv) < 0 ? oom(c) : 0;
		res = merge_map(c, oidx_take(ox, key), pv, meta.sub, o);
		if (!res)
			return -1;
		return oidx_set(ox, key, res) < 0 ? oom(c) : 0;
	}
	if (strcmp(st.name, "merge") != 0 && !del_list)
		return oidx_set(ox, key, pv) < 0 ? oom(c) : 0;

	struct vec a = { 0 }, b = { 0 }, out = { 0 };
	struct listmerge lm = { meta.merge_key, meta.sub, o, del_list, NULL };
	int rc = -1;

	if (vec_take_array(&a, oidx_take(ox, key)) < 0 || vec_take_array(&b, pv) < 0) {
		oom(c);
	} else if (merge_slice(c, &a, &b, &lm, &out) == 0) {
		res = vec_to_array(&out);
		rc = res && oidx_set(ox, key, res) == 0 ? 0 : oom(c);
	}
	vec_release(&a);
	vec_release(&b);
	vec_release(&out);
	return rc;
}

/* mergeMap: takes orig (NULL: {}) and patch, returns the merged map or NULL */
static cJSON *merge_map(struct ctx *c, cJSON *orig, cJSON *patch,
			const struct kt_schema_node *node, struct mopts o)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(patch, DIRECTIVE);
	struct oidx ox = { 0 };
	cJSON **kids = NULL;
	size_t n = 0;
	int rc = -1;

	if (d) {
		const char *ds = cJSON_IsString(d) ? d->valuestring : "";

		if (strcmp(ds, "replace") == 0) {
			cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(patch,
									     DIRECTIVE));
			cJSON_Delete(orig);
			return patch;
		}
		if (strcmp(ds, "delete") == 0) {
			cJSON_Delete(orig);
			cJSON_Delete(patch);
			return cJSON_CreateObject();
		}
		char *dt = vtext(d), *t = vtext(patch);

		fail(c, "unknown patch type: %s in map: %s", dt ? dt : "", t ? t : "");
		free(dt);
		free(t);
		goto out;
	}
	if (!orig)
		orig = cJSON_CreateObject();
	if (!orig || oidx_init(&ox, orig) < 0) {
		oom(c);
		goto out;
	}
	if (apply_retain_keys(c, &ox, patch, o) < 0 ||
	    set_element_orders(c, &ox, patch, node, o) < 0)
		goto out;
	kids = sorted_kids(patch, &n);
	if (!kids) {
		oom(c);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *pv = cJSON_DetachItemViaPointer(patch, kids[i]);
		/* the key outlives pv, which the merge may free */
		char *k = strdup(pv->string);
		size_t mark;
		int r;

		if (!k) {
			cJSON_Delete(pv);
			oom(c);
			goto out;
		}
		mark = path_key(c, k);
		r = merge_key(c, &ox, k, pv, node, o);
		path_pop(c, mark);
		free(k);
		if (r < 0)
			goto out;
	}
	rc = 0;
out:
	free(kids);
	oidx_release(&ox);
	cJSON_Delete(patch);
	if (rc < 0) {
		cJSON_Delete(orig);
		return NULL;
	}
	return orig;
}

/* -------------------------------------------------------------- diff */

static cJSON *diff_maps(struct ctx *c, cJSON *orig, const cJSON *mod,
			const struct kt_schema_node *node, struct dopts d);

/* %v strings of the sort key, for upstream's string-ordered walks */
struct sitem {
	cJSON *item;
	const char *s;
	size_t pos;
};

static int cmp_sitem_rev_ties(const void *a, const void *b)
{
	const struct sitem *x = a, *y = b;
	int r = strcmp(x->s, y->s);

	/* upstream's comparator is <=, so equal keys come out reversed */
	if (r)
		return r;
	return x->pos < y->pos ? 1 : -1;
}

/* sorts items by %v of the merge key (or of the item); caller frees */
static struct sitem *sort_by_v(struct ctx *c, const cJSON *list, const char *mk,
			       size_t *n)
{
	struct sitem *v;
	size_t i = 0;

	*n = 0;
	for (const cJSON *e = list->child; e; e = e->next)
		(*n)++;
	v = calloc(*n ? *n : 1, sizeof(*v));
	if (!v)
		return NULL;
	for (cJSON *e = list->child; e; e = e->next, i++) {
		v[i].item = e;
		v[i].pos = i;
		v[i].s = vstr(c, *mk ? cJSON_GetObjectItemCaseSensitive(e, mk) : e);
		if (!v[i].s) {
			free(v);
			oom(c);
			return NULL;
		}
	}
	qsort(v, *n, sizeof(*v), cmp_sitem_rev_ties);
	return v;
}

static void free_sitems(struct sitem *v, size_t n)
{
	(void)n;
	free(v);
}

/*
 * Upstream sorts a primitive merge list of the original in place while
 * diffing (sortScalars on the caller's slice), and later comparisons see
 * the sorted list.  The working copy is sorted the same way.
 */
static int sort_scalars_in_place(struct ctx *c, cJSON *list)
{
	size_t n;
	struct sitem *v = sort_by_v(c, list, "", &n);
	struct vec tmp = { 0 };
	cJSON *arr;

	if (!v)
		return -1;
	list->child = NULL;
	for (size_t i = 0; i < n; i++) {
		v[i].item->next = v[i].item->prev = NULL;
		if (vec_push(&tmp, v[i].item) < 0) {
			free_sitems(v, n);
			return oom(c);
		}
	}
	free_sitems(v, n);
	arr = vec_to_array(&tmp);
	if (!arr)
		return oom(c);
	list->child = arr->child;
	arr->child = NULL;
	cJSON_Delete(arr);
	return 0;
}

/* drops later duplicates in linear time, for lists sorted afterwards */
static int dedup_any_order(struct ctx *c, struct vec *v)
{
	struct kt_hmap seen = { 0 };
	size_t keep = 0;
	int rc = 0;

	for (size_t i = 0; i < v->n && rc == 0; i++) {
		const char *id = ident(c, v->v[i]);

		if (!id) {
			rc = oom(c);
		} else if (kt_hmap_has(&seen, id)) {
			cJSON_Delete(v->v[i]);
			v->v[i] = NULL;
		} else if (kt_hmap_put(&seen, id, NULL) < 0) {
			rc = oom(c);
		}
	}
	for (size_t i = 0; i < v->n; i++)
		if (v->v[i])
			v->v[keep++] = v->v[i];
	v->n = keep;
	kt_hmap_release(&seen);
	return rc;
}

/* the swap-based de-duplication upstream uses (it changes the order) */
static int dedup_scalars(struct ctx *c, struct vec *v)
{
	struct kt_hmap seen = { 0 };
	bool dups = false;
	const char **ids = NULL;
	int rc = -1;

	if (idents_of(c, v, "", &ids) < 0)
		goto out;
	for (size_t i = 0; i < v->n && !dups; i++) {
		if (kt_hmap_has(&seen, ids[i]))
			dups = true;
		else if (kt_hmap_put(&seen, ids[i], NULL) < 0) {
			oom(c);
			goto out;
		}
	}
	if (dups) {
		size_t len = v->n - 1;

		for (size_t i = 0; v->n && i < len; i++) {
			for (size_t j = i + 1; j <= len; j++) {
				if (strcmp(ids[i], ids[j]) != 0)
					continue;
				cJSON_Delete(v->v[j]);
				v->v[j] = v->v[len];
				ids[j] = ids[len];
				len--;
				j--;
			}
		}
		v->n = len + 1;
	}
	rc = 0;
out:
	kt_hmap_release(&seen);
	free(ids);
	return rc;
}

static int diff_scalars(struct ctx *c, cJSON *orig, const cJSON *mod, struct dopts d,
			struct vec *add, struct vec *del)
{
	size_t no, nm, i = 0, j = 0;
	struct sitem *so = NULL, *sm = NULL;
	int rc = -1;

	if (sort_scalars_in_place(c, orig) < 0)
		return -1;
	so = sort_by_v(c, orig, "", &no);
	sm = so ? sort_by_v(c, mod, "", &nm) : NULL;
	if (!so || !sm)
		goto out;
	while (i < no || j < nm) {
		int r = i >= no ? 1 : j >= nm ? -1 : strcmp(so[i].s, sm[j].s);
		cJSON *dup;

		if (r == 0) {
			i++;
			j++;
			continue;
		}
		if (r > 0) {
			dup = d.no_changes ? NULL : kt_json_dup(sm[j].item);
			if (!d.no_changes && (!dup || vec_push(add, dup) < 0)) {
				oom(c);
				goto out;
			}
			j++;
		} else {
			dup = d.no_deletions ? NULL : kt_json_dup(so[i].item);
			if (!d.no_deletions && (!dup || vec_push(del, dup) < 0)) {
				oom(c);
				goto out;
			}
			i++;
		}
	}
	rc = dedup_scalars(c, del);
out:
	free_sitems(so, no);
	free_sitems(sm, nm);
	return rc;
}

static cJSON *delete_directive(const char *mk, const cJSON *v)
{
	cJSON *m = cJSON_CreateObject();

	if (!m || kt_json_set(m, mk, kt_json_dup(v)) < 0 ||
	    kt_json_set(m, DIRECTIVE, cJSON_CreateString("delete")) < 0) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

static int diff_map_items(struct ctx *c, cJSON *orig, const cJSON *mod, const char *mk,
			  const struct kt_schema_node *elem, struct dopts d,
			  struct vec *patch, struct vec *dels)
{
	size_t no = 0, nm = 0, i = 0, j = 0;
	struct sitem *so = sort_by_v(c, orig, mk, &no);
	struct sitem *sm = so ? sort_by_v(c, mod, mk, &nm) : NULL;
	int rc = -1;

	if (!so || !sm)
		goto out;
	for (size_t k = 0; k < no; k++)
		if (!cJSON_GetObjectItemCaseSensitive(so[k].item, mk)) {
			fail_no_merge_key(c, so[k].item, mk);
			goto out;
		}
	for (size_t k = 0; k < nm; k++)
		if (!cJSON_GetObjectItemCaseSensitive(sm[k].item, mk)) {
			fail_no_merge_key(c, sm[k].item, mk);
			goto out;
		}
	while (i < no || j < nm) {
		int r = i >= no ? 1 : j >= nm ? -1 : strcmp(so[i].s, sm[j].s);
		cJSON *x;

		if (r == 0) {
			const cJSON *kv =
				cJSON_GetObjectItemCaseSensitive(sm[j].item, mk);
			size_t mark = path_elem(c, mk, kv);

			x = diff_maps(c, so[i].item, sm[j].item, elem, d);
			path_pop(c, mark);
			if (!x)
				goto out;
			if (!x->child) {
				cJSON_Delete(x);
			} else if (kt_json_set(x, mk, kt_json_dup(kv)) < 0 ||
				   vec_push(patch, x) < 0) {
				cJSON_Delete(x);
				oom(c);
				goto out;
			}
			i++;
			j++;
		} else if (r > 0) {
			if (!d.no_changes) {
				x = kt_json_dup(sm[j].item);
				if (!x || vec_push(patch, x) < 0) {
					cJSON_Delete(x);
					oom(c);
					goto out;
				}
			}
			j++;
		} else {
			if (!d.no_deletions) {
				x = delete_directive(mk, cJSON_GetObjectItemCaseSensitive(
								 so[i].item, mk));
				if (!x || vec_push(dels, x) < 0) {
					cJSON_Delete(x);
					oom(c);
					goto out;
				}
			}
			i++;
		}
	}
	rc = 0;
out:
	free_sitems(so, no);
	free_sitems(sm, nm);
	return rc;
}

/* orders the patch list like modified (normalizeSliceOrder) */
static int order_like(struct ctx *c, struct vec *v, const cJSON *mod, const char *mk,
		      bool maps)
{
	struct kt_hmap h = { 0 };
	struct ent *ents = calloc(v->n ? v->n : 1, sizeof(*ents));
	struct ent **pv = malloc((v->n ? v->n : 1) * sizeof(*pv));
	size_t k = 0;
	int rc = -1;

	if (!ents || !pv) {
		oom(c);
		goto out;
	}
	for (const cJSON *e = mod->child; e; e = e->next, k++) {
		const char *id = item_ident(c, e, mk, NULL);

		if (!id || kt_hmap_put_first(&h, id, (void *)(k + 1)) < 0) {
			oom(c);
			goto out;
		}
	}
	for (size_t i = 0; i < v->n; i++) {
		ents[i].item = v->v[i];
		ents[i].id = item_ident(c, v->v[i], mk, NULL);
		if (!ents[i].id) {
			oom(c);
			goto out;
		}
		pv[i] = &ents[i];
	}
	if (sort_by_order(pv, v->n, &h, maps) < 0) {
		oom(c);
		goto out;
	}
	for (size_t i = 0; i < v->n; i++)
		v->v[i] = pv[i]->item;
	rc = 0;
out:
	kt_hmap_release(&h);
	free(ents);
	free(pv);
	return rc;
}

static bool order_same(const cJSON *a, const cJSON *b, const char *mk)
{
	const cJSON *x, *y;

	for (x = a->child, y = b->child; x && y; x = x->next, y = y->next) {
		const cJSON *kx = cJSON_GetObjectItemCaseSensitive(x, mk);
		const cJSON *ky = cJSON_GetObjectItemCaseSensitive(y, mk);

		if (!kx || !ky || kt_gk_of(kx) == KT_GK_MAP || !kt_go_equal(kx, ky))
			return false;
	}
	return !x && !y;
}

/* the $setElementOrder list of a map merge list: {mk: v} per modified item */
static cJSON *key_order(const cJSON *mod, const char *mk)
{
	cJSON *arr = cJSON_CreateArray();

	for (const cJSON *e = mod->child; arr && e; e = e->next) {
		cJSON *m = cJSON_CreateObject();

		if (!m ||
		    kt_json_set(m, mk,
				kt_json_dup(cJSON_GetObjectItemCaseSensitive(e, mk))) <
			    0 ||
		    kt_json_append(arr, m) < 0) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

static int set_vec(struct ctx *c, cJSON *patch, const char *prefix, const char *key,
		   struct vec *v)
{
	struct kt_sb k = { 0 };
	cJSON *arr;
	int rc;

	if (!v->n)
		return 0;
	if (prefix)
		kt_sb_printf(&k, "%s/%s", prefix, key);
	else
		kt_sb_puts(&k, key);
	arr = vec_to_array(v);
	rc = !k.oom && arr && kt_json_set(patch, kt_sb_str(&k), arr) == 0 ? 0 : oom(c);
	if (k.oom)
		cJSON_Delete(arr);
	kt_sb_release(&k);
	return rc;
}

/* diffLists for one merge list; results go straight into patch */
static int diff_lists(struct ctx *c, cJSON *orig, const cJSON *mod, const char *key,
		      const struct kt_schema_meta *meta, struct dopts d, cJSON *patch)
{
	struct vec add = { 0 }, del = { 0 };
	cJSON *order = NULL;
	enum kt_gk kind;
	int rc = -1;

	if (!orig->child) {
		if (!mod->child || d.no_changes)
			return 0;
		return kt_json_set(patch, key, kt_json_dup(mod)) < 0 ? oom(c) : 0;
	}
	if (elem_kind(c, orig, mod, &kind) < 0)
		return -1;
	if (kind == KT_GK_MAP) {
		bool same;

		if (diff_map_items(c, orig, mod, meta->merge_key, meta->sub, d, &add,
				   &del) < 0 ||
		    order_like(c, &add, mod, meta->merge_key, true) < 0)
			goto out;
		same = order_same(orig, mod, meta->merge_key);
		for (size_t i = 0; i < del.n; i++) {
			if (vec_push(&add, del.v[i]) < 0) {
				oom(c);
				goto out;
			}
			del.v[i] = NULL;
		}
		del.n = 0;
		if (d.order &&
		    ((!d.no_changes && (add.n || !same)) || (!d.no_deletions && add.n)) &&
		    mod->child) {
			order = key_order(mod, meta->merge_key);
			if (!order) {
				oom(c);
				goto out;
			}
		}
	} else {
		if (diff_scalars(c, orig, mod, d, &add, &del) < 0 ||
		    order_like(c, &add, mod, "", false) < 0)
			goto out;
		if (d.order && ((!d.no_deletions && del.n) ||
				(!d.no_changes && !kt_go_equal(orig, mod)))) {
			order = kt_json_dup(mod);
			if (!order) {
				oom(c);
				goto out;
			}
		}
	}
	if (set_vec(c, patch, NULL, key, &add) < 0 ||
	    set_vec(c, patch, DEL_PREFIX, key, &del) < 0)
		goto out;
	if (order && order->child) {
		struct kt_sb k = { 0 };

		kt_sb_printf(&k, "%s/%s", ORDER_PREFIX, key);
		if (k.oom || kt_json_set(patch, kt_sb_str(&k), order) < 0) {
			kt_sb_release(&k);
			order = NULL;
			oom(c);
			goto out;
		}
		kt_sb_release(&k);
		order = NULL;
	}
	rc = 0;
out:
	cJSON_Delete(order);
	vec_release(&add);
	vec_release(&del);
	return rc;
}

static int emit(struct ctx *c, cJSON *patch, const char *key, const cJSON *v)
{
	return kt_json_set(patch, key, kt_json_dup(v)) < 0 ? oom(c) : 0;
}

/* one key present on both sides */
static int diff_key(struct ctx *c, cJSON *ov, const cJSON *mv, const char *key,
		    const struct kt_schema_node *node, struct dopts d, cJSON *patch)
{
	struct kt_schema_meta meta;
	struct strategy st;
	struct kt_err e = { 0 };
	cJSON *sub;

	if (strcmp(key, DIRECTIVE) == 0) {
		if (!cJSON_IsString(ov) || !cJSON_IsString(mv))
			return fail(c, "invalid value for special key: %s", DIRECTIVE);
		if (strcmp(ov->valuestring, mv->valuestring) != 0)
			return emit(c, patch, key, mv);
		return 0;
	}
	if (kt_gk_of(ov) != kt_gk_of(mv))
		return d.no_changes ? 0 : emit(c, patch, key, mv);
	if (!cJSON_IsObject(ov) && !cJSON_IsArray(ov)) {
		if (d.no_changes || kt_go_equal(ov, mv))
			return 0;
		return emit(c, patch, key, mv);
	}
	if (kt_schema_lookup(node, key, cJSON_IsArray(ov), &meta, &e) < 0)
		return kt_go_equal(ov, mv) ? 0 : fail_err(c, &e);
	if (parse_strategy(c, meta.strategy, &st) < 0)
		return -1;
	log_meta(c, &meta);
	if (cJSON_IsObject(ov)) {
		if (strcmp(st.name, "replace") == 0)
			return d.no_changes ? 0 : emit(c, patch, key, mv);
		d.retain_keys = st.retain_keys;
		sub = diff_maps(c, ov, mv, meta.sub, d);
		if (!sub)
			return -1;
		if (!sub->child) {
			cJSON_Delete(sub);
			return 0;
		}
		return kt_json_set(patch, key, sub) < 0 ? oom(c) : 0;
	}
	if (strcmp(st.name, "merge") == 0) {
		d.retain_keys = st.retain_keys;
		return diff_lists(c, ov, mv, key, &meta, d, patch);
	}
	if (d.no_changes || kt_go_equal(ov, mv))
		return 0;
	return emit(c, patch, key, mv);
}

/* diffMaps: the patch from orig to mod (orig's primitive merge lists get sorted) */
static cJSON *diff_maps(struct ctx *c, cJSON *orig, const cJSON *mod,
			const struct kt_schema_node *node, struct dopts d)
{
	cJSON *patch = cJSON_CreateObject(), *retain = NULL;
	struct oidx ox = { 0 }, mx = { 0 };
	size_t n = 0;
	cJSON **kids = NULL;
	bool extra = false;
	int rc = -1;

	if (!patch || oidx_init(&ox, orig) < 0 || oidx_init(&mx, mod) < 0) {
		oom(c);
		goto out;
	}
	kids = sorted_kids(mod, &n);
	if (!kids || (d.retain_keys && !(retain = cJSON_CreateArray()))) {
		oom(c);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const cJSON *mv = kids[i];
		cJSON *ov = oidx_get(&ox, mv->string);
		size_t mark;
		int r;

		if (retain && !cJSON_IsNull(mv) &&
		    kt_json_append(retain, cJSON_CreateString(mv->string)) < 0) {
			oom(c);
			goto out;
		}
		if (!ov) {
			if (!d.no_changes && emit(c, patch, mv->string, mv) < 0)
				goto out;
			continue;
		}
		mark = path_key(c, mv->string);
		r = diff_key(c, ov, mv, mv->string, node, d, patch);
		path_pop(c, mark);
		if (r < 0)
			goto out;
	}
	for (const cJSON *e = orig->child; e; e = e->next) {
		if (oidx_get(&mx, e->string))
			continue;
		if (!cJSON_IsNull(e))
			extra = true;
		if (!d.no_deletions &&
		    kt_json_set(patch, e->string, cJSON_CreateNull()) < 0) {
			oom(c);
			goto out;
		}
	}
	if (retain && retain->child && (patch->child || extra)) {
		if (kt_json_set(patch, RETAIN_KEYS, retain) < 0) {
			retain = NULL;
			oom(c);
			goto out;
		}
		retain = NULL;
	}
	rc = 0;
out:
	free(kids);
	cJSON_Delete(retain);
	oidx_release(&ox);
	oidx_release(&mx);
	if (rc < 0) {
		cJSON_Delete(patch);
		return NULL;
	}
	return patch;
}

/* ---------------------------------------------------------- conflicts */

static int field_conflicts(struct ctx *c, const cJSON *l, const cJSON *r,
			   const struct kt_schema_node *node, const char *strategy,
			   const char *mk);

static int maps_conflict(struct ctx *c, const cJSON *l, const cJSON *r,
			 const struct kt_schema_node *node)
{
	struct oidx rx;
	size_t n;
	cJSON **kids = sorted_kids(l, &n);
	int rc = 0;

	if (!kids || oidx_init(&rx, r) < 0) {
		free(kids);
		return oom(c);
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		const cJSON *lv = kids[i], *rv;
		struct kt_schema_meta meta = { "", "", NULL };
		struct strategy st = { .name = "" };
		size_t mark;

		if (strcmp(lv->string, DIRECTIVE) == 0 ||
		    strcmp(lv->string, RETAIN_KEYS) == 0)
			continue;
		rv = oidx_get(&rx, lv->string);
		if (!rv)
			continue;
		mark = path_key(c, lv->string);
		if ((cJSON_IsObject(lv) || cJSON_IsArray(lv)) &&
		    lookup(c, node, lv->string, cJSON_IsArray(lv), &meta, &st) < 0)
			rc = -1;
		else
			rc = field_conflicts(c, lv, rv, meta.sub, st.name,
					     meta.merge_key);
		path_pop(c, mark);
	}
	free(kids);
	oidx_release(&rx);
	return rc;
}

/* merge key value -> item, later duplicates winning */
static int index_by_key(struct ctx *c, const cJSON *list, const char *mk,
			struct kt_hmap *h)
{
	for (const cJSON *e = list->child; e; e = e->next) {
		const cJSON *kv = cJSON_GetObjectItemCaseSensitive(e, mk);
		const char *id;

		if (!cJSON_IsObject(e))
			return fail(c, "invalid element type in merging list");
		if (!kv) {
			char *t = vtext(e);

			fail(c, "cannot find merge key `%s` in merging list element:%s",
			     mk, t ? t : "");
			free(t);
			return -1;
		}
		id = ident(c, kv);
		if (!id || kt_hmap_put(h, id, (void *)e) < 0)
			return oom(c);
	}
	return 0;
}

static int slices_conflict(struct ctx *c, const cJSON *l, const cJSON *r,
			   const struct kt_schema_node *elem, const char *strategy,
			   const char *mk)
{
	enum kt_gk kind;
	int rc = 0;

	if (elem_kind(c, l, r, &kind) < 0)
		return -1;
	if (strcmp(strategy, "merge") == 0) {
		struct kt_hmap lh = { 0 }, rh = { 0 };

		if (kind != KT_GK_MAP)
			return 0;
		if (index_by_key(c, l, mk, &lh) < 0 || index_by_key(c, r, mk, &rh) < 0) {
			rc = -1;
		} else {
			for (size_t i = 0; i < lh.cap && rc == 0; i++) {
				const cJSON *rv;

				if (!lh.e[i].key)
					continue;
				rv = kt_hmap_get(&rh, lh.e[i].key);
				if (rv)
					rc = field_conflicts(c, lh.e[i].val, rv, elem, "",
							     "");
			}
		}
		kt_hmap_release(&lh);
		kt_hmap_release(&rh);
		return rc;
	}
	if (cJSON_GetArraySize(l) != cJSON_GetArraySize(r))
		return 1;
	if (kind != KT_GK_MAP) {
		cJSON *a = kt_json_dup(l), *b = kt_json_dup(r);
		struct vec va = { 0 }, vb = { 0 };

		if (!a || !b || vec_take_array(&va, a) < 0 ||
		    vec_take_array(&vb, b) < 0) {
			if (!va.v)
				cJSON_Delete(a);
			if (!vb.v)
				cJSON_Delete(b);
			vec_release(&va);
			vec_release(&vb);
			return oom(c);
		}
		if (dedup_any_order(c, &va) < 0 || dedup_any_order(c, &vb) < 0) {
			vec_release(&va);
			vec_release(&vb);
			return -1;
		}
		a = vec_to_array(&va);
		b = vec_to_array(&vb);
		if (!a || !b || sort_scalars_in_place(c, a) < 0 ||
		    sort_scalars_in_place(c, b) < 0)
			rc = -1;
		for (const cJSON *x = a ? a->child : NULL, *y = b ? b->child : NULL;
		     rc == 0 && x; x = x->next, y = y ? y->next : NULL)
			rc = y ? field_conflicts(c, x, y, elem, "", "") : 1;
		cJSON_Delete(a);
		cJSON_Delete(b);
		return rc;
	}
	for (const cJSON *x = l->child, *y = r->child; x && y && rc == 0;
	     x = x->next, y = y->next)
		rc = field_conflicts(c, x, y, elem, "", "");
	return rc;
}

/* mergingMapFieldsHaveConflicts: 1 conflict, 0 none, -1 error */
static int field_conflicts(struct ctx *c, const cJSON *l, const cJSON *r,
			   const struct kt_schema_node *node, const char *strategy,
			   const char *mk)
{
	if (cJSON_IsObject(l)) {
		const cJSON *lm, *rm;

		if (!cJSON_IsObject(r))
			return 1;
		lm = cJSON_GetObjectItemCaseSensitive(l, DIRECTIVE);
		rm = cJSON_GetObjectItemCaseSensitive(r, DIRECTIVE);
		if ((lm || rm) && (!lm || !rm || !kt_go_equal(lm, rm)))
			return 1;
		if (strcmp(strategy, "replace") == 0)
			return 0;
		return maps_conflict(c, l, r, node);
	}
	if (cJSON_IsArray(l)) {
		if (!cJSON_IsArray(r))
			return 1;
		return slices_conflict(c, l, r, node, strategy, mk);
	}
	return !kt_go_equal(l, r);
}

/* ------------------------------------------------------------ entry points */

static void ctx_release(struct ctx *c)
{
	for (struct arena_blk *b = c->arena, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	c->arena = NULL;
	kt_sb_release(&c->scratch);
	kt_sb_release(&c->path);
}

/* a working copy of an input document; NULL input is {} */
static cJSON *doc_copy(struct ctx *c, const cJSON *doc)
{
	cJSON *d;

	if (doc && !cJSON_IsObject(doc) && !cJSON_IsNull(doc)) {
		fail(c, "invalid JSON document");
		return NULL;
	}
	d = doc && cJSON_IsObject(doc) ? kt_json_dup(doc) : cJSON_CreateObject();
	if (!d)
		oom(c);
	return d;
}

/*
 * modified is only read: it is used as it is, and only NULL or null gets a
 * fresh {} (*own, for the caller to free).
 */
static const cJSON *doc_view(struct ctx *c, const cJSON *doc, cJSON **own)
{
	*own = NULL;
	if (doc && cJSON_IsObject(doc))
		return doc;
	if (doc && !cJSON_IsNull(doc)) {
		fail(c, "invalid JSON document");
		return NULL;
	}
	*own = cJSON_CreateObject();
	if (!*own)
		oom(c);
	return *own;
}

static int finish(struct ctx *c, cJSON *res, cJSON **out)
{
	if (kt_go_normalize_numbers(res) < 0) {
		cJSON_Delete(res);
		return oom(c);
	}
	*out = res;
	return 0;
}

int kt_smp_diff(const cJSON *original, const cJSON *modified,
		const struct kt_schema *schema, cJSON **patch, struct kt_err *err)
{
	struct ctx c = { .err = err };
	cJSON *o = NULL, *m = NULL, *p = NULL;
	const cJSON *mv = NULL;
	int rc = -1;

	*patch = NULL;
	o = doc_copy(&c, original);
	mv = o ? doc_view(&c, modified, &m) : NULL;
	if (!mv)
		goto out;
	p = diff_maps(&c, o, mv, kt_schema_root(schema), (struct dopts){ .order = true });
	if (p)
		rc = finish(&c, p, patch);
out:
	cJSON_Delete(o);
	cJSON_Delete(m);
	ctx_release(&c);
	return rc;
}

static char *side_text(const cJSON *v)
{
	return kt_json_print(v, KT_JSON_SORTED | KT_JSON_NO_NEWLINE);
}

/* the conflict error; both sides go to the caller when asked for (changed set) */
static int conflict(struct ctx *c, cJSON *p, cJSON *ch, cJSON **patch, cJSON **changed)
{
	if (!changed)
		patch = NULL;
	char *a = side_text(p), *b = side_text(ch);

	kt_error_kind(c->err, KT_ERR_CONFLICT,
		      "patch %s conflicts with changes made from original to current: %s",
		      a ? a : "", b ? b : "");
	free(a);
	free(b);
	if (patch && kt_go_normalize_numbers(p) == 0)
		*patch = kt_json_dup(p);
	if (changed && kt_go_normalize_numbers(ch) == 0)
		*changed = kt_json_dup(ch);
	return -1;
}

int kt_smp_diff3_sides(const cJSON *original, const cJSON *modified, const cJSON *current,
		       const struct kt_schema *schema, bool overwrite, cJSON **patch,
		       cJSON **changed, struct kt_err *err)
{
	const struct kt_schema_node *root = kt_schema_root(schema);
	struct ctx c = { .err = err };
	cJSON *o = NULL, *m = NULL, *cur = NULL, *delta = NULL, *dels = NULL, *p = NULL;
	cJSON *ch = NULL;
	const cJSON *mv = NULL;
	int rc = -1, conf;

	*patch = NULL;
	if (changed)
		*changed = NULL;
	o = doc_copy(&c, original);
	mv = o ? doc_view(&c, modified, &m) : NULL;
	cur = mv ? doc_copy(&c, current) : NULL;
	if (!cur)
		goto out;
	delta = diff_maps(&c, cur, mv, root,
			  (struct dopts){ .order = true, .no_deletions = true });
	dels = delta ? diff_maps(&c, o, mv, root,
				 (struct dopts){ .order = true, .no_changes = true })
		     : NULL;
	if (!dels)
		goto out;
	p = merge_map(&c, dels, delta, root, (struct mopts){ 0 });
	dels = delta = NULL;
	if (!p)
		goto out;
	if (!overwrite) {
		ch = diff_maps(&c, o, cur, root, (struct dopts){ 0 });
		if (!ch)
			goto out;
		conf = field_conflicts(&c, p, ch, root, "", "");
		if (conf < 0)
			goto out;
		if (conf) {
			conflict(&c, p, ch, patch, changed);
			goto out;
		}
	}
	rc = finish(&c, p, patch);
	p = NULL;
out:
	cJSON_Delete(o);
	cJSON_Delete(m);
	cJSON_Delete(cur);
	cJSON_Delete(delta);
	cJSON_Delete(dels);
	cJSON_Delete(p);
	cJSON_Delete(ch);
	ctx_release(&c);
	return rc;
}

int kt_smp_diff3(const cJSON *original, const cJSON *modified, const cJSON *current,
		 const struct kt_schema *schema, bool overwrite, cJSON **patch,
		 struct kt_err *err)
{
	return kt_smp_diff3_sides(original, modified, current, schema, overwrite, patch,
				  NULL, err);
}

/* the documents merge_map works on; NULL is {} and anything but an object fails */
static cJSON *doc_take(struct ctx *c, cJSON *doc)
{
	if (doc && !cJSON_IsObject(doc) && !cJSON_IsNull(doc)) {
		cJSON_Delete(doc);
		fail(c, "invalid JSON document");
		return NULL;
	}
	if (doc && cJSON_IsObject(doc))
		return doc;
	cJSON_Delete(doc);
	doc = cJSON_CreateObject();
	if (!doc)
		oom(c);
	return doc;
}

int kt_smp_apply_take(cJSON *doc, cJSON *patch, const struct kt_schema *schema,
		      cJSON **out, struct kt_err *err)
{
	struct ctx c = { .err = err };
	cJSON *d, *p = NULL, *res;
	int rc = -1;

	*out = NULL;
	d = doc_take(&c, doc);
	if (d)
		p = doc_take(&c, patch);
	else
		cJSON_Delete(patch);
	if (!p) {
		cJSON_Delete(d);
		goto out;
	}
	res = merge_map(&c, d, p, kt_schema_root(schema),
			(struct mopts){ .parallel = true, .ignore_nulls = true });
	if (res)
		rc = finish(&c, res, out);
out:
	ctx_release(&c);
	return rc;
}

int kt_smp_apply(const cJSON *doc, const cJSON *patch, const struct kt_schema *schema,
		 cJSON **out, struct kt_err *err)
{
	struct ctx c = { .err = err };
	cJSON *d = NULL, *p = NULL;

	*out = NULL;
	d = doc_copy(&c, doc);
	p = d ? doc_copy(&c, patch) : NULL;
	ctx_release(&c);
	if (!p) {
		cJSON_Delete(d);
		return -1;
	}
	return kt_smp_apply_take(d, p, schema, out, err);
}
