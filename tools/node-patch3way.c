/* SPDX-License-Identifier: Apache-2.0 */
/* node-patch3way: a node's status patched three ways, as virtual-kubelet's node controller does */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"
#include "kt.h"

enum p3_output {
	OUT_DEFAULT = 0,
	OUT_PATCH,
	OUT_NODE,
	OUT_BOTH,
};

enum {
	OPT_CURRENT = KT_OPT_TOOL,
	OPT_NODE,
	OPT_SEND,
	OPT_HEARTBEAT,
	OPT_REGISTER,
	OPT_STREAM,
	OPT_REMOVE_CONDITION,
};

struct p3_ctl {
	struct kt_api_opts api;
	const char *current_path;	/* --current */
	const char *node;		/* --node */
	const char *desired_path;	/* operand, "-" by default */
	enum p3_output output;
	bool send, heartbeat, reg, stream;
	unsigned flags;			/* enum kt_nodesend_flags from the options */
	const char **remove;		/* --remove-condition types, NULL-terminated */
	size_t nremove;

	cJSON *current;			/* --current, loaded once */
	struct kt_api *client;		/* when the API is used */
	struct kt_schema *schema;	/* the built-in Node schema */
	int status;			/* exit status so far */
};

static void usage(FILE *out)
{
	fputs("Usage: node-patch3way [options] [<desired>]\n"
	      "\n"
	      "Compute, print or send the three-way strategic merge patch that brings a\n"
	      "node's status to <desired> (default: standard input), as virtual-kubelet's\n"
	      "node controller does with its last-applied annotations.\n"
	      "\n"
	      "Options:\n"
	      "      --current=<file>     the node as the API server has it, from <file>\n"
	      "      --node=<name>        fetch the node <name> (default: desired's name)\n"
	      "  -o, --output=<what>      print patch, node or both (default patch;\n"
	      "                           node with --send)\n"
	      "      --send               PATCH nodes/<name>/status and print the result\n"
	      "      --heartbeat          stamp lastHeartbeatTime with the current time;\n"
	      "                           without it the server's condition times stay\n"
	      "      --register           with --send, create a missing node from <desired>\n"
	      "      --stream             read many desired nodes; the latest one per node\n"
	      "                           wins while a send is in flight\n"
	      "      --remove-condition=<type>\n"
	      "                           delete the node's condition <type> that another\n"
	      "                           writer added (repeatable)\n"
	      KT_USAGE_API
	      KT_USAGE_FIELD_MANAGER
	      KT_USAGE_COMMON
	      "\n"
	      "Example:\n"
	      "  node-patch3way --heartbeat --send < desired-node.json\n"
	      "\n"
	      "See node-patch3way(1).\n", out);
}

/* ------------------------------------------------------------- helpers */

/* prints what -o asks for; patch may be NULL (nothing computed) */
static int emit_result(const struct p3_ctl *ctl, const cJSON *patch, const cJSON *node)
{
	enum p3_output o = ctl->output;
	cJSON *both;
	int rc;

	if (o == OUT_DEFAULT)
		o = ctl->send ? OUT_NODE : OUT_PATCH;
	if (o == OUT_PATCH)
		return kt_emit(patch, 0);
	if (o == OUT_NODE)
		return kt_emit(node, 0);
	both = cJSON_CreateObject();
	if (!both || kt_json_set(both, "patch", kt_json_dup(patch)) < 0 ||
	    kt_json_set(both, "node", kt_json_dup(node)) < 0) {
		cJSON_Delete(both);
		kt_errmsg("out of memory");
		return -1;
	}
	rc = kt_emit(both, 0);
	cJSON_Delete(both);
	return rc;
}

static void note_failure(struct p3_ctl *ctl, const struct kt_err *err)
{
	int code = kt_exit_code(err);

	kt_errmsg("%s", err->msg);
	if (code > ctl->status)
		ctl->status = code;
}

/* -v 1: each condition asked to be removed that node does not have */
static void say_absent(const struct p3_ctl *ctl, const cJSON *node)
{
	const cJSON *conds = kt_json_path(node, "status.conditions"), *c;
	const char *name = kt_json_get_string(kt_json_get_object(node, "metadata"), "name");

	for (size_t i = 0; i < ctl->nremove; i++) {
		const char *t = NULL;

		cJSON_ArrayForEach(c, conds) {
			t = kt_json_get_string(c, "type");
			if (t && strcmp(t, ctl->remove[i]) == 0)
				break;
		}
		if (!c)
			KT_V(1, "no such condition, nothing to remove", "node=\"%s\" type=\"%s\"",
			     name ? name : "", ctl->remove[i]);
	}
}

/* ------------------------------------------------------------- offline */

static int offline_one(struct p3_ctl *ctl, const cJSON *desired, struct kt_err *err)
{
	cJSON *patch = NULL, *node = NULL;
	bool want_node = ctl->output == OUT_NODE || ctl->output == OUT_BOTH;
	int rc = -1;

	if (kt_nodesend_compute(desired, ctl->current, ctl->schema, ctl->flags,
				(const char *const *)ctl->remove, kt_now_us(), &patch,
				want_node ? &node : NULL, err) < 0)
		goto out;
	say_absent(ctl, ctl->current);
	if (emit_result(ctl, patch, node) < 0) {
		kt_error(err, "cannot write the result");
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(node);
	cJSON_Delete(patch);
	return rc;
}

/* ---------------------------------------------------------- over the API */

/* GET (and with --send compute, PATCH, again on 409), then print */
static int send_one(struct p3_ctl *ctl, const cJSON *desired, const char *name,
		    struct kt_err *err)
{
	struct kt_nodesend s;
	cJSON *copy = kt_json_dup(desired);
	int rc = -1;

	kt_nodesend_init(&s, name, ctl->schema, ctl->flags | (ctl->send ? 0 : KT_NODESEND_READ));
	s.remove = (const char *const *)ctl->remove;
	if (!copy)
		return kt_error(err, "out of memory");
	kt_nodesend_begin(&s, copy);
	if (kt_nodesend_run(&s, ctl->client) < 0) {
		*err = s.err;
		goto out;
	}
	if (!ctl->send) {
		/* the patch against the node as fetched now */
		ctl->current = s.current;
		s.current = NULL;
		rc = offline_one(ctl, desired, err);
		cJSON_Delete(ctl->current);
		ctl->current = NULL;
		goto out;
	}
	KT_V(2, "node status patched", "node=\"%s\" attempts=%d", name, s.writes);
	say_absent(ctl, s.current);
	if (emit_result(ctl, s.patch, s.node) < 0) {
		kt_error(err, "cannot write the result");
		goto out;
	}
	rc = 0;
out:
	kt_nodesend_release(&s);
	return rc;
}

/* one desired document, by whichever way the options say */
static void handle(struct p3_ctl *ctl, const cJSON *desired)
{
	struct kt_err err = { 0 };
	const char *name;
	int rc = -1;

	if (ctl->current_path) {
		if (!cJSON_IsObject(desired))
			kt_nodesend_target(desired, ctl->node, ctl->current, &err);
		else
			rc = offline_one(ctl, desired, &err);
	} else if ((name = kt_nodesend_target(desired, ctl->node, ctl->current, &err))) {
		rc = send_one(ctl, desired, name, &err);
	}
	if (rc < 0)
		note_failure(ctl, &err);
}

/* ------------------------------------------------- --stream --send on loop */

struct p3_stream {
	struct p3_ctl *ctl;
	struct kt_loop *loop;
	struct kt_nodestream *ns;	/* the sends, the latest state per node winning */
	struct kt_docpush push;		/* the documents, as bytes arrive */
};

static void on_sent(const char *name, const struct kt_nodesend *s, void *arg)
{
	struct p3_ctl *ctl = arg;
	struct kt_err e;

	if (s->result != KT_NODESEND_FAILED) {
		say_absent(ctl, s->current);
		if (emit_result(ctl, s->patch, s->node) < 0)
			ctl->status = KT_EXIT_FAILURE;
		return;
	}
	e = s->err;
	kt_err_prefix(&e, "node '%s'", name);
	note_failure(ctl, &e);
}

/* one desired document (taken): to its node's send */
static void dispatch(cJSON *doc, void *arg)
{
	struct p3_stream *st = arg;
	struct kt_err err = { 0 };
	const char *name = kt_nodesend_target(doc, st->ctl->node, st->ctl->current, &err);

	if (!name) {
		cJSON_Delete(doc);
		note_failure(st->ctl, &err);
	} else if (kt_nodestream_push(st->ns, name, doc, &err) < 0) {
		note_failure(st->ctl, &err);
	}
}

static void on_input_end(const struct kt_err *err, void *arg)
{
	struct p3_stream *st = arg;

	if (err)
		note_failure(st->ctl, err);
}

static void p3_stream_send(struct p3_ctl *ctl)
{
	struct p3_stream st = { .ctl = ctl };
	const char *path = ctl->desired_path;
	struct kt_err err = { 0 };
	int fd = 0;

	if (strcmp(path, "-") != 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			kt_die(KT_EXIT_FAILURE, "cannot open '%s': %s", path, strerror(errno));
	}
	kt_docpush_init(&st.push, fd ? path : "<stdin>", kt_max_input());
	st.loop = kt_loop_new(&err);
	if (st.loop)
		st.ns = kt_nodestream_new(ctl->client, st.loop, ctl->schema, ctl->flags,
					  (const char *const *)ctl->remove, on_sent, ctl, &err);
	if (!st.ns || kt_docpush_watch(&st.push, st.loop, fd, dispatch, on_input_end, &st,
				       &err) < 0)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (kt_loop_run(st.loop, &err) < 0)
		note_failure(ctl, &err);
	kt_nodestream_free(st.ns);
	kt_docpush_release(&st.push);
	if (fd > 0)
		close(fd);
	kt_loop_free(st.loop);
}

/* ------------------------------------------------------------------ main */

static void parse_args(struct p3_ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "current", required_argument, NULL, OPT_CURRENT },
		{ "node", required_argument, NULL, OPT_NODE },
		KT_LONGOPT_OUTPUT,
		{ "send", no_argument, NULL, OPT_SEND },
		{ "heartbeat", no_argument, NULL, OPT_HEARTBEAT },
		{ "register", no_argument, NULL, OPT_REGISTER },
		{ "stream", no_argument, NULL, OPT_STREAM },
		{ "remove-condition", required_argument, NULL, OPT_REMOVE_CONDITION },
		KT_LONGOPTS_API,
		KT_LONGOPTS_FIELD_MANAGER,
		KT_LONGOPTS_COMMON
	};
	struct kt_err err = { 0 };
	int c;

	/* at most one type per argument, and the NULL at the end */
	ctl->remove = calloc((size_t)argc + 1, sizeof(*ctl->remove));
	if (!ctl->remove)
		kt_die(KT_EXIT_FAILURE, "out of memory");
	while ((c = getopt_long(argc, argv, "o:" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CURRENT: ctl->current_path = optarg; break;
		case OPT_NODE: ctl->node = optarg; break;
		case OPT_SEND: ctl->send = true; break;
		case OPT_HEARTBEAT: ctl->heartbeat = true; break;
		case OPT_REGISTER: ctl->reg = true; break;
		case OPT_STREAM: ctl->stream = true; break;
		case OPT_REMOVE_CONDITION:
			if (kt_nodestatus_condition_type_check(optarg, &err) < 0)
				kt_usage_error("%s", err.msg);
			ctl->remove[ctl->nremove++] = optarg;
			break;
		case 'o':
			/* in enum p3_output's order, after OUT_DEFAULT */
			ctl->output = OUT_PATCH + kt_opt_choice(
				"--output", optarg,
				(const char *const[]){ "patch", "node", "both", NULL });
			break;
		default:
			if (!kt_api_option(c, optarg, &ctl->api))
				kt_common_option(c, usage);
		}
	}
	if (argc - optind > 1)
		kt_usage_error("too many operands: expected at most one <desired>");
	ctl->desired_path = optind < argc ? argv[optind] : "-";
	ctl->flags = (ctl->heartbeat ? KT_NODESEND_HEARTBEAT : 0) |
		     (ctl->reg ? KT_NODESEND_REGISTER : 0);
	kt_opt_exclusive(ctl->current_path, "--current", ctl->node, "--node", NULL);
	if (ctl->current_path && ctl->send)
		kt_usage_error("--send reads the node from the API server: drop --current");
	if (ctl->reg && !ctl->send)
		kt_usage_error("--register needs --send");
	if (ctl->node && kt_node_name_check(ctl->node, &err) < 0)
		kt_usage_error("%s", err.msg);
}

/* the documents one by one from DESIRED: exactly one, or a stream */
static void each_desired(struct p3_ctl *ctl)
{
	struct kt_err err = { 0 };
	struct kt_json_reader *r;
	cJSON *doc = NULL;
	int rc;

	if (!ctl->stream) {
		doc = kt_json_read_file(ctl->desired_path, kt_max_input(), &err);
		if (!doc)
			note_failure(ctl, &err);
		else
			handle(ctl, doc);
		cJSON_Delete(doc);
		return;
	}
	r = kt_json_reader_open(ctl->desired_path, kt_max_input(), KT_JSON_STREAM, &err);
	if (!r) {
		note_failure(ctl, &err);
		return;
	}
	for (;;) {
		rc = kt_json_reader_next(r, &doc, &err);
		if (rc != 1)
			break;
		handle(ctl, doc);
		cJSON_Delete(doc);
		doc = NULL;
	}
	kt_json_reader_close(r);
	if (rc < 0)
		note_failure(ctl, &err);
}

int main(int argc, char **argv)
{
	struct p3_ctl ctl = { 0 };
	struct kt_err err = { 0 };

	kt_init(argv);
	parse_args(&ctl, argc, argv);
	ctl.schema = kt_schema_builtin("Node", &err);
	if (!ctl.schema)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (ctl.current_path) {
		ctl.current = kt_json_read_file(ctl.current_path, kt_max_input(), &err);
		if (!ctl.current)
			kt_die(kt_exit_code(&err), "%s", err.msg);
	} else {
		ctl.api.max_reply = kt_max_input();
		ctl.api.program = kt_prog;
		ctl.client = kt_api_open(&ctl.api, &err);
		if (!ctl.client)
			kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	}
	if (ctl.stream && ctl.send)
		p3_stream_send(&ctl);
	else
		each_desired(&ctl);
	kt_api_close(ctl.client);
	cJSON_Delete(ctl.current);
	kt_schema_free(ctl.schema);
	free(ctl.remove);
	return ctl.status;
}
