/* SPDX-License-Identifier: Apache-2.0 */
/* tls: certificates and client verification with OpenSSL */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "fsio.h"
#include "kt_err.h"
#include "tls.h"

struct kt_tls {
	struct kt_tls_opts o;
	SSL_CTX *ctx;
	bool self_signed;
	struct kt_file_id cert_id, key_id; /* the pair's files as last loaded */
};

static void ssl_error(struct kt_err *err, const char *what, const char *file)
{
	char buf[256] = "unknown error";
	unsigned long e = ERR_peek_last_error();

	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	kt_error_kind(err, KT_ERR_INPUT, "%s%s%s: %s", file ? file : "", file ? ": " : "", what,
		      buf);
}

/* verification is decided per request (kt_tls_peer): a client whose
 * certificate does not verify still gets its 401, as the kubelet answers */
static int accept_any(int ok, X509_STORE_CTX *x)
{
	(void)ok;
	(void)x;
	return 1;
}

static SSL_CTX *ctx_base(const struct kt_tls_opts *o, struct kt_err *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (!ctx) {
		ssl_error(err, "cannot make a TLS context", NULL);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (o->client_ca_file) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->client_ca_file);

		if (!names || SSL_CTX_load_verify_locations(ctx, o->client_ca_file, NULL) != 1) {
			if (names)
				sk_X509_NAME_pop_free(names, X509_NAME_free);
			ssl_error(err, "not a CA bundle", o->client_ca_file);
			SSL_CTX_free(ctx);
			return NULL;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any);
		SSL_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
	}
	return ctx;
}

static SSL_CTX *ctx_from_files(const struct kt_tls_opts *o, struct kt_err *err)
{
	SSL_CTX *ctx = ctx_base(o, err);

	if (!ctx)
		return NULL;
	if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) {
		ssl_error(err, "cannot load the certificate", o->cert_file);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1) {
		ssl_error(err, "cannot load the private key", o->key_file);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		ssl_error(err, "the private key does not match the certificate", o->key_file);
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* a self-signed certificate for the addresses, a year long, as the kubelet
 * makes one when given none: CN host@seconds, the addresses as SANs */
static SSL_CTX *ctx_self_signed(const struct kt_tls_opts *o, struct kt_err *err)
{
	SSL_CTX *ctx = ctx_base(o, err);
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	X509_NAME *name;
	GENERAL_NAMES *sans = NULL;
	char cn[300], host[256] = "localhost";

	if (!ctx)
		return NULL;
	key = EVP_EC_gen("P-256");
	x = X509_new();
	sans = GENERAL_NAMES_new();
	if (!key || !x || !sans)
		goto fail;
	gethostname(host, sizeof(host) - 1);
	snprintf(cn, sizeof(cn), "%s@%lld", host, (long long)time(NULL));
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), (long)time(NULL));
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 365L * 24 * 3600);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, name);
	X509_set_pubkey(x, key);
	for (const char *const *a = o->addrs; a && *a; a++) {
		unsigned char ip[16];
		int len = inet_pton(AF_INET, *a, ip) == 1    ? 4
			  : inet_pton(AF_INET6, *a, ip) == 1 ? 16
							     : 0;
		GENERAL_NAME *g = GENERAL_NAME_new();

		if (!g)
			goto fail;
		if (len) {
			ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();

			ASN1_OCTET_STRING_set(os, ip, len);
			GENERAL_NAME_set0_value(g, GEN_IPADD, os);
		} else {
			ASN1_IA5STRING *s = ASN1_IA5STRING_new();

			ASN1_STRING_set(s, *a, -1);
			GENERAL_NAME_set0_value(g, GEN_DNS, s);
		}
		sk_GENERAL_NAME_push(sans, g);
	}
	if (sk_GENERAL_NAME_num(sans) > 0)
		X509_add1_ext_i2d(x, NID_subject_alt_name, sans, 0, X509V3_ADD_DEFAULT);
	if (!X509_sign(x, key, EVP_sha256()) || SSL_CTX_use_certificate(ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, key) != 1)
		goto fail;
	GENERAL_NAMES_free(sans);
	X509_free(x);
	EVP_PKEY_free(key);
	return ctx;
fail:
	ssl_error(err, "cannot make a self-signed certificate", NULL);
	GENERAL_NAMES_free(sans);
	X509_free(x);
	EVP_PKEY_free(key);
	SSL_CTX_free(ctx);
	return NULL;
}

struct kt_tls *kt_tls_new(const struct kt_tls_opts *o, struct kt_err *err)
{
	struct kt_tls *t = calloc(1, sizeof(*t));

	if (!t) {
		kt_error(err, "out of memory");
		return NULL;
	}
	t->o = *o;
	if (o->cert_file) {
		bool cert_ok = kt_file_id_get(o->cert_file, &t->cert_id) == 0;

		if (!cert_ok || kt_file_id_get(o->key_file, &t->key_id) < 0) {
			kt_error_kind(err, KT_ERR_INPUT, "%s: cannot read it",
				      cert_ok ? o->key_file : o->cert_file);
			free(t);
			return NULL;
		}
		t->ctx = ctx_from_files(o, err);
	} else {
		t->self_signed = true;
		t->ctx = ctx_self_signed(o, err);
	}
	if (!t->ctx) {
		free(t);
		return NULL;
	}
	return t;
}

void kt_tls_free(struct kt_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

bool kt_tls_self_signed(const struct kt_tls *t)
{
	return t->self_signed;
}

int kt_tls_reload(struct kt_tls *t, struct kt_err *err)
{
	struct kt_file_id cs, ks;
	SSL_CTX *ctx;

	if (t->self_signed)
		return 0;
	if (kt_file_id_get(t->o.cert_file, &cs) < 0 || kt_file_id_get(t->o.key_file, &ks) < 0)
		return 0; /* between a remove and a rename: the next call sees it */
	if (kt_file_id_same(&cs, &t->cert_id) && kt_file_id_same(&ks, &t->key_id))
		return 0;
	ctx = ctx_from_files(&t->o, err);
	if (!ctx)
		return -1;
	/* connections open hold their own reference to the old context */
	SSL_CTX_free(t->ctx);
	t->ctx = ctx;
	t->cert_id = cs;
	t->key_id = ks;
	return 1;
}

struct conn_hook {
	void (*on_free)(void *arg);
	void *arg;
};

static int hook_index = -1;

static void hook_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	struct conn_hook *h = ptr;

	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	if (!h)
		return;
	if (h->on_free)
		h->on_free(h->arg);
	free(h);
}

void *kt_tls_conn_new(struct kt_tls *t, void (*on_free)(void *arg), void *arg)
{
	struct conn_hook *h;
	SSL *ssl;

	if (hook_index < 0)
		hook_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, hook_free);
	h = calloc(1, sizeof(*h));
	ssl = h && hook_index >= 0 ? SSL_new(t->ctx) : NULL;
	if (!ssl) {
		free(h);
		return NULL;
	}
	h->on_free = on_free;
	h->arg = arg;
	SSL_set_ex_data(ssl, hook_index, h);
	return ssl;
}

int kt_tls_conn_gather(void *conn, size_t size)
{
	BIO *sock = SSL_get_wbio(conn), *buf;

	if (!sock || BIO_method_type(sock) == BIO_TYPE_BUFFER)
		return sock ? 0 : -1;
	buf = BIO_new(BIO_f_buffer());
	if (!buf || BIO_set_write_buffer_size(buf, (long)size) <= 0 || !BIO_up_ref(sock)) {
		BIO_free(buf);
		return -1;
	}
	/* the buffer in front of the socket for writing; reading as it was */
	BIO_push(buf, sock);
	SSL_set0_wbio(conn, buf);
	return 0;
}

size_t kt_tls_conn_gathered(void *conn)
{
	BIO *w = SSL_get_wbio(conn);

	return w && BIO_method_type(w) == BIO_TYPE_BUFFER ? BIO_wpending(w) : 0;
}

int kt_tls_conn_flush(void *conn)
{
	BIO *w = SSL_get_wbio(conn);

	if (!w || BIO_method_type(w) != BIO_TYPE_BUFFER || BIO_wpending(w) == 0)
		return 1;
	if (BIO_flush(w) > 0)
		return 1;
	return BIO_should_retry(w) ? 0 : -1;
}

void *kt_tls_conn_arg(void *conn)
{
	struct conn_hook *h = hook_index < 0 ? NULL : SSL_get_ex_data(conn, hook_index);

	return h ? h->arg : NULL;
}

/* the entries of nid in name, joined by sep, into buf */
static void name_entries(X509_NAME *name, int nid, char sep, char *buf, size_t size)
{
	size_t len = 0;
	int i = -1;

	buf[0] = '\0';
	while ((i = X509_NAME_get_index_by_NID(name, nid, i)) >= 0) {
		ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
		unsigned char *u = NULL;
		int n = ASN1_STRING_to_UTF8(&u, d);

		if (n >= 0 && len + (size_t)n + 2 < size) {
			if (len)
				buf[len++] = sep;
			memcpy(buf + len, u, (size_t)n);
			len += (size_t)n;
			buf[len] = '\0';
		}
		OPENSSL_free(u);
	}
}

int kt_tls_peer(void *conn, char *user, size_t usize, char *groups, size_t gsize)
{
	SSL *ssl = conn;
	X509 *peer = SSL_get0_peer_certificate(ssl);
	X509_NAME *name;

	user[0] = '\0';
	groups[0] = '\0';
	if (!peer)
		return 0;
	if (SSL_get_verify_result(ssl) != X509_V_OK)
		return -1;
	name = X509_get_subject_name(peer);
	name_entries(name, NID_commonName, '\n', user, usize);
	name_entries(name, NID_organizationName, '\n', groups, gsize);
	return user[0] ? 1 : -1;
}

void kt_tls_ws_accept(const char *key, char out[29])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	out[0] = '\0';
	if (c && EVP_DigestInit_ex(c, EVP_sha1(), NULL) && EVP_DigestUpdate(c, key, strlen(key)) &&
	    EVP_DigestUpdate(c, guid, sizeof(guid) - 1) && EVP_DigestFinal_ex(c, md, &n) && n == 20)
		EVP_EncodeBlock((unsigned char *)out, md, (int)n);
	EVP_MD_CTX_free(c);
}
