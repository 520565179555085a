/* SPDX-License-Identifier: Apache-2.0 */
/* tls: a server's TLS with OpenSSL (the one module that includes its headers):
 * a certificate and key pair loaded from files and loaded again when they
 * change, or a self-signed one made for given addresses; client certificates
 * checked against a CA bundle.  Each new connection takes the context current
 * when it comes; connections open keep the one they started with. */
#ifndef KT_TLS_H
#define KT_TLS_H
#include <stdbool.h>
#include <stddef.h>

#include "kt_err.h"

struct kt_tls_opts {
	const char *cert_file, *key_file; /* both or neither */
	const char *client_ca_file;	  /* NULL: no client certificates asked for */
	const char *const *addrs;	  /* self-signed: IPs and DNS names, NULL-ended */
};

struct kt_tls;

/* NULL with err (KT_ERR_INPUT naming the file) when a file cannot be used */
struct kt_tls *kt_tls_new(const struct kt_tls_opts *o, struct kt_err *err);
void kt_tls_free(struct kt_tls *t);

/* true when the certificate is a self-signed one made here */
bool kt_tls_self_signed(const struct kt_tls *t);

/*
 * Loads the pair again when either file changed (inode, size or time) since
 * last loaded: 1 when it did, 0 when nothing changed, -1 with err when the
 * new files cannot be used (the old pair stays; a rotation caught half-done
 * is taken on a later call).
 */
int kt_tls_reload(struct kt_tls *t, struct kt_err *err);

/* a new server connection object (an OpenSSL SSL *) on the current context;
 * the caller frees it (SSL_free, or the bufferevent that owns it), which
 * calls on_free(arg) when on_free is given; NULL when out of memory */
void *kt_tls_conn_new(struct kt_tls *t, void (*on_free)(void *arg), void *arg);
/* the arg given to kt_tls_conn_new */
void *kt_tls_conn_arg(void *conn);
/*
 * The connection's records gathered up to size bytes before they go to the
 * socket, for a stream of bulk data: many records a write, not one.  What is
 * gathered waits for kt_tls_conn_flush (or for the next size bytes): the
 * caller flushes whenever it has written.  -1 when out of memory (the
 * connection writes as before).
 */
int kt_tls_conn_gather(void *conn, size_t size);
/* bytes gathered and not yet written to the socket */
size_t kt_tls_conn_gathered(void *conn);
/* what was gathered written out: 1 all written, 0 the socket is full (try
 * again when it is writable), -1 the connection failed */
int kt_tls_conn_flush(void *conn);

/* who the client is by its certificate: 1 with user (CN) and groups (each O,
 * joined by '\n') when it presented one the CA bundle verifies for client
 * use, 0 when it presented none, -1 when the one it presented is not valid */
int kt_tls_peer(void *conn, char *user, size_t usize, char *groups, size_t gsize);

/* a WebSocket handshake's Sec-WebSocket-Accept for the client's key:
 * base64(SHA-1(key + RFC 6455's GUID)), 28 characters and a NUL in out */
void kt_tls_ws_accept(const char *key, char out[29]);
#endif
