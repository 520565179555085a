/* SPDX-License-Identifier: Apache-2.0 */
/* kube-request: send one request to the API server and print the reply */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "kt.h"

enum {
	OPT_CONTENT_TYPE = KT_OPT_TOOL,
	OPT_TYPE,
};

struct request_ctl {
	struct kt_api_opts api;
	char method[16];
	const char *path;
	const char *body_file;
	const char *content_type;
	const char *patch_type;
	bool watch;
	bool items; /* a list reply as its items, one document each */
	int status; /* exit status of a watch stopped by a bad line */
};

static const char usage_head[] =
	"Usage: kube-request [options] <method> <path> [<body>]\n"
	"\n"
	"Send one request to the API server and print the reply as JSON.\n"
	"<method> is GET, POST, PUT, PATCH, DELETE or HEAD; <path> starts with\n"
	"'/'; <body> is a JSON or YAML file, or '-' for standard input (the\n"
	"default for POST, PUT and PATCH), sent as JSON.\n"
	"\n"
	"Options:\n"
	"      --type=<type>        patch type: strategic (default), merge or json\n"
	"      --content-type=<mime>\n"
	"                           Content-Type of the body, overriding --type\n"
	"                           (default application/json)\n"
	"  -w, --watch              stream a watch: one document per event\n"
	"  -i, --items              print a list's items, one document each, with\n"
	"                           apiVersion and kind filled in\n";

static const char usage_tail[] =
	"\n"
	"Example:\n"
	"  kube-request GET '/api/v1/pods?fieldSelector=spec.nodeName=vk-1'\n"
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
	ctl->path = argv[optind + 1];
	if (ctl->path[0] != '/')
		kt_usage_error("path '%s' must start with '/'", ctl->path);
	ctl->body_file = optind + 2 < argc ? argv[optind + 2] : NULL;
	if (ctl->body_file &&
	    (!strcmp(ctl->method, "GET") || !strcmp(ctl->method, "HEAD")))
		kt_usage_error("%s takes no body", ctl->method);
	if (!ctl->body_file &&
	    (!strcmp(ctl->method, "POST") || !strcmp(ctl->method, "PUT") ||
	     !strcmp(ctl->method, "PATCH")))
		ctl->body_file = "-";
	if (ctl->patch_type && strcmp(ctl->method, "PATCH"))
		kt_usage_error("--type applies to PATCH only");
	if (ctl->watch && strcmp(ctl->method, "GET"))
		kt_usage_error("--watch applies to GET only");
	if (!ctl->content_type && !strcmp(ctl->method, "PATCH"))
		ctl->content_type = patch_content_type(ctl->patch_type ? ctl->patch_type
								       : "strategic");
}

/* one watch event a line: parsed and printed as it arrives */
static int watch_line(const char *line, size_t len, void *arg)
{
	struct request_ctl *ctl = arg;
	struct kt_err err = { 0 };
	cJSON *doc = kt_json_parse("watch event", line, len, &err);

	if (!doc) {
		kt_errmsg("%s", err.msg);
		ctl->status = KT_EXIT_FAILURE;
		return -1;
	}
	if (kt_emit(doc, 0) < 0)
		ctl->status = KT_EXIT_FAILURE;
	cJSON_Delete(doc);
	return ctl->status ? -1 : 0;
}

/* the path with watch=1 added to its query */
static char *watch_path(const char *path)
{
	size_t n = strlen(path) + 16;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s%cwatch=1", path, strchr(path, '?') ? '&' : '?');
	return p;
}

/* adds key first in obj, where an object read from the API has it */
static void prepend(cJSON *obj, const char *key, const char *value)
{
	cJSON *item = cJSON_CreateString(value);

	if (!item || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return;
	}
	cJSON_DetachItemViaPointer(obj, item);
	cJSON_InsertItemInArray(obj, 0, item);
}

/*
 * A *List reply as its items, each with the apiVersion and kind the list
 * implies (PodList -> Pod), as STYLE's fetch rule wants; other replies as is.
 */
static int emit_reply(const struct request_ctl *ctl, cJSON *reply)
{
	const char *kind = kt_json_get_string(reply, "kind");
	const char *version = kt_json_get_string(reply, "apiVersion");
	cJSON *items = kt_json_get_array(reply, "items");
	char item_kind[256];
	size_t n;

	if (!ctl->items || !kind || !items)
		return kt_emit(reply, 0);
	n = strlen(kind);
	if (n > 4 && n < sizeof(item_kind) && !strcmp(kind + n - 4, "List"))
		snprintf(item_kind, sizeof(item_kind), "%.*s", (int)(n - 4), kind);
	else
		item_kind[0] = '\0';
	for (cJSON *it = items->child; it; it = it->next) {
		if (cJSON_IsObject(it) && item_kind[0] && !kt_json_get(it, "kind"))
			prepend(it, "kind", item_kind);
		if (cJSON_IsObject(it) && version && !kt_json_get(it, "apiVersion"))
			prepend(it, "apiVersion", version);
		if (kt_emit(it, 0) < 0)
			return -1;
	}
	return 0;
}

static int run(struct request_ctl *ctl)
{
	struct kt_api_req req = { .method = ctl->method,
				  .path = ctl->path,
				  .content_type = ctl->content_type };
	struct kt_api_resp resp = { 0 };
	struct kt_err err = { 0 };
	struct kt_api *api = NULL;
	cJSON *body = NULL;
	char *text = NULL, *wpath = NULL;
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
	if (ctl->watch) {
		wpath = watch_path(ctl->path);
		if (!wpath) {
			kt_errmsg("out of memory");
			goto out;
		}
		req.path = wpath;
		req.on_line = watch_line;
		req.line_arg = ctl;
		if (!ctl->api.timeout_set)
			req.timeout_ms = -1;
	}
	if (kt_api_do(api, &req, &resp, &err) < 0) {
		kt_errmsg("%s", err.msg);
		rc = kt_exit_code(&err);
		goto out;
	}
	rc = ctl->status;
	if (resp.json && emit_reply(ctl, resp.json) < 0)
		rc = KT_EXIT_FAILURE;
out:
	kt_api_resp_release(&resp);
	kt_api_free(api);
	free(wpath);
	free(text);
	cJSON_Delete(body);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "content-type", required_argument, NULL, OPT_CONTENT_TYPE },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "watch", no_argument, NULL, 'w' },
		{ "items", no_argument, NULL, 'i' },
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	static const char shortopts[] = "wi" KT_SHORTOPTS_COMMON;
	struct request_ctl ctl = { 0 };
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
					       "merge or json", optarg);
			ctl.patch_type = optarg;
			break;
		case 'w':
			ctl.watch = true;
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
