/* SPDX-License-Identifier: Apache-2.0 */
/* reflector_run: the reflector's requests sent through the API client, on a loop */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "api.h"
#include "log.h"
#include "loop.h"
#include "reflector.h"
#include "timeutil.h"

struct kt_refl_run {
	struct kt_refl *r;
	struct kt_api *api;
	struct kt_loop *loop;
	struct kt_api_call *call;
	struct kt_timer *wait; /* backoff before the next request */
	struct kt_timer *idle; /* checks a watch's silence */
	int64_t last_line_ms;
	enum kt_refl_step step; /* of the call running */
	kt_refl_done_fn *done;
	void *arg;
	bool starting; /* inside kt_refl_start: a failure is its return value */
	bool failed;
};

static void send_next(struct kt_refl_run *run);

static void finish(struct kt_refl_run *run)
{
	if (run->idle)
		kt_timer_cancel(run->loop, run->idle);
	run->idle = NULL;
	if (run->starting)
		run->failed = true;
	else
		run->done(run->r, &run->r->err, run->arg);
}

static void on_wait(struct kt_loop *loop, void *arg)
{
	struct kt_refl_run *run = arg;

	(void)loop;
	run->wait = NULL;
	send_next(run);
}

static void follow(struct kt_refl_run *run, enum kt_refl_next next, int64_t delay_ms)
{
	if (next == KT_REFL_DONE) {
		finish(run);
		return;
	}
	if (next == KT_REFL_SEND) {
		send_next(run);
		return;
	}
	run->wait = kt_timer_add(run->loop, delay_ms, on_wait, run);
	if (!run->wait) {
		kt_error(&run->r->err, "out of memory");
		finish(run);
	}
}

static int on_line(const char *line, size_t len, void *arg)
{
	struct kt_refl_run *run = arg;

	run->last_line_ms = kt_loop_now(run->loop);
	return kt_refl_watch_line(run->r, line, len);
}

static void on_idle(struct kt_loop *loop, void *arg)
{
	struct kt_refl_run *run = arg;
	int64_t quiet = kt_loop_now(loop) - run->last_line_ms, delay;
	struct kt_refl_reply reply = { .idle = true };

	run->idle = NULL;
	if (quiet < run->r->idle_ms) {
		run->idle = kt_timer_add(loop, run->r->idle_ms - quiet, on_idle, run);
		if (run->idle)
			return;
	}
	kt_api_cancel(run->call);
	run->call = NULL;
	follow(run, kt_refl_watch_end(run->r, &reply, kt_loop_now(loop), &delay), delay);
}

static void on_done(struct kt_api_call *call, struct kt_api_resp *resp,
		    const struct kt_err *err, void *arg)
{
	struct kt_refl_run *run = arg;
	struct kt_refl_reply reply = { .status = resp->status,
				       .json = resp->json,
				       .error = err ? err->msg : NULL };
	int64_t now = kt_loop_now(run->loop), delay = 0;
	enum kt_refl_next next;

	(void)call;
	run->call = NULL;
	if (run->idle)
		kt_timer_cancel(run->loop, run->idle);
	run->idle = NULL;
	if (err && err->http_status > 0)
		reply.status = err->http_status;
	if (run->step == KT_REFL_LIST)
		next = kt_refl_list_reply(run->r, &reply, now, &delay);
	else
		next = kt_refl_watch_end(run->r, &reply, now, &delay);
	follow(run, next, delay);
}

static void send_next(struct kt_refl_run *run)
{
	struct kt_refl_req rr;
	struct kt_api_req req = { .method = "GET" };
	int64_t now = kt_loop_now(run->loop);

	if (kt_refl_request(run->r, now, &rr, &run->r->err) < 0) {
		finish(run);
		return;
	}
	req.path = rr.path;
	req.timeout_ms = rr.timeout_ms;
	run->step = rr.step;
	if (rr.step == KT_REFL_WATCH) {
		/* the reflector decides when to try again, from what ended the watch */
		req.flags = KT_API_NO_RETRY;
		req.on_line = on_line;
		req.line_arg = run;
		run->last_line_ms = now;
	}
	run->call = kt_api_start(run->api, run->loop, &req, on_done, run, &run->r->err);
	if (!run->call) {
		finish(run);
		return;
	}
	if (rr.step == KT_REFL_WATCH && run->r->idle_ms > 0) {
		run->idle = kt_timer_add(run->loop, run->r->idle_ms, on_idle, run);
		if (!run->idle) {
			kt_error(&run->r->err, "out of memory");
			kt_api_cancel(run->call);
			run->call = NULL;
			finish(run);
		}
	}
}

struct kt_refl_run *kt_refl_start(struct kt_refl *r, struct kt_api *api,
				  struct kt_loop *loop, kt_refl_done_fn *done, void *arg,
				  struct kt_err *err)
{
	struct kt_refl_run *run = calloc(1, sizeof(*run));

	if (!run) {
		kt_error(err, "out of memory");
		return NULL;
	}
	*run = (struct kt_refl_run){ .r = r,
				     .api = api,
				     .loop = loop,
				     .done = done,
				     .arg = arg,
				     .starting = true };
	send_next(run);
	run->starting = false;
	if (run->failed) {
		*err = r->err;
		free(run);
		return NULL;
	}
	return run;
}

void kt_refl_cancel(struct kt_refl_run *run)
{
	if (!run)
		return;
	if (run->call)
		kt_api_cancel(run->call);
	if (run->wait)
		kt_timer_cancel(run->loop, run->wait);
	if (run->idle)
		kt_timer_cancel(run->loop, run->idle);
	free(run);
}

struct blocking {
	struct kt_loop *loop;
	bool ended;
	bool signalled;
};

static void blocking_done(struct kt_refl *r, const struct kt_err *err, void *arg)
{
	struct blocking *b = arg;

	(void)r;
	(void)err;
	b->ended = true;
	kt_loop_stop(b->loop);
}

static void blocking_signal(struct kt_loop *loop, int signo, void *arg)
{
	struct blocking *b = arg;

	KT_V(2, "stopping the watch", "signal=%d", signo);
	b->signalled = true;
	kt_loop_stop(loop);
}

int kt_refl_run(struct kt_refl *r, struct kt_api *api, struct kt_err *err)
{
	struct blocking b = { 0 };
	struct kt_refl_run *run = NULL;
	int rc = -1;

	b.loop = kt_loop_new(err);
	if (!b.loop)
		return -1;
	if (kt_loop_on_signal(b.loop, SIGTERM, blocking_signal, &b, err) < 0 ||
	    kt_loop_on_signal(b.loop, SIGINT, blocking_signal, &b, err) < 0)
		goto out;
	run = kt_refl_start(r, api, b.loop, blocking_done, &b, err);
	if (!run)
		goto out;
	if (kt_loop_run(b.loop, err) < 0)
		goto out;
	if (b.signalled)
		rc = 0;
	else if (b.ended)
		*err = r->err;
	else
		kt_error(err, "the event loop ended");
out:
	kt_refl_cancel(run);
	kt_loop_free(b.loop);
	return rc;
}
