/* SPDX-License-Identifier: Apache-2.0 */
/* kt-port-forward: the built-in provider's port-forward copier.  It connects
 * to HOST:PORT and copies both ways between that connection and its stdin and
 * stdout (one socket end, or a pipe each), the end of stdin passed on as a
 * half-close, until the connection's side has ended, as a runtime's port
 * forward ends with the pod's side.  Not a user command: the provider's
 * port-forward runs it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define BUF_BYTES  (256 * 1024)
#define PIPE_BYTES (1024 * 1024)

/* one way: from in to out, through a pipe (splice: the bytes never come up
 * to user space) or, where splice cannot go, through buf; len bytes (from
 * off in buf) wait to be written */
struct way {
	int in, out;
	int pipe[2]; /* -1: copied through buf */
	char *buf;
	size_t off, len;
	bool eof, done;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: kt-port-forward [options] HOST PORT\n"
		   "\n"
		   "The built-in provider's port-forward copier (its port-forward runs it).\n"
		   "Connects to HOST:PORT, then copies stdin to the connection and the\n"
		   "connection to stdout until the connection's data has ended and is\n"
		   "written out: the end of stdin shuts the connection's writing side, and\n"
		   "the copying ends with the connection's side, as a runtime's port\n"
		   "forward does.  A connection that cannot be made is one line on stderr\n"
		   "and exit status 1.\n"
		   "\n"
		   "Options:\n"
		   "  -h, --help               show this help and exit\n"
		   "  -V, --version            show version and exit\n");
}

/* a read or a write that never waits: sockets through MSG_DONTWAIT (fds 0
 * and 1 are shared, their flags are not ours to change), anything else as
 * it is */
static ssize_t get(int fd, char *buf, size_t n)
{
	ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);

	if (r < 0 && errno == ENOTSOCK)
		r = read(fd, buf, n);
	return r;
}

static ssize_t put(int fd, const char *buf, size_t n)
{
	ssize_t r = send(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (r < 0 && errno == ENOTSOCK)
		r = write(fd, buf, n);
	return r;
}

/* no more data this way: the writing side shut, or a pipe closed (stdout's
 * by putting /dev/null in its place: the exit still flushes stdout) */
static void finish(struct way *w)
{
	int null;

	w->done = true;
	if (shutdown(w->out, SHUT_WR) == 0 || errno != ENOTSOCK)
		return;
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0 && dup2(null, w->out) >= 0)
		close(null);
	else
		close(w->out);
}

/* the moves of a way that splices, once poll said it may go on; false when
 * splice cannot move these fds' bytes (nothing was moved): buf is used */
static bool splice_step(struct way *w, short in_ev, short out_ev)
{
	unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
	ssize_t r;

	if (w->len == 0 && !w->eof && (in_ev & (POLLIN | POLLHUP | POLLERR))) {
		r = splice(w->in, NULL, w->pipe[1], NULL, PIPE_BYTES, flags);
		if (r > 0)
			w->len = (size_t)r;
		else if (r < 0 && errno == EINVAL)
			return false;
		else if (r == 0 || (errno != EAGAIN && errno != EINTR))
			w->eof = true;
	}
	if (w->len > 0 && (out_ev & (POLLOUT | POLLERR | POLLHUP))) {
		r = splice(w->pipe[0], NULL, w->out, NULL, w->len, flags);
		if (r > 0) {
			w->len -= (size_t)r;
		} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
			/* the reader went away: what is left this way is dropped */
			w->len = 0;
			w->eof = true;
		}
	}
	return true;
}

/* one step of a way once poll said it may go on */
static void step(struct way *w, short in_ev, short out_ev)
{
	ssize_t r;

	if (w->pipe[0] >= 0 && splice_step(w, in_ev, out_ev))
		goto ended;
	if (w->pipe[0] >= 0) {
		/* nothing moved yet: the copy through buf takes over */
		close(w->pipe[0]);
		close(w->pipe[1]);
		w->pipe[0] = w->pipe[1] = -1;
	}
	if (w->len == 0 && !w->eof && (in_ev & (POLLIN | POLLHUP | POLLERR))) {
		r = get(w->in, w->buf, BUF_BYTES);
		if (r > 0) {
			w->off = 0;
			w->len = (size_t)r;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			w->eof = true;
		}
	}
	if (w->len > 0 && (out_ev & (POLLOUT | POLLERR | POLLHUP))) {
		r = put(w->out, w->buf + w->off, w->len);
		if (r > 0) {
			w->off += (size_t)r;
			w->len -= (size_t)r;
		} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
			/* the reader went away: what is left this way is dropped */
			w->len = 0;
			w->eof = true;
		}
	}
ended:
	if (w->eof && w->len == 0 && !w->done)
		finish(w);
}

/*
 * A way whose ends are sockets or pipes splices through a pipe of its own.
 * Standard input and output are made non-blocking for it: the provider
 * runs this on kubelet-serve's end of a socket pair, which no other
 * process shares (a splice into a blocking socket would wait there while
 * the other way has bytes to move).
 */
static void splice_through(struct way *w)
{
	struct stat st;

	w->pipe[0] = w->pipe[1] = -1;
	for (int k = 0; k < 2; k++) {
		int fd = k ? w->out : w->in;

		if (fstat(fd, &st) < 0 || !(S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)))
			return;
	}
	if (pipe2(w->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		w->pipe[0] = w->pipe[1] = -1;
		return;
	}
	fcntl(w->pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
	fcntl(w->in, F_SETFL, fcntl(w->in, F_GETFL) | O_NONBLOCK);
	fcntl(w->out, F_SETFL, fcntl(w->out, F_GETFL) | O_NONBLOCK);
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -1, err, saved = ECONNREFUSED, one = 1;

	err = getaddrinfo(host, port, &hints, &res);
	if (err)
		kt_die(1, "cannot connect to %s:%s: %s", host, port, gai_strerror(err));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		kt_die(1, "cannot connect to %s:%s: %s", host, port, strerror(saved));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		KT_LONGOPTS_COMMON,
		{ 0 },
	};
	struct way ways[2];
	struct pollfd pfd[4];
	char *end;
	long port;
	int c, sock, i;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1)
		kt_common_option(c, usage);
	if (argc - optind != 2)
		kt_usage_error("expected HOST PORT");
	errno = 0;
	port = strtol(argv[optind + 1], &end, 10);
	if (errno || end == argv[optind + 1] || *end || port < 1 || port > 65535)
		kt_usage_error("'%s' is not a port (1 to 65535)", argv[optind + 1]);
	signal(SIGPIPE, SIG_IGN);
	sock = dial(argv[optind], argv[optind + 1]);
	ways[0] = (struct way){ .in = 0, .out = sock, .buf = malloc(BUF_BYTES) };
	ways[1] = (struct way){ .in = sock, .out = 1, .buf = malloc(BUF_BYTES) };
	if (!ways[0].buf || !ways[1].buf)
		kt_die(1, "out of memory");
	for (i = 0; i < 2; i++)
		splice_through(&ways[i]);
	/* the pod's side ending ends it all: what the client still sends has no
	 * one to take it (the kubelet's forward ends there too) */
	while (!ways[1].done) {
		for (i = 0; i < 2; i++) {
			struct way *w = &ways[i];

			pfd[2 * i] = (struct pollfd){ .fd = -1 };
			pfd[2 * i + 1] = (struct pollfd){ .fd = -1 };
			if (w->done)
				continue;
			if (w->len > 0)
				pfd[2 * i + 1] = (struct pollfd){ .fd = w->out, .events = POLLOUT };
			else if (!w->eof)
				pfd[2 * i] = (struct pollfd){ .fd = w->in, .events = POLLIN };
		}
		if (poll(pfd, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			kt_die(1, "poll: %s", strerror(errno));
		}
		for (i = 0; i < 2; i++)
			step(&ways[i], pfd[2 * i].revents, pfd[2 * i + 1].revents);
	}
	for (i = 0; i < 2; i++) {
		if (ways[i].pipe[0] >= 0) {
			close(ways[i].pipe[0]);
			close(ways[i].pipe[1]);
		}
		free(ways[i].buf);
	}
	close(sock);
	return 0;
}
