/* SPDX-License-Identifier: Apache-2.0 */
/* podrt: a pod as its runtime sees it, read from a kt-agent state directory */
#ifndef KT_PODRT_H
#define KT_PODRT_H

#include <stdbool.h>

#include <cJSON.h>

#include "kt_err.h"
#include "probe_results.h"

/*
 * What pod-status needs to compute one pod's status, as kt-agent keeps it in
 * STATE/pods/UID:
 *
 *   pod.json             the pod as the API server last gave it
 *   since                when the agent first saw it (RFC 3339): startTime
 *   containers/NAME/     the provider's record of a container: pid (a
 *                        process group; the container runs while it lives),
 *                        startedAt, restarts, waiting (a waiting reason), and
 *                        once it has ended exit and finishedAt
 *   probe.CONTAINER.TYPE the latest probe-run line of each probe
 *   kill-status.json     what the pod's kill reports (may be absent)
 *
 * The runtime pod is pod.json with a status made of what the runtime knows:
 * a container status for each spec container the provider has a record of
 * (running while its process group lives, terminated once it has an exit
 * code, otherwise waiting with its reason, ContainerCreating when it has
 * none), the pod's IP (the built-in provider's pods share the node's
 * loopback: 127.0.0.1), startTime, and from the API's status the conditions
 * (their times are kept) and a terminal phase with its reason and message.
 * A spec container with no record yet gets no status: pod-status counts it
 * as waiting, as the kubelet does.  A record's time that is not RFC 3339 is
 * left out, an exit code that is not a number reads as 137 (killed).
 */
struct kt_podrt {
	cJSON *pod;			 /* pod.json */
	cJSON *runtime;			 /* the pod with the runtime's status */
	struct kt_probe_results *probes; /* the probes' latest results */
	cJSON *kill;			 /* kill-status.json, checked; NULL: none */
};

/*
 * A pod UID as a file name: letters, digits and '-', 1 to 64 bytes, not
 * starting with '-' (the API server's UIDs all are).
 */
bool kt_podrt_uid_ok(const char *uid);

/*
 * Reads pods/uid of state_dir into rt (zeroed here; release it even on
 * failure).  -1 with err: KT_ERR_NOTFOUND when the pod has no pod.json (the
 * agent forgot it), KT_ERR_INPUT when a file is not what it should be (the
 * file named first), KT_ERR_FAIL when out of memory.
 */
int kt_podrt_read(const char *state_dir, const char *uid, struct kt_podrt *rt, struct kt_err *err);

/* frees what rt holds and zeroes it */
void kt_podrt_release(struct kt_podrt *rt);

#endif
