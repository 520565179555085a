/* SPDX-License-Identifier: Apache-2.0 */
/* err: the caller-owned error every library function fills on failure */
#ifndef KT_ERR_H
#define KT_ERR_H

#include <stddef.h>

/*
 * Library functions return -1 (or NULL) on failure and describe it here.
 * msg is one line, no trailing full stop, never containing a secret.
 * http_status is the HTTP status when the failure came from an API server
 * reply, else 0.  kind classifies the failure so a tool picks its exit code.
 */
enum kt_err_kind {
	KT_ERR_FAIL = 0,	/* ran and failed: exit 1 */
	KT_ERR_INPUT,		/* bad usage or bad input: exit 2 */
	KT_ERR_CONFLICT,	/* a patch conflict (diff3 without overwrite) */
	KT_ERR_NOTFOUND,	/* the API object does not exist */
};

/*
 * What a failure is in, for a caller that words or routes it without reading
 * msg; most failures leave it at KT_ERR_ABOUT_NONE.
 */
enum kt_err_about {
	KT_ERR_ABOUT_NONE = 0,
	KT_ERR_ABOUT_FILE,	/* the file itself, not its content: it cannot be
				 * opened or read, or its path is too long */
	KT_ERR_ABOUT_EVENT,	/* one event handed to a state machine is wrong:
				 * msg is "event: ...", and msg + detail the part
				 * after "event: ", for a caller that numbers events */
	KT_ERR_ABOUT_IDLE,	/* a follower gave up: nothing arrived within the
				 * idle time it was given */
};

/* the exit statuses a kind leads to (kt_exit_code in the tools' cli.h), and
 * that proberun gives for a run */
enum {
	KT_EXIT_OK = 0,
	KT_EXIT_FAILURE = 1,
	KT_EXIT_USAGE = 2,
};

struct kt_err {
	enum kt_err_kind kind;
	enum kt_err_about about;
	size_t detail;		/* with about: where the text after its subject starts */
	long http_status;
	char msg[512];
};

/* fills err (may be NULL) as a failure of kind KT_ERR_FAIL; returns -1 */
int kt_error(struct kt_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* the same with a kind */
int kt_error_kind(struct kt_err *err, enum kt_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* the same, about the file itself (KT_ERR_ABOUT_FILE): it cannot be opened
 * or read, or its path is too long */
int kt_error_file(struct kt_err *err, enum kt_err_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* prefixes err->msg with "prefix: " (for adding a file name or a path);
 * detail no longer applies, about stays */
void kt_err_prefix(struct kt_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* resets to no error */
void kt_err_clear(struct kt_err *err);

/*
 * Text from elsewhere (a server's Status message) made safe for a terminal,
 * on one line, into out (size > 0; cut to fit): tabs and line breaks become
 * spaces, every other control character (C0, DEL, and C1 in its UTF-8 form,
 * which some terminals obey) becomes '?', so no escape sequence reaches the
 * screen.
 */
void kt_plain_text(char *out, size_t size, const char *in);

#endif
