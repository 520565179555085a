/* SPDX-License-Identifier: Apache-2.0 */
/* doctor_probe: node-doctor's one look at a kubelet endpoint: TLS, /healthz, certificate */
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "api.h"
#include "doctor.h"
#include "timeutil.h"
#include "url.h"

/* /healthz answers "ok"; a body past this is not read further */
#define BODY_MAX (64 * 1024)

struct probe_body {
	char head[64];
	size_t len;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct probe_body *b = arg;
	size_t n = size * nmemb;

	if (b->len < sizeof(b->head) - 1) {
		size_t k = sizeof(b->head) - 1 - b->len;

		memcpy(b->head + b->len, data, n < k ? n : k);
	}
	b->len += n;
	return b->len > BODY_MAX ? 0 : n;
}

/* the leaf certificate's validity, from libcurl's certinfo */
static void take_cert(CURL *e, struct kt_doctor_kubelet *out)
{
	struct curl_certinfo *ci = NULL;
	bool nb = false, na = false;

	if (curl_easy_getinfo(e, CURLINFO_CERTINFO, &ci) != CURLE_OK || !ci ||
	    ci->num_of_certs < 1)
		return;
	for (struct curl_slist *s = ci->certinfo[0]; s; s = s->next) {
		if (!strncmp(s->data, "Start date:", 11))
			nb = kt_doctor_cert_time(s->data + 11, &out->not_before_us, NULL) == 0;
		else if (!strncmp(s->data, "Expire date:", 12))
			na = kt_doctor_cert_time(s->data + 12, &out->not_after_us, NULL) == 0;
	}
	out->have_cert = nb && na;
}

/*
 * What failed, by its code and how far the transfer got.  libcurl counts a
 * TCP connection as made only once its TLS handshake is done, so a timeout
 * before that cannot tell the two apart.
 */
static void classify(CURL *e, CURLcode rc, const char *errbuf, int64_t timeout_ms,
		     struct kt_doctor_kubelet *out)
{
	curl_off_t handshaken = 0;
	const char *why = *errbuf ? errbuf : curl_easy_strerror(rc);
	char d[32];

	curl_easy_getinfo(e, CURLINFO_APPCONNECT_TIME_T, &handshaken);
	kt_duration_format(timeout_ms, d, sizeof(d));
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		out->state = KT_DOCTOR_KUBELET_TIMEOUT;
		snprintf(out->error, sizeof(out->error), "%s within %s",
			 handshaken ? "no answer to GET /healthz"
				    : "no connection and TLS handshake",
			 d);
	} else if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
		out->state = KT_DOCTOR_KUBELET_UNREACHABLE;
		snprintf(out->error, sizeof(out->error), "%s", why);
	} else if (!handshaken) {
		out->state = KT_DOCTOR_KUBELET_TLS_FAILED;
		snprintf(out->error, sizeof(out->error), "%s", why);
	} else {
		out->state = KT_DOCTOR_KUBELET_UNREACHABLE;
		snprintf(out->error, sizeof(out->error), "GET /healthz: %s", why);
	}
}

void kt_doctor_probe(const char *host, int port, int64_t timeout_ms,
		     struct kt_doctor_kubelet *out)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct probe_body body = { 0 };
	CURLcode rc;
	size_t len;
	CURL *e;

	memset(out, 0, sizeof(*out));
	len = (size_t)snprintf(out->url, sizeof(out->url), "https://");
	len += (size_t)kt_url_host_port(out->url + len, sizeof(out->url) - len, host, port);
	if (len < sizeof(out->url))
		snprintf(out->url + len, sizeof(out->url) - len, "/healthz");
	e = curl_easy_init();
	if (!e) {
		out->state = KT_DOCTOR_KUBELET_UNREACHABLE;
		snprintf(out->error, sizeof(out->error), "cannot start libcurl: %s",
			 kt_api_curl_error() ? kt_api_curl_error() : "out of memory");
		return;
	}
	curl_easy_setopt(e, CURLOPT_URL, out->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
	/* no credentials, and straight to the address: it is the node's word */
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(e, CURLOPT_CERTINFO, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
	rc = curl_easy_perform(e);
	take_cert(e, out);
	if (rc == CURLE_OK) {
		out->state = KT_DOCTOR_KUBELET_ANSWERED;
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
		kt_plain_text(out->body, sizeof(out->body), body.head);
		for (size_t n = strlen(out->body); n > 0 && out->body[n - 1] == ' '; n--)
			out->body[n - 1] = '\0';
	} else {
		classify(e, rc, errbuf, timeout_ms, out);
	}
	curl_easy_cleanup(e);
}
