/* SPDX-License-Identifier: Apache-2.0 */
/* test-smp: the SMP engine's own checks: Go formatting, schemas, API contract, growth */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "json.h"
#include "schema.h"
#include "smp.h"
#include "smp_int.h"
#include "tap.h"

static cJSON *J(const char *text)
{
	struct kt_err err = { 0 };
	cJSON *v = kt_json_parse("test", text, strlen(text), &err);

	if (!v)
		printf("# bad test JSON: %s: %.60s\n", err.msg, text);
	return v;
}

/* compact text of a document, sorted or not; static buffer per call site */
static char *T(const cJSON *v, bool sorted)
{
	char *t = kt_json_print(v, sorted ? KT_JSON_SORTED : 0);
	size_t n = t ? strlen(t) : 0;

	if (n && t[n - 1] == '\n')
		t[n - 1] = '\0';
	return t;
}

static void check_text(const cJSON *v, const char *want, const char *name)
{
	char *t = T(v, true);

	tap_str(t, want, name);
	free(t);
}

/* ------------------------------------------------------------ Go texts */

static void test_float_json(void)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 1.5, "1.5" },
		{ 100.0, "100" },
		{ 1e20, "100000000000000000000" },
		{ 1e21, "1e+21" },
		{ 1e-6, "0.000001" },
		{ 1e-7, "1e-7" },
		{ -0.25, "-0.25" },
		{ 3.4028234663852886e+38, "3.4028234663852886e+38" },
		{ 1.7976931348623157e+308, "1.7976931348623157e+308" },
		{ 5e-324, "5e-324" },
		{ 0.1, "0.1" },
		{ 12345678901234567890.0, "12345678901234567000" },
		{ -4.5e20, "-450000000000000000000" },
		{ 123456.0, "123456" },
	};
	char buf[64], name[96];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kt_go_float_json(cases[i].v, buf, sizeof(buf));
		snprintf(name, sizeof(name), "float64 %s prints as Go's encoder does", cases[i].want);
		tap_str(buf, cases[i].want, name);
	}
}

/* numbers after a merge are written as Go writes the values it decoded; the
 * integers it writes unchanged are left alone, the rest rewritten */
static void test_normalize_numbers(void)
{
	cJSON *v = J("{\"a\":0,\"b\":-0,\"c\":10,\"d\":-5,\"e\":0.0,"
		     "\"f\":123456789012345678,\"g\":1234567890123456789,\"h\":-0.0,"
		     "\"i\":1e2,\"j\":-100,\"k\":1.50,\"l\":99999999999999999999,"
		     "\"m\":[7,\"7\",{\"n\":-7e0}]}");

	tap_ok(v && kt_go_normalize_numbers(v) == 0, "normalize: numbers in a document");
	check_text(v,
		   "{\"a\":0,\"b\":0,\"c\":10,\"d\":-5,\"e\":0,\"f\":123456789012345678,"
		   "\"g\":1234567890123456789,\"h\":-0,\"i\":100,\"j\":-100,\"k\":1.5,"
		   "\"l\":100000000000000000000,\"m\":[7,\"7\",{\"n\":-7}]}",
		   "normalize: 0 and -0, int64, floats, strings untouched, in arrays");
	cJSON_Delete(v);
}

static void test_fmt_v(void)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "1000000.0", "1e+06" },
		{ "123456.0", "123456" },
		{ "0.0001", "0.0001" },
		{ "0.00001", "1e-05" },
		{ "42", "42" },
		{ "\"x y\"", "x y" },
		{ "null", "<nil>" },
		{ "[1,\"a\",true]", "[1 a true]" },
		{ "{\"b\":1,\"a\":{\"c\":null}}", "map[a:map[c:<nil>] b:1]" },
	};
	char name[96];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* the reader takes a top-level null for no document */
		cJSON *v = strcmp(cases[i].json, "null") ? J(cases[i].json) : cJSON_CreateNull();
		struct kt_sb sb = { 0 };

		kt_go_fmt_v(&sb, v);
		snprintf(name, sizeof(name), "%%v of %s is %s", cases[i].json, cases[i].want);
		tap_str(kt_sb_str(&sb), cases[i].want, name);
		kt_sb_release(&sb);
		cJSON_Delete(v);
	}
}

static void test_equal(void)
{
	cJSON *a = J("{\"n\":1,\"l\":[1,2.5,\"x\"],\"m\":{\"k\":null}}");
	cJSON *b = J("{\"m\":{\"k\":null},\"l\":[1,2.50,\"x\"],\"n\":1}");
	cJSON *c = J("{\"m\":{\"k\":null},\"l\":[1.0,2.5,\"x\"],\"n\":1}");
	cJSON *big = J("[9223372036854775807, 9223372036854775806]");

	tap_ok(kt_go_equal(a, b), "DeepEqual ignores key order and float spelling");
	tap_ok(!kt_go_equal(a, c), "DeepEqual: int64 1 is not float64 1.0");
	tap_ok(!kt_go_equal(big->child, big->child->next), "int64 compare is exact at the top");
	tap_ok(kt_gk_of(big->child) == KT_GK_INT, "int64 max decodes as int64");
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(big);
}

static bool less_int(void *a, void *b, void *ctx)
{
	(void)ctx;
	return *(int *)a < *(int *)b;
}

static void test_stable_sort(void)
{
	enum { N = 1000 };
	static int vals[N];
	void *v[N];
	bool sorted = true, stable = true;

	/* keys 0..9 in a scrambled order; stability is seen through addresses */
	for (int i = 0; i < N; i++) {
		vals[i] = (i * 7919) % 10;
		v[i] = &vals[i];
	}
	kt_go_stable_sort(v, N, less_int, NULL);
	for (int i = 1; i < N; i++) {
		if (*(int *)v[i - 1] > *(int *)v[i])
			sorted = false;
		if (*(int *)v[i - 1] == *(int *)v[i] && v[i - 1] > v[i])
			stable = false;
	}
	tap_ok(sorted, "stable sort sorts 1000 items");
	tap_ok(stable, "stable sort keeps equal items in order");
}

static void test_hmap(void)
{
	struct kt_hmap h = { .own_keys = true };
	char key[32];
	bool ok = true;

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ok = ok && kt_hmap_put_first(&h, key, (void *)(size_t)(i + 1)) == 0;
	}
	kt_hmap_put_first(&h, "k7", (void *)(size_t)99);
	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ok = ok && (size_t)kt_hmap_get(&h, key) == (size_t)(i + 1);
	}
	tap_ok(ok, "hash keeps 5000 keys, put_new keeps the first value");
	tap_ok(!kt_hmap_has(&h, "k5000"), "hash: an absent key is absent");
	kt_hmap_release(&h);
}

/* ------------------------------------------------------------- API contract */

static void test_contract(void)
{
	struct kt_schema *node = kt_schema_builtin("Node", NULL);
	struct kt_err err = { 0 };
	cJSON *o = J("{\"metadata\":{\"labels\":{\"a\":\"1\"}}}");
	cJSON *arr = J("[1]");
	cJSON *out = (cJSON *)1;
	char *before = T(o, false), *after;

	tap_ok(kt_smp_diff(NULL, o, node, &out, &err) == 0, "diff: NULL original counts as {}");
	check_text(out, "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}", "diff from {} adds everything");
	cJSON_Delete(out);
	tap_ok(kt_smp_diff(o, NULL, node, &out, &err) == 0, "diff: NULL modified counts as {}");
	check_text(out, "{\"metadata\":null}", "diff to {} deletes everything");
	cJSON_Delete(out);
	tap_ok(kt_smp_apply(arr, o, node, &out, &err) < 0 && out == NULL &&
		       err.kind == KT_ERR_INPUT && strcmp(err.msg, "invalid JSON document") == 0,
	       "apply: a list is an invalid JSON document, out left NULL");
	tap_ok(kt_smp_apply(o, NULL, NULL, &out, &err) == 0, "apply: NULL patch and schema");
	after = T(o, false);
	tap_str(after, before, "inputs are not changed");
	check_text(out, "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}", "apply of {} is the object");
	cJSON_Delete(out);
	free(before);
	free(after);
	tap_ok(kt_schema_builtin("Secret", &err) == NULL && err.kind == KT_ERR_INPUT,
	       "unknown built-in kind is an input error");
	cJSON_Delete(o);
	cJSON_Delete(arr);
	kt_schema_free(node);
}

static void test_conflict(void)
{
	struct kt_schema *node = kt_schema_builtin("Node", NULL);
	cJSON *o = J("{\"metadata\":{\"labels\":{\"a\":\"1\"}}}");
	cJSON *m = J("{\"metadata\":{\"labels\":{\"a\":\"2\"}}}");
	cJSON *c = J("{\"metadata\":{\"labels\":{\"a\":\"3\"}}}");
	cJSON *p = NULL, *ch = NULL;
	struct kt_err err = { 0 };

	tap_ok(kt_smp_diff3(o, m, c, node, false, &p, &err) < 0 && !p &&
		       err.kind == KT_ERR_CONFLICT,
	       "diff3 without overwrite: a conflict is KT_ERR_CONFLICT");
	tap_ok(strstr(err.msg, "conflicts with changes made from original to current") != NULL,
	       "the conflict message has upstream's phrase");
	tap_ok(kt_smp_diff3_sides(o, m, c, node, false, &p, &ch, &err) < 0 && p && ch,
	       "diff3_sides hands out both sides");
	check_text(p, "{\"metadata\":{\"labels\":{\"a\":\"2\"}}}", "the patch side");
	check_text(ch, "{\"metadata\":{\"labels\":{\"a\":\"3\"}}}", "the changed side");
	cJSON_Delete(p);
	cJSON_Delete(ch);
	tap_ok(kt_smp_diff3(o, m, c, node, true, &p, &err) == 0, "diff3 with overwrite succeeds");
	check_text(p, "{\"metadata\":{\"labels\":{\"a\":\"2\"}}}", "overwrite takes modified");
	cJSON_Delete(p);
	cJSON_Delete(o);
	cJSON_Delete(m);
	cJSON_Delete(c);
	kt_schema_free(node);
}

/* ------------------------------------------ built-in vs openapi-core.json */

struct trio {
	const char *kind, *type;
	const char *o, *m, *c;
};

static const struct trio trios[] = {
	{ "Node", "io.k8s.api.core.v1.Node",
	  "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"1\"},\"finalizers\":[\"x\",\"y\"],"
	  "\"ownerReferences\":[{\"uid\":\"u1\",\"name\":\"o\"}]},\"spec\":{\"podCIDRs\":[\"10.0.0.0/24\"],"
	  "\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]},\"status\":{\"conditions\":[{\"type\":"
	  "\"Ready\",\"status\":\"True\"},{\"type\":\"Disk\",\"status\":\"False\"}],\"addresses\":[{\"type\":"
	  "\"InternalIP\",\"address\":\"1.1.1.1\"}],\"capacity\":{\"cpu\":\"4\"},\"images\":[{\"names\":[\"a\"]}],"
	  "\"nodeInfo\":{\"kubeletVersion\":\"v1\"},\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}}}}",
	  "{\"metadata\":{\"name\":\"n\",\"labels\":{\"b\":\"2\"},\"finalizers\":[\"y\",\"z\"],"
	  "\"ownerReferences\":[{\"uid\":\"u2\",\"name\":\"p\"}]},\"spec\":{\"podCIDRs\":[\"10.0.1.0/24\"],"
	  "\"taints\":[]},\"status\":{\"conditions\":[{\"type\":\"Mem\",\"status\":\"False\"},{\"type\":"
	  "\"Ready\",\"status\":\"False\"}],\"addresses\":[{\"type\":\"Hostname\",\"address\":\"h\"}],"
	  "\"capacity\":{\"cpu\":\"8\"},\"images\":[{\"names\":[\"b\"]}],\"nodeInfo\":{\"kubeletVersion\":"
	  "\"v2\"},\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10251}}}}",
	  "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"1\",\"c\":\"3\"},\"finalizers\":[\"x\",\"y\",\"w\"]},"
	  "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"NPD\",\"status\":"
	  "\"True\"},{\"type\":\"Disk\",\"status\":\"False\"}]}}" },
	{ "Pod", "io.k8s.api.core.v1.Pod",
	  "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"ports\":[{\"containerPort\":80}],"
	  "\"env\":[{\"name\":\"X\",\"value\":\"1\"}],\"volumeMounts\":[{\"mountPath\":\"/d\",\"name\":\"d\"}],"
	  "\"command\":[\"sh\"],\"resources\":{\"limits\":{\"cpu\":\"1\"}}}],\"volumes\":[{\"name\":\"d\","
	  "\"emptyDir\":{}}],\"tolerations\":[{\"key\":\"t\"}],\"nodeSelector\":{\"z\":\"a\"},"
	  "\"imagePullSecrets\":[{\"name\":\"s\"}],\"hostAliases\":[{\"ip\":\"1.2.3.4\",\"hostnames\":[\"h\"]}]},"
	  "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],\"podIPs\":[{\"ip\":\"1.1.1.1\"}],"
	  "\"containerStatuses\":[{\"name\":\"a\",\"ready\":true}]}}",
	  "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"b:1\"},{\"name\":\"a\",\"image\":\"a:2\","
	  "\"ports\":[{\"containerPort\":443}],\"env\":[{\"name\":\"Y\",\"value\":\"2\"}],\"volumeMounts\":"
	  "[{\"mountPath\":\"/e\",\"name\":\"e\"}],\"command\":[\"bash\"],\"resources\":{\"limits\":{\"cpu\":"
	  "\"2\"}}}],\"volumes\":[{\"name\":\"d\",\"hostPath\":{\"path\":\"/x\"}}],\"tolerations\":[],"
	  "\"nodeSelector\":{\"z\":\"b\"},\"imagePullSecrets\":[{\"name\":\"t\"}],\"hostAliases\":[{\"ip\":"
	  "\"1.2.3.5\"}]},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],\"podIPs\":"
	  "[{\"ip\":\"2.2.2.2\"}],\"containerStatuses\":[{\"name\":\"a\",\"ready\":false}]}}",
	  "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},"
	  "{\"name\":\"Z\",\"value\":\"live\"}]}]},\"status\":{\"conditions\":[{\"type\":\"PodScheduled\","
	  "\"status\":\"True\"}]}}" },
	{ "Lease", "io.k8s.api.coordination.v1.Lease",
	  "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":40}}",
	  "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"b\",\"renewTime\":"
	  "\"2026-11-30T07:00:00.000000Z\"}}",
	  "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"c\",\"leaseTransitions\":3}}" },
	{ "ConfigMap", "io.k8s.api.core.v1.ConfigMap",
	  "{\"data\":{\"a\":\"1\",\"b\":\"2\"},\"immutable\":false}",
	  "{\"data\":{\"a\":\"9\",\"c\":\"3\"},\"binaryData\":{\"x\":\"AA==\"}}",
	  "{\"data\":{\"a\":\"1\",\"b\":\"2\",\"d\":\"4\"}}" },
	{ "Service", "io.k8s.api.core.v1.Service",
	  "{\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\"},{\"port\":443,\"name\":\"https\"}],"
	  "\"selector\":{\"app\":\"a\"},\"clusterIPs\":[\"10.0.0.1\"]},\"status\":{\"conditions\":[{\"type\":"
	  "\"A\",\"status\":\"True\"}],\"loadBalancer\":{\"ingress\":[{\"ip\":\"1.1.1.1\"}]}}}",
	  "{\"spec\":{\"ports\":[{\"port\":8080,\"name\":\"alt\"},{\"port\":80,\"name\":\"web\"}],"
	  "\"selector\":{\"app\":\"b\"},\"clusterIPs\":[\"10.0.0.2\"]},\"status\":{\"conditions\":[{\"type\":"
	  "\"B\",\"status\":\"True\"}],\"loadBalancer\":{\"ingress\":[{\"ip\":\"2.2.2.2\"}]}}}",
	  "{\"spec\":{\"ports\":[{\"port\":80,\"name\":\"http\"},{\"port\":9090,\"name\":\"live\"}]}}" },
	{ "Deployment", "io.k8s.api.apps.v1.Deployment",
	  "{\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"a\"}},\"template\":{\"metadata\":"
	  "{\"labels\":{\"app\":\"a\"}},\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"env\":"
	  "[{\"name\":\"X\",\"value\":\"1\"}]}]}},\"strategy\":{\"type\":\"RollingUpdate\"}},\"status\":"
	  "{\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"}]}}",
	  "{\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"a\"}},\"template\":{\"metadata\":"
	  "{\"labels\":{\"app\":\"a\",\"v\":\"2\"}},\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:2\","
	  "\"env\":[{\"name\":\"Y\",\"value\":\"2\"}]},{\"name\":\"s\",\"image\":\"s:1\"}]}},\"strategy\":"
	  "{\"type\":\"Recreate\"}},\"status\":{\"conditions\":[{\"type\":\"Progressing\",\"status\":\"True\"}]}}",
	  "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\",\"env\":[{"
	  "\"name\":\"X\",\"value\":\"1\"},{\"name\":\"L\",\"value\":\"live\"}]}]}}}}" },
	{ "ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
	  "{\"name\":\"x\",\"labels\":{\"a\":\"1\"},\"finalizers\":[\"f1\"],\"ownerReferences\":[{\"uid\":\"1\","
	  "\"kind\":\"Node\"}],\"managedFields\":[{\"manager\":\"m\"}]}",
	  "{\"name\":\"x\",\"labels\":{\"b\":\"1\"},\"finalizers\":[\"f2\"],\"ownerReferences\":[{\"uid\":\"2\","
	  "\"kind\":\"Node\"}],\"managedFields\":[{\"manager\":\"n\"}]}",
	  "{\"name\":\"x\",\"labels\":{\"a\":\"1\",\"c\":\"1\"},\"finalizers\":[\"f1\",\"f0\"]}" },
};

/* the three results of one schema on one trio, as text */
static void results(const struct trio *t, const struct kt_schema *s, char *out[4])
{
	cJSON *o = J(t->o), *m = J(t->m), *c = J(t->c), *r = NULL;
	struct kt_err err = { 0 };

	out[0] = kt_smp_diff(o, m, s, &r, &err) == 0 ? T(r, true) : strdup(err.msg);
	cJSON_Delete(r);
	r = NULL;
	out[1] = kt_smp_diff3(o, m, c, s, true, &r, &err) == 0 ? T(r, true) : strdup(err.msg);
	cJSON_Delete(r);
	r = NULL;
	{
		cJSON *p = J(out[1]);

		out[2] = kt_smp_apply(c, p, s, &r, &err) == 0 ? T(r, true) : strdup(err.msg);
		cJSON_Delete(p);
		cJSON_Delete(r);
		r = NULL;
	}
	out[3] = kt_smp_diff3(o, m, c, s, false, &r, &err) == 0 ? T(r, true) : strdup(err.msg);
	cJSON_Delete(r);
	cJSON_Delete(o);
	cJSON_Delete(m);
	cJSON_Delete(c);
}

static void test_builtin_vs_openapi(void)
{
	const char *src = getenv("KT_SRCDIR") ? getenv("KT_SRCDIR") : ".";
	static const char *const what[] = { "diff", "diff3", "apply", "diff3 no-overwrite" };
	char path[1024], name[160];

	snprintf(path, sizeof(path), "%s/tests/fixtures/openapi-core.json", src);
	for (size_t i = 0; i < sizeof(trios) / sizeof(trios[0]); i++) {
		struct kt_err err = { 0 };
		struct kt_schema *b = kt_schema_builtin(trios[i].kind, &err);
		struct kt_schema *a = kt_schema_openapi_load(path, trios[i].type, &err);
		char *rb[4], *ra[4];

		if (!tap_ok(a && b, "schemas load")) {
			printf("# %s\n", err.msg);
			kt_schema_free(a);
			kt_schema_free(b);
			continue;
		}
		results(&trios[i], b, rb);
		results(&trios[i], a, ra);
		for (int k = 0; k < 4; k++) {
			snprintf(name, sizeof(name), "%s: built-in and openapi-core.json give the same %s",
				 trios[i].kind, what[k]);
			tap_str(rb[k], ra[k], name);
			free(rb[k]);
			free(ra[k]);
		}
		kt_schema_free(a);
		kt_schema_free(b);
	}
}

static void test_builtin_tags(void)
{
	static const struct {
		const char *kind, *path, *strategy, *key;
	} tags[] = {
		{ "Node", "status.conditions", "merge", "type" },
		{ "Node", "status.addresses", "merge", "type" },
		{ "Node", "spec.podCIDRs", "merge", "" },
		{ "Node", "spec.taints", "", "" },
		{ "Node", "metadata.ownerReferences", "merge", "uid" },
		{ "Pod", "spec.volumes", "merge,retainKeys", "name" },
		{ "Pod", "spec.containers.ports", "merge", "containerPort" },
		{ "Pod", "spec.containers.volumeMounts", "merge", "mountPath" },
		{ "Pod", "spec.topologySpreadConstraints", "merge", "topologyKey" },
		{ "Pod", "status.hostIPs", "merge", "ip" },
		{ "Pod", "status.containerStatuses", "", "" },
		{ "Pod", "status.containerStatuses.allocatedResourcesStatus", "merge", "name" },
		{ "Pod", "status.volumeHealth.healthConditions", "merge", "status" },
		{ "Service", "spec.ports", "merge", "port" },
		{ "Deployment", "spec.template.spec.containers.env", "merge", "name" },
	};
	char name[160];

	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		struct kt_schema *s = kt_schema_builtin(tags[i].kind, NULL);
		const struct kt_schema_node *n = kt_schema_root(s);
		struct kt_schema_meta meta = { "", "", NULL };
		char buf[128], *p, *dot;
		bool ok = true;

		snprintf(buf, sizeof(buf), "%s", tags[i].path);
		for (p = buf; ok && p; p = dot ? dot + 1 : NULL) {
			dot = strchr(p, '.');
			if (dot)
				*dot = '\0';
			/* walk lists through their elements, like the engine does */
			ok = kt_schema_lookup(n, p, false, &meta, NULL) == 0;
			if (ok && meta.sub && dot) {
				struct kt_schema_meta lm;

				if (kt_schema_lookup(n, p, true, &lm, NULL) == 0 && lm.sub)
					meta.sub = lm.sub;
			}
			n = meta.sub;
		}
		snprintf(name, sizeof(name), "built-in %s %s is '%s' on '%s'", tags[i].kind,
			 tags[i].path, tags[i].strategy, tags[i].key);
		tap_ok(ok && strcmp(meta.strategy, tags[i].strategy) == 0 &&
			       strcmp(meta.merge_key, tags[i].key) == 0,
		       name);
		kt_schema_free(s);
	}
}

/* ------------------------------------------------------------------ growth */

/* a node whose conditions list has n items, with a change in every tenth */
static cJSON *big_node(int n, int variant)
{
	cJSON *root = cJSON_CreateObject(), *status = cJSON_AddObjectToObject(root, "status");
	cJSON *conds = cJSON_AddArrayToObject(status, "conditions");

	for (int i = 0; i < n; i++) {
		cJSON *c = cJSON_CreateObject();
		char t[32];

		snprintf(t, sizeof(t), "C%07d", (i * 7 + variant) % n);
		cJSON_AddStringToObject(c, "type", t);
		cJSON_AddStringToObject(c, "status", (i % 10 == 0 && variant) ? "False" : "True");
		cJSON_AddItemToArray(conds, c);
	}
	return root;
}

static double cpu_seconds_diff3(int n)
{
	struct kt_schema *s = kt_schema_builtin("Node", NULL);
	cJSON *o = big_node(n, 0), *m = big_node(n, 1), *c = big_node(n, 2), *p = NULL, *r = NULL;
	struct kt_err err = { 0 };
	clock_t t0 = clock();

	if (kt_smp_diff3(o, m, c, s, false, &p, &err) < 0 && err.kind != KT_ERR_CONFLICT)
		printf("# diff3: %s\n", err.msg);
	if (kt_smp_diff3(o, m, c, s, true, &p, &err) == 0)
		kt_smp_apply(c, p, s, &r, &err);
	t0 = clock() - t0;
	cJSON_Delete(o);
	cJSON_Delete(m);
	cJSON_Delete(c);
	cJSON_Delete(p);
	cJSON_Delete(r);
	kt_schema_free(s);
	return (double)t0 / CLOCKS_PER_SEC;
}

static void test_growth(void)
{
	double small = cpu_seconds_diff3(5000), large = cpu_seconds_diff3(40000);
	char name[128];

	/* 8x the items: linear-ish is about 8-12x the time, quadratic 64x */
	snprintf(name, sizeof(name), "diff3+apply on 40000 conditions is not quadratic (%.3fs vs %.3fs)",
		 large, small);
	tap_ok(large < 24 * (small > 0.002 ? small : 0.002), name);
}

int main(void)
{
	test_float_json();
	test_normalize_numbers();
	test_fmt_v();
	test_equal();
	test_stable_sort();
	test_hmap();
	test_contract();
	test_conflict();
	test_builtin_vs_openapi();
	test_builtin_tags();
	test_growth();
	return tap_done();
}
