/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-podstatus: a pod's status as the kubelet computes it.  Byte 0: bit 0
 * the pod is terminal, bit 1 each pod's status is computed against the one
 * before it as the server's current status, bit 2 the first document is a
 * kill status (--kill-status) laid over every pod's.  The rest is a stream of up to
 * eight documents, probe-run result lines and pods mixed as pod-status
 * --stream reads them: lines are recorded, each pod gets its status and the
 * merge patches from its own status and from the one before.
 */
#include "fuzz.h"
#include "podstatus.h"

/* 2026-01-01T00:00:00Z: the harness reads no clock */
#define FUZZ_NOW_US INT64_C(1767225600000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_err err = { 0 };
	cJSON *docs[FUZZ_MAX_DOCS], *prev = NULL, *st, *patch, *kill = NULL;
	struct kt_probe_results *probes;
	size_t n, first = 0;

	if (size < 1)
		return 0;
	probes = kt_probe_results_new();
	if (!probes)
		return 0;
	n = fuzz_docs(data + 1, size - 1, docs, FUZZ_MAX_DOCS);
	if (data[0] & 4 && n > 0) {
		kill = docs[first++];
		kt_podstatus_kill_check(kill, &err);
	}
	for (size_t i = first; i < n; i++) {
		struct kt_podstatus_opts o = {
			.current = data[0] & 2 ? prev : NULL,
			.probes = probes,
			.terminal = data[0] & 1,
			.now_us = FUZZ_NOW_US,
			.kill = kill,
		};
		char key[256];

		if (kt_probe_results_is_line(docs[i])) {
			kt_probe_results_add(probes, docs[i], "fuzz", &err);
			continue;
		}
		kt_podstatus_key(docs[i], key, sizeof(key));
		st = kt_podstatus_compute(docs[i], &o, &err);
		if (!st)
			continue;
		if (kt_podstatus_patch(docs[i], NULL, st, &patch, &err) == 0)
			fuzz_print_free(patch);
		if (prev && kt_podstatus_patch(docs[i], prev, st, &patch, &err) == 0)
			fuzz_print_free(patch);
		cJSON_Delete(prev);
		prev = st;
	}
	cJSON_Delete(prev);
	fuzz_docs_free(docs, n);
	kt_probe_results_free(probes);
	return 0;
}
