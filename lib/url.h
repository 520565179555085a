/* SPDX-License-Identifier: Apache-2.0 */
/* url: http(s) URLs, read by libcurl's parser */
#ifndef KT_URL_H
#define KT_URL_H

#include <stdbool.h>

#include "kt_err.h"

/* whether s starts with http:// or https://, in any case */
bool kt_url_is_http(const char *s);

/*
 * Whether url is on the server whose URL is base: the same scheme, host and
 * port (a missing port is the scheme's), the same user (none, as a rule),
 * and a path that is base's path or under it.  1 with *rest pointing into
 * url at what follows base's path (its own path and query, "" when there is
 * none), 0 when url is elsewhere or no URL, -1 with err when out of memory.
 */
int kt_url_under(const char *url, const char *base, const char **rest, struct kt_err *err);

#endif
