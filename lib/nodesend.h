/* SPDX-License-Identifier: Apache-2.0 */
/* nodesend: sending a node's three-way status patch, as requests out and replies in */
#ifndef KT_NODESEND_H
#define KT_NODESEND_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * The node-status protocol of virtual-kubelet's node controller, once, in
 * the shape of lease.h: this module says which request to send next, the
 * caller sends it (blocking or on the loop) and hands the reply back.  It
 * does no I/O and reads no clock; the wall time comes in with each reply.
 *
 * One send goes:
 *   GET nodes/NAME; when it is missing and KT_NODESEND_REGISTER is set,
 *   POST nodes with the registration built from desired (once per send: a
 *   409 there means someone else registered it, so the node is read again);
 *   compute the three-way patch (nodestatus.h) against the node read;
 *   PATCH nodes/NAME/status with it, unless it would change nothing (then
 *   the node read is the result);
 *   on a 409 read the node again and compute again, up to
 *   KT_NODESEND_MAX_WRITES PATCHes in all.
 * Other failures end the send: the API client has made its retries.
 */

#define KT_NODESEND_MAX_WRITES 5
#define KT_NODESEND_NAME_MAX 253
#define KT_NODESEND_PATCH_TYPE "application/strategic-merge-patch+json"

struct kt_schema;

enum kt_nodesend_flags {
	KT_NODESEND_HEARTBEAT = 1 << 0,	/* stamp desired (KT_NODESTATUS_HEARTBEAT) */
	KT_NODESEND_REGISTER = 1 << 1,	/* POST a missing node, built from desired */
	KT_NODESEND_READ = 1 << 2,	/* only GET the node: current is the result */
	/* no desired: refresh the heartbeats of what was last applied
	 * (kt_nodestatus_refresh); a missing node ends the send as ABSENT */
	KT_NODESEND_REFRESH = 1 << 3,
};

enum kt_nodesend_step {
	KT_NODESEND_GET,
	KT_NODESEND_CREATE,
	KT_NODESEND_PATCH,
};

/* how the last send ended */
enum kt_nodesend_result {
	KT_NODESEND_NONE,	/* no send ended yet, or one is running */
	KT_NODESEND_PATCHED,	/* node is the server's reply to the PATCH */
	KT_NODESEND_UNCHANGED,	/* the patch changed nothing: node is the one read */
	KT_NODESEND_READ_DONE,	/* KT_NODESEND_READ: current is the node read */
	KT_NODESEND_ABSENT,	/* KT_NODESEND_REFRESH: the node does not exist */
	KT_NODESEND_FAILED,	/* err says why */
};

enum kt_nodesend_next {
	KT_NODESEND_SEND,	/* send kt_nodesend_request's request now */
	KT_NODESEND_DONE,	/* the send ended: see result */
};

/* a request to send; the pointers live in the struct kt_nodesend until its next call */
struct kt_nodesend_req {
	const char *method;
	const char *path;
	const char *content_type;	/* NULL: application/json with a body */
	const char *body;		/* NULL for GET */
	size_t body_len;
};

/* a reply to the request last built */
struct kt_nodesend_reply {
	const cJSON *json;		/* the body, parsed, on success (borrowed) */
	const struct kt_err *err;	/* NULL on success, else what failed (borrowed) */
};

/*
 * One node's send.  kt_nodesend_init borrows name and schema (they must
 * outlive it); kt_nodesend_release frees what it holds.  After a send ends,
 * result says how, with patch (the last patch computed, NULL if none),
 * node (PATCHED, UNCHANGED), current (the node last read) and err (FAILED).
 */
struct kt_nodesend {
	const char *name;
	const struct kt_schema *schema;	/* the Node schema */
	unsigned flags;			/* enum kt_nodesend_flags */
	/* conditions to delete (kt_nodestatus_remove_conditions): NULL or a
	 * NULL-terminated list, borrowed, set after kt_nodesend_init */
	const char *const *remove;

	cJSON *desired;			/* what the node should say */
	enum kt_nodesend_step step;
	int writes;			/* PATCHes in this send */
	int requests;			/* requests in this send */
	bool registered;		/* the POST was made in this send */
	bool conflict;			/* the last reply was a 409 to the PATCH */

	enum kt_nodesend_result result;
	cJSON *patch;
	cJSON *node;
	cJSON *current;
	struct kt_err err;

	char path[sizeof("/api/v1/nodes//status") + KT_NODESEND_NAME_MAX];
	char *body;
};

void kt_nodesend_init(struct kt_nodesend *s, const char *name,
		      const struct kt_schema *schema, unsigned flags);
void kt_nodesend_release(struct kt_nodesend *s);

/*
 * Starts a send of desired (taken, freed even on failure; NULL with
 * KT_NODESEND_REFRESH).  Forgets the outcome of the last send.
 */
void kt_nodesend_begin(struct kt_nodesend *s, cJSON *desired);

/*
 * Takes desired (freed even on failure) in place of the one being sent, for
 * the computations still to come: a stream's newer state after a conflict.
 */
void kt_nodesend_replace(struct kt_nodesend *s, cJSON *desired);

/* the request for the current step; -1 with err when out of memory */
int kt_nodesend_request(struct kt_nodesend *s, struct kt_nodesend_req *req,
			struct kt_err *err);

/*
 * Feeds the reply to the request last built, at wall time now_us (the time
 * heartbeats are stamped with), and says what to do next.
 */
enum kt_nodesend_next kt_nodesend_reply(struct kt_nodesend *s,
					const struct kt_nodesend_reply *reply, int64_t now_us);

/*
 * The node desired (a node's desired status) is for: name when given, else
 * desired's metadata.name, else current's (current may be NULL), checked as
 * a node name (kt_node_name_check).  Borrowed from where it was found;
 * NULL with err (KT_ERR_INPUT) when desired is no object or names no valid
 * node.
 */
const char *kt_nodesend_target(const cJSON *desired, const char *name, const cJSON *current,
			       struct kt_err *err);

/*
 * The patch that brings current (borrowed) to desired, as node-patch3way
 * prints it, deleting the conditions in remove (NULL or NULL-terminated;
 * kt_nodestatus_remove_conditions); flags are enum kt_nodesend_flags (only
 * HEARTBEAT counts).
 * With node not NULL, also current with the patch applied.  Each output is
 * the caller's (cJSON_Delete).
 */
int kt_nodesend_compute(const cJSON *desired, const cJSON *current,
			const struct kt_schema *schema, unsigned flags,
			const char *const *remove, int64_t now_us, cJSON **patch, cJSON **node,
			struct kt_err *err);

/*
 * What POST /api/v1/nodes gets for a registration: apiVersion, kind, name,
 * desired's labels, annotations (without the stash) and spec.  Caller owns
 * it (cJSON_Delete); NULL when out of memory.
 */
cJSON *kt_nodesend_registration(const cJSON *desired, const char *name);

struct kt_api;

/*
 * Drives a send that kt_nodesend_begin started to its end with blocking
 * calls (nodesend_run.c, the one part that does I/O).  0, or -1 when it
 * failed (s->err says why).
 */
int kt_nodesend_run(struct kt_nodesend *s, struct kt_api *api);

/* the API request for nr, blocking or on the loop; pointers borrowed from nr */
struct kt_api_req;
void kt_nodesend_api_req(const struct kt_nodesend_req *nr, struct kt_api_req *req);

#endif
