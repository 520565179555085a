/* SPDX-License-Identifier: Apache-2.0 */
/* kt.h: the umbrella header of libkt.a for tools and tests; lib files include
 * what they use.  The tools' own cli.h and history_git.h are not in it. */
#ifndef KT_H
#define KT_H

#include "kt_err.h"
#include "core.h"
#include "log.h"
#include "json.h"
#include "json_go.h"
#include "object.h"
#include "timeutil.h"
#include "fsio.h"
#include "url.h"
#include "kcfg.h"
#include "loop.h"
#include "lines.h"
#include "kt_spawn.h"
#include "api.h"
#include "schema.h"
#include "smp.h"
#include "nodestatus.h"
#include "nodesend.h"
#include "nodestream.h"
#include "docpush.h"
#include "lease.h"
#include "tally.h"
#include "fleet.h"
#include "reflector.h"
#include "podworker.h"
#include "podstore.h"
#include "podstatus.h"
#include "probe_results.h"
#include "podstream.h"
#include "probe.h"
#include "prober.h"
#include "proberun.h"
#include "history.h"
#include "doctor.h"
#include "wait.h"

#endif
