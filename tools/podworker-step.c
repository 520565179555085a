/* SPDX-License-Identifier: Apache-2.0 */
/* podworker-step: the kubelet pod worker, one event at a time, its state kept in a file */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kt.h"

#define STEP_BATCH_MAX 16384	/* results held back for one save, at most */
#define STEP_BATCH_MS 100	/* and for this long, or twice the last save */

struct step_ctl {
	const char *state_path;	/* NULL: an empty state kept in memory only */
	bool stream;
	bool show_pod;		/* keep the pod in sync-pod actions */
	const char *input;	/* inline JSON, a file, or NULL/"-" for stdin */
	struct kt_podstore *store;	/* the state directory, locked; NULL without --state */
	struct kt_podworker *pw;
	bool dirty;
	bool may_block;		/* reading more input can wait on a writer */
	int in_fd;
	cJSON **held;		/* results printed once their state is on disk */
	size_t nheld;
	int64_t held_since;
	long nevents;		/* events read so far */
	int64_t save_ms;	/* what the last save cost */
	int rc;
};

static void usage(FILE *out)
{
	fputs("Usage: podworker-step [options] [<event>]\n"
	      "\n"
	      "Apply pod worker events (kubelet pod_workers.go) to a state file and print\n"
	      "what the caller must do next: the work handed out, its actions, the queries.\n"
	      "<event> is one event as JSON text, or a <file> of events ('-' for standard\n"
	      "input, the default). The ops are update (a pod is new, changed or to be\n"
	      "killed), complete (the work handed out is done), sync-known-pods,\n"
	      "node-shutdown, tick (time passed: a node shutdown's next group may\n"
	      "start), query and resume (every pod's work handed out and not completed,\n"
	      "handed out again).\n"
	      "\n"
	      "Options:\n"
	      "  -s, --state=<dir>        keep the state in the directory <dir>, a file per\n"
	      "                           pod, locked while in use and committed atomically\n"
	      "                           (default: empty, not kept)\n"
	      "      --stream             read a stream of events, one result line each\n"
	      "      --show-pod           print the whole pod in sync-pod actions (default:\n"
	      "                           only the pod's uid, at the start of the line)\n",
	      out);
	fputs(KT_USAGE_COMMON, out);
	fputs("\n"
	      "Example: a new pod, then its first sync done:\n"
	      "  podworker-step --state pods.state "
	      "'{\"op\":\"update\",\"updateType\":\"create\",\n"
	      "    \"pod\":{\"metadata\":"
	      "{\"uid\":\"u1\",\"name\":\"web\",\"namespace\":\"default\"}}}'\n"
	      "  podworker-step --state pods.state \\\n"
	      "    '{\"op\":\"complete\",\"uid\":\"u1\",\"work\":\"sync\",\"result\":\"ok\"}'\n"
	      "\n"
	      "See podworker-step(1).\n",
	      out);
}

static void die_damaged(const struct step_ctl *ctl, const char *msg)
{
	kt_die(KT_EXIT_USAGE,
	       "state '%s' is damaged: %s; it was left as it is: restore it, or move it "
	       "aside to start from an empty state",
	       ctl->state_path ? ctl->state_path : "-", msg);
}

static void state_load(struct step_ctl *ctl)
{
	struct kt_err err = { 0 };

	if (!ctl->state_path) {
		ctl->pw = kt_podworker_new();
		if (!ctl->pw)
			kt_die(KT_EXIT_FAILURE, "out of memory");
		return;
	}
	if (kt_podstore_open(ctl->state_path, &ctl->store, &ctl->pw, &err) == 0)
		return;
	if (err.kind == KT_ERR_INPUT && err.about != KT_ERR_ABOUT_FILE)
		die_damaged(ctl, err.msg);
	kt_die(kt_exit_code(&err), "%s", err.msg);
}

/* the state goes to disk first; only then are the results it answers printed */
static void flush(struct step_ctl *ctl)
{
	struct kt_err err = { 0 };
	size_t files;

	if (ctl->store && ctl->dirty) {
		int64_t t0 = kt_mono_ms();

		if (kt_podstore_save(ctl->store, ctl->pw, &files, &err) < 0)
			kt_die(KT_EXIT_FAILURE, "%s", err.msg);
		ctl->save_ms = kt_mono_ms() - t0;
		KT_V(4, "state saved", "path=\"%s\" files=%zu ms=%lld", ctl->state_path, files,
		     (long long)ctl->save_ms);
	}
	ctl->dirty = false;
	for (size_t i = 0; i < ctl->nheld; i++) {
		if (kt_emit(ctl->held[i], 0) < 0)
			exit(KT_EXIT_FAILURE);
		cJSON_Delete(ctl->held[i]);
	}
	ctl->nheld = 0;
}

static void hold(struct step_ctl *ctl, cJSON *res)
{
	if (ctl->nheld == 0)
		ctl->held_since = kt_mono_ms();
	ctl->held[ctl->nheld++] = res;
}

/*
 * Flush before any read that could wait, so no caller waits on a held
 * result.  While input keeps coming, a batch lasts at least twice what a
 * save costs, so saving a large state takes at most a third of the time.
 */
static bool must_flush(const struct step_ctl *ctl)
{
	struct pollfd pfd = { .fd = ctl->in_fd, .events = POLLIN };
	int64_t window = ctl->save_ms * 2 > STEP_BATCH_MS ? ctl->save_ms * 2 : STEP_BATCH_MS;

	if (ctl->nheld == 0)
		return false;
	if (ctl->nheld >= STEP_BATCH_MAX || kt_mono_ms() - ctl->held_since >= window)
		return true;
	if (!ctl->may_block)
		return false;
	if (ctl->in_fd < 0)
		return true;
	return poll(&pfd, 1, 0) <= 0;
}

/* the pod a sync-pod action carries is the one the caller just gave: left out
 * unless --show-pod, so that a result line is the decision, not the pod again */
static void drop_pods(cJSON *res)
{
	cJSON *a;

	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(res, "actions")) {
		const char *name = kt_json_get_string(a, "action");

		if (name && strcmp(name, "sync-pod") == 0)
			cJSON_DeleteItemFromObjectCaseSensitive(a, "pod");
	}
}

/*
 * An update's pod may be a file (podFile: its path), read here, so that a
 * caller that keeps its pods in files hands the worker a path, not the pod
 */
static int pod_from_file(cJSON *ev, struct kt_err *err)
{
	return kt_json_inline_file(ev, "pod", "podFile", kt_max_input(), err) < 0 ? -1 : 0;
}

static void step_one(struct step_ctl *ctl, cJSON *ev)
{
	struct kt_err err = { 0 };
	const char *op = kt_json_get_string(ev, "op");
	cJSON *res = NULL;

	if (pod_from_file(ev, &err) < 0) {
		if (ctl->stream)
			kt_errmsg("event %ld: %s", ctl->nevents, err.msg);
		else
			kt_errmsg("%s", err.msg);
		if (kt_exit_code(&err) > ctl->rc)
			ctl->rc = kt_exit_code(&err);
		return;
	}
	if (kt_podworker_step(ctl->pw, ev, kt_now_us(), &res, &err) < 0) {
		if (kt_podworker_damaged(ctl->pw)) {
			flush(ctl);
			die_damaged(ctl, err.msg);
		}
		/* in a stream, say which event was refused */
		if (ctl->stream && err.about == KT_ERR_ABOUT_EVENT)
			kt_errmsg("event %ld: %s", ctl->nevents, err.msg + err.detail);
		else
			kt_errmsg("%s", err.msg);
		if (kt_exit_code(&err) > ctl->rc)
			ctl->rc = kt_exit_code(&err);
		return;
	}
	KT_V(2, "event", "op=\"%s\" uid=\"%s\"", op ? op : "",
	     kt_json_get_string(res, "uid") ? kt_json_get_string(res, "uid") : "");
	if (!op || strcmp(op, "query") != 0)
		ctl->dirty = true;
	if (!ctl->show_pod)
		drop_pods(res);
	hold(ctl, res);
}

static struct kt_json_reader *open_input(struct step_ctl *ctl, struct kt_err *err)
{
	const char *in = ctl->input;
	unsigned flags = ctl->stream ? KT_JSON_STREAM : 0;
	struct stat st;

	ctl->in_fd = -1;
	ctl->may_block = false;
	if (in && (in[strspn(in, " \t\r\n")] == '{' || in[strspn(in, " \t\r\n")] == '['))
		return kt_json_reader_open_mem("<argument>", in, strlen(in), kt_max_input(), flags,
					       err);
	if (!in || strcmp(in, "-") == 0) {
		ctl->in_fd = STDIN_FILENO;
		ctl->may_block = fstat(STDIN_FILENO, &st) < 0 || !S_ISREG(st.st_mode);
	} else {
		ctl->may_block = stat(in, &st) < 0 || !S_ISREG(st.st_mode);
	}
	return kt_json_reader_open(in, kt_max_input(), flags, err);
}

static int next_is_end(struct kt_json_reader *r, struct kt_err *err)
{
	cJSON *extra = NULL;
	int got = kt_json_reader_next(r, &extra, err);

	cJSON_Delete(extra);
	return got == 0 ? 1 : -1;
}

static int run(struct step_ctl *ctl)
{
	struct kt_err err = { 0 };
	struct kt_json_reader *r = open_input(ctl, &err);
	cJSON *ev = NULL;
	int n = 0, got;

	if (!r)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	ctl->held = calloc(STEP_BATCH_MAX, sizeof(*ctl->held));
	if (!ctl->held)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	for (;;) {
		if (must_flush(ctl))
			flush(ctl);
		got = kt_json_reader_next(r, &ev, &err);
		if (got <= 0)
			break;
		/* one event without --stream: a second is refused before the first runs */
		if (!ctl->stream && (got = next_is_end(r, &err)) < 0) {
			cJSON_Delete(ev);
			break;
		}
		n++;
		ctl->nevents = n;
		step_one(ctl, ev);
		cJSON_Delete(ev);
		ev = NULL;
		/* the input is known to be at its end: never read past that */
		if (!ctl->stream)
			break;
	}
	flush(ctl);
	kt_json_reader_close(r);
	free(ctl->held);
	if (got < 0)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	if (n == 0 && !ctl->stream)
		kt_die(KT_EXIT_USAGE, "no event in the input");
	return ctl->rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state", required_argument, NULL, 's' },
		{ "stream", no_argument, NULL, 'S' },
		{ "show-pod", no_argument, NULL, 'P' },
		KT_LONGOPTS_COMMON
	};
	struct step_ctl ctl = { .in_fd = -1 };
	int c, rc;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, "s:" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (!*optarg)
				kt_opt_invalid("--state", optarg, "must not be empty");
			ctl.state_path = optarg;
			break;
		case 'S': /* --stream: long only, -S is --sort-keys elsewhere */
			ctl.stream = true;
			break;
		case 'P':
			ctl.show_pod = true;
			break;
		default:
			kt_common_option(c, usage);
		}
	}
	if (argc - optind > 1)
		kt_usage_error("too many operands: one <event> at most");
	ctl.input = optind < argc ? argv[optind] : NULL;
	state_load(&ctl);
	rc = run(&ctl);
	kt_podworker_free(ctl.pw);
	kt_podstore_close(ctl.store);
	return rc;
}
