/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-reader: the JSON/YAML reader over any bytes.  Byte 0 holds the
 * reader's flags (bit 0 stream, bit 1 JSON only, bit 2 a 256-byte limit,
 * else 64 KiB); with bit 3 the text goes to kt_json_parse instead, with the
 * tools' default limit.  Every document read must print as JSON that reads
 * back equal, and copy equal.
 */
#include <string.h>

#include "json_go.h"
#include "fuzz.h"

static void check_doc(const cJSON *doc)
{
	struct kt_err err = { 0 };
	char *text = kt_json_print(doc, 0);
	char *pretty = kt_json_print(doc, KT_JSON_PRETTY | KT_JSON_SORTED);
	cJSON *copy = kt_json_dup(doc), *back = NULL;

	if (copy)
		FUZZ_CHECK(kt_go_equal(doc, copy));
	if (text) {
		back = kt_json_parse("printed", text, strlen(text), &err);
		if (!back)
			fprintf(stderr, "%s\n%s", err.msg, text);
		FUZZ_CHECK(back && kt_go_equal(doc, back));
	}
	cJSON_Delete(back);
	cJSON_Delete(copy);
	free(pretty);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_err err = { 0 };
	struct kt_json_reader *r;
	unsigned flags;
	size_t max;
	cJSON *doc;

	if (size < 1)
		return 0;
	flags = data[0] & (KT_JSON_STREAM | KT_JSON_JSON_ONLY);
	max = data[0] & 4 ? 256 : FUZZ_MAX_INPUT;
	if (data[0] & 8) {
		doc = kt_json_parse("fuzz", (const char *)data + 1, size - 1, &err);
		if (doc)
			check_doc(doc);
		cJSON_Delete(doc);
		return 0;
	}
	data++;
	size--;

	r = kt_json_reader_open_mem("fuzz", (const char *)data, size, max, flags, &err);
	for (int n = 0; r && n < FUZZ_MAX_DOCS; n++) {
		if (kt_json_reader_next(r, &doc, &err) != 1)
			break;
		check_doc(doc);
		cJSON_Delete(doc);
	}
	kt_json_reader_close(r);
	return 0;
}
