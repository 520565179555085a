/* SPDX-License-Identifier: Apache-2.0 */
/* err: filling struct kt_err */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kt_err.h"

static void err_vset(struct kt_err *err, enum kt_err_kind kind, const char *fmt, va_list ap)
{
	if (!err)
		return;
	err->kind = kind;
	err->about = KT_ERR_ABOUT_NONE; /* a caller that knows sets these after */
	err->detail = 0;
	err->http_status = 0;	/* a caller that has one sets it after */
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

int kt_error(struct kt_err *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, KT_ERR_FAIL, fmt, ap);
	va_end(ap);
	return -1;
}

int kt_error_kind(struct kt_err *err, enum kt_err_kind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, kind, fmt, ap);
	va_end(ap);
	return -1;
}

int kt_error_file(struct kt_err *err, enum kt_err_kind kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vset(err, kind, fmt, ap);
	va_end(ap);
	if (err)
		err->about = KT_ERR_ABOUT_FILE;
	return -1;
}

void kt_err_prefix(struct kt_err *err, const char *fmt, ...)
{
	char head[256], old[sizeof(err->msg)];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	size_t n;

	memcpy(old, err->msg, sizeof(old));
	err->detail = 0;
	n = strlen(head);
	if (n > sizeof(err->msg) - 3)
		n = sizeof(err->msg) - 3;
	memcpy(err->msg, head, n);
	memcpy(err->msg + n, ": ", 2);
	n += 2;
	old[sizeof(old) - 1 - n] = '\0';
	memcpy(err->msg + n, old, strlen(old) + 1);
}

void kt_err_clear(struct kt_err *err)
{
	if (!err)
		return;
	memset(err, 0, sizeof(*err));
}

void kt_plain_text(char *out, size_t size, const char *in)
{
	size_t o = 0;

	const unsigned char *p = (const unsigned char *)in;

	for (; *p && o + 1 < size; p++) {
		if (*p == '\n' || *p == '\r' || *p == '\t') {
			out[o++] = ' ';
		} else if (*p < 0x20 || *p == 0x7f) {
			out[o++] = '?';
		} else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
			out[o++] = '?';
			p++;
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o] = '\0';
}
