/* SPDX-License-Identifier: Apache-2.0 */
/* probe_results: the latest probe result of each pod's container, as pod-status
 * reads them from probe-run's lines; part of the podstatus module (podstatus.c) */
#ifndef KT_PROBE_RESULTS_H
#define KT_PROBE_RESULTS_H

#include <stdbool.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * The latest result of each (pod, container, probe type), fed with the lines
 * probe-run --watch prints:
 *   {"pod":"NAMESPACE/NAME","container":"C","type":"readiness","result":"success",...}
 * "success" and "warning" count as success, "failure" as failure, "unknown"
 * as no result at all.  A later line for the same key replaces the earlier.
 */
struct kt_probe_results;

/* an empty set; caller owns (kt_probe_results_free); NULL when out of memory */
struct kt_probe_results *kt_probe_results_new(void);
/* accepts NULL */
void kt_probe_results_free(struct kt_probe_results *pr);

/*
 * Records one line.  where ("results.ndjson:3", or NULL) is kept for the
 * message of a pod that finds the line names no container of its own.
 * 0 on success; -1 with err (KT_ERR_INPUT, the field first in the message,
 * where not in it) when the line is not a probe result.  line is borrowed.
 */
int kt_probe_results_add(struct kt_probe_results *pr, const cJSON *line,
			 const char *where, struct kt_err *err);

/*
 * Drops the results of pod (a Pod, borrowed) that name no container it
 * probes (a container, or an init container with restartPolicy Always), so
 * a stream that reported them can go on.  Returns how many were dropped.
 */
int kt_probe_results_prune(struct kt_probe_results *pr, const cJSON *pod);

/* true when doc looks like a probe-run line rather than a Pod: it has "result"
 * and "type" */
bool kt_probe_results_is_line(const cJSON *doc);

#endif
