/* SPDX-License-Identifier: Apache-2.0 */
/* probe: one kubelet probe attempt per handler on the loop, and the worker's thresholds */
#ifndef KT_PROBE_H
#define KT_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"
#include "loop.h"

/* the minor version sent in "User-Agent: kube-probe/1.NN" */
#define KT_PROBE_USER_AGENT "kube-probe/1.31"
/* output kept from an HTTP body or an exec's stdout+stderr, as upstream */
#define KT_PROBE_MAX_OUTPUT 10240
/* tries of one probe while the handler reports an error, as upstream */
#define KT_PROBE_MAX_TRIES 3
/* an exec command with $(VAR) expanded, NULs included: about what execve
 * takes on Linux, so a larger one could never run */
#define KT_PROBE_MAX_COMMAND (1024 * 1024)
/* same-host redirects: the tenth one fails */
#define KT_PROBE_MAX_REDIRECTS 10

enum kt_probe_result {
	KT_PROBE_SUCCESS = 0,
	KT_PROBE_WARNING,	/* success with something to say (an unfollowed redirect) */
	KT_PROBE_FAILURE,
	KT_PROBE_UNKNOWN,	/* every try ended in an error; the worker discards it */
};

enum kt_probe_type {
	KT_PROBE_LIVENESS = 0,
	KT_PROBE_READINESS,
	KT_PROBE_STARTUP,
};

enum kt_probe_kind {
	KT_PROBE_NONE = 0,
	KT_PROBE_EXEC,
	KT_PROBE_HTTP,
	KT_PROBE_TCP,
	KT_PROBE_GRPC,
};

/* "success" "warning" "failure" "unknown"; static strings */
const char *kt_probe_result_name(enum kt_probe_result r);
/* "liveness" "readiness" "startup"; static strings */
const char *kt_probe_type_name(enum kt_probe_type t);
/* the reverse of kt_probe_type_name; -1 for anything else */
int kt_probe_type_parse(const char *s, enum kt_probe_type *out);

struct kt_probe_header {
	char *name;	/* canonical form, as Go's http.Header would send it */
	char *value;
};

/*
 * A validated Probe with upstream's defaults applied.  Every pointer is owned
 * by the spec and freed by kt_probe_spec_release.
 */
struct kt_probe_spec {
	enum kt_probe_type type;
	enum kt_probe_kind kind;
	char **argv;		/* exec: NULL-terminated */
	size_t argc;
	bool https;		/* httpGet scheme HTTPS */
	char *host;		/* httpGet/tcpSocket host; NULL means the default host */
	int port;		/* resolved number, 1-65535 */
	char *path;		/* httpGet path, "/" by default */
	struct kt_probe_header *headers;
	size_t nheaders;
	char *service;		/* grpc service; NULL when not set */
	int64_t initial_delay_s;
	int64_t period_s;
	int64_t timeout_s;
	int64_t success_threshold;
	int64_t failure_threshold;
	bool has_grace;
	int64_t grace_s;	/* terminationGracePeriodSeconds when has_grace */
	/* exec: what runs argv in the container (the runtime's exec), its argv
	 * put before the probe's; NULL-terminated, NULL for none.  Messages
	 * name the probe's command alone, as the kubelet's do */
	char **exec_via;
};

/*
 * Fills spec from a Probe object, applies the API defaults and validates it
 * as the API server would.  container (borrowed, may be NULL) supplies the
 * named ports.  field is the path used in messages ("readinessProbe",
 * "spec.containers[0].livenessProbe").  On failure returns -1 with err of
 * kind KT_ERR_INPUT reading "<field>.<child>: Invalid value: ...", and spec
 * released.  The spec must be released with kt_probe_spec_release.
 */
int kt_probe_spec_parse(struct kt_probe_spec *spec, const cJSON *probe,
			enum kt_probe_type type, const cJSON *container, const char *field,
			struct kt_err *err);
/* frees what spec owns and zeroes it; accepts a zeroed spec */
void kt_probe_spec_release(struct kt_probe_spec *spec);

/* ---------------------------------------------------------- one probe */

struct kt_probe_outcome {
	enum kt_probe_result result;
	const char *output;	/* borrowed until the callback returns; never NULL */
	size_t output_len;	/* output may hold NUL bytes from an exec */
	int tries;		/* 1-3 */
};

typedef void kt_probe_done_fn(struct kt_loop *loop, const struct kt_probe_outcome *o,
			      void *arg);

/* one probe in flight: the loop's until fn returns or kt_probe_cancel */
struct kt_probe_call;

/*
 * Starts one probe: an attempt with the handler of spec, tried again (up to
 * KT_PROBE_MAX_TRIES) while the attempt ends in an error rather than a
 * result; an error on the last try gives KT_PROBE_UNKNOWN with the error
 * text as output.  host is used when the spec has none (copied).  spec is
 * borrowed and must outlive the call.  fn is always called later from the
 * loop, never from inside this function; the call frees itself after fn
 * returns.  NULL with err on allocation failure only.
 */
struct kt_probe_call *kt_probe_start(struct kt_loop *loop, const struct kt_probe_spec *spec,
				     const char *host, kt_probe_done_fn *fn, void *arg,
				     struct kt_err *err);
/* stops a call still in flight (kills an exec's process group); fn is not called */
void kt_probe_cancel(struct kt_probe_call *call);

/* ------------------------------------------------- the worker's thresholds */

/*
 * What the prober worker keeps between results, without any clock: pure.
 * reported is the value the kubelet's results cache holds (SUCCESS, FAILURE
 * or UNKNOWN for a startup probe not yet decided).
 */
struct kt_probe_state {
	enum kt_probe_type type;
	int64_t success_threshold;
	int64_t failure_threshold;
	enum kt_probe_result last;	/* last counted result, UNKNOWN before any */
	int64_t run;			/* how many times in a row */
	enum kt_probe_result reported;
	bool settled;			/* reported was set by a threshold */
	bool on_hold;			/* liveness/startup failed: no probing until restart */
};

enum kt_probe_feed {
	KT_PROBE_FEED_SET = 1 << 0,	/* a threshold was reached: the cache was set */
	KT_PROBE_FEED_CHANGED = 1 << 1,	/* and the value differs: an update is sent */
	KT_PROBE_FEED_HOLD = 1 << 2,	/* liveness/startup failure: the worker holds */
};

/* initial values as upstream: readiness FAILURE, liveness SUCCESS, startup UNKNOWN */
void kt_probe_state_init(struct kt_probe_state *st, const struct kt_probe_spec *spec);

/*
 * Counts one probe result (WARNING counts as SUCCESS, UNKNOWN is discarded)
 * and returns a mask of enum kt_probe_feed.  Results fed while on hold are
 * ignored.
 */
unsigned kt_probe_state_feed(struct kt_probe_state *st, enum kt_probe_result r);

/*
 * Whether the worker probes on this tick: not on hold, past the initial delay
 * (whole seconds since the container started, elapsed_ms), and allowed by the
 * startup gate: a startup probe runs only while the container is not started,
 * liveness and readiness only once it is.
 */
bool kt_probe_state_due(const struct kt_probe_state *st, const struct kt_probe_spec *spec,
			int64_t elapsed_ms, bool started);

#endif
