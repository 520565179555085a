/* SPDX-License-Identifier: Apache-2.0 */
/* node-doctor: why a node is what it is, one finding a line, read-only */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "kt.h"

enum {
	OPT_GRACE = KT_OPT_TOOL,
	OPT_STALE,
	OPT_TIMEOUT,
};

#define TIMEOUT_DEFAULT_MS 5000
#define LEASES "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"

struct doctor_ctl {
	struct kt_api_opts api;
	int64_t grace_ms;
	int64_t stale_ms;
	int64_t timeout_ms;
	bool json;
	char **nodes;
	int nnodes;
};

static const char usage_head[] =
	"Usage: node-doctor [options] <node>...\n"
	"\n"
	"Diagnose nodes, read-only: the Ready condition, the Lease against the\n"
	"node-monitor grace period, the node lifecycle controller's taints, each\n"
	"condition's writer and heartbeat, the addresses, the kubelet endpoint and\n"
	"its certificate, and this host's clock against the API server's.  One\n"
	"line per finding, ok, warn or fail, with what to do about it.\n"
	"\n"
	"Options:\n"
	"      --grace=<duration>   the node-monitor grace period (default 50s; 40s\n"
	"                           in older Kubernetes)\n"
	"      --stale=<duration>   a condition heartbeat older than this is stale\n"
	"                           (default 10m)\n"
	"      --timeout=<duration> limit for each check (default 5s)\n"
	"  -o, --output=<format>    text (default) or json: one document per node\n";

static const char usage_tail[] =
	"\n"
	"Examples:\n"
	"  node-doctor vk-1\n"
	"  node-doctor -o json vk-1 vk-2 | jq -r '.findings[] | select(.level != \"ok\")'\n"
	"\n"
	"See node-doctor(1).\n";

static void usage(FILE *out)
{
	fputs(usage_head, out);
	fputs(KT_USAGE_API, out);
	fputs(KT_USAGE_COMMON, out);
	fputs(usage_tail, out);
}

/*
 * GET path within the check timeout: 0 with *doc, or -1 with err (the
 * status in err->http_status).  *date_us and *local_us, when given, get the
 * reply's Date and the local clock when it came.
 */
static int get(const struct doctor_ctl *ctl, struct kt_api *api, const char *path,
	       cJSON **doc, int64_t *date_us, int64_t *local_us, struct kt_err *err)
{
	struct kt_api_req req = { .method = "GET", .path = path,
				  .timeout_ms = ctl->timeout_ms };
	struct kt_api_resp resp = { 0 };
	int rc = kt_api_do(api, &req, &resp, err);

	if (local_us)
		*local_us = kt_now_us();
	if (date_us)
		*date_us = resp.date_us;
	*doc = rc == 0 ? resp.json : NULL;
	if (rc == 0)
		resp.json = NULL;
	kt_api_resp_release(&resp);
	return rc;
}

/* the node, or NULL after saying why */
static cJSON *read_node(const struct doctor_ctl *ctl, struct kt_api *api, const char *name,
			struct kt_doctor_input *in)
{
	struct kt_err err = { 0 };
	char path[300];
	cJSON *node;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", name);
	if (get(ctl, api, path, &node, &in->server_date_us, &in->date_local_us, &err) == 0)
		return node;
	if (err.http_status == 404)
		kt_errmsg("node '%s' not found", name);
	else if (err.http_status == 403)
		kt_errmsg("cannot read node '%s': needs get on nodes (%s)", name, err.msg);
	else if (err.http_status == 401)
		kt_errmsg("cannot read node '%s': the API server did not accept the "
			  "credentials (%s)",
			  name, err.msg);
	else
		kt_errmsg("cannot read node '%s': %s", name, err.msg);
	return NULL;
}

/* the Lease, or NULL with in->lease_state saying why; err keeps the message */
static cJSON *read_lease(const struct doctor_ctl *ctl, struct kt_api *api, const char *name,
			 struct kt_doctor_input *in, struct kt_err *err)
{
	char path[320];
	cJSON *lease;

	snprintf(path, sizeof(path), LEASES "%s", name);
	if (get(ctl, api, path, &lease, NULL, NULL, err) == 0) {
		in->lease_state = KT_DOCTOR_LEASE_READ;
		return lease;
	}
	in->lease_state = err->http_status == 404   ? KT_DOCTOR_LEASE_NONE
			  : err->http_status == 403 ? KT_DOCTOR_LEASE_FORBIDDEN
						    : KT_DOCTOR_LEASE_ERROR;
	in->lease_error = err->msg;
	return NULL;
}

static int print_report(const struct doctor_ctl *ctl, const char *name,
			const struct kt_doctor_report *r)
{
	struct kt_sb sb = { 0 };
	cJSON *doc;
	int rc;

	if (ctl->json) {
		doc = kt_doctor_report_json(name, r);
		rc = doc ? kt_emit(doc, 0) : -1;
		if (!doc)
			kt_errmsg("out of memory");
		cJSON_Delete(doc);
		return rc;
	}
	for (size_t i = 0; i < r->n; i++) {
		kt_doctor_finding_line(&sb, name, &r->f[i]);
		kt_sb_puts(&sb, "\n");
	}
	if (sb.oom) {
		kt_sb_release(&sb);
		kt_errmsg("out of memory");
		return -1;
	}
	/* one write for the node's lines, so that cron mail never gets half */
	rc = fwrite(sb.buf, 1, sb.len, stdout) == sb.len && fflush(stdout) == 0 ? 0 : -1;
	if (rc < 0)
		kt_errmsg("cannot write the report: %s", strerror(ferror(stdout) ? errno : EIO));
	kt_sb_release(&sb);
	return rc;
}

/* one node: 0 when nothing failed, 1 when something did */
static int doctor_one(const struct doctor_ctl *ctl, struct kt_api *api, const char *name)
{
	struct kt_doctor_input in = { .grace_ms = ctl->grace_ms, .stale_ms = ctl->stale_ms };
	struct kt_doctor_report r = { 0 };
	struct kt_doctor_kubelet kubelet = { 0 };
	struct kt_err err = { 0 }, lerr = { 0 };
	cJSON *node, *lease = NULL;
	char host[256];
	int port = 0, rc = KT_EXIT_FAILURE;

	node = read_node(ctl, api, name, &in);
	if (!node)
		return KT_EXIT_FAILURE;
	in.node = node;
	lease = read_lease(ctl, api, name, &in, &lerr);
	in.lease = lease;
	if (kt_doctor_kubelet_target(node, host, sizeof(host), &port, &err) == 0) {
		KT_V(2, "kubelet probe", "node=\"%s\" host=\"%s\" port=%d", name, host, port);
		kt_doctor_probe(host, port, ctl->timeout_ms, &kubelet);
	} else {
		kubelet.state = KT_DOCTOR_KUBELET_NOT_PROBED;
		snprintf(kubelet.error, sizeof(kubelet.error), "%s", err.msg);
	}
	in.kubelet = &kubelet;
	in.now_us = kt_now_us();
	if (kt_doctor_judge(&in, &r, &err) < 0)
		kt_errmsg("%s", err.msg);
	else if (print_report(ctl, name, &r) == 0)
		rc = kt_doctor_report_level(&r) == KT_DOCTOR_FAIL ? KT_EXIT_FAILURE
								  : KT_EXIT_OK;
	kt_doctor_report_release(&r);
	cJSON_Delete(lease);
	cJSON_Delete(node);
	return rc;
}

static int run(const struct doctor_ctl *ctl)
{
	struct kt_err err = { 0 };
	struct kt_api *api = kt_api_open(&ctl->api, &err);
	int rc = KT_EXIT_OK;

	if (!api) {
		kt_errmsg("%s", err.msg);
		return kt_exit_code(&err);
	}
	for (int i = 0; i < ctl->nnodes; i++)
		if (doctor_one(ctl, api, ctl->nodes[i]) != KT_EXIT_OK)
			rc = KT_EXIT_FAILURE;
	kt_api_close(api);
	return rc;
}

static void check_nodes(struct doctor_ctl *ctl, int argc, char **argv)
{
	struct kt_err err = { 0 };

	if (optind == argc)
		kt_usage_error("missing node name");
	for (int i = optind; i < argc; i++)
		if (kt_node_name_check(argv[i], &err) < 0)
			kt_usage_error("%s", err.msg);
	ctl->nodes = argv + optind;
	ctl->nnodes = argc - optind;
}

static const char *const text_json[] = { "text", "json", NULL };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "grace", required_argument, NULL, OPT_GRACE },
		{ "stale", required_argument, NULL, OPT_STALE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		KT_LONGOPT_OUTPUT,
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON
	};
	struct doctor_ctl ctl = { .grace_ms = KT_DOCTOR_GRACE_DEFAULT_MS,
				  .stale_ms = KT_DOCTOR_STALE_DEFAULT_MS,
				  .timeout_ms = TIMEOUT_DEFAULT_MS };
	int c;

	kt_init(argv);
	while ((c = getopt_long(argc, argv, "o:" KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_GRACE:
			ctl.grace_ms = kt_opt_duration_min_ms("--grace", optarg, 1);
			break;
		case OPT_STALE:
			ctl.stale_ms = kt_opt_duration_min_ms("--stale", optarg, 1);
			break;
		case OPT_TIMEOUT:
			ctl.timeout_ms = kt_opt_duration_min_ms("--timeout", optarg, 1);
			break;
		case 'o':
			ctl.json = kt_opt_choice("--output", optarg, text_json) == 1;
			break;
		default:
			if (!kt_api_option(c, optarg, &ctl.api))
				kt_common_option(c, usage);
		}
	}
	check_nodes(&ctl, argc, argv);
	return run(&ctl);
}
