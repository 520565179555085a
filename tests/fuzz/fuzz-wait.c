/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-wait: kube-wait's --for parser, its selector checks and the
 * judgement.  The input up to the first NUL is a --for text (and a label and
 * a field selector); the rest is a stream of documents judged by
 * it and by the fail-fast rules.  Properties: a text is parsed or refused
 * as bad input, never half; a refusal names the text; every reason is one
 * printable line; a jsonpath finds a value inside the document.
 */
#include "fuzz.h"
#include "wait.h"

static void check_line(const char *s)
{
	for (; *s; s++)
		FUZZ_CHECK((unsigned char)*s >= 0x20 && *s != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t tlen = nul ? (size_t)(nul - data) : size;
	cJSON *docs[FUZZ_MAX_DOCS];
	struct kt_wait_cond c;
	struct kt_wait_result res;
	struct kt_err err = { 0 };
	char *text;
	size_t n = 0;

	if (tlen > 4096)
		return 0;
	text = malloc(tlen + 1);
	if (!text)
		return 0;
	memcpy(text, data, tlen);
	text[tlen] = '\0';
	/* the same text as a label and as a field selector: accepted, or refused naming it */
	for (int field = 0; field < 2; field++) {
		memset(&err, 0, sizeof(err));
		if (kt_wait_selector_check(text, field, &err) < 0)
			FUZZ_CHECK(err.kind == KT_ERR_INPUT &&
				   !strncmp(err.msg, field ? "--field-selector '" : "--selector '",
					    field ? 18 : 12));
	}
	memset(&err, 0, sizeof(err));
	if (kt_wait_cond_parse(text, &c, &err) < 0) {
		FUZZ_CHECK(err.kind == KT_ERR_INPUT || !strcmp(err.msg, "out of memory"));
		FUZZ_CHECK(err.kind != KT_ERR_INPUT || !strncmp(err.msg, "--for '", 7));
		free(text);
		return 0;
	}
	FUZZ_CHECK(c.text && !strcmp(c.text, text));
	FUZZ_CHECK(c.nsteps >= 0 && c.nsteps <= KT_WAIT_PATH_MAX);
	if (nul)
		n = fuzz_docs(nul + 1, size - tlen - 1, docs, FUZZ_MAX_DOCS);
	kt_wait_judge(&c, NULL, &res);
	check_line(res.reason);
	for (size_t i = 0; i < n; i++) {
		bool many = false;

		kt_wait_judge(&c, docs[i], &res);
		check_line(res.reason);
		FUZZ_CHECK(res.verdict == KT_WAIT_MET || res.verdict == KT_WAIT_NOT_YET ||
			   res.verdict == KT_WAIT_NEVER);
		if (c.form == KT_WAIT_JSONPATH)
			FUZZ_CHECK(!kt_wait_path_find(&c, docs[i], &many) || c.nsteps > 0);
		kt_wait_fail_fast(docs[i], &res);
		check_line(res.reason);
	}
	fuzz_docs_free(docs, n);
	kt_wait_cond_release(&c);
	free(text);
	return 0;
}
