/* SPDX-License-Identifier: Apache-2.0 */
/* url: http(s) URLs, read by libcurl's parser */
#ifndef KT_URL_H
#define KT_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "kt_err.h"

/* whether s starts with http:// or https://, in any case */
bool kt_url_is_http(const char *s);

/* an http(s) URL's parts as libcurl reads them */
struct kt_url {
	char *scheme; /* "http" or "https", lower case */
	char *host;   /* never empty; an IPv6 address without its brackets */
	char *path;   /* "/" at least, as written (escapes and dots kept) */
	char *query;  /* what follows '?', NULL when none */
	int port;     /* the port given, or the scheme's */
	bool port_given;
};

/*
 * The one URL parser: 0 with u filled (kt_url_release frees it), -1 with err
 * when s is not an http(s) URL with a host, has a user name or password, or
 * a port that is not 1 to 65535 (KT_ERR_INPUT, the message says which), or
 * when out of memory.
 */
int kt_url_parse(const char *s, struct kt_url *u, struct kt_err *err);
/* frees u's parts and zeroes it: releasing twice is harmless */
void kt_url_release(struct kt_url *u);

/*
 * The one host:port join: "host:port", "[host]:port" when host is an IPv6
 * address (has a ':'), host alone (bracketed so) when port is 0.  Returns
 * what snprintf returns: the output was cut when that is size or more.
 */
int kt_url_host_port(char *buf, size_t size, const char *host, int port);

/*
 * Whether url is on the server whose URL is base: the same scheme, host and
 * port (a missing port is the scheme's; neither with a user name), and a path that is base's path or under it.  1 with *rest pointing into
 * url at what follows base's path (its own path and query, "" when there is
 * none), 0 when url is elsewhere or no URL, -1 with err when out of memory.
 */
int kt_url_under(const char *url, const char *base, const char **rest, struct kt_err *err);

#endif
