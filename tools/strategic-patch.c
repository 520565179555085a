/* SPDX-License-Identifier: Apache-2.0 */
/* strategic-patch: two-way and three-way strategic merge patches, and applying them */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "kt.h"

enum {
	OPT_NO_OVERWRITE = KT_OPT_TOOL,
};

enum sp_cmd { CMD_DIFF, CMD_DIFF3, CMD_APPLY };

struct sp_ctl {
	enum sp_cmd cmd;
	const char *kind;
	const char *schema_file;
	const char *type;
	bool no_overwrite;
	bool sort_keys;
	char **files;	/* the operands after the command */
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
	      "  -s, --schema=<file>      OpenAPI v2 or v3 document with the patch metadata\n"
	      "  -t, --type=<name>        the definition in --schema to start from\n"
	      "      --no-overwrite       diff3: fail with exit 1 on a conflict with <current>\n"
	      "  -S, --sort-keys          apply: print the object's keys sorted\n",
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
		kt_usage_error("unknown command '%s': expected diff, diff3 or apply", name);
	ctl->cmd = cmds[i].cmd;
	ctl->files = argv + optind + 1;
	ctl->nfiles = argc - optind - 1;
	if (ctl->nfiles < cmds[i].nfiles)
		kt_usage_error("%s: missing operand: expected %d files", name, cmds[i].nfiles);
	if (ctl->nfiles > cmds[i].nfiles)
		kt_usage_error("%s: unexpected operand '%s'", name, ctl->files[cmds[i].nfiles]);
	if (ctl->no_overwrite && ctl->cmd != CMD_DIFF3)
		kt_usage_error("--no-overwrite only applies to diff3");
	if ((ctl->schema_file != NULL) != (ctl->type != NULL))
		kt_usage_error("--schema and --type go together");
	if (ctl->kind && ctl->schema_file)
		kt_usage_error("--kind and --schema exclude each other");
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
		{ "type", required_argument, NULL, 't' },
		{ "no-overwrite", no_argument, NULL, OPT_NO_OVERWRITE },
		{ "sort-keys", no_argument, NULL, 'S' },
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "k:s:t:S" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			ctl->kind = optarg;
			break;
		case 's':
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
		default:
			kt_common_option(c, usage);
		}
	}
}

/* one input document; a parse error names upstream's phrase and the place */
static cJSON *read_doc(const char *path, struct kt_err *err)
{
	cJSON *doc = kt_json_read_file(path, kt_max_input(), err);

	if (!doc && err->kind == KT_ERR_INPUT)
		kt_err_prefix(err, "invalid JSON document");
	if (doc && !cJSON_IsObject(doc) && !cJSON_IsNull(doc)) {
		kt_error_kind(err, KT_ERR_INPUT, "invalid JSON document: '%s': not an object",
			      path);
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/* the schema the options name, or the one the first input's kind names */
static struct kt_schema *pick_schema(const struct sp_ctl *ctl, cJSON **docs, int n,
				     struct kt_err *err)
{
	const char *kind = ctl->kind;

	if (ctl->schema_file)
		return kt_schema_openapi_load(ctl->schema_file, ctl->type, err);
	for (int i = 0; !kind && i < n; i++)
		kind = kt_json_get_string(docs[i], "kind");
	if (!kind) {
		kt_error_kind(err, KT_ERR_INPUT,
			      "no schema: give --kind or --schema, or a 'kind' in the input");
		return NULL;
	}
	return kt_schema_builtin(kind, err);
}

static int report_conflict(const struct kt_err *err, const cJSON *patch, const cJSON *changed)
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
		kt_errmsg("conflict: patch %s conflicts with changes made from original to "
			  "current: %s", a, b);
	} else {
		kt_errmsg("conflict: %s", err->msg);
	}
	free(a);
	free(b);
	return KT_EXIT_FAILURE;
}

static int run(const struct sp_ctl *ctl)
{
	struct kt_err err = { 0 };
	cJSON *docs[3] = { NULL, NULL, NULL }, *out = NULL, *changed = NULL;
	struct kt_schema *schema = NULL;
	int rc = KT_EXIT_USAGE, r = -1;

	for (int i = 0; i < ctl->nfiles; i++)
		if (!(docs[i] = read_doc(ctl->files[i], &err)))
			goto fail;
	schema = pick_schema(ctl, docs, ctl->nfiles, &err);
	if (!schema)
		goto fail;
	switch (ctl->cmd) {
	case CMD_DIFF:
		r = kt_smp_diff(docs[0], docs[1], schema, &out, &err);
		break;
	case CMD_DIFF3:
		r = kt_smp_diff3_sides(docs[0], docs[1], docs[2], schema, !ctl->no_overwrite,
				       &out, &changed, &err);
		break;
	case CMD_APPLY:
		r = kt_smp_apply(docs[0], docs[1], schema, &out, &err);
		break;
	}
	if (r < 0 && err.kind == KT_ERR_CONFLICT) {
		rc = report_conflict(&err, out, changed);
		goto out;
	}
	if (r < 0)
		goto fail;
	rc = kt_emit(out, ctl->cmd != CMD_APPLY || ctl->sort_keys ? KT_JSON_SORTED : 0) < 0
		     ? KT_EXIT_FAILURE
		     : KT_EXIT_OK;
	goto out;
fail:
	kt_errmsg("%s", err.msg);
	rc = kt_exit_code(&err);
out:
	cJSON_Delete(out);
	cJSON_Delete(changed);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(docs[i]);
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
