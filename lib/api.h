/* SPDX-License-Identifier: Apache-2.0 */
/* api: requests to an API server over libcurl, blocking or on the event loop */
#ifndef KT_API_H
#define KT_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "kcfg.h"
#include "loop.h"

/*
 * A client talks to the one server its struct kt_kcfg names.  It runs the
 * same requests two ways: kt_api_do blocks (one-shot tools), kt_api_start
 * runs them on a struct kt_loop and calls back (node-ping's fleet); retries
 * with their backoff run on loop timers there.  Both reuse connections.
 *
 * Retries: on 429, on 5xx and on connection errors (refused, reset, dropped,
 * unknown host), for GET, HEAD, PUT and DELETE, and for POST and PATCH only
 * with KT_API_PRECONDITION (a 429 for any verb: the server turned it away
 * unread).  The wait is capped exponential backoff with jitter (100 ms
 * doubling to 5 s), or the server's Retry-After when it sends one (at most
 * 60 s: client-go waits whatever the server says, bounded only by the
 * request's context, so without a timeout it could sleep for a day).
 * At most 10 attempts, and all of them within the request timeout
 * (--request-timeout, default 30 s): a retry that would end after the
 * deadline is not made and the last failure is returned.  A server that
 * nobody answers for (connection refused, host name unknown) is retried
 * only within the call's first 1.5 s, so a one-shot tool fails within 2 s
 * as kubectl does; a loop tries again on its own next round, and a call
 * that must wait for the server says KT_API_PERSIST (a streamed call, a
 * watch, always waits so).  A 409 is never
 * retried.  A 401 with an exec plugin or token file re-reads the credential
 * once and tries again.
 *
 * Errors: a reply outside 2xx gives -1 with err->http_status set, and
 * err->msg naming the request, the status and the API's Status message
 * (`GET /api/v1/nodes/x: 404 Not Found: nodes "x" not found`; without a
 * Status, `GET /api/v1/nodes/x: 503 Service Unavailable`), with control
 * characters in the server's text replaced (kt_plain_text).  err->kind is
 * KT_ERR_NOTFOUND for 404, KT_ERR_CONFLICT for 409, KT_ERR_FAIL otherwise.
 * Transport errors read "METHOD URL: what failed", the URL naming the server,
 * and "(N attempts in 1.2s)" after it when there were retries.  A 2xx reply
 * that is not JSON (when JSON is expected) is an error naming the URL.
 * A reply larger than 64 MiB, or than kt_api_opts.max_reply when that is
 * larger (the tools pass --max-input; counted after decompression), is
 * refused: "response larger than N bytes (see --max-input)".  A bearer
 * token with a control character is never sent.  Tokens and keys never appear in err or in logs.
 *
 * Logging (SPEC's levels): -v 2 one line per attempt (verb, URL, status,
 * ms), -v 4 retries, -v 6 request and response bodies cut at 1 KiB, -v 7
 * headers too (Authorization redacted), -v 9 whole bodies, all through
 * kt_redact.
 */
struct kt_api;
struct kt_api_call;


enum kt_api_flags {
	/* the body carries its own precondition (metadata.resourceVersion, a
	 * JSON patch "test"), so POST/PATCH may be retried safely */
	KT_API_PRECONDITION = 1 << 0,
	/* never retry, whatever the verb */
	KT_API_NO_RETRY = 1 << 1,
	/* the reply need not be JSON: resp->json stays NULL, resp->body is kept */
	KT_API_RAW = 1 << 2,
	/* a server that refuses connections or whose name does not resolve is
	 * retried for the whole request timeout, not only its first 1.5 s: for
	 * a call that has nothing better to do than wait for the server */
	KT_API_PERSIST = 1 << 3,
};

/* called for each complete line of a streamed reply (a watch); line is not
 * NUL-terminated and is borrowed; return -1 to stop the transfer */
typedef int kt_api_line_fn(const char *line, size_t len, void *arg);

/*
 * The framing of a streamed reply as its fragments arrive, whatever their
 * size (the server picks it): scanned is how much of the pending, unfinished
 * line has been searched for its newline already, so each byte is searched
 * once; work counts the bytes searched in all (tests bound it).  Zero it for
 * each reply.
 */
struct kt_api_split {
	size_t scanned;
	uint64_t work;
};

/*
 * Calls fn for each whole non-empty line of buf[0..len) (without its
 * newline), and for an unfinished last one too when flush.  *used is the
 * bytes done with, which the caller drops from the front of buf before it
 * appends the next fragment.  -1 when fn returned < 0.
 */
int kt_api_split_lines(struct kt_api_split *s, const char *buf, size_t len, bool flush,
		       kt_api_line_fn *fn, void *arg, size_t *used);

/* what to send; every pointer is borrowed and only read while starting */
struct kt_api_req {
	const char *method;		/* GET, POST, PUT, PATCH, DELETE or HEAD */
	const char *path;		/* "/api/v1/nodes?watch=1", after the server */
	const char *content_type;	/* NULL: application/json when there is a body */
	const char *body;		/* NULL: no body; copied when the call starts */
	size_t body_len;
	unsigned flags;			/* enum kt_api_flags */
	int64_t timeout_ms;		/* 0: the client's request timeout; -1: none */
	/* optional streaming: when set, the 2xx reply body goes here line by
	 * line instead of into resp->body (no retry once a line was delivered) */
	kt_api_line_fn *on_line;
	void *line_arg;
};

/* what came back; owned by whoever holds it, freed with kt_api_resp_release */
struct kt_api_resp {
	long status;		/* HTTP status of the last attempt; 0 if none answered */
	char *body;		/* the reply body, NUL-terminated; NULL if empty */
	size_t body_len;
	cJSON *json;		/* the body parsed, NULL if empty or with KT_API_RAW */
	int attempts;		/* how many attempts were made */
	int64_t elapsed_ms;	/* from start to the end of the last attempt */
	int64_t date_us;	/* the last reply's Date header (whole seconds, in
				 * microseconds since the epoch); 0 when none */
};

/* frees body and json and zeroes resp; NULL and a zeroed struct are fine */
void kt_api_resp_release(struct kt_api_resp *resp);

/*
 * A client for cfg: a handle on the server's connections, hence open and
 * close.  kt_api_open_kcfg borrows cfg (it must outlive the client; the
 * client refreshes its credentials through kt_kcfg_refresh); kt_api_open
 * loads the configuration from opts itself (kt_kcfg_load) and owns it.
 * Caller closes it with kt_api_close, which cancels the calls still running
 * (their callbacks are not called), before freeing their loop.  NULL with
 * err on failure.
 */
struct kt_api *kt_api_open_kcfg(struct kt_kcfg *cfg, struct kt_err *err);
struct kt_api *kt_api_open(const struct kt_api_opts *opts, struct kt_err *err);
void kt_api_close(struct kt_api *api);

/* the configuration in use; borrowed, lives as long as api */
struct kt_kcfg *kt_api_kcfg(struct kt_api *api);

/*
 * Runs req to the end, retries included, blocking.  resp (zeroed by the
 * caller) is filled whatever the outcome when a reply arrived, so a caller
 * can look at a failed reply's body; the caller releases it.  Returns 0 on
 * a 2xx reply, -1 with err otherwise.
 */
int kt_api_do(struct kt_api *api, const struct kt_api_req *req, struct kt_api_resp *resp,
	      struct kt_err *err);

/*
 * JSON in, JSON out, blocking: body (may be NULL) is sent compact as
 * content_type (NULL: application/json).  Returns the reply document (the
 * caller's: cJSON_Delete), or NULL with err.  flags as in kt_api_req.
 */
cJSON *kt_api_json(struct kt_api *api, const char *method, const char *path,
		   const cJSON *body, const char *content_type, unsigned flags,
		   struct kt_err *err);

/*
 * Called once when a call started with kt_api_start ends.  err is NULL on a
 * 2xx reply, else it says what failed (as for kt_api_do).  resp is the
 * call's: the callback may take resp->json or resp->body (and set the field
 * to NULL); the rest is freed with the call right after the callback
 * returns.  The call handle is invalid from then on.  The callback may start
 * or cancel other calls, but must not free the client or the loop.
 */
typedef void kt_api_done_fn(struct kt_api_call *call, struct kt_api_resp *resp,
			    const struct kt_err *err, void *arg);

/*
 * Starts req on loop and returns at once; fn runs on the loop when the call
 * has ended, retries included.  Many calls may run at once on one loop; they
 * share its connections (HTTP/2 multiplexed where the server offers it).  A
 * fleet caps them with CURLMOPT_MAX_HOST_CONNECTIONS on kt_loop_multi(loop);
 * calls past the cap wait in libcurl's queue, inside their timeout.
 * The returned handle is the client's, valid until fn starts or
 * kt_api_cancel.  NULL with err (and fn never called) when it cannot start.
 */
struct kt_api_call *kt_api_start(struct kt_api *api, struct kt_loop *loop,
				 const struct kt_api_req *req, kt_api_done_fn *fn,
				 void *arg, struct kt_err *err);

/* stops a call still running; fn is not called; NULL is fine */
void kt_api_cancel(struct kt_api_call *call);

/* why libcurl, opened on first use (curl_load.c), could not be; NULL when it was */
const char *kt_api_curl_error(void);

#endif
