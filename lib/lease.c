/* SPDX-License-Identifier: Apache-2.0 */
/* lease: a node's Lease and the steps of one renewal, as data in and requests out */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"
#include "lease.h"
#include "object.h"
#include "timeutil.h"

static const char *holder_of(const struct kt_lease_spec *spec)
{
	return spec->holder ? spec->holder : spec->node;
}

/* {"apiVersion":"v1","kind":"Node","name":..,"uid":..}; caller owns */
static cJSON *owner_ref(const char *node, const char *uid)
{
	cJSON *ref = cJSON_CreateObject();

	if (!ref || !cJSON_AddStringToObject(ref, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(ref, "kind", "Node") ||
	    !cJSON_AddStringToObject(ref, "name", node) ||
	    !cJSON_AddStringToObject(ref, "uid", uid)) {
		cJSON_Delete(ref);
		return NULL;
	}
	return ref;
}

/* sets holderIdentity, leaseDurationSeconds and renewTime on spec_obj */
static int set_spec(cJSON *spec_obj, const struct kt_lease_spec *spec, int64_t now_us)
{
	char when[40];

	kt_time_format(now_us, true, when, sizeof(when));
	if (kt_json_set(spec_obj, "holderIdentity", cJSON_CreateString(holder_of(spec))) < 0 ||
	    kt_json_set(spec_obj, "leaseDurationSeconds",
			kt_json_num_new_int(spec->duration_s)) < 0 ||
	    kt_json_set(spec_obj, "renewTime", cJSON_CreateString(when)) < 0)
		return -1;
	return 0;
}

cJSON *kt_lease_doc_new(const struct kt_lease_spec *spec, const char *node_uid, int64_t now_us,
		       struct kt_err *err)
{
	cJSON *lease = cJSON_CreateObject(), *meta = NULL, *refs = NULL, *sp = NULL;

	if (!lease || !cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1") ||
	    !cJSON_AddStringToObject(lease, "kind", "Lease"))
		goto oom;
	meta = cJSON_AddObjectToObject(lease, "metadata");
	if (!meta || !cJSON_AddStringToObject(meta, "name", spec->node) ||
	    !cJSON_AddStringToObject(meta, "namespace", KT_LEASE_NAMESPACE))
		goto oom;
	if (node_uid) {
		refs = cJSON_AddArrayToObject(meta, "ownerReferences");
		if (!refs || kt_json_append(refs, owner_ref(spec->node, node_uid)) < 0)
			goto oom;
	}
	sp = cJSON_AddObjectToObject(lease, "spec");
	if (!sp || set_spec(sp, spec, now_us) < 0)
		goto oom;
	return lease;
oom:
	cJSON_Delete(lease);
	kt_error(err, "out of memory");
	return NULL;
}

static bool str_is(const cJSON *obj, const char *key, const char *want)
{
	const char *s = kt_json_get_string(obj, key);

	return s && want && !strcmp(s, want);
}

/* adds or repairs the owner reference to the node in meta; -1 when out of memory */
static int fix_owner(cJSON *meta, const char *node, const char *uid, unsigned *changed)
{
	cJSON *refs = kt_json_get_array(meta, "ownerReferences"), *ref;

	if (!refs) {
		refs = cJSON_CreateArray();
		if (kt_json_set(meta, "ownerReferences", refs) < 0)
			return -1;
	}
	cJSON_ArrayForEach(ref, refs) {
		if (!str_is(ref, "kind", "Node") || !str_is(ref, "apiVersion", "v1") ||
		    !str_is(ref, "name", node))
			continue;
		if (str_is(ref, "uid", uid))
			return 0;
		*changed |= KT_LEASE_OWNER_REPAIRED;
		return kt_json_set(ref, "uid", cJSON_CreateString(uid));
	}
	*changed |= KT_LEASE_OWNER_ADDED;
	return kt_json_append(refs, owner_ref(node, uid));
}

/* lease (an object) renewed in place; *changed gets enum kt_lease_changes
 * bits; -1 when out of memory */
static int renew_into(cJSON *lease, const struct kt_lease_spec *spec, const char *node_uid,
		      int64_t now_us, unsigned *changed)
{
	cJSON *meta = kt_json_get_object(lease, "metadata"), *sp;

	*changed = 0;
	if (!meta) {
		meta = cJSON_CreateObject();
		if (kt_json_set(lease, "metadata", meta) < 0)
			return -1;
	}
	if (node_uid && fix_owner(meta, spec->node, node_uid, changed) < 0)
		return -1;
	sp = kt_json_get_object(lease, "spec");
	if (!sp) {
		sp = cJSON_CreateObject();
		if (kt_json_set(lease, "spec", sp) < 0)
			return -1;
	}
	return set_spec(sp, spec, now_us);
}

cJSON *kt_lease_renewed(const cJSON *base, const struct kt_lease_spec *spec,
			const char *node_uid, int64_t now_us, unsigned *changed,
			struct kt_err *err)
{
	cJSON *lease = NULL;
	unsigned ch = 0;

	if (!cJSON_IsObject(base)) {
		kt_error_kind(err, KT_ERR_INPUT, "lease/%s: not an object", spec->node);
		return NULL;
	}
	lease = kt_json_dup(base);
	if (!lease || renew_into(lease, spec, node_uid, now_us, &ch) < 0) {
		cJSON_Delete(lease);
		kt_error(err, "out of memory");
		return NULL;
	}
	if (changed)
		*changed = ch;
	return lease;
}

/* ---------------------------------------------------------------- steps */

void kt_lease_init(struct kt_lease *l, const struct kt_lease_spec *spec)
{
	memset(l, 0, sizeof(*l));
	l->spec = *spec;
	l->backoff = (struct kt_backoff){ .first_ms = KT_LEASE_BACKOFF_FIRST_MS,
					  .cap_ms = KT_LEASE_BACKOFF_MAX_MS, .factor = 2 };
}

void kt_lease_release(struct kt_lease *l)
{
	if (!l)
		return;
	cJSON_Delete(l->latest);
	free(l->node_uid);
	free(l->body);
	l->latest = NULL;
	l->node_uid = NULL;
	l->body = NULL;
}

void kt_lease_begin(struct kt_lease *l, int64_t deadline_ms, bool read_node)
{
	if (read_node || !l->node_read || !l->node_uid)
		l->step = KT_LEASE_GET_NODE;
	else
		l->step = l->latest ? KT_LEASE_UPDATE : KT_LEASE_GET;
	l->tries = 0;
	l->attempts = 0;
	l->deadline_ms = deadline_ms;
	l->noreply_ms = -1;
	l->result = KT_LEASE_NONE;
	l->renew_time[0] = '\0';
	l->changed = 0;
	l->no_node = false;
	kt_err_clear(&l->err);
}

int64_t kt_lease_next_backoff(const struct kt_lease *l)
{
	return kt_backoff_peek(&l->backoff, 0);
}

/*
 * The body of a write, built now: latest renewed (in place: a retry renews
 * it again, the same fields, and a 409 reads it anew) or a new lease.
 */
static int build_write(struct kt_lease *l, int64_t now_us, struct kt_err *err)
{
	cJSON *doc = NULL;
	char *text;
	unsigned ch = 0;

	if (l->step == KT_LEASE_UPDATE) {
		if (!cJSON_IsObject(l->latest))
			return kt_error_kind(err, KT_ERR_INPUT, "lease/%s: not an object",
					     l->spec.node);
		if (renew_into(l->latest, &l->spec, l->node_uid, now_us, &ch) < 0)
			return kt_error(err, "out of memory");
		/* what the first write to this copy changed stays said */
		l->changed |= ch;
	} else {
		doc = kt_lease_doc_new(&l->spec, l->node_uid, now_us, err);
		if (!doc)
			return -1;
		l->changed = l->node_uid ? KT_LEASE_OWNER_ADDED : 0;
	}
	/* the project's one printer, as every request body goes out */
	text = kt_json_print(doc ? doc : l->latest, 0);
	cJSON_Delete(doc);
	if (!text)
		return kt_error(err, "out of memory");
	text[strcspn(text, "\n")] = '\0';	/* compact: the only newline ends it */
	free(l->body);
	l->body = text;
	kt_time_format(now_us, true, l->renew_time, sizeof(l->renew_time));
	return 0;
}

int kt_lease_request(struct kt_lease *l, int64_t now_us, struct kt_lease_req *req,
		     struct kt_err *err)
{
	const char *node = l->spec.node;

	memset(req, 0, sizeof(*req));
	free(l->body);
	l->body = NULL;
	switch (l->step) {
	case KT_LEASE_GET_NODE:
		req->method = "GET";
		snprintf(l->path, sizeof(l->path), "/api/v1/nodes/%s", node);
		break;
	case KT_LEASE_GET:
		req->method = "GET";
		snprintf(l->path, sizeof(l->path), "%s/%s", KT_LEASE_COLLECTION, node);
		break;
	case KT_LEASE_CREATE:
		req->method = "POST";
		snprintf(l->path, sizeof(l->path), "%s", KT_LEASE_COLLECTION);
		break;
	case KT_LEASE_UPDATE:
		req->method = "PUT";
		snprintf(l->path, sizeof(l->path), "%s/%s", KT_LEASE_COLLECTION, node);
		break;
	}
	if ((l->step == KT_LEASE_CREATE || l->step == KT_LEASE_UPDATE) &&
	    build_write(l, now_us, err) < 0)
		return -1;
	req->path = l->path;
	req->body = l->body;
	req->body_len = l->body ? strlen(l->body) : 0;
	l->attempts++;
	return 0;
}

const char *kt_lease_result_name(enum kt_lease_result r)
{
	switch (r) {
	case KT_LEASE_RENEWED:
		return "renewed";
	case KT_LEASE_CREATED:
		return "created";
	case KT_LEASE_SKIPPED:
		return "skipped";
	case KT_LEASE_FAILED:
		return "failed";
	case KT_LEASE_NONE:
		break;
	}
	return "";
}

/* "node/vk-1" or "lease/vk-1 (kube-node-lease)", the object a step acts on */
static void fail_reply(struct kt_lease *l, const struct kt_lease_reply *r)
{
	char obj[KT_LEASE_NAME_MAX + 40];

	if (l->step == KT_LEASE_GET_NODE)
		snprintf(obj, sizeof(obj), "node/%s", l->spec.node);
	else
		snprintf(obj, sizeof(obj), "lease/%s (%s)", l->spec.node, KT_LEASE_NAMESPACE);
	if (r->status == 0) {
		kt_error(&l->err, "%s: %s", obj, r->error ? r->error : "no reply");
		if (l->attempts > 1) {
			size_t n = strlen(l->err.msg);

			snprintf(l->err.msg + n, sizeof(l->err.msg) - n, " (%d attempts)",
				 l->attempts);
		}
		return;
	}
	kt_object_status_error(&l->err, KT_ERR_FAIL, obj, r->status, r->json);
}

/* a Status reply's details.retryAfterSeconds in ms, 0 when none */
static int64_t retry_after_ms(const struct kt_lease_reply *r)
{
	const cJSON *secs = kt_json_path(r->json, "details.retryAfterSeconds");
	int64_t v;

	if (!str_is(r->json, "kind", "Status") || kt_json_num_int64(secs, &v, NULL) < 0 ||
	    v <= 0 || v > 3600)
		return 0;
	return v * 1000;
}

static enum kt_lease_next done(struct kt_lease *l, enum kt_lease_result result)
{
	l->result = result;
	if (result != KT_LEASE_FAILED)
		kt_backoff_reset(&l->backoff);
	return KT_LEASE_DONE;
}

static enum kt_lease_next fail(struct kt_lease *l, const struct kt_lease_reply *r)
{
	fail_reply(l, r);
	return done(l, KT_LEASE_FAILED);
}

/* the reply's body as the renewal's own: taken when the caller gives it, else copied */
static cJSON *reply_doc(const struct kt_lease_reply *r)
{
	cJSON *doc;

	if (!r->own || *r->own != r->json)
		return kt_json_dup(r->json);
	doc = *r->own;
	*r->own = NULL;
	return doc;
}

/* keeps the lease the server returned */
static enum kt_lease_next keep(struct kt_lease *l, const struct kt_lease_reply *r,
			       enum kt_lease_result result)
{
	cJSON *copy = cJSON_IsObject(r->json) ? reply_doc(r) : NULL;

	cJSON_Delete(l->latest);
	l->latest = copy;
	return done(l, result);
}

/* puts key: value first in obj, unless obj has key; -1 when out of memory */
static int put_first(cJSON *obj, const char *key, const char *value)
{
	cJSON *item;

	if (kt_json_get(obj, key))
		return 0;
	item = cJSON_CreateString(value);
	if (!item)
		return -1;
	item->string = strdup(key);
	if (!item->string) {
		cJSON_Delete(item);
		return -1;
	}
	if (!cJSON_InsertItemInArray(obj, 0, item) && !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

int kt_lease_take_latest(struct kt_lease *l, cJSON *lease)
{
	if (!cJSON_IsObject(lease) || put_first(lease, "kind", "Lease") < 0 ||
	    put_first(lease, "apiVersion", "coordination.k8s.io/v1") < 0) {
		cJSON_Delete(lease);
		return -1;
	}
	cJSON_Delete(l->latest);
	l->latest = lease;
	return 0;
}

int kt_lease_set_node_uid(struct kt_lease *l, const char *uid)
{
	char *copy = uid && *uid ? strdup(uid) : NULL;

	if (uid && *uid && !copy)
		return -1;
	free(l->node_uid);
	l->node_uid = copy;
	l->node_read = true;
	return 0;
}

static void take_uid(struct kt_lease *l, const cJSON *node)
{
	kt_lease_set_node_uid(l, kt_json_get_string(kt_json_get_object(node, "metadata"), "uid"));
}

/* a 2xx or 404 reply moves the renewal on; the next step, or DONE */
static enum kt_lease_next advance(struct kt_lease *l, const struct kt_lease_reply *r,
				  bool ok)
{
	switch (l->step) {
	case KT_LEASE_GET_NODE:
		if (!ok) {
			/* a typo or a stale fleet file: a lease written now would
			 * have no owner, and nothing would ever collect it */
			kt_lease_set_node_uid(l, NULL);
			l->no_node = true;
			kt_error(&l->err, "node/%s: not found: no lease is written for a node "
				 "that does not exist", l->spec.node);
			l->err.http_status = 404;
			return done(l, KT_LEASE_SKIPPED);
		}
		take_uid(l, r->json);
		l->step = l->latest ? KT_LEASE_UPDATE : KT_LEASE_GET;
		return KT_LEASE_SEND;
	case KT_LEASE_GET:
		if (!ok) {
			l->step = KT_LEASE_CREATE;
			return KT_LEASE_SEND;
		}
		cJSON_Delete(l->latest);
		l->latest = reply_doc(r);
		if (!l->latest)
			return fail(l, &(struct kt_lease_reply){ .error = "out of memory" });
		l->changed = 0;	/* a new copy: its first write says what it changed */
		l->step = KT_LEASE_UPDATE;
		return KT_LEASE_SEND;
	case KT_LEASE_CREATE:
		if (!ok)
			return fail(l, r);
		return keep(l, r, KT_LEASE_CREATED);
	case KT_LEASE_UPDATE:
		if (!ok) {
			/* deleted since it was read: make it again */
			cJSON_Delete(l->latest);
			l->latest = NULL;
			l->step = KT_LEASE_CREATE;
			return KT_LEASE_SEND;
		}
		return keep(l, r, KT_LEASE_RENEWED);
	}
	return fail(l, r);
}

enum kt_lease_next kt_lease_reply(struct kt_lease *l, const struct kt_lease_reply *r,
				  int64_t now_ms, int64_t *delay_ms)
{
	bool write = l->step == KT_LEASE_CREATE || l->step == KT_LEASE_UPDATE;

	/* sent: a fleet need not keep every body */
	free(l->body);
	l->body = NULL;
	if (r->status != 0)
		l->noreply_ms = -1;
	if (r->status >= 200 && r->status < 300)
		return advance(l, r, true);
	if (r->status == 404 && l->step != KT_LEASE_CREATE)
		return advance(l, r, false);
	if (r->status == 409 && write) {
		/* someone else wrote it (or it exists already): read it again */
		if (++l->tries >= KT_LEASE_MAX_TRIES)
			return fail(l, r);
		cJSON_Delete(l->latest);
		l->latest = NULL;
		l->step = KT_LEASE_GET;
		return KT_LEASE_SEND;
	}
	if (!kt_http_retryable(r->status, retry_after_ms(r) > 0))
		return fail(l, r);
	if (r->status == 0 && l->noreply_ms < 0)
		l->noreply_ms = now_ms;
	*delay_ms = kt_backoff_peek(&l->backoff, now_ms);
	/* the server asked for a longer wait (429, 503): honour it */
	if (retry_after_ms(r) > *delay_ms)
		*delay_ms = retry_after_ms(r);
	if (l->deadline_ms && now_ms + *delay_ms > l->deadline_ms)
		return fail(l, r);
	if (r->status == 0 && now_ms + *delay_ms - l->noreply_ms > KT_LEASE_NOREPLY_MS)
		return fail(l, r);
	/* taken only now: a wait given up leaves the backoff where it was; a
	 * longer wait the server asked for is where the next one grows from */
	kt_backoff_next(&l->backoff, now_ms);
	l->backoff.wait_ms = *delay_ms;
	return KT_LEASE_WAIT;
}
