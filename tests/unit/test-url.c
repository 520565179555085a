/* SPDX-License-Identifier: Apache-2.0 */
/* test-url: which URLs are on a server, and what of them follows its path */
#include <stdio.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

/* the rest of url under base, "-" when it is not on it */
static const char *under(const char *url, const char *base)
{
	static struct kt_err err;
	const char *rest = "?";
	int rc = kt_url_under(url, base, &rest, &err);

	if (rc < 0)
		return err.msg;
	return rc ? rest : "-";
}

static void test_is_http(void)
{
	tap_ok(kt_url_is_http("https://h/") && kt_url_is_http("HTTP://h/"),
	       "is_http: http and https in any case");
	tap_ok(!kt_url_is_http("/api") && !kt_url_is_http("ftp://h/") &&
		       !kt_url_is_http("https:/h"),
	       "is_http: a path, another scheme, a half URL are not");
}

/* url, the server's URL, what follows its path ("-": not on it), what it shows */
static const struct {
	const char *url, *base, *rest, *name;
} cases[] = {
	{ "https://127.0.0.1:6443/api/v1/nodes?limit=1", "https://127.0.0.1:6443",
	  "/api/v1/nodes?limit=1", "origin: the same server gives its path and query" },
	{ "HTTPS://127.0.0.1:6443/api", "https://127.0.0.1:6443", "/api",
	  "origin: the scheme in any case" },
	{ "https://Example.COM/api", "https://example.com:443", "/api",
	  "origin: the host in any case, the default port made explicit" },
	{ "http://example.com:80/api", "http://example.com", "/api", "origin: http's default port" },
	{ "https://127.0.0.2:6443/api", "https://127.0.0.1:6443", "-", "origin: another host" },
	{ "https://127.0.0.1:6444/api", "https://127.0.0.1:6443", "-", "origin: another port" },
	{ "https://127.0.0.1/api", "https://127.0.0.1:6443", "-",
	  "origin: the default port is another" },
	{ "http://127.0.0.1:6443/api", "https://127.0.0.1:6443", "-", "origin: another scheme" },
	{ "https://user@127.0.0.1:6443/api", "https://127.0.0.1:6443", "-",
	  "origin: a user name the server's URL has not" },
	{ "https://[::1]:6443/api", "https://[::1]:6443", "/api", "origin: an IPv6 address" },
	{ "https://[::1]:6443/api", "https://[::2]:6443", "-", "origin: another IPv6 address" },
	{ "https://bad host/api", "https://127.0.0.1:6443", "-", "origin: no URL is elsewhere" },
	{ "/api", "https://127.0.0.1:6443", "-", "origin: a path is no URL" },
	{ "https://h:1/k8s/api/v1", "https://h:1/k8s/", "/api/v1",
	  "path: what follows the server's path" },
	{ "https://h:1/k8s?x=1", "https://h:1/k8s/", "?x=1", "path: a query after the server's path" },
	{ "https://h:1/k8s", "https://h:1/k8s/", "", "path: the server's path itself" },
	{ "https://h:1/k8sx/api", "https://h:1/k8s/", "-", "path: a longer segment is not under" },
	{ "https://h:1/api", "https://h:1/k8s/", "-", "path: outside the server's path" },
	{ "https://h:1", "https://h:1", "", "path: none at all" },
	{ "https://h:1/a/../api", "https://h:1", "/a/../api", "path: kept as written, dots and all" },
};

int main(void)
{
	test_is_http();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tap_str(under(cases[i].url, cases[i].base), cases[i].rest, cases[i].name);
	return tap_done();
}
