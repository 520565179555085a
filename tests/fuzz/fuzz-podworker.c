/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-podworker: the pod worker.  The bytes up to the first NUL are a state
 * text (in a buffer of exactly that size, not NUL-terminated, as a mapped
 * state file is); after it, a stream of up to eight events.  Whatever the
 * steps did, the state text written at the end must load again unless a
 * step found the state damaged.
 */
#include "fuzz.h"
#include "podworker.h"

/* 2026-01-01T00:00:00Z, the time of events without "now" */
#define FUZZ_NOW_US INT64_C(1767225600000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_err err = { 0 };
	const uint8_t *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size, n = 0, tlen = 0;
	cJSON *events[FUZZ_MAX_DOCS], *result;
	struct kt_podworker *pw, *again;
	char *state = malloc(len ? len : 1), *text = NULL;

	if (!state)
		return 0;
	memcpy(state, data, len);
	pw = kt_podworker_load("state", state, len, &err);
	if (pw && nul)
		n = fuzz_docs(nul + 1, size - len - 1, events, FUZZ_MAX_DOCS);
	for (size_t i = 0; i < n; i++) {
		result = NULL;
		if (kt_podworker_step(pw, events[i], FUZZ_NOW_US, &result, &err) == 0)
			fuzz_print_free(result);
		else
			FUZZ_CHECK(!result);
	}
	if (pw && kt_podworker_text(pw, &text, &tlen, &err) == 0) {
		again = kt_podworker_load("again", text, tlen, &err);
		if (!again && !kt_podworker_damaged(pw))
			fprintf(stderr, "%s\n", err.msg);
		FUZZ_CHECK(again || kt_podworker_damaged(pw));
		kt_podworker_free(again);
		free(text);
	}
	fuzz_docs_free(events, n);
	kt_podworker_free(pw);
	free(state);
	return 0;
}
