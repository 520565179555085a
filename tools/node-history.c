/* SPDX-License-Identifier: Apache-2.0 */
/* node-history: a node's status changes recorded as git commits, and read back */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "history_git.h"
#include "kt.h"

enum {
	OPT_REPO = KT_OPT_TOOL,
	OPT_KEEP_HEARTBEATS,
	OPT_ONCE,
	OPT_ALL,
	OPT_SINCE,
};

struct history_ctl {
	struct kt_api_opts api;
	const char *repo;
	const char *cmd;
	char **nodes;
	int n_nodes;
	bool keep_heartbeats;
	bool once;
	bool all;
	const char *since;
	const char *output;
	bool json;
	int64_t since_us;
	struct kt_hrepo *r;
	struct kt_hrec *rec;
	struct kt_api *client;
	struct kt_refl refl;
	bool started; /* the first list is done */
	bool done;    /* --once: the first list is recorded */
	long commits;
	int status;
};

static const char usage_head[] =
	"Usage: node-history record [options] [<node>...|--all]\n"
	"       node-history log [options] <node>\n"
	"\n"
	"Record a node's status changes as git commits, one file per node, with\n"
	"the field manager that made each change as its author; read them back.\n"
	"\n"
	"Options:\n"
	"      --repo=<dir>         the git repository (default ./node-history,\n"
	"                           created by record if missing)\n"
	"      --all                record every node (record)\n"
	"      --once               list once, commit what differs, exit; without\n"
	"                           it record follows the nodes (record)\n"
	"      --keep-heartbeats    keep what changes on every heartbeat\n"
	"                           (lastHeartbeatTime, resourceVersion,\n"
	"                           managedFields) (record)\n"
	"      --since=<time>       only changes from an RFC 3339 time or from a\n"
	"                           duration ago (log)\n"
	"  -o, --output=<format>    text (default) or json: one JSON line each (log)\n";

static const char usage_tail[] =
	"\n"
	"Example:\n"
	"  node-history record --repo=/var/lib/node-history --all\n"
	"  node-history log --repo=/var/lib/node-history --since=1h vk-1\n"
	"\n"
	"See node-history(1).\n";

static void usage(FILE *out)
{
	fputs(usage_head, out);
	fputs(KT_USAGE_API, out);
	fputs(KT_USAGE_COMMON, out);
	fputs(usage_tail, out);
}

/* ------------------------------------------------------------------ record */

/* a pack that fails leaves loose objects, which git reads as well: a warning */
static void pack(struct history_ctl *ctl, long min_commits)
{
	struct kt_err err = { 0 };

	if (kt_hrepo_pack(ctl->r, min_commits, &err) < 0)
		kt_warnmsg("%s", err.msg);
}

/* one node's state (NULL: it is gone): committed and printed when it changed */
static int observe(struct history_ctl *ctl, const char *name, const cJSON *node)
{
	struct kt_err err = { 0 };
	cJSON *commit = NULL;
	int rc;

	rc = kt_hrec_observe(ctl->rec, name, node, kt_now_us(), &commit, &err);
	if (rc < 0) {
		kt_errmsg("node/%s: %s", name, err.msg);
		return -1;
	}
	if (rc > 0) {
		KT_V(2, "commit", "node=\"%s\" author=\"%s\"", name,
		     kt_json_get_string(commit, "author"));
		rc = kt_emit(commit, 0);
		if (++ctl->commits % KT_HREC_PACK_EVERY == 0)
			pack(ctl, 0);
	}
	cJSON_Delete(commit);
	return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ follow */

static bool wanted(const struct history_ctl *ctl, const char *name)
{
	if (ctl->all)
		return true;
	for (int i = 0; i < ctl->n_nodes; i++)
		if (!strcmp(ctl->nodes[i], name))
			return true;
	return false;
}

static bool followed(const struct history_ctl *ctl, const char *name)
{
	struct kt_refl_obj *const *objs;
	size_t n;

	objs = kt_refl_objects(&ctl->refl, &n);
	for (size_t i = 0; i < n; i++)
		if (objs[i] && !strcmp(objs[i]->key, name))
			return true;
	return false;
}

/* after the first list: what the repository has and the server has not is gone */
static int catch_up(struct history_ctl *ctl)
{
	struct kt_err err = { 0 };
	cJSON *names = NULL, *n;
	int rc = 0;

	if (ctl->all) {
		names = kt_hrepo_names(ctl->r, &err);
		if (!names) {
			kt_errmsg("%s", err.msg);
			return -1;
		}
		cJSON_ArrayForEach(n, names)
			if (!followed(ctl, n->valuestring) && observe(ctl, n->valuestring, NULL) < 0)
				rc = -1;
		cJSON_Delete(names);
		return rc;
	}
	for (int i = 0; i < ctl->n_nodes; i++)
		if (!followed(ctl, ctl->nodes[i]) && observe(ctl, ctl->nodes[i], NULL) < 0)
			rc = -1;
	return rc;
}

static int follow_event(const char *type, const cJSON *node, void *arg)
{
	struct history_ctl *ctl = arg;
	const char *name = kt_json_get_string(kt_json_get_object(node, "metadata"), "name");
	struct kt_err err = { 0 };

	if (!strcmp(type, "BOOKMARK")) {
		/* the first one ends the first list: --once is done then */
		if (!ctl->started) {
			ctl->started = true;
			if (catch_up(ctl) < 0)
				ctl->status = KT_EXIT_FAILURE;
			if (ctl->once) {
				ctl->done = true;
				return -1; /* stops the reflector */
			}
		}
		return 0;
	}
	if (!name || kt_node_name_check(name, &err) < 0) {
		kt_warnmsg("a node event without a valid name: %s", name ? err.msg : "no name");
		return 0;
	}
	if (wanted(ctl, name) && observe(ctl, name, strcmp(type, "DELETED") ? node : NULL) < 0)
		ctl->status = KT_EXIT_FAILURE;
	return 0;
}

/* follow the nodes until a signal, the end of the first list with --once, or
 * until the watch cannot go on */
static int follow(struct history_ctl *ctl)
{
	char path[512];
	/* a follower outlives a server that is down, its first list included;
	 * --once, for cron, fails at once */
	struct kt_refl_opts o = { .path = path,
				  .flags = KT_REFL_BOOKMARKS |
					   (ctl->once ? 0 : KT_REFL_WAIT_FOR_SERVER) };
	struct kt_err err = { 0 };
	int rc = -1;

	/* one node: the server filters; several: all of them, filtered here */
	if (!ctl->all && ctl->n_nodes == 1)
		snprintf(path, sizeof(path), "/api/v1/nodes?fieldSelector=metadata.name%%3D%s",
			 ctl->nodes[0]);
	else
		snprintf(path, sizeof(path), "/api/v1/nodes");
	if (kt_refl_init(&ctl->refl, &o, follow_event, ctl, (unsigned)kt_now_us(), &err) < 0) {
		kt_errmsg("%s", err.msg);
		return -1;
	}
	if (kt_refl_run(&ctl->refl, ctl->client, &err) == 0 || ctl->done)
		rc = 0;
	else
		kt_errmsg("nodes: %s", err.msg);
	kt_refl_release(&ctl->refl);
	return rc;
}

static int record(struct history_ctl *ctl)
{
	struct kt_err err = { 0 };
	int rc = 0;

	ctl->r = kt_hrepo_open(ctl->repo, true, &err);
	if (!ctl->r)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	ctl->rec = kt_hrec_new(ctl->r, ctl->keep_heartbeats, &err);
	ctl->api.max_reply = kt_max_input();
	ctl->api.program = kt_prog;
	ctl->client = ctl->rec ? kt_api_open(&ctl->api, &err) : NULL;
	if (!ctl->client) {
		kt_hrec_free(ctl->rec);
		kt_hrepo_close(ctl->r);
		kt_die(kt_exit_code(&err), "%s", err.msg);
	}
	rc = follow(ctl);
	pack(ctl, KT_HREC_PACK_AT_EXIT);
	kt_api_close(ctl->client);
	kt_hrec_free(ctl->rec);
	kt_hrepo_close(ctl->r);
	return rc < 0 ? KT_EXIT_FAILURE : ctl->status;
}

/* --------------------------------------------------------------------- log */

static bool in_timeline(const cJSON *change)
{
	return strcmp(kt_json_get_string(change, "kind"), "field") != 0;
}

/*
 * Text the node's writers chose, for a terminal: ESC as ^[ and a carriage
 * return as \r, as kubectl prints it, and here every other control character
 * too (a line break as \n, C0 and DEL in caret notation, C1 as \u0080..), so
 * no escape sequence reaches the terminal and a change stays on its line.
 */
static void put_escaped(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\r')
			fputs("\\r", stdout);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			printf("^%c", *p ^ 0x40);
		else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			printf("\\u%04x", *++p);
		else
			putchar(*p);
	}
}

static int log_entry(int64_t when_us, const char *author, const cJSON *changes, void *arg)
{
	struct history_ctl *ctl = arg;
	const cJSON *c;
	char when[40];

	kt_time_format(when_us, false, when, sizeof(when));
	cJSON_ArrayForEach(c, changes) {
		if (!in_timeline(c))
			continue;
		if (ctl->json) {
			cJSON *line = kt_json_dup(c);
			cJSON *t = cJSON_DetachItemFromObjectCaseSensitive(line, "time");

			cJSON_DeleteItemFromObjectCaseSensitive(line, "owner");
			/* the condition's own time, as data: the node wrote it */
			if (t)
				cJSON_AddItemToObject(line, "lastTransitionTime", t);
			if (!line || !cJSON_AddStringToObject(line, "observed", when) ||
			    !cJSON_AddStringToObject(line, "author", author) ||
			    kt_emit(line, KT_JSON_SORTED) < 0) {
				cJSON_Delete(line);
				return -1;
			}
			cJSON_Delete(line);
		} else {
			char *s = kt_history_change_text(c);

			if (!s)
				return -1;
			printf("%s  ", when);
			put_escaped(author);
			printf("%*s  ", strlen(author) < 24 ? (int)(24 - strlen(author)) : 0, "");
			put_escaped(s);
			putchar('\n');
			free(s);
		}
	}
	return 0;
}

static int show_log(struct history_ctl *ctl)
{
	struct kt_err err = { 0 };
	int rc;

	ctl->r = kt_hrepo_open(ctl->repo, false, &err);
	if (!ctl->r)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	rc = kt_hrepo_log(ctl->r, ctl->nodes[0], ctl->since_us, log_entry, ctl, &err);
	kt_hrepo_close(ctl->r);
	if (rc < 0 && err.msg[0])
		kt_die(kt_exit_code(&err), "%s", err.msg);
	return rc < 0 ? KT_EXIT_FAILURE : KT_EXIT_OK;
}

/* ------------------------------------------------------------------ options */

static int64_t parse_since(const char *arg)
{
	struct kt_err err = { 0 };
	int64_t us, ms;

	if (kt_time_parse(arg, &us, &err) == 0)
		return us;
	if (kt_duration_parse(arg, &ms, &err) == 0 && ms >= 0)
		return kt_now_us() - ms * 1000;
	kt_opt_invalid("--since", arg, "expected an RFC 3339 time or a duration");
}

static void check_operands(struct history_ctl *ctl)
{
	struct kt_err err = { 0 };
	bool rec = !strcmp(ctl->cmd, "record");

	if (!rec && strcmp(ctl->cmd, "log"))
		kt_usage_error("unknown command '%s': expected record or log", ctl->cmd);
	if (rec && (ctl->since || ctl->output))
		kt_usage_error("%s applies to log only", ctl->since ? "--since" : "--output");
	if (!rec && (ctl->once || ctl->all || ctl->keep_heartbeats))
		kt_usage_error("%s applies to record only", ctl->once ? "--once"
							    : ctl->all ? "--all"
									: "--keep-heartbeats");
	if (rec && ctl->all && ctl->n_nodes)
		kt_usage_error("--all takes no <node>");
	if (rec && !ctl->all && !ctl->n_nodes)
		kt_usage_error("missing <node> or --all");
	if (!rec && ctl->n_nodes != 1)
		kt_usage_error(ctl->n_nodes ? "log takes one <node>" : "missing <node>");
	for (int i = 0; i < ctl->n_nodes; i++)
		if (kt_node_name_check(ctl->nodes[i], &err) < 0)
			kt_usage_error("%s", err.msg);
	ctl->json = ctl->output &&
		    kt_opt_choice("--output", ctl->output,
				  (const char *const[]){ "text", "json", NULL }) == 1;
	if (ctl->since)
		ctl->since_us = parse_since(ctl->since);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "repo", required_argument, NULL, OPT_REPO },
		{ "keep-heartbeats", no_argument, NULL, OPT_KEEP_HEARTBEATS },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "since", required_argument, NULL, OPT_SINCE },
		KT_LONGOPT_OUTPUT,
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON
	};
	struct history_ctl ctl = { .repo = "node-history" };
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, "o:" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_REPO:
			ctl.repo = optarg;
			break;
		case OPT_KEEP_HEARTBEATS:
			ctl.keep_heartbeats = true;
			break;
		case OPT_ONCE:
			ctl.once = true;
			break;
		case OPT_ALL:
			ctl.all = true;
			break;
		case OPT_SINCE:
			ctl.since = optarg;
			break;
		case 'o':
			ctl.output = optarg;
			break;
		default:
			if (!kt_api_option(c, optarg, &ctl.api))
				kt_common_option(c, usage);
		}
	}
	if (optind == argc)
		kt_usage_error("missing command: record or log");
	ctl.cmd = argv[optind];
	ctl.nodes = argv + optind + 1;
	ctl.n_nodes = argc - optind - 1;
	check_operands(&ctl);
	return !strcmp(ctl.cmd, "record") ? record(&ctl) : show_log(&ctl);
}
