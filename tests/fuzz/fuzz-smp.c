/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-smp: strategic merge patch.  Byte 0 picks the schema (bits 0-3: none,
 * a built-in kind, or the same kind from the OpenAPI document in
 * tests/fixtures/openapi-core.json, compiled in) and overwrite (bit 4); the
 * rest is a stream of up to three documents A, B, C.  Runs apply(A, B),
 * diff(A, B) and apply(A, that), diff3(A, B, C) with both sides and
 * apply(C, that), and apply_take.
 */
#include "fuzz.h"
#include "schema.h"
#include "smp.h"

/* the OpenAPI fixture, made into a C string by the makefile */
extern const char kt_fuzz_openapi_core[];

static const char *const openapi_types[] = {
	"io.k8s.api.core.v1.Node",
	"io.k8s.api.core.v1.Pod",
	"io.k8s.api.coordination.v1.Lease",
	"io.k8s.api.core.v1.ConfigMap",
	"io.k8s.api.core.v1.Service",
	"io.k8s.api.apps.v1.Deployment",
	"io.k8s.api.core.v1.PodSpec",
};
#define NTYPES (sizeof(openapi_types) / sizeof(openapi_types[0]))

/* schemas are built once and kept for the whole run */
static const struct kt_schema *schema_for(unsigned pick)
{
	static struct kt_schema *cache[2 * NTYPES];
	static cJSON *openapi;
	struct kt_err err = { 0 };
	const char *const *kinds = kt_schema_builtin_kinds();
	unsigned i;

	if (pick == 0 || pick > 2 * NTYPES)
		return NULL;
	i = pick - 1;
	if (cache[i])
		return cache[i];
	if (i < NTYPES) {
		for (unsigned k = 0; k <= i; k++)
			if (!kinds[k])
				return NULL;
		cache[i] = kt_schema_builtin(kinds[i], &err);
	} else {
		if (!openapi)
			openapi = kt_json_parse("openapi-core.json", kt_fuzz_openapi_core,
						strlen(kt_fuzz_openapi_core), &err);
		FUZZ_CHECK(openapi);
		cache[i] = kt_schema_openapi_from_doc(openapi, "openapi-core.json",
						      openapi_types[i - NTYPES], &err);
	}
	if (!cache[i])
		fprintf(stderr, "schema %u: %s\n", pick, err.msg);
	FUZZ_CHECK(cache[i]);
	return cache[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_err err = { 0 };
	const struct kt_schema *schema;
	cJSON *docs[3] = { NULL }, *patch = NULL, *changed = NULL, *out = NULL;
	cJSON *a, *b, *c;
	bool overwrite;

	if (size < 1)
		return 0;
	schema = schema_for(data[0] & 15);
	overwrite = data[0] & 16;
	fuzz_docs(data + 1, size - 1, docs, 3);
	a = docs[0];
	b = docs[1];
	c = docs[2];

	if (kt_smp_apply(a, b, schema, &out, &err) == 0)
		fuzz_print_free(out);
	if (kt_smp_diff(a, b, schema, &patch, &err) == 0) {
		if (kt_smp_apply(a, patch, schema, &out, &err) == 0)
			fuzz_print_free(out);
		fuzz_print_free(patch);
	}
	patch = NULL;
	if (kt_smp_diff3_sides(a, b, c, schema, overwrite, &patch, &changed, &err) == 0) {
		if (kt_smp_apply(c, patch, schema, &out, &err) == 0)
			fuzz_print_free(out);
	}
	fuzz_print_free(patch);
	fuzz_print_free(changed);
	out = NULL;
	a = a ? kt_json_dup(a) : NULL;
	b = b ? kt_json_dup(b) : NULL;
	if (kt_smp_apply_take(a, b, schema, &out, &err) == 0)
		fuzz_print_free(out);
	fuzz_docs_free(docs, 3);
	return 0;
}
