/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz: what the harnesses share: entry point, property check, documents from bytes */
#ifndef KT_FUZZ_H
#define KT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "json.h"

/* the libFuzzer entry point; replay.c calls it too */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* a property that must hold whatever the input: a violation is a crash */
#define FUZZ_CHECK(cond)                                                                \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__,       \
				__LINE__, #cond);                                       \
			abort();                                                        \
		}                                                                       \
	} while (0)

/* the most documents a harness reads from one input */
#define FUZZ_MAX_DOCS 8

/*
 * The input cap given to readers: well above libFuzzer's input sizes.
 * Aliases may copy one node per 64 bytes of it (1,024 here); at the tools'
 * 64 MiB a 400-byte "billion laughs" legitimately copies a million nodes,
 * which would spend the fuzzer's time on a few inputs.
 */
#define FUZZ_MAX_INPUT ((size_t)64 << 10)

/*
 * Reads up to max documents (JSON or YAML, a stream) from the bytes into
 * docs; returns how many.  Reading stops at the first error: what was read
 * before it is still used.  The caller deletes each document.
 */
static inline size_t fuzz_docs(const uint8_t *data, size_t size, cJSON **docs, size_t max)
{
	struct kt_err err = { 0 };
	struct kt_json_reader *r;
	size_t n = 0;

	r = kt_json_reader_open_mem("fuzz", (const char *)data, size, FUZZ_MAX_INPUT,
				    KT_JSON_STREAM, &err);
	if (!r)
		return 0;
	while (n < max && kt_json_reader_next(r, &docs[n], &err) == 1)
		n++;
	kt_json_reader_close(r);
	return n;
}

static inline void fuzz_docs_free(cJSON **docs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(docs[i]);
}

/* prints and frees a result, so the printers run over everything the engines make */
static inline void fuzz_print_free(cJSON *item)
{
	if (item)
		free(kt_json_print(item, KT_JSON_SORTED));
	cJSON_Delete(item);
}

#endif
