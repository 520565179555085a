/* SPDX-License-Identifier: Apache-2.0 */
/* kt.h: the umbrella header; tools include only this */
#ifndef KT_H
#define KT_H

#include "core.h"
#include "err.h"
#include "core.h"
#include "log.h"
#include "cli.h"
#include "json.h"
#include "object.h"
#include "timeutil.h"
#include "fsio.h"
#include "url.h"
#include "kcfg.h"
#include "loop.h"
#include "lines.h"
#include "spawn.h"
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
#include "probe.h"
#include "prober.h"
#include "proberun.h"
#include "history.h"

#endif
