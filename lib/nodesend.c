/* SPDX-License-Identifier: Apache-2.0 */
/* nodesend: sending a node's three-way status patch, as requests out and replies in */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "json.h"
#include "json_go.h"
#include "nodesend.h"
#include "nodestatus.h"
#include "smp.h"

void kt_nodesend_init(struct kt_nodesend *s, const char *name,
		      const struct kt_schema *schema, unsigned flags)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->schema = schema;
	s->flags = flags;
}

/* forgets the outcome of the last send */
static void forget(struct kt_nodesend *s)
{
	cJSON_Delete(s->patch);
	cJSON_Delete(s->node);
	cJSON_Delete(s->current);
	free(s->body);
	s->patch = s->node = s->current = NULL;
	s->body = NULL;
}

void kt_nodesend_release(struct kt_nodesend *s)
{
	if (!s)
		return;
	forget(s);
	cJSON_Delete(s->desired);
	s->desired = NULL;
}

void kt_nodesend_begin(struct kt_nodesend *s, cJSON *desired)
{
	forget(s);
	cJSON_Delete(s->desired);
	s->desired = desired;
	s->step = KT_NODESEND_GET;
	s->writes = 0;
	s->requests = 0;
	s->registered = false;
	s->conflict = false;
	s->result = KT_NODESEND_NONE;
	kt_err_clear(&s->err);
}

void kt_nodesend_replace(struct kt_nodesend *s, cJSON *desired)
{
	cJSON_Delete(s->desired);
	s->desired = desired;
}

cJSON *kt_nodesend_registration(const cJSON *desired, const char *name)
{
	const cJSON *dmeta = kt_json_get_object(desired, "metadata"), *c;
	cJSON *node = cJSON_CreateObject(), *meta = cJSON_CreateObject(), *ann;
	bool ok = node && meta;

	ok = ok && kt_json_set(node, "apiVersion", cJSON_CreateString("v1")) == 0;
	ok = ok && kt_json_set(node, "kind", cJSON_CreateString("Node")) == 0;
	ok = ok && kt_json_set(meta, "name", cJSON_CreateString(name)) == 0;
	if (ok && kt_json_get_object(dmeta, "labels"))
		ok = kt_json_set(meta, "labels", kt_json_dup(kt_json_get(dmeta, "labels"))) == 0;
	ann = kt_json_dup(kt_json_get_object(dmeta, "annotations"));
	/* the stash belongs to the status patch that follows, never to a create */
	cJSON_DeleteItemFromObjectCaseSensitive(ann, KT_NODESTATUS_ANN_STATUS);
	cJSON_DeleteItemFromObjectCaseSensitive(ann, KT_NODESTATUS_ANN_META);
	if (ok && ann && ann->child) {
		ok = kt_json_set(meta, "annotations", ann) == 0;
		ann = NULL;
	}
	cJSON_Delete(ann);
	if (ok) {
		ok = kt_json_set(node, "metadata", meta) == 0;	/* adopts meta */
		meta = NULL;
	}
	c = kt_json_get_object(desired, "spec");
	if (ok && c)
		ok = kt_json_set(node, "spec", kt_json_dup(c)) == 0;
	cJSON_Delete(meta);
	if (!ok) {
		cJSON_Delete(node);
		return NULL;
	}
	return node;
}

const char *kt_nodesend_target(const cJSON *desired, const char *name, const cJSON *current,
			       struct kt_err *err)
{
	if (!cJSON_IsObject(desired)) {
		kt_error_kind(err, KT_ERR_INPUT, "desired: expected a node object, got %s",
			      kt_json_type_name(desired));
		return NULL;
	}
	if (!name)
		name = kt_json_get_string(kt_json_get_object(desired, "metadata"), "name");
	if (!name && current)
		name = kt_json_get_string(kt_json_get_object(current, "metadata"), "name");
	if (!name) {
		kt_error_kind(err, KT_ERR_INPUT,
			      "desired: no metadata.name; name the node with --node");
		return NULL;
	}
	return kt_node_name_check(name, err) < 0 ? NULL : name;
}

int kt_nodesend_compute(const cJSON *desired, const cJSON *current,
			const struct kt_schema *schema, unsigned flags,
			const char *const *remove, int64_t now_us, cJSON **patch, cJSON **node,
			struct kt_err *err)
{
	unsigned nf = flags & KT_NODESEND_HEARTBEAT ? KT_NODESTATUS_HEARTBEAT : 0;

	*patch = NULL;
	if (node)
		*node = NULL;
	if (kt_nodestatus_patch(desired, current, schema, nf, now_us, patch, err) < 0)
		return -1;
	if ((remove && kt_nodestatus_remove_conditions(*patch, desired, current, remove,
						       err) < 0) ||
	    (node && kt_smp_apply(current, *patch, schema, node, err) < 0)) {
		cJSON_Delete(*patch);
		*patch = NULL;
		return -1;
	}
	return 0;
}

/*
 * True when patch would change nothing: it is {}, or it only holds
 * directives such as $setElementOrder that leave current as it is (upstream
 * emits one whenever a foreign element sits in a merge list).
 */
static bool patch_is_noop(const struct kt_nodesend *s, const cJSON *current)
{
	struct kt_err err = { 0 };
	cJSON *applied = NULL;
	bool same;

	if (!s->patch->child)
		return true;
	if (kt_smp_apply(current, s->patch, s->schema, &applied, &err) < 0)
		return false;	/* let the server have its say */
	same = kt_go_equal(applied, current);
	cJSON_Delete(applied);
	return same;
}

static int set_path(struct kt_nodesend *s, const char *name, const char *sub,
		    struct kt_err *err)
{
	int n = snprintf(s->path, sizeof(s->path), "/api/v1/nodes%s%s%s", name ? "/" : "",
			 name ? name : "", sub);

	if (n < 0 || (size_t)n >= sizeof(s->path))
		return kt_error_kind(err, KT_ERR_INPUT, "node name longer than %d characters",
				     KT_NODESEND_NAME_MAX);
	return 0;
}

/* the request body: the Go printer, as virtual-kubelet's patch goes out */
static int set_body(struct kt_nodesend *s, const cJSON *doc, struct kt_err *err)
{
	free(s->body);
	s->body = kt_json_print(doc, KT_JSON_SORTED | KT_JSON_NO_NEWLINE);
	if (!s->body)
		return kt_error(err, "out of memory");
	return 0;
}

int kt_nodesend_request(struct kt_nodesend *s, struct kt_nodesend_req *req,
			struct kt_err *err)
{
	cJSON *reg;
	int rc;

	memset(req, 0, sizeof(*req));
	free(s->body);
	s->body = NULL;
	switch (s->step) {
	case KT_NODESEND_GET:
		req->method = "GET";
		if (set_path(s, s->name, "", err) < 0)
			return -1;
		break;
	case KT_NODESEND_CREATE:
		req->method = "POST";
		reg = kt_nodesend_registration(s->desired, s->name);
		if (!reg)
			return kt_error(err, "out of memory");
		rc = set_body(s, reg, err);
		cJSON_Delete(reg);
		if (rc < 0 || set_path(s, NULL, "", err) < 0)
			return -1;
		break;
	case KT_NODESEND_PATCH:
		req->method = "PATCH";
		req->content_type = KT_NODESEND_PATCH_TYPE;
		if (set_body(s, s->patch, err) < 0 || set_path(s, s->name, "/status", err) < 0)
			return -1;
		s->writes++;
		break;
	}
	req->path = s->path;
	req->body = s->body;
	req->body_len = s->body ? strlen(s->body) : 0;
	s->requests++;
	return 0;
}

static enum kt_nodesend_next finish(struct kt_nodesend *s, enum kt_nodesend_result result)
{
	s->result = result;
	free(s->body);
	s->body = NULL;
	return KT_NODESEND_DONE;
}

static enum kt_nodesend_next fail(struct kt_nodesend *s, const struct kt_err *err)
{
	if (err != &s->err)
		s->err = *err;
	return finish(s, KT_NODESEND_FAILED);
}

static enum kt_nodesend_next oom(struct kt_nodesend *s)
{
	kt_error(&s->err, "out of memory");
	return finish(s, KT_NODESEND_FAILED);
}

/* the node was read (or created): compute, then PATCH or end */
static enum kt_nodesend_next got_node(struct kt_nodesend *s, const cJSON *node,
				      int64_t now_us)
{
	int rc;

	cJSON_Delete(s->current);
	cJSON_Delete(s->patch);
	s->patch = NULL;
	s->current = kt_json_dup(node);
	if (!s->current)
		return oom(s);
	if (s->flags & KT_NODESEND_READ)
		return finish(s, KT_NODESEND_READ_DONE);
	if (s->flags & KT_NODESEND_REFRESH)
		rc = kt_nodestatus_refresh(s->current, s->schema, now_us, &s->patch, &s->err);
	else
		rc = kt_nodesend_compute(s->desired, s->current, s->schema, s->flags, s->remove,
					 now_us, &s->patch, NULL, &s->err);
	if (rc < 0)
		return fail(s, &s->err);
	if (patch_is_noop(s, s->current)) {
		s->node = kt_json_dup(s->current);
		return s->node ? finish(s, KT_NODESEND_UNCHANGED) : oom(s);
	}
	s->step = KT_NODESEND_PATCH;
	return KT_NODESEND_SEND;
}

enum kt_nodesend_next kt_nodesend_reply(struct kt_nodesend *s,
					const struct kt_nodesend_reply *r, int64_t now_us)
{
	enum kt_err_kind kind = r->err ? r->err->kind : KT_ERR_FAIL;

	s->conflict = false;
	switch (s->step) {
	case KT_NODESEND_GET:
		if (!r->err)
			return got_node(s, r->json, now_us);
		if (kind == KT_ERR_NOTFOUND && (s->flags & KT_NODESEND_REFRESH))
			return finish(s, KT_NODESEND_ABSENT);
		if (kind == KT_ERR_NOTFOUND && (s->flags & KT_NODESEND_REGISTER) &&
		    !(s->flags & KT_NODESEND_READ) && !s->registered) {
			s->step = KT_NODESEND_CREATE;
			return KT_NODESEND_SEND;
		}
		return fail(s, r->err);
	case KT_NODESEND_CREATE:
		s->registered = true;
		if (!r->err)
			return got_node(s, r->json, now_us);
		if (kind == KT_ERR_CONFLICT) {
			/* someone else registered it meanwhile: patch theirs */
			s->step = KT_NODESEND_GET;
			return KT_NODESEND_SEND;
		}
		return fail(s, r->err);
	case KT_NODESEND_PATCH:
		if (!r->err) {
			s->node = kt_json_dup(r->json);
			return s->node ? finish(s, KT_NODESEND_PATCHED) : oom(s);
		}
		if (kind == KT_ERR_CONFLICT && s->writes < KT_NODESEND_MAX_WRITES) {
			s->conflict = true;
			s->step = KT_NODESEND_GET;
			return KT_NODESEND_SEND;
		}
		return fail(s, r->err);
	}
	return fail(s, r->err);
}
