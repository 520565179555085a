/* SPDX-License-Identifier: Apache-2.0 */
/* podstatus: a pod's status as the kubelet computes it, pure: pod, probe
 * results and time in */
#ifndef KT_PODSTATUS_H
#define KT_PODSTATUS_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "probe_results.h"

/*
 * The kubelet's generateAPIPodStatus and getPhase
 * (pkg/kubelet/kubelet_pods.go), the prober manager's ready and started
 * (UpdatePodStatus) and the status manager's condition rules
 * (pkg/kubelet/status/generate.go and the kept lastTransitionTime of
 * status_manager.go).  No I/O and no clock.
 *
 * Errors in the input are KT_ERR_INPUT with the path of the offending field
 * first in the message ("status.containerStatuses[1].state: ..."); running
 * out of memory is KT_ERR_FAIL.
 */

/* the probe results it reads (struct kt_probe_results) are in probe_results.h */

/* "NAMESPACE/NAME" of a pod (namespace "default" when unset) into buf; buf
 * returned */
const char *kt_podstatus_key(const cJSON *pod, char *buf, size_t size);

/* ------------------------------------------------------------------ status */

struct kt_podstatus_opts {
	/* the status as the server has it: transition times, the phase kept when
	 * terminal, reason and message come from it; NULL: the pod's own status */
	const cJSON *current;
	const struct kt_probe_results *probes; /* NULL: no results at all */
	bool terminal;			       /* upstream's podIsTerminal */
	int64_t now_us;			       /* the time a changed condition gets */
	/* what a kill reports (the kubelet's PodStatusFunc as data: phase,
	 * reason, message, conditions), or NULL; see kt_podstatus_kill_check */
	const cJSON *kill;
};

/*
 * Checks a kill status: an object whose phase, reason and message are
 * strings (the phase one of upstream's five) and whose conditions are
 * objects with a type and a status.  0, or -1 with err (KT_ERR_INPUT, the
 * field first: "phase: ...").
 *
 * How it is laid over, as SyncTerminatingPod and the status manager do:
 * while the pod worker has not finished the pod (terminal false) containers
 * may still run, and the status manager holds a terminal phase back, so the
 * kill changes nothing.  Once terminal, a phase computed as not terminal
 * becomes the kill's; the kill's reason and message go with its phase (a
 * pod whose containers all exited 0 is Succeeded, without them); and the
 * kill's DisruptionTarget condition is added when the phase turns terminal
 * with this status, its lastTransitionTime the status manager's.  Other
 * conditions of the kill are not the kubelet's to send: they are ignored.
 */
int kt_podstatus_kill_check(const cJSON *kill, struct kt_err *err);

/*
 * The pod's new status object.  pod is a Pod (kind Pod or no kind) whose
 * status holds what the runtime reports; it is borrowed.  Returns the status
 * (caller owns, cJSON_Delete) or NULL with err.
 */
cJSON *kt_podstatus_compute(const cJSON *pod, const struct kt_podstatus_opts *opts,
			    struct kt_err *err);

/*
 * The merge patch (RFC 7386) that turns {"status": from} into the pod with
 * status to, with metadata.uid as the kubelet's precondition when the pod has
 * one: what the status manager sends.  from NULL means the pod's own status.
 * *patch is the caller's (cJSON_Delete); print it with KT_JSON_SORTED.
 */
int kt_podstatus_patch(const cJSON *pod, const cJSON *from, const cJSON *to,
		       cJSON **patch, struct kt_err *err);

#endif
