/* SPDX-License-Identifier: Apache-2.0 */
/* doctor: a node, its Lease, its kubelet endpoint and the clocks judged into findings */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "doctor.h"
#include "json.h"
#include "json_go.h"
#include "timeutil.h"

#define SECOND_US 1000000LL
#define DAY_US (86400 * SECOND_US)
/* a clock this far from the API server's is worth a word; this far, the
 * ages above are wrong enough to mislead */
#define SKEW_WARN_US (2 * SECOND_US)
#define SKEW_FAIL_US (10 * SECOND_US)
/* a certificate with less left than this, or than a tenth of its life */
#define CERT_WARN_US (7 * DAY_US)

static const char TAINT_UNREACHABLE[] = "node.kubernetes.io/unreachable";
static const char TAINT_NOT_READY[] = "node.kubernetes.io/not-ready";

const char *kt_doctor_level_name(enum kt_doctor_level level)
{
	return level == KT_DOCTOR_FAIL ? "fail" : level == KT_DOCTOR_WARN ? "warn" : "ok";
}

void kt_doctor_report_release(struct kt_doctor_report *r)
{
	if (!r)
		return;
	free(r->f);
	memset(r, 0, sizeof(*r));
}

enum kt_doctor_level kt_doctor_report_level(const struct kt_doctor_report *r)
{
	enum kt_doctor_level worst = KT_DOCTOR_OK;

	for (size_t i = 0; i < r->n; i++)
		if (r->f[i].level > worst)
			worst = r->f[i].level;
	return worst;
}

/*
 * Adds a finding.  The message and the action hold text the node's writers
 * chose (reasons, messages, holders, condition types): each is made safe for a
 * terminal on one line.
 */
__attribute__((format(printf, 6, 7))) static void
add(struct kt_doctor_report *r, enum kt_doctor_level level, const char *check,
    const char *subject, const char *action, const char *fmt, ...)
{
	struct kt_doctor_finding *f;
	char text[sizeof(f->message)];
	va_list ap;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct kt_doctor_finding *nf = realloc(r->f, cap * sizeof(*nf));

		if (!nf) {
			r->oom = true;
			return;
		}
		r->f = nf;
		r->cap = cap;
	}
	f = &r->f[r->n++];
	memset(f, 0, sizeof(*f));
	f->level = level;
	snprintf(f->check, sizeof(f->check), "%s", check);
	kt_plain_text(f->subject, sizeof(f->subject), subject ? subject : "");
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	kt_plain_text(f->message, sizeof(f->message), text);
	/* an action can name what a writer chose too (a condition's type) */
	if (level != KT_DOCTOR_OK)
		kt_plain_text(f->action, sizeof(f->action), action ? action : "");
}

/* a whole-second age ("1m30s"); negative ages print with their sign */
static const char *age_text(int64_t us, char *buf, size_t size)
{
	return kt_duration_format(us / SECOND_US * 1000, buf, size);
}

/* a certificate's span: whole days past two of them, else as age_text */
static const char *span_text(int64_t us, char *buf, size_t size)
{
	if (us < 2 * DAY_US)
		return age_text(us, buf, size);
	snprintf(buf, size, "%lld days", (long long)(us / DAY_US));
	return buf;
}

static bool time_of(const cJSON *obj, const char *key, int64_t *us)
{
	const char *s = kt_json_get_string(obj, key);

	return s && kt_time_parse(s, us, NULL) == 0;
}

/* "2026-12-02T12:00:00Z (5m0s ago)" or "an unknown time" */
static const char *when_text(const cJSON *obj, const char *key, int64_t now_us, char *buf,
			     size_t size)
{
	char t[40], a[32];
	int64_t us;

	if (!time_of(obj, key, &us)) {
		snprintf(buf, size, "an unknown time");
		return buf;
	}
	snprintf(buf, size, "%s (%s ago)", kt_time_format(us, false, t, sizeof(t)),
		 age_text(now_us - us, a, sizeof(a)));
	return buf;
}

static const char *str_or(const cJSON *obj, const char *key, const char *dflt)
{
	const char *s = kt_json_get_string(obj, key);

	return s && *s ? s : dflt;
}

static const char *node_name(const struct kt_doctor_input *in)
{
	const char *s = kt_json_get_string(kt_json_get_object(in->node, "metadata"), "name");

	return s ? s : "";
}

static const cJSON *find_condition(const cJSON *node, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, kt_json_path(node, "status.conditions"))
	{
		const char *t = kt_json_get_string(c, "type");

		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

/* ------------------------------------------------------------------ ready */

static void check_ready(const struct kt_doctor_input *in, struct kt_doctor_report *r)
{
	const cJSON *c = find_condition(in->node, "Ready");
	const char *status, *reason, *msg;
	char since[96];

	if (!c) {
		add(r, KT_DOCTOR_FAIL, "ready", NULL,
		    "check that the kubelet (or kt-agent) runs and can write the node's status",
		    "no Ready condition: the node has never posted its status");
		return;
	}
	status = str_or(c, "status", "");
	reason = str_or(c, "reason", "no reason");
	msg = str_or(c, "message", "no message");
	when_text(c, "lastTransitionTime", in->now_us, since, sizeof(since));
	if (!strcmp(status, "True"))
		add(r, KT_DOCTOR_OK, "ready", NULL, NULL, "Ready since %s: %s", since, reason);
	else if (!strcmp(status, "False"))
		add(r, KT_DOCTOR_FAIL, "ready", NULL,
		    "read the reason given and the kubelet's log on the node",
		    "NotReady since %s: %s: %s", since, reason, msg);
	else if (!strcmp(status, "Unknown"))
		add(r, KT_DOCTOR_FAIL, "ready", NULL,
		    "the node lifecycle controller no longer hears from the node: check that "
		    "its kubelet runs and reaches the API server (see the lease finding)",
		    "Ready is Unknown since %s: %s: %s", since, reason, msg);
	else
		add(r, KT_DOCTOR_FAIL, "ready", NULL,
		    "have the node's writer set Ready to True, False or Unknown",
		    "Ready has the status '%s', which is none of True, False, Unknown", status);
}

/* ------------------------------------------------------------------ lease */

static void check_lease_read(const struct kt_doctor_input *in, struct kt_doctor_report *r)
{
	const cJSON *spec = kt_json_get_object(in->lease, "spec");
	const char *holder = str_or(spec, "holderIdentity", "nobody");
	char t[40], a[32], g[32];
	int64_t renew, age;

	kt_duration_format(in->grace_ms, g, sizeof(g));
	if (!time_of(spec, "renewTime", &renew)) {
		add(r, KT_DOCTOR_FAIL, "lease", NULL,
		    "start the node's heartbeat (the kubelet's, or node-ping)",
		    "Lease kube-node-lease/%s held by %s was never renewed (no renewTime)",
		    node_name(in), holder);
		return;
	}
	age = in->now_us - renew;
	kt_time_format(renew, true, t, sizeof(t));
	age_text(age < 0 ? -age : age, a, sizeof(a));
	if (age > in->grace_ms * 1000)
		add(r, KT_DOCTOR_FAIL, "lease", NULL,
		    "restart the node's heartbeat (the kubelet, or node-ping) and check that it "
		    "reaches the API server",
		    "renewed by %s at %s, %s ago: past the %s node-monitor grace period, after "
		    "which the node lifecycle controller marks the node Unknown",
		    holder, t, a, g);
	else if (age < -SKEW_WARN_US)
		add(r, KT_DOCTOR_WARN, "lease", NULL,
		    "synchronise the clock of the host that renews the Lease with NTP",
		    "renewed by %s at %s, %s in the future", holder, t, a);
	else if (strcmp(holder, node_name(in)))
		add(r, KT_DOCTOR_WARN, "lease", NULL,
		    "find what renews this Lease: the kubelet holds its node's Lease under "
		    "the node's name",
		    "held by %s, not by the node itself; renewed at %s, %s ago", holder, t, a);
	else if (age > in->grace_ms * 1000 / 2)
		add(r, KT_DOCTOR_WARN, "lease", NULL,
		    "check the heartbeat's interval and the API server's latency: the kubelet "
		    "renews every 10s",
		    "renewed by %s at %s, %s ago: over half the %s grace period", holder, t, a,
		    g);
	else
		add(r, KT_DOCTOR_OK, "lease", NULL, NULL,
		    "renewed by %s at %s, %s ago, within the %s grace period", holder, t, a, g);
}

static void check_lease(const struct kt_doctor_input *in, struct kt_doctor_report *r)
{
	switch (in->lease_state) {
	case KT_DOCTOR_LEASE_READ:
		check_lease_read(in, r);
		break;
	case KT_DOCTOR_LEASE_NONE:
		add(r, KT_DOCTOR_WARN, "lease", NULL,
		    "start a Lease heartbeat for the node (the kubelet's, or node-ping)",
		    "no Lease kube-node-lease/%s: the node lifecycle controller judges the "
		    "node by its Ready heartbeat alone",
		    node_name(in));
		break;
	case KT_DOCTOR_LEASE_FORBIDDEN:
		add(r, KT_DOCTOR_WARN, "lease", NULL,
		    "grant get on leases in kube-node-lease (a Role and a RoleBinding), or run "
		    "as a user who has it",
		    "cannot read Lease kube-node-lease/%s: needs get on leases "
		    "(coordination.k8s.io) in the namespace kube-node-lease",
		    node_name(in));
		break;
	case KT_DOCTOR_LEASE_ERROR:
		add(r, KT_DOCTOR_WARN, "lease", NULL,
		    "run again; if it keeps failing, check the API server",
		    "cannot read Lease kube-node-lease/%s: %s", node_name(in),
		    in->lease_error ? in->lease_error : "unknown error");
		break;
	}
}

/* ----------------------------------------------------------------- taints */

static void check_taints(const struct kt_doctor_input *in, struct kt_doctor_report *r)
{
	const cJSON *spec = kt_json_get_object(in->node, "spec"), *t;
	bool any = false;
	char since[96];

	cJSON_ArrayForEach(t, kt_json_get_array(spec, "taints"))
	{
		const char *key = str_or(t, "key", ""), *effect = str_or(t, "effect", "");
		bool unreachable = !strcmp(key, TAINT_UNREACHABLE);

		if (!unreachable && strcmp(key, TAINT_NOT_READY))
			continue;
		any = true;
		when_text(t, "timeAdded", in->now_us, since, sizeof(since));
		add(r, !strcmp(effect, "NoExecute") ? KT_DOCTOR_FAIL : KT_DOCTOR_WARN, "taint",
		    key,
		    unreachable ? "fix the node's heartbeat (see the lease finding): the "
				  "controller removes the taint once the node is Ready again"
				: "fix what makes the node NotReady (see the ready finding): the "
				  "controller removes the taint once the node is Ready again",
		    "%s:%s since %s%s", key, effect, since,
		    !strcmp(effect, "NoExecute") ? ": pods that do not tolerate it are evicted"
						 : "");
	}
	if (cJSON_IsTrue(kt_json_get(spec, "unschedulable")))
		add(r, KT_DOCTOR_WARN, "taint", "node.kubernetes.io/unschedulable",
		    "run kubectl uncordon on the node once the work on it is done",
		    "the node is cordoned (spec.unschedulable): no new pods are scheduled on it");
	else if (!any)
		add(r, KT_DOCTOR_OK, "taint", NULL, NULL,
		    "no unreachable or not-ready taint from the node lifecycle controller");
}

/* ------------------------------------------------------------- conditions */

/* the item of fieldsV1 that stands for the condition of that type, if any */
static const cJSON *owned_condition(const cJSON *entry, const char *type)
{
	const cJSON *conds = kt_json_path(kt_json_get_object(entry, "fieldsV1"),
					  "f:status.f:conditions");
	cJSON *s = cJSON_CreateString(type);
	char *q = s ? cJSON_PrintUnformatted(s) : NULL;
	const cJSON *item = NULL;
	struct kt_sb key = { 0 };

	if (q) {
		kt_sb_printf(&key, "k:{\"type\":%s}", q);
		if (!key.oom)
			item = kt_json_get_object(conds, kt_sb_str(&key));
	}
	kt_sb_release(&key);
	cJSON_free(q);
	cJSON_Delete(s);
	return item;
}

const char *kt_doctor_condition_writer(const cJSON *node, const char *type)
{
	const cJSON *e;
	const char *hb_writer = NULL, *latest = NULL;
	int64_t latest_us = INT64_MIN;

	cJSON_ArrayForEach(e, kt_json_path(node, "metadata.managedFields"))
	{
		const cJSON *item = owned_condition(e, type);
		const char *manager = kt_json_get_string(e, "manager");
		int64_t t = INT64_MIN;

		if (!item || !manager)
			continue;
		if (kt_json_get(item, "f:lastHeartbeatTime"))
			hb_writer = manager;
		if (!time_of(e, "time", &t))
			t = INT64_MIN;
		if (!latest || t >= latest_us) {
			latest = manager;
			latest_us = t;
		}
	}
	return hb_writer ? hb_writer : latest;
}

/* the node still speaks: its Lease is fresh, or else its Ready heartbeat */
static bool node_alive(const struct kt_doctor_input *in)
{
	const cJSON *ready = find_condition(in->node, "Ready");
	int64_t t;

	if (in->lease_state == KT_DOCTOR_LEASE_READ &&
	    time_of(kt_json_get_object(in->lease, "spec"), "renewTime", &t))
		return in->now_us - t <= in->grace_ms * 1000;
	return ready && time_of(ready, "lastHeartbeatTime", &t) &&
	       in->now_us - t <= in->stale_ms * 1000;
}

static void check_condition(const struct kt_doctor_input *in, const cJSON *c, bool alive,
			    struct kt_doctor_report *r)
{
	const char *type = str_or(c, "type", "(no type)");
	const char *status = str_or(c, "status", "(no status)");
	const char *reason = str_or(c, "reason", "no reason");
	const char *writer = kt_doctor_condition_writer(in->node, type);
	char hb[64], a[32], action[320];
	int64_t t;
	bool stale = true;

	if (time_of(c, "lastHeartbeatTime", &t)) {
		stale = in->now_us - t > in->stale_ms * 1000;
		snprintf(hb, sizeof(hb), "heartbeat %s ago",
			 age_text(in->now_us - t, a, sizeof(a)));
	} else {
		snprintf(hb, sizeof(hb), "no heartbeat");
	}
	if (!writer)
		writer = "an unknown manager";
	if (stale && alive) {
		snprintf(action, sizeof(action),
			 "if its writer (%s) is gone for good, remove it with node-patch3way "
			 "--remove-condition %s; else restart that writer",
			 writer, type);
		add(r, KT_DOCTOR_WARN, "condition", type, action,
		    "%s (%s), written by %s, %s: no writer refreshes it any more", status,
		    reason, writer, hb);
	} else if (stale) {
		add(r, KT_DOCTOR_WARN, "condition", type,
		    "the node's status as a whole is stale: see the ready and lease findings",
		    "%s (%s), written by %s, %s", status, reason, writer, hb);
	} else if (strcmp(type, "Ready") && strcmp(status, "False")) {
		snprintf(action, sizeof(action),
			 "act on what %s reports, or check that it runs if the status is Unknown",
			 writer);
		add(r, KT_DOCTOR_WARN, "condition", type, action, "%s (%s: %s), written by %s, %s",
		    status, reason, str_or(c, "message", "no message"), writer, hb);
	} else {
		add(r, KT_DOCTOR_OK, "condition", type, NULL, "%s (%s), written by %s, %s", status,
		    reason, writer, hb);
	}
}

static void check_conditions(const struct kt_doctor_input *in, struct kt_doctor_report *r)
{
	bool alive = node_alive(in);
	const cJSON *c;

	cJSON_ArrayForEach(c, kt_json_path(in->node, "status.conditions"))
		check_condition(in, c, alive, r);
}

/* -------------------------------------------------------------- addresses */

static void check_addresses(const struct kt_doctor_input *in, struct kt_doctor_report *r)
{
	const cJSON *list = kt_json_path(in->node, "status.addresses"), *a, *b;
	struct kt_sb all = { 0 };
	bool bad = false;

	cJSON_ArrayForEach(a, list)
	{
		const char *type = str_or(a, "type", "(no type)"), *addr = str_or(a, "address", "");

		kt_sb_printf(&all, "%s%s %s", all.len ? ", " : "", type, *addr ? addr : "\"\"");
		if (!*addr) {
			bad = true;
			add(r, KT_DOCTOR_WARN, "addresses", NULL,
			    "write the addresses again without the empty one",
			    "a %s address is empty", type);
			continue;
		}
		for (b = list->child; b != a; b = b->next)
			if (!strcmp(str_or(b, "type", "(no type)"), type) &&
			    !strcmp(str_or(b, "address", ""), addr))
				break;
		if (b != a) {
			bad = true;
			add(r, KT_DOCTOR_WARN, "addresses", NULL,
			    "write the addresses again without the duplicate (node-patch3way "
			    "replaces the list whole)",
			    "%s %s is listed more than once", type, addr);
		}
	}
	if (!cJSON_GetArraySize(list))
		add(r, KT_DOCTOR_FAIL, "addresses", NULL,
		    "have the node's writer set status.addresses (an InternalIP and a Hostname "
		    "at least)",
		    "no addresses: neither the API server (logs, exec) nor this check can "
		    "reach the kubelet");
	else if (!bad)
		add(r, KT_DOCTOR_OK, "addresses", NULL, NULL, "%s", kt_sb_str(&all));
	kt_sb_release(&all);
}

/* ---------------------------------------------------------------- kubelet */

static void check_kubelet(const struct kt_doctor_kubelet *k, struct kt_doctor_report *r)
{
	switch (k->state) {
	case KT_DOCTOR_KUBELET_NOT_PROBED:
		add(r, KT_DOCTOR_WARN, "kubelet", NULL,
		    "have the node's writer set status.daemonEndpoints.kubeletEndpoint.Port "
		    "and an address, so that the API server can reach the kubelet",
		    "not probed: %s", k->error);
		break;
	case KT_DOCTOR_KUBELET_UNREACHABLE:
		add(r, KT_DOCTOR_FAIL, "kubelet", NULL,
		    "check that the kubelet listens on that address and port and that no "
		    "firewall stands between",
		    "%s: %s", k->url, k->error);
		break;
	case KT_DOCTOR_KUBELET_TLS_FAILED:
		add(r, KT_DOCTOR_FAIL, "kubelet", NULL,
		    "check that what listens there is the kubelet, serving TLS with a "
		    "certificate it could load",
		    "%s: no TLS handshake: %s", k->url, k->error);
		break;
	case KT_DOCTOR_KUBELET_TIMEOUT:
		add(r, KT_DOCTOR_FAIL, "kubelet", NULL,
		    "check that the kubelet is not hung and that nothing drops packets to that "
		    "port",
		    "%s: %s", k->url, k->error);
		break;
	case KT_DOCTOR_KUBELET_ANSWERED:
		if (k->status == 200)
			add(r, KT_DOCTOR_OK, "kubelet", NULL, NULL, "%s answers 200 (%s)", k->url,
			    k->body);
		else if (k->status == 401 || k->status == 403)
			add(r, KT_DOCTOR_OK, "kubelet", NULL, NULL,
			    "%s answers %ld: the kubelet serves, and wants credentials for "
			    "/healthz",
			    k->url, k->status);
		else
			add(r, KT_DOCTOR_FAIL, "kubelet", NULL,
			    "the kubelet says it is unhealthy: read its log on the node",
			    "%s answers %ld (%s)", k->url, k->status, k->body);
		break;
	}
}

static void check_certificate(const struct kt_doctor_kubelet *k, int64_t now,
			      struct kt_doctor_report *r)
{
	int64_t life = k->not_after_us - k->not_before_us, left = k->not_after_us - now;
	char t[40], a[32], l[32];
	const char *renew = "renew the kubelet's serving certificate (rotate it, or turn "
			    "on serverTLSBootstrap) and restart the kubelet";

	if (!k->have_cert)
		return;
	kt_time_format(k->not_after_us, false, t, sizeof(t));
	span_text(left < 0 ? -left : left, a, sizeof(a));
	if (left <= 0)
		add(r, KT_DOCTOR_FAIL, "certificate", NULL, renew,
		    "the kubelet's certificate expired at %s, %s ago", t, a);
	else if (k->not_before_us > now)
		add(r, KT_DOCTOR_WARN, "certificate", NULL,
		    "check this host's clock and the node's: a certificate is made valid from "
		    "the time it is signed",
		    "the kubelet's certificate is not valid before %s",
		    kt_time_format(k->not_before_us, false, l, sizeof(l)));
	else if (left < CERT_WARN_US || left < life / 10)
		add(r, KT_DOCTOR_WARN, "certificate", NULL, renew,
		    "the kubelet's certificate expires at %s, in %s, of a life of %s", t, a,
		    span_text(life, l, sizeof(l)));
	else
		add(r, KT_DOCTOR_OK, "certificate", NULL, NULL,
		    "the kubelet's certificate is valid until %s, %s from now", t, a);
}

/* ------------------------------------------------------------------ clock */

static void check_clock(const struct kt_doctor_input *in, struct kt_doctor_report *r)
{
	/* Date has whole seconds: the server's clock read somewhere in that
	 * second, so its middle is the best guess */
	int64_t skew, mag;
	char a[32];

	if (!in->server_date_us) {
		add(r, KT_DOCTOR_WARN, "clock", NULL,
		    "nothing to do unless a proxy in between strips headers",
		    "the API server sent no Date header: the clocks were not compared");
		return;
	}
	skew = in->date_local_us - (in->server_date_us + SECOND_US / 2);
	mag = skew < 0 ? -skew : skew;
	age_text(mag, a, sizeof(a));
	if (mag < SKEW_WARN_US)
		add(r, KT_DOCTOR_OK, "clock", NULL, NULL,
		    "this host's clock is within 2s of the API server's");
	else
		add(r, mag < SKEW_FAIL_US ? KT_DOCTOR_WARN : KT_DOCTOR_FAIL, "clock", NULL,
		    "synchronise this host's clock and the API server's with NTP (chrony, "
		    "systemd-timesyncd): the ages above are read on this host's",
		    "this host's clock is %s %s the API server's", a,
		    skew > 0 ? "ahead of" : "behind");
}

int kt_doctor_judge(const struct kt_doctor_input *in, struct kt_doctor_report *out,
		    struct kt_err *err)
{
	check_ready(in, out);
	check_lease(in, out);
	check_taints(in, out);
	check_conditions(in, out);
	check_addresses(in, out);
	if (in->kubelet) {
		check_kubelet(in->kubelet, out);
		check_certificate(in->kubelet, in->now_us, out);
	}
	check_clock(in, out);
	if (out->oom)
		return kt_error(err, "out of memory");
	return 0;
}

/* ----------------------------------------------------------- kubelet target */

int kt_doctor_kubelet_target(const cJSON *node, char *host, size_t size, int *port,
			     struct kt_err *err)
{
	static const char *const order[] = { "InternalIP", "Hostname", "InternalDNS",
					     "ExternalIP", "ExternalDNS" };
	const cJSON *p = kt_json_path(node, "status.daemonEndpoints.kubeletEndpoint.Port");
	int64_t n = 0;

	if (!p || !kt_go_int64(p, &n) || n <= 0 || n > 65535)
		return kt_error(err, "status.daemonEndpoints.kubeletEndpoint.Port is not set");
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const cJSON *a;

		cJSON_ArrayForEach(a, kt_json_path(node, "status.addresses"))
		{
			const char *addr = kt_json_get_string(a, "address");

			if (!addr || !*addr || strcmp(str_or(a, "type", ""), order[i]))
				continue;
			if (strlen(addr) >= size || strspn(addr, "0123456789abcdefghijklmnopqrstu"
							   "vwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
							   ".-:") != strlen(addr))
				continue; /* not a host name or an IP address */
			snprintf(host, size, "%s", addr);
			*port = (int)n;
			return 0;
		}
	}
	return kt_error(err, "the node has no address to reach the kubelet on");
}

/* ---------------------------------------------------------------- certinfo */

int kt_doctor_cert_time(const char *s, int64_t *us, struct kt_err *err)
{
	static const char *const formats[] = { "%b %d %H:%M:%S %Y GMT",
					       "%Y-%m-%d %H:%M:%S GMT" };

	for (size_t i = 0; s && i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct tm tm;
		const char *end;
		time_t t;

		memset(&tm, 0, sizeof(tm));
		end = strptime(s, formats[i], &tm);
		if (!end || *end)
			continue;
		t = timegm(&tm);
		if (t == (time_t)-1)
			continue;
		*us = (int64_t)t * SECOND_US;
		return 0;
	}
	return kt_error(err, "cannot read the certificate time '%s'", s ? s : "");
}

/* ------------------------------------------------------------------ output */

cJSON *kt_doctor_report_json(const char *node, const struct kt_doctor_report *r)
{
	cJSON *doc = cJSON_CreateObject(), *list = cJSON_CreateArray();
	bool ok = doc && list;

	ok = ok && kt_json_set(doc, "node", cJSON_CreateString(node)) == 0;
	ok = ok && kt_json_set(doc, "result",
			       cJSON_CreateString(kt_doctor_level_name(
				       kt_doctor_report_level(r)))) == 0;
	for (size_t i = 0; ok && i < r->n; i++) {
		const struct kt_doctor_finding *f = &r->f[i];
		cJSON *o = cJSON_CreateObject();

		ok = o && kt_json_append(list, o) == 0;
		ok = ok && kt_json_set(o, "level",
				       cJSON_CreateString(kt_doctor_level_name(f->level))) == 0;
		ok = ok && kt_json_set(o, "check", cJSON_CreateString(f->check)) == 0;
		if (ok && *f->subject)
			ok = kt_json_set(o, "subject", cJSON_CreateString(f->subject)) == 0;
		ok = ok && kt_json_set(o, "message", cJSON_CreateString(f->message)) == 0;
		if (ok && *f->action)
			ok = kt_json_set(o, "action", cJSON_CreateString(f->action)) == 0;
	}
	if (ok) {
		ok = kt_json_set(doc, "findings", list) == 0;
		list = NULL;
	}
	cJSON_Delete(list);
	if (!ok) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

void kt_doctor_finding_line(struct kt_sb *sb, const char *node,
			    const struct kt_doctor_finding *f)
{
	kt_sb_printf(sb, "%-4s %s %s%s%s: %s", kt_doctor_level_name(f->level), node, f->check,
		     *f->subject ? " " : "", f->subject, f->message);
	if (*f->action)
		kt_sb_printf(sb, "; %s", f->action);
}
