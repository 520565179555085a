/* SPDX-License-Identifier: Apache-2.0 */
/* exec-client: the client end of exec, attach and port-forward for the tests
 * of kubelet-serve, over TLS with a client certificate: SPDY/3.1 (lib/spdy)
 * or WebSocket (lib/ws), channel.k8s.io (lib/channel).  It upgrades, opens
 * the streams it is told, sends a terminal size and its input, and writes
 * what comes back: stdout to 1, stderr to 2, the error stream to --status.
 * A refused upgrade is printed as "STATUS", the accepted versions header and
 * the body.  --hostile sends what a broken or hostile client would;
 * --count prints how many bytes stdout had instead of writing them. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "channel.h"
#include "core.h"
#include "spdy.h"
#include "ws.h"

static SSL *ssl;
static FILE *status_f;
static bool ws_mode, b64;
static uint32_t ids[8]; /* SPDY stream ids by channel; 0: none */
static const char *const names[] = { "stdin", "stdout", "stderr", "error", "resize" };

static void die(const char *what)
{
	fprintf(stderr, "exec-client: %s\n", what);
	exit(1);
}

static void put_all(const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		int n = SSL_write(ssl, p, (int)(len > 1 << 20 ? 1 << 20 : len));

		if (n <= 0)
			die("the server closed the connection while we wrote");
		p += n;
		len -= (size_t)n;
	}
}

/* --count: stdout's bytes counted, not written (a bulk read's reader, as
 * the bench's loopback reader counts them) */
static bool count_only;
static unsigned long long counted;

static void out_chan(int chan, const void *data, size_t len)
{
	const char *p = data;

	if (chan == KT_CHAN_STDOUT && count_only) {
		counted += len;
	} else if (chan == KT_CHAN_STDOUT) {
		/* as it comes, in one write: no buffer to flush in pieces */
		fflush(stdout);
		while (len) {
			ssize_t n = write(1, p, len);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return; /* no reader: the rest is dropped, as before */
			p += n;
			len -= (size_t)n;
		}
	} else if (chan == KT_CHAN_STDERR)
		fwrite(data, 1, len, stderr), fflush(stderr);
	else if (chan == KT_CHAN_ERROR && status_f)
		fwrite(data, 1, len, status_f), fflush(status_f);
}

static void on_ws(void *arg, bool text, const unsigned char *data, size_t len)
{
	struct kt_sb d = { 0 };
	int chan;

	(void)arg;
	(void)text;
	if (kt_chan_ws_read(b64, data, len, &chan, &d) == 0)
		out_chan(chan, d.buf, d.len);
	kt_sb_release(&d);
}

static int chan_of_id(uint32_t id)
{
	for (int c = 0; c < 5; c++)
		if (ids[c] == id)
			return c;
	return -1;
}

static void usage(void)
{
	fputs("usage: exec-client --port=N --ca=F --cert=F --key=F [--ws=PROTO|--spdy=PROTO]\n"
	      "  [--method=M] [--streams=stdin,stdout,...] [--stdin=FILE] [--resize=WxH]\n"
	      "  [--status=FILE] [--forward=PORT] [--wait-fd=N] [--flow] [--hostile=MODE]\n"
	      "  [--count] PATH\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' },    { "ca", 1, NULL, 'a' },
		{ "cert", 1, NULL, 'c' },    { "key", 1, NULL, 'k' },
		{ "ws", 1, NULL, 'w' },	     { "spdy", 1, NULL, 's' },
		{ "method", 1, NULL, 'm' },  { "streams", 1, NULL, 'S' },
		{ "stdin", 1, NULL, 'i' },   { "resize", 1, NULL, 'r' },
		{ "status", 1, NULL, 't' },  { "hostile", 1, NULL, 'h' },
		{ "forward", 1, NULL, 'f' }, { "wait-fd", 1, NULL, 'W' },
		{ "flow", 0, NULL, 'F' },    { "count", 0, NULL, 'C' },
		{ NULL, 0, NULL, 0 }
	};
	const char *ca = NULL, *cert = NULL, *key = NULL, *proto = NULL, *method = "POST";
	const char *streams = "", *stdin_file = NULL, *resize = NULL, *hostile = "";
	int port = 0, c, fd, forward = 0, wait_fd = -1;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct kt_sb req = { 0 }, in = { 0 }, out = { 0 }, body = { 0 };
	struct kt_spdy *sp = NULL;
	struct kt_ws *ws = NULL;
	SSL_CTX *ctx;
	char buf[65536], *hend;
	int status;
	uint32_t next_id = 1;
	int fins = 0;
	bool flow = false;	   /* --flow: windows kept, and the server's checked */
	int64_t window[5] = { 0 }; /* what the server may still send on each stream */

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'a':
			ca = optarg;
			break;
		case 'c':
			cert = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'w':
			ws_mode = true;
			proto = optarg;
			break;
		case 's':
			proto = optarg;
			break;
		case 'm':
			method = optarg;
			break;
		case 'S':
			streams = optarg;
			break;
		case 'i':
			stdin_file = optarg;
			break;
		case 'r':
			resize = optarg;
			break;
		case 't':
			status_f = fopen(optarg, "w");
			break;
		case 'h':
			hostile = optarg;
			break;
		case 'C':
			count_only = true;
			break;
		case 'f':
			forward = atoi(optarg);
			break;
		case 'W':
			wait_fd = atoi(optarg);
			break;
		case 'F':
			flow = true;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc || !port || !ca || !cert || !key)
		usage();
	signal(SIGPIPE, SIG_IGN);
	b64 = proto && strstr(proto, "base64");
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
		die("cannot load the certificates");
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* records read many at a time, not a head and a body each: a bulk
	 * read's rate is not this client's syscalls */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, 256 * 1024);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(0x7f000001);
	if (!strcmp(hostile, "no-read")) {
		int small = 4096;

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	}
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("cannot connect");
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, "localhost");
	if (SSL_connect(ssl) != 1)
		die("TLS handshake failed");

	/* the upgrade */
	kt_sb_printf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, argv[optind]);
	if (ws_mode) {
		kt_sb_printf(&req, "Connection: Upgrade\r\nUpgrade: websocket\r\n"
				   "Sec-WebSocket-Version: 13\r\n"
				   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n");
		if (*proto)
			kt_sb_printf(&req, "Sec-WebSocket-Protocol: %s\r\n", proto);
	} else if (proto) {
		kt_sb_printf(&req, "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n");
		if (*proto)
			kt_sb_printf(&req, "X-Stream-Protocol-Version: %s\r\n", proto);
	}
	kt_sb_puts(&req, "Content-Length: 0\r\n\r\n");
	put_all(req.buf, req.len);
	for (;;) {
		int n = SSL_read(ssl, buf, sizeof(buf));

		if (n <= 0)
			die("no answer to the upgrade");
		kt_sb_put(&in, buf, (size_t)n);
		if ((hend = strstr(kt_sb_str(&in), "\r\n\r\n")))
			break;
	}
	status = atoi(in.buf + 9);
	if (status != 101) {
		const char *cl = strcasestr(in.buf, "\r\nContent-Length:");
		const char *acc = strcasestr(in.buf, "\r\nX-Accepted-Stream-Protocol-Versions:");
		size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0;
		size_t have = in.len - (size_t)(hend + 4 - in.buf);

		kt_sb_put(&body, hend + 4, have);
		while (body.len < want) {
			int n = SSL_read(ssl, buf, sizeof(buf));

			if (n <= 0)
				break;
			kt_sb_put(&body, buf, (size_t)n);
		}
		printf("%d\n", status);
		if (acc)
			printf("accepted: %.*s\n", (int)strcspn(acc + 39, "\r"), acc + 39);
		fwrite(body.buf, 1, body.len, stdout);
		kt_sb_release(&body);
		kt_sb_release(&in);
		kt_sb_release(&req);
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		close(fd);
		return 0;
	}
	if (ws_mode && !strstr(in.buf, "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
		die("a wrong Sec-WebSocket-Accept");
	{
		/* what came after the answer's head is the session's */
		size_t rest = in.len - (size_t)(hend + 4 - in.buf);

		memmove(in.buf, hend + 4, rest);
		kt_sb_trunc(&in, rest);
	}
	if (ws_mode)
		ws = kt_ws_new(false, 1 << 24, on_ws, NULL);
	else
		sp = kt_spdy_new(1 << 24, 1 << 24);

	/* the streams */
	if (sp && forward) {
		char p[16];
		struct kt_spdy_header he[] = { { "streamtype", "error", 5 },
					       { "port", p, 0 },
					       { "requestid", "0", 1 } };
		struct kt_spdy_header hd[] = { { "streamtype", "data", 4 },
					       { "port", p, 0 },
					       { "requestid", "0", 1 } };

		snprintf(p, sizeof(p), "%d", forward);
		he[1].value_len = hd[1].value_len = strlen(p);
		kt_spdy_put_syn_stream(sp, &out, next_id, 0, 0, 0, he, 3);
		ids[KT_CHAN_ERROR] = next_id;
		next_id += 2;
		kt_spdy_put_syn_stream(sp, &out, next_id, 0, 0, 0, hd, 3);
		ids[KT_CHAN_STDOUT] = ids[KT_CHAN_STDIN] = next_id;
		next_id += 2;
	} else if (sp) {
		for (int ch = 0; ch < 5; ch++) {
			struct kt_spdy_header h = { "streamtype", (char *)names[ch],
						    strlen(names[ch]) };

			if (!strstr(streams, names[ch]))
				continue;
			ids[ch] = next_id;
			kt_spdy_put_syn_stream(sp, &out, next_id, 0, 0, 0, &h, 1);
			if (!strcmp(hostile, "reuse-id") && ch == KT_CHAN_ERROR)
				kt_spdy_put_syn_stream(sp, &out, next_id, 0, 0, 0, &h, 1);
			next_id += 2;
		}
	}
	if (sp && flow) {
		/* a client that does flow control says so with a window */
		for (int ch = KT_CHAN_STDOUT; ch <= KT_CHAN_ERROR; ch++)
			if (ids[ch]) {
				kt_spdy_put_window_update(&out, ids[ch], 1);
				window[ch] = KT_SPDY_WINDOW + 1;
			}
	}
	if (sp && !strcmp(hostile, "big-frame")) {
		/* a DATA frame that says 16 MiB follow */
		static const unsigned char big[] = { 0, 0, 0, 1, 0, 0xff, 0xff, 0xff };

		kt_sb_put(&out, (const char *)big, sizeof(big));
	}
	if (sp && !strcmp(hostile, "zlib-bomb")) {
		/* a header block of a few KiB that inflates to 8 MiB */
		size_t n = 8 << 20;
		char *v = malloc(n + 1);
		struct kt_spdy_header h[] = { { "streamtype", "stdin", 5 }, { "x", v, n } };

		memset(v, 'a', n);
		v[n] = 0;
		kt_spdy_put_syn_stream(sp, &out, next_id, 0, 0, 0, h, 2);
		free(v);
	}
	if (sp && !strcmp(hostile, "overrun") && ids[KT_CHAN_STDIN]) {
		/* a client that says it does flow control, then sends past the window */
		size_t n = KT_SPDY_WINDOW + 4096;
		char *v = calloc(1, n);

		kt_spdy_put_window_update(&out, ids[KT_CHAN_STDOUT], 1);
		kt_spdy_put_data(&out, ids[KT_CHAN_STDIN], 0, v, n);
		free(v);
	}
	if (ws && !strcmp(hostile, "unmasked")) {
		/* a client's frame must be masked: this one is not */
		static const unsigned char raw[] = { 0x82, 0x02, 0x00, 'x' };

		kt_ws_flush(ws, &out);
		kt_sb_put(&out, (const char *)raw, sizeof(raw));
	}
	if (resize) {
		unsigned w = 0, h = 0;
		char js[64];

		sscanf(resize, "%ux%u", &w, &h);
		snprintf(js, sizeof(js), "{\"Width\":%u,\"Height\":%u}\n", w, h);
		if (sp)
			kt_spdy_put_data(&out, ids[KT_CHAN_RESIZE], 0, js, strlen(js));
		else {
			struct kt_sb m = { 0 };

			kt_chan_ws_put(b64, KT_CHAN_RESIZE, js, strlen(js), &m);
			kt_ws_send(ws, b64, m.buf, m.len);
			kt_sb_release(&m);
		}
	}
	if (stdin_file) {
		int sfd = open(stdin_file, O_RDONLY);
		ssize_t n;

		while (sfd >= 0 && (n = read(sfd, buf, 16384)) > 0) {
			if (sp)
				kt_spdy_put_data(&out, ids[KT_CHAN_STDIN], 0, buf, (size_t)n);
			else {
				struct kt_sb m = { 0 };

				kt_chan_ws_put(b64, KT_CHAN_STDIN, buf, (size_t)n, &m);
				kt_ws_send(ws, b64, m.buf, m.len);
				kt_sb_release(&m);
			}
		}
		if (sfd >= 0)
			close(sfd);
		/* the end of input: a FIN, or v5's close of channel 0 */
		if (sp)
			kt_spdy_put_data(&out, ids[KT_CHAN_STDIN], KT_SPDY_FLAG_FIN, "", 0);
		else if (proto && !strncmp(proto, "v5.", 3)) {
			static const unsigned char cl[] = { KT_CHAN_CLOSE, KT_CHAN_STDIN };

			kt_ws_send(ws, false, cl, 2);
		}
	}
	if (ws)
		kt_ws_flush(ws, &out);
	if (out.len)
		put_all(out.buf, out.len);
	kt_sb_trunc(&out, 0);
	if (wait_fd >= 0) {
		/* read nothing until the test says so (its pipe ends) */
		while (read(wait_fd, buf, sizeof(buf)) > 0)
			;
	}

	/* what comes back, to the end of the connection */
	for (;;) {
		size_t off = 0;
		int n;

		if (sp) {
			while (off < in.len) {
				struct kt_spdy_frame f;
				const char *why;
				ssize_t t = kt_spdy_parse(sp, in.buf + off, in.len - off, &f, &why);

				if (t <= 0) {
					if (t < 0)
						die(why);
					break;
				}
				if (f.type == KT_SPDY_DATA) {
					int ch = chan_of_id(f.stream_id);

					out_chan(ch == KT_CHAN_STDIN ? KT_CHAN_STDOUT : ch, f.data,
						 f.len);
					if (f.flags & KT_SPDY_FLAG_FIN)
						fins |= ch == KT_CHAN_ERROR ? 2 : 1;
					if (flow && ch >= 0 && f.len) {
						window[ch] -= (int64_t)f.len;
						if (window[ch] < 0)
							die("the server sent past our window");
						/* given back only once mostly used: the server
						 * must wait for it */
						if (window[ch] < KT_SPDY_WINDOW / 4) {
							kt_spdy_put_window_update(
							    &out, f.stream_id,
							    (uint32_t)(KT_SPDY_WINDOW -
								       window[ch]));
							window[ch] = KT_SPDY_WINDOW;
						}
					}
				} else if (f.type == KT_SPDY_GOAWAY && status_f) {
					fprintf(status_f, "\nGOAWAY %u", f.value);
				}
				kt_spdy_frame_clear(&f);
				off += (size_t)t;
			}
			/* a frame not whole yet stays where it is until it is */
			if (off) {
				memmove(in.buf, in.buf + off, in.len - off);
				kt_sb_trunc(&in, in.len - off);
			}
			if (out.len)
				put_all(out.buf, out.len);
			kt_sb_trunc(&out, 0);
			/* port-forward: the pair ended, the connection stays */
			if (forward && fins == 3)
				break;
		} else if (in.len) {
			kt_ws_feed(ws, in.buf, in.len);
			kt_sb_trunc(&in, 0);
			kt_ws_flush(ws, &out);
			if (out.len)
				put_all(out.buf, out.len);
			kt_sb_trunc(&out, 0);
		}
		n = SSL_read(ssl, buf, sizeof(buf));
		if (n <= 0)
			break;
		kt_sb_put(&in, buf, (size_t)n);
	}
	if (status_f)
		fclose(status_f);
	if (count_only)
		printf("%llu\n", counted);
	kt_spdy_free(sp);
	kt_ws_free(ws);
	kt_sb_release(&in);
	kt_sb_release(&out);
	kt_sb_release(&req);
	kt_sb_release(&body);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return 0;
}
