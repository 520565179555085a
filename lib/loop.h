/* SPDX-License-Identifier: Apache-2.0 */
/* loop: the one event loop: fds on epoll, timers, libcurl multi, children, signals */
#ifndef KT_LOOP_H
#define KT_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <curl/curl.h>

#include "kt_err.h"

/*
 * One loop per process, owned by the tool's main.  Everything that waits
 * (node-ping's fleet, probe-run's probes, node-patch3way --stream) runs on
 * it; nothing else in lib invents its own.  Callbacks run on the loop's
 * thread, one at a time.  Not thread-safe.
 */
struct kt_loop;
struct kt_timer;

enum kt_loop_events {
	KT_LOOP_READ = 1 << 0,
	KT_LOOP_WRITE = 1 << 1,
};

typedef void kt_timer_fn(struct kt_loop *loop, void *arg);
typedef void kt_fd_fn(struct kt_loop *loop, int fd, unsigned events, void *arg);
typedef void kt_curl_fn(struct kt_loop *loop, CURL *easy, CURLcode rc, void *arg);
typedef void kt_child_fn(struct kt_loop *loop, pid_t pid, int status, void *arg);
typedef void kt_signal_fn(struct kt_loop *loop, int signo, void *arg);

/* caller owns; kt_loop_free cancels timers, removes transfers, frees */
struct kt_loop *kt_loop_new(struct kt_err *err);
void kt_loop_free(struct kt_loop *loop);

/* runs until kt_loop_stop, or until no timer, fd, transfer or child is left;
 * -1 with err on an epoll failure */
int kt_loop_run(struct kt_loop *loop, struct kt_err *err);
void kt_loop_stop(struct kt_loop *loop);

/* the loop's monotonic clock in ms, refreshed on every wake-up; outside
 * kt_loop_run the clock itself, which a timer added then counts from */
int64_t kt_loop_now(const struct kt_loop *loop);

/* one-shot timer after delay_ms; the handle is the loop's and is valid until
 * the callback starts or kt_timer_cancel; NULL on allocation failure */
struct kt_timer *kt_timer_add(struct kt_loop *loop, int64_t delay_ms, kt_timer_fn *fn,
			      void *arg);
void kt_timer_cancel(struct kt_loop *loop, struct kt_timer *t);

/* watch fd for events (replaces an earlier watch of the same fd) / stop */
int kt_loop_watch_fd(struct kt_loop *loop, int fd, unsigned events, kt_fd_fn *fn, void *arg,
		     struct kt_err *err);
void kt_loop_unwatch_fd(struct kt_loop *loop, int fd);

/*
 * Runs a prepared easy handle on the loop's multi handle (connections are
 * reused between transfers).  fn is called once when it ends, after the
 * handle has been removed from the multi; the easy handle stays the caller's.
 * While the transfer runs the loop keeps its record in the handle's
 * CURLOPT_PRIVATE, so the caller must not use that option.
 */
int kt_loop_add_curl(struct kt_loop *loop, CURL *easy, kt_curl_fn *fn, void *arg,
		     struct kt_err *err);
/* aborts a transfer still running; fn is not called */
void kt_loop_remove_curl(struct kt_loop *loop, CURL *easy);
/*
 * The loop's pool of easy handles, the one pool (api's calls and the probes
 * take theirs here): making and freeing one per transfer is a large part of
 * a short transfer's cost.  kt_loop_easy_take gives one kept
 * from an earlier transfer (reset: no option set) or a new one, NULL when out
 * of memory; the caller sets it up, runs it with kt_loop_add_curl and gives it
 * back with kt_loop_easy_give once no transfer runs on it, which resets it so
 * nothing of the transfer it served stays reachable.  The loop keeps up to
 * KT_LOOP_SPARE_EASY and cleans them up in kt_loop_free.
 */
#define KT_LOOP_SPARE_EASY 1024
CURL *kt_loop_easy_take(struct kt_loop *loop);
void kt_loop_easy_give(struct kt_loop *loop, CURL *easy);
/* the multi handle, for options such as CURLMOPT_MAX_HOST_CONNECTIONS; borrowed */
CURLM *kt_loop_multi(struct kt_loop *loop);

/* fn once when pid exits (status as from waitpid); the loop reaps it */
int kt_loop_watch_child(struct kt_loop *loop, pid_t pid, kt_child_fn *fn, void *arg,
			struct kt_err *err);

/* forgets a watched child without calling its fn: the caller reaps it */
void kt_loop_unwatch_child(struct kt_loop *loop, pid_t pid);

/* fn on each delivery of signo (blocked and read through signalfd) */
int kt_loop_on_signal(struct kt_loop *loop, int signo, kt_signal_fn *fn, void *arg,
		      struct kt_err *err);

/*
 * The signals the loop reads (SIGCHLD once a child is watched, and those of
 * kt_loop_on_signal) stay blocked in the process until kt_loop_free, and a
 * blocked mask is inherited across fork and exec.  A child forked to exec
 * another program calls this first: it unblocks every signal.
 */
void kt_loop_sigmask_reset(void);

#endif
