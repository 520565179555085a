/* SPDX-License-Identifier: Apache-2.0 */
/* rcmd_run: an exec, attach or port-forward session on kubelet-serve's
 * libevent loop, after the 101: rcmd's protocol on the connection taken from
 * evhttp, the provider's program run with its streams as fds 0, 1 and 2
 * (pipes, a terminal kubelet-serve opens, or one end of a socket pair for
 * port-forward), the child's end seen through a pidfd, no thread. */
#ifndef KT_RCMD_RUN_H
#define KT_RCMD_RUN_H
#include <stddef.h>

#include "kt_err.h"
#include "rcmd.h"

struct event_base;
struct evhttp_connection;

#define KT_SERVE_RUN_ARGV_MAX 8192 /* the exec words, NUL-ended, all together */
#define KT_SERVE_RUN_ARGS     1024 /* at most this many words */

struct kt_rcmd_run_opts {
	struct kt_rcmd_opts r;
	const char *provider;  /* the directory of exec, attach and port-forward */
	const char *state_dir; /* the pod's kt-agent state directory: KT_STATE_DIR */
	const char *uid, *container;
	const char *argv; /* exec: argc words, each NUL-ended (KT_SERVE_RUN_ARGV_MAX) */
	size_t argc;
	long create_timeout_ms; /* every stream there within this, or the end (0: none) */
	long idle_timeout_ms;	/* nothing either way this long: the end (0: none) */
};

struct kt_rcmd_run;

/* the session ended: everything is released but x, which the callee frees
 * with kt_rcmd_run_free (it may do so at once) */
typedef void (*kt_rcmd_run_done)(void *arg, struct kt_rcmd_run *x);

/*
 * Takes evcon, whose request was answered 101 (the answer is in its output):
 * its callbacks become the session's, and it is freed with the session.  NULL
 * with err when out of memory (evcon is left to the caller).
 */
struct kt_rcmd_run *kt_rcmd_run_start(struct event_base *base, struct evhttp_connection *evcon,
				      const struct kt_rcmd_run_opts *o, kt_rcmd_run_done done,
				      void *done_arg, struct kt_err *err);
/* kills what runs, closes the connection and frees x */
void kt_rcmd_run_free(struct kt_rcmd_run *x);
#endif
