/* SPDX-License-Identifier: Apache-2.0 */
/* objstore: a followed collection kept as a directory, one file per object under its uid */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "fsio.h"
#include "json.h"
#include "json_go.h"
#include "objstore.h"

static const char *meta_str(const cJSON *obj, const char *key)
{
	return kt_json_get_string(kt_json_get_object(obj, "metadata"), key);
}

/* s as a message can show it: control characters as '?', cut to fit size */
static const char *shown(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < size; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

/* "pod/web (default)", "node/vk-1": the object a message is about */
static void describe(const cJSON *obj, char *buf, size_t size)
{
	const char *kind = kt_json_get_string(obj, "kind");
	const char *ns = meta_str(obj, "namespace"), *name = meta_str(obj, "name");
	char k[64], n[128], s[128];
	size_t i;

	shown(kind && *kind ? kind : "object", k, sizeof(k));
	for (i = 0; k[i]; i++)
		k[i] = (char)(k[i] >= 'A' && k[i] <= 'Z' ? k[i] - 'A' + 'a' : k[i]);
	shown(name ? name : "", n, sizeof(n));
	if (ns && *ns)
		snprintf(buf, size, "%s/%s (%s)", k, n, shown(ns, s, sizeof(s)));
	else
		snprintf(buf, size, "%s/%s", k, n);
}

static bool uid_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-';
}

/* NULL when uid can name a directory, else what is wrong with it */
static const char *uid_problem(const char *uid)
{
	size_t n = uid ? strlen(uid) : 0;

	if (!n)
		return "has no metadata.uid";
	if (n > KT_OBJSTORE_UID_MAX)
		return "uid is longer than 64 bytes";
	if (uid[0] == '-')
		return "uid starts with '-'";
	for (size_t i = 0; i < n; i++)
		if (!uid_char(uid[i]))
			return "uid has a byte other than an ASCII letter, a digit or '-'";
	return NULL;
}

/* whether s holds a control character, a space or '/' */
static bool bad_in_line(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f || *s == '/')
			return true;
	return false;
}

int kt_objstore_check(const cJSON *obj, struct kt_err *err)
{
	const char *uid = meta_str(obj, "uid"), *why = uid_problem(uid);
	char what[400], u[80];

	describe(obj, what, sizeof(what));
	if (why && uid && *uid)
		return kt_error_kind(err, KT_ERR_INPUT, "%s: %s: '%s'", what, why,
				     shown(uid, u, sizeof(u)));
	if (why)
		return kt_error_kind(err, KT_ERR_INPUT, "%s: %s", what, why);
	if (bad_in_line(meta_str(obj, "namespace")))
		return kt_error_kind(err, KT_ERR_INPUT,
				     "%s: namespace has a control character, a space or '/'", what);
	if (bad_in_line(meta_str(obj, "name")))
		return kt_error_kind(err, KT_ERR_INPUT,
				     "%s: name has a control character, a space or '/'", what);
	return 0;
}

int kt_objstore_check_file(const char *name, struct kt_err *err)
{
	if (!name || !*name)
		return kt_error_kind(err, KT_ERR_INPUT, "must not be empty");
	if (strchr(name, '/'))
		return kt_error_kind(err, KT_ERR_INPUT, "a file name, without '/'");
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return kt_error_kind(err, KT_ERR_INPUT, "a file name, not '.' or '..'");
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return kt_error_kind(err, KT_ERR_INPUT,
					     "a file name, without control characters");
	return 0;
}

int kt_objstore_write(const char *dir, const char *file, const cJSON *obj, struct kt_err *err)
{
	const char *uid = meta_str(obj, "uid");
	char path[4096];
	char *text = NULL;
	int n, rc = -1;

	n = snprintf(path, sizeof(path), "%s/%s", dir, uid ? uid : "");
	if (n < 0 || (size_t)n >= sizeof(path))
		return kt_error(err, "store path too long under '%s'", dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return kt_error(err, "cannot make directory '%s': %s", path, strerror(errno));
	n = snprintf(path, sizeof(path), "%s/%s/%s", dir, uid, file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return kt_error(err, "store path too long under '%s'", dir);
	text = kt_json_print(obj, 0);
	if (!text)
		return kt_error(err, "out of memory");
	rc = kt_file_replace_nosync(path, text, strlen(text), 0600, err);
	free(text);
	return rc;
}

/* one dir/<entry>/<file> handed to fn: the object, or why it is not one */
static int load_one(const char *dir, const char *entry, const char *file, size_t max,
		    kt_objstore_load_fn *fn, void *arg)
{
	struct kt_err bad = { 0 };
	struct stat st;
	char path[4096];
	cJSON *obj = NULL;
	const char *uid;
	int n;

	n = snprintf(path, sizeof(path), "%s/%s/%s", dir, entry, file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	if (stat(path, &st) < 0 && errno == ENOENT)
		return 0;
	obj = kt_json_read_file(path, max, &bad);
	if (obj && !cJSON_IsObject(obj)) {
		kt_error_kind(&bad, KT_ERR_INPUT, "%s: not a JSON object", path);
	} else if (obj) {
		uid = meta_str(obj, "uid");
		if (uid && !strcmp(uid, entry))
			return fn(path, obj, NULL, arg);
		kt_error_kind(&bad, KT_ERR_INPUT,
			      "%s: its metadata.uid is not its directory's name", path);
	} else if (!strstr(bad.msg, path)) {
		char why[sizeof(bad.msg)];

		snprintf(why, sizeof(why), "%s", bad.msg);
		kt_error_kind(&bad, KT_ERR_INPUT, "%s: %s", path, why);
	}
	cJSON_Delete(obj);
	return fn(path, NULL, &bad, arg);
}

int kt_objstore_load(const char *dir, const char *file, size_t max, kt_objstore_load_fn *fn,
		     void *arg, struct kt_err *err)
{
	char **names;
	size_t n;
	int rc = 0;

	if (kt_dir_names(dir, "store directory", NULL, &names, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = load_one(dir, names[i], file, max, fn, arg);
	kt_dir_names_free(names, n);
	return rc;
}

/* a copy of obj without what a spec change ignores; NULL when out of memory */
static cJSON *spec_part(const cJSON *obj)
{
	cJSON *c = kt_json_dup(obj), *meta;

	if (!c)
		return NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(c, "status");
	cJSON_DeleteItemFromObjectCaseSensitive(c, "kind");
	cJSON_DeleteItemFromObjectCaseSensitive(c, "apiVersion");
	meta = kt_json_get_object(c, "metadata");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
	return c;
}

bool kt_objstore_same_spec(const cJSON *a, const cJSON *b)
{
	cJSON *x = spec_part(a), *y = spec_part(b);
	bool same = x && y && kt_go_equal(x, y);

	cJSON_Delete(x);
	cJSON_Delete(y);
	return same;
}
