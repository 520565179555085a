/* SPDX-License-Identifier: Apache-2.0 */
/* fleet: many nodes' Leases (and condition heartbeats) kept renewed on one loop */
#ifndef KT_FLEET_H
#define KT_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "lease.h"

/*
 * node-ping's engine: for each node a kt_lease renewal, gated on a health
 * check, and (looping) a kt_nodesend heartbeat refresh of its conditions,
 * all on one kt_loop over one kt_api client.
 *
 * - Renewals: --once all at once, else spread over the first interval and
 *   then every interval; an outage backs off (never longer than the
 *   interval).  From KT_FLEET_LIST_MIN nodes on, a LIST of the leases (in
 *   pages) replaces a GET each for the first renewals.
 * - State: between renewals a node holds its last Lease as text and a few
 *   fields; a kt_lease (and a kt_nodesend) exists only while one runs.
 * - Requests: at most KT_FLEET_MAX_INFLIGHT run; the rest wait in order,
 *   holding no transfer and no protocol state, lease requests before status
 *   ones.  The client
 *   keeps at most KT_FLEET_MAX_CONNS connections per host.
 * - The check: /bin/sh -c CMD through kt_spawn (its own process group,
 *   stdin from /dev/null, stdout to stderr, the group killed after its
 *   timeout); one
 *   at a time, its result shared by every node and good for half an
 *   interval.  A failure skips the renewal.
 *
 * The fleet prints nothing: each ended renewal goes to hooks->renewed, and
 * what the user should hear about to hooks->trouble.
 */

#define KT_FLEET_MAX_CONNS 32L
#define KT_FLEET_MAX_INFLIGHT 32
#define KT_FLEET_LIST_MIN 8

struct kt_api;
struct kt_loop;

struct kt_fleet_opts {
	bool once;			/* renew each node once, then stop the loop */
	int64_t interval_ms;		/* looping: the renew interval */
	int64_t duration_s;		/* leaseDurationSeconds */
	const char *holder;		/* holderIdentity; NULL: the node name */
	const char *check_cmd;		/* NULL: no check */
	int64_t check_timeout_ms;
	int64_t status_ms;		/* looping: the status refresh interval; 0: none */
};

struct kt_fleet_hooks {
	/* a renewal of node ended; l says how (result, renew_time, changed,
	 * no_node, err) */
	void (*renewed)(const char *node, const struct kt_lease *l, void *arg);
	/* a failure to tell the user: about node (a failed status refresh),
	 * or with node NULL about the fleet (a failed check, once per check) */
	void (*trouble)(const char *node, const char *msg, void *arg);
	void *arg;
};

struct kt_fleet;

/*
 * A fleet for names (borrowed, each a checked node name, n of them, sorted
 * bytewise and without duplicates), opts and hooks (copied; the strings
 * borrowed).  api and loop are borrowed and must outlive it.  NULL with err
 * when out of memory.
 */
struct kt_fleet *kt_fleet_new(struct kt_api *api, struct kt_loop *loop, char *const *names,
			      size_t n, const struct kt_fleet_opts *opts,
			      const struct kt_fleet_hooks *hooks, struct kt_err *err);

/* schedules every node's first renewal (and refresh); -1 with err */
int kt_fleet_start(struct kt_fleet *f, struct kt_err *err);

/*
 * Stops at once: no more reports, a running check killed, the loop
 * stopped.  With once, renewals that had not ended count as failed.
 */
void kt_fleet_stop(struct kt_fleet *f);

/*
 * After the loop returned: 0, with *failed (may be NULL) true when some
 * renewal of a once fleet did not succeed; -1 with err when the fleet
 * itself broke (out of memory on the loop).
 */
int kt_fleet_result(const struct kt_fleet *f, bool *failed, struct kt_err *err);

/* frees the fleet, killing and reaping a check still running; NULL is fine */
void kt_fleet_free(struct kt_fleet *f);

/*
 * A renewal of name's Lease as node-ping -o json prints it: node, result,
 * renewTime (when one was written), error (when it failed or was skipped).
 * Caller owns (cJSON_Delete); NULL when out of memory.
 */
cJSON *kt_fleet_line(const char *name, const struct kt_lease *l);

#endif
