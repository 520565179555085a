/* SPDX-License-Identifier: Apache-2.0 */
/* node-patch3way: a node's status patched three ways, as virtual-kubelet's node controller does */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

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
};

struct p3_ctl {
	struct kt_api_opts api;
	const char *current_path;	/* --current */
	const char *node;		/* --node */
	const char *desired_path;	/* operand, "-" by default */
	enum p3_output output;
	bool send, heartbeat, reg, stream;
	unsigned flags;			/* enum kt_nodesend_flags from the options */

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
	      KT_USAGE_API
	      KT_USAGE_COMMON
	      "\n"
	      "Example:\n"
	      "  node-patch3way --heartbeat --send < desired-node.json\n"
	      "\n"
	      "See node-patch3way(1).\n", out);
}

/* ------------------------------------------------------------- helpers */

/* the node a desired document is for: --node, else its name, else CURRENT's */
static const char *target_name(const struct p3_ctl *ctl, const cJSON *desired)
{
	const char *name = ctl->node;

	if (!name)
		name = kt_json_get_string(kt_json_get_object(desired, "metadata"), "name");
	if (!name && ctl->current)
		name = kt_json_get_string(kt_json_get_object(ctl->current, "metadata"), "name");
	return name;
}

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

/* ------------------------------------------------------------- offline */

static int offline_one(struct p3_ctl *ctl, const cJSON *desired, struct kt_err *err)
{
	cJSON *patch = NULL, *node = NULL;
	bool want_node = ctl->output == OUT_NODE || ctl->output == OUT_BOTH;
	int rc = -1;

	if (kt_nodesend_compute(desired, ctl->current, ctl->schema, ctl->flags, kt_now_us(),
				&patch, want_node ? &node : NULL, err) < 0)
		goto out;
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
	int rc;

	if (!cJSON_IsObject(desired)) {
		kt_error_kind(&err, KT_ERR_INPUT, "desired: expected a node object, got %s",
			      kt_json_type_name(desired));
		note_failure(ctl, &err);
		return;
	}
	if (ctl->current_path) {
		rc = offline_one(ctl, desired, &err);
	} else {
		name = target_name(ctl, desired);
		if (!name)
			rc = kt_error_kind(&err, KT_ERR_INPUT,
					   "desired: no metadata.name; name the node with --node");
		else if (kt_lease_check_name(name, &err) == 0)
			rc = send_one(ctl, desired, name, &err);
		else
			rc = -1;
	}
	if (rc < 0)
		note_failure(ctl, &err);
}

/* ------------------------------------------------- --stream --send on loop */

/*
 * Desired nodes keep coming while sends are in flight.  Each node has one
 * send at a time (GET, compute, PATCH, again on 409) and one pending slot:
 * a document that arrives meanwhile replaces whatever waits there, so the
 * writer is never blocked and the node gets the latest state next.
 */
struct p3_node {
	struct p3_node *next;
	struct p3_stream *st;		/* the stream it belongs to */
	char *name;
	cJSON *pending;			/* latest desired not yet started */
	struct kt_nodesend send;	/* the send running, if busy */
	struct kt_api_call *call;	/* the request in flight, if any */
	bool busy;
};

struct p3_stream {
	struct p3_ctl *ctl;
	struct kt_loop *loop;
	struct p3_node *nodes;
	int fd;
	int fd_flags;			/* as found, restored at the end (-1: untouched) */
	bool watching, yaml, started;
	char *buf;			/* bytes read and not yet made documents */
	size_t len, cap;
	size_t scan;			/* JSON splitter state over buf */
	int depth;
	bool in_str, esc;
};

static void node_start(struct p3_stream *st, struct p3_node *n);

static void node_fail(struct p3_stream *st, struct p3_node *n, const struct kt_err *err)
{
	struct kt_err e = *err;

	kt_err_prefix(&e, "node '%s'", n->name);
	note_failure(st->ctl, &e);
}

static void node_finish(struct p3_stream *st, struct p3_node *n)
{
	n->busy = false;
	n->call = NULL;
	if (n->pending)
		node_start(st, n);
}

static void on_reply(struct kt_api_call *call, struct kt_api_resp *resp,
		     const struct kt_err *err, void *arg);

/* sends the request the node's send asks for next */
static void node_send(struct p3_stream *st, struct p3_node *n)
{
	struct kt_nodesend_req nr;
	struct kt_api_req req = { 0 };
	struct kt_err err = { 0 };

	if (kt_nodesend_request(&n->send, &nr, &err) == 0) {
		req.method = nr.method;
		req.path = nr.path;
		req.content_type = nr.content_type;
		req.body = nr.body;
		req.body_len = nr.body_len;
		n->call = kt_api_start(st->ctl->client, st->loop, &req, on_reply, n, &err);
		if (n->call)
			return;
	}
	node_fail(st, n, &err);
	node_finish(st, n);
}

static void on_reply(struct kt_api_call *call, struct kt_api_resp *resp,
		     const struct kt_err *err, void *arg)
{
	struct p3_node *n = arg;
	struct p3_stream *st = n->st;
	struct kt_nodesend *s = &n->send;
	struct kt_nodesend_reply r = { .json = resp->json, .err = err };

	n->call = NULL;
	if (kt_nodesend_reply(s, &r, kt_now_us()) == KT_NODESEND_SEND) {
		if (s->conflict) {
			KT_V(4, "conflict, reading the node again", "node=\"%s\" attempt=%d",
			     n->name, s->writes);
			/* a newer state came meanwhile: it is the one to send */
			if (n->pending)
				kt_nodesend_replace(s, n->pending);
			n->pending = NULL;
		}
		node_send(st, n);
		return;
	}
	if (s->result == KT_NODESEND_FAILED) {
		node_fail(st, n, &s->err);
	} else {
		KT_V(2, "node status patched", "node=\"%s\" attempts=%d", n->name, s->writes);
		if (emit_result(st->ctl, s->patch, s->node) < 0)
			st->ctl->status = KT_EXIT_FAILURE;
	}
	node_finish(st, n);
}

static void node_start(struct p3_stream *st, struct p3_node *n)
{
	n->busy = true;
	kt_nodesend_begin(&n->send, n->pending);
	n->pending = NULL;
	node_send(st, n);
}

/* one desired document: into its node's pending slot, started if idle */
static void dispatch(struct p3_stream *st, cJSON *doc)
{
	struct kt_err err = { 0 };
	struct p3_node *n;
	const char *name;

	if (!cJSON_IsObject(doc)) {
		kt_error_kind(&err, KT_ERR_INPUT, "desired: expected a node object, got %s",
			      kt_json_type_name(doc));
		goto fail;
	}
	name = target_name(st->ctl, doc);
	if (!name) {
		kt_error_kind(&err, KT_ERR_INPUT,
			      "desired: no metadata.name; name the node with --node");
		goto fail;
	}
	if (kt_lease_check_name(name, &err) < 0)
		goto fail;
	for (n = st->nodes; n && strcmp(n->name, name) != 0; n = n->next)
		;
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (n)
			n->name = strdup(name);
		if (!n || !n->name) {
			free(n);
			kt_error(&err, "out of memory");
			goto fail;
		}
		n->st = st;
		kt_nodesend_init(&n->send, n->name, st->ctl->schema, st->ctl->flags);
		n->next = st->nodes;
		st->nodes = n;
	}
	if (n->pending)
		KT_V(2, "superseded by a newer desired state", "node=\"%s\"", name);
	cJSON_Delete(n->pending);
	n->pending = doc;
	if (!n->busy)
		node_start(st, n);
	return;
fail:
	note_failure(st->ctl, &err);
	cJSON_Delete(doc);
}

/* ------------------------------------------------ splitting the input */

static bool blank_only(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strchr(" \t\r\n", s[i]))
			return false;
	return true;
}

/* a line of only "---" (or "...") ends a YAML document */
static bool yaml_separator(const char *s, size_t n)
{
	if (n < 3 || (strncmp(s, "---", 3) != 0 && strncmp(s, "...", 3) != 0))
		return false;
	return n == 3 || strchr(" \t\r#", s[3]);
}

static void drop_bytes(struct p3_stream *st, size_t n)
{
	memmove(st->buf, st->buf + n, st->len - n);
	st->len -= n;
	st->scan = 0;
}

static const char *input_name(const struct p3_stream *st)
{
	return strcmp(st->ctl->desired_path, "-") == 0 ? "<stdin>" : st->ctl->desired_path;
}

static int too_big(struct p3_stream *st)
{
	struct kt_err err = { 0 };

	kt_error_kind(&err, KT_ERR_INPUT, "%s: document larger than %zu bytes (see --max-input)",
		      input_name(st), kt_max_input());
	note_failure(st->ctl, &err);
	return -1;
}

static int parse_doc(struct p3_stream *st, size_t n)
{
	struct kt_err err = { 0 };
	cJSON *doc;

	if (blank_only(st->buf, n)) {
		drop_bytes(st, n);
		return 0;
	}
	if (n > kt_max_input())
		return too_big(st);
	doc = kt_json_parse(input_name(st), st->buf, n, &err);
	if (!doc) {
		note_failure(st->ctl, &err);
		return -1;
	}
	drop_bytes(st, n);
	dispatch(st, doc);
	return 0;
}

/* JSON: a document ends where its brackets close, outside strings */
static int split_json(struct p3_stream *st, bool eof)
{
	while (st->scan < st->len) {
		char c = st->buf[st->scan++];

		if (st->in_str) {
			if (st->esc)
				st->esc = false;
			else if (c == '\\')
				st->esc = true;
			else if (c == '"')
				st->in_str = false;
		} else if (c == '"') {
			st->in_str = true;
		} else if (c == '{' || c == '[') {
			st->depth++;
		} else if (c == '}' || c == ']') {
			if (--st->depth <= 0) {
				st->depth = 0;
				if (parse_doc(st, st->scan) < 0)
					return -1;
			}
		}
	}
	if (eof && st->len && parse_doc(st, st->len) < 0)
		return -1;
	return 0;
}

/* YAML: documents end at a "---" line, or at the end of the input */
static int split_yaml(struct p3_stream *st, bool eof)
{
	size_t i = 0, eol;

	while (i < st->len) {
		char *nl = memchr(st->buf + i, '\n', st->len - i);

		if (!nl)
			break;
		eol = (size_t)(nl - st->buf);
		if (yaml_separator(st->buf + i, eol - i)) {
			if (parse_doc(st, i) < 0)
				return -1;
			/* the marker itself goes: a document that starts with '-'
			 * would not be taken for YAML; what follows it stays */
			drop_bytes(st, 3);
			i = 0;
			continue;
		}
		i = eol + 1;
	}
	if (eof && st->len && parse_doc(st, st->len) < 0)
		return -1;
	return 0;
}

static void stop_reading(struct p3_stream *st)
{
	if (st->watching)
		kt_loop_unwatch_fd(st->loop, st->fd);
	st->watching = false;
}

static int take_input(struct p3_stream *st, const char *data, size_t n, bool eof)
{
	if (st->len + n + 1 > st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 65536;
		char *p;

		while (cap < st->len + n + 1)
			cap *= 2;
		p = realloc(st->buf, cap);
		if (!p) {
			struct kt_err err = { 0 };

			kt_error(&err, "out of memory");
			note_failure(st->ctl, &err);
			return -1;
		}
		st->buf = p;
		st->cap = cap;
	}
	memcpy(st->buf + st->len, data, n);
	st->len += n;
	if (!st->started) {
		size_t i = 0;

		while (i < st->len && strchr(" \t\r\n", st->buf[i]))
			i++;
		if (i == st->len && !eof)
			return 0;
		st->started = true;
		st->yaml = i < st->len && st->buf[i] != '{' && st->buf[i] != '[';
	}
	if ((st->yaml ? split_yaml(st, eof) : split_json(st, eof)) < 0)
		return -1;
	/* what is left is one unfinished document: it must not grow unbounded */
	return st->len > kt_max_input() ? too_big(st) : 0;
}

static void on_input(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct p3_stream *st = arg;
	char chunk[65536];
	ssize_t n;

	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n < 0) {
			kt_errmsg("cannot read '%s': %s", st->ctl->desired_path, strerror(errno));
			st->ctl->status = KT_EXIT_FAILURE;
			stop_reading(st);
			return;
		}
		if (take_input(st, chunk, (size_t)n, n == 0) < 0 || n == 0) {
			stop_reading(st);
			return;
		}
	}
}

static void stream_free(struct p3_stream *st)
{
	struct p3_node *n, *next;

	for (n = st->nodes; n; n = next) {
		next = n->next;
		kt_api_cancel(n->call);
		cJSON_Delete(n->pending);
		kt_nodesend_release(&n->send);
		free(n->name);
		free(n);
	}
	if (st->fd_flags >= 0)
		fcntl(st->fd, F_SETFL, st->fd_flags);
	free(st->buf);
	if (st->fd > 0)
		close(st->fd);
}

static void p3_stream_send(struct p3_ctl *ctl)
{
	struct p3_stream st = { .ctl = ctl, .fd = 0, .fd_flags = -1 };
	struct kt_err err = { 0 };
	struct stat sb;

	if (strcmp(ctl->desired_path, "-") != 0) {
		st.fd = open(ctl->desired_path, O_RDONLY | O_CLOEXEC);
		if (st.fd < 0)
			kt_die(KT_EXIT_FAILURE, "cannot open '%s': %s", ctl->desired_path,
			       strerror(errno));
	}
	st.loop = kt_loop_new(&err);
	if (!st.loop)
		kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	if (fstat(st.fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		/* a regular file never blocks and epoll refuses it: read it all,
		 * and the pending slots do the coalescing */
		on_input(st.loop, st.fd, KT_LOOP_READ, &st);
	} else {
		if (kt_loop_watch_fd(st.loop, st.fd, KT_LOOP_READ, on_input, &st, &err) < 0)
			kt_die(KT_EXIT_FAILURE, "%s", err.msg);
		st.watching = true;
		/* the descriptor may be shared (a terminal): its flags go back */
		st.fd_flags = fcntl(st.fd, F_GETFL);
		if (st.fd_flags >= 0)
			fcntl(st.fd, F_SETFL, st.fd_flags | O_NONBLOCK);
	}
	if (kt_loop_run(st.loop, &err) < 0)
		note_failure(ctl, &err);
	stream_free(&st);
	kt_loop_free(st.loop);
}

/* ------------------------------------------------------------------ main */

static void parse_args(struct p3_ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "current", required_argument, NULL, OPT_CURRENT },
		{ "node", required_argument, NULL, OPT_NODE },
		{ "output", required_argument, NULL, 'o' },
		{ "send", no_argument, NULL, OPT_SEND },
		{ "heartbeat", no_argument, NULL, OPT_HEARTBEAT },
		{ "register", no_argument, NULL, OPT_REGISTER },
		{ "stream", no_argument, NULL, OPT_STREAM },
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	struct kt_err err = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "o:" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CURRENT: ctl->current_path = optarg; break;
		case OPT_NODE: ctl->node = optarg; break;
		case OPT_SEND: ctl->send = true; break;
		case OPT_HEARTBEAT: ctl->heartbeat = true; break;
		case OPT_REGISTER: ctl->reg = true; break;
		case OPT_STREAM: ctl->stream = true; break;
		case 'o':
			if (strcmp(optarg, "patch") == 0)
				ctl->output = OUT_PATCH;
			else if (strcmp(optarg, "node") == 0)
				ctl->output = OUT_NODE;
			else if (strcmp(optarg, "both") == 0)
				ctl->output = OUT_BOTH;
			else
				kt_usage_error("invalid value '%s' for --output: expected patch, node or both",
					       optarg);
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
	if (ctl->current_path && ctl->node)
		kt_usage_error("--current and --node cannot be used together");
	if (ctl->current_path && ctl->send)
		kt_usage_error("--send reads the node from the API server: drop --current");
	if (ctl->reg && !ctl->send)
		kt_usage_error("--register needs --send");
	if (ctl->node && kt_lease_check_name(ctl->node, &err) < 0)
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
	kt_json_reader_free(r);
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
		ctl.client = kt_api_open(&ctl.api, &err);
		if (!ctl.client)
			kt_die(KT_EXIT_FAILURE, "%s", err.msg);
	}
	if (ctl.stream && ctl.send)
		p3_stream_send(&ctl);
	else
		each_desired(&ctl);
	kt_api_free(ctl.client);
	cJSON_Delete(ctl.current);
	kt_schema_free(ctl.schema);
	return ctl.status;
}
