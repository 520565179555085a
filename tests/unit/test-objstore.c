/* SPDX-License-Identifier: Apache-2.0 */
/* test-objstore: which objects a store keeps, its files, and the spec-change rule */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

/* the message kt_objstore_check gives for text ("" when it passes) */
static const char *check(const char *text, char *buf, size_t size)
{
	struct kt_err err = { 0 };
	cJSON *obj = tap_doc(text);

	buf[0] = '\0';
	if (obj && kt_objstore_check(obj, &err) < 0)
		snprintf(buf, size, "%s", err.msg);
	cJSON_Delete(obj);
	return buf;
}

static void test_check(void)
{
	char m[sizeof((struct kt_err){ 0 }.msg)];

	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\","
		      "\"uid\":\"0b6c0a4e-0000-4000-8000-000000000001\"}}",
		      m, sizeof(m)),
		"", "a pod with a uuid is kept");
	tap_str(check("{\"kind\":\"Node\",\"metadata\":{\"name\":\"vk-1\",\"uid\":\"A9-z\"}}", m,
		      sizeof(m)),
		"", "a cluster-scoped object is kept");
	tap_str(
	    check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"}}", m,
		  sizeof(m)),
	    "pod/web (default): has no metadata.uid", "no uid");
	tap_str(
	    check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"uid\":\"\"}}", m, sizeof(m)),
	    "pod/web: has no metadata.uid", "an empty uid");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"uid\":\"../x\"}}", m,
		      sizeof(m)),
		"pod/web: uid has a byte other than an ASCII letter, a digit or '-': '../x'",
		"a uid with '/' and '.'");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"uid\":\"a\\tb\\nc\"}}", m,
		      sizeof(m)),
		"pod/web: uid has a byte other than an ASCII letter, a digit or '-': 'a?b?c'",
		"a uid with a tab and a newline: shown without them");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"uid\":\"-rf\"}}", m,
		      sizeof(m)),
		"pod/web: uid starts with '-': '-rf'", "a uid starting with '-'");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"uid\":\"a\\u00e9\"}}", m,
		      sizeof(m)),
		"pod/web: uid has a byte other than an ASCII letter, a digit or '-': 'a\xc3\xa9'",
		"a uid with a byte not ASCII");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"uid\":\"0123456789012345"
		      "678901234567890123456789012345678901234567890123\"}}",
		      m, sizeof(m)),
		"", "a uid of 64 bytes is kept");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"uid\":\"0123456789012345"
		      "6789012345678901234567890123456789012345678901234\"}}",
		      m, sizeof(m)),
		"pod/web: uid is longer than 64 bytes: "
		"'01234567890123456789012345678901234567890123456789012345678901234'",
		"a uid of 65 bytes");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a b\",\"namespace\":\"default\","
		      "\"uid\":\"u1\"}}",
		      m, sizeof(m)),
		"pod/a b (default): name has a control character, a space or '/'",
		"a name with a space");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\\tb\",\"uid\":\"u1\"}}", m,
		      sizeof(m)),
		"pod/a?b: name has a control character, a space or '/'", "a name with a tab");
	tap_str(check("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"namespace\":\"x/y\","
		      "\"uid\":\"u1\"}}",
		      m, sizeof(m)),
		"pod/a (x/y): namespace has a control character, a space or '/'",
		"a namespace with '/'");
	tap_str(check("{\"metadata\":{\"name\":\"a\",\"uid\":\"u 1\"}}", m, sizeof(m)),
		"object/a: uid has a byte other than an ASCII letter, a digit or '-': 'u 1'",
		"an object without kind");
}

static void test_check_file(void)
{
	struct kt_err err = { 0 };

	tap_ok(kt_objstore_check_file("pod.json", &err) == 0, "pod.json is a file name");
	tap_ok(kt_objstore_check_file(".pod.json", &err) == 0, "a dot file is a file name");
	tap_ok(kt_objstore_check_file("a/b", &err) < 0, "a/b is not");
	tap_ok(kt_objstore_check_file("", &err) < 0, "empty is not");
	tap_ok(kt_objstore_check_file("..", &err) < 0, ".. is not");
	tap_ok(kt_objstore_check_file("a\nb", &err) < 0, "a newline is not");
}

struct loaded {
	char names[8][64];
	int n, bad;
};

static int on_load(const char *path, cJSON *obj, const struct kt_err *bad, void *arg)
{
	struct loaded *l = arg;

	(void)path;
	if (!obj) {
		l->bad++;
		printf("# bad: %s\n", bad->msg);
		return 0;
	}
	if (l->n < 8)
		snprintf(l->names[l->n++], 64, "%s",
			 kt_json_get_string(kt_json_get_object(obj, "metadata"), "name"));
	cJSON_Delete(obj);
	return 0;
}

static void test_write_load(void)
{
	char dir[] = "/tmp/test-objstore.XXXXXX", path[256];
	struct kt_err err = { 0 };
	struct loaded l = { 0 };
	cJSON *a = tap_doc("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\",\"uid\":\"u2\"}}");
	cJSON *b = tap_doc("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"b\",\"uid\":\"u1\"}}");
	struct stat st;
	FILE *f;

	if (!mkdtemp(dir)) {
		tap_ok(false, "mkdtemp");
		return;
	}
	tap_ok(kt_objstore_write(dir, "pod.json", a, &err) == 0 &&
		   kt_objstore_write(dir, "pod.json", b, &err) == 0 &&
		   kt_objstore_write(dir, "pod.json", b, &err) == 0,
	       "objects written, one twice");
	snprintf(path, sizeof(path), "%s/u2", dir);
	tap_ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 077) == 0,
	       "its directory is the owner's only");
	snprintf(path, sizeof(path), "%s/u3", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/u3/pod.json", dir);
	f = fopen(path, "w");
	if (f) {
		fputs("[1]\n", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/u4", dir);
	mkdir(path, 0700);
	tap_ok(kt_objstore_load(dir, "pod.json", 1 << 20, on_load, &l, &err) == 0,
	       "the store loads");
	tap_ok(l.n == 2 && !strcmp(l.names[0], "b") && !strcmp(l.names[1], "a"),
	       "its objects in the order of their directories");
	tap_ok(l.bad == 1, "a file that is not an object is bad, a directory without it skipped");
	tap_ok(kt_objstore_load("/nonexistent/store", "pod.json", 1 << 20, on_load, &l, &err) < 0 &&
		   err.kind == KT_ERR_INPUT,
	       "a store that cannot be read is an input error");
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		printf("# could not remove %s\n", dir);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static bool same(const char *x, const char *y)
{
	cJSON *a = tap_doc(x), *b = tap_doc(y);
	bool r = kt_objstore_same_spec(a, b);

	cJSON_Delete(a);
	cJSON_Delete(b);
	return r;
}

static void test_same_spec(void)
{
	tap_ok(
	    same("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
		 "\"resourceVersion\":\"4\",\"managedFields\":[{\"manager\":\"x\"}]},"
		 "\"spec\":{\"nodeName\":\"n\"},\"status\":{\"phase\":\"Pending\"}}",
		 "{\"metadata\":{\"resourceVersion\":\"5\",\"name\":\"a\"},\"spec\":{\"nodeName\":"
		 "\"n\"},\"status\":{\"phase\":\"Running\"}}"),
	    "status, resourceVersion, managedFields, kind and apiVersion do not count");
	tap_ok(!same("{\"metadata\":{\"name\":\"a\",\"labels\":{\"v\":\"1\"}}}",
		     "{\"metadata\":{\"name\":\"a\",\"labels\":{\"v\":\"2\"}}}"),
	       "a label counts");
	tap_ok(
	    !same("{\"metadata\":{\"name\":\"a\"}}",
		  "{\"metadata\":{\"name\":\"a\",\"deletionTimestamp\":\"2026-12-03T18:30:00Z\"}}"),
	    "a deletionTimestamp counts");
	tap_ok(!same("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":1}}",
		     "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"x\":1.0}}"),
	       "compared as Go decodes the values");
}

int main(void)
{
	test_check();
	test_check_file();
	test_write_load();
	test_same_spec();
	return tap_done();
}
