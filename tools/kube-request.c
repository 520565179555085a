/* SPDX-License-Identifier: Apache-2.0 */
/* kube-request: send one request to the API server and print the reply */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	OPT_STREAM,
	OPT_NO_BODY,
	OPT_STORE,
	OPT_STORE_FILE,
	OPT_SPEC_CHANGES,
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
	bool stream;	 /* requests from standard input, one a line */
	bool no_body;	 /* --stream answers without the 2xx reply */
	bool type_set;	 /* --type or --content-type given */
	bool yaml;
	bool pretty;		 /* -p given last (not -c) */
	const char *store_dir;	 /* --store: objects kept as DIR/<uid>/<store_file> */
	const char *store_file;	 /* --store-file, else KT_OBJSTORE_FILE */
	bool spec_changes;	 /* --spec-changes: no MODIFIED for a status-only change */
};

static const char usage_head[] =
	"Usage: kube-request [options] <method> <path> [<body>]\n"
	"       kube-request [options] --stream\n"
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
	"                           a re-list does (DELETED for each one gone)\n"
	"      --store=<dir>        with --watch: keep each object in\n"
	"                           <dir>/<uid>/<file>, replaced whole, and print\n"
	"                           one line per event (TYPE, UID, NAMESPACE, NAME,\n"
	"                           TIME), SYNCED after the first list; the objects\n"
	"                           already in <dir> are the ones known\n"
	"      --store-file=<name>  with --store: the file of each object\n"
	"                           (default object.json)\n"
	"      --spec-changes       with --watch: leave out a MODIFIED that changes\n"
	"                           only status, resourceVersion, managedFields,\n"
	"                           kind or apiVersion (--store still writes it)\n"

	"      --stream             send the requests standard input holds, one a\n"
	"                           line (ID, METHOD, PATH, TYPE, BODY, tab-separated)\n"
	"                           on one connection, and print one answer a line,\n"
	"                           in order: ID, the HTTP status (0: no reply) and\n"
	"                           the reply or what failed\n"
	"      --no-body            with --stream: answers carry no reply body\n";

static const char usage_tail[] =
	"\n"
	"Examples:\n"
	"  kube-request GET '/api/v1/pods?fieldSelector=spec.nodeName=vk-1'\n"
	"  printf 'a\\tPATCH\\t/api/v1/namespaces/default/pods/p/status\\tmerge\\t@p.json\\n' |\n"
	"      kube-request --stream --no-body\n"
	"  kube-request --watch GET /api/v1/namespaces/default/pods |\n"
	"      jq -r '.type + \" \" + .object.metadata.name'\n"
	"  kube-request --watch --store=pods --store-file=pod.json --spec-changes \\\n"
	"      GET '/api/v1/pods?fieldSelector=spec.nodeName=vk-1'\n"
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

/* --store prints lines of its own and knows the objects its directory holds */
static void check_store(const struct request_ctl *ctl)
{
	bool store = ctl->store_dir != NULL;

	if (!ctl->watch && ctl->spec_changes)
		kt_usage_error("--spec-changes needs --watch");
	if (!ctl->watch && store)
		kt_usage_error("--store needs --watch");
	if (!store && ctl->store_file)
		kt_usage_error("--store-file needs --store");
	kt_opt_exclusive(store, "--store", ctl->known_file != NULL, "--known",
			 "the store's objects are the ones known");
	kt_opt_exclusive(store, "--store", ctl->watch_only, "--watch-only",
			 "the first list is compared with the store");
	kt_opt_exclusive(store, "--store", ctl->yaml, "-o yaml", "it prints one line an event");
	kt_opt_exclusive(store, "--store", ctl->pretty, "--pretty",
			 "it prints one line an event");
	kt_opt_exclusive(store, "--store", ctl->bookmarks, "--bookmarks",
			 "it prints SYNCED for the first list's end");
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
	check_store(ctl);
	check_watch_query(ctl);
}

/* --stream takes its requests from its input: no operand, no option of one request */
static void check_stream(struct request_ctl *ctl, int argc)
{
	if (optind < argc)
		kt_usage_error("--stream takes no operand: the requests are its input lines");
	if (ctl->type_set)
		kt_usage_error("--type and --content-type are per line with --stream "
			       "(its TYPE field)");
	if (ctl->yaml)
		kt_usage_error("--stream answers one line each: -o yaml does not apply");
	kt_opt_exclusive(ctl->items, "--items", ctl->stream, "--stream",
			 "an answer is one line");
	kt_opt_exclusive(ctl->watch, "--watch", ctl->stream, "--stream",
			 "a watch never ends, a stream's requests do");
	if (ctl->watch_only || ctl->bookmarks || ctl->watch_timeout_ms || ctl->idle_set ||
	    ctl->chunk_size || ctl->store_dir || ctl->store_file || ctl->spec_changes)
		kt_usage_error("the --watch options do not apply to --stream");
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

/* what a watch keeps between events */
struct watch_state {
	const struct request_ctl *ctl;
	const struct kt_refl *r; /* the objects last reported: --spec-changes */
	bool synced;		 /* --store: SYNCED printed */
};

/* one event out, in the API's watch framing */
static int emit_event(const char *type, const cJSON *object)
{
	cJSON *ev = kt_refl_event(type, object);
	int rc = ev ? kt_emit(ev, 0) : -1;

	if (!ev)
		kt_errmsg("out of memory");
	cJSON_Delete(ev);
	return rc;
}

/*
 * One line of --store's output in one write(2): lines well under PIPE_BUF
 * from several writers on one fifo never mix.
 */
static int write_all(const char *p, size_t left)
{
	ssize_t n;

	while (left) {
		n = write(STDOUT_FILENO, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			kt_errmsg("standard output: write failed: %s", strerror(errno));
			return -1;
		}
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

static int put_line(const struct kt_sb *line)
{
	if (line->oom) {
		kt_errmsg("out of memory");
		return -1;
	}
	return write_all(kt_sb_str(line), line->len);
}

/* TYPE UID NAMESPACE NAME TIME, tab-separated: the object is in its file */
static int store_line(const char *type, const cJSON *object)
{
	const cJSON *meta = kt_json_get_object(object, "metadata");
	const char *ns = kt_json_get_string(meta, "namespace");
	struct kt_sb line = { 0 };
	char now[40];
	int rc;

	kt_sb_printf(&line, "%s\t%s\t%s\t%s\t%s\n", type, kt_json_get_string(meta, "uid"),
		     ns && *ns ? ns : "-", kt_json_get_string(meta, "name"),
		     kt_time_format(kt_now_us(), false, now, sizeof(now)));
	rc = put_line(&line);
	kt_sb_release(&line);
	return rc;
}

/* --store: an object that cannot be kept, said on a line of its own */
static int store_invalid(const struct kt_err *why)
{
	struct kt_sb line = { 0 };
	int rc;

	kt_sb_printf(&line, "INVALID\t%s\n", why->msg);
	rc = put_line(&line);
	kt_sb_release(&line);
	return rc;
}

/*
 * --spec-changes: whether a MODIFIED object is the version the reflector
 * last reported (the one known, at the first list) but for status and what
 * the kubelet's pod config source ignores with it
 */
static bool spec_unchanged(const struct watch_state *w, const char *type,
			   const cJSON *object)
{
	const cJSON *last;

	if (strcmp(type, "MODIFIED"))
		return false;
	last = kt_refl_last(w->r, object);
	return last && kt_objstore_same_spec(last, object);
}

static int watch_event(const char *type, const cJSON *object, void *arg)
{
	struct watch_state *w = arg;
	const struct request_ctl *ctl = w->ctl;
	struct kt_err err = { 0 };
	bool same;

	if (!strcmp(type, "BOOKMARK")) {
		if (!ctl->store_dir)
			return emit_event(type, object);
		if (w->synced)
			return 0;
		w->synced = true;
		return write_all("SYNCED\n", 7);
	}
	if (ctl->store_dir && kt_objstore_check(object, &err) < 0)
		return store_invalid(&err);
	same = ctl->spec_changes && spec_unchanged(w, type, object);
	if (ctl->store_dir &&
	    kt_objstore_write(ctl->store_dir, ctl->store_file, object, &err) < 0) {
		kt_errmsg("%s", err.msg);
		return -1;
	}
	if (same)
		return 0;
	return ctl->store_dir ? store_line(type, object) : emit_event(type, object);
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

/* a store's file that is not an object known is said and left out */
static int store_known(const char *path, cJSON *obj, const struct kt_err *bad, void *arg)
{
	struct kt_refl *r = arg;
	struct kt_err err = { 0 };

	if (!obj) {
		kt_warnmsg("%s: not known", bad->msg);
		return 0;
	}
	if (kt_refl_know(r, obj, &err) == 0)
		return 0;
	if (err.kind != KT_ERR_INPUT) {
		kt_errmsg("%s", err.msg);
		return -1;
	}
	kt_warnmsg("%s: %s: not known", path, err.msg);
	return 0;
}

/*
 * --store: the directory (made when missing) must take files; the objects
 * it holds are the ones known.  -1 after saying why.
 */
static int store_open(const struct request_ctl *ctl, struct kt_refl *r, struct kt_err *err)
{
	const char *dir = ctl->store_dir;
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return kt_error_kind(err, KT_ERR_INPUT, "cannot make store directory '%s': %s",
				     dir, strerror(errno));
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return kt_error_kind(err, KT_ERR_INPUT,
				     "store directory '%s' is not a directory", dir);
	if (access(dir, W_OK | X_OK) < 0)
		return kt_error_kind(err, KT_ERR_INPUT, "cannot write in store directory '%s': %s",
				     dir, strerror(errno));
	return kt_objstore_load(dir, ctl->store_file, kt_max_input(), store_known, r, err);
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
					   (ctl->bookmarks || ctl->store_dir ? KT_REFL_BOOKMARKS
									    : 0) };
	struct kt_refl r = { 0 };
	struct watch_state w = { .ctl = ctl, .r = &r };
	struct kt_err err = { 0 };
	int rc = KT_EXIT_OK;

	if (ctl->store_dir && !ctl->store_file)
		ctl->store_file = KT_OBJSTORE_FILE;
	if (kt_refl_init(&r, &o, watch_event, &w, (unsigned)kt_now_us(), &err) < 0 ||
	    (ctl->known_file && read_known(ctl->known_file, &r, &err) < 0) ||
	    (ctl->store_dir && store_open(ctl, &r, &err) < 0)) {
		if (err.msg[0])
			kt_errmsg("%s", err.msg);
		rc = err.msg[0] ? kt_exit_code(&err) : KT_EXIT_FAILURE;
		goto out;
	}
	if (kt_refl_run(&r, api, &err) < 0) {
		watch_failed(ctl, &err);
		rc = kt_exit_code(&err);
	}
out:
	kt_refl_release(&r);
	return rc;
}

/* ---------------------------------------------------------------- stream */

/* what a line over the input cap answers: its ID when the part kept has one */
static void too_long(struct kt_sb *line, long lineno, struct kt_sb *out)
{
	const char *s = kt_sb_str(line), *tab = strchr(s, '\t');
	char id[KT_REQLINE_ID_MAX + 1] = "-", msg[160];
	size_t n = tab ? (size_t)(tab - s) : 0;
	bool ok = n > 0 && n <= KT_REQLINE_ID_MAX;

	for (size_t i = 0; ok && i < n; i++)
		ok = (unsigned char)s[i] > 0x20 && (unsigned char)s[i] < 0x7f;
	if (ok) {
		memcpy(id, s, n);
		id[n] = '\0';
	}
	snprintf(msg, sizeof(msg), "-:%ld:1: line longer than %zu bytes (see --max-input)",
		 lineno, kt_max_input());
	kt_reqline_answer(out, id, -1, msg);
}

/*
 * One request line, sent and answered into out.  Returns 1 when the line was
 * not a request, else 0.
 */
static int stream_one(struct request_ctl *ctl, struct kt_api *api, char *line, size_t len,
		      long lineno, struct kt_sb *out)
{
	struct kt_reqline r;
	struct kt_err err = { 0 };
	struct kt_api_resp resp = { 0 };
	struct kt_api_req req = { 0 };
	cJSON *body = NULL;
	char *text = NULL, *reply = NULL;
	int invalid = 0;

	if (kt_reqline_parse(line, len, lineno, &r, &err) < 0) {
		kt_reqline_answer(out, r.id, -1, err.msg);
		return 1;
	}
	if (kt_refl_query_watches(r.path)) {
		kt_error_kind(&err, KT_ERR_INPUT, "-:%ld: a watch needs kube-request --watch",
			      lineno);
		invalid = 1;
		goto answer;
	}
	if (r.body_kind == KT_REQLINE_BODY_FILE) {
		body = kt_json_read_file(r.body, kt_max_input(), &err);
		if (!body) {
			kt_err_prefix(&err, "-:%ld", lineno);
			invalid = 1;
			goto answer;
		}
	} else if (r.body_kind == KT_REQLINE_BODY_INLINE) {
		body = r.json;
		r.json = NULL;
	}
	if (body) {
		text = kt_json_print(body, KT_JSON_NO_NEWLINE);
		if (!text) {
			kt_error(&err, "out of memory");
			goto answer;
		}
	}
	req.method = r.method;
	req.path = r.path;
	req.content_type = r.content_type;
	if (!req.content_type && !strcmp(r.method, "PATCH"))
		req.content_type = patch_content_types[0];
	req.body = text;
	req.body_len = text ? strlen(text) : 0;
	if (kt_api_do(api, &req, &resp, &err) == 0) {
		if (resp.json && !ctl->no_body && !cJSON_IsNull(resp.json))
			reply = kt_json_print(resp.json, KT_JSON_NO_NEWLINE);
		kt_reqline_answer(out, r.id, resp.status, reply);
		goto out;
	}
answer:
	kt_reqline_answer(out, r.id, invalid ? -1 : err.http_status > 0 ? err.http_status : 0,
			  err.msg);
out:
	free(reply);
	free(text);
	cJSON_Delete(body);
	cJSON_Delete(r.json);
	kt_api_resp_release(&resp);
	return invalid;
}

/*
 * --stream: a request a line from standard input, each answered on standard
 * output before the next is read, all on the client's one connection (opened
 * again when the server closed it).  A line that is not a request is answered
 * "invalid" and the stream goes on; the exit status then says so (2).
 */
static int run_stream(struct request_ctl *ctl, struct kt_api *api)
{
	struct kt_sb line = { 0 }, out = { 0 };
	long lineno = 0;
	bool over = false, any_invalid = false;
	int c, rc = KT_EXIT_OK;

	for (;;) {
		c = getchar();
		if (c != EOF && c != '\n') {
			if (line.len < kt_max_input())
				kt_sb_put(&line, &(char){ (char)c }, 1);
			else
				over = true;
			continue;
		}
		if (c == EOF && !line.len && !over)
			break;
		lineno++;
		if (line.len && kt_sb_str(&line)[line.len - 1] == '\r')
			kt_sb_trunc(&line, line.len - 1);
		if (line.oom || out.oom) {
			kt_errmsg("out of memory");
			rc = KT_EXIT_FAILURE;
			break;
		}
		if (over) {
			too_long(&line, lineno, &out);
			any_invalid = true;
		} else if (line.len) {
			/* kt_reqline_parse writes a NUL at the end: the builder keeps one */
			if (stream_one(ctl, api, line.buf, line.len, lineno, &out))
				any_invalid = true;
		}
		over = false;
		kt_sb_trunc(&line, 0);
		if (out.len) {
			if (fwrite(kt_sb_str(&out), 1, out.len, stdout) != out.len ||
			    fflush(stdout) == EOF) {
				kt_errmsg("standard output: write failed");
				rc = KT_EXIT_FAILURE;
				break;
			}
			kt_sb_trunc(&out, 0);
		}
		if (c == EOF)
			break;
	}
	if (rc == KT_EXIT_OK && ferror(stdin)) {
		kt_errmsg("standard input: read failed");
		rc = KT_EXIT_FAILURE;
	}
	kt_sb_release(&line);
	kt_sb_release(&out);
	return rc == KT_EXIT_OK && any_invalid ? KT_EXIT_USAGE : rc;
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
	if (ctl->stream) {
		rc = run_stream(ctl, api);
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
		{ "stream", no_argument, NULL, OPT_STREAM },
		{ "no-body", no_argument, NULL, OPT_NO_BODY },
		{ "store", required_argument, NULL, OPT_STORE },
		{ "store-file", required_argument, NULL, OPT_STORE_FILE },
		{ "spec-changes", no_argument, NULL, OPT_SPEC_CHANGES },
		KT_LONGOPTS_API,
		KT_LONGOPTS_FIELD_MANAGER,
		KT_LONGOPTS_COMMON
	};
	static const char shortopts[] = "o:wi" KT_SHORTOPTS_COMMON;
	struct request_ctl ctl = { 0 };
	struct kt_err err = { 0 };
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_CONTENT_TYPE:
			if (!*optarg || strchr(optarg, '\n') || strchr(optarg, '\r'))
				kt_opt_invalid("--content-type", optarg,
					       "empty or with a line break");
			ctl.content_type = optarg;
			ctl.type_set = true;
			break;
		case OPT_TYPE:
			ctl.patch_type =
				patch_content_types[kt_opt_choice("--type", optarg, patch_types)];
			ctl.type_set = true;
			break;
		case 'o':
			ctl.yaml = kt_opt_choice("--output", optarg, output_formats) == 1;
			kt_output_set_yaml(ctl.yaml);
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
		case OPT_STREAM:
			ctl.stream = true;
			break;
		case OPT_NO_BODY:
			ctl.no_body = true;
			break;
		case OPT_STORE:
			if (!*optarg)
				kt_opt_invalid("--store", optarg, "must not be empty");
			ctl.store_dir = optarg;
			break;
		case OPT_STORE_FILE:
			if (kt_objstore_check_file(optarg, &err) < 0)
				kt_opt_invalid("--store-file", optarg, "%s", err.msg);
			ctl.store_file = optarg;
			break;
		case OPT_SPEC_CHANGES:
			ctl.spec_changes = true;
			break;
		case 'p':
		case 'c':
			ctl.pretty = c == 'p';
			kt_common_option(c, usage);
			break;
		default:
			if (!kt_api_option(c, optarg, &ctl.api))
				kt_common_option(c, usage);
		}
	}
	if (ctl.stream)
		check_stream(&ctl, argc);
	else if (ctl.no_body)
		kt_usage_error("--no-body needs --stream");
	else
		parse_operands(&ctl, argc, argv);
	return run(&ctl);
}
