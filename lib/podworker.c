/* SPDX-License-Identifier: Apache-2.0 */
/* podworker: the pod worker state machine of pkg/kubelet/pod_workers.go, one event at a time */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core.h"
#include "json.h"
#include "podworker.h"
#include "timeutil.h"

#define PW_UNSET INT64_MIN
#define PW_RESYNC_S 60		/* kubelet syncFrequency */
#define PW_BACKOFF_S 10		/* kubelet backOffPeriod */
#define PW_NET_BACKOFF_S 1	/* backOffOnTransientErrorPeriod */
#define PW_SYSTEM_CRITICAL 2000000000
#define PW_STATE_VERSION 2	/* 1: pods without "seq", the node without "nextSeq" */
#define PW_SHUTDOWN_MSG "Pod was terminated in response to imminent node shutdown."

enum pw_work { PW_NONE = -1, PW_SYNC = 0, PW_TERMINATING, PW_TERMINATED };
enum pw_utype { PW_U_NONE = -1, PW_U_SYNC = 0, PW_U_UPDATE, PW_U_CREATE, PW_U_KILL };

static const char *const work_names[] = { "sync", "terminating", "terminated" };
static const char *const utype_names[] = { "sync", "update", "create", "kill" };

/* UpdatePodOptions; the kill's status travels beside it, never stored in it */
struct pw_update {
	int type;		/* enum pw_utype; PW_U_NONE in activeUpdate */
	cJSON *pod;		/* owned, may be NULL */
	cJSON *running_pod;	/* owned, may be NULL */
	bool has_kill;
	bool evict;
	bool has_override;
	int64_t override;
};

/* podSyncStatus, plus the work handed out and not yet completed */
struct pw_pod {
	char *uid;
	const char *line;	/* the stored text in the state, until loaded */
	size_t line_len;
	long lineno;
	int64_t seq;		/* order of first sighting */
	uint64_t saved;		/* hash of the text last read or handed out, or 0 */
	bool loaded;
	bool gone;
	bool touched;		/* looked at since the last kt_podworker_changes */
	char *fullname;
	int64_t synced_at, started_at, terminating_at, terminated_at;
	int64_t grace;
	bool deleted, evicted, finished, restart_requested;
	bool started_terminating, observed_runtime, working;
	struct pw_update *pending, *active;
	cJSON *status_post;	/* statuses of the kills seen while terminating, or NULL */
	int running;		/* enum pw_work handed out, PW_NONE when idle */
};

struct kt_podworker {
	char *name;
	char *text;		/* the loaded text; unloaded pods point into it */
	bool pods_synced;
	cJSON *started;		/* startedStaticPodsByFullname: fullname -> uid */
	cJSON *waiting;		/* waitingToStartStaticPodsByFullname: fullname -> [uid] */
	struct pw_pod **pods;	/* in order of first sighting */
	size_t npods, cap, live;
	struct kt_hmap index;	/* uid -> its latest pw_pod (live, or else forgotten) */
	bool damaged;		/* a stored pod status could not be read */
	int64_t next_seq;
	struct kt_podworker_source src;	/* where pods not in memory are, or none */
	bool all_loaded;	/* every stored pod has been read from src */
	/* a graceful node shutdown under way, or NULL: "deadline" and "uids" of
	 * the group being killed, "slackSeconds", and "groups" not started yet
	 * ({"priority", "shutdownGracePeriodSeconds", "uids"}, in order) */
	cJSON *shutdown;
};

/* ------------------------------------------------------------- helpers */

static bool set_(cJSON *obj, const char *key, cJSON *item)
{
	return kt_json_set(obj, key, item) == 0;
}

static cJSON *time_json(int64_t us)
{
	char buf[48];

	if (us == PW_UNSET)
		return cJSON_CreateNull();
	return cJSON_CreateString(kt_time_format(us, us % 1000000 != 0, buf, sizeof(buf)));
}

/* an input error (exit 2 in the tools) */
#define bad(err, ...) kt_error_kind(err, KT_ERR_INPUT, __VA_ARGS__)

/* a bool member: absent gives def; another type is an error */
static int get_bool(const cJSON *obj, const char *key, bool def, bool *out, const char *what,
		    struct kt_err *err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	*out = def;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return bad(err, "%s: '%s' must be true or false", what, key);
	*out = cJSON_IsTrue(v);
	return 0;
}

/* an integer member: *present false when absent or null */
static int get_int(const cJSON *obj, const char *key, int64_t *out, bool *present,
		   const char *what, struct kt_err *err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	*present = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!kt_json_is_number(v) || kt_json_num_int64(v, out, NULL) < 0)
		return bad(err, "%s: '%s' must be an integer", what, key);
	*present = true;
	return 0;
}

static int get_time(const cJSON *obj, const char *key, int64_t *out, const char *what,
		    struct kt_err *err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	*out = PW_UNSET;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || kt_time_parse(v->valuestring, out, NULL) < 0)
		return bad(err, "%s: '%s' must be an RFC 3339 time", what, key);
	return 0;
}

static int name_index(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

/* ------------------------------------------------------------ pod facts */

static const char *pod_str(const cJSON *pod, const char *dotted)
{
	cJSON *v = kt_json_path(pod, dotted);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool pod_int(const cJSON *pod, const char *dotted, int64_t *out)
{
	cJSON *v = kt_json_path(pod, dotted);

	return v && kt_json_is_number(v) && kt_json_num_int64(v, out, NULL) == 0;
}

static bool pod_terminal_phase(const cJSON *pod)
{
	const char *ph = pod_str(pod, "status.phase");

	return ph && (strcmp(ph, "Failed") == 0 || strcmp(ph, "Succeeded") == 0);
}

static bool pod_deleting(const cJSON *pod)
{
	cJSON *v = kt_json_path(pod, "metadata.deletionTimestamp");

	return v && !cJSON_IsNull(v);
}

bool kt_podworker_is_static(const cJSON *pod)
{
	cJSON *ann = kt_json_path(pod, "metadata.annotations");
	cJSON *src = cJSON_GetObjectItemCaseSensitive(ann, "kubernetes.io/config.source");

	return cJSON_IsString(src) && strcmp(src->valuestring, "api") != 0;
}

/* kubecontainer.GetPodFullName: name + "_" + namespace */
static char *full_name(const cJSON *pod, const cJSON *running)
{
	const char *name, *ns;
	char *s;
	size_t n;

	if (pod) {
		name = pod_str(pod, "metadata.name");
		ns = pod_str(pod, "metadata.namespace");
	} else {
		name = kt_json_get_string(running, "name");
		ns = kt_json_get_string(running, "namespace");
	}
	name = name ? name : "";
	ns = ns ? ns : "";
	n = strlen(name) + strlen(ns) + 2;
	s = malloc(n);
	if (s)
		snprintf(s, n, "%s_%s", name, ns);
	return s;
}

int64_t kt_podworker_effective_grace(int64_t current, const cJSON *pod, bool has_override,
				     int64_t override, bool *shortened)
{
	int64_t g = current, v;
	bool overridden = false;

	if (pod && pod_int(pod, "metadata.deletionGracePeriodSeconds", &v) &&
	    (g == 0 || v < g)) {
		g = v;
		overridden = true;
	}
	if (has_override && (g == 0 || override < g)) {
		g = override;
		overridden = true;
	}
	if (!overridden && g == 0 && pod &&
	    pod_int(pod, "spec.terminationGracePeriodSeconds", &v))
		g = v;
	if (g < 1)
		g = 1;
	if (shortened)
		*shortened = current != 0 && current != g;
	return g;
}

/* ---------------------------------------------------------- the updates */

static void update_free(struct pw_update *u)
{
	if (!u)
		return;
	cJSON_Delete(u->pod);
	cJSON_Delete(u->running_pod);
	free(u);
}

static struct pw_update *update_dup(const struct pw_update *u)
{
	struct pw_update *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	*d = *u;
	d->pod = u->pod ? kt_json_dup(u->pod) : NULL;
	d->running_pod = u->running_pod ? kt_json_dup(u->running_pod) : NULL;
	if ((u->pod && !d->pod) || (u->running_pod && !d->running_pod)) {
		update_free(d);
		return NULL;
	}
	return d;
}

static cJSON *update_json(const struct pw_update *u)
{
	cJSON *o = cJSON_CreateObject(), *k;

	if (!o)
		return NULL;
	if (u->type != PW_U_NONE &&
	    !set_(o, "updateType", cJSON_CreateString(utype_names[u->type])))
		goto fail;
	if (u->pod && !set_(o, "pod", kt_json_dup(u->pod)))
		goto fail;
	if (u->running_pod && !set_(o, "runningPod", kt_json_dup(u->running_pod)))
		goto fail;
	if (!u->has_kill)
		return o;
	k = cJSON_CreateObject();
	if (!set_(o, "killPodOptions", k))
		goto fail;
	if (u->evict && !set_(k, "evict", cJSON_CreateTrue()))
		goto fail;
	if (u->has_override &&
	    !set_(k, "gracePeriodSecondsOverride", kt_json_num_new_int(u->override)))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* a pod object must carry metadata.uid and well-typed fields we read */
static int check_pod(const cJSON *pod, const char *what, struct kt_err *err)
{
	static const char *const ints[] = { "metadata.deletionGracePeriodSeconds",
					    "spec.terminationGracePeriodSeconds",
					    "spec.priority" };
	const char *uid = pod_str(pod, "metadata.uid");
	int64_t v;

	if (!cJSON_IsObject(pod))
		return bad(err, "%s: '%s' must be an object", what, "pod");
	if (!uid || !*uid)
		return bad(err, "%s: %s has no metadata.uid", what, "pod");
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		cJSON *n = kt_json_path(pod, ints[i]);

		if (n && !cJSON_IsNull(n) && !pod_int(pod, ints[i], &v))
			return bad(err, "%s: pod '%s' must be an integer", what, ints[i]);
	}
	if (pod_int(pod, "metadata.deletionGracePeriodSeconds", &v) && v < 0)
		return bad(err, "%s: pod '%s' must not be negative", what,
			   "metadata.deletionGracePeriodSeconds");
	if (kt_json_path(pod, "status.phase") && !pod_str(pod, "status.phase"))
		return bad(err, "%s: pod '%s' must be a string", what, "status.phase");
	return 0;
}

static int check_running_pod(const cJSON *rp, const char *what, struct kt_err *err)
{
	const char *uid = kt_json_get_string(rp, "uid");

	if (!cJSON_IsObject(rp))
		return bad(err, "%s: '%s' must be an object", what, "runningPod");
	if (!uid || !*uid)
		return bad(err, "%s: %s has no uid", what, "runningPod");
	return 0;
}

/* killPodOptions: evict, gracePeriodSecondsOverride (>= 0), status */
static int parse_kill(struct pw_update *u, const cJSON *k, const cJSON **status,
		      const char *what, struct kt_err *err)
{
	cJSON *st;

	if (!cJSON_IsObject(k))
		return bad(err, "%s: '%s' must be an object", what, "killPodOptions");
	u->has_kill = true;
	if (get_bool(k, "evict", false, &u->evict, what, err) < 0 ||
	    get_int(k, "gracePeriodSecondsOverride", &u->override, &u->has_override, what,
		    err) < 0)
		return -1;
	if (u->has_override && u->override < 0)
		return bad(err, "%s: '%s' must not be negative", what,
			   "gracePeriodSecondsOverride");
	st = cJSON_GetObjectItemCaseSensitive(k, "status");
	if (!st || cJSON_IsNull(st))
		return 0;
	if (!cJSON_IsObject(st))
		return bad(err, "%s: '%s' must be an object", what, "killPodOptions.status");
	if (kt_json_get(st, "conditions") && !kt_json_get_array(st, "conditions"))
		return bad(err, "%s: '%s' must be an array", what,
			   "killPodOptions.status.conditions");
	if (status)
		*status = st;
	return 0;
}

/*
 * An update from an event or from the state.  Events carry "updateType";
 * the stored activeUpdate has none (upstream never copies it there).
 */
static struct pw_update *update_parse(const cJSON *o, bool need_type, const cJSON **status,
				      const char *what, struct kt_err *err)
{
	struct pw_update *u = calloc(1, sizeof(*u));
	cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "updateType");
	cJSON *pod = cJSON_GetObjectItemCaseSensitive(o, "pod");
	cJSON *rp = cJSON_GetObjectItemCaseSensitive(o, "runningPod");
	cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "killPodOptions");

	if (!u) {
		kt_error(err, "out of memory");
		return NULL;
	}
	u->type = PW_U_NONE;
	if (t || need_type) {
		u->type = cJSON_IsString(t) ? name_index(utype_names, 4, t->valuestring) : -1;
		if (u->type < 0) {
			bad(err, "%s: '%s' must be one of create, update, sync, kill", what,
			    "updateType");
			goto fail;
		}
	}
	if (pod && !cJSON_IsNull(pod) && check_pod(pod, what, err) < 0)
		goto fail;
	if (rp && !cJSON_IsNull(rp) && check_running_pod(rp, what, err) < 0)
		goto fail;
	if ((!pod || cJSON_IsNull(pod)) && (!rp || cJSON_IsNull(rp))) {
		bad(err, "%s: needs '%s' or '%s'", what, "pod", "runningPod");
		goto fail;
	}
	if (k && !cJSON_IsNull(k) && parse_kill(u, k, status, what, err) < 0)
		goto fail;
	u->pod = pod && !cJSON_IsNull(pod) ? kt_json_dup(pod) : NULL;
	u->running_pod = rp && !cJSON_IsNull(rp) ? kt_json_dup(rp) : NULL;
	if ((pod && !cJSON_IsNull(pod) && !u->pod) || (rp && !cJSON_IsNull(rp) && !u->running_pod)) {
		kt_error(err, "out of memory");
		goto fail;
	}
	return u;
fail:
	update_free(u);
	return NULL;
}

/* ------------------------------------------------------------ the store */

/*
 * The live status of uid, or NULL; *forgotten tells a forgotten one is in
 * memory.  The index holds the latest entry of each uid: a pod forgotten
 * and seen again has a new entry, which replaces the old one there, and the
 * old one stays in pods[] until the save (it hides what a source still
 * holds).
 */
static struct pw_pod *pod_lookup(const struct kt_podworker *pw, const char *uid,
				 bool *forgotten)
{
	struct pw_pod *p = kt_hmap_get(&pw->index, uid);

	*forgotten = p && p->gone;
	return p && !p->gone ? p : NULL;
}

static struct pw_pod *pod_find(const struct kt_podworker *pw, const char *uid)
{
	bool forgotten;

	return pod_lookup(pw, uid, &forgotten);
}

static void pod_clear(struct pw_pod *p)
{
	update_free(p->pending);
	update_free(p->active);
	cJSON_Delete(p->status_post);
	free(p->fullname);
	p->pending = p->active = NULL;
	p->status_post = NULL;
	p->fullname = NULL;
}

static void pod_free(struct pw_pod *p)
{
	if (!p)
		return;
	pod_clear(p);
	free(p->uid);
	free(p);
}

/* a new, unloaded-free entry for uid; takes nothing */
static struct pw_pod *pod_add(struct kt_podworker *pw, const char *uid)
{
	struct pw_pod *p;

	if (pw->npods == pw->cap) {
		size_t cap = pw->cap ? pw->cap * 2 : 64;
		struct pw_pod **np = realloc(pw->pods, cap * sizeof(*np));

		if (!np)
			return NULL;
		pw->pods = np;
		pw->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->uid = strdup(uid);
	if (!p->uid || kt_hmap_put(&pw->index, p->uid, p) < 0) {
		free(p->uid);
		free(p);
		return NULL;
	}
	p->synced_at = p->started_at = p->terminating_at = p->terminated_at = PW_UNSET;
	p->running = PW_NONE;
	p->loaded = true;
	p->touched = true;
	p->seq = pw->next_seq++;
	pw->pods[pw->npods++] = p;
	pw->live++;
	return p;
}

static void pod_forget(struct kt_podworker *pw, struct pw_pod *p)
{
	cJSON *s = cJSON_GetObjectItemCaseSensitive(pw->started, p->fullname);

	if (cJSON_IsString(s) && strcmp(s->valuestring, p->uid) == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(pw->started, p->fullname);
	p->gone = true;
	p->touched = true;
	pw->live--;
}

/* the status as a result shows it, and with "seq" too as the state keeps it (stored) */
static cJSON *pod_json(const struct pw_pod *p, bool stored)
{
	cJSON *o = cJSON_CreateObject();
	const struct {
		const char *key;
		bool v;
	} flags[] = {
		{ "deleted", p->deleted },
		{ "evicted", p->evicted },
		{ "finished", p->finished },
		{ "restartRequested", p->restart_requested },
		{ "startedTerminating", p->started_terminating },
		{ "observedRuntime", p->observed_runtime },
		{ "working", p->working },
	};
	bool ok = o && set_(o, "uid", cJSON_CreateString(p->uid)) &&
		  (!stored || set_(o, "seq", kt_json_num_new_int(p->seq))) &&
		  set_(o, "fullname", cJSON_CreateString(p->fullname)) &&
		  set_(o, "syncedAt", time_json(p->synced_at)) &&
		  set_(o, "startedAt", time_json(p->started_at)) &&
		  set_(o, "terminatingAt", time_json(p->terminating_at)) &&
		  set_(o, "terminatedAt", time_json(p->terminated_at)) &&
		  set_(o, "gracePeriod", kt_json_num_new_int(p->grace));

	for (size_t i = 0; ok && i < sizeof(flags) / sizeof(flags[0]); i++)
		ok = set_(o, flags[i].key, cJSON_CreateBool(flags[i].v));
	ok = ok &&
	     set_(o, "pendingUpdate",
		  p->pending ? update_json(p->pending) : cJSON_CreateNull()) &&
	     set_(o, "activeUpdate", p->active ? update_json(p->active) : cJSON_CreateNull()) &&
	     set_(o, "statusPostTerminating",
		  p->status_post ? kt_json_dup(p->status_post) : cJSON_CreateArray()) &&
	     set_(o, "runningWork",
		  p->running == PW_NONE ? cJSON_CreateNull()
					: cJSON_CreateString(work_names[p->running]));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int pod_from_json(struct pw_pod *p, const cJSON *o, const char *what, struct kt_err *err)
{
	const char *fn = kt_json_get_string(o, "fullname");
	const char *uid = kt_json_get_string(o, "uid");
	cJSON *pend = kt_json_get(o, "pendingUpdate"), *act = kt_json_get(o, "activeUpdate");
	cJSON *sp = kt_json_get(o, "statusPostTerminating"), *rw = kt_json_get(o, "runningWork");
	int64_t seq;
	bool has;

	if (!uid || strcmp(uid, p->uid) != 0)
		return bad(err, "%s: '%s' is not '%s'", what, "uid", p->uid);
	if (!fn)
		return bad(err, "%s: '%s' must be a string", what, "fullname");
	if (get_int(o, "seq", &seq, &has, what, err) < 0)
		return -1;
	if (has)
		p->seq = seq;
	if (get_time(o, "syncedAt", &p->synced_at, what, err) < 0 ||
	    get_time(o, "startedAt", &p->started_at, what, err) < 0 ||
	    get_time(o, "terminatingAt", &p->terminating_at, what, err) < 0 ||
	    get_time(o, "terminatedAt", &p->terminated_at, what, err) < 0 ||
	    get_int(o, "gracePeriod", &p->grace, &has, what, err) < 0 ||
	    get_bool(o, "deleted", false, &p->deleted, what, err) < 0 ||
	    get_bool(o, "evicted", false, &p->evicted, what, err) < 0 ||
	    get_bool(o, "finished", false, &p->finished, what, err) < 0 ||
	    get_bool(o, "restartRequested", false, &p->restart_requested, what, err) < 0 ||
	    get_bool(o, "startedTerminating", false, &p->started_terminating, what, err) < 0 ||
	    get_bool(o, "observedRuntime", false, &p->observed_runtime, what, err) < 0 ||
	    get_bool(o, "working", false, &p->working, what, err) < 0)
		return -1;
	if (!has)
		p->grace = 0;
	p->running = PW_NONE;
	if (rw && !cJSON_IsNull(rw)) {
		p->running = cJSON_IsString(rw) ? name_index(work_names, 3, rw->valuestring) : -1;
		if (p->running < 0)
			return bad(err, "%s: '%s' is not a work type", what, "runningWork");
	}
	p->fullname = strdup(fn);
	if (sp && !cJSON_IsArray(sp))
		return bad(err, "%s: '%s' must be an array", what, "statusPostTerminating");
	if (sp && cJSON_GetArraySize(sp) > 0)
		p->status_post = kt_json_dup(sp);
	if (pend && !cJSON_IsNull(pend)) {
		p->pending = update_parse(pend, true, NULL, what, err);
		if (!p->pending)
			return -1;
	}
	if (act && !cJSON_IsNull(act)) {
		p->active = update_parse(act, false, NULL, what, err);
		if (!p->active)
			return -1;
	}
	/* work is only handed out for an active update (podWorkerLoop works
	 * on the update it took), and completing it reads that update */
	if (p->running != PW_NONE && !p->active)
		return bad(err, "%s: '%s' without '%s'", what, "runningWork",
			   "activeUpdate");
	if (!p->fullname)
		return kt_error(err, "out of memory");
	return 0;
}

/* parses a pod's stored line the first time it is needed */
static int pod_load(struct kt_podworker *pw, struct pw_pod *p, struct kt_err *err)
{
	char what[96];
	cJSON *o;
	int rc;

	if (p->loaded)
		return 0;
	snprintf(what, sizeof(what), "%s:%ld", pw->name, p->lineno);
	o = kt_json_parse(what, p->line, p->line_len, err);
	rc = o ? pod_from_json(p, o, what, err) : -1;
	cJSON_Delete(o);
	if (rc < 0) {
		pod_clear(p);
		pw->damaged = true;
		if (err)
			err->kind = KT_ERR_INPUT;
		return -1;
	}
	p->loaded = true;
	return 0;
}

static uint64_t hash_text(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h ? h : 1;
}

/*
 * A pod's stored text from the source, parsed at once; want is the UID
 * asked for, or NULL to take the UID the text names.  Takes text.
 */
static int pod_adopt(struct kt_podworker *pw, const char *want, char *text, size_t len,
		     const char *where, struct pw_pod **out, struct kt_err *err)
{
	char what[4200];
	cJSON *o;
	const char *uid;
	int64_t seq = pw->next_seq;
	bool forgotten;
	int rc = -1;

	*out = NULL;
	snprintf(what, sizeof(what), "%s:1", where);
	o = kt_json_parse(what, text, len, err);
	uid = want ? want : kt_json_get_string(o, "uid");
	if (o && (!uid || !*uid))
		bad(err, "%s: '%s' must be a non-empty string", what, "uid");
	else if (o && !want && (pod_lookup(pw, uid, &forgotten) || forgotten))
		rc = 0;		/* a newer status is in memory */
	else if (o && !(*out = pod_add(pw, uid)))
		kt_error(err, "out of memory");
	else if (o)
		rc = pod_from_json(*out, o, what, err);
	pw->next_seq = seq;
	if (*out && rc == 0)
		(*out)->saved = hash_text(text, len);
	if (*out && rc < 0) {
		pod_clear(*out);
		pod_forget(pw, *out);
		(*out)->touched = false;
		*out = NULL;
	}
	if (rc < 0 && o) {
		pw->damaged = true;
		err->kind = KT_ERR_INPUT;
	} else if (rc < 0) {
		pw->damaged = err->kind == KT_ERR_INPUT;
	}
	cJSON_Delete(o);
	free(text);
	return rc;
}

/* asks the source for a pod not in memory (nor forgotten since the last save) */
static int pod_fetch(struct kt_podworker *pw, const char *uid, struct pw_pod **out,
		     struct kt_err *err)
{
	char *text = NULL, *where = NULL;
	size_t len = 0;
	bool forgotten;
	int got;

	*out = pod_lookup(pw, uid, &forgotten);
	if (*out || forgotten || !pw->src.get || pw->all_loaded)
		return 0;
	got = pw->src.get(pw->src.ctx, uid, &text, &len, &where, err);
	if (got <= 0) {
		if (got < 0 && err->kind == KT_ERR_INPUT)
			pw->damaged = true;
		return got;
	}
	got = pod_adopt(pw, uid, text, len, where, out, err);
	free(where);
	return got;
}

/* the status for uid (loaded), or *out NULL when unknown */
static int pod_get(struct kt_podworker *pw, const char *uid, struct pw_pod **out,
		   struct kt_err *err)
{
	if (pod_fetch(pw, uid, out, err) < 0)
		return -1;
	if (*out && pod_load(pw, *out, err) < 0) {
		*out = NULL;
		return -1;
	}
	if (*out)
		(*out)->touched = true;
	return 0;
}

static int seq_cmp(const void *a, const void *b)
{
	const struct pw_pod *x = *(struct pw_pod *const *)a;
	const struct pw_pod *y = *(struct pw_pod *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* every pod the source holds and memory does not, then all in order of first sighting */
static int fetch_all(struct kt_podworker *pw, struct kt_err *err)
{
	void *cursor = NULL;
	char *text, *where;
	size_t len;
	struct pw_pod *p;
	int got;

	while ((got = pw->src.next(pw->src.ctx, &cursor, &text, &len, &where, err)) > 0) {
		got = pod_adopt(pw, NULL, text, len, where, &p, err);
		free(where);
		if (got < 0) {
			pw->src.next(pw->src.ctx, &cursor, NULL, NULL, NULL, err);
			break;
		}
	}
	if (got < 0) {
		pw->damaged = pw->damaged || err->kind == KT_ERR_INPUT;
		return -1;
	}
	pw->all_loaded = true;
	/* no pods yet: no array at all, which qsort may not be given */
	if (pw->npods > 1)
		qsort(pw->pods, pw->npods, sizeof(*pw->pods), seq_cmp);
	return 0;
}

static int load_all(struct kt_podworker *pw, struct kt_err *err)
{
	if (pw->src.next && !pw->all_loaded && fetch_all(pw, err) < 0)
		return -1;
	for (size_t i = 0; i < pw->npods; i++) {
		if (pw->pods[i]->gone)
			continue;
		if (pod_load(pw, pw->pods[i], err) < 0)
			return -1;
		pw->pods[i]->touched = true;
	}
	return 0;
}

/* ------------------------------------------------------- state as text */

struct kt_podworker *kt_podworker_new(void)
{
	struct kt_podworker *pw = calloc(1, sizeof(*pw));

	if (!pw)
		return NULL;
	pw->name = strdup("state");
	pw->started = cJSON_CreateObject();
	pw->waiting = cJSON_CreateObject();
	if (!pw->name || !pw->started || !pw->waiting) {
		kt_podworker_free(pw);
		return NULL;
	}
	return pw;
}

void kt_podworker_free(struct kt_podworker *pw)
{
	if (!pw)
		return;
	for (size_t i = 0; i < pw->npods; i++)
		pod_free(pw->pods[i]);
	free(pw->pods);
	kt_hmap_release(&pw->index);
	cJSON_Delete(pw->started);
	cJSON_Delete(pw->waiting);
	cJSON_Delete(pw->shutdown);
	free(pw->text);
	free(pw->name);
	free(pw);
}

size_t kt_podworker_count(const struct kt_podworker *pw)
{
	return pw ? pw->live : 0;
}

/* an array of non-empty strings */
static bool uid_list(const cJSON *a)
{
	const cJSON *u;

	if (!cJSON_IsArray(a))
		return false;
	cJSON_ArrayForEach (u, a)
		if (!cJSON_IsString(u) || !*u->valuestring)
			return false;
	return true;
}

/* the node line's "nodeShutdown": absent, null, or as this module writes it */
static int shutdown_check(const cJSON *sd, const char *name, struct kt_err *err)
{
	const cJSON *g;
	int64_t t, n;
	bool has;

	if (!sd || cJSON_IsNull(sd))
		return 0;
	if (!cJSON_IsObject(sd) || get_time(sd, "deadline", &t, name, err) < 0 || t == PW_UNSET ||
	    get_int(sd, "slackSeconds", &n, &has, name, err) < 0 ||
	    !uid_list(kt_json_get(sd, "uids")) || !cJSON_IsArray(kt_json_get(sd, "groups")))
		return bad(err, "%s:1: %s", name, "a damaged nodeShutdown");
	cJSON_ArrayForEach (g, kt_json_get(sd, "groups"))
		if (!cJSON_IsObject(g) || get_int(g, "priority", &n, &has, name, err) < 0 ||
		    get_int(g, "shutdownGracePeriodSeconds", &n, &has, name, err) < 0 || !has ||
		    n < 0 || !uid_list(kt_json_get(g, "uids")))
			return bad(err, "%s:1: %s", name, "a damaged nodeShutdown group");
	return 0;
}

static int header_parse(struct kt_podworker *pw, const char *line, size_t len,
			struct kt_err *err)
{
	cJSON *h = kt_json_parse(pw->name, line, len, err);
	cJSON *v, *s, *w;
	int rc = -1;
	bool synced, has_seq;
	int64_t next = 0;

	if (!h)
		return -1;
	v = kt_json_get(h, "version");
	s = kt_json_get_object(h, "startedStaticPodsByFullname");
	w = kt_json_get_object(h, "waitingToStartStaticPodsByFullname");
	if (!cJSON_IsObject(h) || !kt_json_get_string(h, "kind") ||
	    strcmp(kt_json_get_string(h, "kind"), "PodWorkerState") != 0) {
		bad(err, "%s:1: not a pod worker state (%s)", pw->name,
		    "no \"kind\":\"PodWorkerState\"");
		goto out;
	}
	if (!v || !kt_json_is_number(v) ||
	    (v->valuedouble != PW_STATE_VERSION && v->valuedouble != 1)) {
		bad(err, "%s:1: %s", pw->name, "unsupported state version");
		goto out;
	}
	if (get_bool(h, "podsSynced", false, &synced, pw->name, err) < 0 ||
	    get_int(h, "nextSeq", &next, &has_seq, pw->name, err) < 0)
		goto out;
	if (!s || !w) {
		bad(err, "%s:1: %s", pw->name, "missing the static pod maps");
		goto out;
	}
	if (shutdown_check(kt_json_get(h, "nodeShutdown"), pw->name, err) < 0)
		goto out;
	cJSON_Delete(pw->shutdown);
	pw->shutdown = NULL;
	if (cJSON_IsObject(kt_json_get(h, "nodeShutdown")))
		pw->shutdown = cJSON_DetachItemFromObjectCaseSensitive(h, "nodeShutdown");
	pw->pods_synced = synced;
	pw->next_seq = next;
	cJSON_Delete(pw->started);
	cJSON_Delete(pw->waiting);
	pw->started = cJSON_DetachItemViaPointer(h, s);
	pw->waiting = cJSON_DetachItemViaPointer(h, w);
	rc = 0;
out:
	cJSON_Delete(h);
	return rc;
}

/*
 * A pod line starts {"uid":"...", as this module writes it.  A UID with
 * escapes is read by parsing the line at once; the rest wait until used.
 */
static int line_add(struct kt_podworker *pw, const char *line, size_t len, long lineno,
		    struct kt_err *err)
{
	static const char lead[] = "{\"uid\":\"";
	const char *s = line + sizeof(lead) - 1, *e = s;
	char uid[256];
	struct pw_pod *p;
	bool esc = false;

	if (len < sizeof(lead) + 1 || memcmp(line, lead, sizeof(lead) - 1) != 0 ||
	    line[len - 1] != '}')
		return kt_error_kind(err, KT_ERR_INPUT, "%s:%ld: not a pod status line",
				     pw->name, lineno);
	while (e < line + len && *e != '"') {
		if (*e == '\\') {
			esc = true;
			e++;
		}
		e++;
	}
	if (e >= line + len || esc || (size_t)(e - s) >= sizeof(uid) || e == s)
		return kt_error_kind(err, KT_ERR_INPUT, "%s:%ld: bad pod uid", pw->name,
				     lineno);
	memcpy(uid, s, (size_t)(e - s));
	uid[e - s] = '\0';
	if (pod_find(pw, uid))
		return kt_error_kind(err, KT_ERR_INPUT, "%s:%ld: pod '%s' appears twice",
				     pw->name, lineno, uid);
	p = pod_add(pw, uid);
	if (!p)
		return kt_error(err, "out of memory");
	p->loaded = false;
	p->line = line;
	p->line_len = len;
	p->lineno = lineno;
	return 0;
}

struct kt_podworker *kt_podworker_load(const char *name, const char *text, size_t len,
				       struct kt_err *err)
{
	struct kt_podworker *pw = kt_podworker_new();
	const char *p = text, *end = text + len;
	long lineno = 1;
	int64_t next = 0;

	if (!pw) {
		kt_error(err, "out of memory");
		return NULL;
	}
	free(pw->name);
	pw->name = strdup(name ? name : "state");
	if (!pw->name) {
		kt_error(err, "out of memory");
		goto fail;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		int rc;

		if (lineno == 1)
			rc = header_parse(pw, p, n, err);
		else
			rc = line_add(pw, p, n, lineno, err);
		if (rc < 0) {
			err->kind = KT_ERR_INPUT;
			goto fail;
		}
		if (lineno == 1)
			next = pw->next_seq;
		p += n + (nl ? 1 : 0);
		lineno++;
	}
	/* version 1 numbered its pods by line; version 2 keeps the next number */
	if (next > 0)
		pw->next_seq = next;
	for (size_t i = 0; i < pw->npods; i++)
		pw->pods[i]->touched = false;
	return pw;
fail:
	kt_podworker_free(pw);
	return NULL;
}

struct kt_podworker *kt_podworker_take_text(const char *name, char *buf, size_t len,
					    struct kt_err *err)
{
	struct kt_podworker *pw = kt_podworker_load(name, buf, len, err);

	if (!pw) {
		free(buf);
		return NULL;
	}
	pw->text = buf;
	return pw;
}

static void put_json(struct kt_sb *sb, const cJSON *doc)
{
	char *s = doc ? kt_json_print(doc, 0) : NULL;

	if (s)
		kt_sb_puts(sb, s);
	else
		sb->oom = true;
	free(s);
}

static cJSON *header_json(const struct kt_podworker *pw)
{
	cJSON *h = cJSON_CreateObject();

	if (h && set_(h, "kind", cJSON_CreateString("PodWorkerState")) &&
	    set_(h, "version", kt_json_num_new_int(PW_STATE_VERSION)) &&
	    set_(h, "podsSynced", cJSON_CreateBool(pw->pods_synced)) &&
	    set_(h, "nextSeq", kt_json_num_new_int(pw->next_seq)) &&
	    set_(h, "startedStaticPodsByFullname", kt_json_dup(pw->started)) &&
	    set_(h, "waitingToStartStaticPodsByFullname", kt_json_dup(pw->waiting)) &&
	    (!pw->shutdown || set_(h, "nodeShutdown", kt_json_dup(pw->shutdown))))
		return h;
	cJSON_Delete(h);
	return NULL;
}

int kt_podworker_text(struct kt_podworker *pw, char **out, size_t *len, struct kt_err *err)
{
	struct kt_sb t = { 0 };
	cJSON *h = header_json(pw);

	put_json(&t, h);
	cJSON_Delete(h);
	for (size_t i = 0; !t.oom && i < pw->npods; i++) {
		struct pw_pod *p = pw->pods[i];
		cJSON *o;

		if (p->gone)
			continue;
		if (!p->loaded) {
			kt_sb_put(&t, p->line, p->line_len);
			kt_sb_put(&t, "\n", 1);
			continue;
		}
		o = pod_json(p, true);
		put_json(&t, o);
		cJSON_Delete(o);
	}
	if (t.oom) {
		kt_sb_release(&t);
		return kt_error(err, "out of memory");
	}
	*out = t.buf;
	*len = t.len;
	return 0;
}

int kt_podworker_read_all(struct kt_podworker *pw, struct kt_err *err)
{
	return load_all(pw, err);
}

void kt_podworker_set_source(struct kt_podworker *pw,
			     const struct kt_podworker_source *src)
{
	pw->src = *src;
	pw->all_loaded = false;
}

int kt_podworker_node_text(struct kt_podworker *pw, char **out, size_t *len,
			   struct kt_err *err)
{
	cJSON *h = header_json(pw);

	*out = h ? kt_json_print(h, 0) : NULL;
	cJSON_Delete(h);
	if (!*out)
		return kt_error(err, "out of memory");
	*len = strlen(*out);
	return 0;
}

/* a forgotten status with a live one of the same UID after it is no change */
static bool superseded(const struct kt_podworker *pw, const struct pw_pod *p)
{
	const struct pw_pod *live = pod_find(pw, p->uid);

	return p->gone && live && live != p;
}

static int change_one(struct kt_podworker *pw, struct pw_pod *p,
		      kt_podworker_change_fn *fn, void *ctx, struct kt_err *err)
{
	cJSON *o;
	char *text;
	uint64_t h;
	int rc;

	if (p->gone)
		return p->saved && !superseded(pw, p) ? fn(ctx, p->uid, NULL, 0, err) : 0;
	o = pod_json(p, true);
	text = o ? kt_json_print(o, 0) : NULL;
	cJSON_Delete(o);
	if (!text)
		return kt_error(err, "out of memory");
	h = hash_text(text, strlen(text));
	rc = h == p->saved ? 0 : fn(ctx, p->uid, text, strlen(text), err);
	free(text);
	if (rc == 0)
		p->saved = h;
	return rc;
}

int kt_podworker_changes(struct kt_podworker *pw, kt_podworker_change_fn *fn, void *ctx,
			 struct kt_err *err)
{
	for (size_t i = 0; i < pw->npods; i++) {
		struct pw_pod *p = pw->pods[i];

		if (!p->touched || !p->loaded)
			continue;
		if (change_one(pw, p, fn, ctx, err) < 0)
			return -1;
		p->touched = false;
	}
	for (size_t i = 0; i < pw->npods; i++)
		if (pw->pods[i]->gone)
			pw->pods[i]->saved = 0;
	return 0;
}

cJSON *kt_podworker_pod(struct kt_podworker *pw, const char *uid, struct kt_err *err)
{
	struct pw_pod *p;
	cJSON *o;

	if (pod_get(pw, uid, &p, err) < 0 || !p)
		return NULL;
	o = pod_json(p, false);
	if (!o)
		kt_error(err, "out of memory");
	return o;
}

bool kt_podworker_damaged(const struct kt_podworker *pw)
{
	return pw && pw->damaged;
}

/* --------------------------------------------------------- the machine */

static bool is_started(const struct pw_pod *p)
{
	return p->started_at != PW_UNSET;
}

static bool is_requested(const struct pw_pod *p)
{
	return p->terminating_at != PW_UNSET;
}

static bool is_terminated(const struct pw_pod *p)
{
	return p->terminated_at != PW_UNSET;
}

static int work_type(const struct pw_pod *p)
{
	if (is_terminated(p))
		return PW_TERMINATED;
	return is_requested(p) ? PW_TERMINATING : PW_SYNC;
}

/* what one pod's part of a result says */
struct pw_out {
	cJSON *actions;
	int work;
	const char *ignored;
};

static cJSON *act(struct pw_out *out, const char *name)
{
	cJSON *a = cJSON_CreateObject();

	if (!a || !set_(a, "action", cJSON_CreateString(name)) ||
	    kt_json_append(out->actions, a) < 0)
		return NULL;
	return a;
}

static int act_requeue(struct pw_out *out, int64_t seconds)
{
	cJSON *a = act(out, "requeue");
	char buf[32];

	if (!a || !set_(a, "after", cJSON_CreateString(kt_duration_format(seconds * 1000, buf,
									       sizeof(buf)))))
		return -1;
	return 0;
}

static int act_stop_probes(struct pw_out *out, bool liveness, bool readiness, bool startup)
{
	cJSON *a = act(out, "stop-probes"), *t = cJSON_CreateArray();

	if (!a || !set_(a, "types", t))
		return -1;
	if (liveness && kt_json_append(t, cJSON_CreateString("liveness")) < 0)
		return -1;
	if (readiness && kt_json_append(t, cJSON_CreateString("readiness")) < 0)
		return -1;
	if (startup && kt_json_append(t, cJSON_CreateString("startup")) < 0)
		return -1;
	return 0;
}

/* mergeLastUpdate: takes u */
static int merge_last(struct pw_pod *p, struct pw_update *u)
{
	struct pw_update *a = p->active;

	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a) {
			update_free(u);
			return -1;
		}
		a->type = PW_U_NONE;
		p->active = a;
	}
	if (!a->pod || !u->running_pod) {
		cJSON_Delete(a->pod);
		a->pod = u->pod;
		u->pod = NULL;
	}
	cJSON_Delete(a->running_pod);
	a->running_pod = u->running_pod;
	u->running_pod = NULL;
	a->has_kill = u->has_kill;
	a->evict = u->has_kill && u->evict;
	a->has_override = u->has_kill && u->has_override;
	a->override = a->has_override ? u->override : 0;
	update_free(u);
	return 0;
}

/* requeueLastPodUpdate: replay the active update unless one is pending */
static int requeue_last(struct pw_pod *p)
{
	if (p->pending || !p->active)
		return 0;
	p->pending = update_dup(p->active);
	if (!p->pending)
		return -1;
	p->pending->type = PW_U_SYNC;
	p->working = true;
	return 0;
}

/* allowStaticPodStart: 1 allowed, 0 not yet, -1 error */
static int allow_static_start(struct kt_podworker *pw, const char *fullname, const char *uid,
			      struct kt_err *err)
{
	cJSON *s = cJSON_GetObjectItemCaseSensitive(pw->started, fullname);
	cJSON *list = cJSON_GetObjectItemCaseSensitive(pw->waiting, fullname);
	int i, n = list ? cJSON_GetArraySize(list) : 0;

	if (cJSON_IsString(s))
		return strcmp(s->valuestring, uid) == 0;
	for (i = 0; i < n; i++) {
		cJSON *w = cJSON_GetArrayItem(list, i);
		struct pw_pod *st;

		if (!cJSON_IsString(w))
			continue;
		if (pod_get(pw, w->valuestring, &st, err) < 0)
			return -1;
		if (!st || is_requested(st) || is_terminated(st))
			continue;
		if (strcmp(w->valuestring, uid) != 0) {
			while (i-- > 0)
				cJSON_DeleteItemFromArray(list, 0);
			return 0;
		}
		for (int j = 0; j <= i; j++)
			cJSON_DeleteItemFromArray(list, 0);
		break;
	}
	if (list && cJSON_GetArraySize(list) == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(pw->waiting, fullname);
	if (!set_(pw->started, fullname, cJSON_CreateString(uid)))
		return kt_error(err, "out of memory");
	return 1;
}

/* the probes of each container that has any (sidecars included) */
static cJSON *probe_containers(const cJSON *pod)
{
	static const char *const keys[] = { "livenessProbe", "readinessProbe", "startupProbe" };
	const char *lists[] = { "spec.initContainers", "spec.containers" };
	cJSON *out = cJSON_CreateArray(), *c;

	for (size_t l = 0; out && l < 2; l++) {
		cJSON_ArrayForEach(c, kt_json_path(pod, lists[l]))
		{
			const char *rp = kt_json_get_string(c, "restartPolicy");
			cJSON *o = NULL;

			if (l == 0 && (!rp || strcmp(rp, "Always") != 0))
				continue;
			for (size_t k = 0; k < 3; k++) {
				cJSON *pr = kt_json_get_object(c, keys[k]);

				if (!pr)
					continue;
				if (!o) {
					o = cJSON_CreateObject();
					if (kt_json_append(out, o) < 0 ||
					    !set_(o, "name", kt_json_dup(kt_json_get(c, "name"))))
						goto fail;
				}
				if (!set_(o, keys[k], kt_json_dup(pr)))
					goto fail;
			}
		}
	}
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}

/* the status to report: the pod's status with the kill's status laid over it */
static cJSON *status_apply(const cJSON *pod, const cJSON *fn)
{
	cJSON *base = kt_json_get_object(pod, "status");
	cJSON *st = base ? kt_json_dup(base) : cJSON_CreateObject(), *c, *conds;

	if (!st)
		return NULL;
	cJSON_ArrayForEach(c, fn)
	{
		if (strcmp(c->string, "conditions") != 0) {
			if (!set_(st, c->string, kt_json_dup(c)))
				goto fail;
			continue;
		}
		conds = kt_json_get_array(st, "conditions");
		if (!conds && !set_(st, "conditions", conds = cJSON_CreateArray()))
			goto fail;
		for (cJSON *nc = c->child; nc; nc = nc->next) {
			const char *type = kt_json_get_string(nc, "type");
			cJSON *old = NULL, *oc;

			cJSON_ArrayForEach(oc, conds)
			{
				const char *t = kt_json_get_string(oc, "type");

				if (type && t && strcmp(type, t) == 0)
					old = oc;
			}
			if (old) {
				if (!cJSON_ReplaceItemViaPointer(conds, old, kt_json_dup(nc)))
					goto fail;
			} else if (kt_json_append(conds, kt_json_dup(nc)) < 0) {
				goto fail;
			}
		}
	}
	return st;
fail:
	cJSON_Delete(st);
	return NULL;
}

static int emit_terminating(struct pw_pod *p, struct pw_out *out)
{
	struct pw_update *a = p->active;
	const cJSON *fn = p->status_post ? cJSON_GetArrayItem(p->status_post,
							       cJSON_GetArraySize(p->status_post) - 1)
					 : NULL;
	int64_t g;
	cJSON *kill;

	/* acknowledgeTerminating: no new containers start from here on */
	p->started_terminating = true;
	if (a->running_pod) {
		/* SyncTerminatingRuntimePod always kills with a grace of 1 */
		kill = act_stop_probes(out, true, true, true) < 0 ? NULL : act(out, "kill-pod");
		if (!kill || !set_(kill, "gracePeriodSeconds", kt_json_num_new_int(1)) ||
		    !set_(kill, "runningPod", kt_json_dup(a->running_pod)))
			return -1;
		return 0;
	}
	if (a->has_override)
		g = a->override;
	else if (p->grace > 0)
		g = p->grace;
	else
		g = kt_podworker_effective_grace(0, a->pod, false, 0, NULL);
	if (act_stop_probes(out, true, g <= 1, true) < 0)
		return -1;
	kill = act(out, "kill-pod");
	if (!kill || !set_(kill, "gracePeriodSeconds", kt_json_num_new_int(g)))
		return -1;
	if (fn && !set_(kill, "status", status_apply(a->pod, fn)))
		return -1;
	if (g > 1 && act_stop_probes(out, false, true, false) < 0)
		return -1;
	return 0;
}

/* the actions of the work just handed out */
static int emit_work(struct pw_pod *p, int wt, int utype, struct pw_out *out)
{
	cJSON *a;

	switch (wt) {
	case PW_SYNC:
		a = act(out, "start-probes");
		if (!a || !set_(a, "containers", probe_containers(p->active->pod)))
			return -1;
		a = act(out, "sync-pod");
		if (!a ||
		    !set_(a, "updateType",
			  cJSON_CreateString(utype_names[utype < 0 ? PW_U_SYNC : utype])) ||
		    !set_(a, "pod", kt_json_dup(p->active->pod)))
			return -1;
		return 0;
	case PW_TERMINATING:
		return emit_terminating(p, out);
	default:
		return act(out, "cleanup-pod") ? 0 : -1;
	}
}

/* cleanupUnstartedPod: a static pod killed before it could start */
static void cleanup_unstarted(struct pw_pod *p, int64_t now)
{
	p->finished = true;
	p->working = false;
	p->terminated_at = now;
}

/*
 * The worker goroutine waking up: startPodSync, then the work it hands out.
 * Nothing happens while earlier work is still out.
 */
static int wake(struct kt_podworker *pw, struct pw_pod *p, int64_t now, struct pw_out *out,
		struct kt_err *err)
{
	struct pw_update *u = p->pending;
	int wt, utype, allowed;

	out->work = PW_NONE;
	if (p->running != PW_NONE)
		return 0;
	if (!u) {
		p->working = false;
		return 0;
	}
	wt = work_type(p);
	utype = u->type;
	if (!is_started(p) && !(u->running_pod && wt == PW_TERMINATING)) {
		if (!u->pod) {
			p->pending = NULL;
			p->working = false;
			return merge_last(p, u) < 0 ? kt_error(err, "out of memory") : 0;
		}
		if (kt_podworker_is_static(u->pod)) {
			if (is_requested(p)) {
				p->pending = NULL;
				update_free(u);
				cleanup_unstarted(p, now);
				return 0;
			}
			allowed = allow_static_start(pw, p->fullname, p->uid, err);
			if (allowed < 0)
				return -1;
			if (!allowed) {
				p->working = false;
				return act_requeue(out, PW_BACKOFF_S) < 0 ? kt_error(err, "out of memory")
									  : 0;
			}
		}
		p->started_at = now;
	}
	p->pending = NULL;
	if (merge_last(p, u) < 0)
		return kt_error(err, "out of memory");
	p->running = wt;
	out->work = wt;
	if (emit_work(p, wt, utype, out) < 0)
		return kt_error(err, "out of memory");
	return 0;
}

/* {"metadata":{"uid","name","namespace"}}: no spec, so no grace of its own */
static cJSON *synthetic_pod(const cJSON *rp)
{
	cJSON *pod = cJSON_CreateObject(), *md = cJSON_CreateObject();
	const char *keys[] = { "uid", "name", "namespace" };

	if (!set_(pod, "metadata", md)) {
		cJSON_Delete(pod);
		return NULL;
	}
	for (size_t i = 0; i < 3; i++) {
		const char *v = kt_json_get_string(rp, keys[i]);

		if (v && !set_(md, keys[i], cJSON_CreateString(v))) {
			cJSON_Delete(pod);
			return NULL;
		}
	}
	return pod;
}

static int wait_static(struct kt_podworker *pw, const struct pw_pod *p)
{
	cJSON *list = cJSON_GetObjectItemCaseSensitive(pw->waiting, p->fullname);

	if (!list && !set_(pw->waiting, p->fullname, list = cJSON_CreateArray()))
		return -1;
	return kt_json_append(list, cJSON_CreateString(p->uid));
}

static struct pw_pod *first_sighting(struct kt_podworker *pw, const char *uid,
				     const struct pw_update *u, bool runtime, bool cache_terminal,
				     int64_t now)
{
	struct pw_pod *p = pod_add(pw, uid);

	if (!p)
		return NULL;
	p->fullname = full_name(u->pod, u->running_pod);
	if (!p->fullname)
		return NULL;
	p->synced_at = now;
	/* a kubelet restart: terminal in config and in the runtime, so only
	 * SyncTerminatedPod is left to run */
	if (!runtime && cache_terminal && pod_terminal_phase(u->pod)) {
		p->terminating_at = p->terminated_at = now;
		p->started_terminating = true;
	}
	return p;
}

/* steps 6 and 7 of UpdatePod: the transition and the grace */
static void update_termination(struct pw_pod *p, struct pw_update *u, const cJSON *pod,
			       bool runtime, int64_t now, bool *became, bool *shortened)
{
	if (!is_requested(p)) {
		if (runtime || pod_deleting(pod)) {
			p->deleted = true;
			*became = true;
		} else if (pod_terminal_phase(pod)) {
			*became = true;
		} else if (u->type == PW_U_KILL) {
			if (u->has_kill && u->evict)
				p->evicted = true;
			*became = true;
		}
		if (*became)
			p->terminating_at = now;
	}
	if (is_requested(p) && !is_terminated(p)) {
		p->grace = kt_podworker_effective_grace(p->grace, pod, u->has_kill && u->has_override,
							u->override, shortened);
		u->has_kill = true;
		u->has_override = true;
		u->override = p->grace;
	} else {
		u->has_kill = u->evict = u->has_override = false;
	}
}

/*
 * Step 3 of UpdatePod for a runtime-only kill: decide on the pod config last
 * seen for the UID, else on a pod made from the runtime one (*synthetic,
 * the caller's).  NULL when out of memory.
 */
static const cJSON *runtime_view(struct pw_pod *p, struct pw_update *u, cJSON **synthetic)
{
	const cJSON *known = p->pending && p->pending->pod ? p->pending->pod
			     : p->active && p->active->pod ? p->active->pod
							    : NULL;

	p->observed_runtime = true;
	if (!known)
		return *synthetic = synthetic_pod(u->running_pod);
	u->pod = kt_json_dup(known);
	cJSON_Delete(u->running_pod);
	u->running_pod = NULL;
	return u->pod;
}

/* steps 9 and 10: the update becomes the pending one; a busy worker may be told to stop */
static int dispatch(struct kt_podworker *pw, struct pw_pod *p, struct pw_update *u,
		    bool cancel, int64_t now, struct pw_out *out, struct kt_err *err)
{
	cJSON *c;

	update_free(p->pending);
	p->pending = u;
	p->working = true;
	if (p->running == PW_NONE)
		return wake(pw, p, now, out, err);
	out->work = PW_NONE;
	if (!cancel)
		return 0;
	c = act(out, "cancel");
	if (!c || !set_(c, "work", cJSON_CreateString(work_names[p->running])))
		return kt_error(err, "out of memory");
	return 0;
}

/* the pod's status for an update, made at first sighting (*first) */
static int update_status(struct kt_podworker *pw, const struct pw_update *u, bool runtime,
			 bool cache_terminal, int64_t now, struct pw_pod **pp, bool *first,
			 struct kt_err *err)
{
	const char *uid = runtime ? kt_json_get_string(u->running_pod, "uid")
				  : pod_str(u->pod, "metadata.uid");

	*first = false;
	if (pod_get(pw, uid, pp, err) < 0)
		return -1;
	if (*pp)
		return 0;
	*first = true;
	*pp = first_sighting(pw, uid, u, runtime, cache_terminal, now);
	return *pp ? 0 : kt_error(err, "out of memory");
}

/*
 * UpdatePod, in upstream's order.  Takes u and fn (the kill's status, may
 * be NULL).  *pp is the pod's status afterwards (NULL when none).
 */
static int update_pod(struct kt_podworker *pw, struct pw_update *u, cJSON *fn,
		      bool cache_terminal, int64_t now, struct pw_out *out, struct pw_pod **pp,
		      struct kt_err *err)
{
	const cJSON *pod = u->pod;
	cJSON *synthetic = NULL;
	bool runtime = u->running_pod && !u->pod, first, became = false, shortened = false;
	int rc = -1;

	*pp = NULL;
	if (runtime && u->type != PW_U_KILL) {
		out->ignored = "runtime pods can only be killed";
		rc = 0;
		goto out;
	}
	if (!runtime && u->running_pod) {
		cJSON_Delete(u->running_pod);
		u->running_pod = NULL;
	}
	if (update_status(pw, u, runtime, cache_terminal, now, pp, &first, err) < 0)
		goto out;
	if (runtime && !(pod = runtime_view(*pp, u, &synthetic))) {
		kt_error(err, "out of memory");
		goto out;
	}
	if (!first && is_requested(*pp) && u->type == PW_U_CREATE) {
		(*pp)->restart_requested = true;
		out->ignored = "termination was requested for this UID; restart after housekeeping";
	} else if ((*pp)->finished) {
		out->ignored = "finished; ignored until housekeeping forgets it";
	}
	if (out->ignored) {
		rc = 0;
		goto out;
	}
	update_termination(*pp, u, pod, runtime, now, &became, &shortened);
	if (is_terminated(*pp) && runtime) {
		out->ignored = "terminated; a runtime-only kill waits for the worker to finish";
		rc = 0;
		goto out;
	}
	if (fn && is_requested(*pp) && !is_terminated(*pp)) {
		if (!(*pp)->status_post)
			(*pp)->status_post = cJSON_CreateArray();
		rc = kt_json_append((*pp)->status_post, fn);
		fn = NULL;
		if (rc < 0) {
			kt_error(err, "out of memory");
			goto out;
		}
	}
	rc = -1;
	if (first && kt_podworker_is_static(pod) && wait_static(pw, *pp) < 0) {
		kt_error(err, "out of memory");
		goto out;
	}
	rc = dispatch(pw, *pp, u, became || shortened, now, out, err);
	u = NULL;
out:
	update_free(u);
	cJSON_Delete(synthetic);
	cJSON_Delete(fn);
	return rc;
}

/* ------------------------------------------------------------ completion */

static void drop_started_static(struct kt_podworker *pw, const struct pw_pod *p)
{
	cJSON *s = cJSON_GetObjectItemCaseSensitive(pw->started, p->fullname);

	if (cJSON_IsString(s) && strcmp(s->valuestring, p->uid) == 0)
		cJSON_DeleteItemFromObjectCaseSensitive(pw->started, p->fullname);
}

enum pw_result { PW_OK, PW_ERROR, PW_CANCELED };

/*
 * The work handed out came back: the completion transitions of
 * podWorkerLoop, then completeWork (the requeue) and the next work.
 * *forgotten tells that the status is gone.
 */
static int complete_work(struct kt_podworker *pw, struct pw_pod *p, int result, bool terminal,
			 const char *msg, int64_t now, struct pw_out *out, bool *forgotten,
			 struct kt_err *err)
{
	int work = p->running;
	bool transition = false;
	int64_t delay = PW_RESYNC_S;

	*forgotten = false;
	p->running = PW_NONE;
	if (result == PW_OK && work == PW_TERMINATED) {
		p->finished = true;
		p->working = false;
		drop_started_static(pw, p);
		return 0;
	}
	if (result == PW_OK && work == PW_TERMINATING && p->active->running_pod) {
		/* an orphan is forgotten once its containers are gone */
		p->terminated_at = now;
		p->finished = true;
		p->working = false;
		pod_forget(pw, p);
		*forgotten = true;
		return act(out, "forget") ? 0 : kt_error(err, "out of memory");
	}
	if (result == PW_OK && work == PW_TERMINATING) {
		p->terminated_at = now;
		cJSON_Delete(p->status_post);
		p->status_post = NULL;
		transition = true;
	} else if (result == PW_OK && work == PW_SYNC && terminal) {
		if (!is_requested(p))
			p->terminating_at = now;
		p->started_terminating = true;
		transition = true;
	}
	if (transition && requeue_last(p) < 0)
		return kt_error(err, "out of memory");
	if (result == PW_ERROR)
		delay = msg && strstr(msg, "network is not ready") ? PW_NET_BACKOFF_S
								   : PW_BACKOFF_S;
	else if (result == PW_CANCELED)
		delay = PW_BACKOFF_S;
	if (wake(pw, p, now, out, err) < 0)
		return -1;
	/* completeWork queues the next periodic sync; a phase change needs none */
	if (!transition && act_requeue(out, delay) < 0)
		return kt_error(err, "out of memory");
	return 0;
}

/* ---------------------------------------------------------- housekeeping */

/* removeTerminatedWorker: true when the status is to be forgotten */
static int remove_terminated(struct pw_pod *p, bool orphan, int64_t now, bool *remove)
{
	*remove = false;
	if (!p->finished) {
		if (!orphan)
			return 0;
		p->deleted = true;
		if (is_started(p) || p->observed_runtime) {
			if (!is_requested(p)) {
				p->terminating_at = now;
				p->grace = p->active && p->active->pod
						   ? kt_podworker_effective_grace(p->grace,
										  p->active->pod,
										  false, 0, NULL)
						   : 1;
			}
			return requeue_last(p);
		}
	}
	*remove = true;
	return 0;
}

static cJSON *worker_sync_json(const struct pw_pod *p, bool orphan)
{
	const struct pw_update *u = p->active ? p->active : p->pending;
	const cJSON *pod = u ? u->pod : NULL;
	cJSON *o = cJSON_CreateObject();

	if (o && set_(o, "state", cJSON_CreateString(work_names[work_type(p)])) &&
	    set_(o, "orphan", cJSON_CreateBool(orphan)) &&
	    set_(o, "hasConfig", cJSON_CreateBool(pod != NULL)) &&
	    set_(o, "static", cJSON_CreateBool(pod && kt_podworker_is_static(pod))))
		return o;
	cJSON_Delete(o);
	return NULL;
}

/* {"uid", ["gracePeriodSeconds",] "work", "actions"}: takes out->actions */
static cJSON *pod_entry(const char *uid, int64_t grace, struct pw_out *out)
{
	cJSON *e = cJSON_CreateObject();

	if (e && set_(e, "uid", cJSON_CreateString(uid)) &&
	    (grace < 0 || set_(e, "gracePeriodSeconds", kt_json_num_new_int(grace))) &&
	    set_(e, "work", out->work == PW_NONE ? cJSON_CreateNull()
						 : cJSON_CreateString(work_names[out->work])) &&
	    set_(e, "actions", out->actions)) {
		out->actions = NULL;
		return e;
	}
	out->actions = NULL;
	cJSON_Delete(e);
	return NULL;
}

static int sync_one(struct kt_podworker *pw, struct pw_pod *p, const char **uids, size_t n,
		    int64_t now, cJSON *workers, cJSON *pods, struct kt_err *err)
{
	const char *key = p->uid;
	bool orphan = !bsearch(&key, uids, n, sizeof(*uids), kt_key_cmp_ptr), remove = false;
	struct pw_out out = { .actions = cJSON_CreateArray(), .work = PW_NONE };
	int rc = -1;

	if (!out.actions)
		return kt_error(err, "out of memory");
	if ((p->restart_requested || orphan) && remove_terminated(p, orphan, now, &remove) < 0)
		goto oom;
	if (remove) {
		if (!act(&out, "forget"))
			goto oom;
		pod_forget(pw, p);
	} else {
		if (p->pending && p->running == PW_NONE && wake(pw, p, now, &out, err) < 0)
			goto out;
		if (!set_(workers, p->uid, worker_sync_json(p, orphan)))
			goto oom;
	}
	if (cJSON_GetArraySize(out.actions) > 0 && kt_json_append(pods, pod_entry(p->uid, -1, &out)) < 0)
		goto oom;
	rc = 0;
	goto out;
oom:
	kt_error(err, "out of memory");
out:
	cJSON_Delete(out.actions);
	return rc;
}

/* SyncKnownPods(uids) */
static int ev_sync_known(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
			 struct kt_err *err)
{
	cJSON *list = cJSON_GetObjectItemCaseSensitive(ev, "uids"), *u;
	cJSON *workers = cJSON_CreateObject(), *pods = cJSON_CreateArray();
	const char **uids = NULL;
	size_t n = 0;
	int rc = -1;

	if (!set_(res, "workers", workers) || !set_(res, "pods", pods))
		return kt_error(err, "out of memory");
	if (list && !cJSON_IsNull(list) && !cJSON_IsArray(list))
		return bad(err, "event: '%s' must be an array of %s", "uids", "strings");
	uids = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof(*uids));
	if (!uids)
		return kt_error(err, "out of memory");
	cJSON_ArrayForEach(u, list)
	{
		if (!cJSON_IsString(u)) {
			bad(err, "event: '%s' must be an array of %s", "uids", "strings");
			goto out;
		}
		uids[n++] = u->valuestring;
	}
	qsort(uids, n, sizeof(*uids), kt_key_cmp_ptr);
	if (load_all(pw, err) < 0)
		goto out;
	pw->pods_synced = true;
	for (size_t i = 0; i < pw->npods; i++)
		if (!pw->pods[i]->gone &&
		    sync_one(pw, pw->pods[i], uids, n, now, workers, pods, err) < 0)
			goto out;
	rc = 0;
out:
	free(uids);
	return rc;
}

/* ------------------------------------------------------- node shutdown */

struct pw_group {
	int64_t priority, grace;
	cJSON *pods;		/* the group's part of the result */
};

static int group_cmp(const void *a, const void *b)
{
	const struct pw_group *x = a, *y = b;

	return x->priority < y->priority ? -1 : x->priority > y->priority;
}

/* the groups, lowest priority first; *n 0 when graceful shutdown is off */
static int shutdown_groups(const cJSON *ev, struct pw_group **out, size_t *n,
			   struct kt_err *err)
{
	cJSON *by = cJSON_GetObjectItemCaseSensitive(ev, "shutdownGracePeriodByPodPriority"), *g;
	int64_t total = 0, crit = 0;
	bool has_total, has_crit;
	struct pw_group *gs;

	*n = 0;
	if (get_int(ev, "shutdownGracePeriodSeconds", &total, &has_total, "event", err) < 0 ||
	    get_int(ev, "shutdownGracePeriodCriticalPodsSeconds", &crit, &has_crit, "event",
		    err) < 0)
		return -1;
	if (by && (has_total || has_crit))
		return bad(err, "event: give '%s' or '%s', not both",
			   "shutdownGracePeriodByPodPriority", "shutdownGracePeriodSeconds");
	if (!by && !has_total)
		return bad(err, "event: needs '%s' or '%s'", "shutdownGracePeriodByPodPriority",
			   "shutdownGracePeriodSeconds");
	if (by && !cJSON_IsArray(by))
		return bad(err, "event: '%s' must be an %s", "shutdownGracePeriodByPodPriority",
			   "array");
	if (total < 0 || crit < 0)
		return bad(err, "event: '%s' must not be negative",
			   total < 0 ? "shutdownGracePeriodSeconds"
				     : "shutdownGracePeriodCriticalPodsSeconds");
	gs = calloc((size_t)cJSON_GetArraySize(by) + 2, sizeof(*gs));
	if (!gs)
		return kt_error(err, "out of memory");
	cJSON_ArrayForEach(g, by)
	{
		bool hp, hg;

		if (!cJSON_IsObject(g) ||
		    get_int(g, "priority", &gs[*n].priority, &hp, "event", err) < 0 ||
		    get_int(g, "shutdownGracePeriodSeconds", &gs[*n].grace, &hg, "event", err) < 0 ||
		    !hp || !hg || gs[*n].grace < 0) {
			free(gs);
			*n = 0;
			return bad(err, "event: each '%s' entry needs an integer %s",
				   "shutdownGracePeriodByPodPriority",
				   "priority and a shutdownGracePeriodSeconds >= 0");
		}
		(*n)++;
	}
	/* the legacy pair, migrated as upstream does; off when total is 0 or too small */
	if (!by && total > 0 && crit <= total) {
		gs[0] = (struct pw_group){ .priority = 0, .grace = total - crit };
		gs[1] = (struct pw_group){ .priority = PW_SYSTEM_CRITICAL, .grace = crit };
		*n = 2;
	}
	qsort(gs, *n, sizeof(*gs), group_cmp);
	*out = gs;
	return 0;
}

/* the status a node shutdown reports for a pod */
static cJSON *shutdown_status(const cJSON *pod, int64_t now)
{
	const char *ph = pod_str(pod, "status.phase");
	cJSON *st = cJSON_CreateObject(), *conds = cJSON_CreateArray(), *c = cJSON_CreateObject();

	if (!set_(st, "phase", cJSON_CreateString(ph && strcmp(ph, "Succeeded") == 0
							   ? "Succeeded"
							   : "Failed")) ||
	    !set_(st, "reason", cJSON_CreateString("Terminated")) ||
	    !set_(st, "message", cJSON_CreateString(PW_SHUTDOWN_MSG)) ||
	    !set_(st, "conditions", conds) || kt_json_append(conds, c) < 0 ||
	    !set_(c, "type", cJSON_CreateString("DisruptionTarget")) ||
	    !set_(c, "status", cJSON_CreateString("True")) ||
	    !set_(c, "lastTransitionTime", time_json(now - now % 1000000)) ||
	    !set_(c, "reason", cJSON_CreateString("TerminationByKubelet")) ||
	    !set_(c, "message", cJSON_CreateString(PW_SHUTDOWN_MSG))) {
		cJSON_Delete(st);
		return NULL;
	}
	return st;
}

static const cJSON *pod_config(const struct pw_pod *p)
{
	if (p->pending && p->pending->pod)
		return p->pending->pod;
	return p->active ? p->active->pod : NULL;
}

/* one pod killed by the shutdown manager with grace min(group, pod) */
static int shutdown_pod(struct kt_podworker *pw, struct pw_pod *p, const struct pw_group *g,
			int64_t now, struct kt_err *err)
{
	const cJSON *pod = pod_config(p);
	struct pw_update *u = calloc(1, sizeof(*u));
	struct pw_out out = { .actions = cJSON_CreateArray(), .work = PW_NONE };
	struct pw_pod *after;
	cJSON *fn = shutdown_status(pod, now), *e;
	int64_t tgps;
	int rc = -1;

	if (!u || !out.actions || !fn || !(u->pod = kt_json_dup(pod))) {
		update_free(u);
		cJSON_Delete(fn);
		cJSON_Delete(out.actions);
		return kt_error(err, "out of memory");
	}
	u->type = PW_U_KILL;
	u->has_kill = u->has_override = true;
	u->override = g->grace;
	if (pod_int(pod, "spec.terminationGracePeriodSeconds", &tgps) && tgps <= u->override)
		u->override = tgps;
	if (update_pod(pw, u, fn, false, now, &out, &after, err) < 0)
		goto out;
	e = pod_entry(p->uid, after->grace, &out);
	if (!e || kt_json_append(g->pods, e) < 0) {
		kt_error(err, "out of memory");
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(out.actions);
	return rc;
}

static int group_of(const struct pw_group *gs, size_t n, const cJSON *pod)
{
	int64_t prio = 0;
	int at = 0;

	pod_int(pod, "spec.priority", &prio);
	for (size_t i = 0; i < n; i++)
		if (gs[i].priority <= prio)
			at = (int)i;
	return at;
}

/* a pod the shutdown waits for: known, and not yet terminated */
static int shutdown_alive(struct kt_podworker *pw, const char *uid, bool *alive,
			  struct kt_err *err)
{
	struct pw_pod *p;

	if (pod_get(pw, uid, &p, err) < 0)
		return -1;
	*alive = p && !p->gone && !is_terminated(p);
	return 0;
}

/*
 * Starts the group first in line: each of its pods still alive killed with
 * min(group, pod) grace, its part of the result appended to started, its
 * uids and deadline (now, plus the grace and the slack) the ones waited for.
 */
static int shutdown_start(struct kt_podworker *pw, int64_t now, cJSON *started,
			  struct kt_err *err)
{
	cJSON *sd = pw->shutdown, *gj = cJSON_DetachItemFromArray(kt_json_get(sd, "groups"), 0);
	cJSON *uids = cJSON_CreateArray(), *go = cJSON_CreateObject(), *u;
	struct pw_group g = { .pods = cJSON_CreateArray() };
	int64_t slack = 0, deadline;
	bool has;
	int rc = -1;

	get_int(gj, "priority", &g.priority, &has, "state", NULL);
	get_int(gj, "shutdownGracePeriodSeconds", &g.grace, &has, "state", NULL);
	get_int(sd, "slackSeconds", &slack, &has, "state", NULL);
	if (!gj || !uids || !go || !g.pods) {
		kt_error(err, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach (u, kt_json_get(gj, "uids")) {
		struct pw_pod *p;
		bool alive;

		if (shutdown_alive(pw, u->valuestring, &alive, err) < 0)
			goto out;
		p = alive ? pod_find(pw, u->valuestring) : NULL;
		if (!p || !pod_config(p))
			continue;
		if (shutdown_pod(pw, p, &g, now, err) < 0)
			goto out;
		if (kt_json_append(uids, cJSON_CreateString(p->uid)) < 0) {
			kt_error(err, "out of memory");
			goto out;
		}
	}
	deadline = now + (g.grace + slack) * 1000000;
	if (!set_(sd, "deadline", time_json(deadline)) || !set_(sd, "uids", uids)) {
		uids = NULL;
		kt_error(err, "out of memory");
		goto out;
	}
	uids = NULL;
	if (cJSON_GetArraySize(g.pods) > 0) {
		if (!set_(go, "priority", kt_json_num_new_int(g.priority)) ||
		    !set_(go, "shutdownGracePeriodSeconds", kt_json_num_new_int(g.grace)) ||
		    !set_(go, "deadline", time_json(deadline)) || !set_(go, "pods", g.pods) ||
		    kt_json_append(started, go) < 0) {
			g.pods = go = NULL;
			kt_error(err, "out of memory");
			goto out;
		}
		g.pods = go = NULL;
	}
	rc = 0;
out:
	cJSON_Delete(gj);
	cJSON_Delete(uids);
	cJSON_Delete(go);
	cJSON_Delete(g.pods);
	return rc;
}

/*
 * The shutdown manager's wait, one step at a time: the group being killed is
 * over once all its pods are terminated or its deadline has come; then the
 * next group starts (a group with nothing left to kill, or whose deadline is
 * now, is over at once).  Adds "groups" (those started now) and "shutdown"
 * ("running", or "done" once the last group is over) to res.
 */
static int shutdown_advance(struct kt_podworker *pw, int64_t now, cJSON *res,
			    struct kt_err *err)
{
	cJSON *started = cJSON_CreateArray(), *u;

	if (!set_(res, "groups", started))
		return kt_error(err, "out of memory");
	while (pw->shutdown) {
		int64_t deadline = PW_UNSET;
		bool over = true;

		get_time(pw->shutdown, "deadline", &deadline, "state", NULL);
		if (deadline == PW_UNSET || now < deadline)
			cJSON_ArrayForEach (u, kt_json_get(pw->shutdown, "uids")) {
				if (shutdown_alive(pw, u->valuestring, &over, err) < 0)
					return -1;
				over = !over;
				if (!over)
					break;
			}
		if (!over)
			break;
		if (cJSON_GetArraySize(kt_json_get(pw->shutdown, "groups")) == 0) {
			cJSON_Delete(pw->shutdown);
			pw->shutdown = NULL;
			return set_(res, "shutdown", cJSON_CreateString("done"))
				       ? 0
				       : kt_error(err, "out of memory");
		}
		if (shutdown_start(pw, now, started, err) < 0)
			return -1;
	}
	return set_(res, "shutdown", cJSON_CreateString("running")) ? 0
								   : kt_error(err, "out of memory");
}

/*
 * The groups, lowest priority first, each with the pods it will kill; the
 * first is started at once and each next one when the one before is over
 * (shutdown_advance, from the events that follow: complete and tick).
 */
static int ev_node_shutdown(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
			    struct kt_err *err)
{
	struct pw_group *gs = NULL;
	cJSON *sd = NULL, *pending;
	int64_t slack = 0;
	size_t n = 0;
	bool has, cancel;
	int rc = -1;

	if (get_bool(ev, "cancel", false, &cancel, "event", err) < 0)
		return -1;
	/* logind's PrepareForShutdown(false): what was killed stays killed, the
	 * groups not started are not */
	if (cancel) {
		const char *was = pw->shutdown ? "canceled" : "none";

		cJSON_Delete(pw->shutdown);
		pw->shutdown = NULL;
		return set_(res, "groups", cJSON_CreateArray()) &&
				       set_(res, "shutdown", cJSON_CreateString(was))
			       ? 0
			       : kt_error(err, "out of memory");
	}
	if (pw->shutdown)
		return bad(err, "event: a node shutdown is already under way (cancel it first)");
	if (get_int(ev, "shutdownSlackSeconds", &slack, &has, "event", err) < 0)
		return -1;
	if (slack < 0)
		return bad(err, "event: '%s' must not be negative", "shutdownSlackSeconds");
	if (shutdown_groups(ev, &gs, &n, err) < 0 || load_all(pw, err) < 0)
		goto out;
	sd = cJSON_CreateObject();
	if (!set_(sd, "deadline", time_json(now)) ||
	    !set_(sd, "slackSeconds", kt_json_num_new_int(slack)) ||
	    !set_(sd, "uids", cJSON_CreateArray()) ||
	    !set_(sd, "groups", pending = cJSON_CreateArray()))
		goto oom;
	/* every pod goes to its group now, as the manager groups the active pods */
	for (size_t i = 0; i < n; i++) {
		cJSON *go = cJSON_CreateObject(), *uids = cJSON_CreateArray();

		if (!set_(go, "priority", kt_json_num_new_int(gs[i].priority)) ||
		    !set_(go, "shutdownGracePeriodSeconds", kt_json_num_new_int(gs[i].grace)) ||
		    !set_(go, "uids", uids)) {
			cJSON_Delete(go);
			goto oom;
		}
		for (size_t k = 0; k < pw->npods; k++) {
			struct pw_pod *p = pw->pods[k];

			if (p->gone || is_terminated(p) || !pod_config(p) ||
			    group_of(gs, n, pod_config(p)) != (int)i)
				continue;
			if (kt_json_append(uids, cJSON_CreateString(p->uid)) < 0) {
				cJSON_Delete(go);
				goto oom;
			}
		}
		/* a group with no pod is never waited for */
		if (cJSON_GetArraySize(uids) == 0)
			cJSON_Delete(go);
		else if (kt_json_append(pending, go) < 0)
			goto oom;
	}
	pw->shutdown = sd;
	sd = NULL;
	rc = shutdown_advance(pw, now, res, err);
	goto out;
oom:
	kt_error(err, "out of memory");
out:
	cJSON_Delete(sd);
	free(gs);
	return rc;
}

/* the clock moved: a node shutdown's deadline may have come */
static int ev_tick(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
		   struct kt_err *err)
{
	(void)ev;
	return pw->shutdown ? shutdown_advance(pw, now, res, err) : 0;
}

/* ------------------------------------------------------------- queries */

static cJSON *queries_json(const struct kt_podworker *pw, const struct pw_pod *p)
{
	bool v[7];
	static const char *const names[7] = {
		"isPodKnownTerminated",		 "couldHaveRunningContainers",
		"shouldPodBeFinished",		 "isPodTerminationRequested",
		"shouldPodContainersBeTerminating", "shouldPodRuntimeBeRemoved",
		"shouldPodContentBeRemoved",
	};
	cJSON *o = cJSON_CreateObject();

	if (p) {
		v[0] = is_terminated(p);
		v[1] = !is_terminated(p);
		v[2] = p->finished;
		v[3] = is_requested(p);
		v[4] = p->started_terminating;
		v[5] = is_terminated(p);
		v[6] = p->evicted || (p->deleted && is_terminated(p));
	} else {
		/* unknown: nothing known before housekeeping, gone after it */
		v[0] = false;
		v[1] = !pw->pods_synced;
		v[2] = pw->pods_synced;
		v[3] = false;
		v[4] = v[5] = v[6] = pw->pods_synced;
	}
	for (int i = 0; o && i < 7; i++)
		if (!set_(o, names[i], cJSON_CreateBool(v[i]))) {
			cJSON_Delete(o);
			return NULL;
		}
	return o;
}

/* ---------------------------------------------------------------- events */

/* the kill's status as data; an eviction fills in upstream's defaults */
static cJSON *kill_status(const struct pw_update *u, const cJSON *given, int64_t now)
{
	cJSON *fn, *conds, *c, *g;
	const char *msg = kt_json_get_string(given, "message");
	const char *phase = kt_json_get_string(given, "phase");
	const char *reason = kt_json_get_string(given, "reason");

	if (!given && !(u->has_kill && u->evict))
		return NULL;
	if (!u->evict)
		return kt_json_dup(given);
	fn = cJSON_CreateObject();
	if (!set_(fn, "phase", cJSON_CreateString(phase ? phase : "Failed")) ||
	    !set_(fn, "reason", cJSON_CreateString(reason ? reason : "Evicted")))
		goto fail;
	cJSON_ArrayForEach(g, given)
	{
		if (strcmp(g->string, "phase") != 0 && strcmp(g->string, "reason") != 0 &&
		    !set_(fn, g->string, kt_json_dup(g)))
			goto fail;
	}
	/* local-storage evictions give "conditions": [] to report none */
	if (kt_json_get(fn, "conditions"))
		return fn;
	conds = cJSON_CreateArray();
	c = cJSON_CreateObject();
	if (!set_(fn, "conditions", conds) || kt_json_append(conds, c) < 0 ||
	    !set_(c, "type", cJSON_CreateString("DisruptionTarget")) ||
	    !set_(c, "status", cJSON_CreateString("True")) ||
	    !set_(c, "lastTransitionTime", time_json(now - now % 1000000)) ||
	    !set_(c, "reason", cJSON_CreateString("TerminationByKubelet")) ||
	    (msg && !set_(c, "message", cJSON_CreateString(msg))))
		goto fail;
	return fn;
fail:
	cJSON_Delete(fn);
	return NULL;
}

static int put_pod_result(struct kt_podworker *pw, cJSON *res, const char *uid,
			  struct pw_out *out, struct kt_err *err)
{
	struct pw_pod *p = pod_find(pw, uid);

	if ((out->ignored && !set_(res, "ignored", cJSON_CreateString(out->ignored))) ||
	    !set_(res, "work", out->work == PW_NONE ? cJSON_CreateNull()
						    : cJSON_CreateString(work_names[out->work])) ||
	    !set_(res, "actions", out->actions) || !set_(res, "queries", queries_json(pw, p))) {
		out->actions = NULL;
		return kt_error(err, "out of memory");
	}
	out->actions = NULL;
	return 0;
}

static int ev_update(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
		     struct kt_err *err)
{
	const cJSON *given = NULL;
	struct pw_update *u = update_parse(ev, true, &given, "event", err);
	struct pw_out out = { .work = PW_NONE };
	struct pw_pod *p;
	bool cache_terminal;
	cJSON *fn;
	const char *uid;
	int rc = -1;

	if (!u)
		return -1;
	if (get_bool(ev, "podCacheTerminal", false, &cache_terminal, "event", err) < 0) {
		update_free(u);
		return -1;
	}
	uid = u->pod ? pod_str(u->pod, "metadata.uid") : kt_json_get_string(u->running_pod, "uid");
	out.actions = cJSON_CreateArray();
	fn = kill_status(u, given, now);
	if (!out.actions || !set_(res, "uid", cJSON_CreateString(uid)) || ((given || u->evict) && !fn)) {
		update_free(u);
		cJSON_Delete(fn);
		kt_error(err, "out of memory");
		goto out;
	}
	if (update_pod(pw, u, fn, cache_terminal, now, &out, &p, err) < 0)
		goto out;
	rc = put_pod_result(pw, res, kt_json_get_string(res, "uid"), &out, err);
out:
	cJSON_Delete(out.actions);
	return rc;
}

static int need_uid(const cJSON *ev, const char **uid, struct kt_err *err)
{
	*uid = kt_json_get_string(ev, "uid");
	if (!*uid || !**uid)
		return bad(err, "event: '%s' must be a non-empty %s", "uid", "string");
	return 0;
}

static int ev_complete(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
		       struct kt_err *err)
{
	static const char *const results[] = { "ok", "error", "canceled" };
	const char *uid, *work = kt_json_get_string(ev, "work");
	const char *result = kt_json_get_string(ev, "result");
	cJSON *msg = cJSON_GetObjectItemCaseSensitive(ev, "message");
	struct pw_out out = { .work = PW_NONE };
	struct pw_pod *p;
	bool terminal, forgotten;
	int wt = name_index(work_names, 3, work), r = name_index(results, 3, result), rc = -1;

	if (need_uid(ev, &uid, err) < 0)
		return -1;
	if (wt < 0)
		return bad(err, "event: '%s' must be one of %s", "work",
			   "sync, terminating, terminated");
	if (r < 0)
		return bad(err, "event: '%s' must be one of %s", "result", "ok, error, canceled");
	if (get_bool(ev, "isTerminal", false, &terminal, "event", err) < 0)
		return -1;
	if (msg && !cJSON_IsNull(msg) && !cJSON_IsString(msg))
		return bad(err, "event: '%s' must be a %s", "message", "string");
	if (pod_get(pw, uid, &p, err) < 0)
		return -1;
	if (!p || p->running != wt)
		return kt_error_kind(err, KT_ERR_INPUT,
				     "event: no '%s' work was handed out for pod '%s' (%s%s)",
				     work, uid, p && p->running != PW_NONE ? "running: " : "",
				     !p ? "unknown pod"
				     : p->running == PW_NONE ? "nothing is running"
							     : work_names[p->running]);
	out.actions = cJSON_CreateArray();
	if (!out.actions || !set_(res, "uid", cJSON_CreateString(uid))) {
		kt_error(err, "out of memory");
		goto out;
	}
	if (complete_work(pw, p, r, terminal, cJSON_IsString(msg) ? msg->valuestring : NULL, now,
			  &out, &forgotten, err) < 0)
		goto out;
	rc = put_pod_result(pw, res, uid, &out, err);
	/* the last kill of a group starts the next one */
	if (rc == 0 && pw->shutdown)
		rc = shutdown_advance(pw, now, res, err);
out:
	cJSON_Delete(out.actions);
	return rc;
}

static int ev_query(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
		    struct kt_err *err)
{
	const char *uid;
	struct pw_pod *p;

	if (need_uid(ev, &uid, err) < 0 || pod_get(pw, uid, &p, err) < 0)
		return -1;
	if (!set_(res, "uid", cJSON_CreateString(uid)) ||
	    !set_(res, "queries", queries_json(pw, p)) ||
	    !set_(res, "state", p ? pod_json(p, false) : cJSON_CreateNull()))
		return kt_error(err, "out of memory");
	return 0;
}

/*
 * Whoever ran the work restarted: each pod's work handed out and never
 * completed is handed out again, with its actions, as a worker goroutine
 * that starts over runs its pending work from the top.  The work stays
 * running: its completion is what ends it, as before.
 */
static int ev_resume(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
		     struct kt_err *err)
{
	cJSON *pods = cJSON_CreateArray();

	(void)ev;
	(void)now;
	if (!set_(res, "pods", pods))
		return kt_error(err, "out of memory");
	if (load_all(pw, err) < 0)
		return -1;
	for (size_t i = 0; i < pw->npods; i++) {
		struct pw_pod *p = pw->pods[i];
		struct pw_out out = { .work = PW_NONE };

		if (p->gone || p->running == PW_NONE || !p->active)
			continue;
		out.work = p->running;
		out.actions = cJSON_CreateArray();
		if (!out.actions || emit_work(p, p->running, -1, &out) < 0 ||
		    kt_json_append(pods, pod_entry(p->uid, -1, &out)) < 0) {
			cJSON_Delete(out.actions);
			return kt_error(err, "out of memory");
		}
	}
	return 0;
}

static int event_now(const cJSON *ev, int64_t def, int64_t *now, struct kt_err *err)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, "now");
	struct kt_err e2 = { 0 };

	*now = def;
	if (!v)
		return 0;
	if (!cJSON_IsString(v))
		return bad(err, "event: '%s' must be an RFC 3339 %s", "now", "string");
	if (kt_time_parse(v->valuestring, now, &e2) < 0)
		return kt_error_kind(err, KT_ERR_INPUT, "event: bad 'now' '%s': %s",
				     v->valuestring, e2.msg);
	return 0;
}

static const struct {
	const char *op;
	int (*fn)(struct kt_podworker *pw, const cJSON *ev, int64_t now, cJSON *res,
		  struct kt_err *err);
} pw_events[] = {
	{ "update", ev_update },
	{ "complete", ev_complete },
	{ "sync-known-pods", ev_sync_known },
	{ "node-shutdown", ev_node_shutdown },
	{ "tick", ev_tick },
	{ "query", ev_query },
	{ "resume", ev_resume },
};

static int step(struct kt_podworker *pw, const cJSON *event, int64_t now_us, cJSON **result,
		struct kt_err *err)
{
	const char *op = kt_json_get_string(event, "op");
	const char *kind = kt_json_get_string(event, "kind");
	size_t i = 0, n = sizeof(pw_events) / sizeof(pw_events[0]);
	cJSON *res = NULL;
	int64_t now;

	*result = NULL;
	if (!cJSON_IsObject(event))
		return bad(err, "event: %s %s", "must be a JSON", "object");
	if (!op && (kind || cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(event, "metadata"))))
		return bad(err,
			   "event: 'op' must be a string: this is an object (a %s), not an "
			   "event; a new pod is {\"op\":\"update\",\"updateType\":\"create\","
			   "\"pod\":<the pod>} (ops: update, complete, sync-known-pods, "
			   "node-shutdown, tick, query, resume)",
			   kind ? kind : "kind not given");
	if (!op)
		return bad(err, "event: '%s' must be a %s", "op", "string");
	while (i < n && strcmp(pw_events[i].op, op) != 0)
		i++;
	if (i == n)
		return bad(err,
			   "event: unknown op '%s' (expected update, complete, sync-known-pods, "
			   "node-shutdown, tick, query or resume)",
			   op);
	if (event_now(event, now_us, &now, err) < 0)
		return -1;
	res = cJSON_CreateObject();
	if (!set_(res, "op", cJSON_CreateString(op))) {
		cJSON_Delete(res);
		return kt_error(err, "out of memory");
	}
	if (pw_events[i].fn(pw, event, now, res, err) < 0) {
		cJSON_Delete(res);
		return -1;
	}
	*result = res;
	return 0;
}

/* the subject every message about the event starts with */
#define PW_EVENT "event: "

int kt_podworker_step(struct kt_podworker *pw, const cJSON *event, int64_t now_us,
		      cJSON **result, struct kt_err *err)
{
	int rc = step(pw, event, now_us, result, err);

	if (rc < 0 && err && err->kind == KT_ERR_INPUT && !pw->damaged &&
	    strncmp(err->msg, PW_EVENT, strlen(PW_EVENT)) == 0) {
		err->about = KT_ERR_ABOUT_EVENT;
		err->detail = strlen(PW_EVENT);
	}
	return rc;
}
