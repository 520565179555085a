/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-nodestatus: the node status three-way patch.  Byte 0: bit 0 stamps
 * heartbeats, bit 1 leaves CURRENT out (a node not yet registered), bit 2
 * removes conditions CURRENT has (--remove-condition); the rest
 * is a stream of DESIRED and CURRENT.  Runs the whole patch, then the stash
 * annotations' texts and the original rebuilt from CURRENT's stash.
 */
#include "fuzz.h"
#include "nodestatus.h"

/* 2026-01-01T00:00:00Z: the harness reads no clock */
#define FUZZ_NOW_US INT64_C(1767225600000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_err err = { 0 };
	cJSON *docs[2] = { NULL }, *patch = NULL, *original = NULL;
	const cJSON *desired, *current;
	unsigned flags;

	if (size < 1)
		return 0;
	flags = data[0] & 1 ? KT_NODESTATUS_HEARTBEAT : 0;
	fuzz_docs(data + 1, size - 1, docs, 2);
	desired = docs[0];
	current = data[0] & 2 ? NULL : docs[1];

	if (desired && kt_nodestatus_patch(desired, current, NULL, flags, FUZZ_NOW_US,
					   &patch, &err) == 0) {
		/* with bit 2, remove the conditions CURRENT's first two name */
		if (data[0] & 4) {
			const cJSON *conds = kt_json_path(current, "status.conditions");
			const char *types[3] = { NULL };
			const cJSON *c;
			int n = 0;

			cJSON_ArrayForEach(c, conds) {
				const char *t = kt_json_get_string(c, "type");

				if (t && n < 2 && kt_nodestatus_condition_type_check(t, &err) == 0)
					types[n++] = t;
			}
			kt_nodestatus_remove_conditions(patch, desired, current, types, &err);
		}
		fuzz_print_free(patch);
	}
	if (desired) {
		free(kt_nodestatus_status_text(kt_json_get(desired, "status"), &err));
		if (current)
			free(kt_nodestatus_meta_text(desired, current, &err));
	}
	if (current && kt_nodestatus_original(current, &original, &err) == 0)
		fuzz_print_free(original);
	fuzz_docs_free(docs, 2);
	return 0;
}
