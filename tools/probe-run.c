/* SPDX-License-Identifier: Apache-2.0 */
/* probe-run: run Kubernetes probes as the kubelet does: once, watching, until ready, served */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"
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
	OPT_EXEC_VIA,
};

#define DEFAULT_TIMEOUT_MS 30000

struct probe_ctl {
	struct kt_proberun_opts o;
	bool mode_set;
	const char *pod_file;
	const char *pods_file;
	const char *container;
	const char *host;
	const char *probe_arg;
	const char *stats_file;
	const char *exec_via;
	struct kt_prober_filter filter;
	bool type_set;
	enum kt_probe_type type;
	struct kt_proberun *run;
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
	      "      --stats=<file>       at exit write how late probes started, as JSON\n"
	      "      --exec-via=<program> run a pod's exec probes as <program> UID\n"
	      "                           CONTAINER -- COMMAND..., in its container\n",
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

static int emit(const struct kt_prober_target *t, enum kt_probe_type type,
		enum kt_probe_result result, const char *output, size_t len, bool stopped,
		void *arg)
{
	struct probe_ctl *ctl = arg;
	cJSON *doc = kt_prober_line(t, type, ctl->o.mode != KT_PROBERUN_ONCE, result, output,
				    len, stopped);
	int rc;

	if (!doc)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	rc = kt_emit(doc, 0);
	cJSON_Delete(doc);
	return rc;
}

/* --until-ready: a progress line on stderr when a probe's result changes */
static void progress(const struct kt_prober_report *r, void *arg)
{
	char text[900];

	(void)arg;
	kt_prober_progress_text(text, sizeof(text), r);
	fprintf(stderr, "%s: %s\n", kt_prog, text);
}

static void problem(const char *msg, void *arg)
{
	(void)arg;
	kt_errmsg("%s", msg);
}

/* ------------------------------------------------------------------ input */

static void read_input(struct probe_ctl *ctl)
{
	const char *arg = ctl->probe_arg ? ctl->probe_arg : "-";
	const char *pods = ctl->pod_file ? ctl->pod_file : ctl->pods_file;
	struct kt_prober *p = kt_proberun_prober(ctl->run);
	struct kt_err err = { 0 };
	cJSON *doc = NULL;
	int rc;

	if (pods) {
		rc = kt_prober_add_file(p, pods, ctl->pods_file != NULL, &ctl->filter,
					kt_max_input(), &err);
	} else {
		if (arg[0] == '{')
			doc = kt_json_parse("<probe>", arg, strlen(arg), &err);
		else
			doc = kt_json_read_file(arg, kt_max_input(), &err);
		rc = doc ? kt_prober_add_probe(p, doc,
					       ctl->type_set ? ctl->type : KT_PROBE_READINESS,
					       ctl->host, arg[0] == '{' ? "<probe>" : arg, &err)
			 : -1;
		cJSON_Delete(doc);
	}
	if (rc < 0)
		kt_die(kt_exit_code(&err), "%s", err.msg);
}

static void write_stats(struct probe_ctl *ctl)
{
	struct kt_err err = { 0 };
	cJSON *doc;
	FILE *f;

	if (!ctl->stats_file)
		return;
	doc = kt_prober_stats(kt_proberun_prober(ctl->run));
	f = fopen(ctl->stats_file, "w");
	if (!doc || !f || kt_json_write(f, doc, 0, &err) < 0)
		kt_errmsg("cannot write '%s'", ctl->stats_file);
	if (f)
		fclose(f);
	cJSON_Delete(doc);
}

/* ---------------------------------------------------------------- options */

static const char *const mode_names[] = { "--once", "--watch", "--until-ready", "--serve" };

static void set_mode(struct probe_ctl *ctl, enum kt_proberun_mode m)
{
	kt_opt_exclusive(ctl->mode_set && ctl->o.mode != m, mode_names[ctl->o.mode], true,
			 mode_names[m], NULL);
	ctl->o.mode = m;
	ctl->mode_set = true;
}

/* the combinations getopt cannot refuse, and the <probe> operand */
static void check_options(struct probe_ctl *ctl, int argc, char **argv)
{
	kt_opt_exclusive(ctl->pod_file, "--pod", ctl->pods_file, "--pods", NULL);
	if ((ctl->pod_file || ctl->pods_file) && optind < argc)
		kt_usage_error("unexpected operand '%s' with --pod or --pods", argv[optind]);
	if (optind + 1 < argc)
		kt_usage_error("unexpected operand '%s'", argv[optind + 1]);
	if (ctl->o.mode == KT_PROBERUN_SERVE && (ctl->pod_file || ctl->pods_file || optind < argc))
		kt_usage_error("--serve reads pods from standard input: no --pod, --pods or <probe>");
	if (ctl->container && !ctl->pod_file && !ctl->pods_file && ctl->o.mode != KT_PROBERUN_SERVE)
		kt_usage_error("--container needs --pod, --pods or --serve");
	if (ctl->o.timeout_ms >= 0 && ctl->o.mode != KT_PROBERUN_UNTIL_READY)
		kt_usage_error("--timeout needs --until-ready");
	ctl->probe_arg = optind < argc ? argv[optind] : NULL;
	ctl->filter.types = ctl->type_set && (ctl->pod_file || ctl->pods_file ||
					      ctl->o.mode == KT_PROBERUN_SERVE) ? 1u << ctl->type : ~0u;
	ctl->filter.container = ctl->container;
	ctl->filter.host = ctl->host;
	if (ctl->o.timeout_ms < 0)
		ctl->o.timeout_ms = DEFAULT_TIMEOUT_MS;
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
		{ "host", required_argument, NULL, OPT_HOST },
		{ "stats", required_argument, NULL, OPT_STATS },
		{ "exec-via", required_argument, NULL, OPT_EXEC_VIA },
		KT_LONGOPTS_COMMON
	};
	int c;

	ctl->o.timeout_ms = -1;
	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		if (c >= OPT_ONCE && c <= OPT_SERVE) {
			set_mode(ctl, (enum kt_proberun_mode)(c - OPT_ONCE));
			continue;
		}
		switch (c) {
		case OPT_TIMEOUT:
			ctl->o.timeout_ms = kt_opt_duration_ms("--timeout", optarg);
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
				kt_opt_invalid("--probe", optarg,
					       "expected liveness, readiness or startup");
			ctl->type_set = true;
			break;
		case OPT_HOST:
			if (!*optarg)
				kt_opt_invalid("--host", optarg, "must not be empty");
			ctl->host = optarg;
			break;
		case OPT_STATS:
			ctl->stats_file = optarg;
			break;
		case OPT_EXEC_VIA:
			if (!*optarg)
				kt_opt_invalid("--exec-via", optarg, "must not be empty");
			ctl->exec_via = optarg;
			break;
		default:
			kt_common_option(c, usage);
		}
	}
	check_options(ctl, argc, argv);
}

int main(int argc, char **argv)
{
	static const struct kt_proberun_ops ops = { emit, progress, problem };
	struct probe_ctl ctl = { 0 };
	struct kt_err err = { 0 };
	struct kt_prober_counts c;
	int status;

	kt_init(argv);
	parse_options(&ctl, argc, argv);
	ctl.o.stats = ctl.stats_file != NULL;
	ctl.o.in_fd = STDIN_FILENO;
	ctl.o.max_line = kt_max_input();
	ctl.o.max_input = kt_max_input();
	ctl.o.filter = &ctl.filter;
	ctl.run = kt_proberun_new(&ctl.o, &ops, &ctl, &err);
	if (!ctl.run || (ctl.exec_via && kt_prober_set_exec_via(kt_proberun_prober(ctl.run),
								  ctl.exec_via, &err) < 0))
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (ctl.o.mode != KT_PROBERUN_SERVE)
		read_input(&ctl);
	kt_prober_count(kt_proberun_prober(ctl.run), &c);
	if (c.workers == 0 && ctl.o.mode != KT_PROBERUN_SERVE)
		kt_die(KT_EXIT_USAGE, "no probe to run");
	status = kt_proberun_run(ctl.run, &err);
	if (status < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	write_stats(&ctl);
	kt_proberun_free(ctl.run);
	return status;
}
