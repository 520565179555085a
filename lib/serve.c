/* SPDX-License-Identifier: Apache-2.0 */
/* serve: the kubelet API's routes, names and log options.  Pure. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kt_err.h"
#include "serve.h"
#include "timeutil.h"

#define SEG_MAX 256 /* a decoded path segment or query value, at most */

static int refuse(struct kt_serve_refusal *no, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(struct kt_serve_refusal *no, int status, const char *fmt, ...)
{
	va_list ap;

	no->status = status;
	va_start(ap, fmt);
	vsnprintf(no->body, sizeof(no->body), fmt, ap);
	va_end(ap);
	return -1;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* percent-decodes s[0..n) into out (size cap), '+' as a space when plus;
 * the decoded length, or -1 when it is malformed, too long or holds a NUL */
static long decode_cap(const char *s, size_t n, bool plus, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -1;
			hi = hexval((unsigned char)s[i + 1]);
			lo = hexval((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		if (c == 0 || o + 1 >= cap)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return (long)o;
}

static long decode(const char *s, size_t n, bool plus, char *out)
{
	return decode_cap(s, n, plus, out, SEG_MAX);
}

int kt_serve_dns_label(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && !(c == '-' && i > 0 && i + 1 < n))
			return -1;
	}
	return 0;
}

int kt_serve_dns_subdomain(const char *s, size_t n)
{
	size_t start = 0;

	if (n == 0 || n > 253)
		return -1;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (kt_serve_dns_label(s + start, i - start) < 0)
			return -1;
		start = i + 1;
	}
	return 0;
}

const char *kt_serve_verb(const char *method)
{
	static const char *const map[][2] = {
		{ "GET", "get" },    { "HEAD", "get" },	   { "POST", "create" },
		{ "PUT", "update" }, { "PATCH", "patch" }, { "DELETE", "delete" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(method, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

/* path is prefix, or prefix then '/' and more */
static bool under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

const char *kt_serve_subresource(const char *path)
{
	if (under(path, "/stats"))
		return "stats";
	if (under(path, "/metrics"))
		return "metrics";
	if (under(path, "/logs"))
		return "log";
	return "proxy";
}

/* Go's strconv.ParseBool, and an empty value (a bare "follow") as true */
static int parse_bool(const char *key, const char *v, bool *out, struct kt_serve_refusal *no)
{
	static const char *const yes[] = { "", "1", "t", "T", "true", "TRUE", "True" };
	static const char *const nay[] = { "0", "f", "F", "false", "FALSE", "False" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcmp(v, yes[i]) == 0)
			return *out = true, 0;
	for (size_t i = 0; i < sizeof(nay) / sizeof(nay[0]); i++)
		if (strcmp(v, nay[i]) == 0)
			return *out = false, 0;
	return refuse(no, 400, "%s: Invalid value: \"%s\": not a boolean", key, v);
}

/* a decimal int64, as Go's strconv.ParseInt reads it */
static int parse_int(const char *key, const char *v, int64_t *out, struct kt_serve_refusal *no)
{
	const char *p = v;
	char *end;
	long long x;

	if (*p == '+' || *p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return refuse(no, 400, "%s: Invalid value: \"%s\": not a whole number", key, v);
	errno = 0;
	x = strtoll(v, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		return refuse(no, 400, "%s: Invalid value: \"%s\": not a whole number", key, v);
	*out = x;
	return 0;
}

/* the log options of a query; the first of a repeated key counts, as Go's
 * Values.Get has it, and keys the kubelet does not know are ignored */
static int parse_logq(const char *q, struct kt_serve_logq *l, struct kt_serve_refusal *no)
{
	bool seen_since_s = false, seen_since_t = false, seen_tail = false, seen_limit = false;
	bool seen_f = false, seen_ts = false, seen_prev = false, tail_compat = false;
	char key[SEG_MAX], val[SEG_MAX];
	int64_t x;

	*l = (struct kt_serve_logq){ .tail_lines = -1, .limit_bytes = -1 };
	while (q && *q) {
		const char *amp = strchr(q, '&'), *eq;
		size_t n = amp ? (size_t)(amp - q) : strlen(q);

		eq = memchr(q, '=', n);
		if (n == 0)
			goto next;
		if (decode(q, eq ? (size_t)(eq - q) : n, true, key) < 0 ||
		    (eq ? decode(eq + 1, n - (size_t)(eq - q) - 1, true, val) : (val[0] = 0)) < 0)
			return refuse(no, 400, "{\"message\": \"Unable to decode query.\"}");
		if (strcmp(key, "follow") == 0 && !seen_f) {
			seen_f = true;
			if (parse_bool(key, val, &l->follow, no) < 0)
				return -1;
		} else if (strcmp(key, "timestamps") == 0 && !seen_ts) {
			seen_ts = true;
			if (parse_bool(key, val, &l->timestamps, no) < 0)
				return -1;
		} else if (strcmp(key, "previous") == 0 && !seen_prev) {
			seen_prev = true;
			if (parse_bool(key, val, &l->previous, no) < 0)
				return -1;
		} else if ((strcmp(key, "tailLines") == 0 && !seen_tail) ||
			   (strcmp(key, "tail") == 0 && !tail_compat)) {
			/* "tail" is the older name; "all" is no tail at all */
			if (strcmp(key, "tail") == 0) {
				tail_compat = true;
				if (strcmp(val, "all") == 0)
					goto next;
			}
			seen_tail = true;
			if (parse_int("tailLines", val, &x, no) < 0)
				return -1;
			if (x < 0)
				return refuse(
				    no, 400,
				    "tailLines: Invalid value: %lld: must be greater than "
				    "or equal to 0",
				    (long long)x);
			l->tail_lines = x > 0x7fffffff ? 0x7fffffff : (long)x;
		} else if (strcmp(key, "limitBytes") == 0 && !seen_limit) {
			seen_limit = true;
			if (parse_int(key, val, &x, no) < 0)
				return -1;
			if (x < 1)
				return refuse(
				    no, 400,
				    "limitBytes: Invalid value: %lld: must be greater than 0",
				    (long long)x);
			l->limit_bytes = x;
		} else if (strcmp(key, "sinceSeconds") == 0 && !seen_since_s) {
			seen_since_s = true;
			if (parse_int(key, val, &x, no) < 0)
				return -1;
			if (x < 1)
				return refuse(
				    no, 400,
				    "sinceSeconds: Invalid value: %lld: must be greater than 0",
				    (long long)x);
			l->since_seconds = x > 1000000000000LL ? 1000000000000LL : x;
		} else if (strcmp(key, "sinceTime") == 0 && !seen_since_t) {
			struct kt_err err = { 0 };

			seen_since_t = true;
			if (kt_time_parse_ns(val, &l->since_time_ns, &err) < 0)
				return refuse(
				    no, 400,
				    "sinceTime: Invalid value: \"%s\": not an RFC 3339 time", val);
			if (l->since_time_ns == 0)
				l->since_time_ns = 1; /* the epoch itself: keep "given" */
		}
	next:
		q = amp ? amp + 1 : NULL;
	}
	if (seen_since_s && seen_since_t)
		return refuse(no, 400,
			      "at most one of `sinceTime` or `sinceSeconds` may be specified");
	return 0;
}

/* the next segment of a path at *p (after its '/'), decoded into out;
 * 0 when there is none */
static long segment(const char **p, char *out)
{
	const char *s = *p, *e;
	long n;

	if (*s != '/')
		return 0;
	s++;
	e = strchr(s, '/');
	if (!e)
		e = s + strlen(s);
	n = decode(s, (size_t)(e - s), false, out);
	*p = e;
	return n < 0 ? -2 : n;
}

static int name_check(const char *what, const char *v, long n, bool subdomain,
		      struct kt_serve_refusal *no)
{
	if (n < 0 || (subdomain ? kt_serve_dns_subdomain(v, (size_t)n)
				: kt_serve_dns_label(v, (size_t)n)) < 0)
		return refuse(no, 400,
			      "invalid %s name \"%.*s\": a lowercase RFC 1123 %s: letters a-z, "
			      "digits and '-'%s, starting and ending with a letter or digit",
			      what, n < 0 ? 0 : (int)(n > 80 ? 80 : n), v,
			      subdomain ? "subdomain" : "label",
			      subdomain ? ", labels joined by '.'" : "");
	return 0;
}

static int route_logs(const char *rest, const char *query, struct kt_serve_req *r,
		      struct kt_serve_refusal *no)
{
	char seg[3][SEG_MAX];
	long n[3];
	static const char *const missing[] = { "podNamespace", "podID", "container name" };

	for (int i = 0; i < 3; i++) {
		n[i] = segment(&rest, seg[i]);
		if (n[i] == 0) {
			if (i == 2 || i == 1)
				return refuse(no, 400, "{\"message\": \"Missing %s.\"}",
					      missing[i]);
			return refuse(no, 404, "404 page not found");
		}
	}
	if (*rest)
		return refuse(no, 404, "404 page not found");
	if (name_check("namespace", seg[0], n[0], false, no) < 0 ||
	    name_check("pod", seg[1], n[1], true, no) < 0 ||
	    name_check("container", seg[2], n[2], false, no) < 0)
		return -1;
	memcpy(r->ns, seg[0], (size_t)n[0] + 1);
	memcpy(r->pod, seg[1], (size_t)n[1] + 1);
	memcpy(r->container, seg[2], (size_t)n[2] + 1);
	r->route = KT_SERVE_LOGS;
	return parse_logq(query, &r->log, no);
}

/* the kubelet's stream flags: "1" (what the API server sends) or "true" */
static bool flag_on(const char *v)
{
	return strcmp(v, "1") == 0 || strcmp(v, "true") == 0;
}

/* exec's, attach's and port-forward's query: each command word in order, the
 * first of each stream flag, as the kubelet's FormValue reads them */
static int parse_streamq(enum kt_serve_route route, const char *q, struct kt_serve_streamq *st,
			 struct kt_serve_refusal *no)
{
	bool seen[4] = { false, false, false, false };
	bool *flags[4] = { &st->in, &st->out, &st->err, &st->tty };
	static const char *const names[4] = { "input", "output", "error", "tty" };
	char key[SEG_MAX];
	size_t used = 0;

	while (q && *q) {
		const char *amp = strchr(q, '&'), *eq;
		size_t n = amp ? (size_t)(amp - q) : strlen(q), vlen;
		char *val = st->argv + used;
		long got;

		eq = memchr(q, '=', n);
		if (n == 0)
			goto next;
		vlen = eq ? n - (size_t)(eq - q) - 1 : 0;
		if (decode(q, eq ? (size_t)(eq - q) : n, true, key) < 0)
			return refuse(no, 400, "{\"message\": \"Unable to decode query.\"}");
		got = decode_cap(eq ? eq + 1 : "", vlen, true, val, sizeof(st->argv) - used);
		if (got < 0 && strcmp(key, "command") == 0)
			return refuse(no, 400, "the command is too long: at most %d bytes in all",
				      KT_SERVE_ARGV_MAX - 1);
		if (got < 0)
			return refuse(no, 400, "{\"message\": \"Unable to decode query.\"}");
		if (strcmp(key, "command") == 0 && route == KT_SERVE_EXEC) {
			used += (size_t)got + 1;
			st->argc++;
			goto next;
		}
		for (int i = 0; i < 4; i++)
			if (strcmp(key, names[i]) == 0 && !seen[i]) {
				seen[i] = true;
				*flags[i] = flag_on(val);
			}
		val[0] = '\0';
	next:
		q = amp ? amp + 1 : NULL;
	}
	if (route == KT_SERVE_PORTFORWARD)
		return 0;
	if (route == KT_SERVE_EXEC && st->argc == 0)
		return refuse(no, 400, "you must specify at least one command for the container");
	if (!st->in && !st->out && !st->err)
		return refuse(no, 400, "you must specify at least 1 of stdin, stdout, stderr");
	if (st->tty && st->err)
		return refuse(no, 400,
			      "tty and stderr cannot both be true: a terminal has one output");
	return 0;
}

/* /exec/NS/POD[/UID]/CONTAINER, /attach/... the same, /portForward/NS/POD[/UID] */
static int route_stream(enum kt_serve_route route, const char *rest, const char *query,
			struct kt_serve_req *r, struct kt_serve_refusal *no)
{
	char seg[4][SEG_MAX];
	long n[4];
	int nseg = 0, want = route == KT_SERVE_PORTFORWARD ? 2 : 3;
	const char *uid = NULL, *container = NULL;

	while (nseg < 4 && (n[nseg] = segment(&rest, seg[nseg])) != 0)
		nseg++;
	if (*rest || (nseg != want && nseg != want + 1))
		return refuse(no, 404, "404 page not found");
	if (nseg == want + 1)
		uid = seg[2];
	if (route != KT_SERVE_PORTFORWARD)
		container = seg[nseg - 1];
	if (name_check("namespace", seg[0], n[0], false, no) < 0 ||
	    name_check("pod", seg[1], n[1], true, no) < 0 ||
	    (container && name_check("container", container, n[nseg - 1], false, no) < 0))
		return -1;
	if (uid) {
		/* a UID names a directory: letters, digits and '-' only */
		if (n[2] < 0 || n[2] >= (long)sizeof(r->uid) ||
		    strspn(uid, "0123456789abcdefABCDEF-") != (size_t)n[2] || n[2] == 0)
			return refuse(no, 400, "invalid pod UID \"%.*s\"",
				      n[2] < 0 ? 0 : (int)(n[2] > 64 ? 64 : n[2]), uid);
		memcpy(r->uid, uid, (size_t)n[2] + 1);
	}
	memcpy(r->ns, seg[0], (size_t)n[0] + 1);
	memcpy(r->pod, seg[1], (size_t)n[1] + 1);
	if (container)
		memcpy(r->container, container, (size_t)n[nseg - 1] + 1);
	r->route = route;
	return parse_streamq(route, query, &r->st, no);
}

int kt_serve_parse(const char *method, const char *target, struct kt_serve_req *r,
		   struct kt_serve_refusal *no)
{
	static const struct {
		const char *path;
		enum kt_serve_route route;
	} streams[] = {
		{ "/exec", KT_SERVE_EXEC },
		{ "/attach", KT_SERVE_ATTACH },
		{ "/portForward", KT_SERVE_PORTFORWARD },
	};
	static const struct {
		const char *path;
		enum kt_serve_route route;
	} fixed[] = {
		{ "/healthz", KT_SERVE_HEALTHZ },
		{ "/pods", KT_SERVE_PODS },
		{ "/pods/", KT_SERVE_PODS },
		{ "/runningpods", KT_SERVE_RUNNINGPODS },
		{ "/runningpods/", KT_SERVE_RUNNINGPODS },
		{ "/stats/summary", KT_SERVE_STATS_SUMMARY },
		{ "/stats/summary/", KT_SERVE_STATS_SUMMARY },
		{ "/metrics/resource", KT_SERVE_METRICS_RESOURCE },
	};
	char path[2048];
	const char *query = strchr(target, '?');
	size_t plen = query ? (size_t)(query - target) : strlen(target);

	memset(r, 0, sizeof(*r));
	r->log.tail_lines = -1;
	r->log.limit_bytes = -1;
	no->status = 0;
	no->body[0] = '\0';
	if (query)
		query++;
	if (plen == 0 || target[0] != '/' || plen >= sizeof(path))
		return refuse(no, 404, "404 page not found");
	memcpy(path, target, plen);
	path[plen] = '\0';
	if (under(path, "/run"))
		return refuse(no, 501,
			      "run is not implemented in kubelet-serve yet: it serves logs, pods, "
			      "stats, metrics, exec, attach and portForward");
	for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++) {
		if (!under(path, streams[i].path))
			continue;
		if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
			return refuse(no, 405, "Method Not Allowed");
		return route_stream(streams[i].route, path + strlen(streams[i].path), query, r, no);
	}
	if (under(path, "/containerLogs")) {
		if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
			return refuse(no, 405, "Method Not Allowed");
		return route_logs(path + strlen("/containerLogs"), query, r, no);
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (strcmp(path, fixed[i].path) != 0)
			continue;
		if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
			return refuse(no, 405, "Method Not Allowed");
		r->route = fixed[i].route;
		return 0;
	}
	return refuse(no, 404, "404 page not found");
}
