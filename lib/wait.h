/* SPDX-License-Identifier: Apache-2.0 */
/* wait: kube-wait's judgement: an object and a condition in, met, not yet or never out */
#ifndef KT_WAIT_H
#define KT_WAIT_H

#include <stdbool.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * What `kubectl wait --for` and `kubectl rollout status` decide, as pure
 * functions: the caller follows the objects (a watch) and asks, at each
 * version, whether each condition holds.  Pure: no I/O, no clock.
 *
 * Conditions (the text after --for):
 *   condition=TYPE[=STATUS]  status.conditions has TYPE with STATUS (default
 *                            True); both compared without regard to case, as
 *                            kubectl does; a condition whose observedGeneration
 *                            is older than metadata.generation is not yet met
 *   jsonpath=EXPR[=VALUE]    EXPR (with or without its braces) finds a value
 *                            equal to VALUE as kubectl prints it (strings
 *                            bare, numbers as Go prints them, true/false,
 *                            null); with no VALUE, the path exists.  EXPR is
 *                            the subset kubectl wait takes: .field, ['key'],
 *                            ["key"], [N] (negative from the end), [*] and the
 *                            filter [?(@.a.b=="v")] (== or !=, a string or a
 *                            number); a filter or [*] must find one value
 *   create                   the object exists
 *   delete                   the object does not exist
 *   rollout                  a Deployment, StatefulSet or DaemonSet is rolled
 *                            out, as kubectl rollout status judges it; an
 *                            object of another kind (which kubectl refuses)
 *                            once it exists, so that a whole manifest can be
 *                            waited for
 */

#define KT_WAIT_PATH_MAX 32 /* steps of a jsonpath */

enum kt_wait_form {
	KT_WAIT_CONDITION,
	KT_WAIT_JSONPATH,
	KT_WAIT_CREATE,
	KT_WAIT_DELETE,
	KT_WAIT_ROLLOUT,
};

enum kt_wait_step_kind {
	KT_WAIT_STEP_KEY,    /* .key or ['key'] */
	KT_WAIT_STEP_INDEX,  /* [N] */
	KT_WAIT_STEP_ALL,    /* [*] */
	KT_WAIT_STEP_FILTER, /* [?(@.path OP literal)] */
};

struct kt_wait_step {
	enum kt_wait_step_kind kind;
	char *key;     /* KEY; FILTER: the dotted path after @. */
	long index;    /* INDEX */
	bool negate;   /* FILTER: != */
	char *literal; /* FILTER: the value as kubectl would print it */
};

struct kt_wait_cond {
	enum kt_wait_form form;
	char *text;   /* the --for text as given */
	char *type;   /* CONDITION */
	char *status; /* CONDITION: "True" unless given */
	char *expr;   /* JSONPATH: the expression as given, without =VALUE */
	struct kt_wait_step steps[KT_WAIT_PATH_MAX]; /* JSONPATH */
	int nsteps;
	char *value; /* JSONPATH: NULL when none: the path exists */
};

/*
 * Parses a --for text into c (zeroed or released before).  -1 with err
 * (KT_ERR_INPUT, "--for 'TEXT': what is wrong") when it is not one of the
 * forms above.  kt_wait_cond_release frees what c holds.
 */
int kt_wait_cond_parse(const char *text, struct kt_wait_cond *c, struct kt_err *err);
void kt_wait_cond_release(struct kt_wait_cond *c);

/*
 * Whether sel is a label selector (field false: the API's syntax, key,
 * !key, key=v, key==v, key!=v, key in (v,...), key notin (v,...), key>N,
 * key<N, comma-separated, keys and values as labels take them) or a field
 * selector (field true: name=v, name==v, name!=v, with \ escaping , = ! \
 * in a value), so that a bad one is refused before any request.  -1 with
 * err (KT_ERR_INPUT, "--selector 'SEL': what is wrong").
 */
int kt_wait_selector_check(const char *sel, bool field, struct kt_err *err);

enum kt_wait_verdict {
	KT_WAIT_NOT_YET, /* may hold later */
	KT_WAIT_MET,
	KT_WAIT_NEVER, /* cannot hold: reason says why */
};

#define KT_WAIT_REASON_MAX 512

struct kt_wait_result {
	enum kt_wait_verdict verdict;
	char reason[KT_WAIT_REASON_MAX]; /* what was seen, one line ("" when nothing to say) */
};

/*
 * Whether c holds for obj, the object's latest version (NULL: it does not
 * exist).  The reason of NOT_YET says
 * what is awaited, as kubectl rollout status says it.
 */
void kt_wait_judge(const struct kt_wait_cond *c, const cJSON *obj, struct kt_wait_result *res);

/*
 * The fail-fast rules: NEVER with the state when obj is in one it does not
 * leave by itself (a pod waiting in CrashLoopBackOff, ImagePullBackOff,
 * ErrImagePull, CreateContainerConfigError or InvalidImageName, or
 * PodScheduled=False reason Unschedulable; a Job Failed=True; a Deployment
 * Progressing=False reason ProgressDeadlineExceeded), else NOT_YET.  The
 * caller asks this only for a condition that is not met.
 */
void kt_wait_fail_fast(const cJSON *obj, struct kt_wait_result *res);

/*
 * The value a jsonpath finds in obj: NULL when it finds nothing; *many set
 * when it finds more than one (the first returned).  Borrowed from obj.
 */
const cJSON *kt_wait_path_find(const struct kt_wait_cond *c, const cJSON *obj, bool *many);

#endif
