/* SPDX-License-Identifier: Apache-2.0 */
/* test-spawn: the child starter, blocking and on the loop: caps, timeouts, groups */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"
#include "tap.h"

static char *const sh_big[] = { "/bin/sh", "-c",
				"head -c 300000 /dev/zero | tr '\\000' x; echo done", NULL };

static struct kt_spawn_opts opts(char *const *argv, enum kt_spawn_over over, size_t max,
				 int64_t timeout_ms)
{
	struct kt_spawn_opts o = { .argv = argv,
				   .output = KT_SPAWN_STDOUT,
				   .over = over,
				   .out_max = max,
				   .timeout_ms = timeout_ms };
	return o;
}

/* true when pid has ended: gone, or a zombie its new parent has not reaped */
static bool ended(pid_t pid)
{
	char path[64], stat[256];
	FILE *f;
	char *close_paren;
	bool dead = true;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	if (fgets(stat, sizeof(stat), f)) {
		close_paren = strrchr(stat, ')');
		dead = close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
	}
	fclose(f);
	return dead;
}

/*
 * The shell and the background sleep it printed the pid of.  The group was
 * sent SIGKILL; a process the kernel has not yet scheduled to die still shows
 * in /proc for a moment on a loaded machine, so the sleep gets 2 s to go.
 */
static bool group_ended(pid_t sh, const struct kt_spawn_result *res)
{
	pid_t bg = res->out ? (pid_t)strtol(res->out, NULL, 10) : 0;

	for (int i = 0; bg > 0 && i < 200 && !ended(bg); i++)
		usleep(10000);
	return ended(sh) && bg > 0 && ended(bg);
}

static void test_blocking(void)
{
	char *const echo[] = { "/bin/sh", "-c", "echo out; exit 3", NULL };
	char *const both[] = { "/bin/sh", "-c", "echo out; echo err >&2", NULL };
	/* left alone it would run 30 s; killed at its timeout it ends far sooner,
	 * even on a loaded machine */
	char *const slow[] = { "/bin/sh", "-c", "sleep 30 & sleep 30; echo late", NULL };
	char *const none[] = { "no-such-program-here", NULL };
	struct kt_spawn_opts o = opts(echo, KT_SPAWN_OVER_KILL, 1024, 0);
	struct kt_spawn_result res;
	struct kt_err err = { 0 };
	int64_t t0;
	int e = 0;

	tap_ok(kt_spawn_run(&o, &res, &e, &err) == 0 && res.out && !strcmp(res.out, "out\n") &&
		       WIFEXITED(res.status) && WEXITSTATUS(res.status) == 3,
	       "stdout captured, exit status kept");
	kt_spawn_result_release(&res);

	o = opts(both, KT_SPAWN_OVER_KILL, 1024, 0);
	o.output = KT_SPAWN_BOTH;
	tap_ok(kt_spawn_run(&o, &res, &e, &err) == 0 && res.out && !strcmp(res.out, "out\nerr\n"),
	       "KT_SPAWN_BOTH captures stdout and stderr in one stream");
	kt_spawn_result_release(&res);

	/* a descriptor left open without close-on-exec, as libcurl leaves its
	 * sockets: the child gets stdio and nothing else */
	{
		char *const fds[] = { "/bin/sh", "-c",
				      "for f in /proc/self/fd/*; do echo \"${f##*/}\"; done", NULL };
		int null = open("/dev/null", O_RDONLY);
		int leak = fcntl(null, F_DUPFD, 40);
		char want[64];

		snprintf(want, sizeof(want), "\n%d\n", leak);
		o = opts(fds, KT_SPAWN_OVER_KILL, 1024, 0);
		tap_ok(leak > 2 && kt_spawn_run(&o, &res, &e, &err) == 0 && res.out &&
			       !strstr(res.out, want) && !strncmp(res.out, "0\n1\n2\n", 6),
		       "the child gets stdio, not a descriptor opened without close-on-exec");
		if (res.out)
			printf("# descriptors in the child: %s\n", res.out);
		kt_spawn_result_release(&res);
		close(leak);
		close(null);
	}

	o = opts(sh_big, KT_SPAWN_OVER_KILL, 1000, 10000);
	t0 = kt_mono_ms();
	tap_ok(kt_spawn_run(&o, &res, &e, &err) == 0 && res.too_big && !res.timed_out &&
		       res.out_len == 1000 && kt_mono_ms() - t0 < 15000,
	       "past the cap the child is killed at once, never left blocked on the pipe");
	kt_spawn_result_release(&res);

	o = opts(sh_big, KT_SPAWN_OVER_DROP, 1000, 10000);
	tap_ok(kt_spawn_run(&o, &res, &e, &err) == 0 && !res.too_big && res.out_len == 1000 &&
		       WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0,
	       "KT_SPAWN_OVER_DROP keeps the first bytes and lets the child finish");
	kt_spawn_result_release(&res);

	o = opts(slow, KT_SPAWN_OVER_KILL, 1024, 300);
	t0 = kt_mono_ms();
	tap_ok(kt_spawn_run(&o, &res, &e, &err) == 0 && res.timed_out &&
		       kt_mono_ms() - t0 < 15000,
	       "at the timeout the child is killed");
	kt_spawn_result_release(&res);

	o = opts(none, KT_SPAWN_OVER_KILL, 1024, 0);
	tap_ok(kt_spawn_run(&o, &res, &e, &err) < 0 && e == ENOENT &&
		       !strcmp(err.msg, "cannot run 'no-such-program-here': No such file or "
					"directory"),
	       "a program that cannot start is an error with its errno");
}

struct seen {
	int calls;
	struct kt_spawn_result res;
	pid_t pid;
};

static void on_done(struct kt_spawn *sp, struct kt_spawn_result *res, void *arg)
{
	struct seen *s = arg;

	s->calls++;
	s->res = *res;
	s->res.out = res->out;
	res->out = NULL;
}

static void test_loop(void)
{
	char *const slow[] = { "/bin/sh", "-c", "sleep 30 & echo $!; sleep 30", NULL };
	char *const hello[] = { "/bin/sh", "-c", "sleep 0.1; echo hello", NULL };
	struct kt_err err = { 0 };
	struct kt_loop *loop = kt_loop_new(&err);
	struct kt_spawn_opts o = opts(hello, KT_SPAWN_OVER_KILL, 1024, 5000);
	struct seen a = { 0 }, b = { 0 }, c = { 0 };
	struct kt_spawn *sa, *sb, *sc;
	int64_t t0 = kt_mono_ms();
	char path[64];
	int e = 0;

	sa = kt_spawn_start(loop, &o, on_done, &a, &e, &err);
	o = opts(sh_big, KT_SPAWN_OVER_KILL, 1000, 5000);
	sb = kt_spawn_start(loop, &o, on_done, &b, &e, &err);
	/* 2 s: time enough, on a loaded machine, for the shell to print the pid
	 * of the sleep it leaves behind, which must die with it */
	o = opts(slow, KT_SPAWN_OVER_KILL, 1024, 2000);
	sc = kt_spawn_start(loop, &o, on_done, &c, &e, &err);
	tap_ok(sa && sb && sc, "three children started on one loop");
	c.pid = kt_spawn_pid(sc);
	kt_loop_run(loop, &err);
	tap_ok(a.calls == 1 && a.res.out && !strcmp(a.res.out, "hello\n") &&
		       WIFEXITED(a.res.status) && WEXITSTATUS(a.res.status) == 0,
	       "on the loop: the output and the exit status");
	tap_ok(b.calls == 1 && b.res.too_big && b.res.out_len == 1000,
	       "on the loop: killed past the cap");
	if (!tap_ok(c.calls == 1 && c.res.timed_out && group_ended(c.pid, &c.res) &&
			    kt_mono_ms() - t0 < 15000,
		    "on the loop: killed with its whole group at the timeout"))
		printf("# calls %d timed_out %d out '%s' shell ended %d after %lld ms\n", c.calls,
		       c.res.timed_out, c.res.out ? c.res.out : "(none)", ended(c.pid),
		       (long long)(kt_mono_ms() - t0));
	kt_spawn_result_release(&a.res);
	kt_spawn_result_release(&b.res);
	kt_spawn_result_release(&c.res);

	o = opts(slow, KT_SPAWN_OVER_KILL, 1024, 0);
	memset(&c, 0, sizeof(c));
	sc = kt_spawn_start(loop, &o, on_done, &c, &e, &err);
	c.pid = kt_spawn_pid(sc);
	kt_spawn_cancel(sc);
	snprintf(path, sizeof(path), "/proc/%d", (int)c.pid);
	tap_ok(c.calls == 0 && access(path, F_OK) < 0,
	       "cancel kills the child and reaps it now: no zombie is left");
	kt_loop_free(loop);
}

int main(void)
{
	test_blocking();
	test_loop();
	return tap_done();
}
