/* SPDX-License-Identifier: Apache-2.0 */
/* kt-pod-plan: the built-in provider's plan of a pod, made once at the pod's
 * first script and sourced by every later one.  Not a user command: pod_plan
 * in the provider's common.sh runs it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "fsio.h"
#include "json.h"
#include "plan.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: kt-pod-plan POD_JSON_FILE\n"
		   "\n"
		   "The built-in provider's plan of a pod (pod_plan in its common.sh runs it):\n"
		   "what it needs to start the containers of the pod in POD_JSON_FILE, as one\n"
		   "line of shell assignments, then the time it was made (RFC 3339, UTC, whole\n"
		   "seconds) on a line of its own.  A pod that has no plan (a container name\n"
		   "that is not a DNS label, a field of the wrong type) is one line instead,\n"
		   "'!' and why; both exit 0.  A file that cannot be read or is not one JSON\n"
		   "text is an error (exit 2).\n"
		   "\n"
		   "The assignments: n_containers; for container I (1..n) c_name_I, c_argv_I\n"
		   "(env as NAME=VALUE, then command and args, $(VAR) expanded as the kubelet\n"
		   "expands it, shell-quoted, or no-command), c_user_I (UID:GID or empty) and\n"
		   "c_stdin_I (open, once or empty); restart_policy and grace.  A newline or a\n"
		   "tab in a value is written \"$NL\" or \"$TAB\" outside the quotes.\n"
		   "\n"
		   "Options:\n"
		   "  -h, --help               show this help and exit\n"
		   "  -V, --version            show version and exit\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		KT_LONGOPTS_COMMON,
		{ 0 },
	};
	struct kt_err err = { 0 };
	struct kt_sb out = { 0 };
	char *text, stamp[32];
	size_t len;
	cJSON *pod;
	struct tm tm;
	time_t now;
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1)
		kt_common_option(c, usage);
	if (argc - optind != 1)
		kt_usage_error("expected POD_JSON_FILE");
	if (kt_file_read(argv[optind], NULL, kt_max_input(), &text, &len, &err) < 0)
		kt_die(KT_EXIT_USAGE, "%s", err.msg);
	pod = kt_json_parse_at(argv[optind], text, len, 1, 1, &err);
	free(text);
	if (!pod)
		kt_die(KT_EXIT_USAGE, "%s", err.msg);
	if (kt_pod_plan(pod, &out) < 0) {
		fputs("!", stdout);
	} else {
		now = time(NULL);
		if (!gmtime_r(&now, &tm) ||
		    !strftime(stamp, sizeof(stamp), "\n%Y-%m-%dT%H:%M:%SZ", &tm))
			kt_die(1, "cannot tell the time");
		kt_sb_puts(&out, stamp);
	}
	cJSON_Delete(pod);
	if (out.oom)
		kt_die(1, "out of memory");
	puts(kt_sb_str(&out));
	kt_sb_release(&out);
	if (fflush(stdout) != 0 || ferror(stdout))
		kt_die(1, "cannot write the plan");
	return 0;
}
