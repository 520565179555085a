/* SPDX-License-Identifier: Apache-2.0 */
/* node-bootstrap: a node's client and serving certificates, the kubelet's TLS bootstrap */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "kt.h"

enum {
	OPT_BOOTSTRAP_KUBECONFIG = KT_OPT_TOOL,
	OPT_CERT_DIR,
	OPT_NODE,
	OPT_SERVING,
	OPT_ADDRESS,
	OPT_ROTATE,
	OPT_WAIT,
};

#define MAX_ADDRESSES 64

struct boot_ctl {
	struct kt_boot_opts o;
	const char *addresses[MAX_ADDRESSES + 1];
	int naddresses;
	bool issued[2]; /* a certificate of each kind was issued by this run */
	int out_failed;
};

static const char usage_head[] =
    "Usage: node-bootstrap [options] --bootstrap-kubeconfig=<file> --kubeconfig=<file>\n"
    "                      --cert-dir=<dir> --node=<name>\n"
    "\n"
    "Get a node's client certificate (and with --serving its serving certificate)\n"
    "the way the kubelet bootstraps TLS: a new ECDSA key, a CertificateSigningRequest\n"
    "made with the bootstrap credentials, a watch until it is issued, the key and\n"
    "certificate written to <dir> and a kubeconfig that uses them.  One JSON line\n"
    "per certificate put in place or reused.\n"
    "\n"
    "Options:\n"
    "      --bootstrap-kubeconfig=<file>\n"
    "                           the kubeconfig with the bootstrap token\n"
    "      --kubeconfig=<file>  the kubeconfig to write for the node\n"
    "      --cert-dir=<dir>     where the key and certificate files go (made 0700;\n"
    "                           refused when group or others may enter it)\n"
    "      --node=<name>        the node's name (CN=system:node:<name>)\n"
    "      --serving            the serving certificate too (signer\n"
    "                           kubernetes.io/kubelet-serving; approved by hand)\n"
    "      --address=<address>  a SAN of the serving certificate, an IP or DNS name;\n"
    "                           repeat it, at least one IP\n"
    "      --rotate             stay running and renew each certificate at 70-90%\n"
    "                           of its lifetime\n"
    "      --wait=<duration>    give up on a CSR not issued within this (default:\n"
    "                           wait as long as it takes)\n"
    "      --request-timeout=<duration>\n"
    "                           limit for a call with its retries (default 30s)\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  node-bootstrap --bootstrap-kubeconfig=/etc/kt/bootstrap-kubeconfig \\\n"
    "      --kubeconfig=/var/lib/kt/kubeconfig --cert-dir=/var/lib/kt/pki --node=edge-1\n"
    "  node-bootstrap ... --serving --address=10.0.0.7 --address=edge-1 --rotate\n"
    "\n"
    "See node-bootstrap(1).\n";

static void usage(FILE *out)
{
	fputs(usage_head, out);
	fputs(KT_USAGE_COMMON, out);
	fputs(usage_tail, out);
}

static void add_time(cJSON *doc, const char *key, int64_t s)
{
	char buf[64];

	cJSON_AddStringToObject(doc, key, kt_time_format(s * 1000000, false, buf, sizeof(buf)));
}

/* one line for a certificate in place; messages for the rest */
static void on_report(const struct kt_boot_event *ev, void *arg)
{
	struct boot_ctl *ctl = arg;
	const char *kind = kt_boot_kind_name(ev->kind);
	char at[64];
	cJSON *doc;

	if (ev->type == KT_BOOT_PENDING) {
		kt_errmsg("CSR '%s' for the %s certificate is pending: approve it with "
			  "'kubectl certificate approve %s'",
			  ev->csr, kind, ev->csr);
		return;
	}
	if (ev->type == KT_BOOT_RETRY) {
		kt_warnmsg("renewing the %s certificate failed: %s; trying again at %s", kind,
			   ev->msg, kt_time_format(ev->retry_at * 1000000, false, at, sizeof(at)));
		return;
	}
	doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "certificate", kind);
	cJSON_AddStringToObject(doc, "event",
				ev->type == KT_BOOT_REUSED ? "reused"
				: ctl->issued[ev->kind]	   ? "renewed"
							   : "issued");
	if (ev->type == KT_BOOT_ISSUED)
		ctl->issued[ev->kind] = true;
	cJSON_AddStringToObject(doc, "file", ev->file);
	if (ev->csr)
		cJSON_AddStringToObject(doc, "csr", ev->csr);
	cJSON_AddStringToObject(doc, "subject", ev->info->subject);
	cJSON_AddStringToObject(doc, "serial", ev->info->serial);
	add_time(doc, "notBefore", ev->info->not_before);
	add_time(doc, "notAfter", ev->info->not_after);
	if (ev->renew_at)
		add_time(doc, "renewAt", ev->renew_at);
	if (kt_emit(doc, 0) < 0)
		ctl->out_failed = 1;
	cJSON_Delete(doc);
}

static void check(struct boot_ctl *ctl)
{
	struct kt_err err = { 0 };
	bool ip = false;

	if (!ctl->o.bootstrap_kubeconfig)
		kt_usage_error("missing --bootstrap-kubeconfig");
	if (!ctl->o.kubeconfig)
		kt_usage_error("missing --kubeconfig");
	if (!ctl->o.cert_dir)
		kt_usage_error("missing --cert-dir");
	if (!ctl->o.node)
		kt_usage_error("missing --node");
	if (kt_node_name_check(ctl->o.node, &err) < 0)
		kt_usage_error("--node: %s", err.msg);
	if (ctl->naddresses && !ctl->o.serving)
		kt_usage_error("--address is for the serving certificate: add --serving");
	for (int i = 0; i < ctl->naddresses; i++)
		ip = ip || kt_x509_is_ip(ctl->addresses[i]);
	if (ctl->o.serving && !ip)
		kt_usage_error("--serving needs at least one --address that is an IP");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bootstrap-kubeconfig", required_argument, NULL, OPT_BOOTSTRAP_KUBECONFIG },
		{ "kubeconfig", required_argument, NULL, KT_OPT_KUBECONFIG },
		{ "cert-dir", required_argument, NULL, OPT_CERT_DIR },
		{ "node", required_argument, NULL, OPT_NODE },
		{ "serving", no_argument, NULL, OPT_SERVING },
		{ "address", required_argument, NULL, OPT_ADDRESS },
		{ "rotate", no_argument, NULL, OPT_ROTATE },
		{ "wait", required_argument, NULL, OPT_WAIT },
		{ "request-timeout", required_argument, NULL, KT_OPT_REQUEST_TIMEOUT },
		KT_LONGOPTS_COMMON
	};
	static struct boot_ctl ctl;
	struct kt_err err = { 0 };
	int c;

	kt_init(argv);
	ctl.o.api.program = "node-bootstrap";
	while ((c = getopt_long(argc, argv, KT_SHORTOPTS_COMMON, longopts, NULL)) != -1) {
		switch (c) {
		case OPT_BOOTSTRAP_KUBECONFIG:
			ctl.o.bootstrap_kubeconfig = optarg;
			break;
		case KT_OPT_KUBECONFIG:
			ctl.o.kubeconfig = optarg;
			break;
		case OPT_CERT_DIR:
			ctl.o.cert_dir = optarg;
			break;
		case OPT_NODE:
			ctl.o.node = optarg;
			break;
		case OPT_SERVING:
			ctl.o.serving = true;
			break;
		case OPT_ADDRESS:
			if (!*optarg)
				kt_opt_invalid("--address", optarg, "an IP or a DNS name");
			if (ctl.naddresses == MAX_ADDRESSES)
				kt_usage_error("--address: at most %d", MAX_ADDRESSES);
			ctl.addresses[ctl.naddresses++] = optarg;
			break;
		case OPT_ROTATE:
			ctl.o.rotate = true;
			break;
		case OPT_WAIT:
			ctl.o.wait_ms = kt_opt_duration_min_ms("--wait", optarg, 1);
			break;
		default:
			if (!kt_api_option(c, optarg, &ctl.o.api))
				kt_common_option(c, usage);
		}
	}
	if (optind < argc)
		kt_usage_error("unexpected argument '%s'", argv[optind]);
	check(&ctl);
	ctl.o.addresses = ctl.addresses;
	ctl.o.report = on_report;
	ctl.o.report_arg = &ctl;
	ctl.o.api.max_reply = kt_max_input();
	if (kt_boot_run(&ctl.o, &err) < 0) {
		kt_errmsg("%s", err.msg);
		return kt_exit_code(&err);
	}
	return ctl.out_failed;
}
