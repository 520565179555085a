/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-podrt: a pod of a kt-agent state directory read and its status
 * computed.  The input is the pod's files, separated by the byte 0x1e: pod.json,
 * since, then a container "main"'s record (startedAt, restarts, waiting, pid,
 * exit, finishedAt), a probe line (probe.main.readiness) and
 * kill-status.json; an empty part is a file that is not there.  Properties:
 * a read that fails says why; a read that succeeds gives a runtime pod whose
 * container statuses each hold exactly one state, which pod-status computes
 * or refuses with a message.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "podrt.h"
#include "podstatus.h"

#define UID "f0220000-0000-4000-8000-000000000001"

static const char *const files[] = {
	"pod.json",
	"since",
	"containers/main/startedAt",
	"containers/main/restarts",
	"containers/main/waiting",
	"containers/main/pid",
	"containers/main/exit",
	"containers/main/finishedAt",
	"probe.main.readiness",
	"kill-status.json",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static char root[64];

static void clear(void)
{
	char path[256];

	for (size_t i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/pods/" UID "/%s", root, files[i]);
		unlink(path);
	}
}

/* the state directory goes with the process */
static void remove_root(void)
{
	static const char *const dirs[] = { "/pods/" UID "/containers/main",
					    "/pods/" UID "/containers", "/pods/" UID, "/pods", "" };
	char path[256];

	clear();
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
		rmdir(path);
	}
}

/* the state directory, made once; the pod's files cleared for each input */
static const char *state(void)
{
	char path[256];

	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/fuzz-podrt-XXXXXX");
		FUZZ_CHECK(mkdtemp(root) != NULL);
		snprintf(path, sizeof(path), "%s/pods", root);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/pods/" UID, root);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/pods/" UID "/containers", root);
		mkdir(path, 0700);
		snprintf(path, sizeof(path), "%s/pods/" UID "/containers/main", root);
		mkdir(path, 0700);
		atexit(remove_root);
	}
	clear();
	return root;
}

static void put(const char *dir, size_t i, const uint8_t *p, size_t n)
{
	char path[256];
	FILE *f;

	if (!n)
		return;
	snprintf(path, sizeof(path), "%s/pods/" UID "/%s", dir, files[i]);
	f = fopen(path, "w");
	FUZZ_CHECK(f != NULL);
	FUZZ_CHECK(fwrite(p, 1, n, f) == n);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = state();
	struct kt_podrt rt;
	struct kt_err err = { 0 };
	struct kt_podstatus_opts o = { .now_us = 1764583200000000 };
	const cJSON *cs;
	size_t i = 0, start = 0;
	cJSON *st;

	for (size_t k = 0; k <= size && i < NFILES; k++) {
		if (k < size && data[k] != 0x1e)
			continue;
		put(dir, i++, data + start, k - start);
		start = k + 1;
	}
	if (kt_podrt_read(dir, UID, &rt, &err) < 0) {
		FUZZ_CHECK(err.msg[0] != '\0');
		kt_podrt_release(&rt);
		return 0;
	}
	cJSON_ArrayForEach (cs,
			    kt_json_get(kt_json_get(rt.runtime, "status"), "containerStatuses")) {
		const cJSON *state = kt_json_get(cs, "state");

		FUZZ_CHECK(cJSON_IsObject(state) && cJSON_GetArraySize(state) == 1);
	}
	o.current = kt_json_get(rt.pod, "status");
	o.probes = rt.probes;
	o.kill = rt.kill;
	o.terminal = size % 2;
	st = kt_podstatus_compute(rt.runtime, &o, &err);
	FUZZ_CHECK(st || err.msg[0] != '\0');
	cJSON_Delete(st);
	kt_podrt_release(&rt);
	return 0;
}
