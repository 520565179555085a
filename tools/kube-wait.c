/* SPDX-License-Identifier: Apache-2.0 */
/* kube-wait: wait for objects to meet conditions, following them with watches */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "cli.h"
#include "kt.h"

enum {
	OPT_FOR = KT_OPT_TOOL,
	OPT_ANY,
	OPT_TIMEOUT,
	OPT_NO_FAIL_FAST,
	OPT_FIELD_SELECTOR,
};

#define MAX_FOR		   16
#define TIMEOUT_DEFAULT_MS (30 * 1000)
#define EXIT_TIMEOUT	   3

/* a resource as discovery names it */
struct kind {
	char *gv;     /* "v1", "apps/v1" */
	char *group;  /* "" for core */
	char *plural; /* "deployments" */
	char *singular;
	char *kind;	   /* "Deployment" */
	char *short_names; /* " deploy ", each between spaces */
	bool namespaced;
};

struct watch;

/* one object waited for (a name, or one an object a selector found) */
struct obj {
	struct watch *w;
	char *name;
	cJSON *last; /* the last version seen, NULL while absent */
	bool seen;   /* some version was seen */
	bool done;
	enum kt_wait_verdict verdict;
	char reason[KT_WAIT_REASON_MAX];
	char event[KT_WAIT_REASON_MAX]; /* the last Event about it, when it failed */
	bool pods_followed;		/* its pods are followed (owners) */
	cJSON *match;			/* then: its spec.selector.matchLabels */
};

/* one reflector: a kind in a namespace, maybe with a selector */
struct watch {
	struct wait_ctl *ctl;
	const struct kind *k;
	char *ns;	/* NULL for a cluster-scoped kind */
	char *selector; /* NULL: named objects */
	char *path;
	struct kt_refl r;
	struct kt_refl_run *run;
	bool listed;
	struct obj **objs;
	size_t nobjs;
	/* follow: the pods of a namespace, followed for the fail-fast rules of
	 * the Deployments and Jobs there (owners): one watch for all of them,
	 * its pods kept in objs but not waited for */
	bool follow;
	struct obj **owners;
	size_t nowners;
};

struct wait_ctl {
	struct kt_api_opts api_opts;
	struct kt_api *api;
	struct kt_loop *loop;
	struct kt_wait_cond conds[MAX_FOR];
	int nconds;
	bool any, no_fail_fast, json;
	int64_t timeout_ms;
	const char *file, *selector, *fields, *ns;
	char **operands;
	int noperands;
	struct kind **kinds; /* pointers: a watch keeps its kind as more are discovered */
	size_t nkinds;
	struct kt_sb loaded; /* " v1 apps/v1 ": the group versions discovered */
	bool discovered_all;
	struct watch **watches;
	size_t nwatches;
	int exit_code; /* -1 while waiting */
};

static const char usage_head[] =
    "Usage: kube-wait [options] --for=<condition>... [--any]\n"
    "                 (-f <file> | <kind>/<name>... | <kind> -l <selector>)\n"
    "\n"
    "Wait for objects to meet conditions, following them with watches, never\n"
    "polling; an object that does not exist yet is waited for.  Fails at once\n"
    "when a condition can never be met (a pod in CrashLoopBackOff or\n"
    "ImagePullBackOff, unschedulable, a Job Failed, a rollout past its progress\n"
    "deadline), naming the state and the last Event about the object.\n"
    "Exit status: 0 met, 1 can never be met, 2 bad usage, 3 timed out.\n"
    "\n"
    "Conditions:\n"
    "  condition=<type>[=<status>]   a status condition (status default True)\n"
    "  jsonpath=<expr>[=<value>]     a field's value, or that the field exists\n"
    "  create, delete                the object exists, or no longer does\n"
    "  rollout                       a Deployment, StatefulSet or DaemonSet\n"
    "                                rolled out, as kubectl rollout status says\n"
    "\n"
    "Options:\n"
    "      --for=<condition>    what to wait for; several must all hold\n"
    "      --any                one --for of several is enough\n"
    "  -f, --filename=<file>    wait for every object in a manifest (JSON or\n"
    "                           YAML documents, '-' for standard input)\n"
    "  -l, --selector=<sel>     wait for the objects of <kind> with these labels\n"
    "      --field-selector=<sel>  ... or with these fields (status.phase=Running)\n"
    "  -n, --namespace=<ns>     the namespace (default: default)\n"
    "      --timeout=<duration> give up after this long, exit 3 (default 30s)\n"
    "      --no-fail-fast       wait to the timeout even when it cannot succeed\n"
    "  -o, --output=<format>    text (default): a line per object as it is met,\n"
    "                           as kubectl wait prints it, then the count met on\n"
    "                           stderr; json: one document per object at the\n"
    "                           end, met or not, with what was last seen\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  kube-wait deploy/web --for=rollout --timeout=5m\n"
    "  kube-wait job/migrate --for=condition=Complete --for=condition=Failed --any\n"
    "  kube-wait pods -l app=web --for=condition=Ready -o json\n"
    "\n"
    "See kube-wait(1).\n";

static void usage(FILE *out)
{
	fputs(usage_head, out);
	fputs(KT_USAGE_API, out);
	fputs(KT_USAGE_COMMON, out);
	fputs(usage_tail, out);
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	return d;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	return p;
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	p = realloc(p, (n ? n : 1) * size);
	if (!p)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	return p;
}

/* ------------------------------------------------------------ discovery */

static void add_kinds(struct wait_ctl *ctl, const char *gv, const cJSON *list)
{
	const cJSON *r, *sn, *res = kt_json_get_array(list, "resources");
	const char *slash = strchr(gv, '/');
	struct kt_sb sb = { 0 };

	cJSON_ArrayForEach (r, res) {
		const char *name = kt_json_get_string(r, "name");
		struct kind *k;

		if (!name || strchr(name, '/') || !kt_json_get_string(r, "kind"))
			continue;
		ctl->kinds = xrealloc(ctl->kinds, ctl->nkinds + 1, sizeof(*ctl->kinds));
		k = xcalloc(1, sizeof(*k));
		ctl->kinds[ctl->nkinds++] = k;
		k->gv = xstrdup(gv);
		k->group = slash ? strndup(gv, (size_t)(slash - gv)) : xstrdup("");
		if (!k->group)
			kt_die(KT_EXIT_FAILURE, "out of memory");
		k->plural = xstrdup(name);
		k->singular = xstrdup(kt_json_get_string(r, "singularName"));
		if (!*k->singular) {
			free(k->singular);
			k->singular = xstrdup(kt_json_get_string(r, "kind"));
			for (char *p = k->singular; *p; p++)
				*p = (char)tolower((unsigned char)*p);
		}
		k->kind = xstrdup(kt_json_get_string(r, "kind"));
		k->namespaced = cJSON_IsTrue(cJSON_GetObjectItem(r, "namespaced"));
		kt_sb_puts(&sb, " ");
		cJSON_ArrayForEach (sn, kt_json_get_array(r, "shortNames"))
			if (cJSON_IsString(sn) && !strchr(sn->valuestring, ' '))
				kt_sb_printf(&sb, "%s ", sn->valuestring);
		k->short_names = xstrdup(kt_sb_str(&sb));
		kt_sb_release(&sb);
	}
}

/* a discovery GET's outcome */
struct get_result {
	struct wait_ctl *ctl;
	cJSON *doc;
	struct kt_err err;
	bool done;
};

static void got(struct kt_api_call *call, struct kt_api_resp *resp, const struct kt_err *err,
		void *arg)
{
	struct get_result *g = arg;

	(void)call;
	g->done = true;
	if (err)
		g->err = *err; /* a refusal's Status stays the reply's, freed with it */
	else if (!(g->doc = resp->json))
		kt_error(&g->err, "an empty reply");
	else
		resp->json = NULL; /* taken */
	kt_loop_stop(g->ctl->loop);
}

/*
 * GET path on the loop the watches run on, waiting for it: its connection
 * is then the one the lists and watches reuse, one TLS handshake in all (a
 * blocking call has a connection of its own).  NULL with err.
 */
static cJSON *get_on_loop(struct wait_ctl *ctl, const char *path, struct kt_err *err)
{
	struct kt_api_req req = { .method = "GET", .path = path };
	struct get_result g = { .ctl = ctl };

	if (!kt_api_start(ctl->api, ctl->loop, &req, got, &g, err))
		return NULL;
	while (!g.done)
		if (kt_loop_run(ctl->loop, err) < 0)
			kt_die(KT_EXIT_FAILURE, "%s", err->msg);
	*err = g.err;
	return g.doc;
}

static cJSON *get_json(struct wait_ctl *ctl, const char *path)
{
	struct kt_err err = { 0 };
	cJSON *doc = get_on_loop(ctl, path, &err);

	if (!doc)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	return doc;
}

/*
 * The resources of one group version ("v1", "apps/v1"), once: one request.
 * A group version the server does not serve (404) has none.
 */
static void discover_gv(struct wait_ctl *ctl, const char *gv)
{
	struct kt_err err = { 0 };
	char path[512], word[512];
	cJSON *list;

	if (strlen(gv) > 400)
		return;
	snprintf(word, sizeof(word), " %s ", gv);
	if (strstr(kt_sb_str(&ctl->loaded), word))
		return;
	if (!kt_sb_str(&ctl->loaded)[0])
		kt_sb_puts(&ctl->loaded, " ");
	kt_sb_printf(&ctl->loaded, "%s ", gv);
	snprintf(path, sizeof(path), "%s/%s", strchr(gv, '/') ? "/apis" : "/api", gv);
	list = get_on_loop(ctl, path, &err);
	if (!list && err.http_status == 404)
		return;
	if (!list)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	add_kinds(ctl, gv, list);
	cJSON_Delete(list);
}

/*
 * Every served group's preferred version, once: for a kind not found in
 * core/v1, or one named with its group.
 */
static void discover(struct wait_ctl *ctl)
{
	cJSON *groups;
	const cJSON *g;

	if (ctl->discovered_all)
		return;
	ctl->discovered_all = true;
	discover_gv(ctl, "v1");
	groups = get_json(ctl, "/apis");
	cJSON_ArrayForEach (g, kt_json_get_array(groups, "groups")) {
		const char *gv =
		    kt_json_get_string(kt_json_get_object(g, "preferredVersion"), "groupVersion");

		if (gv)
			discover_gv(ctl, gv);
	}
	cJSON_Delete(groups);
}

/* whether name is one of k's short names (po, deploy), as discovery gives them */
static bool short_name(const struct kind *k, const char *name)
{
	char word[260];

	if (strlen(name) > 256)
		return false;
	snprintf(word, sizeof(word), " %s ", name);
	return strcasestr(k->short_names, word) != NULL;
}

static const struct kind *find_kind(const struct wait_ctl *ctl, const char *name, const char *group)
{
	for (size_t i = 0; i < ctl->nkinds; i++) {
		const struct kind *k = ctl->kinds[i];

		if (group && strcmp(k->group, group) && strcmp(k->gv, group))
			continue;
		if (!strcasecmp(name, k->plural) || !strcasecmp(name, k->singular) ||
		    !strcasecmp(name, k->kind) || short_name(k, name))
			return k;
	}
	return NULL;
}

/*
 * A kind as kubectl takes it: plural, singular, short name or Kind, each
 * with an optional .group (deployment.apps, jobs.batch).  A core kind
 * without a group costs one request (core/v1's discovery); the groups are
 * read only when core/v1 has no such kind.  A usage error when discovery
 * has none.
 */
static const struct kind *resolve(struct wait_ctl *ctl, const char *text)
{
	const char *dot = strchr(text, '.');
	size_t n = dot ? (size_t)(dot - text) : strlen(text);
	const struct kind *k;
	char name[256];

	if (!n || n >= sizeof(name))
		kt_usage_error("invalid kind '%s'", text);
	memcpy(name, text, n);
	name[n] = '\0';
	if (!dot) {
		discover_gv(ctl, "v1");
		k = find_kind(ctl, name, NULL);
		if (k)
			return k;
	}
	discover(ctl);
	k = find_kind(ctl, name, dot ? dot + 1 : NULL);
	if (!k)
		kt_usage_error("unknown kind '%s': the server's discovery has no such resource",
			       text);
	return k;
}

/*
 * The kind of a manifest's document, by apiVersion and kind: that group
 * version's discovery, one request per group version the manifest names.
 */
static const struct kind *resolve_doc(struct wait_ctl *ctl, const char *gv, const char *kind)
{
	discover_gv(ctl, gv);
	for (size_t i = 0; i < ctl->nkinds; i++) {
		const struct kind *k = ctl->kinds[i];

		if (!strcmp(k->kind, kind) && !strcmp(k->gv, gv))
			return k;
	}
	return NULL;
}

/* ------------------------------------------------------------ targets */

static void url_escape(struct kt_sb *sb, const char *s)
{
	for (; *s; s++) {
		if (isalnum((unsigned char)*s) || strchr("-_.~", *s))
			kt_sb_put(sb, s, 1);
		else
			kt_sb_printf(sb, "%%%02X", (unsigned char)*s);
	}
}

/* the watch of k in ns, one per kind and namespace; with a label or field selector, its objects */
static struct watch *watch_for(struct wait_ctl *ctl, const struct kind *k, const char *ns,
			       const char *labels, const char *fields)
{
	struct kt_sb sb = { 0 };
	struct watch *w;
	char *selector = NULL;

	if (labels || fields) {
		kt_sb_printf(&sb, "%s%s%s", labels ? labels : "", labels && fields ? " " : "",
			     fields ? fields : "");
		selector = xstrdup(kt_sb_str(&sb));
		kt_sb_release(&sb);
	}

	if (!k->namespaced)
		ns = NULL;
	for (size_t i = 0; i < ctl->nwatches; i++) {
		w = ctl->watches[i];
		if (w->k == k && !strcmp(w->ns ? w->ns : "", ns ? ns : "") &&
		    !strcmp(w->selector ? w->selector : "", selector ? selector : "") &&
		    !w->selector == !selector) {
			free(selector);
			return w;
		}
	}
	w = xcalloc(1, sizeof(*w));
	w->ctl = ctl;
	w->k = k;
	w->ns = ns ? xstrdup(ns) : NULL;
	w->selector = selector;
	selector = NULL;
	kt_sb_printf(&sb, "%s/%s", *k->group ? "/apis" : "/api", k->gv);
	if (w->ns)
		kt_sb_printf(&sb, "/namespaces/%s", w->ns);
	kt_sb_printf(&sb, "/%s", k->plural);
	if (labels) {
		kt_sb_puts(&sb, "?labelSelector=");
		url_escape(&sb, labels);
	}
	if (fields) {
		kt_sb_puts(&sb, labels ? "&fieldSelector=" : "?fieldSelector=");
		url_escape(&sb, fields);
	}
	w->path = xstrdup(kt_sb_str(&sb));
	kt_sb_release(&sb);
	ctl->watches = xrealloc(ctl->watches, ctl->nwatches + 1, sizeof(*ctl->watches));
	ctl->watches[ctl->nwatches++] = w;
	return w;
}

static struct obj *obj_add(struct watch *w, const char *name)
{
	struct obj *o;

	for (size_t i = 0; i < w->nobjs; i++)
		if (!strcmp(w->objs[i]->name, name))
			return w->objs[i];
	o = xcalloc(1, sizeof(*o));
	o->w = w;
	o->name = xstrdup(name);
	w->objs = xrealloc(w->objs, w->nobjs + 1, sizeof(*w->objs));
	w->objs[w->nobjs++] = o;
	return o;
}

static bool name_ok(const char *name)
{
	if (!*name || strlen(name) > 253)
		return false;
	for (const char *p = name; *p; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-' &&
		    *p != '.')
			return false;
	return true;
}

static void target_operands(struct wait_ctl *ctl)
{
	const char *ns = ctl->ns ? ctl->ns : "default";

	if (ctl->selector || ctl->fields) {
		const struct kind *k;

		if (ctl->noperands != 1 || strchr(ctl->operands[0], '/'))
			kt_usage_error(
			    "-l and --field-selector take one <kind> operand, not <kind>/<name>");
		k = resolve(ctl, ctl->operands[0]);
		watch_for(ctl, k, ns, ctl->selector, ctl->fields);
		return;
	}
	for (int i = 0; i < ctl->noperands; i++) {
		const char *op = ctl->operands[i], *slash = strchr(op, '/');
		char kind[256];
		const struct kind *k;

		if (!slash)
			kt_usage_error("'%s': expected <kind>/<name> (or <kind> with -l)", op);
		if ((size_t)(slash - op) >= sizeof(kind))
			kt_usage_error("'%s': the kind is too long", op);
		if (!name_ok(slash + 1))
			kt_usage_error("'%s': '%s' is not an object name", op, slash + 1);
		memcpy(kind, op, (size_t)(slash - op));
		kind[slash - op] = '\0';
		k = resolve(ctl, kind);
		obj_add(watch_for(ctl, k, ns, NULL, NULL), slash + 1);
	}
}

/* the objects of a manifest's document (a List's items each); -1 with why
 * saying what is wrong, so the caller frees the document before it exits */
static int target_doc(struct wait_ctl *ctl, const cJSON *doc, const char *where, char *why,
		      size_t size)
{
	const char *gv = kt_json_get_string(doc, "apiVersion");
	const char *kind = kt_json_get_string(doc, "kind");
	const char *name =
	    kt_json_path(doc, "metadata.name") && cJSON_IsString(kt_json_path(doc, "metadata.name"))
		? kt_json_path(doc, "metadata.name")->valuestring
		: NULL;
	const cJSON *nsj = kt_json_path(doc, "metadata.namespace");
	const char *ns = cJSON_IsString(nsj) ? nsj->valuestring : ctl->ns ? ctl->ns : "default";
	const struct kind *k;
	const cJSON *item;

	if (!gv || !kind) {
		snprintf(why, size, "%s: a document without apiVersion and kind", where);
		return -1;
	}
	if (strlen(kind) > 4 && !strcmp(kind + strlen(kind) - 4, "List") &&
	    cJSON_IsArray(kt_json_get(doc, "items"))) {
		cJSON_ArrayForEach (item, kt_json_get(doc, "items"))
			if (target_doc(ctl, item, where, why, size) < 0)
				return -1;
		return 0;
	}
	if (!name || !name_ok(name)) {
		snprintf(why, size, "%s: %s without a valid metadata.name", where, kind);
		return -1;
	}
	k = resolve_doc(ctl, gv, kind);
	if (!k) {
		snprintf(why, size,
			 "%s: unknown kind %s %s: the server's discovery has no such resource",
			 where, gv, kind);
		return -1;
	}
	obj_add(watch_for(ctl, k, ns, NULL, NULL), name);
	return 0;
}

static void target_file(struct wait_ctl *ctl)
{
	struct kt_err err = { 0 };
	struct kt_json_reader *r =
	    kt_json_reader_open(ctl->file, kt_max_input(), KT_JSON_STREAM, &err);
	char why[1024];
	cJSON *doc;
	int rc, n = 0;

	if (!r)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	while ((rc = kt_json_reader_next(r, &doc, &err)) == 1) {
		if (!cJSON_IsNull(doc) && target_doc(ctl, doc, ctl->file, why, sizeof(why)) < 0) {
			cJSON_Delete(doc);
			kt_json_reader_close(r);
			kt_usage_error("%s", why);
		}
		cJSON_Delete(doc);
		n++;
	}
	kt_json_reader_close(r);
	if (rc < 0)
		kt_die(KT_EXIT_USAGE, "%s", err.msg);
	if (!ctl->nwatches)
		kt_usage_error("%s: no objects to wait for", ctl->file);
}

/* ------------------------------------------------------------ judging */

/* "deployment.apps/web", as kubectl names an object */
static void obj_label(const struct obj *o, char *buf, size_t size)
{
	const struct kind *k = o->w->k;

	snprintf(buf, size, "%s%s%s/%s", k->singular, *k->group ? "." : "", k->group, o->name);
}

/* the last Event about o, into o->event ("" when none) */
static void last_event(struct wait_ctl *ctl, const char *ns, const char *kind, const char *name,
		       char *out, size_t size)
{
	struct kt_sb sb = { 0 };
	struct kt_err err = { 0 };
	const cJSON *ev, *last = NULL;
	cJSON *list;

	kt_sb_printf(&sb, "/api/v1/namespaces/%s/events?fieldSelector=", ns ? ns : "default");
	url_escape(&sb, "involvedObject.name=");
	url_escape(&sb, name);
	url_escape(&sb, ",involvedObject.kind=");
	url_escape(&sb, kind);
	if (ns) {
		url_escape(&sb, ",involvedObject.namespace=");
		url_escape(&sb, ns);
	}
	list = kt_api_json(ctl->api, "GET", kt_sb_str(&sb), NULL, NULL, 0, &err);
	kt_sb_release(&sb);
	if (!list) {
		KT_WARN("events not read", "err=\"%s\"", err.msg);
		return;
	}
	/* the latest by lastTimestamp (RFC 3339 sorts as text), the list's order breaking ties */
	cJSON_ArrayForEach (ev, kt_json_get_array(list, "items")) {
		const char *t = kt_json_get_string(ev, "lastTimestamp");
		const char *lt = last ? kt_json_get_string(last, "lastTimestamp") : NULL;

		if (!last || !t || !lt || strcmp(t, lt) >= 0)
			last = ev;
	}
	if (last) {
		char raw[KT_WAIT_REASON_MAX];
		const char *type = kt_json_get_string(last, "type");
		const char *reason = kt_json_get_string(last, "reason");
		const char *msg = kt_json_get_string(last, "message");

		snprintf(raw, sizeof(raw), "%s %s: %s", type ? type : "Normal",
			 reason ? reason : "", msg ? msg : "");
		kt_plain_text(out, size, raw);
	}
	cJSON_Delete(list);
}

/* o's verdict from its last version */
static void judge_obj(struct wait_ctl *ctl, struct obj *o)
{
	struct kt_wait_result res;
	int met = 0, never = 0;
	char first_not[KT_WAIT_REASON_MAX] = "", first_never[KT_WAIT_REASON_MAX] = "";
	bool deleting = false;

	for (int i = 0; i < ctl->nconds; i++) {
		kt_wait_judge(&ctl->conds[i], o->last, &res);
		deleting = deleting || ctl->conds[i].form == KT_WAIT_DELETE;
		if (res.verdict == KT_WAIT_MET) {
			met++;
			if (ctl->any) {
				snprintf(o->reason, sizeof(o->reason), "%s", res.reason);
				o->verdict = KT_WAIT_MET;
				return;
			}
		} else if (res.verdict == KT_WAIT_NEVER) {
			never++;
			if (!first_never[0])
				snprintf(first_never, sizeof(first_never), "%s", res.reason);
		} else if (!first_not[0]) {
			snprintf(first_not, sizeof(first_not), "%s", res.reason);
		}
	}
	if (!ctl->any && met == ctl->nconds) {
		o->verdict = KT_WAIT_MET;
		snprintf(o->reason, sizeof(o->reason), "%s",
			 ctl->nconds == 1 ? res.reason : "all conditions met");
		return;
	}
	if (never && (!ctl->any || never == ctl->nconds)) {
		o->verdict = KT_WAIT_NEVER;
		snprintf(o->reason, sizeof(o->reason), "%s", first_never);
		return;
	}
	o->verdict = KT_WAIT_NOT_YET;
	snprintf(o->reason, sizeof(o->reason), "%s", first_not[0] ? first_not : first_never);
	if (!ctl->no_fail_fast && !deleting && o->last) {
		kt_wait_fail_fast(o->last, &res);
		if (res.verdict == KT_WAIT_NEVER) {
			o->verdict = KT_WAIT_NEVER;
			snprintf(o->reason, sizeof(o->reason), "%s", res.reason);
		}
	}
}

static void finish(struct wait_ctl *ctl, int code)
{
	if (ctl->exit_code < 0)
		ctl->exit_code = code;
	kt_loop_stop(ctl->loop);
}

/* whether every object waited for is done */
static void check_all(struct wait_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nwatches; i++) {
		struct watch *w = ctl->watches[i];
		size_t live = 0;

		if (w->follow)
			continue;
		if (!w->listed)
			return;
		for (size_t j = 0; j < w->nobjs; j++) {
			if (w->selector && !w->objs[j]->last && !w->objs[j]->done)
				continue; /* gone from the selector's view */
			live++;
			if (!w->objs[j]->done)
				return;
		}
		/* a selector that finds nothing: met only when waiting for deletion */
		if (w->selector && !live) {
			bool deleting = false;

			for (int c = 0; c < ctl->nconds; c++)
				deleting = deleting || ctl->conds[c].form == KT_WAIT_DELETE;
			if (!deleting)
				return;
		}
	}
	finish(ctl, KT_EXIT_OK);
}

static int on_event(const char *type, const cJSON *object, void *arg);
static void on_done(struct kt_refl *r, const struct kt_err *err, void *arg);

/* whether pod's labels have every one of match (matchLabels) */
static bool labels_match(const cJSON *match, const cJSON *pod)
{
	const cJSON *labels = kt_json_path(pod, "metadata.labels"), *l;

	cJSON_ArrayForEach (l, match) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(labels, l->string);

		if (!cJSON_IsString(l) || !cJSON_IsString(v) ||
		    strcmp(v->valuestring, l->valuestring))
			return false;
	}
	return true;
}

/* a pod of a followed owner: a fail-fast state fails the owner */
static void owner_pod(struct wait_ctl *ctl, struct obj *o, const cJSON *pod)
{
	struct kt_wait_result res;
	const char *name = kt_json_get_string(kt_json_get_object(pod, "metadata"), "name");
	char label[600];

	if (o->done || ctl->exit_code >= 0 || !name || !labels_match(o->match, pod))
		return;
	kt_wait_fail_fast(pod, &res);
	if (res.verdict != KT_WAIT_NEVER)
		return;
	o->verdict = KT_WAIT_NEVER;
	snprintf(o->reason, sizeof(o->reason), "pod/%.200s: %.300s", name, res.reason);
	last_event(ctl, o->w->ns, "Pod", name, o->event, sizeof(o->event));
	obj_label(o, label, sizeof(label));
	kt_errmsg("%s can never be met: %s%s%s", label, o->reason,
		  o->event[0] ? "; last event: " : "", o->event);
	finish(ctl, KT_EXIT_FAILURE);
}

/*
 * A Deployment or Job not met yet: follow its pods (those its matchLabels
 * select), so that one stuck in CrashLoopBackOff or an image pull fails
 * the wait at once.  One watch of the namespace's pods serves every owner
 * there, started on the first owner's first version; an owner that comes
 * later is judged at once on the pods it has seen.
 */
static void follow_pods(struct wait_ctl *ctl, struct obj *o)
{
	const char *kind = o->w->k->kind;
	const struct kind *pods = NULL;
	const cJSON *match;
	struct kt_err err = { 0 };
	struct watch *w = NULL;

	if (o->pods_followed || !o->last || !o->w->ns || ctl->no_fail_fast ||
	    (strcmp(kind, "Deployment") && strcmp(kind, "Job")))
		return;
	for (int i = 0; i < ctl->nconds; i++)
		if (ctl->conds[i].form == KT_WAIT_DELETE)
			return;
	match = kt_json_path(o->last, "spec.selector.matchLabels");
	if (!cJSON_IsObject(match) || !match->child)
		return;
	discover_gv(ctl, "v1");
	for (size_t i = 0; i < ctl->nkinds; i++)
		if (!*ctl->kinds[i]->group && !strcmp(ctl->kinds[i]->plural, "pods"))
			pods = ctl->kinds[i];
	if (!pods)
		return;
	o->pods_followed = true;
	o->match = kt_json_dup(match);
	if (!o->match)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	for (size_t i = 0; i < ctl->nwatches && !w; i++)
		if (ctl->watches[i]->follow && !strcmp(ctl->watches[i]->ns, o->w->ns))
			w = ctl->watches[i];
	if (w) {
		w->owners = xrealloc(w->owners, w->nowners + 1, sizeof(*w->owners));
		w->owners[w->nowners++] = o;
		for (size_t i = 0; i < w->nobjs && ctl->exit_code < 0; i++)
			if (w->objs[i]->last)
				owner_pod(ctl, o, w->objs[i]->last);
		return;
	}
	w = xcalloc(1, sizeof(*w));
	w->ctl = ctl;
	w->k = pods;
	w->ns = xstrdup(o->w->ns);
	w->follow = true;
	w->owners = xcalloc(1, sizeof(*w->owners));
	w->owners[w->nowners++] = o;
	{
		struct kt_sb sb = { 0 };

		kt_sb_printf(&sb, "/api/v1/namespaces/%s/pods", w->ns);
		w->path = xstrdup(kt_sb_str(&sb));
		kt_sb_release(&sb);
	}
	ctl->watches = xrealloc(ctl->watches, ctl->nwatches + 1, sizeof(*ctl->watches));
	ctl->watches[ctl->nwatches++] = w;
	{
		struct kt_refl_opts opts = { .path = w->path };

		if (kt_refl_init(&w->r, &opts, on_event, w, (unsigned)kt_now_us(), &err) < 0 ||
		    !(w->run = kt_refl_start(&w->r, ctl->api, ctl->loop, on_done, w, &err)))
			kt_warnmsg("the pods of %s/%s are not followed: %s", o->w->k->singular,
				   o->name, err.msg);
	}
}

static void update(struct wait_ctl *ctl, struct obj *o)
{
	char label[600];

	if (o->done || ctl->exit_code >= 0)
		return;
	judge_obj(ctl, o);
	obj_label(o, label, sizeof(label));
	if (o->verdict == KT_WAIT_MET) {
		o->done = true;
		/* as kubectl: nothing for an object that never existed (a delete) */
		if (!ctl->json && o->seen) {
			printf("%s condition met\n", label);
			fflush(stdout);
		}
		check_all(ctl);
	} else if (o->verdict == KT_WAIT_NEVER) {
		last_event(ctl, o->w->ns, o->w->k->kind, o->name, o->event, sizeof(o->event));
		kt_errmsg("%s can never be met: %s%s%s", label, o->reason,
			  o->event[0] ? "; last event: " : "", o->event);
		finish(ctl, KT_EXIT_FAILURE);
	} else {
		follow_pods(ctl, o);
	}
}

static void on_timeout(struct kt_loop *loop, void *arg);

static bool all_listed(const struct wait_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nwatches; i++)
		if (!ctl->watches[i]->listed && !ctl->watches[i]->follow)
			return false;
	return true;
}

static int on_event(const char *type, const cJSON *object, void *arg)
{
	struct watch *w = arg;
	struct wait_ctl *ctl = w->ctl;
	const char *name = kt_json_get_string(kt_json_get_object(object, "metadata"), "name");
	struct obj *o = NULL;

	if (w->follow) {
		if (!strcmp(type, "BOOKMARK") || !name)
			return 0;
		o = obj_add(w, name);
		cJSON_Delete(o->last);
		o->last = NULL;
		if (!strcmp(type, "DELETED"))
			return 0;
		o->last = kt_json_dup(object);
		if (!o->last)
			kt_die(KT_EXIT_FAILURE, "out of memory");
		for (size_t i = 0; i < w->nowners && ctl->exit_code < 0; i++)
			owner_pod(ctl, w->owners[i], object);
		return ctl->exit_code >= 0 ? -1 : 0;
	}
	if (!strcmp(type, "BOOKMARK")) {
		if (!w->listed) {
			w->listed = true;
			for (size_t i = 0; i < w->nobjs && ctl->exit_code < 0; i++)
				update(ctl, w->objs[i]);
			check_all(ctl);
			if (!ctl->timeout_ms && ctl->exit_code < 0 && all_listed(ctl))
				on_timeout(ctl->loop, ctl); /* --timeout=0: judged once */
		}
		return ctl->exit_code >= 0 ? -1 : 0;
	}
	if (!name)
		return 0;
	if (w->selector) {
		o = obj_add(w, name);
	} else {
		for (size_t i = 0; i < w->nobjs; i++)
			if (!strcmp(w->objs[i]->name, name))
				o = w->objs[i];
		if (!o)
			return 0;
	}
	cJSON_Delete(o->last);
	o->last = NULL;
	if (strcmp(type, "DELETED")) {
		o->last = kt_json_dup(object);
		if (!o->last)
			kt_die(KT_EXIT_FAILURE, "out of memory");
		o->seen = true;
	}
	if (w->listed) {
		update(ctl, o);
		if (w->selector && !o->last)
			check_all(ctl);
	}
	return ctl->exit_code >= 0 ? -1 : 0;
}

static void on_done(struct kt_refl *r, const struct kt_err *err, void *arg)
{
	struct watch *w = arg;

	(void)r;
	if (w->ctl->exit_code >= 0)
		return;
	if (w->follow) {
		kt_warnmsg("the pods of namespace %s are no longer followed: %s", w->ns, err->msg);
		return;
	}
	if (err->http_status == 400 && w->selector)
		kt_errmsg("the server refuses the selector '%s': %s", w->selector, err->msg);
	else if (err->http_status == 403)
		kt_errmsg("cannot watch %s%s%s%s%s: %s", w->k->plural, *w->k->group ? "." : "",
			  w->k->group, w->ns ? " in namespace " : "", w->ns ? w->ns : "", err->msg);
	else
		kt_errmsg("watch of '%s': %s", w->path, err->msg);
	finish(w->ctl, err->http_status == 400 && w->selector ? KT_EXIT_USAGE : KT_EXIT_FAILURE);
}

static void on_timeout(struct kt_loop *loop, void *arg)
{
	struct wait_ctl *ctl = arg;
	char d[32];

	(void)loop;
	kt_duration_format(ctl->timeout_ms, d, sizeof(d));
	for (size_t i = 0; i < ctl->nwatches; i++) {
		if (ctl->watches[i]->follow)
			continue;
		for (size_t j = 0; j < ctl->watches[i]->nobjs; j++) {
			struct obj *o = ctl->watches[i]->objs[j];
			char label[600];

			if (o->done)
				continue;
			obj_label(o, label, sizeof(label));
			kt_errmsg("timed out after %s waiting for %s: %s", d, label,
				  o->reason[0] ? o->reason : "not seen");
		}
		if (ctl->watches[i]->selector && !ctl->watches[i]->nobjs &&
		    !ctl->watches[i]->follow)
			kt_errmsg("timed out after %s: no %s matches '%s'", d,
				  ctl->watches[i]->k->plural, ctl->watches[i]->selector);
	}
	finish(ctl, EXIT_TIMEOUT);
}

/* ------------------------------------------------------------ output */

static cJSON *obj_doc(const struct wait_ctl *ctl, const struct obj *o)
{
	cJSON *doc = cJSON_CreateObject();
	const cJSON *status = o->last ? kt_json_get(o->last, "status") : NULL;
	const char *result;
	char label[600];

	if (!doc)
		return NULL;
	obj_label(o, label, sizeof(label));
	result = o->done			  ? "met"
		 : o->verdict == KT_WAIT_NEVER	  ? "never"
		 : ctl->exit_code == EXIT_TIMEOUT ? "timeout"
						  : "not met";
	cJSON_AddStringToObject(doc, "object", label);
	cJSON_AddStringToObject(doc, "apiVersion", o->w->k->gv);
	cJSON_AddStringToObject(doc, "kind", o->w->k->kind);
	if (o->w->ns)
		cJSON_AddStringToObject(doc, "namespace", o->w->ns);
	cJSON_AddStringToObject(doc, "name", o->name);
	cJSON_AddStringToObject(doc, "result", result);
	cJSON_AddStringToObject(doc, "reason", o->reason);
	cJSON_AddBoolToObject(doc, "exists", o->last != NULL);
	if (o->event[0])
		cJSON_AddStringToObject(doc, "lastEvent", o->event);
	if (status)
		cJSON_AddItemToObject(doc, "status", kt_json_dup(status));
	return doc;
}

/* text mode's last line, on standard error so that standard output is kubectl's */
static void summary(const struct wait_ctl *ctl)
{
	size_t n = 0, met = 0;

	for (size_t i = 0; i < ctl->nwatches; i++) {
		for (size_t j = 0; j < ctl->watches[i]->nobjs; j++) {
			const struct obj *o = ctl->watches[i]->objs[j];

			if (ctl->watches[i]->follow ||
			    (ctl->watches[i]->selector && !o->last && !o->done))
				continue;
			n++;
			met += o->done;
		}
	}
	kt_errmsg("%zu of %zu object%s met the condition%s", met, n, n == 1 ? "" : "s",
		  ctl->nconds == 1 ? "" : "s");
}

static int emit_results(struct wait_ctl *ctl)
{
	int rc = 0;

	for (size_t i = 0; i < ctl->nwatches; i++) {
		if (ctl->watches[i]->follow)
			continue;
		for (size_t j = 0; j < ctl->watches[i]->nobjs; j++) {
			struct obj *o = ctl->watches[i]->objs[j];
			cJSON *doc;

			if (ctl->watches[i]->selector && !o->last && !o->done)
				continue;
			doc = obj_doc(ctl, o);
			if (!doc || kt_emit(doc, 0) < 0)
				rc = -1;
			cJSON_Delete(doc);
		}
	}
	return rc;
}

/* ------------------------------------------------------------ main */

/* everything ctl holds, so a leak checker sees none at exit */
static void release(struct wait_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nwatches; i++) {
		struct watch *w = ctl->watches[i];

		kt_refl_cancel(w->run);
		kt_refl_release(&w->r);
		for (size_t j = 0; j < w->nobjs; j++) {
			cJSON_Delete(w->objs[j]->last);
			cJSON_Delete(w->objs[j]->match);
			free(w->objs[j]->name);
			free(w->objs[j]);
		}
		free(w->objs);
		free(w->owners);
		free(w->ns);
		free(w->selector);
		free(w->path);
		free(w);
	}
	free(ctl->watches);
	for (size_t i = 0; i < ctl->nkinds; i++) {
		free(ctl->kinds[i]->gv);
		free(ctl->kinds[i]->group);
		free(ctl->kinds[i]->plural);
		free(ctl->kinds[i]->singular);
		free(ctl->kinds[i]->kind);
		free(ctl->kinds[i]->short_names);
		free(ctl->kinds[i]);
	}
	free(ctl->kinds);
	kt_sb_release(&ctl->loaded);
	for (int i = 0; i < ctl->nconds; i++)
		kt_wait_cond_release(&ctl->conds[i]);
	kt_loop_free(ctl->loop);
	kt_api_close(ctl->api);
}

static int run(struct wait_ctl *ctl)
{
	struct kt_err err = { 0 };
	struct kt_timer *timer;

	ctl->exit_code = -1;
	for (size_t i = 0; i < ctl->nwatches; i++) {
		struct watch *w = ctl->watches[i];
		struct kt_refl_opts o = { .path = w->path, .flags = KT_REFL_BOOKMARKS };

		if (kt_refl_init(&w->r, &o, on_event, w, (unsigned)kt_now_us(), &err) < 0)
			kt_die(kt_exit_code(&err), "%s", err.msg);
		w->run = kt_refl_start(&w->r, ctl->api, ctl->loop, on_done, w, &err);
		if (!w->run)
			kt_die(kt_exit_code(&err), "watch of '%s': %s", w->path, err.msg);
	}
	if (ctl->timeout_ms) {
		timer = kt_timer_add(ctl->loop, ctl->timeout_ms, on_timeout, ctl);
		if (!timer)
			kt_die(KT_EXIT_FAILURE, "out of memory");
	}
	if (kt_loop_run(ctl->loop, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (ctl->exit_code < 0)
		ctl->exit_code = KT_EXIT_FAILURE;
	if (ctl->json && emit_results(ctl) < 0 && !ctl->exit_code)
		ctl->exit_code = KT_EXIT_FAILURE;
	if (!ctl->json)
		summary(ctl);
	return ctl->exit_code;
}

static void check_usage(struct wait_ctl *ctl, int argc, char **argv)
{
	struct kt_err err = { 0 };
	bool has_delete = false;

	ctl->operands = argv + optind;
	ctl->noperands = argc - optind;
	if (!ctl->nconds)
		kt_usage_error("missing --for: say what to wait for");
	if (ctl->any && ctl->nconds < 2)
		kt_usage_error("--any needs two --for or more");
	if (ctl->file && ctl->noperands)
		kt_usage_error("-f and <kind>/<name> operands do not go together");
	kt_opt_exclusive(ctl->file, "--filename", ctl->selector, "--selector", NULL);
	kt_opt_exclusive(ctl->file, "--filename", ctl->fields, "--field-selector", NULL);
	if (!ctl->file && !ctl->noperands)
		kt_usage_error(ctl->selector || ctl->fields
				   ? "-l and --field-selector need a <kind> operand"
				   : "missing what to wait for: -f <file>, "
				     "<kind>/<name> or <kind> -l <selector>");
	for (int i = 0; i < ctl->nconds; i++)
		has_delete = has_delete || ctl->conds[i].form == KT_WAIT_DELETE;
	if (has_delete && ctl->nconds > 1 && !ctl->any)
		kt_usage_error("--for=delete and another --for can never both hold");
	if (ctl->selector && !*ctl->selector)
		kt_opt_invalid("--selector", "", "must not be empty");
	if (ctl->fields && !*ctl->fields)
		kt_opt_invalid("--field-selector", "", "must not be empty");
	/* the server would refuse them with 400: said before any request */
	if (ctl->selector && kt_wait_selector_check(ctl->selector, false, &err) < 0)
		kt_usage_error("%s", err.msg);
	if (ctl->fields && kt_wait_selector_check(ctl->fields, true, &err) < 0)
		kt_usage_error("%s", err.msg);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "for", required_argument, NULL, OPT_FOR },
		{ "any", no_argument, NULL, OPT_ANY },
		{ "filename", required_argument, NULL, 'f' },
		{ "selector", required_argument, NULL, 'l' },
		{ "field-selector", required_argument, NULL, OPT_FIELD_SELECTOR },
		{ "namespace", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "no-fail-fast", no_argument, NULL, OPT_NO_FAIL_FAST },
		{ "output", required_argument, NULL, 'o' },
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	static const char shortopts[] = "f:l:n:o:" KT_SHORTOPTS_COMMON;
	struct wait_ctl ctl = { .timeout_ms = TIMEOUT_DEFAULT_MS };
	struct kt_err err = { 0 };
	int c, rc;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_FOR:
			if (ctl.nconds == MAX_FOR)
				kt_usage_error("more than %d --for", MAX_FOR);
			if (kt_wait_cond_parse(optarg, &ctl.conds[ctl.nconds], &err) < 0)
				kt_usage_error("%s", err.msg);
			ctl.nconds++;
			break;
		case OPT_ANY:
			ctl.any = true;
			break;
		case 'f':
			if (ctl.file)
				kt_usage_error("-f given twice");
			ctl.file = optarg;
			break;
		case 'l':
			ctl.selector = optarg;
			break;
		case OPT_FIELD_SELECTOR:
			ctl.fields = optarg;
			break;
		case 'n':
			if (!name_ok(optarg) || strchr(optarg, '.'))
				kt_opt_invalid("--namespace", optarg, "not a namespace name");
			ctl.ns = optarg;
			break;
		case OPT_TIMEOUT:
			ctl.timeout_ms = kt_opt_timeout_ms("--timeout", optarg);
			break;
		case OPT_NO_FAIL_FAST:
			ctl.no_fail_fast = true;
			break;
		case 'o': {
			static const char *const outputs[] = { "text", "json", NULL };

			ctl.json = kt_opt_choice("--output", optarg, outputs) == 1;
			break;
		}
		default:
			if (!kt_api_option(c, optarg, &ctl.api_opts))
				kt_common_option(c, usage);
		}
	}
	check_usage(&ctl, argc, argv);
	ctl.api_opts.max_reply = kt_max_input();
	ctl.api_opts.program = kt_prog;
	ctl.api = kt_api_open(&ctl.api_opts, &err);
	if (!ctl.api)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	ctl.loop = kt_loop_new(&err);
	if (!ctl.loop)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (ctl.file)
		target_file(&ctl);
	else
		target_operands(&ctl);
	rc = run(&ctl);
	release(&ctl);
	return rc;
}
