/* SPDX-License-Identifier: Apache-2.0 */
/* loop: the one event loop: fds on epoll, timers, libcurl multi, children, signals */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "api.h"
#include "kt_err.h"
#include "loop.h"
#include "timeutil.h"

#define LOOP_MAX_EVENTS 128
#define LOOP_NSIG 65

struct kt_timer {
	int64_t when;
	uint64_t seq;  /* ties fire in the order they were added */
	size_t idx;    /* position in the heap */
	bool internal; /* the loop's own (curl's timeout) */
	kt_timer_fn *fn;
	void *arg;
};

struct watch {
	bool used;
	bool internal; /* a curl socket, not counted as the user's */
	uint32_t gen;
	unsigned events;
	kt_fd_fn *fn;
	void *arg;
};

struct transfer {
	CURL *easy;
	kt_curl_fn *fn;
	void *arg;
	struct transfer *prev, *next;
};

struct child {
	pid_t pid;
	bool exited; /* reaped before the callback could run */
	int status;
	kt_child_fn *fn;
	void *arg;
	struct child *next;
};

struct kt_loop {
	int epfd;
	int sigfd;
	int64_t now;
	bool stopped;
	bool running;

	struct kt_timer **heap;
	size_t nheap, capheap;
	uint64_t seq;
	size_t user_timers;

	struct watch *fds;
	size_t nfds;
	size_t user_fds;
	uint32_t gen;

	CURLM *multi;
	struct kt_timer *curl_timer;
	size_t transfers;
	struct transfer *xfers; /* every transfer running, for kt_loop_free */
	CURL **spare;		/* easy handles kept for the next transfers */
	size_t nspare, capspare;

	struct child *children;
	size_t nchildren;
	struct kt_timer *reap_timer;

	sigset_t sigs;	  /* the signals read through sigfd */
	sigset_t oldmask; /* the mask before the loop blocked any */
	bool masked;
	kt_signal_fn *sigfn[LOOP_NSIG];
	void *sigarg[LOOP_NSIG];
};

/* ------------------------------------------------------------------ timers */

static bool timer_before(const struct kt_timer *a, const struct kt_timer *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void heap_set(struct kt_loop *loop, size_t i, struct kt_timer *t)
{
	loop->heap[i] = t;
	t->idx = i;
}

static void heap_up(struct kt_loop *loop, size_t i)
{
	struct kt_timer *t = loop->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!timer_before(t, loop->heap[parent]))
			break;
		heap_set(loop, i, loop->heap[parent]);
		i = parent;
	}
	heap_set(loop, i, t);
}

static void heap_down(struct kt_loop *loop, size_t i)
{
	struct kt_timer *t = loop->heap[i];

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct kt_timer *best = t;

		if (l < loop->nheap && timer_before(loop->heap[l], best)) {
			m = l;
			best = loop->heap[l];
		}
		if (r < loop->nheap && timer_before(loop->heap[r], best))
			m = r;
		if (m == i)
			break;
		heap_set(loop, i, loop->heap[m]);
		i = m;
	}
	heap_set(loop, i, t);
}

static void heap_remove(struct kt_loop *loop, struct kt_timer *t)
{
	size_t i = t->idx;
	struct kt_timer *last = loop->heap[--loop->nheap];

	if (i == loop->nheap)
		return;
	heap_set(loop, i, last);
	heap_up(loop, i);
	heap_down(loop, last->idx);
}

static struct kt_timer *timer_add(struct kt_loop *loop, int64_t delay_ms, kt_timer_fn *fn,
				  void *arg, bool internal)
{
	struct kt_timer *t;

	if (loop->nheap == loop->capheap) {
		size_t cap = loop->capheap ? loop->capheap * 2 : 64;
		struct kt_timer **nh = realloc(loop->heap, cap * sizeof(*nh));

		if (!nh)
			return NULL;
		loop->heap = nh;
		loop->capheap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (!loop->running)
		loop->now = kt_mono_ms();
	t->when = loop->now + (delay_ms > 0 ? delay_ms : 0);
	t->seq = loop->seq++;
	t->internal = internal;
	t->fn = fn;
	t->arg = arg;
	loop->heap[loop->nheap] = t;
	t->idx = loop->nheap++;
	heap_up(loop, t->idx);
	if (!internal)
		loop->user_timers++;
	return t;
}

struct kt_timer *kt_timer_add(struct kt_loop *loop, int64_t delay_ms, kt_timer_fn *fn,
			      void *arg)
{
	return timer_add(loop, delay_ms, fn, arg, false);
}

void kt_timer_cancel(struct kt_loop *loop, struct kt_timer *t)
{
	if (!t)
		return;
	heap_remove(loop, t);
	if (!t->internal)
		loop->user_timers--;
	free(t);
}

/* runs the timers due now, but not those added while running them */
static void run_timers(struct kt_loop *loop)
{
	uint64_t limit = loop->seq;

	while (loop->nheap && !loop->stopped) {
		struct kt_timer *t = loop->heap[0];
		kt_timer_fn *fn = t->fn;
		void *arg = t->arg;

		if (t->when > loop->now || t->seq >= limit)
			break;
		kt_timer_cancel(loop, t);
		fn(loop, arg);
	}
}

/* --------------------------------------------------------------------- fds */

static int fd_slot(struct kt_loop *loop, int fd, struct kt_err *err)
{
	if (fd < 0)
		return kt_error(err, "cannot watch fd %d", fd);
	if ((size_t)fd >= loop->nfds) {
		size_t n = loop->nfds ? loop->nfds : 64;
		struct watch *nw;

		while (n <= (size_t)fd)
			n *= 2;
		nw = realloc(loop->fds, n * sizeof(*nw));
		if (!nw)
			return kt_error(err, "out of memory");
		memset(nw + loop->nfds, 0, (n - loop->nfds) * sizeof(*nw));
		loop->fds = nw;
		loop->nfds = n;
	}
	return 0;
}

static int watch_fd(struct kt_loop *loop, int fd, unsigned events, kt_fd_fn *fn,
		    void *arg, bool internal, struct kt_err *err)
{
	struct epoll_event ev = { 0 };
	struct watch *w;
	int op;

	if (fd_slot(loop, fd, err) < 0)
		return -1;
	w = &loop->fds[fd];
	op = w->used ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (events & KT_LOOP_READ)
		ev.events |= EPOLLIN;
	if (events & KT_LOOP_WRITE)
		ev.events |= EPOLLOUT;
	if (!w->used)
		w->gen = ++loop->gen;
	ev.data.u64 = (uint64_t)w->gen << 32 | (uint32_t)fd;
	/* a watched fd closed without an unwatch left epoll by itself: add it anew */
	if (epoll_ctl(loop->epfd, op, fd, &ev) < 0 &&
	    (op != EPOLL_CTL_MOD || errno != ENOENT ||
	     epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0))
		return kt_error(err, "cannot watch fd %d: %s", fd, strerror(errno));
	if (w->used && !w->internal)
		loop->user_fds--;
	w->used = true;
	w->internal = internal;
	w->events = events;
	w->fn = fn;
	w->arg = arg;
	if (!internal)
		loop->user_fds++;
	return 0;
}

int kt_loop_watch_fd(struct kt_loop *loop, int fd, unsigned events, kt_fd_fn *fn,
		     void *arg, struct kt_err *err)
{
	return watch_fd(loop, fd, events, fn, arg, false, err);
}

void kt_loop_unwatch_fd(struct kt_loop *loop, int fd)
{
	struct watch *w;

	if (fd < 0 || (size_t)fd >= loop->nfds || !loop->fds[fd].used)
		return;
	w = &loop->fds[fd];
	/* the fd may be closed already; the kernel then dropped it itself */
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (!w->internal)
		loop->user_fds--;
	memset(w, 0, sizeof(*w));
}

static void dispatch_fd(struct kt_loop *loop, const struct epoll_event *ev)
{
	int fd = (int)(uint32_t)ev->data.u64;
	uint32_t gen = (uint32_t)(ev->data.u64 >> 32);
	unsigned events = 0;
	struct watch *w;

	if ((size_t)fd >= loop->nfds)
		return;
	w = &loop->fds[fd];
	if (!w->used || w->gen != gen)
		return; /* unwatched by an earlier callback of this round */
	if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		events |= KT_LOOP_READ;
	if (ev->events & (EPOLLOUT | EPOLLERR))
		events |= KT_LOOP_WRITE;
	/* a hang-up or an error is news to whichever way the fd is watched */
	events = (events & w->events) ? (events & w->events) : w->events;
	w->fn(loop, fd, events, w->arg);
}

/* -------------------------------------------------------------------- curl */

static void xfer_unlink(struct kt_loop *loop, struct transfer *tr)
{
	if (tr->prev)
		tr->prev->next = tr->next;
	else
		loop->xfers = tr->next;
	if (tr->next)
		tr->next->prev = tr->prev;
	loop->transfers--;
}

static void curl_check_done(struct kt_loop *loop)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(loop->multi, &left))) {
		struct transfer *tr = NULL;
		CURL *easy = msg->easy_handle;
		CURLcode rc = msg->data.result;
		kt_curl_fn *fn;
		void *arg;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&tr);
		curl_multi_remove_handle(loop->multi, easy);
		if (!tr)
			continue;
		fn = tr->fn;
		arg = tr->arg;
		xfer_unlink(loop, tr);
		free(tr);
		curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
		fn(loop, easy, rc, arg);
	}
}

static void on_curl_timer(struct kt_loop *loop, void *arg)
{
	int running;

	loop->curl_timer = NULL;
	curl_multi_socket_action(loop->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	curl_check_done(loop);
}

static void on_curl_fd(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	int running, flags = 0;

	if (events & KT_LOOP_READ)
		flags |= CURL_CSELECT_IN;
	if (events & KT_LOOP_WRITE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(loop->multi, fd, flags, &running);
	curl_check_done(loop);
}

static int curl_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp,
			  void *socketp)
{
	struct kt_loop *loop = userp;
	unsigned events = 0;

	if (what == CURL_POLL_REMOVE) {
		kt_loop_unwatch_fd(loop, s);
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= KT_LOOP_READ;
	if (what & CURL_POLL_OUT)
		events |= KT_LOOP_WRITE;
	return watch_fd(loop, s, events, on_curl_fd, NULL, true, NULL) < 0 ? -1 : 0;
}

static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct kt_loop *loop = userp;

	if (loop->curl_timer) {
		kt_timer_cancel(loop, loop->curl_timer);
		loop->curl_timer = NULL;
	}
	if (timeout_ms < 0)
		return 0;
	loop->curl_timer = timer_add(loop, timeout_ms, on_curl_timer, NULL, true);
	return loop->curl_timer ? 0 : -1;
}

int kt_loop_add_curl(struct kt_loop *loop, CURL *easy, kt_curl_fn *fn, void *arg,
		     struct kt_err *err)
{
	struct transfer *tr = calloc(1, sizeof(*tr));
	CURLMcode mc;

	if (!tr)
		return kt_error(err, "out of memory");
	tr->easy = easy;
	tr->fn = fn;
	tr->arg = arg;
	curl_easy_setopt(easy, CURLOPT_PRIVATE, tr);
	mc = curl_multi_add_handle(loop->multi, easy);
	if (mc != CURLM_OK) {
		curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
		free(tr);
		return kt_error(err, "cannot start a transfer: %s",
				curl_multi_strerror(mc));
	}
	tr->next = loop->xfers;
	if (loop->xfers)
		loop->xfers->prev = tr;
	loop->xfers = tr;
	loop->transfers++;
	return 0;
}

void kt_loop_remove_curl(struct kt_loop *loop, CURL *easy)
{
	struct transfer *tr = NULL;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&tr);
	if (!tr)
		return;
	curl_multi_remove_handle(loop->multi, easy);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
	xfer_unlink(loop, tr);
	free(tr);
}

CURLM *kt_loop_multi(struct kt_loop *loop)
{
	return loop->multi;
}

/* ------------------------------------------------------- signals, children */

static int block_signal(struct kt_loop *loop, int signo, struct kt_err *err)
{
	sigset_t one;
	int fd;

	if (sigismember(&loop->sigs, signo) == 1)
		return 0;
	sigemptyset(&one);
	sigaddset(&one, signo);
	if (sigprocmask(SIG_BLOCK, &one, loop->masked ? NULL : &loop->oldmask) < 0)
		return kt_error(err, "cannot block signal %d: %s", signo,
				strerror(errno));
	loop->masked = true;
	sigaddset(&loop->sigs, signo);
	fd = signalfd(loop->sigfd, &loop->sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return kt_error(err, "cannot read signals: %s", strerror(errno));
	loop->sigfd = fd;
	return 0;
}

static void reap_children(struct kt_loop *loop)
{
	struct child **pp = &loop->children;

	while (*pp) {
		struct child *c = *pp;
		int status = 0;
		pid_t r = c->exited ? c->pid : waitpid(c->pid, &status, WNOHANG);

		if (r == c->pid || (r < 0 && errno == ECHILD)) {
			kt_child_fn *fn = c->fn;
			void *arg = c->arg;
			pid_t pid = c->pid;

			if (c->exited)
				status = c->status;
			*pp = c->next;
			free(c);
			loop->nchildren--;
			fn(loop, pid, status, arg);
			/* the list may have changed in fn: start over */
			pp = &loop->children;
			continue;
		}
		pp = &c->next;
	}
}

static void on_reap_timer(struct kt_loop *loop, void *arg)
{
	loop->reap_timer = NULL;
	reap_children(loop);
}

static void on_signalfd(struct kt_loop *loop, int fd, unsigned events, void *arg)
{
	struct signalfd_siginfo si[16];
	ssize_t n;

	for (;;) {
		n = read(fd, si, sizeof(si));
		if (n <= 0)
			break;
		for (size_t i = 0; i < (size_t)n / sizeof(si[0]); i++) {
			int signo = (int)si[i].ssi_signo;

			if (signo == SIGCHLD)
				reap_children(loop);
			if (signo > 0 && signo < LOOP_NSIG && loop->sigfn[signo])
				loop->sigfn[signo](loop, signo, loop->sigarg[signo]);
		}
	}
}

static int signals_ready(struct kt_loop *loop, int signo, struct kt_err *err)
{
	bool first = loop->sigfd < 0;

	if (block_signal(loop, signo, err) < 0)
		return -1;
	if (first &&
	    watch_fd(loop, loop->sigfd, KT_LOOP_READ, on_signalfd, NULL, true, err) < 0)
		return -1;
	return 0;
}

int kt_loop_watch_child(struct kt_loop *loop, pid_t pid, kt_child_fn *fn, void *arg,
			struct kt_err *err)
{
	struct child *c;
	pid_t r;

	if (signals_ready(loop, SIGCHLD, err) < 0)
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return kt_error(err, "out of memory");
	c->pid = pid;
	c->fn = fn;
	c->arg = arg;
	/* it may have exited before SIGCHLD was blocked: look once now */
	r = waitpid(pid, &c->status, WNOHANG);
	if (r < 0 && errno == ECHILD) {
		free(c);
		return kt_error(err, "process %d is not a child of this process",
				(int)pid);
	}
	c->exited = r == pid;
	c->next = loop->children;
	loop->children = c;
	loop->nchildren++;
	if (c->exited && !loop->reap_timer)
		loop->reap_timer = timer_add(loop, 0, on_reap_timer, NULL, true);
	return 0;
}

int kt_loop_on_signal(struct kt_loop *loop, int signo, kt_signal_fn *fn, void *arg,
		      struct kt_err *err)
{
	if (signo <= 0 || signo >= LOOP_NSIG || signo == SIGKILL || signo == SIGSTOP)
		return kt_error(err, "cannot watch signal %d", signo);
	if (signals_ready(loop, signo, err) < 0)
		return -1;
	loop->sigfn[signo] = fn;
	loop->sigarg[signo] = arg;
	return 0;
}

void kt_loop_unwatch_child(struct kt_loop *loop, pid_t pid)
{
	for (struct child **pp = &loop->children; *pp; pp = &(*pp)->next) {
		struct child *c = *pp;

		if (c->pid != pid)
			continue;
		*pp = c->next;
		free(c);
		loop->nchildren--;
		return;
	}
}

void kt_loop_sigmask_reset(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* -------------------------------------------------------------- the loop */

struct kt_loop *kt_loop_new(struct kt_err *err)
{
	struct kt_loop *loop = calloc(1, sizeof(*loop));

	if (!loop) {
		kt_error(err, "out of memory");
		return NULL;
	}
	loop->sigfd = -1;
	sigemptyset(&loop->sigs);
	loop->now = kt_mono_ms();
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		kt_error(err, "cannot make an epoll instance: %s", strerror(errno));
		goto fail;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		kt_error(err, "cannot initialize libcurl%s%s", kt_api_curl_error() ? ": " : "",
			 kt_api_curl_error() ? kt_api_curl_error() : "");
		goto fail;
	}
	loop->multi = curl_multi_init();
	if (!loop->multi) {
		kt_error(err, "cannot make a curl multi handle");
		goto fail;
	}
	curl_multi_setopt(loop->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
	curl_multi_setopt(loop->multi, CURLMOPT_SOCKETDATA, loop);
	curl_multi_setopt(loop->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
	curl_multi_setopt(loop->multi, CURLMOPT_TIMERDATA, loop);
	curl_multi_setopt(loop->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	return loop;
fail:
	kt_loop_free(loop);
	return NULL;
}

CURL *kt_loop_easy_take(struct kt_loop *loop)
{
	return loop->nspare ? loop->spare[--loop->nspare] : curl_easy_init();
}

void kt_loop_easy_give(struct kt_loop *loop, CURL *easy)
{
	CURL **grown;
	size_t cap;

	if (!easy)
		return;
	if (loop->nspare == loop->capspare && loop->capspare < KT_LOOP_SPARE_EASY) {
		cap = loop->capspare ? loop->capspare * 2 : 16;
		grown = realloc(loop->spare, cap * sizeof(*grown));
		if (grown) {
			loop->spare = grown;
			loop->capspare = cap;
		}
	}
	if (loop->nspare == loop->capspare) {
		curl_easy_cleanup(easy);
		return;
	}
	curl_easy_reset(easy);
	loop->spare[loop->nspare++] = easy;
}

void kt_loop_free(struct kt_loop *loop)
{
	if (!loop)
		return;
	if (loop->multi) {
		while (loop->xfers)
			kt_loop_remove_curl(loop, loop->xfers->easy);
		curl_multi_cleanup(loop->multi);
	}
	while (loop->nspare)
		curl_easy_cleanup(loop->spare[--loop->nspare]);
	free(loop->spare);
	while (loop->nheap)
		kt_timer_cancel(loop, loop->heap[0]);
	free(loop->heap);
	while (loop->children) {
		struct child *c = loop->children;

		loop->children = c->next;
		free(c);
	}
	free(loop->fds);
	if (loop->sigfd >= 0)
		close(loop->sigfd);
	if (loop->epfd >= 0)
		close(loop->epfd);
	if (loop->masked)
		sigprocmask(SIG_SETMASK, &loop->oldmask, NULL);
	free(loop);
}

static bool loop_alive(const struct kt_loop *loop)
{
	return loop->user_timers || loop->user_fds || loop->transfers || loop->nchildren;
}

int kt_loop_run(struct kt_loop *loop, struct kt_err *err)
{
	struct epoll_event ev[LOOP_MAX_EVENTS];

	loop->stopped = false;
	loop->running = true;
	loop->now = kt_mono_ms();
	while (!loop->stopped && loop_alive(loop)) {
		int timeout = -1, n;

		if (loop->nheap) {
			int64_t d = loop->heap[0]->when - loop->now;

			timeout = d <= 0 ? 0 : d > 60000 ? 60000 : (int)d;
		}
		n = epoll_wait(loop->epfd, ev, LOOP_MAX_EVENTS, timeout);
		if (n < 0 && errno != EINTR) {
			loop->running = false;
			return kt_error(err, "epoll_wait: %s", strerror(errno));
		}
		loop->now = kt_mono_ms();
		for (int i = 0; i < n && !loop->stopped; i++)
			dispatch_fd(loop, &ev[i]);
		run_timers(loop);
	}
	loop->running = false;
	return 0;
}

void kt_loop_stop(struct kt_loop *loop)
{
	loop->stopped = true;
}

int64_t kt_loop_now(const struct kt_loop *loop)
{
	/* outside a run, the time a timer added now counts from */
	return loop->running ? loop->now : kt_mono_ms();
}
