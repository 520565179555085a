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

static void test_origin(void)
{
	const char *srv = "https://127.0.0.1:6443";

	tap_str(under("https://127.0.0.1:6443/api/v1/nodes?limit=1", srv), "/api/v1/nodes?limit=1",
		"origin: the same server gives its path and query");
	tap_str(under("HTTPS://127.0.0.1:6443/api", srv), "/api",
		"origin: the scheme in any case");
	tap_str(under("https://Example.COM/api", "https://example.com:443"), "/api",
		"origin: the host in any case, the default port made explicit");
	tap_str(under("http://example.com:80/api", "http://example.com"), "/api",
		"origin: http's default port");
	tap_str(under("https://127.0.0.2:6443/api", srv), "-", "origin: another host");
	tap_str(under("https://127.0.0.1:6444/api", srv), "-", "origin: another port");
	tap_str(under("https://127.0.0.1/api", srv), "-", "origin: the default port is another");
	tap_str(under("http://127.0.0.1:6443/api", srv), "-", "origin: another scheme");
	tap_str(under("https://user@127.0.0.1:6443/api", srv), "-",
		"origin: a user name the server's URL has not");
	tap_str(under("https://[::1]:6443/api", "https://[::1]:6443"), "/api",
		"origin: an IPv6 address");
	tap_str(under("https://[::1]:6443/api", "https://[::2]:6443"), "-",
		"origin: another IPv6 address");
	tap_str(under("https://bad host/api", srv), "-", "origin: no URL is elsewhere");
	tap_str(under("/api", srv), "-", "origin: a path is no URL");
}

static void test_path(void)
{
	const char *srv = "https://h:1/k8s/";

	tap_str(under("https://h:1/k8s/api/v1", srv), "/api/v1",
		"path: what follows the server's path");
	tap_str(under("https://h:1/k8s?x=1", srv), "?x=1", "path: a query after the server's path");
	tap_str(under("https://h:1/k8s", srv), "", "path: the server's path itself");
	tap_str(under("https://h:1/k8sx/api", srv), "-", "path: a longer segment is not under");
	tap_str(under("https://h:1/api", srv), "-", "path: outside the server's path");
	tap_str(under("https://h:1", "https://h:1"), "", "path: none at all");
	tap_str(under("https://h:1/a/../api", "https://h:1"), "/a/../api",
		"path: kept as written, dots and all");
}

int main(void)
{
	test_is_http();
	test_origin();
	test_path();
	return tap_done();
}
