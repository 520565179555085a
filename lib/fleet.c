/* SPDX-License-Identifier: Apache-2.0 */
/* fleet: many nodes' Leases (and condition heartbeats) kept renewed on one loop */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cJSON.h>
#include <curl/curl.h>

#include "api.h"
#include "fleet.h"
#include "json.h"
#include "lease.h"
#include "log.h"
#include "loop.h"
#include "nodesend.h"
#include "schema.h"
#include "spawn.h"
#include "timeutil.h"

struct fleet_node {
	struct kt_fleet *ctl;
	char *name;
	struct kt_lease lease;
	struct kt_timer *timer;		/* the next renewal, or a backoff wait */
	struct kt_api_call *call;	/* the request in flight */
	struct fleet_node *lease_next;	/* in the lease queue for a slot */
	struct fleet_node *status_next;	/* in the status queue for a slot */
	bool waiting;			/* for the check's result */
	int64_t due_ms;			/* when the renewal was meant to start */
	/* the status refresh (status_ms) */
	struct kt_timer *status_timer;
	struct kt_api_call *status_call;
	struct kt_nodesend status;	/* the refresh of its conditions' heartbeats */
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
	size_t pending;			/* once: renewals not ended yet */
	size_t inflight;		/* requests running */
	struct fleet_queue leases;	/* waiting for a slot; served first */
	struct fleet_queue statuses;
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
static void renewal_send(struct fleet_node *node);
static void slot_pump(struct kt_fleet *ctl);
static void slot_release(struct kt_fleet *ctl);

static bool status_retryable(long status)
{
	return status == 0 || status == 429 || status >= 500;
}

/* a renewal ended (renewed, created, skipped or failed) */
static void renewal_end(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;
	struct kt_lease *l = &node->lease;
	int64_t next = ctl->o.interval_ms;

	if (ctl->hooks.renewed)
		ctl->hooks.renewed(node->name, l, ctl->hooks.arg);
	if (l->result != KT_LEASE_RENEWED && l->result != KT_LEASE_CREATED)
		ctl->failed = true;
	if (ctl->o.once) {
		if (--ctl->pending == 0)
			kt_loop_stop(ctl->loop);
		return;
	}
	/* an outage keeps backing off, never longer than the interval */
	if (l->result == KT_LEASE_FAILED && status_retryable(l->err.http_status) &&
	    kt_lease_next_backoff(l) < next)
		next = kt_lease_next_backoff(l);
	node_schedule(node, next);
}

static void on_wait(struct kt_loop *loop, void *arg)
{
	struct fleet_node *node = arg;

	node->timer = NULL;
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
	switch (kt_lease_reply(&node->lease, &r, kt_loop_now(node->ctl->loop), &delay)) {
	case KT_LEASE_SEND:
		renewal_send(node);
		break;
	case KT_LEASE_WAIT:
		KT_V(4, "retrying request", "node=\"%s\" status=%ld delayMs=%lld", node->name,
		     r.status, (long long)delay);
		node->timer = kt_timer_add(node->ctl->loop, delay, on_wait, node);
		if (!node->timer)
			broken(node->ctl, "out of memory");
		break;
	case KT_LEASE_DONE:
		renewal_end(node);
		break;
	}
	slot_pump(node->ctl);
}

/*
 * Request slots: at most KT_FLEET_MAX_INFLIGHT requests run; the rest wait in
 * the fleet (holding no transfer: transfers left waiting inside curl for a
 * connection cost memory and, measured, made renewals late by seconds at
 * 10,000 nodes), lease requests before status ones, so heartbeats go first.
 */
static struct fleet_node **next_of(struct kt_fleet *ctl, struct fleet_queue *q,
				  struct fleet_node *node)
{
	return q == &ctl->leases ? &node->lease_next : &node->status_next;
}

/* true when the caller may send now (the slot is taken), else node waits in q */
static bool slot_take(struct kt_fleet *ctl, struct fleet_queue *q, struct fleet_node *node)
{
	if (ctl->inflight < KT_FLEET_MAX_INFLIGHT) {
		ctl->inflight++;
		return true;
	}
	if (q->tail)
		*next_of(ctl, q, q->tail) = node;
	else
		q->head = node;
	q->tail = node;
	return false;
}

static void slot_release(struct kt_fleet *ctl)
{
	ctl->inflight--;
}

static struct fleet_node *queue_pop(struct kt_fleet *ctl, struct fleet_queue *q)
{
	struct fleet_node *node = q->head;

	if (!node)
		return NULL;
	q->head = *next_of(ctl, q, node);
	if (!q->head)
		q->tail = NULL;
	*next_of(ctl, q, node) = NULL;
	return node;
}

static void status_send(struct fleet_node *node);

static void slot_pump(struct kt_fleet *ctl)
{
	while (ctl->inflight < KT_FLEET_MAX_INFLIGHT && !ctl->stopping) {
		struct fleet_node *node = queue_pop(ctl, &ctl->leases);

		if (node) {
			renewal_send(node);
			continue;
		}
		node = queue_pop(ctl, &ctl->statuses);
		if (!node)
			break;
		status_send(node);
	}
}

static void renewal_send(struct fleet_node *node)
{
	struct kt_fleet *ctl = node->ctl;
	struct kt_lease_req lr;
	struct kt_api_req req = { 0 };
	struct kt_err err = { 0 };

	if (!slot_take(ctl, &ctl->leases, node))
		return;
	if (kt_lease_request(&node->lease, kt_now_us(), &lr, &err) < 0) {
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
	struct kt_fleet *ctl = node->ctl;
	int64_t now = kt_loop_now(ctl->loop), deadline = 0;
	int64_t budget = kt_api_kcfg(ctl->api)->timeout_ms;

	if (!ctl->o.once)
		budget = ctl->o.interval_ms;
	if (budget > 0)
		deadline = now + budget;
	/* looping, the status refresh reads the node anyway: the renewal reads
	 * it only after a failure (or with no status refresh) */
	kt_lease_begin(&node->lease, deadline,
		       ctl->o.once || !ctl->o.status_ms || node->lease.result != KT_LEASE_RENEWED);
	renewal_send(node);
}

/* ----------------------------------------------------------------- check */

static void check_start(struct kt_fleet *ctl);

static void skip(struct fleet_node *node, const char *why)
{
	kt_lease_begin(&node->lease, 0, true);
	node->lease.result = KT_LEASE_SKIPPED;
	kt_error(&node->lease.err, "%s", why);
	renewal_end(node);
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

static void on_due(struct kt_loop *loop, void *arg)
{
	struct fleet_node *node = arg;
	int64_t late = kt_loop_now(loop) - node->due_ms;

	node->timer = NULL;
	if (late > 100)
		KT_V(4, "renewal late", "node=\"%s\" ms=%lld", node->name, (long long)late);
	node_due(node);
}

static void node_schedule(struct fleet_node *node, int64_t delay_ms)
{
	struct kt_fleet *ctl = node->ctl;

	node->due_ms = kt_loop_now(ctl->loop) + delay_ms;
	node->timer = kt_timer_add(ctl->loop, delay_ms, on_due, node);
	if (!node->timer)
		broken(ctl, "out of memory");
}


static void status_schedule(struct fleet_node *node, int64_t delay_ms);

static void status_fail(struct fleet_node *node, const char *msg)
{
	char line[sizeof(node->status.err.msg) + 320];

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

	if (!slot_take(ctl, &ctl->statuses, node))
		return;
	if (kt_nodesend_request(&node->status, &nr, &err) == 0) {
		kt_nodesend_api_req(&nr, &req);
		node->status_call = kt_api_start(ctl->api, ctl->loop, &req, on_status_done, node,
						 &err);
	}
	if (!node->status_call)
		on_status_done(NULL, &none, &err, node);
}

/* a refresh ended: the node's uid goes to the lease, the outcome to the log */
static void status_end(struct fleet_node *node)
{
	struct kt_nodesend *s = &node->status;

	if (s->current && kt_lease_set_node_uid(&node->lease, kt_json_get_string(
			kt_json_get_object(s->current, "metadata"), "uid")) < 0)
		broken(node->ctl, "out of memory");
	switch (s->result) {
	case KT_NODESEND_ABSENT:
		/* not registered (yet): the renewal reads it before any write */
		if (kt_lease_set_node_uid(&node->lease, NULL) < 0)
			broken(node->ctl, "out of memory");
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
	status_schedule(node, node->ctl->o.status_ms);
}

static void on_status_done(struct kt_api_call *call, struct kt_api_resp *resp,
			   const struct kt_err *err, void *arg)
{
	struct fleet_node *node = arg;
	struct kt_nodesend_reply r = { .json = resp->json, .err = err };

	node->status_call = NULL;
	slot_release(node->ctl);
	if (kt_nodesend_reply(&node->status, &r, kt_now_us()) == KT_NODESEND_SEND)
		status_send(node);
	else
		status_end(node);
	slot_pump(node->ctl);
}

static void on_status_due(struct kt_loop *loop, void *arg)
{
	struct fleet_node *node = arg;
	struct kt_fleet *ctl = node->ctl;

	node->status_timer = NULL;
	/* as virtual-kubelet: no status while the provider is unhealthy; look
	 * again after a renew interval, by when a check will have run */
	if (ctl->o.check_cmd && !(ctl->check.have && ctl->check.ok)) {
		KT_V(2, "status not refreshed", "node=\"%s\" reason=\"check\"", node->name);
		status_schedule(node, ctl->o.interval_ms);
		return;
	}
	kt_nodesend_begin(&node->status, NULL);
	status_send(node);
}

/* the status timer never touches the renewal timer: a slow status refresh
 * cannot hold a heartbeat back */
static void status_schedule(struct fleet_node *node, int64_t delay_ms)
{
	node->status_timer = kt_timer_add(node->ctl->loop, delay_ms, on_status_due, node);
	if (!node->status_timer)
		broken(node->ctl, "out of memory");
}

/* ----------------------------------------------------------------- setup */


static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

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
	for (size_t i = 0; i < n; i++) {
		struct kt_lease_spec spec = { .node = names[i], .holder = ctl->o.holder,
					      .duration_s = ctl->o.duration_s };

		ctl->nodes[i].ctl = ctl;
		ctl->nodes[i].name = names[i];
		kt_lease_init(&ctl->nodes[i].lease, &spec);
		kt_nodesend_init(&ctl->nodes[i].status, names[i], ctl->schema,
				 KT_NODESEND_REFRESH);
	}
	return ctl;
}

static struct fleet_node *find_node(struct kt_fleet *ctl, const char *name)
{
	char *const *hit = bsearch(&name, ctl->names, ctl->n, sizeof(*ctl->names), cmp_names);

	return hit ? &ctl->nodes[hit - ctl->names] : NULL;
}

/* many nodes: one LIST of the leases, so first renewals PUT without a GET */
static void seed_leases(struct kt_fleet *ctl)
{
	struct kt_err err = { 0 };
	cJSON *list, *items, *item;

	if (ctl->n < KT_FLEET_LIST_MIN)
		return;
	/* one try: on failure each node GETs its own, with its own backoff */
	list = kt_api_json(ctl->api, "GET", KT_LEASE_COLLECTION, NULL, NULL, KT_API_NO_RETRY,
			   &err);
	if (!list) {
		KT_V(1, "leases not listed", "error=\"%s\"", err.msg);
		return;
	}
	items = kt_json_get_array(list, "items");
	while (items && (item = cJSON_DetachItemFromArray(items, 0))) {
		const char *name = kt_json_get_string(kt_json_get_object(item, "metadata"), "name");
		struct fleet_node *node = name ? find_node(ctl, name) : NULL;

		if (!node) {
			cJSON_Delete(item);
			continue;
		}
		if (kt_lease_take_latest(&node->lease, item) < 0)
			broken(ctl, "out of memory");
	}
	cJSON_Delete(list);
}

/* once: all at once; else spread evenly over the first interval */
int kt_fleet_start(struct kt_fleet *ctl, struct kt_err *err)
{
	seed_leases(ctl);
	ctl->pending = ctl->n;
	for (size_t i = 0; i < ctl->n && !ctl->broken; i++) {
		struct fleet_node *node = &ctl->nodes[i];

		if (ctl->o.once) {
			node->due_ms = kt_loop_now(ctl->loop);
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
		kt_lease_release(&ctl->nodes[i].lease);
		kt_nodesend_release(&ctl->nodes[i].status);
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
