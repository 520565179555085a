/* SPDX-License-Identifier: Apache-2.0 */
/* url: http(s) URLs, read by libcurl's parser */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "url.h"

bool kt_url_is_http(const char *s)
{
	return !strncasecmp(s, "https://", 8) || !strncasecmp(s, "http://", 7);
}

/* scheme, host, port and user of a URL, as libcurl reads it */
struct origin {
	char *part[4];
};

static const CURLUPart origin_parts[4] = { CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT,
					   CURLUPART_USER };

static void origin_release(struct origin *o)
{
	for (size_t i = 0; i < 4; i++)
		curl_free(o->part[i]);
}

/* 1 when url is an http(s) URL with a host, 0 when not, -1 when out of memory */
static int origin_of(const char *url, struct origin *o)
{
	CURLU *u = curl_url();
	CURLUcode rc;
	int ok = 1;

	memset(o, 0, sizeof(*o));
	if (!u)
		return -1;
	rc = curl_url_set(u, CURLUPART_URL, url, 0);
	for (size_t i = 0; i < 4 && rc == CURLUE_OK; i++) {
		rc = curl_url_get(u, origin_parts[i], &o->part[i], CURLU_DEFAULT_PORT);
		if (origin_parts[i] == CURLUPART_USER && rc == CURLUE_NO_USER)
			rc = CURLUE_OK;
	}
	if (rc == CURLUE_OUT_OF_MEMORY)
		ok = -1;
	else if (rc != CURLUE_OK)
		ok = 0;
	curl_url_cleanup(u);
	return ok;
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
	struct origin want, got;
	const char *brest = after_authority(base), *urest = after_authority(url);
	size_t plen = strlen(brest);
	int rc = 0, a, b;

	*rest = NULL;
	a = origin_of(base, &want);
	b = origin_of(url, &got);
	if (a < 0 || b < 0)
		rc = kt_error(err, "out of memory");
	else if (!a || !b || !kt_url_is_http(url))
		rc = 0;
	else
		rc = same(want.part[0], got.part[0], true) &&
		     same(want.part[1], got.part[1], true) &&
		     same(want.part[2], got.part[2], false) &&
		     same(want.part[3], got.part[3], false);
	origin_release(&want);
	origin_release(&got);
	if (rc <= 0)
		return rc;
	while (plen && brest[plen - 1] == '/')
		plen--;
	if (strncmp(urest, brest, plen) || (urest[plen] && !strchr("/?", urest[plen])))
		return 0;
	*rest = urest + plen;
	return 1;
}
