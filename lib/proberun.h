/* SPDX-License-Identifier: Apache-2.0 */
/* proberun: probe-run's runs of the prober: once, watching, until ready, served commands */
#ifndef KT_PROBERUN_H
#define KT_PROBERUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kt_err.h"
#include "prober.h"

enum kt_proberun_mode {
	KT_PROBERUN_ONCE,	 /* one attempt of each probe, then its result */
	KT_PROBERUN_WATCH,	 /* the kubelet's prober loop, each change said */
	KT_PROBERUN_UNTIL_READY, /* until every probe succeeds, one is held, or the timeout */
	KT_PROBERUN_SERVE,	 /* pods' probes started and stopped by commands */
};

/* exit statuses past 0, 1 and 2 */
#define KT_PROBERUN_EXIT_UNKNOWN 3   /* ONCE: no result (every try errored) */
#define KT_PROBERUN_EXIT_SIGNAL	 128 /* UNTIL_READY interrupted: 128 + the signal */

struct kt_proberun_opts {
	enum kt_proberun_mode mode;
	bool stats;			/* KT_PROBER_STATS, for kt_prober_stats */
	int64_t timeout_ms;		/* UNTIL_READY: give up after this; 0: never */
	int in_fd;			/* SERVE: the commands (kt_prober_command), a line each */
	size_t max_line;		/* SERVE: a longer line is refused */
	size_t max_input;		/* SERVE: a start's podFile: a larger one is refused */
	const struct kt_prober_filter *filter; /* SERVE: what a started pod gives; borrowed */
};

/* what a run says, through the caller: the library prints nothing */
struct kt_proberun_ops {
	/*
	 * A result line (kt_prober_line): each change of a worker's result
	 * when watching or served (stopped: its worker was stopped), each
	 * probe's last result in input order at the end of ONCE and of an
	 * UNTIL_READY that ended on its own.  -1: it could not be written
	 * (the run's status becomes 1).
	 */
	int (*result)(const struct kt_prober_target *t, enum kt_probe_type type,
		      enum kt_probe_result r, const char *output, size_t len, bool stopped,
		      void *arg);
	/* UNTIL_READY: a probe's result changed (kt_prober_progress_text) */
	void (*progress)(const struct kt_prober_report *r, void *arg);
	/* a line for a person: why a probe is not ready, an input line refused */
	void (*problem)(const char *msg, void *arg);
};

struct kt_proberun;

/*
 * A run, with its own loop and prober (kt_proberun_prober, to add probes
 * to).  ops is copied; arg is passed to each.  Caller owns;
 * kt_proberun_free.  NULL with err on allocation failure.
 */
struct kt_proberun *kt_proberun_new(const struct kt_proberun_opts *o,
				    const struct kt_proberun_ops *ops, void *arg,
				    struct kt_err *err);

/* the run's prober: borrowed, lives as long as the run */
struct kt_prober *kt_proberun_prober(struct kt_proberun *r);

/*
 * Runs to the end: ONCE when every attempt ended; WATCH when every worker
 * is held (1) or on SIGTERM or SIGINT (0); UNTIL_READY when every probe
 * succeeded (0), one is held (1; why, through problem), the timeout (1) or
 * a signal (128 + the signal), each with why the probes not ready are not;
 * SERVE at the end of its input (2 when a line was refused, else 0) or a
 * signal.  Every worker is then stopped.  Returns the exit status: for ONCE
 * 1 when a probe failed, else 3 when one has no result, else 0.  -1 with
 * err when the loop fails or the input cannot be read.
 */
int kt_proberun_run(struct kt_proberun *r, struct kt_err *err);

void kt_proberun_free(struct kt_proberun *r);

#endif
