/* SPDX-License-Identifier: Apache-2.0 */
/* reflector: list, watch, resume, re-list: a state machine, requests out, replies in */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "json.h"
#include "json_go.h"
#include "log.h"
#include "object.h"
#include "reflector.h"
#include "core.h"
#include "timeutil.h"

/* a watch shorter than this without an event is a failure, as client-go judges it */
#define REFL_SHORT_WATCH_MS 1000
/* the client gives a watch this long past its timeoutSeconds before cutting it */
#define REFL_WATCH_GRACE_S 30

/* ------------------------------------------------------------- the store */

static void obj_free(struct kt_refl_obj *o)
{
	if (!o)
		return;
	free(o->key);
	free(o->uid);
	free(o->rv);
	cJSON_Delete(o->obj);
	free(o);
}

static const char *meta_string(const cJSON *obj, const char *key)
{
	const char *s = kt_json_get_string(kt_json_get_object(obj, "metadata"), key);

	return s ? s : "";
}

/* "namespace/name" or "name" into buf; -1 when the object has no name */
static int object_key(const cJSON *obj, char *buf, size_t size)
{
	const char *name = meta_string(obj, "name"), *ns = meta_string(obj, "namespace");
	int n;

	if (!*name)
		return -1;
	n = *ns ? snprintf(buf, size, "%s/%s", ns, name)
		: snprintf(buf, size, "%s", name);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

/* a new entry that adopts obj (freed on failure) */
static struct kt_refl_obj *obj_new(cJSON *obj, const char *key)
{
	struct kt_refl_obj *o = calloc(1, sizeof(*o));

	if (!o) {
		cJSON_Delete(obj);
		return NULL;
	}
	o->obj = obj;
	o->key = strdup(key);
	o->uid = strdup(meta_string(obj, "uid"));
	o->rv = strdup(meta_string(obj, "resourceVersion"));
	if (!o->key || !o->uid || !o->rv) {
		obj_free(o);
		return NULL;
	}
	return o;
}

static struct kt_hmap *index_of(const struct kt_refl *r)
{
	return r->index;
}

static struct kt_refl_obj *store_get(const struct kt_refl *r, const char *key)
{
	return kt_hmap_get(index_of(r), key);
}

/* rebuilds the array without holes and the map without dead keys */
static int store_compact(struct kt_refl *r)
{
	struct kt_hmap fresh = { .own_keys = true };
	size_t n = 0;

	for (size_t i = 0; i < r->nobjs; i++) {
		if (!r->objs[i])
			continue;
		if (kt_hmap_put(&fresh, r->objs[i]->key, r->objs[i]) < 0) {
			kt_hmap_release(&fresh);
			return -1;
		}
		r->objs[i]->slot = n;
		r->objs[n++] = r->objs[i];
	}
	r->nobjs = n;
	kt_hmap_release(index_of(r));
	*index_of(r) = fresh;
	return 0;
}

/* adds o (adopted) at the end, replacing an entry of the same key */
static int store_put(struct kt_refl *r, struct kt_refl_obj *o)
{
	struct kt_refl_obj *old = store_get(r, o->key);

	if (old) {
		/* the key is there: this cannot fail */
		kt_hmap_put(index_of(r), o->key, NULL);
		r->objs[old->slot] = NULL;
		obj_free(old);
		r->live--;
	}
	if (r->nobjs > 2 * r->live + 64 && store_compact(r) < 0)
		goto oom;
	if (r->nobjs == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct kt_refl_obj **v = realloc(r->objs, cap * sizeof(*v));

		if (!v)
			goto oom;
		r->objs = v;
		r->cap = cap;
	}
	if (kt_hmap_put(index_of(r), o->key, o) < 0)
		goto oom;
	o->slot = r->nobjs;
	r->objs[r->nobjs++] = o;
	r->live++;
	return 0;
oom:
	obj_free(o);
	return -1;
}

static void store_remove(struct kt_refl *r, const char *key)
{
	struct kt_refl_obj *old = store_get(r, key);

	if (!old)
		return;
	kt_hmap_put(index_of(r), key, NULL); /* the key is there: cannot fail */
	r->objs[old->slot] = NULL;
	obj_free(old);
	r->live--;
}

static void store_clear(struct kt_refl *r)
{
	for (size_t i = 0; i < r->nobjs; i++)
		obj_free(r->objs[i]);
	r->nobjs = r->live = 0;
	kt_hmap_release(index_of(r));
	index_of(r)->own_keys = true;
}

/* ------------------------------------------------------------ life cycle */

static char *collection_path(const char *path, struct kt_err *err);

int kt_refl_init(struct kt_refl *r, const struct kt_refl_opts *opts, kt_refl_event_fn *fn,
		 void *arg, unsigned seed, struct kt_err *err)
{
	struct kt_hmap *index;

	memset(r, 0, sizeof(*r));
	r->base = collection_path(opts->path ? opts->path : "", err);
	if (!r->base)
		return -1;
	index = calloc(1, sizeof(*index));
	r->rv = strdup("");
	if (!index || !r->rv) {
		free(index);
		kt_refl_release(r);
		return kt_error(err, "out of memory");
	}
	index->own_keys = true;
	r->index = index;
	r->watch_timeout_s = opts->watch_timeout_s;
	r->idle_ms = opts->idle_ms;
	r->page_size = opts->page_size ? opts->page_size : KT_REFL_PAGE_SIZE;
	r->flags = opts->flags;
	r->fn = fn;
	r->fn_arg = arg;
	r->seed = seed;
	/* client-go's ExponentialBackoffManager: 800 ms doubling to 30 s, plus
	 * up to 100% jitter, back to the start after two minutes without a wait */
	r->backoff = (struct kt_backoff){ .first_ms = KT_REFL_BACKOFF_FIRST_MS,
					  .cap_ms = KT_REFL_BACKOFF_MAX_MS,
					  .reset_ms = KT_REFL_BACKOFF_RESET_MS, .factor = 2,
					  .jitter = 1, .seed = seed ^ 0x5bd1e995u };
	r->step = KT_REFL_LIST;
	return 0;
}

int kt_refl_know(struct kt_refl *r, cJSON *obj, struct kt_err *err)
{
	struct kt_refl_obj *o, *old, **more;
	char key[600];

	if (r->listed) {
		cJSON_Delete(obj);
		return kt_error(err, "objects can be made known only before the first list");
	}
	if (!cJSON_IsObject(obj) || object_key(obj, key, sizeof(key)) < 0) {
		cJSON_Delete(obj);
		return kt_error_kind(err, KT_ERR_INPUT, "a known object needs metadata.name");
	}
	old = store_get(r, key);
	if (old && !strcmp(old->uid, meta_string(obj, "uid"))) {
		cJSON_Delete(obj);
		return kt_error_kind(err, KT_ERR_INPUT, "%s is known twice", key);
	}
	for (size_t i = 0; i < r->nreplaced; i++)
		if (!strcmp(r->replaced[i]->key, key) &&
		    !strcmp(r->replaced[i]->uid, meta_string(obj, "uid"))) {
			cJSON_Delete(obj);
			return kt_error_kind(err, KT_ERR_INPUT, "%s is known twice", key);
		}
	o = obj_new(obj, key);
	if (!o)
		return kt_error(err, "out of memory");
	if (!old)
		return store_put(r, o) < 0 ? kt_error(err, "out of memory") : 0;
	/* the name under another uid: an object deleted and created again */
	more = realloc(r->replaced, (r->nreplaced + 1) * sizeof(*more));
	if (!more) {
		obj_free(o);
		return kt_error(err, "out of memory");
	}
	r->replaced = more;
	r->replaced[r->nreplaced++] = o;
	return 0;
}

void kt_refl_release(struct kt_refl *r)
{
	if (!r)
		return;
	if (r->index) {
		store_clear(r);
		kt_hmap_release(index_of(r));
		free(r->index);
	}
	for (size_t i = 0; i < r->nreplaced; i++)
		obj_free(r->replaced[i]);
	free(r->replaced);
	free(r->objs);
	free(r->base);
	free(r->rv);
	free(r->cont);
	cJSON_Delete(r->pages);
	free(r->item_version);
	free(r->item_kind);
	free(r->path);
	free(r->list_rv);
	free(r->stop_error);
	memset(r, 0, sizeof(*r));
}

const char *kt_refl_resource_version(const struct kt_refl *r)
{
	return r->rv ? r->rv : "";
}

struct kt_refl_obj *const *kt_refl_objects(const struct kt_refl *r, size_t *n)
{
	*n = r->nobjs;
	return r->objs;
}

const cJSON *kt_refl_last(const struct kt_refl *r, const cJSON *obj)
{
	const struct kt_refl_obj *o;
	char key[600];

	if (object_key(obj, key, sizeof(key)) < 0)
		return NULL;
	o = store_get(r, key);
	return o && !strcmp(o->uid, meta_string(obj, "uid")) ? o->obj : NULL;
}

static int set_str(char **dst, const char *s)
{
	char *c = strdup(s ? s : "");

	if (!c)
		return -1;
	free(*dst);
	*dst = c;
	return 0;
}

/* ---------------------------------------------------------------- requests */

/* appends s to buf percent-encoded as a query value */
static size_t query_escape(char *buf, size_t size, size_t at, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || strchr("-._~", c);

		if (at + 4 >= size)
			break;
		if (plain) {
			buf[at++] = (char)c;
		} else {
			buf[at++] = '%';
			buf[at++] = hex[c >> 4];
			buf[at++] = hex[c & 15];
		}
	}
	buf[at < size ? at : size - 1] = '\0';
	return at;
}

/* the segments of path's part after the group version (/api/v1, /apis/G/V) */
static size_t resource_segments(const char *path, size_t len, const char **rest)
{
	const char *p = path;
	size_t skip = 0, n = 0;

	*rest = NULL;
	if (!strncmp(p, "/api/", 5))
		skip = 2;
	else if (!strncmp(p, "/apis/", 6))
		skip = 3;
	else
		return 0;
	for (size_t i = 0; i < skip && p; i++)
		p = memchr(p + 1, '/', len - (size_t)(p + 1 - path));
	if (!p)
		return 0;
	*rest = p;
	for (; p && p < path + len; p = memchr(p + 1, '/', len - (size_t)(p + 1 - path)))
		if ((size_t)(p + 1 - path) < len && p[1] != '/')
			n++;
	return n;
}

/*
 * What to list and watch for path: a collection as it is; one object
 * (/api/v1/nodes/vk-1, /api/v1/namespaces/ns/pods/web) as its collection
 * with fieldSelector=metadata.name=NAME, as kubectl get NAME --watch does.
 * Caller frees; NULL with err (KT_ERR_INPUT) for a subresource.
 */
static char *collection_path(const char *path, struct kt_err *err)
{
	size_t len = strcspn(path, "?"), n, cut;
	const char *rest, *name, *query = path + len;
	bool ns;
	char *out;

	n = resource_segments(path, len, &rest);
	ns = rest && !strncmp(rest, "/namespaces/", 12);
	if (n == 1 || (n == 3 && ns) || !rest) {
		out = strdup(path);
		goto done;
	}
	if (n != 2 && !(n == 4 && ns)) {
		kt_error_kind(err, KT_ERR_INPUT,
			      "'%.*s' is not a collection or an object: a subresource "
			      "cannot be watched",
			      (int)len, path);
		return NULL;
	}
	if (strstr(query, "fieldSelector=")) {
		kt_error_kind(err, KT_ERR_INPUT,
			      "'%.*s' names one object: it takes no fieldSelector",
			      (int)len, path);
		return NULL;
	}
	for (cut = len; cut > 0 && path[cut - 1] != '/'; cut--)
		;
	name = path + cut;
	n = len + strlen(query) + 3 * (len - cut) + 48;
	out = malloc(n);
	if (out) {
		const char *sep = *query ? "&" : "?";
		size_t at = (size_t)snprintf(out, n,
					     "%.*s%s%sfieldSelector=metadata.name%%3D",
					     (int)(cut - 1), path, query, sep);
		char nm[256];

		snprintf(nm, sizeof(nm), "%.*s", (int)(len - cut), name);
		query_escape(out, n, at, nm);
	}
done:
	if (!out)
		kt_error(err, "out of memory");
	return out;
}

int kt_refl_check_path(const char *path, struct kt_err *err)
{
	char *c = collection_path(path, err);

	free(c);
	return c ? 0 : -1;
}

const char *kt_refl_own_param(const char *path)
{
	static const char *const own[] = { "watch",
					   "resourceVersion",
					   "resourceVersionMatch",
					   "allowWatchBookmarks",
					   "timeoutSeconds",
					   "limit",
					   "continue",
					   "sendInitialEvents" };
	const char *q = strchr(path, '?');

	while (q && *q) {
		size_t n;

		q++;
		n = strcspn(q, "=&");
		for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			if (strlen(own[i]) == n && !strncmp(q, own[i], n))
				return own[i];
		q = strchr(q, '&');
	}
	return NULL;
}

bool kt_refl_query_watches(const char *path)
{
	for (const char *q = strchr(path, '?'); q && *q; q = strchr(q + 1, '&'))
		if (!strncmp(q + 1, "watch=", 6) && strncmp(q + 7, "0", 1) &&
		    strncmp(q + 7, "false", 5))
			return true;
	return false;
}

static int64_t watch_timeout_s(struct kt_refl *r)
{
	if (r->watch_timeout_s > 0)
		return r->watch_timeout_s;
	/* client-go: minWatchTimeout times a random factor in [1, 2) */
	return KT_REFL_WATCH_MIN_S + (int64_t)(rand_r(&r->seed) % KT_REFL_WATCH_MIN_S);
}

int kt_refl_request(struct kt_refl *r, int64_t now_ms, struct kt_refl_req *req,
		    struct kt_err *err)
{
	size_t size = strlen(r->base) +
		      3 * (strlen(r->rv) + (r->cont ? strlen(r->cont) : 0)) + 160;
	char *p = malloc(size);
	char sep = strchr(r->base, '?') ? '&' : '?';
	size_t n;

	if (!p)
		return kt_error(err, "out of memory");
	memset(req, 0, sizeof(*req));
	req->step = r->step;
	if (r->step == KT_REFL_LIST) {
		n = (size_t)snprintf(p, size, "%s", r->base);
		if (r->page_size > 0 && !r->one_page) {
			n += (size_t)snprintf(p + n, size - n, "%climit=%ld", sep,
					      r->page_size);
			sep = '&';
		}
		if (r->cont) {
			n += (size_t)snprintf(p + n, size - n, "%ccontinue=", sep);
			query_escape(p, size, n, r->cont);
		}
	} else {
		int64_t t = watch_timeout_s(r);

		n = (size_t)snprintf(p, size, "%s%cwatch=1&resourceVersion=", r->base,
				     sep);
		n = query_escape(p, size, n, r->rv);
		snprintf(p + n, size - n, "&allowWatchBookmarks=true&timeoutSeconds=%lld",
			 (long long)t);
		req->timeout_ms = (t + REFL_WATCH_GRACE_S) * 1000;
		r->watch_start_ms = now_ms;
		r->events = 0;
		KT_V(2, "reflector watching",
		     "path=\"%s\" resourceVersion=\"%s\" timeoutSeconds=%lld", r->base,
		     r->rv, (long long)t);
	}
	free(r->path);
	r->path = p;
	req->path = p;
	return 0;
}

/* -------------------------------------------------------------- decisions */

/* answers that another attempt cannot change */
static bool permanent(long status)
{
	return status == 400 || status == 401 || status == 403 || status == 404 ||
	       status == 405 || status == 406 || status == 415 || status == 422;
}

static enum kt_refl_next done(struct kt_refl *r, long status, const char *what)
{
	kt_error(&r->err, "%s", what);
	r->err.http_status = status;
	if (status == 404)
		r->err.kind = KT_ERR_NOTFOUND;
	return KT_REFL_DONE;
}

static enum kt_refl_next wait_then(struct kt_refl *r, enum kt_refl_step step,
				   int64_t now_ms, int64_t *delay_ms)
{
	*delay_ms = kt_backoff_next(&r->backoff, now_ms);
	r->step = step;
	free(r->cont);
	r->cont = NULL;
	cJSON_Delete(r->pages);
	r->pages = NULL;
	KT_V(4, "retrying request", "path=\"%s\" next=\"%s\" delayMs=%lld", r->base,
	     step == KT_REFL_LIST ? "list" : "watch", (long long)*delay_ms);
	return KT_REFL_WAIT;
}

static const char *reply_text(const struct kt_refl_reply *reply)
{
	const char *m = kt_json_get_string(reply->json, "message");

	if (reply->error && *reply->error)
		return reply->error;
	return m && *m ? m : "no reply";
}

/* ------------------------------------------------------------------ events */

static int report(struct kt_refl *r, const char *type, const cJSON *obj, const char *key)
{
	KT_V(4, "reflector event",
	     "path=\"%s\" type=\"%s\" key=\"%s\" resourceVersion=\"%s\"", r->base, type,
	     key, meta_string(obj, "resourceVersion"));
	if (r->fn && r->fn(type, obj, r->fn_arg) < 0) {
		kt_error(&r->err, "stopped");
		r->err.http_status = -1;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------- lists */

/* a list's item kind (PodList -> Pod) and apiVersion, for its items */
static int take_item_type(struct kt_refl *r, const cJSON *list)
{
	const char *version = kt_json_get_string(list, "apiVersion");
	char k[256];

	kt_object_item_kind(kt_json_get_string(list, "kind"), k, sizeof(k));
	if (set_str(&r->item_kind, k) < 0 || set_str(&r->item_version, version) < 0)
		return -1;
	return 0;
}

/* the list's items so far plus this page's, copied with apiVersion and kind */
static int add_page(struct kt_refl *r, const cJSON *items)
{
	if (!r->pages) {
		r->pages = cJSON_CreateArray();
		if (!r->pages)
			return -1;
	}
	for (const cJSON *it = items ? items->child : NULL; it; it = it->next) {
		cJSON *c;

		if (!cJSON_IsObject(it))
			continue;
		c = kt_json_dup(it);
		if (!c || kt_object_set_type(c, r->item_kind, r->item_version) < 0) {
			cJSON_Delete(c);
			return -1;
		}
		if (kt_json_append(r->pages, c) < 0)
			return -1;
	}
	return 0;
}

/* the first list's DELETED events for the objects made known under a name that
 * another known object holds: each one that is not the listed object is gone;
 * the one that is takes the name's place in the store */
static int report_replaced(struct kt_refl *r, const struct kt_hmap *now)
{
	int rc = 0;

	for (size_t i = 0; i < r->nreplaced; i++) {
		struct kt_refl_obj *o = r->replaced[i], *held;
		const cJSON *n = kt_hmap_get(now, o->key);

		r->replaced[i] = NULL;
		if (rc == 0 && n && !strcmp(meta_string(n, "uid"), o->uid)) {
			held = store_get(r, o->key);
			if (held && report(r, "DELETED", held->obj, held->key) < 0)
				rc = -1;
			if (store_put(r, o) < 0)
				rc = kt_error(&r->err, "out of memory");
			continue;
		}
		if (rc == 0 && report(r, "DELETED", o->obj, o->key) < 0)
			rc = -1;
		obj_free(o);
	}
	free(r->replaced);
	r->replaced = NULL;
	r->nreplaced = 0;
	return rc;
}

/* the DELETED events of a re-list: what was reported and is gone or replaced;
 * each leaves the store */
static int report_gone(struct kt_refl *r, const struct kt_hmap *now)
{
	for (size_t i = 0; i < r->nobjs; i++) {
		struct kt_refl_obj *o = r->objs[i];
		const cJSON *n;

		if (!o)
			continue;
		n = kt_hmap_get(now, o->key);
		if (n && !strcmp(meta_string(n, "uid"), o->uid))
			continue;
		if (report(r, "DELETED", o->obj, o->key) < 0)
			return -1;
		store_remove(r, o->key);
	}
	return 0;
}

/* reports one listed object (adopted) against what was reported, and keeps it */
static int report_listed(struct kt_refl *r, cJSON *item, const char *key, bool initial)
{
	struct kt_refl_obj *old = store_get(r, key), *o;
	const char *type = NULL;

	if (!old)
		type = initial && (r->flags & KT_REFL_NO_INITIAL) ? NULL : "ADDED";
	else if (strcmp(old->rv, meta_string(item, "resourceVersion")) ||
		 (!*old->rv && !kt_go_equal(old->obj, item)))
		type = "MODIFIED";
	if (type && report(r, type, item, key) < 0) {
		cJSON_Delete(item);
		return -1;
	}
	o = obj_new(item, key);
	if (!o || store_put(r, o) < 0)
		return kt_error(&r->err, "out of memory");
	return 0;
}

static int initial_bookmark(struct kt_refl *r)
{
	cJSON *b = cJSON_CreateObject(), *meta = cJSON_CreateObject(),
	      *ann = cJSON_CreateObject();
	int rc = -1;

	if (!b || !meta || !ann || kt_object_set_type(b, r->item_kind, r->item_version) < 0 ||
	    !cJSON_AddStringToObject(meta, "resourceVersion", r->rv) ||
	    !cJSON_AddStringToObject(ann, "k8s.io/initial-events-end", "true")) {
		kt_error(&r->err, "out of memory");
		goto out;
	}
	cJSON_AddItemToObject(meta, "annotations", ann);
	ann = NULL;
	cJSON_AddItemToObject(b, "metadata", meta);
	meta = NULL;
	rc = report(r, "BOOKMARK", b, "");
out:
	cJSON_Delete(ann);
	cJSON_Delete(meta);
	cJSON_Delete(b);
	return rc;
}

/*
 * The whole list is in r->pages: report it against the store.  The first
 * list reports ADDED for each item, or the difference from the objects made
 * known before it; a re-list reports the difference.
 * Items without a name cannot be followed and are left out.
 */
static int list_complete(struct kt_refl *r)
{
	struct kt_hmap now = { .own_keys = true };
	bool initial = !r->listed;
	char key[600];
	cJSON *items = r->pages, *it, *next;
	int rc = -1;

	r->pages = NULL;
	for (it = items ? items->child : NULL; it; it = it->next)
		if (object_key(it, key, sizeof(key)) == 0 &&
		    kt_hmap_put(&now, key, it) < 0) {
			kt_error(&r->err, "out of memory");
			goto out;
		}
	/* on the first list, what is gone of the objects made known (kt_refl_know) */
	if (report_replaced(r, &now) < 0 || report_gone(r, &now) < 0)
		goto out;
	for (it = items ? items->child : NULL; it; it = next) {
		next = it->next;
		if (object_key(it, key, sizeof(key)) < 0)
			continue;
		cJSON_DetachItemViaPointer(items, it);
		if (report_listed(r, it, key, initial) < 0)
			goto out;
	}
	r->listed = true;
	if (initial && (r->flags & KT_REFL_BOOKMARKS) && initial_bookmark(r) < 0)
		goto out;
	rc = 0;
out:
	cJSON_Delete(items);
	kt_hmap_release(&now);
	return rc;
}

static enum kt_refl_next not_a_list(struct kt_refl *r, long status)
{
	char what[600];

	snprintf(what, sizeof(what), "GET %s: the reply is not a list",
		 r->path ? r->path : "");
	return done(r, status, what);
}

enum kt_refl_next kt_refl_list_reply(struct kt_refl *r, const struct kt_refl_reply *reply,
				     int64_t now_ms, int64_t *delay_ms)
{
	const cJSON *meta = kt_json_get_object(reply->json, "metadata");
	const char *cont = kt_json_get_string(meta, "continue");
	const char *rv = kt_json_get_string(meta, "resourceVersion");

	*delay_ms = 0;
	if (reply->status < 200 || reply->status > 299) {
		if (reply->status == 410 && r->cont) {
			/* the continue token expired: the whole list again, in one
			 * piece, as client-go's pager falls back to */
			KT_V(2, "reflector list expired; listing in one page",
			     "path=\"%s\"", r->base);
			free(r->cont);
			r->cont = NULL;
			cJSON_Delete(r->pages);
			r->pages = NULL;
			r->one_page = true;
			return KT_REFL_SEND;
		}
		if (permanent(reply->status) ||
		    (!r->listed && !(r->flags & KT_REFL_WAIT_FOR_SERVER)))
			return done(r, reply->status, reply_text(reply));
		KT_WARN("reflector list failed", "path=\"%s\" status=%ld error=\"%s\"",
			r->base, reply->status, reply_text(reply));
		return wait_then(r, KT_REFL_LIST, now_ms, delay_ms);
	}
	if (!cJSON_IsObject(reply->json) || !rv ||
	    (kt_json_get(reply->json, "items") &&
	     !kt_json_get_array(reply->json, "items") &&
	     !cJSON_IsNull(kt_json_get(reply->json, "items"))))
		return not_a_list(r, reply->status);
	/* every page shares the first page's snapshot */
	if (!r->cont &&
	    (take_item_type(r, reply->json) < 0 || set_str(&r->list_rv, rv) < 0))
		return done(r, 0, "out of memory");
	if (add_page(r, kt_json_get_array(reply->json, "items")) < 0)
		return done(r, 0, "out of memory");
	if (cont && *cont)
		return set_str(&r->cont, cont) < 0 ? done(r, 0, "out of memory")
						   : KT_REFL_SEND;
	free(r->cont);
	r->cont = NULL;
	r->one_page = false;
	if (set_str(&r->rv, r->list_rv) < 0)
		return done(r, 0, "out of memory");
	KT_V(2, "reflector listed", "path=\"%s\" resourceVersion=\"%s\" items=%d",
	     r->base, r->rv, cJSON_GetArraySize(r->pages));
	if (list_complete(r) < 0)
		return KT_REFL_DONE;
	r->step = KT_REFL_WATCH;
	return KT_REFL_SEND;
}

/* ----------------------------------------------------------------- watches */

/* the watch must end: why, and whether a re-list follows */
static int watch_stop(struct kt_refl *r, const char *why)
{
	set_str(&r->stop_error, why);
	return -1;
}

static bool status_expired(const cJSON *status)
{
	const cJSON *code = kt_json_get(status, "code");
	const char *reason = kt_json_get_string(status, "reason");
	int64_t c = 0;

	if (code && kt_json_num_int64(code, &c, NULL) == 0 && c == 410)
		return true;
	return reason && (!strcmp(reason, "Expired") || !strcmp(reason, "Gone"));
}

/* ADDED, MODIFIED or DELETED: the store follows, the event goes out */
static int watch_change(struct kt_refl *r, const char *type, cJSON *obj)
{
	char key[600];
	const char *rv = meta_string(obj, "resourceVersion");
	struct kt_refl_obj *old, *o;

	if (object_key(obj, key, sizeof(key)) < 0)
		return watch_stop(r, "a watch event's object has no metadata.name");
	old = store_get(r, key);
	/* the same version again is not news (a server replaying its history) */
	if (old && *rv && !strcmp(old->rv, rv) && strcmp(type, "DELETED"))
		return 0;
	if (report(r, type, obj, key) < 0)
		return -1;
	if (!strcmp(type, "DELETED")) {
		store_remove(r, key);
		return 0;
	}
	o = obj_new(kt_json_dup(obj), key);
	if (!o || !o->obj || store_put(r, o) < 0) {
		if (o && !o->obj)
			obj_free(o);
		kt_error(&r->err, "out of memory");
		r->err.http_status = -1;
		return -1;
	}
	return 0;
}

cJSON *kt_refl_event(const char *type, const cJSON *object)
{
	cJSON *ev = cJSON_CreateObject();

	if (!ev || !cJSON_AddStringToObject(ev, "type", type) ||
	    kt_json_set(ev, "object", kt_json_dup(object)) < 0) {
		cJSON_Delete(ev);
		return NULL;
	}
	return ev;
}

int kt_refl_watch_line(struct kt_refl *r, const char *line, size_t len)
{
	struct kt_err perr = { 0 };
	/* numbers exact, as a list's items are read */
	cJSON *ev = kt_json_parse_at("watch event", line, len, 1, 1, &perr);
	const char *type = kt_json_get_string(ev, "type");
	cJSON *obj = kt_json_get_object(ev, "object");
	const char *rv = meta_string(obj, "resourceVersion");
	int rc = 0;

	r->events++;
	if (!type || !obj) {
		rc = watch_stop(r, "the watch sent a line that is not an event");
	} else if (!strcmp(type, "ERROR")) {
		const char *m = kt_json_get_string(obj, "message");

		r->expired = status_expired(obj);
		rc = watch_stop(r, m && *m ? m : "the watch sent an ERROR event");
	} else if (!strcmp(type, "BOOKMARK")) {
		KT_V(4, "reflector bookmark", "path=\"%s\" resourceVersion=\"%s\"",
		     r->base, rv);
		if ((r->flags & KT_REFL_BOOKMARKS) && report(r, type, obj, "") < 0)
			rc = -1;
	} else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") ||
		   !strcmp(type, "DELETED")) {
		if (kt_object_set_type(obj, r->item_kind, r->item_version) < 0) {
			kt_error(&r->err, "out of memory");
			r->err.http_status = -1;
			rc = -1;
		} else {
			rc = watch_change(r, type, obj);
		}
	} else {
		rc = watch_stop(r, "the watch sent an event of an unknown type");
	}
	if (rc == 0 && *rv && strcmp(type, "ERROR") && set_str(&r->rv, rv) < 0) {
		kt_error(&r->err, "out of memory");
		r->err.http_status = -1;
		rc = -1;
	}
	cJSON_Delete(ev);
	return rc;
}

static enum kt_refl_next relist(struct kt_refl *r, const char *why, int64_t now_ms,
				int64_t *delay_ms)
{
	KT_V(2, "reflector re-listing",
	     "path=\"%s\" resourceVersion=\"%s\" reason=\"%s\"", r->base, r->rv, why);
	return wait_then(r, KT_REFL_LIST, now_ms, delay_ms);
}

enum kt_refl_next kt_refl_watch_end(struct kt_refl *r, const struct kt_refl_reply *reply,
				    int64_t now_ms, int64_t *delay_ms)
{
	bool ok = reply->status >= 200 && reply->status < 300;
	bool lasted = r->events > 0 || now_ms - r->watch_start_ms >= REFL_SHORT_WATCH_MS;
	char why[600];
	enum kt_refl_next next;

	*delay_ms = 0;
	if (r->err.http_status == -1)
		return KT_REFL_DONE; /* the callback stopped it, or out of memory */
	if (reply->idle) {
		char d[32];

		kt_error(&r->err, "no event or bookmark for %s",
			 kt_duration_format(r->idle_ms, d, sizeof(d)));
		r->err.about = KT_ERR_ABOUT_IDLE;
		return KT_REFL_DONE;
	}
	if (r->stop_error) {
		snprintf(why, sizeof(why), "%s", r->stop_error);
		free(r->stop_error);
		r->stop_error = NULL;
		if (!r->expired)
			KT_WARN("reflector watch ended", "path=\"%s\" error=\"%s\"",
				r->base, why);
		r->expired = false;
		return relist(r, why, now_ms, delay_ms);
	}
	snprintf(why, sizeof(why), "%s", ok ? "the server ended it" : reply_text(reply));
	if ((ok || reply->status == 0) && lasted) {
		KT_V(2, "reflector resuming the watch",
		     "path=\"%s\" resourceVersion=\"%s\" events=%ld reason=\"%s\"",
		     r->base, r->rv, r->events, why);
		r->step = KT_REFL_WATCH;
		return KT_REFL_SEND;
	}
	if (reply->status == 0 || reply->status == 429) {
		KT_WARN("reflector watch failed", "path=\"%s\" status=%ld error=\"%s\"",
			r->base, reply->status, why);
		next = wait_then(r, KT_REFL_WATCH, now_ms, delay_ms);
		return next;
	}
	if (permanent(reply->status))
		return done(r, reply->status, why);
	if (ok)
		snprintf(why, sizeof(why), "the watch ended at once without an event");
	else if (reply->status != 410)
		KT_WARN("reflector watch failed", "path=\"%s\" status=%ld error=\"%s\"",
			r->base, reply->status, why);
	return relist(r, why, now_ms, delay_ms);
}
