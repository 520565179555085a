/* SPDX-License-Identifier: Apache-2.0 */
/* node-ping: keep nodes' Leases in kube-node-lease renewed, once or on an interval */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "kt.h"

enum {
	OPT_ONCE = KT_OPT_TOOL,
	OPT_INTERVAL,
	OPT_LEASE_DURATION,
	OPT_HOLDER,
	OPT_CHECK,
	OPT_CHECK_TIMEOUT,
	OPT_STATUS_INTERVAL,
	OPT_NODES_FROM,
	OPT_PRINT_SECONDS,
};

#define PING_STATUS_DEFAULT_MS 60000

struct ping_ctl {
	struct kt_api_opts api_opts;
	bool once_set;
	struct kt_fleet_opts o;		/* interval_ms is 0 until set or derived */
	bool status_set;
	bool json_out;
	const char *nodes_from;

	char **names;
	size_t n;
	struct kt_hmap where;		/* name -> where it was given, to name both copies */
	struct kt_api *api;
	struct kt_loop *loop;
	struct kt_fleet *fleet;
	struct kt_tally troubles;	/* failures to report, grouped by cause */
	struct kt_timer *tally_timer;	/* looping: reports them once an interval */
	bool stopping;
};

static void usage(FILE *out)
{
	fputs("Usage: node-ping [options] <node>...\n"
	      "\n"
	      "Keep the Lease of each <node> in kube-node-lease renewed, as the kubelet and\n"
	      "virtual-kubelet do: once (for cron) or every interval until stopped.\n"
	      "\n"
	      "Options:\n"
	      "      --once               renew once and exit (the default)\n"
	      "      --interval=<duration>\n"
	      "                           renew every <duration> until SIGTERM or SIGINT\n"
	      "                           (default: lease duration / 4)\n"
	      "      --lease-duration=<seconds>\n"
	      "                           leaseDurationSeconds to write (default 40)\n"
	      "      --holder-identity=<name>\n"
	      "                           holderIdentity to write (default: the node name)\n"
	      "      --check=<command>    run <command> with /bin/sh before renewing; a\n"
	      "                           failure or timeout skips the renewal\n"
	      "      --check-timeout=<duration>\n"
	      "                           kill a check running longer (default 5s)\n"
	      "      --status-interval=<duration>\n"
	      "                           also refresh the node's condition heartbeats\n"
	      "                           every <duration> (default 1m with --interval)\n"
	      "      --nodes-from=<file>  read node names from <file>, one a line ('-' for\n"
	      "                           standard input)\n"
	      "  -o, --output=json        print one JSON line per renewal\n"
	      "      --print-seconds=<duration>\n"
	      "                           print <duration> in whole seconds (rounded up)\n"
	      "                           and exit: a duration read as the tools read it\n"
	      KT_USAGE_API
	      KT_USAGE_FIELD_MANAGER
	      KT_USAGE_COMMON
	      "\n"
	      "Example:\n"
	      "  node-ping --interval=10s --check='curl -fsS localhost:8080/healthz' vk-1\n"
	      "\n"
	      "See node-ping(1).\n", out);
}

/* ------------------------------------------------------------- node names */

/* where is "file:line", or NULL for an operand */
static void add_name(struct ping_ctl *ctl, const char *name, const char *where)
{
	struct kt_err err = { 0 };
	const char *first;
	char **grown, *at;

	if (kt_node_name_check(name, &err) < 0) {
		if (where)
			kt_usage_error("%s: %s", where, err.msg);
		kt_usage_error("%s", err.msg);
	}
	first = kt_hmap_get(&ctl->where, name);
	if (first && !where)
		kt_usage_error("node '%s' is given twice", name);
	if (first)
		kt_usage_error("%s: node '%s' is given twice (first %s%s)", where, name,
			       *first ? "at " : "on the command line", first);
	grown = realloc(ctl->names, (ctl->n + 1) * sizeof(*grown));
	if (!grown)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	ctl->names = grown;
	ctl->names[ctl->n] = strdup(name);
	at = strdup(where ? where : "");
	if (!ctl->names[ctl->n] || !at || kt_hmap_put(&ctl->where, ctl->names[ctl->n], at) < 0)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	ctl->n++;
}

static void forget_where(struct ping_ctl *ctl)
{
	for (size_t i = 0; i < ctl->where.cap; i++)
		if (ctl->where.e && ctl->where.e[i].key)
			free(ctl->where.e[i].val);
	kt_hmap_release(&ctl->where);
}

/* one name a line; blank lines and # comments skipped, spaces around trimmed */
static void read_names(struct ping_ctl *ctl, const char *path)
{
	bool is_stdin = !strcmp(path, "-");
	FILE *f = is_stdin ? stdin : fopen(path, "r");
	char *line = NULL, where[300];
	size_t cap = 0;
	unsigned long lineno = 0;
	ssize_t len;

	if (!f)
		kt_usage_error("cannot open '%s': %s", path, strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *s = line, *e = line + len;

		lineno++;
		while (s < e && strchr(" \t", *s))
			s++;
		while (e > s && strchr(" \t\r\n", e[-1]))
			e--;
		*e = '\0';
		if (!*s || *s == '#')
			continue;
		snprintf(where, sizeof(where), "%s:%lu", is_stdin ? "<stdin>" : path, lineno);
		add_name(ctl, s, where);
	}
	if (ferror(f))
		kt_usage_error("cannot read '%s': %s", path, strerror(errno));
	free(line);
	if (!is_stdin)
		fclose(f);
}

/* ----------------------------------------------------------------- output */

/* one line per cause: the first node's message and how many more had it */
static void say_trouble(const char *msg, size_t more, void *arg)
{
	if (more)
		kt_errmsg("%s (and %zu more node%s with the same error)", msg, more,
			  more == 1 ? "" : "s");
	else
		kt_errmsg("%s", msg);
}

static void trouble(struct ping_ctl *ctl, const char *node, const char *msg)
{
	if (kt_tally_add(&ctl->troubles, node, msg) < 0)
		kt_errmsg("%s", msg);
}

static void troubles_flush(struct ping_ctl *ctl)
{
	kt_tally_flush(&ctl->troubles, say_trouble, NULL);
}

/* a failed check (node NULL) is said at once; the rest by cause */
static void on_trouble(const char *node, const char *msg, void *arg)
{
	struct ping_ctl *ctl = arg;

	if (ctl->stopping)
		return;
	if (!node)
		kt_errmsg("%s", msg);
	else
		trouble(ctl, node, msg);
}

static void on_renewed(const char *name, const struct kt_lease *l, void *arg)
{
	struct ping_ctl *ctl = arg;
	cJSON *doc;

	if ((l->result == KT_LEASE_FAILED || l->no_node) && !ctl->stopping)
		trouble(ctl, name, l->err.msg);
	if (l->result == KT_LEASE_RENEWED || l->result == KT_LEASE_CREATED)
		KT_V(2, "lease renewed", "node=\"%s\" result=\"%s\" renewTime=\"%s\"",
		     name, kt_lease_result_name(l->result), l->renew_time);
	if (l->changed & KT_LEASE_OWNER_REPAIRED)
		KT_V(1, "lease owner repaired", "node=\"%s\" uid=\"%s\"", name,
		     l->node_uid ? l->node_uid : "");
	if (!ctl->json_out)
		return;
	doc = kt_fleet_line(name, l);
	if (!doc)
		kt_errmsg("out of memory");
	else
		kt_emit(doc, 0);
	cJSON_Delete(doc);
}

/* --------------------------------------------------------------- options */

static void check_args(struct ping_ctl *ctl)
{
	char a[32], b[32];

	kt_opt_exclusive(ctl->once_set, "--once", ctl->o.interval_ms != 0, "--interval", NULL);
	ctl->o.once = !ctl->o.interval_ms;
	if (ctl->o.once && ctl->status_set)
		kt_usage_error("--status-interval needs --interval");
	if (!ctl->o.interval_ms)
		ctl->o.interval_ms = ctl->o.duration_s * 1000 / 4;
	if (ctl->o.interval_ms >= ctl->o.duration_s * 1000)
		kt_usage_error("--interval %s must be shorter than the lease duration %s",
			       kt_duration_format(ctl->o.interval_ms, a, sizeof(a)),
			       kt_duration_format(ctl->o.duration_s * 1000, b, sizeof(b)));
	if (!ctl->o.once && !ctl->status_set)
		ctl->o.status_ms = PING_STATUS_DEFAULT_MS;
	if (!ctl->n)
		kt_usage_error("missing node name");
}

static void parse_option(struct ping_ctl *ctl, int c)
{
	switch (c) {
	case OPT_ONCE:
		ctl->once_set = true;
		break;
	case OPT_INTERVAL:
		ctl->o.interval_ms = kt_opt_duration_min_ms("--interval", optarg, 1);
		break;
	case OPT_LEASE_DURATION:
		ctl->o.duration_s = kt_opt_long("--lease-duration", optarg, 1, 2147483647L);
		break;
	case OPT_HOLDER:
		if (!*optarg)
			kt_usage_error("--holder-identity must not be empty");
		ctl->o.holder = optarg;
		break;
	case OPT_CHECK:
		ctl->o.check_cmd = optarg;
		break;
	case OPT_CHECK_TIMEOUT:
		ctl->o.check_timeout_ms = kt_opt_duration_min_ms("--check-timeout", optarg, 1);
		break;
	case OPT_STATUS_INTERVAL:
		ctl->o.status_ms = kt_opt_duration_min_ms("--status-interval", optarg, 1);
		ctl->status_set = true;
		break;
	case OPT_NODES_FROM:
		ctl->nodes_from = optarg;
		break;
	case OPT_PRINT_SECONDS: {
		/* for scripts (kt-agent) that count in seconds: at once, nothing run */
		int64_t ms = kt_opt_duration_min_ms("--print-seconds", optarg, 1);

		printf("%lld\n", (long long)(ms / 1000 + (ms % 1000 != 0)));
		exit(fflush(stdout) == 0 ? KT_EXIT_OK : KT_EXIT_FAILURE);
	}
	case 'o':
		kt_opt_choice("--output", optarg, (const char *const[]){ "json", NULL });
		ctl->json_out = true;
		break;
	default:
		if (!kt_api_option(c, optarg, &ctl->api_opts))
			kt_common_option(c, usage);
	}
}

static void parse_args(struct ping_ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "lease-duration", required_argument, NULL, OPT_LEASE_DURATION },
		{ "holder-identity", required_argument, NULL, OPT_HOLDER },
		{ "check", required_argument, NULL, OPT_CHECK },
		{ "check-timeout", required_argument, NULL, OPT_CHECK_TIMEOUT },
		{ "status-interval", required_argument, NULL, OPT_STATUS_INTERVAL },
		{ "nodes-from", required_argument, NULL, OPT_NODES_FROM },
		{ "print-seconds", required_argument, NULL, OPT_PRINT_SECONDS },
		KT_LONGOPT_OUTPUT,
		KT_LONGOPTS_API,
		KT_LONGOPTS_FIELD_MANAGER,
		KT_LONGOPTS_COMMON
	};
	int c;

	ctl->o.duration_s = KT_LEASE_DURATION_DEFAULT;
	ctl->o.check_timeout_ms = 5000;
	while ((c = getopt_long(argc, argv, "o:" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1)
		parse_option(ctl, c);
	for (int i = optind; i < argc; i++)
		add_name(ctl, argv[i], NULL);
	if (ctl->nodes_from)
		read_names(ctl, ctl->nodes_from);
	forget_where(ctl);
	/* sorted, so a LIST can be matched */
	if (ctl->n > 1)
		qsort(ctl->names, ctl->n, sizeof(*ctl->names), kt_key_cmp_ptr);
	check_args(ctl);
}

/* ------------------------------------------------------------------ run */

static void on_stop_signal(struct kt_loop *loop, int signo, void *arg)
{
	struct ping_ctl *ctl = arg;

	KT_V(1, "stopping", "signal=%d", signo);
	ctl->stopping = true;
	kt_fleet_stop(ctl->fleet);
}

/* looping, what failed in one interval is said once, at its end */
static void on_tally_due(struct kt_loop *loop, void *arg)
{
	struct ping_ctl *ctl = arg;

	troubles_flush(ctl);
	ctl->tally_timer = kt_timer_add(loop, ctl->o.interval_ms, on_tally_due, ctl);
	if (!ctl->tally_timer)
		kt_die(KT_EXIT_FAILURE, "out of memory");
}

static void ping_open(struct ping_ctl *ctl)
{
	struct kt_fleet_hooks hooks = { on_renewed, on_trouble, ctl };
	struct kt_err err = { 0 };

	ctl->loop = kt_loop_new(&err);
	if (!ctl->loop)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	ctl->api_opts.max_reply = kt_max_input();
	ctl->api_opts.program = kt_prog;
	ctl->api = kt_api_open(&ctl->api_opts, &err);
	if (!ctl->api)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	if (kt_loop_on_signal(ctl->loop, SIGTERM, on_stop_signal, ctl, &err) < 0 ||
	    kt_loop_on_signal(ctl->loop, SIGINT, on_stop_signal, ctl, &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	ctl->fleet = kt_fleet_new(ctl->api, ctl->loop, ctl->names, ctl->n, &ctl->o, &hooks, &err);
	if (!ctl->fleet)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
}

static void ping_close(struct ping_ctl *ctl)
{
	kt_fleet_free(ctl->fleet);
	kt_api_close(ctl->api);
	kt_loop_free(ctl->loop);
	for (size_t i = 0; i < ctl->n; i++)
		free(ctl->names[i]);
	free(ctl->names);
	kt_tally_release(&ctl->troubles);
}

int main(int argc, char **argv)
{
	struct ping_ctl ctl = { 0 };
	struct kt_err err = { 0 };
	bool failed = false, broken = false;

	kt_init(argv);
	parse_args(&ctl, argc, argv);
	ping_open(&ctl);
	if (!ctl.o.once)
		on_tally_due(ctl.loop, &ctl);
	if (kt_fleet_start(ctl.fleet, &err) < 0 || kt_loop_run(ctl.loop, &err) < 0 ||
	    kt_fleet_result(ctl.fleet, &failed, &err) < 0) {
		kt_errmsg("%s", err.msg);
		broken = true;
	}
	troubles_flush(&ctl);
	ping_close(&ctl);
	return broken || failed ? KT_EXIT_FAILURE : KT_EXIT_OK;
}
