/* SPDX-License-Identifier: Apache-2.0 */
/* kube-request: send one request to the API server and print the reply */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "kt.h"

enum {
	OPT_CONTENT_TYPE = KT_OPT_TOOL,
	OPT_TYPE,
	OPT_WATCH_ONLY,
	OPT_BOOKMARKS,
	OPT_WATCH_TIMEOUT,
	OPT_IDLE_TIMEOUT,
	OPT_CHUNK_SIZE,
	OPT_KNOWN,
};

/* a watch that hears nothing, not even a bookmark, for this long has failed */
#define IDLE_TIMEOUT_DEFAULT_MS (3 * 60 * 1000)

struct request_ctl {
	struct kt_api_opts api;
	char method[16];
	const char *path;
	const char *body_file;
	const char *content_type;
	const char *patch_type;
	const char *target; /* the <path> operand as given (a path or a URL) */
	bool watch;
	bool watch_only;	  /* no ADDED events for the first list */
	bool bookmarks;		  /* print BOOKMARK events */
	int64_t watch_timeout_ms; /* 0: the reflector's random 5-10 min */
	int64_t idle_ms;
	bool idle_set;
	long chunk_size; /* as kt_refl_opts.page_size: 0 not given, KT_REFL_NO_PAGING for 0 */
	bool items;	 /* a list reply as its items, one document each */
	const char *known_file; /* --known: objects the first list is compared with */
};

static const char usage_head[] =
	"Usage: kube-request [options] <method> <path> [<body>]\n"
	"\n"
	"Send one request to the API server and print the reply as JSON (or\n"
	"YAML), or with --watch follow a collection's changes.\n"
	"<method> is GET, POST, PUT, PATCH, DELETE or HEAD; <path> starts with\n"
	"'/' (or is a full URL on the configured server); <body> is a JSON or\n"
	"YAML file, or '-' for standard input (the default for POST, PUT and\n"
	"PATCH), sent as JSON.\n"
	"\n"
	"Options:\n"
	"      --type=<type>        patch type: strategic (default), merge or json\n"
	"      --content-type=<mime>\n"
	"                           Content-Type of the body, overriding --type\n"
	"                           (default application/json)\n"
	"  -o, --output=<format>    json (default) or yaml\n"
	"  -i, --items              print a list's items, one document each, with\n"
	"                           apiVersion and kind filled in\n"
	"  -w, --watch              follow the collection: list it, then print one\n"
	"                           {\"type\":..,\"object\":..} per change, resuming\n"
	"                           and re-listing as client-go's reflector does\n"
	"      --watch-only         with --watch: no ADDED events for the first list\n"
	"      --bookmarks          with --watch: print BOOKMARK events too\n"
	"      --watch-timeout=<duration>\n"
	"                           with --watch: the server ends each watch after\n"
	"                           this and it is resumed (default 5-10m, random)\n"
	"      --idle-timeout=<duration>\n"
	"                           with --watch: fail when no event or bookmark\n"
	"                           comes for this long (default 3m, 0: never)\n"
	"      --chunk-size=<n>     with --watch: list in pages of <n> objects\n"
	"                           (default 500, 0: in one piece)\n"
	"      --known=<file>       with --watch: the objects (JSON or YAML, one\n"
	"                           or many, or a List) already known: the first\n"
	"                           list prints only the difference from them, as\n"
	"                           a re-list does (DELETED for each one gone)\n";

static const char usage_tail[] =
	"\n"
	"Examples:\n"
	"  kube-request GET '/api/v1/pods?fieldSelector=spec.nodeName=vk-1'\n"
	"  kube-request --watch GET /api/v1/namespaces/default/pods |\n"
	"      jq -r '.type + \" \" + .object.metadata.name'\n"
	"\n"
	"See kube-request(1).\n";

static void usage(FILE *out)
{
	fputs(usage_head, out);
	fputs(KT_USAGE_API, out);
	fputs(KT_USAGE_FIELD_MANAGER, out);
	fputs(KT_USAGE_COMMON, out);
	fputs(usage_tail, out);
}

static const char *const patch_types[] = { "strategic", "merge", "json", NULL };
static const char *const patch_content_types[] = { KT_NODESEND_PATCH_TYPE,
						   "application/merge-patch+json",
						   "application/json-patch+json" };
static const char *const output_formats[] = { "json", "yaml", NULL };

/*
 * The query parameters --watch sets itself: a path that sets one is
 * refused.  Without --watch, a watch=1 would stream into a reply that is
 * never complete: it needs --watch.
 */
static void check_watch_query(const struct request_ctl *ctl)
{
	struct kt_err err = { 0 };
	const char *own;

	if (!ctl->watch) {
		if (kt_refl_query_watches(ctl->path))
			kt_usage_error("a watch in <path> needs --watch (remove "
				       "'watch' from <path>)");
		return;
	}
	if (kt_refl_check_path(ctl->path, &err) < 0)
		kt_usage_error("%s", err.msg);
	own = kt_refl_own_param(ctl->path);
	if (own)
		kt_usage_error("--watch sets '%s' itself: remove it from <path>", own);
}

static void check_options(struct request_ctl *ctl)
{
	if (ctl->patch_type && strcmp(ctl->method, "PATCH"))
		kt_usage_error("--type applies to PATCH only");
	if (ctl->watch && strcmp(ctl->method, "GET"))
		kt_usage_error("--watch applies to GET only");
	if (!ctl->watch && ctl->watch_only)
		kt_usage_error("--watch-only needs --watch");
	if (!ctl->watch && ctl->bookmarks)
		kt_usage_error("--bookmarks needs --watch");
	if (!ctl->watch && ctl->watch_timeout_ms)
		kt_usage_error("--watch-timeout needs --watch");
	if (!ctl->watch && ctl->idle_set)
		kt_usage_error("--idle-timeout needs --watch");
	if (!ctl->watch && ctl->chunk_size)
		kt_usage_error("--chunk-size needs --watch");
	if (!ctl->watch && ctl->known_file)
		kt_usage_error("--known needs --watch");
	kt_opt_exclusive(ctl->watch_only, "--watch-only", ctl->known_file != NULL, "--known",
			 "the first list is either left out or compared");
	kt_opt_exclusive(ctl->items, "--items", ctl->watch, "--watch",
			 "a watch prints one event a line");
	check_watch_query(ctl);
}

static void parse_operands(struct request_ctl *ctl, int argc, char **argv)
{
	static const char *const methods[] = { "GET",	"POST",	  "PUT",
					       "PATCH", "DELETE", "HEAD" };
	const char *m;
	bool known = false;
	size_t i;

	if (optind + 2 > argc)
		kt_usage_error(optind == argc ? "missing <method> and <path>"
					      : "missing <path>");
	if (optind + 3 < argc)
		kt_usage_error("unexpected operand '%s'", argv[optind + 3]);
	m = argv[optind];
	for (i = 0; m[i] && i + 1 < sizeof(ctl->method); i++)
		ctl->method[i] = (char)toupper((unsigned char)m[i]);
	ctl->method[i] = '\0';
	for (size_t k = 0; k < sizeof(methods) / sizeof(methods[0]); k++)
		known = known || (!m[i] && !strcmp(ctl->method, methods[k]));
	if (!known)
		kt_usage_error("unknown method '%s'", m);
	ctl->path = ctl->target = argv[optind + 1];
	if (ctl->path[0] != '/' && !kt_url_is_http(ctl->path))
		kt_usage_error("path '%s' must start with '/' or be a URL", ctl->path);
	ctl->body_file = optind + 2 < argc ? argv[optind + 2] : NULL;
	if (ctl->body_file &&
	    (!strcmp(ctl->method, "GET") || !strcmp(ctl->method, "HEAD")))
		kt_usage_error("%s takes no body", ctl->method);
	if (!ctl->body_file &&
	    (!strcmp(ctl->method, "POST") || !strcmp(ctl->method, "PUT") ||
	     !strcmp(ctl->method, "PATCH")))
		ctl->body_file = "-";
	check_options(ctl);
	if (!ctl->content_type && !strcmp(ctl->method, "PATCH"))
		ctl->content_type = ctl->patch_type ? ctl->patch_type : patch_content_types[0];
}

/*
 * A full URL is accepted as <path> when it is on the configured server
 * (same scheme, host and port, under the server's own path): the request
 * then goes to the rest.  A URL on another host is refused, since the
 * credentials are the configured server's and must not go elsewhere.
 */
static int url_to_path(struct request_ctl *ctl, const struct kt_kcfg *cfg)
{
	struct kt_err err = { 0 };
	int on = 0;

	if (!kt_url_is_http(ctl->target))
		return 0;
	on = kt_url_under(ctl->target, cfg->server, &ctl->path, &err);
	if (on < 0) {
		kt_errmsg("%s", err.msg);
		return -1;
	}
	if (!on) {
		kt_errmsg("URL '%s' is not on the configured server '%s': the credentials "
			  "are that server's; give a path, or --server",
			  ctl->target, cfg->server);
		return -1;
	}
	if (ctl->path[0] != '/') {
		kt_errmsg("URL '%s' has no path", ctl->target);
		return -1;
	}
	check_watch_query(ctl);
	return 0;
}

/* ---------------------------------------------------------------- watch */

/* one event out, in the API's watch framing */
static int watch_event(const char *type, const cJSON *object, void *arg)
{
	cJSON *ev = kt_refl_event(type, object);
	int rc = ev ? kt_emit(ev, 0) : -1;

	(void)arg;
	if (!ev)
		kt_errmsg("out of memory");
	cJSON_Delete(ev);
	return rc;
}

/* the message for a watch that ended: what failed, with the option to change */
static void watch_failed(const struct request_ctl *ctl, const struct kt_err *err)
{
	if (err->http_status == -1)
		return; /* an output error, already said */
	if (err->about == KT_ERR_ABOUT_IDLE)
		kt_errmsg("watch of '%s': %s (--idle-timeout)", ctl->path, err->msg);
	else
		kt_errmsg("watch of '%s': %s", ctl->path, err->msg);
}

/*
 * --known: each document of the file (a List gives its items) made known to
 * the reflector before its first list.  -1 with err (the file's position for
 * a document that is not an object with a name).
 */
static int read_known(const char *file, struct kt_refl *r, struct kt_err *err)
{
	struct kt_json_reader *in =
		kt_json_reader_open(file, kt_max_input(), KT_JSON_STREAM, err);
	cJSON *doc = NULL;
	int got, rc = -1;

	if (!in)
		return -1;
	while ((got = kt_json_reader_next(in, &doc, err)) == 1) {
		const cJSON *items = kt_json_get_array(doc, "items");
		long line = kt_json_reader_line(in);
		cJSON *it;

		if (!items) {
			if (kt_refl_know(r, doc, err) < 0)
				goto bad;
			continue;
		}
		/* as the reflector's own lists: PodList items are Pods */
		if (kt_object_type_items(doc) < 0) {
			cJSON_Delete(doc);
			kt_error(err, "out of memory");
			goto out;
		}
		while ((it = cJSON_DetachItemFromArray((cJSON *)items, 0)))
			if (kt_refl_know(r, it, err) < 0) {
				cJSON_Delete(doc);
				goto bad;
			}
		cJSON_Delete(doc);
		continue;
bad:
		if (err->kind == KT_ERR_INPUT) {
			char why[sizeof(err->msg)];

			snprintf(why, sizeof(why), "%s", err->msg);
			if (line > 0)
				kt_error_kind(err, KT_ERR_INPUT, "%s:%ld: %s", file, line, why);
			else
				kt_error_kind(err, KT_ERR_INPUT, "%s: %s", file, why);
		}
		goto out;
	}
	rc = got < 0 ? -1 : 0;
out:
	kt_json_reader_close(in);
	return rc;
}

static int run_watch(struct request_ctl *ctl, struct kt_api *api)
{
	struct kt_refl_opts o = { .path = ctl->path,
				  .watch_timeout_s = (ctl->watch_timeout_ms + 999) / 1000,
				  .idle_ms = ctl->idle_set ? ctl->idle_ms
							   : IDLE_TIMEOUT_DEFAULT_MS,
				  .page_size = ctl->chunk_size,
				  .flags = KT_REFL_WAIT_FOR_SERVER |
					   (ctl->watch_only ? KT_REFL_NO_INITIAL : 0) |
					   (ctl->bookmarks ? KT_REFL_BOOKMARKS : 0) };
	struct kt_refl r = { 0 };
	struct kt_err err = { 0 };
	int rc = KT_EXIT_OK;

	if (kt_refl_init(&r, &o, watch_event, ctl, (unsigned)kt_now_us(), &err) < 0 ||
	    (ctl->known_file && read_known(ctl->known_file, &r, &err) < 0)) {
		kt_errmsg("%s", err.msg);
		kt_refl_release(&r);
		return kt_exit_code(&err);
	}
	if (kt_refl_run(&r, api, &err) < 0) {
		watch_failed(ctl, &err);
		rc = kt_exit_code(&err);
	}
	kt_refl_release(&r);
	return rc;
}

static int run(struct request_ctl *ctl)
{
	struct kt_err err = { 0 };
	struct kt_api *api = NULL;
	cJSON *body = NULL, *reply = NULL;
	int rc = KT_EXIT_FAILURE;

	if (ctl->body_file) {
		body = kt_json_read_file(ctl->body_file, kt_max_input(), &err);
		if (!body)
			goto failed;
	}
	ctl->api.max_reply = kt_max_input();
	ctl->api.program = kt_prog;
	api = kt_api_open(&ctl->api, &err);
	if (!api)
		goto failed;
	if (url_to_path(ctl, kt_api_kcfg(api)) < 0) {
		rc = KT_EXIT_USAGE;
		goto out;
	}
	if (ctl->watch) {
		rc = run_watch(ctl, api);
		goto out;
	}
	reply = kt_api_json(api, ctl->method, ctl->path, body, ctl->content_type, 0, &err);
	if (!reply)
		goto failed;
	rc = KT_EXIT_OK;
	/* an empty reply (HEAD, 204) prints nothing */
	if (!cJSON_IsNull(reply) &&
	    (ctl->items ? kt_emit_items(reply, 0) : kt_emit(reply, 0)) < 0)
		rc = KT_EXIT_FAILURE;
	goto out;
failed:
	kt_errmsg("%s", err.msg);
	rc = kt_exit_code(&err);
out:
	cJSON_Delete(reply);
	kt_api_close(api);
	cJSON_Delete(body);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "content-type", required_argument, NULL, OPT_CONTENT_TYPE },
		{ "type", required_argument, NULL, OPT_TYPE },
		KT_LONGOPT_OUTPUT,
		{ "watch", no_argument, NULL, 'w' },
		{ "watch-only", no_argument, NULL, OPT_WATCH_ONLY },
		{ "bookmarks", no_argument, NULL, OPT_BOOKMARKS },
		{ "watch-timeout", required_argument, NULL, OPT_WATCH_TIMEOUT },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK_SIZE },
		{ "known", required_argument, NULL, OPT_KNOWN },
		{ "items", no_argument, NULL, 'i' },
		KT_LONGOPTS_API,
		KT_LONGOPTS_FIELD_MANAGER,
		KT_LONGOPTS_COMMON
	};
	static const char shortopts[] = "o:wi" KT_SHORTOPTS_COMMON;
	struct request_ctl ctl = { 0 };
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONTENT_TYPE:
			if (!*optarg || strchr(optarg, '\n') || strchr(optarg, '\r'))
				kt_opt_invalid("--content-type", optarg,
					       "empty or with a line break");
			ctl.content_type = optarg;
			break;
		case OPT_TYPE:
			ctl.patch_type =
				patch_content_types[kt_opt_choice("--type", optarg, patch_types)];
			break;
		case 'o':
			kt_output_set_yaml(kt_opt_choice("--output", optarg, output_formats) == 1);
			break;
		case 'w':
			ctl.watch = true;
			break;
		case OPT_WATCH_ONLY:
			ctl.watch_only = true;
			break;
		case OPT_BOOKMARKS:
			ctl.bookmarks = true;
			break;
		case OPT_WATCH_TIMEOUT:
			ctl.watch_timeout_ms = kt_opt_duration_min_ms("--watch-timeout", optarg,
							      1000);
			break;
		case OPT_IDLE_TIMEOUT:
			ctl.idle_ms = kt_opt_duration_ms("--idle-timeout", optarg);
			ctl.idle_set = true;
			break;
		case OPT_CHUNK_SIZE:
			/* kubectl's 0 is "one piece" */
			ctl.chunk_size = kt_opt_long("--chunk-size", optarg, 0, 1000000);
			if (!ctl.chunk_size)
				ctl.chunk_size = KT_REFL_NO_PAGING;
			break;
		case OPT_KNOWN:
			if (!*optarg)
				kt_opt_invalid("--known", optarg, "must not be empty");
			ctl.known_file = optarg;
			break;
		case 'i':
			ctl.items = true;
			break;
		default:
			if (!kt_api_option(c, optarg, &ctl.api))
				kt_common_option(c, usage);
		}
	}
	parse_operands(&ctl, argc, argv);
	return run(&ctl);
}
