/* SPDX-License-Identifier: Apache-2.0 */
/* podstream: pods' statuses over a stream of Pods and probe results (pod-status --stream) */
#ifndef KT_PODSTREAM_H
#define KT_PODSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "podstatus.h"

/*
 * The status of each pod seen, kept as documents come: a Pod gives its
 * status at once; a probe-run line (kt_probe_results_is_line) for a pod
 * seen before computes that pod's status again, and gives it only when it
 * changed.  Pods are told apart by namespace and name.  Pure: no I/O, the
 * time comes in with the options.
 */
struct kt_podstream;

/*
 * A new or changed status of pod; current is the one given before for the
 * pod (NULL for its first), all three borrowed.  0, or -1 with err: the
 * document that led to it fails, and the status is not kept.
 */
typedef int kt_podstream_fn(const cJSON *pod, const cJSON *current, const cJSON *status,
			    void *arg, struct kt_err *err);

/*
 * Results a pod does not probe were dropped so that its status can be
 * computed (err says what they were); the stream goes on.
 */
typedef void kt_podstream_dropped_fn(const struct kt_err *err, void *arg);

/*
 * A stream over probes (borrowed, added to as result lines come; it must
 * outlive the stream), with opts' terminal and now_us (its current and
 * probes are not used).  Caller owns; kt_podstream_free.  NULL when out of
 * memory.
 */
struct kt_podstream *kt_podstream_new(struct kt_probe_results *probes,
				      const struct kt_podstatus_opts *opts, kt_podstream_fn *fn,
				      kt_podstream_dropped_fn *dropped, void *arg);

/*
 * One document, taken: a Pod or a probe-run line (at names where it began,
 * for messages).  0, or -1 with err (KT_ERR_INPUT for a bad document); a
 * bad document changes nothing.
 */
int kt_podstream_feed(struct kt_podstream *s, cJSON *doc, const char *at, struct kt_err *err);

void kt_podstream_free(struct kt_podstream *s);

#endif
