/* SPDX-License-Identifier: Apache-2.0 */
/* strategic-patch: two-way and three-way strategic merge patches, and applying them */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "kt.h"

enum {
	OPT_NO_OVERWRITE = KT_OPT_TOOL,
	OPT_STREAM,
};

enum sp_cmd { CMD_DIFF, CMD_DIFF3, CMD_APPLY };

struct sp_ctl {
	enum sp_cmd cmd;
	const char *kind;
	const char *schema_file;
	const char *type;
	bool no_overwrite;
	bool sort_keys;
	bool stream;
	char **files; /* the operands after the command */
	int nfiles;
};

static void usage(FILE *out)
{
	fputs("Usage: strategic-patch diff  [options] <original> <modified>\n"
	      "       strategic-patch diff3 [options] <original> <modified> <current>\n"
	      "       strategic-patch apply [options] <object> <patch>\n"
	      "\n"
	      "Compute or apply a Kubernetes strategic merge patch, as the API server and\n"
	      "kubectl do: diff is the two-way patch from <original> to <modified>, diff3\n"
	      "the three-way patch kubectl apply sends (<original> is the last applied\n"
	      "object, <current> the live one), apply applies <patch> to <object>.\n"
	      "Each operand is a JSON or YAML file, or '-' for standard input.\n"
	      "\n"
	      "Options:\n"
	      "  -k, --kind=<kind>        built-in schema: Node, Pod, Lease, ConfigMap,\n"
	      "                           Service, Deployment or ObjectMeta (default: the\n"
	      "                           input's kind)\n"
	      "      --schema=<file>      OpenAPI v2 or v3 document with the patch metadata\n"
	      "  -t, --definition=<name>  the definition in --schema to start from\n"
	      "      --no-overwrite       diff3: fail with exit 1 on a conflict with <current>\n"
	      "  -S, --sort-keys          apply: print the object's keys sorted\n"
	      "      --stream             each operand is a stream of documents, taken\n"
	      "                           in step: one result line per set\n",
	      out);
	fputs(KT_USAGE_COMMON, out);
	fputs("\n"
	      "Example:\n"
	      "  strategic-patch diff3 last-applied.json desired.json live.json\n"
	      "\n"
	      "See strategic-patch(1).\n",
	      out);
}

static void parse_command(struct sp_ctl *ctl, int argc, char **argv)
{
	static const struct {
		const char *name;
		enum sp_cmd cmd;
		int nfiles;
	} cmds[] = {
		{ "diff", CMD_DIFF, 2 },
		{ "diff3", CMD_DIFF3, 3 },
		{ "apply", CMD_APPLY, 2 },
	};
	const char *name;
	size_t i;

	if (optind == argc)
		kt_usage_error("missing command: diff, diff3 or apply");
	name = argv[optind];
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(name, cmds[i].name) == 0)
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0]))
		kt_usage_error("unknown command '%s': expected diff, diff3 or apply",
			       name);
	ctl->cmd = cmds[i].cmd;
	ctl->files = argv + optind + 1;
	ctl->nfiles = argc - optind - 1;
	if (ctl->nfiles < cmds[i].nfiles)
		kt_usage_error("%s: missing operand: expected %d files", name,
			       cmds[i].nfiles);
	if (ctl->nfiles > cmds[i].nfiles)
		kt_usage_error("%s: unexpected operand '%s'", name,
			       ctl->files[cmds[i].nfiles]);
	if (ctl->no_overwrite && ctl->cmd != CMD_DIFF3)
		kt_usage_error("--no-overwrite only applies to diff3");
	if (ctl->sort_keys && ctl->cmd != CMD_APPLY)
		kt_usage_error("--sort-keys only applies to apply");
	if ((ctl->schema_file != NULL) != (ctl->type != NULL))
		kt_usage_error("--schema and --definition go together");
	kt_opt_exclusive(ctl->kind, "--kind", ctl->schema_file, "--schema", NULL);
	int stdin_uses = 0;

	for (int k = 0; k < ctl->nfiles; k++)
		stdin_uses += strcmp(ctl->files[k], "-") == 0;
	if (stdin_uses > 1)
		kt_usage_error("standard input ('-') can be read only once");
}

static void parse_options(struct sp_ctl *ctl, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "schema", required_argument, NULL, 's' },
		{ "definition", required_argument, NULL, 't' },
		{ "no-overwrite", no_argument, NULL, OPT_NO_OVERWRITE },
		{ "sort-keys", no_argument, NULL, 'S' },
		{ "stream", no_argument, NULL, OPT_STREAM },
		KT_LONGOPTS_COMMON
	};
	int c;

	while ((c = getopt_long(argc, argv, "k:t:S" KT_SHORTOPTS_COMMON, longopts,
				NULL)) != -1) {
		switch (c) {
		case 'k':
			ctl->kind = optarg;
			break;
		case 's': /* --schema: long only, -s is --state elsewhere */
			ctl->schema_file = optarg;
			break;
		case 't':
			ctl->type = optarg;
			break;
		case 'S':
			ctl->sort_keys = true;
			break;
		case OPT_NO_OVERWRITE:
			ctl->no_overwrite = true;
			break;
		case OPT_STREAM:
			ctl->stream = true;
			break;
		default:
			kt_common_option(c, usage);
		}
	}
}

/* a document must be an object (or null, which counts as {}) */
static cJSON *check_doc(cJSON *doc, const char *path, struct kt_err *err)
{
	if (doc && !cJSON_IsObject(doc) && !cJSON_IsNull(doc)) {
		kt_error_kind(err, KT_ERR_INPUT,
			      "invalid JSON document: '%s': not an object", path);
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/* a parse error names upstream's phrase and the place; a file that cannot be
 * read is no document at all */
static void parse_error(struct kt_err *err)
{
	if (err->kind == KT_ERR_INPUT && err->about != KT_ERR_ABOUT_FILE)
		kt_err_prefix(err, "invalid JSON document");
}

/* the schema the options name, or the one the first input's kind names */
static struct kt_schema *pick_schema(const struct sp_ctl *ctl, cJSON **docs, int n,
				     struct kt_err *err)
{
	const char *kind = NULL;

	for (int i = 0; !kind && i < n; i++)
		kind = kt_json_get_string(docs[i], "kind");
	if (!kind) {
		kt_error_kind(
			err, KT_ERR_INPUT,
			"no schema: give --kind or --schema, or a 'kind' in the input");
		return NULL;
	}
	return kt_schema_builtin(kind, err);
}

static int report_conflict(const struct kt_err *err, const cJSON *patch,
			   const cJSON *changed, const char *where)
{
	char *a, *b;

	if (!patch || !changed) {
		kt_errmsg("conflict: %s", err->msg);
		return KT_EXIT_FAILURE;
	}
	a = kt_json_print(patch, KT_JSON_SORTED);
	b = kt_json_print(changed, KT_JSON_SORTED);
	if (a && b) {
		a[strcspn(a, "\n")] = '\0';
		b[strcspn(b, "\n")] = '\0';
		kt_errmsg(
			"%sconflict: patch %s conflicts with changes made from original to "
			"current: %s",
			where, a, b);
	} else {
		kt_errmsg("conflict: %s", err->msg);
	}
	free(a);
	free(b);
	return KT_EXIT_FAILURE;
}

/* one set of documents: computes and prints, or reports; returns the exit code */
static int one(const struct sp_ctl *ctl, cJSON **docs, const struct kt_schema *given,
	       const char *where)
{
	struct kt_err err = { 0 };
	cJSON *out = NULL, *changed = NULL;
	struct kt_schema *own = NULL;
	const struct kt_schema *schema = given;
	int rc, r = -1;

	if (!schema && !(schema = own = pick_schema(ctl, docs, ctl->nfiles, &err))) {
		kt_errmsg("%s%s", where, err.msg);
		return kt_exit_code(&err);
	}
	switch (ctl->cmd) {
	case CMD_DIFF:
		r = kt_smp_diff(docs[0], docs[1], schema, &out, &err);
		break;
	case CMD_DIFF3:
		r = kt_smp_diff3_sides(docs[0], docs[1], docs[2], schema,
				       !ctl->no_overwrite, &out, &changed, &err);
		break;
	case CMD_APPLY:
		/* the inputs are not needed after: apply in place, no copies */
		r = kt_smp_apply_take(docs[0], docs[1], schema, &out, &err);
		docs[0] = docs[1] = NULL;
		break;
	}
	if (r == 0) {
		unsigned flags =
			ctl->cmd != CMD_APPLY || ctl->sort_keys ? KT_JSON_SORTED : 0;

		rc = kt_emit(out, flags) < 0 ? KT_EXIT_FAILURE : KT_EXIT_OK;
	} else if (err.kind == KT_ERR_CONFLICT) {
		rc = report_conflict(&err, out, changed, where);
	} else {
		kt_errmsg("%s%s", where, err.msg);
		rc = kt_exit_code(&err);
	}
	cJSON_Delete(out);
	cJSON_Delete(changed);
	kt_schema_free(own);
	return rc;
}

static struct kt_schema *given_schema(const struct sp_ctl *ctl, struct kt_err *err)
{
	if (ctl->schema_file)
		return kt_schema_openapi_load(ctl->schema_file, ctl->type, err);
	if (ctl->kind)
		return kt_schema_builtin(ctl->kind, err);
	return NULL;
}

static int run_single(const struct sp_ctl *ctl, const struct kt_schema *schema)
{
	struct kt_err err = { 0 };
	cJSON *docs[3] = { NULL, NULL, NULL };
	int rc;

	for (int i = 0; i < ctl->nfiles; i++) {
		docs[i] = kt_json_read_file(ctl->files[i], kt_max_input(), &err);
		if (!docs[i])
			parse_error(&err);
		if (!docs[i] || !(docs[i] = check_doc(docs[i], ctl->files[i], &err))) {
			kt_errmsg("%s", err.msg);
			rc = kt_exit_code(&err);
			goto out;
		}
	}
	rc = one(ctl, docs, schema, "");
out:
	for (int i = 0; i < 3; i++)
		cJSON_Delete(docs[i]);
	return rc;
}

/*
 * --stream: the n-th documents of the operands form the n-th set.  A set that
 * fails prints nothing, is reported as "document N: ..." and the rest go on;
 * the exit status is the worst one.  A syntax error or a count mismatch stops.
 */
static int run_stream(const struct sp_ctl *ctl, const struct kt_schema *schema)
{
	struct kt_json_reader *rd[3] = { NULL, NULL, NULL };
	struct kt_err err = { 0 };
	int rc = KT_EXIT_OK;
	bool bad = false;

	for (int i = 0; i < ctl->nfiles && !bad; i++)
		bad = !(rd[i] = kt_json_reader_open(ctl->files[i], kt_max_input(),
						    KT_JSON_STREAM, &err));
	for (long n = 1; !bad; n++) {
		cJSON *docs[3] = { NULL, NULL, NULL };
		int got = 0, r = 0;
		char where[48];

		for (int i = 0; i < ctl->nfiles && !bad; i++) {
			r = kt_json_reader_next(rd[i], &docs[i], &err);
			if (r < 0)
				parse_error(&err);
			got += r > 0;
			bad = r < 0 ||
			      (r > 0 &&
			       !(docs[i] = check_doc(docs[i], ctl->files[i], &err)));
		}
		if (!bad && got && got != ctl->nfiles) {
			kt_error_kind(&err, KT_ERR_INPUT,
				      "the operands hold different numbers of documents");
			bad = true;
		}
		if (!bad && got) {
			snprintf(where, sizeof(where), "document %ld: ", n);
			r = one(ctl, docs, schema, where);
			rc = r > rc ? r : rc;
		}
		for (int k = 0; k < 3; k++)
			cJSON_Delete(docs[k]);
		if (!got)
			break;
	}
	if (bad) {
		kt_errmsg("%s", err.msg);
		rc = kt_exit_code(&err);
	}
	for (int i = 0; i < 3; i++)
		kt_json_reader_close(rd[i]);
	return rc;
}

static int run(const struct sp_ctl *ctl)
{
	struct kt_err err = { 0 };
	struct kt_schema *schema = given_schema(ctl, &err);
	int rc;

	if (!schema && (ctl->schema_file || ctl->kind)) {
		kt_errmsg("%s", err.msg);
		return kt_exit_code(&err);
	}
	rc = ctl->stream ? run_stream(ctl, schema) : run_single(ctl, schema);
	kt_schema_free(schema);
	return rc;
}

int main(int argc, char **argv)
{
	struct sp_ctl ctl = { 0 };

	kt_init(argv);
	parse_options(&ctl, argc, argv);
	parse_command(&ctl, argc, argv);
	return run(&ctl);
}
