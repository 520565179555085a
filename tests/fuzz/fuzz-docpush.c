/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-docpush: the push side of the stream reader over any bytes.  Byte 0
 * picks the size of the pieces the rest is fed in (1 to 16 bytes) and, with
 * bit 4, a 256-byte document cap.  The documents must not depend on how the
 * input was cut: fed in pieces and fed whole, the same documents come out,
 * and the same error if any.  A JSON stream must also give what the pull
 * side (kt_json_reader) gives.
 */
#include <string.h>

#include "core.h"
#include "docpush.h"
#include "json_go.h"
#include "fuzz.h"

struct got {
	cJSON *docs[FUZZ_MAX_DOCS];
	size_t n, more;		/* documents kept, and those past FUZZ_MAX_DOCS */
};

static void keep(cJSON *doc, void *arg)
{
	struct got *g = arg;

	if (g->n < FUZZ_MAX_DOCS)
		g->docs[g->n++] = doc;
	else {
		g->more++;
		cJSON_Delete(doc);
	}
}

static int push(const uint8_t *data, size_t size, size_t piece, size_t max, struct got *g,
		struct kt_err *err, int *fmt)
{
	struct kt_docpush p;
	int rc = 0;

	kt_docpush_init(&p, "fuzz", max);
	for (size_t i = 0; i < size && rc == 0; i += piece)
		rc = kt_docpush_feed(&p, (const char *)data + i, size - i < piece ? size - i : piece,
				     false, keep, g, err);
	if (rc == 0)
		rc = kt_docpush_feed(&p, "", 0, true, keep, g, err);
	*fmt = p.fmt;
	kt_docpush_release(&p);
	return rc;
}

static void same_docs(const struct got *a, const struct got *b)
{
	FUZZ_CHECK(a->n == b->n && a->more == b->more);
	for (size_t i = 0; i < a->n; i++)
		FUZZ_CHECK(kt_go_equal(a->docs[i], b->docs[i]));
}

static void got_free(struct got *g)
{
	fuzz_docs_free(g->docs, g->n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_err err1 = { 0 }, err2 = { 0 };
	struct got whole = { 0 }, cut = { 0 }, pulled = { 0 };
	size_t piece, max;
	int rc1, rc2, fmt;

	if (size < 1)
		return 0;
	piece = (size_t)(data[0] & 15) + 1;
	max = data[0] & 16 ? 256 : FUZZ_MAX_INPUT;
	data++;
	size--;

	rc1 = push(data, size, size ? size : 1, max, &whole, &err1, &fmt);
	rc2 = push(data, size, piece, max, &cut, &err2, &fmt);
	if (rc1 < 0 || rc2 < 0) {
		/* both fail, the same way, once the same documents went out; a
		 * cap may trip sooner on a piece than on the whole */
		if (!strstr(err1.msg, "larger than") && !strstr(err2.msg, "larger than")) {
			FUZZ_CHECK(rc1 < 0 && rc2 < 0);
			FUZZ_CHECK(!strcmp(err1.msg, err2.msg));
			same_docs(&whole, &cut);
		}
	} else {
		same_docs(&whole, &cut);
	}
	if (rc1 == 0 && fmt == 1) {
		struct kt_json_reader *r = kt_json_reader_open_mem("fuzz", (const char *)data, size,
								   max, KT_JSON_STREAM, &err2);
		cJSON *doc;

		while (r && kt_json_reader_next(r, &doc, &err2) == 1)
			keep(doc, &pulled);
		kt_json_reader_close(r);
		same_docs(&whole, &pulled);
	}
	got_free(&whole);
	got_free(&cut);
	got_free(&pulled);
	return 0;
}
