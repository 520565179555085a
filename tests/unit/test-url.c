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

/* what kt_url_parse makes of s: "scheme host port(given) path query", or its error */
static const char *parsed(const char *s)
{
	static char out[1024];
	struct kt_err err = { 0 };
	struct kt_url u;

	if (kt_url_parse(s, &u, &err) < 0) {
		snprintf(out, sizeof(out), "%s%s", err.kind == KT_ERR_INPUT ? "" : "!", err.msg);
		return out;
	}
	snprintf(out, sizeof(out), "%s %s %d%s %s %s", u.scheme, u.host, u.port,
		 u.port_given ? "" : "(default)", u.path, u.query ? u.query : "-");
	kt_url_release(&u);
	kt_url_release(&u);
	return out;
}

static const struct {
	const char *url, *want, *name;
} parses[] = {
	{ "https://127.0.0.1:6443/api?limit=1", "https 127.0.0.1 6443 /api limit=1",
	  "parse: scheme, host, port, path, query" },
	{ "HTTP://Example.com", "http Example.com 80(default) / -",
	  "parse: the scheme lower case, the default port, path '/'" },
	{ "https://[::1]/healthz", "https ::1 443(default) /healthz -",
	  "parse: an IPv6 host without its brackets" },
	{ "https://[fe80::1]:10250/x", "https fe80::1 10250 /x -", "parse: IPv6 with a port" },
	{ "https://user@h/", "invalid URL 'https://user@h/': a user name or password is not taken",
	  "parse: a user name refused" },
	{ "https://user:pw@h/", "invalid URL 'https://user:pw@h/': a user name or password is not taken",
	  "parse: a password refused" },
	{ "https://h:65536/", "invalid URL 'https://h:65536/': a port that is not 1 to 65535",
	  "parse: a port too large" },
	{ "https://h:0/", "invalid URL 'https://h:0/': a port that is not 1 to 65535",
	  "parse: port 0" },
	{ "https://h:8x/", "invalid URL 'https://h:8x/': a port that is not 1 to 65535",
	  "parse: a port that is no number" },
	{ "https://[::1/", "invalid URL 'https://[::1/': a bad IPv6 address",
	  "parse: an IPv6 address not closed" },
	{ "ftp://h/", "invalid URL 'ftp://h/': not an http(s) URL with a host",
	  "parse: another scheme" },
	{ "https://bad host/", "invalid URL 'https://bad host/': not an http(s) URL with a host",
	  "parse: a bad host" },
};

static void test_host_port(void)
{
	char buf[64];

	kt_url_host_port(buf, sizeof(buf), "127.0.0.1", 8080);
	tap_str(buf, "127.0.0.1:8080", "host_port: a name or IPv4 address as it is");
	kt_url_host_port(buf, sizeof(buf), "::1", 443);
	tap_str(buf, "[::1]:443", "host_port: an IPv6 address in brackets");
	kt_url_host_port(buf, sizeof(buf), "fe80::1", 0);
	tap_str(buf, "[fe80::1]", "host_port: port 0 gives the host alone");
	tap_ok(kt_url_host_port(buf, 8, "example.com", 80) >= 8 && strlen(buf) == 7,
	       "host_port: a short buffer is cut and says so");
}

int main(void)
{
	test_is_http();
	for (size_t i = 0; i < sizeof(parses) / sizeof(parses[0]); i++)
		tap_str(parsed(parses[i].url), parses[i].want, parses[i].name);
	test_host_port();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tap_str(under(cases[i].url, cases[i].base), cases[i].rest, cases[i].name);
	return tap_done();
}
