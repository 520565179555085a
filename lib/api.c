/* SPDX-License-Identifier: Apache-2.0 */
/* api: requests to an API server over libcurl, blocking or on the event loop */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "api.h"
#include "core.h"
#include "kt_err.h"
#include "json.h"
#include "kcfg.h"
#include "log.h"
#include "loop.h"
#include "object.h"
#include "timeutil.h"
#include "url.h"

#define API_MAX_ATTEMPTS 10
/* the waits between attempts: 100 ms doubling to 5 s, half of each fixed
 * and half at random (equal jitter), so a fleet does not retry in step */
#define API_BACKOFF_FIRST_MS 50
#define API_BACKOFF_CAP_MS 2500
/* the longest Retry-After waited for; a longer one waits this long (client-go
 * honours any value within the request's context; without a deadline we
 * would sleep for as long as the server said, up to a day) */
#define API_RETRY_AFTER_CAP_S 60
/* a server that refuses connections or whose name does not resolve is tried
 * again only while this much time has passed since the call began (unless
 * KT_API_PERSIST): a one-shot tool says so within 2 s, as kubectl does */
#define API_UNREACHABLE_MS 1500
#define API_LOG_CUT 1024
#define API_LOG_CHUNK 1800
#define API_SPARE_CALLS 64

struct kt_api {
	struct kt_kcfg *cfg;
	char *agent;	      /* "User-Agent: TOOL/VERSION (OS/ARCH) kubelet-tools" */
	char *manager;	      /* "fieldManager=NAME", escaped, for every write */
	struct kt_kcfg owned; /* used when the client loaded it (kt_api_open) */
	CURL *easy;	      /* the blocking calls' handle: keeps their connections */
	char *base;	      /* URL prefix curl connects to (tls-server-name as host) */
	char *connect_to;     /* "name:port:host:port" when tls-server-name is set */
	char *host_header;    /* "Host: host:port" then */
	bool loopback;	      /* the server is localhost, 127.x or [::1] */
	size_t max_reply;     /* a larger reply body is refused */
	struct kt_api_call *calls; /* async calls running */
	unsigned seed;
	/* calls' structs kept for the next calls: a block of over 1 KB
	 * allocated per request makes malloc merge its small free blocks
	 * every time (measured: a quarter of node-ping's CPU) */
	struct kt_api_call *spare_calls;
	size_t nspare_calls;
};

struct kt_api_call {
	struct kt_api *api;
	struct kt_loop *loop; /* NULL for a blocking call */
	struct kt_api_call *prev, *next;

	char *method;
	char *url; /* as shown in messages: the configured server + path */
	char *path;
	char *content_type;
	char *body;
	size_t body_len;
	unsigned flags;
	kt_api_line_fn *on_line;
	void *line_arg;
	int64_t start_ms;
	int64_t deadline_ms; /* 0: none */
	size_t max_body;     /* the largest reply taken */

	CURL *easy;
	struct curl_slist *headers;
	struct curl_slist *connect_to;
	struct kt_timer *timer;
	bool in_flight;
	bool owns_easy;		/* an async call's own handle, not the client's */
	bool refreshed; /* credentials re-read after a 401 once already */
	bool need_refresh; /* the next attempt waits for fresh credentials */
	unsigned gen;	   /* the credentials' generation the last attempt sent */
	struct kt_kcfg_wait *wait; /* waiting for the exec plugin on the loop */

	/* the current attempt */
	struct kt_sb reply;	/* the reply body as it arrives */
	bool too_big;
	bool stopped;  /* on_line asked to stop */
	bool streamed; /* a line went out: no retry */
	struct kt_api_split split;
	int64_t retry_after_ms; /* -1: none */
	char errbuf[CURL_ERROR_SIZE];
	int64_t attempt_ms;
	struct kt_backoff backoff; /* the waits between its attempts */

	struct kt_api_resp resp;
	struct kt_err err;
	bool ok;
	kt_api_done_fn *fn;
	void *arg;
};

/* ----------------------------------------------------------------- logging */

/* appends text to a log value, escaping as klog quotes strings */
static size_t log_escape(char *out, size_t size, const char *in, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 3 < size; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (c < 0x20 || c == 0x7f) {
			out[o++] = '.';
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
	return o;
}

/* logs a body redacted: cut at 1 KiB below -v 9, in several lines at -v 9 */
static void log_body(const char *what, const char *body, size_t len)
{
	size_t show = kt_log_level >= 9 ? len : (len > API_LOG_CUT ? API_LOG_CUT : len);
	size_t rsize = show * 2 + 64, parts;
	char *plain = NULL, *red = NULL;
	char esc[API_LOG_CHUNK * 2 + 8];

	if (!body || !len)
		return;
	plain = strndup(body, show);
	red = malloc(rsize);
	if (!plain || !red)
		goto out;
	kt_redact(plain, red, rsize);
	len = strlen(red);
	parts = (len + API_LOG_CHUNK - 1) / API_LOG_CHUNK;
	for (size_t i = 0; i < parts; i++) {
		size_t off = i * API_LOG_CHUNK, n = len - off;

		if (n > API_LOG_CHUNK)
			n = API_LOG_CHUNK;
		log_escape(esc, sizeof(esc), red + off, n);
		if (parts > 1)
			kt_log_line('I', __FILE__, __LINE__, what,
				    "part=%zu/%zu body=\"%s\"", i + 1, parts, esc);
		else
			kt_log_line('I', __FILE__, __LINE__, what, "body=\"%s\"", esc);
	}
out:
	free(plain);
	free(red);
}

static void log_header(const char *what, const char *line, size_t n)
{
	char plain[1024], red[1100], esc[2300];
	size_t colon;

	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		n--;
	if (!n)
		return;
	if (n >= sizeof(plain))
		n = sizeof(plain) - 1;
	memcpy(plain, line, n);
	plain[n] = '\0';
	colon = strcspn(plain, ":");
	if (plain[colon] && (!strncasecmp(plain, "authorization", colon) ||
			     !strncasecmp(plain, "cookie", colon) ||
			     !strncasecmp(plain, "set-cookie", colon)))
		snprintf(red, sizeof(red), "%.*s: <redacted>", (int)colon, plain);
	else
		kt_redact(plain, red, sizeof(red));
	log_escape(esc, sizeof(esc), red, strlen(red));
	kt_log_line('I', __FILE__, __LINE__, what, "header=\"%s\"", esc);
}

/* --------------------------------------------------------------- messages */

/* the reason phrase, or the class of a status the table does not name */
/* a reply outside 2xx: kt_object_status_error's line, named by the request */
static void status_error(struct kt_api_call *call)
{
	long st = call->resp.status;
	enum kt_err_kind kind = st == 404   ? KT_ERR_NOTFOUND
				: st == 409 ? KT_ERR_CONFLICT
					    : KT_ERR_FAIL;
	char what[sizeof(call->err.msg)];

	snprintf(what, sizeof(what), "%s %s", call->method, call->path);
	kt_object_status_error(&call->err, kind, what, st, call->resp.json);
}

/* ------------------------------------------------------------- callbacks */

int kt_api_split_lines(struct kt_api_split *s, const char *buf, size_t len, bool flush,
		       kt_api_line_fn *fn, void *arg, size_t *used)
{
	size_t start = 0, from = s->scanned < len ? s->scanned : len;
	const char *nl;

	*used = 0;
	while (from < len && (nl = memchr(buf + from, '\n', len - from))) {
		size_t end = (size_t)(nl - buf);

		s->work += end + 1 - from;
		if (end > start && fn(buf + start, end - start, arg) < 0)
			return -1;
		start = from = end + 1;
	}
	s->work += len - from;
	if (flush && len > start) {
		if (fn(buf + start, len - start, arg) < 0)
			return -1;
		start = len;
	}
	s->scanned = len - start;
	*used = start;
	return 0;
}

/* a line of a 2xx reply went out: no retry from now on */
static int streamed_line(const char *line, size_t len, void *arg)
{
	struct kt_api_call *call = arg;

	call->streamed = true;
	return call->on_line(line, len, call->line_arg);
}

static int deliver_lines(struct kt_api_call *call, bool flush)
{
	size_t used;

	if (kt_api_split_lines(&call->split, call->reply.buf, call->reply.len, flush,
			       streamed_line, call, &used) < 0)
		return -1;
	if (used > 0) {
		memmove(call->reply.buf, call->reply.buf + used, call->reply.len - used);
		kt_sb_trunc(&call->reply, call->reply.len - used);
	}
	return 0;
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct kt_api_call *call = arg;
	size_t n = size * nmemb;
	long status = 0;

	if (call->reply.len + n > call->max_body) {
		call->too_big = true;
		return 0;
	}
	kt_sb_put(&call->reply, data, n);
	if (call->reply.oom)
		return 0;
	if (call->on_line) {
		curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300 && deliver_lines(call, false) < 0) {
			call->stopped = true;
			return 0;
		}
	}
	return n;
}

/* headers are read by libcurl (retry_after, CURLINFO_CONTENT_TYPE); this only logs */
static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	size_t n = size * nmemb;

	(void)arg;
	if (kt_log_level >= 7)
		log_header("response header", data, n);
	return n;
}

/*
 * The reply's Retry-After in ms, capped, as libcurl reads it: seconds or an
 * HTTP date (a date past, or a value libcurl cannot read, is 0: now); -1
 * when the reply has none.
 */
static int64_t retry_after(CURL *e)
{
	struct curl_header *h;
	curl_off_t secs = 0;

	if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
		return -1;
	if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &secs) != CURLE_OK || secs < 0)
		secs = 0;
	if (secs > API_RETRY_AFTER_CAP_S)
		secs = API_RETRY_AFTER_CAP_S;
	return (int64_t)secs * 1000;
}

/* the reply's Date as libcurl reads it, in microseconds; 0 when none */
static int64_t reply_date(CURL *e)
{
	struct curl_header *h;
	time_t t;

	if (curl_easy_header(e, "Date", 0, CURLH_HEADER, -1, &h) != CURLHE_OK)
		return 0;
	t = curl_getdate(h->value, NULL);
	return t > 0 ? (int64_t)t * 1000000 : 0;
}

/* --------------------------------------------------------------- attempts */

static struct curl_slist *add_header(struct curl_slist *list, const char *line,
				     bool *fail)
{
	struct curl_slist *n = curl_slist_append(list, line);

	if (!n)
		*fail = true;
	return n ? n : list;
}

static int build_headers(struct kt_api_call *call, struct kt_err *err)
{
	const struct kt_kcfg *cfg = call->api->cfg;
	char line[512];
	bool fail = false;
	struct curl_slist *h = NULL;

	h = add_header(h, "Accept: application/json, */*", &fail);
	h = add_header(h, call->api->agent, &fail);
	h = add_header(h, "Expect:", &fail);
	if (call->body) {
		snprintf(line, sizeof(line), "Content-Type: %s", call->content_type);
		h = add_header(h, line, &fail);
	}
	if (call->api->host_header)
		h = add_header(h, call->api->host_header, &fail);
	if (cfg->token && !kt_kcfg_token_ok(cfg->token)) {
		curl_slist_free_all(h);
		return kt_error(err, "the bearer token has a control character; "
				"it was not sent");
	}
	if (cfg->token) {
		size_t n = strlen(cfg->token) + 32;
		char *auth = malloc(n);

		if (!auth) {
			fail = true;
		} else {
			snprintf(auth, n, "Authorization: Bearer %s", cfg->token);
			h = add_header(h, auth, &fail);
			memset(auth, 0, n);
			free(auth);
		}
	}
	curl_slist_free_all(call->headers);
	call->headers = h;
	if (fail)
		return kt_error(err, "out of memory");
	if (kt_log_level >= 7)
		for (struct curl_slist *p = h; p; p = p->next)
			log_header("request header", p->data, strlen(p->data));
	return 0;
}

static void set_blob(CURL *easy, CURLoption opt, const char *data, size_t len)
{
	struct curl_blob blob = { .data = (void *)data,
				  .len = len,
				  .flags = CURL_BLOB_COPY };

	curl_easy_setopt(easy, opt, &blob);
}

static void set_method(struct kt_api_call *call, CURL *e)
{
	if (!strcmp(call->method, "GET")) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		return;
	}
	if (!strcmp(call->method, "HEAD")) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
		return;
	}
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call->method);
	if (call->body || strcmp(call->method, "DELETE")) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)call->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body ? call->body : "");
	}
}

/* server verification, client certificate, proxy, tls-server-name */
static void set_tls(struct kt_api_call *call, CURL *e)
{
	const struct kt_kcfg *cfg = call->api->cfg;

	if (cfg->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (cfg->ca_pem) {
		set_blob(e, CURLOPT_CAINFO_BLOB, cfg->ca_pem, cfg->ca_len);
	}
	if (cfg->cert_pem && cfg->key_pem) {
		set_blob(e, CURLOPT_SSLCERT_BLOB, cfg->cert_pem, cfg->cert_len);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
		set_blob(e, CURLOPT_SSLKEY_BLOB, cfg->key_pem, cfg->key_len);
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	}
	/* as kubectl: proxy-url takes every request, else the environment's
	 * proxy settings apply except to a loopback server */
	if (cfg->proxy_url) {
		curl_easy_setopt(e, CURLOPT_PROXY, cfg->proxy_url);
		curl_easy_setopt(e, CURLOPT_NOPROXY, "");
	} else if (call->api->loopback) {
		curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	}
	if (call->connect_to)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, call->connect_to);
}

/*
 * TCP keepalive on every connection, as Go's dialer keeps it: a watch can be
 * quiet for minutes, and a peer that is gone (a dropped NAT entry, a host
 * that died) is then found within about two minutes instead of never.
 */
static void set_keepalive(CURL *e)
{
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
}

static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* true unless call is a write without a fieldManager of its own in its
 * query: the writes (POST, PUT, PATCH, DELETE) name the client's manager */
static bool names_manager(const struct kt_api_call *call)
{
	const char *q = strchr(call->path, '?');

	if (!strcmp(call->method, "GET") || !strcmp(call->method, "HEAD"))
		return true;
	for (; q; q = strchr(q + 1, '&'))
		if (!strncmp(q + 1, "fieldManager=", 13))
			return true;
	return false;
}

/* sets every option of one attempt on call->easy */
static int attempt_setup(struct kt_api_call *call, struct kt_err *err)
{
	struct kt_api *api = call->api;
	CURL *e = call->easy;
	int64_t now = kt_mono_ms();
	char *url;

	/* on the loop the plugin already ran (call_launch); this re-reads a
	 * token file, or nothing */
	if (kt_kcfg_refresh(api->cfg, false, err) < 0 || build_headers(call, err) < 0)
		return -1;
	call->gen = api->cfg->generation;
	if (names_manager(call))
		url = str_printf("%s%s", api->base, call->path);
	else
		url = str_printf("%s%s%c%s", api->base, call->path,
				 strchr(call->path, '?') ? '&' : '?', api->manager);
	if (!url)
		return kt_error(err, "out of memory");
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	free(url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, call->headers);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, call);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	set_method(call, e);
	set_tls(call, e);
	set_keepalive(e);
	if (call->loop) { /* wait for a multiplexed connection rather than open more */
		curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
		/* no signal handlers swapped around every socket action: sends
		 * use MSG_NOSIGNAL, and the resolver is threaded */
		curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	}
	if (call->deadline_ms) {
		int64_t left = call->deadline_ms - now;

		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(left > 1 ? left : 1));
	}
	kt_sb_release(&call->reply); /* clears out of memory too */
	call->split = (struct kt_api_split){ 0 };
	call->too_big = false;
	call->stopped = false;
	call->retry_after_ms = -1;
	call->errbuf[0] = '\0';
	call->attempt_ms = now;
	call->resp.attempts++;
	if (kt_log_level >= 6 && call->body)
		log_body("request body", call->body, call->body_len);
	return 0;
}

static bool verb_retries(const struct kt_api_call *call)
{
	const char *m = call->method;

	if (call->flags & KT_API_NO_RETRY)
		return false;
	/* a 429 was turned away before any handling, so any verb may repeat it */
	if ((call->flags & KT_API_PRECONDITION) || call->resp.status == 429)
		return true;
	return !strcmp(m, "GET") || !strcmp(m, "HEAD") || !strcmp(m, "PUT") ||
	       !strcmp(m, "DELETE");
}

/* nobody answers at the server's address: refused, or no such host */
static bool unreachable(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
}

static bool transport_retries(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

/* a 2xx reply: parse it unless raw or streamed */
static void reply_ok(struct kt_api_call *call)
{
	struct kt_json_reader *r = NULL;
	cJSON *doc = NULL;
	char *type = NULL, plain[128];
	int got;

	call->ok = true;
	if (call->on_line || (call->flags & KT_API_RAW) || !call->resp.body_len ||
	    !strcmp(call->method, "HEAD"))
		return;
	r = kt_json_reader_open_mem(call->url, call->resp.body, call->resp.body_len,
				    call->max_body, KT_JSON_JSON_ONLY, &call->err);
	got = r ? kt_json_reader_next(r, &doc, &call->err) : -1;
	kt_json_reader_close(r);
	if (got <= 0) {
		call->ok = false;
		curl_easy_getinfo(call->easy, CURLINFO_CONTENT_TYPE, &type);
		if (type && *type) {
			kt_plain_text(plain, sizeof(plain), type);
			kt_error(&call->err,
				 "%s %s: response is not JSON (Content-Type: %s)",
				 call->method, call->url, plain);
		} else {
			kt_error(&call->err, "%s %s: response is not JSON", call->method,
				 call->url);
		}
		call->err.http_status = call->resp.status;
		return;
	}
	call->resp.json = doc;
}

/* the body of a non-2xx reply: JSON if it parses, for the Status message */
static void reply_error(struct kt_api_call *call)
{
	if (call->resp.body_len && !(call->flags & KT_API_RAW))
		call->resp.json = cJSON_ParseWithLength(call->resp.body,
							call->resp.body_len);
	status_error(call);
}

/* takes the attempt's body into resp */
static void take_body(struct kt_api_call *call)
{
	free(call->resp.body);
	cJSON_Delete(call->resp.json);
	call->resp.body = NULL;
	call->resp.json = NULL;
	call->resp.body_len = 0;
	if (call->reply.len) {
		call->resp.body = call->reply.buf;
		call->resp.body_len = call->reply.len;
		call->reply = (struct kt_sb){ 0 };
	}
}

/* drops libcurl's " after N ms" so that a message names the failure, not its timing */
static void scrub_timing(char *msg)
{
	char *p = msg;

	while ((p = strstr(p, " after "))) {
		char *q = p + 7;

		while (*q >= '0' && *q <= '9')
			q++;
		if (q > p + 7 && !strncmp(q, " ms", 3)) {
			memmove(p, q + 3, strlen(q + 3) + 1);
			continue;
		}
		p += 7;
	}
}

static void transport_error(struct kt_api_call *call, CURLcode rc)
{
	const char *what = call->errbuf[0] ? call->errbuf : curl_easy_strerror(rc);
	const char *generic = ": Couldn't connect to server";
	size_t n, g = strlen(generic);
	long oserr = 0;

	scrub_timing(call->errbuf);
	n = strlen(call->errbuf);
	/* "Couldn't connect to server" hides why: say what the system said */
	curl_easy_getinfo(call->easy, CURLINFO_OS_ERRNO, &oserr);
	if (rc == CURLE_COULDNT_CONNECT && oserr > 0 && n > g &&
	    !strcmp(call->errbuf + n - g, generic))
		snprintf(call->errbuf + n - g, sizeof(call->errbuf) - (n - g), ": %s",
			 strerror((int)oserr));

	if (call->too_big)
		kt_error(&call->err,
			 "%s %s: response larger than %zu bytes (see --max-input)",
			 call->method, call->url, call->max_body);
	else if (rc == CURLE_OPERATION_TIMEDOUT && call->deadline_ms)
		kt_error(&call->err, "%s %s: no answer within the request timeout",
			 call->method, call->url);
	else
		kt_error(&call->err, "%s %s: %s", call->method, call->url, what);
	call->err.http_status = 0;
}

/*
 * Ends an attempt: fills resp and err, and returns the delay before the next
 * attempt, or -1 when the call is over (call->ok says how it went).
 */
/* a reply arrived: -1 when the call is over, 0 to try again at once (new
 * credentials after a 401), 1 when it may be retried after a wait */
static int attempt_reply(struct kt_api_call *call, long status, int64_t now)
{
	struct kt_err rerr = { 0 };
	int r;

	KT_V(2, "request", "verb=\"%s\" url=\"%s\" status=%ld ms=%lld", call->method,
	     call->url, status, (long long)(now - call->attempt_ms));
	call->resp.status = status;
	call->resp.date_us = reply_date(call->easy);
	take_body(call);
	if (kt_log_level >= 6 && call->resp.body)
		log_body("response body", call->resp.body, call->resp.body_len);
	if (status >= 200 && status < 300) {
		reply_ok(call);
		return -1;
	}
	reply_error(call);
	if (status == 401 && !call->refreshed && kt_kcfg_can_refresh(call->api->cfg)) {
		call->refreshed = true;
		if (call->loop) {
			/* call_launch refreshes on the loop, once for every call
			 * that got a 401 with the same credential */
			call->need_refresh = true;
			return 0;
		}
		if (call->api->cfg->generation != call->gen)
			return 0;
		r = kt_kcfg_refresh(call->api->cfg, true, &rerr);
		if (r < 0)
			call->err = rerr;
		return r > 0 ? 0 : -1;
	}
	if (status != 0 && kt_http_retryable(status, call->retry_after_ms >= 0))
		return 1;
	return -1;
}

/*
 * Ends an attempt: fills resp and err, and returns the delay before the next
 * attempt, or -1 when the call is over (call->ok says how it went).
 */
static int64_t attempt_next(struct kt_api_call *call, CURLcode rc)
{
	int64_t now = kt_mono_ms(), delay;
	long status = 0;
	int r;

	curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
	call->retry_after_ms = rc == CURLE_OK ? retry_after(call->easy) : -1;
	call->resp.elapsed_ms = now - call->start_ms;
	if (rc != CURLE_OK && call->stopped)
		rc = CURLE_OK; /* the line callback asked to stop */
	else if (rc == CURLE_OK && call->on_line && status >= 200 && status < 300 &&
		 deliver_lines(call, true) < 0)
		call->stopped = true;
	kt_err_clear(&call->err);
	call->ok = false;
	if (rc == CURLE_OK) {
		r = attempt_reply(call, status, now);
		if (r <= 0)
			return r;
	} else {
		KT_V(2, "request", "verb=\"%s\" url=\"%s\" status=0 ms=%lld error=\"%s\"",
		     call->method, call->url, (long long)(now - call->attempt_ms),
		     curl_easy_strerror(rc));
		call->resp.status = 0;
		transport_error(call, rc);
		if (call->too_big || call->streamed || !transport_retries(rc))
			return -1;
	}
	if (!verb_retries(call) || call->resp.attempts >= API_MAX_ATTEMPTS)
		return -1;
	delay = kt_backoff_next(&call->backoff, now);
	if (call->retry_after_ms >= 0 && rc == CURLE_OK)
		delay = call->retry_after_ms;
	if (call->deadline_ms && now + delay >= call->deadline_ms)
		return -1;
	/* a watch (on_line) is a loop of its own: it keeps waiting */
	if (rc != CURLE_OK && unreachable(rc) && !(call->flags & KT_API_PERSIST) &&
	    !call->on_line && now + delay - call->start_ms >= API_UNREACHABLE_MS)
		return -1;
	if (kt_log_level >= 4)
		KT_WARN("retrying request",
			"verb=\"%s\" url=\"%s\" attempt=%d delayMs=%lld", call->method,
			call->url, call->resp.attempts + 1, (long long)delay);
	return delay;
}

/* as attempt_next; a call that ends without any reply says how long it tried */
static int64_t attempt_end(struct kt_api_call *call, CURLcode rc)
{
	int64_t delay = attempt_next(call, rc);
	size_t n = strlen(call->err.msg);
	char took[32];

	if (delay >= 0 || call->ok || call->resp.status != 0 || call->stopped ||
	    call->resp.attempts < 2)
		return delay;
	kt_duration_format(call->resp.elapsed_ms, took, sizeof(took));
	snprintf(call->err.msg + n, sizeof(call->err.msg) - n, " (%d attempts in %s)",
		 call->resp.attempts, took);
	return delay;
}

/* -------------------------------------------------------------- the call */

static void call_free(struct kt_api_call *call)
{
	if (!call)
		return;
	free(call->method);
	free(call->url);
	free(call->path);
	free(call->content_type);
	free(call->body);
	kt_sb_release(&call->reply);
	curl_slist_free_all(call->headers);
	curl_slist_free_all(call->connect_to);
	if (call->owns_easy)
		kt_loop_easy_give(call->loop, call->easy);
	kt_api_resp_release(&call->resp);
	if (call->api->nspare_calls == API_SPARE_CALLS) {
		free(call);
		return;
	}
	call->next = call->api->spare_calls;
	call->api->spare_calls = call;
	call->api->nspare_calls++;
}

static bool method_ok(const char *m)
{
	static const char *const ok[] = {
		"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(m, ok[i]))
			return true;
	return false;
}

static struct kt_api_call *call_new(struct kt_api *api, const struct kt_api_req *req,
				    struct kt_err *err)
{
	struct kt_api_call *call = NULL;
	int64_t tmo = req->timeout_ms ? req->timeout_ms : api->cfg->timeout_ms;
	size_t n;

	if (!req->method || !method_ok(req->method)) {
		kt_error_kind(err, KT_ERR_INPUT, "unsupported method '%s'",
			      req->method ? req->method : "");
		return NULL;
	}
	if (!req->path || req->path[0] != '/') {
		kt_error_kind(err, KT_ERR_INPUT, "API path '%s' does not start with '/'",
			      req->path ? req->path : "");
		return NULL;
	}
	call = api->spare_calls;
	if (call) {
		api->spare_calls = call->next;
		api->nspare_calls--;
		memset(call, 0, sizeof(*call));
	} else if (!(call = calloc(1, sizeof(*call)))) {
		goto oom;
	}
	call->api = api;
	call->backoff = (struct kt_backoff){ .first_ms = API_BACKOFF_FIRST_MS,
					     .cap_ms = API_BACKOFF_CAP_MS, .factor = 2,
					     .jitter = 1, .seed = (unsigned)rand_r(&api->seed) };
	call->method = strdup(req->method);
	call->path = strdup(req->path);
	n = strlen(api->cfg->server) + strlen(req->path) + 1;
	call->url = malloc(n);
	call->content_type = strdup(req->content_type ? req->content_type
						      : "application/json");
	if (!call->method || !call->path || !call->url || !call->content_type)
		goto oom;
	snprintf(call->url, n, "%s%s", api->cfg->server, req->path);
	if (req->body) {
		call->body = malloc(req->body_len + 1);
		if (!call->body)
			goto oom;
		memcpy(call->body, req->body, req->body_len);
		call->body[req->body_len] = '\0';
		call->body_len = req->body_len;
	}
	if (api->connect_to) {
		call->connect_to = curl_slist_append(NULL, api->connect_to);
		if (!call->connect_to)
			goto oom;
	}
	call->flags = req->flags;
	call->on_line = req->on_line;
	call->line_arg = req->line_arg;
	call->start_ms = kt_mono_ms();
	call->deadline_ms = tmo > 0 ? call->start_ms + tmo : 0;
	call->max_body = api->max_reply;
	return call;
oom:
	kt_error(err, "out of memory");
	call_free(call);
	return NULL;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* moves the call's outcome to the caller's resp and err */
static int call_result(struct kt_api_call *call, struct kt_api_resp *resp,
		       struct kt_err *err)
{
	if (resp) {
		*resp = call->resp;
		memset(&call->resp, 0, sizeof(call->resp));
	}
	if (call->ok)
		return 0;
	if (err)
		*err = call->err;
	return -1;
}

int kt_api_do(struct kt_api *api, const struct kt_api_req *req, struct kt_api_resp *resp,
	      struct kt_err *err)
{
	struct kt_api_call *call = call_new(api, req, err);
	int64_t delay;
	int rc = -1;

	if (resp)
		memset(resp, 0, sizeof(*resp));
	if (!call)
		return -1;
	call->easy = api->easy;
	for (;;) {
		if (attempt_setup(call, err) < 0)
			goto out;
		delay = attempt_end(call, curl_easy_perform(call->easy));
		if (delay < 0)
			break;
		sleep_ms(delay);
	}
	rc = call_result(call, resp, err);
out:
	/* no dangling pointers into the call on the reused handle */
	curl_easy_setopt(api->easy, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(api->easy, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(api->easy, CURLOPT_CONNECT_TO, NULL);
	call_free(call);
	return rc;
}

cJSON *kt_api_json(struct kt_api *api, const char *method, const char *path,
		   const cJSON *body, const char *content_type, unsigned flags,
		   struct kt_err *err)
{
	struct kt_api_req req = { .method = method,
				  .path = path,
				  .content_type = content_type,
				  .flags = flags & ~KT_API_RAW };
	struct kt_api_resp resp = { 0 };
	char *text = NULL;
	cJSON *out = NULL;

	if (body) {
		text = kt_json_print(body, KT_JSON_NO_NEWLINE);
		if (!text) {
			kt_error(err, "out of memory");
			return NULL;
		}
		req.body = text;
		req.body_len = strlen(text);
	}
	if (kt_api_do(api, &req, &resp, err) == 0) {
		out = resp.json ? resp.json : cJSON_CreateNull();
		resp.json = NULL;
		if (!out)
			kt_error(err, "out of memory");
	}
	kt_api_resp_release(&resp);
	free(text);
	return out;
}

void kt_api_resp_release(struct kt_api_resp *resp)
{
	if (!resp)
		return;
	free(resp->body);
	cJSON_Delete(resp->json);
	memset(resp, 0, sizeof(*resp));
}

/* ------------------------------------------------------------ async calls */

static void call_unlink(struct kt_api_call *call)
{
	if (call->prev)
		call->prev->next = call->next;
	else if (call->api->calls == call)
		call->api->calls = call->next;
	if (call->next)
		call->next->prev = call->prev;
	call->prev = call->next = NULL;
}

static void call_complete(struct kt_api_call *call)
{
	call_unlink(call);
	call->fn(call, &call->resp, call->ok ? NULL : &call->err, call->arg);
	call_free(call);
}

static void on_curl_done(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg);

/* starts the next attempt on the loop; completes the call when it cannot */
static void attempt_launch(struct kt_api_call *call)
{
	if (attempt_setup(call, &call->err) < 0 ||
	    kt_loop_add_curl(call->loop, call->easy, on_curl_done, call, &call->err) <
		    0) {
		call->ok = false;
		call_complete(call);
		return;
	}
	call->in_flight = true;
}

/* the credentials the call waited for: 1 changed, 0 not, -1 failed */
static void on_credentials(void *arg, int rc, const struct kt_err *err)
{
	struct kt_api_call *call = arg;
	bool forced = call->need_refresh;

	call->wait = NULL;
	call->need_refresh = false;
	if (rc < 0) {
		call->err = *err;
		call->ok = false;
		call_complete(call);
		return;
	}
	/* a forced refresh that changed nothing: the 401 stands */
	if (forced && rc == 0) {
		call->ok = false;
		call_complete(call);
		return;
	}
	attempt_launch(call);
}

/*
 * The next attempt, once the credentials are fresh: the exec plugin runs on
 * the loop (never blocking the other calls), and every call that needs it
 * meanwhile waits for the same run.  0 when the attempt started or waits,
 * -1 with err when it cannot (the call is not completed then).
 */
static int call_start_attempt(struct kt_api_call *call, struct kt_err *err)
{
	int r = kt_kcfg_refresh_async(call->api->cfg, call->loop, call->need_refresh,
				      call->gen, on_credentials, call, &call->wait, err);

	if (r < 0)
		return -1;
	if (r == 2)
		return 0;
	if (call->need_refresh && r == 0) {
		call->need_refresh = false;
		return -1;
	}
	call->need_refresh = false;
	if (attempt_setup(call, err) < 0 ||
	    kt_loop_add_curl(call->loop, call->easy, on_curl_done, call, err) < 0)
		return -1;
	call->in_flight = true;
	return 0;
}

static void call_launch(struct kt_api_call *call)
{
	bool forced = call->need_refresh;
	struct kt_err err = { 0 };

	if (call_start_attempt(call, &err) == 0)
		return;
	/* a forced refresh that changed nothing keeps the 401 as the error */
	if (!(forced && !err.msg[0]))
		call->err = err;
	call->ok = false;
	call_complete(call);
}

static void on_retry_timer(struct kt_loop *loop, void *arg)
{
	struct kt_api_call *call = arg;

	call->timer = NULL;
	call_launch(call);
}

static void on_curl_done(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg)
{
	struct kt_api_call *call = arg;
	int64_t delay;

	call->in_flight = false;
	delay = attempt_end(call, rc);
	if (delay < 0) {
		call_complete(call);
		return;
	}
	call->timer = kt_timer_add(loop, delay, on_retry_timer, call);
	if (!call->timer) {
		kt_error(&call->err, "out of memory");
		call->ok = false;
		call_complete(call);
	}
}

struct kt_api_call *kt_api_start(struct kt_api *api, struct kt_loop *loop,
				 const struct kt_api_req *req, kt_api_done_fn *fn,
				 void *arg, struct kt_err *err)
{
	struct kt_api_call *call = call_new(api, req, err);

	if (!call)
		return NULL;
	call->loop = loop;
	call->fn = fn;
	call->arg = arg;
	call->easy = kt_loop_easy_take(loop);
	if (!call->easy) {
		kt_error(err, "cannot make a curl handle");
		goto fail;
	}
	call->owns_easy = true;
	if (call_start_attempt(call, err) < 0)
		goto fail;
	call->next = api->calls;
	if (api->calls)
		api->calls->prev = call;
	api->calls = call;
	return call;
fail:
	call_free(call);
	return NULL;
}

void kt_api_cancel(struct kt_api_call *call)
{
	if (!call)
		return;
	if (call->timer)
		kt_timer_cancel(call->loop, call->timer);
	if (call->in_flight)
		kt_loop_remove_curl(call->loop, call->easy);
	if (call->wait)
		kt_kcfg_refresh_cancel(call->api->cfg, call->wait);
	call_unlink(call);
	call_free(call);
}

/* ----------------------------------------------------------------- client */

static char *str_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/*
 * The URL prefix, and with tls-server-name over https the connect-to and
 * Host header: the request goes to https://NAME:PORT/path so TLS checks NAME,
 * and libcurl connects to the server's own host and port.
 */
static int client_target(struct kt_api *api, struct kt_err *err)
{
	const struct kt_kcfg *cfg = api->cfg;
	const char *name = cfg->tls_server_name;
	struct kt_err perr = { 0 };
	struct kt_url p;
	char to[300], from[300], host[300];

	/* kcfg has checked the URL: only a failure to allocate is left */
	if (kt_url_parse(cfg->server, &p, &perr) < 0 && perr.kind != KT_ERR_INPUT)
		return kt_error(err, "out of memory");
	if (!name || !p.scheme || strcmp(p.scheme, "https")) {
		kt_url_release(&p);
		api->base = strdup(cfg->server);
		return api->base ? 0 : kt_error(err, "out of memory");
	}
	kt_url_host_port(from, sizeof(from), name, p.port);
	kt_url_host_port(to, sizeof(to), p.host, p.port);
	kt_url_host_port(host, sizeof(host), p.host, p.port_given ? p.port : 0);
	api->base = str_printf("https://%s%s%s%s", from, strcmp(p.path, "/") ? p.path : "",
			       p.query ? "?" : "", p.query ? p.query : "");
	api->connect_to = str_printf("%s:%s", from, to);
	api->host_header = str_printf("Host: %s", host);
	kt_url_release(&p);
	if (!api->base || !api->connect_to || !api->host_header)
		return kt_error(err, "out of memory");
	return 0;
}

static bool host_is_loopback(const char *server)
{
	struct kt_err perr = { 0 };
	struct kt_url p;
	bool lo;

	if (kt_url_parse(server, &p, &perr) < 0)
		return false;
	lo = !strncmp(p.host, "127.", 4) || !strcmp(p.host, "::1") || !strcmp(p.host, "localhost");
	kt_url_release(&p);
	return lo;
}

static struct kt_api *api_alloc(struct kt_err *err)
{
	static bool curl_ready;
	struct kt_api *api;

	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			kt_error(err, "cannot initialize libcurl%s%s",
				 kt_api_curl_error() ? ": " : "",
				 kt_api_curl_error() ? kt_api_curl_error() : "");
			return NULL;
		}
		curl_ready = true;
	}
	api = calloc(1, sizeof(*api));
	if (!api) {
		kt_error(err, "out of memory");
		return NULL;
	}
	api->seed = (unsigned)kt_now_us() ^ (unsigned)getpid();
	api->max_reply = KT_JSON_MAX_INPUT_DEFAULT;
	return api;
}

/* the build's system and processor as Go names them (GOOS/GOARCH), as
 * kubectl's User-Agent gives them */
#if defined(__linux__)
#define API_GOOS "linux"
#elif defined(__APPLE__)
#define API_GOOS "darwin"
#elif defined(__FreeBSD__)
#define API_GOOS "freebsd"
#elif defined(__NetBSD__)
#define API_GOOS "netbsd"
#elif defined(__OpenBSD__)
#define API_GOOS "openbsd"
#else
#define API_GOOS "unknown"
#endif
#if defined(__x86_64__)
#define API_GOARCH "amd64"
#elif defined(__aarch64__)
#define API_GOARCH "arm64"
#elif defined(__i386__)
#define API_GOARCH "386"
#elif defined(__arm__)
#define API_GOARCH "arm"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define API_GOARCH "ppc64le"
#elif defined(__powerpc64__)
#define API_GOARCH "ppc64"
#elif defined(__s390x__)
#define API_GOARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define API_GOARCH "riscv64"
#elif defined(__loongarch64)
#define API_GOARCH "loong64"
#elif defined(__mips64) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define API_GOARCH "mips64le"
#elif defined(__mips64)
#define API_GOARCH "mips64"
#else
#define API_GOARCH "unknown"
#endif

/* the User-Agent header and the fieldManager query parameter, escaped */
static int api_identity(struct kt_api *api, const struct kt_api_opts *opts,
			struct kt_err *err)
{
	const char *prog = opts && opts->program ? opts->program : "kubelet-tools";
	const char *fm = opts && opts->field_manager ? opts->field_manager : prog;
	struct kt_sb q = { 0 };

	kt_sb_puts(&q, "fieldManager=");
	for (const unsigned char *p = (const unsigned char *)fm; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p))
			kt_sb_put(&q, (const char *)p, 1);
		else
			kt_sb_printf(&q, "%%%02X", *p);
	}
	api->manager = q.oom ? NULL : strdup(kt_sb_str(&q));
	kt_sb_release(&q);
	api->agent = str_printf("User-Agent: %s/%s (%s/%s) kubelet-tools", prog, KT_VERSION,
				API_GOOS, API_GOARCH);
	if (!api->manager || !api->agent)
		return kt_error(err, "out of memory");
	return 0;
}

static int api_setup(struct kt_api *api, const struct kt_api_opts *opts,
		     struct kt_err *err)
{
	if (api_identity(api, opts, err) < 0)
		return -1;
	api->loopback = host_is_loopback(api->cfg->server);
	api->easy = curl_easy_init();
	if (!api->easy)
		return kt_error(err, "cannot make a curl handle");
	return client_target(api, err);
}

struct kt_api *kt_api_open_kcfg(struct kt_kcfg *cfg, struct kt_err *err)
{
	struct kt_api *api = api_alloc(err);

	if (!api)
		return NULL;
	api->cfg = cfg;
	if (api_setup(api, NULL, err) < 0) {
		kt_api_close(api);
		return NULL;
	}
	return api;
}

struct kt_api *kt_api_open(const struct kt_api_opts *opts, struct kt_err *err)
{
	struct kt_kcfg cfg;
	struct kt_api *api;

	if (kt_kcfg_load(&cfg, opts, err) < 0)
		return NULL;
	api = api_alloc(err);
	if (!api) {
		kt_kcfg_release(&cfg);
		return NULL;
	}
	api->owned = cfg;
	api->cfg = &api->owned;
	/* a larger cap serves large LISTs; a small one (--max-input meant for
	 * the input documents) never refuses an ordinary reply */
	if (opts && opts->max_reply > api->max_reply)
		api->max_reply = opts->max_reply;
	if (api_setup(api, opts, err) < 0) {
		kt_api_close(api);
		return NULL;
	}
	return api;
}

struct kt_kcfg *kt_api_kcfg(struct kt_api *api)
{
	return api->cfg;
}

void kt_api_close(struct kt_api *api)
{
	if (!api)
		return;
	while (api->calls)
		kt_api_cancel(api->calls);
	while (api->spare_calls) {
		struct kt_api_call *call = api->spare_calls;

		api->spare_calls = call->next;
		free(call);
	}
	if (api->easy)
		curl_easy_cleanup(api->easy);
	free(api->base);
	free(api->connect_to);
	free(api->host_header);
	free(api->agent);
	free(api->manager);
	kt_kcfg_release(&api->owned);
	free(api);
}
