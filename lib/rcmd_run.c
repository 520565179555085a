/* SPDX-License-Identifier: Apache-2.0 */
/* rcmd_run: an exec, attach or port-forward session on kubelet-serve's loop:
 * the connection taken from evhttp after its 101, the provider's process
 * with pipes or a terminal, its end (see rcmd.h) */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>

#include "core.h"
#include "kt_err.h"
#include "log.h"
#include "rcmd.h"
#include "rcmd_run.h"
#include "tls.h"

extern char **environ;

#define OUT_HIGH   (256 * 1024) /* the process is not read while this much waits for the client */
#define IN_HIGH	   (256 * 1024) /* the client is not read while this much waits for the process */
#define READ_CHUNK (32 * 1024)
/* SPDY output is read straight behind a frame head into the connection's
 * buffer: a read of this much with its head fits a chunk of 64 KiB, which
 * the allocator keeps on its heap (larger ones may each be a map and an
 * unmap) */
#define DIRECT_READ (64 * 1024 - 256)
#define GATHER	    (256 * 1024) /* TLS records gathered for one write to the socket */
#define MAX_PROCS   16
#define ERR_MAX	    4096 /* a port-forward's stderr kept for its error stream */

struct proc {
	struct kt_rcmd_run *run;
	uint32_t key; /* exec, attach: 0; port-forward: the data stream */
	pid_t pid;
	int pidfd;
	struct event *exit_ev;
	int in_fd;	     /* to the process; -1 none */
	struct event *in_ev; /* writable */
	struct kt_sb in;     /* waiting to be written */
	bool in_end;	     /* close in_fd once in is written */
	int out_fd[3];	     /* [1] stdout, [2] stderr; -1 none or ended */
	struct event *out_ev[3];
	bool out_shared; /* out_fd[1] is in_fd (a terminal, a socket) */
	bool exited;
	int code;
	struct kt_sb err; /* port-forward: its stderr */
};

struct kt_rcmd_run {
	struct kt_rcmd_run_opts o;
	char *argv_copy;
	char uid[128], container[128];
	struct event_base *base;
	struct evhttp_connection *evcon;
	struct bufferevent *bev;
	void *tls;		/* the connection's TLS, its records gathered; NULL none */
	struct event *flush_ev; /* the socket writable again for what is gathered */
	struct kt_rcmd *r;
	struct proc procs[MAX_PROCS];
	int nprocs;
	bool started, closing, gone;
	struct kt_sb early;  /* input that came before the process started */
	bool early_end;	     /* and its end */
	struct winsize size; /* the last terminal size; ws_col 0: none */
	struct event *create_ev, *idle_ev;
	kt_rcmd_run_done done;
	void *done_arg;
};

static void pump(struct kt_rcmd_run *x);
static void finish(struct kt_rcmd_run *x);

/* ----------------------------------------------------------------- process */

static void proc_close_out(struct proc *p, int i)
{
	if (p->out_ev[i]) {
		event_free(p->out_ev[i]);
		p->out_ev[i] = NULL;
	}
	if (p->out_fd[i] >= 0 && !(p->out_shared && i == 1 && p->in_fd == p->out_fd[i]))
		close(p->out_fd[i]);
	p->out_fd[i] = -1;
}

static void proc_close_in(struct proc *p)
{
	if (p->in_ev) {
		event_free(p->in_ev);
		p->in_ev = NULL;
	}
	if (p->in_fd >= 0 && !(p->out_shared && p->out_fd[1] == p->in_fd))
		close(p->in_fd);
	p->in_fd = -1;
}

/* the process and what it holds: killed (its group) and reaped when it runs */
static void proc_release(struct proc *p)
{
	if (p->pid > 0 && !p->exited) {
		kill(-p->pid, SIGKILL);
		kill(p->pid, SIGKILL);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		p->exited = true;
	}
	if (p->exit_ev)
		event_free(p->exit_ev);
	p->exit_ev = NULL;
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	proc_close_in(p);
	for (int i = 1; i < 3; i++)
		proc_close_out(p, i);
	if (p->out_shared && p->out_fd[1] >= 0)
		close(p->out_fd[1]);
	p->out_fd[1] = -1;
	kt_sb_release(&p->in);
	kt_sb_release(&p->err);
}

static void on_exit_ev(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	int st;

	(void)fd;
	(void)what;
	if (waitpid(p->pid, &st, WNOHANG) != p->pid)
		return;
	p->exited = true;
	p->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	event_del(p->exit_ev);
	KT_V(2, "process ended", "pid=%d code=%d", (int)p->pid, p->code);
	pump(p->run);
}

static void touch(struct kt_rcmd_run *x)
{
	struct timeval t = { x->o.idle_timeout_ms / 1000, (x->o.idle_timeout_ms % 1000) * 1000 };

	if (x->o.idle_timeout_ms > 0)
		evtimer_add(x->idle_ev, &t);
}

/* SPDY: the process's output read straight into the connection's buffer,
 * each read behind the head of its DATA frame, reads following one another
 * while the window, the buffer and the process's data allow: no copy on the
 * way and one wake for many reads.  What was read; else what read said, with
 * its errno */
static ssize_t out_direct(struct kt_rcmd_run *x, int fd, uint32_t key)
{
	struct evbuffer *ob = bufferevent_get_output(x->bev);
	struct kt_sb held = { 0 };
	ssize_t total = 0, n;

	/* the frames rcmd holds go before */
	kt_rcmd_out(x->r, &held);
	if (held.len)
		bufferevent_write(x->bev, held.buf, held.len);
	kt_sb_release(&held);
	while (evbuffer_get_length(ob) < OUT_HIGH) {
		size_t room = kt_rcmd_room(x->r, key);
		struct evbuffer_iovec v;

		if (room > DIRECT_READ)
			room = DIRECT_READ;
		if (room == 0)
			break;
		if (evbuffer_reserve_space(ob, (ev_ssize_t)(KT_RCMD_DATA_HEAD + room), &v, 1) < 1) {
			errno = ENOMEM;
			return total ? total : -1;
		}
		n = read(fd, (char *)v.iov_base + KT_RCMD_DATA_HEAD, room);
		if (n <= 0)
			return total ? total : n; /* the end or the error: next time */
		kt_rcmd_data_head(x->r, key, (size_t)n, v.iov_base);
		v.iov_len = KT_RCMD_DATA_HEAD + (size_t)n;
		evbuffer_commit_space(ob, &v, 1);
		total += n;
		if ((size_t)n < room)
			break; /* all there was */
	}
	if (total == 0)
		errno = EAGAIN; /* no room: the next wake, with room */
	return total ? total : -1;
}

static void on_out(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	struct kt_rcmd_run *x = p->run;
	char buf[READ_CHUNK];
	int i = fd == p->out_fd[1] ? 1 : 2;
	uint32_t key = x->o.r.kind == KT_RCMD_PORTFORWARD ? p->key : (uint32_t)i;
	size_t room;
	ssize_t n;
	bool direct;

	(void)what;
	/* a port-forward's stderr is kept for its error stream */
	room = x->o.r.kind == KT_RCMD_PORTFORWARD && i == 2 ? sizeof(buf) : kt_rcmd_room(x->r, key);
	if (room == 0) {
		event_del(p->out_ev[i]);
		return;
	}
	direct =
	    x->o.r.up.transport == KT_CHAN_SPDY && !(x->o.r.kind == KT_RCMD_PORTFORWARD && i == 2);
	if (direct)
		n = out_direct(x, fd, key);
	else
		n = read(fd, buf, room < sizeof(buf) ? room : sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* the end (a terminal's is EIO once its last holder is gone) */
		if (p->out_shared && i == 1) {
			event_free(p->out_ev[1]);
			p->out_ev[1] = NULL;
			p->out_fd[1] = -1;
			if (p->in_fd < 0)
				close(fd);
		} else {
			proc_close_out(p, i);
		}
		/* a port-forward's data stream ends with the pod's side of the
		 * connection, as the kubelet's ends with the runtime's copy; the
		 * client's side may still be sending */
		if (x->o.r.kind != KT_RCMD_PORTFORWARD || i == 1)
			kt_rcmd_end(x->r, key);
		pump(x);
		return;
	}
	touch(x);
	if (direct) {
		/* in the connection's buffer already */
	} else if (x->o.r.kind == KT_RCMD_PORTFORWARD && i == 2) {
		if (p->err.len < ERR_MAX)
			kt_sb_put(&p->err, buf, (size_t)n);
	} else {
		kt_rcmd_write(x->r, key, buf, (size_t)n);
	}
	pump(x);
}

static void on_in(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	ssize_t n;

	(void)what;
	if (p->in.len) {
		n = write(fd, p->in.buf, p->in.len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			/* the process closed its input: what comes is dropped */
			kt_sb_trunc(&p->in, 0);
			p->in_end = true;
		} else {
			kt_rcmd_consumed(p->run->r, p->key, (size_t)n);
			memmove(p->in.buf, p->in.buf + n, p->in.len - (size_t)n);
			kt_sb_trunc(&p->in, p->in.len - (size_t)n);
		}
	}
	if (!p->in.len && p->in_end && p->in_fd >= 0) {
		if (p->out_shared && p->run->o.r.tty) {
			/* a terminal's end of input is its EOF character */
			if (write(fd, "\x04", 1) < 0)
				KT_V(2, "end of input not written", "err=\"%s\"", strerror(errno));
			event_free(p->in_ev);
			p->in_ev = NULL;
			p->in_fd = -1;
		} else if (p->out_shared) {
			shutdown(fd, SHUT_WR);
			event_free(p->in_ev);
			p->in_ev = NULL;
			p->in_fd = -1;
		} else {
			proc_close_in(p);
		}
	}
	pump(p->run);
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* the environment with KT_STATE_DIR set; NULL when out of memory */
static char **child_env(const char *state_dir, char **kept)
{
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "KT_STATE_DIR=", 13) != 0)
			env[j++] = environ[i];
	if (asprintf(kept, "KT_STATE_DIR=%s", state_dir) < 0) {
		free(env);
		return NULL;
	}
	env[j++] = *kept;
	env[j] = NULL;
	return env;
}

/* starts argv in a session of its own (its process group killed as one) with
 * fds 0, 1, 2 (-1: /dev/null), or with tty the terminal of that name on all
 * three: opened after the new session begins and without O_NOCTTY, it becomes
 * the session's controlling terminal */
static pid_t start(char *const argv[], char **env, const int fds[3], const char *tty)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t def;
	pid_t pid = -1;
	int rc;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	if (posix_spawnattr_init(&at) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	/* kubelet-serve ignores SIGPIPE; the program gets the default */
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	rc = posix_spawnattr_setsigdefault(&at, &def);
	if (!rc)
		rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF);
	for (int i = 0; i < 3 && !rc; i++) {
		if (tty && i == 0)
			rc = posix_spawn_file_actions_addopen(&fa, 0, tty, O_RDWR, 0);
		else if (tty)
			rc = posix_spawn_file_actions_adddup2(&fa, 0, i);
		else if (fds[i] >= 0)
			rc = posix_spawn_file_actions_adddup2(&fa, fds[i], i);
		else
			rc = posix_spawn_file_actions_addopen(&fa, i, "/dev/null", O_RDWR, 0);
	}
	/* nothing else of the server's (its log file is not close-on-exec) */
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (!rc)
		rc = posix_spawn(&pid, argv[0], &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc) {
		errno = rc;
		return -1;
	}
	return pid;
}

/* starts the provider's program for p: exec, attach or port-forward */
static int proc_start(struct kt_rcmd_run *x, struct proc *p, unsigned port, struct kt_err *err)
{
	char path[4096], portstr[16], *kept = NULL, **env = NULL;
	const char *args[KT_SERVE_RUN_ARGS + 8];
	int child[3] = { -1, -1, -1 }, pair[2] = { -1, -1 }, pipes[3][2];
	size_t na = 0;
	const char *w = x->o.argv;
	bool tty = x->o.r.tty && x->o.r.kind != KT_RCMD_PORTFORWARD;
	int rc = -1, master = -1;
	char name[128] = "";

	for (int i = 0; i < 3; i++)
		pipes[i][0] = pipes[i][1] = -1;
	p->run = x;
	p->pidfd = p->in_fd = -1;
	p->out_fd[0] = p->out_fd[1] = p->out_fd[2] = -1;
	snprintf(path, sizeof(path), "%s/%s", x->o.provider,
		 x->o.r.kind == KT_RCMD_EXEC	 ? "exec"
		 : x->o.r.kind == KT_RCMD_ATTACH ? "attach"
						 : "port-forward");
	args[na++] = path;
	args[na++] = x->o.uid;
	if (x->o.r.kind == KT_RCMD_PORTFORWARD) {
		snprintf(portstr, sizeof(portstr), "%u", port);
		args[na++] = portstr;
	} else {
		args[na++] = x->o.container;
	}
	if (x->o.r.kind == KT_RCMD_EXEC) {
		args[na++] = "--";
		for (size_t i = 0; i < x->o.argc && na < KT_SERVE_RUN_ARGS; i++) {
			args[na++] = w;
			w += strlen(w) + 1;
		}
	}
	args[na] = NULL;
	env = child_env(x->o.state_dir, &kept);
	if (!env) {
		kt_error(err, "out of memory");
		goto out;
	}
	if (x->o.r.kind == KT_RCMD_PORTFORWARD) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0 ||
		    pipe2(pipes[2], O_CLOEXEC) < 0)
			goto sys;
		child[0] = child[1] = pair[1];
		child[2] = pipes[2][1];
		p->in_fd = p->out_fd[1] = pair[0];
		p->out_shared = true;
		p->out_fd[2] = pipes[2][0];
		pair[0] = pipes[2][0] = -1;
	} else if (tty) {
		int slave;

		master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
		    ptsname_r(master, name, sizeof(name)) != 0)
			goto sys;
		slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (slave < 0)
			goto sys;
		if (x->size.ws_col)
			ioctl(master, TIOCSWINSZ, &x->size);
		child[0] = child[1] = child[2] = slave;
		pair[1] = slave; /* closed below, with the other child ends */
		p->in_fd = x->o.r.in ? master : -1;
		p->out_fd[1] = master;
		p->out_shared = true;
		if (!x->o.r.in)
			p->in_fd = -1;
		master = -1;
	} else {
		for (int i = 0; i < 3; i++) {
			bool want = i == 0 ? x->o.r.in : i == 1 ? x->o.r.out : x->o.r.err;

			if (!want)
				continue;
			if (pipe2(pipes[i], O_CLOEXEC) < 0)
				goto sys;
			child[i] = pipes[i][i == 0 ? 0 : 1];
			if (i == 0)
				p->in_fd = pipes[0][1], pipes[0][1] = -1;
			else
				p->out_fd[i] = pipes[i][0], pipes[i][0] = -1;
		}
	}
	p->pid = start((char *const *)args, env, child, tty ? name : NULL);
	if (p->pid < 0)
		goto sys;
	p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pidfd < 0)
		goto sys;
	p->exit_ev = event_new(x->base, p->pidfd, EV_READ | EV_PERSIST, on_exit_ev, p);
	if (p->in_fd >= 0) {
		nonblock(p->in_fd);
		p->in_ev = event_new(x->base, p->in_fd, EV_WRITE, on_in, p);
	}
	for (int i = 1; i < 3; i++)
		if (p->out_fd[i] >= 0) {
			nonblock(p->out_fd[i]);
			p->out_ev[i] =
			    event_new(x->base, p->out_fd[i], EV_READ | EV_PERSIST, on_out, p);
		}
	if (!p->exit_ev) {
		kt_error(err, "out of memory");
		goto out;
	}
	event_add(p->exit_ev, NULL);
	KT_V(2, "process started", "pid=%d program=\"%s\"", (int)p->pid, path);
	rc = 0;
	goto out;
sys:
	kt_error(err, "cannot start %s: %s", path, strerror(errno));
out:
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			if (pipes[i][j] >= 0 && pipes[i][j] != p->in_fd &&
			    pipes[i][j] != p->out_fd[1] && pipes[i][j] != p->out_fd[2])
				close(pipes[i][j]);
	if (pair[0] >= 0)
		close(pair[0]);
	if (pair[1] >= 0)
		close(pair[1]);
	if (master >= 0)
		close(master);
	free(env);
	free(kept);
	return rc;
}

/* ------------------------------------------------------------ rcmd's calls */

static struct proc *proc_of(struct kt_rcmd_run *x, uint32_t key)
{
	for (int i = 0; i < x->nprocs; i++)
		if (x->procs[i].key == key ||
		    (x->o.r.kind != KT_RCMD_PORTFORWARD && x->procs[i].key == 0))
			return &x->procs[i];
	return NULL;
}

static void cb_input(void *arg, uint32_t key, const unsigned char *data, size_t len)
{
	struct kt_rcmd_run *x = arg;
	struct proc *p = proc_of(x, key);

	if (p && p->in_fd >= 0 && !p->in_end)
		kt_sb_put(&p->in, (const char *)data, len);
	else if (!p && !x->started && x->o.r.kind != KT_RCMD_PORTFORWARD)
		kt_sb_put(&x->early, (const char *)data, len); /* kept for the process */
	else
		kt_rcmd_consumed(x->r, key, len);
}

static void cb_input_end(void *arg, uint32_t key)
{
	struct kt_rcmd_run *x = arg;
	struct proc *p = proc_of(x, key);

	if (p)
		p->in_end = true;
	else if (!x->started)
		x->early_end = true;
}

static void cb_resize(void *arg, unsigned w, unsigned h)
{
	struct kt_rcmd_run *x = arg;
	struct proc *p = proc_of(x, 0);

	x->size = (struct winsize){ .ws_row = (unsigned short)h, .ws_col = (unsigned short)w };
	if (p && p->out_shared && p->out_fd[1] >= 0 && x->o.r.tty)
		ioctl(p->out_fd[1], TIOCSWINSZ, &x->size);
}

static void cb_forward(void *arg, uint32_t key, unsigned port)
{
	struct kt_rcmd_run *x = arg;
	struct kt_err err = { 0 };
	struct proc *p;

	if (x->nprocs == MAX_PROCS) {
		kt_rcmd_forward_error(x->r, key, "too many port-forward streams");
		return;
	}
	p = &x->procs[x->nprocs];
	memset(p, 0, sizeof(*p));
	p->key = key;
	if (proc_start(x, p, port, &err) < 0) {
		proc_release(p);
		kt_rcmd_forward_error(x->r, key, err.msg);
		return;
	}
	x->nprocs++;
}

/* -------------------------------------------------------------- the session */

/* the TLS records gathered go to the socket: false while it is full (a wake
 * comes when it is writable); true once written, or when the connection
 * failed (the bufferevent hears of that) */
static bool flush(struct kt_rcmd_run *x)
{
	if (!x->tls || kt_tls_conn_flush(x->tls) != 0)
		return true;
	event_add(x->flush_ev, NULL);
	return false;
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pump(arg);
}

/* what rcmd has for the client goes out; reads follow the room there is */
static void pump(struct kt_rcmd_run *x)
{
	struct kt_sb out = { 0 };
	struct evbuffer *ob = bufferevent_get_output(x->bev);
	bool all_done = x->started;

	if (x->gone)
		return;
	if (!x->started && !kt_rcmd_done(x->r) && kt_rcmd_ready(x->r) &&
	    x->o.r.kind != KT_RCMD_PORTFORWARD) {
		struct kt_err err = { 0 };
		struct proc *p = &x->procs[0];

		x->started = true;
		if (x->create_ev)
			event_del(x->create_ev);
		memset(p, 0, sizeof(*p));
		if (proc_start(x, p, 0, &err) < 0) {
			proc_release(p);
			kt_rcmd_exit(x->r, -1, err.msg);
		} else {
			x->nprocs = 1;
			/* what came first: the input, its end, the terminal's size */
			if (p->in_fd >= 0)
				kt_sb_put(&p->in, x->early.buf ? x->early.buf : "", x->early.len);
			else
				kt_rcmd_consumed(x->r, KT_CHAN_STDIN, x->early.len);
			p->in_end = x->early_end;
			kt_sb_release(&x->early);
		}
		all_done = false;
	} else if (!x->started && x->o.r.kind == KT_RCMD_PORTFORWARD) {
		x->started = true;
		if (x->create_ev)
			event_del(x->create_ev);
	}
	for (int i = 0; i < x->nprocs; i++) {
		struct proc *p = &x->procs[i];
		uint32_t key = x->o.r.kind == KT_RCMD_PORTFORWARD ? p->key : 1;
		bool out_open = false;

		if (p->in_ev && (p->in.len || p->in_end))
			event_add(p->in_ev, NULL);
		for (int j = 1; j < 3; j++) {
			bool may;

			if (!p->out_ev[j])
				continue;
			out_open = true;
			may = evbuffer_get_length(ob) < OUT_HIGH &&
			      (x->o.r.kind == KT_RCMD_PORTFORWARD && j == 2
				   ? true
				   : kt_rcmd_room(x->r, x->o.r.kind == KT_RCMD_PORTFORWARD
							    ? key
							    : (uint32_t)j) > 0);
			if (may)
				event_add(p->out_ev[j], NULL);
			else
				event_del(p->out_ev[j]);
		}
		if (p->exited && !out_open) {
			if (x->o.r.kind == KT_RCMD_PORTFORWARD) {
				if (p->pid > 0) {
					kt_sb_put(&p->err, "", 0);
					kt_rcmd_forward_error(x->r, p->key,
							      p->code ? kt_sb_str(&p->err) : "");
					p->pid = 0;
					proc_release(p);
				}
			} else if (p->pid > 0) {
				kt_rcmd_exit(x->r, p->code, NULL);
				p->pid = 0;
				proc_release(p);
			}
		} else {
			all_done = false;
		}
	}
	(void)all_done;
	kt_rcmd_out(x->r, &out);
	if (out.len) {
		bufferevent_write(x->bev, out.buf, out.len);
		touch(x);
	}
	kt_sb_release(&out);
	/* the client's input waits while the process has much to take */
	{
		size_t pending = 0;

		for (int i = 0; i < x->nprocs; i++)
			pending += x->procs[i].in.len;
		if (pending > IN_HIGH && !x->closing)
			bufferevent_disable(x->bev, EV_READ);
		else if (!x->closing)
			bufferevent_enable(x->bev, EV_READ);
	}
	if (kt_rcmd_done(x->r) && !x->closing) {
		x->closing = true;
		if (*kt_rcmd_why(x->r))
			KT_V(1, "stream session ended", "why=\"%s\"", kt_rcmd_why(x->r));
		/* a protocol error or the client's end: the processes go now */
		for (int i = 0; i < x->nprocs; i++)
			proc_release(&x->procs[i]);
		/* what the client still sends is read and dropped: a close with
		 * unread input would be a reset, which can lose the end we send */
		bufferevent_enable(x->bev, EV_READ);
	}
	/* whatever was written in this turn leaves now, as it always did */
	if (!flush(x))
		return;
	if (x->closing && evbuffer_get_length(ob) == 0)
		finish(x);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct kt_rcmd_run *x = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n;

	if (x->closing) {
		/* not activity: a client that only sends still meets the timeout */
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	touch(x);
	while ((n = evbuffer_get_length(in)) > 0 && !x->closing) {
		struct evbuffer_iovec v;

		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		kt_rcmd_feed(x->r, v.iov_base, v.iov_len);
		evbuffer_drain(in, v.iov_len);
		if (kt_rcmd_done(x->r))
			break;
	}
	pump(x);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pump(arg);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct kt_rcmd_run *x = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
		KT_V(2, "stream client gone", "%s", "");
		finish(x);
	}
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct kt_rcmd_run *x = arg;

	(void)fd;
	(void)what;
	KT_V(1, "stream session timed out", "why=\"%s\"",
	     x->started ? "idle" : "the streams were not all created");
	finish(x);
}

/* the end: every process killed and reaped, every fd closed, the connection
 * freed; the owner hears of it and frees x */
static void finish(struct kt_rcmd_run *x)
{
	if (x->gone)
		return;
	x->gone = true;
	KT_V(2, "stream session closed", "%s", "");
	for (int i = 0; i < x->nprocs; i++)
		proc_release(&x->procs[i]);
	x->nprocs = 0;
	if (x->flush_ev)
		event_del(x->flush_ev);
	x->tls = NULL;
	if (x->evcon) {
		evhttp_connection_free(x->evcon);
		x->evcon = NULL;
		x->bev = NULL;
	}
	if (x->done)
		x->done(x->done_arg, x);
}

struct kt_rcmd_run *kt_rcmd_run_start(struct event_base *base, struct evhttp_connection *evcon,
				      const struct kt_rcmd_run_opts *o, kt_rcmd_run_done done,
				      void *done_arg, struct kt_err *err)
{
	struct kt_rcmd_run *x = calloc(1, sizeof(*x));
	static const struct kt_rcmd_cb cb = { .input = cb_input,
					      .input_end = cb_input_end,
					      .resize = cb_resize,
					      .forward = cb_forward };
	struct timeval t = { o->create_timeout_ms / 1000, (o->create_timeout_ms % 1000) * 1000 };

	if (!x) {
		kt_error(err, "out of memory");
		return NULL;
	}
	x->o = *o;
	x->argv_copy = malloc(KT_SERVE_RUN_ARGV_MAX);
	if (x->argv_copy) {
		memcpy(x->argv_copy, o->argv ? o->argv : "", o->argv ? KT_SERVE_RUN_ARGV_MAX : 1);
		x->o.argv = x->argv_copy;
	}
	snprintf(x->uid, sizeof(x->uid), "%s", o->uid ? o->uid : "");
	snprintf(x->container, sizeof(x->container), "%s", o->container ? o->container : "");
	x->o.uid = x->uid;
	x->o.container = x->container;
	x->base = base;
	x->bev = evhttp_connection_get_bufferevent(evcon);
	x->done = done;
	x->done_arg = done_arg;
	x->r = kt_rcmd_new(&o->r, &cb, x);
	x->create_ev = evtimer_new(base, on_timeout, x);
	x->idle_ev = evtimer_new(base, on_timeout, x);
	if (!x->r || !x->create_ev || !x->idle_ev || !x->argv_copy) {
		kt_error(err, "out of memory");
		kt_rcmd_run_free(x);
		return NULL;
	}
	x->evcon = evcon;
	/* a session is small frames both ways (a stream's reply, a keystroke, a
	 * line of output): each goes out at once, as from Go's servers, whose
	 * connections all have it, not after the peer's delayed ACK */
	{
		int one = 1;

		setsockopt(bufferevent_getfd(x->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	/* a session's data is many TLS records in a row: gathered, they go
	 * many a write (each turn of the loop ends with what it wrote sent) */
	x->tls = bufferevent_openssl_get_ssl(x->bev);
	if (x->tls)
		x->flush_ev = event_new(base, bufferevent_getfd(x->bev), EV_WRITE, on_flush, x);
	if (!x->flush_ev || kt_tls_conn_gather(x->tls, GATHER) < 0)
		x->tls = NULL; /* records written one by one, as before */
	bufferevent_set_timeouts(x->bev, NULL, NULL);
	bufferevent_setwatermark(x->bev, EV_WRITE, OUT_HIGH / 4, 0);
	bufferevent_setcb(x->bev, on_read, on_write, on_event, x);
	bufferevent_enable(x->bev, EV_READ | EV_WRITE);
	if (o->create_timeout_ms > 0)
		evtimer_add(x->create_ev, &t);
	touch(x);
	/* what the client sent right after its request is read from the loop,
	 * once evhttp's callback is over */
	bufferevent_trigger(x->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	return x;
}

void kt_rcmd_run_free(struct kt_rcmd_run *x)
{
	if (!x)
		return;
	for (int i = 0; i < x->nprocs; i++)
		proc_release(&x->procs[i]);
	if (x->evcon)
		evhttp_connection_free(x->evcon);
	if (x->create_ev)
		event_free(x->create_ev);
	if (x->idle_ev)
		event_free(x->idle_ev);
	if (x->flush_ev)
		event_free(x->flush_ev);
	kt_rcmd_free(x->r);
	kt_sb_release(&x->early);
	free(x->argv_copy);
	free(x);
}
