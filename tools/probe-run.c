/* SPDX-License-Identifier: Apache-2.0 */
/* probe-run: run Kubernetes probes as the kubelet does, once, watching, or until ready */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "kt.h"

enum {
	OPT_ONCE = KT_OPT_TOOL,
	OPT_WATCH,
	OPT_UNTIL_READY,
	OPT_POD,
	OPT_PODS,
	OPT_CONTAINER,
	OPT_TYPE,
	OPT_HOST,
	OPT_STATS,
};

enum run_mode { MODE_ONCE, MODE_WATCH, MODE_UNTIL_READY };

/* exit status of --once for an unknown result (every try errored) */
#define EXIT_UNKNOWN 3

struct container;

/* one prober worker: a (pod, container, type) with its probe and its counts */
struct worker {
	struct probe_ctl *ctl;
	struct container *ct;
	struct kt_probe_spec spec;
	struct kt_probe_state st;
	struct kt_probe_call *call;
	struct kt_timer *timer;
	int64_t due;			/* when the next tick is due */
	bool tick_pending;		/* a tick came while a probe was in flight */
	enum kt_probe_result once;	/* --once: the result */
	char *once_output;
	size_t once_len;
	bool announced;			/* --until-ready: a decision was printed */
};

/* what the startup gate needs: the container's startup worker, if any */
struct container {
	char *pod;			/* "namespace/name", NULL for a bare probe */
	char *name;
	char *host;
	struct worker *startup;
	struct container *next;
};

struct probe_ctl {
	enum run_mode mode;
	const char *pod_file;
	const char *pods_file;
	const char *container;
	const char *host;
	const char *probe_arg;
	const char *stats_file;
	bool type_set;
	enum kt_probe_type type;
	struct kt_loop *loop;
	struct container *containers;
	struct worker **workers;
	size_t nworkers;
	size_t pending;			/* --once: probes still running */
	int64_t start;
	int status;
	/* lateness of probe starts against their tick, for --stats; starts that
	 * waited for the worker's previous attempt are only counted */
	int64_t *late;
	size_t nlate, late_cap;
	size_t queued;
};

static void usage(FILE *out)
{
	fputs("Usage: probe-run [options] [<probe>]\n"
	      "       probe-run [options] --pod=<file> [--container=<name>] [--type=<type>]\n"
	      "\n"
	      "Run Kubernetes probes (exec, httpGet, tcpSocket, grpc) as the kubelet runs them.\n"
	      "<probe> is a Probe as JSON or YAML: a file, '-' for standard input (the\n"
	      "default), or the JSON text itself when it starts with '{'.\n"
	      "\n"
	      "Options:\n"
	      "      --once               one attempt of each probe, print its result (default)\n"
	      "      --watch              run the kubelet's prober loop, print each change\n"
	      "      --until-ready        like --watch, exit 0 once every probe succeeds,\n"
	      "                           1 once one fails\n"
	      "      --pod=<file>         the probes of a Pod's containers\n"
	      "      --pods=<file>        the probes of every Pod in a PodList or stream\n"
	      "      --container=<name>   only the probes of this container\n"
	      "      --type=<type>        liveness, readiness or startup; for <probe> its\n"
	      "                           kind (default readiness), for pods a filter\n"
	      "      --host=<addr>        host to probe when the pod has no status.podIP\n"
	      "                           (default 127.0.0.1)\n"
	      "      --stats=<file>       at exit write how late probes started, as JSON\n",
	      out);
	fputs(KT_USAGE_COMMON, out);
	fputs("\n"
	      "Example:\n"
	      "  probe-run --until-ready '{\"httpGet\":{\"path\":\"/healthz\",\"port\":8080}}'\n"
	      "\n"
	      "See probe-run(1).\n",
	      out);
}

/* ------------------------------------------------------------------ output */

/* output as a JSON string: invalid UTF-8 and NUL become U+FFFD, as Go encodes */
static cJSON *output_string(const char *s, size_t len)
{
	char *buf = malloc(len * 3 + 1);
	size_t n = 0, i = 0;
	cJSON *item;

	if (!buf)
		return NULL;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
			      : (c >> 3) == 30 ? 4 : 0;
		bool ok = need > 0 && c != 0 && i + need <= len && !(need == 2 && c < 0xc2);

		for (size_t k = 1; ok && k < need; k++)
			ok = ((unsigned char)s[i + k] >> 6) == 2;
		if (!ok) {
			memcpy(buf + n, "\xef\xbf\xbd", 3);
			n += 3;
			i++;
			continue;
		}
		memcpy(buf + n, s + i, need);
		n += need;
		i += need;
	}
	buf[n] = '\0';
	item = cJSON_CreateString(buf);
	free(buf);
	return item;
}

static void emit_result(struct worker *w, bool with_type, const char *result,
			const char *output, size_t len)
{
	struct probe_ctl *ctl = w->ctl;
	cJSON *doc = cJSON_CreateObject();
	int rc = 0;

	if (!doc)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	if (w->ct->pod) {
		rc |= kt_json_set(doc, "pod", cJSON_CreateString(w->ct->pod));
		rc |= kt_json_set(doc, "container", cJSON_CreateString(w->ct->name));
	}
	if (with_type || w->ct->pod)
		rc |= kt_json_set(doc, "type", cJSON_CreateString(kt_probe_type_name(w->spec.type)));
	rc |= kt_json_set(doc, "result", cJSON_CreateString(result));
	rc |= kt_json_set(doc, "output", output_string(output, len));
	if (rc != 0)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	if (kt_emit(doc, 0) < 0)
		ctl->status = KT_EXIT_FAILURE;
	cJSON_Delete(doc);
}

/* ------------------------------------------------------------ the workers */

static bool container_started(const struct container *ct)
{
	return !ct->startup || ct->startup->st.reported == KT_PROBE_SUCCESS;
}

static void do_probe(struct worker *w, int64_t due);

/* --until-ready: 0 when every probe has succeeded, 1 when one failed, else -1 */
static int readiness_verdict(const struct probe_ctl *ctl)
{
	bool all = true;

	for (size_t i = 0; i < ctl->nworkers; i++) {
		const struct kt_probe_state *st = &ctl->workers[i]->st;

		if (st->settled && st->reported == KT_PROBE_FAILURE)
			return KT_EXIT_FAILURE;
		if (!st->settled || st->reported != KT_PROBE_SUCCESS)
			all = false;
	}
	return all ? KT_EXIT_OK : -1;
}

static bool all_held(const struct probe_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nworkers; i++) {
		if (!ctl->workers[i]->st.on_hold)
			return false;
	}
	return true;
}

/* the startup probe just succeeded: readiness is probed at once, as the
 * kubelet's status sync triggers a readiness worker with no result yet */
static void trigger_readiness(struct container *ct)
{
	struct probe_ctl *ctl = ct->startup->ctl;

	for (size_t i = 0; i < ctl->nworkers; i++) {
		struct worker *w = ctl->workers[i];

		if (w->ct == ct && w->spec.type == KT_PROBE_READINESS && !w->call)
			do_probe(w, -1);
	}
}

static void watch_done(struct kt_loop *loop, const struct kt_probe_outcome *o, void *arg)
{
	struct worker *w = arg;
	struct probe_ctl *ctl = w->ctl;
	unsigned m;
	int verdict;

	w->call = NULL;
	m = kt_probe_state_feed(&w->st, o->result);
	KT_V(2, "probe result", "container=\"%s\" type=\"%s\" result=\"%s\" reported=\"%s\"",
	     w->ct->name ? w->ct->name : "", kt_probe_type_name(w->spec.type),
	     kt_probe_result_name(o->result), kt_probe_result_name(w->st.reported));
	/* --watch printed the initial values; --until-ready prints each first decision */
	if ((m & KT_PROBE_FEED_CHANGED) ||
	    (ctl->mode == MODE_UNTIL_READY && (m & KT_PROBE_FEED_SET) && !w->announced)) {
		emit_result(w, true, kt_probe_result_name(w->st.reported), o->output,
			    o->output_len);
		w->announced = true;
	}
	if (ctl->mode == MODE_UNTIL_READY) {
		verdict = readiness_verdict(ctl);
		if (verdict >= 0) {
			ctl->status = verdict;
			kt_loop_stop(loop);
			return;
		}
	}
	if ((m & KT_PROBE_FEED_HOLD) && all_held(ctl)) {
		ctl->status = KT_EXIT_FAILURE;
		kt_loop_stop(loop);
		return;
	}
	if ((m & KT_PROBE_FEED_CHANGED) && w == w->ct->startup &&
	    w->st.reported == KT_PROBE_SUCCESS)
		trigger_readiness(w->ct);
	if (w->tick_pending) {
		w->tick_pending = false;
		do_probe(w, -1);
	}
}

static void note_lateness(struct probe_ctl *ctl, int64_t late)
{
	int64_t *l;

	if (!ctl->stats_file)
		return;
	if (ctl->nlate == ctl->late_cap) {
		ctl->late_cap = ctl->late_cap ? ctl->late_cap * 2 : 4096;
		l = realloc(ctl->late, ctl->late_cap * sizeof(*l));
		if (!l)
			kt_die(KT_EXIT_FAILURE, "out of memory");
		ctl->late = l;
	}
	ctl->late[ctl->nlate++] = late;
}

/*
 * One tick of the worker: probe unless held, delayed or gated.  due is when
 * the tick was due, or -1 when the start waited for something else (the
 * worker's previous attempt, a trigger) and says nothing about the loop.
 */
static void do_probe(struct worker *w, int64_t due)
{
	struct probe_ctl *ctl = w->ctl;
	struct kt_err err = { 0 };
	int64_t now = kt_loop_now(ctl->loop);

	if (!kt_probe_state_due(&w->st, &w->spec, now - ctl->start, container_started(w->ct)))
		return;
	if (due >= 0)
		note_lateness(ctl, now - due);
	else
		ctl->queued++;
	w->call = kt_probe_start(ctl->loop, &w->spec, w->ct->host, watch_done, w, &err);
	if (!w->call)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
}

static void on_tick(struct kt_loop *loop, void *arg)
{
	struct worker *w = arg;
	int64_t due = w->due;

	w->timer = NULL;
	if (w->st.on_hold)
		return;
	/* the next tick keeps the period whatever this probe takes; a tick that
	 * comes while a probe runs waits for it, and only one waits (Go's ticker) */
	w->due += w->spec.period_s * 1000;
	/* a loop later than a whole period drops the ticks it missed, as Go's does */
	while (w->due <= kt_loop_now(loop))
		w->due += w->spec.period_s * 1000;
	w->timer = kt_timer_add(loop, w->due - kt_loop_now(loop), on_tick, w);
	if (!w->timer)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	if (w->call) {
		w->tick_pending = true;
	} else {
		do_probe(w, due);
	}
}

static void once_done(struct kt_loop *loop, const struct kt_probe_outcome *o, void *arg)
{
	struct worker *w = arg;

	w->call = NULL;
	w->once = o->result;
	w->once_output = malloc(o->output_len + 1);
	if (!w->once_output)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	memcpy(w->once_output, o->output, o->output_len);
	w->once_len = o->output_len;
	w->ctl->pending--;
}

static void on_stop_signal(struct kt_loop *loop, int signo, void *arg)
{
	struct probe_ctl *ctl = arg;

	KT_V(1, "stopping", "signal=%d", signo);
	/* interrupted before the verdict: not ready */
	if (ctl->mode == MODE_UNTIL_READY)
		ctl->status = KT_EXIT_FAILURE;
	kt_loop_stop(loop);
}

/* ------------------------------------------------------------------ input */

static struct container *container_new(struct probe_ctl *ctl, const char *pod,
				       const char *name, const char *host)
{
	struct container *ct = calloc(1, sizeof(*ct));

	if (ct) {
		ct->pod = pod ? strdup(pod) : NULL;
		ct->name = name ? strdup(name) : NULL;
		ct->host = strdup(host);
	}
	if (!ct || (pod && !ct->pod) || (name && !ct->name) || !ct->host)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	ct->next = ctl->containers;
	ctl->containers = ct;
	return ct;
}

static void add_worker(struct probe_ctl *ctl, struct container *ct, const cJSON *probe,
		       enum kt_probe_type type, const cJSON *container, const char *field,
		       const char *source)
{
	struct worker *w = calloc(1, sizeof(*w));
	struct worker **ws;
	struct kt_err err = { 0 };

	if (!w)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	if (kt_probe_spec_parse(&w->spec, probe, type, container, field, &err) < 0)
		kt_die(KT_EXIT_USAGE, "%s: %s", source, err.msg);
	w->ctl = ctl;
	w->ct = ct;
	kt_probe_state_init(&w->st, &w->spec);
	if (type == KT_PROBE_STARTUP)
		ct->startup = w;
	ws = realloc(ctl->workers, (ctl->nworkers + 1) * sizeof(*ws));
	if (!ws)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	ctl->workers = ws;
	ctl->workers[ctl->nworkers++] = w;
}

/* the probes of one container, in the kubelet's order: startup, readiness, liveness */
static void add_container(struct probe_ctl *ctl, const char *pod, const char *host,
			  const cJSON *c, const char *list, int idx, const char *source)
{
	static const char *const keys[] = { "startupProbe", "readinessProbe", "livenessProbe" };
	static const enum kt_probe_type types[] = { KT_PROBE_STARTUP, KT_PROBE_READINESS,
						    KT_PROBE_LIVENESS };
	const char *name = kt_json_get_string(c, "name");
	struct container *ct = NULL;
	char field[128];

	for (size_t i = 0; i < 3; i++) {
		const cJSON *probe = kt_json_get(c, keys[i]);

		if (!probe || cJSON_IsNull(probe) || (ctl->type_set && ctl->type != types[i]))
			continue;
		if (!ct)
			ct = container_new(ctl, pod, name ? name : "", host);
		snprintf(field, sizeof(field), "spec.%s[%d].%s", list, idx, keys[i]);
		add_worker(ctl, ct, probe, types[i], c, field, source);
	}
}

/* containers, and init containers that are sidecars (restartPolicy Always) */
static bool add_pod(struct probe_ctl *ctl, const cJSON *pod, const char *source)
{
	const char *ns = kt_json_get_string(kt_json_get(pod, "metadata"), "namespace");
	const char *name = kt_json_get_string(kt_json_get(pod, "metadata"), "name");
	const char *ip = kt_json_get_string(kt_json_get(pod, "status"), "podIP");
	const cJSON *spec = kt_json_get_object(pod, "spec");
	const char *lists[] = { "containers", "initContainers" };
	const char *host = ip && *ip ? ip : ctl->host ? ctl->host : "127.0.0.1";
	char label[512];
	bool found = false;
	int idx;

	if (!cJSON_IsObject(pod) || !name)
		kt_die(KT_EXIT_USAGE, "%s: not a Pod: metadata.name is missing", source);
	snprintf(label, sizeof(label), "%s/%s", ns && *ns ? ns : "default", name);
	for (size_t l = 0; l < 2; l++) {
		const cJSON *c;

		idx = 0;
		cJSON_ArrayForEach(c, kt_json_get_array(spec, lists[l])) {
			const char *cn = kt_json_get_string(c, "name");
			const char *rp = kt_json_get_string(c, "restartPolicy");

			if ((!ctl->container || (cn && strcmp(cn, ctl->container) == 0)) &&
			    (l == 0 || (rp && strcmp(rp, "Always") == 0))) {
				found = true;
				add_container(ctl, label, host, c, lists[l], idx, source);
			}
			idx++;
		}
	}
	return found;
}

static void read_pods(struct probe_ctl *ctl, const char *path, bool many)
{
	struct kt_err err = { 0 };
	struct kt_json_reader *r;
	cJSON *doc = NULL, *item;
	size_t pods = 0;
	int rc;

	r = kt_json_reader_open(path, kt_max_input(), many ? KT_JSON_STREAM : 0, &err);
	if (!r)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	while ((rc = kt_json_reader_next(r, &doc, &err)) > 0) {
		const cJSON *items = kt_json_get_array(doc, "items");

		if (many && items) {
			cJSON_ArrayForEach(item, items) {
				add_pod(ctl, item, path);
				pods++;
			}
		} else if (!add_pod(ctl, doc, path) && ctl->container && !many) {
			kt_die(KT_EXIT_USAGE, "%s: pod '%s' has no container '%s'", path,
			       kt_json_get_string(kt_json_get(doc, "metadata"), "name"),
			       ctl->container);
		} else {
			pods++;
		}
		cJSON_Delete(doc);
		doc = NULL;
	}
	if (rc < 0)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	if (pods == 0 && !many)
		kt_die(KT_EXIT_USAGE, "%s: no pod in the input", path);
	kt_json_reader_free(r);
}

static void read_probe(struct probe_ctl *ctl)
{
	const char *arg = ctl->probe_arg ? ctl->probe_arg : "-";
	enum kt_probe_type type = ctl->type_set ? ctl->type : KT_PROBE_READINESS;
	struct kt_err err = { 0 };
	struct container *ct;
	char field[32];
	cJSON *doc;

	if (arg[0] == '{')
		doc = kt_json_parse("<probe>", arg, strlen(arg), &err);
	else
		doc = kt_json_read_file(arg, kt_max_input(), &err);
	if (!doc)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	ct = container_new(ctl, NULL, NULL, ctl->host ? ctl->host : "127.0.0.1");
	snprintf(field, sizeof(field), "%sProbe", kt_probe_type_name(type));
	add_worker(ctl, ct, doc, type, NULL, field,
		   arg[0] == '{' ? "<probe>" : strcmp(arg, "-") == 0 ? "<stdin>" : arg);
	cJSON_Delete(doc);
}

/* ------------------------------------------------------------------- runs */

static void run_loop(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };

	if (kt_loop_run(ctl->loop, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
}

static void run_once(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };
	bool failed = false, unknown = false;

	for (size_t i = 0; i < ctl->nworkers; i++) {
		struct worker *w = ctl->workers[i];

		w->call = kt_probe_start(ctl->loop, &w->spec, w->ct->host, once_done, w, &err);
		if (!w->call)
			kt_die(KT_EXIT_FAILURE, "%s", err.msg);
		ctl->pending++;
	}
	run_loop(ctl);
	if (ctl->pending > 0)
		kt_die(KT_EXIT_FAILURE, "internal error: %zu probes never ended", ctl->pending);
	for (size_t i = 0; i < ctl->nworkers; i++) {
		struct worker *w = ctl->workers[i];

		emit_result(w, false, kt_probe_result_name(w->once), w->once_output, w->once_len);
		failed = failed || w->once == KT_PROBE_FAILURE;
		unknown = unknown || w->once == KT_PROBE_UNKNOWN;
	}
	if (ctl->status == 0)
		ctl->status = failed ? KT_EXIT_FAILURE : unknown ? EXIT_UNKNOWN : KT_EXIT_OK;
}

static void run_watch(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };

	if (kt_loop_on_signal(ctl->loop, SIGTERM, on_stop_signal, ctl, &err) < 0 ||
	    kt_loop_on_signal(ctl->loop, SIGINT, on_stop_signal, ctl, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	ctl->start = kt_loop_now(ctl->loop);
	for (size_t i = 0; i < ctl->nworkers; i++) {
		struct worker *w = ctl->workers[i];

		if (ctl->mode == MODE_WATCH)
			emit_result(w, true, kt_probe_result_name(w->st.reported), "", 0);
		w->due = ctl->start;
		w->timer = kt_timer_add(ctl->loop, 0, on_tick, w);
		if (!w->timer)
			kt_die(KT_EXIT_FAILURE, "out of memory");
	}
	run_loop(ctl);
}

/* stops what still runs, then lets the loop reap killed commands */
static void shutdown_workers(struct probe_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nworkers; i++) {
		struct worker *w = ctl->workers[i];

		if (w->timer)
			kt_timer_cancel(ctl->loop, w->timer);
		w->timer = NULL;
		kt_probe_cancel(w->call);
		w->call = NULL;
	}
	run_loop(ctl);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void write_stats(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };
	cJSON *doc;
	FILE *f;
	size_t n = ctl->nlate;

	if (!ctl->stats_file)
		return;
	qsort(ctl->late, n, sizeof(*ctl->late), cmp_i64);
	doc = cJSON_CreateObject();
	kt_json_set(doc, "probes", kt_json_num_new_int((int64_t)n));
	kt_json_set(doc, "lateMsP50", kt_json_num_new_int(n ? ctl->late[n / 2] : 0));
	kt_json_set(doc, "lateMsP99", kt_json_num_new_int(n ? ctl->late[n * 99 / 100] : 0));
	kt_json_set(doc, "lateMsMax", kt_json_num_new_int(n ? ctl->late[n - 1] : 0));
	kt_json_set(doc, "queued", kt_json_num_new_int((int64_t)ctl->queued));
	f = fopen(ctl->stats_file, "w");
	if (!f || kt_json_write(f, doc, 0, &err) < 0)
		kt_errmsg("cannot write '%s'", ctl->stats_file);
	if (f)
		fclose(f);
	cJSON_Delete(doc);
}

static void free_all(struct probe_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nworkers; i++) {
		kt_probe_spec_release(&ctl->workers[i]->spec);
		free(ctl->workers[i]->once_output);
		free(ctl->workers[i]);
	}
	free(ctl->workers);
	while (ctl->containers) {
		struct container *ct = ctl->containers;

		ctl->containers = ct->next;
		free(ct->pod);
		free(ct->name);
		free(ct->host);
		free(ct);
	}
	free(ctl->late);
	kt_loop_free(ctl->loop);
}

/* the combinations getopt cannot refuse, and the <probe> operand */
static void check_options(struct probe_ctl *ctl, int argc, char **argv)
{
	if (ctl->pod_file && ctl->pods_file)
		kt_usage_error("--pod and --pods cannot be used together");
	if ((ctl->pod_file || ctl->pods_file) && optind < argc)
		kt_usage_error("unexpected operand '%s' with --pod or --pods", argv[optind]);
	if (optind + 1 < argc)
		kt_usage_error("unexpected operand '%s'", argv[optind + 1]);
	if (ctl->container && !ctl->pod_file && !ctl->pods_file)
		kt_usage_error("--container needs --pod or --pods");
	ctl->probe_arg = optind < argc ? argv[optind] : NULL;
}

static void parse_options(struct probe_ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "watch", no_argument, NULL, OPT_WATCH },
		{ "until-ready", no_argument, NULL, OPT_UNTIL_READY },
		{ "pod", required_argument, NULL, OPT_POD },
		{ "pods", required_argument, NULL, OPT_PODS },
		{ "container", required_argument, NULL, OPT_CONTAINER },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "host", required_argument, NULL, OPT_HOST },
		{ "stats", required_argument, NULL, OPT_STATS },
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ONCE:
		case OPT_WATCH:
		case OPT_UNTIL_READY:
			ctl->mode = c == OPT_ONCE ? MODE_ONCE : c == OPT_WATCH ? MODE_WATCH
									  : MODE_UNTIL_READY;
			break;
		case OPT_POD:
			ctl->pod_file = optarg;
			break;
		case OPT_PODS:
			ctl->pods_file = optarg;
			break;
		case OPT_CONTAINER:
			ctl->container = optarg;
			break;
		case OPT_TYPE:
			if (kt_probe_type_parse(optarg, &ctl->type) < 0)
				kt_usage_error("invalid --type '%s': expected liveness, readiness or startup",
					       optarg);
			ctl->type_set = true;
			break;
		case OPT_HOST:
			if (!*optarg)
				kt_usage_error("invalid --host '': must not be empty");
			ctl->host = optarg;
			break;
		case OPT_STATS:
			ctl->stats_file = optarg;
			break;
		default:
			kt_common_option(c, usage);
		}
	}
	check_options(ctl, argc, argv);
}

int main(int argc, char **argv)
{
	struct probe_ctl ctl = { 0 };
	struct kt_err err = { 0 };

	kt_init(argv);
	parse_options(&ctl, argc, argv);
	if (ctl.pod_file || ctl.pods_file)
		read_pods(&ctl, ctl.pod_file ? ctl.pod_file : ctl.pods_file, ctl.pods_file != NULL);
	else
		read_probe(&ctl);
	if (ctl.nworkers == 0)
		kt_die(KT_EXIT_USAGE, "no probe to run");
	ctl.loop = kt_loop_new(&err);
	if (!ctl.loop)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (ctl.mode == MODE_ONCE)
		run_once(&ctl);
	else
		run_watch(&ctl);
	shutdown_workers(&ctl);
	write_stats(&ctl);
	free_all(&ctl);
	return ctl.status;
}
