/* SPDX-License-Identifier: Apache-2.0 */
/* kt.h: the umbrella header; tools include only this */
#ifndef KT_H
#define KT_H

#include "err.h"
#include "log.h"
#include "cli.h"
#include "json.h"
#include "timeutil.h"
#include "fsio.h"

#if __has_include("kcfg.h")
#include "kcfg.h"
#endif
#if __has_include("api.h")
#include "api.h"
#endif
#if __has_include("loop.h")
#include "loop.h"
#endif
#if __has_include("schema.h")
#include "schema.h"
#endif
#if __has_include("smp.h")
#include "smp.h"
#endif
#if __has_include("nodestatus.h")
#include "nodestatus.h"
#endif
#if __has_include("lease.h")
#include "lease.h"
#endif
#if __has_include("podworker.h")
#include "podworker.h"
#endif
#if __has_include("probe.h")
#include "probe.h"
#endif

#endif
