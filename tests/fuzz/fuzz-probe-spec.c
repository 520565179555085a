/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-probe-spec: probe specs.  Byte 0: bits 0-1 the probe type of a bare
 * probe, bits 2-7 three results fed to the worker's thresholds.  The rest is
 * one document: a pod (every probe of every container and init container), a
 * container (its three probes, its ports and env), or a bare probe.
 */
#include "fuzz.h"
#include "probe.h"

static const char *const probe_fields[] = {
	"livenessProbe",
	"readinessProbe",
	"startupProbe",
};

static void one(const cJSON *probe, enum kt_probe_type type, const cJSON *container,
		const char *field, unsigned feed)
{
	struct kt_probe_spec spec = { 0 };
	struct kt_probe_state st;
	struct kt_err err = { 0 };

	if (kt_probe_spec_parse(&spec, probe, type, container, field, &err) < 0)
		return;
	kt_probe_state_init(&st, &spec);
	for (int i = 0; i < 3; i++, feed >>= 2) {
		kt_probe_state_feed(&st, (enum kt_probe_result)(feed & 3));
		kt_probe_state_due(&st, &spec, i * 1000, i & 1);
	}
	kt_probe_spec_release(&spec);
}

static void container_probes(const cJSON *c, const char *where, unsigned feed)
{
	char field[128];

	for (int t = 0; t < 3; t++) {
		const cJSON *p = kt_json_get(c, probe_fields[t]);

		if (!p)
			continue;
		snprintf(field, sizeof(field), "%s%s%s", where, *where ? "." : "",
			 probe_fields[t]);
		one(p, (enum kt_probe_type)t, c, field, feed);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const lists[] = { "containers", "initContainers" };
	cJSON *doc = NULL;
	const cJSON *spec, *c;
	unsigned feed;
	char where[64];

	if (size < 1)
		return 0;
	feed = data[0] >> 2;
	if (!fuzz_docs(data + 1, size - 1, &doc, 1))
		return 0;
	spec = kt_json_get_object(doc, "spec");
	if (spec) {
		for (int l = 0; l < 2; l++) {
			int i = 0;

			cJSON_ArrayForEach (c, kt_json_get_array(spec, lists[l])) {
				snprintf(where, sizeof(where), "spec.%s[%d]", lists[l],
					 i++);
				container_probes(c, where, feed);
			}
		}
	} else if (kt_json_get(doc, probe_fields[0]) ||
		   kt_json_get(doc, probe_fields[1]) ||
		   kt_json_get(doc, probe_fields[2])) {
		container_probes(doc, "", feed);
	} else {
		one(doc, (enum kt_probe_type)(data[0] & 3) % 3, NULL, "probe", feed);
	}
	cJSON_Delete(doc);
	return 0;
}
