/* SPDX-License-Identifier: Apache-2.0 */
/* log: klog text lines, written whole, with secrets redacted */
#include <stdbool.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

int kt_log_level;
static FILE *log_file;

void kt_log_set_file(FILE *f)
{
	log_file = f;
}

void kt_log_line(char sev, const char *file, int line, const char *msg, const char *kv, ...)
{
	char buf[8192], tmp[4096];
	struct timeval tv;
	struct tm tm;
	const char *base = strrchr(file, '/');
	FILE *f = log_file ? log_file : stderr;
	size_t n;
	va_list ap;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	n = (size_t)snprintf(buf, sizeof(buf), "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] \"%s\"",
			     sev, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			     (long)tv.tv_usec, (int)getpid(), base ? base + 1 : file, line, msg);
	if (kv && *kv && n < sizeof(buf)) {
		va_start(ap, kv);
		vsnprintf(tmp, sizeof(tmp), kv, ap);
		va_end(ap);
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s", tmp);
	}
	if (n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* one write per line: lines from concurrent processes never interleave */
	fflush(f);
	if (write(fileno(f), buf, n) < 0)
		return;
}

/* the end of a secret value starting at s: to the quote, comma, brace or end of line */
static const char *value_end(const char *s)
{
	while (*s && *s != '"' && *s != '\'' && *s != ',' && *s != '}' && *s != '\n' && *s != '\r')
		s++;
	return s;
}

static bool ci_prefix(const char *s, const char *p)
{
	return strncasecmp(s, p, strlen(p)) == 0;
}

char *kt_redact(const char *text, char *buf, size_t size)
{
	static const char *const keys[] = {
		"authorization: ", "cookie: ", "\"token\":", "token:", "\"access_token\":",
		"client-key-data:", "\"client-key-data\":", "\"clientKeyData\":", "password:",
		"\"password\":", "bearer ",
	};
	const char *p = text;
	size_t o = 0;

	if (!size)
		return buf;
	while (*p && o + 1 < size) {
		size_t k, klen = 0;

		if (ci_prefix(p, "-----BEGIN ") && strstr(p, "PRIVATE KEY-----") &&
		    strstr(p, "PRIVATE KEY-----") - p < 40) {
			const char *end = strstr(p, "-----END ");
			const char *stop = end ? strstr(end + 9, "-----") : NULL;

			o += (size_t)snprintf(buf + o, size - o, "<redacted>");
			p = stop ? stop + 5 : p + strlen(p);
			continue;
		}
		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			if (ci_prefix(p, keys[k])) {
				klen = strlen(keys[k]);
				break;
			}
		}
		if (!klen) {
			buf[o++] = *p++;
			continue;
		}
		while (klen-- && o + 1 < size)
			buf[o++] = *p++;
		while (*p == ' ' || *p == '"' || *p == '\'') {
			if (o + 1 < size)
				buf[o++] = *p;
			p++;
		}
		if (ci_prefix(p, "bearer ")) {
			for (k = 0; k < 7 && o + 1 < size; k++)
				buf[o++] = *p++;
		}
		if (*p && value_end(p) != p) {
			o += (size_t)snprintf(buf + o, size - o, "<redacted>");
			p = value_end(p);
		}
		if (o >= size)
			o = size - 1;
	}
	buf[o < size ? o : size - 1] = '\0';
	return buf;
}
