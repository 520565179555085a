/* SPDX-License-Identifier: Apache-2.0 */
/* history: records of a node, the changes between them, and who made them */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core.h"
#include "history.h"
#include "json.h"
#include "json_go.h"
#include "nodestatus.h"
#include "timeutil.h"

#define SUMMARY_COLUMNS 100
#define VALUE_COLUMNS 80

cJSON *kt_history_record(const cJSON *node, bool keep_heartbeats)
{
	cJSON *rec = kt_json_dup(node);
	cJSON *meta, *cond;

	if (!rec || keep_heartbeats)
		return rec;
	meta = kt_json_get_object(rec, "metadata");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
	cJSON_ArrayForEach(cond, kt_json_get_array(kt_json_get_object(rec, "status"),
						   "conditions"))
		cJSON_DeleteItemFromObjectCaseSensitive(cond, "lastHeartbeatTime");
	return rec;
}

/* ------------------------------------------------------------------ render */

static bool is_leaf(const cJSON *v)
{
	return !(cJSON_IsObject(v) || cJSON_IsArray(v)) || !v->child;
}

/* a value for messages and field changes: strings as they are, the rest as
 * one line of JSON; the caller frees it */
static char *json_text(const cJSON *v)
{
	return cJSON_IsString(v) ? strdup(v->valuestring) : kt_json_print(v, KT_JSON_NO_NEWLINE);
}

char *kt_history_render(const cJSON *record)
{
	cJSON *sorted = kt_json_dup(record);
	char *text;

	if (!sorted)
		return NULL;
	kt_sort_keys(sorted);
	text = kt_yaml_print(sorted, NULL);
	cJSON_Delete(sorted);
	return text;
}

/* ----------------------------------------------------------------- changes */

static const cJSON *conditions(const cJSON *node)
{
	return kt_json_get_array(kt_json_get_object(node, "status"), "conditions");
}

static const cJSON *condition_of(const cJSON *node, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, conditions(node)) {
		const char *t = kt_json_get_string(c, "type");

		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

/* adds {"key": string or null} to obj; false when out of memory */
static bool add_text(cJSON *obj, const char *key, const char *s)
{
	return s ? cJSON_AddStringToObject(obj, key, s) != NULL
		 : cJSON_AddNullToObject(obj, key) != NULL;
}

/* the fieldsV1 path of a change, for kt_history_author */
static cJSON *owner_path(const char *const *segs, size_t n, const cJSON *key)
{
	cJSON *path = cJSON_CreateArray();

	for (size_t i = 0; path && i < n; i++)
		if (!cJSON_AddItemToArray(path, cJSON_CreateString(segs[i])))
			goto fail;
	if (path && key && !cJSON_AddItemToArray(path, kt_json_dup(key)))
		goto fail;
	return path;
fail:
	cJSON_Delete(path);
	return NULL;
}

static cJSON *new_change(cJSON *changes, const char *kind)
{
	cJSON *c = cJSON_CreateObject();

	if (!c || !cJSON_AddStringToObject(c, "kind", kind) ||
	    !cJSON_AddItemToArray(changes, c)) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

static int condition_change(cJSON *changes, const char *type, const cJSON *was,
			    const cJSON *now)
{
	static const char *const segs[] = { "f:status", "f:conditions" };
	const char *from = kt_json_get_string(was, "status");
	const char *to = kt_json_get_string(now, "status");
	const cJSON *src = now ? now : was;
	cJSON *c, *key;

	if (was && now && from && to && !strcmp(from, to))
		return 0;
	c = new_change(changes, "condition");
	key = cJSON_CreateObject();
	if (!c || !key || !cJSON_AddStringToObject(key, "type", type) ||
	    !cJSON_AddStringToObject(c, "type", type) || !add_text(c, "from", from) ||
	    !add_text(c, "to", to) ||
	    !add_text(c, "reason", kt_json_get_string(src, "reason")) ||
	    !add_text(c, "message", kt_json_get_string(src, "message")) ||
	    !add_text(c, "time", kt_json_get_string(now, "lastTransitionTime")) ||
	    !cJSON_AddItemToObject(c, "owner", owner_path(segs, 2, key))) {
		cJSON_Delete(key);
		return -1;
	}
	cJSON_Delete(key);
	return 0;
}

static int condition_changes(cJSON *changes, const cJSON *old, const cJSON *new)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, conditions(new)) {
		const char *t = kt_json_get_string(c, "type");

		if (t && condition_change(changes, t, condition_of(old, t), c) < 0)
			return -1;
	}
	cJSON_ArrayForEach(c, conditions(old)) {
		const char *t = kt_json_get_string(c, "type");

		if (t && !condition_of(new, t) && condition_change(changes, t, c, NULL) < 0)
			return -1;
	}
	return 0;
}

/* "key=value:Effect" or "key:Effect"; caller frees */
static char *taint_text(const cJSON *t)
{
	const char *k = kt_json_get_string(t, "key"), *v = kt_json_get_string(t, "value");
	const char *e = kt_json_get_string(t, "effect");
	char *s = NULL;

	if (asprintf(&s, "%s%s%s:%s", k ? k : "", v && *v ? "=" : "", v && *v ? v : "",
		     e ? e : "") < 0)
		return NULL;
	return s;
}

static bool has_taint(const cJSON *node, const char *text)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, kt_json_get_array(kt_json_get_object(node, "spec"), "taints")) {
		char *s = taint_text(t);
		bool same = s && !strcmp(s, text);

		free(s);
		if (same)
			return true;
	}
	return false;
}

static int taint_side(cJSON *changes, const cJSON *from, const cJSON *to, const char *what)
{
	static const char *const segs[] = { "f:spec", "f:taints" };
	const cJSON *t;

	cJSON_ArrayForEach(t, kt_json_get_array(kt_json_get_object(from, "spec"), "taints")) {
		char *s = taint_text(t);
		cJSON *c;
		int rc = 0;

		if (!s)
			return -1;
		if (!has_taint(to, s)) {
			c = new_change(changes, "taint");
			if (!c || !cJSON_AddStringToObject(c, "change", what) ||
			    !cJSON_AddStringToObject(c, "taint", s) ||
			    !cJSON_AddItemToObject(c, "owner", owner_path(segs, 2, NULL)))
				rc = -1;
		}
		free(s);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int label_changes(cJSON *changes, const cJSON *old, const cJSON *new)
{
	const cJSON *ol = kt_json_get_object(kt_json_get_object(old, "metadata"), "labels");
	const cJSON *nl = kt_json_get_object(kt_json_get_object(new, "metadata"), "labels");
	cJSON *keys = cJSON_CreateObject(), *k;
	const cJSON **m = NULL;
	size_t n = 0;
	int rc = -1;

	/* the union of both key sets, in byte order */
	cJSON_ArrayForEach(k, ol)
		if (!kt_json_get(keys, k->string) && !cJSON_AddTrueToObject(keys, k->string))
			goto out;
	cJSON_ArrayForEach(k, nl)
		if (!kt_json_get(keys, k->string) && !cJSON_AddTrueToObject(keys, k->string))
			goto out;
	m = kt_sorted_members(keys, &n);
	if (!m)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const char *key = m[i]->string;
		const char *from = kt_json_get_string(ol, key), *to = kt_json_get_string(nl, key);
		char fkey[512];
		const char *segs[] = { "f:metadata", "f:labels", fkey };
		cJSON *c;

		if (from && to && !strcmp(from, to))
			continue;
		snprintf(fkey, sizeof(fkey), "f:%s", key);
		c = new_change(changes, "label");
		if (!c || !cJSON_AddStringToObject(c, "key", key) || !add_text(c, "from", from) ||
		    !add_text(c, "to", to) ||
		    !cJSON_AddItemToObject(c, "owner", owner_path(segs, 3, NULL)))
			goto out;
	}
	rc = 0;
out:
	free(m);
	cJSON_Delete(keys);
	return rc;
}

/* ---------------------------------------------------------- field by field */

/*
 * Every leaf of a record as "path" -> value, and beside it the fieldsV1 path
 * of that leaf.  Conditions are named by type, other list items by index;
 * what labels, taints and condition status say is left to their own kinds.
 */
struct leaves {
	cJSON *values; /* path -> leaf (borrowed copies) */
	cJSON *owners; /* path -> fieldsV1 path */
};

static int seg_append(char *path, size_t size, const char *key)
{
	size_t len = strlen(path);
	bool plain = *key != '\0';

	for (const char *p = key; *p; p++)
		plain = plain && (isalnum((unsigned char)*p) || *p == '_' || *p == '-');
	if (plain)
		return snprintf(path + len, size - len, "%s%s", len ? "." : "", key) <
			       (int)(size - len)
		       ? 0
		       : -1;
	return snprintf(path + len, size - len, "[\"%s\"]", key) < (int)(size - len) ? 0 : -1;
}

static bool skipped(const char *path)
{
	return !strcmp(path, "metadata.labels") || !strcmp(path, "spec.taints");
}

static int collect(struct leaves *lv, const cJSON *v, char *path, size_t size, cJSON *owner);

static int collect_leaf(struct leaves *lv, const cJSON *v, const char *path, cJSON *owner)
{
	cJSON *own = kt_json_dup(owner);

	if (!cJSON_AddItemToObject(lv->values, path, kt_json_dup(v)) || !own ||
	    !cJSON_AddItemToObject(lv->owners, path, own))
		return -1;
	return 0;
}

static int collect_item(struct leaves *lv, const cJSON *item, size_t idx, bool by_type,
			char *path, size_t size, cJSON *owner)
{
	size_t len = strlen(path);
	const char *type = by_type ? kt_json_get_string(item, "type") : NULL;
	cJSON *key = NULL;
	int rc;

	if (type) {
		snprintf(path + len, size - len, "[%s]", type);
		key = cJSON_CreateObject();
		if (!key || !cJSON_AddStringToObject(key, "type", type) ||
		    !cJSON_AddItemToArray(owner, key)) {
			cJSON_Delete(key);
			return -1;
		}
	} else {
		snprintf(path + len, size - len, "[%zu]", idx);
	}
	rc = collect(lv, item, path, size, owner);
	if (key)
		cJSON_DeleteItemFromArray(owner, cJSON_GetArraySize(owner) - 1);
	path[len] = '\0';
	return rc;
}

static int collect(struct leaves *lv, const cJSON *v, char *path, size_t size, cJSON *owner)
{
	const cJSON *c;
	size_t len = strlen(path);
	size_t idx = 0;
	bool conds = !strcmp(path, "status.conditions");
	int rc = 0;

	if (skipped(path))
		return 0;
	if (is_leaf(v))
		return collect_leaf(lv, v, path, owner);
	if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(c, v)
			if (rc == 0)
				rc = collect_item(lv, c, idx++, conds, path, size, owner);
		return rc;
	}
	cJSON_ArrayForEach(c, v) {
		char fkey[512];
		cJSON *seg;

		if (seg_append(path, size, c->string) < 0)
			return -1;
		snprintf(fkey, sizeof(fkey), "f:%s", c->string);
		seg = cJSON_CreateString(fkey);
		if (!seg || !cJSON_AddItemToArray(owner, seg)) {
			cJSON_Delete(seg);
			return -1;
		}
		/* a condition's status is its own kind of change */
		if (!(strstr(path, "status.conditions[") == path && !strcmp(c->string, "status") &&
		      cJSON_GetArraySize(owner) == 4))
			rc = collect(lv, c, path, size, owner);
		cJSON_DeleteItemFromArray(owner, cJSON_GetArraySize(owner) - 1);
		path[len] = '\0';
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int leaves_of(struct leaves *lv, const cJSON *rec)
{
	char path[4096] = "";
	cJSON *owner = cJSON_CreateArray();
	int rc;

	lv->values = cJSON_CreateObject();
	lv->owners = cJSON_CreateObject();
	if (!owner || !lv->values || !lv->owners) {
		cJSON_Delete(owner);
		return -1;
	}
	rc = rec ? collect(lv, rec, path, sizeof(path), owner) : 0;
	cJSON_Delete(owner);
	return rc;
}

static void leaves_release(struct leaves *lv)
{
	cJSON_Delete(lv->values);
	cJSON_Delete(lv->owners);
}

static int field_change(cJSON *changes, const char *path, const cJSON *from, const cJSON *to,
			const cJSON *owner)
{
	cJSON *c = new_change(changes, "field");

	if (!c || !cJSON_AddStringToObject(c, "path", path) ||
	    !cJSON_AddItemToObject(c, "from", from ? kt_json_dup(from) : cJSON_CreateNull()) ||
	    !cJSON_AddItemToObject(c, "to", to ? kt_json_dup(to) : cJSON_CreateNull()) ||
	    !cJSON_AddItemToObject(c, "owner", kt_json_dup(owner)))
		return -1;
	return 0;
}

static int field_changes(cJSON *changes, const cJSON *old, const cJSON *new)
{
	struct leaves a = { 0 }, b = { 0 };
	cJSON *all = NULL, *k;
	const cJSON **m = NULL;
	size_t n = 0;
	int rc = -1;

	if (leaves_of(&a, old) < 0 || leaves_of(&b, new) < 0)
		goto out;
	all = cJSON_CreateObject();
	if (!all)
		goto out;
	cJSON_ArrayForEach(k, a.values)
		if (!cJSON_AddTrueToObject(all, k->string))
			goto out;
	cJSON_ArrayForEach(k, b.values)
		if (!kt_json_get(all, k->string) && !cJSON_AddTrueToObject(all, k->string))
			goto out;
	m = kt_sorted_members(all, &n);
	if (!m)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const char *p = m[i]->string;
		const cJSON *x = kt_json_get(a.values, p), *y = kt_json_get(b.values, p);
		const cJSON *own = kt_json_get(y ? b.owners : a.owners, p);

		if (x && y && kt_go_equal(x, y))
			continue;
		if (field_change(changes, p, x, y, own) < 0)
			goto out;
	}
	rc = 0;
out:
	free(m);
	cJSON_Delete(all);
	leaves_release(&a);
	leaves_release(&b);
	return rc;
}

cJSON *kt_history_changes(const cJSON *old, const cJSON *new, bool created)
{
	cJSON *changes = cJSON_CreateArray(), *c;

	if (!changes)
		return NULL;
	if (!old || !new) {
		if (!old && !new)
			return changes;
		c = new_change(changes, "node");
		if (!c || !cJSON_AddStringToObject(c, "change", !new      ? "deleted"
								 : created ? "created"
									   : "seen"))
			goto fail;
		return changes;
	}
	if (condition_changes(changes, old, new) < 0 ||
	    taint_side(changes, new, old, "added") < 0 ||
	    taint_side(changes, old, new, "removed") < 0 || label_changes(changes, old, new) < 0 ||
	    field_changes(changes, old, new) < 0)
		goto fail;
	return changes;
fail:
	cJSON_Delete(changes);
	return NULL;
}

/* ------------------------------------------------------------------- words */

/* a value for a message: strings as they are, the rest as JSON, cut long */
static char *value_text(const cJSON *v)
{
	char *s;

	if (!v || cJSON_IsNull(v))
		return strdup("(none)");
	s = json_text(v);
	if (s && strlen(s) > VALUE_COLUMNS)
		memcpy(s + VALUE_COLUMNS - 3, "...", 4);
	return s;
}

static char *because(const cJSON *c)
{
	const char *r = kt_json_get_string(c, "reason"), *m = kt_json_get_string(c, "message");
	char *s = NULL;

	if (!r && !m)
		return strdup("");
	if (asprintf(&s, " (%s%s%s)", r ? r : "", r && m ? ": " : "", m ? m : "") < 0)
		return NULL;
	if (strlen(s) > VALUE_COLUMNS)
		memcpy(s + VALUE_COLUMNS - 4, "...)", 5);
	return s;
}

static char *condition_text(const cJSON *c)
{
	const char *t = kt_json_get_string(c, "type");
	const char *from = kt_json_get_string(c, "from"), *to = kt_json_get_string(c, "to");
	char *why = because(c), *s = NULL;
	int rc;

	if (!why)
		return NULL;
	if (!from)
		rc = asprintf(&s, "+condition %s=%s%s", t, to ? to : "", why);
	else if (!to)
		rc = asprintf(&s, "-condition %s", t);
	else
		rc = asprintf(&s, "%s %s -> %s%s", t, from, to, why);
	free(why);
	return rc < 0 ? NULL : s;
}

static char *label_text(const cJSON *c)
{
	const char *k = kt_json_get_string(c, "key");
	const char *from = kt_json_get_string(c, "from"), *to = kt_json_get_string(c, "to");
	char *s = NULL;
	int rc;

	if (!from)
		rc = asprintf(&s, "label %s=%s added", k, to);
	else if (!to)
		rc = asprintf(&s, "label %s=%s removed", k, from);
	else
		rc = asprintf(&s, "label %s %s -> %s", k, from, to);
	return rc < 0 ? NULL : s;
}

static char *field_text(const cJSON *c)
{
	char *from = value_text(kt_json_get(c, "from")), *to = value_text(kt_json_get(c, "to"));
	char *s = NULL;
	int rc = -1;

	if (from && to)
		rc = asprintf(&s, "%s: %s -> %s", kt_json_get_string(c, "path"), from, to);
	free(from);
	free(to);
	return rc < 0 ? NULL : s;
}

char *kt_history_change_text(const cJSON *change)
{
	const char *kind = kt_json_get_string(change, "kind");
	char *s = NULL;

	if (!kind)
		return NULL;
	if (!strcmp(kind, "node")) {
		const char *what = kt_json_get_string(change, "change");

		return strdup(!strcmp(what, "seen") ? "first seen" : what);
	}
	if (!strcmp(kind, "condition"))
		return condition_text(change);
	if (!strcmp(kind, "label"))
		return label_text(change);
	if (!strcmp(kind, "taint")) {
		bool added = !strcmp(kt_json_get_string(change, "change"), "added");

		if (asprintf(&s, "%ctaint %s", added ? '+' : '-',
			     kt_json_get_string(change, "taint")) < 0)
			return NULL;
		return s;
	}
	return field_text(change);
}

/* the first line: the named kinds first; fields only when nothing else changed */
static int put_summary(FILE *f, const char *name, const cJSON *changes)
{
	const cJSON *c;
	size_t cols = strlen(name) + 2;
	int shown = 0, left = 0;
	bool named = false;

	cJSON_ArrayForEach(c, changes)
		named = named || strcmp(kt_json_get_string(c, "kind"), "field");
	fprintf(f, "%s:", name);
	cJSON_ArrayForEach(c, changes) {
		bool field = !strcmp(kt_json_get_string(c, "kind"), "field");
		char *s;

		if (field && named)
			continue;
		s = kt_history_change_text(c);
		if (!s)
			return -1;
		if (left || (shown && cols + strlen(s) + 2 > SUMMARY_COLUMNS)) {
			left++;
		} else {
			fprintf(f, "%s %s", shown ? "," : "", s);
			cols += strlen(s) + 2;
			shown++;
		}
		free(s);
	}
	if (left)
		fprintf(f, " and %d more", left);
	fputc('\n', f);
	return 0;
}

char *kt_history_message(const char *name, const cJSON *changes)
{
	char *text = NULL, *s;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const cJSON *c;
	int rc;

	if (!f)
		return NULL;
	rc = put_summary(f, name, changes);
	if (rc == 0 && cJSON_GetArraySize(changes) > 1) {
		fputc('\n', f);
		cJSON_ArrayForEach(c, changes) {
			s = kt_history_change_text(c);
			if (!s) {
				rc = -1;
				break;
			}
			fprintf(f, "%s\n", s);
			free(s);
		}
	}
	if (fclose(f) != 0 || rc < 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* ------------------------------------------------------------------ author */

/* a "k:{...}" key of fieldsV1 names item when each of its fields is there
 * and equal (a null in the key never matches a field item lacks) */
static bool key_matches(const char *k, const cJSON *item)
{
	cJSON *want = cJSON_Parse(k + 2), *f;
	bool ok = cJSON_IsObject(want);

	cJSON_ArrayForEach(f, want) {
		const cJSON *have = kt_json_get(item, f->string);

		ok = ok && have && kt_go_equal(f, have);
	}
	cJSON_Delete(want);
	return ok;
}

/* does the fieldsV1 set fv own the field at path (or a parent of it)? */
static bool owns(const cJSON *fv, const cJSON *path)
{
	const cJSON *seg;

	cJSON_ArrayForEach(seg, path) {
		const cJSON *next = NULL, *k;

		if (cJSON_IsString(seg)) {
			next = kt_json_get(fv, seg->valuestring);
		} else {
			cJSON_ArrayForEach(k, fv)
				if (!strncmp(k->string, "k:", 2) && key_matches(k->string, seg)) {
					next = k;
					break;
				}
		}
		if (!next)
			return !fv->child && seg != path->child;
		fv = next;
	}
	return true;
}

/* entry a is later than b (RFC 3339 times compare as text when both are UTC) */
static bool later(const cJSON *a, const cJSON *b)
{
	const char *ta = kt_json_get_string(a, "time"), *tb = kt_json_get_string(b, "time");
	int64_t ua = 0, ub = 0;

	if (!b)
		return true;
	if (!ta || kt_time_parse(ta, &ua, NULL) < 0)
		return false;
	if (!tb || kt_time_parse(tb, &ub, NULL) < 0)
		return true;
	return ua >= ub;
}

const char *kt_history_author(const cJSON *node, const cJSON *changes)
{
	const cJSON *mf = kt_json_get_array(kt_json_get_object(node, "metadata"),
					    "managedFields");
	const cJSON *e, *c, *best = NULL, *latest = NULL;

	cJSON_ArrayForEach(e, mf) {
		const cJSON *fv = kt_json_get_object(e, "fieldsV1");

		if (!kt_json_get_string(e, "manager"))
			continue;
		if (later(e, latest))
			latest = e;
		cJSON_ArrayForEach(c, changes) {
			const cJSON *own = kt_json_get_array(c, "owner");

			if (fv && own && owns(fv, own) && later(e, best)) {
				best = e;
				break;
			}
		}
	}
	if (!best)
		best = latest;
	return best ? kt_json_get_string(best, "manager") : NULL;
}
