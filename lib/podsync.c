/* SPDX-License-Identifier: Apache-2.0 */
/* podsync: the kubelet's status manager on the loop, for the pods of a kt-agent state directory */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "core.h"
#include "json.h"
#include "json_go.h"
#include "log.h"
#include "podrt.h"
#include "podstatus.h"
#include "podsync.h"
#include "timeutil.h"

/* sends at once: the rest wait their turn */
#define SYNC_PARALLEL 4

struct sync_pod {
	struct sync_pod *next;	 /* all pods */
	struct sync_pod *next_q; /* the pods waiting for a turn */
	struct kt_podsync *ps;
	char uid[65];
	bool terminal, busy, dirty, queued, deleted, forget;
	cJSON *taken;	    /* the last status the server took */
	cJSON *pod;	    /* while a send runs: the pod read */
	cJSON *next_status; /* while a patch runs: what it sends */
	struct kt_api_call *call;
	struct kt_timer *retry;
	struct kt_backoff backoff;
};

struct kt_podsync {
	struct kt_api *api;
	struct kt_loop *loop;
	char *state_dir;
	kt_podsync_fn *fn;
	void *arg;
	struct sync_pod *pods, *q_head, *q_tail;
	int running, failures;
	bool draining;
};

struct kt_podsync *kt_podsync_new(struct kt_api *api, struct kt_loop *loop, const char *state_dir,
				  kt_podsync_fn *fn, void *arg, struct kt_err *err)
{
	struct kt_podsync *ps = calloc(1, sizeof(*ps));

	if (ps)
		ps->state_dir = strdup(state_dir);
	if (!ps || !ps->state_dir) {
		free(ps);
		kt_error(err, "out of memory");
		return NULL;
	}
	ps->api = api;
	ps->loop = loop;
	ps->fn = fn;
	ps->arg = arg;
	return ps;
}

static void pod_free(struct sync_pod *p)
{
	kt_api_cancel(p->call);
	if (p->retry)
		kt_timer_cancel(p->ps->loop, p->retry);
	cJSON_Delete(p->taken);
	cJSON_Delete(p->pod);
	cJSON_Delete(p->next_status);
	free(p);
}

static void pod_start(struct sync_pod *p);

/* the next pod waiting for a turn, if a turn is free */
static void next_turn(struct kt_podsync *ps)
{
	while (ps->q_head && ps->running < SYNC_PARALLEL) {
		struct sync_pod *p = ps->q_head;

		ps->q_head = p->next_q;
		if (!ps->q_head)
			ps->q_tail = NULL;
		p->next_q = NULL;
		p->queued = false;
		pod_start(p);
	}
}

/* unlinks and frees a pod the sync forgets */
static void pod_drop(struct sync_pod *p)
{
	struct kt_podsync *ps = p->ps;
	struct sync_pod **pp;

	for (pp = &ps->pods; *pp && *pp != p; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = p->next;
	pod_free(p);
}

static void on_retry(struct kt_loop *loop, void *arg)
{
	struct sync_pod *p = arg;

	(void)loop;
	p->retry = NULL;
	pod_start(p);
}

/* the send ended; ok false: it failed and is tried again later */
static void pod_done(struct sync_pod *p, bool ok)
{
	struct kt_podsync *ps = p->ps;

	p->busy = false;
	ps->running--;
	cJSON_Delete(p->pod);
	cJSON_Delete(p->next_status);
	p->pod = p->next_status = NULL;
	p->call = NULL;
	if (p->forget) {
		pod_drop(p);
	} else if (ok) {
		kt_backoff_reset(&p->backoff);
		if (p->dirty) {
			p->dirty = false;
			pod_start(p);
		}
	} else if (ps->draining && !p->dirty) {
		ps->failures++;
	} else if (p->dirty) {
		p->dirty = false;
		pod_start(p);
	} else {
		int64_t wait = kt_backoff_next(&p->backoff, kt_loop_now(ps->loop));

		p->retry = kt_timer_add(ps->loop, wait < 0 ? 10000 : wait, on_retry, p);
		KT_V(4, "pod status sent again later", "uid=\"%s\" ms=%lld", p->uid,
		     (long long)wait);
	}
	next_turn(ps);
}

static void report(struct sync_pod *p, enum kt_podsync_event ev, const char *phase,
		   const char *ready, const struct kt_err *err)
{
	p->ps->fn(p->uid, ev, phase, ready, err, p->ps->arg);
}

static void on_deleted(struct kt_api_call *call, struct kt_api_resp *resp, const struct kt_err *err,
		       void *arg)
{
	struct sync_pod *p = arg;

	(void)call;
	(void)resp;
	p->call = NULL;
	if (err && err->http_status != 404 && err->http_status != 409) {
		report(p, KT_PODSYNC_FAILED, NULL, NULL, err);
		pod_done(p, false);
		return;
	}
	/* 404: gone already; 409: its UID precondition failed, another pod
	 * of that name: this one is gone too */
	p->deleted = true;
	report(p, err ? KT_PODSYNC_GONE : KT_PODSYNC_DELETED, NULL, NULL, NULL);
	pod_done(p, true);
}

/* "/api/v1/namespaces/NS/pods/NAME" into buf; -1 with err when the pod names
 * itself in a way no path may hold */
static int pod_path(const cJSON *pod, char *buf, size_t size, struct kt_err *err)
{
	const cJSON *md = kt_json_get(pod, "metadata");
	const char *ns = kt_json_get_string(md, "namespace"),
		   *name = kt_json_get_string(md, "name");

	if (!ns)
		ns = "default";
	if (!name || !name[0] ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(name) ||
	    strspn(ns, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(ns) || !ns[0])
		return kt_error_kind(err, KT_ERR_INPUT,
				     "metadata: a namespace and name the API would not take");
	if ((size_t)snprintf(buf, size, "/api/v1/namespaces/%s/pods/%s", ns, name) >= size)
		return kt_error_kind(err, KT_ERR_INPUT, "metadata: name too long");
	return 0;
}

/* the final status is there: the pod object goes when its deletion has begun */
static void pod_delete_step(struct sync_pod *p)
{
	const cJSON *md = kt_json_get(p->pod, "metadata");
	struct kt_api_req req = { .method = "DELETE", .flags = KT_API_PRECONDITION };
	struct kt_err err = { 0 };
	char path[600], body[200];

	if (!p->terminal || p->deleted || !kt_json_get_string(md, "deletionTimestamp")) {
		pod_done(p, true);
		return;
	}
	if (pod_path(p->pod, path, sizeof(path), &err) < 0) {
		report(p, KT_PODSYNC_FAILED, NULL, NULL, &err);
		pod_done(p, true);
		return;
	}
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"DeleteOptions\",\"gracePeriodSeconds\":0,"
		 "\"preconditions\":{\"uid\":\"%s\"}}",
		 p->uid);
	req.path = path;
	req.body = body;
	req.body_len = strlen(body);
	p->call = kt_api_start(p->ps->api, p->ps->loop, &req, on_deleted, p, &err);
	if (!p->call) {
		report(p, KT_PODSYNC_FAILED, NULL, NULL, &err);
		pod_done(p, false);
	}
}

/* the phase and the Ready condition's status of a status */
static void brief(const cJSON *st, const char **phase, const char **ready)
{
	const cJSON *c;

	*phase = kt_json_get_string(st, "phase");
	*ready = "False";
	if (!*phase)
		*phase = "Unknown";
	cJSON_ArrayForEach (c, kt_json_get(st, "conditions")) {
		const char *type = kt_json_get_string(c, "type");

		if (type && strcmp(type, "Ready") == 0 && kt_json_get_string(c, "status")) {
			*ready = kt_json_get_string(c, "status");
			break;
		}
	}
}

static void on_patched(struct kt_api_call *call, struct kt_api_resp *resp, const struct kt_err *err,
		       void *arg)
{
	struct sync_pod *p = arg;
	const char *phase, *ready;

	(void)call;
	(void)resp;
	p->call = NULL;
	if (err && (err->http_status == 404 || err->http_status == 409)) {
		/* the pod is gone, or another pod has its name now */
		report(p, KT_PODSYNC_GONE, NULL, NULL, NULL);
		p->forget = true;
		pod_done(p, true);
		return;
	}
	if (err) {
		report(p, KT_PODSYNC_FAILED, NULL, NULL, err);
		pod_done(p, false);
		return;
	}
	cJSON_Delete(p->taken);
	p->taken = p->next_status;
	p->next_status = NULL;
	brief(p->taken, &phase, &ready);
	report(p, KT_PODSYNC_PATCHED, phase, ready, NULL);
	pod_delete_step(p);
}

/* reads the pod, computes its status, sends it when it changed */
static void pod_send(struct sync_pod *p)
{
	struct kt_podsync *ps = p->ps;
	struct kt_podrt rt;
	struct kt_err err = { 0 };
	struct kt_podstatus_opts o = { .terminal = p->terminal, .now_us = kt_now_us() };
	struct kt_api_req req = { .method = "PATCH",
				  .content_type = "application/merge-patch+json",
				  .flags = KT_API_PRECONDITION };
	const cJSON *current;
	cJSON *st = NULL, *patch = NULL;
	char path[600], *text = NULL;

	if (kt_podrt_read(ps->state_dir, p->uid, &rt, &err) < 0) {
		kt_podrt_release(&rt);
		if (err.kind == KT_ERR_NOTFOUND) {
			/* the agent forgot the pod */
			p->forget = true;
			pod_done(p, true);
			return;
		}
		report(p, KT_PODSYNC_FAILED, NULL, NULL, &err);
		pod_done(p, false);
		return;
	}
	current = p->taken ? p->taken : kt_json_get(rt.pod, "status");
	o.current = current;
	o.probes = rt.probes;
	o.kill = rt.kill;
	st = kt_podstatus_compute(rt.runtime, &o, &err);
	p->pod = rt.pod;
	rt.pod = NULL;
	if (st && current && kt_go_equal(st, current)) {
		/* what the server has already */
		cJSON_Delete(st);
		kt_podrt_release(&rt);
		if (!p->taken)
			p->taken = kt_json_dup(current);
		pod_delete_step(p);
		return;
	}
	if (!st || kt_podstatus_patch(p->pod, current, st, &patch, &err) < 0 ||
	    pod_path(p->pod, path, sizeof(path) - 8, &err) < 0) {
		cJSON_Delete(st);
		cJSON_Delete(patch);
		kt_podrt_release(&rt);
		report(p, KT_PODSYNC_FAILED, NULL, NULL, &err);
		/* the files may be mid-change: the next push reads them again */
		pod_done(p, err.kind != KT_ERR_FAIL);
		return;
	}
	kt_podrt_release(&rt);
	strcat(path, "/status");
	text = kt_json_print(patch, KT_JSON_SORTED | KT_JSON_NO_NEWLINE);
	cJSON_Delete(patch);
	p->next_status = st;
	if (!text) {
		kt_error(&err, "out of memory");
		report(p, KT_PODSYNC_FAILED, NULL, NULL, &err);
		pod_done(p, false);
		return;
	}
	req.path = path;
	req.body = text;
	req.body_len = strlen(text);
	p->call = kt_api_start(ps->api, ps->loop, &req, on_patched, p, &err);
	free(text);
	if (!p->call) {
		report(p, KT_PODSYNC_FAILED, NULL, NULL, &err);
		pod_done(p, false);
	}
}

static void pod_start(struct sync_pod *p)
{
	struct kt_podsync *ps = p->ps;

	if (p->retry) {
		kt_timer_cancel(ps->loop, p->retry);
		p->retry = NULL;
	}
	if (ps->running >= SYNC_PARALLEL) {
		if (!p->queued) {
			p->queued = true;
			if (ps->q_tail)
				ps->q_tail->next_q = p;
			else
				ps->q_head = p;
			ps->q_tail = p;
		}
		return;
	}
	p->busy = true;
	ps->running++;
	pod_send(p);
}

int kt_podsync_push(struct kt_podsync *ps, const char *uid, bool terminal, struct kt_err *err)
{
	struct sync_pod *p;

	for (p = ps->pods; p && strcmp(p->uid, uid) != 0; p = p->next)
		;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return kt_error(err, "out of memory");
		snprintf(p->uid, sizeof(p->uid), "%s", uid);
		p->ps = ps;
		p->backoff = (struct kt_backoff){
			.first_ms = 1000,
			.cap_ms = 10000,
			.factor = 2,
			.jitter = 0.1,
		};
		p->backoff.seed = (unsigned)kt_now_us();
		p->next = ps->pods;
		ps->pods = p;
	}
	p->terminal = p->terminal || terminal;
	if (p->busy)
		p->dirty = true;
	else if (!p->queued)
		pod_start(p);
	return 0;
}

void kt_podsync_drain(struct kt_podsync *ps)
{
	ps->draining = true;
	for (struct sync_pod *p = ps->pods; p; p = p->next)
		if (p->retry)
			pod_start(p);
}

int kt_podsync_failures(const struct kt_podsync *ps)
{
	return ps->failures;
}

void kt_podsync_free(struct kt_podsync *ps)
{
	struct sync_pod *p, *next;

	if (!ps)
		return;
	for (p = ps->pods; p; p = next) {
		next = p->next;
		pod_free(p);
	}
	free(ps->state_dir);
	free(ps);
}
