/* SPDX-License-Identifier: Apache-2.0 */
/* fleet: many nodes' Leases (and condition heartbeats) kept renewed on one loop */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "api.h"
#include "core.h"
#include "fleet.h"
#include "json.h"
#include "lease.h"
#include "log.h"
#include "loop.h"
#include "nodesend.h"
#include "schema.h"
#include "kt_spawn.h"
#include "timeutil.h"

/*
 * What a node holds between renewals is a few fields: the lease the server
 * last returned as compact JSON text (not a tree: a tree of a small Lease
 * is several times its text), the node's uid, and what kt_lease keeps from
 * one renewal to the next.  The protocol's state (struct kt_lease, struct
 * kt_nodesend: a kilobyte each, most of it message buffers) exists only
 * while a renewal or a status refresh runs, taken from a small pool.
 */
enum { DUE_LEASE, DUE_STATUS };

/* a node waiting for a time, or for a request slot */
struct fleet_due {
	int64_t ms;			/* loop time it is due */
	struct fleet_node *next;	/* in its kind's schedule, or in a slot queue */
	struct kt_timer *timer;		/* its own: an out-of-order delay, a backoff */
};

/* a renewal running: the lease protocol's state */
struct fleet_run {
	struct kt_lease lease;
	struct fleet_run *next;		/* in the spare pool */
};

struct fleet_node {
	struct kt_fleet *ctl;
	const char *name;
	char *latest;			/* the last lease the server returned, compact JSON */
	char *uid;			/* the node's uid, between renewals */
	struct fleet_run *run;		/* the renewal running, NULL between renewals */
	struct kt_api_call *call;	/* the renewal's request in flight */
	struct kt_nodesend *status;	/* the status refresh running, NULL between */
	struct kt_api_call *status_call;
	struct fleet_due due[2];	/* DUE_LEASE, DUE_STATUS; a renewal's
					 * ms is when it started, while it runs */
	int64_t backoff_ms;		/* kt_lease's last wait, kept between renewals */
	unsigned char result;		/* enum kt_lease_result of the last renewal */
	bool node_read;			/* kt_lease's, kept between renewals */
	bool waiting;			/* for the check's result */
};

/*
 * Nodes due at a time, in order: a renewal is due one interval after the
 * last one ended, so nodes join at the tail in the order they are due and
 * one timer (the head's) serves them all; adding and firing cost the same at
 * any fleet size.  A delay that would break the order (a backoff shorter
 * than the interval) takes a timer of its own.
 */
struct fleet_sched {
	struct kt_fleet *ctl;
	int kind;
	struct fleet_node *head, *tail;
	struct kt_timer *timer;		/* at the head's time */
};

/* the health check: one at a time, its result shared by every node */
struct fleet_check {
	struct kt_spawn *sp;		/* the check running, NULL when none */
	bool have;			/* a result is known */
	bool ok;
	int64_t done_ms;		/* loop time the result came */
	char why[512];
};

/* nodes waiting for a request slot, in order */
struct fleet_queue {
	struct fleet_node *head, *tail;
};

#define FLEET_SPARE_RUNS 64
#define FLEET_LIST_PAGE 500

struct kt_fleet {
	struct kt_fleet_opts o;
	struct kt_fleet_hooks hooks;
	char *const *names;
	size_t n;
	struct fleet_node *nodes;
	struct kt_api *api;
	struct kt_loop *loop;
	struct kt_schema *schema;	/* the built-in Node schema, built once */
	struct fleet_check check;
	struct fleet_sched sched[2];	/* DUE_LEASE, DUE_STATUS */
	struct fleet_run *spare;	/* runs to reuse */
	size_t nspare;
	size_t pending;			/* once: renewals not ended yet */
	size_t inflight;		/* requests running */
	struct fleet_queue queue[2];	/* waiting for a slot; leases served first */
	bool failed;			/* once: some renewal did not succeed */
	bool broken;			/* out of memory on the loop: err says so */
	struct kt_err err;
	bool stopping;
};

/* out of memory on the loop: the fleet cannot go on; the caller hears of it
 * from kt_fleet_result */
static void broken(struct kt_fleet *ctl, const char *why)
{
	if (!ctl->broken)
		kt_error(&ctl->err, "%s", why);
	ctl->broken = true;
	kt_loop_stop(ctl->loop);
}

static void node_schedule(struct fleet_node *node, int64_t delay_ms);
static void status_schedule(struct fleet_node *node, int64_t delay_ms);
static void renewal_send(struct fleet_node *node);
static void slot_pump(struct kt_fleet *ctl);
static void slot_release(struct kt_fleet *ctl);

/* ------------------------------------------------------------------ runs */

/* "{...}" without the printer's newline, its buffer no larger than it */
static char *compact_text(const cJSON *doc)
{
	char *text = kt_json_print(doc, KT_JSON_NO_NEWLINE), *fit;

	if (!text)
		return NULL;
	fit = realloc(text, strlen(text) + 1);
	return fit ? fit : text;
}

/*
 * true when the numbers in text (outside strings) are integers of at most 15
 * digits: a double holds them exactly, so cJSON's own parser (twice as fast
 * as the project's, which keeps every number's text) reads the same values
 */
static bool plain_numbers(const char *s)
{
	bool in_str = false;

	for (; *s; s++) {
		const char *start = s;

		if (in_str) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == '"')
				in_str = false;
			continue;
		}
		if (*s == '"') {
			in_str = true;
			continue;
		}
		if (*s != '-' && (*s < '0' || *s > '9'))
			continue;
		for (s++; *s >= '0' && *s <= '9'; s++)
			;
		if (*s == '.' || *s == 'e' || *s == 'E' || s - start > 15)
			return false;
		s--;
	}
	return true;
}

/* a lease text this fleet kept back to a tree; NULL when it cannot */
static cJSON *lease_read(const struct fleet_node *node)
{
	struct kt_err err = { 0 };
	size_t n = strlen(node->latest);
	cJSON *doc = NULL;

	if (plain_numbers(node->latest))
		doc = cJSON_ParseWithLength(node->latest, n);
	return doc ? doc : kt_json_parse_at(node->name, node->latest, n, 1, 1, &err);
}

/*
 * The renewal's state, made from what the node keeps between renewals: the
 * fields kt_lease carries from one renewal to the next (its header's) are
 * handed to it, the lease text read back.  -1 when out of memory.
 */
static int run_open(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;
	struct fleet_run *run = ctl->spare;
	struct kt_lease_spec spec = { .node = node->name, .holder = ctl->o.holder,
				      .duration_s = ctl->o.duration_s };
	struct kt_lease *l;

	if (run) {
		ctl->spare = run->next;
		ctl->nspare--;
	} else if (!(run = malloc(sizeof(*run)))) {
		return -1;
	}
	l = &run->lease;
	kt_lease_init(l, &spec);
	node->run = run;
	l->node_uid = node->uid;
	node->uid = NULL;
	l->node_read = node->node_read;
	l->backoff.wait_ms = node->backoff_ms;
	l->result = node->result;
	if (node->latest) {
		/* text a reply or this fleet's printer made; should it not read
		 * back, the renewal GETs the lease as if none were kept */
		cJSON *doc = lease_read(node);

		if (doc && kt_lease_take_latest(l, doc) < 0)
			return -1;
	}
	return 0;
}

/*
 * text (n bytes) as the node's kept lease, in the buffer it has when that is
 * big enough: a renewal's reply is as long as the last one but for a digit
 * or two, and a buffer freed and made again per renewal, among a hundred
 * thousand others that live on, fragments the heap.  -1 when out of memory.
 */
static int keep_text(struct fleet_node *node, const char *text, size_t n)
{
	char *buf = node->latest;

	if (!buf || malloc_usable_size(buf) <= n) {
		buf = malloc(n + 1);
		if (!buf)
			return -1;
		free(node->latest);
		node->latest = buf;
	}
	memcpy(buf, text, n);
	buf[n] = '\0';
	return 0;
}

/*
 * The renewal ended: the node keeps what the next one needs, the run goes
 * back.  reply (NULL if none) is the last reply's body: when the renewal
 * kept it as the latest lease, its text is kept as it came.
 */
static void run_close(struct fleet_node *node, const struct kt_api_resp *reply)
{
	struct kt_fleet *ctl = node->ctl;
	struct fleet_run *run = node->run;
	struct kt_lease *l;
	char *printed = NULL;

	if (!run)
		return;
	l = &run->lease;
	if (!l->latest) {
		free(node->latest);
		node->latest = NULL;
	} else if (reply && reply->body &&
		   (l->result == KT_LEASE_RENEWED || l->result == KT_LEASE_CREATED)) {
		size_t n = reply->body_len;

		while (n && strchr(" \t\r\n", reply->body[n - 1]))
			n--;
		if (keep_text(node, reply->body, n) < 0)
			broken(ctl, "out of memory");
	} else if (!(printed = compact_text(l->latest)) ||
		   keep_text(node, printed, strlen(printed)) < 0) {
		broken(ctl, "out of memory");
	}
	free(printed);
	free(node->uid);
	node->uid = l->node_uid;
	l->node_uid = NULL;
	node->node_read = l->node_read;
	node->backoff_ms = l->backoff.wait_ms;
	node->result = (unsigned char)l->result;
	kt_lease_release(l);
	node->run = NULL;
	if (ctl->nspare < FLEET_SPARE_RUNS) {
		run->next = ctl->spare;
		ctl->spare = run;
		ctl->nspare++;
	} else {
		free(run);
	}
}

/* the node's uid as a status refresh read it (NULL: no such node) */
static void node_set_uid(struct fleet_node *node, const char *uid)
{
	char *copy = NULL;

	if (node->run) {
		if (kt_lease_set_node_uid(&node->run->lease, uid) < 0)
			broken(node->ctl, "out of memory");
		return;
	}
	if (uid && *uid && !(copy = strdup(uid))) {
		broken(node->ctl, "out of memory");
		return;
	}
	free(node->uid);
	node->uid = copy;
	node->node_read = true;
}

/* ------------------------------------------------------------- renewals */

/* a renewal ended (renewed, created, skipped or failed); reply as run_close */
static void renewal_end(struct fleet_node *node, const struct kt_api_resp *reply)
{
	struct kt_fleet *ctl = node->ctl;
	struct kt_lease *l = &node->run->lease;
	int64_t next = ctl->o.interval_ms;
	bool failed = l->result != KT_LEASE_RENEWED && l->result != KT_LEASE_CREATED;

	if (ctl->hooks.renewed)
		ctl->hooks.renewed(node->name, l, ctl->hooks.arg);
	if (failed)
		ctl->failed = true;
	/* an outage keeps backing off, never longer than the interval */
	if (l->result == KT_LEASE_FAILED && kt_http_retryable(l->err.http_status, false) &&
	    kt_lease_next_backoff(l) < next)
		next = kt_lease_next_backoff(l);
	run_close(node, reply);
	if (ctl->o.once) {
		if (--ctl->pending == 0)
			kt_loop_stop(ctl->loop);
		return;
	}
	node_schedule(node, next);
}

static void on_wait(struct kt_loop *loop, void *arg)
{
	struct fleet_node *node = arg;

	node->due[DUE_LEASE].timer = NULL;
	renewal_send(node);
}

static void on_reply(struct kt_api_call *call, struct kt_api_resp *resp,
		     const struct kt_err *err, void *arg)
{
	struct fleet_node *node = arg;
	struct kt_lease_reply r = { 0 };
	int64_t delay = 0;

	node->call = NULL;
	slot_release(node->ctl);
	r.status = err ? err->http_status : resp->status;
	r.json = resp->json;
	r.error = err ? err->msg : NULL;
	r.own = &resp->json;	/* the lease kept is taken, not copied */
	switch (kt_lease_reply(&node->run->lease, &r, kt_loop_now(node->ctl->loop), &delay)) {
	case KT_LEASE_SEND:
		renewal_send(node);
		break;
	case KT_LEASE_WAIT:
		KT_V(4, "retrying request", "node=\"%s\" status=%ld delayMs=%lld", node->name,
		     r.status, (long long)delay);
		node->due[DUE_LEASE].timer = kt_timer_add(node->ctl->loop, delay, on_wait, node);
		if (!node->due[DUE_LEASE].timer)
			broken(node->ctl, "out of memory");
		break;
	case KT_LEASE_DONE:
		renewal_end(node, resp);
		break;
	}
	slot_pump(node->ctl);
}

/*
 * Request slots: at most KT_FLEET_MAX_INFLIGHT requests run; the rest wait in
 * the fleet (holding no transfer: transfers left waiting inside curl for a
 * connection cost memory and, measured, made renewals late by seconds at
 * 10,000 nodes), lease requests before status ones, so heartbeats go first.
 * A node waits for a slot in its kind's queue through due[kind].next: a
 * node waiting for a slot is not waiting for a time.
 */

/* true when the caller may send now (the slot is taken), else node waits */
static bool slot_take(struct kt_fleet *ctl, int kind, struct fleet_node *node)
{
	struct fleet_queue *q = &ctl->queue[kind];

	if (ctl->inflight < KT_FLEET_MAX_INFLIGHT) {
		ctl->inflight++;
		return true;
	}
	node->due[kind].next = NULL;
	if (q->tail)
		q->tail->due[kind].next = node;
	else
		q->head = node;
	q->tail = node;
	return false;
}

static void slot_release(struct kt_fleet *ctl)
{
	ctl->inflight--;
}

static struct fleet_node *queue_pop(struct kt_fleet *ctl, int kind)
{
	struct fleet_queue *q = &ctl->queue[kind];
	struct fleet_node *node = q->head;

	if (!node)
		return NULL;
	q->head = node->due[kind].next;
	if (!q->head)
		q->tail = NULL;
	node->due[kind].next = NULL;
	return node;
}

static void status_send(struct fleet_node *node);

static void slot_pump(struct kt_fleet *ctl)
{
	while (ctl->inflight < KT_FLEET_MAX_INFLIGHT && !ctl->stopping) {
		struct fleet_node *node = queue_pop(ctl, DUE_LEASE);

		if (node) {
			renewal_send(node);
			continue;
		}
		node = queue_pop(ctl, DUE_STATUS);
		if (!node)
			break;
		status_send(node);
	}
}

/*
 * The renewal's state is made when it gets its first slot, not when it is
 * due: a node waiting in the queue holds nothing.  Its deadline counts
 * from when it was due (due[DUE_LEASE].ms, set by renewal_start).
 */
static int renewal_begin(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;
	int64_t deadline = 0, budget = kt_api_kcfg(ctl->api)->timeout_ms;
	/* looping, the status refresh reads the node anyway: the renewal reads
	 * it only after a failure (or with no status refresh) */
	bool read_node = ctl->o.once || !ctl->o.status_ms || node->result != KT_LEASE_RENEWED;

	if (!ctl->o.once)
		budget = ctl->o.interval_ms;
	if (budget > 0)
		deadline = node->due[DUE_LEASE].ms + budget;
	if (run_open(node) < 0)
		return -1;
	kt_lease_begin(&node->run->lease, deadline, read_node);
	return 0;
}

static void renewal_send(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;
	struct kt_lease_req lr;
	struct kt_api_req req = { 0 };
	struct kt_err err = { 0 };

	if (!slot_take(ctl, DUE_LEASE, node))
		return;
	if (!node->run && renewal_begin(node) < 0) {
		slot_release(ctl);
		broken(ctl, "out of memory");
		return;
	}
	if (kt_lease_request(&node->run->lease, kt_now_us(), &lr, &err) < 0) {
		slot_release(ctl);
		broken(ctl, err.msg);
		return;
	}
	req.method = lr.method;
	req.path = lr.path;
	req.body = lr.body;
	req.body_len = lr.body_len;
	/* lease decides about retries and their backoff, not the client */
	req.flags = KT_API_NO_RETRY;
	node->call = kt_api_start(ctl->api, ctl->loop, &req, on_reply, node, &err);
	if (!node->call) {
		struct kt_api_resp none = { 0 };

		on_reply(NULL, &none, &err, node);
	}
}

static void renewal_start(struct fleet_node *node)
{
	node->due[DUE_LEASE].ms = kt_loop_now(node->ctl->loop);
	renewal_send(node);
}

/* ----------------------------------------------------------------- check */

static void check_start(struct kt_fleet *ctl);

static void skip(struct fleet_node *node, const char *why)
{
	struct kt_lease *l;

	if (run_open(node) < 0) {
		broken(node->ctl, "out of memory");
		return;
	}
	l = &node->run->lease;
	kt_lease_begin(l, 0, true);
	l->result = KT_LEASE_SKIPPED;
	kt_error(&l->err, "%s", why);
	renewal_end(node, NULL);
}
/* a renewal is due: gate it on the check, then start it */
static void node_due(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;
	struct fleet_check *ck = &ctl->check;
	int64_t now = kt_loop_now(ctl->loop);

	if (!ctl->o.check_cmd) {
		renewal_start(node);
		return;
	}
	/* a result is good for half an interval, so each node waits for a
	 * check that started after its previous renewal */
	if (!ck->sp && ck->have && !ctl->o.once && now - ck->done_ms < ctl->o.interval_ms / 2) {
		if (ck->ok)
			renewal_start(node);
		else
			skip(node, ck->why);
		return;
	}
	node->waiting = true;
	if (!ck->sp)
		check_start(ctl);
}

static void check_done(struct kt_fleet *ctl)
{
	struct fleet_check *ck = &ctl->check;

	ck->have = true;
	ck->done_ms = kt_loop_now(ctl->loop);
	if (!ck->ok && !ctl->stopping && ctl->hooks.trouble)
		ctl->hooks.trouble(NULL, ck->why, ctl->hooks.arg);
	for (size_t i = 0; i < ctl->n && !ctl->stopping; i++) {
		struct fleet_node *node = &ctl->nodes[i];

		if (!node->waiting)
			continue;
		node->waiting = false;
		if (ck->ok)
			renewal_start(node);
		else
			skip(node, ck->why);
	}
}

static void on_check_exit(struct kt_spawn *sp, struct kt_spawn_result *res, void *arg)
{
	struct kt_fleet *ctl = arg;
	struct fleet_check *ck = &ctl->check;
	int status = res->status;
	char tmo[32];

	ck->sp = NULL;
	ck->ok = !res->timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (res->timed_out)
		snprintf(ck->why, sizeof(ck->why), "check '%s' timed out after %s", ctl->o.check_cmd,
			 kt_duration_format(ctl->o.check_timeout_ms, tmo, sizeof(tmo)));
	else if (WIFEXITED(status))
		snprintf(ck->why, sizeof(ck->why), "check '%s' failed: exit status %d",
			 ctl->o.check_cmd, WEXITSTATUS(status));
	else
		snprintf(ck->why, sizeof(ck->why), "check '%s' failed: killed by signal %d",
			 ctl->o.check_cmd, WTERMSIG(status));
	KT_V(2, "check done", "ok=%s", ck->ok ? "true" : "false");
	check_done(ctl);
}

/* /bin/sh -c CMD through the one child starter: its own process group (a
 * timeout kills the shell's children too), stdout kept off ours */
static void check_start(struct kt_fleet *ctl)
{
	struct fleet_check *ck = &ctl->check;
	char *argv[] = { "/bin/sh", "-c", (char *)ctl->o.check_cmd, NULL };
	struct kt_spawn_opts o = { .argv = argv, .output = KT_SPAWN_TO_STDERR,
				   .timeout_ms = ctl->o.check_timeout_ms };
	struct kt_err err = { 0 };
	int err_no = 0;

	fflush(stdout);
	ck->sp = kt_spawn_start(ctl->loop, &o, on_check_exit, ctl, &err_no, &err);
	if (ck->sp)
		return;
	/* err.msg names the shell it could not run; what matters is the check */
	snprintf(ck->why, sizeof(ck->why), "check '%s' cannot start: %.200s", ctl->o.check_cmd,
		 err.msg);
	ck->ok = false;
	check_done(ctl);
}

/* ------------------------------------------------------------- scheduling */

static void due_fire(struct fleet_node *node, int kind);

static void on_sched(struct kt_loop *loop, void *arg)
{
	struct fleet_sched *s = arg;
	struct fleet_node *node, *last = s->tail;
	int64_t now = kt_loop_now(loop);

	s->timer = NULL;
	/* those that join while these run wait for the next round */
	while ((node = s->head) && node->due[s->kind].ms <= now && !s->ctl->stopping &&
	       !s->ctl->broken) {
		s->head = node->due[s->kind].next;
		if (!s->head)
			s->tail = NULL;
		node->due[s->kind].next = NULL;
		due_fire(node, s->kind);
		if (node == last)
			break;
	}
	if (s->head && !s->timer && !s->ctl->stopping) {
		s->timer = kt_timer_add(loop, s->head->due[s->kind].ms - now, on_sched, s);
		if (!s->timer)
			broken(s->ctl, "out of memory");
	}
}

static void on_own_due(struct kt_loop *loop, void *arg)
{
	struct fleet_node *node = arg;

	node->due[DUE_LEASE].timer = NULL;
	due_fire(node, DUE_LEASE);
}

static void on_own_status_due(struct kt_loop *loop, void *arg)
{
	struct fleet_node *node = arg;

	node->due[DUE_STATUS].timer = NULL;
	due_fire(node, DUE_STATUS);
}

/* node's kind is due delay_ms from now: at the schedule's tail when that
 * keeps it in order, else on a timer of its own */
static void sched_add(struct fleet_node *node, int kind, int64_t delay_ms)
{
	struct kt_fleet *ctl = node->ctl;
	struct fleet_sched *s = &ctl->sched[kind];
	struct fleet_due *d = &node->due[kind];
	int64_t now = kt_loop_now(ctl->loop);

	if (delay_ms < 0)
		delay_ms = 0;
	d->ms = now + delay_ms;
	d->next = NULL;
	if (s->tail && s->tail->due[kind].ms > d->ms) {
		d->timer = kt_timer_add(ctl->loop, delay_ms,
					kind == DUE_LEASE ? on_own_due : on_own_status_due, node);
		if (!d->timer)
			broken(ctl, "out of memory");
		return;
	}
	if (s->tail)
		s->tail->due[kind].next = node;
	else
		s->head = node;
	s->tail = node;
	if (!s->timer && s->head == node) {
		s->timer = kt_timer_add(ctl->loop, delay_ms, on_sched, s);
		if (!s->timer)
			broken(ctl, "out of memory");
	}
}

static void node_schedule(struct fleet_node *node, int64_t delay_ms)
{
	sched_add(node, DUE_LEASE, delay_ms);
}

static void status_fail(struct fleet_node *node, const char *msg)
{
	char line[sizeof(node->status->err.msg) + 320];

	if (node->ctl->stopping)
		return;
	snprintf(line, sizeof(line), "node/%s: cannot refresh status: %s", node->name, msg);
	if (node->ctl->hooks.trouble)
		node->ctl->hooks.trouble(node->name, line, node->ctl->hooks.arg);
}

static void on_status_done(struct kt_api_call *call, struct kt_api_resp *resp,
			   const struct kt_err *err, void *arg);

/* sends the request the refresh asks for next, in a slot */
static void status_send(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;
	struct kt_nodesend_req nr;
	struct kt_api_req req = { 0 };
	struct kt_api_resp none = { 0 };
	struct kt_err err = { 0 };

	if (!slot_take(ctl, DUE_STATUS, node))
		return;
	/* made when it gets a slot, as a renewal's state is */
	if (!node->status) {
		node->status = malloc(sizeof(*node->status));
		if (!node->status) {
			slot_release(ctl);
			broken(ctl, "out of memory");
			return;
		}
		kt_nodesend_init(node->status, node->name, ctl->schema, KT_NODESEND_REFRESH);
		kt_nodesend_begin(node->status, NULL);
	}
	if (kt_nodesend_request(node->status, &nr, &err) == 0) {
		kt_nodesend_api_req(&nr, &req);
		node->status_call = kt_api_start(ctl->api, ctl->loop, &req, on_status_done, node,
						 &err);
	}
	if (!node->status_call)
		on_status_done(NULL, &none, &err, node);
}

static void status_close(struct fleet_node *node)
{
	kt_nodesend_release(node->status);
	free(node->status);
	node->status = NULL;
}

/* a refresh ended: the node's uid goes to the lease, the outcome to the log */
static void status_end(struct fleet_node *node)
{
	struct kt_nodesend *s = node->status;

	if (s->current)
		node_set_uid(node, kt_json_get_string(kt_json_get_object(s->current, "metadata"),
						      "uid"));
	switch (s->result) {
	case KT_NODESEND_ABSENT:
		/* not registered (yet): the renewal reads it before any write */
		node_set_uid(node, NULL);
		KT_V(2, "status not refreshed", "node=\"%s\" reason=\"not found\"", node->name);
		break;
	case KT_NODESEND_FAILED:
		status_fail(node, s->err.msg);
		break;
	case KT_NODESEND_PATCHED:
		KT_V(2, "status refreshed", "node=\"%s\"", node->name);
		break;
	default:
		break;
	}
	status_close(node);
	status_schedule(node, node->ctl->o.status_ms);
}

static void on_status_done(struct kt_api_call *call, struct kt_api_resp *resp,
			   const struct kt_err *err, void *arg)
{
	struct fleet_node *node = arg;
	struct kt_nodesend_reply r = { .json = resp->json, .err = err };

	node->status_call = NULL;
	slot_release(node->ctl);
	if (kt_nodesend_reply(node->status, &r, kt_now_us()) == KT_NODESEND_SEND)
		status_send(node);
	else
		status_end(node);
	slot_pump(node->ctl);
}

static void status_due(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;

	/* as virtual-kubelet: no status while the provider is unhealthy; look
	 * again after a renew interval, by when a check will have run */
	if (ctl->o.check_cmd && !(ctl->check.have && ctl->check.ok)) {
		KT_V(2, "status not refreshed", "node=\"%s\" reason=\"check\"", node->name);
		status_schedule(node, ctl->o.interval_ms);
		return;
	}
	status_send(node);
}

/* the status schedule never touches the renewal's: a slow status refresh
 * cannot hold a heartbeat back */
static void status_schedule(struct fleet_node *node, int64_t delay_ms)
{
	sched_add(node, DUE_STATUS, delay_ms);
}

static void due_fire(struct fleet_node *node, int kind)
{
	int64_t late = kt_loop_now(node->ctl->loop) - node->due[kind].ms;

	if (kind == DUE_STATUS) {
		status_due(node);
		return;
	}
	if (late > 100)
		KT_V(4, "renewal late", "node=\"%s\" ms=%lld", node->name, (long long)late);
	node_due(node);
}

/* ----------------------------------------------------------------- setup */

struct kt_fleet *kt_fleet_new(struct kt_api *api, struct kt_loop *loop, char *const *names,
			      size_t n, const struct kt_fleet_opts *opts,
			      const struct kt_fleet_hooks *hooks, struct kt_err *err)
{
	struct kt_fleet *ctl = calloc(1, sizeof(*ctl));

	if (!ctl) {
		kt_error(err, "out of memory");
		return NULL;
	}
	ctl->o = *opts;
	ctl->hooks = *hooks;
	ctl->names = names;
	ctl->n = n;
	ctl->api = api;
	ctl->loop = loop;
	curl_multi_setopt(kt_loop_multi(loop), CURLMOPT_MAX_HOST_CONNECTIONS, KT_FLEET_MAX_CONNS);
	curl_multi_setopt(kt_loop_multi(loop), CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	ctl->schema = kt_schema_builtin("Node", err);
	ctl->nodes = calloc(n ? n : 1, sizeof(*ctl->nodes));
	if (!ctl->schema || !ctl->nodes) {
		if (ctl->schema)
			kt_error(err, "out of memory");
		kt_schema_free(ctl->schema);
		free(ctl->nodes);
		free(ctl);
		return NULL;
	}
	for (int k = DUE_LEASE; k <= DUE_STATUS; k++) {
		ctl->sched[k].ctl = ctl;
		ctl->sched[k].kind = k;
	}
	for (size_t i = 0; i < n; i++) {
		ctl->nodes[i].ctl = ctl;
		ctl->nodes[i].name = names[i];
	}
	return ctl;
}

static struct fleet_node *find_node(struct kt_fleet *ctl, const char *name)
{
	char *const *hit = bsearch(&name, ctl->names, ctl->n, sizeof(*ctl->names), kt_key_cmp_ptr);

	return hit ? &ctl->nodes[hit - ctl->names] : NULL;
}

/* one page's items to their nodes, as the text the first renewal reads back
 * (a LIST item has no apiVersion and kind: kt_lease_take_latest adds them) */
static int seed_page(struct kt_fleet *ctl, const cJSON *list)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, kt_json_get_array(list, "items")) {
		const char *name = kt_json_get_string(kt_json_get_object(item, "metadata"), "name");
		struct fleet_node *node = name ? find_node(ctl, name) : NULL;
		char *text;

		if (!node || !cJSON_IsObject(item))
			continue;
		if (!(text = compact_text(item)))
			return -1;
		free(node->latest);
		node->latest = text;
	}
	return 0;
}

/*
 * Many nodes: the leases LISTed in pages (as a reflector lists: the memory
 * of a page, not of the whole collection, at once), so first renewals PUT
 * without a GET.
 */
static void seed_leases(struct kt_fleet *ctl)
{
	struct kt_err err = { 0 };
	struct kt_sb path = { 0 };
	char *cont = NULL;

	if (ctl->n < KT_FLEET_LIST_MIN)
		return;
	do {
		cJSON *list;
		const char *next;

		kt_sb_printf(&path, "%s?limit=%d", KT_LEASE_COLLECTION, FLEET_LIST_PAGE);
		if (cont) {
			char *esc = curl_easy_escape(NULL, cont, 0);

			if (!esc) {
				broken(ctl, "out of memory");
				break;
			}
			kt_sb_printf(&path, "&continue=%s", esc);
			curl_free(esc);
		}
		/* one try: on failure each node not seeded GETs its own lease,
		 * with its own backoff */
		list = kt_api_json(ctl->api, "GET", kt_sb_str(&path), NULL, NULL, KT_API_NO_RETRY,
				   &err);
		kt_sb_trunc(&path, 0);
		free(cont);
		cont = NULL;
		if (!list) {
			KT_V(1, "leases not listed", "error=\"%s\"", err.msg);
			break;
		}
		if (seed_page(ctl, list) < 0)
			broken(ctl, "out of memory");
		next = kt_json_get_string(kt_json_get_object(list, "metadata"), "continue");
		if (next && *next && !ctl->broken && !(cont = strdup(next)))
			broken(ctl, "out of memory");
		cJSON_Delete(list);
	} while (cont);
	free(cont);
	kt_sb_release(&path);
}

/* once: all at once; else spread evenly over the first interval */
int kt_fleet_start(struct kt_fleet *ctl, struct kt_err *err)
{
	seed_leases(ctl);
	ctl->pending = ctl->n;
	for (size_t i = 0; i < ctl->n && !ctl->broken; i++) {
		struct fleet_node *node = &ctl->nodes[i];

		if (ctl->o.once) {
			node->due[DUE_LEASE].ms = kt_loop_now(ctl->loop);
			node_due(node);
			continue;
		}
		node_schedule(node, (int64_t)(ctl->o.interval_ms * (double)i / (double)ctl->n));
		if (ctl->o.status_ms)
			status_schedule(node,
					(int64_t)(ctl->o.status_ms * (double)i / (double)ctl->n));
	}
	if (ctl->broken) {
		*err = ctl->err;
		return -1;
	}
	return 0;
}

void kt_fleet_stop(struct kt_fleet *ctl)
{
	ctl->stopping = true;
	if (ctl->o.once)
		ctl->failed = ctl->failed || ctl->pending > 0;
	kt_spawn_cancel(ctl->check.sp);
	ctl->check.sp = NULL;
	kt_loop_stop(ctl->loop);
}

int kt_fleet_result(const struct kt_fleet *ctl, bool *failed, struct kt_err *err)
{
	if (failed)
		*failed = ctl->o.once && ctl->failed;
	if (ctl->broken) {
		*err = ctl->err;
		return -1;
	}
	return 0;
}

void kt_fleet_free(struct kt_fleet *ctl)
{
	if (!ctl)
		return;
	kt_spawn_cancel(ctl->check.sp);
	for (size_t i = 0; i < ctl->n; i++) {
		struct fleet_node *node = &ctl->nodes[i];

		if (node->run) {
			kt_lease_release(&node->run->lease);
			free(node->run);
		}
		if (node->status)
			status_close(node);
		free(node->latest);
		free(node->uid);
	}
	while (ctl->spare) {
		struct fleet_run *run = ctl->spare;

		ctl->spare = run->next;
		free(run);
	}
	free(ctl->nodes);
	kt_schema_free(ctl->schema);
	free(ctl);
}

cJSON *kt_fleet_line(const char *name, const struct kt_lease *l)
{
	bool wrote = l->result != KT_LEASE_FAILED && l->result != KT_LEASE_SKIPPED;
	cJSON *doc = cJSON_CreateObject();

	if (!doc || !cJSON_AddStringToObject(doc, "node", name) ||
	    !cJSON_AddStringToObject(doc, "result", kt_lease_result_name(l->result)) ||
	    (l->renew_time[0] && wrote &&
	     !cJSON_AddStringToObject(doc, "renewTime", l->renew_time)) ||
	    (!wrote && !cJSON_AddStringToObject(doc, "error", l->err.msg))) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}
