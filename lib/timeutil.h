/* SPDX-License-Identifier: Apache-2.0 */
/* time: kubectl durations and RFC 3339 times, the monotonic and wall clocks */
#ifndef KT_TIME_H
#define KT_TIME_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "kt_err.h"

/* "1h2m3.5s", "500ms", "10s", "0"; units ns us µs ms s m h; -1 with err if bad */
int kt_duration_parse(const char *s, int64_t *ms, struct kt_err *err);
/* the one duration printer: ms as Go's time.Duration.String writes it ("0s",
 * "500ms", "1.5s", "1m1.5s", "1h0m0s", "-2.5s"); buf of 32 bytes; returns buf */
char *kt_duration_format(int64_t ms, char *buf, size_t size);

/* wall clock in microseconds since the epoch */
int64_t kt_now_us(void);
/* monotonic clock in milliseconds */
int64_t kt_mono_ms(void);

/* RFC 3339 UTC: "2026-11-30T07:22:21Z" (metav1.Time) or with six fractional
 * digits "2026-11-30T07:22:21.123456Z" (MicroTime); buf of 40 bytes */
char *kt_time_format(int64_t us, bool micro, char *buf, size_t size);
/* parses RFC 3339 with any fraction and Z or +hh:mm; -1 with err if bad */
int kt_time_parse(const char *s, int64_t *us, struct kt_err *err);
/* the same to the nanosecond (digits past the ninth are dropped) */
int kt_time_parse_ns(const char *s, int64_t *ns, struct kt_err *err);
/* RFC 3339 UTC to the nanosecond: nine digits always when fixed (the CRI log
 * files' RFC3339NanoFixed), else as Go's RFC3339Nano (trailing zeros and an
 * empty fraction left out); buf of 40 bytes */
char *kt_time_format_ns(int64_t ns, bool fixed, char *buf, size_t size);

#endif
