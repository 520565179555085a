/* SPDX-License-Identifier: Apache-2.0 */
/* test-loop: timers, fds, children, signals and curl transfers on the event loop */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "kt.h"
#include "tap.h"

static char order[64];
static size_t norder;

static void mark(struct kt_loop *loop, void *arg)
{
	order[norder++] = *(const char *)arg;
}

static void test_timers(void)
{
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	struct kt_timer *t;
	int64_t t0;

	norder = 0;
	kt_timer_add(loop, 30, mark, "d");
	kt_timer_add(loop, 10, mark, "a");
	t = kt_timer_add(loop, 15, mark, "x");
	kt_timer_add(loop, 20, mark, "c");
	kt_timer_add(loop, 10, mark, "b");
	kt_timer_cancel(loop, t);
	t0 = kt_mono_ms();
	tap_ok(kt_loop_run(loop, &err) == 0, "timers: run ends when none is left");
	order[norder] = '\0';
	tap_str(order, "abcd",
		"timers: by deadline, ties in order added, cancelled one skipped");
	tap_ok(kt_mono_ms() - t0 >= 29, "timers: the last fired after its delay");
	kt_loop_free(loop);
}

/* many timers in random order come out sorted */
static int64_t last_when;
static bool sorted = true;

static void check_sorted(struct kt_loop *loop, void *arg)
{
	int64_t when = (int64_t)(intptr_t)arg;

	if (when < last_when)
		sorted = false;
	last_when = when;
}

/* added from a callback, so that every deadline counts from the same clock */
static void add_many(struct kt_loop *loop, void *arg)
{
	struct kt_timer *cancel[100];
	unsigned seed = 42;

	for (int i = 0; i < 1000; i++) {
		int64_t d = rand_r(&seed) % 50;
		struct kt_timer *t = kt_timer_add(loop, d, check_sorted,
						  (void *)(intptr_t)d);

		if (i % 10 == 0)
			cancel[i / 10] = t;
	}
	for (int i = 0; i < 100; i += 2)
		kt_timer_cancel(loop, cancel[i]);
}

static void test_heap(void)
{
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);

	kt_timer_add(loop, 0, add_many, NULL);
	kt_loop_run(loop, &err);
	tap_ok(sorted, "timers: 1000 random timers with cancels fire in deadline order");
	kt_loop_free(loop);
}

/* a timer added at delay 0 from a timer runs on the next round, not in a busy loop */
static int rounds;

static void again(struct kt_loop *loop, void *arg)
{
	if (++rounds < 5)
		kt_timer_add(loop, 0, again, NULL);
}

static void test_zero_delay(void)
{
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);

	kt_timer_add(loop, 0, again, NULL);
	kt_loop_run(loop, &err);
	tap_ok(rounds == 5, "timers: zero delay re-added from a timer");
	kt_loop_free(loop);
}

static char got[64];

static void on_readable(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	ssize_t n = read(fd, got, sizeof(got) - 1);

	got[n > 0 ? n : 0] = '\0';
	kt_loop_unwatch_fd(loop, fd);
}

static void write_later(struct kt_loop *loop, void *arg)
{
	int fd = *(int *)arg;

	if (write(fd, "ping", 4) != 4)
		abort();
}

static void test_fd(void)
{
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	int p[2];

	if (pipe(p) < 0)
		abort();
	tap_ok(kt_loop_watch_fd(loop, p[0], KT_LOOP_READ, on_readable, NULL, &err) == 0,
	       "fd: watch a pipe");
	kt_timer_add(loop, 5, write_later, &p[1]);
	kt_loop_run(loop, &err);
	tap_str(got, "ping", "fd: callback when readable, loop ends after unwatch");
	close(p[0]);
	close(p[1]);

	/* closed while watched, then the same number comes back */
	if (pipe(p) < 0)
		abort();
	kt_loop_watch_fd(loop, p[0], KT_LOOP_READ, on_readable, NULL, &err);
	close(p[0]);
	close(p[1]);
	if (pipe(p) < 0)
		abort();
	tap_ok(kt_loop_watch_fd(loop, p[0], KT_LOOP_READ, on_readable, NULL, &err) == 0,
	       "fd: a closed and reused fd number can be watched again");
	got[0] = '\0';
	kt_timer_add(loop, 5, write_later, &p[1]);
	kt_loop_run(loop, &err);
	tap_str(got, "ping", "fd: and its events arrive");
	close(p[0]);
	close(p[1]);
	kt_loop_free(loop);
}

static int child_status = -1;
static pid_t child_pid;

static void on_child(struct kt_loop *loop, pid_t pid, int status, void *arg)
{
	child_pid = pid;
	child_status = status;
}

static void test_child(void)
{
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	pid_t pid = fork();

	if (pid == 0) {
		usleep(20000);
		_exit(7);
	}
	tap_ok(kt_loop_watch_child(loop, pid, on_child, NULL, &err) == 0, "child: watch");
	kt_loop_run(loop, &err);
	tap_ok(child_pid == pid && WIFEXITED(child_status) &&
		       WEXITSTATUS(child_status) == 7,
	       "child: exit status 7 reported once it exits");

	/* one that has exited before it is watched */
	pid = fork();
	if (pid == 0)
		_exit(3);
	usleep(50000);
	child_status = -1;
	kt_loop_watch_child(loop, pid, on_child, NULL, &err);
	kt_loop_run(loop, &err);
	tap_ok(child_pid == pid && WIFEXITED(child_status) &&
		       WEXITSTATUS(child_status) == 3,
	       "child: an exit before the watch is still reported");
	kt_loop_free(loop);
}

static int signals_seen;

static void on_usr1(struct kt_loop *loop, int signo, void *arg)
{
	signals_seen++;
	kt_loop_stop(loop);
}

static void send_usr1(struct kt_loop *loop, void *arg)
{
	kill(getpid(), SIGUSR1);
}

static void test_signal(void)
{
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	struct kt_timer *guard;
	sigset_t cur;

	tap_ok(kt_loop_on_signal(loop, SIGUSR1, on_usr1, NULL, &err) == 0,
	       "signal: watch");
	kt_timer_add(loop, 5, send_usr1, NULL);
	guard = kt_timer_add(loop, 5000, send_usr1, NULL);
	kt_loop_run(loop, &err);
	tap_ok(signals_seen == 1, "signal: delivered through the loop, stop ends run");
	kt_timer_cancel(loop, guard);
	kt_loop_free(loop);
	sigprocmask(SIG_BLOCK, NULL, &cur);
	tap_ok(!sigismember(&cur, SIGUSR1), "signal: mask restored by kt_loop_free");
}

/* a tiny HTTP server on the same loop */
struct server {
	int lfd;
	int port;
	int served;
};

static void on_client(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct server *srv = arg;
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
				    "Content-Length: 5\r\nConnection: close\r\n\r\nhello";
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0 && write(fd, reply, sizeof(reply) - 1) < 0)
		abort();
	srv->served++;
	kt_loop_unwatch_fd(loop, fd);
	close(fd);
}

static void on_accept(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	int c = accept(fd, NULL, NULL);

	if (c >= 0)
		kt_loop_watch_fd(loop, c, KT_LOOP_READ, on_client, arg, NULL);
}

static void server_open(struct server *srv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv->lfd < 0 || bind(srv->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(srv->lfd, 64) < 0 ||
	    getsockname(srv->lfd, (struct sockaddr *)&sa, &len) < 0)
		abort();
	srv->port = ntohs(sa.sin_port);
}

struct xfer {
	char body[64];
	size_t len;
	CURLcode rc;
	bool done;
};

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t total = size * n;

	if (x->len + total < sizeof(x->body)) {
		memcpy(x->body + x->len, data, total);
		x->len += total;
	}
	return total;
}

static int finished;

static void on_done(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg)
{
	struct xfer *x = arg;

	x->rc = rc;
	x->done = true;
	/* the listening socket keeps the loop alive: stop it after the last one */
	if (++finished == 3)
		kt_loop_stop(loop);
}

static void test_curl(void)
{
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	struct server srv = { 0 };
	struct xfer x[3] = { 0 };
	CURL *e[3];
	char url[64];
	bool all = true;

	server_open(&srv);
	kt_loop_watch_fd(loop, srv.lfd, KT_LOOP_READ, on_accept, &srv, &err);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", srv.port);
	for (int i = 0; i < 3; i++) {
		e[i] = curl_easy_init();
		curl_easy_setopt(e[i], CURLOPT_URL, url);
		curl_easy_setopt(e[i], CURLOPT_WRITEFUNCTION, collect);
		curl_easy_setopt(e[i], CURLOPT_WRITEDATA, &x[i]);
		tap_ok(kt_loop_add_curl(loop, e[i], on_done, &x[i], &err) == 0,
		       "curl: add");
	}
	kt_loop_run(loop, &err);
	for (int i = 0; i < 3; i++) {
		x[i].body[x[i].len] = '\0';
		all = all && x[i].done && x[i].rc == CURLE_OK &&
		      !strcmp(x[i].body, "hello");
		curl_easy_cleanup(e[i]);
	}
	tap_ok(all, "curl: three transfers against a local server end with their bodies");
	tap_ok(srv.served == 3, "curl: the server saw three requests");
	kt_loop_unwatch_fd(loop, srv.lfd);
	close(srv.lfd);
	kt_loop_free(loop);
}

int main(void)
{
	test_timers();
	test_heap();
	test_zero_delay();
	test_fd();
	test_child();
	test_signal();
	test_curl();
	return tap_done();
}
