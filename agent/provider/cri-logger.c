/* SPDX-License-Identifier: Apache-2.0 */
/* kt-cri-logger: the built-in provider's container log writer.  It reads a
 * container's stdout and stderr from two fifos and writes each line, with the
 * time it came and its stream, as the kubelet's CRI log format has it; it
 * rotates the file as the kubelet rotates container logs.  Not a user command:
 * run-container starts it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "crilog.h"

/* containerd cuts a line longer than this into pieces tagged P */
#define LINE_MAX_BYTES 16384

struct stream {
	int fd;
	enum kt_cri_stream which;
	char buf[LINE_MAX_BYTES];
	size_t len;
};

static const char *log_path;
static int log_fd = -1;
static int64_t log_size, max_size = 10 * 1024 * 1024;
static long max_files = 5;
static bool write_failed;
static const char *end_path;

static void usage(FILE *f)
{
	fprintf(f, "Usage: kt-cri-logger [options] LOG STDOUT-FIFO STDERR-FIFO\n"
		   "\n"
		   "The built-in provider's container log writer (run-container starts it).\n"
		   "Reads a container's stdout and stderr from two fifos, opened in that order,\n"
		   "and appends each line to LOG as \"TIME STREAM F TEXT\" (the kubelet's CRI\n"
		   "log format); a line longer than 16384 bytes is written in pieces tagged P,\n"
		   "as is a last line without its newline.  Past --max-size bytes LOG becomes\n"
		   "LOG.1 (LOG.1 LOG.2, and so on) and --max-files files are kept.  SIGTERM and\n"
		   "SIGINT are ignored: it writes until every writer has closed both fifos.\n"
		   "\n"
		   "Options:\n"
		   "      --max-size=<bytes>   rotate past this size (default 10485760)\n"
		   "      --max-files=<n>      files kept, LOG among them (default 5)\n"
		   "      --end-time=<file>    once the log is whole, write the time (RFC 3339,\n"
		   "                           UTC, whole seconds) to this file, whole or not at\n"
		   "                           all (the container's finishedAt)\n"
		   "  -h, --help               show this help and exit\n"
		   "  -V, --version            show version and exit\n");
}

static void complain(const char *what)
{
	/* said once: the container keeps running and its output is dropped */
	if (!write_failed)
		kt_errmsg("%s: %s: %s", log_path, what, strerror(errno));
	write_failed = true;
}

static void log_open(void)
{
	struct stat st;

	log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		complain("cannot open");
		return;
	}
	log_size = fstat(log_fd, &st) == 0 ? st.st_size : 0;
}

static void rotate(void)
{
	char from[4096], to[4096];
	long i;

	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	if (max_files <= 1) {
		if (truncate(log_path, 0) < 0 && errno != ENOENT)
			complain("cannot truncate");
	} else {
		snprintf(to, sizeof(to), "%s.%ld", log_path, max_files - 1);
		unlink(to);
		for (i = max_files - 1; i > 1; i--) {
			snprintf(from, sizeof(from), "%s.%ld", log_path, i - 1);
			snprintf(to, sizeof(to), "%s.%ld", log_path, i);
			if (rename(from, to) < 0 && errno != ENOENT)
				complain("cannot rotate");
		}
		snprintf(to, sizeof(to), "%s.1", log_path);
		if (rename(log_path, to) < 0 && errno != ENOENT)
			complain("cannot rotate");
	}
	log_open();
}

static void write_all(const char *p, size_t n)
{
	ssize_t w;

	while (n > 0 && log_fd >= 0) {
		w = write(log_fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			complain("cannot write");
			return;
		}
		p += w;
		n -= (size_t)w;
		log_size += w;
	}
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* one line out, the file rotated first when it would grow past the limit; a
 * file always takes one line, however long */
static void put_line(struct kt_sb *out, enum kt_cri_stream which, bool partial, const char *text,
		     size_t len, int64_t ns)
{
	kt_sb_trunc(out, 0);
	kt_cri_format(out, ns, which, partial, text, len);
	if (log_size > 0 && log_size + (int64_t)out->len > max_size)
		rotate();
	write_all(out->buf, out->len);
}

/* what one read gave: each whole line out at once, a piece at the cut */
static void take(struct stream *s, struct kt_sb *out, const char *p, size_t n)
{
	int64_t ns = now_ns();
	const char *nl;
	size_t k;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		k = nl ? (size_t)(nl - p) : n;
		if (s->len + k >= LINE_MAX_BYTES && !(nl && s->len + k == LINE_MAX_BYTES)) {
			/* the line is longer than a piece: its first piece goes now */
			k = LINE_MAX_BYTES - s->len;
			memcpy(s->buf + s->len, p, k);
			put_line(out, s->which, true, s->buf, LINE_MAX_BYTES, ns);
			s->len = 0;
			p += k;
			n -= k;
			continue;
		}
		memcpy(s->buf + s->len, p, k);
		s->len += k;
		p += k;
		n -= k;
		if (!nl)
			break;
		put_line(out, s->which, false, s->buf, s->len, ns);
		s->len = 0;
		p++;
		n--;
	}
}

static long number(const char *opt, const char *v, long min)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || end == v || *end || n < min || n > INT64_MAX / 2)
		kt_usage_error("%s: '%s' is not a number >= %ld", opt, v, min);
	return (long)n;
}

/* the end time, written beside the file and renamed onto it: a reader sees
 * it whole or not at all; run-container writes it itself when it is not there */
static void write_end_time(void)
{
	char tmp[4096], text[64];
	struct tm tm;
	time_t now = time(NULL);
	size_t n;
	int fd, ok;

	if (!gmtime_r(&now, &tm) ||
	    !(n = strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ\n", &tm)))
		return;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", end_path) >= (int)sizeof(tmp))
		return;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	ok = write(fd, text, n) == (ssize_t)n;
	if (close(fd) < 0 || !ok || rename(tmp, end_path) < 0)
		unlink(tmp);
}

int main(int argc, char **argv)
{
	enum { OPT_MAX_SIZE = KT_OPT_TOOL, OPT_MAX_FILES, OPT_END_TIME };
	static const struct option longopts[] = {
		{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
		{ "max-files", required_argument, NULL, OPT_MAX_FILES },
		{ "end-time", required_argument, NULL, OPT_END_TIME },
		KT_LONGOPTS_COMMON,
		{ 0 },
	};
	struct stream s[2] = { { .fd = -1, .which = KT_CRI_STDOUT },
			       { .fd = -1, .which = KT_CRI_STDERR } };
	struct kt_sb out = { 0 };
	struct pollfd pfd[2];
	char buf[65536];
	ssize_t r;
	int c, i, open_n;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_MAX_SIZE:
			max_size = number("--max-size", optarg, 1);
			break;
		case OPT_MAX_FILES:
			max_files = number("--max-files", optarg, 1);
			break;
		case OPT_END_TIME:
			end_path = optarg;
			break;
		default:
			kt_common_option(c, usage);
		}
	}
	if (argc - optind != 3)
		kt_usage_error("expected LOG STDOUT-FIFO STDERR-FIFO");
	log_path = argv[optind];
	/* the container's last words are written: the group's SIGTERM is not for us */
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* the writer opens stdout first, then stderr: the same order never deadlocks */
	for (i = 0; i < 2; i++) {
		do
			s[i].fd = open(argv[optind + 1 + i], O_RDONLY | O_CLOEXEC);
		while (s[i].fd < 0 && errno == EINTR);
		if (s[i].fd < 0)
			kt_die(1, "%s: %s", argv[optind + 1 + i], strerror(errno));
	}
	/* both ends met: the names are no longer needed */
	unlink(argv[optind + 1]);
	unlink(argv[optind + 2]);
	log_open();
	open_n = 2;
	while (open_n > 0) {
		for (i = 0; i < 2; i++) {
			pfd[i].fd = s[i].fd;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			kt_die(1, "poll: %s", strerror(errno));
		}
		for (i = 0; i < 2; i++) {
			if (s[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(s[i].fd, buf, sizeof(buf));
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r > 0) {
				take(&s[i], &out, buf, (size_t)r);
				continue;
			}
			/* the end of the stream: a last line without its newline is a piece */
			if (s[i].len > 0)
				put_line(&out, s[i].which, true, s[i].buf, s[i].len, now_ns());
			s[i].len = 0;
			close(s[i].fd);
			s[i].fd = -1;
			open_n--;
		}
	}
	kt_sb_release(&out);
	if (log_fd >= 0 && close(log_fd) < 0)
		complain("cannot close");
	if (end_path)
		write_end_time();
	return write_failed ? 1 : 0;
}
