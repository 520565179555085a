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

#include "log.h"
#include "probe_int.h"

struct tcp_attempt {
	int fd;
	struct kt_timer *timer;
	char addr[300];		/* "host:port" for messages */
};

static void attempt_free(struct kt_loop *loop, struct tcp_attempt *a)
{
	if (!a)
		return;
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

static void on_writable(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct kt_probe_call *c = arg;
	struct tcp_attempt *a = c->attempt;
	socklen_t len = sizeof(int);
	int soerr = 0;
	char msg[512];

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr == 0) {
		finish(c, KT_PROBE_SUCCESS, "");
		return;
	}
	snprintf(msg, sizeof(msg), "dial tcp %s: connect: %c%s", a->addr,
		 tolower((unsigned char)strerror(soerr)[0]), strerror(soerr) + 1);
	finish(c, KT_PROBE_FAILURE, msg);
}

/* the first address of host; a name that is not a literal is looked up blocking */
static int resolve(const char *host, int port, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	char serv[16];

	snprintf(serv, sizeof(serv), "%d", port);
	if (getaddrinfo(host, serv, &hints, res) == 0)
		return 0;
	hints.ai_flags = AI_NUMERICSERV;
	return getaddrinfo(host, serv, &hints, res) == 0 ? 0 : -1;
}

/* 0: connecting; 1: connected at once; -1: failed at once, msg says why */
static int dial(struct kt_probe_call *c, struct tcp_attempt *a, char *msg, size_t size)
{
	struct addrinfo *ai = NULL;
	int rc = -1, e;

	if (resolve(c->host, c->spec->port, &ai) < 0) {
		snprintf(msg, size, "dial tcp: lookup %s: no such host", c->host);
		return -1;
	}
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
	kt_probe_join_host_port(a->addr, sizeof(a->addr), c->host, c->spec->port);
	rc = dial(c, a, msg, sizeof(msg));
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

void kt_probe_tcp_cancel(struct kt_probe_call *c)
{
	attempt_free(c->loop, c->attempt);
	c->attempt = NULL;
}
