/* SPDX-License-Identifier: Apache-2.0 */
/* probe_state: the prober worker's threshold counting, a pure function of results */
#include <string.h>

#include "probe.h"

void kt_probe_state_init(struct kt_probe_state *st, const struct kt_probe_spec *spec)
{
	memset(st, 0, sizeof(*st));
	st->type = spec->type;
	st->success_threshold = spec->success_threshold > 0 ? spec->success_threshold : 1;
	st->failure_threshold = spec->failure_threshold > 0 ? spec->failure_threshold : 3;
	st->last = KT_PROBE_UNKNOWN;
	switch (spec->type) {
	case KT_PROBE_READINESS:
		st->reported = KT_PROBE_FAILURE;
		break;
	case KT_PROBE_LIVENESS:
		st->reported = KT_PROBE_SUCCESS;
		break;
	default:
		st->reported = KT_PROBE_UNKNOWN;
	}
}

unsigned kt_probe_state_feed(struct kt_probe_state *st, enum kt_probe_result r)
{
	unsigned mask = KT_PROBE_FEED_SET;

	if (st->on_hold)
		return 0;
	/* a warning is a success that logs an event; an error never counts */
	if (r == KT_PROBE_WARNING)
		r = KT_PROBE_SUCCESS;
	if (r != KT_PROBE_SUCCESS && r != KT_PROBE_FAILURE)
		return 0;
	if (st->last == r) {
		st->run++;
	} else {
		st->last = r;
		st->run = 1;
	}
	if (r == KT_PROBE_FAILURE && st->run < st->failure_threshold)
		return 0;
	if (r == KT_PROBE_SUCCESS && st->run < st->success_threshold)
		return 0;
	if (st->reported != r)
		mask |= KT_PROBE_FEED_CHANGED;
	st->reported = r;
	st->settled = true;
	/* the container is about to be restarted: stop until a new one appears */
	if (r == KT_PROBE_FAILURE && st->type != KT_PROBE_READINESS) {
		st->on_hold = true;
		st->run = 0;
		mask |= KT_PROBE_FEED_HOLD;
	}
	return mask;
}

bool kt_probe_state_due(const struct kt_probe_state *st, const struct kt_probe_spec *spec,
			int64_t elapsed_ms, bool started)
{
	if (st->on_hold)
		return false;
	if (elapsed_ms / 1000 < spec->initial_delay_s)
		return false;
	if (st->type == KT_PROBE_STARTUP)
		return !started;
	return started;
}
