/* SPDX-License-Identifier: Apache-2.0 */
/* podrt: a pod as its runtime sees it, read from a kt-agent state directory */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsio.h"
#include "json.h"
#include "podrt.h"
#include "podstatus.h"
#include "timeutil.h"

/* a record's field is a short line; a pod document or a probe line may be large */
#define FIELD_MAX 256
#define DOC_MAX	  (64u << 20)

/* "cannot read": what every failure to read a file of the pod says first */
#define RT_PATH_MAX 4096

bool kt_podrt_uid_ok(const char *uid)
{
	size_t n = strlen(uid);

	if (n == 0 || n > 64 || uid[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = uid[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '-'))
			return false;
	}
	return true;
}

/* a directory's file, the path made in buf; false when it does not fit */
static bool join(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n > 0 && (size_t)n < size;
}

/*
 * One field of a container's record into buf (its first line, trailing
 * blanks dropped): 1 when there, 0 when the file is not, -1 with err.
 */
static int field(const char *cdir, const char *name, char *buf, size_t size, struct kt_err *err)
{
	char path[RT_PATH_MAX], *text = NULL;
	size_t len = 0;

	if (!join(path, sizeof(path), cdir, name))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: path too long", cdir);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 0;
	if (kt_file_read(path, NULL, FIELD_MAX, &text, &len, err) < 0)
		return -1;
	len = strcspn(text, "\n");
	while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r'))
		len--;
	if (len >= size)
		len = size - 1;
	memcpy(buf, text, len);
	buf[len] = '\0';
	free(text);
	return 1;
}

/* a time field, when it is one */
static int set_time(cJSON *obj, const char *key, const char *value)
{
	int64_t us;

	if (!value[0] || kt_time_parse(value, &us, NULL) < 0)
		return 0;
	return kt_json_set(obj, key, cJSON_CreateString(value));
}

/* the process group a record names is alive (kill 0 answers, or it is another user's) */
static bool group_alive(const char *pid)
{
	char *end;
	long p;

	if (!pid[0])
		return false;
	errno = 0;
	p = strtol(pid, &end, 10);
	if (errno || *end || p <= 1)
		return false;
	return kill((pid_t)p, 0) == 0 || errno == EPERM;
}

/* the container's status from its record in cdir; NULL (and err) on failure */
static cJSON *container_status(const cJSON *spec, const char *name, const char *cdir,
			       struct kt_err *err)
{
	static const char *const keys[] = { "startedAt", "restarts", "waiting",
					    "pid",	 "exit",     "finishedAt" };
	char f[6][FIELD_MAX];
	bool has[6];
	cJSON *cs = cJSON_CreateObject(), *st = cJSON_CreateObject(), *in = NULL;
	const char *image = kt_json_get_string(spec, "image");
	char cid[300];
	const char *kind = "waiting";
	long restarts = 0;
	bool ok;

	for (int i = 0; i < 6; i++) {
		int got = field(cdir, keys[i], f[i], sizeof(f[i]), err);

		if (got < 0) {
			cJSON_Delete(cs);
			cJSON_Delete(st);
			return NULL;
		}
		has[i] = got == 1;
		if (!has[i])
			f[i][0] = '\0';
	}
	if (has[1]) {
		char *end;

		restarts = strtol(f[1], &end, 10);
		if (*end || restarts < 0 || restarts > INT32_MAX)
			restarts = 0;
	}
	snprintf(cid, sizeof(cid), "kt://%s", name);
	ok = cs && st && kt_json_set(cs, "name", cJSON_CreateString(name)) == 0 &&
	     kt_json_set(cs, "restartCount", kt_json_num_new_int(restarts)) == 0 &&
	     kt_json_set(cs, "image", cJSON_CreateString(image ? image : "")) == 0 &&
	     kt_json_set(cs, "imageID", cJSON_CreateString("")) == 0;
	in = cJSON_CreateObject();
	ok = ok && in;
	if (ok && has[4]) {
		char *end;
		long code = strtol(f[4], &end, 10);

		if (!f[4][0] || *end || code < INT32_MIN || code > INT32_MAX)
			code = 137;
		ok = kt_json_set(in, "exitCode", kt_json_num_new_int(code)) == 0 &&
		     kt_json_set(
			 in, "reason",
			 cJSON_CreateString(strcmp(f[4], "0") == 0 ? "Completed" : "Error")) == 0 &&
		     set_time(in, "startedAt", f[0]) == 0 &&
		     set_time(in, "finishedAt", f[5]) == 0 &&
		     kt_json_set(in, "containerID", cJSON_CreateString(cid)) == 0;
		kind = "terminated";
	} else if (ok && group_alive(f[3])) {
		ok = set_time(in, "startedAt", f[0]) == 0;
		kind = "running";
	} else if (ok) {
		ok = kt_json_set(in, "reason",
				 cJSON_CreateString(f[2][0] ? f[2] : "ContainerCreating")) == 0;
		kind = "waiting";
	}
	if (ok) {
		ok = kt_json_set(st, kind, in) == 0;
		in = NULL;
	}
	if (ok && strcmp(kind, "waiting") != 0)
		ok = kt_json_set(cs, "containerID", cJSON_CreateString(cid)) == 0;
	cJSON_Delete(in);
	if (!ok || kt_json_set(cs, "state", st) < 0) {
		if (!ok)
			cJSON_Delete(st);
		cJSON_Delete(cs);
		kt_error(err, "out of memory");
		return NULL;
	}
	return cs;
}

/* the status the runtime reports for pod, from the records under dir */
static cJSON *runtime_status(const cJSON *pod, const char *dir, struct kt_err *err)
{
	const cJSON *api = kt_json_get(pod, "status"), *c;
	const char *phase = kt_json_get_string(api, "phase");
	cJSON *st = cJSON_CreateObject(), *list = cJSON_CreateArray(), *ips = cJSON_CreateArray(),
	      *ip = cJSON_CreateObject(), *conds;
	char since[FIELD_MAX];
	int got;
	bool ok;

	ok = st && list && ips && ip;
	if (ok && phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
		const char *reason = kt_json_get_string(api, "reason"),
			   *message = kt_json_get_string(api, "message");

		ok = kt_json_set(st, "phase", cJSON_CreateString(phase)) == 0 &&
		     (!reason || kt_json_set(st, "reason", cJSON_CreateString(reason)) == 0) &&
		     (!message || kt_json_set(st, "message", cJSON_CreateString(message)) == 0);
	}
	conds = kt_json_get_array(api, "conditions");
	ok = ok &&
	     kt_json_set(st, "conditions", conds ? kt_json_dup(conds) : cJSON_CreateArray()) == 0 &&
	     kt_json_set(st, "hostIP", cJSON_CreateString("127.0.0.1")) == 0 &&
	     kt_json_set(st, "podIP", cJSON_CreateString("127.0.0.1")) == 0 &&
	     kt_json_set(ip, "ip", cJSON_CreateString("127.0.0.1")) == 0;
	if (ok) {
		ok = kt_json_append(ips, ip) == 0;
		ip = NULL;
		ok = ok && kt_json_set(st, "podIPs", ips) == 0;
		ips = NULL;
	}
	got = field(dir, "since", since, sizeof(since), err);
	if (got < 0)
		goto failed;
	if (ok && got == 1)
		ok = set_time(st, "startTime", since) == 0;
	else if (ok && kt_json_get_string(api, "startTime"))
		ok = kt_json_set(st, "startTime", kt_json_dup(kt_json_get(api, "startTime"))) == 0;
	cJSON_ArrayForEach (c, kt_json_get_array(kt_json_get(pod, "spec"), "containers")) {
		const char *name = kt_json_get_string(c, "name");
		char cdir[RT_PATH_MAX], rel[RT_PATH_MAX];
		cJSON *cs;

		if (!ok || !name || strchr(name, '/') || !name[0] || name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "containers/%s", name);
		if (!join(cdir, sizeof(cdir), dir, rel) || access(cdir, F_OK) < 0)
			continue;
		cs = container_status(c, name, cdir, err);
		if (!cs)
			goto failed;
		ok = kt_json_append(list, cs) == 0;
	}
	if (ok) {
		ok = kt_json_set(st, "containerStatuses", list) == 0;
		list = NULL;
	}
	if (!ok) {
		kt_error(err, "out of memory");
		goto failed;
	}
	cJSON_Delete(ips);
	cJSON_Delete(ip);
	return st;
failed:
	cJSON_Delete(st);
	cJSON_Delete(list);
	cJSON_Delete(ips);
	cJSON_Delete(ip);
	return NULL;
}

/* probe.CONTAINER.TYPE, or a temporary one beside it */
static bool is_probe_file(const char *name)
{
	return strncmp(name, "probe.", 6) == 0 && strchr(name + 6, '.') != NULL;
}

/* the probe.* files of dir, in name order, into rt->probes */
static int read_probes(const char *dir, struct kt_podrt *rt, struct kt_err *err)
{
	char **names;
	size_t n;
	int rc = 0;

	if (kt_dir_names(dir, "pod directory", is_probe_file, &names, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char path[RT_PATH_MAX];
		cJSON *line;

		/* a file made and renamed into place by the agent: a temporary one is skipped */
		if (strlen(names[i]) > 4 && strcmp(names[i] + strlen(names[i]) - 4, ".tmp") == 0)
			continue;
		if (!join(path, sizeof(path), dir, names[i]))
			continue;
		line = kt_json_read_file(path, DOC_MAX, err);
		if (!line && access(path, F_OK) < 0 && errno == ENOENT)
			continue; /* replaced meanwhile: the next status reads the new one */
		if (!line || kt_probe_results_add(rt->probes, line, path, err) < 0) {
			if (line)
				kt_err_prefix(err, "%s", path);
			rc = -1;
		}
		cJSON_Delete(line);
	}
	kt_dir_names_free(names, n);
	return rc;
}

int kt_podrt_read(const char *state_dir, const char *uid, struct kt_podrt *rt, struct kt_err *err)
{
	char dir[RT_PATH_MAX], path[RT_PATH_MAX], rel[128];
	struct stat sb;
	cJSON *st;

	memset(rt, 0, sizeof(*rt));
	if (!kt_podrt_uid_ok(uid))
		return kt_error_kind(err, KT_ERR_INPUT, "'%s' is not a pod UID", uid);
	snprintf(rel, sizeof(rel), "pods/%s", uid);
	if (!join(dir, sizeof(dir), state_dir, rel) || !join(path, sizeof(path), dir, "pod.json"))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: path too long", state_dir);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return kt_error_kind(err, KT_ERR_NOTFOUND, "%s: no such pod", dir);
	rt->pod = kt_json_read_file(path, DOC_MAX, err);
	if (!rt->pod)
		return -1;
	if (!cJSON_IsObject(rt->pod))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: expected a Pod, got %s", path,
				     kt_json_type_name(rt->pod));
	rt->probes = kt_probe_results_new();
	rt->runtime = kt_json_dup(rt->pod);
	if (!rt->probes || !rt->runtime)
		return kt_error(err, "out of memory");
	st = runtime_status(rt->pod, dir, err);
	if (!st || kt_json_set(rt->runtime, "status", st) < 0)
		return st ? kt_error(err, "out of memory") : -1;
	if (read_probes(dir, rt, err) < 0)
		return -1;
	if (!join(path, sizeof(path), dir, "kill-status.json"))
		return kt_error_kind(err, KT_ERR_INPUT, "%s: path too long", dir);
	/* an empty one is none */
	if (stat(path, &sb) == 0 && sb.st_size > 0) {
		rt->kill = kt_json_read_file(path, DOC_MAX, err);
		if (!rt->kill)
			return -1;
		if (kt_podstatus_kill_check(rt->kill, err) < 0) {
			kt_err_prefix(err, "%s", path);
			return -1;
		}
	}
	return 0;
}

void kt_podrt_release(struct kt_podrt *rt)
{
	cJSON_Delete(rt->pod);
	cJSON_Delete(rt->runtime);
	cJSON_Delete(rt->kill);
	kt_probe_results_free(rt->probes);
	memset(rt, 0, sizeof(*rt));
}
