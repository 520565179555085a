/* SPDX-License-Identifier: Apache-2.0 */
/* tap: the few lines of TAP the C unit tests print for automake's driver */
#ifndef KT_TAP_H
#define KT_TAP_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

/* one test line; returns cond so a test can stop early */
static inline bool tap_ok(bool cond, const char *name)
{
	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_n, name);
	fflush(stdout);
	return cond;
}

/* string equality with both sides shown on failure */
static inline bool tap_str(const char *got, const char *want, const char *name)
{
	bool ok = got && want && strcmp(got, want) == 0;

	if (!ok)
		printf("# got:  %s\n# want: %s\n", got ? got : "(null)", want ? want : "(null)");
	return tap_ok(ok, name);
}

#ifdef KT_H
/* with kt.h included first: a test's JSON text as a document (the caller deletes
 * it), or NULL with the parse error as a TAP comment */
static inline cJSON *tap_doc(const char *text)
{
	struct kt_err err = { 0 };
	cJSON *d = kt_json_parse("test", text, strlen(text), &err);

	if (!d)
		printf("# bad test input: %s\n", err.msg);
	return d;
}
#endif

/* prints the plan last (allowed by TAP) and gives main's exit status */
static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
