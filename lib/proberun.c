/* SPDX-License-Identifier: Apache-2.0 */
/* proberun: probe-run's runs of the prober: once, watching, until ready, served commands */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "kt_err.h"
#include "lines.h"
#include "log.h"
#include "loop.h"
#include "proberun.h"
#include "timeutil.h"

struct kt_proberun {
	struct kt_proberun_opts o;
	struct kt_proberun_ops ops;
	void *arg;
	struct kt_loop *loop;
	struct kt_prober *prober;
	struct kt_timer *timer;	/* UNTIL_READY: the timeout */
	struct kt_lines *lines;	/* SERVE: the commands */
	struct kt_err fail;	/* SERVE: the input could not be read */
	bool failed;
	bool bad;		/* SERVE: a line was refused */
	bool timed_out;
	bool no_result, failure; /* ONCE: what the final lines said */
	int status;
};

static void say_result(struct kt_proberun *r, const struct kt_prober_target *t,
		       enum kt_probe_type type, enum kt_probe_result res, const char *output,
		       size_t len, bool stopped)
{
	if (r->ops.result(t, type, res, output, len, stopped, r->arg) < 0)
		r->status = KT_EXIT_FAILURE;
}

static void end(struct kt_proberun *r, int status)
{
	r->status = status;
	kt_loop_stop(r->loop);
}

/* UNTIL_READY ends when every worker succeeded or one is held, WATCH when all are held */
static void verdict(struct kt_proberun *r)
{
	struct kt_prober_counts c;

	kt_prober_count(r->prober, &c);
	if (r->o.mode == KT_PROBERUN_UNTIL_READY && (c.held > 0 || c.succeeded == c.workers))
		end(r, c.held > 0 ? KT_EXIT_FAILURE : KT_EXIT_OK);
	else if (r->o.mode == KT_PROBERUN_WATCH && c.held == c.workers)
		end(r, KT_EXIT_FAILURE);
}

static void on_report(struct kt_prober *p, const struct kt_prober_report *rep, void *arg)
{
	struct kt_proberun *r = arg;

	(void)p;
	if (r->o.mode == KT_PROBERUN_ONCE)
		return;
	if (r->o.mode == KT_PROBERUN_UNTIL_READY) {
		if (rep->event != KT_PROBER_RESULT)
			return;
		if (rep->result_changed)
			r->ops.progress(rep, r->arg);
		verdict(r);
		return;
	}
	if (rep->event == KT_PROBER_INITIAL || (rep->feed & KT_PROBE_FEED_CHANGED))
		say_result(r, rep->target, rep->type, rep->reported, rep->output, rep->output_len,
			   false);
	else if (rep->event == KT_PROBER_STOPPED)
		say_result(r, rep->target, rep->type, KT_PROBE_UNKNOWN, "", 0, true);
	if (rep->feed & KT_PROBE_FEED_HOLD)
		verdict(r);
}

/* ONCE and UNTIL_READY: each probe's final line, in input order */
static void final_line(const struct kt_prober_view *v, void *arg)
{
	struct kt_proberun *r = arg;
	enum kt_probe_result res = r->o.mode == KT_PROBERUN_ONCE ? v->last : v->st->reported;

	say_result(r, v->target, v->type, res, v->output, v->output_len, false);
	r->failure = r->failure || res == KT_PROBE_FAILURE;
	r->no_result = r->no_result || res == KT_PROBE_UNKNOWN;
}

struct why {
	struct kt_proberun *r;
	const char *when;
};

static void why_not_ready(const struct kt_prober_view *v, void *arg)
{
	struct why *w = arg;
	char text[900];

	if (kt_prober_why_text(text, sizeof(text), v, w->when))
		w->r->ops.problem(text, w->r->arg);
}

static void say_why(struct kt_proberun *r, const char *when)
{
	struct why w = { r, when };

	kt_prober_each(r->prober, why_not_ready, &w);
}

static void on_timeout(struct kt_loop *loop, void *arg)
{
	struct kt_proberun *r = arg;
	char when[64], d[32];

	(void)loop;
	r->timer = NULL;
	r->timed_out = true;
	snprintf(when, sizeof(when), " after %s", kt_duration_format(r->o.timeout_ms, d, sizeof(d)));
	say_why(r, when);
	end(r, KT_EXIT_FAILURE);
}

static void on_stop_signal(struct kt_loop *loop, int signo, void *arg)
{
	struct kt_proberun *r = arg;
	char msg[80];

	(void)loop;
	KT_V(1, "stopping", "signal=%d", signo);
	if (r->o.mode != KT_PROBERUN_UNTIL_READY) {
		kt_loop_stop(r->loop);
		return;
	}
	say_why(r, "");
	snprintf(msg, sizeof(msg), "interrupted by %s before every probe was ready",
		 signo == SIGINT ? "SIGINT" : "SIGTERM");
	r->ops.problem(msg, r->arg);
	end(r, KT_PROBERUN_EXIT_SIGNAL + signo);
}

/* SERVE: each line of the input is a command; its end ends the run */
static void on_line(struct kt_loop *loop, enum kt_lines_event ev, const char *line, size_t len,
		    long lineno, void *arg)
{
	struct kt_proberun *r = arg;
	struct kt_err err = { 0 };

	(void)loop;
	if (ev == KT_LINES_END) {
		end(r, r->bad ? KT_EXIT_USAGE : KT_EXIT_OK);
		return;
	}
	if (ev == KT_LINES_ERROR) {
		kt_error(&r->fail, "cannot read standard input: %s", line);
		r->failed = true;
		end(r, KT_EXIT_FAILURE);
		return;
	}
	if (ev == KT_LINES_LINE &&
	    kt_prober_command(r->prober, line, len, lineno, r->o.filter, r->o.max_input, &err) == 0)
		return;
	if (ev == KT_LINES_TOO_LONG)
		snprintf(err.msg, sizeof(err.msg),
			 "<stdin>:%ld: a line longer than --max-input (%zu bytes)", lineno,
			 r->o.max_line);
	r->ops.problem(err.msg, r->arg);
	r->bad = true;
}

struct kt_proberun *kt_proberun_new(const struct kt_proberun_opts *o,
				    const struct kt_proberun_ops *ops, void *arg,
				    struct kt_err *err)
{
	struct kt_proberun *r = calloc(1, sizeof(*r));
	unsigned flags = (o->stats ? KT_PROBER_STATS : 0);

	if (!r) {
		kt_error(err, "out of memory");
		return NULL;
	}
	r->o = *o;
	r->ops = *ops;
	r->arg = arg;
	if (o->mode == KT_PROBERUN_ONCE)
		flags |= KT_PROBER_ONCE;
	else if (o->mode != KT_PROBERUN_UNTIL_READY)
		flags |= KT_PROBER_SPREAD;
	r->loop = kt_loop_new(err);
	if (r->loop)
		r->prober = kt_prober_new(r->loop, flags, on_report, r, err);
	if (!r->prober) {
		kt_proberun_free(r);
		return NULL;
	}
	return r;
}

struct kt_prober *kt_proberun_prober(struct kt_proberun *r)
{
	return r->prober;
}

/* what runs beside the workers: signals, the timeout, the commands */
static int start(struct kt_proberun *r, struct kt_err *err)
{
	enum kt_proberun_mode m = r->o.mode;

	if (m != KT_PROBERUN_ONCE &&
	    (kt_loop_on_signal(r->loop, SIGTERM, on_stop_signal, r, err) < 0 ||
	     kt_loop_on_signal(r->loop, SIGINT, on_stop_signal, r, err) < 0))
		return -1;
	if (m == KT_PROBERUN_UNTIL_READY && r->o.timeout_ms > 0) {
		r->timer = kt_timer_add(r->loop, r->o.timeout_ms, on_timeout, r);
		if (!r->timer)
			return kt_error(err, "out of memory");
	}
	if (m == KT_PROBERUN_SERVE) {
		r->lines = kt_lines_new(r->loop, r->o.in_fd, r->o.max_line, on_line, r, err);
		if (!r->lines)
			return -1;
	}
	kt_prober_run(r->prober, err);
	return 0;
}

int kt_proberun_run(struct kt_proberun *r, struct kt_err *err)
{
	enum kt_proberun_mode m = r->o.mode;

	if (start(r, err) < 0 || kt_loop_run(r->loop, err) < 0)
		return -1;
	if (r->failed) {
		*err = r->fail;
		return -1;
	}
	if (r->timer)
		kt_timer_cancel(r->loop, r->timer);
	r->timer = NULL;
	kt_lines_free(r->lines);
	r->lines = NULL;
	if (m == KT_PROBERUN_ONCE || (m == KT_PROBERUN_UNTIL_READY && r->status < KT_EXIT_USAGE))
		kt_prober_each(r->prober, final_line, r);
	if (m == KT_PROBERUN_UNTIL_READY && r->status == KT_EXIT_FAILURE && !r->timed_out)
		say_why(r, "");
	if (m == KT_PROBERUN_ONCE && r->status == 0)
		r->status = r->failure	  ? KT_EXIT_FAILURE
			    : r->no_result ? KT_PROBERUN_EXIT_UNKNOWN
					   : KT_EXIT_OK;
	/* attempts still in flight are cancelled; the loop reaps what they leave */
	kt_prober_stop_all(r->prober);
	if (kt_loop_run(r->loop, err) < 0)
		return -1;
	return r->status;
}

void kt_proberun_free(struct kt_proberun *r)
{
	if (!r)
		return;
	if (r->timer)
		kt_timer_cancel(r->loop, r->timer);
	kt_lines_free(r->lines);
	kt_prober_free(r->prober);
	kt_loop_free(r->loop);
	free(r);
}
