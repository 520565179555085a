/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet-serve: the kubelet API of kt-agent nodes, over TLS */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "kt.h"
#include "serve_http.h"
#include "tls.h"

enum {
	OPT_STATE_DIR = KT_OPT_TOOL,
	OPT_ADDRESS,
	OPT_PORT,
	OPT_CERT,
	OPT_KEY,
	OPT_CLIENT_CA,
	OPT_AUTHZ,
	OPT_MAX_CONNS,
	OPT_TOKEN_WEBHOOK,
	OPT_NODE_NAME,
	OPT_PROVIDER,
	OPT_STREAM_IDLE,
	OPT_STREAM_CREATE,
};

#define MAX_DIRS 64

static const char usage_head[] =
    "Usage: kubelet-serve [options] --state-dir=<dir>...\n"
    "\n"
    "Serve the kubelet API of kt-agent nodes over TLS, so that kubectl logs\n"
    "and the API server's node proxy work on them: /healthz, /pods,\n"
    "/runningpods/, /containerLogs/NS/POD/CONTAINER with the kubelet's log\n"
    "options, /stats/summary and /metrics/resource, and with --provider /exec,\n"
    "/attach and /portForward over SPDY/3.1 or WebSocket.  Clients authenticate with\n"
    "a certificate the --client-ca-file bundle verifies or a bearer token; each\n"
    "request is authorized by a SubjectAccessReview, as the kubelet's are.\n"
    "\n"
    "Options:\n"
    "      --state-dir=<dir>    a kt-agent state directory to serve (repeat for\n"
    "                           several nodes)\n"
    "      --address=<ip>       the address to listen on (default 0.0.0.0)\n"
    "      --port=<port>        the port to listen on (default 10250)\n"
    "      --tls-cert-file=<file> the serving certificate (PEM, with its chain);\n"
    "                           loaded again when it changes\n"
    "      --tls-private-key-file=<file> its key (PEM)\n"
    "      --client-ca-file=<file> CA bundle that verifies client certificates\n"
    "                           (user: the CN, groups: each O)\n"
    "      --authorization-mode=<mode> Webhook (default): a SubjectAccessReview\n"
    "                           to the API server for each request; AlwaysAllow:\n"
    "                           every authenticated client may do everything\n"
    "      --authentication-token-webhook bearer tokens checked by a TokenReview\n"
    "      --node-name=<name>   the node SubjectAccessReviews name (default: the\n"
    "                           host name)\n"
    "      --max-connections=<n> past this many open connections, requests are\n"
    "                           answered 503 (default 4096)\n"
    "      --provider=<dir>     the kt-agent provider directory whose exec, attach\n"
    "                           and port-forward programs serve /exec, /attach and\n"
    "                           /portForward (without it they are 501)\n"
    "      --stream-creation-timeout=<duration> an exec or attach client must\n"
    "                           open every stream within this (default 30s)\n"
    "      --stream-idle-timeout=<duration> an exec, attach or port-forward\n"
    "                           connection with nothing sent either way this long\n"
    "                           is closed and its process killed (default 30s)\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  kubelet-serve --state-dir=/var/lib/kt-agent --client-ca-file=ca.crt \\\n"
    "      --tls-cert-file=kubelet.crt --tls-private-key-file=kubelet.key \\\n"
    "      --authorization-mode=AlwaysAllow\n"
    "\n"
    "See kubelet-serve(1).\n";

static void usage(FILE *out)
{
	fputs(usage_head, out);
	fputs(KT_USAGE_API, out);
	fputs(KT_USAGE_COMMON, out);
	fputs(usage_tail, out);
}

/* enough descriptors for the connections: the soft limit raised to the hard */
static void raise_nofile(int want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= (rlim_t)want)
		return;
	rl.rlim_cur = rl.rlim_max < (rlim_t)want ? rl.rlim_max : (rlim_t)want;
	setrlimit(RLIMIT_NOFILE, &rl);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
		{ "address", required_argument, NULL, OPT_ADDRESS },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "tls-cert-file", required_argument, NULL, OPT_CERT },
		{ "tls-private-key-file", required_argument, NULL, OPT_KEY },
		{ "client-ca-file", required_argument, NULL, OPT_CLIENT_CA },
		{ "authorization-mode", required_argument, NULL, OPT_AUTHZ },
		{ "max-connections", required_argument, NULL, OPT_MAX_CONNS },
		{ "authentication-token-webhook", no_argument, NULL, OPT_TOKEN_WEBHOOK },
		{ "node-name", required_argument, NULL, OPT_NODE_NAME },
		{ "provider", required_argument, NULL, OPT_PROVIDER },
		{ "stream-idle-timeout", required_argument, NULL, OPT_STREAM_IDLE },
		{ "stream-creation-timeout", required_argument, NULL, OPT_STREAM_CREATE },
		KT_LONGOPTS_API,
		KT_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 }
	};
	const char *dirs[MAX_DIRS + 1] = { 0 }, *addrs[5] = { 0 };
	struct kt_tls_opts to = { 0 };
	struct kt_serve_http_opts so = { .address = "0.0.0.0",
					 .port = 10250,
					 .max_conns = 4096,
					 .header_timeout_s = 30,
					 .max_header_bytes = 1 << 20,
					 .stream_create_ms = 30000,
					 .stream_idle_ms = 30000,
					 .state_dirs = dirs };
	const char *authz = "Webhook";
	struct kt_err err = { 0 };
	struct kt_api_opts api = { 0 };
	char host[256] = "", node[256] = "";
	int ndirs = 0, naddrs = 0, c, rc;

	kt_init(argv);
	static const char *const authz_modes[] = { "AlwaysAllow", "Webhook", NULL };

	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_STATE_DIR:
			if (ndirs == MAX_DIRS)
				kt_usage_error("too many --state-dir: at most %d", MAX_DIRS);
			if (!*optarg)
				kt_opt_invalid("--state-dir", optarg, "must not be empty");
			dirs[ndirs++] = optarg;
			break;
		case OPT_ADDRESS:
			so.address = optarg;
			break;
		case OPT_PORT:
			so.port = (int)kt_opt_long("--port", optarg, 0, 65535);
			break;
		case OPT_CERT:
			to.cert_file = optarg;
			break;
		case OPT_KEY:
			to.key_file = optarg;
			break;
		case OPT_CLIENT_CA:
			to.client_ca_file = optarg;
			break;
		case OPT_AUTHZ:
			authz =
			    authz_modes[kt_opt_choice("--authorization-mode", optarg, authz_modes)];
			break;
		case OPT_MAX_CONNS:
			so.max_conns = (int)kt_opt_long("--max-connections", optarg, 1, 1000000);
			break;
		case OPT_TOKEN_WEBHOOK:
			so.token_webhook = true;
			break;
		case OPT_NODE_NAME:
			if (kt_node_name_check(optarg, &err) < 0)
				kt_usage_error("%s", err.msg);
			so.node_name = optarg;
			break;
		case OPT_PROVIDER:
			if (!*optarg)
				kt_opt_invalid("--provider", optarg, "must not be empty");
			so.provider = optarg;
			break;
		case OPT_STREAM_IDLE:
			so.stream_idle_ms =
			    (long)kt_opt_duration_ms("--stream-idle-timeout", optarg);
			break;
		case OPT_STREAM_CREATE:
			so.stream_create_ms =
			    (long)kt_opt_duration_ms("--stream-creation-timeout", optarg);
			break;
		default:
			if (!kt_api_option(c, optarg, &api))
				kt_common_option(c, usage);
		}
	}
	if (optind < argc)
		kt_usage_error("unexpected argument '%s'", argv[optind]);
	if (ndirs == 0)
		kt_usage_error("missing --state-dir");
	if (so.provider && access(so.provider, X_OK) < 0)
		kt_usage_error("--provider: %s: not a directory it can search", so.provider);
	if (!to.cert_file != !to.key_file)
		kt_usage_error("--tls-cert-file and --tls-private-key-file go together");
	so.always_allow = strcmp(authz, "AlwaysAllow") == 0;
	for (int i = 0; i < ndirs; i++)
		if (access(dirs[i], R_OK | X_OK) < 0)
			kt_usage_error("%s: not a directory it can read", dirs[i]);
	if (!to.cert_file) {
		if (strcmp(so.address, "0.0.0.0") && strcmp(so.address, "::"))
			addrs[naddrs++] = so.address;
		if (gethostname(host, sizeof(host) - 1) == 0 && host[0])
			addrs[naddrs++] = host;
		addrs[naddrs++] = "localhost";
		addrs[naddrs++] = "127.0.0.1";
		to.addrs = addrs;
	}
	so.tls = kt_tls_new(&to, &err);
	if (!so.tls)
		kt_die(kt_exit_code(&err), "%s", err.msg);
	if (kt_tls_self_signed(so.tls))
		kt_warnmsg("no --tls-cert-file: serving a self-signed certificate for %s%s%s, "
			   "which no client can verify",
			   addrs[0], addrs[1] ? " and others" : "", "");
	if (!to.client_ca_file)
		kt_warnmsg("no --client-ca-file: no client can authenticate, every request "
			   "is 401");
	if (so.always_allow)
		kt_warnmsg("--authorization-mode=AlwaysAllow: every authenticated client may "
			   "read every pod's logs");
	if (!so.node_name) {
		if (gethostname(node, sizeof(node) - 1) < 0 || !node[0])
			snprintf(node, sizeof(node), "localhost");
		so.node_name = node;
	}
	if (!so.always_allow || so.token_webhook) {
		api.program = kt_prog;
		so.api = kt_api_open(&api, &err);
		if (!so.api) {
			kt_tls_free(so.tls);
			kt_die(kt_exit_code(&err), "%s", err.msg);
		}
	}
	raise_nofile(so.max_conns + 64);
#ifdef M_TRIM_THRESHOLD
	/* a log read whole frees its sent output at the heap's top, 64 KiB a read:
	 * glibc's default 128 KiB threshold gives it back to the kernel and faults
	 * it in again each time, most of the CPU of a large read */
	mallopt(M_TRIM_THRESHOLD, 16 * 1024 * 1024);
#endif
	rc = kt_serve_http_run(&so, &err);
	if (rc < 0)
		kt_errmsg("%s", err.msg);
	kt_api_close(so.api);
	kt_tls_free(so.tls);
	return rc < 0 ? kt_exit_code(&err) : KT_EXIT_OK;
}
