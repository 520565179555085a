/* SPDX-License-Identifier: Apache-2.0 */
/* nodestream: node status sends on the loop, the latest desired state per node winning */
#ifndef KT_NODESTREAM_H
#define KT_NODESTREAM_H

#include <cJSON.h>

#include "kt_err.h"
#include "nodesend.h"

/*
 * Desired nodes keep coming while sends are in flight.  Each node has one
 * send at a time (kt_nodesend: GET, compute, PATCH, again on 409) and one
 * pending slot: a document that arrives meanwhile replaces whatever waits
 * there, so the writer is never blocked and the node gets the latest state
 * next.  After a 409 the newest waiting state is the one computed again.
 */

struct kt_api;
struct kt_loop;
struct kt_schema;
struct kt_nodestream;

/* a send of node name ended; s (borrowed) says how: result, patch, node, err */
typedef void kt_nodestream_fn(const char *name, const struct kt_nodesend *s, void *arg);

/*
 * api, loop, schema and remove (each send's kt_nodesend.remove: NULL or a
 * NULL-terminated list) are borrowed and must outlive the stream; flags are
 * enum kt_nodesend_flags.  NULL with err when out of memory.
 */
struct kt_nodestream *kt_nodestream_new(struct kt_api *api, struct kt_loop *loop,
					const struct kt_schema *schema, unsigned flags,
					const char *const *remove, kt_nodestream_fn *done,
					void *arg, struct kt_err *err);

/*
 * desired (taken, freed even on failure) for node name (copied; a checked
 * node name): sent now when the node is idle, else it waits, replacing any
 * state waiting before it.  -1 with err when out of memory.
 */
int kt_nodestream_push(struct kt_nodestream *ns, const char *name, cJSON *desired,
		       struct kt_err *err);

/* cancels what is in flight and frees it all; NULL is fine */
void kt_nodestream_free(struct kt_nodestream *ns);

#endif
