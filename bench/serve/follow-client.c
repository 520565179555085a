/* SPDX-License-Identifier: Apache-2.0 */
/* follow-client PORT N CA CERT KEY PATH LOG ROUNDS [PID]: N TLS clients follow PATH on
 * 127.0.0.1:PORT (client certificate CERT/KEY, server checked against CA); then
 * ROUNDS times, half a second apart, one line is appended to LOG carrying the
 * CLOCK_MONOTONIC time it was written at.  Each client, on one epoll loop,
 * takes the time each such line arrives at; prints p50, p99 and the maximum
 * over all deliveries, and how many never came; with the server's PID, its CPU
 * time (utime+stime) from the first line to the end, a line.  The benches build it with cc
 * (bench/serve/follow-latency); it is not part of the project's build. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MARK "lat "

struct follower {
	SSL *ssl;
	int fd;
	char carry[64]; /* an unfinished "lat NNN" from the last read */
	size_t ncarry;
	long got;
};

static double *lat;
static size_t nlat, caplat;

static void die(const char *what)
{
	fprintf(stderr, "follow-client: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(double ms)
{
	if (nlat == caplat) {
		caplat = caplat ? 2 * caplat : 4096;
		lat = realloc(lat, caplat * sizeof *lat);
		if (!lat)
			die("out of memory");
	}
	lat[nlat++] = ms;
}

/* scan: every whole "lat NNN\n" in buf (after what was carried) is a delivery
 * at time t; an unfinished one at the end is carried to the next read */
static void scan(struct follower *f, const char *data, size_t len, int64_t t)
{
	char buf[16384 + sizeof f->carry];
	size_t n = 0, i = 0;

	memcpy(buf, f->carry, f->ncarry);
	n = f->ncarry;
	memcpy(buf + n, data, len);
	n += len;
	f->ncarry = 0;
	while (i < n) {
		char *m = memmem(buf + i, n - i, MARK, strlen(MARK));
		if (!m)
			break;
		size_t j = (size_t)(m - buf) + strlen(MARK);
		int64_t v = 0;
		while (j < n && buf[j] >= '0' && buf[j] <= '9')
			v = v * 10 + (buf[j++] - '0');
		if (j == n) { /* cut by the read: keep it for the next */
			size_t k = n - (size_t)(m - buf);
			if (k <= sizeof f->carry) {
				memcpy(f->carry, m, k);
				f->ncarry = k;
			}
			return;
		}
		if (buf[j] == '\n') {
			record((double)(t - v) / 1e6);
			f->got++;
		}
		i = j;
	}
	/* a tail that may be the start of the mark */
	for (size_t k = strlen(MARK) - 1; k > 0; k--)
		if (n >= k && memcmp(buf + n - k, MARK, k) == 0) {
			memcpy(f->carry, buf + n - k, k);
			f->ncarry = k;
			break;
		}
}

static struct follower *open_follower(SSL_CTX *ctx, int port, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct follower *f = calloc(1, sizeof *f);
	char req[1024], head[8192];
	int one = 1, len = 0;

	if (!f)
		die("out of memory");
	f->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (f->fd < 0 || connect(f->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("connect failed");
	setsockopt(f->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	f->ssl = SSL_new(ctx);
	SSL_set_fd(f->ssl, f->fd);
	SSL_set_tlsext_host_name(f->ssl, "localhost");
	if (SSL_connect(f->ssl) != 1)
		die("TLS handshake failed");
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (SSL_write(f->ssl, req, (int)strlen(req)) <= 0)
		die("request not sent");
	/* the reply's head; what follows it in the same read is the log so far */
	while (!memmem(head, (size_t)len, "\r\n\r\n", 4)) {
		int r = SSL_read(f->ssl, head + len, (int)sizeof head - len);
		if (r <= 0)
			die("no reply head");
		len += r;
	}
	if (strncmp(head, "HTTP/1.1 200", 12) != 0)
		die("the reply is not 200");
	fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) | O_NONBLOCK);
	return f;
}

/* the process's utime+stime in clock ticks, -1 when unknown */
static long cpu_ticks(const char *pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *fp;
	size_t n;

	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold spaces */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (long)(ut + st);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 9 && argc != 10) {
		fprintf(stderr, "usage: follow-client PORT N CA CERT KEY PATH LOG ROUNDS [PID]\n");
		return 2;
	}
	int port = atoi(argv[1]), n = atoi(argv[2]), rounds = atoi(argv[8]);
	const char *path = argv[6], *log = argv[7];
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	struct follower **fs = calloc((size_t)n, sizeof *fs);
	struct epoll_event ev, evs[256];
	int ep = epoll_create1(0), tfd, written = 0, logfd;
	const char *pid = argc == 10 ? argv[9] : NULL;
	long t0 = -1, t1 = -1;
	char buf[16384];

	if (!ctx || !fs || ep < 0)
		die("no context");
	if (SSL_CTX_load_verify_locations(ctx, argv[3], NULL) != 1 ||
	    SSL_CTX_use_certificate_file(ctx, argv[4], SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, argv[5], SSL_FILETYPE_PEM) != 1)
		die("certificates not loaded");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	for (int i = 0; i < n; i++) {
		fs[i] = open_follower(ctx, port, path);
		ev.events = EPOLLIN;
		ev.data.ptr = fs[i];
		epoll_ctl(ep, EPOLL_CTL_ADD, fs[i]->fd, &ev);
	}
	logfd = open(log, O_WRONLY | O_APPEND);
	if (logfd < 0)
		die("the log cannot be opened");
	/* the first line a second after the last follower is in, then every 0.5 s */
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	struct itimerspec its = { .it_value = { 1, 0 }, .it_interval = { 0, 500000000 } };
	timerfd_settime(tfd, 0, &its, NULL);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	for (;;) {
		int k = epoll_wait(ep, evs, 256, -1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			die("epoll_wait failed");
		for (int e = 0; e < k; e++) {
			struct follower *f = evs[e].data.ptr;
			if (!f) {
				uint64_t ticks;
				if (read(tfd, &ticks, sizeof ticks) < 0)
					continue;
				if (written == rounds) { /* the last line has had half a second */
					if (pid)
						t1 = cpu_ticks(pid);
					goto done;
				}
				if (written == 0 && pid)
					t0 = cpu_ticks(pid);
				char line[128];
				int len = snprintf(line, sizeof line,
						   "2026-01-01T00:00:00.000000000Z stdout F " MARK
						   "%lld\n",
						   (long long)now_ns());
				if (write(logfd, line, (size_t)len) != len)
					die("the line was not written");
				written++;
				continue;
			}
			for (;;) {
				int r = SSL_read(f->ssl, buf, sizeof buf);
				if (r <= 0) {
					int err = SSL_get_error(f->ssl, r);
					if (err == SSL_ERROR_WANT_READ)
						break;
					die("a follower's stream ended");
				}
				scan(f, buf, (size_t)r, now_ns());
			}
		}
	}
done:
	qsort(lat, nlat, sizeof *lat, cmp);
	long want = (long)n * rounds, missing = want - (long)nlat;
	if (nlat == 0)
		die("no line arrived");
	printf("followers=%d lines=%d deliveries=%zu missing=%ld p50_ms=%.1f p99_ms=%.1f "
	       "max_ms=%.1f\n",
	       n, rounds, nlat, missing, lat[nlat / 2], lat[(size_t)((double)nlat * 0.99)],
	       lat[nlat - 1]);
	if (t0 >= 0 && t1 >= 0)
		printf("server cpu_ms_per_line=%.1f (%ld ticks of %ld Hz over %d lines to %d "
		       "followers)\n",
		       (double)(t1 - t0) * 1000 / (double)sysconf(_SC_CLK_TCK) / rounds, t1 - t0,
		       sysconf(_SC_CLK_TCK), rounds, n);
	for (int i = 0; i < n; i++) {
		SSL_free(fs[i]->ssl);
		close(fs[i]->fd);
		free(fs[i]);
	}
	free(fs);
	free(lat);
	SSL_CTX_free(ctx);
	close(logfd);
	close(tfd);
	close(ep);
	return missing ? 1 : 0;
}
