/* SPDX-License-Identifier: Apache-2.0 */
/* podstatus: generateAPIPodStatus, getPhase and the status manager's conditions, pure */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "podstatus.h"
#include "probe_results.h"
#include "core.h"
#include "json.h"
#include "podworker.h"
#include "smp.h"
#include "timeutil.h"

/* ----------------------------------------------------------- probe results */

enum pr_type { PR_LIVENESS, PR_READINESS, PR_STARTUP };
enum pr_result { PR_NONE, PR_SUCCESS, PR_FAILURE };

struct pr_entry {
	char *container, *where;
	enum pr_type type;
	enum pr_result result;
};

/* one pod's latest results: a pod has a handful, so a list is searched */
struct pr_pod {
	struct pr_entry *e;
	size_t n, cap;
};

/* pods by "namespace/name", so a pod's lookups never see other pods' results */
struct kt_probe_results {
	struct kt_hmap by_pod;
	struct pr_pod **all;
	size_t n;
};

#define bad(err, ...) kt_error_kind(err, KT_ERR_INPUT, __VA_ARGS__)

struct kt_probe_results *kt_probe_results_new(void)
{
	struct kt_probe_results *pr = calloc(1, sizeof(*pr));

	if (pr)
		pr->by_pod.own_keys = true;
	return pr;
}

void kt_probe_results_free(struct kt_probe_results *pr)
{
	if (!pr)
		return;
	for (size_t i = 0; i < pr->n; i++) {
		for (size_t j = 0; j < pr->all[i]->n; j++) {
			free(pr->all[i]->e[j].container);
			free(pr->all[i]->e[j].where);
		}
		free(pr->all[i]->e);
		free(pr->all[i]);
	}
	free(pr->all);
	kt_hmap_release(&pr->by_pod);
	free(pr);
}

/* the pod's list, made when missing; NULL when out of memory */
static struct pr_pod *pod_results(struct kt_probe_results *pr, const char *pod)
{
	struct pr_pod *pp = kt_hmap_get(&pr->by_pod, pod), **all;

	if (pp)
		return pp;
	pp = calloc(1, sizeof(*pp));
	all = realloc(pr->all, (pr->n + 1) * sizeof(*all));
	if (all)
		pr->all = all;
	if (!pp || !all || kt_hmap_put(&pr->by_pod, pod, pp) < 0) {
		free(pp);
		return NULL;
	}
	pr->all[pr->n++] = pp;
	return pp;
}

bool kt_probe_results_is_line(const cJSON *doc)
{
	return cJSON_IsObject(doc) && kt_json_get(doc, "result") &&
	       kt_json_get(doc, "type") && !kt_json_get(doc, "spec");
}

/* the string at key, or NULL after filling err */
static const char *want_string(const cJSON *obj, const char *key, const char *where,
			       struct kt_err *err)
{
	const cJSON *v = kt_json_get(obj, key);

	if (!v) {
		bad(err, "%s%s: missing", where, key);
		return NULL;
	}
	if (!cJSON_IsString(v)) {
		bad(err, "%s%s: expected a string, got %s", where, key,
		    kt_json_type_name(v));
		return NULL;
	}
	if (!*v->valuestring) {
		bad(err, "%s%s: empty", where, key);
		return NULL;
	}
	return v->valuestring;
}

static int pick(const char *s, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

int kt_probe_results_add(struct kt_probe_results *pr, const cJSON *line,
			 const char *where, struct kt_err *err)
{
	static const char *const types[] = { "liveness", "readiness", "startup" };
	static const char *const results[] = { "unknown", "success", "failure",
					       "warning" };
	const char *pod, *ctr, *type, *result;
	struct pr_entry *e = NULL;
	struct pr_pod *pp;
	int t, r;

	if (!cJSON_IsObject(line))
		return bad(err, "not a probe result: expected an object, got %s",
			   kt_json_type_name(line));
	pod = want_string(line, "pod", "", err);
	ctr = pod ? want_string(line, "container", "", err) : NULL;
	type = ctr ? want_string(line, "type", "", err) : NULL;
	result = type ? want_string(line, "result", "", err) : NULL;
	if (!result)
		return -1;
	t = pick(type, types, 3);
	if (t < 0)
		return bad(err, "type: '%s' is not liveness, readiness or startup", type);
	r = pick(result, results, 4);
	if (r < 0)
		return bad(err, "result: '%s' is not success, failure or unknown",
			   result);
	pp = pod_results(pr, pod);
	if (!pp)
		return kt_error(err, "out of memory");
	for (size_t i = 0; i < pp->n && !e; i++)
		if ((int)pp->e[i].type == t && strcmp(pp->e[i].container, ctr) == 0)
			e = &pp->e[i];
	if (!e) {
		if (pp->n == pp->cap) {
			size_t cap = pp->cap ? pp->cap * 2 : 4;
			struct pr_entry *ne = realloc(pp->e, cap * sizeof(*ne));

			if (!ne)
				return kt_error(err, "out of memory");
			pp->e = ne;
			pp->cap = cap;
		}
		e = &pp->e[pp->n];
		*e = (struct pr_entry){ .container = strdup(ctr),
					.type = (enum pr_type)t };
		if (!e->container)
			return kt_error(err, "out of memory");
		pp->n++;
	}
	free(e->where);
	e->where = strdup(where ? where : "");
	e->result = r == 0 ? PR_NONE : r == 2 ? PR_FAILURE : PR_SUCCESS;
	return e->where ? 0 : kt_error(err, "out of memory");
}

static const struct pr_pod *probes_of(const struct kt_probe_results *pr, const char *pod)
{
	return pr ? kt_hmap_get(&pr->by_pod, pod) : NULL;
}

static enum pr_result probe_result(const struct pr_pod *pp, const char *ctr,
				   enum pr_type type)
{
	for (size_t i = 0; pp && i < pp->n; i++)
		if (pp->e[i].type == type && strcmp(pp->e[i].container, ctr) == 0)
			return pp->e[i].result;
	return PR_NONE;
}

const char *kt_podstatus_key(const cJSON *pod, char *buf, size_t size)
{
	const cJSON *md = kt_json_get_object(pod, "metadata");
	const char *ns = kt_json_get_string(md, "namespace");
	const char *name = kt_json_get_string(md, "name");

	snprintf(buf, size, "%s/%s", ns && *ns ? ns : "default", name ? name : "");
	return buf;
}

/* ------------------------------------------------------------- the view */

enum ct_kind { CT_INIT, CT_REGULAR, CT_EPHEMERAL };
enum ct_state { ST_NONE, ST_WAITING, ST_RUNNING, ST_TERMINATED };

static const char *const list_spec[] = { "initContainers", "containers",
					 "ephemeralContainers" };
static const char *const list_status[] = { "initContainerStatuses", "containerStatuses",
					   "ephemeralContainerStatuses" };

/* one container: its spec, what the runtime said, and what we make of it */
struct ctr {
	const cJSON *spec;
	const char *name;
	enum ct_kind kind;
	bool sidecar;	 /* an init container with restartPolicy Always */
	const cJSON *in; /* its status in the input, or NULL */
	cJSON *out;	 /* the new status, owned until it joins the result */
	enum ct_state state, last;
	int64_t exit_code, last_exit;
	bool started, ready;
};

struct view {
	const cJSON *pod, *spec, *status;
	const char *policy; /* the pod's restartPolicy, "Always" when unset */
	bool rules;	    /* some container sets its own restartPolicy */
	struct ctr *c;
	size_t n, count[3];
	char key[512];
	int64_t generation; /* metadata.generation, 0 when unset */
};

static struct ctr *find_ctr(const struct view *v, const char *name, int kind)
{
	for (size_t i = 0; i < v->n; i++)
		if ((kind < 0 || (int)v->c[i].kind == kind) &&
		    strcmp(v->c[i].name, name) == 0)
			return &v->c[i];
	return NULL;
}

static int check_int(const cJSON *v, const char *path, int64_t min, int64_t max,
		     int64_t *out, struct kt_err *err)
{
	struct kt_err e2 = { 0 };

	if (!kt_json_is_number(v) || kt_json_num_int64(v, out, &e2) < 0)
		return bad(err, "%s: expected an integer, got %s", path,
			   kt_json_is_number(v) ? "a fraction" : kt_json_type_name(v));
	if (*out < min || *out > max)
		return bad(err, "%s: %lld is out of range (%lld to %lld)", path,
			   (long long)*out, (long long)min, (long long)max);
	return 0;
}

static int check_time(const cJSON *obj, const char *key, const char *path,
		      struct kt_err *err)
{
	const cJSON *v = kt_json_get(obj, key);
	int64_t us;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || kt_time_parse(v->valuestring, &us, NULL) < 0)
		return bad(err, "%s.%s: expected an RFC 3339 time, got %s", path, key,
			   cJSON_IsString(v) ? "a string that is not one"
					     : kt_json_type_name(v));
	return 0;
}

/*
 * A ContainerState: at most one of waiting, running, terminated.  Sets the
 * state found and, for terminated, the exit code.
 */
static int check_state(const cJSON *st, const char *path, enum ct_state *out,
		       int64_t *code, struct kt_err *err)
{
	static const char *const keys[] = { "waiting", "running", "terminated" };
	const cJSON *it, *first = NULL;
	char sub[400];

	*out = ST_NONE;
	*code = 0;
	if (!st || cJSON_IsNull(st))
		return 0;
	if (!cJSON_IsObject(st))
		return bad(err, "%s: expected an object, got %s", path,
			   kt_json_type_name(st));
	cJSON_ArrayForEach (it, st) {
		int k = pick(it->string, keys, 3);

		if (k < 0)
			return bad(err,
				   "%s.%s: not a container state (waiting, running or "
				   "terminated)",
				   path, it->string);
		if (cJSON_IsNull(it))
			continue;
		snprintf(sub, sizeof(sub), "%s.%s", path, it->string);
		if (!cJSON_IsObject(it))
			return bad(err, "%s: expected an object, got %s", sub,
				   kt_json_type_name(it));
		if (first)
			return bad(err,
				   "%s: more than one state (%s, %s): a container is in "
				   "one state at a time",
				   path, first->string, it->string);
		first = it;
		*out = (enum ct_state)(k + 1);
		if (k == 1 && check_time(it, "startedAt", sub, err) < 0)
			return -1;
		if (k == 2) {
			const cJSON *ec = kt_json_get(it, "exitCode");
			char ecp[420];

			snprintf(ecp, sizeof(ecp), "%s.exitCode", sub);
			if (ec && check_int(ec, ecp, INT32_MIN, INT32_MAX, code, err) < 0)
				return -1;
			if (check_time(it, "startedAt", sub, err) < 0 ||
			    check_time(it, "finishedAt", sub, err) < 0)
				return -1;
		}
	}
	return 0;
}

static int check_status_entry(struct view *v, const cJSON *cs, int kind, int idx,
			      struct kt_err *err)
{
	char path[300], sub[340];
	const cJSON *rc;
	const char *name;
	struct ctr *c;
	int64_t n;

	snprintf(path, sizeof(path), "status.%s[%d]", list_status[kind], idx);
	if (!cJSON_IsObject(cs))
		return bad(err, "%s: expected an object, got %s", path,
			   kt_json_type_name(cs));
	snprintf(sub, sizeof(sub), "%s.", path);
	name = want_string(cs, "name", sub, err);
	if (!name)
		return -1;
	c = find_ctr(v, name, kind);
	if (!c)
		return bad(err, "%s.name: no container '%s' in spec.%s", path, name,
			   list_spec[kind]);
	if (c->in)
		return bad(err, "%s.name: a second status for container '%s'", path,
			   name);
	c->in = cs;
	snprintf(sub, sizeof(sub), "%s.state", path);
	if (check_state(kt_json_get(cs, "state"), sub, &c->state, &c->exit_code, err) < 0)
		return -1;
	snprintf(sub, sizeof(sub), "%s.lastState", path);
	if (check_state(kt_json_get(cs, "lastState"), sub, &c->last, &c->last_exit, err) <
	    0)
		return -1;
	rc = kt_json_get(cs, "restartCount");
	snprintf(sub, sizeof(sub), "%s.restartCount", path);
	if (rc && !cJSON_IsNull(rc) && check_int(rc, sub, 0, INT32_MAX, &n, err) < 0)
		return -1;
	return 0;
}

/* restartPolicyRules: [{"action":"Restart","exitCodes":{"operator":"In","values":[..]}}]
 */
static int check_rules(const cJSON *ctr, const char *path, struct kt_err *err)
{
	const cJSON *rules = kt_json_get(ctr, "restartPolicyRules"), *r, *ops;
	char sub[400];
	int i = 0;
	int64_t n;

	if (!rules || cJSON_IsNull(rules))
		return 0;
	if (!cJSON_IsArray(rules))
		return bad(err, "%s.restartPolicyRules: expected an array, got %s", path,
			   kt_json_type_name(rules));
	cJSON_ArrayForEach (r, rules) {
		const cJSON *val;
		int j = 0;

		snprintf(sub, sizeof(sub), "%s.restartPolicyRules[%d]", path, i++);
		if (!cJSON_IsObject(r))
			return bad(err, "%s: expected an object, got %s", sub,
				   kt_json_type_name(r));
		ops = kt_json_get(r, "exitCodes");
		if (!ops || cJSON_IsNull(ops))
			continue;
		if (!cJSON_IsObject(ops) || !cJSON_IsArray(kt_json_get(ops, "values")))
			return bad(err,
				   "%s.exitCodes: expected an object with a values array",
				   sub);
		cJSON_ArrayForEach (val, kt_json_get(ops, "values")) {
			char vp[440];

			snprintf(vp, sizeof(vp), "%s.exitCodes.values[%d]", sub, j++);
			if (check_int(val, vp, INT32_MIN, INT32_MAX, &n, err) < 0)
				return -1;
		}
	}
	return 0;
}

static int check_policy(const char *s)
{
	static const char *const policies[] = { "Always", "OnFailure", "Never" };

	return pick(s, policies, 3);
}

static int add_spec_list(struct view *v, int kind, struct kt_err *err)
{
	const cJSON *list = kt_json_get(v->spec, list_spec[kind]), *c;
	char path[300], sub[340];
	int idx = 0;

	if (!list || cJSON_IsNull(list)) {
		if (kind == CT_REGULAR)
			return bad(err,
				   "spec.containers: missing: a Pod has at least one "
				   "container");
		return 0;
	}
	if (!cJSON_IsArray(list))
		return bad(err, "spec.%s: expected an array, got %s", list_spec[kind],
			   kt_json_type_name(list));
	cJSON_ArrayForEach (c, list) {
		const cJSON *rp;
		struct ctr *x;
		const char *name;

		snprintf(path, sizeof(path), "spec.%s[%d]", list_spec[kind], idx++);
		if (!cJSON_IsObject(c))
			return bad(err, "%s: expected an object, got %s", path,
				   kt_json_type_name(c));
		snprintf(sub, sizeof(sub), "%s.", path);
		name = want_string(c, "name", sub, err);
		if (!name)
			return -1;
		if (find_ctr(v, name, -1))
			return bad(err, "%s.name: '%s' is the name of another container",
				   path, name);
		x = &v->c[v->n++];
		*x = (struct ctr){ .spec = c, .name = name, .kind = (enum ct_kind)kind };
		rp = kt_json_get(c, "restartPolicy");
		if (kind != CT_EPHEMERAL && rp && !cJSON_IsNull(rp)) {
			if (!cJSON_IsString(rp) || check_policy(rp->valuestring) < 0)
				return bad(
					err,
					"%s.restartPolicy: expected Always, OnFailure or "
					"Never",
					path);
			x->sidecar =
				kind == CT_INIT && strcmp(rp->valuestring, "Always") == 0;
			if (!x->sidecar)
				v->rules = true;
			if (check_rules(c, path, err) < 0)
				return -1;
		}
	}
	if (kind == CT_REGULAR && idx == 0)
		return bad(err,
			   "spec.containers: empty: a Pod has at least one container");
	v->count[kind] = (size_t)idx;
	return 0;
}

static int add_status_list(struct view *v, int kind, struct kt_err *err)
{
	const cJSON *list = kt_json_get(v->status, list_status[kind]), *cs;
	int idx = 0;

	if (!list || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return bad(err, "status.%s: expected an array, got %s", list_status[kind],
			   kt_json_type_name(list));
	cJSON_ArrayForEach (cs, list)
		if (check_status_entry(v, cs, kind, idx++, err) < 0)
			return -1;
	return 0;
}

static int check_conditions(const cJSON *status, const char *what, struct kt_err *err)
{
	const cJSON *conds = kt_json_get(status, "conditions"), *c;
	char sub[200];
	int i = 0;

	if (!conds || cJSON_IsNull(conds))
		return 0;
	if (!cJSON_IsArray(conds))
		return bad(err, "%sstatus.conditions: expected an array, got %s", what,
			   kt_json_type_name(conds));
	cJSON_ArrayForEach (c, conds) {
		snprintf(sub, sizeof(sub), "%sstatus.conditions[%d].", what, i++);
		if (!cJSON_IsObject(c))
			return bad(err,
				   "%sstatus.conditions[%d]: expected an object, got %s",
				   what, i - 1, kt_json_type_name(c));
		if (!want_string(c, "type", sub, err))
			return -1;
	}
	return 0;
}

static size_t list_len(const cJSON *a)
{
	return cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0;
}

static int check_pod(struct view *v, const cJSON *pod, struct kt_err *err)
{
	const cJSON *kind = kt_json_get(pod, "kind"), *rp, *gates, *g, *gen;
	size_t total;
	int i = 0;

	if (!cJSON_IsObject(pod))
		return bad(err, "not a Pod: expected an object, got %s",
			   kt_json_type_name(pod));
	if (kind && (!cJSON_IsString(kind) || strcmp(kind->valuestring, "Pod") != 0))
		return bad(err, "kind: not a Pod: '%s'",
			   cJSON_IsString(kind) ? kind->valuestring
						: kt_json_type_name(kind));
	v->pod = pod;
	v->spec = kt_json_get(pod, "spec");
	if (!cJSON_IsObject(v->spec))
		return bad(err, "spec: %s",
			   v->spec ? "expected an object" : "missing: not a Pod");
	v->status = kt_json_get(pod, "status");
	if (v->status && !cJSON_IsNull(v->status) && !cJSON_IsObject(v->status))
		return bad(err, "status: expected an object, got %s",
			   kt_json_type_name(v->status));
	rp = kt_json_get(v->spec, "restartPolicy");
	v->policy = "Always";
	if (rp && !cJSON_IsNull(rp)) {
		if (!cJSON_IsString(rp) || check_policy(rp->valuestring) < 0)
			return bad(err, "spec.restartPolicy: expected Always, OnFailure "
					"or Never");
		v->policy = rp->valuestring;
	}
	gates = kt_json_get(v->spec, "readinessGates");
	if (gates && !cJSON_IsNull(gates) && !cJSON_IsArray(gates))
		return bad(err, "spec.readinessGates: expected an array, got %s",
			   kt_json_type_name(gates));
	cJSON_ArrayForEach (g, gates) {
		char sub[80];

		snprintf(sub, sizeof(sub), "spec.readinessGates[%d].", i++);
		if (!cJSON_IsObject(g))
			return bad(err, "spec.readinessGates[%d]: expected an object",
				   i - 1);
		if (!want_string(g, "conditionType", sub, err))
			return -1;
	}
	total = list_len(kt_json_get(v->spec, "initContainers")) +
		list_len(kt_json_get(v->spec, "containers")) +
		list_len(kt_json_get(v->spec, "ephemeralContainers"));
	v->c = calloc(total ? total : 1, sizeof(*v->c));
	if (!v->c)
		return kt_error(err, "out of memory");
	for (int k = 0; k < 3; k++)
		if (add_spec_list(v, k, err) < 0)
			return -1;
	for (int k = 0; k < 3; k++)
		if (add_status_list(v, k, err) < 0)
			return -1;
	kt_podstatus_key(pod, v->key, sizeof(v->key));
	gen = kt_json_get(kt_json_get(pod, "metadata"), "generation");
	if (gen && !cJSON_IsNull(gen) &&
	    check_int(gen, "metadata.generation", 0, INT64_MAX, &v->generation, err) < 0)
		return -1;
	return check_conditions(v->status, "", err);
}

/* every probe result for this pod must name one of its containers with probes */
static int check_probes(const struct view *v, const struct pr_pod *pp, struct kt_err *err)
{
	for (size_t i = 0; pp && i < pp->n; i++) {
		const struct pr_entry *e = &pp->e[i];
		const struct ctr *c = find_ctr(v, e->container, -1);

		if (!c || c->kind == CT_EPHEMERAL || (c->kind == CT_INIT && !c->sidecar))
			return bad(
				err,
				"%s%scontainer: pod '%s' has no container '%s' that is "
				"probed (containers and sidecar init containers)",
				e->where, *e->where ? ": " : "", v->key, e->container);
	}
	return 0;
}

/* is name a container of pod that has probes: a container or a sidecar init container */
static bool probed(const cJSON *pod, const char *name)
{
	const cJSON *spec = kt_json_get(pod, "spec"), *c;

	cJSON_ArrayForEach (c, kt_json_get_array(spec, "containers")) {
		const char *n = kt_json_get_string(c, "name");

		if (n && strcmp(n, name) == 0)
			return true;
	}
	cJSON_ArrayForEach (c, kt_json_get_array(spec, "initContainers")) {
		const char *n = kt_json_get_string(c, "name");
		const char *rp = kt_json_get_string(c, "restartPolicy");

		if (n && strcmp(n, name) == 0)
			return rp && strcmp(rp, "Always") == 0;
	}
	return false;
}

int kt_probe_results_prune(struct kt_probe_results *pr, const cJSON *pod)
{
	char key[512];
	struct pr_pod *pp =
		pr ? kt_hmap_get(&pr->by_pod, kt_podstatus_key(pod, key, sizeof(key)))
		   : NULL;
	size_t kept = 0, n = pp ? pp->n : 0;

	for (size_t i = 0; i < n; i++) {
		if (probed(pod, pp->e[i].container)) {
			pp->e[kept++] = pp->e[i];
			continue;
		}
		free(pp->e[i].container);
		free(pp->e[i].where);
	}
	if (pp)
		pp->n = kept;
	return (int)(n - kept);
}

/* ---------------------------------------------------- container statuses */

static cJSON *waiting_state(const char *reason)
{
	cJSON *st = cJSON_CreateObject(), *w = cJSON_CreateObject();

	if (reason && w)
		kt_json_set(w, "reason", cJSON_CreateString(reason));
	if (kt_json_set(st, "waiting", w) < 0) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

/* the container's entry in the old status's list, or NULL */
static const cJSON *old_status(const cJSON *old, const struct ctr *c)
{
	const cJSON *cs;

	cJSON_ArrayForEach (cs, kt_json_get(old, list_status[c->kind])) {
		const char *name = kt_json_get_string(cs, "name");

		if (name && strcmp(name, c->name) == 0)
			return cs;
	}
	return NULL;
}

/* a terminated state made up for a container the runtime lost */
static cJSON *made_up_termination(const char *reason, const char *msg, int code)
{
	cJSON *st = cJSON_CreateObject(), *t = cJSON_CreateObject();
	int rc = 0;

	rc |= kt_json_set(t, "exitCode", kt_json_num_new_int(code));
	rc |= kt_json_set(t, "reason", cJSON_CreateString(reason));
	rc |= kt_json_set(t, "message", cJSON_CreateString(msg));
	rc |= kt_json_set(st, "terminated", t);
	if (rc) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

/*
 * A container the runtime said nothing about, as upstream's
 * convertToAPIContainerStatuses makes it: waiting, with the restart count and
 * last state of its old status (a terminated old status is kept whole); if
 * the old status was running, the container was lost, so it has terminated
 * with an unknown status (and restarted, unless the pod is being deleted);
 * and a regular init container once a regular container has run counts as
 * completed.
 */
static cJSON *default_status(const struct view *v, struct ctr *c, const cJSON *old,
			     bool any_regular_ran)
{
	const char *image = kt_json_get_string(c->spec, "image");
	const cJSON *os = old_status(old, c), *ost = kt_json_get(os, "state");
	cJSON *s, *st;
	int64_t restarts = 0;
	int rc = 0;

	if (kt_json_get_object(ost, "terminated"))
		return kt_json_dup(os);
	s = cJSON_CreateObject();
	if (!s)
		return NULL;
	if (os)
		kt_json_num_int64(kt_json_get(os, "restartCount"), &restarts, NULL);
	if (c->kind == CT_INIT && !c->sidecar && any_regular_ran)
		st = made_up_termination(
			"Completed",
			"Unable to get init container status from container "
			"runtime and pod has been initialized, treat it as "
			"exited normally",
			0);
	else
		st = waiting_state(v->count[CT_INIT] ? "PodInitializing"
						     : "ContainerCreating");
	rc |= kt_json_set(s, "name", cJSON_CreateString(c->name));
	rc |= kt_json_set(s, "state", st);
	if (kt_json_get_object(kt_json_get(os, "lastState"), "terminated")) {
		rc |= kt_json_set(s, "lastState",
				  kt_json_dup(kt_json_get(os, "lastState")));
	} else if (kt_json_get_object(ost, "running") &&
		   kt_json_get_object(st, "waiting")) {
		rc |= kt_json_set(
			s, "lastState",
			made_up_termination("ContainerStatusUnknown",
					    "The container could not be located "
					    "when the pod was deleted.  The "
					    "container used to be Running",
					    137));
		if (!kt_json_get(kt_json_get(v->pod, "metadata"), "deletionTimestamp"))
			restarts++;
	} else {
		rc |= kt_json_set(s, "lastState", cJSON_CreateObject());
	}
	rc |= kt_json_set(s, "ready", cJSON_CreateFalse());
	rc |= kt_json_set(s, "restartCount", kt_json_num_new_int(restarts));
	rc |= kt_json_set(s, "image", cJSON_CreateString(image ? image : ""));
	rc |= kt_json_set(s, "imageID", cJSON_CreateString(""));
	if (rc) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

static bool has_probe(const struct ctr *c, const char *key)
{
	const cJSON *p = kt_json_get(c->spec, key);

	return p && !cJSON_IsNull(p);
}

/* the prober manager's UpdatePodStatus: started, then ready */
static void probe_container(struct ctr *c, const struct pr_pod *pp)
{
	bool running = c->state == ST_RUNNING;

	c->started = running && (!has_probe(c, "startupProbe") ||
				 probe_result(pp, c->name, PR_STARTUP) == PR_SUCCESS);
	if (c->kind == CT_INIT && !c->sidecar) {
		c->ready = c->state == ST_TERMINATED && c->exit_code == 0;
		return;
	}
	c->ready = c->started && (!has_probe(c, "readinessProbe") ||
				  probe_result(pp, c->name, PR_READINESS) == PR_SUCCESS);
}

static int make_statuses(struct view *v, const cJSON *old, const struct pr_pod *pp,
			 struct kt_err *err)
{
	bool ran = false;

	for (size_t i = 0; i < v->n; i++)
		if (v->c[i].kind == CT_REGULAR && v->c[i].in &&
		    (v->c[i].state == ST_RUNNING || v->c[i].state == ST_TERMINATED))
			ran = true;
	for (size_t i = 0; i < v->n; i++) {
		struct ctr *c = &v->c[i];
		int rc = 0;

		c->out = c->in ? kt_json_dup(c->in) : default_status(v, c, old, ran);
		if (!c->out)
			return kt_error(err, "out of memory");
		/* what was made up or kept from the old status decides as the input would
		 */
		if (!c->in && (check_state(kt_json_get(c->out, "state"), "", &c->state,
					   &c->exit_code, NULL) < 0 ||
			       check_state(kt_json_get(c->out, "lastState"), "", &c->last,
					   &c->last_exit, NULL) < 0))
			c->state = c->last = ST_NONE;
		if (c->kind == CT_EPHEMERAL) {
			cJSON_DeleteItemFromObjectCaseSensitive(c->out, "started");
			rc = kt_json_set(c->out, "ready", cJSON_CreateFalse());
		} else {
			probe_container(c, pp);
			rc |= kt_json_set(c->out, "ready", cJSON_CreateBool(c->ready));
			rc |= kt_json_set(c->out, "started",
					  cJSON_CreateBool(c->started));
		}
		if (rc)
			return kt_error(err, "out of memory");
	}
	return 0;
}

/* ------------------------------------------------------------------- phase */

/* podutil.ContainerShouldRestart: the container's rules, its policy, the pod's */
static bool should_restart(const struct view *v, const struct ctr *c, int64_t code)
{
	const char *cp = kt_json_get_string(c->spec, "restartPolicy");
	const char *p = v->policy;
	const cJSON *r;

	if (cp) {
		cJSON_ArrayForEach (r, kt_json_get_array(c->spec, "restartPolicyRules")) {
			const cJSON *ec = kt_json_get_object(r, "exitCodes"), *val;
			const char *op = kt_json_get_string(ec, "operator");
			const char *action = kt_json_get_string(r, "action");
			bool in = false;
			int64_t n;

			if (!ec || !op)
				continue;
			cJSON_ArrayForEach (val, kt_json_get_array(ec, "values"))
				if (kt_json_num_int64(val, &n, NULL) == 0 && n == code)
					in = true;
			if ((strcmp(op, "In") == 0 && in) ||
			    (strcmp(op, "NotIn") == 0 && !in)) {
				if (action && strcmp(action, "Restart") == 0)
					return true;
				break;
			}
		}
		p = cp;
	}
	if (strcmp(p, "Never") == 0)
		return false;
	if (strcmp(p, "OnFailure") == 0)
		return code != 0;
	return true;
}

struct phase_counts {
	int pending_init, pending_sidecar, failed_init, failed_init_nr;
	int unknown, running, waiting, stopped, stopped_nr, succeeded;
};

static void count_init(const struct view *v, const struct ctr *c, struct phase_counts *k)
{
	int64_t code;

	if (c->sidecar) {
		if (c->state == ST_RUNNING) {
			if (!c->started)
				k->pending_sidecar++;
			k->running++;
		} else if (c->state == ST_WAITING && c->last != ST_TERMINATED) {
			k->pending_sidecar++;
			k->waiting++;
		} else if (c->state == ST_NONE) {
			k->pending_sidecar++;
			k->unknown++;
		}
		return;
	}
	if (c->state == ST_TERMINATED ||
	    (c->state == ST_WAITING && c->last == ST_TERMINATED)) {
		code = c->state == ST_TERMINATED ? c->exit_code : c->last_exit;
		if (code != 0) {
			k->failed_init++;
			if (!should_restart(v, c, code))
				k->failed_init_nr++;
		}
		return;
	}
	k->pending_init++;
}

static void count_regular(const struct view *v, const struct ctr *c,
			  struct phase_counts *k)
{
	switch (c->state) {
	case ST_RUNNING:
		k->running++;
		break;
	case ST_TERMINATED:
		k->stopped++;
		if (!should_restart(v, c, c->exit_code))
			k->stopped_nr++;
		if (c->exit_code == 0)
			k->succeeded++;
		break;
	case ST_WAITING:
		if (c->last == ST_TERMINATED) {
			k->stopped++;
			if (!should_restart(v, c, c->last_exit))
				k->stopped_nr++;
		} else {
			k->waiting++;
		}
		break;
	case ST_NONE:
		k->unknown++;
		break;
	}
}

/* getPhase, with the ContainerRestartRules branch where a container sets its own policy
 */
static const char *get_phase(const struct view *v, bool terminal)
{
	struct phase_counts k = { 0 };
	bool initialized = false;

	for (size_t i = 0; i < v->n; i++) {
		const struct ctr *c = &v->c[i];

		if (c->kind == CT_INIT)
			count_init(v, c, &k);
		else if (c->kind == CT_REGULAR)
			count_regular(v, c, &k);
		if (c->kind == CT_REGULAR &&
		    (c->state == ST_RUNNING || c->state == ST_TERMINATED ||
		     (c->state == ST_WAITING && c->last == ST_TERMINATED)))
			initialized = true;
	}
	if (v->rules ? k.failed_init_nr > 0
		     : k.failed_init > 0 && strcmp(v->policy, "Never") == 0)
		return "Failed";
	if (k.pending_init > 0 || (k.pending_sidecar > 0 && !initialized) ||
	    k.waiting > 0)
		return "Pending";
	if (k.running > 0 && k.unknown == 0)
		return "Running";
	if (k.running > 0 || k.stopped == 0 || k.unknown > 0)
		return "Pending";
	if (terminal && !kt_podworker_is_static(v->pod))
		return k.stopped == k.succeeded ? "Succeeded" : "Failed";
	if (v->rules) {
		if (k.stopped != k.stopped_nr)
			return "Running";
		return k.stopped == k.succeeded ? "Succeeded" : "Failed";
	}
	if (strcmp(v->policy, "Always") == 0)
		return "Running";
	if (k.stopped == k.succeeded)
		return "Succeeded";
	return strcmp(v->policy, "Never") == 0 ? "Failed" : "Running";
}

static bool is_terminal(const char *phase)
{
	return phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0);
}

/* -------------------------------------------------------------- conditions */

static const cJSON *find_cond(const cJSON *conds, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, conds) {
		const char *t = kt_json_get_string(c, "type");

		if (t && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

/* kubetypes.PodConditionByKubelet */
static bool by_kubelet(const char *type)
{
	static const char *const owned[] = { "PodScheduled",
					     "Ready",
					     "Initialized",
					     "ContainersReady",
					     "PodReadyToStartContainers",
					     "PodResizePending",
					     "PodResizeInProgress" };

	return pick(type, owned, sizeof(owned) / sizeof(owned[0])) >= 0;
}

/* a condition in upstream's field order; transition time filled in later */
static cJSON *cond_new(const struct view *v, const char *type, bool status,
		       const char *reason, const char *msg)
{
	cJSON *c = cJSON_CreateObject();
	int rc = 0;

	rc |= kt_json_set(c, "type", cJSON_CreateString(type));
	if (v->generation > 0)
		rc |= kt_json_set(c, "observedGeneration",
				  kt_json_num_new_int(v->generation));
	rc |= kt_json_set(c, "status", cJSON_CreateString(status ? "True" : "False"));
	rc |= kt_json_set(c, "lastProbeTime", cJSON_CreateNull());
	rc |= kt_json_set(c, "lastTransitionTime", cJSON_CreateNull());
	if (reason && *reason)
		rc |= kt_json_set(c, "reason", cJSON_CreateString(reason));
	if (msg && *msg)
		rc |= kt_json_set(c, "message", cJSON_CreateString(msg));
	if (rc) {
		cJSON_Delete(c);
		return NULL;
	}
	return c;
}

/* Go's fmt of a []string: "[a b c]" */
static void name_list(struct kt_sb *sb, const char *what, const char **names, size_t n)
{
	if (!n)
		return;
	if (sb->len)
		kt_sb_puts(sb, ", ");
	kt_sb_printf(sb, "containers with %s status: [", what);
	for (size_t i = 0; i < n; i++)
		kt_sb_printf(sb, "%s%s", i ? " " : "", names[i]);
	kt_sb_puts(sb, "]");
}

/* Go's %q of a string (strconv.Quote, for ASCII), for readiness gate names */
static void go_quote(struct kt_sb *sb, const char *s)
{
	static const char shorts[] = "\a\b\t\n\v\f\r", letters[] = "abtnvfr";

	kt_sb_puts(sb, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		const char *sh = ch ? strchr(shorts, ch) : NULL;

		if (ch == '"' || ch == '\\')
			kt_sb_printf(sb, "\\%c", ch);
		else if (sh)
			kt_sb_printf(sb, "\\%c", letters[sh - shorts]);
		else if (ch < 0x20 || ch == 0x7f)
			kt_sb_printf(sb, "\\x%02x", ch);
		else
			kt_sb_put(sb, (const char *)&ch, 1);
	}
	kt_sb_puts(sb, "\"");
}

static cJSON *cond_initialized(const struct view *v, const char *phase,
			       const char **names)
{
	struct kt_sb sb = { 0 };
	size_t n = 0;
	bool started = false;
	cJSON *c;

	for (size_t i = 0; i < v->n; i++) {
		const struct ctr *x = &v->c[i];

		if (x->kind == CT_INIT && !(x->sidecar ? x->started : x->ready))
			names[n++] = x->name;
		if (x->kind == CT_REGULAR &&
		    (x->state == ST_RUNNING || x->state == ST_TERMINATED))
			started = true;
	}
	if (strcmp(phase, "Succeeded") == 0)
		return cond_new(v, "Initialized", true, "PodCompleted", NULL);
	if (started || !n)
		return cond_new(v, "Initialized", true, NULL, NULL);
	name_list(&sb, "incomplete", names, n);
	c = sb.oom ? NULL
		   : cond_new(v, "Initialized", false, "ContainersNotInitialized",
			      sb.buf);
	kt_sb_release(&sb);
	return c;
}

static cJSON *cond_containers_ready(const struct view *v, const char *phase,
				    const char **names)
{
	struct kt_sb sb = { 0 };
	size_t n = 0;
	cJSON *c;

	if (strcmp(phase, "Succeeded") == 0)
		return cond_new(v, "ContainersReady", false, "PodCompleted", NULL);
	if (strcmp(phase, "Failed") == 0)
		return cond_new(v, "ContainersReady", false, "PodFailed", NULL);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < v->n; i++) {
			const struct ctr *x = &v->c[i];
			bool counts = pass == 0 ? x->sidecar : x->kind == CT_REGULAR;

			if (counts && !x->ready)
				names[n++] = x->name;
		}
	if (!n)
		return cond_new(v, "ContainersReady", true, NULL, NULL);
	name_list(&sb, "unready", names, n);
	c = sb.oom ? NULL
		   : cond_new(v, "ContainersReady", false, "ContainersNotReady", sb.buf);
	kt_sb_release(&sb);
	return c;
}

/* Ready: ContainersReady's verdict, then every readiness gate's condition */
static cJSON *cond_ready(const struct view *v, const cJSON *cr, const cJSON *conds)
{
	const char *st = kt_json_get_string(cr, "status");
	struct kt_sb sb = { 0 };
	const cJSON *g;
	cJSON *c;

	if (strcmp(st, "True") != 0)
		return cond_new(v, "Ready", false, kt_json_get_string(cr, "reason"),
				kt_json_get_string(cr, "message"));
	cJSON_ArrayForEach (g, kt_json_get_array(v->spec, "readinessGates")) {
		const char *type = kt_json_get_string(g, "conditionType");
		const cJSON *gc = find_cond(conds, type);
		const char *gs = kt_json_get_string(gc, "status");

		if (gc && gs && strcmp(gs, "True") == 0)
			continue;
		if (sb.len)
			kt_sb_puts(&sb, ", ");
		if (!gc) {
			kt_sb_puts(&sb, "corresponding condition of pod readiness gate ");
			go_quote(&sb, type);
			kt_sb_puts(&sb, " does not exist.");
		} else {
			kt_sb_puts(&sb, "the status of pod readiness gate ");
			go_quote(&sb, type);
			kt_sb_printf(&sb, " is not \"True\", but %s", gs ? gs : "");
		}
	}
	if (sb.oom)
		return NULL;
	c = sb.len ? cond_new(v, "Ready", false, "ReadinessGatesNotReady", sb.buf)
		   : cond_new(v, "Ready", true, NULL, NULL);
	kt_sb_release(&sb);
	return c;
}

static bool host_network(const struct view *v)
{
	return cJSON_IsTrue(kt_json_get(v->spec, "hostNetwork"));
}

/*
 * The conditions generateAPIPodStatus builds: those the kubelet does not own
 * kept from the pod, DisruptionTarget from the old status (or the kill's,
 * kill_dt), then its own five.
 */
static int make_conditions(const struct view *v, const cJSON *old, const char *phase,
			   const cJSON *kill_dt, cJSON **out, struct kt_err *err)
{
	const cJSON *c,
		*dt = kill_dt ? kill_dt
			      : find_cond(kt_json_get(old, "conditions"), "DisruptionTarget");
	const char **names = calloc(v->n + 1, sizeof(*names));
	const char *ip = kt_json_get_string(v->status, "podIP");
	cJSON *conds = cJSON_CreateArray(), *cr = NULL;
	int rc = 0;

	if (!names || !conds)
		goto oom;
	cJSON_ArrayForEach (c, kt_json_get(v->status, "conditions")) {
		const char *t = kt_json_get_string(c, "type");

		if (by_kubelet(t))
			continue;
		if (dt && strcmp(t, "DisruptionTarget") == 0)
			c = dt;
		rc |= kt_json_append(conds, kt_json_dup(c));
	}
	if (dt && !find_cond(conds, "DisruptionTarget"))
		rc |= kt_json_append(conds, kt_json_dup(dt));
	rc |= kt_json_append(conds, cond_new(v, "PodReadyToStartContainers",
					     (ip && *ip) || host_network(v), NULL, NULL));
	rc |= kt_json_append(conds, cond_initialized(v, phase, names));
	cr = cond_containers_ready(v, phase, names);
	rc |= kt_json_append(conds, cond_ready(v, cr, conds));
	rc |= kt_json_append(conds, cr);
	rc |= kt_json_append(conds, cond_new(v, "PodScheduled", true, NULL, NULL));
	if (rc)
		goto oom;
	free(names);
	*out = conds;
	return 0;
oom:
	free(names);
	cJSON_Delete(conds);
	return kt_error(err, "out of memory");
}

/* the status manager's updateLastTransitionTime for every condition it sets */
static int transition_times(cJSON *conds, const cJSON *old, int64_t now_us,
			    struct kt_err *err)
{
	static const char *const types[] = {
		"ContainersReady",	     "Ready",	     "Initialized",
		"PodReadyToStartContainers", "PodScheduled", "DisruptionTarget"
	};
	char now[40];

	kt_time_format(now_us, false, now, sizeof(now));
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		cJSON *c = (cJSON *)find_cond(conds, types[i]);
		const cJSON *oc = find_cond(kt_json_get(old, "conditions"), types[i]);
		const char *st = kt_json_get_string(c, "status");
		const char *ost = kt_json_get_string(oc, "status");
		const cJSON *t = kt_json_get(oc, "lastTransitionTime");
		cJSON *nt;

		if (!c)
			continue;
		if (oc && st && ost && strcmp(st, ost) == 0)
			nt = t ? kt_json_dup(t) : cJSON_CreateNull();
		else
			nt = cJSON_CreateString(now);
		if (kt_json_set(c, "lastTransitionTime", nt) < 0)
			return kt_error(err, "out of memory");
	}
	return 0;
}

/* ------------------------------------------------------------ the status */

static int by_name(const void *a, const void *b)
{
	const struct ctr *x = *(const struct ctr *const *)a,
			 *y = *(const struct ctr *const *)b;

	return strcmp(x->name, y->name);
}

/* init statuses in spec order, the others sorted by name, as upstream sorts them */
static int attach_statuses(struct view *v, cJSON *status, struct kt_err *err)
{
	struct ctr **order = calloc(v->n + 1, sizeof(*order));

	if (!order)
		return kt_error(err, "out of memory");
	for (int k = 0; k < 3; k++) {
		cJSON *arr;
		size_t n = 0;

		for (size_t i = 0; i < v->n; i++)
			if ((int)v->c[i].kind == k)
				order[n++] = &v->c[i];
		if (!n) {
			cJSON_DeleteItemFromObjectCaseSensitive(status, list_status[k]);
			continue;
		}
		if (k != CT_INIT)
			qsort(order, n, sizeof(*order), by_name);
		arr = cJSON_CreateArray();
		for (size_t i = 0; arr && i < n; i++) {
			if (kt_json_append(arr, order[i]->out) < 0) {
				cJSON_Delete(arr);
				arr = NULL;
			}
			order[i]->out = NULL;
		}
		if (kt_json_set(status, list_status[k], arr) < 0) {
			free(order);
			return kt_error(err, "out of memory");
		}
	}
	free(order);
	return 0;
}

/* the phase kept when terminal; reason and message kept with an unchanged phase */
/* the first of a's and b's key that is set and not empty */
static const char *first_text(const cJSON *a, const cJSON *b, const char *key)
{
	const char *s = kt_json_get_string(a, key);

	if (!s || !*s)
		s = kt_json_get_string(b, key);
	return s && *s ? s : NULL;
}

/*
 * The phase, and the reason and message that go with it: a terminal phase in
 * the input wins, with the input's reason and message (SPEC 10: kept, with
 * its reason and message, whatever --current says); else a terminal phase of
 * --current; else the computed one, keeping --current's reason and message
 * only while the phase stays what it was.
 */
static const char *settle_phase(const struct view *v, const cJSON *old, const char *phase,
				const char **keep)
{
	const char *old_phase = kt_json_get_string(old, "phase");
	const char *api_phase = kt_json_get_string(v->status, "phase");
	static const char *const keys[] = { "message", "reason" };
	const cJSON *first = NULL, *second = NULL;

	if (!is_terminal(phase)) {
		if (is_terminal(old_phase))
			phase = old_phase;
		else if (is_terminal(api_phase))
			phase = api_phase;
	}
	if (is_terminal(api_phase))
		phase = api_phase;
	if (is_terminal(api_phase)) {
		first = v->status;
		second = old_phase && !strcmp(phase, old_phase) ? old : NULL;
	} else if (old_phase && !strcmp(phase, old_phase)) {
		first = old;
		second = v->status;
	}
	for (int i = 0; i < 2; i++)
		keep[i] = first ? first_text(first, second, keys[i]) : NULL;
	return phase;
}

/* ------------------------------------------------------------ the kill */

static const char *const phases[] = { "Pending", "Running", "Succeeded", "Failed",
				      "Unknown" };

int kt_podstatus_kill_check(const cJSON *kill, struct kt_err *err)
{
	static const char *const keys[] = { "phase", "reason", "message" };
	const cJSON *conds, *c;
	char sub[64];
	int i = 0;

	if (!cJSON_IsObject(kill))
		return bad(err, "a kill status: expected an object, got %s",
			   kt_json_type_name(kill));
	for (int k = 0; k < 3; k++) {
		const cJSON *f = kt_json_get(kill, keys[k]);

		if (f && !cJSON_IsNull(f) && !cJSON_IsString(f))
			return bad(err, "%s: expected a string, got %s", keys[k],
				   kt_json_type_name(f));
	}
	c = kt_json_get(kill, "phase");
	if (cJSON_IsString(c) &&
	    pick(c->valuestring, phases, sizeof(phases) / sizeof(phases[0])) < 0)
		return bad(err, "phase: '%s' is not Pending, Running, Succeeded, Failed or "
				"Unknown", c->valuestring);
	conds = kt_json_get(kill, "conditions");
	if (!conds || cJSON_IsNull(conds))
		return 0;
	if (!cJSON_IsArray(conds))
		return bad(err, "conditions: expected an array, got %s",
			   kt_json_type_name(conds));
	cJSON_ArrayForEach (c, conds) {
		snprintf(sub, sizeof(sub), "conditions[%d].", i++);
		if (!cJSON_IsObject(c))
			return bad(err, "conditions[%d]: expected an object, got %s", i - 1,
				   kt_json_type_name(c));
		if (!want_string(c, "type", sub, err) || !want_string(c, "status", sub, err))
			return -1;
	}
	return 0;
}

/*
 * The kill laid over the final status (kt_podstatus_kill_check says how):
 * the phase, the reason and message kept with it (keep: message, reason),
 * and *dt, the kill's DisruptionTarget when the phase turns terminal now.
 */
static const char *lay_kill(const cJSON *kill, const cJSON *old, const char *phase,
			    const char **keep, const cJSON **dt)
{
	static const char *const keys[] = { "message", "reason" };
	const char *kp = kt_json_get_string(kill, "phase");

	/* generateAPIPodStatus: the status manager's terminal phase wins over a
	 * phase that is not */
	if (!is_terminal(phase) && is_terminal(kp))
		phase = kp;
	if (kp && strcmp(phase, kp) == 0)
		for (int i = 0; i < 2; i++) {
			const char *s = kt_json_get_string(kill, keys[i]);

			if (s && *s)
				keep[i] = s;
		}
	/* mergePodStatus sends DisruptionTarget with the move to a terminal phase */
	if (is_terminal(phase) && !is_terminal(kt_json_get_string(old, "phase")))
		*dt = find_cond(kt_json_get(kill, "conditions"), "DisruptionTarget");
	return phase;
}

static int set_phase(cJSON *status, const char *phase, cJSON *conds, const char **keep)
{
	static const char *const keys[] = { "message", "reason" };
	int rc = 0;

	rc |= kt_json_set(status, "phase", cJSON_CreateString(phase));
	rc |= kt_json_set(status, "conditions", conds);
	for (int i = 0; i < 2; i++) {
		if (keep[i])
			rc |= kt_json_set(status, keys[i], cJSON_CreateString(keep[i]));
		else
			cJSON_DeleteItemFromObjectCaseSensitive(status, keys[i]);
	}
	return rc;
}

static int start_time(const struct view *v, const cJSON *old, int64_t now_us,
		      cJSON *status, struct kt_err *err)
{
	const char *t = kt_json_get_string(old, "startTime");
	char now[40];

	if (!t || !*t)
		t = kt_json_get_string(v->status, "startTime");
	if (!t || !*t)
		t = kt_time_format(now_us, false, now, sizeof(now));
	return kt_json_set(status, "startTime", cJSON_CreateString(t)) < 0
		       ? kt_error(err, "out of memory")
		       : 0;
}

/*
 * PodObservedGenerationTracking (beta, on): the generation the kubelet saw,
 * never lower than the one the current status already has.
 */
static int observed_generation(const struct view *v, const cJSON *old, cJSON *status)
{
	int64_t had = 0;

	if (v->generation <= 0)
		return 0;
	kt_json_num_int64(kt_json_get(old, "observedGeneration"), &had, NULL);
	return kt_json_set(
		status, "observedGeneration",
		kt_json_num_new_int(had > v->generation ? had : v->generation));
}

static void view_release(struct view *v)
{
	for (size_t i = 0; v->c && i < v->n; i++)
		cJSON_Delete(v->c[i].out);
	free(v->c);
}

cJSON *kt_podstatus_compute(const cJSON *pod, const struct kt_podstatus_opts *opts,
			    struct kt_err *err)
{
	struct view v = { 0 };
	const struct pr_pod *pp;
	const cJSON *old, *kill_dt = NULL;
	cJSON *status = NULL, *conds = NULL;
	const char *phase, *keep[2];

	if (check_pod(&v, pod, err) < 0)
		goto fail;
	old = opts->current ? opts->current : v.status;
	if (opts->current && !cJSON_IsObject(opts->current)) {
		bad(err, "current status: expected an object, got %s",
		    kt_json_type_name(opts->current));
		goto fail;
	}
	if (opts->current && check_conditions(opts->current, "current ", err) < 0)
		goto fail;
	if (opts->kill && kt_podstatus_kill_check(opts->kill, err) < 0) {
		kt_err_prefix(err, "kill status");
		goto fail;
	}
	pp = probes_of(opts->probes, v.key);
	if (check_probes(&v, pp, err) < 0 || make_statuses(&v, old, pp, err) < 0)
		goto fail;
	status = cJSON_IsObject(v.status) ? kt_json_dup(v.status) : cJSON_CreateObject();
	if (!status)
		goto oom;
	phase = settle_phase(&v, old, get_phase(&v, opts->terminal), keep);
	if (opts->kill && opts->terminal)
		phase = lay_kill(opts->kill, old, phase, keep, &kill_dt);
	if (make_conditions(&v, old, phase, kill_dt, &conds, err) < 0 ||
	    transition_times(conds, old, opts->now_us, err) < 0)
		goto fail;
	if (set_phase(status, phase, conds, keep)) {
		conds = NULL;
		goto oom;
	}
	conds = NULL;
	if (observed_generation(&v, old, status) < 0)
		goto oom;
	if (start_time(&v, old, opts->now_us, status, err) < 0 ||
	    attach_statuses(&v, status, err) < 0)
		goto fail;
	view_release(&v);
	return status;
oom:
	kt_error(err, "out of memory");
fail:
	cJSON_Delete(conds);
	cJSON_Delete(status);
	view_release(&v);
	return NULL;
}

/* ------------------------------------------------------------------- patch */

int kt_podstatus_patch(const cJSON *pod, const cJSON *from, const cJSON *to,
		       cJSON **patch, struct kt_err *err)
{
	const char *uid = kt_json_get_string(kt_json_get(pod, "metadata"), "uid");
	cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject(), *md = NULL;
	int rc = -1;

	*patch = NULL;
	if (!from)
		from = kt_json_get(pod, "status");
	if (!a || !b)
		goto oom;
	if (from && !cJSON_IsNull(from) &&
	    kt_json_set(a, "status", kt_json_dup(from)) < 0)
		goto oom;
	if (uid) {
		md = cJSON_CreateObject();
		if (kt_json_set(md, "uid", cJSON_CreateString(uid)) < 0 ||
		    kt_json_set(b, "metadata", md) < 0)
			goto oom;
	}
	if (kt_json_set(b, "status", kt_json_dup(to)) < 0)
		goto oom;
	rc = kt_smp_diff(a, b, NULL, patch, err);
	goto out;
oom:
	rc = kt_error(err, "out of memory");
out:
	cJSON_Delete(a);
	cJSON_Delete(b);
	return rc;
}
