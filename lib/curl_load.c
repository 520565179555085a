/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl_load: libcurl is loaded when a tool first asks for it, not when the
 * tool starts.  Debian's libcurl brings some thirty libraries (TLS twice,
 * Kerberos, LDAP, SSH, RTMP): binding them costs about 5 ms of CPU and 6 MiB
 * before main, which a tool that prints its version, reports a usage error,
 * or never makes a request (node-patch3way without --send, an exec probe)
 * should not pay.  Every libcurl function the library calls is defined here
 * with libcurl's own name and prototype and passes the call on; the first
 * call opens the library.  If it cannot be opened, each call fails the way
 * libcurl reports a failure (an error code, NULL), so callers need no change.
 *
 * These definitions are not exported: nothing the tools link refers to
 * them, so libcurl's own calls between its functions stay inside libcurl.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CURL_DISABLE_TYPECHECK /* the macros would rename the definitions below */
#include <curl/curl.h>

#include "api.h"

#if LIBCURL_VERSION_NUM >= 0x080000
#define URL_CONST const
#else
#define URL_CONST
#endif

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	CURLcode (*easy_perform)(CURL *);
	void (*easy_reset)(CURL *);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	char *(*easy_escape)(CURL *, const char *, int);
	time_t (*getdate)(const char *, const time_t *);
	CURLHcode (*easy_header)(CURL *, const char *, size_t, unsigned int, int,
				 struct curl_header **);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	void (*free)(void *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLUcode (*url_get)(URL_CONST CURLU *, CURLUPart, char **, unsigned int);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	CURLMcode (*multi_cleanup)(CURLM *);
	const char *(*multi_strerror)(CURLMcode);
} fn;

#define SLOT(name) { "curl_" #name, offsetof(__typeof__(fn), name) }

static const struct {
	const char *sym;
	size_t off;
} slots[] = {
	SLOT(global_init),	   SLOT(easy_init),	     SLOT(easy_setopt),
	SLOT(easy_getinfo),	   SLOT(easy_perform),	     SLOT(easy_reset),
	SLOT(easy_cleanup),	   SLOT(easy_strerror),	     SLOT(slist_append),
	SLOT(slist_free_all),	   SLOT(free),		     SLOT(url),
	SLOT(url_cleanup),	   SLOT(url_get),	     SLOT(url_set),
	SLOT(multi_init),	   SLOT(multi_setopt),	     SLOT(multi_add_handle),
	SLOT(multi_remove_handle), SLOT(multi_socket_action), SLOT(multi_info_read),
	SLOT(multi_cleanup),	   SLOT(multi_strerror),	     SLOT(easy_header),
	SLOT(easy_escape),	   SLOT(getdate),
};

static const char *load_error; /* why the library could not be opened */
static char load_msg[512];     /* dlerror's text, which its next call frees */
static bool loaded;

static bool load(void)
{
	void *lib;

	if (loaded || load_error)
		return loaded;
	lib = dlopen(KT_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(load_msg, sizeof(load_msg), "%s", dlerror());
		load_error = load_msg;
		return false;
	}
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		void *f = dlsym(lib, slots[i].sym);

		if (!f) {
			load_error = "a function is missing from " KT_CURL_SONAME;
			return false;
		}
		*(void **)((char *)&fn + slots[i].off) = f;
	}
	loaded = true;
	return true;
}

const char *kt_api_curl_error(void)
{
	load();
	return load_error;
}

CURLcode curl_global_init(long flags)
{
	return load() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	return load() ? fn.easy_init() : NULL;
}

/* the option's number says the type of its argument, as libcurl reads it */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	CURLcode rc;
	va_list ap;

	if (!load())
		return CURLE_FAILED_INIT;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = fn.easy_setopt(h, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		rc = fn.easy_setopt(h, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		rc = fn.easy_setopt(h, opt, va_arg(ap, void (*)(void)));
	else if (opt < CURLOPTTYPE_BLOB)
		rc = fn.easy_setopt(h, opt, va_arg(ap, curl_off_t));
	else
		rc = fn.easy_setopt(h, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* every piece of information is written through a pointer */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	CURLcode rc;
	va_list ap;

	if (!load())
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = fn.easy_getinfo(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

CURLcode curl_easy_perform(CURL *h)
{
	return load() ? fn.easy_perform(h) : CURLE_FAILED_INIT;
}

void curl_easy_reset(CURL *h)
{
	if (load())
		fn.easy_reset(h);
}

void curl_easy_cleanup(CURL *h)
{
	if (load())
		fn.easy_cleanup(h);
}

const char *curl_easy_strerror(CURLcode rc)
{
	return load() ? fn.easy_strerror(rc) : "libcurl could not be loaded";
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	return load() ? fn.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (load())
		fn.slist_free_all(list);
}

CURLHcode curl_easy_header(CURL *h, const char *name, size_t index, unsigned int origin,
			   int request, struct curl_header **hout)
{
	return load() ? fn.easy_header(h, name, index, origin, request, hout) : CURLHE_NOT_BUILT_IN;
}

char *curl_easy_escape(CURL *h, const char *s, int len)
{
	return load() ? fn.easy_escape(h, s, len) : NULL;
}

time_t curl_getdate(const char *date, const time_t *unused)
{
	return load() ? fn.getdate(date, unused) : -1;
}

void curl_free(void *p)
{
	if (load())
		fn.free(p);
}

CURLU *curl_url(void)
{
	return load() ? fn.url() : NULL;
}

void curl_url_cleanup(CURLU *u)
{
	if (load())
		fn.url_cleanup(u);
}

CURLUcode curl_url_get(URL_CONST CURLU *u, CURLUPart what, char **part, unsigned int flags)
{
	return load() ? fn.url_get(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_set(CURLU *u, CURLUPart what, const char *part, unsigned int flags)
{
	return load() ? fn.url_set(u, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLM *curl_multi_init(void)
{
	return load() ? fn.multi_init() : NULL;
}

CURLMcode curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
	CURLMcode rc;
	va_list ap;

	if (!load())
		return CURLM_INTERNAL_ERROR;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = fn.multi_setopt(m, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		rc = fn.multi_setopt(m, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		rc = fn.multi_setopt(m, opt, va_arg(ap, void (*)(void)));
	else
		rc = fn.multi_setopt(m, opt, va_arg(ap, curl_off_t));
	va_end(ap);
	return rc;
}

CURLMcode curl_multi_add_handle(CURLM *m, CURL *h)
{
	return load() ? fn.multi_add_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_remove_handle(CURLM *m, CURL *h)
{
	return load() ? fn.multi_remove_handle(m, h) : CURLM_INTERNAL_ERROR;
}

CURLMcode curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *running)
{
	return load() ? fn.multi_socket_action(m, s, ev, running) : CURLM_INTERNAL_ERROR;
}

CURLMsg *curl_multi_info_read(CURLM *m, int *left)
{
	return load() ? fn.multi_info_read(m, left) : NULL;
}

CURLMcode curl_multi_cleanup(CURLM *m)
{
	return load() ? fn.multi_cleanup(m) : CURLM_INTERNAL_ERROR;
}

const char *curl_multi_strerror(CURLMcode rc)
{
	return load() ? fn.multi_strerror(rc) : "libcurl could not be loaded";
}
