/* SPDX-License-Identifier: Apache-2.0 */
/* kube-request: send one request to the API server and print the reply */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "kt.h"

enum {
	OPT_CONTENT_TYPE = KT_OPT_TOOL,
	OPT_TYPE,
	OPT_WATCH_ONLY,
	OPT_BOOKMARKS,
	OPT_WATCH_TIMEOUT,
	OPT_IDLE_TIMEOUT,
	OPT_CHUNK_SIZE,
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
	long chunk_size; /* -1: not given */
	bool items;	 /* a list reply as its items, one document each */
	bool yaml;	 /* -o yaml */
	long printed;	 /* documents written, for YAML's separators */
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
	"                           (default 500, 0: in one piece)\n";

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
	fputs(KT_USAGE_COMMON, out);
	fputs(usage_tail, out);
}

static const char *patch_content_type(const char *type)
{
	if (!strcmp(type, "strategic"))
		return "application/strategic-merge-patch+json";
	if (!strcmp(type, "merge"))
		return "application/merge-patch+json";
	if (!strcmp(type, "json"))
		return "application/json-patch+json";
	return NULL;
}

static bool is_url(const char *s)
{
	return !strncasecmp(s, "https://", 8) || !strncasecmp(s, "http://", 7);
}

/*
 * The query parameters --watch sets itself: a path that sets one is
 * refused.  Without --watch, a watch=1 would stream into a reply that is
 * never complete: it needs --watch.
 */
static void check_watch_query(const struct request_ctl *ctl)
{
	const char *path = ctl->path;
	struct kt_err err = { 0 };
	static const char *const own[] = { "watch",
					   "resourceVersion",
					   "resourceVersionMatch",
					   "allowWatchBookmarks",
					   "timeoutSeconds",
					   "limit",
					   "continue",
					   "sendInitialEvents" };
	const char *q = strchr(path, '?');

	if (!ctl->watch) {
		for (; q && *q; q = strchr(q + 1, '&'))
			if (!strncmp(q + 1, "watch=", 6) && strncmp(q + 7, "0", 1) &&
			    strncmp(q + 7, "false", 5))
				kt_usage_error("a watch in <path> needs --watch (remove "
					       "'watch' from <path>)");
		return;
	}
	if (kt_refl_check_path(path, &err) < 0)
		kt_usage_error("%s", err.msg);
	while (q && *q) {
		size_t n;

		q++;
		n = strcspn(q, "=&");
		for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
			if (strlen(own[i]) == n && !strncmp(q, own[i], n))
				kt_usage_error(
					"--watch sets '%s' itself: remove it from <path>",
					own[i]);
		q = strchr(q, '&');
	}
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
	if (!ctl->watch && ctl->chunk_size >= 0)
		kt_usage_error("--chunk-size needs --watch");
	if (ctl->watch && ctl->items)
		kt_usage_error("--items and --watch do not go together: a watch prints "
			       "one event a line");
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
	if (ctl->path[0] != '/' && !is_url(ctl->path))
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
		ctl->content_type = patch_content_type(ctl->patch_type ? ctl->patch_type
								       : "strategic");
}

/* ---------------------------------------------------------------- URLs */

/* scheme, host and port of an http(s) URL, lower case, with the default
 * port made explicit; *rest points at what follows */
static int url_origin(const char *url, char *buf, size_t size, const char **rest)
{
	bool tls = !strncasecmp(url, "https://", 8);
	const char *h = url + (tls ? 8 : 7), *end = h + strcspn(h, "/?#");
	const char *colon = NULL;
	size_t n = 0;

	for (const char *p = h; p < end; p++)
		if (*p == ':')
			colon = p;
	if (colon && memchr(colon, ']', (size_t)(end - colon)))
		colon = NULL; /* a colon inside [v6] */
	n = (size_t)snprintf(buf, size, "%s://", tls ? "https" : "http");
	for (const char *p = h; p < (colon ? colon : end) && n + 1 < size; p++)
		buf[n++] = (char)tolower((unsigned char)*p);
	buf[n < size ? n : size - 1] = '\0';
	if (n + 8 >= size)
		return -1;
	snprintf(buf + n, size - n, ":%.*s", colon ? (int)(end - colon - 1) : 3,
		 colon ? colon + 1 : (tls ? "443" : "80"));
	*rest = end;
	return 0;
}

/*
 * A full URL is accepted as <path> when it is on the configured server
 * (same scheme, host and port, under the server's own path): the request
 * then goes to the rest.  A URL on another host is refused, since the
 * credentials are the configured server's and must not go elsewhere.
 */
static int url_to_path(struct request_ctl *ctl, const struct kt_kcfg *cfg)
{
	char want[512], got[512];
	const char *srest, *rest;
	size_t plen;

	if (!is_url(ctl->target))
		return 0;
	if (url_origin(cfg->server, want, sizeof(want), &srest) < 0 ||
	    url_origin(ctl->target, got, sizeof(got), &rest) < 0 || strcmp(want, got))
		goto other;
	plen = strlen(srest);
	while (plen && srest[plen - 1] == '/')
		plen--;
	if (strncmp(rest, srest, plen) || (rest[plen] && !strchr("/?", rest[plen])))
		goto other;
	ctl->path = rest + plen;
	if (ctl->path[0] != '/') {
		kt_errmsg("URL '%s' has no path", ctl->target);
		return -1;
	}
	check_watch_query(ctl);
	return 0;
other:
	kt_errmsg("URL '%s' is not on the configured server '%s': the credentials are "
		  "that server's; give a path, or --server",
		  ctl->target, cfg->server);
	return -1;
}

/* --------------------------------------------------------------- output */

/* one document out, as JSON or as a YAML document ("---" between two) */
static int emit(struct request_ctl *ctl, const cJSON *doc)
{
	struct kt_err err = { 0 };
	char *text = NULL;
	int rc;

	if (!ctl->yaml) {
		rc = kt_json_write(stdout, doc, kt_output_flags(), &err);
	} else {
		text = kt_yaml_print(doc, &err);
		if (!text) {
			kt_errmsg("%s", err.msg);
			return -1;
		}
		rc = 0;
		if ((ctl->printed && fputs("---\n", stdout) == EOF) ||
		    fputs(text, stdout) == EOF || fflush(stdout) == EOF) {
			snprintf(err.msg, sizeof(err.msg), "write error: %s",
				 strerror(errno));
			rc = -1;
		}
		free(text);
	}
	if (rc < 0) {
		/*
		 * A reader that went away (kube-request --watch | head -1): end
		 * as any filter does, by SIGPIPE, which libcurl ignores while it
		 * runs the callbacks that print the events.
		 */
		if (errno == EPIPE) {
			signal(SIGPIPE, SIG_DFL);
			raise(SIGPIPE);
		}
		kt_errmsg("%s", err.msg);
		return -1;
	}
	ctl->printed++;
	return 0;
}

/*
 * A *List reply as its items, each with the apiVersion and kind the list
 * implies (PodList -> Pod), as STYLE's fetch rule wants; other replies as is.
 */
static int emit_reply(struct request_ctl *ctl, cJSON *reply)
{
	const char *kind = kt_json_get_string(reply, "kind");
	const char *version = kt_json_get_string(reply, "apiVersion");
	cJSON *items = kt_json_get_array(reply, "items");
	char item_kind[256];
	size_t n;

	if (!ctl->items || !kind || !items)
		return emit(ctl, reply);
	n = strlen(kind);
	if (n > 4 && n < sizeof(item_kind) && !strcmp(kind + n - 4, "List"))
		snprintf(item_kind, sizeof(item_kind), "%.*s", (int)(n - 4), kind);
	else
		item_kind[0] = '\0';
	for (cJSON *it = items->child; it; it = it->next) {
		if (cJSON_IsObject(it) && item_kind[0] && !kt_json_get(it, "kind") &&
		    kt_json_set_first(it, "kind", cJSON_CreateString(item_kind)) < 0)
			return -1;
		if (cJSON_IsObject(it) && version && !kt_json_get(it, "apiVersion") &&
		    kt_json_set_first(it, "apiVersion", cJSON_CreateString(version)) < 0)
			return -1;
		if (emit(ctl, it) < 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- watch */

/* one event out: {"type":..,"object":..} */
static int watch_event(const char *type, const cJSON *object, void *arg)
{
	struct request_ctl *ctl = arg;
	cJSON *ev = cJSON_CreateObject();
	int rc = -1;

	if (!ev || !cJSON_AddStringToObject(ev, "type", type) ||
	    kt_json_set(ev, "object", kt_json_dup(object)) < 0) {
		kt_errmsg("out of memory");
		goto out;
	}
	rc = emit(ctl, ev);
out:
	cJSON_Delete(ev);
	return rc;
}

/* the message for a watch that ended: what failed, with the option to change */
static void watch_failed(const struct request_ctl *ctl, const struct kt_err *err)
{
	if (err->http_status == -1)
		return; /* an output error, already said */
	if (!strncmp(err->msg, "no event or bookmark for ", 25))
		kt_errmsg("watch of '%s': %s (--idle-timeout)", ctl->path, err->msg);
	else
		kt_errmsg("watch of '%s': %s", ctl->path, err->msg);
}

static int run_watch(struct request_ctl *ctl, struct kt_api *api)
{
	struct kt_refl_opts o = { .path = ctl->path,
				  .watch_timeout_s = (ctl->watch_timeout_ms + 999) / 1000,
				  .idle_ms = ctl->idle_set ? ctl->idle_ms
							   : IDLE_TIMEOUT_DEFAULT_MS,
				  .page_size = ctl->chunk_size < 0    ? 0
					       : ctl->chunk_size == 0 ? -1
								      : ctl->chunk_size,
				  .flags = KT_REFL_WAIT_FOR_SERVER |
					   (ctl->watch_only ? KT_REFL_NO_INITIAL : 0) |
					   (ctl->bookmarks ? KT_REFL_BOOKMARKS : 0) };
	struct kt_refl r = { 0 };
	struct kt_err err = { 0 };
	int rc = KT_EXIT_OK;

	if (kt_refl_init(&r, &o, watch_event, ctl, (unsigned)kt_now_us(), &err) < 0) {
		kt_errmsg("%s", err.msg);
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
	struct kt_api_req req = { .method = ctl->method,
				  .content_type = ctl->content_type };
	struct kt_api_resp resp = { 0 };
	struct kt_err err = { 0 };
	struct kt_api *api = NULL;
	cJSON *body = NULL;
	char *text = NULL;
	int rc = KT_EXIT_FAILURE;

	if (ctl->body_file) {
		body = kt_json_read_file(ctl->body_file, kt_max_input(), &err);
		text = body ? kt_json_print(body, 0) : NULL;
		if (!text) {
			kt_errmsg("%s", body ? "out of memory" : err.msg);
			rc = body ? KT_EXIT_FAILURE : kt_exit_code(&err);
			goto out;
		}
		req.body = text;
		req.body_len = strlen(text);
		if (req.body_len && text[req.body_len - 1] == '\n')
			text[--req.body_len] = '\0';
	}
	api = kt_api_open(&ctl->api, &err);
	if (!api) {
		kt_errmsg("%s", err.msg);
		rc = kt_exit_code(&err);
		goto out;
	}
	if (url_to_path(ctl, kt_api_kcfg(api)) < 0) {
		rc = KT_EXIT_USAGE;
		goto out;
	}
	if (ctl->watch) {
		rc = run_watch(ctl, api);
		goto out;
	}
	req.path = ctl->path;
	if (kt_api_do(api, &req, &resp, &err) < 0) {
		kt_errmsg("%s", err.msg);
		rc = kt_exit_code(&err);
		goto out;
	}
	rc = KT_EXIT_OK;
	if (resp.json && emit_reply(ctl, resp.json) < 0)
		rc = KT_EXIT_FAILURE;
out:
	kt_api_resp_release(&resp);
	kt_api_free(api);
	free(text);
	cJSON_Delete(body);
	return rc;
}

static int64_t watch_duration(const char *opt, const char *arg, int64_t min_ms)
{
	int64_t ms = kt_opt_duration_ms(opt, arg);
	char d[32];

	if (ms < min_ms)
		kt_usage_error("invalid %s '%s': must be at least %s", opt, arg,
			       kt_duration_format(min_ms, d, sizeof(d)));
	return ms;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "content-type", required_argument, NULL, OPT_CONTENT_TYPE },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "output", required_argument, NULL, 'o' },
		{ "watch", no_argument, NULL, 'w' },
		{ "watch-only", no_argument, NULL, OPT_WATCH_ONLY },
		{ "bookmarks", no_argument, NULL, OPT_BOOKMARKS },
		{ "watch-timeout", required_argument, NULL, OPT_WATCH_TIMEOUT },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
		{ "chunk-size", required_argument, NULL, OPT_CHUNK_SIZE },
		{ "items", no_argument, NULL, 'i' },
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	static const char shortopts[] = "o:wi" KT_SHORTOPTS_COMMON;
	struct request_ctl ctl = { .chunk_size = -1 };
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONTENT_TYPE:
			if (!*optarg || strchr(optarg, '\n') || strchr(optarg, '\r'))
				kt_usage_error("invalid --content-type '%s'", optarg);
			ctl.content_type = optarg;
			break;
		case OPT_TYPE:
			if (!patch_content_type(optarg))
				kt_usage_error("invalid --type '%s': expected strategic, "
					       "merge or json",
					       optarg);
			ctl.patch_type = optarg;
			break;
		case 'o':
			if (strcmp(optarg, "json") && strcmp(optarg, "yaml"))
				kt_usage_error(
					"invalid --output '%s': expected json or yaml",
					optarg);
			ctl.yaml = !strcmp(optarg, "yaml");
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
			ctl.watch_timeout_ms = watch_duration("--watch-timeout", optarg,
							      1000);
			break;
		case OPT_IDLE_TIMEOUT:
			ctl.idle_ms = kt_opt_duration_ms("--idle-timeout", optarg);
			ctl.idle_set = true;
			break;
		case OPT_CHUNK_SIZE:
			ctl.chunk_size = kt_opt_long("--chunk-size", optarg, 0, 1000000);
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
