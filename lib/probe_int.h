/* SPDX-License-Identifier: Apache-2.0 */
/* probe_int: what the probe handlers share with probe.c; not for tools */
#ifndef KT_PROBE_INT_H
#define KT_PROBE_INT_H

#include "probe.h"

struct kt_probe_call {
	struct kt_loop *loop;
	const struct kt_probe_spec *spec;	/* borrowed */
	char *host;				/* owned: the spec's host or the default */
	kt_probe_done_fn *fn;
	void *arg;
	int tries;
	int64_t timeout_ms;
	void *attempt;				/* the handler's state, NULL between tries */
	struct kt_timer *soon;			/* a report deferred to the loop */
	char *soon_output;			/* owned while soon is pending */
	enum kt_probe_result soon_result;
	bool soon_error;
};

/*
 * Each handler starts one attempt and stores its state in c->attempt.  When
 * it ends, the handler detaches and frees its state (c->attempt = NULL) and
 * calls kt_probe_attempt_done exactly once; output is borrowed for the call,
 * and c must not be touched afterwards.  A start that returns -1 (err filled)
 * counts as an attempt that ended in an error.  cancel frees the state
 * (attempt, which the caller has detached from c) without reporting.
 */
int kt_probe_http_start(struct kt_probe_call *c, struct kt_err *err);
void kt_probe_http_cancel(struct kt_loop *loop, void *attempt);
int kt_probe_tcp_start(struct kt_probe_call *c, struct kt_err *err);
void kt_probe_tcp_cancel(struct kt_loop *loop, void *attempt);
int kt_probe_exec_start(struct kt_probe_call *c, struct kt_err *err);
void kt_probe_exec_cancel(struct kt_loop *loop, void *attempt);
int kt_probe_grpc_start(struct kt_probe_call *c, struct kt_err *err);
void kt_probe_grpc_cancel(struct kt_loop *loop, void *attempt);

/* errored: the attempt produced an error, not a result (retried, then UNKNOWN) */
void kt_probe_attempt_done(struct kt_probe_call *c, enum kt_probe_result r, bool errored,
			   const char *output, size_t len);
/* the same, delivered from a 0 ms timer (for a handler that must not report
 * from inside its start); output is copied.  0, or -1 on allocation failure */
int kt_probe_attempt_done_soon(struct kt_probe_call *c, enum kt_probe_result r, bool errored,
			       const char *output);

/* a grpc-timeout header value for ms: at most 8 digits, in the finest unit
 * (n u m S M H) that fits, rounded up, as grpc-go encodes it */
void kt_probe_grpc_timeout(char *buf, size_t size, int64_t ms);

#endif
