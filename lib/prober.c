/* SPDX-License-Identifier: Apache-2.0 */
/* prober: the kubelet's prober workers: a pure schedule, a pod's probes, the loop driver */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "log.h"
#include "prober.h"

/* ------------------------------------------------ one worker, pure: no clock */

void kt_prober_worker_init(struct kt_prober_worker *w, const struct kt_probe_spec *spec,
			   int64_t now)
{
	memset(w, 0, sizeof(*w));
	w->spec = spec;
	kt_probe_state_init(&w->st, spec);
	w->start_ms = now;
	w->due_ms = now;
}

static unsigned probe_if_due(const struct kt_prober_worker *w, int64_t now, bool started)
{
	return kt_probe_state_due(&w->st, w->spec, now - w->start_ms, started) ? KT_PROBER_PROBE
										: 0;
}

unsigned kt_prober_worker_tick(struct kt_prober_worker *w, int64_t now, bool started)
{
	int64_t period = (w->spec->period_s > 0 ? w->spec->period_s : 10) * 1000;

	if (w->st.on_hold) {
		w->due_ms = -1;
		return 0;
	}
	/* the next tick keeps the period whatever this probe takes; a caller later
	 * than a whole period drops the ticks it missed, as Go's ticker does */
	w->due_ms += period;
	while (w->due_ms <= now)
		w->due_ms += period;
	/* a tick that comes while a probe runs waits for it, and only one waits */
	if (w->busy) {
		w->pending = true;
		return 0;
	}
	return probe_if_due(w, now, started);
}

void kt_prober_worker_started(struct kt_prober_worker *w)
{
	w->busy = true;
}

unsigned kt_prober_worker_done(struct kt_prober_worker *w, enum kt_probe_result r,
			       int64_t now, bool started)
{
	unsigned m;

	w->busy = false;
	m = kt_probe_state_feed(&w->st, r);
	if (w->pending) {
		w->pending = false;
		if (probe_if_due(w, now, started))
			m |= KT_PROBER_PROBE | KT_PROBER_QUEUED;
	}
	return m;
}

unsigned kt_prober_worker_trigger(struct kt_prober_worker *w, int64_t now)
{
	if (w->spec->type != KT_PROBE_READINESS || w->busy)
		return 0;
	return probe_if_due(w, now, true);
}

/* ---------------------------------------------------- the probes of a pod */

const cJSON *kt_prober_pod_spec(const cJSON *obj, const char **prefix)
{
	static const char *const templated[] = { "Deployment", "StatefulSet", "DaemonSet",
						 "ReplicaSet", "ReplicationController", "Job" };
	const char *kind = kt_json_get_string(obj, "kind");
	const cJSON *spec = kt_json_get_object(obj, "spec");

	*prefix = "spec";
	if (!kind || strcmp(kind, "Pod") == 0)
		return spec;
	if (strcmp(kind, "PodTemplate") == 0) {
		*prefix = "template.spec";
		return kt_json_get_object(kt_json_get_object(obj, "template"), "spec");
	}
	if (strcmp(kind, "CronJob") == 0) {
		*prefix = "spec.jobTemplate.spec.template.spec";
		spec = kt_json_get_object(kt_json_get_object(spec, "jobTemplate"), "spec");
		return kt_json_get_object(kt_json_get_object(spec, "template"), "spec");
	}
	for (size_t i = 0; i < sizeof(templated) / sizeof(templated[0]); i++) {
		if (strcmp(kind, templated[i]) == 0) {
			*prefix = "spec.template.spec";
			return kt_json_get_object(kt_json_get_object(spec, "template"), "spec");
		}
	}
	return NULL;
}

struct probe_list {
	struct kt_prober_probe *v;
	size_t n, cap;
};

static int probe_list_add(struct probe_list *l, const cJSON *c, const cJSON *probe,
			  enum kt_probe_type type, const char *prefix, const char *list,
			  int idx, const char *key)
{
	struct kt_prober_probe *p;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		p = realloc(l->v, l->cap * sizeof(*p));
		if (!p)
			return -1;
		l->v = p;
	}
	p = &l->v[l->n++];
	p->container = c;
	p->probe = probe;
	p->type = type;
	snprintf(p->field, sizeof(p->field), "%s.%s[%d].%s", prefix, list, idx, key);
	return 0;
}

int kt_prober_pod_probes(const cJSON *spec, const char *prefix, const char *container,
			 unsigned types, struct kt_prober_probe **out, bool *matched,
			 struct kt_err *err)
{
	/* the kubelet's order within a container: startup, readiness, liveness */
	static const char *const keys[] = { "startupProbe", "readinessProbe", "livenessProbe" };
	static const enum kt_probe_type order[] = { KT_PROBE_STARTUP, KT_PROBE_READINESS,
						    KT_PROBE_LIVENESS };
	static const char *const lists[] = { "containers", "initContainers" };
	struct probe_list l = { 0 };
	const cJSON *c;

	*matched = false;
	for (size_t li = 0; li < 2; li++) {
		int idx = 0;

		cJSON_ArrayForEach(c, kt_json_get_array(spec, lists[li])) {
			const char *cn = kt_json_get_string(c, "name");
			const char *rp = kt_json_get_string(c, "restartPolicy");
			/* an init container is probed only as a sidecar */
			bool sidecar = li == 0 || (rp && strcmp(rp, "Always") == 0);

			idx++;
			if (!sidecar || (container && (!cn || strcmp(cn, container) != 0)))
				continue;
			*matched = true;
			for (size_t k = 0; k < 3; k++) {
				const cJSON *probe = kt_json_get(c, keys[k]);

				if (!probe || cJSON_IsNull(probe) || !(types & (1u << order[k])))
					continue;
				if (probe_list_add(&l, c, probe, order[k], prefix, lists[li],
						   idx - 1, keys[k]) < 0) {
					free(l.v);
					return kt_error(err, "out of memory");
				}
			}
		}
	}
	*out = l.v;
	return (int)l.n;
}

/* ------------------------------------------------- the workers on a loop */

struct pod;

struct pworker {
	struct kt_prober *p;
	struct pod *pod;
	struct kt_prober_target *t;
	struct kt_probe_spec spec;
	struct kt_prober_worker w;
	struct kt_probe_call *call;
	struct kt_timer *timer;
	enum kt_probe_result last;
	char *output;
	size_t output_len;
	bool done;
	bool attempted;			/* last holds a result */
	struct pworker *wprev, *wnext;	/* in the queue for a slot */
	bool waiting;
	bool on_tick;			/* the attempt to launch was due at tick_due */
	int64_t tick_due;
};

/* a pod's workers; a container's startup worker gates the others */
struct pod {
	char *uid;
	struct kt_prober_target *targets;
	struct pworker **startup;	/* per target */
	size_t ntargets;
	struct pworker **ws;
	size_t nws;
	struct pod *prev, *next;
};

struct kt_prober {
	struct kt_loop *loop;
	unsigned flags;
	kt_prober_report_fn *fn;
	void *arg;
	bool running;
	int64_t run_ms;			/* when kt_prober_run was called */
	uint64_t rng;			/* xorshift state for KT_PROBER_SPREAD */
	struct pod *head, *tail;
	int64_t *late;
	size_t nlate, late_cap, queued;
	/* attempts in flight, and the workers waiting for one to end */
	size_t inflight;
	struct pworker *whead, *wtail;
	char *exec_via;			/* kt_prober_set_exec_via */
	const char *adding_uid;		/* metadata.uid of the pod being added */
};

struct kt_prober *kt_prober_new(struct kt_loop *loop, unsigned flags, kt_prober_report_fn *fn,
				void *arg, struct kt_err *err)
{
	struct kt_prober *p = calloc(1, sizeof(*p));

	if (!p) {
		kt_error(err, "out of memory");
		return NULL;
	}
	p->loop = loop;
	p->flags = flags;
	p->fn = fn;
	p->arg = arg;
	return p;
}

int kt_prober_set_exec_via(struct kt_prober *p, const char *prog, struct kt_err *err)
{
	char *copy = strdup(prog);

	if (!copy)
		return kt_error(err, "out of memory");
	free(p->exec_via);
	p->exec_via = copy;
	return 0;
}

/* "VIA UID CONTAINER --" before the probe's own argv: the UID the pod was
 * added under, else its metadata.uid */
static int exec_via(struct pworker *pw)
{
	const char *uid = pw->t->uid ? pw->t->uid : pw->p->adding_uid;
	const char *parts[] = { pw->p->exec_via, uid, pw->t->container, "--" };
	char **v;

	if (!pw->p->exec_via || pw->spec.kind != KT_PROBE_EXEC || !uid || !*uid ||
	    !pw->t->container)
		return 0;
	v = calloc(5, sizeof(*v));
	if (!v)
		return -1;
	pw->spec.exec_via = v;
	for (size_t i = 0; i < 4; i++)
		if (!(v[i] = strdup(parts[i])))
			return -1;
	return 0;
}

static size_t target_index(const struct pworker *pw)
{
	return (size_t)(pw->t - pw->pod->targets);
}

static bool started(const struct pworker *pw)
{
	const struct pworker *s = pw->pod->startup[target_index(pw)];

	return !s || s->w.st.reported == KT_PROBE_SUCCESS;
}

static void report(struct pworker *pw, enum kt_prober_event ev, const char *out, size_t len)
{
	struct kt_prober_report r = {
		.event = ev,
		.target = pw->t,
		.type = pw->spec.type,
		.result = pw->w.st.reported,
		.reported = pw->w.st.reported,
		.output = out ? out : "",
		.output_len = out ? len : 0,
	};

	pw->p->fn(pw->p, &r, pw->p->arg);
}

static void note_lateness(struct kt_prober *p, int64_t late)
{
	int64_t *l;

	if (!(p->flags & KT_PROBER_STATS))
		return;
	if (p->nlate == p->late_cap) {
		l = realloc(p->late, (p->late_cap ? p->late_cap * 2 : 4096) * sizeof(*l));
		if (!l)
			return;
		p->late = l;
		p->late_cap = p->late_cap ? p->late_cap * 2 : 4096;
	}
	p->late[p->nlate++] = late;
}

static void on_done(struct kt_loop *loop, const struct kt_probe_outcome *o, void *arg);

static void wait_unlink(struct kt_prober *p, struct pworker *pw)
{
	if (!pw->waiting)
		return;
	if (pw->wprev)
		pw->wprev->wnext = pw->wnext;
	else
		p->whead = pw->wnext;
	if (pw->wnext)
		pw->wnext->wprev = pw->wprev;
	else
		p->wtail = pw->wprev;
	pw->wprev = pw->wnext = NULL;
	pw->waiting = false;
}

static void launch(struct pworker *pw)
{
	struct kt_err err = { 0 };

	pw->call = kt_probe_start(pw->p->loop, &pw->spec, pw->t->host, on_done, pw, &err);
	if (!pw->call) {
		KT_WARN("probe not started", "reason=\"%s\"", err.msg);
		pw->w.busy = false;
		return;
	}
	pw->p->inflight++;
	/* lateness is counted when the attempt really starts, slot wait included */
	if (pw->on_tick)
		note_lateness(pw->p, kt_loop_now(pw->p->loop) - pw->tick_due);
	pw->on_tick = false;
}

/*
 * Past KT_PROBER_MAX_INFLIGHT attempts in flight, an attempt waits for a
 * slot, first come first served: libcurl's cost per transfer grows with the
 * transfers it holds, so an overloaded loop would otherwise do less the
 * more it is asked.
 */
static void attempt(struct pworker *pw)
{
	struct kt_prober *p = pw->p;

	kt_prober_worker_started(&pw->w);
	if (p->inflight < KT_PROBER_MAX_INFLIGHT) {
		launch(pw);
		return;
	}
	pw->waiting = true;
	pw->wprev = p->wtail;
	if (p->wtail)
		p->wtail->wnext = pw;
	else
		p->whead = pw;
	p->wtail = pw;
}

static void refill(struct kt_prober *p)
{
	while (p->whead && p->inflight < KT_PROBER_MAX_INFLIGHT) {
		struct pworker *pw = p->whead;

		wait_unlink(p, pw);
		launch(pw);
	}
}

static void keep_output(struct pworker *pw, const struct kt_probe_outcome *o)
{
	char *out = malloc(o->output_len + 1);

	if (!out)
		return;
	memcpy(out, o->output, o->output_len);
	out[o->output_len] = '\0';
	free(pw->output);
	pw->output = out;
	pw->output_len = o->output_len;
}

/* the startup probe just succeeded: readiness is probed at once */
static void trigger_readiness(struct pworker *startup)
{
	struct pod *pod = startup->pod;
	int64_t now = kt_loop_now(startup->p->loop);

	for (size_t i = 0; i < pod->nws; i++) {
		struct pworker *pw = pod->ws[i];

		if (pw->t == startup->t && kt_prober_worker_trigger(&pw->w, now)) {
			startup->p->queued++;
			attempt(pw);
		}
	}
}

static void on_done(struct kt_loop *loop, const struct kt_probe_outcome *o, void *arg)
{
	struct pworker *pw = arg;
	struct kt_prober_report r = { .event = KT_PROBER_RESULT, .target = pw->t };
	enum kt_probe_result prev = pw->last;
	unsigned m;

	pw->call = NULL;
	pw->p->inflight--;
	refill(pw->p);
	pw->last = o->result;
	keep_output(pw, o);
	if (pw->p->flags & KT_PROBER_ONCE) {
		pw->w.busy = false;
		pw->done = true;
		m = 0;
	} else {
		m = kt_prober_worker_done(&pw->w, o->result, kt_loop_now(loop), started(pw));
	}
	KT_V(2, "probe result", "pod=\"%s\" container=\"%s\" type=\"%s\" result=\"%s\" "
	     "reported=\"%s\" output=\"%.*s\"", pw->t->pod ? pw->t->pod : "",
	     pw->t->container ? pw->t->container : "", kt_probe_type_name(pw->spec.type),
	     kt_probe_result_name(o->result), kt_probe_result_name(pw->w.st.reported),
	     (int)(o->output_len > 200 ? 200 : o->output_len), o->output);
	r.type = pw->spec.type;
	r.result = o->result;
	r.reported = pw->w.st.reported;
	r.feed = m & 0xff;
	r.result_changed = !pw->attempted || prev != o->result;
	pw->attempted = true;
	if (m & KT_PROBE_FEED_HOLD)
		r.run = pw->w.st.failure_threshold;
	else if (pw->w.st.last == (o->result == KT_PROBE_WARNING ? KT_PROBE_SUCCESS : o->result))
		r.run = pw->w.st.run;
	r.threshold = pw->w.st.last == KT_PROBE_FAILURE ? pw->w.st.failure_threshold
							: pw->w.st.success_threshold;
	r.output = o->output;
	r.output_len = o->output_len;
	pw->p->fn(pw->p, &r, pw->p->arg);
	if ((m & KT_PROBE_FEED_CHANGED) && pw->spec.type == KT_PROBE_STARTUP &&
	    pw->w.st.reported == KT_PROBE_SUCCESS)
		trigger_readiness(pw);
	if (m & KT_PROBER_PROBE) {
		pw->p->queued++;
		attempt(pw);
	}
}

static void on_tick(struct kt_loop *loop, void *arg)
{
	struct pworker *pw = arg;
	int64_t due = pw->w.due_ms, now = kt_loop_now(loop);
	unsigned step;

	pw->timer = NULL;
	step = kt_prober_worker_tick(&pw->w, now, started(pw));
	if (pw->w.due_ms >= 0) {
		pw->timer = kt_timer_add(loop, pw->w.due_ms - now, on_tick, pw);
		if (!pw->timer)
			KT_WARN("probe worker stopped", "reason=\"out of memory\"");
	}
	if (step & KT_PROBER_PROBE) {
		pw->on_tick = true;
		pw->tick_due = due;
		attempt(pw);
	}
}

/* KT_PROBER_SPREAD: how long a worker started now waits before its first tick */
static int64_t first_delay(struct kt_prober *p, int64_t period_ms, int64_t now)
{
	if (!(p->flags & KT_PROBER_SPREAD) || now - p->run_ms >= period_ms)
		return 0;
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return (int64_t)(p->rng % (uint64_t)period_ms);
}

static void worker_start(struct pworker *pw)
{
	struct kt_loop *loop = pw->p->loop;
	int64_t now = kt_loop_now(loop), delay;

	if (pw->p->flags & KT_PROBER_ONCE) {
		attempt(pw);
		return;
	}
	kt_prober_worker_init(&pw->w, &pw->spec, now);
	delay = first_delay(pw->p, pw->spec.period_s * 1000, now);
	pw->w.due_ms = now + delay;
	report(pw, KT_PROBER_INITIAL, "", 0);
	pw->timer = kt_timer_add(loop, delay, on_tick, pw);
	if (!pw->timer)
		KT_WARN("probe worker not started", "reason=\"out of memory\"");
}

static void worker_free(struct pworker *pw)
{
	if (!pw)
		return;
	if (pw->timer)
		kt_timer_cancel(pw->p->loop, pw->timer);
	wait_unlink(pw->p, pw);
	if (pw->call)
		pw->p->inflight--;
	kt_probe_cancel(pw->call);
	kt_probe_spec_release(&pw->spec);
	free(pw->output);
	free(pw);
}

static void target_release(struct kt_prober_target *t)
{
	free(t->uid);
	free(t->pod);
	free(t->container);
	free(t->host);
}

static void pod_free(struct pod *pod)
{
	if (!pod)
		return;
	for (size_t i = 0; i < pod->nws; i++)
		worker_free(pod->ws[i]);
	for (size_t i = 0; i < pod->ntargets; i++)
		target_release(&pod->targets[i]);
	free(pod->targets);
	free(pod->startup);
	free(pod->ws);
	free(pod->uid);
	free(pod);
}

static void pod_unlink(struct kt_prober *p, struct pod *pod)
{
	if (pod->prev)
		pod->prev->next = pod->next;
	else
		p->head = pod->next;
	if (pod->next)
		pod->next->prev = pod->prev;
	else
		p->tail = pod->prev;
	pod->prev = pod->next = NULL;
}

static struct pod *pod_find(const struct kt_prober *p, const char *uid)
{
	for (struct pod *pod = p->head; pod; pod = pod->next) {
		if (pod->uid && strcmp(pod->uid, uid) == 0)
			return pod;
	}
	return NULL;
}

static int target_init(struct kt_prober_target *t, const char *uid, const char *label,
		       const char *container, const char *host)
{
	t->uid = uid ? strdup(uid) : NULL;
	t->pod = label ? strdup(label) : NULL;
	t->container = label ? strdup(container ? container : "") : NULL;
	t->host = strdup(host);
	if ((uid && !t->uid) || (label && (!t->pod || !t->container)) || !t->host)
		return -1;
	return 0;
}

/* the pod's targets: one per distinct container, in order */
static int pod_targets(struct pod *pod, const char *uid, const char *label, const char *host,
		       const struct kt_prober_probe *probes, size_t n, size_t *which)
{
	pod->targets = calloc(n ? n : 1, sizeof(*pod->targets));
	pod->startup = calloc(n ? n : 1, sizeof(*pod->startup));
	if (!pod->targets || !pod->startup)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && probes[i].container == probes[i - 1].container) {
			which[i] = pod->ntargets - 1;
			continue;
		}
		which[i] = pod->ntargets;
		if (target_init(&pod->targets[pod->ntargets++], uid, label,
				kt_json_get_string(probes[i].container, "name"), host) < 0)
			return -1;
	}
	return 0;
}

/* the workers of probes, parsed and validated; nothing runs yet */
static struct pod *pod_build(struct kt_prober *p, const char *uid, const char *label,
			     const char *host, const struct kt_prober_probe *probes, size_t n,
			     const char *source, struct kt_err *err)
{
	struct pod *pod = calloc(1, sizeof(*pod));
	size_t *which = calloc(n ? n : 1, sizeof(*which));

	if (!pod || !which)
		goto oom;
	pod->uid = uid ? strdup(uid) : NULL;
	pod->ws = calloc(n ? n : 1, sizeof(*pod->ws));
	if ((uid && !pod->uid) || !pod->ws ||
	    pod_targets(pod, uid, label, host, probes, n, which) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		struct pworker *pw = calloc(1, sizeof(*pw));

		if (!pw)
			goto oom;
		pod->ws[pod->nws++] = pw;
		pw->p = p;
		pw->pod = pod;
		pw->t = &pod->targets[which[i]];
		pw->last = KT_PROBE_UNKNOWN;
		if (kt_probe_spec_parse(&pw->spec, probes[i].probe, probes[i].type,
					probes[i].container, probes[i].field, err) < 0) {
			kt_err_prefix(err, "%s", source);
			goto fail;
		}
		if (exec_via(pw) < 0)
			goto oom;
		kt_prober_worker_init(&pw->w, &pw->spec, 0);
		if (probes[i].type == KT_PROBE_STARTUP)
			pod->startup[which[i]] = pw;
	}
	free(which);
	return pod;
oom:
	kt_error(err, "out of memory");
fail:
	free(which);
	pod_free(pod);
	return NULL;
}

int kt_prober_add(struct kt_prober *p, const char *uid, const char *pod_label,
		  const char *host, const struct kt_prober_probe *probes, size_t n,
		  const char *source, struct kt_err *err)
{
	struct pod *pod = pod_build(p, uid, pod_label, host, probes, n, source, err);

	if (!pod)
		return -1;
	if (uid)
		kt_prober_stop(p, uid, ~0u);
	if (n == 0) {
		pod_free(pod);
		return 0;
	}
	pod->prev = p->tail;
	if (p->tail)
		p->tail->next = pod;
	else
		p->head = pod;
	p->tail = pod;
	if (p->running) {
		for (size_t i = 0; i < pod->nws; i++)
			worker_start(pod->ws[i]);
	}
	return (int)n;
}

size_t kt_prober_stop(struct kt_prober *p, const char *uid, unsigned types)
{
	struct pod *pod = pod_find(p, uid);
	size_t stopped = 0, kept = 0;

	if (!pod)
		return 0;
	for (size_t i = 0; i < pod->nws; i++) {
		struct pworker *pw = pod->ws[i];

		if (!(types & (1u << pw->spec.type))) {
			pod->ws[kept++] = pw;
			continue;
		}
		/* with its startup worker gone, the container counts as started */
		if (pod->startup[target_index(pw)] == pw)
			pod->startup[target_index(pw)] = NULL;
		if (p->running)
			report(pw, KT_PROBER_STOPPED, "", 0);
		worker_free(pw);
		stopped++;
	}
	pod->nws = kept;
	if (kept == 0) {
		pod_unlink(p, pod);
		pod_free(pod);
	}
	refill(p);
	return stopped;
}

int kt_prober_run(struct kt_prober *p, struct kt_err *err)
{
	(void)err;
	p->running = true;
	p->run_ms = kt_loop_now(p->loop);
	p->rng = (uint64_t)p->run_ms * 2654435761u ^ (uint64_t)(uintptr_t)p ^ 0x9e3779b97f4a7c15u;
	if (p->rng == 0)
		p->rng = 1;
	for (struct pod *pod = p->head; pod; pod = pod->next) {
		for (size_t i = 0; i < pod->nws; i++)
			worker_start(pod->ws[i]);
	}
	return 0;
}

void kt_prober_stop_all(struct kt_prober *p)
{
	if (!p)
		return;
	while (p->whead)
		wait_unlink(p, p->whead);
	while (p->head) {
		struct pod *pod = p->head;

		pod_unlink(p, pod);
		pod_free(pod);
	}
}

void kt_prober_count(const struct kt_prober *p, struct kt_prober_counts *c)
{
	memset(c, 0, sizeof(*c));
	for (const struct pod *pod = p->head; pod; pod = pod->next) {
		for (size_t i = 0; i < pod->nws; i++) {
			const struct kt_probe_state *st = &pod->ws[i]->w.st;

			c->workers++;
			if (st->settled && st->reported == KT_PROBE_SUCCESS)
				c->succeeded++;
			if (st->on_hold)
				c->held++;
		}
	}
}

void kt_prober_each(const struct kt_prober *p,
		    void (*fn)(const struct kt_prober_view *v, void *arg), void *arg)
{
	for (const struct pod *pod = p->head; pod; pod = pod->next) {
		for (size_t i = 0; i < pod->nws; i++) {
			const struct pworker *pw = pod->ws[i];
			struct kt_prober_view v = {
				.target = pw->t,
				.type = pw->spec.type,
				.st = &pw->w.st,
				.last = pw->last,
				.output = pw->output ? pw->output : "",
				.output_len = pw->output ? pw->output_len : 0,
				.done = pw->done,
			};

			fn(&v, arg);
		}
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

cJSON *kt_prober_stats(struct kt_prober *p)
{
	cJSON *doc = cJSON_CreateObject();
	size_t n = p->nlate;
	int64_t *l = p->late;
	int rc = doc ? 0 : -1;

	if (n > 1)
		qsort(l, n, sizeof(*l), cmp_i64);
	rc |= kt_json_set(doc, "probes", kt_json_num_new_int((int64_t)n));
	rc |= kt_json_set(doc, "lateMsP50", kt_json_num_new_int(n ? l[n / 2] : 0));
	rc |= kt_json_set(doc, "lateMsP99", kt_json_num_new_int(n ? l[n * 99 / 100] : 0));
	rc |= kt_json_set(doc, "lateMsMax", kt_json_num_new_int(n ? l[n - 1] : 0));
	rc |= kt_json_set(doc, "queued", kt_json_num_new_int((int64_t)p->queued));
	if (rc != 0) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

void kt_prober_free(struct kt_prober *p)
{
	if (!p)
		return;
	kt_prober_stop_all(p);
	free(p->late);
	free(p->exec_via);
	free(p);
}

/* ------------------------------------------------------- pods and commands */

int kt_prober_add_pod(struct kt_prober *p, const cJSON *obj, const char *uid,
		      const char *path, const char *source, const struct kt_prober_filter *f,
		      bool *matched, struct kt_err *err)
{
	const cJSON *meta = kt_json_get_object(obj, "metadata"), *spec;
	const char *ns = kt_json_get_string(meta, "namespace");
	const char *name = kt_json_get_string(meta, "name");
	const char *ip = kt_json_get_string(kt_json_get(obj, "status"), "podIP");
	const char *host = ip && *ip ? ip : f->host ? f->host : "127.0.0.1";
	const char *prefix;
	struct kt_prober_probe *probes = NULL;
	char label[512], field[128];
	int n;

	*matched = false;
	if (!cJSON_IsObject(obj) || !name)
		return kt_error_kind(err, KT_ERR_INPUT, "%s: not a Pod: %smetadata.name is missing",
				     source, path);
	spec = kt_prober_pod_spec(obj, &prefix);
	snprintf(label, sizeof(label), "%s/%s", ns && *ns ? ns : "default", name);
	snprintf(field, sizeof(field), "%s%s", path, prefix);
	n = kt_prober_pod_probes(spec, field, f->container, f->types ? f->types : ~0u, &probes,
				 matched, err);
	p->adding_uid = kt_json_get_string(meta, "uid");
	if (n >= 0)
		n = kt_prober_add(p, uid, label, host, probes, (size_t)n, source, err);
	p->adding_uid = NULL;
	free(probes);
	return n;
}

/* one document of a pod file: a pod, a workload, or a PodList with many */
static int add_doc(struct kt_prober *p, const cJSON *doc, bool many, const char *path,
		   const struct kt_prober_filter *f, struct kt_err *err)
{
	const cJSON *items = many ? kt_json_get_array(doc, "items") : NULL, *item;
	const char *kind = kt_json_get_string(doc, "kind"), *prefix;
	bool matched;
	int n = 0, rc;

	cJSON_ArrayForEach(item, items) {
		rc = kt_prober_add_pod(p, item, NULL, "", path, f, &matched, err);
		if (rc < 0)
			return -1;
		n += rc;
	}
	if (items)
		return n;
	if (!many && kind && !kt_prober_pod_spec(doc, &prefix))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: a %s has no pod template", path,
				     kind);
	rc = kt_prober_add_pod(p, doc, NULL, "", path, f, &matched, err);
	if (rc >= 0 && !many && !matched && f->container)
		return kt_error_kind(err, KT_ERR_INPUT, "%s: pod '%s' has no container '%s'",
				     path, kt_json_get_string(kt_json_get(doc, "metadata"), "name"),
				     f->container);
	return rc;
}

int kt_prober_add_file(struct kt_prober *p, const char *path, bool many,
		       const struct kt_prober_filter *f, size_t max_input, struct kt_err *err)
{
	struct kt_json_reader *r;
	cJSON *doc = NULL;
	int rc, n = 0, docs = 0;

	r = kt_json_reader_open(path, max_input, many ? KT_JSON_STREAM : 0, err);
	if (!r)
		return -1;
	while ((rc = kt_json_reader_next(r, &doc, err)) > 0) {
		rc = add_doc(p, doc, many, path, f, err);
		cJSON_Delete(doc);
		if (rc < 0)
			break;
		n += rc;
		docs++;
	}
	kt_json_reader_close(r);
	if (rc == 0 && docs == 0 && !many)
		rc = kt_error_kind(err, KT_ERR_INPUT, "%s: no pod in the input", path);
	return rc < 0 ? -1 : n;
}

int kt_prober_add_probe(struct kt_prober *p, const cJSON *probe, enum kt_probe_type type,
			const char *host, const char *source, struct kt_err *err)
{
	struct kt_prober_probe pr = { .probe = probe, .type = type };

	snprintf(pr.field, sizeof(pr.field), "%sProbe", kt_probe_type_name(type));
	return kt_prober_add(p, NULL, NULL, host ? host : "127.0.0.1", &pr, 1,
			     strcmp(source, "-") == 0 ? "<stdin>" : source, err);
}

static int command_start(struct kt_prober *p, cJSON *cmd, const char *source,
			 const struct kt_prober_filter *f, size_t max_input, struct kt_err *err)
{
	const cJSON *pod;
	const char *uid;
	bool matched;

	/* a pod by its file is read here, once, as podworker-step reads one */
	if (kt_json_inline_file(cmd, "pod", "podFile", max_input, err) < 0) {
		err->kind = KT_ERR_INPUT;
		kt_err_prefix(err, "%s", source);
		return -1;
	}
	pod = kt_json_get(cmd, "pod");
	uid = kt_json_get_string(kt_json_get(pod, "metadata"), "uid");
	if (!cJSON_IsObject(pod))
		return kt_error_kind(err, KT_ERR_INPUT,
				     "%s: pod: Required value: a Pod object, or its podFile",
				     source);
	if (!uid || !*uid)
		return kt_error_kind(err, KT_ERR_INPUT,
				     "%s: pod.metadata.uid: Required value", source);
	return kt_prober_add_pod(p, pod, uid, "pod.", source, f, &matched, err) < 0 ? -1 : 0;
}

static int command_stop(struct kt_prober *p, const cJSON *cmd, const char *source,
			struct kt_err *err)
{
	const char *uid = kt_json_get_string(cmd, "uid");
	const cJSON *types = kt_json_get(cmd, "types"), *t;
	unsigned mask = 0;
	enum kt_probe_type type;
	int i = 0;

	if (!uid || !*uid)
		return kt_error_kind(err, KT_ERR_INPUT, "%s: uid: Required value", source);
	if (types && !cJSON_IsArray(types))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: types: Invalid value: must be an array",
				     source);
	cJSON_ArrayForEach(t, types) {
		if (!cJSON_IsString(t) || kt_probe_type_parse(t->valuestring, &type) < 0)
			return kt_error_kind(err, KT_ERR_INPUT,
					     "%s: types[%d]: Unsupported value: supported values: "
					     "\"liveness\", \"readiness\", \"startup\"", source, i);
		mask |= 1u << type;
		i++;
	}
	kt_prober_stop(p, uid, types ? mask : ~0u);
	return 0;
}

int kt_prober_command(struct kt_prober *p, const char *line, size_t len, long lineno,
		      const struct kt_prober_filter *f, size_t max_input, struct kt_err *err)
{
	const char *op;
	char source[48];
	cJSON *cmd;
	int rc;
	size_t i = 0;

	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i == len)
		return 0;
	cmd = kt_json_parse_at("<stdin>", line, len, lineno, 1, err);
	if (!cmd) {
		err->kind = KT_ERR_INPUT;
		return -1;
	}
	snprintf(source, sizeof(source), "<stdin>:%ld", lineno);
	op = kt_json_get_string(cmd, "op");
	if (!cJSON_IsObject(cmd))
		rc = kt_error_kind(err, KT_ERR_INPUT, "%s: Invalid value: %s: must be an object",
				   source, kt_json_type_name(cmd));
	else if (!op)
		rc = kt_error_kind(err, KT_ERR_INPUT, "%s: op: Required value", source);
	else if (strcmp(op, "start") == 0)
		rc = command_start(p, cmd, source, f, max_input, err);
	else if (strcmp(op, "stop") == 0)
		rc = command_stop(p, cmd, source, err);
	else
		rc = kt_error_kind(err, KT_ERR_INPUT, "%s: op: Unsupported value: \"%.64s\": "
				   "supported values: \"start\", \"stop\"", source, op);
	cJSON_Delete(cmd);
	return rc;
}

/* ------------------------------------------------------------ what is said */

cJSON *kt_prober_line(const struct kt_prober_target *t, enum kt_probe_type type,
		      bool with_type, enum kt_probe_result r, const char *output, size_t len,
		      bool stopped)
{
	cJSON *doc = cJSON_CreateObject();
	int rc = doc ? 0 : -1;

	if (t->pod) {
		rc |= kt_json_set(doc, "pod", cJSON_CreateString(t->pod));
		if (t->uid)
			rc |= kt_json_set(doc, "uid", cJSON_CreateString(t->uid));
		rc |= kt_json_set(doc, "container", cJSON_CreateString(t->container));
	}
	if (with_type || t->pod)
		rc |= kt_json_set(doc, "type", cJSON_CreateString(kt_probe_type_name(type)));
	rc |= kt_json_set(doc, "result", cJSON_CreateString(kt_probe_result_name(r)));
	rc |= kt_json_set(doc, "output", kt_json_string_from_bytes(output, len));
	if (stopped)
		rc |= kt_json_set(doc, "stopped", cJSON_CreateTrue());
	if (rc != 0) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/* "readiness probe", or "readiness probe of ns/web container app" */
static void describe(char *buf, size_t size, const struct kt_prober_target *t,
		     enum kt_probe_type type)
{
	if (t->pod)
		snprintf(buf, size, "%s probe of %s container %s", kt_probe_type_name(type),
			 t->pod, t->container);
	else
		snprintf(buf, size, "%s probe", kt_probe_type_name(type));
}

/* output on one line: control characters as spaces, no trailing blanks, cut */
static void one_line(char *buf, size_t size, const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < size; i++)
		buf[n++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}

void kt_prober_progress_text(char *buf, size_t size, const struct kt_prober_report *r)
{
	char what[400], out[256], count[48] = "";

	describe(what, sizeof(what), r->target, r->type);
	one_line(out, sizeof(out), r->output, r->output_len);
	if (r->run > 0)
		snprintf(count, sizeof(count), " %lld/%lld", (long long)r->run,
			 (long long)r->threshold);
	snprintf(buf, size, "%s: %s%s%s%s", what, kt_probe_result_name(r->result), count,
		 *out ? ": " : "", out);
}

bool kt_prober_why_text(char *buf, size_t size, const struct kt_prober_view *v,
			const char *when)
{
	char what[400], out[256];

	buf[0] = '\0';
	if (v->st->settled && v->st->reported == KT_PROBE_SUCCESS)
		return false;
	describe(what, sizeof(what), v->target, v->type);
	one_line(out, sizeof(out), v->output, v->output_len);
	if (v->st->on_hold)
		snprintf(buf, size, "%s failed %lld times in a row: %s", what,
			 (long long)v->st->failure_threshold, out);
	else if (v->last == KT_PROBE_UNKNOWN && !*out)
		snprintf(buf, size, "not ready%s: %s: not probed yet", when, what);
	else
		snprintf(buf, size, "not ready%s: %s: %s: %s", when, what,
			 kt_probe_result_name(v->last), out);
	return true;
}
