/* SPDX-License-Identifier: Apache-2.0 */
/* lease: a node's Lease in kube-node-lease and its create/renew/repair rules */
#ifndef KT_LEASE_H
#define KT_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "core.h"
#include "kt_err.h"

/*
 * The heartbeat of a node is a coordination.k8s.io/v1 Lease named after the
 * node in the kube-node-lease namespace.  This module holds the rules for
 * it as data in, requests out: it says which request to send next, the
 * caller sends it (blocking or on the loop) and hands the reply back.  It
 * does no I/O and reads no clock; the times come in as arguments.
 *
 * One renewal goes:
 *   GET the node (for its uid; a node that does not exist ends the renewal
 *   as SKIPPED with no_node set: no lease is created or renewed for it),
 *   PUT the lease from the last copy the server returned, when there is one,
 *   else GET the lease, then POST it when it is missing or PUT it when not.
 * The PUT carries the lease's resourceVersion (an optimistic update); a 409
 * re-reads the lease and tries again, up to KT_LEASE_MAX_TRIES writes.
 * Other failures worth retrying (no reply, 429, 5xx) wait 200 ms, doubling
 * to a 7 s cap, one wait per retry, or longer when a Status reply asks for
 * it (details.retryAfterSeconds, sent with Retry-After); other replies end
 * the renewal.  A server that gives no reply at all (refused, unknown host,
 * dropped) is tried again only within KT_LEASE_NOREPLY_MS of the first such
 * failure, so a one-shot renewal against a server that is down fails within
 * 2 s; a loop tries again at its next renewal.  The message of a renewal
 * that failed without a reply says how many requests it made.
 *
 * Differences from virtual-kubelet, on purpose: a renewal asserts
 * holderIdentity and leaseDurationSeconds as the kubelet does, not only
 * renewTime; an owner reference to the node whose uid is stale (the node
 * was deleted and created again) is rewritten; the backoff waits once per
 * step (virtual-kubelet waits twice).
 */

#define KT_LEASE_NAMESPACE "kube-node-lease"
#define KT_LEASE_COLLECTION "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
#define KT_LEASE_DURATION_DEFAULT 40
#define KT_LEASE_MAX_TRIES 5
#define KT_LEASE_BACKOFF_FIRST_MS 200
#define KT_LEASE_BACKOFF_MAX_MS 7000
#define KT_LEASE_NOREPLY_MS 1500
#define KT_LEASE_NAME_MAX KT_NAME_MAX

/* what the lease should say; strings borrowed */
struct kt_lease_spec {
	const char *node;	/* the node's name, also the lease's */
	const char *holder;	/* holderIdentity; NULL means node */
	int64_t duration_s;	/* leaseDurationSeconds */
};

/* bits of *changed from kt_lease_renewed */
enum kt_lease_changes {
	KT_LEASE_OWNER_ADDED = 1 << 0,		/* there was no owner reference to the node */
	KT_LEASE_OWNER_REPAIRED = 1 << 1,	/* its uid was stale and was rewritten */
};

/*
 * A new Lease document for spec: apiVersion, kind, metadata (name, namespace and,
 * when node_uid is not NULL, the owner reference to the node), spec
 * (holderIdentity, leaseDurationSeconds, renewTime = now_us with six
 * fractional digits).  Caller owns the result (cJSON_Delete); NULL with err
 * when out of memory.
 */
cJSON *kt_lease_doc_new(const struct kt_lease_spec *spec, const char *node_uid, int64_t now_us,
		       struct kt_err *err);

/*
 * base (borrowed, a Lease as the server returned it, resourceVersion kept)
 * renewed: a copy with spec's holderIdentity, leaseDurationSeconds and
 * renewTime = now_us.  When node_uid is not NULL the owner reference to the
 * node (apiVersion v1, kind Node, the node's name) is added if there is
 * none and its uid rewritten if it differs; other owner references stay as
 * they are.  *changed (may be NULL) gets enum kt_lease_changes bits.
 * Caller owns the result (cJSON_Delete); NULL with err (KT_ERR_INPUT) when
 * base is not an object, or out of memory.
 */
cJSON *kt_lease_renewed(const cJSON *base, const struct kt_lease_spec *spec,
			const char *node_uid, int64_t now_us, unsigned *changed,
			struct kt_err *err);

/* the step a renewal is at */
enum kt_lease_step {
	KT_LEASE_GET_NODE,
	KT_LEASE_GET,
	KT_LEASE_CREATE,
	KT_LEASE_UPDATE,
};

/* how the last renewal ended */
enum kt_lease_result {
	KT_LEASE_NONE,		/* no renewal ended yet, or one is running */
	KT_LEASE_RENEWED,
	KT_LEASE_CREATED,
	KT_LEASE_SKIPPED,	/* the node does not exist (no_node), or set by
				 * the caller: the health check failed */
	KT_LEASE_FAILED,
};

/* what the caller does after kt_lease_reply */
enum kt_lease_next {
	KT_LEASE_SEND,		/* send kt_lease_request's request now */
	KT_LEASE_WAIT,		/* send it after *delay_ms */
	KT_LEASE_DONE,		/* the renewal ended: see result */
};

/* a request to send; every pointer lives in the struct kt_lease until its next call */
struct kt_lease_req {
	const char *method;
	const char *path;
	const char *body;	/* NULL for GET */
	size_t body_len;
};

/*
 * One node's heartbeat.  kt_lease_init borrows spec's strings (they must
 * outlive it); kt_lease_release frees what it holds.  Between renewals it
 * keeps the last lease the server returned (so the next renewal can PUT
 * without a GET) and the node's uid.  After a renewal ends, result,
 * renew_time (for RENEWED/CREATED), changed and err (for FAILED) say how.
 */
struct kt_lease {
	struct kt_lease_spec spec;
	cJSON *latest;			/* the last lease the server returned */
	char *node_uid;			/* from the last GET of the node, NULL if none */
	bool node_read;			/* node_uid was ever set from a reply */

	enum kt_lease_step step;
	int tries;			/* writes (POST/PUT) in this renewal */
	int attempts;			/* requests in this renewal */
	struct kt_backoff backoff;	/* 200 ms doubling to 7 s, no jitter */
	int64_t deadline_ms;		/* give up waits past this; 0: never */
	int64_t noreply_ms;		/* when this renewal first got no reply; -1 */

	enum kt_lease_result result;
	char renew_time[40];		/* the renewTime written */
	unsigned changed;		/* enum kt_lease_changes of the last write */
	bool no_node;			/* SKIPPED because the node does not exist */
	struct kt_err err;

	char path[sizeof(KT_LEASE_COLLECTION) + KT_LEASE_NAME_MAX + 16];
	char *body;
};

void kt_lease_init(struct kt_lease *l, const struct kt_lease_spec *spec);
void kt_lease_release(struct kt_lease *l);

/*
 * Starts a renewal.  Waits that would end after deadline_ms (a monotonic
 * time; 0 for none) are not made: the renewal fails with the last error
 * instead.  Keeps the backoff of a renewal that failed by giving up a wait,
 * so an outage keeps backing off across renewals until a reply succeeds.
 * With read_node false the renewal starts from the node uid already known
 * (from an earlier renewal or kt_lease_set_node_uid) and skips the GET of
 * the node; the first renewal reads the node whatever read_node says, and
 * so does one after the node was found missing or without a uid.
 */
void kt_lease_begin(struct kt_lease *l, int64_t deadline_ms, bool read_node);

/*
 * Takes lease (a Lease as the server returned it, such as an item of a
 * LIST, which has no apiVersion and kind: they are added) as the copy the
 * next renewal PUTs from, so it need not GET the lease first.  Frees lease
 * even on failure; -1 when out of memory.
 */
int kt_lease_take_latest(struct kt_lease *l, cJSON *lease);

/*
 * The node's uid as read elsewhere (a status refresh), copied; NULL for a
 * node that does not exist.  The next write uses it.  -1 when out of memory.
 */
int kt_lease_set_node_uid(struct kt_lease *l, const char *uid);

/*
 * The request for the current step, built at wall time now_us (the
 * renewTime of a write).  -1 with err when out of memory.
 */
int kt_lease_request(struct kt_lease *l, int64_t now_us, struct kt_lease_req *req,
		     struct kt_err *err);

/* a reply to the request last built */
struct kt_lease_reply {
	long status;		/* HTTP status; 0 when none came */
	const cJSON *json;	/* the body, parsed; NULL if none (borrowed) */
	const char *error;	/* what failed when status is 0 (borrowed) */
	cJSON **own;		/* NULL, or where the caller holds json: a renewal
				 * that keeps it takes it from there (setting *own
				 * to NULL) instead of copying it */
};

/*
 * Feeds the reply to the request last built, at monotonic time now_ms, and
 * says what to do next.  For KT_LEASE_WAIT, *delay_ms is the wait.  After
 * KT_LEASE_DONE the renewal's outcome is in result, renew_time, changed and
 * err (err->msg names the object and the HTTP status:
 * "lease/vk-1 (kube-node-lease): 500 Internal Server Error").
 */
enum kt_lease_next kt_lease_reply(struct kt_lease *l, const struct kt_lease_reply *reply,
				  int64_t now_ms, int64_t *delay_ms);

/* the wait a retry would use next (backoff's peek) */
int64_t kt_lease_next_backoff(const struct kt_lease *l);

/* "renewed", "created", "skipped", "failed", "" */
const char *kt_lease_result_name(enum kt_lease_result r);

#endif
