/* SPDX-License-Identifier: Apache-2.0 */
/* podsync: the kubelet's status manager on the loop, for the pods of a kt-agent state directory */
#ifndef KT_PODSYNC_H
#define KT_PODSYNC_H

#include <stdbool.h>

#include "kt_err.h"

/*
 * Each pod pushed is read again from the state directory (podrt), its status
 * computed (podstatus) and, when it differs from the last one the server
 * took, sent as a merge patch of pods/NAME/status with the pod's UID as a
 * precondition, as the kubelet's status manager sends it.  Once the pod is
 * terminal (the pod worker finished it) and its deletion has begun
 * (metadata.deletionTimestamp), its final status on the server, the pod
 * object is deleted with grace 0 and the UID as a precondition (the status
 * manager's canBeDeleted, then its delete).  A pod has one send at a time; a
 * push while it runs makes it run once more after.  At most a few pods are
 * sent at once; the others wait their turn, in order.
 *
 * What the server took is kept per pod (the conditions' times come from it);
 * a pod the sync has not sent yet starts from the status in its pod.json.
 * A send that failed (the API away, a 5xx past the client's own retries) is
 * tried again after 1 s, doubling to 10 s (the status manager's resync
 * period), or at once when the pod is pushed again.  A pod the server no
 * longer has (404) is forgotten, as is one whose pod.json is gone.
 */

struct kt_api;
struct kt_loop;
struct kt_podsync;

enum kt_podsync_event {
	KT_PODSYNC_PATCHED, /* a new status is on the server: phase and ready given */
	KT_PODSYNC_DELETED, /* the pod object was deleted */
	KT_PODSYNC_GONE,    /* the server has no such pod any more */
	KT_PODSYNC_FAILED,  /* a send failed (err): tried again unless draining */
};

/* what became of a pod's send; phase and ready ("True"/"False") with PATCHED */
typedef void kt_podsync_fn(const char *uid, enum kt_podsync_event ev, const char *phase,
			   const char *ready, const struct kt_err *err, void *arg);

/* api and loop are borrowed and must outlive it; state_dir is copied */
struct kt_podsync *kt_podsync_new(struct kt_api *api, struct kt_loop *loop, const char *state_dir,
				  kt_podsync_fn *fn, void *arg, struct kt_err *err);

/*
 * The pod uid (a checked UID: kt_podrt_uid_ok) changed: its status is sent
 * when it differs.  terminal: the pod worker has finished it (kept from then
 * on).  -1 with err when out of memory.
 */
int kt_podsync_push(struct kt_podsync *ps, const char *uid, bool terminal, struct kt_err *err);

/*
 * No more pushes: what waits to be tried again is tried now, once, and a
 * failure from then on is final.  The loop runs out once every send ended.
 */
void kt_podsync_drain(struct kt_podsync *ps);

/* sends that failed after the drain */
int kt_podsync_failures(const struct kt_podsync *ps);

/* cancels what is in flight and frees it all; NULL is fine */
void kt_podsync_free(struct kt_podsync *ps);

#endif
