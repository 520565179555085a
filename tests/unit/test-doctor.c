/* SPDX-License-Identifier: Apache-2.0 */
/* test-doctor: node-doctor's judgement of a node, a Lease, a kubelet and the clocks */
#include <stdlib.h>
#include <string.h>

#include "kt.h"
#include "tap.h"

/* 2026-12-02T13:00:00Z */
#define NOW_US 1796216400000000LL
#define S 1000000LL
#define DAY (86400 * S)

/* a node as kt-agent keeps it: Ready written by the agent, a foreign
 * KernelDeadlock written by node-problem-detector an hour ago */
static const char NODE[] =
	"{\"metadata\":{\"name\":\"vk-1\",\"managedFields\":["
	"{\"manager\":\"kt-agent\",\"operation\":\"Update\",\"time\":\"2026-12-02T12:59:50Z\","
	"\"subresource\":\"status\",\"fieldsV1\":{\"f:status\":{\"f:conditions\":{"
	"\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\"f:lastHeartbeatTime\":{},\"f:status\":{}}}}}},"
	"{\"manager\":\"node-problem-detector\",\"operation\":\"Update\","
	"\"time\":\"2026-12-02T11:00:00Z\",\"subresource\":\"status\",\"fieldsV1\":{"
	"\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":\\\"KernelDeadlock\\\"}\":{"
	"\"f:lastHeartbeatTime\":{},\"f:status\":{}}}}}}]},"
	"\"spec\":{},"
	"\"status\":{\"conditions\":["
	"{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\","
	"\"lastHeartbeatTime\":\"2026-12-02T12:59:50Z\","
	"\"lastTransitionTime\":\"2026-12-02T12:50:00Z\"},"
	"{\"type\":\"KernelDeadlock\",\"status\":\"False\",\"reason\":\"KernelHasNoDeadlock\","
	"\"lastHeartbeatTime\":\"2026-12-02T12:00:00Z\","
	"\"lastTransitionTime\":\"2026-12-02T11:00:00Z\"}],"
	"\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.7\"},"
	"{\"type\":\"InternalIP\",\"address\":\"fd00::7\"},"
	"{\"type\":\"Hostname\",\"address\":\"vk-1\"}],"
	"\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}}}}";

static const char LEASE[] = "{\"spec\":{\"holderIdentity\":\"vk-1\",\"leaseDurationSeconds\":40,"
			    "\"renewTime\":\"2026-12-02T12:59:55.000000Z\"}}";

static struct kt_doctor_kubelet healthy_kubelet(void)
{
	struct kt_doctor_kubelet k = { .state = KT_DOCTOR_KUBELET_ANSWERED,
				       .url = "https://10.0.0.7:10250/healthz",
				       .status = 200,
				       .body = "ok",
				       .have_cert = true,
				       .not_before_us = NOW_US - 100 * DAY,
				       .not_after_us = NOW_US + 265 * DAY };
	return k;
}

struct fixture {
	cJSON *node, *lease;
	struct kt_doctor_kubelet kubelet;
	struct kt_doctor_input in;
	struct kt_doctor_report r;
};

static void fixture_init(struct fixture *f, const char *node, const char *lease)
{
	memset(f, 0, sizeof(*f));
	f->node = tap_doc(node);
	f->lease = lease ? tap_doc(lease) : NULL;
	f->kubelet = healthy_kubelet();
	f->in = (struct kt_doctor_input){ .node = f->node,
					  .lease = f->lease,
					  .lease_state = lease ? KT_DOCTOR_LEASE_READ
							       : KT_DOCTOR_LEASE_NONE,
					  .now_us = NOW_US,
					  .grace_ms = KT_DOCTOR_GRACE_DEFAULT_MS,
					  .stale_ms = KT_DOCTOR_STALE_DEFAULT_MS,
					  .server_date_us = NOW_US - S / 2,
					  .date_local_us = NOW_US,
					  .kubelet = &f->kubelet };
}

static void fixture_release(struct fixture *f)
{
	kt_doctor_report_release(&f->r);
	cJSON_Delete(f->lease);
	cJSON_Delete(f->node);
}

/* judges f and returns the line of the finding of check (and subject), or
 * "(none)"; the returned text is static */
static const char *judge_line(struct fixture *f, const char *check, const char *subject)
{
	static char line[2048];
	struct kt_err err = { 0 };
	struct kt_sb sb = { 0 };

	kt_doctor_report_release(&f->r);
	snprintf(line, sizeof(line), "(none)");
	if (kt_doctor_judge(&f->in, &f->r, &err) < 0) {
		snprintf(line, sizeof(line), "(error: %s)", err.msg);
		return line;
	}
	for (size_t i = 0; i < f->r.n; i++) {
		if (strcmp(f->r.f[i].check, check) ||
		    (subject && strcmp(f->r.f[i].subject, subject)))
			continue;
		kt_doctor_finding_line(&sb, "vk-1", &f->r.f[i]);
		snprintf(line, sizeof(line), "%s", kt_sb_str(&sb));
		break;
	}
	kt_sb_release(&sb);
	return line;
}

static void test_healthy(void)
{
	struct fixture f;
	const char *line;

	fixture_init(&f, NODE, LEASE);
	/* the foreign condition aside, everything is ok */
	f.in.stale_ms = 7200 * 1000;
	line = judge_line(&f, "lease", NULL);
	tap_ok(kt_doctor_report_level(&f.r) == KT_DOCTOR_OK, "a healthy node is ok overall");
	tap_str(line,
		"ok   vk-1 lease: renewed by vk-1 at 2026-12-02T12:59:55.000000Z, 5s ago, "
		"within the 50s grace period",
		"the lease's holder, renew time and age");
	tap_str(judge_line(&f, "ready", NULL),
		"ok   vk-1 ready: Ready since 2026-12-02T12:50:00Z (10m0s ago): KubeletReady",
		"Ready since when and why");
	tap_str(judge_line(&f, "condition", "Ready"),
		"ok   vk-1 condition Ready: True (KubeletReady), written by kt-agent, "
		"heartbeat 10s ago",
		"a condition's writer from managedFields, and its heartbeat's age");
	tap_str(judge_line(&f, "addresses", NULL),
		"ok   vk-1 addresses: InternalIP 10.0.0.7, InternalIP fd00::7, Hostname vk-1",
		"two InternalIPs (dual-stack) are no duplicate");
	tap_str(judge_line(&f, "taint", NULL),
		"ok   vk-1 taint: no unreachable or not-ready taint from the node lifecycle "
		"controller",
		"no controller taint");
	tap_str(judge_line(&f, "kubelet", NULL),
		"ok   vk-1 kubelet: https://10.0.0.7:10250/healthz answers 200 (ok)",
		"a kubelet that answers 200");
	tap_str(judge_line(&f, "certificate", NULL),
		"ok   vk-1 certificate: the kubelet's certificate is valid until "
		"2027-08-24T13:00:00Z, 265 days from now",
		"a certificate with most of its life left");
	tap_str(judge_line(&f, "clock", NULL),
		"ok   vk-1 clock: this host's clock is within 2s of the API server's",
		"clocks that agree");
	fixture_release(&f);
}

static void test_lease(void)
{
	struct fixture f;

	fixture_init(&f, NODE, "{\"spec\":{\"holderIdentity\":\"vk-1\","
			       "\"renewTime\":\"2026-12-02T12:58:00.000000Z\"}}");
	tap_str(judge_line(&f, "lease", NULL),
		"fail vk-1 lease: renewed by vk-1 at 2026-12-02T12:58:00.000000Z, 2m0s ago: "
		"past the 50s node-monitor grace period, after which the node lifecycle "
		"controller marks the node Unknown; restart the node's heartbeat (the kubelet, "
		"or node-ping) and check that it reaches the API server",
		"a Lease older than the grace period fails");
	tap_ok(kt_doctor_report_level(&f.r) == KT_DOCTOR_FAIL, "and the report fails");
	f.in.grace_ms = 180000;
	tap_str(judge_line(&f, "lease", NULL),
		"warn vk-1 lease: renewed by vk-1 at 2026-12-02T12:58:00.000000Z, 2m0s ago: over "
		"half the 3m0s grace period; check the heartbeat's interval and the API "
		"server's latency: the kubelet renews every 10s",
		"--grace moves the line: over half of it warns");
	f.in.grace_ms = 600000;
	tap_ok(!strncmp(judge_line(&f, "lease", NULL), "ok ", 3), "and within it is ok");
	fixture_release(&f);

	fixture_init(&f, NODE, "{\"spec\":{\"holderIdentity\":\"agent-7\","
			       "\"renewTime\":\"2026-12-02T12:59:59.000000Z\"}}");
	tap_ok(!strncmp(judge_line(&f, "lease", NULL), "warn vk-1 lease: held by agent-7, ",
			16 + 18),
	       "a Lease held by another identity warns");
	fixture_release(&f);

	fixture_init(&f, NODE, NULL);
	tap_str(judge_line(&f, "lease", NULL),
		"warn vk-1 lease: no Lease kube-node-lease/vk-1: the node lifecycle controller "
		"judges the node by its Ready heartbeat alone; start a Lease heartbeat for the "
		"node (the kubelet's, or node-ping)",
		"no Lease warns");
	f.in.lease_state = KT_DOCTOR_LEASE_FORBIDDEN;
	tap_str(judge_line(&f, "lease", NULL),
		"warn vk-1 lease: cannot read Lease kube-node-lease/vk-1: needs get on leases "
		"(coordination.k8s.io) in the namespace kube-node-lease; grant get on leases in "
		"kube-node-lease (a Role and a RoleBinding), or run as a user who has it",
		"a Lease the caller may not read names the permission");
	fixture_release(&f);
}

static void test_conditions(void)
{
	struct fixture f;

	fixture_init(&f, NODE, LEASE);
	tap_str(judge_line(&f, "condition", "KernelDeadlock"),
		"warn vk-1 condition KernelDeadlock: False (KernelHasNoDeadlock), written by "
		"node-problem-detector, heartbeat 1h0m0s ago: no writer refreshes it any more; "
		"if its writer (node-problem-detector) is gone for good, remove it with "
		"node-patch3way --remove-condition KernelDeadlock; else restart that writer",
		"a condition no writer refreshes, with its writer and the way out");
	tap_str(judge_line(&f, "condition", "Ready"),
		"ok   vk-1 condition Ready: True (KubeletReady), written by kt-agent, "
		"heartbeat 10s ago",
		"while the live writer's condition is ok");
	f.in.stale_ms = 7200 * 1000;
	tap_ok(!strncmp(judge_line(&f, "condition", "KernelDeadlock"), "ok ", 3),
	       "--stale longer than the heartbeat's age: ok");
	tap_str(kt_doctor_condition_writer(f.node, "KernelDeadlock"), "node-problem-detector",
		"the writer owns k:{\"type\":\"KernelDeadlock\"}");
	tap_ok(kt_doctor_condition_writer(f.node, "MemoryPressure") == NULL,
	       "no writer for a condition nobody owns");
	fixture_release(&f);

	/* the node itself gone quiet: its conditions point at the heartbeat */
	fixture_init(&f, NODE, "{\"spec\":{\"holderIdentity\":\"vk-1\","
			       "\"renewTime\":\"2026-12-02T11:00:00.000000Z\"}}");
	tap_str(judge_line(&f, "condition", "KernelDeadlock"),
		"warn vk-1 condition KernelDeadlock: False (KernelHasNoDeadlock), written by "
		"node-problem-detector, heartbeat 1h0m0s ago; the node's status as a whole is "
		"stale: see the ready and lease findings",
		"a stale condition on a node gone quiet is no removal candidate");
	fixture_release(&f);

	fixture_init(&f,
		     "{\"metadata\":{\"name\":\"vk-1\"},\"status\":{\"conditions\":["
		     "{\"type\":\"Ready\",\"status\":\"Unknown\",\"reason\":\"NodeStatusUnknown\","
		     "\"message\":\"Kubelet stopped posting node status.\","
		     "\"lastHeartbeatTime\":\"2026-12-02T12:59:00Z\","
		     "\"lastTransitionTime\":\"2026-12-02T12:58:00Z\"},"
		     "{\"type\":\"MemoryPressure\",\"status\":\"True\",\"reason\":\"Low\","
		     "\"message\":\"8Mi left\",\"lastHeartbeatTime\":\"2026-12-02T12:59:00Z\"}]}}",
		     LEASE);
	tap_str(judge_line(&f, "ready", NULL),
		"fail vk-1 ready: Ready is Unknown since 2026-12-02T12:58:00Z (2m0s ago): "
		"NodeStatusUnknown: Kubelet stopped posting node status.; the node lifecycle "
		"controller no longer hears from the node: check that its kubelet runs and "
		"reaches the API server (see the lease finding)",
		"Ready Unknown fails, with since when and why");
	tap_str(judge_line(&f, "condition", "MemoryPressure"),
		"warn vk-1 condition MemoryPressure: True (Low: 8Mi left), written by an "
		"unknown manager, heartbeat 1m0s ago; act on what an unknown manager reports, "
		"or check that it runs if the status is Unknown",
		"a pressure condition that holds warns");
	fixture_release(&f);

	fixture_init(&f, "{\"metadata\":{\"name\":\"vk-1\"}}", LEASE);
	tap_str(judge_line(&f, "ready", NULL),
		"fail vk-1 ready: no Ready condition: the node has never posted its status; "
		"check that the kubelet (or kt-agent) runs and can write the node's status",
		"no Ready condition fails");
	fixture_release(&f);
}

static void test_taints_addresses(void)
{
	struct fixture f;

	fixture_init(&f,
		     "{\"metadata\":{\"name\":\"vk-1\"},\"spec\":{\"taints\":["
		     "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoSchedule\"},"
		     "{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\","
		     "\"timeAdded\":\"2026-12-02T12:55:00Z\"}]},"
		     "\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.7\"},"
		     "{\"type\":\"InternalIP\",\"address\":\"10.0.0.7\"}]}}",
		     LEASE);
	judge_line(&f, "taint", NULL);
	tap_ok(f.r.n > 3 && !strcmp(f.r.f[2].check, "taint") &&
		       f.r.f[2].level == KT_DOCTOR_WARN && !strcmp(f.r.f[3].check, "taint") &&
		       f.r.f[3].level == KT_DOCTOR_FAIL,
	       "unreachable:NoSchedule warns, unreachable:NoExecute fails");
	tap_str(f.r.f[3].message,
		"node.kubernetes.io/unreachable:NoExecute since 2026-12-02T12:55:00Z (5m0s ago): "
		"pods that do not tolerate it are evicted",
		"a taint since its timeAdded");
	tap_str(judge_line(&f, "addresses", NULL),
		"warn vk-1 addresses: InternalIP 10.0.0.7 is listed more than once; write the "
		"addresses again without the duplicate (node-patch3way replaces the list whole)",
		"a duplicate address warns");
	fixture_release(&f);

	fixture_init(&f, "{\"metadata\":{\"name\":\"vk-1\"},\"status\":{}}", LEASE);
	tap_str(judge_line(&f, "addresses", NULL),
		"fail vk-1 addresses: no addresses: neither the API server (logs, exec) nor this "
		"check can reach the kubelet; have the node's writer set status.addresses (an "
		"InternalIP and a Hostname at least)",
		"no address fails");
	fixture_release(&f);
}

static void test_kubelet(void)
{
	struct fixture f;

	fixture_init(&f, NODE, LEASE);
	f.kubelet.state = KT_DOCTOR_KUBELET_UNREACHABLE;
	f.kubelet.have_cert = false;
	snprintf(f.kubelet.error, sizeof(f.kubelet.error), "Connection refused");
	tap_str(judge_line(&f, "kubelet", NULL),
		"fail vk-1 kubelet: https://10.0.0.7:10250/healthz: Connection refused; check "
		"that the kubelet listens on that address and port and that no firewall stands "
		"between",
		"an unreachable kubelet is a finding");
	tap_str(judge_line(&f, "certificate", NULL), "(none)", "and no certificate finding");

	f.kubelet = healthy_kubelet();
	f.kubelet.status = 401;
	tap_ok(!strncmp(judge_line(&f, "kubelet", NULL), "ok ", 3),
	       "a 401 from /healthz: the kubelet serves");
	f.kubelet.status = 500;
	tap_ok(!strncmp(judge_line(&f, "kubelet", NULL), "fail ", 5), "a 500 fails");

	f.kubelet = healthy_kubelet();
	f.kubelet.not_after_us = NOW_US - 3600 * S;
	tap_str(judge_line(&f, "certificate", NULL),
		"fail vk-1 certificate: the kubelet's certificate expired at "
		"2026-12-02T12:00:00Z, 1h0m0s ago; renew the kubelet's serving certificate "
		"(rotate it, or turn on serverTLSBootstrap) and restart the kubelet",
		"an expired certificate fails");
	f.kubelet.not_after_us = NOW_US + 5 * DAY;
	tap_ok(!strncmp(judge_line(&f, "certificate", NULL), "warn ", 5),
	       "under 7 days left warns");
	f.kubelet.not_before_us = NOW_US - 2 * DAY;
	f.kubelet.not_after_us = NOW_US + 10 * DAY;
	tap_ok(!strncmp(judge_line(&f, "certificate", NULL), "ok ", 3),
	       "10 days left of 12: ok");
	f.kubelet.not_before_us = NOW_US - 350 * DAY;
	f.kubelet.not_after_us = NOW_US + 30 * DAY;
	tap_str(judge_line(&f, "certificate", NULL),
		"warn vk-1 certificate: the kubelet's certificate expires at "
		"2027-01-01T13:00:00Z, in 30 days, of a life of 380 days; renew the kubelet's "
		"serving certificate (rotate it, or turn on serverTLSBootstrap) and restart the "
		"kubelet",
		"under a tenth of its life left warns");
	fixture_release(&f);
}

static void test_clock(void)
{
	struct fixture f;

	fixture_init(&f, NODE, LEASE);
	f.in.server_date_us = NOW_US - 6 * S;
	tap_str(judge_line(&f, "clock", NULL),
		"warn vk-1 clock: this host's clock is 5s ahead of the API server's; synchronise "
		"this host's clock and the API server's with NTP (chrony, systemd-timesyncd): "
		"the ages above are read on this host's",
		"a few seconds of skew warns");
	f.in.server_date_us = NOW_US + 30 * S;
	tap_ok(!strncmp(judge_line(&f, "clock", NULL), "fail vk-1 clock: this host's clock is "
						    "30s behind",
			 37 + 10),
	       "half a minute fails");
	f.in.server_date_us = 0;
	tap_ok(!strncmp(judge_line(&f, "clock", NULL), "warn ", 5), "no Date header warns");
	fixture_release(&f);
}

static void test_target(void)
{
	struct kt_err err = { 0 };
	char host[256] = "";
	int port = 0;
	cJSON *n = tap_doc(NODE);

	tap_ok(kt_doctor_kubelet_target(n, host, sizeof(host), &port, &err) == 0 &&
		       !strcmp(host, "10.0.0.7") && port == 10250,
	       "the first InternalIP and daemonEndpoints' port");
	cJSON_Delete(n);
	n = tap_doc("{\"status\":{\"addresses\":[{\"type\":\"ExternalIP\",\"address\":\"1.2.3.4\"},"
		    "{\"type\":\"Hostname\",\"address\":\"vk-1\"}],"
		    "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":8443}}}}");
	tap_ok(kt_doctor_kubelet_target(n, host, sizeof(host), &port, &err) == 0 &&
		       !strcmp(host, "vk-1") && port == 8443,
	       "Hostname before ExternalIP");
	cJSON_Delete(n);
	n = tap_doc("{\"status\":{\"addresses\":[{\"type\":\"Hostname\",\"address\":\"a/b@c\"}],"
		    "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":8443}}}}");
	tap_ok(kt_doctor_kubelet_target(n, host, sizeof(host), &port, &err) < 0,
	       "an address that is no host name is never put in a URL");
	tap_str(err.msg, "the node has no address to reach the kubelet on", "and says so");
	cJSON_Delete(n);
	n = tap_doc("{\"status\":{\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":0}}}}");
	tap_ok(kt_doctor_kubelet_target(n, host, sizeof(host), &port, &err) < 0,
	       "port 0 is no endpoint");
	tap_str(err.msg, "status.daemonEndpoints.kubeletEndpoint.Port is not set", "and says so");
	cJSON_Delete(n);
}

static void test_cert_time(void)
{
	int64_t us = 0;

	tap_ok(kt_doctor_cert_time("Dec  2 13:00:00 2026 GMT", &us, NULL) == 0 && us == NOW_US,
	       "OpenSSL's certinfo time");
	tap_ok(kt_doctor_cert_time("2026-12-02 13:00:00 GMT", &us, NULL) == 0 && us == NOW_US,
	       "libcurl's own certinfo time");
	tap_ok(kt_doctor_cert_time("Dec  2 13:00:00 2026 GMT junk", &us, NULL) < 0,
	       "trailing text is refused");
	tap_ok(kt_doctor_cert_time("", &us, NULL) < 0, "an empty time is refused");
}

static void test_json(void)
{
	struct fixture f;
	cJSON *doc;
	char *text;

	fixture_init(&f, "{\"metadata\":{\"name\":\"vk-1\"}}", LEASE);
	f.in.kubelet = NULL;
	judge_line(&f, "ready", NULL);
	doc = kt_doctor_report_json("vk-1", &f.r);
	text = kt_json_print(doc, 0);
	tap_ok(text && !strncmp(text,
				"{\"node\":\"vk-1\",\"result\":\"fail\",\"findings\":[{\"level\":"
				"\"fail\",\"check\":\"ready\",\"message\":\"no Ready condition: "
				"the node has never posted its status\",\"action\":",
				150),
	       "one document per node, the worst level as its result");
	free(text);
	cJSON_Delete(doc);
	fixture_release(&f);
}

int main(void)
{
	test_healthy();
	test_lease();
	test_conditions();
	test_taints_addresses();
	test_kubelet();
	test_clock();
	test_target();
	test_cert_time();
	test_json();
	return tap_done();
}
