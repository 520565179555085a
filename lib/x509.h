/* SPDX-License-Identifier: Apache-2.0 */
/* x509: a node's keys, certificate requests and certificates, in memory, with OpenSSL */
#ifndef KT_X509_H
#define KT_X509_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kt_err.h"

/*
 * Everything here is PEM text in memory: no file is read or written, and no
 * key leaves the process except through the caller.  Key text the caller
 * gets is freed with kt_x509_secret_free, which wipes it first.  Messages
 * never quote key or certificate bytes.  OpenSSL is linked by the programs
 * that call these (node-bootstrap); tls and x509 are the two modules that
 * include its headers.
 */

/* a new ECDSA P-256 private key as PEM (PKCS#8 "PRIVATE KEY") into *pem
 * (the caller's: kt_x509_secret_free); -1 with err when OpenSSL fails */
int kt_x509_key_new(char **pem, size_t *len, struct kt_err *err);

/* wipes and frees key text; NULL is fine */
void kt_x509_secret_free(char *pem, size_t len);

/* what a certificate request names; every pointer borrowed */
struct kt_x509_req {
	const char *cn;		      /* subject CommonName */
	const char *const *orgs;      /* subject Organizations, NULL-ended (may be NULL) */
	const char *const *addresses; /* subjectAltNames, NULL-ended (may be NULL): an IP
				       * (v4 or v6) as an IP SAN, anything else a DNS name */
};

/*
 * A PKCS#10 request (PEM, "CERTIFICATE REQUEST") for key_pem's key, signed
 * with it: the subject, and the addresses as a subjectAltName extension, the
 * only extension (usages go in the CertificateSigningRequest's spec, as the
 * kubelet sends them).  *pem is the caller's (free).  -1 with err
 * (KT_ERR_INPUT) when the key cannot be read or an address is empty.
 */
int kt_x509_req_new(const char *key_pem, size_t key_len, const struct kt_x509_req *req, char **pem,
		    size_t *len, struct kt_err *err);

/* what a certificate says that a node needs */
struct kt_x509_info {
	int64_t not_before; /* seconds since the epoch */
	int64_t not_after;
	char serial[100];  /* the serial number in hex, upper case, no colons */
	char subject[300]; /* one line, RFC 2253 ("CN=system:node:x,O=system:nodes") */
};

/*
 * Reads the first certificate of pem (PEM text, other blocks skipped) into
 * info.  -1 with err (KT_ERR_INPUT, "no certificate" or what OpenSSL said)
 * when there is none or it cannot be read.
 */
int kt_x509_cert_info(const char *pem, size_t len, struct kt_x509_info *info, struct kt_err *err);

/*
 * A key and certificate file as node-bootstrap writes one (the key's PEM
 * block, then the certificate's, as the kubelet's kubelet-client-current.pem
 * holds them) or any text holding one private key and one certificate:
 * reads both, checks that the certificate is for the key and fills info
 * (may be NULL).  Returns 0 when it holds a usable pair; -1 with err kind
 * KT_ERR_INPUT when the text is not (no key, no certificate, unreadable
 * PEM: "corrupt") and with about KT_ERR_ABOUT_EVENT when both read but the
 * certificate is for another key.
 */
int kt_x509_pair_load(const char *pem, size_t len, struct kt_x509_info *info, struct kt_err *err);

/* 0 when cert_pem's first certificate is for key_pem's key, else -1 with err
 * (KT_ERR_INPUT) saying which one cannot be read or that they differ */
int kt_x509_pair_check(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
		       struct kt_err *err);

/* true when s is an IPv4 or IPv6 address as the kubelet's SAN list takes one */
bool kt_x509_is_ip(const char *s);

#endif
