/* SPDX-License-Identifier: Apache-2.0 */
/* plan: the built-in provider's plan of a pod, one line of shell assignments */
#ifndef KT_PROVIDER_PLAN_H
#define KT_PROVIDER_PLAN_H

#include <cJSON.h>

#include "core.h"

/*
 * The plan of pod (see kt-pod-plan's usage) into out, without a newline: 0.
 * A pod that has none: -1 and out holds why (one line, may hold any byte but
 * NUL, as long as the pod's text makes it).  out is appended to; the caller
 * checks out->oom.
 */
int kt_pod_plan(const cJSON *pod, struct kt_sb *out);

#endif
