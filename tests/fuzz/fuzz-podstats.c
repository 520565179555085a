/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-podstats: a provider's stats output (a stats/v1alpha1 Summary) read.
 * Properties: what parses, written again, parses again and is written the
 * same (a fixed point); the Prometheus text of it ends each line; what does
 * not parse is an input error with a message.
 */
#include "fuzz.h"
#include "podstats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_podstats s, again;
	struct kt_err err = { 0 };
	char *a, *b, *prom;

	if (kt_podstats_parse("stats", (const char *)data, size, &s, &err) < 0) {
		FUZZ_CHECK(err.msg[0] != '\0');
		kt_podstats_release(&s);
		return 0;
	}
	a = kt_podstats_summary(&s);
	prom = kt_podstats_prometheus(&s);
	FUZZ_CHECK(a && prom && prom[0] && prom[strlen(prom) - 1] == '\n');
	FUZZ_CHECK(kt_podstats_parse("again", a, strlen(a), &again, &err) == 0);
	b = kt_podstats_summary(&again);
	FUZZ_CHECK(b && !strcmp(a, b));
	free(a);
	free(b);
	free(prom);
	kt_podstats_release(&again);
	kt_podstats_release(&s);
	return 0;
}
