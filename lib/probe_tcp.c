/* SPDX-License-Identifier: Apache-2.0 */
/* probe_tcp: a tcpSocket probe attempt: a non-blocking connect watched on the loop */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>

#include "log.h"
#include "probe_int.h"
#include "url.h"

/*
 * An address literal is connected to directly.  A host name is looked up
 * and connected to by libcurl (connect only), whose resolver runs off the
 * loop: a blocking getaddrinfo would stall every other probe for as long as
 * a slow resolver takes.
 */
struct tcp_attempt {
	int fd;
	struct kt_timer *timer;
	CURL *easy;		/* a host name: libcurl resolves and connects */
	char addr[300];		/* "host:port" for messages */
};

static void attempt_free(struct kt_loop *loop, struct tcp_attempt *a)
{
	if (!a)
		return;
	if (a->easy)
		curl_easy_cleanup(a->easy);
	if (a->timer)
		kt_timer_cancel(loop, a->timer);
	if (a->fd >= 0) {
		kt_loop_unwatch_fd(loop, a->fd);
		close(a->fd);
	}
	free(a);
}

static void finish(struct kt_probe_call *c, enum kt_probe_result r, const char *msg)
{
	struct tcp_attempt *a = c->attempt;

	c->attempt = NULL;
	attempt_free(c->loop, a);
	kt_probe_attempt_done(c, r, false, msg, strlen(msg));
}

static void on_timeout(struct kt_loop *loop, void *arg)
{
	struct kt_probe_call *c = arg;
	struct tcp_attempt *a = c->attempt;
	char msg[400];

	a->timer = NULL;
	snprintf(msg, sizeof(msg), "dial tcp %s: i/o timeout", a->addr);
	finish(c, KT_PROBE_FAILURE, msg);
}

static void connect_failed(struct kt_probe_call *c, const char *addr, int e)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "dial tcp %s: connect: %c%s", addr,
		 tolower((unsigned char)strerror(e)[0]), strerror(e) + 1);
	finish(c, KT_PROBE_FAILURE, msg);
}

static void on_writable(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct kt_probe_call *c = arg;
	struct tcp_attempt *a = c->attempt;
	socklen_t len = sizeof(int);
	int soerr = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr == 0) {
		finish(c, KT_PROBE_SUCCESS, "");
		return;
	}
	connect_failed(c, a->addr, soerr);
}

/* the address of a literal host; -1 for a name */
static int literal(const char *host, int port, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	char serv[16];

	snprintf(serv, sizeof(serv), "%d", port);
	return getaddrinfo(host, serv, &hints, res) == 0 ? 0 : -1;
}

static void on_named_done(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg)
{
	struct kt_probe_call *c = arg;
	struct tcp_attempt *a = c->attempt;
	char msg[512];
	long e = 0;

	(void)loop;
	if (rc == CURLE_OK) {
		finish(c, KT_PROBE_SUCCESS, "");
		return;
	}
	curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &e);
	if (rc == CURLE_COULDNT_RESOLVE_HOST)
		snprintf(msg, sizeof(msg), "dial tcp: lookup %s: no such host", c->host);
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(msg, sizeof(msg), "dial tcp %s: i/o timeout", a->addr);
	else if (e != 0) {
		connect_failed(c, a->addr, (int)e);
		return;
	} else
		snprintf(msg, sizeof(msg), "dial tcp %s: %s", a->addr, curl_easy_strerror(rc));
	finish(c, KT_PROBE_FAILURE, msg);
}

/* a host name: libcurl looks it up off the loop and connects, nothing more */
static int dial_name(struct kt_probe_call *c, struct tcp_attempt *a, struct kt_err *err)
{
	char url[400];

	a->easy = curl_easy_init();
	if (!a->easy)
		return kt_error(err, "out of memory");
	snprintf(url, sizeof(url), "http://%s/", a->addr);
	curl_easy_setopt(a->easy, CURLOPT_URL, url);
	curl_easy_setopt(a->easy, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(a->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(a->easy, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(a->easy, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(a->easy, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(a->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)c->timeout_ms);
	return kt_loop_add_curl(c->loop, a->easy, on_named_done, c, err);
}

/* 0: connecting; 1: connected at once; -1: failed at once, msg says why */
static int dial(struct kt_probe_call *c, struct tcp_attempt *a, char *msg, size_t size)
{
	struct addrinfo *ai = NULL;
	int rc = -1, e;

	if (literal(c->host, c->spec->port, &ai) < 0)
		return -2;
	a->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	e = errno;
	if (a->fd < 0) {
		snprintf(msg, size, "dial tcp %s: socket: %s", a->addr, strerror(e));
	} else if (connect(a->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
		rc = 1;
	} else {
		e = errno;
		if (e == EINPROGRESS)
			rc = 0;
		else
			snprintf(msg, size, "dial tcp %s: connect: %c%s", a->addr,
				 tolower((unsigned char)strerror(e)[0]), strerror(e) + 1);
	}
	freeaddrinfo(ai);
	return rc;
}

int kt_probe_tcp_start(struct kt_probe_call *c, struct kt_err *err)
{
	struct tcp_attempt *a = calloc(1, sizeof(*a));
	char msg[512] = "";
	int rc;

	if (!a)
		return kt_error(err, "out of memory");
	a->fd = -1;
	kt_url_host_port(a->addr, sizeof(a->addr), c->host, c->spec->port);
	rc = dial(c, a, msg, sizeof(msg));
	if (rc == -2) {
		c->attempt = a;
		if (dial_name(c, a, err) == 0)
			return 0;
		c->attempt = NULL;
		attempt_free(c->loop, a);
		return -1;
	}
	if (rc != 0) {
		/* a result known at once still reaches the caller through the loop */
		attempt_free(c->loop, a);
		if (kt_probe_attempt_done_soon(c, rc > 0 ? KT_PROBE_SUCCESS : KT_PROBE_FAILURE,
					       false, msg) < 0)
			return kt_error(err, "out of memory");
		return 0;
	}
	c->attempt = a;
	a->timer = kt_timer_add(c->loop, c->timeout_ms, on_timeout, c);
	if (!a->timer)
		kt_error(err, "out of memory");
	if (!a->timer ||
	    kt_loop_watch_fd(c->loop, a->fd, KT_LOOP_WRITE, on_writable, c, err) < 0) {
		c->attempt = NULL;
		attempt_free(c->loop, a);
		return -1;
	}
	return 0;
}

void kt_probe_tcp_cancel(struct kt_loop *loop, void *attempt)
{
	struct tcp_attempt *a = attempt;

	if (a->easy)
		kt_loop_remove_curl(loop, a->easy);
	attempt_free(loop, a);
}
