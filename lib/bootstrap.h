/* SPDX-License-Identifier: Apache-2.0 */
/* bootstrap: the kubelet's TLS bootstrap as objects and decisions (node-bootstrap) */
#ifndef KT_BOOTSTRAP_H
#define KT_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "x509.h"

/*
 * What node-bootstrap sends and how it reads the answers, with no I/O and
 * no clock: the CertificateSigningRequest for a certificate, the state of
 * one as the API server reports it, when a certificate is renewed, and the
 * kubeconfig that uses the result.  bootstrap_run.c drives it.
 */

enum kt_boot_kind {
	KT_BOOT_CLIENT,	 /* the node's client certificate (to the API server) */
	KT_BOOT_SERVING, /* its serving certificate (kubelet-serve) */
};

#define KT_BOOT_SIGNER_CLIENT  "kubernetes.io/kube-apiserver-client-kubelet"
#define KT_BOOT_SIGNER_SERVING "kubernetes.io/kubelet-serving"
/* the files in the certificate directory, each the key then the certificate
 * (PEM), as the kubelet's kubelet-client-current.pem holds them */
#define KT_BOOT_CLIENT_FILE  "kubelet-client-current.pem"
#define KT_BOOT_SERVING_FILE "kubelet-server-current.pem"
#define KT_BOOT_CSR_PATH     "/apis/certificates.k8s.io/v1/certificatesigningrequests"

/* "client" or "serving"; static */
const char *kt_boot_kind_name(enum kt_boot_kind kind);

/*
 * What the kubelet asks for: subject CN=system:node:NODE, O=system:nodes;
 * for serving, addresses (NULL-ended, at least one IP) as SANs.  req gets
 * borrowed pointers into node_cn (a buffer of at least KT_NAME_MAX + 13
 * bytes the caller keeps while req is used) and addresses.
 */
void kt_boot_x509_req(enum kt_boot_kind kind, const char *node, const char *const *addresses,
		      char *node_cn, size_t cn_size, struct kt_x509_req *req);

/*
 * The CertificateSigningRequest to create for request_pem (a PKCS#10 request
 * in PEM): generateName "csr-", the kind's signer and usages (an ECDSA
 * key: digital signature and client auth, or digital signature and server
 * auth, as the kubelet asks).  Caller owns (cJSON_Delete); NULL when out of
 * memory.
 */
cJSON *kt_boot_csr_new(enum kt_boot_kind kind, const char *request_pem, size_t len);

/* where a CertificateSigningRequest is */
enum kt_boot_csr_state {
	KT_BOOT_CSR_PENDING,  /* neither approved nor denied */
	KT_BOOT_CSR_APPROVED, /* approved, no certificate yet */
	KT_BOOT_CSR_ISSUED,   /* status.certificate is there */
	KT_BOOT_CSR_DENIED,   /* a Denied condition */
	KT_BOOT_CSR_FAILED,   /* a Failed condition (the signer gave up) */
	KT_BOOT_CSR_INVALID,  /* status.certificate is not base64 PEM */
};

/*
 * The state of csr.  For ISSUED, *cert is status.certificate decoded (PEM,
 * the caller's: free) with *len its length.  For DENIED and FAILED, why
 * (size > 0) gets "REASON: MESSAGE" of that condition, made safe for a
 * terminal (kt_plain_text).  A Denied or Failed condition wins over an
 * Approved one and over a certificate, as the kubelet reads them.
 */
enum kt_boot_csr_state kt_boot_csr_state(const cJSON *csr, char **cert, size_t *len, char *why,
					 size_t size);

/*
 * When to renew a certificate valid from not_before to not_after: at a
 * point from 70% to 90% of its lifetime, frac (in [0, 1)) picking where, as
 * the kubelet's certificate manager jitters it.  Seconds since the epoch.
 */
int64_t kt_boot_renew_at(int64_t not_before, int64_t not_after, double frac);

/*
 * true when a certificate can be used as it is at now: valid already and
 * with more than 10% of its lifetime left.
 */
bool kt_boot_reusable(const struct kt_x509_info *info, int64_t now);

/* the cluster half of the kubeconfig written for the node; every pointer borrowed */
struct kt_boot_cluster {
	const char *server;
	const char *ca_pem; /* NULL: the system's CAs */
	size_t ca_len;
	const char *tls_server_name; /* NULL: none */
	bool insecure;
};

/*
 * A kubeconfig (context, cluster and user "default-auth", as the kubelet
 * names them) for cluster with the CA embedded and the user's client
 * certificate and key both pem_file (absolute).  Caller owns (cJSON_Delete);
 * NULL when out of memory.
 */
cJSON *kt_boot_kubeconfig(const struct kt_boot_cluster *cluster, const char *pem_file);

#endif
