/* SPDX-License-Identifier: Apache-2.0 */
/* podworker: the kubelet pod worker state machine, pure: events and a clock in, state and actions out */
#ifndef KT_PODWORKER_H
#define KT_PODWORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * The state of every pod worker on a node, as upstream's podWorkers keeps it
 * (pkg/kubelet/pod_workers.go), without goroutines: the work a goroutine
 * would run is handed out in a step's result and comes back as a "complete"
 * event.  No I/O and no clock: time is the event's "now" (or the default the
 * caller passes in).
 *
 * State text: NDJSON.  Line 1 is the node-wide part
 *   {"kind":"PodWorkerState","version":2,"podsSynced":false,"nextSeq":0,
 *    "startedStaticPodsByFullname":{},"waitingToStartStaticPodsByFullname":{}}
 * and every further line is one pod's status, starting with {"uid":"...",
 * with "seq", its place in the order of first sighting.  Version 1 (no
 * "nextSeq", no "seq": the order is the lines') is read too.  Pod lines are
 * parsed only when an event touches them and are written back byte for byte
 * otherwise.
 *
 * A state need not hold its pods: given a source (kt_podworker_set_source),
 * it asks for a pod when an event names one it does not hold, and for all
 * of them only for the events that visit every pod (sync-known-pods,
 * node-shutdown).  kt_podworker_changes then hands out what changed.
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
 * Where the pods not in memory are kept (lib/podstore does it with files).
 * Each callback returns 1 with *text (one pod's status line, malloc'd, taken
 * by the state) and *where (a malloc'd name for messages, such as the file,
 * freed by the state), 0 when there is none (more), -1 with err (kind
 * KT_ERR_INPUT when what is kept is damaged).
 *   get: the status of uid.
 *   next: every status kept, one per call, in any order; *cursor starts NULL
 *         and is the source's (it frees it before returning 0 or -1, and
 *         when called with text NULL, to stop early: it then returns 0).
 */
struct kt_podworker_source {
	int (*get)(void *ctx, const char *uid, char **text, size_t *len, char **where,
		   struct kt_err *err);
	int (*next)(void *ctx, void **cursor, char **text, size_t *len, char **where,
		    struct kt_err *err);
	void *ctx;		/* borrowed, passed to both */
};

/* from now on pods not in memory are asked for from src (copied; ctx borrowed) */
void kt_podworker_set_source(struct kt_podworker *pw,
			     const struct kt_podworker_source *src);

/*
 * Called by kt_podworker_changes for each pod whose status changed since
 * the last call (or since it was read): text (its line with '\n', borrowed)
 * is the new status, or NULL (len 0) when the pod was forgotten.  A UID
 * forgotten and seen again comes once, with its new status.  -1 with err
 * stops the walk.
 */
typedef int kt_podworker_change_fn(void *ctx, const char *uid, const char *text,
				   size_t len, struct kt_err *err);
int kt_podworker_changes(struct kt_podworker *pw, kt_podworker_change_fn *fn, void *ctx,
			 struct kt_err *err);

/* reads every pod now, so that kt_podworker_changes hands out each one not handed out */
int kt_podworker_read_all(struct kt_podworker *pw, struct kt_err *err);

/* the node-wide line alone (with '\n'); caller frees *out; -1 when out of memory */
int kt_podworker_node_text(struct kt_podworker *pw, char **out, size_t *len,
			   struct kt_err *err);

/*
 * Applies one event (SPEC section 5: "update", "complete",
 * "sync-known-pods", "node-shutdown", "query") and sets *result to what the
 * caller must do next (caller owns, cJSON_Delete).  now_us is the time used
 * when the event has no "now" (microseconds since the epoch).
 *
 * The event is checked in full before anything changes: on failure (-1,
 * err of kind KT_ERR_INPUT for a bad event, KT_ERR_FAIL when out of memory
 * or when a pod's stored status cannot be read) the state is as it was,
 * except that out of memory may leave it half applied.  A bad event's err
 * is about KT_ERR_ABOUT_EVENT ("event: ..." with detail after "event: ").
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
