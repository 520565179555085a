/* SPDX-License-Identifier: Apache-2.0 */
/* probe_exec: an exec probe attempt: argv in its own process group, output kept to 10 KiB */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "probe_int.h"

extern char **environ;

/*
 * The loop's callbacks get the attempt, not the call: a cancelled attempt
 * lives on (c == NULL) until the loop has reaped its killed child.
 */
struct exec_attempt {
	struct kt_probe_call *c;
	struct kt_loop *loop;
	pid_t pid;
	int fd;
	struct kt_timer *timer;
	bool exited;
	bool timed_out;
	int status;
	size_t len;
	char out[KT_PROBE_MAX_OUTPUT];
};

static void close_pipe(struct exec_attempt *a)
{
	if (a->fd < 0)
		return;
	kt_loop_unwatch_fd(a->loop, a->fd);
	close(a->fd);
	a->fd = -1;
}

/* reads what is there; the excess over 10 KiB is read and dropped */
static void drain(struct exec_attempt *a)
{
	char buf[16384];
	ssize_t n;

	while (a->fd >= 0) {
		n = read(a->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_pipe(a);
			return;
		}
		if (a->len < sizeof(a->out)) {
			size_t take = (size_t)n < sizeof(a->out) - a->len ? (size_t)n
									     : sizeof(a->out) - a->len;
			memcpy(a->out + a->len, buf, take);
			a->len += take;
		}
	}
}

static void on_output(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	drain(arg);
}

/* the command line for messages, as Go's %q of strings.Join(argv, " ") */
static void quoted_command(char *buf, size_t size, char *const *argv)
{
	size_t n = 0;

	n += (size_t)snprintf(buf, size, "\"");
	for (size_t i = 0; argv[i] && n < size; i++) {
		for (const char *p = argv[i]; *p && n + 5 < size; p++) {
			if (*p == '"' || *p == '\\')
				n += (size_t)snprintf(buf + n, size - n, "\\%c", *p);
			else if ((unsigned char)*p < 0x20)
				n += (size_t)snprintf(buf + n, size - n, "\\x%02x", (unsigned char)*p);
			else
				buf[n++] = *p;
		}
		if (argv[i + 1] && n + 2 < size)
			buf[n++] = ' ';
	}
	if (n + 2 > size)
		n = size - 2;
	buf[n++] = '"';
	buf[n] = '\0';
}

static void on_exit_status(struct kt_loop *loop, pid_t pid, int status, void *arg)
{
	struct exec_attempt *a = arg;
	struct kt_probe_call *c = a->c;
	enum kt_probe_result r;
	char msg[1200], cmd[1024];

	if (a->timer)
		kt_timer_cancel(loop, a->timer);
	a->timer = NULL;
	a->exited = true;
	drain(a);
	close_pipe(a);
	if (!c) {
		free(a);
		return;
	}
	c->attempt = NULL;
	if (a->timed_out) {
		quoted_command(cmd, sizeof(cmd), c->spec->argv);
		snprintf(msg, sizeof(msg), "command %s timed out", cmd);
		free(a);
		kt_probe_attempt_done(c, KT_PROBE_FAILURE, false, msg, strlen(msg));
		return;
	}
	r = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? KT_PROBE_SUCCESS : KT_PROBE_FAILURE;
	KT_V(6, "probe command ended", "pid=%d status=%d", (int)pid, status);
	kt_probe_attempt_done(c, r, false, a->out, a->len);
	free(a);
}

static void on_timeout(struct kt_loop *loop, void *arg)
{
	struct exec_attempt *a = arg;

	a->timer = NULL;
	a->timed_out = true;
	/* the whole group: a shell's children die with it */
	kill(-a->pid, SIGKILL);
}

static int spawn(struct exec_attempt *a, char *const *argv, int wfd)
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
	posix_spawn_file_actions_adddup2(&fa, wfd, 1);
	posix_spawn_file_actions_adddup2(&fa, wfd, 2);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
					       POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawnp(&a->pid, argv[0], &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

int kt_probe_exec_start(struct kt_probe_call *c, struct kt_err *err)
{
	struct exec_attempt *a = calloc(1, sizeof(*a));
	int p[2] = { -1, -1 }, e;

	if (!a)
		return kt_error(err, "out of memory");
	a->c = c;
	a->loop = c->loop;
	a->fd = -1;
	if (pipe2(p, O_CLOEXEC) < 0) {
		kt_error(err, "cannot make a pipe: %s", strerror(errno));
		free(a);
		return -1;
	}
	a->fd = p[0];
	fcntl(a->fd, F_SETFL, O_NONBLOCK);
	e = spawn(a, c->spec->argv, p[1]);
	close(p[1]);
	if (e != 0) {
		close(a->fd);
		free(a);
		if (e == ENOENT && !strchr(c->spec->argv[0], '/'))
			return kt_error(err, "exec: \"%s\": executable file not found in $PATH",
					c->spec->argv[0]);
		return kt_error(err, "exec: \"%s\": %c%s", c->spec->argv[0],
				tolower((unsigned char)strerror(e)[0]), strerror(e) + 1);
	}
	KT_V(6, "probe command started", "pid=%d argv0=\"%s\"", (int)a->pid, c->spec->argv[0]);
	c->attempt = a;
	/* from here the child is watched whatever else fails, so it is always reaped */
	if (kt_loop_watch_child(c->loop, a->pid, on_exit_status, a, err) < 0) {
		kill(-a->pid, SIGKILL);
		waitpid(a->pid, NULL, 0);
		close(a->fd);
		c->attempt = NULL;
		free(a);
		return -1;
	}
	a->timer = kt_timer_add(c->loop, c->timeout_ms, on_timeout, a);
	if (!a->timer || kt_loop_watch_fd(c->loop, a->fd, KT_LOOP_READ, on_output, a, err) < 0)
		on_timeout(c->loop, a);
	return 0;
}

void kt_probe_exec_cancel(struct kt_probe_call *c)
{
	struct exec_attempt *a = c->attempt;

	if (!a)
		return;
	if (a->timer)
		kt_timer_cancel(c->loop, a->timer);
	a->timer = NULL;
	close_pipe(a);
	kill(-a->pid, SIGKILL);
	a->c = NULL;
	c->attempt = NULL;
}
