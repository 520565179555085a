/* SPDX-License-Identifier: Apache-2.0 */
/* log: klog text lines on stderr (or a file), verbosity, redaction */
#ifndef KT_LOG_H
#define KT_LOG_H

#include <stdio.h>

/*
 * The verbosity and the log stream are the only process-wide logging state;
 * the library never sets them, each tool's main does (kt_init sets stderr
 * and level 0; -v and --log-file change them).  Lines are written whole with
 * one write(2), so concurrent writers never interleave within a line.
 *
 *   I1130 07:22:21.123456   4242 lease.c:88] "lease renewed" node="vk-1"
 */
extern int kt_log_level;

/* where log lines go; NULL means stderr. The FILE stays the caller's. */
void kt_log_set_file(FILE *f);

/*
 * Writes one klog line: sev is 'I', 'W' or 'E'.  msg is the quoted message;
 * kv, if not NULL, is a printf format for the key="value" pairs that follow.
 * Values that look like secrets are never passed here: use kt_redact first.
 */
void kt_log_line(char sev, const char *file, int line, const char *msg, const char *kv, ...)
	__attribute__((format(printf, 5, 6)));

/* KT_V(level, "message", "key=%d", value): arguments not evaluated below level */
#define KT_V(n, msg, ...)                                                                   \
	do {                                                                                \
		if (kt_log_level >= (n))                                                    \
			kt_log_line('I', __FILE__, __LINE__, (msg), __VA_ARGS__);          \
	} while (0)
#define KT_WARN(msg, ...) kt_log_line('W', __FILE__, __LINE__, (msg), __VA_ARGS__)

/*
 * Copies text into buf (size bytes, always terminated) with secrets replaced
 * by <redacted>: the value of Authorization and Cookie headers, "token",
 * "access_token", "client-key-data", "password" style JSON/YAML fields, and
 * PEM private key blocks.  Returns buf.
 */
char *kt_redact(const char *text, char *buf, size_t size);

#endif
