/* SPDX-License-Identifier: Apache-2.0 */
/* kt-pod-stats: the built-in provider's stats: the CPU and memory of an agent's
 * node, pods and containers, as the kubelet serves them.  Not a user command:
 * the provider's stats runs it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "podstats.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: kt-pod-stats [--prometheus] STATE_DIR\n"
		   "\n"
		   "The built-in provider's stats (its executable 'stats' runs it): the CPU and\n"
		   "memory of the node, the pods and their containers of the kt-agent whose state\n"
		   "directory is STATE_DIR, as one stats/v1alpha1 Summary (JSON, as the kubelet's\n"
		   "GET /stats/summary), or with --prometheus as GET /metrics/resource.\n"
		   "\n"
		   "Options:\n"
		   "      --prometheus         the Prometheus text of /metrics/resource\n"
		   "  -h, --help               show this help and exit\n"
		   "  -V, --version            show version and exit\n");
}

int main(int argc, char **argv)
{
	enum { OPT_PROMETHEUS = KT_OPT_TOOL };
	static const struct option longopts[] = {
		{ "prometheus", no_argument, NULL, OPT_PROMETHEUS },
		KT_LONGOPTS_COMMON,
		{ 0 },
	};
	struct kt_podstats s;
	struct kt_err err = { 0 };
	bool prom = false;
	char *out;
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		if (c == OPT_PROMETHEUS)
			prom = true;
		else
			kt_common_option(c, usage);
	}
	if (argc - optind != 1)
		kt_usage_error("expected STATE_DIR");
	if (kt_podstats_read(argv[optind], NULL, &s, &err) < 0) {
		kt_podstats_release(&s);
		kt_die(kt_exit_code(&err), "%s", err.msg);
	}
	out = prom ? kt_podstats_prometheus(&s) : kt_podstats_summary(&s);
	kt_podstats_release(&s);
	if (!out)
		kt_die(1, "out of memory");
	fputs(out, stdout);
	if (!prom)
		fputc('\n', stdout);
	free(out);
	return 0;
}
