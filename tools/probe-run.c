/* SPDX-License-Identifier: Apache-2.0 */
/* probe-run: run Kubernetes probes as the kubelet does: once, watching, until ready, served */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "kt.h"

enum {
	OPT_ONCE = KT_OPT_TOOL,
	OPT_WATCH,
	OPT_UNTIL_READY,
	OPT_SERVE,
	OPT_POD,
	OPT_PODS,
	OPT_CONTAINER,
	OPT_TYPE,
	OPT_HOST,
	OPT_STATS,
	OPT_TIMEOUT,
	OPT_TYPE_OLD, /* --type, the old spelling of --probe */
};

enum run_mode { MODE_ONCE, MODE_WATCH, MODE_UNTIL_READY, MODE_SERVE };

/* exit status of --once for an unknown result (every try errored) */
#define EXIT_UNKNOWN 3
/* --until-ready interrupted: 128 + the signal, as a shell reports it */
#define EXIT_SIGNAL 128
#define DEFAULT_TIMEOUT_MS 30000

struct probe_ctl {
	enum run_mode mode;
	bool mode_set;
	const char *pod_file;
	const char *pods_file;
	const char *container;
	const char *host;
	const char *probe_arg;
	const char *stats_file;
	int64_t timeout_ms;
	struct kt_prober_filter filter;
	bool type_set;
	enum kt_probe_type type;
	struct kt_loop *loop;
	struct kt_prober *prober;
	struct kt_timer *timer;		/* --until-ready: the --timeout */
	struct kt_lines *lines;		/* --serve: standard input */
	bool bad;			/* a line was refused */
	int status;
	bool failed, unknown;		/* --once */
	bool timed_out;
};

static void usage(FILE *out)
{
	fputs("Usage: probe-run [options] [<probe>]\n"
	      "       probe-run [options] --pod=<file> [--container=<name>] [--probe=<type>]\n"
	      "       probe-run [options] --serve\n"
	      "\n"
	      "Run Kubernetes probes (exec, httpGet, tcpSocket, grpc) as the kubelet runs them.\n"
	      "<probe> is a Probe as JSON or YAML: a file, '-' for standard input (the\n"
	      "default), or the JSON text itself when it starts with '{'.\n"
	      "\n"
	      "Options:\n"
	      "      --once               one attempt of each probe, print its result (default)\n"
	      "      --watch              run the kubelet's prober loop, print each change\n"
	      "      --until-ready        probe until every probe succeeds (exit 0), a\n"
	      "                           liveness or startup probe fails, or the timeout\n"
	      "      --timeout=<duration> --until-ready gives up after this (default 30s,\n"
	      "                           0 for no limit)\n"
	      "      --serve              the probes of a node: start and stop pods' probes\n"
	      "                           as told by JSON lines on standard input\n"
	      "      --pod=<file>         the probes of a Pod's containers, or of the pod\n"
	      "                           template of a workload (Deployment, Job, ...)\n"
	      "      --pods=<file>        the probes of every Pod in a PodList or stream\n"
	      "      --container=<name>   only the probes of this container\n"
	      "      --probe=<type>       liveness, readiness or startup; for <probe> its\n"
	      "                           kind (default readiness), for pods a filter\n"
	      "      --host=<addr>        host to probe when the pod has no status.podIP\n"
	      "                           (default 127.0.0.1)\n"
	      "      --stats=<file>       at exit write how late probes started, as JSON\n",
	      out);
	fputs(KT_USAGE_COMMON, out);
	fputs("\n"
	      "Example:\n"
	      "  probe-run --until-ready --timeout=2m --pod=deploy.yaml --container=web\n"
	      "\n"
	      "See probe-run(1).\n",
	      out);
}

/* ------------------------------------------------------------------ output */

static void emit(struct probe_ctl *ctl, const struct kt_prober_target *t,
		 enum kt_probe_type type, enum kt_probe_result result, const char *output,
		 size_t len, bool stopped)
{
	cJSON *doc = kt_prober_line(t, type, ctl->mode != MODE_ONCE, result, output, len,
				    stopped);

	if (!doc)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	if (kt_emit(doc, 0) < 0)
		ctl->status = KT_EXIT_FAILURE;
	cJSON_Delete(doc);
}

/* --until-ready: a progress line on stderr when a probe's result changes */
static void progress(const struct kt_prober_report *r)
{
	char text[900];

	kt_prober_progress_text(text, sizeof(text), r);
	fprintf(stderr, "%s: %s\n", kt_prog, text);
}

/* ------------------------------------------------------------ the reports */

static void verdict(struct probe_ctl *ctl)
{
	struct kt_prober_counts c;

	kt_prober_count(ctl->prober, &c);
	if (ctl->mode == MODE_UNTIL_READY && (c.held > 0 || c.succeeded == c.workers)) {
		ctl->status = c.held > 0 ? KT_EXIT_FAILURE : KT_EXIT_OK;
		kt_loop_stop(ctl->loop);
	} else if (ctl->mode == MODE_WATCH && c.held == c.workers) {
		ctl->status = KT_EXIT_FAILURE;
		kt_loop_stop(ctl->loop);
	}
}

static void on_report(struct kt_prober *p, const struct kt_prober_report *r, void *arg)
{
	struct probe_ctl *ctl = arg;

	(void)p;
	if (ctl->mode == MODE_ONCE)
		return;
	if (ctl->mode == MODE_UNTIL_READY) {
		if (r->event != KT_PROBER_RESULT)
			return;
		if (r->result_changed)
			progress(r);
		verdict(ctl);
		return;
	}
	if (r->event == KT_PROBER_INITIAL || (r->feed & KT_PROBE_FEED_CHANGED))
		emit(ctl, r->target, r->type, r->reported, r->output, r->output_len, false);
	else if (r->event == KT_PROBER_STOPPED)
		emit(ctl, r->target, r->type, KT_PROBE_UNKNOWN, "", 0, true);
	if (r->feed & KT_PROBE_FEED_HOLD)
		verdict(ctl);
}

/* --once and --until-ready: each probe's final line, in input order */
static void emit_final(const struct kt_prober_view *v, void *arg)
{
	struct probe_ctl *ctl = arg;
	enum kt_probe_result r = ctl->mode == MODE_ONCE ? v->last : v->st->reported;

	emit(ctl, v->target, v->type, r, v->output, v->output_len, false);
	ctl->failed = ctl->failed || r == KT_PROBE_FAILURE;
	ctl->unknown = ctl->unknown || r == KT_PROBE_UNKNOWN;
}

/* --until-ready failed: why, for each probe that is not ready */
static void why_not_ready(const struct kt_prober_view *v, void *arg)
{
	char text[900];

	if (kt_prober_why_text(text, sizeof(text), v, arg))
		kt_errmsg("%s", text);
}

static void on_timeout(struct kt_loop *loop, void *arg)
{
	struct probe_ctl *ctl = arg;
	char when[64], d[32];

	kt_duration_format(ctl->timeout_ms, d, sizeof(d));
	ctl->timer = NULL;
	ctl->timed_out = true;
	snprintf(when, sizeof(when), " after %s", d);
	kt_prober_each(ctl->prober, why_not_ready, when);
	ctl->status = KT_EXIT_FAILURE;
	kt_loop_stop(loop);
}

static void on_stop_signal(struct kt_loop *loop, int signo, void *arg)
{
	struct probe_ctl *ctl = arg;

	KT_V(1, "stopping", "signal=%d", signo);
	if (ctl->mode == MODE_UNTIL_READY) {
		kt_prober_each(ctl->prober, why_not_ready, "");
		kt_errmsg("interrupted by %s before every probe was ready",
			  signo == SIGINT ? "SIGINT" : "SIGTERM");
		ctl->status = EXIT_SIGNAL + signo;
	}
	kt_loop_stop(loop);
}

/* ------------------------------------------------------------------ input */

static void read_input(struct probe_ctl *ctl)
{
	const char *arg = ctl->probe_arg ? ctl->probe_arg : "-";
	const char *pods = ctl->pod_file ? ctl->pod_file : ctl->pods_file;
	struct kt_err err = { 0 };
	cJSON *doc = NULL;
	int rc;

	if (pods) {
		rc = kt_prober_add_file(ctl->prober, pods, ctl->pods_file != NULL, &ctl->filter,
					kt_max_input(), &err);
	} else {
		if (arg[0] == '{')
			doc = kt_json_parse("<probe>", arg, strlen(arg), &err);
		else
			doc = kt_json_read_file(arg, kt_max_input(), &err);
		rc = doc ? kt_prober_add_probe(ctl->prober, doc, ctl->type_set ? ctl->type
									  : KT_PROBE_READINESS,
					       ctl->host, arg[0] == '{' ? "<probe>" : arg, &err)
			 : -1;
		cJSON_Delete(doc);
	}
	if (rc < 0)
		kt_die(kt_exit_code(&err), "%s", err.msg);
}

/* ------------------------------------------------------------------- runs */

/* --serve: each line of standard input is a command; its end ends the run */
static void serve_line(struct kt_loop *loop, enum kt_lines_event ev, const char *line,
		       size_t len, long lineno, void *arg)
{
	struct probe_ctl *ctl = arg;
	struct kt_err err = { 0 };

	if (ev == KT_LINES_LINE && kt_prober_command(ctl->prober, line, len, lineno,
						     &ctl->filter, &err) == 0)
		return;
	if (ev == KT_LINES_LINE)
		kt_errmsg("%s", err.msg);
	else if (ev == KT_LINES_TOO_LONG)
		kt_errmsg("<stdin>:%ld: a line longer than --max-input (%zu bytes)", lineno,
			  kt_max_input());
	else if (ev == KT_LINES_ERROR)
		kt_die(KT_EXIT_FAILURE, "cannot read standard input: %s", line);
	if (ev != KT_LINES_END) {
		ctl->bad = true;
		return;
	}
	ctl->status = ctl->bad ? KT_EXIT_USAGE : KT_EXIT_OK;
	kt_loop_stop(loop);
}

static void run_loop(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };

	if (kt_loop_run(ctl->loop, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
}

static void run(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };

	if (ctl->mode != MODE_ONCE &&
	    (kt_loop_on_signal(ctl->loop, SIGTERM, on_stop_signal, ctl, &err) < 0 ||
	     kt_loop_on_signal(ctl->loop, SIGINT, on_stop_signal, ctl, &err) < 0))
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (ctl->mode == MODE_UNTIL_READY && ctl->timeout_ms > 0) {
		ctl->timer = kt_timer_add(ctl->loop, ctl->timeout_ms, on_timeout, ctl);
		if (!ctl->timer)
			kt_die(KT_EXIT_FAILURE, "out of memory");
	}
	if (ctl->mode == MODE_SERVE) {
		ctl->lines = kt_lines_new(ctl->loop, STDIN_FILENO, kt_max_input(), serve_line,
					  ctl, &err);
		if (!ctl->lines)
			kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	}
	kt_prober_run(ctl->prober, &err);
	run_loop(ctl);
	if (ctl->timer)
		kt_timer_cancel(ctl->loop, ctl->timer);
	kt_lines_free(ctl->lines);
	ctl->lines = NULL;
	if (ctl->mode == MODE_ONCE || (ctl->mode == MODE_UNTIL_READY && ctl->status < 2))
		kt_prober_each(ctl->prober, emit_final, ctl);
	if (ctl->mode == MODE_UNTIL_READY && ctl->status == KT_EXIT_FAILURE && !ctl->timed_out)
		kt_prober_each(ctl->prober, why_not_ready, "");
	if (ctl->mode == MODE_ONCE && ctl->status == 0)
		ctl->status = ctl->failed ? KT_EXIT_FAILURE : ctl->unknown ? EXIT_UNKNOWN : 0;
}

static void write_stats(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };
	cJSON *doc;
	FILE *f;

	if (!ctl->stats_file)
		return;
	doc = kt_prober_stats(ctl->prober);
	f = fopen(ctl->stats_file, "w");
	if (!doc || !f || kt_json_write(f, doc, 0, &err) < 0)
		kt_errmsg("cannot write '%s'", ctl->stats_file);
	if (f)
		fclose(f);
	cJSON_Delete(doc);
}

/* ---------------------------------------------------------------- options */

static const char *const mode_names[] = { "--once", "--watch", "--until-ready", "--serve" };

static void set_mode(struct probe_ctl *ctl, enum run_mode m)
{
	if (ctl->mode_set && ctl->mode != m)
		kt_usage_error("%s and %s cannot be used together", mode_names[ctl->mode],
			       mode_names[m]);
	ctl->mode = m;
	ctl->mode_set = true;
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
	if (ctl->mode == MODE_SERVE && (ctl->pod_file || ctl->pods_file || optind < argc))
		kt_usage_error("--serve reads pods from standard input: no --pod, --pods or <probe>");
	if (ctl->container && !ctl->pod_file && !ctl->pods_file && ctl->mode != MODE_SERVE)
		kt_usage_error("--container needs --pod, --pods or --serve");
	if (ctl->timeout_ms >= 0 && ctl->mode != MODE_UNTIL_READY)
		kt_usage_error("--timeout needs --until-ready");
	ctl->probe_arg = optind < argc ? argv[optind] : NULL;
	ctl->filter.types = ctl->type_set && (ctl->pod_file || ctl->pods_file ||
					      ctl->mode == MODE_SERVE) ? 1u << ctl->type : ~0u;
	ctl->filter.container = ctl->container;
	ctl->filter.host = ctl->host;
	if (ctl->timeout_ms < 0)
		ctl->timeout_ms = DEFAULT_TIMEOUT_MS;
}

static void parse_options(struct probe_ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "watch", no_argument, NULL, OPT_WATCH },
		{ "until-ready", no_argument, NULL, OPT_UNTIL_READY },
		{ "serve", no_argument, NULL, OPT_SERVE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "pod", required_argument, NULL, OPT_POD },
		{ "pods", required_argument, NULL, OPT_PODS },
		{ "container", required_argument, NULL, OPT_CONTAINER },
		{ "probe", required_argument, NULL, OPT_TYPE },
		{ "type", required_argument, NULL, OPT_TYPE_OLD },
		{ "host", required_argument, NULL, OPT_HOST },
		{ "stats", required_argument, NULL, OPT_STATS },
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	int c;

	ctl->timeout_ms = -1;
	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		if (c >= OPT_ONCE && c <= OPT_SERVE) {
			set_mode(ctl, (enum run_mode)(c - OPT_ONCE));
			continue;
		}
		switch (c) {
		case OPT_TIMEOUT:
			ctl->timeout_ms = kt_opt_duration_ms("--timeout", optarg);
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
		case OPT_TYPE_OLD:
			if (kt_probe_type_parse(optarg, &ctl->type) < 0)
				kt_usage_error("invalid --%s '%s': expected liveness, readiness or startup",
					       c == OPT_TYPE ? "probe" : "type", optarg);
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
	struct kt_prober_counts c;

	kt_init(argv);
	parse_options(&ctl, argc, argv);
	ctl.loop = kt_loop_new(&err);
	if (ctl.loop)
		ctl.prober = kt_prober_new(ctl.loop,
					   (ctl.mode == MODE_ONCE ? KT_PROBER_ONCE : 0) |
						   (ctl.stats_file ? KT_PROBER_STATS : 0) |
						   (ctl.mode == MODE_WATCH || ctl.mode == MODE_SERVE
							    ? KT_PROBER_SPREAD : 0),
					   on_report, &ctl, &err);
	if (!ctl.prober)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (ctl.mode != MODE_SERVE)
		read_input(&ctl);
	kt_prober_count(ctl.prober, &c);
	if (c.workers == 0 && ctl.mode != MODE_SERVE)
		kt_die(KT_EXIT_USAGE, "no probe to run");
	run(&ctl);
	kt_prober_stop_all(ctl.prober);
	run_loop(&ctl);
	write_stats(&ctl);
	kt_prober_free(ctl.prober);
	kt_loop_free(ctl.loop);
	return ctl.status;
}
