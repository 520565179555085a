/* SPDX-License-Identifier: Apache-2.0 */
/* doctor: node-doctor's judgement of a node, its Lease and its kubelet, as findings */
#ifndef KT_DOCTOR_H
#define KT_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kt_err.h"

/*
 * The judgement is pure (doctor.c): the objects the tool read, what the
 * kubelet endpoint did and the time come in, findings come out, so the unit
 * tests drive every case with a made-up clock.  The one piece of I/O, the
 * kubelet endpoint's probe, is kt_doctor_probe (doctor_probe.c).
 */

/* the node-monitor grace period of current Kubernetes (40 s in older releases) */
#define KT_DOCTOR_GRACE_DEFAULT_MS 50000
/* a condition heartbeat older than this is stale: twice the kubelet's
 * five-minute node status report frequency */
#define KT_DOCTOR_STALE_DEFAULT_MS 600000

enum kt_doctor_level {
	KT_DOCTOR_OK = 0,
	KT_DOCTOR_WARN,
	KT_DOCTOR_FAIL,
};

/* "ok", "warn" or "fail" */
const char *kt_doctor_level_name(enum kt_doctor_level level);

/* one finding: what was found and, unless ok, what to do about it */
struct kt_doctor_finding {
	enum kt_doctor_level level;
	char check[16];		/* "ready", "lease", "taint", "condition", "addresses",
				 * "kubelet", "certificate", "clock" */
	char subject[320];	/* the condition type or taint key; "" when none */
	char message[640];	/* what was found, one line */
	char action[320];	/* what to do, one sentence; "" when ok */
};

/* the findings of one node in order; zero it to start */
struct kt_doctor_report {
	struct kt_doctor_finding *f;
	size_t n, cap;
	bool oom;	/* a finding could not be added */
};

/* frees the findings and zeroes r; NULL and a zeroed struct are fine */
void kt_doctor_report_release(struct kt_doctor_report *r);
/* the worst level among the findings (KT_DOCTOR_OK when none) */
enum kt_doctor_level kt_doctor_report_level(const struct kt_doctor_report *r);

/* what reading the Lease gave */
enum kt_doctor_lease_state {
	KT_DOCTOR_LEASE_READ = 0,	/* lease holds it */
	KT_DOCTOR_LEASE_NONE,		/* 404: the node has no Lease */
	KT_DOCTOR_LEASE_FORBIDDEN,	/* 403: the caller may not read it */
	KT_DOCTOR_LEASE_ERROR,		/* anything else: lease_error says what */
};

/* what the kubelet endpoint's probe found */
enum kt_doctor_kubelet_state {
	KT_DOCTOR_KUBELET_NOT_PROBED = 0,	/* no port or no address to probe */
	KT_DOCTOR_KUBELET_UNREACHABLE,		/* no TCP connection */
	KT_DOCTOR_KUBELET_TLS_FAILED,		/* connected, no TLS handshake */
	KT_DOCTOR_KUBELET_TIMEOUT,		/* no answer within the timeout */
	KT_DOCTOR_KUBELET_ANSWERED,		/* /healthz answered: status */
};

struct kt_doctor_kubelet {
	enum kt_doctor_kubelet_state state;
	char url[320];		/* what was probed: https://ADDR:PORT/healthz */
	char error[512];	/* why it failed, one line, for the states that fail */
	long status;		/* /healthz's HTTP status when it answered */
	char body[64];		/* the start of its body, made printable */
	bool have_cert;		/* the leaf certificate's validity came back */
	int64_t not_before_us, not_after_us;
};

/* everything the judgement looks at; pointers are borrowed */
struct kt_doctor_input {
	const cJSON *node;			/* the Node read */
	const cJSON *lease;			/* the Lease, with LEASE_READ */
	enum kt_doctor_lease_state lease_state;
	const char *lease_error;		/* with LEASE_ERROR */
	int64_t now_us;				/* the local clock */
	int64_t grace_ms;			/* the node-monitor grace period */
	int64_t stale_ms;			/* a heartbeat older than this is stale */
	int64_t server_date_us;			/* the API server's Date; 0: none */
	int64_t date_local_us;			/* the local clock when it came */
	const struct kt_doctor_kubelet *kubelet;
};

/*
 * Judges in into findings added to out, in this order: ready, lease,
 * taints, conditions (one each), addresses, kubelet, certificate, clock.
 * -1 with err only when out of memory (out keeps what was added).
 */
int kt_doctor_judge(const struct kt_doctor_input *in, struct kt_doctor_report *out,
		    struct kt_err *err);

/*
 * The kubelet endpoint to probe: status.daemonEndpoints.kubeletEndpoint.Port
 * on the first InternalIP address, else Hostname, else InternalDNS,
 * ExternalIP, ExternalDNS.  Fills host (an IPv6 address without brackets)
 * and *port and returns 0; -1 with err (KT_ERR_FAIL) saying what is missing.
 */
int kt_doctor_kubelet_target(const cJSON *node, char *host, size_t size, int *port,
			     struct kt_err *err);

/*
 * The manager that last wrote the condition of that type, read from
 * metadata.managedFields: the entry whose fieldsV1 owns the condition's
 * lastHeartbeatTime (f:status, f:conditions, k:{"type":"TYPE"}), else the
 * latest entry owning any of its fields.  Borrowed from node; NULL when no
 * entry owns it.
 */
const char *kt_doctor_condition_writer(const cJSON *node, const char *type);

/*
 * A certificate time as libcurl's certinfo gives it: "Dec  2 12:00:00 2027
 * GMT" (OpenSSL's) or "2027-12-02 12:00:00 GMT" (libcurl's own).  -1 with
 * err when it is neither.
 */
int kt_doctor_cert_time(const char *s, int64_t *us, struct kt_err *err);

/*
 * The report as one document: {"node": NAME, "result": "ok|warn|fail",
 * "findings": [{"level", "check", "subject", "message", "action"}...]},
 * subject and action left out when empty.  Caller frees with cJSON_Delete;
 * NULL when out of memory.
 */
cJSON *kt_doctor_report_json(const char *node, const struct kt_doctor_report *r);

/*
 * One line per finding, no newline: "LEVEL NODE CHECK[ SUBJECT]: MESSAGE",
 * then "; ACTION" unless ok.  Into sb (core.h).
 */
struct kt_sb;
void kt_doctor_finding_line(struct kt_sb *sb, const char *node,
			    const struct kt_doctor_finding *f);

/*
 * Probes the kubelet endpoint host:port (I/O, doctor_probe.c): a TLS
 * handshake with no credentials (the address comes from the node, which
 * the node itself writes: the caller's must not go there) and without
 * verifying the certificate (a kubelet's is often self-signed), then GET
 * /healthz, the whole within timeout_ms.  Fills out, whatever happened;
 * the certificate's validity comes back even when /healthz fails.
 */
void kt_doctor_probe(const char *host, int port, int64_t timeout_ms,
		     struct kt_doctor_kubelet *out);

#endif
