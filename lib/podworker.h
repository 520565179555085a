/* SPDX-License-Identifier: Apache-2.0 */
/* podworker: the kubelet pod worker state machine, pure: events and a clock in, state and actions out */
#ifndef KT_PODWORKER_H
#define KT_PODWORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "err.h"

/*
 * The state of every pod worker on a node, as upstream's podWorkers keeps it
 * (pkg/kubelet/pod_workers.go), without goroutines: the work a goroutine
 * would run is handed out in a step's result and comes back as a "complete"
 * event.  No I/O and no clock: time is the event's "now" (or the default the
 * caller passes in).
 *
 * State text: NDJSON.  Line 1 is the node-wide part
 *   {"kind":"PodWorkerState","version":1,"podsSynced":false,
 *    "startedStaticPodsByFullname":{},"waitingToStartStaticPodsByFullname":{}}
 * and every further line is one pod's status, starting with {"uid":"...".
 * Pod lines are parsed only when an event touches them and are written back
 * byte for byte otherwise, so a step costs little more than copying the text.
 */
struct kt_podworker;

/* an empty state; caller owns (kt_podworker_free). NULL when out of memory */
struct kt_podworker *kt_podworker_new(void);

/*
 * A state from its text.  Takes buf (malloc'd, len bytes, NUL-terminated)
 * and frees it even on failure; the state borrows nothing else.  An empty
 * text is an empty state.  name is used in messages only.  NULL with err
 * (kind KT_ERR_INPUT) when the text is not a state this version wrote.
 */
struct kt_podworker *kt_podworker_take_text(const char *name, char *buf, size_t len,
					    struct kt_err *err);

/*
 * The same from text the caller keeps (a mapped file, say): text is
 * borrowed and must outlive the state and every kt_podworker_text of it.
 */
struct kt_podworker *kt_podworker_load(const char *name, const char *text, size_t len,
				       struct kt_err *err);

/* the state as text (ends with '\n'); caller frees *out with free(); -1 when out of memory */
int kt_podworker_text(struct kt_podworker *pw, char **out, size_t *len, struct kt_err *err);

/* accepts NULL */
void kt_podworker_free(struct kt_podworker *pw);

/*
 * Applies one event (SPEC section 5: "update", "complete",
 * "sync-known-pods", "node-shutdown", "query") and sets *result to what the
 * caller must do next (caller owns, cJSON_Delete).  now_us is the time used
 * when the event has no "now" (microseconds since the epoch).
 *
 * The event is checked in full before anything changes: on failure (-1,
 * err of kind KT_ERR_INPUT for a bad event, KT_ERR_FAIL when out of memory
 * or when a pod's stored status cannot be read) the state is as it was,
 * except that out of memory may leave it half applied.
 */
int kt_podworker_step(struct kt_podworker *pw, const cJSON *event, int64_t now_us,
		      cJSON **result, struct kt_err *err);

/*
 * True once a stored pod status failed to read (a step then failed with
 * KT_ERR_INPUT): the state text is damaged and must not be trusted.
 */
bool kt_podworker_damaged(const struct kt_podworker *pw);

/* the number of pods with a status */
size_t kt_podworker_count(const struct kt_podworker *pw);

/*
 * One pod's status as the state keeps it (with "uid" first), or NULL when
 * the UID is unknown; caller owns (cJSON_Delete).  NULL with err filled when
 * the stored status cannot be read.
 */
cJSON *kt_podworker_pod(struct kt_podworker *pw, const char *uid, struct kt_err *err);

/*
 * Upstream's calculateEffectiveGracePeriod: start from current (0 when not
 * yet terminating), take the pod's metadata.deletionGracePeriodSeconds and
 * then the override (has_override) when either is smaller or nothing was
 * set, else the pod's spec.terminationGracePeriodSeconds; at least 1.
 * *shortened tells whether a non-zero current value changed.  pod is
 * borrowed and may be NULL.
 */
int64_t kt_podworker_effective_grace(int64_t current, const cJSON *pod, bool has_override,
				     int64_t override, bool *shortened);

/* a pod is static when annotation kubernetes.io/config.source is set and is not "api" */
bool kt_podworker_is_static(const cJSON *pod);

#endif
