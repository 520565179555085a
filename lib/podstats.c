/* SPDX-License-Identifier: Apache-2.0 */
/* podstats: a node's, its pods' and containers' CPU and memory: read, and
 * written as the kubelet's Summary and /metrics/resource */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "core.h"
#include "fsio.h"
#include "json.h"
#include "podstats.h"
#include "timeutil.h"

/* ------------------------------------------------------------------ values */

static void cpu_unknown(struct kt_podstats_cpu *c)
{
	c->time_ns = -1;
	c->usage_core_ns = -1;
	c->usage_nano_cores = -1;
}

static void mem_unknown(struct kt_podstats_mem *m)
{
	m->time_ns = -1;
	m->working_set = -1;
	m->usage = -1;
}

void kt_podstats_init(struct kt_podstats *s)
{
	memset(s, 0, sizeof(*s));
	s->node_start_ns = -1;
	cpu_unknown(&s->cpu);
	mem_unknown(&s->mem);
}

void kt_podstats_release(struct kt_podstats *s)
{
	size_t i, j;

	for (i = 0; i < s->n_pods; i++) {
		struct kt_podstats_pod *p = &s->pods[i];

		for (j = 0; j < p->n_containers; j++)
			free(p->containers[j].name);
		free(p->containers);
		free(p->name);
		free(p->ns);
		free(p->uid);
	}
	free(s->pods);
	free(s->node_name);
	kt_podstats_init(s);
}

/* ------------------------------------------------------------------ reading */

/* a small file whole, NUL-terminated; -1 when it cannot be read */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	ssize_t n, got = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	while ((size_t)got < size - 1) {
		n = read(fd, buf + got, size - 1 - (size_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

/* the first line of a small file, without its newline, in buf */
static int first_line(const char *path, char *buf, size_t size)
{
	char *nl;

	if (slurp(path, buf, size) <= 0)
		return -1;
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return buf[0] ? 0 : -1;
}

/* DIR/NAME in out; a path too long becomes "" (nothing opens it) */
static void pj(char *out, size_t size, const char *dir, const char *name)
{
	int n = snprintf(out, size, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= size)
		out[0] = '\0';
}

static int64_t file_int(const char *path)
{
	char buf[64], *end;
	long long v;

	if (slurp(path, buf, sizeof(buf)) <= 0)
		return -1;
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || end == buf || v < 0)
		return -1;
	return v;
}

/* KEY's value in a "key value" file (memory.stat, cpu.stat, /proc/meminfo) */
static int64_t keyed(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, key, kl) && (p[kl] == ' ' || p[kl] == ':'))
			return strtoll(p + kl + 1 + strspn(p + kl + 1, " :"), NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t tick_ns(void)
{
	long hz = sysconf(_SC_CLK_TCK);

	return 1000000000 / (hz > 0 ? hz : 100);
}

/* a cgroup's CPU in nanoseconds: cgroup v1 cpuacct or v2 cpu.stat */
static int64_t cg_cpu(const char *dir, bool v2)
{
	char path[4096], buf[1024];
	int64_t v;

	if (!v2) {
		pj(path, sizeof(path), dir, "cpuacct.usage");
		return file_int(path);
	}
	pj(path, sizeof(path), dir, "cpu.stat");
	if (slurp(path, buf, sizeof(buf)) <= 0)
		return -1;
	v = keyed(buf, "usage_usec");
	return v < 0 ? -1 : v * 1000;
}

/* a cgroup's memory: usage, and the working set as the kubelet's (usage less
 * the inactive file pages, never below zero) */
static int cg_mem(const char *dir, bool v2, int64_t *usage, int64_t *ws)
{
	char path[4096], buf[8192];
	int64_t u, inactive;

	pj(path, sizeof(path), dir, v2 ? "memory.current" : "memory.usage_in_bytes");
	u = file_int(path);
	if (u < 0)
		return -1;
	pj(path, sizeof(path), dir, "memory.stat");
	inactive = -1;
	if (slurp(path, buf, sizeof(buf)) > 0)
		inactive = keyed(buf, v2 ? "inactive_file" : "total_inactive_file");
	*usage = u;
	*ws = inactive > 0 && inactive < u ? u - inactive : inactive >= u ? 0 : u;
	return 0;
}

/* a process group's CPU (ticks) and resident pages, from one pass over /proc */
struct group {
	int64_t pgid, ticks, rss;
};

struct groups {
	struct group *g;
	size_t n;
	bool read;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return (x->pgid > y->pgid) - (x->pgid < y->pgid);
}

static void groups_read(struct groups *gs)
{
	DIR *d;
	struct dirent *e;
	char path[64], buf[1024], *p;
	size_t cap = 0, i, out;
	long long f[22];
	int k;

	gs->read = true;
	d = opendir("/proc");
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (strlen(e->d_name) > 20)
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/stat", e->d_name);
		if (slurp(path, buf, sizeof(buf)) <= 0)
			continue;
		/* the fields after the command's ')' */
		p = strrchr(buf, ')');
		if (!p)
			continue;
		p += 2;
		for (k = 0; k < 22 && *p; k++) {
			/* field 3 (state) is a letter */
			f[k] = k == 0 ? 0 : strtoll(p, NULL, 10);
			p = strchr(p, ' ');
			if (!p)
				break;
			p++;
		}
		if (k < 22)
			continue;
		if (gs->n == cap) {
			struct group *ng;

			cap = cap ? cap * 2 : 256;
			ng = realloc(gs->g, cap * sizeof(*ng));
			if (!ng)
				break;
			gs->g = ng;
		}
		/* f[2] pgrp, f[11..14] utime stime cutime cstime, f[21] rss */
		gs->g[gs->n].pgid = f[2];
		gs->g[gs->n].ticks = f[11] + f[12] + f[13] + f[14];
		gs->g[gs->n].rss = f[21];
		gs->n++;
	}
	closedir(d);
	if (gs->n == 0)
		return;
	qsort(gs->g, gs->n, sizeof(*gs->g), group_cmp);
	/* one entry per group */
	for (i = 1, out = 0; i < gs->n; i++) {
		if (gs->g[i].pgid == gs->g[out].pgid) {
			gs->g[out].ticks += gs->g[i].ticks;
			gs->g[out].rss += gs->g[i].rss;
		} else {
			gs->g[++out] = gs->g[i];
		}
	}
	gs->n = out + 1;
}

static const struct group *group_find(struct groups *gs, int64_t pgid)
{
	struct group key = { .pgid = pgid };

	if (!gs->read)
		groups_read(gs);
	if (!gs->n)
		return NULL;
	return bsearch(&key, gs->g, gs->n, sizeof(*gs->g), group_cmp);
}

/* the pod's cgroups, as create recorded them: "cpu v1|v2 DIR", "memory v1|v2 DIR" */
struct pod_cg {
	char cpu[4096], mem[4096];
	bool cpu_v2, mem_v2;
};

static void pod_cg_read(const char *pod_dir, struct pod_cg *cg)
{
	char path[4096], buf[16384], *line, *save = NULL;

	cg->cpu[0] = cg->mem[0] = '\0';
	pj(path, sizeof(path), pod_dir, "cgroup");
	if (slurp(path, buf, sizeof(buf)) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *dst;
		bool *v2;

		if (!strncmp(line, "cpu ", 4)) {
			dst = cg->cpu, v2 = &cg->cpu_v2, line += 4;
		} else if (!strncmp(line, "memory ", 7)) {
			dst = cg->mem, v2 = &cg->mem_v2, line += 7;
		} else {
			continue;
		}
		if (strncmp(line, "v1 ", 3) && strncmp(line, "v2 ", 3))
			continue;
		*v2 = line[1] == '2';
		if (line[3] != '/' || strlen(line + 3) >= sizeof(cg->cpu))
			continue;
		strcpy(dst, line + 3);
	}
}

/* the /proc counter of one container instance, kept at its highest: the file
 * holds "PGID NS"; an instance that ended (another PGID) adds its last value to
 * the pod's retired CPU */
static int64_t proc_cpu(const char *cdir, int64_t pgid, const struct group *g, int64_t *retired)
{
	char path[4096], buf[128];
	long long old_pgid = -1, old_ns = 0;
	int64_t ns;

	pj(path, sizeof(path), cdir, "cpu-hwm");
	if (slurp(path, buf, sizeof(buf)) > 0 && sscanf(buf, "%lld %lld", &old_pgid, &old_ns) != 2)
		old_pgid = -1;
	ns = g ? g->ticks * tick_ns() : 0;
	if (old_pgid == pgid) {
		if (ns <= old_ns)
			return old_ns;
	} else if (old_pgid > 0 && old_ns > 0) {
		*retired += old_ns;
	}
	snprintf(buf, sizeof(buf), "%lld %lld\n", (long long)pgid, (long long)ns);
	kt_file_replace(path, buf, strlen(buf), 0600, NULL);
	return ns;
}

static int name_ok(const char *s)
{
	return s[0] && s[0] != '.' && !strchr(s, '/');
}

static int container_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kt_podstats_container *)a)->name,
		      ((const struct kt_podstats_container *)b)->name);
}

/* one pod's containers that run, and the pod's totals */
static int read_pod(const char *pod_dir, const char *uid, struct groups *gs, bool *err,
		    struct kt_podstats_pod *p)
{
	char path[4096], cdir[4096], buf[256];
	struct pod_cg cg;
	struct kt_lock lk = { -1 };
	struct kt_podstats_container *c;
	DIR *d;
	struct dirent *e;
	size_t cap = 0;
	int64_t retired = 0, old_retired, sum_cpu = 0, sum_ws = 0, sum_use = 0, pgid, t;
	bool proc_cpu_used = false, locked;

	memset(p, 0, sizeof(*p));
	cpu_unknown(&p->cpu);
	mem_unknown(&p->mem);
	p->start_ns = -1;
	pj(path, sizeof(path), pod_dir, "name");
	if (first_line(path, buf, sizeof(buf)) < 0 || !(p->name = strdup(buf)))
		return -1;
	pj(path, sizeof(path), pod_dir, "ns");
	if (first_line(path, buf, sizeof(buf)) < 0 || !(p->ns = strdup(buf)))
		return -1;
	if (!(p->uid = strdup(uid)))
		return -1;
	pj(path, sizeof(path), pod_dir, "since");
	if (first_line(path, buf, sizeof(buf)) == 0 && kt_time_parse_ns(buf, &t, NULL) == 0)
		p->start_ns = t;
	pod_cg_read(pod_dir, &cg);
	pj(path, sizeof(path), pod_dir, "stats");
	locked = !cg.cpu[0] && kt_lock_acquire(&lk, path, NULL) == 0;
	pj(path, sizeof(path), pod_dir, "cpu-retired");
	old_retired = file_int(path);
	if (old_retired < 0)
		old_retired = 0;
	retired = old_retired;
	pj(path, sizeof(path), pod_dir, "containers");
	d = opendir(path);
	while (d && (e = readdir(d))) {
		const struct group *g = NULL;

		if (!name_ok(e->d_name))
			continue;
		pj(path, sizeof(path), pod_dir, "containers");
		pj(cdir, sizeof(cdir), path, e->d_name);
		pj(path, sizeof(path), cdir, "exit");
		if (access(path, F_OK) == 0) {
			/* an instance that ended still counts in its pod's CPU */
			long long hp, hn;

			pj(path, sizeof(path), cdir, "cpu-hwm");
			if (!cg.cpu[0] && slurp(path, buf, sizeof(buf)) > 0 &&
			    sscanf(buf, "%lld %lld", &hp, &hn) == 2 && hn > 0)
				sum_cpu += hn;
			continue;
		}
		pj(path, sizeof(path), cdir, "pid");
		pgid = file_int(path);
		if (pgid <= 0)
			continue;
		if (p->n_containers == cap) {
			cap = cap ? cap * 2 : 4;
			c = realloc(p->containers, cap * sizeof(*c));
			if (!c)
				break;
			p->containers = c;
		}
		c = &p->containers[p->n_containers];
		memset(c, 0, sizeof(*c));
		if (!(c->name = strdup(e->d_name)))
			break;
		p->n_containers++;
		cpu_unknown(&c->cpu);
		mem_unknown(&c->mem);
		c->start_ns = -1;
		pj(path, sizeof(path), cdir, "startedAt");
		if (first_line(path, buf, sizeof(buf)) == 0 && kt_time_parse_ns(buf, &t, NULL) == 0)
			c->start_ns = t;
		if (!cg.cpu[0] || !cg.mem[0])
			g = group_find(gs, pgid);
		c->cpu.time_ns = c->mem.time_ns = now_ns();
		if (cg.cpu[0]) {
			pj(path, sizeof(path), cg.cpu, c->name);
			c->cpu.usage_core_ns = cg_cpu(path, cg.cpu_v2);
		} else {
			c->cpu.usage_core_ns = proc_cpu(cdir, pgid, g, &retired);
			proc_cpu_used = true;
		}
		if (cg.mem[0]) {
			pj(path, sizeof(path), cg.mem, c->name);
			if (cg_mem(path, cg.mem_v2, &c->mem.usage, &c->mem.working_set) < 0)
				*err = true;
		} else {
			c->mem.usage = c->mem.working_set = g ? g->rss * sysconf(_SC_PAGESIZE) : 0;
		}
		if (c->cpu.usage_core_ns < 0)
			*err = true;
		else
			sum_cpu += c->cpu.usage_core_ns;
		if (c->mem.working_set >= 0) {
			sum_ws += c->mem.working_set;
			sum_use += c->mem.usage;
		}
	}
	if (d)
		closedir(d);
	if (p->n_containers > 1)
		qsort(p->containers, p->n_containers, sizeof(*p->containers), container_cmp);
	p->cpu.time_ns = p->mem.time_ns = now_ns();
	if (cg.cpu[0]) {
		p->cpu.usage_core_ns = cg_cpu(cg.cpu, cg.cpu_v2);
		if (p->cpu.usage_core_ns < 0)
			*err = true;
	} else {
		if (proc_cpu_used && retired != old_retired) {
			pj(path, sizeof(path), pod_dir, "cpu-retired");
			snprintf(buf, sizeof(buf), "%lld\n", (long long)retired);
			kt_file_replace(path, buf, strlen(buf), 0600, NULL);
		}
		p->cpu.usage_core_ns = retired + sum_cpu;
	}
	if (cg.mem[0]) {
		if (cg_mem(cg.mem, cg.mem_v2, &p->mem.usage, &p->mem.working_set) < 0)
			*err = true;
	} else {
		p->mem.usage = sum_use;
		p->mem.working_set = sum_ws;
	}
	if (locked)
		kt_lock_release(&lk);
	return 0;
}

static void free_pod(struct kt_podstats_pod *p)
{
	size_t j;

	for (j = 0; j < p->n_containers; j++)
		free(p->containers[j].name);
	free(p->containers);
	free(p->name);
	free(p->ns);
	free(p->uid);
}

static int pod_cmp(const void *a, const void *b)
{
	const struct kt_podstats_pod *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c ? c : strcmp(x->name, y->name);
}

/* the node: CPU from /proc/stat, memory from the root memory cgroup (v1) or
 * /proc/meminfo */
static void read_node(struct kt_podstats *s)
{
	char buf[65536], *p;
	long long f[8] = { 0 };
	int64_t total, avail, freeb, usage, ws;
	FILE *m;
	char line[4096], mnt[4096] = "";

	s->cpu.time_ns = s->mem.time_ns = now_ns();
	if (slurp("/proc/stat", buf, sizeof(buf)) > 0 && !strncmp(buf, "cpu ", 4) &&
	    sscanf(buf + 4, "%lld %lld %lld %lld %lld %lld %lld %lld", &f[0], &f[1], &f[2], &f[3],
		   &f[4], &f[5], &f[6], &f[7]) == 8) {
		/* user nice system idle iowait irq softirq steal: all but idle and iowait */
		s->cpu.usage_core_ns = (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) * tick_ns();
		p = strstr(buf, "\nbtime ");
		if (p)
			s->node_start_ns = strtoll(p + 7, NULL, 10) * 1000000000;
	} else {
		s->scrape_error = true;
	}
	/* the root of the v1 memory hierarchy */
	m = fopen("/proc/self/mounts", "re");
	while (m && fgets(line, sizeof(line), m)) {
		char dev[256], dir[4096], type[64], opts[1024];

		if (sscanf(line, "%255s %4095s %63s %1023s", dev, dir, type, opts) == 4 &&
		    !strcmp(type, "cgroup") &&
		    (strstr(opts, ",memory") || !strncmp(opts, "memory", 6))) {
			strcpy(mnt, dir);
			break;
		}
	}
	if (m)
		fclose(m);
	if (mnt[0] && cg_mem(mnt, false, &usage, &ws) == 0) {
		s->mem.usage = usage;
		s->mem.working_set = ws;
		return;
	}
	if (slurp("/proc/meminfo", buf, sizeof(buf)) <= 0) {
		s->scrape_error = true;
		return;
	}
	total = keyed(buf, "MemTotal");
	avail = keyed(buf, "MemAvailable");
	freeb = keyed(buf, "MemFree");
	if (total < 0 || avail < 0 || freeb < 0) {
		s->scrape_error = true;
		return;
	}
	s->mem.working_set = (total - avail) * 1024;
	s->mem.usage = (total - freeb) * 1024;
}

int kt_podstats_read(const char *state_dir, const char *node, struct kt_podstats *s,
		     struct kt_err *err)
{
	char path[4096], buf[256];
	struct groups gs = { 0 };
	struct kt_podstats_pod *np;
	DIR *d;
	struct dirent *e;
	size_t cap = 0;
	bool bad = false;

	kt_podstats_init(s);
	if (!node) {
		pj(path, sizeof(path), state_dir, "node");
		if (first_line(path, buf, sizeof(buf)) == 0)
			node = buf;
	}
	s->node_name = strdup(node ? node : "");
	pj(path, sizeof(path), state_dir, "pods");
	d = opendir(path);
	if (!d)
		return kt_error_file(err, KT_ERR_INPUT, "cannot read '%s': %s", path,
				     strerror(errno));
	read_node(s);
	while ((e = readdir(d))) {
		char pod_dir[4096];

		if (!name_ok(e->d_name))
			continue;
		pj(path, sizeof(path), state_dir, "pods");
		pj(pod_dir, sizeof(pod_dir), path, e->d_name);
		pj(path, sizeof(path), pod_dir, "terminated");
		if (access(path, F_OK) == 0)
			continue;
		if (s->n_pods == cap) {
			cap = cap ? cap * 2 : 16;
			np = realloc(s->pods, cap * sizeof(*np));
			if (!np) {
				bad = true;
				break;
			}
			s->pods = np;
		}
		if (read_pod(pod_dir, e->d_name, &gs, &bad, &s->pods[s->n_pods]) < 0) {
			/* a pod the agent is still writing: not one yet */
			free_pod(&s->pods[s->n_pods]);
			continue;
		}
		s->n_pods++;
	}
	closedir(d);
	free(gs.g);
	if (s->n_pods > 1)
		qsort(s->pods, s->n_pods, sizeof(*s->pods), pod_cmp);
	if (bad)
		s->scrape_error = true;
	return 0;
}

/* ------------------------------------------------------------------ parsing */

/* an optional field, a time (RFC 3339) or a count: absent or null leaves
 * *out; 0, or -1 when it has the wrong type */
static int p_field(const cJSON *o, const char *key, bool time, int64_t *out, const char *where,
		   struct kt_err *err)
{
	const cJSON *v = kt_json_get(o, key);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (time ? !cJSON_IsString(v) || kt_time_parse_ns(v->valuestring, out, NULL) < 0
		 : kt_json_num_int64(v, out, NULL) < 0 || *out < 0)
		return kt_error_kind(err, KT_ERR_INPUT, "%s.%s: %s", where, key,
				     time ? "not an RFC 3339 time" : "not a count");
	return 0;
}

static int p_time(const cJSON *o, const char *key, int64_t *out, const char *where,
		  struct kt_err *err)
{
	return p_field(o, key, true, out, where, err);
}

static int p_int(const cJSON *o, const char *key, int64_t *out, const char *where,
		 struct kt_err *err)
{
	return p_field(o, key, false, out, where, err);
}

static int p_str(const cJSON *o, const char *key, char **out, const char *where, struct kt_err *err)
{
	const char *v = kt_json_get_string(o, key);

	if (!v)
		return kt_error_kind(err, KT_ERR_INPUT, "%s.%s: a string is required", where, key);
	*out = strdup(v);
	return *out ? 0 : kt_error(err, "out of memory");
}

/* a summary entry's start time, CPU and memory, each unknown when left out */
static int p_usage(const cJSON *o, int64_t *start_ns, struct kt_podstats_cpu *c,
		   struct kt_podstats_mem *m, const char *where, struct kt_err *err)
{
	const cJSON *cpu = kt_json_get_object(o, "cpu"), *mem = kt_json_get_object(o, "memory");

	*start_ns = -1;
	cpu_unknown(c);
	mem_unknown(m);
	if (p_time(o, "startTime", start_ns, where, err) < 0)
		return -1;
	if (cpu && (p_time(cpu, "time", &c->time_ns, where, err) < 0 ||
		    p_int(cpu, "usageNanoCores", &c->usage_nano_cores, where, err) < 0 ||
		    p_int(cpu, "usageCoreNanoSeconds", &c->usage_core_ns, where, err) < 0))
		return -1;
	if (mem && (p_time(mem, "time", &m->time_ns, where, err) < 0 ||
		    p_int(mem, "usageBytes", &m->usage, where, err) < 0 ||
		    p_int(mem, "workingSetBytes", &m->working_set, where, err) < 0))
		return -1;
	return 0;
}

/* an array of as many zeroed elements as arr has items (*n), or NULL (and
 * *n 0) when out of memory */
static void *items_alloc(const cJSON *arr, size_t size, size_t *n, struct kt_err *err)
{
	void *v;

	*n = (size_t)cJSON_GetArraySize(arr);
	v = calloc(*n ? *n : 1, size);
	if (!v) {
		*n = 0;
		kt_error(err, "out of memory");
	}
	return v;
}

int kt_podstats_parse(const char *name, const char *text, size_t len, struct kt_podstats *s,
		      struct kt_err *err)
{
	cJSON *doc;
	const cJSON *node, *pods, *pod, *cs, *c, *ref;
	size_t i, j;
	int rc = -1;

	kt_podstats_init(s);
	doc = kt_json_parse(name, text, len, err);
	if (!doc)
		return -1;
	node = kt_json_get_object(doc, "node");
	pods = kt_json_get_array(doc, "pods");
	if (!cJSON_IsObject(doc) || !node)
		goto bad;
	if (p_str(node, "nodeName", &s->node_name, "node", err) < 0 ||
	    p_usage(node, &s->node_start_ns, &s->cpu, &s->mem, "node", err) < 0)
		goto out;
	s->pods = items_alloc(pods, sizeof(*s->pods), &s->n_pods, err);
	if (!s->pods)
		goto out;
	i = 0;
	cJSON_ArrayForEach (pod, pods) {
		struct kt_podstats_pod *p = &s->pods[i++];

		ref = kt_json_get_object(pod, "podRef");
		if (!ref)
			goto bad;
		if (p_str(ref, "name", &p->name, "podRef", err) < 0 ||
		    p_str(ref, "namespace", &p->ns, "podRef", err) < 0 ||
		    p_str(ref, "uid", &p->uid, "podRef", err) < 0 ||
		    p_usage(pod, &p->start_ns, &p->cpu, &p->mem, "pod", err) < 0)
			goto out;
		cs = kt_json_get_array(pod, "containers");
		p->containers = items_alloc(cs, sizeof(*p->containers), &p->n_containers, err);
		if (!p->containers)
			goto out;
		j = 0;
		cJSON_ArrayForEach (c, cs) {
			struct kt_podstats_container *k = &p->containers[j++];

			if (p_str(c, "name", &k->name, "container", err) < 0 ||
			    p_usage(c, &k->start_ns, &k->cpu, &k->mem, "container", err) < 0)
				goto out;
		}
	}
	/* in order, and each once, as the kubelet lists them */
	for (i = 0; i < s->n_pods; i++) {
		struct kt_podstats_pod *p = &s->pods[i];

		if (p->n_containers > 1)
			qsort(p->containers, p->n_containers, sizeof(*p->containers),
			      container_cmp);
		for (j = 1; j < p->n_containers; j++)
			if (!container_cmp(&p->containers[j - 1], &p->containers[j])) {
				kt_error_kind(err, KT_ERR_INPUT,
					      "%s: pod %s/%s: container %s twice", name, p->ns,
					      p->name, p->containers[j].name);
				goto out;
			}
	}
	if (s->n_pods > 1)
		qsort(s->pods, s->n_pods, sizeof(*s->pods), pod_cmp);
	for (i = 1; i < s->n_pods; i++)
		if (!pod_cmp(&s->pods[i - 1], &s->pods[i])) {
			kt_error_kind(err, KT_ERR_INPUT, "%s: pod %s/%s twice", name, s->pods[i].ns,
				      s->pods[i].name);
			goto out;
		}
	rc = 0;
	goto out;
bad:
	kt_error_kind(err, KT_ERR_INPUT, "%s: not a stats/v1alpha1 Summary", name);
out:
	cJSON_Delete(doc);
	return rc;
}

/* ------------------------------------------------------------------ Summary */

static void json_str(struct kt_sb *sb, const char *s)
{
	const char *p;

	kt_sb_put(sb, "\"", 1);
	for (p = s; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch == '"' || ch == '\\')
			kt_sb_printf(sb, "\\%c", ch);
		else if (ch < 0x20)
			kt_sb_printf(sb, "\\u%04x", ch);
		else
			kt_sb_put(sb, p, 1);
	}
	kt_sb_put(sb, "\"", 1);
}

static void json_time(struct kt_sb *sb, const char *key, int64_t ns)
{
	char tbuf[40];

	kt_sb_printf(sb, "\"%s\":\"%s\"", key,
		     kt_time_format(ns / 1000, false, tbuf, sizeof(tbuf)));
}

/* ,"NAME":{"time":...,"A":a,"B":b}, a value not known left out */
static void json_usage(struct kt_sb *sb, const char *name, int64_t time_ns, const char *ka,
		       int64_t a, const char *kb, int64_t b)
{
	kt_sb_printf(sb, ",\"%s\":{", name);
	json_time(sb, "time", time_ns);
	if (a >= 0)
		kt_sb_printf(sb, ",\"%s\":%" PRId64, ka, a);
	if (b >= 0)
		kt_sb_printf(sb, ",\"%s\":%" PRId64, kb, b);
	kt_sb_puts(sb, "}");
}

static void json_cpu(struct kt_sb *sb, const struct kt_podstats_cpu *c)
{
	json_usage(sb, "cpu", c->time_ns, "usageNanoCores", c->usage_nano_cores,
		   "usageCoreNanoSeconds", c->usage_core_ns);
}

static void json_mem(struct kt_sb *sb, const struct kt_podstats_mem *m)
{
	json_usage(sb, "memory", m->time_ns, "usageBytes", m->usage, "workingSetBytes",
		   m->working_set);
}

/* the CPU and memory of an entry, each only once it has been read */
static void json_known_usage(struct kt_sb *sb, const struct kt_podstats_cpu *c,
			     const struct kt_podstats_mem *m)
{
	if (c->time_ns >= 0)
		json_cpu(sb, c);
	if (m->time_ns >= 0)
		json_mem(sb, m);
}

char *kt_podstats_summary(const struct kt_podstats *s)
{
	struct kt_sb sb = { 0 };
	size_t i, j;

	kt_sb_puts(&sb, "{\"node\":{\"nodeName\":");
	json_str(&sb, s->node_name ? s->node_name : "");
	if (s->node_start_ns >= 0) {
		kt_sb_puts(&sb, ",");
		json_time(&sb, "startTime", s->node_start_ns);
	}
	json_known_usage(&sb, &s->cpu, &s->mem);
	kt_sb_puts(&sb, "},\"pods\":[");
	for (i = 0; i < s->n_pods; i++) {
		const struct kt_podstats_pod *p = &s->pods[i];

		kt_sb_puts(&sb, i ? ",{\"podRef\":{\"name\":" : "{\"podRef\":{\"name\":");
		json_str(&sb, p->name);
		kt_sb_puts(&sb, ",\"namespace\":");
		json_str(&sb, p->ns);
		kt_sb_puts(&sb, ",\"uid\":");
		json_str(&sb, p->uid);
		kt_sb_puts(&sb, "},");
		/* startTime is not optional in the type: the zero time when not known */
		if (p->start_ns >= 0)
			json_time(&sb, "startTime", p->start_ns);
		else
			kt_sb_puts(&sb, "\"startTime\":null");
		kt_sb_puts(&sb, ",\"containers\":[");
		for (j = 0; j < p->n_containers; j++) {
			const struct kt_podstats_container *c = &p->containers[j];

			kt_sb_puts(&sb, j ? ",{\"name\":" : "{\"name\":");
			json_str(&sb, c->name);
			kt_sb_puts(&sb, ",");
			if (c->start_ns >= 0)
				json_time(&sb, "startTime", c->start_ns);
			else
				kt_sb_puts(&sb, "\"startTime\":null");
			json_known_usage(&sb, &c->cpu, &c->mem);
			kt_sb_puts(&sb, "}");
		}
		kt_sb_puts(&sb, "]");
		json_known_usage(&sb, &p->cpu, &p->mem);
		kt_sb_puts(&sb, "}");
	}
	kt_sb_puts(&sb, "]}");
	if (sb.oom) {
		kt_sb_release(&sb);
		return NULL;
	}
	return sb.buf;
}

/* --------------------------------------------------------------- Prometheus */

/* a double as Go's strconv.FormatFloat(v, 'g', -1, 64) writes it, which is how
 * the Prometheus client writes a sample: the shortest digits that read back
 * the same, in %e form when the exponent is below -4 or at least 6 */
static void go_float(struct kt_sb *sb, double v)
{
	char e[40], digits[24];
	int lo = 1, hi = 17, mid, exp, nd, i;
	char *p;

	if (v == 0) {
		kt_sb_puts(sb, "0");
		return;
	}
	/* the fewest digits that read back: a binary search, reading back is
	 * monotonic in the number of digits */
	while (lo < hi) {
		mid = (lo + hi) / 2;
		snprintf(e, sizeof(e), "%.*e", mid - 1, v);
		if (strtod(e, NULL) == v)
			hi = mid;
		else
			lo = mid + 1;
	}
	snprintf(e, sizeof(e), "%.*e", lo - 1, v);
	p = e;
	if (*p == '-') {
		kt_sb_put(sb, "-", 1);
		p++;
	}
	nd = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	exp = atoi(p + 1);
	if (exp < -4 || exp >= 6) {
		kt_sb_put(sb, digits, 1);
		if (nd > 1) {
			kt_sb_put(sb, ".", 1);
			kt_sb_put(sb, digits + 1, (size_t)nd - 1);
		}
		kt_sb_printf(sb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		return;
	}
	if (exp < 0) {
		kt_sb_puts(sb, "0.");
		for (i = -1; i > exp; i--)
			kt_sb_put(sb, "0", 1);
		kt_sb_put(sb, digits, (size_t)nd);
		return;
	}
	for (i = 0; i <= exp || i < nd; i++) {
		if (i == exp + 1)
			kt_sb_put(sb, ".", 1);
		kt_sb_put(sb, i < nd ? &digits[i] : "0", 1);
	}
}

static void label(struct kt_sb *sb, const char *name, const char *v, bool first)
{
	const char *p;

	kt_sb_printf(sb, "%s%s=\"", first ? "" : ",", name);
	for (p = v; *p; p++) {
		if (*p == '\\')
			kt_sb_puts(sb, "\\\\");
		else if (*p == '"')
			kt_sb_puts(sb, "\\\"");
		else if (*p == '\n')
			kt_sb_puts(sb, "\\n");
		else
			kt_sb_put(sb, p, 1);
	}
	kt_sb_put(sb, "\"", 1);
}

static void family(struct kt_sb *sb, const char *name, const char *level, const char *help,
		   const char *type)
{
	kt_sb_printf(sb, "# HELP %s [%s] %s\n# TYPE %s %s\n", name, level, help, name, type);
}

/* the value, and its timestamp in milliseconds */
static void sample_end(struct kt_sb *sb, double v, int64_t ns)
{
	kt_sb_put(sb, " ", 1);
	go_float(sb, v);
	if (ns >= 0)
		kt_sb_printf(sb, " %" PRId64, ns / 1000000);
	kt_sb_put(sb, "\n", 1);
}

struct cref {
	const struct kt_podstats_pod *p;
	const struct kt_podstats_container *c;
};

/* the registry's order: by label values, labels in name order (container,
 * namespace, pod) */
static int cref_cmp(const void *a, const void *b)
{
	const struct cref *x = a, *y = b;
	int c = strcmp(x->c->name, y->c->name);

	if (!c)
		c = strcmp(x->p->ns, y->p->ns);
	return c ? c : strcmp(x->p->name, y->p->name);
}

enum cmetric { C_CPU, C_MEM, C_START };

static void container_family(struct kt_sb *sb, const struct cref *cs, size_t n, enum cmetric m)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct kt_podstats_container *c = cs[i].c;
		const char *name;
		double v;
		int64_t at;

		if (m == C_CPU) {
			if (c->cpu.usage_core_ns < 0)
				continue;
			name = "container_cpu_usage_seconds_total";
			v = (double)c->cpu.usage_core_ns / 1e9;
			at = c->cpu.time_ns;
		} else if (m == C_MEM) {
			if (c->mem.working_set < 0)
				continue;
			name = "container_memory_working_set_bytes";
			v = (double)c->mem.working_set;
			at = c->mem.time_ns;
		} else {
			if (c->start_ns <= 0)
				continue;
			name = "container_start_time_seconds";
			v = (double)c->start_ns / 1e9;
			at = -1;
		}
		kt_sb_puts(sb, name);
		kt_sb_put(sb, "{", 1);
		label(sb, "container", c->name, true);
		label(sb, "namespace", cs[i].p->ns, false);
		label(sb, "pod", cs[i].p->name, false);
		kt_sb_put(sb, "}", 1);
		sample_end(sb, v, at);
	}
}

static void pod_family(struct kt_sb *sb, const struct kt_podstats *s, bool cpu)
{
	size_t i;

	for (i = 0; i < s->n_pods; i++) {
		const struct kt_podstats_pod *p = &s->pods[i];

		if (cpu ? p->cpu.usage_core_ns < 0 : p->mem.working_set < 0)
			continue;
		kt_sb_puts(sb,
			   cpu ? "pod_cpu_usage_seconds_total{" : "pod_memory_working_set_bytes{");
		label(sb, "namespace", p->ns, true);
		label(sb, "pod", p->name, false);
		kt_sb_put(sb, "}", 1);
		if (cpu)
			sample_end(sb, (double)p->cpu.usage_core_ns / 1e9, p->cpu.time_ns);
		else
			sample_end(sb, (double)p->mem.working_set, p->mem.time_ns);
	}
}

char *kt_podstats_prometheus(const struct kt_podstats *s)
{
	struct kt_sb sb = { 0 };
	struct cref *cs;
	size_t n = 0, i, j;

	for (i = 0; i < s->n_pods; i++)
		n += s->pods[i].n_containers;
	cs = calloc(n ? n : 1, sizeof(*cs));
	if (!cs)
		return NULL;
	for (i = 0, n = 0; i < s->n_pods; i++)
		for (j = 0; j < s->pods[i].n_containers; j++)
			cs[n++] = (struct cref){ &s->pods[i], &s->pods[i].containers[j] };
	qsort(cs, n, sizeof(*cs), cref_cmp);
	/* the families in name order, as the registry gathers them */
	family(&sb, "container_cpu_usage_seconds_total", "STABLE",
	       "Cumulative cpu time consumed by the container in core-seconds", "counter");
	container_family(&sb, cs, n, C_CPU);
	family(&sb, "container_memory_working_set_bytes", "STABLE",
	       "Current working set of the container in bytes", "gauge");
	container_family(&sb, cs, n, C_MEM);
	family(&sb, "container_start_time_seconds", "STABLE",
	       "Start time of the container since unix epoch in seconds", "gauge");
	container_family(&sb, cs, n, C_START);
	family(&sb, "node_cpu_usage_seconds_total", "STABLE",
	       "Cumulative cpu time consumed by the node in core-seconds", "counter");
	if (s->cpu.usage_core_ns >= 0) {
		kt_sb_puts(&sb, "node_cpu_usage_seconds_total");
		sample_end(&sb, (double)s->cpu.usage_core_ns / 1e9, s->cpu.time_ns);
	}
	family(&sb, "node_memory_working_set_bytes", "STABLE",
	       "Current working set of the node in bytes", "gauge");
	if (s->mem.working_set >= 0) {
		kt_sb_puts(&sb, "node_memory_working_set_bytes");
		sample_end(&sb, (double)s->mem.working_set, s->mem.time_ns);
	}
	family(&sb, "pod_cpu_usage_seconds_total", "STABLE",
	       "Cumulative cpu time consumed by the pod in core-seconds", "counter");
	pod_family(&sb, s, true);
	family(&sb, "pod_memory_working_set_bytes", "STABLE",
	       "Current working set of the pod in bytes", "gauge");
	pod_family(&sb, s, false);
	family(&sb, "resource_scrape_error", "STABLE",
	       "1 if there was an error while getting container metrics, 0 otherwise", "gauge");
	kt_sb_puts(&sb,
		   s->scrape_error ? "resource_scrape_error 1\n" : "resource_scrape_error 0\n");
	family(&sb, "scrape_error", "ALPHA",
	       "(Deprecated since 1.29.0) 1 if there was an error while getting container metrics, "
	       "0 otherwise",
	       "gauge");
	kt_sb_puts(&sb, s->scrape_error ? "scrape_error 1\n" : "scrape_error 0\n");
	free(cs);
	if (sb.oom) {
		kt_sb_release(&sb);
		return NULL;
	}
	return sb.buf;
}
