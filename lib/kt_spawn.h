/* SPDX-License-Identifier: Apache-2.0 */
/* spawn: the one child-process starter: posix_spawn, own process group, capped output */
#ifndef KT_SPAWN_H
#define KT_SPAWN_H

#include <spawn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kt_err.h"
#include "loop.h"

/*
 * Every program lib starts (exec credential plugins, exec probes,
 * node-ping --check) goes through here, so each one gets the
 * same care: argv passed as it is (no shell), looked up in PATH unless it
 * holds a '/', stdin from /dev/null, its own process group (so a timeout
 * kills a shell's children too), the signal mask emptied and every handler
 * back to its default, and only the descriptors below given to it.
 *
 * Output: KT_SPAWN_STDOUT captures stdout and leaves stderr to ours (a
 * credential plugin's prompts and errors reach the user); KT_SPAWN_BOTH
 * captures stdout and stderr in one stream (a probe's output);
 * KT_SPAWN_TO_STDERR captures nothing and sends the child's stdout to our
 * stderr (a check command that only speaks to the operator).  At most
 * out_max captured bytes are kept; past them the child is either killed
 * (KT_SPAWN_OVER_KILL: the result says too_big) or its further output read
 * and dropped (KT_SPAWN_OVER_DROP, as the kubelet keeps a probe's first
 * 10 KiB), so a child never blocks on a full pipe.
 *
 * A child still running at timeout_ms is killed with its group (SIGKILL)
 * and always reaped: no zombie and no stray process outlives a call.
 */
enum kt_spawn_output {
	KT_SPAWN_STDOUT,
	KT_SPAWN_BOTH,
	KT_SPAWN_TO_STDERR,
};

enum kt_spawn_over {
	KT_SPAWN_OVER_KILL,
	KT_SPAWN_OVER_DROP,
};

/* what to run; every pointer is borrowed and only read while starting */
struct kt_spawn_opts {
	char *const *argv;		/* argv[0] is the program; NULL-terminated */
	char *const *envp;		/* NULL: our own environment */
	enum kt_spawn_output output;
	enum kt_spawn_over over;
	size_t out_max;			/* captured bytes kept (not 0 when capturing) */
	int64_t timeout_ms;		/* 0: none */
};

/* how it ended; out is NUL-terminated (out_len bytes before the NUL) */
struct kt_spawn_result {
	int status;		/* as from waitpid, when neither flag below is set */
	bool timed_out;		/* killed at timeout_ms */
	bool too_big;		/* killed past out_max (KT_SPAWN_OVER_KILL) */
	char *out;		/* captured output; NULL with KT_SPAWN_TO_STDERR */
	size_t out_len;
};

/* wipes (the output may hold a secret) and frees out, zeroes res; NULL is fine */
void kt_spawn_result_release(struct kt_spawn_result *res);

/*
 * Runs a child to its end, blocking; for one-shot tools.  res (zeroed by
 * kt_spawn_run) is the caller's to release.  0 when the child ran (how it
 * ended is in res), -1 with err when it could not start: err then reads
 * "cannot run '<argv0>': <strerror>" and err_no is set to the errno.
 */
int kt_spawn_run(const struct kt_spawn_opts *o, struct kt_spawn_result *res, int *err_no,
		 struct kt_err *err);

struct kt_spawn;

/*
 * Called once on the loop when a child started with kt_spawn_start has
 * ended and been reaped.  res is borrowed for the call (take res->out by
 * setting it to NULL); the handle is invalid from then on.
 */
typedef void kt_spawn_fn(struct kt_spawn *sp, struct kt_spawn_result *res, void *arg);

/*
 * Starts a child on loop and returns at once; fn runs when it ends.  The
 * handle is the loop's, valid until fn starts or kt_spawn_cancel.  NULL with
 * err (and *err_no, as for kt_spawn_run) when it cannot start; fn is then
 * never called.
 */
struct kt_spawn *kt_spawn_start(struct kt_loop *loop, const struct kt_spawn_opts *o,
				kt_spawn_fn *fn, void *arg, int *err_no,
				struct kt_err *err);

/* kills the child's group and reaps it now; fn is not called; NULL is fine */
void kt_spawn_cancel(struct kt_spawn *sp);

/* the child's process id, for logs */
pid_t kt_spawn_pid(const struct kt_spawn *sp);

#endif
