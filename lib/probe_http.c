/* SPDX-License-Identifier: Apache-2.0 */
/* probe_http: an httpGet probe attempt with libcurl on the loop, redirects by hand */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "log.h"
#include "probe_int.h"
#include "url.h"

struct http_attempt {
	struct kt_probe_call *c;
	CURL *easy;
	struct curl_slist *hdrs;
	char *url;		/* the URL of the request in flight */
	char *first_host;	/* hostname of the first request */
	int requests;		/* requests sent so far */
	bool keep_host;		/* send the Host header on this request */
	bool truncated;
	int64_t deadline;
	size_t body_len;
	size_t body_cap;
	char *body;		/* grown as the body comes, at most 10 KiB */
	char errbuf[CURL_ERROR_SIZE];
};

static void attempt_free(struct http_attempt *a)
{
	if (!a)
		return;
	/* a handle is reset before each request and connection reuse stays
	 * forbidden, so an attempt still opens a new connection, as the
	 * kubelet's does */
	if (a->easy)
		kt_loop_easy_give(a->c->loop, a->easy);
	curl_slist_free_all(a->hdrs);
	free(a->url);
	free(a->first_host);
	free(a->body);
	free(a);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct http_attempt *a = arg;
	size_t len = size * n, room = KT_PROBE_MAX_OUTPUT - a->body_len;
	size_t want = a->body_len + (len < room ? len : room);
	char *b;

	if (len == 0)
		return 0;
	/* most probe bodies are a few bytes: no 10 KiB buffer per attempt */
	if (want > a->body_cap) {
		b = realloc(a->body, want);
		if (!b)
			return 0;
		a->body = b;
		a->body_cap = want;
	}
	if (len > room) {
		/* upstream reads at most 10 KiB and drops the rest without an error */
		memcpy(a->body + a->body_len, data, room);
		a->body_len += room;
		a->truncated = true;
		return 0;
	}
	memcpy(a->body + a->body_len, data, len);
	a->body_len += len;
	return len;
}

/* sep ": " sends the header, ":" drops curl's own, ";" sends an empty value */
static int add_header(struct curl_slist **list, const char *name, const char *sep,
		      const char *value)
{
	struct curl_slist *l;
	char line[4096];

	snprintf(line, sizeof(line), "%s%s%s", name, sep, value);
	l = curl_slist_append(*list, line);
	if (!l)
		return -1;
	*list = l;
	return 0;
}

/* the spec's headers in order, then the defaults upstream adds when absent */
static int build_headers(struct http_attempt *a, struct kt_err *err)
{
	const struct kt_probe_spec *spec = a->c->spec;
	bool ua = false;
	int rc = 0;

	curl_slist_free_all(a->hdrs);
	a->hdrs = NULL;
	for (size_t i = 0; i < spec->nheaders && rc == 0; i++) {
		const char *name = spec->headers[i].name, *value = spec->headers[i].value;

		if (strcmp(name, "Host") == 0) {
			if (*value && a->keep_host)
				rc = add_header(&a->hdrs, name, ": ", value);
		} else if (strcmp(name, "User-Agent") == 0 || strcmp(name, "Accept") == 0) {
			ua = ua || name[0] == 'U';
			/* "Name:" makes curl drop its own; an empty value means no header */
			rc = add_header(&a->hdrs, name, *value ? ": " : ":", value);
		} else {
			rc = add_header(&a->hdrs, name, *value ? ": " : ";", value);
		}
	}
	if (rc == 0 && !ua)
		rc = add_header(&a->hdrs, "User-Agent", ": ", KT_PROBE_USER_AGENT);
	if (rc == 0)
		rc = add_header(&a->hdrs, "Connection", ": ", "close");
	if (rc < 0)
		return kt_error(err, "out of memory");
	return 0;
}

static void on_done(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg);

static int send_request(struct http_attempt *a, struct kt_err *err)
{
	int64_t left = a->deadline - kt_loop_now(a->c->loop);
	CURL *e = a->easy;

	if (left < 1)
		left = 1;
	curl_easy_reset(e);
	a->body_len = 0;
	a->truncated = false;
	a->errbuf[0] = '\0';
	if (build_headers(a, err) < 0)
		return -1;
	curl_easy_setopt(e, CURLOPT_URL, a->url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, a->hdrs);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, a->errbuf);
	a->requests++;
	KT_V(6, "probe request", "url=\"%s\" try=%d", a->url, a->c->tries);
	return kt_loop_add_curl(a->c->loop, e, on_done, a, err);
}

/* hostname of an http(s) URL as curl normalizes it, NULL when it is none;
 * the caller frees it */
static char *url_host(const char *url)
{
	struct kt_err err = { 0 };
	struct kt_url u;
	char *host;

	if (kt_url_parse(url, &u, &err) < 0)
		return NULL;
	host = u.host;
	u.host = NULL;
	kt_url_release(&u);
	return host;
}

/* "host:port" of the URL in flight (a redirect may have changed the port) */
static void url_host_port(const char *url, char *buf, size_t size)
{
	struct kt_err err = { 0 };
	struct kt_url u;

	buf[0] = '\0';
	if (kt_url_parse(url, &u, &err) < 0)
		return;
	kt_url_host_port(buf, size, u.host, u.port);
	kt_url_release(&u);
}

static void finish(struct http_attempt *a, enum kt_probe_result r, bool errored,
		   const char *out, size_t len)
{
	struct kt_probe_call *c = a->c;

	KT_V(6, "probe response", "url=\"%s\" result=\"%s\" errored=%d", a->url,
	     kt_probe_result_name(r), errored);
	/* the handle goes back first: done may end the run and free the loop */
	kt_loop_easy_give(c->loop, a->easy);
	a->easy = NULL;
	kt_probe_attempt_done(c, r, errored, out, len);
	attempt_free(a);
}

/* a transport error, worded as Go's url.Error would be */
static void transport_error(struct http_attempt *a, CURLcode rc, long code)
{
	char msg[1024], hp[300];
	long oserr = 0;
	curl_off_t connected = 0;

	curl_easy_getinfo(a->easy, CURLINFO_OS_ERRNO, &oserr);
	url_host_port(a->url, hp, sizeof(hp));
	if (rc == CURLE_OPERATION_TIMEDOUT && code > 0) {
		/* headers were in: the body read timed out, an error upstream */
		snprintf(msg, sizeof(msg),
			 "context deadline exceeded (Client.Timeout or context cancellation while reading body)");
		finish(a, KT_PROBE_UNKNOWN, true, msg, strlen(msg));
		return;
	}
	if (code > 0) {
		snprintf(msg, sizeof(msg), "error reading body: %s",
			 a->errbuf[0] ? a->errbuf : curl_easy_strerror(rc));
		finish(a, KT_PROBE_UNKNOWN, true, msg, strlen(msg));
		return;
	}
	curl_easy_getinfo(a->easy, CURLINFO_CONNECT_TIME_T, &connected);
	if (rc == CURLE_OPERATION_TIMEDOUT && connected == 0)
		snprintf(msg, sizeof(msg),
			 "Get \"%s\": dial tcp %s: i/o timeout (Client.Timeout exceeded while awaiting headers)",
			 a->url, hp);
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(msg, sizeof(msg),
			 "Get \"%s\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
			 a->url);
	else if (rc == CURLE_COULDNT_CONNECT && oserr > 0)
		snprintf(msg, sizeof(msg), "Get \"%s\": dial tcp %s: connect: %c%s", a->url, hp,
			 tolower((unsigned char)strerror((int)oserr)[0]),
			 strerror((int)oserr) + 1);
	else if (rc == CURLE_COULDNT_RESOLVE_HOST)
		snprintf(msg, sizeof(msg), "Get \"%s\": dial tcp: lookup %s: no such host", a->url,
			 a->c->host);
	else
		snprintf(msg, sizeof(msg), "Get \"%s\": %s", a->url,
			 a->errbuf[0] ? a->errbuf : curl_easy_strerror(rc));
	finish(a, KT_PROBE_FAILURE, false, msg, strlen(msg));
}

static bool is_redirect(long code)
{
	return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
}

/* the raw Location of the last response (the last one given), as libcurl
 * read it; NULL when there is none.  Valid until the handle is reused */
static const char *location(CURL *e)
{
	struct curl_header *h = NULL;

	if (curl_easy_header(e, "Location", 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
		return NULL;
	if (h->amount > 1 &&
	    curl_easy_header(e, "Location", h->amount - 1, CURLH_HEADER, -1, &h) != CURLHE_OK)
		return NULL;
	return h->value;
}

/* 1 when a same-host redirect was sent, 0 when the response is final */
static int follow(struct http_attempt *a, long code)
{
	struct kt_err err = { 0 };
	char *target = NULL, *host = NULL, msg[1024];
	const char *loc = is_redirect(code) ? location(a->easy) : NULL;
	int rc = 0;

	if (!loc)
		return 0;
	curl_easy_getinfo(a->easy, CURLINFO_REDIRECT_URL, &target);
	if (target)
		host = url_host(target);
	/* another host: upstream keeps the 3xx as the response (a warning) */
	if (!host || !a->first_host || strcmp(host, a->first_host) != 0)
		goto out;
	if (a->requests >= KT_PROBE_MAX_REDIRECTS) {
		snprintf(msg, sizeof(msg), "Get \"%s\": stopped after %d redirects", loc,
			 KT_PROBE_MAX_REDIRECTS);
		finish(a, KT_PROBE_FAILURE, false, msg, strlen(msg));
		rc = 1;
		goto out;
	}
	/* Go keeps a custom Host across a relative redirect only */
	a->keep_host = !strstr(loc, "://") && strncmp(loc, "//", 2) != 0;
	free(a->url);
	a->url = strdup(target);
	rc = 1;
	if (!a->url || send_request(a, &err) < 0) {
		snprintf(msg, sizeof(msg), "%s", a->url ? err.msg : "out of memory");
		finish(a, KT_PROBE_UNKNOWN, true, msg, strlen(msg));
	}
out:
	free(host);
	return rc;
}

static void on_done(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg)
{
	struct http_attempt *a = arg;
	char msg[KT_PROBE_MAX_OUTPUT + 64];
	long code = 0;
	int n;

	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && a->truncated)) {
		transport_error(a, rc, code);
		return;
	}
	if (follow(a, code))
		return;
	if (code >= 200 && code < 300) {
		finish(a, KT_PROBE_SUCCESS, false, a->body, a->body_len);
		return;
	}
	if (code >= 300 && code < 400) {
		n = snprintf(msg, sizeof(msg), "Probe terminated redirects, Response body: ");
		if (a->body_len)
			memcpy(msg + n, a->body, a->body_len);
		finish(a, KT_PROBE_WARNING, false, msg, (size_t)n + a->body_len);
		return;
	}
	n = snprintf(msg, sizeof(msg), "HTTP probe failed with statuscode: %ld", code);
	finish(a, KT_PROBE_FAILURE, false, msg, (size_t)n);
}

/* the path as a URL reference: a leading '/', spaces and non-ASCII escaped */
static int build_url(struct http_attempt *a)
{
	const struct kt_probe_spec *spec = a->c->spec;
	size_t plen = strlen(spec->path), size = plen * 3 + strlen(a->c->host) + 64;
	char *url = malloc(size), hp[300];
	size_t n;

	if (!url)
		return -1;
	kt_url_host_port(hp, sizeof(hp), a->c->host, spec->port);
	n = (size_t)snprintf(url, size, "%s://%s%s", spec->https ? "https" : "http", hp,
			     spec->path[0] == '/' ? "" : "/");
	for (const unsigned char *p = (const unsigned char *)spec->path; *p; p++) {
		if (*p <= 0x20 || *p >= 0x7f)
			n += (size_t)snprintf(url + n, size - n, "%%%02X", *p);
		else
			url[n++] = (char)*p;
	}
	url[n] = '\0';
	a->url = url;
	return 0;
}

int kt_probe_http_start(struct kt_probe_call *c, struct kt_err *err)
{
	struct http_attempt *a = calloc(1, sizeof(*a));

	if (!a) {
		kt_error(err, "out of memory");
		goto out;
	}
	a->c = c;
	if (build_url(a) < 0) {
		kt_error(err, "out of memory");
		goto out;
	}
	a->easy = kt_loop_easy_take(c->loop);
	a->first_host = url_host(a->url);
	if (!a->easy) {
		kt_error(err, "cannot make a curl handle");
		goto out;
	}
	if (!a->first_host) {
		kt_error(err, "parse \"%s\": invalid URL", a->url);
		goto out;
	}
	a->keep_host = true;
	a->deadline = kt_loop_now(c->loop) + c->timeout_ms;
	if (send_request(a, err) < 0)
		goto out;
	c->attempt = a;
	return 0;
out:
	attempt_free(a);
	return -1;
}

void kt_probe_http_cancel(struct kt_loop *loop, void *attempt)
{
	struct http_attempt *a = attempt;

	kt_loop_remove_curl(loop, a->easy);
	attempt_free(a);
}
