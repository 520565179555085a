/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-doctor: node-doctor's judgement of what a node's writers put on it.
 * Byte 0: bits 0-1 how reading the Lease went, bits 2-4 what the kubelet
 * probe found, bit 5 whether its certificate came back.  The rest is a
 * stream of documents: the node, the Lease, then strings read as
 * certificate times.  Properties: the judgement never fails but for memory,
 * every line is printable on one line, every finding that is not ok says
 * what to do, and the kubelet's host holds only host name characters.
 */
#include "fuzz.h"
#include "core.h"
#include "doctor.h"

/* 2026-01-01T00:00:00Z: the harness reads no clock */
#define FUZZ_NOW_US INT64_C(1767225600000000)

static void check_line(const char *s)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "not one printable line: %s\n", s);
			FUZZ_CHECK(!"a control character in a finding's line");
		}
}

static void judge(const uint8_t flags, cJSON **docs, size_t n)
{
	struct kt_doctor_kubelet k = { .state = (flags >> 2) % 5,
				       .url = "https://10.0.0.7:10250/healthz",
				       .error = "Connection refused",
				       .status = 200 + 100 * ((flags >> 2) & 3),
				       .have_cert = flags & 32,
				       .not_before_us = FUZZ_NOW_US - INT64_C(86400000000),
				       .not_after_us = FUZZ_NOW_US + INT64_C(86400000000) };
	struct kt_doctor_input in = { .node = docs[0],
				      .lease = n > 1 ? docs[1] : NULL,
				      .lease_state = flags & 3,
				      .lease_error = "GET: 500",
				      .now_us = FUZZ_NOW_US,
				      .grace_ms = KT_DOCTOR_GRACE_DEFAULT_MS,
				      .stale_ms = KT_DOCTOR_STALE_DEFAULT_MS,
				      .server_date_us = FUZZ_NOW_US,
				      .date_local_us = FUZZ_NOW_US,
				      .kubelet = &k };
	struct kt_doctor_report r = { 0 };
	struct kt_err err = { 0 };
	char host[256];
	int port;

	if (kt_doctor_judge(&in, &r, &err) < 0) {
		FUZZ_CHECK(r.oom);
	}
	for (size_t i = 0; i < r.n; i++) {
		struct kt_sb sb = { 0 };

		FUZZ_CHECK(r.f[i].check[0]);
		FUZZ_CHECK(r.f[i].level == KT_DOCTOR_OK || r.f[i].action[0]);
		kt_doctor_finding_line(&sb, "vk-1", &r.f[i]);
		check_line(kt_sb_str(&sb));
		kt_sb_release(&sb);
	}
	fuzz_print_free(kt_doctor_report_json("vk-1", &r));
	kt_doctor_report_release(&r);
	if (kt_doctor_kubelet_target(docs[0], host, sizeof(host), &port, &err) == 0) {
		FUZZ_CHECK(port > 0 && port < 65536 && host[0]);
		FUZZ_CHECK(strspn(host, "0123456789abcdefghijklmnopqrstuvwxyz"
					"ABCDEFGHIJKLMNOPQRSTUVWXYZ.-:") == strlen(host));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *docs[FUZZ_MAX_DOCS];
	size_t n;
	int64_t us;

	if (size < 1)
		return 0;
	n = fuzz_docs(data + 1, size - 1, docs, FUZZ_MAX_DOCS);
	if (n > 0)
		judge(data[0], docs, n);
	for (size_t i = 2; i < n; i++)
		if (cJSON_IsString(docs[i]))
			kt_doctor_cert_time(docs[i]->valuestring, &us, NULL);
	fuzz_docs_free(docs, n);
	return 0;
}
