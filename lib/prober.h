/* SPDX-License-Identifier: Apache-2.0 */
/* prober: the kubelet's prober workers: which probes a pod has, ticks, gating, thresholds */
#ifndef KT_PROBER_H
#define KT_PROBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "loop.h"
#include "probe.h"

/* ------------------------------------------------ one worker, pure: no clock */

/*
 * The schedule and counts of one prober worker (pkg/kubelet/prober/worker.go),
 * driven by the caller with the time as an argument: it does no I/O and reads
 * no clock.  spec is borrowed and must outlive the worker.
 */
struct kt_prober_worker {
	const struct kt_probe_spec *spec;
	struct kt_probe_state st;
	int64_t start_ms;	/* when the container started: the initial delay counts from it */
	int64_t due_ms;		/* when the next tick is due */
	bool busy;		/* an attempt is in flight */
	bool pending;		/* a tick came while busy: it probes when the attempt ends */
};

enum kt_prober_step {
	KT_PROBER_PROBE = 1 << 8,	/* start an attempt now */
	KT_PROBER_QUEUED = 1 << 9,	/* ... and it waited for the previous one */
};

/* a worker whose container started at now; the first tick is due at once */
void kt_prober_worker_init(struct kt_prober_worker *w, const struct kt_probe_spec *spec,
			   int64_t now);

/*
 * The tick due at w->due_ms came at now.  Moves due_ms to the next tick, one
 * period on, dropping the ticks a late caller missed as Go's ticker does.
 * Returns KT_PROBER_PROBE when an attempt must start now (the caller then
 * calls kt_prober_worker_started), 0 when the tick is skipped (on hold, in
 * the initial delay, gated by the startup probe: started says whether the
 * container's startup probe has succeeded, true when it has none) or waits
 * for the attempt in flight.
 */
unsigned kt_prober_worker_tick(struct kt_prober_worker *w, int64_t now, bool started);

/* an attempt was started */
void kt_prober_worker_started(struct kt_prober_worker *w);

/*
 * The attempt in flight ended with r at now.  Returns the kt_probe_feed mask
 * of the result, with KT_PROBER_PROBE | KT_PROBER_QUEUED when a tick that came
 * meanwhile starts the next attempt now.
 */
unsigned kt_prober_worker_done(struct kt_prober_worker *w, enum kt_probe_result r,
			       int64_t now, bool started);

/*
 * The container's startup probe has just succeeded: a readiness worker probes
 * at once (the kubelet's status sync triggers it); KT_PROBER_PROBE or 0.
 */
unsigned kt_prober_worker_trigger(struct kt_prober_worker *w, int64_t now);

/* ---------------------------------------------------- the probes of a pod */

/* one probe found in a pod, with the container it belongs to */
struct kt_prober_probe {
	const cJSON *container;	/* borrowed from the pod */
	const cJSON *probe;	/* borrowed */
	enum kt_probe_type type;
	char field[160];	/* "spec.containers[0].readinessProbe", for messages */
};

/*
 * The pod spec of obj: its spec for a Pod (or an object with no kind), the
 * pod template's for a Deployment, StatefulSet, DaemonSet, ReplicaSet,
 * ReplicationController, Job and PodTemplate, the job template's for a
 * CronJob.  *prefix is the spec's field path ("spec", "spec.template.spec").
 * NULL (borrowed otherwise) for another kind or when there is no spec.
 */
const cJSON *kt_prober_pod_spec(const cJSON *obj, const char **prefix);

/*
 * The probes of a pod spec in the kubelet's order: for each container, then
 * each sidecar init container (restartPolicy Always), its startup, readiness
 * and liveness probes.  Only those of the container named container (NULL:
 * all) and whose type bit (1 << enum kt_probe_type) is in types.  prefix is
 * the spec's path for the field names.  Returns the count and *out (caller
 * frees with free(); NULL when 0); *matched says whether some container
 * passed the name filter.  -1 with err on allocation failure.
 */
int kt_prober_pod_probes(const cJSON *spec, const char *prefix, const char *container,
			 unsigned types, struct kt_prober_probe **out, bool *matched,
			 struct kt_err *err);

/* ------------------------------------------------- the workers on a loop */

struct kt_prober;

/* who a worker probes: the pod and the container */
struct kt_prober_target {
	char *uid;		/* metadata.uid, NULL when the pod has none or for a bare probe */
	char *pod;		/* "namespace/name", NULL for a bare probe */
	char *container;	/* NULL for a bare probe */
	char *host;		/* default host of its probes */
};

enum kt_prober_event {
	KT_PROBER_INITIAL,	/* the worker started: reported holds its initial value */
	KT_PROBER_RESULT,	/* an attempt ended: result, feed mask, output */
	KT_PROBER_STOPPED,	/* the worker was stopped */
};

struct kt_prober_report {
	enum kt_prober_event event;
	const struct kt_prober_target *target;
	enum kt_probe_type type;
	enum kt_probe_result result;	/* this attempt's (RESULT), else the reported value */
	enum kt_probe_result reported;	/* what the kubelet's results cache holds */
	unsigned feed;			/* RESULT: kt_probe_feed mask */
	bool result_changed;		/* RESULT: differs from the previous attempt's */
	int64_t run;			/* RESULT: this result so many times in a row */
	int64_t threshold;		/* ... out of this many to be reported */
	const char *output;		/* borrowed for the call; never NULL */
	size_t output_len;
};

typedef void kt_prober_report_fn(struct kt_prober *p, const struct kt_prober_report *r,
				 void *arg);

/* what the workers hold, for a verdict */
struct kt_prober_counts {
	size_t workers;
	size_t succeeded;	/* reported success after a threshold */
	size_t held;		/* a liveness or startup probe failed: held */
};

/* attempts in flight at once; more wait for a slot, in the order they came */
#define KT_PROBER_MAX_INFLIGHT 4096

enum kt_prober_flags {
	KT_PROBER_ONCE = 1 << 0,	/* each worker runs one attempt, no ticks */
	KT_PROBER_STATS = 1 << 1,	/* keep the lateness of every start */
	/* as the kubelet just after its start: a worker started within a period of
	 * kt_prober_run waits a random part of its period before its first tick,
	 * so that many probes do not all start at once */
	KT_PROBER_SPREAD = 1 << 2,
};

/*
 * A set of prober workers on loop (borrowed; it must outlive the prober).
 * fn is called from the loop for every report.  Caller owns; kt_prober_free.
 * NULL with err on allocation failure.
 */
/*
 * Exec probes of pods run through prog, as the kubelet runs them in the
 * container through the runtime: "prog UID CONTAINER -- COMMAND...", UID the
 * one the pod was added under, else its metadata.uid (a probe of a pod
 * without either, or a bare probe, runs as it is).  Set before pods
 * are added; prog is copied.  -1 with err when out of memory.
 */
int kt_prober_set_exec_via(struct kt_prober *p, const char *prog, struct kt_err *err);

struct kt_prober *kt_prober_new(struct kt_loop *loop, unsigned flags, kt_prober_report_fn *fn,
				void *arg, struct kt_err *err);

/*
 * Adds the workers of probes (from kt_prober_pod_probes) for the pod whose
 * uid (may be NULL), "namespace/name" label and host are given, or one bare
 * probe when pod_label is NULL (its container is then NULL).  Workers are
 * created and validated all first: on a bad probe nothing is added and err
 * (kind KT_ERR_INPUT) reads "source: field: what".  A pod with a uid that is
 * already there is replaced: its workers stop (STOPPED reports) first.  The
 * workers start at once (INITIAL reports) when the prober runs.  Returns the
 * number of workers added.
 */
int kt_prober_add(struct kt_prober *p, const char *uid, const char *pod_label,
		  const char *host, const struct kt_prober_probe *probes, size_t n,
		  const char *source, struct kt_err *err);

/*
 * Stops the workers of the pod with uid whose type bit is in types (all:
 * ~0u): attempts in flight are cancelled (an exec's process group killed),
 * each gives a STOPPED report.  Returns how many stopped.
 */
size_t kt_prober_stop(struct kt_prober *p, const char *uid, unsigned types);

/* starts every worker added so far, and those added later at once */
int kt_prober_run(struct kt_prober *p, struct kt_err *err);

/* what kt_prober_add_pod takes from a pod */
struct kt_prober_filter {
	const char *container;	/* only this container's probes; NULL: all */
	unsigned types;		/* 1 << enum kt_probe_type; 0 means all */
	const char *host;	/* when the pod has no status.podIP; NULL: 127.0.0.1 */
};

/*
 * Adds the probes of obj, a Pod or a workload (kt_prober_pod_spec), as
 * kt_prober_add: the pod is "namespace/name" from obj's metadata, the host
 * its status.podIP.  path prefixes the field names ("pod." in a command).
 * -1 with err (KT_ERR_INPUT for bad input, "source: ..."); *matched says
 * whether a container passed the filter's name.
 */
int kt_prober_add_pod(struct kt_prober *p, const cJSON *obj, const char *uid,
		      const char *path, const char *source, const struct kt_prober_filter *f,
		      bool *matched, struct kt_err *err);

/*
 * Adds the probes of the pods in path ("-": standard input): one Pod or
 * workload, or with many a stream of them and of PodLists (documents of
 * other kinds are skipped).  Without many, a kind that has no pod template,
 * an input without a pod, and a filter's container the pod does not have are
 * errors.  Returns the number of workers added, or -1 with err (kind
 * KT_ERR_INPUT for bad input) and the workers of earlier pods kept.
 */
int kt_prober_add_file(struct kt_prober *p, const char *path, bool many,
		       const struct kt_prober_filter *f, size_t max_input, struct kt_err *err);

/*
 * Adds one bare probe (a Probe object) of type; host NULL means 127.0.0.1;
 * source names it in messages ("-" is shown as "<stdin>").  As kt_prober_add.
 */
int kt_prober_add_probe(struct kt_prober *p, const cJSON *probe, enum kt_probe_type type,
			const char *host, const char *source, struct kt_err *err);

/*
 * One line of the control protocol (probe-run(1) --serve): a JSON object,
 * {"op":"start","pod":POD} starts the probes of POD (metadata.uid required),
 * replacing those of a pod with the same uid; {"op":"start","podFile":PATH}
 * the same with the pod read from PATH (kt_json_inline_file, at most
 * max_input bytes): one of the two, not both.  A pod without probes adds
 * nothing (and stops those of its uid).  {"op":"stop","uid":UID} stops
 * them, only those of the types named in an optional "types" array.  lineno
 * places errors: "<stdin>:LINE[:COL]: what".  A blank line is nothing.
 * 0, or -1 with err (KT_ERR_INPUT) and nothing changed.
 */
int kt_prober_command(struct kt_prober *p, const char *line, size_t len, long lineno,
		      const struct kt_prober_filter *f, size_t max_input, struct kt_err *err);

/* stops every worker, without reports */
void kt_prober_stop_all(struct kt_prober *p);

void kt_prober_count(const struct kt_prober *p, struct kt_prober_counts *c);

/* one worker as it is now, for kt_prober_each */
struct kt_prober_view {
	const struct kt_prober_target *target;
	enum kt_probe_type type;
	const struct kt_probe_state *st;
	enum kt_probe_result last;	/* the last attempt's result, UNKNOWN before any */
	const char *output;		/* the last attempt's output; never NULL */
	size_t output_len;
	bool done;			/* KT_PROBER_ONCE: its attempt ended */
};

/* fn for each worker, in the order they were added */
void kt_prober_each(const struct kt_prober *p,
		    void (*fn)(const struct kt_prober_view *v, void *arg), void *arg);

/*
 * KT_PROBER_STATS: how late attempts started against their tick, as a JSON
 * object: probes (starts made on their tick), lateMsP50, lateMsP99,
 * lateMsMax, and queued (starts that waited for the previous attempt).
 * Caller owns (cJSON_Delete); NULL on allocation failure.
 */
cJSON *kt_prober_stats(struct kt_prober *p);

void kt_prober_free(struct kt_prober *p);

/* ------------------------------------------------------------ what is said */

/*
 * A result line, the form pod-status reads: {"pod","uid" (when known),
 * "container"} for a pod's probe, "type" (always for a pod's, else when
 * with_type), "result", "output" (bad UTF-8 repaired), "stopped": true when
 * stopped.  Caller owns; NULL on allocation failure.
 */
cJSON *kt_prober_line(const struct kt_prober_target *t, enum kt_probe_type type,
		      bool with_type, enum kt_probe_result r, const char *output, size_t len,
		      bool stopped);

/*
 * A RESULT report as one line for a person: what, the result, how many in a
 * row out of the threshold, and the output on one line ("readiness probe of
 * ns/web container app: failure 1/3: HTTP probe failed with statuscode: 500").
 */
void kt_prober_progress_text(char *buf, size_t size, const struct kt_prober_report *r);

/*
 * Why the worker of v is not ready, for a person ("liveness probe failed 3
 * times in a row: ...", "not ready<when>: readiness probe: failure: ...",
 * "... not probed yet"); when is put after "not ready" (" after 30s").  false
 * (buf empty) when it has succeeded.
 */
bool kt_prober_why_text(char *buf, size_t size, const struct kt_prober_view *v,
			const char *when);

#endif
