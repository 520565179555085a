/* SPDX-License-Identifier: Apache-2.0 */
/* nodestatus: virtual-kubelet's stash annotations and the three-way node status patch */
#ifndef KT_NODESTATUS_H
#define KT_NODESTATUS_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * The node controller of virtual-kubelet keeps what it last wrote in two
 * annotations on the node and patches the node's status three ways from
 * them.  This module computes the same patch, with three fixes:
 *
 *  - a label, annotation, capacity/allocatable key, condition or address set
 *    that DESIRED empties is deleted element by element, never as a whole
 *    field, so what others wrote next to it survives;
 *  - the zero values Go writes into the node-status stash (empty nodeInfo
 *    strings, daemonEndpoints port 0, null times) read as unset, so taking
 *    over a node stashed by virtual-kubelet deletes nothing; an empty string
 *    a user set elsewhere (a label value) stays a value;
 *  - desired state only ever comes from DESIRED; CURRENT supplies name,
 *    namespace and uid, and the times a desired condition leaves out: an
 *    unchanged condition keeps CURRENT's lastTransitionTime, a new or changed
 *    one gets now; lastHeartbeatTime is now with KT_NODESTATUS_HEARTBEAT,
 *    else CURRENT's, so a desired status without times never erases the
 *    server's (virtual-kubelet sends them null).
 *
 * Pure: no I/O, no clock (the time comes in as an argument), no logging.
 * Every const cJSON * is borrowed; every cJSON ** output is the caller's
 * (cJSON_Delete).  Failures return -1 with err: KT_ERR_INPUT for a DESIRED
 * or CURRENT that is not a node, or a stash annotation that is not JSON
 * (the message names the annotation); the diff engine's errors pass through.
 */

#define KT_NODESTATUS_ANN_STATUS "virtual-kubelet.io/last-applied-node-status"
#define KT_NODESTATUS_ANN_META "virtual-kubelet.io/last-applied-object-meta"

struct kt_schema;

enum kt_nodestatus_flags {
	/* stamp lastHeartbeatTime = now on every desired condition, and
	 * lastTransitionTime = now on a condition that is new or whose status
	 * differs from CURRENT's (unless DESIRED gives one); an unchanged
	 * condition without one keeps CURRENT's */
	KT_NODESTATUS_HEARTBEAT = 1 << 0,
};

/*
 * DESIRED with heartbeat stamps, as described for KT_NODESTATUS_HEARTBEAT.
 * now_us is the wall time in microseconds (written in whole seconds).
 * current may be NULL (a node not yet registered).  *out is the caller's.
 */
int kt_nodestatus_stamp(const cJSON *desired, const cJSON *current, int64_t now_us,
			cJSON **out, struct kt_err *err);

/*
 * The node-status annotation's value for status (a NodeStatus object, or
 * NULL for none), in virtual-kubelet's layout: Go struct field order, map
 * keys sorted, zero values written (daemonEndpoints port 0, the ten nodeInfo
 * strings, null times), omitempty fields left out; members Go does not know
 * follow in input order.  Caller frees with free().
 */
char *kt_nodestatus_status_text(const cJSON *status, struct kt_err *err);

/*
 * The object-meta annotation's value: name, namespace and uid from current,
 * labels and annotations (without the two stash keys) from desired, as Go's
 * json.Marshal of ObjectMeta writes them.  Caller frees with free().
 */
char *kt_nodestatus_meta_text(const cJSON *desired, const cJSON *current, struct kt_err *err);

/*
 * The node last applied, rebuilt from CURRENT's two annotations, with the
 * stash's Go zero values removed.  When either annotation is missing this is
 * the empty node {} (upgrade or foreign node: nothing will be deleted).
 */
int kt_nodestatus_original(const cJSON *current, cJSON **original, struct kt_err *err);

/*
 * The node as it should be: {"metadata":{name, namespace, uid from current;
 * labels, annotations from desired plus the two fresh stash annotations},
 * "status": desired's status}.  original (from kt_nodestatus_original) says
 * which emptied sets must be spelled out empty so they delete per element.
 * desired must already be stamped if stamping is wanted.
 */
int kt_nodestatus_modified(const cJSON *desired, const cJSON *current, const cJSON *original,
			   cJSON **modified, struct kt_err *err);

/*
 * All of it: condition times in desired rewritten as metav1.Time writes them
 * (UTC, whole seconds) and capacity/allocatable quantities as
 * resource.Quantity does (canonical form, exact cases only), stamp (with KT_NODESTATUS_HEARTBEAT), original,
 * modified, then diff3(original, modified, current) with the Node schema and
 * overwrite on.
 * schema may be NULL for the built-in Node schema.  The patch comes back
 * with its keys sorted, {} when there is nothing to change; empty maps and
 * empty merge lists that would only create empty fields are dropped.
 */
int kt_nodestatus_patch(const cJSON *desired, const cJSON *current,
			const struct kt_schema *schema, unsigned flags, int64_t now_us,
			cJSON **patch, struct kt_err *err);

/*
 * A heartbeat-only refresh, as node-ping sends it: the patch that brings
 * current to what was last applied (its stash annotations) or, with none,
 * to itself, with KT_NODESTATUS_HEARTBEAT stamps.  The stash is read once.
 * schema may be NULL for the built-in Node schema.
 */
int kt_nodestatus_refresh(const cJSON *current, const struct kt_schema *schema,
			  int64_t now_us, cJSON **patch, struct kt_err *err);

/*
 * 0 when type can name a condition to remove: a qualified name as the API
 * gives condition types (KernelDeadlock, example.com/Custom); else -1 with
 * err (KT_ERR_INPUT), one sentence naming it.
 */
int kt_nodestatus_condition_type_check(const char *type, struct kt_err *err);

/*
 * Adds to patch (kt_nodestatus_patch's, against the same current) the
 * deletion of each condition in types (NULL-terminated, borrowed) that
 * current has, as {"$patch":"delete","type":T} in status.conditions, and,
 * when it added one, current's metadata.resourceVersion, so that the write
 * is refused (409) if anyone changed the node since it was read.  A type
 * current lacks adds nothing (the caller may say so); a type desired holds
 * is an input error (KT_ERR_INPUT).  patch keeps its keys sorted.
 */
int kt_nodestatus_remove_conditions(cJSON *patch, const cJSON *desired, const cJSON *current,
				    const char *const *types, struct kt_err *err);

#endif
