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

/* prints the plan last (allowed by TAP) and gives main's exit status */
static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
