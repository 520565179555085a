/* SPDX-License-Identifier: Apache-2.0 */
/* probe_grpc: grpc.health.v1.Health/Check over plaintext HTTP/2, framed by hand */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "log.h"
#include "probe_int.h"
#include "timeutil.h"
#include "url.h"

#define GRPC_MAX_BODY 65536

struct grpc_attempt {
	struct kt_probe_call *c;
	CURL *easy;
	struct curl_slist *hdrs;
	struct kt_timer *timer;	/* a connect failure waits for the deadline, as upstream */
	int64_t deadline;
	int grpc_status;	/* -1 until a grpc-status header or trailer */
	char *grpc_message;
	size_t req_len;
	unsigned char req[600];
	size_t body_len;
	unsigned char body[GRPC_MAX_BODY];
	char errbuf[CURL_ERROR_SIZE];
	char addr[300];
};

static const char *const code_names[] = {
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
	"AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
	"Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss",
	"Unauthenticated",
};

enum { CODE_UNKNOWN = 2, CODE_DEADLINE = 4, CODE_UNIMPLEMENTED = 12, CODE_INTERNAL = 13,
       CODE_UNAVAILABLE = 14 };

static const char *const serving_names[] = { "UNKNOWN", "SERVING", "NOT_SERVING",
					     "SERVICE_UNKNOWN" };

static void attempt_free(struct grpc_attempt *a)
{
	if (!a)
		return;
	if (a->timer)
		kt_timer_cancel(a->c->loop, a->timer);
	kt_loop_easy_give(a->c->loop, a->easy);
	curl_slist_free_all(a->hdrs);
	free(a->grpc_message);
	free(a);
}

static void finish(struct grpc_attempt *a, enum kt_probe_result r, const char *msg)
{
	struct kt_probe_call *c = a->c;

	c->attempt = NULL;
	attempt_free(a);
	kt_probe_attempt_done(c, r, false, msg, strlen(msg));
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct grpc_attempt *a = arg;
	size_t len = size * n;

	if (len > sizeof(a->body) - a->body_len)
		return 0;
	memcpy(a->body + a->body_len, data, len);
	a->body_len += len;
	return len;
}

/* grpc-message is percent-encoded */
static char *percent_decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), hex[3] = { 0 };
	size_t n = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '%' && i + 2 < len && isxdigit((unsigned char)s[i + 1]) &&
		    isxdigit((unsigned char)s[i + 2])) {
			hex[0] = s[i + 1];
			hex[1] = s[i + 2];
			out[n++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			out[n++] = s[i];
		}
	}
	out[n] = '\0';
	return out;
}

/* headers and trailers both come here */
static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct grpc_attempt *a = arg;
	size_t len = size * n;
	const char *v, *end = data + len;
	char num[16];

	while (end > data && isspace((unsigned char)end[-1]))
		end--;
	if (len > 12 && strncasecmp(data, "grpc-status:", 12) == 0) {
		for (v = data + 12; v < end && *v == ' '; v++)
			;
		snprintf(num, sizeof(num), "%.*s", (int)(end - v), v);
		a->grpc_status = (int)strtol(num, NULL, 10);
	} else if (len > 13 && strncasecmp(data, "grpc-message:", 13) == 0) {
		for (v = data + 13; v < end && *v == ' '; v++)
			;
		free(a->grpc_message);
		a->grpc_message = percent_decode(v, (size_t)(end - v));
	}
	return len;
}

static size_t put_varint(unsigned char *p, uint64_t v)
{
	size_t n = 0;

	do {
		p[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			p[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

static int get_varint(const unsigned char *p, size_t len, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*pos >= len)
			return -1;
		*v |= (uint64_t)(p[*pos] & 0x7f) << shift;
		if (!(p[(*pos)++] & 0x80))
			return 0;
	}
	return -1;
}

/* the 5-byte frame and HealthCheckRequest{service = 1} */
static void build_request(struct grpc_attempt *a, const char *service)
{
	size_t slen = service ? strlen(service) : 0, n = 5;
	uint32_t mlen;

	if (slen > sizeof(a->req) - 16)
		slen = sizeof(a->req) - 16;
	if (slen) {
		a->req[n++] = 0x0a;
		n += put_varint(a->req + n, slen);
		memcpy(a->req + n, service, slen);
		n += slen;
	}
	mlen = (uint32_t)(n - 5);
	a->req[0] = 0;
	a->req[1] = (unsigned char)(mlen >> 24);
	a->req[2] = (unsigned char)(mlen >> 16);
	a->req[3] = (unsigned char)(mlen >> 8);
	a->req[4] = (unsigned char)mlen;
	a->req_len = n;
}

/* HealthCheckResponse.status from the first frame; -1 if it is not one */
static int parse_response(const struct grpc_attempt *a)
{
	const unsigned char *b = a->body;
	size_t mlen, pos = 5, end;
	uint64_t key, v, status = 0;

	if (a->body_len < 5 || b[0] != 0)
		return -1;
	mlen = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
	if (mlen > a->body_len - 5)
		return -1;
	end = 5 + mlen;
	while (pos < end) {
		if (get_varint(b, end, &pos, &key) < 0)
			return -1;
		switch (key & 7) {
		case 0:
			if (get_varint(b, end, &pos, &v) < 0)
				return -1;
			if (key >> 3 == 1)
				status = v;
			break;
		case 1:
			pos += 8;
			break;
		case 2:
			if (get_varint(b, end, &pos, &v) < 0 || v > end - pos)
				return -1;
			pos += v;
			break;
		case 5:
			pos += 4;
			break;
		default:
			return -1;
		}
	}
	if (pos != end || status > 1000)
		return -1;
	return (int)status;
}

/* the gRPC code for a non-200 HTTP status, as gRPC's HTTP mapping says */
static int code_for_http(long http)
{
	switch (http) {
	case 400:
		return CODE_INTERNAL;
	case 401:
		return 16;
	case 403:
		return 7;
	case 404:
		return CODE_UNIMPLEMENTED;
	case 429:
	case 502:
	case 503:
	case 504:
		return CODE_UNAVAILABLE;
	default:
		return CODE_UNKNOWN;
	}
}

static void rpc_error(struct grpc_attempt *a, int code, const char *desc)
{
	char msg[1024], name[32], dur[32];

	kt_duration_format(a->c->timeout_ms, dur, sizeof(dur));
	if (code == CODE_UNIMPLEMENTED) {
		snprintf(msg, sizeof(msg),
			 "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s",
			 desc);
	} else if (code == CODE_DEADLINE) {
		snprintf(msg, sizeof(msg), "timeout: health rpc did not complete within %s", dur);
	} else {
		if (code >= 0 && code < (int)(sizeof(code_names) / sizeof(code_names[0])))
			snprintf(name, sizeof(name), "%s", code_names[code]);
		else
			snprintf(name, sizeof(name), "Code(%d)", code);
		snprintf(msg, sizeof(msg), "error: health rpc probe failed: rpc error: code = %s desc = %s",
			 name, desc);
	}
	finish(a, KT_PROBE_FAILURE, msg);
}

static void connect_failed(struct kt_loop *loop, void *arg)
{
	struct grpc_attempt *a = arg;
	char msg[600], dur[32];

	a->timer = NULL;
	kt_duration_format(a->c->timeout_ms, dur, sizeof(dur));
	snprintf(msg, sizeof(msg),
		 "timeout: failed to connect service \"%s\" within %s: context deadline exceeded",
		 a->addr, dur);
	finish(a, KT_PROBE_FAILURE, msg);
}

static void transport_error(struct grpc_attempt *a, CURLcode rc)
{
	curl_off_t connected = 0;
	long http = 0;
	int64_t left;

	curl_easy_getinfo(a->easy, CURLINFO_CONNECT_TIME_T, &connected);
	curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &http);
	if (rc == CURLE_OPERATION_TIMEDOUT && connected > 0) {
		rpc_error(a, CODE_DEADLINE, "");
		return;
	}
	if (http > 0) {
		rpc_error(a, CODE_UNAVAILABLE, a->errbuf[0] ? a->errbuf : curl_easy_strerror(rc));
		return;
	}
	/*
	 * No reply at all: no HTTP/2 connection came up.  grpc-go's blocking
	 * dial keeps trying until the deadline, so report it then.
	 */
	left = a->deadline - kt_loop_now(a->c->loop);
	a->timer = kt_timer_add(a->c->loop, left > 0 ? left : 0, connect_failed, a);
	if (!a->timer)
		connect_failed(a->c->loop, a);
}

static void on_done(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg)
{
	struct grpc_attempt *a = arg;
	char msg[300], desc[200];
	long http = 0;
	int st;

	if (rc != CURLE_OK) {
		transport_error(a, rc);
		return;
	}
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http);
	if (http != 200) {
		snprintf(desc, sizeof(desc),
			 "unexpected HTTP status code received from server: %ld", http);
		rpc_error(a, code_for_http(http), desc);
		return;
	}
	if (a->grpc_status < 0) {
		rpc_error(a, CODE_INTERNAL, "server closed the stream without sending trailers");
		return;
	}
	if (a->grpc_status != 0) {
		rpc_error(a, a->grpc_status, a->grpc_message ? a->grpc_message : "");
		return;
	}
	st = parse_response(a);
	if (st < 0) {
		rpc_error(a, CODE_INTERNAL, "grpc: failed to unmarshal the received message");
		return;
	}
	if (st == 1) {
		finish(a, KT_PROBE_SUCCESS, "service healthy");
		return;
	}
	if (st < 4)
		snprintf(msg, sizeof(msg), "service unhealthy (responded with \"%s\")",
			 serving_names[st]);
	else
		snprintf(msg, sizeof(msg), "service unhealthy (responded with \"%d\")", st);
	finish(a, KT_PROBE_FAILURE, msg);
}

static int setup(struct grpc_attempt *a, struct kt_err *err)
{
	struct kt_probe_call *c = a->c;
	char url[400], timeout[64];
	struct curl_slist *l = NULL;
	const char *lines[] = { "Content-Type: application/grpc", "TE: trailers",
				"User-Agent: " KT_PROBE_USER_AGENT, "Accept:", "Expect:", timeout };
	CURL *e = a->easy;

	memcpy(timeout, "Grpc-Timeout: ", 14);
	kt_probe_grpc_timeout(timeout + 14, sizeof(timeout) - 14, c->timeout_ms);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		l = curl_slist_append(a->hdrs, lines[i]);
		if (!l)
			return kt_error(err, "out of memory");
		a->hdrs = l;
	}
	snprintf(url, sizeof(url), "http://%s/grpc.health.v1.Health/Check", a->addr);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, a->req);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)a->req_len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, a->hdrs);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, a->errbuf);
	KT_V(6, "probe request", "url=\"%s\" try=%d", url, c->tries);
	KT_V(7, "probe request headers", "grpc-timeout=\"%s\"", timeout + 14);
	return 0;
}

void kt_probe_grpc_timeout(char *buf, size_t size, int64_t ms)
{
	/* at most 8 digits: the finest unit that fits, rounded up, as grpc-go */
	static const struct {
		int64_t ms_per;	/* 0: finer than a millisecond */
		int64_t per_ms;
		char unit;
	} units[] = { { 0, 1000000, 'n' }, { 0, 1000, 'u' }, { 1, 1, 'm' },
		      { 1000, 1, 'S' }, { 60000, 1, 'M' }, { 3600000, 1, 'H' } };
	const int64_t max = 99999999;

	if (ms <= 0) {
		snprintf(buf, size, "0n");
		return;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		int64_t v = units[i].ms_per ? (ms + units[i].ms_per - 1) / units[i].ms_per
					    : ms > max / units[i].per_ms ? max + 1
									  : ms * units[i].per_ms;

		if (v <= max || units[i].unit == 'H') {
			snprintf(buf, size, "%lld%c", (long long)v, units[i].unit);
			return;
		}
	}
}

int kt_probe_grpc_start(struct kt_probe_call *c, struct kt_err *err)
{
	struct grpc_attempt *a = calloc(1, sizeof(*a));

	if (!a)
		return kt_error(err, "out of memory");
	a->c = c;
	a->grpc_status = -1;
	a->deadline = kt_loop_now(c->loop) + c->timeout_ms;
	kt_url_host_port(a->addr, sizeof(a->addr), c->host, c->spec->port);
	build_request(a, c->spec->service);
	a->easy = kt_loop_easy_take(c->loop);
	if (!a->easy)
		kt_error(err, "cannot make a curl handle");
	if (!a->easy || setup(a, err) < 0 ||
	    kt_loop_add_curl(c->loop, a->easy, on_done, a, err) < 0) {
		attempt_free(a);
		return -1;
	}
	c->attempt = a;
	return 0;
}

void kt_probe_grpc_cancel(struct kt_loop *loop, void *attempt)
{
	struct grpc_attempt *a = attempt;

	/* a timer stands for a transfer that has ended already */
	if (!a->timer)
		kt_loop_remove_curl(loop, a->easy);
	attempt_free(a);
}
