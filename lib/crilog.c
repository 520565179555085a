/* SPDX-License-Identifier: Apache-2.0 */
/* crilog: CRI log lines, formatted, parsed and read with the kubelet's options */
#include <string.h>

#include "crilog.h"
#include "timeutil.h"

/* the kubelet's reader tolerates a short time field and checks only that each
 * of the first three fields ends in a space */
int kt_cri_parse(const char *s, size_t n, struct kt_cri_line *out)
{
	const char *end = s + n, *sp, *tag;
	char tbuf[64];

	sp = memchr(s, ' ', n);
	if (!sp || (size_t)(sp - s) >= sizeof(tbuf))
		return -1;
	memcpy(tbuf, s, (size_t)(sp - s));
	tbuf[sp - s] = '\0';
	if (kt_time_parse_ns(tbuf, &out->ns, NULL) < 0)
		return -1;
	s = sp + 1;
	sp = memchr(s, ' ', (size_t)(end - s));
	if (!sp)
		return -1;
	if (sp - s == 6 && !memcmp(s, "stdout", 6))
		out->stream = KT_CRI_STDOUT;
	else if (sp - s == 6 && !memcmp(s, "stderr", 6))
		out->stream = KT_CRI_STDERR;
	else
		return -1;
	tag = sp + 1;
	sp = memchr(tag, ' ', (size_t)(end - tag));
	if (!sp)
		return -1;
	/* the first tag of a ':'-separated list says partial or full */
	if (tag[0] == 'P' && (tag + 1 == sp || tag[1] == ':'))
		out->partial = true;
	else if (tag[0] == 'F' && (tag + 1 == sp || tag[1] == ':'))
		out->partial = false;
	else
		return -1;
	out->text = sp + 1;
	out->len = (size_t)(end - out->text);
	return 0;
}

void kt_cri_format(struct kt_sb *sb, int64_t ns, enum kt_cri_stream stream, bool partial,
		   const char *text, size_t len)
{
	char tbuf[40];

	kt_sb_puts(sb, kt_time_format_ns(ns, true, tbuf, sizeof(tbuf)));
	kt_sb_puts(sb, stream == KT_CRI_STDERR ? " stderr " : " stdout ");
	kt_sb_puts(sb, partial ? "P " : "F ");
	kt_sb_put(sb, text, len);
	kt_sb_put(sb, "\n", 1);
}

int kt_cri_emit(const struct kt_cri_opts *o, const char *line, size_t n, struct kt_sb *out,
		int64_t *sent)
{
	struct kt_cri_line l;
	char tbuf[40];
	const char *ts = "";
	size_t tlen = 0, want, start = out->len;
	int stop = 0;

	if (kt_cri_parse(line, n, &l) < 0 || l.ns < o->since_ns)
		return 0;
	if (o->timestamps) {
		ts = kt_time_format_ns(l.ns, false, tbuf, sizeof(tbuf));
		tlen = strlen(ts) + 1;
	}
	want = tlen + l.len + !l.partial;
	if (o->limit_bytes >= 0 && *sent + (int64_t)want >= o->limit_bytes) {
		want = (size_t)(o->limit_bytes - *sent);
		stop = 1;
	}
	/* the whole line, then cut to what the limit leaves */
	if (tlen) {
		kt_sb_put(out, ts, tlen - 1);
		kt_sb_put(out, " ", 1);
	}
	kt_sb_put(out, l.text, l.len);
	if (!l.partial)
		kt_sb_put(out, "\n", 1);
	if (stop && !out->oom)
		kt_sb_trunc(out, start + want);
	*sent += (int64_t)want;
	return stop;
}

size_t kt_cri_tail_start(const char *buf, size_t len, long lines)
{
	size_t i = len;

	if (lines < 0)
		return 0;
	if (lines == 0)
		return len;
	/* a last line without its newline is a line too */
	if (i > 0 && buf[i - 1] == '\n')
		i--;
	for (; i > 0; i--)
		if (buf[i - 1] == '\n' && --lines == 0)
			return i;
	return 0;
}
