/* SPDX-License-Identifier: Apache-2.0 */
/* responder: a loopback HTTP/1.1 stand-in that answers node and lease requests fast, for the fleet bench */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/*
 * Usage: responder PORT INTERVAL_MS MAX_NODES
 *
 * GET /api/v1/nodes/vk-N and GET/PUT/POST on the node leases are answered
 * with small canned JSON, keep-alive, one request at a time per connection;
 * the LIST of the leases is paged as the API server pages it (limit and
 * continue).
 * Each PUT of lease vk-N is timed against the previous one of the same
 * node: the gap minus INTERVAL_MS is the renewal's lateness (SIGUSR1 drops
 * the samples so far, to leave out a warm-up).  On SIGTERM or
 * SIGINT it prints one JSON line with request counts and lateness
 * percentiles, and exits.  Not a server for anything else.
 */

#define LEASES "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

struct conn {
	int fd;
	char *buf;
	size_t len, cap;
};

struct stats {
	uint64_t gets, puts, posts, other;
	int64_t *last_put_us;	/* per node index */
	long max_nodes;
	int64_t *late_us;	/* samples */
	size_t n_late, cap_late;
	int64_t interval_us;
};

static struct stats st;

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* vk-N (any prefix, number last) to N; -1 when there is none */
static long node_index(const char *name, size_t n)
{
	long v = 0;
	size_t i = n;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == n)
		return -1;
	for (; i < n; i++)
		v = v * 10 + (name[i] - '0');
	return v < st.max_nodes ? v : -1;
}

static void note_put(const char *name, size_t n)
{
	long idx = node_index(name, n);
	int64_t t = now_us();

	if (idx < 0)
		return;
	if (st.last_put_us[idx] && st.n_late < st.cap_late)
		st.late_us[st.n_late++] = t - st.last_put_us[idx] - st.interval_us;
	st.last_put_us[idx] = t;
}

static void reply(int fd, int code, const char *body, size_t blen)
{
	char head[256];
	int hl = snprintf(head, sizeof(head),
			  "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
			  "Content-Length: %zu\r\n\r\n",
			  code, code == 200 ? "OK" : code == 201 ? "Created" : "Not Found", blen);
	char out[2048];
	size_t total = (size_t)hl + blen;

	if (total > sizeof(out))
		return;
	memcpy(out, head, (size_t)hl);
	memcpy(out + hl, body, blen);
	/* small replies on loopback: one write is enough */
	if (write(fd, out, total) < 0)
		return;
}

/* the value of key in a query string ("limit=500&continue=7"), 0 when none */
static long query_long(const char *q, size_t n, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = q, *end = q + n; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;

		if ((size_t)(stop - p) > kl && !memcmp(p, key, kl) && p[kl] == '=')
			return strtol(p + kl + 1, NULL, 10);
		p = stop + 1;
	}
	return 0;
}

/*
 * A page of the LIST of every node's lease: limit items from the continue
 * token on (the token is the next node's number), or all of them without a
 * limit.  Blocking write: a page can be big.
 */
static void reply_list(int fd, const char *q, size_t qn)
{
	long limit = query_long(q, qn, "limit"), from = query_long(q, qn, "continue");
	long to;
	char head[128], *text;
	size_t cap, o;
	int flags = fcntl(fd, F_GETFL);

	if (from < 1)
		from = 1;
	to = limit > 0 && from + limit < st.max_nodes ? from + limit : st.max_nodes;
	cap = (size_t)(to - from) * 400 + 512;
	text = malloc(cap);
	if (!text)
		return;
	o = (size_t)snprintf(text, cap, "{\"kind\":\"LeaseList\",\"apiVersion\":"
				     "\"coordination.k8s.io/v1\",\"metadata\":{");
	if (to < st.max_nodes)
		o += (size_t)snprintf(text + o, cap - o, "\"continue\":\"%ld\"", to);
	o += (size_t)snprintf(text + o, cap - o, "},\"items\":[");
	for (long i = from; i < to; i++)
		o += (size_t)snprintf(text + o, cap - o,
				      "%s{\"metadata\":{\"name\":\"vk-%ld\",\"namespace\":"
				      "\"kube-node-lease\",\"resourceVersion\":\"1\"},\"spec\":"
				      "{\"holderIdentity\":\"vk-%ld\",\"leaseDurationSeconds\":40}}",
				      i > from ? "," : "", i, i);
	o += (size_t)snprintf(text + o, cap - o, "]}");
	fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				     "Content-Length: %zu\r\n\r\n", o);
	if (write(fd, head, strlen(head)) >= 0)
		for (size_t w = 0; w < o;) {
			ssize_t r = write(fd, text + w, o - w);

			if (r <= 0)
				break;
			w += (size_t)r;
		}
	fcntl(fd, F_SETFL, flags);
	free(text);
}

/* answers one request; name is the last path segment */
static void answer(int fd, const char *method, const char *path, size_t plen)
{
	const char *qm = memchr(path, '?', plen);
	const char *q = qm ? qm + 1 : path + plen;
	size_t qn = (size_t)(path + plen - q);
	size_t full = plen = qm ? (size_t)(qm - path) : plen;
	const char *slash = memrchr(path, '/', full);
	const char *name = slash ? slash + 1 : path;
	size_t nlen = (size_t)(path + plen - name);
	char body[1024];
	int bl;
	bool lease = plen > sizeof(LEASES) - 1 && !memcmp(path, LEASES, sizeof(LEASES) - 1);
	bool node = plen > 14 && !memcmp(path, "/api/v1/nodes/", 14);

	if (plen == sizeof(LEASES) - 1 && !memcmp(path, LEASES, plen) && !strcmp(method, "GET")) {
		st.gets++;
		reply_list(fd, q, qn);
		return;
	}
	if (node && (!strcmp(method, "GET") || !strcmp(method, "PATCH"))) {
		if (method[1] == 'A')
			st.other++;
		else
			st.gets++;
		bl = snprintf(body, sizeof(body),
			      "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%.*s\","
			      "\"uid\":\"uid-%.*s\",\"resourceVersion\":\"1\"}}",
			      (int)nlen, name, (int)nlen, name);
		reply(fd, 200, body, (size_t)bl);
		return;
	}
	if (lease && (!strcmp(method, "GET") || !strcmp(method, "PUT"))) {
		if (method[0] == 'P') {
			st.puts++;
			note_put(name, nlen);
		} else {
			st.gets++;
		}
		bl = snprintf(body, sizeof(body),
			      "{\"kind\":\"Lease\",\"apiVersion\":\"coordination.k8s.io/v1\","
			      "\"metadata\":{\"name\":\"%.*s\",\"namespace\":\"kube-node-lease\","
			      "\"resourceVersion\":\"1\",\"ownerReferences\":[{\"apiVersion\":\"v1\","
			      "\"kind\":\"Node\",\"name\":\"%.*s\",\"uid\":\"uid-%.*s\"}]},"
			      "\"spec\":{\"holderIdentity\":\"%.*s\",\"leaseDurationSeconds\":40,"
			      "\"renewTime\":\"2026-11-30T00:00:00.000000Z\"}}",
			      (int)nlen, name, (int)nlen, name, (int)nlen, name, (int)nlen, name);
		reply(fd, 200, body, (size_t)bl);
		return;
	}
	if (!strcmp(method, "POST")) {
		st.posts++;
		reply(fd, 201, "{\"metadata\":{\"resourceVersion\":\"1\"}}", 36);
		return;
	}
	st.other++;
	reply(fd, 404, "{}", 2);
}

/* the Content-Length of a header block, 0 when none */
static size_t content_length(const char *head, size_t n)
{
	const char *p = head, *end = head + n;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			break;
		if ((size_t)(eol - p) > 15 && !strncasecmp(p, "content-length:", 15))
			return strtoul(p + 15, NULL, 10);
		p = eol + 1;
	}
	return 0;
}

/* handles every complete request in c's buffer; -1 to close */
static int serve(struct conn *c)
{
	for (;;) {
		char *hend = memmem(c->buf, c->len, "\r\n\r\n", 4);
		char method[8] = "", *sp1, *sp2;
		size_t hlen, total;

		if (!hend)
			return c->len > 65536 ? -1 : 0;
		hlen = (size_t)(hend - c->buf) + 4;
		total = hlen + content_length(c->buf, hlen);
		if (c->len < total)
			return 0;
		sp1 = memchr(c->buf, ' ', hlen);
		sp2 = sp1 ? memchr(sp1 + 1, ' ', hlen - (size_t)(sp1 + 1 - c->buf)) : NULL;
		if (!sp1 || !sp2 || sp1 - c->buf >= (long)sizeof(method))
			return -1;
		memcpy(method, c->buf, (size_t)(sp1 - c->buf));
		answer(c->fd, method, sp1 + 1, (size_t)(sp2 - sp1 - 1));
		memmove(c->buf, c->buf + total, c->len - total);
		c->len -= total;
	}
}

static int on_readable(struct conn *c)
{
	for (;;) {
		ssize_t r;

		if (c->cap - c->len < 4096) {
			char *nb = realloc(c->buf, c->cap * 2 + 8192);

			if (!nb)
				return -1;
			c->buf = nb;
			c->cap = c->cap * 2 + 8192;
		}
		r = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN ? serve(c) : -1;
		c->len += (size_t)r;
	}
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void print_stats(void)
{
	int64_t p50 = 0, p99 = 0, max = 0;

	if (st.n_late) {
		qsort(st.late_us, st.n_late, sizeof(*st.late_us), cmp64);
		p50 = st.late_us[st.n_late / 2];
		p99 = st.late_us[st.n_late * 99 / 100];
		max = st.late_us[st.n_late - 1];
	}
	printf("{\"gets\":%" PRIu64 ",\"puts\":%" PRIu64 ",\"posts\":%" PRIu64
	       ",\"other\":%" PRIu64 ",\"gaps\":%zu,\"lateP50Ms\":%.1f,\"lateP99Ms\":%.1f,"
	       "\"lateMaxMs\":%.1f}\n",
	       st.gets, st.puts, st.posts, st.other, st.n_late, p50 / 1000.0, p99 / 1000.0,
	       max / 1000.0);
}

static int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1024) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void accept_all(int ep, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;
		struct epoll_event ev = { .events = EPOLLIN };

		if (fd < 0)
			return;
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		ev.data.ptr = c;
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	}
}

static long arg_long(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v <= 0) {
		fprintf(stderr, "responder: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct epoll_event evs[256], ev = { .events = EPOLLIN };
	sigset_t mask;
	int ep, lfd, sfd;

	if (argc != 4) {
		fprintf(stderr, "usage: responder PORT INTERVAL_MS MAX_NODES\n");
		return 2;
	}
	st.interval_us = arg_long(argv[2]) * 1000;
	st.max_nodes = arg_long(argv[3]) + 1;
	st.last_put_us = calloc((size_t)st.max_nodes, sizeof(int64_t));
	st.cap_late = 20000000;
	st.late_us = malloc(st.cap_late * sizeof(int64_t));
	lfd = listen_on((int)arg_long(argv[1]));
	if (!st.last_put_us || !st.late_us || lfd < 0) {
		perror("responder");
		return 1;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.data.ptr = &lfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	ev.data.ptr = &sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);

		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;

			if (evs[i].data.ptr == &sfd) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGUSR1) {
					/* the measuring window starts: forget the warm-up */
					st.n_late = 0;
					continue;
				}
				print_stats();
				return 0;
			}
			if (evs[i].data.ptr == &lfd) {
				accept_all(ep, lfd);
				continue;
			}
			if (on_readable(c) < 0) {
				close(c->fd);
				free(c->buf);
				free(c);
			}
		}
	}
}
