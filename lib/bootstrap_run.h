/* SPDX-License-Identifier: Apache-2.0 */
/* bootstrap_run: node-bootstrap's run: CSRs posted and watched, files written, renewals */
#ifndef KT_BOOTSTRAP_RUN_H
#define KT_BOOTSTRAP_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "bootstrap.h"
#include "kcfg.h"
#include "kt_err.h"
#include "x509.h"

enum kt_boot_event_type {
	KT_BOOT_REUSED,	 /* the certificate in place is used as it is */
	KT_BOOT_ISSUED,	 /* a new certificate is in place */
	KT_BOOT_PENDING, /* a CSR waits for someone to approve it (said once per CSR) */
	KT_BOOT_RETRY,	 /* a renewal failed (msg says why); it is tried again at retry_at */
};

/* what a run reports; every pointer lives for the call only */
struct kt_boot_event {
	enum kt_boot_event_type type;
	enum kt_boot_kind kind;
	const char *file;		 /* the key and certificate file */
	const char *csr;		 /* the CSR's name; NULL for REUSED */
	const struct kt_x509_info *info; /* REUSED, ISSUED: the certificate */
	int64_t renew_at;		 /* with --rotate: when it is renewed; else 0 */
	int64_t retry_at;		 /* RETRY */
	const char *msg;		 /* RETRY */
};

typedef void kt_boot_report_fn(const struct kt_boot_event *ev, void *arg);

struct kt_boot_opts {
	const char *bootstrap_kubeconfig; /* the bootstrap credentials */
	const char *kubeconfig;		  /* the kubeconfig to write */
	const char *cert_dir;		  /* where the key and certificate files go */
	const char *node;
	const char *const *addresses; /* --serving: the node's addresses, NULL-ended */
	bool serving;		      /* the serving certificate too */
	bool rotate;		      /* stay and renew */
	int64_t wait_ms;	      /* the longest wait for one certificate; 0: none */
	struct kt_api_opts api;	      /* program, timeouts; kubeconfig is set here */
	kt_boot_report_fn *report;
	void *report_arg;
};

/*
 * The kubelet's TLS bootstrap (SPEC section 13).  The certificate directory
 * is made (0700) when missing and refused (KT_ERR_INPUT) when its group or
 * others may read or enter it.  For each certificate (the client one, and
 * the serving one with serving): a file there holding a key and a valid
 * certificate for it, with more than 10% of its lifetime left, is used as
 * it is (REUSED); one that cannot be read is replaced, with a warning; one
 * whose certificate is for another key is refused (KT_ERR_INPUT), never
 * overwritten.  Else a new ECDSA P-256 key, a CSR posted (the client one
 * with the bootstrap credentials, or the node's own while its certificate
 * is valid; the serving one with the node's), a watch on it until it has a
 * certificate for the key, then the key and certificate file replaced
 * atomically (0600) and, for the client certificate, the kubeconfig too.
 * With rotate it then runs until SIGTERM or SIGINT (returning 0), renewing
 * each certificate at kt_boot_renew_at; a renewal that fails is tried again
 * with backoff (RETRY) while the certificate in place lasts.
 *
 * -1 with err: a denied or failed CSR, one deleted while waited for, one
 * whose certificate is not for its key, wait_ms passed, credentials the
 * server refuses (naming the kubeconfig, never the token), a file that
 * cannot be written.  Nothing is left half written.
 */
int kt_boot_run(const struct kt_boot_opts *o, struct kt_err *err);

#endif
