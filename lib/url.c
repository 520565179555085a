/* SPDX-License-Identifier: Apache-2.0 */
/* url: http(s) URLs, read by libcurl's parser */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "url.h"

bool kt_url_is_http(const char *s)
{
	return !strncasecmp(s, "https://", 8) || !strncasecmp(s, "http://", 7);
}

static const char *const url_problem[] = {
	[CURLUE_BAD_PORT_NUMBER] = "a port that is not 1 to 65535",
	[CURLUE_BAD_IPV6] = "a bad IPv6 address",
	[CURLUE_MALFORMED_INPUT] = "not a URL",
};

/* the message of a URL libcurl refused */
static int url_refused(struct kt_err *err, const char *s, CURLUcode rc)
{
	const char *why = (size_t)rc < sizeof(url_problem) / sizeof(*url_problem) && url_problem[rc]
			      ? url_problem[rc]
			      : "not an http(s) URL with a host";

	if (rc == CURLUE_OUT_OF_MEMORY)
		return kt_error(err, "out of memory");
	return kt_error_kind(err, KT_ERR_INPUT, "invalid URL '%s': %s", s, why);
}

/* a part libcurl gives, copied with malloc; *out NULL when it has none */
static CURLUcode part(CURLU *h, CURLUPart what, unsigned flags, char **out)
{
	char *v = NULL;
	CURLUcode rc = curl_url_get(h, what, &v, flags);

	*out = NULL;
	if (rc != CURLUE_OK)
		return rc;
	*out = strdup(v);
	curl_free(v);
	return *out ? CURLUE_OK : CURLUE_OUT_OF_MEMORY;
}

int kt_url_parse(const char *s, struct kt_url *u, struct kt_err *err)
{
	CURLU *h = curl_url();
	char *port = NULL, *user = NULL;
	CURLUcode rc;
	size_t n;
	long p;

	memset(u, 0, sizeof(*u));
	if (!h)
		return kt_error(err, "out of memory");
	rc = kt_url_is_http(s) ? curl_url_set(h, CURLUPART_URL, s, 0) : CURLUE_UNSUPPORTED_SCHEME;
	if (rc == CURLUE_OK)
		rc = part(h, CURLUPART_SCHEME, 0, &u->scheme);
	if (rc == CURLUE_OK)
		rc = part(h, CURLUPART_HOST, 0, &u->host);
	if (rc == CURLUE_OK)
		rc = part(h, CURLUPART_PATH, 0, &u->path);
	if (rc == CURLUE_OK && (rc = part(h, CURLUPART_QUERY, 0, &u->query)) == CURLUE_NO_QUERY)
		rc = CURLUE_OK;
	if (rc == CURLUE_OK && (rc = part(h, CURLUPART_PORT, 0, &port)) == CURLUE_NO_PORT)
		rc = part(h, CURLUPART_PORT, CURLU_DEFAULT_PORT, &port);
	else
		u->port_given = rc == CURLUE_OK;
	if (rc == CURLUE_OK) {
		rc = part(h, CURLUPART_USER, 0, &user);
		if (rc == CURLUE_OK)
			rc = CURLUE_BAD_USER;
		else if (rc == CURLUE_NO_USER)
			rc = CURLUE_OK;
	}
	curl_url_cleanup(h);
	free(user);
	p = port ? strtol(port, NULL, 10) : 0;
	free(port);
	if (rc == CURLUE_BAD_USER) {
		kt_url_release(u);
		return kt_error_kind(err, KT_ERR_INPUT,
				     "invalid URL '%s': a user name or password is not taken", s);
	}
	if (rc == CURLUE_OK && (p < 1 || p > 65535))
		rc = CURLUE_BAD_PORT_NUMBER;
	if (rc == CURLUE_OK && !*u->host)
		rc = CURLUE_MALFORMED_INPUT;
	if (rc != CURLUE_OK) {
		kt_url_release(u);
		return url_refused(err, s, rc);
	}
	u->port = (int)p;
	n = strlen(u->host);
	if (n > 1 && u->host[0] == '[' && u->host[n - 1] == ']') {
		memmove(u->host, u->host + 1, n - 2);
		u->host[n - 2] = '\0';
	}
	return 0;
}

void kt_url_release(struct kt_url *u)
{
	free(u->scheme);
	free(u->host);
	free(u->path);
	free(u->query);
	memset(u, 0, sizeof(*u));
}

int kt_url_host_port(char *buf, size_t size, const char *host, int port)
{
	bool v6 = strchr(host, ':') != NULL;

	if (port == 0)
		return snprintf(buf, size, v6 ? "[%s]" : "%s", host);
	return snprintf(buf, size, v6 ? "[%s]:%d" : "%s:%d", host, port);
}

/* two parts the same; scheme and host in any case */
static bool same(const char *a, const char *b, bool any_case)
{
	return a == b || (a && b && !(any_case ? strcasecmp(a, b) : strcmp(a, b)));
}

/* what follows the authority in url as written: its path, query, fragment */
static const char *after_authority(const char *url)
{
	const char *h = strstr(url, "://");

	h = h ? h + 3 : url;
	return h + strcspn(h, "/?#");
}

int kt_url_under(const char *url, const char *base, const char **rest, struct kt_err *err)
{
	struct kt_url want, got;
	struct kt_err ea = { 0 }, eb = { 0 };
	const char *brest = after_authority(base), *urest = after_authority(url);
	size_t plen = strlen(brest);
	int rc = 0, a, b;

	*rest = NULL;
	a = kt_url_parse(base, &want, &ea);
	b = kt_url_parse(url, &got, &eb);
	if ((a < 0 && ea.kind != KT_ERR_INPUT) || (b < 0 && eb.kind != KT_ERR_INPUT))
		rc = kt_error(err, "out of memory");
	else if (a == 0 && b == 0)
		rc = same(want.scheme, got.scheme, true) && same(want.host, got.host, true) &&
		     want.port == got.port;
	kt_url_release(&want);
	kt_url_release(&got);
	if (rc <= 0)
		return rc;
	while (plen && brest[plen - 1] == '/')
		plen--;
	if (strncmp(urest, brest, plen) || (urest[plen] && !strchr("/?", urest[plen])))
		return 0;
	*rest = urest + plen;
	return 1;
}
