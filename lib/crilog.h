/* SPDX-License-Identifier: Apache-2.0 */
/* crilog: a container's log lines in the kubelet's CRI format, written and read
 *
 * A line of a container's log file is "TIME STREAM TAG TEXT\n": TIME in RFC 3339
 * with nine fractional digits, STREAM "stdout" or "stderr", TAG "F" for a whole
 * line or "P" for the start of one the runtime cut (more tags may follow after a
 * ':'), TEXT the bytes the container wrote without their newline.  Reading
 * applies the kubelet's log options: sinceTime/sinceSeconds, timestamps,
 * limitBytes; tailLines is a start offset (kt_cri_tail_start).  Pure. */
#ifndef KT_CRILOG_H
#define KT_CRILOG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core.h"

enum kt_cri_stream { KT_CRI_STDOUT, KT_CRI_STDERR };

struct kt_cri_line {
	int64_t ns; /* TIME, nanoseconds since the epoch */
	enum kt_cri_stream stream;
	bool partial;	  /* tag P: no newline ends TEXT */
	const char *text; /* borrowed from the parsed line */
	size_t len;
};

/* parses one line of a log file, without its newline; -1 when it is not one */
int kt_cri_parse(const char *s, size_t n, struct kt_cri_line *out);

/* appends one line of a log file: a text without a newline, partial or whole */
void kt_cri_format(struct kt_sb *sb, int64_t ns, enum kt_cri_stream stream, bool partial,
		   const char *text, size_t len);

/* the kubelet's log options, as the reader applies them */
struct kt_cri_opts {
	int64_t since_ns;    /* lines older are skipped; 0 keeps all */
	int64_t limit_bytes; /* at most this many bytes out; -1 no limit */
	bool timestamps;     /* each line prefixed with its time (RFC3339Nano) and a space */
};

/* appends what the reader sends for one line of a log file (without its
 * newline) to out, counting *sent against o->limit_bytes: 0 when it went out
 * or was skipped (older than since, not a CRI line), 1 when the limit is
 * reached and reading should stop (out holds what fit) */
int kt_cri_emit(const struct kt_cri_opts *o, const char *line, size_t n, struct kt_sb *out,
		int64_t *sent);

/* the offset in buf (a log file's bytes) where its last lines lines start;
 * lines < 0 is the whole file (0); a last line without its newline counts */
size_t kt_cri_tail_start(const char *buf, size_t len, long lines);
#endif
