/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-pod-plan: bytes read as a pod's JSON and the built-in provider's plan
 * made of it.  Properties: a pod that has a plan has one line of assignments,
 * starting with n_containers; one that has none has one line of why; neither
 * ever has a newline, as the provider reads the plan and the time after it
 * as two lines.
 */
#include "fuzz.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kt_err err = { 0 };
	struct kt_sb out = { 0 };
	cJSON *pod;
	int rc;

	pod = kt_json_parse_at("pod", (const char *)data, size, 1, 1, &err);
	if (!pod) {
		FUZZ_CHECK(err.msg[0] != '\0');
		return 0;
	}
	rc = kt_pod_plan(pod, &out);
	FUZZ_CHECK(!out.oom);
	FUZZ_CHECK(strchr(kt_sb_str(&out), '\n') == NULL);
	if (rc == 0)
		FUZZ_CHECK(strncmp(kt_sb_str(&out), "n_containers=", 13) == 0);
	else
		FUZZ_CHECK(rc == -1 && out.len > 0);
	kt_sb_release(&out);
	cJSON_Delete(pod);
	return 0;
}
