/* SPDX-License-Identifier: Apache-2.0 */
/* x509: keys, PKCS#10 requests and certificates with OpenSSL, in memory */
#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "kt_err.h"
#include "x509.h"

/* what OpenSSL said last, for a message; its error queue is left empty */
static int ossl_error(struct kt_err *err, enum kt_err_kind kind, const char *what)
{
	char buf[256] = "";
	unsigned long e = ERR_peek_last_error();

	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	ERR_clear_error();
	if (!buf[0])
		return kt_error_kind(err, kind, "%s", what);
	return kt_error_kind(err, kind, "%s (%s)", what, buf);
}

/* an encrypted key is refused, never prompted for */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

static BIO *mem_in(const char *pem, size_t len)
{
	if (len > INT_MAX)
		return NULL;
	return BIO_new_mem_buf(pem, (int)len);
}

/* the BIO's text as a NUL-terminated copy; wiped as it goes when secret */
static int bio_take(BIO *b, char **out, size_t *len, struct kt_err *err)
{
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);
	char *copy;

	if (n <= 0 || !data)
		return ossl_error(err, KT_ERR_FAIL, "cannot write PEM");
	copy = malloc((size_t)n + 1);
	if (!copy)
		return kt_error(err, "out of memory");
	memcpy(copy, data, (size_t)n);
	copy[n] = '\0';
	*out = copy;
	*len = (size_t)n;
	return 0;
}

void kt_x509_secret_free(char *pem, size_t len)
{
	if (!pem)
		return;
	OPENSSL_cleanse(pem, len);
	free(pem);
}

int kt_x509_key_new(char **pem, size_t *len, struct kt_err *err)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	/* secure memory: the BIO's buffer is wiped when it is freed */
	BIO *b = BIO_new(BIO_s_secmem());
	int rc = -1;

	*pem = NULL;
	*len = 0;
	if (!key || !b) {
		ossl_error(err, KT_ERR_FAIL, "cannot make an ECDSA P-256 key");
		goto out;
	}
	if (PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1) {
		ossl_error(err, KT_ERR_FAIL, "cannot write the new key");
		goto out;
	}
	rc = bio_take(b, pem, len, err);
out:
	BIO_free(b);
	EVP_PKEY_free(key);
	return rc;
}

/* a private key (key) or a certificate from PEM text, or NULL with why */
static void *pem_read(const char *pem, size_t len, bool key, struct kt_err *err)
{
	BIO *b = mem_in(pem, len);
	void *v = NULL;

	if (b)
		v = key ? (void *)PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL)
			: (void *)PEM_read_bio_X509(b, NULL, no_passphrase, NULL);
	BIO_free(b);
	if (!v)
		ossl_error(err, KT_ERR_INPUT,
			   key ? "no private key that can be read"
			       : "no certificate that can be read");
	return v;
}

static EVP_PKEY *key_read(const char *pem, size_t len, struct kt_err *err)
{
	return pem_read(pem, len, true, err);
}

static X509 *cert_read(const char *pem, size_t len, struct kt_err *err)
{
	return pem_read(pem, len, false, err);
}

bool kt_x509_is_ip(const char *s)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static GENERAL_NAME *san_new(const char *a)
{
	unsigned char ip[16];
	int iplen = inet_pton(AF_INET, a, ip) == 1 ? 4 : inet_pton(AF_INET6, a, ip) == 1 ? 16 : 0;
	GENERAL_NAME *g = GENERAL_NAME_new();

	if (!g)
		return NULL;
	if (iplen) {
		ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();

		if (!os || !ASN1_OCTET_STRING_set(os, ip, iplen)) {
			ASN1_OCTET_STRING_free(os);
			GENERAL_NAME_free(g);
			return NULL;
		}
		GENERAL_NAME_set0_value(g, GEN_IPADD, os);
	} else {
		ASN1_IA5STRING *s = ASN1_IA5STRING_new();

		if (!s || !ASN1_STRING_set(s, a, -1)) {
			ASN1_IA5STRING_free(s);
			GENERAL_NAME_free(g);
			return NULL;
		}
		GENERAL_NAME_set0_value(g, GEN_DNS, s);
	}
	return g;
}

/* the subjectAltName extension of the request, when it names addresses */
static int req_add_sans(X509_REQ *r, const char *const *addrs, struct kt_err *err)
{
	STACK_OF(X509_EXTENSION) *exts = NULL;
	GENERAL_NAMES *sans;
	X509_EXTENSION *ext = NULL;
	int rc = -1;

	if (!addrs || !*addrs)
		return 0;
	sans = GENERAL_NAMES_new();
	if (!sans)
		return kt_error(err, "out of memory");
	for (const char *const *a = addrs; *a; a++) {
		GENERAL_NAME *g;

		if (!**a) {
			kt_error_kind(err, KT_ERR_INPUT,
				      "an empty address cannot be a subjectAltName");
			goto out;
		}
		g = san_new(*a);
		if (!g || !sk_GENERAL_NAME_push(sans, g)) {
			GENERAL_NAME_free(g);
			kt_error(err, "out of memory");
			goto out;
		}
	}
	ext = X509V3_EXT_i2d(NID_subject_alt_name, 0, sans);
	exts = sk_X509_EXTENSION_new_null();
	if (!ext || !exts || !sk_X509_EXTENSION_push(exts, ext)) {
		ossl_error(err, KT_ERR_FAIL, "cannot make the subjectAltName extension");
		goto out;
	}
	ext = NULL;
	if (X509_REQ_add_extensions(r, exts) != 1) {
		ossl_error(err, KT_ERR_FAIL, "cannot add the subjectAltName extension");
		goto out;
	}
	rc = 0;
out:
	X509_EXTENSION_free(ext);
	sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
	GENERAL_NAMES_free(sans);
	return rc;
}

static int name_add(X509_NAME *n, const char *field, const char *value, struct kt_err *err)
{
	if (X509_NAME_add_entry_by_txt(n, field, MBSTRING_UTF8, (const unsigned char *)value, -1,
				       -1, 0) != 1)
		return ossl_error(err, KT_ERR_INPUT, "cannot put the name in a request");
	return 0;
}

int kt_x509_req_new(const char *key_pem, size_t key_len, const struct kt_x509_req *req, char **pem,
		    size_t *len, struct kt_err *err)
{
	EVP_PKEY *key = NULL;
	X509_REQ *r = NULL;
	X509_NAME *name = NULL;
	BIO *b = NULL;
	int rc = -1;

	*pem = NULL;
	*len = 0;
	key = key_read(key_pem, key_len, err);
	if (!key)
		goto out;
	r = X509_REQ_new();
	name = X509_NAME_new();
	b = BIO_new(BIO_s_mem());
	if (!r || !name || !b) {
		kt_error(err, "out of memory");
		goto out;
	}
	/* the subject's order is Go's pkix.Name order: O before CN */
	for (const char *const *o = req->orgs; o && *o; o++)
		if (name_add(name, "O", *o, err) < 0)
			goto out;
	if (req->cn && name_add(name, "CN", req->cn, err) < 0)
		goto out;
	if (X509_REQ_set_version(r, 0) != 1 || X509_REQ_set_subject_name(r, name) != 1 ||
	    X509_REQ_set_pubkey(r, key) != 1) {
		ossl_error(err, KT_ERR_FAIL, "cannot make a certificate request");
		goto out;
	}
	if (req_add_sans(r, req->addresses, err) < 0)
		goto out;
	if (X509_REQ_sign(r, key, EVP_sha256()) <= 0 || PEM_write_bio_X509_REQ(b, r) != 1) {
		ossl_error(err, KT_ERR_FAIL, "cannot sign the certificate request");
		goto out;
	}
	rc = bio_take(b, pem, len, err);
out:
	BIO_free(b);
	X509_NAME_free(name);
	X509_REQ_free(r);
	EVP_PKEY_free(key);
	return rc;
}

static int asn1_time(const ASN1_TIME *t, int64_t *out)
{
	struct tm tm = { 0 };

	if (!t || ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	*out = (int64_t)timegm(&tm);
	return 0;
}

static int info_fill(X509 *x, struct kt_x509_info *info, struct kt_err *err)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	long n;
	int rc = -1;

	memset(info, 0, sizeof(*info));
	if (asn1_time(X509_get0_notBefore(x), &info->not_before) < 0 ||
	    asn1_time(X509_get0_notAfter(x), &info->not_after) < 0) {
		ossl_error(err, KT_ERR_INPUT, "the certificate's validity cannot be read");
		goto out;
	}
	if (!hex || !b) {
		ossl_error(err, KT_ERR_INPUT, "the certificate's serial number cannot be read");
		goto out;
	}
	snprintf(info->serial, sizeof(info->serial), "%s", hex);
	if (X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
			       XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) < 0) {
		ossl_error(err, KT_ERR_INPUT, "the certificate's subject cannot be read");
		goto out;
	}
	n = BIO_get_mem_data(b, &data);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(info->subject))
		n = (long)sizeof(info->subject) - 1;
	if (n)
		memcpy(info->subject, data, (size_t)n);
	info->subject[n] = '\0';
	rc = 0;
out:
	BIO_free(b);
	OPENSSL_free(hex);
	BN_free(bn);
	return rc;
}

int kt_x509_cert_info(const char *pem, size_t len, struct kt_x509_info *info, struct kt_err *err)
{
	X509 *x = cert_read(pem, len, err);
	int rc;

	if (!x)
		return -1;
	rc = info_fill(x, info, err);
	X509_free(x);
	return rc;
}

/* 0 when x is key's certificate, -1 with err naming the mismatch */
static int pair_match(X509 *x, EVP_PKEY *key, struct kt_err *err)
{
	if (X509_check_private_key(x, key) == 1)
		return 0;
	ERR_clear_error();
	kt_error_kind(err, KT_ERR_INPUT, "the certificate is not for the private key");
	err->about = KT_ERR_ABOUT_EVENT;
	return -1;
}

/* a certificate and its key read, the certificate's facts in info (if not
 * NULL), and whether the key is the certificate's */
static int pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		struct kt_x509_info *info, struct kt_err *err)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	int rc = -1;

	key = key_read(key_pem, key_len, err);
	if (!key)
		goto out;
	x = cert_read(cert_pem, cert_len, err);
	if (!x || (info && info_fill(x, info, err) < 0))
		goto out;
	rc = pair_match(x, key, err);
out:
	X509_free(x);
	EVP_PKEY_free(key);
	return rc;
}

int kt_x509_pair_load(const char *pem, size_t len, struct kt_x509_info *info, struct kt_err *err)
{
	struct kt_x509_info scratch;

	return pair(pem, len, pem, len, info ? info : &scratch, err);
}

int kt_x509_pair_check(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		       struct kt_err *err)
{
	return pair(cert_pem, cert_len, key_pem, key_len, NULL, err);
}
