/* SPDX-License-Identifier: Apache-2.0 */
/* podstats: CPU and memory of a node, its pods and their containers, read from an
 * agent's state directory and the machine, and written as the kubelet serves them
 *
 * kt_podstats_read reads, for one kt-agent state directory: the node's CPU
 * (/proc/stat) and memory working set (the root memory cgroup's usage less its
 * inactive file pages, else MemTotal - MemAvailable); for each pod that is not
 * terminated and each of its containers that runs, the CPU used in core
 * nanoseconds and the memory working set in bytes, from the pod's cgroup (the
 * pod directory's file "cgroup") or else from /proc (the container's process
 * group: utime + stime + cutime + cstime, and its resident pages).  A counter
 * read from /proc is kept monotonic: the highest value seen is kept in the
 * state (containers/NAME/cpu-hwm, and the pod's cpu-retired for instances that
 * ended).  The renderers are pure: kt_podstats_summary writes the stats/v1alpha1
 * Summary (GET /stats/summary), kt_podstats_prometheus the Prometheus text 0.0.4
 * of GET /metrics/resource, millisecond timestamps on each sample. */
#ifndef KT_PODSTATS_H
#define KT_PODSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kt_err.h"

/* a value not known is -1 (left out of what is written) */
struct kt_podstats_cpu {
	int64_t time_ns;	  /* when it was read, nanoseconds since the epoch */
	int64_t usage_core_ns;	  /* usageCoreNanoSeconds: cumulative, never goes down */
	int64_t usage_nano_cores; /* usageNanoCores: a rate, -1 unless the caller has two reads */
};

struct kt_podstats_mem {
	int64_t time_ns;
	int64_t working_set; /* workingSetBytes */
	int64_t usage;	     /* usageBytes */
};

struct kt_podstats_container {
	char *name;
	int64_t start_ns; /* startTime */
	struct kt_podstats_cpu cpu;
	struct kt_podstats_mem mem;
};

struct kt_podstats_pod {
	char *name, *ns, *uid;
	int64_t start_ns;
	struct kt_podstats_container *containers;
	size_t n_containers;
	struct kt_podstats_cpu cpu;
	struct kt_podstats_mem mem;
};

struct kt_podstats {
	char *node_name;
	int64_t node_start_ns; /* the node's startTime: the machine's boot */
	struct kt_podstats_cpu cpu;
	struct kt_podstats_mem mem;
	struct kt_podstats_pod *pods; /* in the order of (namespace, name) */
	size_t n_pods;
	bool scrape_error; /* some value could not be read (scrape_error 1) */
};

/* an empty set of stats, every value unknown */
void kt_podstats_init(struct kt_podstats *s);
/* frees what s holds (names, pods, containers) and leaves it empty */
void kt_podstats_release(struct kt_podstats *s);

/* reads the stats of the agent whose state directory is state_dir into s
 * (initialized here; release it even on failure).  node names the node; NULL
 * reads it from state_dir/node.  -1 with err only when state_dir cannot be
 * read; a value that cannot be read is left unknown and sets scrape_error */
int kt_podstats_read(const char *state_dir, const char *node, struct kt_podstats *s,
		     struct kt_err *err);

/* reads a Summary as a provider's stats prints it (the shape
 * kt_podstats_summary writes; other fields are ignored) into s (initialized
 * here; release it even on failure); name names the text in messages.  -1
 * with err (KT_ERR_INPUT) when it is not JSON or a field has the wrong type */
int kt_podstats_parse(const char *name, const char *text, size_t len, struct kt_podstats *s,
		      struct kt_err *err);

/* the stats/v1alpha1 Summary of s as compact JSON text, NUL-terminated; the
 * caller frees it.  NULL only when out of memory */
char *kt_podstats_summary(const struct kt_podstats *s);

/* /metrics/resource of s: Prometheus text format 0.0.4, families in name order
 * with the kubelet's HELP and TYPE lines, samples in label order; the caller
 * frees it.  NULL only when out of memory */
char *kt_podstats_prometheus(const struct kt_podstats *s);

#endif
