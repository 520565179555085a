/* SPDX-License-Identifier: Apache-2.0 */
/* spawn: the one child-process starter: posix_spawn, own process group, capped output */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt_spawn.h"
#include "timeutil.h"

extern char **environ;

struct kt_spawn {
	struct kt_loop *loop;
	pid_t pid;
	int fd;			/* the read end of the output pipe, -1 when none */
	struct kt_timer *timer;
	enum kt_spawn_over over;
	size_t max;
	struct kt_spawn_result res;
	size_t cap;
	kt_spawn_fn *fn;
	void *arg;
};

void kt_spawn_result_release(struct kt_spawn_result *res)
{
	if (!res)
		return;
	if (res->out)
		memset(res->out, 0, res->out_len);
	free(res->out);
	memset(res, 0, sizeof(*res));
}

pid_t kt_spawn_pid(const struct kt_spawn *sp)
{
	return sp->pid;
}

/* starts the child with its output on wfd (-1: none captured) */
static int start(const struct kt_spawn_opts *o, int wfd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int rc;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (o->output == KT_SPAWN_TO_STDERR)
		posix_spawn_file_actions_adddup2(&fa, 2, 1);
	else
		posix_spawn_file_actions_adddup2(&fa, wfd, 1);
	if (o->output == KT_SPAWN_BOTH)
		posix_spawn_file_actions_adddup2(&fa, wfd, 2);
	/* nothing else, as Go's os/exec: libcurl opens its sockets (the API
	 * server connection, other probes' connections) without close-on-exec */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					       POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(pid, o->argv[0], &fa, &attr, o->argv,
			  o->envp ? o->envp : environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

/* the pipe (non-blocking, close-on-exec) and the child; -1 with err */
static int launch(const struct kt_spawn_opts *o, pid_t *pid, int *rfd, int *err_no,
		  struct kt_err *err)
{
	int p[2] = { -1, -1 }, e;

	*rfd = -1;
	if (o->output != KT_SPAWN_TO_STDERR) {
		if (pipe2(p, O_CLOEXEC) < 0) {
			e = errno;
			if (err_no)
				*err_no = e;
			return kt_error(err, "cannot run '%s': cannot make a pipe: %s",
					o->argv[0], strerror(e));
		}
		fcntl(p[0], F_SETFL, O_NONBLOCK);
	}
	e = start(o, p[1], pid);
	if (p[1] >= 0)
		close(p[1]);
	if (e != 0) {
		if (p[0] >= 0)
			close(p[0]);
		if (err_no)
			*err_no = e;
		return kt_error(err, "cannot run '%s': %s", o->argv[0], strerror(e));
	}
	*rfd = p[0];
	return 0;
}

/* keeps n more bytes of output, up to max; false when past max */
static bool keep(struct kt_spawn_result *res, size_t *cap, size_t max, const char *buf,
		 size_t n)
{
	size_t take = res->out_len + n > max ? max - res->out_len : n;

	if (res->out_len + take + 1 > *cap) {
		size_t c = *cap ? *cap : 4096;
		char *nb;

		while (c < res->out_len + take + 1)
			c *= 2;
		nb = malloc(c);
		if (!nb)
			return false;
		if (res->out) {
			memcpy(nb, res->out, res->out_len);
			memset(res->out, 0, res->out_len);
		}
		free(res->out);
		res->out = nb;
		*cap = c;
	}
	memcpy(res->out + res->out_len, buf, take);
	res->out_len += take;
	res->out[res->out_len] = '\0';
	return take == n;
}

/* reads what is there: 1 at end of output, 0 for more later, -1 past the cap */
static int drain(int fd, struct kt_spawn_result *res, size_t *cap, size_t max,
		 enum kt_spawn_over over)
{
	char buf[16384];
	ssize_t n;

	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return 1;
		if (!keep(res, cap, max, buf, (size_t)n) && over == KT_SPAWN_OVER_KILL) {
			res->too_big = true;
			return -1;
		}
	}
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* waits for pid until the deadline (0: none), then kills its group */
static void reap_by(pid_t pid, int64_t deadline, struct kt_spawn_result *res)
{
	int64_t pause = 1;

	for (;;) {
		pid_t r = waitpid(pid, &res->status, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return;
		if (r == 0 && deadline && kt_mono_ms() >= deadline) {
			res->timed_out = true;
			kill(-pid, SIGKILL);
			while (waitpid(pid, &res->status, 0) < 0 && errno == EINTR)
				;
			return;
		}
		if (r == 0) {
			sleep_ms(pause);
			pause = pause < 50 ? pause * 2 : 50;
		}
	}
}

int kt_spawn_run(const struct kt_spawn_opts *o, struct kt_spawn_result *res, int *err_no,
		 struct kt_err *err)
{
	int64_t deadline = o->timeout_ms > 0 ? kt_mono_ms() + o->timeout_ms : 0;
	size_t cap = 0;
	pid_t pid;
	int fd, done = 0;

	memset(res, 0, sizeof(*res));
	if (launch(o, &pid, &fd, err_no, err) < 0)
		return -1;
	while (fd >= 0 && !done) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline ? deadline - kt_mono_ms() : -1;

		if (deadline && left <= 0)
			break;
		if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) > 0)
			done = drain(fd, res, &cap, o->out_max, o->over);
	}
	if (done < 0 || (fd >= 0 && !done)) {
		/* past the cap or the deadline: the group goes now */
		res->timed_out = done == 0;
		kill(-pid, SIGKILL);
		while (waitpid(pid, &res->status, 0) < 0 && errno == EINTR)
			;
	} else {
		reap_by(pid, deadline, res);
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* ------------------------------------------------------------ on the loop */

static void finish(struct kt_spawn *sp)
{
	kt_spawn_fn *fn = sp->fn;

	if (sp->timer)
		kt_timer_cancel(sp->loop, sp->timer);
	if (sp->fd >= 0) {
		kt_loop_unwatch_fd(sp->loop, sp->fd);
		close(sp->fd);
	}
	fn(sp, &sp->res, sp->arg);
	kt_spawn_result_release(&sp->res);
	free(sp);
}

static void kill_group(struct kt_spawn *sp)
{
	kill(-sp->pid, SIGKILL);
	if (sp->fd >= 0) {
		kt_loop_unwatch_fd(sp->loop, sp->fd);
		close(sp->fd);
		sp->fd = -1;
	}
}

static void on_output(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct kt_spawn *sp = arg;
	int r = drain(fd, &sp->res, &sp->cap, sp->max, sp->over);

	if (r < 0) {
		kill_group(sp);
	} else if (r > 0) {
		kt_loop_unwatch_fd(loop, fd);
		close(fd);
		sp->fd = -1;
	}
}

static void on_timeout(struct kt_loop *loop, void *arg)
{
	struct kt_spawn *sp = arg;

	sp->timer = NULL;
	sp->res.timed_out = true;
	kill_group(sp);
}

static void on_exit_status(struct kt_loop *loop, pid_t pid, int status, void *arg)
{
	struct kt_spawn *sp = arg;

	sp->res.status = status;
	/* what the child wrote before it ended is in the pipe still */
	if (sp->fd >= 0 &&
	    drain(sp->fd, &sp->res, &sp->cap, sp->max, sp->over) < 0)
		kill(-pid, SIGKILL);
	finish(sp);
}

struct kt_spawn *kt_spawn_start(struct kt_loop *loop, const struct kt_spawn_opts *o,
				kt_spawn_fn *fn, void *arg, int *err_no,
				struct kt_err *err)
{
	struct kt_spawn *sp = calloc(1, sizeof(*sp));

	if (!sp) {
		kt_error(err, "out of memory");
		return NULL;
	}
	sp->loop = loop;
	sp->over = o->over;
	sp->max = o->out_max;
	sp->fn = fn;
	sp->arg = arg;
	if (launch(o, &sp->pid, &sp->fd, err_no, err) < 0) {
		free(sp);
		return NULL;
	}
	/* from here the child is watched whatever else fails, so it is reaped */
	if (kt_loop_watch_child(loop, sp->pid, on_exit_status, sp, err) < 0) {
		kill(-sp->pid, SIGKILL);
		waitpid(sp->pid, NULL, 0);
		if (sp->fd >= 0)
			close(sp->fd);
		free(sp);
		return NULL;
	}
	if (o->timeout_ms > 0) {
		sp->timer = kt_timer_add(loop, o->timeout_ms, on_timeout, sp);
		if (!sp->timer)
			on_timeout(loop, sp);
	}
	if (sp->fd >= 0 &&
	    kt_loop_watch_fd(loop, sp->fd, KT_LOOP_READ, on_output, sp, NULL) < 0)
		kill_group(sp);
	return sp;
}

void kt_spawn_cancel(struct kt_spawn *sp)
{
	if (!sp)
		return;
	if (sp->timer)
		kt_timer_cancel(sp->loop, sp->timer);
	kill_group(sp);
	kt_loop_unwatch_child(sp->loop, sp->pid);
	while (waitpid(sp->pid, NULL, 0) < 0 && errno == EINTR)
		;
	kt_spawn_result_release(&sp->res);
	free(sp);
}
