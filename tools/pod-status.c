/* SPDX-License-Identifier: Apache-2.0 */
/* pod-status: a pod's status as the kubelet computes it from states and probes */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kt.h"

enum { OPT_NOW = KT_OPT_TOOL, OPT_TERMINAL, OPT_STREAM, OPT_KILL_STATUS, OPT_STATE_DIR, OPT_SEND };
enum out_mode { OUT_STATUS, OUT_PATCH, OUT_POD, OUT_BRIEF };

/* -o takes up to this many formats, comma-separated, each given once */
#define MAX_OUT 4

struct ps_ctl {
	const char *input;
	bool stream, terminal;
	enum out_mode out[MAX_OUT];
	size_t nout;
	int64_t now_us;
	struct kt_probe_results *probes;
	const cJSON *kill;
	const char *state_dir;	/* --state-dir: pods of a kt-agent state directory */
	struct kt_api_opts api; /* --send's */
	int rc;
};

static void usage(FILE *out)
{
	fputs("Usage: pod-status [options] [<pod>]\n"
	      "       pod-status [options] --state-dir=<dir> <uid>\n"
	      "       pod-status [options] --state-dir=<dir> --send\n"
	      "\n"
	      "Compute a Pod's status as the kubelet does: the phase, the\n"
	      "conditions PodReadyToStartContainers, Initialized, ContainersReady,\n"
	      "Ready and PodScheduled, and each container's ready and started,\n"
	      "from the container states in its status and the results of its\n"
	      "probes.  <pod> is a file ('-' for standard input, the default).\n"
	      "\n"
	      "Options:\n"
	      "  -r, --probe-results=<file>\n"
	      "                           probe-run --watch lines; for each\n"
	      "                           container and probe the latest wins\n"
	      "  -C, --current=<file>     the status (or Pod) the server has:\n"
	      "                           unchanged conditions keep their\n"
	      "                           lastTransitionTime\n"
	      "      --terminal           the pod worker has finished the pod\n"
	      "      --kill-status=<file>\n"
	      "                           what the kill reports (phase, reason,\n"
	      "                           message, conditions), laid over the\n"
	      "                           status once the pod is --terminal\n"
	      "  -o, --output=<format>    status (default), patch (a merge patch\n"
	      "                           from the current status), pod, or\n"
	      "                           brief (the phase and whether Ready);\n"
	      "                           several, comma-separated: one line each\n"
	      "      --stream             Pods and probe-run lines one after\n"
	      "                           another; a pod again when a result\n"
	      "                           changes its status\n"
	      "      --now=<time>         compute as at this RFC 3339 time\n"
	      "      --state-dir=<dir>    the pod is <dir>/pods/<uid> of a kt-agent state\n"
	      "                           directory: its pod.json, the provider's\n"
	      "                           records of its containers, its probes'\n"
	      "                           latest results and its kill status\n"
	      "      --send               with --state-dir: read pod UIDs from standard\n"
	      "                           input, a line each ('UID' or 'UID terminal'),\n"
	      "                           and keep each pod's status on the server as\n"
	      "                           the kubelet's status manager does\n",
	      out);
	fputs(KT_USAGE_API KT_USAGE_FIELD_MANAGER, out);
	fputs(KT_USAGE_COMMON, out);
	fputs("\n"
	      "Example:\n"
	      "  probe-run --watch --pod=web.json >results.ndjson &\n"
	      "  pod-status --probe-results=results.ndjson \\\n"
	      "    --current=server.json -o patch web.json\n"
	      "  pod-status --state-dir=/var/lib/kt-agent 6f2a...\n"
	      "\n"
	      "See pod-status(1).\n",
	      out);
}

/* where a document began, for messages: "pods.json:12" or "pods.json" */
static void where(struct kt_json_reader *r, const char *name, char *buf, size_t size)
{
	long line = kt_json_reader_line(r);
	const char *shown = !name || strcmp(name, "-") == 0 ? "<stdin>" : name;

	if (line > 0)
		snprintf(buf, size, "%s:%ld", shown, line);
	else
		snprintf(buf, size, "%s", shown);
}

/* reads the probe-run lines of path; 0, or the exit status after saying why */
static int load_probes(struct ps_ctl *ctl, const char *path)
{
	struct kt_err err = { 0 };
	struct kt_json_reader *r;
	cJSON *doc = NULL;
	char at[512];
	int got;

	r = kt_json_reader_open(path, kt_max_input(), KT_JSON_STREAM | KT_JSON_JSON_ONLY,
				&err);
	if (!r) {
		kt_errmsg("%s", err.msg);
		return kt_exit_code(&err);
	}
	while ((got = kt_json_reader_next(r, &doc, &err)) > 0) {
		where(r, path, at, sizeof(at));
		got = kt_probe_results_add(ctl->probes, doc, at, &err);
		cJSON_Delete(doc);
		if (got < 0) {
			kt_err_prefix(&err, "%s", at);
			break;
		}
	}
	kt_json_reader_close(r);
	if (got < 0) {
		kt_errmsg("%s", err.msg);
		return kt_exit_code(&err);
	}
	return 0;
}

/* the status in a file: a Pod's, or the object itself; NULL after saying why */
static cJSON *load_current(const char *path, int *code)
{
	struct kt_err err = { 0 };
	cJSON *doc = kt_json_read_file(path, kt_max_input(), &err), *st;

	if (!doc) {
		kt_errmsg("%s", err.msg);
		*code = kt_exit_code(&err);
		return NULL;
	}
	if (!cJSON_IsObject(doc)) {
		kt_errmsg("%s: expected a Pod or a pod status, got %s", path,
			  kt_json_type_name(doc));
		cJSON_Delete(doc);
		*code = KT_EXIT_USAGE;
		return NULL;
	}
	if (!kt_json_get(doc, "spec") && !kt_json_get(doc, "kind"))
		return doc;
	st = cJSON_DetachItemFromObjectCaseSensitive(doc, "status");
	cJSON_Delete(doc);
	return st ? st : cJSON_CreateObject();
}

/* the kill status in a file, checked; NULL after saying why */
static cJSON *load_kill(const char *path, int *code)
{
	struct kt_err err = { 0 };
	cJSON *doc = kt_json_read_file(path, kt_max_input(), &err);

	if (doc && kt_podstatus_kill_check(doc, &err) < 0) {
		kt_err_prefix(&err, "%s", path);
		cJSON_Delete(doc);
		doc = NULL;
	}
	if (!doc) {
		kt_errmsg("%s", err.msg);
		*code = kt_exit_code(&err);
	}
	return doc;
}

/* one pod's status; current is the status to keep times from */
static cJSON *compute(const struct ps_ctl *ctl, const cJSON *pod, const cJSON *current,
		      struct kt_err *err)
{
	struct kt_podstatus_opts o = { .current = current,
				       .probes = ctl->probes,
				       .terminal = ctl->terminal,
				       .now_us = ctl->now_us,
				       .kill = ctl->kill };

	return kt_podstatus_compute(pod, &o, err);
}

/* "Running True": the phase and the Ready condition's status ("False" when
 * there is none), as kubectl's STATUS and READY columns tell them apart */
static int print_brief(const cJSON *st)
{
	const char *phase = kt_json_get_string(st, "phase"), *ready = NULL;
	const cJSON *c;

	cJSON_ArrayForEach(c, kt_json_get(st, "conditions"))
	{
		const char *type = kt_json_get_string(c, "type");

		if (type && strcmp(type, "Ready") == 0) {
			ready = kt_json_get_string(c, "status");
			break;
		}
	}
	if (printf("%s %s\n", phase ? phase : "Unknown", ready ? ready : "False") < 0 ||
	    fflush(stdout) != 0) {
		kt_errmsg("standard output: write error");
		return -1;
	}
	return 0;
}

/* prints a status in one of the -o formats; -1 on a write error (said) */
static int print_one(enum out_mode out, const cJSON *pod, const cJSON *current,
		     const cJSON *st, struct kt_err *err, bool *failed)
{
	cJSON *doc = NULL;
	int rc;

	if (out == OUT_BRIEF) {
		rc = print_brief(st);
	} else if (out == OUT_PATCH) {
		if (kt_podstatus_patch(pod, current, st, &doc, err) < 0)
			return -1;
		rc = kt_emit(doc, KT_JSON_SORTED);
	} else if (out == OUT_POD) {
		doc = kt_json_dup(pod);
		if (!doc || kt_json_set(doc, "status", kt_json_dup(st)) < 0) {
			cJSON_Delete(doc);
			return kt_error(err, "out of memory");
		}
		rc = kt_emit(doc, 0);
	} else {
		rc = kt_emit(st, 0);
	}
	if (rc < 0)
		*failed = true;
	cJSON_Delete(doc);
	return 0;
}

/* prints a status as -o asks, each format in turn; a write error is kept for
 * the exit status */
static int print(const cJSON *pod, const cJSON *current, const cJSON *st, void *arg,
		 struct kt_err *err)
{
	struct ps_ctl *ctl = arg;
	bool failed = false;

	for (size_t i = 0; i < ctl->nout; i++)
		if (print_one(ctl->out[i], pod, current, st, err, &failed) < 0)
			return -1;
	if (failed)
		ctl->rc = KT_EXIT_FAILURE;
	return 0;
}

static int one_shot(struct ps_ctl *ctl, const cJSON *pod, const cJSON *current,
		    struct kt_err *err)
{
	cJSON *st = compute(ctl, pod, current, err);
	int rc = st ? print(pod, current, st, ctl, err) : -1;

	cJSON_Delete(st);
	return rc;
}

/* --stream: results a pod does not probe were dropped; said, and the exit status is 2 */
static void dropped(const struct kt_err *err, void *arg)
{
	struct ps_ctl *ctl = arg;

	kt_errmsg("%s", err->msg);
	ctl->rc = KT_EXIT_USAGE;
}

/* every document of the input; a bad one is reported and the others go on */
static void run(struct ps_ctl *ctl, const cJSON *current, struct kt_podstream *ps)
{
	unsigned flags = ctl->stream ? KT_JSON_STREAM : 0;
	struct kt_err err = { 0 };
	struct kt_json_reader *r =
		kt_json_reader_open(ctl->input, kt_max_input(), flags, &err);
	cJSON *doc = NULL;
	char at[512];
	int got, n = 0;

	if (!r) {
		kt_errmsg("%s", err.msg);
		ctl->rc = kt_exit_code(&err);
		return;
	}
	where(r, ctl->input, at, sizeof(at));
	while ((got = kt_json_reader_next(r, &doc, &err)) > 0) {
		int rc;

		n++;
		where(r, ctl->input, at, sizeof(at));
		if (ctl->stream) {
			rc = kt_podstream_feed(ps, doc, at, &err);
		} else {
			rc = one_shot(ctl, doc, current, &err);
			cJSON_Delete(doc);
		}
		if (rc < 0) {
			kt_errmsg("%s: %s", at, err.msg);
			if (ctl->rc != KT_EXIT_USAGE)
				ctl->rc = kt_exit_code(&err);
		}
	}
	if (got < 0) {
		kt_errmsg("%s", err.msg);
		ctl->rc = kt_exit_code(&err);
	} else if (!n && !ctl->stream) {
		kt_errmsg("%s: no Pod in the input", at);
		ctl->rc = KT_EXIT_USAGE;
	}
	kt_json_reader_close(r);
}

/* ------------------------------------------------------------ --state-dir */

/* --state-dir: what goes with it and what does not */
static void check_state_dir(struct ps_ctl *ctl, bool send, int operands, const char *probes,
			    const char *kill_path)
{
	if (!ctl->state_dir)
		kt_usage_error("--send needs --state-dir: the pods it sends are a state directory's");
	kt_opt_exclusive(ctl->stream, "--stream", true, "--state-dir",
			 "a state directory's pods come as UIDs");
	kt_opt_exclusive(probes, "--probe-results", true, "--state-dir",
			 "the probes' results are the pod's probe.* files");
	if (!send) {
		if (operands != 1)
			kt_usage_error("--state-dir needs the <uid> of one pod (or --send)");
		return;
	}
	if (operands)
		kt_usage_error("unexpected operand: with --send the UIDs are the input's lines");
	kt_opt_exclusive(kill_path, "--kill-status", true, "--send",
			 "each pod's kill status is its kill-status.json");
	kt_opt_exclusive(ctl->terminal, "--terminal", true, "--send",
			 "a line says 'UID terminal' for a pod the pod worker finished");
	if (ctl->nout != 1 || ctl->out[0] != OUT_STATUS)
		kt_usage_error("--send prints what it sent, a line each: -o does not apply");
}

/* one pod of the state directory, computed and printed as -o says */
static void state_one(struct ps_ctl *ctl, const char *uid, const cJSON *current)
{
	struct kt_err err = { 0 };
	struct kt_podrt rt;
	cJSON *st = NULL;

	if (!kt_podrt_uid_ok(uid)) {
		char shown[80];

		kt_plain_text(shown, sizeof(shown), uid);
		kt_errmsg("'%s' is not a pod UID (letters, digits and '-')", shown);
		ctl->rc = KT_EXIT_USAGE;
		return;
	}
	if (kt_podrt_read(ctl->state_dir, uid, &rt, &err) == 0) {
		struct kt_podstatus_opts o = { .current = current ? current
								  : kt_json_get(rt.pod, "status"),
					       .probes = rt.probes,
					       .terminal = ctl->terminal,
					       .now_us = ctl->now_us,
					       .kill = ctl->kill ? ctl->kill : rt.kill };

		st = kt_podstatus_compute(rt.runtime, &o, &err);
		if (st && print(rt.pod, o.current, st, ctl, &err) == 0) {
			cJSON_Delete(st);
			kt_podrt_release(&rt);
			return;
		}
	}
	kt_errmsg("%s", err.msg);
	ctl->rc = err.kind == KT_ERR_NOTFOUND ? KT_EXIT_FAILURE : kt_exit_code(&err);
	cJSON_Delete(st);
	kt_podrt_release(&rt);
}

struct ps_send {
	struct kt_podsync *sync;
	bool invalid, failed;
};

/* what became of a pod's send, a line on standard output; failures on standard error */
static void on_sync(const char *uid, enum kt_podsync_event ev, const char *phase,
		    const char *ready, const struct kt_err *err, void *arg)
{
	struct ps_send *s = arg;
	int n = 0;

	switch (ev) {
	case KT_PODSYNC_PATCHED:
		n = printf("patched %s %s %s\n", uid, phase, ready);
		break;
	case KT_PODSYNC_DELETED:
		n = printf("deleted %s\n", uid);
		break;
	case KT_PODSYNC_GONE:
		n = printf("gone %s\n", uid);
		break;
	case KT_PODSYNC_FAILED:
		kt_errmsg("pod %s: %s", uid, err->msg);
		return;
	}
	if (n < 0 || fflush(stdout) == EOF) {
		kt_errmsg("standard output: write failed");
		s->failed = true;
	}
}

/* one input line: "UID" or "UID terminal" */
static void on_line(struct kt_loop *loop, enum kt_lines_event ev, const char *line, size_t len,
		    long lineno, void *arg)
{
	struct ps_send *s = arg;
	struct kt_err err = { 0 };
	char uid[80], word[16];
	size_t n;

	(void)loop;
	if (ev == KT_LINES_END || ev == KT_LINES_ERROR) {
		if (ev == KT_LINES_ERROR) {
			kt_errmsg("standard input: %.*s", (int)len, line);
			s->failed = true;
		}
		kt_podsync_drain(s->sync);
		return;
	}
	if (ev == KT_LINES_TOO_LONG) {
		kt_errmsg("-:%ld:1: line too long: expected UID [terminal]", lineno);
		s->invalid = true;
		return;
	}
	for (n = 0; n < len && line[n] != ' ' && line[n] != '\t'; n++)
		;
	if (n == 0 || n >= sizeof(uid)) {
		kt_errmsg("-:%ld:1: expected a pod UID", lineno);
		s->invalid = true;
		return;
	}
	memcpy(uid, line, n);
	uid[n] = '\0';
	if (!kt_podrt_uid_ok(uid)) {
		char shown[sizeof(uid)];

		kt_plain_text(shown, sizeof(shown), uid);
		kt_errmsg("-:%ld:1: '%s' is not a pod UID (letters, digits and '-')", lineno,
			  shown);
		s->invalid = true;
		return;
	}
	while (n < len && (line[n] == ' ' || line[n] == '\t'))
		n++;
	if (n < len) {
		size_t w = len - n;

		if (w >= sizeof(word) || (memcpy(word, line + n, w), word[w] = '\0',
					  strcmp(word, "terminal") != 0)) {
			kt_errmsg("-:%ld:%zu: expected 'terminal' or the end of the line",
				  lineno, n + 1);
			s->invalid = true;
			return;
		}
	}
	if (kt_podsync_push(s->sync, uid, n < len, &err) < 0) {
		kt_errmsg("%s", err.msg);
		s->failed = true;
	}
}

/*
 * --send: the kubelet's status manager for the pods of a state directory,
 * told which pod changed a line at a time; it ends once its input has and
 * every send is done
 */
static int run_send(struct ps_ctl *ctl)
{
	struct ps_send s = { 0 };
	struct kt_err err = { 0 };
	struct kt_loop *loop = NULL;
	struct kt_api *api = NULL;
	struct kt_lines *lines = NULL;
	int rc;

	ctl->api.max_reply = kt_max_input();
	ctl->api.program = kt_prog;
	api = kt_api_open(&ctl->api, &err);
	if (api)
		loop = kt_loop_new(&err);
	if (loop)
		s.sync = kt_podsync_new(api, loop, ctl->state_dir, on_sync, &s, &err);
	if (s.sync)
		lines = kt_lines_new(loop, 0, 4096, on_line, &s, &err);
	if (!lines || kt_loop_run(loop, &err) < 0) {
		kt_errmsg("%s", err.msg);
		s.failed = true;
	}
	rc = s.failed || (s.sync && kt_podsync_failures(s.sync) > 0) ? KT_EXIT_FAILURE
	     : s.invalid					 ? KT_EXIT_USAGE
								 : KT_EXIT_OK;
	kt_lines_free(lines);
	kt_podsync_free(s.sync);
	kt_api_close(api);
	kt_loop_free(loop);
	return rc;
}

/* -o: one format or several, comma-separated, each once */
static void parse_output(struct ps_ctl *ctl, const char *arg)
{
	static const char *const modes[] = { "status", "patch", "pod", "brief" };
	const char *p = arg;

	ctl->nout = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		size_t i;

		for (i = 0; i < MAX_OUT; i++)
			if (strlen(modes[i]) == len && strncmp(p, modes[i], len) == 0)
				break;
		if (i == MAX_OUT)
			kt_opt_invalid("--output", arg, "'%.*s' is not status, patch, pod or brief",
				       (int)len, p);
		for (size_t j = 0; j < ctl->nout; j++)
			if (ctl->out[j] == (enum out_mode)i)
				kt_opt_invalid("--output", arg, "names %s twice", modes[i]);
		ctl->out[ctl->nout++] = (enum out_mode)i;
		if (!p[len])
			break;
		p += len + 1;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "probe-results", required_argument, NULL, 'r' },
		{ "current", required_argument, NULL, 'C' },
		{ "terminal", no_argument, NULL, OPT_TERMINAL },
		{ "kill-status", required_argument, NULL, OPT_KILL_STATUS },
		KT_LONGOPT_OUTPUT,
		{ "stream", no_argument, NULL, OPT_STREAM },
		{ "now", required_argument, NULL, OPT_NOW },
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "send", no_argument, NULL, OPT_SEND },
		KT_LONGOPTS_API,
		KT_LONGOPTS_FIELD_MANAGER,
		KT_LONGOPTS_COMMON
	};
	struct ps_ctl ctl = { .out = { OUT_STATUS }, .nout = 1 };
	struct kt_podstatus_opts o = { 0 };
	struct kt_podstream *ps = NULL;
	const char *probes = NULL, *current_path = NULL, *kill_path = NULL;
	struct kt_err err = { 0 };
	cJSON *current = NULL, *kill = NULL;
	bool send = false;
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, "r:C:o:" KT_SHORTOPTS_COMMON, longopts,
				NULL)) != -1) {
		switch (c) {
		case 'r':
			probes = optarg;
			break;
		case 'C':
			current_path = optarg;
			break;
		case OPT_TERMINAL:
			ctl.terminal = true;
			break;
		case OPT_KILL_STATUS:
			kill_path = optarg;
			break;
		case 'o':
			parse_output(&ctl, optarg);
			break;
		case OPT_STREAM:
			ctl.stream = true;
			break;
		case OPT_NOW:
			if (kt_time_parse(optarg, &ctl.now_us, &err) < 0)
				kt_usage_error("--now: %s", err.msg);
			break;
		case OPT_STATE_DIR:
			ctl.state_dir = optarg;
			break;
		case OPT_SEND:
			send = true;
			break;
		default:
			if (!kt_api_option(c, optarg, &ctl.api))
				kt_common_option(c, usage);
		}
	}
	if (argc - optind > 1)
		kt_usage_error("unexpected operand '%s': one <pod> file at most",
			       argv[optind + 1]);
	kt_opt_exclusive(current_path, "--current", ctl.stream, "--stream",
			 "in a stream, each pod's last status printed is its current one");
	kt_opt_exclusive(kill_path, "--kill-status", ctl.stream, "--stream",
			 "a kill status is one pod's");
	if (ctl.state_dir || send)
		check_state_dir(&ctl, send, argc - optind, probes, kill_path);
	ctl.input = optind < argc ? argv[optind] : "-";
	if (!ctl.now_us)
		ctl.now_us = kt_now_us();
	o.terminal = ctl.terminal;
	o.now_us = ctl.now_us;
	ctl.probes = kt_probe_results_new();
	if (ctl.probes)
		ps = kt_podstream_new(ctl.probes, &o, print, dropped, &ctl);
	if (!ps)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	if (probes)
		ctl.rc = load_probes(&ctl, probes);
	if (!ctl.rc && current_path)
		current = load_current(current_path, &ctl.rc);
	if (!ctl.rc && kill_path)
		ctl.kill = kill = load_kill(kill_path, &ctl.rc);
	if (!ctl.rc && send)
		ctl.rc = run_send(&ctl);
	else if (!ctl.rc && ctl.state_dir)
		state_one(&ctl, ctl.input, current);
	else if (!ctl.rc)
		run(&ctl, current, ps);
	cJSON_Delete(current);
	cJSON_Delete(kill);
	kt_podstream_free(ps);
	kt_probe_results_free(ctl.probes);
	return ctl.rc;
}
