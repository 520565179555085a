/* SPDX-License-Identifier: Apache-2.0 */
/* nodestatus: virtual-kubelet's stash annotations and the three-way node status patch */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core.h"
#include "json.h"
#include "json_go.h"
#include "nodestatus.h"
#include "schema.h"
#include "smp.h"
#include "timeutil.h"

/* ------------------------------------------------------- Go-style marshal */

/*
 * The stash annotations must read byte for byte as Go's json.Marshal writes
 * them, so a node can pass between virtual-kubelet and this tool: the Go
 * printer, keys in the order given (the layout below puts them in Go's).
 */
static char *go_marshal(const cJSON *v, struct kt_err *err)
{
	char *s = kt_json_print(v, KT_JSON_GO_ESCAPE | KT_JSON_NO_NEWLINE);

	if (!s)
		kt_error(err, "out of memory");
	return s;
}

/* ------------------------------------------------------------ tree helpers */

static bool is_null_or_absent(const cJSON *v)
{
	return !v || cJSON_IsNull(v);
}

/* removes null members from objects at any depth (Go decodes them as unset) */
static void drop_nulls(cJSON *item)
{
	cJSON *c, *next;

	for (c = item ? item->child : NULL; c; c = next) {
		next = c->next;
		if (cJSON_IsObject(item) && cJSON_IsNull(c))
			cJSON_Delete(cJSON_DetachItemViaPointer(item, c));
		else
			drop_nulls(c);
	}
}

static void drop_member(cJSON *obj, const char *key)
{
	cJSON *c = kt_json_get(obj, key);

	if (c)
		cJSON_Delete(cJSON_DetachItemViaPointer(obj, c));
}

static void drop_if_empty(cJSON *obj, const char *key)
{
	cJSON *c = kt_json_get_object(obj, key);

	if (c && !c->child)
		drop_member(obj, key);
}

/* ------------------------------------------------------- the status layout */

enum fkind {
	F_STR,		/* string, "" when absent */
	F_STR_OE,	/* string, omitted when absent or "" */
	F_TIME,		/* metav1.Time: null when absent */
	F_INT,		/* integer, 0 when absent */
	F_INT_OE,	/* integer, omitted when absent or 0 */
	F_MAP_OE,	/* map: keys sorted, omitted when empty */
	F_LIST_OE,	/* list: omitted when empty; elements laid out by sub */
	F_STRUCT,	/* struct value: always written */
	F_ANY_OE,	/* pointer or anything else: copied, omitted when absent */
};

struct field {
	const char *name;
	enum fkind kind;
	const struct field *sub;	/* element / struct layout, NULL: copy */
};

static const struct field condition_fields[] = {
	{ "type", F_STR, NULL },
	{ "status", F_STR, NULL },
	{ "lastHeartbeatTime", F_TIME, NULL },
	{ "lastTransitionTime", F_TIME, NULL },
	{ "reason", F_STR_OE, NULL },
	{ "message", F_STR_OE, NULL },
	{ NULL, 0, NULL },
};

static const struct field address_fields[] = {
	{ "type", F_STR, NULL },
	{ "address", F_STR, NULL },
	{ NULL, 0, NULL },
};

static const struct field endpoint_fields[] = {
	{ "Port", F_INT, NULL },
	{ NULL, 0, NULL },
};

static const struct field endpoints_fields[] = {
	{ "kubeletEndpoint", F_STRUCT, endpoint_fields },
	{ NULL, 0, NULL },
};

static const struct field nodeinfo_fields[] = {
	{ "machineID", F_STR, NULL },
	{ "systemUUID", F_STR, NULL },
	{ "bootID", F_STR, NULL },
	{ "kernelVersion", F_STR, NULL },
	{ "osImage", F_STR, NULL },
	{ "containerRuntimeVersion", F_STR, NULL },
	{ "kubeletVersion", F_STR, NULL },
	{ "kubeProxyVersion", F_STR, NULL },
	{ "operatingSystem", F_STR, NULL },
	{ "architecture", F_STR, NULL },
	{ "swap", F_ANY_OE, NULL },
	{ NULL, 0, NULL },
};

static const struct field image_fields[] = {
	{ "names", F_LIST_OE, NULL },
	{ "sizeBytes", F_INT_OE, NULL },
	{ NULL, 0, NULL },
};

static const struct field volume_fields[] = {
	{ "name", F_STR, NULL },
	{ "devicePath", F_STR, NULL },
	{ NULL, 0, NULL },
};

static const struct field handler_fields[] = {
	{ "name", F_STR, NULL },
	{ "features", F_ANY_OE, NULL },
	{ NULL, 0, NULL },
};

static const struct field status_fields[] = {
	{ "capacity", F_MAP_OE, NULL },
	{ "allocatable", F_MAP_OE, NULL },
	{ "phase", F_STR_OE, NULL },
	{ "conditions", F_LIST_OE, condition_fields },
	{ "addresses", F_LIST_OE, address_fields },
	{ "daemonEndpoints", F_STRUCT, endpoints_fields },
	{ "nodeInfo", F_STRUCT, nodeinfo_fields },
	{ "images", F_LIST_OE, image_fields },
	{ "volumesInUse", F_LIST_OE, NULL },
	{ "volumesAttached", F_LIST_OE, volume_fields },
	{ "config", F_ANY_OE, NULL },
	{ "runtimeHandlers", F_LIST_OE, handler_fields },
	{ "features", F_ANY_OE, NULL },
	{ "declaredFeatures", F_LIST_OE, NULL },
	{ NULL, 0, NULL },
};

static cJSON *layout(const cJSON *in, const struct field *fields);

static bool is_zero_num(const cJSON *v)
{
	char buf[40];
	const char *t;

	if (!kt_json_is_number(v))
		return false;
	t = kt_json_num_text(v, buf, sizeof(buf));
	return strcmp(t, "0") == 0 || strcmp(t, "-0") == 0;
}

/* the value Go would write for one field, or NULL when it leaves it out */
static cJSON *layout_field(const cJSON *v, const struct field *f, bool *oom)
{
	bool absent = is_null_or_absent(v);
	cJSON *out = NULL, *c;

	switch (f->kind) {
	case F_STR:
		return absent ? cJSON_CreateString("") : kt_json_dup(v);
	case F_STR_OE:
		if (absent || (cJSON_IsString(v) && !*v->valuestring))
			return NULL;
		return kt_json_dup(v);
	case F_TIME:
		return absent ? cJSON_CreateNull() : kt_json_dup(v);
	case F_INT:
		return absent ? kt_json_num_new_int(0) : kt_json_dup(v);
	case F_INT_OE:
		return absent || is_zero_num(v) ? NULL : kt_json_dup(v);
	case F_ANY_OE:
		return absent ? NULL : kt_json_dup(v);
	case F_MAP_OE:
		if (absent || (cJSON_IsObject(v) && !v->child))
			return NULL;
		out = kt_json_dup(v);
		if (out && cJSON_IsObject(out) && !kt_sort_members(out))
			*oom = true;
		return out;
	case F_STRUCT:
		if (absent || cJSON_IsObject(v))
			return layout(v, f->sub);
		return kt_json_dup(v);
	case F_LIST_OE:
		if (absent || (cJSON_IsArray(v) && !v->child))
			return NULL;
		if (!f->sub || !cJSON_IsArray(v))
			return kt_json_dup(v);
		out = cJSON_CreateArray();
		cJSON_ArrayForEach(c, v) {
			cJSON *e = cJSON_IsObject(c) ? layout(c, f->sub) : kt_json_dup(c);

			if (kt_json_append(out, e) < 0)
				*oom = true;
		}
		return out;
	}
	return NULL;
}

static bool known(const struct field *fields, const char *name)
{
	for (; fields->name; fields++)
		if (strcmp(fields->name, name) == 0)
			return true;
	return false;
}

/* in (an object or NULL) laid out as Go marshals the struct fields describes */
static cJSON *layout(const cJSON *in, const struct field *fields)
{
	const struct field *f;
	const cJSON *c;
	cJSON *out = cJSON_CreateObject();
	bool oom = !out;

	for (f = fields; !oom && f->name; f++) {
		cJSON *v = layout_field(kt_json_get(in, f->name), f, &oom);

		if (v && kt_json_set(out, f->name, v) < 0)
			oom = true;
	}
	/* members Go does not know: kept, after the known ones, so that this
	 * tool can still delete them later; Go readers ignore them */
	cJSON_ArrayForEach(c, in) {
		if (oom || known(fields, c->string) || cJSON_IsNull(c))
			continue;
		if (kt_json_set(out, c->string, kt_json_dup(c)) < 0)
			oom = true;
	}
	if (oom) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

char *kt_nodestatus_status_text(const cJSON *status, struct kt_err *err)
{
	cJSON *laid;
	char *text;

	if (status && !cJSON_IsNull(status) && !cJSON_IsObject(status)) {
		kt_error_kind(err, KT_ERR_INPUT, "status: expected an object");
		return NULL;
	}
	laid = layout(status, status_fields);
	if (!laid) {
		kt_error(err, "out of memory");
		return NULL;
	}
	text = go_marshal(laid, err);
	cJSON_Delete(laid);
	return text;
}

/* ----------------------------------------------------------- validation */

/* an optional member: absent, null or an object; else an input error */
static int want_object(const cJSON *parent, const char *key, const char *what,
		       const cJSON **out, struct kt_err *err)
{
	const cJSON *v = kt_json_get(parent, key);

	*out = NULL;
	if (is_null_or_absent(v))
		return 0;
	if (!cJSON_IsObject(v))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: expected an object, got %s", what,
				     kt_json_type_name(v));
	*out = v;
	return 0;
}

static int want_string_map(const cJSON *map, const char *what, struct kt_err *err)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, map) {
		if (!cJSON_IsString(c))
			return kt_error_kind(err, KT_ERR_INPUT,
					     "%s: '%s': expected a string, got %s", what,
					     c->string, kt_json_type_name(c));
	}
	return 0;
}

/* a merge list keyed on type: every element an object with a string type */
static int want_typed_list(const cJSON *status, const char *key, const char *who,
			   struct kt_err *err)
{
	const cJSON *list = kt_json_get(status, key), *c;
	int i = 0;

	if (is_null_or_absent(list))
		return 0;
	if (!cJSON_IsArray(list))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: status.%s: expected an array, got %s",
				     who, key, kt_json_type_name(list));
	cJSON_ArrayForEach(c, list) {
		if (!cJSON_IsObject(c))
			return kt_error_kind(err, KT_ERR_INPUT,
					     "%s: status.%s[%d]: expected an object, got %s", who,
					     key, i, kt_json_type_name(c));
		if (!cJSON_IsString(kt_json_get(c, "type")))
			return kt_error_kind(err, KT_ERR_INPUT,
					     "%s: status.%s[%d]: missing the string 'type'", who,
					     key, i);
		i++;
	}
	return 0;
}

/* checks the shape of a node (desired or current); who names it in messages */
static int check_node(const cJSON *node, const char *who, struct kt_err *err)
{
	const cJSON *meta, *map, *status;
	char what[64];

	if (!cJSON_IsObject(node))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: expected a node object, got %s", who,
				     kt_json_type_name(node));
	snprintf(what, sizeof(what), "%s: metadata", who);
	if (want_object(node, "metadata", what, &meta, err) < 0)
		return -1;
	snprintf(what, sizeof(what), "%s: metadata.labels", who);
	if (want_object(meta, "labels", what, &map, err) < 0 ||
	    want_string_map(map, what, err) < 0)
		return -1;
	snprintf(what, sizeof(what), "%s: metadata.annotations", who);
	if (want_object(meta, "annotations", what, &map, err) < 0 ||
	    want_string_map(map, what, err) < 0)
		return -1;
	snprintf(what, sizeof(what), "%s: status", who);
	if (want_object(node, "status", what, &status, err) < 0)
		return -1;
	if (want_typed_list(status, "conditions", who, err) < 0 ||
	    want_typed_list(status, "addresses", who, err) < 0)
		return -1;
	return 0;
}

/* ---------------------------------------------------------- object meta */

static bool is_stash_key(const char *key)
{
	return strcmp(key, KT_NODESTATUS_ANN_STATUS) == 0 ||
	       strcmp(key, KT_NODESTATUS_ANN_META) == 0;
}

/* a copy of a string map, keys sorted, optionally without the stash keys;
 * NULL when nothing is left */
static cJSON *string_map(const cJSON *map, bool skip_stash, bool *oom)
{
	const cJSON *c;
	cJSON *out;

	if (!cJSON_IsObject(map) || !map->child)
		return NULL;
	out = cJSON_CreateObject();
	cJSON_ArrayForEach(c, map) {
		if (!cJSON_IsString(c) || (skip_stash && is_stash_key(c->string)))
			continue;
		if (kt_json_set(out, c->string, cJSON_CreateString(c->valuestring)) < 0)
			*oom = true;
	}
	if (!out || !out->child) {
		*oom = *oom || !out;
		cJSON_Delete(out);
		return NULL;
	}
	if (!kt_sort_members(out))
		*oom = true;
	return out;
}

static void set_opt(cJSON *obj, const char *key, cJSON *v, bool *oom)
{
	if (v && kt_json_set(obj, key, v) < 0)
		*oom = true;
}

static void set_nonempty_string(cJSON *obj, const char *key, const char *s, bool *oom)
{
	if (s && *s)
		set_opt(obj, key, cJSON_CreateString(s), oom);
}

/* ObjectMeta as simplestObjectMetadata builds it: identity from current,
 * labels and annotations from desired */
static cJSON *stash_meta(const cJSON *desired, const cJSON *current, bool *oom)
{
	const cJSON *cmeta = kt_json_get_object(current, "metadata");
	const cJSON *dmeta = kt_json_get_object(desired, "metadata");
	cJSON *meta = cJSON_CreateObject();

	if (!meta) {
		*oom = true;
		return NULL;
	}
	set_nonempty_string(meta, "name", kt_json_get_string(cmeta, "name"), oom);
	set_nonempty_string(meta, "namespace", kt_json_get_string(cmeta, "namespace"), oom);
	set_nonempty_string(meta, "uid", kt_json_get_string(cmeta, "uid"), oom);
	set_opt(meta, "labels", string_map(kt_json_get(dmeta, "labels"), false, oom), oom);
	set_opt(meta, "annotations", string_map(kt_json_get(dmeta, "annotations"), true, oom),
		oom);
	return meta;
}

char *kt_nodestatus_meta_text(const cJSON *desired, const cJSON *current, struct kt_err *err)
{
	bool oom = false;
	cJSON *meta = stash_meta(desired, current, &oom);
	char *text = NULL;

	if (oom)
		kt_error(err, "out of memory");
	else
		text = go_marshal(meta, err);
	cJSON_Delete(meta);
	return text;
}

/* ------------------------------------------------------------- original */

/*
 * One stash annotation as a JSON object.  "null" reads as {} as it does in
 * Go.  Anything that is not a JSON object is an input error naming the
 * annotation: a broken stash must stop the update, never turn into deletes.
 */
static cJSON *parse_stash(const char *key, const char *text, struct kt_err *err)
{
	struct kt_json_reader *r;
	struct kt_err perr = { 0 };
	cJSON *doc = NULL;
	int rc = -1;

	r = kt_json_reader_open_mem("value", text, strlen(text), 0,
				    KT_JSON_JSON_ONLY, &perr);
	if (r)
		rc = kt_json_reader_next(r, &doc, &perr);
	kt_json_reader_close(r);
	if (rc == 0)
		snprintf(perr.msg, sizeof(perr.msg), "empty value");
	if (rc == 1 && cJSON_IsNull(doc)) {
		cJSON_Delete(doc);
		return cJSON_CreateObject();
	}
	if (rc == 1 && cJSON_IsObject(doc))
		return doc;
	if (rc == 1)
		kt_error_kind(err, KT_ERR_INPUT, "annotation '%s' holds %s, expected a JSON object",
			      key, kt_json_type_name(doc));
	else
		kt_error_kind(err, KT_ERR_INPUT, "annotation '%s' is not valid JSON: %s", key,
			      perr.msg);
	cJSON_Delete(doc);
	return NULL;
}

/* the Go zero values of the status stash, which mean "never set" */
static void drop_status_zeros(cJSON *status)
{
	cJSON *info = kt_json_get_object(status, "nodeInfo");
	cJSON *eps = kt_json_get_object(status, "daemonEndpoints");
	cJSON *ep = kt_json_get_object(eps, "kubeletEndpoint");
	cJSON *c, *next;

	drop_nulls(status);
	for (c = info ? info->child : NULL; c; c = next) {
		next = c->next;
		if (cJSON_IsString(c) && !*c->valuestring)
			cJSON_Delete(cJSON_DetachItemViaPointer(info, c));
	}
	if (is_zero_num(kt_json_get(ep, "Port")))
		drop_member(ep, "Port");
	drop_if_empty(eps, "kubeletEndpoint");
	drop_if_empty(status, "daemonEndpoints");
	drop_if_empty(status, "nodeInfo");
}

static cJSON *original_meta(const cJSON *stash, bool *oom)
{
	static const char *const ids[] = { "name", "namespace", "uid" };
	cJSON *meta = cJSON_CreateObject();
	size_t i;

	if (!meta) {
		*oom = true;
		return NULL;
	}
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		set_nonempty_string(meta, ids[i], kt_json_get_string(stash, ids[i]), oom);
	set_opt(meta, "labels", string_map(kt_json_get(stash, "labels"), false, oom), oom);
	set_opt(meta, "annotations", string_map(kt_json_get(stash, "annotations"), true, oom),
		oom);
	return meta;
}

int kt_nodestatus_original(const cJSON *current, cJSON **original, struct kt_err *err)
{
	const cJSON *ann = kt_json_path(current, "metadata.annotations");
	const cJSON *meta_ann = kt_json_get(ann, KT_NODESTATUS_ANN_META);
	const cJSON *status_ann = kt_json_get(ann, KT_NODESTATUS_ANN_STATUS);
	cJSON *orig = NULL, *meta = NULL, *status = NULL;
	bool oom = false;
	int rc = -1;

	*original = NULL;
	if (check_node(current, "current", err) < 0)
		goto out;
	orig = cJSON_CreateObject();
	if (!orig || !meta_ann || !status_ann) {
		/* upgrade path: nothing known, so nothing will be deleted */
		oom = !orig;
		rc = 0;
		goto out;
	}
	meta = parse_stash(KT_NODESTATUS_ANN_META, meta_ann->valuestring, err);
	if (!meta)
		goto out;
	status = parse_stash(KT_NODESTATUS_ANN_STATUS, status_ann->valuestring, err);
	if (!status)
		goto out;
	drop_status_zeros(status);
	set_opt(orig, "metadata", original_meta(meta, &oom), &oom);
	if (kt_json_set(orig, "status", status) < 0)
		oom = true;
	status = NULL;
	rc = 0;
out:
	if (rc == 0 && oom)
		rc = kt_error(err, "out of memory");
	if (rc == 0) {
		*original = orig;
		orig = NULL;
	}
	cJSON_Delete(status);
	cJSON_Delete(meta);
	cJSON_Delete(orig);
	return rc;
}

/* ------------------------------------------------------------- modified */

static bool is_merge_list(const char *key)
{
	return strcmp(key, "conditions") == 0 || strcmp(key, "addresses") == 0;
}

/*
 * Where the last applied node had a map (labels, capacity, nodeInfo...) or a
 * merge list (conditions, addresses) that desired no longer has, modified
 * gets an empty one, so the diff deletes what was there key by key or
 * element by element instead of nulling the whole field and with it what
 * others wrote.
 */
static void fill_empty(const cJSON *orig, cJSON *mod, bool status_level, bool *oom)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, orig) {
		cJSON *m = kt_json_get(mod, c->string);

		if (cJSON_IsObject(c)) {
			if (!m) {
				m = cJSON_CreateObject();
				if (kt_json_set(mod, c->string, m) < 0) {
					*oom = true;
					return;
				}
			}
			if (cJSON_IsObject(m))
				fill_empty(c, m, false, oom);
		} else if (cJSON_IsArray(c) && c->child && !m && status_level &&
			   is_merge_list(c->string)) {
			set_opt(mod, c->string, cJSON_CreateArray(), oom);
		}
	}
}

static cJSON *modified_meta(const cJSON *desired, const cJSON *current, const cJSON *original,
			    char *meta_text, char *status_text, bool *oom)
{
	const cJSON *cmeta = kt_json_get_object(current, "metadata");
	const cJSON *dmeta = kt_json_get_object(desired, "metadata");
	cJSON *meta = cJSON_CreateObject(), *labels, *ann;

	if (!meta) {
		*oom = true;
		return NULL;
	}
	set_nonempty_string(meta, "name", kt_json_get_string(cmeta, "name"), oom);
	set_nonempty_string(meta, "namespace", kt_json_get_string(cmeta, "namespace"), oom);
	set_nonempty_string(meta, "uid", kt_json_get_string(cmeta, "uid"), oom);
	labels = string_map(kt_json_get(dmeta, "labels"), false, oom);
	if (!labels && kt_json_path(original, "metadata.labels"))
		labels = cJSON_CreateObject();
	set_opt(meta, "labels", labels, oom);
	ann = string_map(kt_json_get(dmeta, "annotations"), true, oom);
	if (!ann)
		ann = cJSON_CreateObject();
	set_opt(ann, KT_NODESTATUS_ANN_META, cJSON_CreateString(meta_text), oom);
	set_opt(ann, KT_NODESTATUS_ANN_STATUS, cJSON_CreateString(status_text), oom);
	if (!ann || kt_json_set(meta, "annotations", ann) < 0)
		*oom = true;
	return meta;
}

int kt_nodestatus_modified(const cJSON *desired, const cJSON *current, const cJSON *original,
			   cJSON **modified, struct kt_err *err)
{
	const cJSON *dstatus = kt_json_get_object(desired, "status");
	char *meta_text = NULL, *status_text = NULL;
	cJSON *mod = NULL, *status = NULL;
	bool oom = false;
	int rc = -1;

	*modified = NULL;
	if (check_node(desired, "desired", err) < 0 || check_node(current, "current", err) < 0)
		goto out;
	meta_text = kt_nodestatus_meta_text(desired, current, err);
	if (!meta_text)
		goto out;
	status_text = kt_nodestatus_status_text(dstatus, err);
	if (!status_text)
		goto out;
	mod = cJSON_CreateObject();
	status = dstatus ? kt_json_dup(dstatus) : cJSON_CreateObject();
	if (!mod || !status) {
		rc = kt_error(err, "out of memory");
		goto out;
	}
	drop_nulls(status);
	fill_empty(kt_json_get_object(original, "status"), status, true, &oom);
	set_opt(mod, "metadata",
		modified_meta(desired, current, original, meta_text, status_text, &oom), &oom);
	if (kt_json_set(mod, "status", status) < 0)
		oom = true;
	status = NULL;
	if (oom) {
		rc = kt_error(err, "out of memory");
		goto out;
	}
	*modified = mod;
	mod = NULL;
	rc = 0;
out:
	cJSON_Delete(status);
	cJSON_Delete(mod);
	free(status_text);
	free(meta_text);
	return rc;
}

/* ------------------------------------------------------------ heartbeat */

static const cJSON *find_condition(const cJSON *conds, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, conds) {
		const char *t = kt_json_get_string(c, "type");

		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

static bool same_status(const cJSON *a, const cJSON *b)
{
	const cJSON *x = kt_json_get(a, "status"), *y = kt_json_get(b, "status");

	if (!x || !y)
		return !x && !y;
	return kt_go_equal(x, y);
}

/*
 * One desired condition's times.  Times desired gives stand.  Otherwise an
 * unchanged condition (same type and status on the server) keeps the
 * server's lastTransitionTime, and a new or changed one gets now, as the
 * kubelet's condition setters do.  lastHeartbeatTime is now with heartbeat,
 * else the server's: without --heartbeat nothing claims a heartbeat, and
 * nothing erases the one the server has.
 */
static void stamp_condition(cJSON *cond, const cJSON *cur_conds, const char *now,
			    bool heartbeat, bool *oom)
{
	const cJSON *cur = find_condition(cur_conds, kt_json_get_string(cond, "type"));
	const cJSON *cur_lt = kt_json_get(cur, "lastTransitionTime");
	const cJSON *cur_hb = kt_json_get(cur, "lastHeartbeatTime");

	if (heartbeat)
		set_opt(cond, "lastHeartbeatTime", cJSON_CreateString(now), oom);
	else if (is_null_or_absent(kt_json_get(cond, "lastHeartbeatTime")) &&
		 !is_null_or_absent(cur_hb))
		set_opt(cond, "lastHeartbeatTime", kt_json_dup(cur_hb), oom);
	if (!is_null_or_absent(kt_json_get(cond, "lastTransitionTime")))
		return;	/* what the provider said stands */
	if (cur && same_status(cur, cond)) {
		/* unchanged: keep the time it last changed, or a stamp written
		 * earlier would read as dropped and be deleted */
		if (!is_null_or_absent(cur_lt))
			set_opt(cond, "lastTransitionTime", kt_json_dup(cur_lt), oom);
		return;
	}
	set_opt(cond, "lastTransitionTime", cJSON_CreateString(now), oom);
}

static int stamp(const cJSON *desired, const cJSON *current, int64_t now_us, bool heartbeat,
		 cJSON **out, struct kt_err *err)
{
	const cJSON *cur_conds = kt_json_path(current, "status.conditions");
	cJSON *copy = NULL, *conds, *c;
	char now[40];
	bool oom = false;

	*out = NULL;
	if (check_node(desired, "desired", err) < 0)
		return -1;
	if (current && check_node(current, "current", err) < 0)
		return -1;
	copy = kt_json_dup(desired);
	if (!copy)
		return kt_error(err, "out of memory");
	kt_time_format(now_us, false, now, sizeof(now));
	conds = kt_json_get_array(kt_json_get_object(copy, "status"), "conditions");
	cJSON_ArrayForEach(c, conds)
		stamp_condition(c, cJSON_IsArray(cur_conds) ? cur_conds : NULL, now, heartbeat,
				&oom);
	if (oom) {
		cJSON_Delete(copy);
		return kt_error(err, "out of memory");
	}
	*out = copy;
	return 0;
}

int kt_nodestatus_stamp(const cJSON *desired, const cJSON *current, int64_t now_us,
			cJSON **out, struct kt_err *err)
{
	return stamp(desired, current, now_us, true, out, err);
}

/* ------------------------------------------------------ removed conditions */

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* a part of a qualified name: 1 to 63 letters, digits, '-', '_' or '.',
 * starting and ending with a letter or digit */
static bool qualified_part(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

int kt_nodestatus_condition_type_check(const char *type, struct kt_err *err)
{
	const char *slash = strchr(type, '/');
	const char *name = slash ? slash + 1 : type;
	struct kt_err ignored = { 0 };
	bool ok = qualified_part(name, strlen(name));

	if (ok && slash) {
		char prefix[254];
		size_t n = (size_t)(slash - type);

		ok = n > 0 && n < sizeof(prefix);
		if (ok) {
			memcpy(prefix, type, n);
			prefix[n] = '\0';
			ok = kt_node_name_check(prefix, &ignored) == 0;
		}
	}
	if (!ok)
		return kt_error_kind(err, KT_ERR_INPUT,
				     "invalid condition type '%s': expected a qualified name "
				     "such as KernelDeadlock or example.com/Custom", type);
	return 0;
}

int kt_nodestatus_remove_conditions(cJSON *patch, const cJSON *desired, const cJSON *current,
				    const char *const *types, struct kt_err *err)
{
	const cJSON *want = kt_json_path(desired, "status.conditions");
	const cJSON *have = kt_json_path(current, "status.conditions");
	const char *rv = kt_json_get_string(kt_json_get_object(current, "metadata"),
					    "resourceVersion");
	cJSON *status, *conds, *meta, *del;
	bool added = false, oom = false;

	if (!types || !*types)
		return 0;
	for (const char *const *t = types; t && *t; t++)
		if (cJSON_IsArray(want) && find_condition(want, *t))
			return kt_error_kind(err, KT_ERR_INPUT,
					     "desired has the condition '%s' that "
					     "--remove-condition deletes: drop it from one of the two",
					     *t);
	for (const char *const *t = types; !oom && t && *t; t++) {
		if (!cJSON_IsArray(have) || !find_condition(have, *t))
			continue;
		status = kt_json_get_object(patch, "status");
		if (!status) {
			status = cJSON_CreateObject();
			oom = kt_json_set(patch, "status", status) < 0;
		}
		conds = kt_json_get_array(status, "conditions");
		if (!oom && !conds) {
			conds = cJSON_CreateArray();
			oom = kt_json_set(status, "conditions", conds) < 0;
		}
		/* one this tool wrote and desired dropped is deleted already */
		if (oom || find_condition(conds, *t))
			continue;
		del = cJSON_CreateObject();
		oom = kt_json_append(conds, del) < 0 ||
		      kt_json_set(del, "$patch", cJSON_CreateString("delete")) < 0 ||
		      kt_json_set(del, "type", cJSON_CreateString(*t)) < 0;
		added = true;
	}
	if (!oom && added && rv) {
		/* the precondition: a write in between makes this a 409 */
		meta = kt_json_get_object(patch, "metadata");
		if (!meta) {
			meta = cJSON_CreateObject();
			oom = kt_json_set(patch, "metadata", meta) < 0;
		}
		oom = oom || kt_json_set(meta, "resourceVersion", cJSON_CreateString(rv)) < 0;
	}
	if (oom)
		return kt_error(err, "out of memory");
	kt_sort_keys(patch);
	return 0;
}

/* ------------------------------------------------------------ time text */

/*
 * A condition's times as metav1.Time writes them: RFC 3339 in UTC, whole
 * seconds (truncated).  virtual-kubelet's Go structs do this to whatever the
 * provider gave, and so does the API server, so a time given another way
 * would otherwise be sent again on every update.  Text that is not a time
 * is left for the API server to refuse.
 */
static void normalize_times(cJSON *desired, bool *oom)
{
	static const char *const keys[] = { "lastHeartbeatTime", "lastTransitionTime" };
	cJSON *conds = kt_json_path(desired, "status.conditions"), *c;
	char buf[40];
	int64_t us;
	size_t i;

	if (!cJSON_IsArray(conds))
		return;
	cJSON_ArrayForEach(c, conds) {
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			const char *t = kt_json_get_string(c, keys[i]);

			if (!t || kt_time_parse(t, &us, NULL) < 0)
				continue;
			kt_time_format(us, false, buf, sizeof(buf));
			if (strcmp(buf, t) != 0)
				set_opt(c, keys[i], cJSON_CreateString(buf), oom);
		}
	}
}

/* ----------------------------------------------------------- quantities */

/*
 * capacity and allocatable as resource.Quantity writes them, since
 * virtual-kubelet's Go structs and the API server both do: "2000m" is "2",
 * "1024Mi" is "1Gi", "1000" is "1k".  Only the exact int64 cases are
 * rewritten (at most 18 digits, no finer than nano, binary values whole);
 * anything else is left as given.
 */
struct qty {
	bool neg;
	int64_t value;		/* decimal: value * 10^scale; binary: value */
	int scale;
	bool binary, exp_form;	/* Ki..Ei / e<n>, else decimal SI */
};

static const char *const dec_suffix[] = { "n", "u", "m", "", "k", "M", "G", "T", "P", "E" };
static const char *const bin_suffix[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };

static bool qty_suffix(const char *sfx, struct qty *q, int *exp10, int *exp2)
{
	char *end;
	long e;
	size_t i;

	*exp10 = *exp2 = 0;
	for (i = 0; i < sizeof(dec_suffix) / sizeof(dec_suffix[0]); i++)
		if (strcmp(sfx, dec_suffix[i]) == 0) {
			*exp10 = ((int)i - 3) * 3;
			return true;
		}
	for (i = 1; i < sizeof(bin_suffix) / sizeof(bin_suffix[0]); i++)
		if (strcmp(sfx, bin_suffix[i]) == 0) {
			q->binary = true;
			*exp2 = (int)i * 10;
			return true;
		}
	if ((sfx[0] != 'e' && sfx[0] != 'E') || !sfx[1])
		return false;
	e = strtol(sfx + 1, &end, 10);
	if (*end || e < -30 || e > 30)
		return false;
	q->exp_form = true;
	*exp10 = (int)e;
	return true;
}

/* the digits of s as one int64 (at most 18 of them) */
static bool qty_digits(const char *s, size_t n, int64_t *out)
{
	int64_t v = 0;

	if (n > 18)
		return false;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	*out = v;
	return true;
}

static bool qty_parse(const char *s, struct qty *q)
{
	size_t whole, frac = 0;
	const char *p = s, *f = NULL;
	int exp10, exp2;
	char digits[40];

	/* Go keeps a leading '+' as written in some cases: leave those be */
	memset(q, 0, sizeof(*q));
	if (*p == '-')
		q->neg = *p++ == '-';
	whole = strspn(p, "0123456789");
	if (p[whole] == '.') {
		f = p + whole + 1;
		frac = strspn(f, "0123456789");
	}
	if (whole + frac == 0 || whole + frac >= sizeof(digits))
		return false;
	memcpy(digits, p, whole);
	if (f)
		memcpy(digits + whole, f, frac);
	if (!qty_suffix(f ? f + frac : p + whole, q, &exp10, &exp2) ||
	    !qty_digits(digits, whole + frac, &q->value))
		return false;
	q->scale = exp10 - (int)frac;
	if (!q->binary)
		return q->scale >= -9;
	/* binary: the value must be a whole number of bytes */
	for (; exp2 > 0; exp2--) {
		if (q->value > INT64_MAX / 2)
			return false;
		q->value *= 2;
	}
	for (; q->scale < 0; q->scale++) {
		if (q->value % 10)
			return false;
		q->value /= 10;
	}
	return true;
}

/* the canonical text of q into buf; false when it cannot be made exactly */
static bool qty_format(struct qty *q, char *buf, size_t size)
{
	const char *sign = q->neg ? "-" : "", *sfx;
	int64_t v = q->value;
	int e = q->scale, k = 0;

	if (v == 0) {
		snprintf(buf, size, "0");
		return true;
	}
	if (q->binary && v >= 1024) {
		while (v % 1024 == 0 && k < 6) {
			v /= 1024;
			k++;
		}
		snprintf(buf, size, "%s%" PRId64 "%s", sign, v, bin_suffix[k]);
		return true;
	}
	while (v % 10 == 0) {
		v /= 10;
		e++;
	}
	for (; ((e % 3) + 3) % 3; e--) {
		if (v > INT64_MAX / 10)
			return false;
		v *= 10;
	}
	if (q->exp_form) {
		if (e)
			snprintf(buf, size, "%s%" PRId64 "e%d", sign, v, e);
		else
			snprintf(buf, size, "%s%" PRId64, sign, v);
		return true;
	}
	if (e < -9 || e > 18)
		return false;
	sfx = dec_suffix[e / 3 + 3];
	snprintf(buf, size, "%s%" PRId64 "%s", sign, v, sfx);
	return true;
}

static void canonical_quantities(cJSON *status, bool *oom)
{
	static const char *const lists[] = { "capacity", "allocatable" };
	struct qty q;
	char buf[48];
	cJSON *c, *next;
	size_t i;

	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		cJSON *map = kt_json_get_object(status, lists[i]);

		/* next is taken first: replacing a member frees it */
		for (c = map ? map->child : NULL; c; c = next) {
			next = c->next;
			if (!cJSON_IsString(c) || !qty_parse(c->valuestring, &q) ||
			    !qty_format(&q, buf, sizeof(buf)) || strcmp(buf, c->valuestring) == 0)
				continue;
			set_opt(map, c->string, cJSON_CreateString(buf), oom);
		}
	}
}

/* ------------------------------------------------------------ addresses */

/*
 * status.addresses is not merged: its merge key (type) cannot tell two
 * InternalIPs apart, so whatever the keyed diff said about it goes, and
 * replace_list says it again whole.
 */
static void take_addresses(cJSON *patch)
{
	cJSON *status = kt_json_get_object(patch, "status");

	drop_member(status, "addresses");
	drop_member(status, "$setElementOrder/addresses");
}

/* desired (as modified has it) names the node's addresses: a list, not empty */
static bool names_addresses(const cJSON *modified)
{
	const cJSON *want = kt_json_path(modified, "status.addresses");

	return cJSON_IsArray(want) && want->child;
}

/*
 * The addresses desired names replace current's whole when they differ, in
 * content or order: desired's list, in its order, then {"$patch":"replace"},
 * as the kubelet writes it.  Equal lists are left out.  (A desired without
 * addresses leaves the list to the three-way merge: what this tool wrote
 * before is deleted one by one, what others wrote stays.)
 */
static int replace_list(cJSON *patch, const cJSON *modified, const cJSON *current)
{
	const cJSON *want = kt_json_path(modified, "status.addresses");
	const cJSON *have = kt_json_path(current, "status.addresses");
	cJSON *status, *list, *directive;

	if (have && kt_go_equal(want, have))
		return 0;
	status = kt_json_get_object(patch, "status");
	if (!status) {
		status = cJSON_CreateObject();
		if (kt_json_set(patch, "status", status) < 0)
			return -1;
	}
	list = kt_json_dup(want);
	directive = cJSON_CreateObject();
	if (kt_json_append(list, directive) < 0 ||
	    kt_json_set(directive, "$patch", cJSON_CreateString("replace")) < 0) {
		cJSON_Delete(list);
		return -1;
	}
	return kt_json_set(status, "addresses", list);
}

/* ---------------------------------------------------------------- patch */

/*
 * Empty maps, and empty merge lists under status, only ever create empty
 * fields: drop them, so a patch that changes nothing is {}.
 */
static void prune(cJSON *obj, bool status_level)
{
	cJSON *c, *next;

	for (c = obj->child; c; c = next) {
		next = c->next;
		if (cJSON_IsObject(c)) {
			prune(c, strcmp(c->string, "status") == 0 && obj->string == NULL);
			if (!c->child)
				cJSON_Delete(cJSON_DetachItemViaPointer(obj, c));
		} else if (status_level && cJSON_IsArray(c) && !c->child &&
			   is_merge_list(c->string)) {
			cJSON_Delete(cJSON_DetachItemViaPointer(obj, c));
		}
	}
}

/* the patch for desired against current; original (may be NULL) is what
 * kt_nodestatus_original gives for current, computed by the caller */
static int patch_from(const cJSON *desired, const cJSON *current, const cJSON *original,
		      const struct kt_schema *schema, unsigned flags, bool replace_addresses,
		      int64_t now_us, cJSON **patch, struct kt_err *err)
{
	cJSON *prepared = NULL, *stamped = NULL, *own_orig = NULL, *modified = NULL, *p = NULL;
	struct kt_schema *own = NULL;
	bool oom = false;
	int rc = -1;

	*patch = NULL;
	if (check_node(desired, "desired", err) < 0 || check_node(current, "current", err) < 0)
		goto out;
	prepared = kt_json_dup(desired);
	if (!prepared) {
		rc = kt_error(err, "out of memory");
		goto out;
	}
	normalize_times(prepared, &oom);
	canonical_quantities(kt_json_get_object(prepared, "status"), &oom);
	if (oom) {
		rc = kt_error(err, "out of memory");
		goto out;
	}
	desired = prepared;
	if (stamp(desired, current, now_us, flags & KT_NODESTATUS_HEARTBEAT, &stamped, err) < 0)
		goto out;
	desired = stamped;
	if (!original) {
		if (kt_nodestatus_original(current, &own_orig, err) < 0)
			goto out;
		original = own_orig;
	}
	if (kt_nodestatus_modified(desired, current, original, &modified, err) < 0)
		goto out;
	if (!schema) {
		own = kt_schema_builtin("Node", err);
		if (!own)
			goto out;
		schema = own;
	}
	if (kt_smp_diff3(original, modified, current, schema, true, &p, err) < 0)
		goto out;
	replace_addresses = replace_addresses && names_addresses(modified);
	if (replace_addresses)
		take_addresses(p);
	prune(p, false);
	if (replace_addresses && replace_list(p, modified, current) < 0) {
		rc = kt_error(err, "out of memory");
		goto out;
	}
	kt_sort_keys(p);
	*patch = p;
	p = NULL;
	rc = 0;
out:
	kt_schema_free(own);
	cJSON_Delete(p);
	cJSON_Delete(modified);
	cJSON_Delete(own_orig);
	cJSON_Delete(stamped);
	cJSON_Delete(prepared);
	return rc;
}

int kt_nodestatus_patch(const cJSON *desired, const cJSON *current,
			const struct kt_schema *schema, unsigned flags, int64_t now_us,
			cJSON **patch, struct kt_err *err)
{
	return patch_from(desired, current, NULL, schema, flags, true, now_us, patch, err);
}

int kt_nodestatus_refresh(const cJSON *current, const struct kt_schema *schema,
			  int64_t now_us, cJSON **patch, struct kt_err *err)
{
	cJSON *original = NULL, *desired = NULL;
	int rc = -1;

	*patch = NULL;
	if (kt_nodestatus_original(current, &original, err) < 0)
		goto out;
	if (kt_json_get_object(original, "status"))
		desired = kt_json_dup(original);
	else
		desired = kt_json_dup(current);
	if (!desired) {
		rc = kt_error(err, "out of memory");
		goto out;
	}
	/* a heartbeat leaves the addresses to whoever wrote them last */
	rc = patch_from(desired, current, original, schema, KT_NODESTATUS_HEARTBEAT, false,
			now_us, patch, err);
out:
	cJSON_Delete(desired);
	cJSON_Delete(original);
	return rc;
}
